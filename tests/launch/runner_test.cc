// The runner's rules, without running anything: what reruns, what pruning skips, how exits map
// to statuses, claims and attempts on disk.
#include "launch/runner.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "config/yaml_io.h"
#include "layout/claim.h"
#include "layout/point_record.h"
#include "support/temp_dir.h"
#include "sweep/sweep_spec.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

PointRecord record(PointStatus s, const std::string& hash = "h") {
  PointRecord r;
  r.status = s;
  r.config_hash = hash;
  return r;
}

TEST(Decide, OkPointsAreKeptUnlessForcedOrChanged) {
  EXPECT_EQ(decide(std::nullopt, "h", false, false), Decision::kRun);
  EXPECT_EQ(decide(record(PointStatus::kOk), "h", false, false), Decision::kKeepOk);
  EXPECT_EQ(decide(record(PointStatus::kOk), "h", false, true), Decision::kKeepOk);
  EXPECT_EQ(decide(record(PointStatus::kOk), "h", true, false), Decision::kRun);
  EXPECT_EQ(decide(record(PointStatus::kOk, "other"), "h", false, false), Decision::kRun);
}

TEST(Decide, FailuresRerunOnlyWhenAskedInterruptionsAlways) {
  for (PointStatus s : {PointStatus::kFailed, PointStatus::kOom}) {
    EXPECT_EQ(decide(record(s), "h", false, false), Decision::kKeepFailure) << to_string(s);
    EXPECT_EQ(decide(record(s), "h", false, true), Decision::kRun) << to_string(s);
  }
  for (PointStatus s : {PointStatus::kPending, PointStatus::kRunning, PointStatus::kTimeout,
                        PointStatus::kCancelled, PointStatus::kPreempted, PointStatus::kNodeFail,
                        PointStatus::kSkipped}) {
    EXPECT_EQ(decide(record(s), "h", false, false), Decision::kRun) << to_string(s);
  }
}

TEST(StatusFromExit, FollowsBenchTrainsExitCodes) {
  std::unique_ptr<Workload> train = workloads().make("train");
  EXPECT_EQ(status_from_exit(*train, 0, 0), PointStatus::kOk);
  EXPECT_EQ(status_from_exit(*train, 20, 0), PointStatus::kOom);
  EXPECT_EQ(status_from_exit(*train, 21, 0), PointStatus::kTimeout);
  EXPECT_EQ(status_from_exit(*train, 23, 0), PointStatus::kCancelled);
  EXPECT_EQ(status_from_exit(*train, 22, 0), PointStatus::kFailed);
  EXPECT_EQ(status_from_exit(*train, 2, 0), PointStatus::kFailed);
  EXPECT_EQ(status_from_exit(*train, 127, 0), PointStatus::kFailed);
  EXPECT_EQ(status_from_exit(*train, -1, 9), PointStatus::kFailed);
}

Plan plan_of(const std::string& yaml) {
  testing::TempDir dir;
  return plan_sweep(load_sweep_file(dir.write("s.yaml", yaml)), PlanOptions{});
}

const SweepPoint& with(const Plan& plan, std::int64_t micro_batch, std::int64_t seq_len) {
  for (const SweepPoint& p : plan.points()) {
    if (config_at(p.config, "train.micro_batch").as_int() == micro_batch &&
        config_at(p.config, "data.seq_len").as_int() == seq_len) {
      return p;
    }
  }
  throw std::logic_error("no such point");
}

TEST(Prune, LargerValuesOfAPruneKeyAreSkippedOthersAreNot) {
  Plan plan = plan_of(R"(name: prune
base: {model: {preset: gpt2-tiny}}
axes:
  train.micro_batch: [2, 4, 8]
  data.seq_len: [32, 64]
  train.lr: [0.001, 0.002]
)");
  std::vector<std::string> keys = {"train.micro_batch", "data.seq_len"};
  const SweepPoint* oom = nullptr;
  for (const SweepPoint& p : plan.points()) {
    if (config_at(p.config, "train.micro_batch").as_int() == 4 &&
        config_at(p.config, "data.seq_len").as_int() == 32 &&
        config_at(p.config, "train.lr").as_float() == 0.001) {
      oom = &p;
    }
  }
  ASSERT_NE(oom, nullptr);
  size_t pruned = 0;
  for (const SweepPoint& p : plan.points()) {
    std::optional<std::string> why = prune_reason(p, *oom, keys);
    if (!why) continue;
    ++pruned;
    EXPECT_EQ(config_at(p.config, "train.lr").as_float(), 0.001) << p.tag;
    EXPECT_THAT(*why, HasSubstr(oom->tag));
  }
  // micro batch 8 at seq 32 (larger micro batch), micro batch 4 at seq 64 (larger seq_len); not
  // micro batch 8 at seq 64 (differs in two keys), nor anything smaller, nor the other lr.
  EXPECT_EQ(pruned, 2u);
  const SweepPoint& bigger = with(plan, 8, 32);  // the first in order: lr 0.001
  ASSERT_EQ(config_at(bigger.config, "train.lr").as_float(), 0.001);
  EXPECT_TRUE(prune_reason(bigger, *oom, keys).has_value());
  EXPECT_FALSE(prune_reason(*oom, *oom, keys).has_value());
  EXPECT_TRUE(prune_reason(with(plan, 2, 32), *oom, keys) == std::nullopt);
  // Only the keys listed prune.
  EXPECT_EQ(prune_reason(bigger, *oom, {"data.seq_len"}), std::nullopt);
}

TEST(PointsToRun, OnlyTakesIndicesAndTagsInPlanOrder) {
  Plan plan = plan_of(
      "name: only\nbase: {model: {preset: gpt2-tiny}}\n"
      "axes: {train.micro_batch: [1, 2, 3, 4]}\n");
  std::vector<const SweepPoint*> got = points_to_run(plan, {plan.points()[3].tag, "1"});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]->index, 1u);
  EXPECT_EQ(got[1]->index, 3u);
  EXPECT_EQ(points_to_run(plan, {}).size(), 4u);
  EXPECT_THROW(points_to_run(plan, {"9"}), Error);
  EXPECT_THROW(points_to_run(plan, {"no-such-tag"}), Error);
}

TEST(PointState, RecordsRoundTripThroughStatusJson) {
  testing::TempDir dir;
  PointRecord r = record(PointStatus::kTimeout, "abc");
  r.reason = "received SIGUSR1";
  r.attempt = 2;
  r.command = {"srun", "--mpi=pmix", "bench-train"};
  r.slurm_job_id = "12_3";
  write_point_record(dir.path(), r);
  std::optional<PointRecord> back = read_point_record(dir.path());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->status, PointStatus::kTimeout);
  EXPECT_EQ(back->reason, r.reason);
  EXPECT_EQ(back->attempt, 2);
  EXPECT_EQ(back->command, r.command);
  EXPECT_EQ(back->slurm_job_id, "12_3");
  EXPECT_FALSE(read_point_record(dir.file("nothing-here")).has_value());
}

TEST(PointState, AClaimIsExclusiveAndADeadHoldersClaimIsTakenOver) {
  testing::TempDir dir;
  {
    std::optional<PointClaim> first = PointClaim::acquire(dir.path(), nullptr);
    ASSERT_TRUE(first.has_value());
    ClaimState busy;
    EXPECT_FALSE(PointClaim::acquire(dir.path(), &busy).has_value());
    EXPECT_TRUE(busy.held);
    EXPECT_FALSE(busy.orphaned);  // its runner (this process) lives
    EXPECT_EQ(busy.holder.pid, ::getpid());
    EXPECT_EQ(busy.holder.host, this_host());
  }
  EXPECT_FALSE(PointClaim::inspect(dir.path()).present) << "released when destroyed";

  // A claim by a process that has exited (its lock went with it): start one, wait for it, write
  // its pid into a claim.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::ofstream(dir.file(".claim"))
      << "{\"host\": \"" << this_host() << "\", \"pid\": " << child << "}\n";
  EXPECT_TRUE(PointClaim::inspect(dir.path()).stale);
  EXPECT_TRUE(PointClaim::acquire(dir.path(), nullptr).has_value());

  // A claim from another host whose lock is free is never taken over from here: its file
  // system may not share locks.
  std::ofstream(dir.file(".claim")) << "{\"host\": \"elsewhere\", \"pid\": 1}\n";
  ClaimState busy;
  EXPECT_FALSE(PointClaim::acquire(dir.path(), &busy).has_value());
  EXPECT_EQ(busy.holder.host, "elsewhere");
  EXPECT_FALSE(busy.held);
  fs::remove(dir.file(".claim"));
}

// The lock lives as long as any process that inherited it, so the processes of a
// killed runner keep the point claimed; and its runner being gone makes it orphaned, not free.
TEST(PointState, AnOrphansInheritedLockKeepsThePointClaimed) {
  testing::TempDir dir;
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  pid_t runner = ::fork();
  if (runner == 0) {
    // The "runner": claims, starts a "point" that inherits the lock, then dies at once.
    std::optional<PointClaim> claim = PointClaim::acquire(dir.path(), nullptr);
    if (!claim) ::_exit(1);
    if (::fork() == 0) {
      ::fcntl(claim->fd(), F_SETFD, 0);
      char c = 0;
      ssize_t n = ::write(ready[1], "x", 1);
      n = ::read(release[0], &c, 1);  // the point runs until the test lets it go
      (void)n;
      ::_exit(0);
    }
    ::_exit(0);  // without releasing: as if SIGKILLed
  }
  int status = 0;
  ::waitpid(runner, &status, 0);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ClaimState orphan = PointClaim::inspect(dir.path());
  EXPECT_TRUE(orphan.held);
  EXPECT_TRUE(orphan.orphaned);
  EXPECT_FALSE(orphan.stale);
  EXPECT_THAT(orphan.describe(dir.path()), HasSubstr("orphaned: its runner"));
  ClaimState busy;
  EXPECT_FALSE(PointClaim::acquire(dir.path(), &busy).has_value()) << "never a second copy";
  EXPECT_TRUE(busy.orphaned);
  // The point ends: the claim is free and stale, and the next runner takes it.
  ASSERT_EQ(::write(release[1], "x", 1), 1);
  for (int i = 0; i < 200 && PointClaim::inspect(dir.path()).held; ++i) ::usleep(10'000);
  EXPECT_TRUE(PointClaim::inspect(dir.path()).stale);
  EXPECT_TRUE(PointClaim::acquire(dir.path(), nullptr).has_value());
  for (int fd : {ready[0], ready[1], release[0], release[1]}) ::close(fd);
}

// W9: an empty or garbage claim was "claimed by :0" forever. A free one older than a few
// seconds is stale; a young one is being written; a held one says how to release it.
TEST(PointState, AnUnreadableClaimIsStaleOnceItIsOld) {
  testing::TempDir dir;
  for (const char* text : {"", "garbage {{{", "{\"pid\": 3}"}) {
    std::string path = dir.write(".claim", text);
    ClaimState young = PointClaim::inspect(dir.path());
    EXPECT_TRUE(young.present);
    EXPECT_FALSE(young.holder.readable) << text;
    EXPECT_FALSE(young.stale) << "it may be being written";
    EXPECT_THAT(young.describe(dir.path()), HasSubstr("if no bench-sweep or bench-train runs"));
    auto old = fs::file_time_type::clock::now() - std::chrono::seconds(60);
    fs::last_write_time(path, old);
    EXPECT_TRUE(PointClaim::inspect(dir.path()).stale) << text;
    std::optional<PointClaim> claim = PointClaim::acquire(dir.path(), nullptr);
    EXPECT_TRUE(claim.has_value()) << text;
  }
}

TEST(PointState, AnEarlierAttemptMovesAsideAndNothingIsLost) {
  testing::TempDir dir;
  dir.write("config.yaml", "c");
  dir.write("rank-00000.h5", "first");
  dir.write("status.json", "{}");
  fs::create_directories(dir.file("logs"));
  dir.write("logs/stderr.txt", "why");
  EXPECT_EQ(archive_previous_attempt(dir.path()), 1);
  EXPECT_TRUE(fs::exists(dir.file("config.yaml")));
  EXPECT_FALSE(fs::exists(dir.file("rank-00000.h5")));
  EXPECT_EQ(testing::read_text(dir.file("attempts/1/rank-00000.h5")), "first");
  EXPECT_EQ(testing::read_text(dir.file("attempts/1/logs/stderr.txt")), "why");
  EXPECT_EQ(archive_previous_attempt(dir.path()), 0) << "nothing left to move";
  dir.write("rank-00000.h5", "second");
  EXPECT_EQ(archive_previous_attempt(dir.path()), 2);
  EXPECT_EQ(testing::read_text(dir.file("attempts/2/rank-00000.h5")), "second");
  EXPECT_EQ(testing::read_text(dir.file("attempts/1/rank-00000.h5")), "first");
}

}  // namespace
}  // namespace sweepbench
