// sweep_spec.h's dimensions and filters of a block (the top level or a scenario): axes and zip
// groups, a scenario's dimensions merged over the top level's, and exclude and include entries.
#include <algorithm>

#include "config/config.h"
#include "config/schema.h"
#include "sweep/sweep_spec_parts.h"
#include "text/text.h"

namespace sweepbench {
namespace {

// Drops repeated entries, keeping the first of each in the order written.
std::vector<std::string> unique_in_order(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (const std::string& s : v) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

bool mark_before(const Mark& a, const Mark& b) {
  if (a.line != b.line) return a.line < b.line;
  return a.column < b.column;
}

// The partial config for one value of a swept key (a key, a map entry or a whole section).
Value assignment_for(const std::string& key, const Value& value, const Mark& key_mark) {
  const Schema& schema = Schema::get();
  if (schema.lookup(key).kind == Schema::Lookup::Kind::kNone) {
    throw schema.unknown_key(key, key_mark);
  }
  Value v = value;
  if (!v.mark().known()) v.set_mark(key_mark);
  return normalize_partial_config(v, key);
}

SweepDimension parse_axis(const Value::Entry& e) {
  SweepDimension dim;
  dim.mark = e.key_mark;
  dim.label = "axes." + e.key;
  std::string key_name = "axes." + e.key;
  if (Schema::get().lookup(e.key).kind == Schema::Lookup::Kind::kNone) {
    throw Schema::get().unknown_key(e.key, e.key_mark);
  }
  const Value& list = require_list(e.value, key_name, e.key_mark,
                                   "an axis is a list of values, e.g. [1, 2, 4]; a single value "
                                   "belongs under base");
  if (list.items().empty()) {
    throw Error::input(mark_or(list, e.key_mark), key_name, "the axis is empty",
                       "give it at least one value, or remove it");
  }
  std::vector<std::string> keys;
  for (const Value& item : list.items()) {
    dim.assignments.push_back(assignment_for(e.key, item, e.key_mark));
    for (const std::string& k : partial_config_keys(dim.assignments.back())) keys.push_back(k);
  }
  dim.keys = unique_in_order(keys);
  return dim;
}

SweepDimension parse_zip_group(const Value& group, size_t index, const Mark& fallback) {
  SweepDimension dim;
  dim.label = "zip[" + std::to_string(index) + "]";
  dim.mark = mark_or(group, fallback);
  if (!group.is_map() || group.entries().empty()) {
    throw Error::input(dim.mark, dim.label,
                       "a zip group is a mapping of keys to lists of equal length, e.g. "
                       "{data.seq_len: [512, 1024], train.micro_batch: [64, 32]}");
  }
  size_t length = 0;
  std::string first_key;
  std::vector<std::string> lengths;
  for (const Value::Entry& e : group.entries()) {
    const Value& list = require_list(e.value, dim.label + "." + e.key, e.key_mark);
    lengths.push_back(e.key + " has " + std::to_string(list.items().size()));
    if (first_key.empty()) {
      first_key = e.key;
      length = list.items().size();
    }
  }
  for (const Value::Entry& e : group.entries()) {
    if (e.value.items().size() != length) {
      throw Error::input(dim.mark, dim.label,
                         "the lists of a zip group must have equal length: " + join(lengths, ", "));
    }
  }
  if (length == 0) {
    throw Error::input(dim.mark, dim.label, "the lists of the zip group are empty");
  }
  dim.assignments.assign(length, Value::map(dim.mark));
  std::vector<std::string> keys;
  for (const Value::Entry& e : group.entries()) {
    std::vector<std::string> entry_keys;
    for (size_t i = 0; i < length; ++i) {
      Value partial = assignment_for(e.key, e.value.items()[i], e.key_mark);
      for (const std::string& k : partial_config_keys(partial)) entry_keys.push_back(k);
      merge_into(dim.assignments[i], partial);
    }
    for (const std::string& k : unique_in_order(entry_keys)) {
      if (std::find(keys.begin(), keys.end(), k) != keys.end()) {
        throw Error::input(e.key_mark, k, "is set twice in " + dim.label);
      }
      keys.push_back(k);
    }
  }
  dim.keys = unique_in_order(keys);
  return dim;
}

void add_match(ExcludeRule& rule, const std::string& path, const Value& value, const Mark& mark) {
  const Schema& schema = Schema::get();
  Schema::Lookup found = schema.lookup(path);
  ExcludeRule::Match match{path, mark, {}};
  auto coerce = [&](const Value& v) {
    Value with_mark = v;
    if (!with_mark.mark().known()) with_mark.set_mark(mark);
    if (found.kind == Schema::Lookup::Kind::kMapEntry) {
      return schema.coerce_map_entry(*found.spec, found.entry, with_mark);
    }
    return schema.coerce(*found.spec, with_mark);
  };
  bool list_typed =
      found.kind == Schema::Lookup::Kind::kKey &&
      (found.spec->type == KeyType::kStringList || found.spec->type == KeyType::kNumberList);
  bool any_of =
      value.is_list() && (!list_typed || (!value.items().empty() &&
                                          std::all_of(value.items().begin(), value.items().end(),
                                                      [](const Value& i) { return i.is_list(); })));
  if (any_of) {
    if (value.items().empty()) {
      throw Error::input(mark, path, "an empty list of values can never match");
    }
    for (const Value& v : value.items()) match.any_of.push_back(coerce(v));
  } else {
    match.any_of.push_back(coerce(value));
  }
  rule.matches.push_back(std::move(match));
}

}  // namespace

std::vector<SweepDimension> parse_axes(const Value& axes, const Mark& fallback) {
  std::vector<SweepDimension> dims;
  if (axes.is_null()) return dims;
  if (!axes.is_map()) {
    throw Error::input(mark_or(axes, fallback), "axes",
                       "expected a mapping of keys to lists of values, got " + axes.describe());
  }
  for (const Value::Entry& e : axes.entries()) dims.push_back(parse_axis(e));
  return dims;
}

std::vector<SweepDimension> parse_zip(const Value& zip, const Mark& fallback) {
  std::vector<SweepDimension> dims;
  if (zip.is_null()) return dims;
  const Value& list =
      require_list(zip, "zip", fallback, "zip is a list of groups, each mapping keys to lists");
  for (size_t i = 0; i < list.items().size(); ++i) {
    dims.push_back(parse_zip_group(list.items()[i], i, mark_or(list, fallback)));
  }
  return dims;
}

void flatten_exclude(const Value& node, const std::string& prefix, ExcludeRule& rule) {
  const Schema& schema = Schema::get();
  for (const Value::Entry& e : node.entries()) {
    std::string path = prefix.empty() ? e.key : prefix + "." + e.key;
    Schema::Lookup found = schema.lookup(path);
    switch (found.kind) {
      case Schema::Lookup::Kind::kNone:
        throw schema.unknown_key(path, e.key_mark);
      case Schema::Lookup::Kind::kSection:
        if (!e.value.is_map()) {
          throw Error::input(mark_or(e.value, e.key_mark), path,
                             "is a section; expected a mapping of its keys");
        }
        flatten_exclude(e.value, path, rule);
        break;
      case Schema::Lookup::Kind::kKey:
      case Schema::Lookup::Kind::kMapEntry:
        add_match(rule, path, e.value, e.key_mark);
        break;
    }
  }
}

std::vector<ExcludeRule> parse_excludes(const Value& excludes, const Mark& fallback) {
  std::vector<ExcludeRule> rules;
  if (excludes.is_null()) return rules;
  const Value& list =
      require_list(excludes, "exclude", fallback, "exclude is a list of partial points");
  for (size_t i = 0; i < list.items().size(); ++i) {
    const Value& entry = list.items()[i];
    std::string label = "exclude[" + std::to_string(i) + "]";
    ExcludeRule rule;
    rule.mark = mark_or(entry, mark_or(list, fallback));
    if (!entry.is_map() || entry.entries().empty()) {
      throw Error::input(rule.mark, label,
                         "expected a non-empty mapping of keys to values, got " + entry.describe());
    }
    flatten_exclude(entry, "", rule);
    rules.push_back(std::move(rule));
  }
  return rules;
}

std::vector<IncludeEntry> parse_includes(const Value& includes, const Mark& fallback) {
  std::vector<IncludeEntry> out;
  if (includes.is_null()) return out;
  const Value& list =
      require_list(includes, "include", fallback, "include is a list of partial configs");
  for (size_t i = 0; i < list.items().size(); ++i) {
    const Value& entry = list.items()[i];
    Mark mark = mark_or(entry, mark_or(list, fallback));
    if (!entry.is_map()) {
      throw Error::input(mark, "include[" + std::to_string(i) + "]",
                         "expected a mapping (a partial config), got " + entry.describe());
    }
    out.push_back(IncludeEntry{mark, normalize_partial_config(entry)});
  }
  return out;
}

bool overlaps(const std::string& a, const std::string& b) {
  return a == b || starts_with(a, b + ".") || starts_with(b, a + ".");
}

// Merges a scenario's own dimensions over the top-level ones: an axis over the same key replaces
// the top-level axis's values (keeping its place); anything else is added.
std::vector<SweepDimension> merge_dimensions(const std::vector<SweepDimension>& top,
                                             std::vector<SweepDimension> own) {
  std::vector<SweepDimension> dims = top;
  for (SweepDimension& d : own) {
    auto same_axis = std::find_if(dims.begin(), dims.end(), [&](const SweepDimension& t) {
      return starts_with(d.label, "axes.") && t.label == d.label;
    });
    if (same_axis == dims.end()) {
      dims.push_back(std::move(d));
    } else {
      Mark keep = same_axis->mark;
      *same_axis = std::move(d);
      same_axis->mark = keep;
    }
  }
  std::stable_sort(dims.begin(), dims.end(), [](const SweepDimension& a, const SweepDimension& b) {
    return mark_before(a.mark, b.mark);
  });
  for (size_t i = 0; i < dims.size(); ++i) {
    for (size_t j = i + 1; j < dims.size(); ++j) {
      for (const std::string& ka : dims[i].keys) {
        for (const std::string& kb : dims[j].keys) {
          if (overlaps(ka, kb)) {
            throw Error::input(dims[j].mark, kb,
                               "is swept twice: by " + dims[i].label + " (" + dims[i].mark.str() +
                                   ") and by " + dims[j].label,
                               "a key may belong to one axis or one zip group");
          }
        }
      }
    }
  }
  return dims;
}

bool rule_matches(const Value& config, const ExcludeRule& rule) {
  for (const ExcludeRule::Match& m : rule.matches) {
    const Value* v = config.find_path(m.key);
    if (v == nullptr || std::find(m.any_of.begin(), m.any_of.end(), *v) == m.any_of.end()) {
      return false;
    }
  }
  return true;
}

}  // namespace sweepbench
