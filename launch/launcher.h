// How a point's ranks start: the launcher half of CONTRIBUTING.md item 1.
//
// A launcher returns the argv prefix that starts `ranks` copies of a program (`srun ...`,
// `mpirun ...`, or nothing for one local process); point_command() joins it with bench-train's own
// argv. Launchers are registered by name (local, mpirun, srun); launch.launcher picks one, and
// `auto` picks srun inside a SLURM allocation, mpirun for several ranks outside one, and a plain
// exec for one rank. Containers (the third object, container.h) wrap bench-train's argv or add
// launcher options; point_command() joins the three.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "config/value.h"
#include "launch/container.h"

namespace sweepbench {

// What the runner knows about where it runs.
struct LaunchSite {
  bool in_slurm_allocation = false;  // SLURM_JOB_ID is set
  bool as_root = false;              // mpirun refuses root unless told
  int cpus_on_node = 1;              // SLURM_CPUS_ON_NODE inside an allocation, else usable CPUs
  // Where the runner placed a point's srun step (bench-sweep run --jobs inside an allocation,
  // launch/packing.h): its nodes (--nodelist) and CPUs a rank; empty: srun's own choice.
  std::vector<std::string> step_nodes;
  std::optional<int> step_cpus_per_rank;

  static LaunchSite detect();
};

// The launch section of a point's resolved config.
struct PointResources : LaunchSettings {
  PointResources() : LaunchSettings(Settings::defaults().launch) {}
  explicit PointResources(const LaunchSettings& l) : LaunchSettings(l) {}
  std::int64_t ranks_per_node() const { return (ranks + nodes - 1) / nodes; }
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;
  // The argv prefix; the program and its arguments follow it.
  virtual std::vector<std::string> prefix(const PointResources& r,
                                          const LaunchSite& site) const = 0;
};

// The registered launchers by name; an unknown name is an Error naming the known ones.
std::unique_ptr<Launcher> make_launcher(const std::string& name);
std::vector<std::string> launcher_names();

// The launcher launch.launcher asks for, `auto` resolved for this site.
std::string resolve_launcher_name(const PointResources& r, const LaunchSite& site);

struct PointCommand {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to the runner's environment (launch.env)
  std::string launcher;
  ContainerSpec container;             // runtime none when the point runs on the host
  ContainerContext container_context;  // for check_container before it runs
};

// The full command of one point: launcher prefix [+ the container's launcher options] +
// bench-train --config CONFIG --out OUT [wrapped in the container]. Inside a container
// bench-train is the image's (on its PATH) and starts with --env-keep. Throws Error(kInput) for a
// point this site cannot run (the local launcher asked for several ranks, enroot without srun).
// With launch.setup, the whole command runs as `bash -c 'LINES; exec "$@"' sweepbench-setup
// ARGV...`: the lines first, in the shell that then becomes the command.
PointCommand point_command(const Settings& settings, const Value& resolved, const LaunchSite& site,
                           const std::string& program, const std::string& config_path,
                           const std::string& out_dir);

// `argv` run after the shell `lines` (launch.setup): {placeholders} (config keys, {out}) become
// single shell words (shell_quote), the lines themselves are the user's shell code.
std::vector<std::string> with_setup_lines(const Value& resolved,
                                          const std::vector<std::string>& lines,
                                          const std::string& out_dir,
                                          const std::vector<std::string>& argv);

}  // namespace sweepbench
