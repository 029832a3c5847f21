#include "os/clean_env.h"

#include <fnmatch.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

extern char** environ;

namespace sweepbench {

std::vector<std::string> filter_environment(const std::vector<std::string>& environment,
                                            const std::vector<std::string>& globs) {
  std::vector<std::string> out;
  for (const std::string& entry : environment) {
    std::string name = entry.substr(0, entry.find('='));
    for (const std::string& glob : globs) {
      if (!glob.empty() && ::fnmatch(glob.c_str(), name.c_str(), 0) == 0) {
        out.push_back(entry);
        break;
      }
    }
  }
  return out;
}

void reexec_with_kept_environment(int argc, char** argv, int caught_signal) {
  std::string list;
  bool found = false;
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--env-keep" && i + 1 < argc) {
      list = argv[++i];
      found = true;
    } else if (a.rfind("--env-keep=", 0) == 0) {
      list = a.substr(11);
      found = true;
    } else {
      args.push_back(a);
    }
  }
  if (!found) return;
  std::vector<std::string> globs;
  std::istringstream in(list);
  for (std::string g; std::getline(in, g, ',');) globs.push_back(g);
  std::vector<std::string> current;
  for (char** e = environ; *e != nullptr; ++e) current.emplace_back(*e);
  std::vector<std::string> kept = filter_environment(current, globs);
  kept.push_back("SWEEPBENCH_ENV_KEPT=" + list);
  // A PATH for whatever the process starts (Open MPI's helpers), the image's usual one unless
  // the list kept the caller's.
  bool has_path = false;
  for (const std::string& e : kept) has_path = has_path || e.rfind("PATH=", 0) == 0;
  if (!has_path)
    kept.push_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  std::vector<char*> new_argv, new_env;
  for (std::string& a : args) new_argv.push_back(a.data());
  new_argv.push_back(nullptr);
  for (std::string& e : kept) new_env.push_back(e.data());
  new_env.push_back(nullptr);
  // The new image starts with default handlers: a stop signal that comes before it has its own
  // must wait, blocked, rather than kill it (the mask and pending signals survive execve). One
  // this image caught already is raised again to wait the same way.
  sigset_t stops, before;
  sigemptyset(&stops);
  for (int sig : kStopSignals) sigaddset(&stops, sig);
  sigprocmask(SIG_BLOCK, &stops, &before);
  if (caught_signal != 0) ::raise(caught_signal);
  ::execve("/proc/self/exe", new_argv.data(), new_env.data());
  sigprocmask(SIG_SETMASK, &before, nullptr);
  std::fprintf(stderr, "bench-train: cannot restart with --env-keep: %s\n", std::strerror(errno));
}

}  // namespace sweepbench
