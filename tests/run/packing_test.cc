// bench-sweep run --jobs: what a point needs of the machine and how the pool hands out disjoint
// CPUs and GPUs (launch/packing.h).
#include "launch/packing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdlib.h>

namespace sweepbench {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

LaunchSettings launch(std::int64_t ranks, std::optional<std::int64_t> cpus_per_rank = std::nullopt,
                      std::int64_t gpus_per_rank = 0) {
  LaunchSettings l;
  l.ranks = ranks;
  l.cpus_per_rank = cpus_per_rank;
  l.gpus_per_rank = gpus_per_rank;
  return l;
}

TEST(PointNeeds, CpusPerRankWinsElseAnEqualShareOrOneCpuARank) {
  // launch.cpus_per_rank, whatever --jobs says.
  PointNeeds n = point_needs(launch(2, 3), 4, 16, 0);
  EXPECT_EQ(n.cpus_per_rank, 3);
  EXPECT_EQ(n.cpus, 6);
  // --jobs 4 on 16 CPUs: a quarter each, shared by the point's ranks.
  n = point_needs(launch(2), 4, 16, 0);
  EXPECT_EQ(n.cpus_per_rank, 2);
  EXPECT_EQ(n.cpus, 4);
  // --jobs auto: one CPU a rank.
  n = point_needs(launch(3), kJobsAuto, 16, 0);
  EXPECT_EQ(n.cpus, 3);
  // A GPU point under auto: the CPUs of its share of the GPUs.
  n = point_needs(launch(2, std::nullopt, 1), kJobsAuto, 32, 8);
  EXPECT_EQ(n.gpus, 2);
  EXPECT_EQ(n.cpus_per_rank, 4);
  EXPECT_EQ(n.cpus, 8);
  // Never more than the machine: such a point takes all of it.
  n = point_needs(launch(4, 8, 2), 2, 16, 4);
  EXPECT_EQ(n.cpus, 16);
  EXPECT_EQ(n.gpus, 4);
  // No GPU here: a point's GPUs are not counted (nothing to share out).
  EXPECT_EQ(point_needs(launch(1, std::nullopt, 1), 2, 4, 0).gpus, 0);
}

TEST(PointNeeds, ExclusiveNodeOrSeveralNodesRunAlone) {
  LaunchSettings l = launch(1);
  EXPECT_FALSE(point_needs(l, 2, 4, 0).alone);
  l.exclusive = Exclusive::kNode;
  EXPECT_TRUE(point_needs(l, 2, 4, 0).alone);
  l = launch(4);
  l.nodes = 2;
  EXPECT_TRUE(point_needs(l, 2, 4, 0).alone);  // auto: several nodes
  l.exclusive = Exclusive::kShared;
  EXPECT_FALSE(point_needs(l, 2, 4, 0).alone);
}

TEST(ResourcePool, HandsOutDisjointCpusAndGpusUpToJobs) {
  ResourcePool pool({0, 1, 2, 3}, {"4", "6"}, 3);
  PointNeeds one{2, 2, 1, false};
  std::optional<Placement> a = pool.take(one);
  ASSERT_TRUE(a);
  EXPECT_THAT(a->cpus, ElementsAre(0, 1));
  EXPECT_THAT(a->gpus, ElementsAre("4"));
  std::optional<Placement> b = pool.take(one);
  ASSERT_TRUE(b);
  EXPECT_THAT(b->cpus, ElementsAre(2, 3));
  EXPECT_THAT(b->gpus, ElementsAre("6"));
  // Nothing left: the next waits.
  EXPECT_FALSE(pool.take(PointNeeds{1, 1, 0, false}));
  pool.give_back(*a);
  std::optional<Placement> c = pool.take(PointNeeds{1, 1, 0, false});
  ASSERT_TRUE(c);
  EXPECT_THAT(c->cpus, ElementsAre(0));
  EXPECT_THAT(c->gpus, IsEmpty());
  // --jobs 3: a fourth point waits even where CPUs are free.
  ASSERT_TRUE(pool.take(PointNeeds{1, 1, 0, false}));
  EXPECT_EQ(pool.running(), 3);
  EXPECT_FALSE(pool.take(PointNeeds{0, 1, 0, false}));
}

TEST(ResourcePool, AnExclusivePointWaitsForAnIdleMachineAndHoldsAllOfIt) {
  ResourcePool pool({0, 1}, {}, kJobsAuto);
  std::optional<Placement> a = pool.take(PointNeeds{1, 1, 0, false});
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.take(PointNeeds{1, 1, 0, true}));
  pool.give_back(*a);
  std::optional<Placement> alone = pool.take(PointNeeds{1, 1, 0, true});
  ASSERT_TRUE(alone);
  EXPECT_THAT(alone->cpus, ElementsAre(0, 1));
  EXPECT_FALSE(pool.take(PointNeeds{1, 1, 0, false}));  // nothing beside it
  pool.give_back(*alone);
  EXPECT_TRUE(pool.take(PointNeeds{1, 1, 0, false}));
}

TEST(ResourcePool, WithNothingRunningEveryPointFits) {
  ResourcePool pool({0, 1}, {"0"}, 2);
  std::optional<Placement> big = pool.take(PointNeeds{64, 32, 8, false});
  ASSERT_TRUE(big);
  EXPECT_THAT(big->cpus, ElementsAre(0, 1));
  EXPECT_THAT(big->gpus, ElementsAre("0"));
}

TEST(CpuListText, RangesAsTasksetWritesThem) {
  EXPECT_EQ(cpu_list_text({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
  EXPECT_EQ(cpu_list_text({5}), "5");
  EXPECT_EQ(cpu_list_text({}), "");
}

TEST(VisibleGpus, CudaVisibleDevicesDecidesWhenSet) {
  const char* before = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string saved = before != nullptr ? before : "";
  ::setenv("CUDA_VISIBLE_DEVICES", "2, 5,GPU-abc", 1);
  EXPECT_THAT(visible_gpus(), ElementsAre("2", "5", "GPU-abc"));
  ::setenv("CUDA_VISIBLE_DEVICES", "-1", 1);
  EXPECT_THAT(visible_gpus(), IsEmpty());
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  EXPECT_THAT(visible_gpus(), IsEmpty());
  if (before != nullptr) {
    ::setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1);
  } else {
    ::unsetenv("CUDA_VISIBLE_DEVICES");
  }
}

}  // namespace
}  // namespace sweepbench
