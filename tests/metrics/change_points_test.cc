// Change points of one series (metrics/change_points.h): steps found where they are and with the
// right size, none in a flat series, environment cuts always tested, the excess variance, and
// Benjamini-Hochberg against a worked example.
#include "metrics/change_points.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace sweepbench {
namespace {

// n runs around `level` with relative noise `sd` between runs, each with its own interval of
// +-`own` (relative), in environment `env`.
std::vector<SeriesPoint> runs(size_t n, double level, double sd, double own, const std::string& env,
                              std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0.0, sd);
  std::vector<SeriesPoint> out;
  for (size_t i = 0; i < n; ++i) {
    SeriesPoint p;
    p.value = level * std::exp(noise(rng));
    p.ci_low = p.value * (1 - own);
    p.ci_high = p.value * (1 + own);
    p.environment = env;
    out.push_back(p);
  }
  return out;
}

std::vector<SeriesPoint> operator+(std::vector<SeriesPoint> a, const std::vector<SeriesPoint>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ChangePoints, AStepIsFoundWhereItIsWithItsSize) {
  std::mt19937_64 rng(7);
  auto s = runs(10, 1000, 0.01, 0.01, "e", rng) + runs(10, 900, 0.01, 0.01, "e", rng);
  std::vector<ChangePoint> cuts = find_change_points(s).cuts;
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0].at, 10u);
  EXPECT_FALSE(cuts[0].environment);
  EXPECT_NEAR(cuts[0].change, -0.10, 0.01);
  EXPECT_LT(cuts[0].low, -0.10);
  EXPECT_GT(cuts[0].high, -0.10);
  EXPECT_LT(cuts[0].p, 1e-6);
  EXPECT_EQ(cuts[0].runs_before, 10u);
  EXPECT_EQ(cuts[0].runs_after, 10u);
}

TEST(ChangePoints, FlatSeriesHaveNoSearchedCut) {
  // 200 flat series of 30 runs: a searched cut survives Bonferroni at 5% rarely.
  std::mt19937_64 rng(11);
  int found = 0;
  for (int i = 0; i < 200; ++i) {
    found += find_change_points(runs(30, 50, 0.03, 0.02, "e", rng)).cuts.empty() ? 0 : 1;
  }
  EXPECT_LE(found, 10);  // at most 5%, with room for chance
}

TEST(ChangePoints, RunsThatScatterBeyondTheirIntervalsAreNotTakenAtTheirWord) {
  // Each run claims +-0.1%, but runs scatter by 5%: the excess variance says so, and no step is
  // found in noise.
  std::mt19937_64 rng(3);
  auto s = runs(40, 100, 0.05, 0.001, "e", rng);
  const double tau = std::sqrt(excess_variance(s));
  EXPECT_GT(tau, 0.03);
  EXPECT_LT(tau, 0.08);
  EXPECT_TRUE(find_change_points(s).cuts.empty());
}

TEST(ChangePoints, AnEnvironmentChangeIsAlwaysTestedAndMarked) {
  std::mt19937_64 rng(5);
  // Slower in the new environment: found with two runs after.
  auto s = runs(6, 1000, 0.01, 0.01, "old", rng) + runs(2, 930, 0.01, 0.01, "new", rng);
  std::vector<ChangePoint> cuts = find_change_points(s).cuts;
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0].at, 6u);
  EXPECT_TRUE(cuts[0].environment);
  EXPECT_NEAR(cuts[0].change, -0.07, 0.02);
  EXPECT_LT(cuts[0].p, 1e-3);
  // The same level in a new environment: a cut, but no evidence of a change.
  s = runs(6, 1000, 0.01, 0.01, "old", rng) + runs(3, 1000, 0.01, 0.01, "new", rng);
  cuts = find_change_points(s).cuts;
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_GT(cuts[0].p, 0.01);
}

TEST(ChangePoints, RunsOnAnotherHostEachTimeAreNotEachAChange) {
  // Each run on the next of four hosts, each claiming +-0.3% while runs scatter by 3%: every
  // cut is an environment change, and none is taken for a change of level.
  std::mt19937_64 rng(13);
  int alarms = 0;
  for (int k = 0; k < 50; ++k) {
    std::vector<SeriesPoint> s = runs(20, 100, 0.03, 0.003, "", rng);
    for (size_t i = 0; i < s.size(); ++i) s[i].environment = "host" + std::to_string(i % 4);
    ChangeSearch found = find_change_points(s);
    EXPECT_EQ(found.cuts.size(), 19u);
    std::vector<double> p;
    for (const ChangePoint& c : found.cuts) p.push_back(c.p);
    std::vector<bool> d = benjamini_hochberg(p, 0.05, found.tests);
    alarms += std::count(d.begin(), d.end(), true) > 0 ? 1 : 0;
  }
  EXPECT_LE(alarms, 5);
  // Equal values without intervals have no variance: nothing is tested, nothing is called.
  std::vector<SeriesPoint> same(6);
  for (size_t i = 0; i < same.size(); ++i) {
    same[i].value = 100;
    same[i].environment = i < 3 ? "a" : "b";
  }
  ChangeSearch none = find_change_points(same);
  EXPECT_TRUE(none.cuts.empty());
  EXPECT_EQ(none.tests, 0u);
}

TEST(ChangePoints, AStepBetweenRunsThatRepeatOneValueIsJudged) {
  // Whole milliseconds on a quiet machine: 31 eight times in the old image, 91 five times in
  // the new one. No scatter within either; the step itself is the scatter, and it is plain.
  std::vector<SeriesPoint> s(13);
  for (size_t i = 0; i < s.size(); ++i) {
    s[i].value = i < 8 ? 31 : 91;
    s[i].environment = i < 8 ? "old" : "new";
  }
  ChangeSearch found = find_change_points(s);
  ASSERT_EQ(found.cuts.size(), 1u);
  const ChangePoint& c = found.cuts[0];
  EXPECT_EQ(c.at, 8u);
  EXPECT_TRUE(c.environment);
  EXPECT_NEAR(c.change, 91.0 / 31 - 1, 1e-9);
  EXPECT_GT(c.low, 0.5);
  EXPECT_LT(c.low, c.change);
  EXPECT_GT(c.high, c.change);
  EXPECT_LT(c.p, 1e-3);
  EXPECT_EQ(found.tests, 2u);  // the environment cut, and the eight old runs searched
  // With three runs a side the evidence is weaker, and says so.
  s.assign(6, SeriesPoint{});
  for (size_t i = 0; i < s.size(); ++i) {
    s[i].value = i < 3 ? 100 : 101;
    s[i].environment = i < 3 ? "a" : "b";
  }
  found = find_change_points(s);
  ASSERT_EQ(found.cuts.size(), 1u);
  EXPECT_GT(found.cuts[0].p, 1e-3);
  EXPECT_LT(found.cuts[0].low, found.cuts[0].change);
}

TEST(ChangePoints, RunsWithoutIntervalsAreWeighedByTheSeriesScatter) {
  std::mt19937_64 rng(9);
  auto s = runs(12, 10, 0.02, 0.0, "e", rng) + runs(12, 12, 0.02, 0.0, "e", rng);
  for (SeriesPoint& p : s) p.ci_low = p.ci_high = SeriesPoint::kNaN;
  std::vector<ChangePoint> cuts = find_change_points(s).cuts;
  ASSERT_EQ(cuts.size(), 1u);
  EXPECT_EQ(cuts[0].at, 12u);
  EXPECT_NEAR(cuts[0].change, 0.2, 0.03);
}

TEST(BenjaminiHochberg, MatchesTheWorkedExample) {
  // Benjamini and Hochberg (1995)'s 15 p-values at q = 0.05: the 4 smallest are discoveries.
  const std::vector<double> p = {0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344,
                                 0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.0};
  std::vector<bool> d = benjamini_hochberg(p, 0.05);
  EXPECT_EQ(std::count(d.begin(), d.end(), true), 4);
  EXPECT_TRUE(d[3]);
  EXPECT_FALSE(d[4]);
  EXPECT_TRUE(benjamini_hochberg({}, 0.05).empty());
}

}  // namespace
}  // namespace sweepbench
