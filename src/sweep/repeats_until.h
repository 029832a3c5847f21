// Repeats until precise (docs/sweeps.md, "Repeats until precise"): whether a point's earlier
// repeats already give its headline figure a mean precise enough that its later repeats are
// skipped, by metrics/statistics.h's rule for independent runs. The runner (launch/runner.cc)
// reads the repeats' summary.json files and asks here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/value.h"
#include "sweep/sweep_spec.h"

namespace sweepbench {

// The start of the reason of a repeat skipped this way ("precise: seconds 0.05176 within ±0.97%
// (95%) after 3 repeats (repeats.target_ci 5%)"): the runner counts such repeats as asked for.
inline constexpr const char* kPreciseReason = "precise: ";

// An ok repeat's value of `metric` from its summary.json (parsed), or where `metric` is "" its
// workload's headline: a training's train_tokens_per_second, a generation's output_tps, a
// command's seconds. `used` is set to the metric read. Nothing for a repeat that is not ok or
// lacks a finite value; `lacks` (where given) is set when it is ok and lacks it.
std::optional<double> repeat_value(const Value& summary, const std::string& metric,
                                   std::string* used, bool* lacks = nullptr);

// Why a point's next repeat is skipped, given the ok values of the repeats before it in order:
// at `least` values and then at each look (half as many again), over the first that many, the
// 95% interval within rule.target of the mean. Nothing while it is not.
std::optional<std::string> precise_reason(const RepeatsRule& rule,
                                          const std::vector<double>& values,
                                          const std::string& metric);

}  // namespace sweepbench
