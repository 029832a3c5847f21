// The device a rank computes on, chosen and read: which one (select_device), libtorch's compute
// threads, and its memory (on a GPU the device's and the caching allocator's allocated bytes, on
// a CPU the resident set and the counted CPU allocator's). What bench-train's trainer and
// bench-infer's generator both need before and around their models; device.cc implements it without
// <torch/torch.h>.
#pragma once

#include <cstdint>
#include <string>

#include "config/settings.h"
#include "model/outcome.h"

namespace c10 {
struct Device;
}  // namespace c10

namespace sweepbench {

// What select_device reads: the trainer's options (trainer.h) and the generator's (generator.h)
// each give these.
struct DeviceOptions {
  Device device = Device::kAuto;
  int local_rank = 0;
  int threads = 0;  // 0: leave libtorch's default
  DType dtype = DType::kFp32;
  // The key the dtype came from, for errors: train.dtype, or bench-infer's infer.dtype.
  const char* dtype_key = "train.dtype";
};

struct DeviceInfo {
  std::string type;        // cpu | cuda
  std::string name;        // "NVIDIA H100 80GB HBM3", or the CPU model
  std::string pci_bus_id;  // cuda: "0000:3b:00.0"; empty on cpu
  std::int64_t count = 0;  // GPUs visible to this process; 1 on cpu
  int index = -1;          // the GPU this rank uses
  std::string torch_version, cuda_version, nccl_version;
  int threads = 0;  // libtorch's intra-op threads
};

// Picks this rank's device (the GPU local_rank % count, or the CPU) and makes it current, without
// building anything. Throws sweepbench::Error for a device that cannot be used (cuda asked for and
// none visible, fp16 on a CPU).
DeviceInfo select_device(const DeviceOptions& options);

// Sets libtorch's intra-op threads to `threads` (> 0) and returns how many it now runs.
int set_compute_threads(int threads);

// Whether a CUDA device is visible to this build of libtorch (false on CPU-only builds).
bool cuda_available();

// Counts the bytes libtorch's CPU allocator hands out from now on (a wrapper installed as the CPU
// allocator; tensors made before are not counted). Returns false if libtorch kept another
// allocator. Idempotent; for CPU runs, before the model is built.
bool count_cpu_allocations();
// The counted bytes now and their peak since the last reset (-1, -1 if not counting).
MemoryReading counted_cpu_allocations();
void reset_counted_cpu_peak();

// What decides an OOM, now and its peak, with the tensors' bytes (alloc_*): on a GPU the
// allocator's reserved bytes and what lies outside it, on a CPU the resident set.
MemoryReading device_memory(const c10::Device& device);
void reset_device_peak_memory(const c10::Device& device);

}  // namespace sweepbench
