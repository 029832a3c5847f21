// bench-train --env-keep GLOB,...: start again with only the environment variables named.
//
// Inside a container the environment is clean by default (docs/containers.md): the container
// layer lists what a rank needs (SLURM, MPI and PMIx variables, GPU visibility, container.env)
// and bench-train re-executes itself at once, before MPI or libtorch start, with only those. The
// list is kept in SWEEPBENCH_ENV_KEPT so the results can say what was passed in.
#pragma once

#include <csignal>
#include <string>
#include <vector>

namespace sweepbench {

// The signals that stop a run with a result (bench_train.h lists what each means); they are
// blocked across the restart so that one arriving then is handled, not fatal.
constexpr int kStopSignals[] = {SIGTERM, SIGUSR1, SIGINT, SIGUSR2};

// The NAME=VALUE entries of `environment` whose names match one of `globs` (fnmatch), in order.
std::vector<std::string> filter_environment(const std::vector<std::string>& environment,
                                            const std::vector<std::string>& globs);

// When argv holds --env-keep LIST (or --env-keep=LIST), execs /proc/self/exe with argv minus
// that option and the filtered environment, the stop signals blocked and `caught_signal` (a stop
// signal already caught, or 0) pending; returns only when there is no such option (or, with a
// message on stderr, when the exec fails).
void reexec_with_kept_environment(int argc, char** argv, int caught_signal);

}  // namespace sweepbench
