// bench-train's own CUDA kernels (train.gpu_kernels), torch-free: raw device pointers and a
// stream, so that cuda_kernels.cu compiles with nvcc alone and only model_functions.cc, which
// wraps them in autograd functions, sees libtorch. Built only where CMake found a CUDA libtorch
// (SWEEPBENCH_WITH_CUDA).
//
// The head's cross-entropy in two passes over its logits, where libtorch's eager ops make about
// six (a cast to fp32, log-softmax, NLL and their three backwards, 36 bytes moved a bf16 logit
// against 6 here) and keep an fp32 copy of the logits until the backward pass:
//   forward:  each row's log-sum-exp and loss (one read of the logits, in their own dtype);
//   backward: each row's gradient, softmax - one-hot, times dL/dloss / rows, read from the device
//             (no wait for the host), written in the logits' dtype.
#pragma once

#include <cstdint>

namespace sweepbench::cuda {

enum class Dtype { kFloat, kHalf, kBFloat16 };

// Writes lse[i] = log(sum_j e^logits[i, j]) and loss[i] = lse[i] - logits[i, targets[i]] for
// every row i of the contiguous (rows, cols) logits, in fp32 (NaN for a target outside
// [0, cols)). `stream` is a cudaStream_t. Returns null, or CUDA's error string for the launch.
const char* cross_entropy_forward(Dtype dtype, const void* logits, std::int64_t rows,
                                  std::int64_t cols, const std::int64_t* targets, float* lse,
                                  float* loss, void* stream);

// Writes grad[i, j] = (e^(logits[i, j] - lse[i]) - [j == targets[i]]) * *grad_loss / rows, the
// gradient of the rows' mean loss times dL/dloss (`grad_loss`: one float on the device), in the
// logits' dtype. `grad` may not overlap `logits`. Returns as cross_entropy_forward.
const char* cross_entropy_backward(Dtype dtype, const void* logits, std::int64_t rows,
                                   std::int64_t cols, const std::int64_t* targets, const float* lse,
                                   const float* grad_loss, void* grad, void* stream);

}  // namespace sweepbench::cuda
