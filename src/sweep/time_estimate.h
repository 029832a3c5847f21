// The sweep's predicted time and cost (predict/time_model.h) with the calibration that measured
// points give it: read by bench-sweep plan --estimate (plan_output.cc), and by run and submit
// before they start (predicted_time_line).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "predict/time_model.h"
#include "sweep/expand.h"

namespace sweepbench {

// The sweep's predicted time in all: what run and submit print before they start.
struct SweepTimeTotal {
  size_t points = 0;
  size_t predicted = 0;      // with a time
  size_t calibrated = 0;     // of those, scaled by a measured point of their model
  size_t unknown = 0;        // bench-train or bench-infer without a rate: `missing` says why
  size_t without_model = 0;  // commands
  size_t serves = 0;         // serve points: a server's speed is what they measure
  size_t measured = 0;       // measured points read from `calibrate`
  size_t assumed_gpu = 0;    // on GPUs without hardware.name: predicted as an H100
  size_t not_run = 0;        // left out by the caller's `runs`, for this reason:
  std::string not_run_why = "not selected, already ok, or over memory_limit";
  size_t priced = 0;  // with hardware.price_per_hour
  double device_hours = 0, run_s = 0;
  std::optional<double> cost_usd;  // where hardware.price_per_hour is set
  std::string missing;
  std::string uncalibrated_why;  // said after "uncalibrated" when set: why nothing calibrated it
};
// `runs`, when given, says which points count (those run or submit will run).
SweepTimeTotal predict_sweep_time(const Plan& plan, const std::vector<std::string>& calibrate,
                                  const std::function<bool(const SweepPoint&)>& runs = {});
// "predicted: 3.2 device-hours (48 points; 12 calibrated by measured points), $9.60" or, with
// nothing to predict, why.
std::string describe_sweep_time(const SweepTimeTotal& total);
// describe_sweep_time(predict_sweep_time(...)), or "no predicted time: WHY" when the results
// tree cannot be read: run and submit print it and go on. `uncalibrated_why`: SweepTimeTotal's.
std::string predicted_time_line(const Plan& plan, const std::vector<std::string>& calibrate,
                                const std::function<bool(const SweepPoint&)>& runs,
                                const std::string& uncalibrated_why = "");
// Error(kInput) naming the first of `dirs` (--calibrate's) that is not a directory.
void check_calibration_dirs(const std::vector<std::string>& dirs);
// The results tree run and submit calibrate by: `out_dir` when it is a directory (its points that
// ran ok), else none.
std::vector<std::string> calibration_dirs(const std::string& out_dir);

struct LoadedCalibration {
  TimeCalibration calibration;
  size_t measured = 0;  // ok points with a measured step time and a prediction
};

// Each DIR is a results tree (its DIR/<tag>/ point directories, in name order) or one point
// directory. A point calibrates when its summary.json says ok and gives step_time_median_s
// (bench-train) or e2e_p50_s (bench-infer), and its config.yaml loads; a model's
// (time_model_key) factor is the median over its points (TimeCalibration). A DIR that is not a directory is Error(kInput); a
// point that cannot be read is passed over.
LoadedCalibration load_time_calibration(const std::vector<std::string>& dirs);

// predict_sweep_time with the calibration loaded once.
SweepTimeTotal predict_sweep_time(const Plan& plan, const LoadedCalibration& loaded,
                                  const std::function<bool(const SweepPoint&)>& runs);

}  // namespace sweepbench
