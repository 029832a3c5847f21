#include "layout/point_status.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "config/yaml_io.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

// squeue -t all lists ended jobs too; these are the ones still to run or running.
const char* const kLiveStates[] = {"PENDING",      "RUNNING",   "CONFIGURING", "COMPLETING",
                                   "SUSPENDED",    "REQUEUED",  "REQUEUE_FED", "REQUEUE_HOLD",
                                   "RESIZING",     "SIGNALING", "STAGE_OUT",   "STOPPED",
                                   "RESV_DEL_HOLD"};

std::optional<SlurmJobState> lookup(const std::optional<SlurmJobStates>& slurm,
                                    const std::string& job) {
  if (!slurm || job.empty()) return std::nullopt;
  auto it = slurm->find(job);
  if (it == slurm->end()) return std::nullopt;
  return it->second;
}

std::string described(const std::string& job, const SlurmJobState& s) {
  return "job " + job + " " + s.state + (s.reason.empty() ? "" : " (" + s.reason + ")");
}

bool ended(PointStatus s) { return s != PointStatus::kPending && s != PointStatus::kRunning; }

// SLURM's answer merged with status.json and the claim.
PointView merge_with_slurm(const PointEvidence& e, const std::optional<SlurmJobStates>& slurm,
                           bool* gone) {
  PointView v;
  bool& runner_gone = *gone;
  const std::optional<PointRecord>& r = e.record;
  if (r) {
    v.status = r->status;
    v.note = r->reason;
    v.job = r->slurm_job_id;
  }
  // A queued or running array task decides, unless the point ended in that very task already.
  if (auto task = lookup(slurm, e.submitted_job); task && is_live_slurm_state(task->state)) {
    PointStatus live = status_of_slurm_state(task->state).value_or(PointStatus::kPending);
    bool same_run = r && r->slurm_job_id == e.submitted_job;
    bool superseded = r && ended(r->status) && r->status != PointStatus::kOk &&
                      (!same_run || live == PointStatus::kPending);
    if (!r || !ended(r->status) || superseded) {
      v.status = live;
      v.job = e.submitted_job;
      v.note = described(e.submitted_job, *task);
      if (r && ended(r->status)) v.note += "; the last attempt ended " + to_string(r->status);
      return v;
    }
    return v;
  }
  if (r && r->status == PointStatus::kRunning) {
    if (auto job = lookup(slurm, r->slurm_job_id)) {
      if (is_live_slurm_state(job->state)) return v;
      v.status = status_of_slurm_state(job->state).value_or(PointStatus::kFailed);
      v.note = described(r->slurm_job_id, *job) +
               ": the job ended before its runner could "
               "record the point";
      return v;
    }
    if (e.claim.orphaned) {
      v.orphaned = true;
      v.note = e.claim.describe(e.point_dir);
    } else if (!e.claim.present || e.claim.stale) {
      v.status = PointStatus::kIncomplete;
      v.note =
          "its runner (" +
          (e.claim.present ? e.claim.holder.describe() : r->host + ":" + std::to_string(r->pid)) +
          ") is gone; `bench-sweep run` runs it again";
      runner_gone = true;
    }
    return v;
  }
  if (r && r->status == PointStatus::kCancelled) {
    // SLURM knows better why the job was stopped: the runner only saw a SIGTERM.
    if (auto job = lookup(slurm, r->slurm_job_id)) {
      if (auto s = status_of_slurm_state(job->state); s == PointStatus::kPreempted ||
                                                      s == PointStatus::kNodeFail ||
                                                      s == PointStatus::kTimeout) {
        v.status = *s;
        v.note = described(r->slurm_job_id, *job) + "; " + r->reason;
      }
    }
    return v;
  }
  if (!r) {
    if (auto task = lookup(slurm, e.submitted_job)) {
      if (auto s = status_of_slurm_state(task->state); s && ended(*s)) {
        v.status = *s;
        v.job = e.submitted_job;
        v.note = described(e.submitted_job, *task) + " before the point started";
        return v;
      }
    }
    if (e.claim.present && !e.claim.stale) {
      v.status = PointStatus::kRunning;
      v.orphaned = e.claim.orphaned;
      v.note = (e.claim.orphaned ? "" : "starting: ") + e.claim.describe(e.point_dir);
    } else if (!e.submitted_job.empty()) {
      v.job = e.submitted_job;
      v.note = "submitted as " + e.submitted_job;
    }
  }
  return v;
}

}  // namespace

bool is_live_slurm_state(const std::string& state) {
  for (const char* s : kLiveStates) {
    if (state == s) return true;
  }
  return false;
}

std::optional<PointStatus> status_of_slurm_state(const std::string& state) {
  if (state == "RUNNING" || state == "COMPLETING" || state == "CONFIGURING" ||
      state == "SIGNALING" || state == "STAGE_OUT" || state == "SUSPENDED" || state == "STOPPED" ||
      state == "RESIZING") {
    return PointStatus::kRunning;
  }
  if (is_live_slurm_state(state)) return PointStatus::kPending;
  if (state == "TIMEOUT") return PointStatus::kTimeout;
  if (state == "PREEMPTED") return PointStatus::kPreempted;
  if (state == "CANCELLED" || state == "REVOKED") return PointStatus::kCancelled;
  if (state == "NODE_FAIL") return PointStatus::kNodeFail;
  if (state == "OUT_OF_MEMORY") return PointStatus::kOom;
  if (state == "FAILED" || state == "BOOT_FAIL" || state == "DEADLINE") {
    return PointStatus::kFailed;
  }
  return std::nullopt;
}

namespace {

// Little-endian unsigned integer of `size` bytes at `at`; nullopt past the end.
std::optional<std::uint64_t> le_uint(const std::string& b, size_t at, size_t size) {
  if (size == 0 || size > 8 || at + size > b.size()) return std::nullopt;
  std::uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) {
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  }
  return v;
}

}  // namespace

std::string hdf5_file_problem(const std::string& path) {
  static const char kSignature[] = "\x89HDF\r\n\x1a\n";
  // Without blocking (a FIFO) or following a link out of the tree (os/fs.h).
  int fd = -1;
  try {
    fd = open_regular_file(path, Links::kRefuse);
  } catch (const Error& e) {
    return e.message();
  }
  if (fd < 0) return std::string("cannot be opened: ") + std::strerror(ENOENT);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return std::string("cannot be read: ") + std::strerror(err);
  }
  std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  // The superblock is at 0, or after a user block of 512, 1024, 2048, ... bytes.
  std::string b(96, '\0');
  std::uint64_t base = 0;
  bool found = false;
  for (std::uint64_t at = 0; at + 8 <= size && at <= (1u << 20); at = at == 0 ? 512 : at * 2) {
    ssize_t n = ::pread(fd, b.data(), b.size(), static_cast<off_t>(at));
    if (n >= 8 && std::memcmp(b.data(), kSignature, 8) == 0) {
      b.resize(static_cast<size_t>(n));
      base = at;
      found = true;
      break;
    }
  }
  ::close(fd);
  if (!found) return size == 0 ? "is empty" : "is not an HDF5 file (no superblock)";
  // The end-of-file address (relative to the base address), by superblock version.
  unsigned version = static_cast<unsigned char>(b[8]);
  std::optional<std::uint64_t> offsets, eof;
  if (version <= 1) {
    offsets = le_uint(b, 13, 1);
    size_t at = version == 0 ? 24 : 28;
    if (offsets) eof = le_uint(b, at + 2 * *offsets, static_cast<size_t>(*offsets));
  } else if (version <= 3) {
    offsets = le_uint(b, 9, 1);
    if (offsets) eof = le_uint(b, 12 + 2 * *offsets, static_cast<size_t>(*offsets));
  } else {
    return "has an HDF5 superblock of unknown version " + std::to_string(version);
  }
  if (!eof) return "is cut short inside its HDF5 superblock";
  if (base + *eof > size) {
    return "is cut short (" + std::to_string(size) + " of " + std::to_string(base + *eof) +
           " bytes)";
  }
  return "";
}

RankFilesEvidence inspect_rank_files(const std::string& point_dir) {
  RankFilesEvidence out;
  auto flag = [&](const std::string& why) {
    if (out.problem.empty()) out.problem = why;
  };
  std::set<std::string> names;
  std::error_code ec;
  fs::directory_iterator listing(point_dir, ec);
  for (; !ec && listing != fs::directory_iterator(); listing.increment(ec)) {
    std::string name = listing->path().filename().string();
    if (is_rank_file_name(name)) names.insert(name);
  }
  if (ec) flag("its directory cannot be read (" + ec.message() + ")");
  out.count = static_cast<int>(names.size());
  // A summary.json that is a link or a special file is not the run's (its status would be
  // someone else's): the files do not make one run.
  if (std::string why = tree_file_problem((fs::path(point_dir) / kSummaryFile).string());
      !why.empty()) {
    flag(std::string(kSummaryFile) + " " + why);
  }
  try {
    if (auto text = read_file_if_exists((fs::path(point_dir) / kSummaryFile).string(),
                                        kMaxSmallFile, Links::kRefuse)) {
      Value s = parse_yaml(*text, kSummaryFile);
      if (s.is_map()) {
        out.run_status = text_field(s, "status");
        out.run_reason = text_field(s, "reason");
        if (const Value* w = s.find("world_size"); w != nullptr && w->is_int() && w->as_int() > 0) {
          out.world_size = w->as_int();
        }
      }
    }
  } catch (const Error&) {
    // An unreadable summary only leaves the world size unknown; the rank files still count.
  }
  for (const std::string& name : names) {
    std::string why = hdf5_file_problem((fs::path(point_dir) / name).string());
    if (!why.empty()) flag(name + " " + why);
  }
  if (out.count > 0 && out.world_size > 0) {
    for (std::int64_t r = 0; r < out.world_size && r < 1'000'000; ++r) {
      if (names.count(rank_file_name(r)) == 0) {
        flag(rank_file_name(r) + " is missing (world_size " + std::to_string(out.world_size) + ")");
        break;
      }
    }
    if (out.count > out.world_size) {
      flag(std::to_string(out.count) + " rank files for world_size " +
           std::to_string(out.world_size));
    }
  }
  return out;
}

std::string point_dir_problem(const std::string& point_dir) {
  struct stat st {};
  if (::lstat(point_dir.c_str(), &st) != 0) return "";
  if (S_ISLNK(st.st_mode)) {
    return link_text(point_dir) + ": sweepbench never follows a point directory's link";
  }
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  return "";
}

PointView decide_point_status(const PointEvidence& evidence,
                              const std::optional<SlurmJobStates>& slurm) {
  if (!evidence.dir_problem.empty()) {
    PointView v;
    v.status = PointStatus::kIncomplete;
    v.note = evidence.point_dir + " " + evidence.dir_problem;
    return v;
  }
  // A claim that is no claim file (a FIFO, a link) says nothing of who runs the point: the
  // point's state comes from the rest, and the note says what is in the way of the next run.
  PointEvidence without_claim;
  const bool bad_claim = !evidence.claim.problem.empty();
  if (bad_claim) {
    without_claim = evidence;
    without_claim.claim = ClaimState();
  }
  const PointEvidence& e = bad_claim ? without_claim : evidence;
  bool runner_gone = false;
  PointView v = merge_with_slurm(e, slurm, &runner_gone);
  const RankFilesEvidence& ranks = e.ranks;
  std::optional<PointStatus> run = parse_point_status(ranks.run_status);
  bool claimed = e.claim.present && !e.claim.stale;
  if (runner_gone && ranks.count > 0 && ranks.problem.empty() && run) {
    // The run finished; its runner died before it could record the point.
    v.status = *run;
    v.note = "its runner died before recording the point" +
             (ranks.run_reason.empty() ? "" : "; " + ranks.run_reason);
  } else if (!e.record && v.status == PointStatus::kPending && !claimed && ranks.count > 0) {
    // Results without a runner's record: bench-train run by hand, or a runner killed at the end.
    v.status = run.value_or(PointStatus::kIncomplete);
    v.note = run ? ranks.run_reason : "rank files, but no summary.json says how the run ended";
  }
  if (v.status == PointStatus::kOk) {
    if (!ranks.problem.empty()) {
      v.status = PointStatus::kIncomplete;
      v.note = ranks.problem;
    } else if (ranks.count == 0) {
      v.status = PointStatus::kIncomplete;
      v.note = "no rank files: they were moved or deleted";
    }
  }
  if (bad_claim) {
    std::string claim = evidence.claim.describe(evidence.point_dir);
    v.note = v.note.empty() ? claim : v.note + "; " + claim;
  }
  return v;
}

std::string ok_results_problem(const std::string& point_dir, const PointRecord& record) {
  PointEvidence e;
  e.point_dir = point_dir;
  e.dir_problem = point_dir_problem(point_dir);
  e.record = record;
  if (e.dir_problem.empty()) e.ranks = inspect_rank_files(point_dir);
  PointView v = decide_point_status(e, std::nullopt);
  if (v.status == PointStatus::kOk) return "";
  return v.note.empty() ? "its files say " + to_string(v.status) : v.note;
}

}  // namespace sweepbench
