// Placing points on the pool at `bench-sweep run --jobs` (docs/running.md "Several points at
// once"): the one object the runner asks what a point needs, where it goes, and what its share
// means for its command, record, environment and leftover processes. At --jobs 1 (the default) a
// point has the whole machine and every answer here is "nothing": no other file checks --jobs.
// The pool's arithmetic is packing.h's; finding an allocation's nodes is slurm.h's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "launch/launcher.h"
#include "launch/packing.h"
#include "layout/point_record.h"
#include "os/process.h"

namespace sweepbench {

// Whether two placements hold a node in common (their points ran beside each other).
bool shares_a_node(const Placement& a, const Placement& b);

class PointPlacer {
 public:
  // `nodes`: the pool (this machine, or the allocation's nodes: slurm.h's allocation_pool);
  // `jobs`: --jobs.
  PointPlacer(int jobs, const LaunchSite& site, std::vector<PoolNode> nodes);

  // Whether several points may run at once here (--jobs other than 1): then each gets CPUs and
  // GPUs of its own and its record says which, and beside which points it ran.
  bool packing() const { return jobs_ != 1; }
  // ", --jobs 2 (4 CPUs, 1 GPU)" for the run's first line; "" at --jobs 1.
  std::string jobs_text() const;

  // What a point of launch settings `l`, run by `launcher`, needs of the pool. In an allocation
  // only srun steps stay on the nodes they are given: a point that runs through another
  // launcher runs alone.
  PointNeeds needs(const LaunchSettings& l, const std::string& launcher) const;
  std::optional<Placement> take(const PointNeeds& needs) { return pool_.take(needs); }
  void give_back(const Placement& placement) { pool_.give_back(placement); }

  // Inside an allocation a placed srun step goes to the nodes it was given, with its CPUs a rank:
  // the site its command is built for. nullopt: the planned command stands.
  std::optional<LaunchSite> step_site(const std::string& launcher, const Placement& placement,
                                      const PointNeeds& needs) const;
  // Writes the point's share into its record (nodes, or CPUs and GPUs) and starts its list of
  // points beside it; nothing at --jobs 1.
  void describe(PointRecord& r, const Placement& placement) const;
  // ", on n1, 2 CPUs a rank" or ", CPUs 0-1, GPUs 0": the share, for the point's running line.
  std::string where(const PointRecord& r, const PointNeeds& needs) const;
  // Its share of the machine in its environment: the GPUs it asked for and no others (srun's
  // --gpus-per-task says which in an allocation), and as many compute threads a rank as it has
  // CPUs (bench-train reads SWEEPBENCH_CPUS_PER_RANK when launch.cpus_per_rank is null).
  void add_env(std::map<std::string, std::string>& env, const PointRecord& r,
               const PointNeeds& needs) const;
  // The CPUs its processes are bound to: its own, locally at --jobs; none (inherited) otherwise.
  std::vector<int> affinity(const Placement& placement) const;
  // Which processes a point that ended left behind: with other points running, only what
  // carries its tag is its own; what is left unmarked is ended when nothing else runs.
  LeftoverScope leftover_scope(const std::vector<int>& others, const std::string& tag) const;

 private:
  int jobs_;
  LaunchSite site_;
  ResourcePool pool_;
};

}  // namespace sweepbench
