// bench-train --env-keep GLOB,...: start again with only the environment variables named.
//
// Inside a container the environment is clean by default (docs/containers.md): the container
// layer lists what a rank needs (SLURM, MPI and PMIx variables, GPU visibility, container.env)
// and bench-train re-executes itself at once, before MPI or libtorch start, with only those. The
// list is kept in SWEEPBENCH_ENV_KEPT so the results can say what was passed in.
#pragma once

#include <string>
#include <vector>

namespace sweepbench {

// The NAME=VALUE entries of `environment` whose names match one of `globs` (fnmatch), in order.
std::vector<std::string> filter_environment(const std::vector<std::string>& environment,
                                            const std::vector<std::string>& globs);

// When argv holds --env-keep LIST (or --env-keep=LIST), execs /proc/self/exe with argv minus
// that option and the filtered environment; returns only when there is no such option (or, with
// a message on stderr, when the exec fails).
void reexec_with_kept_environment(int argc, char** argv);

}  // namespace sweepbench
