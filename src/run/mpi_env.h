// MPI at the edge: initialisation, who this process is, and the collectives bench-train and
// bench-infer need.
//
// Rank and world size come from MPI_COMM_WORLD; the local rank from a shared-memory split
// (MPI_COMM_TYPE_SHARED), so it is right under mpirun, srun --mpi=pmix and a plain exec alike.
// Errors are returned by MPI (MPI_ERRORS_RETURN) and thrown as MpiError naming host, rank,
// file:line and MPI's own message. mpi.h stays in mpi_env.cc.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "run/collectives.h"

namespace sweepbench {

class MpiError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class MpiEnv : public Collectives {
 public:
  // MPI_Init_thread with MPI_THREAD_SERIALIZED: one thread at a time calls MPI (the main
  // thread, autograd's, or the trainer's communication worker while the main thread waits).
  MpiEnv(int* argc, char*** argv);
  ~MpiEnv() override;  // MPI_Finalize
  MpiEnv(const MpiEnv&) = delete;
  MpiEnv& operator=(const MpiEnv&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  const std::string& hostname() const { return hostname_; }
  // "Open MPI v4.1.4, ..." (first line of MPI_Get_library_version).
  const std::string& library_version() const { return library_version_; }

  void allreduce_sum(float* data, size_t count) override;
  void allreduce_sum(double* data, size_t count) override;
  Max allreduce_max(int value) override;
  void broadcast(void* data, size_t bytes, int root) override;
  void reduce_scatter_sum(const float* send, float* recv, size_t shard) override;
  void allgather(float* data, size_t shard) override;
  std::unique_ptr<Collectives> split(int color, int key) override;
  bool threads_may_call() const override { return serialized_; }
  // Elementwise maximum in place over all ranks.
  void allreduce_max(double* data, size_t count);
  // Elementwise maximum, or sum, in place over the ranks of this node.
  void node_allreduce_max(double* data, size_t count);
  void node_allreduce_sum(double* data, size_t count);
  // Gathers one double from every rank on every rank.
  std::vector<double> allgather(double value);
  // Ends every process of the job (MPI_Abort).
  [[noreturn]] void abort(int code);

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  std::string hostname_;
  std::string library_version_;
  void* local_comm_ = nullptr;  // MPI_Comm, opaque here
  bool serialized_ = false;     // the library gave MPI_THREAD_SERIALIZED or more
};

}  // namespace sweepbench
