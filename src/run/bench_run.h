// What bench-train and bench-infer share around their measured loops: the ranks' agreement on
// how the run goes, the run's identity, and its end (every rank's file, then rank 0's
// summary.json and table), and the programs' main(). Torch-free.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/value.h"
#include "metrics/rank_result.h"
#include "metrics/summary.h"
#include "model/device.h"
#include "model/outcome.h"
#include "os/cpu_share.h"
#include "os/sampler.h"
#include "run/console.h"
#include "run/mpi_env.h"
#include "run/program_args.h"
#include "run/run_status.h"

namespace sweepbench {

// Ranks must never wait forever for a peer that failed: after every phase that can fail on one
// rank alone they all-reduce a status, the most severe wins, and every rank takes the same path.
class RankAgreement {
 public:
  RankAgreement(MpiEnv& mpi, const char* program) : mpi_(mpi), program_(program) {}
  // Before the run: the largest exit code wins, and the rank that has it prints `message`.
  int on_start(int local, const std::string& message);
  // During the run: the most severe status; the first reason seen is kept, prefixed by its rank.
  RunStatus agree(RunStatus local, const std::string& reason);
  const std::string& reason() const { return reason_; }
  const std::string& rank_status() const { return rank_status_; }

 private:
  MpiEnv& mpi_;
  const char* program_;
  std::string reason_;
  std::string rank_status_ = "ok";
};

// The memory stages of a run (results-format.md, /memory): each stage's memory at its start and
// end and its peak, from `reading` (the model's allocator once it exists); `reset` restarts the
// peak.
class MemoryStages {
 public:
  MemoryStages(std::function<MemoryReading()> reading, std::function<void()> reset,
               std::vector<StageMemory>* out)
      : reading_(std::move(reading)), reset_(std::move(reset)), out_(out) {}
  void before_init();  // the baseline, a stage of its own
  void begin(const std::string& name);
  void end();

 private:
  std::function<MemoryReading()> reading_;
  std::function<void()> reset_;
  std::vector<StageMemory>* out_;
  StageMemory stage_;
};

// Memory before the model exists: this process's resident set and counted tensors on a CPU (the
// first call starts counting them, count_cpu_allocations); on a GPU nothing of ours is there yet.
MemoryReading memory_before_model(const DeviceInfo& device);
void reset_peak_before_model(const DeviceInfo& device);

// Stages read from `model` (a Trainer or a Generator: memory(), reset_peak_memory()) once it is
// built, and from this process before. The references must outlive the stages.
template <class Model>
MemoryStages model_memory_stages(const std::unique_ptr<Model>& model, const DeviceInfo& device,
                                 std::vector<StageMemory>* out) {
  return MemoryStages(
      [&model, &device] { return model ? model->memory() : memory_before_model(device); },
      [&model, &device] {
        if (model) {
          model->reset_peak_memory();
        } else {
          reset_peak_before_model(device);
        }
      },
      out);
}

// The CPU time other processes took on the run's CPUs of each node (os/cpu_share.h), from
// start() to finish(), which every rank calls (it reduces over the node's ranks): the CPUs are
// the union of the node's ranks' affinity masks, the run's own time the sum of their processes'.
// finish() sets r.cpu_others_s and r.cpu_shared (others over those CPUs' time) to the node's
// figures; -1 where a rank could not read /proc/stat.
class CpuShareMeter {
 public:
  void start();
  void finish(MpiEnv& mpi, RankResult& r);

  // The node's figures since start(), reduced over its ranks (every rank calls it): the CPUs
  // covered, the wall seconds and the others' CPU seconds (-1 where a rank could not read).
  struct Reading {
    double cpus = 0, wall_s = 0, others_s = -1;
  };
  Reading read(MpiEnv& mpi) const;
  double started_s() const { return start_.wall_s; }  // start()'s monotonic clock

 private:
  CpuTimes start_;
};

// Threads beside a busy neighbour (docs/metrics.md): `since_start` was started as the program
// began; this waits until it has covered kThreadProbeSeconds, reads what other processes used
// of the node's CPUs meanwhile into r.cpus_busy_at_start, and sets libtorch's threads and
// device.threads: the planned device.threads where the user gave them (`given`:
// launch.cpus_per_rank) or the CPUs are free, else threads_beside_others(), the same on every
// rank of a node (the figure is the node's). r.threads_planned is the planned count. Every rank
// calls it; each node's first rank prints a note when the threads were cut.
void choose_threads_beside_neighbours(CpuShareMeter& since_start, MpiEnv& mpi, bool given,
                                      DeviceInfo& device, RankResult& r, const char* program);
inline constexpr double kThreadProbeSeconds = 0.1;

// Identity, software, hardware and where the run happens: what both programs record the same
// way. `benchmark` is the workload's name (train, infer).
void fill_identity(RankResult& r, MpiEnv& mpi, const DeviceInfo& device,
                   const std::string& benchmark);

// The end of a run: each rank writes its file; only if every rank could does rank 0 write
// summary.json (`extra` entries added at its top level) and print the table under `heading`.
// Returns the exit code.
struct RunEnd {
  RunStatus status = RunStatus::kOk;
  std::string reason;
  std::vector<Metric> metrics;
  Value extra = Value::map();
  std::string heading;                    // "# summary: ..." line
  std::string rank_path, out_dir, files;  // files: "rank-*.h5, summary.json"
};
int finish_run(MpiEnv& mpi, Console& console, RankResult& r, const RunEnd& end);

// main() of bench-train and bench-infer: signals, --env-keep, arguments, --help/--version, MPI,
// and `run` with an internal error ending the job.
int bench_program_main(int argc, char** argv, const char* program, const char* usage,
                       const std::function<int(const Args&, MpiEnv&)>& run);

}  // namespace sweepbench
