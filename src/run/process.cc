#include "run/process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace sweepbench {
namespace {

std::atomic<pid_t> g_child_group{0};
std::atomic<int> g_stop_signal{0};
std::atomic<int> g_stop_count{0};

int forwarded(int sig) { return sig == SIGUSR1 ? SIGUSR1 : SIGUSR2; }

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, sig);
  int count = sig == SIGUSR1 ? g_stop_count.load() : g_stop_count.fetch_add(1) + 1;
  pid_t group = g_child_group.load();
  if (group > 0) ::kill(-group, count >= 2 ? SIGKILL : forwarded(sig));
}

[[noreturn]] void exec_child(const std::vector<std::string>& argv,
                             const std::map<std::string, std::string>& env, int out_fd,
                             int err_fd) {
  ::setpgid(0, 0);
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaction(sig, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int in_fd = ::open("/dev/null", O_RDONLY);
  if (in_fd >= 0) ::dup2(in_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::string message =
      "bench-sweep: cannot start '" + argv[0] + "': " + std::strerror(errno) + "\n";
  ssize_t ignored = ::write(2, message.data(), message.size());
  (void)ignored;
  ::_exit(127);
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

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaction(sig, &sa, nullptr);
}

int received_stop_signal() { return g_stop_signal.load(); }

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env,
                          const std::string& stdout_path, const std::string& stderr_path) {
  int out_fd = open_log(stdout_path);
  int err_fd = -1;
  try {
    err_fd = open_log(stderr_path);
  } catch (...) {
    ::close(out_fd);
    throw;
  }
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) exec_child(argv, env, out_fd, err_fd);
  ::close(out_fd);
  ::close(err_fd);
  if (pid < 0) {
    throw Error(ErrorKind::kIo, Mark::in(argv[0]), "",
                std::string("cannot fork: ") + std::strerror(errno), "");
  }
  ::setpgid(pid, pid);  // also in the child: whichever runs first
  g_child_group.store(pid);
  // A signal that came before the child's group was known: pass it on now.
  if (int sig = g_stop_signal.load(); sig != 0) ::kill(-pid, forwarded(sig));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) break;
  }
  g_child_group.store(0);
  ProcessResult r;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  return r;
}

}  // namespace sweepbench
