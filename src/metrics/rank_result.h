// What one rank measured in one run: the data model of DIR/rank-NNNNN.h5.
//
// Plain values, no HDF5 and no torch: bench-train fills it, rank_file.h writes it, and
// bench-extract reads it back (rank_reader.h). docs/results-format.md describes the file; a test
// reads it with h5py and checks that description.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace sweepbench {

// 4: for bench-command, the group /command (3: the root attribute `benchmark` and, for
// bench-infer, the group /infer; 2: the steps as one compound dataset /steps; 1: a group /steps of
// one dataset per column; all still read).
constexpr std::int64_t kResultsSchemaVersion = 4;

// One optimizer step. Times in seconds; the step's total includes data loading, forward,
// backward, the agreement between ranks, gradient communication and the optimizer.
struct StepRecord {
  std::int64_t step = 0;
  double total_s = 0, data_s = 0, forward_s = 0, backward_s = 0, comm_s = 0, optimizer_s = 0;
  std::int64_t tokens = 0;   // this rank's tokens in the step (micro batch x seq x grad accum)
  std::int64_t samples = 0;  // this rank's sequences in the step
  double loss = 0;           // mean over the step's micro batches, this rank
  double lr = 0;
  double grad_norm = 0;   // after the all-reduce, before clipping
  double loss_scale = 1;  // fp16 dynamic loss scale; 1 otherwise
  bool skipped = false;   // fp16: inf/nan gradients, the update was skipped
  bool measured = false;  // false for warm-up steps
};

// Allocator (or RSS) statistics of one stage, in the Hugging Face Trainer's terms:
// alloc_delta = end - begin, peaked_delta = max(0, peak - end). alloc_end and alloc_peak are the
// bytes of live tensors (the CUDA caching allocator's, or on a CPU those of libtorch's CPU
// allocator, counted); -1 where not counted (files before they were, other programs).
struct StageMemory {
  std::string stage;  // before_init, init, train, eval
  std::int64_t begin = 0, end = 0, peak = 0;
  std::int64_t alloc_end = -1, alloc_peak = -1;
};

// The largest stage peak of a rank's resident set or allocator (peak), and of its counted
// tensors (alloc_peak); -1 where nothing was measured or counted.
inline double stage_peak(const std::vector<StageMemory>& stages) {
  double peak = -1;
  for (const StageMemory& m : stages) peak = std::max(peak, static_cast<double>(m.peak));
  return peak;
}
inline double stage_alloc_peak(const std::vector<StageMemory>& stages) {
  double peak = -1;
  for (const StageMemory& m : stages) peak = std::max(peak, static_cast<double>(m.alloc_peak));
  return peak;
}

struct EvalSummary {
  bool ran = false;
  std::int64_t steps = 0;
  std::int64_t samples = 0;        // this rank
  std::int64_t tokens = 0;         // this rank
  double loss = 0;                 // mean over all ranks' eval batches
  double seconds = 0;              // this rank's wall time for the evaluation
  std::vector<double> batch_loss;  // this rank, per batch
  std::vector<double> batch_s;     // this rank, per batch
};

struct SampleSeries {
  std::string device_source;  // nvml or rss
  std::vector<double> time_s;
  std::vector<std::int64_t> device_bytes, rss_bytes;
  std::vector<double> cpu_percent, ram_used_mb;
};

// One generation of bench-infer, on this rank.
struct InferRunRecord {
  std::int64_t run = 0;     // 0-based, warm-up runs first
  bool warmup = false;      // left out of every statistic
  double ttft_s = 0;        // start to the first new token's ids on the host
  double e2e_s = 0;         // start to the last token's ids on the host
  std::int64_t tokens = 0;  // tokens generated per sequence
};

// The time of one generated token: position 0 is the first (its time is the TTFT), position p
// the p-th decode step, waited for on the device.
struct TokenTime {
  std::int64_t run = 0, position = 0;
  double seconds = 0;
};

// What bench-infer adds to a rank's results (the group /infer).
struct InferResult {
  std::int64_t batch_size = 0, input_tokens = 0, output_tokens = 0, num_beams = 1;
  std::int64_t warmup_runs = 0, runs_planned = 0;
  std::string kv_cache, dtype, decoding;  // decoding: greedy, sample or beam
  bool token_metrics = true;
  bool cuda_graph = false;  // the decode steps were CUDA graph replays (infer.cuda_graph)
  // One rank, one run (config/model_shapes.h inference_cost).
  double prefill_flops = 0, decode_flops = 0, decode_bytes = 0, weight_bytes = 0,
         kv_cache_bytes = 0;
  double peak_bandwidth_gbs = 0;      // per device; 0 = unknown (no MBU)
  std::string peak_bandwidth_source;  // config, table, measured, none
  std::vector<InferRunRecord> runs;
  std::vector<TokenTime> token_times;  // empty without infer.token_metrics
  // The new ids of every run: (runs, batch_size, output_tokens), row-major; written, not read.
  std::vector<std::int64_t> generated_ids;
};

// One figure of merit of a command, as bench-command read it (config/command_spec.h).
struct CommandMetric {
  std::string name, unit;
  std::string source;          // stdout, stderr, or the file it read (relative to the point)
  std::string reduce;          // last, first, mean, min, max, sum, count, all
  bool required = false;       // a run without it is failed
  bool found = false;          // at least one value was read
  double value = 0;            // the reduction of every value read (for all: the last)
  std::vector<double> values;  // the values read, in order: the first kMaxKeptValues (10,000)
  // type: text (docs/commands.md): the words kept (reduce last or first); value is NaN and
  // values empty.
  bool is_text = false;
  std::string text;
  // Why it was not found, or a value was not a number; when found, what was not kept of it.
  std::string problem;
};

// What bench-command adds to a rank's results (the group /command).
struct CommandResult {
  std::vector<std::string> argv;  // as run: placeholders replaced
  std::string workdir;
  std::string stdout_log, stderr_log;  // the program's output, relative to the point directory
  std::int64_t exit_code = -1;         // -1 when a signal ended it or it never started
  std::int64_t term_signal = 0;
  double seconds = 0;  // from the start of the program to its end
  std::vector<CommandMetric> metrics;
};

// One request of a serve point's load (the group /serve): times in seconds from its level's
// start; NaN where the request had none (a TTFT of a request that failed before any token).
struct ServeRequest {
  std::int64_t level = 0;  // the index of its level; -1: a warm-up request
  double send_s = 0, ttft_s = 0, e2e_s = 0, tpot_s = 0;
  std::int64_t prompt_tokens = -1, output_tokens = 0, http_status = 0;
  std::string error;  // "" or the kind: connect, http-status, timeout, stream, server, no-output
  std::string message;
};

// What bench-serve adds to a rank's results (docs/serving.md): the load plan as measured, each
// level's metrics (one column per metric, one row per level), every request and its token chunks.
struct ServeResult {
  std::string mode, api, base_url, model;
  double ready_s = 0;          // from the server's start until it was ready
  std::string server_stop;     // how it ended: "exited on SIGTERM", "killed after 30 s", ...
  std::vector<double> levels;  // in the order measured
  std::vector<std::uint8_t> searched;  // 1: added by the SLA search
  std::vector<std::string> metric_names, metric_units;
  std::vector<std::vector<double>> level_values;  // [metric][level]
  std::vector<ServeRequest> requests;
  std::vector<std::int64_t> chunk_request;  // each token chunk's request (an index of requests)
  std::vector<double> chunk_time_s;         // its arrival, from its level's start
  std::vector<std::int64_t> chunk_tokens;
};

struct RankResult {
  // Identity of the point and the process.
  std::string benchmark = "train";  // the workload that wrote the file: train, infer or command
  std::string config_yaml, config_hash, tag;
  // 32 hex digits drawn by rank 0 at the start and shared by every rank: the files of one run.
  std::string run_id;
  std::int64_t rank = 0, world_size = 1, local_rank = 0;
  std::string hostname;
  // Software and hardware.
  std::string device_type, device_name;  // "cpu"/"cuda"
  std::int64_t device_count = 0;
  std::string sweepbench_version, torch_version, cuda_version, nccl_version, mpi_version;
  std::int64_t threads = 0;
  // The threads the run would have had on a quiet node (threads is fewer where other processes
  // already used its CPUs as it started); 0 where not recorded (older files, bench-command).
  std::int64_t threads_planned = 0;
  std::string omp_wait_policy;  // OMP_WAIT_POLICY as the run had it; "" where unset
  std::string container_runtime, container_image, container_digest;
  std::string container_env_kept;  // globs of the variables passed in (bench-train --env-keep)
  std::string slurm_job_id, slurm_array_job_id, slurm_array_task_id, slurm_step_id;
  // The run.
  std::string start_time, end_time;  // ISO 8601, UTC
  std::string status = "running";    // ok, oom, timeout, failed
  std::string reason;                // why, when not ok
  std::string rank_status = "ok";    // what happened on this rank (a peer may have failed)
  std::int64_t parameter_count = 0;
  double flops_per_token = 0, flops_per_token_6n = 0;
  double peak_tflops = 0;          // per device; 0 = unknown (no MFU)
  std::string peak_tflops_source;  // config, table, none
  std::int64_t steps_planned = 0, warmup_steps = 0, seq_len = 0, micro_batch = 0, grad_accum = 0;
  std::string parameter_sha256;  // of every parameter's bytes at the end: equal across ranks
  std::string profile_trace;     // relative to the point directory; "" when nothing was traced
  std::int64_t zero_stage = 0;   // train.zero_stage
  // The parameters the optimizer updates (LoRA: the adapters); 0 in older files: all of them.
  std::int64_t trainable_parameters = 0;
  // launch.tensor_parallel (1 in older files), and the parameters this rank's model holds
  // (0 in older files: parameter_count).
  std::int64_t tensor_parallel = 1;
  std::int64_t offload_optimizer = 0;  // 1: train.offload_optimizer (0 in older files)
  std::int64_t rank_parameters = 0;
  // The bytes this rank holds for parameters, gradients and AdamW's moments (its flat buffers,
  // as allocated): what mem_model_states_bytes accounts for.
  std::int64_t model_state_bytes = 0;
  // The bytes this rank sent a measured step in the collectives on tensors, as a ring sends them
  // (the mean over the measured steps); -1 where not counted (older files, other programs).
  double comm_bytes_per_step = -1;
  // CPU seconds other processes ran on the run's CPUs of this rank's node while it measured, and
  // their share of those CPUs' time (0 to 1); -1 where not measured (older files, other programs).
  double cpu_others_s = -1, cpu_shared = -1;
  // The CPUs' worth other processes used on the run's CPUs of this rank's node as it started
  // (before the model was built), from which the threads were chosen; -1 where not measured.
  double cpus_busy_at_start = -1;
  std::vector<StepRecord> steps;
  EvalSummary eval;
  std::string memory_stage_source;  // cuda_device (cuda_allocator before 2026-12-01) or rss
  std::vector<StageMemory> memory_stages;
  SampleSeries samples;
  InferResult infer;      // benchmark infer only
  CommandResult command;  // benchmark command only; serve: the server as a command
  ServeResult serve;      // benchmark serve only
};

}  // namespace sweepbench
