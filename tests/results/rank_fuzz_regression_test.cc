// Every kept input of the rank-file fuzz target (seeds and past findings) runs through its entry
// point: each writes a point's rank files, edits them as the input says, and reads them back.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "fuzz/rank_fuzz_entry.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

TEST(RankFuzzRegression, EveryKeptInputReadsOrReportsCleanly) {
  std::istringstream dirs(SWEEPBENCH_RANK_FUZZ_DIRS);
  std::string dir;
  size_t count = 0;
  while (std::getline(dirs, dir, ':')) {
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().filename() == "README.md") continue;
      std::string data = testing::read_text(entry.path().string());
      SCOPED_TRACE(entry.path().string());
      run_rank_fuzz_input(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
      ++count;
    }
  }
  EXPECT_GT(count, 5u) << "the seed corpus is missing";
}

// The empty input is an unedited one-rank point: it must read back exactly (the entry aborts
// otherwise), so the invariants themselves are exercised on every build.
TEST(RankFuzzRegression, AnUneditedPointReadsBack) {
  run_rank_fuzz_input(nullptr, 0);
  const std::uint8_t two_ranks_five_steps[] = {0x07, 5, 2, 0};
  run_rank_fuzz_input(two_ranks_five_steps, sizeof two_ranks_five_steps);
}

}  // namespace
}  // namespace sweepbench
