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

#include "metrics/rank_result.h"

namespace sweepbench {

struct RankRead {
  std::optional<RankResult> result;   // nullopt: not usable (problems say why)
  std::vector<std::string> problems;  // "steps.loss: is missing"
};

// What to read: everything, or what bench-extract's row needs. The summary scope reads from
// every rank its identity, run id, status and reason, the step times, loss and measured flags (not
// the step numbers: StepRecord::step is the position), eval samples and seconds, its memory stage
// peaks and the sampler's CPU, RAM and (where NVML measured) device series; and from rank 0 only
// what the run shares: the config and its hash, device type, rank status, shapes, FLOPs per token,
// peak TFLOPS, whether eval ran and its loss, the named memory stages. Not read: the per-step lr,
// norms, token counts, eval batches, host or software names. Each object costs HDF5 15 to 30 us
// to open (docs/performance.md). Problems are found only in what is read.
enum class RankReadScope { kAll, kSummary };

RankRead read_rank_file(const std::string& path, RankReadScope scope = RankReadScope::kAll);

}  // namespace sweepbench
