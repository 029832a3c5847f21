// Every kept input of the rank-file fuzz target (seeds and past findings) runs through its entry
// point: each writes a point's rank files, edits them as the input says, and reads them back.
#include <gtest/gtest.h>

#include "fuzz/rank_fuzz_entry.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

TEST(RankFuzzRegression, EveryKeptInputReadsOrReportsCleanly) {
  size_t count = testing::for_each_kept_input(
      SWEEPBENCH_RANK_FUZZ_DIRS, [](const std::string& path, const std::string& data) {
        SCOPED_TRACE(path);
        run_rank_fuzz_input(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
      });
  EXPECT_GT(count, 5u) << "the seed corpus is missing";
}

// The empty input is an unedited one-rank point: it must read back exactly (the entry aborts
// otherwise), so the invariants themselves are exercised on every build.
TEST(RankFuzzRegression, AnUneditedPointReadsBack) {
  run_rank_fuzz_input(nullptr, 0);
  const std::uint8_t two_ranks_five_steps[] = {0x07, 5, 2, 0};
  run_rank_fuzz_input(two_ranks_five_steps, sizeof two_ranks_five_steps);
  const std::uint8_t as_schema1[] = {0x0f, 5, 2, 0};  // rewritten as schema 1 wrote it
  run_rank_fuzz_input(as_schema1, sizeof as_schema1);
}

}  // namespace
}  // namespace sweepbench
