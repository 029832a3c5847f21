// A resolved config read once into typed settings (docs/config.md lists the keys). The code that
// runs a point reads these fields, not keys by string path; choices with a fixed set of values
// are enums. The launcher and the container runtime stay names: they are keys of registries
// (launch/), which a new backend extends without an edit here.
//
// Each section's struct is followed by its keys (train_keys and the others): for each field its
// path, default (in the field's type; std::nullopt for null), doc and range, in one call,
// `key(&TrainSettings::beta1, "train.beta1", 0.9, "AdamW beta1").min(0.0)`. The key's type
// follows from the field's. config/schema_table.cc builds the table from these calls (they are
// templates so that only it compiles them); validation, `bench-sweep keys`, docs/config.md, the
// hashed form and Settings::of all come from that table. The fields here start zero: the
// defaults are the keys', and Settings::defaults() is every key at its default.
// docs/architecture.md shows adding a setting.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/value.h"

namespace sweepbench {

// The names of an enum's values, in the enum's order: the key's choices in the schema, to_string
// and the reading of a config all come from this one list (settings.cc).
template <class E>
const std::vector<std::string>& names_of();

template <class E>
std::string enum_name(E e) {
  return names_of<E>().at(static_cast<size_t>(e));
}

enum class DType { kFp32, kBf16, kFp16 };
enum class Device { kAuto, kCpu, kCuda };
enum class Exclusive { kAuto, kNode, kShared };
enum class DataSource { kSynthetic, kTokens, kText };
enum class TokenDType { kUint16, kUint32 };
enum class Peft { kNone, kLora };
enum class KvCache { kStatic, kDynamic, kNone };

template <>
const std::vector<std::string>& names_of<DType>();
template <>
const std::vector<std::string>& names_of<Device>();
template <>
const std::vector<std::string>& names_of<Exclusive>();
template <>
const std::vector<std::string>& names_of<DataSource>();
template <>
const std::vector<std::string>& names_of<TokenDType>();
template <>
const std::vector<std::string>& names_of<Peft>();
template <>
const std::vector<std::string>& names_of<KvCache>();

inline std::string to_string(DType d) { return enum_name(d); }
inline std::string to_string(Device d) { return enum_name(d); }
inline std::string to_string(DataSource s) { return enum_name(s); }
inline std::string to_string(TokenDType t) { return enum_name(t); }
inline std::string to_string(KvCache k) { return enum_name(k); }

struct TrainSettings {
  std::int64_t steps{}, warmup_steps{}, micro_batch{}, grad_accum{};
  DType dtype{};
  double lr{}, weight_decay{}, beta1{}, beta2{}, eps{}, grad_clip{};  // grad_clip 0: off
  std::uint64_t seed{};
  bool activation_checkpointing{};
  double loss_scale{};  // fp16's initial dynamic loss scale
  // ZeRO stage, with more than one rank: 0 every rank holds every model state; 1 AdamW's moments
  // sharded (gradients reduce-scattered, parameters all-gathered after the update); 2 also the
  // gradients, each bucket reduce-scattered as backward fills it; 3 also the parameters, each
  // block's gathered before its forward and its backward and freed after.
  std::int64_t zero_stage{};
  // ZeRO-2's gradient buckets, and the MPI all-reduce's pieces at stage 0 (PyTorch DDP's 25 MiB).
  double bucket_mb{};
  // AdamW's moments, its fp32 copy of the values and its step on the host (ZeRO-Offload); the
  // device keeps the values it computes with and the gradients.
  bool offload_optimizer{};
  // ZeRO-2's reduce-scatters and ZeRO-3's gathers on a thread of their own, overlapping backward
  // and the blocks before them (CPU runs over MPI).
  bool overlap_comm{};
  bool fused_loss{};  // the head's cross-entropy over chunks of tokens, without the logits
  std::int64_t loss_chunk_rows{};  // tokens a chunk of fused_loss; 0: about 64 MB of fp32 logits
  bool cpu_kernels{};  // on CPUs, our one-pass cross-entropy of the head (cpu_kernels.h)
  bool gpu_kernels{};  // on GPUs, our two-pass cross-entropy of the head (cuda_kernels.h)
  bool cuda_graph{};   // the whole step captured as a CUDA graph and replayed (one rank)
  // lora: adapters of rank lora_r on the projections of lora_targets, every other weight frozen
  // (no gradient, no optimizer state); targets resolved from the model's defaults when the key
  // is null (docs/train.md).
  Peft peft{};
  std::int64_t lora_r{};
  double lora_alpha{}, lora_dropout{};
  std::vector<std::string> lora_targets;
  bool lora() const { return peft == Peft::kLora; }
};

template <class Keys>
void train_keys(Keys& key) {
  key(&TrainSettings::steps, "train.steps", 50, "Optimizer steps, warm-up included")
      .min(1)
      .only_for({"train"});
  key(&TrainSettings::warmup_steps, "train.warmup_steps", 10,
      "Leading steps excluded from every statistic; must be less than train.steps")
      .min(0)
      .only_for({"train"});
  key(&TrainSettings::micro_batch, "train.micro_batch", 8, "Sequences per rank per forward pass")
      .min(1)
      .max(1 << 20)
      .only_for({"train"});
  key(&TrainSettings::grad_accum, "train.grad_accum", 1,
      "Micro batches accumulated per optimizer step")
      .min(1)
      .max(1 << 20)
      .only_for({"train"});
  key(&TrainSettings::dtype, "train.dtype", DType::kFp32,
      "fp32, bf16 (mixed precision, fp32 master weights) or fp16 (with dynamic loss scaling)")
      .only_for({"train"});
  key(&TrainSettings::lr, "train.lr", 3e-4, "AdamW learning rate")
      .min(0.0, true)
      .only_for({"train"});
  key(&TrainSettings::weight_decay, "train.weight_decay", 0.1, "AdamW decoupled weight decay")
      .min(0.0)
      .only_for({"train"});
  key(&TrainSettings::beta1, "train.beta1", 0.9, "AdamW beta1")
      .min(0.0)
      .max(1.0, true)
      .only_for({"train"});
  key(&TrainSettings::beta2, "train.beta2", 0.95, "AdamW beta2")
      .min(0.0)
      .max(1.0, true)
      .only_for({"train"});
  key(&TrainSettings::eps, "train.eps", 1e-8, "AdamW epsilon").min(0.0, true).only_for({"train"});
  key(&TrainSettings::grad_clip, "train.grad_clip", 1.0, "Global gradient-norm clip; 0 disables it")
      .min(0.0)
      .only_for({"train"});
  key(&TrainSettings::seed, "train.seed", 1234,
      "Seed for weights and batches (each rank offsets it)")
      .min(0)
      .only_for({"train"});
  key(&TrainSettings::activation_checkpointing, "train.activation_checkpointing", false,
      "Recompute each block's activations in the backward pass")
      .only_for({"train"});
  key(&TrainSettings::loss_scale, "train.loss_scale", 65536.0,
      "Initial dynamic loss scale for fp16")
      .min(0.0, true)
      .only_for({"train"});
  key(&TrainSettings::zero_stage, "train.zero_stage", 0,
      "ZeRO over the ranks: 0 every rank holds every model state; 1 AdamW's moments sharded; "
      "2 also the gradients (reduce-scattered during backward); 3 also the parameters "
      "(gathered around each block's use)")
      .min(0)
      .max(3)
      .hashed_unless_default()
      .only_for({"train"});
  key(&TrainSettings::peft, "train.peft", Peft::kNone,
      "Parameter-efficient fine-tuning: none trains every weight; lora freezes them and trains "
      "low-rank adapters on the projections of lora.targets")
      .hashed_unless_default()
      .only_for({"train"});
  key(&TrainSettings::offload_optimizer, "train.offload_optimizer", false,
      "AdamW's moments, an fp32 copy of the values and the optimizer step in host memory "
      "(ZeRO-Offload), for GPU runs; the device keeps parameters and gradients")
      .hashed_unless_default()
      .only_for({"train"});
  key(&TrainSettings::fused_loss, "train.fused_loss", false,
      "The head and its cross-entropy over chunks of tokens, so the whole logits and their "
      "gradient never exist at once; false: logits for every token, then the loss")
      .hashed_unless_default()
      .only_for({"train"});
  key(&TrainSettings::loss_chunk_rows, "train.loss_chunk_rows", 0,
      "With train.fused_loss: tokens a chunk (each chunk's logits are chunk x vocabulary fp32 "
      "values); 0: as many as make about 64 MB of fp32 logits (333 for GPT-2's vocabulary)")
      .min(0)
      .max(std::int64_t{1} << 30)
      .hashed_unless_default()
      .tagged_unless_default()  // added after results existed: their tags and hashes stay
      .only_for({"train"});
  key(&TrainSettings::cpu_kernels, "train.cpu_kernels", true,
      "On CPUs: sweepbench's own one-pass kernel for the head's cross-entropy (loss and "
      "gradient at once, fp32 logits) instead of libtorch's log-softmax and NLL loss and their "
      "backwards; false: libtorch's ops only")
      .hashed_unless_default()
      .only_for({"train"});
  key(&TrainSettings::gpu_kernels, "train.gpu_kernels", false,
      "On GPUs: sweepbench's own CUDA kernels for the head's cross-entropy (the rows' "
      "log-sum-exp in the forward, the gradient in the logits' dtype in the backward: two passes "
      "over the logits and no fp32 copy of them) instead of libtorch's cast, log-softmax and NLL "
      "loss and their backwards; off until measured on a GPU")
      .hashed_unless_default()
      .tagged_unless_default()
      .only_for({"train"});
  key(&TrainSettings::cuda_graph, "train.cuda_graph", false,
      "On GPUs: the whole step (forward, backward, clipping and AdamW) captured as a CUDA graph "
      "at the second step and replayed after, one launch a step; its phases are not timed "
      "apart. One rank, ZeRO stage 0, fp32 or bf16, no offload, no profiled steps and at least "
      "2 warm-up steps; on CPUs the same step runs eagerly")
      .hashed_unless_default()
      .tagged_unless_default()
      .only_for({"train"});
  key(&TrainSettings::overlap_comm, "train.overlap_comm", false,
      "ZeRO 2 and 3: reduce-scatter each bucket while backward goes on, and gather the next "
      "block's parameters while this one computes (CPU runs over MPI; GPUs not yet)")
      .hashed_unless_default()
      .only_for({"train"});
  key(&TrainSettings::bucket_mb, "train.bucket_mb", 25.0,
      "MiB per gradient bucket: ZeRO-2 reduce-scatters each bucket when backward has filled "
      "it; the MPI all-reduce of stage 0 sends pieces of this size")
      .min(0.0, true)
      .hashed_unless_default()
      .only_for({"train"});
  // lora (with train.peft: lora); lora.targets, whose null is the architecture's own, is read
  // in config/schema_table.cc.
  key(&TrainSettings::lora_r, "lora.r", 8, "LoRA rank (with train.peft: lora)")
      .min(1)
      .hashed_unless_default()
      .only_for({"train"});
  key(&TrainSettings::lora_alpha, "lora.alpha", 16.0,
      "LoRA scaling numerator: the update is B A x alpha / r")
      .min(0.0, true)
      .hashed_unless_default()
      .only_for({"train"});
  key(&TrainSettings::lora_dropout, "lora.dropout", 0.0,
      "Dropout on the adapters' input, in [0, 1)")
      .min(0.0)
      .hashed_unless_default()
      .only_for({"train"});
}

// bench-infer's section (docs/infer.md).
struct InferSettings {
  std::int64_t input_tokens{}, output_tokens{}, batch_size{}, num_beams{};
  bool do_sample{};
  double temperature{}, top_p{};
  std::int64_t top_k{};
  std::uint64_t seed{};
  std::int64_t warmup_runs{}, runs{};
  KvCache kv_cache{};
  DType dtype{};
  bool token_metrics{};
  bool cuda_graph{};
};

// Whether bench-infer decodes by fixed-shape steps: greedy, one beam, a static cache
// (docs/infer.md). Those steps are replayed as a CUDA graph on a GPU unless infer.cuda_graph is
// off. The generator decodes by this rule and the time model predicts by it.
inline bool fixed_shape_decode(KvCache cache, bool do_sample, std::int64_t beams) {
  return cache == KvCache::kStatic && !do_sample && beams <= 1;
}

template <class Keys>
void infer_keys(Keys& key) {
  key(&InferSettings::input_tokens, "infer.input_tokens", 128, "Prompt tokens per sequence")
      .min(1)
      .max(1 << 24)
      .only_for({"infer"});
  key(&InferSettings::output_tokens, "infer.output_tokens", 128,
      "Tokens generated per sequence; every run generates exactly this many (no early stop)")
      .min(1)
      .max(1 << 24)
      .only_for({"infer"});
  key(&InferSettings::batch_size, "infer.batch_size", 1, "Prompts generated together per rank")
      .min(1)
      .max(1 << 20)
      .only_for({"infer"});
  key(&InferSettings::num_beams, "infer.num_beams", 1,
      "1: greedy or sampled decoding; more: beam search with this many beams per prompt")
      .min(1)
      .max(1024)
      .only_for({"infer"});
  key(&InferSettings::do_sample, "infer.do_sample", false,
      "Sample each token (temperature, top_k, top_p) instead of taking the most likely")
      .only_for({"infer"});
  key(&InferSettings::temperature, "infer.temperature", 1.0, "Sampling temperature")
      .min(0.0, true)
      .only_for({"infer"});
  key(&InferSettings::top_k, "infer.top_k", 0, "Sample among the k most likely tokens; 0: all")
      .min(0)
      .only_for({"infer"});
  key(&InferSettings::top_p, "infer.top_p", 1.0,
      "Sample among the most likely tokens whose probabilities sum to p (nucleus); 1: all")
      .min(0.0, true)
      .max(1.0)
      .only_for({"infer"});
  key(&InferSettings::seed, "infer.seed", 1234,
      "Seed for the weights, the synthetic prompts and sampling (each rank offsets it for its "
      "prompts)")
      .min(0)
      .only_for({"infer"});
  key(&InferSettings::warmup_runs, "infer.warmup_runs", 1,
      "Generations before the timed ones, left out of every statistic")
      .min(0)
      .only_for({"infer"});
  key(&InferSettings::runs, "infer.runs", 5, "Timed generations").min(1).only_for({"infer"});
  key(&InferSettings::kv_cache, "infer.kv_cache", KvCache::kStatic,
      "static: keys and values allocated once for input + output tokens; dynamic: grown as "
      "tokens come; none: recompute the whole prefix at every step (the baseline)")
      .only_for({"infer"});
  key(&InferSettings::dtype, "infer.dtype", DType::kFp32,
      "Weights, activations and the KV cache in fp32, bf16 or fp16 (fp16 needs a GPU)")
      .only_for({"infer"});
  key(&InferSettings::token_metrics, "infer.token_metrics", true,
      "Time every decode step (waits for the device after each token); off: only the first "
      "token and the whole generation are timed")
      .only_for({"infer"});
  // Added after results existed: at its default, earlier configs keep their hash and tag (on
  // CPUs nothing changed; on GPUs the rank file's infer/cuda_graph says which path ran).
  key(&InferSettings::cuda_graph, "infer.cuda_graph", true,
      "Replay each decode step as a CUDA graph (one launch instead of hundreds of kernels); "
      "used only where eligible: a GPU, kv_cache static, greedy (do_sample false), num_beams 1; "
      "elsewhere ignored")
      .hashed_unless_default()
      .tagged_unless_default()
      .only_for({"infer"});
}

struct EvalSettings {
  std::int64_t steps{}, micro_batch{};
};

template <class Keys>
void eval_keys(Keys& key) {
  key(&EvalSettings::steps, "eval.steps", 10,
      "Evaluation batches after training; 0 skips evaluation")
      .min(0)
      .only_for({"train"});
  key(&EvalSettings::micro_batch, "eval.micro_batch", std::nullopt,
      "Sequences per evaluation batch; null = train.micro_batch")
      .min(1)
      .max(1 << 20)
      .derived()
      .only_for({"train"});
}

struct DataSettings {
  DataSource source{};
  std::optional<std::string> path;
  std::int64_t seq_len{};
  TokenDType token_dtype{};
  double eval_fraction{};
};

template <class Keys>
void data_keys(Keys& key) {
  key(&DataSettings::source, "data.source", DataSource::kSynthetic,
      "synthetic: random token ids; tokens: a binary file of token ids; text: a UTF-8 file "
      "read as byte-level tokens")
      .only_for({"train", "infer"});
  key(&DataSettings::path, "data.path", std::nullopt,
      "The data file for data.source tokens or text")
      .only_for({"train", "infer"});
  key(&DataSettings::seq_len, "data.seq_len", std::nullopt,
      "Tokens per sequence; every sequence is exactly this long; null = model.block_size")
      .min(1)
      .max(1 << 24)
      .derived()
      .only_for({"train", "infer"});
  key(&DataSettings::token_dtype, "data.token_dtype", TokenDType::kUint16,
      "Element type of a headerless tokens file (llm.c .bin files carry their own)")
      .only_for({"train", "infer"});
  key(&DataSettings::eval_fraction, "data.eval_fraction", 0.1,
      "Share of the data file held out for evaluation")
      .min(0.0)
      .max(0.5)
      .only_for({"train", "infer"});
}

struct LaunchSettings {
  std::int64_t ranks{}, nodes{}, gpus_per_rank{};
  std::int64_t tensor_parallel{};  // bench-train: blocks split over groups of this many ranks
  std::optional<std::int64_t> cpus_per_rank;
  Device device{};
  std::string launcher;  // a registered launcher's name, or auto
  std::vector<std::string> mpirun_args, srun_args;
  std::map<std::string, std::string> env;
  std::vector<std::string> setup;  // shell lines before the command; may hold {placeholders}
  bool malloc_cache{};
  Exclusive exclusive{};
  // launch.exclusive with auto decided: alone on its nodes when it spans several.
  bool alone_on_its_nodes() const {
    return exclusive == Exclusive::kNode || (exclusive == Exclusive::kAuto && nodes > 1);
  }
};

template <class Keys>
void launch_keys(Keys& key) {
  // The ranges are far past any machine (16 Mi ranks, 1 Mi nodes); they keep the predictions'
  // arithmetic (ranks x hours, a rank's share of a model) in range (docs/security.md).
  key(&LaunchSettings::ranks, "launch.ranks", 1, "MPI ranks in total (the world size)")
      .min(1)
      .max(std::int64_t{1} << 24);
  key(&LaunchSettings::nodes, "launch.nodes", 1,
      "Nodes the ranks are spread over; must divide launch.ranks")
      .min(1)
      .max(std::int64_t{1} << 20);
  key(&LaunchSettings::gpus_per_rank, "launch.gpus_per_rank", 0,
      "GPUs each rank asks the scheduler for; 0 = none")
      .min(0)
      .max(1024);
  key(&LaunchSettings::tensor_parallel, "launch.tensor_parallel", 1,
      "Tensor parallelism t (bench-train): each block's projections split over groups of t "
      "consecutive ranks (Megatron-style), data parallelism over launch.ranks / t")
      .min(1)
      .max(std::int64_t{1} << 24)
      .hashed_unless_default()
      .only_for({"train"});
  key(&LaunchSettings::cpus_per_rank, "launch.cpus_per_rank", std::nullopt,
      "CPU cores (and compute threads) per rank; null = the node's cores / ranks on it, fewer "
      "threads where other processes use them as the run starts")
      .min(1)
      .max(std::int64_t{1} << 20);
  key(&LaunchSettings::device, "launch.device", Device::kAuto,
      "Where each rank computes: cuda, cpu, or auto (cuda when a GPU is visible)");
  key(&LaunchSettings::launcher, "launch.launcher", "auto",
      "How ranks start: auto (srun inside SLURM, mpirun for several ranks, else a plain exec), "
      "local, mpirun or srun")
      .choices({"auto", "local", "mpirun", "srun"});
  key(&LaunchSettings::mpirun_args, "launch.mpirun_args", {}, "Extra arguments for mpirun");
  key(&LaunchSettings::srun_args, "launch.srun_args", {}, "Extra arguments for srun");
  key(&LaunchSettings::env, "launch.env", {}, "Environment variables set for every rank");
  key(&LaunchSettings::setup, "launch.setup", {},
      "Shell lines run before the point's command, in one bash (module load, conda activate "
      "{params.env}); placeholders become single-quoted words; the lines are your own shell code")
      .hashed_unless_default();
  key(&LaunchSettings::exclusive, "launch.exclusive", Exclusive::kAuto,
      "Whether a point shares its nodes with other points that bench-sweep run --jobs runs at "
      "once: node (alone on its nodes), shared (beside others, on cores and GPUs of its own), "
      "auto (node for a point over several nodes, else shared)")
      .unhashed()
      .tagged_unless_default();
  key(&LaunchSettings::malloc_cache, "launch.malloc_cache", true,
      "Keep freed host memory in the process (glibc: no mmap, no trim) so steps do not "
      "page-fault it back; the resident set then stays at its peak");
}

struct MetricsSettings {
  std::int64_t sample_interval_ms{}, log_every{};
  bool system{};
  // metrics.profile_steps: the first and last step traced (inclusive); none when null.
  std::optional<std::pair<std::int64_t, std::int64_t>> profile_steps;
  // metrics.profile_activities: cpu, cuda; empty when null (the device's own: cpu, and cuda too
  // on a GPU).
  std::vector<std::string> profile_activities;
  // metrics.target_ci: measure until the 95% interval of the mean step time is within this
  // fraction of it (train.steps then the least); none when null.
  std::optional<double> target_ci;
  double max_seconds{};  // metrics.max_seconds: the measured part's budget with target_ci
};

template <class Keys>
void metrics_keys(Keys& key) {
  key(&MetricsSettings::sample_interval_ms, "metrics.sample_interval_ms", 1000,
      "Period of the background memory/CPU sampler; 0 keeps only the first and last samples")
      .min(0)
      .only_for({"train", "infer"});
  key(&MetricsSettings::system, "metrics.system", true, "Sample CPU utilisation and RAM over time")
      .only_for({"train", "infer"});
  key(&MetricsSettings::log_every, "metrics.log_every", 10,
      "Steps between progress lines on rank 0")
      .min(1)
      .only_for({"train", "infer"});
  key(&MetricsSettings::profile_steps, "metrics.profile_steps", std::nullopt,
      "Steps to trace with libtorch's profiler, \"N\" or \"FIRST-LAST\" (0-based): one Chrome "
      "trace per rank in profile/, the steps left out of every statistic; null = none")
      .hashed_unless_default()
      .only_for({"train"});
  key(&MetricsSettings::profile_activities, "metrics.profile_activities", std::nullopt,
      "What metrics.profile_steps records: cpu (libtorch's ops and the step's phases), cuda "
      "(kernels and copies on the GPU, where libtorch has Kineto); null = cpu, and cuda too on "
      "a GPU")
      .hashed_unless_default()
      .only_for({"train"});
  key(&MetricsSettings::target_ci, "metrics.target_ci", std::nullopt,
      "Measure until the 95% interval of the mean step time (bench-infer: generation time) is "
      "within this fraction of it, e.g. 0.02: train.steps (infer.runs) is then the least, "
      "metrics.max_seconds the most; null = exactly train.steps (infer.runs)")
      .min(0.0, true)
      .max(1.0)
      .hashed_unless_default()
      .tagged_unless_default()
      .only_for({"train", "infer"});
  key(&MetricsSettings::max_seconds, "metrics.max_seconds", 60.0,
      "With metrics.target_ci: the measured steps' (timed runs') time budget in seconds; a point "
      "that spends it without reaching the target is marked")
      .min(0.0, true)
      .hashed_unless_default()
      .tagged_unless_default()
      .only_for({"train", "infer"});
}

struct ContainerSettings {
  std::string runtime;  // a registered runtime's name, or none
  std::string image;    // "" when null
  std::vector<std::string> binds;
  std::map<std::string, std::string> env;
  std::optional<std::string> workdir;
  std::vector<std::string> extra_args;
};

template <class Keys>
void container_keys(Keys& key) {
  key(&ContainerSettings::runtime, "container.runtime", "none",
      "Container runtime that wraps each rank, or none")
      .choices({"none", "apptainer", "singularity", "enroot", "charliecloud", "podman"});
  key(&ContainerSettings::image, "container.image", std::nullopt,
      "Image: a SIF file, squashfs, directory image or registry reference");
  key(&ContainerSettings::binds, "container.binds", {}, "Bind mounts, each src:dst[:ro]");
  key(&ContainerSettings::env, "container.env", {},
      "Environment variables passed into the container");
  key(&ContainerSettings::workdir, "container.workdir", std::nullopt,
      "Working directory inside the container");
  key(&ContainerSettings::extra_args, "container.extra_args", {},
      "Extra arguments passed to the runtime unchanged");
}

struct SlurmSettings {
  std::optional<std::string> partition, time, account, qos, constraint, mem, job_name, mail_type,
      mail_user;
  bool exclusive{};
  std::int64_t max_requeue{}, signal_seconds{};
  std::vector<std::string> extra_args;
};

template <class Keys>
void slurm_keys(Keys& key) {
  key(&SlurmSettings::partition, "slurm.partition", std::nullopt,
      "Partition (decides the hardware, so it is hashed)");
  key(&SlurmSettings::time, "slurm.time", std::nullopt,
      "Time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS")
      .unhashed()
      .slurm_time();
  key(&SlurmSettings::account, "slurm.account", std::nullopt, "Account to charge").unhashed();
  key(&SlurmSettings::qos, "slurm.qos", std::nullopt, "Quality of service").unhashed();
  key(&SlurmSettings::constraint, "slurm.constraint", std::nullopt,
      "Node features required (--constraint)");
  key(&SlurmSettings::mem, "slurm.mem", std::nullopt, "Memory per node (--mem), e.g. 64G");
  key(&SlurmSettings::exclusive, "slurm.exclusive", true, "Ask for whole nodes (--exclusive)");
  key(&SlurmSettings::max_requeue, "slurm.max_requeue", 1,
      "How often a timed-out or preempted point is requeued")
      .min(0)
      .unhashed();
  key(&SlurmSettings::signal_seconds, "slurm.signal_seconds", 120,
      "Seconds before the time limit that bench-train is warned (--signal)")
      .min(0)
      .unhashed();
  key(&SlurmSettings::job_name, "slurm.job_name", std::nullopt,
      "Job name; null = sweepbench-NAME (the sweep's name)")
      .unhashed();
  key(&SlurmSettings::mail_type, "slurm.mail_type", std::nullopt, "--mail-type, e.g. END,FAIL")
      .unhashed();
  key(&SlurmSettings::mail_user, "slurm.mail_user", std::nullopt, "--mail-user").unhashed();
  key(&SlurmSettings::extra_args, "slurm.extra_args", {},
      "Extra sbatch arguments, e.g. [--gres=gpu:8]");
}

struct HardwareSettings {
  std::optional<std::string> name;
  std::optional<double> peak_tflops, peak_bandwidth_gbs, price_per_hour, assumed_mfu,
      link_bandwidth_gbs;
};

template <class Keys>
void hardware_keys(Keys& key) {
  key(&HardwareSettings::name, "hardware.name", std::nullopt,
      "A label for the hardware, e.g. H100-SXM5");
  key(&HardwareSettings::peak_tflops, "hardware.peak_tflops", std::nullopt,
      "Peak dense TFLOPS per device for the run's dtype (train.dtype, infer.dtype), for MFU; "
      "null = the built-in table (GPUs) or no MFU (CPU)")
      .min(0.0, true)
      .unhashed();
  key(&HardwareSettings::peak_bandwidth_gbs, "hardware.peak_bandwidth_gbs", std::nullopt,
      "Peak memory bandwidth per device in GB/s, for bench-infer's MBU; null = the built-in "
      "table (GPUs) or, on a CPU, a copy bandwidth measured at the start of the run")
      .min(0.0, true)
      .unhashed();
  key(&HardwareSettings::price_per_hour, "hardware.price_per_hour", std::nullopt,
      "Price of one device-hour in USD, for cost per million tokens and the predicted cost")
      .min(0.0)
      .unhashed();
  key(&HardwareSettings::assumed_mfu, "hardware.assumed_mfu", std::nullopt,
      "The fraction of hardware.peak_tflops a step sustains, for the predicted time (bench-sweep "
      "plan --estimate); null = sweepbench's measured figure (docs/metrics.md)")
      .min(0.0, true)
      .max(1.0)
      .unhashed()
      .tagged_unless_default();
  key(&HardwareSettings::link_bandwidth_gbs, "hardware.link_bandwidth_gbs", std::nullopt,
      "Bandwidth in GB/s a rank sends to the others at, for the predicted communication time; "
      "null = the built-in table (NVLink in a node, 50 GB/s between nodes; 2 GB/s between CPU "
      "ranks, measured)")
      .min(0.0, true)
      .unhashed()
      .tagged_unless_default();
}

struct Settings {
  std::string benchmark;
  std::string model_preset;
  TrainSettings train;
  EvalSettings eval;
  InferSettings infer;
  DataSettings data;
  LaunchSettings launch;
  MetricsSettings metrics;
  ContainerSettings container;
  SlurmSettings slurm;
  HardwareSettings hardware;

  // Every key of a resolved config (resolve_config's output: every key present and checked), read
  // by the schema's table: each key with a field names it there.
  static Settings of(const Value& resolved);
  // Every key at its schema default (a config of nothing but defaults, resolved).
  static const Settings& defaults();
};

}  // namespace sweepbench
