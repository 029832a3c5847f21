// bench-plot: a bench-extract CSV to a figure, rendered by gnuplot.
//
// Reads the table, keeps the rows whose status is ok, groups them by (x, hue) and plots the mean
// of each --metric with the 95% interval of the mean over repeats as error bars. A series is one
// (metric, hue) pair, so two metrics (training and evaluation samples/s, say) stand side by side.
// Three kinds: bar (clustered bars per x, one colour per series), line (one line per series over
// a numeric x) and scaling (the metric against world size on a log2 axis, with the ideal line from
// the smallest world size); pareto, curve and change are drawn from the whole table
// (plot_figures.cc). gnuplot runs as a child process on a script we write, drawing into a
// temporary file renamed over the figure when done; --script keeps the script and its data so a
// figure can be restyled. Leaves out: facets, a second y axis.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "config/table.h"  // CsvTable

namespace sweepbench {

struct PlotSpec {
  std::vector<std::string> metrics;  // one or more columns, plotted side by side
  std::string x, hue, kind = "bar", title, output;
  std::string draw_to;  // the file gnuplot writes, when not `output` (a temporary file)
  // From the table (describe_figure): the config columns that vary over the ok rows (rows that
  // share x and hue must agree on them to be averaged), each hue's legend label, each metric's
  // unit and the factor that scales it there, and where and when the rows were measured.
  std::vector<std::string> varying;
  std::map<std::string, std::string> hue_labels;
  std::map<std::string, std::pair<std::string, double>> units;
  // The unit a command declared for each metric (the CSV's units column), absent when none did:
  // with the name it gives the metric's direction (metrics/summary.h's higher_is_better).
  std::map<std::string, std::string> declared_units;
  std::string where;
  // The unit of an x that is a measurement, as its values are (no scaling); "" where none.
  std::string x_unit;
};

// Fills spec->varying, hue_labels, units and where from the table's ok rows (docs/extract.md,
// "Figures"): legends from the keys that vary (`kv_cache=dynamic, batch_size=1`, not a tag),
// times in s, ms or µs and bytes in KiB, MiB or GiB as the values need, the devices and dates.
void describe_figure(const CsvTable& table, PlotSpec* spec);

// One plotted value: the mean of `metric` over `count` rows and its 95% interval's half width.
struct PlotPoint {
  std::string metric, x, hue;
  // std: the half width of the 95% interval: of the mean over the group's rows (repeats), or a
  // single row's own where it has one; 0 where there is none.
  double mean = 0, std = 0;
  size_t count = 0;
  // What the figure writes above the point: "shared" where a row's CPUs were shared (cpu_shared
  // above bench-extract's threshold), "imprecise" where it missed its metrics.target_ci.
  std::string note;
};

// Groups the ok rows, metric by metric; Error(kInput) for an unknown column (listing the
// columns), a metric that is not numeric, a metric with nothing to plot, or rows of one group
// that differ in a column of spec.varying (their mean would mix configurations; the error names
// the column). `left_out` counts rows that are not ok or lack a value of some metric.
std::vector<PlotPoint> plot_points(const CsvTable& table, const PlotSpec& spec, size_t* left_out);

// The gnuplot script that draws `points` from the data file `data_path` into spec.output; the
// data file's text goes to *data.
std::string gnuplot_script(const std::vector<PlotPoint>& points, const PlotSpec& spec,
                           const std::string& data_path, std::string* data);

// The registered plot kinds (--kind): bar, line, scaling, and those drawn from the whole table,
// pareto, curve and change.
std::vector<std::string> plot_kind_names();

// The script's first lines: terminal, output, the data file's format, and the title (the
// spec's, else `default_title`) with where and when below it.
std::string script_preamble(const PlotSpec& spec, const std::string& default_title);

// A figure drawn from the whole table rather than from means per x: its script, its data file's
// text, and what bench-plot says it drew.
struct TableFigure {
  std::string script, data, said;
};

// --kind pareto: every ok row as a point of the metric (y) against --x, another metric, with
// each one's 95% interval as error bars where the table has them (<metric>_ci_low, _ci_high).
// The rows on the Pareto front (metrics/pareto.h: no other row of the same --hue value better in
// both beyond the intervals) are filled, joined and labelled with the keys that vary; the others
// hollow. Error(kInput) for a missing column, more than one --metric, or no row with both.
TableFigure pareto_figure(const CsvTable& table, const PlotSpec& spec,
                          const std::string& data_path);

// --kind curve: the metric (y) against --x, another metric, one line per --hue value
// (InferenceMAX's throughput against interactivity). A point is the ok rows that agree on every key
// that varies and, in a table of serve levels (bench-extract --series levels), on the level: their
// means, with their standard deviations as error bars both ways, joined in the order of the level
// (else of x) and labelled with the keys that vary within the line. Error(kInput) as pareto_figure.
TableFigure curve_figure(const CsvTable& table, const PlotSpec& spec, const std::string& data_path);

// --kind change: bench-compare's CSV (--format csv): each point's change of each metric in % with
// its 95% interval, coloured by verdict (better, worse, ~, inconclusive) around a line at 0, and
// the geomean rows last. spec.metrics: the metrics to draw (empty: all).
TableFigure change_figure(const CsvTable& table, const PlotSpec& spec,
                          const std::string& data_path);

int bench_plot_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sweepbench
