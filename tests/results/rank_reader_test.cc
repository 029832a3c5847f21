// Reading rank files back: everything written comes back, and damaged files are problems with
// names, never crashes or exceptions.
#include "results/rank_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "metrics/summary.h"
#include "results/rank_file.h"
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
  r.memory_stages = {{"init", 10, 20, 30, 16, 24}, {"train", 20, 40, 50, 18, 44}};
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
  EXPECT_EQ(r.memory_stages[0].alloc_end, 16);
  EXPECT_EQ(r.memory_stages[1].alloc_peak, 44);
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

TEST(RankReader, AnAttributeAddedWithinTheSchemaIsOptional) {
  // comm_bytes_per_step came within schema 4: a file without it reads as not counted (-1), and
  // the summary has no comm_bytes_per_step.
  sweepbench::testing::TempDir dir;
  std::string path = dir.file("rank-00000.h5");
  RankResult w = sample(0, 1);
  w.comm_bytes_per_step = 4096;
  write_rank_file(w, path);
  RankRead read = read_rank_file(path);
  ASSERT_TRUE(read.result.has_value());
  EXPECT_EQ(read.result->comm_bytes_per_step, 4096);
  edit(path, [](hid_t f) { H5Adelete(f, "comm_bytes_per_step"); });
  for (RankReadScope scope : {RankReadScope::kAll, RankReadScope::kSummary}) {
    RankRead old = read_rank_file(path, scope);
    EXPECT_TRUE(old.problems.empty()) << ::testing::PrintToString(old.problems);
    ASSERT_TRUE(old.result.has_value());
    EXPECT_EQ(old.result->comm_bytes_per_step, -1);
    for (const Metric& m : summarize(summary_input_from_ranks({*old.result}))) {
      EXPECT_NE(m.name, "comm_bytes_per_step");
    }
  }
  RankResult counted = *read.result;
  bool found = false;
  for (const Metric& m : summarize(summary_input_from_ranks({counted}))) {
    if (m.name == "comm_bytes_per_step") found = m.value == 4096;
  }
  EXPECT_TRUE(found);
}

// Files written before the counted tensors' columns (alloc_end_bytes, alloc_peak_bytes) read as
// they were, the counts unknown (-1); a counted column of another length is a problem, and only
// that column is dropped.
TEST(RankReader, CountedMemoryColumnsAreOptional) {
  sweepbench::testing::TempDir dir;
  std::string old_file = dir.file("rank-00000.h5");
  write_rank_file(sample(0, 1), old_file);
  edit(old_file, [](hid_t f) {
    H5Ldelete(f, "memory/alloc_end_bytes", H5P_DEFAULT);
    H5Ldelete(f, "memory/alloc_peak_bytes", H5P_DEFAULT);
  });
  RankRead read = read_rank_file(old_file);
  EXPECT_TRUE(read.problems.empty()) << ::testing::PrintToString(read.problems);
  ASSERT_TRUE(read.result.has_value());
  ASSERT_EQ(read.result->memory_stages.size(), 2u);
  EXPECT_EQ(read.result->memory_stages[1].peak, 50);
  EXPECT_EQ(read.result->memory_stages[1].alloc_peak, -1);
  EXPECT_EQ(read.result->memory_stages[0].alloc_end, -1);

  std::string odd = dir.file("rank-00002.h5");
  write_rank_file(sample(0, 1), odd);
  edit(odd, [](hid_t f) {
    H5Ldelete(f, "memory/alloc_peak_bytes", H5P_DEFAULT);
    hsize_t n = 3;
    std::int64_t values[3] = {1, 2, 3};
    hid_t space = H5Screate_simple(1, &n, nullptr);
    hid_t d = H5Dcreate2(f, "memory/alloc_peak_bytes", H5T_NATIVE_INT64, space, H5P_DEFAULT,
                         H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
    H5Dclose(d);
    H5Sclose(space);
  });
  RankRead bad = read_rank_file(odd);
  ASSERT_TRUE(bad.result.has_value());
  EXPECT_THAT(bad.problems, Contains(HasSubstr("alloc_peak_bytes has another length")));
  EXPECT_EQ(bad.result->memory_stages[1].alloc_peak, -1);
  EXPECT_EQ(bad.result->memory_stages[1].alloc_end, 18);
}

// Replaces /steps with a table of `rows` rows whose members are (name, file type), each member's
// value in row k being k + 1 (strings: "k").
void replace_steps(hid_t f, const std::vector<std::pair<const char*, hid_t>>& members, hsize_t rows,
                   bool write = true) {
  H5Ldelete(f, "steps", H5P_DEFAULT);
  size_t width = 0;
  for (auto [name, type] : members) width += H5Tget_size(type);
  hid_t table = H5Tcreate(H5T_COMPOUND, width);
  size_t offset = 0;
  for (auto [name, type] : members) {
    H5Tinsert(table, name, offset, type);
    offset += H5Tget_size(type);
  }
  hid_t space = H5Screate_simple(1, &rows, nullptr);
  hid_t d = H5Dcreate2(f, "steps", table, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  if (write) {
    for (auto [name, type] : members) {  // one member at a time, converted by HDF5
      bool text = H5Tget_class(type) == H5T_STRING;
      if (text && H5Tis_variable_str(type) <= 0) continue;  // left as zeros
      hid_t mem = H5Tcreate(H5T_COMPOUND, text ? sizeof(char*) : sizeof(double));
      hid_t value_type = H5T_NATIVE_DOUBLE;
      if (text) {
        value_type = H5Tcopy(H5T_C_S1);
        H5Tset_size(value_type, H5T_VARIABLE);
      }
      H5Tinsert(mem, name, 0, value_type);
      std::vector<double> numbers;
      std::vector<std::string> strings;
      std::vector<const char*> pointers;
      for (hsize_t k = 0; k < rows; ++k) {
        numbers.push_back(static_cast<double>(k + 1));
        strings.push_back(std::to_string(k));
      }
      for (const std::string& t : strings) pointers.push_back(t.c_str());
      H5Dwrite(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT,
               text ? static_cast<const void*>(pointers.data()) : numbers.data());
      if (text) H5Tclose(value_type);
      H5Tclose(mem);
    }
  }
  H5Dclose(d);
  H5Sclose(space);
  H5Tclose(table);
}

TEST(RankReader, WrongTypesShapesAndMissingPartsAreNamedProblems) {
  sweepbench::testing::TempDir dir;
  std::string path = dir.file("rank-00001.h5");
  write_rank_file(sample(), path);
  edit(path, [](hid_t f) {
    hid_t text = H5Tcopy(H5T_C_S1);
    H5Tset_size(text, H5T_VARIABLE);
    // No loss, and `measured` as strings.
    replace_steps(f, {{"step", H5T_STD_I64LE}, {"total_s", H5T_IEEE_F64LE}, {"measured", text}}, 3);
    H5Tclose(text);
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
  EXPECT_THAT(read.problems, Contains("steps.loss: is missing"));
  EXPECT_THAT(read.problems, Contains("steps.measured: is not numeric"));
  EXPECT_THAT(read.problems, Contains("memory: is missing"));

  // Steps as a plain array rather than a table.
  edit(path, [](hid_t f) {
    H5Ldelete(f, "steps", H5P_DEFAULT);
    hsize_t three = 3;
    hid_t space = H5Screate_simple(1, &three, nullptr);
    H5Dclose(H5Dcreate2(f, "steps", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    H5Sclose(space);
  });
  EXPECT_THAT(read_rank_file(path).problems,
              Contains("steps: is not a table (a compound dataset)"));
}

TEST(RankReader, TableMembersOfOtherNumericTypesConvert) {
  // Members in another order and width, as another writer (h5py, pandas) might store them; with
  // a string member besides, HDF5 converts the wanted members (the other way of reading).
  for (bool with_text : {false, true}) {
    SCOPED_TRACE(with_text);
    sweepbench::testing::TempDir dir;
    std::string path = dir.file("rank-00001.h5");
    write_rank_file(sample(), path);
    edit(path, [&](hid_t f) {
      hid_t text = H5Tcopy(H5T_C_S1);  // fixed length: HDF5 1.10 mishandles a partial write
      H5Tset_size(text, 8);            // beside a variable-length member
      std::vector<std::pair<const char*, hid_t>> members = {{"measured", H5T_STD_I32LE},
                                                            {"loss", H5T_IEEE_F32LE},
                                                            {"total_s", H5T_IEEE_F32BE},
                                                            {"step", H5T_STD_U16LE}};
      if (with_text) members.insert(members.begin() + 1, {"note", text});
      replace_steps(f, members, 4);
      H5Tclose(text);
    });
    RankRead read = read_rank_file(path);
    ASSERT_TRUE(read.result.has_value()) << ::testing::PrintToString(read.problems);
    EXPECT_THAT(read.problems, Contains("steps.data_s: is missing"));
    const auto& steps = read.result->steps;
    ASSERT_EQ(steps.size(), 4u);
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(steps[k].step, static_cast<std::int64_t>(k + 1));
      EXPECT_EQ(steps[k].total_s, static_cast<double>(k + 1));
      EXPECT_EQ(steps[k].loss, static_cast<double>(k + 1));
      EXPECT_TRUE(steps[k].measured);
      EXPECT_EQ(steps[k].data_s, 0);
    }
  }
}

TEST(RankReader, ALengthWithoutTheBytesIsAProblemNotAnAllocation) {
  sweepbench::testing::TempDir dir;
  std::string path = dir.file("rank-00001.h5");
  write_rank_file(sample(), path);
  edit(path, [](hid_t f) {
    // 2^40 steps declared and nothing stored: HDF5 would hand out 16 TiB of fill values.
    replace_steps(f, {{"total_s", H5T_IEEE_F64LE}, {"measured", H5T_STD_U8LE}}, hsize_t{1} << 40,
                  false);
  });
  for (RankReadScope scope : {RankReadScope::kAll, RankReadScope::kSummary}) {
    RankRead read = read_rank_file(path, scope);
    EXPECT_FALSE(read.result.has_value());
    EXPECT_THAT(read.problems, Contains("steps: declares 1099511627776 values and stores 0"));
  }
}

// Files of schema 1 (steps as a group of columns), written by bench-train before schema 2
// (tests/results/schema1/README.md), read as they were: every column, both scopes.
TEST(RankReader, ReadsSchema1Files) {
  for (const char* name : {"rank-00000.h5", "rank-00001.h5"}) {
    SCOPED_TRACE(name);
    std::string path = std::string(SWEEPBENCH_SCHEMA1_DIR) + "/" + name;
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    auto column = [&](const char* c) {
      hid_t d = H5Dopen2(f, (std::string("steps/") + c).c_str(), H5P_DEFAULT);
      hid_t space = H5Dget_space(d);
      std::vector<double> v(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
      H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
      H5Sclose(space);
      H5Dclose(d);
      return v;
    };
    std::int64_t version = 0;
    hid_t a = H5Aopen(f, "schema_version", H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_INT64, &version);
    H5Aclose(a);
    EXPECT_EQ(version, 1);
    std::vector<double> step = column("step"), total = column("total_s"), loss = column("loss"),
                        comm = column("comm_s"), tokens = column("tokens"),
                        measured = column("measured"), lr = column("lr");
    H5Fclose(f);
    ASSERT_EQ(step.size(), 6u);
    for (RankReadScope scope : {RankReadScope::kAll, RankReadScope::kSummary}) {
      RankRead read = read_rank_file(path, scope);
      EXPECT_TRUE(read.problems.empty()) << ::testing::PrintToString(read.problems);
      ASSERT_TRUE(read.result.has_value());
      const auto& steps = read.result->steps;
      ASSERT_EQ(steps.size(), step.size());
      for (size_t k = 0; k < steps.size(); ++k) {
        EXPECT_EQ(static_cast<double>(steps[k].step), step[k]);
        EXPECT_EQ(steps[k].total_s, total[k]);
        EXPECT_EQ(steps[k].loss, loss[k]);
        EXPECT_EQ(steps[k].comm_s, comm[k]);
        EXPECT_EQ(steps[k].measured, measured[k] != 0);
        if (scope == RankReadScope::kAll) {
          EXPECT_EQ(static_cast<double>(steps[k].tokens), tokens[k]);
          EXPECT_EQ(steps[k].lr, lr[k]);
        }
      }
      EXPECT_EQ(read.result->world_size, 2);
    }
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
    if (!(std::isnan(ma[i].value) && std::isnan(mb[i].value))) {  // NaN: too few steps for it
      EXPECT_EQ(ma[i].value, mb[i].value) << ma[i].name;
    }
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
