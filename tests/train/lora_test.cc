// LoRA (train.peft: lora): the adapters' count, a base model that is the same with and without
// them, and a training step that changes the adapters only.
#include <gtest/gtest.h>

#include <map>

#include "config/model_shapes.h"
#include "model/model.h"
#include "run/collectives.h"
#include "train/trainer.h"

namespace sweepbench {
namespace {

bool is_adapter(const std::string& name) { return name.find(".lora_") != std::string::npos; }

ModelOptions options_for(const ModelShape& shape, std::int64_t r,
                         const std::vector<std::string>& targets) {
  ModelOptions o;
  o.shape = shape;
  o.max_seq_len = shape.block_size;
  o.lora.r = r;
  o.lora.targets = targets;
  return o;
}

struct Case {
  const char* preset;
  std::vector<std::string> targets;
};

std::vector<Case> cases() {
  return {{"gpt2-tiny", {"c_attn"}},
          {"gpt2-tiny", {"c_attn", "attn_proj", "c_fc", "mlp_proj"}},
          {"llama-tiny", {"wq", "wv"}},
          {"llama-tiny", {"wq", "wk", "wv", "wo", "w1", "w2", "w3"}}};
}

TEST(Lora, AdaptersCountRTimesInPlusOutPerTargetedProjection) {
  for (const Case& c : cases()) {
    const ModelShape s = find_model_preset(c.preset)->shape;
    TransformerLM m(options_for(s, 4, c.targets));
    std::int64_t adapters = 0, base = 0;
    for (const auto& item : m->named_parameters()) {
      (is_adapter(item.key()) ? adapters : base) += item.value().numel();
    }
    EXPECT_EQ(base, parameter_count(s)) << c.preset;
    EXPECT_EQ(adapters, lora_parameter_count(s, 4, c.targets)) << c.preset;
    // By hand for the first case: 2 blocks x r (64 + 192) on c_attn.
    if (c.targets.size() == 1 && s.arch == "gpt2") {
      EXPECT_EQ(adapters, 2 * 4 * (64 + 192));
    }
  }
}

TEST(Lora, TheBaseWeightsAndTheOutputAreThoseOfTheModelWithoutAdapters) {
  for (const Case& c : cases()) {
    const ModelShape s = find_model_preset(c.preset)->shape;
    TransformerLM plain(options_for(s, 0, {}));
    TransformerLM adapted(options_for(s, 8, c.targets));
    plain->reset_parameters(3);
    adapted->reset_parameters(3);
    auto plain_params = plain->named_parameters();
    for (const auto& item : adapted->named_parameters()) {
      if (is_adapter(item.key())) {
        // A random, B zero: the update B A x starts at zero.
        bool b = item.key().find("lora_B") != std::string::npos;
        EXPECT_EQ(item.value().abs().max().item<float>() == 0, b) << item.key();
        continue;
      }
      EXPECT_TRUE(torch::equal(item.value(), plain_params[item.key()])) << item.key();
    }
    torch::Tensor tokens = torch::randint(s.vocab_size, {2, 9}, torch::kLong);
    EXPECT_TRUE(torch::equal(adapted->forward(tokens), plain->forward(tokens))) << c.preset;
  }
}

TEST(Lora, AStepChangesTheAdaptersOnly) {
  for (const Case& c : cases()) {
    TrainerOptions o;
    o.shape = find_model_preset(c.preset)->shape;
    o.preset = c.preset;
    o.seq_len = 16;
    o.train.lr = 1e-2;
    o.train.seed = 5;
    o.device = Device::kCpu;
    o.threads = 1;
    o.train.peft = Peft::kLora;
    o.train.lora_r = 4;
    o.train.lora_alpha = 8;
    o.train.lora_targets = c.targets;
    SingleProcess comm;
    std::unique_ptr<Trainer> trainer = make_trainer(o, comm);
    const std::int64_t adapters = lora_parameter_count(o.shape, 4, c.targets);
    EXPECT_EQ(trainer->trainable_parameter_count(), adapters);
    EXPECT_EQ(trainer->parameter_count(), parameter_count(o.shape) + adapters);
    // Frozen weights 4 bytes each; the adapters' values, gradients and moments 16.
    EXPECT_EQ(trainer->model_state_bytes(), 4 * parameter_count(o.shape) + 16 * adapters);

    std::map<std::string, std::vector<float>> before;
    for (const NamedArray& a : trainer->parameter_values()) before[a.name] = a.values;
    Batch b;
    b.batch = 2;
    b.seq = o.seq_len;
    for (std::int64_t i = 0; i < b.batch * b.seq; ++i) {
      b.inputs.push_back((i * 7) % o.shape.vocab_size);
      b.targets.push_back((i * 7 + 1) % o.shape.vocab_size);
    }
    for (int step = 0; step < 2; ++step) {
      ASSERT_EQ(trainer->forward_backward({b}).outcome, Outcome::kOk);
      ASSERT_EQ(trainer->update(o.train.lr).outcome, Outcome::kOk);
      trainer->finish_step();
    }
    for (const NamedArray& a : trainer->parameter_values()) {
      if (is_adapter(a.name)) {
        EXPECT_NE(a.values, before[a.name]) << c.preset << " " << a.name << " did not learn";
      } else {
        EXPECT_EQ(a.values, before[a.name]) << c.preset << " " << a.name << " changed";
      }
    }
  }
}

}  // namespace
}  // namespace sweepbench
