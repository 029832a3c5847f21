// Reading a finished command's figures of merit and judging its run (docs/commands.md).
//
// Everything here works on files already written (the program's stdout and stderr logs, the
// files it left) and on the facts of its end, so tests give it hand-made logs. Regular
// expressions (RE2, text/user_regex.h) are matched line by line; a line longer than
// kMaxMatchedLine bytes is matched on its first kMaxMatchedLine bytes, and a metric not found says
// so. Every read is bounded (docs/security.md): only regular files are read, one line is held at a
// time, a JSON file is streamed once for all the metrics that read it, keeping only what their
// pointers reach (command/json_reader.h), and a metric keeps its reduction as values arrive with
// at most kMaxKeptValues of the values themselves.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "command/command_outputs.h"
#include "config/command_spec.h"
#include "metrics/rank_result.h"

namespace sweepbench {

// Reads every metric of `specs`: each found value in order, reduced as its spec says.
std::vector<CommandMetric> read_metrics(const std::vector<MetricSpec>& specs,
                                        const CommandOutputs& outputs);

// How the program ended, as bench-command saw it.
struct CommandEnd {
  bool started = true;
  std::string start_error;  // why it could not start
  int exit_code = -1;       // when it exited
  int term_signal = 0;      // when a signal ended it
  int stop_signal = 0;      // a stop signal bench-command received and passed on (or 0)
  // The stop came after the program ended, while its output was read for the metrics: they may
  // be incomplete (reading stops a second after a stop signal).
  bool stopped_while_reading = false;
};

// llama-bench's records (-o jsonl or -o json on stdout) as one metric per test, named as its
// table names them: pp512, tg128, pp512+tg128, tg128@d64 (tokens/s, the mean avg_ts of the
// test's records), in the order first seen. Added to a point's metrics by the llama-bench parser.
std::vector<CommandMetric> llama_bench_tests(const CommandOutputs& o);

// True when a stop signal cut the reading of the program's output or a metric's file (a second
// after it came): the metrics read may be incomplete.
bool output_read_in_part();

struct CommandVerdict {
  std::string status;  // ok, failed, oom, timeout, cancelled
  std::string reason;  // empty when ok
};

// The run's status: a stop signal gives timeout (SIGUSR1, SIGTERM) or cancelled; otherwise every
// criterion (exit code, fail patterns, success patterns, required metrics, at least one metric
// when any is defined) must hold for ok; a run that fails one is oom when an out-of-memory pattern
// matches a line of its output, else failed, the reason naming the first criterion it failed.
CommandVerdict judge_command(const CommandSpec& spec, const CommandEnd& end,
                             const std::vector<CommandMetric>& metrics,
                             const CommandOutputs& outputs);

}  // namespace sweepbench
