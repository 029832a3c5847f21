// Expansion order, exclude/include/repeats, scenarios, --set and the point-count guard.
#include "sweep/expand.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "support/expect_error.h"
#include "support/temp_dir.h"
#include "sweep/sweep_test_util.h"

namespace sweepbench {
namespace {

using testing::at;
using ::testing::ElementsAre;
using testing::error_of;
using ::testing::HasSubstr;
using testing::plan_text;

const std::string kTiny =
    "base:\n  model.preset: gpt2-tiny\n  train: {steps: 4, warmup_steps: 1}\n";

std::vector<std::string> column(const Plan& plan, const std::string& key) {
  std::vector<std::string> out;
  for (size_t i = 0; i < plan.points().size(); ++i) out.push_back(at(plan, i, key));
  return out;
}

TEST(Expansion, ProductRunsTheLastDimensionFastest) {
  Plan plan =
      plan_text(kTiny + "axes:\n  train.micro_batch: [1, 2]\n  train.dtype: [fp32, bf16]\n");
  EXPECT_THAT(column(plan, "train.micro_batch"), ElementsAre("1", "1", "2", "2"));
  EXPECT_THAT(column(plan, "train.dtype"), ElementsAre("fp32", "bf16", "fp32", "bf16"));
  for (size_t i = 0; i < plan.points().size(); ++i) EXPECT_EQ(plan.points()[i].index, i);
}

TEST(Expansion, DimensionsRunInFileOrderAcrossAxesAndZip) {
  // zip comes first in the file, so it is the outer loop.
  Plan plan = plan_text(kTiny +
                        "zip:\n  - {data.seq_len: [16, 32], train.micro_batch: [4, 2]}\n"
                        "axes:\n  train.dtype: [fp32, bf16]\n");
  EXPECT_THAT(column(plan, "data.seq_len"), ElementsAre("16", "16", "32", "32"));
  EXPECT_THAT(column(plan, "train.micro_batch"), ElementsAre("4", "4", "2", "2"));
  EXPECT_THAT(column(plan, "train.dtype"), ElementsAre("fp32", "bf16", "fp32", "bf16"));
}

TEST(Expansion, ZipGroupsVaryTogether) {
  Plan plan = plan_text(
      "base: {model.preset: llama2-7b}\n"
      "zip:\n  - data.seq_len: [512, 1024, 2048, 4096]\n    train.micro_batch: [64, 32, 8, 4]\n");
  ASSERT_EQ(plan.points().size(), 4u);  // four points, not sixteen
  EXPECT_THAT(column(plan, "data.seq_len"), ElementsAre("512", "1024", "2048", "4096"));
  EXPECT_THAT(column(plan, "train.micro_batch"), ElementsAre("64", "32", "8", "4"));
}

TEST(Expansion, ExcludeDropsMatchingPointsWithAnyOfLists) {
  Plan plan = plan_text(kTiny +
                        "axes:\n  train.micro_batch: [1, 2, 4]\n  data.seq_len: [16, 32]\n"
                        "exclude:\n  - {train.micro_batch: [2, 4], data.seq_len: 32}\n"
                        "  - train: {micro_batch: 1}\n    data: {seq_len: 16}\n");
  EXPECT_THAT(column(plan, "train.micro_batch"), ElementsAre("1", "2", "4"));
  EXPECT_THAT(column(plan, "data.seq_len"), ElementsAre("32", "16", "16"));
}

TEST(Expansion, ExcludeDropsCombinationsThatCouldNotRun) {
  // gpt2-tiny's block size is 128: seq_len 256 is an error, unless an exclude drops the point.
  const std::string axes =
      kTiny + "axes:\n  data.seq_len: [64, 256]\n  train.dtype: [fp32, bf16]\n";
  EXPECT_THAT(error_of([&] { plan_text(axes); }).what(), HasSubstr("exceeds model.block_size"));
  Plan plan = plan_text(axes + "exclude:\n  - {data.seq_len: 256}\n");
  EXPECT_THAT(column(plan, "data.seq_len"), ElementsAre("64", "64"));
  // An exclude that does not match the impossible point leaves the error.
  EXPECT_THAT(error_of([&] {
                plan_text(axes + "exclude:\n  - {data.seq_len: 256, train.dtype: bf16}\n");
              }).what(),
              HasSubstr("exceeds model.block_size"));
}

TEST(Expansion, IncludeAddsPointsAfterExclude) {
  Plan plan = plan_text(kTiny +
                        "axes:\n  train.micro_batch: [1, 2]\n"
                        "exclude:\n  - {train.micro_batch: 2}\n"
                        "include:\n  - {train.micro_batch: 2, train.dtype: bf16}\n  - {}\n"
                        "  - train.micro_batch: 2\n");
  EXPECT_THAT(column(plan, "train.micro_batch"), ElementsAre("1", "2", "8", "2"));
  EXPECT_THAT(column(plan, "train.dtype"), ElementsAre("fp32", "bf16", "fp32", "fp32"));
  // The include that matches an exclude entry is kept: include comes after exclude.
}

TEST(Expansion, RepeatsAreInnermost) {
  Plan plan = plan_text(kTiny + "repeats: 3\naxes:\n  train.micro_batch: [1, 2]\n");
  ASSERT_EQ(plan.points().size(), 6u);
  EXPECT_THAT(column(plan, "train.micro_batch"), ElementsAre("1", "1", "1", "2", "2", "2"));
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(plan.points()[i].repeat, static_cast<std::int64_t>(i % 3));
  EXPECT_EQ(plan.points()[0].config_hash, plan.points()[2].config_hash);
  EXPECT_NE(plan.points()[0].tag, plan.points()[1].tag);
}

TEST(Expansion, ScenariosMergeOverTheTopLevelInFileOrder) {
  std::string text = kTiny +
                     "axes:\n  train.micro_batch: [1, 2]\n"
                     "scenarios:\n"
                     "  - name: fp32\n"
                     "  - name: bf16\n    base: {train.dtype: bf16}\n"
                     "    axes: {train.micro_batch: [4]}\n"
                     "  - name: long\n    axes: {data.seq_len: [64, 96]}\n";
  Plan plan = plan_text(text);
  std::vector<std::string> scenarios;
  for (const SweepPoint& p : plan.points()) scenarios.push_back(p.scenario);
  EXPECT_THAT(scenarios, ElementsAre("fp32", "fp32", "bf16", "long", "long", "long", "long"));
  EXPECT_THAT(column(plan, "train.dtype"),
              ElementsAre("fp32", "fp32", "bf16", "fp32", "fp32", "fp32", "fp32"));
  EXPECT_THAT(column(plan, "train.micro_batch"), ElementsAre("1", "2", "4", "1", "1", "2", "2"));
  EXPECT_THAT(column(plan, "data.seq_len"),
              ElementsAre("128", "128", "128", "64", "96", "64", "96"));

  PlanOptions only_long;
  only_long.scenarios = {"long"};
  Plan selected = plan_text(text, only_long);
  std::vector<size_t> indices;
  for (const SweepPoint* p : selected.selected_points()) indices.push_back(p->index);
  EXPECT_THAT(indices, ElementsAre(3, 4, 5, 6));  // indices and tags do not depend on selection
  EXPECT_EQ(selected.points()[3].tag, plan.points()[3].tag);

  PlanOptions typo;
  typo.scenarios = {"lnog"};
  EXPECT_EQ(std::string(error_of([&] { plan_text(text, typo); }).what()),
            "--scenario lnog: unknown scenario 'lnog' (did you mean 'long'?) (the sweep has: fp32, "
            "bf16, long)");
}

TEST(Expansion, SameFileSamePlan) {
  std::string text = kTiny + "axes:\n  train.micro_batch: [1, 2]\n  train.lr: [1e-3, 3e-4]\n";
  Plan a = plan_text(text);
  Plan b = plan_text(text);
  ASSERT_EQ(a.points().size(), b.points().size());
  for (size_t i = 0; i < a.points().size(); ++i) {
    EXPECT_EQ(a.points()[i].tag, b.points()[i].tag);
    EXPECT_EQ(a.points()[i].config_hash, b.points()[i].config_hash);
  }
}

TEST(Expansion, WholeSectionsCanBeAnAxis) {
  Plan plan = plan_text(kTiny +
                        "axes:\n  container:\n    - {runtime: apptainer, image: a.sif}\n"
                        "    - {runtime: apptainer, image: b.sif, workdir: /w}\n");
  EXPECT_THAT(column(plan, "container.image"), ElementsAre("a.sif", "b.sif"));
  EXPECT_THAT(column(plan, "container.workdir"), ElementsAre("null", "/w"));
  EXPECT_THAT(plan.info().varying_keys, ElementsAre("container.image", "container.workdir"));
}

TEST(Expansion, VaryingKeysLeaveOutWhatThePresetImplies) {
  Plan plan = plan_text("axes:\n  model.preset: [gpt2, gpt2-medium]\n");
  EXPECT_THAT(plan.info().varying_keys, ElementsAre("model.preset"));
  Plan explicit_layers = plan_text("axes:\n  model.n_layer: [2, 4]\n");
  EXPECT_THAT(explicit_layers.info().varying_keys, ElementsAre("model.n_layer"));
}

TEST(Expansion, PointErrorsNameThePoint) {
  Error e = error_of([&] { plan_text(kTiny + "axes:\n  data.seq_len: [64, 4096]\n"); });
  EXPECT_EQ(std::string(e.what()),
            "s.yaml:5:22: data.seq_len: 4096 exceeds model.block_size (128) in the point "
            "(data.seq_len=4096) (lower data.seq_len or raise model.block_size)");
}

TEST(Expansion, IdenticalPointsAreAnError) {
  Error e = error_of([&] { plan_text(kTiny + "axes:\n  train.micro_batch: [1, 2, 1]\n"); });
  EXPECT_EQ(std::string(e.what()),
            "s.yaml:5:3: two points resolve to the same config: (train.micro_batch=1) and "
            "(train.micro_batch=1) (remove one of them; use repeats: to run a point several "
            "times)");
  Error sched = error_of([&] { plan_text(kTiny + "axes:\n  slurm.time: [10, 20]\n"); });
  EXPECT_THAT(sched.what(), HasSubstr("they differ only in keys that cannot change a measurement"));
  Error across = error_of([&] {
    plan_text(kTiny +
              "scenarios:\n  - {name: a, base: {train.lr: 0.1}}\n  - {name: b, base: {train.lr: "
              "1e-1}}\n");
  });
  // The place of the second point, and of the first when it differs.
  EXPECT_THAT(across.what(), HasSubstr("s.yaml:6:5: two points resolve to the same config: "
                                       "(scenario a: the base point) from s.yaml:5:5 and "
                                       "(scenario b: the base point)"));
}

TEST(Expansion, GuardsAgainstHugeSweeps) {
  std::string axes = "axes:\n";
  for (const char* k : {"train.micro_batch", "train.grad_accum", "train.seed", "eval.steps"}) {
    axes += std::string("  ") + k + ": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n";
  }
  Error e = error_of([&] { plan_text(kTiny + axes); });  // 11^4 = 14641 points
  EXPECT_EQ(std::string(e.what()),
            "s.yaml:5:3: the sweep has 14641 points, more than 10000: axes.train.micro_batch (11 "
            "values) x axes.train.grad_accum (11 values) x axes.train.seed (11 values) x "
            "axes.eval.steps (11 values) (pass --max-points 14641 if you mean it, or narrow the "
            "axes)");
  PlanOptions allow;
  allow.max_points = 15000;
  EXPECT_EQ(plan_text(kTiny + axes, allow).points().size(), 14641u);
  PlanOptions small;
  small.max_points = 10;
  EXPECT_THAT(error_of([&] {
                plan_text(kTiny + "repeats: 3\naxes: {train.micro_batch: [1, 2, 3, 4]}\n", small);
              }).what(),
              HasSubstr("the sweep has 12 points, more than 10"));
  // Excludes that drop almost everything still cannot make us enumerate without bound.
  EXPECT_THAT(error_of([&] {
                plan_text(kTiny +
                              "axes:\n  train.micro_batch: [1,2,3,4,5,6,7,8,9,10]\n"
                              "  train.seed: [1,2,3,4,5,6,7,8,9,10,11]\n"
                              "exclude: [{train.seed: [1,2,3,4,5,6,7,8,9,10]}]\n",
                          small);
              }).what(),
              HasSubstr("the axes multiply to more than 100 combinations before exclude"));
}

TEST(Overrides, ApplyToEveryPointButNotToSweptKeys) {
  std::string text = kTiny + "axes:\n  train.micro_batch: [1, 2]\n";
  PlanOptions options;
  options.overrides = {parse_override("train.lr=1e-3"), parse_override("train.steps=9")};
  Plan plan = plan_text(text, options);
  EXPECT_THAT(column(plan, "train.lr"), ElementsAre("0.001", "0.001"));
  EXPECT_THAT(column(plan, "train.steps"), ElementsAre("9", "9"));
  EXPECT_NE(plan.points()[0].config_hash, plan_text(text).points()[0].config_hash);
  PlanOptions swept;
  swept.overrides = {parse_override("train.micro_batch=4")};
  EXPECT_EQ(std::string(error_of([&] { plan_text(text, swept); }).what()),
            "--set train.micro_batch=4: train.micro_batch: is swept by axes.train.micro_batch "
            "(s.yaml:5:3) (--set changes the base of every point; remove the key from the sweep "
            "to fix it with --set)");
}

// A plan that holds no points keeps each point as its differences from the first; every point it
// rebuilds must be the config it hashed, whatever made it (axes, derived keys, include, exclude,
// scenarios with their own base, repeats), and selected_only must follow --scenario.
TEST(StreamedPlan, RebuildsEveryPointAsItWasHashed) {
  std::string text = kTiny +
                     "repeats: 2\n"
                     "scenarios:\n"
                     "  - name: small\n"
                     "    axes:\n"
                     "      train.micro_batch: [1, 2]\n"
                     "      model.preset: [gpt2-tiny, llama-tiny]\n"
                     "  - name: wide\n"
                     "    base: {data.seq_len: 64, launch.env: {A: x}}\n"
                     "    axes:\n"
                     "      model.n_embd: [64, 128]\n"
                     "      train.lr: [0.001, 0.002]\n"
                     "    exclude:\n"
                     "      - {model.n_embd: 128, train.lr: 0.002}\n"
                     "    include:\n"
                     "      - {model.n_embd: 256, launch.env: {B: y}}\n";
  PlanOptions options;
  options.scenarios = {"wide"};
  PlanOptions compact = options;
  compact.hold_points = false;
  Plan streamed = plan_sweep(testing::spec_from_text(text), compact);
  EXPECT_THROW(streamed.points(), std::logic_error);
  EXPECT_EQ(streamed.info().total_points, 2u * (4 + 3 + 1));
  EXPECT_EQ(streamed.info().selected_points, 2u * 4);
  size_t seen = 0, selected = 0;
  std::vector<std::string> tags;
  streamed.for_each_point(
      [&](const SweepPoint& p) {
        EXPECT_EQ(config_hash(p.config), p.config_hash) << p.tag;
        EXPECT_EQ(p.index, seen++);
        if (p.selected) ++selected;
        tags.push_back(p.tag);
      },
      false);
  EXPECT_EQ(seen, 16u);
  EXPECT_EQ(selected, 8u);
  // A plan that holds its points has the same ones.
  Plan plan = plan_sweep(testing::spec_from_text(text), options);
  ASSERT_EQ(plan.points().size(), tags.size());
  for (size_t i = 0; i < tags.size(); ++i) EXPECT_EQ(plan.points()[i].tag, tags[i]);
  EXPECT_EQ(at(plan, 15, "model.n_embd"), "256");
  EXPECT_EQ(at(plan, 15, "launch.env"), "{A: x, B: y}");
  EXPECT_EQ(at(plan, 0, "model.arch"), "gpt2");
  EXPECT_EQ(at(plan, 2, "model.arch"), "llama");
  // A rebuilt point leaves no trace in the next: the llama point's keys are undone.
  EXPECT_EQ(at(plan, 4, "model.arch"), "gpt2");
}

}  // namespace
}  // namespace sweepbench
