// `bench-sweep status`: where each point of a sweep's directory stands.
//
// It reads what the directory says (the manifest, each point's status.json and claim) and, when
// SLURM answers, what became of the jobs (squeue, then sacct): a point whose runner was killed by
// a time limit, a preemption or a node failure shows the job's end, not its stale `running`, and
// a point whose array task is queued shows `pending`. The merge is a pure function, tested
// without SLURM.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "run/point_state.h"
#include "run/slurm.h"

namespace sweepbench {

struct PointView {
  std::int64_t index = -1;
  std::string tag;
  PointStatus status = PointStatus::kPending;
  std::string job;        // the SLURM job or array task the state comes from, if any
  std::string note;       // the reason, or where the state comes from
  bool orphaned = false;  // running, but its runner is gone and its processes still run
};

// What one point's files say, and the job it was last submitted as.
struct PointEvidence {
  std::optional<PointRecord> record;
  ClaimState claim;
  std::string point_dir;      // for messages that name the claim file
  std::string submitted_job;  // "123_4" from the manifest, "" if never submitted
};

// Merges a point's files with SLURM's answer (nullopt: SLURM did not answer).
PointView merge_point_state(const PointEvidence& evidence,
                            const std::optional<SlurmJobStates>& slurm);

struct StatusReport {
  std::vector<PointView> points;
  bool slurm_asked = false;  // some point was submitted or ran in a SLURM job
  bool slurm_answered = false;
};

// Reads DIR (Error(kInput) when it holds no manifest) and asks SLURM about its jobs.
StatusReport sweep_status(const std::string& out_dir);

void print_status(const StatusReport& report, const std::string& out_dir, bool json,
                  std::ostream& out);

}  // namespace sweepbench
