// Asking SLURM: the cluster's limits, what became of jobs, the allocation we run in, submitting
// and requeueing.
//
// Everything goes through SLURM's own commands (scontrol, squeue, sacct, sbatch), run as argv
// lists with no shell. A command that is missing or does not answer is not an error here: the
// callers fall back to what the sweep's directory says. What SLURM's states mean for a point is
// decided in one place, layout/point_status.h.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launch/packing.h"
#include "layout/claim.h"
#include "layout/point_status.h"

namespace sweepbench {

// Parses `squeue -h -r -t all -o "%i|%T|%r"` and `sacct -n -P -X -o JobID,State` lines.
void parse_squeue_lines(const std::string& text, SlurmJobStates* states);
void parse_sacct_lines(const std::string& text, SlurmJobStates* states);

// The states of these jobs (array jobs expand to their tasks): squeue first (slurmctld keeps
// ended jobs for MinJobAge), then sacct for those it no longer knows. nullopt when neither
// command answers (no SLURM here).
std::optional<SlurmJobStates> query_slurm_jobs(const std::vector<std::string>& job_ids);

// Whether a claim's holder is gone by SLURM: a job squeue or sacct says has ended.
ClaimLiveness slurm_claim_liveness();

// "123" of "123_4", "123" of "123".
std::string slurm_base_job_id(const std::string& job_id);

// The first of srun's lines about tasks that ended badly, as srun prints them when they end:
// "srun: error: HOST: task 1: Exited with exit code 3", "srun: error: n2: tasks 2-3: Killed".
// Under --kill-on-bad-exit the first is the cause and the later ones are srun ending the rest.
struct SrunTaskFailure {
  std::string host;
  std::string tasks;  // "task 1", "tasks 0,2-3"
  std::string what;   // "Exited with exit code 3", "Segmentation fault"
  bool includes_rank0 = false;
};
std::optional<SrunTaskFailure> first_srun_task_failure(const std::string& stderr_text);

// The cluster's MaxArraySize from `scontrol show config`; nullopt when it does not answer.
std::optional<long> slurm_max_array_size();

// A SLURM time ("90" minutes, "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS") in seconds;
// nullopt for UNLIMITED or INFINITE and for what does not parse.
std::optional<long> slurm_time_seconds(const std::string& text);
// Seconds as SLURM writes a time: "D-HH:MM:SS" (or "HH:MM:SS" under a day), rounded up to a
// minute.
std::string slurm_time_text(long seconds);

// The MaxTime of a partition (the default partition when `partition` is empty) from `scontrol
// show partition -o`, in seconds; nullopt when unlimited or scontrol does not answer.
std::optional<long> slurm_partition_max_time(const std::string& partition);

// `scontrol requeue JOB`; returns the error text, empty on success.
std::string slurm_requeue(const std::string& job_id);

// `sbatch --parsable SCRIPT`; returns the job id. Throws Error(kIo) with sbatch's message.
std::string slurm_submit(const std::string& script_path);

// Whether this process is a task of a SLURM job array (SLURM_ARRAY_TASK_ID set): such a task
// reads and writes its own points' files, not every point's (docs/running.md#job-arrays).
bool in_slurm_array_task();

// The nodes of the allocation we run in, as the pool `bench-sweep run --jobs` shares out: their
// names from scontrol (SLURM_JOB_NODELIST), their CPUs from SLURM_JOB_CPUS_PER_NODE
// (`fallback_cpus` each where it does not parse), their GPUs from SLURM_GPUS_ON_NODE. Throws
// Error(kInput) on --jobs when the names cannot be had.
std::vector<PoolNode> allocation_pool(int fallback_cpus);

}  // namespace sweepbench
