// The few collective operations the trainer needs, without MPI or NCCL types.
//
// The torch code (trainer.cc) talks to other ranks only through this interface, so it does not
// include mpi.h, and a test can run the trainer alone (SingleProcess).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>

namespace sweepbench {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Elementwise sum in place over all ranks (host memory).
  virtual void allreduce_sum(float* data, size_t count) = 0;
  virtual void allreduce_sum(double* data, size_t count) = 0;
  // The largest `value` over all ranks and the lowest rank that holds it.
  struct Max {
    int value;
    int rank;
  };
  virtual Max allreduce_max(int value) = 0;
  // Copies `bytes` bytes from `root` to every rank.
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // `send` holds size() shards of `shard` elements; rank r receives in `recv` the elementwise
  // sum over all ranks of shard r (ZeRO's reduce-scatter of the gradients).
  virtual void reduce_scatter_sum(const float* send, float* recv, size_t shard) = 0;
  // `data` holds size() shards of `shard` elements; each rank's own shard (r) goes to every rank
  // in place (ZeRO's all-gather of the updated parameters).
  virtual void allgather(float* data, size_t shard) = 0;
  // The ranks of this group with the same `color`, ordered by `key` (MPI_Comm_split): a
  // collective call on every rank of this group.
  virtual std::unique_ptr<Collectives> split(int color, int key) = 0;
  // Whether a thread other than the main one may run the collectives (one thread at a time):
  // MPI initialised with MPI_THREAD_SERIALIZED or more.
  virtual bool threads_may_call() const = 0;
};

// One process, no MPI: every collective is the identity.
class SingleProcess : public Collectives {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(float*, size_t) override {}
  void allreduce_sum(double*, size_t) override {}
  Max allreduce_max(int value) override { return {value, 0}; }
  void broadcast(void*, size_t, int) override {}
  void reduce_scatter_sum(const float* send, float* recv, size_t shard) override {
    if (send != recv) std::copy(send, send + shard, recv);
  }
  void allgather(float*, size_t) override {}
  std::unique_ptr<Collectives> split(int, int) override {
    return std::make_unique<SingleProcess>();
  }
  bool threads_may_call() const override { return true; }
};

}  // namespace sweepbench
