// bench-extract's walk of a results tree: which directories are points (find_point_dirs), which
// are no longer in their sweep (--removed), and what could not be read (warnings).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sweepbench {

// The point directories under each path (a path may itself be one): directory by directory in
// sorted order, and in a directory the points of its manifest in the sweep's order (their
// index), then any others by name. A directory that cannot be listed (permission denied, removed
// while the walk reads it) ends nothing but itself: when the manifest beside it names it, it is
// still a point (its row says it is incomplete and why); otherwise it is a warning naming it.
// Points that the manifest says are no longer in their sweep (the sweep file was edited since)
// are left out, and counted, unless `with_removed`.
struct PointSearch {
  std::vector<std::string> points;
  std::vector<std::string> warnings;  // "PATH: cannot be read: REASON ..."
  size_t removed_left_out = 0, removed_included = 0;
};
PointSearch find_point_dirs(const std::vector<std::string>& paths, bool with_removed = false);

}  // namespace sweepbench
