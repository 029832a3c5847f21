// The CPU time other processes took on a run's CPUs (docs/metrics.md, "CPUs shared with other
// processes"): the node's per-CPU busy time from /proc/stat and this process's own CPU time,
// read at the start and the end of what is measured. Over the CPUs the run may use (the union of
// its ranks' affinity masks on a node), busy time that none of its ranks spent is another
// process's: a neighbour that took a core, which slows libtorch's threads far beyond its share
// when they wait on each other.
//
// Leaves out: the MPI reductions over a node's ranks (run/bench_run.cc) and what the tables
// make of the share (postprocess/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sweepbench {

// One "cpu" or "cpuN" line of /proc/stat: the CPU's id (-1 for "cpu", the sum over all), its busy
// jiffies (user, nice, system, irq, softirq, steal) and its total (busy, idle, iowait). nullopt
// for any other line. The sampler's CPU utilisation (os/sampler.h) reads the same.
struct CpuJiffies {
  int id = -1;
  std::uint64_t busy = 0, total = 0;
};
std::optional<CpuJiffies> parse_cpu_line(const std::string& line);

struct CpuTimes {
  std::vector<double> busy_s;  // per CPU id: user, nice, system, irq, softirq, steal; seconds
  double own_s = 0;            // this process, all its threads: user + system seconds
  double wall_s = 0;           // a monotonic clock
  bool ok = false;             // /proc/stat was read
};
CpuTimes read_cpu_times();

// This process's affinity mask as one flag per CPU id (1 or 0), `cpus` long.
std::vector<double> affinity_flags(size_t cpus);

// Between two readings, over the CPUs flagged (non-zero) in `cpus`: the busy seconds, less
// `own_s` (what the run's own processes spent), at least 0.
double others_seconds(const CpuTimes& start, const CpuTimes& end, const std::vector<double>& cpus,
                      double own_s);

// The threads each of a node's `local_ranks` ranks runs when other processes already use
// `others_cpus` CPUs' worth of the node's `cpus` (docs/metrics.md, "Threads beside a busy
// neighbour"): the free CPUs shared by the ranks, rounded down after adding a quarter of a CPU
// (so the ticks of a quiet machine's daemons cut nothing), at least 1 and at most `planned`.
// libtorch's OpenMP threads wait for each other at every operation's end; one of them on a CPU
// another process holds stalls them all, so fewer threads than CPUs beats one too many.
int threads_beside_others(int planned, double cpus, double others_cpus, int local_ranks);

// The others' use, in CPUs, that a rank's share may lose before it runs a thread fewer.
inline constexpr double kThreadSlackCpus = 0.25;

}  // namespace sweepbench
