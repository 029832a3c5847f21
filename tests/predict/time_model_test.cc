// The time model's arithmetic (docs/metrics.md, "Predicted time and cost"), term by term, worked
// by hand; tests/postprocess/test_time_estimate.py checks its calibration against real runs.
#include "predict/time_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "config/config.h"
#include "config/model_shapes.h"
#include "config/yaml_io.h"
#include "metrics/statistics.h"
#include "predict/memory_model.h"

namespace sweepbench {
namespace {

ModelShape gpt2() { return find_model_preset("gpt2")->shape; }

TimeInput h100_training() {
  TimeInput in;
  in.benchmark = "train";
  in.shape = gpt2();
  in.dtype = "bf16";
  in.gpu = true;
  in.hardware_name = "H100";
  in.micro_batch = 8;
  in.seq_len = 1024;
  in.steps = 100;
  return in;
}

Value resolved(const std::string& yaml) {
  return resolve_config(normalize_partial_config(parse_yaml(yaml, "t.yaml")));
}

TEST(TimeModel, AGpuStepIsItsWorkAtTheMeasuredMfuOrItsLaunches) {
  const TimeInput in = h100_training();
  const TimeConstants& k = time_constants();
  const TimePrediction p = predict_time(in);
  ASSERT_TRUE(p.known) << p.missing;
  const double flops = 8 * 1024 * training_flops_per_token(gpt2(), 1024);
  EXPECT_DOUBLE_EQ(p.flops, flops);
  EXPECT_DOUBLE_EQ(p.compute_s, flops / (989.4e12 * k.gpu_mfu));
  // AdamW's 28 bytes a value and the norm's 4, at the share of the H100's 3.35 TB/s.
  const double n = static_cast<double>(parameter_count(gpt2()));
  EXPECT_DOUBLE_EQ(p.optimizer_s, 32 * n / (3350e9 * k.gpu_bandwidth_share));
  // The CPU launches 12 layers' kernels; the step is the smooth maximum of that and the work.
  const double work = p.compute_s + p.optimizer_s;
  const double launches = 12 * k.gpu_train_layer_s;
  EXPECT_NEAR(p.step_s, std::sqrt(work * work + launches * launches), 1e-12);
  EXPECT_GT(p.overhead_s, 0);
  EXPECT_LT(p.overhead_s, launches);
  // One GPU: no communication.
  EXPECT_EQ(p.comm_s, 0);
  EXPECT_DOUBLE_EQ(p.tokens_per_second, 8 * 1024 / p.step_s);
  // The start-up: a fixed part and a part a parameter (n, GPT-2 124M's).
  EXPECT_DOUBLE_EQ(p.startup_s, k.gpu_startup_train_s + n * k.gpu_startup_train_per_value_s);
  EXPECT_DOUBLE_EQ(p.run_s, p.startup_s + 100 * p.step_s);
  EXPECT_DOUBLE_EQ(p.device_hours, p.run_s / 3600);
  EXPECT_FALSE(p.cost_usd.has_value());
  EXPECT_NE(p.rate.find("H100 bf16 peak 989.4 TFLOPS x MFU 0.26 (measured)"), std::string::npos)
      << p.rate;

  // A small step is bound by its launches: a quarter of the tokens is not a quarter of the time.
  TimeInput small = in;
  small.micro_batch = 4;
  small.seq_len = 512;
  const TimePrediction q = predict_time(small);
  EXPECT_LT(q.compute_s, p.compute_s / 4);
  EXPECT_GT(q.step_s, launches);
  EXPECT_GT(q.step_s, p.step_s / 2);

  // A wider model's matrix products run nearer the peak: 26% to width 768, 33% from 1024,
  // linearly between (896: half way).
  for (const auto& [width, mfu] :
       {std::pair{512, 0.26}, {768, 0.26}, {896, 0.295}, {1024, 0.33}, {2048, 0.33}}) {
    TimeInput w = in;
    w.shape.n_embd = width;
    const TimePrediction at_width = predict_time(w);
    EXPECT_NEAR(at_width.compute_s, at_width.flops / (989.4e12 * mfu), 1e-15) << width;
  }

  // fp32 runs on the fp32 peak (no TF32) at its own measured share.
  TimeInput fp32 = in;
  fp32.dtype = "fp32";
  EXPECT_DOUBLE_EQ(predict_time(fp32).compute_s, flops / (67.0e12 * k.gpu_mfu_fp32));

  // The chunked loss's passes over the logits, on a GPU: bytes a logit at the bandwidth.
  TimeInput fused = in;
  fused.fused_loss = true;
  EXPECT_DOUBLE_EQ(predict_time(fused).compute_s,
                   p.compute_s + 8 * 1024 * 50257 * k.gpu_fused_loss_bytes_per_logit /
                                     (3350e9 * k.gpu_bandwidth_share));
}

TEST(TimeModel, AssumedMfuPriceAndDevices) {
  TimeInput in = h100_training();
  in.assumed_mfu = 0.5;
  in.price_per_hour = 2.0;
  in.ranks = 8;
  const TimePrediction p = predict_time(in);
  EXPECT_DOUBLE_EQ(p.compute_s, p.flops / (989.4e12 * 0.5));
  EXPECT_DOUBLE_EQ(p.devices, 8);
  EXPECT_DOUBLE_EQ(p.device_hours, p.run_s * 8 / 3600);
  ASSERT_TRUE(p.cost_usd.has_value());
  EXPECT_DOUBLE_EQ(*p.cost_usd, p.device_hours * 2.0);
  // Eight ranks each train their micro batch.
  EXPECT_DOUBLE_EQ(p.tokens_per_second, 8 * 8 * 1024 / p.step_s);
}

TEST(TimeModel, CheckpointingRunsTheBlocksForwardAgain) {
  TimeInput in = h100_training();
  const double plain = predict_time(in).flops;
  in.activation_checkpointing = true;
  // The blocks (qkv, projection, MLP with biases, two LayerNorms) and the final LayerNorm.
  const double body =
      12.0 * (768 * 3 * 768 + 3 * 768 + 768 * 768 + 768 + 2 * 768 * 3072 + 3072 + 768 + 4 * 768) +
      2 * 768;
  EXPECT_DOUBLE_EQ(predict_time(in).flops, plain + 8 * 1024 * (2 * body + 4 * 12 * 768 * 1024.0));
}

TEST(TimeModel, ZeroStagesCommunicateWhatTheyShard) {
  TimeInput in = h100_training();
  in.ranks = 4;
  const double psi = static_cast<double>(parameter_count(gpt2()));
  const double share = 3.0 / 4;
  in.zero_stage = 0;
  EXPECT_DOUBLE_EQ(predict_time(in).comm_bytes, 2 * share * 4 * psi);
  in.zero_stage = 1;
  EXPECT_DOUBLE_EQ(predict_time(in).comm_bytes, 2 * share * 4 * psi);
  in.grad_accum = 2;
  in.zero_stage = 2;  // a reduce-scatter each micro step, one all-gather
  EXPECT_DOUBLE_EQ(predict_time(in).comm_bytes, 3 * share * 4 * psi);
  // Stage 3: two gathers and a reduce-scatter of each block each micro step; the root unit
  // (embeddings, final norm) gathered once a step, reduce-scattered each micro step.
  in.zero_stage = 3;
  const double root = 50257 * 768 + 1024 * 768 + 2 * 768;
  EXPECT_DOUBLE_EQ(predict_time(in).comm_bytes,
                   share * 4 * (2 * 3 * (psi - root) + (2 + 1) * root));
  // In one node over NVLink (the table's 450 GB/s for an H100); across nodes at 50 GB/s.
  TimePrediction one_node = predict_time(in);
  EXPECT_DOUBLE_EQ(one_node.comm_s, one_node.comm_bytes / 450e9);
  in.nodes = 2;
  TimePrediction two_nodes = predict_time(in);
  EXPECT_DOUBLE_EQ(two_nodes.comm_s, two_nodes.comm_bytes / 50e9);
  in.link_gbs = 10.0;
  EXPECT_DOUBLE_EQ(predict_time(in).comm_s, two_nodes.comm_bytes / 10e9);
  const TimePrediction p = predict_time(in);
  EXPECT_DOUBLE_EQ(p.step_s, p.compute_s + p.optimizer_s + p.overhead_s + p.comm_s);
  // From stage 1 on AdamW updates a quarter of the values (the norm reads every gradient).
  EXPECT_DOUBLE_EQ(p.optimizer_s,
                   (28 * psi / 4 + 4 * psi) / (3350e9 * time_constants().gpu_bandwidth_share));
}

TEST(TimeModel, OverlappedCommunicationHidesBehindTheBackwardOnlyWhereItOverlaps) {
  // train.overlap_comm overlaps ZeRO-2 and -3's collectives with the backward, over MPI (CPUs).
  TimeInput in = h100_training();
  in.gpu = false;
  in.dtype = "fp32";
  in.ranks = 2;
  in.zero_stage = 2;
  in.link_gbs = 0.001;  // slow enough to show
  const TimePrediction plain = predict_time(in);
  in.overlap_comm = true;
  const TimePrediction overlapped = predict_time(in);
  EXPECT_DOUBLE_EQ(overlapped.comm_s, plain.comm_s - plain.compute_s * 2 / 3);
  in.link_gbs = 1e6;  // fast: all hidden
  EXPECT_EQ(predict_time(in).comm_s, 0);
  // Nothing to overlap with at ZeRO-1, nor on a GPU.
  in.link_gbs = 0.001;
  in.zero_stage = 1;
  EXPECT_DOUBLE_EQ(predict_time(in).comm_s, predict_time(in).comm_bytes / 0.001e9);
  in.zero_stage = 2;
  in.gpu = true;
  in.dtype = "bf16";
  EXPECT_DOUBLE_EQ(predict_time(in).comm_s, predict_time(in).comm_bytes / 0.001e9);
}

TEST(TimeModel, TensorParallelismSplitsTheFlopsAndAllReducesActivations) {
  TimeInput in = h100_training();
  in.ranks = 2;
  in.tensor_parallel = 2;
  const TimePrediction p = predict_time(in);
  EXPECT_DOUBLE_EQ(p.flops, 8 * 1024 * training_flops_per_token(gpt2(), 1024) / 2);
  // One data-parallel replica: only Megatron's four all-reduces a block, two forward of bf16
  // products, two backward of the fp32 norms' gradients.
  EXPECT_DOUBLE_EQ(p.comm_bytes, 12 * 2 * 0.5 * 8 * 1024 * 768 * (2 * 2 + 2 * 4));
  // Checkpointing runs the forward's two again.
  in.activation_checkpointing = true;
  EXPECT_DOUBLE_EQ(predict_time(in).comm_bytes, 12 * 2 * 0.5 * 8 * 1024 * 768 * (4 * 2 + 2 * 4));
  in.activation_checkpointing = false;
  // Over MPI (CPUs) the activations travel as fp32, whatever the dtype.
  in.gpu = false;
  EXPECT_DOUBLE_EQ(predict_time(in).comm_bytes, 4 * 12 * 2 * 0.5 * 8 * 1024 * 768 * 4);
  // Four ranks, two replicas: each rank's half of the blocks and the whole embeddings and norms
  // all-reduced over its replica's two ranks as well.
  in.gpu = true;
  in.ranks = 4;
  const RankModel half = rank_model(gpt2(), 2);
  EXPECT_LT(half.parameters, static_cast<double>(parameter_count(gpt2())));
  EXPECT_GT(half.parameters, static_cast<double>(parameter_count(gpt2())) / 2);
  EXPECT_DOUBLE_EQ(predict_time(in).comm_bytes, p.comm_bytes + 2 * 0.5 * 4 * half.parameters);
}

TEST(TimeModel, LoraCountsTheFrozenMatmulsAndTheAdapters) {
  TimeInput in = h100_training();
  in.lora = true;
  in.lora_r = 8;
  in.lora_targets = default_lora_targets("gpt2");
  in.ranks = 2;
  const std::int64_t adapters = lora_parameter_count(gpt2(), 8, in.lora_targets);
  const TimePrediction p = predict_time(in);
  EXPECT_DOUBLE_EQ(p.flops, 8 * 1024 * lora_training_flops_per_token(gpt2(), 1024, adapters));
  // Only the adapters' gradients are reduced.
  EXPECT_DOUBLE_EQ(p.comm_bytes, 2 * 0.5 * 4 * static_cast<double>(adapters));
}

TEST(TimeModel, MeasuringUntilPreciseRunsAtLeastTheFewestTheRuleStopsAt) {
  TimeInput in = h100_training();
  in.steps = 20;
  in.warmup = 5;
  const TimePrediction fixed = predict_time(in);
  in.until_precise = true;
  in.max_seconds = 1e9;
  const TimePrediction precise = predict_time(in);
  // The warm-up and 100 measured steps, not train.steps' 20.
  EXPECT_DOUBLE_EQ(precise.run_s - precise.startup_s,
                   (fixed.run_s - fixed.startup_s) / 20 * (5 + kFewestToStop));
  // A budget spent sooner ends the run sooner, but never before train.steps.
  in.max_seconds = 29.5 * fixed.step_s;  // 30 measured steps spend it
  EXPECT_NEAR(predict_time(in).run_s - fixed.startup_s, 35 * fixed.step_s, 1e-9);
  in.max_seconds = fixed.step_s;
  EXPECT_DOUBLE_EQ(predict_time(in).run_s, fixed.run_s);
  // A generation's timed runs: at least kFewestRunsToStop.
  Value c = resolved(
      "benchmark: infer\nmodel: {preset: gpt2-tiny}\ninfer: {runs: 3, warmup_runs: 1, "
      "input_tokens: 16, output_tokens: 16}\n"
      "metrics: {target_ci: 0.02}\n");
  TimePrediction g;
  ASSERT_TRUE(predict_point_time(c, &g));
  EXPECT_NEAR(g.run_s - g.startup_s, (1 + kFewestRunsToStop) * g.step_s, 1e-12);
}

TEST(TimeModel, ACpuUsesTheReferenceRateOrTheGivenPeak) {
  TimeInput in = h100_training();
  in.gpu = false;
  in.hardware_name.clear();
  in.dtype = "fp32";
  in.cores_per_rank = 4;
  const TimeConstants& k = time_constants();
  TimePrediction p = predict_time(in);
  ASSERT_TRUE(p.known);
  EXPECT_DOUBLE_EQ(p.compute_s, p.flops / (k.cpu_gflops_fp32 * 1e9 * 4));
  // AdamW's 28 bytes a value and the norm's 4, at the CPU's bandwidth.
  const double psi = static_cast<double>(parameter_count(gpt2()));
  EXPECT_DOUBLE_EQ(p.optimizer_s, 32 * psi / (k.cpu_bandwidth_gbs * 1e9));
  EXPECT_DOUBLE_EQ(p.overhead_s, 2 * 13 * k.cpu_layer_s);
  EXPECT_DOUBLE_EQ(p.step_s, p.compute_s + p.optimizer_s + p.overhead_s);
  // 100 steps, 10 evaluation batches (a third of a step's FLOPs and one pass's dispatch each)
  // and the start-up.
  EXPECT_DOUBLE_EQ(p.startup_s, k.cpu_startup_s);
  EXPECT_EQ(p.flops, 8 * 1024 * training_flops_per_token(gpt2(), 1024));
  EXPECT_DOUBLE_EQ(p.run_s, 100 * p.step_s + k.cpu_startup_s);
  in.ranks = 2;
  EXPECT_DOUBLE_EQ(predict_time(in).startup_s, k.cpu_startup_s + k.cpu_startup_mpi_s);
  in.ranks = 1;
  in.peak_tflops = 2.0;
  in.assumed_mfu = 0.5;
  EXPECT_DOUBLE_EQ(predict_time(in).compute_s, p.flops / 1e12);
}

TEST(TimeModel, OffloadOnAGpuUpdatesOnTheHostAfterTheGpusWork) {
  TimeInput in = h100_training();
  const TimePrediction on_device = predict_time(in);
  in.offload_optimizer = true;
  const TimePrediction p = predict_time(in);
  ASSERT_TRUE(p.known) << p.missing;
  const double n = static_cast<double>(parameter_count(gpt2()));
  EXPECT_DOUBLE_EQ(p.optimizer_s, n * time_constants().gpu_offload_s_per_value);
  EXPECT_DOUBLE_EQ(p.compute_s, on_device.compute_s);
  // The launches overlap the GPU's work, not the host's update after it.
  EXPECT_DOUBLE_EQ(p.step_s, p.compute_s + p.overhead_s + p.optimizer_s);
  EXPECT_GT(p.step_s, on_device.step_s);
  // ZeRO shards the update: each of 4 ranks offloads a quarter.
  in.ranks = 4;
  in.zero_stage = 1;
  EXPECT_DOUBLE_EQ(predict_time(in).optimizer_s, n / 4 * time_constants().gpu_offload_s_per_value);
  in.gpu = false;  // on a CPU the moments are in host memory anyway: AdamW's bytes
  EXPECT_DOUBLE_EQ(predict_time(in).optimizer_s,
                   (28 * n / 4 + 4 * n) / (35e9 * std::min(1.0, in.cores_per_rank / 2)));
}

TEST(TimeModel, AGpuWithoutANameIsAnH100AndAnUnknownNameHasNoTime) {
  TimeInput in = h100_training();
  const TimePrediction named = predict_time(in);
  EXPECT_FALSE(named.assumed_gpu);
  in.hardware_name.clear();
  TimePrediction p = predict_time(in);
  ASSERT_TRUE(p.known);
  EXPECT_TRUE(p.assumed_gpu);
  EXPECT_DOUBLE_EQ(p.step_s, named.step_s);
  EXPECT_NE(p.rate.find("assumed"), std::string::npos) << p.rate;
  in.peak_tflops = 100.0;
  EXPECT_FALSE(predict_time(in).assumed_gpu);
  in.hardware_name = "Tesla V100-SXM2-32GB";
  in.peak_tflops.reset();
  p = predict_time(in);  // known, but without a bf16 peak
  EXPECT_FALSE(p.known);
  EXPECT_NE(p.missing.find("has no bf16 peak"), std::string::npos) << p.missing;
  in.peak_tflops = 100.0;
  in.hardware_name = "Some future GPU";
  EXPECT_TRUE(predict_time(in).known);  // its peak is given
  in.peak_tflops.reset();
  p = predict_time(in);
  EXPECT_FALSE(p.known);
  EXPECT_NE(p.missing.find("Some future GPU"), std::string::npos) << p.missing;
}

TEST(TimeModel, DecodeIsTheSlowerOfBytesAndFlopsAndOnAGpuOfLaunching) {
  TimeInput in;
  in.benchmark = "infer";
  in.shape = gpt2();
  in.dtype = "bf16";
  in.gpu = true;
  in.hardware_name = "H200";
  in.sequences = 1;
  in.input_tokens = 128;
  in.output_tokens = 128;
  in.generations = 7;
  const TimePrediction p = predict_time(in);
  ASSERT_TRUE(p.known);
  const InferenceCost c = inference_cost(gpt2(), 1, 128, 128, 2);
  const TimeConstants& k = time_constants();
  const double rate = 989.4e12 * k.gpu_mfu, bandwidth = 4800e9 * 0.8;
  const double decode = std::max(c.decode_flops / rate, c.decode_bytes / bandwidth);
  const double launch = 127 * 12 * k.gpu_decode_layer_gpt2_s;
  ASSERT_GT(launch, decode);  // GPT-2 at batch 1 is launch-bound: as measured
  EXPECT_DOUBLE_EQ(p.step_s, c.prefill_flops / rate + launch + 12 * k.gpu_decode_layer_gpt2_s);
  EXPECT_DOUBLE_EQ(p.tokens_per_second, 128 / p.step_s);
  const double values = static_cast<double>(parameter_count(gpt2()));
  EXPECT_DOUBLE_EQ(p.startup_s, k.gpu_startup_infer_s + values * k.gpu_startup_infer_per_value_s);
  EXPECT_DOUBLE_EQ(p.run_s, p.startup_s + 7 * p.step_s);

  // A configured peak bandwidth moves at the same share as the table's.
  in.bandwidth_gbs = 4800.0;
  EXPECT_DOUBLE_EQ(predict_time(in).step_s, p.step_s);
  in.bandwidth_gbs.reset();

  // Replayed as CUDA graphs, a decode step is its kernels' own time a layer plus its bytes; the
  // prefill is still launched kernel by kernel.
  in.decode_graph = true;
  const TimePrediction graph = predict_time(in);
  EXPECT_DOUBLE_EQ(graph.step_s, c.prefill_flops / rate + 12 * k.gpu_decode_layer_gpt2_s +
                                     127 * 12 * k.gpu_graph_layer_gpt2_s + decode);
  EXPECT_LT(graph.step_s, p.step_s / 2);

  // A Llama block launches more kernels (rotary, RMSNorm's parts, the gated MLP): its own
  // constants, eager and as a graph.
  TimeInput llama = in;
  llama.shape = find_model_preset("llama-tiny")->shape;
  const double layers = static_cast<double>(llama.shape.n_layer);
  const TimePrediction as_graph = predict_time(llama);
  llama.decode_graph = false;
  const TimePrediction eager = predict_time(llama);
  const InferenceCost lc = inference_cost(llama.shape, 1, 128, 128, 2);
  const double ldecode = std::max(lc.decode_flops / rate, lc.decode_bytes / bandwidth);
  ASSERT_LT(ldecode, 127 * layers * k.gpu_decode_layer_llama_s);
  EXPECT_NEAR(eager.step_s, lc.prefill_flops / rate + 128 * layers * k.gpu_decode_layer_llama_s,
              1e-12);
  EXPECT_NEAR(as_graph.step_s,
              lc.prefill_flops / rate + layers * k.gpu_decode_layer_llama_s +
                  127 * layers * k.gpu_graph_layer_llama_s + ldecode,
              1e-12);
  in.decode_graph = false;

  // Without a cache each step runs the sequence so far again: a prefill of 129, 130, ... 255
  // tokens, summed in closed form.
  in.gpu = false;
  in.kv_cache = false;
  const TimePrediction none = predict_time(in);
  double again = 0;
  for (std::int64_t n = 129; n <= 255; ++n)
    again += inference_cost(gpt2(), 1, n, 1, 2).prefill_flops;
  EXPECT_NEAR(none.flops / (c.prefill_flops + again), 1, 1e-12);
  in.kv_cache = true;
  const TimePrediction cached = predict_time(in);
  EXPECT_GT(none.flops, 10 * cached.flops);
  EXPECT_GT(none.step_s, cached.step_s);
}

TEST(TimeModel, ResolvedPointsAndTheirKeys) {
  TimeInput in;
  Value train = resolved(
      "model: {preset: gpt2}\n"
      "train: {micro_batch: 4, steps: 30, zero_stage: 2, grad_accum: 2, dtype: bf16}\n"
      "launch: {ranks: 4, nodes: 2, gpus_per_rank: 1}\n"
      "hardware: {name: H100, assumed_mfu: 0.4, link_bandwidth_gbs: 25, price_per_hour: 3}\n");
  ASSERT_TRUE(time_input_of(train, &in));
  EXPECT_EQ(in.benchmark, "train");
  EXPECT_TRUE(in.gpu);
  EXPECT_EQ(in.hardware_name, "H100");
  EXPECT_EQ(*in.assumed_mfu, 0.4);
  EXPECT_EQ(*in.link_gbs, 25);
  EXPECT_EQ(in.ranks, 4);
  EXPECT_EQ(in.nodes, 2);
  EXPECT_EQ(in.zero_stage, 2);
  EXPECT_EQ(in.grad_accum, 2);
  EXPECT_EQ(in.steps, 30);
  TimePrediction p;
  ASSERT_TRUE(predict_point_time(train, &p));
  ASSERT_TRUE(p.known);
  EXPECT_DOUBLE_EQ(*p.cost_usd, p.device_hours * 3);

  Value infer = resolved(
      "benchmark: infer\nmodel: {preset: gpt2-tiny}\n"
      "infer: {input_tokens: 16, output_tokens: 8, batch_size: 2, num_beams: 3, runs: 4, "
      "warmup_runs: 1}\n");
  ASSERT_TRUE(time_input_of(infer, &in));
  EXPECT_EQ(in.sequences, 6);
  EXPECT_EQ(in.generations, 5);
  EXPECT_FALSE(in.gpu);
  EXPECT_FALSE(in.decode_graph);

  // On a GPU, greedy decoding of one beam with a static cache replays CUDA graphs (unless
  // infer.cuda_graph is off): a model of its own for calibration.
  const std::string gpu_infer =
      "benchmark: infer\nmodel: {preset: gpt2}\nlaunch: {device: cuda, gpus_per_rank: 1}\n"
      "hardware: {name: H200}\ninfer: {input_tokens: 16, output_tokens: 8";
  Value graph = resolved(gpu_infer + "}\n");
  ASSERT_TRUE(time_input_of(graph, &in));
  EXPECT_TRUE(in.decode_graph);
  for (const char* off :
       {", cuda_graph: false", ", num_beams: 2", ", do_sample: true", ", kv_cache: dynamic"}) {
    Value eager = resolved(gpu_infer + off + "}\n");
    ASSERT_TRUE(time_input_of(eager, &in));
    EXPECT_FALSE(in.decode_graph) << off;
    if (std::string(off) == ", cuda_graph: false") {
      EXPECT_NE(time_model_key(graph), time_model_key(eager));
    }
  }

  // The key: same model, dtype and device; batch, ZeRO and steps do not count.
  Value other = resolved(
      "model: {preset: gpt2}\ntrain: {micro_batch: 1, zero_stage: 0, dtype: bf16}\n"
      "launch: {ranks: 4, nodes: 2, gpus_per_rank: 1}\nhardware: {name: H100}\n");
  EXPECT_EQ(time_model_key(train), time_model_key(other));
  Value fp32 = resolved(
      "model: {preset: gpt2}\ntrain: {dtype: fp32}\n"
      "launch: {ranks: 4, nodes: 2, gpus_per_rank: 1}\nhardware: {name: H100}\n");
  EXPECT_NE(time_model_key(train), time_model_key(fp32));
  EXPECT_NE(time_model_key(train), time_model_key(infer));
  EXPECT_EQ(time_model_key(resolved("benchmark: command\ncommand: {argv: ['true']}\n")), "");
}

TEST(TimeModel, ACommandPointDeclaringItsShapeIsPredictedAsOne) {
  const std::string shape =
      "model: {preset: gpt2-tiny}\ntrain: {micro_batch: 4, dtype: bf16}\ndata: {seq_len: 64}\n";
  Value train = resolved(shape);
  Value command = resolved(shape +
                           "benchmark: command\n"
                           "command: {argv: [python3, train.py], predict_as: train}\n");
  Value silent = resolved(shape + "benchmark: command\ncommand: {argv: [python3, train.py]}\n");
  EXPECT_EQ(predicted_benchmark(train), "train");
  EXPECT_EQ(predicted_benchmark(command), "train");
  EXPECT_EQ(predicted_benchmark(silent), "");
  TimePrediction a, b;
  ASSERT_TRUE(predict_point_time(train, &a));
  ASSERT_TRUE(predict_point_time(command, &b));
  EXPECT_EQ(a.step_s, b.step_s);
  EXPECT_EQ(a.flops, b.flops);
  EXPECT_EQ(time_model_key(train), time_model_key(command));  // one calibrates the other
  EXPECT_FALSE(predict_point_time(silent, &b));
  MemoryPrediction m, n;
  ASSERT_TRUE(predict_point_memory(train, &m));
  ASSERT_TRUE(predict_point_memory(command, &n));
  EXPECT_EQ(m.peak, n.peak);
  EXPECT_FALSE(predict_point_memory(silent, &n));
}

TEST(TimeModel, OneMeasuredPointCalibratesItsModel) {
  Value a = resolved("model: {preset: gpt2-tiny}\ntrain: {micro_batch: 2}\n");
  Value b = resolved("model: {preset: gpt2-tiny}\ntrain: {micro_batch: 8}\n");
  Value llama = resolved("model: {preset: llama-tiny}\n");
  TimePrediction pa, pb, pl;
  ASSERT_TRUE(predict_point_time(a, &pa));
  ASSERT_TRUE(predict_point_time(b, &pb));
  ASSERT_TRUE(predict_point_time(llama, &pl));
  TimeCalibration c;
  EXPECT_FALSE(c.add(a, 0));
  TimePrediction scaled = pb;
  EXPECT_TRUE(c.add(b, 3 * pb.step_s));  // one point is enough
  c.apply(b, &scaled);
  EXPECT_DOUBLE_EQ(scaled.calibration, 3);
  EXPECT_TRUE(c.add(a, 5 * pa.step_s));
  EXPECT_TRUE(c.add(a, 7 * pa.step_s));
  EXPECT_EQ(c.size(), 1u);
  scaled = pb;
  c.apply(b, &scaled);  // the median of 3, 5 and 7
  EXPECT_DOUBLE_EQ(scaled.calibration, 5);
  EXPECT_DOUBLE_EQ(scaled.step_s, 5 * pb.step_s);
  // The start-up is not scaled: it is not the model's work.
  EXPECT_DOUBLE_EQ(pb.startup_s, time_constants().cpu_startup_s);
  EXPECT_DOUBLE_EQ(scaled.run_s, pb.startup_s + 5 * (pb.run_s - pb.startup_s));
  EXPECT_DOUBLE_EQ(scaled.device_hours, scaled.run_s / 3600);
  EXPECT_DOUBLE_EQ(scaled.tokens_per_second, pb.tokens_per_second / 5);
  EXPECT_TRUE(c.add(b, 100 * pb.step_s));  // four: the mean of the middle two
  scaled = pb;
  c.apply(b, &scaled);
  EXPECT_DOUBLE_EQ(scaled.calibration, 6);
  TimePrediction untouched = pl;
  c.apply(llama, &untouched);
  EXPECT_EQ(untouched.calibration, 1);
  EXPECT_EQ(untouched.step_s, pl.step_s);
}

}  // namespace
}  // namespace sweepbench
