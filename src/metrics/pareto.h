// The Pareto front of points measured with intervals: bench-extract --pareto and bench-plot
// --kind pareto ask the same question with this one answer (docs/extract.md).
#pragma once

#include <string>
#include <vector>

namespace sweepbench {

// One metric of a point: its value and 95% interval, turned so that more is better.
struct Span {
  double value = 0, low = 0, high = 0;
};

// The span of a metric's value and interval (low = high = value without one): negated for a
// metric where less is better (`higher_is_better`: metrics/summary.h's, of its name and unit).
Span oriented_span(bool higher_is_better, double value, double low, double high);

// Whether a dominates b: at least as good in every metric, and in one better beyond the
// intervals (a's whole interval above b's). Both have one span per metric, in the same order.
bool dominates(const std::vector<Span>& a, const std::vector<Span>& b);

// For each point, whether it is on the front: no point of the same group dominates it. `group`
// holds one label per point (all equal: one front).
std::vector<bool> pareto_front(const std::vector<std::vector<Span>>& points,
                               const std::vector<std::string>& group);

}  // namespace sweepbench
