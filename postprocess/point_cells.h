// What the point's row (point_row.cc), its columns (point_columns.cc) and its series
// (point_series.cc) share: a results tree's file read as a Value, and a number made a cell.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/value.h"

namespace sweepbench {

// A file of the results tree as a Value (JSON is YAML), nullopt when it is absent; one that cannot
// be read adds "PATH: cannot be read: ..." to `warnings`.
std::optional<Value> read_json_or_yaml(const std::filesystem::path& path,
                                       std::vector<std::string>* warnings);
// A number as a cell: null when not finite, an integer when whole.
Value number_or_null(double v);

}  // namespace sweepbench
