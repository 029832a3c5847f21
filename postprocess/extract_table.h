// What bench-extract's parts hand each other: one point's row (ExtractedPoint), a table of such
// rows (ExtractTable) and which long table --series asks for (Series). Each part declares its
// functions in its own header (discover.h, point_row.h, point_columns.h, point_series.h,
// reader_pool.h, table_ops.h, table_writer.h, extract.h); this one holds only the values they
// share, so that none of them needs another's header for these.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "config/value.h"

namespace sweepbench {

// One point's row and what went wrong while reading it.
struct ExtractedPoint {
  std::map<std::string, Value> row;   // absent cell = empty
  std::vector<std::string> warnings;  // "PATH: problem"
  bool incomplete = false;
  // --series: the point's rows of the long table (each with the row's identity and config).
  std::vector<std::map<std::string, Value>> series;
};

// bench-extract --series: a long table of many rows per point instead of one row per point, for
// line figures (parse_series in point_series.h reads the option). tokens: one row per generated
// token position of a bench-infer point (the time of that token over the timed runs, each run's
// the slowest rank's; position 0 is the first token, its time the TTFT). system: one row per
// sample of the background sampler, per rank (CPU and RAM over time, PACE's system monitor).
// lists: one row per value of a command point's list metrics (`reduce: all`, vLLM's latencies):
// the metric's name and unit, the value's place in its list (item) and the value.
// levels: one row per load level of a serve point (docs/serving.md): the level, whether the SLA
// search added it, and its figures (metrics/serve_columns.h).
enum class Series { kNone, kTokens, kSystem, kLists, kLevels };

struct ExtractTable {
  std::vector<std::string> columns;
  std::vector<std::map<std::string, Value>> rows;  // absent cell = empty
  std::vector<std::string> warnings;               // "PATH: problem"
  size_t incomplete = 0;
};

}  // namespace sweepbench
