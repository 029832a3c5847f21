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

namespace sweepbench {

// One dimension of the product: an axis (one key) or a zip group (keys that vary together).
struct SweepDimension {
  Mark mark;                       // where it is declared; dimensions run in file order
  std::string label;               // "axes.train.micro_batch", "zip[0]" (for messages)
  std::vector<Value> assignments;  // one partial config per position
  std::vector<std::string> keys;   // the leaf keys it sets, in the order written
};

// An exclude entry: a point is dropped when, for every key, its value is one of the listed ones.
struct ExcludeRule {
  Mark mark;
  struct Match {
    std::string key;
    Mark mark;
    std::vector<Value> any_of;
  };
  std::vector<Match> matches;
};

// Whether a config has, for every key of the rule, one of the listed values.
bool rule_matches(const Value& config, const ExcludeRule& rule);

struct IncludeEntry {
  Mark mark;
  Value partial;
};

struct Scenario {
  std::string name;  // "default" for a sweep without scenarios
  Mark mark;
  Value base;  // the top-level base with the scenario's base merged over it
  std::vector<SweepDimension> dimensions;  // in file order
  std::vector<ExcludeRule> excludes;
  std::vector<IncludeEntry> includes;
};

struct TagSpec {
  // kFairseq2: fairseq2 0.3's StandardSweepTagger (tag.keys, {preset}); kFairseq2v08: fairseq2
  // 0.8's _StandardSweepTagGenerator (every key, no preset, ws_{world_size}.{hash}).
  enum class Style { kReadable, kFairseq2, kFairseq2v08 };
  Style style = Style::kReadable;
  std::optional<std::string> format;
  Mark format_mark;
  std::vector<std::string> keys;  // fairseq2 style: the allowed config key names
};

// One side's bound of a performance reference: relative ("-10%": amount -0.1 of the value's
// magnitude) or absolute (an offset in the metric's unit); absent means unbounded.
struct ReferenceBound {
  bool present = false;
  bool relative = false;
  double amount = 0;
  std::string text;  // as written: "-10%", "0.5"
};

// The sweep file's `memory_limit`: bench-sweep run and submit skip a point whose predicted peak
// per rank (predict/memory_model.h) exceeds `bytes` by more than `margin`, recording why.
struct MemoryLimit {
  double bytes = 0;
  double margin = 0.10;  // a fraction of bytes
  std::string text;      // for messages: "80 GB, margin 10%" (a number: "8e+10 bytes, ...")
  Mark mark;
  // Whether a predicted peak is over the limit by more than the margin: the point is skipped.
  bool skips(double peak_bytes) const { return peak_bytes > bytes * (1 + margin); }
};

// An entry of the sweep file's `references` (sweep/references.h checks points against them).
struct PerformanceReference {
  Mark mark;
  std::string label;  // "references[2]", for messages
  std::string metric;
  double value = 0;
  std::string unit;  // "" unless given; then the results' unit must be the same
  ReferenceBound lower, upper;
  // Where it applies: shell patterns (fnmatch) on the device name, host and partition, a
  // scenario name, config values. Empty: anywhere.
  std::string device, host, partition, scenario;
  Mark scenario_mark;
  ExcludeRule when;
  // The allowed range: value + lower .. value + upper (-inf, inf where a side has no bound).
  double low() const;
  double high() const;
  // How many conditions it has: among the references of a metric that apply to a point, those
  // with the most are used.
  int conditions() const;
};

// The sweep file's `repeats` as a mapping (sweeps.md, "Repeats until precise"): each point runs
// `most` repeats at most, and a repeat from the `least`-th on is skipped once the repeats before
// it give `metric` a 95% interval within `target` of its mean (metrics/statistics.h's rule for
// runs, looked at least, then at half as many again).
struct RepeatsRule {
  std::int64_t least = 3;
  double target = 0;
  std::string metric;  // "" = the workload's headline: seconds, train_tokens_per_second, output_tps
  Mark mark;
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
