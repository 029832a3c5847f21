// Asking SLURM: the cluster's limits, what became of jobs, submitting and requeueing.
//
// Everything goes through SLURM's own commands (scontrol, squeue, sacct, sbatch), run as argv
// lists with no shell. A command that is missing or does not answer is not an error here: the
// callers fall back to what the sweep's directory says. What SLURM's states mean for a point is
// decided in one place, status_of_slurm_state.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "run/point_state.h"

namespace sweepbench {

// A job or array task as squeue (or sacct) reports it: "123" or "123_4".
struct SlurmJobState {
  std::string state;   // PENDING, RUNNING, COMPLETED, TIMEOUT, PREEMPTED, ...
  std::string reason;  // squeue's reason (Resources, Priority, BeginTime, ...), may be empty
};
using SlurmJobStates = std::map<std::string, SlurmJobState>;

// True for states in which the job will still run or runs now (PENDING, RUNNING, REQUEUED, ...).
bool is_live_slurm_state(const std::string& state);
// What a job's end means for its point: TIMEOUT -> timeout, PREEMPTED -> preempted, CANCELLED ->
// cancelled, NODE_FAIL -> node_fail, OUT_OF_MEMORY -> oom, FAILED/BOOT_FAIL/DEADLINE -> failed;
// live states -> pending or running. nullopt for COMPLETED and states it does not know.
std::optional<PointStatus> status_of_slurm_state(const std::string& state);

// Parses `squeue -h -r -t all -o "%i|%T|%r"` and `sacct -n -P -X -o JobID,State` lines.
void parse_squeue_lines(const std::string& text, SlurmJobStates* states);
void parse_sacct_lines(const std::string& text, SlurmJobStates* states);

// The states of these jobs (array jobs expand to their tasks): squeue first (slurmctld keeps
// ended jobs for MinJobAge), then sacct for those it no longer knows. nullopt when neither
// command answers (no SLURM here).
std::optional<SlurmJobStates> query_slurm_jobs(const std::vector<std::string>& job_ids);

// "123" of "123_4", "123" of "123".
std::string slurm_base_job_id(const std::string& job_id);

// The cluster's MaxArraySize from `scontrol show config`; nullopt when it does not answer.
std::optional<long> slurm_max_array_size();

// SLURM_RESTART_COUNT: how often this job was requeued (0 outside SLURM).
long slurm_restart_count_here();

// `scontrol requeue JOB`; returns the error text, empty on success.
std::string slurm_requeue(const std::string& job_id);

// `sbatch --parsable SCRIPT`; returns the job id. Throws Error(kIo) with sbatch's message.
std::string slurm_submit(const std::string& script_path);

}  // namespace sweepbench
