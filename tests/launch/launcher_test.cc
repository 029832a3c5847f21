// Golden commands for every launcher (CONTRIBUTING.md item 20), and shell quoting checked by a real
// sh.
#include "launch/launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "config/config.h"
#include "launch/shell.h"
#include "support/expect_error.h"
#include "support/point_command.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::command_of;
using testing::config_with;

LaunchSite laptop() {
  LaunchSite s;
  s.cpus_on_node = 8;
  return s;
}

LaunchSite allocation() {
  LaunchSite s;
  s.in_slurm_allocation = true;
  s.cpus_on_node = 16;
  return s;
}

TEST(Launcher, OneRankOutsideSlurmIsAPlainExec) {
  PointCommand c =
      command_of(config_with({}), laptop(), "/opt/sb/bench-train", "/r/t/config.yaml", "/r/t");
  EXPECT_EQ(c.launcher, "local");
  EXPECT_THAT(c.argv,
              ElementsAre("/opt/sb/bench-train", "--config", "/r/t/config.yaml", "--out", "/r/t"));
}

TEST(Launcher, SeveralRanksOutsideSlurmUseMpirun) {
  PointCommand c = command_of(config_with({"launch.ranks=4", "launch.env={NCCL_DEBUG: INFO}",
                                           "launch.mpirun_args=[--mca, btl, \"self,vader\"]"}),
                              laptop(), "bench-train", "c.yaml", "o");
  EXPECT_EQ(c.launcher, "mpirun");
  EXPECT_THAT(c.argv,
              ElementsAre("mpirun", "-n", "4", "--bind-to", "none", "-x", "NCCL_DEBUG", "--mca",
                          "btl", "self,vader", "bench-train", "--config", "c.yaml", "--out", "o"));
  EXPECT_EQ(c.env.at("NCCL_DEBUG"), "INFO");
}

TEST(Launcher, MpirunKeepsTheUsersBindingAndAllowsRoot) {
  LaunchSite root = laptop();
  root.as_root = true;
  PointCommand c =
      command_of(config_with({"launch.ranks=2", "launch.mpirun_args=[--map-by, core]"}), root,
                 "bench-train", "c.yaml", "o");
  EXPECT_THAT(c.argv, ElementsAre("mpirun", "-n", "2", "--allow-run-as-root", "--map-by", "core",
                                  "bench-train", "--config", "c.yaml", "--out", "o"));
}

TEST(Launcher, InsideAnAllocationEveryPointIsAnSrunStep) {
  PointCommand c = command_of(config_with({"launch.ranks=4", "launch.nodes=2"}), allocation(),
                              "bench-train", "c.yaml", "o");
  EXPECT_EQ(c.launcher, "srun");
  // 16 CPUs on a node shared by its 2 ranks.
  EXPECT_THAT(c.argv, ElementsAre("srun", "--mpi=pmix", "--ntasks=4", "--nodes=2",
                                  "--cpus-per-task=8", "--exact", "--kill-on-bad-exit=1",
                                  "bench-train", "--config", "c.yaml", "--out", "o"));
  PointCommand one = command_of(config_with({}), allocation(), "bench-train", "c.yaml", "o");
  EXPECT_EQ(one.launcher, "srun");  // one rank too: a job step is what SLURM accounts
}

TEST(Launcher, SrunAsksForGpusAndTheConfiguredCpus) {
  PointCommand c =
      command_of(config_with({"launch.ranks=8", "launch.gpus_per_rank=1", "launch.cpus_per_rank=12",
                              "launch.srun_args=[--cpu-bind=cores]"}),
                 allocation(), "bench-train", "c.yaml", "o");
  EXPECT_THAT(c.argv,
              ElementsAre("srun", "--mpi=pmix", "--ntasks=8", "--nodes=1", "--cpus-per-task=12",
                          "--exact", "--kill-on-bad-exit=1", "--gpus-per-task=1",
                          "--cpu-bind=cores", "bench-train", "--config", "c.yaml", "--out", "o"));
}

TEST(Launcher, SrunEndsTheStepWhenARankDiesUnlessTheUserSaysOtherwise) {
  auto argv_with = [](const std::string& srun_args) {
    return command_of(config_with({"launch.ranks=2", "launch.srun_args=" + srun_args}),
                      allocation(), "bench-train", "c.yaml", "o")
        .argv;
  };
  auto count = [](const std::vector<std::string>& argv, const std::string& arg) {
    return std::count(argv.begin(), argv.end(), arg);
  };
  EXPECT_EQ(count(argv_with("[]"), "--kill-on-bad-exit=1"), 1);
  for (std::string own : {"--kill-on-bad-exit=0", "-K0", "-K"}) {
    std::vector<std::string> argv = argv_with("[" + own + "]");
    EXPECT_EQ(count(argv, "--kill-on-bad-exit=1"), 0) << own;
    EXPECT_EQ(count(argv, own), 1) << own;
  }
}

TEST(Launcher, AnExplicitLauncherWinsOverAuto) {
  PointCommand c = command_of(config_with({"launch.launcher=mpirun"}), allocation(), "bench-train",
                              "c.yaml", "o");
  EXPECT_EQ(c.launcher, "mpirun");
  EXPECT_EQ(c.argv.front(), "mpirun");
}

TEST(Launcher, PointsThisSiteCannotRunAreErrorsNamingTheKey) {
  {
    Error e = testing::error_of([&] {
      command_of(config_with({"launch.ranks=2", "launch.launcher=local"}), laptop(), "bench-train",
                 "c.yaml", "o");
    });
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_THAT(e.detail(), HasSubstr("launch.launcher"));
  }
  {
    Error e = testing::error_of([&] {
      command_of(config_with({"container.runtime=enroot", "container.image=x.sqsh"}), laptop(),
                 "bench-train", "c.yaml", "o");
    });
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_THAT(e.detail(), HasSubstr("container.runtime enroot runs through srun"));
  }
  {
    Error e = testing::error_of([&] { make_launcher("pbs"); });
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_THAT(e.detail(), HasSubstr("launch.launcher"));
  }
}

// What sh makes of a quoted command line: each argument on its own line.
std::vector<std::string> through_sh(const std::vector<std::string>& argv) {
  testing::TempDir dir;
  std::string script = dir.write("s.sh", "printf '%s\\0' " + shell_join(argv) + "\n");
  FILE* pipe = ::popen(("sh " + script).c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  ::pclose(pipe);
  std::vector<std::string> words;
  size_t start = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\0') {
      words.push_back(out.substr(start, i - start));
      start = i + 1;
    }
  }
  return words;
}

TEST(Shell, HostileValuesReachTheProgramVerbatim) {
  testing::TempDir dir;
  std::string pwned = dir.file("pwned");
  std::vector<std::string> hostile = {"$(touch " + pwned + ")",
                                      "\"; touch " + pwned + "; \"",
                                      "`touch " + pwned + "`",
                                      "a\nb; touch " + pwned,
                                      "it's",
                                      "'",
                                      "",
                                      "x=y",
                                      "--set=a b",
                                      "*",
                                      "~",
                                      "$HOME",
                                      "\\",
                                      "a b\tc"};
  EXPECT_EQ(through_sh(hostile), hostile);
  EXPECT_FALSE(std::ifstream(pwned).good()) << "a value ran as shell";
}

TEST(Shell, PlainWordsStayReadable) {
  EXPECT_EQ(shell_join({"srun", "--mpi=pmix", "-n", "2", "/opt/bin/bench-train"}),
            "srun --mpi=pmix -n 2 /opt/bin/bench-train");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

}  // namespace
}  // namespace sweepbench
