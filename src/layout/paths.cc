#include "layout/paths.h"

#include <cstdio>

namespace sweepbench {

std::string rank_file_name(std::int64_t rank) {
  char name[32];
  std::snprintf(name, sizeof(name), "rank-%05lld.h5", static_cast<long long>(rank));
  return name;
}

std::string command_log_path(std::int64_t rank, const std::string& stream) {
  char name[64];
  std::snprintf(name, sizeof(name), "rank-%05lld.", static_cast<long long>(rank));
  return std::string(kLogsDir) + "/" + name + stream + ".txt";
}

std::string profile_trace_path(std::int64_t rank) {
  char name[64];
  std::snprintf(name, sizeof(name), "profile/rank-%05lld.pt.trace.json",
                static_cast<long long>(rank));
  return name;
}

bool is_rank_file_name(const std::string& name) {
  const std::string prefix = "rank-", suffix = ".h5";
  if (name.size() <= prefix.size() + suffix.size()) return false;
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  for (size_t i = prefix.size(); i < name.size() - suffix.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

bool is_results_file_name(const std::string& name) {
  for (const char* fixed :
       {kManifestFile, kLockFile, kConfigFile, kStatusFile, kClaimFile, kSummaryFile}) {
    if (name == fixed) return true;
  }
  return is_rank_file_name(name);
}

bool is_reserved_name(const std::string& name) {
  for (const char* dir : {kSubmitDir, kAttemptsDir, kLogsDir}) {
    if (name == dir) return true;
  }
  return is_results_file_name(name);
}

std::string point_dir_name_problem(const std::string& tag) {
  if (tag.empty()) return "it is empty";
  if (tag == "." || tag == "..") return "it is '" + tag + "', not a directory of its own";
  if (tag.find('/') != std::string::npos) return "it holds '/': a path, not one directory's name";
  if (tag.find('\0') != std::string::npos) return "it holds a NUL character";
  return "";
}

}  // namespace sweepbench
