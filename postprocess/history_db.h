// The history store's connection to its database (docs/history.md): SQL with `?` parameters over
// a backend chosen by the store's URL, one per file (history_sqlite.cc). What it leaves out: the
// schema and what the rows mean (history_store.h); SQL text never holds a value, every value is
// a parameter, so nothing a results tree says can change a statement.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace sweepbench {

// A cell or a parameter: NULL, an integer, a real or text.
using SqlValue = std::variant<std::monostate, std::int64_t, double, std::string>;
using SqlRow = std::vector<SqlValue>;

class Database {
 public:
  virtual ~Database() = default;
  // Runs one statement; returns how many rows it changed (0 for an INSERT ... ON CONFLICT DO
  // NOTHING that found its key already there). Error(kIo) naming the store when the database
  // refuses (busy past its timeout, disk full, read-only).
  virtual std::int64_t exec(const std::string& sql, const std::vector<SqlValue>& params = {}) = 0;
  // The rows of a query.
  virtual std::vector<SqlRow> query(const std::string& sql,
                                    const std::vector<SqlValue>& params = {}) = 0;
  // Statements without parameters, several at once (a schema step). Only the store's own text.
  virtual void script(const std::string& sql) = 0;
  // Whether the schema has a table of this name, and whether it has any table at all.
  virtual bool has_table(const std::string& name) = 0;
  virtual bool has_any_table() = 0;
  // A transaction that writes: begin() waits for other writers (up to the busy timeout).
  virtual void begin() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  // "sqlite:/home/me/history.sqlite": what messages name.
  virtual std::string describe() const = 0;
};

// Opens the store at `url`: sqlite:PATH, sqlite:///PATH or a plain path is an SQLite file (made
// when `create`; otherwise one that is not there is an Error(kIo) saying how to make it),
// postgresql://... a server. Error(kInput) naming the known schemes for another scheme, and for
// libpq's key=value form; Error(kIo) when it cannot be opened.
std::unique_ptr<Database> open_database(const std::string& url, bool create = true);

// The schemes open_database knows, for --help and errors.
std::vector<std::string> database_schemes();

// A cell as text ("" for NULL), integer (0 for NULL) or real (NaN for NULL).
std::string sql_text(const SqlValue& v);
std::int64_t sql_integer(const SqlValue& v);
double sql_real(const SqlValue& v);
bool sql_null(const SqlValue& v);

// Commits at commit(), rolls back when left without it (an exception on the way).
class Transaction {
 public:
  explicit Transaction(Database& db) : db_(db) { db_.begin(); }
  ~Transaction() {
    if (!done_) db_.rollback();
  }
  void commit() {
    db_.commit();
    done_ = true;
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace sweepbench
