// core/settings.h: a resolved config read once into typed settings (issue 15).
#include "core/settings.h"

#include <gtest/gtest.h>

#include "core/config.h"
#include "core/yaml_io.h"

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

}  // namespace
}  // namespace sweepbench
