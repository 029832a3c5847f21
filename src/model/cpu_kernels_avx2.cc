// cpu_kernels_loops.h for CPUs with AVX2 and FMA (compiled with -mavx2 -mfma).
#define SWEEPBENCH_KERNELS_ISA avx2
#include "model/cpu_kernels_loops.h"
