// bench-train: see src/train/bench_train.h.
#include "os/fs.h"
#include "train/bench_train.h"

int main(int argc, char** argv) {
  sweepbench::survive_closed_output();
  return sweepbench::close_standard_output("bench-train", sweepbench::bench_train_main(argc, argv));
}
