#include "sweep/repeats_until.h"

#include <gtest/gtest.h>

#include "config/yaml_io.h"

namespace sweepbench {
namespace {

Value summary(const std::string& yaml) { return parse_yaml(yaml, "summary.json"); }

TEST(RepeatsUntil, EachWorkloadsHeadlineOrTheMetricNamed) {
  std::string used;
  EXPECT_EQ(repeat_value(summary("{benchmark: command, status: ok, seconds: 0.5, metrics: {}}"), "",
                         &used),
            0.5);
  EXPECT_EQ(used, "seconds");
  EXPECT_EQ(repeat_value(summary("{benchmark: train, status: ok, metrics: "
                                 "{train_tokens_per_second: 900, mfu: 0.3}}"),
                         "", &used),
            900);
  EXPECT_EQ(used, "train_tokens_per_second");
  EXPECT_EQ(
      repeat_value(summary("{benchmark: infer, status: ok, metrics: {output_tps: 70}}"), "", &used),
      70);
  EXPECT_EQ(
      repeat_value(summary("{benchmark: train, status: ok, metrics: {mfu: 0.3}}"), "mfu", &used),
      0.3);
  // Not ok, or no finite value: nothing.
  EXPECT_FALSE(
      repeat_value(summary("{benchmark: train, status: oom, metrics: {mfu: 0.3}}"), "mfu", &used));
  EXPECT_FALSE(
      repeat_value(summary("{benchmark: train, status: ok, metrics: {mfu: .nan}}"), "mfu", &used));
  EXPECT_FALSE(repeat_value(summary("{benchmark: train, status: ok, metrics: {}}"), "", &used));
}

TEST(RepeatsUntil, SkipsOnceALookIsWithinTheTarget) {
  RepeatsRule rule;
  rule.least = 3;
  rule.target = 0.05;
  EXPECT_FALSE(precise_reason(rule, {1.0, 1.0}, "seconds"));  // fewer than least
  std::optional<std::string> why = precise_reason(rule, {1.0, 1.01, 0.99}, "seconds");
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind(kPreciseReason, 0), 0u);
  EXPECT_NE(why->find("seconds 1 within ±"), std::string::npos) << *why;
  EXPECT_NE(why->find("after 3 repeats (repeats.target_ci 5%)"), std::string::npos) << *why;
  // Wide at 3 and at 4; 5 is no look; at 6 the first six agree well enough.
  const std::vector<double> values = {1.0, 1.5, 0.6, 1.0, 1.0, 1.0, 1.0};
  EXPECT_FALSE(precise_reason(rule, {values.begin(), values.begin() + 5}, "x"));
  rule.target = 0.3;
  why = precise_reason(rule, values, "x");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("after 6 repeats"), std::string::npos) << *why;
}

}  // namespace
}  // namespace sweepbench
