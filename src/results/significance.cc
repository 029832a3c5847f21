#include "results/significance.h"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "results/statistics.h"  // student_t_quantile
#include "results/summary.h"     // mean

namespace sweepbench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// P(U >= u) for the U statistic of samples of m and n values without ties, under the null
// hypothesis: every order of the m + n values equally likely. p(u; m, n) =
// m / (m + n) p(u - n; m - 1, n) + n / (m + n) p(u; m, n - 1), the largest value being one of
// the m (then it outranks all n) or one of the n. Probabilities, not counts: no overflow.
double exact_upper_tail(double u, size_t m, size_t n) {
  // dist[j][k]: P(U = k) for samples of i (the loop) and j values.
  std::vector<std::vector<double>> prev(n + 1), cur(n + 1);
  for (size_t j = 0; j <= n; ++j) prev[j] = {1.0};  // i = 0: U = 0
  for (size_t i = 1; i <= m; ++i) {
    cur[0] = {1.0};  // j = 0: U = 0
    for (size_t j = 1; j <= n; ++j) {
      std::vector<double> d(i * j + 1, 0.0);
      const double wi = static_cast<double>(i) / static_cast<double>(i + j);
      const double wj = static_cast<double>(j) / static_cast<double>(i + j);
      for (size_t k = 0; k < prev[j].size(); ++k) d[k + j] += wi * prev[j][k];
      for (size_t k = 0; k < cur[j - 1].size(); ++k) d[k] += wj * cur[j - 1][k];
      cur[j] = std::move(d);
    }
    std::swap(prev, cur);
  }
  const std::vector<double>& dist = prev[n];
  double tail = 0;
  for (size_t k = 0; k < dist.size(); ++k) {
    if (static_cast<double>(k) >= u - 1e-9) tail += dist[k];
  }
  return tail;
}

}  // namespace

UTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  UTest t;
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) {
    t.p = kNaN;
    return t;
  }
  // Midranks of the pooled values, and the tie groups' sizes.
  std::vector<std::pair<double, size_t>> pooled;
  for (size_t i = 0; i < n1; ++i) pooled.push_back({a[i], i});
  for (size_t i = 0; i < n2; ++i) pooled.push_back({b[i], n1 + i});
  std::sort(pooled.begin(), pooled.end());
  const size_t n = pooled.size();
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double midrank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second < n1) rank_sum_a += midrank;
    }
    const double size = static_cast<double>(j - i);
    if (j - i > 1) ties = true;
    tie_term += size * size * size - size;
    i = j;
  }
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2);
  t.u = rank_sum_a - dn1 * (dn1 + 1) / 2;
  const double u_max = std::max(t.u, dn1 * dn2 - t.u);
  if (std::min(n1, n2) <= 8 && !ties) {
    t.p = std::min(1.0, 2 * exact_upper_tail(u_max, n1, n2));
    return t;
  }
  const double dn = static_cast<double>(n);
  const double sigma = std::sqrt(dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1))));
  if (!(sigma > 0)) {
    t.p = 1.0;  // every value equal
    return t;
  }
  const double z = (u_max - dn1 * dn2 / 2 - 0.5) / sigma;
  t.p = std::min(1.0, 2 * boost::math::cdf(boost::math::complement(
                              boost::math::normal_distribution<double>(), z)));
  return t;
}

std::vector<double> holm_adjust(const std::vector<double>& p) {
  const size_t m = p.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  std::vector<double> out(m, kNaN);
  double running = 0;
  for (size_t k = 0; k < m; ++k) {
    const double v = std::min(1.0, static_cast<double>(m - k) * p[order[k]]);
    running = std::max(running, v);
    out[order[k]] = running;
  }
  return out;
}

Change relative_change(const std::vector<double>& baseline, const std::vector<double>& candidate,
                       double level) {
  Change c;
  c.low = c.high = kNaN;
  if (baseline.empty() || candidate.empty()) {
    c.ratio = kNaN;
    return c;
  }
  const double mb = mean(baseline), mc = mean(candidate);
  c.ratio = mc / mb - 1;
  const size_t nb = baseline.size(), nc = candidate.size();
  if (nb < 2 || nc < 2 || !(mb > 0) || !(mc > 0)) return c;
  // The log of the ratio of means, its variance by the delta method, and Welch's degrees of
  // freedom: an interval that stays honest for a few runs a side, where a bootstrap of the ratio
  // cannot reach its tails.
  auto term = [](const std::vector<double>& x, double m) {
    double sq = 0;
    for (double v : x) sq += (v - m) * (v - m);
    return sq / static_cast<double>(x.size() - 1) / static_cast<double>(x.size()) / (m * m);
  };
  const double tb = term(baseline, mb), tc = term(candidate, mc);
  const double se = std::sqrt(tb + tc);
  if (!(se > 0)) {
    c.low = c.high = c.ratio;
    return c;
  }
  const double df = (tb + tc) * (tb + tc) /
                    (tb * tb / static_cast<double>(nb - 1) + tc * tc / static_cast<double>(nc - 1));
  const double half = student_t_quantile(0.5 + level / 2, df) * se;
  const double log_ratio = std::log(mc / mb);
  c.low = std::expm1(log_ratio - half);
  c.high = std::expm1(log_ratio + half);
  return c;
}

Verdict verdict_of(const Change& change, double adjusted_p, size_t baseline_n, size_t candidate_n,
                   const VerdictRule& rule) {
  if (baseline_n < rule.min_samples || candidate_n < rule.min_samples || std::isnan(adjusted_p) ||
      std::isnan(change.ratio)) {
    return Verdict::kInconclusive;
  }
  if (adjusted_p < rule.alpha) {
    const bool up = change.ratio > 0;
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
