// Whether two sets of measurements differ (docs/metrics.md, "Comparing two configurations"): the
// Mann-Whitney U test as SciPy computes it, Holm-Bonferroni's adjustment over many comparisons,
// the change of the mean with its bootstrap interval, and the verdict that bench-compare prints.
// The samples are independent values: one per repeat, or one run's batch means (statistics.h),
// never raw steps, whose correlation would make every difference look significant.
//
// Leaves out: reading results (postprocess/) and which metrics are compared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sweepbench {

// The two-sided Mann-Whitney U test of `a` against `b`, as scipy.stats.mannwhitneyu(a, b) with its
// defaults: U is a's statistic; the p-value is exact when one sample has at most 8 values and
// there are no ties, else from the normal approximation with the tie correction and the
// continuity correction. p is NaN when a sample is empty.
struct UTest {
  double u = 0;
  double p = 0;
};
UTest mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// Holm-Bonferroni: each p-value adjusted for the family it is part of (the order is kept). A
// difference is significant at level alpha when its adjusted p is below alpha; over the whole
// family, the chance of calling any equal pair different stays below alpha.
std::vector<double> holm_adjust(const std::vector<double>& p);

// The candidate's mean over the baseline's, minus 1 (0.05: 5% higher), and its interval at
// `level`: Student's t on the log of the ratio, its variance by the delta method and Welch's
// degrees of freedom. No interval (NaN) with fewer than 2 values a side.
struct Change {
  double ratio = 0;  // mean(candidate) / mean(baseline) - 1
  double low = 0, high = 0;
};
Change relative_change(const std::vector<double>& baseline, const std::vector<double>& candidate,
                       double level = 0.95);

enum class Verdict {
  kBetter,        // significant, and the change is in the metric's good direction
  kWorse,         // significant, in the bad direction
  kSame,          // not significant, and the change's interval lies within the margin: "~"
  kInconclusive,  // too few samples, or neither significant nor pinned within the margin
};

struct VerdictRule {
  bool higher_is_better = true;  // tokens/s; false for times and memory
  double alpha = 0.05;           // on the Holm-adjusted p
  double margin = 0.02;          // |change| within which two configurations count as the same
  size_t min_samples = 3;        // per side; fewer is inconclusive
};

// The verdict of one comparison, from its change, its adjusted p-value and the sample counts.
Verdict verdict_of(const Change& change, double adjusted_p, size_t baseline_n, size_t candidate_n,
                   const VerdictRule& rule);
std::string verdict_name(Verdict v);  // better, worse, ~, inconclusive

// The geometric mean of 1 + ratio over the comparisons, minus 1 (benchstat's summary row): -1
// (-100%) when a ratio is -1 (a candidate of 0); NaN when empty or when a ratio is below -1 (a
// change of sign), which the table prints as n/a.
double geometric_mean_change(const std::vector<double>& ratios);

}  // namespace sweepbench
