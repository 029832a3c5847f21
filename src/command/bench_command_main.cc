// bench-command: see src/command/bench_command.h.
#include "command/bench_command.h"

int main(int argc, char** argv) { return sweepbench::bench_command_main(argc, argv); }
