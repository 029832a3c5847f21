// bench-history: see postprocess/history_cli.h.
#include <iostream>
#include <string>
#include <vector>

#include "os/fs.h"
#include "postprocess/history_cli.h"
#include "text/terminal.h"

int main(int argc, char** argv) {
  sweepbench::survive_closed_output();
  std::vector<std::string> args(argv + 1, argv + argc);
  // What the store and the results trees say reaches the terminal escaped.
  sweepbench::TerminalSafeStream err(std::cerr);
  return sweepbench::close_standard_output("bench-history",
                                           sweepbench::bench_history_main(args, std::cout, err));
}
