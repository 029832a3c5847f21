// Test helpers: a temporary directory that cleans up after itself, and small file utilities.
#pragma once

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

// The repository root and the directory holding the built binaries.
std::string source_dir();
std::string bin_dir();

}  // namespace sweepbench::testing
