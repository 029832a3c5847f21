// The names of a metric's sources and reductions, as the config and the tables spell them.
#include "config/metric_spec.h"

namespace sweepbench {

std::string to_string(MetricSource s) {
  switch (s) {
    case MetricSource::kStdout:
      return "stdout";
    case MetricSource::kStderr:
      return "stderr";
    case MetricSource::kOutput:
      return "output";
    case MetricSource::kFile:
      return "file";
    case MetricSource::kJson:
      return "json";
  }
  return "?";
}

std::string to_string(MetricReduce r) {
  switch (r) {
    case MetricReduce::kLast:
      return "last";
    case MetricReduce::kFirst:
      return "first";
    case MetricReduce::kMean:
      return "mean";
    case MetricReduce::kMin:
      return "min";
    case MetricReduce::kMax:
      return "max";
    case MetricReduce::kSum:
      return "sum";
    case MetricReduce::kCount:
      return "count";
    case MetricReduce::kAll:
      return "all";
  }
  return "?";
}

}  // namespace sweepbench
