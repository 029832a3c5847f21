// Whether two sets of measurements differ (docs/compare.md, "How the verdict is reached"): each
// side's mean with its standard error, the change of the candidate's mean over the baseline's with
// its interval, its p-value, and the verdict bench-compare prints. One test makes all of them:
// Student's t on the log of the ratio of the means, each side's variance by the delta method and
// Welch's degrees of freedom. Over a family of m comparisons the interval is Bonferroni's, at
// 1 - alpha / m, and the verdict is read off it: better or worse when it excludes no change, ~
// when it lies within the margin, else inconclusive. So the verdict always agrees with the
// interval printed beside it, and the chance of calling any equal pair of the family different
// stays below alpha.
//
// A side is a set of runs (repeats; each run's value and, where its steps were kept, the error of
// that value within the run), or one run's batch means (statistics.h), never raw steps, whose
// correlation would make every difference look significant.
//
// Leaves out: reading results (postprocess/) and which metrics are compared.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace sweepbench {

// One side of a comparison: its mean, the standard error of that mean and the degrees of freedom
// of that error (NaN where the samples cannot say), and the number of samples it is made of.
struct SideMean {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double mean = kNaN, se = kNaN, df = kNaN;
  size_t n = 0;
};

// A side of runs: each run's value (the mean of the values), and where a run's own steps say it,
// the standard error of its value within the run (`within_se`, one per value, or empty). The
// error of the mean is the runs' spread over sqrt(n), with n - 1 degrees of freedom, but never
// below what the runs' own steps show, sqrt(mean(within_se^2) / n): a few runs that agree by luck
// cannot claim more precision than their steps have. No error below 2 runs.
SideMean runs_mean(const std::vector<double>& values, const std::vector<double>& within_se = {});

// One run a side: its batch means (statistics.h), their mean and batch_means_error's error.
SideMean batches_mean(const std::vector<double>& batch_means);

// A rate from a side's mean time: amount / mean, with the same relative error (the delta method)
// and degrees of freedom; amount is what one time's interval did (the tokens of a step).
SideMean rate_of(const SideMean& time, double amount);

// The candidate's mean over the baseline's, minus 1 (0.05: 5% higher), its interval at `level`
// and the two-sided p-value of no change: Student's t on log(candidate / baseline), whose
// variance is each side's (se / mean)^2 added, with Welch-Satterthwaite's degrees of freedom. No
// interval (NaN) and p NaN when a side has no error or a mean is not positive. Where both errors
// are 0 (every sample equal) the interval is the change itself and p is 1 without a change, 0
// with one.
struct Change {
  double ratio = 0;  // mean(candidate) / mean(baseline) - 1
  double low = 0, high = 0;
  double p = 0;
};
Change relative_change(const SideMean& baseline, const SideMean& candidate, double level = 0.95);

// Bonferroni's level for each of a family of m comparisons: 1 - alpha / m (1 - alpha for m <= 1).
double family_level(double alpha, size_t family);

enum class Verdict {
  kBetter,        // the interval excludes no change, in the metric's good direction
  kWorse,         // the interval excludes no change, in the bad direction
  kSame,          // the interval lies within the margin of no change: "~"
  kInconclusive,  // too few samples, no interval, or an interval across none and the margin
};

struct VerdictRule {
  bool higher_is_better = true;  // tokens/s; false for times and memory
  double margin = 0.02;          // |change| within which two configurations count as the same
  size_t min_samples = 3;        // per side; fewer is inconclusive
};

// The verdict of one comparison, read off its interval (at the family's level) and sample counts.
Verdict verdict_of(const Change& change, size_t baseline_n, size_t candidate_n,
                   const VerdictRule& rule);
std::string verdict_name(Verdict v);  // better, worse, ~, inconclusive

// The geometric mean of 1 + ratio over the comparisons, minus 1 (benchstat's summary row): -1
// (-100%) when a ratio is -1 (a candidate of 0); NaN when empty or when a ratio is below -1 (a
// change of sign), which the table prints as n/a.
double geometric_mean_change(const std::vector<double>& ratios);

}  // namespace sweepbench
