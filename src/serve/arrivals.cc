// serve/arrivals.h: the schedules and the draws behind them.
#include "serve/arrivals.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "text/text.h"

namespace sweepbench::serve {
namespace {

constexpr double kTwoPi = 6.283185307179586;

bool positive_finite(double x) { return x > 0 && std::isfinite(x); }

// A standard normal by Box and Muller (one of the pair; the other is dropped so that each draw
// depends on the generator alone, not on a cached half).
double draw_normal(std::mt19937_64& rng) {
  double u1 = draw_uniform(rng);
  double u2 = draw_uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// Whether another send time fits the limits.
bool room_for(const std::vector<double>& times, const ScheduleLimits& limits) {
  return limits.max_requests == 0 || times.size() < limits.max_requests;
}

// Draws gaps until the duration or the count is reached. `gap` gives one gap.
template <typename Gap>
std::vector<double> renewal_times(const ScheduleLimits& limits, Gap gap) {
  std::vector<double> times;
  double t = 0;
  while (room_for(times, limits)) {
    t += gap();
    if (limits.duration_s > 0 && t >= limits.duration_s) break;
    times.push_back(t);
  }
  return times;
}

}  // namespace

double draw_uniform(std::mt19937_64& rng) {
  // The top 53 bits, centred in their interval: (k + 0.5) / 2^53 lies in (0, 1), never 0 (whose
  // log is -inf) nor 1.
  return (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53;
}

double draw_exponential(std::mt19937_64& rng) { return -std::log(draw_uniform(rng)); }

double draw_gamma(std::mt19937_64& rng, double shape) {
  if (shape < 1) {
    // Gamma(a) = Gamma(a + 1) U^(1/a) (Marsaglia and Tsang, section 6), for shape below 1.
    double g = draw_gamma(rng, shape + 1);
    return g * std::pow(draw_uniform(rng), 1.0 / shape);
  }
  // Marsaglia and Tsang (2000), "A simple method for generating gamma variables".
  double d = shape - 1.0 / 3.0;
  double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x = draw_normal(rng);
    double v = 1.0 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    double u = draw_uniform(rng);
    double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v;
  }
}

std::vector<double> send_times(const ArrivalSchedule& schedule, const ScheduleLimits& limits,
                               std::uint64_t seed) {
  if (!(limits.duration_s >= 0) || !std::isfinite(limits.duration_s)) {
    throw std::invalid_argument("arrivals: the duration must be finite and not negative");
  }
  if (limits.duration_s == 0 && limits.max_requests == 0) {
    throw std::invalid_argument("arrivals: a schedule needs a duration or a number of requests");
  }
  std::mt19937_64 rng(seed);
  if (const auto* p = std::get_if<PoissonRate>(&schedule)) {
    if (!positive_finite(p->rate_per_s)) {
      throw std::invalid_argument("arrivals: the rate must be positive and finite");
    }
    double mean_gap = 1.0 / p->rate_per_s;
    return renewal_times(limits, [&] { return mean_gap * draw_exponential(rng); });
  }
  if (const auto* g = std::get_if<GammaRate>(&schedule)) {
    if (!positive_finite(g->rate_per_s)) {
      throw std::invalid_argument("arrivals: the rate must be positive and finite");
    }
    if (!positive_finite(g->burstiness)) {
      throw std::invalid_argument("arrivals: the burstiness must be positive and finite");
    }
    double scale = 1.0 / (g->rate_per_s * g->burstiness);
    return renewal_times(limits, [&] { return scale * draw_gamma(rng, g->burstiness); });
  }
  const auto& r = std::get<LinearRamp>(schedule);
  double a = r.from_per_s, b = r.to_per_s, T = limits.duration_s;
  if (!(a >= 0) || !(b >= 0) || !std::isfinite(a) || !std::isfinite(b) || a + b == 0) {
    throw std::invalid_argument(
        "arrivals: a ramp's rates must be finite and not negative, and not both 0");
  }
  if (T <= 0) throw std::invalid_argument("arrivals: a ramp needs a duration");
  // The cumulative rate L(t) = a t + k t^2 / 2 with k = (b - a) / T, inverted at S, the running
  // sum of unit exponentials: t = 2 S / (a + sqrt(a^2 + 2 k S)), the root of L(t) = S that does
  // not cancel. For S <= L(T) = (a + b) T / 2 the root is real (a^2 + 2 k S >= b^2).
  double k = (b - a) / T;
  double total = (a + b) * T / 2;
  std::vector<double> times;
  double s = 0;
  while (room_for(times, limits)) {
    s += draw_exponential(rng);
    if (s >= total) break;
    double t = 2 * s / (a + std::sqrt(a * a + 2 * k * s));
    if (t >= T) break;
    times.push_back(t);
  }
  return times;
}

std::string describe(const LoadPlan& plan) {
  if (const auto* c = std::get_if<FixedConcurrency>(&plan)) {
    return "concurrency " + std::to_string(c->concurrency);
  }
  const auto& s = std::get<ArrivalSchedule>(plan);
  if (const auto* p = std::get_if<PoissonRate>(&s)) {
    return "poisson at " + format_float_repr(p->rate_per_s) + "/s";
  }
  if (const auto* g = std::get_if<GammaRate>(&s)) {
    return "gamma at " + format_float_repr(g->rate_per_s) + "/s, burstiness " +
           format_float_repr(g->burstiness);
  }
  const auto& r = std::get<LinearRamp>(s);
  return "ramp " + format_float_repr(r.from_per_s) + "/s to " + format_float_repr(r.to_per_s) +
         "/s";
}

}  // namespace sweepbench::serve
