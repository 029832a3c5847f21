// Test helpers: a temporary directory that cleans up after itself, and small file utilities.
#pragma once

#include <functional>
#include <string>

namespace sweepbench::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name
  std::string file(const std::string& name) const;
  // Writes `text` to path()/name (creating parent directories) and returns the full path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string path_;
};

std::string read_text(const std::string& path);

// Calls `each(path, contents)` for every file (README.md aside) in the ':'-separated directories
// that exist; returns how many. The fuzz targets' kept inputs run through their entry points so.
size_t for_each_kept_input(const std::string& dirs,
                           const std::function<void(const std::string&, const std::string&)>& each);

// The repository root and the directory holding the built binaries.
std::string source_dir();
std::string bin_dir();

}  // namespace sweepbench::testing
