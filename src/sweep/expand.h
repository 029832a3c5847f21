// Sweep expansion: a SweepSpec becomes a deterministic list of fully resolved points.
//
// Order (docs/sweeps.md, "Expansion order"): scenarios in file order; within each, the product of
// its dimensions in file order with the last varying fastest (as nested loops read, and so that
// neighbouring points differ in the innermost key); then exclude; then include; then repeats
// innermost, so the repeats of a point run back to back. The same file always gives the same list.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/settings.h"
#include "config/value.h"
#include "config/yaml_io.h"  // display_value
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
  // The config read once into typed settings, by plan_sweep for the points a plan holds
  // (PlanOptions::hold_points: run, submit). The points of a plan that holds none (plan's
  // printing, tagging) leave it unread.
  Settings settings;
};

struct PlanOptions {
  std::vector<std::string> scenarios;  // empty: all
  std::vector<Override> overrides;     // --set, applied over every scenario's base
  size_t max_points = kDefaultMaxPoints;
  // Every point held in memory with its settings read: what bench-sweep run and submit look
  // points up in. false: only the compact form (bench-sweep plan, whose sweeps may be large).
  bool hold_points = true;
};

// What a plan says about the whole sweep, besides its points.
struct PlanInfo {
  std::string sweep_name;
  std::string sweep_path;
  bool named_scenarios = false;
  std::int64_t repeats = 1;  // with repeats_until: the most
  // The sweep file's repeats until precise: run skips a point's later repeats once the earlier
  // ones are precise enough.
  std::optional<RepeatsRule> repeats_until;
  // Keys whose values differ across the whole sweep, in the order the file introduces them.
  // Keys derived from others (model dimensions from a swept preset) are left out unless the
  // file sets them itself.
  std::vector<std::string> varying_keys;
  // Those derived keys that vary as their sources do (model.ffn_dim with a swept model.n_embd,
  // eval.micro_batch with train.micro_batch): columns of the printed plan, not part of tags.
  std::vector<std::string> derived_varying_keys;
  // The sweep file's performance references (sweep/references.h), checked as points finish.
  std::vector<PerformanceReference> references;
  // The sweep file's memory_limit: run and submit skip the points predicted over it.
  std::optional<MemoryLimit> memory_limit;
  size_t total_points = 0;     // the whole sweep
  size_t selected_points = 0;  // those --scenario chose (all when none is given)
};

using PointVisitor = std::function<void(const SweepPoint&)>;

// A planned sweep: the sweep's facts (info) and its points, which plan, run and submit all read.
// It always keeps the compact form (docs/performance.md, "Planning"): expansion resolves each
// point once, keeps its config_hash and how its resolved config differs from the first point's
// (as indices into per-key tables of distinct values), checks duplicates by hash, finds the
// varying keys, then tags every point; for_each_point rebuilds one point at a time in a single
// reused config, so 100,000 points take tens of megabytes. With PlanOptions::hold_points it also
// holds every point, rebuilt once, with its typed settings.
class Plan {
 public:
  const PlanInfo& info() const { return info_; }
  // Calls `visit` for every point (selected_only: those --scenario chose), in order. Without
  // held points the point is rebuilt for the call: it is valid only during it.
  void for_each_point(const PointVisitor& visit, bool selected_only) const;
  // The held points, the whole sweep; `selected` marks what --scenario chose. A logic error on a
  // plan made without hold_points.
  const std::vector<SweepPoint>& points() const;
  std::vector<const SweepPoint*> selected_points() const;

 private:
  friend class PlanBuilder;
  void rebuild_points(const PointVisitor& visit, bool selected_only) const;
  struct Leaf {
    std::string path;           // "train.micro_batch"
    std::vector<Value> values;  // distinct values other than the first point's, by id
  };
  PlanInfo info_;
  std::vector<std::string> scenario_names_;
  Value first_;  // the first point's resolved config
  std::vector<Leaf> leaves_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> diffs_;  // (leaf, value id), by candidate
  std::vector<std::uint32_t> diff_begin_;                       // candidate -> first diff
  std::vector<std::uint32_t> candidate_scenario_;
  std::vector<std::string> hashes_;  // by candidate
  std::vector<std::string> tags_;    // by point
  std::vector<bool> scenario_selected_;
  bool held_ = false;
  std::vector<SweepPoint> points_;  // held_: every point
};

// Expands, resolves, checks and tags every point. Throws Error on any problem, before anything
// is written or run.
Plan plan_sweep(const SweepSpec& spec, const PlanOptions& options);

}  // namespace sweepbench
