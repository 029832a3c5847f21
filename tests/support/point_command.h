// What the launcher and container tests share: a resolved config from --set texts, and
// point_command as the runner calls it (the config and its typed settings, read once).
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "config/settings.h"
#include "launch/launcher.h"

namespace sweepbench::testing {

inline Value config_with(const std::vector<std::string>& sets) {
  Value partial = Value::map();
  for (const Override& o : parse_overrides(sets)) merge_into(partial, o.partial);
  return resolve_config(partial);
}

inline PointCommand command_of(const Value& config, const LaunchSite& site,
                               const std::string& program, const std::string& config_path,
                               const std::string& out_dir) {
  return point_command(Settings::of(config), config, site, program, config_path, out_dir);
}

}  // namespace sweepbench::testing
