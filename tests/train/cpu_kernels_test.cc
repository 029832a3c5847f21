// bench-train's own CPU kernel (train.cpu_kernels, the head's cross-entropy) against the
// libtorch ops it replaces: the same values and gradients to float rounding, on awkward sizes
// (not multiples of a vector), extreme logits and every thread count.
#include "model/cpu_kernels.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "model/model.h"

namespace sweepbench {
namespace {

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

}  // namespace
}  // namespace sweepbench
