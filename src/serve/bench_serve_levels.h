// What bench-serve's files share of its load levels (bench_serve.cc, bench_serve_levels.cc): the
// requests' prompts, one level run and its figures, the requests kept for the rank file, and the
// report of the levels and the SLA's answer.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "config/serve_spec.h"
#include "metrics/rank_result.h"
#include "serve/load_client.h"
#include "serve/prompts.h"
#include "serve/request_metrics.h"
#include "serve/sla_search.h"

namespace sweepbench {

struct LevelRun {
  double level = 0;
  bool searched = false;
  serve::LoadResult result;
  serve::PointMetrics metrics;
  double attainment = std::numeric_limits<double>::quiet_NaN();
};

// Where the requests' prompts come from: the ShareGPT file of serve.prompts.dataset, read once
// (it may be hundreds of MB) and drawn from for the warm-up and each level, or synthetic ones.
class PromptSource {
 public:
  explicit PromptSource(const ServeSpec& spec);
  std::vector<serve::LoadRequest> requests(size_t count, std::uint64_t seed) const;

 private:
  const ServeSpec& spec_;
  std::optional<serve::ShareGptFile> dataset_;
};

// Loads the server at `level`, the `index`-th level of the point; `stop` ends the load.
LevelRun run_level(const ServeSpec& spec, const PromptSource& prompts,
                   const serve::LoadTarget& target, double level, size_t index,
                   const std::function<bool()>& stop);
// The level's figures in serve_level_columns() order.
std::vector<double> level_values(const LevelRun& run, const ServeSpec& spec);
// Each request of a level (-1: the warm-up) as a row of the rank file, with its chunks.
void keep_requests(const serve::LoadResult& result, std::int64_t level, ServeResult& out);
std::vector<serve::LevelOutcome> outcomes_of(const std::vector<LevelRun>& runs);

// A level as people write it: 4, 2.5, a searched one to 4 significant digits.
std::string number_text(double v);
// "4 req/s", "8 in flight".
std::string level_text(double level, const std::string& mode);
// The console table of the levels.
void print_levels(const std::vector<LevelRun>& runs, const ServeSpec& spec);
// The SLA's bounds in words: "TTFT <= 200 ms, ... for 99% of requests".
std::string sla_text(const ServeSpec& spec);
// The SLA's answer in words: the highest level that met it and the bracket.
std::string answer_text(const serve::SlaAnswer& a, const ServeSpec& spec);

}  // namespace sweepbench
