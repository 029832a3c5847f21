// One fuzz input through sweep parsing, expansion and tagging.
//
// The input is a sweep file; lines starting with "#set " (YAML comments) are also applied as
// --set overrides, so the fuzzer mutates those too. Any input must either plan or fail with a
// sweepbench::Error; on success every invariant below must hold. Anything else (a crash, another
// exception, a broken invariant) aborts, which libFuzzer reports.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sweepbench {

void run_sweep_fuzz_input(const std::uint8_t* data, std::size_t size);

}  // namespace sweepbench
