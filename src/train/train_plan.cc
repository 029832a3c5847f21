#include "train/train_plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "config/config.h"
#include "config/model_shapes.h"
#include "config/settings.h"
#include "config/yaml_io.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "os/hardware.h"
#include "text/error.h"

namespace sweepbench {

TrainPlan make_plan(const Args& args, const MpiEnv& mpi) {
  PointConfig point = read_point_config(args, mpi, "bench-train", "train");
  TrainPlan p;
  p.config = point.config;
  const Value& c = p.config;
  p.config_yaml = point.config_yaml;
  p.config_hash = point.config_hash;
  p.tag = point.tag;
  p.rank_path = point.rank_path;
  p.settings = point.settings;
  const Settings& set = p.settings;
  if (set.metrics.profile_steps) {
    p.profile_first = set.metrics.profile_steps->first;
    p.profile_last = set.metrics.profile_steps->second;
  }

  TrainerOptions& t = p.trainer;
  t.train = set.train;
  t.shape = model_shape_of(c);
  t.preset = set.model_preset;
  t.seq_len = set.data.seq_len;
  t.tensor_parallel = set.launch.tensor_parallel;
  t.device = set.launch.device;
  t.local_rank = mpi.local_rank();
  t.cpu_memory_budget = args.max_memory_mb * 1024 * 1024;
  t.threads = compute_threads(set, mpi);

  DataOptions& d = p.data;
  d = data_options(set.data);
  d.seq_len = t.seq_len;
  d.vocab_size = t.shape.vocab_size;
  d.seed = set.train.seed;
  d.train_batch = set.train.micro_batch;
  d.eval_batch = set.eval.micro_batch;
  d.needs_eval = set.eval.steps > 0;

  return p;
}

ProfileActivities resolve_profile_activities(const TrainPlan& plan, const DeviceInfo& device) {
  ProfileActivities a;
  a.cuda = device.type == "cuda";
  if (plan.settings.metrics.profile_activities.empty()) return a;
  a.cpu = a.cuda = false;
  for (const std::string& name : plan.settings.metrics.profile_activities) {
    if (name == "cpu") a.cpu = true;
    if (name == "cuda") a.cuda = true;
  }
  if (a.cuda && device.type != "cuda") {
    throw Error::input(Mark{}, "metrics.profile_activities",
                       "cuda asks for GPU kernels, but this rank runs on the CPU",
                       "profile cpu only, or run on a GPU (launch.device: cuda)");
  }
  return a;
}

std::vector<double> column(const std::vector<StepRecord>& steps, double StepRecord::*field) {
  std::vector<double> out;
  for (const StepRecord& s : steps) out.push_back(s.*field);
  return out;
}

}  // namespace sweepbench
