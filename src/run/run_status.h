// How a bench-train or bench-infer run ends, as the ranks agree on it, and the signals that end it
// early.
#pragma once

#include <atomic>
#include <string>

#include "model/outcome.h"

namespace sweepbench {

// What the ranks agree on; the largest value wins.
enum class RunStatus : int { kOk = 0, kCancelled = 1, kTimeout = 2, kOom = 3, kFailed = 4 };

const char* status_name(RunStatus s);
int exit_code_for(RunStatus s);  // text/exit_codes.h's
RunStatus from_outcome(Outcome o);

// The last stop signal received (0: none).
extern std::atomic<int> g_signal;

// First thing in main: a time-limit warning that comes while the ranks start (MPI, the model, a
// slow file system) is still a timeout with a result, not a rank killed by SIGUSR1. The --env-keep
// restart blocks these signals across execve (a pending one stays pending) and this unblocks them.
void install_signal_handlers();
// The status a received signal asks for: SIGTERM and SIGUSR1 are SLURM's time-limit warnings;
// SIGINT is Ctrl-C and SIGUSR2 is bench-sweep's "stop" (mpirun and srun pass it to every rank
// without ending the job themselves, as they would on SIGINT).
RunStatus signal_status();
std::string signal_text();

}  // namespace sweepbench
