// bench-train's own CPU kernels (train.cpu_kernels) against the libtorch ops they replace: the
// same values and gradients to float rounding, on awkward sizes (not multiples of a vector),
// extreme logits and every thread count.
#include "train/cpu_kernels.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "train/model.h"

namespace sweepbench {
namespace {

// max |a - b| / (|b| + floor), elementwise.
double relative_difference(const torch::Tensor& a, const torch::Tensor& b, double floor) {
  return ((a - b).abs() / (b.abs() + floor)).max().item<double>();
}

// max |a - b| over max |b|: where a sum cancels (m b1 + g (1 - b1) near 0) one rounding more or
// less is a large share of the result, but not of the tensor's scale.
double scaled_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / b.abs().max().item<double>();
}

// Runs `body` once with each build of the kernels this CPU can run (cpu_kernels.h), then
// leaves the widest chosen again.
template <typename Body>
void for_each_instruction_set(Body body) {
  const std::vector<std::string> builds = cpu::instruction_sets();
  for (const std::string& isa : builds) {
    cpu::use_instruction_set(isa);
    SCOPED_TRACE("kernels built for " + isa);
    body();
  }
  cpu::use_instruction_set(builds.front());
}

TEST(CpuKernels, RunTheWidestInstructionSetTheCpuHas) {
  const std::vector<std::string> builds = cpu::instruction_sets();
  ASSERT_FALSE(builds.empty());
  EXPECT_EQ(builds.back(), "baseline");
  EXPECT_EQ(cpu::instruction_set(), builds.front());
  for (const std::string& isa : builds) {
    EXPECT_TRUE(isa == "avx512" || isa == "avx2+fma" || isa == "baseline") << isa;
  }
  EXPECT_THROW(cpu::use_instruction_set("sse9"), std::invalid_argument);
  RecordProperty("instruction_sets", ::testing::PrintToString(builds));
}

TEST(CpuKernels, CrossEntropyAndItsGradientEqualLibtorchs) {
  for_each_instruction_set([&] {
    torch::manual_seed(3);
    struct Case {
      std::int64_t rows, vocab;
      double spread;  // logits' scale
    };
    for (const Case& c : {Case{1, 1, 1.0}, Case{7, 13, 1.0}, Case{33, 1000, 5.0},
                          Case{16, 50257, 2.0}, Case{9, 321, 60.0}}) {
      torch::Tensor logits = (torch::randn({c.rows, c.vocab}) * c.spread).requires_grad_();
      torch::Tensor targets = torch::randint(0, c.vocab, {c.rows}, torch::kLong);
      targets[0] = c.vocab - 1;  // the last column
      torch::Tensor want = torch::nn::functional::cross_entropy(logits, targets);
      torch::Tensor want_grad = torch::autograd::grad({want}, {logits})[0];
      torch::Tensor got = cross_entropy_mean(logits, targets, /*cpu_kernels=*/true);
      torch::Tensor got_grad = torch::autograd::grad({got}, {logits})[0];
      SCOPED_TRACE("rows " + std::to_string(c.rows) + ", vocab " + std::to_string(c.vocab));
      EXPECT_NEAR(got.item<double>(), want.item<double>(), 2e-6 * (1 + want.abs().item<double>()));
      EXPECT_LT((got_grad - want_grad).abs().max().item<double>(), 1e-7);
      // dL/dloss other than 1 scales the gradient (accumulation divides the loss).
      torch::Tensor scaled =
          torch::autograd::grad({cross_entropy_mean(logits, targets, true) * 0.25}, {logits})[0];
      EXPECT_LT((scaled - want_grad * 0.25).abs().max().item<double>(), 1e-7);
    }
  });
}

TEST(CpuKernels, CrossEntropyWithoutGradMakesNoGradientAndRefusesBadTargets) {
  torch::Tensor logits = torch::randn({5, 11});
  torch::Tensor targets = torch::tensor({0, 3, 10, 2, 7}, torch::kLong);
  {
    torch::NoGradGuard no_grad;
    torch::Tensor got = cross_entropy_mean(logits, targets, true);
    EXPECT_FALSE(got.requires_grad());
    const double want = torch::nn::functional::cross_entropy(logits, targets).item<double>();
    EXPECT_NEAR(got.item<double>(), want, 2e-6 * (1 + std::abs(want)));
  }
  EXPECT_THROW(cross_entropy_mean(logits, torch::tensor({0, 3, 11, 2, 7}, torch::kLong), true),
               c10::Error);
  EXPECT_THROW(cross_entropy_mean(logits, torch::tensor({0, -1, 1, 2, 7}, torch::kLong), true),
               c10::Error);
}

TEST(CpuKernels, CrossEntropyIsTheSameWhateverTheThreadCount) {
  for_each_instruction_set([&] {
    torch::Tensor logits = torch::randn({100, 777});
    torch::Tensor targets = torch::randint(0, 777, {100}, torch::kLong);
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    const double one = cross_entropy_mean(logits, targets, true).item<double>();
    at::set_num_threads(2);
    const double two = cross_entropy_mean(logits, targets, true).item<double>();
    at::set_num_threads(threads);
    EXPECT_EQ(one, two);
  });
}

TEST(CpuKernels, GeluAndItsGradientEqualLibtorchsTanhGelu) {
  for_each_instruction_set([&] {
    // Every size up to past a vector's width, large ones over threads, and the tails.
    for (std::int64_t n : {1, 7, 8, 9, 31, 100003}) {
      torch::Tensor x = (torch::randn({n}) * 3).requires_grad_();
      torch::Tensor dy = torch::randn({n});
      torch::Tensor want = torch::gelu(x, "tanh");
      torch::Tensor want_grad = torch::autograd::grad({want}, {x}, {dy})[0];
      torch::Tensor got = gelu_tanh(x, /*cpu_kernels=*/true);
      torch::Tensor got_grad = torch::autograd::grad({got}, {x}, {dy})[0];
      SCOPED_TRACE("n " + std::to_string(n));
      EXPECT_LT((got - want).abs().max().item<double>(), 1e-6);
      // Where tanh is near +-1, 1 - tanh^2 keeps few bits in either computation, times x^3.
      EXPECT_LT(relative_difference(got_grad, want_grad, 1.0), 1e-5);
    }
    torch::Tensor tails = torch::tensor({-100.0f, -20.0f, -5.0f, 0.0f, 1e-6f, 5.0f, 20.0f, 100.0f});
    EXPECT_LT((gelu_tanh(tails, true) - torch::gelu(tails, "tanh")).abs().max().item<double>(),
              1e-6);
    // Not fp32 on the CPU: libtorch's own.
    torch::Tensor d = torch::randn({10}, torch::kDouble);
    EXPECT_TRUE(torch::equal(gelu_tanh(d, true), torch::gelu(d, "tanh")));
  });
}

TEST(CpuKernels, GeluInBf16IsTheFp32GeluRoundedOnce) {
  // bf16 (autocast's dtype on a CPU): GELU of the bf16 values computed in fp32 and rounded once.
  // Against libtorch's GELU of the same values in fp64, rounded: the two differ where the exact
  // value lies within fp32's error of a rounding boundary, rarely, and then by one bf16 step
  // (2^-7 of the value at most). Below x = -5 (values under 1e-6) the reference's own
  // 1 + tanh(u) cancels, even in fp64, so there only both tiny is asked. (libtorch 1.13's own
  // bf16 GELU rounded inside and was off by far more, 60% at x = -3.)
  auto within_a_rounding = [](const torch::Tensor& got, const torch::Tensor& want) {
    if (got.numel() == 0) return 0.0;
    torch::Tensor a = got.to(torch::kDouble), b = want.to(torch::kDouble);
    return ((a - b).abs() - b.abs() / 128).max().item<double>();
  };
  for_each_instruction_set([&] {
    for (std::int64_t n : {1, 7, 31, 100003}) {
      torch::Tensor x = (torch::randn({n}) * 3).to(torch::kBFloat16).requires_grad_();
      torch::Tensor dy = torch::randn({n}).to(torch::kBFloat16);
      torch::Tensor x64 = x.detach().to(torch::kDouble).requires_grad_();
      torch::Tensor want64 = torch::gelu(x64, "tanh");
      torch::Tensor want = want64.detach().to(torch::kBFloat16);
      torch::Tensor want_grad =
          torch::autograd::grad({want64}, {x64}, {dy.to(torch::kDouble)})[0].to(torch::kBFloat16);
      torch::Tensor got = gelu_tanh(x, /*cpu_kernels=*/true);
      torch::Tensor got_grad = torch::autograd::grad({got}, {x}, {dy})[0];
      SCOPED_TRACE("n " + std::to_string(n));
      ASSERT_EQ(got.scalar_type(), torch::kBFloat16);
      ASSERT_EQ(got_grad.scalar_type(), torch::kBFloat16);
      torch::Tensor body = x.detach().gt(-5.0);
      EXPECT_LE(within_a_rounding(got.masked_select(body), want.masked_select(body)), 0.0);
      EXPECT_LE(within_a_rounding(got_grad.masked_select(body), want_grad.masked_select(body)),
                0.0);
      torch::Tensor tail = body.logical_not();
      EXPECT_TRUE(got.masked_select(tail).abs().lt(1e-6).all().item<bool>());
      EXPECT_TRUE(got_grad.masked_select(tail).abs().lt(1e-4).all().item<bool>());
      if (n > 1000) {  // nearly every element is the very same bf16 value
        EXPECT_GT(got.eq(want).masked_select(body).to(torch::kFloat).mean().item<double>(), 0.999);
        EXPECT_GT(
            got_grad.eq(want_grad).masked_select(body).to(torch::kFloat).mean().item<double>(),
            0.999);
      }
    }
    torch::Tensor special = torch::tensor({-100.0f, -5.0f, -0.0f, 0.0f, 1e-30f, 5.0f, 100.0f,
                                           std::numeric_limits<float>::infinity(),
                                           std::numeric_limits<float>::quiet_NaN()})
                                .to(torch::kBFloat16);
    torch::Tensor got = gelu_tanh(special, true).to(torch::kFloat);
    torch::Tensor want = torch::gelu(special.to(torch::kFloat), "tanh");
    EXPECT_LT((got.narrow(0, 0, 7) - want.narrow(0, 0, 7)).abs().max().item<double>(), 1e-6);
    EXPECT_TRUE(std::isnan(got[8].item<float>()));
  });
}

TEST(CpuKernels, CausalAttentionAndItsGradientsEqualTheMaskedSoftmaxWay) {
  for_each_instruction_set([&] {
    // Our blocks and kernel against libtorch's scaled_dot_product_attention: the same to float
    // rounding, GQA heads,
    // a sequence length that is not a multiple of a vector, queries after a prefix (offset), and
    // more queries than one block of 64 (the last one short).
    torch::manual_seed(6);
    for (auto [offset, t] :
         {std::pair<std::int64_t, std::int64_t>{0, 13}, {5, 13}, {0, 150}, {7, 150}}) {
      const std::int64_t b = 2, h = 4, hkv = 2, d = 8;
      torch::Tensor q = torch::randn({b, h, t, d}).requires_grad_();
      torch::Tensor k = torch::randn({b, hkv, offset + t, d}).requires_grad_();
      torch::Tensor v = torch::randn({b, hkv, offset + t, d}).requires_grad_();
      torch::Tensor dy = torch::randn({b, h, t, d});
      std::vector<torch::Tensor> want, got;
      for (bool kernels : {false, true}) {
        torch::Tensor y = causal_attention(q, k, v, offset, kernels);
        auto grads = torch::autograd::grad({y}, {q, k, v}, {dy});
        auto& out = kernels ? got : want;
        out.push_back(y);
        out.insert(out.end(), grads.begin(), grads.end());
      }
      for (size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE("offset " + std::to_string(offset) + ", t " + std::to_string(t) + ", output " +
                     std::to_string(i));
        EXPECT_LT(relative_difference(got[i], want[i], 1.0), 1e-5);
      }
    }
  });
}

TEST(CpuKernels, AdamwEqualsTheStepInLibtorchOps) {
  for_each_instruction_set([&] {
    const std::int64_t n = 1001;
    torch::manual_seed(4);
    torch::Tensor p = torch::randn({n}) * 0.02, g = torch::randn({n}) * 1e-3;
    g[0] = 0;
    g[1] = 1e-9;  // where sqrt(v) and eps are alike
    torch::Tensor m = torch::randn({n}) * 1e-4, v = torch::rand({n}) * 1e-7;
    const double lr = 1e-3, wd = 0.1, b1 = 0.9, b2 = 0.95, eps = 1e-8;
    const double bc1 = 1 - std::pow(b1, 3), bc2_sqrt = std::sqrt(1 - std::pow(b2, 3));
    torch::Tensor wp = p.clone(), wm = m.clone(), wv = v.clone();
    wp.mul_(1 - lr * wd);
    wm.mul_(b1).add_(g, 1 - b1);
    wv.mul_(b2).addcmul_(g, g, 1 - b2);
    wp.addcdiv_(wm, wv.sqrt().div_(bc2_sqrt).add_(eps), -lr / bc1);
    const cpu::AdamW a{static_cast<float>(lr),      static_cast<float>(wd),
                       static_cast<float>(b1),      static_cast<float>(b2),
                       static_cast<float>(eps),     static_cast<float>(bc1),
                       static_cast<float>(bc2_sqrt)};
    cpu::adamw(p.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
               n, a);
    EXPECT_LT(scaled_difference(m, wm), 1e-6);
    EXPECT_LT(scaled_difference(v, wv), 1e-6);
    // The update itself (about lr) to 1e-5 of it: where sqrt(v) is as small as eps, one rounding
    // of the moments moves it most.
    EXPECT_LT((p - wp).abs().max().item<double>(), 1e-5 * lr);
    EXPECT_LT(relative_difference(p, wp, 1e-3), 1e-6);
  });
}

}  // namespace
}  // namespace sweepbench
