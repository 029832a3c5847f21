// Reading rank files back: everything written comes back, and damaged files are problems with
// names, never crashes or exceptions.
#include "results/rank_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "results/rank_file.h"
#include "results/summary.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::HasSubstr;

RankResult sample(std::int64_t rank = 1, std::int64_t world = 2) {
  RankResult r;
  r.config_yaml = "model: {preset: gpt2-tiny}\n";
  r.config_hash = "abc";
  r.tag = "micro_batch=2.ws=2.abc";
  r.rank = rank;
  r.world_size = world;
  r.hostname = "node1";
  r.device_type = "cpu";
  r.device_name = "Some CPU";
  r.device_count = 1;
  r.threads = 2;
  r.container_runtime = "charliecloud";
  r.container_env_kept = "OMPI_*,HOME";
  r.status = "oom";
  r.reason = "rank 1: out of memory";
  r.rank_status = "oom";
  r.parameter_count = 1234;
  r.flops_per_token = 7.5e6;
  r.peak_tflops = 0;
  r.steps_planned = 3;
  r.warmup_steps = 1;
  r.seq_len = 32;
  r.micro_batch = 2;
  r.grad_accum = 1;
  for (int i = 0; i < 3; ++i) {
    StepRecord s;
    s.step = i;
    s.total_s = 0.1 * (i + 1);
    s.forward_s = 0.03;
    s.tokens = 64;
    s.samples = 2;
    s.loss = 5.0 - i;
    s.measured = i > 0;
    s.skipped = i == 2;
    r.steps.push_back(s);
  }
  r.eval.ran = true;
  r.eval.steps = 1;
  r.eval.samples = 2;
  r.eval.loss = 4.5;
  r.eval.seconds = 0.02;
  r.eval.batch_loss = {4.5};
  r.eval.batch_s = {0.02};
  r.memory_stage_source = "rss";
  r.memory_stages = {{"init", 10, 20, 30}, {"train", 20, 40, 50}};
  r.samples.device_source = "rss";
  r.samples.time_s = {0.0, 0.1};
  r.samples.device_bytes = {1, 2};
  r.samples.rss_bytes = {3, 4};
  r.samples.cpu_percent = {50, 60};
  r.samples.ram_used_mb = {100, 110};
  return r;
}

TEST(RankReader, ReadsBackWhatWasWritten) {
  sweepbench::testing::TempDir dir;
  std::string path = dir.file("rank-00001.h5");
  RankResult w = sample();
  write_rank_file(w, path);
  RankRead read = read_rank_file(path);
  EXPECT_TRUE(read.problems.empty()) << ::testing::PrintToString(read.problems);
  ASSERT_TRUE(read.result.has_value());
  const RankResult& r = *read.result;
  EXPECT_EQ(r.config_yaml, w.config_yaml);
  EXPECT_EQ(r.tag, w.tag);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.status, "oom");
  EXPECT_EQ(r.reason, w.reason);
  EXPECT_EQ(r.container_runtime, "charliecloud");
  EXPECT_EQ(r.container_env_kept, "OMPI_*,HOME");
  EXPECT_EQ(r.flops_per_token, 7.5e6);
  EXPECT_EQ(r.micro_batch, 2);
  ASSERT_EQ(r.steps.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.steps[i].step, w.steps[i].step);
    EXPECT_EQ(r.steps[i].total_s, w.steps[i].total_s);
    EXPECT_EQ(r.steps[i].loss, w.steps[i].loss);
    EXPECT_EQ(r.steps[i].tokens, 64);
    EXPECT_EQ(r.steps[i].measured, w.steps[i].measured);
    EXPECT_EQ(r.steps[i].skipped, w.steps[i].skipped);
  }
  EXPECT_TRUE(r.eval.ran);
  EXPECT_EQ(r.eval.loss, 4.5);
  EXPECT_EQ(r.eval.batch_s, w.eval.batch_s);
  ASSERT_EQ(r.memory_stages.size(), 2u);
  EXPECT_EQ(r.memory_stages[1].stage, "train");
  EXPECT_EQ(r.memory_stages[1].peak, 50);
  EXPECT_EQ(r.samples.rss_bytes, w.samples.rss_bytes);
  EXPECT_EQ(r.samples.cpu_percent, w.samples.cpu_percent);
}

TEST(RankReader, AFileCutShortIsNotAResult) {
  sweepbench::testing::TempDir dir;
  std::string path = dir.file("rank-00000.h5");
  write_rank_file(sample(0, 1), path);
  fs::resize_file(path, fs::file_size(path) / 2);
  RankRead read = read_rank_file(path);
  EXPECT_FALSE(read.result.has_value());
  EXPECT_FALSE(read.problems.empty());
  RankRead none = read_rank_file(dir.file("missing.h5"));
  EXPECT_FALSE(none.result.has_value());
  EXPECT_THAT(none.problems, Contains(HasSubstr("not an HDF5 file")));
}

// Edits a written file with HDF5 directly, as a damaged or foreign file would be.
void edit(const std::string& path, const std::function<void(hid_t)>& change) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  change(f);
  H5Fclose(f);
}

TEST(RankReader, WrongTypesShapesAndMissingPartsAreNamedProblems) {
  sweepbench::testing::TempDir dir;
  std::string path = dir.file("rank-00001.h5");
  write_rank_file(sample(), path);
  edit(path, [](hid_t f) {
    H5Ldelete(f, "steps/loss", H5P_DEFAULT);  // a column with 2 values for 3 steps
    hsize_t two[1] = {2};
    hid_t space = H5Screate_simple(1, two, nullptr);
    hid_t d =
        H5Dcreate2(f, "steps/loss", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const double values[2] = {1, 2};
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
    H5Dclose(d);
    H5Sclose(space);
    H5Adelete(f, "world_size");  // an integer that became a string
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 4);
    hid_t a = H5Acreate2(f, "world_size", t, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, "two");
    H5Aclose(a);
    H5Tclose(t);
    H5Sclose(s);
    H5Ldelete(f, "memory", H5P_DEFAULT);  // a group gone
  });
  RankRead read = read_rank_file(path);
  EXPECT_FALSE(read.result.has_value());  // no world size: the rank cannot be placed
  EXPECT_THAT(read.problems, Contains("world_size: is not an integer"));
  EXPECT_THAT(read.problems, Contains("steps/loss: 2 values for 3 steps"));
  EXPECT_THAT(read.problems, Contains("memory: is missing"));
}

TEST(RankReader, ALengthWithoutTheBytesIsAProblemNotAnAllocation) {
  sweepbench::testing::TempDir dir;
  std::string path = dir.file("rank-00001.h5");
  write_rank_file(sample(), path);
  edit(path, [](hid_t f) {
    // 2^40 steps declared and nothing stored: HDF5 would hand out 8 TiB of fill values.
    H5Ldelete(f, "steps/total_s", H5P_DEFAULT);
    hsize_t huge[1] = {hsize_t{1} << 40};
    hid_t space = H5Screate_simple(1, huge, nullptr);
    hid_t d = H5Dcreate2(f, "steps/total_s", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT);
    ASSERT_GE(d, 0);
    H5Dclose(d);
    H5Sclose(space);
  });
  for (RankReadScope scope : {RankReadScope::kAll, RankReadScope::kSummary}) {
    RankRead read = read_rank_file(path, scope);
    EXPECT_FALSE(read.result.has_value());
    EXPECT_THAT(read.problems,
                Contains("steps/total_s: declares 1099511627776 values and stores 0"));
  }
}

TEST(RankReader, AMissingOptionalPartLeavesAUsableResult) {
  sweepbench::testing::TempDir dir;
  std::string path = dir.file("rank-00001.h5");
  write_rank_file(sample(), path);
  edit(path, [](hid_t f) {
    H5Ldelete(f, "samples", H5P_DEFAULT);
    H5Adelete(f, "hostname");
  });
  RankRead read = read_rank_file(path);
  ASSERT_TRUE(read.result.has_value());
  EXPECT_THAT(read.problems, Contains("samples: is missing"));
  EXPECT_THAT(read.problems, Contains("hostname: is missing"));
  EXPECT_EQ(read.result->steps.size(), 3u);
}

TEST(RankReader, TheSummaryScopeReadsWhatTheMetricsNeed) {
  sweepbench::testing::TempDir dir;
  std::vector<RankResult> all_ranks, summary_ranks;
  for (std::int64_t rank : {0, 1}) {
    SCOPED_TRACE(rank);
    std::string path = dir.file("rank-0000" + std::to_string(rank) + ".h5");
    RankResult w = sample(rank, 2);
    w.memory_stages = {{"before_init", 0, 5, 5}, {"init", 10, 20, 30}, {"train", 20, 40, 50}};
    if (rank == 1) w.samples.device_source = "nvml";
    write_rank_file(w, path);
    RankRead all = read_rank_file(path);
    RankRead some = read_rank_file(path, RankReadScope::kSummary);
    ASSERT_TRUE(all.result && some.result);
    EXPECT_TRUE(some.problems.empty()) << ::testing::PrintToString(some.problems);
    all_ranks.push_back(*all.result);
    summary_ranks.push_back(*some.result);
    const RankResult& r = *some.result;
    EXPECT_EQ(r.status, "oom");
    EXPECT_EQ(r.reason, w.reason);
    EXPECT_EQ(r.samples.cpu_percent, w.samples.cpu_percent);
    EXPECT_EQ(r.samples.ram_used_mb, w.samples.ram_used_mb);
    ASSERT_EQ(r.steps.size(), 3u);
    EXPECT_EQ(r.steps[2].total_s, w.steps[2].total_s);
    EXPECT_EQ(r.steps[2].step, 2);  // the position: the step numbers are not read
    // What the run shares comes from rank 0 only.
    EXPECT_EQ(r.device_type, rank == 0 ? "cpu" : "");
    EXPECT_EQ(r.config_yaml, rank == 0 ? w.config_yaml : "");
    EXPECT_EQ(r.seq_len, rank == 0 ? w.seq_len : 0);
    EXPECT_EQ(r.flops_per_token, rank == 0 ? w.flops_per_token : 0);
    // Device memory only where NVML measured it.
    EXPECT_EQ(r.samples.device_bytes,
              rank == 1 ? w.samples.device_bytes : std::vector<std::int64_t>{});
    // Left out: names, per-step extras, eval batches, the sampler's clock.
    EXPECT_EQ(r.hostname, "");
    EXPECT_EQ(r.steps[2].skipped, false);
    EXPECT_EQ(r.steps[1].tokens, 0);
    EXPECT_TRUE(r.eval.batch_loss.empty());
    EXPECT_TRUE(r.samples.time_s.empty());
    // Rank 0's stages whole (fms-acceleration's columns); the others' peaks only.
    ASSERT_EQ(r.memory_stages.size(), 3u);
    EXPECT_EQ(r.memory_stages[2].peak, 50);
    EXPECT_EQ(r.memory_stages[1].stage, rank == 0 ? "init" : "");
    EXPECT_EQ(r.memory_stages[1].end, rank == 0 ? 20 : 0);
  }
  // The run's metrics are the same either way.
  std::vector<Metric> ma = summarize(summary_input_from_ranks(all_ranks));
  std::vector<Metric> mb = summarize(summary_input_from_ranks(summary_ranks));
  ASSERT_EQ(ma.size(), mb.size());
  for (size_t i = 0; i < ma.size(); ++i) {
    EXPECT_EQ(ma[i].name, mb[i].name);
    EXPECT_EQ(ma[i].value, mb[i].value) << ma[i].name;
  }
}

TEST(Percentile, InterpolatesBetweenNeighboursAndRefusesNaN) {
  std::vector<double> v = {5, 1, 4, 2, 3};
  EXPECT_EQ(percentile(v, 0.5), 3);
  EXPECT_EQ(percentile(v, 0.0), 1);
  EXPECT_EQ(percentile(v, 1.0), 5);
  EXPECT_DOUBLE_EQ(percentile(v, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(percentile(v, 0.9), 4.6);
  EXPECT_DOUBLE_EQ(percentile({2, 1}, 0.5), 1.5);
  EXPECT_TRUE(std::isnan(percentile({}, 0.5)));
  EXPECT_TRUE(std::isnan(percentile({1, std::nan(""), 3}, 0.5)));
}
}  // namespace
}  // namespace sweepbench
