// Peak dense throughput of accelerators, for MFU: the table docs/metrics.md documents.
//
// Figures are the vendors' dense (no sparsity) tensor-core peaks per GPU for bf16 and fp16, and
// the plain FP32 (non-tensor-core) peak for fp32, since PyTorch leaves TF32 off for matmuls by
// default. Used only when hardware.peak_tflops is null; CPUs have no entry (no MFU unless given).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sweepbench {

struct PeakEntry {
  std::string match;                    // a substring of the device name, e.g. "H100 PCIe"
  std::string label;                    // how docs name it
  double fp32 = 0, bf16 = 0, fp16 = 0;  // TFLOPS; 0 = not supported
};

// In match order: more specific names first ("H100 PCIe" before "H100", "A100" before "A10").
const std::vector<PeakEntry>& peak_tflops_table();

// The peak for a device name and train.dtype (fp32 | bf16 | fp16), if the table knows it.
std::optional<double> peak_tflops_for(const std::string& device_name, const std::string& dtype);

// Peak memory bandwidth of a GPU in GB/s (10^9 bytes/s), from the vendors' data sheets, for
// bench-infer's memory-bandwidth utilisation (MBU); nullopt for a name the table lacks.
std::optional<double> peak_bandwidth_gbs_for(const std::string& device_name);

// Bandwidth of a GPU's link to the other GPUs of its node in GB/s, one direction (NVLink, or
// PCIe for the PCIe cards), from the vendors' data sheets, for the time prediction's collectives
// (predict/time_model.h); nullopt for a name the table lacks.
std::optional<double> link_bandwidth_gbs_for(const std::string& device_name);

// A per-device peak (TFLOPS or GB/s) and where it came from: `config` (the hardware.* key),
// `table` (the tables above, GPUs only: a CPU's name may hold "L4"), or `none` (value 0).
struct DevicePeak {
  double value = 0;
  std::string source = "none";
};
DevicePeak resolve_peak(const std::optional<double>& configured, bool gpu,
                        const std::optional<double>& from_table);

// The CPUs this process may run on (its affinity mask, which SLURM, mpirun and taskset narrow),
// else the machine's count; at least 1.
int usable_cpu_count();

// The CPU's model name as /proc/cpuinfo gives it ("AMD EPYC 9454 48-Core Processor"); "cpu"
// when it names none.
std::string cpu_model_name();

}  // namespace sweepbench
