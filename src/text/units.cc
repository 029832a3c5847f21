#include "text/units.h"

#include <set>

#include "text/text.h"

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

UnitKind metric_unit_kind(const std::string& metric, std::string* plain) {
  auto ends = [&](const char* suffix) { return ends_with(metric, suffix); };
  static const std::set<std::string> seconds = {
      "average_ttft", "average_gen_time", "average_latency_per_token", "train_runtime", "seconds"};
  if ((ends("_s") && !ends("_per_s")) || metric.find("_seconds") != std::string::npos ||
      seconds.count(metric)) {
    return UnitKind::kSeconds;
  }
  if (metric.find("bytes") != std::string::npos && !ends("_per_s") && !ends("_per_second")) {
    return UnitKind::kBytes;
  }
  if (metric == "mfu" || metric == "mbu" || ends("_mfu")) return UnitKind::kRatio;
  if (ends("_per_second")) {
    std::string what = metric.substr(0, metric.size() - 11);
    size_t cut = what.rfind('_');
    *plain = (cut == std::string::npos ? what : what.substr(cut + 1)) + "/s";
  } else if (ends("tps")) {
    *plain = "tokens/s";
  } else if (metric == "mt_per_hour") {
    *plain = "million tokens/h";
  } else if (metric.find("tflops") != std::string::npos) {
    *plain = "TFLOP/s";
  } else if (ends("_mb")) {
    *plain = "MB";
  } else if (metric.find("percent") != std::string::npos) {
    *plain = "%";
  } else if (ends("_gbs")) {
    *plain = "GB/s";
  }
  return UnitKind::kPlain;
}

}  // namespace sweepbench
