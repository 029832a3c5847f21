// bench-infer's numbers (metrics/infer_metrics.h) on hand-made timing records, each against its
// definition in docs/metrics.md worked out by hand.
#include "metrics/infer_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "config/model_shapes.h"
#include "metrics/rank_result.h"

namespace sweepbench {
namespace {

std::map<std::string, double> by_name(const std::vector<Metric>& metrics) {
  std::map<std::string, double> out;
  for (const Metric& m : metrics) out[m.name] = m.value;
  return out;
}

// Two timed runs of batch 2, 4 prompt tokens, 3 new tokens, on one rank.
InferSummaryInput two_runs() {
  InferSummaryInput in;
  in.runs = {{0.1, 0.5, {0.2, 0.2}}, {0.3, 0.9, {0.3, 0.3}}};
  in.batch = 2;
  in.input_tokens = 4;
  in.output_tokens = 3;
  in.prefill_flops = 1e12;
  in.decode_bytes = 4e9;
  in.decode_flops = 8e9;
  in.peak_tflops = 10;
  in.peak_bandwidth_gbs = 16;
  return in;
}

TEST(InferMetrics, PacesNamesKeepPacesDefinitions) {
  auto m = by_name(summarize_infer(two_runs()));
  EXPECT_DOUBLE_EQ(m["average_gen_time"], 0.7);  // mean end to end
  EXPECT_DOUBLE_EQ(m["average_ttft"], 0.2);
  // time / (B (prompt + new)) = 0.7 / 14: 1 / total_tps, not a decode latency.
  EXPECT_DOUBLE_EQ(m["average_latency_per_token"], 0.05);
  EXPECT_DOUBLE_EQ(m["total_tps"], 2.0 * 7 * 2 / 1.4);
  EXPECT_DOUBLE_EQ(m["output_tps"], 2.0 * 3 * 2 / 1.4);
}

TEST(InferMetrics, LatenciesAreDistributionsOverTheTimedRuns) {
  auto m = by_name(summarize_infer(two_runs()));
  EXPECT_DOUBLE_EQ(m["ttft_mean_s"], 0.2);
  EXPECT_DOUBLE_EQ(m["ttft_min_s"], 0.1);
  EXPECT_DOUBLE_EQ(m["ttft_max_s"], 0.3);
  EXPECT_DOUBLE_EQ(m["ttft_p50_s"], 0.2);
  EXPECT_NEAR(m["ttft_p90_s"], 0.28, 1e-12);  // linear between 0.1 and 0.3
  EXPECT_NEAR(m["ttft_std_s"], std::sqrt(0.02), 1e-12);
  // TPOT = (e2e - ttft) / (n - 1): 0.2 and 0.3; the first token's time is not in it.
  EXPECT_DOUBLE_EQ(m["tpot_mean_s"], 0.25);
  EXPECT_NEAR(m["tpot_p99_s"], 0.299, 1e-12);
  // Inter-token latency: every decode step, never the first token.
  EXPECT_DOUBLE_EQ(m["itl_mean_s"], 0.25);
  EXPECT_DOUBLE_EQ(m["itl_min_s"], 0.2);
  EXPECT_DOUBLE_EQ(m["e2e_p50_s"], 0.7);
}

TEST(InferMetrics, PrefillAndDecodeThroughputAreSeparate) {
  auto m = by_name(summarize_infer(two_runs()));
  // B input / TTFT over the runs: 2 * 4 * 2 / 0.4.
  EXPECT_DOUBLE_EQ(m["prefill_tokens_per_second"], 40);
  // B (n - 1) / (e2e - TTFT): 2 * 2 * 2 / 1.0.
  EXPECT_DOUBLE_EQ(m["decode_tokens_per_second"], 8);
  // Roofline: 1e12 FLOPs per prefill in 0.2 s = 5 TFLOP/s of 10; 4e9 bytes per run's decode in
  // 0.5 s = 8 GB/s of 16.
  EXPECT_DOUBLE_EQ(m["prefill_tflops_per_device"], 5);
  EXPECT_DOUBLE_EQ(m["prefill_mfu"], 0.5);
  EXPECT_DOUBLE_EQ(m["decode_bytes_per_step"], 2e9);
  EXPECT_DOUBLE_EQ(m["decode_flops_per_token"], 2e9);  // 8e9 over 2 steps x 2 prompts
  EXPECT_DOUBLE_EQ(m["decode_bandwidth_gbs"], 8);
  EXPECT_DOUBLE_EQ(m["mbu"], 0.5);
}

TEST(InferMetrics, RanksAddThroughputNotLatency) {
  InferSummaryInput in = two_runs();
  in.world_size = 4;
  auto one = by_name(summarize_infer(two_runs()));
  auto four = by_name(summarize_infer(in));
  EXPECT_DOUBLE_EQ(four["output_tps"], 4 * one["output_tps"]);
  EXPECT_DOUBLE_EQ(four["decode_tokens_per_second"], 4 * one["decode_tokens_per_second"]);
  EXPECT_DOUBLE_EQ(four["ttft_mean_s"], one["ttft_mean_s"]);
  EXPECT_DOUBLE_EQ(four["average_latency_per_token"], one["average_latency_per_token"]);
}

TEST(InferMetrics, OneOutputTokenHasNoDecode) {
  InferSummaryInput in = two_runs();
  in.output_tokens = 1;
  for (InferRunTiming& r : in.runs) r.step_s.clear();
  auto m = by_name(summarize_infer(in));
  EXPECT_TRUE(std::isnan(m["tpot_mean_s"]));
  EXPECT_TRUE(std::isnan(m["decode_tokens_per_second"]));
  EXPECT_TRUE(std::isnan(m["itl_p50_s"]));
  EXPECT_FALSE(std::isnan(m["ttft_p50_s"]));
}

TEST(InferMetrics, UnknownPeaksGiveNoUtilisation) {
  InferSummaryInput in = two_runs();
  in.peak_tflops = 0;
  in.peak_bandwidth_gbs = 0;
  auto m = by_name(summarize_infer(in));
  EXPECT_EQ(m.count("prefill_mfu"), 0u);
  EXPECT_EQ(m.count("mbu"), 0u);
  EXPECT_DOUBLE_EQ(m["decode_bandwidth_gbs"], 8);
}

TEST(InferMetrics, TheSlowestRankTimesEachRunAndStep) {
  std::vector<std::vector<InferRunTiming>> ranks = {
      {{0.1, 0.5, {0.2, 0.2}}, {0.3, 0.9, {0.3, 0.3}}},
      {{0.2, 0.4, {0.1, 0.25}}},  // one run fewer: the runs of both are the first
  };
  std::vector<InferRunTiming> slow = slowest_rank_runs(ranks);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_DOUBLE_EQ(slow[0].ttft_s, 0.2);
  EXPECT_DOUBLE_EQ(slow[0].e2e_s, 0.5);
  EXPECT_EQ(slow[0].step_s, (std::vector<double>{0.2, 0.25}));
}

TEST(InferMetrics, TimedRunsLeaveOutWarmupAndReadStepsFromTokenTimes) {
  InferResult r;
  r.runs = {{0, true, 9, 9, 3}, {1, false, 0.1, 0.5, 3}, {2, false, 0.3, 0.9, 3}};
  r.token_times = {{0, 0, 9},   {0, 1, 9},    {0, 2, 9},
                   {1, 0, 0.1}, {1, 2, 0.25}, {1, 1, 0.2},  // out of order: placed by position
                   {2, 0, 0.3}, {2, 1, 0.3},  {2, 2, 0.3}};
  std::vector<InferRunTiming> runs = timed_runs(r);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_DOUBLE_EQ(runs[0].ttft_s, 0.1);
  EXPECT_EQ(runs[0].step_s, (std::vector<double>{0.2, 0.25}));
  EXPECT_EQ(runs[1].step_s, (std::vector<double>{0.3, 0.3}));
}

TEST(InferenceCost, GptTwoSmallAgainstNumbersWorkedByHand) {
  const ModelShape& s = find_model_preset("gpt2")->shape;
  // bf16, batch 1, 128 in, 128 out.
  InferenceCost c = inference_cost(s, 1, 128, 128, 2);
  // K and V: 2 x 12 layers x 12 heads x 64 x 2 bytes per token, for 256 tokens.
  EXPECT_DOUBLE_EQ(c.kv_cache_bytes, 2.0 * 12 * 12 * 64 * 2 * 256);
  EXPECT_DOUBLE_EQ(c.weight_bytes, 124439808.0 * 2);
  // Body: all but wte (50257 x 768) and wpe (1024 x 768) = 85,056,000 parameters.
  const double body = 124439808.0 - 50257.0 * 768 - 1024.0 * 768;
  EXPECT_DOUBLE_EQ(body, 85056000.0);
  // Prefill: 2 body per token, 4 L d per key (8256 keys over 128 tokens), one row of logits.
  EXPECT_DOUBLE_EQ(c.prefill_flops, 2 * body * 128 + 4.0 * 12 * 768 * 8256 + 2.0 * 50257 * 768);
  // Decode: 127 steps attending 129 .. 255 keys (sum 24384), each reading every weight but the
  // position table, and the cache so far.
  const double keys = 24384;
  EXPECT_DOUBLE_EQ(c.decode_flops, 127 * (2 * body + 2.0 * 50257 * 768) + 4.0 * 12 * 768 * keys);
  EXPECT_DOUBLE_EQ(c.decode_bytes,
                   127 * (124439808.0 - 1024 * 768) * 2 + 2.0 * 12 * 12 * 64 * 2 * keys);
}

}  // namespace
}  // namespace sweepbench
