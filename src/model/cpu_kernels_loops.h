// The loop of cpu_kernels.h, compiled three times: cpu_kernels_avx512.cc (AVX-512),
// cpu_kernels_avx2.cc (AVX2 + FMA) and cpu_kernels_base.cc (the build's baseline ISA), each into
// a namespace of its own named by SWEEPBENCH_KERNELS_ISA, so the builds of every function (and
// of the inline helpers) never meet; cpu_kernels.cc picks one at run time. Those files are
// compiled with -fopenmp-simd (vector reductions, no OpenMP runtime), -fno-math-errno and
// -fno-trapping-math (the clamps below vectorise only without errno and trap semantics, which
// nothing here uses). Include only from those three files.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "model/cpu_kernels.h"

#ifndef SWEEPBENCH_KERNELS_ISA
#error "define SWEEPBENCH_KERNELS_ISA (avx512, avx2 or base) before including cpu_kernels_loops.h"
#endif

namespace sweepbench::cpu::SWEEPBENCH_KERNELS_ISA {
namespace {

// e^x for x in [-87.3, 88.3], to about 2 ulp: Cody and Waite's reduction x = n ln2 + r with
// |r| <= ln2 / 2, Cephes' degree-7 polynomial for e^r, and 2^n built in the exponent bits. No
// branch, no call, so loops over it vectorise. n is rounded by adding and taking away 1.5 * 2^23
// (the sum's last bit is the unit): one add each way, where a conversion after a sign test made
// GCC blend several versions of the loop body.
inline float exp_in_range(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float fn = (x * kLog2e + kRound) - kRound;
  const std::int32_t n = static_cast<std::int32_t>(fn);
  const float r = (x - fn * kLn2Hi) - fn * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e_r = p * r * r + r + 1.0f;
  const std::int32_t bits = (n + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return e_r * two_n;
}

// e^x for x in float's range: clamped to [-87.3, 88.3], so below the result is float's
// smallest normal (about 1.2e-38) instead of a denormal or zero, which no sum of exponentials
// here can tell apart.
inline float exp_approx(float x) {
  x = x < -87.3f ? -87.3f : x;
  return exp_in_range(x > 88.3f ? 88.3f : x);
}

}  // namespace

double cross_entropy_rows(const float* logits, std::int64_t vocab, const std::int64_t* targets,
                          std::int64_t begin, std::int64_t end, float* grad, float scale) {
  double total = 0;
  for (std::int64_t i = begin; i < end; ++i) {
    const float* row = logits + i * vocab;
    float peak = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : peak)
    for (std::int64_t j = 0; j < vocab; ++j) peak = row[j] > peak ? row[j] : peak;
    float sum = 0;
    if (grad == nullptr) {
#pragma omp simd reduction(+ : sum)
      for (std::int64_t j = 0; j < vocab; ++j) sum += exp_approx(row[j] - peak);
    } else {
      // The exponentials go straight into the gradient's row (in cache) and are scaled after.
      float* out = grad + i * vocab;
#pragma omp simd reduction(+ : sum)
      for (std::int64_t j = 0; j < vocab; ++j) {
        const float e = exp_approx(row[j] - peak);
        out[j] = e;
        sum += e;
      }
      const float inv = scale / sum;
#pragma omp simd
      for (std::int64_t j = 0; j < vocab; ++j) out[j] *= inv;
      out[targets[i]] -= scale;
    }
    const double lse = static_cast<double>(peak) + std::log(static_cast<double>(sum));
    total += lse - static_cast<double>(row[targets[i]]);
  }
  return total;
}

}  // namespace sweepbench::cpu::SWEEPBENCH_KERNELS_ISA
