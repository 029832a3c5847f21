// Every kept fuzz input (seed corpus and past crashes) runs through the fuzz entry point.
#include <gtest/gtest.h>

#include "fuzz/sweep_fuzz_entry.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

TEST(FuzzRegression, EveryKeptInputPlansOrFailsCleanly) {
  size_t count = testing::for_each_kept_input(
      SWEEPBENCH_FUZZ_DIRS, [](const std::string& path, const std::string& data) {
        SCOPED_TRACE(path);
        run_sweep_fuzz_input(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
      });
  EXPECT_GT(count, 5u) << "the seed corpus is missing";
}

}  // namespace
}  // namespace sweepbench
