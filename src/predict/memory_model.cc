#include "predict/memory_model.h"

#include <algorithm>
#include <cmath>

#include "config/config.h"
#include "config/settings.h"
#include "metrics/summary.h"

namespace sweepbench {
namespace {

double dbl(std::int64_t v) { return static_cast<double>(v); }

// Bytes a block keeps a token for its backward pass (N tokens: N x this x layers). The residual
// stream (the block's input and the sum after attention) is fp32 in every dtype, 8 d; the rest
// are products, attention's inputs and output and the MLP's activations, in the autocast dtype
// (e bytes); with tensor parallelism t the split ones are a rank's share. Statistics: LayerNorm's
// mean and 1/std (GPT-2, two norms) or RMSNorm's 1/rms (Llama), and attention's log-sum-exp per
// head, fp32.
// With LoRA a frozen projection keeps no input for a weight gradient: an input no target reads
// and no other operation needs is not kept (`targets`: the projections with adapters).
double block_bytes_per_token(const ModelShape& s, int e, int t, bool lora,
                             const std::vector<std::string>& targets) {
  const double d = dbl(s.n_embd), f = dbl(s.ffn_dim) / t;
  const double heads = dbl(s.n_head) / t;
  const double kv = dbl(s.n_kv_head) * (s.n_head > 0 ? d / dbl(s.n_head) : 0) / t;
  const double q = d / t;
  auto adapted = [&](const char* name) {
    return std::find(targets.begin(), targets.end(), name) != targets.end();
  };
  double frozen = 0;
  if (lora && s.arch == "llama") {
    if (!adapted("wq") && !adapted("wk") && !adapted("wv"))
      frozen += d;                                      // attention's normed input
    if (!adapted("wo")) frozen += q;                    // attention's output
    if (!adapted("w1") && !adapted("w3")) frozen += d;  // the MLP's normed input
    if (!adapted("w2")) frozen += f;                    // the product
  } else if (lora) {
    if (!adapted("c_attn")) frozen += d;    // attention's normed input
    if (!adapted("c_fc")) frozen += d;      // the MLP's normed input
    if (!adapted("mlp_proj")) frozen += f;  // GELU's output
  }
  if (s.arch == "llama") {
    // Normed inputs of attention and MLP (2 d), q, k, v and the rotated q, k (2 q + 3 kv), the
    // attention output and its transpose (2 q), w1 and w3's outputs, SiLU's and the product
    // (4 f).
    return 8 * d + e * (2 * d + 4 * q + 3 * kv + 4 * f - frozen) + 4 * (2 + heads);
  }
  // Normed inputs (2 d), q, k, v (q + 2 kv), the attention output (q), c_fc's output and GELU's
  // (2 f).
  return 8 * d + e * (2 * d + 2 * q + 2 * kv + 2 * f - frozen) + 4 * (4 + heads);
}

// A parameter of a rank's model, in the order bench-train registers them (model.cc), which is
// the order ZeRO's flat buffers take them in (zero.h, ZeroBuffers::build).
struct Parameter {
  double numel = 0;
  bool matrix = false;  // two dimensions: weight decay, ZeRO's first group of buffers
  bool split = false;   // tensor parallelism: a part of the whole, in buffers of their own
  bool trained = true;  // with LoRA only the adapters
  int block = -1;       // its block, or -1: the embeddings, the final norm, the head
};

std::vector<Parameter> parameters_of(const ModelShape& s, std::int64_t t, bool lora, std::int64_t r,
                                     const std::vector<std::string>& targets) {
  std::vector<Parameter> out;
  const double d = dbl(s.n_embd), f = dbl(s.ffn_dim / t), v = dbl(s.vocab_size);
  const double hd = s.n_head > 0 ? dbl(s.n_embd / s.n_head) : 0;
  const double q = dbl(s.n_head / t) * hd, kv = dbl(s.n_kv_head / t) * hd;
  auto add = [&](double numel, bool matrix, int block) {
    out.push_back({numel, matrix, false, !lora, block});
  };
  // A projection: its weight (out x in), its bias, and LoRA's A (r x in) and B (out x r).
  auto linear = [&](const char* name, double in, double o, bool bias, int block) {
    add(in * o, true, block);
    if (bias) add(o, false, block);
    if (lora && std::find(targets.begin(), targets.end(), name) != targets.end()) {
      out.push_back({dbl(r) * in, true, false, true, block});
      out.push_back({o * dbl(r), true, false, true, block});
    }
  };
  add(v * d, true, -1);  // the token embedding (GPT-2: also the head)
  if (s.arch == "llama") {
    for (int b = 0; b < static_cast<int>(s.n_layer); ++b) {
      add(d, false, b);  // attention_norm
      linear("wq", d, q, false, b);
      linear("wk", d, kv, false, b);
      linear("wv", d, kv, false, b);
      linear("wo", q, d, false, b);
      add(d, false, b);  // ffn_norm
      linear("w1", d, f, false, b);
      linear("w2", f, d, false, b);
      linear("w3", d, f, false, b);
    }
    add(d, false, -1);                   // norm
    linear("lm_head", d, v, false, -1);  // no adapter
    return out;
  }
  add(dbl(s.block_size) * d, true, -1);  // wpe
  for (int b = 0; b < static_cast<int>(s.n_layer); ++b) {
    add(d, false, b);  // ln_1
    add(d, false, b);
    linear("c_attn", d, q + 2 * kv, true, b);
    linear("attn_proj", q, d, true, b);
    add(d, false, b);  // ln_2
    add(d, false, b);
    linear("c_fc", d, f, true, b);
    linear("mlp_proj", f, d, true, b);
  }
  add(d, false, -1);  // ln_f
  add(d, false, -1);
  return out;
}

// What ZeRO-2's gradient buckets hold beyond the states (zero.h): the trained parameters in
// model order, cut per weight-decay group (and tensor-parallel part) into buckets of at most
// train.bucket_mb (a larger parameter alone), each reduce-scattered when backward has given every
// one of its parameters a gradient, and those gradients freed then.
struct Zero2Buckets {
  // The largest bucket, padded to a multiple of the ranks, and its piece, in fp32: the reduce's
  // scratch buffers (flat_scratch_, piece_scratch_), held from the build on.
  double scratch = 0;
  // The gradients held at once in the backward pass, with what else is live then: at the
  // token embedding's gradient, the last, every bucket not yet reduced and the embedding's dense
  // gradient (ZeRO-2 cannot add its rows in place as stages 0 and 1 do: its reduce waits on the
  // accumulator), GPT-2's summed with the tied head's (12 V d in fp32 at that moment: the head's
  // part, the embedding's and their sum; 8 V d in bf16, where the head's part is an fp32 cast the
  // other is added into; measured); before it, at each parameter's gradient, the activations of
  // the blocks below it (with checkpointing their inputs and a block's recomputation) and the
  // tied head's part, waiting for the embedding's.
  double backward = 0;
  // Building the buffers, over the states: a bucket's buffers filled while the weights of it and
  // of every later bucket are still the model's own (4 bytes a parameter); the most at any bucket.
  double build = 0;
};

Zero2Buckets zero2_buckets(const std::vector<Parameter>& ps, int ranks, double bucket_mb,
                           double trained_state_bytes, bool tied, int e, double kept_per_block,
                           double recompute) {
  const double bucket = std::max<double>(
      1, static_cast<double>(static_cast<std::int64_t>(bucket_mb * 1024 * 1024) / 4));
  std::vector<double> numel;
  std::vector<size_t> count;
  std::vector<size_t> bucket_of(ps.size(), 0);
  for (bool split : {false, true}) {
    for (bool decay : {true, false}) {
      const size_t first = numel.size();
      for (size_t i = 0; i < ps.size(); ++i) {
        const Parameter& p = ps[i];
        if (!p.trained || p.matrix != decay || p.split != split) continue;
        if (numel.size() == first || numel.back() + p.numel > bucket) {
          numel.push_back(0);
          count.push_back(0);
        }
        numel.back() += p.numel;
        ++count.back();
        bucket_of[i] = numel.size() - 1;
      }
    }
  }
  Zero2Buckets z;
  if (numel.empty()) return z;
  const double n = ranks;
  double largest = 0, trained = 0;
  for (double b : numel) {
    largest = std::max(largest, std::ceil(b / n) * n);
    trained += b;
  }
  z.scratch = 4 * (largest + largest / n);
  // Building: bucket k's buffers (the states' bytes a trained parameter) beside the weights of
  // bucket k onwards.
  const double rate = trained > 0 ? trained_state_bytes / trained : 0;
  double before = 0;
  for (double b : numel) {
    z.build = std::max(z.build, 4 * (trained - before) - rate * (trained - before - b));
    before += b;
  }
  // The backward pass takes the parameters in reverse order; the token embedding, registered
  // first, gets its gradient last.
  const double embedding = ps.front().numel;
  double held = 0, waiting = tied ? 4 * embedding : 0;
  for (size_t i = ps.size(); i-- > 0;) {
    const Parameter& p = ps[i];
    if (!p.trained) continue;
    if (i == 0) {
      z.backward = std::max(z.backward, held + (tied ? (e >= 4 ? 12 : 8) : 4) * embedding);
      waiting = 0;
    } else {
      const double below = p.block > 0 ? kept_per_block * p.block : 0;
      z.backward = std::max(z.backward,
                            held + 4 * p.numel + waiting + below + (p.block >= 0 ? recompute : 0));
    }
    held += 4 * p.numel;
    if (--count[bucket_of[i]] == 0) held -= 4 * numel[bucket_of[i]];
  }
  return z;
}

}  // namespace

MemoryPrediction predict_training_memory(const TrainingMemoryInput& in) {
  const ModelShape& s = in.shape;
  const int t = std::max(1, in.tensor_parallel);
  const int e = in.element_bytes;
  const double d = dbl(s.n_embd), n = dbl(in.micro_batch) * dbl(in.seq_len), l = dbl(s.n_layer);
  // A GPU pads the head to a multiple of 64 rows for cuBLAS (model.cc head()).
  const double v = in.gpu ? dbl((s.vocab_size + 63) / 64 * 64) : dbl(s.vocab_size);
  const RankModel model = rank_model(s, t);
  const std::vector<std::string> targets =
      in.lora_targets.empty() ? default_lora_targets(s.arch) : in.lora_targets;
  const double trainable =
      in.lora ? dbl(lora_parameter_count(s, in.lora_r, targets)) / t : model.parameters;
  const int data_parallel = std::max(1, in.world_size / t);
  // With LoRA the rank holds the frozen base and the adapters.
  double states = model_states_bytes(model.parameters + (in.lora ? trainable : 0), data_parallel,
                                     in.zero_stage, in.lora ? trainable : 0, in.offload_optimizer);
  // ZeRO-3 over several ranks frees each block's gathered values after use, but keeps the root's
  // (embeddings, head) whole, and a piece more of them (measured: 4 (1 + 1/N) bytes a root
  // parameter); while a block computes, its whole values and gradient (8 bytes a parameter).
  double gathered = 0;
  if (in.zero_stage >= 3 && data_parallel > 1) {
    states += 4 * model.root * (1 + 1.0 / data_parallel);
    gathered = 8 * model.block;
  }
  // bf16 and fp16: every weight matrix cast once a step and kept for it (WeightCasts); with
  // checkpointing (and no LoRA, whose frozen weights' casts stay) the blocks' casts are not held
  // at the peak, the head's is.
  // ZeRO-3 over several ranks keeps no casts (each is made at its use): the head's and one
  // block's at a time.
  const bool zero3 = in.zero_stage >= 3 && std::max(1, in.world_size / t) > 1;
  const double copies = e >= 4                                    ? 0.0
                        : zero3                                   ? 2.0 * (v * d + model.block)
                        : in.activation_checkpointing && !in.lora ? 2.0 * v * d
                                                                  : 2.0 * model.matrices;
  const double block = block_bytes_per_token(s, e, t, in.lora, targets);
  const double kept =
      in.activation_checkpointing ? n * l * 4 * d : n * l * block;  // ckpt: block inputs, fp32
  double head = 0;
  if (in.fused_loss) {
    const double rows = std::min(n, dbl(loss_chunk_rows(s.vocab_size, in.loss_chunk_rows)));
    // A chunk's logits and their gradient in fp32 (4 + 4; in bf16 and fp16 also the product's
    // copy and the gradient's in the autocast dtype and a cast, 6 more; on a GPU the padded
    // product's unpadded copy, e), the head's gradient summed in fp32 (8 V d: the sum and a
    // chunk's share; none with LoRA), and per token the hidden state's gradient and the loss's
    // pieces.
    const double per_logit = 8.0 + (e < 4 ? 6 : 0) + (in.gpu ? e : 0);
    head = rows * v * per_logit + (in.lora ? 0 : 8 * v * d) + n * (12 * d + 24);
  } else {
    // The logits (e), on a GPU their unpadded copy (e), in bf16 and fp16 their fp32 cast (4),
    // log-softmax's output (4); with the head weight's fp32 gradient (4 V d) on a GPU. On a CPU
    // the gradient comes when fewer logits are left (measured: 2.75 bytes a logit fewer), which
    // decides the peak when the tokens are few against the width.
    const double per_token = e + (in.gpu ? e : 0) + (e < 4 ? 4 : 0) + 4;
    const double gradient = in.lora ? 0 : 4 * v * d;
    head = n * (v * per_token + 8 * d + 24) + (in.gpu ? gradient : 0);
    if (!in.gpu) head = std::max(head, gradient + n * (v * (per_token - 2.75) + 8 * d + 24));
  }
  // Checkpointing recomputes one block at a time in the backward pass, after the head's terms
  // are gone: its activations and, while it back-propagates, the gradients of its widest
  // tensors (fp32, measured: 4 (f + 2 d) a token).
  const double recompute =
      in.activation_checkpointing ? n * (block + 4 * (dbl(s.ffn_dim) / t + 2 * d)) : 0;
  const double activations = kept + std::max(head, recompute) + gathered;

  MemoryPrediction p;
  // Building: the states and an fp32 copy of the trained weights while the flat buffers fill, or
  // (LoRA) the largest weight drawn on the host before its copy, the token embedding.
  p.init_peak = states + 4 * std::max(trainable, dbl(s.vocab_size) * d);
  // ZeRO-2 over several ranks: the buckets' scratch buffers from the build on, and a second
  // candidate for the step's peak, the end of the backward pass, where the gradients of the
  // buckets not yet reduced are held (with every weight cast of the step in bf16 and fp16).
  const bool zero2 = in.zero_stage == 2 && data_parallel > 1;
  double buckets = 0, gradients = 0;
  const double all_copies = zero2 && e < 4 ? 2.0 * model.matrices : 0.0;
  if (zero2) {
    std::vector<Parameter> ps = parameters_of(s, t, in.lora, in.lora_r, targets);
    if (t > 1) {
      const std::vector<Parameter> whole = parameters_of(s, 1, in.lora, in.lora_r, targets);
      for (size_t i = 0; i < ps.size(); ++i) ps[i].split = ps[i].numel != whole[i].numel;
    }
    double frozen = 0, all = 0, largest = 0;
    for (const Parameter& q : ps) {
      if (!q.trained) frozen += 4 * q.numel;
      all += q.numel;
      largest = std::max(largest, q.numel);
    }
    const Zero2Buckets z = zero2_buckets(ps, data_parallel, in.bucket_mb, states - frozen,
                                         s.arch != "llama" && !in.lora, e,
                                         in.activation_checkpointing ? 4 * n * d : n * block,
                                         in.activation_checkpointing ? recompute : 0);
    buckets = z.scratch;
    gradients = z.backward;
    // Building: the model's weights and the largest drawn again on the host (reset_parameters),
    // the buffers filling (z.build), or all of them and the scratch; the first two replace the
    // other stages' rule, which the buckets' smaller buffers do not reach.
    p.init_peak = std::max({4 * all + 4 * largest, states + z.build, states + buckets});
  }
  const bool held_gradients = zero2 && all_copies + gradients > copies + activations;
  p.step_peak = states + buckets + (held_gradients ? all_copies + gradients : copies + activations);
  p.peak = std::max(p.init_peak, p.step_peak);
  p.terms = {{"model_states", states}};
  if (buckets > 0) p.terms.push_back({"buckets", buckets});
  if (held_gradients) {
    p.terms.push_back({"weight_copies", all_copies});
    p.terms.push_back({"gradients", gradients});
    return p;
  }
  p.terms.push_back({"weight_copies", copies});
  p.terms.push_back({"activations", kept});
  p.terms.push_back({in.activation_checkpointing && recompute > head ? "recompute" : "head",
                     std::max(head, recompute)});
  if (gathered > 0) p.terms.push_back({"gathered", gathered});
  return p;
}

double resident_basis_of(const TrainingMemoryInput& in, double peak) {
  const bool sharded = in.zero_stage == 1 || in.zero_stage == 2;
  if (in.gpu || (!in.activation_checkpointing && !sharded)) return peak;
  TrainingMemoryInput whole = in;
  whole.activation_checkpointing = false;
  if (sharded) whole.zero_stage = 0;
  return peak + kResidentKeptShare * std::max(0.0, predict_training_memory(whole).peak - peak);
}

MemoryPrediction predict_inference_memory(const InferenceMemoryInput& in) {
  const InferenceCost cost =
      inference_cost(in.shape, in.sequences, in.input_tokens, in.output_tokens, in.element_bytes);
  const ModelShape& s = in.shape;
  const double d = dbl(s.n_embd), f = dbl(s.ffn_dim), e = in.element_bytes;
  const double v = dbl(s.vocab_size), padded = dbl((s.vocab_size + 63) / 64 * 64);
  const double rows = dbl(in.sequences);
  // The longest sequence one forward pass takes: the prompt, or without a cache the prompt and
  // every token but the last (each decode step runs the whole prefix again).
  const double tokens = dbl(in.input_tokens) +
                        (in.kv_cache ? 0 : dbl(std::max<std::int64_t>(0, in.output_tokens - 1)));
  // The largest transient of such a pass: one block's residual stream and normed input, q, k, v
  // and the attention's output (6 d) and the MLP's two f-wide activations over those tokens, the
  // last position's logits (fp32), and on a GPU with a vocabulary not a multiple of 64 the
  // head's padded copy (model.cc head()).
  const double prefill = rows * tokens * e * (6 * d + 2 * f) + rows * v * 4 +
                         (in.gpu && padded != v ? padded * d * e : 0);
  MemoryPrediction p;
  // bench-infer builds the model in fp32 and then casts it: on a CPU, where both are counted,
  // the fp32 weights and the largest cast matrix (the token embedding) at once.
  p.init_peak = in.gpu || e >= 4 ? cost.weight_bytes : cost.weight_bytes * 4 / e + v * d * e;
  const double cache = in.kv_cache ? cost.kv_cache_bytes : 0;
  p.step_peak = cost.weight_bytes + cache + prefill;
  p.peak = std::max(p.init_peak, p.step_peak);
  p.terms = {{"weights", cost.weight_bytes}, {"kv_cache", cache}, {"prefill", prefill}};
  return p;
}

bool point_runs_on_gpu(const Value& resolved) {
  const Settings s = Settings::of(resolved);
  if (s.launch.device == Device::kCuda) return true;
  return s.launch.device == Device::kAuto && s.launch.gpus_per_rank > 0;
}

std::string predicted_benchmark(const Value& resolved) {
  const Value* benchmark = resolved.find_path("benchmark");
  const std::string own =
      benchmark != nullptr && benchmark->is_string() ? benchmark->as_string() : "train";
  if (own != "command") return own;
  const Value* as = resolved.find_path("command.predict_as");
  if (as == nullptr || !as->is_string() || as->as_string() == "none") return "";
  return as->as_string();
}

namespace {

// The figure that decides an OOM, from the allocated peak: on a GPU the device's memory, on a CPU
// the resident set (from `resident_basis`, the counted peak it follows); neither for a command's
// own runtime.
void set_deciding(bool own, bool gpu, double resident_basis, MemoryPrediction* out) {
  out->gpu = gpu;
  if (own) out->resident = gpu ? device_bytes_of(out->peak) : resident_bytes_of(resident_basis);
}

}  // namespace

bool predict_point_memory(const Value& resolved, MemoryPrediction* out) {
  const Settings s = Settings::of(resolved);
  const bool gpu = point_runs_on_gpu(resolved);
  auto bytes_of = [](DType t) { return t == DType::kFp32 ? 4 : 2; };
  const std::string kind = predicted_benchmark(resolved);
  // The resident set's and the device's lines were fitted to bench-train's and bench-infer's own
  // processes: a command predicted as one (command.predict_as) has a runtime of its own (Python,
  // its libraries, another CUDA context), so only its allocated peak is predicted.
  const Value* benchmark = resolved.find("benchmark");
  const bool own =
      benchmark == nullptr || !benchmark->is_string() || benchmark->as_string() != "command";
  if (kind == "train") {
    TrainingMemoryInput in;
    in.shape = model_shape_of(resolved);
    in.micro_batch = s.train.micro_batch;
    in.seq_len = s.data.seq_len;
    in.element_bytes = bytes_of(s.train.dtype);
    in.gpu = gpu;
    in.activation_checkpointing = s.train.activation_checkpointing;
    in.fused_loss = s.train.fused_loss;
    in.loss_chunk_rows = s.train.loss_chunk_rows;
    in.world_size = static_cast<int>(s.launch.ranks);
    in.zero_stage = static_cast<int>(s.train.zero_stage);
    in.tensor_parallel = static_cast<int>(s.launch.tensor_parallel);
    in.bucket_mb = s.train.bucket_mb;
    in.offload_optimizer = s.train.offload_optimizer;
    in.lora = s.train.lora();
    in.lora_r = s.train.lora_r;
    in.lora_targets = s.train.lora_targets;
    *out = predict_training_memory(in);
    set_deciding(own, gpu, resident_basis_of(in, out->peak), out);
    return true;
  }
  if (kind == "infer") {
    InferenceMemoryInput in;
    in.shape = model_shape_of(resolved);
    in.sequences = s.infer.batch_size * std::max<std::int64_t>(1, s.infer.num_beams);
    in.input_tokens = s.infer.input_tokens;
    in.output_tokens = s.infer.output_tokens;
    in.element_bytes = bytes_of(s.infer.dtype);
    in.gpu = gpu;
    in.kv_cache = s.infer.kv_cache != KvCache::kNone;
    *out = predict_inference_memory(in);
    set_deciding(own, gpu, out->peak, out);
    return true;
  }
  return false;
}

}  // namespace sweepbench
