#include "predict/time_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "config/config.h"
#include "config/settings.h"
#include "metrics/statistics.h"
#include "os/hardware.h"
#include "predict/memory_model.h"

namespace sweepbench {
namespace {

double dbl(std::int64_t v) { return static_cast<double>(v); }

// The steps (generations) a run takes at least: `planned`, or with metrics.target_ci the warm-up
// and `fewest` measured ones where the budget allows (bench-train and bench-infer never stop
// earlier; a noisy point goes on longer, up to max_seconds of measured time).
double least_measured(const TimeInput& in, std::int64_t planned, size_t fewest, double step_s) {
  if (!in.until_precise || !(step_s > 0)) return dbl(planned);
  const double measured =
      std::min(dbl(static_cast<std::int64_t>(fewest)), std::ceil(in.max_seconds / step_s));
  return std::max(dbl(planned), dbl(in.warmup) + measured);
}

std::string fixed(double v, int digits) {
  char text[48];
  std::snprintf(text, sizeof(text), "%.*f", digits, v);
  return text;
}

// The parameters inside the blocks (what recomputation runs again and a decode step reads
// besides the head): all but the embeddings and a separate head.
double body_parameters(const ModelShape& s) {
  const double embeddings = dbl(s.vocab_size) * dbl(s.n_embd) + dbl(position_embedding_count(s));
  const double head = s.arch == "llama" ? dbl(s.vocab_size) * dbl(s.n_embd) : 0;
  return dbl(parameter_count(s)) - embeddings - head;
}

// FLOPs a second one rank sustains, and where the figure came from; 0 when nothing gives one.
// The GPU the tables are read for: hardware.name, else kAssumedGpu.
std::string gpu_name(const TimeInput& in) {
  return in.hardware_name.empty() ? kAssumedGpu : in.hardware_name;
}

// The measured MFU a GPU reaches for this model and dtype (TimeConstants).
double gpu_mfu_for(const TimeInput& in, const TimeConstants& k) {
  if (in.dtype == "fp32") return k.gpu_mfu_fp32;
  const double d = dbl(in.shape.n_embd);
  const double wide = std::clamp(
      (d - k.gpu_mfu_narrow_width) / (k.gpu_mfu_wide_width - k.gpu_mfu_narrow_width), 0.0, 1.0);
  return k.gpu_mfu + wide * (k.gpu_mfu_wide - k.gpu_mfu);
}

double rank_rate(const TimeInput& in, const TimeConstants& k, std::string* source,
                 std::string* missing) {
  if (in.gpu) {
    std::optional<double> peak = in.peak_tflops;
    std::string from = "hardware.peak_tflops";
    if (!peak) {
      peak = peak_tflops_for(gpu_name(in), in.dtype);
      from = gpu_name(in) + (in.hardware_name.empty() ? " (assumed: no hardware.name) " : " ") +
             in.dtype + " peak";
    }
    if (!peak) {
      *missing = peak_tflops_for(gpu_name(in), "fp16")
                     ? gpu_name(in) + " has no " + in.dtype +
                           " peak in the table: set "
                           "hardware.peak_tflops"
                     : "hardware.name " + in.hardware_name +
                           " is not in the table: name a GPU it knows (H100, A100, ...) or set "
                           "hardware.peak_tflops";
      return 0;
    }
    const double mfu = in.assumed_mfu.value_or(gpu_mfu_for(in, k));
    *source = from + " " + fixed(*peak, 1) + " TFLOPS x MFU " + fixed(mfu, 2) +
              (in.assumed_mfu ? " (hardware.assumed_mfu)" : " (measured)");
    return *peak * 1e12 * mfu;  // one device a rank, as bench-train and bench-infer use
  }
  if (in.peak_tflops && in.assumed_mfu) {
    *source = "hardware.peak_tflops x hardware.assumed_mfu";
    return *in.peak_tflops * 1e12 * *in.assumed_mfu;
  }
  const double per_core = in.dtype == "fp32" ? k.cpu_gflops_fp32 : k.cpu_gflops_bf16;
  *source = "reference CPU " + fixed(per_core, 0) + " GFLOPS a core x " +
            fixed(in.cores_per_rank, 0) + " cores";
  return per_core * 1e9 * in.cores_per_rank;
}

// Memory bandwidth a rank has for its optimizer and decode steps, bytes a second.
double rank_bandwidth(const TimeInput& in, const TimeConstants& k) {
  if (in.gpu) {
    // A peak, the configured or the table's (a GPU it lacks: an H100's), at the share reached.
    const std::optional<double> peak =
        in.bandwidth_gbs ? in.bandwidth_gbs : peak_bandwidth_gbs_for(gpu_name(in));
    return peak.value_or(3350.0) * 1e9 * k.gpu_bandwidth_share;
  }
  if (in.bandwidth_gbs) return *in.bandwidth_gbs * 1e9;
  return k.cpu_bandwidth_gbs * 1e9 * std::min(1.0, in.cores_per_rank / 2.0);
}

// What launching one layer's kernels of a decode step costs on a GPU (a Llama block has more
// kernels than a GPT-2 one: the rotary embedding, RMSNorm's parts, the gated MLP).
double gpu_decode_layer_s(const TimeInput& in, const TimeConstants& k) {
  return in.shape.arch == "llama" ? k.gpu_decode_layer_llama_s : k.gpu_decode_layer_gpt2_s;
}

// The GPU's work and the CPU's launching overlap; the step is their smooth maximum.
double launch_bound(double work_s, double launch_s) {
  return std::sqrt(work_s * work_s + launch_s * launch_s);
}

double link_rate(const TimeInput& in, const TimeConstants& k) {
  if (in.link_gbs) return *in.link_gbs * 1e9;
  if (!in.gpu) return k.cpu_link_gbs * 1e9;
  if (in.nodes > 1) return k.inter_node_link_gbs * 1e9;
  return link_bandwidth_gbs_for(gpu_name(in)).value_or(k.inter_node_link_gbs) * 1e9;
}

void finish(const TimeInput& in, TimePrediction* p) {
  p->assumed_gpu = in.gpu && in.hardware_name.empty() && !in.peak_tflops;
  const TimeConstants& k = time_constants();
  if (in.gpu) {
    const double values = dbl(parameter_count(in.shape));
    p->startup_s = in.benchmark == "train"
                       ? k.gpu_startup_train_s + values * k.gpu_startup_train_per_value_s
                       : k.gpu_startup_infer_s + values * k.gpu_startup_infer_per_value_s;
  } else {
    p->startup_s = k.cpu_startup_s + (in.ranks > 1 ? k.cpu_startup_mpi_s : 0);
  }
  p->run_s += p->startup_s;
  p->devices = dbl(in.ranks) * (in.gpu ? std::max(1, in.devices_per_rank) : 1);
  p->device_hours = p->run_s * p->devices / 3600.0;
  if (in.price_per_hour) p->cost_usd = p->device_hours * *in.price_per_hour;
  p->known = true;
}

TimePrediction predict_training(const TimeInput& in) {
  const TimeConstants& k = time_constants();
  TimePrediction p;
  const double rate = rank_rate(in, k, &p.rate, &p.missing);
  if (rate <= 0) return p;
  const ModelShape& s = in.shape;
  const double t = std::max(1, in.tensor_parallel);
  const double dp = std::max(1.0, dbl(in.ranks) / t);  // data-parallel ranks
  const double l = dbl(s.n_layer), d = dbl(s.n_embd), seq = dbl(in.seq_len);
  const double lora_params = in.lora ? dbl(lora_parameter_count(s, in.lora_r, in.lora_targets)) : 0;
  // The FLOPs the step executes: the model FLOPs of MFU (docs/metrics.md) less Llama's token
  // embedding, which is looked up, not multiplied (GPT-2's is the head as well).
  const double lookup = s.arch == "llama" ? dbl(s.vocab_size) * d : 0;
  const double per_token =
      (in.lora ? lora_training_flops_per_token(s, in.seq_len,
                                               lora_parameter_count(s, in.lora_r, in.lora_targets))
               : training_flops_per_token(s, in.seq_len)) -
      (in.lora ? 4 : 6) * lookup;
  // Checkpointing runs the blocks' forward again: 2 N_body + 4 L d T a token (and the
  // adapters' 2 N_lora).
  const double recompute =
      in.activation_checkpointing ? 2 * body_parameters(s) + 2 * lora_params + 4 * l * d * seq : 0;
  const double tokens = dbl(in.micro_batch) * seq;  // a micro step, a rank
  const double accum = dbl(std::max<std::int64_t>(1, in.grad_accum));
  p.flops = accum * tokens * (per_token + recompute) / t;
  p.compute_s = p.flops / rate;

  // The trainable values a rank holds (with tensor parallelism its part of the blocks and the
  // whole embeddings, norms and head) and the collectives over them (ring algorithms: a rank
  // sends (D-1)/D of the buffer for a reduce-scatter or an all-gather, twice that for an
  // all-reduce); fp32.
  const RankModel held = rank_model(s, static_cast<int>(t));
  const double trainable = in.lora ? lora_params / t : held.parameters;
  const double buffer = 4 * trainable, share = (dp - 1) / dp;
  double tp_bytes = 0;
  if (dp > 1) {
    if (in.zero_stage == 3) {
      // Each block's values gathered before its forward and again before its backward, its
      // gradients reduce-scattered, every micro step; the root unit (embeddings, final norm,
      // head) gathered once a step and held through it, its gradients reduce-scattered every
      // micro step. LoRA's adapters are all in blocks.
      const double root = in.lora ? 0 : 4 * held.root;
      p.comm_bytes = share * (accum * 3 * (buffer - root) + (accum + 1) * root);
    } else if (in.zero_stage == 2) {
      p.comm_bytes = accum * share * buffer + share * buffer;
    } else {
      p.comm_bytes = 2 * share * buffer;  // all-reduce, or reduce-scatter + all-gather (stage 1)
    }
  }
  if (t > 1) {
    // Megatron's two all-reduces a block forward, of the row-parallel products (in the autocast
    // dtype), and two backward, of the normed inputs' gradients (fp32: the norms run in fp32);
    // with checkpointing two more forward, for the forward again. Over NCCL (GPUs) each in its
    // own dtype, over MPI (CPUs) all in fp32.
    const double e = in.gpu && in.dtype != "fp32" ? 2 : 4;
    const double forward = in.activation_checkpointing ? 4 : 2;
    tp_bytes = accum * l * 2 * (t - 1) / t * tokens * d * (forward * e + 2 * 4);
  }
  const double link = link_rate(in, k);
  const double dp_comm = p.comm_bytes / link;
  p.comm_bytes += tp_bytes;
  // train.overlap_comm (ZeRO-2 and -3 over MPI, CPUs) runs the gradients' collectives beside the
  // backward (two thirds of the compute): only what is left over shows.
  const bool overlaps = in.overlap_comm && !in.gpu && in.zero_stage >= 2 && dp > 1;
  p.comm_s = (overlaps ? std::max(0.0, dp_comm - p.compute_s * 2 / 3) : dp_comm) + tp_bytes / link;

  // AdamW reads parameter, gradient and two moments and writes three (28 bytes a value, fp32),
  // over the rank's shard from ZeRO-1 on; the gradient norm reads the gradients again.
  const double updated = in.zero_stage >= 1 && dp > 1 ? trainable / dp : trainable;
  p.optimizer_s = (28 * updated + (in.grad_clip ? 4 * trainable : 0)) / rank_bandwidth(in, k);
  // Offloaded on a GPU: the update is the host's, after the GPU's work (the measured constant
  // holds the gradient norm's pass too).
  const bool host_update = in.gpu && in.offload_optimizer;
  if (host_update) p.optimizer_s = updated * k.gpu_offload_s_per_value;
  if (in.gpu) {
    // The chunked loss's elementwise passes over its fp32 logits (it is part of the CPU's
    // measured rate there).
    if (in.fused_loss) {
      p.compute_s += accum * tokens * dbl(s.vocab_size) * k.gpu_fused_loss_bytes_per_logit /
                     rank_bandwidth(in, k);
    }
    // The CPU launches every micro step's kernels; what the GPU's work does not cover shows.
    const double work = p.compute_s + (host_update ? 0 : p.optimizer_s);
    const double launches = accum * l * k.gpu_train_layer_s;
    p.overhead_s = launch_bound(work, launches) - work;
  } else {
    // Each layer's operators dispatched, forward and backward (and forward again).
    const double passes = in.activation_checkpointing ? 3 : 2;
    p.overhead_s = accum * passes * (l + 1) * k.cpu_layer_s;
  }
  p.step_s = p.compute_s + p.optimizer_s + p.overhead_s + p.comm_s;
  p.tokens_per_second = accum * tokens * dp / p.step_s;
  // Evaluation: forward passes only, 2 N + 2 N_lora + 4 L d T a token (less the lookup).
  const double forward = 2 * (dbl(parameter_count(s) - position_embedding_count(s)) - lookup) +
                         2 * lora_params + 4 * l * d * seq;
  const double eval_tokens = dbl(in.eval_micro_batch) * seq;
  const double eval_forward_s = eval_tokens * forward / t / rate;
  const double eval_s =
      dbl(in.eval_steps) * (in.gpu ? launch_bound(eval_forward_s, l * gpu_decode_layer_s(in, k))
                                   : eval_forward_s + (l + 1) * k.cpu_layer_s);
  p.run_s = least_measured(in, in.steps, kFewestToStop, p.step_s) * p.step_s + eval_s;
  finish(in, &p);
  return p;
}

TimePrediction predict_inference(const TimeInput& in) {
  const TimeConstants& k = time_constants();
  TimePrediction p;
  const double rate = rank_rate(in, k, &p.rate, &p.missing);
  if (rate <= 0) return p;
  const ModelShape& s = in.shape;
  const int e = in.dtype == "fp32" ? 4 : 2;
  const double l = dbl(s.n_layer);
  const InferenceCost cost = inference_cost(s, in.sequences, in.input_tokens, in.output_tokens, e);
  const double steps = dbl(std::max<std::int64_t>(0, in.output_tokens - 1));
  double decode_flops = cost.decode_flops;
  double decode_bytes = cost.decode_bytes;
  if (!in.kv_cache) {
    // No cache: step j runs the whole sequence so far again, n = input + j tokens (j = 1 ..
    // output - 1), as a prefill of n: rows (2 N_body n + 4 L d n (n + 1) / 2 + 2 V d), summed in
    // closed form; it reads the weights once (the cached step's weights, without its cache).
    const double a = dbl(in.input_tokens) + 1, b = dbl(in.input_tokens) + steps;  // n's range
    auto sum_n = [](double x) { return x * (x + 1) / 2; };
    auto sum_n2 = [](double x) { return x * (x + 1) * (2 * x + 1) / 6; };
    const double n1 = steps > 0 ? sum_n(b) - sum_n(a - 1) : 0;
    const double n2 = steps > 0 ? sum_n2(b) - sum_n2(a - 1) : 0;
    const double rows = dbl(in.sequences), d = dbl(s.n_embd), v = dbl(s.vocab_size);
    decode_flops =
        rows * (2 * body_parameters(s) * n1 + 4 * l * d * (n2 + n1) / 2 + 2 * v * d * steps);
    const double one_step_weights =
        inference_cost(s, in.sequences, in.input_tokens, 2, e).decode_bytes -
        dbl(in.sequences) * 2 * l * dbl(s.n_kv_head) * (d / dbl(s.n_head)) * e *
            dbl(in.input_tokens + 1);
    decode_bytes = steps * one_step_weights;
  }
  const double bandwidth = rank_bandwidth(in, k);
  p.flops = cost.prefill_flops + decode_flops;
  const double prefill_s = cost.prefill_flops / rate;
  const double decode_compute = decode_flops / rate, decode_memory = decode_bytes / bandwidth;
  if (in.gpu && in.decode_graph) {
    // Each step one graph: its kernels' own time a layer, then the reading or computing; the
    // prefill is launched kernel by kernel.
    const double graph =
        in.shape.arch == "llama" ? k.gpu_graph_layer_llama_s : k.gpu_graph_layer_gpt2_s;
    p.compute_s = prefill_s + std::max(decode_compute, decode_memory);
    p.overhead_s = steps * l * graph + l * gpu_decode_layer_s(in, k);
  } else if (in.gpu) {
    // Each step the slowest of launching, reading and computing.
    const double launch = steps * l * gpu_decode_layer_s(in, k);
    p.compute_s = prefill_s + std::max(decode_compute, decode_memory);
    p.overhead_s = std::max(0.0, launch - std::max(decode_compute, decode_memory)) +
                   l * gpu_decode_layer_s(in, k);
  } else {
    p.compute_s = prefill_s + std::max(decode_compute, decode_memory);
    p.overhead_s = (steps + 1) * (l + 1) * k.cpu_decode_layer_s;
  }
  p.step_s = p.compute_s + p.overhead_s;
  p.tokens_per_second = dbl(in.sequences) * dbl(in.output_tokens) * dbl(in.ranks) / p.step_s;
  p.run_s = least_measured(in, in.generations, kFewestRunsToStop, p.step_s) * p.step_s;
  finish(in, &p);
  return p;
}

}  // namespace

const TimeConstants& time_constants() {
  static const TimeConstants k;
  return k;
}

TimePrediction predict_time(const TimeInput& in) {
  if (in.benchmark == "train") return predict_training(in);
  if (in.benchmark == "infer") return predict_inference(in);
  TimePrediction p;
  p.missing = "no model (a command)";
  return p;
}

bool time_input_of(const Value& resolved, TimeInput* out) {
  const Settings s = Settings::of(resolved);
  const std::string kind = predicted_benchmark(resolved);
  if (kind != "train" && kind != "infer") return false;
  TimeInput in;
  in.benchmark = kind;
  in.shape = model_shape_of(resolved);
  const DType dtype = kind == "train" ? s.train.dtype : s.infer.dtype;
  in.dtype = dtype == DType::kFp32 ? "fp32" : (dtype == DType::kBf16 ? "bf16" : "fp16");
  in.gpu = s.launch.device == Device::kCuda ||
           (s.launch.device == Device::kAuto && s.launch.gpus_per_rank > 0);
  in.until_precise = s.metrics.target_ci.has_value();
  in.max_seconds = s.metrics.max_seconds;
  in.hardware_name = s.hardware.name.value_or("");
  in.peak_tflops = s.hardware.peak_tflops;
  in.assumed_mfu = s.hardware.assumed_mfu;
  in.bandwidth_gbs = s.hardware.peak_bandwidth_gbs;
  in.link_gbs = s.hardware.link_bandwidth_gbs;
  in.price_per_hour = s.hardware.price_per_hour;
  in.ranks = static_cast<int>(s.launch.ranks);
  in.nodes = static_cast<int>(s.launch.nodes);
  in.devices_per_rank = static_cast<int>(std::max<std::int64_t>(1, s.launch.gpus_per_rank));
  // A CPU rank's cores: launch.cpus_per_rank, else this machine's usable cores shared by the
  // ranks a node runs (what bench-train gives itself).
  const double per_node =
      std::ceil(dbl(s.launch.ranks) / dbl(std::max<std::int64_t>(1, s.launch.nodes)));
  in.cores_per_rank = s.launch.cpus_per_rank
                          ? dbl(*s.launch.cpus_per_rank)
                          : std::max(1.0, std::floor(usable_cpu_count() / per_node));
  if (kind == "train") {
    in.micro_batch = s.train.micro_batch;
    in.seq_len = s.data.seq_len;
    in.grad_accum = s.train.grad_accum;
    in.steps = s.train.steps;
    in.warmup = s.train.warmup_steps;
    in.eval_steps = s.eval.steps;
    in.eval_micro_batch = s.eval.micro_batch;
    in.activation_checkpointing = s.train.activation_checkpointing;
    in.fused_loss = s.train.fused_loss;
    in.overlap_comm = s.train.overlap_comm;
    in.offload_optimizer = s.train.offload_optimizer;
    in.grad_clip = s.train.grad_clip > 0;
    in.zero_stage = static_cast<int>(s.train.zero_stage);
    in.tensor_parallel = static_cast<int>(s.launch.tensor_parallel);
    in.lora = s.train.lora();
    in.lora_r = s.train.lora_r;
    in.lora_targets = s.train.lora_targets;
  } else {
    in.sequences = s.infer.batch_size * std::max<std::int64_t>(1, s.infer.num_beams);
    in.input_tokens = s.infer.input_tokens;
    in.output_tokens = s.infer.output_tokens;
    in.generations = s.infer.warmup_runs + s.infer.runs;
    in.warmup = s.infer.warmup_runs;
    in.kv_cache = s.infer.kv_cache != KvCache::kNone;
    // bench-infer replays each decode step as a CUDA graph where it can (docs/infer.md); a
    // command predicted as a generation (generate(), say) launches its kernels one by one.
    const Value* benchmark = resolved.find("benchmark");
    const bool own =
        benchmark != nullptr && benchmark->is_string() && benchmark->as_string() == "infer";
    in.decode_graph = own && in.gpu && s.infer.cuda_graph &&
                      fixed_shape_decode(s.infer.kv_cache, s.infer.do_sample, s.infer.num_beams);
  }
  *out = in;
  return true;
}

bool predict_point_time(const Value& resolved, TimePrediction* out) {
  TimeInput in;
  if (!time_input_of(resolved, &in)) return false;
  *out = predict_time(in);
  return true;
}

std::string time_model_key(const Value& resolved) {
  TimeInput in;
  if (!time_input_of(resolved, &in)) return {};
  const ModelShape& s = in.shape;
  std::string key = in.benchmark + " " + s.arch;
  for (std::int64_t v : {s.n_layer, s.n_embd, s.n_head, s.n_kv_head, s.ffn_dim, s.vocab_size}) {
    key += " " + std::to_string(v);
  }
  key += " " + in.dtype +
         (in.gpu ? " gpu " + in.hardware_name : " cpu " + fixed(in.cores_per_rank * in.ranks, 0));
  if (in.decode_graph) key += " graph";  // a third of the eager decode's time: not one model
  return key;
}

void scale_prediction(TimePrediction* p, double factor) {
  if (!p->known || !(factor > 0)) return;
  for (double* v : {&p->step_s, &p->compute_s, &p->optimizer_s, &p->overhead_s, &p->comm_s}) {
    *v *= factor;
  }
  const double before = p->device_hours;
  p->run_s = p->startup_s + (p->run_s - p->startup_s) * factor;
  p->device_hours = p->run_s * p->devices / 3600.0;
  if (p->cost_usd && before > 0) *p->cost_usd *= p->device_hours / before;
  p->tokens_per_second /= factor;
  p->calibration *= factor;
}

bool TimeCalibration::add(const Value& resolved, double measured_step_s) {
  if (!(measured_step_s > 0) || !std::isfinite(measured_step_s)) return false;
  TimePrediction p;
  if (!predict_point_time(resolved, &p) || !p.known || !(p.step_s > 0)) return false;
  ratios_[time_model_key(resolved)].push_back(measured_step_s / p.step_s);
  medians_.clear();
  return true;
}

void TimeCalibration::apply(const Value& resolved, TimePrediction* p) const {
  if (ratios_.empty()) return;
  if (medians_.empty()) {
    // The median: one measurement a machine slowed down moves it little once there are three.
    for (const auto& [key, ratios] : ratios_) {
      std::vector<double> r = ratios;
      std::sort(r.begin(), r.end());
      const size_t n = r.size();
      medians_[key] = n % 2 == 1 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
    }
  }
  auto it = medians_.find(time_model_key(resolved));
  if (it != medians_.end()) scale_prediction(p, it->second);
}

}  // namespace sweepbench
