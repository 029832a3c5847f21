// AdamW with decoupled weight decay, as the trainer steps it: PyTorch's fused AdamW
// (torch.optim.AdamW(fused=True)'s kernel), on CPUs and GPUs one pass over values, gradients and
// both moments; the reference test compares the updated weights with torch.optim.AdamW's.
// Clipping's factor goes in as the kernel's grad_scale (the gradients divided by
// max(1, norm / clip) as it reads them), so clipping makes no pass of its own.
// Included by trainer.cc alone (no translation unit of its own).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>

#include "config/settings.h"

namespace sweepbench {

class AdamW {
 public:
  explicit AdamW(const TrainSettings& t) : beta1_(t.beta1), beta2_(t.beta2), eps_(t.eps) {}

  // Counts a step; every update() until the next one is part of it (bias correction). The
  // count on the device moves on there, so that a captured step (train.cuda_graph) counts each
  // replay.
  void begin_step() {
    ++steps_;
    if (step_count_.defined()) step_count_.add_(1);
  }

  // Updates `values` in place from `grad` and the moments. `grad_scale` is the clipping divisor,
  // a scalar tensor anywhere, or undefined for no clipping. `lr`: a number, or a float tensor
  // where the values are (read there: a captured step's learning rate, set before each replay).
  void update(const torch::Tensor& values, const torch::Tensor& grad, const torch::Tensor& exp_avg,
              const torch::Tensor& exp_avg_sq, double weight_decay, double lr,
              const torch::Tensor& grad_scale) {
    update_with(values, grad, exp_avg, exp_avg_sq, weight_decay, lr, grad_scale);
  }
  void update(const torch::Tensor& values, const torch::Tensor& grad, const torch::Tensor& exp_avg,
              const torch::Tensor& exp_avg_sq, double weight_decay, const torch::Tensor& lr,
              const torch::Tensor& grad_scale) {
    update_with(values, grad, exp_avg, exp_avg_sq, weight_decay, lr, grad_scale);
  }

 private:
  template <typename Lr>
  void update_with(const torch::Tensor& values, const torch::Tensor& grad,
                   const torch::Tensor& exp_avg, const torch::Tensor& exp_avg_sq,
                   double weight_decay, const Lr& lr, const torch::Tensor& grad_scale) {
    // The step count and the divisor are float tensors where the values are; the count is made
    // at the first update and moved on by begin_step() after.
    if (!step_count_.defined() || step_count_.device() != values.device()) {
      step_count_ =
          torch::full({}, static_cast<double>(steps_), values.options().dtype(torch::kFloat));
    }
    std::optional<torch::Tensor> divisor;
    if (grad_scale.defined()) divisor = grad_scale.to(values.device(), torch::kFloat);
    at::_fused_adamw_({values}, {grad}, {exp_avg}, {exp_avg_sq}, {}, {step_count_}, lr, beta1_,
                      beta2_, weight_decay, eps_, /*amsgrad=*/false, /*maximize=*/false, divisor,
                      std::nullopt);
  }

  double beta1_, beta2_, eps_;
  std::int64_t steps_ = 0;
  torch::Tensor step_count_;  // the fused kernel's step, a float on the device
};

}  // namespace sweepbench
