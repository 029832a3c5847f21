#include "sweep/expand.h"

#include <algorithm>
#include <limits>
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

struct Candidate {
  std::string scenario;
  Value config;  // resolved
  std::string hash;
  std::string description;
  Mark mark;  // what made it: its scenario's first axis, or its include entry
};

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

bool plain_display(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c == ' ' || c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == '"' ||
        c == '\n' || c == '\t' || c == '#' || c == ':') {
      return false;
    }
  }
  // Strings that would read back as another type are quoted.
  return type_plain_scalar(s, Mark{}).is_string();
}

size_t saturating_mul(size_t a, size_t b) {
  if (a != 0 && b > std::numeric_limits<size_t>::max() / a)
    return std::numeric_limits<size_t>::max();
  return a * b;
}

bool excluded(const Value& config, const std::vector<ExcludeRule>& rules) {
  for (const ExcludeRule& rule : rules) {
    bool all = true;
    for (const ExcludeRule::Match& m : rule.matches) {
      const Value* v = config.find_path(m.key);
      if (v == nullptr || std::find(m.any_of.begin(), m.any_of.end(), *v) == m.any_of.end()) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  return false;
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

// Scenario expansion: product of the dimensions (last fastest), exclude, then include.
void expand_scenario(const Scenario& sc, const SweepSpec& spec, const PlanOptions& options,
                     size_t& raw_budget, std::vector<Candidate>& out) {
  Value base = sc.base;
  check_overrides_not_swept(sc, options.overrides);
  for (const Override& o : options.overrides) merge_into(base, o.partial);

  const std::vector<SweepDimension>& dims = sc.dimensions;
  std::vector<size_t> index(dims.size(), 0);
  size_t limit = options.max_points;
  while (true) {  // one pass per combination
    if (raw_budget == 0) {
      throw Error::input(origin_of(sc, spec), "",
                         "the axes multiply to more than " +
                             std::to_string(saturating_mul(limit, kRawPerPoint)) +
                             " combinations before exclude: " + axes_product(spec),
                         "pass --max-points N to allow larger sweeps");
    }
    --raw_budget;
    Value partial = base;
    std::vector<std::pair<std::string, const Value*>> assigned;
    for (size_t d = 0; d < dims.size(); ++d) merge_into(partial, dims[d].assignments[index[d]]);
    for (size_t d = 0; d < dims.size(); ++d) {
      for (const std::string& k : dims[d].keys) {
        if (const Value* v = partial.find_path(k)) assigned.emplace_back(k, v);
      }
    }
    std::string description = describe_assignment(sc.name, spec.named_scenarios, assigned);
    Value resolved = resolve_with_context(partial, description);
    if (!excluded(resolved, sc.excludes)) {
      out.push_back(Candidate{sc.name, std::move(resolved), "", description, origin_of(sc, spec)});
    }
    if (!advance(index, dims)) break;
  }
  for (size_t i = 0; i < sc.includes.size(); ++i) {
    Value partial = base;
    merge_into(partial, sc.includes[i].partial);
    std::string description =
        "(" + std::string(spec.named_scenarios ? "scenario " + sc.name + ": " : "") + "include[" +
        std::to_string(i) + "] at " + sc.includes[i].mark.str() + ")";
    out.push_back(Candidate{sc.name, resolve_with_context(partial, description), "", description,
                            sc.includes[i].mark});
  }
}

// The keys whose values differ between points, in the order the sweep names them and then the
// schema's; derived keys the sweep does not name go to *derived (they follow other keys: shown by
// the plan, left out of tags).
std::vector<std::string> find_varying_keys(const std::vector<Candidate>& candidates,
                                           const SweepSpec& spec,
                                           std::vector<std::string>* derived) {
  std::vector<std::string> varying;
  if (candidates.empty()) return varying;
  std::vector<std::string> ordered = spec.explicit_keys;
  for (const KeySpec& k : Schema::get().keys()) {
    if (std::find(ordered.begin(), ordered.end(), k.path) == ordered.end()) {
      ordered.push_back(k.path);
    }
  }
  for (const std::string& key : ordered) {
    const KeySpec* ks = Schema::get().find(key);
    if (ks == nullptr) continue;  // map entries vary through their map key
    bool is_explicit = std::find(spec.explicit_keys.begin(), spec.explicit_keys.end(), key) !=
                       spec.explicit_keys.end();
    bool follows = ks->derived && !is_explicit;
    const Value& first = config_at(candidates.front().config, key);
    for (const Candidate& c : candidates) {
      if (config_at(c.config, key) != first) {
        (follows ? *derived : varying).push_back(key);
        break;
      }
    }
  }
  // A derived key that merely copies a varying one (eval.micro_batch = train.micro_batch) says
  // nothing new.
  auto copies = [&](const std::string& d) {
    return std::any_of(varying.begin(), varying.end(), [&](const std::string& v) {
      return std::all_of(candidates.begin(), candidates.end(), [&](const Candidate& c) {
        return config_at(c.config, d) == config_at(c.config, v);
      });
    });
  };
  derived->erase(std::remove_if(derived->begin(), derived->end(), copies), derived->end());
  return varying;
}

void reject_duplicates(const std::vector<Candidate>& candidates, const SweepSpec& spec) {
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < candidates.size(); ++i) {
    auto [it, inserted] = seen.emplace(candidates[i].hash, i);
    if (inserted) continue;
    const Candidate& a = candidates[it->second];
    const Candidate& b = candidates[i];
    bool same_text = emit_canonical_yaml(a.config) == emit_canonical_yaml(b.config);
    throw Error::input(b.mark.known() ? b.mark : Mark::in(spec.path), "",
                       "two points resolve to the same config: " + a.description +
                           (a.mark.known() && a.mark.str() != b.mark.str() ? " from " + a.mark.str()
                                                                           : std::string()) +
                           " and " + b.description,
                       same_text ? "remove one of them; use repeats: to run a point several times"
                                 : "they differ only in keys that cannot change a measurement and "
                                   "are left out of config_hash (docs/config.md)");
  }
}

}  // namespace

std::vector<const SweepPoint*> Plan::selected_points() const {
  std::vector<const SweepPoint*> out;
  for (const SweepPoint& p : points) {
    if (p.selected) out.push_back(&p);
  }
  return out;
}

std::string display_value(const Value& value) {
  switch (value.type()) {
    case Value::Type::kString:
      return plain_display(value.as_string()) ? value.as_string() : quote_json(value.as_string());
    case Value::Type::kList: {
      std::vector<std::string> parts;
      for (const Value& i : value.items()) parts.push_back(display_value(i));
      return "[" + join(parts, ", ") + "]";
    }
    case Value::Type::kMap: {
      std::vector<std::string> parts;
      for (const Value::Entry& e : value.entries()) {
        parts.push_back(e.key + ": " + display_value(e.value));
      }
      return "{" + join(parts, ", ") + "}";
    }
    case Value::Type::kFloat:
      return format_float_repr(value.as_float());
    default:
      return emit_json(value, -1);
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

  size_t raw_budget = saturating_mul(std::max<size_t>(options.max_points, 1), kRawPerPoint);
  std::vector<Candidate> candidates;
  size_t repeats = static_cast<size_t>(spec.repeats);
  for (const Scenario& sc : spec.scenarios) {
    expand_scenario(sc, spec, options, raw_budget, candidates);
  }
  size_t total = saturating_mul(candidates.size(), repeats);
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
  for (Candidate& c : candidates) c.hash = config_hash(c.config);
  reject_duplicates(candidates, spec);

  Plan plan;
  plan.sweep_name = spec.name;
  plan.sweep_path = spec.path;
  plan.named_scenarios = spec.named_scenarios;
  plan.repeats = spec.repeats;
  plan.varying_keys = find_varying_keys(candidates, spec, &plan.derived_varying_keys);

  for (Candidate& c : candidates) {
    for (size_t r = 0; r < repeats; ++r) {
      SweepPoint p;
      p.index = plan.points.size();
      p.scenario = c.scenario;
      p.repeat = static_cast<std::int64_t>(r);
      p.config_hash = c.hash;
      p.config = c.config;
      p.selected = options.scenarios.empty() ||
                   std::find(options.scenarios.begin(), options.scenarios.end(), c.scenario) !=
                       options.scenarios.end();
      plan.points.push_back(std::move(p));
    }
  }

  std::vector<TagInput> inputs;
  inputs.reserve(plan.points.size());
  for (const SweepPoint& p : plan.points) {
    const Candidate& c = candidates[p.index / repeats];
    std::string description = c.description;
    if (repeats > 1) description += " repeat " + std::to_string(p.repeat);
    inputs.push_back(TagInput{&p.config, p.scenario, p.repeat, p.config_hash, description});
  }
  TagOptions tag_options;
  for (const std::string& k : plan.varying_keys) {
    const KeySpec* ks = Schema::get().find(k);
    if (ks != nullptr && ks->hashed) tag_options.varying_keys.push_back(k);
  }
  tag_options.show_scenario = spec.named_scenarios && spec.scenarios.size() > 1;
  tag_options.show_repeat = repeats > 1;
  std::vector<std::string> tags = make_tags(spec.tag, inputs, tag_options);
  for (size_t i = 0; i < tags.size(); ++i) plan.points[i].tag = tags[i];
  return plan;
}

}  // namespace sweepbench
