// What a point's status is, decided once from its files (docs/running.md, "Point status").
//
// `bench-sweep status` and bench-extract both call decide_point_status, so they name the same
// state with the same word. The function is pure: it takes what the directory says (status.json,
// the claim, the rank files and summary.json) and, where the caller has it, what SLURM says of
// the jobs. launch/ asks SLURM (squeue, sacct); postprocess/ never runs a scheduler command and
// passes nullopt.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "layout/claim.h"
#include "layout/point_record.h"

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

// What the rank files of a point say without opening them with HDF5: how many there are, whether
// they are the ranks 0..world_size-1 that summary.json names, and whether each is whole (its HDF5
// superblock's end-of-file address lies within the file). bench-extract adds what reading them
// finds (another run's file, damaged contents) to `problem`.
struct RankFilesEvidence {
  int count = 0;           // rank-NNNNN.h5 files
  std::string problem;     // why they are not one whole run; "" when they are, or there are none
  std::string run_status;  // the run's own status (summary.json), "" when unknown
  std::string run_reason;  // and why
  std::int64_t world_size = 0;  // summary.json's, 0 when unknown
};
RankFilesEvidence inspect_rank_files(const std::string& point_dir);

// Why an HDF5 file's bytes cannot be a whole file ("cut short: 1024 of 8192 bytes", "not an HDF5
// file"); "" when its superblock is sound.
std::string hdf5_file_problem(const std::string& path);

// What one point's files say, and the job it was last submitted as.
struct PointEvidence {
  std::optional<PointRecord> record;  // status.json
  ClaimState claim;
  RankFilesEvidence ranks;
  std::string point_dir;      // for messages that name the claim file
  std::string submitted_job;  // "123_4" from the manifest, "" if never submitted
  // Why DIR/<tag> itself cannot be read as a point (point_dir_problem): "" when it can. Then
  // nothing else above was read, and the point is incomplete.
  std::string dir_problem;
};

// Why `point_dir` cannot be read as a point directory without leaving the tree: "is a symbolic
// link (to X): ..." or "is a FIFO, not a directory"; "" when it is a directory or does not exist.
std::string point_dir_problem(const std::string& point_dir);

struct PointView {
  std::int64_t index = -1;
  std::string tag;
  PointStatus status = PointStatus::kPending;
  std::string job;        // the SLURM job or array task the state comes from, if any
  std::string note;       // the reason, or where the state comes from
  bool orphaned = false;  // running, but its runner is gone and its processes still run
  // An ok point's check against the sweep's performance references (status.json): "pass",
  // "miss", or "" when none applied; and for a miss, what it missed.
  std::string reference;
  std::vector<std::string> reference_misses;
};

// The point's status from its files and SLURM's answer (nullopt: not asked, or no answer).
PointView decide_point_status(const PointEvidence& evidence,
                              const std::optional<SlurmJobStates>& slurm);

// Why a point whose status.json says ok (`record`) is not ok by its files, as `bench-sweep
// status` and bench-extract decide it: "rank-00000.h5 is missing (world_size 2)", "no rank
// files: ..."; "" when its results read back. The runner keeps an ok point only then.
std::string ok_results_problem(const std::string& point_dir, const PointRecord& record);

}  // namespace sweepbench
