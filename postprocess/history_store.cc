#include "postprocess/history_store.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "config/value.h"
#include "config/yaml_io.h"
#include "text/digest.h"
#include "text/error.h"

namespace sweepbench {

namespace {

namespace fs = std::filesystem;

// Schema steps: step N leads a store at version N - 1 to version N. Portable SQL (SQLite and
// PostgreSQL both read it): TEXT, BIGINT, DOUBLE PRECISION, ON CONFLICT. Times are ISO 8601 UTC
// text, whose order is time order. A step is never edited once released: a change is a new step.
struct SchemaStep {
  std::int64_t version;
  const char* sql;
};

constexpr SchemaStep kSchemaSteps[] = {
    {1, R"sql(
CREATE TABLE runs (
  run_key TEXT PRIMARY KEY,
  sweep TEXT NOT NULL,
  tag TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  series_key TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  scenario TEXT NOT NULL,
  repeat_index BIGINT NOT NULL,
  attempt BIGINT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL,
  started TEXT NOT NULL,
  ended TEXT NOT NULL,
  seconds DOUBLE PRECISION,
  results_dir TEXT NOT NULL,
  environment_id TEXT NOT NULL,
  ingested TEXT NOT NULL,
  seq BIGINT NOT NULL
);
CREATE INDEX runs_by_config ON runs (config_hash, started);
CREATE INDEX runs_by_series ON runs (series_key, started);
CREATE INDEX runs_by_started ON runs (started, seq);
CREATE INDEX runs_by_seq ON runs (seq);
CREATE INDEX runs_by_sweep ON runs (sweep, started);
CREATE TABLE configs (
  config_hash TEXT PRIMARY KEY,
  config TEXT NOT NULL
);
CREATE TABLE metrics (
  run_key TEXT NOT NULL REFERENCES runs (run_key) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value DOUBLE PRECISION,
  ci_low DOUBLE PRECISION,
  ci_high DOUBLE PRECISION,
  unit TEXT NOT NULL,
  PRIMARY KEY (run_key, name)
);
CREATE TABLE run_labels (
  run_key TEXT NOT NULL REFERENCES runs (run_key) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_key, name)
);
CREATE TABLE environments (
  environment_id TEXT NOT NULL,
  field TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (environment_id, field)
);
CREATE INDEX environments_by_field ON environments (field, value);
)sql"},
    // 2: the indexes a filter reads also give the runs' order (started, seq), so that the runs
    // of one configuration, series, sweep or point come in order without a sort, and a point
    // (--tag) has an index at all.
    {2, R"sql(
DROP INDEX runs_by_config;
DROP INDEX runs_by_series;
DROP INDEX runs_by_sweep;
CREATE INDEX runs_by_config ON runs (config_hash, started, seq);
CREATE INDEX runs_by_series ON runs (series_key, started, seq);
CREATE INDEX runs_by_sweep ON runs (sweep, started, seq);
CREATE INDEX runs_by_tag ON runs (tag, started, seq);
)sql"},
    // 3: a run's metrics are keyed by its seq (an integer, the order runs reached the store)
    // instead of its 32-character run key: each new run's rows go at the end of the metrics'
    // key instead of at 28 random places, and the key is not repeated in every row: the first
    // ingest of 10,000 points 25% faster, the store 40% smaller (docs/performance.md). seq is
    // unique: writers take the store's write lock (SQLite's BEGIN IMMEDIATE, PostgreSQL's
    // advisory lock) before they read its largest value.
    {3, R"sql(
DROP INDEX runs_by_seq;
CREATE UNIQUE INDEX runs_by_seq ON runs (seq);
CREATE TABLE metrics_by_seq (
  run_seq BIGINT NOT NULL REFERENCES runs (seq) ON DELETE CASCADE,
  name TEXT NOT NULL,
  value DOUBLE PRECISION,
  ci_low DOUBLE PRECISION,
  ci_high DOUBLE PRECISION,
  unit TEXT NOT NULL,
  PRIMARY KEY (run_seq, name)
);
INSERT INTO metrics_by_seq (run_seq, name, value, ci_low, ci_high, unit)
  SELECT r.seq, m.name, m.value, m.ci_low, m.ci_high, m.unit
  FROM metrics m JOIN runs r ON r.run_key = m.run_key;
DROP TABLE metrics;
ALTER TABLE metrics_by_seq RENAME TO metrics;
)sql"},
};

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

SqlValue real_or_null(double v) { return std::isnan(v) ? SqlValue{} : SqlValue{v}; }

}  // namespace

std::string history_run_key(const std::string& tag, std::int64_t attempt,
                            const std::string& config_hash, const std::string& host,
                            std::int64_t pid, const std::string& started) {
  // Each field with its length: no text in one field can pass for the next.
  std::string text;
  for (const std::string& part :
       {tag, std::to_string(attempt), config_hash, host, std::to_string(pid), started}) {
    text += std::to_string(part.size()) + ":" + part + ";";
  }
  return sha256_hex(text).substr(0, 32);
}

std::string history_series_key(const std::string& config_json) {
  const Value config = parse_own_yaml(config_json, "a config");
  Value kept = Value::map();
  if (config.is_map()) {
    for (const Value::Entry& e : config.entries()) {
      if (e.key.rfind("container.", 0) == 0 || e.key == "launch.setup") continue;
      kept.set(e.key, e.value);
    }
  }
  return sha256_hex(emit_json(kept, -1, true)).substr(0, 16);
}

std::string history_environment_id(const std::map<std::string, std::string>& environment) {
  if (environment.empty()) return "";
  std::string text;
  for (const auto& [field, value] : environment) {
    text += field + '\0' + value + '\0';
  }
  return sha256_hex(text).substr(0, 16);
}

std::string history_time_bound(const std::string& text, const std::string& option, bool end) {
  auto digits = [&](size_t from, size_t n) {
    if (text.size() < from + n) return false;
    for (size_t i = from; i < from + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    }
    return true;
  };
  const bool date = text.size() == 10 && digits(0, 4) && text[4] == '-' && digits(5, 2) &&
                    text[7] == '-' && digits(8, 2);
  auto number = [&](size_t from, size_t n) { return std::stoi(text.substr(from, n)); };
  auto valid_date = [&] {
    const int month = number(5, 2), day = number(8, 2);
    return month >= 1 && month <= 12 && day >= 1 && day <= 31;
  };
  auto valid_time = [&] {
    return number(11, 2) <= 23 && number(14, 2) <= 59 && number(17, 2) <= 60;
  };
  if (date && valid_date()) return text + (end ? "T23:59:59Z" : "T00:00:00Z");
  const bool time = text.size() == 20 && digits(0, 4) && text[4] == '-' && digits(5, 2) &&
                    text[7] == '-' && digits(8, 2) && text[10] == 'T' && digits(11, 2) &&
                    text[13] == ':' && digits(14, 2) && text[16] == ':' && digits(17, 2) &&
                    text[19] == 'Z';
  if (time && valid_date() && valid_time()) return text;
  throw Error::input(Mark::in(option + " " + text), "", "is not a date or a UTC time",
                     "write YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ");
}

std::string HistoryStore::default_url(bool make_directory) {
  if (const char* env = std::getenv("SWEEPBENCH_HISTORY"); env && *env) return env;
  const char* data = std::getenv("XDG_DATA_HOME");
  fs::path dir;
  if (data && *data) {
    dir = fs::path(data) / "sweepbench";
  } else {
    const char* home = std::getenv("HOME");
    if (!home || !*home) {
      throw Error::input(Mark::in("--store"), "", "no store given and no HOME to keep one in",
                         "give --store PATH or set SWEEPBENCH_HISTORY");
    }
    dir = fs::path(home) / ".local" / "share" / "sweepbench";
  }
  if (make_directory) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw io_error(dir.string(), "cannot make the history store's directory", ec.value());
  }
  return (dir / "history.sqlite").string();
}

HistoryStore HistoryStore::open(const std::string& url, bool create) {
  HistoryStore store(open_database(url, create));
  store.migrate(create);
  return store;
}

std::int64_t HistoryStore::schema_version() {
  std::vector<SqlRow> rows = db_->query("SELECT version FROM history_schema");
  return rows.empty() ? 0 : sql_integer(rows.front().at(0));
}

void HistoryStore::migrate(bool create) {
  // Readers take no write lock when the schema is current; a store that needs a step takes it,
  // and looks again, so two bench-history opening one new store at once make it once.
  auto current = [&]() -> std::int64_t {
    return db_->has_table("history_schema") ? schema_version() : 0;
  };
  auto refuse_newer = [&](std::int64_t v) {
    if (v > kHistorySchemaVersion) {
      throw Error(ErrorKind::kConflict, Mark::in(db_->describe()), "",
                  "was made by a newer bench-history (schema " + std::to_string(v) +
                      "; this one knows up to " + std::to_string(kHistorySchemaVersion) + ")",
                  "use that bench-history, or a newer one than this");
    }
  };
  auto refuse_foreign = [&](std::int64_t v) {
    if (v == 0 && db_->has_any_table()) {
      throw Error(ErrorKind::kConflict, Mark::in(db_->describe()), "",
                  "is not a history store: it holds tables of something else",
                  "give --store a new file or an empty database");
    }
    if (v == 0 && !create) {
      throw Error(ErrorKind::kIo, Mark::in(db_->describe()), "",
                  "is an empty database, not a history store yet",
                  "`bench-history ingest DIR --store ...` makes one");
    }
  };
  std::int64_t version = current();
  refuse_newer(version);
  refuse_foreign(version);
  if (version == kHistorySchemaVersion) return;
  Transaction tx(*db_);
  version = current();
  refuse_newer(version);
  refuse_foreign(version);
  if (version == 0) db_->script("CREATE TABLE history_schema (version BIGINT NOT NULL);");
  for (const SchemaStep& step : kSchemaSteps) {
    if (step.version > version) db_->script(step.sql);
  }
  db_->exec("DELETE FROM history_schema");
  db_->exec("INSERT INTO history_schema (version) VALUES (?)", {kHistorySchemaVersion});
  tx.commit();
}

size_t HistoryStore::record(const std::vector<HistoryRun>& runs) try {
  if (runs.empty()) return 0;
  size_t added = 0;
  const std::string ingested = now_utc();
  Transaction tx(*db_);
  // The order runs reached the store in: status.json's times are whole seconds, and runs of
  // one second are ordered by it (each ingest, and each tree's walk, in the order they ran).
  std::int64_t seq = sql_integer(db_->query("SELECT COALESCE(MAX(seq), 0) FROM runs").at(0).at(0));
  for (const HistoryRun& r : runs) {
    const std::int64_t inserted = db_->exec(
        "INSERT INTO runs (run_key, sweep, tag, config_hash, series_key, benchmark, scenario, "
        "repeat_index, attempt, status, reason, started, ended, seconds, results_dir, "
        "environment_id, ingested, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "?) ON CONFLICT (run_key) DO NOTHING",
        {r.run_key, r.sweep, r.tag, r.config_hash,
         r.series_key.empty() ? r.config_hash : r.series_key, r.benchmark, r.scenario, r.repeat,
         r.attempt, r.status, r.reason, r.started, r.ended, real_or_null(r.seconds), r.results_dir,
         r.environment_id, r.ingested.empty() ? ingested : r.ingested, seq + 1});
    if (inserted == 0) continue;
    ++added;
    ++seq;
    // A configuration is stored once, with its first run that knows it.
    if (!r.config_json.empty()) {
      db_->exec(
          "INSERT INTO configs (config_hash, config) VALUES (?, ?) "
          "ON CONFLICT (config_hash) DO NOTHING",
          {r.config_hash, r.config_json});
    }
    // A run's metrics in statements of up to 64 rows: one statement per row was half of an
    // ingest's time.
    constexpr size_t kRowsPerInsert = 64;
    for (size_t first = 0; first < r.metrics.size(); first += kRowsPerInsert) {
      const size_t n = std::min(kRowsPerInsert, r.metrics.size() - first);
      std::string& sql = metric_inserts_[n];
      if (sql.empty()) {
        sql = "INSERT INTO metrics (run_seq, name, value, ci_low, ci_high, unit) VALUES ";
        for (size_t i = 0; i < n; ++i) sql += i ? ", (?, ?, ?, ?, ?, ?)" : "(?, ?, ?, ?, ?, ?)";
      }
      std::vector<SqlValue> params;
      params.reserve(6 * n);
      for (size_t i = first; i < first + n; ++i) {
        const HistoryMetric& m = r.metrics[i];
        params.insert(params.end(), {seq, m.name, real_or_null(m.value), real_or_null(m.ci_low),
                                     real_or_null(m.ci_high), m.unit});
      }
      db_->exec(sql, params);
    }
    for (const auto& [name, value] : r.labels) {
      db_->exec("INSERT INTO run_labels (run_key, name, value) VALUES (?, ?, ?)",
                {r.run_key, name, value});
    }
    // An environment is stored once (its id is the hash of its fields).
    if (!r.environment_id.empty() && environments_.insert(r.environment_id).second) {
      for (const auto& [field, value] : r.environment) {
        db_->exec(
            "INSERT INTO environments (environment_id, field, value) VALUES (?, ?, ?) "
            "ON CONFLICT (environment_id, field) DO NOTHING",
            {r.environment_id, field, value});
      }
    }
  }
  tx.commit();
  return added;
} catch (...) {
  // Rolled back: the environments this transaction stored are not there.
  environments_.clear();
  throw;
}

std::vector<std::string> HistoryStore::known(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  for (const std::string& key : keys) {
    if (!db_->query("SELECT 1 FROM runs WHERE run_key = ?", {key}).empty()) out.push_back(key);
  }
  return out;
}

std::vector<HistoryRun> HistoryStore::runs(const HistoryFilter& f) {
  std::string sql =
      "SELECT run_key, sweep, tag, config_hash, benchmark, scenario, repeat_index, attempt, "
      "status, reason, started, ended, seconds, results_dir, environment_id, "
      "(SELECT config FROM configs c WHERE c.config_hash = runs.config_hash), ingested, "
      "series_key, seq FROM runs WHERE 1 = 1";
  std::vector<SqlValue> params;
  auto equal = [&](const char* column, const std::string& value) {
    if (value.empty()) return;
    sql += std::string(" AND ") + column + " = ?";
    params.emplace_back(value);
  };
  equal("sweep", f.sweep);
  equal("tag", f.tag);
  equal("config_hash", f.config_hash);
  equal("status", f.status);
  if (!f.since.empty()) {
    sql += " AND started >= ?";
    params.emplace_back(f.since);
  }
  if (!f.until.empty()) {
    sql += " AND started <= ?";
    params.emplace_back(f.until);
  }
  for (const auto& [name, value] : f.labels) {
    sql +=
        " AND EXISTS (SELECT 1 FROM run_labels l WHERE l.run_key = runs.run_key AND "
        "l.name = ? AND l.value = ?)";
    params.emplace_back(name);
    params.emplace_back(value);
  }
  for (const auto& [field, value] : f.environment) {
    sql +=
        " AND environment_id IN (SELECT environment_id FROM environments WHERE field = ? AND "
        "value = ?)";
    params.emplace_back(field);
    params.emplace_back(value);
  }
  if (!f.metric.empty()) {
    sql += " AND EXISTS (SELECT 1 FROM metrics m WHERE m.run_seq = runs.seq AND m.name = ?)";
    params.emplace_back(f.metric);
  }
  const bool newest = f.limit > 0 && f.config.empty();
  sql += newest ? " ORDER BY started DESC, seq DESC LIMIT ?" : " ORDER BY started, seq";
  if (newest) params.emplace_back(f.limit);

  std::vector<HistoryRun> out;
  std::map<std::string, bool> config_matches;  // by config hash
  for (const SqlRow& row : db_->query(sql, params)) {
    HistoryRun r;
    r.run_key = sql_text(row[0]);
    r.sweep = sql_text(row[1]);
    r.tag = sql_text(row[2]);
    r.config_hash = sql_text(row[3]);
    r.benchmark = sql_text(row[4]);
    r.scenario = sql_text(row[5]);
    r.repeat = sql_integer(row[6]);
    r.attempt = sql_integer(row[7]);
    r.status = sql_text(row[8]);
    r.reason = sql_text(row[9]);
    r.started = sql_text(row[10]);
    r.ended = sql_text(row[11]);
    r.seconds = sql_real(row[12]);
    r.results_dir = sql_text(row[13]);
    r.environment_id = sql_text(row[14]);
    r.config_json = sql_text(row[15]);
    r.ingested = sql_text(row[16]);
    r.series_key = sql_text(row[17]);
    r.seq = sql_integer(row[18]);
    if (!f.config.empty()) {
      // Keys are compared as bench-extract's table shows their values (8, bf16, true); each
      // configuration is looked at once.
      auto [at, fresh] = config_matches.try_emplace(r.config_hash, false);
      if (fresh && !r.config_json.empty()) {
        const Value config = parse_own_yaml(r.config_json, "the store's config of " + r.tag);
        bool all = config.is_map();
        for (const auto& [key, value] : f.config) {
          const Value* v = all ? config.find(key) : nullptr;
          all = v != nullptr && display_value(*v) == value;
          if (!all) break;
        }
        at->second = all;
      }
      if (!at->second) continue;
    }
    out.push_back(std::move(r));
  }
  if (newest) std::reverse(out.begin(), out.end());
  if (f.limit > 0 && !newest && out.size() > static_cast<size_t>(f.limit)) {
    out.erase(out.begin(), out.end() - f.limit);
  }
  std::map<std::string, std::map<std::string, std::string>> environments;  // by id
  for (HistoryRun& r : out) {
    std::vector<SqlValue> key = {r.seq};
    std::string metric_sql =
        "SELECT name, value, ci_low, ci_high, unit FROM metrics WHERE run_seq = ?";
    if (!f.metric.empty()) {
      metric_sql += " AND name = ?";
      key.emplace_back(f.metric);
    }
    for (const SqlRow& m : db_->query(metric_sql + " ORDER BY name", key)) {
      r.metrics.push_back(
          {sql_text(m[0]), sql_real(m[1]), sql_real(m[2]), sql_real(m[3]), sql_text(m[4])});
    }
    for (const SqlRow& l :
         db_->query("SELECT name, value FROM run_labels WHERE run_key = ?", {r.run_key})) {
      r.labels[sql_text(l[0])] = sql_text(l[1]);
    }
    auto [env, fresh] = environments.try_emplace(r.environment_id);
    if (fresh) {
      for (const SqlRow& e :
           db_->query("SELECT field, value FROM environments WHERE environment_id = ?",
                      {r.environment_id})) {
        env->second[sql_text(e[0])] = sql_text(e[1]);
      }
    }
    r.environment = env->second;
  }
  return out;
}

}  // namespace sweepbench
