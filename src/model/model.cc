#include "model/model.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "model/cpu_kernels.h"
#include "model/model_functions.h"
#include "model/torch_support.h"

namespace sweepbench {
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, std::int64_t offset) {
  const std::int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3);
  const std::int64_t hkv = k.size(1), groups = h / hkv;
  if (t == 1 && offset > 0) {
    // One new token sees every cached key: no mask. The query heads that share a key/value head
    // are stacked as rows of one product instead of repeating the cache for each of them.
    torch::Tensor qg = q.reshape({b, hkv, groups, d});             // (B, Hkv, G, D)
    torch::Tensor y = at::scaled_dot_product_attention(qg, k, v);  // (B, Hkv, G, D)
    return y.reshape({b, h, 1, d});
  }
  // libtorch's fused attention (flash attention on CPUs and GPUs, memory-efficient elsewhere);
  // grouped-query heads share their key/value head without copies.
  const bool gqa = groups > 1;
  if (offset == 0) {
    return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true, std::nullopt,
                                            gqa);
  }
  // Query i (position offset + i) sees keys 0 .. offset + i: (T, S), true = takes part.
  torch::Tensor seen =
      torch::ones({t, k.size(2)}, torch::TensorOptions().dtype(torch::kBool).device(q.device()))
          .tril(offset);
  return at::scaled_dot_product_attention(q, k, v, seen, 0.0, false, std::nullopt, gqa);
}

namespace {

// Appends a layer's new keys and values (B, Hkv, T, D) to the cache; returns all of its keys and
// values so far, (B, Hkv, length + T, D) each.
std::pair<torch::Tensor, torch::Tensor> cache_append(KVCache& cache, size_t layer,
                                                     const torch::Tensor& k,
                                                     const torch::Tensor& v) {
  const std::int64_t pos = cache.length, t = k.size(2);
  torch::Tensor& ck = cache.k[layer];
  torch::Tensor& cv = cache.v[layer];
  if (cache.grow) {
    ck = ck.defined() ? torch::cat({ck, k}, 2) : k.contiguous();
    cv = cv.defined() ? torch::cat({cv, v}, 2) : v.contiguous();
    return {ck, cv};
  }
  ck.narrow(2, pos, t).copy_(k);
  cv.narrow(2, pos, t).copy_(v);
  return {ck.narrow(2, 0, pos + t), cv.narrow(2, 0, pos + t)};
}

// forward_step's attention: q (B, H, 1, D) over a static cache's whole capacity, ck, cv
// (B, Hkv, capacity, D), `visible` (1, 1, 1, capacity) hiding the positions past the step's.
// Grouped query heads are stacked as rows, as causal_attention does for one token.
torch::Tensor masked_step_attention(const torch::Tensor& q, const torch::Tensor& ck,
                                    const torch::Tensor& cv, const torch::Tensor& visible) {
  const std::int64_t b = q.size(0), h = q.size(1), d = q.size(3), hkv = ck.size(1);
  torch::Tensor qg = q.reshape({b, hkv, h / hkv, d});                       // (B, Hkv, G, D)
  torch::Tensor y = at::scaled_dot_product_attention(qg, ck, cv, visible);  // (B, Hkv, G, D)
  return y.reshape({b, h, 1, d});
}

// Attention of a block, with or without a cache.
torch::Tensor block_attention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v, KVCache* cache, size_t layer) {
  if (cache == nullptr) return causal_attention(q, k, v, 0);
  if (cache->visible.defined()) {
    // forward_step: the new key and value (B, Hkv, 1, D) written at the device position.
    cache->k[layer].index_copy_(2, cache->position, k);
    cache->v[layer].index_copy_(2, cache->position, v);
    return masked_step_attention(q, cache->k[layer], cache->v[layer], cache->visible);
  }
  std::int64_t offset = cache->length;
  auto [keys, values] = cache_append(*cache, layer, k, v);
  return causal_attention(q, keys, values, offset);
}

}  // namespace

void KVCache::reorder(const torch::Tensor& index) {
  for (auto* list : {&k, &v}) {
    for (torch::Tensor& t : *list) {
      if (!t.defined()) continue;
      if (grow) {
        t = t.index_select(0, index);
      } else {
        // In place: a static cache keeps its one allocation.
        torch::Tensor filled = t.narrow(2, 0, length);
        filled.copy_(filled.index_select(0, index));
      }
    }
  }
}

std::int64_t KVCache::bytes() const {
  std::int64_t total = 0;
  for (const auto* list : {&k, &v}) {
    for (const torch::Tensor& t : *list) {
      if (t.defined()) total += t.numel() * t.element_size();
    }
  }
  return total;
}

RMSNormImpl::RMSNormImpl(std::int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  torch::Tensor xf = x.to(torch::kFloat);
  torch::Tensor normed = xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps_);
  return normed.to(x.scalar_type()) * weight;
}

AutocastScope::AutocastScope(c10::DeviceType type, at::ScalarType dtype)
    : type_(type), was_enabled_(autocast_enabled(type)), was_dtype_(autocast_dtype(type)) {
  set(true, dtype);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set(was_enabled_, was_dtype_);
}

void AutocastScope::set(bool enabled, at::ScalarType dtype) {
  at::autocast::set_autocast_enabled(type_, enabled);
  at::autocast::set_autocast_dtype(type_, dtype);
}

torch::Tensor WeightCasts::operator()(const torch::Tensor& w) {
  if (!keeping_ || !w.defined() || w.scalar_type() != torch::kFloat) return w;
  const c10::DeviceType type = w.device().type();
  if (!autocast_enabled(type)) return w;
  auto found = copies_.find(w.unsafeGetTensorImpl());
  if (found != copies_.end()) return found->second;
  // A copy made without gradients (a checkpointed block's first forward) would cut a trained
  // weight off from its gradient wherever it were reused: autocast casts that one as before.
  if (w.requires_grad() && !torch::GradMode::is_enabled()) return w;
  torch::Tensor copy = w.to(autocast_dtype(type));
  copies_.emplace(w.unsafeGetTensorImpl(), copy);
  ++made_;
  return copy;
}

torch::Tensor TensorParallel::copy(const torch::Tensor& x) const {
  if (size == 1) return x;
  if (!torch::GradMode::is_enabled()) return x;
  return tensor_parallel_copy(x, &allreduce);
}

torch::Tensor TensorParallel::row(const torch::nn::Linear& projection, const torch::Tensor& x,
                                  WeightCasts* casts) const {
  namespace F = torch::nn::functional;
  torch::Tensor partial =
      F::linear(x, casts != nullptr ? (*casts)(projection->weight) : projection->weight);
  torch::Tensor y;
  if (torch::GradMode::is_enabled()) {
    y = tensor_parallel_reduce(partial, &allreduce);
  } else {
    y = partial.clone(at::MemoryFormat::Contiguous);
    allreduce(y);
  }
  return projection->bias.defined() ? y + projection->bias : y;
}

void LoraAdapters::add(torch::nn::Linear& projection, const std::string& name,
                       const LoraOptions& o) {
  if (o.r <= 0 || std::find(o.targets.begin(), o.targets.end(), name) == o.targets.end()) return;
  const std::int64_t in = projection->options.in_features();
  const std::int64_t out = projection->options.out_features();
  Adapter a;
  a.module = projection.get();
  a.a = projection->register_parameter("lora_A", torch::zeros({o.r, in}));
  a.b = projection->register_parameter("lora_B", torch::zeros({out, o.r}));
  adapters_.push_back(a);
  scale_ = o.alpha / static_cast<double>(o.r);
  dropout_ = o.dropout;
}

torch::Tensor LoraAdapters::apply(const torch::nn::Linear& projection, const torch::Tensor& x,
                                  WeightCasts* casts) const {
  namespace F = torch::nn::functional;
  torch::Tensor y = linear_rows(
      x, casts != nullptr ? (*casts)(projection->weight) : projection->weight, projection->bias);
  for (const Adapter& a : adapters_) {
    if (a.module != projection.get()) continue;
    torch::Tensor in = x;
    if (dropout_ > 0 && torch::GradMode::is_enabled()) in = torch::dropout(x, dropout_, true);
    return y + F::linear(F::linear(in, a.a), a.b) * scale_;
  }
  return y;
}

Gpt2BlockImpl::Gpt2BlockImpl(const ModelShape& s, const LoraOptions& lora, const TensorParallel* tp)
    : s_(s), tp_(tp != nullptr && tp->size > 1 ? tp : nullptr) {
  const std::int64_t t = tp_ != nullptr ? tp_->size : 1;
  heads_ = s.n_head / t;
  kv_heads_ = s.n_kv_head / t;
  const std::int64_t hd = s.n_embd / s.n_head;
  ln_1 = register_module("ln_1",
                         torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.n_embd}).eps(1e-5)));
  c_attn = register_module("c_attn", torch::nn::Linear(s.n_embd, (heads_ + 2 * kv_heads_) * hd));
  attn_proj = register_module("attn_proj", torch::nn::Linear(heads_ * hd, s.n_embd));
  ln_2 = register_module("ln_2",
                         torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.n_embd}).eps(1e-5)));
  c_fc = register_module("c_fc", torch::nn::Linear(s.n_embd, s.ffn_dim / t));
  mlp_proj = register_module("mlp_proj", torch::nn::Linear(s.ffn_dim / t, s.n_embd));
  lora_.add(c_attn, "c_attn", lora);
  lora_.add(attn_proj, "attn_proj", lora);
  lora_.add(c_fc, "c_fc", lora);
  lora_.add(mlp_proj, "mlp_proj", lora);
}

torch::Tensor Gpt2BlockImpl::forward(const torch::Tensor& x, KVCache* cache, size_t layer) {
  // With tensor parallelism H, Hkv and the MLP's units are this rank's share.
  const std::int64_t b = x.size(0), t = x.size(1);
  const std::int64_t hd = s_.n_embd / s_.n_head, q_dim = heads_ * hd, kv_dim = kv_heads_ * hd;
  auto in = [&](const torch::Tensor& a) { return tp_ != nullptr ? tp_->copy(a) : a; };
  auto out = [&](const torch::nn::Linear& p, const torch::Tensor& a) {
    return tp_ != nullptr ? tp_->row(p, a, weight_casts) : lora_.apply(p, a, weight_casts);
  };
  torch::Tensor qkv = lora_.apply(c_attn, in(ln_1(x)), weight_casts);  // (B, T, q_dim + 2 kv_dim)
  auto parts = qkv.split_with_sizes({q_dim, kv_dim, kv_dim}, -1);
  torch::Tensor q = parts[0].view({b, t, heads_, hd}).transpose(1, 2);     // (B, H, T, D)
  torch::Tensor k = parts[1].view({b, t, kv_heads_, hd}).transpose(1, 2);  // (B, Hkv, T, D)
  torch::Tensor v = parts[2].view({b, t, kv_heads_, hd}).transpose(1, 2);
  torch::Tensor y =
      block_attention(q, k, v, cache, layer).transpose(1, 2).contiguous().view({b, t, q_dim});
  torch::Tensor h = x + out(attn_proj, y);
  torch::Tensor m =
      out(mlp_proj, torch::gelu(lora_.apply(c_fc, in(ln_2(h)), weight_casts), "tanh"));
  return h + m;
}

LlamaBlockImpl::LlamaBlockImpl(const ModelShape& s, double eps, const LoraOptions& lora,
                               const TensorParallel* tp)
    : s_(s), tp_(tp != nullptr && tp->size > 1 ? tp : nullptr) {
  const std::int64_t t = tp_ != nullptr ? tp_->size : 1;
  heads_ = s.n_head / t;
  kv_heads_ = s.n_kv_head / t;
  const std::int64_t hd = s.n_embd / s.n_head;
  auto linear = [](std::int64_t in, std::int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
  };
  attention_norm = register_module("attention_norm", RMSNorm(s.n_embd, eps));
  wq = register_module("wq", linear(s.n_embd, heads_ * hd));
  wk = register_module("wk", linear(s.n_embd, kv_heads_ * hd));
  wv = register_module("wv", linear(s.n_embd, kv_heads_ * hd));
  wo = register_module("wo", linear(heads_ * hd, s.n_embd));
  ffn_norm = register_module("ffn_norm", RMSNorm(s.n_embd, eps));
  w1 = register_module("w1", linear(s.n_embd, s.ffn_dim / t));
  w2 = register_module("w2", linear(s.ffn_dim / t, s.n_embd));
  w3 = register_module("w3", linear(s.n_embd, s.ffn_dim / t));
  for (auto [projection, name] : {std::pair{&wq, "wq"},
                                  {&wk, "wk"},
                                  {&wv, "wv"},
                                  {&wo, "wo"},
                                  {&w1, "w1"},
                                  {&w2, "w2"},
                                  {&w3, "w3"}}) {
    lora_.add(*projection, name, lora);
  }
}

torch::Tensor LlamaBlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                      const torch::Tensor& sin, KVCache* cache, size_t layer) {
  const std::int64_t b = x.size(0), t = x.size(1);
  const std::int64_t hd = s_.n_embd / s_.n_head;
  auto in = [&](const torch::Tensor& a) { return tp_ != nullptr ? tp_->copy(a) : a; };
  auto out = [&](const torch::nn::Linear& p, const torch::Tensor& a) {
    return tp_ != nullptr ? tp_->row(p, a, weight_casts) : lora_.apply(p, a, weight_casts);
  };
  torch::Tensor n = in(attention_norm(x));
  torch::Tensor q =
      lora_.apply(wq, n, weight_casts).view({b, t, heads_, hd}).transpose(1, 2);  // (B, H, T, D)
  torch::Tensor k = lora_.apply(wk, n, weight_casts).view({b, t, kv_heads_, hd}).transpose(1, 2);
  torch::Tensor v = lora_.apply(wv, n, weight_casts).view({b, t, kv_heads_, hd}).transpose(1, 2);
  q = apply_rope(q, cos, sin);
  k = apply_rope(k, cos, sin);
  torch::Tensor y =
      block_attention(q, k, v, cache, layer).transpose(1, 2).contiguous().view({b, t, heads_ * hd});
  torch::Tensor h = x + out(wo, y);
  torch::Tensor f = in(ffn_norm(h));
  return h + out(w2, torch::silu(lora_.apply(w1, f, weight_casts)) *
                         lora_.apply(w3, f, weight_casts));  // SwiGLU
}

namespace {
// "h0", "h1", ...: built by append, not "h" + std::to_string(i), which GCC 12 flags with a false
// -Wrestrict under C++20 (PyTorch 2.x's headers need C++20).
std::string block_name(std::int64_t i) { return std::string("h").append(std::to_string(i)); }
}  // namespace

TransformerLMImpl::TransformerLMImpl(ModelOptions options) : options_(std::move(options)) {
  const ModelShape& s = options_.shape;
  wte = register_module("wte", torch::nn::Embedding(s.vocab_size, s.n_embd));
  if (s.arch == "llama") {
    for (std::int64_t i = 0; i < s.n_layer; ++i) {
      llama_blocks_.push_back(register_module(
          block_name(i),
          LlamaBlock(s, options_.norm_eps, options_.lora, &options_.tensor_parallel)));
      llama_blocks_.back()->weight_casts = &weight_casts_;
    }
    norm = register_module("norm", RMSNorm(s.n_embd, options_.norm_eps));
    lm_head = register_module(
        "lm_head", torch::nn::Linear(torch::nn::LinearOptions(s.n_embd, s.vocab_size).bias(false)));
    // Rotary tables: angle(t, j) = t * theta^(-2j / D) for the first D/2 dims, repeated.
    std::int64_t hd = s.n_embd / s.n_head;
    torch::Tensor inv_freq = torch::pow(
        options_.rope_theta, -torch::arange(0, hd, 2, torch::kFloat64) / static_cast<double>(hd));
    torch::Tensor pos = torch::arange(options_.max_seq_len, torch::kFloat64);
    torch::Tensor angles = torch::outer(pos, inv_freq);  // (T, D/2)
    angles = torch::cat({angles, angles}, -1);           // (T, D)
    rope_cos_ = register_buffer("rope_cos", angles.cos().to(torch::kFloat));
    rope_sin_ = register_buffer("rope_sin", angles.sin().to(torch::kFloat));
  } else {
    wpe = register_module("wpe", torch::nn::Embedding(s.block_size, s.n_embd));
    for (std::int64_t i = 0; i < s.n_layer; ++i) {
      gpt2_blocks_.push_back(
          register_module(block_name(i), Gpt2Block(s, options_.lora, &options_.tensor_parallel)));
      gpt2_blocks_.back()->weight_casts = &weight_casts_;
    }
    ln_f = register_module("ln_f",
                           torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.n_embd}).eps(1e-5)));
  }
  // One function per block, built once: checkpointing keeps pointers to them until the backward
  // pass, and the mixed-precision scope wraps both the forward and the recomputation.
  for (std::int64_t i = 0; i < s.n_layer; ++i) {
    block_fns_.emplace_back([this, i](const torch::Tensor& in) {
      torch::Tensor y;
      auto body = [&] {
        if (!llama_blocks_.empty()) {
          std::int64_t t = in.size(1);
          y = llama_blocks_[static_cast<size_t>(i)]->forward(in, rope_cos_.narrow(0, 0, t),
                                                             rope_sin_.narrow(0, 0, t));
        } else {
          y = gpt2_blocks_[static_cast<size_t>(i)]->forward(in);
        }
      };
      if (options_.block_scope) {
        options_.block_scope(body);
      } else {
        body();
      }
      return y;
    });
  }
}

torch::Tensor TransformerLMImpl::run_block(size_t i, const torch::Tensor& x) {
  if (options_.before_block) options_.before_block(i);
  // A checkpointed block is one node to autograd, which records it only when an input needs a
  // gradient; with LoRA the first block's input (the frozen embedding's output) needs none, so
  // it is made to, or the adapters inside would get no gradient (and the loss no graph).
  torch::Tensor y;
  if (options_.activation_checkpointing && torch::GradMode::is_enabled()) {
    y = checkpointed_block(x.requires_grad() ? x : x.detach().requires_grad_(true), &block_fns_[i]);
  } else {
    y = block_fns_[i](x);
  }
  if (options_.after_block) options_.after_block(i);
  if (options_.before_block_backward && y.requires_grad()) {
    std::function<void(size_t)>* hook = &options_.before_block_backward;
    y.register_hook([hook, i](const torch::Tensor&) { (*hook)(i); });
  }
  return y;
}

torch::Tensor TransformerLMImpl::embed(const torch::Tensor& tokens) {
  const torch::Tensor& w = wte->weight;
  if (options_.embedding_grad_in_place && w.requires_grad() && w.device().is_cpu() &&
      torch::GradMode::is_enabled()) {
    return embedding_in_place_grad(w, tokens);
  }
  return wte(tokens);
}

torch::Tensor TransformerLMImpl::hidden(const torch::Tensor& tokens, KVCache* cache) {
  const std::int64_t t = tokens.size(1);
  const std::int64_t pos = cache != nullptr ? cache->length : 0;
  // forward_step: the one position is a device tensor (1,), read by gathers, never on the host.
  const bool step = cache != nullptr && cache->visible.defined();
  torch::Tensor x = embed(tokens);  // (B, T, C)
  if (!llama_blocks_.empty()) {
    if (cache == nullptr) {
      for (size_t i = 0; i < llama_blocks_.size(); ++i) x = run_block(i, x);
    } else {
      // The rotary rows of these positions, once for every block: (T, D).
      torch::Tensor cos =
          step ? rope_cos_.index_select(0, cache->position) : rope_cos_.narrow(0, pos, t);
      torch::Tensor sin =
          step ? rope_sin_.index_select(0, cache->position) : rope_sin_.narrow(0, pos, t);
      cos = cos.to(x.scalar_type());
      sin = sin.to(x.scalar_type());
      for (size_t i = 0; i < llama_blocks_.size(); ++i) {
        x = llama_blocks_[i]->forward(x, cos, sin, cache, i);
      }
    }
    return norm(x);
  }
  torch::Tensor positions =
      step ? cache->position
           : torch::arange(pos, pos + t,
                           torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
  x = x + wpe(positions);  // (T, C) broadcast over B
  for (size_t i = 0; i < gpt2_blocks_.size(); ++i) {
    x = cache == nullptr ? run_block(i, x) : gpt2_blocks_[i]->forward(x, cache, i);
  }
  return ln_f(x);
}

torch::Tensor TransformerLMImpl::head(const torch::Tensor& h) {
  // GPT-2's head is the token embedding, transposed (weight tying).
  const torch::Tensor w = weight_casts_(lm_head ? lm_head->weight : wte->weight);  // (V, C)
  const std::int64_t v = w.size(0), rows = head_rows(v, h.device());
  if (rows == v) return linear_rows(h, w, {});  // (..., V)
  // On a GPU the product runs over rows padded to a multiple of 64 (head_rows), cut back here:
  // generation's logits are a few rows (loss() keeps the padded ones).
  return padded_head_logits(h, w, rows).narrow(-1, 0, v);  // (..., V)
}

torch::Tensor TransformerLMImpl::forward(const torch::Tensor& tokens) {
  return head(hidden(tokens));  // (B, T, V)
}

torch::Tensor TransformerLMImpl::forward_cached(const torch::Tensor& tokens, KVCache& cache) {
  torch::Tensor h = hidden(tokens, &cache);  // (B, T, C)
  cache.length += tokens.size(1);
  return head(h.select(1, h.size(1) - 1));  // (B, V): only the last position is needed
}

torch::Tensor TransformerLMImpl::forward_step(const torch::Tensor& tokens, KVCache& cache) {
  TORCH_CHECK(!cache.grow && !cache.k.empty() && cache.position.defined() && tokens.size(1) == 1,
              "forward_step: needs one token per row, a static cache and cache.position");
  const std::int64_t capacity = cache.k[0].size(2);
  // (1, 1, 1, capacity): broadcast over rows and heads; true where the step's query may look.
  cache.visible =
      (torch::arange(capacity, cache.position.options()) <= cache.position).view({1, 1, 1, -1});
  struct Reset {  // forward_cached's path again after the blocks, also when one throws
    torch::Tensor& visible;
    ~Reset() { visible = torch::Tensor(); }
  } reset{cache.visible};
  torch::Tensor h = hidden(tokens, &cache);  // (B, 1, C)
  return head(h.select(1, 0));               // (B, V)
}

torch::Tensor TransformerLMImpl::last_logits(const torch::Tensor& tokens) {
  return head(hidden(tokens).select(1, tokens.size(1) - 1));  // (B, V)
}

KVCache TransformerLMImpl::make_cache(std::int64_t batch, std::int64_t capacity, bool grow,
                                      const torch::TensorOptions& like) const {
  const ModelShape& s = options_.shape;
  KVCache cache;
  cache.grow = grow;
  cache.k.resize(static_cast<size_t>(s.n_layer));
  cache.v.resize(static_cast<size_t>(s.n_layer));
  if (grow) return cache;
  const std::int64_t hd = s.n_embd / s.n_head;
  // Zeros, not empty(): forward_step attends over the whole capacity, masking the positions not
  // yet written, and a masked NaN of uninitialised memory would still reach its output.
  for (size_t i = 0; i < cache.k.size(); ++i) {
    cache.k[i] = torch::zeros({batch, s.n_kv_head, capacity, hd}, like);  // (B, Hkv, cap, D)
    cache.v[i] = torch::zeros({batch, s.n_kv_head, capacity, hd}, like);
  }
  return cache;
}

torch::Tensor TransformerLMImpl::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
  if (options_.fused_loss) {
    torch::Tensor h = hidden(tokens);                                  // (B, T, C)
    const torch::Tensor& w = lm_head ? lm_head->weight : wte->weight;  // (V, C)
    return chunked_head_loss(h.reshape({-1, h.size(-1)}), w, targets.reshape({-1}),
                             options_.loss_chunk_rows, torch::GradMode::is_enabled(),
                             options_.cpu_kernels);
  }
  torch::Tensor h = hidden(tokens);
  h = h.reshape({-1, h.size(-1)});                                                 // (N, C)
  const torch::Tensor w = weight_casts_(lm_head ? lm_head->weight : wte->weight);  // (V, C)
  const std::int64_t v = w.size(0), rows = head_rows(v, h.device());
  // On a GPU, the logits of the padded rows whole: their padding columns take no share of the
  // softmax, so the loss needs no cut (padded_head_logits).
  torch::Tensor logits = rows == v ? linear_rows(h, w, {}) : padded_head_logits(h, w, rows);
  return cross_entropy_mean(logits, targets.reshape({-1}), options_.cpu_kernels,
                            options_.gpu_kernels);
}

void TransformerLMImpl::reset_parameters(std::uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto gen = at::detail::createCPUGenerator(seed);
  const double std = 0.02;
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(options_.shape.n_layer));
  // Draw on the CPU in a fixed order, then copy: the same seed gives the same weights on every
  // device and rank.
  auto normal = [&](torch::Tensor& p, double s) {
    torch::Tensor host = torch::empty(p.sizes(), torch::kFloat);
    host.normal_(0.0, s, gen);
    p.copy_(host);
  };
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    if (name.find(".lora_") != std::string::npos) continue;  // below, after every base weight
    bool is_norm = name.find("ln_") != std::string::npos || name.find("norm") != std::string::npos;
    bool residual = name.find("attn_proj.weight") != std::string::npos ||
                    name.find("mlp_proj.weight") != std::string::npos ||
                    name.find(".wo.weight") != std::string::npos ||
                    name.find(".w2.weight") != std::string::npos;
    if (is_norm) {
      p.fill_(name.find("bias") != std::string::npos ? 0.0 : 1.0);
    } else if (name.find("bias") != std::string::npos) {
      p.zero_();
    } else {
      normal(p, residual ? residual_std : std);
    }
  }
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    if (name.find(".lora_A") != std::string::npos) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(p.size(1)));
      torch::Tensor host = torch::empty(p.sizes(), torch::kFloat);
      host.uniform_(-bound, bound, gen);
      p.copy_(host);
    } else if (name.find(".lora_B") != std::string::npos) {
      p.zero_();
    }
  }
}

std::vector<std::string> load_tensor_parallel_part(TransformerLM& local, TransformerLM& full,
                                                   std::int64_t rank, std::int64_t t) {
  torch::NoGradGuard no_grad;
  const ModelShape& s = full->options().shape;
  const std::int64_t hd = s.n_embd / s.n_head;
  auto whole = full->named_parameters();
  std::vector<std::string> split;
  for (auto& item : local->named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const torch::Tensor& w = whole[name];
    if (p.sizes() == w.sizes()) {
      p.copy_(w);
      continue;
    }
    split.push_back(name);
    const bool fused = name.find("c_attn.") != std::string::npos;
    if (fused) {
      // GPT-2's fused rows [Q | K | V]: this rank's heads of each.
      const std::int64_t q = s.n_head * hd, kv = s.n_kv_head * hd;
      p.copy_(torch::cat({w.narrow(0, rank * q / t, q / t), w.narrow(0, q + rank * kv / t, kv / t),
                          w.narrow(0, q + kv + rank * kv / t, kv / t)}));
      continue;
    }
    // Column-parallel: rows; row-parallel: columns. The one dimension that differs says which.
    const std::int64_t dim = p.size(0) != w.size(0) ? 0 : 1;
    p.copy_(w.narrow(dim, rank * p.size(dim), p.size(dim)));
  }
  return split;
}

std::vector<NamedArray> named_arrays(const torch::nn::Module& module) {
  std::vector<NamedArray> out;
  for (const auto& item : module.named_parameters()) {
    torch::Tensor host = item.value().detach().to(torch::kCPU, torch::kFloat).contiguous();
    NamedArray a;
    a.name = item.key();
    a.shape = host.sizes().vec();
    a.values.assign(host.data_ptr<float>(), host.data_ptr<float>() + host.numel());
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace sweepbench
