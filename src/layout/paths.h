// The names of the files in a sweep's directory (docs/results-format.md, docs/running.md):
//
//   DIR/manifest.json              the plan: every point's tag, index, scenario, repeat, state
//   DIR/.lock                      serializes read-modify-write of the manifest
//   DIR/submit/                    bench-sweep submit's batch scripts and their logs
//   DIR/<tag>/config.yaml          the point's resolved config
//   DIR/<tag>/status.json          how the point ended (the runner's record)
//   DIR/<tag>/.claim               the runner that is running it
//   DIR/<tag>/rank-NNNNN.h5        what each rank measured
//   DIR/<tag>/summary.json         rank 0's summary of the run
//   DIR/<tag>/logs/, attempts/N/   the program's output; earlier attempts, moved aside
//   DIR/<tag>/logs/rank-NNNNN.stdout.txt, .stderr.txt   bench-command: its program's output
//   DIR/<tag>/profile/rank-NNNNN.pt.trace.json          bench-train: profiled steps (Chrome trace)
//
// Spelled here once so that the runner, bench-train and bench-extract agree, and so that no tool
// writes its own output under one of these names.
#pragma once

#include <cstdint>
#include <string>

namespace sweepbench {

inline constexpr const char* kManifestFile = "manifest.json";
inline constexpr const char* kLockFile = ".lock";
inline constexpr const char* kConfigFile = "config.yaml";
inline constexpr const char* kStatusFile = "status.json";
inline constexpr const char* kClaimFile = ".claim";
inline constexpr const char* kSummaryFile = "summary.json";
inline constexpr const char* kLogsDir = "logs";
inline constexpr const char* kAttemptsDir = "attempts";
inline constexpr const char* kSubmitDir = "submit";
// bench-sweep run --warmup's runs, left out of the results (hidden: no table reads them).
inline constexpr const char* kWarmupDir = ".warmup";

// "rank-00003.h5" for rank 3.
std::string rank_file_name(std::int64_t rank);
// "logs/rank-00003.stdout.txt" (stream "stdout" or "stderr"): the output of bench-command's
// program on rank 3, relative to the point directory.
std::string command_log_path(std::int64_t rank, const std::string& stream);
// "profile/rank-00003.pt.trace.json": rank 3's profiler trace (Chrome trace format), relative to
// the point directory (metrics.profile_steps).
std::string profile_trace_path(std::int64_t rank);
// True for "rank-" + digits + ".h5".
bool is_rank_file_name(const std::string& name);
// True for any of the file names above: no tool writes its own output under such a name.
bool is_results_file_name(const std::string& name);
// True for a name sweepbench itself gives to an entry of DIR or of a point directory (the files
// above, submit/, attempts/, logs/): bench-extract's walk passes over those directories, and the
// files are the tree's own, so the tagger gives no point such a name.
bool is_reserved_name(const std::string& name);
// Why `tag` cannot name a directory inside DIR without leaving it: "" when it can. A results tree
// is untrusted input (a manifest may have been edited): a tag must be one plain path component,
// not "", "." or "..", without '/' or NUL.
std::string point_dir_name_problem(const std::string& tag);

}  // namespace sweepbench
