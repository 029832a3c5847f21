// Every guard rail of the sweep file is an error that names file:line:column and the key.
#include "sweep/sweep_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/expect_error.h"
#include "support/temp_dir.h"
#include "sweep/sweep_test_util.h"

namespace sweepbench {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::spec_from_text;

std::string parse_error(const std::string& text) {
  return error_of([&] { spec_from_text(text); }).what();
}

TEST(SweepFile, ReadsEveryTopLevelKey) {
  testing::TempDir dir;
  dir.write("common.yaml", "train: {steps: 30, lr: 1.0e-3}\nmodel.preset: gpt2-tiny\n");
  dir.write("later.yaml", "train.steps: 40\n");
  std::string path = dir.write("sweep.yaml",
                               "name: full\n"
                               "description: every key once\n"
                               "defaults: [common.yaml, later.yaml]\n"
                               "base: {train.warmup_steps: 3}\n"
                               "launch: {ranks: 2}\n"
                               "slurm: {time: '00:20:00', partition: gpu}\n"
                               "container: {runtime: none}\n"
                               "axes: {train.micro_batch: [1, 2]}\n"
                               "zip: [{data.seq_len: [16, 32], eval.steps: [1, 2]}]\n"
                               "exclude: [{train.micro_batch: 2, data.seq_len: 32}]\n"
                               "include: [{train.micro_batch: 9}]\n"
                               "repeats: 2\n"
                               "tag: {style: readable}\n"
                               "prune_after_oom: [train.micro_batch, data.seq_len]\n");
  SweepSpec spec = load_sweep_file(path);
  EXPECT_EQ(spec.name, "full");
  EXPECT_EQ(spec.repeats, 2);
  ASSERT_EQ(spec.scenarios.size(), 1u);
  const Scenario& sc = spec.scenarios[0];
  EXPECT_EQ(sc.name, "default");
  EXPECT_EQ(sc.base.find_path("train.steps")->as_int(), 40);  // later defaults win
  EXPECT_DOUBLE_EQ(sc.base.find_path("train.lr")->as_float(), 1e-3);
  EXPECT_EQ(sc.base.find_path("launch.ranks")->as_int(), 2);
  EXPECT_EQ(sc.base.find_path("slurm.time")->as_string(), "00:20:00");
  ASSERT_EQ(sc.dimensions.size(), 2u);
  EXPECT_EQ(sc.dimensions[0].label, "axes.train.micro_batch");
  EXPECT_EQ(sc.dimensions[1].keys, (std::vector<std::string>{"data.seq_len", "eval.steps"}));
  EXPECT_EQ(sc.excludes.size(), 1u);
  EXPECT_EQ(sc.includes.size(), 1u);
  EXPECT_EQ(spec.prune_after_oom, (std::vector<std::string>{"train.micro_batch", "data.seq_len"}));
}

TEST(SweepFile, NameDefaultsToTheFileStem) {
  testing::TempDir dir;
  std::string path = dir.write("my-sweep.yaml", "base: {}\n");
  EXPECT_EQ(load_sweep_file(path).name, "my-sweep");
}

TEST(SweepFileErrors, UnknownAndMisplacedKeys) {
  EXPECT_EQ(parse_error("name: x\naxis:\n  train.lr: [1]\n"),
            "s.yaml:2:1: unknown key 'axis' in the sweep file (did you mean 'axes'?)");
  EXPECT_EQ(parse_error("train:\n  lr: 1\n"),
            "s.yaml:1:1: 'train' belongs under base: (only launch, container and slurm may stand "
            "at the top level)");
  EXPECT_EQ(parse_error("axes:\n  train.microbatch: [1, 2]\n"),
            "s.yaml:2:3: unknown key 'train.microbatch' (did you mean 'train.micro_batch'?)");
  EXPECT_EQ(parse_error("base:\n  train:\n    microbatch: 2\n"),
            "s.yaml:3:5: unknown key 'train.microbatch' (did you mean 'train.micro_batch'?)");
  EXPECT_EQ(parse_error("scenarios:\n  - name: a\n    axis: {}\n"),
            "s.yaml:3:5: unknown key 'axis' in scenarios[0] (did you mean 'axes'?)");
  EXPECT_THAT(parse_error("tag: {styel: fairseq2}\n"),
              HasSubstr("unknown key 'styel' in tag (did you mean 'style'?)"));
  EXPECT_EQ(parse_error(""),
            "s.yaml: the sweep file is empty (see sweeps/quickstart.yaml for a small example)");
  EXPECT_THAT(parse_error("- a\n"), HasSubstr("a sweep file is a mapping"));
}

TEST(SweepFileErrors, AxesAndZipGroups) {
  EXPECT_EQ(parse_error("axes:\n  train.micro_batch: []\n"),
            "s.yaml:2:22: axes.train.micro_batch: the axis is empty (give it at least one value, "
            "or remove it)");
  EXPECT_THAT(parse_error("axes:\n  train.micro_batch: 8\n"),
              HasSubstr("axes.train.micro_batch: expected a list, got the integer 8"));
  EXPECT_EQ(
      parse_error("axes:\n  train.micro_batch: [1, x]\n"),
      "s.yaml:2:26: train.micro_batch: expected integer in [1, 1048576], got the string \"x\"");
  EXPECT_EQ(parse_error("zip:\n  - data.seq_len: [512, 1024, 2048, 4096]\n"
                        "    train.micro_batch: [64, 32, 8]\n"),
            "s.yaml:2:5: zip[0]: the lists of a zip group must have equal length: data.seq_len "
            "has 4, train.micro_batch has 3");
  EXPECT_THAT(parse_error("zip:\n  - {}\n"), HasSubstr("zip[0]: a zip group is a mapping"));
  EXPECT_EQ(parse_error("axes:\n  train.micro_batch: [1, 2]\n"
                        "zip:\n  - {train.micro_batch: [3, 4], data.seq_len: [8, 16]}\n"),
            "s.yaml:4:5: train.micro_batch: is swept twice: by axes.train.micro_batch "
            "(s.yaml:2:3) and by zip[0] (a key may belong to one axis or one zip group)");
  EXPECT_THAT(parse_error("axes:\n  container: [{image: a}]\n  container.image: [b]\n"),
              HasSubstr("container.image: is swept twice"));
}

TEST(SweepFileErrors, ExcludeAndInclude) {
  EXPECT_EQ(parse_error("axes:\n  train.micro_batch: [1, 2]\nexclude:\n  - {train.lr: 0.1}\n"),
            "s.yaml:4:6: train.lr: is never swept, so this exclude entry can never drop a point "
            "(exclude only keys that appear under axes or zip)");
  EXPECT_THAT(parse_error("axes:\n  train.micro_batch: [1, 2]\nexclude:\n  - {train.mb: 1}\n"),
              HasSubstr("unknown key 'train.mb'"));
  EXPECT_THAT(parse_error("axes:\n  train.micro_batch: [1, 2]\nexclude:\n  - {}\n"),
              HasSubstr("exclude[0]: expected a non-empty mapping"));
  EXPECT_THAT(
      parse_error("axes:\n  train.micro_batch: [1, 2]\nexclude:\n  - {train.micro_batch: x}\n"),
      HasSubstr("expected integer in [1, 1048576], got the string \"x\""));
  EXPECT_THAT(parse_error("include:\n  - 3\n"), HasSubstr("include[0]: expected a mapping"));
}

TEST(SweepFileErrors, ScenariosRepeatsNamesAndTags) {
  EXPECT_THAT(parse_error("scenarios:\n  - {name: a}\n  - {name: a}\n"),
              HasSubstr("scenario 'a' is defined twice"));
  EXPECT_THAT(parse_error("scenarios:\n  - {base: {}}\n"), HasSubstr("scenarios[0]: needs a name"));
  EXPECT_THAT(parse_error("scenarios: []\n"), HasSubstr("scenarios: the list is empty"));
  EXPECT_THAT(parse_error("scenarios:\n  - {name: ../x}\n"),
              HasSubstr("is not a usable scenario name"));
  EXPECT_EQ(parse_error("repeats: 0\n"),
            "s.yaml:1:10: repeats: expected an integer >= 1, or a mapping {most, least, target_ci, "
            "metric}, got the integer 0 (e.g. repeats: 5, or repeats: {most: 20, least: 3, "
            "target_ci: 5%})");
  EXPECT_THAT(parse_error("name: \"a b\"\n"), HasSubstr("'a b' is not a usable sweep name"));
  EXPECT_THAT(parse_error("tag: {style: hydra}\n"),
              HasSubstr("'hydra' is not one of readable, fairseq2"));
  EXPECT_THAT(parse_error("tag: {format: '  '}\n"), HasSubstr("tag.format: must not be empty"));
  EXPECT_THAT(parse_error("prune_after_oom: [train.dtype]\n"),
              HasSubstr("'train.dtype' is not numeric"));
  EXPECT_THAT(parse_error("prune_after_oom: [train.microbatch]\n"),
              HasSubstr("did you mean 'train.micro_batch'?"));
}

TEST(SweepFileErrors, TopLevelSectionsMustNotRepeatBase) {
  EXPECT_EQ(parse_error("base:\n  launch.ranks: 2\nlaunch:\n  ranks: 4\n"),
            "s.yaml:4:10: launch.ranks: is set both in base (s.yaml:2:17) and in the top-level "
            "launch section (keep one of them)");
}

TEST(SweepFileErrors, MissingDefaultsFile) {
  testing::TempDir dir;
  std::string path = dir.write("sweep.yaml", "defaults: [nope.yaml]\n");
  Error e = error_of([&] { load_sweep_file(path); });
  EXPECT_THAT(e.what(), HasSubstr("sweep.yaml:1:12: defaults: cannot read 'nope.yaml' (looked at " +
                                  dir.file("nope.yaml") + "): no such file"));
  dir.write("bad.yaml", "train:\n  lr: fast\n");
  std::string bad = dir.write("sweep2.yaml", "defaults: bad.yaml\n");
  EXPECT_EQ(std::string(error_of([&] { load_sweep_file(bad); }).what()),
            dir.file("bad.yaml") + ":2:7: train.lr: expected float > 0, got the string \"fast\"");
}

}  // namespace
}  // namespace sweepbench
