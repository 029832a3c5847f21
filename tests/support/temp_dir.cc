#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sweepbench::testing {

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "sweepbench-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::file(const std::string& name) const {
  return (fs::path(path_) / name).string();
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  fs::path p = fs::path(path_) / name;
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
  return p.string();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::string source_dir() { return SWEEPBENCH_SOURCE_DIR; }
std::string bin_dir() { return SWEEPBENCH_BIN_DIR; }

size_t for_each_kept_input(
    const std::string& dirs,
    const std::function<void(const std::string&, const std::string&)>& each) {
  std::istringstream list(dirs);
  std::string dir;
  size_t count = 0;
  while (std::getline(list, dir, ':')) {
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().filename() == "README.md") continue;
      each(entry.path().string(), read_text(entry.path().string()));
      ++count;
    }
  }
  return count;
}

}  // namespace sweepbench::testing
