// The model's own autograd functions and fast paths (model_functions.h): products of a few rows,
// checkpointed blocks, tensor parallelism's f and g, the fused CPU cross-entropy and the GPU's
// (cuda_kernels.h), a GPU's padded head, the embedding's in-place gradient, the chunked
// head-and-loss, and rotary embeddings.
#include "model/model_functions.h"

#include <ATen/autocast_mode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "config/model_shapes.h"
#include "model/cpu_kernels.h"
#include "model/torch_support.h"

#ifdef SWEEPBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "model/cuda_kernels.h"
#endif

namespace sweepbench {
namespace {

// Recomputes a block in the backward pass instead of keeping its activations: forward runs
// without building a graph and keeps only the block's input; backward runs the block again with
// grad enabled and back-propagates through it (what torch.utils.checkpoint does in Python).
struct CheckpointedBlock : public torch::autograd::Function<CheckpointedBlock> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               const BlockFn* fn) {
    ctx->save_for_backward({x});
    ctx->saved_data["fn"] = reinterpret_cast<std::int64_t>(fn);
    return (*fn)(x);  // autograd is off inside Function::forward
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    const auto* fn = reinterpret_cast<const BlockFn*>(ctx->saved_data["fn"].toInt());
    torch::Tensor x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    torch::Tensor y;
    {
      torch::AutoGradMode enable(true);
      y = (*fn)(x);
    }
    torch::autograd::backward({y}, {grad_out[0]});
    return {x.grad(), torch::Tensor()};
  }
};

// Megatron-LM's f and g for tensor parallelism (TensorParallel in model.h).
struct TensorParallelCopy : public torch::autograd::Function<TensorParallelCopy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               const GroupSum* sum) {
    ctx->saved_data["sum"] = reinterpret_cast<std::int64_t>(sum);
    return x.view_as(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto* sum = reinterpret_cast<const GroupSum*>(ctx->saved_data["sum"].toInt());
    torch::Tensor g = grad[0].clone(at::MemoryFormat::Contiguous);
    (*sum)(g);
    return {g, torch::Tensor()};
  }
};

struct TensorParallelReduce : public torch::autograd::Function<TensorParallelReduce> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, torch::Tensor x,
                               const GroupSum* sum) {
    torch::Tensor y = x.clone(at::MemoryFormat::Contiguous);
    (*sum)(y);
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grad) {
    return {grad[0], torch::Tensor()};
  }
};

bool fp32_on_cpu(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kFloat;
}

// Targets outside [0, V) would index past a row: refused as libtorch's nll_loss refuses them.
void check_targets(const torch::Tensor& targets, std::int64_t vocab) {
  if (targets.numel() == 0) return;
  const std::int64_t low = targets.min().item<std::int64_t>();
  const std::int64_t high = targets.max().item<std::int64_t>();
  TORCH_CHECK(low >= 0 && high < vocab, "cross_entropy: target ", low < 0 ? low : high,
              " is out of bounds for ", vocab, " classes");
}

// The sum of rows' cross-entropies by cpu_kernels.h over libtorch's threads, in blocks of rows
// summed in a fixed order (the same total whatever the thread count); with `grad` defined, its
// rows become the gradient of the sum times `scale`.
double cross_entropy_sum(const torch::Tensor& logits, const torch::Tensor& targets,
                         const torch::Tensor& grad, double scale) {
  check_targets(targets, logits.size(1));  // the kernel indexes rows by them
  constexpr std::int64_t kRows = 8;
  const std::int64_t n = logits.size(0), vocab = logits.size(1);
  const float* lp = logits.data_ptr<float>();
  const std::int64_t* tp = targets.data_ptr<std::int64_t>();
  float* gp = grad.defined() ? grad.data_ptr<float>() : nullptr;
  return fixed_order_parallel_sum((n + kRows - 1) / kRows, [&](std::int64_t b) {
    return cpu::cross_entropy_rows(lp, vocab, tp, b * kRows, std::min(n, (b + 1) * kRows), gp,
                                   static_cast<float>(scale));
  });
}

// Loss and gradient in one pass; backward scales the saved gradient by dL/dloss (no pass when
// that is 1, as for loss.backward()).
struct CrossEntropyKernel : public torch::autograd::Function<CrossEntropyKernel> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                               const torch::Tensor& target, bool with_grad) {
    torch::Tensor logits = input.contiguous();
    torch::Tensor targets = target.to(torch::kLong).contiguous();
    const std::int64_t n = logits.size(0);
    torch::Tensor grad = with_grad ? torch::empty_like(logits) : torch::Tensor();
    const double total = cross_entropy_sum(logits, targets, grad, 1.0 / static_cast<double>(n));
    ctx->save_for_backward({grad});
    return torch::full({}, total / static_cast<double>(n), logits.options());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    torch::Tensor grad = ctx->get_saved_variables()[0];
    TORCH_CHECK(grad.defined(), "cross_entropy_mean: backward through a loss made without grad");
    torch::Tensor g = grad_out[0];
    if (g.item<float>() != 1.0f) grad = grad * g;
    return {grad, torch::Tensor(), torch::Tensor()};
  }
};

#ifdef SWEEPBENCH_WITH_CUDA
// cuda_kernels.h's cross-entropy: the forward keeps the logits (in their own dtype, alive until
// the backward in libtorch's way too) and each row's log-sum-exp; the backward makes the
// gradient from them and dL/dloss, read on the device.
struct CudaCrossEntropy : public torch::autograd::Function<CudaCrossEntropy> {
  static cuda::Dtype dtype_of(const torch::Tensor& t) {
    switch (t.scalar_type()) {
      case torch::kHalf:
        return cuda::Dtype::kHalf;
      case torch::kBFloat16:
        return cuda::Dtype::kBFloat16;
      default:
        return cuda::Dtype::kFloat;
    }
  }
  static void check(const char* error, const char* what) {
    TORCH_CHECK(error == nullptr, what, ": ", error);
  }
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input,
                               const torch::Tensor& target) {
    torch::Tensor logits = input.contiguous();
    torch::Tensor targets = target.to(torch::kLong).contiguous();
    const std::int64_t n = logits.size(0), v = logits.size(1);
    TORCH_CHECK(n < (std::int64_t{1} << 31), "cross_entropy_mean: ", n, " rows on the GPU kernel");
    // The kernels index the targets by row on the logits' device: as many, and there.
    TORCH_CHECK(targets.dim() == 1 && targets.numel() == n, "cross_entropy_mean: ", targets.numel(),
                " targets for ", n, " rows");
    TORCH_CHECK(targets.device() == logits.device(), "cross_entropy_mean: the targets are on ",
                targets.device(), ", the logits on ", logits.device());
    const c10::cuda::CUDAGuard guard(logits.device());
    const torch::TensorOptions f = logits.options().dtype(torch::kFloat);
    torch::Tensor lse = torch::empty({n}, f), rows = torch::empty({n}, f);
    check(cuda::cross_entropy_forward(dtype_of(logits), logits.data_ptr(), n, v,
                                      targets.data_ptr<std::int64_t>(), lse.data_ptr<float>(),
                                      rows.data_ptr<float>(),
                                      at::cuda::getCurrentCUDAStream().stream()),
          "the GPU cross-entropy's forward");
    ctx->save_for_backward({logits, targets, lse});
    return rows.mean();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& logits = saved[0];
    const c10::cuda::CUDAGuard guard(logits.device());
    torch::Tensor g = grad_out[0].to(logits.device(), torch::kFloat).contiguous();
    torch::Tensor grad = torch::empty_like(logits);
    check(cuda::cross_entropy_backward(dtype_of(logits), logits.data_ptr(), logits.size(0),
                                       logits.size(1), saved[1].data_ptr<std::int64_t>(),
                                       saved[2].data_ptr<float>(), g.data_ptr<float>(),
                                       grad.data_ptr(), at::cuda::getCurrentCUDAStream().stream()),
          "the GPU cross-entropy's backward");
    return {grad, torch::Tensor()};
  }
};
#endif

// The token embedding with ModelOptions::embedding_grad_in_place's backward: the gradient's rows
// index_add_-ed into the weight's .grad, as embedding_dense_backward adds them into a (V, C)
// tensor of zeros, and no gradient returned for the weight; without a .grad yet, that dense
// gradient. On GPT-2 124M (vocabulary 50,257) the dense way zero-fills, sums with the tied
// head's gradient and adds 154 MB three times a step, about 15% of a CPU step.
struct EmbeddingInPlaceGrad : public torch::autograd::Function<EmbeddingInPlaceGrad> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& weight,
                               const torch::Tensor& tokens) {
    ctx->saved_data["weight"] = weight;  // the parameter itself, whose .grad backward adds to
    ctx->save_for_backward({tokens});
    std::vector<std::int64_t> shape = tokens.sizes().vec();
    shape.push_back(weight.size(1));
    return weight.index_select(0, tokens.reshape({-1})).view(shape);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    torch::Tensor weight = ctx->saved_data["weight"].toTensor();
    torch::Tensor tokens = ctx->get_saved_variables()[0].reshape({-1});
    torch::Tensor rows = grad_out[0].reshape({-1, weight.size(1)});
    torch::Tensor& grad = weight.mutable_grad();
    if (grad.defined()) {
      torch::NoGradGuard no_grad;
      grad.index_add_(0, tokens, rows.to(grad.scalar_type()));
      return {torch::Tensor(), torch::Tensor()};
    }
    return {torch::zeros_like(weight).index_add_(0, tokens, rows.to(weight.scalar_type())),
            torch::Tensor()};
  }
};

// The mean cross-entropy of a linear head without its whole logits (llm.c's fused classifier,
// Liger's fused linear cross-entropy): rows of h (N, C) in chunks, each chunk's logits h W^T made
// (in autocast's dtype when it is on, as the head's product would be), reduced in fp32 to its
// log-sum-exp and target logit and, when gradients are wanted, at once turned into softmax -
// one-hot, the gradient of the logits, for the chunk's rows of dL/dh and its share of dL/dW (in
// the same dtype, summed in fp32); then dropped. Backward only scales the two by dL/dloss. So the
// head's products are those of logits-then-cross_entropy, but no more than a chunk of logits
// ever exists.
struct ChunkedHeadLoss : public torch::autograd::Function<ChunkedHeadLoss> {
  // GPUs: the head's rows padded to a multiple of 64 for cuBLAS's aligned kernels (see head()).
  static torch::Tensor aligned(const torch::Tensor& w) {
    const std::int64_t v = w.size(0), padded = (v + 63) / 64 * 64;
    if (padded == v || !w.is_cuda()) return w;
    namespace F = torch::nn::functional;
    return F::pad(w, F::PadFuncOptions({0, 0, 0, padded - v}));
  }
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor h,
                               torch::Tensor w, torch::Tensor targets, std::int64_t asked_rows,
                               bool with_grad, bool cpu_kernels) {
    const std::int64_t n = h.size(0), v = w.size(0), rows = loss_chunk_rows(v, asked_rows);
    const bool want_h = with_grad && h.requires_grad();
    const bool want_w = with_grad && w.requires_grad();
    torch::Tensor wa = aligned(w);
    torch::Tensor total = torch::zeros({}, h.options().dtype(torch::kFloat));
    torch::Tensor grad_h = want_h ? torch::empty_like(h) : torch::Tensor();
    torch::Tensor grad_w =
        want_w ? torch::zeros(wa.sizes(), w.options().dtype(torch::kFloat)) : torch::Tensor();
    // The head in the products' dtype (autocast's, where it is on), cast once for every chunk:
    // autocast would cast it in each chunk's product, as a GPU's padded head is no leaf its
    // cache keeps (GPT-2 124M at micro batch 8: 25 chunks of 333 rows, 25 casts of 38.6M
    // weights a micro-batch).
    const c10::DeviceType type = w.device().type();
    const torch::Tensor wp = autocast_enabled(type) && wa.scalar_type() == torch::kFloat
                                 ? wa.to(autocast_dtype(type))
                                 : wa;
    for (std::int64_t start = 0; start < n; start += rows) {
      const std::int64_t len = std::min(rows, n - start);
      torch::Tensor hc = h.narrow(0, start, len);
      torch::Tensor product = torch::nn::functional::linear(hc, wp);  // (len, V'), autocast's dtype
      if (cpu_kernels && fp32_on_cpu(product) && product.size(1) == v) {
        // The loss and softmax - one-hot, over N, in one pass of cpu_kernels.h.
        torch::Tensor p = want_h || want_w ? torch::empty_like(product) : torch::Tensor();
        total += cross_entropy_sum(product.contiguous(), targets.narrow(0, start, len).contiguous(),
                                   p, 1.0 / static_cast<double>(n));
        if (want_h) grad_h.narrow(0, start, len).copy_(torch::mm(p, wa));
        if (want_w) grad_w.add_(torch::mm(p.t(), hc));
        continue;
      }
      torch::Tensor logits = product.to(torch::kFloat);
      if (logits.size(1) > v) logits = logits.narrow(1, 0, v);
      torch::Tensor lse = logits.logsumexp(1, /*keepdim=*/true);  // (len, 1)
      torch::Tensor t = targets.narrow(0, start, len).unsqueeze(1);
      total += (lse - logits.gather(1, t)).sum();
      if (!want_h && !want_w) continue;
      // softmax - one-hot, over N (the mean), as the gradient of this chunk's logits.
      torch::Tensor p = torch::zeros({len, product.size(1)}, logits.options());
      p.narrow(1, 0, v).copy_((logits - lse).exp_());
      p.scatter_add_(1, t, torch::full({len, 1}, -1.0, p.options()));
      p.div_(static_cast<double>(n));
      torch::Tensor dp = p.to(product.scalar_type());
      hc = hc.to(product.scalar_type());
      if (want_h) grad_h.narrow(0, start, len).copy_(torch::mm(dp, wp));
      if (want_w) grad_w.add_(torch::mm(dp.t(), hc));  // (V', C), summed in fp32
    }
    if (want_w) grad_w = grad_w.narrow(0, 0, v).to(w.scalar_type());
    ctx->save_for_backward({grad_h, grad_w});
    return total / static_cast<double>(n);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    torch::Tensor g = grad_out[0];
    torch::Tensor grad_h = saved[0].defined() ? saved[0] * g.to(saved[0].scalar_type()) : saved[0];
    torch::Tensor grad_w = saved[1].defined() ? saved[1] * g.to(saved[1].scalar_type()) : saved[1];
    return {grad_h, grad_w, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// Llama's rotation of (x1, x2) halves: (-x2, x1).
torch::Tensor rotate_half(const torch::Tensor& x) {
  auto halves = x.chunk(2, -1);
  return torch::cat({-halves[1], halves[0]}, -1);
}

}  // namespace

bool autocast_enabled(c10::DeviceType type) { return at::autocast::is_autocast_enabled(type); }

at::ScalarType autocast_dtype(c10::DeviceType type) {
  return at::autocast::get_autocast_dtype(type);
}

// x W^T + b for x (..., K), W (N, K), b (N) or undefined. Generating on a CPU (inference mode, as
// bench-infer runs, a few rows, fp32), as (W x^T + b)^T instead: MKL packs its right operand into
// panels on every call, which for x W^T is the whole weight matrix, and with W on the left it packs
// only the few rows of x (a decode step spent 42% of its time in MKL's packing). On a 2-core AMD
// EPYC with torch 2.15's MKL: GPT-2 124M's head alone at 8 rows 15.1 -> 8.3 ms; bench-infer at
// batch 8, static cache, 2,670 -> 3,575 tokens/s on a 4 x 256 GPT-2 with vocabulary 8192 (the head
// alone gave 3,400) and 108 -> 115 on GPT-2 124M; batch 1 (a product with one row) is level. The
// same numbers either way, up to the products' summation order.
constexpr std::int64_t kFewRows = 64;

torch::Tensor linear_rows(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  const std::int64_t k = w.size(1), n = w.size(0);
  const std::int64_t rows = k > 0 ? x.numel() / k : 0;
  // Inference mode, not merely no gradients: a checkpointed block's forward runs without
  // gradients and must compute exactly what its recomputation with gradients will.
  if (!x.device().is_cpu() || !c10::InferenceMode::is_enabled() || rows == 0 || rows > kFewRows ||
      w.scalar_type() != torch::kFloat || x.scalar_type() != torch::kFloat) {
    // ATen's linear, not the C++ frontend's torch::nn::functional::linear: for x of 3 or more
    // dimensions that one runs matmul and then `+= b`, an add of its own outside autocast, so a
    // bf16 product took the fp32 bias through a broadcasting mixed-dtype kernel (GPT-2 124M
    // at micro batch 8 on an H200: 48 of them, 3.0 of the step's 31.3 ms of GPU time). ATen's
    // is in autocast's list, casts b with w, and gives a contiguous x one addmm (whose bias
    // cuBLASLt can add in the product's epilogue), as Python's F.linear does.
    return at::linear(x, w, b);
  }
  torch::Tensor xt = x.reshape({rows, k}).t();                                       // (K, rows)
  torch::Tensor y = b.defined() ? at::addmm(b.unsqueeze(1), w, xt) : at::mm(w, xt);  // (N, rows)
  std::vector<std::int64_t> sizes = x.sizes().vec();
  sizes.back() = n;
  return y.t().reshape(sizes);  // (..., N), contiguous
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos,
                         const torch::Tensor& sin) {
  // x (B, H, T, D); cos, sin (T, D) broadcast over B and H.
  return x * cos + rotate_half(x) * sin;
}

std::int64_t head_rows(std::int64_t vocab, const torch::Device& device) {
  return device.is_cuda() ? (vocab + 63) / 64 * 64 : vocab;
}

torch::Tensor padded_head_logits(const torch::Tensor& h, const torch::Tensor& w,
                                 std::int64_t rows) {
  const std::int64_t v = w.size(0), c = w.size(1);
  TORCH_CHECK(rows >= v, "padded_head_logits: ", rows, " rows for a head of ", v);
  // Half's lowest finite value: finite in fp32 and bf16 (-65536), so no inf reaches a product;
  // e^(-65504 - max) is 0 in fp32, and below any logit by far more than fp32's 104 of range.
  torch::Tensor bias = torch::zeros({rows}, w.options().requires_grad(false));
  bias.narrow(0, v, rows - v).fill_(-65504.0);
  torch::Tensor w_padded = at::constant_pad_nd(w, {0, 0, 0, rows - v});  // (rows, C)
  std::vector<std::int64_t> sizes = h.sizes().vec();
  sizes.back() = rows;
  // addmm over the rows as a matrix: at::linear gives 2-D inputs the same addmm, and autocast
  // casts h and the bias with the weight.
  return at::addmm(bias, h.reshape({-1, c}), w_padded.t()).view(sizes);
}

bool gpu_kernels_built() {
#ifdef SWEEPBENCH_WITH_CUDA
  return true;
#else
  return false;
#endif
}

torch::Tensor cross_entropy_mean(const torch::Tensor& logits, const torch::Tensor& targets,
                                 bool cpu_kernels, bool gpu_kernels) {
#ifdef SWEEPBENCH_WITH_CUDA
  const at::ScalarType type = logits.scalar_type();
  if (gpu_kernels && logits.is_cuda() && logits.dim() == 2 &&
      (type == torch::kFloat || type == torch::kHalf || type == torch::kBFloat16)) {
    return CudaCrossEntropy::apply(logits, targets);
  }
#else
  (void)gpu_kernels;
#endif
  torch::Tensor flat = logits.to(torch::kFloat);
  if (cpu_kernels && fp32_on_cpu(flat) && flat.dim() == 2) {
    return CrossEntropyKernel::apply(flat, targets,
                                     torch::GradMode::is_enabled() && flat.requires_grad());
  }
  return torch::nn::functional::cross_entropy(flat, targets);
}

torch::Tensor checkpointed_block(const torch::Tensor& x, const BlockFn* fn) {
  return CheckpointedBlock::apply(x, fn);
}

torch::Tensor tensor_parallel_copy(const torch::Tensor& x, const GroupSum* sum) {
  return TensorParallelCopy::apply(x, sum);
}

torch::Tensor tensor_parallel_reduce(const torch::Tensor& x, const GroupSum* sum) {
  return TensorParallelReduce::apply(x, sum);
}

torch::Tensor embedding_in_place_grad(const torch::Tensor& w, const torch::Tensor& tokens) {
  return EmbeddingInPlaceGrad::apply(w, tokens);
}

torch::Tensor chunked_head_loss(const torch::Tensor& h, const torch::Tensor& w,
                                const torch::Tensor& targets, std::int64_t rows, bool with_grad,
                                bool cpu_kernels) {
  return ChunkedHeadLoss::apply(h, w, targets, rows, with_grad, cpu_kernels);
}

}  // namespace sweepbench
