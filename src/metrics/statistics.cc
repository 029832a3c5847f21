#include "metrics/statistics.h"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace sweepbench {

double percentile(std::vector<double> values, double q) {
  // A NaN has no place in an order (and would break the selection below).
  if (values.empty() ||
      std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); })) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  double pos = q * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = pos - static_cast<double>(lo);
  // Selection, not a sort: the lo-th value, then the smallest of those after it.
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(lo), values.end());
  double low = values[lo];
  double high = hi == lo ? low
                         : *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(lo) + 1,
                                             values.end());
  return frac == 0 ? low : low + (high - low) * frac;
}

double finite_magnitude(const double* x, size_t n) {
  double scale = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isfinite(x[i])) scale = std::max(scale, std::fabs(x[i]));
  }
  return scale;
}

double mean_of(const double* x, size_t n) {
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  const double scale = finite_magnitude(x, n);
  if (!(scale > kLargeMagnitude)) return std::accumulate(x, x + n, 0.0) / static_cast<double>(n);
  // Values near DBL_MAX: their sum would overflow to inf, their mean does not.
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += x[i] / scale;
  return sum / static_cast<double>(n) * scale;
}

double sample_stddev_of(const double* x, size_t n, double m) {
  // Deviations of values near DBL_MAX overflow when squared: the deviation of x / scale, scaled
  // back (finite wherever the result itself is).
  const double scale = std::max(finite_magnitude(x, n), std::fabs(m));
  const double s = scale > kLargeMagnitude ? scale : 1.0;
  double sq = 0;
  for (size_t i = 0; i < n; ++i) sq += (x[i] / s - m / s) * (x[i] / s - m / s);
  return std::sqrt(sq / static_cast<double>(n - 1)) * s;
}

double mean(const std::vector<double>& values) { return mean_of(values.data(), values.size()); }

double stddev(const std::vector<double>& values) {
  if (values.size() < 2) return 0.0;
  return sample_stddev_of(values.data(), values.size(), mean(values));
}

namespace {

bool any_nan(const std::vector<double>& x) {
  return std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); });
}

}  // namespace

double student_t_quantile(double p, double df) {
  return boost::math::quantile(boost::math::students_t_distribution<double>(df), p);
}

size_t mser_cut(const std::vector<double>& x) {
  constexpr size_t kBatch = 5;
  const size_t k = x.size() / kBatch;
  if (k < 4) return 0;
  // The batches counted from the end, so that a remainder at the start is cut, not the end.
  const size_t skip = x.size() - k * kBatch;
  std::vector<double> z(k);
  for (size_t j = 0; j < k; ++j) z[j] = mean_of(x.data() + skip + j * kBatch, kBatch);
  // MSER(d) = sum over j >= d of (z_j - mean_d)^2 / (k - d)^2, from suffix sums.
  double sum = 0, sum_sq = 0;
  std::vector<double> score(k + 1, 0);
  for (size_t j = k; j-- > 0;) {
    sum += z[j];
    sum_sq += z[j] * z[j];
    const double m = static_cast<double>(k - j);
    score[j] = (sum_sq - sum * sum / m) / (m * m);
  }
  size_t best = 0;
  for (size_t d = 1; d <= k / 2; ++d) {
    if (score[d] < score[best]) best = d;
  }
  return best == 0 ? 0 : skip + best * kBatch;
}

namespace {

constexpr size_t kBatches = 20;
constexpr size_t kFewestToBootstrap = 6;

// x[0, n) in up to 20 batches (fewer when that would leave less than 2 samples in each; a
// remainder is left out at the start, the end being the most settled part) and the error of
// their mean; NaN below 4 samples.
StandardError series_error(const double* x, size_t n) {
  if (n < 4) return {};
  const size_t k = std::min<size_t>(kBatches, n / 2);
  const size_t b = n / k;
  const double* first = x + (n - k * b);
  std::vector<double> means(k);
  for (size_t j = 0; j < k; ++j) means[j] = mean_of(first + j * b, b);
  return batch_means_error(means);
}

}  // namespace

double StandardError::half_width(double level) const {
  if (!(df > 0) || !(se >= 0)) return std::numeric_limits<double>::quiet_NaN();
  return student_t_quantile(0.5 + level / 2, df) * se;
}

StandardError batch_means_error(const std::vector<double>& means) {
  const size_t k = means.size();
  if (k < 2 || any_nan(means)) return {};
  const double m = mean_of(means.data(), k);
  // The batch means' lag-1 correlation: what the batches did not absorb of the series' own. Only
  // a positive one widens the interval (a negative estimate is mostly the small-sample bias).
  double lag = 0, sq = 0;
  for (size_t j = 0; j < k; ++j) {
    sq += (means[j] - m) * (means[j] - m);
    if (j > 0) lag += (means[j] - m) * (means[j - 1] - m);
  }
  const double r = std::clamp(sq > 0 ? lag / sq : 0.0, 0.0, 0.9);
  const double inflation = (1 + r) / (1 - r);
  const double effective = std::max(2.0, static_cast<double>(k) / inflation);
  const double var = sq / static_cast<double>(k - 1);
  return {std::sqrt(var / static_cast<double>(k) * inflation), effective - 1};
}

size_t settled_cut(const std::vector<double>& x) {
  if (x.empty() || any_nan(x)) return 0;
  // MSER's cut is taken only when the samples it leaves out really differ from the rest: on a
  // series that has no warm-up left, MSER still picks the cut whose remainder happens to vary
  // least, and an interval of that remainder is too narrow (at 40 steps of correlation 0.5 it
  // covered 86% instead of 95%). The test: the cut part's mean against the rest's, with the
  // rest's effective variance per sample, beyond 2.58 standard errors (99%).
  const size_t cut = mser_cut(x);
  if (cut == 0) return 0;
  const size_t rest = x.size() - cut;
  const double se_rest = series_error(x.data() + cut, rest).se;
  const double per_sample = se_rest * se_rest * static_cast<double>(rest);
  const double diff = mean_of(x.data(), cut) - mean_of(x.data() + cut, rest);
  const double se = std::sqrt(per_sample / static_cast<double>(cut) + se_rest * se_rest);
  return std::fabs(diff) <= 2.58 * se ? 0 : cut;  // a NaN se (too few) keeps the cut
}

std::vector<double> batch_means(const std::vector<double>& x) {
  const size_t cut = settled_cut(x);
  const size_t n = x.size() - cut;
  if (x.empty() || any_nan(x) || n < 4) return {};
  const size_t k = std::min<size_t>(kBatches, n / 2);
  const size_t b = n / k;
  const double* first = x.data() + cut + (n - k * b);
  std::vector<double> means(k);
  for (size_t j = 0; j < k; ++j) means[j] = mean_of(first + j * b, b);
  return means;
}

Estimate series_estimate(const std::vector<double>& x, double level) {
  Estimate e;
  if (x.empty() || any_nan(x)) return e;
  e.cut = settled_cut(x);
  const double* kept = x.data() + e.cut;
  const size_t n = x.size() - e.cut;
  e.samples = n;
  e.mean = mean_of(kept, n);
  if (n >= 2 && e.mean != 0) e.cv = sample_stddev_of(kept, n, e.mean) / e.mean;
  const double half = series_error(kept, n).half_width(level);
  if (half == half) {
    e.low = e.mean - half;
    e.high = e.mean + half;
  }
  return e;
}

double half_width_over_mean(const Estimate& e) {
  if (!e.has_interval() || !(e.mean > 0)) return std::numeric_limits<double>::quiet_NaN();
  return (e.high - e.low) / 2 / e.mean;
}

double relative_half_width(const std::vector<double>& x) {
  return half_width_over_mean(series_estimate(x));
}

bool precise_enough(const std::vector<double>& x, double target) {
  return x.size() >= kFewestToStop && relative_half_width(x) <= target;
}

size_t next_look(size_t n) { return std::max({n + 1, n + n / 2, kFewestToStop}); }

double relative_half_width_of_runs(const std::vector<double>& x) {
  return half_width_over_mean(repeats_estimate(x));
}

bool precise_enough_runs(const std::vector<double>& x, double target, size_t fewest) {
  return x.size() >= std::max<size_t>(fewest, 2) && relative_half_width_of_runs(x) <= target;
}

size_t next_look_runs(size_t n, size_t fewest) { return std::max({n + 1, n + n / 2, fewest}); }

Estimate repeats_estimate(const std::vector<double>& x, double level, int resamples,
                          std::uint64_t seed) {
  Estimate e;
  if (x.empty() || any_nan(x)) return e;
  const size_t n = x.size();
  e.samples = n;
  e.mean = mean_of(x.data(), n);
  if (n >= 2 && e.mean != 0) e.cv = sample_stddev_of(x.data(), n, e.mean) / e.mean;
  if (n < 2) return e;
  // Below 6 runs the bootstrap cannot reach its tails (the resampled means never leave the
  // values' range: at 3 runs its "95%" would be [min, max], which covers 75%): Student's t.
  if (n < kFewestToBootstrap) {
    const double half = student_t_quantile(0.5 + level / 2, static_cast<double>(n - 1)) *
                        (sample_stddev_of(x.data(), n, e.mean) / std::sqrt(static_cast<double>(n)));
    e.low = e.mean - half;
    e.high = e.mean + half;
    return e;
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  std::vector<double> means(static_cast<size_t>(std::max(resamples, 100)));
  for (double& m : means) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += x[pick(rng)];
    m = s / static_cast<double>(n);
  }
  // Hesterberg's expanded percentile interval: the plain percentile bootstrap is too narrow for
  // few values (about 89% for a 95% interval at 10), because it uses the values' spread with n,
  // not n - 1, and normal tails, not Student's. The percentiles are moved out to where
  // sqrt(n / (n - 1)) t_{n-1} falls under a normal distribution.
  const double t = student_t_quantile(0.5 + level / 2, static_cast<double>(n - 1)) *
                   std::sqrt(static_cast<double>(n) / static_cast<double>(n - 1));
  const double tail = boost::math::cdf(boost::math::normal_distribution<double>(), -t);
  e.low = percentile(means, tail);
  e.high = percentile(means, 1 - tail);
  return e;
}

}  // namespace sweepbench
