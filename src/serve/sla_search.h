// The SLA's answer of a serve point (docs/serving.md, "The SLA's answer"): the highest request
// rate (or concurrency) of the point's load plan at which the server meets an SLA, the bracket
// that holds the true answer, and the next level to measure to narrow that bracket.
//
// A level meets the SLA when the share of its requests that are good (request_metrics.h's
// meets_sla: every bound held; a failed request is never good) is at least `attainment` (0.99 by
// default). With one binding bound that is "the bound's p99 is within it": p99 TTFT <= 2 s means
// at least 99% of the requests had TTFT <= 2 s. With several bounds it is stricter than each
// percentile alone, since one request must meet them all, as vLLM's goodput counts.
//
// Each level's attainment carries its 95% Wilson score interval. The share is a binomial
// proportion near 1 measured on tens to hundreds of requests, where the textbook (Wald)
// interval p +- z sqrt(p (1 - p) / n) fails: at 100 good of 100 its width is 0, and near 1 it
// runs past 1. Wilson's interval (Wilson 1927; Brown, Cai and DasGupta 2001 recommend it for
// small n) stays inside [0, 1] and is never empty:
//
//   centre = (p + z^2 / (2n)) / (1 + z^2 / n)
//   half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / (4 n^2))
//   [centre - half, centre + half],  p = good / n, z = 1.959964 (the normal's 97.5% quantile).
//
// Left out: measuring (the caller runs each level and counts its good requests), and any model
// of latency against load: the search only bisects between measured levels.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace sweepbench::serve {

// What one level of the load plan gave.
struct LevelOutcome {
  double level = 0;  // requests per second, or a concurrency
  size_t requests = 0;
  size_t good = 0;  // requests that met every bound of the SLA
};

struct Interval {
  double low = 0, high = 1;
};
// The 95% Wilson score interval of good / requests (above); [0, 1] for no requests. Throws
// std::invalid_argument when good > requests.
Interval wilson_interval(size_t good, size_t requests);

// One level judged against the attainment.
struct LevelVerdict {
  double level = 0;
  size_t requests = 0, good = 0;
  double attainment = 0;  // good / requests; NaN for no requests
  Interval interval;      // its 95% Wilson interval
  bool meets = false;     // attainment >= the target (a level of no requests never meets)
  // Whether the interval lies wholly on one side of the target: the verdict is not just noise.
  // Attainments near 1 need many requests for it: 100 good of 100 gives a low end of 0.963.
  bool clearly_meets = false;  // interval.low >= target
  bool clearly_fails = false;  // interval.high < target
};

struct SlaAnswer {
  std::vector<LevelVerdict> levels;  // increasing by level; one per distinct level
  // The highest level meeting the SLA below the lowest level that fails it; none when the
  // lowest level measured fails.
  std::optional<double> highest_meeting;
  // The lowest level that fails (the bracket's upper end: the answer lies in
  // [highest_meeting, lowest_failing)); none when every level met the SLA, in which case the
  // answer is "at least" highest_meeting.
  std::optional<double> lowest_failing;
  // False when a level met the SLA above one that failed: noise near the threshold or a real
  // non-monotonicity (a server that batches better under more load). The answer ignores those
  // levels (conservative: a failure at a lower load is evidence that the server cannot be relied
  // upon above it), and they are listed here.
  bool monotone = true;
  std::vector<double> meeting_above_failure;
};

// The answer over the levels measured, in any order. Outcomes of the same level are pooled
// (their requests and good requests added). Throws std::invalid_argument for an attainment
// outside (0, 1], a level that is not positive and finite, or good > requests.
SlaAnswer answer_of(std::vector<LevelOutcome> outcomes, double attainment = 0.99);

enum class LevelKind {
  kRate,         // any positive number; bisected at the geometric midpoint sqrt(lo hi)
  kConcurrency,  // whole numbers; bisected at the integer midpoint floor((lo + hi) / 2)
};

// How the search inside a point's load plan goes on after the plan's own levels.
struct SearchOptions {
  LevelKind kind = LevelKind::kRate;
  // The plan's levels are measured first; the search adds at most this many more.
  size_t plan_levels = 0;  // how many distinct levels the plan has (measured first)
  size_t max_extra_levels = 4;
  // Stop bisecting when the bracket's ends are within this ratio: hi / lo <= 1 + tolerance.
  double tolerance = 0.10;
  // When every level met the SLA: measure highest x growth, at most max_level (0: do not grow
  // past the plan). When every level failed: lowest / growth, at least min_level (0: do not
  // shrink below the plan).
  double growth = 2;
  double max_level = 0;
  double min_level = 0;
};

// The next level to measure, or none when the bracket is narrow enough, the extra levels are
// spent, or there is no bracket and growing or shrinking is not allowed (or has reached its
// limit). The bracket is answer_of's: [highest_meeting, lowest_failing). A level it gives is
// never one measured already. Throws std::invalid_argument as answer_of, and for a tolerance
// that is not positive or a growth that is not above 1.
std::optional<double> next_level(const std::vector<LevelOutcome>& measured, double attainment,
                                 const SearchOptions& options);

}  // namespace sweepbench::serve
