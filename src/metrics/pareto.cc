#include "metrics/pareto.h"

namespace sweepbench {

Span oriented_span(bool higher_is_better, double value, double low, double high) {
  if (!higher_is_better) return Span{-value, -high, -low};
  return Span{value, low, high};
}

bool dominates(const std::vector<Span>& a, const std::vector<Span>& b) {
  bool beyond = false;
  for (size_t m = 0; m < a.size() && m < b.size(); ++m) {
    if (a[m].value < b[m].value) return false;
    if (a[m].low > b[m].high) beyond = true;
  }
  return beyond;
}

std::vector<bool> pareto_front(const std::vector<std::vector<Span>>& points,
                               const std::vector<std::string>& group) {
  std::vector<bool> front(points.size(), true);
  for (size_t a = 0; a < points.size(); ++a) {
    for (size_t b = 0; b < points.size() && front[a]; ++b) {
      if (b != a && group[b] == group[a] && dominates(points[b], points[a])) front[a] = false;
    }
  }
  return front;
}

}  // namespace sweepbench
