// cpu_kernels_loops.h for CPUs with AVX-512 F and DQ (compiled with -mavx512f -mavx512dq -mavx2
// -mfma; GCC then vectorises with 512-bit registers).
#define SWEEPBENCH_KERNELS_ISA avx512
#include "model/cpu_kernels_loops.h"
