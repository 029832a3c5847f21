// bench-command's reading of a finished run: every metric source and reduction on hand-made logs
// and files, and the verdict for each success criterion, out-of-memory text and stop signal. Then
// the program runner itself with real processes: output, exit codes, a program that cannot
// start, and a stop signal passed on.
#include "command/metric_eval.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <thread>

#include "command/bench_command.h"
#include "command/child_process.h"
#include "config/config.h"
#include "config/yaml_io.h"
#include "support/temp_dir.h"
#include "text/text.h"

namespace sweepbench {
namespace {

using sweepbench::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

CommandSpec spec_of(const std::string& command_yaml) {
  return command_spec_of(resolve_config(normalize_partial_config(
      parse_yaml("benchmark: command\ncommand:\n  argv: [p]\n" + command_yaml, "c.yaml"))));
}

struct Logs {
  TempDir dir;
  CommandOutputs out;
  Logs(const std::string& stdout_text, const std::string& stderr_text) {
    out.stdout_path = dir.write("logs/out.txt", stdout_text);
    out.stderr_path = dir.write("logs/err.txt", stderr_text);
    out.point_dir = dir.path();
  }
};

std::vector<CommandMetric> read(const std::string& metrics_yaml, const Logs& run) {
  return read_metrics(spec_of("  metrics:\n" + metrics_yaml).metrics, run.out);
}

TEST(ReadMetrics, EveryReductionOverEveryMatch) {
  Logs run("step 1 loss 4.0 tps 100\nstep 2 loss 2.0 tps 300\r step 3 loss 3.0 tps 200\n", "");
  std::vector<CommandMetric> m = read(
      "    - {name: last, regex: 'loss ([0-9.]+)'}\n"
      "    - {name: first, regex: 'loss ([0-9.]+)', reduce: first}\n"
      "    - {name: mean, regex: 'loss ([0-9.]+)', reduce: mean}\n"
      "    - {name: min, regex: 'tps (\\d+)', reduce: min}\n"
      "    - {name: max, regex: 'tps (\\d+)', reduce: max}\n"
      "    - {name: sum, regex: 'tps (\\d+)', reduce: sum}\n"
      "    - {name: count, regex: 'step', reduce: count}\n"
      "    - {name: all, regex: 'step (\\d)', reduce: all}\n"
      "    - {name: none, regex: 'absent', reduce: count}\n",
      run);
  ASSERT_EQ(m.size(), 9u);
  EXPECT_EQ(m[0].value, 3.0);
  EXPECT_EQ(m[1].value, 4.0);
  EXPECT_EQ(m[2].value, 3.0);
  EXPECT_EQ(m[3].value, 100);
  EXPECT_EQ(m[4].value, 300);
  EXPECT_EQ(m[5].value, 600);
  EXPECT_EQ(m[6].value, 3);  // '\r' ends a line: a progress bar's redraw is a line
  EXPECT_THAT(m[7].values, ElementsAre(1, 2, 3));
  EXPECT_EQ(m[7].value, 3);
  EXPECT_EQ(m[7].reduce, "all");
  EXPECT_TRUE(m[8].found);  // a count of nothing is 0, found
  EXPECT_EQ(m[8].value, 0);
  for (const CommandMetric& x : m) EXPECT_EQ(x.source, "stdout");
}

TEST(ReadMetrics, StderrFilesJsonAndJsonLines) {
  Logs run("noise\n{\"avg_ts\": 10.5, \"n_gen\": 0}\nnot json {\n{\"avg_ts\": 20}\n", "loss=1.5\n");
  run.dir.write("work/train.log", "throughput 7 samples/s\nthroughput 9 samples/s\n");
  run.dir.write("all_results.json",
                "{\"train_runtime\": 12.5, \"a/b\": {\"c~d\": \"3\"},"
                " \"flag\": true}\n");
  run.dir.write("state.json",
                "{\"log_history\": [{\"loss\": 3}, {\"loss\": 2}, {\"eval\": 1}, {\"loss\": 1}]}");
  run.dir.write("bench.jsonl", "{\"tps\": 1}\n\n{\"tps\": 3}\n");
  std::vector<CommandMetric> m = read(
      "    - {name: e, from: stderr, regex: 'loss=(\\S+)'}\n"
      "    - {name: f, from: work/train.log, regex: 'throughput (\\d+)', reduce: mean}\n"
      "    - {name: j, unit: s, from: json all_results.json, pointer: /train_runtime}\n"
      "    - {name: esc, from: all_results.json, pointer: /a~1b/c~0d}\n"
      "    - {name: flag, from: all_results.json, pointer: /flag}\n"
      "    - {name: star, from: state.json, pointer: '/log_history/*/loss', reduce: all}\n"
      "    - {name: lines, from: bench.jsonl, pointer: /tps, reduce: sum}\n"
      "    - {name: out, from: stdout, pointer: /avg_ts, reduce: mean}\n",
      run);
  EXPECT_EQ(m[0].value, 1.5);
  EXPECT_EQ(m[0].source, "stderr");
  EXPECT_EQ(m[1].value, 8);
  EXPECT_EQ(m[1].source, "work/train.log");
  EXPECT_EQ(m[2].value, 12.5);
  EXPECT_EQ(m[2].unit, "s");
  EXPECT_EQ(m[3].value, 3);  // a number written as a string, RFC 6901 escapes
  EXPECT_EQ(m[4].value, 1);
  EXPECT_THAT(m[5].values, ElementsAre(3, 2, 1));
  EXPECT_EQ(m[6].value, 4);
  EXPECT_EQ(m[7].value, 15.25);
  for (const CommandMetric& x : m) EXPECT_TRUE(x.found) << x.name << ": " << x.problem;
}

TEST(ReadMetrics, WhatIsMissingOrNotANumberIsSaid) {
  Logs run("loss abc\n", "");
  run.dir.write("bad.jsonl", "{\"a\": 1}\n{oops\n");
  std::vector<CommandMetric> m = read(
      "    - {name: nan, regex: 'loss (\\S+)'}\n"
      "    - {name: nomatch, regex: 'tps (\\d+)'}\n"
      "    - {name: nofile, from: gone.log, regex: '(x)'}\n"
      "    - {name: nojson, from: json gone.json, pointer: /a}\n"
      "    - {name: nokey, from: bad.jsonl, pointer: /a}\n"
      "    - {name: text, from: json t.json, pointer: /s}\n",
      run);
  run.dir.write("t.json", "{\"s\": \"fast\"}");
  std::vector<CommandMetric> text =
      read("    - {name: text, from: json t.json, pointer: /s}\n", run);
  for (const CommandMetric& x : m) EXPECT_FALSE(x.found) << x.name;
  EXPECT_TRUE(std::isnan(m[0].value));
  EXPECT_EQ(m[0].problem, "'abc' (stdout line 1) is not a number");
  EXPECT_EQ(m[1].problem, "no line of stdout matches tps (\\d+)");
  EXPECT_EQ(m[2].problem, "gone.log does not exist");
  EXPECT_EQ(m[3].problem, "gone.json does not exist");
  EXPECT_EQ(m[4].problem, "bad.jsonl line 2 is not JSON");
  EXPECT_EQ(text[0].problem, "/s is the string \"fast\", not a number");
}

CommandEnd exited(int code);

// The parsers on their programs' own formats (written here from each program's source: the
// programs themselves need a model hub, GPUs or a build this machine lacks).
std::map<std::string, CommandMetric> by_name(const std::vector<CommandMetric>& metrics) {
  std::map<std::string, CommandMetric> out;
  for (const CommandMetric& m : metrics) out[m.name] = m;
  return out;
}

TEST(Parsers, Fairseq2ReadsItsMetricLinesOnEitherStream) {
  Logs run("",
           "[2024-11-23 10:00:00,001] INFO fairseq2.recipes - train Metrics (step 10) - Loss: "
           "6.123 | Elements per Second: 12,345 | Elapsed Time: 12s | Wall Time: 1,234s\n"
           "[2024-11-23 10:00:12,001] INFO fairseq2.recipes - valid Metrics (step 10) - Loss: "
           "7.000 | Elements per Second: 99,999 | Elapsed Time: 3s\n"
           "[2024-11-23 10:00:24,001] INFO fairseq2.recipes - train Metrics (step 20) - Loss: "
           "5.5 | Elements per Second: 13,655 | Elapsed Time: 11s | Wall Time: 1,246s\n");
  CommandSpec spec = spec_of("  parser: fairseq2\n");
  auto m = by_name(read_metrics(spec.metrics, run.out));
  // Mean of the train lines only; integers are int() of the figure: N reads as N + 0.5.
  EXPECT_EQ(m["elements_per_second"].value, 13000.5);
  EXPECT_EQ(m["elapsed_time"].value, 24);
  EXPECT_EQ(m["wall_time"].value, 1246.5);
  EXPECT_EQ(m["train_loss"].value, 5.5);
  EXPECT_EQ(m["elements_per_second"].source, "output");
  EXPECT_EQ(judge_command(spec, exited(0), read_metrics(spec.metrics, run.out), run.out).status,
            "ok");
}

// fairseq2 0.8's lines (capital titles, NLL Loss, its five times), values printed as
// "<1", "<1s", "nan" and with exponents, and its JSON lines preferred where it wrote them.
TEST(Parsers, Fairseq2ReadsVersion08LinesAndPrefersItsJsonLines) {
  const std::string v08 =
      "[11/26/26 10:00:01] INFO     fairseq2 - Train Metrics (step 10) - NLL Loss: 5.62308 | "
      "Gradient Norm: 1.5e-05 | Data Epoch: 1 | Data Time: <1s | Compute Time: 11s | Lapse Time: "
      "11s | Total Time: 11s | Wall Time: 11s | Learning Rate: 0.0003 | Elements per Second: "
      "9,546 | Number of Elements: 2,048\n"
      "[11/26/26 10:00:02] INFO     fairseq2 - Validation Metrics (step 10) - NLL Loss: 9 | "
      "Elements per Second: 99,999\n"
      "[11/26/26 10:00:13] INFO     fairseq2 - Train Metrics (step 20) - lm - NLL Loss: "
      "1.5e-05 | Data Time: 2s | Compute Time: 9s | Lapse Time: 12s | Total Time: 23s | Wall "
      "Time: 23s | Elements per Second: <1\n";
  Logs run("", v08);
  CommandSpec spec = spec_of("  parser: fairseq2\n");
  auto m = by_name(read_metrics(spec.metrics, run.out));
  // int() of each figure, read as the middle of its interval: "<1" is 0.5 (not left out), N
  // is N + 0.5.
  EXPECT_EQ(m["elements_per_second"].value, (9546.5 + 0.5) / 2);
  EXPECT_EQ(m["data_time"].value, 0.5 + 2.5);
  EXPECT_EQ(m["compute_time"].value, 11.5 + 9.5);
  EXPECT_EQ(m["lapse_time"].value, 11.5 + 12.5);
  EXPECT_EQ(m["total_time"].value, 23.5);
  EXPECT_EQ(m["wall_time"].value, 23.5);
  EXPECT_EQ(m["nll_loss"].value, 1.5e-05);  // not 1.5
  EXPECT_FALSE(m["train_loss"].found);       // "NLL Loss" is not "Loss"
  EXPECT_FALSE(m["elapsed_time"].found);     // 0.3's, which 0.8 does not print: not required
  EXPECT_EQ(judge_command(spec, exited(0), read_metrics(spec.metrics, run.out), run.out).status,
            "ok");
  // Its JSON lines (exact figures) where it wrote them, one level below the point directory.
  run.dir.write("fs2/metrics/train.jsonl",
                "{\"Time\": \"2026-11-26T10:00:01\", \"Step\": 10, \"NLL Loss\": 5.623081, "
                "\"Data Time\": 0.25, \"Compute Time\": 11.2, \"Wall Time\": 11.45, "
                "\"Elements per Second\": 9546.7}\n"
                "{\"Time\": \"2026-11-26T10:00:13\", \"Step\": 20, \"NLL Loss\": 1.5e-05, "
                "\"Data Time\": 2.1, \"Compute Time\": 9.4, \"Wall Time\": 23.0, "
                "\"Elements per Second\": 0.4}\n");
  m = by_name(read_metrics(spec.metrics, run.out));
  EXPECT_DOUBLE_EQ(m["elements_per_second"].value, (9546.7 + 0.4) / 2);
  EXPECT_EQ(m["elements_per_second"].source, "fs2/metrics/train.jsonl");
  EXPECT_DOUBLE_EQ(m["data_time"].value, 2.35);
  EXPECT_EQ(m["nll_loss"].value, 1.5e-05);
  EXPECT_EQ(m["lapse_time"].value, 24);  // not in the JSON lines: from the log
  EXPECT_EQ(m["lapse_time"].source, "output");
}

// fairseq2 through rich on a pipe: each record wrapped at 80 columns, continuation lines indented
// past the time column, a record of the same second with its time column blank.
TEST(Parsers, Fairseq2JoinsTheLinesRichWrapped) {
  Logs run("",
           "2026-11-26 17:06:37 INFO     fairseq2 - Train Metrics (step 2) - NLL Loss:      \n"
           "                             6.75191 | Data Time: <1s | Compute Time: 3s | Lapse  \n"
           "                             Time: 5s | Total Time: 6s | Wall Time: 6s |         \n"
           "                             Elements per Second: 244                            \n"
           "                    INFO     fairseq2 - Train Metrics (step 4) - NLL Loss:      \n"
           "                             5.99255 | Wall Time: 11s | Elements per Second:     \n"
           "                             213                                                 \n");
  auto m = by_name(read_metrics(spec_of("  parser: fairseq2\n").metrics, run.out));
  EXPECT_EQ(m["elements_per_second"].value, (244.5 + 213.5) / 2);
  EXPECT_EQ(m["nll_loss"].value, 5.99255);
  EXPECT_EQ(m["lapse_time"].value, 5.5);  // "Lapse" and "Time: 5s" were on two lines
  EXPECT_EQ(m["wall_time"].value, 11.5);
  EXPECT_EQ(m["compute_time"].value, 3.5);
  // A continuation of rich's indent and tabs only (issue 51's review: joining it in place
  // threw std::out_of_range, an internal error of bench-command).
  Logs tabs("",
            "2026-11-26 17:06:37 INFO     fairseq2 - Train Metrics (step 2) - NLL Loss: 1.5 |\n"
            "                             \t\t\n"
            "                             Elements per Second: 244\n");
  m = by_name(read_metrics(spec_of("  parser: fairseq2\n").metrics, tabs.out));
  EXPECT_EQ(m["elements_per_second"].value, 244.5);
}

// A record wrapped into a hundred thousand lines is joined in linear time (each piece copied the
// line so far: quadratic, 3.2 MB/s on three million lines; bench/json_metrics.py measures it).
TEST(Parsers, AWrappedRecordOfManyLinesIsJoinedWhole) {
  std::string log = "2026-11-26 17:06:37 INFO     fairseq2 - Train Metrics (step 2) - NLL Loss: "
                    "1.5 | Elements per Second: 244 |\n";
  for (int i = 0; i < 100'000; ++i) log += std::string(29, ' ') + "more words of the record\n";
  Logs run("", log);
  auto m = by_name(read_metrics(spec_of("  parser: fairseq2\n").metrics, run.out));
  EXPECT_EQ(m["elements_per_second"].value, 244.5);
  EXPECT_EQ(m["nll_loss"].value, 1.5);
}

TEST(Parsers, HfTrainerReadsTheFinalDictOfTransformers4And5) {
  // 4.x prints floats (numpy's in its later releases); 5.x quoted strings of four digits. The
  // log_metrics block's runtime is "0:00:00.07", which is no number.
  const std::string block =
      "***** train metrics *****\n  train_runtime            = 0:00:00.07\n"
      "***** eval metrics *****\n  eval_loss                =     6.0211\n";
  for (const std::string& dict :
       {std::string("{'train_runtime': 0.0787, 'train_samples_per_second': 304.974, "
                    "'train_steps_per_second': 76.243, 'train_loss': 6.1434, 'epoch': 0.09}\n"),
        std::string("{'train_runtime': 0.0787, 'train_samples_per_second': np.float64(304.974), "
                    "'train_steps_per_second': 76.243, 'train_loss': 6.1434, 'epoch': 0.09}\n"),
        std::string("{'train_runtime': '0.0787', 'train_samples_per_second': '305', "
                    "'train_steps_per_second': '76.24', 'train_loss': '6.143', 'epoch': "
                    "'0.09375'}\n")}) {
    Logs run(dict + block, "");
    CommandSpec spec = spec_of("  parser: hf-trainer\n");
    auto m = by_name(read_metrics(spec.metrics, run.out));
    EXPECT_EQ(m["train_runtime"].value, 0.0787) << dict;
    EXPECT_NEAR(m["train_samples_per_second"].value, 305, 0.03) << dict;
    EXPECT_NEAR(m["train_loss"].value, 6.143, 0.0005) << dict;
    EXPECT_EQ(m["eval_loss"].value, 6.0211) << dict;
    EXPECT_EQ(judge_command(spec, exited(0), read_metrics(spec.metrics, run.out), run.out).status,
              "ok")
        << dict;
  }
}

// Issue 51: a quoted figure with its thousands grouped ('1,234.5', as 5.x's four significant
// digits of a large rate print) was read as 1, where a regex metric reads 1234.5.
TEST(Parsers, HfTrainerReadsGroupedThousandsAsEveryMetricDoes) {
  Logs run(
      "{'train_runtime': '12.3', 'train_samples_per_second': '1,234.5', "
      "'train_steps_per_second': '1,234', 'train_loss': '6.143', 'epoch': 1}\n",
      "");
  CommandSpec spec = spec_of("  parser: hf-trainer\n");
  auto m = by_name(read_metrics(spec.metrics, run.out));
  EXPECT_EQ(m["train_samples_per_second"].value, 1234.5);
  EXPECT_EQ(m["train_steps_per_second"].value, 1234);
  EXPECT_EQ(m["train_runtime"].value, 12.3);
}

// A Trainer whose output the parser does not read gave a reason that spelled the
// parser's pattern four times and was cut off. Now: the metrics named, why for the first, and
// the line that names it.
TEST(Parsers, AMissingParserMetricSaysWhatWasFoundInstead) {
  Logs run("{'train_runtime': 'soon', 'train_samples_per_second': 'many'}\n", "");
  CommandSpec spec = spec_of("  parser: hf-trainer\n");
  std::vector<CommandMetric> metrics = read_metrics(spec.metrics, run.out);
  EXPECT_EQ(judge_command(spec, exited(0), metrics, run.out).reason,
            "required metrics not found: train_runtime, train_samples_per_second, "
            "train_steps_per_second, train_loss (train_runtime: no line of stdout matches the "
            "hf-trainer parser's pattern; it is named on stdout line 1: {'train_runtime': 'soon', "
            "'train_samples_per_second': 'many'})");
}

TEST(Parsers, LlamaBenchJsonLinesAndJson) {
  const std::string pp = R"({"build_commit": "abc", "model_type": "llama 7B Q4_0", "n_prompt": )"
                         R"(512, "n_gen": 0, "avg_ns": 1000, "avg_ts": 2000.5, "stddev_ts": 3.1})";
  const std::string tg = R"({"build_commit": "abc", "model_type": "llama 7B Q4_0", "n_prompt": 0, )"
                         R"("n_gen": 128, "avg_ns": 9000, "avg_ts": 110.25, "stddev_ts": 0.4})";
  CommandSpec spec = spec_of("  parser: llama-bench\n");
  Logs lines(pp + "\n" + tg + "\n", "");
  auto m = by_name(read_metrics(spec.metrics, lines.out));
  EXPECT_EQ(m["pp_tokens_per_second"].value, 2000.5);
  EXPECT_EQ(m["tg_tokens_per_second"].value, 110.25);
  Logs array("[\n  " + pp + ",\n  " + tg + "\n]\n", "");  // -o json: one document
  m = by_name(read_metrics(spec.metrics, array.out));
  EXPECT_EQ(m["pp_tokens_per_second"].value, 2000.5);
  EXPECT_EQ(m["tg_tokens_per_second"].value, 110.25);
  EXPECT_EQ(m["tg_tokens_per_second"].unit, "tokens/s");
  // The spread and what ran are columns too.
  const std::string more = R"({"n_prompt": 512, "n_gen": 0, "avg_ts": 1999.5, "stddev_ts": 2.9, )"
                           R"("model_size": 3825065984, "model_n_params": 6738415616, )"
                           R"("n_threads": 8})";
  Logs three(pp + "\n" + tg + "\n" + more + "\n", "");
  m = by_name(read_metrics(spec.metrics, three.out));
  EXPECT_EQ(m["pp_tokens_per_second"].value, 2000);
  EXPECT_EQ(m["pp_stddev_ts"].value, 3.0);
  EXPECT_EQ(m["tg_stddev_ts"].value, 0.4);
  EXPECT_EQ(m["model_size"].value, 3825065984.0);
  EXPECT_EQ(m["model_n_params"].value, 6738415616.0);
  EXPECT_EQ(m["n_threads"].value, 8);
  // A -o json array cut short (the program was killed while writing): its complete records
  // are read, and the metric says so. Records span lines, as llama-bench indents them.
  Logs cut("[\n  {\n    \"n_prompt\": 512,\n    \"n_gen\": 0,\n    \"avg_ts\": 2000.5\n  },\n"
           "  {\n    \"n_prompt\": 0,\n    \"n_gen\": 128,\n    \"note\": \"a } in {text\",\n"
           "    \"avg_ts\": 110.25\n  },\n  {\n    \"n_prompt\": 0,\n    \"n_gen\": 12",
           "");
  m = by_name(read_metrics(spec.metrics, cut.out));
  EXPECT_EQ(m["pp_tokens_per_second"].value, 2000.5);
  EXPECT_EQ(m["tg_tokens_per_second"].value, 110.25);
  EXPECT_EQ(m["tg_tokens_per_second"].problem,
            "stdout's JSON array is cut short: its 2 complete records were read");
  // A record without its figure is named, not left out silently.
  Logs gap(pp + "\n" + R"({"n_prompt": 128, "n_gen": 0, "stddev_ts": 1.0})" + "\n", "");
  std::vector<CommandMetric> with_gap = read_metrics(spec.metrics, gap.out);
  m = by_name(with_gap);
  EXPECT_EQ(m["pp_tokens_per_second"].value, 2000.5);
  EXPECT_EQ(m["pp_tokens_per_second"].problem, "1 record of stdout selected for it had no /avg_ts");
  // Without -o jsonl (its table on stdout), the reason says what the parser reads.
  Logs table("| model | size | params | backend | threads | test | t/s |\n", "");
  EXPECT_EQ(judge_command(spec, exited(0), read_metrics(spec.metrics, table.out), table.out).reason,
            "no metric was found in the program's output (the llama-bench parser reads its JSON "
            "records on stdout: run it with -o jsonl (or -o json))");
}

// Text fields (llama-bench's backends, model type, CPU) could not be columns at all.
TEST(ReadMetrics, TextMetricsKeepTheWordsFound) {
  Logs run("torch 2.15.0+cpu on host-a\ntorch 2.16.0 on host-b\nloss 3.5\n", "");
  run.dir.write("info.json", R"({"backend": "CUDA", "threads": 8, "flash": true, )"
                             R"("list": ["a"], "none": null})");
  std::vector<CommandMetric> m = read(
      "    - {name: torch, regex: 'torch (\\S+)', type: text}\n"
      "    - {name: first_torch, regex: 'torch (\\S+)', type: text, reduce: first}\n"
      "    - {name: backend, from: json info.json, pointer: /backend, type: text}\n"
      "    - {name: threads, from: json info.json, pointer: /threads, type: text}\n"
      "    - {name: flash, from: json info.json, pointer: /flash, type: text}\n"
      "    - {name: listed, from: json info.json, pointer: /list, type: text, optional: true}\n"
      "    - {name: loss, regex: 'loss ([0-9.]+)', type: number}\n",
      run);
  auto t = by_name(m);
  EXPECT_TRUE(t["torch"].is_text);
  EXPECT_TRUE(t["torch"].found);
  EXPECT_EQ(t["torch"].text, "2.16.0");
  EXPECT_TRUE(std::isnan(t["torch"].value));
  EXPECT_TRUE(t["torch"].values.empty());
  EXPECT_EQ(t["first_torch"].text, "2.15.0+cpu");
  EXPECT_EQ(t["backend"].text, "CUDA");
  EXPECT_EQ(t["threads"].text, "8");
  EXPECT_EQ(t["flash"].text, "true");
  EXPECT_FALSE(t["listed"].found);
  EXPECT_EQ(t["listed"].problem, "/list is a list of 1 item, not text");
  EXPECT_FALSE(t["loss"].is_text);
  EXPECT_EQ(t["loss"].value, 3.5);
  // Kept to kMaxMetricText bytes, cut on a character's start, and valid UTF-8 whatever came.
  std::string long_line = "name " + std::string(kMaxMetricText - 1, 'x') + "\xc3\xa9 end\n";
  Logs longer(long_line + "bad \xff\xfe\n", "");
  t =
      by_name(read("    - {name: name, regex: '^name (.*)$', type: text}\n"
                   "    - {name: bad, regex: '^bad (\\C+)$', type: text}\n",
                   longer));
  EXPECT_EQ(t["name"].text, std::string(kMaxMetricText - 1, 'x'));
  EXPECT_EQ(t["name"].problem, "a value longer than 256 bytes was cut there");
  EXPECT_TRUE(t["bad"].found) << t["bad"].problem;
  EXPECT_EQ(t["bad"].text, "\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(Parsers, LlamaBenchTextFieldsAreTextColumns) {
  const std::string record =
      R"({"build_commit": "5f3a2b1", "cpu_info": "AMD EPYC 7B13", "gpu_info": "", )"
      R"("backends": "CPU", "model_type": "llama ?B F32", "n_prompt": 64, "n_gen": 0, )"
      R"("avg_ts": 812.5})";
  Logs run(record + "\n", "");
  auto m = by_name(read_metrics(spec_of("  parser: llama-bench\n").metrics, run.out));
  EXPECT_EQ(m["backends"].text, "CPU");
  EXPECT_EQ(m["model_type"].text, "llama ?B F32");
  EXPECT_EQ(m["cpu_info"].text, "AMD EPYC 7B13");
  EXPECT_TRUE(m["gpu_info"].found);
  EXPECT_EQ(m["gpu_info"].text, "");
  EXPECT_EQ(m["build_commit"].text, "5f3a2b1");
  EXPECT_TRUE(m["backends"].is_text);
  EXPECT_FALSE(m["pp_tokens_per_second"].is_text);
}

// vLLM's benchmarks took 6 to 9 pointer and regex lines per sweep.
TEST(Parsers, VllmReadsLatencyAndThroughputResults) {
  Logs latency("", "");
  latency.dir.write("vllm.json", R"({"avg_latency": 0.5, "latencies": [0.4, 0.5, 0.6],
    "percentiles": {"10": 0.42, "25": 0.45, "50": 0.5, "75": 0.55, "90": 0.58, "99": 0.6}})");
  CommandSpec spec = spec_of("  parser: vllm\n");
  std::vector<CommandMetric> metrics = read_metrics(spec.metrics, latency.out);
  auto m = by_name(metrics);
  EXPECT_EQ(m["avg_latency"].value, 0.5);
  EXPECT_EQ(m["latency_p90"].value, 0.58);
  EXPECT_EQ(m["latencies"].values, (std::vector<double>{0.4, 0.5, 0.6}));
  EXPECT_FALSE(m["tokens_per_second"].found);
  EXPECT_EQ(judge_command(spec, exited(0), metrics, latency.out).status, "ok");

  Logs throughput("INFO ...\nThroughput: 12.34 requests/s, 3159.04 total tokens/s, 1579.52 output "
                  "tokens/s\n",
                  "");
  throughput.dir.write("vllm-throughput.json", R"({"elapsed_time": 8.1, "num_requests": 100,
    "total_num_tokens": 25600, "requests_per_second": 12.34, "tokens_per_second": 3159.04})");
  m = by_name(read_metrics(spec.metrics, throughput.out));
  EXPECT_EQ(m["requests_per_second"].value, 12.34);
  EXPECT_EQ(m["tokens_per_second"].value, 3159.04);
  EXPECT_EQ(m["output_tokens_per_second"].value, 1579.52);
  EXPECT_EQ(m["num_requests"].value, 100);
  // Without its --output-json file, nothing is found and the run says so.
  Logs none("", "");
  EXPECT_EQ(judge_command(spec, exited(0), read_metrics(spec.metrics, none.out), none.out).reason,
            "no metric was found in the program's output (the vllm parser reads the file of "
            "--output-json '{out}/vllm.json' (any vllm*.json in the point directory))");
}

TEST(Parsers, PaceReadsItsResultsFile) {
  Logs run("", "");
  run.dir.write("facebook--opt-125m_torch.bfloat16_bs1_it128_nt128_results.json", R"({
    "model_args": {"model_name": "facebook/opt-125m", "dtype": "torch.bfloat16"},
    "generation_args": {"input_tokens": 128, "output_tokens": 128, "batch_size": 1},
    "num_runs": 5, "warmup_runs": 2,
    "benchmark_results": [{"framework": "pace", "metrics": {"total_tokens": 1280,
      "total_gen_tokens": 640, "average_gen_time": 1.25, "average_latency_per_token": 0.0098,
      "total_tps": 204.8, "output_tps": 102.4, "average_ttft": 0.05},
      "system_metrics": {"interval": 0.5, "cpu_usage": [50.0], "ram_usage": [900.0],
      "peak_ram_usage": 1024.5}}]})");
  CommandSpec spec = spec_of("  parser: pace\n");
  std::vector<CommandMetric> metrics = read_metrics(spec.metrics, run.out);
  auto m = by_name(metrics);
  EXPECT_EQ(m["average_gen_time"].value, 1.25);
  EXPECT_EQ(m["average_latency_per_token"].value, 0.0098);
  EXPECT_EQ(m["total_tps"].value, 204.8);
  EXPECT_EQ(m["output_tps"].value, 102.4);
  EXPECT_EQ(m["average_ttft"].value, 0.05);
  EXPECT_EQ(m["peak_ram_usage"].value, 1024.5);
  // The one file the pattern *_results.json matched, by name.
  EXPECT_EQ(m["output_tps"].source, "facebook--opt-125m_torch.bfloat16_bs1_it128_nt128_results.json");
  EXPECT_EQ(judge_command(spec, exited(0), metrics, run.out).status, "ok");
  // Without the file, the run says so.
  Logs none("", "");
  CommandVerdict v = judge_command(spec, exited(0), read_metrics(spec.metrics, none.out), none.out);
  EXPECT_EQ(v.status, "failed");
  EXPECT_THAT(v.reason, HasSubstr("(average_gen_time: no file matches *_results.json)"));
}

TEST(ReadMetrics, WhereSelectsRecordsAndGlobsReadEveryFile) {
  Logs run("", "");
  run.dir.write("r/a.jsonl", "{\"kind\": \"x\", \"v\": 1}\n{\"kind\": \"y\", \"v\": 5}\n");
  run.dir.write("r/b.jsonl", "{\"kind\": \"x\", \"v\": 3}\n");
  run.dir.write("r/c.log", "v=10\n");
  std::vector<CommandMetric> m = read(
      "    - {name: x, from: 'r/*.jsonl', pointer: /v, where: {kind: x}, reduce: sum}\n"
      "    - {name: any, from: 'r/*.jsonl', pointer: /v, reduce: count}\n"
      "    - {name: logs, from: 'r/*.log', regex: 'v=(\\d+)'}\n"
      "    - {name: none, from: 'r/*.csv', regex: 'v=(\\d+)'}\n",
      run);
  EXPECT_EQ(m[0].value, 4);
  EXPECT_EQ(m[1].value, 3);
  EXPECT_EQ(m[2].value, 10);
  EXPECT_FALSE(m[3].found);
  EXPECT_EQ(m[3].problem, "no file matches r/*.csv");
}

CommandEnd exited(int code) {
  CommandEnd e;
  e.exit_code = code;
  return e;
}

// std::regex recursed once per character (SIGSEGV on a 60,000-character line)
// and backtracked exponentially; RE2 matches these in time linear in the line.
TEST(ReadMetrics, PatternsThatCrashedOrHungStdRegexAreLinear) {
  std::string long_line = std::string(60000, 'b') + "c 7";
  std::string evil = std::string(28, 'a') + "!";
  Logs run(long_line + "\n" + evil + "\nvalue 5\n", "");
  std::vector<CommandMetric> m = read(
      "    - {name: alternation, regex: '(b|bb)*c', group: 0, reduce: count}\n"
      "    - {name: any, regex: '.*', group: 0, reduce: count}\n"
      "    - {name: nested, regex: '^(a+)+$', group: 0, reduce: count}\n"
      "    - {name: value, regex: 'value (\\d)'}\n",
      run);
  EXPECT_EQ(m[0].value, 1);  // the long line
  EXPECT_EQ(m[1].value, 3);  // every line
  EXPECT_EQ(m[2].value, 0);  // no line is all a's
  EXPECT_EQ(m[3].value, 5);
  CommandSpec spec = spec_of("  metrics:\n    - {name: value, regex: 'value (\\d)'}\n"
                             "  success: {match: ['(b|bb)*c'], fail: ['^(a+)+$']}\n");
  EXPECT_EQ(judge_command(spec, exited(0), read_metrics(spec.metrics, run.out), run.out).status,
            "ok");
}

// Case 15: a number past the first 64 KiB of a line was not found; lines are matched whole up to
// kMaxMatchedLine (1 MiB), and a metric not found in a longer line says the line was cut.
TEST(ReadMetrics, LongLinesAreMatchedWholeUpToTheirLimit) {
  Logs run(std::string(100000, 'x') + " tps 42\n", "");
  std::vector<CommandMetric> m = read("    - {name: tps, regex: 'tps (\\d+)'}\n", run);
  EXPECT_EQ(m[0].value, 42);
  Logs longer(std::string(kMaxMatchedLine + 10, 'x') + " tps 42\nother\n", "");
  m = read("    - {name: tps, regex: 'tps (\\d+)'}\n", longer);
  EXPECT_FALSE(m[0].found);
  EXPECT_EQ(m[0].problem,
            "no line of stdout matches tps (\\d+) (stdout line 1 is longer than 1 MiB: only its "
            "first MiB was read)");
}

// Case 6: every match was stored (3.8 GB for 97 MB of matching lines). Reductions are kept as
// values arrive, over all of them; only the first kMaxKeptValues values are kept, and the metric
// says so.
TEST(ReadMetrics, ManyMatchesKeepTheirReductionNotEveryValue) {
  std::string out;
  const int n = static_cast<int>(kMaxKeptValues) * 2 + 1;
  for (int i = 1; i <= n; ++i) out += "v " + std::to_string(i) + "\n";
  Logs run(out, "");
  std::vector<CommandMetric> m = read(
      "    - {name: mean, regex: 'v (\\d+)', reduce: mean}\n"
      "    - {name: sum, regex: 'v (\\d+)', reduce: sum}\n"
      "    - {name: max, regex: 'v (\\d+)', reduce: max}\n"
      "    - {name: count, regex: 'v', reduce: count}\n"
      "    - {name: all, regex: 'v (\\d+)', reduce: all}\n",
      run);
  EXPECT_EQ(m[0].value, (n + 1) / 2.0);
  EXPECT_EQ(m[1].value, static_cast<double>(n) * (n + 1) / 2);
  EXPECT_EQ(m[2].value, n);
  EXPECT_EQ(m[3].value, n);
  EXPECT_EQ(m[4].value, n);  // all: the last value
  for (const CommandMetric& x : m) {
    EXPECT_TRUE(x.found);
    EXPECT_EQ(x.values.size(), kMaxKeptValues) << x.name;
    EXPECT_EQ(x.values.front(), 1) << x.name;  // count's values are line numbers
  }
  EXPECT_EQ(m[4].values.back(), static_cast<double>(kMaxKeptValues));
  EXPECT_EQ(m[0].problem, "20,001 values read; the mean is of all of them; the first 10,000 are "
                          "kept");
}

// Cases 2 and 3: a metric file that is a FIFO blocked the point for ever, /dev/zero fed it for
// ever. Only regular files are read.
TEST(ReadMetrics, SpecialFilesAreRefusedNotRead) {
  Logs run("", "");
  ASSERT_EQ(::mkfifo(run.dir.file("fifo").c_str(), 0600), 0);
  std::vector<CommandMetric> m = read(
      "    - {name: fifo, from: fifo, regex: '(\\d+)'}\n"
      "    - {name: zero, from: /dev/zero, regex: '(\\d+)'}\n"
      "    - {name: json, from: json fifo, pointer: /v}\n",
      run);
  EXPECT_FALSE(m[0].found);
  EXPECT_EQ(m[0].problem, run.dir.file("fifo") +
                              ": is a FIFO, not a regular file: sweepbench reads only regular "
                              "files");
  EXPECT_EQ(m[1].problem,
            "/dev/zero: is a character device, not a regular file: sweepbench reads only regular "
            "files");
  EXPECT_THAT(m[2].problem, HasSubstr("fifo cannot be read: "));
  EXPECT_THAT(m[2].problem, HasSubstr("is a FIFO"));
}

// Case 5: a JSON pointer metric on stdout held the whole output (3.1 GB resident for 460 MB).
// Output of any size is streamed: 16 MiB of text before a JSON line is read a line at a time.
TEST(ReadMetrics, LargeJsonOutputIsReadALineAtATime) {
  const size_t kLarge = size_t{16} << 20;
  std::string filler(1000, 'y');
  std::string out;
  while (out.size() <= kLarge) out += filler + "\n";
  out += "{\"tps\": 12.5}\n";
  Logs run(out, "");
  std::vector<CommandMetric> m = read("    - {name: tps, from: json stdout, pointer: /tps}\n", run);
  EXPECT_EQ(m[0].value, 12.5);
  std::string lines;
  while (lines.size() <= kLarge) lines += "{\"tps\": 1, \"pad\": \"" + filler + "\"}\n";
  run.dir.write("big.jsonl", lines + "{\"tps\": 3}\n");
  m = read("    - {name: tps, from: json big.jsonl, pointer: /tps, reduce: max}\n", run);
  EXPECT_EQ(m[0].value, 3);
}

// Issue 51 case 3: a valid 5.5 MB vllm.json (1.1 million latencies) failed after 31 s with
// "line 1 is not JSON" (a document of more than a million values went to JSON lines), and a
// 4.5 MB one took 54 s and 606 MB, parsed again for every metric. Now a document of any size is
// streamed once for every metric that reads it, keeping what their pointers reach. This checks
// the values; that the file is read once shows in bench/json_metrics.py (40 metrics cost what 1
// does, docs/performance.md).
TEST(ReadMetrics, ALargeJsonDocumentIsStreamedOnceForEveryMetric) {
  std::string doc = "{\"itls\": [";
  for (int i = 0; i < 1'100'000; ++i) doc += (i ? "," : "") + std::to_string(i % 97) + ".5";
  doc += "], \"ttfts\": [10, 20, 30], \"request_throughput\": 12.25, \"nan\": NaN, "
         "\"up\": Infinity, \"down\": -Infinity, \"s\": \"NaN in a string\"}";
  ASSERT_GT(doc.size(), size_t{5} << 20);
  Logs run("", "");
  run.dir.write("vllm.json", doc);
  std::string metrics;
  for (int i = 0; i < 40; ++i) {
    metrics += "    - {name: t" + std::to_string(i) + ", from: json vllm.json, pointer: " +
               "/request_throughput}\n";
  }
  metrics +=
      "    - {name: ttft, from: json vllm.json, pointer: /ttfts/*, reduce: mean}\n"
      "    - {name: second, from: json vllm.json, pointer: /ttfts/1}\n"
      "    - {name: itl, from: json vllm.json, pointer: /itls/*, reduce: max}\n"
      "    - {name: nan, from: json vllm.json, pointer: /nan}\n"
      "    - {name: up, from: json vllm.json, pointer: /up}\n"
      "    - {name: down, from: json vllm.json, pointer: /down}\n"
      "    - {name: s, from: json vllm.json, pointer: /s, type: text}\n";
  std::vector<CommandMetric> m = read(metrics, run);
  ASSERT_EQ(m.size(), 47u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(m[i].value, 12.25) << i;
    EXPECT_EQ(m[i].problem, "") << i;
  }
  EXPECT_EQ(m[40].value, 20);
  EXPECT_EQ(m[41].value, 20);
  EXPECT_EQ(m[42].value, 96.5);
  EXPECT_THAT(m[42].problem, HasSubstr("1,100,000 values read"));
  EXPECT_TRUE(std::isnan(m[43].value));
  EXPECT_TRUE(m[43].found);
  EXPECT_EQ(m[44].value, INFINITY);
  EXPECT_EQ(m[45].value, -INFINITY);
  EXPECT_EQ(m[46].text, "NaN in a string");
}

// What the pointers do not reach is left out, and the rest means what it meant: an item's index,
// a record's `where` members, a whole object a pointer ends at (described, not a number).
TEST(ReadMetrics, PrunedDocumentsKeepIndicesRecordsAndWholeValues) {
  Logs run("", "");
  run.dir.write("r.json",
                "{\"runs\": [{\"x\": 1}, {\"x\": 2}, {\"x\": 3, \"big\": [1, 2]}],"
                " \"recs\": [{\"k\": \"a\", \"v\": 5}, {\"k\": \"b\", \"v\": 7}],"
                " \"obj\": {\"a\": {\"b\": 1}}}");
  std::vector<CommandMetric> m = read(
      "    - {name: third, from: json r.json, pointer: /runs/2/x}\n"
      "    - {name: b, from: json r.json, pointer: /recs/*/v, where: {k: b}}\n"
      "    - {name: obj, from: json r.json, pointer: /obj, optional: true}\n"
      "    - {name: big, from: json r.json, pointer: /runs/2/big/1}\n",
      run);
  EXPECT_EQ(m[0].value, 3);
  EXPECT_EQ(m[1].value, 7);
  EXPECT_FALSE(m[2].found);
  EXPECT_THAT(m[2].problem, HasSubstr("/obj is a map"));
  EXPECT_EQ(m[3].value, 2);
}

// What the review of issue 51 found the streamed reader read otherwise than the old one: a whole
// list of records followed by a wrapper's words (the records, not JSON lines that give none); a
// first token that indexes past a list's end (its records, as the pointer resolves it); a line
// longer than a MiB (said so).
TEST(ReadMetrics, TheStreamedReaderReadsAsTheWholeDocumentDid) {
  Logs run("[\n  {\"n_prompt\": 0, \"n_gen\": 16, \"avg_ts\": 110.5},\n"
           "  {\"n_prompt\": 0, \"n_gen\": 16, \"avg_ts\": 120.5}\n]\ndone\n",
           "");
  run.dir.write("one.json", "[{\"1\": {\"a\": 4}}]");
  run.dir.write("long.jsonl", "{\"a\": 1}\n{\"a\": \"" + std::string(size_t{1} << 20, 'x') +
                                  "\"}\n");
  std::vector<CommandMetric> m = read(
      "    - {name: tg, from: json stdout, pointer: /avg_ts, reduce: mean}\n"
      "    - {name: past, from: json one.json, pointer: /1/a}\n"
      "    - {name: long, from: json long.jsonl, pointer: /a}\n",
      run);
  EXPECT_EQ(m[0].value, 115.5);
  EXPECT_EQ(m[1].value, 4);
  EXPECT_EQ(m[2].problem, "long.jsonl line 2 is longer than 1 MiB: not read as JSON");
}

// Nesting a million deep, a document that never ends and bytes that are not JSON: a problem
// named, never a crash or a wait.
TEST(ReadMetrics, HostileJsonIsAProblemNotACrash) {
  Logs run("", "");
  run.dir.write("deep.json", std::string(1'000'000, '[') + std::string(1'000'000, ']'));
  run.dir.write("deep2.json", "{\"x\": 4, \"d\": " + std::string(1'000'000, '[') +
                                  std::string(1'000'000, ']') + "}");
  run.dir.write("open.json", "{\"a\": [1, 2, " + std::string(100'000, ' '));
  run.dir.write("bytes.json", std::string("\xff\xfe{\"a\": 1}\n", 12));
  std::vector<CommandMetric> m = read(
      "    - {name: deep, from: json deep.json, pointer: /0/0/0}\n"
      "    - {name: open, from: json open.json, pointer: /a/0}\n"
      "    - {name: bytes, from: json bytes.json, pointer: /a}\n"
      "    - {name: x, from: json deep2.json, pointer: /x}\n",
      run);
  EXPECT_FALSE(m[0].found);
  EXPECT_EQ(m[0].problem,
            "deep.json nests deeper than 1000 levels where a metric's pointer reaches: not read");
  EXPECT_EQ(m[3].value, 4);  // what no pointer reaches may nest as deep as it likes
  EXPECT_FALSE(m[1].found);
  EXPECT_EQ(m[1].problem, "open.json line 1 is not JSON");
  EXPECT_FALSE(m[2].found);
  EXPECT_EQ(m[2].problem, "bytes.json line 1 is not JSON");
}

// Case 8: glob characters in the point's directory (bench-sweep run --out 'runs/a?') made a
// metric's file a pattern that read another point's file. Only what the user wrote is a pattern.
TEST(ReadMetrics, GlobCharactersInThePointDirectoryAreLiteral) {
  TempDir dir;
  dir.write("ab/m.txt", "v 999\n");
  dir.write("a?/m.txt", "v 1\n");
  dir.write("a?/r-1.txt", "v 2\n");
  dir.write("ab/r-9.txt", "v 900\n");
  CommandOutputs o;
  o.point_dir = dir.file("a?");
  o.stdout_path = dir.write("a?/out.txt", "");
  o.stderr_path = dir.write("a?/err.txt", "");
  // {out} as bench-command expands it: the value escaped in a pattern, not in a path.
  o.expand = [&](const std::string& s) { return s == "{out}/m.txt" ? o.point_dir + "/m.txt" : s; };
  o.expand_pattern = [&](const std::string& s) {
    return s == "{out}/m.txt" ? glob_escape(o.point_dir) + "/m.txt" : s;
  };
  std::vector<CommandMetric> m = read_metrics(
      spec_of("  metrics:\n"
              "    - {name: own, from: '{out}/m.txt', regex: 'v (\\d+)'}\n"
              "    - {name: rel, from: 'r-*.txt', regex: 'v (\\d+)', reduce: sum}\n")
          .metrics,
      o);
  EXPECT_EQ(m[0].value, 1);
  EXPECT_EQ(m[1].value, 2);
  EXPECT_EQ(glob_escape("runs/[x]*?\\"), "runs/\\[x]\\*\\?\\\\");
}


// vLLM's reason was its last stderr line, "For further information visit
// https://errors.pydantic.dev/...", while the real message was two lines above.
TEST(JudgeCommand, AFailedPythonProgramIsJudgedByItsLastTracebacksException) {
  Logs run("", R"(INFO 11-26 starting
Traceback (most recent call last):
  File "/venv/bin/vllm", line 8, in <module>
    sys.exit(main())
ValueError: a first error
During handling of the above exception, another exception occurred:
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/vllm/config.py", line 120, in __init__
    raise ValidationError(...)
pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig
  Value error, User-specified max_model_len (100000) is greater than the derived max_model_len
    For further information visit https://errors.pydantic.dev/2.11/v/value_error
)");
  CommandVerdict v = judge_command(spec_of(""), exited(1), {}, run.out);
  EXPECT_EQ(v.reason,
            "the program ended with exit code 1: pydantic_core._pydantic_core.ValidationError: 1 "
            "validation error for ModelConfig Value error, User-specified max_model_len (100000) "
            "is greater than the derived max_model_len");
}

TEST(JudgeCommand, EachCriterionAndItsReason) {
  Logs run("epoch 1\n{'train_runtime': 4.5}\ndone\n", "warning: x\nlast words\n");
  CommandSpec spec = spec_of(
      "  metrics:\n    - {name: rt, regex: \"'train_runtime': ([0-9.]+)\"}\n"
      "    - {name: opt, regex: 'nothing (\\d)', optional: true}\n");
  auto judge = [&](const CommandSpec& s, const CommandEnd& e) {
    return judge_command(s, e, read_metrics(s.metrics, run.out), run.out);
  };
  EXPECT_EQ(judge(spec, exited(0)).status, "ok");
  CommandVerdict v = judge(spec, exited(3));
  EXPECT_EQ(v.status, "failed");
  EXPECT_EQ(v.reason, "the program ended with exit code 3: last words");
  // A GNU program's pointer to its help after the error is not the reason; the error is.
  Logs gnu("", "gzip: invalid option -- '0'\nTry `gzip --help' for more information.\n");
  EXPECT_EQ(judge_command(spec, exited(1), {}, gnu.out).reason,
            "the program ended with exit code 1: gzip: invalid option -- '0'");
  CommandSpec any_code = spec;
  any_code.exit_code.reset();
  EXPECT_EQ(judge(any_code, exited(3)).status, "ok");
  CommandSpec fail = spec;
  fail.fail = {"warn(ing)?:"};
  EXPECT_EQ(judge(fail, exited(0)).reason,
            "the fail pattern 'warn(ing)?:' matched stderr line 1: warning: x");
  CommandSpec match = spec;
  match.match = {"^done$", "^finished$"};
  EXPECT_EQ(judge(match, exited(0)).reason,
            "the success pattern '^finished$' matched no line of stdout or stderr");
  CommandSpec required = spec_of(
      "  metrics:\n    - {name: rt, regex: 'runtime=(\\d+)'}\n"
      "    - {name: tps, regex: 'tps=(\\d+)'}\n");
  EXPECT_EQ(judge(required, exited(0)).reason,
            "required metrics not found: rt, tps (rt: no line of stdout matches "
            "runtime=(\\d+))");
  // A program that exits 0 with none of its (optional) metrics measured nothing.
  CommandSpec optional = spec_of("  metrics:\n    - {name: a, regex: 'a=(\\d)', optional: true}\n");
  EXPECT_EQ(judge(optional, exited(0)).reason, "no metric was found in the program's output");
  // With no metric defined, the exit code and the patterns decide (the duration is the figure).
  EXPECT_EQ(judge(spec_of(""), exited(0)).status, "ok");
  CommandEnd killed;
  killed.term_signal = SIGKILL;
  EXPECT_EQ(judge(spec, killed).reason,
            "the program was killed by SIGKILL (the kernel's out-of-memory killer, or a user)");
  CommandEnd never;
  never.started = false;
  never.start_error = "'nope' cannot start it: No such file or directory";
  EXPECT_EQ(judge(spec, never).reason, never.start_error);
}

TEST(JudgeCommand, OutOfMemoryTextMakesAFailedRunOom) {
  Logs run("step 1\n",
           "Traceback (most recent call last):\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n");
  CommandSpec spec = spec_of("  metrics:\n    - {name: rt, regex: 'rt=(\\d+)'}\n");
  CommandVerdict v = judge_command(spec, exited(1), read_metrics(spec.metrics, run.out), run.out);
  EXPECT_EQ(v.status, "oom");
  EXPECT_EQ(v.reason,
            "out of memory: stderr line 2: torch.OutOfMemoryError: CUDA out of memory. Tried to "
            "allocate 2.00 GiB");
  // The same text in a run that met every criterion (a batch-size finder that backed off) is ok.
  Logs fine("rt=5\n", "CUDA out of memory, retrying with a smaller batch\n");
  EXPECT_EQ(judge_command(spec, exited(0), read_metrics(spec.metrics, fine.out), fine.out).status,
            "ok");
  // Each default pattern is an out-of-memory message of its kind.
  for (const char* text : {"RuntimeError: CUDA out of memory.", "HIP out of memory",
                           "[enforce fail at alloc_cpu.cpp:83] DefaultCPUAllocator: can't allocate "
                           "memory: you tried to allocate 1 bytes",
                           "terminate called after throwing an instance of 'std::bad_alloc'",
                           "MemoryError", "CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"}) {
    Logs r("", std::string(text) + "\n");
    EXPECT_EQ(judge_command(spec, exited(1), read_metrics(spec.metrics, r.out), r.out).status,
              "oom")
        << text;
  }
  CommandSpec own = spec_of(
      "  metrics:\n    - {name: rt, regex: 'rt=(\\d+)'}\n"
      "  oom_patterns: ['ran out of room']\n");
  Logs r("", "CUDA out of memory\n");
  EXPECT_EQ(judge_command(own, exited(1), read_metrics(own.metrics, r.out), r.out).status,
            "failed");
}

TEST(JudgeCommand, StopSignalsGiveTimeoutOrCancelled) {
  Logs run("", "");
  CommandSpec spec = spec_of("");
  CommandEnd end;
  end.term_signal = SIGTERM;
  end.stop_signal = SIGUSR1;
  CommandVerdict v = judge_command(spec, end, {}, run.out);
  EXPECT_EQ(v.status, "timeout");
  EXPECT_EQ(v.reason,
            "bench-command received SIGUSR1 (the time limit is near) and passed it on; the "
            "program: killed by SIGTERM");
  end.stop_signal = SIGUSR2;
  EXPECT_EQ(judge_command(spec, end, {}, run.out).status, "cancelled");
  // A stop after the program ended, while its output was read: the metrics may be cut.
  end.term_signal = 0;
  end.exit_code = 0;
  end.stopped_while_reading = true;
  v = judge_command(spec, end, {}, run.out);
  EXPECT_EQ(v.status, "cancelled");
  EXPECT_EQ(v.reason,
            "bench-command received SIGUSR2 (bench-sweep's stop) while it read the program's "
            "output, whose metrics may be incomplete; the program: exit code 0");
}

// The program's argv golden: each list item one argument, values put in whole, no shell.
TEST(ExpandCommand, HostileValuesStayInsideTheirArgument) {
  const std::string hostile = "a'b \"c\" `x` $(y) ; z | w\nnext $HOME {out}";
  Value config = resolve_config(normalize_partial_config(
      parse_yaml("benchmark: command\nparams: {evil: " + quote_json(hostile) +
                     ", n: 3, mods: [q, v], off: false, none: null}\n"
                     "command:\n  argv: [prog, '{params.evil}', '--x={params.evil}', '{params.n}', "
                     "'{params.mods}', '{params.off}', '[{params.none}]', '{rank}/{world_size}', "
                     "'{{literal}}', '{out}']\n  env: {E: '{params.evil}'}\n  workdir: '{out}/w'\n",
                 "c.yaml")));
  RuntimeValues values;
  values.out = "/r/p q";
  values.rank = 1;
  values.world_size = 2;
  ExpandedCommand cmd = expand_command(command_spec_of(config), config, values);
  EXPECT_THAT(cmd.argv, ElementsAre("prog", hostile, "--x=" + hostile, "3", "q,v", "false", "[]",
                                    "1/2", "{literal}", "/r/p q"));
  EXPECT_EQ(cmd.env.at("E"), hostile);
  EXPECT_EQ(cmd.workdir, "/r/p q/w");
}

TEST(RunChild, CopiesOutputAndReportsTheEnd) {
  TempDir dir;
  ChildSpec c;
  c.argv = {"sh", "-c", "echo out; echo err >&2; pwd; echo \"$MY_VAR\"; exit 7"};
  c.env = {{"MY_VAR", "a b $(x)"}};
  c.workdir = dir.path();
  c.stdout_log = dir.file("o.txt");
  c.stderr_log = dir.file("e.txt");
  c.echo = false;
  ChildRun r = run_child(c);
  EXPECT_TRUE(r.end.started);
  EXPECT_EQ(r.end.exit_code, 7);
  EXPECT_EQ(sweepbench::testing::read_text(c.stdout_log), "out\n" + dir.path() + "\na b $(x)\n");
  EXPECT_EQ(sweepbench::testing::read_text(c.stderr_log), "err\n");
  EXPECT_TRUE(r.log_error.empty());
  // The logs are never replaced.
  EXPECT_THROW(run_child(c), Error);
}

TEST(RunChild, AProgramThatCannotStartIsSaid) {
  TempDir dir;
  ChildSpec c;
  c.argv = {"no-such-program-sweepbench"};
  c.workdir = dir.path();
  c.stdout_log = dir.file("o.txt");
  c.stderr_log = dir.file("e.txt");
  ChildRun r = run_child(c);
  EXPECT_FALSE(r.end.started);
  EXPECT_EQ(r.end.start_error,
            "'no-such-program-sweepbench' cannot start it: No such file or directory");
  c.argv = {"true"};
  c.workdir = dir.file("missing");
  c.stdout_log = dir.file("o2.txt");
  c.stderr_log = dir.file("e2.txt");
  r = run_child(c);
  EXPECT_FALSE(r.end.started);
  EXPECT_EQ(r.end.start_error,
            "'true' cannot enter the working directory: No such file or directory");
}

// bench-sweep's stop (SIGUSR2) reaches the program as SIGTERM, at once, and is recorded.
TEST(RunChild, PassesAStopSignalOn) {
  TempDir dir;
  ChildSpec c;
  c.argv = {"sh", "-c",
            "trap 'echo got TERM; exit 5' TERM; echo ready; while :; do sleep 0.05; done"};
  c.workdir = dir.path();
  c.stdout_log = dir.file("o.txt");
  c.stderr_log = dir.file("e.txt");
  c.echo = false;
  std::thread stopper([&] {
    // Once the program is up, as a runner would (the log may not exist yet when this starts).
    auto up = [&] {
      std::ifstream log(c.stdout_log);
      std::string line;
      return static_cast<bool>(std::getline(log, line)) && line == "ready";
    };
    for (int i = 0; i < 400 && !up(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ::kill(::getpid(), SIGUSR2);
  });
  ChildRun r = run_child(c);
  stopper.join();
  EXPECT_EQ(r.end.stop_signal, SIGUSR2);
  EXPECT_EQ(r.end.exit_code, 5);
  EXPECT_LT(r.seconds, kGraceSeconds);
  EXPECT_EQ(sweepbench::testing::read_text(c.stdout_log), "ready\ngot TERM\n");
}

}  // namespace
}  // namespace sweepbench
