// Every kept input of the JSON reader's fuzz target (seeds and past findings) runs through its
// entry point: each is read pruned to a set of pointers and whole, and the two must agree.
#include <gtest/gtest.h>

#include <string>

#include "fuzz/json_fuzz_entry.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

TEST(JsonFuzzRegression, EveryKeptInputReadsAlikePrunedAndWhole) {
  size_t count = testing::for_each_kept_input(
      SWEEPBENCH_JSON_FUZZ_DIRS, [](const std::string& path, const std::string& data) {
        SCOPED_TRACE(path);
        run_json_fuzz_input(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
      });
  EXPECT_GE(count, 7u) << "the seed corpus is missing";
}

// Nesting past the kept part's limit: refused whole, read pruned when no pointer reaches it.
TEST(JsonFuzzRegression, DeepNestingIsRefusedWholeNotCrashed) {
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  run_json_fuzz_input(reinterpret_cast<const std::uint8_t*>(deep.data()), deep.size());
}

}  // namespace
}  // namespace sweepbench
