#include "sweep/repeats_until.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "metrics/statistics.h"

namespace sweepbench {

std::optional<double> repeat_value(const Value& summary, const std::string& metric,
                                   std::string* used, bool* lacks) {
  if (!summary.is_map()) return std::nullopt;
  const Value* status = summary.find("status");
  if (status == nullptr || !status->is_string() || status->as_string() != "ok") {
    return std::nullopt;
  }
  std::string name = metric;
  if (name.empty()) {
    const Value* benchmark = summary.find("benchmark");
    const std::string b =
        benchmark != nullptr && benchmark->is_string() ? benchmark->as_string() : "";
    name = b == "train" ? "train_tokens_per_second" : b == "infer" ? "output_tps" : "seconds";
  }
  *used = name;
  const Value* metrics = summary.find("metrics");
  const Value* v = metrics != nullptr && metrics->is_map() ? metrics->find(name) : nullptr;
  if (v == nullptr && name == "seconds") v = summary.find("seconds");  // a command's, top level
  if (v == nullptr || !v->is_number()) {
    if (lacks != nullptr) *lacks = true;
    return std::nullopt;
  }
  if (!std::isfinite(v->as_float())) return std::nullopt;
  return v->as_float();
}

std::optional<std::string> precise_reason(const RepeatsRule& rule,
                                          const std::vector<double>& values,
                                          const std::string& metric) {
  const size_t least = static_cast<size_t>(std::max<std::int64_t>(rule.least, 2));
  for (size_t look = least; look <= values.size(); look = next_look_runs(look, least)) {
    // precise_enough_runs's test (look >= least here), on one estimate that the reason quotes.
    const Estimate e =
        repeats_estimate({values.begin(), values.begin() + static_cast<long>(look)});
    const double half = half_width_over_mean(e);
    if (!(half <= rule.target)) continue;
    char text[200];
    std::snprintf(text, sizeof(text),
                  "%s%s %.4g within ±%.2g%% (95%%) after %zu repeats (repeats.target_ci %g%%)",
                  kPreciseReason, metric.c_str(), e.mean, half * 100, look, rule.target * 100);
    return std::string(text);
  }
  return std::nullopt;
}

}  // namespace sweepbench
