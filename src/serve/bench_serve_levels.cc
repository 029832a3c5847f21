// bench-serve's load levels: the prompts, one level run and its figures, the requests kept for
// the rank file, and the console table of the levels and the SLA's answer.
#include "serve/bench_serve_levels.h"

#include <cmath>
#include <cstdio>

#include "serve/arrivals.h"
#include "text/text.h"

namespace sweepbench {
using namespace serve;

PromptSource::PromptSource(const ServeSpec& spec) : spec_(spec) {
  if (spec.dataset) {
    ShareGptOptions o;
    o.output_tokens = spec.dataset_fixed_output ? spec.output_tokens : -1;
    dataset_.emplace(*spec.dataset, o);
  }
}

std::vector<LoadRequest> PromptSource::requests(size_t count, std::uint64_t seed) const {
  if (dataset_) return load_requests_of(dataset_->prompts(count, seed));
  SyntheticOptions o;
  o.range_ratio = spec_.range_ratio;
  if (spec_.token_ids) o.token_ids = TokenIdRange{spec_.token_ids->first, spec_.token_ids->second};
  return load_requests_of(
      synthetic_prompts(count, spec_.input_tokens, spec_.output_tokens, seed, o));
}

LevelRun run_level(const ServeSpec& spec, const PromptSource& prompts, const LoadTarget& target,
                   double level, size_t index, const std::function<bool()>& stop) {
  LevelRun run;
  run.level = level;
  LoadOptions options;
  options.request_timeout_s = spec.timeout_s;
  options.stop = stop;
  // Each level its own draws, reproducible from the seed and the level's place.
  const std::uint64_t seed = spec.seed * 1000003ULL + index + 1;
  if (spec.closed_loop()) {
    std::vector<LoadRequest> requests = prompts.requests(static_cast<size_t>(spec.requests), seed);
    run.result = run_at_concurrency(target, requests, static_cast<int>(level), options);
  } else {
    ArrivalSchedule schedule = PoissonRate{level};
    if (spec.mode == "gamma") schedule = GammaRate{level, spec.burstiness};
    if (spec.mode == "ramp") schedule = LinearRamp{spec.levels[0], spec.levels[1]};
    ScheduleLimits limits;
    limits.duration_s = spec.duration_s;
    limits.max_requests = static_cast<size_t>(spec.requests);
    std::vector<double> times = send_times(schedule, limits, seed);
    std::vector<LoadRequest> requests = prompts.requests(times.size(), seed);
    run.result = run_at_times(target, requests, times, options);
  }
  Sla sla{spec.sla_ttft_s, spec.sla_tpot_s, spec.sla_e2e_s};
  const double duration =
      run.result.duration_s > 0 ? run.result.duration_s : load_duration(timings_of(run.result));
  run.metrics = point_metrics(timings_of(run.result), duration, sla);
  if (run.metrics.requests > 0) {
    run.attainment =
        static_cast<double>(run.metrics.good) / static_cast<double>(run.metrics.requests);
  }
  return run;
}

// The level's figures in serve_level_columns() order.
std::vector<double> level_values(const LevelRun& run, const ServeSpec& spec) {
  const PointMetrics& m = run.metrics;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto ms = [](double s) { return s * 1000; };
  double rate = nan, concurrency = nan;
  if (spec.closed_loop()) {
    concurrency = run.level;
  } else if (spec.mode == "ramp") {
    rate = (spec.levels[0] + spec.levels[1]) / 2;
  } else {
    rate = run.level;
  }
  std::vector<double> v = {rate,
                           concurrency,
                           static_cast<double>(m.requests),
                           static_cast<double>(m.succeeded),
                           static_cast<double>(m.failed),
                           m.duration_s,
                           m.request_throughput,
                           m.output_tokens_per_s,
                           m.total_tokens_per_s,
                           m.tokens_per_s_per_user,
                           m.goodput,
                           run.attainment};
  Interval ci{nan, nan};
  if (m.requests > 0) ci = wilson_interval(m.good, m.requests);
  v.push_back(ci.low);
  v.push_back(ci.high);
  for (const Percentiles* p : {&m.ttft_s, &m.tpot_s, &m.itl_s, &m.e2e_s}) {
    for (double x : {p->mean, p->p50, p->p90, p->p95, p->p99}) v.push_back(ms(x));
  }
  for (RequestError e : {RequestError::kConnect, RequestError::kHttpStatus, RequestError::kTimeout,
                         RequestError::kStream, RequestError::kServer, RequestError::kNoOutput}) {
    v.push_back(static_cast<double>(m.errors[static_cast<size_t>(e)]));
  }
  return v;
}

void keep_requests(const LoadResult& result, std::int64_t level, ServeResult& out) {
  for (const RequestRecord& q : result.requests) {
    RequestMetrics m = request_metrics(q.timing);
    ServeRequest row;
    row.level = level;
    row.send_s = q.timing.send_s;
    row.ttft_s = m.ttft_s;
    row.e2e_s = m.e2e_s;
    row.tpot_s = m.tpot_s;
    row.prompt_tokens = q.timing.prompt_tokens;
    row.output_tokens = m.output_tokens;
    row.http_status = q.http_status;
    row.error = q.timing.error == RequestError::kNone && !m.ok ? to_string(m.error)
                                                               : to_string(q.timing.error);
    if (row.error == std::string("none")) row.error.clear();
    row.message = q.message;
    const auto index = static_cast<std::int64_t>(out.requests.size());
    out.requests.push_back(std::move(row));
    for (const TokenChunk& c : q.timing.chunks) {
      out.chunk_request.push_back(index);
      out.chunk_time_s.push_back(c.time_s);
      out.chunk_tokens.push_back(c.tokens);
    }
  }
}

std::vector<LevelOutcome> outcomes_of(const std::vector<LevelRun>& runs) {
  std::vector<LevelOutcome> out;
  for (const LevelRun& r : runs) out.push_back({r.level, r.metrics.requests, r.metrics.good});
  return out;
}

// A level as people write it: 4, 2.5 (not 4.0); a level of the SLA search, a geometric midpoint
// such as 38.05462768008707, to 4 significant digits (38.05), which keeps the table's columns
// and the SLA's answer readable. The exact levels are in summary.json and the rank file.
std::string number_text(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  std::string exact = format_float_repr(v);
  if (exact.size() <= 6) return exact;
  char text[32];
  std::snprintf(text, sizeof(text), std::fabs(v) >= 1000 ? "%.0f" : "%.4g", v);
  return text;
}

std::string level_text(double level, const std::string& mode) {
  return number_text(level) + (mode == "concurrency" ? " in flight" : " req/s");
}

void print_levels(const std::vector<LevelRun>& runs, const ServeSpec& spec) {
  std::printf("# %-8s %9s %8s %6s %9s %11s %9s %7s %10s %10s %10s %10s %10s\n", "level",
              spec.closed_loop() ? "in_flight" : "req/s", "requests", "failed", "done_req/s",
              "out_tok/s", "goodput", "good", "ttft_p50", "ttft_p99", "tpot_p50", "itl_p99",
              "e2el_p99");
  for (size_t i = 0; i < runs.size(); ++i) {
    const LevelRun& r = runs[i];
    const PointMetrics& m = r.metrics;
    auto ms = [](double s) {
      char t[32];
      std::snprintf(t, sizeof(t), std::isfinite(s) ? "%.1fms" : "-", s * 1000);
      return std::string(t);
    };
    std::printf("  %-8s %9s %8zu %6zu %9.2f %11.1f %9.2f %6.1f%% %10s %10s %10s %10s %10s\n",
                (std::to_string(i) + (r.searched ? "*" : "")).c_str(), number_text(r.level).c_str(),
                m.requests, m.failed, m.request_throughput, m.output_tokens_per_s, m.goodput,
                r.attainment * 100, ms(m.ttft_s.p50).c_str(), ms(m.ttft_s.p99).c_str(),
                ms(m.tpot_s.p50).c_str(), ms(m.itl_s.p99).c_str(), ms(m.e2e_s.p99).c_str());
  }
}

std::string sla_text(const ServeSpec& spec) {
  std::vector<std::string> bounds;
  auto add = [&](const char* name, double s) {
    if (std::isfinite(s))
      bounds.push_back(std::string(name) + " <= " + number_text(s * 1000) + " ms");
  };
  add("TTFT", spec.sla_ttft_s);
  add("TPOT", spec.sla_tpot_s);
  add("E2E", spec.sla_e2e_s);
  return join(bounds, ", ") + " for " + number_text(spec.attainment * 100) + "% of requests";
}

namespace {

// A level's share of good requests, its 95% interval and whether the verdict is clear of the
// noise: "2 in flight 100% [75.8%, 100%] of 12, not clearly above 99%".
std::string share_text(const LevelVerdict& v, const ServeSpec& spec) {
  if (v.requests == 0) return level_text(v.level, spec.mode) + " no requests";
  auto pct = [](double f) {
    char t[32];
    std::snprintf(t, sizeof(t), "%.3g%%", f * 100);
    return std::string(t);
  };
  const std::string target = number_text(spec.attainment * 100) + "%";
  std::string clear;
  if (v.clearly_meets) {
    clear = "clearly at or above " + target;
  } else if (v.clearly_fails) {
    clear = "clearly below " + target;
  } else {
    clear = std::string("not clearly ") + (v.meets ? "at or above " : "below ") + target;
  }
  return level_text(v.level, spec.mode) + " " + pct(v.attainment) + " [" + pct(v.interval.low) +
         ", " + pct(v.interval.high) + "] of " + std::to_string(v.requests) + ", " + clear;
}

}  // namespace

// The SLA's answer in words: the highest level that met it and the bracket.
std::string answer_text(const SlaAnswer& a, const ServeSpec& spec) {
  if (a.levels.empty()) return "no level was measured";
  std::string text;
  if (!a.highest_meeting) {
    text = "no level met it (the lowest, " + level_text(a.levels.front().level, spec.mode) +
           ", did not)";
  } else if (!a.lowest_failing) {
    text = "every level met it: at least " + level_text(*a.highest_meeting, spec.mode);
  } else {
    text = level_text(*a.highest_meeting, spec.mode) + ", below " +
           level_text(*a.lowest_failing, spec.mode) + " (which did not meet it)";
  }
  // How sure each end of the answer is: the share of good requests with its 95% interval.
  std::vector<std::string> shares;
  for (const LevelVerdict& v : a.levels) {
    const bool answer = a.highest_meeting && v.level == *a.highest_meeting;
    const bool failing = a.lowest_failing && v.level == *a.lowest_failing;
    if (answer || failing) shares.push_back(share_text(v, spec));
  }
  if (!shares.empty()) text += "; good requests: " + join(shares, "; ");
  if (!a.monotone) {
    std::vector<std::string> above;
    for (double l : a.meeting_above_failure) above.push_back(number_text(l));
    text += "; levels above a failing one met it too (" + join(above, ", ") +
            "): noise near the bound, or a server that does better under more load";
  }
  return text;
}

}  // namespace sweepbench
