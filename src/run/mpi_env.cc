#include "run/mpi_env.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

namespace sweepbench {
namespace {

std::string host() {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

[[noreturn]] void mpi_fail(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(code, text, &len);
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw MpiError(host() + " rank " + std::to_string(rank) + ": " + file + ":" +
                 std::to_string(line) + ": " + call + " failed: " + std::string(text, len));
}

// Checks an MPI call: on failure, names host, rank, file:line and MPI's message.
#define MPI_CHECK(call)                                     \
  do {                                                      \
    int mpi_check_code_ = (call);                           \
    if (mpi_check_code_ != MPI_SUCCESS) {                   \
      mpi_fail(mpi_check_code_, #call, __FILE__, __LINE__); \
    }                                                       \
  } while (0)

// MPI counts are ints: larger buffers go in chunks.
template <typename T>
void allreduce_chunks(MPI_Comm comm, T* data, size_t count, MPI_Datatype type,
                      MPI_Op op = MPI_SUM) {
  constexpr size_t kChunk = static_cast<size_t>(INT_MAX) / 2;
  for (size_t done = 0; done < count; done += kChunk) {
    int n = static_cast<int>(std::min(kChunk, count - done));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, n, type, op, comm));
  }
}

Collectives::Max allreduce_maxloc(MPI_Comm comm, int value, int rank) {
  // MPI_MAXLOC picks the largest value and, on ties, the lowest rank.
  struct {
    int value;
    int rank;
  } in{value, rank}, out{0, 0};
  MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MAXLOC, comm));
  return {out.value, out.rank};
}

void broadcast_bytes(MPI_Comm comm, void* data, size_t bytes, int root) {
  constexpr size_t kChunk = static_cast<size_t>(INT_MAX) / 2;
  auto* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes; done += kChunk) {
    int n = static_cast<int>(std::min(kChunk, bytes - done));
    MPI_CHECK(MPI_Bcast(p + done, n, MPI_BYTE, root, comm));
  }
}

// One shard is one MPI count: at most INT_MAX elements (a 7B model's fp32 group over 4 ranks).
int shard_count(size_t shard) {
  if (shard > static_cast<size_t>(INT_MAX)) {
    throw std::runtime_error("a ZeRO shard of " + std::to_string(shard) +
                             " elements is more than one MPI message can hold; use more ranks");
  }
  return static_cast<int>(shard);
}

void reduce_scatter_floats(MPI_Comm comm, const float* send, float* recv, size_t shard) {
  MPI_CHECK(MPI_Reduce_scatter_block(send, recv, shard_count(shard), MPI_FLOAT, MPI_SUM, comm));
}

void allgather_floats(MPI_Comm comm, float* data, size_t shard) {
  MPI_CHECK(
      MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, shard_count(shard), MPI_FLOAT, comm));
}

// A group of ranks (MPI_Comm_split of the world): tensor parallelism's groups and the data
// parallel groups across them.
class MpiGroup : public Collectives {
 public:
  MpiGroup(MPI_Comm comm, bool serialized) : comm_(comm), serialized_(serialized) {
    MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  ~MpiGroup() override { MPI_Comm_free(&comm_); }
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allreduce_sum(float* data, size_t count) override {
    allreduce_chunks(comm_, data, count, MPI_FLOAT);
  }
  void allreduce_sum(double* data, size_t count) override {
    allreduce_chunks(comm_, data, count, MPI_DOUBLE);
  }
  Max allreduce_max(int value) override { return allreduce_maxloc(comm_, value, rank_); }
  void broadcast(void* data, size_t bytes, int root) override {
    broadcast_bytes(comm_, data, bytes, root);
  }
  void reduce_scatter_sum(const float* send, float* recv, size_t shard) override {
    reduce_scatter_floats(comm_, send, recv, shard);
  }
  void allgather(float* data, size_t shard) override { allgather_floats(comm_, data, shard); }
  std::unique_ptr<Collectives> split(int color, int key) override {
    MPI_Comm part;
    MPI_CHECK(MPI_Comm_split(comm_, color, key, &part));
    return std::make_unique<MpiGroup>(part, serialized_);
  }
  bool threads_may_call() const override { return serialized_; }

 private:
  MPI_Comm comm_;
  bool serialized_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

MpiEnv::MpiEnv(int* argc, char*** argv) : hostname_(host()) {
  int provided = 0;
  MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
  serialized_ = provided >= MPI_THREAD_SERIALIZED;
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  auto* local = new MPI_Comm;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, local));
  local_comm_ = local;
  MPI_CHECK(MPI_Comm_rank(*local, &local_rank_));
  MPI_CHECK(MPI_Comm_size(*local, &local_size_));
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_CHECK(MPI_Get_library_version(version, &len));
  library_version_ = std::string(version, static_cast<size_t>(len));
  size_t newline = library_version_.find('\n');
  if (newline != std::string::npos) library_version_.resize(newline);
  while (!library_version_.empty() &&
         (library_version_.back() == '\0' || library_version_.back() == ' ')) {
    library_version_.pop_back();
  }
}

MpiEnv::~MpiEnv() {
  if (local_comm_ != nullptr) {
    auto* local = static_cast<MPI_Comm*>(local_comm_);
    MPI_Comm_free(local);
    delete local;
  }
  MPI_Finalize();
}

void MpiEnv::allreduce_sum(float* data, size_t count) {
  allreduce_chunks(MPI_COMM_WORLD, data, count, MPI_FLOAT);
}

void MpiEnv::allreduce_sum(double* data, size_t count) {
  allreduce_chunks(MPI_COMM_WORLD, data, count, MPI_DOUBLE);
}

Collectives::Max MpiEnv::allreduce_max(int value) {
  return allreduce_maxloc(MPI_COMM_WORLD, value, rank_);
}

void MpiEnv::broadcast(void* data, size_t bytes, int root) {
  broadcast_bytes(MPI_COMM_WORLD, data, bytes, root);
}

void MpiEnv::reduce_scatter_sum(const float* send, float* recv, size_t shard) {
  reduce_scatter_floats(MPI_COMM_WORLD, send, recv, shard);
}

void MpiEnv::allgather(float* data, size_t shard) { allgather_floats(MPI_COMM_WORLD, data, shard); }

std::unique_ptr<Collectives> MpiEnv::split(int color, int key) {
  MPI_Comm part;
  MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, key, &part));
  return std::make_unique<MpiGroup>(part, serialized_);
}

void MpiEnv::allreduce_max(double* data, size_t count) {
  allreduce_chunks(MPI_COMM_WORLD, data, count, MPI_DOUBLE, MPI_MAX);
}

void MpiEnv::node_allreduce_max(double* data, size_t count) {
  allreduce_chunks(*static_cast<MPI_Comm*>(local_comm_), data, count, MPI_DOUBLE, MPI_MAX);
}

void MpiEnv::node_allreduce_sum(double* data, size_t count) {
  allreduce_chunks(*static_cast<MPI_Comm*>(local_comm_), data, count, MPI_DOUBLE);
}

std::vector<double> MpiEnv::allgather(double value) {
  std::vector<double> all(static_cast<size_t>(size_));
  MPI_CHECK(MPI_Allgather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD));
  return all;
}

void MpiEnv::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace sweepbench
