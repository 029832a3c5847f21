// When a serve point's load generator sends each request: the arrival schedules of a load plan
// (docs/serving.md, "Load metrics"), seeded and reproducible.
//
// A load plan is either a fixed concurrency, which has no schedule (a closed loop: the next
// request goes when one ends, so its send times are the server's answer, not a plan's), or an
// open-loop schedule of send times drawn here:
//
//   PoissonRate  gaps exponential with mean 1 / rate (a Poisson process; CV of the gaps 1).
//   GammaRate    gaps gamma-distributed with shape = burstiness and mean 1 / rate (scale =
//                1 / (rate x burstiness)), as vLLM's --burstiness: CV 1 / sqrt(burstiness);
//                below 1 burstier than Poisson, above 1 more even, 1 is Poisson.
//   LinearRamp   a Poisson process whose rate goes linearly from `from_per_s` at 0 to
//                `to_per_s` at the duration: rate(t) = a + (b - a) t / T, drawn by inverting
//                its cumulative rate a t + (b - a) t^2 / (2T) at the sums of unit exponentials.
//                vLLM's --ramp-up-strategy linear instead gives request i of N the rate
//                a + (b - a) i / (N - 1) for its own gap.
//
// The first request goes one gap after 0, as in a process that started at 0. Unlike vLLM, the
// times are not rescaled so that N requests take exactly N / rate: that would make the gaps no
// longer independent draws of the stated distribution.
//
// Reproducible: std::mt19937_64 (fully specified by the standard) seeded with the given seed,
// turned into uniforms, exponentials and gammas by the functions here (Marsaglia and Tsang's
// method for the gamma), not by std::*_distribution, whose algorithms each standard library
// chooses: a seed gives the same times with any compiler and library (up to the last bit of
// log and sqrt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <variant>
#include <vector>

namespace sweepbench::serve {

// A closed loop: `concurrency` requests in flight; no send times.
struct FixedConcurrency {
  int concurrency = 1;
};
struct PoissonRate {
  double rate_per_s = 1;
};
struct GammaRate {
  double rate_per_s = 1;
  double burstiness = 1;  // the gamma's shape
};
struct LinearRamp {
  double from_per_s = 0;
  double to_per_s = 1;
};
using ArrivalSchedule = std::variant<PoissonRate, GammaRate, LinearRamp>;
using LoadPlan = std::variant<FixedConcurrency, ArrivalSchedule>;

// Where a schedule stops: at the duration (send times < duration_s) or after max_requests,
// whichever comes first; 0 leaves a limit out, and one of them must be set. A ramp needs the
// duration (its rate is a function of time over it).
struct ScheduleLimits {
  double duration_s = 0;
  size_t max_requests = 0;
};

// The send times in seconds from the load's start, increasing. Throws std::invalid_argument for
// a rate that is not positive and finite (a ramp's ends may be 0, not both), a burstiness that is
// not positive and finite, or limits that set no end.
std::vector<double> send_times(const ArrivalSchedule& schedule, const ScheduleLimits& limits,
                               std::uint64_t seed);

// "poisson at 4/s", "gamma at 4/s, burstiness 0.5", "ramp 1/s to 8/s", "concurrency 16".
std::string describe(const LoadPlan& plan);

// The draws, exposed for their tests. A uniform in (0, 1): the top 53 bits of one draw, never 0.
double draw_uniform(std::mt19937_64& rng);
double draw_exponential(std::mt19937_64& rng);          // mean 1
double draw_gamma(std::mt19937_64& rng, double shape);  // scale 1, shape > 0

}  // namespace sweepbench::serve
