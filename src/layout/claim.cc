#include "layout/claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "config/yaml_io.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string ClaimHolder::describe() const {
  if (!readable) return "a claim file that holds no claim (empty, or written by something else)";
  std::string out = host + ":" + std::to_string(pid);
  if (!slurm_job_id.empty()) out += " (SLURM job " + slurm_job_id + ")";
  if (!since.empty()) out += " since " + since;
  return out;
}

std::string ClaimState::describe(const std::string& point_dir) const {
  std::string claim = (fs::path(point_dir) / kClaimFile).string();
  if (!problem.empty()) return claim + " " + problem + "; move it away";
  if (orphaned) {
    return "orphaned: its runner " + holder.describe() +
           " is gone, but the point's processes still run and hold " + claim +
           "; they stop after their current step (SIGUSR2); run again once they have ended";
  }
  if (!holder.readable) {
    return "claimed through " + claim + ", " + holder.describe() +
           "; if no bench-sweep or bench-train runs this point, remove that file";
  }
  return "claimed by " + holder.describe();
}

namespace {

// A claim file is written within milliseconds of its creation: an unreadable one older than
// this was left by something else, or by a runner that died between the two.
constexpr double kUnreadableClaimGraceSeconds = 10;

ClaimHolder parse_claim(const std::string& text, const std::string& path) {
  ClaimHolder h;
  h.readable = false;
  try {
    Value v = parse_yaml(text, path);
    if (v.is_map() && !text_field(v, "host").empty()) {
      h.host = text_field(v, "host");
      h.pid = int_field(v, "pid", 0);
      h.slurm_job_id = text_field(v, "slurm_job_id");
      h.slurm_restart = int_field(v, "slurm_restart", 0);
      h.since = text_field(v, "since");
      h.readable = true;
    }
  } catch (const Error&) {
  }
  return h;
}

// The holder is known to be gone by SLURM: an earlier run of this very job (requeued since), or a
// job squeue or sacct says has ended.
// An earlier run of this very job (requeued since) is gone without asking anyone.
bool gone_by_slurm(const ClaimHolder& h, const ClaimLiveness& gone) {
  if (h.slurm_job_id.empty()) return false;
  if (h.slurm_job_id == slurm_job_id_here()) return h.slurm_restart < slurm_restart_count_here();
  return gone && gone(h);
}

bool process_is_gone(std::int64_t pid) {
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// The claim file opened read-only without blocking or following a link (os/fs.h); -1 when it
// does not exist, or when it is no regular file, with *problem saying what it is.
int open_claim(const std::string& path, std::string* problem) {
  try {
    return open_regular_file(path, Links::kRefuse);
  } catch (const Error& e) {
    *problem = e.message();
    return -1;
  }
}

enum class Lock { kTaken, kHeld, kUnsupported };

// Fills `state` from the claim file open as `fd`, given what locking it found.
void judge(int fd, Lock lock, const std::string& path, const ClaimLiveness& gone,
           ClaimState* state) {
  bool held = lock == Lock::kHeld;
  state->present = true;
  state->held = held;
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::pread(fd, buf, sizeof(buf), static_cast<off_t>(text.size()))) > 0 &&
         text.size() < (1 << 16)) {
    text.append(buf, static_cast<size_t>(n));
  }
  state->holder = parse_claim(text, path);
  const ClaimHolder& h = state->holder;
  bool here = h.readable && h.host == this_host();
  if (held) {
    state->orphaned = here && process_is_gone(h.pid);
    // A lost node's lock can linger on a network file system after SLURM gave up the job.
    state->stale = h.readable && !here && gone_by_slurm(h, gone);
    return;
  }
  if (!h.readable) {
    struct stat st {};
    double age = ::fstat(fd, &st) == 0 ? std::difftime(std::time(nullptr), st.st_mtime) : 0;
    state->stale = age >= kUnreadableClaimGraceSeconds;
    return;
  }
  // A free lock on this host means its runner and the point's processes are all gone; without
  // locks (some network file systems) only the runner's own process can tell.
  bool dead_here = here && (lock == Lock::kTaken || process_is_gone(h.pid));
  state->stale = dead_here || gone_by_slurm(h, gone);
}

Lock try_lock(int fd, int operation) {
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    return errno == EWOULDBLOCK ? Lock::kHeld : Lock::kUnsupported;
  }
  return Lock::kTaken;
}

}  // namespace

ClaimState PointClaim::inspect(const std::string& point_dir, const ClaimLiveness& gone) {
  ClaimState state;
  std::string path = (fs::path(point_dir) / kClaimFile).string();
  int fd = open_claim(path, &state.problem);
  if (fd < 0) {
    state.present = !state.problem.empty();
    return state;
  }
  // A shared lock taken and dropped at once: free means nobody holds the exclusive one.
  judge(fd, try_lock(fd, LOCK_SH), path, gone, &state);
  ::close(fd);  // drops the shared lock, if taken
  return state;
}

std::optional<PointClaim> PointClaim::acquire(const std::string& point_dir, ClaimState* busy,
                                              const ClaimLiveness& gone) {
  std::string path = (fs::path(point_dir) / kClaimFile).string();
  // Above the standard descriptors, which the point's process replaces with its own.
  auto high = [&](int opened) {
    if (opened < 0) return -1;
    int fd = ::fcntl(opened, F_DUPFD_CLOEXEC, 3);
    ::close(opened);
    return fd;
  };
  for (int tries = 0; tries < 20; ++tries) {
    // Created exclusively, as before locks: on a file system without them this alone decides.
    int fd = high(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd >= 0) {
      // Ours; a runner that found it a moment ago may hold its lock while it looks.
      Lock lock = try_lock(fd, LOCK_EX);
      for (int wait = 0; wait < 50 && lock == Lock::kHeld; ++wait) {
        ::usleep(10'000);
        lock = try_lock(fd, LOCK_EX);
      }
      Value v = Value::map();
      v.set("host", Value::string(this_host()));
      v.set("pid", Value::integer(::getpid()));
      v.set("slurm_job_id", Value::string(slurm_job_id_here()));
      v.set("slurm_restart", Value::integer(slurm_restart_count_here()));
      v.set("since", Value::string(utc_now_iso8601()));
      std::string text = emit_json(v, 2, false) + "\n";
      if (lock == Lock::kHeld ||
          ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
        int err = lock == Lock::kHeld ? EWOULDBLOCK : errno;
        ::unlink(path.c_str());
        ::close(fd);
        errno = err;
        throw io_error(path, "cannot write the claim");
      }
      return PointClaim(path, fd);
    }
    if (errno != EEXIST) throw io_error(path, "cannot create the claim");
    std::string problem;
    fd = open_claim(path, &problem);
    if (!problem.empty()) {
      // A FIFO there blocked every runner, status and bench-extract for ever; a dangling link
      // read as "claimed by :0".
      throw Error(ErrorKind::kIo, Mark::in(path), "", problem,
                  "a claim is a regular file sweepbench writes and locks: move that away, then "
                  "run again");
    }
    if (fd < 0) continue;  // released between the two opens
    ClaimState state;
    judge(fd, try_lock(fd, LOCK_EX), path, gone, &state);
    ::close(fd);
    if (!state.stale) {
      // A status or another runner may have held the lock for a moment: look again first.
      if (state.held && tries < 3) {
        ::usleep(50'000);
        continue;
      }
      if (busy != nullptr) *busy = state;
      return std::nullopt;
    }
    // Nothing runs it any more. rename is atomic: of two runners doing this, one moves the stale
    // file away, and both then race to create a new one exclusively.
    std::string stale = path + ".stale." + std::to_string(::getpid());
    if (::rename(path.c_str(), stale.c_str()) == 0) ::unlink(stale.c_str());
  }
  if (busy != nullptr) *busy = inspect(point_dir, gone);
  return std::nullopt;
}

PointClaim::PointClaim(PointClaim&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_) {
  other.path_.clear();
  other.fd_ = -1;
}

PointClaim::~PointClaim() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());  // while still locked: a runner that opened it sees it gone
  ::close(fd_);
}

std::string slurm_job_id_here() {
  const char* array_job = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  if (array_job && task) return std::string(array_job) + "_" + task;
  const char* job = std::getenv("SLURM_JOB_ID");
  return job ? job : "";
}

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

long slurm_restart_count_here() {
  const char* count = std::getenv("SLURM_RESTART_COUNT");
  return count != nullptr ? std::strtol(count, nullptr, 10) : 0;
}

}  // namespace sweepbench
