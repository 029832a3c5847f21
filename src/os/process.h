// Starting a point's command and passing the runner's signals on to it.
//
// The command runs in its own process group, stdin from /dev/null, stdout and stderr into files.
// While it runs, the runner's SIGINT, SIGTERM and SIGHUP become SIGUSR2 for the group ("stop after
// this step": bench-train records `cancelled`; mpirun and srun pass SIGUSR2 on to every rank
// rather than ending the job as they do on SIGINT), and SIGUSR1 (SLURM's time-limit warning)
// stays SIGUSR1 (bench-train records `timeout`). A second SIGINT or SIGTERM, a second or more
// after the first, kills the group (and says that no results are left).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sweepbench {

struct ProcessResult {
  int exit_code = -1;            // when it exited
  int term_signal = 0;           // when a signal ended it
  std::string describe() const;  // "exit code 3", "killed by SIGKILL"
};

// How the stop signals this process receives reach the process group of the child it runs: one
// handler, two policies.
enum class StopPolicy {
  // bench-sweep run (above): SIGINT, SIGTERM and SIGHUP become SIGUSR2, SIGUSR1 stays SIGUSR1
  // and is not a stop; a stop delivered twice within a second counts once; a second stop
  // kills the group with SIGKILL and says so on stderr.
  kRunner,
  // bench-command (docs/commands.md, "Signals"): SIGTERM, SIGINT and SIGUSR1 pass as they are,
  // SIGUSR2 (bench-sweep's stop) and SIGHUP become SIGTERM; any second signal kills the group.
  kCommand,
};
// Installs the handler with `policy` for the rest of the process.
void install_stop_forwarding(StopPolicy policy);
// The signals a policy handles (bench-command blocks them while it starts its program).
const std::vector<int>& stop_signals(StopPolicy policy);
// From now on stops go to process group `group` (0: none); one received before is passed on now.
void forward_stops_to(int group);
// Several groups at once (bench-sweep run --jobs: one a running point): a stop goes to every
// group added and not yet removed; one received before is passed on to a group when it is added.
// At most kMaxStopGroups at once; add_stop_group returns false beyond that.
constexpr int kMaxStopGroups = 1024;
bool add_stop_group(int group);
void remove_stop_group(int group);
// The first stop signal received, or 0.
int received_stop_signal();
// True when a second stop signal (kRunner: more than a second after the first, since one Ctrl-C
// can arrive twice through `timeout`) killed the child's group with SIGKILL.
bool killed_by_second_stop();

// Starting a process: the one fork and exec of sweepbench (the runner's points, bench-command's
// program and the short commands of capture_process all start here). Everything the child does
// between fork and exec is async-signal-safe: argv and the environment are built before fork.
struct SpawnSpec {
  std::vector<std::string> argv;           // argv[0] looked up in PATH
  std::map<std::string, std::string> env;  // added to this process's environment
  std::string workdir;                     // "" = this process's
  int stdin_fd = -1;                       // -1: /dev/null
  int stdout_fd = -1, stderr_fd = -1;      // -1: this process's
  int keep_fd = -1;                        // kept open across exec (a point's claim)
  bool own_group = true;                   // in a process group of its own (setpgid)
  int parent_death_signal = 0;             // PR_SET_PDEATHSIG: what the child gets if we die
  std::vector<int> cpus;                   // the CPUs it may run on (affinity); empty: ours
};
struct Spawned {
  int pid = -1;       // the child (reap it even when `error` is set: it exited 127)
  std::string error;  // why it did not start ("cannot start it: No such file or directory")
};
// Forks and execs; returns once the exec has succeeded or failed (a close-on-exec pipe says
// which). Stop and forwarded signals are reset to their defaults and unblocked in the child.
// Throws Error(kIo) when it cannot fork.
Spawned spawn_process(const SpawnSpec& spec);

// Runs argv (argv[0] looked up in PATH) with `env` added to this process's environment. Throws
// Error(kIo) when the log files cannot be created; a program that cannot be started exits 127 with
// the reason in its stderr file, as a shell would.
//
// `inherit_fd` (the point's claim, when >= 0) stays open in the command and what it starts, so the
// claim's lock lives as long as they do. Should this process die first (SIGKILL), the command
// gets SIGUSR2 (PR_SET_PDEATHSIG): bench-train stops after its step and writes its results.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env,
                          const std::string& stdout_path, const std::string& stderr_path,
                          int inherit_fd = -1);

// run_process in two halves, for several at once (bench-sweep run --jobs). start_process starts
// the command as run_process does (on `cpus` only, when given) and adds its group to those stops
// go to; wait_for_any waits up to `timeout_seconds` for one of `pids` (started here, not yet
// waited for) to end and returns its pid and result, or nullopt when none ended meanwhile (or a
// signal came). The group is removed from the stop groups when its result is returned.
int start_process(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env, const std::string& stdout_path,
                  const std::string& stderr_path, int inherit_fd = -1,
                  const std::vector<int>& cpus = {});
struct Ended {
  int pid = -1;
  ProcessResult result;
};
std::optional<Ended> wait_for_any(const std::vector<int>& pids, double timeout_seconds);

std::string signal_name(int sig);

// No process of a point outlives it (docs/security.md). The process that runs points (bench-sweep
// run, bench-command) becomes its descendants' reaper (PR_SET_CHILD_SUBREAPER), so that what a
// program leaves behind, even a daemon that forked twice and left its session (setsid), stays
// its descendant; when the point has ended, end_leftover_processes ends whatever is left.
void become_child_subreaper();

// How long leftovers get between SIGTERM and SIGKILL.
constexpr double kLeftoverGraceSeconds = 3;

// The processes descending from this one (its children, theirs, ...), found in /proc, each as
// "PID (COMM)"; `except` (a child still meant to run, or 0) and its descendants left out.
std::vector<std::string> descendant_processes(int except = 0);

// Which descendants are one point's leftovers while other points still run (bench-sweep run
// --jobs): not those of the running points' processes (`running`: their pids), and only those
// whose environment holds `marker` ("NAME=VALUE", the point's SWEEPBENCH_POINT), since what a
// point left behind has been handed to this process and no longer tells whose it was. Empty
// `running` and `marker`: every descendant, as with one point at a time.
struct LeftoverScope {
  std::vector<int> running;
  std::string marker;
};

// Ends every process still descending from this one (within `scope`): SIGTERM, then SIGKILL to
// those left after `grace_seconds` (at once when a stop signal has come meanwhile), and reaps
// them. Returns them as "PID (COMM)", for the point's log; empty when none was left.
std::vector<std::string> end_leftover_processes(double grace_seconds = kLeftoverGraceSeconds,
                                                const LeftoverScope& scope = {});

// A short command's output, for asking a tool (squeue, sbatch, scontrol) something.
struct Captured {
  bool started = false;  // false: the program was not found or could not run
  int exit_code = -1;    // -1 when a signal ended it or the time ran out
  std::string out, err;
  bool ok() const { return started && exit_code == 0; }
};
// Runs argv (looked up in PATH) with stdin from /dev/null, collecting stdout and stderr; kills it
// after `timeout_seconds`. Never throws for the program's own failures.
Captured capture_process(const std::vector<std::string>& argv, double timeout_seconds = 60);

}  // namespace sweepbench
