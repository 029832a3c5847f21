// What a point will take, before it runs (docs/metrics.md, "Predicted time and cost"): a
// training step's time from its FLOPs over the device's rate, the optimizer's bytes, a fixed
// cost a layer (on a GPU the kernels' launches, overlapping the GPU's work), and the
// communication its ZeRO stage and tensor parallelism make over a link; a generation's time
// from its prefill FLOPs and, each decode step, the larger of its FLOPs and the bytes it reads
// (on a GPU besides its launches, or its CUDA graph's kernels); from these tokens/s, the point's
// seconds, device-hours and cost.
//
// The rates: on a GPU, the table's peak (os/hardware.h, by hardware.name, else an H100's) at an
// assumed MFU (hardware.assumed_mfu, else the MFU sweepbench measured, by dtype and width); on a
// CPU, the rate a core sustained on sweepbench's reference CPU (TimeConstants, measured by
// bench/time_grid.py), or hardware.peak_tflops x hardware.assumed_mfu when both are set. A
// calibration (the measured points of the same model, TimeCalibration: one is enough) scales a
// prediction to what ran.
//
// Torch-free: bench-sweep plan --estimate, run and submit call it from a point's config, and
// bench-extract beside what ran.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/model_shapes.h"
#include "config/value.h"

namespace sweepbench {

// The GPU a point on GPUs without hardware.name is predicted on (said in TimePrediction).
inline constexpr const char* kAssumedGpu = "H100";

// The constants behind a prediction, measured (docs/performance.md, "The time prediction").
struct TimeConstants {
  // A GPU's FLOPs run at this fraction of the dtype's dense peak: bf16 and fp16 on the tensor
  // cores, fp32 without TF32 (libtorch's default) on the fp32 peak. In bf16 and fp16 a model of
  // width 768 or less reaches gpu_mfu, one of gpu_mfu_wide_width or more gpu_mfu_wide (its
  // matrix products are larger), linearly between. Fitted to sweepbench's bench-train on an H200
  // (bench/gpu/memory.yaml and time_check.yaml, docs/performance.md: GPT-2 124M 26-27%, GPT-2
  // 355M and 774M and TinyLlama's width 2048 30-34%).
  double gpu_mfu = 0.26, gpu_mfu_narrow_width = 768;
  double gpu_mfu_wide = 0.33, gpu_mfu_wide_width = 1024;
  double gpu_mfu_fp32 = 0.58;
  // Eager libtorch launches each kernel from the CPU: a decode step costs at least this many
  // seconds a layer (bench-infer on the H200 without CUDA graphs, static cache, two sessions:
  // GPT-2 124M 2.2 to 3.2 ms a step over 12 layers, TinyLlama's 22 layers 8.0 to 11.6 ms), and
  // a training micro step gpu_train_layer_s a layer (GPT-2 124M's smallest steps; Llama's are
  // not measured). A training step is then the smooth maximum sqrt(work^2 + launches^2) of the
  // GPU's work and the CPU's launching (the two overlap, but neither hides the other where they
  // are close).
  double gpu_decode_layer_gpt2_s = 0.235e-3, gpu_decode_layer_llama_s = 0.43e-3;
  double gpu_train_layer_s = 1.5e-3;
  // A decode step replayed as a CUDA graph (infer.cuda_graph, where eligible) launches nothing
  // but the graph: what is left a layer is its small kernels' own run time, before and besides
  // the weights' and the cache's bytes (bench-infer on the H200: GPT-2 124M 0.97 to 1.09 ms a
  // step, TinyLlama 3.0 to 3.5 ms, batch 1 and 16).
  double gpu_graph_layer_gpt2_s = 0.079e-3, gpu_graph_layer_llama_s = 0.12e-3;
  double gpu_bandwidth_share = 0.8;  // of the peak, for AdamW's and decode's bytes
  // train.fused_loss on a GPU: its chunks' fp32 logits, softmax, gradient and the head
  // gradient's sum move about this many bytes a logit (tokens x vocabulary); 1.07 us a token
  // for GPT-2 on the H200, at every micro batch from 8 to 64.
  double gpu_fused_loss_bytes_per_logit = 82.0;
  // train.offload_optimizer on a GPU: each updated value's gradient goes to the host, AdamW runs
  // there, the value comes back; this many seconds a value (78 ms for GPT-2 124M's 124 M on the
  // H200's node, one measurement: the PCIe copies and the host's AdamW over its cores).
  double gpu_offload_s_per_value = 0.63e-9;
  // A GPU point's start-up: CUDA's context and libraries, building and placing the model, the
  // first step's tuning, a graph's capture: a fixed part and a part a parameter (bench-train on
  // the H200 5.5 to 8.2 s for GPT-2 124M, 12.5 s for TinyLlama 1.1B; bench-infer 2.6 to 3.1 s
  // and 14.3 s).
  double gpu_startup_train_s = 5.7, gpu_startup_train_per_value_s = 6.1e-9;
  double gpu_startup_infer_s = 1.3, gpu_startup_infer_per_value_s = 11.8e-9;
  // Links: NVLink within a node (per GPU, one direction) by the table, between nodes this.
  double inter_node_link_gbs = 50.0;  // 400 Gb/s a GPU (InfiniBand NDR)
  // The reference CPU (AMD EPYC 9454, two cores): what a core sustains.
  double cpu_gflops_fp32 = 73.0, cpu_gflops_bf16 = 125.0;  // matrix FLOPs a core a second
  double cpu_bandwidth_gbs = 35.0;                         // the optimizer's and decode's bytes
  double cpu_layer_s = 1.3e-3;          // dispatch a layer a pass (forward, backward) a micro step
  double cpu_decode_layer_s = 0.45e-3;  // dispatch a layer a generation step (prefill, decode)
  double cpu_link_gbs = 2.0;            // ranks on one node through shared memory (MPI)
  // A CPU point's start-up: the runner, the process, building the model (1.2 s a point of one
  // rank on the reference CPU, 1.9 s with mpirun's two).
  double cpu_startup_s = 1.2, cpu_startup_mpi_s = 0.7;
};
const TimeConstants& time_constants();

struct TimeInput {
  std::string benchmark;  // "train" or "infer"
  ModelShape shape;
  std::string dtype = "fp32";
  bool gpu = false;
  std::string hardware_name;  // for the tables
  std::optional<double> peak_tflops, assumed_mfu, bandwidth_gbs, link_gbs, price_per_hour;
  double cores_per_rank = 1;  // a CPU rank's cores
  int ranks = 1, nodes = 1, devices_per_rank = 1;
  // train
  std::int64_t micro_batch = 1, seq_len = 1, grad_accum = 1, steps = 1, eval_steps = 0,
               eval_micro_batch = 1;
  bool activation_checkpointing = false, overlap_comm = false, grad_clip = true, fused_loss = false;
  bool offload_optimizer = false;
  int zero_stage = 0, tensor_parallel = 1;
  bool lora = false;
  std::int64_t lora_r = 8;
  std::vector<std::string> lora_targets;
  // infer
  std::int64_t sequences = 1, input_tokens = 1, output_tokens = 1, generations = 1;
  bool kv_cache = true;
  bool decode_graph = false;  // each decode step one CUDA graph (bench-infer's eligible points)
  // metrics.target_ci: steps (generations) is then the least; the run goes on to at least
  // kFewestToStop measured steps (kFewestRunsToStop timed runs) unless max_seconds of them are
  // spent first. `warmup` is the warm-up steps (runs) within steps (generations).
  bool until_precise = false;
  std::int64_t warmup = 0;
  double max_seconds = 60;
};

struct TimePrediction {
  bool known = false;
  std::string missing;  // why not known: what to set
  // One optimizer step (train) or one generation (infer), and its parts.
  double step_s = 0;
  double compute_s = 0, optimizer_s = 0, overhead_s = 0, comm_s = 0;  // comm: the exposed part
  double flops = 0;              // per rank, a step (recomputation included)
  double comm_bytes = 0;         // sent per rank, a step
  double tokens_per_second = 0;  // train: tokens trained, all ranks; infer: tokens generated
  double run_s = 0;              // start-up, every step (warm-up and eval included) or generation
  double startup_s = 0;          // of run_s: the process's start-up, measured (not scaled)
  double devices = 1;
  double device_hours = 0;
  std::optional<double> cost_usd;  // with hardware.price_per_hour
  std::string rate;                // where the rate came from, for people
  bool assumed_gpu = false;        // on GPUs without hardware.name: kAssumedGpu's tables
  double calibration = 1;          // the factor applied (1: none)
};

TimePrediction predict_time(const TimeInput& in);

// The input for a resolved point (bench-train or bench-infer); false for other benchmarks.
bool time_input_of(const Value& resolved, TimeInput* out);
bool predict_point_time(const Value& resolved, TimePrediction* out);

// Which measured point may calibrate which: the benchmark, the model's shape, the dtype, the
// device (GPU by hardware.name, or CPU) and, on a CPU, the cores a rank has; a generation whose
// decode steps are CUDA graphs is a model of its own. Two points with the same key differ only
// in what the model computes per step (batch, sequence, checkpointing, LoRA, ZeRO, ranks,
// generation lengths).
std::string time_model_key(const Value& resolved);

// Measured over predicted step time by key: the median of the ratios of the points given (one
// measured point is enough; more make it robust to a measurement the machine disturbed).
class TimeCalibration {
 public:
  // `measured_step_s`: a training step's median (step_time_median_s) or a generation's
  // (e2e_p50_s).
  // False (and ignored) when the point has no prediction or the measurement is not positive.
  bool add(const Value& resolved, double measured_step_s);
  // Scales `p` (a prediction of `resolved`) by its key's factor, if any.
  void apply(const Value& resolved, TimePrediction* p) const;
  size_t size() const { return ratios_.size(); }  // models calibrated

 private:
  std::map<std::string, std::vector<double>> ratios_;
  mutable std::map<std::string, double> medians_;  // of ratios_, made by the first apply()
};

// Scales every time of a prediction but the start-up by `factor` (tokens/s by its inverse).
void scale_prediction(TimePrediction* p, double factor);

}  // namespace sweepbench
