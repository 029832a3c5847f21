#include "os/cpu_share.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace sweepbench {

std::optional<CpuJiffies> parse_cpu_line(const std::string& line) {
  if (line.compare(0, 3, "cpu") != 0 || line.size() < 4) return std::nullopt;
  CpuJiffies j;
  std::istringstream fields(line.substr(3));
  if (line[3] != ' ') {
    if (line[3] < '0' || line[3] > '9' || !(fields >> j.id) || j.id >= 65536) return std::nullopt;
  }
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0,
                     steal = 0;
  if (!(fields >> user >> nice >> system >> idle >> iowait >> irq >> softirq)) return std::nullopt;
  fields >> steal;  // older kernels lack it
  j.busy = user + nice + system + irq + softirq + steal;
  j.total = j.busy + idle + iowait;
  return j;
}

CpuTimes read_cpu_times() {
  CpuTimes t;
  t.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    t.own_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
              static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  std::ifstream in("/proc/stat");
  if (!in || ticks <= 0) return t;
  std::string line;
  while (std::getline(in, line)) {
    std::optional<CpuJiffies> j = parse_cpu_line(line);
    if (!j || j->id < 0) continue;
    const size_t id = static_cast<size_t>(j->id);
    if (t.busy_s.size() <= id) t.busy_s.resize(id + 1, 0.0);
    t.busy_s[id] = static_cast<double>(j->busy) / static_cast<double>(ticks);
  }
  t.ok = !t.busy_s.empty();
  return t;
}

std::vector<double> affinity_flags(size_t cpus) {
  std::vector<double> flags(cpus, 0.0);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    std::fill(flags.begin(), flags.end(), 1.0);
    return flags;
  }
  for (size_t i = 0; i < cpus && i < static_cast<size_t>(CPU_SETSIZE); ++i) {
    if (CPU_ISSET(static_cast<int>(i), &set)) flags[i] = 1.0;
  }
  return flags;
}

double others_seconds(const CpuTimes& start, const CpuTimes& end, const std::vector<double>& cpus,
                      double own_s) {
  double busy = 0;
  const size_t n = std::min({start.busy_s.size(), end.busy_s.size(), cpus.size()});
  for (size_t i = 0; i < n; ++i) {
    if (cpus[i] != 0) busy += std::max(0.0, end.busy_s[i] - start.busy_s[i]);
  }
  return std::max(0.0, busy - own_s);
}

int threads_beside_others(int planned, double cpus, double others_cpus, int local_ranks) {
  if (planned <= 1 || !(cpus > 0) || !(others_cpus >= 0) || local_ranks < 1) {
    return std::max(1, planned);
  }
  const double share = (cpus - others_cpus) / local_ranks;
  const double fits = std::floor(share + kThreadSlackCpus);
  if (!(fits < planned)) return planned;
  return std::max(1, static_cast<int>(fits));
}

}  // namespace sweepbench
