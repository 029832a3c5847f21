// Statistics of timings that hold up (docs/metrics.md, "Intervals and noise"): a mean with a
// confidence interval that stays honest when samples are correlated, as the steps of one training
// run are, and a coefficient of variation for the noise flag.
//
// One run's steps: the leading samples that are still settling are cut by MSER-5 (White, 1997:
// the cut that minimises the standard error of the rest, searched over the first half); the rest
// are grouped into 20 batches (fewer for short series, at least 2 samples each) whose means are
// nearly independent, and the interval is Student's t over the batch means with the variance
// inflated by their remaining lag-1 correlation r, (1 + r) / (1 - r), and the degrees of freedom
// cut to the batches' effective number. MSER's cut is kept only where the steps it leaves out
// differ from the rest beyond chance. On AR(1) steps the 95% interval covers the true mean 93% of
// the time or more from 200 steps at correlation 0.5 and from 1,000 at 0.9, with or without a
// warm-up transient; shorter correlated series less often (docs/metrics.md has the table from
// bench/interval_coverage.cc; tests/metrics/statistics_test.cc checks it).
//
// Independent repeats (one value per run): from 6 runs Hesterberg's expanded percentile bootstrap
// of the mean, with a fixed seed so that the same values give the same interval; below 6,
// Student's t (a bootstrap of so few values cannot reach its tails).
//
// Leaves out: which metric is better up or down, and comparisons (bench-compare).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace sweepbench {

// The q-quantile, q in [0, 1], interpolated linearly between order statistics; NaN for an
// empty list or one holding a NaN.
double percentile(std::vector<double> values, double q);

// The mean; NaN for no values.
double mean(const std::vector<double>& values);
// Sample standard deviation (n - 1); 0 for fewer than two values.
double stddev(const std::vector<double>& values);

// The same over n values at x, without overflow: values beyond kLargeMagnitude (near DBL_MAX,
// where a sum or a squared deviation would be inf) are scaled down first, so that the mean and
// the standard deviation of finite values are finite (docs/security.md). NaN for no values.
constexpr double kLargeMagnitude = 1e150;
double mean_of(const double* x, size_t n);
double sample_stddev_of(const double* x, size_t n, double mean);

struct Estimate {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double mean = kNaN;  // of the samples kept
  double low = kNaN;   // the interval of the mean; NaN with too few samples to say
  double high = kNaN;
  double cv = kNaN;    // sample standard deviation over the mean, of the samples kept
  size_t samples = 0;  // kept
  size_t cut = 0;      // leading samples left out as still settling (series only)
  bool has_interval() const { return low == low && high == high; }  // not NaN
};

// MSER-5's cut: the number of leading samples to leave out (a multiple of 5, at most half).
size_t mser_cut(const std::vector<double>& x);

// The mean of a correlated series (the steps of one run) after MSER-5's cut, and its interval at
// `level` by batch means. No interval below 4 samples kept.
Estimate series_estimate(const std::vector<double>& x, double level = 0.95);

// The leading samples series_estimate leaves out: MSER-5's cut where those samples differ from
// the rest beyond chance, else none.
size_t settled_cut(const std::vector<double>& x);

// The batch means series_estimate's interval is made of (up to 20, after the cut): one run's
// nearly independent samples for bench-compare. Empty below 4 samples kept.
std::vector<double> batch_means(const std::vector<double>& x);

// The standard error of the mean of nearly independent batch means (one run's, batch_means())
// and its degrees of freedom: their variance over their number, inflated by their remaining lag-1
// correlation r, (1 + r) / (1 - r), and Student's t over their effective number, minus 1. NaN
// below 2 means.
struct StandardError {
  double se = std::numeric_limits<double>::quiet_NaN();
  double df = std::numeric_limits<double>::quiet_NaN();
  double half_width(double level) const;  // t quantile x se; NaN without df
};
StandardError batch_means_error(const std::vector<double>& means);

// The mean of independent values (one per repeat) and its interval at `level`: Student's t
// below 6 values, else the expanded percentile bootstrap (`resamples` draws, a fixed seed). No
// interval below 2 values.
Estimate repeats_estimate(const std::vector<double>& x, double level = 0.95, int resamples = 4000,
                          std::uint64_t seed = 1);

// Measure until precise (docs/metrics.md, "Measure until precise"): a run goes on past its
// least steps (or runs) until the 95% interval of its mean is within a target fraction of it, or
// its time budget is spent. Stopping when the interval looks tight favours intervals that are
// tight by chance, so the rule looks seldom (each look half as many samples again as the last)
// and never before kFewestToStop samples: on AR(1) series of correlation 0.5 the final 95%
// interval then holds the mean 93% of the time or more (bench/interval_coverage.cc's second
// table; tests/metrics/statistics_test.cc checks it).
inline constexpr size_t kFewestToStop = 100;

// Half the 95% interval of series_estimate over its mean: the precision reached (NaN where there
// is no interval).
double relative_half_width(const std::vector<double>& x);

// Whether a series measured so far may stop: at least kFewestToStop samples and
// relative_half_width within `target`.
bool precise_enough(const std::vector<double>& x, double target);

// The next number of samples at which to look, after a look at n: half as many again, at least
// one more, and not below kFewestToStop.
size_t next_look(size_t n);

// The same rule for independent runs (bench-infer's timed generations), whose interval is
// repeats_estimate's: never before kFewestRunsToStop runs, then at each look (half as many runs
// again) until relative_half_width_of_runs is within the target. On independent runs the final
// interval holds the mean 94% of the time or more (tests/metrics/statistics_test.cc).
// A sweep's repeats until precise (sweeps.md) take the same rule with the sweep's `least` as the
// fewest; from 3, the interval holds the mean 91 to 92.5% of the time.
inline constexpr size_t kFewestRunsToStop = 10;
double relative_half_width_of_runs(const std::vector<double>& x);
// Half an estimate's interval over its mean; NaN without an interval or a positive mean.
double half_width_over_mean(const Estimate& e);
bool precise_enough_runs(const std::vector<double>& x, double target,
                         size_t fewest = kFewestRunsToStop);
size_t next_look_runs(size_t n, size_t fewest = kFewestRunsToStop);

// Student's t quantile (Boost.Math), for p in (0, 1) and df > 0.
double student_t_quantile(double p, double df);

}  // namespace sweepbench
