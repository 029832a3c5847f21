// How a phase of a run ended, and what the device's memory read: the types the trainer
// (train/trainer.h), the generator (infer/generator.h), the device (device.h) and the libtorch
// helpers (torch_support.h) share, so that none includes another's header. No torch types.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace sweepbench {

// Out of memory is its own outcome: the runner prunes larger points after it (docs/running.md).
enum class Outcome { kOk, kOom, kFailed };

struct PhaseStatus {
  Outcome outcome = Outcome::kOk;
  std::string reason;
};

// A parameter copied to the host as fp32, for checks (and later checkpoints).
struct NamedArray {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

struct MemoryReading {
  // What decides an OOM: the device's memory this process holds (cuda: the caching allocator's
  // reserve and what lies outside it) or the resident set (cpu).
  std::int64_t current = -1;
  std::int64_t peak = -1;     // the largest since reset_peak_memory()
  // Bytes of live tensors: the CUDA caching allocator's allocated bytes, or on a CPU those
  // libtorch's CPU allocator handed out, counted once count_cpu_allocations() ran; -1 if not.
  std::int64_t alloc_current = -1;
  std::int64_t alloc_peak = -1;
};

// Building the model failed (typically out of memory on the device): the trainer's
// (make_trainer) and the generator's (make_generator).
class ModelInitError : public std::runtime_error {
 public:
  ModelInitError(Outcome outcome, const std::string& reason)
      : std::runtime_error(reason), outcome_(outcome) {}
  Outcome outcome() const { return outcome_; }

 private:
  Outcome outcome_;
};

}  // namespace sweepbench
