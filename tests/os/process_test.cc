// No process of a point outlives it: what a program leaves running, even a
// daemon in a session of its own, stays a descendant of the reaper and is ended and named.
#include "os/process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "support/temp_dir.h"

namespace sweepbench {
namespace {

using ::testing::ElementsAre;
using ::testing::MatchesRegex;

TEST(Leftovers, ADaemonThatLeftItsSessionIsEndedAndNamed) {
  sweepbench::testing::TempDir dir;
  become_child_subreaper();
  std::string pid_file = dir.file("daemon.pid");
  // The program: starts a daemon in a session of its own (setsid) and returns at once. The
  // daemon ignores SIGTERM, so only the SIGKILL after the grace ends it.
  Captured program = capture_process(
      {"sh", "-c",
       "setsid sh -c 'trap \"\" TERM; echo $$ > \"$0\"; exec sleep 300' " + pid_file +
           " </dev/null >/dev/null 2>&1 & while [ ! -s " + pid_file + " ]; do sleep 0.01; done"});
  ASSERT_TRUE(program.ok()) << program.err;
  std::vector<std::string> left = descendant_processes();
  ASSERT_EQ(left.size(), 1u) << ::testing::PrintToString(left);
  EXPECT_THAT(left[0], MatchesRegex("[0-9]+ \\((sh|sleep)\\)"));
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> ended = end_leftover_processes(0.5);
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // sh until its exec of sleep: the name is the one it had when it was found.
  EXPECT_THAT(ended, ElementsAre(MatchesRegex("[0-9]+ \\((sh|sleep)\\)")));
  EXPECT_GE(waited, 0.5);  // SIGTERM was ignored: the grace, then SIGKILL
  EXPECT_TRUE(descendant_processes().empty()) << ::testing::PrintToString(descendant_processes());
  pid_t daemon = std::stoi(sweepbench::testing::read_text(pid_file));
  EXPECT_NE(::kill(daemon, 0), 0);  // gone, and reaped
  EXPECT_TRUE(end_leftover_processes().empty());
}

}  // namespace
}  // namespace sweepbench
