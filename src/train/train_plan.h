// What a bench-train run will do, decided before any work and identical on all ranks: the
// point's config read once into typed settings (config/settings.h) and turned into the trainer's,
// the data's and the loop's options.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "config/value.h"
#include "metrics/rank_result.h"
#include "run/data.h"
#include "run/mpi_env.h"
#include "run/point_config.h"
#include "run/program_args.h"
#include "train/trainer.h"

namespace sweepbench {

// Everything decided before any work, identical on all ranks.
struct TrainPlan {
  Value config;
  std::string config_yaml, config_hash, tag;
  Settings settings;  // the point's config, typed
  // The trainer's own copy of settings.train, the model's shape and this rank's device; the loop
  // reads settings, the trainer its options.
  TrainerOptions trainer;
  DataOptions data;
  // metrics.profile_steps: the first and last step traced; first > last when none.
  std::int64_t profile_first = 0, profile_last = -1;
  std::string rank_path;
};

// Reads and checks the config; Error(kInput) for bad input, Error(kConflict) when this rank's
// results are already in --out.
TrainPlan make_plan(const Args& args, const MpiEnv& mpi);

// metrics.profile_activities on this rank's device: null is cpu, and cuda too on a GPU.
// Error(kInput) when cuda is asked for and this rank runs on the CPU.
ProfileActivities resolve_profile_activities(const TrainPlan& plan, const DeviceInfo& device);

// One field of every step.
std::vector<double> column(const std::vector<StepRecord>& steps, double StepRecord::*field);

}  // namespace sweepbench
