// The megatron parser on logs in the format Megatron-LM's training_log() prints (its line as of
// 2024-2025: a timestamp, then " | "-separated figures; the throughput only with --log-throughput;
// torchrun's "[default0]:" prefix; an iteration skipped by the loss scaler without a loss).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "command/metric_eval.h"
#include "config/command_spec.h"
#include "config/config.h"
#include "config/yaml_io.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

using sweepbench::testing::TempDir;

std::map<std::string, CommandMetric> read_megatron(const std::string& log) {
  TempDir dir;
  CommandOutputs out;
  out.stdout_path = dir.write("logs/out.txt", log);
  out.stderr_path = dir.write("logs/err.txt", "");
  out.point_dir = dir.path();
  CommandSpec spec = command_spec_of(resolve_config(normalize_partial_config(
      parse_yaml("benchmark: command\ncommand:\n  argv: [p]\n  parser: megatron\n", "c.yaml"))));
  std::map<std::string, CommandMetric> by_name;
  for (CommandMetric& m : read_metrics(spec.metrics, out)) by_name[m.name] = m;
  return by_name;
}

const char* const kLog =
    "Number of parameters in transformer layers in billions:  0.01\n"
    "[Rank 0] (after 1 iterations) memory (MB) | allocated: 542.36 | max allocated: 623.57\n"
    " [2025-08-01 07:19:37] iteration        1/       4 | consumed samples:          128 | "
    "elapsed time per iteration (ms): 19138.8 | throughput per GPU (TFLOP/s/GPU): 80.2 | "
    "learning rate: 6.976744E-08 | global batch size:   128 | lm loss: 1.043863E+01 | "
    "loss scale: 1.0 | grad norm: 26.203 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 |\n"
    " [2025-08-01 07:19:50] iteration        2/       4 | consumed samples:          256 | "
    "elapsed time per iteration (ms): 12936.1 | throughput per GPU (TFLOP/s/GPU): 118.7 | "
    "learning rate: 1.395349E-07 | global batch size:   128 | loss scale: 65536.0 | number of "
    "skipped iterations:   1 | number of nan iterations:   0 |\n"
    "[default0]: [2025-08-01 07:20:03] iteration        3/       4 | consumed samples:          "
    "384 | elapsed time per iteration (ms): 12978.1 | throughput per GPU (TFLOP/s/GPU): 118.3 | "
    "learning rate: 2.093023E-07 | global batch size:   128 | lm loss: 1.044375E+01 | loss "
    "scale: 32768.0 | grad norm: 25.930 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 |\n"
    " [2025-08-01 07:20:16] iteration        4/       4 | consumed samples:          512 | "
    "elapsed time per iteration (ms): 12900.0 | throughput per GPU (TFLOP/s/GPU): 119.0 | "
    "learning rate: 2.790698E-07 | global batch size:   128 | lm loss: 1.043001E+01 | loss "
    "scale: 32768.0 | grad norm: 25.1 | number of skipped iterations:   0 | number of nan "
    "iterations:   2 |\n"
    "[after training is done] datetime: 2025-08-01 07:20:16\n";

TEST(MegatronParser, ReadsTheIterationLinesLeavingOutTheFirstIntervalsTimes) {
  auto m = read_megatron(kLog);
  // The time and the throughput: the mean of the intervals after the first, which holds the
  // compilation (19,138.8 ms).
  EXPECT_TRUE(m["iteration_time_ms"].found);
  EXPECT_DOUBLE_EQ(m["iteration_time_ms"].value, (12936.1 + 12978.1 + 12900.0) / 3);
  EXPECT_EQ(m["iteration_time_ms"].unit, "ms");
  EXPECT_EQ(m["iteration_time_ms"].values.size(), 3u);
  EXPECT_DOUBLE_EQ(m["tflops_per_gpu"].value, (118.7 + 118.3 + 119.0) / 3);
  EXPECT_EQ(m["tflops_per_gpu"].unit, "TFLOP/s");
  // The last interval's loss and grad norm (an interval skipped by the loss scaler has none).
  EXPECT_DOUBLE_EQ(m["lm_loss"].value, 10.43001);
  EXPECT_DOUBLE_EQ(m["grad_norm"].value, 25.1);
  EXPECT_DOUBLE_EQ(m["global_batch_size"].value, 128);
  // Skipped and nan iterations over the whole run, the first interval's included.
  EXPECT_DOUBLE_EQ(m["skipped_iterations"].value, 1);
  EXPECT_DOUBLE_EQ(m["nan_iterations"].value, 2);
}

TEST(MegatronParser, ALogWithoutThroughputOrWithOneIntervalSaysWhatIsMissing) {
  // Without --log-throughput: no throughput, and it is optional.
  const std::string line =
      " [2024-08-01 09:44:55] iteration        1/       5 | consumed samples:           32 | "
      "elapsed time per iteration (ms): 3902.7 | learning rate: 6.000000E-05 | global batch "
      "size:    32 | loss scale: 4294967296.0 | number of skipped iterations:   1 | number of "
      "nan iterations:   0 |\n";
  auto one = read_megatron(line);
  EXPECT_FALSE(one["tflops_per_gpu"].found);
  EXPECT_FALSE(one["tflops_per_gpu"].required);
  // One interval only: it is the warm-up, so there is no time to report, and the reason says so.
  EXPECT_FALSE(one["iteration_time_ms"].found);
  EXPECT_TRUE(one["iteration_time_ms"].required);
  EXPECT_EQ(one["iteration_time_ms"].problem,
            "only 1 value read, and the first is left out as the program's warm-up");
  auto two = read_megatron(line + std::string(line));
  EXPECT_DOUBLE_EQ(two["iteration_time_ms"].value, 3902.7);
  // Nothing of Megatron's: the usual "no line matches", naming the parser.
  auto none = read_megatron("hello\n");
  EXPECT_EQ(none["iteration_time_ms"].problem,
            "no line of output matches the megatron parser's pattern");
}

}  // namespace
}  // namespace sweepbench
