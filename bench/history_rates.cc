// How well the history's change points work (metrics/change_points.h), on synthetic series with
// known steps, drifts and noise: the table in docs/history.md, "How well it works".
//
//   build/release/bin/history_rates [REPS] [--json FILE]   (default 2000 series a cell)
//
// A series: n runs in time order, each a level times a lognormal factor (the runs' scatter), each
// with its own 95% interval of +-`own` (relative). Cases:
// - flat: no change; how often a searched cut is reported (per series, before any family
//   correction) and how often a family of 200 flat series has any discovery after
//   Benjamini-Hochberg at 5% (the family-wise false alarm rate);
// - a step of 2, 5 or 10% after run n/2: how often a cut is found within one run of it;
// - a drift: the level moves 10% evenly over the series: how often a cut is reported;
// - an environment change with a 5% step and 2 runs after it: how often it is significant.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "metrics/change_points.h"

namespace {

using sweepbench::ChangePoint;
using sweepbench::SeriesPoint;

struct Shape {
  size_t n = 30;
  double scatter = 0.03;  // runs' relative spread beyond their own intervals
  double own = 0.02;      // each run's own interval, relative half-width
  double step = 0;        // relative step after run `at`
  size_t at = 15;
  double drift = 0;                     // relative change over the whole series, evenly
  std::string new_environment_at_step;  // non-empty: the step is also an environment change
  int hosts = 0;  // > 0: each run on the next of this many hosts in turn (another environment)
};

std::vector<SeriesPoint> make(const Shape& s, std::mt19937_64& rng) {
  std::normal_distribution<double> noise(0.0, 1.0);
  std::vector<SeriesPoint> out;
  for (size_t i = 0; i < s.n; ++i) {
    double level = 1000.0 * (i >= s.at ? 1 + s.step : 1.0);
    level *= 1 + s.drift * static_cast<double>(i) / static_cast<double>(s.n - 1);
    SeriesPoint p;
    // The run's value: its level, the scatter between runs and its own measurement error.
    p.value = level * std::exp(s.scatter * noise(rng) + s.own / 1.96 * noise(rng));
    p.ci_low = p.value * (1 - s.own);
    p.ci_high = p.value * (1 + s.own);
    p.environment = !s.new_environment_at_step.empty() && i >= s.at ? "new" : "old";
    if (s.hosts > 0) p.environment = "host" + std::to_string(i % static_cast<size_t>(s.hosts));
    out.push_back(p);
  }
  return out;
}

struct Row {
  std::string name;
  double rate;
};

}  // namespace

int main(int argc, char** argv) {
  int reps = 2000;
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json = argv[++i];
    } else {
      reps = std::atoi(argv[i]);
    }
  }
  std::mt19937_64 rng(20261129);
  std::vector<Row> rows;
  auto rate = [&](const std::string& name, const Shape& shape, auto&& hit) {
    int hits = 0;
    for (int r = 0; r < reps; ++r)
      hits += hit(sweepbench::find_change_points(make(shape, rng)).cuts);
    rows.push_back({name, static_cast<double>(hits) / reps});
    std::printf("%-62s %6.3f\n", name.c_str(), rows.back().rate);
  };
  auto any = [](const std::vector<ChangePoint>& c) { return c.empty() ? 0 : 1; };

  std::printf("# case (%d series each)%*s rate\n", reps, 39, "");
  for (size_t n : {10, 30, 100}) {
    for (double scatter : {0.0, 0.03}) {
      Shape s;
      s.n = n;
      s.scatter = scatter;
      char name[128];
      std::snprintf(name, sizeof name, "flat, n=%zu, scatter %.0f%%, own +-2%%: any cut", n,
                    scatter * 100);
      rate(name, s, any);
    }
  }
  // Families of 200 flat series of 30 runs, Benjamini-Hochberg at 5% over all their cuts.
  {
    int families = std::max(1, reps / 20), alarmed = 0;
    for (int f = 0; f < families; ++f) {
      std::vector<double> p;
      size_t tests = 0;
      for (int s = 0; s < 200; ++s) {
        sweepbench::ChangeSearch found = sweepbench::find_change_points(make(Shape{}, rng));
        for (const ChangePoint& c : found.cuts) p.push_back(c.p);
        tests += found.tests;
      }
      std::vector<bool> d = sweepbench::benjamini_hochberg(p, 0.05, tests);
      alarmed += std::find(d.begin(), d.end(), true) != d.end() ? 1 : 0;
    }
    rows.push_back({"family of 200 flat series (n=30), BH 5%: any discovery",
                    static_cast<double>(alarmed) / families});
    std::printf("%-62s %6.3f\n", rows.back().name.c_str(), rows.back().rate);
  }
  for (size_t n : {10, 20, 40}) {
    for (double step : {-0.02, -0.05, -0.10}) {
      Shape s;
      s.n = n;
      s.at = n / 2;
      s.step = step;
      char name[128];
      std::snprintf(name, sizeof name, "step %.0f%% after run %zu of %zu, scatter 3%%: found",
                    step * 100, n / 2, n);
      rate(name, s, [&](const std::vector<ChangePoint>& c) {
        for (const ChangePoint& p : c) {
          if (p.at + 1 >= s.at && p.at <= s.at + 1) return 1;
        }
        return 0;
      });
    }
  }
  {
    Shape s;
    s.drift = -0.10;
    rate("drift -10% evenly over 30 runs: any cut", s, any);
  }
  {
    // Every run on another host (4 in turn): every cut an environment change, each tested.
    Shape s;
    s.n = 20;
    s.own = 0.003;
    s.hosts = 4;
    rate("flat, 20 runs on 4 hosts in turn, own +-0.3%, scatter 3%: BH 5% discovery", s,
         [&](const std::vector<ChangePoint>& c) {
           std::vector<double> p;
           for (const ChangePoint& x : c) p.push_back(x.p);
           std::vector<bool> d = sweepbench::benjamini_hochberg(p, 0.05, c.size());
           return std::find(d.begin(), d.end(), true) != d.end() ? 1 : 0;
         });
  }
  for (double step : {0.0, -0.05}) {
    Shape s;
    s.n = 12;
    s.at = 10;
    s.step = step;
    s.new_environment_at_step = "new";
    char name[128];
    std::snprintf(name, sizeof name, "environment change, step %.0f%%, 10 runs then 2: p < 0.05",
                  step * 100);
    rate(name, s, [&](const std::vector<ChangePoint>& c) {
      for (const ChangePoint& p : c) {
        if (p.environment && p.p < 0.05) return 1;
      }
      return 0;
    });
  }
  if (json != nullptr) {
    FILE* f = std::fopen(json, "w");
    if (f == nullptr) return 4;
    std::fprintf(f, "{\n  \"series_per_case\": %d,\n  \"rows\": [\n", reps);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::fprintf(f, "    {\"case\": \"%s\", \"rate\": %.4f}%s\n", rows[i].name.c_str(),
                   rows[i].rate, i + 1 < rows.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    if (std::fclose(f) != 0) return 4;
  }
  return 0;
}
