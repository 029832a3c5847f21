#include "postprocess/history_db.h"

#include <cmath>
#include <functional>
#include <limits>

#include "text/error.h"
#include "text/text.h"

namespace sweepbench {

// One per backend file.
std::unique_ptr<Database> open_sqlite_database(const std::string& path, bool create);
std::unique_ptr<Database> open_postgres_database(const std::string& url);

namespace {

struct Backend {
  const char* scheme;
  std::function<std::unique_ptr<Database>(const std::string& url, const std::string& rest,
                                          bool create)>
      open;
};

const std::vector<Backend>& backends() {
  static const std::vector<Backend> list = {
      {"sqlite",
       [](const std::string& url, const std::string& rest, bool create) {
         // sqlite:///abs/path and sqlite:path; sqlite://host/... names no file.
         std::string path = rest;
         if (path.rfind("///", 0) == 0) {
           path = path.substr(2);
         } else if (path.rfind("//", 0) == 0) {
           throw Error::input(Mark::in(url), "", "an SQLite store is a file, not a host",
                              "write sqlite:///ABSOLUTE/PATH, sqlite:RELATIVE/PATH or the path");
         }
         if (path.empty()) {
           throw Error::input(Mark::in(url), "", "names no file",
                              "write sqlite:PATH or the path itself");
         }
         return open_sqlite_database(path, create);
       }},
      // libpq's connection URI: postgresql://USER:PASSWORD@HOST:PORT/DATABASE?OPTIONS.
      {"postgresql", [](const std::string& url, const std::string&,
                        bool) { return open_postgres_database(url); }},
      {"postgres", [](const std::string& url, const std::string&,
                      bool) { return open_postgres_database(url); }},
  };
  return list;
}

}  // namespace

std::vector<std::string> database_schemes() {
  std::vector<std::string> out;
  for (const Backend& b : backends()) out.push_back(b.scheme);
  return out;
}

std::unique_ptr<Database> open_database(const std::string& url, bool create) {
  // libpq's key=value form ("host=db password=..."): never a file name.
  if (url.find('=') != std::string::npos && url.find(' ') != std::string::npos &&
      url.find("://") == std::string::npos) {
    throw Error::input(Mark::in("--store"), "",
                       "looks like a libpq key=value connection string, not a store URL",
                       "write it as postgresql://USER@HOST:PORT/DATABASE");
  }
  // SCHEME://... or sqlite:...; anything else is a path to an SQLite file.
  size_t colon = url.find(':');
  bool has_scheme = false;
  if (colon != std::string::npos && colon > 0) {
    has_scheme = url.compare(colon, 3, "://") == 0 || url.compare(0, colon, "sqlite") == 0;
    for (size_t i = 0; i < colon && has_scheme; ++i) {
      const char c = url[i];
      has_scheme = std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
    }
  }
  if (!has_scheme) return open_sqlite_database(url, create);
  const std::string scheme = url.substr(0, colon);
  for (const Backend& b : backends()) {
    if (scheme == b.scheme) return b.open(url, url.substr(colon + 1), create);
  }
  throw Error::input(Mark::in("--store"), "",
                     "'" + scheme + "' is not a store this bench-history knows",
                     "known: " + join(database_schemes(), ", ") + " (or a path to an SQLite file)");
}

std::string sql_text(const SqlValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* n = std::get_if<std::int64_t>(&v)) return std::to_string(*n);
  if (const auto* d = std::get_if<double>(&v)) return format_float_repr(*d);
  return "";
}

std::int64_t sql_integer(const SqlValue& v) {
  if (const auto* n = std::get_if<std::int64_t>(&v)) return *n;
  if (const auto* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  if (const auto* s = std::get_if<std::string>(&v)) {
    try {
      return std::stoll(*s);
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

double sql_real(const SqlValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* n = std::get_if<std::int64_t>(&v)) return static_cast<double>(*n);
  return std::numeric_limits<double>::quiet_NaN();
}

bool sql_null(const SqlValue& v) { return std::holds_alternative<std::monostate>(v); }

}  // namespace sweepbench
