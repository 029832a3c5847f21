// Model presets and the arithmetic on their shapes: parameter counts and FLOPs per token.
//
// Torch-free on purpose: the planner checks shapes before anything runs, the trainer checks its
// built model against parameter_count(), and the extractor computes MFU, all from this one file.
// FLOPs convention (PaLM appendix B, nanoGPT, torchtitan): a training token costs
//   6 N + 12 L d T
// with N the parameters without position embeddings, L layers, d model width, T sequence length:
// 6N for the matmuls with weights (2 forward, 4 backward) and 12 L d T for attention's QK^T and
// AV products. docs/metrics.md derives it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sweepbench {

struct ModelShape {
  std::string arch;  // "gpt2" or "llama"
  std::int64_t n_layer = 0;
  std::int64_t n_embd = 0;
  std::int64_t n_head = 0;
  std::int64_t n_kv_head = 0;
  std::int64_t ffn_dim = 0;
  std::int64_t vocab_size = 0;
  std::int64_t block_size = 0;
};

struct ModelPreset {
  std::string name;
  ModelShape shape;
  std::string description;
  double rope_theta = 10000.0;  // llama: the RoPE base the family was trained with
};

const std::vector<ModelPreset>& model_presets();
const ModelPreset* find_model_preset(std::string_view name);
// The RoPE base of a preset's family (Llama 3 500000, the others 10000); 10000 for a name the
// table lacks.
double rope_theta_of(std::string_view preset);
std::vector<std::string> model_preset_names();
std::vector<std::string> model_arch_names();

// The MLP width an architecture gives a model of width `n_embd` (n_embd <= 2^20): GPT-2 4 d (as
// Hugging Face's GPT2Config derives n_inner); Llama 8/3 d rounded up to a multiple of 256 (Llama
// 2 7B: 4096 -> 11008).
std::int64_t ffn_dim_for(const std::string& arch, std::int64_t n_embd);

// Every trainable parameter of the model as bench-train builds it (tied head counted once).
std::int64_t parameter_count(const ModelShape& shape);
// The learned position embeddings (GPT-2: block_size x n_embd; Llama: none, rotary).
std::int64_t position_embedding_count(const ModelShape& shape);
// One rank's share of the model with tensor parallelism t (1: the whole model): each block's
// projections (and their biases) split t ways; embeddings, norms and the head whole on every
// rank. The memory model's parameters and casts, the time model's communication.
struct RankModel {
  double parameters = 0;  // every parameter this rank holds
  double matrices = 0;    // the weight matrices among them (cast once a step in bf16 and fp16)
  double root = 0;        // outside the blocks: embeddings, the head, the final norm
  double block = 0;       // one block's
};
RankModel rank_model(const ModelShape& shape, int tensor_parallel);
// The tokens a chunk of the chunked loss (train.fused_loss) takes: `asked`
// (train.loss_chunk_rows) when above 0, else whole rows of 16 Mi logits of the vocabulary (about
// 64 MB in fp32), at least 64. bench-train chunks by it and the memory model predicts by it.
std::int64_t loss_chunk_rows(std::int64_t vocab_size, std::int64_t asked);
// 6 N + 12 L d T, N = parameter_count - position_embedding_count.
double training_flops_per_token(const ModelShape& shape, std::int64_t seq_len);
// The plain 6 N figure some guides use.
double training_flops_per_token_6n(const ModelShape& shape);

// LoRA (train.peft: lora). A projection of a block that can take an adapter, by the name the
// model gives it, with its input and output widths.
struct Projection {
  std::string name;
  std::int64_t in = 0, out = 0;
};
// A block's projections: gpt2 c_attn, attn_proj, c_fc, mlp_proj; llama wq, wk, wv, wo, w1, w2, w3.
std::vector<Projection> block_projections(const ModelShape& shape);
// The targets Hugging Face peft picks for the architecture: gpt2 c_attn; llama wq, wv.
std::vector<std::string> default_lora_targets(const std::string& arch);
// The adapters' parameters: r (d_in + d_out) per targeted projection and block.
std::int64_t lora_parameter_count(const ModelShape& shape, std::int64_t r,
                                  const std::vector<std::string>& targets);
// A LoRA step per token: the frozen matmuls forward (2 N) and for the gradient of their input
// (2 N), no weight gradients; the adapters' 6 N_lora; attention's 12 L d T as before.
double lora_training_flops_per_token(const ModelShape& shape, std::int64_t seq_len,
                                     std::int64_t lora_parameters);

// The arithmetic of one generation (docs/metrics.md, "Inference"): `sequences` rows (batch x
// beams) of `input` prompt tokens, `output` tokens generated, every element `element_bytes` wide.
// Per processed token the blocks cost 2 N_body FLOPs (N_body: the parameters outside the token
// and position embeddings and the head) plus 4 L d per key it attends to; each position whose
// logits are computed costs 2 V d more (the prefill computes only the last one's).
struct InferenceCost {
  double prefill_flops = 0;  // the prompt: input tokens of every row, one row of logits each
  double decode_flops = 0;   // the output - 1 decode steps together
  // Bytes a decode step must read: every weight once (the head included, the input embedding
  // table only when it is also the head) and the whole KV cache so far; summed over the steps.
  double decode_bytes = 0;
  double weight_bytes = 0;    // every parameter
  double kv_cache_bytes = 0;  // 2 L Hkv D bytes x rows x (input + output)
};
InferenceCost inference_cost(const ModelShape& shape, std::int64_t sequences, std::int64_t input,
                             std::int64_t output, int element_bytes);

}  // namespace sweepbench
