// How often bench-compare's verdict calls two sides different (metrics/significance.h), on
// synthetic runs: the false-positive rate on equal sides and the power for 5%, 10% and 30%
// changes at 3, 5 and 10 repeats a side and one run a side (its batch means), for one comparison
// and in a family of six (Bonferroni): the table in docs/compare.md, "How well the verdict works".
//
//   build/release/bin/verdict_rates [REPS]   (default 4000 comparisons a cell; about a minute)
//
// Each run: a level drawn around the side's mean with a between-run spread (0 or 2%, a normal
// factor), and 200 AR(1) step times of correlation 0.5 and 5% spread around it; its value is its
// steps' mean, its own error their batch means' (as bench-compare reads a training run's). One
// side is runs_mean of its runs, with the within-run floor.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "metrics/significance.h"
#include "metrics/statistics.h"

namespace {

using sweepbench::SideMean;

// runs == 0: one run a side, compared by its batch means.
SideMean side(std::mt19937_64& rng, size_t runs, double level, double between) {
  std::normal_distribution<double> unit(0.0, 1.0);
  std::vector<double> values, within;
  for (size_t r = 0; r < std::max<size_t>(runs, 1); ++r) {
    const double run_level = level * (1 + between * unit(rng));
    std::vector<double> steps(200);
    double v = unit(rng) / std::sqrt(1 - 0.25);
    for (double& x : steps) {
      v = 0.5 * v + unit(rng);
      x = run_level * (1 + 0.05 * v);
    }
    SideMean one = sweepbench::batches_mean(sweepbench::batch_means(steps));
    if (runs == 0) return one;
    values.push_back(one.mean);
    within.push_back(one.se);
  }
  return sweepbench::runs_mean(values, within);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 4000;
  std::printf(
      "| between-run spread | repeats a side | family | equal sides called different | "
      "5%% slower found | 10%% slower found | 30%% slower found |\n"
      "|---:|---:|---:|---:|---:|---:|---:|\n");
  for (double between : {0.0, 0.02}) {
    for (size_t runs : {0, 3, 5, 10}) {
      for (size_t family : {1, 6}) {
        if (runs == 0) {
          std::printf("| %.0f%% | one run (batch means) | %zu |", between * 100, family);
        } else {
          std::printf("| %.0f%% | %zu | %zu |", between * 100, runs, family);
        }
        for (double change : {0.0, 0.05, 0.10, 0.30}) {
          std::mt19937_64 rng(runs * 1000 + family * 100 + static_cast<size_t>(change * 100) +
                              static_cast<size_t>(between * 1000) * 7);
          sweepbench::VerdictRule rule;
          rule.higher_is_better = false;  // step times
          int called = 0;
          for (int i = 0; i < reps; ++i) {
            const SideMean a = side(rng, runs, 100, between);
            const SideMean b = side(rng, runs, 100 * (1 + change), between);
            const sweepbench::Change c = sweepbench::relative_change(
                a, b, sweepbench::family_level(0.05, family));
            const sweepbench::Verdict v = sweepbench::verdict_of(c, a.n, b.n, rule);
            called += change == 0 ? v == sweepbench::Verdict::kBetter ||
                                         v == sweepbench::Verdict::kWorse
                                   : v == sweepbench::Verdict::kWorse;
          }
          std::printf(" %.1f%% |", 100.0 * called / reps);
        }
        std::printf("\n");
      }
    }
  }
}
