// bench-sweep as a user meets it: help, exit codes, messages, and every example sweep.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <sstream>

#include "config/yaml_io.h"
#include "launch/bench_sweep_cli.h"
#include "support/temp_dir.h"

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

// `run --help` said every point runs bench-train. It names every workload's
// program, and run and submit take an option for each.
TEST(Cli, RunAndSubmitHelpNameEveryWorkloadsProgram) {
  for (const char* command : {"run", "submit"}) {
    CliRun help = bench_sweep({command, "--help"});
    for (const char* program : {"bench-train", "bench-infer", "bench-command"}) {
      EXPECT_THAT(help.out, HasSubstr("--" + std::string(program) + " arg")) << command;
    }
  }
  EXPECT_THAT(bench_sweep({"run", "--help"}).out,
              HasSubstr("train runs `bench-train`, infer `bench-infer`,\ncommand `bench-command`"));
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
  // A negative --max-points was read as 2^64 - 5, exited 0, and turned the
  // guard off.
  CliRun negative = bench_sweep({"plan", sweeps_dir() + "/quickstart.yaml", "--max-points", "-5"});
  EXPECT_EQ(negative.code, 2);
  EXPECT_EQ(negative.err,
            "--max-points -5: error: must be 1 or more: it is the most points a sweep may expand "
            "to (give a positive number, e.g. --max-points 50000)\n");
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
  EXPECT_THAT(missing.err, HasSubstr("nope.yaml: error: no such file"));
}

// Files that are not sweep files (C4, C5, W6), inputs too big or deep (C6, W12),
// selectors that select everything (W4), and errors without a place (W5).
TEST(Cli, HostileInputsAreRefusedClearlyAndQuickly) {
  testing::TempDir dir;
  auto plan = [&](const std::string& body, std::vector<std::string> extra = {}) {
    std::string sweep = dir.write("s.yaml", body);
    std::vector<std::string> args = {"plan", sweep};
    args.insert(args.end(), extra.begin(), extra.end());
    return bench_sweep(args);
  };
  const std::string base = "name: s\nbase: {model: {preset: gpt2-tiny}}\n";
  fs::create_directories(dir.file("a-dir"));
  ASSERT_EQ(::mkfifo(dir.file("a-fifo").c_str(), 0644), 0);
  struct Case {
    std::string body;
    std::string wanted;
  };
  std::vector<Case> cases = {
      {base + "defaults: [a-dir]\n", "cannot read 'a-dir' (looked at " + dir.file("a-dir") +
                                         "): is a directory, not a YAML file"},
      {base + "defaults: [a-fifo]\n", "is not a regular file (a FIFO, socket or device)"},
      {base + "defaults: [/dev/zero]\n", "is not a regular file"},
      {base + "axes:\n  train.micro_batch: [1, 1]\n",
       "s.yaml:4:3: error: two points resolve to the same config"},
      {base + "axes:\n  train.micro_batch: [1, 2, 3]\n  train.lr: [1.0e-3, 2.0e-3]\n",
       "s.yaml:4:3: error: the sweep has 6 points, more than 5: axes.train.micro_batch (3 values) "
       "x axes.train.lr (2 values)"},
      {"name: s\nbase:\n\tmodel: {preset: gpt2}\n",
       "line 3 holds a tab: YAML indents with spaces only"},
      {base + "axes: " + std::string(100000, '[') + std::string(100000, ']') + "\n",
       "s.yaml:3:70: error: nesting deeper than 64 levels"},
      {std::string(1, '\0') + "name: s\n", "s.yaml:1:1: error: a control character (byte 0x00)"},
  };
  for (const Case& c : cases) {
    CliRun r = plan(c.body, {"--max-points", "5"});
    EXPECT_EQ(r.code, 2) << c.wanted;
    EXPECT_THAT(r.err, HasSubstr(c.wanted));
    EXPECT_EQ(r.err.find('\0'), std::string::npos);
  }
  for (const char* path : {"/dev/zero", "a-dir"}) {
    CliRun r = bench_sweep({"plan", path[0] == '/' ? path : dir.file(path)});
    EXPECT_EQ(r.code, 2) << path;
    EXPECT_THAT(r.err, HasSubstr("not a YAML file")) << path;
  }
  // C6: a million values stop the parse where they are passed, not after building them all.
  std::string huge = base + "axes:\n  train.micro_batch: [1";
  for (int i = 2; i <= 1'000'001; ++i) huge += ", " + std::to_string(i);
  CliRun big = plan(huge + "]\n");
  EXPECT_EQ(big.code, 2);
  EXPECT_THAT(big.err, HasSubstr("s.yaml:4:"));
  EXPECT_THAT(big.err, HasSubstr("more than 1000000 values"));
  // W6: a file that is no YAML config is not echoed.
  dir.write("secret", "root:$6$salt$hash:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n");
  dir.write("words", "the password is hunter2\n");
  for (const char* file : {"secret", "words"}) {
    CliRun r = plan(base + "defaults: [" + file + "]\n");
    EXPECT_EQ(r.code, 2) << file;
    EXPECT_EQ(r.err.find("hash"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("hunter2"), std::string::npos) << r.err;
  }
  EXPECT_THAT(bench_sweep({"plan", dir.write("w.yaml", "the password is hunter2\n")}).err,
              HasSubstr("a sweep file is a mapping (name, base, axes, ...), got a string of 23 "
                        "characters"));
  // W4: an empty selector would select every point.
  std::string ok = dir.write("ok.yaml", base + "axes:\n  train.micro_batch: [1, 2]\n");
  CliRun scenario = bench_sweep({"plan", ok, "--scenario", ""});
  EXPECT_EQ(scenario.code, 2);
  EXPECT_THAT(scenario.err, HasSubstr("--scenario '': error: an empty scenario name selects"));
  for (const char* only : {"", " ", "0,,1", ","}) {
    CliRun r = bench_sweep({"run", ok, "--out", dir.file("o"), "--only", only, "--dry-run"});
    EXPECT_EQ(r.code, 2) << only;
    EXPECT_THAT(r.err, HasSubstr("an empty index or tag selects nothing")) << only;
  }
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
