#include "results/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sweepbench {

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  double pos = q * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double stddev(const std::vector<double>& values) {
  if (values.size() < 2) return 0.0;
  double m = mean(values);
  double sq = 0;
  for (double v : values) sq += (v - m) * (v - m);
  return std::sqrt(sq / static_cast<double>(values.size() - 1));
}

std::vector<Metric> summarize(const SummaryInput& in) {
  std::vector<Metric> m;
  double runtime = std::accumulate(in.step_s.begin(), in.step_s.end(), 0.0);
  double steps = static_cast<double>(in.step_s.size());
  double tokens = static_cast<double>(in.tokens_per_step) * steps;
  double samples = static_cast<double>(in.samples_per_step) * steps;
  double tps = runtime > 0 ? tokens / runtime : 0;
  double per_device = tps / std::max(1, in.world_size);
  m.push_back({"train_runtime", runtime, "s"});
  m.push_back({"train_samples_per_second", runtime > 0 ? samples / runtime : 0, "samples/s"});
  m.push_back({"train_steps_per_second", runtime > 0 ? steps / runtime : 0, "steps/s"});
  m.push_back({"train_tokens_per_second", tps, "tokens/s"});
  m.push_back({"tokens_per_second_per_device", per_device, "tokens/s"});
  m.push_back({"step_time_median_s", percentile(in.step_s, 0.5), "s"});
  m.push_back({"step_time_p10_s", percentile(in.step_s, 0.1), "s"});
  m.push_back({"step_time_p90_s", percentile(in.step_s, 0.9), "s"});
  m.push_back({"step_time_mean_s", mean(in.step_s), "s"});
  m.push_back({"step_time_std_s", stddev(in.step_s), "s"});
  m.push_back({"data_time_median_s", percentile(in.data_s, 0.5), "s"});
  m.push_back({"fwd_time_median_s", percentile(in.forward_s, 0.5), "s"});
  m.push_back({"bwd_time_median_s", percentile(in.backward_s, 0.5), "s"});
  m.push_back({"comm_time_median_s", percentile(in.comm_s, 0.5), "s"});
  m.push_back({"optim_time_median_s", percentile(in.optimizer_s, 0.5), "s"});
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
  m.push_back({"mt_per_hour", tps * 3600.0 / 1e6, "Mtokens/h"});
  return m;
}

}  // namespace sweepbench
