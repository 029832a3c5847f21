// bench-command: see src/command/bench_command.h.
#include "command/bench_command.h"
#include "os/fs.h"

int main(int argc, char** argv) {
  sweepbench::survive_closed_output();
  return sweepbench::bench_command_main(argc, argv);
}
