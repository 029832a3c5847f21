// bench-extract's long tables (--series): a point's many rows, each starting as the point's row
// (identity and config): its token times by position, its samples over time, each value of its
// list metrics, or its load levels.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/value.h"
#include "metrics/rank_result.h"
#include "postprocess/extract_table.h"

namespace sweepbench {

// --series NAME as a Series (extract_table.h says what each gives).
Series parse_series(const std::string& name);  // Error(kInput) for another name

// The rows of a point's long table (--series), each starting as the point's row (identity and
// config).
std::vector<std::map<std::string, Value>> series_rows(Series series,
                                                      const std::vector<RankResult>& ranks,
                                                      const std::map<std::string, Value>& point);

}  // namespace sweepbench
