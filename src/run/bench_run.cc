#include "run/bench_run.h"

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>
#include <thread>

#include "config/yaml_io.h"
#include "os/clean_env.h"
#include "os/fs.h"
#include "os/run_info.h"
#include "results/rank_file.h"
#include "run/host_memory.h"
#include "text/error.h"
#include "text/exit_codes.h"
#include "text/text.h"

namespace sweepbench {

namespace fs = std::filesystem;
namespace po = boost::program_options;

int RankAgreement::on_start(int local, const std::string& message) {
  Collectives::Max agreed = mpi_.allreduce_max(local);
  if (agreed.value != 0 && mpi_.rank() == agreed.rank)
    std::fprintf(stderr, "%s\n", message.c_str());
  return agreed.value;
}

RunStatus RankAgreement::agree(RunStatus local, const std::string& reason) {
  Collectives::Max m = mpi_.allreduce_max(static_cast<int>(local));
  RunStatus agreed = static_cast<RunStatus>(m.value);
  if (agreed != RunStatus::kOk && reason_.empty()) {
    // The deciding rank's reason travels as text: broadcast its length, then its bytes.
    std::string text = local == agreed ? reason : "";
    std::int64_t length = static_cast<std::int64_t>(text.size());
    mpi_.broadcast(&length, sizeof(length), m.rank);
    text.resize(static_cast<size_t>(length));
    mpi_.broadcast(text.data(), text.size(), m.rank);
    reason_ = (mpi_.size() > 1 ? "rank " + std::to_string(m.rank) + ": " : std::string()) + text;
    rank_status_ = local == RunStatus::kOk ? "ok" : status_name(local);
  }
  return agreed;
}

namespace {

// 128 random bits from rank 0, the same on every rank: bench-extract accepts rank files as one
// run only when they share it.
std::string draw_run_id(MpiEnv& mpi) {
  std::string id = mpi.rank() == 0 ? random_run_id() : std::string(32, '0');
  mpi.broadcast(id.data(), 32, 0);
  return id;
}

// `write_failure`: why the results are not all written; then nothing is claimed.
void print_summary(Console& console, const RunEnd& end, const std::string& write_failure) {
  if (!console.enabled()) return;
  console.line("%s", end.heading.c_str());
  console.line("#  %-32s %16s  %s", "metric", "value", "unit");
  for (const Metric& m : end.metrics) {
    console.line("   %-32s %16.6g  %s", m.name.c_str(), m.value, m.unit.c_str());
  }
  if (!write_failure.empty()) {
    console.line("# FAILED: %s; the results in %s are not complete", write_failure.c_str(),
                 end.out_dir.c_str());
  } else if (end.status == RunStatus::kOk) {
    console.line("# OK: results in %s (%s)", end.out_dir.c_str(), end.files.c_str());
  } else {
    // The footer names the status (CANCELLED, TIMEOUT, OOM, FAILED), as the point's record does.
    console.line("# %s: %s; results in %s", to_upper(status_name(end.status)).c_str(),
                 end.reason.c_str(), end.out_dir.c_str());
  }
}

}  // namespace

void MemoryStages::before_init() {
  MemoryReading now = reading_();
  out_->push_back(StageMemory{"before_init", now.current, now.current, now.current,
                              now.alloc_current, now.alloc_current});
}

void MemoryStages::begin(const std::string& name) {
  reset_();
  stage_ = StageMemory{name, reading_().current, 0, 0, -1, -1};
}

void MemoryStages::end() {
  MemoryReading m = reading_();
  stage_.end = m.current;
  stage_.peak = std::max(m.peak, stage_.end);
  stage_.alloc_end = m.alloc_current;
  stage_.alloc_peak = m.alloc_current < 0 ? -1 : std::max(m.alloc_peak, m.alloc_current);
  out_->push_back(stage_);
}

MemoryReading memory_before_model(const DeviceInfo& device) {
  if (device.type != "cpu") return {0, 0, 0, 0};
  count_cpu_allocations();  // from the first reading on, the CPU's tensors are counted
  MemoryReading counted = counted_cpu_allocations();
  return {current_rss_bytes(), peak_rss_bytes(), counted.current, counted.peak};
}

void reset_peak_before_model(const DeviceInfo& device) {
  if (device.type != "cpu") return;
  reset_peak_rss();
  reset_counted_cpu_peak();
}

void CpuShareMeter::start() { start_ = read_cpu_times(); }

CpuShareMeter::Reading CpuShareMeter::read(MpiEnv& mpi) const {
  const CpuTimes end = read_cpu_times();
  // [0]: the CPU ids to cover; [1]: 1 where a rank could not read /proc/stat.
  double shape[2] = {static_cast<double>(std::max(start_.busy_s.size(), end.busy_s.size())),
                     start_.ok && end.ok ? 0.0 : 1.0};
  mpi.node_allreduce_max(shape, 2);
  std::vector<double> cpus = affinity_flags(static_cast<size_t>(shape[0]));
  double own = end.own_s - start_.own_s;
  if (!cpus.empty()) mpi.node_allreduce_max(cpus.data(), cpus.size());
  mpi.node_allreduce_sum(&own, 1);
  Reading reading;
  reading.cpus = std::count_if(cpus.begin(), cpus.end(), [](double f) { return f != 0; });
  reading.wall_s = end.wall_s - start_.wall_s;
  if (shape[1] == 0 && reading.cpus > 0 && reading.wall_s > 0) {
    reading.others_s = others_seconds(start_, end, cpus, own);
  }
  return reading;
}

void CpuShareMeter::finish(MpiEnv& mpi, RankResult& r) {
  const Reading reading = read(mpi);
  if (reading.others_s < 0) {
    r.cpu_others_s = r.cpu_shared = -1;
    return;
  }
  r.cpu_others_s = reading.others_s;
  r.cpu_shared = std::min(1.0, reading.others_s / (reading.cpus * reading.wall_s));
}

void choose_threads_beside_neighbours(CpuShareMeter& since_start, MpiEnv& mpi, bool given,
                                      DeviceInfo& device, RankResult& r, const char* program) {
  const int planned = device.threads;
  r.threads_planned = planned;
  // /proc/stat counts in ticks of 10 ms: a tenth of a second reads a CPU to a tenth. Each rank
  // waits on its own clock, then every rank reads once (read() and the reduction below are
  // collectives over the node), so that all of a node's ranks see one figure and choose alike.
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const double waited = now - since_start.started_s();
  if (waited < kThreadProbeSeconds) {
    std::this_thread::sleep_for(std::chrono::duration<double>(kThreadProbeSeconds - waited));
  }
  const CpuShareMeter::Reading reading = since_start.read(mpi);
  double busy =
      reading.others_s >= 0 && reading.wall_s > 0 ? reading.others_s / reading.wall_s : -1.0;
  mpi.node_allreduce_max(&busy, 1);
  if (busy < 0) return;
  // Ticks of 10 ms over a tenth of a second read a CPU to a tenth, either way: a reading can pass
  // the CPUs there are (2.07 of 2 on a loaded CI machine), which no neighbour can take.
  busy = std::min(busy, reading.cpus);
  r.cpus_busy_at_start = busy;
  if (given) return;
  const int threads = threads_beside_others(planned, reading.cpus, busy, mpi.local_size());
  if (threads < planned && mpi.local_rank() == 0) {  // a note from each node that cut
    std::fprintf(stderr,
                 "%s: note: other processes used %.1f of the %.0f CPU(s) this run may use on %s as "
                 "it started; each of its %d rank(s) there runs %d thread(s), not %d, so that a "
                 "busy neighbour costs its share (launch.cpus_per_rank sets the threads)\n",
                 program, busy, reading.cpus, mpi.hostname().c_str(), mpi.local_size(), threads,
                 planned);
  }
  if (threads != planned) device.threads = set_compute_threads(threads);
}

void fill_identity(RankResult& r, MpiEnv& mpi, const DeviceInfo& device,
                   const std::string& benchmark) {
  r.benchmark = benchmark;
  r.run_id = draw_run_id(mpi);
  r.rank = mpi.rank();
  r.world_size = mpi.size();
  r.local_rank = mpi.local_rank();
  r.hostname = mpi.hostname();
  r.device_type = device.type;
  r.device_name = device.name;
  r.device_count = device.count;
  r.sweepbench_version = SWEEPBENCH_VERSION;
  r.torch_version = device.torch_version;
  r.cuda_version = device.cuda_version;
  r.nccl_version = device.nccl_version;
  r.mpi_version = mpi.library_version();
  r.threads = device.threads;
  if (const char* policy = std::getenv("OMP_WAIT_POLICY")) r.omp_wait_policy = policy;
  set_run_environment(r, detect_environment());
  r.start_time = utc_now_iso8601();
}

int finish_run(MpiEnv& mpi, Console& console, RankResult& r, const RunEnd& end) {
  // Each rank writes its own file; the run's outcome stands only if every rank's did, so the
  // ranks agree before rank 0 writes the summary or says OK.
  int code = exit_code_for(end.status);
  int local = 0;
  std::string failure;
  auto fail = [&](const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", e.mark().str().c_str(), e.detail().c_str());
    local = sweepbench::exit_code_for(e.kind());
    failure = e.detail();
  };
  try {
    write_rank_file(r, end.rank_path);
  } catch (const Error& e) {
    fail(e);
  }
  Collectives::Max written = mpi.allreduce_max(local);
  if (written.value == 0 && mpi.rank() == 0) {
    try {
      write_summary_file(end.out_dir, r, status_name(end.status), end.reason, end.extra,
                         end.metrics);
    } catch (const Error& e) {
      fail(e);
      written = {local, 0};
    }
  }
  if (written.value != 0) {
    code = written.value;
    failure = "rank " + std::to_string(written.rank) + " could not write its results" +
              (written.rank == mpi.rank() ? ": " + failure : " (its error is above)");
  }
  print_summary(console, end, failure);
  return code;
}

int bench_program_main(int argc, char** argv, const char* program, const char* usage,
                       const std::function<int(const Args&, MpiEnv&)>& run) {
  install_signal_handlers();
  reexec_with_kept_environment(
      argc, argv, g_signal.load());  // --env-keep: before anything reads the environment
  po::options_description desc;
  Args args;
  try {
    args = parse_args(argc, argv, desc);
  } catch (const po::error& e) {
    if (launcher_rank() == 0) {
      std::fprintf(stderr, "%s: error: %s (%s --help lists the options)\n", program, e.what(),
                   program);
    }
    return kExitUsage;
  } catch (const Error& e) {
    if (launcher_rank() == 0) {
      std::fprintf(stderr, "%s: error: %s\n", e.mark().str().c_str(), e.detail().c_str());
    }
    return kExitUsage;
  }
  if (args.help || args.version) {
    if (launcher_rank() == 0) {
      if (args.version) {
        std::printf("%s %s\n", program, SWEEPBENCH_VERSION);
      } else {
        std::ostringstream text;
        text << desc;
        std::printf("%s%s", usage, text.str().c_str());
      }
    }
    return kExitOk;
  }
  try {
    MpiEnv mpi(&argc, &argv);
    try {
      return run(args, mpi);
    } catch (const std::exception& e) {
      // A bug or an MPI failure mid-run: the peers may be waiting in a collective, so end the job.
      std::fprintf(stderr, "%s: rank %d: internal error: %s\n", program, mpi.rank(), e.what());
      mpi.abort(kExitInternal);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: cannot start MPI: %s\n", program, e.what());
    return kExitInternal;
  }
}

}  // namespace sweepbench
