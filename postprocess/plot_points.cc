// plot.h's reading of a table for the figures of means per x (bar, line, scaling): what the
// figure says of the rows (describe_figure: legends, units, where and when) and the values it
// draws (plot_points: each group's mean and 95% interval).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "config/config.h"
#include "config/yaml_io.h"
#include "metrics/statistics.h"
#include "metrics/summary.h"
#include "postprocess/plot.h"
#include "postprocess/plot_text.h"
#include "text/error.h"
#include "text/text.h"
#include "text/units.h"

namespace sweepbench {
namespace {

// The table's ok rows, and its columns by name, once: varying_columns asks for every cell of
// every column.
struct OkRows {
  explicit OkRows(const CsvTable& t) {
    for (size_t i = 0; i < t.columns.size(); ++i) position.emplace(t.columns[i], i);
    std::optional<size_t> status = index_of("status");
    for (const auto& row : t.rows) {
      if (!status || row[*status] == "ok") rows.push_back(&row);
    }
  }
  std::optional<size_t> index_of(const std::string& c) const {
    auto it = position.find(c);
    if (it == position.end()) return std::nullopt;
    return it->second;
  }
  std::string cell(size_t r, const std::string& c) const {
    std::optional<size_t> i = index_of(c);
    return i ? (*rows[r])[*i] : std::string();
  }

  std::map<std::string, size_t> position;
  std::vector<const std::vector<std::string>*> rows;
};

// Legends: a config column's value as `name=value`; any other hue (a tag) by the keys that
// vary, other than x, at its first row.
void hue_labels(const OkRows& ok, PlotSpec* spec) {
  std::optional<size_t> hue = spec->hue.empty() ? std::nullopt : ok.index_of(spec->hue);
  if (!hue) return;
  bool config_hue = is_config_column(spec->hue);
  for (size_t r = 0; r < ok.rows.size(); ++r) {
    const std::string& h = (*ok.rows[r])[*hue];
    if (spec->hue_labels.count(h) != 0) continue;
    std::vector<std::string> parts;
    if (config_hue) {
      parts.push_back(short_key(spec->hue) + "=" + h);
    } else {
      for (const std::string& c : spec->varying) {
        if (c != spec->x) parts.push_back(short_key(c) + "=" + ok.cell(r, c));
      }
    }
    spec->hue_labels[h] = parts.empty() ? h : join(parts, ", ");
  }
}

// A column's kind of unit: a command's or serve point's own first (the units column: a map in
// YAML flow text), else what bench-extract's names say.
UnitKind unit_kind_of(const OkRows& ok, const std::string& m, std::string* plain, PlotSpec* spec) {
  std::optional<size_t> units_column = ok.index_of("units");
  for (size_t r = 0; units_column && r < ok.rows.size(); ++r) {
    try {
      Value units = parse_yaml((*ok.rows[r])[*units_column], "units");
      if (const Value* u = units.is_map() ? units.find(m) : nullptr; u && u->is_string()) {
        *plain = u->as_string();
        spec->declared_units[m] = *plain;
        return *plain == "s"       ? UnitKind::kSeconds
               : *plain == "bytes" ? UnitKind::kBytes
                                   : UnitKind::kPlain;
      }
    } catch (const Error&) {
      // A row without units to read says nothing.
    }
  }
  return metric_unit_kind(m, plain);
}

std::string unit_words(UnitKind k, const std::string& plain) {
  if (!plain.empty()) return plain;
  switch (k) {
    case UnitKind::kSeconds:
      return "seconds";
    case UnitKind::kBytes:
      return "bytes";
    case UnitKind::kRatio:
      return "a ratio";
    default:
      return "no unit";
  }
}

// Units: one scale for metrics of one kind (they share the axis), from the largest value.
void metric_units(const OkRows& ok, PlotSpec* spec) {
  std::vector<UnitKind> kinds;
  std::vector<std::string> plains;
  double max = 0;
  for (const std::string& m : spec->metrics) {
    std::string plain;
    UnitKind kind = unit_kind_of(ok, m, &plain, spec);
    kinds.push_back(kind);
    plains.push_back(plain);
    if (std::optional<size_t> i = ok.index_of(m)) {
      for (const auto* row : ok.rows) {
        if (std::optional<double> v = number((*row)[*i])) max = std::max(max, std::fabs(*v));
      }
    }
  }
  bool one_kind =
      std::all_of(kinds.begin(), kinds.end(), [&](UnitKind k) { return k == kinds[0]; });
  // One axis shows one unit: 1 ms bars beside 57,000 samples/s are invisible, and a reader
  // would take one scale for both.
  // A metric whose unit nothing says (a command's metric without `unit`) is not refused.
  auto known = [&](size_t i) { return kinds[i] != UnitKind::kPlain || !plains[i].empty(); };
  for (size_t i = 0; i < spec->metrics.size(); ++i) {
    for (size_t j = i + 1; j < spec->metrics.size(); ++j) {
      if (!known(i) || !known(j) || (kinds[i] == kinds[j] && plains[i] == plains[j])) continue;
      throw Error::input(
          Mark::in("--metric " + join(spec->metrics, ",")), "",
          spec->metrics[i] + " is in " + unit_words(kinds[i], plains[i]) + " and " +
              spec->metrics[j] + " in " + unit_words(kinds[j], plains[j]) +
              ": one axis shows one unit",
          "draw them in figures of their own (one bench-plot each), or together only metrics "
          "of one unit");
    }
  }
  for (size_t i = 0; i < spec->metrics.size(); ++i) {
    // Kinds that differ share no scale: each keeps its base unit (s, B, a ratio).
    spec->units[spec->metrics[i]] =
        one_kind ? scaled_unit(kinds[i], max, plains[i]) : scaled_unit(kinds[i], 1, plains[i]);
  }
}

// Where and when: the devices (two named, then a count) and the dates of the ok rows.
std::string where_and_when(const OkRows& ok) {
  std::vector<std::string> devices, dates;
  std::optional<size_t> device = ok.index_of("device_name"), started = ok.index_of("started");
  for (const auto* row : ok.rows) {
    if (device && !(*row)[*device].empty() &&
        std::find(devices.begin(), devices.end(), (*row)[*device]) == devices.end()) {
      devices.push_back((*row)[*device]);
    }
    if (started && (*row)[*started].size() >= 10) dates.push_back((*row)[*started].substr(0, 10));
  }
  std::vector<std::string> where;
  if (!devices.empty()) {
    where.push_back(devices.size() <= 2 ? join(devices, ", ")
                                        : devices[0] + ", " + devices[1] + " and " +
                                              std::to_string(devices.size() - 2) + " more");
  }
  if (!dates.empty()) {
    std::sort(dates.begin(), dates.end());
    where.push_back(dates.front() == dates.back() ? dates.front()
                                                  : dates.front() + " to " + dates.back());
  }
  return join(where, ", ");
}

}  // namespace

void describe_figure(const CsvTable& t, PlotSpec* spec) {
  const OkRows ok(t);
  spec->varying = varying_columns(t.columns, ok.rows.size(),
                                  [&](size_t r, const std::string& c) { return ok.cell(r, c); });
  hue_labels(ok, spec);
  metric_units(ok, spec);
  // An x that is a measurement (a serve level's tokens/s per user, its request rate) names its
  // unit where its values need no scaling to read it; the values are drawn as the table has them.
  if (!spec->x.empty() && !is_config_column(spec->x) && ok.index_of(spec->x)) {
    std::string plain;
    const UnitKind kind = unit_kind_of(ok, spec->x, &plain, spec);
    if (std::pair<std::string, double> unit = scaled_unit(kind, 1, plain); unit.second == 1) {
      spec->x_unit = unit.first;
    }
  }
  spec->where = where_and_when(ok);
}

namespace {

// "nan", "inf", "-inf" and their spellings: numbers, but none a figure can show.
bool is_nonfinite_number(const std::string& text) {
  if (text.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0' && !std::isfinite(v);
}

// A column after `device` (where bench-extract's metrics start) with a number in some ok row,
// other than `not_this`: a suggestion that exists in this table.
std::optional<std::string> numeric_metric_column(const CsvTable& t, std::optional<size_t> status,
                                                 size_t not_this) {
  auto device = std::find(t.columns.begin(), t.columns.end(), "device");
  size_t first =
      device == t.columns.end() ? 0 : static_cast<size_t>(device - t.columns.begin()) + 1;
  for (size_t c = first; c < t.columns.size(); ++c) {
    if (c == not_this) continue;
    for (const auto& row : t.rows) {
      if ((!status || row[*status] == "ok") && number(row[c])) return t.columns[c];
    }
  }
  return std::nullopt;
}

// The columns plot_points reads, by position.
struct PlotColumns {
  std::vector<size_t> metrics;
  size_t x = 0;
  std::optional<size_t> hue, status;
  // Columns that say how a row was measured: its CPUs shared, its target missed.
  std::optional<size_t> shared, target_met;
  // Each metric's interval columns the table has (low, high), in the order to try.
  std::vector<std::vector<std::pair<size_t, size_t>>> intervals;
  // The swept columns the rows of a group must agree on (x and hue may differ by design).
  std::vector<size_t> must_agree;
};

// The columns, Error(kInput) for an unknown one.
PlotColumns plot_columns(const CsvTable& t, const PlotSpec& spec) {
  PlotColumns c;
  for (const std::string& m : spec.metrics) c.metrics.push_back(column_index(t, m, "--metric"));
  c.x = column_index(t, spec.x, "--x");
  if (!spec.hue.empty()) c.hue = column_index(t, spec.hue, "--hue");
  if (std::find(t.columns.begin(), t.columns.end(), "status") != t.columns.end()) {
    c.status = column_index(t, "status", "status");
  }
  auto optional_column = [&](const char* name) -> std::optional<size_t> {
    auto it = std::find(t.columns.begin(), t.columns.end(), name);
    if (it == t.columns.end()) return std::nullopt;
    return static_cast<size_t>(it - t.columns.begin());
  };
  c.shared = optional_column("cpu_shared");
  c.target_met = optional_column("target_met");
  c.intervals.resize(c.metrics.size());
  for (size_t m = 0; m < c.metrics.size(); ++m) {
    for (const auto& [low, high] : interval_columns(spec.metrics[m])) {
      std::optional<size_t> l = optional_column(low.c_str()), h = optional_column(high.c_str());
      if (l && h) c.intervals[m].emplace_back(*l, *h);
    }
  }
  for (const std::string& v : spec.varying) {
    if (v == spec.x || v == spec.hue) continue;
    auto it = std::find(t.columns.begin(), t.columns.end(), v);
    if (it != t.columns.end()) c.must_agree.push_back(static_cast<size_t>(it - t.columns.begin()));
  }
  return c;
}

// Key: (metric's position, x, hue), in the order first seen within each metric.
using Key = std::tuple<size_t, std::string, std::string>;

// The values of the ok rows by group, and what the rows held of each metric.
struct Groups {
  explicit Groups(size_t metrics)
      : any_value(metrics, false), any_text(metrics, false), any_nonfinite(metrics, false) {}
  std::map<Key, std::vector<double>> values;
  std::map<Key, double> half_width;  // the group's one row's 95% half-width, where it has one
  std::map<Key, std::set<std::string>> notes;
  std::vector<Key> order;
  // Each group's first row (by x and hue).
  std::map<std::pair<std::string, std::string>, const std::vector<std::string>*> first_row;
  std::vector<bool> any_value, any_text, any_nonfinite;
};

// The rows of a group must agree on every swept column but x and hue: their mean would mix
// configurations otherwise (Error(kInput) naming the column).
void check_same_configuration(const CsvTable& t, const PlotSpec& spec, const PlotColumns& c,
                              const std::vector<std::string>& row, Groups* g) {
  std::pair<std::string, std::string> group{row[c.x], c.hue ? row[*c.hue] : std::string()};
  auto [first, fresh] = g->first_row.emplace(group, &row);
  for (size_t k : c.must_agree) {
    if (fresh || (*first->second)[k] == row[k]) continue;
    std::string where =
        spec.x + "=" + row[c.x] + (c.hue ? ", " + spec.hue + "=" + row[*c.hue] : "");
    throw Error::input(
        Mark::in("--x " + spec.x), "",
        "the rows with " + where + " differ in " + t.columns[k] + " (" + (*first->second)[k] +
            " and " + row[k] + "): their mean would mix configurations",
        spec.hue.empty() ? "add --hue " + t.columns[k] + ", or plot the rows of one " +
                               t.columns[k] + " at a time"
                         : "plot the rows of one " + t.columns[k] +
                               " at a time (bench-extract -i only those points), or make it "
                               "--hue");
  }
}

// An ok row's values into their groups; whether it has a value of every metric.
bool add_row(const PlotColumns& c, const std::vector<std::string>& row, Groups* g) {
  bool complete = true;
  for (size_t m = 0; m < c.metrics.size(); ++m) {
    const std::string& cell = row[c.metrics[m]];
    std::optional<double> v = number(cell);
    if (!v) {
      if (is_nonfinite_number(cell)) {
        g->any_nonfinite[m] = true;
      } else if (!cell.empty()) {
        g->any_text[m] = true;
      }
      complete = false;
      continue;
    }
    g->any_value[m] = true;
    Key key{m, row[c.x], c.hue ? row[*c.hue] : std::string()};
    if (g->values.find(key) == g->values.end()) g->order.push_back(key);
    g->values[key].push_back(*v);
    for (const auto& [low_column, high_column] : c.intervals[m]) {
      std::optional<double> low = number(row[low_column]), high = number(row[high_column]);
      if (low && high && *high >= *low) {
        g->half_width[key] = (*high - *low) / 2;
        break;
      }
    }
    if (c.shared) {
      std::optional<double> share = number(row[*c.shared]);
      if (share && *share > kSharedCpuThreshold) g->notes[key].insert("shared");
    }
    if (c.target_met && row[*c.target_met] == "false") g->notes[key].insert("imprecise");
  }
  return complete;
}

// A metric with no value to plot is an error saying why: text, only nan or inf, or nothing.
void refuse_empty_metrics(const CsvTable& t, const PlotSpec& spec, const PlotColumns& c,
                          const Groups& g) {
  for (size_t m = 0; m < c.metrics.size(); ++m) {
    if (g.any_value[m]) continue;
    Mark where = Mark::in("--metric " + spec.metrics[m]);
    if (g.any_text[m]) {
      std::optional<std::string> other = numeric_metric_column(t, c.status, c.metrics[m]);
      throw Error::input(
          where, "", "is not a numeric column",
          other ? "choose a column of numbers, such as " + *other : "choose a column of numbers");
    }
    if (g.any_nonfinite[m]) {
      throw Error::input(where, "",
                         "nothing to plot: in the rows with status ok its every value is nan or "
                         "inf (a metric the runs could not define)",
                         "choose another metric, or see the points' reasons in the CSV");
    }
    throw Error::input(where, "", "nothing to plot: no row with status ok has a value",
                       "check the CSV's status column (bench-extract)");
  }
}

// Each group's mean and interval, metric by metric in the order first seen.
std::vector<PlotPoint> group_means(const PlotSpec& spec, Groups* g) {
  std::stable_sort(g->order.begin(), g->order.end(),
                   [](const Key& a, const Key& b) { return std::get<0>(a) < std::get<0>(b); });
  std::vector<PlotPoint> points;
  for (const Key& key : g->order) {
    const std::vector<double>& values = g->values[key];
    // The 95% interval's half width, as the tables show it: one row's own where it has one;
    // several rows (repeats), their mean's (bench-extract --group-repeats' interval).
    auto one = g->half_width.find(key);
    double error = 0;
    if (values.size() == 1) {
      if (one != g->half_width.end()) error = one->second;
    } else {
      const Estimate e = repeats_estimate(values);
      if (e.has_interval()) error = (e.high - e.low) / 2;
    }
    std::vector<std::string> said(g->notes[key].begin(), g->notes[key].end());
    points.push_back({spec.metrics[std::get<0>(key)], std::get<1>(key), std::get<2>(key),
                      mean(values), error, values.size(), join(said, ", ")});
  }
  return points;
}

}  // namespace

std::vector<PlotPoint> plot_points(const CsvTable& t, const PlotSpec& spec, size_t* left_out) {
  if (spec.metrics.empty()) {
    throw Error::input(Mark::in("--metric"), "", "is missing", "name a column to plot");
  }
  const PlotColumns c = plot_columns(t, spec);
  Groups g(c.metrics.size());
  *left_out = 0;
  for (const auto& row : t.rows) {
    if (c.status && row[*c.status] != "ok") {
      ++*left_out;
      continue;
    }
    check_same_configuration(t, spec, c, row, &g);
    if (!add_row(c, row, &g)) ++*left_out;
  }
  refuse_empty_metrics(t, spec, c, g);
  return group_means(spec, &g);
}

}  // namespace sweepbench
