// The run loop's decisions through its process seam (RunOptions::processes): which points start
// when, on which CPUs, and what a point's end records. A stand-in plays the processes (no program
// runs); everything else is the runner's own: claims, status.json, the manifest, pruning.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "launch/runner.h"
#include "layout/point_record.h"
#include "support/temp_dir.h"
#include "sweep/plan_output.h"
#include "sweep/sweep_spec.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;

// A rank file as the layout checks it without HDF5 (layout/point_status.h): a version-2
// superblock whose end-of-file address is the file's size. Only the runner reads it here (no
// program runs), and a file that is not one makes an ok point incomplete, run again.
std::string sound_rank_file() {
  std::string b("\x89HDF\r\n\x1a\n", 8);
  b += '\x02';  // superblock version
  b += '\x08';  // size of offsets
  b += '\x08';  // size of lengths
  b += '\x00';  // flags
  auto address = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) b += static_cast<char>((v >> (8 * i)) & 0xff);
  };
  address(0);                  // base address
  address(~std::uint64_t{0});  // no superblock extension
  address(48);                 // end of file
  address(0);                  // root group
  b += std::string(4, '\0');   // checksum (not checked)
  return b;
}

// Processes that end in the order they started, each with the exit code its point is given
// (by the value of params.i in its tag), writing its rank file first when it exits 0 (unless
// told not to). Records what each start asked for and how many ran at once.
class StandIn : public ProcessRunner {
 public:
  struct Started {
    std::string tag;
    std::vector<int> cpus;
    std::map<std::string, std::string> env;
  };
  std::map<std::string, int> exit_code;  // "i=2" -> 20
  std::set<std::string> no_results;      // "i=1": exits 0 without its rank file
  std::vector<Started> started;
  size_t most_at_once = 0;

  std::vector<int> usable_cpus() override { return {0, 1, 2, 3}; }
  std::vector<std::string> visible_gpus() override { return {}; }
  int start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string&, const std::string&, int, const std::vector<int>& cpus) override {
    Started s{env.at("SWEEPBENCH_POINT"), cpus, env};
    auto out = std::find(argv.begin(), argv.end(), "--out");
    dirs_[next_pid_] = out != argv.end() && out + 1 != argv.end() ? *(out + 1) : "";
    started.push_back(s);
    running_.push_back(next_pid_);
    most_at_once = std::max(most_at_once, running_.size());
    return next_pid_++;
  }
  std::optional<Ended> wait_for_any(const std::vector<int>& pids, double) override {
    for (int pid : running_) {
      if (std::find(pids.begin(), pids.end(), pid) == pids.end()) continue;
      running_.erase(std::find(running_.begin(), running_.end(), pid));
      const std::string& tag = started[static_cast<size_t>(pid - kFirstPid)].tag;
      const std::string key = tag.substr(0, tag.find('.'));
      Ended e;
      e.pid = pid;
      e.result.exit_code = exit_code.count(key) ? exit_code.at(key) : 0;
      if (e.result.exit_code == 0 && !no_results.count(key)) {
        std::ofstream(fs::path(dirs_[pid]) / "rank-00000.h5", std::ios::binary)
            << sound_rank_file();
      }
      return e;
    }
    return std::nullopt;
  }
  std::vector<std::string> end_leftovers(double, const LeftoverScope&) override { return {}; }

 private:
  static constexpr int kFirstPid = 100000;
  int next_pid_ = kFirstPid;
  std::vector<int> running_;
  std::map<int, std::string> dirs_;
};

struct Sweep {
  testing::TempDir dir;
  Plan plan;
  std::string out;
  explicit Sweep(const std::string& extra = "") {
    plan = plan_sweep(load_sweep_file(dir.write("s.yaml",
                                                "name: loop\n"
                                                "base:\n"
                                                "  benchmark: command\n"
                                                "  command: {argv: [/bin/true]}\n" +
                                                    extra +
                                                    "axes:\n"
                                                    "  params.i: [1, 2, 3, 4]\n")),
                      PlanOptions{});
    out = dir.path() + "/out";
    write_plan(plan, out);
  }
  RunReport run(StandIn& processes, int jobs, std::vector<std::string> prune = {},
                bool retry_failed = false) {
    RunOptions o;
    o.out_dir = out;
    o.jobs = jobs;
    o.processes = &processes;
    o.prune_after_oom = std::move(prune);
    o.retry_failed = retry_failed;
    o.programs["bench-command"] = "/bin/true";
    LaunchSite site;
    site.cpus_on_node = 4;
    std::ostringstream said;
    return run_sweep(plan, o, site, said);
  }
  std::string dir_of(int i) const {
    for (const SweepPoint& p : plan.points()) {
      if (p.tag.rfind("i=" + std::to_string(i) + ".", 0) == 0) return out + "/" + p.tag;
    }
    throw std::logic_error("no such point");
  }
  PointRecord record(int i) const { return read_point_record(dir_of(i)).value(); }
};

TEST(RunLoop, JobsTwoRunsTwoPointsAtOnceEachOnCpusOfItsOwn) {
  Sweep s;
  StandIn processes;
  RunReport report = s.run(processes, 2);
  EXPECT_TRUE(report.all_ok());
  ASSERT_EQ(processes.started.size(), 4u);
  EXPECT_EQ(processes.most_at_once, 2u);
  // Four CPUs, two points at once: two each, the first two apart, and threads to match.
  EXPECT_EQ(processes.started[0].cpus.size(), 2u);
  EXPECT_EQ(processes.started[1].cpus.size(), 2u);
  for (int c : processes.started[0].cpus) {
    EXPECT_THAT(processes.started[1].cpus, ::testing::Not(Contains(c)));
  }
  EXPECT_EQ(processes.started[0].env.at("SWEEPBENCH_CPUS_PER_RANK"), "2");
  // What ran beside what is recorded.
  ASSERT_TRUE(s.record(1).beside.has_value());
  EXPECT_THAT(*s.record(1).beside, Contains(processes.started[1].tag));
  EXPECT_EQ(s.record(1).cpus, "0-1");
}

TEST(RunLoop, JobsOneRunsOneAtATimeOnTheWholeMachine) {
  Sweep s;
  StandIn processes;
  EXPECT_TRUE(s.run(processes, 1).all_ok());
  EXPECT_EQ(processes.most_at_once, 1u);
  EXPECT_TRUE(processes.started[0].cpus.empty());  // no affinity set
  EXPECT_EQ(processes.started[0].env.count("SWEEPBENCH_CPUS_PER_RANK"), 0u);
}

TEST(RunLoop, AnOutOfMemoryPointPrunesTheLargerPointsStillQueued) {
  Sweep s;
  StandIn processes;
  processes.exit_code["i=2"] = 20;  // bench-train's and bench-command's out-of-memory code
  s.run(processes, 1, {"params.i"});
  ASSERT_EQ(processes.started.size(), 2u);  // i=3 and i=4 never start
  EXPECT_EQ(s.record(2).status, PointStatus::kOom);
  EXPECT_EQ(s.record(3).status, PointStatus::kSkipped);
  EXPECT_EQ(s.record(4).status, PointStatus::kSkipped);
  EXPECT_THAT(s.record(4).reason, HasSubstr("params.i"));
}

TEST(RunLoop, ExitZeroWithoutResultsIsAFailureAndOkPointsAreKeptOnTheNextRun) {
  Sweep s;
  StandIn first;
  first.no_results.insert("i=1");
  EXPECT_FALSE(s.run(first, 2).all_ok());
  EXPECT_EQ(s.record(1).status, PointStatus::kFailed);
  EXPECT_THAT(s.record(1).reason, HasSubstr("exited 0 without results: no rank-00000.h5"));
  // Again: the three ok points are kept, the failure too unless asked; nothing starts.
  StandIn second;
  s.run(second, 2);
  EXPECT_TRUE(second.started.empty());
  EXPECT_EQ(s.record(2).status, PointStatus::kOk);
}

// Issue 51 case 7: an ok point whose rank file was deleted or cut was kept ("kept: ok", exit 0)
// while status and bench-extract called it incomplete. It is kept only when its results read
// back; otherwise it runs again, its leftovers moved to attempts/.
TEST(RunLoop, AnOkPointWhoseRankFileIsGoneOrCutRunsAgain) {
  Sweep s;
  StandIn first;
  ASSERT_TRUE(s.run(first, 1).all_ok());
  fs::remove(s.dir_of(1) + "/rank-00000.h5");
  fs::resize_file(s.dir_of(2) + "/rank-00000.h5", 20);
  StandIn second;
  EXPECT_TRUE(s.run(second, 1).all_ok());
  ASSERT_EQ(second.started.size(), 2u);
  EXPECT_EQ(second.started[0].tag.substr(0, 4), "i=1.");
  EXPECT_EQ(second.started[1].tag.substr(0, 4), "i=2.");
  EXPECT_EQ(s.record(1).attempt, 2);
  EXPECT_TRUE(fs::exists(s.dir_of(2) + "/attempts/1/rank-00000.h5"));
  StandIn third;
  s.run(third, 1);
  EXPECT_TRUE(third.started.empty());
}

// Issue 51 case 8: with --retry-failed --jobs 2, the larger points were pruned by the old
// out-of-memory end of the point being retried beside them, which then ended ok. What a point
// this run runs again did before prunes nothing.
TEST(RunLoop, ARetriedOutOfMemoryPointPrunesByItsNewEndNotItsOld) {
  Sweep s;
  StandIn first;
  first.exit_code["i=2"] = 20;
  s.run(first, 1, {"params.i"});
  ASSERT_EQ(s.record(3).status, PointStatus::kSkipped);
  StandIn retry;  // every point ends ok now
  RunReport report = s.run(retry, 2, {"params.i"}, true);
  EXPECT_TRUE(report.all_ok());
  for (int i : {2, 3, 4}) EXPECT_EQ(s.record(i).status, PointStatus::kOk) << i;
  // And when the retry runs out of memory again, the points after it are pruned by its new end
  // (one at a time, as before the fix: a guard that the fix keeps pruning).
  Sweep again;
  StandIn oom;
  oom.exit_code["i=2"] = 20;
  again.run(oom, 1, {"params.i"});
  StandIn still;
  still.exit_code["i=2"] = 20;
  again.run(still, 1, {"params.i"}, true);
  EXPECT_EQ(again.record(2).status, PointStatus::kOom);
  EXPECT_EQ(again.record(2).attempt, 2);
  EXPECT_EQ(again.record(3).status, PointStatus::kSkipped);
}

}  // namespace
}  // namespace sweepbench
