// The training summary's arithmetic that the memory and parallelism knobs change: the model-state
// accounting (docs/metrics.md) and the tokens of a step with tensor parallelism; each metric's
// direction, and means that do not overflow.
#include "metrics/summary.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "metrics/rank_result.h"
#include "metrics/statistics.h"

namespace sweepbench {
namespace {

TEST(ModelStates, EveryStageAsTheZeroPaperCountsFp32Training) {
  const double psi = 1000, n = 4;
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 4, 0), 16 * psi);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 4, 1), 8 * psi + 12 * psi / n);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 4, 2), 4 * psi + 12 * psi / n);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 4, 3), 16 * psi / n);
  // One rank has nothing to shard.
  for (int stage = 0; stage <= 3; ++stage)
    EXPECT_DOUBLE_EQ(model_states_bytes(psi, 1, stage), 16 * psi);
}

TEST(ModelStates, FrozenWeightsCountFourBytesAndOffloadTakesTheMoments) {
  const double psi = 1000, adapters = 10;
  // LoRA: 4 bytes per frozen weight everywhere, the stage's accounting for the adapters.
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 0, adapters), 4 * (psi - adapters) + 16 * adapters);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 2, adapters),
                   4 * (psi - adapters) + adapters * (4 + 12.0 / 2));
  // Offloaded moments (8 bytes per trainable parameter, sharded from stage 1) leave the device.
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 0, 0, true), 8 * psi);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 1, 0, true), 8 * psi + 4 * psi / 2);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 3, 0, true), 8 * psi / 2);
}

double metric(const std::vector<Metric>& metrics, const std::string& name) {
  for (const Metric& m : metrics) {
    if (m.name == name) return m.value;
  }
  ADD_FAILURE() << name << " missing";
  return 0;
}

TEST(RunDescription, TensorParallelGroupsAreReplicasAndTheAccountingIsARanksPart) {
  RankResult lead;
  lead.world_size = 8;
  lead.tensor_parallel = 2;
  lead.micro_batch = 4;
  lead.seq_len = 128;
  lead.grad_accum = 2;
  lead.parameter_count = 1000;
  lead.rank_parameters = 600;  // half of the split projections and all the rest
  lead.zero_stage = 1;
  SummaryInput in;
  fill_run_description(in, lead);
  in.step_s = {2.0, 2.0};
  EXPECT_DOUBLE_EQ(in.tokens_per_step, 4.0 * 128 * 2 * 4);  // 4 replicas, not 8 ranks
  EXPECT_DOUBLE_EQ(in.samples_per_step, 4.0 * 2 * 4);
  std::vector<Metric> m = summarize(in);
  EXPECT_DOUBLE_EQ(metric(m, "train_tokens_per_second"), 4.0 * 128 * 2 * 4 / 2.0);
  // The rank's 600 parameters, ZeRO-1 over the 4 data-parallel ranks.
  EXPECT_DOUBLE_EQ(metric(m, "mem_model_states_bytes"), 600 * (8 + 12.0 / 4));
  EXPECT_DOUBLE_EQ(metric(m, "trainable_parameters"), 1000);
}

TEST(RunDescription, OlderFilesWithoutTheNewAttributesMeanNoneOfTheKnobs) {
  RankResult lead;  // tensor_parallel 1, rank_parameters 0, trainable 0, offload 0 by default
  lead.world_size = 2;
  lead.micro_batch = 1;
  lead.seq_len = 10;
  lead.grad_accum = 1;
  lead.parameter_count = 100;
  SummaryInput in;
  fill_run_description(in, lead);
  in.step_s = {1.0};
  std::vector<Metric> m = summarize(in);
  EXPECT_DOUBLE_EQ(in.tokens_per_step, 20);
  EXPECT_DOUBLE_EQ(metric(m, "mem_model_states_bytes"), 16 * 100);
  EXPECT_DOUBLE_EQ(metric(m, "trainable_parameters"), 100);
}

// Issue 55, Deliver 2: the headline and its interval from one estimator. A run whose first steps
// were still settling (20 ms, then 2 ms): the interval counts the steps after the warm-up cut, and
// so do the mean step and the throughputs, which lie inside it. The runtime is every step's.
TEST(Intervals, TheHeadlineIsTheMeanOfTheStepsTheIntervalCounts) {
  SummaryInput in;
  in.step_s = std::vector<double>(6, 0.020);
  for (int i = 0; i < 40; ++i) in.step_s.push_back(i % 2 == 0 ? 0.0019 : 0.0021);
  in.tokens_per_step = 100;
  in.samples_per_step = 2;
  ASSERT_EQ(series_estimate(in.step_s).cut, 6u);
  const std::vector<Metric> m = summarize(in);
  EXPECT_EQ(metric(m, "steps_cut"), 6);
  EXPECT_NEAR(metric(m, "step_time_mean_s"), 0.002, 1e-12);
  EXPECT_NEAR(metric(m, "step_time_median_s"), 0.002, 1e-12);
  EXPECT_NEAR(metric(m, "train_tokens_per_second"), 100 / 0.002, 1e-6);
  EXPECT_NEAR(metric(m, "train_samples_per_second"), 2 / 0.002, 1e-9);
  EXPECT_NEAR(metric(m, "train_steps_per_second"), 1 / 0.002, 1e-9);
  EXPECT_LE(metric(m, "step_time_ci_low_s"), metric(m, "step_time_mean_s"));
  EXPECT_GE(metric(m, "step_time_ci_high_s"), metric(m, "step_time_mean_s"));
  EXPECT_LE(metric(m, "train_tokens_per_second_ci_low"), metric(m, "train_tokens_per_second"));
  EXPECT_GE(metric(m, "train_tokens_per_second_ci_high"), metric(m, "train_tokens_per_second"));
  EXPECT_NEAR(metric(m, "train_runtime"), 6 * 0.020 + 40 * 0.002, 1e-12);
}

// Issue 51, Deliver 5: one direction per metric, for bench-compare, --best, --pareto and the
// Pareto figure alike. A command's unit decides when it says (a rate up; a time or a size down);
// otherwise the name does.
TEST(Intervals, AStepTimesIntervalIsCutAt0AndTheThroughputsThenHasNoUpperEnd) {
  // Eight steps, one of them a 40 ms hiccup among 2 ms ones: the mean's interval by batch means
  // reaches below 0 s.
  SummaryInput in;
  in.step_s = {0.002, 0.002, 0.002, 0.002, 0.002, 0.002, 0.002, 0.040};
  in.tokens_per_step = 128;
  ASSERT_LT(series_estimate(in.step_s).low, 0);
  const std::vector<Metric> m = summarize(in);
  EXPECT_EQ(metric(m, "step_time_ci_low_s"), 0);
  EXPECT_GT(metric(m, "step_time_ci_high_s"), 0);
  EXPECT_TRUE(std::isnan(metric(m, "train_tokens_per_second_ci_high")));
  EXPECT_GT(metric(m, "train_tokens_per_second_ci_low"), 0);
}

TEST(Direction, ARateUnitIsBetterHigherATimeOrSizeLowerElseTheNameDecides) {
  for (const char* unit :
       {"tokens/s", "it/s", "GB/s", "samples/h", "req/min", "Tokens / S", "TFLOPS"}) {
    EXPECT_TRUE(higher_is_better("tput", unit)) << unit;
    EXPECT_TRUE(higher_is_better("latency_ms", unit)) << unit;
  }
  for (const char* unit :
       {"s", "ms", "us", "µs", "seconds", "min", "h", "bytes", "B", "GiB", "MB"}) {
    EXPECT_FALSE(higher_is_better("tput", unit)) << unit;
    EXPECT_FALSE(higher_is_better("train_tokens_per_second", unit)) << unit;
  }
  // A unit that says nothing of a direction (a ratio, a count, none): the name.
  for (const char* unit : {"", "%", "tokens", "steps", "x/y"}) {
    EXPECT_TRUE(higher_is_better("train_tokens_per_second", unit)) << unit;
    EXPECT_TRUE(higher_is_better("mfu", unit)) << unit;
    EXPECT_FALSE(higher_is_better("step_time_mean_s", unit)) << unit;
    EXPECT_FALSE(higher_is_better("tput", unit)) << unit;
  }
}

// A serve level's share of good requests and both ends of its interval: higher is better.
TEST(Directions, TheSlaAttainmentAndItsIntervalAreBetterHigher) {
  for (const char* m : {"sla_attainment", "sla_attainment_low", "sla_attainment_high"}) {
    EXPECT_TRUE(higher_is_better(m, "fraction")) << m;
  }
}

// Issue 51, Deliver 6: the mean and standard deviation of finite values near DBL_MAX are finite
// (they overflowed to inf), and of ordinary values exactly what they were.
TEST(Statistics, MeansAndDeviationsOfHugeFiniteValuesStayFinite) {
  const double big = 1.5e308;
  EXPECT_EQ(mean({big, big}), big);
  EXPECT_EQ(mean({big, -big}), 0);
  // sqrt(2) x 1e308 is below DBL_MAX (sqrt(2) x 1.5e308 is not: that one is inf, rightly).
  EXPECT_TRUE(std::isfinite(stddev({1e308, -1e308})));
  EXPECT_NEAR(stddev({1e308, -1e308}) / (1e308 * std::sqrt(2.0)), 1, 1e-12);
  EXPECT_EQ(stddev({big, big, big}), 0);
  EXPECT_EQ(mean({1, 2, 3, 4}), 2.5);
  EXPECT_NEAR(stddev({1, 2, 3, 4}), std::sqrt(5.0 / 3.0), 1e-15);
  EXPECT_TRUE(std::isnan(mean({})));
}

}  // namespace
}  // namespace sweepbench
