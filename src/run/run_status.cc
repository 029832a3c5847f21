#include "run/run_status.h"

#include <csignal>

#include "os/clean_env.h"  // kStopSignals
#include "text/exit_codes.h"

namespace sweepbench {

const char* status_name(RunStatus s) {
  switch (s) {
    case RunStatus::kOk:
      return "ok";
    case RunStatus::kCancelled:
      return "cancelled";
    case RunStatus::kTimeout:
      return "timeout";
    case RunStatus::kOom:
      return "oom";
    case RunStatus::kFailed:
      return "failed";
  }
  return "failed";
}

int exit_code_for(RunStatus s) {
  switch (s) {
    case RunStatus::kOk:
      return kExitOk;
    case RunStatus::kCancelled:
      return kExitTrainCancelled;
    case RunStatus::kTimeout:
      return kExitTrainTimeout;
    case RunStatus::kOom:
      return kExitTrainOom;
    case RunStatus::kFailed:
      return kExitTrainFailed;
  }
  return kExitTrainFailed;
}

RunStatus from_outcome(Outcome o) {
  return o == Outcome::kOom ? RunStatus::kOom
                            : (o == Outcome::kOk ? RunStatus::kOk : RunStatus::kFailed);
}

std::atomic<int> g_signal{0};

namespace {

extern "C" void on_signal(int sig) { g_signal.store(sig); }

}  // namespace

// First thing in main: a time-limit warning that comes while the ranks start (MPI, the model, a
// slow file system) is still a timeout with a result, not a rank killed by SIGUSR1. The --env-keep
// restart blocks these signals across execve (a pending one stays pending) and this unblocks them.
void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigset_t stops;
  sigemptyset(&stops);
  for (int sig : kStopSignals) {
    sigaction(sig, &sa, nullptr);
    sigaddset(&stops, sig);
  }
  sigprocmask(SIG_UNBLOCK, &stops, nullptr);
}

// The status a received signal asks for: SIGTERM and SIGUSR1 are SLURM's time-limit warnings;
// SIGINT is Ctrl-C and SIGUSR2 is bench-sweep's "stop" (mpirun and srun pass it to every rank
// without ending the job themselves, as they would on SIGINT).
RunStatus signal_status() {
  int sig = g_signal.load();
  if (sig == 0) return RunStatus::kOk;
  return sig == SIGINT || sig == SIGUSR2 ? RunStatus::kCancelled : RunStatus::kTimeout;
}

std::string signal_text() {
  switch (g_signal.load()) {
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    default:
      return "SIGTERM";
  }
}

}  // namespace sweepbench
