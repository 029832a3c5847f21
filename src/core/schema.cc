#include "core/schema.h"

#include <algorithm>
#include <cmath>

#include "core/config.h"
#include "core/model_shapes.h"
#include "core/settings.h"
#include "core/text.h"

namespace sweepbench {
namespace {

// A resolved value into a typed field. The schema has checked the value's type and range, so a
// mismatch here is a bug, not an input error.
void read_value(const Value& v, std::int64_t& out) { out = v.as_int(); }
void read_value(const Value& v, std::uint64_t& out) {
  out = static_cast<std::uint64_t>(v.as_int());
}
void read_value(const Value& v, double& out) { out = v.as_float(); }
void read_value(const Value& v, bool& out) { out = v.as_bool(); }
void read_value(const Value& v, std::string& out) { out = v.is_null() ? "" : v.as_string(); }
void read_value(const Value& v, std::vector<std::string>& out) {
  out.clear();
  if (v.is_null()) return;
  for (const Value& item : v.items()) out.push_back(item.as_string());
}
void read_value(const Value& v, std::map<std::string, std::string>& out) {
  out.clear();
  for (const Value::Entry& e : v.entries()) out[e.key] = e.value.as_string();
}
template <class T>
void read_value(const Value& v, std::optional<T>& out) {
  if (v.is_null()) {
    out.reset();
    return;
  }
  T t{};
  read_value(v, t);
  out = std::move(t);
}
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
void read_value(const Value& v, E& out) {
  const std::vector<std::string>& names = names_of<E>();
  auto it = std::find(names.begin(), names.end(), v.as_string());
  if (it == names.end()) throw std::logic_error("unexpected choice '" + v.as_string() + "'");
  out = static_cast<E>(it - names.begin());
}

// A typed field back into a config value.
Value write_value(std::int64_t v) { return Value::integer(v); }
Value write_value(std::uint64_t v) { return Value::integer(static_cast<std::int64_t>(v)); }
Value write_value(double v) { return Value::real(v); }
Value write_value(bool v) { return Value::boolean(v); }
Value write_value(const std::string& v) { return Value::string(v); }
Value write_value(const std::vector<std::string>& v) {
  Value out = Value::list();
  for (const std::string& item : v) out.items().push_back(Value::string(item));
  return out;
}
Value write_value(const std::map<std::string, std::string>& v) {
  Value out = Value::map();
  for (const auto& [key, value] : v) out.set(key, Value::string(value));
  return out;
}
template <class T>
Value write_value(const std::optional<T>& v) {
  return v ? write_value(*v) : Value::null();
}
template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
Value write_value(E v) {
  return Value::string(enum_name(v));
}

// A fluent builder so the table below reads one key per line.
class K {
 public:
  K(std::string path, KeyType type, Value default_value, std::string description) {
    spec_.path = std::move(path);
    spec_.type = type;
    spec_.default_value = std::move(default_value);
    spec_.description = std::move(description);
    if (spec_.default_value.is_null()) spec_.nullable = true;
  }
  K& nullable() {
    spec_.nullable = true;
    return *this;
  }
  K& min(double v, bool exclusive = false) {
    spec_.min = v;
    spec_.min_exclusive = exclusive;
    return *this;
  }
  K& max(double v, bool exclusive = false) {
    spec_.max = v;
    spec_.max_exclusive = exclusive;
    return *this;
  }
  K& choices(std::vector<std::string> c) {
    spec_.choices = std::move(c);
    return *this;
  }
  K& unhashed() {
    spec_.hashed = false;
    return *this;
  }
  K& hashed_unless_default() {
    spec_.hashed_unless_default = true;
    return *this;
  }
  K& tagged_unless_default() {
    spec_.tagged_unless_default = true;
    return *this;
  }
  // The key enters config_hash only at points whose `benchmark` is `name`: the infer section
  // does not change the hash (nor the tag) of a training point.
  K& only_for(std::initializer_list<const char*> names) {
    spec_.only_for_benchmarks.assign(names.begin(), names.end());
    return *this;
  }
  K& derived() {
    spec_.derived = true;
    spec_.nullable = true;
    return *this;
  }
  // The field the key is read into: a member of Settings (benchmark) or of one of its sections
  // (train.lr). An enum field gives the key its choices (names_of).
  template <class F>
  K& into(F Settings::*field) {
    set_choices<F>();
    spec_.read = [field](Settings& s, const Value& v, const Value&) { read_value(v, s.*field); };
    spec_.write = [field](const Settings& s) { return write_value(s.*field); };
    return *this;
  }
  template <class Section, class F>
  K& into(Section Settings::*section, F Section::*field) {
    set_choices<F>();
    spec_.read = [section, field](Settings& s, const Value& v, const Value&) {
      read_value(v, (s.*section).*field);
    };
    spec_.write = [section, field](const Settings& s) { return write_value((s.*section).*field); };
    return *this;
  }
  // A field whose reading needs more than the key's own value.
  K& into(std::function<void(Settings&, const Value&, const Value&)> read) {
    spec_.read = std::move(read);
    return *this;
  }
  operator KeySpec() const { return spec_; }  // NOLINT: builder converts implicitly

 private:
  template <class F>
  void set_choices() {
    if constexpr (std::is_enum_v<F>) spec_.choices = names_of<F>();
  }
  KeySpec spec_;
};

Value I(std::int64_t v) { return Value::integer(v); }
Value F(double v) { return Value::real(v); }
Value B(bool v) { return Value::boolean(v); }
Value S(const char* v) { return Value::string(v); }
Value N() { return Value::null(); }
Value L() { return Value::list(); }
Value M() { return Value::map(); }

using T = KeyType;

// Maxima are far past any real run (4096 layers, vocabularies, contexts and prompts of 16 Mi
// tokens, batches of 1 Mi sequences) so that a slip (n_layer: 1000000000, grad_accum near
// INT64_MAX) is refused at plan time with its key named, instead of allocating until the kernel
// kills the rank. The size checks of bench-train and bench-infer judge what is left.
std::vector<KeySpec> build_table() {
  return {
      // ---- top level ----
      K("benchmark", T::kEnum, S("train"),
        "What runs at each point: a registered workload (docs/workloads.md); train is "
        "bench-train, infer is bench-infer, command the program of the command section")
          .choices({"train", "infer", "command"})
          .hashed_unless_default()
          .into(&Settings::benchmark),
      K("params", T::kFreeMap, M(),
        "Free keys (any names; scalars or lists) that sweeps vary and {params.NAME} "
        "placeholders use: a program's own options (docs/commands.md)")
          .hashed_unless_default(),
      // ---- model ----
      K("model.preset", T::kEnum, S("gpt2"),
        "Named model shape; each dimension below defaults to the preset's")
          .choices(model_preset_names())
          .only_for({"train", "infer"})
          .into(&Settings::model_preset),
      K("model.arch", T::kEnum, N(),
        "Architecture family: gpt2 (LayerNorm, GELU, learned positions, tied head) or llama "
        "(RMSNorm, RoPE, SwiGLU, GQA, untied head); null = the preset's")
          .choices(model_arch_names())
          .derived()
          .only_for({"train", "infer"}),
      K("model.n_layer", T::kInt, N(), "Transformer blocks; null = the preset's")
          .min(1)
          .max(4096)
          .derived()
          .only_for({"train", "infer"}),
      K("model.n_embd", T::kInt, N(), "Model width d; null = the preset's")
          .min(1)
          .max(1 << 20)
          .derived()
          .only_for({"train", "infer"}),
      K("model.n_head", T::kInt, N(),
        "Attention heads; must divide model.n_embd; null = the preset's")
          .min(1)
          .max(1 << 16)
          .derived()
          .only_for({"train", "infer"}),
      K("model.n_kv_head", T::kInt, N(),
        "Key/value heads (grouped-query attention); must divide model.n_head; null = the preset's")
          .min(1)
          .max(1 << 16)
          .derived()
          .only_for({"train", "infer"}),
      K("model.ffn_dim", T::kInt, N(),
        "Hidden width of the MLP; null = the preset's, or, when model.n_embd or model.arch is "
        "not the preset's, the architecture's rule (gpt2: 4 n_embd; llama: 8/3 n_embd rounded "
        "up to a multiple of 256)")
          .min(1)
          .max(1 << 24)
          .derived()
          .only_for({"train", "infer"}),
      K("model.vocab_size", T::kInt, N(), "Vocabulary size; null = the preset's")
          .min(1)
          .max(1 << 24)
          .derived()
          .only_for({"train", "infer"}),
      K("model.block_size", T::kInt, N(),
        "Longest sequence the model accepts (position table size); null = the preset's")
          .min(1)
          .max(1 << 24)
          .derived()
          .only_for({"train", "infer"}),

      // ---- data ----
      K("data.source", T::kEnum, S("synthetic"),
        "synthetic: random token ids; tokens: a binary file of token ids; text: a UTF-8 file "
        "read as byte-level tokens")
          .only_for({"train", "infer"})
          .into(&Settings::data, &DataSettings::source),
      K("data.path", T::kString, N(), "The data file for data.source tokens or text")
          .only_for({"train", "infer"})
          .into(&Settings::data, &DataSettings::path),
      K("data.seq_len", T::kInt, N(),
        "Tokens per sequence; every sequence is exactly this long; null = model.block_size")
          .min(1)
          .max(1 << 24)
          .derived()
          .only_for({"train", "infer"})
          .into(&Settings::data, &DataSettings::seq_len),
      K("data.token_dtype", T::kEnum, S("uint16"),
        "Element type of a headerless tokens file (llm.c .bin files carry their own)")
          .only_for({"train", "infer"})
          .into(&Settings::data, &DataSettings::token_dtype),
      K("data.eval_fraction", T::kFloat, F(0.1), "Share of the data file held out for evaluation")
          .min(0.0)
          .max(0.5)
          .only_for({"train", "infer"})
          .into(&Settings::data, &DataSettings::eval_fraction),

      // ---- train and eval (bench-train; hashed only for benchmark: train) ----
      K("train.steps", T::kInt, I(50), "Optimizer steps, warm-up included")
          .min(1)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::steps),
      K("train.warmup_steps", T::kInt, I(10),
        "Leading steps excluded from every statistic; must be less than train.steps")
          .min(0)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::warmup_steps),
      K("train.micro_batch", T::kInt, I(8), "Sequences per rank per forward pass")
          .min(1)
          .max(1 << 20)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::micro_batch),
      K("train.grad_accum", T::kInt, I(1), "Micro batches accumulated per optimizer step")
          .min(1)
          .max(1 << 20)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::grad_accum),
      K("train.dtype", T::kEnum, S("fp32"),
        "fp32, bf16 (mixed precision, fp32 master weights) or fp16 (with dynamic loss scaling)")
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::dtype),
      K("train.lr", T::kFloat, F(3e-4), "AdamW learning rate")
          .min(0.0, true)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::lr),
      K("train.weight_decay", T::kFloat, F(0.1), "AdamW decoupled weight decay")
          .min(0.0)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::weight_decay),
      K("train.beta1", T::kFloat, F(0.9), "AdamW beta1")
          .min(0.0)
          .max(1.0, true)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::beta1),
      K("train.beta2", T::kFloat, F(0.95), "AdamW beta2")
          .min(0.0)
          .max(1.0, true)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::beta2),
      K("train.eps", T::kFloat, F(1e-8), "AdamW epsilon")
          .min(0.0, true)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::eps),
      K("train.grad_clip", T::kFloat, F(1.0), "Global gradient-norm clip; 0 disables it")
          .min(0.0)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::grad_clip),
      K("train.seed", T::kInt, I(1234), "Seed for weights and batches (each rank offsets it)")
          .min(0)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::seed),
      K("train.activation_checkpointing", T::kBool, B(false),
        "Recompute each block's activations in the backward pass")
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::activation_checkpointing),
      K("train.loss_scale", T::kFloat, F(65536.0), "Initial dynamic loss scale for fp16")
          .min(0.0, true)
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::loss_scale),
      K("train.zero_stage", T::kInt, I(0),
        "ZeRO over the ranks: 0 every rank holds every model state; 1 AdamW's moments sharded; "
        "2 also the gradients (reduce-scattered during backward); 3 also the parameters "
        "(gathered around each block's use)")
          .min(0)
          .max(3)
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::zero_stage),
      K("train.peft", T::kEnum, S("none"),
        "Parameter-efficient fine-tuning: none trains every weight; lora freezes them and trains "
        "low-rank adapters on the projections of lora.targets")
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::peft),
      K("train.offload_optimizer", T::kBool, B(false),
        "AdamW's moments, an fp32 copy of the values and the optimizer step in host memory "
        "(ZeRO-Offload), for GPU runs; the device keeps parameters and gradients")
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::offload_optimizer),
      K("train.fused_loss", T::kBool, B(false),
        "The head and its cross-entropy over chunks of tokens, so the whole logits and their "
        "gradient never exist at once; false: logits for every token, then the loss")
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::fused_loss),
      K("train.cpu_kernels", T::kBool, B(true),
        "On CPUs: sweepbench's own one-pass kernel for the head's cross-entropy (loss and "
        "gradient at once, fp32 logits) instead of libtorch's log-softmax and NLL loss and their "
        "backwards; false: libtorch's ops only")
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::cpu_kernels),
      K("train.overlap_comm", T::kBool, B(false),
        "ZeRO 2 and 3: reduce-scatter each bucket while backward goes on, and gather the next "
        "block's parameters while this one computes (CPU runs over MPI; GPUs not yet)")
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::overlap_comm),
      K("train.bucket_mb", T::kFloat, F(25.0),
        "MiB per gradient bucket: ZeRO-2 reduce-scatters each bucket when backward has filled "
        "it; the MPI all-reduce of stage 0 sends pieces of this size")
          .min(0.0, true)
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::bucket_mb),

      // ---- lora (train.peft: lora) ----
      K("lora.r", T::kInt, I(8), "LoRA rank (with train.peft: lora)")
          .min(1)
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::lora_r),
      K("lora.alpha", T::kFloat, F(16.0), "LoRA scaling numerator: the update is B A x alpha / r")
          .min(0.0, true)
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::lora_alpha),
      K("lora.dropout", T::kFloat, F(0.0), "Dropout on the adapters' input, in [0, 1)")
          .min(0.0)
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::train, &TrainSettings::lora_dropout),
      K("lora.targets", T::kStringList, N(),
        "Projections that get adapters, by the model's names: gpt2 c_attn, attn_proj, c_fc, "
        "mlp_proj; llama wq, wk, wv, wo, w1, w2, w3; null = c_attn (gpt2) or wq, wv (llama), as "
        "Hugging Face peft's defaults")
          .hashed_unless_default()
          .only_for({"train"})
          .into([](Settings& s, const Value& v, const Value& config) {
            if (v.is_null()) {  // the architecture's own
              s.train.lora_targets =
                  default_lora_targets(config_at(config, "model.arch").as_string());
            } else {
              read_value(v, s.train.lora_targets);
            }
          }),

      // ---- eval ----
      K("eval.steps", T::kInt, I(10), "Evaluation batches after training; 0 skips evaluation")
          .min(0)
          .only_for({"train"})
          .into(&Settings::eval, &EvalSettings::steps),
      K("eval.micro_batch", T::kInt, N(),
        "Sequences per evaluation batch; null = train.micro_batch")
          .min(1)
          .max(1 << 20)
          .derived()
          .only_for({"train"})
          .into(&Settings::eval, &EvalSettings::micro_batch),

      // ---- infer (bench-infer; hashed only for benchmark: infer) ----
      K("infer.input_tokens", T::kInt, I(128), "Prompt tokens per sequence")
          .min(1)
          .max(1 << 24)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::input_tokens),
      K("infer.output_tokens", T::kInt, I(128),
        "Tokens generated per sequence; every run generates exactly this many (no early stop)")
          .min(1)
          .max(1 << 24)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::output_tokens),
      K("infer.batch_size", T::kInt, I(1), "Prompts generated together per rank")
          .min(1)
          .max(1 << 20)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::batch_size),
      K("infer.num_beams", T::kInt, I(1),
        "1: greedy or sampled decoding; more: beam search with this many beams per prompt")
          .min(1)
          .max(1024)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::num_beams),
      K("infer.do_sample", T::kBool, B(false),
        "Sample each token (temperature, top_k, top_p) instead of taking the most likely")
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::do_sample),
      K("infer.temperature", T::kFloat, F(1.0), "Sampling temperature")
          .min(0.0, true)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::temperature),
      K("infer.top_k", T::kInt, I(0), "Sample among the k most likely tokens; 0: all")
          .min(0)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::top_k),
      K("infer.top_p", T::kFloat, F(1.0),
        "Sample among the most likely tokens whose probabilities sum to p (nucleus); 1: all")
          .min(0.0, true)
          .max(1.0)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::top_p),
      K("infer.seed", T::kInt, I(1234),
        "Seed for the weights, the synthetic prompts and sampling (each rank offsets it for its "
        "prompts)")
          .min(0)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::seed),
      K("infer.warmup_runs", T::kInt, I(1),
        "Generations before the timed ones, left out of every statistic")
          .min(0)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::warmup_runs),
      K("infer.runs", T::kInt, I(5), "Timed generations")
          .min(1)
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::runs),
      K("infer.kv_cache", T::kEnum, S("static"),
        "static: keys and values allocated once for input + output tokens; dynamic: grown as "
        "tokens come; none: recompute the whole prefix at every step (the baseline)")
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::kv_cache),
      K("infer.dtype", T::kEnum, S("fp32"),
        "Weights, activations and the KV cache in fp32, bf16 or fp16 (fp16 needs a GPU)")
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::dtype),
      K("infer.token_metrics", T::kBool, B(true),
        "Time every decode step (waits for the device after each token); off: only the first "
        "token and the whole generation are timed")
          .only_for({"infer"})
          .into(&Settings::infer, &InferSettings::token_metrics),

      // ---- command (benchmark: command; docs/commands.md) ----
      K("command.argv", T::kStringList, L(),
        "The program and its arguments, one list item per argv element (no shell); "
        "{placeholders} take the point's values")
          .only_for({"command"}),
      K("command.env", T::kStringMap, M(),
        "Environment variables for the program; values may hold {placeholders}")
          .only_for({"command"}),
      K("command.workdir", T::kString, N(),
        "The program's working directory (may hold {placeholders}, e.g. {out}); null = the "
        "directory bench-sweep run was started in")
          .only_for({"command"}),
      K("command.parser", T::kEnum, S("none"),
        "Metrics of a known program, added to command.metrics: hf-trainer (the Hugging Face "
        "Trainer), pace (PACE's benchmark_llm_offline.py), fairseq2, llama-bench, vllm (vllm "
        "bench latency, throughput and serve), or none")
          .choices({"none", "hf-trainer", "pace", "fairseq2", "llama-bench", "vllm"})
          .only_for({"command"}),
      K("command.metrics", T::kRecordList, L(),
        "Figures of merit: a list of {name, unit, from, regex, group, reduce} or {name, unit, "
        "from: json FILE, pointer}, each optional: true or required (docs/commands.md)")
          .only_for({"command"}),
      K("command.success.match", T::kStringList, L(),
        "Regular expressions that must each match a line of the program's stdout or stderr")
          .only_for({"command"}),
      K("command.success.fail", T::kStringList, L(),
        "Regular expressions that must match no line of stdout or stderr (e.g. Traceback)")
          .only_for({"command"}),
      K("command.success.exit_code", T::kInt, I(0), "The exit code of a successful run; null = any")
          .min(0)
          .max(255)
          .nullable()
          .only_for({"command"}),
      K("command.success.required", T::kStringList, N(),
        "Metrics a successful run must report; null = every metric not marked optional")
          .only_for({"command"}),
      K("command.oom_patterns", T::kStringList, L(),
        "Regular expressions whose match in a failed run's output makes its status oom; empty = "
        "the usual PyTorch, CUDA and C++ out-of-memory messages (docs/commands.md)")
          .only_for({"command"}),

      // ---- launch ----
      K("launch.ranks", T::kInt, I(1), "MPI ranks in total (the world size)")
          .min(1)
          .into(&Settings::launch, &LaunchSettings::ranks),
      K("launch.nodes", T::kInt, I(1), "Nodes the ranks are spread over; must divide launch.ranks")
          .min(1)
          .into(&Settings::launch, &LaunchSettings::nodes),
      K("launch.gpus_per_rank", T::kInt, I(0), "GPUs each rank asks the scheduler for; 0 = none")
          .min(0)
          .into(&Settings::launch, &LaunchSettings::gpus_per_rank),
      K("launch.tensor_parallel", T::kInt, I(1),
        "Tensor parallelism t (bench-train): each block's projections split over groups of t "
        "consecutive ranks (Megatron-style), data parallelism over launch.ranks / t")
          .min(1)
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::launch, &LaunchSettings::tensor_parallel),
      K("launch.cpus_per_rank", T::kInt, N(),
        "CPU cores (and compute threads) per rank; null = the node's cores / ranks on it")
          .min(1)
          .into(&Settings::launch, &LaunchSettings::cpus_per_rank),
      K("launch.device", T::kEnum, S("auto"),
        "Where each rank computes: cuda, cpu, or auto (cuda when a GPU is visible)")
          .into(&Settings::launch, &LaunchSettings::device),
      K("launch.launcher", T::kEnum, S("auto"),
        "How ranks start: auto (srun inside SLURM, mpirun for several ranks, else a plain exec), "
        "local, mpirun or srun")
          .choices({"auto", "local", "mpirun", "srun"})
          .into(&Settings::launch, &LaunchSettings::launcher),
      K("launch.mpirun_args", T::kStringList, L(), "Extra arguments for mpirun")
          .into(&Settings::launch, &LaunchSettings::mpirun_args),
      K("launch.srun_args", T::kStringList, L(), "Extra arguments for srun")
          .into(&Settings::launch, &LaunchSettings::srun_args),
      K("launch.env", T::kStringMap, M(), "Environment variables set for every rank")
          .into(&Settings::launch, &LaunchSettings::env),
      K("launch.setup", T::kStringList, L(),
        "Shell lines run before the point's command, in one bash (module load, conda activate "
        "{params.env}); placeholders become single-quoted words; the lines are your own shell code")
          .hashed_unless_default()
          .into(&Settings::launch, &LaunchSettings::setup),
      K("launch.exclusive", T::kEnum, S("auto"),
        "Whether a point shares its nodes with other points that bench-sweep run --jobs runs at "
        "once: node (alone on its nodes), shared (beside others, on cores and GPUs of its own), "
        "auto (node for a point over several nodes, else shared)")
          .unhashed()
          .tagged_unless_default()
          .into(&Settings::launch, &LaunchSettings::exclusive),
      K("launch.malloc_cache", T::kBool, B(true),
        "Keep freed host memory in the process (glibc: no mmap, no trim) so steps do not "
        "page-fault "
        "it back; the resident set then stays at its peak")
          .into(&Settings::launch, &LaunchSettings::malloc_cache),

      // ---- metrics ----
      K("metrics.sample_interval_ms", T::kInt, I(1000),
        "Period of the background memory/CPU sampler; 0 keeps only the first and last samples")
          .min(0)
          .only_for({"train", "infer"})
          .into(&Settings::metrics, &MetricsSettings::sample_interval_ms),
      K("metrics.system", T::kBool, B(true), "Sample CPU utilisation and RAM over time")
          .only_for({"train", "infer"})
          .into(&Settings::metrics, &MetricsSettings::system),
      K("metrics.log_every", T::kInt, I(10), "Steps between progress lines on rank 0")
          .min(1)
          .only_for({"train", "infer"})
          .into(&Settings::metrics, &MetricsSettings::log_every),
      K("metrics.profile_steps", T::kString, N(),
        "Steps to trace with libtorch's profiler, \"N\" or \"FIRST-LAST\" (0-based): one Chrome "
        "trace per rank in profile/, the steps left out of every statistic; null = none")
          .hashed_unless_default()
          .only_for({"train"})
          .into([](Settings& s, const Value& v, const Value&) {
            s.metrics.profile_steps.reset();
            if (!v.is_null()) s.metrics.profile_steps = parse_step_range(v.as_string());
          }),
      K("metrics.profile_activities", T::kStringList, N(),
        "What metrics.profile_steps records: cpu (libtorch's ops and the step's phases), cuda "
        "(kernels and copies on the GPU, where libtorch has Kineto); null = cpu, and cuda too on "
        "a GPU")
          .hashed_unless_default()
          .only_for({"train"})
          .into(&Settings::metrics, &MetricsSettings::profile_activities),

      // ---- container ----
      K("container.runtime", T::kEnum, S("none"), "Container runtime that wraps each rank, or none")
          .choices({"none", "apptainer", "singularity", "enroot", "charliecloud", "podman"})
          .into(&Settings::container, &ContainerSettings::runtime),
      K("container.image", T::kString, N(),
        "Image: a SIF file, squashfs, directory image or registry reference")
          .into(&Settings::container, &ContainerSettings::image),
      K("container.binds", T::kStringList, L(), "Bind mounts, each src:dst[:ro]")
          .into(&Settings::container, &ContainerSettings::binds),
      K("container.env", T::kStringMap, M(), "Environment variables passed into the container")
          .into(&Settings::container, &ContainerSettings::env),
      K("container.workdir", T::kString, N(), "Working directory inside the container")
          .into(&Settings::container, &ContainerSettings::workdir),
      K("container.extra_args", T::kStringList, L(),
        "Extra arguments passed to the runtime unchanged")
          .into(&Settings::container, &ContainerSettings::extra_args),

      // ---- slurm ----
      K("slurm.partition", T::kString, N(), "Partition (decides the hardware, so it is hashed)")
          .into(&Settings::slurm, &SlurmSettings::partition),
      K("slurm.time", T::kSlurmTime, N(),
        "Time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS")
          .unhashed()
          .into(&Settings::slurm, &SlurmSettings::time),
      K("slurm.account", T::kString, N(), "Account to charge")
          .unhashed()
          .into(&Settings::slurm, &SlurmSettings::account),
      K("slurm.qos", T::kString, N(), "Quality of service")
          .unhashed()
          .into(&Settings::slurm, &SlurmSettings::qos),
      K("slurm.constraint", T::kString, N(), "Node features required (--constraint)")
          .into(&Settings::slurm, &SlurmSettings::constraint),
      K("slurm.mem", T::kString, N(), "Memory per node (--mem), e.g. 64G")
          .into(&Settings::slurm, &SlurmSettings::mem),
      K("slurm.exclusive", T::kBool, B(true), "Ask for whole nodes (--exclusive)")
          .into(&Settings::slurm, &SlurmSettings::exclusive),
      K("slurm.max_requeue", T::kInt, I(1), "How often a timed-out or preempted point is requeued")
          .min(0)
          .unhashed()
          .into(&Settings::slurm, &SlurmSettings::max_requeue),
      K("slurm.signal_seconds", T::kInt, I(120),
        "Seconds before the time limit that bench-train is warned (--signal)")
          .min(0)
          .unhashed()
          .into(&Settings::slurm, &SlurmSettings::signal_seconds),
      K("slurm.job_name", T::kString, N(), "Job name; null = sweepbench-NAME (the sweep's name)")
          .unhashed()
          .into(&Settings::slurm, &SlurmSettings::job_name),
      K("slurm.mail_type", T::kString, N(), "--mail-type, e.g. END,FAIL")
          .unhashed()
          .into(&Settings::slurm, &SlurmSettings::mail_type),
      K("slurm.mail_user", T::kString, N(), "--mail-user")
          .unhashed()
          .into(&Settings::slurm, &SlurmSettings::mail_user),
      K("slurm.extra_args", T::kStringList, L(), "Extra sbatch arguments, e.g. [--gres=gpu:8]")
          .into(&Settings::slurm, &SlurmSettings::extra_args),

      // ---- hardware ----
      K("hardware.name", T::kString, N(), "A label for the hardware, e.g. H100-SXM5")
          .into(&Settings::hardware, &HardwareSettings::name),
      K("hardware.peak_tflops", T::kFloat, N(),
        "Peak dense TFLOPS per device for the run's dtype (train.dtype, infer.dtype), for MFU; "
        "null = the built-in table (GPUs) or no MFU (CPU)")
          .min(0.0, true)
          .unhashed()
          .into(&Settings::hardware, &HardwareSettings::peak_tflops),
      K("hardware.peak_bandwidth_gbs", T::kFloat, N(),
        "Peak memory bandwidth per device in GB/s, for bench-infer's MBU; null = the built-in "
        "table (GPUs) or, on a CPU, a copy bandwidth measured at the start of the run")
          .min(0.0, true)
          .unhashed()
          .into(&Settings::hardware, &HardwareSettings::peak_bandwidth_gbs),
      K("hardware.price_per_hour", T::kFloat, N(),
        "Price of one device-hour in USD, for cost per million tokens")
          .min(0.0)
          .unhashed()
          .into(&Settings::hardware, &HardwareSettings::price_per_hour),
  };
}

bool valid_slurm_time(const std::string& s) {
  if (s == "UNLIMITED" || s == "INFINITE" || s == "unlimited" || s == "infinite") return true;
  auto numeric = [](std::string_view part) {
    return !part.empty() && part.find_first_not_of("0123456789") == std::string_view::npos;
  };
  std::string_view rest(s);
  size_t dash = rest.find('-');
  if (dash != std::string_view::npos) {
    if (!numeric(rest.substr(0, dash))) return false;
    rest = rest.substr(dash + 1);
  }
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t colon = rest.find(':', start);
    parts.push_back(rest.substr(start, colon == std::string_view::npos ? colon : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return false;
  for (std::string_view p : parts) {
    if (!numeric(p)) return false;
  }
  return true;
}

std::string range_text(const KeySpec& s) {
  std::string out;
  auto num = [](double v) {
    if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
    return format_float_repr(v);
  };
  if (s.min && s.max) {
    out = std::string(s.min_exclusive ? "in (" : "in [") + num(*s.min) + ", " + num(*s.max) +
          (s.max_exclusive ? ")" : "]");
  } else if (s.min) {
    out = std::string(s.min_exclusive ? "> " : ">= ") + num(*s.min);
  } else if (s.max) {
    out = std::string(s.max_exclusive ? "< " : "<= ") + num(*s.max);
  }
  return out;
}

}  // namespace

bool KeySpec::applies_to(const std::string& benchmark) const {
  return only_for_benchmarks.empty() ||
         std::find(only_for_benchmarks.begin(), only_for_benchmarks.end(), benchmark) !=
             only_for_benchmarks.end();
}

std::string KeySpec::section() const {
  size_t dot = path.find('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string KeySpec::name() const { return path.substr(path.find('.') + 1); }

std::string KeySpec::type_text() const {
  std::string t;
  switch (type) {
    case KeyType::kInt:
      t = "integer";
      break;
    case KeyType::kFloat:
      t = "float";
      break;
    case KeyType::kBool:
      t = "boolean";
      break;
    case KeyType::kString:
      t = "string";
      break;
    case KeyType::kEnum:
      t = "one of " + join(choices, ", ");
      break;
    case KeyType::kStringList:
      t = "list of strings";
      break;
    case KeyType::kStringMap:
      t = "mapping of names to strings";
      break;
    case KeyType::kFreeMap:
      t = "mapping of names to scalars or lists";
      break;
    case KeyType::kRecordList:
      t = "list of mappings";
      break;
    case KeyType::kSlurmTime:
      t = "SLURM time (string) or minutes (integer)";
      break;
  }
  std::string range = range_text(*this);
  if (!range.empty()) t += " " + range;
  if (nullable) t += ", or null";
  return t;
}

const Schema& Schema::get() {
  static const Schema schema;
  return schema;
}

Schema::Schema() : keys_(build_table()), defaults_(Value::map()) {
  for (const KeySpec& k : keys_) {
    std::string section = k.section();
    if (!section.empty() &&
        std::find(sections_.begin(), sections_.end(), section) == sections_.end()) {
      sections_.push_back(section);
    }
    all_paths_.push_back(k.path);
    defaults_.set_path(k.path, k.default_value);
  }
  for (const std::string& s : sections_) all_paths_.push_back(s);
  for (const KeySpec& k : keys_) {
    for (size_t dot = k.path.find('.', k.section().size() + 1); dot != std::string::npos;
         dot = k.path.find('.', dot + 1)) {
      std::string sub = k.path.substr(0, dot);
      if (std::find(subsections_.begin(), subsections_.end(), sub) == subsections_.end()) {
        subsections_.push_back(sub);
        all_paths_.push_back(sub);
      }
    }
  }
}

const KeySpec* Schema::find(std::string_view path) const {
  for (const KeySpec& k : keys_) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

bool Schema::is_section(std::string_view path) const {
  return std::find(sections_.begin(), sections_.end(), path) != sections_.end() ||
         std::find(subsections_.begin(), subsections_.end(), path) != subsections_.end();
}

Schema::Lookup Schema::lookup(std::string_view path) const {
  Lookup result;
  if (is_section(path)) {
    result.kind = Lookup::Kind::kSection;
    return result;
  }
  if (const KeySpec* spec = find(path)) {
    result.kind = Lookup::Kind::kKey;
    result.spec = spec;
    return result;
  }
  // An entry of a free-form map key: the longest prefix that is a map key.
  for (const KeySpec& k : keys_) {
    if ((k.type == KeyType::kStringMap || k.type == KeyType::kFreeMap) &&
        path.size() > k.path.size() + 1 && starts_with(path, k.path) &&
        path[k.path.size()] == '.') {
      result.kind = Lookup::Kind::kMapEntry;
      result.spec = &k;
      result.entry = std::string(path.substr(k.path.size() + 1));
      return result;
    }
  }
  return result;
}

Error Schema::unknown_key(std::string_view path, const Mark& mark) const {
  if (!is_key_like(path)) {
    return Error::input(mark, "",
                        "not a config key: a key is a name such as train.micro_batch (letters, "
                        "digits, '_', '-', '.'), and this text is none",
                        "is it a config or defaults file? they hold sections such as model:, "
                        "train:, launch: (docs/config.md)");
  }
  std::optional<std::string> suggestion = closest_match(path, all_paths_);
  if (!suggestion) {
    // "microbatch" alone: match the last part against every key's last part.
    std::string leaf(
        path.substr(path.rfind('.') == std::string_view::npos ? 0 : path.rfind('.') + 1));
    std::vector<std::string> names;
    for (const KeySpec& k : keys_) names.push_back(k.name());
    if (auto leaf_match = closest_match(leaf, names)) {
      for (const KeySpec& k : keys_) {
        if (k.name() == *leaf_match) {
          suggestion = k.path;
          break;
        }
      }
    }
  }
  std::string message = "unknown key '" + std::string(path) + "'";
  if (suggestion) message += " (did you mean '" + *suggestion + "'?)";
  return Error::input(mark, "", message,
                      suggestion ? ""
                                 : "`bench-sweep keys` lists every key; docs/config.md "
                                   "describes them");
}

namespace {

// A NUL ends the string for every program it is passed to (argv, the environment, gnuplot) and
// truncates the CSV for pandas: no config string may hold one.
void refuse_nul(const Value& v, const std::string& path) {
  if (v.as_string().find('\0') == std::string::npos) return;
  throw Error::input(v.mark(), path, "contains a NUL character (\\0)",
                     "no program can be given it; remove it");
}

// A name for a message: control characters (NUL among them) as \xNN.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20) {
      const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[(c >> 4) & 15];
      out += hex[c & 15];
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Value Schema::coerce(const KeySpec& spec, const Value& value) const {
  const Mark& mark = value.mark();
  auto fail = [&](const std::string& why, const std::string& hint = {}) {
    return Error::input(mark, spec.path, why, hint);
  };
  auto expected = [&]() {
    return fail("expected " + spec.type_text() + ", got " + value.describe());
  };
  if (value.is_null()) {
    if (spec.nullable) return value;
    throw fail("must not be null; expected " + spec.type_text());
  }
  auto check_range = [&](double v) {
    bool low = spec.min && (spec.min_exclusive ? v <= *spec.min : v < *spec.min);
    bool high = spec.max && (spec.max_exclusive ? v >= *spec.max : v > *spec.max);
    if (low || high) {
      throw fail("must be " + range_text(spec) + ", got " + value.describe().substr(4));
    }
  };
  switch (spec.type) {
    case KeyType::kInt:
      if (!value.is_int()) {
        if (value.is_float() && std::floor(value.as_float()) == value.as_float()) {
          throw fail("expected an integer, got " + value.describe(),
                     "write it without a decimal point");
        }
        throw expected();
      }
      check_range(static_cast<double>(value.as_int()));
      return value;
    case KeyType::kFloat: {
      if (!value.is_number()) throw expected();
      double v = value.as_float();
      if (!std::isfinite(v)) throw fail("must be a finite number, got " + value.describe());
      check_range(v);
      return Value::real(v, mark);
    }
    case KeyType::kBool:
      if (!value.is_bool()) throw expected();
      return value;
    case KeyType::kString:
      if (!value.is_string()) {
        if (value.is_scalar()) {
          throw fail("expected a string, got " + value.describe(), "quote it to make it a string");
        }
        throw expected();
      }
      refuse_nul(value, spec.path);
      return value;
    case KeyType::kEnum: {
      if (!value.is_string()) throw expected();
      refuse_nul(value, spec.path);
      const std::string& s = value.as_string();
      if (std::find(spec.choices.begin(), spec.choices.end(), s) != spec.choices.end()) {
        return value;
      }
      std::string message = "'" + s + "' is not one of " + join(spec.choices, ", ");
      if (auto near = closest_match(s, spec.choices)) {
        throw fail(message, "did you mean '" + *near + "'?");
      }
      throw fail(message);
    }
    case KeyType::kStringList: {
      if (!value.is_list()) throw expected();
      for (const Value& item : value.items()) {
        if (!item.is_string()) {
          throw Error::input(item.mark().known() ? item.mark() : mark, spec.path,
                             "expected a list of strings, but an item is " + item.describe(),
                             item.is_scalar() ? "quote it to make it a string" : "");
        }
        refuse_nul(item, spec.path);
      }
      return value;
    }
    case KeyType::kRecordList:
      if (!value.is_list()) throw expected();
      for (const Value& item : value.items()) {
        if (!item.is_map()) {
          throw Error::input(item.mark().known() ? item.mark() : mark, spec.path,
                             "expected a list of mappings, but an item is " + item.describe());
        }
      }
      return value;
    case KeyType::kFreeMap:
    case KeyType::kStringMap: {
      if (!value.is_map()) throw expected();
      Value out = Value::map(mark);
      for (const Value::Entry& e : value.entries()) {
        out.set(e.key, coerce_map_entry(spec, e.key, e.value), e.key_mark);
      }
      return out;
    }
    case KeyType::kSlurmTime: {
      if (value.is_int()) {
        if (value.as_int() < 0) throw fail("a time limit in minutes must be >= 0");
        return Value::string(std::to_string(value.as_int()), mark);
      }
      if (!value.is_string()) throw expected();
      if (!valid_slurm_time(value.as_string())) {
        throw fail("'" + value.as_string() + "' is not a SLURM time",
                   "use minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS");
      }
      return value;
    }
  }
  throw expected();
}

namespace {

// params.x: a name for placeholders and columns, a scalar or a list of scalars kept as typed.
Value coerce_free_entry(const KeySpec& spec, const std::string& entry, const Value& value) {
  std::string path = spec.path + "." + entry;
  bool name_ok = !entry.empty();
  for (char c : entry) {
    name_ok = name_ok && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                          (c >= '0' && c <= '9') || c == '_' || c == '-');
  }
  if (!name_ok) {
    throw Error::input(value.mark(), spec.path,
                       "'" + printable(entry) + "' is not a name for " + spec.path,
                       "use letters, digits, _ and -, e.g. " + spec.path + ".peft_method");
  }
  auto check_scalar = [&](const Value& v) {
    if (!v.is_scalar()) {
      throw Error::input(v.mark().known() ? v.mark() : value.mark(), path,
                         "expected a scalar or a list of scalars, got " + v.describe());
    }
    if (v.is_string()) refuse_nul(v, path);
    if (v.is_float() && !std::isfinite(v.as_float())) {
      throw Error::input(v.mark().known() ? v.mark() : value.mark(), path,
                         "must be a finite number, got " + v.describe());
    }
  };
  if (value.is_list()) {
    for (const Value& item : value.items()) check_scalar(item);
  } else {
    check_scalar(value);
  }
  return value;
}

}  // namespace

Value Schema::coerce_map_entry(const KeySpec& spec, const std::string& entry,
                               const Value& value) const {
  std::string path = spec.path + "." + entry;
  if (entry.empty()) throw Error::input(value.mark(), spec.path, "an entry has an empty name");
  if (spec.type == KeyType::kFreeMap) return coerce_free_entry(spec, entry, value);
  // The maps are environments (launch.env, container.env): setenv() refuses a name with '=' and
  // `env NAME=VALUE` would split it elsewhere, so a bad name must not pass silently.
  if (!is_identifier(entry)) {
    throw Error::input(
        value.mark(), spec.path, "'" + printable(entry) + "' is not an environment variable name",
        "use letters, digits and _, not starting with a digit, e.g. OMP_NUM_THREADS");
  }
  switch (value.type()) {
    case Value::Type::kString:
      refuse_nul(value, path);
      return value;
    case Value::Type::kInt:
      return Value::string(std::to_string(value.as_int()), value.mark());
    case Value::Type::kFloat:
      return Value::string(format_float_repr(value.as_float()), value.mark());
    case Value::Type::kBool:
      return Value::string(value.as_bool() ? "true" : "false", value.mark());
    default:
      throw Error::input(value.mark(), path, "expected a string, got " + value.describe());
  }
}

}  // namespace sweepbench
