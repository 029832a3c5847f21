// bench-infer: see src/infer/bench_infer.h.
#include "core/fs.h"
#include "infer/bench_infer.h"

int main(int argc, char** argv) {
  return sweepbench::close_standard_output("bench-infer", sweepbench::bench_infer_main(argc, argv));
}
