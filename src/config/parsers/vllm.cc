// vLLM's vllm bench latency, throughput and serve with --output-json, and what it prints.
#include "config/parsers/parser.h"

namespace sweepbench {

namespace {

std::vector<MetricSpec> metrics() {
  // vllm bench latency, throughput and serve with --output-json '{out}/vllm.json' (any
  // vllm*.json in the point directory): each writes its own fields, so every metric is
  // optional and one at least must be found. latency: avg_latency, latencies, percentiles
  // {"10", "25", "50", "75", "90", "99"}; throughput: elapsed_time, num_requests,
  // total_num_tokens, requests_per_second, tokens_per_second (and on stdout "Throughput: x
  // requests/s, y total tokens/s, z output tokens/s", whose output tokens/s the file lacks);
  // serve: duration, completed, request_throughput, output_throughput, total_token_throughput,
  // {mean,median,p99}_{ttft,tpot,itl}_ms.
  auto vj = [](const std::string& name, const std::string& unit, const std::string& pointer,
               MetricReduce reduce = MetricReduce::kLast) {
    return parser_json_metric("vllm", "vllm*.json", name, unit, pointer, false, reduce);
  };
  std::vector<MetricSpec> out = {
      vj("avg_latency", "s", "/avg_latency"),
      vj("latency_p50", "s", "/percentiles/50"),
      vj("latency_p90", "s", "/percentiles/90"),
      vj("latency_p99", "s", "/percentiles/99"),
      vj("latencies", "s", "/latencies/*", MetricReduce::kAll),
      vj("elapsed_time", "s", "/elapsed_time"),
      vj("num_requests", "requests", "/num_requests"),
      vj("total_num_tokens", "tokens", "/total_num_tokens"),
      vj("requests_per_second", "requests/s", "/requests_per_second"),
      vj("tokens_per_second", "tokens/s", "/tokens_per_second"),
      vj("duration", "s", "/duration"),
      vj("completed", "requests", "/completed"),
      vj("request_throughput", "requests/s", "/request_throughput"),
      vj("output_throughput", "tokens/s", "/output_throughput"),
      vj("total_token_throughput", "tokens/s", "/total_token_throughput")};
  for (const char* stat : {"mean", "median", "p99"}) {
    for (const char* what : {"ttft", "tpot", "itl"}) {
      std::string name = std::string(stat) + "_" + what + "_ms";
      out.push_back(vj(name, "ms", "/" + name));
    }
  }
  MetricSpec printed;
  printed.name = "output_tokens_per_second";
  printed.unit = "tokens/s";
  printed.source = MetricSource::kStdout;
  printed.regex =
      R"(Throughput: [0-9.]+ requests/s, [0-9.]+ total tokens/s, ([0-9.]+) output tokens/s)";
  printed.required = false;
  printed.parser = "vllm";
  out.push_back(printed);
  return out;
}

}  // namespace

Parser parser_vllm() {
  return {"vllm", "vllm bench latency, throughput and serve", metrics,
          "the vllm parser reads the file of --output-json '{out}/vllm.json' (any "
          "vllm*.json in the point directory)"};
}

}  // namespace sweepbench
