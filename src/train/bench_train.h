// bench-train: run one benchmark point on every rank of an MPI job and write what each rank
// measured to DIR/rank-NNNNN.h5 (docs/train.md, docs/results-format.md).
//
// The binary's main() only forwards here. Exit codes (docs/exit-codes.md):
#pragma once

namespace sweepbench {

constexpr int kTrainExitOk = 0;
constexpr int kTrainExitUsage = 2;       // bad arguments or config; nothing written
constexpr int kTrainExitConflict = 3;    // results already in --out; nothing written
constexpr int kTrainExitIo = 4;          // could not write the results
constexpr int kTrainExitOom = 20;        // a rank ran out of memory; results written
constexpr int kTrainExitTimeout = 21;    // SIGTERM or SIGUSR1 (the time limit); results written
constexpr int kTrainExitFailed = 22;     // another failure during the run; results written
constexpr int kTrainExitCancelled = 23;  // SIGINT; results written
constexpr int kTrainExitInternal = 70;

// argc/argv go to MPI_Init as well.
int bench_train_main(int argc, char** argv);

}  // namespace sweepbench
