// `bench-sweep submit`: a sweep's points as SLURM job arrays, one per set of resources.
//
// Points that ask for the same resources (launch.nodes, launch.ranks, launch.gpus_per_rank,
// launch.cpus_per_rank and every slurm.* key) share one array; an array longer than the cluster's
// MaxArraySize is cut into several. Each array task runs `bench-sweep run --only TAG` for its
// point, so everything `run` does (keeping ok points, claims, status.json, requeue after a
// timeout) holds for arrays too. Scripts go to DIR/submit/, the job ids to the manifest; nothing
// waits for the jobs.
#pragma once

#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "launch/history_hook.h"
#include "sweep/expand.h"

namespace sweepbench {

struct SubmitOptions {
  std::string out_dir;  // the sweep's directory
  std::string sweep_path;
  std::vector<std::string> only;  // indices or tags; empty: every selected point
  bool force = false;
  bool retry_failed = false;
  bool dry_run = false;
  long max_parallel = 0;              // %K on each array; 0: no throttle
  std::string bench_sweep;            // the bench-sweep the jobs run
  std::vector<std::string> run_args;  // passed on to `bench-sweep run` (--scenario, --set, ...)
  long max_array_size = 0;            // 0: ask scontrol
  // Packing (docs/running.md "Packing short points"): each array task runs this many points of
  // its group (0: auto, from their measured time and the time limit), `jobs` at once
  // (bench-sweep run --jobs; kJobsAuto: as many as the job's nodes hold).
  long points_per_job = 1;
  int jobs = 1;
  // --history: one more job, after the arrays (afterany), ingests the sweep into the store.
  HistoryHook history;
};

// One array job: the #SBATCH options its points share, and its points in task order; task i
// runs points [i * per_task, (i + 1) * per_task), with `run_options` added to its
// `bench-sweep run` (--jobs).
struct ArrayJob {
  std::vector<std::string> options;  // "--nodes=1", ... (no --array, no --output)
  std::vector<const SweepPoint*> points;
  size_t per_task = 1;
  std::vector<std::string> run_options;
  size_t tasks() const { return (points.size() + per_task - 1) / std::max<size_t>(1, per_task); }
};

// The sbatch options a point asks for. Throws Error(kInput) naming the key when a value cannot
// be written into an #SBATCH line (whitespace, quotes, backslashes, control characters).
std::vector<std::string> sbatch_options(const SweepPoint& point, const std::string& sweep_name,
                                        const std::string& sweep_path);

// Groups points by their sbatch options (in first-seen order) and cuts each group into arrays of
// at most max_array_size tasks of `per_task` points.
std::vector<ArrayJob> group_into_arrays(const std::vector<const SweepPoint*>& points,
                                        const std::string& sweep_name,
                                        const std::string& sweep_path, long max_array_size,
                                        size_t per_task = 1);

// A group's job packed: `per_task` points a task, `jobs` at once (kJobsAuto: as many as its
// nodes hold, for a job that asks for whole nodes). A job with whole nodes (--exclusive) keeps
// its options and runs `--jobs` inside them; a shared one asks for `jobs` points' tasks at once.
// Its --time becomes slurm.time (`point_seconds`, when set) times the rounds of points it runs.
// Multi-node points run one at a time.
void pack_array(ArrayJob* job, size_t per_task, int jobs, std::optional<long> point_seconds);

// --points-per-job auto: as many points as fill half of `limit_seconds` (the job's time limit)
// at `point_seconds` each, `at_once` at a time; at least 1, at most `group_size`.
size_t auto_points_per_job(double point_seconds, long limit_seconds, int at_once,
                           size_t group_size);

// The batch script of one array: #SBATCH lines, the points' tags, and the one `exec` line with
// every argument quoted once. `run_argv` is bench-sweep's own argv up to, not including, --only.
std::string array_script(const ArrayJob& job, const std::vector<std::string>& run_argv,
                         long max_parallel, const std::string& log_dir,
                         const std::string& header_comment);

struct SubmitReport {
  std::vector<std::string> job_ids;
  size_t submitted_points = 0;
};

// Plans (the caller wrote the plan unless dry_run), writes the scripts to DIR/submit/, submits
// them with sbatch and records the job ids in the manifest. Points already ok (or failed, without
// --retry-failed) and points whose earlier job is still queued or running are left out.
SubmitReport submit_sweep(const Plan& plan, const SubmitOptions& options, std::ostream& out);

}  // namespace sweepbench
