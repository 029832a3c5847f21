// bench-history: the history store's command line (docs/history.md).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace sweepbench {

int bench_history_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace sweepbench
