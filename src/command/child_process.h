// Running the user's program for bench-command: its output copied to log files and passed on,
// the stop signals bench-command receives passed to it (docs/commands.md, "Signals").
//
// The program runs in its own process group, stdin from /dev/null, and dies with bench-command
// (PR_SET_PDEATHSIG: SIGKILL). bench-command is its descendants' reaper (become_child_subreaper),
// so what the program leaves running, a daemon that left its group and session included, is
// ended when it has ended (end_leftover_processes) and named: nothing of a point outlives it. SIGTERM, SIGINT and SIGUSR1 go
// to the program's group as they are; SIGUSR2 (bench-sweep's "stop") and SIGHUP go as SIGTERM.
// When the program has not ended kGraceSeconds after the first, or at a second, it is killed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "command/metric_eval.h"  // CommandEnd

namespace sweepbench {

constexpr double kGraceSeconds = 30;

struct ChildSpec {
  std::vector<std::string> argv;           // argv[0] looked up in PATH
  std::map<std::string, std::string> env;  // added to this process's environment
  std::string workdir;
  std::string stdout_log, stderr_log;  // created (never replaced)
  bool echo = true;                    // also write the output to this process's stdout/stderr
};

struct ChildRun {
  CommandEnd end;
  double seconds = 0;     // from the start to the end
  std::string log_error;  // a log that could not be written (a full disk): the run is not whole
  std::vector<std::string> leftovers;  // "PID (COMM)" of what the program left running, ended
};

// Runs it to the end. Throws Error(kIo) when a log file cannot be created.
ChildRun run_child(const ChildSpec& spec);

}  // namespace sweepbench
