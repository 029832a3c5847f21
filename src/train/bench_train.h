// bench-train: run one benchmark point on every rank of an MPI job and write what each rank
// measured to DIR/rank-NNNNN.h5 (docs/train.md, docs/results-format.md).
//
// The binary's main() only forwards here. Exit codes: text/exit_codes.h (docs/exit-codes.md).
#pragma once

#include "text/exit_codes.h"  // IWYU pragma: export

namespace sweepbench {

// argc/argv go to MPI_Init as well.
int bench_train_main(int argc, char** argv);

}  // namespace sweepbench
