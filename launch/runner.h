// `bench-sweep run`: the points of a plan, one after another, on this machine or in this SLURM
// allocation (docs/running.md).
//
// For each selected point, in order: decide (an `ok` result with the same config_hash is kept,
// failures rerun only when asked), check pruning, claim the directory, move an earlier attempt
// aside, record `running`, run the launcher's command with the logs in DIR/<tag>/logs/, and record
// how it ended in status.json and the manifest. A point's failure never stops the sweep; a stop
// signal ends it after the running point has recorded its status. Leaves out: job arrays and
// submission (slurm/, submit.h) and containers.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/process.h"
#include "launch/launcher.h"
#include "launch/packing.h"
#include "launch/workload.h"
#include "layout/claim.h"
#include "layout/point_record.h"
#include "sweep/expand.h"

namespace sweepbench {

// What the run loop does to processes and asks of the machine, behind one seam, so that its
// decisions (what starts when, on which CPUs and GPUs, what a point's end records) are unit tests
// with a stand-in (tests/launch/run_loop_test.cc). real_processes() is core/process.h's and
// packing.h's.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // This machine's CPUs and GPUs, for --jobs outside an allocation.
  virtual std::vector<int> usable_cpus() = 0;
  virtual std::vector<std::string> visible_gpus() = 0;
  // start_process, wait_for_any and end_leftover_processes (core/process.h).
  virtual int start(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env, const std::string& stdout_path,
                    const std::string& stderr_path, int inherit_fd,
                    const std::vector<int>& cpus) = 0;
  virtual std::optional<Ended> wait_for_any(const std::vector<int>& pids,
                                            double timeout_seconds) = 0;
  virtual std::vector<std::string> end_leftovers(double grace_seconds,
                                                 const LeftoverScope& scope) = 0;
};
ProcessRunner& real_processes();

struct RunOptions {
  std::string out_dir;
  std::vector<std::string> only;  // indices or tags; empty: every selected point
  bool force = false;             // rerun points that are already ok
  bool retry_failed = false;      // rerun points that failed or ran out of memory
  bool dry_run = false;           // print the commands, run and write nothing
  // Run the repeats in rounds (every point's first repeat, then every point's second, ...), not
  // a point's repeats back to back, so that drift on the machine falls on every point alike.
  bool interleave = false;
  // --warmup: runs of each point before any measured repeat, left out of its results (their
  // files go to OUT/.warmup/<tag>/, which no table reads).
  int warmup = 0;
  // Programs by name ("bench-train" -> a path; --bench-train); a workload's program not named
  // here is the one beside bench-sweep, else PATH's (locate_program).
  std::map<std::string, std::string> programs;
  std::vector<std::string> prune_after_oom;
  // --jobs: points at once, each on CPUs and GPUs of its own (launch/packing.h); kJobsAuto: as
  // many as fit. 1, the default: one after another, on the whole machine.
  int jobs = 1;
  // A terminal to keep one live progress line on (raw: it takes control sequences), or none.
  std::ostream* terminal = nullptr;
  // --orphan-wait: how long a point whose claim the orphaned processes of a killed runner hold is
  // waited for (they stop after their current step) before the run reports it running
  // (orphaned) and goes on; nothing else starts meanwhile. 0: not waited for.
  double orphan_wait_seconds = 600;
  // The processes' seam; nullptr: real_processes().
  ProcessRunner* processes = nullptr;
};

// What to do with a point, given its last record.
enum class Decision { kRun, kKeepOk, kKeepFailure };
Decision decide(const std::optional<PointRecord>& record, const std::string& config_hash,
                bool force, bool retry_failed);
// Why the sweep's memory_limit skips the point (predicted over it); nullopt when it does not: no
// limit, under it, or the point ran ok before (it fitted). Run and submit both skip by it.
std::optional<std::string> memory_limit_skip(const SweepPoint& p,
                                             const std::optional<PointRecord>& record,
                                             const std::optional<MemoryLimit>& limit);
// decide(), and for a point kept ok, whether its results read back as `bench-sweep status` and
// bench-extract read them (layout/point_status.h's ok_results_problem): an ok point whose rank
// file was deleted or cut runs again, and *rerun_why (optional) says why. `checked` (optional)
// holds that check's answer once made, for a caller that asks more than once.
Decision decide_point(const std::string& point_dir, const std::optional<PointRecord>& record,
                      const std::string& config_hash, bool force, bool retry_failed,
                      std::string* rerun_why = nullptr,
                      std::optional<std::string>* checked = nullptr);
// Whether run (or submit) would run the point: decide_point() says run, and memory_limit_skip()
// does not skip it. For the predicted device-hours printed before they start.
bool will_run(const SweepPoint& p, const std::string& point_dir,
              const std::optional<PointRecord>& record, bool force, bool retry_failed,
              const std::optional<MemoryLimit>& limit);
// Whether this process is a task of a SLURM job array (SLURM_ARRAY_TASK_ID set): such a task
// reads and writes its own points' files, not every point's (docs/running.md#job-arrays).
bool in_slurm_array_task();

// The points a point that ran out of memory prunes: identical to it except for a larger value of
// one of `keys`. Returns the reason when `candidate` is pruned by `oom_point`.
std::optional<std::string> prune_reason(const SweepPoint& candidate, const SweepPoint& oom_point,
                                        const std::vector<std::string>& keys);

// The status a program's end tells: what its workload says of its exit code; a signal: failed.
PointStatus status_from_exit(const Workload& workload, int exit_code, int term_signal);

struct RunReport {
  // The selected points' statuses after the run: what this run recorded, else what their
  // status.json says when it ended (a point another runner ran meanwhile).
  std::map<PointStatus, size_t> counts;
  size_t ran = 0;
  size_t busy_elsewhere = 0;  // claimed by another live runner, and still running at the end
  // Points whose directory holds what sweepbench cannot use (a claim that is a FIFO, attempts/
  // linked out of the tree): "DIR/<tag>/.claim: is a FIFO, ...". They did not run; nothing of
  // theirs was touched. The run exits 4 (a file-system error).
  std::vector<std::string> unusable;
  // Skipped by the sweep's memory_limit: asked for, so not a failure of the run (all_ok).
  size_t skipped_by_memory_limit = 0;
  // Repeats skipped because the repeats before them were precise enough (the sweep's repeats
  // until precise): asked for too.
  size_t skipped_as_precise = 0;
  int stop_signal = 0;        // a signal stopped the sweep early
  // The selected ok points whose results missed a performance reference (tags), and how many
  // passed theirs.
  std::vector<std::string> missed_reference;
  size_t passed_reference = 0;
  bool all_ok() const;
};

// Resolves --only against the plan: each entry an index or a tag. Throws Error(kInput) naming an
// entry that matches nothing.
std::vector<const SweepPoint*> points_to_run(const Plan& plan,
                                             const std::vector<std::string>& only);

// Runs the plan (which write_plan has written to options.out_dir unless dry_run).
RunReport run_sweep(const Plan& plan, const RunOptions& options, const LaunchSite& site,
                    std::ostream& out);

}  // namespace sweepbench
