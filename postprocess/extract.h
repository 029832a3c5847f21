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
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "config/table.h"
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
// line figures. tokens: one row per generated token position of a bench-infer point (the time of
// that token over the timed runs, each run's the slowest rank's; position 0 is the first token,
// its time the TTFT). system: one row per sample of the background sampler, per rank (CPU and RAM
// over time, PACE's system monitor).
// lists: one row per value of a command point's list metrics (`reduce: all`, vLLM's latencies):
// the metric's name and unit, the value's place in its list (item) and the value.
// levels: one row per load level of a serve point (docs/serving.md): the level, whether the SLA
// search added it, and its figures (metrics/serve_columns.h).
enum class Series { kNone, kTokens, kSystem, kLists, kLevels };
Series parse_series(const std::string& name);  // Error(kInput) for another name
// The columns of a series table, in order.
std::vector<std::string> series_columns(Series series, const std::vector<std::string>& point_dirs);

struct ExtractTable {
  std::vector<std::string> columns;
  std::vector<std::map<std::string, Value>> rows;  // absent cell = empty
  std::vector<std::string> warnings;               // "PATH: problem"
  size_t incomplete = 0;
};

// The point directories under each path (a path may itself be one): directory by directory in
// sorted order, and in a directory the points of its manifest in the sweep's order (their
// index), then any others by name. A directory that cannot be listed (permission denied, removed
// while the walk reads it) ends nothing but itself: when the manifest beside it names it, it is
// still a point (its row says it is incomplete and why); otherwise it is a warning naming it.
// Points that the manifest says are no longer in their sweep (the sweep file was edited since)
// are left out, and counted, unless `with_removed`.
struct PointSearch {
  std::vector<std::string> points;
  std::vector<std::string> warnings;  // "PATH: cannot be read: REASON ..."
  size_t removed_left_out = 0, removed_included = 0;
};
PointSearch find_point_dirs(const std::vector<std::string>& paths, bool with_removed = false);

// Every column a row of these points may have, in order: identity, config keys (params as one
// column per entry any point has), world_size, device, the metrics of docs/metrics.md, each
// command metric any point defines, exit_code, seconds, units, memory, cost.
std::vector<std::string> extract_columns(const std::vector<std::string>& point_dirs);

// The reader processes by default (--jobs): the CPUs this process may use.
int default_jobs();

struct ExtractOptions {
  // USD per device-hour; < 0: none. The default for points whose hardware.price_per_hour is
  // null; cost_usd_per_mtok = price x world_size / mt_per_hour.
  double price_per_hour = -1;
  int jobs = 1;  // reader processes (always at least one: a crash in HDF5 costs only its point)
  // The most a reader may spend on one point before it is stopped and the point is incomplete.
  double point_timeout_s = 60;
  Series series = Series::kNone;
  // A point is `noisy` when a coefficient of variation of its timings (step_time_cv; ttft_cv,
  // e2e_cv) is above this (docs/metrics.md, "Intervals and noise").
  double noise_threshold = 0.05;
};

// The columns a row's `noisy` reads, and the flag itself: true or false where the row has one of
// them, absent otherwise.
const std::vector<std::string>& noise_columns();
void mark_noise(std::map<std::string, Value>* row, double threshold);

// A training point measured until precise (metrics.target_ci, docs/metrics.md): `target_met`,
// whether its mean step time's 95% interval ended within the target (half its width over its
// middle); false where there is no interval. Nothing for a point without a target.
void mark_target(std::map<std::string, Value>* row);

// Points written aside, in a temporary file, as they come, and read back in order: so that a
// table streamed in bounded memory can still leave out the columns that no point has (CSV and
// JSON). filled() is every column some row or series row has a value in.
class PointSpool {
 public:
  PointSpool();
  ~PointSpool();
  PointSpool(const PointSpool&) = delete;
  PointSpool& operator=(const PointSpool&) = delete;
  void add(const ExtractedPoint& point);
  void replay(const std::function<void(ExtractedPoint&&)>& sink);
  const std::set<std::string>& filled() const { return filled_; }
  // The command metrics of the rows (their units maps' names), in the order first seen: those a
  // parser names from what the program printed (llama-bench's pp512) are known only now.
  const std::vector<std::string>& command_metrics() const { return command_metrics_; }

 private:
  std::FILE* file_ = nullptr;
  std::set<std::string> filled_;
  std::vector<std::string> command_metrics_;
};

// The command metrics of `row` (its units map's names) added to `names`, each once, in order.
void add_command_metrics(const std::map<std::string, Value>& row, std::vector<std::string>* names);

// `columns` with every name of `metrics` it lacks, before its exit_code (or at its end).
std::vector<std::string> with_command_metrics(std::vector<std::string> columns,
                                              const std::vector<std::string>& metrics);

// Reads the points in order and hands each row to `sink`, in order. Warnings that concern no
// point (a manifest that cannot be read) go to `warning` first. Error when a reader process dies.
void extract_each(const std::vector<std::string>& point_dirs, const ExtractOptions& options,
                  const std::function<void(const std::string&)>& warning,
                  const std::function<void(ExtractedPoint&&)>& sink);

// The whole table at once (extract_each collected).
ExtractTable extract_points(const std::vector<std::string>& point_dirs,
                            const ExtractOptions& options = {});

// One row per point over its repeats (rows that differ only in tag, index and repeat): `repeats`
// counts them, each metric becomes the mean over the ok repeats and gains a `_std` column (sample
// standard deviation). The status is ok when every repeat is; otherwise the first other status,
// with the reason saying how many repeats were ok.
void group_repeats(ExtractTable* table);

// Leaves out the columns whose value is the same in every row, except `keep` and the identity
// columns (tag, status).
void drop_constant_columns(ExtractTable* table, const std::vector<std::string>& keep);

// Refuses (Error(kInput)) an -o that would replace a result: a file named as a sweep directory's
// files are, or anything inside a point directory. bench-extract's and bench-compare's -o.
// `to_standard_output`: whether the tool writes to standard output without -o (the hint says so).
void refuse_output_among_results(const std::string& output, bool to_standard_output = true);

// A row's cell as a finite number: a number, or text that reads as one (a CSV's cells); nullopt
// otherwise. And whether the row's status is ok.
std::optional<double> cell_number(const std::map<std::string, Value>& row,
                                  const std::string& column);
bool row_ok(const std::map<std::string, Value>& row);

// --where COLUMN OP VALUE (OP one of <, <=, >, >=, =, !=): numbers compare as numbers, anything
// else as text (= and != only). A row without the column does not hold.
struct RowCondition {
  std::string column, op, value;
};
RowCondition parse_condition(const std::string& text);  // Error(kInput) naming --where
bool holds(const std::map<std::string, Value>& row, const RowCondition& condition);
void filter_rows(ExtractTable* table, const std::vector<RowCondition>& conditions);

// The unit a command declared for `metric` (the first row whose units map names it); "" when
// none did. With the name it gives the metric's direction (metrics/summary.h's higher_is_better).
std::string declared_unit(const std::vector<std::map<std::string, Value>>& rows,
                          const std::string& metric);

// --best METRIC [--per KEYS]: of the ok rows with the metric, the best (the metric's direction,
// metrics/summary.h), one per group of the --per keys' values; ties keep the first.
void keep_best(ExtractTable* table, const std::string& metric, const std::vector<std::string>& per);

// --pareto M1,M2,... [--per KEYS]: the ok rows no other row of their group dominates. A row
// dominates another when it is at least as good in every metric and better in one beyond the
// intervals: its whole interval (<metric>_ci_low, _ci_high, where the row has them) is better
// than the other's; without intervals, better.
void keep_pareto_front(ExtractTable* table, const std::vector<std::string>& metrics,
                       const std::vector<std::string>& per);

// bench-extract's formats: csv, json, jsonl, md, table (config/table.h prints them; Markdown and
// the aligned table round floats for people, the others keep full precision; the aligned table
// holds its rows until the end, to align them).
const std::vector<TableFormat>& extract_formats();

// Prints rows as they come: the header first, then a row at a time, then what closes the table.
class ExtractWriter {
 public:
  ExtractWriter(std::vector<std::string> columns, TableFormat format, std::ostream& out,
                bool spreadsheet_safe = false);
  void row(const std::map<std::string, Value>& row);
  void finish() { writer_.finish(); }
  size_t replaced() const { return writer_.replaced(); }

 private:
  std::vector<std::string> columns_;
  TableWriter writer_;
  std::vector<Value> cells_;
};

// Returns ExtractWriter::replaced().
size_t print_table(const ExtractTable& table, TableFormat format, std::ostream& out,
                   bool spreadsheet_safe = false);

int bench_extract_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sweepbench
