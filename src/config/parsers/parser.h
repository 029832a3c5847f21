// The programs whose output sweepbench knows (command.parser, docs/commands.md): each parser is a
// file of this folder defining parser_<file name>(), which src/CMakeLists.txt finds and lists
// (all_parsers.cc, generated), so that adding one touches its file, its test and the docs only.
//
// A parser is the metrics it adds to command.metrics (a regex on the program's output or a JSON
// pointer into a file it writes, as a user would write them) and what to tell the user when none
// of them was found. The schema lists the parsers as command.parser's values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/metric_spec.h"

namespace sweepbench {

struct Parser {
  std::string name;     // command.parser's value: lower-case, hyphens ("llama-bench")
  std::string program;  // what it reads, for command.parser's doc ("" = the name says it)
  std::vector<MetricSpec> (*metrics)() = nullptr;
  // What the program must be told when none of the metrics was found ("" = nothing to add):
  // "run it with -o jsonl".
  std::string ask;
};

// Every parser, by name.
const std::vector<Parser>& parsers();
// The parser of that name, or nullptr.
const Parser* find_parser(std::string_view name);

// A parser's metric read by a regex from the program's output (`source`), its first capture
// group the number.
MetricSpec parser_regex_metric(const std::string& parser, const std::string& name,
                               const std::string& unit, const std::string& regex,
                               MetricReduce reduce, bool required,
                               MetricSource source = MetricSource::kOutput);
// A parser's metric read by JSON pointer from `file` (a path or glob in the point directory, or
// stdout).
MetricSpec parser_json_metric(const std::string& parser, const std::string& file,
                              const std::string& name, const std::string& unit,
                              const std::string& pointer, bool required,
                              MetricReduce reduce = MetricReduce::kLast);

// The generated list (all_parsers.cc): each file's parser_<name>(), in file order.
std::vector<Parser> all_parsers();

}  // namespace sweepbench
