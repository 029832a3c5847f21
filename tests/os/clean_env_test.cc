// bench-train --env-keep: which variables survive, and that the restart really drops the rest.
#include "os/clean_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sweepbench {
namespace {

using ::testing::ElementsAre;

TEST(FilterEnvironment, KeepsOnlyNamesMatchingAGlob) {
  std::vector<std::string> env = {"PATH=/usr/bin",      "OMPI_COMM_WORLD_RANK=1",
                                  "LD_LIBRARY_PATH=/x", "SLURM_PROCID=1",
                                  "MY_VAR=a=b",         "PMIX_RANK=1",
                                  "SLURMX=no"};
  EXPECT_THAT(filter_environment(env, {"OMPI_*", "SLURM_*", "MY_VAR", "PMIX_*"}),
              ElementsAre("OMPI_COMM_WORLD_RANK=1", "SLURM_PROCID=1", "MY_VAR=a=b", "PMIX_RANK=1"));
  EXPECT_TRUE(filter_environment(env, {}).empty());
  EXPECT_TRUE(filter_environment(env, {""}).empty());
}

}  // namespace
}  // namespace sweepbench
