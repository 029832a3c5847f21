// Printers share one set of columns; writing a plan is checked first, atomic, and idempotent.
#include "sweep/plan_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "config/config.h"
#include "config/yaml_io.h"
#include "support/expect_error.h"
#include "support/temp_dir.h"
#include "sweep/sweep_test_util.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;
using testing::error_of;
using ::testing::HasSubstr;
using testing::plan_text;
using testing::read_text;

const std::string kSweep =
    "name: demo\nbase:\n  model.preset: gpt2-tiny\n  train: {steps: 4, warmup_steps: 1}\n"
    "axes:\n  train.micro_batch: [2, 4]\n  data.seq_len: [32, 64]\n";

std::string printed(const Plan& plan, PlanFormat format) {
  std::ostringstream out;
  print_plan(plan, format, out);
  return out.str();
}

// Every file under `dir` with its modification time.
std::map<std::string, fs::file_time_type> snapshot(const std::string& dir) {
  std::map<std::string, fs::file_time_type> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    files[e.path().string()] = fs::last_write_time(e.path());
  }
  return files;
}

// Derived values that follow a swept key are shown (a copy of one is not), and
// stay out of tags.
TEST(PlanTable, ShowsDerivedKeysThatVary) {
  Plan plan = plan_text(
      "name: w\nbase: {model.preset: gpt2-tiny}\naxes:\n  model.n_embd: [64, 128]\n"
      "  train.micro_batch: [2, 4]\n");
  std::string table = printed(plan, PlanFormat::kTable);
  EXPECT_THAT(table, HasSubstr("model.n_embd  train.micro_batch  model.ffn_dim\n"));
  EXPECT_EQ(table.find("eval.micro_batch"), std::string::npos);
  EXPECT_EQ(plan.points()[2].tag.find("ffn"), std::string::npos);
  EXPECT_THAT(printed(plan, PlanFormat::kCsv),
              HasSubstr("index,tag,config_hash,model.n_embd,train.micro_batch,model.ffn_dim\n"));
}

// An argv that varies printed the plan hundreds of characters wide. For
// people it is cut in the middle to 48 characters; CSV keeps it whole.
TEST(PlanTable, WideValuesAreCutForPeopleAndWholeInCsv) {
  const std::string argv =
      "[/opt/venvs/vllm/bin/vllm, bench, latency, --input-len, '128', "
      "--output-len, '128', --output-json, out.json]";
  Plan plan = plan_text("name: w\nbase:\n  benchmark: command\naxes:\n  command.argv: [" + argv +
                        ", [echo]]\n");
  std::string table = printed(plan, PlanFormat::kTable);
  EXPECT_THAT(table, HasSubstr("  [/opt/venvs/vllm/bin/vllm, benc…-json, out.json]\n"));
  EXPECT_EQ(table.find("--output-len"), std::string::npos);
  EXPECT_THAT(printed(plan, PlanFormat::kCsv), HasSubstr("--output-len, \"\"128\"\""));
}

TEST(PlanTable, HasHeaderRowsAndFooter) {
  Plan plan = plan_text(kSweep);
  std::string text = printed(plan, PlanFormat::kTable);
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line)) all.push_back(line);
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(all[0], "# sweep demo (s.yaml)");
  EXPECT_THAT(all[1], ::testing::MatchesRegex("#index  tag +train\\.micro_batch  data\\.seq_len"));
  EXPECT_THAT(all[2], ::testing::MatchesRegex(
                          "     0  micro_batch=2\\.seq_len=32\\.ws=1\\.[0-9a-f]{8}  2 +32"));
  EXPECT_EQ(all[6], "# 4 points");
  // Columns line up: every row's third column starts where the header's does.
  size_t col = all[1].find("train.micro_batch");
  for (size_t i = 2; i < 6; ++i) EXPECT_NE(all[i][col], ' ') << all[i];
}

TEST(PlanCsv, HasOneHeaderAndOneRowPerPoint) {
  Plan plan = plan_text(kSweep);
  std::string text = printed(plan, PlanFormat::kCsv);
  std::istringstream lines(text);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header, "index,tag,config_hash,train.micro_batch,data.seq_len");
  std::string row;
  std::getline(lines, row);
  EXPECT_EQ(row, "0," + plan.points()[0].tag + "," + plan.points()[0].config_hash + ",2,32");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("plain"), "plain");
}

TEST(PlanJson, CarriesEachPointsFullConfig) {
  Plan plan = plan_text(kSweep);
  Value json = parse_yaml(printed(plan, PlanFormat::kJson), "plan.json");
  EXPECT_EQ(json.find("sweep")->as_string(), "demo");
  EXPECT_EQ(json.find("total_points")->as_int(), 4);
  const Value& p3 = json.find("points")->items().at(3);
  EXPECT_EQ(p3.find("tag")->as_string(), plan.points()[3].tag);
  EXPECT_EQ(p3.find_path("varying")->find("train.micro_batch")->as_int(), 4);
  EXPECT_EQ(*p3.find("config"), plan.points()[3].config);
}

TEST(WritePlan, WritesConfigsAndAManifestThenIsANoOp) {
  testing::TempDir dir;
  std::string out = dir.file("runs");
  Plan plan = plan_text(kSweep);
  PlanWriteResult first = write_plan(plan, out);
  EXPECT_EQ(first.written, 4u);
  EXPECT_TRUE(first.manifest_changed);
  for (const SweepPoint& p : plan.points()) {
    std::string path = out + "/" + p.tag + "/config.yaml";
    ASSERT_TRUE(fs::exists(path)) << path;
    EXPECT_EQ(config_hash(load_point_config(path, {})), p.config_hash);
  }
  Value manifest = load_yaml_file(out + "/manifest.json");
  EXPECT_EQ(manifest.find("sweep")->as_string(), "demo");
  EXPECT_EQ(manifest.find("schema_version")->as_int(), 1);
  ASSERT_EQ(manifest.find("points")->items().size(), 4u);
  const Value& entry = manifest.find("points")->items()[1];
  EXPECT_EQ(entry.find("index")->as_int(), 1);
  EXPECT_EQ(entry.find("scenario")->as_string(), "default");
  EXPECT_EQ(entry.find("repeat")->as_int(), 0);
  EXPECT_EQ(entry.find("tag")->as_string(), plan.points()[1].tag);
  EXPECT_EQ(entry.find("config_hash")->as_string(), plan.points()[1].config_hash);
  EXPECT_EQ(entry.find("varying")->find("data.seq_len")->as_int(), 64);

  auto before = snapshot(out);
  PlanWriteResult again = write_plan(plan_text(kSweep), out);
  EXPECT_EQ(again.unchanged, 4u);
  EXPECT_EQ(again.written, 0u);
  EXPECT_FALSE(again.manifest_changed);
  EXPECT_EQ(snapshot(out), before);  // not even a modification time changed
  // No temporary files are left behind.
  for (const auto& [path, _] : before) EXPECT_EQ(path.find(".tmp."), std::string::npos) << path;
}

TEST(WritePlan, ADifferentConfigUnderTheSameTagChangesNothing) {
  testing::TempDir dir;
  std::string out = dir.file("runs");
  std::string custom = kSweep + "tag: {format: 'mb{train.micro_batch}.seq{data.seq_len}'}\n";
  write_plan(plan_text(custom), out);
  auto before = snapshot(out);
  // Same tags, other configs: a changed learning rate, and one more point.
  PlanOptions options;
  options.overrides = {parse_override("train.lr=0.1")};
  Plan changed = plan_text(custom + "include: [{train.micro_batch: 8}]\n", options);
  Error e = error_of([&] { write_plan(changed, out); });
  EXPECT_EQ(e.kind(), ErrorKind::kConflict);
  EXPECT_THAT(e.what(),
              HasSubstr(out + "/mb2.seq32/config.yaml: holds another config (config_hash "));
  EXPECT_THAT(e.what(), HasSubstr("(and 3 more conflicts)"));
  EXPECT_THAT(e.what(), HasSubstr("nothing was changed"));
  EXPECT_EQ(snapshot(out), before);
  EXPECT_FALSE(fs::exists(out + "/mb8.seq128"));
}

TEST(WritePlan, SchedulingOnlyChangesUpdateTheConfigInPlace) {
  testing::TempDir dir;
  std::string out = dir.file("runs");
  Plan plan = plan_text(kSweep);
  write_plan(plan, out);
  PlanOptions options;
  options.overrides = {parse_override("slurm.time=90")};
  Plan longer = plan_text(kSweep, options);
  EXPECT_EQ(longer.points()[0].tag, plan.points()[0].tag);  // the tag does not move
  PlanWriteResult r = write_plan(longer, out);
  EXPECT_EQ(r.updated, 4u);
  Value cfg = load_point_config(out + "/" + plan.points()[0].tag + "/config.yaml", {});
  EXPECT_EQ(config_at(cfg, "slurm.time").as_string(), "90");
}

TEST(WritePlan, RefusesAnotherSweepsDirectory) {
  testing::TempDir dir;
  std::string out = dir.file("runs");
  write_plan(plan_text(kSweep), out);
  std::string other = kSweep;
  other.replace(other.find("demo"), 4, "other");
  Error e = error_of([&] { write_plan(plan_text(other), out); });
  EXPECT_EQ(e.kind(), ErrorKind::kConflict);
  EXPECT_EQ(std::string(e.what()), out +
                                       "/manifest.json: belongs to sweep 'demo', not 'other' (each "
                                       "sweep gets its own --out directory)");
  dir.write("file", "x");
  EXPECT_EQ(error_of([&] { write_plan(plan_text(kSweep), dir.file("file")); }).kind(),
            ErrorKind::kConflict);
}

TEST(WritePlan, TheManifestKeepsWhatOthersAddedAndPointsThatLeftTheSweep) {
  testing::TempDir dir;
  std::string out = dir.file("runs");
  Plan plan = plan_text(kSweep);
  write_plan(plan, out);
  // Another tool (bench-sweep run) records a status.
  std::string manifest = read_text(out + "/manifest.json");
  std::string marker = "\"tag\": \"" + plan.points()[0].tag + "\",";
  manifest.replace(manifest.find(marker), marker.size(), marker + "\n      \"status\": \"ok\",");
  dir.write("runs/manifest.json", manifest);

  // The sweep drops micro_batch 4 (micro_batch still varies, so the other tags stay).
  std::string wider = kSweep;
  wider.replace(wider.find("[2, 4]"), 6, "[2, 3]");
  write_plan(plan_text(wider), out);
  Value m = load_yaml_file(out + "/manifest.json");
  const auto& points = m.find("points")->items();
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[0].find("tag")->as_string(), plan.points()[0].tag);
  EXPECT_EQ(points[0].find("status")->as_string(), "ok");  // kept
  EXPECT_EQ(points[0].find("in_sweep"), nullptr);
  EXPECT_EQ(points[2].find("varying")->find("train.micro_batch")->as_int(), 3);
  EXPECT_EQ(points[4].find("tag")->as_string(), plan.points()[2].tag);  // left the sweep: kept
  EXPECT_FALSE(points[4].find("in_sweep")->as_bool());
  EXPECT_FALSE(points[5].find("in_sweep")->as_bool());
}

TEST(WritePlan, ScenarioSelectionsAccumulate) {
  testing::TempDir dir;
  std::string out = dir.file("runs");
  std::string text =
      "name: s\nbase: {model.preset: gpt2-tiny, train: {steps: 4, warmup_steps: 1}}\n"
      "scenarios:\n  - {name: a, base: {train.micro_batch: 1}}\n"
      "  - {name: b, base: {train.micro_batch: 2}}\n";
  PlanOptions a;
  a.scenarios = {"a"};
  EXPECT_EQ(write_plan(plan_text(text, a), out).written, 1u);
  PlanOptions b;
  b.scenarios = {"b"};
  EXPECT_EQ(write_plan(plan_text(text, b), out).written, 1u);
  Value m = load_yaml_file(out + "/manifest.json");
  ASSERT_EQ(m.find("points")->items().size(), 2u);
  EXPECT_EQ(m.find("points")->items()[1].find("scenario")->as_string(), "b");
}

}  // namespace
}  // namespace sweepbench
