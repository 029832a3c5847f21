// The device a rank computes on (device.h): chosen, its threads set, its memory read. Built with
// c10's and ATen's own headers, not <torch/torch.h> (about 45 s a unit); the CUDA and NCCL parts
// compile only where CMake found a CUDA libtorch (SWEEPBENCH_WITH_CUDA, SWEEPBENCH_WITH_NCCL).
#include "model/device.h"

#include <ATen/Parallel.h>
#include <c10/core/Device.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "model/counting_allocator.h"
#include "os/hardware.h"
#include "os/sampler.h"
#include "text/error.h"

#ifdef SWEEPBENCH_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#ifdef SWEEPBENCH_WITH_NCCL
#include <nccl.h>
#endif
#endif

namespace sweepbench {

bool cuda_available() { return torch::cuda::is_available(); }

MemoryReading device_memory([[maybe_unused]] const c10::Device& device) {
  MemoryReading m;
#ifdef SWEEPBENCH_WITH_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    // Element 0 is StatType::AGGREGATE (all pools) in every libtorch; the enum moved from
    // c10::cuda::CUDACachingAllocator to c10::CachingAllocator in 2.x, so it is not named here.
    constexpr size_t kAll = 0;
    m.alloc_current = stats.allocated_bytes[kAll].current;
    m.alloc_peak = stats.allocated_bytes[kAll].peak;
    // What decides an out-of-memory is the device's memory, not the tensors': the allocator's
    // reserved blocks (held by no tensor between uses, 6-33% more than the allocated peak on an
    // H200, docs/performance.md 2026-11-30) and what lies outside the allocator, the CUDA context
    // and cuBLAS's and NCCL's buffers (about 0.7 GB). The latter is the device's used memory less
    // the reserve now; cudaMemGetInfo counts every process on the device, so with another one
    // there this reads high, never low.
    const std::int64_t reserved_now = stats.reserved_bytes[kAll].current;
    std::int64_t outside = 0;
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
      outside = std::max<std::int64_t>(
          0, static_cast<std::int64_t>(total_bytes - free_bytes) - reserved_now);
    }
    m.current = reserved_now + outside;
    m.peak = stats.reserved_bytes[kAll].peak + outside;
    return m;
  }
#endif
  m.current = current_rss_bytes();
  m.peak = peak_rss_bytes();
  MemoryReading counted = counted_cpu_allocations();
  m.alloc_current = counted.current;
  m.alloc_peak = counted.peak;
  return m;
}

bool count_cpu_allocations() { return CountingCpuAllocator::install() != nullptr; }

MemoryReading counted_cpu_allocations() {
  const CountingCpuAllocator* a = CountingCpuAllocator::installed();
  if (a == nullptr) return {};
  return {a->in_use(), a->peak(), a->in_use(), a->peak()};
}

void reset_counted_cpu_peak() {
  if (CountingCpuAllocator* a = CountingCpuAllocator::installed()) a->reset_peak();
}

void reset_device_peak_memory([[maybe_unused]] const c10::Device& device) {
#ifdef SWEEPBENCH_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
    return;
  }
#endif
  reset_peak_rss();
  reset_counted_cpu_peak();
}

int set_compute_threads(int threads) {
  if (threads > 0) at::set_num_threads(threads);
  return at::get_num_threads();
}

DeviceInfo select_device(const DeviceOptions& o) {
  DeviceInfo info;
  info.torch_version = TORCH_VERSION;
  info.threads = set_compute_threads(o.threads);
  bool want_cuda = o.device == Device::kCuda || (o.device == Device::kAuto && cuda_available());
  if (o.device == Device::kCuda && !cuda_available()) {
    throw Error::input(Mark{}, "launch.device",
                       "cuda was asked for, but this libtorch (" + std::string(TORCH_VERSION) +
                           ") sees no CUDA device",
                       "run on a GPU node, or set launch.device: cpu");
  }
  if (!want_cuda) {
    if (o.dtype == DType::kFp16) {
      throw Error::input(Mark{}, o.dtype_key,
                         "fp16 needs a GPU: CPU kernels for half precision are missing",
                         "use bf16 or fp32 on a CPU");
    }
    info.type = "cpu";
    info.name = cpu_model_name();
    info.count = 1;
    return info;
  }
#ifdef SWEEPBENCH_WITH_CUDA
  int count = static_cast<int>(torch::cuda::device_count());
  info.type = "cuda";
  info.count = count;
  info.index = o.local_rank % count;
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(info.index));
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, info.index);
  info.name = prop.name;
  char bus[32] = {0};
  cudaDeviceGetPCIBusId(bus, sizeof(bus), info.index);
  info.pci_bus_id = bus;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  info.cuda_version = std::to_string(runtime / 1000) + "." + std::to_string((runtime % 1000) / 10);
#ifdef SWEEPBENCH_WITH_NCCL
  int nccl = 0;
  ncclGetVersion(&nccl);
  info.nccl_version = std::to_string(nccl / 10000) + "." + std::to_string((nccl / 100) % 100) +
                      "." + std::to_string(nccl % 100);
#endif
#endif
  return info;
}

}  // namespace sweepbench
