// serve/sla_search.h: the levels' verdicts, the bracket and the bisection inside it.
#include "serve/sla_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace sweepbench::serve {
namespace {

// The standard normal's 97.5% quantile: a two-sided 95% interval.
constexpr double kZ95 = 1.959963984540054;

bool positive_finite(double x) { return x > 0 && std::isfinite(x); }

void check_attainment(double attainment) {
  if (!(attainment > 0 && attainment <= 1)) {
    throw std::invalid_argument("sla: the attainment " + std::to_string(attainment) +
                                " is not in (0, 1]");
  }
}

}  // namespace

Interval wilson_interval(size_t good, size_t requests) {
  if (good > requests) {
    throw std::invalid_argument("sla: " + std::to_string(good) + " good requests of " +
                                std::to_string(requests));
  }
  if (requests == 0) return {0, 1};
  auto n = static_cast<double>(requests);
  double p = static_cast<double>(good) / n;
  double z2 = kZ95 * kZ95;
  double denominator = 1 + z2 / n;
  double centre = (p + z2 / (2 * n)) / denominator;
  double half = kZ95 / denominator * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n));
  // Rounding may put an end a hair outside [0, 1] at p = 0 or 1.
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

SlaAnswer answer_of(std::vector<LevelOutcome> outcomes, double attainment) {
  check_attainment(attainment);
  for (const LevelOutcome& o : outcomes) {
    if (!positive_finite(o.level)) {
      throw std::invalid_argument("sla: the level " + std::to_string(o.level) +
                                  " is not positive and finite");
    }
    if (o.good > o.requests) {
      throw std::invalid_argument("sla: " + std::to_string(o.good) + " good requests of " +
                                  std::to_string(o.requests) + " at level " +
                                  std::to_string(o.level));
    }
  }
  std::sort(outcomes.begin(), outcomes.end(),
            [](const LevelOutcome& a, const LevelOutcome& b) { return a.level < b.level; });
  // A level measured twice (a rerun) is one sample of more requests.
  std::vector<LevelOutcome> pooled;
  for (const LevelOutcome& o : outcomes) {
    if (!pooled.empty() && pooled.back().level == o.level) {
      pooled.back().requests += o.requests;
      pooled.back().good += o.good;
    } else {
      pooled.push_back(o);
    }
  }

  SlaAnswer answer;
  for (const LevelOutcome& o : pooled) {
    LevelVerdict v;
    v.level = o.level;
    v.requests = o.requests;
    v.good = o.good;
    v.attainment = o.requests == 0 ? std::numeric_limits<double>::quiet_NaN()
                                   : static_cast<double>(o.good) / static_cast<double>(o.requests);
    v.interval = wilson_interval(o.good, o.requests);
    // A level without requests has shown nothing, so it does not meet the SLA.
    v.meets = o.requests > 0 && v.attainment >= attainment;
    v.clearly_meets = o.requests > 0 && v.interval.low >= attainment;
    v.clearly_fails = o.requests > 0 && v.interval.high < attainment;
    answer.levels.push_back(v);
  }
  // The answer is the last level that meets before the first that fails: anything meeting above
  // a failure is reported, not believed.
  for (const LevelVerdict& v : answer.levels) {
    if (answer.lowest_failing) {
      if (v.meets) answer.meeting_above_failure.push_back(v.level);
    } else if (v.meets) {
      answer.highest_meeting = v.level;
    } else {
      answer.lowest_failing = v.level;
    }
  }
  answer.monotone = answer.meeting_above_failure.empty();
  return answer;
}

std::optional<double> next_level(const std::vector<LevelOutcome>& measured, double attainment,
                                 const SearchOptions& options) {
  if (!(options.tolerance > 0) || !std::isfinite(options.tolerance)) {
    throw std::invalid_argument("sla: the search's tolerance is not positive");
  }
  if (!(options.growth > 1) || !std::isfinite(options.growth)) {
    throw std::invalid_argument("sla: the search's growth is not above 1");
  }
  SlaAnswer answer = answer_of(measured, attainment);
  if (answer.levels.empty()) return std::nullopt;  // the plan's own levels come first
  size_t extra =
      answer.levels.size() > options.plan_levels ? answer.levels.size() - options.plan_levels : 0;
  if (extra >= options.max_extra_levels) return std::nullopt;
  bool whole = options.kind == LevelKind::kConcurrency;

  if (answer.highest_meeting && answer.lowest_failing) {
    double lo = *answer.highest_meeting;
    double hi = *answer.lowest_failing;
    if (hi / lo <= 1 + options.tolerance) return std::nullopt;
    // Rates span decades (0.5/s to 64/s), so the bracket is halved on a log scale; a
    // concurrency is a count of streams, halved as a count and never fractional.
    double mid = whole ? std::floor((lo + hi) / 2) : std::sqrt(lo * hi);
    if (!(mid > lo && mid < hi)) return std::nullopt;  // adjacent concurrencies: nothing between
    return mid;
  }
  if (answer.highest_meeting) {
    // Every level met the SLA: grow past the highest, up to max_level.
    double highest = *answer.highest_meeting;
    if (!(options.max_level > highest)) return std::nullopt;
    double next = std::min(highest * options.growth, options.max_level);
    if (whole) next = std::min(std::ceil(highest * options.growth), std::floor(options.max_level));
    if (!(next > highest)) return std::nullopt;
    return next;
  }
  // The lowest level failed: shrink below it, down to min_level.
  double lowest = answer.levels.front().level;
  if (!(options.min_level > 0 && options.min_level < lowest)) return std::nullopt;
  double next = std::max(lowest / options.growth, options.min_level);
  if (whole) {
    next = std::max({std::floor(lowest / options.growth), std::ceil(options.min_level), 1.0});
  }
  if (!(next < lowest)) return std::nullopt;
  return next;
}

}  // namespace sweepbench::serve
