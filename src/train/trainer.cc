// The libtorch side of a training step (see trainer.h). One of the four translation units that
// include torch (docs/building.md); the CUDA and NCCL parts compile only where CMake found a CUDA
// libtorch (SWEEPBENCH_WITH_CUDA, SWEEPBENCH_WITH_NCCL).
#include "train/trainer.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <cmath>
#include <exception>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "model/model.h"
#include "model/torch_support.h"
#include "os/hardware.h"
#include "os/sampler.h"
#include "text/digest.h"
#include "text/error.h"
#include "text/text.h"
#include "train/adamw.h"
#include "train/comm_worker.h"
#include "train/device_comm.h"
#include "train/grad_norm.h"
#include "train/phase_clock.h"
#include "train/zero.h"

#ifdef SWEEPBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace sweepbench {
namespace {

// Keeps the model's copies of its weights in autocast's dtype while it lives (WeightCasts).
class KeptWeightCasts {
 public:
  explicit KeptWeightCasts(WeightCasts& casts) : casts_(casts) { casts_.start(); }
  ~KeptWeightCasts() { casts_.stop(); }
  KeptWeightCasts(const KeptWeightCasts&) = delete;
  KeptWeightCasts& operator=(const KeptWeightCasts&) = delete;

 private:
  WeightCasts& casts_;
};

class TorchTrainer : public Trainer {
 public:
  TorchTrainer(const TrainerOptions& o, Collectives& comm)
      : o_(o),
        groups_(make_groups(o, comm)),
        comm_(groups_.data != nullptr ? *groups_.data : comm),
        info_(select_device(o.device_options())),
        device_(info_.type == "cuda"
                    ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(info_.index))
                    : torch::Device(torch::kCPU)),
        clock_(info_.type == "cuda"),
        graph_mode_(o.train.cuda_graph) {
    if (graph_mode_ && device_.is_cuda()) clock_.untimed();
    if (!device_.is_cuda()) {
      CountingCpuAllocator* counted = CountingCpuAllocator::install();
      if (counted == nullptr && o_.cpu_memory_budget > 0)
        throw std::runtime_error("libtorch kept another CPU allocator: --max-memory-mb cannot apply");
      if (counted != nullptr) counted->set_budget(o_.cpu_memory_budget);
    }
    if (o_.train.dtype == DType::kBf16) autocast_dtype_ = at::kBFloat16;
    if (o_.train.dtype == DType::kFp16) autocast_dtype_ = at::kHalf;
    loss_scale_ = o_.train.dtype == DType::kFp16 ? o_.train.loss_scale : 1.0;

    ModelOptions mo;
    mo.shape = o_.shape;
    mo.max_seq_len = o_.seq_len;
    mo.activation_checkpointing = o_.train.activation_checkpointing;
    mo.rope_theta = rope_theta_of(o_.preset);
    mo.fused_loss = o_.train.fused_loss;
    mo.loss_chunk_rows = o_.train.loss_chunk_rows;
    mo.cpu_kernels = o_.train.cpu_kernels;
    mo.gpu_kernels = o_.train.gpu_kernels;
    // ZeRO-2 and 3 reduce a gradient when its accumulator has run: the embedding's rows must go
    // through it there.
    mo.embedding_grad_in_place = o_.train.zero_stage <= 1;  // the configured stage, also alone
    mo.lora.r = o_.train.lora() ? o_.train.lora_r : 0;
    mo.lora.alpha = o_.train.lora_alpha;
    mo.lora.dropout = o_.train.lora_dropout;
    mo.lora.targets = o_.train.lora_targets;
    if (autocast_dtype_) {
      // The same mixed-precision scope for each block's forward and its recomputation.
      c10::DeviceType type = device_.type();
      at::ScalarType dtype = *autocast_dtype_;
      mo.block_scope = [type, dtype](const std::function<void()>& body) {
        AutocastScope scope(type, dtype);
        body();
      };
    }
    if (zero_.policy().parameters) {
      // ZeRO-3: a block's parameters are gathered before its forward and freed after it, and
      // gathered again before its backward (freed when its gradients have been reduced).
      // Overlapped, the next block's gather starts as soon as this one's is done: the one after
      // it in forward, the one before it in backward.
      mo.before_block = [this](size_t i) {
        zero_.gather(static_cast<int>(i));
        zero_.prefetch(static_cast<int>(i) + 1);
      };
      mo.after_block = [this](size_t i) { zero_.release(static_cast<int>(i)); };
      mo.before_block_backward = [this](size_t i) {
        zero_.gather(static_cast<int>(i));
        zero_.prefetch(static_cast<int>(i) - 1);
      };
    }
    const std::int64_t t = o_.tensor_parallel;
    if (t > 1) {
      mo.tensor_parallel.size = t;
      mo.tensor_parallel.allreduce = [this](torch::Tensor& x) { tensor_parallel_sum(x); };
    }
    model_ = TransformerLM(mo);
    if (t > 1) {
      // The whole model drawn as without tensor parallelism (so the run is the same), then this
      // rank's part of it.
      ModelOptions whole = mo;
      whole.tensor_parallel = TensorParallel{};
      whole.before_block = whole.after_block = whole.before_block_backward = nullptr;
      TransformerLM full(whole);
      full->reset_parameters(o_.train.seed);
      for (const auto& p : full->parameters()) full_parameter_count_ += p.numel();
      for (const std::string& name :
           load_tensor_parallel_part(model_, full, groups_.tensor->rank(), t)) {
        split_.insert(model_->named_parameters()[name].unsafeGetTensorImpl());
      }
    } else {
      model_->reset_parameters(o_.train.seed);
    }
    model_->to(device_);
    for (const auto& item : model_->named_parameters()) {
      torch::Tensor p = item.value();
      parameter_count_ += p.numel();
      // LoRA: only the adapters learn; the frozen weights get no gradient and no moments.
      if (o_.train.lora() && item.key().find(".lora_") == std::string::npos) {
        p.requires_grad_(false);
        frozen_bytes_ += p.numel() * static_cast<std::int64_t>(p.element_size());
      } else {
        trainable_count_ += p.numel();
      }
    }
    broadcast_parameters();
#ifdef SWEEPBENCH_WITH_NCCL
    if (device_.is_cuda()) {
      if (comm_.size() > 1) data_comm_.use_nccl(device_.index());
      if (tensor_comm_.exists()) tensor_comm_.use_nccl(device_.index());
    }
#endif
    // train.overlap_comm: ZeRO-2 and 3 over MPI on CPUs (the GPU path stays blocking for now).
    if (o_.train.overlap_comm && zero_.policy().gradients && !device_.is_cuda() &&
        comm_.threads_may_call()) {
      worker_ = std::make_unique<CommWorker>();
    }
    zero_.build(*model_, split_, o_.train.weight_decay, bucket_elements(),
                o_.train.offload_optimizer, device_, worker_.get());
  }

  const DeviceInfo& device() const override { return info_; }
  std::int64_t parameter_count() const override {
    return full_parameter_count_ > 0 ? full_parameter_count_ : parameter_count_;
  }
  std::int64_t rank_parameter_count() const override { return parameter_count_; }
  std::int64_t trainable_parameter_count() const override { return trainable_count_; }

  PhaseStatus forward_backward(const std::vector<Batch>& micro_batches) override {
    clock_.reset();
    take_sent_bytes();  // a step's own bytes, not what set-up or evaluation sent
    if (graph_mode_) {
      // train.cuda_graph: the micro-batches go into the step's fixed tensors; update() runs the
      // whole step, which needs the learning rate.
      return guarded([&] { stage_inputs(micro_batches); });
    }
    return guarded([&] {
      std::vector<torch::Tensor> tokens, targets;
      for (const Batch& batch : micro_batches) {
        tokens.push_back(to_device(batch.inputs, batch));
        targets.push_back(to_device(batch.targets, batch));
      }
      forward_backward_body(tokens, targets);
    });
  }

  // Forward and backward over the micro-batches' tokens and targets, on the device.
  void forward_backward_body(const std::vector<torch::Tensor>& tokens_of,
                             const std::vector<torch::Tensor>& targets_of) {
    zero_.zero_gradients();
    loss_sum_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
    double accum = static_cast<double>(tokens_of.size());
    // ZeRO-3: the root unit (embeddings, final norm, head) stays gathered for the whole
    // forward and backward of every micro-batch.
    Gathered root(zero_, -1);
    // Mixed precision: the weights' bf16/fp16 copies are made once a step and serve every
    // micro-batch's forward and every recomputation; the optimizer's update (after this)
    // makes new ones next step. Not with ZeRO-3, whose point is not to hold every weight at
    // once.
    std::optional<KeptWeightCasts> keep_casts;
    if (autocast_dtype_ && !zero_.policy().parameters) keep_casts.emplace(model_->weight_casts());
    for (size_t i = 0; i < tokens_of.size(); ++i) {
      const torch::Tensor& tokens = tokens_of[i];
      const torch::Tensor& targets = targets_of[i];
      clock_.start(kForward);
      torch::Tensor loss;
      {
        std::optional<AutocastScope> scope;
        if (autocast_dtype_) scope.emplace(device_.type(), *autocast_dtype_);
        loss = model_->loss(tokens, targets) / accum;
      }
      clock_.stop(kForward);
      clock_.start(kBackward);
      zero_.begin_backward();
      (loss_scale_ != 1.0 ? loss * loss_scale_ : loss).backward();
      zero_.end_backward();
      clock_.stop(kBackward);
      loss_sum_ += loss.detach();
    }
    if (worker_) {
      // What has not overlapped with backward is exposed here.
      clock_.start(kComm);
      worker_->wait_all();
      clock_.stop(kComm);
    }
  }

  PhaseStatus update(double lr) override {
    if (graph_mode_) {
      // Forward, backward and optimizer run here as one step: a failure says so.
      PhaseStatus status = guarded([&] { graph_step(lr); });
      if (status.outcome != Outcome::kOk) status.reason = "the captured step: " + status.reason;
      return status;
    }
    return guarded([&] { update_body(lr); });
  }

  // Averages, clips and steps AdamW at `lr`: a number, or (a captured step) a float tensor on the
  // device.
  template <typename Lr>
  void update_body(const Lr& lr) {
    zero_.reduce_gradients(bucket_elements());
    clock_.start(kOptimizer);
    if (loss_scale_ != 1.0) {
      for (Segment& g : zero_.segments()) g.gradient().mul_(1.0 / loss_scale_);
    }
    // The global gradient norm (grad_norm.h), in fp64: sums of squares of the whole
    // parameters' gradients and of the tensor-parallel parts.
    torch::Tensor sq[2] = {
        torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device_)),
        torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device_))};
    const bool sharded = zero_.policy().optimizer_states;
    for (Segment& g : zero_.segments()) add_sum_of_squares(sq[g.split ? 1 : 0], g.gradient());
    if (sharded || groups_.tensor != nullptr) {
      // ZeRO: each rank squared its own shard (the padding is zero), so the sum over the
      // data-parallel group is exact up to the order of the additions. Tensor parallelism:
      // each rank holds a part of the split parameters, the same whole ones as its group.
      double local[2] = {sq[0].item<double>(), sq[1].item<double>()};
      if (sharded) comm_.allreduce_sum(local, 2);
      if (groups_.tensor != nullptr) groups_.tensor->allreduce_sum(&local[1], 1);
      sq[0].fill_(local[0] + local[1]);
    } else {
      sq[0] += sq[1];
    }
    torch::Tensor& total = sq[0];
    grad_norm_ = total.sqrt();
    skipped_ = false;
    if (o_.train.dtype == DType::kFp16) {
      // Dynamic loss scaling: skip the update and halve the scale on inf/nan gradients; double
      // it after 2000 clean steps (torch.cuda.amp.GradScaler's defaults).
      used_scale_ = loss_scale_;
      if (!std::isfinite(grad_norm_.item<double>())) {
        skipped_ = true;
        loss_scale_ *= 0.5;
        clean_steps_ = 0;
      } else if (++clean_steps_ == 2000) {
        loss_scale_ *= 2.0;
        clean_steps_ = 0;
      }
    }
    if (!skipped_) {
      // Clip without a host round trip: the gradients times min(1, clip / norm), that is
      // divided by max(1, norm / clip), in AdamW's kernel.
      torch::Tensor divisor;
      if (o_.train.grad_clip > 0)
        divisor = torch::clamp_min((grad_norm_ + 1e-6) / o_.train.grad_clip, 1.0);
      adamw_step(lr, divisor);
    }
    clock_.stop(kOptimizer);
    zero_.share_updated_values();
  }

  StepTiming finish_step() override {
    StepTiming t;
#ifdef SWEEPBENCH_WITH_CUDA
    if (device_.is_cuda()) c10::cuda::device_synchronize();
#endif
    t.forward_s = clock_.seconds(kForward);
    t.backward_s = clock_.seconds(kBackward);
    t.comm_s = clock_.seconds(kComm);
    t.optimizer_s = clock_.seconds(kOptimizer);
    t.comm_bytes = take_sent_bytes();
    if (loss_sum_.defined()) t.loss = loss_sum_.item<double>();
    if (grad_norm_.defined()) t.grad_norm = grad_norm_.item<double>();
    t.loss_scale = o_.train.dtype == DType::kFp16 ? used_scale_ : 1.0;
    t.skipped = skipped_;
    return t;
  }

  EvalOutput evaluate(const Batch& batch) override {
    EvalOutput out;
    out.status = guarded([&] {
      torch::NoGradGuard no_grad;
      Gathered root(zero_, -1);
      std::optional<AutocastScope> scope;
      if (autocast_dtype_) scope.emplace(device_.type(), *autocast_dtype_);
      out.loss = model_->loss(to_device(batch.inputs, batch), to_device(batch.targets, batch))
                     .item<double>();
    });
    return out;
  }

  std::string memory_source() const override { return device_.is_cuda() ? "cuda_device" : "rss"; }

  MemoryReading memory() override { return device_memory(device_); }

  void reset_peak_memory() override { reset_device_peak_memory(device_); }

  std::string parameter_sha256() override {
    Gathered all(zero_, ZeroBuffers::kAllUnits);
    Sha256 sha;
    for (const auto& item : model_->named_parameters()) {
      torch::Tensor host = item.value().detach().to(torch::kCPU).contiguous();
      sha.update(item.key());
      sha.update(std::string_view(static_cast<const char*>(host.data_ptr()),
                                  static_cast<size_t>(host.numel() * host.element_size())));
    }
    return sha.hex_digest();
  }

  std::vector<NamedArray> parameter_values() override {
    Gathered all(zero_, ZeroBuffers::kAllUnits);
    return named_arrays(*model_);
  }

  // What the segments' buffers hold now on the device (a released ZeRO-3 buffer holds
  // nothing; offloaded optimizer states are in host memory and not counted).
  std::int64_t model_state_bytes() const override { return frozen_bytes_ + zero_.device_bytes(); }

  // libtorch's Kineto profiler API: save() writes Kineto's Chrome trace (CPU ops with their
  // shapes and threads, and on a GPU the kernels and copies on their streams), which Perfetto
  // and TensorBoard open.
  void start_profile(const ProfileActivities& activities) override {
    namespace prof = torch::profiler::impl;
    std::set<prof::ActivityType> kinds;
    if (activities.cpu) kinds.insert(prof::ActivityType::CPU);
    if (activities.cuda) kinds.insert(prof::ActivityType::CUDA);
    const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
    torch::autograd::profiler::prepareProfiler(config, kinds);
    torch::autograd::profiler::enableProfiler(config, kinds);
    profiling_ = true;
  }
  void stop_profile(const std::string& path) override {
    if (!profiling_) {
      if (path.empty()) return;
      throw Error(ErrorKind::kIo, Mark::in(path), "", "the profiler was not started");
    }
    profiling_ = false;
    std::unique_ptr<torch::autograd::profiler::ProfilerResult> result;
    try {
      result = torch::autograd::profiler::disableProfiler();
    } catch (const c10::Error& e) {
      if (path.empty()) return;
      throw Error(ErrorKind::kIo, Mark::in(path), "",
                  std::string("the profiler failed: ") + e.what_without_backtrace());
    }
    if (path.empty()) return;
    // `path` is the caller's temporary name (bench_train.cc renames it into place).
    try {
      result->save(path);
    } catch (const c10::Error& e) {
      throw Error(ErrorKind::kIo, Mark::in(path), "",
                  std::string("the profiler cannot save its trace (a libtorch without Kineto?): ") +
                      first_line(e.what_without_backtrace()));
    }
  }

 private:
  // A micro-batch's token ids (batch x seq) as a tensor that borrows the vector.
  static torch::Tensor host_view(const std::vector<std::int64_t>& ids, const Batch& b) {
    return torch::from_blob(const_cast<std::int64_t*>(ids.data()), {b.batch, b.seq}, torch::kLong);
  }

  torch::Tensor to_device(const std::vector<std::int64_t>& ids, const Batch& b) {
    // The view borrows the vector; clone() owns a copy before it moves to the device.
    torch::Tensor host = host_view(ids, b);
    return device_.is_cuda() ? host.to(device_) : host.clone();
  }

  // train.cuda_graph: the micro-batches copied into the step's fixed tensors on the device (made
  // at the first step; a later step of other shapes is refused, as a graph replays one shape).
  void stage_inputs(const std::vector<Batch>& micro_batches) {
    const bool first = static_tokens_.empty();
    if (!first && micro_batches.size() != static_tokens_.size()) {
      throw std::runtime_error("train.cuda_graph: a step of " +
                               std::to_string(micro_batches.size()) + " micro-batches after " +
                               std::to_string(static_tokens_.size()));
    }
    on_graph_stream([&] {
      for (size_t i = 0; i < micro_batches.size(); ++i) {
        const Batch& b = micro_batches[i];
        torch::Tensor inputs = host_view(b.inputs, b), targets = host_view(b.targets, b);
        if (first) {
          static_tokens_.push_back(
              torch::empty({b.batch, b.seq}, inputs.options().device(device_)));
          static_targets_.push_back(torch::empty_like(static_tokens_.back()));
        } else if (static_tokens_[i].sizes() != inputs.sizes()) {
          throw std::runtime_error("train.cuda_graph: a micro-batch of another shape");
        }
        static_tokens_[i].copy_(inputs);
        static_targets_[i].copy_(targets);
      }
    });
  }

  // train.cuda_graph's step. The learning rate goes into a tensor on the device, which the step
  // reads. The first step runs eagerly, on the stream the graph is captured on (PyTorch's
  // recipe: lazy work, cuBLAS's handles and workspaces for that stream and the allocator's first
  // blocks, happens outside the capture); the second is captured into a CUDA graph (capturing
  // runs nothing) and replayed, and so is every step after it. On a CPU every step runs eagerly
  // through the same fixed tensors (what the tests check).
  void graph_step(double lr) {
    on_graph_stream([&] {
      if (!lr_.defined())
        lr_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
      lr_.fill_(lr);
      auto body = [&] {
        forward_backward_body(static_tokens_, static_targets_);
        update_body(lr_);
      };
#ifdef SWEEPBENCH_WITH_CUDA
      if (device_.is_cuda()) {
        if (graph_failed_) throw std::runtime_error("train.cuda_graph: the capture failed");
        if (graph_ != nullptr) {
          graph_->replay();
        } else if (graph_steps_ == 0) {
          body();
        } else {
          capture(body);
          graph_->replay();
        }
        ++graph_steps_;
        return;
      }
#endif
      body();
      ++graph_steps_;
    });
  }

#ifdef SWEEPBENCH_WITH_CUDA
  // Captures `body` into graph_ on the current (graph) stream. As torch.cuda.graph does, the
  // first step's cached blocks go back first: while a capture is under way the allocator draws
  // only on the graph's pool and cannot free cached blocks to make room, so the eager step's
  // activations would be held twice. A body that throws (out of memory, an op that waits for the
  // host) leaves no capture open: the stream's capture is ended and dropped, the graph too, and
  // the error goes on to guarded(), the run's failure with libtorch's reason.
  void capture(const std::function<void()>& body) {
    c10::cuda::device_synchronize();
    c10::cuda::CUDACachingAllocator::emptyCache();
    graph_ = std::make_unique<at::cuda::CUDAGraph>();
    graph_->capture_begin();
    try {
      body();
    } catch (...) {
      try {
        graph_->capture_end();  // ends the capture and the allocator's routing to the pool
      } catch (...) {
        // An invalidated capture: ended by hand below.
      }
      const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
          status != cudaStreamCaptureStatusNone) {
        cudaGraph_t partial = nullptr;
        if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial != nullptr) {
          cudaGraphDestroy(partial);
        }
      }
      (void)cudaGetLastError();  // the capture's error is reported by the rethrow, not again
      graph_.reset();
      graph_failed_ = true;
      throw;
    }
    graph_->capture_end();
  }
#endif

  // Runs `work` with train.cuda_graph's stream current (a stream of the pool, made once): the
  // capture and its replays need one other than the default stream. On a CPU, as it is.
  void on_graph_stream(const std::function<void()>& work) {
#ifdef SWEEPBENCH_WITH_CUDA
    if (device_.is_cuda()) {
      if (!graph_stream_) {
        graph_stream_ = c10::cuda::getStreamFromPool(false, device_.index());
        // What was made on the default stream (the weights, the buffers) is ready before it.
        c10::cuda::getCurrentCUDAStream(device_.index()).synchronize();
      }
      c10::cuda::CUDAStreamGuard on(*graph_stream_);
      work();
      return;
    }
#endif
    work();
  }

  // Every rank starts from rank 0's weights (initialisation is already deterministic; this makes
  // it certain).
  void broadcast_parameters() {
    if (comm_.size() == 1) return;
    torch::NoGradGuard no_grad;
    for (auto& p : model_->parameters()) {
      torch::Tensor host = p.detach().to(torch::kCPU).contiguous();
      comm_.broadcast(host.data_ptr(), static_cast<size_t>(host.numel() * host.element_size()), 0);
      p.copy_(host);
    }
  }

  // One AdamW step (adamw.h) over every segment. `grad_scale`: clipping's divisor, a float on
  // the device, or undefined for no clipping.
  template <typename Lr>
  void adamw_step(const Lr& lr, const torch::Tensor& grad_scale) {
    adamw_.begin_step();
    const std::int64_t rank = zero_.rank();
    for (Segment& g : zero_.segments()) {
      // Offloaded: the step runs on the host, on its fp32 copy of the values, with the
      // gradient brought over; the updated values go back to the device after.
      const bool host = o_.train.offload_optimizer;
      torch::Tensor data = host ? g.host_values : g.values(rank);
      torch::Tensor grad = host ? g.gradient().to(torch::kCPU) : g.gradient();
      adamw_.update(data, grad, g.exp_avg, g.exp_avg_sq, g.weight_decay, lr, grad_scale);
      if (host) g.values(rank).copy_(g.host_values);
    }
  }

  // train.bucket_mb in fp32 elements: stage 2's buckets, and stage 0's all-reduce pieces.
  std::int64_t bucket_elements() const {
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(o_.bucket_bytes() / sizeof(float)));
  }

  // Tensor parallelism's groups (launch.tensor_parallel t > 1): `tensor`, the t consecutive ranks
  // that split each block; `data`, the ranks at the same place in every such group, which
  // average gradients and shard ZeRO's states. Without: none, and comm_ is the world.
  struct Groups {
    std::unique_ptr<Collectives> tensor, data;
  };
  static Groups make_groups(const TrainerOptions& o, Collectives& world) {
    Groups g;
    const int t = static_cast<int>(o.tensor_parallel);
    if (t <= 1) return g;
    // The config's rules (check_tensor_parallel_rules) refuse this before any rank starts.
    if (world.size() % t != 0)
      throw std::logic_error("launch.tensor_parallel does not divide ranks");
    g.tensor = world.split(world.rank() / t, world.rank() % t);
    g.data = world.split(world.rank() % t, world.rank() / t);
    return g;
  }

  double take_sent_bytes() {
    return data_comm_.take_sent_bytes() + tensor_comm_.take_sent_bytes();
  }

  // Sums x in place over the tensor-parallel group (in x's dtype on NCCL, in fp32 over MPI).
  void tensor_parallel_sum(torch::Tensor& x) {
    clock_.start(kComm);
    tensor_comm_.allreduce_sum(
        x, [this](const std::function<void()>& run) { run_collective(worker_.get(), run); });
    clock_.stop(kComm);
  }

  TrainerOptions o_;
  Groups groups_;
  Collectives& comm_;  // the data-parallel group: the world without tensor parallelism
  // The same groups' collectives on tensors: NCCL, MPI through the host, or MPI (device_comm.h).
  DeviceComm data_comm_{&comm_};
  DeviceComm tensor_comm_{groups_.tensor.get()};
  DeviceInfo info_;
  torch::Device device_;
  PhaseClock clock_;
  ZeroBuffers zero_{ShardingPolicy::of(o_.train.zero_stage, comm_.size()), data_comm_, comm_,
                    clock_};
  bool profiling_ = false;  // between start_profile() and stop_profile()
  std::optional<at::ScalarType> autocast_dtype_;
  TransformerLM model_{nullptr};
  std::int64_t parameter_count_ = 0;        // in this rank's model
  std::int64_t full_parameter_count_ = 0;   // the whole model's, with tensor parallelism
  std::set<const c10::TensorImpl*> split_;  // tensor parallelism's split parameters
  std::int64_t trainable_count_ = 0;
  std::int64_t frozen_bytes_ = 0;  // LoRA's frozen weights, held whole by every rank

  // train.cuda_graph: the step's fixed inputs, its learning rate on the device, and (a GPU) its
  // stream and graph, captured at the second step.
  bool graph_mode_ = false;
  std::vector<torch::Tensor> static_tokens_, static_targets_;
  torch::Tensor lr_;
  std::int64_t graph_steps_ = 0;
  bool graph_failed_ = false;  // a capture threw: no step runs after it
#ifdef SWEEPBENCH_WITH_CUDA
  std::optional<c10::cuda::CUDAStream> graph_stream_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
#endif

  // Declared after the buffers, so it stops (running what it was given) before they go.
  std::unique_ptr<CommWorker> worker_;
  AdamW adamw_{o_.train};
  torch::Tensor loss_sum_, grad_norm_;
  double loss_scale_ = 1.0;
  double used_scale_ = 1.0;
  int clean_steps_ = 0;
  bool skipped_ = false;
};

}  // namespace

std::unique_ptr<Trainer> make_trainer(const TrainerOptions& options, Collectives& comm) {
  std::unique_ptr<Trainer> trainer;
  PhaseStatus status = guarded([&] { trainer = std::make_unique<TorchTrainer>(options, comm); });
  if (status.outcome != Outcome::kOk) throw ModelInitError(status.outcome, status.reason);
  return trainer;
}

}  // namespace sweepbench
