#include "os/hardware.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <thread>
#include <utility>

namespace sweepbench {

const std::vector<PeakEntry>& peak_tflops_table() {
  // NVIDIA data sheets (dense, per GPU).
  static const std::vector<PeakEntry> table = {
      {"GH200", "GH200 (H100 in Grace Hopper)", 67.0, 989.4, 989.4},
      {"H200", "H200 SXM", 67.0, 989.4, 989.4},
      {"H100 PCIe", "H100 PCIe", 51.2, 756.0, 756.0},
      {"H100 NVL", "H100 NVL", 60.0, 835.0, 835.0},
      {"H100", "H100 SXM", 67.0, 989.4, 989.4},
      {"A100", "A100 (SXM and PCIe)", 19.5, 312.0, 312.0},
      {"L40S", "L40S", 91.6, 362.1, 362.1},
      {"L4", "L4", 30.3, 121.0, 121.0},
      {"A10G", "A10G", 31.2, 70.0, 70.0},
      {"A10", "A10", 31.2, 125.0, 125.0},
      {"V100", "V100 SXM2", 15.7, 0.0, 125.0},
  };
  return table;
}

std::optional<double> peak_tflops_for(const std::string& device_name, const std::string& dtype) {
  for (const PeakEntry& e : peak_tflops_table()) {
    if (device_name.find(e.match) == std::string::npos) continue;
    double v = dtype == "bf16" ? e.bf16 : (dtype == "fp16" ? e.fp16 : e.fp32);
    if (v <= 0) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

std::optional<double> peak_bandwidth_gbs_for(const std::string& device_name) {
  // In match order, as peak_tflops_table(): the more specific name first.
  static const std::vector<std::pair<std::string, double>> table = {
      {"GH200", 4000.0},
      {"H200", 4800.0},
      {"H100 PCIe", 2000.0},
      {"H100 NVL", 3900.0},
      {"H100", 3350.0},
      {"A100-SXM4-80GB", 2039.0},
      {"A100 80GB PCIe", 1935.0},
      {"A100", 1555.0},
      {"L40S", 864.0},
      {"L4", 300.0},
      {"A10G", 600.0},
      {"A10", 600.0},
      {"V100", 900.0},
  };
  for (const auto& [match, gbs] : table) {
    if (device_name.find(match) != std::string::npos) return gbs;
  }
  return std::nullopt;
}

std::optional<double> link_bandwidth_gbs_for(const std::string& device_name) {
  // In match order: the PCIe cards before the names they contain.
  static const std::vector<std::pair<std::string, double>> table = {
      {"GH200", 450.0},    {"H200", 450.0}, {"H100 PCIe", 64.0},
      {"H100 NVL", 300.0}, {"H100", 450.0}, {"A100 80GB PCIe", 32.0},
      {"A100-PCIE", 32.0}, {"A100", 300.0}, {"L40S", 32.0},
      {"L4", 32.0},        {"A10G", 32.0},  {"A10", 32.0},
      {"V100", 150.0},
  };
  for (const auto& [match, gbs] : table) {
    if (device_name.find(match) != std::string::npos) return gbs;
  }
  return std::nullopt;
}

DevicePeak resolve_peak(const std::optional<double>& configured, bool gpu,
                        const std::optional<double>& from_table) {
  if (configured) return {*configured, "config"};
  if (gpu && from_table) return {*from_table, "table"};
  return {};
}

int usable_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      size_t start = colon == std::string::npos ? colon : line.find_first_not_of(" \t", colon + 1);
      if (start != std::string::npos) return line.substr(start);
    }
  }
  return "cpu";
}

}  // namespace sweepbench
