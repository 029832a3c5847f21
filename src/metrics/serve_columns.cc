#include "metrics/serve_columns.h"

namespace sweepbench {

const std::vector<ServeColumn>& serve_level_columns() {
  static const std::vector<ServeColumn> columns = [] {
    std::vector<ServeColumn> c = {
        {"request_rate", "req/s"},  // offered: the level of poisson and gamma, a ramp's mean
        {"concurrency", "requests"},
        {"requests", "requests"},
        {"succeeded", "requests"},
        {"failed", "requests"},
        {"duration_s", "s"},
        {"request_throughput", "req/s"},
        {"output_tokens_per_second", "tokens/s"},
        {"total_tokens_per_second", "tokens/s"},
        {"tokens_per_second_per_user", "tokens/s"},
        {"goodput", "req/s"},
        {"sla_attainment", "fraction"},
        // Its 95% Wilson interval (serve/sla_search.h): whether a level's verdict is noise.
        {"sla_attainment_low", "fraction"},
        {"sla_attainment_high", "fraction"},
    };
    for (const char* m : {"ttft", "tpot", "itl", "e2el"}) {
      for (const char* s : {"mean", "p50", "p90", "p95", "p99"}) {
        c.push_back({std::string(m) + "_" + s + "_ms", "ms"});
      }
    }
    for (const char* e : {"connect", "http_status", "timeout", "stream", "server", "no_output"}) {
      c.push_back({std::string("errors_") + e, "requests"});
    }
    return c;
  }();
  return columns;
}

const std::vector<ServeColumn>& serve_point_columns() {
  static const std::vector<ServeColumn> columns = {
      {"levels", "levels"},
      {"sla_max_level", ""},
      {"sla_max_level_above", ""},
  };
  return columns;
}

std::string serve_level_unit(const std::string& mode) {
  return mode == "concurrency" ? "requests" : "req/s";
}

}  // namespace sweepbench
