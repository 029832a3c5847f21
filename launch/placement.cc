// Placing points on the pool at --jobs (placement.h).
#include "launch/placement.h"

#include <algorithm>

#include "text/text.h"

namespace sweepbench {

bool shares_a_node(const Placement& a, const Placement& b) {
  for (const std::string& n : a.nodes) {
    if (std::find(b.nodes.begin(), b.nodes.end(), n) != b.nodes.end()) return true;
  }
  return false;
}

PointPlacer::PointPlacer(int jobs, const LaunchSite& site, std::vector<PoolNode> nodes)
    : jobs_(jobs), site_(site), pool_(std::move(nodes), jobs) {}

std::string PointPlacer::jobs_text() const {
  if (!packing()) return "";
  return std::string(", ") +
         (jobs_ == kJobsAuto ? "--jobs auto" : "--jobs " + std::to_string(jobs_)) + " (" +
         (site_.in_slurm_allocation ? plural(static_cast<size_t>(pool_.node_count()), "node") + ", "
                                    : "") +
         plural(static_cast<size_t>(pool_.cpu_count()), "CPU") +
         (pool_.gpu_count() > 0 ? ", " + plural(static_cast<size_t>(pool_.gpu_count()), "GPU")
                                : "") +
         ")";
}

PointNeeds PointPlacer::needs(const LaunchSettings& l, const std::string& launcher) const {
  PointNeeds n = point_needs(l, jobs_, pool_.node_count(), pool_.node_cpus(), pool_.node_gpus());
  if (site_.in_slurm_allocation && launcher != "srun") n.alone = true;
  return n;
}

std::optional<LaunchSite> PointPlacer::step_site(const std::string& launcher,
                                                 const Placement& placement,
                                                 const PointNeeds& needs) const {
  if (!packing() || !site_.in_slurm_allocation || launcher != "srun") return std::nullopt;
  LaunchSite placed = site_;
  placed.step_nodes = placement.nodes;
  placed.step_cpus_per_rank = needs.cpus_per_rank;
  return placed;
}

void PointPlacer::describe(PointRecord& r, const Placement& placement) const {
  if (!packing()) return;
  if (site_.in_slurm_allocation) {
    r.nodes = join(placement.nodes, ",");
  } else {
    r.cpus = cpu_list_text(placement.cpus);
    r.gpus = join(placement.gpus, ",");
  }
  r.beside.emplace();
}

std::string PointPlacer::where(const PointRecord& r, const PointNeeds& needs) const {
  if (!packing()) return "";
  if (site_.in_slurm_allocation) {
    return ", on " + r.nodes + ", " + plural(static_cast<size_t>(needs.cpus_per_rank), "CPU") +
           " a rank";
  }
  return ", CPUs " + r.cpus + (r.gpus.empty() ? "" : ", GPUs " + r.gpus);
}

void PointPlacer::add_env(std::map<std::string, std::string>& env, const PointRecord& r,
                          const PointNeeds& needs) const {
  if (!packing()) return;
  if (!site_.in_slurm_allocation && pool_.gpu_count() > 0) env["CUDA_VISIBLE_DEVICES"] = r.gpus;
  env["SWEEPBENCH_CPUS_PER_RANK"] = std::to_string(needs.cpus_per_rank);
}

std::vector<int> PointPlacer::affinity(const Placement& placement) const {
  return packing() && !site_.in_slurm_allocation ? placement.cpus : std::vector<int>{};
}

LeftoverScope PointPlacer::leftover_scope(const std::vector<int>& others,
                                          const std::string& tag) const {
  if (!packing()) return {};
  return {others, "SWEEPBENCH_POINT=" + tag};
}

}  // namespace sweepbench
