// AMD PACE's benchmark_llm_offline.py: its results file in the point directory.
#include "config/parsers/parser.h"

namespace sweepbench {

namespace {

std::vector<MetricSpec> metrics() {
  // benchmark_llm_offline.py's results file, {output_dir}/<model>_<dtype>_bs.._results.json:
  // {"benchmark_results": [{"framework": ..., "metrics": {...}}, ...]}; its output_dir should
  // be the point directory ({out}). One framework per point; with several, the last one's.
  auto pace = [](const std::string& name, const std::string& unit, const std::string& pointer,
                 bool required) {
    return parser_json_metric("pace", "*_results.json", name, unit, pointer, required);
  };
  const std::string r = "/benchmark_results/*/metrics/";
  return {
      pace("average_gen_time", "s", r + "average_gen_time", true),
      pace("average_latency_per_token", "s", r + "average_latency_per_token", true),
      pace("total_tps", "tokens/s", r + "total_tps", true),
      pace("output_tps", "tokens/s", r + "output_tps", true),
      pace("average_ttft", "s", r + "average_ttft", false),
      pace("peak_ram_usage", "MB", "/benchmark_results/*/system_metrics/peak_ram_usage", false)};
}

}  // namespace

Parser parser_pace() {
  return {"pace", "PACE's benchmark_llm_offline.py", metrics,
          "the pace parser reads *_results.json in the point directory: set the "
          "benchmark's output_dir to {out}"};
}

}  // namespace sweepbench
