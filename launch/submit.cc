#include "launch/submit.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "config/config.h"
#include "config/settings.h"
#include "config/table.h"
#include "config/yaml_io.h"
#include "launch/point_book.h"
#include "launch/shell.h"
#include "launch/slurm.h"
#include "launch/status.h"
#include "layout/claim.h"
#include "layout/manifest.h"
#include "layout/paths.h"
#include "layout/point_record.h"
#include "os/fs.h"
#include "sweep/plan_output.h"
#include "sweep/time_estimate.h"
#include "text/error.h"
#include "text/redact.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

constexpr long kDefaultMaxArraySize = 1001;  // SLURM's own default

// sbatch splits an #SBATCH line at whitespace and strips quotes: a value must have neither.
void check_directive_value(const std::string& value, const std::string& key,
                           const std::string& sweep_path) {
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == ' ' || c == '"' || c == '\'' || c == '\\') {
      throw Error::input(Mark::in(sweep_path), key,
                         "the value '" + value + "' cannot go into an #SBATCH line: it holds " +
                             (c == ' '   ? std::string("a space")
                              : u < 0x20 ? std::string("a control character")
                                         : std::string("the character ") + c),
                         "SLURM names, times and sizes have no spaces or quotes; use one "
                         "without them");
    }
  }
}

// The task ids of an array of `count` tasks.
std::string ranges(size_t count) { return count == 1 ? "0" : "0-" + std::to_string(count - 1); }

std::string unique_script_path(const fs::path& dir, const std::string& stem) {
  for (int n = 1;; ++n) {
    fs::path p = dir / (stem + (n == 1 ? "" : "-" + std::to_string(n)) + ".sbatch");
    std::error_code ec;
    if (!fs::exists(p, ec)) return p.string();
  }
}

std::string compact_stamp() {
  std::string iso = utc_now_iso8601();  // 2026-11-22T06:40:00Z
  std::string out;
  for (char c : iso) {
    if (c != '-' && c != ':') out += c;
  }
  return out;
}

// Records a submitted job in the manifest (layout's ManifestJob): its points, and on each the
// array task it runs in.
void record_job(const std::string& out_dir, const std::string& job_id, const std::string& script,
                const ArrayJob& job) {
  ManifestJob entry;
  entry.job_id = job_id;
  entry.script = script;
  entry.submitted = utc_now_iso8601();
  for (size_t i = 0; i < job.points.size(); ++i) {
    entry.tags.push_back(job.points[i]->tag);
    entry.task_of[job.points[i]->tag] =
        job_id + "_" + std::to_string(i / std::max<size_t>(1, job.per_task));
  }
  add_manifest_job(out_dir, entry);
}

// The array task each point was last submitted as, from the manifest.
std::map<std::string, std::string> submitted_tasks(const std::string& out_dir) {
  std::map<std::string, std::string> out;
  std::optional<ManifestFile> manifest = read_manifest(out_dir);
  if (!manifest) return out;
  for (const ManifestPoint& p : Manifest::from_value(manifest->value).points) {
    if (!p.tag.empty() && !p.slurm_job.empty()) out[p.tag] = p.slurm_job;
  }
  return out;
}

}  // namespace

std::vector<std::string> sbatch_options(const SweepPoint& point, const std::string& sweep_name,
                                        const std::string& sweep_path) {
  const Settings& set = point.settings;
  std::vector<std::string> o;
  auto add = [&](const std::string& flag, const std::optional<std::string>& value,
                 const char* key) {
    if (value) {
      check_directive_value(*value, key, sweep_path);
      o.push_back(flag + "=" + *value);
    }
  };
  std::string job_name = set.slurm.job_name.value_or("sweepbench-" + sweep_name);
  check_directive_value(job_name, "slurm.job_name", sweep_path);
  o.push_back("--job-name=" + job_name);
  add("--partition", set.slurm.partition, "slurm.partition");
  add("--account", set.slurm.account, "slurm.account");
  add("--qos", set.slurm.qos, "slurm.qos");
  std::int64_t nodes = set.launch.nodes;
  std::int64_t ranks = set.launch.ranks;
  o.push_back("--nodes=" + std::to_string(nodes));
  o.push_back("--ntasks=" + std::to_string(ranks));
  o.push_back("--ntasks-per-node=" + std::to_string(ranks / std::max<std::int64_t>(1, nodes)));
  if (set.launch.cpus_per_rank) {
    o.push_back("--cpus-per-task=" + std::to_string(*set.launch.cpus_per_rank));
  }
  if (std::int64_t gpus = set.launch.gpus_per_rank; gpus > 0) {
    o.push_back("--gpus-per-task=" + std::to_string(gpus));
  }
  add("--mem", set.slurm.mem, "slurm.mem");
  add("--constraint", set.slurm.constraint, "slurm.constraint");
  if (set.slurm.exclusive) o.push_back("--exclusive");
  add("--time", set.slurm.time, "slurm.time");
  if (std::int64_t s = set.slurm.signal_seconds; s > 0) {
    o.push_back("--signal=B:USR1@" + std::to_string(s));
  }
  o.push_back("--requeue");
  o.push_back("--open-mode=append");  // a requeued task's log continues its first run's
  add("--mail-type", set.slurm.mail_type, "slurm.mail_type");
  add("--mail-user", set.slurm.mail_user, "slurm.mail_user");
  for (const std::string& arg : set.slurm.extra_args) {
    check_directive_value(arg, "slurm.extra_args", sweep_path);
    if (!starts_with(arg, "-")) {
      throw Error::input(Mark::in(sweep_path), "slurm.extra_args",
                         "'" + arg + "' is not an sbatch option",
                         "give options with their values joined, e.g. --gres=gpu:8");
    }
    o.push_back(arg);
  }
  return o;
}

std::vector<ArrayJob> group_into_arrays(const std::vector<const SweepPoint*>& points,
                                        const std::string& sweep_name,
                                        const std::string& sweep_path, long max_array_size,
                                        size_t per_task) {
  std::vector<ArrayJob> groups;
  std::map<std::vector<std::string>, size_t> index_of;
  for (const SweepPoint* p : points) {
    std::vector<std::string> options = sbatch_options(*p, sweep_name, sweep_path);
    auto [it, fresh] = index_of.emplace(options, groups.size());
    if (fresh) {
      ArrayJob group;
      group.options = options;
      groups.push_back(std::move(group));
    }
    groups[it->second].points.push_back(p);
  }
  per_task = std::max<size_t>(1, per_task);
  size_t chunk = static_cast<size_t>(std::max<long>(1, max_array_size));
  chunk = chunk > SIZE_MAX / per_task ? SIZE_MAX : chunk * per_task;
  std::vector<ArrayJob> arrays;
  for (const ArrayJob& g : groups) {
    for (size_t start = 0; start < g.points.size(); start += chunk) {
      size_t end = g.points.size() - start > chunk ? start + chunk : g.points.size();
      ArrayJob a;
      a.options = g.options;
      a.points.assign(g.points.begin() + static_cast<long>(start),
                      g.points.begin() + static_cast<long>(end));
      a.per_task = per_task;
      arrays.push_back(std::move(a));
    }
  }
  return arrays;
}

namespace {

// Sets "--flag=value" in `options` (replacing an earlier one) and returns its old value.
std::optional<std::string> set_option(std::vector<std::string>* options, const std::string& flag,
                                      const std::string& value) {
  for (std::string& o : *options) {
    if (starts_with(o, flag + "=")) {
      std::string old = o.substr(flag.size() + 1);
      o = flag + "=" + value;
      return old;
    }
  }
  options->push_back(flag + "=" + value);
  return std::nullopt;
}

std::optional<long> option_number(const std::vector<std::string>& options,
                                  const std::string& flag) {
  for (const std::string& o : options) {
    if (starts_with(o, flag + "=")) return std::strtol(o.c_str() + flag.size() + 1, nullptr, 10);
  }
  return std::nullopt;
}

}  // namespace

void pack_array(ArrayJob* job, size_t per_task, int jobs, std::optional<long> point_seconds) {
  // A task holds at most the job's points: --points-per-job 1000000 for 5 points asked for the
  // time of a million (--time=41666-16:00:00).
  job->per_task = std::clamp<size_t>(per_task, 1, std::max<size_t>(1, job->points.size()));
  const bool whole_nodes =
      std::find(job->options.begin(), job->options.end(), "--exclusive") != job->options.end();
  const bool multi_node = option_number(job->options, "--nodes").value_or(1) > 1;
  // Points at once in a task: --jobs N, or (auto) what whole nodes hold; one for multi-node
  // points, which have their nodes to themselves.
  int at_once = multi_node ? 1 : (jobs == kJobsAuto ? (whole_nodes ? kJobsAuto : 1) : jobs);
  if (!whole_nodes && at_once > 1) {
    // A shared job asks for `at_once` points' worth of tasks (each with the point's CPUs and
    // GPUs a task, as before).
    long ntasks = option_number(job->options, "--ntasks").value_or(1);
    long per_node = option_number(job->options, "--ntasks-per-node").value_or(ntasks);
    set_option(&job->options, "--ntasks", std::to_string(ntasks * at_once));
    set_option(&job->options, "--ntasks-per-node", std::to_string(per_node * at_once));
  }
  job->run_options = {"--jobs", at_once == kJobsAuto ? "auto" : std::to_string(at_once)};
  if (point_seconds) {
    // Rounds of points one after another; with whole nodes and auto, the points may well run
    // one at a time (a point as wide as the node): every point's time is kept.
    size_t rounds = at_once <= 1 ? job->per_task
                                 : (job->per_task + static_cast<size_t>(at_once) - 1) /
                                       static_cast<size_t>(at_once);
    set_option(&job->options, "--time",
               slurm_time_text(*point_seconds * static_cast<long>(std::max<size_t>(1, rounds))));
  }
}

size_t auto_points_per_job(double point_seconds, long limit_seconds, int at_once,
                           size_t group_size) {
  if (!(point_seconds > 0)) return std::max<size_t>(1, group_size);
  double fit = 0.5 * static_cast<double>(limit_seconds) * std::max(1, at_once) / point_seconds;
  size_t k = fit < 1 ? 1 : static_cast<size_t>(std::min<double>(fit, 1e9));
  return std::clamp<size_t>(k, 1, std::max<size_t>(1, group_size));
}

std::string array_script(const ArrayJob& job, const std::vector<std::string>& run_argv,
                         long max_parallel, const std::string& log_dir,
                         const std::string& header_comment) {
  std::string s = "#!/bin/bash\n" + header_comment;
  for (const std::string& o : job.options) s += "#SBATCH " + o + "\n";
  s += "#SBATCH --array=" + ranges(job.tasks()) +
       (max_parallel > 0 ? "%" + std::to_string(max_parallel) : "") + "\n";
  // sbatch expands %j, %u, %x... in the name: the directory's own '%' are written as "%%".
  std::string literal_dir;
  for (char c : log_dir) literal_dir += c == '%' ? std::string("%%") : std::string(1, c);
  s += "#SBATCH --output=" + (fs::path(literal_dir) / "%A_%a.out").string() + "\n";
  s += "set -eu\n";
  s += job.per_task > 1 ? "# Array task i runs the points of points[i] (tags, comma-separated); "
                          "`bench-sweep plan` lists the indices.\n"
                        : "# Array task i runs points[i]; `bench-sweep plan` lists the indices.\n";
  s += "points=(\n";
  for (size_t t = 0; t < job.tasks(); ++t) {
    std::vector<std::string> tags;
    std::vector<std::string> indices;
    for (size_t i = t * job.per_task; i < std::min(job.points.size(), (t + 1) * job.per_task);
         ++i) {
      tags.push_back(job.points[i]->tag);
      indices.push_back(std::to_string(job.points[i]->index));
    }
    s += "  " + shell_quote(join(tags, ",")) + "  # index" + (indices.size() > 1 ? "es " : " ") +
         join(indices, ",") + "\n";
  }
  s += ")\n";
  std::vector<std::string> argv = run_argv;
  argv.insert(argv.end(), job.run_options.begin(), job.run_options.end());
  s += "exec " + shell_join(argv) + " --only \"${points[$SLURM_ARRAY_TASK_ID]}\"\n";
  return s;
}

namespace {

// One submission: what it reads once and the steps share.
struct Submission {
  Submission(const Plan& p, const SubmitOptions& opts, std::ostream& stream)
      : plan(p), o(opts), out(stream), root(fs::absolute(opts.out_dir)) {}
  const Plan& plan;
  const SubmitOptions& o;
  std::ostream& out;
  fs::path root;
  // The tasks earlier submissions queued (tag -> job id) and what SLURM says of them.
  std::map<std::string, std::string> queued;
  SlurmJobStates live;
  // The seconds of the points that ran ok, by the resources they ask for (--points-per-job auto).
  std::map<std::vector<std::string>, std::vector<double>> measured;
  std::string stamp = compact_stamp();
};

// What earlier submissions queued, and whether SLURM still has it. A dry run reads (never
// writes) the directory too, to show what would be submitted.
void read_queued(Submission& s) {
  s.queued = submitted_tasks(s.root.string());
  std::vector<std::string> ids;
  for (const auto& [tag, task] : s.queued) ids.push_back(task);
  std::sort(ids.begin(), ids.end());
  ids.erase(
      std::unique(ids.begin(), ids.end(),
                  [](auto& a, auto& b) { return slurm_base_job_id(a) == slurm_base_job_id(b); }),
      ids.end());
  s.live = query_slurm_jobs(ids).value_or(SlurmJobStates{});
}

// The predicted device-hours of what this submits: the selected points not kept (ok, or a
// failure kept) nor over the sweep's memory_limit. Points already queued count too.
void print_predicted_time(const Submission& s) {
  std::set<std::string> selected;
  for (const SweepPoint* p : points_to_run(s.plan, s.o.only)) selected.insert(p->tag);
  auto runs = [&](const SweepPoint& p) {
    return selected.count(p.tag) != 0 &&
           will_run(p, (s.root / p.tag).string(), read_point_record((s.root / p.tag).string()),
                    s.o.force, s.o.retry_failed, s.plan.info().memory_limit);
  };
  s.out << "# " << predicted_time_line(s.plan, calibration_dirs(s.o.out_dir), runs) << "\n";
}

// Predicted over the sweep's memory_limit: recorded as skipped, with the prediction, and never
// queued (the array task's runner would skip it too, after the wait), as bench-sweep run does:
// under the point's claim, its earlier attempt archived; a point that ran ok is never skipped
// (it fitted), and one skipped for the same reason is left as it is. True when it is not
// submitted for it.
bool settled_by_memory_limit(const Submission& s, const SweepPoint& p,
                             const std::optional<PointRecord>& record) {
  std::optional<std::string> why = memory_limit_skip(p, record, s.plan.info().memory_limit);
  if (!why) return false;
  const std::string dir = (s.root / p.tag).string();
  if (record && record->status == PointStatus::kSkipped && record->reason == *why &&
      record->config_hash == p.config_hash) {
    s.out << "#   kept " << p.tag << ": skipped, " << *why << "\n";
    return true;
  }
  if (s.o.dry_run) {
    s.out << "#   skipped " << p.tag << ": " << *why << "\n";
    return true;
  }
  make_directories(dir);
  ClaimState busy;
  std::optional<PointClaim> claim = PointClaim::acquire(dir, &busy);
  if (!claim) {
    s.out << "#   left " << p.tag << ": " << busy.describe(dir) << "\n";
    return true;
  }
  archive_settled_attempt(dir);
  const PointRecord r = memory_limit_record(p, record, *why);
  write_point_record(dir, r);
  s.out << "#   skipped " << p.tag << ": " << *why << "\n";
  return true;
}

// Whether the point is submitted: not kept, not queued already, not over the memory limit. Said
// when it is not. Notes its time when it ran ok (--points-per-job auto).
bool to_submit(Submission& s, const SweepPoint& p) {
  const std::string dir = (s.root / p.tag).string();
  std::optional<PointRecord> record = read_point_record(dir);
  if (s.o.points_per_job == 0 && record && record->status == PointStatus::kOk &&
      record->seconds > 0) {
    s.measured[sbatch_options(p, s.plan.info().sweep_name, s.plan.info().sweep_path)].push_back(
        record->seconds);
  }
  std::string rerun_why;
  Decision d = decide_point(dir, record, p.config_hash, s.o.force, s.o.retry_failed, &rerun_why);
  if (!rerun_why.empty()) {
    s.out << "#   " << p.tag << ": status.json says ok, but " << rerun_why << ": submitted again\n";
  }
  if (d == Decision::kKeepOk) {
    s.out << "#   kept " << p.tag << ": ok (--force submits it again)\n";
    return false;
  }
  if (d == Decision::kKeepFailure) {
    s.out << "#   kept " << p.tag << ": " << to_string(record->status)
          << " (--retry-failed submits it again)\n";
    return false;
  }
  if (auto it = s.queued.find(p.tag); it != s.queued.end()) {
    auto state = s.live.find(it->second);
    if (state != s.live.end() && is_live_slurm_state(state->second.state)) {
      s.out << "#   left " << p.tag << ": already " << to_lower(state->second.state) << " as job "
            << it->second << "\n";
      return false;
    }
  }
  return !settled_by_memory_limit(s, p, record);
}

// The largest array SLURM takes: --max-array-size, else scontrol's MaxArraySize.
long max_array_size(const Submission& s) {
  if (s.o.max_array_size > 0) return s.o.max_array_size;
  std::optional<long> asked = slurm_max_array_size();
  if (!asked) {
    s.out << "# scontrol did not answer: MaxArraySize " << kDefaultMaxArraySize << " assumed\n";
  }
  return asked.value_or(kDefaultMaxArraySize);
}

// --points-per-job auto for a group of points asking for the same resources: from the median
// time its points took and the time limit, half of it filled. Sets *point_seconds to the job's
// time a point when no slurm.time gives one.
size_t auto_per_task(Submission& s, const ArrayJob& group, std::optional<long>* point_seconds) {
  const SlurmSettings& first = group.points.front()->settings.slurm;
  std::vector<double>& times = s.measured[group.options];
  if (times.empty()) {
    throw Error::input(Mark::in("--points-per-job auto"), "",
                       "no point asking for " + join(group.options, " ") +
                           " has run yet, so there is no time a point to pack them by",
                       "run a few first (bench-sweep submit --only 0,1, or bench-sweep run), or "
                       "give --points-per-job a number");
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  std::optional<long> limit = *point_seconds;
  std::string limit_from = "slurm.time";
  if (!limit) {
    limit = slurm_partition_max_time(first.partition.value_or(""));
    limit_from = "the partition's MaxTime";
  }
  if (!limit) {
    limit = 3600;
    limit_from = "an hour (no time limit known)";
  }
  int at_once = s.o.jobs == kJobsAuto ? 1 : s.o.jobs;
  size_t per_task = auto_points_per_job(median, *limit, at_once, group.points.size());
  s.out << "# --points-per-job auto: " << per_task << " points a job: " << times.size()
        << " ran in " << human_number(median) << " s each (median), " << at_once
        << " at once, to fill half of " << slurm_time_text(*limit) << " (" << limit_from << ")\n";
  // The job's time limit: the whole limit for its points, as they were measured.
  if (!*point_seconds) *point_seconds = static_cast<long>(median * 2 + 60);
  return per_task;
}

// The points cut into array jobs: a point a task, or packed (--points-per-job, --jobs), one
// group of points asking for the same resources at a time.
std::vector<ArrayJob> make_arrays(Submission& s, const std::vector<const SweepPoint*>& points,
                                  long max_array) {
  const PlanInfo& info = s.plan.info();
  if (s.o.points_per_job == 1 && s.o.jobs == 1) {
    return group_into_arrays(points, info.sweep_name, info.sweep_path, max_array);
  }
  std::vector<ArrayJob> arrays;
  for (ArrayJob& group : group_into_arrays(points, info.sweep_name, info.sweep_path,
                                           std::numeric_limits<long>::max())) {
    const SlurmSettings& first = group.points.front()->settings.slurm;
    std::optional<long> point_seconds;
    if (first.time) point_seconds = slurm_time_seconds(*first.time);
    size_t per_task = static_cast<size_t>(std::max(0L, s.o.points_per_job));
    if (per_task == 0) per_task = auto_per_task(s, group, &point_seconds);
    for (ArrayJob& a :
         group_into_arrays(group.points, info.sweep_name, info.sweep_path, max_array, per_task)) {
      pack_array(&a, per_task, s.o.jobs, point_seconds);
      arrays.push_back(std::move(a));
    }
  }
  return arrays;
}

// Writes and submits each array's script (a dry run prints them).
void submit_arrays(Submission& s, const std::vector<ArrayJob>& arrays, SubmitReport& report) {
  const fs::path submit_dir = s.root / kSubmitDir;
  const fs::path log_dir = submit_dir / kLogsDir;
  check_directive_value(log_dir.string(), "--out", s.o.out_dir);  // it goes into --output
  std::vector<std::string> run_argv = {s.o.bench_sweep, "run", s.o.sweep_path, "--out",
                                       s.root.string()};
  run_argv.insert(run_argv.end(), s.o.run_args.begin(), s.o.run_args.end());
  if (s.o.force) run_argv.push_back("--force");
  if (s.o.retry_failed) run_argv.push_back("--retry-failed");
  if (!s.o.dry_run) make_directories(log_dir.string());
  for (size_t g = 0; g < arrays.size(); ++g) {
    const ArrayJob& job = arrays[g];
    const std::string stem = s.stamp + "-" + std::to_string(g + 1);
    std::string path = s.o.dry_run ? (submit_dir / (stem + ".sbatch")).string()
                                   : unique_script_path(submit_dir, stem);
    std::string header = "# Written by `bench-sweep submit` at " + utc_now_iso8601() + ": sweep " +
                         s.plan.info().sweep_name + ", " + plural(job.points.size(), "point") +
                         " asking for the same resources, " +
                         (job.per_task > 1 ? std::to_string(job.per_task) + " an array task"
                                           : "one array task each") +
                         ".\n# `sbatch " + path +
                         "` submits it again; points already ok are kept.\n";
    std::string script = array_script(job, run_argv, s.o.max_parallel, log_dir.string(), header);
    s.out << "# array " << (g + 1) << "/" << arrays.size() << ": "
          << plural(job.points.size(), "point")
          << (job.per_task > 1
                  ? " in " + plural(job.tasks(), "task") + " of " + std::to_string(job.per_task) +
                        " (bench-sweep run " + join(job.run_options, " ") + ")"
                  : "")
          << ", " << join(job.options, " ") << "\n";
    if (s.o.dry_run) {
      s.out << "# ---- " << path << " ----\n" << script << "# ---- end ----\n";
      s.out << shell_join({"sbatch", "--parsable", path}) << "\n";
      continue;
    }
    write_file_atomic(path, script);
    std::string id = slurm_submit(path);
    record_job(s.root.string(), id, path, job);
    report.job_ids.push_back(id);
    report.submitted_points += job.points.size();
    s.out << "submitted job " << id << " (array of " << job.tasks() << ", script " << path << ")\n";
  }
}

// --history: one job after every array ingests the sweep: the tasks never touch the store.
void submit_history_job(const Submission& s, const std::vector<ArrayJob>& arrays,
                        const SubmitReport& report) {
  const fs::path submit_dir = s.root / kSubmitDir;
  std::vector<std::string> shared;
  for (const std::string& option : arrays.front().options) {
    for (const char* kept : {"--partition=", "--account=", "--qos="}) {
      if (option.rfind(kept, 0) == 0) shared.push_back(option);
    }
  }
  std::string path = s.o.dry_run ? (submit_dir / (s.stamp + "-history.sbatch")).string()
                                 : unique_script_path(submit_dir, s.stamp + "-history");
  std::string header = "# Written by `bench-sweep submit` at " + utc_now_iso8601() +
                       ": records the finished points of sweep " + s.plan.info().sweep_name +
                       " in the history store once its arrays have ended (docs/history.md).\n";
  std::vector<std::string> ids = report.job_ids;
  if (s.o.dry_run) ids = {"JOBID"};
  std::string script =
      history_job_script(history_ingest_argv(s.o.bench_sweep, s.root.string(), s.o.history), ids,
                         shared, (submit_dir / kLogsDir).string(), header);
  if (s.o.dry_run) {
    s.out << "# ---- " << path << " ----\n" << script << "# ---- end ----\n";
    return;
  }
  write_file_atomic(path, script);
  std::string id = slurm_submit(path);
  s.out << "submitted job " << id << " (after the arrays: records the sweep in "
        << redacted_url(s.o.history.store) << ", script " << path << ")\n";
}

}  // namespace

SubmitReport submit_sweep(const Plan& plan, const SubmitOptions& o, std::ostream& out) {
  Submission s(plan, o, out);
  read_queued(s);
  out << "# bench-sweep submit: sweep " << plan.info().sweep_name << ", out " << o.out_dir
      << (o.dry_run ? " (dry run: nothing is written or submitted)" : "") << "\n";
  print_predicted_time(s);
  std::vector<const SweepPoint*> points;
  for (const SweepPoint* p : points_to_run(plan, o.only)) {
    if (to_submit(s, *p)) points.push_back(p);
  }
  SubmitReport report;
  if (points.empty()) {
    out << "# nothing to submit: every selected point is ok, kept or queued "
           "(`bench-sweep status --out "
        << o.out_dir << "`)\n";
    return report;
  }
  const long max_array = max_array_size(s);
  std::vector<ArrayJob> arrays = make_arrays(s, points, max_array);
  submit_arrays(s, arrays, report);
  if (o.history.wanted()) submit_history_job(s, arrays, report);
  if (!o.dry_run) {
    out << "# " << plural(report.submitted_points, "point") << " in "
        << plural(report.job_ids.size(), "job array") << "; follow with `bench-sweep status --out "
        << o.out_dir << "`\n";
  }
  return report;
}

}  // namespace sweepbench
