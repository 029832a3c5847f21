// cpu_kernels_loops.h for the build's baseline instruction set (SSE2 on x86-64).
#define SWEEPBENCH_KERNELS_ISA base
#include "model/cpu_kernels_loops.h"
