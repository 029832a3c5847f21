#include "sweep/references.h"

#include <fnmatch.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "config/yaml_io.h"
#include "metrics/summary.h"  // interval_columns
#include "text/text.h"

namespace sweepbench {
namespace {

bool pattern_holds(const std::string& pattern, const std::string& text) {
  return pattern.empty() || ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

bool applies(const PerformanceReference& r, const PointFacts& f) {
  if (!pattern_holds(r.scenario, f.scenario) || !pattern_holds(r.device, f.device) ||
      !pattern_holds(r.host, f.host) || !pattern_holds(r.partition, f.partition)) {
    return false;
  }
  return r.when.matches.empty() || (f.config != nullptr && rule_matches(*f.config, r.when));
}

std::optional<double> number_in(const Value& map, const std::string& key) {
  const Value* v = map.is_map() ? map.find(key) : nullptr;
  if (v == nullptr) return std::nullopt;
  if (v->is_number() && std::isfinite(v->as_float())) return v->as_float();
  // bench-extract's rows may hold numbers as text (a CSV read back).
  if (v->is_string()) {
    std::optional<double> d = parse_double(v->as_string());
    if (d && std::isfinite(*d)) return d;
  }
  return std::nullopt;
}

std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string bound_text(const PerformanceReference& r) {
  auto side = [](const ReferenceBound& b) {
    if (!b.present) return std::string();
    std::string t = b.text;
    if (!t.empty() && t[0] != '-' && t[0] != '+') t = "+" + t;
    return t;
  };
  return side(r.lower) + ".." + side(r.upper);
}

}  // namespace

PointFacts facts_of(const std::string& scenario, const Value& config, const Value& summary,
                    const std::string& host, const std::string& partition) {
  PointFacts f;
  f.scenario = scenario;
  f.config = &config;
  f.host = host;
  f.partition = partition;
  if (summary.is_map()) f.device = text_field(summary, "device_name");
  if (f.device.empty()) {
    if (const Value* name = config.find_path("hardware.name"); name && name->is_string()) {
      f.device = name->as_string();
    }
  }
  return f;
}

std::vector<const PerformanceReference*> references_for(
    const std::vector<PerformanceReference>& references, const PointFacts& facts) {
  std::map<std::string, int> most;  // metric -> the most conditions of those that apply
  for (const PerformanceReference& r : references) {
    if (!applies(r, facts)) continue;
    auto [it, fresh] = most.emplace(r.metric, r.conditions());
    if (!fresh) it->second = std::max(it->second, r.conditions());
  }
  std::vector<const PerformanceReference*> out;
  for (const PerformanceReference& r : references) {
    if (applies(r, facts) && most[r.metric] == r.conditions()) out.push_back(&r);
  }
  return out;
}

std::optional<std::pair<double, double>> metric_interval(const Value& metrics,
                                                         const std::string& metric) {
  for (const auto& [low, high] : interval_columns(metric)) {
    std::optional<double> l = number_in(metrics, low), h = number_in(metrics, high);
    if (l && h) return std::pair{*l, *h};
  }
  return std::nullopt;
}

bool interval_misses(double ci_low, double ci_high, double low, double high) {
  return ci_high < low || ci_low > high;
}

ReferenceCheck check_reference(const PerformanceReference& reference, const Value& metrics,
                               const Value& units) {
  ReferenceCheck c;
  c.metric = reference.metric;
  c.unit = reference.unit;
  c.reference = reference.value;
  c.low = reference.low();
  c.high = reference.high();
  c.bound = bound_text(reference);
  c.where = reference.mark.str();
  std::string unit = units.is_map() ? text_field(units, reference.metric) : "";
  if (c.unit.empty()) c.unit = unit;
  c.measured = number_in(metrics, reference.metric);
  if (!c.measured) {
    const Value* v = metrics.is_map() ? metrics.find(reference.metric) : nullptr;
    c.why = v == nullptr ? "the results have no metric " + reference.metric
                         : reference.metric + " has no value (" + display_value(*v) + ")";
    return c;
  }
  if (!reference.unit.empty() && !unit.empty() && unit != reference.unit) {
    c.why = reference.metric + " is in " + unit + ", the reference in " + reference.unit;
    return c;
  }
  std::pair<double, double> interval{*c.measured, *c.measured};
  if (auto i = metric_interval(metrics, reference.metric)) {
    interval = *i;
    c.ci_low = i->first;
    c.ci_high = i->second;
  }
  c.pass = !interval_misses(interval.first, interval.second, c.low, c.high);
  if (!c.pass) {
    bool below = interval.second < c.low;
    c.why = reference.metric + " " + number_text(*c.measured) +
            (c.ci_low ? " [" + number_text(*c.ci_low) + ", " + number_text(*c.ci_high) + "]"
                      : std::string()) +
            (below ? " is below " + number_text(c.low) : " is above " + number_text(c.high));
  }
  return c;
}

std::string describe_miss(const ReferenceCheck& c) {
  return c.why + " (reference " + number_text(c.reference) + (c.unit.empty() ? "" : " " + c.unit) +
         " " + c.bound + ", " + c.where + ")";
}

SummaryMetrics summary_metrics(const Value& summary) {
  SummaryMetrics s;
  if (!summary.is_map()) return s;
  if (const Value* m = summary.find("metrics"); m != nullptr && m->is_map()) s.metrics = *m;
  if (const Value* u = summary.find("units"); u != nullptr && u->is_map()) s.units = *u;
  const Value* seconds = summary.find("seconds");
  if (seconds != nullptr && seconds->is_number() && s.metrics.find("seconds") == nullptr) {
    s.metrics.set("seconds", *seconds);
    s.units.set("seconds", Value::string("s"));
  }
  return s;
}

std::vector<std::string> references_for_no_point(const Plan& plan) {
  const std::vector<PerformanceReference>& refs = plan.info().references;
  std::vector<bool> used(refs.size(), false);
  size_t left = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    used[i] = refs[i].scenario.empty() && refs[i].when.matches.empty();
    left += used[i] ? 0 : 1;
  }
  if (left == 0) return {};
  plan.for_each_point(
      [&](const SweepPoint& p) {
        for (size_t i = 0; i < refs.size() && left > 0; ++i) {
          if (used[i] || !pattern_holds(refs[i].scenario, p.scenario)) continue;
          if (!refs[i].when.matches.empty() && !rule_matches(p.config, refs[i].when)) continue;
          used[i] = true;
          --left;
        }
      },
      /*selected_only=*/false);
  std::vector<std::string> out;
  for (size_t i = 0; i < refs.size(); ++i) {
    if (!used[i]) out.push_back(refs[i].mark.str() + ": " + refs[i].label);
  }
  return out;
}

Value ReferenceCheck::to_value() const {
  auto real_or_null = [](double x) { return std::isfinite(x) ? Value::real(x) : Value::null(); };
  Value v = Value::map();
  v.set("metric", Value::string(metric));
  v.set("unit", Value::string(unit));
  v.set("reference", Value::real(reference));
  v.set("low", real_or_null(low));
  v.set("high", real_or_null(high));
  v.set("bound", Value::string(bound));
  v.set("where", Value::string(where));
  v.set("measured", measured ? Value::real(*measured) : Value::null());
  v.set("ci_low", ci_low ? Value::real(*ci_low) : Value::null());
  v.set("ci_high", ci_high ? Value::real(*ci_high) : Value::null());
  v.set("pass", Value::boolean(pass));
  v.set("why", Value::string(why));
  return v;
}

std::optional<ReferenceCheck> ReferenceCheck::from_value(const Value& v) {
  if (!v.is_map()) return std::nullopt;
  ReferenceCheck c;
  c.metric = text_field(v, "metric");
  if (c.metric.empty()) return std::nullopt;
  c.unit = text_field(v, "unit");
  c.reference = number_in(v, "reference").value_or(0);
  c.low = number_in(v, "low").value_or(-std::numeric_limits<double>::infinity());
  c.high = number_in(v, "high").value_or(std::numeric_limits<double>::infinity());
  c.bound = text_field(v, "bound");
  c.where = text_field(v, "where");
  c.measured = number_in(v, "measured");
  c.ci_low = number_in(v, "ci_low");
  c.ci_high = number_in(v, "ci_high");
  const Value* pass = v.find("pass");
  c.pass = pass != nullptr && pass->is_bool() && pass->as_bool();
  c.why = text_field(v, "why");
  return c;
}

}  // namespace sweepbench
