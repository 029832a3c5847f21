// The entries a sweep file declares, as value structs: a dimension (an axis or a zip group), an
// exclude or include entry, the tag settings, a performance reference, the memory limit and the
// repeats rule. What the sweep (sweep_spec.h) holds and the readers of its parts
// (sweep_spec_parts.h) return, in a header of its own so that the readers need not include the
// sweep. Their functions are sweep_dimensions.cc's (rule_matches) and sweep_settings.cc's
// (PerformanceReference's). Leaves out: how they are read (sweep_spec_parts.h) and the sweep as a
// whole (sweep_spec.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace sweepbench
