#include "launch/slurm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "os/process.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(trim(field));
  return out;
}

// sacct's "CANCELLED by 0" is CANCELLED.
std::string first_word(const std::string& s) { return s.substr(0, s.find(' ')); }

}  // namespace

void parse_squeue_lines(const std::string& text, SlurmJobStates* states) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = split(line, '|');
    if (f.size() < 2 || f[0].empty()) continue;
    SlurmJobState s{f[1], f.size() > 2 ? f[2] : ""};
    if (s.reason == "None") s.reason.clear();
    (*states)[f[0]] = s;
  }
}

namespace {

// The task ids of "12_[0-3,7%2]": sacct consolidates the array tasks that never started into
// one line (Slurm 22.05's sacct has no --array to expand them). Empty for anything else.
std::vector<std::string> expand_array_tasks(const std::string& id) {
  size_t open = id.find("_[");
  if (open == std::string::npos || id.back() != ']') return {};
  std::string job = id.substr(0, open);
  std::string list = id.substr(open + 2, id.size() - open - 3);
  list = list.substr(0, list.find('%'));  // the throttle
  std::vector<std::string> tasks;
  for (const std::string& range : split(list, ',')) {
    size_t dash = range.find('-');
    std::optional<std::int64_t> first = parse_int64(range.substr(0, dash));
    std::optional<std::int64_t> last =
        dash == std::string::npos ? first : parse_int64(range.substr(dash + 1));
    if (!first || !last || *first < 0 || *last < *first || *last - *first > 1'000'000) return {};
    for (std::int64_t t = *first; t <= *last; ++t) tasks.push_back(job + "_" + std::to_string(t));
  }
  return tasks;
}

}  // namespace

void parse_sacct_lines(const std::string& text, SlurmJobStates* states) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = split(line, '|');
    if (f.size() < 2 || f[0].empty() || f[0].find('.') != std::string::npos) continue;
    std::vector<std::string> ids = expand_array_tasks(f[0]);
    if (ids.empty()) ids.push_back(f[0]);
    for (const std::string& id : ids) {
      if (states->count(id) == 0) (*states)[id] = SlurmJobState{first_word(f[1]), ""};
    }
  }
}

ClaimLiveness slurm_claim_liveness() {
  return [](const ClaimHolder& h) {
    std::optional<SlurmJobStates> states = query_slurm_jobs({h.slurm_job_id});
    if (!states) return false;
    auto it = states->find(h.slurm_job_id);
    return it != states->end() && !is_live_slurm_state(it->second.state);
  };
}

std::string slurm_base_job_id(const std::string& job_id) {
  return job_id.substr(0, job_id.find('_'));
}

std::optional<SrunTaskFailure> first_srun_task_failure(const std::string& stderr_text) {
  const std::string prefix = "srun: error: ";
  std::istringstream lines(stderr_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    // HOST: task(s) LIST: WHAT. A host name holds no ": ".
    size_t host_end = line.find(": ", prefix.size());
    if (host_end == std::string::npos) continue;
    size_t tasks_begin = host_end + 2;
    size_t tasks_end = line.find(": ", tasks_begin);
    if (tasks_end == std::string::npos) continue;
    std::string tasks = line.substr(tasks_begin, tasks_end - tasks_begin);
    std::string list;
    if (tasks.rfind("task ", 0) == 0) {
      list = tasks.substr(5);
    } else if (tasks.rfind("tasks ", 0) == 0) {
      list = tasks.substr(6);
    } else {
      continue;
    }
    if (list.empty() || list.find_first_not_of("0123456789,-") != std::string::npos) continue;
    SrunTaskFailure f;
    f.host = line.substr(prefix.size(), host_end - prefix.size());
    f.tasks = tasks;
    f.what = trim(line.substr(tasks_end + 2));
    std::istringstream ranges(list);
    for (std::string range; std::getline(ranges, range, ',');) {
      if (range.substr(0, range.find('-')) == "0") f.includes_rank0 = true;
    }
    return f;
  }
  return std::nullopt;
}

std::optional<SlurmJobStates> query_slurm_jobs(const std::vector<std::string>& job_ids) {
  SlurmJobStates states;
  if (job_ids.empty()) return states;
  bool answered = false;
  std::vector<std::string> unknown;
  // One job per call: squeue refuses the whole list when one id is no longer known.
  for (const std::string& id : job_ids) {
    Captured c = capture_process(
        {"squeue", "-h", "-r", "-t", "all", "-j", slurm_base_job_id(id), "-o", "%i|%T|%r"}, 30);
    if (!c.started) break;
    answered = answered || c.ok() || c.err.find("Invalid job id") != std::string::npos;
    if (c.ok() && !trim(c.out).empty()) {
      parse_squeue_lines(c.out, &states);
    } else {
      unknown.push_back(slurm_base_job_id(id));
    }
  }
  if (!unknown.empty()) {
    Captured c = capture_process(
        {"sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", join(unknown, ",")}, 30);
    if (c.ok()) {
      answered = true;
      parse_sacct_lines(c.out, &states);
    }
  }
  if (!answered) return std::nullopt;
  return states;
}

std::optional<long> slurm_max_array_size() {
  Captured c = capture_process({"scontrol", "show", "config"}, 30);
  if (!c.ok()) return std::nullopt;
  std::istringstream in(c.out);
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    if (eq == std::string::npos || trim(line.substr(0, eq)) != "MaxArraySize") continue;
    char* end = nullptr;
    std::string value = trim(line.substr(eq + 1));
    long n = std::strtol(value.c_str(), &end, 10);
    if (end != value.c_str() && n > 0) return n;
  }
  return std::nullopt;
}

std::optional<long> slurm_time_seconds(const std::string& text) {
  std::string t = trim(text);
  if (t.empty() || t == "UNLIMITED" || t == "INFINITE" || t == "unlimited" || t == "infinite") {
    return std::nullopt;
  }
  auto number = [](const std::string& s) -> std::optional<long> {
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return std::stol(s);
  };
  long days = 0;
  std::string rest = t;
  bool with_days = false;
  if (size_t dash = t.find('-'); dash != std::string::npos) {
    std::optional<long> d = number(t.substr(0, dash));
    if (!d) return std::nullopt;
    days = *d;
    rest = t.substr(dash + 1);
    with_days = true;
  }
  std::vector<long> parts;
  size_t start = 0;
  while (true) {
    size_t colon = rest.find(':', start);
    std::optional<long> n = number(rest.substr(start, colon - start));
    if (!n) return std::nullopt;
    parts.push_back(*n);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return std::nullopt;
  long seconds = 0;
  if (with_days) {
    // D-HH, D-HH:MM, D-HH:MM:SS
    seconds = parts[0] * 3600 + (parts.size() > 1 ? parts[1] * 60 : 0) +
              (parts.size() > 2 ? parts[2] : 0);
  } else if (parts.size() == 1) {
    seconds = parts[0] * 60;  // minutes
  } else if (parts.size() == 2) {
    seconds = parts[0] * 60 + parts[1];  // MM:SS
  } else {
    seconds = parts[0] * 3600 + parts[1] * 60 + parts[2];
  }
  return days * 86400 + seconds;
}

std::string slurm_time_text(long seconds) {
  long minutes = (std::max(0L, seconds) + 59) / 60;
  long days = minutes / 1440, hours = minutes / 60 % 24, mins = minutes % 60;
  char buf[48];
  if (days > 0) {
    std::snprintf(buf, sizeof(buf), "%ld-%02ld:%02ld:00", days, hours, mins);
  } else {
    std::snprintf(buf, sizeof(buf), "%02ld:%02ld:00", hours, mins);
  }
  return buf;
}

std::optional<long> slurm_partition_max_time(const std::string& partition) {
  std::vector<std::string> argv = {"scontrol", "show", "partition", "-o"};
  if (!partition.empty()) argv.insert(argv.begin() + 3, partition);
  Captured c = capture_process(argv, 30);
  if (!c.ok()) return std::nullopt;
  std::istringstream lines(c.out);
  for (std::string line; std::getline(lines, line);) {
    // One partition a line: "PartitionName=debug ... Default=YES ... MaxTime=UNLIMITED ...".
    if (partition.empty() && line.find("Default=YES") == std::string::npos) continue;
    size_t at = line.find("MaxTime=");
    if (at == std::string::npos) return std::nullopt;
    std::string value = line.substr(at + 8);
    value = value.substr(0, value.find(' '));
    return slurm_time_seconds(value);
  }
  return std::nullopt;
}

std::string slurm_requeue(const std::string& job_id) {
  Captured c = capture_process({"scontrol", "requeue", job_id}, 60);
  if (c.ok()) return "";
  if (!c.started) return "scontrol not found";
  std::string why = trim(c.err.empty() ? c.out : c.err);
  return why.empty() ? "scontrol exited with " + std::to_string(c.exit_code) : why;
}

std::string slurm_submit(const std::string& script_path) {
  Captured c = capture_process({"sbatch", "--parsable", script_path}, 120);
  if (!c.started) {
    throw Error::input(Mark::in(script_path), "", "sbatch was not found",
                       "submit from a SLURM login node, or run the points here with "
                       "`bench-sweep run`");
  }
  if (!c.ok()) {
    throw Error::input(Mark::in(script_path), "",
                       "sbatch refused the job: " + trim(c.err.empty() ? c.out : c.err),
                       "check the sweep's slurm.* keys (partition, account, time...)");
  }
  std::string id = trim(c.out);
  id = id.substr(0, id.find(';'));  // "123;cluster"
  if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    throw Error::input(Mark::in(script_path), "",
                       "sbatch answered '" + trim(c.out) + "', not a job id");
  }
  return id;
}

bool in_slurm_array_task() {
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  return task != nullptr && *task != '\0';
}

std::vector<PoolNode> allocation_pool(int fallback_cpus) {
  const char* list = std::getenv("SLURM_JOB_NODELIST");
  std::vector<std::string> names;
  if (list != nullptr && *list != '\0') {
    Captured c = capture_process({"scontrol", "show", "hostnames", list}, 30);
    if (c.ok()) {
      std::istringstream lines(c.out);
      for (std::string line; std::getline(lines, line);) {
        if (!trim(line).empty()) names.push_back(trim(line));
      }
    }
  }
  if (names.empty()) {
    throw Error::input(Mark::in("--jobs"), "",
                       "cannot tell this allocation's nodes (SLURM_JOB_NODELIST" +
                           std::string(list != nullptr ? "=" + std::string(list) : " unset") +
                           ", and `scontrol show hostnames` did not expand it)",
                       "run with --jobs 1 (the default), or where scontrol works");
  }
  const char* per_node = std::getenv("SLURM_JOB_CPUS_PER_NODE");
  std::vector<int> cpus =
      parse_slurm_cpus_per_node(per_node != nullptr ? per_node : "", names.size());
  if (cpus.empty()) cpus.assign(names.size(), std::max(1, fallback_cpus));
  int gpus = 0;
  if (const char* g = std::getenv("SLURM_GPUS_ON_NODE")) gpus = std::max(0, std::atoi(g));
  std::vector<PoolNode> nodes;
  for (size_t i = 0; i < names.size(); ++i) {
    PoolNode n;
    n.name = names[i];
    for (int c = 0; c < cpus[i]; ++c) n.cpus.push_back(c);
    for (int g = 0; g < gpus; ++g) n.gpus.push_back(std::to_string(g));
    nodes.push_back(std::move(n));
  }
  return nodes;
}

}  // namespace sweepbench
