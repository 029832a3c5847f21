// Memory and CPU over time, sampled by a background thread (fms-acceleration's nvidia-smi logging
// and AMD PACE's system monitor, in-process).
//
// Device memory comes from NVML, loaded with dlopen so nothing links against the driver, for the
// GPU this rank uses (found by PCI bus id); without NVML or a GPU it is the process's resident
// set. CPU utilisation (all cores, percent) and RAM in use come from /proc. The first sample is
// taken at start() and is the baseline later tools subtract. Sampling reads a few small files per
// interval; bench/ shows its cost (docs/performance.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sweepbench {

struct ResourceSample {
  double time_s = 0;               // since start()
  std::int64_t device_bytes = -1;  // NVML used memory of this rank's GPU, or the process RSS
  std::int64_t rss_bytes = -1;     // this process's resident set
  double cpu_percent = -1;         // all cores of the node, 0-100; -1 when not sampled
  double ram_used_mb = -1;         // MemTotal - MemAvailable; -1 when not sampled
};

class ResourceSampler {
 public:
  // pci_bus_id: the GPU to watch ("0000:3b:00.0"); empty for none (device memory = RSS).
  // interval_ms 0: no periodic samples, only the first (start) and the last (stop).
  ResourceSampler(int interval_ms, const std::string& pci_bus_id, bool system);
  ~ResourceSampler();
  ResourceSampler(const ResourceSampler&) = delete;
  ResourceSampler& operator=(const ResourceSampler&) = delete;

  void start();
  void stop();
  std::vector<ResourceSample> samples() const;
  // "nvml" or "rss": where device_bytes came from.
  const std::string& device_source() const { return device_source_; }

 private:
  void run();
  ResourceSample take();

  int interval_ms_;
  bool system_;
  std::string device_source_ = "rss";
  void* nvml_lib_ = nullptr;
  void* nvml_device_ = nullptr;
  void* nvml_memory_fn_ = nullptr;
  bool stop_ = false;  // guarded by mutex_
  bool started_ = false;
  bool stopped_ = false;
  std::condition_variable wake_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<ResourceSample> samples_;
  double start_time_ = 0;
  std::uint64_t last_cpu_busy_ = 0;
  std::uint64_t last_cpu_total_ = 0;
};

// This process's resident set now, and its peak since the last reset_peak_rss() (VmHWM).
std::int64_t current_rss_bytes();
std::int64_t peak_rss_bytes();
// Resets the kernel's peak-RSS mark (Linux >= 4.0); false if it could not.
bool reset_peak_rss();

}  // namespace sweepbench
