// bench-extract: see postprocess/extract.h.
#include <iostream>
#include <string>
#include <vector>

#include "core/fs.h"
#include "postprocess/extract.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return sweepbench::close_standard_output(
      "bench-extract", sweepbench::bench_extract_main(args, std::cout, std::cerr));
}
