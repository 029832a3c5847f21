#include "command/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "core/process.h"

extern char** environ;

namespace sweepbench {
namespace {

std::atomic<int> g_first_signal{0};
std::atomic<int> g_signal_count{0};
std::atomic<pid_t> g_child_group{0};

int forwarded(int sig) { return sig == SIGUSR2 || sig == SIGHUP ? SIGTERM : sig; }

extern "C" void on_command_stop_signal(int sig) {
  int expected = 0;
  g_first_signal.compare_exchange_strong(expected, sig);
  int n = ++g_signal_count;
  pid_t group = g_child_group.load();
  if (group > 0) ::kill(-group, n > 1 ? SIGKILL : forwarded(sig));
}

constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};

int open_log(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(ErrorKind::kIo, Mark::in(path), "",
                std::string("cannot create the log: ") + std::strerror(errno));
  }
  return fd;
}

bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

ChildRun run_child(const ChildSpec& spec) {
  ChildRun run;
  int out_log = open_log(spec.stdout_log);
  int err_log = open_log(spec.stderr_log);
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    throw Error(ErrorKind::kIo, Mark::in(spec.stdout_log), "",
                std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  // The environment and argv are built before fork: the child only calls async-signal-safe
  // functions.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::vector<std::string> env_entries;
  for (const auto& [k, v] : env) env_entries.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (std::string& e : env_entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Stop signals are blocked until the child's group is known, so none is lost between.
  sigset_t stops, old;
  sigemptyset(&stops);
  for (int s : kForwardedSignals) sigaddset(&stops, s);
  ::sigprocmask(SIG_BLOCK, &stops, &old);
  for (int s : kForwardedSignals) {
    struct sigaction sa {};
    sa.sa_handler = on_command_stop_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(s, &sa, nullptr);
  }
  become_child_subreaper();
  const pid_t parent = ::getpid();
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    throw Error(ErrorKind::kIo, Mark::in(spec.argv.front()), "",
                std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    for (int s : kForwardedSignals) ::signal(s, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    int null_in = ::open("/dev/null", O_RDONLY);
    if (null_in >= 0) ::dup2(null_in, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    auto fail = [&](const char* what) {
      int e = errno;
      ::write(exec_pipe[1], what, std::strlen(what));
      ::write(exec_pipe[1], ": ", 2);
      const char* msg = std::strerror(e);
      ::write(exec_pipe[1], msg, std::strlen(msg));
      ::_exit(127);
    };
    if (::chdir(spec.workdir.c_str()) != 0) fail("cannot enter the working directory");
    ::execvpe(argv[0], argv.data(), envp.data());
    fail("cannot start it");
  }
  ::setpgid(pid, pid);  // also here: whichever runs first, the group exists before a signal
  g_child_group = pid;
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  if (int first = g_first_signal.load(); first != 0) ::kill(-pid, forwarded(first));
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
  while (true) {
    pollfd fds[2];
    int n = 0;
    for (Stream& s : streams) {
      if (s.open) fds[n++] = {s.pipe, POLLIN, 0};
    }
    if (n == 0 && exited) break;
    int ready = n > 0 ? ::poll(fds, static_cast<nfds_t>(n), 200) : (::usleep(200000), 0);
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
      if (!write_all(s.log, buf, static_cast<size_t>(got)) && run.log_error.empty()) {
        run.log_error = std::string("cannot write the program's log: ") + std::strerror(errno);
      }
      if (spec.echo) write_all(s.echo, buf, static_cast<size_t>(got));
    }
    auto now = std::chrono::steady_clock::now();
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      exited_at = now;
    }
    // Something the program started may hold the pipes open after it ended: a moment to drain,
    // then no longer.
    if (exited && now - exited_at > std::chrono::seconds(2)) break;
    if (g_first_signal.load() != 0 && !exited && !killed) {
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
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  g_child_group = 0;
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
  std::string exec_error;
  for (ssize_t got; (got = ::read(exec_pipe[0], buf, sizeof(buf))) > 0;) {
    exec_error.append(buf, static_cast<size_t>(got));
  }
  ::close(exec_pipe[0]);
  run.end.stop_signal = g_first_signal.load();
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
