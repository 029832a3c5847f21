// `bench-sweep status`: where each point of a sweep's directory stands.
//
// It reads what the directory says (the manifest, each point's status.json and claim) and, when
// SLURM answers, what became of the jobs (squeue, then sacct): a point whose runner was killed by
// a time limit, a preemption or a node failure shows the job's end, not its stale `running`, and
// a point whose array task is queued shows `pending`. The decision is layout/point_status.h's,
// the one bench-extract makes too.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "layout/point_status.h"

namespace sweepbench {

struct StatusReport {
  std::vector<PointView> points;
  bool slurm_asked = false;  // some point was submitted or ran in a SLURM job
  bool slurm_answered = false;
  // Ok points that missed (passed) the sweep's performance references.
  size_t missed_reference() const;
  size_t passed_reference() const;
};

// Reads DIR (Error(kInput) when it holds no manifest) and asks SLURM about its jobs.
StatusReport sweep_status(const std::string& out_dir);

void print_status(const StatusReport& report, const std::string& out_dir, bool json,
                  std::ostream& out);

// Moves a point's previous attempt to DIR/<tag>/attempts/N/ (archive_previous_attempt) once its
// claim is this runner's. A previous record still saying `running` (its runner was killed before
// it could write how the point ended: SLURM's SIGKILL after scancel on a loaded node) is first
// settled to what `bench-sweep status` decides, SLURM asked about its job, so that the attempt
// kept says `cancelled`, `timeout` or `incomplete`, never a `running` nothing runs. Returns N.
int archive_settled_attempt(const std::string& point_dir);

}  // namespace sweepbench
