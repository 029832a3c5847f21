// bench-plot: a bench-extract CSV to a figure, rendered by gnuplot.
//
// Reads the table, keeps the rows whose status is ok, groups them by (x, hue) and plots the mean
// of --metric with the standard deviation over repeats as error bars. Three kinds: bar (clustered
// bars per x, one colour per hue), line (one line per hue over a numeric x) and scaling (the
// metric against world size on a log2 axis, with the ideal line from the smallest world size).
// gnuplot runs as a child process on a script we write; --script keeps the script and its data
// so a figure can be restyled. Leaves out: facets, two metrics side by side.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace sweepbench {

struct CsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

// RFC 4180: quoted fields, doubled quotes, newlines inside quotes. Error(kInput) naming the file
// and line for a row whose field count differs from the header's.
CsvTable parse_csv(const std::string& text, const std::string& source);

struct PlotSpec {
  std::string metric, x, hue, kind = "bar", title, output;
};

// One plotted value: the mean and sample standard deviation over `count` rows.
struct PlotPoint {
  std::string x, hue;
  double mean = 0, std = 0;
  size_t count = 0;
};

// Groups the ok rows; Error(kInput) for an unknown column (listing the columns), a metric that is
// not numeric, or nothing to plot. `left_out` counts rows that are not ok or have no value.
std::vector<PlotPoint> plot_points(const CsvTable& table, const PlotSpec& spec, size_t* left_out);

// The gnuplot script that draws `points` from the data file `data_path` into spec.output; the
// data file's text goes to *data.
std::string gnuplot_script(const std::vector<PlotPoint>& points, const PlotSpec& spec,
                           const std::string& data_path, std::string* data);

int bench_plot_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sweepbench
