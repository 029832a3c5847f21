#include "results/significance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "results/statistics.h"

namespace sweepbench {
namespace {

struct UCase {
  std::vector<double> a, b;
  double u, p;
};

// scipy.stats.mannwhitneyu(a, b) with its defaults, scipy 1.17.1 (tests/results/scipy_u_cases.py
// writes this table): exact p-values (a sample of at most 8, no ties), the normal approximation
// with ties and without, lopsided sizes, single values.
const std::vector<UCase> kScipy = {
    {{10.3047, 8.96, 10.7505}, {11.5406, 8.649, 9.2978, 10.7278, 10.2838}, 8.0, 1.0},
    {{9.9832, 9.147, 10.8794, 10.7778, 10.066},
     {11.7272, 11.0675, 9.7407, 10.9688, 9.6411},
     8.0,
     0.42063492063492064},
    {{10.8785, 9.9501, 9.8151, 9.3191, 11.2225, 9.8455, 9.5717, 9.6479},
     {11.1323, 10.9654, 11.0127, 11.0308, 12.7416, 10.1936, 10.0878, 9.7862},
     13.0,
     0.04988344988344988},
    {{10.616, 11.129, 9.8861, 9.1598},
     {9.7755, 11.2506, 11.3433, 11.1432, 9.9345, 10.8322, 10.7167, 10.8187, 11.4714, 10.8236,
      11.2789, 10.6676},
     10.0,
     0.10329670329670329},
    {{10.2891, 10.6313, 8.5428, 9.6803, 9.5296, 9.3611, 9.7249, 11.4949},
     {9.7342,  11.5683, 8.9171,  10.2651, 10.7628, 11.1862, 11.3112, 11.3933, 10.2513, 10.1376,
      11.458,  10.4087, 9.3243,  9.4667,  9.6805,  11.0972, 10.7424, 11.2905, 10.1727, 10.7585,
      11.2256, 10.2907, 11.0568, 9.9381,  10.2369, 10.2183, 9.4042,  11.087,  10.1306, 10.6125},
     75.0,
     0.11227316855000868},
    {{10.4807, 10.4465, 10.6654, 9.9015, 9.5767, 9.9203, 8.3127, 8.5529, 8.6773},
     {9.6028, 10.9998, 9.6945, 10.2218, 11.8992, 10.2437, 11.3375, 9.6664, 10.3946},
     24.0,
     0.1577043874630777},
    {{9.05,    9.661,   10.8403, 8.2727, 10.4344, 10.2377, 9.4059, 8.5539,  10.0721, 9.4705,
      10.2327, 10.0219, 11.6018, 9.7606, 8.9765,  10.1793, 10.22,  11.3592, 10.8351, 10.3569},
     {12.0633, 9.4112,  9.9602,  9.6734,  10.2102, 9.2233,  11.2352, 10.3778, 9.1292,
      9.5844,  10.9135, 11.4381, 12.5967, 13.5139, 11.0144, 9.6105,  8.468,   10.8677,
      9.7871,  10.1846, 9.9879,  10.4592, 11.666,  10.757,  10.4414},
     187.0,
     0.1534068503093497},
    {{1.0, 3.0, 1.0, 0.0, 3.0, 4.0}, {1.0, 2.0, 2.0, 4.0, 5.0, 5.0}, 10.5, 0.25557561724291833},
    {{5.0, 4.0, 1.0, 0.0, 3.0, 5.0, 5.0, 1.0, 1.0, 0.0},
     {1.0, 4.0, 4.0, 3.0, 2.0, 5.0, 3.0, 5.0, 6.0, 2.0, 2.0, 6.0, 4.0, 2.0},
     49.0,
     0.22427361081413533},
    {{9.8434, 9.9592, 9.3452},
     {11.0461, 10.145,  9.3744,  9.3221,  10.7726, 12.1791, 10.76,   10.4814, 10.8858, 11.906,
      10.8194, 10.1891, 11.7063, 11.0288, 12.1358, 10.7832, 9.3755,  9.2318,  12.2509, 12.3237,
      10.4205, 10.2168, 12.0614, 9.493,   9.7053,  11.2433, 10.2054, 10.5949, 10.4366, 10.9376,
      12.0075, 10.6906, 11.2439, 8.5498,  10.5513, 9.7568,  9.3812,  9.7218,  10.2659, 11.5159},
     23.0,
     0.08329957053723362},
    {{8.6736}, {10.6306}, 0.0, 1.0},
    {{9.5158, 9.6723}, {11.6028, 11.1381, 11.9374}, 0.0, 0.2},
};

TEST(MannWhitneyU, AgreesWithScipy) {
  for (const UCase& c : kScipy) {
    UTest t = mann_whitney_u(c.a, c.b);
    EXPECT_DOUBLE_EQ(t.u, c.u) << c.a.size() << " vs " << c.b.size();
    EXPECT_NEAR(t.p, c.p, 1e-12 + 1e-9 * c.p) << c.a.size() << " vs " << c.b.size();
  }
}

TEST(MannWhitneyU, EmptyAndAllEqualSamples) {
  EXPECT_TRUE(std::isnan(mann_whitney_u({}, {1.0}).p));
  UTest same = mann_whitney_u(std::vector<double>(10, 2.0), std::vector<double>(12, 2.0));
  EXPECT_DOUBLE_EQ(same.u, 60.0);
  EXPECT_DOUBLE_EQ(same.p, 1.0);
}

TEST(Holm, AdjustsEachPValueForItsFamilyInPlace) {
  // Sorted 0.005, 0.01, 0.03, 0.04, 0.5 times 5, 4, 3, 2, 1, each at least the one before.
  std::vector<double> adjusted = holm_adjust({0.01, 0.04, 0.03, 0.005, 0.5});
  std::vector<double> expected{0.04, 0.09, 0.09, 0.025, 0.5};
  ASSERT_EQ(adjusted.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(adjusted[i], expected[i], 1e-15);
  EXPECT_EQ(holm_adjust({0.9, 0.8}), (std::vector<double>{1.0, 1.0}));
}

TEST(RelativeChange, TheMeansRatioAndAnIntervalAroundIt) {
  Change c = relative_change({100, 101, 99, 100}, {110, 111, 109, 110});
  EXPECT_NEAR(c.ratio, 0.10, 1e-12);
  // The delta method on log(110 / 100): each side's variance 2/3 over 4 and its mean squared;
  // Welch's degrees of freedom.
  const double tb = 2.0 / 3 / 4 / (100.0 * 100), tc = 2.0 / 3 / 4 / (110.0 * 110);
  const double df = (tb + tc) * (tb + tc) / (tb * tb / 3 + tc * tc / 3);
  const double half = student_t_quantile(0.975, df) * std::sqrt(tb + tc);
  EXPECT_NEAR(c.low, std::exp(std::log(1.1) - half) - 1, 1e-12);
  EXPECT_NEAR(c.high, std::exp(std::log(1.1) + half) - 1, 1e-12);
  EXPECT_TRUE(std::isnan(relative_change({1.0}, {2.0, 3.0}).low));  // no spread on one side
  EXPECT_LT(c.low, 0.10);
  EXPECT_GT(c.high, 0.10);
  EXPECT_GT(c.low, 0.07);
  EXPECT_LT(c.high, 0.13);
}

TEST(Verdict, KnowsTheGoodDirectionAndSaysWhenItCannotTell) {
  VerdictRule faster;  // higher is better
  VerdictRule slower;
  slower.higher_is_better = false;
  Change up{0.10, 0.08, 0.12};
  EXPECT_EQ(verdict_of(up, 0.001, 5, 5, faster), Verdict::kBetter);
  EXPECT_EQ(verdict_of(up, 0.001, 5, 5, slower), Verdict::kWorse);
  Change flat{0.001, -0.01, 0.012};
  EXPECT_EQ(verdict_of(flat, 0.6, 5, 5, faster), Verdict::kSame);
  Change wide{0.001, -0.2, 0.25};  // not significant, but not pinned within 2% either
  EXPECT_EQ(verdict_of(wide, 0.6, 5, 5, faster), Verdict::kInconclusive);
  EXPECT_EQ(verdict_of(up, 0.001, 2, 5, faster), Verdict::kInconclusive);  // too few
  EXPECT_EQ(verdict_name(Verdict::kSame), "~");
  EXPECT_EQ(verdict_name(Verdict::kInconclusive), "inconclusive");
}

// The verdict over many comparisons of samples drawn alike: how often it calls them different.
double false_positive_rate(size_t n, int comparisons, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> run(100.0, 3.0);
  int called = 0;
  for (int i = 0; i < comparisons; ++i) {
    std::vector<double> a(n), b(n);
    for (double& v : a) v = run(rng);
    for (double& v : b) v = run(rng);
    Verdict v = verdict_of(relative_change(a, b),
                           mann_whitney_u(a, b).p, n, n, VerdictRule{});
    if (v == Verdict::kBetter || v == Verdict::kWorse) ++called;
  }
  return static_cast<double>(called) / comparisons;
}

TEST(Verdict, CallsEqualConfigurationsDifferentAtMostFivePercentOfTheTime) {
  EXPECT_LE(false_positive_rate(5, 2000, 1), 0.05);
  EXPECT_LE(false_positive_rate(10, 2000, 2), 0.05);
}

TEST(Verdict, FindsAThreePercentSlowdownInTenRepeatsOfOnePercentNoise) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0.0, 1.0);
  int worse = 0;
  for (int i = 0; i < 500; ++i) {
    std::vector<double> a(10), b(10);
    for (double& v : a) v = 100 + noise(rng);
    for (double& v : b) v = 97 + noise(rng);  // tokens/s: 3% fewer
    Verdict v = verdict_of(relative_change(a, b),
                           mann_whitney_u(a, b).p, 10, 10, VerdictRule{});
    if (v == Verdict::kWorse) ++worse;
  }
  EXPECT_GE(worse, 495);
}

TEST(GeometricMean, OfTheRatiosAsBenchstatSummarises) {
  EXPECT_NEAR(geometric_mean_change({0.10, -0.10}), std::sqrt(1.1 * 0.9) - 1, 1e-15);
  EXPECT_NEAR(geometric_mean_change({0.05}), 0.05, 1e-15);
  EXPECT_TRUE(std::isnan(geometric_mean_change({})));
  // A candidate of 0 (-100%) is a factor of 0: the mean change is -100%, not "+nan%" (issue 51);
  // a change of sign has no geometric mean.
  EXPECT_EQ(geometric_mean_change({-1.0}), -1.0);
  EXPECT_EQ(geometric_mean_change({0.5, -1.0, 0.2}), -1.0);
  EXPECT_TRUE(std::isnan(geometric_mean_change({0.5, -1.5})));
}

}  // namespace
}  // namespace sweepbench
