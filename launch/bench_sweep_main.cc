// bench-sweep: see launch/bench_sweep_cli.h.
#include <iostream>
#include <string>
#include <vector>

#include "launch/bench_sweep_cli.h"
#include "os/fs.h"

int main(int argc, char** argv) {
  sweepbench::survive_closed_output();
  std::vector<std::string> args(argv + 1, argv + argc);
  return sweepbench::close_standard_output(
      "bench-sweep", sweepbench::bench_sweep_main(args, std::cout, std::cerr));
}
