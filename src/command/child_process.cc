#include "command/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "os/fs.h"
#include "os/process.h"
#include "text/error.h"

namespace sweepbench {
namespace {

int open_log(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(ErrorKind::kIo, Mark::in(path), "",
                std::string("cannot create the log: ") + std::strerror(errno));
  }
  return fd;
}


}  // namespace

ChildRun run_child(const ChildSpec& spec) {
  ChildRun run;
  int out_log = open_log(spec.stdout_log);
  int err_log = open_log(spec.stderr_log);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw Error(ErrorKind::kIo, Mark::in(spec.stdout_log), "",
                std::string("cannot create a pipe: ") + std::strerror(errno));
  }

  // Stop signals are blocked until the child's group is known, so none is lost between; the
  // one handler of os/process.h passes them on with bench-command's policy.
  sigset_t stops, old;
  sigemptyset(&stops);
  for (int s : stop_signals(StopPolicy::kCommand)) sigaddset(&stops, s);
  ::sigprocmask(SIG_BLOCK, &stops, &old);
  install_stop_forwarding(StopPolicy::kCommand);
  become_child_subreaper();
  auto t0 = std::chrono::steady_clock::now();
  SpawnSpec start;
  start.argv = spec.argv;
  start.env = spec.env;
  start.workdir = spec.workdir;
  start.stdout_fd = out_pipe[1];
  start.stderr_fd = err_pipe[1];
  start.parent_death_signal = SIGKILL;  // nothing of a point outlives bench-command
  Spawned child;
  try {
    child = spawn_process(start);
  } catch (...) {
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  const pid_t pid = child.pid;
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  forward_stops_to(pid);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);

  // Copy both pipes to the logs (and through) until the program has ended and they are drained.
  struct Stream {
    int pipe, log, echo;
    bool open = true;
  } streams[2] = {{out_pipe[0], out_log, 1}, {err_pipe[0], err_log, 2}};
  int status = 0;
  bool exited = false;
  std::chrono::steady_clock::time_point exited_at, first_signal_at;
  bool killed = false;
  char buf[1 << 16];
  // The program's end wakes the wait as its output does (a pidfd is readable once the process
  // has exited), so neither order of "pipes closed" and "exited" costs a sleep (200 ms
  // a point). Without pidfds (Linux before 5.3), a short poll of waitpid instead.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  while (true) {
    pollfd fds[3];
    int n = 0;
    for (Stream& s : streams) {
      if (s.open) fds[n++] = {s.pipe, POLLIN, 0};
    }
    const int streams_polled = n;
    if (streams_polled == 0 && exited) break;
    if (!exited && pidfd >= 0) fds[n++] = {pidfd, POLLIN, 0};
    // 200 ms at most, for the stop signal's grace and the drain after the end; 5 ms where only
    // waitpid can tell that the program has ended.
    const int timeout_ms = (pidfd < 0 && streams_polled == 0) ? 5 : 200;
    int ready = n > 0 ? ::poll(fds, static_cast<nfds_t>(n), timeout_ms)
                      : (::usleep(timeout_ms * 1000), 0);
    if (ready < 0 && errno != EINTR) break;
    int k = 0;
    for (Stream& s : streams) {
      if (!s.open) continue;
      pollfd& p = fds[k++];
      if (ready <= 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      ssize_t got = ::read(s.pipe, buf, sizeof(buf));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        s.open = false;
        continue;
      }
      std::string_view chunk(buf, static_cast<size_t>(got));
      if (!write_all(s.log, chunk) && run.log_error.empty()) {
        run.log_error = std::string("cannot write the program's log: ") + std::strerror(errno);
      }
      if (spec.echo) write_all(s.echo, chunk);
    }
    auto now = std::chrono::steady_clock::now();
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      exited_at = now;
    }
    // Something the program started may hold the pipes open after it ended: a moment to drain,
    // then no longer.
    if (exited && now - exited_at > std::chrono::seconds(2)) break;
    if (received_stop_signal() != 0 && !exited && !killed) {
      if (first_signal_at == std::chrono::steady_clock::time_point()) first_signal_at = now;
      if (now - first_signal_at > std::chrono::duration<double>(kGraceSeconds)) {
        ::kill(-pid, SIGKILL);
        killed = true;
      }
    }
  }
  if (!exited) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  forward_stops_to(0);
  // Whatever the program started and left behind goes with it: its group at once (the program
  // is gone), then every other descendant, after SIGTERM and a grace (a daemon in a session of
  // its own); they are named in the point's log.
  ::kill(-pid, SIGKILL);
  run.leftovers = end_leftover_processes();
  for (Stream& s : streams) ::close(s.pipe);
  if (::fsync(out_log) != 0 || ::close(out_log) != 0 || ::fsync(err_log) != 0 ||
      ::close(err_log) != 0) {
    if (run.log_error.empty()) {
      run.log_error = std::string("cannot write the program's log: ") + std::strerror(errno);
    }
  }
  const std::string& exec_error = child.error;
  run.end.stop_signal = received_stop_signal();
  if (!exec_error.empty()) {
    run.end.started = false;
    run.end.start_error = "'" + spec.argv.front() + "' " + exec_error;
  } else if (WIFEXITED(status)) {
    run.end.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    run.end.term_signal = WTERMSIG(status);
  }
  return run;
}

}  // namespace sweepbench
