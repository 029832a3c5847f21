// How `bench-sweep submit` turns points into job arrays, without SLURM: the sbatch options a
// point asks for, grouping and MaxArraySize chunks, and the script text.
#include "launch/submit.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launch/packing.h"
#include "launch/slurm.h"
#include "support/expect_error.h"
#include "sweep/sweep_test_util.h"
#include "text/error.h"

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
      sbatch_options(plan.points()[0], "sub", "s.yaml"),
      ElementsAre("--job-name=sweepbench-sub", "--partition=gpu", "--nodes=1", "--ntasks=2",
                  "--ntasks-per-node=2", "--gpus-per-task=1", "--exclusive", "--time=1:00:00",
                  "--signal=B:USR1@120", "--requeue", "--open-mode=append", "--gres=gpu:8"));
}

TEST(SbatchOptions, RefuseValuesAnSbatchLineCannotHold) {
  for (const char* bad : {"\"a b\"", "\"$(touch /tmp/x)\"", "\"a\\nb\"", "\"it's\""}) {
    Plan plan = plan_text("name: s\nbase:\n  slurm: {account: " + std::string(bad) + "}\n");
    Error e = testing::error_of([&] { sbatch_options(plan.points()[0], "s", "s.yaml"); });
    EXPECT_EQ(e.kind(), ErrorKind::kInput) << bad;
    EXPECT_EQ(e.key(), "slurm.account") << bad;
    EXPECT_THAT(e.message(), HasSubstr("#SBATCH line")) << bad;
  }
  Plan plan = plan_text("name: s\nbase:\n  slurm: {extra_args: [gres=gpu:8]}\n");
  Error e = testing::error_of([&] { sbatch_options(plan.points()[0], "s", "s.yaml"); });
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
  EXPECT_THAT(script, HasSubstr("  '" + plan.points()[0].tag + "'  # index 0\n"));
  EXPECT_THAT(script, HasSubstr("exec /bin/bench-sweep run /x/s.yaml --out /o --set "
                                "'launch.env={A: \"$(touch /tmp/p); `x`\"}' --only "
                                "\"${points[$SLURM_ARRAY_TASK_ID]}\"\n"));
  // sbatch expands %j, %x... in --output; a '%' of the directory stays literal.
  script = array_script(arrays[0], {"/bin/bench-sweep"}, 0, "/x/o%j%%/submit/logs", "");
  EXPECT_THAT(script, HasSubstr("#SBATCH --output=/x/o%%j%%%%/submit/logs/%A_%a.out\n"));
}

TEST(Packing, TasksRunSeveralPointsWithJobsAndAskForWhatTheyRunAtOnce) {
  // Shared nodes (slurm.exclusive: false): a task of 3 points, 2 at once, asks for two points'
  // tasks and a time of two rounds.
  Plan plan = plan_text(
      "name: sub\nbase:\n  slurm: {exclusive: false, time: 10}\n  launch: {cpus_per_rank: 2}\n"
      "axes:\n  params.i: [1, 2, 3, 4, 5, 6, 7]\n");
  std::vector<ArrayJob> arrays = group_into_arrays(all(plan), "sub", "s.yaml", 1001, 3);
  ASSERT_EQ(arrays.size(), 1u);
  ArrayJob& a = arrays[0];
  EXPECT_EQ(a.tasks(), 3u);
  pack_array(&a, 3, 2, 600);
  EXPECT_THAT(a.options, ::testing::Contains("--ntasks=2"));
  EXPECT_THAT(a.options, ::testing::Contains("--ntasks-per-node=2"));
  EXPECT_THAT(a.options, ::testing::Contains("--cpus-per-task=2"));
  EXPECT_THAT(a.options, ::testing::Contains("--time=00:20:00"));
  EXPECT_THAT(a.run_options, ElementsAre("--jobs", "2"));
  std::string script = array_script(a, {"/bin/bench-sweep", "run"}, 0, "/o/logs", "");
  EXPECT_THAT(script, HasSubstr("#SBATCH --array=0-2\n"));
  EXPECT_THAT(script, HasSubstr("'" + plan.points()[0].tag + "," + plan.points()[1].tag + "," +
                                plan.points()[2].tag + "'  # indexes 0,1,2\n"));
  EXPECT_THAT(script, HasSubstr("'" + plan.points()[6].tag + "'  # index 6\n"));
  EXPECT_THAT(script, HasSubstr("exec /bin/bench-sweep run --jobs 2 --only "));

  // Whole nodes (the default slurm.exclusive): the same options, --jobs auto fills the nodes.
  plan = plan_text("name: sub\naxes:\n  params.i: [1, 2, 3]\n");
  arrays = group_into_arrays(all(plan), "sub", "s.yaml", 1001, 3);
  std::vector<std::string> before = arrays[0].options;
  pack_array(&arrays[0], 3, kJobsAuto, std::nullopt);
  EXPECT_EQ(arrays[0].options, before);
  EXPECT_THAT(arrays[0].run_options, ElementsAre("--jobs", "auto"));

  // Points over two nodes run one at a time.
  plan = plan_text(
      "name: sub\nbase:\n  launch: {nodes: 2, ranks: 2}\n  slurm: {exclusive: "
      "false}\naxes:\n  params.i: [1, 2]\n");
  arrays = group_into_arrays(all(plan), "sub", "s.yaml", 1001, 2);
  pack_array(&arrays[0], 2, 4, 60);
  EXPECT_THAT(arrays[0].options, ::testing::Contains("--ntasks=2"));
  EXPECT_THAT(arrays[0].options, ::testing::Contains("--time=00:02:00"));
  EXPECT_THAT(arrays[0].run_options, ElementsAre("--jobs", "1"));
}

// Issue 51: --points-per-job 1000000 for 5 points asked for the time of a million points
// (--time=41666-16:00:00). A task holds the job's points at most.
TEST(Packing, ATaskAsksForTheTimeOfThePointsItHoldsAtMost) {
  Plan plan = plan_text("name: sub\naxes:\n  params.i: [1, 2, 3, 4, 5]\n");
  std::vector<ArrayJob> arrays = group_into_arrays(all(plan), "sub", "s.yaml", 1001, 1000000);
  ASSERT_EQ(arrays.size(), 1u);
  EXPECT_EQ(arrays[0].tasks(), 1u);
  pack_array(&arrays[0], 1000000, 1, 60);
  EXPECT_THAT(arrays[0].options, ::testing::Contains("--time=00:05:00"));
  EXPECT_EQ(arrays[0].per_task, 5u);
}

TEST(Packing, MaxArraySizeCountsTasksNotPoints) {
  Plan plan = plan_text("name: sub\naxes:\n  params.i: [1, 2, 3, 4, 5, 6, 7]\n");
  std::vector<ArrayJob> arrays = group_into_arrays(all(plan), "sub", "s.yaml", 2, 2);
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].points.size(), 4u);
  EXPECT_EQ(arrays[0].tasks(), 2u);
  EXPECT_EQ(arrays[1].points.size(), 3u);
  EXPECT_EQ(arrays[1].tasks(), 2u);
}

TEST(Packing, AutoFillsHalfTheLimitAtTheMeasuredTime) {
  // 0.4 s a point, one at a time, half of an hour: 4,500 points, capped by the group.
  EXPECT_EQ(auto_points_per_job(0.4, 3600, 1, 1000), 1000u);
  EXPECT_EQ(auto_points_per_job(60, 3600, 1, 1000), 30u);
  EXPECT_EQ(auto_points_per_job(60, 3600, 4, 1000), 120u);
  EXPECT_EQ(auto_points_per_job(7200, 3600, 1, 1000), 1u);  // longer than the limit: alone
}

TEST(SlurmTime, ParsesEveryFormAndWritesDaysHoursMinutes) {
  EXPECT_EQ(slurm_time_seconds("90"), 5400);
  EXPECT_EQ(slurm_time_seconds("10:30"), 630);
  EXPECT_EQ(slurm_time_seconds("1:00:00"), 3600);
  EXPECT_EQ(slurm_time_seconds("2-3"), 2 * 86400 + 3 * 3600);
  EXPECT_EQ(slurm_time_seconds("2-3:04"), 2 * 86400 + 3 * 3600 + 240);
  EXPECT_EQ(slurm_time_seconds("1-00:00:05"), 86405);
  EXPECT_EQ(slurm_time_seconds("UNLIMITED"), std::nullopt);
  EXPECT_EQ(slurm_time_seconds("1:2:3:4"), std::nullopt);
  EXPECT_EQ(slurm_time_seconds("x"), std::nullopt);
  EXPECT_EQ(slurm_time_text(61), "00:02:00");
  EXPECT_EQ(slurm_time_text(86400 + 3600), "1-01:00:00");
}

// The job after the arrays that records the sweep in the history store: its whole text, every
// value quoted once on the exec line, the log directory's % doubled.
TEST(HistoryJob, ScriptIsExactAndQuotesHostileValuesOnce) {
  HistoryHook hook = history_hook_of("/data/my store.sqlite", {"note=it's $(id)", "commit=abc"});
  std::vector<std::string> argv = history_ingest_argv("", "/runs/x", hook);
  EXPECT_THAT(argv,
              ElementsAre("bench-history", "ingest", "/runs/x", "--store", "/data/my store.sqlite",
                          "--label", "commit=abc", "--label", "note=it's $(id)"));
  EXPECT_EQ(
      history_job_script(argv, {"12", "13"}, {"--partition=gpu"}, "/runs/x%y/logs", "# header\n"),
      "#!/bin/bash\n# header\n#SBATCH --partition=gpu\n#SBATCH --ntasks=1\n"
      "#SBATCH --time=30:00\n#SBATCH --dependency=afterany:12:13\n"
      "#SBATCH --output=/runs/x%%y/logs/%j-history.out\nset -eu\n"
      "exec bench-history ingest /runs/x --store '/data/my store.sqlite' --label "
      "'commit=abc' --label 'note=it'\\''s $(id)'\n");
}

TEST(HistoryJob, BadStoresAndLabelsAreRefusedBeforeAnythingIsSubmitted) {
  EXPECT_THROW(history_hook_of("a\nb", {}), Error);
  EXPECT_THROW(history_hook_of("s.sqlite", {"no-equals"}), Error);
  EXPECT_THROW(history_hook_of("s.sqlite", {"a b=1"}), Error);
  EXPECT_THROW(history_hook_of("s.sqlite", {"x=line\nbreak"}), Error);
  EXPECT_THROW(history_hook_of("", {"commit=abc"}), Error);  // a label without a store
  EXPECT_FALSE(history_hook_of("", {}).wanted());
  // A relative path is made absolute: the history job runs in another directory.
  EXPECT_EQ(history_hook_of("h.sqlite", {}).store.front(), '/');
  EXPECT_EQ(history_hook_of("sqlite:h.sqlite", {}).store, "sqlite:h.sqlite");
}

}  // namespace
}  // namespace sweepbench
