// The command line of bench-train and bench-infer (each gives its own usage text).
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace sweepbench {

struct Args {
  std::string config, out;
  std::vector<std::string> sets;
  std::int64_t max_memory_mb = 0;
  bool help = false, version = false;
};

// Fills `desc` with the options and parses them; Error(kInput) for a bad --max-memory-mb or
// SWEEPBENCH_MAX_MEMORY_MB.
Args parse_args(int argc, char** argv, boost::program_options::options_description& desc);

}  // namespace sweepbench
