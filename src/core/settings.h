// A resolved config read once into typed settings (docs/config.md lists the keys). The code that
// runs a point reads these fields, not keys by string path; choices with a fixed set of values
// are enums. The launcher and the container runtime stay names: they are keys of registries
// (launch/), which a new backend extends without an edit here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/value.h"

namespace sweepbench {

enum class DType { kFp32, kBf16, kFp16 };
enum class Device { kAuto, kCpu, kCuda };
enum class Exclusive { kAuto, kNode, kShared };
enum class DataSource { kSynthetic, kTokens, kText };
enum class TokenDType { kUint16, kUint32 };

std::string to_string(DType d);
std::string to_string(Device d);
std::string to_string(DataSource s);
std::string to_string(TokenDType t);

struct TrainSettings {
  std::int64_t steps = 50, warmup_steps = 10, micro_batch = 8, grad_accum = 1;
  DType dtype = DType::kFp32;
  double lr = 3e-4, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, grad_clip = 1.0;
  std::uint64_t seed = 1234;
  bool activation_checkpointing = false;
  double loss_scale = 65536;
  std::int64_t zero_stage = 0;
  double bucket_mb = 25;
  bool offload_optimizer = false;
  bool overlap_comm = false;
  bool fused_loss = false;
  bool cpu_kernels = true;  // train.cpu_kernels
  // train.peft: lora and the lora section (docs/train.md); targets resolved from the model's
  // defaults when the key is null.
  bool lora = false;
  std::int64_t lora_r = 8;
  double lora_alpha = 16, lora_dropout = 0;
  std::vector<std::string> lora_targets;
};

enum class KvCache { kStatic, kDynamic, kNone };
std::string to_string(KvCache k);

// bench-infer's section (docs/infer.md).
struct InferSettings {
  std::int64_t input_tokens = 128, output_tokens = 128, batch_size = 1, num_beams = 1;
  bool do_sample = false;
  double temperature = 1.0, top_p = 1.0;
  std::int64_t top_k = 0;
  std::uint64_t seed = 1234;
  std::int64_t warmup_runs = 1, runs = 5;
  KvCache kv_cache = KvCache::kStatic;
  DType dtype = DType::kFp32;
  bool token_metrics = true;
};

struct EvalSettings {
  std::int64_t steps = 10, micro_batch = 8;
};

struct DataSettings {
  DataSource source = DataSource::kSynthetic;
  std::optional<std::string> path;
  std::int64_t seq_len = 0;
  TokenDType token_dtype = TokenDType::kUint16;
  double eval_fraction = 0.1;
};

struct LaunchSettings {
  std::int64_t ranks = 1, nodes = 1, gpus_per_rank = 0;
  std::int64_t tensor_parallel = 1;  // bench-train only
  std::optional<std::int64_t> cpus_per_rank;
  Device device = Device::kAuto;
  std::string launcher = "auto";  // a registered launcher's name, or auto
  std::vector<std::string> mpirun_args, srun_args;
  std::map<std::string, std::string> env;
  std::vector<std::string> setup;  // shell lines before the command; may hold {placeholders}
  bool malloc_cache = true;
  Exclusive exclusive = Exclusive::kAuto;
  // launch.exclusive with auto decided: alone on its nodes when it spans several.
  bool alone_on_its_nodes() const {
    return exclusive == Exclusive::kNode || (exclusive == Exclusive::kAuto && nodes > 1);
  }
};

struct MetricsSettings {
  std::int64_t sample_interval_ms = 1000, log_every = 10;
  bool system = true;
  // metrics.profile_steps: the first and last step traced (inclusive); none when null.
  std::optional<std::pair<std::int64_t, std::int64_t>> profile_steps;
  // metrics.profile_activities: cpu, cuda; empty when null (the device's own: cpu, and cuda too
  // on a GPU).
  std::vector<std::string> profile_activities;
};

// "N" or "FIRST-LAST" (0 <= FIRST <= LAST) as a range of steps; nullopt when it is neither.
std::optional<std::pair<std::int64_t, std::int64_t>> parse_step_range(const std::string& text);

struct ContainerSettings {
  std::string runtime = "none";  // a registered runtime's name, or none
  std::string image;             // "" when null
  std::vector<std::string> binds;
  std::map<std::string, std::string> env;
  std::optional<std::string> workdir;
  std::vector<std::string> extra_args;
};

struct SlurmSettings {
  std::optional<std::string> partition, time, account, qos, constraint, mem, job_name, mail_type,
      mail_user;
  bool exclusive = true;
  std::int64_t max_requeue = 1, signal_seconds = 120;
  std::vector<std::string> extra_args;
};

struct HardwareSettings {
  std::optional<std::string> name;
  std::optional<double> peak_tflops, peak_bandwidth_gbs, price_per_hour;
};

struct Settings {
  std::string benchmark = "train";
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

  // Every key of a resolved config (resolve_config's output: every key present and checked).
  static Settings of(const Value& resolved);
};

}  // namespace sweepbench
