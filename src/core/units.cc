#include "core/units.h"

namespace sweepbench {

std::pair<std::string, double> scaled_unit(UnitKind kind, double max, const std::string& plain) {
  switch (kind) {
    case UnitKind::kSeconds:
      if (max >= 1) return {"s", 1};
      if (max >= 1e-3) return {"ms", 1e3};
      return {"µs", 1e6};
    case UnitKind::kBytes:
      if (max >= 1073741824.0) return {"GiB", 1.0 / 1073741824.0};
      if (max >= 1048576.0) return {"MiB", 1.0 / 1048576.0};
      if (max >= 1024) return {"KiB", 1.0 / 1024};
      return {"B", 1};
    case UnitKind::kRatio:
      return {"%", 100};
    case UnitKind::kPlain:
      break;
  }
  return {plain, 1};
}

}  // namespace sweepbench
