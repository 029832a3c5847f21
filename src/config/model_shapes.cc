#include "config/model_shapes.h"

#include <algorithm>

namespace sweepbench {
namespace {

// Appends one preset. (A braced table of these trips GCC 12's -Wmaybe-uninitialized.)
void add(std::vector<ModelPreset>& presets, const char* name, const char* arch,
         std::int64_t n_layer, std::int64_t n_embd, std::int64_t n_head, std::int64_t n_kv_head,
         std::int64_t ffn_dim, std::int64_t vocab_size, std::int64_t block_size,
         const char* description, double rope_theta = 10000.0) {
  ModelPreset p;
  p.rope_theta = rope_theta;
  p.name = name;
  p.shape.arch = arch;
  p.shape.n_layer = n_layer;
  p.shape.n_embd = n_embd;
  p.shape.n_head = n_head;
  p.shape.n_kv_head = n_kv_head;
  p.shape.ffn_dim = ffn_dim;
  p.shape.vocab_size = vocab_size;
  p.shape.block_size = block_size;
  p.description = description;
  presets.push_back(std::move(p));
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  // Shapes from the published configs (GPT-2: Radford et al. 2019 / HF gpt2*; Llama 2: Touvron
  // et al. 2023; Llama 3: Meta 2024; Mistral 7B v0.1: Jiang et al. 2023, trained here with full
  // causal attention, not its 4096-token sliding window). Tiny presets exist for tests.
  static const std::vector<ModelPreset> presets = [] {
    std::vector<ModelPreset> p;
    add(p, "gpt2", "gpt2", 12, 768, 12, 12, 3072, 50257, 1024, "GPT-2 small, 124M");
    add(p, "gpt2-medium", "gpt2", 24, 1024, 16, 16, 4096, 50257, 1024, "GPT-2 medium, 355M");
    add(p, "gpt2-large", "gpt2", 36, 1280, 20, 20, 5120, 50257, 1024, "GPT-2 large, 774M");
    add(p, "gpt2-xl", "gpt2", 48, 1600, 25, 25, 6400, 50257, 1024, "GPT-2 XL, 1.6B");
    add(p, "llama2-7b", "llama", 32, 4096, 32, 32, 11008, 32000, 4096, "Llama 2 7B");
    add(p, "llama2-13b", "llama", 40, 5120, 40, 40, 13824, 32000, 4096, "Llama 2 13B");
    add(p, "llama2-70b", "llama", 80, 8192, 64, 8, 28672, 32000, 4096, "Llama 2 70B (GQA)");
    add(p, "llama3-8b", "llama", 32, 4096, 32, 8, 14336, 128256, 8192, "Llama 3 8B (GQA)",
        500000.0);
    add(p, "mistral-7b", "llama", 32, 4096, 32, 8, 14336, 32000, 32768, "Mistral 7B v0.1 (GQA)");
    add(p, "gpt2-tiny", "gpt2", 2, 64, 4, 4, 256, 512, 128, "2-layer GPT-2 for tests");
    add(p, "llama-tiny", "llama", 2, 64, 4, 2, 176, 512, 128, "2-layer Llama with GQA, for tests");
    return p;
  }();
  return presets;
}

const ModelPreset* find_model_preset(std::string_view name) {
  for (const ModelPreset& p : model_presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

double rope_theta_of(std::string_view preset) {
  const ModelPreset* p = find_model_preset(preset);
  return p != nullptr ? p->rope_theta : 10000.0;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const ModelPreset& p : model_presets()) names.push_back(p.name);
  return names;
}

std::vector<std::string> model_arch_names() { return {"gpt2", "llama"}; }

std::int64_t ffn_dim_for(const std::string& arch, std::int64_t n_embd) {
  if (arch == "llama") {
    constexpr std::int64_t kMultiple = 256;
    std::int64_t hidden = 2 * (4 * n_embd) / 3;
    return (hidden + kMultiple - 1) / kMultiple * kMultiple;
  }
  return 4 * n_embd;
}

std::int64_t parameter_count(const ModelShape& s) {
  const std::int64_t d = s.n_embd;
  const std::int64_t head_dim = s.n_head > 0 ? d / s.n_head : 0;
  const std::int64_t kv_dim = s.n_kv_head * head_dim;
  const std::int64_t f = s.ffn_dim;
  if (s.arch == "llama") {
    // RMSNorm weights, bias-free q/k/v/o, SwiGLU (w1, w3: d->f; w2: f->d), untied head.
    std::int64_t per_layer = d                         // attention RMSNorm
                             + d * d + 2 * d * kv_dim  // wq, wk, wv
                             + d * d                   // wo
                             + d                       // ffn RMSNorm
                             + 3 * d * f;              // w1, w2, w3
    return s.vocab_size * d                            // token embedding
           + s.n_layer * per_layer + d                 // final RMSNorm
           + s.vocab_size * d;                         // output head
  }
  // GPT-2: LayerNorm (weight+bias), fused qkv with bias, projections with bias, tied head.
  std::int64_t qkv_out = d + 2 * kv_dim;
  std::int64_t per_layer = 2 * d                    // ln_1
                           + d * qkv_out + qkv_out  // c_attn
                           + d * d + d              // attn c_proj
                           + 2 * d                  // ln_2
                           + d * f + f              // mlp c_fc
                           + f * d + d;             // mlp c_proj
  return s.vocab_size * d + s.block_size * d + s.n_layer * per_layer + 2 * d;
}

std::int64_t position_embedding_count(const ModelShape& s) {
  return s.arch == "gpt2" ? s.block_size * s.n_embd : 0;
}

std::int64_t loss_chunk_rows(std::int64_t vocab_size, std::int64_t asked) {
  if (asked > 0) return asked;
  return std::max<std::int64_t>(64,
                                (std::int64_t{16} << 20) / std::max<std::int64_t>(1, vocab_size));
}

RankModel rank_model(const ModelShape& s, int t) {
  auto dbl = [](std::int64_t v) { return static_cast<double>(v); };
  const double d = dbl(s.n_embd), f = dbl(s.ffn_dim), v = dbl(s.vocab_size), l = dbl(s.n_layer);
  const double kv = dbl(s.n_kv_head) * (s.n_head > 0 ? d / dbl(s.n_head) : 0);
  const double split = std::max(1, t);
  RankModel m;
  if (s.arch == "llama") {
    const double block = (d * d + 2 * d * kv + d * d + 3 * d * f) / split;
    m.matrices = v * d + l * block;  // the head and the blocks: the token embedding is not cast
    m.root = 2 * v * d + d;
    m.block = block + 2 * d;
    m.parameters = m.root + l * m.block;
    return m;
  }
  const double block = (d * (d + 2 * kv) + d * d + 2 * d * f) / split;
  const double biases =
      (d + 2 * kv + f) / split + 2 * d;  // c_attn and c_fc split; projections whole
  m.matrices = v * d + l * block;
  m.root = v * d + dbl(s.block_size) * d + 2 * d;
  m.block = block + biases + 4 * d;
  m.parameters = m.root + l * m.block;
  return m;
}

double training_flops_per_token(const ModelShape& s, std::int64_t seq_len) {
  return training_flops_per_token_6n(s) + 12.0 * static_cast<double>(s.n_layer) *
                                              static_cast<double>(s.n_embd) *
                                              static_cast<double>(seq_len);
}

double training_flops_per_token_6n(const ModelShape& s) {
  return 6.0 * static_cast<double>(parameter_count(s) - position_embedding_count(s));
}

std::vector<Projection> block_projections(const ModelShape& s) {
  const std::int64_t c = s.n_embd, kv = s.n_kv_head * (s.n_embd / s.n_head), f = s.ffn_dim;
  if (s.arch == "llama") {
    return {{"wq", c, c}, {"wk", c, kv}, {"wv", c, kv}, {"wo", c, c},
            {"w1", c, f}, {"w2", f, c},  {"w3", c, f}};
  }
  return {{"c_attn", c, c + 2 * kv}, {"attn_proj", c, c}, {"c_fc", c, f}, {"mlp_proj", f, c}};
}

std::vector<std::string> default_lora_targets(const std::string& arch) {
  if (arch == "llama") return {"wq", "wv"};
  return {"c_attn"};
}

std::int64_t lora_parameter_count(const ModelShape& s, std::int64_t r,
                                  const std::vector<std::string>& targets) {
  std::int64_t per_block = 0;
  for (const Projection& p : block_projections(s)) {
    if (std::find(targets.begin(), targets.end(), p.name) != targets.end())
      per_block += r * (p.in + p.out);
  }
  return per_block * s.n_layer;
}

double lora_training_flops_per_token(const ModelShape& s, std::int64_t seq_len,
                                     std::int64_t lora_parameters) {
  const double frozen = static_cast<double>(parameter_count(s) - position_embedding_count(s));
  return 4.0 * frozen + 6.0 * static_cast<double>(lora_parameters) +
         12.0 * static_cast<double>(s.n_layer) * static_cast<double>(s.n_embd) *
             static_cast<double>(seq_len);
}

InferenceCost inference_cost(const ModelShape& s, std::int64_t sequences, std::int64_t input,
                             std::int64_t output, int element_bytes) {
  const double rows = static_cast<double>(sequences);
  const double in = static_cast<double>(input), out = static_cast<double>(output);
  const double layers = static_cast<double>(s.n_layer), d = static_cast<double>(s.n_embd);
  const double vocab = static_cast<double>(s.vocab_size);
  const double bytes = static_cast<double>(element_bytes);
  const double params = static_cast<double>(parameter_count(s));
  const double embeddings = vocab * d + static_cast<double>(position_embedding_count(s));
  const double head = s.arch == "llama" ? vocab * d : 0;  // GPT-2's head is the embedding
  const double body = params - embeddings - head;
  const double kv_per_token = 2 * layers * static_cast<double>(s.n_kv_head) *
                              (d / static_cast<double>(s.n_head)) * bytes;  // K and V, all layers

  InferenceCost c;
  // Prompt token i (0-based) attends to i + 1 keys: sum = in (in + 1) / 2.
  c.prefill_flops = rows * (2 * body * in + 4 * layers * d * in * (in + 1) / 2 + 2 * vocab * d);
  // Decode step j = 1 .. out - 1 processes position in + j - 1, which attends to in + j keys.
  const double steps = std::max(0.0, out - 1);
  const double keys = steps * in + steps * (steps + 1) / 2;  // sum of in + j over the steps
  c.decode_flops = rows * (steps * (2 * body + 2 * vocab * d) + 4 * layers * d * keys);
  c.weight_bytes = params * bytes;
  // The weights a step reads: all but the position table and, where the head is separate, the
  // input embedding (only `rows` rows of it are gathered).
  const double separate_input_table = head;  // Llama's embedding is as large as its head
  const double read_weights =
      (params - static_cast<double>(position_embedding_count(s)) - separate_input_table) * bytes;
  c.decode_bytes = steps * read_weights + rows * kv_per_token * keys;
  c.kv_cache_bytes = rows * kv_per_token * (in + out);
  return c;
}

}  // namespace sweepbench
