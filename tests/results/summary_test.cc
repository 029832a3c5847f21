// The training summary's arithmetic that the memory and parallelism knobs change: the model-state
// accounting (docs/metrics.md) and the tokens of a step with tensor parallelism.
#include "results/summary.h"

#include <gtest/gtest.h>

#include <string>

#include "results/rank_result.h"

namespace sweepbench {
namespace {

TEST(ModelStates, EveryStageAsTheZeroPaperCountsFp32Training) {
  const double psi = 1000, n = 4;
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 4, 0), 16 * psi);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 4, 1), 8 * psi + 12 * psi / n);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 4, 2), 4 * psi + 12 * psi / n);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 4, 3), 16 * psi / n);
  // One rank has nothing to shard.
  for (int stage = 0; stage <= 3; ++stage)
    EXPECT_DOUBLE_EQ(model_states_bytes(psi, 1, stage), 16 * psi);
}

TEST(ModelStates, FrozenWeightsCountFourBytesAndOffloadTakesTheMoments) {
  const double psi = 1000, adapters = 10;
  // LoRA: 4 bytes per frozen weight everywhere, the stage's accounting for the adapters.
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 0, adapters), 4 * (psi - adapters) + 16 * adapters);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 2, adapters),
                   4 * (psi - adapters) + adapters * (4 + 12.0 / 2));
  // Offloaded moments (8 bytes per trainable parameter, sharded from stage 1) leave the device.
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 0, 0, true), 8 * psi);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 1, 0, true), 8 * psi + 4 * psi / 2);
  EXPECT_DOUBLE_EQ(model_states_bytes(psi, 2, 3, 0, true), 8 * psi / 2);
}

double metric(const std::vector<Metric>& metrics, const std::string& name) {
  for (const Metric& m : metrics) {
    if (m.name == name) return m.value;
  }
  ADD_FAILURE() << name << " missing";
  return 0;
}

TEST(RunDescription, TensorParallelGroupsAreReplicasAndTheAccountingIsARanksPart) {
  RankResult lead;
  lead.world_size = 8;
  lead.tensor_parallel = 2;
  lead.micro_batch = 4;
  lead.seq_len = 128;
  lead.grad_accum = 2;
  lead.parameter_count = 1000;
  lead.rank_parameters = 600;  // half of the split projections and all the rest
  lead.zero_stage = 1;
  SummaryInput in;
  fill_run_description(in, lead);
  in.step_s = {2.0, 2.0};
  EXPECT_DOUBLE_EQ(in.tokens_per_step, 4.0 * 128 * 2 * 4);  // 4 replicas, not 8 ranks
  EXPECT_DOUBLE_EQ(in.samples_per_step, 4.0 * 2 * 4);
  std::vector<Metric> m = summarize(in);
  EXPECT_DOUBLE_EQ(metric(m, "train_tokens_per_second"), 4.0 * 128 * 2 * 4 / 2.0);
  // The rank's 600 parameters, ZeRO-1 over the 4 data-parallel ranks.
  EXPECT_DOUBLE_EQ(metric(m, "mem_model_states_bytes"), 600 * (8 + 12.0 / 4));
  EXPECT_DOUBLE_EQ(metric(m, "trainable_parameters"), 1000);
}

TEST(RunDescription, OlderFilesWithoutTheNewAttributesMeanNoneOfTheKnobs) {
  RankResult lead;  // tensor_parallel 1, rank_parameters 0, trainable 0, offload 0 by default
  lead.world_size = 2;
  lead.micro_batch = 1;
  lead.seq_len = 10;
  lead.grad_accum = 1;
  lead.parameter_count = 100;
  SummaryInput in;
  fill_run_description(in, lead);
  in.step_s = {1.0};
  std::vector<Metric> m = summarize(in);
  EXPECT_DOUBLE_EQ(in.tokens_per_step, 20);
  EXPECT_DOUBLE_EQ(metric(m, "mem_model_states_bytes"), 16 * 100);
  EXPECT_DOUBLE_EQ(metric(m, "trainable_parameters"), 100);
}

}  // namespace
}  // namespace sweepbench
