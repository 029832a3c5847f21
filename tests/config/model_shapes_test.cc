// Parameter counts and FLOPs against published figures. The counts for the real presets are the
// numbers Hugging Face's models report (sum of parameter sizes); bench-train's tests check the
// built model against parameter_count() for the tiny presets.
#include "config/model_shapes.h"

#include <gtest/gtest.h>

#include "os/hardware.h"

namespace sweepbench {
namespace {

TEST(ModelShapes, ParameterCountsMatchPublishedModels) {
  const std::pair<const char*, std::int64_t> expected[] = {
      {"gpt2", 124439808},         {"gpt2-medium", 354823168}, {"gpt2-large", 774030080},
      {"gpt2-xl", 1557611200},     {"llama2-7b", 6738415616},  {"llama2-13b", 13015864320},
      {"llama2-70b", 68976648192}, {"llama3-8b", 8030261248},  {"mistral-7b", 7241732096},
  };
  for (const auto& [name, count] : expected) {
    const ModelPreset* p = find_model_preset(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(parameter_count(p->shape), count) << name;
  }
}

TEST(ModelShapes, EveryPresetIsConsistent) {
  for (const ModelPreset& p : model_presets()) {
    EXPECT_EQ(p.shape.n_embd % p.shape.n_head, 0) << p.name;
    EXPECT_EQ(p.shape.n_head % p.shape.n_kv_head, 0) << p.name;
    EXPECT_GT(parameter_count(p.shape), 0) << p.name;
  }
  EXPECT_EQ(find_model_preset("gpt3"), nullptr);
}

TEST(ModelShapes, FlopsPerTokenFollowThePalmConvention) {
  const ModelShape& gpt2 = find_model_preset("gpt2")->shape;
  // N excludes the 1024 x 768 position table: 124,439,808 - 786,432 = 123,653,376.
  EXPECT_EQ(position_embedding_count(gpt2), 786432);
  EXPECT_DOUBLE_EQ(training_flops_per_token_6n(gpt2), 6.0 * 123653376);
  // 6N + 12 L d T at T = 1024: 741,920,256 + 113,246,208.
  EXPECT_DOUBLE_EQ(training_flops_per_token(gpt2, 1024), 855166464.0);
  const ModelShape& llama = find_model_preset("llama2-7b")->shape;
  EXPECT_EQ(position_embedding_count(llama), 0);
  EXPECT_DOUBLE_EQ(training_flops_per_token(llama, 4096),
                   6.0 * 6738415616 + 12.0 * 32 * 4096 * 4096);
}

}  // namespace
}  // namespace sweepbench

namespace sweepbench {
namespace {

TEST(HardwarePeaks, TheConfigWinsThenTheTableForGpusOnly) {
  EXPECT_EQ(peak_bandwidth_gbs_for("NVIDIA H100 80GB HBM3"), 3350.0);
  EXPECT_EQ(peak_bandwidth_gbs_for("NVIDIA H100 PCIe"), 2000.0);
  EXPECT_EQ(peak_bandwidth_gbs_for("NVIDIA A100-SXM4-80GB"), 2039.0);
  EXPECT_EQ(peak_bandwidth_gbs_for("NVIDIA A100-PCIE-40GB"), 1555.0);
  EXPECT_EQ(peak_bandwidth_gbs_for("Intel(R) Xeon(R) Processor"), std::nullopt);
  DevicePeak configured = resolve_peak(123.0, true, 3350.0);
  EXPECT_EQ(configured.value, 123.0);
  EXPECT_EQ(configured.source, "config");
  DevicePeak table = resolve_peak(std::nullopt, true, 3350.0);
  EXPECT_EQ(table.source, "table");
  // A CPU whose name happens to hold a GPU's ("... L4 ...") never takes the GPU table's value.
  DevicePeak cpu = resolve_peak(std::nullopt, false, peak_bandwidth_gbs_for("AMD EPYC L4 cpu"));
  EXPECT_EQ(cpu.source, "none");
  EXPECT_EQ(cpu.value, 0.0);
}

}  // namespace
}  // namespace sweepbench
