// bench-history's command line (docs/history.md): ingest results trees into the store, list its
// runs, read a metric's series over time.
#include "postprocess/history_cli.h"

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "config/table.h"
#include "config/value.h"
#include "config/yaml_io.h"
#include "os/fs.h"
#include "postprocess/extract.h"
#include "postprocess/history_check.h"
#include "postprocess/history_ingest.h"
#include "postprocess/history_mlflow.h"
#include "postprocess/history_mlflow_http.h"
#include "postprocess/history_report.h"
#include "postprocess/history_store.h"
#include "postprocess/table_writer.h"
#include "postprocess/tool_main.h"
#include "text/error.h"
#include "text/exit_codes.h"
#include "text/text.h"

namespace sweepbench {

namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

const char* const kUsage = R"(bench-history: every finished point remembered across runs.

usage: bench-history ingest PATH... [--store URL] [--label NAME=VALUE]... [--batch N]
       bench-history runs   [--store URL] [filters] [--format F] [-o OUT]
       bench-history series METRIC [--store URL] [filters] [--format F] [-o OUT]
       bench-history check  [--store URL] [filters] [--metric M]... [--fail-on M:PCT]...
       bench-history export bmf [--store URL] [filters] [-o OUT]
       bench-history export mlflow [--tracking-uri URL] [--experiment NAME] [--store URL] [filters]
       bench-history export mlflow --offline FILE [--experiment NAME] [--store URL] [filters]
       bench-history export mlflow --sync FILE [--tracking-uri URL] [--experiment NAME]
       bench-history report [--store URL] [filters] -o report.html

ingest   records every finished attempt under PATH (results trees, points) in the store, once:
         a second ingest of the same tree adds nothing
runs     the stored runs, oldest first: when, what, how it ended, where
series   one metric over time: each run's value and 95% interval, and its environment
check    the changes in each configuration's metrics over time, false alarms held at --fdr,
         each with its size, its interval, since when, and what changed in the environment;
         --fail-on METRIC:PCT exits 8 when METRIC's latest change is worse beyond PCT
export   bmf: the newest ok run of each point as Bencher's JSON (bencher run --adapter json)
         mlflow: every run to an MLflow tracking server (--tracking-uri, else
         $MLFLOW_TRACKING_URI): a parent run per sweep, a child per attempt (params the config,
         metrics and intervals, tags the environment and labels), each sent once; --offline FILE
         writes them for a node without the network, --sync FILE sends that file later;
         credentials from $MLFLOW_TRACKING_TOKEN or $MLFLOW_TRACKING_USERNAME/_PASSWORD
report   one HTML page, opened from the file system: check's changes, each series' history
         drawn with its changes and environment changes, the runs that did not end ok

The store: --store, else $SWEEPBENCH_HISTORY, else ~/.local/share/sweepbench/history.sqlite.
A URL sqlite:PATH or a path is an SQLite file; keep it on a local disk (docs/history.md).

)";

void add_store_option(po::options_description& desc) {
  desc.add_options()("store", po::value<std::string>(),
                     "The history store: a path or sqlite:PATH (default $SWEEPBENCH_HISTORY, "
                     "else ~/.local/share/sweepbench/history.sqlite)");
}

void add_filter_options(po::options_description& desc) {
  desc.add_options()("sweep", po::value<std::string>(), "Only this sweep's runs")(
      "tag", po::value<std::string>(), "Only this point's runs (its directory name)")(
      "config-hash", po::value<std::string>(),
      "Only runs of this configuration (the config_hash, or its first 8 or more digits)")(
      "key", po::value<std::vector<std::string>>()->composing(),
      "Only runs whose config has KEY=VALUE (train.micro_batch=4; repeatable)")(
      "status", po::value<std::string>(), "Only runs that ended so (ok, failed, oom, ...)")(
      "since", po::value<std::string>(), "Only runs started on or after (YYYY-MM-DD or UTC time)")(
      "until", po::value<std::string>(), "Only runs started on or before")(
      "label", po::value<std::vector<std::string>>()->composing(),
      "Only runs with this label NAME=VALUE (repeatable)")(
      "env", po::value<std::vector<std::string>>()->composing(),
      "Only runs whose environment has FIELD=VALUE (torch_version=2.15.0; repeatable)")(
      "last", po::value<std::int64_t>(), "Only the newest N runs")(
      "format", po::value<std::string>(),
      "csv, json, jsonl, md or table (default: from -o, else table)")(
      "output,o", po::value<std::string>(), "The output file; standard output if absent")(
      "force,f", "Replace an existing output file");
}

std::pair<std::string, std::string> key_value(const std::string& text, const std::string& option) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error::input(Mark::in(option + " " + text), "", "is not NAME=VALUE",
                       "write e.g. " + option + " " +
                           (option == "--key" ? "train.micro_batch=4" : "torch_version=2.15.0"));
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// `create`: ingest makes a store that is not there yet; the reading commands never do.
HistoryStore open_store(const po::variables_map& vm, bool create = false) {
  return HistoryStore::open(
      vm.count("store") ? vm["store"].as<std::string>() : HistoryStore::default_url(create),
      create);
}

HistoryFilter filter_of(const po::variables_map& vm) {
  HistoryFilter f;
  auto text = [&](const char* name) {
    return vm.count(name) ? vm[name].as<std::string>() : std::string();
  };
  f.sweep = text("sweep");
  f.tag = text("tag");
  f.status = text("status");
  if (vm.count("since")) f.since = history_time_bound(text("since"), "--since", false);
  if (vm.count("until")) f.until = history_time_bound(text("until"), "--until", true);
  if (vm.count("label")) {
    for (const std::string& l : vm["label"].as<std::vector<std::string>>()) {
      add_label(l, &f.labels);
    }
  }
  if (vm.count("env")) {
    for (const std::string& e : vm["env"].as<std::vector<std::string>>()) {
      f.environment.insert(key_value(e, "--env"));
    }
  }
  if (vm.count("key")) {
    for (const std::string& k : vm["key"].as<std::vector<std::string>>()) {
      f.config.push_back(key_value(k, "--key"));
    }
  }
  if (vm.count("config-hash")) {
    const std::string given = vm["config-hash"].as<std::string>();
    if (given.size() < 8 || given.size() > 64 ||
        given.find_first_not_of("0123456789abcdef") != std::string::npos) {
      throw Error::input(Mark::in("--config-hash " + given), "",
                         "is not a config hash (8 to 64 lower-case hex digits)",
                         "copy it from bench-history runs or a point's status.json");
    }
  }
  if (vm.count("last")) {
    f.limit = vm["last"].as<std::int64_t>();
    if (f.limit < 1) throw Error::input(Mark::in("--last"), "", "must be 1 or more");
  }
  return f;
}

// --config-hash: a prefix of 8 or more hex digits is enough when one configuration has it.
void resolve_config_hash(HistoryStore& store, const po::variables_map& vm, HistoryFilter* f) {
  if (!vm.count("config-hash")) return;
  const std::string given = vm["config-hash"].as<std::string>();  // checked by filter_of
  if (given.size() == 64) {
    f->config_hash = given;
    return;
  }
  std::vector<SqlRow> rows = store.database().query(
      "SELECT DISTINCT config_hash FROM runs WHERE substr(config_hash, 1, ?) = ?",
      {static_cast<std::int64_t>(given.size()), given});
  if (rows.size() > 1) {
    throw Error::input(Mark::in("--config-hash " + given), "",
                       "matches " + std::to_string(rows.size()) + " configurations",
                       "give more of its digits");
  }
  f->config_hash = rows.empty() ? given : sql_text(rows.front()[0]);
}

// -o naming the store's own file would replace the store with a table, even with -f.
void refuse_output_over_store(const po::variables_map& vm, const std::string& output) {
  std::string store = vm.count("store") ? vm["store"].as<std::string>() : "";
  if (store.empty()) {
    try {
      store = HistoryStore::default_url();
    } catch (const Error&) {
      return;
    }
  }
  if (store.find("://") != std::string::npos && store.rfind("sqlite:///", 0) != 0) return;
  if (store.rfind("sqlite:///", 0) == 0) {
    store = store.substr(9);
  } else if (store.rfind("sqlite:", 0) == 0) {
    store = store.substr(7);
  }
  std::error_code ec;
  if (fs::equivalent(store, output, ec)) {
    throw Error(ErrorKind::kConflict, Mark::in(output), "", "is the history store itself",
                "choose another -o");
  }
}

// What `write` writes goes to `output` whole or not at all: never among results or over the
// store, an existing file only with -f.
// Refuses an output that would replace a result, the store or (without -f) a file: checked
// before the work (check_output) and again as it is written.
void check_output_file(const po::variables_map& vm, const std::string& output) {
  refuse_output_among_results(output);
  refuse_output_over_store(vm, output);
  if (!vm.count("force") && fs::exists(output)) {
    throw Error(ErrorKind::kConflict, Mark::in(output), "", "the output file exists",
                "add -f to replace it, or choose another file");
  }
}

void check_output(const po::variables_map& vm) {
  if (vm.count("output")) check_output_file(vm, vm["output"].as<std::string>());
}

void write_output_file(const po::variables_map& vm, const std::string& output,
                       const std::function<void(std::ostream&)>& write) {
  check_output_file(vm, output);
  AtomicFile file(output);
  write(file.stream());
  file.commit();
}

// What `write` writes goes to -o (write_output_file) or to `out`.
void write_output(const po::variables_map& vm, std::ostream& out,
                  const std::function<void(std::ostream&)>& write) {
  if (!vm.count("output")) {
    write(out);
    return;
  }
  write_output_file(vm, vm["output"].as<std::string>(), write);
}

// Writes the table to -o (whole or not at all) or to `out`.
void print_rows(const po::variables_map& vm, const std::vector<std::string>& columns,
                const std::vector<std::map<std::string, Value>>& rows, std::ostream& out) {
  std::optional<std::string> output;
  if (vm.count("output")) output = vm["output"].as<std::string>();
  TableFormat format = vm.count("format")
                           ? parse_table_format(vm["format"].as<std::string>(), extract_formats())
                       : output ? table_format_of_path(*output, extract_formats())
                                : TableFormat::kText;
  ExtractTable table;
  table.columns = columns;
  table.rows = rows;
  write_output(vm, out, [&](std::ostream& to) { print_table(table, format, to); });
}

std::string labels_text(const std::map<std::string, std::string>& labels) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : labels) parts.push_back(name + "=" + value);
  return join(parts, ",");
}

Value text_or_null(const std::string& s) { return s.empty() ? Value::null() : Value::string(s); }
Value real_or_null(double v) { return std::isfinite(v) ? Value::real(v) : Value::null(); }

int ingest_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("bench-history ingest PATH... options");
  desc.add_options()("help,h", "Show this help")("input",
                                                 po::value<std::vector<std::string>>()->composing(),
                                                 "Results trees or point directories")(
      "label", po::value<std::vector<std::string>>()->composing(),
      "NAME=VALUE on every run stored (commit=abc123; repeatable)")(
      "batch", po::value<int>()->default_value(static_cast<int>(IngestOptions{}.batch)),
      "Runs per transaction: an ingest stopped at any moment keeps the transactions it ended");
  add_store_option(desc);
  po::positional_options_description positional;
  positional.add("input", -1);
  return run_tool(
      "bench-history", args, desc, kUsage, out, err,
      [&](const po::variables_map& vm) -> int {
        if (!vm.count("input")) {
          err << "bench-history: error: ingest needs a results directory\nusage: bench-history "
                 "ingest PATH... (bench-history --help)\n";
          return kExitUsage;
        }
        IngestOptions options;
        const int batch = vm["batch"].as<int>();
        if (batch < 1 || batch > 1000000) {
          throw Error::input(Mark::in("--batch"), "", "must be from 1 to 1000000",
                             "leave it out: 2000 is the fastest here");
        }
        options.batch = static_cast<size_t>(batch);
        if (vm.count("label")) {
          for (const std::string& l : vm["label"].as<std::vector<std::string>>()) {
            add_label(l, &options.labels);
          }
        }
        // Every path first: a typo makes no store.
        for (const std::string& path : vm["input"].as<std::vector<std::string>>()) {
          std::error_code ec;
          if (!fs::exists(path, ec)) {
            throw Error(ErrorKind::kIo, Mark::in(path), "", "no such file or directory",
                        "give results directories (bench-sweep run -o DIR)");
          }
        }
        HistoryStore store = open_store(vm, true);
        IngestReport report = ingest_results(
            store, vm["input"].as<std::vector<std::string>>(), options,
            [&](const std::string& w) { err << "bench-history: warning: " << w << "\n"; });
        err << "bench-history: " << report.added << " new run(s) stored in " << store.describe()
            << "; " << report.known << " already there";
        if (report.unfinished) {
          err << "; " << report.unfinished
              << " point(s) not finished yet (a later ingest takes them)";
        }
        err << "\n";
        return kExitOk;
      },
      &positional);
}

int runs_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("bench-history runs options");
  desc.add_options()("help,h", "Show this help");
  add_store_option(desc);
  add_filter_options(desc);
  return run_tool(
      "bench-history", args, desc, kUsage, out, err, [&](const po::variables_map& vm) -> int {
        HistoryFilter f = filter_of(vm);
        HistoryStore store = open_store(vm);
        resolve_config_hash(store, vm, &f);
        std::vector<std::map<std::string, Value>> rows;
        for (const HistoryRun& r : store.runs(f)) {
          auto& row = rows.emplace_back();
          row["started"] = Value::string(r.started);
          row["sweep"] = Value::string(r.sweep);
          row["tag"] = Value::string(r.tag);
          row["attempt"] = Value::integer(r.attempt);
          row["status"] = Value::string(r.status);
          row["reason"] = text_or_null(r.reason);
          row["seconds"] = real_or_null(r.seconds);
          row["host"] = text_or_null(r.environment.count("host") ? r.environment.at("host") : "");
          row["environment_id"] = text_or_null(r.environment_id);
          row["labels"] = text_or_null(labels_text(r.labels));
          row["config_hash"] = Value::string(r.config_hash);
          row["run_key"] = Value::string(r.run_key);
        }
        print_rows(vm,
                   {"started", "sweep", "tag", "attempt", "status", "reason", "seconds", "host",
                    "environment_id", "labels", "config_hash", "run_key"},
                   rows, out);
        return kExitOk;
      });
}

int series_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("bench-history series METRIC options");
  desc.add_options()("help,h", "Show this help")("metric", po::value<std::string>(),
                                                 "The metric (a bench-extract column)");
  add_store_option(desc);
  add_filter_options(desc);
  po::positional_options_description positional;
  positional.add("metric", 1);
  return run_tool(
      "bench-history", args, desc, kUsage, out, err,
      [&](const po::variables_map& vm) -> int {
        if (!vm.count("metric")) {
          err << "bench-history: error: series needs a metric\nusage: bench-history series "
                 "METRIC (bench-history --help)\n";
          return kExitUsage;
        }
        HistoryFilter f = filter_of(vm);
        f.metric = vm["metric"].as<std::string>();
        HistoryStore store = open_store(vm);
        resolve_config_hash(store, vm, &f);
        std::vector<std::map<std::string, Value>> rows;
        // The environment fields whose value changes along the series (one that appears or
        // goes away too), as env.FIELD columns: a field's name cannot take another column's.
        std::vector<std::string> env_fields;
        std::vector<HistoryRun> runs = store.runs(f);
        {
          std::map<std::string, std::set<std::string>> values;
          for (const HistoryRun& r : runs) {
            for (const auto& [field, value] : r.environment) values[field].insert(value);
          }
          for (auto& [field, set] : values) {
            for (const HistoryRun& r : runs) {
              if (!r.environment.count(field)) set.insert(std::string(1, '\0'));  // absent
            }
            if (set.size() > 1 || runs.size() == 1) env_fields.push_back(field);
          }
        }
        for (const HistoryRun& r : runs) {
          if (r.metrics.empty()) continue;
          const HistoryMetric& m = r.metrics.front();
          auto& row = rows.emplace_back();
          row["started"] = Value::string(r.started);
          row["sweep"] = Value::string(r.sweep);
          row["tag"] = Value::string(r.tag);
          row["status"] = Value::string(r.status);
          row[m.name] = real_or_null(m.value);
          row[m.name + "_ci_low"] = real_or_null(m.ci_low);
          row[m.name + "_ci_high"] = real_or_null(m.ci_high);
          row["unit"] = text_or_null(m.unit);
          row["environment_id"] = text_or_null(r.environment_id);
          for (const std::string& field : env_fields) {
            row["env." + field] =
                text_or_null(r.environment.count(field) ? r.environment.at(field) : "");
          }
          row["labels"] = text_or_null(labels_text(r.labels));
          row["config_hash"] = Value::string(r.config_hash);
        }
        if (rows.empty()) {
          err << "bench-history: no stored run has " << f.metric
              << (f.config_hash.empty() && f.sweep.empty() ? "" : " among those asked for")
              << " (bench-history runs lists them)\n";
        }
        std::vector<std::string> columns = {"started",
                                            "sweep",
                                            "tag",
                                            "status",
                                            f.metric,
                                            f.metric + "_ci_low",
                                            f.metric + "_ci_high",
                                            "unit",
                                            "environment_id"};
        for (const std::string& field : env_fields) columns.push_back("env." + field);
        columns.insert(columns.end(), {"labels", "config_hash"});
        print_rows(vm, columns, rows, out);
        return rows.empty() ? kExitNotAllOk : kExitOk;
      },
      &positional);
}

// Bencher's Metric Format: the newest run of each point among those asked for, each metric a
// measure with its interval where it has one, for `bencher run --adapter json`.
int export_bmf(const po::variables_map& vm, std::ostream& out, std::ostream& err) {
  if (vm.count("format")) {
    throw Error::input(Mark::in("--format"), "", "does not apply to export bmf",
                       "leave it out: Bencher's format is JSON");
  }
  for (const char* option : {"tracking-uri", "experiment", "offline", "sync"}) {
    if (vm.count(option)) {
      throw Error::input(Mark::in(std::string("--") + option), "",
                         "applies to export mlflow, not bmf");
    }
  }
  HistoryFilter f = filter_of(vm);
  HistoryStore store = open_store(vm);
  resolve_config_hash(store, vm, &f);
  std::map<std::string, const HistoryRun*> newest;  // by sweep/tag
  const std::vector<HistoryRun> runs = store.runs(f);
  for (const HistoryRun& r : runs) {
    if (r.status == "ok") newest[r.sweep + "/" + r.tag] = &r;  // oldest first: the last wins
  }
  Value report = Value::map();
  for (const auto& [name, r] : newest) {
    Value measures = Value::map();
    for (const HistoryMetric& m : r->metrics) {
      if (!std::isfinite(m.value)) continue;
      Value measure = Value::map();
      measure.set("value", Value::real(m.value));
      if (std::isfinite(m.ci_low) && std::isfinite(m.ci_high)) {
        measure.set("lower_value", Value::real(m.ci_low));
        measure.set("upper_value", Value::real(m.ci_high));
      }
      measures.set(m.name, measure);
    }
    report.set(name, measures);
  }
  write_output(vm, out, [&](std::ostream& file) { file << emit_json(report, 2) << "\n"; });
  err << "bench-history export: " << newest.size() << " point(s), the newest ok run of each\n";
  return kExitOk;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// MLflow (history_mlflow.h): every run asked for, each attempt an MLflow run under its sweep's
// parent, sent through the REST API (each once), written to an --offline file, or sent from one
// (--sync).
int export_mlflow(const po::variables_map& vm, std::ostream& err) {
  for (const char* option : {"format", "output"}) {
    if (vm.count(option)) {
      throw Error::input(Mark::in(std::string("--") + option), "",
                         "does not apply to export mlflow",
                         "it sends to --tracking-uri, or writes --offline FILE");
    }
  }
  const bool offline = vm.count("offline"), sync = vm.count("sync");
  if (offline && sync) {
    throw Error::input(Mark::in("--offline"), "", "and --sync go one after the other",
                       "write the file with --offline where the store is, then send it with "
                       "--sync where the server can be reached");
  }
  if (offline && vm.count("tracking-uri")) {
    throw Error::input(Mark::in("--tracking-uri"), "", "does not apply to --offline",
                       "--offline writes a file and sends nothing; give --tracking-uri to --sync");
  }
  std::string uri, uri_option = "--tracking-uri";
  if (!offline) {
    uri = vm.count("tracking-uri") ? vm["tracking-uri"].as<std::string>()
                                   : env_or("MLFLOW_TRACKING_URI", "");
    if (!vm.count("tracking-uri")) uri_option = "$MLFLOW_TRACKING_URI";
    if (uri.empty()) {
      throw Error::input(Mark::in("bench-history export mlflow"), "",
                         "needs the MLflow tracking server",
                         "give --tracking-uri http://HOST:PORT (or set $MLFLOW_TRACKING_URI), or "
                         "write the runs with --offline FILE and send them later with --sync");
    }
  }
  // The address checked before the store is opened: a typo costs nothing.
  std::unique_ptr<MlflowHttp> api;
  if (!offline) api = std::make_unique<MlflowHttp>(uri, uri_option);
  const std::string chosen_experiment =
      vm.count("experiment") ? vm["experiment"].as<std::string>() : "";
  if (vm.count("experiment") && chosen_experiment.empty()) {
    throw Error::input(Mark::in("--experiment"), "", "is empty", "name the MLflow experiment");
  }

  MlflowOffline runs;
  if (sync) {
    for (const char* option : {"store", "sweep", "tag", "config-hash", "key", "status", "since",
                               "until", "label", "env", "last", "force"}) {
      if (vm.count(option)) {
        throw Error::input(Mark::in(std::string("--") + option), "", "does not apply to --sync",
                           "the file holds the runs chosen when --offline wrote it");
      }
    }
    const std::string path = vm["sync"].as<std::string>();
    const std::optional<std::string> text = read_file_if_exists(path, size_t{1} << 30);
    if (!text) {
      throw Error(ErrorKind::kIo, Mark::in(path), "", "no such file",
                  "give the file bench-history export mlflow --offline wrote");
    }
    runs = parse_mlflow_offline(*text, path);
  } else {
    HistoryFilter f = filter_of(vm);
    if (offline) check_output_file(vm, vm["offline"].as<std::string>());  // before the work
    HistoryStore store = open_store(vm);
    resolve_config_hash(store, vm, &f);
    runs.runs = mlflow_runs(store.runs(f), [&](const std::string& w) {
      err << "bench-history export: warning: " << w << "\n";
    });
  }
  if (!chosen_experiment.empty() || runs.experiment.empty()) {
    runs.experiment = !chosen_experiment.empty() ? chosen_experiment
                                                 : env_or("MLFLOW_EXPERIMENT_NAME", "sweepbench");
  }

  if (offline) {
    const std::string path = vm["offline"].as<std::string>();
    write_output_file(vm, path, [&](std::ostream& file) { file << mlflow_offline_text(runs); });
    err << "bench-history export: " << runs.runs.size() << " run(s) for MLflow experiment '"
        << runs.experiment << "' written to " << path
        << "; send them with bench-history export mlflow --sync " << path
        << " --tracking-uri URL\n";
    return kExitOk;
  }
  const MlflowSendReport report = send_to_mlflow(*api, runs.experiment, runs.runs);
  err << "bench-history export: " << report.sent << " new run(s) sent to MLflow experiment '"
      << runs.experiment << "' (id " << report.experiment_id << ") at " << api->describe() << "; "
      << report.known << " already there";
  if (report.parents) err << "; " << report.parents << " sweep parent run(s) made";
  if (report.redone) {
    err << "; " << report.redone
        << " left unfinished by an export cut short were deleted and sent again";
  }
  err << "\n";
  return kExitOk;
}

int export_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("bench-history export bmf|mlflow options");
  desc.add_options()("help,h", "Show this help")(
      "to", po::value<std::string>(),
      "What to write: bmf (Bencher Metric Format) or mlflow (MLflow runs)")(
      "tracking-uri", po::value<std::string>(),
      "mlflow: the tracking server, http(s)://HOST:PORT (default $MLFLOW_TRACKING_URI)")(
      "experiment", po::value<std::string>(),
      "mlflow: the experiment, made when not there (default $MLFLOW_EXPERIMENT_NAME, else "
      "sweepbench; with --sync, the one --offline was given)")(
      "offline", po::value<std::string>(),
      "mlflow: write the runs to FILE instead of sending them (for --sync from another node)")(
      "sync", po::value<std::string>(), "mlflow: send the runs of a FILE --offline wrote");
  add_store_option(desc);
  add_filter_options(desc);
  po::positional_options_description positional;
  positional.add("to", 1);
  return run_tool(
      "bench-history", args, desc, kUsage, out, err,
      [&](const po::variables_map& vm) -> int {
        const std::string to = vm.count("to") ? vm["to"].as<std::string>() : "";
        if (to == "bmf") return export_bmf(vm, out, err);
        if (to == "mlflow") return export_mlflow(vm, err);
        throw Error::input(
            Mark::in("bench-history export " + to), "",
            to.empty() ? "needs what to write" : "'" + to + "' is not a format it writes",
            "bench-history export bmf (Bencher's JSON) or export mlflow (MLflow runs)");
      },
      &positional);
}

// A metric named by --metric or --fail-on must be one some run asked for has: a typo is an
// error naming the nearest, not a check of nothing.
void require_metric(const std::vector<HistoryRun>& runs, const std::string& metric,
                    const std::string& option) {
  std::set<std::string> names;
  for (const HistoryRun& r : runs) {
    for (const HistoryMetric& m : r.metrics) names.insert(m.name);
  }
  if (names.count(metric)) return;
  const std::optional<std::string> near =
      closest_match(metric, std::vector<std::string>(names.begin(), names.end()));
  throw Error::input(Mark::in(option), "", "no stored run asked for has this metric",
                     near ? "did you mean " + *near + "?"
                          : "name a metric of `bench-history series`, or widen the filters");
}

// What check and report judge series by.
void add_check_options(po::options_description& desc) {
  desc.add_options()("metric", po::value<std::vector<std::string>>()->composing(),
                     "Only these metrics (repeatable; default: those with intervals, and "
                     "commands' declared ones)")(
      "fdr", po::value<double>()->default_value(0.05, "0.05"),
      "The share of reported changes that may be noise (Benjamini-Hochberg)")(
      "min-runs", po::value<int>()->default_value(3),
      "Runs on each side of a change found within one environment");
}

CheckOptions check_options_of(const po::variables_map& vm) {
  CheckOptions o;
  if (vm.count("metric")) o.metrics = vm["metric"].as<std::vector<std::string>>();
  o.fdr = vm["fdr"].as<double>();
  if (!(o.fdr > 0 && o.fdr < 1)) {
    throw Error::input(Mark::in("--fdr"), "", "must be between 0 and 1", "0.05 is usual");
  }
  const int min_runs = vm["min-runs"].as<int>();
  if (min_runs < 1 || min_runs > 1000) {
    throw Error::input(Mark::in("--min-runs"), "", "must be from 1 to 1000");
  }
  o.min_runs = static_cast<size_t>(min_runs);
  return o;
}

// The filters given, as the report's header says them: "--sweep nightly --since 2026-11-01",
// from the parsed options (never the raw arguments: the store's URL may hold a password).
std::string filters_said(const po::variables_map& vm) {
  std::vector<std::string> said;
  for (const char* name : {"sweep", "tag", "config-hash", "status", "since", "until"}) {
    if (vm.count(name)) said.push_back(std::string("--") + name + " " + vm[name].as<std::string>());
  }
  for (const char* name : {"key", "label", "env", "metric"}) {
    if (!vm.count(name)) continue;
    for (const std::string& v : vm[name].as<std::vector<std::string>>()) {
      said.push_back(std::string("--") + name + " " + v);
    }
  }
  if (vm.count("last")) said.push_back("--last " + std::to_string(vm["last"].as<std::int64_t>()));
  return join(said, " ");
}

int report_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("bench-history report options");
  desc.add_options()("help,h", "Show this help")("title", po::value<std::string>(),
                                                 "The page's title")(
      "max-series", po::value<int>()->default_value(300),
      "The most series drawn (those with changes first); every one is in the table");
  add_check_options(desc);
  add_store_option(desc);
  add_filter_options(desc);
  return run_tool(
      "bench-history", args, desc, kUsage, out, err, [&](const po::variables_map& vm) -> int {
        if (vm.count("format")) {
          throw Error::input(Mark::in("--format"), "", "does not apply to report",
                             "leave it out: the report is one HTML page");
        }
        check_output(vm);
        HistoryFilter f = filter_of(vm);
        const CheckOptions co = check_options_of(vm);
        HistoryReportOptions o;
        const int max_series = vm["max-series"].as<int>();
        if (max_series < 0) throw Error::input(Mark::in("--max-series"), "", "must be 0 or more");
        o.max_series = static_cast<size_t>(max_series);
        if (vm.count("title")) o.title = vm["title"].as<std::string>();
        o.filters = filters_said(vm);
        HistoryStore store = open_store(vm);
        o.store = store.describe();
        resolve_config_hash(store, vm, &f);
        const std::vector<HistoryRun> runs = store.runs(f);
        for (const std::string& m : co.metrics) require_metric(runs, m, "--metric " + m);
        const CheckResult check = check_history(runs, co);
        const HistoryReport report = history_report(runs, check, co, o);
        write_output(vm, out, [&](std::ostream& file) { file << report.html; });
        err << "bench-history report: " << plural(runs.size(), "run") << ", "
            << plural(check.series, "series", "series") << " (" << report.series_drawn
            << " drawn), " << plural(check.changes.size(), "change") << "; "
            << report.html.size() / 1024 << " KiB"
            << (vm.count("output") ? " written to " + vm["output"].as<std::string>() : "") << "\n";
        return kExitOk;
      });
}

int check_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc("bench-history check options");
  desc.add_options()("help,h", "Show this help")(
      "fail-on", po::value<std::vector<std::string>>()->composing(),
      "METRIC:PCT: exit 8 when METRIC's latest change is worse by more than PCT (repeatable)");
  add_check_options(desc);
  add_store_option(desc);
  add_filter_options(desc);
  return run_tool(
      "bench-history", args, desc, kUsage, out, err, [&](const po::variables_map& vm) -> int {
        HistoryFilter f = filter_of(vm);
        CheckOptions o = check_options_of(vm);
        if (vm.count("fail-on")) {
          for (const std::string& text : vm["fail-on"].as<std::vector<std::string>>()) {
            const size_t colon = text.rfind(':');
            if (colon == std::string::npos || colon == 0) {
              throw Error::input(Mark::in("--fail-on " + text), "", "is not METRIC:PCT",
                                 "write e.g. train_tokens_per_second:5%");
            }
            o.fail_on.push_back(
                {text.substr(0, colon),
                 parse_fraction(text.substr(colon + 1), "--fail-on " + text.substr(0, colon + 1))});
          }
        }
        HistoryStore store = open_store(vm);
        resolve_config_hash(store, vm, &f);
        const std::vector<HistoryRun> runs = store.runs(f);
        for (const std::string& m : o.metrics) require_metric(runs, m, "--metric " + m);
        for (const FailOn& g : o.fail_on) {
          require_metric(runs, g.metric, "--fail-on " + g.metric);
          if (!o.metrics.empty() &&
              std::find(o.metrics.begin(), o.metrics.end(), g.metric) == o.metrics.end()) {
            o.metrics.push_back(g.metric);
          }
        }
        CheckResult result = check_history(runs, o);
        std::vector<std::map<std::string, Value>> rows;
        for (const HistoryChange& c : result.changes) {
          auto& row = rows.emplace_back();
          row["metric"] = Value::string(c.metric);
          row["verdict"] = Value::string(c.worse ? "worse" : "better");
          row["change"] = Value::real(c.change);
          row["change_low"] = Value::real(c.low);
          row["change_high"] = Value::real(c.high);
          row["since"] = Value::string(c.since);
          row["before"] = Value::real(c.before);
          row["after"] = Value::real(c.after);
          row["unit"] = text_or_null(c.unit);
          row["p"] = Value::real(c.p);
          row["runs_before"] = Value::integer(static_cast<std::int64_t>(c.runs_before));
          row["runs_after"] = Value::integer(static_cast<std::int64_t>(c.runs_after));
          row["latest"] = Value::boolean(c.latest);
          row["environment_change"] = text_or_null(c.environment);
          row["labels_change"] = text_or_null(c.labels);
          row["sweep"] = Value::string(c.sweep);
          row["tag"] = Value::string(c.tag);
          row["config_hash"] = Value::string(c.config_hash);
          row["what"] = Value::string(c.what());
        }
        err << "bench-history check: " << result.series << " series of " << result.runs
            << " ok run(s), " << result.tests << " test(s): " << result.changes.size()
            << " change(s) at a false discovery rate of " << format_float_repr(o.fdr) << "\n";
        for (const HistoryChange& c : result.changes) {
          if (c.worse && c.latest) err << "bench-history check: worse: " << c.what() << "\n";
        }
        print_rows(vm,
                   {"metric", "verdict", "change", "change_low", "change_high", "since", "before",
                    "after", "unit", "p", "runs_before", "runs_after", "latest",
                    "environment_change", "labels_change", "sweep", "tag", "config_hash", "what"},
                   rows, out);
        return check_exit_code(result, o.fail_on);
      });
}

}  // namespace

int bench_history_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::string command = args.empty() ? "" : args.front();
  const std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (command == "ingest") return ingest_main(rest, out, err);
  if (command == "runs") return runs_main(rest, out, err);
  if (command == "series") return series_main(rest, out, err);
  if (command == "check") return check_main(rest, out, err);
  if (command == "export") return export_main(rest, out, err);
  if (command == "report") return report_main(rest, out, err);
  if (command == "-h" || command == "--help") {
    out << kUsage;
    return kExitOk;
  }
  err << "bench-history: error: "
      << (command.empty() ? "no command given" : "'" + command + "' is not a command")
      << "; the commands are ingest, runs, series, check, export and report (bench-history "
         "--help)\n";
  return kExitUsage;
}

}  // namespace sweepbench
