#include "sweep/sweep_spec.h"

#include <fnmatch.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "config/config.h"
#include "config/schema.h"
#include "config/yaml_io.h"
#include "sweep/sweep_spec_parts.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kTopLevelKeys = {
    "name", "description", "defaults",  "base",    "axes",
    "zip",  "exclude",     "include",   "repeats", "scenarios",
    "tag",  "launch",      "container", "slurm",   "prune_after_oom", "references",
    "memory_limit"};
const std::vector<std::string> kScenarioKeys = {"name", "base",    "axes",
                                                "zip",  "exclude", "include"};
// Sections that may stand at the top level of a sweep file as defaults for every point.
const std::vector<std::string> kTopLevelSections = {"launch", "container", "slurm"};

bool safe_name(const std::string& s) {
  if (s.empty() || s.size() > 64 || s[0] == '.' || s[0] == '-') return false;
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return s.find("..") == std::string::npos;
}

// Keys set in both partial configs; `a_label` and `b_label` name where each came from.
void reject_overlap(const Value& a, const std::string& a_label, const Value& b,
                    const std::string& b_label) {
  for (const std::string& key : partial_config_keys(b)) {
    if (const Value* in_a = a.find_path(key)) {
      const Value* in_b = b.find_path(key);
      throw Error::input(
          in_b->mark(), key,
          "is set both in " + a_label + " (" + in_a->mark().str() + ") and in " + b_label,
          "keep one of them");
    }
  }
}

struct Block {
  Value base;
  std::vector<SweepDimension> dims;
  std::vector<ExcludeRule> excludes;
  std::vector<IncludeEntry> includes;
};

Block parse_block(const Value& map, const Mark& fallback) {
  Block b;
  const Value null_value;
  auto get = [&](const char* key) -> const Value& {
    const Value* v = map.find(key);
    return v ? *v : null_value;
  };
  b.base = normalize_partial_config(get("base"));
  b.dims = parse_axes(get("axes"), fallback);
  for (SweepDimension& d : parse_zip(get("zip"), fallback)) b.dims.push_back(std::move(d));
  b.excludes = parse_excludes(get("exclude"), fallback);
  b.includes = parse_includes(get("include"), fallback);
  return b;
}

void add_unique(std::vector<std::string>& out, const std::string& key) {
  if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
}

// The sweep file being read: its root mapping, its path and the mark that names the file.
struct SweepFile {
  SweepFile(const Value& r, const std::string& p)
      : root(r), path(p), mark(r.mark().known() ? Mark{r.mark().source, 0, 0} : Mark::in(p)) {}
  // A top-level entry; null where the file leaves it out.
  const Value& get(const char* key) const {
    const Value* v = root.find(key);
    return v ? *v : null_value;
  }

  const Value& root;
  const std::string& path;
  const Mark mark;
  const Value null_value;
};

// The file is a mapping of the keys a sweep file has.
void check_top_level(const SweepFile& file) {
  const Schema& schema = Schema::get();
  const Value& root = file.root;
  const Mark& file_mark = file.mark;
  if (root.is_null()) {
    throw Error::input(file_mark, "", "the sweep file is empty",
                       "see sweeps/quickstart.yaml for a small example");
  }
  if (!root.is_map()) {
    throw Error::input(
        mark_or(root, file_mark), "",
        "a sweep file is a mapping (name, base, axes, ...), got " + root.describe_without_text());
  }
  for (const Value::Entry& e : root.entries()) {
    if (std::find(kTopLevelKeys.begin(), kTopLevelKeys.end(), e.key) != kTopLevelKeys.end()) {
      continue;
    }
    if (schema.is_section(e.key) || schema.find(e.key) != nullptr) {
      throw Error::input(e.key_mark, "",
                         "'" + e.key +
                             "' belongs under base: (only launch, container and "
                             "slurm may stand at the top level)",
                         schema.is_section(e.key) ? "" : "or vary it under axes:");
    }
    throw unknown_sweep_key("the sweep file", e.key, e.key_mark, kTopLevelKeys);
  }
}

// `name`, or the file's name without its extension.
std::string sweep_name(const SweepFile& file) {
  const Mark& file_mark = file.mark;
  std::string name;
  if (file.get("name").is_null()) {
    name = fs::path(file.path).stem().string();
    if (!safe_name(name)) {
      throw Error::input(file_mark, "name", "the file name '" + name + "' cannot name the sweep",
                         "add name: with letters, digits, '.', '_' and '-'");
    }
  } else {
    name = require_string(file.get("name"), "name", file_mark);
    if (!safe_name(name)) {
      throw Error::input(mark_or(file.get("name"), file_mark), "name",
                         "'" + name + "' is not a usable sweep name",
                         "use 1 to 64 letters, digits, '.', '_' and '-', not starting with '.' "
                         "or '-'");
    }
  }
  return name;
}

// repeats: a count, or a mapping that stops once the repeats are precise.
void read_repeats(const SweepFile& file, SweepSpec& spec) {
  const Mark& file_mark = file.mark;
  const Value& r = file.get("repeats");
  if (r.is_null()) return;
  if (r.is_map()) {
    spec.repeats_until = parse_repeats_until(r, file_mark, &spec.repeats);
  } else if (!r.is_int() || r.as_int() < 1) {
    throw Error::input(mark_or(r, file_mark), "repeats",
                       "expected an integer >= 1, or a mapping {most, least, target_ci, "
                       "metric}, got " +
                           r.describe(),
                       "e.g. repeats: 5, or repeats: {most: 20, least: 3, target_ci: 5%}");
  } else {
    spec.repeats = r.as_int();
  }
}

// The partial configs of the `defaults` files, merged in the order listed.
Value read_defaults(const SweepFile& file, const SweepFileReader& reader) {
  const Mark& file_mark = file.mark;
  const std::string& path = file.path;
  Value base = Value::map(file_mark);
  const Value& d = file.get("defaults");
  if (d.is_null()) return base;
  std::vector<Value> entries;
  if (d.is_string()) {
    entries.push_back(d);
  } else {
    for (const Value& item : require_list(d, "defaults", file_mark).items()) {
      entries.push_back(item);
    }
  }
  for (const Value& entry : entries) {
    std::string rel = require_string(entry, "defaults", file_mark);
    fs::path resolved = fs::path(rel).is_absolute()
                            ? fs::path(rel)
                            : (fs::path(path).parent_path() / rel).lexically_normal();
    Value loaded;
    try {
      loaded = reader(resolved.string(), resolved.string());
    } catch (const Error& err) {
      if (err.mark().line > 0) throw;
      throw Error::input(
          mark_or(entry, file_mark), "defaults",
          "cannot read '" + rel + "' (looked at " + resolved.string() + "): " + err.message(),
          err.hint().empty() ? "paths in defaults are relative to the sweep file" : err.hint());
    }
    merge_into(base, normalize_partial_config(loaded));
  }
  return base;
}

// The top-level launch, container and slurm sections, merged into the base; a key may not be
// set both there and under base.
void merge_top_level_sections(const SweepFile& file, const Value& top_base, Value& base) {
  const Mark& file_mark = file.mark;
  for (const std::string& section : kTopLevelSections) {
    const Value& v = file.get(section.c_str());
    if (v.is_null()) continue;
    if (!v.is_map()) {
      throw Error::input(mark_or(v, file_mark), section,
                         "expected a mapping of " + section + " keys, got " + v.describe());
    }
    Value partial = normalize_partial_config(v, section);
    reject_overlap(top_base, "base", partial, "the top-level " + section + " section");
    merge_into(base, partial);
  }
}

std::vector<std::string> read_prune_after_oom(const SweepFile& file) {
  const Schema& schema = Schema::get();
  const Mark& file_mark = file.mark;
  std::vector<std::string> out;
  if (file.get("prune_after_oom").is_null()) return out;
  for (const Value& k :
       require_list(file.get("prune_after_oom"), "prune_after_oom", file_mark).items()) {
    std::string key = require_string(k, "prune_after_oom", file_mark);
    Schema::Lookup found = schema.lookup(key);
    const KeySpec* ks = found.spec;
    if (ks == nullptr || found.kind == Schema::Lookup::Kind::kSection) {
      throw schema.unknown_key(key, mark_or(k, file_mark));
    }
    // A params entry may hold any type; only its numeric values are compared.
    bool numeric_param =
        found.kind == Schema::Lookup::Kind::kMapEntry && ks->type == KeyType::kFreeMap;
    if (!numeric_param && ks->type != KeyType::kInt && ks->type != KeyType::kFloat) {
      throw Error::input(mark_or(k, file_mark), "prune_after_oom",
                         "'" + key + "' is not numeric, so no value of it is larger");
    }
    out.push_back(key);
  }
  return out;
}

struct RawScenario {
  std::string name;
  Mark mark;
  Block block;
};

// The scenarios as written (each a block of its own), or the one implicit "default".
std::vector<RawScenario> read_scenarios(const SweepFile& file, SweepSpec& spec) {
  const Mark& file_mark = file.mark;
  std::vector<RawScenario> raw;
  if (file.get("scenarios").is_null()) {
    raw.push_back(RawScenario{"default", file_mark, Block{Value::map(), {}, {}, {}}});
    return raw;
  }
  const Value& list = require_list(file.get("scenarios"), "scenarios", file_mark);
  if (list.items().empty()) {
    throw Error::input(mark_or(list, file_mark), "scenarios", "the list is empty",
                       "remove scenarios: or give at least one");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < list.items().size(); ++i) {
    const Value& s = list.items()[i];
    std::string label = "scenarios[" + std::to_string(i) + "]";
    Mark mark = mark_or(s, mark_or(list, file_mark));
    if (!s.is_map()) {
      throw Error::input(mark, label, "expected a mapping with name, base, axes, ...");
    }
    check_name_keys(s, label, kScenarioKeys);
    const Value* name = s.find("name");
    if (name == nullptr) throw Error::input(mark, label, "needs a name");
    std::string n = require_string(*name, label + ".name", mark);
    if (!safe_name(n)) {
      throw Error::input(mark_or(*name, mark), label + ".name",
                         "'" + n + "' is not a usable scenario name",
                         "use letters, digits, '.', '_' and '-'");
    }
    if (!names.insert(n).second) {
      throw Error::input(mark_or(*name, mark), label + ".name",
                         "scenario '" + n + "' is defined twice");
    }
    raw.push_back(RawScenario{n, mark, parse_block(s, mark)});
  }
  spec.named_scenarios = true;
  return raw;
}

// Each scenario: the base and top-level block with its own merged over them. Returns the keys
// any dimension sweeps; sets the file's explicit keys.
std::vector<std::string> assemble_scenarios(std::vector<RawScenario> raw, const Value& base,
                                            const Block& top, SweepSpec& spec) {
  std::vector<std::string> swept;
  for (RawScenario& r : raw) {
    Scenario sc;
    sc.name = r.name;
    sc.mark = r.mark;
    sc.base = base;
    merge_into(sc.base, r.block.base);
    sc.dimensions = merge_dimensions(top.dims, std::move(r.block.dims));
    sc.excludes = top.excludes;
    sc.excludes.insert(sc.excludes.end(), r.block.excludes.begin(), r.block.excludes.end());
    sc.includes = top.includes;
    sc.includes.insert(sc.includes.end(), r.block.includes.begin(), r.block.includes.end());
    for (const SweepDimension& d : sc.dimensions) {
      for (const std::string& k : d.keys) {
        add_unique(swept, k);
        add_unique(spec.explicit_keys, k);
      }
    }
    for (const IncludeEntry& inc : sc.includes) {
      for (const std::string& k : partial_config_keys(inc.partial))
        add_unique(spec.explicit_keys, k);
    }
    for (const std::string& k : partial_config_keys(r.block.base))
      add_unique(spec.explicit_keys, k);
    spec.scenarios.push_back(std::move(sc));
  }
  return swept;
}

// A reference for a scenario the file does not have would never apply.
void check_reference_scenarios(const SweepSpec& spec) {
  for (const PerformanceReference& r : spec.references) {
    if (r.scenario.empty()) continue;
    bool any = std::any_of(spec.scenarios.begin(), spec.scenarios.end(), [&](const Scenario& sc) {
      return ::fnmatch(r.scenario.c_str(), sc.name.c_str(), 0) == 0;
    });
    if (!any) {
      std::vector<std::string> names;
      for (const Scenario& sc : spec.scenarios) names.push_back(sc.name);
      throw Error::input(r.scenario_mark, r.label + ".scenario",
                         "'" + r.scenario + "' matches no scenario",
                         "the scenarios are: " + join(names, ", "));
    }
  }
}

// An exclude that names a key no dimension sweeps can never do what was meant.
void check_excludes_swept(const SweepSpec& spec, const std::vector<std::string>& swept) {
  for (const Scenario& sc : spec.scenarios) {
    for (const ExcludeRule& rule : sc.excludes) {
      for (const ExcludeRule::Match& m : rule.matches) {
        bool is_swept = std::any_of(swept.begin(), swept.end(),
                                    [&](const std::string& k) { return overlaps(k, m.key); });
        if (!is_swept) {
          throw Error::input(m.mark, m.key,
                             "is never swept, so this exclude entry can never drop a point",
                             "exclude only keys that appear under axes or zip");
        }
      }
    }
  }
}

}  // namespace

Error unknown_sweep_key(const std::string& where, const std::string& key, const Mark& mark,
                        const std::vector<std::string>& allowed) {
  if (!is_key_like(key)) {
    return Error::input(mark, "",
                        "not a key of " + (where.empty() ? std::string("this mapping") : where) +
                            ", nor a name at all",
                        "is it a sweep file? allowed here: " + join(allowed, ", "));
  }
  std::string message = "unknown key '" + key + "'" + (where.empty() ? "" : " in " + where);
  if (auto near = closest_match(key, allowed)) {
    return Error::input(mark, "", message + " (did you mean '" + *near + "'?)");
  }
  return Error::input(mark, "", message, "allowed: " + join(allowed, ", "));
}

const Mark& mark_or(const Value& v, const Mark& fallback) {
  return v.mark().known() ? v.mark() : fallback;
}

std::string require_string(const Value& v, const std::string& key, const Mark& fallback) {
  if (!v.is_string()) {
    throw Error::input(mark_or(v, fallback), key, "expected a string, got " + v.describe());
  }
  return v.as_string();
}

const Value& require_list(const Value& v, const std::string& key, const Mark& fallback,
                          const std::string& hint) {
  if (!v.is_list()) {
    throw Error::input(mark_or(v, fallback), key, "expected a list, got " + v.describe(), hint);
  }
  return v;
}

void check_name_keys(const Value& map, const std::string& where,
                     const std::vector<std::string>& allowed) {
  for (const Value::Entry& e : map.entries()) {
    if (std::find(allowed.begin(), allowed.end(), e.key) == allowed.end()) {
      throw unknown_sweep_key(where, e.key, e.key_mark, allowed);
    }
  }
}

SweepSpec parse_sweep(const Value& root, const std::string& path, const SweepFileReader& reader) {
  const SweepFile file(root, path);
  check_top_level(file);

  SweepSpec spec;
  spec.path = path;
  spec.name = sweep_name(file);
  if (!file.get("description").is_null()) {
    require_string(file.get("description"), "description", file.mark);
  }
  read_repeats(file, spec);

  // defaults, base and the top-level sections
  Value base = read_defaults(file, reader);
  Block top = parse_block(root, file.mark);
  merge_into(base, top.base);
  merge_top_level_sections(file, top.base, base);

  spec.tag = parse_tag(file.get("tag"), file.mark);
  spec.prune_after_oom = read_prune_after_oom(file);
  spec.references = parse_references(file.get("references"), file.mark);
  spec.memory_limit = parse_memory_limit(file.get("memory_limit"), file.mark);

  std::vector<std::string> swept = assemble_scenarios(read_scenarios(file, spec), base, top, spec);
  check_reference_scenarios(spec);
  check_excludes_swept(spec, swept);
  return spec;
}

SweepSpec load_sweep_file(const std::string& path) {
  Value root = load_yaml_file(path);
  return parse_sweep(root, path, [](const std::string& p, const std::string& display) {
    return load_yaml_file(p, display);
  });
}

}  // namespace sweepbench
