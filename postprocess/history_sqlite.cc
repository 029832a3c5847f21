// The history store in an SQLite file (Debian's libsqlite3: the embedded default, no server, no
// set-up). One connection, its statements prepared once and kept. Writers serialize on the file
// (BEGIN IMMEDIATE, and a 30 s busy timeout for the next); the default rollback journal, not
// WAL, whose shared memory does not work across the hosts of a network file system. SQLite's
// locking is not safe on NFS or Lustre either: docs/history.md says to keep the file on a local
// disk (or use a server) and lets the results trees, not the store, live on the shared one.
#include <sqlite3.h>
#include <sys/stat.h>

#include <cmath>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "postprocess/history_db.h"
#include "text/error.h"

namespace sweepbench {

namespace {

constexpr int kBusyTimeoutMs = 30000;

class SqliteDatabase final : public Database {
 public:
  SqliteDatabase(std::string path, bool create) : path_(std::move(path)) {
    struct stat st {};
    if (!create && ::stat(path_.c_str(), &st) != 0) {
      throw Error(ErrorKind::kIo, Mark::in(path_), "", "there is no history store here",
                  "`bench-history ingest DIR --store " + path_ + "` makes one");
    }
    const int rc = sqlite3_open_v2(
        path_.c_str(), &db_,
        SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw Error(ErrorKind::kIo, Mark::in(path_), "", "cannot open the history store: " + why,
                  "check the path and its directory's permissions, or choose another --store");
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    sqlite3_extended_result_codes(db_, 1);
    // A file that is no SQLite database says so here, not at the first query.
    // 64 MiB of page cache: an ingest's inserts and a series' reads stay in memory.
    script("PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536; PRAGMA schema_version;");
  }

  ~SqliteDatabase() override {
    for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
    sqlite3_close(db_);
  }

  std::int64_t exec(const std::string& sql, const std::vector<SqlValue>& params) override {
    sqlite3_stmt* stmt = bound(sql, params);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    }
    sqlite3_reset(stmt);
    if (rc != SQLITE_DONE) fail(rc, sql);
    return sqlite3_changes(db_);
  }

  std::vector<SqlRow> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    sqlite3_stmt* stmt = bound(sql, params);
    std::vector<SqlRow> rows;
    int rc;
    const int columns = sqlite3_column_count(stmt);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      SqlRow& row = rows.emplace_back();
      row.reserve(columns);
      for (int i = 0; i < columns; ++i) {
        switch (sqlite3_column_type(stmt, i)) {
          case SQLITE_INTEGER:
            row.emplace_back(static_cast<std::int64_t>(sqlite3_column_int64(stmt, i)));
            break;
          case SQLITE_FLOAT:
            row.emplace_back(sqlite3_column_double(stmt, i));
            break;
          case SQLITE_NULL:
            row.emplace_back(std::monostate{});
            break;
          default: {
            const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
            row.emplace_back(
                std::string(text ? text : "", static_cast<size_t>(sqlite3_column_bytes(stmt, i))));
          }
        }
      }
    }
    sqlite3_reset(stmt);
    if (rc != SQLITE_DONE) fail(rc, sql);
    return rows;
  }

  void script(const std::string& sql) override {
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
    std::string why = message ? message : "";
    sqlite3_free(message);
    if (rc != SQLITE_OK) fail(rc, sql, why);
  }

  bool has_any_table() override {
    return !query("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1", {}).empty();
  }

  bool has_table(const std::string& name) override {
    return !query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", {name}).empty();
  }

  void begin() override { script("BEGIN IMMEDIATE"); }
  void commit() override { script("COMMIT"); }
  void rollback() noexcept override {
    if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  std::string describe() const override { return "sqlite:" + path_; }

 private:
  sqlite3_stmt* bound(const std::string& sql, const std::vector<SqlValue>& params) {
    sqlite3_stmt*& stmt = statements_[sql];
    if (stmt == nullptr) {
      const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                        SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
      if (rc != SQLITE_OK) {
        statements_.erase(sql);
        fail(rc, sql);
      }
    }
    sqlite3_clear_bindings(stmt);
    for (size_t i = 0; i < params.size(); ++i) {
      const int at = static_cast<int>(i) + 1;
      int rc = SQLITE_OK;
      if (const auto* n = std::get_if<std::int64_t>(&params[i])) {
        rc = sqlite3_bind_int64(stmt, at, *n);
      } else if (const auto* d = std::get_if<double>(&params[i])) {
        // SQLite stores a NaN as NULL; an infinity stays one.
        rc = std::isnan(*d) ? sqlite3_bind_null(stmt, at) : sqlite3_bind_double(stmt, at, *d);
      } else if (const auto* s = std::get_if<std::string>(&params[i])) {
        rc = sqlite3_bind_text64(stmt, at, s->data(), s->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      } else {
        rc = sqlite3_bind_null(stmt, at);
      }
      if (rc != SQLITE_OK) fail(rc, sql);
    }
    return stmt;
  }

  // The database refused: what people can act on, by SQLite's primary result code.
  [[noreturn]] void fail(int rc, const std::string& sql, std::string why = {}) {
    if (why.empty()) why = sqlite3_errmsg(db_);
    std::string hint;
    switch (rc & 0xff) {
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
        hint = "another process held the store for " + std::to_string(kBusyTimeoutMs / 1000) +
               " s: try again when it is done";
        break;
      case SQLITE_FULL:
        hint = "free space on its disk";
        break;
      case SQLITE_READONLY:
      case SQLITE_PERM:
      case SQLITE_CANTOPEN:
        hint = "the store and its directory must be writable by you";
        break;
      case SQLITE_NOTADB:
      case SQLITE_CORRUPT:
        hint = "--store must name a history store made by bench-history (or a new file)";
        break;
      case SQLITE_IOERR:
        hint =
            "the file system refused; on NFS or Lustre keep the store on a local disk "
            "(docs/history.md)";
        break;
      default:
        throw Error(ErrorKind::kIo, Mark::in(path_), "",
                    "the history store refused a statement (a sweepbench bug): " + why +
                        " in: " + sql.substr(0, 200));
    }
    throw Error(ErrorKind::kIo, Mark::in(path_), "", why, hint);
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

}  // namespace

std::unique_ptr<Database> open_sqlite_database(const std::string& path, bool create) {
  return std::make_unique<SqliteDatabase>(path, create);
}

}  // namespace sweepbench
