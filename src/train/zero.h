// ZeRO over the data-parallel ranks (train.zero_stage): what each stage shards, and the flat
// buffers of parameters, gradients and AdamW's moments with the collectives each stage makes of
// them. The trainer asks the same things at every stage (reduce the gradients, share the updated
// values, gather a block around its use) and the policy decides what that means; docs/metrics.md
// has the memory each stage holds. Leaves out the optimizer's arithmetic (adamw.h), the gradient
// norm (grad_norm.h) and the choice of NCCL or MPI (device_comm.h). Included by trainer.cc alone
// (no translation unit of its own), which keeps libtorch in few files.
#pragma once

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "train/comm_worker.h"
#include "train/device_comm.h"
#include "train/phase_clock.h"

namespace sweepbench {

// What a ZeRO stage shards, each rank holding its piece (DeepSpeed's stages):
//   0: nothing; every rank holds every model state and the gradients are all-reduced;
//   1: AdamW's moments; gradients are reduce-scattered before the step and the updated values
//      all-gathered after it;
//   2: the gradients too, each bucket of train.bucket_mb reduce-scattered as soon as backward has
//      filled it and freed;
//   3: the parameters too, each block's gathered before its forward and its backward and freed
//      after.
// One rank has nothing to shard and runs stage 0.
struct ShardingPolicy {
  bool optimizer_states = false;
  bool gradients = false;
  bool parameters = false;

  static ShardingPolicy of(std::int64_t zero_stage, int ranks) {
    const std::int64_t stage = ranks > 1 ? zero_stage : 0;
    ShardingPolicy p;
    p.optimizer_states = stage >= 1;
    p.gradients = stage >= 2;
    p.parameters = stage == 3;
    return p;
  }
};

// ZeRO-3 frees a gathered parameter buffer by giving back its storage's memory, and gathers it
// again into a new allocation of the same size, as PyTorch's FSDP does: the parameters view the
// storage, and so do the tensors autograd saved of them, so both see the gathered values again
// without a copy and without a change of version.
inline void release_storage(const torch::Tensor& t) { t.storage().unsafeGetStorageImpl()->reset(); }

inline void restore_storage(const torch::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  if (s->nbytes() == bytes) return;
  s->set_data_ptr_noswap(s->allocator()->allocate(bytes));
  s->set_nbytes(bytes);
}

inline std::int64_t held_bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<std::int64_t>(t.storage().nbytes()) : 0;
}

// Block i's parameters are named "h<i>.<...>"; the others (embeddings, final norm, head): -1.
inline int block_of(const std::string& name) {
  if (name.size() < 3 || name[0] != 'h' || !std::isdigit(static_cast<unsigned char>(name[1])))
    return -1;
  size_t dot = name.find('.');
  if (dot == std::string::npos) return -1;
  return std::stoi(name.substr(1, dot - 1));
}

// One flat buffer's parameters and states (see ZeroBuffers::build).
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
  size_t pending = 0;         // ZeRO-2/3: parameters still without a gradient in this backward pass
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

// The segments of a model under a sharding policy, and the stage's collectives on them over the
// data-parallel group. Communication is timed as the kComm phase of `clock`.
class ZeroBuffers {
 public:
  static constexpr int kAllUnits = -2;  // gather() and release(): every block and the root

  ZeroBuffers(ShardingPolicy policy, DeviceComm& comm, Collectives& group, PhaseClock& clock)
      : policy_(policy),
        data_comm_(comm),
        rank_(policy.optimizer_states ? group.rank() : 0),
        world_(policy.optimizer_states ? group.size() : 1),
        replicas_(group.size()),
        clock_(clock) {}
  ZeroBuffers(const ZeroBuffers&) = delete;
  ZeroBuffers& operator=(const ZeroBuffers&) = delete;

  const ShardingPolicy& policy() const { return policy_; }
  std::int64_t rank() const { return rank_; }  // this rank's piece of each buffer
  std::vector<Segment>& segments() { return segments_; }
  const std::vector<Segment>& segments() const { return segments_; }

  // Parameters, gradients and AdamW's moments live in flat fp32 buffers, one per segment: a run
  // of parameters with the same weight decay (on matrices and embeddings, as GPT-2 and nanoGPT;
  // none on biases and norms). Each parameter becomes a view into its segment's buffer, so AdamW
  // is a few in-place passes over whole buffers instead of a loop of small operations per
  // parameter. Sharded, a buffer is padded to `chunk` elements per rank and rank r owns piece r
  // of it. The segments:
  //   stages 0 and 1: one per weight-decay group; the parameters' .grad are views into the
  //     segment's gradient buffer, so autograd accumulates straight into it and one collective
  //     sends it without copies;
  //   stage 2: the groups cut into buckets of `bucket` elements, in parameter order; a bucket
  //     whose parameters have all got their gradient in the backward pass is reduce-scattered
  //     into the rank's gradient piece at once and its gradients freed, so no rank holds all
  //     gradients;
  //   stage 3: one per block and group, plus the root unit (embeddings, final norm, head); the
  //     values are held only as the rank's piece (`master`) and gathered around each use.
  // With tensor parallelism, the `split` parameters (this rank's part of each) are in segments of
  // their own: the gradient norm sums their squares over the tensor-parallel group.
  // `worker`, when there is one, runs the collectives of stages 2 and 3 while backward goes on.
  void build(torch::nn::Module& model, const std::set<const c10::TensorImpl*>& split,
             double weight_decay, std::int64_t bucket, bool offload, const torch::Device& device,
             CommWorker* worker) {
    torch::NoGradGuard no_grad;
    worker_ = worker;
    offload_ = offload;
    for (bool split_part : {false, true}) {
      for (bool decay : {true, false}) {
        size_t first = segments_.size();
        for (const auto& item : model.named_parameters()) {
          const torch::Tensor& p = item.value();
          if (!p.requires_grad() || (p.dim() >= 2) != decay) continue;
          if (split.count(p.unsafeGetTensorImpl()) != (split_part ? 1u : 0u)) continue;
          const int unit = policy_.parameters ? block_of(item.key()) : -1;
          bool cut = segments_.size() == first;
          if (!cut && policy_.parameters) cut = segments_.back().unit != unit;
          if (!cut && policy_.gradients && !policy_.parameters)
            cut = segments_.back().numel + p.numel() > bucket;
          if (cut) {
            segments_.emplace_back();
            segments_.back().weight_decay = decay ? weight_decay : 0.0;
            segments_.back().unit = unit;
            segments_.back().split = split_part;
          }
          segments_.back().params.push_back(p);
          segments_.back().numel += p.numel();
        }
      }
    }
    auto options = torch::TensorOptions().dtype(torch::kFloat).device(device);
    std::int64_t largest = 0;
    for (Segment& g : segments_) {
      g.chunk = (g.numel + world_ - 1) / world_;
      g.full = torch::zeros({g.chunk * world_}, options);
      if (!policy_.gradients) g.grad = torch::zeros({g.chunk * world_}, options);
      if (policy_.optimizer_states) g.grad_shard = torch::zeros({g.chunk}, options);
      // train.offload_optimizer: AdamW's moments in host memory.
      auto state = offload ? options.device(torch::kCPU) : options;
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
      largest = std::max(largest, g.chunk * world_);
      if (policy_.parameters) {
        g.master = g.full.narrow(0, rank_ * g.chunk, g.chunk).clone();
        release_segment(g);
      }
      if (offload) {
        g.host_values = torch::empty({g.chunk}, options.device(torch::kCPU));
        if (device.is_cuda()) g.host_values = g.host_values.pin_memory();
        g.host_values.copy_(g.values(rank_));
      }
    }
    if (policy_.gradients) {
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
      flat_scratch_ = torch::empty({largest}, options);
      piece_scratch_ = torch::empty({largest / world_}, options);
    }
  }

  // Before a step's first micro-batch.
  void zero_gradients() {
    for (Segment& g : segments_) {
      if (g.grad.defined()) g.grad.zero_();
      if (g.grad_shard.defined()) g.grad_shard.zero_();
    }
  }

  // Around each micro-batch's backward pass. Stages 2 and 3 reduce each segment when its last
  // gradient arrives; at the end, the segments some of whose parameters got no gradient are
  // reduced too (zeros for them).
  void begin_backward() {
    for (Segment& g : segments_) g.pending = g.params.size();
  }
  void end_backward() {
    if (!policy_.gradients) return;
    for (Segment& g : segments_) {
      if (g.pending > 0) reduce_segment(g);
    }
  }

  // Before the optimizer step: every rank gets the average over ranks of the gradient, whole
  // (stage 0: all-reduced in pieces of `bucket` elements) or its piece (stage 1:
  // reduce-scattered). Stages 2 and 3 did it during backward.
  void reduce_gradients(std::int64_t bucket) {
    if (policy_.gradients) return;
    clock_.start(kComm);
    if (policy_.optimizer_states) {
      for (Segment& g : segments_) {
        data_comm_.reduce_scatter_sum(g.grad, g.grad_shard, g.chunk);
        g.grad_shard.mul_(1.0 / world_);
      }
    } else if (replicas_ > 1) {
      std::vector<torch::Tensor> grads;
      for (Segment& g : segments_) grads.push_back(g.grad);
      data_comm_.allreduce_mean(grads, bucket);
    }
    clock_.stop(kComm);
  }

  // After the optimizer step, at stages 1 and 2: every rank's updated piece of each buffer to
  // every rank (a skipped fp16 step changed nothing, and gathers the same values). ZeRO-3
  // gathers before the next use.
  void share_updated_values() {
    if (!policy_.optimizer_states || policy_.parameters) return;
    clock_.start(kComm);
    for (Segment& g : segments_) data_comm_.allgather(g.full, g.chunk);
    clock_.stop(kComm);
  }

  // ZeRO-3: a unit's values (kAllUnits: every unit's) gathered, and freed; otherwise nothing.
  void gather(int unit) {
    if (!policy_.parameters) return;
    for (Segment& g : segments_) {
      if (unit == kAllUnits || g.unit == unit) gather_segment(g);
    }
  }
  void release(int unit) {
    if (!policy_.parameters) return;
    for (Segment& g : segments_) {
      if (unit == kAllUnits || g.unit == unit) release_segment(g);
    }
  }
  // ZeRO-3, overlapped: starts gathering a unit's values on the worker.
  void prefetch(int unit) {
    if (!policy_.parameters || worker_ == nullptr || unit < 0) return;
    for (Segment& g : segments_) {
      if (g.unit != unit || g.gathered || g.gather_ticket != 0) continue;
      restore_storage(g.full);
      g.full.narrow(0, rank_ * g.chunk, g.chunk).copy_(g.master);
      Segment* seg = &g;
      g.gather_ticket = worker_->submit([this, seg] { data_comm_.allgather(seg->full, seg->chunk); });
    }
  }

  // What the buffers hold now on the device (a released ZeRO-3 buffer holds nothing; offloaded
  // optimizer states are in host memory and not counted).
  std::int64_t device_bytes() const {
    std::int64_t bytes = 0;
    for (const Segment& g : segments_) {
      for (const torch::Tensor* t : {&g.full, &g.grad, &g.grad_shard, &g.master}) {
        bytes += held_bytes(*t);
      }
      if (!offload_) bytes += held_bytes(g.exp_avg) + held_bytes(g.exp_avg_sq);
    }
    return bytes;
  }

 private:
  // Stages 2 and 3: this segment's gradients, complete for this micro-batch, are
  // reduce-scattered and this rank's piece (averaged) is added to its gradient piece; the
  // parameters' gradients are freed, and at stage 3 a block's gathered values too.
  void reduce_segment(Segment& g) {
    torch::NoGradGuard no_grad;
    g.pending = 0;
    clock_.start(kComm);
    // Overlapped, each bucket in flight has a buffer of its own.
    torch::Tensor flat = worker_ != nullptr
                             ? torch::empty({g.chunk * world_}, flat_scratch_.options())
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
    if (worker_ != nullptr) {
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
    if (policy_.parameters && g.unit >= 0) release_segment(g);
    clock_.stop(kComm);
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
      run_collective(worker_, [&] { data_comm_.allgather(g.full, g.chunk); });
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

  ShardingPolicy policy_;
  DeviceComm& data_comm_;
  std::int64_t rank_, world_;  // this rank's piece and the pieces (1 unsharded)
  int replicas_;               // the data-parallel ranks (stage 0 all-reduces over them)
  PhaseClock& clock_;
  CommWorker* worker_ = nullptr;  // the trainer's, stopped before these buffers go
  bool offload_ = false;
  std::vector<Segment> segments_;
  // What libtorch's grad_accumulator() returns (a c10::intrusive_ptr in recent 2.x).
  using AccumulatorPtr =
      decltype(torch::autograd::impl::grad_accumulator(std::declval<const torch::Tensor&>()));
  std::vector<AccumulatorPtr> accumulators_;    // carry the stage 2 and 3 hooks
  torch::Tensor flat_scratch_, piece_scratch_;  // stages 2 and 3: the largest segment and its piece
};

// A unit's values (ZeroBuffers::kAllUnits: every unit's) gathered for a scope: ZeRO-3's around
// a whole forward and backward or an evaluation; nothing at the other stages.
class Gathered {
 public:
  Gathered(ZeroBuffers& zero, int unit) : zero_(zero), unit_(unit) { zero_.gather(unit_); }
  ~Gathered() { zero_.release(unit_); }
  Gathered(const Gathered&) = delete;
  Gathered& operator=(const Gathered&) = delete;

 private:
  ZeroBuffers& zero_;
  int unit_;
};

}  // namespace sweepbench
