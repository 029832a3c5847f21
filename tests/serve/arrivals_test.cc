// serve/arrivals.h against the distributions it claims. Each statistical check allows 4 standard
// errors of the statistic for the sample drawn (a false failure about once in 16,000 checks for
// a normal statistic); the draws are seeded, so a run's outcome never changes.
#include "serve/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace sweepbench::serve {
namespace {

constexpr double kSigmas = 4;

struct Moments {
  double mean = 0, variance = 0;
};
Moments moments(const std::vector<double>& x) {
  Moments m;
  for (double v : x) m.mean += v;
  m.mean /= static_cast<double>(x.size());
  for (double v : x) m.variance += (v - m.mean) * (v - m.mean);
  m.variance /= static_cast<double>(x.size() - 1);
  return m;
}

std::vector<double> gaps_of(const std::vector<double>& times) {
  std::vector<double> gaps;
  double previous = 0;
  for (double t : times) {
    gaps.push_back(t - previous);
    previous = t;
  }
  return gaps;
}

// Checks n iid gaps against a gamma of shape k and mean 1 / rate:
//  - the mean gap within kSigmas x sd / sqrt(n), sd = mean / sqrt(k);
//  - the coefficient of variation 1 / sqrt(k) within kSigmas standard errors of the sample CV,
//    by the delta method on log(s / mean): Var = (Var(s^2) / (4 sigma^4) + Var(mean) / mu^2 -
//    Cov(s^2, mean) / (sigma^2 mu)), with a gamma's Var(s^2) = sigma^4 (2 + 6 / k) / n,
//    Cov = mu_3 / n = 2 sigma^3 / sqrt(k) / n: SE(CV) = CV sqrt((1 + 1 / k) / (2 n)).
void expect_gamma_gaps(const std::vector<double>& gaps, double rate, double k, const char* what) {
  auto n = static_cast<double>(gaps.size());
  Moments m = moments(gaps);
  double mean = 1 / rate;
  double cv = 1 / std::sqrt(k);
  EXPECT_NEAR(m.mean, mean, kSigmas * mean * cv / std::sqrt(n)) << what;
  double sample_cv = std::sqrt(m.variance) / m.mean;
  EXPECT_NEAR(sample_cv, cv, kSigmas * cv * std::sqrt((1 + 1 / k) / (2 * n))) << what;
}

TEST(Arrivals, TheEngineIsTheStandardsMersenneTwister) {
  // The C++ standard ([rand.predef]): the 10000th draw of a default-constructed mt19937_64.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ull);
}

TEST(Arrivals, UniformsStayInsideTheOpenInterval) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    double u = draw_uniform(rng);
    ASSERT_GT(u, 0);
    ASSERT_LT(u, 1);
  }
}

TEST(Arrivals, GammaDrawsHaveTheirShapesMeanAndVariance) {
  // Scale 1: mean k, variance k. SE(mean) = sqrt(k / n); SE(s^2) = sqrt((mu_4 - sigma^4) / n)
  // = k sqrt((2 + 6 / k) / n) (a gamma's excess kurtosis is 6 / k).
  const int n = 40000;
  for (double k : {0.3, 1.0, 2.5, 7.0}) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(k * 1000));
    std::vector<double> x;
    for (int i = 0; i < n; ++i) x.push_back(draw_gamma(rng, k));
    Moments m = moments(x);
    EXPECT_NEAR(m.mean, k, kSigmas * std::sqrt(k / n)) << "shape " << k;
    EXPECT_NEAR(m.variance, k, kSigmas * k * std::sqrt((2 + 6 / k) / n)) << "shape " << k;
  }
}

TEST(Arrivals, PoissonGivesItsRateAndExponentialGaps) {
  // Over a duration: the count is Poisson(rate x T), sd sqrt(rate x T).
  const double rate = 50, duration = 200;
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    std::vector<double> t = send_times(PoissonRate{rate}, {duration, 0}, seed);
    double expected = rate * duration;
    EXPECT_NEAR(static_cast<double>(t.size()), expected, kSigmas * std::sqrt(expected));
    ASSERT_FALSE(t.empty());
    EXPECT_LT(t.back(), duration);
    for (size_t i = 1; i < t.size(); ++i) ASSERT_GT(t[i], t[i - 1]);
    // By count: n iid gaps (stopping by count does not bias them as a duration would).
    std::vector<double> gaps = gaps_of(send_times(PoissonRate{rate}, {0, 20000}, seed));
    ASSERT_EQ(gaps.size(), 20000u);
    expect_gamma_gaps(gaps, rate, 1, "poisson");
  }
}

TEST(Arrivals, GammaGapsFollowTheBurstiness) {
  // burstiness 0.25: CV 2 (bursty); 1: Poisson; 4: CV 0.5 (even).
  const double rate = 20;
  for (double b : {0.25, 1.0, 4.0}) {
    for (std::uint64_t seed : {7, 8, 9}) {
      std::vector<double> gaps = gaps_of(send_times(GammaRate{rate, b}, {0, 20000}, seed));
      ASSERT_EQ(gaps.size(), 20000u);
      expect_gamma_gaps(gaps, rate, b, "gamma");
    }
  }
}

TEST(Arrivals, ARampsRateFollowsTheLine) {
  // rate(t) = a + (b - a) t / T: the count in [t0, t1) is Poisson with mean
  // a (t1 - t0) + (b - a) (t1^2 - t0^2) / (2T); each of 10 bins within 4 sd, and the total.
  const double duration = 100;
  for (auto [a, b] : {std::pair{10.0, 90.0}, std::pair{80.0, 0.0}, std::pair{0.0, 50.0}}) {
    std::vector<double> t = send_times(LinearRamp{a, b}, {duration, 0}, 11);
    auto expected_in = [&](double t0, double t1) {
      return a * (t1 - t0) + (b - a) * (t1 * t1 - t0 * t0) / (2 * duration);
    };
    double total = expected_in(0, duration);
    EXPECT_NEAR(static_cast<double>(t.size()), total, kSigmas * std::sqrt(total));
    for (int bin = 0; bin < 10; ++bin) {
      double t0 = bin * duration / 10, t1 = (bin + 1) * duration / 10;
      double count = 0;
      for (double x : t) count += x >= t0 && x < t1 ? 1 : 0;
      double expected = expected_in(t0, t1);
      EXPECT_NEAR(count, expected, kSigmas * std::sqrt(expected) + 1e-9)
          << a << " to " << b << ", bin " << bin;
    }
    for (size_t i = 1; i < t.size(); ++i) ASSERT_GT(t[i], t[i - 1]);
  }
}

TEST(Arrivals, ASeedReproducesItsTimes) {
  for (const ArrivalSchedule& s :
       {ArrivalSchedule{PoissonRate{5}}, ArrivalSchedule{GammaRate{5, 0.5}},
        ArrivalSchedule{LinearRamp{1, 9}}}) {
    std::vector<double> a = send_times(s, {60, 0}, 42);
    std::vector<double> b = send_times(s, {60, 0}, 42);
    std::vector<double> c = send_times(s, {60, 0}, 43);
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
  }
}

TEST(Arrivals, StopsAtTheFirstLimitReached) {
  EXPECT_EQ(send_times(PoissonRate{100}, {0, 37}, 1).size(), 37u);
  EXPECT_EQ(send_times(PoissonRate{100}, {1000, 37}, 1).size(), 37u);
  std::vector<double> t = send_times(PoissonRate{100}, {0.5, 1000}, 1);
  EXPECT_LT(t.size(), 1000u);
  EXPECT_LT(t.back(), 0.5);
  EXPECT_LE(send_times(LinearRamp{100, 100}, {1, 5}, 1).size(), 5u);
}

TEST(Arrivals, RefusesAPlanWithoutMeaning) {
  ScheduleLimits ok{10, 0};
  EXPECT_THROW(send_times(PoissonRate{0}, ok, 1), std::invalid_argument);
  EXPECT_THROW(send_times(PoissonRate{-1}, ok, 1), std::invalid_argument);
  EXPECT_THROW(send_times(PoissonRate{std::nan("")}, ok, 1), std::invalid_argument);
  EXPECT_THROW(send_times(PoissonRate{INFINITY}, ok, 1), std::invalid_argument);
  EXPECT_THROW(send_times(GammaRate{1, 0}, ok, 1), std::invalid_argument);
  EXPECT_THROW(send_times(PoissonRate{1}, {0, 0}, 1), std::invalid_argument);
  EXPECT_THROW(send_times(PoissonRate{1}, {-1, 5}, 1), std::invalid_argument);
  EXPECT_THROW(send_times(LinearRamp{0, 0}, ok, 1), std::invalid_argument);
  EXPECT_THROW(send_times(LinearRamp{-1, 5}, ok, 1), std::invalid_argument);
  EXPECT_THROW(send_times(LinearRamp{1, 5}, {0, 100}, 1), std::invalid_argument);
}

TEST(Arrivals, DescribesEachPlan) {
  EXPECT_EQ(describe(FixedConcurrency{16}), "concurrency 16");
  EXPECT_EQ(describe(ArrivalSchedule{PoissonRate{4}}), "poisson at 4.0/s");
  EXPECT_EQ(describe(ArrivalSchedule{GammaRate{4, 0.5}}), "gamma at 4.0/s, burstiness 0.5");
  EXPECT_EQ(describe(ArrivalSchedule{LinearRamp{1, 8}}), "ramp 1.0/s to 8.0/s");
}

}  // namespace
}  // namespace sweepbench::serve
