// How fast the serve load client itself is (issue 54: "the client is never the bottleneck"):
// run_at_concurrency against fast-openai-standin (tests/support/fast_openai_standin.cc, a stand-in
// server on loopback that costs next to nothing), the table in docs/performance.md ("Serving: the
// load client's own speed").
//
//   build/notrain/bin/serve_client_speed [--standin PATH] [--repeats 3] [--json FILE]
//                                        [--part throughput|streams|ttft]
//
// Three parts, each repeated, the median reported with every repeat beside it:
// - throughput: short answers (4 one-token chunks, no delay) at concurrency 64, 128 and 256,
//   20,000 requests each; requests/s is the successful requests over the load's duration, and
//   the client's CPU per request (getrusage) says what a core of its own would give, the
//   stand-in's (/proc) whether it was the one that held the rate;
// - streams: 1,000 requests at concurrency 1,000, each answer 2 s to its first token and 0.5 s
//   between its 4 tokens (3.5 s held open): all must succeed, with 1,000 in flight at once on
//   both sides (the client's max_in_flight, the stand-in's /stats max_concurrent);
// - TTFT overhead: the stand-in waits 50 ms before the first token; TTFT - 50 ms, its median and
//   p99 over the requests, at concurrency 1 (200 requests) and 100 (2,000 requests) and at a
//   Poisson 2,000/s (4,000 requests, about 100 in flight, run_at_times), and the p99 of the warm
//   requests (after those that also opened connections). It holds
//   everything between the client's send time and the token chunk's parse: the client's request,
//   loopback both ways, the stand-in's parse and its timer's lateness, and the client's read; so
//   it bounds our own share from above. The stand-in's mean lateness (its /stats) is beside it.
//
// The stand-in runs as a child process; on 2 cores each side has about one. Nothing else should
// run meanwhile (a build beside it halves the figures).
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "config/value.h"
#include "config/yaml_io.h"
#include "os/process.h"
#include "serve/arrivals.h"
#include "serve/load_client.h"
#include "serve/request_metrics.h"

namespace {

using namespace sweepbench;
using namespace sweepbench::serve;

// fast-openai-standin as a child: its port from its first line, killed at the end.
class StandIn {
 public:
  StandIn(const std::string& path, std::vector<std::string> options) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    SpawnSpec spec;
    spec.argv = {path};
    spec.argv.insert(spec.argv.end(), options.begin(), options.end());
    spec.stdout_fd = fds[1];
    spec.parent_death_signal = SIGKILL;
    pid_ = spawn_process(spec).pid;
    close(fds[1]);
    std::string line;
    char c = 0;
    while (read(fds[0], &c, 1) == 1 && c != '\n') line += c;
    close(fds[0]);
    port_ = std::atoi(line.c_str());
    if (port_ <= 0) throw std::runtime_error(path + " gave no port: '" + line + "'");
  }
  ~StandIn() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  StandIn(const StandIn&) = delete;
  StandIn& operator=(const StandIn&) = delete;
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Its CPU time so far, user and system (/proc/PID/stat's utime and stime, in clock ticks).
  double cpu_seconds() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t p = stat.rfind(')');  // the command name may hold spaces
    std::istringstream fields(p == std::string::npos ? "" : stat.substr(p + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i)
      if (i >= 14) ticks += std::atof(field.c_str());
    return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
  }

  // GET /stats over a plain socket (the client under test speaks only streams).
  Value stats() const {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    std::string text;
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      std::string req = "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
      if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
        char buf[512];
        ssize_t n = 0;
        while (text.find('}') == std::string::npos && (n = read(fd, buf, sizeof buf)) > 0)
          text.append(buf, static_cast<size_t>(n));
      }
    }
    close(fd);
    size_t body = text.find("\r\n\r\n");
    return parse_own_yaml(body == std::string::npos ? "{}" : text.substr(body + 4), "stats");
  }

 private:
  int pid_ = -1;
  int port_ = 0;
};

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Every CPU's busy time so far (/proc/stat's first line: user, nice, system, irq, softirq and
// steal, the time the hypervisor gave to others).
double machine_busy_s() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  return (user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// What the rest of the machine used while a repeat ran, in cores: all CPUs' busy time less ours
// and the stand-in's. Another build or server beside the benchmark shows here (a share of a core
// already halves the client's figures on 2 cores), so that a busy run is not taken for a slow one.
double max_other_cores = 0;
class OtherLoad {
 public:
  explicit OtherLoad(const StandIn& server)
      : server_(server),
        busy0_(machine_busy_s()),
        own0_(cpu_seconds() + server.cpu_seconds()),
        wall0_(std::chrono::steady_clock::now()) {}
  double cores() const {
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
    double other = (machine_busy_s() - busy0_) - (cpu_seconds() + server_.cpu_seconds() - own0_);
    double c = std::max(0.0, other / wall);
    max_other_cores = std::max(max_other_cores, c);
    return c;
  }

 private:
  const StandIn& server_;
  double busy0_, own0_;
  std::chrono::steady_clock::time_point wall0_;
};

std::vector<LoadRequest> requests_of(size_t n, std::int64_t max_tokens) {
  std::vector<LoadRequest> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back({"prompt number " + std::to_string(i), max_tokens});
  return out;
}

// A number of the stand-in's /stats; 0 when it is missing.
double number_field(const Value& map, std::string_view key) {
  const Value* v = map.is_map() ? map.find(key) : nullptr;
  return v != nullptr && v->is_number() ? v->as_float() : 0;
}

double median(std::vector<double> v) { return percentiles_of(std::move(v)).p50; }

std::string repeats_text(const std::vector<double>& v, double scale, int decimals) {
  std::string out;
  for (double x : v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, x * scale);
    out += (out.empty() ? "" : ", ") + std::string(buf);
  }
  return out;
}

Value reals(const std::vector<double>& v) {
  Value list = Value::list();
  for (double x : v) list.items().push_back(Value::real(x));
  return list;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string self_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string path(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return path.substr(0, path.rfind('/'));
}

}  // namespace

int main(int argc, char** argv) {
  std::string standin = self_dir() + "/fast-openai-standin";
  std::string json;
  int repeats = 3;
  std::string part;  // "": all three
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--standin" && i + 1 < argc)
      standin = argv[++i];
    else if (a == "--json" && i + 1 < argc)
      json = argv[++i];
    else if (a == "--repeats" && i + 1 < argc)
      repeats = std::max(1, std::atoi(argv[++i]));
    else if (a == "--part" && i + 1 < argc)
      part = argv[++i];
    else {
      std::fprintf(stderr,
                   "usage: serve_client_speed [--standin PATH] [--repeats N] [--json FILE]"
                   " [--part throughput|streams|ttft]\n");
      return 2;
    }
  }
  // 1,000 streams need 1,000 sockets on each side; the stand-in inherits the limit.
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  setrlimit(RLIMIT_NOFILE, &files);

  Value out = Value::map();
  char date[32];
  std::time_t t = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&t));
  out.set("date", Value::string(date));
  out.set("cpus", Value::integer(std::thread::hardware_concurrency()));
  out.set("cpu_model", Value::string(cpu_model()));
  out.set("repeats", Value::integer(repeats));
  std::printf("# serve_client_speed: %s, %u CPUs (%s), %d repeats, medians (repeats)\n", date,
              std::thread::hardware_concurrency(), cpu_model().c_str(), repeats);
  bool ok = true;

  // Throughput: short answers, no delay; the client's CPU per request beside the rate.
  if (part.empty() || part == "throughput") {
    std::printf("#\n# throughput: 4 chunks, no delay, 20000 requests\n");
    std::printf("# %11s  %10s  %17s  %18s  %12s  %s\n", "concurrency", "req/s", "client CPU us/req",
                "stand-in CPU us/req", "others' cores", "req/s of each repeat");
    Value throughput = Value::list();
    {
      StandIn server(standin, {"--chunks", "4"});
      LoadTarget target{server.url(), "/v1/completions", "tiny", Value()};
      std::vector<LoadRequest> requests = requests_of(20000, 4);
      for (int concurrency : {64, 128, 256}) {
        std::vector<double> rates, cpu, server_cpu, others;
        size_t failed = 0;
        for (int r = 0; r < repeats; ++r) {
          OtherLoad other(server);
          double c0 = cpu_seconds(), s0 = server.cpu_seconds();
          LoadResult result = run_at_concurrency(target, requests, concurrency);
          double used = cpu_seconds() - c0;
          others.push_back(other.cores());
          server_cpu.push_back((server.cpu_seconds() - s0) / static_cast<double>(requests.size()));
          PointMetrics m = point_metrics(timings_of(result), result.duration_s);
          failed += m.failed;
          rates.push_back(m.request_throughput);
          cpu.push_back(used / static_cast<double>(requests.size()));
        }
        ok = ok && failed == 0;
        std::printf("  %11d  %10.0f  %17.1f  %18.1f  %12.2f  %s%s\n", concurrency, median(rates),
                    median(cpu) * 1e6, median(server_cpu) * 1e6,
                    *std::max_element(others.begin(), others.end()),
                    repeats_text(rates, 1, 0).c_str(), failed ? "  FAILED requests" : "");
        Value row = Value::map();
        row.set("concurrency", Value::integer(concurrency));
        row.set("requests_per_s", reals(rates));
        row.set("client_cpu_s_per_request", reals(cpu));
        row.set("standin_cpu_s_per_request", reals(server_cpu));
        row.set("other_load_cores", reals(others));
        row.set("failed", Value::integer(static_cast<std::int64_t>(failed)));
        throughput.items().push_back(std::move(row));
      }
    }
    out.set("throughput", std::move(throughput));
  }

  // 1,000 streams held open at once.
  if (part.empty() || part == "streams") {
    std::printf(
        "#\n# streams: 1000 at concurrency 1000, 2 s to the first token, 0.5 s between 4\n");
    std::printf("# %6s  %9s  %13s  %14s  %10s  %12s\n", "repeat", "succeeded", "max_in_flight",
                "max_concurrent", "duration s", "others' cores");
    Value streams = Value::list();
    for (int r = 0; r < repeats; ++r) {
      StandIn server(standin, {"--chunks", "4", "--first-delay", "2", "--delay", "0.5"});
      LoadTarget target{server.url(), "/v1/completions", "tiny", Value()};
      OtherLoad other(server);
      LoadResult result = run_at_concurrency(target, requests_of(1000, 4), 1000);
      double others = other.cores();
      PointMetrics m = point_metrics(timings_of(result), result.duration_s);
      std::int64_t server_max = int_field(server.stats(), "max_concurrent", -1);
      bool good = m.succeeded == 1000 && result.max_in_flight == 1000 && server_max == 1000;
      ok = ok && good;
      std::printf("  %6d  %9zu  %13d  %14lld  %10.2f  %12.2f  %s\n", r + 1, m.succeeded,
                  result.max_in_flight, static_cast<long long>(server_max), result.duration_s,
                  others, good ? "OK" : "FAILED");
      for (const RequestRecord& rec : result.requests) {
        if (!rec.message.empty()) {
          std::printf("    first failure: %s\n", rec.message.c_str());
          break;
        }
      }
      Value row = Value::map();
      row.set("succeeded", Value::integer(static_cast<std::int64_t>(m.succeeded)));
      row.set("max_in_flight", Value::integer(result.max_in_flight));
      row.set("server_max_concurrent", Value::integer(server_max));
      row.set("duration_s", Value::real(result.duration_s));
      row.set("other_load_cores", Value::real(others));
      row.set("ttft_overhead_p50_s", Value::real(m.ttft_s.p50 - 2.0));
      row.set("ttft_overhead_p99_s", Value::real(m.ttft_s.p99 - 2.0));
      streams.items().push_back(std::move(row));
    }
    out.set("streams", std::move(streams));
  }

  // TTFT overhead over a known first delay.
  constexpr double kFirst = 0.05;
  if (part.empty() || part == "ttft") {
    std::printf("#\n# TTFT overhead: TTFT - 50 ms first delay, 2 chunks\n");
    std::printf("# %-21s  %8s  %9s  %7s  %11s  %7s  %15s  %12s  %s\n", "plan", "requests",
                "median ms", "p99 ms", "p99 warm ms", "mean ms", "stand-in late ms",
                "others' cores", "medians of each repeat, ms");
    // A closed loop with a constant delay keeps its requests in waves: all `concurrency` of them
    // are answered within the same millisecond, every time, and read one after another. The
    // Poisson plan holds about as many in flight (2,000/s x 50 ms) without the waves.
    struct Plan {
      LoadPlan plan;
      size_t requests, warm_from;  // warm: from the request after those that opened connections
    };
    const std::vector<Plan> plans = {{FixedConcurrency{1}, 200, 1},
                                     {FixedConcurrency{100}, 2000, 100},
                                     {ArrivalSchedule{PoissonRate{2000}}, 4000, 200}};
    Value overhead = Value::list();
    {
      StandIn server(standin, {"--chunks", "2", "--first-delay", "0.05"});
      LoadTarget target{server.url(), "/v1/completions", "tiny", Value()};
      for (const Plan& plan : plans) {
        size_t n = plan.requests;
        std::vector<double> p50, p99, p99_warm, mean, late, others;
        size_t failed = 0;
        for (int r = 0; r < repeats; ++r) {
          Value before = server.stats();
          OtherLoad other(server);
          LoadResult result;
          if (const auto* fixed = std::get_if<FixedConcurrency>(&plan.plan)) {
            result = run_at_concurrency(target, requests_of(n, 2), fixed->concurrency);
          } else {
            std::vector<double> times = send_times(std::get<ArrivalSchedule>(plan.plan), {0, n},
                                                   static_cast<std::uint64_t>(r + 1));
            result = run_at_times(target, requests_of(n, 2), times);
          }
          others.push_back(other.cores());
          Value after = server.stats();
          // With no delay after the first token, each request waits on one timer: its first.
          late.push_back(
              (number_field(after, "timers_late_s") - number_field(before, "timers_late_s")) /
              static_cast<double>(int_field(after, "timers", 0) - int_field(before, "timers", 0)));
          PointMetrics m = point_metrics(timings_of(result), result.duration_s);
          failed += m.failed;
          mean.push_back(m.ttft_s.mean - kFirst);
          p50.push_back(m.ttft_s.p50 - kFirst);
          p99.push_back(m.ttft_s.p99 - kFirst);
          std::vector<double> warm;
          for (size_t i = plan.warm_from; i < n; ++i)
            warm.push_back(request_metrics(result.requests[i].timing).ttft_s - kFirst);
          p99_warm.push_back(percentiles_of(std::move(warm)).p99);
        }
        ok = ok && failed == 0;
        std::string name = describe(plan.plan);
        std::printf("  %-21s  %8zu  %9.3f  %7.3f  %11.3f  %7.3f  %15.3f  %12.2f  %s%s\n",
                    name.c_str(), n, median(p50) * 1e3, median(p99) * 1e3, median(p99_warm) * 1e3,
                    median(mean) * 1e3, median(late) * 1e3,
                    *std::max_element(others.begin(), others.end()),
                    repeats_text(p50, 1e3, 3).c_str(), failed ? "  FAILED requests" : "");
        Value row = Value::map();
        row.set("plan", Value::string(name));
        row.set("requests", Value::integer(static_cast<std::int64_t>(n)));
        row.set("warm_from", Value::integer(static_cast<std::int64_t>(plan.warm_from)));
        row.set("overhead_p50_s", reals(p50));
        row.set("overhead_p99_s", reals(p99));
        row.set("overhead_p99_warm_s", reals(p99_warm));
        row.set("overhead_mean_s", reals(mean));
        row.set("standin_late_mean_s", reals(late));
        row.set("other_load_cores", reals(others));
        row.set("failed", Value::integer(static_cast<std::int64_t>(failed)));
        overhead.items().push_back(std::move(row));
      }
    }
    out.set("ttft_overhead", std::move(overhead));
  }

  out.set("max_other_load_cores", Value::real(max_other_cores));
  // A fifth of a core used by others already shows in the rates and the p99s.
  if (max_other_cores > 0.2)
    std::printf("# the machine was busy (others used up to %.2f cores in a repeat): rerun\n",
                max_other_cores);
  std::printf("# %s\n", ok ? "OK" : "FAILED");
  if (!json.empty()) {
    std::ofstream f(json + ".partial");
    f << emit_json(out) << "\n";
    f.close();
    std::rename((json + ".partial").c_str(), json.c_str());
  }
  return ok ? 0 : 1;
}
