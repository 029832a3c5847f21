// Reads a rank-NNNNN.h5 back into a RankResult (docs/results-format.md), checking as it goes.
//
// A reader of results must survive any file: one cut short by a full disk, one from a newer
// sweepbench, one edited by hand. read_rank_file never throws for what is in the file: every
// attribute or dataset that is missing, of the wrong type or of the wrong shape becomes a problem
// named in the result, and the file counts as unreadable only when its identity (status, rank,
// world size) or its steps cannot be read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "results/rank_result.h"

namespace sweepbench {

struct RankRead {
  std::optional<RankResult> result;   // nullopt: not usable (problems say why)
  std::vector<std::string> problems;  // "steps/loss: 3 values, the other step columns have 5"
};

RankRead read_rank_file(const std::string& path);

}  // namespace sweepbench
