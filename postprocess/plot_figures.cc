// bench-plot's figures of a whole table: the Pareto front and the curve of one metric against
// another (a bench-extract CSV), and the changes of a comparison (a bench-compare CSV). Every text
// reaches the script through gp_string and the data file through gp_data_text (plot_text.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "metrics/pareto.h"
#include "metrics/statistics.h"
#include "metrics/summary.h"
#include "postprocess/plot.h"
#include "postprocess/plot_text.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

// Colours by position (gnuplot's own set is too pale for hollow points), then gnuplot's.
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};

std::string colour(size_t i) {
  return std::string("rgb ") + gp_string(kColours[i % (sizeof kColours / sizeof *kColours)]);
}

std::string axis_label(const PlotSpec& spec, const std::string& metric) {
  auto it = spec.units.find(metric);
  bool unit = it != spec.units.end() && !it->second.first.empty();
  return metric + (unit ? " (" + it->second.first + ")" : "");
}

double factor_of(const PlotSpec& spec, const std::string& metric) {
  auto it = spec.units.find(metric);
  return it == spec.units.end() ? 1.0 : it->second.second;
}

// The 95% interval of the mean of a point's rows (its repeats), as bench-extract --group-repeats
// gives it (statistics.h's repeats_estimate); the mean itself at both ends when it has none.
std::pair<double, double> mean_interval(const std::vector<double>& v) {
  const Estimate e = repeats_estimate(v);
  if (e.has_interval()) return {e.low, e.high};
  const double m = mean(v);
  return {m, m};
}

// What the error bars are, on the figure (as bar figures say it).
const char* const kIntervalsLabel =
    "set label \"error bars: 95% intervals\" at screen 0.01, screen 0.02 font ',8' noenhanced\n";

std::optional<size_t> find_column(const CsvTable& t, const std::string& name) {
  auto it = std::find(t.columns.begin(), t.columns.end(), name);
  if (it == t.columns.end()) return std::nullopt;
  return static_cast<size_t>(it - t.columns.begin());
}

// A figure of one metric against another (pareto, curve): the columns, and each axis's units
// scaled for its own values (spec: y's, with x's added; x_units: x's alone).
struct MetricAxes {
  std::string y_name, x_name;
  size_t y = 0, x = 0;
  std::optional<size_t> hue;
  PlotSpec spec, x_units;
};

MetricAxes metric_axes(const CsvTable& t, const PlotSpec& spec_in, const std::string& what) {
  if (spec_in.metrics.size() != 1) {
    throw Error::input(Mark::in("--metric " + join(spec_in.metrics, ",")), "",
                       what + " has one metric on each axis",
                       "give one --metric (y) and --x (the other metric)");
  }
  MetricAxes a;
  a.y_name = spec_in.metrics.front();
  a.x_name = spec_in.x;
  a.y = column_index(t, a.y_name, "--metric");
  a.x = column_index(t, a.x_name, "--x");
  if (!spec_in.hue.empty()) a.hue = column_index(t, spec_in.hue, "--hue");
  a.spec = spec_in;
  a.spec.metrics = {a.y_name};
  describe_figure(t, &a.spec);
  a.x_units = spec_in;
  a.x_units.metrics = {a.x_name};
  describe_figure(t, &a.x_units);
  a.spec.units[a.x_name] = a.x_units.units[a.x_name];
  a.spec.metrics = spec_in.metrics;
  return a;
}

}  // namespace

TableFigure pareto_figure(const CsvTable& t, const PlotSpec& spec_in,
                          const std::string& data_path) {
  const MetricAxes axes = metric_axes(t, spec_in, "a pareto figure");
  const std::string &y_name = axes.y_name, &x_name = axes.x_name;
  const size_t y = axes.y, x = axes.x;
  const std::optional<size_t> hue = axes.hue;
  const PlotSpec& spec = axes.spec;
  const PlotSpec& x_units = axes.x_units;
  // Each axis's direction, as bench-extract --pareto reads it (metrics/summary.h).
  auto unit_of = [](const PlotSpec& s, const std::string& m) {
    auto it = s.declared_units.find(m);
    return it == s.declared_units.end() ? std::string() : it->second;
  };
  const bool y_up = higher_is_better(y_name, unit_of(spec, y_name));
  const bool x_up = higher_is_better(x_name, unit_of(x_units, x_name));

  std::optional<size_t> status = find_column(t, "status");
  // As bench-extract --pareto reads them (metrics/summary.h).
  // Each metric's interval columns the table has, looked up once.
  auto interval_positions = [&](const std::string& m) {
    std::vector<std::pair<size_t, size_t>> out;
    for (const auto& [low, high] : interval_columns(m)) {
      std::optional<size_t> lo = find_column(t, low), hi = find_column(t, high);
      if (lo && hi) out.emplace_back(*lo, *hi);
    }
    return out;
  };
  const auto x_interval = interval_positions(x_name), y_interval = interval_positions(y_name);
  auto interval = [&](const std::vector<std::string>& row,
                      const std::vector<std::pair<size_t, size_t>>& positions, double v) {
    for (const auto& [lo, hi] : positions) {
      std::optional<double> l = number(row[lo]), h = number(row[hi]);
      if (l && h) return std::pair{*l, *h};
    }
    return std::pair{v, v};
  };
  // The configuration a point stands for: the keys that vary, but the hue's.
  std::vector<size_t> label_columns;
  for (const std::string& c : spec.varying) {
    if (c == spec.hue) continue;
    if (std::optional<size_t> i = find_column(t, c)) label_columns.push_back(*i);
  }
  std::optional<size_t> tag = find_column(t, "tag");
  // A table of serve points' load levels (bench-extract --series levels): each point of the
  // figure is one level of a configuration, and says which.
  std::optional<size_t> level;
  if (find_column(t, "level_index")) level = find_column(t, "level");
  // A configuration's repeats are one point of the figure (their means, with the 95% interval of
  // each mean), not a point each with its label on top of the others'. The rows agree on every
  // key that varies; a table without such keys is one configuration only when it says its rows
  // are repeats (a repeat column), else each row is a point.
  const bool repeats = !label_columns.empty() || find_column(t, "repeat").has_value();

  struct Dot {
    double x, x_low, x_high, y, y_low, y_high;
    std::string group, label;
    std::vector<double> xs, ys;
  };
  std::vector<Dot> dots;
  std::map<std::string, size_t> dot_of;
  std::vector<std::string> group_order;
  size_t left_out = 0;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::vector<std::string>& row = t.rows[r];
    std::optional<double> xv = number(row[x]), yv = number(row[y]);
    if ((status && row[*status] != "ok") || !xv || !yv) {
      ++left_out;
      continue;
    }
    std::string group = hue ? row[*hue] : std::string();
    std::string key = group + '\x1e';
    if (!repeats) key += std::to_string(r);
    for (size_t c : label_columns) key += row[c] + '\x1f';
    if (level) key += row[*level];
    auto [it, fresh] = dot_of.emplace(key, dots.size());
    if (fresh) {
      auto [xl, xh] = interval(row, x_interval, *xv);
      auto [yl, yh] = interval(row, y_interval, *yv);
      Dot d{*xv, xl, xh, *yv, yl, yh, group, "", {}, {}};
      std::vector<std::string> parts;
      for (size_t c : label_columns) parts.push_back(short_key(t.columns[c]) + "=" + row[c]);
      if (level) parts.push_back("level=" + row[*level]);
      d.label = parts.empty() ? (tag && !repeats ? row[*tag] : std::string()) : join(parts, ", ");
      if (std::find(group_order.begin(), group_order.end(), group) == group_order.end()) {
        group_order.push_back(group);
      }
      dots.push_back(std::move(d));
    }
    dots[it->second].xs.push_back(*xv);
    dots[it->second].ys.push_back(*yv);
  }
  // A point of several rows: their means and the intervals of the means (a single row keeps its
  // own interval, as its table shows it).
  size_t fewest = SIZE_MAX, most = 0;
  std::vector<std::vector<Span>> spans;
  std::vector<std::string> groups;
  for (Dot& d : dots) {
    fewest = std::min(fewest, d.xs.size());
    most = std::max(most, d.xs.size());
    if (d.xs.size() > 1) {
      d.x = mean(d.xs);
      d.y = mean(d.ys);
      std::tie(d.x_low, d.x_high) = mean_interval(d.xs);
      std::tie(d.y_low, d.y_high) = mean_interval(d.ys);
    }
    spans.push_back(
        {oriented_span(y_up, d.y, d.y_low, d.y_high), oriented_span(x_up, d.x, d.x_low, d.x_high)});
    groups.push_back(d.group);
  }
  if (dots.empty()) {
    throw Error::input(Mark::in("--metric " + y_name), "",
                       "nothing to plot: no row with status ok has numbers in both " + y_name +
                           " and " + x_name,
                       "check the CSV's status column and the two metrics (bench-extract)");
  }
  std::vector<bool> front = pareto_front(spans, groups);

  // One block of the data file per group and side (dominated, front), blocks apart by two blank
  // lines (gnuplot's `index`); the front in the order of x, so that its line runs along it.
  const double fx = factor_of(spec, x_name), fy = factor_of(spec, y_name);
  std::ostringstream data;
  data << "# x\tx_low\tx_high\ty\ty_low\ty_high\tlabel\n";
  struct Block {
    size_t index;
    size_t group;
    bool front;
  };
  std::vector<Block> blocks;
  size_t on_front = 0;
  for (size_t g = 0; g < group_order.size(); ++g) {
    for (bool side : {false, true}) {
      std::vector<const Dot*> members;
      for (size_t i = 0; i < dots.size(); ++i) {
        if (dots[i].group == group_order[g] && front[i] == side) members.push_back(&dots[i]);
      }
      if (members.empty()) continue;
      if (side) on_front += members.size();
      std::stable_sort(members.begin(), members.end(),
                       [](const Dot* a, const Dot* b) { return a->x < b->x; });
      if (!blocks.empty()) data << "\n\n";
      blocks.push_back({blocks.size(), g, side});
      for (const Dot* d : members) {
        data << format_float_repr(d->x * fx) << "\t" << format_float_repr(d->x_low * fx) << "\t"
             << format_float_repr(d->x_high * fx) << "\t" << format_float_repr(d->y * fy) << "\t"
             << format_float_repr(d->y_low * fy) << "\t" << format_float_repr(d->y_high * fy)
             << "\t" << gp_data_text(d->label) << "\n";
      }
    }
  }

  std::ostringstream s;
  s << "# Written by bench-plot: "
    << one_line("the Pareto front of " + y_name + " against " + x_name +
                (spec.hue.empty() ? "" : " by " + spec.hue))
    << ". Edit and run: gnuplot THIS_FILE\n";
  s << script_preamble(spec, "Pareto front: " + y_name + " against " + x_name);
  s << "set xlabel " << gp_string(axis_label(spec, x_name)) << " noenhanced\n";
  s << "set ylabel " << gp_string(axis_label(spec, y_name)) << " noenhanced\n";
  s << "set key outside right top noenhanced\nset grid\nset offsets graph 0.05, graph 0.2, "
       "graph 0.08, graph 0.05\n";
  s << kIntervalsLabel;
  const std::string file = gp_string(data_path);
  std::vector<std::string> clauses;
  for (const Block& b : blocks) {
    const std::string& g = group_order[b.group];
    std::string name = spec.hue.empty() ? std::string(b.front ? "front" : "dominated")
                                        : (spec.hue_labels.count(g) != 0 ? spec.hue_labels.at(g)
                                                                         : spec.hue + "=" + g);
    const std::string lc = spec.hue.empty() && !b.front ? "rgb 'gray55'" : colour(b.group);
    const std::string at = file + " index " + std::to_string(b.index);
    if (!b.front) {
      clauses.push_back(at + " using 1:4:2:3:5:6 with xyerrorbars pt 6 ps 1.2 lc " + lc +
                        (spec.hue.empty() ? " title " + gp_string(name) : " notitle"));
      continue;
    }
    clauses.push_back(at + " using 1:4 with lines lw 2 lc " + lc + " notitle");
    clauses.push_back(at + " using 1:4:2:3:5:6 with xyerrorbars pt 7 ps 1.2 lc " + lc +
                      " title " + gp_string(name));
    clauses.push_back(at + " using 1:4:7 with labels offset char 0.8,0.8 left font ',8' tc " + lc +
                      " noenhanced notitle");
  }
  s << "plot " << join(clauses, ", \\\n    ") << "\n";

  TableFigure out;
  out.script = s.str();
  out.data = data.str();
  out.said =
      plural(dots.size(), "point") +
      (most > 1 ? " (each the mean of " +
                      (fewest == most ? std::to_string(most)
                                      : std::to_string(fewest) + " to " + std::to_string(most)) +
                      " rows, with its 95% interval)"
                : "") +
      ", " + std::to_string(on_front) + " on the front of " + y_name + " against " + x_name +
      (spec.hue.empty() ? "" : " (per " + spec.hue + ")") +
      (left_out ? ", " + plural(left_out, "row") + " left out (not ok or no value)" : "");
  return out;
}

TableFigure curve_figure(const CsvTable& t, const PlotSpec& spec_in, const std::string& data_path) {
  MetricAxes axes = metric_axes(t, spec_in, "a curve");
  const std::string &y_name = axes.y_name, &x_name = axes.x_name;
  const size_t y = axes.y, x = axes.x;
  const std::optional<size_t> hue = axes.hue;
  PlotSpec& spec = axes.spec;

  // A point of the curve is the rows that agree on every key that varies (their repeats) and,
  // in a table of serve levels (bench-extract --series levels), on the level; a line joins a
  // hue's points in the order of the level, else of x.
  std::optional<size_t> status = find_column(t, "status"), level;
  if (find_column(t, "level_index")) level = find_column(t, "level");
  std::vector<size_t> keys;
  for (const std::string& c : spec.varying) {
    if (std::optional<size_t> i = find_column(t, c)) keys.push_back(*i);
  }
  if (level) keys.push_back(*level);
  struct Dot {
    std::string group, label;
    std::vector<double> xs, ys;
    std::optional<double> order;  // the level
  };
  std::vector<Dot> dots;
  std::map<std::string, size_t> dot_of;
  std::vector<std::string> group_order;
  size_t left_out = 0;
  for (const std::vector<std::string>& row : t.rows) {
    std::optional<double> xv = number(row[x]), yv = number(row[y]);
    if ((status && row[*status] != "ok") || !xv || !yv) {
      ++left_out;
      continue;
    }
    std::string key, group = hue ? row[*hue] : std::string();
    for (size_t c : keys) key += row[c] + '\x1f';
    auto [it, fresh] = dot_of.emplace(group + '\x1e' + key, dots.size());
    if (fresh) {
      std::vector<std::string> parts;
      for (size_t c : keys) {
        if (!hue || c != *hue) parts.push_back(short_key(t.columns[c]) + "=" + row[c]);
      }
      dots.push_back(
          {group, join(parts, ", "), {}, {}, level ? number(row[*level]) : std::nullopt});
      if (std::find(group_order.begin(), group_order.end(), group) == group_order.end()) {
        group_order.push_back(group);
      }
    }
    dots[it->second].xs.push_back(*xv);
    dots[it->second].ys.push_back(*yv);
  }
  if (dots.empty()) {
    throw Error::input(
        Mark::in("--metric " + y_name), "",
        "nothing to plot: no row with status ok has numbers in both " + y_name + " and " + x_name,
        "check the CSV's status column and the two metrics (bench-extract)");
  }

  // One block of the data file per hue (gnuplot's `index`): each point's means, with the 95%
  // interval of each mean over its rows (repeats) as error bars in both directions, as
  // bench-extract --group-repeats gives them.
  const double fx = factor_of(spec, x_name), fy = factor_of(spec, y_name);
  std::ostringstream data;
  data << "# x\tx_low\tx_high\ty\ty_low\ty_high\tlabel\n";
  size_t fewest = SIZE_MAX, most = 0;
  for (size_t g = 0; g < group_order.size(); ++g) {
    std::vector<const Dot*> members;
    for (const Dot& d : dots) {
      if (d.group == group_order[g]) members.push_back(&d);
    }
    std::stable_sort(members.begin(), members.end(), [&](const Dot* a, const Dot* b) {
      if (a->order && b->order) return *a->order < *b->order;
      return mean(a->xs) < mean(b->xs);
    });
    if (g > 0) data << "\n\n";
    for (const Dot* d : members) {
      const double mx = mean(d->xs), my = mean(d->ys);
      const auto [xl, xh] = mean_interval(d->xs);
      const auto [yl, yh] = mean_interval(d->ys);
      fewest = std::min(fewest, d->xs.size());
      most = std::max(most, d->xs.size());
      data << format_float_repr(mx * fx) << "\t" << format_float_repr(xl * fx) << "\t"
           << format_float_repr(xh * fx) << "\t" << format_float_repr(my * fy) << "\t"
           << format_float_repr(yl * fy) << "\t" << format_float_repr(yh * fy) << "\t"
           << gp_data_text(d->label) << "\n";
    }
  }

  std::ostringstream s;
  s << "# Written by bench-plot: "
    << one_line("the curve of " + y_name + " against " + x_name +
                (spec.hue.empty() ? "" : " by " + spec.hue))
    << ". Edit and run: gnuplot THIS_FILE\n";
  s << script_preamble(spec, y_name + " against " + x_name);
  s << "set xlabel " << gp_string(axis_label(spec, x_name)) << " noenhanced\n";
  s << "set ylabel " << gp_string(axis_label(spec, y_name)) << " noenhanced\n";
  s << "set key outside right top noenhanced\nset grid\nset yrange [0:*]\nset xrange [0:*]\n"
       "set offsets graph 0.02, graph 0.15, graph 0.08, 0\n";
  if (most > 1) s << kIntervalsLabel;
  const std::string file = gp_string(data_path);
  std::vector<std::string> clauses;
  for (size_t g = 0; g < group_order.size(); ++g) {
    const std::string& h = group_order[g];
    const std::string name = spec.hue.empty()                ? y_name
                             : spec.hue_labels.count(h) != 0 ? spec.hue_labels.at(h)
                                                             : spec.hue + "=" + h;
    const std::string at = file + " index " + std::to_string(g);
    clauses.push_back(at + " using 1:4 with lines lw 2 lc " + colour(g) + " notitle");
    clauses.push_back(at + " using 1:4:2:3:5:6 with xyerrorbars pt 7 ps 1.1 lc " + colour(g) +
                      " title " + gp_string(name));
    clauses.push_back(at + " using 1:4:7 with labels offset char 0.8,0.6 left font ',8' tc " +
                      colour(g) + " noenhanced notitle");
  }
  s << "plot " << join(clauses, ", \\\n    ") << "\n";

  TableFigure out;
  out.script = s.str();
  out.data = data.str();
  out.said = plural(dots.size(), "point") + " of " + y_name + " against " + x_name +
             (spec.hue.empty() ? "" : ", one line per " + spec.hue) + ", each the mean of " +
             (fewest == most ? std::to_string(fewest)
                             : std::to_string(fewest) + " to " + std::to_string(most)) +
             (most == 1 ? " row" : " rows") +
             (left_out ? ", " + plural(left_out, "row") + " left out (not ok or no value)" : "");
  return out;
}

TableFigure change_figure(const CsvTable& t, const PlotSpec& spec_in,
                          const std::string& data_path) {
  const size_t point = column_index(t, "point", "--kind change: the column");
  const size_t metric = column_index(t, "metric", "--kind change: the column");
  const size_t change = column_index(t, "change", "--kind change: the column");
  std::optional<size_t> low = find_column(t, "change_ci_low"),
                        high = find_column(t, "change_ci_high"),
                        verdict = find_column(t, "verdict");
  std::vector<std::string> in_table, points;
  bool geomean = false;
  for (const std::vector<std::string>& row : t.rows) {
    if (std::find(in_table.begin(), in_table.end(), row[metric]) == in_table.end()) {
      in_table.push_back(row[metric]);
    }
    if (row[point] == "geomean") {
      geomean = true;
    } else if (std::find(points.begin(), points.end(), row[point]) == points.end()) {
      points.push_back(row[point]);
    }
  }
  for (const std::string& m : spec_in.metrics) {
    bool any = std::any_of(t.rows.begin(), t.rows.end(),
                           [&](const std::vector<std::string>& r) { return r[metric] == m; });
    if (!any) {
      throw Error::input(Mark::in("--metric " + m), "", "the comparison has no metric '" + m + "'",
                         "it has: " + join(in_table, ", "));
    }
  }
  const std::vector<std::string> metrics = spec_in.metrics.empty() ? in_table : spec_in.metrics;
  // Verdicts in a fixed order and colour; one block of the data file per (verdict, metric).
  const std::vector<std::pair<std::string, std::string>> kVerdicts = {
      {"worse", "#d62728"}, {"better", "#2ca02c"}, {"~", "#7f7f7f"}, {"inconclusive", "#ff7f0e"}};
  const size_t slots = points.size() + (geomean ? 1 : 0);
  const double width = 0.7;
  auto x_of = [&](size_t p, size_t m) {
    double step = metrics.size() > 1 ? width / static_cast<double>(metrics.size() - 1) : 0;
    return static_cast<double>(p) - (metrics.size() > 1 ? width / 2 : 0) +
           step * static_cast<double>(m);
  };
  std::ostringstream data;
  data << "# x\tchange_percent\tlow_percent\thigh_percent\n";
  struct Block {
    size_t index;
    std::string verdict;  // "" for the geomean rows
    size_t metric;
  };
  std::vector<Block> blocks;
  size_t drawn = 0;
  for (size_t v = 0; v <= kVerdicts.size(); ++v) {
    for (size_t m = 0; m < metrics.size(); ++m) {
      std::ostringstream rows;
      for (const std::vector<std::string>& row : t.rows) {
        if (row[metric] != metrics[m]) continue;
        const bool summary = row[point] == "geomean";
        if ((v == kVerdicts.size()) != summary) continue;
        if (!summary && (verdict ? row[*verdict] : "inconclusive") != kVerdicts[v].first) continue;
        std::optional<double> c = number(row[change]);
        if (!c) continue;
        size_t p = summary ? points.size()
                           : static_cast<size_t>(
                                 std::find(points.begin(), points.end(), row[point]) -
                                 points.begin());
        std::optional<double> l = low ? number(row[*low]) : std::nullopt;
        std::optional<double> h = high ? number(row[*high]) : std::nullopt;
        rows << format_float_repr(x_of(p, m)) << "\t" << format_float_repr(*c * 100) << "\t"
             << format_float_repr(l.value_or(*c) * 100) << "\t"
             << format_float_repr(h.value_or(*c) * 100) << "\n";
        if (!summary) ++drawn;
      }
      if (rows.str().empty()) continue;
      if (!blocks.empty()) data << "\n\n";
      data << rows.str();
      blocks.push_back({blocks.size(), v < kVerdicts.size() ? kVerdicts[v].first : "", m});
    }
  }
  if (blocks.empty()) {
    throw Error::input(Mark::in("--kind change"), "",
                       "nothing to plot: no row has a number in the change column",
                       "give bench-compare's CSV: bench-compare OLD NEW --format csv -o cmp.csv");
  }

  PlotSpec spec = spec_in;
  std::ostringstream s;
  s << "# Written by bench-plot: " << one_line("the changes of " + join(metrics, ", "))
    << ". Edit and run: gnuplot THIS_FILE\n";
  // bench-compare's intervals are simultaneous over its comparisons: their level is its
  // ci_level column (99.6% for 12 comparisons at 95%), not 95%.
  std::string level = "interval";
  if (std::optional<size_t> c = find_column(t, "ci_level")) {
    for (const std::vector<std::string>& row : t.rows) {
      std::optional<double> v = number(row[*c]);
      if (!v || row[point] == "geomean") continue;
      char text[48];
      std::snprintf(text, sizeof(text), "%.3g%% intervals", *v * 100);
      level = text;
      break;
    }
  }
  s << script_preamble(spec, "change of the candidate against the baseline (" + level + ")");
  s << "set ylabel " << gp_string("change (%)") << " noenhanced\n";
  s << "set xlabel " << gp_string(points.size() == 1 ? "point" : "points") << " noenhanced\n";
  // The points' names lean when they would not fit side by side (a plot about 580 pixels wide,
  // about 8 a character), with room at the left for the first.
  size_t widest = 0;
  for (const std::string& p : points) widest = std::max(widest, p.size());
  const bool lean = static_cast<double>(widest * 8) > 0.8 * 580 / static_cast<double>(slots);
  std::vector<std::string> tics;
  for (size_t p = 0; p < points.size(); ++p) tics.push_back(gp_string(points[p]) + " " +
                                                            std::to_string(p));
  if (geomean) tics.push_back(gp_string("geomean") + " " + std::to_string(points.size()));
  s << "set xtics (" << join(tics, ", ") << ") noenhanced"
    << (lean ? " rotate by 30 right" : "") << "\n";
  if (lean) s << "set lmargin " << std::min<size_t>(40, 4 + widest * 3 / 4) << "\n";
  s << "set xrange [-0.8:" << format_float_repr(static_cast<double>(slots) - 0.2) << "]\n";
  s << "set grid ytics\nset key outside right top noenhanced\nset offsets 0, 0, graph 0.1, "
       "graph 0.1\n";
  // An interval far wider than every change (three noisy repeats of a serve level's latency give
  // +300000%) would flatten the others into the line at 0: the axis then stops at four times the
  // largest change (at least 10%), and its ends cut such intervals.
  double largest = 0;
  std::vector<double> values;  // in %: each change and interval end drawn
  for (const std::vector<std::string>& row : t.rows) {
    if (std::find(metrics.begin(), metrics.end(), row[metric]) == metrics.end()) continue;
    std::optional<double> c = number(row[change]);
    if (!c) continue;
    largest = std::max(largest, std::fabs(*c) * 100);
    values.push_back(*c * 100);
    for (std::optional<size_t> end : {low, high}) {
      if (std::optional<double> v = end ? number(row[*end]) : std::nullopt)
        values.push_back(*v * 100);
    }
  }
  const double bound = std::max(4 * largest, 10.0);
  if (std::any_of(values.begin(), values.end(), [&](double v) { return std::fabs(v) > bound; })) {
    double lo = 0, hi = 0;
    for (double v : values) {
      lo = std::min(lo, std::max(v, -bound));
      hi = std::max(hi, std::min(v, bound));
    }
    s << "set yrange [" << format_float_repr(lo) << ":" << format_float_repr(hi) << "]\n";
    s << "set label " << gp_string("intervals cut at the axis") << " at graph 0.01, graph 0.97 "
      << "left font ',8' noenhanced\n";
  }
  // The line of no change.
  s << "set arrow from graph 0, first 0 to graph 1, first 0 nohead dt 2 lc rgb 'gray30'\n";
  const std::string file = gp_string(data_path);
  std::vector<std::string> clauses;
  // The legend: the verdicts' colours, then (for several metrics) their point shapes.
  std::vector<std::string> seen;
  for (const Block& b : blocks) {
    if (b.verdict.empty() || std::find(seen.begin(), seen.end(), b.verdict) != seen.end()) continue;
    seen.push_back(b.verdict);
  }
  for (const auto& [name, rgb] : kVerdicts) {
    if (std::find(seen.begin(), seen.end(), name) == seen.end()) continue;
    clauses.push_back("NaN with points pt 7 lc rgb " + gp_string(rgb) + " title " +
                      gp_string(name));
  }
  // Each metric's point shape, filled; the geomean's is the same shape hollow (gnuplot's next).
  auto shape = [](size_t m) { return std::vector<int>{7, 5, 9, 11, 13}[m % 5]; };
  if (metrics.size() > 1) {
    for (size_t m = 0; m < metrics.size(); ++m) {
      clauses.push_back("NaN with points pt " + std::to_string(shape(m)) + " lc rgb 'black' title " +
                        gp_string(metrics[m]));
    }
  }
  if (geomean) {
    clauses.push_back("NaN with points pt " + std::to_string(shape(0) - 1) +
                      " lc rgb 'black' title " + gp_string("geomean (hollow)"));
  }
  for (const Block& b : blocks) {
    const std::string at = file + " index " + std::to_string(b.index);
    if (b.verdict.empty()) {
      clauses.push_back(at + " using 1:2 with points pt " + std::to_string(shape(b.metric) - 1) +
                        " ps 1.5 lw 1.5 lc rgb 'black' notitle");
      continue;
    }
    auto rgb = std::find_if(kVerdicts.begin(), kVerdicts.end(),
                            [&](const auto& v) { return v.first == b.verdict; });
    clauses.push_back(at + " using 1:2:3:4 with yerrorbars pt " +
                      std::to_string(shape(b.metric)) +
                      " ps 1.2 lw 1.5 lc rgb " + gp_string(rgb->second) + " notitle");
  }
  s << "plot " << join(clauses, ", \\\n    ") << "\n";

  TableFigure out;
  out.script = s.str();
  out.data = data.str();
  out.said = plural(drawn, "change") + " of " + join(metrics, ", ") + " over " +
             plural(points.size(), "point") + (geomean ? " and the geomean" : "");
  return out;
}

}  // namespace sweepbench
