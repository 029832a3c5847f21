#include "postprocess/reader_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>

// Built with AddressSanitizer (the fuzz and asan presets): see reader_process.
#if defined(__SANITIZE_ADDRESS__)
#define SWEEPBENCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWEEPBENCH_ASAN 1
#endif
#endif
#ifdef SWEEPBENCH_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#include "config/schema.h"
#include "config/yaml_io.h"
#include "layout/claim.h"
#include "layout/paths.h"
#include "layout/point_record.h"
#include "layout/point_status.h"
#include "metrics/summary.h"
#include "os/fs.h"
#include "postprocess/point_columns.h"
#include "postprocess/point_row.h"
#include "results/rank_reader.h"
#include "sweep/expand.h"
#include "sweep/plan_output.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

// -- rows between processes -------------------------------------------------------------------
// A reader process sends each point as one record: u32 length, then the encoded point. Values
// keep their types (a config's lists and maps too), so the parent gets what it would have read.

void put_u32(std::string* out, std::uint32_t v) {
  out->append(reinterpret_cast<const char*>(&v), 4);
}
void put_text(std::string* out, const std::string& text) {
  put_u32(out, static_cast<std::uint32_t>(text.size()));
  out->append(text);
}
void put_value(std::string* out, const Value& v) {
  out->push_back(static_cast<char>(v.type()));
  switch (v.type()) {
    case Value::Type::kNull:
      return;
    case Value::Type::kBool:
      out->push_back(v.as_bool() ? 1 : 0);
      return;
    case Value::Type::kInt: {
      std::int64_t i = v.as_int();
      out->append(reinterpret_cast<const char*>(&i), sizeof(i));
      return;
    }
    case Value::Type::kFloat: {
      double f = v.as_float();
      out->append(reinterpret_cast<const char*>(&f), sizeof(f));
      return;
    }
    case Value::Type::kString:
      put_text(out, v.as_string());
      return;
    case Value::Type::kList:
      put_u32(out, static_cast<std::uint32_t>(v.items().size()));
      for (const Value& item : v.items()) put_value(out, item);
      return;
    case Value::Type::kMap:
      put_u32(out, static_cast<std::uint32_t>(v.entries().size()));
      for (const Value::Entry& e : v.entries()) {
        put_text(out, e.key);
        put_value(out, e.value);
      }
      return;
  }
}

class RecordReader {
 public:
  explicit RecordReader(const std::string& data)
      : p_(data.data()), end_(data.data() + data.size()) {}
  std::uint32_t u32() {
    std::uint32_t v = 0;
    take(&v, 4);
    return v;
  }
  std::string text() {
    std::uint32_t n = u32();
    need(n);
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  Value value() {
    need(1);
    auto type = static_cast<Value::Type>(*p_++);
    switch (type) {
      case Value::Type::kNull:
        return Value::null();
      case Value::Type::kBool:
        need(1);
        return Value::boolean(*p_++ != 0);
      case Value::Type::kInt: {
        std::int64_t i = 0;
        take(&i, sizeof(i));
        return Value::integer(i);
      }
      case Value::Type::kFloat: {
        double f = 0;
        take(&f, sizeof(f));
        return Value::real(f);
      }
      case Value::Type::kString:
        return Value::string(text());
      case Value::Type::kList: {
        Value list = Value::list();
        for (std::uint32_t n = u32(); n > 0; --n) list.items().push_back(value());
        return list;
      }
      case Value::Type::kMap: {
        Value map = Value::map();
        for (std::uint32_t n = u32(); n > 0; --n) {
          std::string key = text();
          map.entries().push_back({key, Mark(), value()});
        }
        return map;
      }
    }
    throw std::runtime_error("bad value type");
  }

 private:
  void need(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) throw std::runtime_error("record cut short");
  }
  void take(void* dst, size_t n) {
    need(n);
    std::memcpy(dst, p_, n);
    p_ += n;
  }
  const char* p_;
  const char* end_;
};

// Kinds of record: a point, or the error that stopped the reader.
constexpr char kPointRecord = 'P', kErrorRecord = 'E';

std::string encode_point(const ExtractedPoint& p) {
  std::string body(1, kPointRecord);
  body.push_back(p.incomplete ? 1 : 0);
  put_u32(&body, static_cast<std::uint32_t>(p.warnings.size()));
  for (const std::string& w : p.warnings) put_text(&body, w);
  auto put_row = [&body](const std::map<std::string, Value>& row) {
    put_u32(&body, static_cast<std::uint32_t>(row.size()));
    for (const auto& [k, v] : row) {
      put_text(&body, k);
      put_value(&body, v);
    }
  };
  put_row(p.row);
  put_u32(&body, static_cast<std::uint32_t>(p.series.size()));
  for (const auto& row : p.series) put_row(row);
  return body;
}

ExtractedPoint decode_point(const std::string& body) {
  ExtractedPoint p;
  p.incomplete = body.size() > 1 && body[1] != 0;
  std::string rest = body.size() > 2 ? body.substr(2) : std::string();
  RecordReader r(rest);
  for (std::uint32_t n = r.u32(); n > 0; --n) p.warnings.push_back(r.text());
  auto get_row = [&r](std::map<std::string, Value>& row) {
    for (std::uint32_t n = r.u32(); n > 0; --n) {
      std::string key = r.text();
      row.emplace(key, r.value());
    }
  };
  get_row(p.row);
  for (std::uint32_t n = r.u32(); n > 0; --n) get_row(p.series.emplace_back());
  return p;
}

// false at end of file before any byte; an exception when cut short within the record.
bool read_record(int fd, std::string* body) {
  auto read_exact = [fd](char* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      ssize_t got = ::read(fd, dst + done, n - done);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return done;
      done += static_cast<size_t>(got);
    }
    return done;
  };
  std::uint32_t n = 0;
  size_t got = read_exact(reinterpret_cast<char*>(&n), 4);
  if (got == 0) return false;
  body->resize(n);
  if (got != 4 || read_exact(body->data(), n) != n) throw std::runtime_error("record cut short");
  return true;
}

void send_record(int fd, const std::string& body) {
  std::string framed;
  put_u32(&framed, static_cast<std::uint32_t>(body.size()));
  framed += body;
  if (!write_all(fd, framed)) ::_exit(3);  // the parent is gone
}

// A reader process: points first, first + jobs, ... to `fd`, then exits.
[[noreturn]] void reader_process(const std::vector<std::string>& dirs, size_t first, size_t jobs,
                                 Manifests& manifests, double price, Series series, int fd) {
#ifdef SWEEPBENCH_ASAN
  // Under a fuzzer this process is a copy of it, whose death callback would record HDF5 crashing
  // on a damaged file here as a crash of the fuzzer: it is only this reader's end.
  __sanitizer_set_death_callback(nullptr);
#endif
  try {
    for (size_t i = first; i < dirs.size(); i += jobs) {
      send_record(fd, encode_point(extract_point(dirs[i], manifests, price, {}, series)));
    }
  } catch (const Error& e) {
    std::string body(1, kErrorRecord);
    body.push_back(static_cast<char>(e.kind()));
    put_text(&body, e.what());
    send_record(fd, body);
  } catch (const std::exception& e) {
    std::string body(1, kErrorRecord);
    body.push_back(static_cast<char>(ErrorKind::kIo));
    put_text(&body, e.what());
    send_record(fd, body);
  }
  ::close(fd);
  ::_exit(0);
}

// Waits up to `seconds` for `fd` to be readable; false when the time ran out.
bool wait_readable(int fd, double seconds) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // let the read report it
  }
}

// The reader processes of extract_each: reader w reads points w, w + jobs, ... A reader that
// dies (HDF5 crashes on some damaged files) or takes longer than the budget on one point (HDF5
// loops on others) costs only that point: it is stopped and a fresh one goes on from the next.
class ReaderPool {
 public:
  ReaderPool(const std::vector<std::string>& dirs, size_t jobs, Manifests& manifests,
             const ExtractOptions& o)
      : dirs_(dirs), jobs_(jobs), manifests_(manifests), o_(o), fds_(jobs, -1), pids_(jobs, -1) {}
  ~ReaderPool() { stop_all(); }

  void start_all() {
    for (size_t w = 0; w < jobs_; ++w) start(w, w);
  }

  // Point i, read by its reader; an incomplete row naming what happened if the reader failed.
  ExtractedPoint next(size_t i) {
    size_t w = i % jobs_;
    if (fds_[w] < 0) start(w, i);
    std::string body;
    std::string lost;
    if (!wait_readable(fds_[w], o_.point_timeout_s)) {
      lost = "reading its rank files took longer than " + seconds_text(o_.point_timeout_s) +
             " s; the reader was stopped (a damaged HDF5 file can make HDF5 loop)";
    } else {
      bool got = false;
      try {
        got = read_record(fds_[w], &body);
      } catch (const std::exception&) {
      }
      if (!got) {
        int status = 0;
        ::close(fds_[w]);
        fds_[w] = -1;
        ::waitpid(pids_[w], &status, 0);
        pids_[w] = -1;
        lost =
            "reading its rank files " +
            (WIFSIGNALED(status) ? "killed the reader process (" + signal_text(WTERMSIG(status)) +
                                       "; HDF5 crashes on some damaged files)"
                                 : "ended the reader process with exit code " +
                                       std::to_string(WEXITSTATUS(status)));
      }
    }
    if (!lost.empty()) {
      stop(w);
      start_after(w, i);
      return extract_point(dirs_[i], manifests_, o_.price_per_hour, lost, o_.series);
    }
    if (body.size() > 1 && body[0] == kErrorRecord) {
      std::string message = body.substr(2);
      RecordReader r(message);
      throw Error(static_cast<ErrorKind>(body[1]), Mark(), "", r.text());
    }
    return decode_point(body);
  }

  // Waits for every reader to end (after the last point).
  void finish() {
    for (size_t w = 0; w < jobs_; ++w) {
      if (fds_[w] >= 0) ::close(fds_[w]);
      fds_[w] = -1;
      if (pids_[w] > 0) ::waitpid(pids_[w], nullptr, 0);
      pids_[w] = -1;
    }
  }

 private:
  static std::string seconds_text(double s) {
    std::ostringstream t;
    t << s;
    return t.str();
  }
  static std::string signal_text(int sig) {
    const char* name = ::sigdescr_np(sig);
    return "signal " + std::to_string(sig) + (name ? std::string(", ") + name : std::string());
  }

  void start(size_t w, size_t first) {
    if (first >= dirs_.size()) return;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      throw Error(ErrorKind::kIo, Mark(), "",
                  std::string("cannot make a pipe: ") + std::strerror(errno));
    }
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(pipe_fds[0]);
      for (int fd : fds_) {
        if (fd >= 0) ::close(fd);
      }
      reader_process(dirs_, first, jobs_, manifests_, o_.price_per_hour, o_.series, pipe_fds[1]);
    }
    ::close(pipe_fds[1]);
    if (pid < 0) {
      ::close(pipe_fds[0]);
      throw Error(ErrorKind::kIo, Mark(), "", std::string("cannot fork: ") + std::strerror(errno));
    }
    fds_[w] = pipe_fds[0];
    pids_[w] = pid;
  }

  // A fresh reader w for the points after i that are its.
  void start_after(size_t w, size_t i) { start(w, i + jobs_); }

  void stop(size_t w) {
    if (fds_[w] >= 0) ::close(fds_[w]);
    fds_[w] = -1;
    if (pids_[w] > 0) {
      ::kill(pids_[w], SIGKILL);
      ::waitpid(pids_[w], nullptr, 0);
    }
    pids_[w] = -1;
  }

  void stop_all() {
    for (size_t w = 0; w < jobs_; ++w) stop(w);
  }

  const std::vector<std::string>& dirs_;
  size_t jobs_;
  Manifests& manifests_;
  const ExtractOptions& o_;
  std::vector<int> fds_;
  std::vector<pid_t> pids_;
};

}  // namespace

PointSpool::PointSpool() {
  // An unnamed file: nothing is left behind, whatever ends this process.
  file_ = std::tmpfile();
  if (file_ == nullptr) {
    throw Error(ErrorKind::kIo, Mark::in("tmpfile"), "",
                std::string("cannot create a temporary file: ") + std::strerror(errno),
                "set TMPDIR to a writable directory with room for the table");
  }
}

PointSpool::~PointSpool() {
  if (file_ != nullptr) std::fclose(file_);
}

void add_command_metrics(const std::map<std::string, Value>& row, std::vector<std::string>* names) {
  auto units = row.find("units");
  if (units == row.end() || !units->second.is_map()) return;
  for (const Value::Entry& e : units->second.entries()) {
    if (std::find(names->begin(), names->end(), e.key) == names->end()) names->push_back(e.key);
  }
}

void PointSpool::add(const ExtractedPoint& p) {
  auto note_filled = [this](const std::map<std::string, Value>& row) {
    for (const auto& [column, value] : row) {
      if (!value.is_null()) filled_.insert(column);
    }
  };
  note_filled(p.row);
  for (const auto& row : p.series) note_filled(row);
  add_command_metrics(p.row, &command_metrics_);
  std::string body = encode_point(p);
  std::string framed;
  put_u32(&framed, static_cast<std::uint32_t>(body.size()));
  framed += body;
  if (std::fwrite(framed.data(), 1, framed.size(), file_) != framed.size()) {
    throw Error(ErrorKind::kIo, Mark::in("tmpfile"), "",
                std::string("cannot write the temporary table: ") + std::strerror(errno),
                "set TMPDIR to a directory with room for the table");
  }
}

std::vector<std::string> with_command_metrics(std::vector<std::string> columns,
                                              const std::vector<std::string>& metrics) {
  auto at = std::find(columns.begin(), columns.end(), "exit_code");
  std::vector<std::string> missing;
  for (const std::string& m : metrics) {
    if (std::find(columns.begin(), columns.end(), m) == columns.end()) missing.push_back(m);
  }
  columns.insert(at, missing.begin(), missing.end());
  return columns;
}

void PointSpool::replay(const std::function<void(ExtractedPoint&&)>& sink) {
  if (std::fflush(file_) != 0 || std::fseek(file_, 0, SEEK_SET) != 0) {
    throw Error(ErrorKind::kIo, Mark::in("tmpfile"), "",
                std::string("cannot read the temporary table back: ") + std::strerror(errno));
  }
  int fd = ::fileno(file_);
  ::lseek(fd, 0, SEEK_SET);
  std::string body;
  while (read_record(fd, &body)) sink(decode_point(body));
}

void extract_each(const std::vector<std::string>& dirs, const ExtractOptions& o,
                  const std::function<void(const std::string&)>& warning,
                  const std::function<void(ExtractedPoint&&)>& sink) {
  // Every manifest read once, here, before the readers start: they share it.
  std::vector<std::string> manifest_warnings;
  Manifests manifests(&manifest_warnings);
  std::string ignored;
  for (const std::string& d : dirs) manifests.entry(fs::path(d), &ignored);
  for (const std::string& w : manifest_warnings) warning(w);
  metric_columns();  // computed once, before the fork

  // Always in reader processes, --jobs 1 too: no file, however damaged, can take bench-extract
  // down with it. Point i comes from reader i % jobs, each reader's points in order: reading them
  // round robin gives the table's order, and no reader runs more than a pipe's worth ahead.
  size_t jobs = std::min<size_t>(static_cast<size_t>(std::max(1, o.jobs)), dirs.size());
  if (jobs == 0) return;
  ReaderPool pool(dirs, jobs, manifests, o);
  pool.start_all();
  for (size_t i = 0; i < dirs.size(); ++i) {
    ExtractedPoint p = pool.next(i);
    mark_noise(&p.row, o.noise_threshold);
    mark_target(&p.row);
    sink(std::move(p));
  }
  pool.finish();
}

ExtractTable extract_points(const std::vector<std::string>& dirs, const ExtractOptions& o) {
  ExtractTable t;
  t.columns = extract_columns(dirs);
  extract_each(
      dirs, o, [&](const std::string& w) { t.warnings.push_back(w); },
      [&](ExtractedPoint&& p) {
        t.warnings.insert(t.warnings.end(), p.warnings.begin(), p.warnings.end());
        if (p.incomplete) ++t.incomplete;
        t.rows.push_back(std::move(p.row));
      });
  return t;
}

}  // namespace sweepbench
