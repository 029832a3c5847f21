// A point's config as bench-train and bench-infer read it at their start: loaded with --set
// applied, its canonical text, hash and tag, typed; this rank's results file; and the compute
// threads it runs. Torch-free.
#pragma once

#include <string>

#include "config/settings.h"
#include "config/value.h"
#include "run/mpi_env.h"
#include "run/program_args.h"

namespace sweepbench {

// A point's config as both programs read it: loaded with --set applied, in canonical form, its
// hash and tag, typed, and this rank's results file (which must not exist yet).
struct PointConfig {
  Value config;
  std::string config_yaml, config_hash, tag, rank_path;
  Settings settings;
};
// Error(kInput) for bad input, Error(kConflict) when this rank's results are already in --out.
PointConfig read_point_config(const Args& args, const MpiEnv& mpi, const char* program,
                              const std::string& benchmark);

// Compute threads per rank: launch.cpus_per_rank, else this node's cores over its ranks (no more
// than the affinity mask allows).
int compute_threads(const Settings& set, const MpiEnv& mpi);

}  // namespace sweepbench
