// The training step behind a torch-free interface.
//
// bench_train.cc (orchestration, timing of the whole step, results) sees only this header;
// trainer.cc implements it with libtorch. A step is three calls so that every rank can agree on
// failures between them (see bench_train.cc): forward_backward (may fail with out-of-memory on
// one rank), update (gradient all-reduce and optimizer: collective), finish_step (waits for the
// device, returns the step's timings). No call throws for a failure during training; failures
// come back as an Outcome.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/model_shapes.h"
#include "config/settings.h"
#include "model/device.h"
#include "model/outcome.h"
#include "run/collectives.h"
#include "run/data.h"

namespace sweepbench {

// What make_trainer builds: the train section as the config gives it (config/settings.h, defaults
// from the schema), the model's shape, and where this rank runs.
struct TrainerOptions {
  TrainSettings train = Settings::defaults().train;
  ModelShape shape;
  std::string preset;
  std::int64_t seq_len = 0;
  // The key train.dtype came from, for errors: bench-infer's is infer.dtype.
  const char* dtype_key = "train.dtype";
  Device device = Device::kAuto;
  int local_rank = 0;
  int threads = 0;  // 0: leave libtorch's default
  // launch.tensor_parallel: blocks split over groups of this many consecutive ranks.
  std::int64_t tensor_parallel = 1;
  // CPU only: fail libtorch allocations past this many bytes in use, as a full GPU would
  // (bench-train --max-memory-mb; for testing out-of-memory handling). 0: no budget.
  std::int64_t cpu_memory_budget = 0;

  size_t bucket_bytes() const { return static_cast<size_t>(train.bucket_mb * 1024 * 1024); }
  DeviceOptions device_options() const {
    return {device, local_rank, threads, train.dtype, dtype_key};
  }
};

// What metrics.profile_activities asks the profiler to record.
struct ProfileActivities {
  bool cpu = true;    // libtorch's ops on the host and our phase ranges
  bool cuda = false;  // kernels, copies and memsets on the GPU (Kineto with CUPTI)
};

struct StepTiming {
  double forward_s = 0, backward_s = 0, comm_s = 0, optimizer_s = 0;
  // Sent by this rank in the step's collectives on tensors (gradients, parameters, tensor
  // parallelism's activations), as a ring sends them (device_comm.h).
  double comm_bytes = 0;
  double loss = 0;       // mean over the micro batches
  double grad_norm = 0;  // global, after the all-reduce, before clipping
  double loss_scale = 1;
  bool skipped = false;  // fp16 overflow: no update this step
};

struct EvalOutput {
  PhaseStatus status;
  double loss = 0;
};

class Trainer {
 public:
  virtual ~Trainer() = default;
  virtual const DeviceInfo& device() const = 0;
  virtual std::int64_t parameter_count() const = 0;
  // The parameters this rank's model holds: parameter_count() but with tensor parallelism.
  virtual std::int64_t rank_parameter_count() const = 0;
  // The parameters the optimizer updates: all of them, or LoRA's adapters.
  virtual std::int64_t trainable_parameter_count() const = 0;
  // Bytes this rank holds for parameters (frozen ones too), gradients and AdamW's moments.
  virtual std::int64_t model_state_bytes() const = 0;
  // Forward and backward over one step's micro batches (gradient accumulation).
  virtual PhaseStatus forward_backward(const std::vector<Batch>& micro_batches) = 0;
  // Averages gradients over the ranks, clips, and steps AdamW at learning rate `lr`.
  virtual PhaseStatus update(double lr) = 0;
  // Waits for the device and returns the step's timings and scalars.
  virtual StepTiming finish_step() = 0;
  virtual EvalOutput evaluate(const Batch& batch) = 0;
  virtual std::string memory_source() const = 0;  // cuda_device | rss
  virtual MemoryReading memory() = 0;
  virtual void reset_peak_memory() = 0;
  // SHA-256 over every parameter's name and bytes: equal on all ranks after a correct run.
  virtual std::string parameter_sha256() = 0;
  // Every parameter, in registration order, copied to the host.
  virtual std::vector<NamedArray> parameter_values() = 0;
  // libtorch's profiler around the steps between the two calls: every op (cpu) and every GPU
  // kernel and copy (cuda), and the phases (forward, backward, comm, optimizer) as named ranges.
  // stop writes the Chrome trace (JSON, Kineto's layout) to `path`: Kineto's own where libtorch
  // has it, else ours from the recorded op events. Throws Error(kIo) when it cannot. An empty
  // path stops the profiler, if it runs, and keeps nothing.
  virtual void start_profile(const ProfileActivities& activities) = 0;
  virtual void stop_profile(const std::string& path) = 0;
};

// Builds the model on the selected device, identical on every rank. Throws ModelInitError when
// that fails (out of memory, a libtorch error).
std::unique_ptr<Trainer> make_trainer(const TrainerOptions& options, Collectives& comm);

}  // namespace sweepbench
