#include "postprocess/history_ingest.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "config/yaml_io.h"
#include "layout/paths.h"
#include "layout/point_record.h"
#include "metrics/summary.h"
#include "os/fs.h"
#include "postprocess/discover.h"
#include "postprocess/point_row.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {

namespace {

namespace fs = std::filesystem;

// One finished attempt found in a tree, before its files are read.
struct Attempt {
  std::string dir;        // the point directory, or its attempts/N/
  std::string point_dir;  // the point directory
  std::string tag, sweep, scenario;
  std::int64_t repeat = 0;
  PointRecord record;
  std::string key;
};

bool finished(PointStatus s) {
  return s != PointStatus::kPending && s != PointStatus::kRunning && s != PointStatus::kIncomplete;
}

bool is_utc_time(const std::string& t) {
  try {
    return history_time_bound(t, "started", false) == t;
  } catch (const Error&) {
    return false;
  }
}

bool is_interval_name(const std::string& name) {
  for (const char* end : {"_ci_low", "_ci_high", "_ci_low_s", "_ci_high_s"}) {
    const std::string e(end);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      return true;
    }
  }
  return false;
}

// A small JSON or YAML file of the tree (summary.json, config.yaml), as untrusted input: a
// regular file, no link, kilobytes (os/fs.h). nullopt when absent. One that is there but cannot
// be read (cut short, a link, a FIFO) sets *unreadable and says so in a warning: its attempt is
// left out, not stored without what the file holds, and a later ingest takes it.
std::optional<Value> read_tree_file(const std::string& path, std::vector<std::string>* warnings,
                                    bool* unreadable, std::string* text_out = nullptr) {
  try {
    std::optional<std::string> text = read_file_if_exists(path, kMaxSmallFile, Links::kRefuse);
    if (!text) return std::nullopt;
    Value v = parse_own_yaml(*text, path);
    if (!v.is_map()) throw Error::input(Mark::in(path), "", "is not a mapping");
    if (text_out) *text_out = std::move(*text);
    return v;
  } catch (const Error& e) {
    warnings->push_back(path + ": " + e.detail() +
                        " (its attempt is left out: a later ingest takes it once the file is "
                        "whole)");
    *unreadable = true;
    return std::nullopt;
  }
}

std::string text_at(const Value* map, const char* key) {
  const Value* v = map && map->is_map() ? map->find(key) : nullptr;
  return v && v->is_string() ? v->as_string() : "";
}

// An attempt as the store keeps it, from its status.json (the runner's record: status, times,
// where), its summary.json (rank 0's metrics, units and environment) and the point's config.yaml
// when it is the attempt's (the same config hash): no rank file is opened.
std::optional<HistoryRun> run_from_files(const Attempt& a, const std::string& config_json,
                                         const std::string& series_key,
                                         const std::map<std::string, std::string>& labels,
                                         std::vector<std::string>* warnings) {
  HistoryRun r;
  r.run_key = a.key;
  r.sweep = a.sweep;
  r.tag = a.tag;
  r.config_hash = a.record.config_hash;
  r.scenario = a.scenario;
  r.repeat = a.repeat;
  r.attempt = a.record.attempt;
  r.status = to_string(a.record.status);
  r.reason = a.record.reason;
  r.started = a.record.started;
  r.ended = a.record.ended;
  r.seconds = a.record.seconds;
  r.results_dir = fs::absolute(a.dir).lexically_normal().string();
  r.labels = labels;
  r.config_json = config_json;
  r.series_key = series_key;

  bool unreadable = false;
  const std::optional<Value> summary =
      read_tree_file((fs::path(a.dir) / kSummaryFile).string(), warnings, &unreadable);
  if (unreadable) return std::nullopt;
  const Value* s = summary && summary->is_map() ? &*summary : nullptr;
  r.benchmark = text_at(s, "benchmark");

  auto env = [&](const std::string& field, const std::string& value) {
    if (!value.empty()) r.environment[field] = value;
  };
  env("host", a.record.host);
  env("nodes", a.record.nodes);
  env("partition", a.record.partition);
  env("device_name", text_at(s, "device_name"));
  if (const Value* e = s ? s->find("environment") : nullptr; e && e->is_map()) {
    for (const Value::Entry& entry : e->entries()) {
      if (entry.value.is_string()) env(entry.key, entry.value.as_string());
    }
  }
  r.environment_id = history_environment_id(r.environment);

  const Value* metrics = s ? s->find("metrics") : nullptr;
  const Value* units = s ? s->find("units") : nullptr;
  if (metrics && metrics->is_map()) {
    auto number = [&](const std::string& name) -> std::optional<double> {
      const Value* v = metrics->find(name);
      if (v && v->is_number() && std::isfinite(v->as_float())) return v->as_float();
      return std::nullopt;
    };
    for (const Value::Entry& entry : metrics->entries()) {
      std::optional<double> value = number(entry.key);
      if (!value || is_interval_name(entry.key)) continue;
      HistoryMetric m;
      m.name = entry.key;
      m.value = *value;
      for (const auto& [low, high] : interval_columns(entry.key)) {
        std::optional<double> l = number(low), h = number(high);
        if (l && h) {
          m.ci_low = *l;
          m.ci_high = *h;
          break;
        }
      }
      m.unit = text_at(units, entry.key.c_str());
      r.metrics.push_back(std::move(m));
    }
  }
  return r;
}

// The point's config.yaml as one JSON object of bench-extract's config cells, when it is the
// config `config_hash` names (its first line says which, the hash whole); "" otherwise.
std::string config_json_of(const std::string& point_dir, const std::string& config_hash,
                           std::vector<std::string>* warnings, bool* unreadable) {
  std::string text;
  std::optional<Value> config =
      read_tree_file((fs::path(point_dir) / kConfigFile).string(), warnings, unreadable, &text);
  std::string first_line = text.substr(0, text.find('\n'));
  while (!first_line.empty() && (first_line.back() == ' ' || first_line.back() == '\r')) {
    first_line.pop_back();
  }
  const std::string said = "config_hash: " + config_hash;
  const bool names_it = first_line.size() >= said.size() &&
                        first_line.compare(first_line.size() - said.size(), said.size(), said) == 0;
  if (!config || config_hash.empty() || !names_it) return "";
  std::map<std::string, Value> cells;
  config_cells(*config, &cells);
  Value object = Value::map();
  for (auto& [key, value] : cells) object.set(key, std::move(value));
  return emit_json(object, -1, true);
}

// The earlier attempts of a point: attempts/N/ with a status.json, by N.
std::vector<std::string> earlier_attempt_dirs(const std::string& point_dir) {
  std::vector<std::pair<long, std::string>> found;
  std::error_code ec;
  fs::directory_iterator it(fs::path(point_dir) / kAttemptsDir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.size() > 9 ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    if (it->is_directory(ec) && !it->is_symlink(ec))
      found.emplace_back(std::stol(name), it->path());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [n, path] : found) out.push_back(path);
  return out;
}

// The store's writer on a thread of its own: it records one batch while the ingest's readers
// read and parse the next (on two cores the writer is the longer of the two). Batches are recorded
// in order, each in its own transaction, so a writer killed at any moment leaves whole runs as
// before. The thread is the only user of the store's connection while it runs.
class BatchWriter {
 public:
  explicit BatchWriter(HistoryStore& store) : store_(store), thread_([this] { loop(); }) {}
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;
  ~BatchWriter() {
    try {
      finish();
    } catch (...) {  // an error already being handled by the caller; its batches are lost
    }
  }

  // Waits while two batches are queued: memory stays that of a few batches. Throws the
  // writer's error, if it had one, without queueing more.
  void push(std::vector<HistoryRun> batch) {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return queue_.size() < 2 || error_; });
    if (error_) std::rethrow_exception(error_);
    queue_.push_back(std::move(batch));
    ready_.notify_one();
  }

  // Records what is queued, stops the thread and returns how many runs were new; throws the
  // writer's error.
  size_t finish() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      ready_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return added_;
  }

 private:
  void loop() {
    for (;;) {
      std::vector<HistoryRun> batch;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
        room_.notify_one();
      }
      try {
        added_ += store_.record(batch);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
        queue_.clear();
        room_.notify_one();
        return;
      }
    }
  }

  HistoryStore& store_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<std::vector<HistoryRun>> queue_;
  bool done_ = false;
  std::exception_ptr error_;
  size_t added_ = 0;
  std::thread thread_;  // last: started once the rest is made
};

// Threads to read a tree's files with: one for a few hundred points, else one a core (up to 8).
size_t reader_threads(size_t items) {
  return items < 256 ? 1 : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
}

// part(r, from, to) for `parts` contiguous parts of [0, n), part 0 on this thread and the rest on
// threads of their own; the first failure is thrown once all have ended.
void in_parts(size_t n, size_t parts, const std::function<void(size_t, size_t, size_t)>& part) {
  std::exception_ptr failed;
  std::mutex failed_mutex;
  auto run = [&](size_t r) {
    try {
      part(r, n * r / parts, n * (r + 1) / parts);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failed_mutex);
      if (!failed) failed = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  for (size_t r = 1; r < parts; ++r) helpers.emplace_back(run, r);
  run(0);
  for (std::thread& t : helpers) t.join();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace

void add_label(const std::string& text, std::map<std::string, std::string>* labels) {
  const size_t eq = text.find('=');
  const std::string name = eq == std::string::npos ? text : text.substr(0, eq);
  const bool name_ok =
      !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
      });
  if (eq == std::string::npos || !name_ok) {
    throw Error::input(Mark::in("--label " + text), "",
                       eq == std::string::npos ? "has no '='" : "'" + name + "' is no label name",
                       "write NAME=VALUE, NAME of letters, digits, _ . and -");
  }
  const std::string value = text.substr(eq + 1);
  if (value.size() > 4096 || std::any_of(value.begin(), value.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
      })) {
    throw Error::input(Mark::in("--label " + name), "",
                       "the value holds a control character or is over 4096 bytes",
                       "give one line of printable text");
  }
  (*labels)[name] = value;
}

IngestReport ingest_results(HistoryStore& store, const std::vector<std::string>& paths,
                            const IngestOptions& options,
                            const std::function<void(const std::string&)>& warning) {
  IngestReport report;
  auto warn = [&](const std::string& text) {
    report.warnings.push_back(text);
    if (warning) warning(text);
  };
  PointSearch search = find_point_dirs(paths);
  for (const std::string& w : search.warnings) warn(w);
  if (search.points.empty()) warn("no point directory under " + join(paths, ", "));

  // Every finished attempt and its key, from status.json alone: each point's manifest entry here,
  // its status files on reader threads, taken in order.
  std::vector<std::string> manifest_warnings;
  Manifests manifests(&manifest_warnings);
  std::vector<Attempt> bases(search.points.size());
  for (size_t i = 0; i < search.points.size(); ++i) {
    const std::string& point = search.points[i];
    std::string sweep;
    const ManifestPoint* entry = manifests.entry(fs::path(point), &sweep);
    Attempt& base = bases[i];
    base.tag = fs::path(point).filename().string();
    base.sweep = sweep;
    base.scenario = entry && entry->scenario ? *entry->scenario : "default";
    base.repeat = entry && entry->repeat ? *entry->repeat : 0;
    base.point_dir = point;
  }
  struct Walked {
    std::vector<Attempt> attempts;
    std::vector<std::string> warnings;
    size_t left_out = 0, unfinished = 0;
  };
  std::vector<Walked> walked(bases.size());
  auto walk = [&](const Attempt& base, Walked* out) {
    const std::string& point = base.point_dir;
    std::vector<std::string> dirs = earlier_attempt_dirs(point);
    dirs.push_back(point);
    for (const std::string& dir : dirs) {
      std::optional<PointRecord> record;
      try {
        record = read_point_record(dir);
      } catch (const Error& e) {
        out->warnings.push_back(dir + ": " + e.detail() + " (left out)");
        ++out->left_out;
        continue;
      }
      if (!record || !finished(record->status)) {
        if (dir == point) ++out->unfinished;
        continue;
      }
      // The key and the series' order rest on these: a status.json without them (edited by
      // hand, from something else) is no attempt to keep.
      if (!is_utc_time(record->started) || record->config_hash.empty()) {
        out->warnings.push_back(
            status_path(dir) + ": " +
            (record->config_hash.empty()
                 ? std::string("has no config_hash")
                 : "started '" + record->started + "' is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)") +
            " (left out)");
        ++out->left_out;
        continue;
      }
      Attempt a = base;
      a.dir = dir;
      a.record = *record;
      a.key = history_run_key(a.tag, a.record.attempt, a.record.config_hash, a.record.host,
                              a.record.pid, a.record.started);
      out->attempts.push_back(std::move(a));
    }
  };
  in_parts(bases.size(), reader_threads(bases.size()), [&](size_t, size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) walk(bases[i], &walked[i]);
  });
  std::vector<Attempt> attempts;
  for (Walked& w : walked) {
    for (const std::string& text : w.warnings) warn(text);
    report.left_out += w.left_out;
    report.unfinished += w.unfinished;
    for (Attempt& a : w.attempts) attempts.push_back(std::move(a));
  }
  for (const std::string& w : manifest_warnings) warn(w);
  report.attempts = attempts.size();

  // Only the attempts the store lacks are read.
  std::vector<std::string> keys;
  for (const Attempt& a : attempts) keys.push_back(a.key);
  std::vector<std::string> have = store.known(keys);
  const std::set<std::string> known(have.begin(), have.end());
  std::vector<const Attempt*> fresh;
  std::set<std::string> seen;  // one attempt reached twice (two paths to one tree) is read once
  for (const Attempt& a : attempts) {
    if (known.count(a.key) || !seen.insert(a.key).second) {
      ++report.known;
    } else {
      fresh.push_back(&a);
    }
  }
  // The fresh attempts' files are read and parsed a batch at a time, the batch shared among
  // `readers` threads in contiguous parts (repeats of one configuration stay together), while the
  // writer records the batch before. Each reader keeps its own configurations' cells, made once
  // per configuration; one whose config.yaml is not the attempt's is looked for again at the next
  // point. What a batch gives is taken in order, so the store's order and the warnings' are those
  // of one thread.
  struct Known {
    std::string json, series_key;
  };
  struct Reader {
    std::map<std::string, Known> configs;  // by config hash
  };
  struct Made {
    std::optional<HistoryRun> run;
    std::vector<std::string> warnings;
  };
  auto make = [&options](Reader& reader, const Attempt& a, Made* out) {
    auto at = reader.configs.find(a.record.config_hash);
    if (at == reader.configs.end()) {
      bool unreadable = false;
      std::string json =
          config_json_of(a.point_dir, a.record.config_hash, &out->warnings, &unreadable);
      if (unreadable) return;
      if (!json.empty()) {
        std::string key = history_series_key(json);
        at = reader.configs.emplace(a.record.config_hash, Known{std::move(json), std::move(key)})
                 .first;
      }
    }
    const bool have_config = at != reader.configs.end();
    // Without its config, an attempt is a series of its own point (its tag names its config).
    out->run = run_from_files(a, have_config ? at->second.json : std::string(),
                              have_config ? at->second.series_key : "tag:" + a.tag, options.labels,
                              &out->warnings);
  };
  const size_t readers = reader_threads(fresh.size());
  std::vector<Reader> reader_state(readers);
  std::vector<std::string> file_warnings;
  BatchWriter writer(store);
  for (size_t first = 0; first < fresh.size(); first += options.batch) {
    const size_t n = std::min(options.batch, fresh.size() - first);
    std::vector<Made> made(n);
    in_parts(n, readers, [&](size_t r, size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) make(reader_state[r], *fresh[first + i], &made[i]);
    });
    std::vector<HistoryRun> batch;
    batch.reserve(n);
    for (Made& m : made) {
      for (std::string& w : m.warnings) file_warnings.push_back(std::move(w));
      if (m.run) {
        batch.push_back(std::move(*m.run));
      } else {
        ++report.left_out;
      }
    }
    writer.push(std::move(batch));
  }
  report.added += writer.finish();
  for (const std::string& w : file_warnings) warn(w);
  return report;
}

}  // namespace sweepbench
