// Every sweepbench binary's exit codes, in one place (docs/exit-codes.md). The runner reads
// bench-train's through the train workload (launch/workload.cc), not a copy of its own.
#pragma once

namespace sweepbench {

constexpr int kExitOk = 0;
constexpr int kExitNotAllOk = 1;      // bench-sweep run: a point did not end ok; extract --strict
constexpr int kExitUsage = 2;         // bad input or usage; nothing written
constexpr int kExitConflict = 3;      // the output holds something that conflicts; nothing changed
constexpr int kExitIo = 4;            // the file system (or standard output) refused
constexpr int kExitStopped = 6;       // bench-sweep run: a signal stopped the sweep
constexpr int kExitRegression = 8;    // bench-compare --fail-on: a metric got significantly worse
constexpr int kExitInconclusive = 9;  // bench-compare --fail-on: a metric could not be judged
// bench-sweep run and status: every point ok, but one missed a performance reference.
constexpr int kExitReferenceMissed = 10;
// bench-train: the run ended early, and its results are written.
constexpr int kExitTrainOom = 20;        // a rank ran out of memory
constexpr int kExitTrainTimeout = 21;    // SIGTERM or SIGUSR1 (the time limit)
constexpr int kExitTrainFailed = 22;     // another failure during the run
constexpr int kExitTrainCancelled = 23;  // SIGINT or SIGUSR2 (bench-sweep's "stop")
constexpr int kExitInternal = 70;        // a bug

}  // namespace sweepbench
