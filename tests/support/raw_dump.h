// What the reference dumps (tests/train/reference_dump.cc, tests/infer/infer_reference_dump.cc)
// write for the Python references: raw little-endian arrays and their shapes for manifest.json.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "config/value.h"

namespace sweepbench::testing {

inline void write_raw(const std::string& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

inline Value shape_value(const std::vector<std::int64_t>& shape) {
  Value v = Value::list();
  for (std::int64_t d : shape) v.items().push_back(Value::integer(d));
  return v;
}

}  // namespace sweepbench::testing
