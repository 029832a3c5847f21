#include "serve/bench_serve.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "config/config.h"
#include "config/serve_spec.h"
#include "config/yaml_io.h"
#include "layout/paths.h"
#include "metrics/serve_columns.h"
#include "os/clean_env.h"
#include "os/fs.h"
#include "os/process.h"
#include "os/run_info.h"
#include "os/sampler.h"
#include "results/rank_file.h"
#include "serve/bench_serve_levels.h"
#include "serve/bench_serve_server.h"
#include "serve/load_client.h"
#include "serve/server.h"
#include "text/digest.h"
#include "text/exit_codes.h"
#include "text/terminal.h"
#include "text/text.h"

namespace sweepbench {
namespace fs = std::filesystem;
namespace po = boost::program_options;
using namespace serve;

namespace {

const char* const kUsage =
    R"(bench-serve: run one serve point: start its server, load it level by level, stop it.
Usage: bench-serve --config DIR/config.yaml --out DIR
Starts serve.argv ({port}, {host}, {out} and the point's values replaced) with its output in
DIR/logs/server.stdout.txt and .stderr.txt, waits until GET serve.ready.path answers 200 (or a
line of its output matches serve.ready.log), sends serve.load.warmup_requests one at a time,
then each level of serve.load.levels (and the SLA search's), streaming, and measures TTFT,
TPOT, ITL and end-to-end latency, throughput and goodput. Then stops the server (SIGTERM, then
SIGKILL to all it started after serve.stop_grace_s) and writes DIR/rank-00000.h5 and
DIR/summary.json. bench-sweep run runs it for points with benchmark: serve.
Stop signals end the load and stop the server; the levels measured are kept, and the run
records timeout (SIGUSR1, SIGTERM) or cancelled (SIGINT, SIGUSR2, SIGHUP).
Docs: docs/serving.md. Exit codes: 0 ok, 2 bad input, 3 results already there, 4 file-system
error, 21 timeout, 22 failed, 23 cancelled.
Options:
)";

// ---- stop signals ----
// The first stop ends the load (the loop asks stopping()); a second, a second or more later (one
// Ctrl-C can arrive twice through timeout(1)), kills the server's group at once.
std::atomic<int> g_stop_signal{0};
std::atomic<int> g_stops{0};
std::atomic<int> g_server_group{0};
std::atomic<long long> g_first_stop_ms{0};

long long now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void on_stop(int sig) {
  int expected = 0;
  if (g_stop_signal.compare_exchange_strong(expected, sig)) {
    g_first_stop_ms = now_ms();
    g_stops = 1;
    return;
  }
  if (now_ms() - g_first_stop_ms < 1000) return;
  g_stops = 2;
  int group = g_server_group.load();
  if (group > 0) ::kill(-group, SIGKILL);
}

void install_stop_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) ::sigaction(sig, &sa, nullptr);
}

bool stopping() { return g_stop_signal.load() != 0; }
bool hurrying() { return g_stops.load() >= 2; }

std::string status_of_stop(int sig) {
  return sig == SIGUSR1 || sig == SIGTERM ? "timeout" : "cancelled";
}

int exit_code_of(const std::string& status) {
  if (status == "ok") return kExitOk;
  if (status == "timeout") return kExitTrainTimeout;
  if (status == "cancelled") return kExitTrainCancelled;
  return kExitTrainFailed;
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::string url_host(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;  // an IPv6 address
}

struct Outcome {
  std::string status = "ok";
  std::string reason;
  void fail(std::string why) {
    if (status == "ok") {
      status = "failed";
      reason = std::move(why);
    }
  }
};

// The same in every rank of one launch; drawn when there is no launcher (one rank).
std::string run_id_of(const std::string& config_hash, const std::string& out) {
  std::string launch = launch_id();
  if (!launch.empty()) return sha256_hex(launch + "\n" + config_hash + "\n" + out).substr(0, 32);
  return random_run_id();
}

// One serve point as run() runs it: what each of its steps reads and adds to.
struct ServeRun {
  Value resolved;
  ServeSpec spec;
  std::string out, rank_path;
  std::optional<PromptSource> prompts;
  RankResult r;
  StepPlacement placement;
  RuntimeValues values;
  ExpandedCommand cmd;
  std::string base_url;
  std::optional<ResourceSampler> sampler;  // before the server: ended after it
  // The server, unless the point loads one already running (serve.url).
  ServerLaunch launch;
  std::optional<Server> server;
  Server* running = nullptr;
  Outcome outcome;
  std::vector<LevelRun> runs;
  double ready_s = 0;
  LoadTarget target;
  // The GPUs' memory in use (MiB by index) before our server started and after it stopped.
  std::string gpus_visible;  // CUDA_VISIBLE_DEVICES's text for the server
  std::map<std::string, double> gpus_before, gpus_after;
};

// The point's config, checked to be a serve point, and its results not there yet.
void load_point(ServeRun& p, const std::string& config_path, const std::string& out_arg) {
  p.resolved = load_point_config(config_path, {});
  p.spec = serve_spec_of(p.resolved);
  const Value& resolved = p.resolved;
  const ServeSpec& spec = p.spec;
  if (spec.server.argv.empty() && !spec.url) {
    throw Error::input(Mark::in(config_path), "benchmark",
                       "is '" + config_at(resolved, "benchmark").as_string() +
                           "', and bench-serve runs points whose benchmark is serve",
                       "run this point with its own program (bench-sweep run chooses it)");
  }
  p.out = fs::absolute(out_arg).lexically_normal().string();
  p.rank_path = (fs::path(p.out) / rank_file_name(0)).string();
  std::error_code ec;
  if (fs::exists(p.rank_path, ec)) {
    throw Error(ErrorKind::kConflict, Mark::in(p.rank_path), "", "results are already there",
                "results are never overwritten; choose another --out");
  }
  // A dataset that cannot give prompts fails here, before any server starts.
  p.prompts.emplace(p.spec);
}

// The rank file's record of the run: its config, identity and environment.
void describe_run(ServeRun& p, const std::string& config_path) {
  const Value& resolved = p.resolved;
  RankResult& r = p.r;
  r.benchmark = "serve";
  r.config_yaml = emit_canonical_yaml(resolved);
  r.config_hash = config_hash(resolved);
  r.tag = fs::absolute(config_path).lexically_normal().parent_path().filename().string();
  r.run_id = run_id_of(r.config_hash, p.out);
  r.hostname = hostname();
  r.sweepbench_version = SWEEPBENCH_VERSION;
  set_run_environment(r, detect_environment());
}

// Where the server runs and is reached, and its command with the point's values.
void plan_server(ServeRun& p) {
  const ServeSpec& spec = p.spec;
  const std::string& out = p.out;
  RankResult& r = p.r;
  RuntimeValues& values = p.values;
  p.placement = step_placement(spec, r.run_id);
  const StepPlacement& placement = p.placement;
  values.out = out;
  values.host = spec.host;
  if (spec.url) {
    p.base_url = *spec.url;
    while (!p.base_url.empty() && p.base_url.back() == '/') p.base_url.pop_back();
  } else {
    values.port = spec.port ? *spec.port : free_port(spec.host);
    // On another node of the allocation, the server is reached at that node's address.
    if (!placement.address.empty()) values.host = placement.address;
    p.cmd = expand_command(spec.server, p.resolved, values);
    p.base_url = "http://" + url_host(values.host) + ":" + std::to_string(values.port);
    r.command.stdout_log = std::string(kLogsDir) + "/server.stdout.txt";
    r.command.stderr_log = std::string(kLogsDir) + "/server.stderr.txt";
  }
  make_directories((fs::path(out) / kLogsDir).string());
  r.command.argv = p.cmd.argv;
  r.command.workdir = p.cmd.workdir;
  r.serve.mode = spec.mode;
  r.serve.api = spec.api;
  r.serve.base_url = p.base_url;
  r.start_time = utc_now_iso8601();
}

// Starts the server (unless serve.url names one running already).
void start_server(ServeRun& p) {
  const StepPlacement& placement = p.placement;
  ServerLaunch& launch = p.launch;
  if (!p.spec.url) {
    launch.argv = placement.prefix;
    launch.argv.insert(launch.argv.end(), p.cmd.argv.begin(), p.cmd.argv.end());
    if (!placement.step_name.empty()) {
      const std::string name = placement.step_name;
      launch.before_kill = [name] { cancel_step(name); };
    }
    launch.env = p.cmd.env;
    launch.workdir = p.cmd.workdir;
    launch.stdout_log = (fs::path(p.out) / p.r.command.stdout_log).string();
    launch.stderr_log = (fs::path(p.out) / p.r.command.stderr_log).string();
    // The devices free for the next point: read here, on the node, unless the server's step
    // runs on another one or the point asks for no GPU.
    p.gpus_visible = visible_gpus(p.cmd.env);
    if (!placement.elsewhere && server_uses_gpus(p.resolved, p.gpus_visible))
      p.gpus_before = gpu_memory_used(p.gpus_visible).value_or(std::map<std::string, double>{});
    std::printf("# bench-serve: %s\n", terminal_safe(join(launch.argv, " "), false).c_str());
    std::fflush(stdout);
    p.server.emplace(launch);
    g_server_group = p.server->pid();
    if (g_stops.load() >= 2) ::kill(-p.server->pid(), SIGKILL);
  } else {
    std::printf("# bench-serve: the server at %s (serve.url)\n",
                terminal_safe(p.base_url, false).c_str());
  }
  p.running = p.server ? &*p.server : nullptr;
}

// Waits until the server is ready and learns the model it serves; false when it cannot be
// loaded.
bool await_server(ServeRun& p) {
  const ServeSpec& spec = p.spec;
  const std::string& base_url = p.base_url;
  LoadTarget& target = p.target;
  std::string failure;
  bool ready =
      wait_until_ready(p.running, p.launch, spec, base_url, stopping, &p.ready_s, &failure);
  if (!failure.empty()) p.outcome.fail(failure);
  target.base_url = base_url;
  target.endpoint = spec.endpoint();
  target.extra_body = spec.body;
  if (ready) {
    p.r.serve.ready_s = p.ready_s;
    std::printf("# ready in %.1f s at %s\n", p.ready_s, base_url.c_str());
    std::fflush(stdout);
    std::string why;
    if (spec.model) {
      target.model = *spec.model;
    } else if (std::optional<std::string> model = served_model(base_url, &why)) {
      target.model = *model;
    } else {
      p.outcome.fail("cannot learn the model's name (" + terminal_safe(why, false) +
                     "); set serve.model");
      ready = false;
    }
    p.r.serve.model = target.model;
  }
  return ready;
}

// After load whose connections failed, the server gets a moment to be seen ended (it closes
// its sockets before it can be reaped; as a SLURM step, srun ends after its task).
bool connections_failed(const LoadResult& load) {
  return std::any_of(load.requests.begin(), load.requests.end(), [](const RequestRecord& q) {
    return q.timing.error == RequestError::kConnect;
  });
}

// Whether our server has ended (`settle`: given 2 s to be seen ended); a failure unless a stop
// came.
bool server_died(ServeRun& p, const std::string& when, bool settle = false) {
  Server* running = p.running;
  if (running == nullptr || running->running_after(settle ? 2.0 : 0.0)) return false;
  // A stop reaches a server run as a SLURM step too (SLURM signals every step before a time
  // limit): its end is then the stop's, not a failure of its own.
  if (!stopping()) {
    p.outcome.fail("the server " + running->exit_text() + " " + when + ": " +
                   running->last_words());
  }
  return true;
}

// serve.load.warmup_requests, one at a time, left out of every figure.
void warm_up(ServeRun& p) {
  const ServeSpec& spec = p.spec;
  LoadOptions options;
  options.request_timeout_s = spec.timeout_s;
  options.stop = stopping;
  std::vector<LoadRequest> warm =
      p.prompts->requests(static_cast<size_t>(spec.warmup_requests), spec.seed * 1000003ULL);
  LoadResult w = run_at_concurrency(p.target, warm, 1, options);
  keep_requests(w, -1, p.r.serve);
  size_t ok = 0;
  std::string first_error;
  for (const RequestRecord& q : w.requests) {
    if (q.timing.error == RequestError::kNone && !q.timing.chunks.empty()) ++ok;
    if (first_error.empty() && !q.message.empty()) first_error = q.message;
  }
  if (!server_died(p, "during the warm-up requests", connections_failed(w)) && ok == 0 &&
      !w.stopped) {
    p.outcome.fail("every warm-up request failed: " + terminal_safe(first_error, false));
  }
}

// Measures one level; false when the server died or a stop came, which ends the load.
bool measure_level(ServeRun& p, double level, bool searched) {
  const ServeSpec& spec = p.spec;
  std::vector<LevelRun>& runs = p.runs;
  std::printf("# level %zu: %s%s\n", runs.size(), level_text(level, spec.mode).c_str(),
              searched ? " (SLA search)" : "");
  std::fflush(stdout);
  LevelRun run = run_level(spec, *p.prompts, p.target, level, runs.size(), stopping);
  run.searched = searched;
  keep_requests(run.result, static_cast<std::int64_t>(runs.size()), p.r.serve);
  const bool settle = connections_failed(run.result);
  runs.push_back(std::move(run));
  return !server_died(p,
                      "during level " + std::to_string(runs.size() - 1) + " (" +
                          level_text(level, spec.mode) + ")",
                      settle) &&
         !stopping();
}

// The levels of the plan, then the SLA search's.
void measure_levels(ServeRun& p) {
  const ServeSpec& spec = p.spec;
  std::vector<double> plan =
      spec.mode == "ramp" ? std::vector<double>{spec.levels[0]} : spec.levels;
  bool going = true;
  for (size_t i = 0; i < plan.size() && going; ++i) going = measure_level(p, plan[i], false);
  if (spec.has_sla() && spec.search > 0) {
    SearchOptions search;
    search.kind = spec.closed_loop() ? LevelKind::kConcurrency : LevelKind::kRate;
    search.plan_levels = plan.size();
    search.max_extra_levels = static_cast<size_t>(spec.search);
    for (std::int64_t k = 0; k < spec.search && going; ++k) {
      std::optional<double> next = next_level(outcomes_of(p.runs), spec.attainment, search);
      if (!next) break;
      going = measure_level(p, *next, true);
    }
  }
}

// Stops our server and checks that its port is free for the next point.
void stop_server(ServeRun& p) {
  Server* running = p.running;
  RankResult& r = p.r;
  // A server that ended on its own before it was stopped failed, whatever the levels say: the
  // answers may have come from another process on its port (one that took the port between
  // free_port and the server's bind, while ours died of "Address already in use").
  server_died(p, "before it was stopped");
  r.serve.server_stop = running != nullptr
                            ? running->stop(hurrying() ? 0 : p.spec.stop_grace_s, hurrying)
                            : "not ours to stop (serve.url)";
  if (running != nullptr) {
    // The port free for the next point: a server that left a listener somewhere says so here.
    // Ours binds it to tell; a SLURM step's server may be on another node, where nothing should
    // answer on it any more.
    const bool here = p.placement.prefix.empty();
    const int port = static_cast<int>(p.values.port);
    bool free = false;
    for (int i = 0; i < 50 && !(free = here ? port_free(p.values.host, port)
                                            : !port_answers(p.values.host, port, 100));
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!free) {
      r.serve.server_stop +=
          "; its port " + std::to_string(p.values.port) + " was still in use 5 s after";
    }
    // And its GPUs' memory given back: the driver frees a process's memory as it ends, so what
    // is still held belongs to a process that escaped the stop (another session's worker).
    const std::string held = gpu_memory_left(p.gpus_before, p.gpus_visible,
                                             hurrying() ? 0 : kGpuReleaseSeconds, &p.gpus_after);
    if (!held.empty()) r.serve.server_stop += "; " + held;
  }
}

// A stop signal's status, or the failure of a point of which no request succeeded.
void judge_outcome(ServeRun& p) {
  Outcome& outcome = p.outcome;
  const std::vector<LevelRun>& runs = p.runs;
  if (const int sig = g_stop_signal.load(); sig != 0 && outcome.status == "ok") {
    outcome.status = status_of_stop(sig);
    outcome.reason = "stopped by " + signal_name(sig) +
                     (runs.empty() ? " before any level was measured"
                                   : " after " + plural(runs.size(), "level") +
                                         " (the last cut short: its figures are of what it sent)");
  }
  size_t succeeded = 0;
  for (const LevelRun& run : runs) succeeded += run.metrics.succeeded;
  if (outcome.status == "ok" && !runs.empty() && succeeded == 0) {
    std::string first;
    for (const ServeRequest& q : p.r.serve.requests) {
      if (q.level >= 0 && !q.message.empty()) {
        first = q.message;
        break;
      }
    }
    outcome.fail("no request of any level succeeded: " + terminal_safe(first, false));
  }
}

// Each level's figures, and the point's: its headline level's and the SLA's answer.
std::vector<Metric> point_figures(ServeRun& p, SlaAnswer* sla_answer) {
  const ServeSpec& spec = p.spec;
  const std::vector<LevelRun>& runs = p.runs;
  RankResult& r = p.r;
  SlaAnswer& answer = *sla_answer;
  const std::vector<ServeColumn>& columns = serve_level_columns();
  const std::string level_unit = serve_level_unit(spec.mode);
  for (const ServeColumn& c : columns) {
    r.serve.metric_names.push_back(c.name);
    r.serve.metric_units.push_back(c.unit);
  }
  r.serve.level_values.assign(columns.size(), {});
  for (const LevelRun& run : runs) {
    r.serve.levels.push_back(run.level);
    r.serve.searched.push_back(run.searched ? 1 : 0);
    std::vector<double> v = level_values(run, spec);
    for (size_t c = 0; c < columns.size(); ++c) r.serve.level_values[c].push_back(v[c]);
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (spec.has_sla() && !runs.empty()) answer = answer_of(outcomes_of(runs), spec.attainment);
  // The headline: the SLA's answer when there is one, else the highest level measured.
  std::optional<size_t> headline;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (answer.highest_meeting && runs[i].level == *answer.highest_meeting) {
      headline = i;
      break;
    }
    if (!spec.has_sla() && (!headline || runs[i].level > runs[*headline].level)) headline = i;
  }
  std::vector<Metric> metrics;
  for (size_t c = 0; c < columns.size(); ++c) {
    metrics.push_back({columns[c].name, headline ? r.serve.level_values[c][*headline] : nan,
                       columns[c].unit});
  }
  metrics.push_back({"levels", static_cast<double>(runs.size()), "levels"});
  metrics.push_back({"sla_max_level", answer.highest_meeting.value_or(nan), level_unit});
  metrics.push_back({"sla_max_level_above", answer.lowest_failing.value_or(nan), level_unit});
  for (const Metric& m : metrics) {
    CommandMetric cm;
    cm.name = m.name;
    cm.unit = m.unit;
    cm.source = "bench-serve";
    cm.reduce = "last";
    cm.found = std::isfinite(m.value);
    cm.value = m.value;
    if (!cm.found) cm.problem = "not measured (no level, or none met the SLA)";
    r.command.metrics.push_back(std::move(cm));
  }
  return metrics;
}

// summary.json's extra: the server, each level's figures and the SLA's answer.
Value summary_extra(const ServeRun& p, const SlaAnswer& answer) {
  const ServeSpec& spec = p.spec;
  const std::vector<LevelRun>& runs = p.runs;
  const RankResult& r = p.r;
  const std::vector<ServeColumn>& columns = serve_level_columns();
  Value extra = Value::map();
  Value server_info = Value::map();
  server_info.set("argv", [&] {
    Value a = Value::list();
    for (const std::string& s : p.cmd.argv) a.items().push_back(Value::string(s));
    return a;
  }());
  server_info.set("url", Value::string(p.base_url));
  if (!p.placement.step_name.empty()) {
    server_info.set("slurm_step", Value::string(p.placement.step_name));
    server_info.set("node", Value::string(p.placement.node));
  }
  if (p.spec.container) server_info.set("container", Value::string(*p.spec.container));
  if (!p.gpus_before.empty()) {
    Value gpus = Value::map();
    for (const auto& [index, before] : p.gpus_before) {
      Value g = Value::map();
      g.set("before_mib", Value::real(before));
      auto after = p.gpus_after.find(index);
      g.set("after_mib", after != p.gpus_after.end() ? Value::real(after->second) : Value());
      gpus.set(index, g);
    }
    server_info.set("gpu_memory", gpus);
  }
  server_info.set("model", Value::string(p.target.model));
  server_info.set("ready_s", Value::real(p.ready_s));
  server_info.set("stop", Value::string(r.serve.server_stop));
  extra.set("server", server_info);
  Value levels = Value::list();
  for (size_t i = 0; i < runs.size(); ++i) {
    Value row = Value::map();
    row.set("level", Value::real(runs[i].level));
    row.set("searched", Value::boolean(runs[i].searched));
    for (size_t c = 0; c < columns.size(); ++c) {
      double v = r.serve.level_values[c][i];
      row.set(columns[c].name, std::isfinite(v) ? Value::real(v) : Value::null());
    }
    levels.items().push_back(std::move(row));
  }
  extra.set("levels", levels);
  if (spec.has_sla()) {
    Value sla = Value::map();
    sla.set("bounds", Value::string(sla_text(spec)));
    sla.set("max_level", answer.highest_meeting ? Value::real(*answer.highest_meeting)
                                                 : Value::null());
    sla.set("max_level_above",
            answer.lowest_failing ? Value::real(*answer.lowest_failing) : Value::null());
    // Whether each end of the bracket is clear of the noise (its 95% Wilson interval wholly on
    // its side of the target; serve/sla_search.h); null where there is no such end.
    auto clearly = [&](const std::optional<double>& level, bool LevelVerdict::*side) {
      for (const LevelVerdict& v : answer.levels) {
        if (level && v.level == *level) return Value::boolean(v.*side);
      }
      return Value::null();
    };
    sla.set("max_level_clearly_meets",
            clearly(answer.highest_meeting, &LevelVerdict::clearly_meets));
    sla.set("max_level_above_clearly_fails",
            clearly(answer.lowest_failing, &LevelVerdict::clearly_fails));
    sla.set("answer", Value::string(answer_text(answer, spec)));
    extra.set("sla", sla);
  }
  return extra;
}

// The console's report: the levels, the SLA's answer and the verdict.
int report(const ServeRun& p, const SlaAnswer& answer) {
  const ServeSpec& spec = p.spec;
  const RankResult& r = p.r;
  print_levels(p.runs, spec);
  if (spec.has_sla()) {
    std::printf("# SLA (%s): %s\n", sla_text(spec).c_str(), answer_text(answer, spec).c_str());
  }
  if (r.status == "ok") {
    std::printf("# OK\n");
  } else {
    std::printf("# %s: %s\n", to_upper(r.status).c_str(), terminal_safe(r.reason, false).c_str());
    std::fprintf(stderr, "bench-serve: %s: %s\n", r.status.c_str(),
                 terminal_safe(r.reason, false).c_str());
  }
  std::fflush(stdout);
  return exit_code_of(r.status);
}

int run(const std::string& config_path, const std::string& out_arg) {
  ServeRun p;
  load_point(p, config_path, out_arg);
  describe_run(p, config_path);
  plan_server(p);

  install_stop_handler();
  become_child_subreaper();  // what the server starts stays ours to end
  p.sampler.emplace(static_cast<int>(config_at(p.resolved, "metrics.sample_interval_ms").as_int()),
                    "", config_at(p.resolved, "metrics.system").as_bool());
  p.sampler->start();
  const auto t0 = std::chrono::steady_clock::now();

  start_server(p);
  const bool ready = await_server(p);
  if (ready && p.spec.warmup_requests > 0 && !stopping()) warm_up(p);
  if (ready && p.outcome.status == "ok") measure_levels(p);

  // ---- stop the server, then the verdict ----
  stop_server(p);
  RankResult& r = p.r;
  Server* running = p.running;
  g_server_group = 0;
  p.sampler->stop();
  take_samples(*p.sampler, r);
  r.end_time = utc_now_iso8601();
  r.command.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.command.exit_code = -1;
  if (const std::string e = running != nullptr ? running->exit_text() : "";
      e.rfind("exited with code ", 0) == 0) {
    r.command.exit_code = std::stoll(e.substr(17));
  }
  if (running != nullptr) {
    std::printf("# the server %s\n", terminal_safe(r.serve.server_stop, false).c_str());
  }
  judge_outcome(p);

  SlaAnswer answer;
  const std::vector<Metric> metrics = point_figures(p, &answer);
  r.status = r.rank_status = p.outcome.status;
  r.reason = p.outcome.reason;
  write_rank_file(r, p.rank_path);
  write_summary_file(p.out, r, r.status, r.reason, summary_extra(p, answer), metrics);
  return report(p, answer);
}

}  // namespace

int bench_serve_main(int argc, char** argv) {
  reexec_with_kept_environment(argc, argv, 0);  // --env-keep: before anything reads it
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")("version", "Show the version")(
      "config", po::value<std::string>(), "The point's config.yaml")(
      "out", po::value<std::string>(), "The point's directory");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "bench-serve: error: %s (bench-serve --help)\n",
                 terminal_safe(e.what()).c_str());
    return kExitUsage;
  }
  if (vm.count("version")) {
    std::printf("bench-serve %s\n", SWEEPBENCH_VERSION);
    return kExitOk;
  }
  if (vm.count("help")) {
    std::ostringstream text;
    text << desc;
    std::printf("%s%s", kUsage, text.str().c_str());
    return kExitOk;
  }
  try {
    if (!vm.count("config") || !vm.count("out")) {
      throw Error::input(Mark::in("bench-serve"), "",
                         std::string(vm.count("config") ? "--out" : "--config") + " is missing",
                         "bench-serve --help");
    }
    int code = run(vm["config"].as<std::string>(), vm["out"].as<std::string>());
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::fprintf(stderr, "bench-serve: error: cannot write to standard output\n");
      return kExitIo;
    }
    return code;
  } catch (const Error& e) {
    std::fprintf(stderr, "bench-serve: error: %s\n", terminal_safe(e.what()).c_str());
    switch (e.kind()) {
      case ErrorKind::kInput:
        return kExitUsage;
      case ErrorKind::kConflict:
        return kExitConflict;
      default:
        return kExitIo;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench-serve: internal error: %s\n", e.what());
    return kExitInternal;
  }
}

}  // namespace sweepbench
