// bench-compare: two sets of results, point by point and metric by metric, with a verdict
// (docs/compare.md). Each side is a results tree (read as bench-extract reads it) or a table
// bench-extract wrote (CSV). Points are matched on the keys that vary within either side (the
// sweeps' axes), or on the keys --match names; each side's ok repeats of a matched point are its
// samples. Per metric: the two means, the change in % with its interval at Bonferroni's level over
// every comparison that can be judged, its p-value adjusted alike, and the verdict read off the
// interval (significance.h); then a geometric-mean row per metric. --fail-on makes it a gate.
// Repeats whose steps were kept floor each side's error at what the runs' own steps show.
//
// One run a side (a results tree each): for the throughputs and step_time_mean_s the samples are
// the runs' step-time batch means (metrics/statistics.h), nearly independent where steps are not;
// they see the noise within a run, not between runs. Other metrics of one run are inconclusive.
//
// Leaves out: figures.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "config/value.h"
#include "metrics/significance.h"
#include "postprocess/extract_table.h"

namespace sweepbench {

// --fail-on METRIC:PCT: exit non-zero when METRIC got significantly worse by more than PCT, or
// when it could not be judged.
struct FailOn {
  std::string metric;
  double threshold = 0;  // a fraction: 0.05 for 5%
};

struct CompareOptions {
  std::vector<std::string> metrics;  // empty: the headline metrics both sides have
  std::vector<std::string> match;    // empty: the keys that vary within either side
  double alpha = 0.05;
  double margin = 0.02;
  size_t min_samples = 3;
  std::vector<FailOn> fail_on;
};

using Row = std::map<std::string, Value>;

struct Comparison {
  std::string point;  // the matched keys' values, "key=value ..."; "geomean" for the summary row
  std::string metric;
  SideMean baseline, candidate;  // each side's mean, its error and its number of samples
  bool from_steps = false;  // one run a side: the runs' step-time batch means, not repeats
  Change change;            // with its interval at `level`
  double level = 0.95;      // the family's (CompareResult::level), or 1 - alpha if not judged
  double adjusted_p = 0;    // change.p times the family's size (Bonferroni), at most 1
  Verdict verdict = Verdict::kInconclusive;
  bool higher_is_better = true;  // the metric's direction
};

struct CompareResult {
  std::vector<std::string> match;  // the keys points were matched on
  std::vector<Comparison> rows;    // point by point, metric by metric, then the geomean rows
  size_t family = 0;    // the comparisons with enough samples for a verdict
  double level = 0.95;  // the intervals': 1 - alpha / family (Bonferroni)
  std::vector<std::string>
      unmatched;  // points of one side only, "baseline: ..." or "candidate: ..."
  // Comparisons that may mislead: serve points whose headline levels differ between the sides.
  std::vector<std::string> warnings;
};

// One set of results split into the two sides by a config key (--side KEY[=BASELINE,CANDIDATE]):
// the rows whose KEY is the baseline's value, and those whose KEY is the candidate's. Without
// values the key must have exactly two, the baseline's the one the rows show first.
// Error(kInput) naming --side when the key is no column, has not two values (listing them), or
// a value given is not among them.
struct Sides {
  std::string key, baseline_value, candidate_value;
  std::vector<Row> baseline, candidate;
};
Sides split_sides(const std::vector<Row>& rows, const std::string& side);

CompareResult compare_tables(const std::vector<Row>& baseline, const std::vector<Row>& candidate,
                             const CompareOptions& options);

// The exit code --fail-on asks for (docs/exit-codes.md): kExitRegression when a listed metric got
// significantly worse beyond its threshold, else kExitInconclusive when one could not be judged,
// else 0. With `reasons`, why, a line each: "FAIL: ..." for a point and metric worse beyond the
// threshold (its change, interval and samples), "INCONCLUSIVE: ..." for one that could not be
// judged (and why), "ok: ..." for a gate every point passed.
int fail_on_exit_code(const CompareResult& result, const std::vector<FailOn>& fail_on,
                      std::vector<std::string>* reasons = nullptr);

// The people's header line on the intervals: "99.2% intervals (Bonferroni over 6 comparisons: the
// verdicts read off them)".
std::string interval_level_text(const CompareResult& result);

// The result as a table for print_table: one row per comparison.
ExtractTable comparison_table(const CompareResult& result, bool for_people);

int bench_compare_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sweepbench
