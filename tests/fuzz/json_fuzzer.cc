// libFuzzer target over bench-command's JSON reader (docs/fuzzing.md).
#include <cstddef>
#include <cstdint>

#include "fuzz/json_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sweepbench::run_json_fuzz_input(data, size);
  return 0;
}
