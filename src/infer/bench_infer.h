// bench-infer: offline generation on every rank of an MPI job, each rank an independent replica;
// what each rank measured goes to DIR/rank-NNNNN.h5 (docs/infer.md, docs/results-format.md).
//
// The binary's main() only forwards here. Exit codes as bench-train's: text/exit_codes.h
// (docs/exit-codes.md).
#pragma once

#include "text/exit_codes.h"  // IWYU pragma: export

namespace sweepbench {

// argc/argv go to MPI_Init as well.
int bench_infer_main(int argc, char** argv);

}  // namespace sweepbench
