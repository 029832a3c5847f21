// The headline numbers of a run, defined once (docs/metrics.md) and shared by bench-train's
// summary and bench-extract.
//
// Conventions: warm-up steps never count; the time of a step is the slowest rank's; throughput is
// all ranks' tokens over the sum of measured step times; percentiles interpolate linearly between
// order statistics (numpy's default).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "metrics/statistics.h"  // IWYU pragma: export (percentile, mean, stddev)

namespace sweepbench {

struct Metric {
  std::string name;  // the bench-extract column, e.g. train_tokens_per_second
  double value = 0;
  std::string unit;
};

struct SummaryInput {
  // Per measured step, each the maximum over ranks.
  std::vector<double> step_s, forward_s, backward_s, comm_s, optimizer_s, data_s;
  // All ranks. Doubles: micro batch x sequence x accumulation x ranks may come from a file, where
  // any value can be, and must not overflow.
  double tokens_per_step = 0;
  double samples_per_step = 0;
  int world_size = 1;
  double flops_per_token = 0;
  double peak_tflops = 0;  // per device; 0 = unknown, no MFU
  double train_loss = 0;   // last measured step, mean over ranks
  bool has_eval = false;
  double eval_loss = 0;
  double eval_samples = 0;              // all ranks
  double eval_seconds = 0;              // slowest rank
  double memory_peak_bytes = -1;        // max over ranks
  double memory_alloc_peak_bytes = -1;  // counted tensors (StageMemory::alloc_peak), max over ranks
  double comm_bytes_per_step = -1;      // sent by a rank a step, max over ranks; -1: not counted
  double cpu_shared = -1;  // others' share of the run's CPUs (RankResult), max over ranks; -1: none
  double parameter_count = 0;       // 0: unknown, no mem_model_states_bytes
  double trainable_parameters = 0;  // 0: all of them
  int tensor_parallel = 1;
  bool offload_optimizer = false;  // the moments are in host memory, not the device's
  double rank_parameters = 0;      // one rank's model, with tensor parallelism; 0: parameter_count
  int zero_stage = 0;
};

// Bytes per rank for parameters, gradients and AdamW's moments, as bench-train holds them (fp32
// master weights and gradients in every dtype; docs/metrics.md): for Psi trainable parameters
// 16 Psi at ZeRO stage 0, 8 Psi + 12 Psi / N at stage 1, 4 Psi + 12 Psi / N at stage 2,
// 16 Psi / N at stage 3; frozen parameters (LoRA's base weights) 4 bytes each on every rank.
double model_states_bytes(double parameters, int world_size, int zero_stage,
                          double trainable_parameters = 0, bool offload_optimizer = false);

std::vector<Metric> summarize(const SummaryInput& in);

struct RankResult;

// The fields that come from the run's description, the same in every rank's record (rank 0's
// file, or the running rank's own): sizes per step, FLOPs and peak, the model and its parallelism.
void fill_run_description(SummaryInput& in, const RankResult& lead);

// The summary input of a run from all its ranks' results, as bench-train computes it with MPI
// reductions: each measured step's time is the slowest rank's (steps beyond the shortest rank's
// count are left out), the training loss is the ranks' mean at the last measured step, eval
// samples add up and eval time is the slowest rank's, the memory peak is the highest of any rank.
SummaryInput summary_input_from_ranks(const std::vector<RankResult>& ranks);

// Beyond this share of a run's CPUs' time taken by other processes (the cpu_shared metric), the
// people's table and bench-plot mark it `shared`: its figures are the machine's business as much
// as its own.
inline constexpr double kSharedCpuThreshold = 0.10;

// Whether more of a metric is better: the one rule behind bench-compare's verdicts,
// bench-extract's --best and --pareto and bench-plot's Pareto figure (docs/metrics.md). A
// command's metric has the unit it declared (`unit`; "" when none): a rate (a unit per time:
// tokens/s, it/s, GB/s, samples/h) is better higher and a time (s, ms) or a size (bytes, GiB)
// lower, whatever the name; without a unit that says, the name decides: throughputs (_per_second,
// tps), MFU, MBU and TFLOP/s per device up, everything else (times, memory, losses, cost) down.
bool higher_is_better(const std::string& metric, const std::string& unit = "");

// The columns that may hold a metric's 95% interval, in the order to try: <metric>_ci_low and
// _ci_high (a throughput's; every metric's after bench-extract --group-repeats), then for a mean
// time <base>_mean_s the mean's <base>_ci_low_s and _ci_high_s (step_time_mean_s, ttft_mean_s).
std::vector<std::pair<std::string, std::string>> interval_columns(const std::string& metric);

}  // namespace sweepbench
