#include "serve/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <utility>

#include "os/process.h"
#include "text/error.h"
#include "text/terminal.h"
#include "text/text.h"

namespace sweepbench::serve {
namespace {

using Clock = std::chrono::steady_clock;

int open_log(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(ErrorKind::kIo, Mark::in(path), "",
                std::string("cannot create the server's log: ") + std::strerror(errno));
  }
  return fd;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by " + signal_name(WTERMSIG(status));
  return "ended";
}

// The last `lines` non-empty lines of a file, read from its last 64 KiB.
std::vector<std::string> tail_lines(const std::string& path, size_t lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  std::streamoff from = size > 65536 ? size - 65536 : 0;
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> all;
  std::istringstream s(text);
  for (std::string line; std::getline(s, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) all.push_back(line);
  }
  if (all.size() > lines) all.erase(all.begin(), all.end() - static_cast<std::ptrdiff_t>(lines));
  return all;
}

}  // namespace

Server::Server(const ServerLaunch& launch)
    : stdout_log_(launch.stdout_log),
      stderr_log_(launch.stderr_log),
      before_kill_(launch.before_kill) {
  int out = open_log(launch.stdout_log);
  int err = -1;
  try {
    err = open_log(launch.stderr_log);
  } catch (...) {
    ::close(out);
    throw;
  }
  SpawnSpec spec;
  spec.argv = launch.argv;
  spec.env = launch.env;
  spec.workdir = launch.workdir;
  spec.stdout_fd = out;
  spec.stderr_fd = err;
  spec.own_group = true;
  spec.parent_death_signal = SIGKILL;
  Spawned s;
  try {
    s = spawn_process(spec);
  } catch (...) {
    ::close(out);
    ::close(err);
    throw;
  }
  if (!s.error.empty()) {
    // As a shell would: exit 127, the reason in the server's stderr log.
    std::string line = "bench-serve: " + launch.argv.front() + ": " + s.error + "\n";
    ssize_t ignored = ::write(err, line.data(), line.size());
    (void)ignored;
  }
  ::close(out);
  ::close(err);
  pid_ = s.pid;
}

Server::~Server() {
  if (!reaped_ && pid_ > 0) stop(0);
}

bool Server::running() {
  if (reaped_) return false;
  int status = 0;
  pid_t got = ::waitpid(pid_, &status, WNOHANG);
  if (got == pid_) {
    reaped_ = true;
    exit_text_ = describe_status(status);
    return false;
  }
  return got == 0;
}

bool Server::running_after(double seconds) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (running()) {
    if (Clock::now() >= deadline) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

std::string Server::stop(double grace_s, const std::function<bool()>& hurry) {
  std::string how;
  const Clock::time_point t0 = Clock::now();
  auto elapsed = [&] {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f s",
                  std::chrono::duration<double>(Clock::now() - t0).count());
    return std::string(text);
  };
  if (!running()) {
    how = "had " + exit_text_ + " before it was stopped";
    ::kill(-pid_, SIGKILL);  // what is left of its group
  } else {
    ::kill(-pid_, SIGTERM);
    bool ended = false;
    while (std::chrono::duration<double>(Clock::now() - t0).count() < grace_s) {
      if (!running()) {
        ended = true;
        break;
      }
      if (hurry && hurry()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (ended) {
      how = (exit_text_ == "was killed by SIGTERM" ? "ended on SIGTERM"
                                                   : exit_text_ + " on SIGTERM") +
            " in " + elapsed();
      ::kill(-pid_, SIGKILL);  // its group's stragglers
    } else {
      if (before_kill_) before_kill_();
      ::kill(-pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
      exit_text_ = describe_status(status);
      how = "was killed with SIGKILL after " + elapsed() +
            (grace_s > 0 ? " (its grace period: " + format_float_repr(grace_s) + " s)" : "");
    }
  }
  // What it started outside its group is bench-serve's descendant now: ended too.
  std::vector<std::string> left = end_leftover_processes(std::min(grace_s, 3.0));
  if (!left.empty()) {
    how += "; ended " + plural(left.size(), "process", "processes") + " it left: " +
           join(left, ", ");
  }
  return how;
}

std::string Server::last_words(size_t lines) const {
  std::vector<std::string> words = tail_lines(stderr_log_, lines);
  if (words.empty()) words = tail_lines(stdout_log_, lines);
  std::string text = join(words, " | ");
  if (text.size() > 600) text = "..." + text.substr(text.size() - 597);
  return terminal_safe(text, false);
}

namespace {

// Binds a TCP socket on host:port (port 0: any); the socket, or -1 with `why` set.
int bind_socket(const std::string& host, int port, bool reuse, int* bound_port, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    *why = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return -1;
  }
  *why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    if (reuse) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
      *bound_port = bound.ss_family == AF_INET6
                        ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                        : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      ::freeaddrinfo(found);
      return fd;
    }
    *why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return -1;
}

}  // namespace

bool port_free(const std::string& host, int port) {
  int bound = 0;
  std::string why;
  int fd = bind_socket(host, port, true, &bound, &why);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

bool port_answers(const std::string& host, int port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  bool answered = false;
  for (addrinfo* a = found; a != nullptr && !answered; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      answered = true;
    } else if (errno == EINPROGRESS) {
      pollfd w{fd, POLLOUT, 0};
      int error = 0;
      socklen_t len = sizeof(error);
      answered = ::poll(&w, 1, timeout_ms) == 1 &&
                 ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return answered;
}

std::pair<int, int> ephemeral_port_range() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (in >> low >> high && low > 0 && high >= low) return {low, high};
  return {32768, 60999};  // Linux's default
}

int free_port(const std::string& host) {
  // Below the ephemeral range: a port there is taken only by a program that names it. Every
  // bind to port 0 (another test's or server's listener, a vLLM engine's own sockets) draws from
  // the ephemeral range, and one that drew ours between this check and the server's bind left
  // the server without its port and the load answered by someone else.
  const int low = ephemeral_port_range().first;
  const int first = 10000;
  if (low - first >= 1000) {
    std::random_device seed;
    std::mt19937 draw(seed());
    std::uniform_int_distribution<int> pick(first, low - 1);
    for (int i = 0; i < 200; ++i) {
      const int port = pick(draw);
      int bound = 0;
      std::string why;
      // No SO_REUSEADDR: a port with a connection in TIME_WAIT is left too.
      int fd = bind_socket(host, port, false, &bound, &why);
      if (fd >= 0) {
        ::close(fd);
        return port;
      }
    }
  }
  int port = 0;
  std::string why;
  int fd = bind_socket(host, 0, false, &port, &why);
  if (fd < 0) {
    throw Error(ErrorKind::kIo, Mark::in("serve.host"), "serve.host",
                "cannot bind a port on '" + host + "': " + why);
  }
  ::close(fd);
  return port;
}

}  // namespace sweepbench::serve
