#include "metrics/change_points.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>

namespace sweepbench {

namespace {

constexpr double kZ95 = 1.959963984540054;

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  }
  return m;
}

// A run's own variance in log units from its interval; NaN without a usable one.
double own_variance(const SeriesPoint& p) {
  if (!(p.ci_low > 0) || !(p.ci_high > p.ci_low) || !std::isfinite(p.ci_high)) return NAN;
  const double half = (std::log(p.ci_high) - std::log(p.ci_low)) / (2 * kZ95);
  return half * half;
}

// The log values, and each run's variance with the series' median own variance where it has
// none (0 when no run has one).
void log_and_own(const std::vector<SeriesPoint>& s, std::vector<double>* y,
                 std::vector<double>* v) {
  y->clear();
  v->clear();
  std::vector<double> known;
  for (const SeriesPoint& p : s) {
    y->push_back(std::log(p.value));
    v->push_back(own_variance(p));
    if (!std::isnan(v->back())) known.push_back(v->back());
  }
  const double fill = known.empty() ? 0.0 : median_of(known);
  for (double& x : *v) {
    if (std::isnan(x)) x = fill;
  }
}

// Two-sided p of z on `df` degrees of freedom (Student's t; the normal beyond 1e6).
double two_sided_p(double z, double df) {
  if (!std::isfinite(z)) return 0.0;
  if (!(df < 1e6)) return std::erfc(std::fabs(z) / std::sqrt(2.0));
  const boost::math::students_t_distribution<double> t(std::max(1.0, df));
  return 2 * boost::math::cdf(boost::math::complement(t, std::fabs(z)));
}

// Weighted sums over runs, as prefix sums: the level of [a, b) and its variance in O(1).
struct Prefix {
  std::vector<double> w, wy;
  Prefix(const std::vector<double>& y, const std::vector<double>& var) : w(1, 0.0), wy(1, 0.0) {
    for (size_t i = 0; i < y.size(); ++i) {
      const double weight = 1.0 / var[i];
      w.push_back(w.back() + weight);
      wy.push_back(wy.back() + weight * y[i]);
    }
  }
  double mean(size_t a, size_t b) const { return (wy[b] - wy[a]) / (w[b] - w[a]); }
  double variance(size_t a, size_t b) const { return 1.0 / (w[b] - w[a]); }
};

struct Test {
  double d = 0, se = 0, p = 1;
};

// `df`: the degrees of freedom of the runs' variance (the excess variance is estimated).
Test test_cut(const Prefix& px, size_t a, size_t k, size_t b, double df) {
  Test t;
  t.d = px.mean(k, b) - px.mean(a, k);
  t.se = std::sqrt(px.variance(a, k) + px.variance(k, b));
  t.p = t.se > 0 ? two_sided_p(t.d / t.se, df) : (t.d == 0 ? 1.0 : 0.0);
  return t;
}

// The two-sided 95% quantile of the test's distribution: Student's t on `df`, the normal's
// beyond 1e6, so that the interval and the p-value agree.
double quantile95(double df) {
  if (!(df < 1e6)) return kZ95;
  const boost::math::students_t_distribution<double> t(std::max(1.0, df));
  return boost::math::quantile(boost::math::complement(t, 0.025));
}

// The best cut of [a, b) with `min_runs` on each side, recursively; Bonferroni over the
// positions tried.
void search(const Prefix& px, size_t a, size_t b, double df, const ChangeOptions& o,
            std::vector<std::pair<size_t, double>>* cuts, size_t* tests) {
  const size_t m = std::max<size_t>(1, o.min_runs);
  if (b - a < 2 * m) return;
  ++*tests;
  size_t best = 0;
  double best_p = 2;
  for (size_t k = a + m; k + m <= b; ++k) {
    const double p = test_cut(px, a, k, b, df).p;
    if (p < best_p) {
      best_p = p;
      best = k;
    }
  }
  const double tried = static_cast<double>(b - a - 2 * m + 1);
  const double adjusted = std::min(1.0, best_p * tried);
  if (!(adjusted < o.alpha)) return;
  cuts->emplace_back(best, adjusted);
  search(px, a, best, df, o, cuts, tests);
  search(px, best, b, df, o, cuts, tests);
}

}  // namespace

double excess_variance(const std::vector<SeriesPoint>& series, size_t* differences) {
  std::vector<double> y, v;
  log_and_own(series, &y, &v);
  std::vector<double> d, across;
  for (size_t i = 1; i < series.size(); ++i) {
    (series[i].environment == series[i - 1].environment ? d : across).push_back(y[i] - y[i - 1]);
  }
  // Too few runs in one environment in a row (a series whose host changes every run), or runs
  // that repeat one value exactly within each environment (a whole-millisecond figure on a quiet
  // machine: 31, 31, 31, then 91, 91): every difference counts, those across an environment
  // change too. A change there makes the estimate larger, so tests only get more careful; without
  // it the scatter would be zero and a step as plain as 31 to 91 could not be judged at all.
  const bool repeats = std::all_of(d.begin(), d.end(), [](double x) { return x == 0; });
  if (d.size() < 4 || repeats) d.insert(d.end(), across.begin(), across.end());
  if (differences) *differences = d.size();
  if (d.size() < 2) return 0.0;
  // The mean square successive difference (von Neumann): a difference of two runs has twice a
  // run's variance, and a step adds to one difference only. The runs' own part is taken out.
  double squares = 0;
  for (double x : d) squares += x * x;
  const double mssd = squares / static_cast<double>(d.size());
  return std::max(0.0, mssd / 2 - median_of(v));
}

ChangeSearch find_change_points(const std::vector<SeriesPoint>& series,
                                const ChangeOptions& options) {
  ChangeSearch result;
  std::vector<ChangePoint>& out = result.cuts;
  const size_t n = series.size();
  if (n < 2) return result;
  std::vector<double> y, v;
  log_and_own(series, &y, &v);
  size_t differences = 0;
  const double tau2 = excess_variance(series, &differences);
  // The runs' variance is known where their own intervals make it up; where the excess
  // variance does, it is an estimate from the successive differences, with their freedom.
  std::vector<double> own_only = v;
  std::sort(own_only.begin(), own_only.end());
  const double own_median = own_only.empty() ? 0.0 : own_only[own_only.size() / 2];
  // Successive differences overlap: d of them weigh as about 2/3 d independent samples
  // (von Neumann's estimator of the variance has that efficiency for normal data).
  const double df = tau2 > own_median ? std::max(1.0, 0.67 * static_cast<double>(differences))
                                      : std::numeric_limits<double>::infinity();
  // Without a variance (equal values and no intervals, or too few runs to tell) nothing can be
  // judged: no test.
  std::vector<double> var(n);
  for (size_t i = 0; i < n; ++i) var[i] = v[i] + tau2;
  if (!(*std::min_element(var.begin(), var.end()) > 0)) return result;
  Prefix px(y, var);

  std::vector<size_t> environment_cuts;
  for (size_t i = 1; i < n; ++i) {
    if (series[i].environment != series[i - 1].environment) environment_cuts.push_back(i);
  }
  std::vector<std::pair<size_t, double>> searched;
  size_t start = 0;
  for (size_t i = 0; i <= environment_cuts.size(); ++i) {
    const size_t end = i < environment_cuts.size() ? environment_cuts[i] : n;
    search(px, start, end, df, options, &searched, &result.tests);
    start = end;
  }
  std::vector<size_t> all = environment_cuts;
  for (const auto& [at, p] : searched) all.push_back(at);
  std::sort(all.begin(), all.end());
  for (size_t c = 0; c < all.size(); ++c) {
    const size_t a = c == 0 ? 0 : all[c - 1];
    const size_t k = all[c];
    const size_t b = c + 1 < all.size() ? all[c + 1] : n;
    const Test t = test_cut(px, a, k, b, df);
    ChangePoint cp;
    cp.at = k;
    cp.before = std::exp(px.mean(a, k));
    cp.after = std::exp(px.mean(k, b));
    cp.change = std::expm1(t.d);
    cp.low = std::expm1(t.d - quantile95(df) * t.se);
    cp.high = std::expm1(t.d + quantile95(df) * t.se);
    cp.environment = std::binary_search(environment_cuts.begin(), environment_cuts.end(), k);
    cp.p = t.p;
    if (!cp.environment) {
      // A searched cut keeps the penalty for the positions it was chosen among.
      for (const auto& [at, p] : searched) {
        if (at == k) cp.p = std::max(cp.p, p);
      }
    }
    cp.runs_before = k - a;
    cp.runs_after = b - k;
    out.push_back(cp);
  }
  result.tests += environment_cuts.size();
  return result;
}

std::vector<bool> benjamini_hochberg(const std::vector<double>& p, double fdr, size_t family) {
  const size_t m = std::max(family, p.size());
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  size_t largest = 0;  // the largest rank k with p_(k) <= k / m * fdr
  for (size_t k = 1; k <= p.size(); ++k) {
    if (p[order[k - 1]] <= static_cast<double>(k) / static_cast<double>(m) * fdr) largest = k;
  }
  std::vector<bool> out(p.size(), false);
  for (size_t k = 0; k < largest; ++k) out[order[k]] = true;
  return out;
}

}  // namespace sweepbench
