// bench-serve's server outside its process: where it runs inside a SLURM allocation (srun words,
// node, address), the cancelling of its step, the wait until it is ready, the model it serves,
// and the GPUs' memory it held given back.
#include "serve/bench_serve_server.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/settings.h"
#include "config/yaml_io.h"
#include "os/process.h"
#include "serve/load_client.h"
#include "text/terminal.h"
#include "text/text.h"
#include "text/user_regex.h"

namespace sweepbench {
using namespace serve;

namespace {

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", s);
  return text;
}

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

}  // namespace

StepPlacement step_placement(const ServeSpec& spec, const std::string& run_id) {
  StepPlacement p;
  // In a container the server is the image's, bench-serve's child in the point's own step: srun
  // is the host's (serve_spec_of refuses serve.node there).
  if (spec.url || spec.slurm_step != "auto" || spec.container || env_text("SLURM_JOB_ID").empty())
    return p;
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
  if (p.node != here) {
    p.elsewhere = true;
    p.address = node_address(p.node);
  }
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

void cancel_step(const std::string& name) {
  const std::string job = env_text("SLURM_JOB_ID");
  Captured steps =
      capture_process({"squeue", "--steps", "--noheader", "--jobs=" + job, "--format=%i %j"}, 30);
  std::istringstream lines(steps.out);
  for (std::string id, step_name; lines >> id >> step_name;) {
    if (step_name == name) capture_process({"scancel", "--signal=KILL", id}, 30);
  }
}

bool wait_until_ready(Server* server, const ServerLaunch& launch, const ServeSpec& spec,
                      const std::string& base_url, const std::function<bool()>& stop,
                      double* ready_s, std::string* failure) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  std::optional<UserRegex> log_ready;
  if (spec.ready_log)
    log_ready.emplace(*spec.ready_log, Mark::in("serve.ready.log"), "serve.ready.log");
  // Nothing to wait for: serve.url's server with serve.ready.path null.
  if (!spec.ready_log && !spec.ready_path) {
    *ready_s = 0;
    return true;
  }
  LogFollower out(launch.stdout_log), err(launch.stderr_log);
  std::string last_answer = "no answer yet";
  while (true) {
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    if (stop()) return false;
    if (server != nullptr && !server->running()) {
      *failure = "the server " + server->exit_text() + " before it was ready (after " +
                 seconds_text(waited) + "): " + server->last_words();
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
      *failure = "the server was not ready after " + seconds_text(spec.ready_timeout_s) +
                 " (serve.ready.timeout_s; " + terminal_safe(how, false) + ")" +
                 (server != nullptr ? ": " + server->last_words() : "");
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::optional<std::string> served_model(const std::string& base_url, std::string* why) {
  HttpAnswer a = http_get(base_url + "/v1/models", 30);
  if (a.status != 200) {
    *why =
        "GET /v1/models: " + (a.status != 0 ? "HTTP status " + std::to_string(a.status) : a.error);
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

std::string visible_gpus(const std::map<std::string, std::string>& server_env) {
  auto own = server_env.find("CUDA_VISIBLE_DEVICES");
  return own != server_env.end() ? own->second : env_text("CUDA_VISIBLE_DEVICES");
}

bool server_uses_gpus(const Value& resolved, const std::string& visible) {
  const Settings s = Settings::of(resolved);
  if (s.launch.device == Device::kCpu) return false;
  return s.launch.device == Device::kCuda || s.launch.gpus_per_rank > 0 || !visible.empty();
}

std::optional<std::map<std::string, double>> gpu_memory_used(const std::string& visible) {
  const Captured c = capture_process(
      {"nvidia-smi", "--query-gpu=index,uuid,memory.used", "--format=csv,noheader,nounits"}, 10);
  if (!c.ok()) return std::nullopt;
  std::map<std::string, double> all, named;
  const std::vector<std::string> wanted = split_commas({visible});
  std::istringstream lines(c.out);
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> fields = split_commas({line});  // trimmed
    if (fields.size() != 3) continue;
    const std::string& index = fields[0];
    const std::string& uuid = fields[1];
    const std::optional<double> mib = parse_double(fields[2]);  // "[N/A]": none
    if (index.empty() || !mib) continue;
    all[index] = *mib;
    for (const std::string& w : wanted) {
      if (w == index || w == uuid) named[index] = *mib;
    }
  }
  if (all.empty()) return std::nullopt;
  return named.empty() ? all : named;
}

std::string gpu_memory_left(const std::map<std::string, double>& before, const std::string& visible,
                            double seconds, std::map<std::string, double>* after) {
  after->clear();
  if (before.empty()) return "";
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  std::vector<std::string> held;
  for (;;) {
    std::optional<std::map<std::string, double>> now = gpu_memory_used(visible);
    if (!now) return "the GPUs' memory not read after the stop (nvidia-smi did not answer)";
    *after = *now;
    const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
    held.clear();
    for (const auto& [index, was] : before) {
      auto it = after->find(index);
      if (it != after->end() && it->second > was + kGpuSlackMiB) {
        held.push_back("GPU " + index + " held " + std::to_string(std::llround(it->second)) +
                       " MiB " + seconds_text(waited) + " after the stop, " +
                       std::to_string(std::llround(was)) + " MiB before the server");
      }
    }
    if (held.empty() || waited >= seconds) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return join(held, "; ");
}

}  // namespace sweepbench
