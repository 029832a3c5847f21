#include "metrics/infer_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "metrics/rank_result.h"
#include "metrics/statistics.h"

namespace sweepbench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// name_mean_s, name_std_s, name_min_s, name_p50_s, name_p90_s, name_p99_s, name_max_s.
void add_distribution(std::vector<Metric>& m, const std::string& name,
                      const std::vector<double>& values) {
  bool none = values.empty();
  m.push_back({name + "_mean_s", mean(values), "s"});
  m.push_back({name + "_std_s", none ? kNaN : stddev(values), "s"});
  m.push_back(
      {name + "_min_s", none ? kNaN : *std::min_element(values.begin(), values.end()), "s"});
  m.push_back({name + "_p50_s", percentile(values, 0.5), "s"});
  m.push_back({name + "_p90_s", percentile(values, 0.9), "s"});
  m.push_back({name + "_p99_s", percentile(values, 0.99), "s"});
  m.push_back(
      {name + "_max_s", none ? kNaN : *std::max_element(values.begin(), values.end()), "s"});
}

double ratio(double a, double b) { return b > 0 ? a / b : kNaN; }

}  // namespace

double time_per_output_token(const InferRunTiming& run, double output_tokens) {
  return output_tokens > 1 ? (run.e2e_s - run.ttft_s) / (output_tokens - 1) : kNaN;
}

std::vector<InferRunTiming> slowest_rank_runs(
    const std::vector<std::vector<InferRunTiming>>& ranks) {
  std::vector<InferRunTiming> out;
  if (ranks.empty()) return out;
  size_t runs = ranks[0].size();
  for (const auto& r : ranks) runs = std::min(runs, r.size());
  for (size_t i = 0; i < runs; ++i) {
    InferRunTiming t = ranks[0][i];
    for (const auto& r : ranks) {
      t.ttft_s = std::max(t.ttft_s, r[i].ttft_s);
      t.e2e_s = std::max(t.e2e_s, r[i].e2e_s);
      t.step_s.resize(std::min(t.step_s.size(), r[i].step_s.size()));
      for (size_t s = 0; s < t.step_s.size(); ++s)
        t.step_s[s] = std::max(t.step_s[s], r[i].step_s[s]);
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Metric> summarize_infer(const InferSummaryInput& in) {
  std::vector<Metric> m;
  const double runs = static_cast<double>(in.runs.size());
  const double ranks = static_cast<double>(std::max(1, in.world_size));
  std::vector<double> ttft, e2e, decode, tpot, itl;
  for (const InferRunTiming& r : in.runs) {
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    decode.push_back(r.e2e_s - r.ttft_s);
    tpot.push_back(time_per_output_token(r, in.output_tokens));
    itl.insert(itl.end(), r.step_s.begin(), r.step_s.end());
  }
  const double seqs = in.batch * ranks;  // sequences per run, all ranks

  // PACE's names and definitions (one rank's batch, as PACE runs one process).
  const double gen_time = mean(e2e);
  m.push_back({"average_gen_time", gen_time, "s"});
  m.push_back({"average_ttft", mean(ttft), "s"});
  m.push_back({"average_latency_per_token",
               ratio(gen_time, in.batch * (in.input_tokens + in.output_tokens)), "s"});
  m.push_back({"total_tps", ratio(seqs * (in.input_tokens + in.output_tokens) * runs, sum(e2e)),
               "tokens/s"});
  m.push_back({"output_tps", ratio(seqs * in.output_tokens * runs, sum(e2e)), "tokens/s"});

  // Ours: distributions over the timed runs.
  add_distribution(m, "ttft", ttft);
  add_distribution(m, "e2e", e2e);
  add_distribution(m, "tpot", in.output_tokens > 1 ? tpot : std::vector<double>{});
  add_distribution(m, "itl", itl);  // every decode step of every timed run
  // The timed runs are independent generations: the intervals of their mean are the repeats'
  // (statistics.h), and the coefficients of variation feed bench-extract's `noisy`.
  const Estimate ttft_mean = repeats_estimate(ttft);
  const Estimate e2e_mean = repeats_estimate(e2e);
  m.push_back({"ttft_ci_low_s",
               std::isnan(ttft_mean.low) ? ttft_mean.low : std::max(0.0, ttft_mean.low), "s"});
  m.push_back({"ttft_ci_high_s", ttft_mean.high, "s"});
  m.push_back({"ttft_cv", ttft_mean.cv, ""});
  m.push_back(
      {"e2e_ci_low_s", std::isnan(e2e_mean.low) ? e2e_mean.low : std::max(0.0, e2e_mean.low), "s"});
  m.push_back({"e2e_ci_high_s", e2e_mean.high, "s"});
  m.push_back({"e2e_cv", e2e_mean.cv, ""});
  // output_tps through the mean generation time's interval.
  m.push_back({"output_tps_ci_low", ratio(seqs * in.output_tokens, e2e_mean.high), "tokens/s"});
  m.push_back({"output_tps_ci_high", ratio(seqs * in.output_tokens, e2e_mean.low), "tokens/s"});
  m.push_back(
      {"prefill_tokens_per_second", ratio(seqs * in.input_tokens * runs, sum(ttft)), "tokens/s"});
  m.push_back(
      {"decode_tokens_per_second",
       in.output_tokens > 1 ? ratio(seqs * (in.output_tokens - 1) * runs, sum(decode)) : kNaN,
       "tokens/s"});

  // Memory and the roofline, per device.
  m.push_back({"weight_bytes", in.weight_bytes, "bytes"});
  m.push_back({"kv_cache_bytes", in.kv_cache_bytes, "bytes"});
  if (in.memory_peak_bytes >= 0) m.push_back({"mem_peak_bytes", in.memory_peak_bytes, "bytes"});
  if (in.memory_alloc_peak_bytes >= 0) {
    m.push_back({"mem_alloc_peak_bytes", in.memory_alloc_peak_bytes, "bytes"});
  }
  if (in.cpu_shared >= 0) m.push_back({"cpu_shared", in.cpu_shared, ""});
  m.push_back({"prefill_flops", in.prefill_flops, "FLOP"});
  const double prefill_tflops = ratio(in.prefill_flops * runs, sum(ttft)) / 1e12;
  m.push_back({"prefill_tflops_per_device", prefill_tflops, "TFLOP/s"});
  if (in.peak_tflops > 0) m.push_back({"prefill_mfu", prefill_tflops / in.peak_tflops, ""});
  const double steps = std::max(0.0, in.output_tokens - 1);
  // Per generated token of a prompt (beam search: every beam's work).
  m.push_back({"decode_flops_per_token", ratio(in.decode_flops, steps * in.batch), "FLOP"});
  m.push_back({"decode_bytes_per_step", ratio(in.decode_bytes, steps), "bytes"});
  const double bandwidth = ratio(in.decode_bytes * runs, sum(decode)) / 1e9;
  m.push_back({"decode_bandwidth_gbs", bandwidth, "GB/s"});
  if (in.peak_bandwidth_gbs > 0) m.push_back({"mbu", bandwidth / in.peak_bandwidth_gbs, ""});
  m.push_back(
      {"peak_bandwidth_gbs", in.peak_bandwidth_gbs > 0 ? in.peak_bandwidth_gbs : kNaN, "GB/s"});
  return m;
}

std::vector<InferRunTiming> timed_runs(const InferResult& result) {
  std::vector<InferRunTiming> out;
  std::vector<std::int64_t> index_of_run;  // run number -> position in `out`, or -1
  for (const InferRunRecord& r : result.runs) {
    if (r.run < 0 || r.run > (1 << 24)) continue;  // not ours: a damaged file
    if (index_of_run.size() <= static_cast<size_t>(r.run)) {
      index_of_run.resize(static_cast<size_t>(r.run) + 1, -1);
    }
    if (r.warmup) continue;
    index_of_run[static_cast<size_t>(r.run)] = static_cast<std::int64_t>(out.size());
    out.push_back({r.ttft_s, r.e2e_s, {}});
  }
  // Decode steps are positions 1 .. output - 1, in order.
  for (const TokenTime& t : result.token_times) {
    if (t.run < 0 || static_cast<size_t>(t.run) >= index_of_run.size() || t.position < 1) continue;
    std::int64_t i = index_of_run[static_cast<size_t>(t.run)];
    if (i < 0) continue;
    std::vector<double>& steps = out[static_cast<size_t>(i)].step_s;
    if (steps.size() < static_cast<size_t>(t.position))
      steps.resize(static_cast<size_t>(t.position), 0.0);
    steps[static_cast<size_t>(t.position) - 1] = t.seconds;
  }
  return out;
}

InferSummaryInput infer_summary_shapes(const RankResult& lead) {
  InferSummaryInput in;
  const InferResult& n = lead.infer;
  in.batch = static_cast<double>(n.batch_size);
  in.input_tokens = static_cast<double>(n.input_tokens);
  in.output_tokens = static_cast<double>(n.output_tokens);
  in.prefill_flops = n.prefill_flops;
  in.decode_flops = n.decode_flops;
  in.decode_bytes = n.decode_bytes;
  in.weight_bytes = n.weight_bytes;
  in.kv_cache_bytes = n.kv_cache_bytes;
  in.peak_tflops = lead.peak_tflops;
  in.peak_bandwidth_gbs = n.peak_bandwidth_gbs;
  return in;
}

InferSummaryInput infer_summary_input_from_ranks(const std::vector<RankResult>& ranks) {
  if (ranks.empty()) return {};
  InferSummaryInput in = infer_summary_shapes(ranks[0]);
  std::vector<std::vector<InferRunTiming>> per_rank;
  for (const RankResult& r : ranks) {
    per_rank.push_back(timed_runs(r.infer));
    in.memory_peak_bytes = std::max(in.memory_peak_bytes, stage_peak(r.memory_stages));
    in.memory_alloc_peak_bytes =
        std::max(in.memory_alloc_peak_bytes, stage_alloc_peak(r.memory_stages));
    in.cpu_shared = std::max(in.cpu_shared, r.cpu_shared);
  }
  in.runs = slowest_rank_runs(per_rank);
  in.world_size = static_cast<int>(ranks[0].world_size);
  return in;
}

}  // namespace sweepbench
