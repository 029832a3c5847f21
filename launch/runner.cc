#include "launch/runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "core/command_spec.h"
#include "core/config.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/process.h"
#include "core/settings.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "launch/shell.h"
#include "launch/slurm.h"
#include "layout/claim.h"
#include "layout/manifest.h"
#include "layout/paths.h"
#include "layout/point_status.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

// How a point's program ended, with what its exit code means to its workload: "exit code 23
// (cancelled)", "killed by SIGKILL".
std::string exit_meaning(const Workload& workload, const ProcessResult& r) {
  std::string text = r.describe();
  if (r.term_signal == 0 && r.exit_code != 0) {
    PointStatus s = workload.status_of_exit(r.exit_code);
    if (s != PointStatus::kFailed) text += " (" + to_string(s) + ")";
  }
  return text;
}

// Why a point ended as it did: its summary.json reason, else its program's last stderr line.
// When srun says another task than rank 0 failed first, that comes first: with
// --kill-on-bad-exit, rank 0 (which writes the summary) was ended by srun and knows only that.
// The end of a point's stderr log: its last MiB (srun's lines come at the end, and a program may
// print gigabytes first); empty when it cannot be read.
std::string stderr_tail(const std::string& point_dir) {
  try {
    if (auto text = read_file_tail((fs::path(point_dir) / kLogsDir / "stderr.txt").string(),
                                   size_t{1} << 20)) {
      return std::move(*text);
    }
  } catch (const Error&) {
    // An unreadable log says nothing.
  }
  return "";
}

std::string last_nonempty_line(const std::string& text) {
  std::string last;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!trim(line).empty()) last = trim(line);
  }
  return last;
}

std::string reason_of(const std::string& point_dir, const std::string& program,
                      const ProcessResult& r) {
  std::string err = stderr_tail(point_dir);
  std::string first;
  if (std::optional<SrunTaskFailure> f = first_srun_task_failure(err); f && !f->includes_rank0) {
    first =
        "srun: " + f->tasks + " on " + f->host + " ended first: " + first_line(f->what, 200) + "; ";
  }
  try {
    if (auto text = read_file_if_exists((fs::path(point_dir) / kSummaryFile).string())) {
      Value s = parse_yaml(*text, kSummaryFile);
      if (const Value* why = s.find("reason");
          why != nullptr && why->is_string() && !why->as_string().empty()) {
        return first + (first.empty() ? "" : "rank 0: ") + first_line(why->as_string(), 300);
      }
    }
  } catch (const Error&) {
    // A summary that cannot be read says nothing; fall back to the log.
  }
  std::string last;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    if (!trim(line).empty()) last = trim(line);
    // launch.setup ended the shell before the program started (with_setup_lines): the program
    // never ran, so the reason is that line's, not the program's.
    static const std::string kSetup = "sweepbench: launch.setup line ";
    if (line.rfind(kSetup, 0) == 0) return first_line(line.substr(12), 300);
  }
  std::string what = program + ": " + r.describe();
  if (r.term_signal == SIGKILL) what += " (the kernel's out-of-memory killer, or a user)";
  return first + (last.empty() ? what : what + ": " + first_line(last, 300));
}

// Appends `text` to a log; a log that cannot be written costs only the line.
void append_to_log(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  write_all(fd, text);
  ::close(fd);
}

// The first of the files a finished run must leave that is not in the point directory.
std::optional<std::string> missing_result(const std::string& point_dir,
                                          const std::vector<std::string>& files) {
  for (const std::string& name : files) {
    std::error_code ec;
    if (!fs::exists(fs::path(point_dir) / name, ec)) return name;
  }
  return std::nullopt;
}

Value manifest_fields(const PointRecord& r) {
  Value f = Value::map();
  f.set("status", Value::string(to_string(r.status)));
  f.set("reason", Value::string(r.reason));
  f.set("attempt", Value::integer(r.attempt));
  if (!r.slurm_job_id.empty()) f.set("slurm_job_id", Value::string(r.slurm_job_id));
  return f;
}

std::string seconds_text(double s) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << s;
  return out.str();
}

// The manifest's copy of each point's status, reason and attempt (docs/running.md), written in
// batches. Rewriting DIR/manifest.json twice a point made a sweep quadratic (issue 33: a
// 1,000-point manifest is 320 KB; 100,000 points would rewrite 32 MB 200,000 times). A batch goes
// out once a second has passed since the last and ten times the last write's duration, so the
// rewrites cost at most about a tenth of the run; and always when the run ends or is stopped.
// Each point's status.json, written as it happens, stays the record.
class ManifestBatch {
 public:
  explicit ManifestBatch(std::string out_dir) : out_dir_(std::move(out_dir)) {}
  ~ManifestBatch() {
    try {
      flush();
    } catch (const Error&) {
      // Already unwinding from another error, which says more.
    }
  }
  ManifestBatch(const ManifestBatch&) = delete;
  ManifestBatch& operator=(const ManifestBatch&) = delete;

  void set(const std::string& tag, const Value& fields) {
    pending_.erase(tag);
    pending_.emplace(tag, fields);
    if (std::chrono::steady_clock::now() >= next_) flush();
  }

  void flush() {
    if (pending_.empty()) return;
    auto t0 = std::chrono::steady_clock::now();
    update_manifest_points(out_dir_, pending_);
    pending_.clear();
    auto now = std::chrono::steady_clock::now();
    next_ = now + std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1),
                                                                 10 * (now - t0));
  }

 private:
  std::string out_dir_;
  std::map<std::string, Value> pending_;
  std::chrono::steady_clock::time_point next_{};
};

class SweepRun {
 public:
  SweepRun(const Plan& plan, const RunOptions& o, const LaunchSite& site, std::ostream& out)
      : plan_(plan), o_(o), site_(site), out_(out), root_(fs::absolute(o.out_dir)),
        manifest_(o.out_dir) {}

  RunReport run() {
    std::vector<const SweepPoint*> points = points_to_run(plan_, o_.only);
    // Every command is built first, so a point this site cannot run fails before any runs.
    std::vector<PointCommand> commands;
    for (const SweepPoint* p : points) {
      commands.push_back(point_command(
          p->config, site_, locate_program(workload_of(p->config)->program(), o_.programs),
          config_path(*p), point_dir(*p)));
    }
    if (!o_.dry_run) {
      // A missing runtime or image is an error before any point runs.
      for (size_t i = 0; i < points.size(); ++i) {
        check_container(commands[i].container, commands[i].container_context,
                        config_path(*points[i]));
      }
      load_records();
    }
    out_ << "# bench-sweep run: sweep " << plan_.sweep_name << ", "
         << plural(points.size(), "point")
         << (o_.dry_run ? " (dry run: nothing runs, nothing is written)" : "") << ", out "
         << o_.out_dir << "\n";
    if (!o_.dry_run) {
      install_stop_forwarding(StopPolicy::kRunner);
      // What a point leaves running stays our descendant, to be ended with the point.
      become_child_subreaper();
    }
    for (size_t i = 0; i < points.size(); ++i) {
      if (!o_.dry_run && received_stop_signal() != 0) break;
      run_point(*points[i], commands[i], i, points.size());
    }
    manifest_.flush();
    report_.stop_signal = o_.dry_run ? 0 : received_stop_signal();
    for (const SweepPoint* p : points) {
      PointStatus s = PointStatus::kPending;
      if (auto it = records_.find(p->tag); it != records_.end()) s = it->second.status;
      ++report_.counts[s];
    }
    print_summary(points.size());
    if (!o_.dry_run) maybe_requeue();
    return report_;
  }

 private:
  std::string point_dir(const SweepPoint& p) const { return (root_ / p.tag).string(); }
  std::string config_path(const SweepPoint& p) const {
    return (root_ / p.tag / kConfigFile).string();
  }

  void load_records() {
    for (const SweepPoint& p : plan_.points) {
      if (auto r = read_point_record(point_dir(p))) records_[p.tag] = *r;
    }
  }

  void row(const SweepPoint& p, const std::string& status, const std::string& note) {
    out_ << std::setw(7) << p.index << "  " << std::left << std::setw(10) << status << std::right
         << "  " << p.tag << (note.empty() ? "" : "  " + note) << "\n";
  }

  std::optional<std::string> pruned(const SweepPoint& p) const {
    if (o_.prune_after_oom.empty()) return std::nullopt;
    for (const SweepPoint& other : plan_.points) {
      auto it = records_.find(other.tag);
      if (it == records_.end() || it->second.status != PointStatus::kOom) continue;
      if (it->second.config_hash != other.config_hash) continue;
      if (auto why = prune_reason(p, other, o_.prune_after_oom)) return why;
    }
    return std::nullopt;
  }

  // A point whose status.json says running, whose runner is gone (we hold its claim), but whose
  // run had finished: its rank files are whole and its summary.json says how it ended. That is
  // the point's result, as bench-sweep status and bench-extract say (layout/point_status.cc);
  // it is recorded, not run again (issue 29, case 13). True when it was.
  bool recover_finished_run(const SweepPoint& p, const PointRecord& record) {
    if (record.status != PointStatus::kRunning || record.config_hash != p.config_hash) {
      return false;
    }
    RankFilesEvidence ranks = inspect_rank_files(point_dir(p));
    std::optional<PointStatus> run = parse_point_status(ranks.run_status);
    if (ranks.count == 0 || !ranks.problem.empty() || !run) return false;
    if (*run != PointStatus::kOk && !is_failure(*run)) return false;
    PointRecord r = record;
    r.status = *run;
    r.reason = "its runner died before recording the point" +
               (ranks.run_reason.empty() ? "" : "; " + ranks.run_reason);
    r.ended = utc_now_iso8601();
    finish(p, r);
    row(p, to_string(r.status), "recovered: " + r.reason);
    return true;
  }

  void run_point(const SweepPoint& p, const PointCommand& cmd, size_t i, size_t n) {
    std::optional<PointRecord> record;
    if (auto it = records_.find(p.tag); it != records_.end()) record = it->second;
    Decision d = decide(record, p.config_hash, o_.force, o_.retry_failed);
    std::optional<std::string> prune = pruned(p);
    if (o_.dry_run) {
      out_ << "# " << (i + 1) << "/" << n << " " << p.tag << " (index " << p.index << ")"
           << (prune ? ": would be skipped, " + *prune : "") << "\n";
      std::vector<std::string> line;
      if (!cmd.env.empty()) line.push_back("env");  // env(1): NAME=VALUE words, then the command
      for (const auto& [k, v] : cmd.env) line.push_back(k + "=" + v);
      line.insert(line.end(), cmd.argv.begin(), cmd.argv.end());
      out_ << shell_join(line) << "\n";
      if (config_at(p.config, "benchmark").as_string() == "command") {
        // What bench-command will run on rank 0, its placeholders replaced.
        RuntimeValues values;
        values.out = fs::absolute(point_dir(p)).lexically_normal().string();
        values.world_size = Settings::of(p.config).launch.ranks;
        ExpandedCommand program = expand_command(command_spec_of(p.config), p.config, values);
        std::vector<std::string> shown;
        if (!program.env.empty()) shown.push_back("env");
        for (const auto& [k, v] : program.env) shown.push_back(k + "=" + v);
        shown.insert(shown.end(), program.argv.begin(), program.argv.end());
        out_ << "#   rank 0 runs: " << shell_join(shown) << "\n";
      }
      return;
    }
    if (d == Decision::kKeepOk) {
      row(p, "ok", "kept: ok since " + record->ended + " (--force reruns it)");
      return;
    }
    if (d == Decision::kKeepFailure) {
      row(p, to_string(record->status), "kept: " + record->reason + " (--retry-failed reruns it)");
      return;
    }
    ClaimState busy;
    std::optional<PointClaim> claim =
        PointClaim::acquire(point_dir(p), &busy, slurm_claim_liveness());
    if (!claim) {
      // Another runner has it, or the processes of one that was killed still run: never a
      // second copy beside them.
      ++report_.busy_elsewhere;
      row(p, busy.orphaned ? "running (orphaned)" : "running",
          busy.orphaned ? busy.describe(point_dir(p))
                        : "elsewhere: " + busy.describe(point_dir(p)));
      return;
    }
    // Another runner may have finished it between our reading and our claim.
    record = read_point_record(point_dir(p));
    if (record) records_[p.tag] = *record;
    d = decide(record, p.config_hash, o_.force, o_.retry_failed);
    if (d != Decision::kRun) {
      row(p, to_string(record->status), "finished by another runner");
      return;
    }
    if (record && !o_.force && recover_finished_run(p, *record)) return;
    PointRecord r;
    r.config_hash = p.config_hash;
    r.attempt = (record ? record->attempt : 0) + 1;
    r.launcher = cmd.launcher;
    r.command = cmd.argv;
    r.host = this_host();
    r.pid = ::getpid();
    r.slurm_job_id = slurm_job_id_here();
    r.started = utc_now_iso8601();
    archive_previous_attempt(point_dir(p));
    if (prune) {
      r.status = PointStatus::kSkipped;
      r.reason = *prune;
      r.ended = r.started;
      finish(p, r);
      row(p, "skipped", *prune);
      return;
    }
    r.status = PointStatus::kRunning;
    write_point_record(point_dir(p), r);
    manifest_.set(p.tag, manifest_fields(r));
    out_ << "# " << (i + 1) << "/" << n << " running " << p.tag << " (" << cmd.launcher << ", "
         << plural(static_cast<size_t>(Settings::of(p.config).launch.ranks), "rank") << ")\n";
    out_.flush();

    fs::path logs = fs::path(point_dir(p)) / kLogsDir;
    make_directories(logs.string());
    auto t0 = std::chrono::steady_clock::now();
    ProcessResult result = run_process(cmd.argv, cmd.env, (logs / "stdout.txt").string(),
                                       (logs / "stderr.txt").string(), claim->fd());
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // No process of a point outlives it: what it left (a daemon, ranks whose launcher died) is
    // ended now, before the next point is measured beside it, and named in its log.
    std::vector<std::string> leftovers = end_leftover_processes();
    std::string ended;
    if (!leftovers.empty()) {
      ended = "ended " + plural(leftovers.size(), "process", "processes") +
              " the point left running: " + join(leftovers, ", ");
      append_to_log((logs / "stderr.txt").string(), "bench-sweep: " + ended + "\n");
    }
    ++report_.ran;
    r.exit_code = result.term_signal != 0 ? 128 + result.term_signal : result.exit_code;
    std::unique_ptr<Workload> workload = workload_of(p.config);
    std::string program = workload->program();
    r.status = status_from_exit(*workload, result.exit_code, result.term_signal);
    r.reason = r.status == PointStatus::kOk ? "" : reason_of(point_dir(p), program, result);
    if (r.status == PointStatus::kOk) {
      // Success is a result, not an exit code: a program that exits 0 having written nothing
      // (a wrapper script that swallows the failure, say) did not measure anything.
      if (std::optional<std::string> missing =
              missing_result(point_dir(p), workload->result_files(p.config))) {
        r.status = PointStatus::kFailed;
        r.reason = program + " exited 0 without results: no " + *missing;
        // What the launcher said, if anything (srun exits 0 when its tasks' launch failed:
        // "srun: error: task 0 launch failed: Unspecified error").
        if (std::string said = last_nonempty_line(stderr_tail(point_dir(p))); !said.empty()) {
          r.reason += "; stderr ends: " + first_line(said, 200);
        }
      }
    }
    if (int sig = received_stop_signal(); sig != 0 && r.status != PointStatus::kOk) {
      // The runner knows why its point stopped better than the point does.
      r.status = sig == SIGUSR1 ? PointStatus::kTimeout : PointStatus::kCancelled;
      r.reason =
          "bench-sweep received " + signal_name(sig) +
          (sig == SIGUSR1 ? " (the time limit is near)" : "") + "; " + program + ": " +
          exit_meaning(*workload, result) +
          (killed_by_second_stop() ? " by a second stop signal, before it could write its results"
                                   : "");
    }
    if (!ended.empty() && r.status != PointStatus::kOk) r.reason += "; " + ended;
    r.ended = utc_now_iso8601();
    finish(p, r);
    if (r.status == PointStatus::kTimeout) timed_out_.push_back(&p);
    row(p, to_string(r.status),
        seconds_text(r.seconds) + " s" + (r.reason.empty() ? "" : "; " + r.reason) +
            (!ended.empty() && r.status == PointStatus::kOk ? "; " + ended : ""));
  }

  // A point that reached the time limit runs again in a fresh run of this batch job: the job
  // requeues itself, at most slurm.max_requeue times (SLURM_RESTART_COUNT counts them).
  void maybe_requeue() {
    if (timed_out_.empty()) return;
    std::string job = slurm_job_id_here();
    const char* environment = std::getenv("ENVIRONMENT");  // sbatch sets BATCH
    if (job.empty() || environment == nullptr || std::string(environment) != "BATCH") return;
    std::int64_t max_requeue = Settings::of(timed_out_.front()->config).slurm.max_requeue;
    long restarts = slurm_restart_count_here();
    if (restarts >= max_requeue) {
      out_ << "# not requeued: job " << job << " ran " << (restarts + 1)
           << (restarts == 0 ? " time" : " times") << " (slurm.max_requeue = " << max_requeue
           << "); submit again to go on\n";
      return;
    }
    out_ << "# requeueing job " << job << " (run " << (restarts + 1) << " of at most "
         << (max_requeue + 1) << "): " << timed_out_.front()->tag
         << " reached the time limit and runs again\n";
    out_.flush();
    if (std::string err = slurm_requeue(job); !err.empty()) {
      out_ << "# requeue failed: " << err << " (is the job requeueable? sbatch --requeue)\n";
    }
  }

  void finish(const SweepPoint& p, const PointRecord& r) {
    write_point_record(point_dir(p), r);
    manifest_.set(p.tag, manifest_fields(r));
    records_[p.tag] = r;
  }

  void print_summary(size_t n) {
    out_ << "# summary:";
    for (PointStatus s : all_point_statuses()) {
      if (report_.counts[s] > 0) out_ << " " << to_string(s) << " " << report_.counts[s];
    }
    out_ << " (" << plural(n, "point") << ")\n";
    if (o_.dry_run) return;
    if (report_.stop_signal != 0) {
      out_ << "# STOPPED by " << signal_name(report_.stop_signal)
           << ": run the same command again to go on where it stopped\n";
    } else if (report_.all_ok()) {
      out_ << "# OK: every point is ok; results in " << o_.out_dir << "/<tag>/\n";
    } else {
      out_ << "# NOT ALL OK: see DIR/<tag>/status.json and DIR/<tag>/logs/ (DIR = " << o_.out_dir
           << "); `bench-sweep status --out " << o_.out_dir << "` lists them\n";
    }
  }

  const Plan& plan_;
  const RunOptions& o_;
  const LaunchSite& site_;
  std::ostream& out_;
  fs::path root_;
  ManifestBatch manifest_;
  std::map<std::string, PointRecord> records_;
  std::vector<const SweepPoint*> timed_out_;
  RunReport report_;
};

}  // namespace

Decision decide(const std::optional<PointRecord>& record, const std::string& config_hash,
                bool force, bool retry_failed) {
  if (!record || force) return Decision::kRun;
  if (record->status == PointStatus::kOk) {
    return record->config_hash == config_hash ? Decision::kKeepOk : Decision::kRun;
  }
  if (record->status == PointStatus::kFailed || record->status == PointStatus::kOom) {
    return retry_failed ? Decision::kRun : Decision::kKeepFailure;
  }
  return Decision::kRun;  // pending, running (its runner died), timeout, interrupted, skipped
}

std::optional<std::string> prune_reason(const SweepPoint& candidate, const SweepPoint& oom_point,
                                        const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    // find_path: an entry of params that a point does not set has no value to compare.
    const Value* mine_at = candidate.config.find_path(key);
    const Value* theirs_at = oom_point.config.find_path(key);
    if (mine_at == nullptr || theirs_at == nullptr) continue;
    const Value& mine = *mine_at;
    const Value& theirs = *theirs_at;
    if (!mine.is_number() || !theirs.is_number() || !(mine.as_float() > theirs.as_float()))
      continue;
    // Identical except for this key: give the candidate the smaller value and compare hashes
    // (derived keys, such as eval.micro_batch, follow).
    Value partial = loosen_derived_keys(candidate.config);
    partial.set_path(key, theirs);
    if (config_hash(resolve_config(partial)) != oom_point.config_hash) continue;
    return "pruned: " + oom_point.tag + " ran out of memory with " + key + "=" +
           display_value(theirs) + ", and this point differs only by the larger " + key + "=" +
           display_value(mine);
  }
  return std::nullopt;
}

PointStatus status_from_exit(const Workload& workload, int exit_code, int term_signal) {
  if (term_signal != 0) return PointStatus::kFailed;
  return workload.status_of_exit(exit_code);
}

bool RunReport::all_ok() const {
  for (const auto& [status, count] : counts) {
    if (status != PointStatus::kOk && count > 0) return false;
  }
  return stop_signal == 0;
}

std::vector<const SweepPoint*> points_to_run(const Plan& plan,
                                             const std::vector<std::string>& only) {
  std::vector<const SweepPoint*> selected = plan.selected_points();
  if (only.empty()) return selected;
  std::vector<const SweepPoint*> out;
  for (const std::string& want : only) {
    const SweepPoint* found = nullptr;
    bool numeric = !want.empty() && want.find_first_not_of("0123456789") == std::string::npos;
    for (const SweepPoint* p : selected) {
      if (p->tag == want || (numeric && std::to_string(p->index) == want)) found = p;
    }
    if (found == nullptr) {
      throw Error::input(Mark::in("--only " + want), "",
                         "no selected point has index or tag '" + want + "'",
                         "`bench-sweep plan SWEEP.yaml` lists the indices and tags");
    }
    bool seen = false;
    for (const SweepPoint* p : out) seen = seen || p == found;
    if (!seen) out.push_back(found);
  }
  std::sort(out.begin(), out.end(),
            [](const SweepPoint* a, const SweepPoint* b) { return a->index < b->index; });
  return out;
}

RunReport run_sweep(const Plan& plan, const RunOptions& options, const LaunchSite& site,
                    std::ostream& out) {
  return SweepRun(plan, options, site, out).run();
}

}  // namespace sweepbench
