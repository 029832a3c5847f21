// How a point's program ended, in words (point_end.h).
#include "launch/point_end.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <sstream>

#include "config/yaml_io.h"
#include "launch/slurm.h"
#include "layout/paths.h"
#include "os/fs.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {

namespace fs = std::filesystem;

std::string exit_meaning(const Workload& workload, const ProcessResult& r) {
  std::string text = r.describe();
  if (r.term_signal == 0 && r.exit_code != 0) {
    PointStatus s = workload.status_of_exit(r.exit_code);
    if (s != PointStatus::kFailed) text += " (" + to_string(s) + ")";
  }
  return text;
}

std::string stderr_tail(const std::string& point_dir) {
  try {
    if (auto text = read_file_tail((fs::path(point_dir) / kLogsDir / "stderr.txt").string(),
                                   size_t{1} << 20)) {
      return std::move(*text);
    }
  } catch (const Error&) {
    // An unreadable log says nothing.
  }
  return "";
}

std::optional<Value> read_summary(const std::string& point_dir) {
  try {
    const std::string path = (fs::path(point_dir) / kSummaryFile).string();
    if (auto text = read_file_if_exists(path, kMaxSmallFile, Links::kRefuse)) {
      return parse_yaml(*text, path);
    }
  } catch (const Error&) {
    // Not JSON (a half-written or hostile file): as good as missing.
  }
  return std::nullopt;
}

std::string reason_of(const std::string& point_dir, const std::string& program,
                      const ProcessResult& r) {
  std::string err = stderr_tail(point_dir);
  std::string first;
  if (std::optional<SrunTaskFailure> f = first_srun_task_failure(err); f && !f->includes_rank0) {
    first =
        "srun: " + f->tasks + " on " + f->host + " ended first: " + first_line(f->what, 200) + "; ";
  }
  // A summary that cannot be read says nothing; the log is read then.
  if (std::optional<Value> summary = read_summary(point_dir)) {
    if (const Value* why = summary->find("reason");
        why != nullptr && why->is_string() && !why->as_string().empty()) {
      return first + (first.empty() ? "" : "rank 0: ") + first_line(why->as_string(), 300);
    }
  }
  const std::string last = last_said(err);
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    // launch.setup ended the shell before the program started (with_setup_lines): the program
    // never ran, so the reason is that line's, not the program's.
    static const std::string kSetup = "sweepbench: launch.setup line ";
    if (line.rfind(kSetup, 0) == 0) return first_line(line.substr(12), 300);
  }
  std::string what = program + ": " + r.describe();
  if (r.term_signal == SIGKILL) what += " (the kernel's out-of-memory killer, or a user)";
  return first + (last.empty() ? what : what + ": " + first_line(last, 300));
}

void append_to_log(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  write_all(fd, text);
  ::close(fd);
}

std::optional<std::string> missing_result(const std::string& point_dir,
                                          const std::vector<std::string>& files) {
  for (const std::string& name : files) {
    std::error_code ec;
    if (!fs::exists(fs::path(point_dir) / name, ec)) return name;
  }
  return std::nullopt;
}

}  // namespace sweepbench
