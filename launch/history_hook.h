// `bench-sweep run --history STORE` and `submit --history STORE`: a sweep's finished points into
// the history store (docs/history.md) as it ends. The runner never opens the store: it runs
// bench-history (a process of its own, beside bench-sweep), and an array job gets one job after
// it that does, so no task touches an SQLite file on a shared file system.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace sweepbench {

struct HistoryHook {
  std::string store;                          // empty: none
  std::map<std::string, std::string> labels;  // --history-label NAME=VALUE
  bool wanted() const { return !store.empty(); }
};

// Checks --history (no newline or NUL) and each --history-label (NAME of letters, digits, _ . -;
// a printable VALUE), as bench-history will; Error(kInput) naming the option otherwise.
HistoryHook history_hook_of(const std::string& store, const std::vector<std::string>& labels);

// `bench-history ingest DIR --store STORE --label ...`, bench-history found beside `bench_sweep`.
std::vector<std::string> history_ingest_argv(const std::string& bench_sweep,
                                             const std::string& out_dir, const HistoryHook& hook);

// Runs the ingest after `bench-sweep run`, its messages to `err`. A failure is a warning naming
// the command to run later: the results are on disk whatever the store does.
void ingest_after_run(const std::string& out_dir, const HistoryHook& hook, std::ostream& err);

// The batch script of the job that ingests the sweep once `job_ids` have ended (afterany):
// `options` the #SBATCH lines it shares with the arrays (partition, account, qos).
std::string history_job_script(const std::vector<std::string>& argv,
                               const std::vector<std::string>& job_ids,
                               const std::vector<std::string>& options, const std::string& log_dir,
                               const std::string& header_comment);

}  // namespace sweepbench
