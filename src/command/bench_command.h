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

namespace sweepbench {

int bench_command_main(int argc, char** argv);

}  // namespace sweepbench
