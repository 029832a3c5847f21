// Deciding and claiming a point, and recording how it ended: the book `bench-sweep run` keeps of
// its points (docs/running.md "What run does with a point").
//
// For each point: its last record decides (an `ok` result with the same config_hash is kept,
// failures rerun only when asked, an ok point whose results do not read back runs again); the
// sweep's memory_limit, --prune-after-oom and repeats until precise may skip it; then its
// directory is claimed, a run whose runner died after it finished is recovered, and each end is
// written to status.json and the manifest. `bench-sweep submit` asks the same questions
// (will_run, memory_limit_skip) before it submits.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/value.h"
#include "launch/run_output.h"
#include "layout/claim.h"
#include "layout/point_record.h"
#include "sweep/expand.h"

namespace sweepbench {

// What to do with a point, given its last record.
enum class Decision { kRun, kKeepOk, kKeepFailure };
Decision decide(const std::optional<PointRecord>& record, const std::string& config_hash,
                bool force, bool retry_failed);
// Why the sweep's memory_limit skips the point (predicted over it); nullopt when it does not: no
// limit, under it, or the point ran ok before (it fitted). Run and submit both skip by it.
std::optional<std::string> memory_limit_skip(const SweepPoint& p,
                                             const std::optional<PointRecord>& record,
                                             const std::optional<MemoryLimit>& limit);
// decide(), and for a point kept ok, whether its results read back as `bench-sweep status` and
// bench-extract read them (layout/point_status.h's ok_results_problem): an ok point whose rank
// file was deleted or cut runs again, and *rerun_why (optional) says why. `checked` (optional)
// holds that check's answer once made, for a caller that asks more than once.
Decision decide_point(const std::string& point_dir, const std::optional<PointRecord>& record,
                      const std::string& config_hash, bool force, bool retry_failed,
                      std::string* rerun_why = nullptr,
                      std::optional<std::string>* checked = nullptr);
// Whether run (or submit) would run the point: decide_point() says run, and memory_limit_skip()
// does not skip it. For the predicted device-hours printed before they start.
bool will_run(const SweepPoint& p, const std::string& point_dir,
              const std::optional<PointRecord>& record, bool force, bool retry_failed,
              const std::optional<MemoryLimit>& limit);

// Resolves --only against the plan: each entry an index or a tag. Throws Error(kInput) naming an
// entry that matches nothing.
std::vector<const SweepPoint*> points_to_run(const Plan& plan,
                                             const std::vector<std::string>& only);

// The record of a point skipped by the sweep's memory_limit (`why`), attempt after `last`'s.
PointRecord memory_limit_record(const SweepPoint& p, const std::optional<PointRecord>& last,
                                const std::string& why);

// The points a point that ran out of memory prunes: identical to it except for a larger value of
// one of `keys`. Returns the reason when `candidate` is pruned by `oom_point`.
std::optional<std::string> prune_reason(const SweepPoint& candidate, const SweepPoint& oom_point,
                                        const std::vector<std::string>& keys);

// The manifest's copy of each point's status, reason and attempt (docs/running.md), written in
// batches. Rewriting DIR/manifest.json twice a point made a sweep quadratic (a
// 1,000-point manifest is 320 KB; 100,000 points would rewrite 32 MB 200,000 times). A batch goes
// out once a second has passed since the last and ten times the last write's duration, so the
// rewrites cost at most about a tenth of the run; and always when the run ends or is stopped.
// Each point's status.json, written as it happens, stays the record.
class ManifestBatch {
 public:
  explicit ManifestBatch(std::string out_dir) : out_dir_(std::move(out_dir)) {}
  ~ManifestBatch();
  ManifestBatch(const ManifestBatch&) = delete;
  ManifestBatch& operator=(const ManifestBatch&) = delete;

  void set(const std::string& tag, const PointRecord& r);
  void flush();

 private:
  std::string out_dir_;
  std::map<std::string, Value> pending_;
  std::chrono::steady_clock::time_point next_{};
};

// What a run asks of a point before it starts it (PointBook::claim).
struct Claimed {
  // Held: the point is this run's to run, and `last` is its record before this attempt.
  std::optional<PointClaim> claim;
  std::optional<PointRecord> last;
  // The claim is held by the processes of a runner that was killed (what holds it, in words):
  // try again once they have ended.
  std::optional<std::string> orphaned;
};

// The records of a run's points, and every decision read from them.
class PointBook {
 public:
  struct Options {
    std::string out_dir;
    bool force = false;
    bool retry_failed = false;
    std::vector<std::string> prune_after_oom;
  };
  PointBook(const Plan& plan, Options options, RunOutput& output);

  // The sweep's directory, absolute, and a point's in it.
  const std::filesystem::path& root() const { return root_; }
  std::string dir(const SweepPoint& p) const { return (root_ / p.tag).string(); }
  std::string config_path(const SweepPoint& p) const;

  // Reads the records of the points this run may run (and, with --prune-after-oom, every
  // point's).
  void load(const std::vector<const SweepPoint*>& selected);
  std::optional<PointRecord> record(const SweepPoint& p) const;

  // decide_point, with an ok point's results checked once a run.
  Decision decide(const SweepPoint& p, const std::optional<PointRecord>& record,
                  std::string* rerun_why = nullptr);
  std::optional<std::string> over_limit(const SweepPoint& p,
                                        const std::optional<PointRecord>& record) const;
  // Why --prune-after-oom skips the point now; nullopt when it does not.
  std::optional<std::string> pruned(const SweepPoint& p) const;
  // Why repeats until precise skips this repeat: its earlier repeats are precise enough.
  std::optional<std::string> precise_before(const SweepPoint& p);

  // Decides and claims a point: kept, skipped, recovered or busy elsewhere (each said in its
  // row, nothing claimed), orphaned, or claimed to run.
  Claimed claim(const SweepPoint& p);
  // Checked when the point is about to start: why it is skipped now (pruned by a point that
  // ran out of memory meanwhile, or precise before); nullopt when it runs.
  std::optional<std::string> skip_at_start(const SweepPoint& p);

  // The sweep's references against an ok point's summary.json (sweep/references.h): sets
  // r.references and r.reference ("pass", "miss", or "" when none applies). Returns what it
  // missed, for its row; "" otherwise.
  std::string check_references(const SweepPoint& p, PointRecord& r) const;
  // Writes the point's record: status.json now, the manifest in its batch.
  void write(const SweepPoint& p, const PointRecord& r);
  // Writes how the point ended, which from now on is what it prunes.
  void finish(const SweepPoint& p, const PointRecord& r);
  // Another runner holds the point (or its orphans do, past --orphan-wait).
  void busy_elsewhere(const SweepPoint& p) { busy_points_.push_back(&p); }

  // At the end: the busy points' records as they are now, then every selected point's status
  // counted into the report.
  void tally(const std::vector<const SweepPoint*>& points, RunReport& report);
  void flush() { manifest_.flush(); }

 private:
  void keep_ok(const SweepPoint& p, const PointRecord& record);
  bool skipped_by_memory_limit(const SweepPoint& p, const std::optional<PointRecord>& record);
  bool kept_as_precise(const SweepPoint& p, const std::optional<PointRecord>& record);
  bool recover_finished_run(const SweepPoint& p, const PointRecord& record);
  void warn_missing_repeats_metric(const SweepPoint& p, const Value& summary,
                                   const std::string& metric);
  void reread_busy_points(RunReport& report);

  const Plan& plan_;
  Options o_;
  std::filesystem::path root_;
  RunOutput& output_;
  ManifestBatch manifest_;
  std::map<std::string, PointRecord> records_;
  // Each kept ok point's ok_results_problem, checked once (decide).
  std::map<std::string, std::optional<std::string>> results_checked_;
  // Selected points this run runs again whose old record must not prune (load), until they end
  // in this run.
  std::set<std::string> to_rerun_;
  std::set<std::string> limit_skipped_;  // tags skipped by the sweep's memory_limit
  // Points another runner held when this run reached them (reread_busy_points).
  std::vector<const SweepPoint*> busy_points_;
  bool warned_repeats_metric_ = false;  // warn_missing_repeats_metric said it
};

}  // namespace sweepbench
