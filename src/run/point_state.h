// A point's state on disk: DIR/<tag>/status.json, its claim, and earlier attempts.
//
// status.json is the authority on how a point ended (docs/running.md): bench-train's own HDF5
// status says what that process saw (a signal, an OOM), status.json says what the sweep makes of
// it. A runner claims a point by locking DIR/<tag>/.claim before touching anything else there
// (PointClaim), so two runners over the same DIR never run one point twice, nor a rerun beside
// the processes of a runner that was killed. A rerun first moves the
// previous attempt's files into DIR/<tag>/attempts/<N>/: nothing is deleted or overwritten.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/value.h"

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

  Value to_value() const;
  static PointRecord from_value(const Value& v);
};

std::string status_path(const std::string& point_dir);
// nullopt when there is no status.json; a status.json that cannot be read is an Error(kIo).
std::optional<PointRecord> read_point_record(const std::string& point_dir);
void write_point_record(const std::string& point_dir, const PointRecord& record);

// The holder of a claim, as its file says.
struct ClaimHolder {
  std::string host;
  std::int64_t pid = 0;  // the runner's
  std::string slurm_job_id;
  std::int64_t slurm_restart = 0;  // SLURM_RESTART_COUNT of the holder's job
  std::string since;
  bool readable = true;          // false: the file is empty or holds no claim
  std::string describe() const;  // "host:pid (SLURM job 12_3) since ...", or what is unreadable
};

// What a point's claim is now.
struct ClaimState {
  bool present = false;   // DIR/<tag>/.claim exists
  bool held = false;      // its lock is held: by a runner, or by the point's processes
  bool orphaned = false;  // held, but the runner it names (on this host) is gone
  bool stale = false;     // present, and nothing runs the point: the next runner takes it over
  ClaimHolder holder;
  // For messages: "claimed by ...", with what to do when it is orphaned or unreadable.
  std::string describe(const std::string& point_dir) const;
};

// An exclusive claim on a point directory: the file DIR/<tag>/.claim, created if need be and
// locked (flock) by the runner, which writes who it is into it. The point's processes inherit
// the locked descriptor (fd()), so the lock stays held while any of them lives, even when the
// runner is killed: a claim is free only when nothing of its run is left, and a rerun never
// starts a second copy beside an orphan. On release the file is removed, then unlocked.
//
// A claim whose lock is free is stale when its holder was on this host, or is an unreadable file
// older than a few seconds, or belonged to a SLURM job that has ended or been requeued since (a
// lost node's lock may outlive it on a network file system). A free claim from another host that
// SLURM does not say is gone is left alone: its file system may not share locks.
class PointClaim {
 public:
  // Claims DIR/<tag> (taking a stale claim over); when it is taken, returns nullopt and fills
  // *busy with what holds it.
  static std::optional<PointClaim> acquire(const std::string& point_dir, ClaimState* busy);
  // The claim as it is now; changes nothing.
  static ClaimState inspect(const std::string& point_dir);

  int fd() const { return fd_; }

  PointClaim(PointClaim&& other) noexcept;
  PointClaim& operator=(PointClaim&&) = delete;
  PointClaim(const PointClaim&) = delete;
  ~PointClaim();

 private:
  PointClaim(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

// Moves everything in the point directory except config.yaml, the claim and attempts/ into
// attempts/<N>/ (N = 1 + the attempts already kept); returns N, or 0 when there was nothing to
// move.
int archive_previous_attempt(const std::string& point_dir);

// An advisory lock (flock) on DIR/.lock for read-modify-write of the manifest.
class DirLock {
 public:
  explicit DirLock(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// Reads DIR/manifest.json, lets `change` edit it and writes it back (atomically, only when it
// changed), all under DirLock. Does nothing when there is no manifest.
void update_manifest(const std::string& out_dir, const std::function<void(Value&)>& change);

// Sets `fields` (a map) on the manifest entry whose tag is `tag`, under DirLock.
void update_manifest_point(const std::string& out_dir, const std::string& tag, const Value& fields);

std::string this_host();
// This process's SLURM job: "1234", "1234_5" for an array task, "" outside SLURM.
std::string slurm_job_id_here();

}  // namespace sweepbench
