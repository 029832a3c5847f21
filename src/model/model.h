// The benchmarked models in libtorch: GPT-2 and Llama families, for training (bench-train) and
// generation with a KV cache (bench-infer). Leaves out: dropout (benchmarks run without it),
// Mistral's sliding window (full causal attention is used), paged or quantised caches.
//
// GPT-2: learned position embeddings, pre-LayerNorm blocks, GELU (tanh), biases, the token
// embedding tied to the output head. Llama: RMSNorm, rotary position embeddings (half-split),
// SwiGLU, grouped-query attention, no biases, an untied head. Shapes come from ModelShape, so
// parameter_count() (config/model_shapes.h) predicts numel exactly; a test checks it.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <unordered_map>
#include <vector>

#include "config/model_shapes.h"
#include "model/model_functions.h"  // IWYU pragma: export (autocast_*, cross_entropy_mean)

namespace sweepbench {

// Mixed precision the way torch.autocast does it, for libtorch's C++ API: on `type` in `dtype`
// while it lives, the previous state back after.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType type, at::ScalarType dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  void set(bool enabled, at::ScalarType dtype);
  c10::DeviceType type_;
  bool was_enabled_;
  at::ScalarType was_dtype_;
};

// Mixed precision's copies of the weight matrices in autocast's lower precision, kept for a
// training step. Autocast casts an fp32 weight where a product uses it: in every micro-batch's
// forward and in every recomputation of a checkpointed block.
// Between start() and stop(), operator() makes each weight's copy once, with its autograd edge
// back to the weight, and hands out that copy after; stop() drops them, before the optimizer's
// update changes the weights. Outside, or where autocast is off for the weight's device, or the
// weight is not fp32, it returns the weight (and autocast casts it as before).
class WeightCasts {
 public:
  void start() { keeping_ = true; }
  void stop() {
    keeping_ = false;
    copies_.clear();
  }
  torch::Tensor operator()(const torch::Tensor& w);
  std::int64_t made() const { return made_; }  // copies made so far

 private:
  bool keeping_ = false;
  std::unordered_map<const c10::TensorImpl*, torch::Tensor> copies_;
  std::int64_t made_ = 0;
};

// LoRA (train.peft: lora): adapters on the block projections named in `targets`; r = 0: none.
struct LoraOptions {
  std::int64_t r = 0;
  double alpha = 16, dropout = 0;
  std::vector<std::string> targets;
};

// One block's LoRA adapters: for a targeted projection W, y = W x + b + B A dropout(x) alpha / r
// with A (r, d_in) and B (d_out, r), registered on the projection's module as lora_A and lora_B
// (so named h0.c_attn.lora_A, as peft names them). Dropout only while gradients are recorded.
class LoraAdapters {
 public:
  void add(torch::nn::Linear& projection, const std::string& name, const LoraOptions& o);
  // With `casts`, the projection's weight through it.
  torch::Tensor apply(const torch::nn::Linear& projection, const torch::Tensor& x,
                      WeightCasts* casts = nullptr) const;

 private:
  struct Adapter {
    const torch::nn::Module* module;
    torch::Tensor a, b;
  };
  std::vector<Adapter> adapters_;
  double scale_ = 0, dropout_ = 0;
};

// Tensor parallelism (launch.tensor_parallel, Megatron-LM's scheme): a block's first
// projections (Q, K, V; the MLP's first) are split by output rows over the group's `size` ranks
// (column-parallel), the ones after (attention output, the MLP's second) by input columns
// (row-parallel). `allreduce` sums a tensor in place over the group: once after each
// row-parallel product in forward, once for the gradient of each column-parallel input in
// backward. size 1: none.
struct TensorParallel {
  std::int64_t size = 1;
  std::function<void(torch::Tensor&)> allreduce;
  // Megatron's f: identity forward, gradient summed over the group backward.
  torch::Tensor copy(const torch::Tensor& x) const;
  // A row-parallel projection: the partial products summed over the group, then the bias.
  torch::Tensor row(const torch::nn::Linear& projection, const torch::Tensor& x,
                    WeightCasts* casts = nullptr) const;
};

struct ModelOptions {
  ModelShape shape;
  std::int64_t max_seq_len = 0;  // rows of the rotary tables (Llama)
  bool activation_checkpointing = false;
  LoraOptions lora;
  TensorParallel tensor_parallel;
  // loss(): the head and cross-entropy over chunks of tokens, so the whole logits and their
  // gradient never exist at once (train.fused_loss); false: logits, then cross_entropy.
  bool fused_loss = false;
  // fp32 on CPUs: the head's cross-entropy by cpu_kernels.h instead of libtorch's ops.
  bool cpu_kernels = false;
  // On GPUs: the head's cross-entropy by cuda_kernels.h instead of libtorch's ops.
  bool gpu_kernels = false;
  std::int64_t loss_chunk_rows = 0;  // tokens per chunk; 0: about 64 MB of fp32 logits
  // On the CPU, the token embedding's backward adds its rows of gradient straight into the
  // weight's .grad (where it is defined) instead of a dense (V, C) gradient that autograd
  // zero-fills, sums with the tied head's and adds again. Only where nothing waits on the
  // weight's gradient accumulator (ZeRO-2/3's hooks do): the trainer sets it for stages 0 and 1.
  bool embedding_grad_in_place = false;
  double rope_theta = 10000.0;
  double norm_eps = 1e-5;
  // Runs around each block's forward, and again around its recomputation in the backward pass,
  // so a mixed-precision scope is the same both times. Empty: none.
  std::function<void(const std::function<void()>&)> block_scope;
  // Training without a cache (ZeRO-3 gathers and frees each block's parameters through these):
  // before block i's forward and after it (also without gradients), and before its backward
  // (when the gradient of its output is ready, so also before its recomputation). Empty: none.
  std::function<void(size_t)> before_block, after_block, before_block_backward;
};

// The keys and values of every block for the positions seen so far: the inference cache.
// static: each layer's (B, Hkv, capacity, D) tensors are allocated once and filled in place;
// dynamic: they hold exactly `length` positions and grow by concatenation, as Hugging Face's
// DynamicCache does.
struct KVCache {
  bool grow = false;
  std::int64_t length = 0;          // positions filled
  std::vector<torch::Tensor> k, v;  // one per layer
  // Fixed-shape decoding (TransformerLM::forward_step), static caches only: the position of the
  // next token as a (1,) int64 tensor on the cache's device, which the caller sets and advances
  // there (position.add_(1)), so that a step reads no host value and a CUDA graph can replay it;
  // forward_step does not advance `length`, and forward_cached ignores `position`. `visible`:
  // the step's mask (1, 1, 1, capacity), true at positions <= position, which forward_step sets
  // while its blocks run and resets after (defined: the blocks take the fixed-shape path).
  torch::Tensor position, visible;
  // Row i of the batch becomes row index[i] (beam search keeps the surviving beams' caches).
  void reorder(const torch::Tensor& index);
  // Bytes allocated for keys and values.
  std::int64_t bytes() const;
};

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(std::int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);  // (..., dim)
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

class Gpt2BlockImpl : public torch::nn::Module {
 public:
  explicit Gpt2BlockImpl(const ModelShape& s, const LoraOptions& lora = {},
                         const TensorParallel* tp = nullptr);
  // (B, T, C) -> (B, T, C). With a cache: x holds positions cache->length.. and its keys and
  // values are appended to layer `layer` of the cache.
  torch::Tensor forward(const torch::Tensor& x, KVCache* cache = nullptr, size_t layer = 0);
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  torch::nn::Linear c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, mlp_proj{nullptr};

 private:
  ModelShape s_;
  LoraAdapters lora_;
  const TensorParallel* tp_;       // nullptr: none
  std::int64_t heads_, kv_heads_;  // this rank's (all without tensor parallelism)

 public:
  WeightCasts* weight_casts = nullptr;  // the projections' weights through it; nullptr: none
};
TORCH_MODULE(Gpt2Block);

class LlamaBlockImpl : public torch::nn::Module {
 public:
  LlamaBlockImpl(const ModelShape& s, double eps, const LoraOptions& lora = {},
                 const TensorParallel* tp = nullptr);
  // x (B, T, C); cos, sin (T, head_dim) for x's positions; the cache as Gpt2Block's.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        KVCache* cache = nullptr, size_t layer = 0);
  RMSNorm attention_norm{nullptr}, ffn_norm{nullptr};
  torch::nn::Linear wq{nullptr}, wk{nullptr}, wv{nullptr}, wo{nullptr};
  torch::nn::Linear w1{nullptr}, w2{nullptr}, w3{nullptr};

 private:
  ModelShape s_;
  LoraAdapters lora_;
  const TensorParallel* tp_;
  std::int64_t heads_, kv_heads_;

 public:
  WeightCasts* weight_casts = nullptr;  // the projections' weights through it; nullptr: none
};
TORCH_MODULE(LlamaBlock);

class TransformerLMImpl : public torch::nn::Module {
 public:
  explicit TransformerLMImpl(ModelOptions options);
  // tokens (B, T) int64 -> logits (B, T, V)
  torch::Tensor forward(const torch::Tensor& tokens);
  // Generation: tokens (B, T) at positions cache.length .. cache.length + T - 1, whose keys and
  // values join the cache; returns the last position's logits (B, V).
  torch::Tensor forward_cached(const torch::Tensor& tokens, KVCache& cache);
  // One decode step of fixed shape, for CUDA graphs: tokens (B, 1) at the device position
  // cache.position of a static cache -> logits (B, V), as forward_cached gives them. Each
  // block's new key and value are written at that position (index_copy_) and attention runs over
  // the cache's whole capacity, positions past it masked; the position embedding (GPT-2) or the
  // rotary rows (Llama) are gathered at it. No host reads and the same shapes at every step; the
  // caller advances cache.position. The positions past it must hold finite values (a masked
  // NaN would still poison the product with the values): make_cache zero-fills static caches.
  torch::Tensor forward_step(const torch::Tensor& tokens, KVCache& cache);
  // Without a cache: the last position's logits (B, V) of tokens (B, T).
  torch::Tensor last_logits(const torch::Tensor& tokens);
  // An empty cache for `batch` sequences of up to `capacity` tokens (static, zero-filled) or
  // none yet (dynamic), in the dtype and on the device of `like`.
  KVCache make_cache(std::int64_t batch, std::int64_t capacity, bool grow,
                     const torch::TensorOptions& like) const;
  // Mean next-token cross-entropy; targets (B, T) int64.
  torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& targets);
  // GPT-2's initialisation: weights normal(0, 0.02), residual output projections
  // normal(0, 0.02 / sqrt(2 n_layer)) as in GPT-2 and nanoGPT, biases zero, norms one.
  // Deterministic for a seed, on every device, because it runs on the CPU generator. LoRA's
  // adapters are drawn after every base weight (which are thus the same as without them): A
  // uniform in +-1/sqrt(d_in) (peft's Kaiming-uniform bound), B zero, so the adapted model
  // starts as the base model.
  void reset_parameters(std::uint64_t seed);
  const ModelOptions& options() const { return options_; }
  // The copies of the weights for mixed precision that every projection and the head use; the
  // trainer keeps them for a step (WeightCasts::start, stop).
  WeightCasts& weight_casts() { return weight_casts_; }

 private:
  // (B, T) -> (B, T, C) after the final norm; with a cache, as forward_cached (as forward_step
  // where cache->visible is defined: inside forward_step only).
  torch::Tensor hidden(const torch::Tensor& tokens, KVCache* cache = nullptr);
  // wte(tokens), with ModelOptions::embedding_grad_in_place's backward where it applies.
  torch::Tensor embed(const torch::Tensor& tokens);
  torch::Tensor head(const torch::Tensor& h);  // (..., C) -> (..., V)
  torch::Tensor run_block(size_t i, const torch::Tensor& x);

  ModelOptions options_;
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  std::vector<Gpt2Block> gpt2_blocks_;
  std::vector<LlamaBlock> llama_blocks_;
  torch::nn::LayerNorm ln_f{nullptr};
  RMSNorm norm{nullptr};
  torch::nn::Linear lm_head{nullptr};  // Llama only; GPT-2 reuses wte
  torch::Tensor rope_cos_, rope_sin_;  // (max_seq_len, head_dim), not parameters
  // Each block as a function of its input (see the constructor).
  std::vector<std::function<torch::Tensor(const torch::Tensor&)>> block_fns_;
  WeightCasts weight_casts_;
};
TORCH_MODULE(TransformerLM);

// Tensor parallelism: copies into `local` (built with options.tensor_parallel.size t) rank
// `rank`'s part of every parameter of `full` (the same model without it): column-parallel
// weights and biases their rows (Q, K and V each for GPT-2's fused c_attn), row-parallel weights
// their columns, the rest whole. Returns the names of the parameters that are split.
std::vector<std::string> load_tensor_parallel_part(TransformerLM& local, TransformerLM& full,
                                                   std::int64_t rank, std::int64_t t);

// Causal scaled-dot-product attention with grouped-query heads.
// q (B, H, T, D); k, v (B, Hkv, S, D) with H a multiple of Hkv and S = offset + T: query i is
// position offset + i and sees keys 0 .. offset + i -> (B, H, T, D).
// libtorch's scaled_dot_product_attention (flash attention on CPUs and GPUs).
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, std::int64_t offset = 0);

}  // namespace sweepbench
