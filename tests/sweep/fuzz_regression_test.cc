// Every kept fuzz input (seed corpus and past crashes) runs through the fuzz entry point.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "fuzz/sweep_fuzz_entry.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

TEST(FuzzRegression, EveryKeptInputPlansOrFailsCleanly) {
  std::istringstream dirs(SWEEPBENCH_FUZZ_DIRS);
  std::string dir;
  size_t count = 0;
  while (std::getline(dirs, dir, ':')) {
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().filename() == "README.md") continue;
      std::string data = testing::read_text(entry.path().string());
      SCOPED_TRACE(entry.path().string());
      run_sweep_fuzz_input(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
      ++count;
    }
  }
  EXPECT_GT(count, 5u) << "the seed corpus is missing";
}

}  // namespace
}  // namespace sweepbench
