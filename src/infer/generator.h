// Generation behind a torch-free interface (bench_infer.cc sees only this header; generator.cc
// implements it with libtorch and the models of model/model.h).
//
// One call of generate() is one run: prefill the prompts, pick the first token (its ids reach
// the host: the time to first token), then output_tokens - 1 decode steps, each timed to the
// moment its ids are on the host when token metrics are on. Every run produces exactly
// output_tokens tokens per prompt: there is no end-of-sequence token.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/model_shapes.h"
#include "config/settings.h"
#include "model/device.h"
#include "model/outcome.h"

namespace sweepbench {

struct GeneratorOptions {
  ModelShape shape;
  std::string preset;
  std::int64_t batch = 1, input_tokens = 1, output_tokens = 1, num_beams = 1;
  bool do_sample = false;
  double temperature = 1.0, top_p = 1.0;
  std::int64_t top_k = 0;
  std::uint64_t seed = 0;  // the weights' and the sampler's
  KvCache kv_cache = KvCache::kStatic;
  DType dtype = DType::kFp32;
  bool token_metrics = true;
  // infer.cuda_graph: where decoding is greedy with one beam and a static cache on a GPU, each
  // decode step is TransformerLM::forward_step replayed as a CUDA graph; elsewhere ignored.
  bool cuda_graph = true;
  // Decode with forward_step (without a graph) also where no graph is captured, when decoding is
  // greedy with one beam and a static cache: how tests check that path on CPUs. Not a config key.
  bool fixed_shape_steps = false;
  Device device = Device::kAuto;
  int local_rank = 0;
  int threads = 0;
  std::int64_t cpu_memory_budget = 0;  // as TrainerOptions' (train/trainer.h)
};

// The device options of a generator, as select_device() reads them.
DeviceOptions device_options(const GeneratorOptions& options);

struct Generation {
  PhaseStatus status;
  double ttft_s = 0, e2e_s = 0;
  // Decode steps 1 .. output - 1, each to its ids on the host; empty without token metrics.
  std::vector<double> step_s;
  // (batch, output_tokens), row-major: the new ids; with beams, the best beam of each prompt.
  std::vector<std::int64_t> tokens;
  // Beam search only, per prompt: the sum of the log-probabilities of its best beam's new tokens.
  std::vector<double> scores;
  std::int64_t kv_cache_bytes = 0;  // as allocated when the run ended
  bool cuda_graph = false;          // the decode steps were replays of a CUDA graph
};

class Generator {
 public:
  virtual ~Generator() = default;
  virtual const DeviceInfo& device() const = 0;
  virtual std::int64_t parameter_count() const = 0;
  // prompts: (batch, input_tokens) ids, row-major. The sampler restarts from the seed at every
  // call, so every run with the same prompts generates the same tokens.
  virtual Generation generate(const std::vector<std::int64_t>& prompts) = 0;
  // The model's logits for the prompts, (batch, input_tokens, vocab) as fp32: for checks.
  virtual std::vector<float> logits(const std::vector<std::int64_t>& prompts) = 0;
  // Sum of log-probabilities of `sequence` (prompt then continuation, one row) from position
  // `from` on, by a full forward pass without a cache: for checks of beam search.
  virtual double sequence_log_prob(const std::vector<std::int64_t>& sequence,
                                   std::int64_t from) = 0;
  virtual std::vector<NamedArray> parameter_values() = 0;
  virtual std::string memory_source() const = 0;  // cuda_device | rss
  virtual MemoryReading memory() = 0;
  virtual void reset_peak_memory() = 0;
};

// Builds the model (weights as bench-train initialises them, in options.dtype) on the selected
// device. Throws ModelInitError when that fails.
std::unique_ptr<Generator> make_generator(const GeneratorOptions& options);

// A copy bandwidth of this host in GB/s (10^9 bytes/s), read + write bytes over the time of the
// best of a few copies of a buffer larger than the caches (STREAM's "copy"): the CPU's peak
// stand-in for MBU. 0 when the buffers cannot be allocated.
double measure_copy_bandwidth_gbs(int threads);

}  // namespace sweepbench
