#include "launch/packing.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "text/text.h"

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

std::vector<int> parse_slurm_cpus_per_node(const std::string& text, size_t nodes) {
  std::vector<int> out;
  for (const std::string& part : split_commas({text})) {
    // "4" or "4(x2)".
    char* end = nullptr;
    long cpus = std::strtol(part.c_str(), &end, 10);
    if (end == part.c_str() || cpus <= 0) return {};
    long times = 1;
    if (*end == '(') {
      if (end[1] != 'x') return {};
      char* close = nullptr;
      times = std::strtol(end + 2, &close, 10);
      if (close == end + 2 || *close != ')' || close[1] != '\0' || times <= 0) return {};
    } else if (*end != '\0') {
      return {};
    }
    for (long i = 0; i < times && out.size() <= nodes; ++i) out.push_back(static_cast<int>(cpus));
  }
  if (out.size() != nodes) return {};
  return out;
}

PointNeeds point_needs(const LaunchSettings& l, int jobs, int pool_nodes, int node_cpus,
                       int node_gpus) {
  PointNeeds n;
  pool_nodes = std::max(1, pool_nodes);
  node_cpus = std::max(1, node_cpus);
  n.nodes = static_cast<int>(std::clamp<std::int64_t>(l.nodes, 1, pool_nodes));
  const int ranks = static_cast<int>(std::max<std::int64_t>(1, l.ranks));
  const int ranks_per_node = (ranks + n.nodes - 1) / n.nodes;
  const int gpus_per_rank = static_cast<int>(std::max<std::int64_t>(0, l.gpus_per_rank));
  n.gpus_per_node = node_gpus > 0 ? std::min(node_gpus, ranks_per_node * gpus_per_rank) : 0;
  if (l.cpus_per_rank) {
    n.cpus_per_rank = static_cast<int>(std::min<std::int64_t>(*l.cpus_per_rank, node_cpus));
  } else if (jobs != kJobsAuto) {
    n.cpus_per_rank = std::max(1, pool_nodes * node_cpus / std::max(1, jobs) / ranks);
  } else if (n.gpus_per_node > 0) {
    n.cpus_per_rank = std::max(1, node_cpus * gpus_per_rank / node_gpus);
  } else {
    n.cpus_per_rank = 1;
  }
  n.cpus_per_rank = std::min(n.cpus_per_rank, node_cpus);
  n.cpus_per_node = std::min(node_cpus, ranks_per_node * n.cpus_per_rank);
  n.alone = l.alone_on_its_nodes();
  return n;
}

int ResourcePool::Node::free_cpus() const {
  return alone ? 0 : static_cast<int>(std::count(cpu_busy.begin(), cpu_busy.end(), false));
}

int ResourcePool::Node::free_gpus() const {
  return alone ? 0 : static_cast<int>(std::count(gpu_busy.begin(), gpu_busy.end(), false));
}

ResourcePool::ResourcePool(std::vector<PoolNode> nodes, int jobs) : jobs_(jobs) {
  for (PoolNode& n : nodes) {
    Node node;
    node.cpu_busy.assign(n.cpus.size(), false);
    node.gpu_busy.assign(n.gpus.size(), false);
    node.node = std::move(n);
    nodes_.push_back(std::move(node));
  }
}

int ResourcePool::cpu_count() const {
  int n = 0;
  for (const Node& node : nodes_) n += static_cast<int>(node.node.cpus.size());
  return n;
}

int ResourcePool::gpu_count() const {
  int n = 0;
  for (const Node& node : nodes_) n += static_cast<int>(node.node.gpus.size());
  return n;
}

std::optional<Placement> ResourcePool::take(const PointNeeds& needs) {
  if (nodes_.empty()) return std::nullopt;
  if (running_ > 0 && jobs_ != kJobsAuto && running_ >= jobs_) return std::nullopt;
  const int want_nodes = std::min<int>(needs.nodes, static_cast<int>(nodes_.size()));
  // The first nodes (in the allocation's order) with room; an exclusive point wants idle ones.
  std::vector<size_t> chosen;
  for (size_t i = 0; i < nodes_.size() && static_cast<int>(chosen.size()) < want_nodes; ++i) {
    const Node& n = nodes_[i];
    bool fits = needs.alone
                    ? n.points == 0
                    : n.free_cpus() >= std::min<int>(needs.cpus_per_node,
                                                     static_cast<int>(n.cpu_busy.size())) &&
                          n.free_gpus() >= std::min<int>(needs.gpus_per_node,
                                                         static_cast<int>(n.gpu_busy.size()));
    // With nothing running anywhere, every point fits (clamped to what the nodes have).
    if (fits || running_ == 0) chosen.push_back(i);
  }
  if (static_cast<int>(chosen.size()) < want_nodes) return std::nullopt;
  Placement p;
  p.alone = needs.alone;
  for (size_t i : chosen) {
    Node& n = nodes_[i];
    int cpus = needs.alone
                   ? static_cast<int>(n.cpu_busy.size())
                   : std::min<int>(needs.cpus_per_node, static_cast<int>(n.cpu_busy.size()));
    int gpus = needs.alone
                   ? static_cast<int>(n.gpu_busy.size())
                   : std::min<int>(needs.gpus_per_node, static_cast<int>(n.gpu_busy.size()));
    int got_cpus = 0, got_gpus = 0;
    for (size_t c = 0; c < n.cpu_busy.size() && got_cpus < cpus; ++c) {
      if (!n.cpu_busy[c]) {
        n.cpu_busy[c] = true;
        p.cpus.push_back(n.node.cpus[c]);
        ++got_cpus;
      }
    }
    for (size_t g = 0; g < n.gpu_busy.size() && got_gpus < gpus; ++g) {
      if (!n.gpu_busy[g]) {
        n.gpu_busy[g] = true;
        p.gpus.push_back(n.node.gpus[g]);
        ++got_gpus;
      }
    }
    ++n.points;
    n.alone = needs.alone;
    p.nodes.push_back(n.node.name);
    p.node_index.push_back(i);
    p.cpu_count.push_back(got_cpus);
    p.gpu_count.push_back(got_gpus);
  }
  ++running_;
  return p;
}

void ResourcePool::give_back(const Placement& placement) {
  size_t cpu_at = 0, gpu_at = 0;
  for (size_t k = 0; k < placement.node_index.size(); ++k) {
    Node& n = nodes_[placement.node_index[k]];
    for (int j = 0; j < placement.cpu_count[k]; ++j, ++cpu_at) {
      for (size_t c = 0; c < n.node.cpus.size(); ++c) {
        if (n.node.cpus[c] == placement.cpus[cpu_at] && n.cpu_busy[c]) {
          n.cpu_busy[c] = false;
          break;
        }
      }
    }
    for (int j = 0; j < placement.gpu_count[k]; ++j, ++gpu_at) {
      for (size_t g = 0; g < n.node.gpus.size(); ++g) {
        if (n.node.gpus[g] == placement.gpus[gpu_at] && n.gpu_busy[g]) {
          n.gpu_busy[g] = false;
          break;
        }
      }
    }
    n.points = std::max(0, n.points - 1);
    if (placement.alone) n.alone = false;
  }
  running_ = std::max(0, running_ - 1);
}

}  // namespace sweepbench
