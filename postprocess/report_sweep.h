// bench-report: results trees to one self-contained HTML page (docs/report.md), opened from the
// file system: a sweep's figures (each headline metric against each axis the sweeps vary, the
// Pareto front, per-token latency for inference) over its sortable table (bench-extract's table
// for people). Figures and cells come from bench-extract's rows; nothing is measured here.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "postprocess/extract_table.h"

namespace sweepbench {

struct SweepReportOptions {
  std::vector<std::string> metrics;  // --metric: the figures' metrics; empty: the headline ones
  std::vector<std::string> axes;     // the keys the sweeps vary, in their files' order
  std::vector<std::string> inputs;   // what was read, for the page's header
  std::string title;                 // "" for "sweepbench report: SWEEP"
};

struct SweepReport {
  std::string html;
  size_t points = 0, figures = 0;
};

// The page for the rows of `table` (extract_points'). Error(kInput) for a --metric no row has.
SweepReport sweep_report(const ExtractTable& table, const SweepReportOptions& options);

// The headline metrics of rows: training throughput, inference output throughput, a command's
// declared metrics (its units map), else the wall time `seconds`; those some row has a value of.
std::vector<std::string> headline_metrics(const std::vector<std::map<std::string, Value>>& rows);

int bench_report_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sweepbench
