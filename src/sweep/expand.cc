#include "sweep/expand.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "core/schema.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "sweep/tagger.h"

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
                     const std::function<void(Value&&, const Recipe&, const Mark&)>& emit) {
  const Scenario& sc = spec.scenarios[scenario];
  Value base = scenario_base(sc, options);
  const std::vector<SweepDimension>& dims = sc.dimensions;
  std::vector<size_t> index(dims.size(), 0);
  size_t limit = options.max_points;
  Mark origin = origin_of(sc, spec);
  for (std::uint64_t n = 0;; ++n) {  // one pass per combination
    if (raw_budget == 0) {
      throw Error::input(origin, "",
                         "the axes multiply to more than " +
                             std::to_string(saturating_mul(limit, kRawPerPoint)) +
                             " combinations before exclude: " + axes_product(spec),
                         "pass --max-points N to allow larger sweeps");
    }
    --raw_budget;
    Value partial = base;
    for (size_t d = 0; d < dims.size(); ++d) merge_into(partial, dims[d].assignments[index[d]]);
    Value resolved;
    try {
      resolved = resolve_config(partial);
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
      emit(std::move(resolved), Recipe{static_cast<std::uint32_t>(scenario), false, n}, origin);
    }
    if (!advance(index, dims)) break;
  }
  for (size_t i = 0; i < sc.includes.size(); ++i) {
    Value partial = base;
    merge_into(partial, sc.includes[i].partial);
    Value resolved =
        resolve_with_context(partial, include_description(sc, spec.named_scenarios, i));
    emit(std::move(resolved), Recipe{static_cast<std::uint32_t>(scenario), true, i},
         sc.includes[i].mark);
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

Plan plan_sweep(const SweepSpec& spec, const PlanOptions& options) {
  for (const std::string& name : options.scenarios) {
    bool found = std::any_of(spec.scenarios.begin(), spec.scenarios.end(),
                             [&](const Scenario& s) { return s.name == name; });
    if (!found) {
      std::vector<std::string> names;
      for (const Scenario& s : spec.scenarios) names.push_back(s.name);
      std::string message = "unknown scenario '" + name + "'";
      if (auto near = closest_match(name, names)) message += " (did you mean '" + *near + "'?)";
      throw Error::input(Mark::in("--scenario " + name), "", message,
                         spec.named_scenarios ? "the sweep has: " + join(names, ", ")
                                              : "the sweep defines no scenarios");
    }
  }

  Plan plan;
  PlanInfo& info = plan.info_;
  info.sweep_name = spec.name;
  info.sweep_path = spec.path;
  info.named_scenarios = spec.named_scenarios;
  info.references = spec.references;
  info.memory_limit = spec.memory_limit;
  info.repeats = spec.repeats;
  info.repeats_until = spec.repeats_until;
  size_t repeats = static_cast<size_t>(std::max<std::int64_t>(spec.repeats, 1));
  for (const Scenario& sc : spec.scenarios) {
    plan.scenario_names_.push_back(sc.name);
    plan.scenario_selected_.push_back(options.scenarios.empty() ||
                                      std::find(options.scenarios.begin(), options.scenarios.end(),
                                                sc.name) != options.scenarios.end());
  }

  // Pass 1: every candidate resolved once; kept: its hash, its differences from the first.
  const Schema& schema = Schema::get();
  std::vector<std::string> paths;
  std::vector<Value*> leaves;
  std::vector<Value> first_values;                                  // the first candidate's leaves
  std::vector<std::unordered_map<std::string, std::uint32_t>> ids;  // per leaf: value -> id
  std::vector<bool> varies;
  std::vector<std::pair<size_t, size_t>> copies;  // (derived leaf, other leaf) equal so far
  std::vector<Recipe> recipes;
  std::vector<Mark> marks;  // what made each candidate, for duplicate errors
  std::unordered_map<std::string, std::uint32_t> by_hash;
  std::optional<Error> duplicate;
  size_t raw_budget = saturating_mul(std::max<size_t>(options.max_points, 1), kRawPerPoint);
  plan.diff_begin_.push_back(0);

  auto rebuild = [&](std::uint32_t c) {
    Value config = plan.first_;
    std::vector<Value*> slots;
    collect_leaves(config, &paths, &slots);
    for (std::uint32_t d = plan.diff_begin_[c]; d < plan.diff_begin_[c + 1]; ++d) {
      *slots[plan.diffs_[d].first] =
          plan.leaves_[plan.diffs_[d].first].values[plan.diffs_[d].second];
    }
    return config;
  };

  // A key only some workloads read (train.*, command.*) varies, for tags, when it varies among
  // the points that read it: bench-train points beside command points do not show command.argv.
  std::vector<const KeySpec*> leaf_spec;
  std::vector<std::optional<Value>> first_applied;
  std::vector<bool> varies_applied;
  size_t benchmark_leaf = 0;
  auto note_applied = [&]() {
    const std::string& benchmark = leaves[benchmark_leaf]->as_string();
    for (size_t l = 0; l < leaves.size(); ++l) {
      const KeySpec* ks = leaf_spec[l];
      if (ks == nullptr || ks->only_for_benchmarks.empty() || !ks->applies_to(benchmark)) continue;
      if (!first_applied[l]) {
        first_applied[l] = *leaves[l];
      } else if (!(*first_applied[l] == *leaves[l])) {
        varies_applied[l] = true;
      }
    }
  };

  CanonicalConfigText canonical;  // the lines of the points' unchanged keys written once
  auto take = [&](Value&& resolved, const Recipe& recipe, const Mark& mark) {
    std::uint32_t c = static_cast<std::uint32_t>(plan.hashes_.size());
    std::string hash = canonical.hash(resolved);
    if (c == 0) {
      plan.first_ = resolved;
      collect_leaves(plan.first_, &paths, &leaves);
      for (const std::string& path : paths) plan.leaves_.push_back(Plan::Leaf{path, {}});
      for (Value* v : leaves) first_values.push_back(*v);
      ids.resize(paths.size());
      varies.assign(paths.size(), false);
      varies_applied.assign(paths.size(), false);
      first_applied.resize(paths.size());
      for (const std::string& path : paths) leaf_spec.push_back(schema.find(path));
      benchmark_leaf =
          static_cast<size_t>(std::find(paths.begin(), paths.end(), "benchmark") - paths.begin());
      note_applied();
      for (size_t d = 0; d < paths.size(); ++d) {
        const KeySpec* ks = schema.find(paths[d]);
        if (ks == nullptr || !ks->derived) continue;
        for (size_t k = 0; k < paths.size(); ++k) {
          if (k != d && first_values[d] == first_values[k]) copies.emplace_back(d, k);
        }
      }
    } else {
      if (!collect_leaves(resolved, &paths, &leaves)) {
        throw std::logic_error("plan: resolved configs differ in layout");
      }
      note_applied();
      for (size_t l = 0; l < leaves.size(); ++l) {
        if (*leaves[l] == first_values[l]) continue;
        varies[l] = true;
        auto [it, fresh] = ids[l].emplace(
            value_key(*leaves[l]), static_cast<std::uint32_t>(plan.leaves_[l].values.size()));
        if (fresh) plan.leaves_[l].values.push_back(*leaves[l]);
        plan.diffs_.emplace_back(static_cast<std::uint32_t>(l), it->second);
      }
      copies.erase(std::remove_if(copies.begin(), copies.end(),
                                  [&](const std::pair<size_t, size_t>& p) {
                                    return !(*leaves[p.first] == *leaves[p.second]);
                                  }),
                   copies.end());
    }
    plan.diff_begin_.push_back(static_cast<std::uint32_t>(plan.diffs_.size()));
    plan.candidate_scenario_.push_back(recipe.scenario);
    recipes.push_back(recipe);
    marks.push_back(mark);
    auto [it, fresh] = by_hash.emplace(hash, c);
    if (!fresh && !duplicate) {
      // The first duplicate is reported once the sweep is known not to be too large.
      std::uint32_t a = it->second;
      bool same_text = emit_canonical_yaml(rebuild(a)) == emit_canonical_yaml(resolved);
      const Mark& am = marks[a];
      duplicate = Error::input(
          mark.known() ? mark : Mark::in(spec.path), "",
          "two points resolve to the same config: " +
              recipe_description(spec, options, recipes[a]) +
              (am.known() && am.str() != mark.str() ? " from " + am.str() : std::string()) +
              " and " + recipe_description(spec, options, recipe),
          same_text ? "remove one of them; use repeats: to run a point several times"
                    : "they differ only in keys that cannot change a measurement and are left "
                      "out of config_hash (docs/config.md)");
    }
    plan.hashes_.push_back(std::move(hash));
  };
  for (size_t i = 0; i < spec.scenarios.size(); ++i) {
    expand_scenario(i, spec, options, raw_budget, take);
  }

  size_t candidates = plan.hashes_.size();
  size_t total = saturating_mul(candidates, repeats);
  if (total > options.max_points) {
    std::string product = axes_product(spec);
    Mark where = Mark::in(spec.path);
    for (const Scenario& sc : spec.scenarios) {
      if (!sc.dimensions.empty()) {
        where = origin_of(sc, spec);
        break;
      }
    }
    throw Error::input(
        where, "",
        "the sweep has " + std::to_string(total) + " points, more than " +
            std::to_string(options.max_points) +
            (product.empty() ? std::string() : ": " + product) +
            (repeats > 1 ? " x " + std::to_string(repeats) + " repeats" : std::string()),
        "pass --max-points " + std::to_string(total) + " if you mean it, or narrow the axes");
  }
  if (duplicate) throw *duplicate;
  by_hash.clear();
  info.total_points = total;
  for (size_t c = 0; c < candidates; ++c) {
    if (plan.scenario_selected_[plan.candidate_scenario_[c]]) info.selected_points += repeats;
  }

  // The varying keys: in the order the sweep names them, then the schema's; derived keys the
  // sweep does not name follow other keys (shown by the plan, left out of tags), unless they
  // merely copy a varying key (eval.micro_batch = train.micro_batch).
  std::vector<std::string> ordered = spec.explicit_keys;
  for (const KeySpec& k : schema.keys()) {
    if (std::find(ordered.begin(), ordered.end(), k.path) == ordered.end()) {
      ordered.push_back(k.path);
    }
  }
  std::unordered_map<std::string, size_t> leaf_of;
  for (size_t l = 0; l < paths.size(); ++l) leaf_of.emplace(paths[l], l);
  std::vector<std::string> derived;
  for (const std::string& key : ordered) {
    const KeySpec* ks = schema.find(key);
    auto l = leaf_of.find(key);
    if (ks == nullptr || l == leaf_of.end() || !varies[l->second]) continue;
    if (!ks->only_for_benchmarks.empty() && !varies_applied[l->second]) continue;
    bool is_explicit = std::find(spec.explicit_keys.begin(), spec.explicit_keys.end(), key) !=
                       spec.explicit_keys.end();
    if (ks->type == KeyType::kFreeMap || ks->type == KeyType::kStringMap) {
      // A map (params, launch.env) varies by its entries: params.peft_method, not params.
      for (std::string& entry :
           varying_entries(first_values[l->second], plan.leaves_[l->second].values)) {
        info.varying_keys.push_back(key + "." + entry);
      }
      continue;
    }
    (ks->derived && !is_explicit ? derived : info.varying_keys).push_back(key);
  }
  for (const std::string& d : derived) {
    bool copy =
        std::any_of(info.varying_keys.begin(), info.varying_keys.end(), [&](const std::string& v) {
          return std::find(copies.begin(), copies.end(), std::make_pair(leaf_of[d], leaf_of[v])) !=
                 copies.end();
        });
    if (!copy) info.derived_varying_keys.push_back(d);
  }

  // Pass 2: every point's tag, and no two alike.
  TagOptions tag_options;
  for (const std::string& k : info.varying_keys) {
    const KeySpec* ks = schema.lookup(k).spec;
    if (ks != nullptr && ks->hashed) tag_options.varying_keys.push_back(k);
  }
  for (const std::string& k : tag_options.varying_keys) {
    auto l = leaf_of.find(k);
    bool long_value = false;
    if (l != leaf_of.end()) {
      const std::vector<Value>& values = plan.leaves_[l->second].values;
      long_value = std::any_of(values.begin(), values.end(), is_long_tag_value);
    } else if (Schema::Lookup found = schema.lookup(k);
               found.kind == Schema::Lookup::Kind::kMapEntry) {
      // A map's entry (params.prompt): its values are in the map's leaf.
      if (auto m = leaf_of.find(found.spec->path); m != leaf_of.end()) {
        for (const Value& map : plan.leaves_[m->second].values) {
          const Value* v = map.is_map() ? map.find(found.entry) : nullptr;
          long_value = long_value || (v != nullptr && is_long_tag_value(*v));
        }
      }
    }
    if (long_value) tag_options.long_keys.insert(k);
  }
  tag_options.show_scenario = spec.named_scenarios && spec.scenarios.size() > 1;
  tag_options.show_repeat = repeats > 1;
  Tagger tagger(spec.tag, tag_options);
  plan.tags_.reserve(total);
  std::unordered_map<std::string_view, size_t> seen;
  seen.reserve(total);
  auto description = [&](size_t index) {
    std::string text = recipe_description(spec, options, recipes[index / repeats]);
    if (repeats > 1) text += " repeat " + std::to_string(index % repeats);
    return text;
  };
  plan.rebuild_points(
      [&](const SweepPoint& p) {
        TagInput input{&p.config, p.scenario, p.repeat, p.config_hash, ""};
        std::string tag;
        try {
          tag = tagger.tag(input);
        } catch (const Error&) {
          input.description = description(p.index);
          tag = tagger.tag(input);  // the same error, naming the point
        }
        plan.tags_.push_back(std::move(tag));
        auto [it, fresh] = seen.emplace(plan.tags_.back(), p.index);
        if (!fresh)
          throw tagger.collision(plan.tags_.back(), description(it->second), description(p.index));
      },
      false);
  if (options.hold_points) {
    plan.points_.reserve(info.total_points);
    plan.rebuild_points(
        [&](const SweepPoint& p) {
          plan.points_.push_back(p);
          plan.points_.back().settings = Settings::of(p.config);
        },
        false);
    plan.held_ = true;
  }
  return plan;
}

}  // namespace sweepbench
