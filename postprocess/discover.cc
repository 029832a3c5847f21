#include "postprocess/discover.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "layout/paths.h"
#include "postprocess/point_row.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

// Walks one directory tree for points. Each directory is listed once, and a directory that cannot
// be listed costs only itself (a running sweep moves attempts aside; a colleague's tree may hold a
// directory we may not read).
class PointWalk {
 public:
  PointWalk(PointSearch* out, bool with_removed)
      : out_(out), with_removed_(with_removed), manifests_(&manifest_warnings_) {}

  void walk(const fs::path& dir) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      unreadable(dir, ec);
      return;
    }
    bool point = false;
    std::vector<fs::path> subdirs;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (is_point_file(name)) point = true;
      // Directory symlinks are not followed (as find(1) does not): a link may close a loop. One
      // that a manifest names as a point is said: its row is missing (docs/running.md).
      std::error_code type_ec;
      if (it->is_symlink(type_ec)) {
        std::string sweep;
        if (manifests_.entry(fs::absolute(it->path()).lexically_normal(), &sweep) != nullptr) {
          out_->warnings.push_back(it->path().string() +
                                   ": a point directory that is a symbolic link, not followed "
                                   "(its point is left out)");
        }
        continue;
      }
      if (it->is_directory(type_ec)) subdirs.push_back(it->path());
    }
    if (ec) {
      unreadable(dir, ec);
      return;
    }
    if (point) found_.insert(normal(dir));
    std::sort(subdirs.begin(), subdirs.end());
    for (const fs::path& sub : subdirs) {
      std::string name = sub.filename().string();
      // History, logs and scripts are not points, nor is anything hidden.
      if (name == kAttemptsDir || name == kLogsDir || name == kSubmitDir || starts_with(name, "."))
        continue;
      walk(sub);
    }
  }

  // The points in their sweeps' order: each directory's points as its manifest numbers them
  // (index: the order the sweep file gives), then those it does not name, by name. Points the
  // manifest says are no longer in the sweep are left out, unless asked for. A manifest that
  // cannot be read is reported by the extraction that reads it again.
  void finish() {
    struct Sorted {
      std::string parent;
      bool unnumbered;
      std::int64_t index;
      std::string path;
    };
    std::vector<Sorted> points;
    for (const std::string& path : found_) {
      std::string sweep;
      fs::path p(path);
      const ManifestPoint* e = manifests_.entry(p, &sweep);
      if (e != nullptr && !e->in_sweep) {
        if (!with_removed_) {
          ++out_->removed_left_out;
          continue;
        }
        ++out_->removed_included;
      }
      bool numbered = e != nullptr && e->index.has_value();
      points.push_back({p.parent_path().string(), !numbered, numbered ? *e->index : 0, path});
    }
    std::sort(points.begin(), points.end(), [](const Sorted& a, const Sorted& b) {
      return std::tie(a.parent, a.unnumbered, a.index, a.path) <
             std::tie(b.parent, b.unnumbered, b.index, b.path);
    });
    for (Sorted& s : points) out_->points.push_back(std::move(s.path));
  }

 private:
  static std::string normal(const fs::path& p) {
    return fs::absolute(p).lexically_normal().string();
  }

  // A point its manifest names is still a point (extract_point says it cannot be read); any
  // other directory is a warning.
  void unreadable(const fs::path& dir, const std::error_code& ec) {
    std::string sweep;
    fs::path absolute = fs::absolute(dir).lexically_normal();
    if (absolute.filename().empty()) absolute = absolute.parent_path();
    if (manifests_.entry(absolute, &sweep) != nullptr) {
      found_.insert(absolute.string());
      return;
    }
    out_->warnings.push_back(dir.string() + ": cannot be read: " + ec.message() +
                             " (any points under it are left out)");
  }

  PointSearch* out_;
  bool with_removed_;
  std::vector<std::string> manifest_warnings_;
  Manifests manifests_;
  std::set<std::string> found_;
};

}  // namespace

PointSearch find_point_dirs(const std::vector<std::string>& paths, bool with_removed) {
  PointSearch search;
  PointWalk walk(&search, with_removed);
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      if (ec && ec != std::errc::no_such_file_or_directory) {
        walk.walk(p);  // a directory we may not look into: the walk says so
        continue;
      }
      throw Error::input(Mark::in(p), "", "is not a directory", "give a results directory");
    }
    walk.walk(p);
  }
  walk.finish();
  return search;
}

}  // namespace sweepbench
