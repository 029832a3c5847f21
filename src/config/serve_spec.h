// The serve section of a resolved config, read once and checked (docs/serving.md): the server
// to start, when it is ready, the load plan's levels, the prompts and the SLA.
//
// Checked when a sweep is planned (config.cc calls serve_spec_of for benchmark: serve), so that a
// concurrency of 2.5, a ramp of three levels or an SLA search without an SLA fails before any
// server starts. Running it is bench-serve's (src/serve/).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "config/command_spec.h"
#include "config/value.h"

namespace sweepbench {

struct ServeSpec {
  CommandSpec server;              // serve.argv, serve.env, serve.workdir (server_command_of)
  std::optional<std::string> url;  // a server already running: nothing started or stopped
  std::string host = "127.0.0.1";
  std::string slurm_step = "auto";   // auto: a step of its own inside an allocation; never
  std::optional<std::int64_t> node;  // the allocation's node the server's step runs on
  // The point's container.runtime when it has one: the server then runs inside the image as
  // bench-serve's child, never as a SLURM step of its own (srun is the host's, not the image's).
  std::optional<std::string> container;
  std::optional<std::int64_t> port;  // none: a free port for each point
  std::optional<std::string> ready_path = std::string("/health");
  std::optional<std::string> ready_log;
  double ready_timeout_s = 600;
  double stop_grace_s = 30;

  std::string api = "completions";  // or chat
  std::optional<std::string> model;
  Value body = Value::map();

  std::string mode = "poisson";  // poisson, gamma, concurrency, ramp
  std::vector<double> levels;    // rates per second, or concurrencies (whole numbers)
  double burstiness = 1;
  std::int64_t requests = 200;
  double duration_s = 0;
  std::int64_t warmup_requests = 4;
  double timeout_s = 600;
  std::uint64_t seed = 0;

  std::int64_t input_tokens = 128, output_tokens = 128;
  double range_ratio = 0;
  std::optional<std::pair<std::int64_t, std::int64_t>> token_ids;  // [low, high)
  std::optional<std::string> dataset;
  // serve.dataset_max_tokens: output_tokens gives every dataset request output_tokens.
  bool dataset_fixed_output = false;

  // Seconds; infinity: no bound.
  double sla_ttft_s = std::numeric_limits<double>::infinity();
  double sla_tpot_s = std::numeric_limits<double>::infinity();
  double sla_e2e_s = std::numeric_limits<double>::infinity();
  double attainment = 0.99;
  std::int64_t search = 0;

  bool has_sla() const;
  bool closed_loop() const { return mode == "concurrency"; }
  // "/v1/completions" or "/v1/chat/completions".
  std::string endpoint() const;
};

// Reads and checks the serve section. Throws Error(kInput) naming file:line and the key. Returns
// an empty spec (no server argv) for other benchmarks.
ServeSpec serve_spec_of(const Value& resolved);

}  // namespace sweepbench
