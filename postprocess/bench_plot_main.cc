// bench-plot: see postprocess/plot.h.
#include <iostream>
#include <string>
#include <vector>

#include "core/fs.h"
#include "postprocess/plot.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return sweepbench::close_standard_output("bench-plot",
                                           sweepbench::bench_plot_main(args, std::cout, std::cerr));
}
