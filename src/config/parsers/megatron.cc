// Megatron-LM's training log: the line its training_log() prints every --log-interval iterations.
//
//  [2025-08-01 07:19:50] iteration        2/    5000 | consumed samples:          256 | elapsed
//  time per iteration (ms): 12936.1 | throughput per GPU (TFLOP/s/GPU): 118.7 | learning rate:
//  1.395349E-07 | global batch size:   128 | lm loss: 1.044022E+01 | loss scale: 1.0 | grad norm:
//  26.305 | number of skipped iterations:   0 | number of nan iterations:   0 |
//
// (one line; the throughput only with --log-throughput, the loss and the grad norm only where the
// interval had them; torchrun may put "[default0]:" first). Each figure is of the interval since
// the line before, so the first line holds the compilation and the first steps: the time and the
// throughput leave it out, as bench-train leaves out its warm-up steps. Printed by the last rank,
// on stdout; read from either stream.
#include "config/parsers/parser.h"

namespace sweepbench {
namespace {

// A number as Megatron-LM formats its figures ({:.1f}, {:.6E}, {:3d}), or nan and inf.
const char* const kNumber = R"(([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf))";

MetricSpec figure(const std::string& name, const std::string& unit, const std::string& label,
                  MetricReduce reduce, bool required, size_t skip = 0) {
  MetricSpec m = parser_regex_metric(
      "megatron", name, unit,
      R"(\biteration +[0-9]+/ *[0-9]+ \|.*\| )" + label + R"(: *)" + kNumber + R"( *\|)", reduce,
      required);
  m.skip = skip;
  return m;
}

std::vector<MetricSpec> metrics() {
  return {figure("iteration_time_ms", "ms", R"(elapsed time per iteration \(ms\))",
                 MetricReduce::kMean, true, 1),
          figure("tflops_per_gpu", "TFLOP/s", R"(throughput per GPU \(TFLOP/s/GPU\))",
                 MetricReduce::kMean, false, 1),
          figure("global_batch_size", "samples", "global batch size", MetricReduce::kLast, false),
          figure("lm_loss", "", "lm loss", MetricReduce::kLast, false),
          figure("grad_norm", "", "grad norm", MetricReduce::kLast, false),
          figure("skipped_iterations", "iterations", "number of skipped iterations",
                 MetricReduce::kSum, false),
          figure("nan_iterations", "iterations", "number of nan iterations", MetricReduce::kSum,
                 false)};
}

}  // namespace

Parser parser_megatron() {
  return {"megatron", "Megatron-LM's training log", metrics,
          "the megatron parser reads the iteration lines Megatron-LM's last rank prints every "
          "--log-interval iterations: give it at least two"};
}

}  // namespace sweepbench
