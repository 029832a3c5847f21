#include "sweep/time_estimate.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <system_error>

#include "config/config.h"
#include "config/yaml_io.h"
#include "layout/paths.h"
#include "predict/memory_model.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

// The measured step of a point directory, or 0.
double measured_step(const fs::path& dir, Value* config) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / kSummaryFile, ec) || !fs::is_regular_file(dir / kConfigFile, ec))
    return 0;
  try {
    const Value summary = load_yaml_file((dir / kSummaryFile).string());
    const Value* status = summary.find("status");
    const Value* benchmark = summary.find("benchmark");
    const Value* metrics = summary.find("metrics");
    if (status == nullptr || !status->is_string() || status->as_string() != "ok") return 0;
    if (benchmark == nullptr || !benchmark->is_string() || metrics == nullptr) return 0;
    // What the point is predicted as: its benchmark, or a command's command.predict_as, whose
    // program reports the same metric (docs/commands.md).
    *config = load_point_config((dir / kConfigFile).string(), {});
    const std::string kind = predicted_benchmark(*config);
    if (kind != "train" && kind != "infer") return 0;
    // The median: a step the machine interrupted is not what the model predicts.
    const Value* v = metrics->find(kind == "train" ? "step_time_median_s" : "e2e_p50_s");
    if (v == nullptr || !v->is_number()) return 0;
    // A generation calibrates the decode path it ran, as summary.json says (absent: a point
    // from before infer.cuda_graph, or a command: no graph).
    if (kind == "infer") {
      const Value* graph = summary.find("cuda_graph");
      config->set_path("infer.cuda_graph",
                       Value::boolean(graph != nullptr && graph->is_bool() && graph->as_bool()));
    }
    return v->as_float();
  } catch (const std::exception&) {
    return 0;  // an unreadable or older point: not a calibration
  }
}

}  // namespace

void check_calibration_dirs(const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) {
      throw Error::input(Mark::in("--calibrate"), d, "not a directory",
                         "give a results tree of bench-sweep run or one point's directory");
    }
  }
}

LoadedCalibration load_time_calibration(const std::vector<std::string>& dirs) {
  LoadedCalibration out;
  check_calibration_dirs(dirs);
  for (const std::string& d : dirs) {
    std::error_code ec;
    std::vector<fs::path> points;
    if (fs::exists(fs::path(d) / kSummaryFile, ec)) {
      points.push_back(d);
    } else {
      // increment(ec): a listing that fails half-way gives the points read so far.
      fs::directory_iterator it(d, ec);
      for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::error_code kind;
        if (it->is_directory(kind)) points.push_back(it->path());
      }
      std::sort(points.begin(), points.end());
    }
    for (const fs::path& p : points) {
      Value config;
      const double step = measured_step(p, &config);
      if (step <= 0) continue;
      if (out.calibration.add(config, step)) ++out.measured;
    }
  }
  return out;
}

SweepTimeTotal predict_sweep_time(const Plan& plan, const LoadedCalibration& loaded,
                                  const std::function<bool(const SweepPoint&)>& runs) {
  SweepTimeTotal total;
  total.measured = loaded.measured;
  plan.for_each_point(
      [&](const SweepPoint& p) {
        ++total.points;
        if (runs && !runs(p)) {
          ++total.not_run;
          return;
        }
        TimePrediction t;
        if (p.settings.benchmark == "serve") {
          ++total.serves;
          return;
        }
        if (!predict_point_time(p.config, &t)) {
          ++total.without_model;
          return;
        }
        if (!t.known) {
          if (total.missing.empty()) total.missing = t.missing;
          ++total.unknown;
          return;
        }
        loaded.calibration.apply(p.config, &t);
        if (t.calibration != 1) ++total.calibrated;
        if (t.assumed_gpu) ++total.assumed_gpu;
        ++total.predicted;
        total.device_hours += t.device_hours;
        total.run_s += t.run_s;
        if (t.cost_usd) {
          total.cost_usd = total.cost_usd.value_or(0) + *t.cost_usd;
          ++total.priced;
        }
      },
      true);
  return total;
}

SweepTimeTotal predict_sweep_time(const Plan& plan, const std::vector<std::string>& calibrate,
                                  const std::function<bool(const SweepPoint&)>& runs) {
  return predict_sweep_time(plan, load_time_calibration(calibrate), runs);
}

std::string predicted_time_line(const Plan& plan, const std::vector<std::string>& calibrate,
                                const std::function<bool(const SweepPoint&)>& runs,
                                const std::string& uncalibrated_why) {
  try {
    SweepTimeTotal total = predict_sweep_time(plan, calibrate, runs);
    total.uncalibrated_why = uncalibrated_why;
    return describe_sweep_time(total);
  } catch (const std::exception& e) {
    return std::string("no predicted time: ") + e.what();
  }
}



std::vector<std::string> calibration_dirs(const std::string& out_dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(out_dir, ec)) return {out_dir};
  return {};
}

std::string describe_sweep_time(const SweepTimeTotal& t) {
  char text[160];
  std::string out;
  if (t.predicted > 0) {
    std::snprintf(text, sizeof(text), "predicted %.3g device-hours for %zu of %zu points",
                  t.device_hours, t.predicted, t.points);
    out = text;
    if (t.cost_usd) {
      std::snprintf(text, sizeof(text), ", $%.2f", *t.cost_usd);
      out += text;
      if (t.priced < t.predicted) out += " (the " + std::to_string(t.priced) + " with a price)";
    }
    out += t.calibrated > 0 ? "; " + std::to_string(t.calibrated) +
                                  " calibrated by measured points of their model"
                            : "; uncalibrated" + (t.uncalibrated_why.empty()
                                                      ? std::string()
                                                      : " (" + t.uncalibrated_why + ")");
  } else if (t.not_run == t.points) {
    return "predicted 0 device-hours: none of its " + std::to_string(t.points) +
           " points is to run (" + t.not_run_why + ")";
  } else {
    out = "no predicted time for its " + std::to_string(t.points) + " points";
  }
  if (t.assumed_gpu > 0) {
    out += "; " + std::to_string(t.assumed_gpu) + " on GPUs predicted as an " + kAssumedGpu +
           " (set hardware.name)";
  }
  if (t.not_run > 0) {
    out += "; " + std::to_string(t.not_run) + " not to run (" + t.not_run_why + ")";
  }
  if (t.unknown > 0) out += "; " + std::to_string(t.unknown) + " without a rate (" + t.missing + ")";
  if (t.serves > 0) {
    out += "; " + plural(t.serves, "serve point") + " (a server's time is what it measures)";
  }
  if (t.without_model > 0)
    out += "; " + std::to_string(t.without_model) +
           " commands (no model to predict: command.predict_as declares one)";
  return out;
}

}  // namespace sweepbench
