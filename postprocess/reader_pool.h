// bench-extract's reader processes: points read by `jobs` child processes whose rows come back
// in order (encoded records over pipes), and the spool that holds rows until their columns are
// known.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/value.h"
#include "postprocess/extract_table.h"

namespace sweepbench {

struct ExtractOptions {
  // USD per device-hour; < 0: none. The default for points whose hardware.price_per_hour is
  // null; cost_usd_per_mtok = price x world_size / mt_per_hour.
  double price_per_hour = -1;
  int jobs = 1;  // reader processes (always at least one: a crash in HDF5 costs only its point)
  // The most a reader may spend on one point before it is stopped and the point is incomplete.
  double point_timeout_s = 60;
  Series series = Series::kNone;
  // A point is `noisy` when a coefficient of variation of its timings (step_time_cv; ttft_cv,
  // e2e_cv) is above this (docs/metrics.md, "Intervals and noise").
  double noise_threshold = 0.05;
};

// Points written aside, in a temporary file, as they come, and read back in order: so that a
// table streamed in bounded memory can still leave out the columns that no point has (CSV and
// JSON). filled() is every column some row or series row has a value in.
class PointSpool {
 public:
  PointSpool();
  ~PointSpool();
  PointSpool(const PointSpool&) = delete;
  PointSpool& operator=(const PointSpool&) = delete;
  void add(const ExtractedPoint& point);
  void replay(const std::function<void(ExtractedPoint&&)>& sink);
  const std::set<std::string>& filled() const { return filled_; }
  // The command metrics of the rows (their units maps' names), in the order first seen: those a
  // parser names from what the program printed (llama-bench's pp512) are known only now.
  const std::vector<std::string>& command_metrics() const { return command_metrics_; }

 private:
  std::FILE* file_ = nullptr;
  std::set<std::string> filled_;
  std::vector<std::string> command_metrics_;
};

// The command metrics of `row` (its units map's names) added to `names`, each once, in order.
void add_command_metrics(const std::map<std::string, Value>& row, std::vector<std::string>* names);

// `columns` with every name of `metrics` it lacks, before its exit_code (or at its end).
std::vector<std::string> with_command_metrics(std::vector<std::string> columns,
                                              const std::vector<std::string>& metrics);

// Reads the points in order and hands each row to `sink`, in order. Warnings that concern no
// point (a manifest that cannot be read) go to `warning` first. Error when a reader process dies.
void extract_each(const std::vector<std::string>& point_dirs, const ExtractOptions& options,
                  const std::function<void(const std::string&)>& warning,
                  const std::function<void(ExtractedPoint&&)>& sink);

// The whole table at once (extract_each collected).
ExtractTable extract_points(const std::vector<std::string>& point_dirs,
                            const ExtractOptions& options = {});

}  // namespace sweepbench
