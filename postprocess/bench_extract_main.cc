// bench-extract: see postprocess/extract.h.
#include <iostream>
#include <string>
#include <vector>

#include "os/fs.h"
#include "postprocess/extract.h"
#include "text/terminal.h"

int main(int argc, char** argv) {
  sweepbench::survive_closed_output();
  std::vector<std::string> args(argv + 1, argv + argc);
  // Messages are for people: what they quote of the results reaches the terminal escaped.
  sweepbench::TerminalSafeStream err(std::cerr);
  return sweepbench::close_standard_output("bench-extract",
                                           sweepbench::bench_extract_main(args, std::cout, err));
}
