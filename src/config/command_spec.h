// The command section of a resolved config, read once and checked (docs/commands.md): what
// bench-command runs, the figures of merit it reads from the program's output, and what makes a
// run a success, a failure or out of memory.
//
// Checked when a sweep is planned (config.cc calls command_spec_of for benchmark: command), so a
// bad regex or an unknown placeholder fails before anything runs. Evaluating the metrics against
// a run's output is bench-command's (src/command/); this file holds no regex engine state.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/metric_spec.h"
#include "config/value.h"
#include "text/error.h"

namespace sweepbench {

struct CommandSpec {
  std::vector<std::string> argv;           // may hold {placeholders}
  std::map<std::string, std::string> env;  // values may hold {placeholders}
  std::optional<std::string> workdir;      // null: the point directory
  std::string parser = "none";
  std::vector<MetricSpec> metrics;                     // the parser's, then command.metrics
  std::vector<std::string> match, fail, oom_patterns;  // oom_patterns: the defaults when empty
  std::optional<std::int64_t> exit_code = 0;           // null: any
};

// The values of the placeholders only bench-command knows (command_runtime_placeholders()):
// bench-command's own on each rank; bench-sweep run --dry-run shows rank 0's.
struct RuntimeValues {
  std::string out;
  std::int64_t rank = 0, local_rank = 0, world_size = 1;
  // A serve point's server (server_command_of): where it listens.
  std::int64_t port = 0;
  std::string host;
};

// `text` with every placeholder replaced by its value (config keys from `resolved`), each value
// passed through `escape` when given (glob_escape for a metric's file pattern).
std::string expand_command_text(
    const std::string& text, const Value& resolved, const RuntimeValues& values,
    const std::string& key, const std::function<std::string(const std::string&)>& escape = nullptr);

// `text` with glob(3)'s special characters (* ? [ \) escaped, so that it matches only itself.
std::string glob_escape(const std::string& text);

// The program's argv, environment additions and working directory for this rank (command.workdir,
// relative to the current directory; null: the current directory).
struct ExpandedCommand {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string workdir;
};
ExpandedCommand expand_command(const CommandSpec& spec, const Value& resolved,
                               const RuntimeValues& values);

// Reads and checks the command section (and launch.setup's placeholders). Throws Error(kInput)
// naming file:line and the key: an empty argv, a bad metric record or regex, two metrics of one
// name, an unknown placeholder (all unknown names, sorted), a required metric nobody defines.
CommandSpec command_spec_of(const Value& resolved);

// A serve point's server as a command (docs/serving.md): serve.argv, serve.env and serve.workdir,
// whose placeholders may also be {port} and {host}; checked as command_spec_of checks the command
// section (an empty argv of a serve point, unknown placeholders). Empty for other benchmarks.
CommandSpec server_command_of(const Value& resolved);

// The metrics command.parser adds (empty for none).
std::vector<MetricSpec> parser_metrics(const std::string& parser);

// The usual out-of-memory messages of PyTorch, CUDA, ROCm and C++ (command.oom_patterns' default).
const std::vector<std::string>& default_oom_patterns();

// Placeholders only bench-command knows, at run time, besides config keys: out (the point
// directory), rank, local_rank, world_size.
const std::vector<std::string>& command_runtime_placeholders();

}  // namespace sweepbench
