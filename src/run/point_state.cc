#include "run/point_state.h"

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
#include <functional>

#include "core/error.h"
#include "core/fs.h"
#include "core/results_layout.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "run/slurm.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

struct StatusName {
  PointStatus status;
  const char* name;
};

constexpr StatusName kNames[] = {
    {PointStatus::kPending, "pending"},
    {PointStatus::kRunning, "running"},
    {PointStatus::kOk, "ok"},
    {PointStatus::kOom, "oom"},
    {PointStatus::kFailed, "failed"},
    {PointStatus::kTimeout, "timeout"},
    {PointStatus::kPreempted, "preempted"},
    {PointStatus::kCancelled, "cancelled"},
    {PointStatus::kNodeFail, "node_fail"},
    {PointStatus::kSkipped, "skipped"},
};

std::int64_t int_or(const Value& v, const char* key, std::int64_t fallback) {
  const Value* f = v.find(key);
  return f != nullptr && f->is_int() ? f->as_int() : fallback;
}

Error io_error(const std::string& path, const std::string& what) {
  return Error(ErrorKind::kIo, Mark::in(path), "", what + ": " + std::strerror(errno), "");
}

}  // namespace

std::string to_string(PointStatus s) {
  for (const StatusName& n : kNames) {
    if (n.status == s) return n.name;
  }
  return "unknown";
}

std::optional<PointStatus> parse_point_status(const std::string& text) {
  for (const StatusName& n : kNames) {
    if (text == n.name) return n.status;
  }
  return std::nullopt;
}

const std::vector<PointStatus>& all_point_statuses() {
  static const std::vector<PointStatus> all = [] {
    std::vector<PointStatus> v;
    for (const StatusName& n : kNames) v.push_back(n.status);
    return v;
  }();
  return all;
}

bool is_failure(PointStatus s) {
  return s == PointStatus::kFailed || s == PointStatus::kOom || s == PointStatus::kTimeout;
}

bool is_interruption(PointStatus s) {
  return s == PointStatus::kCancelled || s == PointStatus::kPreempted ||
         s == PointStatus::kNodeFail;
}

Value PointRecord::to_value() const {
  Value v = Value::map();
  v.set("status", Value::string(to_string(status)));
  v.set("reason", Value::string(reason));
  v.set("config_hash", Value::string(config_hash));
  v.set("attempt", Value::integer(attempt));
  v.set("exit_code", Value::integer(exit_code));
  v.set("launcher", Value::string(launcher));
  Value cmd = Value::list();
  for (const std::string& a : command) cmd.items().push_back(Value::string(a));
  v.set("command", cmd);
  v.set("host", Value::string(host));
  v.set("pid", Value::integer(pid));
  v.set("slurm_job_id", Value::string(slurm_job_id));
  v.set("started", Value::string(started));
  v.set("ended", Value::string(ended));
  v.set("seconds", Value::real(seconds));
  return v;
}

PointRecord PointRecord::from_value(const Value& v) {
  PointRecord r;
  r.status = parse_point_status(text_field(v, "status")).value_or(PointStatus::kPending);
  r.reason = text_field(v, "reason");
  r.config_hash = text_field(v, "config_hash");
  r.attempt = int_or(v, "attempt", 0);
  r.exit_code = int_or(v, "exit_code", -1);
  r.launcher = text_field(v, "launcher");
  if (const Value* cmd = v.find("command"); cmd != nullptr && cmd->is_list()) {
    for (const Value& a : cmd->items()) {
      if (a.is_string()) r.command.push_back(a.as_string());
    }
  }
  r.host = text_field(v, "host");
  r.pid = int_or(v, "pid", 0);
  r.slurm_job_id = text_field(v, "slurm_job_id");
  r.started = text_field(v, "started");
  r.ended = text_field(v, "ended");
  if (const Value* s = v.find("seconds"); s != nullptr && s->is_number()) r.seconds = s->as_float();
  return r;
}

std::string status_path(const std::string& point_dir) {
  return (fs::path(point_dir) / kStatusFile).string();
}

std::optional<PointRecord> read_point_record(const std::string& point_dir) {
  std::string path = status_path(point_dir);
  std::optional<std::string> text = read_file_if_exists(path);
  if (!text) return std::nullopt;
  Value v;
  try {
    v = parse_yaml(*text, path);
  } catch (const Error& e) {
    throw Error(ErrorKind::kIo, Mark::in(path), "", "cannot be read: " + e.message(),
                "it is written atomically, so something else wrote it; move it away");
  }
  if (!v.is_map()) {
    throw Error(ErrorKind::kIo, Mark::in(path), "", "is not a point status", "move it away");
  }
  return PointRecord::from_value(v);
}

void write_point_record(const std::string& point_dir, const PointRecord& record) {
  write_file_atomic(status_path(point_dir), emit_json(record.to_value(), 2, false) + "\n");
}

std::string ClaimHolder::describe() const {
  if (!readable) return "a claim file that holds no claim (empty, or written by something else)";
  std::string out = host + ":" + std::to_string(pid);
  if (!slurm_job_id.empty()) out += " (SLURM job " + slurm_job_id + ")";
  if (!since.empty()) out += " since " + since;
  return out;
}

std::string ClaimState::describe(const std::string& point_dir) const {
  std::string claim = (fs::path(point_dir) / kClaimFile).string();
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
      h.pid = int_or(v, "pid", 0);
      h.slurm_job_id = text_field(v, "slurm_job_id");
      h.slurm_restart = int_or(v, "slurm_restart", 0);
      h.since = text_field(v, "since");
      h.readable = true;
    }
  } catch (const Error&) {
  }
  return h;
}

// The holder is known to be gone by SLURM: an earlier run of this very job (requeued since), or a
// job squeue or sacct says has ended.
bool gone_by_slurm(const ClaimHolder& h) {
  if (h.slurm_job_id.empty()) return false;
  if (h.slurm_job_id == slurm_job_id_here()) return h.slurm_restart < slurm_restart_count_here();
  std::optional<SlurmJobStates> states = query_slurm_jobs({h.slurm_job_id});
  if (!states) return false;
  auto it = states->find(h.slurm_job_id);
  return it != states->end() && !is_live_slurm_state(it->second.state);
}

bool process_is_gone(std::int64_t pid) {
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

enum class Lock { kTaken, kHeld, kUnsupported };

// Fills `state` from the claim file open as `fd`, given what locking it found.
void judge(int fd, Lock lock, const std::string& path, ClaimState* state) {
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
    state->stale = h.readable && !here && gone_by_slurm(h);
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
  state->stale = dead_here || gone_by_slurm(h);
}

Lock try_lock(int fd, int operation) {
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    return errno == EWOULDBLOCK ? Lock::kHeld : Lock::kUnsupported;
  }
  return Lock::kTaken;
}

}  // namespace

ClaimState PointClaim::inspect(const std::string& point_dir) {
  ClaimState state;
  std::string path = (fs::path(point_dir) / kClaimFile).string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return state;
  // A shared lock taken and dropped at once: free means nobody holds the exclusive one.
  judge(fd, try_lock(fd, LOCK_SH), path, &state);
  ::close(fd);  // drops the shared lock, if taken
  return state;
}

std::optional<PointClaim> PointClaim::acquire(const std::string& point_dir, ClaimState* busy) {
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
    fd = high(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd < 0) continue;  // released between the two opens
    ClaimState state;
    judge(fd, try_lock(fd, LOCK_EX), path, &state);
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
  if (busy != nullptr) *busy = inspect(point_dir);
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

int archive_previous_attempt(const std::string& point_dir) {
  std::vector<fs::path> to_move;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(point_dir, ec)) {
    std::string name = e.path().filename().string();
    if (name == kConfigFile || name == kClaimFile || name == kAttemptsDir) continue;
    to_move.push_back(e.path());
  }
  if (ec) throw Error(ErrorKind::kIo, Mark::in(point_dir), "", "cannot list: " + ec.message(), "");
  if (to_move.empty()) return 0;
  fs::path attempts = fs::path(point_dir) / kAttemptsDir;
  make_directories(attempts.string());
  int n = 1;
  while (fs::exists(attempts / std::to_string(n), ec)) ++n;
  fs::path dest = attempts / std::to_string(n);
  if (::mkdir(dest.c_str(), 0755) != 0) throw io_error(dest.string(), "cannot create");
  for (const fs::path& p : to_move) {
    fs::path target = dest / p.filename();
    if (::rename(p.c_str(), target.c_str()) != 0) throw io_error(p.string(), "cannot move");
  }
  return n;
}

DirLock::DirLock(const std::string& dir) {
  std::string path = (fs::path(dir) / kLockFile).string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw io_error(path, "cannot open the lock file");
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) throw io_error(path, "cannot lock");
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

void update_manifest(const std::string& out_dir, const std::function<void(Value&)>& change) {
  DirLock lock(out_dir);
  std::string path = (fs::path(out_dir) / kManifestFile).string();
  std::optional<std::string> text = read_file_if_exists(path);
  if (!text) return;
  Value manifest = parse_yaml(*text, path);
  change(manifest);
  std::string updated = emit_json(manifest, 2, false) + "\n";
  if (updated != *text) write_file_atomic(path, updated);
}

void update_manifest_point(const std::string& out_dir, const std::string& tag,
                           const Value& fields) {
  update_manifest(out_dir, [&](Value& manifest) {
    Value* points = manifest.find("points");
    if (points == nullptr || !points->is_list()) return;
    for (Value& e : points->items()) {
      const Value* t = e.find("tag");
      if (t == nullptr || !t->is_string() || t->as_string() != tag) continue;
      for (const Value::Entry& f : fields.entries()) e.set(f.key, f.value);
    }
  });
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

}  // namespace sweepbench
