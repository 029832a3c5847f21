// Performance references: what a sweep file expects of its points' metrics, and the check of a
// point's results against them (docs/references.md).
//
// A reference names a metric, its expected value and a lower bound, an upper bound or both,
// each relative ("-10%") or absolute (a number in the metric's unit, so that a reference of 0
// works), and optionally where it applies: device name, host and partition (shell patterns),
// scenario, and config values (`when`, as exclude entries match). For each metric the most
// specific of the references that apply to a point is used (the one with the most conditions;
// equally specific ones all apply). A point misses its reference only when the whole 95%
// interval of the metric lies outside the bounds; a metric without an interval is its value.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "config/value.h"
#include "sweep/expand.h"
#include "sweep/sweep_spec.h"

namespace sweepbench {

struct PointFacts {
  std::string scenario;
  std::string device;     // the run's device name (summary.json), else the config's hardware.name
  std::string host;       // where the runner ran the point (status.json)
  std::string partition;  // SLURM's partition of the runner's job, "" outside SLURM
  const Value* config = nullptr;  // the point's resolved config
};

// The facts of a point that ran: its summary.json's device name (or hardware.name), status.json's
// host and partition.
PointFacts facts_of(const std::string& scenario, const Value& config, const Value& summary,
                    const std::string& host, const std::string& partition);

// The references that apply to a point: per metric, the most specific ones, in file order.
std::vector<const PerformanceReference*> references_for(
    const std::vector<PerformanceReference>& references, const PointFacts& facts);

// One metric of one point against its reference; what status.json keeps and bench-extract
// prints.
struct ReferenceCheck {
  std::string metric;
  std::string unit;
  double reference = 0;
  double low = -std::numeric_limits<double>::infinity();  // the allowed range
  double high = std::numeric_limits<double>::infinity();
  std::string bound;  // as written, for people: "-10%..+5%", "-10%..", "..+0.5"
  std::string where;  // the reference's file:line
  std::optional<double> measured, ci_low, ci_high;
  bool pass = false;
  std::string why;  // for a miss: "30123 [29000, 31000] is below 32400"; "" on a pass

  Value to_value() const;
  static std::optional<ReferenceCheck> from_value(const Value& v);
};

// The 95% interval of a metric in a results map (summary.json's metrics, or a bench-extract
// row): <metric>_ci_low and _ci_high, or for <base>_mean_s the mean's <base>_ci_low_s and
// _ci_high_s; nullopt when there is none.
std::optional<std::pair<double, double>> metric_interval(const Value& metrics,
                                                         const std::string& metric);

// Whether an interval [ci_low, ci_high] misses the range [low, high]: it lies wholly outside.
bool interval_misses(double ci_low, double ci_high, double low, double high);

// What a reference can check in a point's summary.json: its `metrics` and their `units`, and a
// command's wall time `seconds` (a top-level field there, a metric in bench-extract's table).
struct SummaryMetrics {
  Value metrics = Value::map();
  Value units = Value::map();
};
SummaryMetrics summary_metrics(const Value& summary);

// Which references could apply to some point of the plan, judged by what is known before any
// runs (scenario and `when`; device, host and partition are not): the file:line and label of each
// that applies to none, for a warning.
std::vector<std::string> references_for_no_point(const Plan& plan);

// Checks a point's metrics (summary.json's `metrics` and `units`) against a reference. A
// metric the results do not have, or hold as null, misses with the reason.
ReferenceCheck check_reference(const PerformanceReference& reference, const Value& metrics,
                               const Value& units);

// Text for people: "train_tokens_per_second 30123 [29000, 31000] is below 32400 (reference 36000
// tokens/s -10%.., sweeps/x.yaml:12)".
std::string describe_miss(const ReferenceCheck& check);

}  // namespace sweepbench
