// config/settings.h: a resolved config read once into typed settings, by the schema's table.
#include "config/settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "config/config.h"
#include "config/schema.h"
#include "config/yaml_io.h"

namespace sweepbench {
namespace {

Settings of(const std::string& yaml) {
  return Settings::of(resolve_config(normalize_partial_config(parse_yaml(yaml, "t.yaml"))));
}

TEST(Settings, DefaultsAreTheSchemas) {
  Settings s = of("{}");
  EXPECT_EQ(s.benchmark, "train");
  EXPECT_EQ(s.train.dtype, DType::kFp32);
  EXPECT_EQ(s.launch.device, Device::kAuto);
  EXPECT_EQ(s.data.source, DataSource::kSynthetic);
  EXPECT_EQ(s.data.token_dtype, TokenDType::kUint16);
  EXPECT_EQ(s.launch.launcher, "auto");
  EXPECT_EQ(s.container.runtime, "none");
  EXPECT_FALSE(s.container.workdir.has_value());
  EXPECT_FALSE(s.launch.cpus_per_rank.has_value());
  EXPECT_FALSE(s.hardware.peak_tflops.has_value());
  EXPECT_EQ(s.train.steps, 50);
  EXPECT_EQ(s.eval.micro_batch, s.train.micro_batch);  // derived
  EXPECT_TRUE(s.slurm.exclusive);
}

TEST(Settings, EveryChoiceIsAnEnumAndNullsAreOptional) {
  Settings s =
      of("train: {dtype: bf16, steps: 7, warmup_steps: 2, lr: 0.5, seed: 9}\n"
         "launch: {device: cpu, ranks: 4, nodes: 2, cpus_per_rank: 3, env: {A: b}}\n"
         "data: {source: text, path: /d.txt, token_dtype: uint32, seq_len: 16}\n"
         "container: {runtime: podman, image: img, workdir: /w, binds: [/a:/b]}\n"
         "slurm: {time: 90, partition: gpu, extra_args: [--gres=gpu:8]}\n"
         "hardware: {peak_tflops: 312, price_per_hour: 2.5}\n");
  EXPECT_EQ(s.train.dtype, DType::kBf16);
  EXPECT_EQ(to_string(s.train.dtype), "bf16");
  EXPECT_EQ(s.train.steps, 7);
  EXPECT_EQ(s.train.seed, 9u);
  EXPECT_EQ(s.launch.device, Device::kCpu);
  EXPECT_EQ(s.launch.ranks, 4);
  EXPECT_EQ(*s.launch.cpus_per_rank, 3);
  EXPECT_EQ(s.launch.env.at("A"), "b");
  EXPECT_EQ(s.data.source, DataSource::kText);
  EXPECT_EQ(*s.data.path, "/d.txt");
  EXPECT_EQ(s.data.token_dtype, TokenDType::kUint32);
  EXPECT_EQ(s.container.runtime, "podman");
  EXPECT_EQ(*s.container.workdir, "/w");
  EXPECT_EQ(s.container.binds, std::vector<std::string>{"/a:/b"});
  EXPECT_EQ(*s.slurm.time, "90");
  EXPECT_EQ(*s.slurm.partition, "gpu");
  EXPECT_EQ(s.slurm.extra_args, std::vector<std::string>{"--gres=gpu:8"});
  EXPECT_DOUBLE_EQ(*s.hardware.peak_tflops, 312);
  EXPECT_EQ(to_string(Device::kCuda), "cuda");
  EXPECT_EQ(to_string(DataSource::kTokens), "tokens");
}

TEST(Settings, EnumChoicesAreTheEnumsNamesInOrder) {
  // One list per enum gives the schema's choices, to_string and the reading of a config.
  const Schema& schema = Schema::get();
  EXPECT_EQ(schema.find("train.dtype")->choices, names_of<DType>());
  EXPECT_EQ(schema.find("infer.dtype")->choices, names_of<DType>());
  EXPECT_EQ(schema.find("infer.kv_cache")->choices, names_of<KvCache>());
  EXPECT_EQ(schema.find("launch.exclusive")->choices, names_of<Exclusive>());
  EXPECT_EQ(schema.find("train.peft")->choices, names_of<Peft>());
  // Each enumerator's own name, pinned: a swap within a list would pass the checks above.
  EXPECT_EQ(names_of<DType>(), (std::vector<std::string>{"fp32", "bf16", "fp16"}));
  EXPECT_EQ(to_string(DType::kBf16), "bf16");
  EXPECT_EQ(to_string(Device::kCpu), "cpu");
  EXPECT_EQ(to_string(Device::kCuda), "cuda");
  EXPECT_EQ(enum_name(Exclusive::kNode), "node");
  EXPECT_EQ(enum_name(Exclusive::kShared), "shared");
  EXPECT_EQ(to_string(DataSource::kTokens), "tokens");
  EXPECT_EQ(to_string(DataSource::kText), "text");
  EXPECT_EQ(to_string(TokenDType::kUint32), "uint32");
  EXPECT_EQ(enum_name(Peft::kLora), "lora");
  EXPECT_EQ(to_string(KvCache::kDynamic), "dynamic");
  EXPECT_EQ(to_string(KvCache::kNone), "none");
  for (size_t i = 0; i < names_of<KvCache>().size(); ++i) {
    const KvCache k = static_cast<KvCache>(i);
    EXPECT_EQ(of("benchmark: infer\ninfer: {kv_cache: " + to_string(k) + "}").infer.kv_cache, k);
  }
}

// A value of the key's type other than its default.
Value other_value(const KeySpec& key) {
  const Value& d = key.default_value;
  if (key.path == "metrics.profile_steps") return Value::string("2-4");  // text of a step range
  switch (key.type) {
    case KeyType::kInt:
      return Value::integer(d.is_null() ? 3 : d.as_int() + 1);
    case KeyType::kFloat:
      return Value::real(d.is_null() || d.as_float() == 0 ? 0.25 : d.as_float() / 2);
    case KeyType::kBool:
      return Value::boolean(!d.as_bool());
    case KeyType::kSlurmTime:
      return Value::string("7");
    case KeyType::kString:
      return Value::string("x");
    case KeyType::kEnum:
      for (const std::string& c : key.choices) {
        if (d.is_null() || c != d.as_string()) return Value::string(c);
      }
      break;
    case KeyType::kStringList: {
      Value v = Value::list();
      v.items().push_back(Value::string("x"));
      return v;
    }
    case KeyType::kNumberList: {
      Value v = Value::list();
      v.items().push_back(Value::integer(3));
      return v;
    }
    case KeyType::kStringMap: {
      Value v = Value::map();
      v.set("X", Value::string("y"));
      return v;
    }
    default:
      break;
  }
  return Value::null();
}

TEST(Settings, EveryKeyWithAFieldIsReadIntoItsOwn) {
  // Each key the table binds, set away from its default alone, reads back as set from the typed
  // settings, and every other key still reads its default: no two keys share a field, none is
  // lost or converted wrongly on the way.
  const Schema& schema = Schema::get();
  const Value config = resolve_config(Value::map());
  const Settings& base = Settings::of(config);
  int checked = 0;
  for (const KeySpec& key : schema.keys()) {
    if (!key.write) continue;
    const Value changed = other_value(key);
    ASSERT_FALSE(changed.is_null()) << key.path << ": a bound key of a type this test cannot vary";
    Settings s = base;
    key.read(s, changed, config);
    EXPECT_TRUE(key.write(s) == changed) << key.path << ": " << key.write(s).describe();
    for (const KeySpec& other : schema.keys()) {
      if (other.write && &other != &key) {
        EXPECT_TRUE(other.write(s) == other.write(base)) << key.path << " wrote " << other.path;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 85);
}

TEST(Settings, EveryBoundKeyReadsItsResolvedDefault) {
  const Value config = resolve_config(Value::map());
  const Settings& s = Settings::defaults();
  for (const KeySpec& key : Schema::get().keys()) {
    if (!key.write) continue;
    Value expected = config_at(config, key.path);
    // Two nulls the settings hold as empty: no image, and the device's own profile activities.
    if (key.path == "container.image" && expected.is_null()) expected = Value::string("");
    if (key.type == KeyType::kStringList && expected.is_null()) expected = Value::list();
    EXPECT_TRUE(key.write(s) == expected) << key.path << ": " << key.write(s).describe();
  }
}

TEST(Settings, TrainerDefaultsAreTheSchemas) {
  const TrainSettings& t = Settings::defaults().train;
  const Schema& schema = Schema::get();
  EXPECT_DOUBLE_EQ(t.beta1, schema.find("train.beta1")->default_value.as_float());
  EXPECT_DOUBLE_EQ(t.bucket_mb, schema.find("train.bucket_mb")->default_value.as_float());
  EXPECT_EQ(t.seed, static_cast<std::uint64_t>(schema.find("train.seed")->default_value.as_int()));
  EXPECT_TRUE(t.cpu_kernels);
  EXPECT_FALSE(t.lora());
}

TEST(Settings, DerivedAndParsedFieldsAreReadFromTheWholeConfig) {
  Settings s =
      of("model: {preset: llama-tiny}\ntrain: {peft: lora}\nmetrics: {profile_steps: 3-5}");
  EXPECT_TRUE(s.train.lora());
  EXPECT_EQ(s.train.lora_targets, default_lora_targets("llama"));
  ASSERT_TRUE(s.metrics.profile_steps.has_value());
  EXPECT_EQ(s.metrics.profile_steps->first, 3);
  EXPECT_EQ(s.metrics.profile_steps->second, 5);
  EXPECT_FALSE(of("{}").metrics.profile_steps.has_value());
}

}  // namespace
}  // namespace sweepbench
