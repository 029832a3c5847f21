// One fuzz input through the rank-file reader and bench-extract's row (docs/fuzzing.md).
//
// The input does not hold an HDF5 file: its bytes drive an editor. The entry writes one or two
// valid rank files of a point (write_rank_file), then applies the edits the input spells out, with
// HDF5 itself, as a full disk, a crash, a newer sweepbench or a hand edit could leave a file:
// attributes, datasets and groups deleted, replaced by another type (integers of every width,
// floats, strings fixed and variable, compounds), another shape (scalar, empty, longer, 2-D) or a
// group; single values overwritten with any bit pattern (NaN, infinities, extremes); unknown
// objects added; the file cut short. Then it reads every file in both scopes and extracts the
// point's row, printing it in every table format.
//
// The reader must report and go on: read_rank_file never throws, and the row is built whatever
// the files hold. An unedited point must read back exactly, with no problem, and extract as ok.
// Anything else (a crash, an exception, a sanitizer report, a broken invariant) aborts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sweepbench {

void run_rank_fuzz_input(const std::uint8_t* data, std::size_t size);

}  // namespace sweepbench
