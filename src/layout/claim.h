// A point's claim: DIR/<tag>/.claim, the runner that runs the point (docs/running.md).
//
// A runner claims a point by locking DIR/<tag>/.claim before touching anything else there
// (PointClaim), so two runners over the same DIR never run one point twice, nor a rerun beside
// the processes of a runner that was killed. Reading a claim never asks a scheduler: whether a
// holder on another host is gone comes from a ClaimLiveness the caller gives (launch/ asks SLURM;
// bench-extract gives none).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace sweepbench {

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
  // Why the claim's entry is no claim sweepbench made: "is a FIFO, not a regular file: ...", "is
  // a symbolic link (to X): ..."; "" for a claim file. Such an entry is never opened for more
  // than a look (a FIFO would block), never locked and never taken over.
  std::string problem;
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
struct ClaimHolder;
// Whether a claim's holder is known to be gone (its SLURM job has ended, say). Empty: nothing
// beyond this host's processes and locks is asked.
using ClaimLiveness = std::function<bool(const ClaimHolder&)>;

class PointClaim {
 public:
  // Claims DIR/<tag> (taking a stale claim over); when it is taken, returns nullopt and fills
  // *busy with what holds it. Throws Error(kIo) naming DIR/<tag>/.claim when that is not a
  // regular file (ClaimState::problem): the point cannot be claimed until it is moved away.
  static std::optional<PointClaim> acquire(const std::string& point_dir, ClaimState* busy,
                                           const ClaimLiveness& gone = {});
  // The claim as it is now; changes nothing.
  static ClaimState inspect(const std::string& point_dir, const ClaimLiveness& gone = {});

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

std::string this_host();
// This process's SLURM job: "1234", "1234_5" for an array task, "" outside SLURM.
std::string slurm_job_id_here();

// SLURM_RESTART_COUNT: how often this job was requeued (0 outside SLURM).
long slurm_restart_count_here();

}  // namespace sweepbench
