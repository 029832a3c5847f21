#include "launch/packing.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "core/text.h"

namespace sweepbench {

std::vector<int> usable_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) out.push_back(c);
    }
  }
  if (out.empty()) out.push_back(0);
  return out;
}

std::vector<std::string> visible_gpus() {
  std::vector<std::string> out;
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible != nullptr) {
    for (const std::string& name : split_commas({std::string(visible)})) {
      // CUDA stops at the first invalid entry; -1 (or an empty value) hides every device.
      if (name.empty() || name == "-1" || name == "NoDevFiles") break;
      out.push_back(name);
    }
    return out;
  }
  if (DIR* dir = ::opendir("/proc/driver/nvidia/gpus")) {
    int n = 0;
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(dir);
    for (int i = 0; i < n; ++i) out.push_back(std::to_string(i));
  }
  return out;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  std::ostringstream out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (i > 0) out << ",";
    out << sorted[i];
    if (j > i) out << "-" << sorted[j];
    i = j + 1;
  }
  return out.str();
}

PointNeeds point_needs(const LaunchSettings& l, int jobs, int site_cpus, int site_gpus) {
  PointNeeds n;
  const int ranks = static_cast<int>(std::max<std::int64_t>(1, l.ranks));
  site_cpus = std::max(1, site_cpus);
  n.gpus = site_gpus > 0 ? static_cast<int>(std::min<std::int64_t>(
                               site_gpus, l.ranks * std::max<std::int64_t>(0, l.gpus_per_rank)))
                         : 0;
  if (l.cpus_per_rank) {
    n.cpus_per_rank = static_cast<int>(std::min<std::int64_t>(*l.cpus_per_rank, site_cpus));
  } else if (jobs != kJobsAuto) {
    n.cpus_per_rank = std::max(1, site_cpus / std::max(1, jobs) / ranks);
  } else if (n.gpus > 0) {
    n.cpus_per_rank = std::max(1, site_cpus * static_cast<int>(l.gpus_per_rank) / site_gpus);
  } else {
    n.cpus_per_rank = 1;
  }
  n.cpus = std::min(site_cpus, ranks * n.cpus_per_rank);
  n.alone = l.alone_on_its_nodes();
  return n;
}

ResourcePool::ResourcePool(std::vector<int> cpus, std::vector<std::string> gpus, int jobs)
    : cpus_(std::move(cpus)), gpus_(std::move(gpus)), cpu_busy_(cpus_.size(), false),
      gpu_busy_(gpus_.size(), false), jobs_(jobs) {}

std::optional<Placement> ResourcePool::take(const PointNeeds& needs) {
  Placement p;
  if (needs.alone || running_ == 0) {
    if (running_ > 0) return std::nullopt;
  } else if (alone_running_ || (jobs_ != kJobsAuto && running_ >= jobs_)) {
    return std::nullopt;
  }
  int want_cpus = needs.alone ? static_cast<int>(cpus_.size())
                              : std::min<int>(needs.cpus, static_cast<int>(cpus_.size()));
  int want_gpus = needs.alone ? static_cast<int>(gpus_.size())
                              : std::min<int>(needs.gpus, static_cast<int>(gpus_.size()));
  int free_cpus = static_cast<int>(std::count(cpu_busy_.begin(), cpu_busy_.end(), false));
  int free_gpus = static_cast<int>(std::count(gpu_busy_.begin(), gpu_busy_.end(), false));
  if (free_cpus < want_cpus || free_gpus < want_gpus) return std::nullopt;
  for (size_t i = 0; i < cpus_.size() && static_cast<int>(p.cpus.size()) < want_cpus; ++i) {
    if (!cpu_busy_[i]) {
      cpu_busy_[i] = true;
      p.cpus.push_back(cpus_[i]);
    }
  }
  for (size_t i = 0; i < gpus_.size() && static_cast<int>(p.gpus.size()) < want_gpus; ++i) {
    if (!gpu_busy_[i]) {
      gpu_busy_[i] = true;
      p.gpus.push_back(gpus_[i]);
    }
  }
  p.alone = needs.alone;
  alone_running_ = needs.alone;
  ++running_;
  return p;
}

void ResourcePool::give_back(const Placement& placement) {
  for (int c : placement.cpus) {
    for (size_t i = 0; i < cpus_.size(); ++i) {
      if (cpus_[i] == c) cpu_busy_[i] = false;
    }
  }
  for (const std::string& g : placement.gpus) {
    for (size_t i = 0; i < gpus_.size(); ++i) {
      if (gpus_[i] == g) gpu_busy_[i] = false;
    }
  }
  if (placement.alone) alone_running_ = false;
  running_ = std::max(0, running_ - 1);
}

}  // namespace sweepbench
