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

// Whether the point's server may use GPUs: launch.device cuda, launch.gpus_per_rank above 0, or
// CUDA_VISIBLE_DEVICES naming some (as SLURM sets it for a job's GPUs); never with device cpu.
bool server_uses_gpus(const Value& resolved);

// The memory in use on each GPU this process may use (CUDA_VISIBLE_DEVICES's, else every one),
// in MiB by GPU index, from `nvidia-smi --query-gpu`; empty where nvidia-smi is not found, fails
// or sees no GPU (a CPU node).
std::map<std::string, double> gpu_memory_used();

// After the server stopped: waits up to `seconds` until every GPU of `before` uses at most
// kGpuSlackMiB more than it did before the server started. "" when each does (or nothing was
// read), else what is still held: "GPU 0 held 71234 MiB 10 s after, 310 MiB before the server".
// `*after`: the last readings.
inline constexpr double kGpuSlackMiB = 256;
inline constexpr double kGpuReleaseSeconds = 10;
std::string gpu_memory_left(const std::map<std::string, double>& before, double seconds,
                            std::map<std::string, double>* after);

// The model the server serves, by GET /v1/models: its first entry's id.
std::optional<std::string> served_model(const std::string& base_url, std::string* why);

}  // namespace sweepbench
