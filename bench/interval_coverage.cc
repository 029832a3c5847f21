// How often the intervals of metrics/statistics.h hold the true mean, on synthetic AR(1) step
// times with and without a warm-up transient, beside the interval that assumes independent steps
// (Student's t over the raw steps): the table in docs/metrics.md, "Intervals and noise". Then
// the same interval after measuring until precise (statistics.h, precise_enough and next_look:
// steps taken until the 95% interval is within 2% of the mean at a look, or 50,000 steps), on
// AR(1) steps whose spread is 5% or 20% of the mean: the table in docs/metrics.md, "Measure until
// precise".
//
//   build/release/bin/interval_coverage [REPS]   (default 4000 series a cell; about 5 s)
//
// Each series: x_t = 100 + v_t, v_t = rho v_{t-1} + e_t, e_t ~ N(0, 1), begun stationary; with
// "warm-up", the first tenth of the steps slower by 8 exp(-t / 5) standard deviations.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "metrics/statistics.h"

int main(int argc, char** argv) {
  using sweepbench::Estimate;
  const int reps = argc > 1 ? std::atoi(argv[1]) : 4000;
  std::printf(
      "| correlation | steps | warm-up | coverage | assuming independence | mean width | "
      "steps cut |\n|---:|---:|---|---:|---:|---:|---:|\n");
  for (double rho : {0.0, 0.5, 0.9}) {
    for (size_t n : {20, 40, 100, 200, 500, 1000, 2000}) {
      for (double warm : {0.0, 8.0}) {
        std::mt19937_64 rng(static_cast<std::uint64_t>(n * 7 + rho * 100 + warm));
        std::normal_distribution<double> noise(0, 1);
        int covered = 0, naive = 0;
        double width = 0, cut = 0;
        for (int r = 0; r < reps; ++r) {
          std::vector<double> x(n);
          double v = noise(rng) / std::sqrt(1 - rho * rho);
          for (size_t i = 0; i < n; ++i) {
            if (i > 0) v = rho * v + noise(rng);
            x[i] = 100 + v;
          }
          for (size_t i = 0; i < n / 10; ++i) x[i] += warm * std::exp(-static_cast<double>(i) / 5);
          Estimate e = sweepbench::series_estimate(x);
          covered += e.low <= 100 && 100 <= e.high;
          width += e.high - e.low;
          cut += static_cast<double>(e.cut);
          double m = 0, s = 0;
          for (double y : x) m += y;
          m /= static_cast<double>(n);
          for (double y : x) s += (y - m) * (y - m);
          const double h = sweepbench::student_t_quantile(0.975, static_cast<double>(n - 1)) *
                           std::sqrt(s / static_cast<double>(n - 1) / static_cast<double>(n));
          naive += std::fabs(m - 100) <= h;
        }
        std::printf("| %.1f | %zu | %s | %.3f | %.3f | %.2f | %.1f |\n", rho, n,
                    warm > 0 ? "yes" : "no", covered / static_cast<double>(reps),
                    naive / static_cast<double>(reps), width / reps, cut / reps);
      }
    }
  }
  std::printf(
      "\n| correlation | spread | coverage | steps, mean | steps, 90th percentile | "
      "reached 2%% |\n|---:|---:|---:|---:|---:|---:|\n");
  for (double rho : {0.0, 0.5, 0.9}) {
    for (double cv : {0.05, 0.2}) {
      std::mt19937_64 rng(static_cast<std::uint64_t>(rho * 1000 + cv * 100));
      std::normal_distribution<double> noise(0, 1);
      int covered = 0, reached = 0;
      std::vector<double> steps;
      const int runs = reps / 2;
      for (int r = 0; r < runs; ++r) {
        std::vector<double> x;
        double v = noise(rng) / std::sqrt(1 - rho * rho);
        size_t look = 0;
        bool ok = false;
        while (x.size() < 50000) {
          v = rho * v + noise(rng);
          x.push_back(100 * (1 + cv * std::sqrt(1 - rho * rho) * v));
          if (x.size() < 10 || x.size() < look) continue;
          if (sweepbench::precise_enough(x, 0.02)) {
            ok = true;
            break;
          }
          look = sweepbench::next_look(x.size());
        }
        Estimate e = sweepbench::series_estimate(x);
        covered += e.low <= 100 && 100 <= e.high;
        reached += ok;
        steps.push_back(static_cast<double>(x.size()));
      }
      std::sort(steps.begin(), steps.end());
      double sum = 0;
      for (double n : steps) sum += n;
      std::printf("| %.1f | %.0f%% | %.3f | %.0f | %.0f | %.3f |\n", rho, cv * 100,
                  covered / static_cast<double>(runs), sum / runs,
                  steps[static_cast<size_t>(0.9 * (runs - 1))], reached / static_cast<double>(runs));
    }
  }
}
