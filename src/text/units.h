// Units for people: a column or axis of times, bytes or ratios shown in the unit its values read
// best in (bench-extract's tables for people, bench-plot's y axis). CSV and JSON keep SI base
// units (s, bytes) and ratios.
#pragma once

#include <string>
#include <utility>

namespace sweepbench {

enum class UnitKind {
  kPlain,    // shown as it is, in its own unit
  kSeconds,  // s, ms or µs
  kBytes,    // B, KiB, MiB or GiB
  kRatio,    // %
};

// The unit, and the factor that turns values into it, for values whose largest magnitude is
// `max`: they then read between 1 and 1000 (1024 for bytes). kPlain gives (`plain`, 1).
std::pair<std::string, double> scaled_unit(UnitKind kind, double max,
                                           const std::string& plain = "");

// How a metric's values are read, by bench-extract's naming (docs/metrics.md): times, bytes,
// ratios, or plain with the unit its name says in *plain (tokens/s, TFLOP/s, GB/s; "" when it
// says none). bench-plot's axes and bench-report's figures.
UnitKind metric_unit_kind(const std::string& metric, std::string* plain);

}  // namespace sweepbench
