#include "launch/runner.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "core/command_spec.h"
#include "core/config.h"
#include "core/error.h"
#include "core/exit_codes.h"
#include "core/fs.h"
#include "core/process.h"
#include "core/settings.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "launch/packing.h"
#include "launch/shell.h"
#include "launch/slurm.h"
#include "launch/status.h"
#include "layout/claim.h"
#include "layout/manifest.h"
#include "layout/paths.h"
#include "layout/point_status.h"
#include "sweep/plan_output.h"
#include "sweep/references.h"
#include "sweep/repeats_until.h"

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

// A point's summary.json, read without following links; nothing where it is missing or
// cannot be read (its reasons, references and repeats then go without it).
std::optional<Value> read_summary(const std::string& point_dir) {
  try {
    const std::string path = (fs::path(point_dir) / kSummaryFile).string();
    if (auto text = read_file_if_exists(path, kMaxSmallFile, Links::kRefuse)) {
      return parse_yaml(*text, path);
    }
  } catch (const Error&) {
    // Not JSON (a half-written or hostile file): as good as missing.
  }
  return std::nullopt;
}

std::string reason_of(const std::string& point_dir, const std::string& program,
                      const ProcessResult& r) {
  std::string err = stderr_tail(point_dir);
  std::string first;
  if (std::optional<SrunTaskFailure> f = first_srun_task_failure(err); f && !f->includes_rank0) {
    first =
        "srun: " + f->tasks + " on " + f->host + " ended first: " + first_line(f->what, 200) + "; ";
  }
  // A summary that cannot be read says nothing; the log is read then.
  if (std::optional<Value> summary = read_summary(point_dir)) {
    if (const Value* why = summary->find("reason");
        why != nullptr && why->is_string() && !why->as_string().empty()) {
      return first + (first.empty() ? "" : "rank 0: ") + first_line(why->as_string(), 300);
    }
  }
  const std::string last = last_said(err);
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
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
// batches. Rewriting DIR/manifest.json twice a point made a sweep quadratic (a
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
    next_ = now +
            std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1), 10 * (now - t0));
  }

 private:
  std::string out_dir_;
  std::map<std::string, Value> pending_;
  std::chrono::steady_clock::time_point next_{};
};

// How far a sweep is, for people: on a terminal one live line at the bottom (done, ok, failed,
// running, elapsed, an estimate of the time left), redrawn every second; in logs, the estimate
// on each point's "running" line. The estimate: the points left (running ones included) at the
// rate points have ended so far; points kept from earlier runs count as done and not in the rate.
class Progress {
 public:
  // `terminal`: where the live line goes (none: no live line).
  explicit Progress(std::ostream* terminal)
      : out_(terminal != nullptr ? *terminal : std::cout), live_(terminal != nullptr) {}

  void start(size_t total) {
    total_ = total;
    t0_ = std::chrono::steady_clock::now();
    draw();
  }
  // A point is done: ran and ended with `status`, or (nullopt) did not run.
  void done(std::optional<PointStatus> status) {
    ++done_;
    if (status) {
      ++ran_;
      ++counts_[*status];
    }
  }
  void tick(size_t running) {
    running_ = running;
    auto now = std::chrono::steady_clock::now();
    if (live_ && now - drawn_ >= std::chrono::seconds(1)) {
      clear();
      draw();
    }
  }
  // " [3/10 done, 0:32 elapsed, about 1:10 left]" once a point has run; "" before.
  std::string eta_text() const {
    if (ran_ == 0) return "";
    return " [" + std::to_string(done_) + "/" + std::to_string(total_) + " done, " +
           clock_text(elapsed()) + " elapsed, about " + clock_text(left()) + " left]";
  }
  void clear() {
    if (!live_ || !shown_) return;
    out_ << "\r\033[K";
    shown_ = false;
  }
  void draw() {
    if (!live_ || total_ == 0 || done_ >= total_) return;
    std::string text =
        "bench-sweep: " + std::to_string(done_) + "/" + std::to_string(total_) + " done";
    std::string counts;
    for (PointStatus s : all_point_statuses()) {
      if (auto it = counts_.find(s); it != counts_.end()) {
        counts += (counts.empty() ? "" : ", ") + to_string(s) + " " + std::to_string(it->second);
      }
    }
    if (!counts.empty()) text += " (" + counts + ")";
    text += ", " + std::to_string(running_) + " running, " + clock_text(elapsed()) + " elapsed";
    if (ran_ > 0) text += ", about " + clock_text(left()) + " left";
    if (size_t width = terminal_columns(); width > 1 && text.size() >= width) {
      text.resize(width - 1);
    }
    out_ << text;
    out_.flush();
    shown_ = true;
    drawn_ = std::chrono::steady_clock::now();
  }
  void finish() { clear(); }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  double left() const {
    return static_cast<double>(total_ - done_) * elapsed() / static_cast<double>(ran_);
  }
  static std::string clock_text(double seconds) {
    long s = static_cast<long>(seconds + 0.5);
    char buf[32];
    if (s >= 3600) {
      std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    } else {
      std::snprintf(buf, sizeof(buf), "%ld:%02ld", s / 60, s % 60);
    }
    return buf;
  }
  static size_t terminal_columns() {
    winsize w{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
    return 80;
  }

  std::ostream& out_;
  bool live_;
  size_t total_ = 0, done_ = 0, ran_ = 0, running_ = 0;
  std::map<PointStatus, size_t> counts_;
  std::chrono::steady_clock::time_point t0_, drawn_;
  bool shown_ = false;
};

bool shares_a_node(const Placement& a, const Placement& b) {
  for (const std::string& n : a.nodes) {
    if (std::find(b.nodes.begin(), b.nodes.end(), n) != b.nodes.end()) return true;
  }
  return false;
}

// The pool points share at --jobs: this machine, or the nodes of the allocation we run in (their
// names from scontrol, their CPUs from SLURM_JOB_CPUS_PER_NODE, their GPUs from
// SLURM_GPUS_ON_NODE). Unused at --jobs 1.
std::vector<PoolNode> pool_nodes(const RunOptions& o, const LaunchSite& site,
                                 ProcessRunner& processes) {
  if (o.jobs == 1) return {PoolNode{this_host(), {0}, {}}};
  if (!site.in_slurm_allocation) {
    return {PoolNode{this_host(), processes.usable_cpus(), processes.visible_gpus()}};
  }
  const char* list = std::getenv("SLURM_JOB_NODELIST");
  std::vector<std::string> names;
  if (list != nullptr && *list != '\0') {
    Captured c = capture_process({"scontrol", "show", "hostnames", list}, 30);
    if (c.ok()) {
      std::istringstream lines(c.out);
      for (std::string line; std::getline(lines, line);) {
        if (!trim(line).empty()) names.push_back(trim(line));
      }
    }
  }
  if (names.empty()) {
    throw Error::input(Mark::in("--jobs"), "",
                       "cannot tell this allocation's nodes (SLURM_JOB_NODELIST" +
                           std::string(list != nullptr ? "=" + std::string(list) : " unset") +
                           ", and `scontrol show hostnames` did not expand it)",
                       "run with --jobs 1 (the default), or where scontrol works");
  }
  const char* per_node = std::getenv("SLURM_JOB_CPUS_PER_NODE");
  std::vector<int> cpus =
      parse_slurm_cpus_per_node(per_node != nullptr ? per_node : "", names.size());
  if (cpus.empty()) cpus.assign(names.size(), std::max(1, site.cpus_on_node));
  int gpus = 0;
  if (const char* g = std::getenv("SLURM_GPUS_ON_NODE")) gpus = std::max(0, std::atoi(g));
  std::vector<PoolNode> nodes;
  for (size_t i = 0; i < names.size(); ++i) {
    PoolNode n;
    n.name = names[i];
    for (int c = 0; c < cpus[i]; ++c) n.cpus.push_back(c);
    for (int g = 0; g < gpus; ++g) n.gpus.push_back(std::to_string(g));
    nodes.push_back(std::move(n));
  }
  return nodes;
}

class RealProcesses : public ProcessRunner {
 public:
  std::vector<int> usable_cpus() override { return sweepbench::usable_cpus(); }
  std::vector<std::string> visible_gpus() override { return sweepbench::visible_gpus(); }
  int start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& stdout_path, const std::string& stderr_path, int inherit_fd,
            const std::vector<int>& cpus) override {
    return start_process(argv, env, stdout_path, stderr_path, inherit_fd, cpus);
  }
  std::optional<Ended> wait_for_any(const std::vector<int>& pids, double timeout_seconds) override {
    return sweepbench::wait_for_any(pids, timeout_seconds);
  }
  std::vector<std::string> end_leftovers(double grace_seconds,
                                         const LeftoverScope& scope) override {
    return end_leftover_processes(grace_seconds, scope);
  }
};

// The wait for the orphaned processes of a killed runner that still hold a point's claim: they
// got SIGUSR2 when their runner died and stop after their current step. The point is tried
// again every quarter second; a line says so at once and then every 30 seconds, with how long.
class OrphanWait {
 public:
  OrphanWait() : since_(std::chrono::steady_clock::now()) {}
  // Whether it is time to try the point again.
  bool due() const { return std::chrono::steady_clock::now() >= next_try_; }
  double waited() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - since_).count();
  }
  // Sleeps until the next try, a stop signal cutting it short.
  void sleep() const {
    while (!due() && received_stop_signal() == 0) ::usleep(20'000);
  }
  // The line to print after a failed try ("" between the 30-second reports).
  std::string line(const std::string& tag, const std::string& claim) {
    auto now = std::chrono::steady_clock::now();
    next_try_ = now + std::chrono::milliseconds(250);
    if (reported_ && now - reported_at_ < std::chrono::seconds(30)) return "";
    const long waited = std::lround(std::chrono::duration<double>(now - since_).count());
    reported_at_ = now;
    std::string text = reported_
                           ? "# still waiting for " + tag + " (" + std::to_string(waited) + " s)\n"
                           : "# waiting for " + tag + ": " + claim +
                                 "; it runs once they have ended (Ctrl-C stops the wait)\n";
    reported_ = true;
    return text;
  }

 private:
  std::chrono::steady_clock::time_point since_, next_try_{}, reported_at_{};
  bool reported_ = false;
};

class SweepRun {
 public:
  SweepRun(const Plan& plan, const RunOptions& o, const LaunchSite& site, std::ostream& out)
      : plan_(plan),
        o_(o),
        site_(site),
        out_(out),
        processes_(o.processes != nullptr ? *o.processes : real_processes()),
        root_(fs::absolute(o.out_dir)),
        manifest_(o.out_dir),
        pool_(pool_nodes(o, site, processes_), o.jobs),
        progress_(o.terminal) {}

  RunReport run() {
    std::vector<const SweepPoint*> points = points_to_run(plan_, o_.only);
    if (o_.interleave) {
      // Rounds: each repeat number in turn, the points in their order within it. A point's
      // earlier repeats still come before its later ones (repeats until precise reads them).
      std::stable_sort(points.begin(), points.end(), [](const SweepPoint* a, const SweepPoint* b) {
        return a->repeat < b->repeat;
      });
    }
    // Every command is built first, so a point this site cannot run fails before any runs.
    std::vector<PointCommand> commands;
    for (const SweepPoint* p : points) {
      commands.push_back(
          point_command(p->settings, p->config, site_,
                        locate_program(workload_of(p->settings)->program(), o_.programs),
                        config_path(*p), point_dir(*p)));
    }
    if (!o_.dry_run) {
      // A missing runtime or image is an error before any point runs.
      for (size_t i = 0; i < points.size(); ++i) {
        check_container(commands[i].container, commands[i].container_context,
                        config_path(*points[i]));
      }
    }
    // A dry run reads them too (reading writes nothing): it says which points a real run keeps
    // and prunes, and predicts the cost of the others only.
    load_records(points);
    out_ << "# bench-sweep run: sweep " << plan_.info().sweep_name << ", "
         << plural(points.size(), "point")
         << (o_.dry_run ? " (dry run: nothing runs, nothing is written)" : "") << ", out "
         << o_.out_dir << jobs_text() << "\n";
    print_predicted_time(points);
    if (o_.dry_run) {
      if (o_.warmup > 0) run_warmups(points);
      for (size_t i = 0; i < points.size(); ++i)
        dry_run_point(*points[i], commands[i], i, points.size());
    } else {
      install_stop_forwarding(StopPolicy::kRunner);
      // What a point leaves running stays our descendant, to be ended with the point.
      become_child_subreaper();
      if (o_.warmup > 0) run_warmups(points);
      run_points(points, commands);
    }
    manifest_.flush();
    report_.stop_signal = o_.dry_run ? 0 : received_stop_signal();
    if (!o_.dry_run) reread_busy_points();
    for (const SweepPoint* p : points) {
      PointStatus s = PointStatus::kPending;
      if (auto it = records_.find(p->tag); it != records_.end()) {
        s = it->second.status;
        if (s == PointStatus::kSkipped && limit_skipped_.count(p->tag) > 0) {
          ++report_.skipped_by_memory_limit;
        } else if (s == PointStatus::kSkipped && starts_with(it->second.reason, kPreciseReason)) {
          ++report_.skipped_as_precise;
        }
        if (s == PointStatus::kOk && it->second.reference == "miss") {
          report_.missed_reference.push_back(p->tag);
        }
        if (s == PointStatus::kOk && it->second.reference == "pass") ++report_.passed_reference;
      }
      ++report_.counts[s];
    }
    print_summary(points.size());
    if (!o_.dry_run) maybe_requeue();
    return report_;
  }

 private:
  // The predicted device-hours of the points this run will run (docs/running.md): the selected
  // ones that are not kept (ok, or a failure kept) nor over the sweep's memory_limit.
  void print_predicted_time(const std::vector<const SweepPoint*>& points) {
    std::set<std::string> selected;
    for (const SweepPoint* p : points) selected.insert(p->tag);
    auto runs = [&](const SweepPoint& p) {
      if (selected.count(p.tag) == 0) return false;
      auto it = records_.find(p.tag);
      const std::optional<PointRecord> record =
          it == records_.end() ? std::nullopt : std::optional<PointRecord>(it->second);
      return decide_here(p, record) == Decision::kRun &&
             !memory_limit_skip(p, record, plan_.info().memory_limit) && !pruned(p);
    };
    // A job array's task does not calibrate: that would read every point's results in every
    // task. `bench-sweep submit` printed the calibrated line once, and `plan --estimate
    // --calibrate OUT` prints it any time.
    const bool array_task = in_slurm_array_task();
    out_ << "# "
         << predicted_time_line(
                plan_, array_task ? std::vector<std::string>{} : calibration_dirs(o_.out_dir),
                runs, array_task ? "a job array's task reads no other point's results" : "")
         << "\n";
  }

  std::string point_dir(const SweepPoint& p) const { return (root_ / p.tag).string(); }

  // decide_point, with an ok point's results checked once a run (the predicted cost and the
  // point's start both ask; each check lists the directory and opens every rank file).
  // *rerun_why (optional): why an ok point runs again.
  Decision decide_here(const SweepPoint& p, const std::optional<PointRecord>& record,
                       std::string* rerun_why = nullptr) {
    return decide_point(point_dir(p), record, p.config_hash, o_.force, o_.retry_failed,
                        rerun_why, &results_checked_[p.tag]);
  }
  std::string config_path(const SweepPoint& p) const {
    return (root_ / p.tag / kConfigFile).string();
  }

  // The records of the points this run may run. --prune-after-oom also needs the others' (an
  // out-of-memory point prunes its larger neighbours); without it nothing else is read, so a
  // job array's task costs the shared file system its own points' reads, not every point's
  // (N tasks reading N records each), and another point's damaged status.json is that point's
  // business, not this run's.
  void load_records(const std::vector<const SweepPoint*>& selected) {
    auto load = [&](const SweepPoint& p) {
      if (auto r = read_point_record(point_dir(p))) records_[p.tag] = *r;
    };
    if (!o_.prune_after_oom.empty()) {
      for (const SweepPoint& p : plan_.points()) load(p);
    } else {
      for (const SweepPoint* p : selected) load(*p);
    }
    // A selected point this run runs again (--retry-failed, --force) prunes by what it does in
    // this run, not by its old record: until it has ended here its old out-of-memory end
    // prunes nothing (with --jobs 2 the larger points were pruned by an OOM that the retry,
    // running beside them, then turned ok).
    for (const SweepPoint* p : selected) {
      auto it = records_.find(p->tag);
      if (it == records_.end()) continue;
      if (decide(it->second, p->config_hash, o_.force, o_.retry_failed) == Decision::kRun) {
        to_rerun_.insert(p->tag);
      }
    }
  }

  // The points another runner held (busy_elsewhere): what their status.json says now, when
  // this run ends, rather than what it was when this run passed them (they may have ended ok
  // meanwhile). One still running elsewhere is counted running.
  void reread_busy_points() {
    for (const SweepPoint* p : busy_points_) {
      const std::string& tag = p->tag;
      std::optional<PointRecord> now;
      try {
        now = read_point_record(point_dir(*p));
      } catch (const Error&) {
        // Unreadable now: counted as still running there, as it was seen.
      }
      if (now && now->status != PointStatus::kRunning) {
        // Ended: as it ended, when it ran this plan's config; else it is still to run.
        if (now->config_hash == p->config_hash) {
          records_[tag] = *now;
        } else {
          records_.erase(tag);
        }
        continue;
      }
      // Running there still (or starting: its record not written yet).
      PointRecord running = now.value_or(PointRecord());
      running.status = PointStatus::kRunning;
      records_[tag] = running;
      ++report_.busy_elsewhere;
    }
  }

  void row(const SweepPoint& p, const std::string& status, const std::string& note) {
    std::ostringstream line;
    line << std::setw(7) << p.index << "  " << std::left << std::setw(10) << status << std::right
         << "  " << p.tag << (note.empty() ? "" : "  " + note) << "\n";
    say(line.str());
  }

  // A line of output, below the live progress line on a terminal.
  void say(const std::string& text) {
    progress_.clear();
    out_ << text;
    out_.flush();
    progress_.draw();
  }

  std::optional<std::string> pruned(const SweepPoint& p) const {
    if (o_.prune_after_oom.empty()) return std::nullopt;
    for (const SweepPoint& other : plan_.points()) {
      if (to_rerun_.count(other.tag) > 0) continue;  // its old end no longer counts
      auto it = records_.find(other.tag);
      if (it == records_.end() || it->second.status != PointStatus::kOom) continue;
      if (it->second.config_hash != other.config_hash) continue;
      if (auto why = prune_reason(p, other, o_.prune_after_oom)) return why;
    }
    return std::nullopt;
  }

  // A later repeat of a point whose earlier repeats give the sweep's repeats metric a mean
  // precise enough (PlanInfo::repeats_until, sweep/repeats_until.h): why it is skipped; nothing
  // otherwise.
  std::optional<std::string> precise_before(const SweepPoint& p) {
    const std::optional<RepeatsRule>& rule = plan_.info().repeats_until;
    if (!rule || p.repeat < rule->least) return std::nullopt;
    const size_t first = p.index - static_cast<size_t>(p.repeat);
    std::vector<double> values;
    std::string metric = rule->metric;
    for (size_t i = first; i < p.index && i < plan_.points().size(); ++i) {
      const SweepPoint& before = plan_.points()[i];
      // Ok by the runner's record of this config, not only by what summary.json says.
      std::optional<PointRecord> record = read_point_record(point_dir(before));
      if (!record || record->status != PointStatus::kOk ||
          record->config_hash != before.config_hash) {
        continue;
      }
      // An unreadable summary gives no value: that repeat counts for nothing.
      const std::optional<Value> summary = read_summary(point_dir(before));
      if (!summary) continue;
      bool lacks = false;
      if (std::optional<double> v = repeat_value(*summary, rule->metric, &metric, &lacks)) {
        values.push_back(*v);
      } else if (lacks) {
        warn_missing_repeats_metric(before, *summary, metric);
      }
    }
    return precise_reason(*rule, values, metric);
  }

  // Once a sweep: an ok repeat has no value of the metric repeats until precise reads, so the
  // point's repeats all run (a misspelt repeats.metric).
  void warn_missing_repeats_metric(const SweepPoint& p, const Value& summary,
                                   const std::string& metric) {
    if (warned_repeats_metric_) return;
    warned_repeats_metric_ = true;
    std::vector<std::string> has;
    if (const Value* metrics = summary.find("metrics"); metrics != nullptr && metrics->is_map()) {
      for (const Value::Entry& e : metrics->entries()) has.push_back(e.key);
    }
    const std::optional<RepeatsRule>& rule = plan_.info().repeats_until;
    say(rule->mark.str() + ": warning: repeats: " + p.tag + "'s summary.json has no number '" +
        metric + "', so its repeats cannot stop early and all run (" +
        (rule->metric.empty() ? std::string("the workload's headline") : "repeats.metric") +
        "; its metrics: " + (has.empty() ? std::string("none") : join(has, ", ")) + ")\n");
  }

  // A repeat skipped as precise before, still precise for the same reason: kept as it is (no new
  // attempt). True when kept.
  bool kept_as_precise(const SweepPoint& p, const std::optional<PointRecord>& record) {
    if (!record || record->status != PointStatus::kSkipped ||
        record->config_hash != p.config_hash || !starts_with(record->reason, kPreciseReason)) {
      return false;
    }
    std::optional<std::string> why = precise_before(p);
    if (!why || *why != record->reason) return false;
    row(p, "skipped", "kept: " + *why);
    return true;
  }

  std::optional<std::string> over_limit(const SweepPoint& p,
                                        const std::optional<PointRecord>& record) const {
    return memory_limit_skip(p, record, plan_.info().memory_limit);
  }

  // A point over the sweep's memory_limit (memory_limit_skip) is recorded as skipped, with the
  // prediction, before anything is claimed elsewhere, archived or placed; it depends on no other
  // point. One already recorded skipped for the same reason is left as it is. True when the
  // point is skipped.
  bool skipped_by_memory_limit(const SweepPoint& p, const std::optional<PointRecord>& record) {
    std::optional<std::string> why = over_limit(p, record);
    if (!why) return false;
    limit_skipped_.insert(p.tag);
    if (record && record->status == PointStatus::kSkipped && record->reason == *why &&
        record->config_hash == p.config_hash) {
      row(p, "skipped", "kept: " + *why);
      return true;
    }
    ClaimState busy;
    std::optional<PointClaim> claim =
        PointClaim::acquire(point_dir(p), &busy, slurm_claim_liveness());
    if (!claim) {
      limit_skipped_.erase(p.tag);
      busy_points_.push_back(&p);
      row(p, "running", "elsewhere: " + busy.describe(point_dir(p)));
      return true;
    }
    archive_settled_attempt(point_dir(p));
    PointRecord r;
    r.status = PointStatus::kSkipped;
    r.reason = *why;
    r.config_hash = p.config_hash;
    r.attempt = (record ? record->attempt : 0) + 1;
    r.host = this_host();
    r.started = r.ended = utc_now_iso8601();
    finish(p, r);
    row(p, "skipped", *why);
    return true;
  }

  // A point whose status.json says running, whose runner is gone (we hold its claim), but whose
  // run had finished: its rank files are whole and its summary.json says how it ended. That is
  // the point's result, as bench-sweep status and bench-extract say (layout/point_status.cc);
  // it is recorded, not run again. True when it was.
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
    std::string missed = check_references(p, r);
    finish(p, r);
    row(p, to_string(r.status),
        "recovered: " + r.reason + (missed.empty() ? "" : "; MISSED its reference: " + missed));
    return true;
  }

  // The point's command, and what a real run would do with it when that is not to run it: keep
  // it (as start_point decides) or skip it. The command is printed either way: --force runs it.
  void dry_run_point(const SweepPoint& p, const PointCommand& cmd, size_t i, size_t n) {
    std::optional<PointRecord> record;
    if (auto it = records_.find(p.tag); it != records_.end()) record = it->second;
    std::string rerun_why;
    const Decision d = decide_here(p, record, &rerun_why);
    std::string fate;
    if (!rerun_why.empty()) fate = "would run again: status.json says ok, but " + rerun_why;
    if (d == Decision::kKeepOk) {
      fate = "would be kept, ok since " + record->ended + " (--force reruns it)";
    } else if (d == Decision::kKeepFailure) {
      fate = "would be kept, " + to_string(record->status) + ": " + record->reason +
             " (--retry-failed reruns it)";
    } else if (std::optional<std::string> why = over_limit(p, record)) {
      fate = "would be skipped, " + *why;
    } else if (std::optional<std::string> prune = pruned(p)) {
      fate = "would be skipped, " + *prune;
    } else if (std::optional<std::string> precise = precise_before(p)) {
      fate = "would be skipped, " + *precise;
    }
    out_ << "# " << (i + 1) << "/" << n << " " << p.tag << " (index " << p.index << ")"
         << (fate.empty() ? "" : ": " + fate) << "\n";
    std::vector<std::string> line;
    if (!cmd.env.empty()) line.push_back("env");  // env(1): NAME=VALUE words, then the command
    for (const auto& [k, v] : cmd.env) line.push_back(k + "=" + v);
    line.insert(line.end(), cmd.argv.begin(), cmd.argv.end());
    out_ << shell_join(line) << "\n";
    if (p.settings.benchmark == "command") {
      // What bench-command will run on rank 0, its placeholders replaced.
      RuntimeValues values;
      values.out = fs::absolute(point_dir(p)).lexically_normal().string();
      values.world_size = p.settings.launch.ranks;
      ExpandedCommand program = expand_command(command_spec_of(p.config), p.config, values);
      std::vector<std::string> shown;
      if (!program.env.empty()) shown.push_back("env");
      for (const auto& [k, v] : program.env) shown.push_back(k + "=" + v);
      shown.insert(shown.end(), program.argv.begin(), program.argv.end());
      out_ << "#   rank 0 runs: " << shell_join(shown) << "\n";
    }
  }

  // A point that is running: its claim, its record so far, and where it runs.
  struct Running {
    const SweepPoint* point = nullptr;
    std::optional<PointClaim> claim;
    PointRecord record;
    Placement placement;
    int pid = -1;
    std::chrono::steady_clock::time_point t0;
    std::vector<std::string> beside;
  };

  // Whether several points may run at once here (--jobs other than 1): then each gets CPUs and
  // GPUs of its own and its record says which, and beside which points it ran.
  bool packing() const { return o_.jobs != 1; }

  // Inside an allocation the points' srun steps share its nodes; else this machine.
  bool in_allocation() const { return site_.in_slurm_allocation; }

  std::string jobs_text() const {
    if (!packing()) return "";
    return std::string(", ") +
           (o_.jobs == kJobsAuto ? "--jobs auto" : "--jobs " + std::to_string(o_.jobs)) + " (" +
           (in_allocation() ? plural(static_cast<size_t>(pool_.node_count()), "node") + ", " : "") +
           plural(static_cast<size_t>(pool_.cpu_count()), "CPU") +
           (pool_.gpu_count() > 0 ? ", " + plural(static_cast<size_t>(pool_.gpu_count()), "GPU")
                                  : "") +
           ")";
  }

  // The points in plan order, as many at once as --jobs and the machine allow; returns when
  // each has run (or was kept, skipped, busy elsewhere or unusable), or a stop signal has ended
  // the sweep and the running points have recorded how they ended.
  void run_points(const std::vector<const SweepPoint*>& points,
                  const std::vector<PointCommand>& commands) {
    const size_t n = points.size();
    size_t next = 0;
    std::vector<std::unique_ptr<Running>> running;
    // What the next point needs, worked out once however long it waits for room.
    std::optional<PointNeeds> next_needs;
    // The next point's claim is held by the processes of a runner that was killed: nothing
    // starts until they have ended (they stop after their current step), so that no point is
    // measured beside them and that point runs in this run, not a third one.
    std::optional<OrphanWait> orphan;
    progress_.start(n);
    while (true) {
      while (received_stop_signal() == 0 && next < n) {
        const SweepPoint& p = *points[next];
        if (!next_needs) {
          next_needs = point_needs(p.settings.launch, o_.jobs, pool_.node_count(),
                                   pool_.node_cpus(), pool_.node_gpus());
          // In an allocation only srun steps stay on the nodes they are given: a point that
          // runs through another launcher runs alone.
          if (in_allocation() && commands[next].launcher != "srun") next_needs->alone = true;
        }
        const PointNeeds needs = *next_needs;
        if (orphan && !orphan->due()) break;
        std::optional<Placement> placement = pool_.take(needs);
        if (!placement) break;  // it waits for a running point to end; the rest wait with it
        Started started = start_point(p, commands[next], next, n, needs, *placement);
        if (started.orphaned) {
          if (!orphan) orphan.emplace();
          if (orphan->waited() < o_.orphan_wait_seconds) {
            pool_.give_back(*placement);
            if (std::string line = orphan->line(p.tag, *started.orphaned); !line.empty()) {
              say(line);
            }
            break;
          }
          // Waited long enough (--orphan-wait): said, and the sweep goes on without it.
          busy_points_.push_back(&p);
          row(p, "running (orphaned)",
              *started.orphaned + "; not waited for past --orphan-wait " +
                  seconds_text(o_.orphan_wait_seconds) + " s: run again once they have ended");
          started = Started{};
        }
        orphan.reset();
        ++next;
        next_needs.reset();
        std::unique_ptr<Running> r = std::move(started.running);
        if (!r) {
          pool_.give_back(*placement);
          progress_.done(std::nullopt);
          continue;
        }
        for (std::unique_ptr<Running>& other : running) {
          if (!shares_a_node(other->placement, r->placement)) continue;
          other->beside.push_back(p.tag);
          r->beside.push_back(other->point->tag);
        }
        running.push_back(std::move(r));
      }
      if (running.empty()) {
        if (!orphan || received_stop_signal() != 0) break;
        orphan->sleep();
        continue;
      }
      std::vector<int> pids;
      for (const std::unique_ptr<Running>& r : running) pids.push_back(r->pid);
      std::optional<Ended> ended = processes_.wait_for_any(pids, orphan ? 0.25 : 1.0);
      progress_.tick(running.size());
      if (!ended) continue;
      auto it =
          std::find_if(running.begin(), running.end(),
                       [&](const std::unique_ptr<Running>& r) { return r->pid == ended->pid; });
      std::unique_ptr<Running> done = std::move(*it);
      running.erase(it);
      std::vector<int> others;
      for (const std::unique_ptr<Running>& r : running) others.push_back(r->pid);
      finish_point(*done, ended->result, others);
      pool_.give_back(done->placement);
    }
    progress_.finish();
  }

  // --warmup N: before any measured repeat, each point that is to run runs N times more, one at
  // a time on the whole machine, and these runs count for nothing: their results go to
  // OUT/.warmup/<tag>/ (a hidden directory, which no table reads) and no status.json, manifest or
  // attempt records them. A point's repeats share one warm-up (the first of them to run). A
  // warm-up that fails is said, and its point still runs.
  void run_warmups(const std::vector<const SweepPoint*>& points) {
    std::vector<const SweepPoint*> chosen;
    std::set<size_t> groups;  // a point's repeats: the index of its first repeat
    for (const SweepPoint* p : points) {
      std::optional<PointRecord> record;
      if (auto it = records_.find(p->tag); it != records_.end()) record = it->second;
      if (decide_here(*p, record) != Decision::kRun || over_limit(*p, record) ||
          precise_before(*p)) {
        continue;
      }
      if (groups.insert(p->index - static_cast<size_t>(p->repeat)).second) chosen.push_back(p);
    }
    if (chosen.empty()) return;
    if (o_.dry_run) {
      say("# warm-up: " + plural(chosen.size(), "point") + " would run " +
          plural(static_cast<size_t>(o_.warmup), "time") +
          " each before any measured repeat, left out of the results\n");
      return;
    }
    say("# warm-up: " + plural(chosen.size(), "point") + " run " +
        plural(static_cast<size_t>(o_.warmup), "time") +
        " each before any measured repeat; their results go to " + (root_ / kWarmupDir).string() +
        "/ and count for nothing\n");
    // Its files are removed before each warm-up: never through a link out of the tree.
    const fs::path top = root_ / kWarmupDir;
    if (fs::is_symlink(top) || (fs::exists(top) && !fs::is_directory(top))) {
      throw Error(ErrorKind::kIo, Mark::in(top.string()), "",
                  "is a link or not a directory; --warmup keeps its runs there",
                  "remove it, or run without --warmup");
    }
    for (const SweepPoint* p : chosen) {
      const fs::path dir = top / p->tag;
      for (int round = 1; round <= o_.warmup; ++round) {
        if (received_stop_signal() != 0) return;
        // A fresh directory each time, holding the point's config: a container binds the
        // directory it writes to, and the config must be inside.
        std::error_code ec;
        fs::remove_all(dir, ec);
        make_directories((dir / kLogsDir).string());
        const std::string config = (dir / kConfigFile).string();
        // The plan wrote it before the run began; one gone since is an error, never an empty
        // config (which would warm up the defaults' model instead of the point's).
        std::optional<std::string> text =
            read_file_if_exists(config_path(*p), kMaxSmallFile, Links::kRefuse);
        if (!text) throw io_error(config_path(*p), "cannot warm up its point", ENOENT);
        write_file_atomic(config, *text);
        PointCommand cmd = point_command(
            p->settings, p->config, site_,
            locate_program(workload_of(p->settings)->program(), o_.programs), config, dir.string());
        std::map<std::string, std::string> env = cmd.env;
        env["SWEEPBENCH_POINT"] = p->tag;
        const auto t0 = std::chrono::steady_clock::now();
        const int pid = processes_.start(cmd.argv, env, (dir / kLogsDir / "stdout.txt").string(),
                                         (dir / kLogsDir / "stderr.txt").string(), -1, {});
        std::optional<Ended> ended;
        while (!ended) ended = processes_.wait_for_any({pid}, 1.0);
        processes_.end_leftovers(kLeftoverGraceSeconds, {});
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const ProcessResult& r = ended->result;
        const bool ok = r.term_signal == 0 && r.exit_code == 0;
        say("# warm-up " + std::to_string(round) + "/" + std::to_string(o_.warmup) + " " + p->tag +
            ": " +
            (ok ? "ok" : r.describe() + " (" + (dir / kLogsDir / "stderr.txt").string() + ")") +
            ", " + seconds_text(seconds) + " s, left out\n");
      }
    }
  }

  // What start_point did: started the point (running), or not (nullptr: kept, busy elsewhere,
  // recovered, skipped, unusable, having said so), or found its claim held by the orphaned
  // processes of a runner that was killed (orphaned: the claim's description), to try again.
  struct Started {
    std::unique_ptr<Running> running;
    std::optional<std::string> orphaned;
  };

  // Decides, claims and starts a point. What sweepbench cannot use in the point's directory (a
  // claim that is a FIFO or a link, attempts/ linked out of the tree, a file that cannot be
  // written) costs that point, not the run: it is said, counted (exit 4) and nothing of the
  // point's is touched; the points already running go on.
  Started start_point(const SweepPoint& p, const PointCommand& planned, size_t i, size_t n,
                      const PointNeeds& needs, const Placement& placement) {
    try {
      return try_start_point(p, planned, i, n, needs, placement);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kIo) throw;
      const std::string what = e.what();  // "PATH: MESSAGE (HINT)"
      report_.unusable.push_back(what);
      row(p, "not run", what);
      return {};
    }
  }

  Started try_start_point(const SweepPoint& p, const PointCommand& planned, size_t i, size_t n,
                          const PointNeeds& needs, const Placement& placement) {
    std::optional<PointRecord> record;
    if (auto it = records_.find(p.tag); it != records_.end()) record = it->second;
    std::string rerun_why;
    Decision d = decide_here(p, record, &rerun_why);
    if (d == Decision::kKeepOk) {
      // The references may have changed since it ran: checked again, and recorded when the
      // point is free to write and still holds the run that was checked (another runner may
      // have run it again since this one read it).
      PointRecord kept = *record;
      std::string missed = check_references(p, kept);
      records_[p.tag] = kept;
      if (!same_checks(kept, *record)) {
        ClaimState busy;
        if (std::optional<PointClaim> claim =
                PointClaim::acquire(point_dir(p), &busy, slurm_claim_liveness())) {
          std::optional<PointRecord> now = read_point_record(point_dir(p));
          if (now && now->status == PointStatus::kOk && now->attempt == record->attempt &&
              now->ended == record->ended && now->config_hash == record->config_hash) {
            kept = *now;
            missed = check_references(p, kept);
            finish(p, kept);
          } else if (now) {
            records_[p.tag] = *now;
          }
        }
      }
      row(p, "ok",
          "kept: ok since " + record->ended + " (--force reruns it)" +
              (missed.empty() ? "" : "; MISSED its reference: " + missed));
      return {};
    }
    if (d == Decision::kKeepFailure) {
      row(p, to_string(record->status), "kept: " + record->reason + " (--retry-failed reruns it)");
      return {};
    }
    if (!rerun_why.empty()) {
      say("# " + p.tag + ": status.json says ok, but its results do not read back (" + rerun_why +
          "): it runs again\n");
    }
    if (skipped_by_memory_limit(p, record)) return {};
    if (kept_as_precise(p, record)) return {};
    ClaimState busy;
    std::optional<PointClaim> claim =
        PointClaim::acquire(point_dir(p), &busy, slurm_claim_liveness());
    if (!claim) {
      // Another runner has it, or the processes of one that was killed still run: never a
      // second copy beside them. An orphan's processes are waited for (they stop after their
      // step), then the point runs.
      if (busy.orphaned) {
        return {nullptr, "its runner " + busy.holder.describe() +
                             " is gone, but the point's processes still run (they stop after "
                             "their current step)"};
      }
      busy_points_.push_back(&p);
      row(p, "running", "elsewhere: " + busy.describe(point_dir(p)));
      return {};
    }
    // Another runner may have finished it between our reading and our claim.
    record = read_point_record(point_dir(p));
    if (record) records_[p.tag] = *record;
    d = decide_point(point_dir(p), record, p.config_hash, o_.force, o_.retry_failed);
    if (d != Decision::kRun) {
      row(p, to_string(record->status), "finished by another runner");
      return {};
    }
    if (record && !o_.force && recover_finished_run(p, *record)) return {};
    // Inside an allocation the step goes to the nodes it was given, with its CPUs a rank.
    PointCommand cmd = planned;
    if (packing() && in_allocation() && planned.launcher == "srun") {
      LaunchSite placed = site_;
      placed.step_nodes = placement.nodes;
      placed.step_cpus_per_rank = needs.cpus_per_rank;
      cmd = point_command(p.settings, p.config, placed,
                          locate_program(workload_of(p.settings)->program(), o_.programs),
                          config_path(p), point_dir(p));
    }
    auto run = std::make_unique<Running>();
    run->point = &p;
    PointRecord& r = run->record;
    r.config_hash = p.config_hash;
    r.attempt = (record ? record->attempt : 0) + 1;
    r.launcher = cmd.launcher;
    r.command = cmd.argv;
    r.host = this_host();
    r.pid = ::getpid();
    r.slurm_job_id = slurm_job_id_here();
    if (const char* partition = std::getenv("SLURM_JOB_PARTITION")) r.partition = partition;
    r.started = utc_now_iso8601();
    if (packing()) {
      if (in_allocation()) {
        r.nodes = join(placement.nodes, ",");
      } else {
        r.cpus = cpu_list_text(placement.cpus);
        r.gpus = join(placement.gpus, ",");
      }
      r.beside.emplace();
    }
    archive_settled_attempt(point_dir(p));
    // Past here the previous attempt has moved aside: a failure to start (a log that cannot be
    // created, no process to be had) is this attempt's end, recorded as such.
    try {
      // Checked when the point is about to start, so that a larger point queued while a smaller
      // one ran out of memory beside it is still skipped.
      std::optional<std::string> skip = pruned(p);
      if (!skip) skip = precise_before(p);
      if (skip) {
        r.status = PointStatus::kSkipped;
        r.reason = *skip;
        r.ended = r.started;
        finish(p, r);
        row(p, "skipped", *skip);
        return {};
      }
      r.status = PointStatus::kRunning;
      write_point_record(point_dir(p), r);
      manifest_.set(p.tag, manifest_fields(r));
      std::string where;
      if (packing() && in_allocation()) {
        where = ", on " + r.nodes + ", " + plural(static_cast<size_t>(needs.cpus_per_rank), "CPU") +
                " a rank";
      } else if (packing()) {
        where = ", CPUs " + r.cpus + (r.gpus.empty() ? "" : ", GPUs " + r.gpus);
      }
      say("# " + std::to_string(i + 1) + "/" + std::to_string(n) + " running " + p.tag + " (" +
          cmd.launcher + ", " + plural(static_cast<size_t>(p.settings.launch.ranks), "rank") +
          where + ")" + progress_.eta_text() + "\n");

      std::map<std::string, std::string> env = cmd.env;
      // Its processes carry the point's tag: what one leaves behind is known as its own.
      env["SWEEPBENCH_POINT"] = p.tag;
      if (packing()) {
        // Its share of the machine: the GPUs it asked for and no others (srun's --gpus-per-task
        // says which in an allocation), and as many compute threads a rank as it has CPUs
        // (bench-train reads it when launch.cpus_per_rank is null).
        if (!in_allocation() && pool_.gpu_count() > 0) env["CUDA_VISIBLE_DEVICES"] = r.gpus;
        env["SWEEPBENCH_CPUS_PER_RANK"] = std::to_string(needs.cpus_per_rank);
      }
      fs::path logs = fs::path(point_dir(p)) / kLogsDir;
      make_directories(logs.string());
      run->t0 = std::chrono::steady_clock::now();
      run->pid = processes_.start(
          cmd.argv, env, (logs / "stdout.txt").string(), (logs / "stderr.txt").string(),
          claim->fd(), packing() && !in_allocation() ? placement.cpus : std::vector<int>{});
      run->claim.emplace(std::move(*claim));
      run->placement = placement;
      return {std::move(run), std::nullopt};
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kIo) throw;
      r.status = PointStatus::kFailed;
      r.reason =
          "could not start: " + (e.mark().known() ? e.mark().str() + ": " : "") + e.message();
      r.ended = utc_now_iso8601();
      finish(p, r);
      row(p, "failed", r.reason);
      return {};
    }
  }

  // Records how a started point ended. `others`: the points still running beside it.
  void finish_point(Running& run, const ProcessResult& result, const std::vector<int>& others) {
    const SweepPoint& p = *run.point;
    PointRecord& r = run.record;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.t0).count();
    if (r.beside) *r.beside = run.beside;
    fs::path logs = fs::path(point_dir(p)) / kLogsDir;
    // No process of a point outlives it: what it left (a daemon, ranks whose launcher died) is
    // ended now, before the next point is measured beside it, and named in its log. With other
    // points running, only what carries its tag is its own; what is left unmarked is ended when
    // nothing else runs.
    LeftoverScope scope;
    if (packing()) scope = {others, "SWEEPBENCH_POINT=" + p.tag};
    std::vector<std::string> leftovers = processes_.end_leftovers(kLeftoverGraceSeconds, scope);
    std::string ended;
    if (!leftovers.empty()) {
      ended = "ended " + plural(leftovers.size(), "process", "processes") +
              " the point left running: " + join(leftovers, ", ");
      append_to_log((logs / "stderr.txt").string(), "bench-sweep: " + ended + "\n");
    }
    ++report_.ran;
    r.exit_code = result.term_signal != 0 ? 128 + result.term_signal : result.exit_code;
    std::unique_ptr<Workload> workload = workload_of(p.settings);
    std::string program = workload->program();
    r.status = status_from_exit(*workload, result.exit_code, result.term_signal);
    r.reason = r.status == PointStatus::kOk ? "" : reason_of(point_dir(p), program, result);
    if (r.status == PointStatus::kOk) {
      // Success is a result, not an exit code: a program that exits 0 having written nothing
      // (a wrapper script that swallows the failure, say) did not measure anything.
      if (std::optional<std::string> missing =
              missing_result(point_dir(p), workload->result_files(p.settings))) {
        r.status = PointStatus::kFailed;
        r.reason = program + " exited 0 without results: no " + *missing;
        // What the launcher said, if anything (srun exits 0 when its tasks' launch failed:
        // "srun: error: task 0 launch failed: Unspecified error").
        if (std::string said = last_said(stderr_tail(point_dir(p))); !said.empty()) {
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
    std::string missed = check_references(p, r);
    finish(p, r);
    if (r.status == PointStatus::kTimeout) timed_out_.push_back(&p);
    row(p, to_string(r.status),
        seconds_text(r.seconds) + " s" + (r.reason.empty() ? "" : "; " + r.reason) +
            (!ended.empty() && r.status == PointStatus::kOk ? "; " + ended : "") +
            (missed.empty() ? "" : "; MISSED its reference: " + missed));
    progress_.done(r.status);
    if (packing() && others.empty()) {
      // Nothing else runs: what earlier points left without their tag goes now.
      std::vector<std::string> unmarked = processes_.end_leftovers(kLeftoverGraceSeconds, {});
      if (!unmarked.empty()) {
        say("# ended " + plural(unmarked.size(), "process", "processes") +
            " that earlier points left running without their tag: " + join(unmarked, ", ") + "\n");
      }
    }
  }

  // A point that reached the time limit runs again in a fresh run of this batch job: the job
  // requeues itself, at most slurm.max_requeue times (SLURM_RESTART_COUNT counts them).
  void maybe_requeue() {
    if (timed_out_.empty()) return;
    std::string job = slurm_job_id_here();
    const char* environment = std::getenv("ENVIRONMENT");  // sbatch sets BATCH
    if (job.empty() || environment == nullptr || std::string(environment) != "BATCH") return;
    std::int64_t max_requeue = timed_out_.front()->settings.slurm.max_requeue;
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

  // The sweep's references against an ok point's summary.json (sweep/references.h): sets
  // r.references and r.reference ("pass", "miss", or "" when none applies). Returns what it
  // missed, for its row; "" otherwise.
  std::string check_references(const SweepPoint& p, PointRecord& r) const {
    r.references = Value();
    r.reference.clear();
    const std::vector<PerformanceReference>& all = plan_.info().references;
    if (all.empty() || r.status != PointStatus::kOk) return "";
    // An ok point without a readable summary: its references miss for want of the metrics.
    const Value summary = read_summary(point_dir(p)).value_or(Value::map());
    PointFacts facts = facts_of(p.scenario, p.config, summary, r.host, r.partition);
    std::vector<const PerformanceReference*> apply = references_for(all, facts);
    if (apply.empty()) return "";
    const SummaryMetrics measured = summary_metrics(summary);
    Value list = Value::list();
    std::vector<std::string> misses;
    for (const PerformanceReference* ref : apply) {
      ReferenceCheck c = check_reference(*ref, measured.metrics, measured.units);
      if (!c.pass) misses.push_back(describe_miss(c));
      list.items().push_back(c.to_value());
    }
    r.references = list;
    r.reference = misses.empty() ? "pass" : "miss";
    return join(misses, "; ");
  }

  // Whether two records hold the same verdicts on the same references (where each reference is
  // written aside: the sweep file's path as typed may differ between runs).
  static bool same_checks(const PointRecord& a, const PointRecord& b) {
    auto without_where = [](const Value& checks) {
      Value out = checks;
      if (out.is_list()) {
        for (Value& c : out.items()) {
          if (c.is_map()) c.set("where", Value::string(""));
        }
      }
      return out;
    };
    return a.reference == b.reference &&
           without_where(a.references) == without_where(b.references);
  }

  void finish(const SweepPoint& p, const PointRecord& r) {
    write_point_record(point_dir(p), r);
    manifest_.set(p.tag, manifest_fields(r));
    records_[p.tag] = r;
    to_rerun_.erase(p.tag);  // what it did in this run now prunes
  }

  void print_summary(size_t n) {
    out_ << "# summary:";
    for (PointStatus s : all_point_statuses()) {
      if (report_.counts[s] > 0) out_ << " " << to_string(s) << " " << report_.counts[s];
    }
    out_ << " (" << plural(n, "point") << ")\n";
    if (o_.dry_run) return;
    if (report_.busy_elsewhere > 0) {
      out_ << "# " << plural(report_.busy_elsewhere, "point")
           << " still running elsewhere: another runner holds "
           << (report_.busy_elsewhere == 1 ? "it" : "them") << "; `bench-sweep status --out "
           << o_.out_dir << "` follows them\n";
    }
    if (!report_.unusable.empty()) {
      out_ << "# " << plural(report_.unusable.size(), "point")
           << " not run: its directory holds what sweepbench cannot use (exit " << kExitIo
           << "): " << join(report_.unusable, "; ") << "\n";
    }
    if (!report_.missed_reference.empty() || report_.passed_reference > 0) {
      out_ << "# references: " << report_.passed_reference << " passed, "
           << report_.missed_reference.size() << " missed"
           << (report_.missed_reference.empty()
                   ? std::string()
                   : " (" + join(report_.missed_reference, ", ") + ")")
           << "\n";
    }
    if (report_.stop_signal != 0) {
      out_ << "# STOPPED by " << signal_name(report_.stop_signal)
           << ": run the same command again to go on where it stopped\n";
    } else if (report_.all_ok() && !report_.missed_reference.empty()) {
      out_ << "# MISSED REFERENCES: every point is ok, but "
           << plural(report_.missed_reference.size(), "point")
           << " missed a performance reference (exit " << kExitReferenceMissed
           << "); DIR/<tag>/status.json says which (DIR = " << o_.out_dir << ")\n";
    } else if (report_.all_ok()) {
      out_ << "# OK: every point is ok; results in " << o_.out_dir << "/<tag>/\n";
    } else {
      out_ << "# NOT ALL OK: see DIR/<tag>/status.json and DIR/<tag>/logs/ (DIR = " << o_.out_dir
           << "); `bench-sweep status --out " << o_.out_dir << "` lists them\n";
    }
  }

  const Plan& plan_;
  const RunOptions& o_;
  std::set<std::string> limit_skipped_;  // tags skipped by the sweep's memory_limit
  bool warned_repeats_metric_ = false;   // warn_missing_repeats_metric said it
  const LaunchSite& site_;
  std::ostream& out_;
  ProcessRunner& processes_;
  fs::path root_;
  ManifestBatch manifest_;
  ResourcePool pool_;
  Progress progress_;
  std::map<std::string, PointRecord> records_;
  // Each kept ok point's ok_results_problem, checked once (decide_here).
  std::map<std::string, std::optional<std::string>> results_checked_;
  // Selected points this run runs again whose old record must not prune (load_records), until
  // they end in this run.
  std::set<std::string> to_rerun_;
  // Points another runner held when this run reached them (reread_busy_points).
  std::vector<const SweepPoint*> busy_points_;
  std::vector<const SweepPoint*> timed_out_;
  RunReport report_;
};

}  // namespace

std::optional<std::string> memory_limit_skip(const SweepPoint& p,
                                             const std::optional<PointRecord>& record,
                                             const std::optional<MemoryLimit>& limit) {
  if (!limit || (record && record->status == PointStatus::kOk)) return std::nullopt;
  return over_memory_limit(p.config, *limit);
}

Decision decide_point(const std::string& point_dir, const std::optional<PointRecord>& record,
                      const std::string& config_hash, bool force, bool retry_failed,
                      std::string* rerun_why, std::optional<std::string>* checked) {
  Decision d = decide(record, config_hash, force, retry_failed);
  if (d != Decision::kKeepOk) return d;
  // Kept only when its results read back, as status and bench-extract read them: an ok point
  // whose rank file was deleted or cut was kept for ever ("kept: ok", "# OK") while every
  // table called it incomplete.
  std::optional<std::string> fresh;
  std::optional<std::string>& problem = checked != nullptr ? *checked : fresh;
  if (!problem) problem = ok_results_problem(point_dir, *record);
  if (problem->empty()) return d;
  if (rerun_why != nullptr) *rerun_why = *problem;
  return Decision::kRun;
}

bool will_run(const SweepPoint& p, const std::string& point_dir,
              const std::optional<PointRecord>& record, bool force, bool retry_failed,
              const std::optional<MemoryLimit>& limit) {
  if (decide_point(point_dir, record, p.config_hash, force, retry_failed) != Decision::kRun) {
    return false;
  }
  return !memory_limit_skip(p, record, limit);
}

bool in_slurm_array_task() {
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  return task != nullptr && *task != '\0';
}

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
    const size_t asked =
        status == PointStatus::kSkipped ? skipped_by_memory_limit + skipped_as_precise : 0;
    if (status != PointStatus::kOk && count > asked) return false;
  }
  return stop_signal == 0 && unusable.empty();
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

ProcessRunner& real_processes() {
  static RealProcesses processes;
  return processes;
}

RunReport run_sweep(const Plan& plan, const RunOptions& options, const LaunchSite& site,
                    std::ostream& out) {
  return SweepRun(plan, options, site, out).run();
}

}  // namespace sweepbench
