// The table of every config key that Schema is built from (schema_table.cc), in the table's
// order; only schema.cc calls it, once.
#pragma once

#include <vector>

#include "config/key_spec.h"

namespace sweepbench {

std::vector<KeySpec> build_table();

}  // namespace sweepbench
