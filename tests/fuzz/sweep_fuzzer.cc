// libFuzzer target over sweep parsing, expansion and tagging (docs/fuzzing.md).
#include <cstddef>
#include <cstdint>

#include "fuzz/sweep_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sweepbench::run_sweep_fuzz_input(data, size);
  return 0;
}
