// The memory model's arithmetic (docs/metrics.md, "Predicted memory"), worked by hand for GPT-2
// 124M and a small Llama; tests/postprocess/test_memory_estimate.py checks it against real runs.
#include "predict/memory_model.h"

#include <gtest/gtest.h>

#include "config/config.h"
#include "config/model_shapes.h"
#include "config/yaml_io.h"
#include "metrics/summary.h"

namespace sweepbench {
namespace {

ModelShape gpt2() { return find_model_preset("gpt2")->shape; }

double term(const MemoryPrediction& p, const std::string& name) {
  for (const MemoryTerm& t : p.terms) {
    if (t.name == name) return t.bytes;
  }
  ADD_FAILURE() << "no term " << name;
  return 0;
}

TEST(MemoryModel, GptTwoSmallOnAGpuInBf16) {
  TrainingMemoryInput in;
  in.shape = gpt2();
  in.micro_batch = 8;
  in.seq_len = 1024;
  in.element_bytes = 2;
  in.gpu = true;
  const MemoryPrediction p = predict_training_memory(in);
  const double psi = 124439808, n = 8 * 1024, d = 768, v = 50304;  // the head padded to 64
  EXPECT_DOUBLE_EQ(term(p, "model_states"), 16 * psi);
  // Weight matrices: the tied embedding and 12 blocks of qkv, projection and MLP.
  const double matrices = 50257 * d + 12 * (d * 3 * d + d * d + 2 * d * 4 * d);
  EXPECT_DOUBLE_EQ(term(p, "weight_copies"), 2 * matrices);
  // 8 d + 2 (2 d + 2 d + 2 d + 2 x 4 d) + 4 (4 + 12) = 36 d + 64 bytes a token and block.
  EXPECT_DOUBLE_EQ(term(p, "activations"), n * 12 * (36 * d + 64));
  // Logits 2 + their unpadded copy 2 + fp32 cast 4 + log-softmax 4 = 12 bytes a logit.
  EXPECT_DOUBLE_EQ(term(p, "head"), n * (12 * v + 8 * d + 24) + 4 * v * d);
  EXPECT_DOUBLE_EQ(p.init_peak, 16 * psi + 4 * psi);
  EXPECT_DOUBLE_EQ(p.step_peak, term(p, "model_states") + term(p, "weight_copies") +
                                    term(p, "activations") + term(p, "head"));
  EXPECT_DOUBLE_EQ(p.peak, p.step_peak);
}

TEST(MemoryModel, CheckpointingKeepsBlockInputsAndTheHeadsCast) {
  TrainingMemoryInput in;
  in.shape = gpt2();
  in.micro_batch = 4;
  in.seq_len = 512;
  in.element_bytes = 2;
  in.activation_checkpointing = true;
  const MemoryPrediction p = predict_training_memory(in);
  const double n = 4 * 512, d = 768, v = 50257;  // a CPU: no padding
  EXPECT_DOUBLE_EQ(term(p, "activations"), n * 12 * 4 * d);
  EXPECT_DOUBLE_EQ(term(p, "weight_copies"), 2 * v * d);
  // CPU bf16: logits 2 + fp32 cast 4 + log-softmax 4.
  EXPECT_DOUBLE_EQ(term(p, "head"), n * (10 * v + 8 * d + 24));
}

TEST(MemoryModel, TheChunkedLossHoldsAChunkAndTheHeadsGradient) {
  TrainingMemoryInput in;
  in.shape = gpt2();
  in.micro_batch = 8;
  in.seq_len = 1024;
  in.fused_loss = true;
  const double d = 768, v = 50257, n = 8192;
  const double rows = 333;  // bench-train's default: whole rows of 16 Mi logits (16 Mi / V)
  EXPECT_DOUBLE_EQ(term(predict_training_memory(in), "head"),
                   rows * v * 8 + 8 * v * d + n * (12 * d + 24));
  in.loss_chunk_rows = 100000;  // more rows than tokens: one chunk of N
  EXPECT_DOUBLE_EQ(term(predict_training_memory(in), "head"),
                   n * v * 8 + 8 * v * d + n * (12 * d + 24));
}

TEST(MemoryModel, ZeroOffloadAndLoraChangeTheStates) {
  TrainingMemoryInput in;
  in.shape = gpt2();
  const double psi = 124439808;
  in.world_size = 4;
  in.zero_stage = 3;
  // The pieces, and the root (embeddings, final norm) kept whole: 4 (1 + 1/4) bytes a parameter.
  const double root = 50257 * 768 + 1024 * 768 + 2 * 768;
  MemoryPrediction z3 = predict_training_memory(in);
  EXPECT_DOUBLE_EQ(term(z3, "model_states"), 16 * psi / 4 + 4 * root * 1.25);
  EXPECT_DOUBLE_EQ(term(z3, "gathered"), 8 * (psi - root) / 12);
  in.zero_stage = 0;
  in.offload_optimizer = true;
  EXPECT_DOUBLE_EQ(term(predict_training_memory(in), "model_states"), 8 * psi);
  in.offload_optimizer = false;
  in.lora = true;
  const double adapters = static_cast<double>(lora_parameter_count(gpt2(), 8, {"c_attn"}));
  const MemoryPrediction p = predict_training_memory(in);
  EXPECT_DOUBLE_EQ(term(p, "model_states"), 4 * psi + 16 * adapters);  // frozen base, adapters
  // Building draws the largest weight, the token embedding, on the host before its copy.
  EXPECT_DOUBLE_EQ(p.init_peak, term(p, "model_states") + 4.0 * 50257 * 768);
  // Frozen projections keep no input: e (d + f) = 4 (768 + 3072) less a token and block.
  TrainingMemoryInput full = in;
  full.lora = false;
  EXPECT_DOUBLE_EQ(term(predict_training_memory(full), "activations") - term(p, "activations"),
                   1.0 * 12 * 4 * (768 + 3072));
}

// ZeRO-2 (issue 52): a 4-layer GPT-2 of width 256 (vocabulary 8192, 1024 positions), micro
// batch 4 x 128 tokens, fp32, on this machine's CPUs, whose counted peaks (mem_alloc_peak_bytes,
// every rank alike) the numbers below are: the model used to be 21% under without checkpointing
// and 27% under with it, for it counted neither the buckets' scratch nor the gradients held.
TEST(MemoryModel, ZeroTwoHoldsItsBucketsScratchAndTheLastBucketsGradients) {
  TrainingMemoryInput in;
  in.shape = {"gpt2", 4, 256, 4, 4, 1024, 8192, 1024};
  in.micro_batch = 4;
  in.seq_len = 128;
  in.world_size = 2;
  in.zero_stage = 2;
  const double psi = 5518848, decay = 5505024, wte = 8192.0 * 256;
  // 25 MiB buckets: every matrix in one (the biases and norms in another); reducing it takes a
  // whole copy and a rank's piece, held from the build on. Measured at the end of the build:
  // 88,218,624 bytes, the states and these to the byte.
  MemoryPrediction p = predict_training_memory(in);
  EXPECT_DOUBLE_EQ(term(p, "model_states"), 10 * psi);
  EXPECT_DOUBLE_EQ(term(p, "buckets"), 4 * (decay + decay / 2));
  EXPECT_DOUBLE_EQ(p.init_peak, 88218624);
  // Without checkpointing the peak is still the head's, 33 MB above stage 1's less its 4 Psi
  // gradient buffer: measured 156,454,936.
  EXPECT_NEAR(p.step_peak / 156454936, 1, 0.002);
  EXPECT_DOUBLE_EQ(p.step_peak, term(p, "model_states") + term(p, "buckets") +
                                    term(p, "activations") + term(p, "head"));
  // With checkpointing it is the end of the backward pass: the matrices' bucket waits for the
  // token embedding's gradient, the last, which comes dense and is summed with the tied head's
  // (three V x d tensors at once in fp32): measured 127,024,152, 8,216 bytes above (the batch).
  in.activation_checkpointing = true;
  p = predict_training_memory(in);
  EXPECT_DOUBLE_EQ(term(p, "gradients"), 4 * (decay - wte) + 12 * wte);
  EXPECT_DOUBLE_EQ(p.step_peak, 10 * psi + 4 * (decay + decay / 2) + 4 * (decay - wte) + 12 * wte);
  EXPECT_NEAR(p.step_peak / 127024152, 1, 0.001);
  // Four ranks: the scratch is the bucket and a quarter (measured 66,157,056 after the build,
  // 104,962,584 at the step).
  in.world_size = 4;
  p = predict_training_memory(in);
  EXPECT_DOUBLE_EQ(p.init_peak, 66157056);
  EXPECT_NEAR(p.step_peak / 104962584, 1, 0.001);
  // 1 MiB buckets, two ranks: the token embedding alone is the largest (measured 67,771,392
  // after the build, 104,484,888 at the step).
  in.world_size = 2;
  in.bucket_mb = 1;
  p = predict_training_memory(in);
  EXPECT_DOUBLE_EQ(term(p, "buckets"), 4 * (wte + wte / 2));
  EXPECT_DOUBLE_EQ(p.init_peak, 67771392);
  EXPECT_NEAR(p.step_peak / 104484888, 1, 0.001);
  // bf16, one token row of 128, no checkpointing: the head's gradient is an fp32 cast the
  // embedding's is added into (8 V d), beside every weight's cast (measured 129,246,232).
  in.bucket_mb = 25;
  in.activation_checkpointing = false;
  in.micro_batch = 1;
  in.element_bytes = 2;
  p = predict_training_memory(in);
  EXPECT_DOUBLE_EQ(term(p, "gradients"), 4 * (decay - wte) + 8 * wte);
  EXPECT_NEAR(p.step_peak / 129246232, 1, 0.002);
  // Llama's untied embedding: its dense gradient alone, 4 V d (4 layers of width 256, MLP 768,
  // one row of 32 tokens: measured 131,144,728).
  in.shape = {"llama", 4, 256, 4, 4, 768, 8192, 1024};
  in.element_bytes = 4;
  in.seq_len = 32;
  p = predict_training_memory(in);
  EXPECT_DOUBLE_EQ(term(p, "gradients"), 4 * (4 * (4 * 65536 + 3 * 196608)) + 4 * wte);
  EXPECT_NEAR(p.step_peak / 131144728, 1, 0.001);
  // One rank shards nothing: no buckets.
  in.world_size = 1;
  for (const MemoryTerm& t : predict_training_memory(in).terms) EXPECT_NE(t.name, "buckets");
}

TEST(MemoryModel, GenerationHoldsWeightsCacheAndThePrefill) {
  InferenceMemoryInput in;
  in.shape = find_model_preset("llama-tiny")->shape;  // 2 layers, d 64, 2 KV heads of 16, f 176
  in.sequences = 4;
  in.input_tokens = 16;
  in.output_tokens = 8;
  in.element_bytes = 2;
  const MemoryPrediction p = predict_inference_memory(in);
  const InferenceCost cost = inference_cost(in.shape, 4, 16, 8, 2);
  EXPECT_DOUBLE_EQ(term(p, "weights"), cost.weight_bytes);
  EXPECT_DOUBLE_EQ(term(p, "kv_cache"), 2.0 * 2 * 2 * 16 * 2 * 4 * (16 + 8));
  EXPECT_DOUBLE_EQ(term(p, "prefill"), 4.0 * 16 * 2 * (6 * 64 + 2 * 176) + 4.0 * 512 * 4);
  // Built in fp32 and cast, on a CPU: the fp32 weights and the embedding's cast at once.
  EXPECT_DOUBLE_EQ(p.init_peak, cost.weight_bytes * 2 + 512.0 * 64 * 2);
  // Without a cache each decode step runs the prompt and the tokens so far: 16 + 7 of them.
  in.kv_cache = false;
  const MemoryPrediction none = predict_inference_memory(in);
  EXPECT_DOUBLE_EQ(term(none, "kv_cache"), 0);
  EXPECT_DOUBLE_EQ(term(none, "prefill"), 4.0 * 23 * 2 * (6 * 64 + 2 * 176) + 4.0 * 512 * 4);
  // A GPU: built on the host, only the cast weights counted; GPT-2's head padded to 50304 rows
  // is copied at each forward pass.
  InferenceMemoryInput gpt = in;
  gpt.shape = gpt2();
  gpt.gpu = true;
  gpt.kv_cache = true;
  const MemoryPrediction g = predict_inference_memory(gpt);
  EXPECT_DOUBLE_EQ(g.init_peak, term(g, "weights"));
  EXPECT_DOUBLE_EQ(term(g, "prefill"),
                   4.0 * 16 * 2 * (6 * 768 + 2 * 3072) + 4.0 * 50257 * 4 + 50304.0 * 768 * 2);
}

TEST(MemoryModel, APointsConfigSaysWhatRunsWhere) {
  auto resolved = [](const char* yaml) {
    return resolve_config(normalize_partial_config(parse_yaml(yaml, "t.yaml")));
  };
  MemoryPrediction p;
  Value cpu = resolved("model: {preset: gpt2-tiny}\n");
  ASSERT_TRUE(predict_point_memory(cpu, &p));
  EXPECT_FALSE(point_runs_on_gpu(cpu));
  Value gpu = resolved("model: {preset: gpt2-tiny}\nlaunch: {gpus_per_rank: 1}\n");
  EXPECT_TRUE(point_runs_on_gpu(gpu));
  EXPECT_FALSE(point_runs_on_gpu(
      resolved("model: {preset: gpt2-tiny}\nlaunch: {gpus_per_rank: 1, device: cpu}\n")));
  Value infer = resolved(
      "benchmark: infer\nmodel: {preset: gpt2-tiny}\ninfer: {input_tokens: 16, output_tokens: "
      "8}\n");
  ASSERT_TRUE(predict_point_memory(infer, &p));
  EXPECT_GT(term(p, "weights"), 0);
  Value command = resolved("benchmark: command\ncommand:\n  argv: [prog, --x]\n");
  EXPECT_FALSE(predict_point_memory(command, &p));
}

// What decides an OOM (memory_limit's figure): the resident set on a CPU, the device's memory on
// a GPU, each from the allocated peak; a command's own runtime gets neither.
TEST(MemoryModel, TheDecidingFigureIsTheResidentSetOnACpuAndTheDevicesMemoryOnAGpu) {
  auto resolved = [](const char* yaml) {
    return resolve_config(normalize_partial_config(parse_yaml(yaml, "t.yaml")));
  };
  MemoryPrediction cpu, gpu, command;
  ASSERT_TRUE(predict_point_memory(resolved("model: {preset: gpt2-tiny}\n"), &cpu));
  EXPECT_FALSE(cpu.gpu);
  EXPECT_DOUBLE_EQ(cpu.resident, 159.0e6 + 1.39 * cpu.peak);
  EXPECT_STREQ(cpu.deciding_name(), "resident set");
  ASSERT_TRUE(
      predict_point_memory(resolved("model: {preset: gpt2-tiny}\nlaunch: {device: cuda}\n"), &gpu));
  EXPECT_TRUE(gpu.gpu);
  EXPECT_DOUBLE_EQ(gpu.resident, 0.75e9 + 1.15 * gpu.peak);
  EXPECT_DOUBLE_EQ(gpu.deciding_bytes(), gpu.resident);
  EXPECT_STREQ(gpu.deciding_name(), "device memory");
  ASSERT_TRUE(predict_point_memory(
      resolved("benchmark: command\ncommand:\n  argv: [prog]\n  predict_as: train\n"
               "model: {preset: gpt2-tiny}\nlaunch: {device: cuda}\n"),
      &command));
  EXPECT_EQ(command.resident, 0);
  EXPECT_DOUBLE_EQ(command.deciding_bytes(), command.peak);
  EXPECT_STREQ(command.deciding_name(), "allocated peak");
}

// A CPU rank's resident set keeps half of what checkpointing and ZeRO-1/2 save in counted tensors:
// its line is drawn through the peak plus half the gap to the same point's peak without
// checkpointing and at ZeRO-0. ZeRO-3 keeps its own stage; a GPU its own peak.
TEST(MemoryModel, CheckpointingAndZeroOneTwoLowerTheResidentSetByHalfWhatTheySave) {
  auto predicted = [](const std::string& extra, const char* launch = "launch: {ranks: 4}\n") {
    MemoryPrediction p;
    EXPECT_TRUE(predict_point_memory(
        resolve_config(normalize_partial_config(parse_yaml(
            "model: {preset: gpt2, n_layer: 4, n_embd: 256, n_head: 4, vocab_size: 8192}\n"
            "data: {seq_len: 128}\n" +
                extra + launch,
            "t.yaml"))),
        &p));
    return p;
  };
  const MemoryPrediction whole = predicted("train: {micro_batch: 4}\n");
  EXPECT_DOUBLE_EQ(whole.resident, 159.0e6 + 1.39 * whole.peak);
  for (const char* extra :
       {"train: {micro_batch: 4, activation_checkpointing: true}\n",
        "train: {micro_batch: 4, zero_stage: 1}\n", "train: {micro_batch: 4, zero_stage: 2}\n",
        "train: {micro_batch: 4, zero_stage: 2, activation_checkpointing: true}\n"}) {
    const MemoryPrediction p = predicted(extra);
    EXPECT_LT(p.peak, whole.peak) << extra;
    EXPECT_DOUBLE_EQ(p.resident, 159.0e6 + 1.39 * (p.peak + 0.5 * (whole.peak - p.peak))) << extra;
  }
  // ZeRO-3 with checkpointing: the gap to ZeRO-3 without it, not to ZeRO-0.
  const MemoryPrediction z3 = predicted("train: {micro_batch: 4, zero_stage: 3}\n");
  const MemoryPrediction z3c =
      predicted("train: {micro_batch: 4, zero_stage: 3, activation_checkpointing: true}\n");
  EXPECT_DOUBLE_EQ(z3.resident, 159.0e6 + 1.39 * z3.peak);
  EXPECT_DOUBLE_EQ(z3c.resident, 159.0e6 + 1.39 * (z3c.peak + 0.5 * (z3.peak - z3c.peak)));
  // A GPU's device memory follows its own allocated peak.
  const MemoryPrediction gpu =
      predicted("train: {micro_batch: 4, activation_checkpointing: true}\n",
                "launch: {ranks: 4, device: cuda}\n");
  EXPECT_DOUBLE_EQ(gpu.resident, 0.75e9 + 1.15 * gpu.peak);
}

}  // namespace
}  // namespace sweepbench
