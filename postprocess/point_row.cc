#include "postprocess/point_row.h"

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
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/command_spec.h"
#include "core/config.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/schema.h"
#include "core/text.h"
#include "core/yaml_io.h"
#include "layout/claim.h"
#include "layout/paths.h"
#include "layout/point_record.h"
#include "layout/point_status.h"
#include "results/infer_metrics.h"
#include "results/memory_model.h"
#include "results/rank_reader.h"
#include "results/serve_columns.h"
#include "results/statistics.h"
#include "results/summary.h"
#include "results/time_model.h"
#include "sweep/expand.h"
#include "sweep/plan_output.h"
#include "sweep/references.h"

namespace sweepbench {

namespace fs = std::filesystem;

const std::vector<std::string>& identity_columns() {
  static const std::vector<std::string> c = {"sweep",  "tag",    "index", "scenario",
                                             "repeat", "status", "reason"};
  return c;
}

// Every metric summarize() gives, in its order.
const std::vector<std::string>& training_metric_columns() {
  static const std::vector<std::string> c = [] {
    SummaryInput in;
    in.step_s = {1};
    in.has_eval = true;
    in.peak_tflops = 1;
    in.memory_peak_bytes = in.memory_alloc_peak_bytes = in.comm_bytes_per_step = 0;
    in.cpu_shared = 0;
    in.parameter_count = 1;
    std::vector<std::string> names;
    for (const Metric& m : summarize(in)) names.push_back(m.name);
    return names;
  }();
  return c;
}

// Every metric summarize_infer() (infer_metrics.h) gives, in its order.
const std::vector<std::string>& inference_metric_columns() {
  static const std::vector<std::string> c = [] {
    InferSummaryInput infer;
    infer.runs = {{1, 2, {1}}};
    infer.batch = infer.input_tokens = infer.output_tokens = 1;
    infer.peak_tflops = infer.peak_bandwidth_gbs = 1;
    infer.memory_peak_bytes = infer.memory_alloc_peak_bytes = 0;
    infer.cpu_shared = 0;
    std::vector<std::string> names;
    for (const Metric& m : summarize_infer(infer)) names.push_back(m.name);
    return names;
  }();
  return c;
}

// The metric columns in the order summarize() gives them, then summarize_infer()'s, whether or
// not a point has them.
const std::vector<std::string>& metric_columns() {
  static const std::vector<std::string> c = [] {
    std::vector<std::string> names = training_metric_columns();
    for (const std::string& m : inference_metric_columns()) {
      if (std::find(names.begin(), names.end(), m) == names.end()) names.push_back(m);
    }
    return names;
  }();
  return c;
}

// A file whose presence makes its directory a point.
bool is_point_file(const std::string& name) {
  return name == kConfigFile || name == kStatusFile || is_rank_file_name(name);
}

namespace {

std::optional<Value> read_json_or_yaml(const fs::path& path, std::vector<std::string>* warnings) {
  try {
    // A results tree's file: a link there is refused, not followed (docs/security.md).
    if (auto text = read_file_if_exists(path.string(), kMaxSmallFile, Links::kRefuse)) {
      return parse_own_yaml(*text, path.string());
    }
  } catch (const Error& e) {
    warnings->push_back(path.string() + ": cannot be read: " + e.message());
  }
  return std::nullopt;
}

}  // namespace

// What the manifest beside a point says about it (index, scenario, repeat, sweep).
const ManifestPoint* Manifests::entry(const fs::path& point_dir, std::string* sweep) {
  const Manifest& manifest = of_directory(point_dir.parent_path());
  *sweep = manifest.sweep;
  return manifest.find(point_dir.filename().string());
}

const Manifest& Manifests::of_directory(const fs::path& dir) {
  auto it = cache_.find(dir.string());
  if (it == cache_.end()) {
    Value root = read_json_or_yaml(dir / kManifestFile, warnings_).value_or(Value());
    it = cache_.emplace(dir.string(), Manifest::from_value(root)).first;
  }
  return it->second;
}

std::vector<std::string> sweep_axes(const std::vector<std::string>& point_dirs) {
  std::vector<std::string> warnings, axes;
  Manifests manifests(&warnings);
  std::set<std::string> seen;
  for (const std::string& d : point_dirs) {
    if (!seen.insert(fs::path(d).parent_path().string()).second) continue;
    for (const std::string& k : manifests.of_directory(fs::path(d).parent_path()).varying_keys) {
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) axes.push_back(k);
    }
  }
  return axes;
}

const std::vector<std::string>& memory_column_names() {
  static const std::vector<std::string> c = {
      "mem_torch_mem_alloc_in_bytes", "mem_peak_torch_mem_alloc_in_bytes",
      "mem_nvidia_mem_reserved", "cpu_percent_mean", "ram_peak_mb"};
  return c;
}

const std::vector<std::string>& prediction_column_names() {
  static const std::vector<std::string> c = {
      "mem_pred_peak_bytes",     "mem_pred_error",       "mem_pred_resident_bytes",
      "mem_pred_resident_error", "time_pred_step_s",     "time_pred_error",
      "time_pred_device_hours",  "time_pred_comm_bytes", "time_pred_comm_error"};
  return c;
}

namespace {

// A whole number stays one (a program's `"num_requests": 32`, a count of bytes): written 32,
// not 32.0. Exact up to 2^53, as doubles are.
Value number_or_null(double v) {
  if (!std::isfinite(v)) return Value::null();
  if (v == std::floor(v) && std::fabs(v) <= 9007199254740992.0) {
    return Value::integer(static_cast<std::int64_t>(v));
  }
  return Value::real(v);
}

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
  // The measured stage: training's, or bench-infer's generations.
  const char* work = stage.count("train") != 0 ? "train" : "generate";
  if (before != nullptr && stage.count("init") != 0 && stage.count(work) != 0) {
    // In double: the values come from files, and int64 differences could overflow.
    auto alloc = [](const StageMemory* m) {
      return static_cast<double>(m->end) - static_cast<double>(m->begin);
    };
    auto peaked = [](const StageMemory* m) {
      return std::max(0.0, static_cast<double>(m->peak) - static_cast<double>(m->end));
    };
    double base = static_cast<double>(before->end);
    const StageMemory* init = stage["init"];
    const StageMemory* train = stage[work];
    (*row)["mem_torch_mem_alloc_in_bytes"] = number_or_null(base + alloc(init) + alloc(train));
    (*row)["mem_peak_torch_mem_alloc_in_bytes"] =
        number_or_null(base + alloc(init) + peaked(init) + alloc(train) + peaked(train));
  }
  std::vector<double> reserved, cpu;
  double ram_peak = -1;
  for (const RankResult& r : ranks) {
    const std::vector<std::int64_t>& dev = r.samples.device_bytes;
    if (r.samples.device_source == "nvml" && !dev.empty()) {
      reserved.push_back(static_cast<double>(*std::max_element(dev.begin(), dev.end())) -
                         static_cast<double>(dev.front()));
    }
    // -1: not sampled (the first sample, which has no interval to measure over, or
    // metrics.system off): no 0 to average in.
    for (double c : r.samples.cpu_percent) {
      if (c >= 0) cpu.push_back(c);
    }
    for (double mb : r.samples.ram_used_mb) ram_peak = std::max(ram_peak, mb);
  }
  if (!reserved.empty()) (*row)["mem_nvidia_mem_reserved"] = number_or_null(mean(reserved));
  if (!cpu.empty()) (*row)["cpu_percent_mean"] = Value::real(mean(cpu));
  if (ram_peak >= 0) (*row)["ram_peak_mb"] = Value::real(ram_peak);
}

// The rows of a point's long table: each starts as the point's row (identity and config).
// A command's figures: rank 0's (the program's own report; docs/commands.md), its exit code and
// duration, and each metric's unit.
void command_columns(const CommandResult& c, std::map<std::string, Value>* row) {
  Value units = Value::map();
  for (const CommandMetric& m : c.metrics) {
    if (!m.found) {
      (*row)[m.name] = Value::null();
    } else if (m.is_text) {
      (*row)[m.name] = Value::string(m.text);
    } else if (m.reduce == "all") {
      Value list = Value::list();
      for (double v : m.values) list.items().push_back(number_or_null(v));
      (*row)[m.name] = list;
    } else if (m.reduce == "count") {
      (*row)[m.name] = Value::integer(static_cast<std::int64_t>(m.value));
    } else {
      (*row)[m.name] = number_or_null(m.value);
    }
    units.set(m.name, Value::string(m.unit));
  }
  if (c.term_signal == 0 && c.exit_code >= 0) (*row)["exit_code"] = Value::integer(c.exit_code);
  (*row)["seconds"] = Value::real(c.seconds);
  (*row)["units"] = units;
}

// The predictions of bench-sweep plan --estimate (uncalibrated) beside what was measured, and
// their relative error, (predicted - measured) / measured: the peak of counted allocations per
// rank (mem_alloc_peak_bytes), a step's median (step_time_median_s) or a generation's
// (e2e_p50_s), and the point's device-hours.
// The prediction is of the point as it ran: a GPU the config does not name is the device the
// rank file names, a CPU rank's cores the threads it used (not the extracting machine's), the
// decode steps CUDA graphs where the rank file says they were.
void prediction_columns(const Value& config, const RankResult& lead, bool infer,
                        std::map<std::string, Value>* row) {
  Value resolved = config;
  const Value* hardware = resolved.find_path("hardware.name");
  if (lead.device_type == "cuda" && !lead.device_name.empty() &&
      (hardware == nullptr || hardware->is_null())) {
    resolved.set_path("hardware.name", Value::string(lead.device_name));
  }
  const Value* cpus = resolved.find_path("launch.cpus_per_rank");
  if (lead.device_type == "cpu" && lead.threads > 0 && (cpus == nullptr || cpus->is_null())) {
    resolved.set_path("launch.cpus_per_rank", Value::integer(lead.threads));
  }
  // Whether the decode steps were CUDA graphs, as the rank file says (its files from before
  // infer.cuda_graph: not), not as the config asked.
  if (infer && lead.device_type == "cuda") {
    resolved.set_path("infer.cuda_graph", Value::boolean(lead.infer.cuda_graph));
  }
  auto measured = [&](const char* name) {
    auto it = row->find(name);
    return it != row->end() && it->second.is_number() ? it->second.as_float() : 0.0;
  };
  auto error = [](double predicted, double actual) {
    return actual > 0 ? Value::real(predicted / actual - 1) : Value::null();
  };
  MemoryPrediction m;
  if (predict_point_memory(resolved, &m)) {
    (*row)["mem_pred_peak_bytes"] = number_or_null(m.peak);
    (*row)["mem_pred_error"] = error(m.peak, measured("mem_alloc_peak_bytes"));
    if (m.resident > 0) {  // a CPU's: against the resident set's high-water mark
      (*row)["mem_pred_resident_bytes"] = Value::real(m.resident);
      (*row)["mem_pred_resident_error"] = error(m.resident, measured("mem_peak_bytes"));
    }
  }
  TimePrediction t;
  if (predict_point_time(resolved, &t) && t.known) {
    (*row)["time_pred_step_s"] = Value::real(t.step_s);
    (*row)["time_pred_error"] =
        error(t.step_s, measured(infer ? "e2e_p50_s" : "step_time_median_s"));
    (*row)["time_pred_device_hours"] = Value::real(t.device_hours);
    if (!infer) {
      (*row)["time_pred_comm_bytes"] = Value::real(t.comm_bytes);
      (*row)["time_pred_comm_error"] = error(t.comm_bytes, measured("comm_bytes_per_step"));
    }
  }
}

std::vector<std::map<std::string, Value>> series_rows(Series series,
                                                      const std::vector<RankResult>& ranks,
                                                      const std::map<std::string, Value>& point) {
  std::vector<std::map<std::string, Value>> rows;
  auto base = [&point]() {
    std::map<std::string, Value> r;
    for (const std::string& c : identity_columns()) {
      if (auto it = point.find(c); it != point.end()) r[c] = it->second;
    }
    for (const KeySpec& k : Schema::get().keys()) {
      if (auto it = point.find(k.path); it != point.end()) r[k.path] = it->second;
    }
    for (const char* c : {"started", "device_name"}) {
      if (auto it = point.find(c); it != point.end()) r[c] = it->second;
    }
    // The entries of free maps (params: the program's own options; serve.body), a column each.
    for (const KeySpec& k : Schema::get().keys()) {
      if (k.type != KeyType::kFreeMap) continue;
      const std::string prefix = k.path + ".";
      for (auto it = point.lower_bound(prefix);
           it != point.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
        r[it->first] = it->second;
      }
    }
    return r;
  };
  if (series == Series::kSystem) {
    for (const RankResult& rank : ranks) {
      const SampleSeries& s = rank.samples;
      for (size_t i = 0; i < s.time_s.size(); ++i) {
        std::map<std::string, Value> r = base();
        r["rank"] = Value::integer(rank.rank);
        r["time_s"] = Value::real(s.time_s[i]);
        // -1: not sampled (the baseline, or metrics.system off): an empty cell, not a value.
        if (i < s.cpu_percent.size() && s.cpu_percent[i] >= 0)
          r["cpu_percent"] = Value::real(s.cpu_percent[i]);
        if (i < s.ram_used_mb.size() && s.ram_used_mb[i] >= 0)
          r["ram_used_mb"] = Value::real(s.ram_used_mb[i]);
        if (i < s.rss_bytes.size()) r["rss_bytes"] = Value::integer(s.rss_bytes[i]);
        if (i < s.device_bytes.size()) r["device_bytes"] = Value::integer(s.device_bytes[i]);
        rows.push_back(std::move(r));
      }
    }
    return rows;
  }
  if (series == Series::kLevels) {
    // Each load level of a serve point: the level, whether the SLA search added it, and its
    // figures (results/serve_columns.h), as bench-serve measured them.
    const RankResult& lead = ranks.front();
    if (lead.benchmark != "serve") return rows;
    const ServeResult& s = lead.serve;
    // Each figure's unit, as the point's row has them (bench-plot labels its axes and reads a
    // metric's direction from them): the level's by the load mode, the others' from the file.
    Value units = Value::map();
    units.set("level", Value::string(serve_level_unit(s.mode)));
    for (size_t m = 0; m < s.metric_names.size() && m < s.metric_units.size(); ++m) {
      if (!s.metric_units[m].empty())
        units.set(s.metric_names[m], Value::string(s.metric_units[m]));
    }
    for (size_t i = 0; i < s.levels.size(); ++i) {
      std::map<std::string, Value> r = base();
      r["level_index"] = Value::integer(static_cast<std::int64_t>(i));
      r["level"] = number_or_null(s.levels[i]);
      r["searched"] = Value::boolean(i < s.searched.size() && s.searched[i] != 0);
      for (size_t m = 0; m < s.metric_names.size() && m < s.level_values.size(); ++m) {
        if (i < s.level_values[m].size()) r[s.metric_names[m]] = number_or_null(s.level_values[m][i]);
      }
      r["units"] = units;
      rows.push_back(std::move(r));
    }
    return rows;
  }
  if (series == Series::kLists) {
    // Each value of a command's list metrics (reduce: all; vLLM's latencies), rank 0's as the
    // row's are: one row per value, with the metric's name and the value's place in its list.
    const RankResult* rank0 = &ranks.front();
    for (const RankResult& r : ranks) {
      if (r.rank == 0) rank0 = &r;
    }
    if (rank0->benchmark != "command") return rows;
    for (const CommandMetric& m : rank0->command.metrics) {
      if (!m.found || m.reduce != "all") continue;
      for (size_t i = 0; i < m.values.size(); ++i) {
        std::map<std::string, Value> r = base();
        r["metric"] = Value::string(m.name);
        r["unit"] = Value::string(m.unit);
        r["item"] = Value::integer(static_cast<std::int64_t>(i));
        r["value"] = number_or_null(m.values[i]);
        rows.push_back(std::move(r));
      }
    }
    return rows;
  }
  if (ranks.front().benchmark != "infer") return rows;  // tokens: inference points only
  // Each timed run's token times, the slowest rank's (as the row's metrics are).
  std::vector<std::vector<InferRunTiming>> per_rank;
  for (const RankResult& r : ranks) per_rank.push_back(timed_runs(r.infer));
  std::vector<InferRunTiming> runs = slowest_rank_runs(per_rank);
  if (runs.empty()) return rows;
  size_t positions = runs.front().step_s.size() + 1;
  for (const InferRunTiming& t : runs) positions = std::min(positions, t.step_s.size() + 1);
  if (positions == 1 && ranks.front().infer.output_tokens > 1) return rows;  // no token metrics
  for (size_t p = 0; p < positions; ++p) {
    std::vector<double> times;
    for (const InferRunTiming& t : runs) times.push_back(p == 0 ? t.ttft_s : t.step_s[p - 1]);
    std::map<std::string, Value> r = base();
    r["position"] = Value::integer(static_cast<std::int64_t>(p));
    r["runs"] = Value::integer(static_cast<std::int64_t>(times.size()));
    r["token_seconds_mean"] = number_or_null(mean(times));
    r["token_seconds_p50"] = number_or_null(percentile(times, 0.5));
    r["token_seconds_p90"] = number_or_null(percentile(times, 0.9));
    r["token_seconds_min"] = number_or_null(percentile(times, 0.0));
    r["token_seconds_max"] = number_or_null(percentile(times, 1.0));
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace

Series parse_series(const std::string& name) {
  if (name == "tokens") return Series::kTokens;
  if (name == "system") return Series::kSystem;
  if (name == "lists") return Series::kLists;
  if (name == "levels") return Series::kLevels;
  throw Error::input(Mark::in("--series " + name), "", "is not a series",
                     "use --series tokens (per-token latency of bench-infer points), --series "
                     "system (CPU and RAM over time), --series lists (each value of commands' "
                     "list metrics) or --series levels (each load level of serve points)");
}

namespace {

// Columns that only some points have: the entries of their free maps (params, serve.body) and
// their commands' metrics, read from each point's config.yaml (unreadable ones add nothing; the
// row says why).
struct PointColumns {
  std::map<std::string, std::set<std::string>> free_entries;  // by the free map's key path
  std::vector<std::string> metrics;  // in the order first seen
  std::set<std::string> benchmarks;  // the workloads present (empty: no config could be read)
  std::vector<std::string> referenced;  // metrics a performance reference was checked on
  bool predicted_commands = false;  // a command point with command.predict_as

  // Whether a point of the workload `benchmark` may be among them.
  bool has(const std::string& benchmark) const {
    return benchmarks.empty() || benchmarks.count(benchmark) != 0;
  }
};

PointColumns point_columns(const std::vector<std::string>& dirs) {
  PointColumns c;
  auto add_metric = [&](const std::string& name) {
    if (std::find(c.metrics.begin(), c.metrics.end(), name) == c.metrics.end()) {
      c.metrics.push_back(name);
    }
  };
  for (const std::string& d : dirs) {
    std::vector<std::string> ignored;
    if (std::optional<Value> record = read_json_or_yaml(fs::path(d) / kStatusFile, &ignored);
        record && record->is_map()) {
      if (const Value* refs = record->find("references"); refs != nullptr && refs->is_list()) {
        for (const Value& r : refs->items()) {
          std::string m = r.is_map() ? text_field(r, "metric") : "";
          if (!m.empty() && std::find(c.referenced.begin(), c.referenced.end(), m) ==
                                c.referenced.end()) {
            c.referenced.push_back(m);
          }
        }
      }
    }
    std::optional<Value> config = read_json_or_yaml(fs::path(d) / kConfigFile, &ignored);
    if (!config || !config->is_map()) continue;
    std::string benchmark = text_field(*config, "benchmark");
    c.benchmarks.insert(benchmark.empty() ? "train" : benchmark);
    for (const KeySpec& k : Schema::get().keys()) {
      if (k.type != KeyType::kFreeMap) continue;
      if (const Value* map = config->find_path(k.path); map != nullptr && map->is_map()) {
        for (const Value::Entry& e : map->entries()) c.free_entries[k.path].insert(e.key);
      }
    }
    if (benchmark == "serve") {
      for (const ServeColumn& m : serve_level_columns()) add_metric(m.name);
      for (const ServeColumn& m : serve_point_columns()) add_metric(m.name);
    }
    if (benchmark != "command") continue;
    if (const Value* as = config->find_path("command.predict_as");
        as != nullptr && as->is_string() && (as->as_string() == "train" || as->as_string() == "infer")) {
      c.predicted_commands = true;
    }
    if (const Value* parser = config->find_path("command.parser");
        parser != nullptr && parser->is_string()) {
      for (const MetricSpec& m : parser_metrics(parser->as_string())) add_metric(m.name);
    }
    if (const Value* metrics = config->find_path("command.metrics"); metrics != nullptr) {
      for (const Value& m : metrics->items()) {
        if (std::string name = text_field(m, "name"); !name.empty()) add_metric(name);
      }
    }
  }
  return c;
}

// Identity, then every config key that a workload present reads (a free map, params or
// serve.body, as one column per entry the points have).
std::vector<std::string> config_columns(const PointColumns& pc) {
  std::vector<std::string> columns = identity_columns();
  for (const KeySpec& k : Schema::get().keys()) {
    bool read = std::any_of(pc.benchmarks.begin(), pc.benchmarks.end(),
                            [&](const std::string& b) { return k.applies_to(b); });
    if (!pc.benchmarks.empty() && !read) continue;
    if (k.type == KeyType::kFreeMap) {
      if (auto it = pc.free_entries.find(k.path); it != pc.free_entries.end()) {
        for (const std::string& name : it->second) columns.push_back(k.path + "." + name);
      }
    } else {
      columns.push_back(k.path);
    }
  }
  return columns;
}

}  // namespace

std::vector<std::string> series_columns(Series series, const std::vector<std::string>& dirs) {
  std::vector<std::string> columns = config_columns(point_columns(dirs));
  columns.insert(columns.end(), {"started", "device_name"});
  if (series == Series::kSystem) {
    columns.insert(columns.end(),
                   {"rank", "time_s", "cpu_percent", "ram_used_mb", "rss_bytes", "device_bytes"});
  } else if (series == Series::kLists) {
    columns.insert(columns.end(), {"metric", "unit", "item", "value"});
  } else if (series == Series::kLevels) {
    columns.insert(columns.end(), {"level_index", "level", "searched"});
    for (const ServeColumn& c : serve_level_columns()) columns.push_back(c.name);
    columns.push_back("units");
  } else {
    columns.insert(columns.end(), {"position", "runs", "token_seconds_mean", "token_seconds_p50",
                                   "token_seconds_p90", "token_seconds_min", "token_seconds_max"});
  }
  return columns;
}

std::vector<std::string> extract_columns(const std::vector<std::string>& dirs) {
  // Only the columns of the workloads present: a table of command points has no training or
  // inference metrics, and one of training points no command columns.
  PointColumns pc = point_columns(dirs);
  std::vector<std::string> columns = config_columns(pc);
  // cpus, gpus, beside: where a point ran with bench-sweep run --jobs (empty otherwise).
  columns.insert(columns.end(), {"world_size", "started", "device_name", "device", "cpus", "gpus",
                                 "nodes", "beside"});
  auto add = [&](const std::string& m) {
    if (std::find(columns.begin(), columns.end(), m) == columns.end()) columns.push_back(m);
  };
  if (pc.has("train")) {
    for (const std::string& m : training_metric_columns()) add(m);
  }
  if (pc.has("infer")) {
    for (const std::string& m : inference_metric_columns()) add(m);
  }
  // A command's metric of a name bench-train or bench-infer has (tokens_per_second, say) shares
  // its column: one table compares the programs.
  for (const std::string& m : pc.metrics) add(m);
  if (pc.has("command") || pc.has("serve")) {
    columns.insert(columns.end(), {"exit_code", "seconds", "units"});
  }
  if (pc.has("train") || pc.has("infer")) {
    for (const std::string& m : memory_column_names()) columns.push_back(m);
    columns.push_back("cost_usd_per_mtok");
    for (const std::string& c : prediction_column_names()) columns.push_back(c);
  } else if (pc.has("command") || pc.has("serve")) {
    columns.insert(columns.end(), {"cpu_percent_mean", "ram_peak_mb"});  // sampled as ours
    if (pc.predicted_commands) {
      for (const std::string& c : prediction_column_names()) columns.push_back(c);
    }
  }
  if (pc.has("train") || pc.has("infer")) columns.push_back("noisy");
  if (pc.has("train") || pc.has("infer")) columns.push_back("target_met");
  if (pc.has("train")) columns.push_back("profile_trace");
  // The sweep's performance references (sweep/references.h), as bench-sweep run checked them.
  if (!pc.referenced.empty()) columns.push_back("reference");
  for (const std::string& m : pc.referenced) {
    for (const std::string& c : reference_columns(m)) columns.push_back(c);
  }
  return columns;
}

std::vector<std::string> reference_columns(const std::string& metric) {
  return {metric + "_ref", metric + "_ref_low", metric + "_ref_high", metric + "_ref_pass"};
}

const std::vector<std::string>& noise_columns() {
  static const std::vector<std::string> c = {"step_time_cv", "ttft_cv", "e2e_cv"};
  return c;
}

void mark_noise(std::map<std::string, Value>* row, double threshold) {
  bool any = false, noisy = false;
  for (const std::string& c : noise_columns()) {
    auto it = row->find(c);
    if (it == row->end() || !it->second.is_number() || !std::isfinite(it->second.as_float()))
      continue;
    any = true;
    noisy = noisy || it->second.as_float() > threshold;
  }
  if (any) (*row)["noisy"] = Value::boolean(noisy);
}

void mark_target(std::map<std::string, Value>* row) {
  std::optional<double> target = cell_number(*row, "metrics.target_ci");
  if (!target) return;
  // A training's mean step time, a generation's mean end-to-end time.
  const bool infer = cell_number(*row, "e2e_ci_low_s").has_value();
  std::optional<double> low = cell_number(*row, infer ? "e2e_ci_low_s" : "step_time_ci_low_s");
  std::optional<double> high = cell_number(*row, infer ? "e2e_ci_high_s" : "step_time_ci_high_s");
  const bool met = low && high && *high + *low > 0 &&
                   (*high - *low) / (*high + *low) <= *target;  // half-width over the middle
  (*row)["target_met"] = Value::boolean(met);
}

// One point's row, and what went wrong reading it.
// `unread`: why the rank files were not read (their reader crashed or hung on them); the row is
// then built from what else the directory says, and is incomplete.
void config_cells(const Value& config, std::map<std::string, Value>* row) {
  // A section only one workload reads (infer.*, train.*) stays empty for the others.
  const Value* benchmark = config.find_path("benchmark");
  for (const KeySpec& k : Schema::get().keys()) {
    if (benchmark != nullptr && benchmark->is_string() && !k.applies_to(benchmark->as_string())) {
      continue;
    }
    const Value* v = config.find_path(k.path);
    if (v == nullptr) continue;
    if (k.type == KeyType::kFreeMap) {
      for (const Value::Entry& e : v->entries()) (*row)[k.path + "." + e.key] = e.value;
    } else {
      (*row)[k.path] = *v;
    }
  }
}

ExtractedPoint extract_point(const std::string& d, Manifests& manifests, double price_per_hour,
                             const std::string& unread, Series series) {
  ExtractedPoint out;
  std::map<std::string, Value>& row = out.row;
  std::vector<std::string>& warnings = out.warnings;
  {
    fs::path dir(d);
    std::string sweep;
    row["tag"] = Value::string(dir.filename().string());
    std::string planned_hash;  // the config this directory was planned for
    if (const ManifestPoint* e = manifests.entry(dir, &sweep)) {
      if (e->index) row["index"] = Value::integer(*e->index);
      if (e->scenario) row["scenario"] = Value::string(*e->scenario);
      if (e->repeat) row["repeat"] = Value::integer(*e->repeat);
      // Only points no longer in their sweep are marked (bench-extract --removed).
      if (!e->in_sweep) row["in_sweep"] = Value::boolean(false);
      planned_hash = e->config_hash;
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
      // The sampler's times are read only for the system series.
      RankRead read = read_rank_file(
          f.string(), series == Series::kSystem ? RankReadScope::kAll : RankReadScope::kSummary);
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
    // The resolved config, for the predictions beside the measurements (an older or damaged
    // config that no longer resolves gives none).
    std::optional<Value> resolved;
    if (config) {
      try {
        resolved = resolve_config(normalize_partial_config(*config));
      } catch (const std::exception&) {
      }
    }
    if (config) config_cells(*config, &row);

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
    // With bench-sweep run --jobs: where the point ran and beside which points.
    if (evidence.record) {
      const PointRecord& rec = *evidence.record;
      if (!rec.cpus.empty()) row["cpus"] = Value::string(rec.cpus);
      if (!rec.gpus.empty()) row["gpus"] = Value::string(rec.gpus);
      if (!rec.nodes.empty()) row["nodes"] = Value::string(rec.nodes);
      if (rec.beside) row["beside"] = Value::string(join(*rec.beside, " "));
      if (view.status == PointStatus::kOk && !rec.reference.empty() &&
          rec.references.is_list()) {
        row["reference"] = Value::string(rec.reference);
        auto bound = [](double x) { return std::isfinite(x) ? Value::real(x) : Value::null(); };
        // Equally specific references of one metric all apply: the columns hold the first's
        // value and the range they allow together (a whole interval outside the one range
        // is outside one of theirs), and pass only when each passed.
        std::map<std::string, ReferenceCheck> merged;
        for (const Value& v : rec.references.items()) {
          std::optional<ReferenceCheck> c = ReferenceCheck::from_value(v);
          if (!c) continue;
          auto [it, fresh] = merged.emplace(c->metric, *c);
          if (fresh) continue;
          it->second.low = std::max(it->second.low, c->low);
          it->second.high = std::min(it->second.high, c->high);
          it->second.pass = it->second.pass && c->pass;
        }
        for (const auto& [metric, c] : merged) {
          const std::vector<std::string> cols = reference_columns(metric);
          row[cols[0]] = Value::real(c.reference);
          row[cols[1]] = bound(c.low);
          row[cols[2]] = bound(c.high);
          row[cols[3]] = Value::boolean(c.pass);
        }
      }
    }

    if (!ranks.empty() && whole) {
      row["world_size"] = Value::integer(ranks.front().world_size);
      row["device"] = Value::string(ranks.front().device_type);
      // Where and when, for figures' titles: rank 0's device (a GPU's or CPU's name) and start.
      if (!ranks.front().device_name.empty()) {
        row["device_name"] = Value::string(ranks.front().device_name);
      }
      if (!ranks.front().start_time.empty())
        row["started"] = Value::string(ranks.front().start_time);
      // Million tokens an hour: trained tokens, or generated ones for inference.
      double mt_per_hour = 0;
      const bool infer = ranks.front().benchmark == "infer";
      if (ranks.front().benchmark == "command" || ranks.front().benchmark == "serve") {
        // A serve point's figures are its server's command's (bench-serve writes them so).
        command_columns(ranks.front().command, &row);
        memory_columns(ranks, &row);  // the sampler's CPU and RAM (no stages, no GPU)
        // A command that declares what it runs (command.predict_as) is predicted as that point.
        if (resolved) {
          const std::string as = predicted_benchmark(*resolved);
          if (!as.empty()) prediction_columns(*resolved, ranks.front(), as == "infer", &row);
        }
      } else {
        std::vector<Metric> metrics;
        if (infer) {
          metrics = summarize_infer(infer_summary_input_from_ranks(ranks));
        } else {
          const SummaryInput in = summary_input_from_ranks(ranks);
          metrics = summarize(in);
          // One run's samples for bench-compare (statistics.h); in the row, never a column.
          Value means = Value::list();
          for (double m : batch_means(in.step_s)) means.items().push_back(Value::real(m));
          if (!means.items().empty()) row[kStepBatchMeans] = std::move(means);
        }
        for (const Metric& m : metrics) {
          row[m.name] = number_or_null(m.value);
          if (m.name == "mt_per_hour") mt_per_hour = m.value;
          if (m.name == "output_tps" && std::isfinite(m.value)) {
            mt_per_hour = m.value * 3600 / 1e6;
          }
        }
        memory_columns(ranks, &row);
        if (resolved) prediction_columns(*resolved, ranks.front(), infer, &row);
      }
      double price = price_per_hour;
      if (auto it = row.find("hardware.price_per_hour");
          it != row.end() && it->second.is_number()) {
        price = it->second.as_float();
      }
      if (price >= 0 && mt_per_hour > 0) {
        row["cost_usd_per_mtok"] =
            Value::real(price * static_cast<double>(ranks.front().world_size) / mt_per_hour);
      }
      if (!ranks.front().profile_trace.empty()) {
        row["profile_trace"] = Value::string((dir / ranks.front().profile_trace).string());
      }
      if (series != Series::kNone) out.series = series_rows(series, ranks, row);
    }
  }
  return out;
}

}  // namespace sweepbench
