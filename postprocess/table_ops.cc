#include "postprocess/table_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/table.h"
#include "config/yaml_io.h"
#include "metrics/pareto.h"
#include "metrics/statistics.h"
#include "metrics/summary.h"
#include "postprocess/point_columns.h"
#include "sweep/references.h"
#include "sweep/repeats_until.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {

namespace {

// The group's verdict on each referenced metric (sweep/references.h): the reference and its
// range are its first ok repeat's; the group misses when the repeats' whole interval lies
// outside the range. One ok repeat keeps its own verdict, from its run's interval.
void check_group_references(std::map<std::string, Value>* row,
                            const std::vector<std::string>& referenced,
                            const std::vector<const std::map<std::string, Value>*>& ok) {
  row->erase("reference");
  for (const std::string& m : referenced) {
    for (const std::string& c : reference_columns(m)) {
      row->erase(c);
      if (ok.empty()) continue;
      if (auto it = ok.front()->find(c); it != ok.front()->end()) (*row)[c] = it->second;
    }
  }
  if (ok.size() == 1) {
    if (auto it = ok.front()->find("reference"); it != ok.front()->end()) {
      (*row)["reference"] = it->second;
    }
    return;
  }
  bool any = false, missed = false;
  for (const std::string& m : referenced) {
    const std::vector<std::string> cols = reference_columns(m);
    row->erase(cols[3]);
    std::optional<double> value = cell_number(*row, m);
    if (row->count(cols[0]) == 0 || !cell_number(*row, cols[0]) || !row_ok(*row)) continue;
    any = true;
    if (!value) {
      (*row)[cols[3]] = Value::boolean(false);
      missed = true;
      continue;
    }
    const double inf = std::numeric_limits<double>::infinity();
    double low = cell_number(*row, cols[1]).value_or(-inf);
    double high = cell_number(*row, cols[2]).value_or(inf);
    double ci_low = cell_number(*row, m + "_ci_low").value_or(*value);
    double ci_high = cell_number(*row, m + "_ci_high").value_or(*value);
    bool pass = !interval_misses(ci_low, ci_high, low, high);
    (*row)[cols[3]] = Value::boolean(pass);
    missed = missed || !pass;
  }
  if (any) (*row)["reference"] = Value::string(missed ? "miss" : "pass");
}

}  // namespace

void group_repeats(ExtractTable* t) {
  std::set<std::string> metrics(metric_columns().begin(), metric_columns().end());
  metrics.insert(memory_column_names().begin(), memory_column_names().end());
  metrics.insert("cost_usd_per_mtok");
  // Predictions are the same for every repeat, their errors are measurements.
  metrics.insert(prediction_column_names().begin(), prediction_column_names().end());
  // A command's figures are measurements too: its metrics (the names its units map gives) and
  // its wall time (repeats of command points were never grouped).
  for (const auto& row : t->rows) {
    auto units = row.find("units");
    if (units == row.end() || !units->second.is_map()) continue;
    for (const Value::Entry& e : units->second.entries()) metrics.insert(e.key);
    metrics.insert("seconds");
  }
  // One run's intervals (train_tokens_per_second_ci_low, step_time_ci_high_s) give way to the
  // repeats' interval of each metric; `noisy` is whether any repeat was.
  auto is_interval = [](const std::string& c) {
    for (const char* end : {"_ci_low", "_ci_high", "_ci_low_s", "_ci_high_s"}) {
      const std::string e(end);
      if (c.size() > e.size() && c.compare(c.size() - e.size(), e.size(), e) == 0) return true;
    }
    return false;
  };
  // Where a repeat ran (bench-sweep run --jobs gives each its CPUs and GPUs) is no part of
  // what the repeats share either.
  std::set<std::string> not_key = {"tag",     "index", "repeat",     "status",    "reason",
                                   "started", "noisy", "target_met", "reference", "cpus",
                                   "gpus",    "nodes", "beside"};
  // A performance reference's verdict is the group's, from the repeats' interval; its columns
  // are no part of what the repeats share (a failed repeat has none).
  std::vector<std::string> referenced;
  for (const std::string& c : t->columns) {
    const std::string pass = "_ref_pass";
    if (c.size() > pass.size() && ends_with(c, pass)) {
      referenced.push_back(c.substr(0, c.size() - pass.size()));
      for (const std::string& r : reference_columns(referenced.back())) not_key.insert(r);
    }
  }
  not_key.insert(metrics.begin(), metrics.end());
  for (auto it = metrics.begin(); it != metrics.end();) {
    it = is_interval(*it) ? metrics.erase(it) : std::next(it);
  }
  // Repeats the sweep skipped because those before them were precise enough (sweeps.md,
  // "Repeats until precise") measured nothing and were asked not to run: no part of a group.
  t->rows.erase(std::remove_if(t->rows.begin(), t->rows.end(),
                               [](std::map<std::string, Value>& row) {
                                 return cell_text(row["status"]) == "skipped" &&
                                        starts_with(cell_text(row["reason"]), kPreciseReason);
                               }),
                t->rows.end());
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < t->rows.size(); ++i) {
    std::string key;
    for (const std::string& c : t->columns) {
      if (not_key.count(c) != 0) continue;
      auto it = t->rows[i].find(c);
      key += c + "=" + (it == t->rows[i].end() ? "" : cell_text(it->second)) + "\n";
    }
    auto [it, fresh] = group_of.emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  std::vector<std::map<std::string, Value>> rows;
  for (const std::vector<size_t>& g : groups) {
    std::map<std::string, Value> row = t->rows[g.front()];
    std::vector<size_t> ok;
    for (size_t i : g) {
      if (cell_text(t->rows[i]["status"]) == "ok") ok.push_back(i);
    }
    row["repeats"] = Value::integer(static_cast<std::int64_t>(g.size()));
    for (auto it = row.begin(); it != row.end();) {
      it = is_interval(it->first) ? row.erase(it) : std::next(it);
    }
    row.erase("noisy");
    row.erase("target_met");
    for (size_t i : ok) {  // a failed repeat measured nothing to be noisy about
      auto noisy = t->rows[i].find("noisy");
      if (noisy != t->rows[i].end() && noisy->second.is_bool()) {
        auto& out = row["noisy"];
        out = Value::boolean((out.is_bool() && out.as_bool()) || noisy->second.as_bool());
      }
      // The group met its target where every ok repeat did.
      auto met = t->rows[i].find("target_met");
      if (met != t->rows[i].end() && met->second.is_bool()) {
        auto& out = row["target_met"];
        out = Value::boolean((!out.is_bool() || out.as_bool()) && met->second.as_bool());
      }
    }
    if (ok.size() != g.size()) {
      for (size_t i : g) {
        if (cell_text(t->rows[i]["status"]) != "ok") {
          row["status"] = t->rows[i]["status"];
          row["reason"] =
              Value::string(std::to_string(ok.size()) + " of " + std::to_string(g.size()) +
                            " repeats ok; " + cell_text(t->rows[i]["reason"]));
          break;
        }
      }
    }
    for (const std::string& m : metrics) {
      std::vector<double> values;
      for (size_t i : ok) {
        auto it = t->rows[i].find(m);
        if (it != t->rows[i].end() && it->second.is_number())
          values.push_back(it->second.as_float());
      }
      // A metric that is no number (a command's `reduce: all` list) is the first ok repeat's.
      auto first_ok = ok.empty() ? t->rows[g.front()].end() : t->rows[ok.front()].find(m);
      bool listed = !ok.empty() && first_ok != t->rows[ok.front()].end() &&
                    !first_ok->second.is_number() && !first_ok->second.is_null();
      if (values.empty() && listed) continue;
      row.erase(m);
      if (!values.empty()) {
        row[m] = Value::real(mean(values));
        row[m + "_std"] = Value::real(stddev(values));
        // The mean's interval over the repeats, which are independent runs (statistics.h).
        const Estimate e = repeats_estimate(values);
        if (e.has_interval()) {
          row[m + "_ci_low"] = Value::real(e.low);
          row[m + "_ci_high"] = Value::real(e.high);
        }
      }
    }
    std::vector<const std::map<std::string, Value>*> ok_rows;
    for (size_t i : ok) ok_rows.push_back(&t->rows[i]);
    check_group_references(&row, referenced, ok_rows);
    rows.push_back(std::move(row));
  }
  std::vector<std::string> columns;
  for (const std::string& c : t->columns) {
    if (c == "repeat") {
      columns.push_back("repeats");
    } else if (is_interval(c)) {
      continue;  // one run's; the repeats' follow each metric
    } else {
      columns.push_back(c);
      // Not beside a text metric (type: text) or a list, which have no spread.
      bool words = std::any_of(rows.begin(), rows.end(), [&](const auto& row) {
        auto it = row.find(c);
        return it != row.end() && !it->second.is_number() && !it->second.is_null();
      });
      if (metrics.count(c) != 0 && !words) {
        columns.push_back(c + "_std");
        bool interval = std::any_of(rows.begin(), rows.end(),
                                    [&](const auto& row) { return row.count(c + "_ci_low") != 0; });
        if (interval) columns.insert(columns.end(), {c + "_ci_low", c + "_ci_high"});
      }
    }
  }
  t->columns = columns;
  t->rows = rows;
}

void drop_constant_columns(ExtractTable* t, const std::vector<std::string>& keep) {
  std::vector<std::string> kept;
  for (const std::string& c : t->columns) {
    bool always =
        c == "tag" || c == "status" || std::find(keep.begin(), keep.end(), c) != keep.end();
    std::set<std::string> values;
    for (const auto& row : t->rows) {
      auto it = row.find(c);
      values.insert(it == row.end() ? "" : cell_text(it->second));
      if (values.size() > 1) break;
    }
    if (always || values.size() > 1) kept.push_back(c);
  }
  t->columns = kept;
}

namespace {

using Row = std::map<std::string, Value>;

std::string group_of(const Row& row, const std::vector<std::string>& per) {
  std::string key;
  for (const std::string& k : per) {
    auto it = row.find(k);
    key += (it == row.end() ? "" : cell_text(it->second)) + "\n";
  }
  return key;
}

}  // namespace

std::optional<double> cell_number(const Row& row, const std::string& column) {
  auto it = row.find(column);
  if (it == row.end()) return std::nullopt;
  std::optional<double> v;
  if (it->second.is_number()) v = it->second.as_float();
  if (it->second.is_string()) v = parse_double(it->second.as_string());  // a CSV's cell
  return v && std::isfinite(*v) ? v : std::nullopt;
}

bool row_ok(const Row& row) {
  auto it = row.find("status");
  return it != row.end() && cell_text(it->second) == "ok";
}

RowCondition parse_condition(const std::string& text) {
  // The first operator from the left (a value may hold one: reason=a<=b); at one place the
  // two-character operator wins (<= over <), and == is = (as pandas and SQL users write it).
  // Spaces around the operator are not part of the column or the value: `train.micro_batch < 4`.
  const size_t at = text.find_first_of("<>=!");
  if (at != std::string::npos && at > 0) {
    std::string op = text.substr(at, 1);
    if (at + 1 < text.size() && text[at + 1] == '=') op += "=";
    if (op != "!") {
      RowCondition c{trim(text.substr(0, at)), op == "==" ? "=" : op,
                     trim(text.substr(at + op.size()))};
      // Only = and != may have an empty value (reason= : the reason is empty).
      if (!c.column.empty() && (!c.value.empty() || c.op == "=" || c.op == "!=")) return c;
    }
  }
  throw Error::input(Mark::in("--where " + text), "", "is not COLUMN OP VALUE",
                     "write e.g. mem_peak_bytes<80e9, 'train.micro_batch >= 2' or device=cuda"
                     " (OP: < <= > >= = == !=)");
}

bool holds(const Row& row, const RowCondition& c) {
  auto it = row.find(c.column);
  if (it == row.end() || it->second.is_null()) {
    // An empty cell is the empty text: reason= holds there, reason!= does not.
    return c.value.empty() && c.op == "=";
  }
  std::optional<double> have = cell_number(row, c.column);
  std::optional<double> want = parse_double(c.value);
  if (have && want) {
    if (c.op == "<") return *have < *want;
    if (c.op == "<=") return *have <= *want;
    if (c.op == ">") return *have > *want;
    if (c.op == ">=") return *have >= *want;
    if (c.op == "=") return *have == *want;
    return *have != *want;
  }
  const std::string text = cell_text(it->second);
  if (c.op == "=") return text == c.value;
  if (c.op == "!=") return text != c.value;
  return false;  // an order between words is none
}

void filter_rows(ExtractTable* t, const std::vector<RowCondition>& conditions) {
  std::vector<Row> kept;
  for (Row& row : t->rows) {
    bool all = std::all_of(conditions.begin(), conditions.end(),
                           [&](const RowCondition& c) { return holds(row, c); });
    if (all) kept.push_back(std::move(row));
  }
  t->rows = std::move(kept);
}

std::string declared_unit(const std::vector<std::map<std::string, Value>>& rows,
                          const std::string& metric) {
  for (const auto& row : rows) {
    auto units = row.find("units");
    if (units == row.end()) continue;
    Value map = units->second;
    if (map.is_string()) {
      // A CSV's cell: the map in YAML flow text, as bench-extract wrote it.
      try {
        map = parse_yaml(map.as_string(), "units");
      } catch (const Error&) {
        continue;
      }
    }
    if (!map.is_map()) continue;
    if (const Value* u = map.find(metric); u != nullptr && u->is_string()) return u->as_string();
  }
  return "";
}

void keep_best(ExtractTable* t, const std::string& metric, const std::vector<std::string>& per) {
  const bool up = higher_is_better(metric, declared_unit(t->rows, metric));
  std::map<std::string, size_t> best;  // group -> row
  std::vector<std::string> order;
  for (size_t i = 0; i < t->rows.size(); ++i) {
    const Row& row = t->rows[i];
    std::optional<double> v = cell_number(row, metric);
    if (!row_ok(row) || !v) continue;
    const std::string g = group_of(row, per);
    auto it = best.find(g);
    if (it == best.end()) {
      best.emplace(g, i);
      order.push_back(g);
      continue;
    }
    const double held = *cell_number(t->rows[it->second], metric);
    if (up ? *v > held : *v < held) it->second = i;
  }
  std::vector<Row> kept;
  for (const std::string& g : order) kept.push_back(t->rows[best[g]]);
  t->rows = std::move(kept);
}

void keep_pareto_front(ExtractTable* t, const std::vector<std::string>& metrics,
                       const std::vector<std::string>& per) {
  std::vector<size_t> candidates;
  std::vector<std::vector<Span>> spans;
  std::vector<std::string> groups;
  std::vector<bool> up;
  for (const std::string& m : metrics) up.push_back(higher_is_better(m, declared_unit(t->rows, m)));
  for (size_t i = 0; i < t->rows.size(); ++i) {
    const Row& row = t->rows[i];
    if (!row_ok(row)) continue;
    std::vector<Span> s;
    for (size_t k = 0; k < metrics.size(); ++k) {
      const std::string& m = metrics[k];
      std::optional<double> v = cell_number(row, m);
      if (!v) break;
      std::pair<double, double> interval{*v, *v};
      for (const auto& [low, high] : interval_columns(m)) {
        std::optional<double> l = cell_number(row, low), h = cell_number(row, high);
        if (l && h) {
          interval = {*l, *h};
          break;
        }
      }
      s.push_back(oriented_span(up[k], *v, interval.first, interval.second));
    }
    if (s.size() != metrics.size()) continue;  // a row without every metric is not ranked
    candidates.push_back(i);
    spans.push_back(std::move(s));
    groups.push_back(group_of(row, per));
  }
  std::vector<bool> front = pareto_front(spans, groups);
  std::vector<Row> kept;
  for (size_t a = 0; a < candidates.size(); ++a) {
    if (front[a]) kept.push_back(t->rows[candidates[a]]);
  }
  t->rows = std::move(kept);
}

}  // namespace sweepbench
