// The columns of a table of points: the lists of identity, metric, memory, prediction and
// reference columns, and every column a table of points may have (extract_columns,
// series_columns), from what the points' configs and status.json say they hold.
#pragma once

#include <string>
#include <vector>

#include "postprocess/extract_table.h"

namespace sweepbench {

// sweep, tag, index, scenario, repeat, status, reason.
const std::vector<std::string>& identity_columns();
// The metric columns in the order summarize() gives them, whether or not a point has them.
const std::vector<std::string>& metric_columns();
// Those of training (summarize()) and of inference (summarize_infer()) alone.
const std::vector<std::string>& training_metric_columns();
const std::vector<std::string>& inference_metric_columns();
// The memory columns of docs/extract.md.
const std::vector<std::string>& memory_column_names();
// The predictions beside the measurements and their errors (docs/extract.md).
const std::vector<std::string>& prediction_column_names();

// Every column a row of these points may have, in order: identity, config keys (params as one
// column per entry any point has), world_size, device, the metrics of docs/metrics.md, each
// command metric any point defines, exit_code, seconds, units, memory, cost.
std::vector<std::string> extract_columns(const std::vector<std::string>& point_dirs);

// The columns of a series table, in order.
std::vector<std::string> series_columns(Series series, const std::vector<std::string>& point_dirs);

// The columns of a metric's performance reference (sweep/references.h): the reference, the
// allowed range's ends (empty where unbounded) and whether the point passed:
// <metric>_ref, _ref_low, _ref_high, _ref_pass. The row's `reference` is pass or miss.
std::vector<std::string> reference_columns(const std::string& metric);

}  // namespace sweepbench
