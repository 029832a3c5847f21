// What bench-serve's files share of its server (bench_serve.cc, bench_serve_server.cc): where the
// server runs inside a SLURM allocation (a step of its own, srun --overlap), the cancelling of
// that step, the wait until the server is ready, the model it serves, and its GPUs' memory
// given back.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/serve_spec.h"
#include "serve/server.h"

namespace sweepbench {

// Where the server's step runs: the srun words before its argv, the node, and the address the
// client reaches it at. Empty `prefix`: the server is bench-serve's own child.
struct StepPlacement {
  std::vector<std::string> prefix;
  std::string node, address, step_name;
  bool elsewhere = false;  // on another node than bench-serve's (address: its NodeAddr, if known)
};

// The placement of the point's server: a step of its own inside a SLURM allocation (unless
// serve.url, serve.slurm_step: never or a point in a container), else bench-serve's child. Throws
// Error(kInput) for a serve.node past the allocation's nodes.
StepPlacement step_placement(const ServeSpec& spec, const std::string& run_id);

// Cancels the server's step through SLURM (the step named `name` of this job).
void cancel_step(const std::string& name);

// Waits until the server (nullptr: serve.url's, not ours) is ready, following its logs for
// serve.ready.log. False when it exited or was never ready in time (`*failure` says why), or
// when `stop` came.
bool wait_until_ready(serve::Server* server, const serve::ServerLaunch& launch,
                      const ServeSpec& spec, const std::string& base_url,
                      const std::function<bool()>& stop, double* ready_s, std::string* failure);

// The GPUs the server may use, as CUDA_VISIBLE_DEVICES names them: serve.env's when it sets it,
// else bench-serve's own (as SLURM sets it for a job's GPUs); "" when neither does.
std::string visible_gpus(const std::map<std::string, std::string>& server_env);

// Whether the point's server may use GPUs: launch.device cuda, launch.gpus_per_rank above 0, or
// `visible` (visible_gpus) naming some; never with launch.device cpu.
bool server_uses_gpus(const Value& resolved, const std::string& visible);

// The memory in use (MiB) by nvidia-smi's GPU index, from `nvidia-smi --query-gpu`, for the GPUs
// `visible` (CUDA_VISIBLE_DEVICES's text) names by index or UUID; every GPU when it is empty or
// names none nvidia-smi lists (a MIG instance's UUID). nullopt where nvidia-smi is not found,
// fails, takes over 10 s or lists no GPU (a CPU node).
std::optional<std::map<std::string, double>> gpu_memory_used(const std::string& visible);

// After the server stopped: reads the GPUs of `before` until each uses at most kGpuSlackMiB more
// than it did before the server started, for up to `seconds` (0: one reading). "" when each does
// (or `before` is empty), else what is still held ("GPU 0 held 71234 MiB 10.1 s after the stop,
// 310 MiB before the server") or that nvidia-smi did not answer. `*after`: the last readings.
inline constexpr double kGpuSlackMiB = 256;
inline constexpr double kGpuReleaseSeconds = 10;
std::string gpu_memory_left(const std::map<std::string, double>& before, const std::string& visible,
                            double seconds, std::map<std::string, double>* after);

// The model the server serves, by GET /v1/models: its first entry's id.
std::optional<std::string> served_model(const std::string& base_url, std::string* why);

}  // namespace sweepbench
