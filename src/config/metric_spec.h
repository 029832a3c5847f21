// One figure of merit of a program's output (docs/commands.md, "Figures of merit"): where it is
// read (a stream, a file, a JSON pointer), how its values reduce to one, and what it is. Declared
// on its own so that the parsers of known programs (parsers/parser.h) and the command section
// (command_spec.h) both build on it without including each other.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "config/value.h"
#include "text/error.h"

namespace sweepbench {

enum class MetricSource { kStdout, kStderr, kOutput, kFile, kJson };
enum class MetricReduce { kLast, kFirst, kMean, kMin, kMax, kSum, kCount, kAll };
std::string to_string(MetricSource s);
std::string to_string(MetricReduce r);

// One figure of merit.
struct MetricSpec {
  std::string name;  // its column in bench-extract's table: [A-Za-z0-9_]
  std::string unit;
  MetricSource source = MetricSource::kStdout;
  // kOutput: stdout, then stderr. kFile, kJson: a path relative to the point directory
  // ({placeholders} and glob patterns allowed: every file that matches is read); kJson also
  // "stdout", "stderr" or "output" (JSON lines in the program's output).
  std::string file;
  std::string regex;    // kStdout, kStderr, kFile: matched against each line (RE2)
  int group = 1;        // the capture group holding the number; 0 = the whole match
  std::string pointer;  // kJson: RFC 6901, with '*' for every item of a list or map
  // kJson: the object holding each value must have these members equal to these scalars
  // (llama-bench's records: {n_gen: 0} for prompt processing).
  std::vector<std::pair<std::string, Value>> where;
  MetricReduce reduce = MetricReduce::kLast;
  // The first `skip` values read are left out before the reduction: a program's own warm-up
  // (Megatron-LM's first logged iterations hold its compilation). A parser's, for now.
  size_t skip = 0;
  bool required = true;
  // type: text. The value is kept as the words found (a capture group, a JSON string or the
  // text of a JSON number), at most kMaxMetricText bytes: a column of text in the table, which
  // figures leave out (llama-bench's backends, model type and CPU). Its reduce is last or first.
  bool text = false;
  std::string parser;  // the command.parser it comes from; "" = command.metrics
  // Its text source may be a log that rich wrapped (fairseq2's, on a pipe): lines that continue
  // the one before (indented 20 spaces or more, no log level first) are joined to it first.
  bool rich_wrapped = false;
  // The printed number is int() of the figure (fairseq2's integers and durations: "47s" for
  // 47.9 s, "<1s" below one): read as the middle of its interval, N + 0.5 ("<1" as 0.5).
  bool integer_part = false;
  // A parser's better sources of the same figure, tried in order before this one: the first
  // that gives a value is read instead (fairseq2's exact JSON lines over its rounded log).
  std::vector<MetricSpec> preferred;
  Mark mark;
};

// The longest text a `type: text` metric keeps; longer ones are cut here, and the metric says so.
constexpr size_t kMaxMetricText = 256;

}  // namespace sweepbench
