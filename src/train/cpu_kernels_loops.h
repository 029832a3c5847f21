// The loops of cpu_kernels.h, compiled three times: cpu_kernels_avx512.cc (AVX-512),
// cpu_kernels_avx2.cc (AVX2 + FMA) and cpu_kernels_base.cc (the build's baseline ISA), each into
// a namespace of its own named by SWEEPBENCH_KERNELS_ISA, so the builds of every function (and
// of the inline helpers) never meet; cpu_kernels.cc picks one at run time. Those files are
// compiled with -fopenmp-simd (vector reductions, no OpenMP runtime), -fno-math-errno and
// -fno-trapping-math (sqrt and the selects below vectorise only without errno and trap
// semantics, which nothing here uses). Include only from those three files.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "train/cpu_kernels.h"

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

// 1 / (1 + e^-u), the logistic function, with u clamped to [-40, 40]: 1 in float above, e^-40
// (4e-18, not the true smaller value) below. The clamp keeps every intermediate normal: GCC
// computes a clamped lane's constant result beside each lane's own and blends, and a denormal
// there (1 / (1 + e^88), times x) costs a microcode assist in every iteration, five times the
// loop's time.
inline float sigmoid_approx(float u) {
  u = u < -40.0f ? -40.0f : u;
  return 1.0f / (1.0f + exp_in_range(u > 40.0f ? -40.0f : -u));
}

// bf16 (its raw bits) to float, exactly.
inline float from_bf16(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// float to bf16, rounded to nearest even as libtorch rounds; NaN stays a (quiet) NaN.
inline std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const std::uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(f != f ? 0x7fc0u : rounded >> 16);
}

constexpr float kGeluBeta = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluKappa = 0.044715f;

// With s = sigmoid(2u), u = beta (x + kappa x^3): 0.5 (1 + tanh u) = s and 1 - tanh^2 u =
// 4 s (1 - s), so GELU is x s and its derivative s + 2 x s (1 - s) beta (1 + 3 kappa x^2).
inline float gelu_value(float v) {
  return v * sigmoid_approx(2.0f * kGeluBeta * (v + kGeluKappa * v * v * v));
}

inline float gelu_derivative(float v) {
  const float v2 = v * v;
  const float s = sigmoid_approx(2.0f * kGeluBeta * (v + kGeluKappa * v2 * v));
  const float slope = 2.0f * kGeluBeta * (1.0f + 3.0f * kGeluKappa * v2);
  return s + v * s * (1.0f - s) * slope;
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

void gelu_tanh(const float* x, float* y, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) y[i] = gelu_value(x[i]);
}

void gelu_tanh_backward(const float* x, const float* dy, float* dx, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] * gelu_derivative(x[i]);
}

void gelu_tanh_bf16(const std::uint16_t* x, std::uint16_t* y, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) y[i] = to_bf16(gelu_value(from_bf16(x[i])));
}

void gelu_tanh_backward_bf16(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                             std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    dx[i] = to_bf16(from_bf16(dy[i]) * gelu_derivative(from_bf16(x[i])));
  }
}

void causal_softmax(const float* s, float* p, std::int64_t t, std::int64_t cols,
                    std::int64_t offset, float scale, std::int64_t begin, std::int64_t end) {
  for (std::int64_t r = begin; r < end; ++r) {
    const float* in = s + r * cols;
    float* out = p + r * cols;
    const std::int64_t seen = offset + r % t + 1 < cols ? offset + r % t + 1 : cols;
    float peak = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : peak)
    for (std::int64_t j = 0; j < seen; ++j) peak = in[j] * scale > peak ? in[j] * scale : peak;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t j = 0; j < seen; ++j) {
      const float e = exp_approx(in[j] * scale - peak);
      out[j] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (std::int64_t j = 0; j < seen; ++j) out[j] *= inv;
    for (std::int64_t j = seen; j < cols; ++j) out[j] = 0.0f;
  }
}

void causal_softmax_backward(const float* p, const float* dp, float* ds, std::int64_t t,
                             std::int64_t cols, std::int64_t offset, float scale,
                             std::int64_t begin, std::int64_t end) {
  for (std::int64_t r = begin; r < end; ++r) {
    const float* pr = p + r * cols;
    const float* dpr = dp + r * cols;
    float* out = ds + r * cols;
    const std::int64_t seen = offset + r % t + 1 < cols ? offset + r % t + 1 : cols;
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (std::int64_t j = 0; j < seen; ++j) dot += pr[j] * dpr[j];
#pragma omp simd
    for (std::int64_t j = 0; j < seen; ++j) out[j] = scale * (pr[j] * (dpr[j] - dot));
    for (std::int64_t j = seen; j < cols; ++j) out[j] = 0.0f;
  }
}

double sum_of_squares(const float* x, std::int64_t n) {
  constexpr std::int64_t kBlock = 256;
  double total = 0;
  for (std::int64_t start = 0; start < n; start += kBlock) {
    const std::int64_t end = start + kBlock < n ? start + kBlock : n;
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t i = start; i < end; ++i) sum += x[i] * x[i];
    total += sum;
  }
  return total;
}

void adamw(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamW& a) {
  const float decay = 1.0f - a.lr * a.weight_decay;
  const float one_minus_b1 = 1.0f - a.beta1, one_minus_b2 = 1.0f - a.beta2;
  const float step = -a.lr / a.bias_correction1;
  const float bc2 = a.bias_correction2_sqrt, eps = a.eps, b1 = a.beta1, b2 = a.beta2;
  const float scale = a.grad_scale;
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const float gi = g[i] * scale;
    const float mi = m[i] * b1 + gi * one_minus_b1;
    const float vi = v[i] * b2 + gi * gi * one_minus_b2;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay + step * (mi / (std::sqrt(vi) / bc2 + eps));
  }
}

}  // namespace sweepbench::cpu::SWEEPBENCH_KERNELS_ISA
