// bench-infer: see src/infer/bench_infer.h.
#include "infer/bench_infer.h"
#include "os/fs.h"

int main(int argc, char** argv) {
  sweepbench::survive_closed_output();
  return sweepbench::close_standard_output("bench-infer", sweepbench::bench_infer_main(argc, argv));
}
