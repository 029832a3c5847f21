#include "sweep/expand.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "config/json_text.h"
#include "config/schema.h"
#include "config/yaml_io.h"
#include "sweep/tagger.h"
#include "text/text.h"

namespace sweepbench {
namespace {

// Combinations are enumerated before exclude drops some; this bounds the work an exclude-heavy
// sweep can ask for, relative to --max-points.
constexpr size_t kRawPerPoint = 10;

// Where a scenario's points come from, for messages: its first axis, else the scenario, else the
// file.
Mark origin_of(const Scenario& sc, const SweepSpec& spec) {
  if (!sc.dimensions.empty() && sc.dimensions.front().mark.known()) {
    return sc.dimensions.front().mark;
  }
  return sc.mark.known() ? sc.mark : Mark::in(spec.path);
}

// "axes.train.lr (100 values) x axes.train.micro_batch (200 values)" for each scenario with
// axes, the scenarios joined by "; ".
std::string axes_product(const SweepSpec& spec) {
  std::vector<std::string> parts;
  for (const Scenario& sc : spec.scenarios) {
    std::vector<std::string> dims;
    for (const SweepDimension& d : sc.dimensions) {
      dims.push_back(d.label + " (" + plural(d.assignments.size(), "value") + ")");
    }
    if (dims.empty()) continue;
    parts.push_back((spec.named_scenarios ? "scenario " + sc.name + ": " : std::string()) +
                    join(dims, " x "));
  }
  return join(parts, "; ");
}

size_t saturating_mul(size_t a, size_t b) {
  if (a != 0 && b > std::numeric_limits<size_t>::max() / a)
    return std::numeric_limits<size_t>::max();
  return a * b;
}

bool excluded(const Value& config, const std::vector<ExcludeRule>& rules) {
  return std::any_of(rules.begin(), rules.end(),
                     [&](const ExcludeRule& rule) { return rule_matches(config, rule); });
}

std::string describe_assignment(const std::string& scenario, bool named,
                                const std::vector<std::pair<std::string, const Value*>>& kv) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : kv) parts.push_back(k + "=" + display_value(*v));
  std::string text = parts.empty() ? "the base point" : join(parts, ", ");
  if (named) text = "scenario " + scenario + ": " + text;
  return "(" + text + ")";
}

Value resolve_with_context(const Value& partial, const std::string& description) {
  try {
    return resolve_config(partial);
  } catch (const Error& e) {
    throw Error(e.kind(), e.mark(), e.key(), e.message() + " in the point " + description,
                e.hint());
  }
}

// Steps an odometer over the dimensions, the last fastest. False once every combination is done.
bool advance(std::vector<size_t>& index, const std::vector<SweepDimension>& dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++index[d] < dims[d].assignments.size()) return true;
    index[d] = 0;
  }
  return false;
}

void check_overrides_not_swept(const Scenario& sc, const std::vector<Override>& overrides) {
  for (const Override& o : overrides) {
    for (const std::string& key : partial_config_keys(o.partial)) {
      for (const SweepDimension& d : sc.dimensions) {
        for (const std::string& swept : d.keys) {
          if (swept == key || starts_with(swept, key + ".") || starts_with(key, swept + ".")) {
            throw Error::input(Mark::in("--set " + o.text), key,
                               "is swept by " + d.label + " (" + d.mark.str() + ")",
                               "--set changes the base of every point; remove the key from the "
                               "sweep to fix it with --set");
          }
        }
      }
    }
  }
}

// The base of a scenario's points: its base with --set over it.
Value scenario_base(const Scenario& sc, const PlanOptions& options) {
  Value base = sc.base;
  check_overrides_not_swept(sc, options.overrides);
  for (const Override& o : options.overrides) merge_into(base, o.partial);
  return base;
}

// The partial config of a scenario's combination number `n` (the last dimension fastest).
Value combination_partial(const Value& base, const std::vector<SweepDimension>& dims,
                          std::uint64_t n) {
  std::vector<size_t> index(dims.size(), 0);
  for (size_t d = dims.size(); d-- > 0;) {
    index[d] = static_cast<size_t>(n % dims[d].assignments.size());
    n /= dims[d].assignments.size();
  }
  Value partial = base;
  for (size_t d = 0; d < dims.size(); ++d) merge_into(partial, dims[d].assignments[index[d]]);
  return partial;
}

std::string combination_description(const Scenario& sc, bool named, const Value& partial) {
  std::vector<std::pair<std::string, const Value*>> assigned;
  for (const SweepDimension& d : sc.dimensions) {
    for (const std::string& k : d.keys) {
      if (const Value* v = partial.find_path(k)) assigned.emplace_back(k, v);
    }
  }
  return describe_assignment(sc.name, named, assigned);
}

std::string include_description(const Scenario& sc, bool named, size_t i) {
  return "(" + std::string(named ? "scenario " + sc.name + ": " : "") + "include[" +
         std::to_string(i) + "] at " + sc.includes[i].mark.str() + ")";
}

// Where a candidate comes from: its scenario, and its combination number or include index.
struct Recipe {
  std::uint32_t scenario = 0;
  bool include = false;
  std::uint64_t number = 0;
};

Value recipe_partial(const SweepSpec& spec, const PlanOptions& options, const Recipe& r) {
  const Scenario& sc = spec.scenarios[r.scenario];
  Value base = scenario_base(sc, options);
  if (!r.include) return combination_partial(base, sc.dimensions, r.number);
  merge_into(base, sc.includes[r.number].partial);
  return base;
}

std::string recipe_description(const SweepSpec& spec, const PlanOptions& options, const Recipe& r) {
  const Scenario& sc = spec.scenarios[r.scenario];
  if (r.include) return include_description(sc, spec.named_scenarios, r.number);
  return combination_description(sc, spec.named_scenarios, recipe_partial(spec, options, r));
}

// Scenario expansion: product of the dimensions (last fastest), exclude, then include. Each
// resolved candidate goes to `emit` with its recipe and what made it; nothing is kept here.
void expand_scenario(size_t scenario, const SweepSpec& spec, const PlanOptions& options,
                     size_t& raw_budget,
                     const std::function<void(Value&, const Recipe&, const Mark&)>& emit) {
  const Scenario& sc = spec.scenarios[scenario];
  Value base = scenario_base(sc, options);
  const std::vector<SweepDimension>& dims = sc.dimensions;
  std::vector<size_t> index(dims.size(), 0);
  size_t limit = options.max_points;
  Mark origin = origin_of(sc, spec);
  // Kept between combinations: each is resolved into the last one's tree (emit reads it and
  // keeps no part), so a point copies and allocates next to nothing.
  ConfigResolver resolver;
  Value partial, resolved;
  for (std::uint64_t n = 0;; ++n) {  // one pass per combination
    if (raw_budget == 0) {
      throw Error::input(origin, "",
                         "the axes multiply to more than " +
                             std::to_string(saturating_mul(limit, kRawPerPoint)) +
                             " combinations before exclude: " + axes_product(spec),
                         "pass --max-points N to allow larger sweeps");
    }
    --raw_budget;
    partial = base;
    for (size_t d = 0; d < dims.size(); ++d) merge_into(partial, dims[d].assignments[index[d]]);
    try {
      resolver.resolve(partial, resolved);
    } catch (const Error& e) {
      // An exclude is how a sweep drops the combinations that cannot run: one it drops is no
      // error. (Exclude entries name swept keys only, so the unresolved point holds them.)
      if (excluded(partial, sc.excludes)) {
        if (!advance(index, dims)) break;
        continue;
      }
      std::string description = combination_description(sc, spec.named_scenarios, partial);
      throw Error(e.kind(), e.mark(), e.key(), e.message() + " in the point " + description,
                  e.hint());
    }
    if (!excluded(resolved, sc.excludes)) {
      emit(resolved, Recipe{static_cast<std::uint32_t>(scenario), false, n}, origin);
    }
    if (!advance(index, dims)) break;
  }
  for (size_t i = 0; i < sc.includes.size(); ++i) {
    partial = base;
    merge_into(partial, sc.includes[i].partial);
    Value included =
        resolve_with_context(partial, include_description(sc, spec.named_scenarios, i));
    emit(included, Recipe{static_cast<std::uint32_t>(scenario), true, i}, sc.includes[i].mark);
  }
}

// The leaves of a resolved config: the top-level keys that are no section, and each section's
// keys (a map key such as launch.env is one leaf). Every resolved config has the same layout;
// `paths` is filled on the first call and checked on the others.
bool collect_leaves(Value& config, std::vector<std::string>* paths, std::vector<Value*>* out) {
  const Schema& schema = Schema::get();
  out->clear();
  bool learn = paths->empty();
  size_t n = 0;
  auto leaf = [&](Value& v, const std::string& path) {
    if (learn) {
      paths->push_back(path);
    } else if (n >= paths->size() || (*paths)[n] != path) {
      return false;
    }
    out->push_back(&v);
    ++n;
    return true;
  };
  // Sections and the sections inside them (command.success) are walked; keys are leaves.
  std::function<bool(Value&, const std::string&)> walk = [&](Value& node,
                                                             const std::string& prefix) {
    for (Value::Entry& e : node.entries()) {
      std::string path = prefix.empty() ? e.key : prefix + "." + e.key;
      if (schema.is_section(path) && e.value.is_map()) {
        if (!walk(e.value, path)) return false;
      } else if (!leaf(e.value, path)) {
        return false;
      }
    }
    return true;
  };
  return walk(config, "") && n == paths->size();
}

// The entries of a map-typed leaf whose values differ between `first` and any of `others` (an
// absent entry reads as null), in the order they first appear.
std::vector<std::string> varying_entries(const Value& first, const std::vector<Value>& others) {
  std::vector<std::string> names;
  auto add_names = [&](const Value& m) {
    for (const Value::Entry& e : m.entries()) {
      if (std::find(names.begin(), names.end(), e.key) == names.end()) names.push_back(e.key);
    }
  };
  add_names(first);
  for (const Value& o : others) add_names(o);
  std::vector<std::string> varying;
  static const Value none;
  for (const std::string& name : names) {
    const Value* a = first.find(name);
    for (const Value& o : others) {
      const Value* b = o.find(name);
      if (*(a ? a : &none) != *(b ? b : &none)) {
        varying.push_back(name);
        break;
      }
    }
  }
  return varying;
}

// A value's identity for the per-leaf tables of distinct values.
std::string value_key(const Value& v) {
  return std::to_string(static_cast<int>(v.type())) + emit_json(v, -1);
}

// collect_leaves for configs of the first one's layout, its walk learnt once: each config's keys
// are checked on the way, without making paths or asking the schema (a quarter of planning's
// time before, at 100,000 points). A config that strays from it is walked by collect_leaves.
class LeafWalk {
 public:
  // collect_leaves(config, paths, out), learning the walk when `paths` is empty.
  bool find(Value& config, std::vector<std::string>* paths, std::vector<Value*>* out) {
    if (paths->empty()) {
      nodes_.clear();
      learn(config, "", &nodes_);
    } else {
      out->clear();
      if (follow(config, nodes_, out) && out->size() == paths->size()) return true;
    }
    return collect_leaves(config, paths, out);
  }

 private:
  struct Node {
    std::string key;
    bool section = false;  // a schema section: walked when its value is a map
    bool walked = false;
    std::vector<Node> children;
  };

  static void learn(const Value& config, const std::string& prefix, std::vector<Node>* nodes) {
    for (const Value::Entry& e : config.entries()) {
      Node n;
      n.key = e.key;
      std::string path = prefix.empty() ? e.key : prefix + "." + e.key;
      n.section = Schema::get().is_section(path);
      n.walked = n.section && e.value.is_map();
      if (n.walked) learn(e.value, path, &n.children);
      nodes->push_back(std::move(n));
    }
  }

  static bool follow(Value& config, const std::vector<Node>& nodes, std::vector<Value*>* out) {
    std::vector<Value::Entry>& entries = config.entries();
    if (entries.size() != nodes.size()) return false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      Value::Entry& e = entries[i];
      if (e.key != n.key || (n.section && e.value.is_map()) != n.walked) return false;
      if (!n.walked) {
        out->push_back(&e.value);
      } else if (!follow(e.value, n.children, out)) {
        return false;
      }
    }
    return true;
  }

  std::vector<Node> nodes_;
};

}  // namespace

void Plan::rebuild_points(const PointVisitor& visit, bool selected_only) const {
  if (info_.total_points == 0) return;
  SweepPoint p;
  p.config = first_;
  std::vector<std::string> paths;
  for (const Leaf& l : leaves_) paths.push_back(l.path);
  std::vector<Value*> slots;
  if (!collect_leaves(p.config, &paths, &slots))
    throw std::logic_error("plan: config layout changed");
  std::vector<Value> originals;
  for (Value* slot : slots) originals.push_back(*slot);
  size_t repeats = static_cast<size_t>(std::max<std::int64_t>(info_.repeats, 1));
  for (size_t c = 0; c < hashes_.size(); ++c) {
    std::uint32_t scenario = candidate_scenario_[c];
    bool selected = scenario_selected_[scenario];
    if (selected_only && !selected) continue;
    std::uint32_t begin = diff_begin_[c], end = diff_begin_[c + 1];
    for (std::uint32_t d = begin; d < end; ++d) {
      *slots[diffs_[d].first] = leaves_[diffs_[d].first].values[diffs_[d].second];
    }
    p.scenario = scenario_names_[scenario];
    p.config_hash = hashes_[c];
    p.selected = selected;
    for (size_t r = 0; r < repeats; ++r) {
      p.index = c * repeats + r;
      p.repeat = static_cast<std::int64_t>(r);
      if (p.index < tags_.size()) p.tag = tags_[p.index];  // empty while tagging
      visit(p);
    }
    for (std::uint32_t d = begin; d < end; ++d)
      *slots[diffs_[d].first] = originals[diffs_[d].first];
  }
}

const std::vector<SweepPoint>& Plan::points() const {
  if (!held_) throw std::logic_error("plan: made without PlanOptions::hold_points");
  return points_;
}

std::vector<const SweepPoint*> Plan::selected_points() const {
  std::vector<const SweepPoint*> out;
  for (const SweepPoint& p : points()) {
    if (p.selected) out.push_back(&p);
  }
  return out;
}

void Plan::for_each_point(const PointVisitor& visit, bool selected_only) const {
  if (!held_) {
    rebuild_points(visit, selected_only);
    return;
  }
  for (const SweepPoint& p : points_) {
    if (p.selected || !selected_only) visit(p);
  }
}

// plan_sweep's steps, over the plan it makes. Pass 1 resolves every candidate once and keeps its
// hash and how it differs from the first (take); then the sweep's size and duplicates are checked,
// its varying keys found, and pass 2 tags every point.
class PlanBuilder {
 public:
  PlanBuilder(const SweepSpec& spec, const PlanOptions& options)
      : spec_(spec),
        options_(options),
        schema_(Schema::get()),
        repeats_(static_cast<size_t>(std::max<std::int64_t>(spec.repeats, 1))) {}

  Plan build() {
    check_scenarios();
    start_info();
    size_t raw_budget = saturating_mul(std::max<size_t>(options_.max_points, 1), kRawPerPoint);
    plan_.diff_begin_.push_back(0);
    for (size_t i = 0; i < spec_.scenarios.size(); ++i) {
      expand_scenario(i, spec_, options_, raw_budget,
                      [this](Value& resolved, const Recipe& recipe, const Mark& mark) {
                        take(resolved, recipe, mark);
                      });
    }
    check_size();
    find_varying_keys();
    tag_points();
    if (options_.hold_points) hold_points();
    return std::move(plan_);
  }

 private:
  void check_scenarios() const {
    for (const std::string& name : options_.scenarios) {
      bool found = std::any_of(spec_.scenarios.begin(), spec_.scenarios.end(),
                               [&](const Scenario& s) { return s.name == name; });
      if (found) continue;
      std::vector<std::string> names;
      for (const Scenario& s : spec_.scenarios) names.push_back(s.name);
      std::string message = "unknown scenario '" + name + "'";
      if (auto near = closest_match(name, names)) message += " (did you mean '" + *near + "'?)";
      throw Error::input(Mark::in("--scenario " + name), "", message,
                         spec_.named_scenarios ? "the sweep has: " + join(names, ", ")
                                               : "the sweep defines no scenarios");
    }
  }

  void start_info() {
    PlanInfo& info = plan_.info_;
    info.sweep_name = spec_.name;
    info.sweep_path = spec_.path;
    info.named_scenarios = spec_.named_scenarios;
    info.references = spec_.references;
    info.memory_limit = spec_.memory_limit;
    info.repeats = spec_.repeats;
    info.repeats_until = spec_.repeats_until;
    for (const Scenario& sc : spec_.scenarios) {
      plan_.scenario_names_.push_back(sc.name);
      plan_.scenario_selected_.push_back(options_.scenarios.empty() ||
                                         std::find(options_.scenarios.begin(),
                                                   options_.scenarios.end(),
                                                   sc.name) != options_.scenarios.end());
    }
  }

  // Pass 1, one candidate: kept are its hash and its differences from the first.
  void take(Value& resolved, const Recipe& recipe, const Mark& mark) {
    std::uint32_t c = static_cast<std::uint32_t>(plan_.hashes_.size());
    std::string hash = canonical_.hash(resolved);
    if (c == 0) {
      learn_first(resolved);
    } else {
      note_differences(resolved);
    }
    plan_.diff_begin_.push_back(static_cast<std::uint32_t>(plan_.diffs_.size()));
    plan_.candidate_scenario_.push_back(recipe.scenario);
    recipes_.push_back(recipe);
    marks_.push_back(mark);
    auto [it, fresh] = by_hash_.emplace(hash, c);
    if (!fresh && !duplicate_) note_duplicate(it->second, resolved, recipe, mark);
    plan_.hashes_.push_back(std::move(hash));
  }

  // The first candidate is the others' reference: its leaves, and the derived keys that copy
  // another key's value (eval.micro_batch = train.micro_batch) as far as it shows.
  void learn_first(const Value& resolved) {
    plan_.first_ = resolved;
    walk_.find(plan_.first_, &paths_, &leaves_);
    for (const std::string& path : paths_) plan_.leaves_.push_back(Plan::Leaf{path, {}});
    for (Value* v : leaves_) first_values_.push_back(*v);
    ids_.resize(paths_.size());
    last_id_.assign(paths_.size(), std::numeric_limits<std::uint32_t>::max());
    varies_.assign(paths_.size(), false);
    varies_applied_.assign(paths_.size(), false);
    first_applied_.resize(paths_.size());
    for (const std::string& path : paths_) leaf_spec_.push_back(schema_.find(path));
    benchmark_leaf_ =
        static_cast<size_t>(std::find(paths_.begin(), paths_.end(), "benchmark") - paths_.begin());
    note_applied();
    for (size_t d = 0; d < paths_.size(); ++d) {
      const KeySpec* ks = leaf_spec_[d];
      if (ks == nullptr || !ks->derived) continue;
      for (size_t k = 0; k < paths_.size(); ++k) {
        if (k != d && first_values_[d] == first_values_[k]) copies_.emplace_back(d, k);
      }
    }
  }

  void note_differences(Value& resolved) {
    if (!walk_.find(resolved, &paths_, &leaves_)) {
      throw std::logic_error("plan: resolved configs differ in layout");
    }
    note_applied();
    for (size_t l = 0; l < leaves_.size(); ++l) {
      if (*leaves_[l] == first_values_[l]) continue;
      varies_[l] = true;
      plan_.diffs_.emplace_back(static_cast<std::uint32_t>(l), value_id(l));
    }
    copies_.erase(std::remove_if(copies_.begin(), copies_.end(),
                                 [&](const std::pair<size_t, size_t>& p) {
                                   return !(*leaves_[p.first] == *leaves_[p.second]);
                                 }),
                  copies_.end());
  }

  // The id of leaf l's value at hand among its distinct values. A leaf that differs from the
  // first point's mostly holds the value it held the last time it differed (all but the
  // fastest axis), which is checked first: written alike, it has the same value_key.
  std::uint32_t value_id(size_t l) {
    const Value& v = *leaves_[l];
    std::vector<Value>& values = plan_.leaves_[l].values;
    std::uint32_t& last = last_id_[l];
    if (last < values.size() && written_alike(v, values[last])) return last;
    std::string key = value_key(v);
    auto it = ids_[l].find(key);
    if (it == ids_[l].end()) {
      it = ids_[l].emplace(std::move(key), static_cast<std::uint32_t>(values.size())).first;
      values.push_back(v);
    }
    last = it->second;
    return last;
  }

  // A key only some workloads read (train.*, command.*) varies, for tags, when it varies among
  // the points that read it: bench-train points beside command points do not show command.argv.
  void note_applied() {
    const std::string& benchmark = leaves_[benchmark_leaf_]->as_string();
    if (!applied_known_ || benchmark != applied_benchmark_) {
      // Which leaves this workload reads, asked of the schema when the workload changes.
      applied_known_ = true;
      applied_benchmark_ = benchmark;
      applied_.clear();
      for (size_t l = 0; l < leaves_.size(); ++l) {
        const KeySpec* ks = leaf_spec_[l];
        if (ks != nullptr && !ks->only_for_benchmarks.empty() && ks->applies_to(benchmark)) {
          applied_.push_back(l);
        }
      }
    }
    // A leaf known to vary is not compared again: it is dropped from the list.
    applied_.erase(std::remove_if(applied_.begin(), applied_.end(),
                                  [&](size_t l) {
                                    if (!first_applied_[l]) {
                                      first_applied_[l] = *leaves_[l];
                                    } else if (!(*first_applied_[l] == *leaves_[l])) {
                                      varies_applied_[l] = true;
                                    }
                                    return varies_applied_[l];
                                  }),
                   applied_.end());
  }

  // The first duplicate, reported once the sweep is known not to be too large.
  void note_duplicate(std::uint32_t a, const Value& resolved, const Recipe& recipe,
                      const Mark& mark) {
    bool same_text = emit_canonical_yaml(rebuild(a)) == emit_canonical_yaml(resolved);
    const Mark& am = marks_[a];
    duplicate_ = Error::input(
        mark.known() ? mark : Mark::in(spec_.path), "",
        "two points resolve to the same config: " +
            recipe_description(spec_, options_, recipes_[a]) +
            (am.known() && am.str() != mark.str() ? " from " + am.str() : std::string()) + " and " +
            recipe_description(spec_, options_, recipe),
        same_text ? "remove one of them; use repeats: to run a point several times"
                  : "they differ only in keys that cannot change a measurement and are left "
                    "out of config_hash (docs/config.md)");
  }

  // Candidate c's resolved config, from the first and c's differences.
  Value rebuild(std::uint32_t c) {
    Value config = plan_.first_;
    std::vector<Value*> slots;
    collect_leaves(config, &paths_, &slots);
    for (std::uint32_t d = plan_.diff_begin_[c]; d < plan_.diff_begin_[c + 1]; ++d) {
      *slots[plan_.diffs_[d].first] =
          plan_.leaves_[plan_.diffs_[d].first].values[plan_.diffs_[d].second];
    }
    return config;
  }

  void check_size() {
    size_t candidates = plan_.hashes_.size();
    size_t total = saturating_mul(candidates, repeats_);
    if (total > options_.max_points) {
      std::string product = axes_product(spec_);
      Mark where = Mark::in(spec_.path);
      for (const Scenario& sc : spec_.scenarios) {
        if (!sc.dimensions.empty()) {
          where = origin_of(sc, spec_);
          break;
        }
      }
      throw Error::input(
          where, "",
          "the sweep has " + std::to_string(total) + " points, more than " +
              std::to_string(options_.max_points) +
              (product.empty() ? std::string() : ": " + product) +
              (repeats_ > 1 ? " x " + std::to_string(repeats_) + " repeats" : std::string()),
          "pass --max-points " + std::to_string(total) + " if you mean it, or narrow the axes");
    }
    if (duplicate_) throw *duplicate_;
    by_hash_.clear();
    plan_.info_.total_points = total;
    for (size_t c = 0; c < candidates; ++c) {
      if (plan_.scenario_selected_[plan_.candidate_scenario_[c]]) {
        plan_.info_.selected_points += repeats_;
      }
    }
  }

  // The varying keys: in the order the sweep names them, then the schema's; derived keys the
  // sweep does not name follow other keys (shown by the plan, left out of tags), unless they
  // merely copy a varying key (eval.micro_batch = train.micro_batch).
  void find_varying_keys() {
    PlanInfo& info = plan_.info_;
    std::vector<std::string> ordered = spec_.explicit_keys;
    for (const KeySpec& k : schema_.keys()) {
      if (std::find(ordered.begin(), ordered.end(), k.path) == ordered.end()) {
        ordered.push_back(k.path);
      }
    }
    for (size_t l = 0; l < paths_.size(); ++l) leaf_of_.emplace(paths_[l], l);
    std::vector<std::string> derived;
    for (const std::string& key : ordered) {
      const KeySpec* ks = schema_.find(key);
      auto l = leaf_of_.find(key);
      if (ks == nullptr || l == leaf_of_.end() || !varies_[l->second]) continue;
      if (!ks->only_for_benchmarks.empty() && !varies_applied_[l->second]) continue;
      bool is_explicit = std::find(spec_.explicit_keys.begin(), spec_.explicit_keys.end(), key) !=
                         spec_.explicit_keys.end();
      if (ks->type == KeyType::kFreeMap || ks->type == KeyType::kStringMap) {
        // A map (params, launch.env) varies by its entries: params.peft_method, not params.
        for (std::string& entry :
             varying_entries(first_values_[l->second], plan_.leaves_[l->second].values)) {
          info.varying_keys.push_back(key + "." + entry);
        }
        continue;
      }
      (ks->derived && !is_explicit ? derived : info.varying_keys).push_back(key);
    }
    for (const std::string& d : derived) {
      bool copy = std::any_of(
          info.varying_keys.begin(), info.varying_keys.end(), [&](const std::string& v) {
            return std::find(copies_.begin(), copies_.end(),
                             std::make_pair(leaf_of_[d], leaf_of_[v])) != copies_.end();
          });
      if (!copy) info.derived_varying_keys.push_back(d);
    }
  }

  // Whether any value of varying key `k` is too long for a tag (the scenario stands for it).
  bool has_long_value(const std::string& k) {
    auto l = leaf_of_.find(k);
    if (l != leaf_of_.end()) {
      const std::vector<Value>& values = plan_.leaves_[l->second].values;
      return std::any_of(values.begin(), values.end(), is_long_tag_value);
    }
    bool long_value = false;
    if (Schema::Lookup found = schema_.lookup(k); found.kind == Schema::Lookup::Kind::kMapEntry) {
      // A map's entry (params.prompt): its values are in the map's leaf.
      if (auto m = leaf_of_.find(found.spec->path); m != leaf_of_.end()) {
        for (const Value& map : plan_.leaves_[m->second].values) {
          const Value* v = map.is_map() ? map.find(found.entry) : nullptr;
          long_value = long_value || (v != nullptr && is_long_tag_value(*v));
        }
      }
    }
    return long_value;
  }

  TagOptions tag_options() {
    TagOptions tag_options;
    for (const std::string& k : plan_.info_.varying_keys) {
      const KeySpec* ks = schema_.lookup(k).spec;
      if (ks != nullptr && ks->hashed) tag_options.varying_keys.push_back(k);
    }
    for (const std::string& k : tag_options.varying_keys) {
      if (has_long_value(k)) tag_options.long_keys.insert(k);
    }
    tag_options.show_scenario = spec_.named_scenarios && spec_.scenarios.size() > 1;
    tag_options.show_repeat = repeats_ > 1;
    return tag_options;
  }

  std::string description(size_t index) const {
    std::string text = recipe_description(spec_, options_, recipes_[index / repeats_]);
    if (repeats_ > 1) text += " repeat " + std::to_string(index % repeats_);
    return text;
  }

  // Pass 2: every point's tag, and no two alike.
  void tag_points() {
    Tagger tagger(spec_.tag, tag_options());
    plan_.tags_.reserve(plan_.info_.total_points);
    std::unordered_map<std::string_view, size_t> seen;
    seen.reserve(plan_.info_.total_points);
    plan_.rebuild_points(
        [&](const SweepPoint& p) {
          TagInput input{&p.config, p.scenario, p.repeat, p.config_hash, ""};
          std::string tag;
          try {
            tag = tagger.tag(input);
          } catch (const Error&) {
            input.description = description(p.index);
            tag = tagger.tag(input);  // the same error, naming the point
          }
          plan_.tags_.push_back(std::move(tag));
          auto [it, fresh] = seen.emplace(plan_.tags_.back(), p.index);
          if (!fresh) {
            throw tagger.collision(plan_.tags_.back(), description(it->second),
                                   description(p.index));
          }
        },
        false);
  }

  void hold_points() {
    plan_.points_.reserve(plan_.info_.total_points);
    plan_.rebuild_points(
        [&](const SweepPoint& p) {
          plan_.points_.push_back(p);
          plan_.points_.back().settings = Settings::of(p.config);
        },
        false);
    plan_.held_ = true;
  }

  const SweepSpec& spec_;
  const PlanOptions& options_;
  const Schema& schema_;
  const size_t repeats_;
  Plan plan_;
  CanonicalConfigText canonical_;  // the lines of the points' unchanged keys written once
  LeafWalk walk_;
  std::vector<std::string> paths_;  // the leaves' paths, from the first candidate
  std::vector<Value*> leaves_;      // the candidate's at hand
  std::vector<Value> first_values_;
  std::vector<std::unordered_map<std::string, std::uint32_t>> ids_;  // per leaf: value -> id
  std::vector<std::uint32_t> last_id_;  // per leaf: the id it had when it last differed
  bool applied_known_ = false;
  std::string applied_benchmark_;  // the workload applied_ was found for
  // The leaves of keys only some workloads read that it reads, less those known to vary.
  std::vector<size_t> applied_;
  std::vector<bool> varies_;
  std::vector<std::pair<size_t, size_t>> copies_;  // (derived leaf, other leaf) equal so far
  std::vector<const KeySpec*> leaf_spec_;
  std::vector<std::optional<Value>> first_applied_;
  std::vector<bool> varies_applied_;
  size_t benchmark_leaf_ = 0;
  std::vector<Recipe> recipes_;
  std::vector<Mark> marks_;  // what made each candidate, for duplicate errors
  std::unordered_map<std::string, std::uint32_t> by_hash_;
  std::optional<Error> duplicate_;
  std::unordered_map<std::string, size_t> leaf_of_;
};

Plan plan_sweep(const SweepSpec& spec, const PlanOptions& options) {
  return PlanBuilder(spec, options).build();
}

}  // namespace sweepbench
