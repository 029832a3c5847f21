// The model's own autograd functions and fast paths, which model.cc's modules call: products of
// a few rows on a CPU, a block recomputed in the backward pass, tensor parallelism's f and g, the
// fused CPU and GPU cross-entropies, a GPU's padded head, the embedding's in-place gradient, the
// chunked head-and-loss, rotary embeddings, and autocast's state. Each comment says what it saves
// and how it was measured.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>

namespace sweepbench {

// Autocast's state for a device type.
bool autocast_enabled(c10::DeviceType type);
at::ScalarType autocast_dtype(c10::DeviceType type);

// The mean cross-entropy of logits (N, V) against targets (N), in fp32. With `cpu_kernels`, where
// the logits are fp32 on the CPU, cpu_kernels.h's kernel makes the loss and, when gradients are
// wanted, the logits' gradient in one pass (backward only scales it) instead of log_softmax,
// nll_loss and their backwards. With `gpu_kernels`, where the logits are on a GPU (fp32, fp16 or
// bf16) and the build has CUDA, cuda_kernels.h's two passes: the rows' log-sum-exp in the
// forward, the gradient in the logits' dtype in the backward.
torch::Tensor cross_entropy_mean(const torch::Tensor& logits, const torch::Tensor& targets,
                                 bool cpu_kernels, bool gpu_kernels = false);

// Whether cross_entropy_mean's `gpu_kernels` can apply in this build (a CUDA libtorch).
bool gpu_kernels_built();

// The head's rows as its product uses them: on a GPU the vocabulary rounded up to a multiple of
// 64 (with an odd row length, GPT-2's 50257, cuBLAS can only use its unaligned kernels, which
// made the head's three products a third of the step on an H100); on a CPU the vocabulary.
std::int64_t head_rows(std::int64_t vocab, const torch::Device& device);

// The logits (..., rows) of hidden states h (..., C) by the head w (V, C) padded with zero rows
// to `rows` >= V, whose padding columns hold -65504 (the product's bias, which cuBLASLt adds in
// its epilogue): a softmax over all `rows` columns is the one over the V real ones, and gives the
// padding no gradient. So the loss needs no cut: the cut's strided cast to fp32 and its backward
// (a zero-filled gradient, copied into) cost 2.6 of a 31 ms GPT-2 step on an H200.
torch::Tensor padded_head_logits(const torch::Tensor& h, const torch::Tensor& w, std::int64_t rows);

// x W^T + b for x (..., K), W (N, K), b (N) or undefined; a few fp32 rows on a CPU in inference
// mode as (W x^T + b)^T (model_functions.cc says why).
torch::Tensor linear_rows(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

// A block recomputed in the backward pass instead of keeping its activations (what
// torch.utils.checkpoint does in Python): `fn` must outlive the backward pass.
using BlockFn = std::function<torch::Tensor(const torch::Tensor&)>;
torch::Tensor checkpointed_block(const torch::Tensor& x, const BlockFn* fn);

// Megatron-LM's f (identity forward, the group's sum of gradients backward) and g (the group's
// sum forward, identity backward); `sum` sums a tensor in place over the group.
using GroupSum = std::function<void(torch::Tensor&)>;
torch::Tensor tensor_parallel_copy(const torch::Tensor& x, const GroupSum* sum);
torch::Tensor tensor_parallel_reduce(const torch::Tensor& x, const GroupSum* sum);

// The embedding of `tokens` in `w` (V, C) whose backward adds into w's gradient in place (CPU).
torch::Tensor embedding_in_place_grad(const torch::Tensor& w, const torch::Tensor& tokens);

// The mean cross-entropy of the head `w` (V, C) over hidden states h (N, C) against targets (N),
// `rows` rows of logits at a time (0: about 64 MB of fp32 logits), never all of them at once.
torch::Tensor chunked_head_loss(const torch::Tensor& h, const torch::Tensor& w,
                                const torch::Tensor& targets, std::int64_t rows, bool with_grad,
                                bool cpu_kernels);

// Rotary position embeddings of x (B, H, T, D), cos and sin (T, D): Llama's half-split rotation.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos,
                         const torch::Tensor& sin);

}  // namespace sweepbench
