// Changes over time in one series of results (docs/history.md, "Finding changes"): the runs of one
// configuration's metric in the order they ran, each with its value, its own 95% interval where it
// has one, and the environment it ran in. Where did the level step, by how much (with its
// interval), and did the environment change there?
//
// The method, in the log of the value (a change is a ratio):
// - A run's variance is its own interval's ((log high - log low) / (2 x 1.96))^2 plus the
//   series' excess variance tau^2: how much more runs scatter than their own intervals say (a
//   busy node, another day). tau^2 comes from the mean square of successive differences within
//   one environment (all of them when fewer than 4 are), so a step adds to one difference only.
//   A run without an interval counts with the series' median one. Each run weighs
//   1 / its variance; a series with no variance at all (equal values, no intervals) is not
//   tested.
// - The series is first cut where the environment changes (another environment id); those cuts
//   are tested as they are, one test each. Within a stretch of one environment, the best cut is
//   searched (every position with `min_runs` on each side) and its p-value multiplied by the
//   positions tried (Bonferroni), then each side is searched again.
// - A cut's test: the weighted means of the runs on each side since the previous cut and up to
//   the next, the difference's t = d / sqrt(se_a^2 + se_b^2), two-sided, on the degrees of
//   freedom of the excess variance where it is most of a run's variance (0.67 x the successive
//   differences), else as a normal z; the change's 95% interval on the same distribution.
// - Over everything one check tests (all series, all cuts), false alarms are kept in check by
//   Benjamini-Hochberg at `fdr` (bench-history check's --fdr): of the changes reported, that
//   share at most is expected to be noise.
// Leaves out: the store, which metric is better higher (metrics/summary.h), printing.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace sweepbench {

struct SeriesPoint {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  double value = kNaN;                   // > 0
  double ci_low = kNaN, ci_high = kNaN;  // its own 95% interval, where it has one
  std::string environment;               // its environment's id; a change cuts the series
};

// A cut between runs `at - 1` and `at`: the level before (the weighted mean of the runs since the
// previous cut) and after (up to the next), the change after / before - 1 with its 95% interval,
// its p-value (Bonferroni-adjusted for a searched cut) and whether it is at an environment change.
struct ChangePoint {
  size_t at = 0;
  double before = 0, after = 0;
  double change = 0, low = 0, high = 0;
  double p = 1;
  bool environment = false;
  size_t runs_before = 0, runs_after = 0;
};

struct ChangeOptions {
  size_t min_runs = 3;  // runs on each side of a searched cut (an environment cut needs 1)
  double alpha = 0.05;  // a searched cut is kept for the final test at p below this
};

// The cuts of one series, in order, each with its p-value before the family's correction (not
// yet judged: every environment cut, and the searched ones that passed `alpha`), and how many
// tests were made (each environment cut, and each stretch searched, whether or not it gave a
// cut): the family's size for Benjamini-Hochberg counts them all.
struct ChangeSearch {
  std::vector<ChangePoint> cuts;
  size_t tests = 0;
};
ChangeSearch find_change_points(const std::vector<SeriesPoint>& series,
                                const ChangeOptions& options = {});

// The series' excess variance in log units (see above), from its successive differences
// (*differences: how many were used; fewer than 2 give 0).
double excess_variance(const std::vector<SeriesPoint>& series, size_t* differences = nullptr);

// Benjamini-Hochberg over a family of `family` tests of which these p-values are the ones that
// may be discoveries (the others, unreported, had p above every threshold): whether each is a
// discovery at `fdr`. family = 0: p.size().
std::vector<bool> benjamini_hochberg(const std::vector<double>& p, double fdr, size_t family = 0);

}  // namespace sweepbench
