#include "config/schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/yaml_io.h"
#include "support/expect_error.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

Value yaml_value(const std::string& text) { return *parse_yaml("v: " + text, "s.yaml").find("v"); }

TEST(Schema, HasEveryKeyLaterIssuesDependOn) {
  for (const char* key : {"model.preset",
                          "model.n_layer",
                          "model.n_embd",
                          "model.n_head",
                          "model.n_kv_head",
                          "model.ffn_dim",
                          "model.vocab_size",
                          "model.block_size",
                          "data.source",
                          "data.path",
                          "data.seq_len",
                          "train.steps",
                          "train.warmup_steps",
                          "train.micro_batch",
                          "train.grad_accum",
                          "train.dtype",
                          "train.lr",
                          "train.seed",
                          "train.activation_checkpointing",
                          "eval.steps",
                          "launch.ranks",
                          "launch.nodes",
                          "launch.gpus_per_rank",
                          "container.runtime",
                          "container.image",
                          "slurm.partition",
                          "slurm.time",
                          "hardware.peak_tflops",
                          "hardware.price_per_hour"}) {
    EXPECT_NE(Schema::get().find(key), nullptr) << key;
  }
  EXPECT_EQ(
      Schema::get().sections(),
      (std::vector<std::string>{"model", "data", "train", "lora", "eval", "infer", "command",
                                "serve", "launch", "metrics", "container", "slurm", "hardware"}));
  const KeySpec* source = Schema::get().find("data.source");
  EXPECT_EQ(source->choices, (std::vector<std::string>{"synthetic", "tokens", "text"}));
  EXPECT_EQ(Schema::get().find("train.dtype")->choices,
            (std::vector<std::string>{"fp32", "bf16", "fp16"}));
}

TEST(Schema, EveryKeyIsDocumentedInDocsConfigMd) {
  std::string doc = testing::read_text(testing::source_dir() + "/docs/config.md");
  for (const KeySpec& k : Schema::get().keys()) {
    EXPECT_THAT(doc, HasSubstr("`" + k.path + "`")) << k.path << " is missing from docs/config.md";
    EXPECT_FALSE(k.description.empty()) << k.path;
  }
}

TEST(Schema, OnlySchedulingKeysAreLeftOutOfTheHash) {
  std::vector<std::string> unhashed;
  for (const KeySpec& k : Schema::get().keys()) {
    if (!k.hashed) unhashed.push_back(k.path);
  }
  EXPECT_EQ(unhashed, (std::vector<std::string>{"command.predict_as",
                                                "serve.host",
                                                "serve.port",
                                                "serve.slurm_step",
                                                "serve.ready.path",
                                                "serve.ready.log",
                                                "serve.ready.timeout_s",
                                                "serve.stop_grace_s",
                                                "launch.exclusive",
                                                "slurm.time",
                                                "slurm.account",
                                                "slurm.qos",
                                                "slurm.max_requeue",
                                                "slurm.signal_seconds",
                                                "slurm.job_name",
                                                "slurm.mail_type",
                                                "slurm.mail_user",
                                                "hardware.peak_tflops",
                                                "hardware.peak_bandwidth_gbs",
                                                "hardware.price_per_hour",
                                                "hardware.assumed_mfu",
                                                "hardware.link_bandwidth_gbs"}));
}

TEST(SchemaCoerce, IntegersBecomeFloatsForFloatKeys) {
  const Schema& s = Schema::get();
  Value v = s.coerce(*s.find("train.lr"), yaml_value("1"));
  EXPECT_TRUE(v.is_float());
  EXPECT_DOUBLE_EQ(v.as_float(), 1.0);
}

TEST(SchemaCoerce, ExplainsWrongTypesAndRanges) {
  const Schema& s = Schema::get();
  auto coerce = [&](const char* key, const char* text) {
    return std::string(error_of([&] { s.coerce(*s.find(key), yaml_value(text)); }).what());
  };
  EXPECT_EQ(coerce("train.micro_batch", "0"),
            "s.yaml:1:4: train.micro_batch: must be in [1, 1048576], got integer 0");
  EXPECT_EQ(
      coerce("train.micro_batch", "eight"),
      "s.yaml:1:4: train.micro_batch: expected integer in [1, 1048576], got the string \"eight\"");
  EXPECT_EQ(coerce("train.micro_batch", "8.0"),
            "s.yaml:1:4: train.micro_batch: expected an integer, got the float 8.0 (write it "
            "without a decimal point)");
  EXPECT_EQ(coerce("train.lr", "0"), "s.yaml:1:4: train.lr: must be > 0, got integer 0");
  EXPECT_EQ(
      coerce("train.dtype", "bf61"),
      "s.yaml:1:4: train.dtype: 'bf61' is not one of fp32, bf16, fp16 (did you mean 'bf16'?)");
  EXPECT_EQ(coerce("container.image", "24.02"),
            "s.yaml:1:4: container.image: expected a string, got the float 24.02 (quote it to make "
            "it a string)");
  EXPECT_EQ(coerce("train.steps", "null"),
            "s.yaml:1:4: train.steps: must not be null; expected integer >= 1");
  EXPECT_THAT(coerce("container.binds", "[a, 1]"), HasSubstr("an item is the integer 1"));
  EXPECT_THAT(coerce("train.lr", ".inf"), HasSubstr("must be a finite number"));
  EXPECT_THAT(coerce("data.eval_fraction", "0.7"), HasSubstr("must be in [0, 0.5]"));
}

TEST(SchemaCoerce, SlurmTimes) {
  const Schema& s = Schema::get();
  const KeySpec& time = *s.find("slurm.time");
  EXPECT_EQ(s.coerce(time, yaml_value("30")).as_string(), "30");
  for (const char* ok : {"\"00:30:00\"", "1-00:00", "2-12", "90:00", "UNLIMITED"}) {
    EXPECT_TRUE(s.coerce(time, yaml_value(ok)).is_string()) << ok;
  }
  EXPECT_THAT(error_of([&] { s.coerce(time, yaml_value("soon")); }).what(),
              HasSubstr("'soon' is not a SLURM time"));
}

TEST(SchemaLookup, FindsSectionsKeysAndMapEntries) {
  const Schema& s = Schema::get();
  EXPECT_EQ(s.lookup("train").kind, Schema::Lookup::Kind::kSection);
  EXPECT_EQ(s.lookup("train.lr").kind, Schema::Lookup::Kind::kKey);
  Schema::Lookup env = s.lookup("launch.env.OMP_NUM_THREADS");
  EXPECT_EQ(env.kind, Schema::Lookup::Kind::kMapEntry);
  EXPECT_EQ(env.entry, "OMP_NUM_THREADS");
  EXPECT_EQ(s.lookup("train.nope").kind, Schema::Lookup::Kind::kNone);
}

TEST(SchemaLookup, UnknownKeysSuggestTheClosest) {
  const Schema& s = Schema::get();
  EXPECT_EQ(std::string(s.unknown_key("train.microbatch", Mark::in("x.yaml", 3, 5)).what()),
            "x.yaml:3:5: unknown key 'train.microbatch' (did you mean 'train.micro_batch'?)");
  EXPECT_EQ(std::string(s.unknown_key("trian", Mark{}).what()),
            "unknown key 'trian' (did you mean 'train'?)");
  // A bare leaf name finds its section.
  EXPECT_THAT(s.unknown_key("microbatch", Mark{}).what(),
              HasSubstr("did you mean 'train.micro_batch'?"));
  EXPECT_THAT(s.unknown_key("zzzzzzzzzz.qqqq", Mark{}).what(), HasSubstr("bench-sweep keys"));
}

}  // namespace
}  // namespace sweepbench
