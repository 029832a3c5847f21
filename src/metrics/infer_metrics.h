// The headline numbers of a bench-infer run, defined once (docs/metrics.md, "Inference") and
// shared by bench-infer's summary and bench-extract. Torch-free and HDF5-free.
//
// Conventions as for training (metrics/summary.h): warm-up runs never count; a run's times are
// the slowest rank's; throughput is all ranks' tokens over the slowest rank's time; percentiles
// interpolate linearly (numpy's default).
#pragma once

#include <cstdint>
#include <vector>

#include "metrics/summary.h"

namespace sweepbench {

// One generation as measured on one rank.
struct InferRunTiming {
  double ttft_s = 0;  // start to the first new token's ids on the host
  double e2e_s = 0;   // start to the last token's ids on the host
  // Decode steps 1 .. output - 1 (tokens 2 .. output), each waited for on the device; empty when
  // infer.token_metrics is off.
  std::vector<double> step_s;
};

struct InferSummaryInput {
  std::vector<InferRunTiming> runs;  // the timed runs, each the slowest rank's
  double batch = 0;                  // prompts per rank (beams not counted)
  double input_tokens = 0, output_tokens = 0;
  int world_size = 1;
  // One rank, one run (model_shapes.h inference_cost).
  double prefill_flops = 0, decode_flops = 0, decode_bytes = 0;
  double weight_bytes = 0, kv_cache_bytes = 0;
  double peak_tflops = 0;               // per device; 0 = unknown, no prefill MFU
  double peak_bandwidth_gbs = 0;        // per device; 0 = unknown, no MBU
  double memory_peak_bytes = -1;        // max over ranks
  double memory_alloc_peak_bytes = -1;  // counted tensors (StageMemory::alloc_peak), max over ranks
  double cpu_shared = -1;  // others' share of the run's CPUs (RankResult), max over ranks; -1: none
};

std::vector<Metric> summarize_infer(const InferSummaryInput& in);

// Time per output token of one run: (e2e - ttft) / (output - 1); NaN for a single output token.
double time_per_output_token(const InferRunTiming& run, double output_tokens);

// The slowest rank's timing of each run: element-wise maxima (runs and steps beyond the
// shortest rank's are left out).
std::vector<InferRunTiming> slowest_rank_runs(
    const std::vector<std::vector<InferRunTiming>>& ranks);

struct InferResult;
struct RankResult;
// One rank's timed runs (warm-up runs left out), with their decode steps from the token times.
std::vector<InferRunTiming> timed_runs(const InferResult& result);

// The summary input's shapes, FLOPs, bytes and peaks from one rank's result (rank 0's serve the
// run); the runs, the world size and the memory peak are the caller's to fill.
InferSummaryInput infer_summary_shapes(const RankResult& lead);

// The summary input of a run from all its ranks' results, as bench-infer computes it with MPI
// reductions: each run's times are the slowest rank's, shapes and FLOPs are rank 0's, the memory
// peak is the highest of any rank.
InferSummaryInput infer_summary_input_from_ranks(const std::vector<RankResult>& ranks);

}  // namespace sweepbench
