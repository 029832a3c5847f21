// One plan, many printers (table, JSON, CSV), and the plan's files on disk.
//
// All printers read the same columns: index, tag, scenario (when the sweep has several), repeat
// (when it repeats), then the varying keys. Escaping lives in the printer that needs it.
#pragma once

#include <ostream>
#include <string>

#include "sweep/expand.h"

namespace sweepbench {

enum class PlanFormat { kTable, kJson, kCsv };
PlanFormat parse_plan_format(const std::string& name);

void print_plan(const Plan& plan, PlanFormat format, std::ostream& out);

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
PlanWriteResult write_plan(const Plan& plan, const std::string& out_dir);

// The manifest as it would be after merging `plan` into `existing` (null when there is none):
// points are keyed by tag; fields other tools added (status, jobs) are kept; points that are no
// longer in the sweep stay, marked "in_sweep": false.
Value merge_manifest(const Value& existing, const Plan& plan);

// CSV field quoting (RFC 4180).
std::string csv_field(const std::string& text);

}  // namespace sweepbench
