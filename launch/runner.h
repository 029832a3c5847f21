// `bench-sweep run`: the points of a plan, one after another or --jobs at once, on this machine
// or in this SLURM allocation (docs/running.md).
//
// For each selected point, in order: decide and claim it (point_book.h: an `ok` result with the
// same config_hash is kept, failures rerun only when asked, pruning and repeats until precise),
// place it (placement.h), move an earlier attempt aside, record `running`, run the launcher's
// command with the logs in DIR/<tag>/logs/, and record how it ended (point_end.h) in status.json
// and the manifest, saying so as it goes (run_output.h). A point's failure never stops the sweep;
// a stop signal ends it after the running point has recorded its status. Leaves out: job arrays
// and submission (slurm/, submit.h) and containers.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "launch/launcher.h"
#include "launch/packing.h"
#include "launch/point_book.h"  // IWYU pragma: export (decide, prune_reason)
#include "launch/run_output.h"  // IWYU pragma: export (RunReport)
#include "launch/workload.h"
#include "layout/point_record.h"
#include "os/process.h"
#include "sweep/expand.h"

namespace sweepbench {

// What the run loop does to processes and asks of the machine, behind one seam, so that its
// decisions (what starts when, on which CPUs and GPUs, what a point's end records) are unit tests
// with a stand-in (tests/launch/run_loop_test.cc). real_processes() is os/process.h's and
// packing.h's.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // This machine's CPUs and GPUs, for --jobs outside an allocation.
  virtual std::vector<int> usable_cpus() = 0;
  virtual std::vector<std::string> visible_gpus() = 0;
  // start_process, wait_for_any and end_leftover_processes (os/process.h).
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

// The status a program's end tells: what its workload says of its exit code; a signal: failed.
PointStatus status_from_exit(const Workload& workload, int exit_code, int term_signal);

// Runs the plan (which write_plan has written to options.out_dir unless dry_run).
RunReport run_sweep(const Plan& plan, const RunOptions& options, const LaunchSite& site,
                    std::ostream& out);

}  // namespace sweepbench
