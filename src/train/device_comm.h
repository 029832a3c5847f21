// The trainer's collectives on tensors over one group of ranks (the data-parallel group, or a
// tensor-parallel one), and the one place that chooses how each of them runs:
//   NCCL on the device, when the group has an NCCL communicator (a CUDA build with NCCL);
//   MPI through a copy on the host, for tensors on a GPU without NCCL;
//   MPI on the tensor in place, on CPUs.
// Included by trainer.cc alone: it carries torch and NCCL types but is no translation unit of its
// own, so libtorch stays in three.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "run/collectives.h"

#ifdef SWEEPBENCH_WITH_NCCL
#include <ATen/cuda/CUDAContext.h>
#include <nccl.h>

// Checks an NCCL call: names the call, file:line and NCCL's message.
#define NCCL_CHECK(call)                                                                         \
  do {                                                                                           \
    ncclResult_t nccl_check_result_ = (call);                                                    \
    if (nccl_check_result_ != ncclSuccess) {                                                     \
      throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +          \
                               ": " #call " failed: " + ncclGetErrorString(nccl_check_result_)); \
    }                                                                                            \
  } while (0)
#endif

namespace sweepbench {

class DeviceComm {
 public:
  // How an MPI call runs: here, or on the trainer's communication thread (which this thread
  // then waits for).
  using Runner = std::function<void(const std::function<void()>&)>;

  explicit DeviceComm(Collectives* group) : group_(group) {}
  DeviceComm(const DeviceComm&) = delete;
  DeviceComm& operator=(const DeviceComm&) = delete;
  ~DeviceComm() {
#ifdef SWEEPBENCH_WITH_NCCL
    if (nccl_ != nullptr) ncclCommDestroy(nccl_);
#endif
  }

  bool exists() const { return group_ != nullptr; }

  // The bytes this rank has sent through this group's collectives since the last call, as a ring
  // algorithm sends them (NCCL's; Open MPI's for large buffers): (D-1)/D of the buffer for a
  // reduce-scatter or an all-gather, twice that for an all-reduce, over D ranks. The elements
  // counted are those that travel: fp32 over MPI, the tensor's own dtype over NCCL. Zero when
  // the group is one rank.
  double take_sent_bytes() {
    const double d = group_ == nullptr ? 1 : group_->size();
    const double reduced = static_cast<double>(allreduced_bytes_.exchange(0));
    const double pieces = static_cast<double>(piece_bytes_.exchange(0));
    return (2 * reduced + d * pieces) * (d - 1) / d;
  }

#ifdef SWEEPBENCH_WITH_NCCL
  // From now on, tensors on GPU `device_index` go through an NCCL communicator of the group,
  // whose unique id travels over MPI.
  void use_nccl(int device_index) {
    device_index_ = device_index;
    ncclUniqueId id;
    if (group_->rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    group_->broadcast(&id, sizeof(id), 0);
    NCCL_CHECK(ncclCommInitRank(&nccl_, group_->size(), id, group_->rank()));
  }
#endif

  // In place: each fp32 tensor becomes its mean over the ranks. Over MPI in pieces of `piece`
  // elements (PyTorch DDP's 25 MB), so that a GPU without NCCL never stages more than one piece
  // on the host.
  void allreduce_mean(const std::vector<torch::Tensor>& tensors, std::int64_t piece) {
    for (const torch::Tensor& t : tensors) allreduced_bytes_ += t.numel() * 4;
#ifdef SWEEPBENCH_WITH_NCCL
    if (nccl_ != nullptr) {
      NCCL_CHECK(ncclGroupStart());
      for (const torch::Tensor& t : tensors) {
        NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()),
                                 ncclFloat, ncclAvg, nccl_, stream()));
      }
      NCCL_CHECK(ncclGroupEnd());
      return;
    }
#endif
    piece = std::max<std::int64_t>(1, piece);
    const float inv_world = 1.0f / static_cast<float>(group_->size());
    for (const torch::Tensor& t : tensors) {
      for (std::int64_t start = 0; start < t.numel(); start += piece) {
        torch::Tensor b = t.narrow(0, start, std::min(piece, t.numel() - start));
        if (b.is_cuda()) {
          torch::Tensor host = b.to(torch::kCPU);
          group_->allreduce_sum(host.data_ptr<float>(), static_cast<size_t>(host.numel()));
          b.copy_(host);
        } else {
          group_->allreduce_sum(b.data_ptr<float>(), static_cast<size_t>(b.numel()));
        }
      }
      t.mul_(inv_world);
    }
  }

  // `full` holds size() pieces of `chunk` fp32 elements; `piece` gets the sum over the ranks of
  // this rank's piece.
  void reduce_scatter_sum(const torch::Tensor& full, const torch::Tensor& piece,
                          std::int64_t chunk) {
    piece_bytes_ += chunk * 4;
#ifdef SWEEPBENCH_WITH_NCCL
    if (nccl_ != nullptr) {
      NCCL_CHECK(ncclReduceScatter(full.data_ptr(), piece.data_ptr(), static_cast<size_t>(chunk),
                                   ncclFloat, ncclSum, nccl_, stream()));
      return;
    }
#endif
    if (full.is_cuda()) {
      torch::Tensor host = full.to(torch::kCPU);
      torch::Tensor out = torch::empty({chunk}, host.options());
      group_->reduce_scatter_sum(host.data_ptr<float>(), out.data_ptr<float>(),
                                 static_cast<size_t>(chunk));
      piece.copy_(out);
      return;
    }
    group_->reduce_scatter_sum(full.data_ptr<float>(), piece.data_ptr<float>(),
                               static_cast<size_t>(chunk));
  }

  // `full` holds size() pieces of `chunk` fp32 elements, of which this rank's is current: every
  // rank's piece to every rank, in place.
  void allgather(const torch::Tensor& full, std::int64_t chunk) {
    piece_bytes_ += chunk * 4;
#ifdef SWEEPBENCH_WITH_NCCL
    if (nccl_ != nullptr) {
      auto* base = static_cast<float*>(full.data_ptr());
      NCCL_CHECK(ncclAllGather(base + group_->rank() * chunk, base, static_cast<size_t>(chunk),
                               ncclFloat, nccl_, stream()));
      return;
    }
#endif
    if (full.is_cuda()) {
      torch::Tensor host = full.to(torch::kCPU);
      group_->allgather(host.data_ptr<float>(), static_cast<size_t>(chunk));
      full.copy_(host);
      return;
    }
    group_->allgather(full.data_ptr<float>(), static_cast<size_t>(chunk));
  }

  // In place: x becomes its sum over the ranks; on NCCL in x's own dtype, over MPI in fp32 (a
  // copy unless x is a contiguous fp32 tensor on the host). `run` runs the MPI call.
  void allreduce_sum(torch::Tensor& x, const Runner& run) {
#ifdef SWEEPBENCH_WITH_NCCL
    if (nccl_ != nullptr && x.is_cuda()) {
      allreduced_bytes_ += x.numel() * static_cast<std::int64_t>(x.element_size());
      ncclDataType_t type = x.scalar_type() == at::kBFloat16 ? ncclBfloat16
                            : x.scalar_type() == at::kHalf   ? ncclHalf
                                                             : ncclFloat;
      NCCL_CHECK(ncclAllReduce(x.data_ptr(), x.data_ptr(), static_cast<size_t>(x.numel()), type,
                               ncclSum, nccl_, stream()));
      return;
    }
#endif
    allreduced_bytes_ += x.numel() * 4;
    if (!x.is_cuda() && x.scalar_type() == torch::kFloat && x.is_contiguous()) {
      run([&] { group_->allreduce_sum(x.data_ptr<float>(), static_cast<size_t>(x.numel())); });
    } else {
      torch::Tensor host = x.to(torch::kCPU, torch::kFloat).contiguous();
      run([&] {
        group_->allreduce_sum(host.data_ptr<float>(), static_cast<size_t>(host.numel()));
      });
      x.copy_(host);
    }
  }

 private:
#ifdef SWEEPBENCH_WITH_NCCL
  cudaStream_t stream() const {
    return at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_index_)).stream();
  }
  int device_index_ = 0;
  ncclComm_t nccl_ = nullptr;
#endif
  Collectives* group_;
  // What take_sent_bytes() counts: the all-reduced buffers' bytes, and the bytes of each piece a
  // reduce-scatter or an all-gather moves (one rank's share). Atomic: the communication thread
  // (train.overlap_comm) calls collectives too.
  std::atomic<std::int64_t> allreduced_bytes_{0}, piece_bytes_{0};
};

}  // namespace sweepbench
