#include "postprocess/point_columns.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "config/command_spec.h"
#include "config/config.h"
#include "config/schema.h"
#include "layout/paths.h"
#include "metrics/infer_metrics.h"
#include "metrics/serve_columns.h"
#include "metrics/summary.h"
#include "postprocess/point_cells.h"

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

// Columns that only some points have: the entries of their free maps (params, serve.body) and
// their commands' metrics, read from each point's config.yaml (unreadable ones add nothing; the
// row says why).
struct PointColumns {
  std::map<std::string, std::set<std::string>> free_entries;  // by the free map's key path
  std::vector<std::string> metrics;                           // in the order first seen
  std::set<std::string> benchmarks;     // the workloads present (empty: no config could be read)
  std::vector<std::string> referenced;  // metrics a performance reference was checked on
  bool predicted_commands = false;      // a command point with command.predict_as

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
          if (!m.empty() &&
              std::find(c.referenced.begin(), c.referenced.end(), m) == c.referenced.end()) {
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
        as != nullptr && as->is_string() &&
        (as->as_string() == "train" || as->as_string() == "infer")) {
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

}  // namespace sweepbench
