// Deciding and claiming a point, and recording how it ended (point_book.h).
#include "launch/point_book.h"

#include <algorithm>
#include <chrono>

#include "launch/point_end.h"
#include "launch/slurm.h"
#include "launch/status.h"
#include "layout/manifest.h"
#include "layout/paths.h"
#include "layout/point_status.h"
#include "sweep/plan_output.h"
#include "sweep/references.h"
#include "sweep/repeats_until.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

Value manifest_fields(const PointRecord& r) {
  Value f = Value::map();
  f.set("status", Value::string(to_string(r.status)));
  f.set("reason", Value::string(r.reason));
  f.set("attempt", Value::integer(r.attempt));
  if (!r.slurm_job_id.empty()) f.set("slurm_job_id", Value::string(r.slurm_job_id));
  return f;
}

// Whether two records hold the same verdicts on the same references (where each reference is
// written aside: the sweep file's path as typed may differ between runs).
bool same_checks(const PointRecord& a, const PointRecord& b) {
  auto without_where = [](const Value& checks) {
    Value out = checks;
    if (out.is_list()) {
      for (Value& c : out.items()) {
        if (c.is_map()) c.set("where", Value::string(""));
      }
    }
    return out;
  };
  return a.reference == b.reference && without_where(a.references) == without_where(b.references);
}

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

PointRecord memory_limit_record(const SweepPoint& p, const std::optional<PointRecord>& last,
                                const std::string& why) {
  PointRecord r;
  r.status = PointStatus::kSkipped;
  r.reason = why;
  r.config_hash = p.config_hash;
  r.attempt = (last ? last->attempt : 0) + 1;
  r.host = this_host();
  r.started = r.ended = utc_now_iso8601();
  return r;
}

ManifestBatch::~ManifestBatch() {
  try {
    flush();
  } catch (const Error&) {
    // Already unwinding from another error, which says more.
  }
}

void ManifestBatch::set(const std::string& tag, const PointRecord& r) {
  pending_.erase(tag);
  pending_.emplace(tag, manifest_fields(r));
  if (std::chrono::steady_clock::now() >= next_) flush();
}

void ManifestBatch::flush() {
  if (pending_.empty()) return;
  auto t0 = std::chrono::steady_clock::now();
  update_manifest_points(out_dir_, pending_);
  pending_.clear();
  auto now = std::chrono::steady_clock::now();
  next_ =
      now + std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(1), 10 * (now - t0));
}

PointBook::PointBook(const Plan& plan, Options options, RunOutput& output)
    : plan_(plan),
      o_(std::move(options)),
      root_(fs::absolute(o_.out_dir)),
      output_(output),
      manifest_(o_.out_dir) {}

std::string PointBook::config_path(const SweepPoint& p) const {
  return (root_ / p.tag / kConfigFile).string();
}

std::optional<PointRecord> PointBook::record(const SweepPoint& p) const {
  if (auto it = records_.find(p.tag); it != records_.end()) return it->second;
  return std::nullopt;
}

// A point kept ok. The references may have changed since it ran: checked again, and recorded
// when the point is free to write and still holds the run that was checked (another runner may
// have run it again since this one read it).
void PointBook::keep_ok(const SweepPoint& p, const PointRecord& record) {
  PointRecord kept = record;
  std::string missed = check_references(p, kept);
  records_[p.tag] = kept;
  if (!same_checks(kept, record)) {
    ClaimState busy;
    if (std::optional<PointClaim> claim =
            PointClaim::acquire(dir(p), &busy, slurm_claim_liveness())) {
      std::optional<PointRecord> now = read_point_record(dir(p));
      if (now && now->status == PointStatus::kOk && now->attempt == record.attempt &&
          now->ended == record.ended && now->config_hash == record.config_hash) {
        kept = *now;
        missed = check_references(p, kept);
        finish(p, kept);
      } else if (now) {
        records_[p.tag] = *now;
      }
    }
  }
  output_.row(p, "ok",
              "kept: ok since " + record.ended + " (--force reruns it)" +
                  (missed.empty() ? "" : "; MISSED its reference: " + missed));
}

Claimed PointBook::claim(const SweepPoint& p) {
  std::optional<PointRecord> record = this->record(p);
  std::string rerun_why;
  Decision d = decide(p, record, &rerun_why);
  if (d == Decision::kKeepOk) {
    keep_ok(p, *record);
    return {};
  }
  if (d == Decision::kKeepFailure) {
    output_.row(p, to_string(record->status),
                "kept: " + record->reason + " (--retry-failed reruns it)");
    return {};
  }
  if (!rerun_why.empty()) {
    output_.say("# " + p.tag + ": status.json says ok, but its results do not read back (" +
                rerun_why + "): it runs again\n");
  }
  if (skipped_by_memory_limit(p, record)) return {};
  if (kept_as_precise(p, record)) return {};
  ClaimState busy;
  std::optional<PointClaim> claim = PointClaim::acquire(dir(p), &busy, slurm_claim_liveness());
  if (!claim) {
    // Another runner has it, or the processes of one that was killed still run: never a
    // second copy beside them. An orphan's processes are waited for (they stop after their
    // step), then the point runs.
    if (busy.orphaned) {
      return {std::nullopt, std::nullopt,
              "its runner " + busy.holder.describe() +
                  " is gone, but the point's processes still run (they stop after "
                  "their current step)"};
    }
    busy_points_.push_back(&p);
    output_.row(p, "running", "elsewhere: " + busy.describe(dir(p)));
    return {};
  }
  // Another runner may have finished it between our reading and our claim.
  record = read_point_record(dir(p));
  if (record) records_[p.tag] = *record;
  d = decide_point(dir(p), record, p.config_hash, o_.force, o_.retry_failed);
  if (d != Decision::kRun) {
    output_.row(p, to_string(record->status), "finished by another runner");
    return {};
  }
  if (record && !o_.force && recover_finished_run(p, *record)) return {};
  return {std::move(claim), std::move(record), std::nullopt};
}

std::optional<std::string> PointBook::skip_at_start(const SweepPoint& p) {
  std::optional<std::string> skip = pruned(p);
  if (!skip) skip = precise_before(p);
  return skip;
}

void PointBook::write(const SweepPoint& p, const PointRecord& r) {
  write_point_record(dir(p), r);
  manifest_.set(p.tag, r);
}

void PointBook::tally(const std::vector<const SweepPoint*>& points, RunReport& report) {
  reread_busy_points(report);
  for (const SweepPoint* p : points) {
    PointStatus s = PointStatus::kPending;
    if (auto it = records_.find(p->tag); it != records_.end()) {
      s = it->second.status;
      if (s == PointStatus::kSkipped && limit_skipped_.count(p->tag) > 0) {
        ++report.skipped_by_memory_limit;
      } else if (s == PointStatus::kSkipped && starts_with(it->second.reason, kPreciseReason)) {
        ++report.skipped_as_precise;
      }
      if (s == PointStatus::kOk && it->second.reference == "miss") {
        report.missed_reference.push_back(p->tag);
      }
      if (s == PointStatus::kOk && it->second.reference == "pass") ++report.passed_reference;
    }
    ++report.counts[s];
  }
}

// The records of the points this run may run. --prune-after-oom also needs the others' (an
// out-of-memory point prunes its larger neighbours); without it nothing else is read, so a
// job array's task costs the shared file system its own points' reads, not every point's
// (N tasks reading N records each), and another point's damaged status.json is that point's
// business, not this run's.
void PointBook::load(const std::vector<const SweepPoint*>& selected) {
  auto load = [&](const SweepPoint& p) {
    if (auto r = read_point_record(dir(p))) records_[p.tag] = *r;
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
    if (sweepbench::decide(it->second, p->config_hash, o_.force, o_.retry_failed) ==
        Decision::kRun) {
      to_rerun_.insert(p->tag);
    }
  }
}

// The points another runner held (busy_elsewhere): what their status.json says now, when
// this run ends, rather than what it was when this run passed them (they may have ended ok
// meanwhile). One still running elsewhere is counted running.
void PointBook::reread_busy_points(RunReport& report) {
  for (const SweepPoint* p : busy_points_) {
    const std::string& tag = p->tag;
    std::optional<PointRecord> now;
    try {
      now = read_point_record(dir(*p));
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
    ++report.busy_elsewhere;
  }
}

std::optional<std::string> PointBook::pruned(const SweepPoint& p) const {
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
std::optional<std::string> PointBook::precise_before(const SweepPoint& p) {
  const std::optional<RepeatsRule>& rule = plan_.info().repeats_until;
  if (!rule || p.repeat < rule->least) return std::nullopt;
  const size_t first = p.index - static_cast<size_t>(p.repeat);
  std::vector<double> values;
  std::string metric = rule->metric;
  for (size_t i = first; i < p.index && i < plan_.points().size(); ++i) {
    const SweepPoint& before = plan_.points()[i];
    // Ok by the runner's record of this config, not only by what summary.json says.
    std::optional<PointRecord> record = read_point_record(dir(before));
    if (!record || record->status != PointStatus::kOk ||
        record->config_hash != before.config_hash) {
      continue;
    }
    // An unreadable summary gives no value: that repeat counts for nothing.
    const std::optional<Value> summary = read_summary(dir(before));
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
void PointBook::warn_missing_repeats_metric(const SweepPoint& p, const Value& summary,
                                            const std::string& metric) {
  if (warned_repeats_metric_) return;
  warned_repeats_metric_ = true;
  std::vector<std::string> has;
  if (const Value* metrics = summary.find("metrics"); metrics != nullptr && metrics->is_map()) {
    for (const Value::Entry& e : metrics->entries()) has.push_back(e.key);
  }
  const std::optional<RepeatsRule>& rule = plan_.info().repeats_until;
  output_.say(rule->mark.str() + ": warning: repeats: " + p.tag +
              "'s summary.json has no number '" + metric +
              "', so its repeats cannot stop early and all run (" +
              (rule->metric.empty() ? std::string("the workload's headline") : "repeats.metric") +
              "; its metrics: " + (has.empty() ? std::string("none") : join(has, ", ")) + ")\n");
}

// A repeat skipped as precise before, still precise for the same reason: kept as it is (no new
// attempt). True when kept.
bool PointBook::kept_as_precise(const SweepPoint& p, const std::optional<PointRecord>& record) {
  if (!record || record->status != PointStatus::kSkipped || record->config_hash != p.config_hash ||
      !starts_with(record->reason, kPreciseReason)) {
    return false;
  }
  std::optional<std::string> why = precise_before(p);
  if (!why || *why != record->reason) return false;
  output_.row(p, "skipped", "kept: " + *why);
  return true;
}

std::optional<std::string> PointBook::over_limit(const SweepPoint& p,
                                                 const std::optional<PointRecord>& record) const {
  return memory_limit_skip(p, record, plan_.info().memory_limit);
}

// A point over the sweep's memory_limit (memory_limit_skip) is recorded as skipped, with the
// prediction, before anything is claimed elsewhere, archived or placed; it depends on no other
// point. One already recorded skipped for the same reason is left as it is. True when the
// point is skipped.
bool PointBook::skipped_by_memory_limit(const SweepPoint& p,
                                        const std::optional<PointRecord>& record) {
  std::optional<std::string> why = over_limit(p, record);
  if (!why) return false;
  limit_skipped_.insert(p.tag);
  if (record && record->status == PointStatus::kSkipped && record->reason == *why &&
      record->config_hash == p.config_hash) {
    output_.row(p, "skipped", "kept: " + *why);
    return true;
  }
  ClaimState busy;
  std::optional<PointClaim> claim = PointClaim::acquire(dir(p), &busy, slurm_claim_liveness());
  if (!claim) {
    limit_skipped_.erase(p.tag);
    busy_points_.push_back(&p);
    output_.row(p, "running", "elsewhere: " + busy.describe(dir(p)));
    return true;
  }
  archive_settled_attempt(dir(p));
  const PointRecord r = memory_limit_record(p, record, *why);
  finish(p, r);
  output_.row(p, "skipped", *why);
  return true;
}

// A point whose status.json says running, whose runner is gone (we hold its claim), but whose
// run had finished: its rank files are whole and its summary.json says how it ended. That is
// the point's result, as bench-sweep status and bench-extract say (layout/point_status.cc);
// it is recorded, not run again. True when it was.
bool PointBook::recover_finished_run(const SweepPoint& p, const PointRecord& record) {
  if (record.status != PointStatus::kRunning || record.config_hash != p.config_hash) {
    return false;
  }
  RankFilesEvidence ranks = inspect_rank_files(dir(p));
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
  output_.row(
      p, to_string(r.status),
      "recovered: " + r.reason + (missed.empty() ? "" : "; MISSED its reference: " + missed));
  return true;
}

// The sweep's references against an ok point's summary.json (sweep/references.h): sets
// r.references and r.reference ("pass", "miss", or "" when none applies). Returns what it
// missed, for its row; "" otherwise.
std::string PointBook::check_references(const SweepPoint& p, PointRecord& r) const {
  r.references = Value();
  r.reference.clear();
  const std::vector<PerformanceReference>& all = plan_.info().references;
  if (all.empty() || r.status != PointStatus::kOk) return "";
  // An ok point without a readable summary: its references miss for want of the metrics.
  const Value summary = read_summary(dir(p)).value_or(Value::map());
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

void PointBook::finish(const SweepPoint& p, const PointRecord& r) {
  write_point_record(dir(p), r);
  manifest_.set(p.tag, r);
  records_[p.tag] = r;
  to_rerun_.erase(p.tag);  // what it did in this run now prunes
}

// decide_point, with an ok point's results checked once a run (the predicted cost and the
// point's start both ask; each check lists the directory and opens every rank file).
// *rerun_why (optional): why an ok point runs again.
Decision PointBook::decide(const SweepPoint& p, const std::optional<PointRecord>& record,
                           std::string* rerun_why) {
  return decide_point(dir(p), record, p.config_hash, o_.force, o_.retry_failed, rerun_why,
                      &results_checked_[p.tag]);
}

}  // namespace sweepbench
