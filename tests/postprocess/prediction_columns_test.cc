// bench-extract's predictions beside the measurements (point_row.cc) for a point as it ran, from
// a rank file written by bench-infer's own writer: a generation on a GPU is predicted on the
// decode path its rank file names (infer/cuda_graph), whatever its config asked for. Only a
// GPU writes cuda_graph 1, and CI has none: the rank file is written here as bench-infer
// writes it there (its runs are made up; the predictions read the config and the device).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "config/config.h"
#include "config/yaml_io.h"
#include "postprocess/reader_pool.h"
#include "predict/time_model.h"
#include "results/rank_file.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

const char* const kConfig =
    "benchmark: infer\n"
    "model: {preset: gpt2}\n"
    "launch: {device: cuda}\n"
    "infer: {batch_size: 1, input_tokens: 128, output_tokens: 128, kv_cache: static}\n";

RankResult generation_on_an_h200(bool cuda_graph) {
  RankResult r;
  r.benchmark = "infer";
  r.config_yaml = kConfig;
  r.config_hash = "0123456789abcdef";
  r.tag = "point";
  r.run_id = "run";
  r.world_size = 1;
  r.device_type = "cuda";
  r.device_name = "NVIDIA H200";
  r.device_count = 1;
  r.status = "ok";
  r.parameter_count = 124439808;
  r.seq_len = 256;
  r.micro_batch = 1;
  r.infer.batch_size = 1;
  r.infer.input_tokens = r.infer.output_tokens = 128;
  r.infer.kv_cache = "static";
  r.infer.dtype = "bf16";
  r.infer.decoding = "greedy";
  r.infer.cuda_graph = cuda_graph;
  r.infer.runs_planned = 2;
  for (std::int64_t k = 0; k < 2; ++k) r.infer.runs.push_back({k, false, 0.01, 0.2, 128});
  return r;
}

// What plan --estimate predicts for the config with the GPU named and infer.cuda_graph set.
double planned_step(bool cuda_graph) {
  Value partial = normalize_partial_config(parse_yaml(kConfig, "test"));
  partial.set_path("hardware.name", Value::string("NVIDIA H200"));
  partial.set_path("infer.cuda_graph", Value::boolean(cuda_graph));
  TimePrediction p;
  EXPECT_TRUE(predict_point_time(resolve_config(partial), &p));
  EXPECT_TRUE(p.known);
  return p.step_s;
}

double extracted_step(const std::string& dir) {
  ExtractOptions options;
  options.jobs = 1;
  ExtractTable table = extract_points({dir}, options);
  EXPECT_EQ(table.rows.size(), 1u);
  const auto& row = table.rows.front();
  EXPECT_EQ(row.at("status").as_string(), "ok");
  auto it = row.find("time_pred_step_s");
  return it != row.end() && it->second.is_number() ? it->second.as_float() : NAN;
}

TEST(ExtractPredictions, AGenerationIsPredictedOnTheDecodePathItsRankFileNames) {
  testing::TempDir tmp;
  const double graph = planned_step(true), eager = planned_step(false);
  EXPECT_LT(graph, eager / 2);  // the graph's replays against kernels launched one by one
  for (bool ran_as_graph : {true, false}) {
    const fs::path point = fs::path(tmp.path()) / (ran_as_graph ? "graph" : "eager");
    fs::create_directories(point);
    write_rank_file(generation_on_an_h200(ran_as_graph), (point / rank_file_name(0)).string());
    // The config asks for graphs (the default); the rank file says what ran.
    EXPECT_DOUBLE_EQ(extracted_step(point.string()), ran_as_graph ? graph : eager);
  }
}

}  // namespace
}  // namespace sweepbench
