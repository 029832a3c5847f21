// The history store on a PostgreSQL server (Debian's libpq): one store for a team or a whole
// cluster, chosen by a URL (postgresql://USER@HOST:PORT/DB, libpq's own connection URI). The
// store's SQL is written with ? parameters; here they become $1, $2, ... and every statement is
// prepared once per connection. Writers serialize on an advisory lock taken at BEGIN, as
// SQLite's writers do on its file, so two ingests (or two first opens making the schema) never
// interleave. Values travel as text; results are typed from their columns' types.
#include <libpq-fe.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "postprocess/history_db.h"
#include "text/error.h"
#include "text/redact.h"

namespace sweepbench {

namespace {

// pg_type OIDs of the column types the store reads back typed (server/catalog/pg_type_d.h).
constexpr Oid kInt8 = 20, kInt2 = 21, kInt4 = 23, kFloat4 = 700, kFloat8 = 701, kNumeric = 1700;
// Any number: the advisory lock every writer of a store takes first.
constexpr long long kWriterLock = 530053;

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// "?"s outside quotes as $1, $2, ...
std::string numbered(const std::string& sql) {
  std::string out;
  int n = 0;
  char quote = 0;
  for (char c : sql) {
    if (quote) {
      if (c == quote) quote = 0;
      out += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      out += c;
    } else if (c == '?') {
      out += "$" + std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

class PostgresDatabase final : public Database {
 public:
  explicit PostgresDatabase(std::string url) : url_(std::move(url)) {
    conn_ = PQconnectdb(url_.c_str());
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string why = PQerrorMessage(conn_);
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      PQfinish(conn_);
      conn_ = nullptr;
      throw Error(ErrorKind::kIo, Mark::in(describe()), "",
                  "cannot connect to the history store: " + why,
                  "check the URL (postgresql://USER@HOST:PORT/DATABASE), that the server runs "
                  "and that the database exists");
    }
    // Notices (a table that already exists) are not the user's business.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  }

  ~PostgresDatabase() override { PQfinish(conn_); }

  std::int64_t exec(const std::string& sql, const std::vector<SqlValue>& params) override {
    Result r = run(sql, params);
    const char* n = PQcmdTuples(r.get());
    return n && *n ? std::atoll(n) : 0;
  }

  std::vector<SqlRow> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    Result r = run(sql, params);
    std::vector<SqlRow> rows;
    const int columns = PQnfields(r.get());
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      SqlRow& row = rows.emplace_back();
      for (int j = 0; j < columns; ++j) {
        if (PQgetisnull(r.get(), i, j)) {
          row.emplace_back(std::monostate{});
          continue;
        }
        const char* text = PQgetvalue(r.get(), i, j);
        switch (PQftype(r.get(), j)) {
          case kInt8:
          case kInt4:
          case kInt2:
            row.emplace_back(static_cast<std::int64_t>(std::strtoll(text, nullptr, 10)));
            break;
          case kFloat8:
          case kFloat4:
          case kNumeric:
            row.emplace_back(std::strtod(text, nullptr));  // also "Infinity", "NaN"
            break;
          default:
            row.emplace_back(std::string(text, static_cast<size_t>(PQgetlength(r.get(), i, j))));
        }
      }
    }
    return rows;
  }

  void script(const std::string& sql) override {
    Result r(PQexec(conn_, sql.c_str()));
    check(r.get(), sql);
  }

  bool has_any_table() override {
    return !query(
                "SELECT 1 FROM information_schema.tables WHERE table_schema = "
                "current_schema() LIMIT 1",
                {})
                .empty();
  }

  bool has_table(const std::string& name) override {
    return !query(
                "SELECT 1 FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_name = ?",
                {name})
                .empty();
  }

  void begin() override {
    script("BEGIN");
    script("SELECT pg_advisory_xact_lock(" + std::to_string(kWriterLock) + ")");
  }
  void commit() override { script("COMMIT"); }
  void rollback() noexcept override {
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) PQclear(PQexec(conn_, "ROLLBACK"));
  }

  std::string describe() const override { return redacted_url(url_); }

 private:
  Result run(const std::string& sql, const std::vector<SqlValue>& params) {
    auto [at, fresh] = statements_.try_emplace(sql);
    if (fresh) {
      at->second = "s" + std::to_string(statements_.size());
      Result prepared(PQprepare(conn_, at->second.c_str(), numbered(sql).c_str(), 0, nullptr));
      if (PQresultStatus(prepared.get()) != PGRES_COMMAND_OK) {
        statements_.erase(at);
        check(prepared.get(), sql);
      }
    }
    std::vector<std::string> text(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      if (const auto* n = std::get_if<std::int64_t>(&params[i])) {
        text[i] = std::to_string(*n);
      } else if (const auto* d = std::get_if<double>(&params[i])) {
        if (std::isnan(*d)) continue;  // NULL
        if (std::isinf(*d)) {
          text[i] = *d > 0 ? "Infinity" : "-Infinity";
        } else {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.17g", *d);
          text[i] = buf;
        }
      } else if (const auto* s = std::get_if<std::string>(&params[i])) {
        text[i] = *s;
      } else {
        continue;  // NULL
      }
      values[i] = text[i].c_str();
    }
    Result r(PQexecPrepared(conn_, at->second.c_str(), static_cast<int>(values.size()),
                            values.data(), nullptr, nullptr, 0));
    check(r.get(), sql);
    return r;
  }

  // The server refused: by SQLSTATE class, what people can act on.
  void check(PGresult* r, const std::string& sql) {
    const ExecStatusType status = PQresultStatus(r);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return;
    std::string why = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
    while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string cls = state ? std::string(state).substr(0, 2) : "08";
    std::string hint;
    if (cls == "08") {
      hint = "the connection to the server was lost: run it again when the server is back";
    } else if (cls == "28" || (state && std::string(state) == "42501")) {
      hint = "the store's user needs the right to create and write its tables";
    } else if (cls == "53") {
      hint = "the server is out of resources (disk, memory, connections)";
    } else if (cls == "40" || cls == "55" || cls == "57") {
      hint = "the server stopped the statement: try again";
    } else {
      throw Error(ErrorKind::kIo, Mark::in(describe()), "",
                  "the history store refused a statement (a sweepbench bug): " + why +
                      " in: " + sql.substr(0, 200));
    }
    throw Error(ErrorKind::kIo, Mark::in(describe()), "", why, hint);
  }

  std::string url_;
  PGconn* conn_ = nullptr;
  std::unordered_map<std::string, std::string> statements_;  // SQL -> prepared name
};

}  // namespace

std::unique_ptr<Database> open_postgres_database(const std::string& url) {
  return std::make_unique<PostgresDatabase>(url);
}

}  // namespace sweepbench
