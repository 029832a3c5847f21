#include "os/cpu_share.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <numeric>

#include "os/hardware.h"

namespace sweepbench {
namespace {

TEST(CpuShare, OthersAreTheBusyTimeOfTheRunsCpusLessItsOwn) {
  CpuTimes start, end;
  start.busy_s = {10, 20, 30};
  end.busy_s = {11.5, 20.2, 32};  // 1.5, 0.2 and 2 seconds busy
  // CPUs 0 and 2 are the run's: 3.5 s busy there, 1 s of it the run's own.
  EXPECT_DOUBLE_EQ(others_seconds(start, end, {1, 0, 1}, 1.0), 2.5);
  // Never below 0: the run's own time counted where the ticks were not yet.
  EXPECT_DOUBLE_EQ(others_seconds(start, end, {1, 0, 0}, 2.0), 0.0);
  // A CPU that went away (a shorter list) counts for nothing.
  end.busy_s.resize(2);
  EXPECT_DOUBLE_EQ(others_seconds(start, end, {1, 1, 1}, 0.0), 1.7);
}

TEST(CpuShare, ThreadsGiveWayToWhatOthersAlreadyUse) {
  // A quiet node: a daemon's ticks cut nothing.
  EXPECT_EQ(threads_beside_others(2, 2, 0.0, 1), 2);
  EXPECT_EQ(threads_beside_others(2, 2, 0.2, 1), 2);
  // A process spinning on one of two CPUs: one thread, on the free CPU.
  EXPECT_EQ(threads_beside_others(2, 2, 1.0, 1), 1);
  EXPECT_EQ(threads_beside_others(2, 2, 0.6, 1), 1);
  // Both CPUs busy: still one thread, never none.
  EXPECT_EQ(threads_beside_others(2, 2, 2.0, 1), 1);
  // 16 CPUs, two ranks of 8 threads, one busy CPU: 7 each, not 8 on 15 free CPUs.
  EXPECT_EQ(threads_beside_others(8, 16, 1.0, 2), 7);
  EXPECT_EQ(threads_beside_others(8, 16, 0.6, 2), 7);
  EXPECT_EQ(threads_beside_others(8, 16, 0.4, 2), 8);
  // Ranks planned fewer threads than the free CPUs: nothing to cut.
  EXPECT_EQ(threads_beside_others(2, 16, 3.0, 4), 2);
  // Nothing measured, or one thread planned: the plan stands.
  EXPECT_EQ(threads_beside_others(4, 0, 1.0, 1), 4);
  EXPECT_EQ(threads_beside_others(4, 4, -1.0, 1), 4);
  EXPECT_EQ(threads_beside_others(1, 2, 2.0, 1), 1);
}

TEST(CpuShare, ReadsProcStatsCpuLines) {
  std::optional<CpuJiffies> all = parse_cpu_line("cpu  10 1 5 100 2 3 4 6 0 0");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->id, -1);
  EXPECT_EQ(all->busy, 10u + 1 + 5 + 3 + 4 + 6);
  EXPECT_EQ(all->total, all->busy + 100 + 2);
  std::optional<CpuJiffies> one = parse_cpu_line("cpu12 1 0 1 7 0 0 0");  // no steal: old kernels
  ASSERT_TRUE(one);
  EXPECT_EQ(one->id, 12);
  EXPECT_EQ(one->busy, 2u);
  EXPECT_FALSE(parse_cpu_line("intr 1 2 3"));
  EXPECT_FALSE(parse_cpu_line("cpufreq 1 2"));
  EXPECT_FALSE(parse_cpu_line("cpu3 1 2"));
}

TEST(CpuShare, ReadsTheMachinesCpusAndThisProcesssTime) {
  const CpuTimes a = read_cpu_times();
  ASSERT_TRUE(a.ok);
  // Spin until this process has run 0.2 s of CPU (however busy the machine is, within a minute):
  // the machine's busy time grows by at least that, less a tick (10 ms) a CPU of rounding.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  volatile double x = 0;
  CpuTimes b = read_cpu_times();
  while (b.own_s - a.own_s < 0.2 && std::chrono::steady_clock::now() < limit) {
    for (int i = 0; i < 100000; ++i) x = x + 1;
    b = read_cpu_times();
  }
  ASSERT_GE(b.own_s - a.own_s, 0.2);
  EXPECT_GE(b.wall_s - a.wall_s, 0.19);
  double busy = 0;
  for (size_t i = 0; i < a.busy_s.size(); ++i) busy += b.busy_s[i] - a.busy_s[i];
  EXPECT_GE(busy, b.own_s - a.own_s - 0.01 * static_cast<double>(a.busy_s.size() + 1));
  // The affinity mask as flags: as many as the CPUs this process may run on.
  std::vector<double> flags = affinity_flags(a.busy_s.size());
  EXPECT_EQ(std::accumulate(flags.begin(), flags.end(), 0.0), usable_cpu_count());
}

}  // namespace
}  // namespace sweepbench
