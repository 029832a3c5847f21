#include "postprocess/people_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/table.h"
#include "metrics/summary.h"  // interval_columns
#include "postprocess/point_row.h"
#include "text/text.h"
#include "text/units.h"

namespace sweepbench {
namespace {

using Row = std::map<std::string, Value>;

// How a metric's values are shown: as they are, or scaled to a unit chosen per column.
using Scale = UnitKind;

struct Headline {
  const char* metric;
  const char* header;
  const char* unit;  // for kPlain
  Scale scale;
};

// What a person compares first (docs/extract.md): llama-bench's t/s, vLLM's TTFT and TPOT.
constexpr Headline kTraining[] = {
    {"train_tokens_per_second", "tokens/s", "", Scale::kPlain},
    // The mean step, as tokens/s is tokens over it: one estimator in a row, with its interval.
    {"step_time_mean_s", "step mean", "", Scale::kSeconds},
    {"mfu", "MFU", "", Scale::kRatio},
    {"tflops_per_device", "TFLOPS", "", Scale::kPlain},
    {"mem_peak_bytes", "peak mem", "", Scale::kBytes},
    {"train_loss", "loss", "", Scale::kPlain},
};
constexpr Headline kInference[] = {
    {"ttft_p50_s", "TTFT p50", "", Scale::kSeconds},
    {"tpot_p50_s", "TPOT p50", "", Scale::kSeconds},
    {"output_tps", "output tok/s", "", Scale::kPlain},
    {"mbu", "MBU", "", Scale::kRatio},
    {"mem_peak_bytes", "peak mem", "", Scale::kBytes},
};
// A serve point's headline level (its SLA's answer, else its highest; docs/serving.md): the load,
// what the server gave, the tails a user sees and the SLA's answer.
constexpr Headline kServe[] = {
    {"request_rate", "rate", "req/s", Scale::kPlain},
    {"concurrency", "concurrency", "", Scale::kPlain},
    {"output_tokens_per_second", "output tok/s", "", Scale::kPlain},
    {"ttft_p99_ms", "TTFT p99", "ms", Scale::kPlain},
    {"tpot_p99_ms", "TPOT p99", "ms", Scale::kPlain},
    {"goodput", "goodput", "req/s", Scale::kPlain},
    {"sla_max_level", "SLA max", "", Scale::kPlain},
};

// Cells past this width are cut in the middle: a tag or an argv stays recognisable.
constexpr size_t kMaxValueWidth = 40;
// The reason gets what is left of a terminal's 120 columns, but never less than this.
constexpr size_t kLineWidth = 120;
constexpr size_t kMinReasonWidth = 24;

const Value* find_cell(const Row& row, const std::string& column) {
  auto it = row.find(column);
  return it == row.end() || it->second.is_null() ? nullptr : &it->second;
}

// A cell as people read it (rounded, a long list cut)...
std::string text_of(const Row& row, const std::string& column) {
  const Value* v = find_cell(row, column);
  return v == nullptr ? "" : cell_text(*v, TableFormat::kText, true);
}

// ...and exactly, to tell values apart (two argvs that differ only in their middle).
std::string exact_text_of(const Row& row, const std::string& column) {
  const Value* v = find_cell(row, column);
  return v == nullptr ? "" : cell_text(*v, TableFormat::kCsv);
}

std::optional<double> number_of(const Row& row, const std::string& column) {
  const Value* v = find_cell(row, column);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  double x = v->as_float();
  return std::isfinite(x) ? std::optional<double>(x) : std::nullopt;
}

// The columns that vary over the rows (config/config.h): scenario, repeat and the sweeps' axes
// first.
std::vector<std::string> varying_columns_of(const ExtractTable& t,
                                            const std::vector<std::string>& axes) {
  std::vector<std::string> first = {"sweep", "scenario", "repeat", "in_sweep"};
  first.insert(first.end(), axes.begin(), axes.end());
  return varying_columns(
      t.columns, t.rows.size(),
      [&](size_t r, const std::string& c) { return exact_text_of(t.rows[r], c); }, first);
}

// `v`, or `v ± spread` rounded to the spread's second significant digit: what the noise allows.
std::string format_measure(double v, std::optional<double> std) {
  // A std at the level of rounding (equal repeats) is none.
  if (!std || !(*std > std::fabs(v) * 1e-9)) return human_number(v);
  int decimals = std::min(15, 1 - static_cast<int>(std::floor(std::log10(*std))));
  char buf[96];
  if (decimals >= 0) {
    std::snprintf(buf, sizeof buf, "%.*f ± %.*f", decimals, v, decimals, *std);
  } else {
    double step = std::pow(10.0, -decimals);
    std::snprintf(buf, sizeof buf, "%.0f ± %.0f", std::round(v / step) * step,
                  std::round(*std / step) * step);
  }
  return buf;
}

struct MetricColumn {
  std::string metric, header;
  Scale scale = Scale::kPlain;
  std::string unit;  // kPlain's own
};

// The headline metrics of the workloads present, then each command metric, those that some
// row has.
std::vector<MetricColumn> metric_columns_for(const ExtractTable& t) {
  std::set<std::string> kinds;
  for (const Row& row : t.rows) kinds.insert(text_of(row, "benchmark"));
  std::vector<MetricColumn> out;
  auto add = [&](MetricColumn m) {
    for (const MetricColumn& o : out) {
      if (o.metric == m.metric) return;
      if (o.header == m.header) m.header = m.metric;  // a command's "loss" beside training's
    }
    for (const Row& row : t.rows) {
      if (number_of(row, m.metric)) {
        out.push_back(m);
        return;
      }
    }
  };
  if (kinds.count("train") || kinds.count("")) {
    for (const Headline& h : kTraining) add({h.metric, h.header, h.scale, h.unit});
  }
  if (kinds.count("infer")) {
    for (const Headline& h : kInference) add({h.metric, h.header, h.scale, h.unit});
  }
  if (kinds.count("serve")) {
    for (const Headline& h : kServe) add({h.metric, h.header, h.scale, h.unit});
  }
  if (kinds.count("command")) {
    // A command's metrics, in the order its rows give their units (the order it defines them).
    for (const Row& row : t.rows) {
      const Value* units = find_cell(row, "units");
      if (units == nullptr || !units->is_map() || text_of(row, "benchmark") != "command") continue;
      for (const Value::Entry& e : units->entries()) {
        std::string unit = e.value.is_string() ? e.value.as_string() : "";
        Scale scale = unit == "s"       ? Scale::kSeconds
                      : unit == "bytes" ? Scale::kBytes
                                        : Scale::kPlain;
        add({e.key, e.key, scale, unit});
      }
    }
  }
  return out;
}

// The header of a key column: its last part when no other shown column (a key, a metric, index,
// status, reason) is called the same, else its whole name.
std::vector<std::string> short_names(const std::vector<std::string>& columns,
                                     const std::vector<MetricColumn>& metrics) {
  auto last = [](const std::string& c) { return short_key(c); };
  std::map<std::string, int> count;
  for (const std::string& c : columns) ++count[last(c)];
  for (const char* fixed : {"index", "status", "reason"}) ++count[fixed];
  for (const MetricColumn& m : metrics) ++count[m.header];
  std::vector<std::string> out;
  for (const std::string& c : columns) out.push_back(count[last(c)] == 1 ? last(c) : c);
  return out;
}

}  // namespace

ExtractTable people_table(const ExtractTable& full, const std::vector<std::string>& axes,
                          const ExtractTable* before, const std::vector<std::string>& chosen_by) {
  ExtractTable out;
  out.warnings = full.warnings;
  out.incomplete = full.incomplete;
  std::vector<std::string> keys = varying_columns_of(before != nullptr ? *before : full, axes);
  std::vector<MetricColumn> metrics = metric_columns_for(full);
  // What the rows were chosen by, so that the table shows why they were.
  for (const std::string& m : chosen_by) {
    bool shown = std::any_of(metrics.begin(), metrics.end(),
                             [&](const MetricColumn& c) { return c.metric == m; });
    if (shown) continue;
    std::string unit;
    for (const Row& row : full.rows) {
      const Value* units = find_cell(row, "units");
      if (const Value* u = units != nullptr && units->is_map() ? units->find(m) : nullptr;
          u != nullptr && u->is_string()) {
        unit = u->as_string();
        break;
      }
    }
    const bool seconds = unit == "s" || m == "seconds" || ends_with(m, "_s");
    const bool bytes = unit == "bytes" || m.find("bytes") != std::string::npos;
    metrics.push_back({m, m == "seconds" ? "time" : m,
                       seconds ? Scale::kSeconds : bytes ? Scale::kBytes : Scale::kPlain,
                       seconds || bytes ? "" : unit});
  }
  bool all_ok = std::all_of(full.rows.begin(), full.rows.end(),
                            [](const Row& r) { return text_of(r, "status") == "ok"; });

  // Each metric column's unit, from its largest value.
  std::vector<std::pair<std::string, double>> units;
  for (const MetricColumn& m : metrics) {
    double max = 0;
    for (const Row& row : full.rows) {
      if (auto v = number_of(row, m.metric)) max = std::max(max, std::fabs(*v));
    }
    units.push_back(scaled_unit(m.scale, max, m.unit));
  }

  bool indexed = std::any_of(full.rows.begin(), full.rows.end(),
                             [](const Row& r) { return find_cell(r, "index") != nullptr; });
  if (indexed) out.columns.push_back("index");
  // Points no longer in their sweep (--removed) are marked whatever else varies; without an
  // index, the tag names each row.
  bool marked = std::any_of(full.rows.begin(), full.rows.end(),
                            [](const Row& r) { return find_cell(r, "in_sweep") != nullptr; });
  keys.erase(std::remove(keys.begin(), keys.end(), "in_sweep"), keys.end());
  if (marked) keys.insert(keys.begin(), "in_sweep");
  if (!indexed) keys.insert(keys.begin(), "tag");
  std::vector<std::string> key_headers = short_names(keys, metrics);
  out.columns.insert(out.columns.end(), key_headers.begin(), key_headers.end());
  for (size_t i = 0; i < metrics.size(); ++i) {
    const std::string& unit = units[i].first;
    out.columns.push_back(metrics[i].header + (unit.empty() ? "" : " (" + unit + ")"));
  }
  // A point whose timings varied more than --noise-threshold allows (docs/metrics.md): its
  // largest coefficient of variation, in a column `cv` where any point is noisy.
  auto noisy = [](const Row& r) {
    const Value* v = find_cell(r, "noisy");
    return v != nullptr && v->is_bool() && v->as_bool();
  };
  const bool any_noisy = std::any_of(full.rows.begin(), full.rows.end(), noisy);
  if (any_noisy) out.columns.push_back("cv");
  // A point whose CPUs other processes took more than kSharedCpuThreshold of (cpu_shared,
  // docs/metrics.md): that share, in a column `shared` where any point has one.
  auto shared = [](const Row& r) {
    std::optional<double> v = number_of(r, "cpu_shared");
    return v && *v > kSharedCpuThreshold;
  };
  const bool any_shared = std::any_of(full.rows.begin(), full.rows.end(), shared);
  if (any_shared) out.columns.push_back("shared");
  // A point measured until precise (metrics.target_ci) whose interval ended wider: `missed` in a
  // column `target` where any point missed its target.
  auto missed = [](const Row& r) {
    const Value* v = find_cell(r, "target_met");
    return v != nullptr && v->is_bool() && !v->as_bool() && text_of(r, "status") == "ok";
  };
  const bool any_missed = std::any_of(full.rows.begin(), full.rows.end(), missed);
  if (any_missed) out.columns.push_back("target");
  // The performance references' verdicts, where any point was checked against one.
  const bool any_reference = std::any_of(full.rows.begin(), full.rows.end(),
                                         [](const auto& row) { return row.count("reference"); });
  if (any_reference) out.columns.push_back("reference");
  if (!all_ok) out.columns.insert(out.columns.end(), {"status", "reason"});

  for (const Row& row : full.rows) {
    Row cells;
    if (indexed) cells["index"] = Value::string(text_of(row, "index"));
    for (size_t i = 0; i < keys.size(); ++i) {
      cells[key_headers[i]] =
          Value::string(abbreviate_middle(text_of(row, keys[i]), kMaxValueWidth));
    }
    // A point that did not end ok measured nothing to compare: its reason says why.
    const bool ok = text_of(row, "status") == "ok";
    for (size_t i = 0; i < metrics.size(); ++i) {
      std::string header = out.columns[(indexed ? 1 : 0) + keys.size() + i];
      std::optional<double> v = number_of(row, metrics[i].metric);
      if (!v || !ok) {
        cells[header] = Value::string("-");
        continue;
      }
      double factor = units[i].second;
      // `±` half the mean's 95% interval where the row has one (one run's steps, or the
      // repeats'), else the repeats' std.
      std::optional<double> spread = number_of(row, metrics[i].metric + "_std");
      // An interval with one end only (a throughput through a step-time interval that reaches
      // 0 s has no upper end) is shown as such, never as a bare, precise-looking number.
      std::optional<std::string> open;
      for (const auto& [low_column, high_column] : interval_columns(metrics[i].metric)) {
        std::optional<double> low = number_of(row, low_column);
        std::optional<double> high = number_of(row, high_column);
        if (low && high) {
          if (*low == 0 && *high > 0) {
            // A time's interval cut at 0 s: its ends, which a ± of half its width would hide.
            open = " [0, " + human_number(*high * factor) + "]";
          } else {
            spread = (*high - *low) / 2;
            open.reset();
          }
          break;
        }
        if (low && !high && !open) {
          open = " [" + human_number(*low * factor) + ", no upper end]";
        }
      }
      if (spread) *spread *= factor;
      cells[header] = Value::string(open && !spread ? human_number(*v * factor) + *open
                                                    : format_measure(*v * factor, spread));
    }
    if (any_noisy) {
      double cv = 0;
      for (const std::string& c : noise_columns()) {
        if (auto x = number_of(row, c)) cv = std::max(cv, *x);
      }
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f%%", cv * 100);
      cells["cv"] = Value::string(noisy(row) ? buf : "");
    }
    if (any_shared) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f%%", number_of(row, "cpu_shared").value_or(0) * 100);
      cells["shared"] = Value::string(shared(row) ? buf : "");
    }
    if (any_missed) cells["target"] = Value::string(missed(row) ? "missed" : "");
    if (any_reference) {
      std::string verdict;
      if (auto it = row.find("reference"); it != row.end() && it->second.is_string()) {
        verdict = it->second.as_string() == "miss" ? "MISS" : it->second.as_string();
      }
      cells["reference"] = Value::string(verdict);
    }
    if (!all_ok) {
      cells["status"] = Value::string(text_of(row, "status"));
      cells["reason"] = Value::string(text_of(row, "reason"));
    }
    out.rows.push_back(std::move(cells));
  }
  if (!all_ok) {
    // The reason takes the rest of the line: each other column is as wide as its widest cell
    // (the header's '#' included), and two spaces apart.
    size_t used = 1;
    for (const std::string& c : out.columns) {
      if (c == "reason") continue;
      size_t width = display_width(c);
      for (const Row& row : out.rows) width = std::max(width, display_width(text_of(row, c)));
      used += width + 2;
    }
    size_t room = std::max(kMinReasonWidth, used < kLineWidth ? kLineWidth - used : 0);
    for (Row& row : out.rows) {
      row["reason"] = Value::string(abbreviate_end(text_of(row, "reason"), room));
    }
  }
  return out;
}

}  // namespace sweepbench
