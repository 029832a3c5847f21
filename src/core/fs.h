// File-system helpers that keep the promise "nothing half-written": every file is written under a
// temporary name in its own directory, flushed, and renamed over the final name when complete.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sweepbench {

// Writes `text` to `path` atomically. Throws Error(kIo) naming the path on failure, and leaves no
// temporary file behind.
void write_file_atomic(const std::string& path, std::string_view text);

// The whole file, or nullopt when it does not exist. Throws Error(kIo) when it exists but cannot
// be read.
std::optional<std::string> read_file_if_exists(const std::string& path);

// mkdir -p; throws Error(kIo) naming the path.
void make_directories(const std::string& path);

}  // namespace sweepbench
