#include "postprocess/point_series.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "config/schema.h"
#include "metrics/infer_metrics.h"
#include "metrics/serve_columns.h"
#include "metrics/statistics.h"
#include "postprocess/point_cells.h"
#include "postprocess/point_columns.h"
#include "text/error.h"

namespace sweepbench {

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

using Row = std::map<std::string, Value>;

// The start of each of a point's series rows: its identity, config, start and device.
Row series_base(const Row& point) {
  Row r;
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
}

// --series system: every rank's samples.
std::vector<Row> system_rows(const std::vector<RankResult>& ranks, const Row& base) {
  std::vector<Row> rows;
  for (const RankResult& rank : ranks) {
    const SampleSeries& s = rank.samples;
    for (size_t i = 0; i < s.time_s.size(); ++i) {
      Row r = base;
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

// Each load level of a serve point: the level, whether the SLA search added it, and its
// figures (metrics/serve_columns.h), as bench-serve measured them.
std::vector<Row> level_rows(const std::vector<RankResult>& ranks, const Row& base) {
  std::vector<Row> rows;
  const RankResult& lead = ranks.front();
  if (lead.benchmark != "serve") return rows;
  const ServeResult& s = lead.serve;
  // Each figure's unit, as the point's row has them (bench-plot labels its axes and reads a
  // metric's direction from them): the level's by the load mode, the others' from the file.
  Value units = Value::map();
  units.set("level", Value::string(serve_level_unit(s.mode)));
  for (size_t m = 0; m < s.metric_names.size() && m < s.metric_units.size(); ++m) {
    if (!s.metric_units[m].empty()) units.set(s.metric_names[m], Value::string(s.metric_units[m]));
  }
  for (size_t i = 0; i < s.levels.size(); ++i) {
    Row r = base;
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

// Each value of a command's list metrics (reduce: all; vLLM's latencies), rank 0's as the
// row's are: one row per value, with the metric's name and the value's place in its list.
std::vector<Row> list_rows(const std::vector<RankResult>& ranks, const Row& base) {
  std::vector<Row> rows;
  const RankResult* rank0 = &ranks.front();
  for (const RankResult& r : ranks) {
    if (r.rank == 0) rank0 = &r;
  }
  if (rank0->benchmark != "command") return rows;
  for (const CommandMetric& m : rank0->command.metrics) {
    if (!m.found || m.reduce != "all") continue;
    for (size_t i = 0; i < m.values.size(); ++i) {
      Row r = base;
      r["metric"] = Value::string(m.name);
      r["unit"] = Value::string(m.unit);
      r["item"] = Value::integer(static_cast<std::int64_t>(i));
      r["value"] = number_or_null(m.values[i]);
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

// --series tokens: each generated token's position of an inference point, its time over the
// timed runs, each run's the slowest rank's (as the row's metrics are).
std::vector<Row> token_rows(const std::vector<RankResult>& ranks, const Row& base) {
  std::vector<Row> rows;
  if (ranks.front().benchmark != "infer") return rows;  // tokens: inference points only
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
    Row r = base;
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

std::vector<std::map<std::string, Value>> series_rows(Series series,
                                                      const std::vector<RankResult>& ranks,
                                                      const std::map<std::string, Value>& point) {
  const Row base = series_base(point);
  switch (series) {
    case Series::kSystem:
      return system_rows(ranks, base);
    case Series::kLevels:
      return level_rows(ranks, base);
    case Series::kLists:
      return list_rows(ranks, base);
    default:
      return token_rows(ranks, base);
  }
}

}  // namespace sweepbench
