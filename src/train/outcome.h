// How a phase of a run ended, and what the device's memory read: the types the trainer
// (trainer.h) and the libtorch helpers both sides share (torch_support.h) hold, so that neither
// includes the other's header. No torch types.
#pragma once

#include <cstdint>
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
  std::int64_t current = -1;  // bytes allocated now (cuda) or resident (cpu)
  std::int64_t peak = -1;     // the largest since reset_peak_memory()
  // Bytes of live tensors: the CUDA caching allocator's (as current and peak), or on a CPU those
  // libtorch's CPU allocator handed out, counted once count_cpu_allocations() ran; -1 if not.
  std::int64_t alloc_current = -1;
  std::int64_t alloc_peak = -1;
};

}  // namespace sweepbench
