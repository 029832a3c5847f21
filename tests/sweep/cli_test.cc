// bench-sweep as a user meets it: help, exit codes, messages, and every example sweep.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "core/yaml_io.h"
#include "support/temp_dir.h"
#include "sweep/bench_sweep_cli.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun bench_sweep(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int code = bench_sweep_main(args, out, err);
  return {code, out.str(), err.str()};
}

std::string sweeps_dir() { return testing::source_dir() + "/sweeps"; }

TEST(Cli, HelpExplainsEveryCommandWithAnExample) {
  CliRun top = bench_sweep({"--help"});
  EXPECT_EQ(top.code, 0);
  EXPECT_THAT(top.out, HasSubstr("bench-sweep plan sweeps/quickstart.yaml --out runs/quickstart"));
  EXPECT_THAT(top.out, HasSubstr("keys "));
  EXPECT_THAT(top.out, HasSubstr("bench-sweep run sweeps/quickstart.yaml --out runs/quickstart"));
  for (const char* command : {"plan", "run", "keys"}) {
    CliRun help = bench_sweep({command, "--help"});
    EXPECT_EQ(help.code, 0) << command;
    EXPECT_THAT(help.out, HasSubstr("Usage: bench-sweep " + std::string(command))) << command;
    EXPECT_THAT(help.out, HasSubstr("Example")) << command;
  }
  EXPECT_EQ(bench_sweep({}).code, 2);
}

TEST(Cli, UsageErrorsExitTwo) {
  CliRun typo = bench_sweep({"plna", "x.yaml"});
  EXPECT_EQ(typo.code, 2);
  EXPECT_THAT(typo.err,
              StartsWith("bench-sweep: error: unknown command 'plna' (did you mean 'plan'?)"));
  CliRun runtypo = bench_sweep({"rnu"});
  EXPECT_THAT(runtypo.err, HasSubstr("(did you mean 'run'?)"));
  CliRun nofile = bench_sweep({"plan"});
  EXPECT_EQ(nofile.code, 2);
  EXPECT_THAT(nofile.err, HasSubstr("no sweep file given"));
  CliRun badopt = bench_sweep({"plan", "x.yaml", "--frobnicate"});
  EXPECT_EQ(badopt.code, 2);
  EXPECT_THAT(badopt.err, HasSubstr("unrecognised option '--frobnicate'"));
  CliRun format = bench_sweep({"plan", sweeps_dir() + "/quickstart.yaml", "--format", "xml"});
  EXPECT_EQ(format.code, 2);
  EXPECT_THAT(format.err, HasSubstr("unknown format 'xml' (use table, json or csv)"));
}

TEST(Cli, ABadSweepFileNamesTheSpotAndWritesNothing) {
  testing::TempDir dir;
  std::string sweep = dir.write("bad.yaml", "base:\n  train:\n    microbatch: 8\n");
  std::string out = dir.file("out");
  CliRun r = bench_sweep({"plan", sweep, "--out", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      sweep + ":3:5: error: unknown key 'train.microbatch' (did you mean 'train.micro_batch'?)\n");
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(fs::exists(out));
  CliRun set = bench_sweep({"plan", sweeps_dir() + "/quickstart.yaml", "--set", "train.lr=fast"});
  EXPECT_EQ(set.code, 2);
  EXPECT_EQ(set.err,
            "--set train.lr=fast: error: train.lr: expected float > 0, got the string \"fast\"\n");
  CliRun missing = bench_sweep({"plan", dir.file("nope.yaml")});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("nope.yaml: error: cannot read the file"));
}

TEST(Cli, ConflictingOutputExitsThree) {
  testing::TempDir dir;
  std::string sweep =
      dir.write("s.yaml", "base: {model.preset: gpt2-tiny}\ntag: {format: fixed}\n");
  std::string out = dir.file("out");
  EXPECT_EQ(bench_sweep({"plan", sweep, "--out", out}).code, 0);
  CliRun r = bench_sweep({"plan", sweep, "--out", out, "--set", "train.lr=0.5"});
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("fixed/config.yaml: error: holds another config"));
}

TEST(Cli, PlanWritesAndReportsWhatItDid) {
  testing::TempDir dir;
  std::string out = dir.file("qs");
  CliRun first = bench_sweep({"plan", sweeps_dir() + "/quickstart.yaml", "--out", out});
  EXPECT_EQ(first.code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr(": 4 written, 0 updated, 0 unchanged; manifest written"));
  CliRun second = bench_sweep({"plan", sweeps_dir() + "/quickstart.yaml", "--out", out});
  EXPECT_THAT(second.out, HasSubstr(": 0 written, 0 updated, 4 unchanged; manifest unchanged"));
  CliRun json =
      bench_sweep({"plan", sweeps_dir() + "/quickstart.yaml", "--out", out, "--format", "json"});
  EXPECT_EQ(parse_yaml(json.out, "stdout").find("points")->items().size(), 4u);
  EXPECT_THAT(json.err, HasSubstr("manifest unchanged"));  // stdout stays machine-readable
}

TEST(Cli, EveryExampleSweepPlans) {
  size_t count = 0;
  for (const auto& entry : fs::directory_iterator(sweeps_dir())) {
    if (entry.path().extension() != ".yaml") continue;
    testing::TempDir dir;
    CliRun r = bench_sweep({"plan", entry.path().string(), "--out", dir.file("out")});
    EXPECT_EQ(r.code, 0) << entry.path() << "\n" << r.err;
    EXPECT_TRUE(fs::exists(dir.file("out/manifest.json"))) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 5u);
}

TEST(Cli, DocsConfigMdHoldsTheCurrentKeyReference) {
  std::string doc = testing::read_text(testing::source_dir() + "/docs/config.md");
  EXPECT_THAT(doc, HasSubstr(schema_markdown()))
      << "docs/config.md is out of date: regenerate its reference section with "
         "`bench-sweep keys --format md`";
}

TEST(Binary, RunsFromTheBuildTree) {
  std::string cmd = testing::bin_dir() + "/bench-sweep plan " + sweeps_dir() +
                    "/quickstart.yaml --format csv 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_THAT(output, StartsWith("index,tag,config_hash,train.micro_batch,data.seq_len\n"));
}

}  // namespace
}  // namespace sweepbench
