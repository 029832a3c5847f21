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
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "core/clean_env.h"
#include "core/config.h"
#include "core/digest.h"
#include "core/exit_codes.h"
#include "core/fs.h"
#include "core/process.h"
#include "core/run_info.h"
#include "core/sampler.h"
#include "core/serve_spec.h"
#include "core/terminal.h"
#include "core/text.h"
#include "core/user_regex.h"
#include "core/yaml_io.h"
#include "layout/paths.h"
#include "results/rank_file.h"
#include "results/serve_columns.h"
#include "serve/arrivals.h"
#include "serve/load_client.h"
#include "serve/prompts.h"
#include "serve/request_metrics.h"
#include "serve/server.h"
#include "serve/sla_search.h"

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

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", s);
  return text;
}

// A level as people write it: 4, 2.5 (not 4.0); a level of the SLA search, a geometric midpoint
// such as 38.05462768008707, to 4 significant digits (38.05), which keeps the table's columns
// and the SLA's answer readable. The exact levels are in summary.json and the rank file.
std::string number_text(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  std::string exact = format_float_repr(v);
  if (exact.size() <= 6) return exact;
  char text[32];
  std::snprintf(text, sizeof(text), std::fabs(v) >= 1000 ? "%.0f" : "%.4g", v);
  return text;
}

std::string level_text(double level, const std::string& mode) {
  return number_text(level) + (mode == "concurrency" ? " in flight" : " req/s");
}

// ---- readiness ----

// Reads what a log file gained since the last call, line by line.
class LogFollower {
 public:
  explicit LogFollower(std::string path) : path_(std::move(path)) {}
  // Calls fn with each whole new line.
  template <typename Fn>
  void poll(Fn fn) {
    std::ifstream in(path_, std::ios::binary);
    if (!in) return;
    in.seekg(offset_);
    std::string more((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    offset_ += static_cast<std::streamoff>(more.size());
    partial_ += more;
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
      fn(std::string_view(partial_).substr(start, nl - start));
    }
    partial_.erase(0, start);
    if (partial_.size() > 65536) partial_.erase(0, partial_.size() - 65536);
  }

 private:
  std::string path_;
  std::streamoff offset_ = 0;
  std::string partial_;
};

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

// Waits until the server is ready; false (with `outcome` set) when it exited, was never ready in
// time, or a stop came.
bool wait_until_ready(Server* server, const ServeSpec& spec, const std::string& base_url,
                      const std::string& stdout_log, const std::string& stderr_log, double* ready_s,
                      Outcome& outcome) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  std::optional<UserRegex> log_ready;
  if (spec.ready_log) log_ready.emplace(*spec.ready_log, Mark::in("serve.ready.log"), "serve.ready.log");
  // Nothing to wait for: serve.url's server with serve.ready.path null.
  if (!spec.ready_log && !spec.ready_path) {
    *ready_s = 0;
    return true;
  }
  LogFollower out(stdout_log), err(stderr_log);
  std::string last_answer = "no answer yet";
  while (true) {
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    if (stopping()) return false;
    if (server != nullptr && !server->running()) {
      outcome.fail("the server " + server->exit_text() + " before it was ready (after " +
                   seconds_text(waited) + "): " + server->last_words());
      return false;
    }
    bool ready = false;
    if (log_ready) {
      auto look = [&](std::string_view line) { ready = ready || log_ready->search(line); };
      out.poll(look);
      err.poll(look);
    }
    if (!ready && spec.ready_path) {
      HttpAnswer a = http_get(base_url + *spec.ready_path, 2);
      if (a.status == 200) {
        ready = true;
      } else {
        last_answer = a.status != 0 ? "HTTP status " + std::to_string(a.status) : a.error;
      }
    }
    if (ready) {
      *ready_s = waited;
      return true;
    }
    if (waited > spec.ready_timeout_s) {
      std::string how = spec.ready_path ? "GET " + *spec.ready_path + ": " + last_answer
                                        : "no line matched serve.ready.log";
      outcome.fail("the server was not ready after " + seconds_text(spec.ready_timeout_s) +
                   " (serve.ready.timeout_s; " + terminal_safe(how, false) + ")" +
                   (server != nullptr ? ": " + server->last_words() : ""));
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// The model the server serves, by GET /v1/models: its first entry's id.
std::optional<std::string> served_model(const std::string& base_url, std::string* why) {
  HttpAnswer a = http_get(base_url + "/v1/models", 30);
  if (a.status != 200) {
    *why = "GET /v1/models: " + (a.status != 0 ? "HTTP status " + std::to_string(a.status) : a.error);
    return std::nullopt;
  }
  try {
    Value v = parse_yaml(a.body, "GET /v1/models");
    const Value* data = v.is_map() ? v.find("data") : nullptr;
    if (data != nullptr && data->is_list() && !data->items().empty() &&
        data->items().front().is_map()) {
      const Value* id = data->items().front().find("id");
      if (id != nullptr && id->is_string()) return id->as_string();
    }
    *why = "GET /v1/models gave no data[0].id";
  } catch (const Error& e) {
    *why = std::string("GET /v1/models gave no JSON: ") + e.what();
  }
  return std::nullopt;
}

// ---- one level ----

struct LevelRun {
  double level = 0;
  bool searched = false;
  LoadResult result;
  PointMetrics metrics;
  double attainment = std::numeric_limits<double>::quiet_NaN();
};

// Where the requests' prompts come from: the ShareGPT file of serve.prompts.dataset, read once
// (it may be hundreds of MB) and drawn from for the warm-up and each level, or synthetic ones.
class PromptSource {
 public:
  explicit PromptSource(const ServeSpec& spec) : spec_(spec) {
    if (spec.dataset) {
      ShareGptOptions o;
      o.output_tokens = spec.output_tokens;
      dataset_.emplace(*spec.dataset, o);
    }
  }

  std::vector<LoadRequest> requests(size_t count, std::uint64_t seed) const {
    if (dataset_) return load_requests_of(dataset_->prompts(count, seed));
    SyntheticOptions o;
    o.range_ratio = spec_.range_ratio;
    if (spec_.token_ids)
      o.token_ids = TokenIdRange{spec_.token_ids->first, spec_.token_ids->second};
    return load_requests_of(
        synthetic_prompts(count, spec_.input_tokens, spec_.output_tokens, seed, o));
  }

 private:
  const ServeSpec& spec_;
  std::optional<ShareGptFile> dataset_;
};

LevelRun run_level(const ServeSpec& spec, const PromptSource& prompts, const LoadTarget& target,
                   double level, size_t index) {
  LevelRun run;
  run.level = level;
  LoadOptions options;
  options.request_timeout_s = spec.timeout_s;
  options.stop = stopping;
  // Each level its own draws, reproducible from the seed and the level's place.
  const std::uint64_t seed = spec.seed * 1000003ULL + index + 1;
  if (spec.closed_loop()) {
    std::vector<LoadRequest> requests = prompts.requests(static_cast<size_t>(spec.requests), seed);
    run.result = run_at_concurrency(target, requests, static_cast<int>(level), options);
  } else {
    ArrivalSchedule schedule = PoissonRate{level};
    if (spec.mode == "gamma") schedule = GammaRate{level, spec.burstiness};
    if (spec.mode == "ramp") schedule = LinearRamp{spec.levels[0], spec.levels[1]};
    ScheduleLimits limits;
    limits.duration_s = spec.duration_s;
    limits.max_requests = static_cast<size_t>(spec.requests);
    std::vector<double> times = send_times(schedule, limits, seed);
    std::vector<LoadRequest> requests = prompts.requests(times.size(), seed);
    run.result = run_at_times(target, requests, times, options);
  }
  Sla sla{spec.sla_ttft_s, spec.sla_tpot_s, spec.sla_e2e_s};
  const double duration = run.result.duration_s > 0 ? run.result.duration_s
                                                     : load_duration(timings_of(run.result));
  run.metrics = point_metrics(timings_of(run.result), duration, sla);
  if (run.metrics.requests > 0) {
    run.attainment = static_cast<double>(run.metrics.good) / static_cast<double>(run.metrics.requests);
  }
  return run;
}

// The level's figures in serve_level_columns() order.
std::vector<double> level_values(const LevelRun& run, const ServeSpec& spec) {
  const PointMetrics& m = run.metrics;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto ms = [](double s) { return s * 1000; };
  double rate = nan, concurrency = nan;
  if (spec.closed_loop()) {
    concurrency = run.level;
  } else if (spec.mode == "ramp") {
    rate = (spec.levels[0] + spec.levels[1]) / 2;
  } else {
    rate = run.level;
  }
  std::vector<double> v = {rate,
                           concurrency,
                           static_cast<double>(m.requests),
                           static_cast<double>(m.succeeded),
                           static_cast<double>(m.failed),
                           m.duration_s,
                           m.request_throughput,
                           m.output_tokens_per_s,
                           m.total_tokens_per_s,
                           m.tokens_per_s_per_user,
                           m.goodput,
                           run.attainment};
  for (const Percentiles* p : {&m.ttft_s, &m.tpot_s, &m.itl_s, &m.e2e_s}) {
    for (double x : {p->mean, p->p50, p->p90, p->p95, p->p99}) v.push_back(ms(x));
  }
  for (RequestError e : {RequestError::kConnect, RequestError::kHttpStatus, RequestError::kTimeout,
                         RequestError::kStream, RequestError::kServer, RequestError::kNoOutput}) {
    v.push_back(static_cast<double>(m.errors[static_cast<size_t>(e)]));
  }
  return v;
}

void keep_requests(const LoadResult& result, std::int64_t level, ServeResult& out) {
  for (const RequestRecord& q : result.requests) {
    RequestMetrics m = request_metrics(q.timing);
    ServeRequest row;
    row.level = level;
    row.send_s = q.timing.send_s;
    row.ttft_s = m.ttft_s;
    row.e2e_s = m.e2e_s;
    row.tpot_s = m.tpot_s;
    row.prompt_tokens = q.timing.prompt_tokens;
    row.output_tokens = m.output_tokens;
    row.http_status = q.http_status;
    row.error = q.timing.error == RequestError::kNone && !m.ok ? to_string(m.error)
                                                                : to_string(q.timing.error);
    if (row.error == std::string("none")) row.error.clear();
    row.message = q.message;
    const auto index = static_cast<std::int64_t>(out.requests.size());
    out.requests.push_back(std::move(row));
    for (const TokenChunk& c : q.timing.chunks) {
      out.chunk_request.push_back(index);
      out.chunk_time_s.push_back(c.time_s);
      out.chunk_tokens.push_back(c.tokens);
    }
  }
}

std::vector<LevelOutcome> outcomes_of(const std::vector<LevelRun>& runs) {
  std::vector<LevelOutcome> out;
  for (const LevelRun& r : runs) out.push_back({r.level, r.metrics.requests, r.metrics.good});
  return out;
}

// ---- the report ----

void print_levels(const std::vector<LevelRun>& runs, const ServeSpec& spec) {
  std::printf("# %-8s %9s %8s %6s %9s %11s %9s %7s %10s %10s %10s %10s %10s\n", "level",
              spec.closed_loop() ? "in_flight" : "req/s", "requests", "failed", "done_req/s",
              "out_tok/s", "goodput", "good", "ttft_p50", "ttft_p99", "tpot_p50", "itl_p99",
              "e2el_p99");
  for (size_t i = 0; i < runs.size(); ++i) {
    const LevelRun& r = runs[i];
    const PointMetrics& m = r.metrics;
    auto ms = [](double s) {
      char t[32];
      std::snprintf(t, sizeof(t), std::isfinite(s) ? "%.1fms" : "-", s * 1000);
      return std::string(t);
    };
    std::printf("  %-8s %9s %8zu %6zu %9.2f %11.1f %9.2f %6.1f%% %10s %10s %10s %10s %10s\n",
                (std::to_string(i) + (r.searched ? "*" : "")).c_str(), number_text(r.level).c_str(),
                m.requests, m.failed, m.request_throughput, m.output_tokens_per_s, m.goodput,
                r.attainment * 100, ms(m.ttft_s.p50).c_str(), ms(m.ttft_s.p99).c_str(),
                ms(m.tpot_s.p50).c_str(), ms(m.itl_s.p99).c_str(), ms(m.e2e_s.p99).c_str());
  }
}

std::string sla_text(const ServeSpec& spec) {
  std::vector<std::string> bounds;
  auto add = [&](const char* name, double s) {
    if (std::isfinite(s))
      bounds.push_back(std::string(name) + " <= " + number_text(s * 1000) + " ms");
  };
  add("TTFT", spec.sla_ttft_s);
  add("TPOT", spec.sla_tpot_s);
  add("E2E", spec.sla_e2e_s);
  return join(bounds, ", ") + " for " + number_text(spec.attainment * 100) + "% of requests";
}

// The SLA's answer in words: the highest level that met it and the bracket.
std::string answer_text(const SlaAnswer& a, const ServeSpec& spec) {
  if (a.levels.empty()) return "no level was measured";
  std::string text;
  if (!a.highest_meeting) {
    text = "no level met it (the lowest, " + level_text(a.levels.front().level, spec.mode) +
           ", did not)";
  } else if (!a.lowest_failing) {
    text = "every level met it: at least " + level_text(*a.highest_meeting, spec.mode);
  } else {
    text = level_text(*a.highest_meeting, spec.mode) + ", below " +
           level_text(*a.lowest_failing, spec.mode) + " (which did not meet it)";
  }
  if (!a.monotone) {
    std::vector<std::string> above;
    for (double l : a.meeting_above_failure) above.push_back(number_text(l));
    text += "; levels above a failing one met it too (" + join(above, ", ") +
            "): noise near the bound, or a server that does better under more load";
  }
  return text;
}

// ---- inside a SLURM allocation ----

// Where the server's step runs: the srun words before its argv, the node, and the address the
// client reaches it at. Empty `prefix`: the server is bench-serve's own child.
struct StepPlacement {
  std::vector<std::string> prefix;
  std::string node, address, step_name;
};

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// A node's NodeAddr, from scontrol; "" when SLURM does not say.
std::string node_address(const std::string& node) {
  Captured c = capture_process({"scontrol", "show", "node", node}, 30);
  if (!c.ok()) return "";
  std::istringstream words(c.out);
  for (std::string w; words >> w;) {
    if (w.rfind("NodeAddr=", 0) == 0) return w.substr(9);
  }
  return "";
}

// Throws Error(kInput) for a serve.node past the allocation's nodes.
StepPlacement step_placement(const ServeSpec& spec, const std::string& run_id) {
  StepPlacement p;
  if (spec.url || spec.slurm_step != "auto" || env_text("SLURM_JOB_ID").empty()) return p;
  const std::string here = env_text("SLURMD_NODENAME");
  p.node = here;
  if (spec.node) {
    Captured c =
        capture_process({"scontrol", "show", "hostnames", env_text("SLURM_JOB_NODELIST")}, 30);
    std::vector<std::string> nodes;
    std::istringstream lines(c.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) nodes.push_back(line);
    }
    if (!c.ok() || *spec.node >= static_cast<std::int64_t>(nodes.size())) {
      throw Error::input(Mark::in("serve.node"), "serve.node",
                         "is " + std::to_string(*spec.node) + ", but the allocation has " +
                             plural(nodes.size(), "node") + " (" + join(nodes, ", ") + ")",
                         "give a place in the allocation's node list, from 0");
    }
    p.node = nodes[static_cast<size_t>(*spec.node)];
  }
  if (p.node != here) p.address = node_address(p.node);
  p.step_name = "sweepbench-serve-" + run_id.substr(0, 12);
  // --overlap: the server shares the CPUs the client's own step holds on that node.
  p.prefix = {"srun",
              "--overlap",
              "--ntasks=1",
              "--nodes=1",
              "--job-name=" + p.step_name,
              "--kill-on-bad-exit=1"};
  if (!p.node.empty()) p.prefix.push_back("--nodelist=" + p.node);
  return p;
}

// Cancels the server's step through SLURM (the step named `name` of this job).
void cancel_step(const std::string& name) {
  const std::string job = env_text("SLURM_JOB_ID");
  Captured steps =
      capture_process({"squeue", "--steps", "--noheader", "--jobs=" + job, "--format=%i %j"}, 30);
  std::istringstream lines(steps.out);
  for (std::string id, step_name; lines >> id >> step_name;) {
    if (step_name == name) capture_process({"scancel", "--signal=KILL", id}, 30);
  }
}

// The same in every rank of one launch; drawn when there is no launcher (one rank).
std::string run_id_of(const std::string& config_hash, const std::string& out) {
  std::string launch = launch_id();
  if (!launch.empty()) return sha256_hex(launch + "\n" + config_hash + "\n" + out).substr(0, 32);
  return random_run_id();
}

int run(const std::string& config_path, const std::string& out_arg) {
  Value resolved = load_point_config(config_path, {});
  ServeSpec spec = serve_spec_of(resolved);
  if (spec.server.argv.empty() && !spec.url) {
    throw Error::input(Mark::in(config_path), "benchmark",
                       "is '" + config_at(resolved, "benchmark").as_string() +
                           "', and bench-serve runs points whose benchmark is serve",
                       "run this point with its own program (bench-sweep run chooses it)");
  }
  const std::string out = fs::absolute(out_arg).lexically_normal().string();
  const std::string rank_path = (fs::path(out) / rank_file_name(0)).string();
  std::error_code ec;
  if (fs::exists(rank_path, ec)) {
    throw Error(ErrorKind::kConflict, Mark::in(rank_path), "", "results are already there",
                "results are never overwritten; choose another --out");
  }
  // A dataset that cannot give prompts fails here, before any server starts.
  const PromptSource prompts(spec);

  RankResult r;
  r.benchmark = "serve";
  r.config_yaml = emit_canonical_yaml(resolved);
  r.config_hash = config_hash(resolved);
  r.tag = fs::absolute(config_path).lexically_normal().parent_path().filename().string();
  r.run_id = run_id_of(r.config_hash, out);
  r.hostname = hostname();
  r.sweepbench_version = SWEEPBENCH_VERSION;
  set_run_environment(r, detect_environment());

  const StepPlacement placement = step_placement(spec, r.run_id);
  RuntimeValues values;
  values.out = out;
  values.host = spec.host;
  ExpandedCommand cmd;
  std::string base_url;
  if (spec.url) {
    base_url = *spec.url;
    while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  } else {
    values.port = spec.port ? *spec.port : free_port(spec.host);
    // On another node of the allocation, the server is reached at that node's address.
    if (!placement.address.empty()) values.host = placement.address;
    cmd = expand_command(spec.server, resolved, values);
    base_url = "http://" + url_host(values.host) + ":" + std::to_string(values.port);
    r.command.stdout_log = std::string(kLogsDir) + "/server.stdout.txt";
    r.command.stderr_log = std::string(kLogsDir) + "/server.stderr.txt";
  }
  make_directories((fs::path(out) / kLogsDir).string());
  r.command.argv = cmd.argv;
  r.command.workdir = cmd.workdir;
  r.serve.mode = spec.mode;
  r.serve.api = spec.api;
  r.serve.base_url = base_url;
  r.start_time = utc_now_iso8601();

  install_stop_handler();
  become_child_subreaper();  // what the server starts stays ours to end
  ResourceSampler sampler(
      static_cast<int>(config_at(resolved, "metrics.sample_interval_ms").as_int()), "",
      config_at(resolved, "metrics.system").as_bool());
  sampler.start();
  const auto t0 = std::chrono::steady_clock::now();

  // The server, unless the point loads one already running (serve.url).
  std::optional<Server> server;
  ServerLaunch launch;
  if (!spec.url) {
    launch.argv = placement.prefix;
    launch.argv.insert(launch.argv.end(), cmd.argv.begin(), cmd.argv.end());
    if (!placement.step_name.empty()) {
      const std::string name = placement.step_name;
      launch.before_kill = [name] { cancel_step(name); };
    }
    launch.env = cmd.env;
    launch.workdir = cmd.workdir;
    launch.stdout_log = (fs::path(out) / r.command.stdout_log).string();
    launch.stderr_log = (fs::path(out) / r.command.stderr_log).string();
    std::printf("# bench-serve: %s\n", terminal_safe(join(launch.argv, " "), false).c_str());
    std::fflush(stdout);
    server.emplace(launch);
    g_server_group = server->pid();
    if (g_stops.load() >= 2) ::kill(-server->pid(), SIGKILL);
  } else {
    std::printf("# bench-serve: the server at %s (serve.url)\n",
                terminal_safe(base_url, false).c_str());
  }
  Server* running = server ? &*server : nullptr;

  Outcome outcome;
  std::vector<LevelRun> runs;
  double ready_s = 0;
  bool ready = wait_until_ready(running, spec, base_url, launch.stdout_log, launch.stderr_log,
                                &ready_s, outcome);
  LoadTarget target;
  target.base_url = base_url;
  target.endpoint = spec.endpoint();
  target.extra_body = spec.body;
  if (ready) {
    r.serve.ready_s = ready_s;
    std::printf("# ready in %.1f s at %s\n", ready_s, base_url.c_str());
    std::fflush(stdout);
    std::string why;
    if (spec.model) {
      target.model = *spec.model;
    } else if (std::optional<std::string> model = served_model(base_url, &why)) {
      target.model = *model;
    } else {
      outcome.fail("cannot learn the model's name (" + terminal_safe(why, false) +
                   "); set serve.model");
      ready = false;
    }
    r.serve.model = target.model;
  }
  // After load whose connections failed, the server gets a moment to be seen ended (it closes
  // its sockets before it can be reaped; as a SLURM step, srun ends after its task).
  auto connections_failed = [](const LoadResult& load) {
    return std::any_of(load.requests.begin(), load.requests.end(), [](const RequestRecord& q) {
      return q.timing.error == RequestError::kConnect;
    });
  };
  auto server_died = [&](const std::string& when, bool settle = false) {
    if (running == nullptr || running->running_after(settle ? 2.0 : 0.0)) return false;
    // A stop reaches a server run as a SLURM step too (SLURM signals every step before a time
    // limit): its end is then the stop's, not a failure of its own.
    if (!stopping()) {
      outcome.fail("the server " + running->exit_text() + " " + when + ": " +
                   running->last_words());
    }
    return true;
  };
  if (ready && spec.warmup_requests > 0 && !stopping()) {
    LoadOptions options;
    options.request_timeout_s = spec.timeout_s;
    options.stop = stopping;
    std::vector<LoadRequest> warm =
        prompts.requests(static_cast<size_t>(spec.warmup_requests), spec.seed * 1000003ULL);
    LoadResult w = run_at_concurrency(target, warm, 1, options);
    keep_requests(w, -1, r.serve);
    size_t ok = 0;
    std::string first_error;
    for (const RequestRecord& q : w.requests) {
      if (q.timing.error == RequestError::kNone && !q.timing.chunks.empty()) ++ok;
      if (first_error.empty() && !q.message.empty()) first_error = q.message;
    }
    if (!server_died("during the warm-up requests", connections_failed(w)) && ok == 0 &&
        !w.stopped) {
      outcome.fail("every warm-up request failed: " + terminal_safe(first_error, false));
    }
  }
  if (ready && outcome.status == "ok") {
    std::vector<double> plan = spec.mode == "ramp" ? std::vector<double>{spec.levels[0]}
                                                   : spec.levels;
    auto measure = [&](double level, bool searched) {
      std::printf("# level %zu: %s%s\n", runs.size(), level_text(level, spec.mode).c_str(),
                  searched ? " (SLA search)" : "");
      std::fflush(stdout);
      LevelRun run = run_level(spec, prompts, target, level, runs.size());
      run.searched = searched;
      keep_requests(run.result, static_cast<std::int64_t>(runs.size()), r.serve);
      const bool settle = connections_failed(run.result);
      runs.push_back(std::move(run));
      return !server_died("during level " + std::to_string(runs.size() - 1) + " (" +
                              level_text(level, spec.mode) + ")",
                          settle) &&
             !stopping();
    };
    bool going = true;
    for (size_t i = 0; i < plan.size() && going; ++i) going = measure(plan[i], false);
    if (spec.has_sla() && spec.search > 0) {
      SearchOptions search;
      search.kind = spec.closed_loop() ? LevelKind::kConcurrency : LevelKind::kRate;
      search.plan_levels = plan.size();
      search.max_extra_levels = static_cast<size_t>(spec.search);
      for (std::int64_t k = 0; k < spec.search && going; ++k) {
        std::optional<double> next = next_level(outcomes_of(runs), spec.attainment, search);
        if (!next) break;
        going = measure(*next, true);
      }
    }
  }

  // ---- stop the server, then the verdict ----
  // A server that ended on its own before it was stopped failed, whatever the levels say: the
  // answers may have come from another process on its port (one that took the port between
  // free_port and the server's bind, while ours died of "Address already in use").
  server_died("before it was stopped");
  r.serve.server_stop = running != nullptr
                            ? running->stop(hurrying() ? 0 : spec.stop_grace_s, hurrying)
                            : "not ours to stop (serve.url)";
  if (running != nullptr && placement.prefix.empty()) {
    // The port free for the next point: a server that left a listener somewhere says so here.
    bool free = false;
    for (int i = 0; i < 50 && !(free = port_free(values.host, static_cast<int>(values.port)));
         ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!free) {
      r.serve.server_stop +=
          "; its port " + std::to_string(values.port) + " was still in use 5 s after";
    }
  }
  g_server_group = 0;
  sampler.stop();
  take_samples(sampler, r);
  r.end_time = utc_now_iso8601();
  r.command.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.command.exit_code = -1;
  if (const std::string e = running != nullptr ? running->exit_text() : "";
      e.rfind("exited with code ", 0) == 0) {
    r.command.exit_code = std::stoll(e.substr(17));
  }
  if (running != nullptr) {
    std::printf("# the server %s\n", terminal_safe(r.serve.server_stop, false).c_str());
  }

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
    for (const ServeRequest& q : r.serve.requests) {
      if (q.level >= 0 && !q.message.empty()) {
        first = q.message;
        break;
      }
    }
    outcome.fail("no request of any level succeeded: " + terminal_safe(first, false));
  }

  // Each level's figures, and the point's: its headline level's and the SLA's answer.
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
  SlaAnswer answer;
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

  r.status = r.rank_status = outcome.status;
  r.reason = outcome.reason;
  write_rank_file(r, rank_path);
  Value extra = Value::map();
  Value server_info = Value::map();
  server_info.set("argv", [&] {
    Value a = Value::list();
    for (const std::string& s : cmd.argv) a.items().push_back(Value::string(s));
    return a;
  }());
  server_info.set("url", Value::string(base_url));
  if (!placement.step_name.empty()) {
    server_info.set("slurm_step", Value::string(placement.step_name));
    server_info.set("node", Value::string(placement.node));
  }
  server_info.set("model", Value::string(target.model));
  server_info.set("ready_s", Value::real(ready_s));
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
    sla.set("answer", Value::string(answer_text(answer, spec)));
    extra.set("sla", sla);
  }
  write_summary_file(out, r, r.status, r.reason, extra, metrics);

  print_levels(runs, spec);
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
