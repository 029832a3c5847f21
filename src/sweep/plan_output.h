// One plan, many printers (table, JSON, CSV), and the plan's files on disk.
//
// All printers read the same columns: index, tag, scenario (when the sweep has several), repeat
// (when it repeats), then the varying keys. The table and CSV are config/table.h's printers; JSON
// is a document (each point's whole config).
#pragma once

#include <functional>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "config/table.h"  // csv_field
#include "sweep/expand.h"

namespace sweepbench {

enum class PlanFormat { kTable, kJson, kCsv };
PlanFormat parse_plan_format(const std::string& name);

// Streams: the table takes one pass for its column widths and one to print; CSV and JSON one.
void print_plan(const Plan& plan, PlanFormat format, std::ostream& out);
// bench-sweep plan --estimate: the same columns, then each point's predicted memory per rank
// (predict/memory_model.h): the peak, building the model, a step, and the step's parts; then its
// predicted time (predict/time_model.h): a step, tokens/s, the point's device-hours and cost,
// calibrated by the measured points of the results trees in `calibrate` (sweep/time_estimate.h);
// the totals last.
void print_estimate(const Plan& plan, PlanFormat format, std::ostream& out,
                    const std::vector<std::string>& calibrate = {});

// Why a point is skipped under the sweep's memory_limit: its predicted peak per rank exceeds the
// limit by more than the margin ("predicted 93.2 GB a rank, over memory_limit (80 GB, margin
// 10%)"); nothing for a point that fits, or has no prediction (a command).
std::optional<std::string> over_memory_limit(const Value& resolved, const MemoryLimit& limit);

struct PlanWriteResult {
  size_t written = 0;    // new config.yaml files
  size_t updated = 0;    // same config_hash, scheduling-only keys changed
  size_t unchanged = 0;  // identical already
  bool manifest_changed = false;
};

// Writes DIR/<tag>/config.yaml for every selected point and DIR/manifest.json.
// All checks come first: if any DIR/<tag>/config.yaml holds a config with another hash, or the
// manifest belongs to another sweep, it throws Error(kConflict) and changes nothing. Writing an
// unchanged plan again changes nothing either (not even a modification time).
// `only` (tags), when given, limits the config files checked and written to those points (a
// job array's task writes its own); the manifest always lists the whole plan.
PlanWriteResult write_plan(const Plan& plan, const std::string& out_dir,
                           const std::set<std::string>* only = nullptr);

// The text of the manifest after merging `plan` into `existing` (null when there is none), written
// one point at a time: points are keyed by tag; fields other tools added (status, jobs) are kept;
// points that are no longer in the sweep stay, marked "in_sweep": false. The same bytes as
// emit_json of the whole document, so an unchanged plan leaves the file alone.
// With `only` (write_plan's), an existing entry of a point outside it is kept as it is: its
// config.yaml was not checked against the plan.
std::string manifest_text(const Value& existing, const Plan& plan,
                          const std::set<std::string>* only = nullptr);

}  // namespace sweepbench
