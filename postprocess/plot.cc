#include "postprocess/plot.h"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "core/config.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/fs.h"
#include "core/process.h"
#include "core/registry.h"
#include "core/text.h"
#include "core/units.h"
#include "core/yaml_io.h"
#include "postprocess/plot_text.h"
#include "postprocess/tool_main.h"
#include "results/statistics.h"
#include "results/summary.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

}  // namespace

std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

size_t column_index(const CsvTable& t, const std::string& name, const std::string& option) {
  auto it = std::find(t.columns.begin(), t.columns.end(), name);
  if (it != t.columns.end()) return static_cast<size_t>(it - t.columns.begin());
  std::string hint = "the columns are: " + join(t.columns, ", ");
  if (auto near = closest_match(name, t.columns)) hint = "did you mean '" + *near + "'? " + hint;
  throw Error::input(Mark::in(option + " " + name), "", "no column '" + name + "'", hint);
}

// Text into a gnuplot script: single-quoted strings, the one gnuplot form in which nothing is
// expanded (inside double quotes gnuplot runs `backquoted` commands). A quote ends one string and
// comes as "'" joined by gnuplot's `.` ('it' . "'" . 's'): a doubled quote, gnuplot's other
// escape, is read as an empty string when the text starts with one. A single-quoted string
// cannot span lines, so line breaks become spaces, and NUL (which would end the script's line) is
// left out. Every text from the table, the options or a path goes through here.
std::string gp_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "' . \"'\" . '";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c != '\0') {
      out += c;
    }
  }
  return out + "'";
}

// Text in a comment line: a line break would end the comment and make the rest a command.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (c != '\0') {
      out += c;
    }
  }
  return out;
}

// Text as a field of the tab-separated data file: gnuplot reads data without expanding anything,
// but a tab or a line break would split the field and a double quote would end it.
std::string gp_data_text(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') {
      out += '\'';
    } else if (c == '\t' || c == '\n' || c == '\r') {
      out += ' ';
    } else if (c != '\0') {
      out += c;
    }
  }
  return out + "\"";
}

std::string terminal_for(const std::string& output) {
  std::string ext = fs::path(output).extension().string();
  if (ext == ".png") return "pngcairo size 900,560 enhanced font 'sans,10'";
  if (ext == ".svg") return "svg size 900,560 enhanced font 'sans,10'";
  if (ext == ".pdf") return "pdfcairo size 6in,3.75in enhanced font 'sans,9'";
  throw Error::input(Mark::in(output), "", "cannot tell the image format from '" + ext + "'",
                     "name the output .png, .svg or .pdf");
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

bool numeric_order(const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    if (!number(v)) return false;
  }
  return true;
}

}  // namespace

namespace {


}  // namespace

void describe_figure(const CsvTable& t, PlotSpec* spec) {
  // Columns by name, once: varying_columns asks for every cell of every column.
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < t.columns.size(); ++i) position.emplace(t.columns[i], i);
  auto index_of = [&](const std::string& c) -> std::optional<size_t> {
    auto it = position.find(c);
    if (it == position.end()) return std::nullopt;
    return it->second;
  };
  std::optional<size_t> status = index_of("status");
  std::vector<const std::vector<std::string>*> ok;
  for (const auto& row : t.rows) {
    if (!status || row[*status] == "ok") ok.push_back(&row);
  }
  auto cell = [&](size_t r, const std::string& c) {
    std::optional<size_t> i = index_of(c);
    return i ? (*ok[r])[*i] : std::string();
  };
  spec->varying = varying_columns(t.columns, ok.size(), cell);

  // Legends: a config column's value as `name=value`; any other hue (a tag) by the keys that
  // vary, other than x, at its first row.
  std::optional<size_t> hue = spec->hue.empty() ? std::nullopt : index_of(spec->hue);
  if (hue) {
    bool config_hue = is_config_column(spec->hue);
    for (size_t r = 0; r < ok.size(); ++r) {
      const std::string& h = (*ok[r])[*hue];
      if (spec->hue_labels.count(h) != 0) continue;
      std::vector<std::string> parts;
      if (config_hue) {
        parts.push_back(short_key(spec->hue) + "=" + h);
      } else {
        for (const std::string& c : spec->varying) {
          if (c != spec->x) parts.push_back(short_key(c) + "=" + cell(r, c));
        }
      }
      spec->hue_labels[h] = parts.empty() ? h : join(parts, ", ");
    }
  }

  // Units: one scale for metrics of one kind (they share the axis), from the largest value.
  std::optional<size_t> units_column = index_of("units");
  std::vector<UnitKind> kinds;
  std::vector<std::string> plains;
  double max = 0;
  // A column's kind of unit: a command's or serve point's own first (the units column: a map in
  // YAML flow text), else what bench-extract's names say.
  auto unit_kind_of = [&](const std::string& m, std::string* plain) {
    for (size_t r = 0; units_column && r < ok.size(); ++r) {
      try {
        Value units = parse_yaml((*ok[r])[*units_column], "units");
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
  };
  for (const std::string& m : spec->metrics) {
    std::string plain;
    UnitKind kind = unit_kind_of(m, &plain);
    kinds.push_back(kind);
    plains.push_back(plain);
    if (std::optional<size_t> i = index_of(m)) {
      for (const auto* row : ok) {
        if (std::optional<double> v = number((*row)[*i])) max = std::max(max, std::fabs(*v));
      }
    }
  }
  bool one_kind =
      std::all_of(kinds.begin(), kinds.end(), [&](UnitKind k) { return k == kinds[0]; });
  // One axis shows one unit: 1 ms bars beside 57,000 samples/s are invisible, and a reader
  // would take one scale for both.
  auto unit_words = [](UnitKind k, const std::string& plain) -> std::string {
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
  };
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

  // An x that is a measurement (a serve level's tokens/s per user, its request rate) names its
  // unit where its values need no scaling to read it; the values are drawn as the table has them.
  if (!spec->x.empty() && !is_config_column(spec->x) && index_of(spec->x)) {
    std::string plain;
    const UnitKind kind = unit_kind_of(spec->x, &plain);
    if (std::pair<std::string, double> unit = scaled_unit(kind, 1, plain); unit.second == 1) {
      spec->x_unit = unit.first;
    }
  }

  // Where and when: the devices (two named, then a count) and the dates of the ok rows.
  std::vector<std::string> devices, dates;
  std::optional<size_t> device = index_of("device_name"), started = index_of("started");
  for (const auto* row : ok) {
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
  spec->where = join(where, ", ");
}

std::vector<PlotPoint> plot_points(const CsvTable& t, const PlotSpec& spec, size_t* left_out) {
  if (spec.metrics.empty()) {
    throw Error::input(Mark::in("--metric"), "", "is missing", "name a column to plot");
  }
  std::vector<size_t> metrics;
  for (const std::string& m : spec.metrics) metrics.push_back(column_index(t, m, "--metric"));
  size_t x = column_index(t, spec.x, "--x");
  std::optional<size_t> hue;
  if (!spec.hue.empty()) hue = column_index(t, spec.hue, "--hue");
  std::optional<size_t> status;
  if (std::find(t.columns.begin(), t.columns.end(), "status") != t.columns.end()) {
    status = column_index(t, "status", "status");
  }
  // Key: (metric's position, x, hue), in the order first seen within each metric.
  using Key = std::tuple<size_t, std::string, std::string>;
  std::map<Key, std::vector<double>> groups;
  std::map<Key, double> half_width;  // the group's one row's 95% half-width, where it has one
  std::map<Key, std::set<std::string>> notes;
  std::vector<Key> order;
  // Columns that say how a row was measured: its CPUs shared, its target missed.
  auto optional_column = [&](const char* name) -> std::optional<size_t> {
    auto it = std::find(t.columns.begin(), t.columns.end(), name);
    if (it == t.columns.end()) return std::nullopt;
    return static_cast<size_t>(it - t.columns.begin());
  };
  const std::optional<size_t> shared = optional_column("cpu_shared");
  const std::optional<size_t> target_met = optional_column("target_met");
  // Each metric's interval columns the table has (low, high), in the order to try.
  std::vector<std::vector<std::pair<size_t, size_t>>> intervals(metrics.size());
  for (size_t m = 0; m < metrics.size(); ++m) {
    for (const auto& [low, high] : interval_columns(spec.metrics[m])) {
      std::optional<size_t> l = optional_column(low.c_str()), h = optional_column(high.c_str());
      if (l && h) intervals[m].emplace_back(*l, *h);
    }
  }
  // The swept columns the rows of a group must agree on (x and hue may differ by design), and
  // each group's first row.
  std::vector<size_t> must_agree;
  for (const std::string& c : spec.varying) {
    if (c == spec.x || c == spec.hue) continue;
    auto it = std::find(t.columns.begin(), t.columns.end(), c);
    if (it != t.columns.end()) must_agree.push_back(static_cast<size_t>(it - t.columns.begin()));
  }
  std::map<std::pair<std::string, std::string>, const std::vector<std::string>*> first_row;
  std::vector<bool> any_value(metrics.size(), false), any_text(metrics.size(), false),
      any_nonfinite(metrics.size(), false);
  *left_out = 0;
  for (const auto& row : t.rows) {
    if (status && row[*status] != "ok") {
      ++*left_out;
      continue;
    }
    std::pair<std::string, std::string> group{row[x], hue ? row[*hue] : std::string()};
    auto [first, fresh] = first_row.emplace(group, &row);
    for (size_t c : must_agree) {
      if (fresh || (*first->second)[c] == row[c]) continue;
      std::string where = spec.x + "=" + row[x] + (hue ? ", " + spec.hue + "=" + row[*hue] : "");
      throw Error::input(
          Mark::in("--x " + spec.x), "",
          "the rows with " + where + " differ in " + t.columns[c] + " (" + (*first->second)[c] +
              " and " + row[c] + "): their mean would mix configurations",
          spec.hue.empty() ? "add --hue " + t.columns[c] + ", or plot the rows of one " +
                                 t.columns[c] + " at a time"
                           : "plot the rows of one " + t.columns[c] +
                                 " at a time (bench-extract -i only those points), or make it "
                                 "--hue");
    }
    bool complete = true;
    for (size_t m = 0; m < metrics.size(); ++m) {
      const std::string& cell = row[metrics[m]];
      std::optional<double> v = number(cell);
      if (!v) {
        if (is_nonfinite_number(cell)) {
          any_nonfinite[m] = true;
        } else if (!cell.empty()) {
          any_text[m] = true;
        }
        complete = false;
        continue;
      }
      any_value[m] = true;
      Key key{m, row[x], hue ? row[*hue] : std::string()};
      if (groups.find(key) == groups.end()) order.push_back(key);
      groups[key].push_back(*v);
      for (const auto& [low_column, high_column] : intervals[m]) {
        std::optional<double> low = number(row[low_column]), high = number(row[high_column]);
        if (low && high && *high >= *low) {
          half_width[key] = (*high - *low) / 2;
          break;
        }
      }
      if (shared) {
        std::optional<double> share = number(row[*shared]);
        if (share && *share > kSharedCpuThreshold) notes[key].insert("shared");
      }
      if (target_met && row[*target_met] == "false") notes[key].insert("imprecise");
    }
    if (!complete) ++*left_out;
  }
  for (size_t m = 0; m < metrics.size(); ++m) {
    if (any_value[m]) continue;
    Mark where = Mark::in("--metric " + spec.metrics[m]);
    if (any_text[m]) {
      std::optional<std::string> other = numeric_metric_column(t, status, metrics[m]);
      throw Error::input(
          where, "", "is not a numeric column",
          other ? "choose a column of numbers, such as " + *other : "choose a column of numbers");
    }
    if (any_nonfinite[m]) {
      throw Error::input(where, "",
                         "nothing to plot: in the rows with status ok its every value is nan or "
                         "inf (a metric the runs could not define)",
                         "choose another metric, or see the points' reasons in the CSV");
    }
    throw Error::input(where, "", "nothing to plot: no row with status ok has a value",
                       "check the CSV's status column (bench-extract)");
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Key& a, const Key& b) { return std::get<0>(a) < std::get<0>(b); });
  std::vector<PlotPoint> points;
  for (const Key& key : order) {
    const std::vector<double>& values = groups[key];
    // The 95% interval's half width, as the tables show it: one row's own where it has one;
    // several rows (repeats), their mean's (bench-extract --group-repeats' interval).
    auto one = half_width.find(key);
    double error = 0;
    if (values.size() == 1) {
      if (one != half_width.end()) error = one->second;
    } else {
      const Estimate e = repeats_estimate(values);
      if (e.has_interval()) error = (e.high - e.low) / 2;
    }
    std::vector<std::string> said(notes[key].begin(), notes[key].end());
    points.push_back({spec.metrics[std::get<0>(key)], std::get<1>(key), std::get<2>(key),
                      mean(values), error, values.size(), join(said, ", ")});
  }
  return points;
}

namespace {

// A series is one (metric, hue) pair, in the order plot_points gives them.
struct Series {
  std::string metric, hue;
};

// What a kind of plot needs to draw its lines.
struct PlotContext {
  const PlotSpec& spec;
  const std::vector<Series>& series;
  const std::vector<std::string>& xs;  // in plotting order
  std::string data_file;               // as a gnuplot string
  std::function<const PlotPoint*(const std::string& x, const Series& q)> find;
  std::function<std::string(const Series& q)> label;
  std::function<double(const std::string& metric)> factor;  // the data's unit scale
  bool several = false;                                     // several metrics side by side
};

// A kind of plot (--kind), registered by name: its default x, whether x must be numeric, its
// axes and its plot command.
class PlotKind {
 public:
  virtual ~PlotKind() = default;
  virtual std::string default_x() const { return "tag"; }
  virtual bool numeric_x() const { return true; }
  // Drawn from the whole table (pareto_figure, change_figure), not from means per x.
  virtual bool whole_table() const { return false; }
  // Where series k of n stands at the i-th x (`x`, its value): a line's point at x itself.
  virtual double position(size_t /*i*/, size_t /*k*/, size_t /*n*/, const std::string& x) const {
    return *number(x);
  }
  virtual void draw(std::ostream& s, const PlotContext& c) const = 0;
};

// A kind drawn from the whole table: its default x and the plot.h function that draws it.
class TableKind : public PlotKind {
 public:
  using Figure = TableFigure (*)(const CsvTable&, const PlotSpec&, const std::string&);
  TableKind(std::string x, Figure draw_figure) : x_(std::move(x)), figure_(draw_figure) {}
  std::string default_x() const override { return x_; }
  bool whole_table() const override { return true; }
  TableFigure figure(const CsvTable& t, const PlotSpec& spec, const std::string& data) const {
    return figure_(t, spec, data);
  }
  void draw(std::ostream&, const PlotContext&) const override {
    throw std::logic_error("a whole-table figure has no per-x drawing");
  }

 private:
  std::string x_;
  Figure figure_;
};

// Clustered bars per x, one colour per series.
class BarKind : public PlotKind {
 public:
  bool numeric_x() const override { return false; }
  // Cluster i stands at i; with a gap of one bar, n bars share it, bar k at its k-th place.
  double position(size_t i, size_t k, size_t n, const std::string&) const override {
    return static_cast<double>(i) +
           (static_cast<double>(k) - (static_cast<double>(n) - 1) / 2) / static_cast<double>(n + 1);
  }
  void draw(std::ostream& s, const PlotContext& c) const override {
    s << "set style data histogram\nset style histogram errorbars gap 1 lw 1\n"
      << "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset xtics noenhanced\n";
    // Cluster i stands at x = i: the axis spans the clusters, not gnuplot's round numbers.
    s << "set xrange [-0.6:" << format_float_repr(static_cast<double>(c.xs.size()) - 0.4) << "]\n";
    s << "plot";
    for (size_t k = 0; k < c.series.size(); ++k) {
      s << (k ? ", \\\n    " : " ") << c.data_file << " using " << (2 + 2 * k) << ":" << (3 + 2 * k)
        << (k == 0 ? ":xtic(1)" : "") << " title " << gp_string(c.label(c.series[k]));
    }
    s << "\n";
  }
};

// One line per series over a numeric x.
class LineKind : public PlotKind {
 public:
  static constexpr size_t kLabelledXs = 16;
  void draw(std::ostream& s, const PlotContext& c) const override {
    axes(s);
    // A tic at every x while they can be read (batch sizes, world sizes); past that, or where x
    // is a measurement (a serve level's tokens/s per user: 38.61, 41.2, ... would overlap),
    // gnuplot's own (bench-infer's token positions: 128 of them).
    const bool whole = std::all_of(c.xs.begin(), c.xs.end(), [](const std::string& x) {
      const double v = *number(x);
      return v == std::round(v);
    });
    if (c.xs.size() <= kLabelledXs && whole) {
      std::string tics;
      // The numbers as we print them, not as the table spelled them (" 1" and "1e0" are numbers).
      for (size_t i = 0; i < c.xs.size(); ++i) {
        tics += (i ? ", " : "") + format_float_repr(*number(c.xs[i]));
      }
      s << "set xtics (" << tics << ")\n";
    }
    // The x axis spans the data (not gnuplot's next round tic, -5 for positions from 0), with a
    // little room so that the end points show whole.
    s << "set autoscale xfix\nset offsets graph 0.02, graph 0.02, 0, 0\n";
    s << "plot";
    for (size_t k = 0; k < c.series.size(); ++k) {
      s << (k ? ", \\\n    " : " ") << c.data_file << " using 1:" << (2 + 2 * k) << ":"
        << (3 + 2 * k) << " with yerrorlines lw 2 pt 7 title " << gp_string(c.label(c.series[k]));
    }
    extra_lines(s, c);
    s << "\n";
  }

 protected:
  virtual void axes(std::ostream&) const {}
  virtual void extra_lines(std::ostream&, const PlotContext&) const {}
};

// The metric against world size (log2 axis) with the ideal line from the smallest world size.
class ScalingKind : public LineKind {
 public:
  std::string default_x() const override { return "world_size"; }

 protected:
  void axes(std::ostream& s) const override { s << "set logscale x 2\n"; }
  void extra_lines(std::ostream& s, const PlotContext& c) const override {
    // Ideal, per metric: from its first series at the smallest world size, per-device numbers
    // stay level and totals grow in proportion to it.
    for (const std::string& metric : c.spec.metrics) {
      auto first = std::find_if(c.series.begin(), c.series.end(),
                                [&](const Series& q) { return q.metric == metric; });
      const PlotPoint* base = first == c.series.end() ? nullptr : c.find(c.xs.front(), *first);
      if (base == nullptr) continue;
      bool per_device = metric.find("per_device") != std::string::npos ||
                        metric.find("mfu") != std::string::npos ||
                        metric.find("time") != std::string::npos;
      std::string x0 = format_float_repr(*number(c.xs.front()));
      // In the unit the data are drawn in.
      std::string y0 = format_float_repr(base->mean * c.factor(metric));
      s << ", \\\n    " << (per_device ? y0 : y0 + " * x / " + x0)
        << " with lines dt 2 lc rgb 'gray40' title "
        << gp_string(c.several ? "ideal (" + metric + ")" : "ideal");
    }
  }
};

const Registry<PlotKind>& plot_kinds() {
  static const Registry<PlotKind> r(
      "--kind", "plot kind",
      {
          {"bar", [] { return std::make_unique<BarKind>(); }},
          {"line", [] { return std::make_unique<LineKind>(); }},
          {"scaling", [] { return std::make_unique<ScalingKind>(); }},
          {"pareto", [] { return std::make_unique<TableKind>("mem_peak_bytes", pareto_figure); }},
          // InferenceMAX's throughput against interactivity.
          {"curve",
           [] { return std::make_unique<TableKind>("tokens_per_second_per_user", curve_figure); }},
          {"change", [] { return std::make_unique<TableKind>("point", change_figure); }},
      });
  return r;
}

}  // namespace

std::vector<std::string> plot_kind_names() { return plot_kinds().names(); }

std::string script_preamble(const PlotSpec& spec, const std::string& default_title) {
  std::ostringstream s;
  s << "set terminal " << terminal_for(spec.output) << "\n";
  s << "set output " << gp_string(spec.draw_to.empty() ? spec.output : spec.draw_to) << "\n";
  s << "set datafile separator tab\nset datafile missing 'NaN'\n";
  // What, then where and when on a second line (a constant "\n" joins the two quoted texts).
  s << "set title " << gp_string(spec.title.empty() ? default_title : spec.title)
    << (spec.where.empty() ? "" : " . \"\\n\" . " + gp_string(spec.where)) << " noenhanced\n";
  return s.str();
}

std::string gnuplot_script(const std::vector<PlotPoint>& points, const PlotSpec& spec,
                           const std::string& data_path, std::string* data) {
  std::unique_ptr<PlotKind> kind = plot_kinds().make(spec.kind);
  std::vector<std::string> xs;
  std::vector<Series> series;
  for (const PlotPoint& p : points) {
    if (std::find(xs.begin(), xs.end(), p.x) == xs.end()) xs.push_back(p.x);
    bool known = std::any_of(series.begin(), series.end(), [&](const Series& q) {
      return q.metric == p.metric && q.hue == p.hue;
    });
    if (!known) series.push_back({p.metric, p.hue});
  }
  if (numeric_order(xs)) {
    std::sort(xs.begin(), xs.end(),
              [](const std::string& a, const std::string& b) { return *number(a) < *number(b); });
  }
  auto find = [&](const std::string& x, const Series& q) -> const PlotPoint* {
    for (const PlotPoint& p : points) {
      if (p.x == x && p.metric == q.metric && p.hue == q.hue) return &p;
    }
    return nullptr;
  };
  bool several = spec.metrics.size() > 1;
  auto label_of = [&](const Series& q) {
    if (q.hue.empty()) return q.metric;
    auto known = spec.hue_labels.find(q.hue);
    std::string h = known != spec.hue_labels.end() ? known->second : spec.hue + "=" + q.hue;
    return several ? q.metric + ", " + h : h;
  };
  auto factor_of = [&](const std::string& metric) {
    auto it = spec.units.find(metric);
    return it == spec.units.end() ? 1.0 : it->second.second;
  };
  // The data: one row per x; per series, mean and std ("NaN" where a series has no point).
  std::ostringstream d;
  d << "# x";
  for (const Series& q : series) {
    std::string name = q.hue.empty() ? q.metric : (several ? q.metric + ":" : "") + q.hue;
    d << "\t" << one_line(name) << "_mean\tci95";
  }
  d << "\n";
  for (size_t i = 0; i < xs.size(); ++i) {
    d << gp_data_text(xs[i]);
    for (const Series& q : series) {
      const PlotPoint* p = find(xs[i], q);
      double f = factor_of(q.metric);
      d << "\t" << (p ? format_float_repr(p->mean * f) : "NaN") << "\t"
        << (p ? format_float_repr(p->std * f) : "NaN");
    }
    d << "\n";
  }
  *data = d.str();

  std::string metrics = join(spec.metrics, ", ");
  std::ostringstream s;
  s << "# Written by bench-plot: "
    << one_line(spec.kind + " of " + metrics + " against " + spec.x +
                (spec.hue.empty() ? "" : " by " + spec.hue))
    << ". Edit and run: gnuplot THIS_FILE\n";
  s << script_preamble(spec, metrics);
  std::vector<std::string> ylabels;
  for (const std::string& m : spec.metrics) {
    auto it = spec.units.find(m);
    bool unit = it != spec.units.end() && !it->second.first.empty();
    ylabels.push_back(m + (unit ? " (" + it->second.first + ")" : ""));
  }
  s << "set ylabel " << gp_string(join(ylabels, ", ")) << " noenhanced\n";
  s << "set xlabel " << gp_string(spec.x + (spec.x_unit.empty() ? "" : " (" + spec.x_unit + ")"))
    << " noenhanced\n";
  // The legend stays outside the plot: at the right while its labels are short, else below the
  // x label in two columns, with the bottom margin made room for it.
  size_t widest = 0;
  for (const Series& q : series) widest = std::max(widest, display_width(label_of(q)));
  if (widest <= 24) {
    s << "set key outside right top noenhanced\n";
  } else {
    s << "set key outside bottom center horizontal maxcols 2 noenhanced\n"
      << "set bmargin " << 4 + (series.size() + 1) / 2 << "\n";
  }
  // What the error bars are, on the figure: the tables' 95% intervals, not a spread.
  if (std::any_of(points.begin(), points.end(), [](const PlotPoint& p) { return p.std > 0; })) {
    s << "set label " << gp_string("error bars: 95% intervals of the mean")
      << " at screen 0.01, screen 0.02 font ',8' noenhanced\n";
  }
  s << "set grid ytics\nset yrange [0:*]\n";
  std::string data_file = gp_string(data_path);
  if (kind->numeric_x() && !numeric_order(xs)) {
    throw Error::input(
        Mark::in("--x " + spec.x), "",
        "a " + spec.kind + " plot needs a numeric x, and '" + spec.x + "' has text values",
        "use --kind bar, or another --x");
  }
  // A point measured with its CPUs shared, or short of its target, says so above its bar or
  // point (PlotPoint::note), and the y axis makes room for the words above the highest.
  auto top_of = [&](const PlotPoint& p) {  // the top of its error bar, in the axis' unit
    return (p.mean + (std::isfinite(p.std) ? p.std : 0.0)) * factor_of(p.metric);
  };
  double highest = 0;
  bool noted = false;
  for (const PlotPoint& p : points) {
    highest = std::max(highest, top_of(p));
    noted = noted || !p.note.empty();
  }
  if (noted && highest > 0) s << "set yrange [0:" << format_float_repr(highest * 1.45) << "]\n";
  for (size_t i = 0; i < xs.size(); ++i) {
    for (size_t k = 0; k < series.size(); ++k) {
      const PlotPoint* p = find(xs[i], series[k]);
      if (p == nullptr || p->note.empty()) continue;
      s << "set label " << gp_string(p->note) << " at "
        << format_float_repr(kind->position(i, k, series.size(), xs[i])) << ", "
        << format_float_repr(top_of(*p)) << " rotate by 90 left front font \",9\" offset 0,0.5 "
        << "noenhanced\n";
    }
  }
  kind->draw(s, PlotContext{spec, series, xs, data_file, find, label_of, factor_of, several});
  return s.str();
}

namespace {

const char* const kUsage = R"(bench-plot: a bench-extract CSV to a figure (gnuplot).
Usage: bench-plot -i results.csv -o fig.png|svg|pdf --metric COL[,COL...] [--x COL] [--hue COL]
                  [--kind bar|line|scaling|pareto|curve|change] [--title T] [--script out.gp]
Plots the mean of each --metric over the rows with status ok that share --x (and --hue), with the
95% interval of the mean over repeats as error bars (one row: its own, where it has one), and
"shared" or "imprecise" above a point whose CPUs other processes took or that missed its
metrics.target_ci; several metrics of one unit stand side by side, one series per
metric (and hue); metrics of other units are refused (a figure each). bar: clustered bars per x, one colour per series. line: one line per series over
a numeric x. scaling: the metric against world size (log2 axis, --x defaults to world_size) with
the ideal line from the smallest world size (level for per-device metrics, proportional for
totals). pareto: every configuration (its ok rows: repeats are one point, at their means) as a
point of --metric (y) against --x, another metric (default mem_peak_bytes), with both 95%
intervals as error bars; the points on the Pareto front (none better
in both beyond the intervals; per --hue value) filled, joined and labelled with their
configuration. curve: --metric (y) against --x, another metric (default
tokens_per_second_per_user), one line per --hue value through the means of the rows that share
their configuration (and serve level: bench-extract --series levels), the 95% intervals of the
means as error bars both ways: throughput against interactivity. change: bench-compare's
CSV (--format csv), each point's change in % with its interval, coloured by verdict, the geomean
last; --metric optional (default: every metric).
--script also writes the gnuplot script and its data file (out.gp.dat) so the figure can
be restyled. The figure is replaced only when gnuplot succeeds.
Examples:
  bench-plot -i runs/qs.csv -o qs.png --metric train_tokens_per_second --x train.micro_batch --hue data.seq_len
  bench-plot -i runs/gpus.csv -o gpus.png --metric train_samples_per_second,eval_samples_per_second --x device
  bench-plot -i scaling.csv -o scaling.svg --kind scaling --metric tokens_per_second_per_device
  bench-plot -i tune.csv -o front.svg --kind pareto --metric train_tokens_per_second --x mem_peak_bytes
  bench-plot -i levels.csv -o curve.svg --kind curve --metric output_tokens_per_second --hue params.tp
  bench-compare runs/old runs/new --format csv -o cmp.csv && bench-plot -i cmp.csv -o cmp.svg --kind change
Docs: docs/extract.md, docs/compare.md. Exit codes: 0, 2 bad input (unknown column, nothing to plot, no gnuplot),
4 file-system error or gnuplot failed.
Options:
)";

}  // namespace

int bench_plot_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")("input,i", po::value<std::string>(),
                                                 "The CSV (bench-extract)")(
      "output,o", po::value<std::string>(), "The figure: .png, .svg or .pdf")(
      "metric", po::value<std::vector<std::string>>()->composing(),
      "The column to plot; repeat it (or give A,B) for metrics side by side")(
      "x", po::value<std::string>(),
      "The x column (default: tag; world_size for scaling; mem_peak_bytes for pareto)")(
      "hue", po::value<std::string>(), "One series per value of this column")(
      "kind", po::value<std::string>()->default_value("bar"),
      "bar, line, scaling, pareto, curve or change")("title", po::value<std::string>(),
                                                     "The title (default: the metrics)")(
      "script", po::value<std::string>(), "Also write the gnuplot script here (and its data)");
  return run_tool(
      "bench-plot", args, desc, kUsage, out, err, [&](const po::variables_map& vm) -> int {
        PlotSpec spec;
        spec.kind = vm["kind"].as<std::string>();
        std::unique_ptr<PlotKind> kind = plot_kinds().make(spec.kind);  // unknown: an error
        // A comparison's figure draws every metric of it unless told which.
        for (const char* required : {"input", "output", "metric"}) {
          if (vm.count(required) || (std::string(required) == "metric" && spec.kind == "change"))
            continue;
          err << "bench-plot: error: --" << required << " is missing\n"
              << "usage: bench-plot -i results.csv -o fig.png --metric COL  (bench-plot "
                 "--help)\n";
          return kExitUsage;
        }
        if (vm.count("metric")) spec.metrics = split_commas(vm["metric"].as<std::vector<std::string>>());
        spec.output = fs::absolute(vm["output"].as<std::string>()).string();
        spec.x = vm.count("x") ? vm["x"].as<std::string>() : kind->default_x();
        if (vm.count("hue")) spec.hue = vm["hue"].as<std::string>();
        if (vm.count("title")) spec.title = vm["title"].as<std::string>();
        terminal_for(spec.output);  // a bad extension is an error before any work

        std::string input = vm["input"].as<std::string>();
        // bench-extract's tables are megabytes; a GiB is a generous bound (docs/security.md).
        std::optional<std::string> text = read_file_if_exists(input, size_t{1} << 30);
        if (!text)
          throw Error::input(Mark::in(input), "", "no such file", "give bench-extract's CSV");
        CsvTable table = parse_csv(*text, input);

        std::string script_path = vm.count("script")
                                      ? fs::absolute(vm["script"].as<std::string>()).string()
                                      : spec.output + ".gp";
        std::string data_path = script_path + ".dat";
        // Each is written whole and renamed over its name: never over a device or a FIFO.
        for (const std::string& target : {spec.output, script_path, data_path}) {
          if (!vm.count("script") && target != spec.output) continue;
          if (std::string why = output_target_problem(target); !why.empty()) {
            throw Error::input(Mark::in(target), "", why, "name a regular file");
          }
        }
        // The script and data of the figure for a spec: the whole-table kinds', or the means'.
        std::vector<PlotPoint> points;
        size_t left_out = 0;
        std::string said;
        std::function<TableFigure(const PlotSpec&)> make;
        if (kind->whole_table()) {
          make = [&](const PlotSpec& s) {
            TableFigure f = static_cast<const TableKind&>(*kind).figure(table, s, data_path);
            said = f.said;
            return f;
          };
        } else {
          describe_figure(table, &spec);
          points = plot_points(table, spec, &left_out);
          make = [&](const PlotSpec& s) {
            TableFigure f;
            f.script = gnuplot_script(points, s, data_path, &f.data);
            return f;
          };
        }
        // gnuplot draws into a temporary file that replaces the figure only when it succeeds; the
        // script kept for the user names the figure itself.
        AtomicFile figure(spec.output, AtomicFile::Kind::kNamed);
        PlotSpec drawing = spec;
        drawing.draw_to = figure.temporary_path();
        TableFigure drawn = make(drawing);
        std::string run_path = script_path + ".run";
        write_file_atomic(data_path, drawn.data);
        write_file_atomic(run_path, drawn.script);
        if (vm.count("script")) write_file_atomic(script_path, make(spec).script);
        Captured run = capture_process({"gnuplot", run_path}, 120);
        std::error_code ec;
        fs::remove(run_path, ec);
        if (!vm.count("script")) fs::remove(data_path, ec);
        if (!run.started) {
          throw Error::input(Mark::in("gnuplot"), "", "not found",
                             "install gnuplot (Debian: gnuplot-nox; scripts/install-deps does)");
        }
        if (!run.ok()) {
          throw Error(ErrorKind::kIo, Mark::in(spec.output), "",
                      "gnuplot failed: " + trim(run.err.empty() ? run.out : run.err));
        }
        figure.commit();
        if (kind->whole_table()) {
          err << "bench-plot: " << spec.output << ": " << said
              << (vm.count("script") ? "; script " + script_path : "") << "\n";
          return kExitOk;
        }
        size_t fewest = points.front().count, most = fewest;
        for (const PlotPoint& p : points) {
          fewest = std::min(fewest, p.count);
          most = std::max(most, p.count);
        }
        err << "bench-plot: " << spec.output << ": " << plural(points.size(), "value") << " of "
            << join(spec.metrics, ", ") << " by " << spec.x
            << (spec.hue.empty() ? "" : " and " + spec.hue) << ", each the mean of "
            << (fewest == most ? std::to_string(fewest)
                               : std::to_string(fewest) + " to " + std::to_string(most))
            << (most == 1 ? " row" : " rows")
            << (left_out ? ", " + std::to_string(left_out) +
                               " rows left out (not ok "
                               "or no value)"
                         : "")
            << (vm.count("script") ? "; script " + script_path : "") << "\n";
        return kExitOk;
      });
}

}  // namespace sweepbench
