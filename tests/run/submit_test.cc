// How `bench-sweep submit` turns points into job arrays, without SLURM: the sbatch options a
// point asks for, grouping and MaxArraySize chunks, and the script text.
#include "launch/submit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "support/expect_error.h"
#include "sweep/sweep_test_util.h"

namespace sweepbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::plan_text;

const char* const kBase = R"(name: sub
base:
  model: {preset: gpt2-tiny}
  slurm: {partition: gpu, time: "1:00:00", extra_args: [--gres=gpu:8]}
)";

std::vector<const SweepPoint*> all(const Plan& plan) { return plan.selected_points(); }

TEST(SbatchOptions, FollowTheConfig) {
  Plan plan =
      plan_text(std::string(kBase) + "axes:\n  launch.ranks: [2]\n  launch.gpus_per_rank: [1]\n");
  EXPECT_THAT(
      sbatch_options(plan.points[0], "sub", "s.yaml"),
      ElementsAre("--job-name=sweepbench-sub", "--partition=gpu", "--nodes=1", "--ntasks=2",
                  "--ntasks-per-node=2", "--gpus-per-task=1", "--exclusive", "--time=1:00:00",
                  "--signal=B:USR1@120", "--requeue", "--open-mode=append", "--gres=gpu:8"));
}

TEST(SbatchOptions, RefuseValuesAnSbatchLineCannotHold) {
  for (const char* bad : {"\"a b\"", "\"$(touch /tmp/x)\"", "\"a\\nb\"", "\"it's\""}) {
    Plan plan = plan_text("name: s\nbase:\n  slurm: {account: " + std::string(bad) + "}\n");
    Error e = testing::error_of([&] { sbatch_options(plan.points[0], "s", "s.yaml"); });
    EXPECT_EQ(e.kind(), ErrorKind::kInput) << bad;
    EXPECT_EQ(e.key(), "slurm.account") << bad;
    EXPECT_THAT(e.message(), HasSubstr("#SBATCH line")) << bad;
  }
  Plan plan = plan_text("name: s\nbase:\n  slurm: {extra_args: [gres=gpu:8]}\n");
  Error e = testing::error_of([&] { sbatch_options(plan.points[0], "s", "s.yaml"); });
  EXPECT_THAT(e.message(), HasSubstr("not an sbatch option"));
}

TEST(GroupIntoArrays, OneArrayPerSetOfResourcesCutToMaxArraySize) {
  Plan plan = plan_text(std::string(kBase) +
                        "axes:\n  launch.ranks: [1, 2]\n  train.micro_batch: [1, 2, 4]\n");
  std::vector<ArrayJob> arrays = group_into_arrays(all(plan), "sub", "s.yaml", 1001);
  ASSERT_EQ(arrays.size(), 2u);
  for (const ArrayJob& a : arrays) {
    ASSERT_EQ(a.points.size(), 3u);
    std::int64_t ranks = a.points[0]->config.find_path("launch.ranks")->as_int();
    for (const SweepPoint* p : a.points) {
      EXPECT_EQ(p->config.find_path("launch.ranks")->as_int(), ranks);
    }
  }
  arrays = group_into_arrays(all(plan), "sub", "s.yaml", 2);
  ASSERT_EQ(arrays.size(), 4u);
  EXPECT_EQ(arrays[0].points.size(), 2u);
  EXPECT_EQ(arrays[1].points.size(), 1u);
  EXPECT_EQ(arrays[0].options, arrays[1].options);
}

TEST(ArrayScript, QuotesTheCommandOnceAndMapsTasksToTags) {
  Plan plan = plan_text(std::string(kBase) + "axes:\n  train.micro_batch: [1, 2]\n");
  std::vector<ArrayJob> arrays = group_into_arrays(all(plan), "sub", "s.yaml", 1001);
  ASSERT_EQ(arrays.size(), 1u);
  std::string script = array_script(arrays[0],
                                    {"/bin/bench-sweep", "run", "/x/s.yaml", "--out", "/o", "--set",
                                     "launch.env={A: \"$(touch /tmp/p); `x`\"}"},
                                    3, "/o/submit/logs", "# header\n");
  EXPECT_THAT(script, HasSubstr("#!/bin/bash\n# header\n#SBATCH --job-name=sweepbench-sub\n"));
  EXPECT_THAT(script, HasSubstr("#SBATCH --array=0-1%3\n"));
  EXPECT_THAT(script, HasSubstr("#SBATCH --output=/o/submit/logs/%A_%a.out\n"));
  EXPECT_THAT(script, HasSubstr("  '" + plan.points[0].tag + "'  # index 0\n"));
  EXPECT_THAT(script, HasSubstr("exec /bin/bench-sweep run /x/s.yaml --out /o --set "
                                "'launch.env={A: \"$(touch /tmp/p); `x`\"}' --only "
                                "\"${points[$SLURM_ARRAY_TASK_ID]}\"\n"));
  // Issue 14, W7: sbatch expands %j, %x... in --output; a '%' of the directory stays literal.
  script = array_script(arrays[0], {"/bin/bench-sweep"}, 0, "/x/o%j%%/submit/logs", "");
  EXPECT_THAT(script, HasSubstr("#SBATCH --output=/x/o%%j%%%%/submit/logs/%A_%a.out\n"));
}

}  // namespace
}  // namespace sweepbench
