// A serve point's server process (docs/serving.md, "The server"): started in a process group of
// its own with its output in the point's logs, watched while the load runs, and stopped so that
// nothing of it is left: SIGTERM to its group, SIGKILL to the group after the grace period, then
// whatever it started that left the group (a daemon, a setsid'd worker) found among bench-serve's
// descendants and ended, since bench-serve is their reaper (os/process.h,
// become_child_subreaper). Should bench-serve itself be killed, the server gets SIGKILL
// (PR_SET_PDEATHSIG) and what it started is handed to bench-sweep run, which ends it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sweepbench::serve {

struct ServerLaunch {
  std::vector<std::string> argv;  // argv[0] looked up in PATH
  std::map<std::string, std::string> env;
  std::string workdir;
  std::string stdout_log, stderr_log;  // created (never replaced)
  // Called when the grace period has passed and the server is still there, before SIGKILL to its
  // group: a server run as a SLURM step is cancelled through SLURM there (SIGKILL to srun would
  // leave its tasks running on their node).
  std::function<void()> before_kill;
};

class Server {
 public:
  // Starts it. Throws Error(kIo) when a log cannot be created or it cannot fork; a program that
  // cannot be started is a server that exited (127) with the reason in its stderr log.
  explicit Server(const ServerLaunch& launch);
  ~Server();  // stops it (no grace) if stop() was not called
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int pid() const { return pid_; }
  // Whether it still runs; once it has exited, exit_text() says how.
  bool running();
  // Whether it still runs after up to `seconds` of waiting for an end already under way: a
  // process that exits closes its sockets before its parent can reap it, so the clients' failed
  // connections come first and a look at once can still find it running.
  bool running_after(double seconds);
  std::string exit_text() const { return exit_text_; }

  // Stops it as above and returns how it ended ("exited on SIGTERM after 0.4 s", "killed with
  // SIGKILL after the 30 s grace period", "had exited with code 1"), with the leftovers ended
  // when there were any. `hurry` is asked while waiting: true skips the rest of the grace.
  std::string stop(double grace_s, const std::function<bool()>& hurry = nullptr);

  // The last lines of its output, stderr first (where servers write their errors), for a
  // point's reason: at most `lines` lines and 600 bytes, terminal-safe.
  std::string last_words(size_t lines = 3) const;

 private:
  int pid_ = -1;
  bool reaped_ = false;
  std::string exit_text_;
  std::string stdout_log_, stderr_log_;
  std::function<void()> before_kill_;
};

// Whether nothing listens on `host`:`port` now (a bind with SO_REUSEADDR succeeds: connections
// of the server's that wait in TIME_WAIT do not keep the next server from listening there).
bool port_free(const std::string& host, int port);

// Whether something on `host`:`port` accepts a TCP connection within `timeout_ms`: how a server
// on another node (a SLURM step's) is seen to have let its port go, where port_free cannot bind.
bool port_answers(const std::string& host, int port, int timeout_ms = 1000);

// A TCP port free on `host` now, drawn at random from 10000 up to the system's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), which binds to port 0 draw from, so that none of them
// takes it before the server binds it; port 0's choice where that range starts below 11000.
// Throws Error(kIo) when no socket can be bound there.
int free_port(const std::string& host);

// /proc/sys/net/ipv4/ip_local_port_range, or Linux's default (32768, 60999).
std::pair<int, int> ephemeral_port_range();

}  // namespace sweepbench::serve
