// What a point will hold in memory, per rank, before it runs (docs/metrics.md, "Predicted
// memory"): the model's states, the weight copies of mixed precision, the activations kept for
// the backward pass, the head's logits and loss, for bench-train; the weights, the KV cache and a
// forward pass's transients for bench-infer. Each term is an exact count of the tensors
// bench-train keeps (bytes per element times elements) where the implementation fixes them, and
// a count measured on the counted allocator (mem_alloc_peak_bytes) where libtorch's kernels
// decide; the terms are in docs/metrics.md, their accuracy in docs/performance.md.
//
// Torch-free: bench-sweep plan --estimate and the sweep's memory_limit call it from a point's
// config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/model_shapes.h"
#include "config/value.h"

namespace sweepbench {

struct TrainingMemoryInput {
  ModelShape shape;
  std::int64_t micro_batch = 1, seq_len = 1;
  int element_bytes = 4;  // the autocast dtype: fp32 4, bf16 and fp16 2
  bool gpu = false;       // a GPU pads the head to 64 rows and casts as CUDA autocast does
  bool activation_checkpointing = false;
  bool fused_loss = false;
  std::int64_t loss_chunk_rows = 0;  // 0: bench-train's default
  int world_size = 1, zero_stage = 0, tensor_parallel = 1;
  double bucket_mb = 25.0;  // train.bucket_mb: ZeRO-2's gradient buckets
  bool offload_optimizer = false;
  bool lora = false;
  std::int64_t lora_r = 8;
  std::vector<std::string> lora_targets;
};

struct MemoryTerm {
  std::string name;  // model_states, buckets, weight_copies, activations, head, gradients, ...
  double bytes = 0;
};

struct MemoryPrediction {
  double peak = 0;                // per rank: the larger of the two below
  double init_peak = 0;           // building the model
  double step_peak = 0;           // a training step (or a generation)
  std::vector<MemoryTerm> terms;  // step_peak's parts, in order
  // What the process holds where an OOM is decided, per rank: on a CPU the resident set
  // (resident_bytes_of(peak)), what the kernel's OOM killer and the node's memory see; on a GPU
  // the device memory (device_bytes_of(peak)): the caching allocator's reserved peak and what
  // lies outside it, the CUDA context and the libraries' handles. 0 for a command predicted as
  // a workload. Measured as mem_peak_bytes (docs/results-format.md, "/memory").
  double resident = 0;
  bool gpu = false;  // the point runs on GPUs: `resident` is the device memory

  // The figure that decides whether the point fits, per rank, and its name (what memory_limit
  // compares and says): the resident set on a CPU, the device memory on a GPU; the allocated
  // peak where neither is predicted (docs/metrics.md, "Predicted memory").
  double deciding_bytes() const { return resident > 0 ? resident : peak; }
  const char* deciding_name() const {
    return resident > 0 ? (gpu ? "device memory" : "resident set") : "allocated peak";
  }
};

// A CPU rank's resident set from its counted peak of libtorch's allocations (docs/metrics.md,
// "The resident set"): libtorch's, its libraries' and MPI's own memory, about fixed, and the
// allocator's slack on what the tensors took. A least-squares line over 65 one-rank CPU points
// (bench/results/rss_vs_alloc.json), checked on multi-rank sweeps it was not fitted to
// (docs/performance.md).
inline constexpr double kResidentBaseBytes = 159.0e6;
inline constexpr double kResidentPerCountedByte = 1.39;
inline double resident_bytes_of(double counted_peak) {
  return kResidentBaseBytes + kResidentPerCountedByte * counted_peak;
}

// A GPU rank's device memory from its allocated peak (docs/metrics.md, "The device's memory"): the
// CUDA context and the libraries' handles outside PyTorch's allocator, about fixed (0.7 GB on an
// H200 with torch 2.11, from the out-of-memory message's own accounting), and the caching
// allocator's reserved blocks that no tensor holds at the peak, in proportion. The proportion is
// a least-squares fit through that fixed part over 5 GPT-2 124M trainings at micro batch 8 (the
// loss whole and in chunks of 333 to 8192 rows), checked on 7 it was not fitted to (micro batches
// 16 to 64, checkpointing, fp32): -11.7% to +11.2% (docs/performance.md, 2026-12-01).
inline constexpr double kDeviceBaseBytes = 0.75e9;
inline constexpr double kDevicePerAllocatedByte = 1.15;
inline double device_bytes_of(double allocated_peak) {
  return kDeviceBaseBytes + kDevicePerAllocatedByte * allocated_peak;
}

MemoryPrediction predict_training_memory(const TrainingMemoryInput& in);

// The counted peak a CPU training rank's resident set follows (resident_bytes_of): its own
// `peak`, or with checkpointing or ZeRO-1/2 that peak plus kResidentKeptShare of what they save:
// of the gap to the peak of the same point without checkpointing and at ZeRO-0. The heap keeps
// much of what the counted tensors no longer need. A least-squares fit over the 40 runs of
// bench/memory_ckpt.yaml that either applies to (2 and 4 ranks; bench/resident_kept_share.py)
// gave 0.46; checked on bench/memory_zero.yaml and memory_tp.yaml (docs/performance.md, "The
// resident set against the counted allocations").
inline constexpr double kResidentKeptShare = 0.5;
double resident_basis_of(const TrainingMemoryInput& in, double peak);

struct InferenceMemoryInput {
  ModelShape shape;
  std::int64_t sequences = 1;  // batch x beams
  std::int64_t input_tokens = 1, output_tokens = 1;
  int element_bytes = 4;
  bool gpu = false;
  bool kv_cache = true;  // false: kv_cache none
};

MemoryPrediction predict_inference_memory(const InferenceMemoryInput& in);

// The prediction for a resolved point config (bench-train or bench-infer); `gpu` when the point
// runs on GPUs (launch.device cuda, or auto with launch.gpus_per_rank > 0). Nothing for other
// benchmarks.
bool point_runs_on_gpu(const Value& resolved);
// The benchmark a point is predicted as: its own, or a command point's command.predict_as
// (train, infer; "" for none), whose model.*, train.*, data.* and infer.* keys then describe
// what its program runs.
std::string predicted_benchmark(const Value& resolved);
bool predict_point_memory(const Value& resolved, MemoryPrediction* out);

}  // namespace sweepbench
