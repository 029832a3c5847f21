// layout/manifest.h: the manifest typed for its readers.
#include "layout/manifest.h"

#include <gtest/gtest.h>

#include "config/yaml_io.h"
#include "support/temp_dir.h"

namespace sweepbench {
namespace {

TEST(Manifest, TypedFromWhatTheWritersLeave) {
  Value v = parse_own_yaml(
      R"({"schema_version": 1, "sweep": "s", "sweep_file": "/x/s.yaml", "varying_keys": ["train.lr"],
          "points": [
            {"index": 0, "scenario": "default", "repeat": 0, "tag": "a", "config_hash": "h0",
             "varying": {"train.lr": 0.1}, "slurm_job": "7_0", "status": "ok"},
            {"index": 1, "tag": "b", "config_hash": "h1", "in_sweep": false},
            {"tag": "a", "index": 9}
          ]})",
      "m.json");
  Manifest m = Manifest::from_value(v);
  EXPECT_EQ(m.sweep, "s");
  EXPECT_EQ(m.varying_keys, std::vector<std::string>{"train.lr"});
  ASSERT_EQ(m.points.size(), 3u);
  const ManifestPoint* a = m.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(*a->index, 0) << "the first entry of a tag wins";
  EXPECT_EQ(*a->scenario, "default");
  EXPECT_EQ(a->slurm_job, "7_0");
  EXPECT_TRUE(a->in_sweep);
  const ManifestPoint* b = m.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(b->in_sweep);
  EXPECT_FALSE(b->scenario.has_value()) << "absent stays absent";
  EXPECT_FALSE(b->repeat.has_value());
  EXPECT_EQ(m.find("c"), nullptr);
  EXPECT_TRUE(Manifest::from_value(Value::string("x")).points.empty());
}

TEST(Manifest, ReadFromADirectory) {
  testing::TempDir dir;
  EXPECT_FALSE(read_manifest(dir.path()).has_value());
  dir.write("manifest.json", "{\"sweep\": \"s\", \"points\": []}\n");
  std::optional<ManifestFile> f = read_manifest(dir.path());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(Manifest::from_value(f->value).sweep, "s");
  dir.write("manifest.json", "{\"sweep\": [\n");
  EXPECT_THROW(read_manifest(dir.path()), Error);
}

TEST(Manifest, ASubmittedJobIsRecordedOnTheListAndOnItsPoints) {
  testing::TempDir dir;
  dir.write("manifest.json",
            R"({"sweep": "s", "points": [{"tag": "a", "status": "ok", "mine": 1}, {"tag": "b"},
                {"tag": "c", "slurm_job": "5_0"}]})");
  ManifestJob job;
  job.job_id = "7";
  job.script = "/x/s.sbatch";
  job.submitted = "2026-11-26T00:00:00Z";
  job.tags = {"a", "b"};
  job.task_of = {{"a", "7_0"}, {"b", "7_1"}};
  add_manifest_job(dir.path(), job);
  add_manifest_job(dir.path(), job);  // a second submission appends
  std::optional<ManifestFile> file = read_manifest(dir.path());
  ASSERT_TRUE(file.has_value());
  Manifest m = Manifest::from_value(file->value);
  EXPECT_EQ(m.find("a")->slurm_job, "7_0");
  EXPECT_EQ(m.find("b")->slurm_job, "7_1");
  EXPECT_EQ(m.find("c")->slurm_job, "5_0") << "a point of another job keeps its task";
  const Value* jobs = file->value.find("jobs");
  ASSERT_NE(jobs, nullptr);
  ASSERT_EQ(jobs->items().size(), 2u);
  EXPECT_EQ(jobs->items()[0].find("job_id")->as_string(), "7");
  EXPECT_EQ(jobs->items()[0].find("points")->items().size(), 2u);
  // What other tools added stays.
  EXPECT_EQ(file->value.find("points")->items()[0].find("mine")->as_int(), 1);
}

}  // namespace
}  // namespace sweepbench
