#include "launch/status.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "config/table.h"
#include "config/yaml_io.h"
#include "launch/slurm.h"
#include "layout/manifest.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "sweep/references.h"
#include "text/error.h"
#include "text/exit_codes.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

}  // namespace

StatusReport sweep_status(const std::string& out_dir) {
  std::optional<ManifestFile> manifest = read_manifest(out_dir);
  if (!manifest) {
    throw Error::input(Mark::in((fs::path(out_dir) / kManifestFile).string()), "",
                       "there is no manifest: not a sweep's directory",
                       "give the --out DIR of `bench-sweep run`, `plan --out` or `submit`");
  }
  const Manifest typed = Manifest::from_value(manifest->value);
  // Each entry's directory is read below: an edited tag ("../victim") must not lead out of DIR.
  typed.refuse_unsafe_tags(manifest->path);
  StatusReport report;
  std::vector<PointEvidence> evidence;
  std::set<std::string> jobs;
  {
    for (const ManifestPoint& p : typed.points) {
      if (!p.in_sweep) continue;
      PointView view;
      view.tag = p.tag;
      view.index = p.index.value_or(-1);
      std::string dir = (fs::path(out_dir) / view.tag).string();
      PointEvidence e;
      e.point_dir = dir;
      e.dir_problem = point_dir_problem(dir);
      if (e.dir_problem.empty()) {
        e.record = read_point_record(dir);
        e.claim = PointClaim::inspect(dir, slurm_claim_liveness());
        e.ranks = inspect_rank_files(dir);
      }
      e.submitted_job = p.slurm_job;
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
    PointView merged = decide_point_status(evidence[i], slurm);
    merged.index = report.points[i].index;
    merged.tag = report.points[i].tag;
    const std::optional<PointRecord>& record = evidence[i].record;
    if (merged.status == PointStatus::kOk && record && !record->reference.empty()) {
      merged.reference = record->reference;
      if (record->references.is_list()) {
        for (const Value& v : record->references.items()) {
          std::optional<ReferenceCheck> c = ReferenceCheck::from_value(v);
          if (c && !c->pass) merged.reference_misses.push_back(describe_miss(*c));
        }
      }
    }
    report.points[i] = merged;
  }
  return report;
}

int archive_settled_attempt(const std::string& point_dir) {
  std::optional<PointRecord> record = read_point_record(point_dir);
  if (record && record->status == PointStatus::kRunning) {
    PointEvidence e;
    e.point_dir = point_dir;
    e.record = record;
    // The claim is this runner's now: the previous holder is gone.
    e.ranks = inspect_rank_files(point_dir);
    std::optional<SlurmJobStates> slurm;
    if (!record->slurm_job_id.empty()) {
      slurm = query_slurm_jobs({slurm_base_job_id(record->slurm_job_id)});
    }
    PointView view = decide_point_status(e, slurm);
    if (view.status == PointStatus::kRunning) {  // its job lives on: a runner of this allocation
      view.status = PointStatus::kIncomplete;
      view.note = "its runner (" + record->host + ":" + std::to_string(record->pid) + ") is gone";
    }
    record->status = view.status;
    record->reason = view.note + "; settled when the next attempt began";
    write_point_record(point_dir, *record);
  }
  return archive_previous_attempt(point_dir);
}

size_t StatusReport::missed_reference() const {
  return static_cast<size_t>(std::count_if(points.begin(), points.end(),
                                           [](const PointView& p) { return p.reference == "miss"; }));
}

size_t StatusReport::passed_reference() const {
  return static_cast<size_t>(std::count_if(points.begin(), points.end(),
                                           [](const PointView& p) { return p.reference == "pass"; }));
}

void print_status(const StatusReport& report, const std::string& out_dir, bool json,
                  std::ostream& out) {
  std::map<PointStatus, size_t> counts;
  for (const PointView& p : report.points) ++counts[p.status];
  const size_t missed = report.missed_reference(), passed = report.passed_reference();
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
      if (!p.reference.empty()) {
        e.set("reference", Value::string(p.reference));
        Value misses = Value::list();
        for (const std::string& m : p.reference_misses) misses.items().push_back(Value::string(m));
        e.set("reference_misses", misses);
      }
      list.items().push_back(e);
    }
    root.set("points", list);
    Value totals = Value::map();
    for (PointStatus s : all_point_statuses()) {
      if (counts[s] > 0)
        totals.set(to_string(s), Value::integer(static_cast<std::int64_t>(counts[s])));
    }
    root.set("totals", totals);
    if (missed + passed > 0) {
      Value refs = Value::map();
      refs.set("passed", Value::integer(static_cast<std::int64_t>(passed)));
      refs.set("missed", Value::integer(static_cast<std::int64_t>(missed)));
      root.set("references", refs);
    }
    out << emit_json(root, 2, false) << "\n";
    return;
  }
  // The same aligned table as the plan's (config/table.h).
  TableWriter table({"index", "status", "tag", "job", "note"}, TableFormat::kText, out);
  for (const PointView& p : report.points) {
    table.row({Value::integer(p.index),
               Value::string(to_string(p.status) + (p.orphaned ? " (orphaned)" : "")),
               Value::string(p.tag), Value::string(p.job.empty() ? "-" : p.job),
               Value::string(p.reference_misses.empty()
                                 ? p.note
                                 : (p.note.empty() ? "" : p.note + "; ") +
                                       "MISSED its reference: " + join(p.reference_misses, "; "))});
  }
  table.finish();
  out << "# " << plural(report.points.size(), "point") << ":";
  for (PointStatus s : all_point_statuses()) {
    if (counts[s] > 0) out << " " << to_string(s) << " " << counts[s];
  }
  out << (report.slurm_answered || !report.slurm_asked
              ? ""
              : " (SLURM did not answer: from the directory alone)")
      << "\n";
  if (missed + passed > 0) {
    out << "# references: " << passed << " passed, " << missed << " missed"
        << (missed > 0 ? " (exit " + std::to_string(kExitReferenceMissed) + ")" : std::string()) << "\n";
  }
}

}  // namespace sweepbench
