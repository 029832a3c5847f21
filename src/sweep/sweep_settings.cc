// sweep_spec.h's settings of a whole sweep: tag, repeats as a mapping (until precise),
// memory_limit and the performance references with their bounds and conditions.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "sweep/sweep_spec_parts.h"
#include "sweep/tagger.h"
#include "text/text.h"

namespace sweepbench {
namespace {

const std::vector<std::string> kTagKeys = {"style", "format", "keys"};
const std::vector<std::string> kReferenceKeys = {
    "metric", "value", "lower", "upper", "unit", "device", "host", "partition", "scenario", "when"};

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
    std::optional<double> pct = ends_with(t, "%")
                                    ? parse_double(std::string_view(t).substr(0, t.size() - 1))
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

// A reference's metric and the value it should reach.
void read_reference_value(const Value& entry, PerformanceReference& r) {
  const std::string& label = r.label;
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
}

// A reference's bounds: at least one, each on its side of the value; a percentage only of a
// value other than 0.
void read_reference_bounds(const Value& entry, PerformanceReference& r) {
  const std::string& label = r.label;
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
          std::string(std::string(key) == "lower" ? "a " : "an ") + key + " bound of " + b->text +
              " lies on the wrong side of the "
              "reference",
          std::string("bounds are offsets from value: lower is 0 or less (-10%), upper 0 or "
                      "more (+10%)"));
    }
    if (b->relative && r.value == 0) {
      throw Error::input(mark_or(*v, r.mark), label + "." + key,
                         "a percentage of a reference of 0 is 0",
                         "give an absolute bound in the metric's unit, e.g. " + std::string(key) +
                             ": " + (std::string(key) == "lower" ? "-0.01" : "0.01"));
    }
  }
}

// Where a reference applies: shell patterns on device, host, partition and scenario, and config
// values (`when`, matched as an exclude entry is).
void read_reference_conditions(const Value& entry, PerformanceReference& r) {
  const std::string& label = r.label;
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
}

PerformanceReference parse_reference(const Value& entry, const std::string& label,
                                     const Mark& mark) {
  PerformanceReference r;
  r.label = label;
  r.mark = mark;
  if (!entry.is_map()) {
    throw Error::input(r.mark, label,
                       "expected a mapping such as {metric: train_tokens_per_second, value: "
                       "36000, lower: -10%}, got " +
                           entry.describe());
  }
  check_name_keys(entry, label, kReferenceKeys);
  read_reference_value(entry, r);
  read_reference_bounds(entry, r);
  if (const Value* unit = entry.find("unit"); unit != nullptr && !unit->is_null()) {
    r.unit = require_string(*unit, label + ".unit", r.mark);
  }
  read_reference_conditions(entry, r);
  return r;
}

}  // namespace

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
    for (auto [suffix, scale] :
         {std::pair{"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"GB", 1e9}, {"MB", 1e6}}) {
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

std::vector<PerformanceReference> parse_references(const Value& references, const Mark& fallback) {
  std::vector<PerformanceReference> out;
  if (references.is_null()) return out;
  const Value& list = require_list(references, "references", fallback,
                                   "references is a list of {metric, value, lower, upper, ...}");
  for (size_t i = 0; i < list.items().size(); ++i) {
    const Value& entry = list.items()[i];
    out.push_back(parse_reference(entry, "references[" + std::to_string(i) + "]",
                                  mark_or(entry, mark_or(list, fallback))));
  }
  return out;
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

}  // namespace sweepbench
