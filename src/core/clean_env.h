// bench-train --env-keep GLOB,...: start again with only the environment variables named; and
// start again with OpenMP's waiting threads asleep (below).
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

// libtorch's OpenMP threads spin while they wait for each other (libgomp's default, before they
// sleep). With another process on one of the run's cores, a spinning thread holds its core while
// the one it waits for is descheduled, and a step can take 100x longer (docs/performance.md, "A
// busy neighbour"). OMP_WAIT_POLICY=PASSIVE makes a waiting thread sleep at once. libgomp reads
// the variable when it is loaded, before main(): so where it is unset, this sets it and execs
// /proc/self/exe with the same arguments (signals as above), before MPI or libtorch start. A
// value already set is kept and returned; "" when the exec failed (the run goes on as it was).
std::string reexec_with_passive_omp_wait(char** argv, int caught_signal);

}  // namespace sweepbench
