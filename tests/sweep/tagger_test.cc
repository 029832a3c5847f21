#include "sweep/tagger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "config/config.h"
#include "support/expect_error.h"
#include "sweep/sweep_test_util.h"

namespace sweepbench {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using testing::plan_text;

const char* const kTiny =
    "base:\n  model.preset: gpt2-tiny\n  train: {steps: 4, warmup_steps: 1}\n";

TEST(ReadableTags, ShowTheVaryingKeysWorldSizeAndHash) {
  Plan plan = plan_text(std::string(kTiny) +
                        "axes:\n  train.micro_batch: [2, 4]\n  data.seq_len: [32, 64]\n");
  ASSERT_EQ(plan.points().size(), 4u);
  for (const SweepPoint& p : plan.points()) {
    std::string expected = "micro_batch=" + testing::at(plan, p.index, "train.micro_batch") +
                           ".seq_len=" + testing::at(plan, p.index, "data.seq_len") + ".ws=1." +
                           p.config_hash.substr(0, 8);
    EXPECT_EQ(p.tag, expected);
  }
}

TEST(ReadableTags, NoVaryingKeysLeavesWorldSizeAndHash) {
  Plan plan = plan_text(std::string(kTiny) + "axes:\n  launch.ranks: [1, 2]\n");
  EXPECT_EQ(plan.points()[0].tag, "ws=1." + plan.points()[0].config_hash.substr(0, 8));
  EXPECT_EQ(plan.points()[1].tag, "ws=2." + plan.points()[1].config_hash.substr(0, 8));
}

TEST(ReadableTags, AmbiguousLeafNamesKeepTheirSection) {
  Plan plan = plan_text(std::string(kTiny) +
                        "zip:\n  - {train.micro_batch: [2, 4], eval.micro_batch: [1, 3]}\n");
  EXPECT_THAT(plan.points()[0].tag,
              MatchesRegex("train-micro_batch=2\\.eval-micro_batch=1\\.ws=1\\.[0-9a-f]{8}"));
}

TEST(ReadableTags, ScenarioAndRepeatAreShownWhenTheyDistinguishPoints) {
  Plan plan = plan_text(std::string(kTiny) +
                        "repeats: 2\nscenarios:\n  - {name: fast, base: {train.micro_batch: 2}}\n"
                        "  - {name: big, base: {train.micro_batch: 8}}\n");
  ASSERT_EQ(plan.points().size(), 4u);
  EXPECT_THAT(plan.points()[0].tag, MatchesRegex("fast\\.micro_batch=2\\.ws=1\\.[0-9a-f]{8}\\.r0"));
  EXPECT_THAT(plan.points()[1].tag, MatchesRegex("fast\\.micro_batch=2\\.ws=1\\.[0-9a-f]{8}\\.r1"));
  EXPECT_THAT(plan.points()[3].tag, MatchesRegex("big\\.micro_batch=8\\.ws=1\\.[0-9a-f]{8}\\.r1"));
}

// Scenarios that differ in a command's argv and metrics spelled them in the
// tag (`latency.argv=tmp_vllm_venv_bin_vllm+-de2cd967.metrics=...`) and the real axes were cut
// off. The scenario's name stands for long values; without scenarios they come last.
TEST(ReadableTags, AScenariosNameStandsForItsLongValues) {
  const std::string command =
      "base:\n  benchmark: command\n  command: {argv: [x]}\nscenarios:\n"
      "  - {name: latency, base: {command.argv: [/tmp/vllm-venv/bin/vllm, bench, latency, "
      "--input-len, '{params.n}'], launch.setup: [source /opt/a/activate]}}\n"
      "  - {name: throughput, base: {command.argv: [/tmp/vllm-venv/bin/vllm, bench, throughput, "
      "--input-len, '{params.n}']}}\n"
      "axes:\n  params.n: [32, 128]\n  params.batch: [1, 8]\n";
  Plan plan = plan_text(command);
  ASSERT_EQ(plan.points().size(), 8u);
  EXPECT_THAT(plan.points()[0].tag, MatchesRegex("latency\\.n=32\\.batch=1\\.ws=1\\.[0-9a-f]{8}"));
  EXPECT_THAT(plan.points()[7].tag,
              MatchesRegex("throughput\\.n=128\\.batch=8\\.ws=1\\.[0-9a-f]{8}"));
  // No scenarios: a long axis goes after the short ones, so that a cut takes it first.
  Plan plain = plan_text(std::string(kTiny) +
                         "axes:\n  launch.setup: [[module load a/1.0 b/2.0 c/3.0], []]\n"
                         "  train.micro_batch: [2, 4]\n");
  EXPECT_THAT(plain.points()[0].tag, MatchesRegex("micro_batch=2\\.setup=module_load_a_.*"));
  // So does a params entry with a long value (a prompt, a model path).
  Plan prompts = plan_text(std::string(kTiny) +
                           "axes:\n  params.prompt: ['tell me a story about a long tag', hi]\n"
                           "  train.micro_batch: [2, 4]\n");
  EXPECT_THAT(prompts.points()[0].tag, MatchesRegex("micro_batch=2\\.prompt=tell_me_a_story.*"));
}

TEST(ReadableTags, HostileValuesGiveSafeDistinctNames) {
  // Each value is a container image that could break a path or a shell.
  Plan plan = plan_text(
      "base:\n  model.preset: gpt2-tiny\n  train: {steps: 4, warmup_steps: 1}\n"
      "  container.runtime: apptainer\n"
      "axes:\n  container.image:\n"
      "    - ../../x\n"
      "    - $(rm -rf ~)\n"
      "    - \"; rm -rf ~; \"\n"
      "    - \"`touch /tmp/pwned`\"\n"
      "    - \"with spaces and\\nnewline\"\n"
      "    - \"caf\\u00e9-\\u00fcber-\\u6f22\\u5b57\"\n"
      "    - \".hidden\"\n"
      "    - \"-rf\"\n"
      "    - \"..\"\n"
      "    - \"\"\n"
      "    - \"" +
      std::string(300, 'y') +
      "\"\n"
      "    - \"" +
      std::string(299, 'y') + "z\"\n");
  std::set<std::string> tags;
  for (const SweepPoint& p : plan.points()) {
    std::string why;
    EXPECT_TRUE(is_safe_tag(p.tag, &why)) << p.tag << ": " << why;
    EXPECT_LE(p.tag.size(), kMaxTagLength);
    EXPECT_EQ(p.tag.find('/'), std::string::npos);
    EXPECT_EQ(p.tag.find(".."), std::string::npos);
    EXPECT_TRUE(tags.insert(p.tag).second) << "duplicate " << p.tag;
  }
  // What a reader sees for the first two.
  EXPECT_THAT(plan.points()[0].tag, MatchesRegex("image=x\\.ws=1\\.[0-9a-f]{8}"));
  EXPECT_THAT(plan.points()[1].tag, MatchesRegex("image=rm_-rf\\.ws=1\\.[0-9a-f]{8}"));
}

TEST(ReadableTags, LongTagsAreCutTo120Characters) {
  std::string axes = "axes:\n";
  for (const char* k : {"container.workdir", "hardware.name", "slurm.partition", "slurm.constraint",
                        "slurm.mem", "data.path"}) {
    axes += std::string("  ") + k + ": [\"" + std::string(40, 'a') + "\", \"" +
            std::string(40, 'b') + "\"]\n";
  }
  Plan plan = plan_text(std::string(kTiny) + axes, PlanOptions{{}, {}, 100});
  for (const SweepPoint& p : plan.points()) {
    EXPECT_LE(p.tag.size(), kMaxTagLength) << p.tag;
    EXPECT_TRUE(is_safe_tag(p.tag)) << p.tag;
    EXPECT_THAT(p.tag, HasSubstr(".ws=1." + p.config_hash.substr(0, 8)));
  }
}

TEST(TagFormat, FillsPlaceholders) {
  Plan plan = plan_text(
      "base:\n  model.preset: gpt2-tiny\n  train: {steps: 4, warmup_steps: 1}\n"
      "  container: {runtime: apptainer, image: img.sif}\n"
      "tag:\n  format: \"{preset}.mb{train.micro_batch}.{container.binds[1]}.{{x}}.{hash}\"\n"
      "axes:\n  train.micro_batch: [2, 4]\n"
      "  container.binds: [[/a:/a, /b:/b], [/a:/a, /c:/c]]\n");
  ASSERT_EQ(plan.points().size(), 4u);
  EXPECT_EQ(plan.points()[0].tag,
            "gpt2-tiny.mb2.b_b.{x}." + plan.points()[0].config_hash.substr(0, 8));
  EXPECT_EQ(plan.points()[3].tag,
            "gpt2-tiny.mb4.c_c.{x}." + plan.points()[3].config_hash.substr(0, 8));
}

TEST(TagFormat, RejectsBadFormats) {
  auto err = [](const std::string& format) {
    return std::string(error_of([&] {
                         plan_text(std::string(kTiny) + "tag:\n  format: \"" + format +
                                   "\"\naxes:\n  train.micro_batch: [2, 4]\n");
                       }).what());
  };
  EXPECT_EQ(err("{preset"),
            "s.yaml:5:11: tag.format: '{' at position 0 has no matching '}' (write {{ for a "
            "literal brace)");
  EXPECT_EQ(err("a}b"),
            "s.yaml:5:11: tag.format: '}' at position 1 has no matching '{' (write }} for a "
            "literal brace)");
  EXPECT_EQ(err("x{}"), "s.yaml:5:11: tag.format: empty placeholder {} at position 1");
  EXPECT_EQ(err("{zeta}.{train.microbatch}.{alpha}.{hash}"),
            "s.yaml:5:11: tag.format: unknown placeholders: alpha, train.microbatch, zeta (a "
            "placeholder is preset, world_size, hash, repeat, scenario, or a config key such as "
            "train.micro_batch or a.b[1])");
  EXPECT_THAT(err("runs/{hash}"), HasSubstr("the character \"/\" cannot be in a directory name"));
  EXPECT_THAT(err(".{hash}"), HasSubstr("cannot be a directory name: it starts with '.'"));
}

TEST(TagFormat, CollisionsNameBothPoints) {
  Error e = error_of([] {
    plan_text(std::string(kTiny) +
              "tag: {format: \"{preset}\"}\naxes:\n  train.micro_batch: [2, 4]\n");
  });
  EXPECT_EQ(std::string(e.what()),
            "s.yaml:4:15: tag: two points get the same tag 'gpt2-tiny': (train.micro_batch=2), and "
            "(train.micro_batch=4) (add {hash} or the keys that vary (train.micro_batch) to "
            "tag.format)");
}

TEST(Fairseq2Tags, ReproduceTheReferenceDictionaryAndHash) {
  // Expected values come from tests/reference/fairseq2_tags.py (Python's own str(), re, sha1).
  Value cfg = parse_yaml(
      "train: {micro_batch: 8, lr: 1.0e-5, dtype: bf16, activation_checkpointing: true, "
      "weight_decay: 0.1}\n"
      "data: {path: null, seq_len: 2048, source: synthetic}\n"
      "container: {binds: [\"/a:/b\", \"/c:/d\"], image: /images/ngc-pytorch-24.02-py3.sif}\n"
      "model: {preset: llama2-7b}\n",
      "f.yaml");
  std::set<std::string> allowed = {
      "train", "micro_batch", "lr",    "dtype", "activation_checkpointing", "data", "seq_len",
      "path",  "container",   "binds", "image"};
  std::map<std::string, std::string> tags = fairseq2_tag_dict("llama2-7b", 8, cfg, allowed);
  std::map<std::string, std::string> expected = {
      {"container.binds[0]", "ab"},    {"container.binds[1]", "cd"},
      {"container.image", "86ad366d"}, {"data.path", "none"},
      {"data.seq_len", "2048"},        {"hash", "9ac609f1"},
      {"preset", "llama2-7b"},         {"train.activation_checkpointing", "t"},
      {"train.dtype", "bf16"},         {"train.lr", "1e-05"},
      {"train.micro_batch", "8"},      {"world_size", "8"}};
  EXPECT_EQ(tags, expected);
  std::map<std::string, std::string> numbers = fairseq2_tag_dict(
      "gpt2", 1, parse_yaml("train: {lr: 1e16, x: 0.0001}", "n.yaml"), {"train", "lr", "x"});
  EXPECT_EQ(numbers.at("train.lr"), "1e+16");
  EXPECT_EQ(numbers.at("train.x"), "0.0001");
  EXPECT_EQ(numbers.at("hash"), "d4f1f3de");
}

TEST(Fairseq2Tags, StringRules) {
  EXPECT_EQ(fairseq2_string_tag("a b/c-d_e"), "abc-d_e");
  EXPECT_EQ(fairseq2_string_tag("abcdefghijklmno"), "abcdefghijklmno");  // 15 kept: as is
  EXPECT_EQ(fairseq2_string_tag("abcdefghijklmnop").size(), 8u);         // 16 kept: hashed
  // Python's \w keeps letters and numbers of every script (fairseq2 gives n_café).
  EXPECT_EQ(fairseq2_string_tag("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(fairseq2_string_tag("cafe\xcc\x81"), "cafe");  // a combining accent (Mn) is no \w
  EXPECT_EQ(fairseq2_string_tag("\xd9\xa3\xc2\xbd\xe4\xb8\xad"),
            "\xd9\xa3\xc2\xbd\xe4\xb8\xad");                    // ٣½中
  EXPECT_EQ(fairseq2_string_tag("ok\xf0\x9f\x99\x82!"), "ok");  // an emoji and '!' are not
  // len() counts characters: 15 Greek letters (30 bytes) stay, 16 are hashed.
  std::string alphas;
  for (int i = 0; i < 15; ++i) alphas += "\xce\xb1";
  EXPECT_EQ(fairseq2_string_tag(alphas), alphas);
  EXPECT_EQ(fairseq2_string_tag(alphas + "\xce\xb1").size(), 8u);
  EXPECT_TRUE(is_safe_tag("n_caf\xc3\xa9.1a2b3c4d"));
  EXPECT_FALSE(is_safe_tag("n_ok\xf0\x9f\x99\x82"));
  EXPECT_FALSE(is_safe_tag("n_\xff"));
}

TEST(Fairseq2Tags, WholeSweepUsesDefaultFormat) {
  Plan plan = plan_text(std::string(kTiny) +
                        "tag:\n  style: fairseq2\n  keys: [train, micro_batch]\n"
                        "axes:\n  train.micro_batch: [2, 4]\n");
  EXPECT_THAT(plan.points()[0].tag, MatchesRegex("ps_gpt2-tiny\\.ws_1\\.[0-9a-f]{8}"));
  EXPECT_NE(plan.points()[0].tag, plan.points()[1].tag);
  Error e = error_of([] {
    plan_text(std::string(kTiny) + "tag: {style: fairseq2}\naxes:\n  train.micro_batch: [2, 4]\n");
  });
  EXPECT_THAT(e.what(), HasSubstr("two points get the same tag"));
  EXPECT_THAT(e.what(),
              HasSubstr("add the names of the keys that vary to tag.keys: [train, micro_batch]"));
  Error bad = error_of([] {
    plan_text(std::string(kTiny) +
              "tag: {style: fairseq2, keys: [train], format: '{train.micro_batch}'}\n");
  });
  EXPECT_THAT(bad.what(), HasSubstr("unknown placeholder: train.micro_batch"));
}

// fairseq2 0.8's rules: every key, no preset, ws_{world_size}.{hash}.
TEST(Fairseq2Tags, Version08EveryKeyNoPreset) {
  Plan plan = plan_text(std::string(kTiny) +
                        "tag: {style: fairseq2-0.8}\naxes:\n  train.micro_batch: [2, 4]\n");
  EXPECT_THAT(plan.points()[0].tag, MatchesRegex("ws_1\\.[0-9a-f]{8}"));
  EXPECT_NE(plan.points()[0].tag,
            plan.points()[1].tag);  // no allow-list: micro_batch is in the hash
  Error keys = error_of(
      [] { plan_text(std::string(kTiny) + "tag: {style: fairseq2-0.8, keys: [train]}\n"); });
  EXPECT_THAT(keys.what(), HasSubstr("tag.keys: does not apply to tag.style fairseq2-0.8"));
  Error preset = error_of([] {
    plan_text(std::string(kTiny) + "tag: {style: fairseq2-0.8, format: 'ps_{preset}.{hash}'}\n");
  });
  EXPECT_THAT(preset.what(), HasSubstr("unknown placeholder: preset"));
  EXPECT_THAT(preset.what(), HasSubstr("fairseq2 0.8 has no preset"));
  Error style = error_of([] { plan_text(std::string(kTiny) + "tag: {style: fairseq3}\n"); });
  EXPECT_THAT(style.what(), HasSubstr("'fairseq3' is not one of readable, fairseq2, fairseq2-0.8"));
}

TEST(SafeTags, Rules) {
  EXPECT_TRUE(is_safe_tag("micro_batch=8.ws=1.abcdef12"));
  EXPECT_TRUE(is_safe_tag("a+b-c_d"));
  EXPECT_FALSE(is_safe_tag(""));
  EXPECT_FALSE(is_safe_tag(".x"));
  EXPECT_FALSE(is_safe_tag("-x"));
  EXPECT_FALSE(is_safe_tag("a..b"));
  EXPECT_FALSE(is_safe_tag("a/b"));
  EXPECT_FALSE(is_safe_tag("a b"));
  EXPECT_FALSE(is_safe_tag(std::string(121, 'a')));
  EXPECT_TRUE(is_safe_tag(std::string(120, 'a')));
}

TEST(TagText, Values) {
  EXPECT_EQ(tag_text(Value::real(3e-4)), "0.0003");
  EXPECT_EQ(tag_text(Value::real(1e-5)), "1e-05");
  EXPECT_EQ(tag_text(Value::boolean(true)), "true");
  EXPECT_EQ(tag_text(Value()), "none");
  EXPECT_EQ(tag_text(Value::string("/scratch/img/ngc-24.02.sif")), "scratch_img_ngc-24.02.sif");
  std::string long_text = tag_text(Value::string(std::string(100, 'q')));
  EXPECT_EQ(long_text.size(), 32u);
  EXPECT_NE(long_text, tag_text(Value::string(std::string(101, 'q'))));
}

}  // namespace
}  // namespace sweepbench
