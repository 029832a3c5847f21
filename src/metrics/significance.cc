#include "metrics/significance.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

#include "metrics/statistics.h"  // student_t_quantile, batch_means_error
#include "metrics/summary.h"     // mean

namespace sweepbench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool finite_all(const std::vector<double>& x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

}  // namespace

SideMean runs_mean(const std::vector<double>& values, const std::vector<double>& within_se) {
  SideMean s;
  s.n = values.size();
  if (values.empty() || !finite_all(values)) return s;
  s.mean = mean(values);
  if (s.n < 2) return s;
  const double n = static_cast<double>(s.n);
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  double var = sq / (n - 1) / n;
  if (within_se.size() == values.size() && finite_all(within_se)) {
    double floor = 0;
    for (double w : within_se) floor += w * w;
    var = std::max(var, floor / n / n);
  }
  s.se = std::sqrt(var);
  s.df = n - 1;
  return s;
}

SideMean batches_mean(const std::vector<double>& batch_means) {
  SideMean s;
  s.n = batch_means.size();
  if (batch_means.empty() || !finite_all(batch_means)) return s;
  s.mean = mean(batch_means);
  const StandardError e = batch_means_error(batch_means);
  s.se = e.se;
  s.df = e.df;
  return s;
}

SideMean rate_of(const SideMean& time, double amount) {
  SideMean s = time;
  if (!(time.mean > 0) || !(amount > 0)) {
    s.mean = s.se = kNaN;
    return s;
  }
  s.mean = amount / time.mean;
  s.se = time.se / time.mean * s.mean;
  return s;
}

Change relative_change(const SideMean& b, const SideMean& c, double level) {
  Change out;
  out.low = out.high = out.p = kNaN;
  out.ratio = b.mean == b.mean && c.mean == c.mean ? c.mean / b.mean - 1 : kNaN;
  if (!(b.mean > 0) || !(c.mean > 0) || !(b.se >= 0) || !(c.se >= 0)) return out;
  // The log of the ratio of means and its variance by the delta method: an interval that stays
  // honest for a few runs a side, where a bootstrap of the ratio cannot reach its tails.
  const double tb = (b.se / b.mean) * (b.se / b.mean), tc = (c.se / c.mean) * (c.se / c.mean);
  const double se = std::sqrt(tb + tc);
  const double log_ratio = std::log(c.mean / b.mean);
  if (!(se > 0)) {
    out.low = out.high = out.ratio;
    out.p = log_ratio == 0 ? 1.0 : 0.0;
    return out;
  }
  // Welch-Satterthwaite; a side without spread adds nothing to the sum below.
  double den = 0;
  if (tb > 0) den += tb * tb / b.df;
  if (tc > 0) den += tc * tc / c.df;
  const double df = (tb + tc) * (tb + tc) / den;
  if (!(df > 0)) return out;
  const double half = student_t_quantile(0.5 + level / 2, df) * se;
  out.low = std::expm1(log_ratio - half);
  out.high = std::expm1(log_ratio + half);
  const boost::math::students_t_distribution<double> t(df);
  out.p =
      std::min(1.0, 2 * boost::math::cdf(boost::math::complement(t, std::fabs(log_ratio) / se)));
  return out;
}

double family_level(double alpha, size_t family) {
  return 1 - alpha / static_cast<double>(std::max<size_t>(1, family));
}

Verdict verdict_of(const Change& change, size_t baseline_n, size_t candidate_n,
                   const VerdictRule& rule) {
  if (baseline_n < rule.min_samples || candidate_n < rule.min_samples || std::isnan(change.ratio) ||
      std::isnan(change.low) || std::isnan(change.high)) {
    return Verdict::kInconclusive;
  }
  if (change.low > 0 || change.high < 0) {
    const bool up = change.low > 0;
    return up == rule.higher_is_better ? Verdict::kBetter : Verdict::kWorse;
  }
  if (change.low >= -rule.margin && change.high <= rule.margin) return Verdict::kSame;
  return Verdict::kInconclusive;
}

std::string verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kBetter:
      return "better";
    case Verdict::kWorse:
      return "worse";
    case Verdict::kSame:
      return "~";
    case Verdict::kInconclusive:
      break;
  }
  return "inconclusive";
}

double geometric_mean_change(const std::vector<double>& ratios) {
  if (ratios.empty()) return kNaN;
  double log_sum = 0;
  bool to_zero = false;
  for (double r : ratios) {
    if (!(r >= -1)) return kNaN;  // a sign change (or NaN): no geometric mean
    if (r == -1) {
      to_zero = true;  // a candidate of 0: a factor of 0, the product's root is 0
      continue;
    }
    log_sum += std::log1p(r);
  }
  if (to_zero) return -1;
  return std::expm1(log_sum / static_cast<double>(ratios.size()));
}

}  // namespace sweepbench
