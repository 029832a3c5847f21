#include "os/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <set>

#include "os/fs.h"
#include "text/error.h"

extern char** environ;

namespace sweepbench {
namespace {

// The process groups stops go to: one a running point (bench-sweep run --jobs N), or the one
// child of run_process and bench-command. A slot is 0 when free.
std::atomic<pid_t> g_groups[kMaxStopGroups];

// Sends `sig` to every group stops go to (async-signal-safe).
void signal_groups(int sig) {
  for (std::atomic<pid_t>& g : g_groups) {
    if (pid_t group = g.load(); group > 0) ::kill(-group, sig);
  }
}

bool any_group() {
  for (std::atomic<pid_t>& g : g_groups) {
    if (g.load() > 0) return true;
  }
  return false;
}
std::atomic<int> g_stop_signal{0};
std::atomic<int> g_stop_count{0};
std::atomic<long long> g_first_stop_ns{0};
std::atomic<bool> g_killed{false};
std::atomic<int> g_policy{static_cast<int>(StopPolicy::kRunner)};

// One Ctrl-C can arrive twice: under `timeout`, the terminal signals both timeout and its child,
// and timeout passes its own on. Stop signals within this long of the first count as one.
constexpr long long kSameStopNs = 1'000'000'000;

// What the child's group gets for a first stop `sig`, by policy.
int forwarded(int sig) {
  if (g_policy.load() == static_cast<int>(StopPolicy::kCommand)) {
    return sig == SIGUSR2 || sig == SIGHUP ? SIGTERM : sig;
  }
  return sig == SIGUSR1 ? SIGUSR1 : SIGUSR2;
}

long long monotonic_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return static_cast<long long>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, sig);
  if (g_policy.load() == static_cast<int>(StopPolicy::kCommand)) {
    // The user's program gets the first as it is (or SIGTERM); any second one kills it.
    int n = g_stop_count.fetch_add(1) + 1;
    if (n > 1) g_killed.store(true);
    signal_groups(n > 1 ? SIGKILL : forwarded(sig));
    return;
  }
  if (sig == SIGUSR1) {
    signal_groups(SIGUSR1);
    return;
  }
  long long now = monotonic_ns();
  long long first = 0;
  if (g_first_stop_ns.compare_exchange_strong(first, now)) {
    g_stop_count.store(1);
    signal_groups(forwarded(sig));
    return;
  }
  if (now - first < kSameStopNs) return;  // the same stop, delivered twice
  g_stop_count.fetch_add(1);
  if (any_group()) {
    // A second, deliberate stop: the user will not wait for the step to end.
    g_killed.store(true);
    static const char kMessage[] =
        "bench-sweep: second stop signal: killing the running point now; a point writes its "
        "results only when it ends, so this attempt leaves none\n";
    ssize_t ignored = ::write(2, kMessage, sizeof(kMessage) - 1);
    (void)ignored;
    signal_groups(SIGKILL);
  }
}

int open_log(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(ErrorKind::kIo, Mark::in(path), "",
                std::string("cannot create the log: ") + std::strerror(errno), "");
  }
  return fd;
}

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGKILL:
      return "SIGKILL";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    default:
      return "signal " + std::to_string(sig);
  }
}

std::string ProcessResult::describe() const {
  if (term_signal != 0) return "killed by " + signal_name(term_signal);
  return "exit code " + std::to_string(exit_code);
}

void install_stop_forwarding(StopPolicy policy) {
  g_policy.store(static_cast<int>(policy));
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  // The runner's waits restart; bench-command's poll loop wants to wake up.
  sa.sa_flags = policy == StopPolicy::kRunner ? SA_RESTART : 0;
  for (int sig : stop_signals(policy)) sigaction(sig, &sa, nullptr);
}

const std::vector<int>& stop_signals(StopPolicy policy) {
  static const std::vector<int> runner = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
  static const std::vector<int> command = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
  return policy == StopPolicy::kRunner ? runner : command;
}

void forward_stops_to(int group) {
  for (std::atomic<pid_t>& g : g_groups) g.store(0);
  if (group > 0) add_stop_group(group);
}

bool add_stop_group(int group) {
  for (std::atomic<pid_t>& g : g_groups) {
    pid_t free_slot = 0;
    if (!g.compare_exchange_strong(free_slot, group)) continue;
    // A stop that came before the group was known: pass it on now.
    if (int sig = g_stop_signal.load(); sig != 0) ::kill(-group, forwarded(sig));
    return true;
  }
  return false;
}

void remove_stop_group(int group) {
  for (std::atomic<pid_t>& g : g_groups) {
    pid_t mine = group;
    g.compare_exchange_strong(mine, 0);
  }
}

int received_stop_signal() { return g_stop_signal.load(); }

bool killed_by_second_stop() { return g_killed.load(); }

Spawned spawn_process(const SpawnSpec& spec) {
  // Built before fork: after it, the child calls only async-signal-safe functions.
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
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : spec.cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &cpus);
  }
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    throw Error(ErrorKind::kIo, Mark::in(spec.argv.front()), "",
                std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  // vfork, not fork: the child borrows this process's memory until it execs, so starting it
  // costs the same whatever this process holds (a 5,000-point plan in memory made
  // fork's copy of the page tables a third of bench-sweep's time a point). Every signal is
  // blocked across it, so that no handler of ours runs in the child; the child sets each
  // handled signal back to its default before it unblocks them.
  sigset_t all, old_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old_mask);
  pid_t pid = ::vfork();
  if (pid == 0) {
    for (int sig = 1; sig < NSIG; ++sig) {
      struct sigaction current {};
      if (::sigaction(sig, nullptr, &current) != 0) continue;
      if (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN) continue;
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      ::sigaction(sig, &dfl, nullptr);
    }
    if (spec.own_group) ::setpgid(0, 0);
    if (spec.parent_death_signal != 0) {
      ::prctl(PR_SET_PDEATHSIG, spec.parent_death_signal);
      // Should the parent have died already, the signal is due now.
      if (::getppid() != parent) ::_exit(128 + spec.parent_death_signal);
    }
    if (spec.keep_fd >= 0) ::fcntl(spec.keep_fd, F_SETFD, 0);
    if (!spec.cpus.empty() && ::sched_setaffinity(0, sizeof(cpus), &cpus) != 0) {
      const char* reason = std::strerror(errno);
      static const char kWhat[] = "cannot run on its CPUs: ";
      ssize_t ignored = ::write(exec_pipe[1], kWhat, sizeof(kWhat) - 1);
      ignored = ::write(exec_pipe[1], reason, std::strlen(reason));
      (void)ignored;
      ::_exit(127);
    }
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    // SIGPIPE too: the tools ignore it for themselves (survive_closed_output), and an ignored
    // signal would stay ignored across exec.
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE}) {
      ::sigaction(sig, &sa, nullptr);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    int in_fd = spec.stdin_fd >= 0 ? spec.stdin_fd : ::open("/dev/null", O_RDONLY);
    if (in_fd >= 0) ::dup2(in_fd, 0);
    if (spec.stdout_fd >= 0) ::dup2(spec.stdout_fd, 1);
    if (spec.stderr_fd >= 0) ::dup2(spec.stderr_fd, 2);
    auto fail = [&](const char* what) {
      const char* reason = std::strerror(errno);
      ssize_t ignored = ::write(exec_pipe[1], what, std::strlen(what));
      ignored = ::write(exec_pipe[1], ": ", 2);
      ignored = ::write(exec_pipe[1], reason, std::strlen(reason));
      (void)ignored;
      ::_exit(127);
    };
    if (!spec.workdir.empty() && ::chdir(spec.workdir.c_str()) != 0) {
      fail("cannot enter the working directory");
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    fail("cannot start it");
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = fork_errno;
  ::close(exec_pipe[1]);
  if (pid < 0) {
    int err = errno;
    ::close(exec_pipe[0]);
    throw Error(ErrorKind::kIo, Mark::in(spec.argv.front()), "",
                std::string("cannot fork: ") + std::strerror(err));
  }
  if (spec.own_group) ::setpgid(pid, pid);  // also in the child: whichever runs first
  Spawned s;
  s.pid = pid;
  char buf[512];
  for (ssize_t got; (got = ::read(exec_pipe[0], buf, sizeof(buf))) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    s.error.append(buf, static_cast<size_t>(got));
  }
  ::close(exec_pipe[0]);
  return s;
}

namespace {

// The children start_process started and wait_for_any has not yet returned, each with a pidfd
// (-1 where the kernel has none: Linux before 5.3). Leftover reaping leaves them alone.
std::map<pid_t, int>& started_children() {
  static std::map<pid_t, int> children;
  return children;
}

ProcessResult result_of(int status) {
  ProcessResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  return r;
}

}  // namespace

int start_process(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env, const std::string& stdout_path,
                  const std::string& stderr_path, int inherit_fd, const std::vector<int>& cpus) {
  int out_fd = open_log(stdout_path);
  int err_fd = -1;
  try {
    err_fd = open_log(stderr_path);
  } catch (...) {
    ::close(out_fd);
    throw;
  }
  SpawnSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.stdout_fd = out_fd;
  spec.stderr_fd = err_fd;
  spec.keep_fd = inherit_fd;
  spec.cpus = cpus;
  // The runner's death reaches the point as "stop after this step"; if it died already, now.
  spec.parent_death_signal = SIGUSR2;
  Spawned child;
  try {
    child = spawn_process(spec);
  } catch (...) {
    ::close(out_fd);
    ::close(err_fd);
    throw;
  }
  pid_t pid = child.pid;
  if (!child.error.empty()) {
    // As a shell would: the reason in the stderr log, exit code 127.
    write_all(err_fd, "bench-sweep: '" + argv[0] + "' " + child.error + "\n");
  }
  ::close(out_fd);
  ::close(err_fd);
  started_children()[pid] = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (!add_stop_group(pid)) {
    // More groups than the table holds: this one cannot be told to stop, so it does not run.
    ::kill(-pid, SIGKILL);
  }
  return pid;
}

std::optional<Ended> wait_for_any(const std::vector<int>& pids, double timeout_seconds) {
  auto reaped = [](pid_t pid) -> std::optional<Ended> {
    int status = 0;
    pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got != pid) return std::nullopt;
    auto& children = started_children();
    if (auto it = children.find(pid); it != children.end()) {
      if (it->second >= 0) ::close(it->second);
      children.erase(it);
    }
    remove_stop_group(pid);
    return Ended{pid, result_of(status)};
  };
  for (int pid : pids) {
    if (auto e = reaped(pid)) return e;
  }
  // A pidfd turns readable when its process has ended; without one, ask waitpid every 20 ms.
  std::vector<pollfd> fds;
  bool all_have_pidfds = true;
  for (int pid : pids) {
    auto it = started_children().find(pid);
    if (it != started_children().end() && it->second >= 0) {
      fds.push_back({it->second, POLLIN, 0});
    } else {
      all_have_pidfds = false;
    }
  }
  int timeout_ms = static_cast<int>(std::max(0.0, timeout_seconds) * 1000);
  if (!all_have_pidfds) timeout_ms = std::min(timeout_ms, 20);
  if (!fds.empty()) {
    ::poll(fds.data(), static_cast<nfds_t>(fds.size()), timeout_ms);  // EINTR: a signal; check
  } else {
    ::usleep(static_cast<useconds_t>(timeout_ms) * 1000);
  }
  for (int pid : pids) {
    if (auto e = reaped(pid)) return e;
  }
  return std::nullopt;
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env,
                          const std::string& stdout_path, const std::string& stderr_path,
                          int inherit_fd) {
  int pid = start_process(argv, env, stdout_path, stderr_path, inherit_fd);
  while (true) {
    if (std::optional<Ended> e = wait_for_any({pid}, 3600)) return e->result;
  }
}

void become_child_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

namespace {

struct ProcEntry {
  pid_t pid, ppid;
  std::string comm;
};

// Every process of /proc with its parent and name (the kernel's "comm", 15 bytes at most);
// those that have ended and wait to be reaped (zombies) only when asked.
std::vector<ProcEntry> all_processes(bool zombies = false) {
  std::vector<ProcEntry> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so read from the last ')'.
    char* open = std::strchr(buf, '(');
    char* close = std::strrchr(buf, ')');
    if (open == nullptr || close == nullptr || close < open) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(close + 1, " %c %ld", &state, &ppid) != 2) continue;
    if (state == 'Z' && !zombies) continue;  // ended already; waitpid reaps it
    out.push_back({static_cast<pid_t>(pid), static_cast<pid_t>(ppid),
                   std::string(open + 1, static_cast<size_t>(close - open - 1))});
  }
  ::closedir(dir);
  return out;
}

std::vector<ProcEntry> descendants_of(pid_t root, const std::set<pid_t>& except) {
  std::vector<ProcEntry> all = all_processes(), found;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    for (const ProcEntry& p : all) {
      if (p.ppid != parent || except.count(p.pid) != 0) continue;
      found.push_back(p);
      frontier.push_back(p.pid);
    }
  }
  return found;
}

// Reaps this process's children that have ended, except those start_process started (their
// ends are wait_for_any's to tell).
void reap_children() {
  const pid_t self = ::getpid();
  const auto& started = started_children();
  int status = 0;
  if (started.empty()) {
    while (::waitpid(-1, &status, WNOHANG) > 0) {
    }
    return;
  }
  for (const ProcEntry& p : all_processes(true)) {
    if (p.ppid == self && started.count(p.pid) == 0) ::waitpid(p.pid, &status, WNOHANG);
  }
}

// True when /proc/PID/environ holds `entry` ("NAME=VALUE") as a whole entry. A process in the
// middle of exec reads as empty for a moment: an empty environment is read again, 10 ms at most.
bool environment_holds(pid_t pid, const std::string& entry) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/environ", static_cast<int>(pid));
  try {
    std::optional<std::string> env = read_file_if_exists(path, size_t{8} << 20);
    for (int again = 0; env && env->empty() && again < 5; ++again) {
      ::usleep(2'000);
      env = read_file_if_exists(path, size_t{8} << 20);
    }
    if (!env) return false;
    std::string wanted = entry;
    wanted.push_back('\0');
    if (env->compare(0, wanted.size(), wanted) == 0) return true;
    return env->find('\0' + wanted) != std::string::npos;
  } catch (const Error&) {
    return false;  // gone, or not ours to read
  }
}

// The descendants `scope` makes leftovers.
std::vector<ProcEntry> leftovers_in(const LeftoverScope& scope) {
  std::set<pid_t> running(scope.running.begin(), scope.running.end());
  std::vector<ProcEntry> found = descendants_of(::getpid(), running);
  if (scope.marker.empty()) return found;
  std::vector<ProcEntry> marked;
  for (const ProcEntry& p : found) {
    if (environment_holds(p.pid, scope.marker)) marked.push_back(p);
  }
  return marked;
}

}  // namespace

std::vector<std::string> descendant_processes(int except) {
  std::vector<std::string> out;
  std::set<pid_t> left_out;
  if (except > 0) left_out.insert(except);
  for (const ProcEntry& p : descendants_of(::getpid(), left_out)) {
    out.push_back(std::to_string(p.pid) + " (" + p.comm + ")");
  }
  return out;
}

std::vector<std::string> end_leftover_processes(double grace_seconds, const LeftoverScope& scope) {
  reap_children();
  std::vector<ProcEntry> left = leftovers_in(scope);
  std::vector<std::string> named;
  // What is on its way out goes by itself: an MPI singleton's orted, or a launcher's helper,
  // ends a moment after the program it served (every 1-rank point under Open MPI has one). Only
  // what is still there after a second is a leftover, to be ended and named.
  auto settled_by = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!left.empty() && std::chrono::steady_clock::now() < settled_by &&
         g_stop_count.load() == 0) {
    ::usleep(20'000);
    reap_children();
    left = leftovers_in(scope);
  }
  if (left.empty()) return named;
  for (const ProcEntry& p : left) {
    named.push_back(std::to_string(p.pid) + " (" + p.comm + ")");
    ::kill(p.pid, SIGTERM);
  }
  // After a second stop signal nothing is given time: the user asked for everything to end now
  // (with --jobs 2 the second point's end waited out the first point's grace, 3 s).
  auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(g_killed.load() ? 0 : static_cast<long>(grace_seconds * 1000));
  int stops_before = g_stop_count.load();
  while (std::chrono::steady_clock::now() < deadline) {
    reap_children();
    if (leftovers_in(scope).empty()) return named;
    if (g_stop_count.load() != stops_before) break;  // a stop signal: no more waiting
    ::usleep(50'000);
  }
  // Those still there, and what they started meanwhile.
  // SIGKILL cannot be refused, but a loaded machine may take a while to carry it out (and a
  // process may have started another meanwhile): again until none is left, 10 s at most.
  auto killed_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    std::vector<ProcEntry> still = leftovers_in(scope);
    if (still.empty() || std::chrono::steady_clock::now() > killed_by) break;
    for (const ProcEntry& p : still) ::kill(p.pid, SIGKILL);
    ::usleep(10'000);
    reap_children();
  }
  return named;
}

Captured capture_process(const std::vector<std::string>& argv, double timeout_seconds) {
  Captured c;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return c;
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return c;
  }
  SpawnSpec spec;
  spec.argv = argv;
  spec.stdout_fd = out_pipe[1];
  spec.stderr_fd = err_pipe[1];
  spec.own_group = false;  // a short query: it goes with this process's group
  Spawned child;
  try {
    child = spawn_process(spec);
  } catch (const Error&) {
    child.pid = -1;
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  pid_t pid = child.pid;
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return c;
  }
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long>(timeout_seconds * 1000));
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&c.out, &c.err};
  int open_count = 2;
  bool timed_out = false;
  while (open_count > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(std::min<long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && n > 0; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[4096];
      ssize_t got = ::read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  for (pollfd& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  c.started = child.error.empty();
  if (!c.started) c.err += child.error;
  if (WIFEXITED(status) && !timed_out) c.exit_code = WEXITSTATUS(status);
  if (timed_out) c.err += "\n(killed after " + std::to_string(timeout_seconds) + " s)";
  return c;
}

}  // namespace sweepbench
