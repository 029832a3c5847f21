// Container platforms: the third launch object of CONTRIBUTING.md item 1.
//
// A platform wraps the program each rank runs (`apptainer exec --nv -B ... img bench-train ...`)
// or, for enroot through pyxis, adds options to srun (`--container-image ...`). point_command()
// in launcher.h is the one join point: launcher prefix, then the platform's launcher options, then
// the wrapped program. Platforms are registered by name (container.runtime); `none` wraps nothing.
//
// The same behaviour on every runtime: GPU flags only when the point asks for GPUs; the point's
// output directory bound at the same path inside; container.binds, container.env,
// container.workdir and container.extra_args passed in the runtime's own syntax; and a clean
// environment inside: bench-train is started with --env-keep, and keeps only the variables a
// rank needs (SLURM, MPI/PMIx, GPU visibility, the runtime's own) plus the names of
// container.env and launch.env (docs/containers.md lists them).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/settings.h"
#include "config/value.h"

namespace sweepbench {

// The container section of a point's resolved config.
struct ContainerSpec : ContainerSettings {                                // binds: src:dst[:ro]
  ContainerSpec() : ContainerSettings(Settings::defaults().container) {}  // runtime none
  explicit ContainerSpec(const ContainerSettings& c) : ContainerSettings(c) {}
  bool enabled() const { return runtime != "none"; }
};

// What the platform needs to know about the point besides its container section.
struct ContainerContext {
  bool gpus = false;                  // launch.gpus_per_rank > 0
  std::string out_dir;                // the point's directory, bound at the same path
  std::vector<std::string> env_keep;  // the variables bench-train keeps inside (globs)
};

class ContainerPlatform {
 public:
  virtual ~ContainerPlatform() = default;
  virtual std::string name() const = 0;
  // The command that must be on PATH where ranks start (apptainer, ch-run, podman, srun).
  virtual std::string program() const = 0;
  // The launcher this runtime needs, or "" for any (enroot through pyxis needs srun).
  virtual std::string required_launcher() const { return ""; }
  // Options for the launcher's own argv (pyxis's srun --container-*); empty for the others.
  virtual std::vector<std::string> launcher_options(const ContainerSpec&,
                                                    const ContainerContext&) const {
    return {};
  }
  // Environment the launcher must carry for the container (pyxis reads container.env from it).
  virtual std::map<std::string, std::string> launcher_env(const ContainerSpec&) const { return {}; }
  // `inner` (the program and its arguments, as run inside the container) wrapped in the runtime.
  virtual std::vector<std::string> wrap(const ContainerSpec& spec, const ContainerContext& ctx,
                                        const std::vector<std::string>& inner) const = 0;
};

// The registered platforms by name; an unknown name is an Error naming the known ones.
std::unique_ptr<ContainerPlatform> make_container_platform(const std::string& name);
std::vector<std::string> container_runtime_names();

// The variables bench-train keeps inside a container by default (globs), before the names of
// container.env and launch.env are added.
const std::vector<std::string>& default_env_keep();

// The UUID in a SIF file's header ("" when the file is not a SIF image): what Apptainer calls
// the image's id, recorded with the results.
std::string sif_id(const std::string& path);

// Which of the runtimes' commands this machine has on PATH, as runtime names.
std::vector<std::string> container_runtimes_found();

// Checks before anything runs: the runtime's command is on PATH (the error lists the runtimes
// found), and an image given as a path exists. For Charliecloud, whose images are directories
// that cannot grow mount points at run time, the bind destinations are created in the image.
// `where` names the point for the error. Throws Error(kInput).
void check_container(const ContainerSpec& spec, const ContainerContext& ctx,
                     const std::string& where);

}  // namespace sweepbench
