// bench-extract: a results tree to one table, one row per point.
//
// A point is a directory holding a config.yaml, a status.json or rank-NNNNN.h5 files (earlier
// attempts under attempts/ are history, not points). Its row: identity (sweep, tag, index,
// scenario, repeat from the manifest beside it), status and reason (status.json, else the rank
// files), every config key as a dotted column, then the metrics of docs/metrics.md computed from
// all ranks' files with summary_input_from_ranks(). A point that failed is a row with its status;
// a rank file that cannot be read makes the row `incomplete` and a warning naming the file. One
// table, many printers (CSV, JSON, JSON lines, Markdown), as for plans. Leaves out, for now: the
// fms-acceleration memory columns, the sampler's columns, streaming of huge trees.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "core/value.h"

namespace sweepbench {

struct ExtractTable {
  std::vector<std::string> columns;
  std::vector<std::map<std::string, Value>> rows;  // absent cell = empty
  std::vector<std::string> warnings;               // "PATH: problem"
  size_t incomplete = 0;
};

// The point directories under each path (a path may itself be one), in sorted order.
std::vector<std::string> find_point_dirs(const std::vector<std::string>& paths);

// `price_per_hour` (USD per device-hour; < 0: none) is the default for points whose
// hardware.price_per_hour is null; cost_usd_per_mtok = price x world_size / mt_per_hour.
ExtractTable extract_points(const std::vector<std::string>& point_dirs, double price_per_hour = -1);

// One row per point over its repeats (rows that differ only in tag, index and repeat): `repeats`
// counts them, each metric becomes the mean over the ok repeats and gains a `_std` column (sample
// standard deviation). The status is ok when every repeat is; otherwise the first other status,
// with the reason saying how many repeats were ok.
void group_repeats(ExtractTable* table);

// Leaves out the columns whose value is the same in every row, except `keep` and the identity
// columns (tag, status).
void drop_constant_columns(ExtractTable* table, const std::vector<std::string>& keep);

enum class ExtractFormat { kCsv, kJson, kJsonl, kMarkdown };
// csv, json, jsonl, md; Error(kInput) otherwise.
ExtractFormat parse_extract_format(const std::string& name);
// From an output file's extension (.csv, .json, .jsonl, .md); Error(kInput) for others.
ExtractFormat extract_format_of_path(const std::string& path);

void print_table(const ExtractTable& table, ExtractFormat format, std::ostream& out);

int bench_extract_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sweepbench
