#include "plot/plot.h"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "core/text.h"
#include "extract/tool_main.h"
#include "results/summary.h"
#include "run/process.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

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

// gnuplot's string syntax: double quotes with backslash escapes.
std::string gp_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
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

bool numeric_order(const std::vector<std::string>& values) {
  for (const std::string& v : values) {
    if (!number(v)) return false;
  }
  return true;
}

}  // namespace

CsvTable parse_csv(const std::string& text, const std::string& source) {
  CsvTable t;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  int line = 1;
  auto end_row = [&] {
    row.push_back(field);
    field.clear();
    if (t.columns.empty()) {
      t.columns = row;
    } else if (!(row.size() == 1 && row[0].empty())) {
      if (row.size() != t.columns.size()) {
        throw Error::input(Mark::in(source, line), "",
                           std::to_string(row.size()) + " fields, the header has " +
                               std::to_string(t.columns.size()),
                           "is it a bench-extract CSV?");
      }
      t.rows.push_back(row);
    }
    row.clear();
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n') {
      end_row();
      ++line;
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  if (any || !field.empty()) end_row();
  if (t.columns.empty()) throw Error::input(Mark::in(source), "", "is empty");
  return t;
}

std::vector<PlotPoint> plot_points(const CsvTable& t, const PlotSpec& spec, size_t* left_out) {
  size_t metric = column_index(t, spec.metric, "--metric");
  size_t x = column_index(t, spec.x, "--x");
  std::optional<size_t> hue;
  if (!spec.hue.empty()) hue = column_index(t, spec.hue, "--hue");
  std::optional<size_t> status;
  if (std::find(t.columns.begin(), t.columns.end(), "status") != t.columns.end()) {
    status = column_index(t, "status", "status");
  }
  std::map<std::pair<std::string, std::string>, std::vector<double>> groups;
  std::vector<std::pair<std::string, std::string>> order;
  *left_out = 0;
  bool any_text = false;
  for (const auto& row : t.rows) {
    if (status && row[*status] != "ok") {
      ++*left_out;
      continue;
    }
    std::optional<double> v = number(row[metric]);
    if (!v) {
      any_text = any_text || !row[metric].empty();
      ++*left_out;
      continue;
    }
    auto key = std::make_pair(row[x], hue ? row[*hue] : std::string());
    if (groups.find(key) == groups.end()) order.push_back(key);
    groups[key].push_back(*v);
  }
  if (groups.empty()) {
    throw Error::input(
        Mark::in("--metric " + spec.metric), "",
        any_text ? "is not a numeric column" : "nothing to plot: no row with status ok has a value",
        any_text ? "choose a metric column such as train_tokens_per_second"
                 : "check the CSV's status column (bench-extract)");
  }
  std::vector<PlotPoint> points;
  for (const auto& key : order) {
    const std::vector<double>& values = groups[key];
    points.push_back({key.first, key.second, mean(values), stddev(values), values.size()});
  }
  return points;
}

std::string gnuplot_script(const std::vector<PlotPoint>& points, const PlotSpec& spec,
                           const std::string& data_path, std::string* data) {
  std::vector<std::string> xs, hues;
  for (const PlotPoint& p : points) {
    if (std::find(xs.begin(), xs.end(), p.x) == xs.end()) xs.push_back(p.x);
    if (std::find(hues.begin(), hues.end(), p.hue) == hues.end()) hues.push_back(p.hue);
  }
  if (numeric_order(xs)) {
    std::sort(xs.begin(), xs.end(),
              [](const std::string& a, const std::string& b) { return *number(a) < *number(b); });
  }
  auto find = [&](const std::string& x, const std::string& hue) -> const PlotPoint* {
    for (const PlotPoint& p : points) {
      if (p.x == x && p.hue == hue) return &p;
    }
    return nullptr;
  };
  // The data: one row per x; per hue, mean and std ("NaN" where a hue has no point).
  std::ostringstream d;
  d << "# x";
  for (const std::string& h : hues) d << "\t" << (h.empty() ? spec.metric : h) << "_mean\tstd";
  d << "\n";
  for (size_t i = 0; i < xs.size(); ++i) {
    d << gp_string(xs[i]);
    for (const std::string& h : hues) {
      const PlotPoint* p = find(xs[i], h);
      d << "\t" << (p ? format_float_repr(p->mean) : "NaN") << "\t"
        << (p ? format_float_repr(p->std) : "NaN");
    }
    d << "\n";
  }
  *data = d.str();

  std::ostringstream s;
  s << "# Written by bench-plot: " << spec.kind << " of " << spec.metric << " against " << spec.x
    << (spec.hue.empty() ? "" : " by " + spec.hue) << ". Edit and run: gnuplot THIS_FILE\n";
  s << "set terminal " << terminal_for(spec.output) << "\n";
  s << "set output " << gp_string(spec.output) << "\n";
  s << "set datafile separator tab\nset datafile missing 'NaN'\n";
  s << "set title " << gp_string(spec.title.empty() ? spec.metric : spec.title) << " noenhanced\n";
  s << "set ylabel " << gp_string(spec.metric) << " noenhanced\n";
  s << "set xlabel " << gp_string(spec.x) << " noenhanced\n";
  s << "set key outside right top noenhanced\nset grid ytics\nset yrange [0:*]\n";
  std::string data_file = gp_string(data_path);
  auto title_of = [&](const std::string& h) {
    return gp_string(h.empty() ? spec.metric : spec.hue + "=" + h);
  };
  if (spec.kind == "bar") {
    s << "set style data histogram\nset style histogram errorbars gap 1 lw 1\n"
      << "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset xtics noenhanced\n";
    s << "plot";
    for (size_t k = 0; k < hues.size(); ++k) {
      s << (k ? ", \\\n    " : " ") << data_file << " using " << (2 + 2 * k) << ":" << (3 + 2 * k)
        << (k == 0 ? ":xtic(1)" : "") << " title " << title_of(hues[k]);
    }
    s << "\n";
  } else {
    if (!numeric_order(xs)) {
      throw Error::input(
          Mark::in("--x " + spec.x), "",
          "a " + spec.kind + " plot needs a numeric x, and '" + spec.x + "' has text values",
          "use --kind bar, or another --x");
    }
    if (spec.kind == "scaling") s << "set logscale x 2\n";
    std::string tics;
    for (size_t i = 0; i < xs.size(); ++i) tics += (i ? ", " : "") + xs[i];
    s << "set xtics (" << tics << ")\nset offsets graph 0.05, graph 0.05, 0, 0\n";
    s << "plot";
    for (size_t k = 0; k < hues.size(); ++k) {
      s << (k ? ", \\\n    " : " ") << data_file << " using 1:" << (2 + 2 * k) << ":" << (3 + 2 * k)
        << " with yerrorlines lw 2 pt 7 title " << title_of(hues[k]);
    }
    if (spec.kind == "scaling") {
      // Ideal: from the smallest world size, per-device numbers stay level and totals grow in
      // proportion to it.
      const PlotPoint* base = find(xs.front(), hues.front());
      if (base != nullptr) {
        bool per_device = spec.metric.find("per_device") != std::string::npos ||
                          spec.metric.find("mfu") != std::string::npos ||
                          spec.metric.find("time") != std::string::npos;
        std::string x0 = xs.front();
        s << ", \\\n    "
          << (per_device ? format_float_repr(base->mean)
                         : format_float_repr(base->mean) + " * x / " + x0)
          << " with lines dt 2 lc rgb 'gray40' title 'ideal'";
      }
    }
    s << "\n";
  }
  return s.str();
}

namespace {

const char* const kUsage = R"(bench-plot: a bench-extract CSV to a figure (gnuplot).
Usage: bench-plot -i results.csv -o fig.png|svg|pdf --metric COL [--x COL] [--hue COL]
                  [--kind bar|line|scaling] [--title T] [--script out.gp]
Plots the mean of --metric over the rows with status ok that share --x (and --hue), with the
standard deviation over repeats as error bars. bar: clustered bars per x, one colour per hue.
line: one line per hue over a numeric x. scaling: the metric against world size (log2 axis, --x
defaults to world_size) with the ideal line from the smallest world size (level for per-device
metrics, proportional for totals). --script also writes the gnuplot script and its data file
(out.gp.dat) so the figure can be restyled.
Examples:
  bench-plot -i runs/qs.csv -o qs.png --metric train_tokens_per_second --x train.micro_batch --hue data.seq_len
  bench-plot -i scaling.csv -o scaling.svg --kind scaling --metric tokens_per_second_per_device
Docs: docs/extract.md. Exit codes: 0, 2 bad input (unknown column, nothing to plot, no gnuplot),
4 file-system error.
Options:
)";

}  // namespace

int bench_plot_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")("input,i", po::value<std::string>(),
                                                 "The CSV (bench-extract)")(
      "output,o", po::value<std::string>(), "The figure: .png, .svg or .pdf")(
      "metric", po::value<std::string>(), "The column to plot")(
      "x", po::value<std::string>(), "The x column (default: tag; world_size for scaling)")(
      "hue", po::value<std::string>(), "One series per value of this column")(
      "kind", po::value<std::string>()->default_value("bar"), "bar, line or scaling")(
      "title", po::value<std::string>(), "The title (default: the metric)")(
      "script", po::value<std::string>(), "Also write the gnuplot script here (and its data)");
  return run_tool(
      "bench-plot", args, desc, kUsage, out, err, [&](const po::variables_map& vm) -> int {
        for (const char* required : {"input", "output", "metric"}) {
          if (!vm.count(required)) {
            err << "bench-plot: error: --" << required << " is missing\n"
                << "usage: bench-plot -i results.csv -o fig.png --metric COL  (bench-plot "
                   "--help)\n";
            return 2;
          }
        }
        PlotSpec spec;
        spec.kind = vm["kind"].as<std::string>();
        if (spec.kind != "bar" && spec.kind != "line" && spec.kind != "scaling") {
          throw Error::input(Mark::in("--kind " + spec.kind), "", "unknown kind",
                             "use bar, line or scaling");
        }
        spec.metric = vm["metric"].as<std::string>();
        spec.output = fs::absolute(vm["output"].as<std::string>()).string();
        spec.x = vm.count("x") ? vm["x"].as<std::string>()
                               : (spec.kind == "scaling" ? "world_size" : "tag");
        if (vm.count("hue")) spec.hue = vm["hue"].as<std::string>();
        if (vm.count("title")) spec.title = vm["title"].as<std::string>();
        terminal_for(spec.output);  // a bad extension is an error before any work

        std::string input = vm["input"].as<std::string>();
        std::optional<std::string> text = read_file_if_exists(input);
        if (!text)
          throw Error::input(Mark::in(input), "", "no such file", "give bench-extract's CSV");
        CsvTable table = parse_csv(*text, input);
        size_t left_out = 0;
        std::vector<PlotPoint> points = plot_points(table, spec, &left_out);

        std::string script_path = vm.count("script")
                                      ? fs::absolute(vm["script"].as<std::string>()).string()
                                      : spec.output + ".gp";
        std::string data_path = script_path + ".dat";
        std::string data;
        std::string script = gnuplot_script(points, spec, data_path, &data);
        write_file_atomic(data_path, data);
        write_file_atomic(script_path, script);
        Captured run = capture_process({"gnuplot", script_path}, 120);
        if (!vm.count("script")) {
          std::error_code ec;
          fs::remove(script_path, ec);
          fs::remove(data_path, ec);
        }
        if (!run.started) {
          throw Error::input(Mark::in("gnuplot"), "", "not found",
                             "install gnuplot (Debian: gnuplot-nox; scripts/install-deps does)");
        }
        if (!run.ok()) {
          throw Error(ErrorKind::kIo, Mark::in(spec.output), "",
                      "gnuplot failed: " + trim(run.err.empty() ? run.out : run.err));
        }
        err << "bench-plot: " << spec.output << ": " << plural(points.size(), "value") << " of "
            << spec.metric
            << (left_out ? ", " + std::to_string(left_out) +
                               " rows left out (not ok "
                               "or no value)"
                         : "")
            << (vm.count("script") ? "; script " + script_path : "") << "\n";
        return 0;
      });
}

}  // namespace sweepbench
