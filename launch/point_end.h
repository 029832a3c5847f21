// How a point's program ended, in words: what its exit code means, why it failed (its
// summary.json's reason, srun's first failed task, the last line of its stderr), and what a run
// that exited 0 failed to leave. The runner records these in status.json (docs/running.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/value.h"
#include "launch/workload.h"
#include "os/process.h"

namespace sweepbench {

// How a point's program ended, with what its exit code means to its workload: "exit code 23
// (cancelled)", "killed by SIGKILL".
std::string exit_meaning(const Workload& workload, const ProcessResult& r);

// The end of a point's stderr log: its last MiB (srun's lines come at the end, and a program may
// print gigabytes first); empty when it cannot be read.
std::string stderr_tail(const std::string& point_dir);

// A point's summary.json, read without following links; nothing where it is missing or
// cannot be read (its reasons, references and repeats then go without it).
std::optional<Value> read_summary(const std::string& point_dir);

// Why a point ended as it did: its summary.json reason, else its program's last stderr line.
// When srun says another task than rank 0 failed first, that comes first: with
// --kill-on-bad-exit, rank 0 (which writes the summary) was ended by srun and knows only that.
std::string reason_of(const std::string& point_dir, const std::string& program,
                      const ProcessResult& r);

// Appends `text` to a log; a log that cannot be written costs only the line.
void append_to_log(const std::string& path, const std::string& text);

// The first of the files a finished run must leave that is not in the point directory.
std::optional<std::string> missing_result(const std::string& point_dir,
                                          const std::vector<std::string>& files);

}  // namespace sweepbench
