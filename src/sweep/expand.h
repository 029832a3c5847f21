// Sweep expansion: a SweepSpec becomes a deterministic list of fully resolved points.
//
// Order (docs/sweeps.md, "Expansion order"): scenarios in file order; within each, the product of
// its dimensions in file order with the last varying fastest (as nested loops read, and so that
// neighbouring points differ in the innermost key); then exclude; then include; then repeats
// innermost, so the repeats of a point run back to back. The same file always gives the same list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/value.h"
#include "sweep/sweep_spec.h"

namespace sweepbench {

constexpr size_t kDefaultMaxPoints = 10000;

// One run of the benchmark: a plain value, fully resolved.
struct SweepPoint {
  size_t index = 0;  // position in the whole sweep, whatever --scenario selects
  std::string scenario;
  std::int64_t repeat = 0;
  std::string tag;
  std::string config_hash;
  Value config;          // resolved
  bool selected = true;  // chosen by --scenario (all are when none is given)
};

struct Plan {
  std::string sweep_name;
  std::string sweep_path;
  bool named_scenarios = false;
  std::int64_t repeats = 1;
  // Keys whose values differ across the whole sweep, in the order the file introduces them.
  // Keys derived from others (model dimensions from a swept preset) are left out unless the
  // file sets them itself.
  std::vector<std::string> varying_keys;
  // Those derived keys that vary as their sources do (model.ffn_dim with a swept model.n_embd,
  // eval.micro_batch with train.micro_batch): columns of the printed plan, not part of tags.
  std::vector<std::string> derived_varying_keys;
  std::vector<SweepPoint> points;  // the whole sweep; `selected` marks what --scenario chose

  std::vector<const SweepPoint*> selected_points() const;
};

struct PlanOptions {
  std::vector<std::string> scenarios;  // empty: all
  std::vector<Override> overrides;     // --set, applied over every scenario's base
  size_t max_points = kDefaultMaxPoints;
};

// Expands, resolves, checks and tags every point. Throws Error on any problem, before anything
// is written or run.
Plan plan_sweep(const SweepSpec& spec, const PlanOptions& options);

// A short human description of a value for tables and messages: 8, 0.0003, bf16, [a, b].
std::string display_value(const Value& value);

}  // namespace sweepbench
