#include "postprocess/point_cells.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/yaml_io.h"
#include "os/fs.h"
#include "text/error.h"

namespace sweepbench {

namespace fs = std::filesystem;

std::optional<Value> read_json_or_yaml(const fs::path& path, std::vector<std::string>* warnings) {
  try {
    // A results tree's file: a link there is refused, not followed (docs/security.md).
    if (auto text = read_file_if_exists(path.string(), kMaxSmallFile, Links::kRefuse)) {
      return parse_own_yaml(*text, path.string());
    }
  } catch (const Error& e) {
    warnings->push_back(path.string() + ": cannot be read: " + e.message());
  }
  return std::nullopt;
}

// A whole number stays one (a program's `"num_requests": 32`, a count of bytes): written 32,
// not 32.0. Exact up to 2^53, as doubles are.
Value number_or_null(double v) {
  if (!std::isfinite(v)) return Value::null();
  if (v == std::floor(v) && std::fabs(v) <= 9007199254740992.0) {
    return Value::integer(static_cast<std::int64_t>(v));
  }
  return Value::real(v);
}

}  // namespace sweepbench
