#include "os/sampler.h"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "os/cpu_share.h"

namespace sweepbench {
namespace {

// The few NVML declarations we use (nvml.h is not needed: the ABI is stable and documented).
using NvmlReturn = int;
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using NvmlInitFn = NvmlReturn (*)();
using NvmlShutdownFn = NvmlReturn (*)();
using NvmlByPciFn = NvmlReturn (*)(const char*, void**);
using NvmlMemoryFn = NvmlReturn (*)(void*, NvmlMemory*);

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::int64_t status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  size_t n = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
      return std::atoll(line.c_str() + n + 1);
    }
  }
  return -1;
}

// Busy and total jiffies of all CPUs, from the first line of /proc/stat.
bool cpu_times(std::uint64_t* busy, std::uint64_t* total) {
  std::ifstream in("/proc/stat");
  std::string line;
  std::optional<CpuJiffies> all;
  if (!std::getline(in, line) || !(all = parse_cpu_line(line)) || all->id != -1) return false;
  *busy = all->busy;
  *total = all->total;
  return true;
}

double ram_used_mb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t value = 0;
  std::string unit;
  std::int64_t total = -1, available = -1;
  while (in >> key >> value >> unit) {
    if (key == "MemTotal:") total = value;
    if (key == "MemAvailable:") available = value;
  }
  if (total < 0 || available < 0) return -1;
  return static_cast<double>(total - available) / 1024.0;
}

}  // namespace

std::int64_t current_rss_bytes() {
  std::int64_t kb = status_kb("VmRSS");
  return kb < 0 ? -1 : kb * 1024;
}

std::int64_t peak_rss_bytes() {
  std::int64_t kb = status_kb("VmHWM");
  return kb < 0 ? -1 : kb * 1024;
}

bool reset_peak_rss() {
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

ResourceSampler::ResourceSampler(int interval_ms, const std::string& pci_bus_id, bool system)
    : interval_ms_(interval_ms), system_(system) {
  if (pci_bus_id.empty()) return;
  nvml_lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml_lib_ == nullptr) return;
  auto init = reinterpret_cast<NvmlInitFn>(::dlsym(nvml_lib_, "nvmlInit_v2"));
  auto by_pci =
      reinterpret_cast<NvmlByPciFn>(::dlsym(nvml_lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
  nvml_memory_fn_ = ::dlsym(nvml_lib_, "nvmlDeviceGetMemoryInfo");
  if (init == nullptr || by_pci == nullptr || nvml_memory_fn_ == nullptr || init() != 0 ||
      by_pci(pci_bus_id.c_str(), &nvml_device_) != 0) {
    nvml_device_ = nullptr;
    return;
  }
  device_source_ = "nvml";
}

ResourceSampler::~ResourceSampler() {
  stop();
  if (nvml_lib_ != nullptr) {
    if (nvml_device_ != nullptr) {
      if (auto shutdown = reinterpret_cast<NvmlShutdownFn>(::dlsym(nvml_lib_, "nvmlShutdown"))) {
        shutdown();
      }
    }
    ::dlclose(nvml_lib_);
  }
}

ResourceSample ResourceSampler::take() {
  ResourceSample s;
  s.time_s = now_s() - start_time_;
  s.rss_bytes = current_rss_bytes();
  s.device_bytes = s.rss_bytes;
  if (nvml_device_ != nullptr) {
    NvmlMemory mem{};
    if (reinterpret_cast<NvmlMemoryFn>(nvml_memory_fn_)(nvml_device_, &mem) == 0) {
      s.device_bytes = static_cast<std::int64_t>(mem.used);
    }
  }
  if (system_) {
    std::uint64_t busy = 0, total = 0;
    if (cpu_times(&busy, &total)) {
      if (total > last_cpu_total_ && last_cpu_total_ != 0) {
        s.cpu_percent = 100.0 * static_cast<double>(busy - last_cpu_busy_) /
                        static_cast<double>(total - last_cpu_total_);
      }
      last_cpu_busy_ = busy;
      last_cpu_total_ = total;
    }
    s.ram_used_mb = ram_used_mb();
  }
  return s;
}

void ResourceSampler::start() {
  started_ = true;
  start_time_ = now_s();
  std::lock_guard<std::mutex> lock(mutex_);
  samples_.push_back(take());  // the baseline
  stop_ = false;
  if (interval_ms_ > 0) thread_ = std::thread([this] { run(); });
}

void ResourceSampler::run() {
  using namespace std::chrono;
  auto next = steady_clock::now() + milliseconds(interval_ms_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_until(lock, next, [this] { return stop_; })) {
    lock.unlock();
    ResourceSample s = take();  // reading /proc and NVML happens outside the lock
    lock.lock();
    samples_.push_back(s);
    next += milliseconds(interval_ms_);
  }
}

void ResourceSampler::stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  ResourceSample last = take();  // the final state
  std::lock_guard<std::mutex> lock(mutex_);
  samples_.push_back(last);
}

std::vector<ResourceSample> ResourceSampler::samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}

}  // namespace sweepbench
