#include "postprocess/extract.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
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

#include "core/error.h"
#include "core/exit_codes.h"
#include "core/fs.h"
#include "core/schema.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "layout/claim.h"
#include "layout/paths.h"
#include "layout/point_record.h"
#include "layout/point_status.h"
#include "postprocess/tool_main.h"
#include "results/rank_reader.h"
#include "results/summary.h"
#include "sweep/expand.h"
#include "sweep/plan_output.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

const std::vector<std::string>& identity_columns() {
  static const std::vector<std::string> c = {"sweep",  "tag",    "index", "scenario",
                                             "repeat", "status", "reason"};
  return c;
}

// The metric columns in the order summarize() gives them, whether or not a point has them.
const std::vector<std::string>& metric_columns() {
  static const std::vector<std::string> c = [] {
    SummaryInput in;
    in.step_s = {1};
    in.has_eval = true;
    in.peak_tflops = 1;
    in.memory_peak_bytes = 0;
    std::vector<std::string> names;
    for (const Metric& m : summarize(in)) names.push_back(m.name);
    return names;
  }();
  return c;
}

// A file whose presence makes its directory a point.
bool is_point_file(const std::string& name) {
  return name == kConfigFile || name == kStatusFile || is_rank_file_name(name);
}

std::optional<Value> read_json_or_yaml(const fs::path& path, std::vector<std::string>* warnings) {
  try {
    if (auto text = read_file_if_exists(path.string())) return parse_own_yaml(*text, path.string());
  } catch (const Error& e) {
    warnings->push_back(path.string() + ": cannot be read: " + e.message());
  }
  return std::nullopt;
}

// What the manifest beside a point says about it (index, scenario, repeat, sweep).
class Manifests {
 public:
  explicit Manifests(std::vector<std::string>* warnings) : warnings_(warnings) {}
  const Value* entry(const fs::path& point_dir, std::string* sweep) {
    fs::path parent = point_dir.parent_path();
    auto it = cache_.find(parent.string());
    if (it == cache_.end()) {
      it = cache_.emplace(parent.string(), Manifest()).first;
      Manifest& m = it->second;
      m.root = read_json_or_yaml(parent / kManifestFile, warnings_).value_or(Value());
      m.sweep = text_field(m.root, "sweep");
      const Value* points = m.root.is_map() ? m.root.find("points") : nullptr;
      if (points != nullptr && points->is_list()) {
        for (const Value& e : points->items()) m.by_tag.emplace(text_field(e, "tag"), &e);
      }
    }
    const Manifest& manifest = it->second;
    *sweep = manifest.sweep;
    auto e = manifest.by_tag.find(point_dir.filename().string());
    return e == manifest.by_tag.end() ? nullptr : e->second;
  }

 private:
  struct Manifest {
    Value root;
    std::string sweep;
    std::map<std::string, const Value*> by_tag;  // into root, which never moves once loaded
  };
  std::vector<std::string>* warnings_;
  std::map<std::string, Manifest> cache_;
};

Value number_or_null(double v) { return std::isfinite(v) ? Value::real(v) : Value::null(); }

const char* const kMemoryColumns[] = {"mem_torch_mem_alloc_in_bytes",
                                      "mem_peak_torch_mem_alloc_in_bytes",
                                      "mem_nvidia_mem_reserved", "cpu_percent_mean", "ram_peak_mb"};

// The memory columns of docs/extract.md into `row`: fms-acceleration's from rank 0's stages (as
// the Hugging Face Trainer logs rank 0 only), the sampler's over every rank.
void memory_columns(const std::vector<RankResult>& ranks, std::map<std::string, Value>* row) {
  const RankResult* rank0 = &ranks.front();
  for (const RankResult& r : ranks) {
    if (r.rank == 0) rank0 = &r;
  }
  const StageMemory* before = nullptr;
  std::map<std::string, const StageMemory*> stage;
  for (const StageMemory& m : rank0->memory_stages) {
    stage[m.stage] = &m;
    if (m.stage == "before_init") before = &m;
  }
  if (before != nullptr && stage.count("init") != 0 && stage.count("train") != 0) {
    // In double: the values come from files, and int64 differences could overflow.
    auto alloc = [](const StageMemory* m) {
      return static_cast<double>(m->end) - static_cast<double>(m->begin);
    };
    auto peaked = [](const StageMemory* m) {
      return std::max(0.0, static_cast<double>(m->peak) - static_cast<double>(m->end));
    };
    double base = static_cast<double>(before->end);
    const StageMemory* init = stage["init"];
    const StageMemory* train = stage["train"];
    (*row)["mem_torch_mem_alloc_in_bytes"] = Value::real(base + alloc(init) + alloc(train));
    (*row)["mem_peak_torch_mem_alloc_in_bytes"] =
        Value::real(base + alloc(init) + peaked(init) + alloc(train) + peaked(train));
  }
  std::vector<double> reserved, cpu;
  double ram_peak = -1;
  for (const RankResult& r : ranks) {
    const std::vector<std::int64_t>& dev = r.samples.device_bytes;
    if (r.samples.device_source == "nvml" && !dev.empty()) {
      reserved.push_back(static_cast<double>(*std::max_element(dev.begin(), dev.end())) -
                         static_cast<double>(dev.front()));
    }
    cpu.insert(cpu.end(), r.samples.cpu_percent.begin(), r.samples.cpu_percent.end());
    for (double mb : r.samples.ram_used_mb) ram_peak = std::max(ram_peak, mb);
  }
  if (!reserved.empty()) (*row)["mem_nvidia_mem_reserved"] = Value::real(mean(reserved));
  if (!cpu.empty()) (*row)["cpu_percent_mean"] = Value::real(mean(cpu));
  if (ram_peak >= 0) (*row)["ram_peak_mb"] = Value::real(ram_peak);
}

std::string cell_text(const Value& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.as_string();
  if (v.is_number() && !v.is_int()) return format_float_repr(v.as_float());
  return display_value(v);
}

}  // namespace

namespace {

// Walks one directory tree for points. Each directory is listed once, and a directory that cannot
// be listed costs only itself (a running sweep moves attempts aside; a colleague's tree may hold a
// directory we may not read).
class PointWalk {
 public:
  explicit PointWalk(PointSearch* out) : out_(out), manifests_(&manifest_warnings_) {}

  void walk(const fs::path& dir) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      unreadable(dir, ec);
      return;
    }
    bool point = false;
    std::vector<fs::path> subdirs;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (is_point_file(name)) point = true;
      // Directory symlinks are not followed (as find(1) does not): a link may close a loop.
      std::error_code type_ec;
      if (it->is_directory(type_ec) && !it->is_symlink(type_ec)) subdirs.push_back(it->path());
    }
    if (ec) {
      unreadable(dir, ec);
      return;
    }
    if (point) found_.insert(normal(dir));
    std::sort(subdirs.begin(), subdirs.end());
    for (const fs::path& sub : subdirs) {
      std::string name = sub.filename().string();
      // History, logs and scripts are not points, nor is anything hidden.
      if (name == "attempts" || name == "logs" || name == "submit" || starts_with(name, "."))
        continue;
      walk(sub);
    }
  }

  // A manifest that cannot be read is reported by the extraction that reads it again.
  void finish() { out_->points.assign(found_.begin(), found_.end()); }

 private:
  static std::string normal(const fs::path& p) {
    return fs::absolute(p).lexically_normal().string();
  }

  // A point its manifest names is still a point (extract_point says it cannot be read); any
  // other directory is a warning.
  void unreadable(const fs::path& dir, const std::error_code& ec) {
    std::string sweep;
    fs::path absolute = fs::absolute(dir).lexically_normal();
    if (absolute.filename().empty()) absolute = absolute.parent_path();
    if (manifests_.entry(absolute, &sweep) != nullptr) {
      found_.insert(absolute.string());
      return;
    }
    out_->warnings.push_back(dir.string() + ": cannot be read: " + ec.message() +
                             " (any points under it are left out)");
  }

  PointSearch* out_;
  std::vector<std::string> manifest_warnings_;
  Manifests manifests_;
  std::set<std::string> found_;
};

}  // namespace

PointSearch find_point_dirs(const std::vector<std::string>& paths) {
  PointSearch search;
  PointWalk walk(&search);
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      if (ec && ec != std::errc::no_such_file_or_directory) {
        walk.walk(p);  // a directory we may not look into: the walk says so
        continue;
      }
      throw Error::input(Mark::in(p), "", "is not a directory", "give a results directory");
    }
    walk.walk(p);
  }
  walk.finish();
  return search;
}

namespace {

// One point's row, and what went wrong reading it.
// `unread`: why the rank files were not read (their reader crashed or hung on them); the row is
// then built from what else the directory says, and is incomplete.
ExtractedPoint extract_point(const std::string& d, Manifests& manifests, double price_per_hour,
                             const std::string& unread = {}) {
  ExtractedPoint out;
  std::map<std::string, Value>& row = out.row;
  std::vector<std::string>& warnings = out.warnings;
  {
    fs::path dir(d);
    std::string sweep;
    row["tag"] = Value::string(dir.filename().string());
    std::string planned_hash;  // the config this directory was planned for
    if (const Value* e = manifests.entry(dir, &sweep)) {
      for (const char* key : {"index", "scenario", "repeat"}) {
        if (const Value* v = e->find(key)) row[key] = *v;
      }
      planned_hash = text_field(*e, "config_hash");
    }
    if (!sweep.empty()) row["sweep"] = Value::string(sweep);
    std::string incomplete;  // the first reason the files do not make one run
    auto flag = [&](const std::string& why) {
      if (incomplete.empty()) incomplete = why;
    };
    // A file that is there but cannot be read makes the row incomplete (and a warning).
    auto read_point_file = [&](const char* name) {
      size_t before = warnings.size();
      std::optional<Value> v = read_json_or_yaml(dir / name, &warnings);
      if (warnings.size() != before) flag(std::string(name) + " cannot be read");
      return v;
    };
    std::optional<Value> record = read_point_file(kStatusFile);

    // Every rank's file, read and checked.
    std::vector<RankResult> ranks;
    std::vector<fs::path> files;
    std::error_code ec;
    fs::directory_iterator listing(dir, ec);
    for (; !ec && listing != fs::directory_iterator(); listing.increment(ec)) {
      std::string name = listing->path().filename().string();
      if (is_rank_file_name(name)) files.push_back(listing->path());
    }
    if (ec) {
      warnings.push_back(d + ": cannot be read: " + ec.message());
      flag("its directory cannot be read (" + ec.message() + ")");
    }
    std::sort(files.begin(), files.end());
    std::map<std::int64_t, std::string> file_of;  // rank -> the file that holds it
    std::string first_name;                       // the first readable file
    if (!unread.empty()) {
      warnings.push_back(d + ": " + unread);
      flag(unread);
      files.clear();
    }
    for (const fs::path& f : files) {
      RankRead read = read_rank_file(f.string(), RankReadScope::kSummary);
      for (const std::string& p : read.problems) warnings.push_back(f.string() + ": " + p);
      std::string name = f.filename().string();
      if (!read.result) {
        flag(name + " cannot be read");
        continue;
      }
      if (ranks.empty()) {
        first_name = name;
      } else if (read.result->world_size != ranks.front().world_size) {
        flag(name + " says world_size " + std::to_string(read.result->world_size) + ", " +
             first_name + " " + std::to_string(ranks.front().world_size));
      }
      auto [it, fresh] = file_of.emplace(read.result->rank, name);
      if (!fresh) {
        flag(it->second + " and " + name + " both hold rank " + std::to_string(read.result->rank));
      }
      ranks.push_back(std::move(*read.result));
    }
    if (!ranks.empty() && static_cast<std::int64_t>(ranks.size()) != ranks.front().world_size) {
      flag(std::to_string(ranks.size()) + " rank files for world_size " +
           std::to_string(ranks.front().world_size));
    }
    // Rank 0 first: it carries what the run shares (rank_reader.h). Complete means ranks
    // 0..world_size-1, each once.
    std::stable_sort(ranks.begin(), ranks.end(),
                     [](const RankResult& a, const RankResult& b) { return a.rank < b.rank; });
    // The files must be this point's and of one run: a rank file copied from another point, or
    // one rank of another run of this point, would give a row with someone else's numbers.
    if (planned_hash.empty() && record) planned_hash = text_field(*record, "config_hash");
    if (!ranks.empty()) {
      const RankResult& lead = ranks.front();
      const std::string& lead_name = file_of[lead.rank];
      if (!planned_hash.empty() && !lead.config_hash.empty() && lead.config_hash != planned_hash) {
        std::string why = lead_name + " holds the results of another config (config_hash " +
                          lead.config_hash.substr(0, 12) + "..., this point's is " +
                          planned_hash.substr(0, 12) + "...)";
        warnings.push_back((dir / lead_name).string() + ": " + why);
        flag(why);
      }
      for (const RankResult& other : ranks) {
        if (other.run_id == lead.run_id) continue;
        const std::string& name = file_of[other.rank];
        std::string why = name + " is from another run than " + lead_name + " (run_id " +
                          (other.run_id.empty() ? "missing" : other.run_id) + ", " +
                          (lead.run_id.empty() ? "missing" : lead.run_id) + ")";
        warnings.push_back((dir / name).string() + ": " + why);
        flag(why);
        break;
      }
    }

    // The config: the point's config.yaml, else the one the rank files carry.
    std::optional<Value> config = read_point_file(kConfigFile);
    if (!config && !ranks.empty()) {
      try {
        config = parse_yaml(ranks.front().config_yaml, (dir / files.front()).string());
      } catch (const Error&) {
      }
    }
    if (config) {
      for (const KeySpec& k : Schema::get().keys()) {
        if (const Value* v = config->find_path(k.path)) row[k.path] = *v;
      }
    }

    // Status: decided as `bench-sweep status` decides it (layout/point_status.h), from
    // status.json, the claim, summary.json and the rank files, with what reading them found.
    // No liveness callback: bench-extract never asks SLURM.
    PointEvidence evidence;
    if (record && record->is_map()) evidence.record = PointRecord::from_value(*record);
    evidence.claim = PointClaim::inspect(d);
    evidence.ranks = inspect_rank_files(d);
    evidence.point_dir = d;
    bool whole = evidence.ranks.problem.empty() && incomplete.empty();
    if (evidence.ranks.problem.empty()) evidence.ranks.problem = incomplete;
    if (evidence.ranks.run_status.empty() && !ranks.empty()) {
      evidence.ranks.run_status = ranks.front().status;
      evidence.ranks.run_reason = ranks.front().reason;
    }
    PointView view = decide_point_status(evidence, std::nullopt);
    if (!incomplete.empty() && view.status == PointStatus::kPending) {
      view.status = PointStatus::kIncomplete;  // a status.json that cannot be read
      view.note = incomplete;
    }
    std::string status = to_string(view.status);
    const std::string& reason = view.note;
    out.incomplete = status == "incomplete";
    row["status"] = Value::string(status);
    row["reason"] = Value::string(reason);

    if (!ranks.empty() && whole) {
      row["world_size"] = Value::integer(ranks.front().world_size);
      row["device"] = Value::string(ranks.front().device_type);
      double mt_per_hour = 0;
      for (const Metric& m : summarize(summary_input_from_ranks(ranks))) {
        row[m.name] = number_or_null(m.value);
        if (m.name == "mt_per_hour") mt_per_hour = m.value;
      }
      memory_columns(ranks, &row);
      double price = price_per_hour;
      if (auto it = row.find("hardware.price_per_hour");
          it != row.end() && it->second.is_number()) {
        price = it->second.as_float();
      }
      if (price >= 0 && mt_per_hour > 0) {
        row["cost_usd_per_mtok"] =
            Value::real(price * static_cast<double>(ranks.front().world_size) / mt_per_hour);
      }
    }
  }
  return out;
}

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
  put_u32(&body, static_cast<std::uint32_t>(p.row.size()));
  for (const auto& [k, v] : p.row) {
    put_text(&body, k);
    put_value(&body, v);
  }
  return body;
}

ExtractedPoint decode_point(const std::string& body) {
  ExtractedPoint p;
  p.incomplete = body.size() > 1 && body[1] != 0;
  std::string rest = body.size() > 2 ? body.substr(2) : std::string();
  RecordReader r(rest);
  for (std::uint32_t n = r.u32(); n > 0; --n) p.warnings.push_back(r.text());
  for (std::uint32_t n = r.u32(); n > 0; --n) {
    std::string key = r.text();
    p.row.emplace(key, r.value());
  }
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
                                 Manifests& manifests, double price, int fd) {
#ifdef SWEEPBENCH_ASAN
  // Under a fuzzer this process is a copy of it, whose death callback would record HDF5 crashing
  // on a damaged file here as a crash of the fuzzer: it is only this reader's end.
  __sanitizer_set_death_callback(nullptr);
#endif
  try {
    for (size_t i = first; i < dirs.size(); i += jobs) {
      send_record(fd, encode_point(extract_point(dirs[i], manifests, price)));
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
      return extract_point(dirs_[i], manifests_, o_.price_per_hour, lost);
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
      reader_process(dirs_, first, jobs_, manifests_, o_.price_per_hour, pipe_fds[1]);
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

std::vector<std::string> extract_columns() {
  std::vector<std::string> columns = identity_columns();
  for (const KeySpec& k : Schema::get().keys()) columns.push_back(k.path);
  columns.insert(columns.end(), {"world_size", "device"});
  for (const std::string& m : metric_columns()) columns.push_back(m);
  for (const char* m : kMemoryColumns) columns.push_back(m);
  columns.push_back("cost_usd_per_mtok");
  return columns;
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
  for (size_t i = 0; i < dirs.size(); ++i) sink(pool.next(i));
  pool.finish();
}

ExtractTable extract_points(const std::vector<std::string>& dirs, const ExtractOptions& o) {
  ExtractTable t;
  t.columns = extract_columns();
  extract_each(
      dirs, o, [&](const std::string& w) { t.warnings.push_back(w); },
      [&](ExtractedPoint&& p) {
        t.warnings.insert(t.warnings.end(), p.warnings.begin(), p.warnings.end());
        if (p.incomplete) ++t.incomplete;
        t.rows.push_back(std::move(p.row));
      });
  return t;
}

void group_repeats(ExtractTable* t) {
  std::set<std::string> metrics(metric_columns().begin(), metric_columns().end());
  metrics.insert(std::begin(kMemoryColumns), std::end(kMemoryColumns));
  metrics.insert("cost_usd_per_mtok");
  std::set<std::string> not_key = {"tag", "index", "repeat", "status", "reason"};
  not_key.insert(metrics.begin(), metrics.end());
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < t->rows.size(); ++i) {
    std::string key;
    for (const std::string& c : t->columns) {
      if (not_key.count(c) != 0) continue;
      auto it = t->rows[i].find(c);
      key += c + "=" + (it == t->rows[i].end() ? "" : cell_text(it->second)) + "\n";
    }
    auto [it, fresh] = group_of.emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  std::vector<std::map<std::string, Value>> rows;
  for (const std::vector<size_t>& g : groups) {
    std::map<std::string, Value> row = t->rows[g.front()];
    std::vector<size_t> ok;
    for (size_t i : g) {
      if (cell_text(t->rows[i]["status"]) == "ok") ok.push_back(i);
    }
    row["repeats"] = Value::integer(static_cast<std::int64_t>(g.size()));
    if (ok.size() != g.size()) {
      for (size_t i : g) {
        if (cell_text(t->rows[i]["status"]) != "ok") {
          row["status"] = t->rows[i]["status"];
          row["reason"] =
              Value::string(std::to_string(ok.size()) + " of " + std::to_string(g.size()) +
                            " repeats ok; " + cell_text(t->rows[i]["reason"]));
          break;
        }
      }
    }
    for (const std::string& m : metrics) {
      std::vector<double> values;
      for (size_t i : ok) {
        auto it = t->rows[i].find(m);
        if (it != t->rows[i].end() && it->second.is_number())
          values.push_back(it->second.as_float());
      }
      row.erase(m);
      if (!values.empty()) {
        row[m] = Value::real(mean(values));
        row[m + "_std"] = Value::real(stddev(values));
      }
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> columns;
  for (const std::string& c : t->columns) {
    if (c == "repeat") {
      columns.push_back("repeats");
    } else {
      columns.push_back(c);
      if (metrics.count(c) != 0) columns.push_back(c + "_std");
    }
  }
  t->columns = columns;
  t->rows = rows;
}

void drop_constant_columns(ExtractTable* t, const std::vector<std::string>& keep) {
  std::vector<std::string> kept;
  for (const std::string& c : t->columns) {
    bool always =
        c == "tag" || c == "status" || std::find(keep.begin(), keep.end(), c) != keep.end();
    std::set<std::string> values;
    for (const auto& row : t->rows) {
      auto it = row.find(c);
      values.insert(it == row.end() ? "" : cell_text(it->second));
      if (values.size() > 1) break;
    }
    if (always || values.size() > 1) kept.push_back(c);
  }
  t->columns = kept;
}

ExtractFormat parse_extract_format(const std::string& name) {
  if (name == "csv") return ExtractFormat::kCsv;
  if (name == "json") return ExtractFormat::kJson;
  if (name == "jsonl") return ExtractFormat::kJsonl;
  if (name == "md") return ExtractFormat::kMarkdown;
  throw Error::input(Mark::in("--format " + name), "", "unknown format '" + name + "'",
                     "use csv, json, jsonl or md");
}

ExtractFormat extract_format_of_path(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (ext.size() > 1) {
    try {
      return parse_extract_format(ext.substr(1));
    } catch (const Error&) {
    }
  }
  throw Error::input(Mark::in(path), "", "cannot tell the format from the extension '" + ext + "'",
                     "name the file .csv, .json, .jsonl or .md, or give --format");
}

namespace {

std::string markdown_cell(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '|')
      o += "\\|";
    else if (ch == '\n')
      o += ' ';
    else
      o += ch;
  }
  return o;
}

}  // namespace

TableWriter::TableWriter(std::vector<std::string> columns, ExtractFormat format, std::ostream& out)
    : columns_(std::move(columns)), format_(format), out_(out) {
  switch (format_) {
    case ExtractFormat::kCsv:
      for (size_t i = 0; i < columns_.size(); ++i) out_ << (i ? "," : "") << csv_field(columns_[i]);
      out_ << "\n";
      return;
    case ExtractFormat::kMarkdown:
      out_ << "|";
      for (const std::string& c : columns_) out_ << " " << markdown_cell(c) << " |";
      out_ << "\n|";
      for (size_t i = 0; i < columns_.size(); ++i) out_ << "---|";
      out_ << "\n";
      return;
    case ExtractFormat::kJson:
    case ExtractFormat::kJsonl:
      return;
  }
}

void TableWriter::row(const std::map<std::string, Value>& row) {
  auto cell = [&row](const std::string& c) {
    auto it = row.find(c);
    return it == row.end() ? Value::null() : it->second;
  };
  switch (format_) {
    case ExtractFormat::kCsv:
      for (size_t i = 0; i < columns_.size(); ++i) {
        out_ << (i ? "," : "") << csv_field(cell_text(cell(columns_[i])));
      }
      out_ << "\n";
      break;
    case ExtractFormat::kMarkdown:
      out_ << "|";
      for (const std::string& c : columns_)
        out_ << " " << markdown_cell(cell_text(cell(c))) << " |";
      out_ << "\n";
      break;
    case ExtractFormat::kJson:
    case ExtractFormat::kJsonl: {
      Value obj = Value::map();
      for (const std::string& c : columns_) obj.set(c, cell(c));
      if (format_ == ExtractFormat::kJsonl) {
        out_ << emit_json(obj, -1) << "\n";  // one line per point
        break;
      }
      // What emit_json gives for the whole list, one element at a time.
      std::string text = emit_json(obj, 2);
      out_ << (rows_ == 0 ? "[" : ",") << "\n  ";
      for (char ch : text) {
        out_ << ch;
        if (ch == '\n') out_ << "  ";
      }
      break;
    }
  }
  ++rows_;
}

void TableWriter::finish() {
  if (format_ == ExtractFormat::kJson) out_ << (rows_ == 0 ? "[]\n" : "\n]\n");
  out_.flush();
}

void print_table(const ExtractTable& t, ExtractFormat format, std::ostream& out) {
  TableWriter w(t.columns, format, out);
  for (const auto& row : t.rows) w.row(row);
  w.finish();
}

namespace {

int default_jobs() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

// -o must never replace a result: not a file named as a sweep directory's files are, and nothing
// inside a point directory (one holding config.yaml, status.json or rank-00000.h5), whether or not
// it is among the inputs. Symbolic links and ".." are resolved first.
void refuse_output_among_results(const std::string& output) {
  fs::path target = fs::weakly_canonical(fs::absolute(output));
  if (is_results_file_name(target.filename().string())) {
    throw Error::input(Mark::in(output), "",
                       "is named as a sweep's results files are, and would replace one",
                       "choose another name for the table, such as results.csv");
  }
  for (fs::path dir = target.parent_path();; dir = dir.parent_path()) {
    std::error_code ec;
    for (const std::string& name :
         {std::string(kConfigFile), std::string(kStatusFile), rank_file_name(0)}) {
      if (fs::exists(dir / name, ec)) {
        throw Error::input(
            Mark::in(output), "",
            "is inside the point directory " + dir.string() + " (it holds " + name + ")",
            "write the table outside the results tree's point directories");
      }
    }
    if (dir == dir.root_path() || dir.empty()) break;
  }
}

const char* const kUsage = R"(bench-extract: results trees to one table, one row per point.
Usage: bench-extract -i PATH [PATH...] [-o OUT] [-f] [--format csv|json|jsonl|md]
                     [--drop-constant] [--keep COL]... [--group-repeats]
                     [--price-per-hour X] [--strict] [-j N]
Searches each PATH for point directories (a config.yaml, status.json or rank-NNNNN.h5 files;
attempts/ is history and left out) and prints one row per point: sweep, tag, index, scenario,
repeat, status, reason, every config key as a dotted column, world_size, device, then the
metrics of docs/metrics.md computed from every rank's file (the slowest rank's step times,
warm-up left out). Points that failed, ran out of memory or timed out are rows with their status
and reason; a rank file that cannot be read gives a warning naming it and a row with status
incomplete. --group-repeats gives one row per point over its repeats (mean, and a _std column
per metric); --price-per-hour (USD per device-hour, unless the point's hardware.price_per_hour
says) fills cost_usd_per_mtok. Points stream through -j reader processes (the output is the
same for any number); only --group-repeats and --drop-constant hold the whole table. A reader
that crashes on a damaged file, or spends more than --point-timeout seconds on one point, costs
only that point (incomplete, with a warning); a fresh reader goes on with the rest.
Output: -o OUT (format from its extension unless --format; an existing file is refused unless
-f; written whole or not at all), else standard output (CSV unless --format).
Examples:
  bench-extract -i runs/quickstart -o runs/quickstart.csv
  bench-extract -i runs/a runs/b --format md --drop-constant --keep train.micro_batch
-o never names a results file (rank-NNNNN.h5, manifest.json, ...) nor a path in a point directory.
Docs: docs/extract.md. Exit codes: 0 (also with incomplete points or unreadable directories,
unless --strict: then 1), 2 bad input, 3 the output exists (use -f), 4 file-system error (also
a refused write to standard output).
Options:
)";

}  // namespace

int bench_extract_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description desc;
  desc.add_options()("help,h", "Show this help")(
      "input,i", po::value<std::vector<std::string>>()->multitoken()->composing(),
      "Results directories (searched recursively)")("output,o", po::value<std::string>(),
                                                    "The output file; standard output if absent")(
      "force,f", "Replace an existing output file")(
      "format", po::value<std::string>(), "csv, json, jsonl or md (default: from -o, else csv)")(
      "drop-constant", "Leave out columns with one value in every row")(
      "keep", po::value<std::vector<std::string>>()->composing(),
      "Keep this column even with --drop-constant (repeatable, or A,B)")(
      "strict", "Exit 1 when a point is incomplete")(
      "group-repeats", "One row per point over its repeats: mean and _std columns")(
      "price-per-hour", po::value<double>(),
      "USD per device-hour for cost_usd_per_mtok (hardware.price_per_hour wins)")(
      "jobs,j", po::value<int>()->default_value(default_jobs()),
      "Reader processes (default: the CPUs this process may use)")(
      "point-timeout", po::value<double>()->default_value(60),
      "Seconds a reader may spend on one point's files before it is stopped and the point is "
      "incomplete");
  return run_tool(
      "bench-extract", args, desc, kUsage, out, err, [&](const po::variables_map& vm) -> int {
        if (!vm.count("input")) {
          err << "bench-extract: error: no input given\nusage: bench-extract -i PATH [-o OUT]  "
                 "(bench-extract --help)\n";
          return kExitUsage;
        }
        std::optional<std::string> output;
        if (vm.count("output")) output = vm["output"].as<std::string>();
        if (output) refuse_output_among_results(*output);
        ExtractFormat format = vm.count("format")
                                   ? parse_extract_format(vm["format"].as<std::string>())
                               : output ? extract_format_of_path(*output)
                                        : ExtractFormat::kCsv;
        if (output && !vm.count("force") && fs::exists(*output)) {
          throw Error(ErrorKind::kConflict, Mark::in(*output), "", "the output file exists",
                      "add -f to replace it, or choose another -o");
        }
        double price = vm.count("price-per-hour") ? vm["price-per-hour"].as<double>() : -1;
        if (vm.count("price-per-hour") && !(price >= 0)) {
          throw Error::input(Mark::in("--price-per-hour"), "", "must be 0 or more");
        }
        ExtractOptions options;
        options.price_per_hour = price;
        options.jobs = vm["jobs"].as<int>();
        if (options.jobs < 1) {
          throw Error::input(Mark::in("--jobs"), "", "must be 1 or more");
        }
        options.point_timeout_s = vm["point-timeout"].as<double>();
        if (!(options.point_timeout_s > 0) || options.point_timeout_s > 1e6) {
          throw Error::input(Mark::in("--point-timeout"), "", "must be more than 0 seconds");
        }
        PointSearch search = find_point_dirs(vm["input"].as<std::vector<std::string>>());
        const std::vector<std::string>& dirs = search.points;
        auto warn = [&err](const std::string& w) {
          err << "bench-extract: warning: " << w << "\n";
        };
        for (const std::string& w : search.warnings) warn(w);
        std::optional<AtomicFile> file;
        if (output) file.emplace(*output);
        std::ostream& sink = file ? file->stream() : out;
        // A refused write (a full disk) stops the extraction at once rather than at the end.
        const std::string sink_name = output ? *output : "standard output";
        size_t rows = 0, incomplete = 0;
        if (vm.count("group-repeats") || vm.count("drop-constant")) {
          // Both need every row before the first is printed.
          ExtractTable table;
          table.columns = extract_columns();
          extract_each(dirs, options, warn, [&](ExtractedPoint&& p) {
            for (const std::string& w : p.warnings) warn(w);
            if (p.incomplete) ++incomplete;
            table.rows.push_back(std::move(p.row));
          });
          if (vm.count("group-repeats")) group_repeats(&table);
          if (vm.count("drop-constant")) {
            drop_constant_columns(
                &table, vm.count("keep") ? split_commas(vm["keep"].as<std::vector<std::string>>())
                                         : std::vector<std::string>{});
          }
          print_table(table, format, sink);
          check_stream(sink, sink_name);
          rows = table.rows.size();
        } else {
          TableWriter writer(extract_columns(), format, sink);
          extract_each(dirs, options, warn, [&](ExtractedPoint&& p) {
            for (const std::string& w : p.warnings) warn(w);
            if (p.incomplete) ++incomplete;
            writer.row(p.row);
            check_stream(sink, sink_name);
            ++rows;
          });
          writer.finish();
          check_stream(sink, sink_name);
        }
        if (file) {
          file->commit();
          err << "bench-extract: " << plural(rows, "point") << " written to " << *output
              << (incomplete ? " (" + std::to_string(incomplete) + " incomplete)" : "") << "\n";
        }
        bool unread = incomplete > 0 || !search.warnings.empty();
        if (!search.warnings.empty()) {
          err << "bench-extract: " << plural(search.warnings.size(), "directory", "directories")
              << " could not be read; points under them are missing from the table\n";
        }
        return vm.count("strict") && unread ? kExitNotAllOk : kExitOk;
      });
}

}  // namespace sweepbench
