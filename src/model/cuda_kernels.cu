// bench-train's own CUDA kernels (cuda_kernels.h): the head's cross-entropy in two passes.
//
// One block of threads a row. The forward pass keeps, per thread, the largest value seen and the
// sum of e^(x - largest) over its share of the row (the online softmax's running pair), then
// combines the threads' pairs with CUB's block reduction; the backward pass recomputes each
// softmax value from the row's log-sum-exp. Rows whose bytes are a multiple of 16 (GPT-2's padded
// 50304 columns, Llama's 32000) are read and written 16 bytes at a time.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cub/block/block_reduce.cuh>

#include "model/cuda_kernels.h"

namespace sweepbench::cuda {
namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// 16 bytes of a row: 4 floats or 8 halves.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

// A part of a row: its largest value and the sum of e^(x - largest) over it. Empty: (-inf, 0).
struct MaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ MaxSum add(MaxSum a, float x) {
  if (x == -INFINITY) return a;  // e^-inf: nothing (a padding column that overflowed in fp16)
  if (x > a.max) return {x, a.sum * expf(a.max - x) + 1.0f};
  return {a.max, a.sum + expf(x - a.max)};  // a NaN x makes the sum NaN, as it should
}

struct Combine {
  __device__ __forceinline__ MaxSum operator()(const MaxSum& a, const MaxSum& b) const {
    if (a.sum == 0.0f) return b;
    if (b.sum == 0.0f) return a;
    const float m = fmaxf(a.max, b.max);
    return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
  }
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
    forward_rows(const T* __restrict__ logits, std::int64_t cols,
                 const std::int64_t* __restrict__ targets, float* __restrict__ lse,
                 float* __restrict__ loss, bool packed) {
  const std::int64_t row = blockIdx.x;
  const T* x = logits + row * cols;
  MaxSum part{-INFINITY, 0.0f};
  std::int64_t j = threadIdx.x;
  if (packed) {
    constexpr int n = Pack<T>::kSize;
    const auto* packs = reinterpret_cast<const Pack<T>*>(x);
    for (std::int64_t p = threadIdx.x; p < cols / n; p += kThreads) {
      const Pack<T> values = packs[p];
#pragma unroll
      for (int k = 0; k < n; ++k) part = add(part, to_float(values.v[k]));
    }
    j = cols / n * n + threadIdx.x;  // none when `packed`: cols is a multiple of n
  }
  for (; j < cols; j += kThreads) part = add(part, to_float(x[j]));
  using Reduce = cub::BlockReduce<MaxSum, kThreads>;
  __shared__ typename Reduce::TempStorage scratch;
  const MaxSum all = Reduce(scratch).Reduce(part, Combine());
  if (threadIdx.x == 0) {
    const float row_lse = all.max + logf(all.sum);
    const std::int64_t t = targets[row];
    lse[row] = row_lse;
    loss[row] = t >= 0 && t < cols ? row_lse - to_float(x[t]) : NAN;
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    backward_rows(const T* __restrict__ logits, std::int64_t rows, std::int64_t cols,
                  const std::int64_t* __restrict__ targets, const float* __restrict__ lse,
                  const float* __restrict__ grad_loss, T* __restrict__ grad, bool packed) {
  const std::int64_t row = blockIdx.x;
  const T* x = logits + row * cols;
  T* g = grad + row * cols;
  const float row_lse = lse[row];
  const float scale = *grad_loss / static_cast<float>(rows);
  const std::int64_t t = targets[row];
  std::int64_t j = threadIdx.x;
  if (packed) {
    constexpr int n = Pack<T>::kSize;
    const auto* in = reinterpret_cast<const Pack<T>*>(x);
    auto* out = reinterpret_cast<Pack<T>*>(g);
    for (std::int64_t p = threadIdx.x; p < cols / n; p += kThreads) {
      const Pack<T> values = in[p];
      Pack<T> result;
#pragma unroll
      for (int k = 0; k < n; ++k) {
        const float hit = p * n + k == t ? 1.0f : 0.0f;
        result.v[k] = from_float<T>((expf(to_float(values.v[k]) - row_lse) - hit) * scale);
      }
      out[p] = result;
    }
    j = cols / n * n + threadIdx.x;
  }
  for (; j < cols; j += kThreads) {
    const float hit = j == t ? 1.0f : 0.0f;
    g[j] = from_float<T>((expf(to_float(x[j]) - row_lse) - hit) * scale);
  }
}

// Whether every row starts on 16 bytes: the base pointers and the row's length.
template <typename T>
bool packable(std::int64_t cols, const void* a, const void* b) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  return cols * static_cast<std::int64_t>(sizeof(T)) % 16 == 0 && aligned(a) &&
         (b == nullptr || aligned(b));
}

const char* launched() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

template <typename T>
const char* forward_as(const void* logits, std::int64_t rows, std::int64_t cols,
                       const std::int64_t* targets, float* lse, float* loss, cudaStream_t s) {
  if (rows == 0) return nullptr;
  const T* x = static_cast<const T*>(logits);
  forward_rows<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
      x, cols, targets, lse, loss, packable<T>(cols, logits, nullptr));
  return launched();
}

template <typename T>
const char* backward_as(const void* logits, std::int64_t rows, std::int64_t cols,
                        const std::int64_t* targets, const float* lse, const float* grad_loss,
                        void* grad, cudaStream_t s) {
  if (rows == 0) return nullptr;
  backward_rows<T><<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
      static_cast<const T*>(logits), rows, cols, targets, lse, grad_loss, static_cast<T*>(grad),
      packable<T>(cols, logits, grad));
  return launched();
}

}  // namespace

const char* cross_entropy_forward(Dtype dtype, const void* logits, std::int64_t rows,
                                  std::int64_t cols, const std::int64_t* targets, float* lse,
                                  float* loss, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case Dtype::kFloat:
      return forward_as<float>(logits, rows, cols, targets, lse, loss, s);
    case Dtype::kHalf:
      return forward_as<__half>(logits, rows, cols, targets, lse, loss, s);
    case Dtype::kBFloat16:
      return forward_as<__nv_bfloat16>(logits, rows, cols, targets, lse, loss, s);
  }
  return "cross_entropy_forward: unknown dtype";
}

const char* cross_entropy_backward(Dtype dtype, const void* logits, std::int64_t rows,
                                   std::int64_t cols, const std::int64_t* targets, const float* lse,
                                   const float* grad_loss, void* grad, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case Dtype::kFloat:
      return backward_as<float>(logits, rows, cols, targets, lse, grad_loss, grad, s);
    case Dtype::kHalf:
      return backward_as<__half>(logits, rows, cols, targets, lse, grad_loss, grad, s);
    case Dtype::kBFloat16:
      return backward_as<__nv_bfloat16>(logits, rows, cols, targets, lse, grad_loss, grad, s);
  }
  return "cross_entropy_backward: unknown dtype";
}

}  // namespace sweepbench::cuda
