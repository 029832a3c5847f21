// One fuzz input through bench-command's JSON reader (docs/fuzzing.md).
//
// The input is a file's bytes. The entry reads it as JSON with each of a set of pointers, pruned
// to what the pointer reaches (command/json_reader.h), and reads it whole; both must succeed or
// fail alike, and the pointer must find the same values, in the same order, in the pruned
// document as in the whole one. Then the file is read as a metric's file and as a program's
// output (one document, JSON lines, a cut list). Anything else (a crash, an exception other
// than the reader's Error, a sanitizer report, values that differ) aborts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sweepbench {

void run_json_fuzz_input(const std::uint8_t* data, std::size_t size);

}  // namespace sweepbench
