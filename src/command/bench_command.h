// bench-command: runs one point's command (the `command` workload, docs/commands.md) on one rank
// and writes that rank's results.
//
// `bench-command --config DIR/config.yaml --out DIR` substitutes the point's values into
// command.argv, command.env and command.workdir, runs the program (child_process.h) with its
// output in DIR/logs/rank-NNNNN.{stdout,stderr}.txt, reads the figures of merit, judges the run
// (metric_eval.h) and writes DIR/rank-NNNNN.h5 (the group /command, docs/results-format.md); rank
// 0 also writes DIR/summary.json and prints the metrics. Its exit codes are bench-train's
// (docs/exit-codes.md), so the runner judges both alike. No MPI: the rank and world size are the
// launcher's variables (OMPI_COMM_WORLD_*, PMIX_*, SLURM_*), one rank without a launcher.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/command_spec.h"
#include "core/value.h"

namespace sweepbench {

// The values of the placeholders only bench-command knows (command_runtime_placeholders()).
struct RuntimeValues {
  std::string out;
  std::int64_t rank = 0, local_rank = 0, world_size = 1;
};

// `text` with every placeholder replaced by its value (config keys from `resolved`).
std::string expand_command_text(const std::string& text, const Value& resolved,
                                const RuntimeValues& values, const std::string& key);

// The program's argv, environment additions and working directory for this rank (command.workdir,
// relative to the current directory; null: the current directory).
struct ExpandedCommand {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string workdir;
};
ExpandedCommand expand_command(const CommandSpec& spec, const Value& resolved,
                               const RuntimeValues& values);

int bench_command_main(int argc, char** argv);

}  // namespace sweepbench
