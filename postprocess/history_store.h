// The history store (docs/history.md): every finished attempt of every point a store was given,
// with its metrics and their intervals, its configuration and the environment it ran in, kept
// across sweeps so that a metric's series over time can be read back and judged.
//
// One run is one attempt of one point, keyed by its run key: a hash of what the attempt's
// status.json says of it (tag, attempt, config hash, host, runner pid, start), the same
// however and however often it reaches the store, so a second ingest of the same tree (or of a
// copy of it) adds nothing. A run and everything of it is written in one transaction: a writer
// killed at any moment leaves it whole or absent.
//
// The schema is versioned (history_schema): a store made by an older bench-history is migrated,
// step by step in one transaction, when a newer one opens it; one made by a newer bench-history
// is refused, not guessed at. Not here: reading results trees (history_ingest.h), printing.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "postprocess/history_db.h"

namespace sweepbench {

// The schema version this bench-history writes; migrations lead every older one to it.
inline constexpr std::int64_t kHistorySchemaVersion = 3;

struct HistoryMetric {
  std::string name;
  double value = std::numeric_limits<double>::quiet_NaN();
  // The 95% interval where the point has one (metrics/summary.h's interval_columns).
  double ci_low = std::numeric_limits<double>::quiet_NaN();
  double ci_high = std::numeric_limits<double>::quiet_NaN();
  std::string unit;
};

struct HistoryRun {
  std::string run_key;
  std::string sweep, tag, config_hash, benchmark, scenario;
  // The series it belongs to: a hash of its config without the keys of where it ran
  // (container.*, launch.setup), so that the same benchmark in another image or with other
  // modules loaded continues its series, the change an environment change; the config hash
  // where the config is not known.
  std::string series_key;
  std::int64_t repeat = 0, attempt = 0;
  std::string status, reason;
  std::string started, ended;  // ISO 8601 UTC: text order is time order
  double seconds = std::numeric_limits<double>::quiet_NaN();
  std::string results_dir;  // the point's directory when it was stored
  // The environment's fields (docs/history.md: host, nodes, partition, device, versions, image),
  // and its id: a hash of them, equal for runs in the same environment.
  std::map<std::string, std::string> environment;
  std::string environment_id;
  std::map<std::string, std::string> labels;  // --label NAME=VALUE
  // Every config key, one JSON object (bench-extract's config columns); stored once per config
  // hash; "" when the attempt's config is not known.
  std::string config_json;
  std::vector<HistoryMetric> metrics;
  std::string ingested;  // when the store got it (ISO 8601 UTC)
  // The order runs reached the store in (1, 2, ...), unique in it: its metrics' key. 0 for a run
  // not read from a store.
  std::int64_t seq = 0;
};

// The run key of an attempt (see above): 32 hex digits. Not the sweep's name: that is the
// manifest's, and a point copied out of its tree (or a tree whose manifest is lost) is the same
// attempt. The tag names the config, the rest the attempt.
std::string history_run_key(const std::string& tag, std::int64_t attempt,
                            const std::string& config_hash, const std::string& host,
                            std::int64_t pid, const std::string& started);

// The series key of a config (bench-extract's config cells as one JSON object, see above): 16
// hex digits.
std::string history_series_key(const std::string& config_json);

// The environment id of a set of fields: 16 hex digits, "" for none.
std::string history_environment_id(const std::map<std::string, std::string>& environment);

// Which runs a query wants; empty fields want any.
struct HistoryFilter {
  std::string sweep, tag, config_hash, status, metric;
  std::string since, until;  // ISO 8601 UTC or a date (YYYY-MM-DD), on `started`
  std::map<std::string, std::string> labels, environment;
  std::vector<std::pair<std::string, std::string>> config;  // dotted key = value (display text)
  std::int64_t limit = 0;                                   // 0: no limit; else the newest `limit`
};

class HistoryStore {
 public:
  // Opens the store at `url` (history_db.h), migrating an older schema. `create`: a store that
  // is not there yet (a new file, an empty database) is made; otherwise it is an error saying
  // how to make one, so that reading never leaves a store behind. A database holding other
  // tables is refused either way: it is not a history store.
  static HistoryStore open(const std::string& url, bool create = false);
  // The store at --store, else $SWEEPBENCH_HISTORY, else ~/.local/share/sweepbench/history.sqlite
  // (its directory made when need be).
  // `make_directory`: make its directory when it is not there (ingest); readers leave none behind.
  static std::string default_url(bool make_directory = false);

  // Records runs in one transaction; returns how many were new (a run key the store has adds
  // nothing).
  size_t record(const std::vector<HistoryRun>& runs);
  // Which of these run keys the store already has.
  std::vector<std::string> known(const std::vector<std::string>& keys);
  // Runs, oldest first (by started, then run key), with their metrics (only `filter.metric`'s
  // when it names one) and labels and environment.
  std::vector<HistoryRun> runs(const HistoryFilter& filter);
  std::int64_t schema_version();
  std::string describe() const { return db_->describe(); }
  Database& database() { return *db_; }

 private:
  explicit HistoryStore(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  void migrate(bool create);
  std::unique_ptr<Database> db_;
  std::set<std::string> environments_;            // ids this process has stored
  std::map<size_t, std::string> metric_inserts_;  // INSERT of N metric rows, by N
};

// "2026-11-20" -> "2026-11-20T00:00:00Z"; an ISO 8601 UTC time as it is; Error(kInput) naming
// `option` otherwise.
std::string history_time_bound(const std::string& text, const std::string& option, bool end);

}  // namespace sweepbench
