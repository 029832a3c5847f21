// A point's record on disk: DIR/<tag>/status.json, what the sweep makes of the point's run, and
// the point's earlier attempts (docs/results-format.md).
//
// status.json is the authority on how a point ended (docs/running.md): bench-train's own HDF5
// status says what that process saw (a signal, an OOM), status.json says what the sweep makes of
// it. A rerun first moves the previous attempt's files into DIR/<tag>/attempts/<N>/: nothing is
// deleted or overwritten.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/value.h"

namespace sweepbench {

enum class PointStatus {
  kPending,
  kRunning,
  kOk,
  kOom,
  kFailed,
  kTimeout,
  kPreempted,
  kCancelled,
  kNodeFail,
  kSkipped,
  // Never written by a runner: the point's files do not make one finished run (its runner died
  // with nothing left running it, or a rank file is missing or cut). decide_point_status says so.
  kIncomplete,
};

std::string to_string(PointStatus s);
std::optional<PointStatus> parse_point_status(const std::string& text);
// Every status, in the order summaries list them.
const std::vector<PointStatus>& all_point_statuses();

// The point ran (or runs) to an end that rerunning would likely repeat: failed, oom, timeout.
bool is_failure(PointStatus s);
// The point was stopped from outside before it could finish: cancelled, preempted, node_fail.
bool is_interruption(PointStatus s);

struct PointRecord {
  PointStatus status = PointStatus::kPending;
  std::string reason;
  std::string config_hash;
  std::int64_t attempt = 0;  // 1 for the first run of the point
  std::int64_t exit_code = -1;
  std::string launcher;
  std::vector<std::string> command;
  std::string host;
  std::int64_t pid = 0;
  std::string slurm_job_id;    // "1234" or "1234_5" for an array task
  std::string started, ended;  // ISO 8601 UTC
  double seconds = 0;
  // With several points at once (bench-sweep run --jobs other than 1): the CPUs ("0-3") and
  // GPUs ("0,1", as CUDA_VISIBLE_DEVICES) it ran on, and the points that ran at the same time
  // beside it on this machine (empty when none did). Left out of status.json otherwise.
  // Inside a SLURM allocation, the nodes its step ran on ("n1,n2") instead of CPUs by number
  // (SLURM picks those); beside: the points that ran on one of them at the same time.
  std::string cpus, gpus, nodes;
  std::optional<std::vector<std::string>> beside;
  // SLURM's partition of the runner's job (SLURM_JOB_PARTITION); left out when empty.
  std::string partition;
  // The sweep's performance references checked against an ok point's results (a list of
  // sweep/references.h's ReferenceCheck), and "pass" or "miss"; left out when none applied.
  Value references;
  std::string reference;

  Value to_value() const;
  static PointRecord from_value(const Value& v);
};

std::string status_path(const std::string& point_dir);
// nullopt when there is no status.json; a status.json that cannot be read is an Error(kIo).
std::optional<PointRecord> read_point_record(const std::string& point_dir);
void write_point_record(const std::string& point_dir, const PointRecord& record);

// Moves everything in the point directory except config.yaml, the claim and attempts/ into
// attempts/<N>/ (N = 1 + the attempts already kept); returns N, or 0 when there was nothing to
// move.
int archive_previous_attempt(const std::string& point_dir);

}  // namespace sweepbench
