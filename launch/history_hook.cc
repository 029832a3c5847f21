#include "launch/history_hook.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "launch/shell.h"
#include "os/fs.h"
#include "os/process.h"
#include "text/error.h"
#include "text/redact.h"
#include "text/text.h"

namespace sweepbench {

namespace fs = std::filesystem;

HistoryHook history_hook_of(const std::string& store, const std::vector<std::string>& labels) {
  HistoryHook hook;
  if (store.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    throw Error::input(Mark::in("--history"), "", "holds a line break or a NUL",
                       "give the store's path or URL on one line");
  }
  hook.store = store;
  // What bench-history would refuse at the end of the run is refused before it starts.
  const size_t scheme_end = store.find("://");
  if (scheme_end != std::string::npos) {
    const std::string scheme = store.substr(0, scheme_end);
    if (scheme != "sqlite" && scheme != "postgresql" && scheme != "postgres") {
      throw Error::input(Mark::in("--history"), "",
                         "'" + scheme + "' is not a store bench-history knows",
                         "give a path, sqlite:PATH or postgresql://USER@HOST:PORT/DATABASE");
    }
  } else if (store.find('=') != std::string::npos && store.find(' ') != std::string::npos) {
    throw Error::input(Mark::in("--history"), "",
                       "looks like a libpq key=value connection string, not a store URL",
                       "write it as postgresql://USER@HOST:PORT/DATABASE");
  }
  // A relative path is the caller's: an array's job runs elsewhere.
  if (!store.empty() && store.find("://") == std::string::npos && store.rfind("sqlite:", 0) != 0) {
    hook.store = fs::absolute(store).lexically_normal().string();
  }
  for (const std::string& text : labels) {
    const size_t eq = text.find('=');
    const std::string name = text.substr(0, eq);
    const bool name_ok =
        eq != std::string::npos && !name.empty() && name.size() <= 64 &&
        std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
        });
    const std::string value = eq == std::string::npos ? "" : text.substr(eq + 1);
    const bool value_ok =
        value.size() <= 4096 && std::none_of(value.begin(), value.end(), [](char c) {
          return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
        });
    if (!name_ok || !value_ok) {
      throw Error::input(Mark::in("--history-label " + text), "",
                         !name_ok ? "is not NAME=VALUE with a NAME of letters, digits, _ . and -"
                                  : "the value holds a control character or is over 4096 bytes",
                         "write e.g. --history-label commit=3f2a9c1");
    }
    hook.labels[name] = value;
  }
  if (!hook.labels.empty() && store.empty()) {
    throw Error::input(Mark::in("--history-label"), "", "labels runs in a history store",
                       "add --history STORE, or leave the label out");
  }
  return hook;
}

std::vector<std::string> history_ingest_argv(const std::string& bench_sweep,
                                             const std::string& out_dir, const HistoryHook& hook) {
  std::string program = "bench-history";
  if (!bench_sweep.empty()) {
    fs::path beside = fs::path(bench_sweep).parent_path() / "bench-history";
    if (!fs::path(bench_sweep).parent_path().empty() && ::access(beside.c_str(), X_OK) == 0) {
      program = beside.string();
    }
  }
  std::vector<std::string> argv = {program, "ingest", fs::absolute(out_dir).string(), "--store",
                                   hook.store};
  for (const auto& [name, value] : hook.labels) {
    argv.insert(argv.end(), {"--label", name + "=" + value});
  }
  return argv;
}

void ingest_after_run(const std::string& out_dir, const HistoryHook& hook, std::ostream& err) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const std::vector<std::string> argv =
      history_ingest_argv(ec ? std::string() : self.string(), out_dir, hook);
  // The command as people may see it: a password in the store's URL as ***.
  std::vector<std::string> shown_argv = argv;
  for (std::string& a : shown_argv) {
    if (a == hook.store) a = redacted_url(a);
  }
  const std::string shown = shell_join(shown_argv);
  // Its messages go through files (run_process's contract), then to our stderr.
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/bench-history-XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) {
    err << "bench-sweep: warning: --history: cannot make a temporary file; record the results "
           "later with `"
        << shown << "`\n";
    return;
  }
  ::close(fd);
  ProcessResult r = run_process(argv, {}, "/dev/null", pattern);
  std::string said = read_file_if_exists(pattern).value_or("");
  ::unlink(pattern.c_str());
  err << said;
  if (r.exit_code != 0) {
    err << "bench-sweep: warning: --history: bench-history ended with " << r.describe()
        << "; the results are on disk: record them later with `" << shown << "`\n";
  }
}

std::string history_job_script(const std::vector<std::string>& argv,
                               const std::vector<std::string>& job_ids,
                               const std::vector<std::string>& options, const std::string& log_dir,
                               const std::string& header_comment) {
  std::string s = "#!/bin/bash\n" + header_comment;
  for (const std::string& o : options) s += "#SBATCH " + o + "\n";
  s += "#SBATCH --ntasks=1\n#SBATCH --time=30:00\n";
  s += "#SBATCH --dependency=afterany:" + join(job_ids, ":") + "\n";
  std::string literal_dir;
  for (char c : log_dir) literal_dir += c == '%' ? std::string("%%") : std::string(1, c);
  s += "#SBATCH --output=" + (fs::path(literal_dir) / "%j-history.out").string() + "\n";
  s += "set -eu\n";
  s += "exec " + shell_join(argv) + "\n";
  return s;
}

}  // namespace sweepbench
