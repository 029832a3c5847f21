// serve/sla_search.h: Wilson intervals against published figures, the answer of all-pass,
// all-fail, bracketed and non-monotone plans, and the search's bisection run to its end against
// a server whose true capacity is known.
#include "serve/sla_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

namespace sweepbench::serve {
namespace {

// Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I, method
// 3 (Wilson's score interval without continuity correction), to its four decimals; and 95 of 100
// by the formula of sla_search.h with z = 1.959964: p = 0.95, z^2 / n = 0.0384146, centre =
// (0.95 + 0.0192073) / 1.0384146 = 0.933353, half = 1.959964 / 1.0384146 x sqrt(0.000475 +
// 0.0000960) = 0.045103, so [0.888250, 0.978456].
TEST(WilsonInterval, MatchesPublishedFigures) {
  struct Case {
    size_t good, n;
    double low, high;
  };
  for (const Case& c :
       {Case{81, 263, 0.2553, 0.3662}, Case{15, 148, 0.0624, 0.1605}, Case{0, 20, 0.0000, 0.1611},
        Case{1, 29, 0.0061, 0.1718}, Case{95, 100, 0.8882, 0.9785}}) {
    Interval i = wilson_interval(c.good, c.n);
    EXPECT_NEAR(i.low, c.low, 0.00006) << c.good << " of " << c.n;
    EXPECT_NEAR(i.high, c.high, 0.00006) << c.good << " of " << c.n;
  }
  Interval i = wilson_interval(95, 100);
  EXPECT_NEAR(i.low, 0.888250, 1e-6);
  EXPECT_NEAR(i.high, 0.978456, 1e-6);
}

TEST(WilsonInterval, StaysInsideZeroOneAndIsNeverEmptyAtTheEnds) {
  Interval all = wilson_interval(100, 100);
  EXPECT_NEAR(all.low, 0.963007, 1e-6);  // 100 of 100 cannot show 0.99 with 95% confidence
  EXPECT_EQ(all.high, 1.0);
  Interval none = wilson_interval(0, 10);
  EXPECT_EQ(none.low, 0.0);
  EXPECT_NEAR(none.high, 0.277533, 1e-6);
  Interval nothing = wilson_interval(0, 0);
  EXPECT_EQ(nothing.low, 0.0);
  EXPECT_EQ(nothing.high, 1.0);
  EXPECT_THROW(wilson_interval(3, 2), std::invalid_argument);
}

TEST(SlaAnswer, EveryLevelMeetingGivesAtLeastTheHighest) {
  SlaAnswer a = answer_of({{4, 200, 200}, {1, 100, 100}, {2, 100, 99}}, 0.99);
  ASSERT_EQ(a.levels.size(), 3u);
  EXPECT_EQ(a.levels[0].level, 1);  // sorted
  EXPECT_EQ(a.levels[2].level, 4);
  ASSERT_TRUE(a.highest_meeting);
  EXPECT_EQ(*a.highest_meeting, 4);
  EXPECT_FALSE(a.lowest_failing);  // "at least 4/s"
  EXPECT_TRUE(a.monotone);
  EXPECT_TRUE(a.levels[1].meets);  // 99 of 100 is exactly 0.99
  EXPECT_DOUBLE_EQ(a.levels[1].attainment, 0.99);
  EXPECT_FALSE(a.levels[1].clearly_meets);  // its Wilson low end is 0.9455
  EXPECT_FALSE(a.levels[1].clearly_fails);
}

TEST(SlaAnswer, EveryLevelFailingGivesNone) {
  SlaAnswer a = answer_of({{1, 100, 90}, {2, 100, 50}}, 0.99);
  EXPECT_FALSE(a.highest_meeting);
  ASSERT_TRUE(a.lowest_failing);
  EXPECT_EQ(*a.lowest_failing, 1);
  EXPECT_TRUE(a.monotone);
  EXPECT_TRUE(a.levels[0].clearly_fails);  // 90 of 100: high end 0.9448
}

TEST(SlaAnswer, AClearBracket) {
  SlaAnswer a = answer_of({{1, 100, 100}, {2, 100, 100}, {4, 100, 97}, {8, 100, 10}});
  ASSERT_TRUE(a.highest_meeting && a.lowest_failing);
  EXPECT_EQ(*a.highest_meeting, 2);
  EXPECT_EQ(*a.lowest_failing, 4);
  EXPECT_TRUE(a.monotone);
  EXPECT_TRUE(a.meeting_above_failure.empty());
}

TEST(SlaAnswer, ANonMonotonePlanTakesTheMeetingLevelBelowTheFirstFailure) {
  // 4/s failed, 8/s met (noise or a server batching better), 16/s failed.
  SlaAnswer a = answer_of({{2, 100, 100}, {4, 100, 95}, {8, 100, 100}, {16, 100, 20}});
  ASSERT_TRUE(a.highest_meeting && a.lowest_failing);
  EXPECT_EQ(*a.highest_meeting, 2);
  EXPECT_EQ(*a.lowest_failing, 4);
  EXPECT_FALSE(a.monotone);
  EXPECT_EQ(a.meeting_above_failure, std::vector<double>{8});

  // The lowest level fails, a higher one meets: no answer.
  SlaAnswer b = answer_of({{2, 100, 50}, {4, 100, 100}});
  EXPECT_FALSE(b.highest_meeting);
  EXPECT_EQ(*b.lowest_failing, 2);
  EXPECT_FALSE(b.monotone);
}

TEST(SlaAnswer, PoolsRepeatsAndNeverPassesALevelWithoutRequests) {
  SlaAnswer a = answer_of({{2, 100, 100}, {2, 100, 97}, {4, 0, 0}});
  ASSERT_EQ(a.levels.size(), 2u);
  EXPECT_EQ(a.levels[0].requests, 200u);
  EXPECT_EQ(a.levels[0].good, 197u);
  EXPECT_FALSE(a.levels[0].meets);  // 0.985
  EXPECT_FALSE(a.levels[1].meets);
  EXPECT_TRUE(std::isnan(a.levels[1].attainment));
  EXPECT_FALSE(a.highest_meeting);
}

TEST(SlaAnswer, RefusesNonsense) {
  EXPECT_THROW(answer_of({{1, 10, 10}}, 0), std::invalid_argument);
  EXPECT_THROW(answer_of({{1, 10, 10}}, 1.5), std::invalid_argument);
  EXPECT_THROW(answer_of({{0, 10, 10}}), std::invalid_argument);
  EXPECT_THROW(answer_of({{NAN, 10, 10}}), std::invalid_argument);
  EXPECT_THROW(answer_of({{1, 10, 11}}), std::invalid_argument);
  SearchOptions no_tolerance;
  no_tolerance.tolerance = 0;
  EXPECT_THROW(next_level({{1, 10, 10}}, 0.99, no_tolerance), std::invalid_argument);
  SearchOptions no_growth;
  no_growth.growth = 1;
  EXPECT_THROW(next_level({{1, 10, 10}}, 0.99, no_growth), std::invalid_argument);
}

// A server that meets the SLA below `capacity` and fails at or above it.
LevelOutcome measure(double level, double capacity) {
  return {level, 100, level < capacity ? size_t{100} : size_t{50}};
}

// Runs the search to its end from the plan's levels; the levels it added, in order.
std::vector<double> search(const std::vector<double>& plan, double capacity, SearchOptions options,
                           std::vector<LevelOutcome>* measured_out = nullptr) {
  std::vector<LevelOutcome> measured;
  for (double level : plan) measured.push_back(measure(level, capacity));
  options.plan_levels = plan.size();
  std::vector<double> added;
  while (std::optional<double> next = next_level(measured, 0.99, options)) {
    for (const LevelOutcome& m : measured) EXPECT_NE(m.level, *next) << "measured twice";
    added.push_back(*next);
    measured.push_back(measure(*next, capacity));
    if (added.size() > 50) break;  // a search that never ends fails below
  }
  if (measured_out) *measured_out = measured;
  return added;
}

TEST(NextLevel, BisectsARateBracketGeometricallyToTheTolerance) {
  SearchOptions options;
  options.max_extra_levels = 20;
  std::vector<LevelOutcome> measured;
  std::vector<double> added = search({1, 2, 4, 8, 16}, 5.3, options, &measured);
  // [4, 8): sqrt(32) = 5.657 fails, sqrt(4 x 5.657) = 4.757 meets, sqrt(4.757 x 5.657) = 5.187
  // meets, and [5.187, 5.657) is within 10%.
  ASSERT_GE(added.size(), 3u);
  EXPECT_NEAR(added[0], std::sqrt(32.0), 1e-12);
  EXPECT_NEAR(added[1], std::sqrt(4 * std::sqrt(32.0)), 1e-12);
  SlaAnswer a = answer_of(measured);
  ASSERT_TRUE(a.highest_meeting && a.lowest_failing);
  EXPECT_LE(*a.lowest_failing / *a.highest_meeting, 1.1);
  EXPECT_LT(*a.highest_meeting, 5.3);
  EXPECT_GE(*a.lowest_failing, 5.3);
  EXPECT_EQ(added.size(), 3u);
}

TEST(NextLevel, StopsAfterTheExtraLevelsAllowed) {
  SearchOptions options;
  options.max_extra_levels = 2;
  options.tolerance = 0.001;
  EXPECT_EQ(search({1, 2, 4, 8, 16}, 5.3, options).size(), 2u);
  options.max_extra_levels = 0;
  EXPECT_TRUE(search({1, 2, 4, 8, 16}, 5.3, options).empty());
}

TEST(NextLevel, BisectsConcurrenciesAsWholeNumbersAndTerminates) {
  SearchOptions options;
  options.kind = LevelKind::kConcurrency;
  options.max_extra_levels = 20;
  options.tolerance = 0.001;  // only running out of whole numbers stops it
  for (double capacity : {17.0, 18.0, 31.0, 32.0, 20.5}) {
    std::vector<LevelOutcome> measured;
    std::vector<double> added = search({1, 16, 32, 64}, capacity, options, &measured);
    for (double level : added) EXPECT_EQ(level, std::floor(level)) << level;
    SlaAnswer a = answer_of(measured);
    ASSERT_TRUE(a.highest_meeting && a.lowest_failing) << capacity;
    // Adjacent whole numbers around the capacity: the highest concurrency below it.
    EXPECT_EQ(*a.lowest_failing - *a.highest_meeting, 1) << capacity;
    EXPECT_EQ(*a.highest_meeting, std::ceil(capacity) - 1) << capacity;
    EXPECT_LE(added.size(), 4u) << capacity;  // [16, 32): at most log2(16) = 4 halvings
  }
  // With the default 10%, [16, 32) stops once hi / lo <= 1.1: at 24 | 26 for capacity 25.
  options.tolerance = 0.1;
  std::vector<LevelOutcome> measured;
  std::vector<double> added = search({16, 32}, 25, options, &measured);
  EXPECT_EQ(added, (std::vector<double>{24, 28, 26}));
}

TEST(NextLevel, GrowsWhenEverythingMeetsAndShrinksWhenNothingDoes) {
  SearchOptions options;
  options.max_extra_levels = 10;
  // No max_level: an all-pass plan stays "at least 8".
  EXPECT_TRUE(search({2, 4, 8}, 100, options).empty());
  options.max_level = 40;
  std::vector<double> grown = search({2, 4, 8}, 100, options);
  EXPECT_EQ(grown, (std::vector<double>{16, 32, 40}));
  // Growth finds a bracket, then bisects it.
  std::vector<double> found = search({2, 4, 8}, 20, options);
  ASSERT_GE(found.size(), 3u);
  EXPECT_EQ(found[0], 16);
  EXPECT_EQ(found[1], 32);
  EXPECT_NEAR(found[2], std::sqrt(16.0 * 32.0), 1e-12);

  options.max_level = 0;
  EXPECT_TRUE(search({2, 4, 8}, 1, options).empty());  // no min_level: no answer
  options.min_level = 0.3;
  EXPECT_EQ(search({2, 4, 8}, 0.1, options), (std::vector<double>{1, 0.5, 0.3}));

  SearchOptions whole;
  whole.kind = LevelKind::kConcurrency;
  whole.max_extra_levels = 10;
  whole.min_level = 1;
  EXPECT_EQ(search({8, 16}, 0.5, whole), (std::vector<double>{4, 2, 1}));
  whole.max_level = 50;
  EXPECT_EQ(search({8, 16}, 1000, whole), (std::vector<double>{32, 50}));
}

TEST(NextLevel, BisectsTheConservativeBracketOfANonMonotonePlan) {
  // 4 fails, 8 meets: the bracket is [2, 4), whatever 8 did.
  std::vector<LevelOutcome> measured = {{2, 100, 100}, {4, 100, 95}, {8, 100, 100}};
  SearchOptions options;
  options.plan_levels = 3;
  std::optional<double> next = next_level(measured, 0.99, options);
  ASSERT_TRUE(next);
  EXPECT_NEAR(*next, std::sqrt(8.0), 1e-12);
  EXPECT_FALSE(next_level({}, 0.99, options));
}

}  // namespace
}  // namespace sweepbench::serve
