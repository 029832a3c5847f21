// bench-extract: see src/extract/extract.h.
#include <iostream>
#include <string>
#include <vector>

#include "extract/extract.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return sweepbench::bench_extract_main(args, std::cout, std::cerr);
}
