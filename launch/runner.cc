// `bench-sweep run`'s loop (runner.h): the points in order, as many at once as --jobs allows.
// What it asks of each point is point_book.h's, where each goes placement.h's, what it says
// run_output.h's, why a program ended point_end.h's.
#include "launch/runner.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>

#include "config/command_spec.h"
#include "launch/placement.h"
#include "launch/point_end.h"
#include "launch/shell.h"
#include "launch/slurm.h"
#include "launch/status.h"
#include "layout/claim.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "os/process.h"
#include "sweep/time_estimate.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

// The pool points share at --jobs: this machine, or the nodes of the allocation we run in
// (slurm.h's allocation_pool). Unused at --jobs 1.
std::vector<PoolNode> pool_nodes(const RunOptions& o, const LaunchSite& site,
                                 ProcessRunner& processes) {
  if (o.jobs == 1) return {PoolNode{this_host(), {0}, {}}};
  if (site.in_slurm_allocation) return allocation_pool(site.cpus_on_node);
  return {PoolNode{this_host(), processes.usable_cpus(), processes.visible_gpus()}};
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

// A point that is running: its claim, its record so far, and where it runs.
struct Running {
  const SweepPoint* point = nullptr;
  std::optional<PointClaim> claim;
  PointRecord record;
  Placement placement;
  PointNeeds needs;
  int pid = -1;
  std::chrono::steady_clock::time_point t0;
  std::vector<std::string> beside;
};

// What start_point did: started the point (running), or not (nullptr: kept, busy elsewhere,
// recovered, skipped, unusable, having said so), or found its claim held by the orphaned
// processes of a runner that was killed (orphaned: the claim's description), to try again.
struct Started {
  std::unique_ptr<Running> running;
  std::optional<std::string> orphaned;
};

// The run loop's state between points: the next point to start, what it needs (worked out once
// however long it waits for room), the points running, and the wait for a killed runner's
// orphaned processes. While they hold the next point's claim nothing starts (they stop after
// their current step), so that no point is measured beside them and that point runs in this
// run, not a third one.
struct Queue {
  Queue(const std::vector<const SweepPoint*>& p, const std::vector<PointCommand>& c)
      : points(p), commands(c) {}
  const std::vector<const SweepPoint*>& points;
  const std::vector<PointCommand>& commands;
  size_t next = 0;
  std::optional<PointNeeds> next_needs;
  std::vector<std::unique_ptr<Running>> running;
  std::optional<OrphanWait> orphan;
};

class SweepRun {
 public:
  SweepRun(const Plan& plan, const RunOptions& o, const LaunchSite& site, std::ostream& out)
      : plan_(plan),
        o_(o),
        site_(site),
        processes_(o.processes != nullptr ? *o.processes : real_processes()),
        output_(out, o.terminal),
        book_(plan, {o.out_dir, o.force, o.retry_failed, o.prune_after_oom}, output_),
        placer_(o.jobs, site, pool_nodes(o, site, processes_)) {}

  RunReport run() {
    std::vector<const SweepPoint*> points = ordered_points();
    std::vector<PointCommand> commands = build_commands(points);
    // A dry run reads them too (reading writes nothing): it says which points a real run keeps
    // and prunes, and predicts the cost of the others only.
    book_.load(points);
    output_.out() << "# bench-sweep run: sweep " << plan_.info().sweep_name << ", "
                  << plural(points.size(), "point")
                  << (o_.dry_run ? " (dry run: nothing runs, nothing is written)" : "") << ", out "
                  << o_.out_dir << placer_.jobs_text() << "\n";
    print_predicted_time(points);
    if (o_.dry_run) {
      if (o_.warmup > 0) run_warmups(points);
      for (size_t i = 0; i < points.size(); ++i) {
        dry_run_point(*points[i], commands[i], i, points.size());
      }
    } else {
      install_stop_forwarding(StopPolicy::kRunner);
      // What a point leaves running stays our descendant, to be ended with the point.
      become_child_subreaper();
      if (o_.warmup > 0) run_warmups(points);
      run_points(points, commands);
    }
    book_.flush();
    report_.stop_signal = o_.dry_run ? 0 : received_stop_signal();
    book_.tally(points, report_);
    output_.summary(report_, points.size(), o_.out_dir, o_.dry_run);
    if (!o_.dry_run) maybe_requeue();
    return report_;
  }

 private:
  std::vector<const SweepPoint*> ordered_points() const {
    std::vector<const SweepPoint*> points = points_to_run(plan_, o_.only);
    if (o_.interleave) {
      // Rounds: each repeat number in turn, the points in their order within it. A point's
      // earlier repeats still come before its later ones (repeats until precise reads them).
      std::stable_sort(points.begin(), points.end(), [](const SweepPoint* a, const SweepPoint* b) {
        return a->repeat < b->repeat;
      });
    }
    return points;
  }

  PointCommand command_of(const SweepPoint& p, const LaunchSite& site, const std::string& config,
                          const std::string& dir) const {
    return point_command(p.settings, p.config, site,
                         locate_program(workload_of(p.settings)->program(), o_.programs), config,
                         dir);
  }

  // Every command is built first, so a point this site cannot run fails before any runs.
  std::vector<PointCommand> build_commands(const std::vector<const SweepPoint*>& points) const {
    std::vector<PointCommand> commands;
    for (const SweepPoint* p : points) {
      commands.push_back(command_of(*p, site_, book_.config_path(*p), book_.dir(*p)));
    }
    if (!o_.dry_run) {
      // A missing runtime or image is an error before any point runs.
      for (size_t i = 0; i < points.size(); ++i) {
        check_container(commands[i].container, commands[i].container_context,
                        book_.config_path(*points[i]));
      }
    }
    return commands;
  }

  // The predicted device-hours of the points this run will run (docs/running.md): the selected
  // ones that are not kept (ok, or a failure kept) nor over the sweep's memory_limit.
  void print_predicted_time(const std::vector<const SweepPoint*>& points) {
    std::set<std::string> selected;
    for (const SweepPoint* p : points) selected.insert(p->tag);
    auto runs = [&](const SweepPoint& p) {
      if (selected.count(p.tag) == 0) return false;
      const std::optional<PointRecord> record = book_.record(p);
      return book_.decide(p, record) == Decision::kRun && !book_.over_limit(p, record) &&
             !book_.pruned(p);
    };
    // A job array's task does not calibrate: that would read every point's results in every
    // task. `bench-sweep submit` printed the calibrated line once, and `plan --estimate
    // --calibrate OUT` prints it any time.
    const bool array_task = in_slurm_array_task();
    output_.out() << "# "
                  << predicted_time_line(
                         plan_,
                         array_task ? std::vector<std::string>{} : calibration_dirs(o_.out_dir),
                         runs,
                         array_task ? "a job array's task reads no other point's results" : "")
                  << "\n";
  }

  // What a real run would do with the point when that is not to run it: keep it (as
  // start_point decides) or skip it; "" when it would run.
  std::string dry_run_fate(const SweepPoint& p) {
    const std::optional<PointRecord> record = book_.record(p);
    std::string rerun_why;
    const Decision d = book_.decide(p, record, &rerun_why);
    std::string fate;
    if (!rerun_why.empty()) fate = "would run again: status.json says ok, but " + rerun_why;
    if (d == Decision::kKeepOk) {
      fate = "would be kept, ok since " + record->ended + " (--force reruns it)";
    } else if (d == Decision::kKeepFailure) {
      fate = "would be kept, " + to_string(record->status) + ": " + record->reason +
             " (--retry-failed reruns it)";
    } else if (std::optional<std::string> why = book_.over_limit(p, record)) {
      fate = "would be skipped, " + *why;
    } else if (std::optional<std::string> prune = book_.pruned(p)) {
      fate = "would be skipped, " + *prune;
    } else if (std::optional<std::string> precise = book_.precise_before(p)) {
      fate = "would be skipped, " + *precise;
    }
    return fate;
  }

  // The point's command, and its fate (dry_run_fate). The command is printed either way:
  // --force runs it.
  void dry_run_point(const SweepPoint& p, const PointCommand& cmd, size_t i, size_t n) {
    const std::string fate = dry_run_fate(p);
    std::ostream& out = output_.out();
    out << "# " << (i + 1) << "/" << n << " " << p.tag << " (index " << p.index << ")"
        << (fate.empty() ? "" : ": " + fate) << "\n";
    std::vector<std::string> line;
    if (!cmd.env.empty()) line.push_back("env");  // env(1): NAME=VALUE words, then the command
    for (const auto& [k, v] : cmd.env) line.push_back(k + "=" + v);
    line.insert(line.end(), cmd.argv.begin(), cmd.argv.end());
    out << shell_join(line) << "\n";
    if (p.settings.benchmark == "command") {
      // What bench-command will run on rank 0, its placeholders replaced.
      RuntimeValues values;
      values.out = fs::absolute(book_.dir(p)).lexically_normal().string();
      values.world_size = p.settings.launch.ranks;
      ExpandedCommand program = expand_command(command_spec_of(p.config), p.config, values);
      std::vector<std::string> shown;
      if (!program.env.empty()) shown.push_back("env");
      for (const auto& [k, v] : program.env) shown.push_back(k + "=" + v);
      shown.insert(shown.end(), program.argv.begin(), program.argv.end());
      out << "#   rank 0 runs: " << shell_join(shown) << "\n";
    }
  }

  // The points in plan order, as many at once as --jobs and the machine allow; returns when
  // each has run (or was kept, skipped, busy elsewhere or unusable), or a stop signal has ended
  // the sweep and the running points have recorded how they ended.
  void run_points(const std::vector<const SweepPoint*>& points,
                  const std::vector<PointCommand>& commands) {
    Queue q(points, commands);
    output_.progress().start(points.size());
    while (true) {
      while (received_stop_signal() == 0 && q.next < points.size() && start_next(q)) {
      }
      if (q.running.empty()) {
        if (!q.orphan || received_stop_signal() != 0) break;
        q.orphan->sleep();
        continue;
      }
      wait_for_one(q);
    }
    output_.progress().finish();
  }

  // Starts (or settles) the next point when it fits; false when it must wait: for room on the
  // pool, or for a killed runner's orphaned processes to end.
  bool start_next(Queue& q) {
    const SweepPoint& p = *q.points[q.next];
    if (!q.next_needs) q.next_needs = placer_.needs(p.settings.launch, q.commands[q.next].launcher);
    const PointNeeds needs = *q.next_needs;
    if (q.orphan && !q.orphan->due()) return false;
    std::optional<Placement> placement = placer_.take(needs);
    if (!placement) return false;  // it waits for a running point to end; the rest wait with it
    Started started =
        start_point(p, q.commands[q.next], q.next, q.points.size(), needs, *placement);
    if (started.orphaned) {
      if (!q.orphan) q.orphan.emplace();
      if (q.orphan->waited() < o_.orphan_wait_seconds) {
        placer_.give_back(*placement);
        if (std::string line = q.orphan->line(p.tag, *started.orphaned); !line.empty()) {
          output_.say(line);
        }
        return false;
      }
      // Waited long enough (--orphan-wait): said, and the sweep goes on without it.
      book_.busy_elsewhere(p);
      output_.row(p, "running (orphaned)",
                  *started.orphaned + "; not waited for past --orphan-wait " +
                      seconds_text(o_.orphan_wait_seconds) + " s: run again once they have ended");
      started = Started{};
    }
    q.orphan.reset();
    ++q.next;
    q.next_needs.reset();
    std::unique_ptr<Running> r = std::move(started.running);
    if (!r) {
      placer_.give_back(*placement);
      output_.progress().done(std::nullopt);
      return true;
    }
    for (std::unique_ptr<Running>& other : q.running) {
      if (!shares_a_node(other->placement, r->placement)) continue;
      other->beside.push_back(p.tag);
      r->beside.push_back(other->point->tag);
    }
    q.running.push_back(std::move(r));
    return true;
  }

  // Waits a moment for a running point to end, and records it when one has.
  void wait_for_one(Queue& q) {
    std::vector<int> pids;
    for (const std::unique_ptr<Running>& r : q.running) pids.push_back(r->pid);
    std::optional<Ended> ended = processes_.wait_for_any(pids, q.orphan ? 0.25 : 1.0);
    output_.progress().tick(q.running.size());
    if (!ended) return;
    auto it = std::find_if(q.running.begin(), q.running.end(),
                           [&](const std::unique_ptr<Running>& r) { return r->pid == ended->pid; });
    std::unique_ptr<Running> done = std::move(*it);
    q.running.erase(it);
    std::vector<int> others;
    for (const std::unique_ptr<Running>& r : q.running) others.push_back(r->pid);
    finish_point(*done, ended->result, others);
    placer_.give_back(done->placement);
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
      const std::optional<PointRecord> record = book_.record(*p);
      if (book_.decide(*p, record) != Decision::kRun || book_.over_limit(*p, record) ||
          book_.precise_before(*p)) {
        continue;
      }
      if (groups.insert(p->index - static_cast<size_t>(p->repeat)).second) chosen.push_back(p);
    }
    if (chosen.empty()) return;
    if (o_.dry_run) {
      output_.say("# warm-up: " + plural(chosen.size(), "point") + " would run " +
                  plural(static_cast<size_t>(o_.warmup), "time") +
                  " each before any measured repeat, left out of the results\n");
      return;
    }
    const fs::path top = book_.root() / kWarmupDir;
    output_.say("# warm-up: " + plural(chosen.size(), "point") + " run " +
                plural(static_cast<size_t>(o_.warmup), "time") +
                " each before any measured repeat; their results go to " + top.string() +
                "/ and count for nothing\n");
    // Its files are removed before each warm-up: never through a link out of the tree.
    if (fs::is_symlink(top) || (fs::exists(top) && !fs::is_directory(top))) {
      throw Error(ErrorKind::kIo, Mark::in(top.string()), "",
                  "is a link or not a directory; --warmup keeps its runs there",
                  "remove it, or run without --warmup");
    }
    for (const SweepPoint* p : chosen) {
      for (int round = 1; round <= o_.warmup; ++round) {
        if (received_stop_signal() != 0) return;
        warm_up(*p, top / p->tag, round);
      }
    }
  }

  // One warm-up run of a point in `dir`, said and left out.
  void warm_up(const SweepPoint& p, const fs::path& dir, int round) {
    // A fresh directory each time, holding the point's config: a container binds the
    // directory it writes to, and the config must be inside.
    std::error_code ec;
    fs::remove_all(dir, ec);
    make_directories((dir / kLogsDir).string());
    const std::string config = (dir / kConfigFile).string();
    // The plan wrote it before the run began; one gone since is an error, never an empty
    // config (which would warm up the defaults' model instead of the point's).
    std::optional<std::string> text =
        read_file_if_exists(book_.config_path(p), kMaxSmallFile, Links::kRefuse);
    if (!text) throw io_error(book_.config_path(p), "cannot warm up its point", ENOENT);
    write_file_atomic(config, *text);
    PointCommand cmd = command_of(p, site_, config, dir.string());
    std::map<std::string, std::string> env = cmd.env;
    env["SWEEPBENCH_POINT"] = p.tag;
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
    output_.say("# warm-up " + std::to_string(round) + "/" + std::to_string(o_.warmup) + " " +
                p.tag + ": " +
                (ok ? "ok" : r.describe() + " (" + (dir / kLogsDir / "stderr.txt").string() + ")") +
                ", " + seconds_text(seconds) + " s, left out\n");
  }

  // Decides, claims and starts a point. What sweepbench cannot use in the point's directory (a
  // claim that is a FIFO or a link, attempts/ linked out of the tree, a file that cannot be
  // written) costs that point, not the run: it is said, counted (exit 4) and nothing of the
  // point's is touched; the points already running go on.
  Started start_point(const SweepPoint& p, const PointCommand& planned, size_t i, size_t n,
                      const PointNeeds& needs, const Placement& placement) {
    try {
      Claimed claimed = book_.claim(p);
      if (!claimed.claim) return {nullptr, claimed.orphaned};
      return start_claimed(p, planned, i, n, needs, placement, std::move(claimed));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kIo) throw;
      const std::string what = e.what();  // "PATH: MESSAGE (HINT)"
      report_.unusable.push_back(what);
      output_.row(p, "not run", what);
      return {};
    }
  }

  // A claimed point's new attempt: its record so far, and where it runs.
  std::unique_ptr<Running> new_attempt(const SweepPoint& p, const PointCommand& cmd,
                                       const std::optional<PointRecord>& last,
                                       const PointNeeds& needs, const Placement& placement) {
    auto run = std::make_unique<Running>();
    run->point = &p;
    run->needs = needs;
    run->placement = placement;
    PointRecord& r = run->record;
    r.config_hash = p.config_hash;
    r.attempt = (last ? last->attempt : 0) + 1;
    r.launcher = cmd.launcher;
    r.command = cmd.argv;
    r.host = this_host();
    r.pid = ::getpid();
    r.slurm_job_id = slurm_job_id_here();
    if (const char* partition = std::getenv("SLURM_JOB_PARTITION")) r.partition = partition;
    r.started = utc_now_iso8601();
    placer_.describe(r, placement);
    return run;
  }

  Started start_claimed(const SweepPoint& p, const PointCommand& planned, size_t i, size_t n,
                        const PointNeeds& needs, const Placement& placement, Claimed claimed) {
    PointCommand cmd = planned;
    if (std::optional<LaunchSite> placed = placer_.step_site(planned.launcher, placement, needs)) {
      cmd = command_of(p, *placed, book_.config_path(p), book_.dir(p));
    }
    std::unique_ptr<Running> run = new_attempt(p, cmd, claimed.last, needs, placement);
    PointRecord& r = run->record;
    archive_settled_attempt(book_.dir(p));
    // Past here the previous attempt has moved aside: a failure to start (a log that cannot be
    // created, no process to be had) is this attempt's end, recorded as such.
    try {
      // Checked when the point is about to start, so that a larger point queued while a smaller
      // one ran out of memory beside it is still skipped.
      if (std::optional<std::string> skip = book_.skip_at_start(p)) {
        r.status = PointStatus::kSkipped;
        r.reason = *skip;
        r.ended = r.started;
        book_.finish(p, r);
        output_.row(p, "skipped", *skip);
        return {};
      }
      r.status = PointStatus::kRunning;
      book_.write(p, r);
      output_.say("# " + std::to_string(i + 1) + "/" + std::to_string(n) + " running " + p.tag +
                  " (" + cmd.launcher + ", " +
                  plural(static_cast<size_t>(p.settings.launch.ranks), "rank") +
                  placer_.where(r, needs) + ")" + output_.progress().eta_text() + "\n");
      launch(*run, cmd, *claimed.claim);
      run->claim.emplace(std::move(*claimed.claim));
      return {std::move(run), std::nullopt};
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kIo) throw;
      r.status = PointStatus::kFailed;
      r.reason =
          "could not start: " + (e.mark().known() ? e.mark().str() + ": " : "") + e.message();
      r.ended = utc_now_iso8601();
      book_.finish(p, r);
      output_.row(p, "failed", r.reason);
      return {};
    }
  }

  // Starts the point's processes, its logs in DIR/<tag>/logs/.
  void launch(Running& run, const PointCommand& cmd, const PointClaim& claim) {
    const SweepPoint& p = *run.point;
    std::map<std::string, std::string> env = cmd.env;
    // Its processes carry the point's tag: what one leaves behind is known as its own.
    env["SWEEPBENCH_POINT"] = p.tag;
    placer_.add_env(env, run.record, run.needs);
    fs::path logs = fs::path(book_.dir(p)) / kLogsDir;
    make_directories(logs.string());
    run.t0 = std::chrono::steady_clock::now();
    run.pid = processes_.start(cmd.argv, env, (logs / "stdout.txt").string(),
                               (logs / "stderr.txt").string(), claim.fd(),
                               placer_.affinity(run.placement));
  }

  // No process of a point outlives it: what it left (a daemon, ranks whose launcher died) is
  // ended now, before the next point is measured beside it, and named in its log. With other
  // points running, only what carries its tag is its own; what is left unmarked is ended when
  // nothing else runs. Returns what was ended, in words; "" when nothing was.
  std::string end_leftovers_of(const SweepPoint& p, const std::vector<int>& others) {
    std::vector<std::string> leftovers =
        processes_.end_leftovers(kLeftoverGraceSeconds, placer_.leftover_scope(others, p.tag));
    if (leftovers.empty()) return "";
    const std::string ended = "ended " + plural(leftovers.size(), "process", "processes") +
                              " the point left running: " + join(leftovers, ", ");
    append_to_log((fs::path(book_.dir(p)) / kLogsDir / "stderr.txt").string(),
                  "bench-sweep: " + ended + "\n");
    return ended;
  }

  // The status and reason a point's end tells: its exit, the results it left, a stop signal.
  void judge_end(const SweepPoint& p, PointRecord& r, const ProcessResult& result) {
    r.exit_code = result.term_signal != 0 ? 128 + result.term_signal : result.exit_code;
    std::unique_ptr<Workload> workload = workload_of(p.settings);
    std::string program = workload->program();
    r.status = status_from_exit(*workload, result.exit_code, result.term_signal);
    r.reason = r.status == PointStatus::kOk ? "" : reason_of(book_.dir(p), program, result);
    if (r.status == PointStatus::kOk) {
      // Success is a result, not an exit code: a program that exits 0 having written nothing
      // (a wrapper script that swallows the failure, say) did not measure anything.
      if (std::optional<std::string> missing =
              missing_result(book_.dir(p), workload->result_files(p.settings))) {
        r.status = PointStatus::kFailed;
        r.reason = program + " exited 0 without results: no " + *missing;
        // What the launcher said, if anything (srun exits 0 when its tasks' launch failed:
        // "srun: error: task 0 launch failed: Unspecified error").
        if (std::string said = last_said(stderr_tail(book_.dir(p))); !said.empty()) {
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
  }

  // Records how a started point ended. `others`: the points still running beside it.
  void finish_point(Running& run, const ProcessResult& result, const std::vector<int>& others) {
    const SweepPoint& p = *run.point;
    PointRecord& r = run.record;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.t0).count();
    if (r.beside) *r.beside = run.beside;
    const std::string ended = end_leftovers_of(p, others);
    ++report_.ran;
    judge_end(p, r, result);
    if (!ended.empty() && r.status != PointStatus::kOk) r.reason += "; " + ended;
    r.ended = utc_now_iso8601();
    std::string missed = book_.check_references(p, r);
    book_.finish(p, r);
    if (r.status == PointStatus::kTimeout) timed_out_.push_back(&p);
    output_.row(p, to_string(r.status),
                seconds_text(r.seconds) + " s" + (r.reason.empty() ? "" : "; " + r.reason) +
                    (!ended.empty() && r.status == PointStatus::kOk ? "; " + ended : "") +
                    (missed.empty() ? "" : "; MISSED its reference: " + missed));
    output_.progress().done(r.status);
    if (placer_.packing() && others.empty()) {
      // Nothing else runs: what earlier points left without their tag goes now.
      std::vector<std::string> unmarked = processes_.end_leftovers(kLeftoverGraceSeconds, {});
      if (!unmarked.empty()) {
        output_.say("# ended " + plural(unmarked.size(), "process", "processes") +
                    " that earlier points left running without their tag: " + join(unmarked, ", ") +
                    "\n");
      }
    }
  }

  // A point that reached the time limit runs again in a fresh run of this batch job: the job
  // requeues itself, at most slurm.max_requeue times (SLURM_RESTART_COUNT counts them).
  void maybe_requeue() {
    if (timed_out_.empty()) return;
    std::ostream& out = output_.out();
    std::string job = slurm_job_id_here();
    const char* environment = std::getenv("ENVIRONMENT");  // sbatch sets BATCH
    if (job.empty() || environment == nullptr || std::string(environment) != "BATCH") return;
    std::int64_t max_requeue = timed_out_.front()->settings.slurm.max_requeue;
    long restarts = slurm_restart_count_here();
    if (restarts >= max_requeue) {
      out << "# not requeued: job " << job << " ran " << (restarts + 1)
          << (restarts == 0 ? " time" : " times") << " (slurm.max_requeue = " << max_requeue
          << "); submit again to go on\n";
      return;
    }
    out << "# requeueing job " << job << " (run " << (restarts + 1) << " of at most "
        << (max_requeue + 1) << "): " << timed_out_.front()->tag
        << " reached the time limit and runs again\n";
    out.flush();
    if (std::string err = slurm_requeue(job); !err.empty()) {
      out << "# requeue failed: " << err << " (is the job requeueable? sbatch --requeue)\n";
    }
  }

  const Plan& plan_;
  const RunOptions& o_;
  const LaunchSite& site_;
  ProcessRunner& processes_;
  RunOutput output_;
  PointBook book_;
  PointPlacer placer_;
  std::vector<const SweepPoint*> timed_out_;
  RunReport report_;
};

}  // namespace

PointStatus status_from_exit(const Workload& workload, int exit_code, int term_signal) {
  if (term_signal != 0) return PointStatus::kFailed;
  return workload.status_of_exit(exit_code);
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
