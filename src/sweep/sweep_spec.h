// The sweep file: what it declares, read and checked before anything is expanded.
//
// A sweep file (docs/sweeps.md) has a base config, axes and zip groups to vary, exclude and
// include lists, repeats, scenarios, and tag settings. parse_sweep checks every key and value
// against the schema, so a broken file fails here, with file:line:column, before any point runs.
// Expansion into points is in expand.h; tags are in tagger.h.
#pragma once

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/value.h"
#include "sweep/sweep_entries.h"

namespace sweepbench {

struct Scenario {
  std::string name;  // "default" for a sweep without scenarios
  Mark mark;
  Value base;  // the top-level base with the scenario's base merged over it
  std::vector<SweepDimension> dimensions;  // in file order
  std::vector<ExcludeRule> excludes;
  std::vector<IncludeEntry> includes;
};

struct SweepSpec {
  std::string name;
  std::string path;  // the sweep file as given
  std::vector<Scenario> scenarios;
  bool named_scenarios = false;  // false: one implicit scenario named "default"
  std::int64_t repeats = 1;      // with repeats_until: the most
  std::optional<RepeatsRule> repeats_until;
  TagSpec tag;
  std::vector<std::string> prune_after_oom;
  std::vector<PerformanceReference> references;
  std::optional<MemoryLimit> memory_limit;
  // Keys the file sets outside the base (axes, zip, include, scenario bases), in file order:
  // the candidates for the "varying keys" that plan shows and tags use.
  std::vector<std::string> explicit_keys;
};

// Reads a file that a sweep names (a `defaults` entry): resolved path, display name -> Value.
using SweepFileReader = std::function<Value(const std::string& path, const std::string& display)>;

// Reads and checks a sweep file. `defaults` entries are resolved relative to it.
SweepSpec load_sweep_file(const std::string& path);

// Checks an already parsed sweep file. `reader` loads its `defaults` entries.
SweepSpec parse_sweep(const Value& root, const std::string& path, const SweepFileReader& reader);

}  // namespace sweepbench
