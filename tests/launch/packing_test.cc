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
  LaunchSettings l = Settings::defaults().launch;
  l.ranks = ranks;
  l.cpus_per_rank = cpus_per_rank;
  l.gpus_per_rank = gpus_per_rank;
  return l;
}

TEST(PointNeeds, CpusPerRankWinsElseAnEqualShareOrOneCpuARank) {
  // launch.cpus_per_rank, whatever --jobs says.
  PointNeeds n = point_needs(launch(2, 3), 4, 1, 16, 0);
  EXPECT_EQ(n.cpus_per_rank, 3);
  EXPECT_EQ(n.cpus_per_node, 6);
  // --jobs 4 on 16 CPUs: a quarter each, shared by the point's ranks.
  n = point_needs(launch(2), 4, 1, 16, 0);
  EXPECT_EQ(n.cpus_per_rank, 2);
  EXPECT_EQ(n.cpus_per_node, 4);
  // --jobs 4 on two nodes of 8: the same quarter of the pool.
  EXPECT_EQ(point_needs(launch(2), 4, 2, 8, 0).cpus_per_rank, 2);
  // --jobs auto: one CPU a rank.
  n = point_needs(launch(3), kJobsAuto, 1, 16, 0);
  EXPECT_EQ(n.cpus_per_node, 3);
  // A GPU point under auto: the CPUs of its share of the GPUs.
  n = point_needs(launch(2, std::nullopt, 1), kJobsAuto, 1, 32, 8);
  EXPECT_EQ(n.gpus_per_node, 2);
  EXPECT_EQ(n.cpus_per_rank, 4);
  EXPECT_EQ(n.cpus_per_node, 8);
  // Never more than a node has: such a point takes all of it.
  n = point_needs(launch(4, 8, 2), 2, 1, 16, 4);
  EXPECT_EQ(n.cpus_per_node, 16);
  EXPECT_EQ(n.gpus_per_node, 4);
  // No GPU here: a point's GPUs are not counted (nothing to share out).
  EXPECT_EQ(point_needs(launch(1, std::nullopt, 1), 2, 1, 4, 0).gpus_per_node, 0);
  // Over two nodes: the ranks of one node.
  LaunchSettings two = launch(4, 1);
  two.nodes = 2;
  n = point_needs(two, kJobsAuto, 2, 4, 0);
  EXPECT_EQ(n.nodes, 2);
  EXPECT_EQ(n.cpus_per_node, 2);
  EXPECT_EQ(point_needs(two, kJobsAuto, 1, 4, 0).nodes, 1);  // never more nodes than the pool
}

TEST(PointNeeds, ExclusiveNodeOrSeveralNodesRunAlone) {
  LaunchSettings l = launch(1);
  EXPECT_FALSE(point_needs(l, 2, 1, 4, 0).alone);
  l.exclusive = Exclusive::kNode;
  EXPECT_TRUE(point_needs(l, 2, 1, 4, 0).alone);
  l = launch(4);
  l.nodes = 2;
  EXPECT_TRUE(point_needs(l, 2, 2, 4, 0).alone);  // auto: several nodes
  l.exclusive = Exclusive::kShared;
  EXPECT_FALSE(point_needs(l, 2, 2, 4, 0).alone);
}

PointNeeds needs(int cpus_per_node, int gpus_per_node = 0, bool alone = false, int nodes = 1) {
  PointNeeds n;
  n.nodes = nodes;
  n.cpus_per_node = cpus_per_node;
  n.gpus_per_node = gpus_per_node;
  n.alone = alone;
  return n;
}

TEST(ResourcePool, HandsOutDisjointCpusAndGpusUpToJobs) {
  ResourcePool pool({PoolNode{"here", {0, 1, 2, 3}, {"4", "6"}}}, 3);
  std::optional<Placement> a = pool.take(needs(2, 1));
  ASSERT_TRUE(a);
  EXPECT_THAT(a->cpus, ElementsAre(0, 1));
  EXPECT_THAT(a->gpus, ElementsAre("4"));
  std::optional<Placement> b = pool.take(needs(2, 1));
  ASSERT_TRUE(b);
  EXPECT_THAT(b->cpus, ElementsAre(2, 3));
  EXPECT_THAT(b->gpus, ElementsAre("6"));
  // Nothing left: the next waits.
  EXPECT_FALSE(pool.take(needs(1)));
  pool.give_back(*a);
  std::optional<Placement> c = pool.take(needs(1));
  ASSERT_TRUE(c);
  EXPECT_THAT(c->cpus, ElementsAre(0));
  EXPECT_THAT(c->gpus, IsEmpty());
  // --jobs 3: a fourth point waits even where CPUs are free.
  ASSERT_TRUE(pool.take(needs(1)));
  EXPECT_EQ(pool.running(), 3);
  EXPECT_FALSE(pool.take(needs(0)));
}

TEST(ResourcePool, AnExclusivePointWaitsForAnIdleMachineAndHoldsAllOfIt) {
  ResourcePool pool({PoolNode{"here", {0, 1}, {}}}, kJobsAuto);
  std::optional<Placement> a = pool.take(needs(1));
  ASSERT_TRUE(a);
  EXPECT_FALSE(pool.take(needs(1, 0, true)));
  pool.give_back(*a);
  std::optional<Placement> alone = pool.take(needs(1, 0, true));
  ASSERT_TRUE(alone);
  EXPECT_THAT(alone->cpus, ElementsAre(0, 1));
  EXPECT_FALSE(pool.take(needs(1)));  // nothing beside it
  pool.give_back(*alone);
  EXPECT_TRUE(pool.take(needs(1)));
}

TEST(ResourcePool, WithNothingRunningEveryPointFits) {
  ResourcePool pool({PoolNode{"here", {0, 1}, {"0"}}}, 2);
  std::optional<Placement> big = pool.take(needs(64, 8));
  ASSERT_TRUE(big);
  EXPECT_THAT(big->cpus, ElementsAre(0, 1));
  EXPECT_THAT(big->gpus, ElementsAre("0"));
}

TEST(ResourcePool, NodesOfAnAllocationAreFilledInOrderAndHeldWholeWhenAlone) {
  ResourcePool pool({PoolNode{"n1", {0, 1}, {}}, PoolNode{"n2", {0, 1}, {}}}, kJobsAuto);
  std::optional<Placement> a = pool.take(needs(1));
  std::optional<Placement> b = pool.take(needs(1));
  std::optional<Placement> c = pool.take(needs(1));
  ASSERT_TRUE(a && b && c);
  EXPECT_THAT(a->nodes, ElementsAre("n1"));
  EXPECT_THAT(b->nodes, ElementsAre("n1"));
  EXPECT_THAT(c->nodes, ElementsAre("n2"));
  // A two-node point alone on its nodes waits for both to be idle.
  EXPECT_FALSE(pool.take(needs(1, 0, true, 2)));
  pool.give_back(*a);
  pool.give_back(*b);
  EXPECT_FALSE(pool.take(needs(1, 0, true, 2)));
  // A one-node exclusive point takes the idle n1 whole; nothing else goes there meanwhile.
  std::optional<Placement> alone = pool.take(needs(1, 0, true));
  ASSERT_TRUE(alone);
  EXPECT_THAT(alone->nodes, ElementsAre("n1"));
  std::optional<Placement> d = pool.take(needs(1));
  ASSERT_TRUE(d);
  EXPECT_THAT(d->nodes, ElementsAre("n2"));
  EXPECT_FALSE(pool.take(needs(1)));
  pool.give_back(*alone);
  pool.give_back(*c);
  pool.give_back(*d);
  std::optional<Placement> both = pool.take(needs(1, 0, true, 2));
  ASSERT_TRUE(both);
  EXPECT_THAT(both->nodes, ElementsAre("n1", "n2"));
}

TEST(SlurmCpusPerNode, ExpandsRepeatsAndChecksTheCount) {
  EXPECT_THAT(parse_slurm_cpus_per_node("4(x2),2", 3), ElementsAre(4, 4, 2));
  EXPECT_THAT(parse_slurm_cpus_per_node("2", 1), ElementsAre(2));
  EXPECT_THAT(parse_slurm_cpus_per_node("2(x2)", 3), IsEmpty());
  EXPECT_THAT(parse_slurm_cpus_per_node("two", 1), IsEmpty());
  EXPECT_THAT(parse_slurm_cpus_per_node("", 1), IsEmpty());
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
