// A point's config as bench-train and bench-infer read it (point_config.h).
#include "run/point_config.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "config/config.h"
#include "config/yaml_io.h"
#include "layout/paths.h"
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

}  // namespace sweepbench
