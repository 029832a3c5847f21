// Performance references: the sweep file's syntax and its errors, which references apply to a
// point, and the check that fails a point only when its whole interval misses the bounds.
#include "sweep/references.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "config/yaml_io.h"
#include "support/expect_error.h"
#include "sweep/sweep_test_util.h"

namespace sweepbench {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::spec_from_text;

const char* kBase = "base: {model.preset: gpt2-tiny}\naxes: {train.micro_batch: [2, 4]}\n";

std::vector<PerformanceReference> refs(const std::string& text) {
  return spec_from_text(std::string(kBase) + "references:\n" + text).references;
}

std::string ref_error(const std::string& text) {
  return error_of([&] { refs(text); }).what();
}

TEST(References, RelativeAndAbsoluteBounds) {
  std::vector<PerformanceReference> r =
      refs("  - {metric: train_tokens_per_second, value: 1000, lower: -10%, upper: +5%}\n"
           "  - {metric: step_time_mean_s, value: 0.5, upper: 0.25}\n"
           "  - {metric: loss_delta, value: 0, lower: -0.01, upper: 0.01}\n"
           "  - {metric: x, value: -200, lower: -50%}\n");
  ASSERT_EQ(r.size(), 4u);
  EXPECT_DOUBLE_EQ(r[0].low(), 900);
  EXPECT_DOUBLE_EQ(r[0].high(), 1050);
  EXPECT_EQ(r[1].low(), -INFINITY);
  EXPECT_DOUBLE_EQ(r[1].high(), 0.75);
  // A reference of 0 works with absolute bounds.
  EXPECT_DOUBLE_EQ(r[2].low(), -0.01);
  EXPECT_DOUBLE_EQ(r[2].high(), 0.01);
  // A percentage is of the reference's magnitude: -50% of -200 lies at -300.
  EXPECT_DOUBLE_EQ(r[3].low(), -300);
  EXPECT_EQ(r[0].mark.str(), "s.yaml:4:5");
}

TEST(References, ErrorsNameTheLineAndTheFix) {
  EXPECT_EQ(ref_error("  - {metric: m, value: 1}\n"),
            "s.yaml:4:5: references[0]: has no bound, so no result could miss it (give lower:, "
            "upper: or both, e.g. lower: -10%)");
  EXPECT_THAT(ref_error("  - {metric: m, value: 1, lower: 10%}\n"),
              HasSubstr("s.yaml:4:34: references[0].lower: a lower bound of 10% lies on the "
                        "wrong side of the reference"));
  EXPECT_THAT(ref_error("  - {metric: m, value: 1, upper: -1}\n"),
              HasSubstr("references[0].upper: an upper bound of -1 lies on the wrong side"));
  EXPECT_THAT(ref_error("  - {metric: m, value: 0, upper: 5%}\n"),
              HasSubstr("references[0].upper: a percentage of a reference of 0 is 0 (give an "
                        "absolute bound in the metric's unit, e.g. upper: 0.01)"));
  EXPECT_THAT(ref_error("  - {metric: m, value: 1, lower: ten}\n"),
              HasSubstr("references[0].lower: 'ten' is not a bound"));
  EXPECT_THAT(ref_error("  - {metric: m, value: fast, lower: -1}\n"),
              HasSubstr("references[0].value: expected a finite number"));
  EXPECT_THAT(ref_error("  - {metric: m, lower: -1}\n"),
              HasSubstr("references[0].value: needs the expected value"));
  EXPECT_THAT(ref_error("  - {metric: m, value: 1, lower: -1, devcie: H100}\n"),
              HasSubstr("unknown key 'devcie' in references[0] (did you mean 'device'?)"));
  EXPECT_THAT(ref_error("  - {metric: m, value: 1, lower: -1, when: {train.microbatch: 2}}\n"),
              HasSubstr("unknown key 'train.microbatch' (did you mean 'train.micro_batch'?)"));
  EXPECT_THAT(ref_error("  - {metric: m, value: 1, lower: -1, scenario: big}\n"),
              HasSubstr("s.yaml:4:48: references[0].scenario: 'big' matches no scenario (the "
                        "scenarios are: default)"));
  EXPECT_THAT(ref_error("  - {metric: 'a b', value: 1, lower: -1}\n"),
              HasSubstr("'a b' is not a metric's name"));
  EXPECT_THAT(ref_error("  - {metric: m, value: 1, lower: -1, host: ''}\n"),
              HasSubstr("references[0].host: an empty pattern matches nothing"));
  EXPECT_THAT(error_of([] { spec_from_text(std::string(kBase) + "references: {m: 1}\n"); }).what(),
              HasSubstr("references: expected a list"));
}

TEST(References, TheMostSpecificApply) {
  std::vector<PerformanceReference> r =
      refs("  - {metric: tps, value: 100, lower: -10%}\n"
           "  - {metric: tps, value: 900, lower: -10%, device: '*H100*'}\n"
           "  - {metric: tps, value: 950, lower: -10%, device: '*H100*', host: 'gpu[0-9]*'}\n"
           "  - {metric: tps, value: 50, lower: -10%, when: {train.micro_batch: [2, 8]}}\n"
           "  - {metric: mem, value: 10, upper: 1, partition: big}\n");
  Value mb2 = parse_yaml("train: {micro_batch: 2}", "c");
  Value mb4 = parse_yaml("train: {micro_batch: 4}", "c");
  auto values = [](const std::vector<const PerformanceReference*>& apply) {
    std::vector<double> v;
    for (const PerformanceReference* p : apply) v.push_back(p->value);
    return v;
  };
  PointFacts cpu{"default", "AMD EPYC", "vm", "", &mb4};
  EXPECT_EQ(values(references_for(r, cpu)), std::vector<double>{100});
  PointFacts h100{"default", "NVIDIA H100 80GB HBM3", "login1", "", &mb4};
  EXPECT_EQ(values(references_for(r, h100)), std::vector<double>{900});
  h100.host = "gpu17";
  EXPECT_EQ(values(references_for(r, h100)), std::vector<double>{950});
  // Equally specific references of a metric all apply.
  h100.config = &mb2;
  h100.host = "login1";
  EXPECT_EQ(values(references_for(r, h100)), (std::vector<double>{900, 50}));
  h100.partition = "big";
  EXPECT_EQ(values(references_for(r, h100)), (std::vector<double>{900, 50, 10}));
}

TEST(References, AReferenceAppliesToItsScenarioOnly) {
  SweepSpec spec = spec_from_text(
      "base: {model.preset: gpt2-tiny}\n"
      "scenarios:\n  - {name: small}\n  - {name: large}\n"
      "references:\n  - {metric: tps, value: 1, lower: -1, scenario: 'l*'}\n");
  Value config = Value::map();
  EXPECT_TRUE(references_for(spec.references, {"small", "", "", "", &config}).empty());
  EXPECT_EQ(references_for(spec.references, {"large", "", "", "", &config}).size(), 1u);
}

TEST(References, FactsFallBackToTheConfigsHardwareName) {
  Value config = parse_yaml("hardware: {name: my-gpu}", "c");
  EXPECT_EQ(facts_of("default", config, Value::map(), "h", "p").device, "my-gpu");
  Value summary = parse_yaml("device_name: NVIDIA H200", "s");
  EXPECT_EQ(facts_of("default", config, summary, "h", "p").device, "NVIDIA H200");
}

TEST(References, IntervalOfAMetric) {
  Value m = parse_yaml(
      "train_tokens_per_second: 100\ntrain_tokens_per_second_ci_low: 90\n"
      "train_tokens_per_second_ci_high: 110\nstep_time_mean_s: 2\nstep_time_ci_low_s: 1.5\n"
      "step_time_ci_high_s: 2.5\nmem_peak_bytes: 7\n",
      "m");
  EXPECT_EQ(metric_interval(m, "train_tokens_per_second"), (std::pair{90.0, 110.0}));
  EXPECT_EQ(metric_interval(m, "step_time_mean_s"), (std::pair{1.5, 2.5}));
  EXPECT_EQ(metric_interval(m, "mem_peak_bytes"), std::nullopt);
}

TEST(References, OnlyAWholeIntervalOutsideMisses) {
  EXPECT_FALSE(interval_misses(85, 95, 90, INFINITY));  // overlaps the bound: not a miss
  EXPECT_TRUE(interval_misses(80, 89.9, 90, INFINITY));
  EXPECT_TRUE(interval_misses(1.1, 1.2, -INFINITY, 1.0));
  EXPECT_FALSE(interval_misses(0.9, 1.2, -INFINITY, 1.0));
  EXPECT_FALSE(interval_misses(5, 5, 5, 5));
}

TEST(References, CheckAgainstResults) {
  std::vector<PerformanceReference> r =
      refs("  - {metric: train_tokens_per_second, value: 100, lower: -5%, unit: tokens/s}\n"
           "  - {metric: mem_peak_bytes, value: 0, upper: 6}\n"
           "  - {metric: eval_loss, value: 1, lower: -1}\n"
           "  - {metric: train_tokens_per_second, value: 100, lower: -5%, unit: samples/s}\n");
  Value metrics = parse_yaml(
      "train_tokens_per_second: 94\ntrain_tokens_per_second_ci_low: 90\n"
      "train_tokens_per_second_ci_high: 96\nmem_peak_bytes: 7\neval_loss: null\n",
      "m");
  Value units = parse_yaml("train_tokens_per_second: tokens/s\nmem_peak_bytes: bytes\n", "u");
  // The mean is below 95, but the interval reaches it: a pass.
  ReferenceCheck tps = check_reference(r[0], metrics, units);
  EXPECT_TRUE(tps.pass);
  EXPECT_EQ(tps.ci_low, 90);
  EXPECT_EQ(tps.bound, "-5%..");
  ReferenceCheck mem = check_reference(r[1], metrics, units);
  EXPECT_FALSE(mem.pass);
  EXPECT_EQ(mem.why, "mem_peak_bytes 7 is above 6");
  EXPECT_EQ(describe_miss(mem), "mem_peak_bytes 7 is above 6 (reference 0 bytes ..+6, s.yaml:5:5)");
  ReferenceCheck loss = check_reference(r[2], metrics, units);
  EXPECT_FALSE(loss.pass);
  EXPECT_EQ(loss.why, "eval_loss has no value (null)");
  EXPECT_EQ(check_reference(r[2], Value::map(), units).why, "the results have no metric eval_loss");
  EXPECT_EQ(check_reference(r[3], metrics, units).why,
            "train_tokens_per_second is in tokens/s, the reference in samples/s");
  // status.json keeps the check; it reads back the same.
  std::optional<ReferenceCheck> back = ReferenceCheck::from_value(mem.to_value());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->low, -INFINITY);
  EXPECT_EQ(back->high, 6);
  EXPECT_EQ(back->measured, 7);
  EXPECT_FALSE(back->pass);
  EXPECT_EQ(describe_miss(*back), describe_miss(mem));
}

}  // namespace
}  // namespace sweepbench
