// Plans a sweep given as text, for the sweep tests.
#pragma once

#include <string>

#include "config/yaml_io.h"
#include "sweep/expand.h"
#include "sweep/sweep_spec.h"

namespace sweepbench::testing {

inline SweepSpec spec_from_text(const std::string& text, const std::string& name = "s.yaml") {
  return parse_sweep(parse_yaml(text, name), name,
                     [](const std::string& path, const std::string& display) {
                       return load_yaml_file(path, display);
                     });
}

inline Plan plan_text(const std::string& text, PlanOptions options = {}) {
  return plan_sweep(spec_from_text(text), options);
}

// The value of `key` in point i, as display text.
inline std::string at(const Plan& plan, size_t i, const std::string& key) {
  return display_value(*plan.points().at(i).config.find_path(key));
}

}  // namespace sweepbench::testing
