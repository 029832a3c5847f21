// libFuzzer target over the rank-file reader's validation and bench-extract's row
// (docs/fuzzing.md).
#include <cstddef>
#include <cstdint>

#include "fuzz/rank_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  sweepbench::run_rank_fuzz_input(data, size);
  return 0;
}
