#include "core/settings.h"

#include <stdexcept>

#include "core/config.h"
#include "core/model_shapes.h"
#include "core/text.h"

namespace sweepbench {
namespace {

const Value& at(const Value& c, const char* path) { return config_at(c, path); }

std::optional<std::string> text_or_null(const Value& c, const char* path) {
  const Value& v = at(c, path);
  if (v.is_null()) return std::nullopt;
  return v.as_string();
}

std::vector<std::string> strings(const Value& c, const char* path) {
  std::vector<std::string> out;
  for (const Value& v : at(c, path).items()) out.push_back(v.as_string());
  return out;
}

// lora.targets, or the architecture's defaults when it is null.
std::vector<std::string> lora_targets(const Value& c) {
  if (at(c, "lora.targets").is_null()) return default_lora_targets(at(c, "model.arch").as_string());
  return strings(c, "lora.targets");
}

std::map<std::string, std::string> string_map(const Value& c, const char* path) {
  std::map<std::string, std::string> out;
  for (const Value::Entry& e : at(c, path).entries()) out[e.key] = e.value.as_string();
  return out;
}

// The schema has checked the value is one of its choices; anything else is a bug.
template <class E>
E choice(const Value& c, const char* path, std::initializer_list<std::pair<const char*, E>> all) {
  const std::string& s = at(c, path).as_string();
  for (const auto& [name, value] : all) {
    if (s == name) return value;
  }
  throw std::logic_error(std::string(path) + ": unexpected value '" + s + "'");
}

}  // namespace

std::string to_string(DType d) {
  switch (d) {
    case DType::kFp32:
      return "fp32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
  }
  return "fp32";
}

std::string to_string(Device d) {
  switch (d) {
    case Device::kAuto:
      return "auto";
    case Device::kCpu:
      return "cpu";
    case Device::kCuda:
      return "cuda";
  }
  return "auto";
}

std::string to_string(DataSource s) {
  switch (s) {
    case DataSource::kSynthetic:
      return "synthetic";
    case DataSource::kTokens:
      return "tokens";
    case DataSource::kText:
      return "text";
  }
  return "synthetic";
}

std::string to_string(KvCache k) {
  switch (k) {
    case KvCache::kStatic:
      return "static";
    case KvCache::kDynamic:
      return "dynamic";
    case KvCache::kNone:
      return "none";
  }
  return "static";
}

std::string to_string(TokenDType t) { return t == TokenDType::kUint32 ? "uint32" : "uint16"; }

Settings Settings::of(const Value& c) {
  Settings s;
  s.benchmark = at(c, "benchmark").as_string();
  s.model_preset = at(c, "model.preset").as_string();

  TrainSettings& t = s.train;
  t.steps = at(c, "train.steps").as_int();
  t.warmup_steps = at(c, "train.warmup_steps").as_int();
  t.micro_batch = at(c, "train.micro_batch").as_int();
  t.grad_accum = at(c, "train.grad_accum").as_int();
  t.dtype = choice<DType>(c, "train.dtype",
                          {{"fp32", DType::kFp32}, {"bf16", DType::kBf16}, {"fp16", DType::kFp16}});
  t.lr = at(c, "train.lr").as_float();
  t.weight_decay = at(c, "train.weight_decay").as_float();
  t.beta1 = at(c, "train.beta1").as_float();
  t.beta2 = at(c, "train.beta2").as_float();
  t.eps = at(c, "train.eps").as_float();
  t.grad_clip = at(c, "train.grad_clip").as_float();
  t.seed = static_cast<std::uint64_t>(at(c, "train.seed").as_int());
  t.activation_checkpointing = at(c, "train.activation_checkpointing").as_bool();
  t.loss_scale = at(c, "train.loss_scale").as_float();
  t.zero_stage = at(c, "train.zero_stage").as_int();
  t.bucket_mb = at(c, "train.bucket_mb").as_float();
  t.offload_optimizer = at(c, "train.offload_optimizer").as_bool();
  t.overlap_comm = at(c, "train.overlap_comm").as_bool();
  t.fused_loss = at(c, "train.fused_loss").as_bool();
  t.cpu_kernels = at(c, "train.cpu_kernels").as_bool();
  t.lora = at(c, "train.peft").as_string() == "lora";
  t.lora_r = at(c, "lora.r").as_int();
  t.lora_alpha = at(c, "lora.alpha").as_float();
  t.lora_dropout = at(c, "lora.dropout").as_float();
  t.lora_targets = lora_targets(c);

  s.eval.steps = at(c, "eval.steps").as_int();
  s.eval.micro_batch = at(c, "eval.micro_batch").as_int();

  InferSettings& n = s.infer;
  n.input_tokens = at(c, "infer.input_tokens").as_int();
  n.output_tokens = at(c, "infer.output_tokens").as_int();
  n.batch_size = at(c, "infer.batch_size").as_int();
  n.num_beams = at(c, "infer.num_beams").as_int();
  n.do_sample = at(c, "infer.do_sample").as_bool();
  n.temperature = at(c, "infer.temperature").as_float();
  n.top_k = at(c, "infer.top_k").as_int();
  n.top_p = at(c, "infer.top_p").as_float();
  n.seed = static_cast<std::uint64_t>(at(c, "infer.seed").as_int());
  n.warmup_runs = at(c, "infer.warmup_runs").as_int();
  n.runs = at(c, "infer.runs").as_int();
  n.kv_cache = choice<KvCache>(
      c, "infer.kv_cache",
      {{"static", KvCache::kStatic}, {"dynamic", KvCache::kDynamic}, {"none", KvCache::kNone}});
  n.dtype = choice<DType>(c, "infer.dtype",
                          {{"fp32", DType::kFp32}, {"bf16", DType::kBf16}, {"fp16", DType::kFp16}});
  n.token_metrics = at(c, "infer.token_metrics").as_bool();

  DataSettings& d = s.data;
  d.source = choice<DataSource>(c, "data.source",
                                {{"synthetic", DataSource::kSynthetic},
                                 {"tokens", DataSource::kTokens},
                                 {"text", DataSource::kText}});
  d.path = text_or_null(c, "data.path");
  d.seq_len = at(c, "data.seq_len").as_int();
  d.token_dtype = choice<TokenDType>(
      c, "data.token_dtype", {{"uint16", TokenDType::kUint16}, {"uint32", TokenDType::kUint32}});
  d.eval_fraction = at(c, "data.eval_fraction").as_float();

  LaunchSettings& l = s.launch;
  l.ranks = at(c, "launch.ranks").as_int();
  l.tensor_parallel = at(c, "launch.tensor_parallel").as_int();
  l.nodes = at(c, "launch.nodes").as_int();
  l.gpus_per_rank = at(c, "launch.gpus_per_rank").as_int();
  if (const Value& cpus = at(c, "launch.cpus_per_rank"); !cpus.is_null()) {
    l.cpus_per_rank = cpus.as_int();
  }
  l.device =
      choice<Device>(c, "launch.device",
                     {{"auto", Device::kAuto}, {"cpu", Device::kCpu}, {"cuda", Device::kCuda}});
  l.launcher = at(c, "launch.launcher").as_string();
  l.mpirun_args = strings(c, "launch.mpirun_args");
  l.srun_args = strings(c, "launch.srun_args");
  l.env = string_map(c, "launch.env");
  l.setup = strings(c, "launch.setup");
  l.malloc_cache = at(c, "launch.malloc_cache").as_bool();
  l.exclusive = choice<Exclusive>(
      c, "launch.exclusive",
      {{"auto", Exclusive::kAuto}, {"node", Exclusive::kNode}, {"shared", Exclusive::kShared}});

  s.metrics.sample_interval_ms = at(c, "metrics.sample_interval_ms").as_int();
  s.metrics.system = at(c, "metrics.system").as_bool();
  s.metrics.log_every = at(c, "metrics.log_every").as_int();
  if (const Value& p = at(c, "metrics.profile_steps"); !p.is_null()) {
    s.metrics.profile_steps = parse_step_range(p.as_string());
  }
  if (!at(c, "metrics.profile_activities").is_null()) {
    s.metrics.profile_activities = strings(c, "metrics.profile_activities");
  }

  ContainerSettings& k = s.container;
  k.runtime = at(c, "container.runtime").as_string();
  k.image = text_or_null(c, "container.image").value_or("");
  k.binds = strings(c, "container.binds");
  k.env = string_map(c, "container.env");
  k.workdir = text_or_null(c, "container.workdir");
  k.extra_args = strings(c, "container.extra_args");

  SlurmSettings& u = s.slurm;
  u.partition = text_or_null(c, "slurm.partition");
  u.time = text_or_null(c, "slurm.time");
  u.account = text_or_null(c, "slurm.account");
  u.qos = text_or_null(c, "slurm.qos");
  u.constraint = text_or_null(c, "slurm.constraint");
  u.mem = text_or_null(c, "slurm.mem");
  u.exclusive = at(c, "slurm.exclusive").as_bool();
  u.max_requeue = at(c, "slurm.max_requeue").as_int();
  u.signal_seconds = at(c, "slurm.signal_seconds").as_int();
  u.job_name = text_or_null(c, "slurm.job_name");
  u.mail_type = text_or_null(c, "slurm.mail_type");
  u.mail_user = text_or_null(c, "slurm.mail_user");
  u.extra_args = strings(c, "slurm.extra_args");

  s.hardware.name = text_or_null(c, "hardware.name");
  if (const Value& v = at(c, "hardware.peak_tflops"); !v.is_null()) {
    s.hardware.peak_tflops = v.as_float();
  }
  if (const Value& v = at(c, "hardware.peak_bandwidth_gbs"); !v.is_null()) {
    s.hardware.peak_bandwidth_gbs = v.as_float();
  }
  if (const Value& v = at(c, "hardware.price_per_hour"); !v.is_null()) {
    s.hardware.price_per_hour = v.as_float();
  }
  return s;
}

std::optional<std::pair<std::int64_t, std::int64_t>> parse_step_range(const std::string& text) {
  size_t dash = text.find('-');
  std::optional<std::int64_t> first = parse_int64(text.substr(0, dash));
  std::optional<std::int64_t> last =
      dash == std::string::npos ? first : parse_int64(text.substr(dash + 1));
  if (!first || !last || *first < 0 || *last < *first) return std::nullopt;
  return std::make_pair(*first, *last);
}

}  // namespace sweepbench
