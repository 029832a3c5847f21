#include "launch/status.h"

#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "core/table.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "launch/slurm.h"
#include "layout/manifest.h"
#include "layout/paths.h"

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
      e.record = read_point_record(dir);
      e.claim = PointClaim::inspect(dir, slurm_claim_liveness());
      e.ranks = inspect_rank_files(dir);
      e.point_dir = dir;
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
  // The same aligned table as the plan's (core/table.h).
  TableWriter table({"index", "status", "tag", "job", "note"}, TableFormat::kText, out);
  for (const PointView& p : report.points) {
    table.row({Value::integer(p.index),
               Value::string(to_string(p.status) + (p.orphaned ? " (orphaned)" : "")),
               Value::string(p.tag), Value::string(p.job.empty() ? "-" : p.job),
               Value::string(p.note)});
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
}

}  // namespace sweepbench
