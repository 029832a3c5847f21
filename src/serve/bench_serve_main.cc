// bench-serve: see src/serve/bench_serve.h.
#include "os/fs.h"
#include "serve/bench_serve.h"

int main(int argc, char** argv) {
  sweepbench::survive_closed_output();
  return sweepbench::bench_serve_main(argc, argv);
}
