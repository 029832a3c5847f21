#include "postprocess/report_sweep.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "config/config.h"
#include "config/table.h"
#include "metrics/pareto.h"
#include "metrics/summary.h"
#include "os/fs.h"
#include "postprocess/discover.h"
#include "postprocess/extract.h"
#include "postprocess/people_table.h"
#include "postprocess/point_row.h"
#include "postprocess/reader_pool.h"
#include "postprocess/report_html.h"
#include "postprocess/tool_main.h"
#include "text/error.h"
#include "text/exit_codes.h"
#include "text/text.h"
#include "text/units.h"

namespace sweepbench {

namespace fs = std::filesystem;
namespace po = boost::program_options;
using Row = std::map<std::string, Value>;

namespace {

const Value* cell(const Row& row, const std::string& column) {
  auto it = row.find(column);
  return it == row.end() || it->second.is_null() ? nullptr : &it->second;
}

double number(const Row& row, const std::string& column) {
  const Value* v = cell(row, column);
  return v && v->is_number() ? v->as_float() : kNoValue;
}

std::string text(const Row& row, const std::string& column) {
  const Value* v = cell(row, column);
  return v ? cell_text(*v, TableFormat::kText, true) : "";
}

// A metric's unit as a figure's axis shows it, and the factor from the row's value to it: a
// command's declared unit as it is, else as bench-plot reads the metric's name (text/units.h:
// times in s, ms or µs and sizes in KiB, MiB or GiB as the largest value needs).
struct Unit {
  std::string name;
  double factor = 1;
};

Unit unit_of(const std::vector<Row>& rows, const std::string& metric) {
  double largest = 0;
  for (const Row& r : rows) {
    const double v = number(r, metric);
    if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
    const Value* units = cell(r, "units");
    const Value* u = units && units->is_map() ? units->find(metric) : nullptr;
    if (u && u->is_string() && !u->as_string().empty()) return {u->as_string(), 1};
  }
  std::string plain;
  const UnitKind kind = metric_unit_kind(metric, &plain);
  auto [name, factor] = scaled_unit(kind, largest, plain);
  return {name, factor};
}

std::string axis_label(const std::string& metric, const Unit& u) {
  return u.name.empty() ? metric : metric + " (" + u.name + ")";
}

// The 95% interval of one row's metric where it has one (metrics/summary.h's columns).
bool interval_of(const Row& row, const std::string& metric, double* low, double* high) {
  for (const auto& [lo, hi] : interval_columns(metric)) {
    const double a = number(row, lo), b = number(row, hi);
    if (std::isfinite(a) && std::isfinite(b)) {
      *low = a, *high = b;
      return true;
    }
  }
  return false;
}

bool is_config_key(const std::string& column) {
  return column == "scenario" || is_config_column(column);
}

// The keys that vary over the rows, the sweeps' axes first; a key that varies exactly as one
// before it (eval.micro_batch beside train.micro_batch) is left out.
std::vector<std::string> varying_keys(const ExtractTable& table,
                                      const std::vector<std::string>& axes) {
  std::vector<std::string> order = axes;
  for (const std::string& c : table.columns) {
    if (is_config_key(c) && std::find(order.begin(), order.end(), c) == order.end()) {
      order.push_back(c);
    }
  }
  std::vector<std::string> keys;
  std::vector<std::vector<size_t>> patterns;
  for (const std::string& k : order) {
    std::map<std::string, size_t> ids;
    std::vector<size_t> pattern;
    for (const Row& r : table.rows) {
      pattern.push_back(ids.emplace(text(r, k), ids.size()).first->second);
    }
    if (ids.size() < 2) continue;
    if (std::find(patterns.begin(), patterns.end(), pattern) != patterns.end()) continue;
    patterns.push_back(pattern);
    keys.push_back(k);
  }
  return keys;
}

std::string point_label(const Row& row, const std::vector<std::string>& keys) {
  std::vector<std::string> parts;
  for (const std::string& k : keys) parts.push_back(short_key(k) + "=" + text(row, k));
  return parts.empty() ? text(row, "tag") : join(parts, ", ");
}

// The tip of a point: its label, the value with its interval, how many rows it stands for.
std::string tip_of(const std::string& label, const std::string& metric, double y, double low,
                   double high, size_t count, const std::string& unit) {
  std::string t = label + "\n" + metric + " " + report_number(y) + (unit.empty() ? "" : " " + unit);
  if (std::isfinite(low) && std::isfinite(high)) {
    t += count > 1 ? " ± " + report_number((high - low) / 2) + " (std over " +
                         std::to_string(count) + " repeats)"
                   : " [" + report_number(low) + ", " + report_number(high) + "] (95%)";
  }
  return t;
}

// metric against `axis`: one series per value of the other varying keys; repeats of a point
// (rows alike in every varying key) are one point at their mean with their standard deviation,
// one row at its value with its 95% interval.
Chart axis_chart(const std::vector<const Row*>& ok, const std::string& metric,
                 const std::string& axis, const std::vector<std::string>& keys, const Unit& unit) {
  Chart c;
  c.title = metric + " by " + short_key(axis);
  c.x_label = axis;
  c.y_label = axis_label(metric, unit);
  std::vector<std::string> others;
  for (const std::string& k : keys) {
    if (k != axis) others.push_back(k);
  }
  // Numeric x when every value is a number: on a log2 axis when all are positive and span 8x.
  bool numeric = true;
  double lo = INFINITY, hi = -INFINITY;
  for (const Row* r : ok) {
    const double x = number(*r, axis);
    if (!std::isfinite(x)) numeric = false;
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  c.log2_x = numeric && lo > 0 && hi / lo >= 8;
  std::map<std::string, size_t> category;
  struct Group {
    std::vector<double> values;
    const Row* first;
  };
  std::vector<std::string> series_order;
  std::map<std::string, std::map<std::string, Group>> groups;  // series -> x text -> rows
  for (const Row* r : ok) {
    const double y = number(*r, metric);
    if (!std::isfinite(y)) continue;
    const std::string s = others.empty() ? "" : point_label(*r, others);
    const std::string x = text(*r, axis);
    if (!numeric && category.emplace(x, category.size()).second) c.x_categories.push_back(x);
    if (!groups.count(s)) series_order.push_back(s);
    Group& g = groups[s][x];
    if (g.values.empty()) g.first = r;
    g.values.push_back(y * unit.factor);
  }
  for (const std::string& s : series_order) {
    ChartSeries series;
    series.name = others.empty() ? "" : s;
    for (const auto& [x, g] : groups[s]) {
      ChartPoint p;
      p.x = numeric ? number(*g.first, axis) : static_cast<double>(category[x]);
      p.y = mean(g.values);
      if (g.values.size() > 1) {
        const double sd = stddev(g.values);
        p.low = p.y - sd, p.high = p.y + sd;
      } else if (interval_of(*g.first, metric, &p.low, &p.high)) {
        p.low *= unit.factor, p.high *= unit.factor;
      }
      p.tip = tip_of(point_label(*g.first, keys), metric, p.y, p.low, p.high, g.values.size(),
                     unit.name);
      series.points.push_back(p);
    }
    c.series.push_back(std::move(series));
  }
  return c;
}

// The Pareto front of `gain` (more is better, y) against `cost` (x), every ok row a point with
// its intervals: filled and joined on the front, hollow off it (metrics/pareto.h).
Chart pareto_chart(const std::vector<const Row*>& ok, const std::string& gain,
                   const std::string& cost, const std::vector<std::string>& keys,
                   const Unit& gain_unit, const Unit& cost_unit) {
  Chart c;
  c.title = "Pareto front: " + gain + " against " + cost;
  c.x_label = axis_label(cost, cost_unit);
  c.y_label = axis_label(gain, gain_unit);
  std::vector<const Row*> rows;
  std::vector<std::vector<Span>> spans;
  for (const Row* r : ok) {
    const double g = number(*r, gain), k = number(*r, cost);
    if (!std::isfinite(g) || !std::isfinite(k)) continue;
    std::vector<Span> s;
    for (const auto& [m, unit] :
         {std::pair{gain, gain_unit.name}, std::pair{cost, cost_unit.name}}) {
      double low = number(*r, m), high = low;
      interval_of(*r, m, &low, &high);
      s.push_back(oriented_span(higher_is_better(m, unit), number(*r, m), low, high));
    }
    rows.push_back(r);
    spans.push_back(std::move(s));
  }
  const std::vector<bool> front = pareto_front(spans, std::vector<std::string>(rows.size()));
  ChartSeries on{"on the front", {}, true}, off{"dominated", {}, false};
  for (size_t i = 0; i < rows.size(); ++i) {
    ChartPoint p;
    p.x = number(*rows[i], cost) * cost_unit.factor;
    p.y = number(*rows[i], gain) * gain_unit.factor;
    if (interval_of(*rows[i], gain, &p.low, &p.high)) {
      p.low *= gain_unit.factor, p.high *= gain_unit.factor;
    }
    p.hollow = !front[i];
    p.tip = tip_of(point_label(*rows[i], keys), gain, p.y, p.low, p.high, 1, gain_unit.name) +
            "\n" + cost + " " + report_number(p.x) + " " + cost_unit.name +
            (front[i] ? "\non the Pareto front" : "");
    (front[i] ? on : off).points.push_back(p);
  }
  c.series = {on, off};
  return c;
}

// Inference: each point's time to the first token (mean, 95% interval) and per output token
// (TPOT and inter-token latency, medians) in ms.
Chart latency_chart(const std::vector<const Row*>& ok, const std::vector<std::string>& keys) {
  Chart c;
  c.title = "Per-token latency";
  c.x_label = "point";
  c.y_label = "ms";
  const std::vector<std::pair<std::string, std::string>> metrics = {
      {"ttft_mean_s", "TTFT (mean, 95% interval)"},
      {"tpot_p50_s", "TPOT (median)"},
      {"itl_p50_s", "inter-token latency (median)"}};
  for (const auto& [metric, name] : metrics) {
    ChartSeries s{name, {}, false};
    for (size_t i = 0; i < ok.size(); ++i) {
      const double v = number(*ok[i], metric);
      if (!std::isfinite(v)) continue;
      ChartPoint p;
      p.x = static_cast<double>(i);
      p.y = v * 1e3;
      if (interval_of(*ok[i], metric, &p.low, &p.high)) p.low *= 1e3, p.high *= 1e3;
      p.tip = tip_of(point_label(*ok[i], keys), name, p.y, p.low, p.high, 1, "ms");
      s.points.push_back(p);
    }
    if (!s.points.empty()) c.series.push_back(std::move(s));
  }
  for (const Row* r : ok) c.x_categories.push_back(point_label(*r, keys));
  return c;
}

bool has_values(const std::vector<const Row*>& rows, const std::string& metric) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const Row* r) { return std::isfinite(number(*r, metric)); });
}

}  // namespace

std::vector<std::string> headline_metrics(const std::vector<Row>& rows) {
  std::vector<std::string> names;
  auto any = [&](const std::string& m) {
    return std::any_of(rows.begin(), rows.end(),
                       [&](const Row& r) { return std::isfinite(number(r, m)); });
  };
  for (const char* m : {"train_tokens_per_second", "output_tps"}) {
    if (any(m)) names.push_back(m);
  }
  std::vector<std::string> declared;
  for (const Row& r : rows) add_command_metrics(r, &declared);
  for (const std::string& m : declared) {
    if (any(m) && std::find(names.begin(), names.end(), m) == names.end()) names.push_back(m);
  }
  if (names.empty() && any("seconds")) names.push_back("seconds");
  return names;
}

SweepReport sweep_report(const ExtractTable& table, const SweepReportOptions& o) {
  SweepReport report;
  report.points = table.rows.size();
  std::vector<const Row*> ok;
  std::map<std::string, size_t> statuses;
  std::set<std::string> sweeps, devices;
  std::string first, last;
  for (const Row& r : table.rows) {
    const std::string status = text(r, "status");
    ++statuses[status.empty() ? "unknown" : status];
    if (status == "ok") ok.push_back(&r);
    if (!text(r, "sweep").empty()) sweeps.insert(text(r, "sweep"));
    const std::string device =
        text(r, "device_name").empty() ? text(r, "device") : text(r, "device_name");
    if (!device.empty()) devices.insert(device);
    const std::string started = text(r, "started");
    if (!started.empty()) {
      if (first.empty() || started < first) first = started;
      if (last.empty() || started > last) last = started;
    }
  }
  std::vector<std::string> metrics = o.metrics;
  for (const std::string& m : metrics) {
    if (std::find(table.columns.begin(), table.columns.end(), m) == table.columns.end() &&
        !std::any_of(table.rows.begin(), table.rows.end(),
                     [&](const Row& r) { return cell(r, m) != nullptr; })) {
      std::optional<std::string> near = closest_match(m, table.columns);
      throw Error::input(
          Mark::in("--metric " + m), "", "no point has this column",
          near ? "did you mean " + *near + "?" : "name a column of bench-extract's CSV");
    }
  }
  if (metrics.empty()) metrics = headline_metrics(table.rows);
  const std::vector<std::string> keys = varying_keys(table, o.axes);
  const std::string name = sweeps.empty() ? "results" : join({sweeps.begin(), sweeps.end()}, ", ");
  const std::string title = o.title.empty() ? "sweepbench report: " + name : o.title;

  std::string body = "<header><h1>" + html_escape(title) + "</h1><p class=\"meta\">";
  std::vector<std::string> counts;
  for (const auto& [s, n] : statuses) counts.push_back(std::to_string(n) + " " + s);
  body += html_escape(plural(table.rows.size(), "point") + ": " + join(counts, ", "));
  if (!devices.empty()) {
    body += " · on " + html_escape(join({devices.begin(), devices.end()}, ", "));
  }
  if (!first.empty()) {
    body += " · " + html_escape(first) + (last != first ? " to " + html_escape(last) : "");
  }
  body += "<br>from ";
  for (size_t i = 0; i < o.inputs.size(); ++i) {
    body += (i ? ", " : "") + std::string("<code>") + html_escape(o.inputs[i]) + "</code>";
  }
  body += " · made " + html_escape(utc_now_iso8601()) + " by bench-report</p></header>\n";

  // Figures.
  std::string figures;
  for (const std::string& m : metrics) {
    if (!has_values(ok, m)) continue;
    const Unit u = unit_of(table.rows, m);
    // The rows that have this metric, and the keys that vary among them: a mixed tree's
    // training throughput is not drawn against the inference points' axes.
    std::vector<const Row*> with;
    for (const Row* r : ok) {
      if (std::isfinite(number(*r, m))) with.push_back(r);
    }
    std::vector<std::string> own;
    for (const std::string& k : keys) {
      std::set<std::string> values;
      for (const Row* r : with) values.insert(text(*r, k));
      if (values.size() > 1) own.push_back(k);
    }
    std::string charts;
    for (const std::string& axis : own) {
      if (axis == "scenario" && own.size() > 1) continue;
      charts += svg_chart(axis_chart(with, m, axis, own, u));
      ++report.figures;
    }
    if (own.empty()) {
      charts += svg_chart(axis_chart(with, m, "tag", {}, u));
      ++report.figures;
    }
    figures += "<h3>" + html_escape(m) + "</h3><div class=\"charts\">" + charts + "</div>\n";
  }
  // The Pareto front of the pairs a user weighs: throughput against memory, output throughput
  // against time per token; a command's first two declared metrics.
  std::vector<std::pair<std::string, std::string>> pairs = {
      {"train_tokens_per_second", "mem_peak_bytes"},
      {"output_tps", "tpot_p50_s"},
  };
  std::vector<std::string> declared;
  for (const Row& r : table.rows) add_command_metrics(r, &declared);
  if (declared.size() >= 2) {
    const bool first_up = higher_is_better(declared[0], unit_of(table.rows, declared[0]).name);
    pairs.push_back(first_up ? std::make_pair(declared[0], declared[1])
                             : std::make_pair(declared[1], declared[0]));
  }
  std::string pareto;
  for (const auto& [gain, cost] : pairs) {
    size_t both = 0;
    for (const Row* r : ok) {
      both += std::isfinite(number(*r, gain)) && std::isfinite(number(*r, cost));
    }
    if (both < 2) continue;
    pareto += svg_chart(
        pareto_chart(ok, gain, cost, keys, unit_of(table.rows, gain), unit_of(table.rows, cost)));
    ++report.figures;
  }
  if (!pareto.empty()) {
    figures +=
        "<h3>Pareto front</h3><p class=\"meta\">Filled: no other point is better in "
        "both beyond their 95% intervals.</p><div class=\"charts\">" +
        pareto + "</div>\n";
  }
  if (has_values(ok, "ttft_mean_s") || has_values(ok, "tpot_p50_s")) {
    figures += "<h3>Per-token latency</h3><div class=\"charts\">" +
               svg_chart(latency_chart(ok, keys)) + "</div>\n";
    ++report.figures;
  }
  if (!figures.empty()) {
    body +=
        "<section id=\"figures\"><h2>Figures</h2><p class=\"meta\">Each point: one "
        "configuration's ok run with its 95% interval, or the mean of its repeats ± their "
        "standard deviation. Hover a point for its values.</p>" +
        figures + "</section>\n";
  }

  // The table: bench-extract's table for people, with each point's tag first.
  const ExtractTable people = people_table(table, o.axes);
  HtmlTable t;
  t.id = "points";
  t.columns.push_back("tag");
  for (const std::string& c : people.columns) t.columns.push_back(c);
  for (size_t i = 0; i < people.rows.size(); ++i) {
    std::vector<HtmlCell> cells;
    cells.push_back({text(table.rows[i], "tag"), kNoValue, "", ""});
    for (const std::string& c : people.columns) {
      HtmlCell x{text(people.rows[i], c), kNoValue, "", ""};
      if (c == "status" && x.text != "ok" && !x.text.empty()) x.css = "bad";
      cells.push_back(std::move(x));
    }
    t.rows.push_back(std::move(cells));
  }
  body +=
      "<section id=\"table\"><h2>Points</h2><p class=\"meta\">Click a column to sort. As "
      "<code>bench-extract --format table</code>; every column: <code>bench-extract -o "
      "points.csv</code>.</p>" +
      html_table(t) + "</section>\n";

  // What every point shares.
  std::string same;
  for (const std::string& c : table.columns) {
    if (!is_config_key(c) || std::find(keys.begin(), keys.end(), c) != keys.end()) continue;
    std::set<std::string> values;
    for (const Row& r : table.rows) values.insert(text(r, c));
    if (values.size() == 1 && !values.begin()->empty()) {
      same +=
          "<tr><td>" + html_escape(c) + "</td><td>" + html_escape(*values.begin()) + "</td></tr>";
    }
  }
  if (!same.empty()) {
    body += "<details><summary>The configuration every point shares</summary><table>" + same +
            "</table></details>\n";
  }
  if (!table.warnings.empty()) {
    body += "<details open><summary>" + plural(table.warnings.size(), "warning") +
            " while reading</summary><ul>";
    for (const std::string& w : table.warnings) body += "<li>" + html_escape(w) + "</li>";
    body += "</ul></details>\n";
  }
  report.html = html_page(title, body);
  return report;
}

int bench_report_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  static const char* const kUsage =
      "Usage: bench-report -i RESULTS... -o report.html [--metric M]...\n"
      "One self-contained HTML page of a sweep's results: figures and a sortable table, opened\n"
      "from the file system with no server and no network (docs/report.md).\n";
  po::options_description desc("bench-report options");
  desc.add_options()("help,h", "Show this help")(
      "input,i", po::value<std::vector<std::string>>()->multitoken()->composing(),
      "Results trees (bench-sweep run -o) or single points")(
      "output,o", po::value<std::string>(), "The page to write (written whole or not at all)")(
      "metric,m", po::value<std::vector<std::string>>()->composing(),
      "A metric to draw against each axis (repeatable; default: the headline ones)")(
      "title", po::value<std::string>(), "The page's title")("force,f", "Replace an existing page")(
      "jobs,j", po::value<int>()->default_value(default_jobs()), "Reader processes");
  return run_tool("bench-report", args, desc, kUsage, out, err, [&](const po::variables_map& vm) {
    if (!vm.count("input")) {
      throw Error::input(Mark::in("-i"), "", "is required",
                         "bench-report -i runs/x -o report.html");
    }
    if (!vm.count("output")) {
      throw Error::input(Mark::in("-o"), "", "is required",
                         "name the page: bench-report -i runs/x -o report.html");
    }
    const std::string output = vm["output"].as<std::string>();
    refuse_output_among_results(output, false);
    if (!vm.count("force") && fs::exists(output)) {
      throw Error(ErrorKind::kConflict, Mark::in(output), "", "the output file exists",
                  "add -f to replace it, or choose another -o");
    }
    const std::vector<std::string> inputs = vm["input"].as<std::vector<std::string>>();
    PointSearch search = find_point_dirs(inputs);
    for (const std::string& w : search.warnings) err << "bench-report: warning: " << w << "\n";
    if (search.points.empty()) {
      throw Error::input(Mark::in(join(inputs, " ")), "", "holds no results (no point directories)",
                         "give a results tree (bench-sweep run -o DIR)");
    }
    ExtractOptions options;
    options.jobs = std::max(1, vm["jobs"].as<int>());
    ExtractTable table = extract_points(search.points, options);
    for (const std::string& w : table.warnings) err << "bench-report: warning: " << w << "\n";
    SweepReportOptions o;
    if (vm.count("metric")) o.metrics = split_commas(vm["metric"].as<std::vector<std::string>>());
    o.axes = sweep_axes(search.points);
    o.inputs = inputs;
    if (vm.count("title")) o.title = vm["title"].as<std::string>();
    const SweepReport report = sweep_report(table, o);
    write_file_atomic(output, report.html);
    err << "bench-report: " << plural(report.points, "point") << ", "
        << plural(report.figures, "figure") << ": " << output << " (" << report.html.size() / 1024
        << " KiB)\n";
    return kExitOk;
  });
}

}  // namespace sweepbench
