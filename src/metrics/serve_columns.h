// The figures of a serve point (docs/serving.md, "Columns"), named once: bench-serve writes them
// in this order for each load level (the rank file's /serve/levels, summary.json's levels) and for
// the point's headline level (its row), and bench-extract's table has these columns.
#pragma once

#include <string>
#include <vector>

namespace sweepbench {

struct ServeColumn {
  std::string name;
  std::string unit;  // "" where the unit depends on the load mode (see serve_level_unit)
};

// One level's figures, in order: the offered load, counts, throughputs, the SLA's share, the
// latency percentiles in milliseconds, and the failures by kind.
const std::vector<ServeColumn>& serve_level_columns();
// The point's own, after the headline level's: how many levels ran, and the SLA's answer.
const std::vector<ServeColumn>& serve_point_columns();
// The unit of a level (and of the SLA's answer): "req/s" for rates, "requests" for concurrency.
std::string serve_level_unit(const std::string& mode);

}  // namespace sweepbench
