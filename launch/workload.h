// What runs at a point: a registered workload (docs/workloads.md).
//
// A point's config names its workload with the top-level key `benchmark` (default `train`). The
// workload gives its program's argv, says what the program's exit codes mean for the point, and
// which files a run that exits 0 must have left in the point's directory. The runner and
// point_command() ask the workload and know no program by name, so a second benchmark program is
// a registration here, not an edit of the runner.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/settings.h"
#include "config/value.h"
#include "layout/point_record.h"
#include "text/registry.h"

namespace sweepbench {

// One call of a workload's program.
struct WorkloadCall {
  std::string program;      // a host path, or the program's name inside a container image
  std::string config_path;  // the point's config.yaml
  std::string out_dir;      // the point's directory
  bool in_container = false;
  // Inside a container: the variables the program keeps (globs); it clears the rest.
  std::vector<std::string> env_keep;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // The value of `benchmark` that selects it.
  virtual std::string name() const = 0;
  // Its program as installed (on PATH, beside bench-sweep, and in the container images).
  virtual std::string program() const = 0;
  virtual std::vector<std::string> argv(const WorkloadCall& call) const = 0;
  // What an exit code means for the point (a signal is the runner's to judge: failed).
  virtual PointStatus status_of_exit(int exit_code) const = 0;
  // Files, in the point's directory, that a run exiting 0 must have written.
  virtual std::vector<std::string> result_files(const Settings& settings) const = 0;
  // Variables its program keeps inside a container besides default_env_keep() (globs).
  virtual std::vector<std::string> env_keep() const { return {}; }
};

const Registry<Workload>& workloads();

// The workload a point's `benchmark` names.
std::unique_ptr<Workload> workload_of(const Settings& settings);

// Where the program `name` is: `given`'s entry for it, else the one beside this executable (the
// build tree and an install put every binary in one directory), else `name` for PATH to find.
std::string locate_program(const std::string& name,
                           const std::map<std::string, std::string>& given);

}  // namespace sweepbench
