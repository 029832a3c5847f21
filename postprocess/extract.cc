#include "postprocess/extract.h"

#include <sched.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include "config/config.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "postprocess/discover.h"
#include "postprocess/people_table.h"
#include "postprocess/point_columns.h"
#include "postprocess/point_row.h"
#include "postprocess/point_series.h"
#include "postprocess/reader_pool.h"
#include "postprocess/table_ops.h"
#include "postprocess/table_writer.h"
#include "postprocess/tool_main.h"
#include "text/error.h"
#include "text/exit_codes.h"
#include "text/text.h"
#include "text/units.h"

namespace sweepbench {

namespace fs = std::filesystem;
namespace po = boost::program_options;

int default_jobs() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

namespace {

// A size in a terminal's table of chosen columns (--format table --columns ...) in the unit it
// asks for ("153 MiB"), as people's tables and plan --estimate show sizes; CSV, JSON and Markdown
// keep the bytes, for programs.
void sizes_for_people(std::map<std::string, Value>* row, const std::vector<std::string>& columns) {
  for (const std::string& c : columns) {
    std::string plain;
    if (metric_unit_kind(c, &plain) != UnitKind::kBytes) continue;
    auto it = row->find(c);
    if (it == row->end() || !it->second.is_number()) continue;
    it->second = Value::string(byte_size(it->second.as_float()));
  }
}

// --columns NAME (or --best, --pareto): refused unless `known` has it, with the nearest name.
void check_column_named(const std::string& c, const std::vector<std::string>& known,
                        const std::string& option = "--columns") {
  if (std::find(known.begin(), known.end(), c) != known.end()) return;
  std::optional<std::string> near = closest_match(c, known);
  throw Error::input(
      Mark::in(option + " " + c), "",
      "no column is named '" + c + "'" + (near ? " (did you mean '" + *near + "'?)" : ""),
      "--columns all --format csv lists every column");
}

const char* const kUsage = R"(bench-extract: results trees to one table, one row per point.
Usage: bench-extract -i PATH [PATH...] [-o OUT] [-f] [--format csv|json|jsonl|md|table]
                     [--drop-constant] [--keep COL]... [--group-repeats]
                     [--where COND]... [--best METRIC | --pareto M1,M2] [--per KEYS]
                     [--price-per-hour X] [--strict] [-j N]
Searches each PATH for point directories (a config.yaml, status.json or rank-NNNNN.h5 files;
attempts/ is history and left out) and prints one row per point: sweep, tag, index, scenario,
repeat, status, reason, every config key as a dotted column, world_size, device, then the
metrics of docs/metrics.md computed from every rank's file (the slowest rank's step times,
warm-up left out). Points that failed, ran out of memory or timed out are rows with their status
and reason; a rank file that cannot be read gives a warning naming it and a row with status
incomplete. --group-repeats gives one row per point over its repeats (mean, and _std, _ci_low
and _ci_high columns per metric); --price-per-hour (USD per device-hour, unless the point's hardware.price_per_hour
says) fills cost_usd_per_mtok. Points stream through -j reader processes (the output is the
same for any number); only --group-repeats, --drop-constant, --where, --best and --pareto hold
the whole table. --where COLUMN<VALUE (also <=, >, >=, =, !=) keeps the rows it holds for;
--best METRIC the ok row with the best value (its direction: throughputs up, times and memory
down), one per group of --per KEYS; --pareto M1,M2 the ok rows no other dominates beyond the
intervals. A reader
that crashes on a damaged file, or spends more than --point-timeout seconds on one point, costs
only that point (incomplete, with a warning); a fresh reader goes on with the rest.
Output: -o OUT (format from its extension unless --format; an existing file is refused unless
-f; written whole or not at all), else standard output (CSV unless --format). Markdown and the
aligned table (--format table, for a terminal) show floats to about four significant digits;
CSV and JSON keep full precision.
--series tokens|system writes a long table for line figures instead: one row per generated token
position of each bench-infer point (its time over the timed runs), or one row per CPU/RAM sample
of each rank, each row with its point's identity and config columns.
Examples:
  bench-extract -i runs/quickstart -o runs/quickstart.csv
  bench-extract -i runs/infer-quick --series tokens -o runs/infer-quick-tokens.csv
  bench-extract -i runs/a runs/b --format md --drop-constant --keep train.micro_batch
-o never names a results file (rank-NNNNN.h5, manifest.json, ...) nor a path in a point directory.
Docs: docs/extract.md. Exit codes: 0 (also with incomplete points or unreadable directories,
unless --strict: then 1), 2 bad input, 3 the output exists (use -f), 4 file-system error (also
a refused write to standard output).
Options:
)";

}  // namespace

// -o must never replace a result: not a file named as a sweep directory's files are, and nothing
// inside a point directory (one holding config.yaml, status.json or rank-00000.h5), whether or not
// it is among the inputs. Symbolic links and ".." are resolved first.
void refuse_output_among_results(const std::string& output, bool to_standard_output) {
  // -o /dev/null -f, as root, would have replaced the system's /dev/null with a table.
  if (std::string why = output_target_problem(output); !why.empty()) {
    throw Error::input(Mark::in(output), "", why,
                       to_standard_output
                           ? "name a regular file, or leave out -o to write to standard output"
                           : "name a regular file");
  }
  fs::path target = fs::weakly_canonical(fs::absolute(output));
  if (is_results_file_name(target.filename().string())) {
    throw Error::input(Mark::in(output), "",
                       "is named as a sweep's results files are, and would replace one",
                       "choose another name for the table, such as results.csv");
  }
  for (fs::path dir = target.parent_path();; dir = dir.parent_path()) {
    std::error_code ec;
    for (const std::string& name :
         {std::string(kConfigFile), std::string(kStatusFile), rank_file_name(0)}) {
      if (fs::exists(dir / name, ec)) {
        throw Error::input(
            Mark::in(output), "",
            "is inside the point directory " + dir.string() + " (it holds " + name + ")",
            "write the table outside the results tree's point directories");
      }
    }
    if (dir == dir.root_path() || dir.empty()) break;
  }
}

namespace {

po::options_description extract_options() {
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")(
      "input,i", po::value<std::vector<std::string>>()->multitoken()->composing(),
      "Results directories (searched recursively)")("output,o", po::value<std::string>(),
                                                    "The output file; standard output if absent")(
      "force,f", "Replace an existing output file")(
      "format", po::value<std::string>(),
      "csv, json, jsonl, md or table (default: from -o, else csv)")(
      "columns", po::value<std::vector<std::string>>()->composing(),
      "Which columns: all, or a list (A,B or repeated). Default: every column for csv and "
      "json; for table and md the ones people read (the keys that vary, the headline metrics, "
      "status and reason when a point is not ok)")("drop-constant",
                                                   "Leave out columns with one value in every row")(
      "keep", po::value<std::vector<std::string>>()->composing(),
      "Keep this column even with --drop-constant (repeatable, or A,B)")(
      "where", po::value<std::vector<std::string>>()->composing(),
      "Only the rows where COLUMN OP VALUE holds (OP: < <= > >= = !=; repeatable: all hold)")(
      "best", po::value<std::string>(),
      "Only the ok row with the best METRIC (per group of --per)")(
      "pareto", po::value<std::vector<std::string>>()->composing(),
      "Only the ok rows on the Pareto front of these metrics (A,B; per group of --per)")(
      "per", po::value<std::vector<std::string>>()->composing(),
      "With --best or --pareto: one answer per value of these keys (A,B)")(
      "strict", "Exit 1 when a point is incomplete")(
      "removed",
      "Also the points no longer in their sweep (planned before the sweep file was edited), "
      "marked in_sweep = false")(
      "spreadsheet-safe",
      "CSV: a text cell beginning with =, +, -, @, a tab or a carriage return gets a leading ' "
      "so that a spreadsheet shows it and never runs it as a formula (numbers are left as they "
      "are)")(
      "group-repeats",
      "One row per point over its repeats: mean, _std and the mean's 95% interval (_ci_low, "
      "_ci_high)")(
      "noise-threshold", po::value<double>()->default_value(0.05, "0.05"),
      "A point is noisy when a coefficient of variation of its timings (step_time_cv; ttft_cv, "
      "e2e_cv) is above this")(
      "price-per-hour", po::value<double>(),
      "USD per device-hour for cost_usd_per_mtok (hardware.price_per_hour wins)")(
      "jobs,j", po::value<int>()->default_value(default_jobs()),
      "Reader processes (default: the CPUs this process may use)")(
      "series", po::value<std::string>(),
      "A long table for line figures instead of one row per point: tokens (bench-infer's time "
      "per generated token by position), system (CPU and RAM samples over time, per rank) or "
      "lists (each value of commands' list metrics)")(
      "point-timeout", po::value<double>()->default_value(60),
      "Seconds a reader may spend on one point's files before it is stopped and the point is "
      "incomplete");
  return desc;
}

// One bench-extract run between its steps: the options as checked (each step checks its own, in
// the order the errors have always come), the points found, and what was written.
struct Extraction {
  Extraction(const po::variables_map& options_given, std::ostream& errors)
      : vm(options_given), err(errors) {}

  const po::variables_map& vm;
  std::ostream& err;
  std::optional<std::string> output;
  TableFormat format = TableFormat::kCsv;
  bool spreadsheet_safe = false;
  ExtractOptions options;
  std::vector<RowCondition> where;
  std::vector<std::string> pareto, per;
  bool selects = false;  // --where, --best or --pareto: the rows are chosen
  PointSearch search;
  std::vector<std::string> keep, chosen;  // --keep; --columns when a list
  bool people = false;                    // the columns people read (table and md)
  size_t rows = 0, incomplete = 0, replaced = 0;

  void warn(const std::string& w) const { err << "bench-extract: warning: " << w << "\n"; }
  // The mark of removed points is a column only when there are some.
  std::vector<std::string> with_mark(std::vector<std::string> columns) const {
    if (search.removed_included == 0) return columns;
    auto at = std::find(columns.begin(), columns.end(), "repeat");
    columns.insert(at == columns.end() ? at : at + 1, "in_sweep");
    return columns;
  }
  // The point's warnings said and its incompleteness counted, as each point comes.
  void take_warnings(const ExtractedPoint& p) {
    for (const std::string& w : p.warnings) warn(w);
    if (p.incomplete) ++incomplete;
  }
};

// -o, --format, -f and --spreadsheet-safe.
void read_output_options(Extraction* x) {
  const po::variables_map& vm = x->vm;
  if (vm.count("output")) x->output = vm["output"].as<std::string>();
  if (x->output) refuse_output_among_results(*x->output);
  x->format = vm.count("format")
                  ? parse_table_format(vm["format"].as<std::string>(), extract_formats())
              : x->output ? table_format_of_path(*x->output, extract_formats())
                          : TableFormat::kCsv;
  if (x->output && !vm.count("force") && fs::exists(*x->output)) {
    throw Error(ErrorKind::kConflict, Mark::in(*x->output), "", "the output file exists",
                "add -f to replace it, or choose another -o");
  }
  x->spreadsheet_safe = vm.count("spreadsheet-safe") > 0;
  if (x->spreadsheet_safe && x->format != TableFormat::kCsv) {
    throw Error::input(Mark::in("--spreadsheet-safe"), "",
                       "applies to CSV, not " + table_format_name(x->format),
                       "leave it out, or write CSV (--format csv)");
  }
}

// --price-per-hour, --jobs, --noise-threshold and --point-timeout: how each point is read.
void read_point_options(Extraction* x) {
  const po::variables_map& vm = x->vm;
  ExtractOptions& options = x->options;
  double price = vm.count("price-per-hour") ? vm["price-per-hour"].as<double>() : -1;
  if (vm.count("price-per-hour") && !(price >= 0 && std::isfinite(price))) {
    throw Error::input(Mark::in("--price-per-hour"), "",
                       format_float_repr(price) + " is not a price",
                       "give USD per device-hour: a finite number, 0 or more");
  }
  options.price_per_hour = price;
  options.jobs = vm["jobs"].as<int>();
  if (options.jobs < 1) {
    throw Error::input(Mark::in("--jobs"), "", "must be 1 or more");
  }
  options.noise_threshold = vm["noise-threshold"].as<double>();
  if (!(options.noise_threshold >= 0) || !std::isfinite(options.noise_threshold)) {
    throw Error::input(Mark::in("--noise-threshold"), "",
                       format_float_repr(options.noise_threshold) + " is not a threshold",
                       "give a coefficient of variation, 0 or more (0.05 is 5%)");
  }
  options.point_timeout_s = vm["point-timeout"].as<double>();
  if (!(options.point_timeout_s > 0) || options.point_timeout_s > 1e6) {
    throw Error::input(Mark::in("--point-timeout"), "",
                       format_float_repr(options.point_timeout_s) +
                           " is out of range: it must be more than 0 and at most "
                           "1,000,000 seconds");
  }
}

// --where, --best, --pareto and --per (which rows), and --series (many rows per point instead).
void read_row_options(Extraction* x) {
  const po::variables_map& vm = x->vm;
  if (vm.count("where")) {
    for (const std::string& w : vm["where"].as<std::vector<std::string>>()) {
      x->where.push_back(parse_condition(w));
    }
  }
  if (vm.count("pareto")) x->pareto = split_commas(vm["pareto"].as<std::vector<std::string>>());
  if (vm.count("per")) x->per = split_commas(vm["per"].as<std::vector<std::string>>());
  if (vm.count("best") && vm.count("pareto")) {
    throw Error::input(Mark::in("--pareto"), "", "does not combine with --best",
                       "choose one: --best METRIC, or --pareto M1,M2");
  }
  if (vm.count("pareto") && x->pareto.size() < 2) {
    throw Error::input(Mark::in("--pareto"), "", "needs two metrics or more",
                       "write e.g. --pareto train_tokens_per_second,mem_peak_bytes");
  }
  if (!x->per.empty() && !vm.count("best") && !vm.count("pareto")) {
    throw Error::input(Mark::in("--per"), "", "applies with --best or --pareto only",
                       "add one of them, or leave --per out");
  }
  x->selects = !x->where.empty() || vm.count("best") || vm.count("pareto");
  if (vm.count("series")) {
    x->options.series = parse_series(vm["series"].as<std::string>());
    if (x->selects) {
      throw Error::input(Mark::in("--series"), "",
                         "gives many rows per point, which --where, --best and --pareto "
                         "do not apply to",
                         "leave those out with --series");
    }
    if (vm.count("group-repeats") || vm.count("drop-constant")) {
      throw Error::input(Mark::in("--series"), "",
                         "gives many rows per point, which --group-repeats and "
                         "--drop-constant do not apply to",
                         "leave those out with --series");
    }
  }
}

// --keep and --columns, once the points are found (a column a point's command names is known
// only from its config).
void choose_columns(Extraction* x) {
  const po::variables_map& vm = x->vm;
  if (vm.count("keep")) {
    if (!vm.count("drop-constant")) {
      throw Error::input(Mark::in("--keep"), "", "applies with --drop-constant only",
                         "add --drop-constant, or leave --keep out");
    }
    x->keep = split_commas(vm["keep"].as<std::vector<std::string>>());
  }
  // Which columns: every one (CSV, JSON, --columns all), people's (table and md), or a list.
  bool all_columns = x->format != TableFormat::kText && x->format != TableFormat::kMarkdown;
  if (vm.count("columns")) {
    x->chosen = split_commas(vm["columns"].as<std::vector<std::string>>());
    if (x->chosen.size() == 1 && x->chosen.front() == "all") {
      x->chosen.clear();
      all_columns = true;
    } else if (x->options.series != Series::kNone || vm.count("group-repeats") ||
               vm.count("drop-constant")) {
      throw Error::input(Mark::in("--columns"), "",
                         "a list of columns does not combine with --series, "
                         "--group-repeats or --drop-constant",
                         "use --columns all with those, or leave them out");
    } else {
      // A command's metrics named by its output (llama-bench's pp512) are known once the
      // points are read: a name that may be one is checked then, before any output.
      std::vector<std::string> known = x->with_mark(extract_columns(x->search.points));
      const bool commands = std::find(known.begin(), known.end(), "exit_code") != known.end();
      for (const std::string& c : x->chosen) {
        if (!commands) check_column_named(c, known);
      }
      all_columns = true;
    }
  }
  x->people = !all_columns && x->options.series == Series::kNone;
}

// Whether the table is held whole before it is printed: grouping, dropping columns, choosing
// rows and people's columns all need every row before the first is printed.
bool holds_whole_table(const Extraction& x) {
  return x.vm.count("group-repeats") || x.vm.count("drop-constant") || x.people || x.selects;
}

// The best of single repeats is the luckiest one, not the best configuration: said once the
// names are known good.
void warn_single_repeats(const Extraction& x, const ExtractTable& table,
                         const std::string& option) {
  if (x.vm.count("group-repeats")) return;
  std::set<std::int64_t> repeats;
  for (const auto& row : table.rows) {
    auto it = row.find("repeat");
    if (it != row.end() && it->second.is_number()) {
      repeats.insert(static_cast<std::int64_t>(it->second.as_float()));
    }
  }
  if (repeats.size() > 1) {
    x.warn(option + ": the points have " + std::to_string(repeats.size()) +
           " repeats each, ranked one by one: the best single repeat is the luckiest; "
           "add --group-repeats to rank the repeats' means");
  }
}

// --where, --best and --pareto on the whole table, after grouping: the best of repeats' means,
// with their intervals. `before`: the table before --where, when people's table shows it.
void select_rows(const Extraction& x, ExtractTable* table, std::optional<ExtractTable>* before) {
  for (const RowCondition& c : x.where) check_column_named(c.column, table->columns, "--where");
  for (const std::string& k : x.per) check_column_named(k, table->columns, "--per");
  if (x.selects && x.people) *before = *table;
  if (!x.where.empty()) filter_rows(table, x.where);
  for (const std::string& m : x.pareto) check_column_named(m, table->columns, "--pareto");
  if (!x.pareto.empty()) warn_single_repeats(x, *table, "--pareto");
  if (x.vm.count("best")) {
    const std::string metric = x.vm["best"].as<std::string>();
    check_column_named(metric, table->columns, "--best");
    warn_single_repeats(x, *table, "--best");
    // A metric no ok row has a value of (an MFU on CPUs, with no peak) ranks nothing:
    // said, not left to an empty table.
    bool any = std::any_of(table->rows.begin(), table->rows.end(), [&](const auto& row) {
      return row_ok(row) && cell_number(row, metric).has_value();
    });
    if (!any && !table->rows.empty()) {
      x.warn("--best " + metric + ": no ok row has a value of it, so no row is the best");
    }
    keep_best(table, metric, x.per);
  }
  if (!x.pareto.empty()) keep_pareto_front(table, x.pareto, x.per);
}

// --keep, --drop-constant, a --columns list and people's columns on the whole table.
void shape_columns(const Extraction& x, ExtractTable* table,
                   const std::optional<ExtractTable>& before) {
  // --keep names columns: one that the table lacks is a typo, said before any output.
  for (const std::string& k : x.keep) {
    if (std::find(table->columns.begin(), table->columns.end(), k) != table->columns.end()) {
      continue;
    }
    std::optional<std::string> near = closest_match(k, table->columns);
    throw Error::input(
        Mark::in("--keep " + k), "",
        "no column is named '" + k + "'" + (near ? " (did you mean '" + *near + "'?)" : ""),
        "bench-extract without --drop-constant lists every column");
  }
  if (x.vm.count("drop-constant")) drop_constant_columns(table, x.keep);
  // --columns A,B with --where, --best or --pareto: the rows they chose, those columns.
  if (!x.chosen.empty()) {
    for (const std::string& c : x.chosen) check_column_named(c, table->columns);
    table->columns = x.chosen;
    if (x.format == TableFormat::kText) {
      for (auto& row : table->rows) sizes_for_people(&row, x.chosen);
    }
  }
  if (x.people) {
    std::vector<std::string> chosen_by = x.pareto;
    if (x.vm.count("best")) chosen_by.push_back(x.vm["best"].as<std::string>());
    *table =
        people_table(*table, sweep_axes(x.search.points), before ? &*before : nullptr, chosen_by);
  }
}

// Every row read, then grouped, chosen and shaped, then printed.
void write_whole_table(Extraction* x, std::ostream& sink, const std::string& sink_name) {
  const std::vector<std::string>& dirs = x->search.points;
  ExtractTable table;
  table.columns = x->with_mark(extract_columns(dirs));
  std::vector<std::string> found_metrics;  // as PointSpool::command_metrics()
  extract_each(
      dirs, x->options, [x](const std::string& w) { x->warn(w); },
      [&](ExtractedPoint&& p) {
        x->take_warnings(p);
        add_command_metrics(p.row, &found_metrics);
        table.rows.push_back(std::move(p.row));
      });
  table.columns = with_command_metrics(table.columns, found_metrics);
  if (x->vm.count("group-repeats")) group_repeats(&table);
  std::optional<ExtractTable> before;
  select_rows(*x, &table, &before);
  shape_columns(*x, &table, before);
  x->replaced = print_table(table, x->format, sink, x->spreadsheet_safe);
  check_stream(sink, sink_name);
  x->rows = table.rows.size();
}

// The columns of a streamed table: a --columns list, else those some point filled, with the
// identity and config columns always (every point has its config).
std::vector<std::string> streamed_columns(const Extraction& x, const PointSpool& spool) {
  const std::vector<std::string>& dirs = x.search.points;
  std::vector<std::string> columns;
  if (!x.chosen.empty()) {
    std::vector<std::string> known =
        with_command_metrics(x.with_mark(extract_columns(dirs)), spool.command_metrics());
    for (const std::string& c : x.chosen) check_column_named(c, known);
    return x.chosen;
  }
  const std::vector<std::string>& identity = identity_columns();
  for (const std::string& c :
       x.options.series != Series::kNone
           ? series_columns(x.options.series, dirs)
           : with_command_metrics(x.with_mark(extract_columns(dirs)), spool.command_metrics())) {
    bool always =
        std::find(identity.begin(), identity.end(), c) != identity.end() || is_config_column(c);
    if (always || spool.filled().count(c) != 0) columns.push_back(c);
  }
  return columns;
}

// The points go aside as they are read (bounded memory), then out, without the measurement
// columns that no point has (an MFU on CPUs, a GPU's memory): only then is that known.
void write_streamed(Extraction* x, std::ostream& sink, const std::string& sink_name) {
  const bool series = x->options.series != Series::kNone;
  PointSpool spool;
  extract_each(
      x->search.points, x->options, [x](const std::string& w) { x->warn(w); },
      [&](ExtractedPoint&& p) {
        x->take_warnings(p);
        spool.add(p);
      });
  ExtractWriter writer(streamed_columns(*x, spool), x->format, sink, x->spreadsheet_safe);
  spool.replay([&](ExtractedPoint&& p) {
    if (series) {
      for (const auto& row : p.series) writer.row(row);
    } else {
      if (x->format == TableFormat::kText && !x->chosen.empty())
        sizes_for_people(&p.row, x->chosen);
      writer.row(p.row);
    }
    check_stream(sink, sink_name);
    ++x->rows;
  });
  writer.finish();
  check_stream(sink, sink_name);
  x->replaced = writer.replaced();
}

// What the run wrote and left out, said last; the exit code.
int finish(const Extraction& x, std::optional<AtomicFile>* file) {
  if (*file) {
    (*file)->commit();
    x.err << "bench-extract: " << plural(x.rows, "point") << " written to " << *x.output
          << (x.incomplete ? " (" + std::to_string(x.incomplete) + " incomplete)" : "") << "\n";
  }
  if (x.replaced > 0) {
    x.warn(plural(x.replaced, "byte") + " of text that were not UTF-8 (or NUL) written as U+FFFD");
  }
  if (x.search.removed_left_out > 0) {
    x.err << "bench-extract: " << plural(x.search.removed_left_out, "point")
          << " no longer in their sweep left out (--removed brings them back, marked)\n";
  }
  bool unread = x.incomplete > 0 || !x.search.warnings.empty();
  if (!x.search.warnings.empty()) {
    x.err << "bench-extract: " << plural(x.search.warnings.size(), "directory", "directories")
          << " could not be read; points under them are missing from the table\n";
  }
  return x.vm.count("strict") && unread ? kExitNotAllOk : kExitOk;
}

}  // namespace

int bench_extract_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_tool(
      "bench-extract", args, extract_options(), kUsage, out, err,
      [&](const po::variables_map& vm) -> int {
        if (!vm.count("input")) {
          err << "bench-extract: error: no input given\nusage: bench-extract -i PATH [-o OUT]  "
                 "(bench-extract --help)\n";
          return kExitUsage;
        }
        Extraction x(vm, err);
        read_output_options(&x);
        read_point_options(&x);
        read_row_options(&x);
        x.search =
            find_point_dirs(vm["input"].as<std::vector<std::string>>(), vm.count("removed") > 0);
        choose_columns(&x);
        for (const std::string& w : x.search.warnings) x.warn(w);
        std::optional<AtomicFile> file;
        if (x.output) file.emplace(*x.output);
        std::ostream& sink = file ? file->stream() : out;
        // A refused write (a full disk) stops the extraction at once rather than at the end.
        const std::string sink_name = x.output ? *x.output : "standard output";
        if (holds_whole_table(x)) {
          write_whole_table(&x, sink, sink_name);
        } else {
          write_streamed(&x, sink, sink_name);
        }
        return finish(x, &file);
      });
}

}  // namespace sweepbench
