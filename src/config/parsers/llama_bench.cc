// llama.cpp's llama-bench -o jsonl (or -o json): one record per test on stdout.
#include "config/parsers/parser.h"

namespace sweepbench {

namespace {

std::vector<MetricSpec> metrics() {
  // llama-bench -o jsonl (or -o json) on stdout: one record per test, avg_ts its tokens/s.
  auto lb = [](const std::string& name, const char* zero) {
    // Optional: a run may do only one kind of test.
    MetricSpec m = parser_json_metric("llama-bench", "stdout", name, "tokens/s", "/avg_ts", false,
                                      MetricReduce::kMean);
    m.where = {{zero, Value::integer(0)}};
    return m;
  };
  // Their spread, and what the run was: the model's size and parameters, the threads (issue
  // 31: these were no columns).
  auto extra = [&](const std::string& name, const std::string& unit, const char* zero,
                   const std::string& pointer, MetricReduce reduce) {
    MetricSpec m = lb(name, zero != nullptr ? zero : "n_gen");
    m.unit = unit;
    m.pointer = pointer;
    m.reduce = reduce;
    if (zero == nullptr) m.where.clear();
    return m;
  };
  auto words = [&](const std::string& field) {
    MetricSpec m = extra(field, "", nullptr, "/" + field, MetricReduce::kLast);
    m.text = true;
    return m;
  };
  return {lb("pp_tokens_per_second", "n_gen"), lb("tg_tokens_per_second", "n_prompt"),
          extra("pp_stddev_ts", "tokens/s", "n_gen", "/stddev_ts", MetricReduce::kMean),
          extra("tg_stddev_ts", "tokens/s", "n_prompt", "/stddev_ts", MetricReduce::kMean),
          extra("model_size", "bytes", nullptr, "/model_size", MetricReduce::kLast),
          extra("model_n_params", "parameters", nullptr, "/model_n_params", MetricReduce::kLast),
          extra("n_threads", "threads", nullptr, "/n_threads", MetricReduce::kLast),
          // What it ran on, as text columns (figures leave them out).
          words("backends"), words("model_type"), words("cpu_info"), words("gpu_info"),
          words("build_commit")};
}

}  // namespace

Parser parser_llama_bench() {
  return {"llama-bench", "", metrics,
          "the llama-bench parser reads its JSON records on stdout: run it with -o jsonl "
          "(or -o json)"};
}

}  // namespace sweepbench
