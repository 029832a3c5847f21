#include "postprocess/plot.h"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "os/fs.h"
#include "os/process.h"
#include "postprocess/plot_text.h"
#include "postprocess/tool_main.h"
#include "text/error.h"
#include "text/exit_codes.h"
#include "text/registry.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

// Whether every x is a number (then they are drawn in numeric order).
bool numeric_order(const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    if (!number(v)) return false;
  }
  return true;
}

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

namespace {

// What the steps of gnuplot_script share: the points' xs (in plotting order) and series, and how
// a point is found, a series labelled and a metric scaled.
struct ScriptParts {
  ScriptParts(const std::vector<PlotPoint>& plotted, const PlotSpec& figure)
      : points(plotted), spec(figure), several(figure.metrics.size() > 1) {
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
  }
  const PlotPoint* find(const std::string& x, const Series& q) const {
    for (const PlotPoint& p : points) {
      if (p.x == x && p.metric == q.metric && p.hue == q.hue) return &p;
    }
    return nullptr;
  }
  std::string label(const Series& q) const {
    if (q.hue.empty()) return q.metric;
    auto known = spec.hue_labels.find(q.hue);
    std::string h = known != spec.hue_labels.end() ? known->second : spec.hue + "=" + q.hue;
    return several ? q.metric + ", " + h : h;
  }
  double factor(const std::string& metric) const {
    auto it = spec.units.find(metric);
    return it == spec.units.end() ? 1.0 : it->second.second;
  }
  // The top of a point's error bar, in the axis' unit.
  double top_of(const PlotPoint& p) const {
    return (p.mean + (std::isfinite(p.std) ? p.std : 0.0)) * factor(p.metric);
  }

  const std::vector<PlotPoint>& points;
  const PlotSpec& spec;
  std::vector<std::string> xs;
  std::vector<Series> series;
  bool several = false;  // several metrics side by side
};

// The data: one row per x; per series, mean and std ("NaN" where a series has no point).
std::string data_text(const ScriptParts& parts) {
  std::ostringstream d;
  d << "# x";
  for (const Series& q : parts.series) {
    std::string name = q.hue.empty() ? q.metric : (parts.several ? q.metric + ":" : "") + q.hue;
    d << "\t" << one_line(name) << "_mean\tci95";
  }
  d << "\n";
  for (const std::string& x : parts.xs) {
    d << gp_data_text(x);
    for (const Series& q : parts.series) {
      const PlotPoint* p = parts.find(x, q);
      double f = parts.factor(q.metric);
      d << "\t" << (p ? format_float_repr(p->mean * f) : "NaN") << "\t"
        << (p ? format_float_repr(p->std * f) : "NaN");
    }
    d << "\n";
  }
  return d.str();
}

// The script's head: what wrote it, the preamble, the axes' labels, the legend and what the error
// bars are.
void script_head(const ScriptParts& parts, std::ostream& s) {
  const PlotSpec& spec = parts.spec;
  std::string metrics = join(spec.metrics, ", ");
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
  for (const Series& q : parts.series) widest = std::max(widest, display_width(parts.label(q)));
  if (widest <= 24) {
    s << "set key outside right top noenhanced\n";
  } else {
    s << "set key outside bottom center horizontal maxcols 2 noenhanced\n"
      << "set bmargin " << 4 + (parts.series.size() + 1) / 2 << "\n";
  }
  // What the error bars are, on the figure: the tables' 95% intervals, not a spread.
  if (std::any_of(parts.points.begin(), parts.points.end(),
                  [](const PlotPoint& p) { return p.std > 0; })) {
    s << "set label " << gp_string("error bars: 95% intervals of the mean")
      << " at screen 0.01, screen 0.02 font ',8' noenhanced\n";
  }
  s << "set grid ytics\nset yrange [0:*]\n";
}

// A point measured with its CPUs shared, or short of its target, says so above its bar or
// point (PlotPoint::note), and the y axis makes room for the words above the highest.
void note_labels(const ScriptParts& parts, const PlotKind& kind, std::ostream& s) {
  double highest = 0;
  bool noted = false;
  for (const PlotPoint& p : parts.points) {
    highest = std::max(highest, parts.top_of(p));
    noted = noted || !p.note.empty();
  }
  if (noted && highest > 0) s << "set yrange [0:" << format_float_repr(highest * 1.45) << "]\n";
  for (size_t i = 0; i < parts.xs.size(); ++i) {
    for (size_t k = 0; k < parts.series.size(); ++k) {
      const PlotPoint* p = parts.find(parts.xs[i], parts.series[k]);
      if (p == nullptr || p->note.empty()) continue;
      s << "set label " << gp_string(p->note) << " at "
        << format_float_repr(kind.position(i, k, parts.series.size(), parts.xs[i])) << ", "
        << format_float_repr(parts.top_of(*p))
        << " rotate by 90 left front font \",9\" offset 0,0.5 "
        << "noenhanced\n";
    }
  }
}

}  // namespace

std::string gnuplot_script(const std::vector<PlotPoint>& points, const PlotSpec& spec,
                           const std::string& data_path, std::string* data) {
  std::unique_ptr<PlotKind> kind = plot_kinds().make(spec.kind);
  const ScriptParts parts(points, spec);
  *data = data_text(parts);
  std::ostringstream s;
  script_head(parts, s);
  std::string data_file = gp_string(data_path);
  if (kind->numeric_x() && !numeric_order(parts.xs)) {
    throw Error::input(
        Mark::in("--x " + spec.x), "",
        "a " + spec.kind + " plot needs a numeric x, and '" + spec.x + "' has text values",
        "use --kind bar, or another --x");
  }
  note_labels(parts, *kind, s);
  kind->draw(s, PlotContext{spec, parts.series, parts.xs, data_file,
                            [&](const std::string& x, const Series& q) { return parts.find(x, q); },
                            [&](const Series& q) { return parts.label(q); },
                            [&](const std::string& metric) { return parts.factor(metric); },
                            parts.several});
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

po::options_description plot_options() {
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
  return desc;
}

// The files of one figure: the script kept for the user (with --script) and its data, and the
// script gnuplot runs.
struct PlotFiles {
  std::string script, data, run;
  bool keep_script = false;
};

// Each is written whole and renamed over its name: never over a device or a FIFO.
PlotFiles plot_files(const po::variables_map& vm, const PlotSpec& spec) {
  PlotFiles files;
  files.keep_script = vm.count("script") > 0;
  files.script = files.keep_script ? fs::absolute(vm["script"].as<std::string>()).string()
                                   : spec.output + ".gp";
  files.data = files.script + ".dat";
  files.run = files.script + ".run";
  for (const std::string& target : {spec.output, files.script, files.data}) {
    if (!files.keep_script && target != spec.output) continue;
    if (std::string why = output_target_problem(target); !why.empty()) {
      throw Error::input(Mark::in(target), "", why, "name a regular file");
    }
  }
  return files;
}

// gnuplot draws into a temporary file that replaces the figure only when it succeeds; the
// script kept for the user names the figure itself. `make`: the script and data for a spec.
void draw_figure(const PlotSpec& spec, const PlotFiles& files,
                 const std::function<TableFigure(const PlotSpec&)>& make) {
  AtomicFile figure(spec.output, AtomicFile::Kind::kNamed);
  PlotSpec drawing = spec;
  drawing.draw_to = figure.temporary_path();
  TableFigure drawn = make(drawing);
  write_file_atomic(files.data, drawn.data);
  write_file_atomic(files.run, drawn.script);
  if (files.keep_script) write_file_atomic(files.script, make(spec).script);
  Captured run = capture_process({"gnuplot", files.run}, 120);
  std::error_code ec;
  fs::remove(files.run, ec);
  if (!files.keep_script) fs::remove(files.data, ec);
  if (!run.started) {
    throw Error::input(Mark::in("gnuplot"), "", "not found",
                       "install gnuplot (Debian: gnuplot-nox; scripts/install-deps does)");
  }
  if (!run.ok()) {
    throw Error(ErrorKind::kIo, Mark::in(spec.output), "",
                "gnuplot failed: " + trim(run.err.empty() ? run.out : run.err));
  }
  figure.commit();
}

// What a figure of means says it drew: how many values, of how many rows each, what was left out.
void say_means_drawn(const PlotSpec& spec, const PlotFiles& files,
                     const std::vector<PlotPoint>& points, size_t left_out, std::ostream& err) {
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
      << (files.keep_script ? "; script " + files.script : "") << "\n";
}

}  // namespace

int bench_plot_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_tool(
      "bench-plot", args, plot_options(), kUsage, out, err,
      [&](const po::variables_map& vm) -> int {
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
        if (vm.count("metric"))
          spec.metrics = split_commas(vm["metric"].as<std::vector<std::string>>());
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
        const PlotFiles files = plot_files(vm, spec);
        // The script and data of the figure for a spec: the whole-table kinds', or the means'.
        if (kind->whole_table()) {
          std::string said;
          draw_figure(spec, files, [&](const PlotSpec& s) {
            TableFigure f = static_cast<const TableKind&>(*kind).figure(table, s, files.data);
            said = f.said;
            return f;
          });
          err << "bench-plot: " << spec.output << ": " << said
              << (files.keep_script ? "; script " + files.script : "") << "\n";
          return kExitOk;
        }
        describe_figure(table, &spec);
        size_t left_out = 0;
        const std::vector<PlotPoint> points = plot_points(table, spec, &left_out);
        draw_figure(spec, files, [&](const PlotSpec& s) {
          TableFigure f;
          f.script = gnuplot_script(points, s, files.data, &f.data);
          return f;
        });
        say_means_drawn(spec, files, points, left_out, err);
        return kExitOk;
      });
}

}  // namespace sweepbench
