// Writes a RankResult to HDF5 (docs/results-format.md), under a temporary name renamed into
// place when the file is complete, so a reader never sees half a file under the final name.
#pragma once

#include <map>
#include <string>

#include "config/value.h"
#include "layout/paths.h"  // rank_file_name
#include "metrics/rank_result.h"
#include "metrics/summary.h"  // Metric
#include "os/run_info.h"
#include "os/sampler.h"

namespace sweepbench {

// Where the run happened, as every rank file records it: the container and the SLURM ids.
void set_run_environment(RankResult& result, const RunEnvironment& env);

// Writes DIR/summary.json (docs/results-format.md): the run's identity from `result`, `status`
// and `reason`, the entries of `extra`, then `metrics` (null where not finite) and their units.
// The sampler's samples into r.samples (bench-train, bench-infer and bench-command alike).
void take_samples(const ResourceSampler& sampler, RankResult& r);

// `whole`: metrics written as these values instead (a command's `reduce: all` lists).
void write_summary_file(const std::string& out_dir, const RankResult& result,
                        const std::string& status, const std::string& reason, const Value& extra,
                        const std::vector<Metric>& metrics,
                        const std::map<std::string, Value>& whole = {});

// Writes `result` to `path` (via "<dir>/.<name>.partial"). Refuses to replace an existing file:
// throws Error(kConflict). HDF5 failures throw Error(kIo) naming the path and HDF5's message.
void write_rank_file(const RankResult& result, const std::string& path);

}  // namespace sweepbench
