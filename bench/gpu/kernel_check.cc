// gpu_kernel_check: train.gpu_kernels' CUDA cross-entropy (src/model/cuda_kernels.cu) against
// libtorch's ops on a GPU, case by case: the loss and the logits' gradient for fp32, fp16 and
// bf16 logits of several widths (16-byte rows and not, fewer columns than a block has threads,
// GPT-2's 50304 with its 47 padding columns at -65504, Llama's 32000), under dL/dloss 1 and 0.25
// (gradient accumulation's scale), and a row holding a NaN. bench/gpu/run.sh kernels runs it
// before timing anything; it is built only against a CUDA libtorch. One line a case; exit 0 when
// every case is within its tolerance, 1 when one is not, 2 without a GPU.
//
//   build/cuda/bin/gpu_kernel_check
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "model/model_functions.h"

namespace {

using sweepbench::cross_entropy_mean;

struct Case {
  std::int64_t rows, cols, padding;  // the last `padding` columns at -65504, never a target
  at::ScalarType type;
};

const char* name_of(at::ScalarType t) {
  return t == at::kFloat ? "fp32" : t == at::kHalf ? "fp16" : "bf16";
}

// The loss and the logits' gradient (in the logits' dtype) of the mean cross-entropy times
// `scale`, by our kernels or libtorch's ops.
std::pair<double, torch::Tensor> run(const torch::Tensor& logits, const torch::Tensor& targets,
                                     double scale, bool ours) {
  torch::Tensor x = logits.detach().clone().requires_grad_(true);
  torch::Tensor loss = cross_entropy_mean(x, targets, /*cpu_kernels=*/false, ours);
  (loss * scale).backward();
  return {loss.item<double>(), x.grad()};
}

bool check(const Case& c, double scale) {
  const torch::Device gpu(torch::kCUDA, 0);
  torch::Tensor logits = (torch::randn({c.rows, c.cols}, gpu) * 3).to(c.type);
  if (c.padding > 0) logits.narrow(1, c.cols - c.padding, c.padding).fill_(-65504.0);
  torch::Tensor targets = torch::randint(c.cols - c.padding, {c.rows},
                                         torch::TensorOptions().dtype(torch::kLong).device(gpu));
  auto [ref_loss, ref_grad] = run(logits, targets, scale, false);
  auto [loss, grad] = run(logits, targets, scale, true);
  const double loss_error = std::abs(loss - ref_loss) / std::max(1.0, std::abs(ref_loss));
  const double scale_of_grad = ref_grad.abs().max().item<double>();
  const double grad_error =
      (grad.to(torch::kFloat) - ref_grad.to(torch::kFloat)).abs().max().item<double>() /
      std::max(scale_of_grad, 1e-30);
  const double padding_grad =
      c.padding > 0 ? grad.narrow(1, c.cols - c.padding, c.padding).abs().max().item<double>() : 0;
  // Both read the same logits and reduce in fp32: the loss agrees to fp32's rounding; each
  // gradient is rounded to the logits' dtype on both sides (one ulp apart at most, about).
  const double grad_tolerance = c.type == at::kFloat ? 1e-5 : c.type == at::kHalf ? 2e-3 : 1.6e-2;
  const bool ok = loss_error <= 2e-6 && grad_error <= grad_tolerance && padding_grad == 0 &&
                  grad.scalar_type() == c.type && grad.sizes() == logits.sizes();
  std::printf(
      "%-4s %6lld x %-6lld padding %-3lld dL/dloss %-4g  loss %.7f (libtorch %.7f, %.1e)  "
      "gradient max difference %.1e of its largest (at most %.0e), padding's %.1e  %s\n",
      name_of(c.type), static_cast<long long>(c.rows), static_cast<long long>(c.cols),
      static_cast<long long>(c.padding), scale, loss, ref_loss, loss_error, grad_error,
      grad_tolerance, padding_grad, ok ? "ok" : "FAILED");
  return ok;
}

// A row with a NaN gives a NaN loss, as libtorch's does.
bool check_nan() {
  const torch::Device gpu(torch::kCUDA, 0);
  torch::Tensor logits = torch::randn({4, 1000}, gpu).to(at::kBFloat16);
  logits[2][17] = std::numeric_limits<float>::quiet_NaN();
  torch::Tensor targets = torch::zeros({4}, torch::TensorOptions().dtype(torch::kLong).device(gpu));
  torch::NoGradGuard no_grad;
  const double loss = cross_entropy_mean(logits, targets, false, true).item<double>();
  const bool ok = std::isnan(loss);
  std::printf("bf16 a NaN in a row: loss %g  %s\n", loss, ok ? "ok" : "FAILED");
  return ok;
}

}  // namespace

int main() {
  if (!torch::cuda::is_available()) {
    std::puts("gpu_kernel_check: no GPU");
    return 2;
  }
  if (!sweepbench::gpu_kernels_built()) {
    std::puts("gpu_kernel_check: this build has no CUDA kernels");
    return 2;
  }
  torch::manual_seed(0);
  const Case cases[] = {
      {7, 5, 0, at::kFloat},           // fewer columns than threads, not 16-byte rows
      {3, 8, 0, at::kFloat},           // two 16-byte packs a row
      {33, 1000, 0, at::kBFloat16},    // 125 packs
      {9, 50257, 0, at::kBFloat16},    // GPT-2's vocabulary unpadded: the scalar path
      {64, 50304, 47, at::kBFloat16},  // GPT-2's padded head, as bench-train's loss reads it
      {64, 50304, 47, at::kFloat},    {16, 32000, 0, at::kHalf},  // Llama's vocabulary
      {5, 513, 0, at::kHalf},         {2048, 50304, 47, at::kBFloat16},
  };
  bool all = true;
  for (const Case& c : cases) {
    for (double scale : {1.0, 0.25}) all = check(c, scale) && all;
  }
  all = check_nan() && all;
  std::printf("gpu_kernel_check: %s\n", all ? "every case ok" : "a case FAILED");
  return all ? 0 : 1;
}
