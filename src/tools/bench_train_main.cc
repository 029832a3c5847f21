// bench-train: see src/train/bench_train.h.
#include "train/bench_train.h"

int main(int argc, char** argv) { return sweepbench::bench_train_main(argc, argv); }
