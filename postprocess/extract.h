// bench-extract: a results tree to one table, one row per point.
//
// A point is a directory holding a config.yaml, a status.json or rank-NNNNN.h5 files (earlier
// attempts under attempts/ are history, not points). Its row: identity (sweep, tag, index,
// scenario, repeat from the manifest beside it), status and reason (status.json, else the rank
// files), every config key as a dotted column, then the metrics of docs/metrics.md computed from
// all ranks' files with summary_input_from_ranks(). A point that failed is a row with its status;
// a rank file that cannot be read makes the row `incomplete` and a warning naming the file.
//
// Points stream: each is read, turned into its row and handed on before the next, by `jobs`
// reader processes (HDF5 serializes the threads of one process) whose rows come back in order,
// so memory stays that of a few points however big the tree. Only --group-repeats and
// --drop-constant hold the table, as they must see every row. One table, many printers (CSV,
// JSON, JSON lines, Markdown): config/table.h's, as for plans and status.
//
// This header is the command line's; its parts each declare what they define in a header of their
// own: the walk (discover.h), one point's row (point_row.h), the columns (point_columns.h), the
// long tables (point_series.h), the reader processes (reader_pool.h), the operations on a whole
// table (table_ops.h) and the printers (table_writer.h); the values they hand each other are in
// extract_table.h.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sweepbench {

// The reader processes by default (--jobs): the CPUs this process may use.
int default_jobs();

// Refuses (Error(kInput)) an -o that would replace a result: a file named as a sweep directory's
// files are, or anything inside a point directory. bench-extract's and bench-compare's -o.
// `to_standard_output`: whether the tool writes to standard output without -o (the hint says so).
void refuse_output_among_results(const std::string& output, bool to_standard_output = true);

int bench_extract_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sweepbench
