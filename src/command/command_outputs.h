// Where a finished command's text is (its logs, the point directory its metric files are under)
// and the bounds on reading it: what metric_eval.h's readers and their shared parts
// (metric_reading.h) both take, on its own so that neither header includes the other.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace sweepbench {

// A line longer than this is matched on its first kMaxMatchedLine bytes; a metric keeps at most
// kMaxKeptValues of its values (its reduction sees them all).
constexpr size_t kMaxMatchedLine = size_t{1} << 20;
constexpr size_t kMaxKeptValues = 10000;

// Where the run's text is: its logs, and the directory that relative metric files are under.
struct CommandOutputs {
  std::string stdout_path, stderr_path;
  std::string point_dir;
  // A metric's file with its placeholders replaced (bench-command's values for this rank).
  std::function<std::string(const std::string&)> expand = [](const std::string& s) { return s; };
  // The same for a glob pattern: each placeholder's value escaped (glob_escape), so that only
  // what the user wrote is a pattern.
  std::function<std::string(const std::string&)> expand_pattern = [](const std::string& s) {
    return s;
  };
};

}  // namespace sweepbench
