#include "run/status.h"

#include <filesystem>
#include <iomanip>
#include <map>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "core/text.h"
#include "core/yaml_io.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

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

}  // namespace

PointView merge_point_state(const PointEvidence& e, const std::optional<SlurmJobStates>& slurm) {
  PointView v;
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
      v.status = PointStatus::kCancelled;
      v.note =
          "its runner (" +
          (e.claim.present ? e.claim.holder.describe() : r->host + ":" + std::to_string(r->pid)) +
          ") is gone; `bench-sweep run` runs it again";
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

StatusReport sweep_status(const std::string& out_dir) {
  std::string path = (fs::path(out_dir) / "manifest.json").string();
  std::optional<std::string> text = read_file_if_exists(path);
  if (!text) {
    throw Error::input(Mark::in(path), "", "there is no manifest: not a sweep's directory",
                       "give the --out DIR of `bench-sweep run`, `plan --out` or `submit`");
  }
  Value manifest = parse_yaml(*text, path);
  const Value* points = manifest.find("points");
  StatusReport report;
  std::vector<PointEvidence> evidence;
  std::set<std::string> jobs;
  if (points != nullptr && points->is_list()) {
    for (const Value& p : points->items()) {
      const Value* in_sweep = p.find("in_sweep");
      if (in_sweep != nullptr && in_sweep->is_bool() && !in_sweep->as_bool()) continue;
      PointView view;
      view.tag = text_field(p, "tag");
      if (const Value* i = p.find("index"); i != nullptr && i->is_int()) view.index = i->as_int();
      std::string dir = (fs::path(out_dir) / view.tag).string();
      PointEvidence e;
      e.record = read_point_record(dir);
      e.claim = PointClaim::inspect(dir);
      e.point_dir = dir;
      e.submitted_job = text_field(p, "slurm_job");
      for (const std::string& j :
           {e.submitted_job, e.record ? e.record->slurm_job_id : "", e.claim.holder.slurm_job_id}) {
        if (!j.empty()) jobs.insert(j);
      }
      report.points.push_back(view);
      evidence.push_back(e);
    }
  }
  std::optional<SlurmJobStates> slurm;
  if (!jobs.empty()) {
    std::set<std::string> bases;
    for (const std::string& j : jobs) bases.insert(slurm_base_job_id(j));
    slurm = query_slurm_jobs({bases.begin(), bases.end()});
  }
  report.slurm_asked = !jobs.empty();
  report.slurm_answered = slurm.has_value();
  for (size_t i = 0; i < evidence.size(); ++i) {
    PointView merged = merge_point_state(evidence[i], slurm);
    merged.index = report.points[i].index;
    merged.tag = report.points[i].tag;
    report.points[i] = merged;
  }
  return report;
}

void print_status(const StatusReport& report, const std::string& out_dir, bool json,
                  std::ostream& out) {
  std::map<PointStatus, size_t> counts;
  for (const PointView& p : report.points) ++counts[p.status];
  if (json) {
    Value root = Value::map();
    root.set("out", Value::string(out_dir));
    root.set("slurm_answered", Value::boolean(report.slurm_answered));
    Value list = Value::list();
    for (const PointView& p : report.points) {
      Value e = Value::map();
      e.set("index", Value::integer(p.index));
      e.set("tag", Value::string(p.tag));
      e.set("status", Value::string(to_string(p.status)));
      if (p.orphaned) e.set("orphaned", Value::boolean(true));
      e.set("job", Value::string(p.job));
      e.set("note", Value::string(p.note));
      list.items().push_back(e);
    }
    root.set("points", list);
    Value totals = Value::map();
    for (PointStatus s : all_point_statuses()) {
      if (counts[s] > 0)
        totals.set(to_string(s), Value::integer(static_cast<std::int64_t>(counts[s])));
    }
    root.set("totals", totals);
    out << emit_json(root, 2, false) << "\n";
    return;
  }
  size_t tag_width = 3, status_width = 9;
  auto status_text = [](const PointView& p) {
    return to_string(p.status) + (p.orphaned ? " (orphaned)" : "");
  };
  for (const PointView& p : report.points) {
    tag_width = std::max(tag_width, p.tag.size());
    status_width = std::max(status_width, status_text(p).size());
  }
  out << std::setw(5) << "index"
      << "  " << std::left << std::setw(static_cast<int>(status_width)) << "status"
      << "  " << std::setw(static_cast<int>(tag_width)) << "tag"
      << "  " << std::setw(10) << "job"
      << "  note" << std::right << "\n";
  for (const PointView& p : report.points) {
    out << std::setw(5) << p.index << "  " << std::left << std::setw(static_cast<int>(status_width))
        << status_text(p) << "  " << std::setw(static_cast<int>(tag_width)) << p.tag << "  "
        << std::setw(10) << (p.job.empty() ? "-" : p.job) << "  " << p.note << std::right << "\n";
  }
  out << "# " << plural(report.points.size(), "point") << ":";
  for (PointStatus s : all_point_statuses()) {
    if (counts[s] > 0) out << " " << to_string(s) << " " << counts[s];
  }
  out << (report.slurm_answered || !report.slurm_asked
              ? ""
              : " (SLURM did not answer: from the directory alone)")
      << "\n";
}

}  // namespace sweepbench
