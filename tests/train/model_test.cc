// The models as built: parameter counts equal the analytic ones, shapes, initialisation, and
// activation checkpointing that changes nothing but memory.
#include "model/model.h"

#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "config/model_shapes.h"
#include "train/trainer.h"

namespace sweepbench {
namespace {

ModelOptions options_for(const ModelShape& shape, bool checkpointing = false) {
  ModelOptions o;
  o.shape = shape;
  o.max_seq_len = shape.block_size;
  o.activation_checkpointing = checkpointing;
  return o;
}

std::int64_t numel(TransformerLM& m) {
  std::int64_t n = 0;
  for (const auto& p : m->parameters()) n += p.numel();
  return n;
}

// The counted CPU allocator (torch_support.h, behind the memory stages' alloc_*_bytes): the bytes of
// live tensors exactly, and their peak since a reset.
TEST(CountedCpuAllocations, CountTheBytesOfLiveTensors) {
  ASSERT_TRUE(count_cpu_allocations());
  ASSERT_TRUE(count_cpu_allocations());  // idempotent
  reset_counted_cpu_peak();
  const MemoryReading before = counted_cpu_allocations();
  EXPECT_EQ(before.peak, before.current);
  {
    torch::Tensor a = torch::empty({1 << 20}, torch::kFloat);  // 4 MiB
    const MemoryReading with_a = counted_cpu_allocations();
    EXPECT_EQ(with_a.current - before.current, 4 << 20);
    { torch::Tensor b = torch::ones({1 << 18}, torch::kDouble); }  // 2 MiB, freed at once
    const MemoryReading after_b = counted_cpu_allocations();
    EXPECT_EQ(after_b.current, with_a.current);
    EXPECT_EQ(after_b.peak - before.current, (4 << 20) + (2 << 20));
  }
  const MemoryReading after = counted_cpu_allocations();
  EXPECT_EQ(after.current, before.current);
  reset_counted_cpu_peak();
  EXPECT_EQ(counted_cpu_allocations().peak, before.current);
}

TEST(Model, BuiltParameterCountsEqualTheAnalyticCounts) {
  std::vector<ModelShape> shapes = {find_model_preset("gpt2-tiny")->shape,
                                    find_model_preset("llama-tiny")->shape};
  // Odd shapes: GQA in the GPT-2 family, a non-power-of-two vocabulary, MHA Llama.
  shapes.push_back({"gpt2", 3, 48, 6, 2, 100, 321, 40});
  shapes.push_back({"llama", 1, 32, 4, 4, 80, 77, 16});
  for (const ModelShape& s : shapes) {
    TransformerLM m(options_for(s));
    EXPECT_EQ(numel(m), parameter_count(s)) << s.arch << " n_layer=" << s.n_layer;
  }
}

TEST(Model, GptTwoSmallHasItsPublishedSizeWithoutAllocatingIt) {
  // The 124M model is small enough to build once and count; larger presets are checked by
  // shape arithmetic in tests/config/model_shapes_test.cc against their published counts.
  TransformerLM m(options_for(find_model_preset("gpt2")->shape));
  EXPECT_EQ(numel(m), 124439808);
}

TEST(Model, ForwardShapesAndLossAtInitialisation) {
  for (const char* preset : {"gpt2-tiny", "llama-tiny"}) {
    ModelShape s = find_model_preset(preset)->shape;
    TransformerLM m(options_for(s));
    m->reset_parameters(7);
    torch::Tensor tokens = torch::randint(s.vocab_size, {3, 17}, torch::kLong);
    torch::Tensor logits = m->forward(tokens);
    EXPECT_EQ(logits.sizes(), (std::vector<std::int64_t>{3, 17, s.vocab_size})) << preset;
    // Small initial weights give near-uniform predictions: the loss is close to ln(V).
    double loss =
        m->loss(tokens, torch::randint(s.vocab_size, {3, 17}, torch::kLong)).item<double>();
    EXPECT_NEAR(loss, std::log(static_cast<double>(s.vocab_size)), 0.1) << preset;
  }
}

TEST(Model, InitialisationFollowsGptTwo) {
  ModelShape s = find_model_preset("gpt2-tiny")->shape;
  s.n_embd = 256;
  s.ffn_dim = 1024;
  TransformerLM m(options_for(s));
  m->reset_parameters(1);
  for (const auto& item : m->named_parameters()) {
    const std::string& name = item.key();
    const torch::Tensor& p = item.value();
    if (name.find("bias") != std::string::npos && name.find("ln_") == std::string::npos) {
      EXPECT_EQ(p.abs().max().item<double>(), 0.0) << name;
    }
  }
  EXPECT_NEAR(m->named_parameters()["wte.weight"].std().item<double>(), 0.02, 0.002);
  EXPECT_NEAR(m->named_parameters()["h0.c_fc.weight"].std().item<double>(), 0.02, 0.002);
  EXPECT_NEAR(m->named_parameters()["h0.mlp_proj.weight"].std().item<double>(),
              0.02 / std::sqrt(4.0), 0.002);
  EXPECT_EQ(m->named_parameters()["h0.ln_1.weight"].min().item<double>(), 1.0);
  // The same seed gives the same weights.
  TransformerLM again(options_for(s));
  again->reset_parameters(1);
  EXPECT_TRUE(torch::equal(again->named_parameters()["h1.c_attn.weight"],
                           m->named_parameters()["h1.c_attn.weight"]));
}

TEST(Model, CheckpointingGivesTheSameGradients) {
  for (const char* preset : {"gpt2-tiny", "llama-tiny"}) {
    ModelShape s = find_model_preset(preset)->shape;
    torch::Tensor tokens = torch::randint(s.vocab_size, {2, 32}, torch::kLong);
    torch::Tensor targets = torch::randint(s.vocab_size, {2, 32}, torch::kLong);
    std::vector<torch::Tensor> grads[2];
    double losses[2];
    for (int checkpointing = 0; checkpointing < 2; ++checkpointing) {
      TransformerLM m(options_for(s, checkpointing == 1));
      m->reset_parameters(3);
      torch::Tensor loss = m->loss(tokens, targets);
      loss.backward();
      losses[checkpointing] = loss.item<double>();
      for (const auto& p : m->parameters()) grads[checkpointing].push_back(p.grad().clone());
    }
    EXPECT_EQ(losses[0], losses[1]) << preset;
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (size_t i = 0; i < grads[0].size(); ++i) {
      EXPECT_TRUE(torch::allclose(grads[0][i], grads[1][i], 1e-6, 1e-7))
          << preset << " parameter " << i;
    }
  }
}

TEST(Model, KeptWeightCastsChangeNothingButHowOftenTheWeightsAreCast) {
  // Mixed precision (CPU autocast, bf16) over three micro-batches, as the trainer accumulates
  // them: with the model's WeightCasts kept for the step each weight matrix is cast once, not in
  // every forward and recomputation, and losses and gradients are those of casting every time,
  // bit for bit (one thread, so the products' sums are the same); with checkpointing too, whose
  // first forward runs without gradients and must not leave a copy cut off from its weight.
  // After stop() and an update, the next step casts the new weights.
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  for (const char* preset : {"gpt2-tiny", "llama-tiny"}) {
    const ModelShape s = find_model_preset(preset)->shape;
    // GPT-2: four projections a block and the head (the tied embedding); Llama: seven and its own.
    const std::int64_t matrices = s.arch == "llama" ? 7 * s.n_layer + 1 : 4 * s.n_layer + 1;
    std::vector<torch::Tensor> tokens, targets;
    for (int i = 0; i < 4; ++i) {
      tokens.push_back(torch::randint(s.vocab_size, {2, 16}, torch::kLong));
      targets.push_back(torch::randint(s.vocab_size, {2, 16}, torch::kLong));
    }
    for (bool checkpointing : {false, true}) {
      SCOPED_TRACE(std::string(preset) + (checkpointing ? ", checkpointing" : ""));
      std::vector<double> losses[2];
      std::vector<torch::Tensor> grads[2];
      std::int64_t made[2][2];  // copies made after the first step, after the second
      for (int keep = 0; keep < 2; ++keep) {
        ModelOptions o = options_for(s, checkpointing);
        // As the trainer does: the recomputation in the same mixed precision as the forward.
        o.block_scope = [](const std::function<void()>& body) {
          AutocastScope bf16(c10::DeviceType::CPU, at::kBFloat16);
          body();
        };
        TransformerLM m(o);
        m->reset_parameters(3);
        auto step = [&](int first, int count) {
          if (keep == 1) m->weight_casts().start();
          for (int i = first; i < first + count; ++i) {
            torch::Tensor loss;
            {
              AutocastScope bf16(c10::DeviceType::CPU, at::kBFloat16);
              loss = m->loss(tokens[i], targets[i]) / count;
            }
            loss.backward();
            losses[keep].push_back(loss.item<double>());
          }
          m->weight_casts().stop();
          for (const auto& p : m->parameters()) grads[keep].push_back(p.grad().clone());
        };
        step(0, 3);
        made[keep][0] = m->weight_casts().made();
        {
          torch::NoGradGuard no_grad;
          for (auto& p : m->parameters()) {
            p.sub_(p.grad() * 0.5);
            p.mutable_grad().zero_();
          }
        }
        step(3, 1);
        made[keep][1] = m->weight_casts().made();
      }
      EXPECT_EQ(made[0][0], 0);
      EXPECT_EQ(made[0][1], 0);
      EXPECT_EQ(made[1][0], matrices);
      EXPECT_EQ(made[1][1], 2 * matrices);
      EXPECT_EQ(losses[0], losses[1]);
      ASSERT_EQ(grads[0].size(), grads[1].size());
      for (size_t i = 0; i < grads[0].size(); ++i) {
        EXPECT_TRUE(torch::equal(grads[0][i], grads[1][i]))
            << "gradient " << i << ": max difference "
            << (grads[1][i] - grads[0][i]).abs().max().item<double>();
        EXPECT_GT(grads[1][i].abs().max().item<double>(), 0.0) << "gradient " << i;
      }
    }
  }
  at::set_num_threads(threads);
}

TEST(Model, TheChunkedLossGivesTheLossAndGradientsOfTheWholeLogits) {
  // train.fused_loss: the head's logits chunk by chunk (here 7 rows, so 10 chunks and a short
  // one for 2 x 32 tokens), forward and backward, against logits then cross_entropy; in fp32
  // also with the chunks' loss and gradient made by the CPU kernel (train.cpu_kernels).
  for (const char* preset : {"gpt2-tiny", "llama-tiny"}) {
    ModelShape s = find_model_preset(preset)->shape;
    torch::Tensor tokens = torch::randint(s.vocab_size, {2, 32}, torch::kLong);
    torch::Tensor targets = torch::randint(s.vocab_size, {2, 32}, torch::kLong);
    for (int run = 0; run < 3; ++run) {
      const bool bf16 = run == 1, kernels = run == 2;
      std::vector<torch::Tensor> grads[2];
      double losses[2];
      for (int fused = 0; fused < 2; ++fused) {
        ModelOptions o = options_for(s);
        o.fused_loss = fused == 1;
        o.cpu_kernels = fused == 1 && kernels;
        o.loss_chunk_rows = 7;
        TransformerLM m(o);
        m->reset_parameters(3);
        torch::Tensor loss;
        at::autocast::set_autocast_enabled(at::kCPU, bf16);  // bf16 is CPU autocast's dtype
        loss = m->loss(tokens, targets);
        at::autocast::set_autocast_enabled(at::kCPU, false);
        at::autocast::clear_cache();
        loss.backward();
        losses[fused] = loss.item<double>();
        for (const auto& p : m->parameters()) grads[fused].push_back(p.grad().clone());
      }
      // bf16 products round where the chunks make them; fp32 agrees to its own precision: the
      // chunks sum the head's gradient in another order, which moves gradients near zero by
      // about 1e-7 (the threads' split of the products varies from run to run).
      const double tol = bf16 ? 1e-2 : 1e-5;
      // The loss, about 6.2, is a float: a few of its ulps (4.8e-7 each).
      EXPECT_NEAR(losses[0], losses[1], bf16 ? 1e-2 : 4e-6) << preset;
      for (size_t i = 0; i < grads[0].size(); ++i) {
        EXPECT_TRUE(torch::allclose(grads[1][i], grads[0][i], tol, bf16 ? 1e-3 : 5e-7))
            << preset
            << (bf16      ? " bf16"
                : kernels ? " fp32 kernels"
                          : " fp32")
            << " parameter " << i << ": max difference "
            << (grads[1][i] - grads[0][i]).abs().max().item<double>();
      }
    }
  }
}

// A GPU's head: the product over rows padded to a multiple of 64 (head_rows), its padding
// columns biased far below any logit, and the loss over them all with no cut. Here on the CPU,
// where head_rows pads nothing, with the same padding forced: the loss and the gradients of the
// hidden states and of the head are those of the unpadded logits, and the padding's gradient is
// zero; in fp32 and under bf16 autocast (whose product rounds either way alike).
TEST(Model, ThePaddedHeadsLossIsTheUnpaddedOnes) {
  EXPECT_EQ(head_rows(50257, torch::Device(torch::kCUDA, 0)), 50304);
  EXPECT_EQ(head_rows(32000, torch::Device(torch::kCUDA, 0)), 32000);
  EXPECT_EQ(head_rows(50257, torch::Device(torch::kCPU)), 50257);
  torch::manual_seed(5);
  const std::int64_t v = 1000, rows = 1024, c = 48, n = 40;
  torch::Tensor targets = torch::randint(v, {n}, torch::kLong);
  targets[0] = v - 1;  // the last real column, next to the padding
  for (const bool bf16 : {false, true}) {
    torch::Tensor h0 = torch::randn({n, c});
    torch::Tensor w0 = torch::randn({v, c}) * 0.3;
    double losses[2];
    torch::Tensor grad_h[2], grad_w[2];
    for (int padded = 0; padded < 2; ++padded) {
      torch::Tensor h = h0.clone().requires_grad_(true);
      torch::Tensor w = w0.clone().requires_grad_(true);
      at::autocast::set_autocast_enabled(at::kCPU, bf16);
      torch::Tensor logits = padded ? padded_head_logits(h, w, rows) : linear_rows(h, w, {});
      at::autocast::set_autocast_enabled(at::kCPU, false);
      at::autocast::clear_cache();
      ASSERT_EQ(logits.size(1), padded ? rows : v);
      if (padded) {
        // The padding's logits sit far below the real ones.
        EXPECT_LE(logits.narrow(1, v, rows - v).max().item<double>(), -65000.0);
        EXPECT_GT(logits.narrow(1, 0, v).min().item<double>(), -1000.0);
      }
      torch::Tensor loss = cross_entropy_mean(logits, targets, /*cpu_kernels=*/false);
      loss.backward();
      losses[padded] = loss.item<double>();
      grad_h[padded] = h.grad();
      grad_w[padded] = w.grad();
    }
    EXPECT_NEAR(losses[0], losses[1], 1e-6) << (bf16 ? "bf16" : "fp32");
    EXPECT_TRUE(torch::allclose(grad_h[0], grad_h[1], 1e-5, 1e-7))
        << (grad_h[0] - grad_h[1]).abs().max().item<double>();
    EXPECT_TRUE(torch::allclose(grad_w[0], grad_w[1], 1e-5, 1e-7))
        << (grad_w[0] - grad_w[1]).abs().max().item<double>();
  }
  // The same logits, padded or cut back, as generation reads them.
  torch::Tensor h = torch::randn({3, 5, c}), w = torch::randn({v, c});
  torch::Tensor cut = padded_head_logits(h, w, rows).narrow(-1, 0, v);
  EXPECT_EQ(cut.sizes(), (std::vector<std::int64_t>{3, 5, v}));
  EXPECT_TRUE(torch::allclose(cut, linear_rows(h, w, {}), 1e-5, 1e-5));
}

TEST(Model, CausalAttentionIgnoresTheFuture) {
  torch::manual_seed(0);
  torch::Tensor q = torch::randn({1, 4, 6, 8});
  torch::Tensor k = torch::randn({1, 2, 6, 8});
  torch::Tensor v = torch::randn({1, 2, 6, 8});
  torch::Tensor y = causal_attention(q, k, v);
  // Changing the last position's keys and values leaves every earlier output unchanged.
  torch::Tensor k2 = k.clone(), v2 = v.clone();
  k2.select(2, 5).fill_(3.0);
  v2.select(2, 5).fill_(-3.0);
  torch::Tensor y2 = causal_attention(q, k2, v2);
  EXPECT_TRUE(torch::allclose(y.narrow(2, 0, 5), y2.narrow(2, 0, 5)));
  EXPECT_FALSE(torch::allclose(y.narrow(2, 5, 1), y2.narrow(2, 5, 1)));
}

// forward_step (fixed shapes, the position a device tensor: the step bench-infer captures as a
// CUDA graph) gives forward_cached's logits at every position, for both families (llama-tiny has
// grouped-query heads), and never sees the cache's positions past its own.
TEST(Model, TheFixedShapeStepGivesTheLogitsOfTheCachedStep) {
  for (const char* preset : {"gpt2-tiny", "llama-tiny"}) {
    const ModelShape shape = find_model_preset(preset)->shape;
    TransformerLM model(options_for(shape));
    model->reset_parameters(3);
    {
      // Weights 8x GPT-2's initialisation, so that greedy decoding does not repeat one token
      // and each step's choice depends on the cache.
      torch::NoGradGuard no_grad;
      for (auto& p : model->parameters()) p.mul_(8.0);
    }
    model->eval();
    c10::InferenceMode inference;
    const std::int64_t batch = 3, prompt = 5, steps = 9;
    const auto like = torch::TensorOptions().dtype(torch::kFloat);
    KVCache cached = model->make_cache(batch, prompt + steps, false, like);
    KVCache fixed = model->make_cache(batch, prompt + steps, false, like);
    torch::manual_seed(1);
    torch::Tensor tokens = torch::randint(shape.vocab_size, {batch, prompt}, torch::kLong);
    torch::Tensor next = model->forward_cached(tokens, cached).argmax(-1);  // (B)
    model->forward_cached(tokens, fixed);
    // What an earlier run left past the prompt: large, finite, and to be masked.
    for (size_t i = 0; i < fixed.k.size(); ++i) {
      fixed.k[i].narrow(2, prompt, steps).normal_(0.0, 10.0);
      fixed.v[i].narrow(2, prompt, steps).normal_(0.0, 10.0);
    }
    fixed.position = torch::full({1}, prompt, torch::kLong);
    std::set<std::int64_t> chosen;
    for (std::int64_t s = 0; s < steps; ++s) {
      torch::Tensor want = model->forward_cached(next.unsqueeze(1), cached);  // (B, V)
      torch::Tensor got = model->forward_step(next.unsqueeze(1), fixed);
      fixed.position.add_(1);
      ASSERT_EQ(got.sizes(), want.sizes());
      EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-4))
          << preset << ", step " << s << ": largest difference "
          << (got - want).abs().max().item<double>();
      EXPECT_TRUE(torch::equal(got.argmax(-1), want.argmax(-1))) << preset << ", step " << s;
      next = want.argmax(-1);
      for (std::int64_t b = 0; b < batch; ++b) chosen.insert(next[b].item<std::int64_t>());
    }
    EXPECT_EQ(fixed.length, prompt) << "forward_step leaves the host length to its caller";
    EXPECT_GT(chosen.size(), 3u) << preset << ": the greedy tokens should vary";
  }
}

}  // namespace
}  // namespace sweepbench
