// The sweep's predicted time and cost (results/time_model.h) with the calibration that measured
// points give it: read by bench-sweep plan --estimate (plan_output.cc) and, through
// plan_output.h's predict_sweep_time, by run and submit before they start. Included by the
// sweep engine's own files only: launch/ sees plan_output.h.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "results/time_model.h"
#include "sweep/plan_output.h"

namespace sweepbench {

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

// plan_output.h's predict_sweep_time with the calibration loaded once.
SweepTimeTotal predict_sweep_time(const Plan& plan, const LoadedCalibration& loaded,
                                  const std::function<bool(const SweepPoint&)>& runs);

}  // namespace sweepbench
