#include "postprocess/history_ingest.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/fs.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "layout/paths.h"
#include "layout/point_record.h"
#include "postprocess/extract.h"
#include "postprocess/point_row.h"
#include "results/summary.h"

namespace sweepbench {

namespace {

namespace fs = std::filesystem;

// One finished attempt found in a tree, before its files are read.
struct Attempt {
  std::string dir;  // the point directory, or its attempts/N/
  std::string tag, sweep, scenario;
  std::int64_t repeat = 0;
  PointRecord record;
  std::string key;
};

bool finished(PointStatus s) {
  return s != PointStatus::kPending && s != PointStatus::kRunning && s != PointStatus::kIncomplete;
}

// Row cells that are neither metrics nor config: identity, descriptions, flags.
const std::set<std::string>& not_metrics() {
  static const std::set<std::string> names = {"index",     "repeat",     "world_size",
                                              "exit_code", "seconds",    "in_sweep",
                                              "noisy",     "target_met", "shared"};
  return names;
}

bool is_interval_column(const std::string& name) {
  for (const char* end : {"_ci_low", "_ci_high", "_ci_low_s", "_ci_high_s"}) {
    const std::string e(end);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      return true;
    }
  }
  return false;
}

std::string cell_text(const std::map<std::string, Value>& row, const std::string& column) {
  auto it = row.find(column);
  if (it == row.end() || it->second.is_null()) return "";
  return it->second.is_string() ? it->second.as_string() : display_value(it->second);
}

// The units a point's summary.json gives its metrics (bench-train's and bench-infer's).
std::map<std::string, std::string> summary_units(const std::string& dir,
                                                 std::vector<std::string>* warnings) {
  std::map<std::string, std::string> units;
  const std::string path = (fs::path(dir) / kSummaryFile).string();
  try {
    std::optional<std::string> text = read_file_if_exists(path, kMaxSmallFile, Links::kRefuse);
    if (!text) return units;
    const Value summary = parse_own_yaml(*text, path);
    if (const Value* u = summary.is_map() ? summary.find("units") : nullptr; u && u->is_map()) {
      for (const auto& entry : u->entries()) {
        if (entry.value.is_string()) units[entry.key] = entry.value.as_string();
      }
    }
  } catch (const Error& e) {
    warnings->push_back(path + ": " + e.detail());
  }
  return units;
}

HistoryRun run_from_row(const Attempt& a, const std::map<std::string, Value>& row,
                        const std::map<std::string, std::string>& labels,
                        std::vector<std::string>* warnings) {
  HistoryRun r;
  r.run_key = a.key;
  r.sweep = a.sweep;
  r.tag = a.tag;
  r.config_hash = a.record.config_hash;
  r.benchmark = cell_text(row, "benchmark");
  r.scenario = a.scenario;
  r.repeat = a.repeat;
  r.attempt = a.record.attempt;
  // The row's status is bench-extract's (status.json's, unless the files say the run did not
  // finish): what a table of the same tree shows.
  r.status = cell_text(row, "status");
  if (r.status.empty()) r.status = to_string(a.record.status);
  r.reason = row.count("reason") ? cell_text(row, "reason") : a.record.reason;
  r.started = a.record.started;
  r.ended = a.record.ended;
  r.seconds = a.record.seconds;
  r.results_dir = fs::absolute(a.dir).lexically_normal().string();
  r.labels = labels;

  // The environment: where the runner ran it, what it ran on, with what software.
  auto env = [&](const std::string& field, const std::string& value) {
    if (!value.empty()) r.environment[field] = value;
  };
  env("host", a.record.host);
  env("nodes", a.record.nodes);
  env("partition", a.record.partition);
  env("device", cell_text(row, "device"));
  env("device_name", cell_text(row, "device_name"));
  for (const std::string& column : environment_columns()) env(column, cell_text(row, column));
  r.environment_id = history_environment_id(r.environment);

  // Config: the dotted columns, one JSON object.
  Value config = Value::map();
  for (const auto& [column, value] : row) {
    if (column.find('.') != std::string::npos) config.set(column, value);
  }
  r.config_json = emit_json(config, -1, true);

  // Metrics: the numbers that are no identity, config or interval end; each with its interval.
  std::map<std::string, std::string> units = summary_units(a.dir, warnings);
  if (auto it = row.find("units"); it != row.end() && it->second.is_map()) {
    for (const auto& entry : it->second.entries()) {
      if (entry.value.is_string()) units[entry.key] = entry.value.as_string();
    }
  }
  for (const auto& [column, value] : row) {
    if (!value.is_number() || column.find('.') != std::string::npos ||
        not_metrics().count(column) || is_interval_column(column)) {
      continue;
    }
    HistoryMetric m;
    m.name = column;
    m.value = value.as_float();
    if (!std::isfinite(m.value)) continue;
    for (const auto& [low, high] : interval_columns(column)) {
      auto l = row.find(low), h = row.find(high);
      if (l != row.end() && h != row.end() && l->second.is_number() && h->second.is_number()) {
        m.ci_low = l->second.as_float();
        m.ci_high = h->second.as_float();
        break;
      }
    }
    if (auto u = units.find(column); u != units.end()) m.unit = u->second;
    r.metrics.push_back(std::move(m));
  }
  return r;
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

  // Every finished attempt and its key, from status.json alone.
  std::vector<Attempt> attempts;
  std::vector<std::string> manifest_warnings;
  Manifests manifests(&manifest_warnings);
  for (const std::string& point : search.points) {
    std::string sweep;
    const ManifestPoint* entry = manifests.entry(fs::path(point), &sweep);
    Attempt base;
    base.tag = fs::path(point).filename().string();
    base.sweep = sweep;
    base.scenario = entry && entry->scenario ? *entry->scenario : "default";
    base.repeat = entry && entry->repeat ? *entry->repeat : 0;
    std::vector<std::string> dirs = earlier_attempt_dirs(point);
    dirs.push_back(point);
    for (const std::string& dir : dirs) {
      std::optional<PointRecord> record;
      try {
        record = read_point_record(dir);
      } catch (const Error& e) {
        warn(dir + ": " + e.detail() + " (left out)");
        continue;
      }
      if (!record || !finished(record->status)) {
        if (dir == point) ++report.unfinished;
        continue;
      }
      Attempt a = base;
      a.dir = dir;
      a.record = *record;
      a.key = history_run_key(a.sweep, a.tag, a.record.attempt, a.record.config_hash, a.record.host,
                              a.record.pid, a.record.started);
      attempts.push_back(std::move(a));
    }
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
  std::vector<std::string> dirs;
  for (const Attempt* a : fresh) dirs.push_back(a->dir);

  ExtractOptions extract;
  extract.jobs = std::max(1, options.jobs);
  extract.point_timeout_s = options.point_timeout_s;
  extract.environment = true;
  std::vector<HistoryRun> batch;
  size_t next = 0;
  std::vector<std::string> row_warnings;
  extract_each(dirs, extract, warn, [&](ExtractedPoint&& point) {
    for (const std::string& w : point.warnings) warn(w);
    const Attempt& a = *fresh[next++];
    batch.push_back(run_from_row(a, point.row, options.labels, &row_warnings));
    if (batch.size() >= options.batch) {
      report.added += store.record(batch);
      batch.clear();
    }
  });
  report.added += store.record(batch);
  for (const std::string& w : row_warnings) warn(w);
  return report;
}

}  // namespace sweepbench
