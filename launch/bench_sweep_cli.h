// `bench-sweep`: the command-line front end of the sweep engine.
//
// The binary's main() only forwards to bench_sweep_main, so tests drive every command, its
// output and its exit code in-process. Exit codes (docs/exit-codes.md): 0 ok, 2 bad input or
// usage, 3 the output directory holds something that conflicts, 4 a file-system error,
// 1 (run) a point did not end ok, 6 (run) a signal stopped it, 70 an internal error.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "text/exit_codes.h"  // IWYU pragma: export

namespace sweepbench {

int bench_sweep_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `bench-sweep keys --format md`: the reference table docs/config.md embeds.
std::string schema_markdown();

}  // namespace sweepbench
