#include "postprocess/history_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "config/value.h"
#include "config/yaml_io.h"
#include "metrics/change_points.h"
#include "metrics/summary.h"
#include "text/exit_codes.h"
#include "text/text.h"

namespace sweepbench {

std::string signed_percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", fraction * 100);
  return buf;
}

std::string field_differences(const std::map<std::string, std::string>& a,
                              const std::map<std::string, std::string>& b) {
  std::set<std::string> fields;
  for (const auto& [k, v] : a) fields.insert(k);
  for (const auto& [k, v] : b) fields.insert(k);
  std::vector<std::string> parts;
  for (const std::string& f : fields) {
    auto x = a.find(f), y = b.find(f);
    const std::string before = x == a.end() ? "(none)" : x->second;
    const std::string after = y == b.end() ? "(none)" : y->second;
    if (before != after) parts.push_back(f + " " + before + " -> " + after);
  }
  return join(parts, "; ");
}

namespace {

// A command's declared metric names, from its config (command.metrics' names).
std::set<std::string> declared_metrics(const std::string& config_json) {
  std::set<std::string> names;
  if (config_json.empty()) return names;
  try {
    const Value config = parse_own_yaml(config_json, "the store's config");
    const Value* list = config.is_map() ? config.find("command.metrics") : nullptr;
    if (list && list->is_list()) {
      for (const Value& m : list->items()) {
        const Value* name = m.is_map() ? m.find("name") : nullptr;
        if (name && name->is_string()) names.insert(name->as_string());
      }
    }
  } catch (const std::exception&) {
  }
  return names;
}

}  // namespace

std::string HistoryChange::what() const {
  std::string s = metric + " " + signed_percent(change) + " [" + signed_percent(low) + ", " +
                  signed_percent(high) + "] since " + since.substr(0, 10);
  if (!environment.empty()) {
    s += ", when " + environment;
  } else if (!labels.empty()) {
    s += ", when the labels changed: " + labels;
  } else {
    s += " (no environment or label change recorded there)";
  }
  return s;
}

CheckResult check_history(const std::vector<HistoryRun>& all, const CheckOptions& o) {
  CheckResult result;
  // The ok runs in time order.
  std::vector<const HistoryRun*> runs;
  for (const HistoryRun& r : all) {
    if (r.status == "ok") runs.push_back(&r);
  }
  // In the store's order (HistoryStore::runs: by start, then as they reached the store).
  result.runs = runs.size();

  // Series: (series key, metric) -> its runs, in time order.
  struct Member {
    const HistoryRun* run;
    const HistoryMetric* metric;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Member>> series;
  std::map<std::string, std::set<std::string>> declared;  // by series key
  const std::set<std::string> wanted(o.metrics.begin(), o.metrics.end());
  for (const HistoryRun* r : runs) {
    const std::string& key = r->series_key.empty() ? r->config_hash : r->series_key;
    if (!declared.count(key)) declared[key] = declared_metrics(r->config_json);
    for (const HistoryMetric& m : r->metrics) {
      if (!(m.value > 0) || !std::isfinite(m.value)) continue;  // a ratio needs a positive level
      if (!wanted.empty() && !wanted.count(m.name)) continue;
      series[{r->series_key.empty() ? r->config_hash : r->series_key, m.name}].push_back({r, &m});
    }
  }
  // Without --metric: the series whose runs have intervals (the headline metrics), and the
  // metrics a command declares.
  struct Cut {
    const std::vector<Member>* members;
    ChangePoint point;
    size_t series;
  };
  std::vector<Cut> cuts;
  for (const auto& [key, members] : series) {
    const bool headline = std::any_of(members.begin(), members.end(), [](const Member& m) {
      return std::isfinite(m.metric->ci_low) && std::isfinite(m.metric->ci_high);
    });
    const bool gated = std::any_of(o.fail_on.begin(), o.fail_on.end(),
                                   [&](const FailOn& f) { return f.metric == key.second; });
    if (wanted.empty() && !headline && !gated && !declared[key.first].count(key.second)) continue;
    ++result.series;
    HistorySeriesView& view = result.series_views.emplace_back();
    view.metric = key.second;
    view.unit = members.back().metric->unit;
    std::vector<SeriesPoint> points;
    for (const Member& m : members) {
      view.runs.push_back(m.run);
      view.values.push_back(m.metric);
      SeriesPoint p;
      p.value = m.metric->value;
      p.ci_low = m.metric->ci_low;
      p.ci_high = m.metric->ci_high;
      p.environment = m.run->environment_id;
      points.push_back(p);
    }
    ChangeOptions co;
    co.min_runs = o.min_runs;
    ChangeSearch found = find_change_points(points, co);
    result.tests += found.tests;
    for (const ChangePoint& c : found.cuts) {
      cuts.push_back({&members, c, result.series_views.size() - 1});
    }
  }
  std::vector<double> p;
  for (const Cut& c : cuts) p.push_back(c.point.p);
  const std::vector<bool> discovered = benjamini_hochberg(p, o.fdr, result.tests);
  // A series' latest change is its last discovered one: a later cut that is no change (an
  // environment change that changed nothing) does not hide a regression.
  std::map<const std::vector<Member>*, size_t> last;  // series -> the index of its last discovery
  for (size_t i = 0; i < cuts.size(); ++i) {
    if (discovered[i]) last[cuts[i].members] = i;
  }
  for (size_t i = 0; i < cuts.size(); ++i) {
    if (!discovered[i]) continue;
    const Cut& c = cuts[i];
    const Member& before = (*c.members)[c.point.at - 1];
    const Member& after = (*c.members)[c.point.at];
    HistoryChange h;
    h.metric = after.metric->name;
    h.unit = after.metric->unit;
    h.sweep = after.run->sweep;
    h.tag = after.run->tag;
    h.config_hash = after.run->config_hash;
    h.since = after.run->started;
    h.before = c.point.before;
    h.after = c.point.after;
    h.change = c.point.change;
    h.low = c.point.low;
    h.high = c.point.high;
    h.p = c.point.p;
    h.worse = higher_is_better(h.metric, h.unit) ? h.change < 0 : h.change > 0;
    h.latest = last[c.members] == i;
    h.runs_before = c.point.runs_before;
    h.runs_after = c.point.runs_after;
    h.series = c.series;
    h.at = c.point.at;
    h.environment = field_differences(before.run->environment, after.run->environment);
    h.labels = field_differences(before.run->labels, after.run->labels);
    result.changes.push_back(std::move(h));
  }
  // Worst first: regressions before improvements, the newest first.
  std::stable_sort(result.changes.begin(), result.changes.end(),
                   [](const HistoryChange& a, const HistoryChange& b) {
                     if (a.worse != b.worse) return a.worse;
                     return a.since > b.since;
                   });
  for (size_t i = 0; i < result.changes.size(); ++i) {
    result.series_views[result.changes[i].series].changes.push_back(i);
  }
  for (HistorySeriesView& v : result.series_views) {
    std::sort(v.changes.begin(), v.changes.end(),
              [&](size_t a, size_t b) { return result.changes[a].at < result.changes[b].at; });
  }
  return result;
}

int check_exit_code(const CheckResult& result, const std::vector<FailOn>& fail_on) {
  for (const FailOn& f : fail_on) {
    for (const HistoryChange& c : result.changes) {
      if (c.metric == f.metric && c.latest && c.worse && std::fabs(c.change) > f.threshold) {
        return kExitRegression;
      }
    }
  }
  return kExitOk;
}

}  // namespace sweepbench
