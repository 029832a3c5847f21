// What SLURM's answers mean for a point, without SLURM: state mapping, squeue/sacct parsing, and
// the merge of a point's files with its job's state that `bench-sweep status` prints.
#include "launch/slurm.h"

#include <gtest/gtest.h>

#include "launch/status.h"
#include "layout/point_status.h"

namespace sweepbench {
namespace {

TEST(SrunOutput, TheFirstTaskThatEndedBadlyIsTheCause) {
  // As srun printed it when rank 1 crashed in MPI_Init and --kill-on-bad-exit ended the rest.
  std::optional<SrunTaskFailure> f = first_srun_task_failure(
      "bench-train: rank 0: step 1\n"
      "srun: error: n1: task 1: Segmentation fault (core dumped)\n"
      "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
      "srun: error: n2: tasks 0,2-3: Killed\n");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->host, "n1");
  EXPECT_EQ(f->tasks, "task 1");
  EXPECT_EQ(f->what, "Segmentation fault (core dumped)");
  EXPECT_FALSE(f->includes_rank0);

  f = first_srun_task_failure("srun: error: node-7: tasks 0-3: Exited with exit code 22\n");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->tasks, "tasks 0-3");
  EXPECT_EQ(f->what, "Exited with exit code 22");
  EXPECT_TRUE(f->includes_rank0);
  EXPECT_TRUE(first_srun_task_failure("srun: error: n2: tasks 3,0: Killed\n")->includes_rank0);
  EXPECT_FALSE(first_srun_task_failure("srun: error: n2: tasks 10-12: Killed\n")->includes_rank0);

  // srun's other errors are not task endings.
  EXPECT_FALSE(first_srun_task_failure("srun: error: Unable to create step for job 7: Busy\n"
                                       "srun: error: n1: task x: y\n"
                                       "error: n1: task 1: Killed\n")
                   .has_value());
  EXPECT_FALSE(first_srun_task_failure("").has_value());
}

TEST(SlurmStates, MapToPointStatuses) {
  EXPECT_EQ(status_of_slurm_state("PENDING"), PointStatus::kPending);
  EXPECT_EQ(status_of_slurm_state("REQUEUED"), PointStatus::kPending);
  EXPECT_EQ(status_of_slurm_state("RUNNING"), PointStatus::kRunning);
  EXPECT_EQ(status_of_slurm_state("COMPLETING"), PointStatus::kRunning);
  EXPECT_EQ(status_of_slurm_state("TIMEOUT"), PointStatus::kTimeout);
  EXPECT_EQ(status_of_slurm_state("PREEMPTED"), PointStatus::kPreempted);
  EXPECT_EQ(status_of_slurm_state("CANCELLED"), PointStatus::kCancelled);
  EXPECT_EQ(status_of_slurm_state("NODE_FAIL"), PointStatus::kNodeFail);
  EXPECT_EQ(status_of_slurm_state("OUT_OF_MEMORY"), PointStatus::kOom);
  EXPECT_EQ(status_of_slurm_state("FAILED"), PointStatus::kFailed);
  EXPECT_EQ(status_of_slurm_state("COMPLETED"), std::nullopt);  // the files say how it went
  EXPECT_TRUE(is_live_slurm_state("PENDING"));
  EXPECT_TRUE(is_live_slurm_state("COMPLETING"));
  EXPECT_FALSE(is_live_slurm_state("TIMEOUT"));
  EXPECT_FALSE(is_live_slurm_state("COMPLETED"));
}

TEST(SlurmParsing, SqueueAndSacctLines) {
  SlurmJobStates s;
  parse_squeue_lines("12_0|RUNNING|None\n12_1|PENDING|Resources\n\n13|TIMEOUT|\n", &s);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s["12_0"].state, "RUNNING");
  EXPECT_EQ(s["12_0"].reason, "");
  EXPECT_EQ(s["12_1"].reason, "Resources");
  EXPECT_EQ(s["13"].state, "TIMEOUT");
  // sacct: steps (12_0.batch) are left out, "CANCELLED by 0" is CANCELLED, squeue's answer wins.
  parse_sacct_lines("14|CANCELLED by 0\n14.batch|CANCELLED\n12_0|COMPLETED\n", &s);
  EXPECT_EQ(s["14"].state, "CANCELLED");
  EXPECT_EQ(s.count("14.batch"), 0u);
  EXPECT_EQ(s["12_0"].state, "RUNNING");
  // sacct consolidates array tasks that never started ("15_[0-2,5%2]"); each task
  // gets the state (what Slurm 22.05's sacct printed for a held array that was cancelled).
  parse_sacct_lines("15_[0-2,5%2]|CANCELLED by 0\n16_[x]|FAILED\n", &s);
  for (const char* task : {"15_0", "15_1", "15_2", "15_5"}) EXPECT_EQ(s[task].state, "CANCELLED");
  EXPECT_EQ(s.count("15_3"), 0u);
  EXPECT_EQ(s["16_[x]"].state, "FAILED");  // not a list it can read: kept as it is
  EXPECT_EQ(slurm_base_job_id("12_3"), "12");
  EXPECT_EQ(slurm_base_job_id("12"), "12");
}

PointRecord record(PointStatus status, const std::string& job) {
  PointRecord r;
  r.status = status;
  r.slurm_job_id = job;
  r.reason = "why";
  return r;
}

SlurmJobStates states(std::initializer_list<std::pair<const std::string, SlurmJobState>> s) {
  return SlurmJobStates(s);
}

TEST(DecidePointStatus, QueuedTaskWithoutFilesIsPending) {
  PointEvidence e;
  e.submitted_job = "7_1";
  PointView v = decide_point_status(e, states({{"7_1", {"PENDING", "Priority"}}}));
  EXPECT_EQ(v.status, PointStatus::kPending);
  EXPECT_EQ(v.job, "7_1");
  EXPECT_EQ(v.note, "job 7_1 PENDING (Priority)");
  EXPECT_EQ(decide_point_status(e, states({{"7_1", {"RUNNING", ""}}})).status,
            PointStatus::kRunning);
  // Cancelled before it started.
  EXPECT_EQ(decide_point_status(e, states({{"7_1", {"CANCELLED", ""}}})).status,
            PointStatus::kCancelled);
  // SLURM silent: the directory alone.
  v = decide_point_status(e, std::nullopt);
  EXPECT_EQ(v.status, PointStatus::kPending);
  EXPECT_EQ(v.note, "submitted as 7_1");
}

TEST(DecidePointStatus, RunningRecordOfAnEndedJobShowsTheJobsEnd) {
  PointEvidence e;
  e.record = record(PointStatus::kRunning, "9");
  EXPECT_EQ(decide_point_status(e, states({{"9", {"RUNNING", ""}}})).status, PointStatus::kRunning);
  for (auto [state, want] : {std::pair{"TIMEOUT", PointStatus::kTimeout},
                             {"NODE_FAIL", PointStatus::kNodeFail},
                             {"PREEMPTED", PointStatus::kPreempted},
                             {"OUT_OF_MEMORY", PointStatus::kOom},
                             {"COMPLETED", PointStatus::kFailed}}) {
    PointView v = decide_point_status(e, states({{"9", {state, ""}}}));
    EXPECT_EQ(v.status, want) << state;
    EXPECT_NE(v.note.find("before its runner could record"), std::string::npos) << v.note;
  }
}

TEST(DecidePointStatus, RunningRecordOfADeadLocalRunnerIsIncomplete) {
  PointEvidence e;
  e.record = record(PointStatus::kRunning, "");
  e.claim.present = true;
  e.claim.held = true;
  e.claim.holder = ClaimHolder{"host", 42, "", 0, "then"};
  EXPECT_EQ(decide_point_status(e, std::nullopt).status, PointStatus::kRunning);
  // Its runner gone but its processes alive: running (orphaned), not cancelled.
  e.claim.orphaned = true;
  PointView orphan = decide_point_status(e, std::nullopt);
  EXPECT_EQ(orphan.status, PointStatus::kRunning);
  EXPECT_TRUE(orphan.orphaned);
  EXPECT_NE(orphan.note.find("orphaned: its runner host:42"), std::string::npos) << orphan.note;
  e.claim.held = e.claim.orphaned = false;
  e.claim.stale = true;
  PointView v = decide_point_status(e, std::nullopt);
  EXPECT_EQ(v.status, PointStatus::kIncomplete);
  EXPECT_NE(v.note.find("host:42"), std::string::npos) << v.note;
  // Its run had finished: the results are whole and summary.json says how it ended.
  e.ranks.count = 2;
  e.ranks.run_status = "ok";
  v = decide_point_status(e, std::nullopt);
  EXPECT_EQ(v.status, PointStatus::kOk);
  EXPECT_EQ(v.note, "its runner died before recording the point");
  e.ranks.problem = "rank-00001.h5 is missing (world_size 2)";
  EXPECT_EQ(decide_point_status(e, std::nullopt).status, PointStatus::kIncomplete);
}

TEST(DecidePointStatus, OkNeedsItsRankFilesWhole) {
  PointEvidence e;
  e.record = record(PointStatus::kOk, "");
  e.ranks.count = 1;
  EXPECT_EQ(decide_point_status(e, std::nullopt).status, PointStatus::kOk);
  e.ranks.problem = "rank-00000.h5 is cut short (100 of 8192 bytes)";
  PointView v = decide_point_status(e, std::nullopt);
  EXPECT_EQ(v.status, PointStatus::kIncomplete);
  EXPECT_EQ(v.note, e.ranks.problem);
  e.ranks = {};
  v = decide_point_status(e, std::nullopt);
  EXPECT_EQ(v.status, PointStatus::kIncomplete);
  EXPECT_EQ(v.note, "no rank files: they were moved or deleted");
  // A failure stays a failure, whatever its files.
  e.record = record(PointStatus::kOom, "");
  e.ranks.problem = "rank-00000.h5 is cut short (100 of 8192 bytes)";
  EXPECT_EQ(decide_point_status(e, std::nullopt).status, PointStatus::kOom);
}

TEST(DecidePointStatus, ResultsWithoutARecordSayHowTheRunEnded) {
  PointEvidence e;
  EXPECT_EQ(decide_point_status(e, std::nullopt).status, PointStatus::kPending);
  e.ranks.count = 1;
  e.ranks.run_status = "timeout";
  e.ranks.run_reason = "SIGUSR1";
  PointView v = decide_point_status(e, std::nullopt);
  EXPECT_EQ(v.status, PointStatus::kTimeout);
  EXPECT_EQ(v.note, "SIGUSR1");
  e.ranks.run_status.clear();
  EXPECT_EQ(decide_point_status(e, std::nullopt).status, PointStatus::kIncomplete);
}

TEST(DecidePointStatus, RequeuedTaskAfterATimeoutIsPendingAgain) {
  PointEvidence e;
  e.record = record(PointStatus::kTimeout, "5_0");
  e.submitted_job = "5_0";
  PointView v = decide_point_status(e, states({{"5_0", {"PENDING", "BeginTime"}}}));
  EXPECT_EQ(v.status, PointStatus::kPending);
  EXPECT_EQ(v.note, "job 5_0 PENDING (BeginTime); the last attempt ended timeout");
  // Still finishing the run that timed out: the record stands.
  EXPECT_EQ(decide_point_status(e, states({{"5_0", {"COMPLETING", ""}}})).status,
            PointStatus::kTimeout);
  // An ok point stays ok whatever its task does.
  e.record = record(PointStatus::kOk, "5_0");
  e.ranks.count = 1;
  EXPECT_EQ(decide_point_status(e, states({{"5_0", {"PENDING", ""}}})).status, PointStatus::kOk);
}

TEST(DecidePointStatus, CancelledRunnerOfAPreemptedJobIsPreempted) {
  PointEvidence e;
  e.record = record(PointStatus::kCancelled, "8");
  EXPECT_EQ(decide_point_status(e, states({{"8", {"PREEMPTED", ""}}})).status,
            PointStatus::kPreempted);
  EXPECT_EQ(decide_point_status(e, states({{"8", {"CANCELLED", ""}}})).status,
            PointStatus::kCancelled);
  EXPECT_EQ(decide_point_status(e, std::nullopt).status, PointStatus::kCancelled);
}

}  // namespace
}  // namespace sweepbench
