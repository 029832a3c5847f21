#include "command/bench_command.h"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

#include "command/child_process.h"
#include "command/metric_eval.h"
#include "config/config.h"
#include "config/placeholders.h"
#include "config/yaml_io.h"
#include "layout/paths.h"
#include "os/clean_env.h"
#include "os/fs.h"
#include "os/process.h"
#include "os/run_info.h"
#include "results/rank_file.h"
#include "text/digest.h"
#include "text/exit_codes.h"
#include "text/terminal.h"
#include "text/text.h"

namespace sweepbench {
namespace fs = std::filesystem;
namespace po = boost::program_options;
namespace {

const char* const kUsage =
    R"(bench-command: run one point's command and record its figures of merit.
Usage: bench-command --config DIR/config.yaml --out DIR
Runs command.argv (placeholders replaced: {params.NAME}, any config key, {out}, {rank},
{local_rank}, {world_size}) with command.env added, in command.workdir (default: the directory
it starts in, which is where bench-sweep run started); its output
goes to DIR/logs/rank-NNNNN.stdout.txt and .stderr.txt and through. Then reads command.metrics
(and command.parser's), judges the run by command.success and command.oom_patterns, and writes
DIR/rank-NNNNN.h5; rank 0 also writes DIR/summary.json. bench-sweep runs it for points with
benchmark: command, under the point's launcher and container; one copy per rank.
Stop signals are passed to the program (SIGUSR2 and SIGHUP as SIGTERM); the run then records
timeout (SIGUSR1, SIGTERM) or cancelled (SIGINT, SIGUSR2, SIGHUP).
Docs: docs/commands.md. Exit codes: 0 ok, 2 bad input, 3 results already there, 4 file-system
error, 20 out of memory, 21 timeout, 22 failed, 23 cancelled.
Options:
)";

int exit_code_of(const std::string& status) {
  if (status == "ok") return kExitOk;
  if (status == "oom") return kExitTrainOom;
  if (status == "timeout") return kExitTrainTimeout;
  if (status == "cancelled") return kExitTrainCancelled;
  return kExitTrainFailed;
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// The same in every rank of one launch; drawn when there is no launcher (one rank).
std::string run_id_of(const std::string& config_hash, const std::string& out) {
  std::string launch = launch_id();
  if (!launch.empty()) return sha256_hex(launch + "\n" + config_hash + "\n" + out).substr(0, 32);
  return random_run_id();
}

void write_summary(const std::string& out, const RankResult& r) {
  Value extra = Value::map();
  extra.set("exit_code", Value::integer(r.command.exit_code));
  extra.set("seconds", Value::real(r.command.seconds));
  std::vector<Metric> metrics;
  std::map<std::string, Value>
      lists;  // reduce: all and type: text, kept whole (as in the rank file)
  for (const CommandMetric& m : r.command.metrics) {
    metrics.push_back({m.name, m.found ? m.value : std::nan(""), m.unit});
    if (m.found && m.is_text) {
      lists[m.name] = Value::string(m.text);
    } else if (m.found && m.reduce == "all") {
      Value list = Value::list();
      for (double v : m.values) {
        list.items().push_back(std::isfinite(v) ? Value::real(v) : Value::null());
      }
      lists[m.name] = list;
    }
  }
  write_summary_file(out, r, r.status, r.reason, extra, metrics, lists);
}

// nccl-tests style: a header, a units row, one line per metric, a footer.
void print_metrics(const RankResult& r) {
  // For people: what the program and the user wrote is shown escaped (text/terminal.h).
  auto safe = [](const std::string& s) { return terminal_safe(s, false); };
  std::printf("# bench-command: %s in %.1f s\n", safe(join(r.command.argv, " ")).c_str(),
              r.command.seconds);
  std::printf("# %-32s %16s  %-12s %s\n", "metric", "value", "unit", "source");
  for (const CommandMetric& m : r.command.metrics) {
    std::string value = m.found ? format_float_repr(m.value) : "-";
    if (m.found && m.is_text) {
      value = abbreviate_end(m.text, 60);  // the words, escaped below with the rest
    } else if (m.found && m.reduce == "all") {
      // Every value, as the rank file and summary.json keep them (the line cut past 60).
      std::vector<std::string> all;
      for (double v : m.values) all.push_back(format_float_repr(v));
      value = abbreviate_middle("[" + join(all, ", ") + "]", 60);
    }
    std::printf("  %-32s %16s  %-12s %s%s\n", m.name.c_str(), safe(value).c_str(),
                safe(m.unit).c_str(), safe(m.source).c_str(),
                m.problem.empty() ? "" : ("  (" + safe(m.problem) + ")").c_str());
  }
  if (r.status == "ok") {
    std::printf("# OK\n");
  } else {
    // CANCELLED, TIMEOUT, OOM or FAILED, as the point's record says.
    std::printf("# %s: %s\n", to_upper(r.status).c_str(), safe(r.reason).c_str());
  }
  std::fflush(stdout);
}

int run(const std::string& config_path, const std::string& out_arg) {
  Value resolved = load_point_config(config_path, {});
  CommandSpec spec = command_spec_of(resolved);
  if (spec.argv.empty()) {
    throw Error::input(Mark::in(config_path), "benchmark",
                       "is '" + config_at(resolved, "benchmark").as_string() +
                           "', and bench-command runs points whose benchmark is command",
                       "run this point with its own program (bench-sweep run chooses it)");
  }
  const std::string out = fs::absolute(out_arg).lexically_normal().string();
  RuntimeValues values;
  values.out = out;
  values.rank = launcher_rank();
  values.local_rank = launcher_local_rank();
  values.world_size = launcher_world_size();
  ExpandedCommand cmd = expand_command(spec, resolved, values);

  RankResult r;
  r.benchmark = "command";
  r.config_yaml = emit_canonical_yaml(resolved);
  r.config_hash = config_hash(resolved);
  r.tag = fs::absolute(config_path).lexically_normal().parent_path().filename().string();
  r.run_id = run_id_of(r.config_hash, out);
  r.rank = values.rank;
  r.world_size = values.world_size;
  r.local_rank = values.local_rank;
  r.hostname = hostname();
  r.sweepbench_version = SWEEPBENCH_VERSION;
  set_run_environment(r, detect_environment());
  const std::string rank_path = (fs::path(out) / rank_file_name(r.rank)).string();
  std::error_code ec;
  if (fs::exists(rank_path, ec)) {
    throw Error(ErrorKind::kConflict, Mark::in(rank_path), "", "results are already there",
                "results are never overwritten; choose another --out");
  }

  ChildSpec child;
  child.argv = cmd.argv;
  child.env = cmd.env;
  child.workdir = cmd.workdir;
  r.command.stdout_log = command_log_path(r.rank, "stdout");
  r.command.stderr_log = command_log_path(r.rank, "stderr");
  make_directories((fs::path(out) / kLogsDir).string());
  child.stdout_log = (fs::path(out) / r.command.stdout_log).string();
  child.stderr_log = (fs::path(out) / r.command.stderr_log).string();
  r.command.argv = cmd.argv;
  r.command.workdir = cmd.workdir;
  r.start_time = utc_now_iso8601();
  // CPU and RAM while the program runs, as bench-train and bench-infer sample theirs (the node's
  // CPU use and RAM in use: the program is a process tree of its own, whatever it starts).
  ResourceSampler sampler(
      static_cast<int>(config_at(resolved, "metrics.sample_interval_ms").as_int()), "",
      config_at(resolved, "metrics.system").as_bool());
  sampler.start();
  ChildRun ran = run_child(child);
  sampler.stop();
  take_samples(sampler, r);
  r.end_time = utc_now_iso8601();
  r.command.exit_code = ran.end.started && ran.end.term_signal == 0 ? ran.end.exit_code : -1;
  r.command.term_signal = ran.end.term_signal;
  r.command.seconds = ran.seconds;

  CommandOutputs outputs;
  outputs.stdout_path = child.stdout_log;
  outputs.stderr_path = child.stderr_log;
  outputs.point_dir = out;
  outputs.expand = [&](const std::string& text) {
    return expand_command_text(text, resolved, values, "command.metrics");
  };
  outputs.expand_pattern = [&](const std::string& text) {
    return expand_command_text(text, resolved, values, "command.metrics", glob_escape);
  };
  r.command.metrics = read_metrics(spec.metrics, outputs);
  if (spec.parser == "llama-bench") {
    // One metric per test beside the parser's means; a name the sweep gave a metric is kept.
    for (CommandMetric& test : llama_bench_tests(outputs)) {
      bool taken = std::any_of(r.command.metrics.begin(), r.command.metrics.end(),
                               [&](const CommandMetric& m) { return m.name == test.name; });
      if (!taken) r.command.metrics.push_back(std::move(test));
    }
  }
  if (ran.end.stop_signal == 0 && output_read_in_part()) {
    // Stopped while reading (os/process.h's handler recorded it), and the reading was cut.
    ran.end.stop_signal = received_stop_signal();
    ran.end.stopped_while_reading = true;
  }
  CommandVerdict verdict = judge_command(spec, ran.end, r.command.metrics, outputs);
  if (!ran.log_error.empty() && verdict.status == "ok") verdict = {"failed", ran.log_error};
  if (!ran.leftovers.empty()) {
    // Ended, so they cannot disturb the next point; said in the point's log (this stderr) and,
    // for a run that did not succeed, in its reason.
    std::string ended = "ended " + plural(ran.leftovers.size(), "process", "processes") +
                        " the program left running: " + join(ran.leftovers, ", ");
    std::fprintf(stderr, "bench-command: rank %lld: %s\n", static_cast<long long>(r.rank),
                 terminal_safe(ended).c_str());
    if (verdict.status != "ok") verdict.reason += "; " + ended;
  }
  r.status = r.rank_status = verdict.status;
  r.reason = verdict.reason;
  write_rank_file(r, rank_path);
  if (r.rank == 0) {
    write_summary(out, r);
    print_metrics(r);
  }
  if (r.status != "ok") {
    std::fprintf(stderr, "bench-command: rank %lld: %s: %s\n", static_cast<long long>(r.rank),
                 r.status.c_str(), terminal_safe(r.reason, false).c_str());
  }
  return exit_code_of(r.status);
}

}  // namespace

int bench_command_main(int argc, char** argv) {
  reexec_with_kept_environment(argc, argv, 0);  // --env-keep: before anything reads it
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")("version", "Show the version")(
      "config", po::value<std::string>(), "The point's config.yaml")(
      "out", po::value<std::string>(), "The point's directory");
  const bool lead = launcher_rank() == 0;
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    if (lead) {
      std::fprintf(stderr, "bench-command: error: %s (bench-command --help)\n",
                   terminal_safe(e.what()).c_str());
    }
    return kExitUsage;
  }
  if (vm.count("help") || vm.count("version")) {
    if (lead && vm.count("version")) std::printf("bench-command %s\n", SWEEPBENCH_VERSION);
    if (lead && vm.count("help")) {
      std::ostringstream text;
      text << desc;
      std::printf("%s%s", kUsage, text.str().c_str());
    }
    return kExitOk;
  }
  try {
    if (!vm.count("config") || !vm.count("out")) {
      throw Error::input(Mark::in("bench-command"), "",
                         std::string(vm.count("config") ? "--out" : "--config") + " is missing",
                         "bench-command --help");
    }
    int code = run(vm["config"].as<std::string>(), vm["out"].as<std::string>());
    // Every binary checks its standard output (docs/exit-codes.md: 4).
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "bench-command: error: cannot write to standard output\n");
      return kExitIo;
    }
    return code;
  } catch (const Error& e) {
    if (lead || e.kind() != ErrorKind::kInput) {
      std::fprintf(stderr, "bench-command: error: %s\n", terminal_safe(e.what()).c_str());
    }
    switch (e.kind()) {
      case ErrorKind::kInput:
        return kExitUsage;
      case ErrorKind::kConflict:
        return kExitConflict;
      default:
        return kExitIo;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench-command: internal error: %s\n", e.what());
    return kExitInternal;
  }
}

}  // namespace sweepbench
