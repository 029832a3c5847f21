// Points side by side (bench-sweep run --jobs, docs/running.md "Several points at once"): what a
// point needs, and the pool of nodes, CPUs and GPUs that running points hold disjoint shares of.
//
// Locally the pool is this machine, one node: each point gets CPUs of its own (its affinity) and
// GPUs of its own (CUDA_VISIBLE_DEVICES). Inside a SLURM allocation it is the allocation's nodes,
// with their CPU and GPU counts: each point gets nodes and counts on them, and its srun step
// (--nodelist, --cpus-per-task, --exact) the CPUs and GPUs, which SLURM picks. A point that must
// be alone on its nodes (launch.exclusive) waits until they are idle and holds them whole.
// Points start in plan order: one that does not fit waits for running points to end, and the
// points after it wait with it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"

namespace sweepbench {

// The CPUs this process may run on (its affinity), in order.
std::vector<int> usable_cpus();
// The GPUs this process sees, as CUDA_VISIBLE_DEVICES names them: its entries when it is set
// (none when it is empty or -1), else one a device in /proc/driver/nvidia/gpus ("0", "1", ...).
std::vector<std::string> visible_gpus();

// "0-3,6": CPUs as taskset and cpusets write them.
std::string cpu_list_text(const std::vector<int>& cpus);

// SLURM_JOB_CPUS_PER_NODE ("4(x2),2") as one count a node, for `nodes` nodes; empty when it
// does not parse or does not name that many.
std::vector<int> parse_slurm_cpus_per_node(const std::string& text, size_t nodes);

// --jobs: a number of points at most (1: one after another, as without it), or auto (0): as
// many as the CPUs and GPUs hold.
constexpr int kJobsAuto = 0;

// One node of the pool: this machine (its CPUs by number) or a node of the allocation (its CPUs
// counted only: SLURM picks which a step gets).
struct PoolNode {
  std::string name;
  std::vector<int> cpus;
  std::vector<std::string> gpus;  // CUDA_VISIBLE_DEVICES names here; "0".."N-1" in an allocation
};

struct PointNeeds {
  int nodes = 1;
  int cpus_per_rank = 1;
  int cpus_per_node = 1;  // for the ranks on one of its nodes
  int gpus_per_node = 0;
  bool alone = false;  // launch.exclusive: nothing else on its nodes meanwhile
};

// What a point with launch settings `l` needs of a pool of `pool_nodes` nodes of `node_cpus` CPUs
// and `node_gpus` GPUs each, at --jobs `jobs`. Per rank: launch.cpus_per_rank when set; else the
// pool's CPUs shared equally by `jobs` points (--jobs N), or one CPU (--jobs auto; a GPU point:
// the CPUs of its share of the GPUs). GPUs: launch.gpus_per_rank a rank. Never more than the pool
// has: such a point takes all of it.
PointNeeds point_needs(const LaunchSettings& l, int jobs, int pool_nodes, int node_cpus,
                       int node_gpus);

// The nodes, CPUs and GPUs a running point holds.
struct Placement {
  std::vector<std::string> nodes;
  std::vector<int> cpus;                  // all of them, on every node it holds
  std::vector<std::string> gpus;          // likewise
  std::vector<size_t> node_index;         // into the pool
  std::vector<int> cpu_count, gpu_count;  // a node, as node_index
  bool alone = false;
};

class ResourcePool {
 public:
  ResourcePool(std::vector<PoolNode> nodes, int jobs);

  // A placement for `needs`, or nullopt when it does not fit beside the running points now.
  // With nothing running every point fits.
  std::optional<Placement> take(const PointNeeds& needs);
  void give_back(const Placement& placement);
  int running() const { return running_; }
  int node_count() const { return static_cast<int>(nodes_.size()); }
  // The first node's: the pool's nodes are alike (a SLURM allocation's usually are).
  int node_cpus() const {
    return nodes_.empty() ? 1 : static_cast<int>(nodes_[0].node.cpus.size());
  }
  int node_gpus() const {
    return nodes_.empty() ? 0 : static_cast<int>(nodes_[0].node.gpus.size());
  }
  int cpu_count() const;
  int gpu_count() const;

 private:
  struct Node {
    PoolNode node;
    std::vector<bool> cpu_busy, gpu_busy;
    int points = 0;      // running on it
    bool alone = false;  // held whole by an exclusive point
    int free_cpus() const;
    int free_gpus() const;
  };
  std::vector<Node> nodes_;
  int jobs_;
  int running_ = 0;
};

}  // namespace sweepbench
