// The libtorch side of a training step (see trainer.h). One of two translation units that include
// torch; the CUDA and NCCL parts compile only where CMake found a CUDA libtorch
// (SWEEPBENCH_WITH_CUDA, SWEEPBENCH_WITH_NCCL).
#include "train/trainer.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "core/digest.h"
#include "core/error.h"
#include "core/hardware.h"
#include "core/sampler.h"
#include "core/text.h"
#include "train/adamw.h"
#include "train/device_comm.h"
#include "train/grad_norm.h"
#include "train/model.h"
#include "train/torch_support.h"

#ifdef SWEEPBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
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

enum Phase { kForward, kBackward, kComm, kOptimizer, kPhases };

const char* const kPhaseNames[kPhases] = {"forward", "backward", "comm", "optimizer"};

// Times the phases of a step: CUDA events on a GPU (read once, after the step's final
// synchronisation, so timing never stalls the device), a steady clock on the CPU, where every
// operation has finished when it returns. A phase started while another runs (ZeRO-2 and 3 talk
// inside forward and backward) is nested: its time counts for it and not for the outer phase.
// While the profiler records, each phase is also a named range (a user scope) around libtorch's
// own op events; otherwise the range costs a check.
class PhaseClock {
 public:
  explicit PhaseClock(bool cuda) : cuda_(cuda) {}
  void begin_range(Phase p) {
    // In place, no allocation: this runs a few times per step.
    ranges_[p].emplace(at::RecordScope::USER_SCOPE);
    if (ranges_[p]->isActive()) ranges_[p]->before(kPhaseNames[p]);
  }
  void end_range(Phase p) { ranges_[p].reset(); }
  void reset() {
    for (double& s : seconds_) s = 0;
    open_ = kPhases;
#ifdef SWEEPBENCH_WITH_CUDA
    for (auto& list : events_) list.clear();
    for (auto& list : nested_) list.clear();
#endif
  }
  void start(Phase p) {
    begin_range(p);
    outer_[p] = open_;
    open_ = p;
#ifdef SWEEPBENCH_WITH_CUDA
    if (cuda_) {
      events_[p].push_back(std::make_shared<EventPair>());
      events_[p].back()->first.record();
      if (outer_[p] != kPhases) nested_[outer_[p]].push_back(events_[p].back());
      return;
    }
#endif
    started_[p] = std::chrono::steady_clock::now();
  }
  void stop(Phase p) {
    end_range(p);
    open_ = outer_[p];
#ifdef SWEEPBENCH_WITH_CUDA
    if (cuda_) {
      events_[p].back()->second.record();
      return;
    }
#endif
    double d =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_[p]).count();
    seconds_[p] += d;
    if (outer_[p] != kPhases) seconds_[outer_[p]] -= d;
  }
  // Call after the device has finished the step.
  double seconds(Phase p) {
#ifdef SWEEPBENCH_WITH_CUDA
    if (cuda_) {
      double total = 0;
      for (auto& pair : events_[p]) total += pair->first.elapsed_time(pair->second) / 1000.0;
      for (auto& pair : nested_[p]) total -= pair->first.elapsed_time(pair->second) / 1000.0;
      return total;
    }
#endif
    return seconds_[p];
  }

 private:
  bool cuda_;
  std::optional<at::RecordFunction> ranges_[kPhases];
  double seconds_[kPhases] = {0, 0, 0, 0};
  Phase open_ = kPhases;  // the phase running now, or kPhases
  Phase outer_[kPhases] = {kPhases, kPhases, kPhases, kPhases};
  std::chrono::steady_clock::time_point started_[kPhases];
#ifdef SWEEPBENCH_WITH_CUDA
  struct EventPair {
    at::cuda::CUDAEvent first{cudaEventDefault}, second{cudaEventDefault};
  };
  std::vector<std::shared_ptr<EventPair>> events_[kPhases];
  std::vector<std::shared_ptr<EventPair>> nested_[kPhases];  // nested phases' pairs, subtracted
#endif
};

// ZeRO-3 frees a gathered parameter buffer by giving back its storage's memory, and gathers it
// again into a new allocation of the same size, as PyTorch's FSDP does: the parameters view the
// storage, and so do the tensors autograd saved of them, so both see the gathered values again
// without a copy and without a change of version.
void release_storage(const torch::Tensor& t) { t.storage().unsafeGetStorageImpl()->reset(); }

void restore_storage(const torch::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  if (s->nbytes() == bytes) return;
  s->set_data_ptr_noswap(s->allocator()->allocate(bytes));
  s->set_nbytes(bytes);
}

std::int64_t held_bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<std::int64_t>(t.storage().nbytes()) : 0;
}

// Block i's parameters are named "h<i>.<...>"; the others (embeddings, final norm, head): -1.
int block_of(const std::string& name) {
  if (name.size() < 3 || name[0] != 'h' || !std::isdigit(static_cast<unsigned char>(name[1])))
    return -1;
  size_t dot = name.find('.');
  if (dot == std::string::npos) return -1;
  return std::stoi(name.substr(1, dot - 1));
}

// Runs collectives on a thread of its own, one after another in the order given, so that ZeRO's
// reduce-scatter of a bucket proceeds while backward computes the next one and a block's gather
// while the block before it computes (train.overlap_comm). MPI is initialised SERIALIZED: while
// the worker may be busy, every collective of the trainer goes through it, and the main thread
// calls MPI itself only after wait_all().
class CommWorker {
 public:
  CommWorker() : thread_([this] { loop(); }) {}
  ~CommWorker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  CommWorker(const CommWorker&) = delete;
  CommWorker& operator=(const CommWorker&) = delete;

  // A ticket for wait().
  std::uint64_t submit(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    wake_.notify_all();
    return ++submitted_;
  }
  // Until the task of `ticket` (and every one before it) has run; rethrows a task's error.
  void wait(std::uint64_t ticket) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return done_ >= ticket; });
    if (error_) {
      std::exception_ptr e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
  }
  void wait_all() {
    std::uint64_t last;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      last = submitted_;
    }
    wait(last);
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      std::exception_ptr failed;
      try {
        torch::NoGradGuard no_grad;
        task();
      } catch (...) {
        failed = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (failed && !error_) error_ = failed;
        ++done_;
      }
      done_cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_cv_;
  std::deque<std::function<void()>> queue_;
  std::uint64_t submitted_ = 0, done_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts after the rest is built
};

class TorchTrainer : public Trainer {
 public:
  TorchTrainer(const TrainerOptions& o, Collectives& comm)
      : o_(o),
        groups_(make_groups(o, comm)),
        comm_(groups_.data != nullptr ? *groups_.data : comm),
        info_(select_device(o)),
        device_(info_.type == "cuda"
                    ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(info_.index))
                    : torch::Device(torch::kCPU)),
        clock_(info_.type == "cuda") {
    if (o_.cpu_memory_budget > 0 && !device_.is_cuda())
      BudgetCpuAllocator::install(o_.cpu_memory_budget);
    if (o_.train.dtype == DType::kBf16) autocast_dtype_ = at::kBFloat16;
    if (o_.train.dtype == DType::kFp16) autocast_dtype_ = at::kHalf;
    loss_scale_ = o_.train.dtype == DType::kFp16 ? o_.train.loss_scale : 1.0;

    ModelOptions mo;
    mo.shape = o_.shape;
    mo.max_seq_len = o_.seq_len;
    mo.activation_checkpointing = o_.train.activation_checkpointing;
    mo.rope_theta = rope_theta_of(o_.preset);
    mo.fused_loss = o_.train.fused_loss;
    mo.cpu_kernels = o_.train.cpu_kernels;
    // ZeRO-2 and 3 reduce a gradient when its accumulator has run: the embedding's rows must go
    // through it there.
    mo.embedding_grad_in_place = o_.train.zero_stage <= 1;
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
    if (stage() == 3) {
      // ZeRO-3: a block's parameters are gathered before its forward and freed after it, and
      // gathered again before its backward (freed when its gradients have been reduced).
      // Overlapped, the next block's gather starts as soon as this one's is done: the one after
      // it in forward, the one before it in backward.
      mo.before_block = [this](size_t i) {
        gather_unit(static_cast<int>(i));
        prefetch_unit(static_cast<int>(i) + 1);
      };
      mo.after_block = [this](size_t i) { release_unit(static_cast<int>(i)); };
      mo.before_block_backward = [this](size_t i) {
        gather_unit(static_cast<int>(i));
        prefetch_unit(static_cast<int>(i) - 1);
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
    make_segments();
    // train.overlap_comm: ZeRO-2 and 3 over MPI on CPUs (the GPU path stays blocking for now).
    if (o_.train.overlap_comm && stage() >= 2 && !device_.is_cuda() && comm_.threads_may_call()) {
      worker_ = std::make_unique<CommWorker>();
    }
  }

  const DeviceInfo& device() const override { return info_; }
  std::int64_t parameter_count() const override {
    return full_parameter_count_ > 0 ? full_parameter_count_ : parameter_count_;
  }
  std::int64_t rank_parameter_count() const override { return parameter_count_; }
  std::int64_t trainable_parameter_count() const override { return trainable_count_; }

  PhaseStatus forward_backward(const std::vector<Batch>& micro_batches) override {
    clock_.reset();
    return guarded([&] {
      for (Segment& g : segments_) {
        if (g.grad.defined()) g.grad.zero_();
        if (g.grad_shard.defined()) g.grad_shard.zero_();
      }
      loss_sum_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
      double accum = static_cast<double>(micro_batches.size());
      // ZeRO-3: the root unit (embeddings, final norm, head) stays gathered for the whole
      // forward and backward of every micro-batch.
      Gathered root(*this, -1);
      // Mixed precision: the weights' bf16/fp16 copies are made once a step and serve every
      // micro-batch's forward and every recomputation; the optimizer's update (after this)
      // makes new ones next step. Not with ZeRO-3, whose point is not to hold every weight at
      // once.
      std::optional<KeptWeightCasts> keep_casts;
      if (autocast_dtype_ && stage() < 3) keep_casts.emplace(model_->weight_casts());
      for (const Batch& batch : micro_batches) {
        torch::Tensor tokens = to_device(batch.inputs, batch);
        torch::Tensor targets = to_device(batch.targets, batch);
        clock_.start(kForward);
        torch::Tensor loss;
        {
          std::optional<AutocastScope> scope;
          if (autocast_dtype_) scope.emplace(device_.type(), *autocast_dtype_);
          loss = model_->loss(tokens, targets) / accum;
        }
        clock_.stop(kForward);
        clock_.start(kBackward);
        for (Segment& g : segments_) g.pending = g.params.size();
        (loss_scale_ != 1.0 ? loss * loss_scale_ : loss).backward();
        if (stage() >= 2) {
          // Segments some of whose parameters got no gradient are reduced now (zeros for them).
          for (Segment& g : segments_) {
            if (g.pending > 0) reduce_segment(g);
          }
        }
        clock_.stop(kBackward);
        loss_sum_ += loss.detach();
      }
      if (worker_) {
        // What has not overlapped with backward is exposed here.
        clock_.start(kComm);
        worker_->wait_all();
        clock_.stop(kComm);
      }
    });
  }

  PhaseStatus update(double lr) override {
    return guarded([&] {
      // Stages 2 and 3 reduced every segment's gradient during the backward pass.
      if (stage() <= 1) {
        clock_.start(kComm);
        if (sharded()) {
          reduce_scatter_gradients();
        } else {
          allreduce_gradients();
        }
        clock_.stop(kComm);
      }
      clock_.start(kOptimizer);
      if (loss_scale_ != 1.0) {
        for (Segment& g : segments_) g.gradient().mul_(1.0 / loss_scale_);
      }
      // The global gradient norm (grad_norm.h), in fp64: sums of squares of the whole
      // parameters' gradients and of the tensor-parallel parts.
      torch::Tensor sq[2] = {
          torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device_)),
          torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device_))};
      for (Segment& g : segments_) add_sum_of_squares(sq[g.split ? 1 : 0], g.gradient());
      if (sharded() || groups_.tensor != nullptr) {
        // ZeRO: each rank squared its own shard (the padding is zero), so the sum over the
        // data-parallel group is exact up to the order of the additions. Tensor parallelism:
        // each rank holds a part of the split parameters, the same whole ones as its group.
        double local[2] = {sq[0].item<double>(), sq[1].item<double>()};
        if (sharded()) comm_.allreduce_sum(local, 2);
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
      if (sharded() && stage() <= 2) {
        // Every rank updated its shard; all of them get every shard (a skipped fp16 step
        // changed nothing, and gathers the same values). ZeRO-3 gathers before the next use.
        clock_.start(kComm);
        allgather_parameters();
        clock_.stop(kComm);
      }
    });
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
      Gathered root(*this, -1);
      std::optional<AutocastScope> scope;
      if (autocast_dtype_) scope.emplace(device_.type(), *autocast_dtype_);
      out.loss = model_->loss(to_device(batch.inputs, batch), to_device(batch.targets, batch))
                     .item<double>();
    });
    return out;
  }

  std::string memory_source() const override {
    return device_.is_cuda() ? "cuda_allocator" : "rss";
  }

  MemoryReading memory() override { return device_memory(device_); }

  void reset_peak_memory() override { reset_device_peak_memory(device_); }

  std::string parameter_sha256() override {
    Gathered all(*this, kAllUnits);
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
    Gathered all(*this, kAllUnits);
    return named_arrays(*model_);
  }

  // What the segments' buffers hold now on the device (a released ZeRO-3 buffer holds
  // nothing; offloaded optimizer states are in host memory and not counted).
  std::int64_t model_state_bytes() const override {
    std::int64_t bytes = frozen_bytes_;
    for (const Segment& g : segments_) {
      for (const torch::Tensor* t : {&g.full, &g.grad, &g.grad_shard, &g.master}) {
        bytes += held_bytes(*t);
      }
      if (!o_.train.offload_optimizer) bytes += held_bytes(g.exp_avg) + held_bytes(g.exp_avg_sq);
    }
    return bytes;
  }

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
  // One flat buffer's parameters and states (see make_segments).
  struct Segment {
    std::vector<torch::Tensor> params;
    double weight_decay = 0;
    int unit = -1;             // ZeRO-3: the block, or -1 for the root unit
    std::int64_t numel = 0;    // the parameters' elements
    std::int64_t chunk = 0;    // elements per rank: `full` (and `grad`) hold chunk x ranks
    torch::Tensor full;        // the parameters' values (ZeRO-3: held only while gathered)
    torch::Tensor grad;        // stages 0 and 1: the whole gradient, viewed by the parameters
    torch::Tensor grad_shard;  // sharded: this rank's piece of the averaged gradient
    torch::Tensor master;      // ZeRO-3: this rank's piece of the values
    torch::Tensor exp_avg, exp_avg_sq;  // this rank's piece (everything unsharded)
    torch::Tensor host_values;  // train.offload_optimizer: the values AdamW updates, on the host
    size_t pending = 0;  // ZeRO-2/3: parameters still without a gradient in this backward pass
    std::uint64_t gather_ticket = 0;  // ZeRO-3, overlapped: a gather in flight
    bool gathered = true;
    bool split = false;  // tensor parallelism: this rank holds a part of each parameter
    // What AdamW updates and reads: the whole segment, or this rank's piece of it.
    torch::Tensor values(std::int64_t rank) const {
      if (master.defined()) return master;
      return exp_avg.numel() == full.numel() ? full : full.narrow(0, rank * chunk, chunk);
    }
    torch::Tensor gradient() const { return grad_shard.defined() ? grad_shard : grad; }
  };

  torch::Tensor to_device(const std::vector<std::int64_t>& ids, const Batch& b) {
    // from_blob borrows the vector; clone() owns a copy before it moves to the device.
    torch::Tensor host =
        torch::from_blob(const_cast<std::int64_t*>(ids.data()), {b.batch, b.seq}, torch::kLong);
    return device_.is_cuda() ? host.to(device_) : host.clone();
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

  // Parameters, gradients and AdamW's moments live in flat fp32 buffers, one per segment: a run
  // of parameters with the same weight decay (on matrices and embeddings, as GPT-2 and nanoGPT;
  // none on biases and norms). Each parameter is a view into its segment's buffer, so AdamW is a
  // few in-place passes over whole buffers instead of a loop of small operations per parameter.
  // Sharded (ZeRO, more than one rank), a buffer is padded to `chunk` elements per rank and rank
  // r owns piece r of it. The segments:
  //   stages 0 and 1: one per weight-decay group; the parameters' .grad are views into the
  //     segment's gradient buffer, so autograd accumulates straight into it and one collective
  //     sends it without copies;
  //   stage 2: the groups cut into buckets of train.bucket_mb, in parameter order; a bucket whose
  //     parameters have all got their gradient in the backward pass is reduce-scattered into the
  //     rank's gradient piece at once and its gradients freed, so no rank holds all gradients;
  //   stage 3: one per block and group, plus the root unit (embeddings, final norm, head); the
  //     values are held only as the rank's piece (`master`) and gathered around each use.
  void make_segments() {
    torch::NoGradGuard no_grad;
    const int world = sharded() ? comm_.size() : 1;
    rank_ = sharded() ? comm_.rank() : 0;
    world_ = world;
    const std::int64_t bucket =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(o_.bucket_bytes() / sizeof(float)));
    // With tensor parallelism, split and whole parameters are in separate segments: the
    // gradient norm sums the split ones' squares over the tensor-parallel group.
    for (bool split : {false, true}) {
      for (bool decay : {true, false}) {
        size_t first = segments_.size();
        for (const auto& item : model_->named_parameters()) {
          const torch::Tensor& p = item.value();
          if (!p.requires_grad() || (p.dim() >= 2) != decay) continue;
          if (split_.count(p.unsafeGetTensorImpl()) != (split ? 1u : 0u)) continue;
          const int unit = stage() == 3 ? block_of(item.key()) : -1;
          bool cut = segments_.size() == first;
          if (!cut && stage() == 3) cut = segments_.back().unit != unit;
          if (!cut && stage() == 2) cut = segments_.back().numel + p.numel() > bucket;
          if (cut) {
            segments_.emplace_back();
            segments_.back().weight_decay = decay ? o_.train.weight_decay : 0.0;
            segments_.back().unit = unit;
            segments_.back().split = split;
          }
          segments_.back().params.push_back(p);
          segments_.back().numel += p.numel();
        }
      }
    }
    auto options = torch::TensorOptions().dtype(torch::kFloat).device(device_);
    for (Segment& g : segments_) {
      g.chunk = (g.numel + world - 1) / world;
      g.full = torch::zeros({g.chunk * world}, options);
      if (stage() <= 1) g.grad = torch::zeros({g.chunk * world}, options);
      if (sharded()) g.grad_shard = torch::zeros({g.chunk}, options);
      // train.offload_optimizer: AdamW's moments in host memory.
      auto state = o_.train.offload_optimizer ? options.device(torch::kCPU) : options;
      g.exp_avg = torch::zeros({g.chunk}, state);
      g.exp_avg_sq = torch::zeros({g.chunk}, state);
      std::int64_t offset = 0;
      for (torch::Tensor p : g.params) {
        torch::Tensor slot = g.full.narrow(0, offset, p.numel()).view(p.sizes());
        slot.copy_(p);
        p.set_data(slot);
        if (g.grad.defined()) {
          p.mutable_grad() = g.grad.narrow(0, offset, p.numel()).view(p.sizes());
        }
        offset += p.numel();
      }
      largest_ = std::max(largest_, g.chunk * world);
      if (stage() == 3) {
        g.master = g.full.narrow(0, rank_ * g.chunk, g.chunk).clone();
        release_segment(g);
      }
      if (o_.train.offload_optimizer) {
        g.host_values = torch::empty({g.chunk}, options.device(torch::kCPU));
        if (device_.is_cuda()) g.host_values = g.host_values.pin_memory();
        g.host_values.copy_(g.values(rank_));
      }
    }
    if (stage() >= 2) {
      // A post-hook on each parameter's gradient accumulator runs when autograd has added the
      // parameter's gradient of this backward pass (what PyTorch's DDP and FSDP hook on).
      for (size_t i = 0; i < segments_.size(); ++i) {
        for (const torch::Tensor& p : segments_[i].params) {
          AccumulatorPtr acc = torch::autograd::impl::grad_accumulator(p);
          acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
              [this, i](const torch::autograd::variable_list& outputs,
                        const torch::autograd::variable_list&) {
                Segment& g = segments_[i];
                if (g.pending > 0 && --g.pending == 0) reduce_segment(g);
                return outputs;
              }));
          accumulators_.push_back(std::move(acc));  // the parameter holds it only weakly
        }
      }
      flat_scratch_ = torch::empty({largest_}, options);
      piece_scratch_ = torch::empty({largest_ / world}, options);
    }
  }

  // ZeRO-2 and 3: this segment's gradients, complete for this micro-batch, are reduce-scattered
  // and this rank's piece (averaged) is added to its gradient piece; the parameters' gradients
  // are freed, and at stage 3 a block's gathered values too.
  void reduce_segment(Segment& g) {
    torch::NoGradGuard no_grad;
    g.pending = 0;
    clock_.start(kComm);
    // Overlapped, each bucket in flight has a buffer of its own.
    torch::Tensor flat = worker_ ? torch::empty({g.chunk * world_}, flat_scratch_.options())
                                 : flat_scratch_.narrow(0, 0, g.chunk * world_);
    std::int64_t offset = 0;
    for (torch::Tensor p : g.params) {
      torch::Tensor slot = flat.narrow(0, offset, p.numel());
      if (p.grad().defined()) {
        slot.copy_(p.grad().reshape({-1}));
        p.mutable_grad().reset();
      } else {
        slot.zero_();
      }
      offset += p.numel();
    }
    flat.narrow(0, offset, flat.numel() - offset).zero_();
    if (worker_) {
      // The worker reduces while backward goes on; the parameters' gradients are already free.
      Segment* seg = &g;
      worker_->submit([this, seg, flat] {
        torch::Tensor piece = torch::empty({seg->chunk}, flat.options());
        data_comm_.reduce_scatter_sum(flat, piece, seg->chunk);
        seg->grad_shard.add_(piece, 1.0 / world_);
      });
    } else {
      torch::Tensor piece = piece_scratch_.narrow(0, 0, g.chunk);
      data_comm_.reduce_scatter_sum(flat, piece, g.chunk);
      g.grad_shard.add_(piece, 1.0 / world_);
    }
    if (stage() == 3 && g.unit >= 0) release_segment(g);
    clock_.stop(kComm);
  }

  // Runs a collective: on the worker when there is one (then this thread waits for it, and the
  // wait is the exposed time), else here.
  void collective(const std::function<void()>& run) {
    if (worker_) {
      worker_->wait(worker_->submit(run));
    } else {
      run();
    }
  }

  // ZeRO-3, overlapped: starts gathering a unit's values on the worker.
  void prefetch_unit(int unit) {
    if (!worker_ || unit < 0) return;
    for (Segment& g : segments_) {
      if (g.unit != unit || g.gathered || g.gather_ticket != 0) continue;
      restore_storage(g.full);
      g.full.narrow(0, rank_ * g.chunk, g.chunk).copy_(g.master);
      Segment* seg = &g;
      g.gather_ticket =
          worker_->submit([this, seg] { data_comm_.allgather(seg->full, seg->chunk); });
    }
  }

  // ZeRO-3: every rank's piece of the segment's values into the (re-allocated) whole buffer.
  void gather_segment(Segment& g) {
    if (g.gathered) return;
    torch::NoGradGuard no_grad;
    clock_.start(kComm);
    if (g.gather_ticket != 0) {
      worker_->wait(g.gather_ticket);  // prefetched: only what has not overlapped is exposed
      g.gather_ticket = 0;
    } else {
      restore_storage(g.full);
      g.full.narrow(0, rank_ * g.chunk, g.chunk).copy_(g.master);
      collective([&] { data_comm_.allgather(g.full, g.chunk); });
    }
    g.gathered = true;
    clock_.stop(kComm);
  }

  void release_segment(Segment& g) {
    if (g.gather_ticket != 0) {  // prefetched but not used: let the gather finish first
      worker_->wait(g.gather_ticket);
      g.gather_ticket = 0;
    }
    release_storage(g.full);
    g.gathered = false;
  }

  static constexpr int kAllUnits = -2;

  void gather_unit(int unit) {
    for (Segment& g : segments_) {
      if (stage() == 3 && (unit == kAllUnits || g.unit == unit)) gather_segment(g);
    }
  }
  void release_unit(int unit) {
    for (Segment& g : segments_) {
      if (stage() == 3 && (unit == kAllUnits || g.unit == unit)) release_segment(g);
    }
  }

  // A unit's values (kAllUnits: every unit's) gathered for a scope (ZeRO-3; otherwise nothing).
  class Gathered {
   public:
    Gathered(TorchTrainer& t, int unit) : t_(t), unit_(unit) { t_.gather_unit(unit_); }
    ~Gathered() { t_.release_unit(unit_); }
    Gathered(const Gathered&) = delete;
    Gathered& operator=(const Gathered&) = delete;

   private:
    TorchTrainer& t_;
    int unit_;
  };

  // One AdamW step (adamw.h) over every segment. `grad_scale`: clipping's divisor, a float on
  // the device, or undefined for no clipping.
  void adamw_step(double lr, const torch::Tensor& grad_scale) {
    adamw_.begin_step();
    for (Segment& g : segments_) {
      // Offloaded: the step runs on the host, on its fp32 copy of the values, with the
      // gradient brought over; the updated values go back to the device after.
      const bool host = o_.train.offload_optimizer;
      torch::Tensor data = host ? g.host_values : g.values(rank_);
      torch::Tensor grad = host ? g.gradient().to(torch::kCPU) : g.gradient();
      adamw_.update(data, grad, g.exp_avg, g.exp_avg_sq, g.weight_decay, lr, grad_scale);
      if (host) g.values(rank_).copy_(g.host_values);
    }
  }

  void allreduce_gradients() {
    if (comm_.size() == 1) return;
    std::vector<torch::Tensor> grads;
    for (Segment& g : segments_) grads.push_back(g.grad);
    data_comm_.allreduce_mean(grads, static_cast<std::int64_t>(o_.bucket_bytes() / sizeof(float)));
  }

  // The ZeRO stage in effect: one rank has nothing to shard, and runs stage 0.
  int stage() const { return sharded() ? o_.train.zero_stage : 0; }
  bool sharded() const { return o_.train.zero_stage >= 1 && comm_.size() > 1; }

  // ZeRO-1: every rank gets the average over ranks of its piece of each gradient buffer.
  void reduce_scatter_gradients() {
    for (Segment& g : segments_) {
      data_comm_.reduce_scatter_sum(g.grad, g.grad_shard, g.chunk);
      g.grad_shard.mul_(1.0 / world_);
    }
  }

  // ZeRO-1 and 2: every rank's updated piece of each parameter buffer to every rank.
  void allgather_parameters() {
    for (Segment& g : segments_) data_comm_.allgather(g.full, g.chunk);
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

  // Sums x in place over the tensor-parallel group (in x's dtype on NCCL, in fp32 over MPI).
  void tensor_parallel_sum(torch::Tensor& x) {
    clock_.start(kComm);
    tensor_comm_.allreduce_sum(x, [this](const std::function<void()>& run) { collective(run); });
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
  bool profiling_ = false;  // between start_profile() and stop_profile()
  std::optional<at::ScalarType> autocast_dtype_;
  TransformerLM model_{nullptr};
  std::int64_t parameter_count_ = 0;        // in this rank's model
  std::int64_t full_parameter_count_ = 0;   // the whole model's, with tensor parallelism
  std::set<const c10::TensorImpl*> split_;  // tensor parallelism's split parameters
  std::int64_t trainable_count_ = 0;
  std::int64_t frozen_bytes_ = 0;  // LoRA's frozen weights, held whole by every rank

  std::vector<Segment> segments_;
  // Declared after the segments, so it stops (running what it was given) before they go.
  std::unique_ptr<CommWorker> worker_;
  // What libtorch's grad_accumulator() returns (a c10::intrusive_ptr in recent 2.x).
  using AccumulatorPtr =
      decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::Tensor&>()));
  std::vector<AccumulatorPtr> accumulators_;    // carry the ZeRO-2/3 hooks
  torch::Tensor flat_scratch_, piece_scratch_;  // ZeRO-2/3: the largest segment and its piece
  std::int64_t largest_ = 0;
  std::int64_t rank_ = 0, world_ = 1;  // this rank's piece and the pieces (1 unsharded)
  AdamW adamw_{o_.train};
  torch::Tensor loss_sum_, grad_norm_;
  double loss_scale_ = 1.0;
  double used_scale_ = 1.0;
  int clean_steps_ = 0;
  bool skipped_ = false;
};

}  // namespace

bool cuda_available() { return torch::cuda::is_available(); }

MemoryReading device_memory([[maybe_unused]] const torch::Device& device) {
  MemoryReading m;
#ifdef SWEEPBENCH_WITH_CUDA
  if (device.is_cuda()) {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    // Element 0 is StatType::AGGREGATE (all pools) in every libtorch; the enum moved from
    // c10::cuda::CUDACachingAllocator to c10::CachingAllocator in 2.x, so it is not named here.
    constexpr size_t kAll = 0;
    m.current = stats.allocated_bytes[kAll].current;
    m.peak = stats.allocated_bytes[kAll].peak;
    return m;
  }
#endif
  m.current = current_rss_bytes();
  m.peak = peak_rss_bytes();
  return m;
}

void reset_device_peak_memory([[maybe_unused]] const torch::Device& device) {
#ifdef SWEEPBENCH_WITH_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
    return;
  }
#endif
  reset_peak_rss();
}

std::vector<NamedArray> named_arrays(const torch::nn::Module& module) {
  std::vector<NamedArray> out;
  for (const auto& item : module.named_parameters()) {
    torch::Tensor host = item.value().detach().to(torch::kCPU, torch::kFloat).contiguous();
    NamedArray a;
    a.name = item.key();
    a.shape = host.sizes().vec();
    a.values.assign(host.data_ptr<float>(), host.data_ptr<float>() + host.numel());
    out.push_back(std::move(a));
  }
  return out;
}

DeviceInfo select_device(const TrainerOptions& o) {
  DeviceInfo info;
  info.torch_version = TORCH_VERSION;
  if (o.threads > 0) torch::set_num_threads(o.threads);
  info.threads = torch::get_num_threads();
  bool want_cuda = o.device == Device::kCuda || (o.device == Device::kAuto && cuda_available());
  if (o.device == Device::kCuda && !cuda_available()) {
    throw Error::input(Mark{}, "launch.device",
                       "cuda was asked for, but this libtorch (" + std::string(TORCH_VERSION) +
                           ") sees no CUDA device",
                       "run on a GPU node, or set launch.device: cpu");
  }
  if (!want_cuda) {
    if (o.train.dtype == DType::kFp16) {
      throw Error::input(Mark{}, o.dtype_key,
                         "fp16 needs a GPU: CPU kernels for half precision are missing",
                         "use bf16 or fp32 on a CPU");
    }
    info.type = "cpu";
    info.name = cpu_model_name();
    info.count = 1;
    return info;
  }
#ifdef SWEEPBENCH_WITH_CUDA
  int count = static_cast<int>(torch::cuda::device_count());
  info.type = "cuda";
  info.count = count;
  info.index = o.local_rank % count;
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(info.index));
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, info.index);
  info.name = prop.name;
  char bus[32] = {0};
  cudaDeviceGetPCIBusId(bus, sizeof(bus), info.index);
  info.pci_bus_id = bus;
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  info.cuda_version = std::to_string(runtime / 1000) + "." + std::to_string((runtime % 1000) / 10);
#ifdef SWEEPBENCH_WITH_NCCL
  int nccl = 0;
  ncclGetVersion(&nccl);
  info.nccl_version = std::to_string(nccl / 10000) + "." + std::to_string((nccl / 100) % 100) +
                      "." + std::to_string(nccl % 100);
#endif
#endif
  return info;
}

std::unique_ptr<Trainer> make_trainer(const TrainerOptions& options, Collectives& comm) {
  std::unique_ptr<Trainer> trainer;
  PhaseStatus status = guarded([&] { trainer = std::make_unique<TorchTrainer>(options, comm); });
  if (status.outcome != Outcome::kOk) throw TrainerInitError(status.outcome, status.reason);
  return trainer;
}

}  // namespace sweepbench
