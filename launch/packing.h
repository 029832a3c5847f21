// Points side by side on one machine (bench-sweep run --jobs, docs/running.md "Several points at
// once"): what a point needs of the machine, and the pool of CPUs and GPUs that running points
// hold disjoint shares of.
//
// Locally each point gets CPUs of its own (its affinity) and GPUs of its own
// (CUDA_VISIBLE_DEVICES); a point that must be alone on its nodes (launch.exclusive) waits until
// nothing runs and holds the whole machine. Points start in plan order: one that does not fit
// waits for running points to end, and the points after it wait with it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/settings.h"

namespace sweepbench {

// The CPUs this process may run on (its affinity), in order.
std::vector<int> usable_cpus();
// The GPUs this process sees, as CUDA_VISIBLE_DEVICES names them: its entries when it is set
// (none when it is empty or -1), else one a device in /proc/driver/nvidia/gpus ("0", "1", ...).
std::vector<std::string> visible_gpus();

// "0-3,6": CPUs as taskset and cpusets write them.
std::string cpu_list_text(const std::vector<int>& cpus);

// --jobs: a number of points at most (1: one after another, as without it), or auto (0): as
// many as the machine's CPUs and GPUs hold.
constexpr int kJobsAuto = 0;

struct PointNeeds {
  int cpus = 1;          // of this machine, for all its ranks
  int cpus_per_rank = 1;
  int gpus = 0;
  bool alone = false;    // launch.exclusive: nothing else runs meanwhile
};

// What a point with launch settings `l` needs, on a machine of `site_cpus` CPUs and `site_gpus`
// GPUs, at --jobs `jobs`. Per rank: launch.cpus_per_rank when set; else the machine's CPUs
// shared equally by `jobs` points (--jobs N), or one CPU (--jobs auto; a GPU point: the CPUs of
// its share of the GPUs). GPUs: launch.ranks x launch.gpus_per_rank. Never more than the machine
// has: such a point takes all of it.
PointNeeds point_needs(const LaunchSettings& l, int jobs, int site_cpus, int site_gpus);

// The CPUs and GPUs a running point holds.
struct Placement {
  std::vector<int> cpus;
  std::vector<std::string> gpus;
  bool alone = false;
};

class ResourcePool {
 public:
  ResourcePool(std::vector<int> cpus, std::vector<std::string> gpus, int jobs);

  // A placement for `needs`, or nullopt when it does not fit beside the running points now.
  // With nothing running every point fits.
  std::optional<Placement> take(const PointNeeds& needs);
  void give_back(const Placement& placement);
  int running() const { return running_; }
  int cpu_count() const { return static_cast<int>(cpus_.size()); }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }

 private:
  std::vector<int> cpus_;
  std::vector<std::string> gpus_;
  std::vector<bool> cpu_busy_, gpu_busy_;
  int jobs_;
  int running_ = 0;
  bool alone_running_ = false;
};

}  // namespace sweepbench
