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
namespace {

namespace fs = std::filesystem;

// The tag is the name of the directory holding the config (as bench-sweep lays points out).
std::string tag_of(const std::string& config_path) {
  return fs::absolute(config_path).lexically_normal().parent_path().filename().string();
}

}  // namespace

PointConfig read_point_config(const Args& args, const MpiEnv& mpi, const char* program,
                              const std::string& benchmark) {
  const std::string help = std::string(program) + " --help";
  if (args.config.empty()) throw Error::input(Mark::in(program), "", "--config is missing", help);
  if (args.out.empty()) throw Error::input(Mark::in(program), "", "--out is missing", help);
  PointConfig p;
  PointLoad load{benchmark, mpi.size()};
  try {
    p.config = load_point_config(args.config, parse_overrides(args.sets), &load);
  } catch (const Error& e) {
    if (load.configured_ranks == 0 || load.configured_ranks == mpi.size() ||
        e.message().find("launch.ranks") == std::string::npos) {
      throw;
    }
    // A rule of the ranks failed for the ranks running, not the config's: say which.
    throw Error(e.kind(), e.mark(), e.key(), e.message(),
                (e.hint().empty() ? "" : e.hint() + "; ") + "launch.ranks is the " +
                    std::to_string(mpi.size()) + " rank(s) running, not the config's " +
                    std::to_string(load.configured_ranks));
  }
  p.config_yaml = emit_canonical_yaml(p.config);
  p.config_hash = config_hash(p.config);
  p.tag = tag_of(args.config);
  p.settings = Settings::of(p.config);  // read once, typed (config/settings.h)
  if (load.configured_ranks != mpi.size() && mpi.rank() == 0) {
    // A mismatch is allowed (run a point by hand with other ranks), but said.
    std::fprintf(stderr,
                 "%s: note: launch.ranks is %lld but %d rank(s) are running; the point runs, and "
                 "its results record, launch.ranks: %d\n",
                 program, static_cast<long long>(load.configured_ranks), mpi.size(), mpi.size());
  }
  p.rank_path = (fs::path(args.out) / rank_file_name(mpi.rank())).string();
  std::error_code ec;
  if (fs::exists(p.rank_path, ec)) {
    throw Error(ErrorKind::kConflict, Mark::in(p.rank_path), "", "results are already there",
                "results are never overwritten; choose another --out");
  }
  return p;
}

int compute_threads(const Settings& set, const MpiEnv& mpi) {
  if (set.launch.cpus_per_rank) return static_cast<int>(*set.launch.cpus_per_rank);
  // bench-sweep run --jobs gives each point CPUs of its own and says how many a rank has.
  if (const char* given = std::getenv("SWEEPBENCH_CPUS_PER_RANK")) {
    char* end = nullptr;
    long n = std::strtol(given, &end, 10);
    if (end != given && *end == '\0' && n > 0 && n <= 1'000'000) return static_cast<int>(n);
  }
  // Each rank's share of the machine, but no more cores than it may run on (SLURM, mpirun's
  // binding and taskset narrow the affinity mask).
  const int machine = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(1, std::min(usable_cpu_count(), machine / mpi.local_size()));
}

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
