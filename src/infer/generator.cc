// The libtorch side of generation (see generator.h): prefill, token selection (greedy, sampled,
// beam search) and the decode loop over a static, dynamic or no KV cache; greedy decoding with a
// static cache by fixed-shape steps, replayed as a CUDA graph on GPUs (infer.cuda_graph). One of
// the four translation units that include torch, beside model/model.cc, model/model_functions.cc
// and train/trainer.cc; it builds on the model (src/model/), not on the trainer.
#include "infer/generator.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "model/model.h"
#include "model/torch_support.h"

#ifdef SWEEPBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace sweepbench {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

at::ScalarType scalar_of(DType d) {
  switch (d) {
    case DType::kBf16:
      return at::kBFloat16;
    case DType::kFp16:
      return at::kHalf;
    case DType::kFp32:
      break;
  }
  return at::kFloat;
}

// Greedy decoding of one token per row by TransformerLM::forward_step, through static tensors:
// `input_` (rows, 1) the previous token, the cache's device position, `output_` (rows) the
// argmax. A step is forward, argmax into output_ and position + 1, all on the device. With
// `graph` (a GPU) it is captured once into a CUDA graph and each token is one replay: a decode
// step of GPT-2 124M is otherwise hundreds of small kernels whose launches from the CPU, not the
// 250 MB it reads, set its time. The graph holds the addresses of the cache and the weights, so
// it lives no longer than the cache it was made with.
class FixedStepDecoder {
 public:
  FixedStepDecoder(TransformerLM model, KVCache& cache, bool capture_graph)
      : model_(std::move(model)), cache_(cache) {
    const torch::Tensor& k = cache_.k.at(0);  // (rows, Hkv, capacity, D)
    torch::TensorOptions ids = torch::TensorOptions().dtype(torch::kLong).device(k.device());
    input_ = torch::zeros({k.size(0), 1}, ids);
    output_ = torch::zeros({k.size(0)}, ids);
    cache_.position = torch::zeros({1}, ids);
    if (capture_graph) capture();
  }

  bool graph() const {
#ifdef SWEEPBENCH_WITH_CUDA
    return graph_ != nullptr;
#else
    return false;
#endif
  }

  // Before a run's first step: the cache holds positions 0 .. position - 1 (the prefill's).
  void start(std::int64_t position) { cache_.position.fill_(position); }

  // One token per row after `previous` (rows): returns output_, overwritten by the next step.
  const torch::Tensor& step(const torch::Tensor& previous) {
    input_.copy_(previous.view({-1, 1}));
#ifdef SWEEPBENCH_WITH_CUDA
    if (graph_ != nullptr) {
      graph_->replay();
      return output_;
    }
#endif
    body();
    return output_;
  }

 private:
  void body() {
    torch::Tensor logits = model_->forward_step(input_, cache_);  // (rows, V)
    // As choose() picks greedily.
    output_.copy_(logits.to(torch::kFloat).argmax(-1));
    cache_.position.add_(1);
  }

  void capture() {
#ifdef SWEEPBENCH_WITH_CUDA
    // PyTorch's recipe (torch.cuda.graph): a few steps on a side stream first, so that lazy
    // work (cuBLAS handles and workspaces for that stream, the allocator's first blocks, the
    // attention kernel's choice) happens before the capture, then the capture on that stream into
    // a memory pool private to the graph (capture_begin's default), where every intermediate of
    // the step lives between replays. Each warm-up step writes position 0 of the cache, which
    // the prefill overwrites before any step reads it; the capture itself runs nothing. A
    // capture that fails is the run's error (its status and reason), not a silent eager loop:
    // infer.cuda_graph: false is the way to the eager one.
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
    c10::cuda::getCurrentCUDAStream().synchronize();  // the weights and the cache are ready
    graph_ = std::make_unique<at::cuda::CUDAGraph>();
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      for (int i = 0; i < 3; ++i) {
        cache_.position.zero_();
        body();
      }
      side.synchronize();
      graph_->capture_begin();
      body();
      graph_->capture_end();
    }
    side.synchronize();
#endif
  }

  TransformerLM model_;
  KVCache& cache_;
  torch::Tensor input_, output_;
#ifdef SWEEPBENCH_WITH_CUDA
  std::unique_ptr<at::cuda::CUDAGraph> graph_;  // null: each step runs body()
#endif
};

class TorchGenerator : public Generator {
 public:
  explicit TorchGenerator(const GeneratorOptions& o)
      : o_(o),
        info_(select_device(device_options(o))),
        device_(info_.type == "cuda"
                    ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(info_.index))
                    : torch::Device(torch::kCPU)) {
    if (!device_.is_cuda()) {
      CountingCpuAllocator* counted = CountingCpuAllocator::install();
      if (counted == nullptr && o_.cpu_memory_budget > 0)
        throw std::runtime_error("libtorch kept another CPU allocator: --max-memory-mb cannot apply");
      if (counted != nullptr) counted->set_budget(o_.cpu_memory_budget);
    }
    ModelOptions mo;
    mo.shape = o_.shape;
    mo.max_seq_len = o_.input_tokens + o_.output_tokens;
    mo.rope_theta = rope_theta_of(o_.preset);
    model_ = TransformerLM(mo);
    model_->reset_parameters(o_.seed);  // the same weights bench-train starts from
    model_->to(device_, scalar_of(o_.dtype));
    model_->eval();
    for (const auto& p : model_->parameters()) parameter_count_ += p.numel();
  }

  const DeviceInfo& device() const override { return info_; }
  std::int64_t parameter_count() const override { return parameter_count_; }

  Generation generate(const std::vector<std::int64_t>& prompts) override {
    Generation g;
    g.status = guarded([&] { run(prompts, g); });
    return g;
  }

  std::vector<float> logits(const std::vector<std::int64_t>& prompts) override {
    c10::InferenceMode inference;
    torch::Tensor l = model_->forward(to_device(prompts, o_.batch)).to(torch::kCPU, torch::kFloat);
    l = l.contiguous();  // (B, T, V)
    return {l.data_ptr<float>(), l.data_ptr<float>() + l.numel()};
  }

  double sequence_log_prob(const std::vector<std::int64_t>& sequence, std::int64_t from) override {
    c10::InferenceMode inference;
    torch::Tensor tokens = to_device(sequence, 1);  // (1, L)
    torch::Tensor logp = torch::log_softmax(model_->forward(tokens).to(torch::kFloat), -1)[0];
    double total = 0;
    for (std::int64_t p = std::max<std::int64_t>(from, 1); p < tokens.size(1); ++p) {
      total += logp[p - 1][sequence[static_cast<size_t>(p)]].item<double>();
    }
    return total;
  }

  std::vector<NamedArray> parameter_values() override { return named_arrays(*model_); }
  std::string memory_source() const override { return device_.is_cuda() ? "cuda_device" : "rss"; }
  MemoryReading memory() override { return device_memory(device_); }
  void reset_peak_memory() override { reset_device_peak_memory(device_); }

 private:
  // ids (rows, n) on the host -> (rows, n) int64 on the device.
  torch::Tensor to_device(const std::vector<std::int64_t>& ids, std::int64_t rows) {
    // from_blob borrows the vector; clone() owns a copy before it moves to the device.
    torch::Tensor host =
        torch::from_blob(const_cast<std::int64_t*>(ids.data()),
                         {rows, static_cast<std::int64_t>(ids.size()) / rows}, torch::kLong)
            .clone();
    return host.to(device_);
  }

  // Picks each row's next token from its logits (rows, V) as fp32. With beams, `beam_scores`
  // (rows) is each row's sum of log-probabilities, and `reorder` gets the row each new row
  // continues (rows of one prompt stay among themselves).
  torch::Tensor choose(const torch::Tensor& logits, torch::Tensor& beam_scores, at::Generator& gen,
                       torch::Tensor* reorder) {
    const std::int64_t vocab = logits.size(1);
    if (o_.num_beams > 1) {
      const std::int64_t k = o_.num_beams, prompts = logits.size(0) / k;
      torch::Tensor total = beam_scores.unsqueeze(1) + torch::log_softmax(logits, -1);  // (rows, V)
      // The k best continuations over all k beams x V tokens of each prompt, best first.
      auto [values, index] = total.view({prompts, k * vocab}).topk(k, 1, true, true);  // (P, k)
      torch::Tensor beam = index.div(vocab, "floor");
      torch::Tensor base = torch::arange(prompts, index.options()).mul(k).unsqueeze(1);
      *reorder = (base + beam).view({-1});
      beam_scores = values.reshape({-1});
      return index.remainder(vocab).view({-1});
    }
    if (!o_.do_sample) return logits.argmax(-1);
    torch::Tensor l = o_.temperature != 1.0 ? logits / o_.temperature : logits;
    const float minus_inf = -std::numeric_limits<float>::infinity();
    if (o_.top_k > 0 && o_.top_k < vocab) {
      torch::Tensor kth =
          std::get<0>(l.topk(o_.top_k, -1)).narrow(1, o_.top_k - 1, 1);  // (rows, 1)
      l = l.masked_fill(l < kth, minus_inf);
    }
    if (o_.top_p < 1.0) {
      // Nucleus: keep the most likely tokens until their probability reaches top_p (the first
      // is always kept).
      auto [sorted, order] = l.sort(-1, /*descending=*/true);
      torch::Tensor p = torch::softmax(sorted, -1);
      torch::Tensor drop_sorted = (p.cumsum(-1) - p) >= o_.top_p;
      torch::Tensor drop = torch::zeros_like(drop_sorted).scatter(1, order, drop_sorted);
      l = l.masked_fill(drop, minus_inf);
    }
    // Inverse-CDF sampling with uniforms from the CPU generator: the same draws on every device.
    torch::Tensor cdf = torch::softmax(l, -1).cumsum(-1);  // (rows, V)
    torch::Tensor u =
        at::rand({logits.size(0), 1}, gen, torch::TensorOptions().dtype(torch::kFloat)).to(device_);
    torch::Tensor pick =
        torch::searchsorted(cdf, u * cdf.narrow(1, vocab - 1, 1), /*out_int32=*/false,
                            /*right=*/true);
    return pick.squeeze(1).clamp_max(vocab - 1);
  }

  void run(const std::vector<std::int64_t>& prompts, Generation& g) {
    // Inference mode, not only no gradients: no version counters or view tracking either, which
    // a decode step of small ops pays for on every one of them.
    c10::InferenceMode inference;
    const std::int64_t batch = o_.batch, k = o_.num_beams, rows = batch * k;
    const std::int64_t out = o_.output_tokens;
    const bool cached = o_.kv_cache != KvCache::kNone;
    torch::Tensor prompt = to_device(prompts, batch);  // (B, in)
    // Beam search runs every beam as a row from the start, as Hugging Face's generate() does.
    if (k > 1) prompt = prompt.repeat_interleave(k, 0);           // (B k, in)
    at::Generator gen = at::detail::createCPUGenerator(o_.seed);  // every run draws the same
    torch::Tensor beam_scores;                                    // (rows)
    if (k > 1) {
      // Only the first beam of each prompt is alive at the start, so the first step's k best
      // are k different tokens rather than one token k times.
      beam_scores = torch::full({batch, k}, -1e9, torch::TensorOptions().device(device_));
      beam_scores.select(1, 0).zero_();
      beam_scores = beam_scores.view({-1});
    }
    KVCache local;
    KVCache* cache = nullptr;
    torch::TensorOptions like = torch::TensorOptions().dtype(scalar_of(o_.dtype)).device(device_);
    if (o_.kv_cache == KvCache::kStatic) {
      // Allocated once for input + output tokens and reused by every run.
      if (static_cache_.k.empty() || static_cache_.k[0].size(0) != rows) {
        decoder_.reset();           // its graph holds the old cache's addresses
        static_cache_ = KVCache();  // the old one freed before the new one is allocated
        static_cache_ = model_->make_cache(rows, o_.input_tokens + out, false, like);
      }
      static_cache_.length = 0;
      cache = &static_cache_;
    } else if (o_.kv_cache == KvCache::kDynamic) {
      local = model_->make_cache(rows, 0, true, like);
      cache = &local;
    }
    // Greedy, one beam, static cache: fixed-shape steps, as a CUDA graph on a GPU unless
    // infer.cuda_graph is off (made, and captured, once for the generator, before any timing
    // starts).
    const bool fixed_shape = fixed_shape_decode(o_.kv_cache, o_.do_sample, k);
    bool graph = false;
#ifdef SWEEPBENCH_WITH_CUDA
    graph = fixed_shape && o_.cuda_graph && device_.is_cuda();
#endif
    if ((graph || (fixed_shape && o_.fixed_shape_steps)) && out > 1 && decoder_ == nullptr) {
      decoder_ = std::make_unique<FixedStepDecoder>(model_, static_cache_, graph);
    }
    FixedStepDecoder* decoder = fixed_shape && out > 1 ? decoder_.get() : nullptr;
    torch::Tensor history;  // (rows, t): the new tokens so far

    auto advance = [&](const torch::Tensor& logits) {
      torch::Tensor reorder;
      torch::Tensor next = choose(logits.to(torch::kFloat), beam_scores, gen, &reorder);  // (rows)
      if (reorder.defined()) {
        if (cache != nullptr) cache->reorder(reorder);
        if (history.defined()) history = history.index_select(0, reorder);
      }
      history = history.defined() ? torch::cat({history, next.unsqueeze(1)}, 1) : next.unsqueeze(1);
      return next;
    };

    const double t0 = now_s();
    torch::Tensor logits =
        cached ? model_->forward_cached(prompt, *cache) : model_->last_logits(prompt);
    torch::Tensor next = advance(logits);
    (void)next.to(torch::kCPU);  // the first token's ids on the host
    g.ttft_s = now_s() - t0;
    if (decoder != nullptr) decoder->start(cache->length);
    for (std::int64_t j = 1; j < out; ++j) {
      const double s0 = now_s();
      if (decoder != nullptr) {
        next = decoder->step(next);  // a static tensor, copied into history at once
        history = torch::cat({history, next.unsqueeze(1)}, 1);
      } else {
        logits = cached ? model_->forward_cached(next.unsqueeze(1), *cache)
                        : model_->last_logits(torch::cat({prompt, history}, 1));
        next = advance(logits);
      }
      if (o_.token_metrics) {
        (void)next.to(torch::kCPU);
        g.step_s.push_back(now_s() - s0);
      }
    }
    // The best beam of each prompt is its first row (topk sorts).
    torch::Tensor best =
        k > 1 ? history.index_select(0, torch::arange(batch, history.options()).mul(k)) : history;
    torch::Tensor host = best.to(torch::kCPU).contiguous();  // waits for the device
    g.e2e_s = now_s() - t0;
    g.tokens.assign(host.data_ptr<std::int64_t>(), host.data_ptr<std::int64_t>() + host.numel());
    if (k > 1) {
      torch::Tensor scores =
          beam_scores.view({batch, k}).select(1, 0).to(torch::kCPU, torch::kDouble);
      g.scores.assign(scores.data_ptr<double>(), scores.data_ptr<double>() + batch);
    }
    if (decoder != nullptr) cache->length += out - 1;  // forward_step leaves it to the caller
    g.kv_cache_bytes = cache != nullptr ? cache->bytes() : 0;
    g.cuda_graph = decoder != nullptr && decoder->graph();
  }

  GeneratorOptions o_;
  DeviceInfo info_;
  torch::Device device_;
  TransformerLM model_{nullptr};
  std::int64_t parameter_count_ = 0;
  KVCache static_cache_;
  std::unique_ptr<FixedStepDecoder> decoder_;  // on static_cache_; see run()
};

}  // namespace

DeviceOptions device_options(const GeneratorOptions& o) {
  return {o.device, o.local_rank, o.threads, o.dtype, "infer.dtype"};
}

std::unique_ptr<Generator> make_generator(const GeneratorOptions& options) {
  std::unique_ptr<Generator> generator;
  PhaseStatus status = guarded([&] { generator = std::make_unique<TorchGenerator>(options); });
  if (status.outcome != Outcome::kOk) throw ModelInitError(status.outcome, status.reason);
  return generator;
}

double measure_copy_bandwidth_gbs(int threads) {
  if (threads > 0) torch::set_num_threads(threads);
  // 128 MiB each way: far past any CPU's last-level cache.
  constexpr std::int64_t kFloats = 32 << 20;
  double best = std::numeric_limits<double>::infinity();
  PhaseStatus status = guarded([&] {
    torch::Tensor src = torch::ones({kFloats}), dst = torch::empty({kFloats});
    dst.copy_(src);  // first touch of every page
    for (int i = 0; i < 5; ++i) {
      double t0 = now_s();
      dst.copy_(src);
      best = std::min(best, now_s() - t0);
    }
  });
  if (status.outcome != Outcome::kOk) return 0;  // no room for the buffers: no MBU
  return 2.0 * static_cast<double>(kFloats) * sizeof(float) / best / 1e9;  // read + write
}

}  // namespace sweepbench
