// A resolved config read once into typed settings (docs/config.md lists the keys). The code that
// runs a point reads these fields, not keys by string path; choices with a fixed set of values
// are enums. The launcher and the container runtime stay names: they are keys of registries
// (launch/), which a new backend extends without an edit here.
//
// Each field is declared with its key in the schema table (core/schema.cc: path, type, default,
// range, doc and `.into(&Settings::section, &Section::field)`), which Settings::of reads by. The
// defaults live there only: the fields here start zero, and Settings::defaults() is every key at
// its schema default. docs/architecture.md shows adding a setting.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/value.h"

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
  bool fused_loss{};   // the head's cross-entropy over chunks of tokens, without the logits
  bool cpu_kernels{};  // on CPUs, our one-pass cross-entropy of the head (cpu_kernels.h)
  // lora: adapters of rank lora_r on the projections of lora_targets, every other weight frozen
  // (no gradient, no optimizer state); targets resolved from the model's defaults when the key
  // is null (docs/train.md).
  Peft peft{};
  std::int64_t lora_r{};
  double lora_alpha{}, lora_dropout{};
  std::vector<std::string> lora_targets;
  bool lora() const { return peft == Peft::kLora; }
};

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
};

struct EvalSettings {
  std::int64_t steps{}, micro_batch{};
};

struct DataSettings {
  DataSource source{};
  std::optional<std::string> path;
  std::int64_t seq_len{};
  TokenDType token_dtype{};
  double eval_fraction{};
};

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

struct MetricsSettings {
  std::int64_t sample_interval_ms{}, log_every{};
  bool system{};
  // metrics.profile_steps: the first and last step traced (inclusive); none when null.
  std::optional<std::pair<std::int64_t, std::int64_t>> profile_steps;
  // metrics.profile_activities: cpu, cuda; empty when null (the device's own: cpu, and cuda too
  // on a GPU).
  std::vector<std::string> profile_activities;
};

// "N" or "FIRST-LAST" (0 <= FIRST <= LAST) as a range of steps; nullopt when it is neither.
std::optional<std::pair<std::int64_t, std::int64_t>> parse_step_range(const std::string& text);

struct ContainerSettings {
  std::string runtime;  // a registered runtime's name, or none
  std::string image;    // "" when null
  std::vector<std::string> binds;
  std::map<std::string, std::string> env;
  std::optional<std::string> workdir;
  std::vector<std::string> extra_args;
};

struct SlurmSettings {
  std::optional<std::string> partition, time, account, qos, constraint, mem, job_name, mail_type,
      mail_user;
  bool exclusive{};
  std::int64_t max_requeue{}, signal_seconds{};
  std::vector<std::string> extra_args;
};

struct HardwareSettings {
  std::optional<std::string> name;
  std::optional<double> peak_tflops, peak_bandwidth_gbs, price_per_hour;
};

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
