#include "metrics/summary.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <set>

#include "metrics/rank_result.h"
#include "metrics/statistics.h"

namespace sweepbench {

std::vector<Metric> summarize(const SummaryInput& in) {
  std::vector<Metric> m;
  double runtime = std::accumulate(in.step_s.begin(), in.step_s.end(), 0.0);
  // The headline and its interval are one estimator (statistics.h): the steps left after a
  // warm-up cut found from the data, their mean and its batch-means interval. Throughputs are
  // their tokens over their time, so that the value lies inside its interval.
  const Estimate step = series_estimate(in.step_s);
  const std::vector<double> kept(in.step_s.begin() + static_cast<std::ptrdiff_t>(step.cut),
                                 in.step_s.end());
  const double kept_runtime = std::accumulate(kept.begin(), kept.end(), 0.0);
  double steps = static_cast<double>(kept.size());
  double tokens = in.tokens_per_step * steps;
  double samples = in.samples_per_step * steps;
  double tps = kept_runtime > 0 ? tokens / kept_runtime : 0;
  double per_device = tps / std::max(1, in.world_size);
  m.push_back({"train_runtime", runtime, "s"});
  m.push_back(
      {"train_samples_per_second", kept_runtime > 0 ? samples / kept_runtime : 0, "samples/s"});
  m.push_back({"train_steps_per_second", kept_runtime > 0 ? steps / kept_runtime : 0, "steps/s"});
  m.push_back({"train_tokens_per_second", tps, "tokens/s"});
  // The throughput's interval through the mean step time's.
  const double step_tokens = in.tokens_per_step;
  m.push_back({"train_tokens_per_second_ci_low", step.high > 0 ? step_tokens / step.high : NAN,
               "tokens/s"});
  m.push_back({"train_tokens_per_second_ci_high",
               step.has_interval() && step.low > 0 ? step_tokens / step.low : NAN, "tokens/s"});
  m.push_back({"tokens_per_second_per_device", per_device, "tokens/s"});
  m.push_back({"step_time_median_s", percentile(kept, 0.5), "s"});
  m.push_back({"step_time_p10_s", percentile(kept, 0.1), "s"});
  m.push_back({"step_time_p90_s", percentile(kept, 0.9), "s"});
  m.push_back({"step_time_mean_s", mean(kept), "s"});
  m.push_back({"step_time_std_s", stddev(kept), "s"});
  // A time is never negative: a wide interval of a few steps is cut at 0 s.
  m.push_back(
      {"step_time_ci_low_s", std::isnan(step.low) ? step.low : std::max(0.0, step.low), "s"});
  m.push_back({"step_time_ci_high_s", step.high, "s"});
  m.push_back({"step_time_cv", step.cv, ""});
  m.push_back({"steps_cut", static_cast<double>(step.cut), ""});
  m.push_back({"data_time_median_s", percentile(in.data_s, 0.5), "s"});
  m.push_back({"fwd_time_median_s", percentile(in.forward_s, 0.5), "s"});
  m.push_back({"bwd_time_median_s", percentile(in.backward_s, 0.5), "s"});
  m.push_back({"comm_time_median_s", percentile(in.comm_s, 0.5), "s"});
  m.push_back({"optim_time_median_s", percentile(in.optimizer_s, 0.5), "s"});
  if (in.comm_bytes_per_step >= 0) {
    m.push_back({"comm_bytes_per_step", in.comm_bytes_per_step, "bytes"});
  }
  if (in.cpu_shared >= 0) m.push_back({"cpu_shared", in.cpu_shared, ""});
  m.push_back({"train_loss", in.train_loss, ""});
  if (in.has_eval) {
    m.push_back({"eval_loss", in.eval_loss, ""});
    m.push_back({"perplexity", std::exp(in.eval_loss), ""});
    m.push_back({"eval_samples_per_second",
                 in.eval_seconds > 0 ? in.eval_samples / in.eval_seconds : 0, "samples/s"});
  }
  m.push_back({"model_flops_per_token", in.flops_per_token, "FLOP"});
  double tflops = in.flops_per_token * per_device / 1e12;
  m.push_back({"tflops_per_device", tflops, "TFLOP/s"});
  if (in.peak_tflops > 0) m.push_back({"mfu", tflops / in.peak_tflops, ""});
  if (in.memory_peak_bytes >= 0) m.push_back({"mem_peak_bytes", in.memory_peak_bytes, "bytes"});
  if (in.memory_alloc_peak_bytes >= 0) {
    m.push_back({"mem_alloc_peak_bytes", in.memory_alloc_peak_bytes, "bytes"});
  }
  if (in.parameter_count > 0) {
    m.push_back({"trainable_parameters",
                 in.trainable_parameters > 0 ? in.trainable_parameters : in.parameter_count, ""});
    // Per rank: its model's parameters (a part of the split ones with tensor parallelism),
    // ZeRO's shards over the data-parallel ranks.
    const int t = std::max(1, in.tensor_parallel);
    const double held = in.rank_parameters > 0 ? in.rank_parameters : in.parameter_count;
    const double trainable =
        in.trainable_parameters > 0 && in.trainable_parameters < in.parameter_count
            ? in.trainable_parameters
            : held;
    m.push_back({"mem_model_states_bytes",
                 model_states_bytes(held, std::max(1, in.world_size / t), in.zero_stage, trainable,
                                    in.offload_optimizer),
                 "bytes"});
  }
  m.push_back({"mt_per_hour", tps * 3600.0 / 1e6, "Mtokens/h"});
  return m;
}

double model_states_bytes(double parameters, int world_size, int zero_stage,
                          double trainable_parameters, bool offload_optimizer) {
  const double t = trainable_parameters > 0 ? trainable_parameters : parameters;
  // Offloaded, AdamW's moments (8 bytes per trainable parameter, over the ranks from stage 1)
  // are in host memory.
  if (offload_optimizer) {
    const double shards = world_size > 1 && zero_stage >= 1 ? world_size : 1;
    return model_states_bytes(parameters, world_size, zero_stage, trainable_parameters) -
           8.0 * t / shards;
  }
  const double frozen = 4.0 * (parameters - t);
  if (world_size <= 1 || zero_stage <= 0) return frozen + 16.0 * t;
  const double n = world_size;
  switch (zero_stage) {
    case 1:  // parameters 4, gradients 4, their reduced piece 4/N, moments 8/N
      return frozen + t * (8.0 + 12.0 / n);
    case 2:  // parameters 4, the gradient piece 4/N, moments 8/N
      return frozen + t * (4.0 + 12.0 / n);
    default:  // 3: the pieces of parameters, gradients and moments
      return frozen + t * 16.0 / n;
  }
}

void fill_run_description(SummaryInput& in, const RankResult& lead) {
  auto d = [](std::int64_t v) { return static_cast<double>(v); };
  in.world_size = static_cast<int>(lead.world_size);
  // A tensor-parallel group of ranks trains one replica on one stream of batches.
  const std::int64_t t = std::max<std::int64_t>(1, lead.tensor_parallel);
  const double replicas = d(lead.world_size) / d(t);
  in.tokens_per_step = d(lead.micro_batch) * d(lead.seq_len) * d(lead.grad_accum) * replicas;
  in.samples_per_step = d(lead.micro_batch) * d(lead.grad_accum) * replicas;
  in.flops_per_token = lead.flops_per_token;
  in.peak_tflops = lead.peak_tflops;
  in.parameter_count = d(lead.parameter_count);
  in.zero_stage = static_cast<int>(lead.zero_stage);
  in.trainable_parameters = d(lead.trainable_parameters);
  in.tensor_parallel = static_cast<int>(t);
  in.rank_parameters = d(lead.rank_parameters);
  in.offload_optimizer = lead.offload_optimizer != 0;
}

SummaryInput summary_input_from_ranks(const std::vector<RankResult>& ranks) {
  SummaryInput in;
  if (ranks.empty()) return in;
  std::vector<std::vector<const StepRecord*>> measured(ranks.size());
  size_t steps = std::numeric_limits<size_t>::max();
  for (size_t i = 0; i < ranks.size(); ++i) {
    for (const StepRecord& s : ranks[i].steps) {
      if (s.measured) measured[i].push_back(&s);
    }
    steps = std::min(steps, measured[i].size());
  }
  auto slowest = [&](double StepRecord::*field) {
    std::vector<double> out(steps, 0.0);
    for (const auto& rank : measured) {
      for (size_t k = 0; k < steps; ++k) out[k] = std::max(out[k], rank[k]->*field);
    }
    return out;
  };
  in.step_s = slowest(&StepRecord::total_s);
  in.data_s = slowest(&StepRecord::data_s);
  in.forward_s = slowest(&StepRecord::forward_s);
  in.backward_s = slowest(&StepRecord::backward_s);
  in.comm_s = slowest(&StepRecord::comm_s);
  in.optimizer_s = slowest(&StepRecord::optimizer_s);
  const RankResult& first = ranks.front();
  fill_run_description(in, first);
  double loss = 0, eval_samples = 0, eval_seconds = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    loss += measured[i].empty() ? 0.0 : measured[i].back()->loss;
    eval_samples += static_cast<double>(ranks[i].eval.samples);
    eval_seconds = std::max(eval_seconds, ranks[i].eval.seconds);
    in.memory_peak_bytes = std::max(in.memory_peak_bytes, stage_peak(ranks[i].memory_stages));
    in.memory_alloc_peak_bytes =
        std::max(in.memory_alloc_peak_bytes, stage_alloc_peak(ranks[i].memory_stages));
    in.comm_bytes_per_step = std::max(in.comm_bytes_per_step, ranks[i].comm_bytes_per_step);
    in.cpu_shared = std::max(in.cpu_shared, ranks[i].cpu_shared);
  }
  in.train_loss = loss / static_cast<double>(ranks.size());
  in.has_eval = first.eval.ran;
  in.eval_loss = first.eval.loss;
  in.eval_samples = eval_samples;
  in.eval_seconds = eval_seconds;
  return in;
}

std::vector<std::pair<std::string, std::string>> interval_columns(const std::string& metric) {
  std::vector<std::pair<std::string, std::string>> out = {
      {metric + "_ci_low", metric + "_ci_high"}};
  const std::string mean = "_mean_s";
  if (metric.size() > mean.size() &&
      metric.compare(metric.size() - mean.size(), mean.size(), mean) == 0) {
    const std::string base = metric.substr(0, metric.size() - mean.size());
    out.emplace_back(base + "_ci_low_s", base + "_ci_high_s");
  }
  return out;
}

namespace {

// The direction a unit gives: up for a rate, down for a time or a size, none otherwise.
std::optional<bool> direction_of_unit(const std::string& unit_text) {
  std::string unit;
  for (char c : unit_text) {
    if (c != ' ') unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  static const std::set<std::string> times = {
      "s",    "sec",    "secs",    "second", "seconds", "ms",  "us",   "µs",    "ns",  "min",
      "mins", "minute", "minutes", "h",      "hr",      "hrs", "hour", "hours", "day", "days"};
  static const std::set<std::string> sizes = {"b",  "byte", "bytes", "kb",  "mb", "gb",
                                              "tb", "kib",  "mib",   "gib", "tib"};
  if (size_t slash = unit.rfind('/'); slash != std::string::npos) {
    if (times.count(unit.substr(slash + 1)) > 0) return true;  // tokens/s, it/s, GB/s
    return std::nullopt;
  }
  if (unit == "flops" || unit == "gflops" || unit == "tflops" || unit == "pflops") return true;
  if (times.count(unit) > 0 || sizes.count(unit) > 0) return false;
  return std::nullopt;
}

}  // namespace

bool higher_is_better(const std::string& m, const std::string& unit) {
  if (std::optional<bool> by_unit = direction_of_unit(unit)) return *by_unit;
  auto ends = [&](const char* suffix) {
    const std::string s(suffix);
    return m.size() >= s.size() && m.compare(m.size() - s.size(), s.size(), s) == 0;
  };
  // A serve point's share of good requests, its goodput and the highest load that met its SLA
  // (metrics/serve_columns.h) are better higher whatever their units.
  return ends("_per_second") || ends("tps") || ends("mfu") || ends("mbu") ||
         ends("tflops_per_device") || ends("_per_hour") || ends("_per_device") ||
         ends("attainment") || ends("attainment_low") || ends("attainment_high") ||
         ends("goodput") || ends("sla_max_level") || ends("sla_max_level_above");
}

}  // namespace sweepbench
