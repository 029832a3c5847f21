#include "run/program_args.h"

#include <cstdlib>
#include <limits>

#include "text/error.h"

namespace sweepbench {

namespace po = boost::program_options;

Args parse_args(int argc, char** argv, po::options_description& desc) {
  Args a;
  desc.add_options()("help,h", "Show this help")("version", "Print the version")(
      "config,c", po::value<std::string>(&a.config), "The point config (YAML)")(
      "out,o", po::value<std::string>(&a.out), "Directory for the results")(
      "set", po::value<std::vector<std::string>>(&a.sets)->composing(),
      "Override KEY=VALUE (repeatable; VALUE is YAML)")(
      "env-keep", po::value<std::string>(),
      "Restart at once keeping only these environment variables (comma-separated globs); "
      "bench-sweep's container layer passes it")(
      "max-memory-mb", po::value<std::int64_t>(&a.max_memory_mb)->default_value(0),
      "CPU only: let libtorch hold at most N MB at a time; past it an allocation fails as out "
      "of memory, as on a full GPU (for testing; 0: no limit)");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, desc), vm);
  po::notify(vm);
  a.help = vm.count("help") > 0;
  a.version = vm.count("version") > 0;
  // In bytes it must fit an int64 (N << 20).
  constexpr std::int64_t kMaxBudgetMb = std::numeric_limits<std::int64_t>::max() >> 20;
  if (a.max_memory_mb < 0 || a.max_memory_mb > kMaxBudgetMb) {
    throw Error::input(Mark::in("--max-memory-mb " + std::to_string(a.max_memory_mb)), "",
                       "must be from 0 (no limit) to " + std::to_string(kMaxBudgetMb),
                       "give a number of MB, or leave it out");
  }
  // The same budget from the environment, so a sweep can set it per point (launch.env).
  if (const char* env = std::getenv("SWEEPBENCH_MAX_MEMORY_MB");
      env && vm["max-memory-mb"].defaulted()) {
    char* end = nullptr;
    long long mb = std::strtoll(env, &end, 10);
    if (end == env || *end != '\0' || mb < 0 || mb > kMaxBudgetMb) {
      throw Error::input(Mark::in("SWEEPBENCH_MAX_MEMORY_MB"), "",
                         std::string("is '") + env + "', not a number of MB",
                         "unset it, or give N >= 0");
    }
    a.max_memory_mb = mb;
  }
  return a;
}

}  // namespace sweepbench
