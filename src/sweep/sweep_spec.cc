#include "sweep/sweep_spec.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "core/schema.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "sweep/tagger.h"

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
const std::vector<std::string> kTagKeys = {"style", "format", "keys"};
const std::vector<std::string> kReferenceKeys = {"metric", "value",  "lower",     "upper",
                                                 "unit",   "device", "host",      "partition",
                                                 "scenario", "when"};
// Sections that may stand at the top level of a sweep file as defaults for every point.
const std::vector<std::string> kTopLevelSections = {"launch", "container", "slurm"};

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

bool safe_name(const std::string& s) {
  if (s.empty() || s.size() > 64 || s[0] == '.' || s[0] == '-') return false;
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return s.find("..") == std::string::npos;
}

std::string require_string(const Value& v, const std::string& key, const Mark& fallback) {
  if (!v.is_string()) {
    throw Error::input(mark_or(v, fallback), key, "expected a string, got " + v.describe());
  }
  return v.as_string();
}

const Value& require_list(const Value& v, const std::string& key, const Mark& fallback,
                          const std::string& hint = {}) {
  if (!v.is_list()) {
    throw Error::input(mark_or(v, fallback), key, "expected a list, got " + v.describe(), hint);
  }
  return v;
}

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
      found.kind == Schema::Lookup::Kind::kKey && (found.spec->type == KeyType::kStringList ||
                                                   found.spec->type == KeyType::kNumberList);
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

TagSpec parse_tag(const Value& tag, const Mark& fallback) {
  TagSpec spec;
  if (tag.is_null()) return spec;
  if (!tag.is_map()) {
    throw Error::input(mark_or(tag, fallback), "tag",
                       "expected a mapping with style, format and/or keys");
  }
  for (const Value::Entry& e : tag.entries()) {
    if (std::find(kTagKeys.begin(), kTagKeys.end(), e.key) == kTagKeys.end()) {
      throw unknown_sweep_key("tag", e.key, e.key_mark, kTagKeys);
    }
  }
  if (const Value* style = tag.find("style")) {
    std::string s = require_string(*style, "tag.style", fallback);
    if (s == "readable") {
      spec.style = TagSpec::Style::kReadable;
    } else if (s == "fairseq2") {
      spec.style = TagSpec::Style::kFairseq2;
    } else if (s == "fairseq2-0.8") {
      spec.style = TagSpec::Style::kFairseq2v08;
    } else {
      throw Error::input(mark_or(*style, fallback), "tag.style",
                         "'" + s + "' is not one of readable, fairseq2, fairseq2-0.8",
                         "fairseq2 is fairseq2 0.3's tagger (tag.keys, {preset}); fairseq2-0.8 "
                         "is 0.8's (every key)");
    }
  }
  if (const Value* format = tag.find("format")) {
    if (!format->is_null()) {
      std::string f = trim(require_string(*format, "tag.format", fallback));
      spec.format_mark = mark_or(*format, fallback);
      if (f.empty()) throw Error::input(spec.format_mark, "tag.format", "must not be empty");
      // Syntax and literal characters are checked now; placeholder names once points exist.
      parse_tag_format(f, spec.format_mark);
      spec.format = f;
    }
  }
  if (const Value* keys = tag.find("keys")) {
    if (spec.style == TagSpec::Style::kFairseq2v08) {
      throw Error::input(mark_or(*keys, fallback), "tag.keys",
                         "does not apply to tag.style fairseq2-0.8: fairseq2 0.8 puts every key "
                         "of the config in the tag",
                         "leave tag.keys out, or use tag.style fairseq2 (0.3's allow-list)");
    }
    const Value& list = require_list(*keys, "tag.keys", fallback);
    for (const Value& k : list.items()) {
      spec.keys.push_back(require_string(k, "tag.keys", mark_or(list, fallback)));
    }
  }
  return spec;
}

void check_name_keys(const Value& map, const std::string& where,
                     const std::vector<std::string>& allowed) {
  for (const Value::Entry& e : map.entries()) {
    if (std::find(allowed.begin(), allowed.end(), e.key) == allowed.end()) {
      throw unknown_sweep_key(where, e.key, e.key_mark, allowed);
    }
  }
}

// A reference's bound: null (none), a number (an offset in the metric's unit) or "N%" (a
// fraction of the reference's magnitude), signed as written.
ReferenceBound parse_bound(const Value* v, const std::string& key, const Mark& fallback) {
  ReferenceBound b;
  if (v == nullptr || v->is_null()) return b;
  const Mark& mark = mark_or(*v, fallback);
  if (v->is_number()) {
    b.present = true;
    b.amount = v->as_float();
    char text[32];
    std::snprintf(text, sizeof text, "%g", b.amount);
    b.text = text;
  } else if (v->is_string()) {
    std::string t = trim(v->as_string());
    std::optional<double> pct =
        ends_with(t, "%") ? parse_double(std::string_view(t).substr(0, t.size() - 1))
                          : std::nullopt;
    if (!pct || !std::isfinite(*pct)) {
      throw Error::input(mark, key, "'" + v->as_string() + "' is not a bound",
                         "give a percentage of the reference (-10%) or a number in the "
                         "metric's unit (-0.5)");
    }
    b.present = true;
    b.relative = true;
    b.amount = *pct / 100;
    b.text = t;
  } else {
    throw Error::input(mark, key, "expected a percentage or a number, got " + v->describe(),
                       "e.g. -10% (of the reference) or -0.5 (in the metric's unit)");
  }
  if (!std::isfinite(b.amount)) {
    throw Error::input(mark, key, "the bound is not finite",
                       "leave the side out (or null) for no bound");
  }
  return b;
}

std::string reference_pattern(const Value& entry, const char* key, const std::string& label,
                              const Mark& mark) {
  const Value* v = entry.find(key);
  if (v == nullptr || v->is_null()) return "";
  std::string text = require_string(*v, label + "." + key, mark);
  if (text.empty()) {
    throw Error::input(mark_or(*v, mark), label + "." + key, "an empty pattern matches nothing",
                       "remove it to match any, or give a pattern such as '*H100*'");
  }
  return text;
}

// A value as a message quotes it: a string as written, anything else described.
std::string quoted(const Value& v) {
  return v.is_string() ? "'" + v.as_string() + "'" : v.describe();
}

// repeats: {most: 20, least: 3, target_ci: 5% or 0.05, metric: seconds}; sets *most.
RepeatsRule parse_repeats_until(const Value& v, const Mark& fallback, std::int64_t* most) {
  RepeatsRule rule;
  rule.mark = mark_or(v, fallback);
  const std::string example = "e.g. repeats: {most: 20, least: 3, target_ci: 5%}";
  check_name_keys(v, "repeats", {"most", "least", "target_ci", "metric"});
  auto count = [&](const char* key, std::int64_t fallback_value) {
    const Value* n = v.find(key);
    if (n == nullptr || n->is_null()) return fallback_value;
    if (!n->is_int() || n->as_int() < 2 || n->as_int() > 1'000'000) {
      throw Error::input(mark_or(*n, rule.mark), std::string("repeats.") + key,
                         "expected an integer from 2 to 1000000, got " + n->describe(), example);
    }
    return n->as_int();
  };
  const Value* most_value = v.find("most");
  if (most_value == nullptr || most_value->is_null()) {
    throw Error::input(rule.mark, "repeats", "needs most: the repeats a point runs at most",
                       example);
  }
  *most = count("most", 2);
  rule.least = count("least", std::min<std::int64_t>(3, *most));
  if (rule.least > *most) {
    throw Error::input(mark_or(*v.find("least"), rule.mark), "repeats.least",
                       "least (" + std::to_string(rule.least) + ") is more than most (" +
                           std::to_string(*most) + ")",
                       example);
  }
  const Value* target = v.find("target_ci");
  std::optional<double> fraction;
  if (target != nullptr && target->is_number()) {
    fraction = target->as_float();
  } else if (target != nullptr && target->is_string()) {
    const std::string t = trim(target->as_string());
    if (ends_with(t, "%")) {
      if (auto pct = parse_double(std::string_view(t).substr(0, t.size() - 1))) {
        fraction = *pct / 100;
      }
    }
  }
  if (target == nullptr || target->is_null()) {
    throw Error::input(rule.mark, "repeats",
                       "needs target_ci: the half-width of the 95% interval, a fraction of the "
                       "mean, at which to stop",
                       example);
  }
  if (!fraction || !std::isfinite(*fraction) || *fraction <= 0 || *fraction >= 1) {
    throw Error::input(mark_or(*target, rule.mark), "repeats.target_ci",
                       quoted(*target) + " is not a target",
                       "a fraction of the mean above 0 and below 1, as 0.05 or 5%");
  }
  rule.target = *fraction;
  if (const Value* metric = v.find("metric"); metric != nullptr && !metric->is_null()) {
    if (!metric->is_string() || !is_identifier(metric->as_string())) {
      throw Error::input(mark_or(*metric, rule.mark), "repeats.metric",
                         quoted(*metric) + " is not a metric's name",
                         "a column of summary.json's metrics, e.g. train_tokens_per_second, or "
                         "seconds (a command's)");
    }
    rule.metric = metric->as_string();
  }
  return rule;
}

// memory_limit: {bytes: 80e9 or "80 GB" / "74.5 GiB", margin: "10%"}.
std::optional<MemoryLimit> parse_memory_limit(const Value& v, const Mark& fallback) {
  if (v.is_null()) return std::nullopt;
  MemoryLimit limit;
  limit.mark = mark_or(v, fallback);
  const std::string example = "e.g. memory_limit: {bytes: 80 GB, margin: 10%}";
  if (!v.is_map()) {
    throw Error::input(limit.mark, "memory_limit", "expected a mapping, got " + v.describe(),
                       example);
  }
  check_name_keys(v, "memory_limit", {"bytes", "margin"});
  const Value* bytes = v.find("bytes");
  if (bytes == nullptr) {
    throw Error::input(limit.mark, "memory_limit", "needs bytes: a device's (or host's) memory",
                       example);
  }
  const Mark& bytes_mark = mark_or(*bytes, limit.mark);
  std::optional<double> amount;
  if (bytes->is_number()) {
    amount = bytes->as_float();
  } else if (bytes->is_string()) {
    std::string t = trim(bytes->as_string());
    for (auto [suffix, scale] : {std::pair{"GiB", 1073741824.0}, {"MiB", 1048576.0},
                                 {"GB", 1e9}, {"MB", 1e6}}) {
      if (ends_with(t, suffix)) {
        std::optional<double> n = parse_double(trim(t.substr(0, t.size() - std::strlen(suffix))));
        if (n) amount = *n * scale;
        break;
      }
    }
  }
  if (!amount || !std::isfinite(*amount) || *amount <= 0) {
    throw Error::input(bytes_mark, "memory_limit.bytes",
                       quoted(*bytes) + " is not an amount of memory",
                       "a number of bytes (80e9) or one with GB, GiB, MB or MiB (\"80 GB\")");
  }
  limit.bytes = *amount;
  if (bytes->is_string()) {
    limit.text = trim(bytes->as_string());
  } else {
    char text[32];
    std::snprintf(text, sizeof text, "%g bytes", limit.bytes);
    limit.text = text;
  }
  if (const Value* margin = v.find("margin"); margin != nullptr && !margin->is_null()) {
    const Mark& m = mark_or(*margin, limit.mark);
    std::string t = margin->is_string() ? trim(margin->as_string()) : std::string();
    std::optional<double> pct = ends_with(t, "%")
                                    ? parse_double(std::string_view(t).substr(0, t.size() - 1))
                                    : std::nullopt;
    if (!pct || !std::isfinite(*pct) || *pct < 0) {
      throw Error::input(m, "memory_limit.margin", quoted(*margin) + " is not a margin",
                         "a percentage of bytes, 0% or more: a point is skipped only when its "
                         "prediction exceeds bytes by more than it (e.g. 10%)");
    }
    limit.margin = *pct / 100;
  }
  char margin_text[32];
  std::snprintf(margin_text, sizeof margin_text, "%g%%", limit.margin * 100);
  limit.text += ", margin " + std::string(margin_text);
  return limit;
}

std::vector<PerformanceReference> parse_references(const Value& references,
                                                   const Mark& fallback) {
  std::vector<PerformanceReference> out;
  if (references.is_null()) return out;
  const Value& list = require_list(references, "references", fallback,
                                   "references is a list of {metric, value, lower, upper, ...}");
  for (size_t i = 0; i < list.items().size(); ++i) {
    const Value& entry = list.items()[i];
    std::string label = "references[" + std::to_string(i) + "]";
    PerformanceReference r;
    r.label = label;
    r.mark = mark_or(entry, mark_or(list, fallback));
    if (!entry.is_map()) {
      throw Error::input(r.mark, label,
                         "expected a mapping such as {metric: train_tokens_per_second, value: "
                         "36000, lower: -10%}, got " + entry.describe());
    }
    check_name_keys(entry, label, kReferenceKeys);
    const Value* metric = entry.find("metric");
    if (metric == nullptr) {
      throw Error::input(r.mark, label, "needs a metric",
                         "add metric: with a column of bench-extract, e.g. "
                         "train_tokens_per_second");
    }
    r.metric = require_string(*metric, label + ".metric", r.mark);
    if (!is_key_like(r.metric)) {
      throw Error::input(mark_or(*metric, r.mark), label + ".metric",
                         "'" + r.metric + "' is not a metric's name",
                         "give a column of bench-extract, such as train_tokens_per_second");
    }
    const Value* value = entry.find("value");
    if (value == nullptr || !value->is_number() || !std::isfinite(value->as_float())) {
      throw Error::input(value == nullptr ? r.mark : mark_or(*value, r.mark), label + ".value",
                         value == nullptr ? "needs the expected value"
                                          : "expected a finite number, got " + value->describe(),
                         "add value: with the number the metric should reach, in its unit");
    }
    r.value = value->as_float();
    r.lower = parse_bound(entry.find("lower"), label + ".lower", r.mark);
    r.upper = parse_bound(entry.find("upper"), label + ".upper", r.mark);
    if (!r.lower.present && !r.upper.present) {
      throw Error::input(r.mark, label, "has no bound, so no result could miss it",
                         "give lower:, upper: or both, e.g. lower: -10%");
    }
    for (const auto& [b, key] : {std::pair{&r.lower, "lower"}, std::pair{&r.upper, "upper"}}) {
      const Value* v = entry.find(key);
      if (!b->present) continue;
      bool wrong_side = std::string(key) == "lower" ? b->amount > 0 : b->amount < 0;
      if (wrong_side) {
        throw Error::input(
            mark_or(*v, r.mark), label + "." + key,
            std::string(std::string(key) == "lower" ? "a " : "an ") + key + " bound of " + b->text + " lies on the wrong side of the "
                "reference",
            std::string("bounds are offsets from value: lower is 0 or less (-10%), upper 0 or "
                        "more (+10%)"));
      }
      if (b->relative && r.value == 0) {
        throw Error::input(mark_or(*v, r.mark), label + "." + key,
                           "a percentage of a reference of 0 is 0",
                           "give an absolute bound in the metric's unit, e.g. " +
                               std::string(key) + ": " +
                               (std::string(key) == "lower" ? "-0.01" : "0.01"));
      }
    }
    if (const Value* unit = entry.find("unit"); unit != nullptr && !unit->is_null()) {
      r.unit = require_string(*unit, label + ".unit", r.mark);
    }
    r.device = reference_pattern(entry, "device", label, r.mark);
    r.host = reference_pattern(entry, "host", label, r.mark);
    r.partition = reference_pattern(entry, "partition", label, r.mark);
    r.scenario = reference_pattern(entry, "scenario", label, r.mark);
    if (const Value* sc = entry.find("scenario")) r.scenario_mark = mark_or(*sc, r.mark);
    if (const Value* when = entry.find("when"); when != nullptr && !when->is_null()) {
      r.when.mark = mark_or(*when, r.mark);
      if (!when->is_map() || when->entries().empty()) {
        throw Error::input(r.when.mark, label + ".when",
                           "expected a non-empty mapping of config keys to values, got " +
                               (when->is_map() ? std::string("an empty one") : when->describe()),
                           "e.g. when: {train.micro_batch: 8}");
      }
      flatten_exclude(*when, "", r.when);
    }
    out.push_back(std::move(r));
  }
  return out;
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

}  // namespace

SweepSpec parse_sweep(const Value& root, const std::string& path, const SweepFileReader& reader) {
  const Schema& schema = Schema::get();
  Mark file_mark = root.mark().known() ? Mark{root.mark().source, 0, 0} : Mark::in(path);
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

  SweepSpec spec;
  spec.path = path;
  const Value null_value;
  auto get = [&](const char* key) -> const Value& {
    const Value* v = root.find(key);
    return v ? *v : null_value;
  };

  // name
  if (get("name").is_null()) {
    spec.name = fs::path(path).stem().string();
    if (!safe_name(spec.name)) {
      throw Error::input(file_mark, "name",
                         "the file name '" + spec.name + "' cannot name the sweep",
                         "add name: with letters, digits, '.', '_' and '-'");
    }
  } else {
    spec.name = require_string(get("name"), "name", file_mark);
    if (!safe_name(spec.name)) {
      throw Error::input(mark_or(get("name"), file_mark), "name",
                         "'" + spec.name + "' is not a usable sweep name",
                         "use 1 to 64 letters, digits, '.', '_' and '-', not starting with '.' "
                         "or '-'");
    }
  }
  if (!get("description").is_null()) require_string(get("description"), "description", file_mark);

  // repeats
  if (!get("repeats").is_null()) {
    const Value& r = get("repeats");
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

  // defaults, base and the top-level sections
  Value base = Value::map(file_mark);
  if (!get("defaults").is_null()) {
    std::vector<Value> entries;
    const Value& d = get("defaults");
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
  }
  Block top = parse_block(root, file_mark);
  merge_into(base, top.base);
  for (const std::string& section : kTopLevelSections) {
    const Value& v = get(section.c_str());
    if (v.is_null()) continue;
    if (!v.is_map()) {
      throw Error::input(mark_or(v, file_mark), section,
                         "expected a mapping of " + section + " keys, got " + v.describe());
    }
    Value partial = normalize_partial_config(v, section);
    reject_overlap(top.base, "base", partial, "the top-level " + section + " section");
    merge_into(base, partial);
  }

  spec.tag = parse_tag(get("tag"), file_mark);

  if (!get("prune_after_oom").is_null()) {
    for (const Value& k :
         require_list(get("prune_after_oom"), "prune_after_oom", file_mark).items()) {
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
      spec.prune_after_oom.push_back(key);
    }
  }

  spec.references = parse_references(get("references"), file_mark);
  spec.memory_limit = parse_memory_limit(get("memory_limit"), file_mark);

  // scenarios
  struct RawScenario {
    std::string name;
    Mark mark;
    Block block;
  };
  std::vector<RawScenario> raw;
  if (!get("scenarios").is_null()) {
    const Value& list = require_list(get("scenarios"), "scenarios", file_mark);
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
  } else {
    raw.push_back(RawScenario{"default", file_mark, Block{Value::map(), {}, {}, {}}});
  }

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

  // A reference for a scenario the file does not have would never apply.
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

  // An exclude that names a key no dimension sweeps can never do what was meant.
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
  return spec;
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

double PerformanceReference::low() const {
  if (!lower.present) return -std::numeric_limits<double>::infinity();
  return value + (lower.relative ? std::fabs(value) * lower.amount : lower.amount);
}

double PerformanceReference::high() const {
  if (!upper.present) return std::numeric_limits<double>::infinity();
  return value + (upper.relative ? std::fabs(value) * upper.amount : upper.amount);
}

int PerformanceReference::conditions() const {
  int n = static_cast<int>(when.matches.size());
  for (const std::string* p : {&device, &host, &partition, &scenario}) n += p->empty() ? 0 : 1;
  return n;
}

SweepSpec load_sweep_file(const std::string& path) {
  Value root = load_yaml_file(path);
  return parse_sweep(root, path, [](const std::string& p, const std::string& display) {
    return load_yaml_file(p, display);
  });
}

}  // namespace sweepbench
