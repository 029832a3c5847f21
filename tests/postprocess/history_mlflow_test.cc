// export mlflow's pure parts: stored runs as MLflow runs (params, metrics and intervals, tags,
// status, times), the keys and values MLflow would refuse, log-batch's limits, the request
// bodies and the offline file read back. The REST API itself is tested against a real `mlflow
// server` (tests/postprocess/test_history_mlflow.py).
#include "postprocess/history_mlflow.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "config/yaml_io.h"
#include "text/error.h"

namespace sweepbench {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

HistoryRun stored_run() {
  HistoryRun r;
  r.run_key = "0123456789abcdef0123456789abcdef";
  r.sweep = "quick";
  r.tag = "mb=4.ws=1.deadbeef";
  r.config_hash = std::string(64, 'a');
  r.series_key = "1234567890abcdef";
  r.attempt = 2;
  r.status = "ok";
  r.started = "2026-11-20T08:00:00Z";
  r.ended = "2026-11-20T08:01:30Z";
  r.environment = {{"host", "n1"}, {"torch_version", "2.15.0"}};
  r.environment_id = "feedfacefeedface";
  r.labels = {{"commit", "a'b\"c\\d\n\xc3\xa9"}};
  r.config_json = R"({"train.micro_batch": 4, "train.dtype": "bf16", "launch.setup": ["a", "b"],)"
                  R"( "x.hostile": "'; DROP TABLE runs; --\"\\", "x.none": null})";
  r.metrics = {{"train_tokens_per_second", 1000.5, 990, 1010, "tokens/s"},
               {"step_time_median_s", 0.5, NAN, NAN, "s"},
               {"broken", NAN, NAN, NAN, ""}};
  return r;
}

std::map<std::string, std::string> as_map(const std::vector<MlflowItem>& items) {
  std::map<std::string, std::string> m;
  for (const MlflowItem& i : items) m[i.key] = i.value;
  return m;
}

TEST(MlflowRuns, MapParamsMetricsTagsStatusAndTimes) {
  std::vector<std::string> warnings;
  const std::vector<MlflowRun> runs =
      mlflow_runs({stored_run()}, [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_EQ(runs.size(), 1u);
  const MlflowRun& m = runs[0];
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(m.run_name, "mb=4.ws=1.deadbeef");
  EXPECT_EQ(m.sweep, "quick");
  EXPECT_EQ(m.status, "FINISHED");
  EXPECT_EQ(m.start_time, 1795161600000);  // date -u -d 2026-11-20T08:00:00Z +%s
  EXPECT_EQ(m.end_time, 1795161690000);
  const auto params = as_map(m.params);
  EXPECT_EQ(params.at("train.micro_batch"), "4");
  EXPECT_EQ(params.at("train.dtype"), "bf16");
  EXPECT_EQ(params.at("launch.setup"), R"(["a", "b"])");
  EXPECT_EQ(params.at("x.hostile"), "'; DROP TABLE runs; --\"\\");
  EXPECT_FALSE(params.count("x.none"));  // null: not set
  std::map<std::string, double> metrics;
  for (const MlflowMetric& x : m.metrics) {
    metrics[x.key] = x.value;
    EXPECT_EQ(x.timestamp, m.end_time);
  }
  EXPECT_EQ(metrics, (std::map<std::string, double>{{"train_tokens_per_second", 1000.5},
                                                    {"train_tokens_per_second_ci_low", 990},
                                                    {"train_tokens_per_second_ci_high", 1010},
                                                    {"step_time_median_s", 0.5}}));
  const auto tags = as_map(m.tags);
  EXPECT_EQ(tags.at("env.host"), "n1");
  EXPECT_EQ(tags.at("env.torch_version"), "2.15.0");
  EXPECT_EQ(tags.at("label.commit"), "a'b\"c\\d\n\xc3\xa9");
  EXPECT_EQ(tags.at("sweepbench.run_key"), "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(tags.at("sweepbench.status"), "ok");
  EXPECT_EQ(tags.at("sweepbench.attempt"), "2");
  EXPECT_EQ(tags.at("sweepbench.config_hash"), std::string(64, 'a'));
  EXPECT_EQ(tags.at("sweepbench.unit.train_tokens_per_second"), "tokens/s");
  EXPECT_FALSE(tags.count("sweepbench.reason"));  // empty: not set
}

TEST(MlflowRuns, StatusOfEachEnding) {
  EXPECT_EQ(mlflow_status("ok"), "FINISHED");
  for (const char* s : {"failed", "oom", "incomplete", "something-new"}) {
    EXPECT_EQ(mlflow_status(s), "FAILED") << s;
  }
  for (const char* s : {"cancelled", "timeout", "preempted", "node_fail"}) {
    EXPECT_EQ(mlflow_status(s), "KILLED") << s;
  }
}

TEST(MlflowRuns, Times) {
  EXPECT_EQ(mlflow_time_ms("1970-01-01T00:00:01Z"), 1000);
  EXPECT_EQ(mlflow_time_ms("2026-11-20T08:00:00.25Z"), 1795161600250);
  for (const char* bad : {"", "2026-11-20", "2026-11-20T08:00:00", "2026-13-01T00:00:00Z",
                          "2026-11-20T08:00:00+01:00", "2026-11-20T08:00:00.Zx"}) {
    EXPECT_EQ(mlflow_time_ms(bad), 0) << bad;
  }
}

TEST(MlflowRuns, KeysMlflowRefusesAreLeftOutAndLongValuesCut) {
  HistoryRun r = stored_run();
  r.config_json = "{\"ok.key\": \"" + std::string(7000, 'v') + "\", \"bad!key\": 1, \"" +
                  std::string(251, 'k') + "\": 2, \"c\": \"" + std::string(5999, 'x') +
                  "\xc3\xa9\"}";
  r.environment["odd field"] = std::string(9000, 'e');
  std::vector<std::string> warnings;
  const MlflowRun m =
      mlflow_runs({r}, [&](const std::string& w) { warnings.push_back(w); }).front();
  const auto params = as_map(m.params);
  EXPECT_EQ(params.at("ok.key"), std::string(kMlflowMaxParamValue, 'v'));
  EXPECT_EQ(params.at("c"), std::string(5999, 'x'));  // not cut within a UTF-8 character
  EXPECT_FALSE(params.count("bad!key"));
  EXPECT_EQ(params.size(), 2u);
  EXPECT_EQ(as_map(m.tags).at("env.odd field"), std::string(kMlflowMaxTagValue, 'e'));
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_THAT(warnings, Contains(HasSubstr("config key \"bad!key\" of run quick/mb=4.ws=1.deadbeef "
                                           "(attempt 2) left out")));
}

TEST(MlflowBatches, EachWithinLogBatchLimitsAndAllSentInOrder) {
  MlflowRun run;
  for (int i = 0; i < 250; ++i) run.params.push_back({"p" + std::to_string(i), "v"});
  for (int i = 0; i < 150; ++i) run.tags.push_back({"t" + std::to_string(i), "v"});
  for (int i = 0; i < 2500; ++i) run.metrics.push_back({"m" + std::to_string(i), 1.0 * i, 7});
  const std::vector<MlflowBatch> batches = mlflow_batches(run);
  std::vector<std::string> params, tags, metrics;
  for (const MlflowBatch& b : batches) {
    EXPECT_LE(b.params.size(), kMlflowBatchParams);
    EXPECT_LE(b.tags.size(), kMlflowBatchTags);
    EXPECT_LE(b.metrics.size(), kMlflowBatchMetrics);
    EXPECT_LE(b.params.size() + b.tags.size() + b.metrics.size(), kMlflowBatchItems);
    for (const auto& p : b.params) params.push_back(p.key);
    for (const auto& t : b.tags) tags.push_back(t.key);
    for (const auto& m : b.metrics) metrics.push_back(m.key);
  }
  EXPECT_EQ(batches.size(), 3u);  // 2500 metrics with 100+100, 100+50, 50+0 beside them
  ASSERT_EQ(params.size(), 250u);
  ASSERT_EQ(tags.size(), 150u);
  ASSERT_EQ(metrics.size(), 2500u);
  for (int i = 0; i < 2500; ++i) EXPECT_EQ(metrics[i], "m" + std::to_string(i));
  EXPECT_TRUE(mlflow_batches(MlflowRun{}).empty());
}

TEST(MlflowRequests, AnAnswerNestedPastTheLimitIsRefusedNotRecursedInto) {
  // A hostile server's or file's nesting: 64 levels are read, 65 and a million are refused
  // with the source named (a million would overflow the stack if each were a call).
  const auto nested = [](int levels) {
    return std::string(static_cast<size_t>(levels), '[') +
           std::string(static_cast<size_t>(levels), ']');
  };
  EXPECT_NO_THROW(parse_json_value(nested(64), "the answer"));
  for (int levels : {65, 1000000}) {
    try {
      parse_json_value(nested(levels), "http://127.0.0.1:5000/api");
      ADD_FAILURE() << levels << " levels were read";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("http://127.0.0.1:5000/api"));
      EXPECT_THAT(e.what(), HasSubstr("nests deeper than 64 levels"));
    }
  }
}

TEST(MlflowRequests, BodiesAreMlflowsJsonWithEveryStringEscaped) {
  MlflowBatch b;
  b.params = {{"k", "a\"b\\c\n\x01"}};
  b.tags = {{"label.x", "</script>"}};
  b.metrics = {{"value", 2.5, 1795161600000}};
  const Value body = mlflow_batch_request("abc", b);
  const Value back = parse_json_value(emit_json(body, -1), "the request");
  EXPECT_EQ(back, body);
  EXPECT_EQ(emit_json(body, -1),
            R"({"run_id": "abc", "params": [{"key": "k", "value": "a\"b\\c\n\u0001"}], )"
            R"("metrics": [{"key": "value", "value": 2.5, "timestamp": 1795161600000, )"
            R"("step": 0}], "tags": [{"key": "label.x", "value": "</script>"}]})");
  EXPECT_EQ(emit_json(mlflow_update_request("abc", "KILLED", 5), -1),
            R"({"run_id": "abc", "status": "KILLED", "end_time": 5})");
  EXPECT_EQ(emit_json(mlflow_create_request("1", "n", 0, {{"a", "b"}}), -1),
            R"({"experiment_id": "1", "run_name": "n", "tags": [{"key": "a", "value": "b"}]})");
}

TEST(MlflowOffline, ReadsBackWhatItWrote) {
  MlflowOffline written{"team exp", mlflow_runs({stored_run(), stored_run()})};
  written.runs[1].run_key = "ffff";
  written.runs[1].status = "FAILED";
  const std::string text = mlflow_offline_text(written);
  const MlflowOffline read = parse_mlflow_offline(text, "f.jsonl");
  EXPECT_EQ(read.experiment, "team exp");
  ASSERT_EQ(read.runs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const MlflowRun &a = written.runs[i], &b = read.runs[i];
    EXPECT_EQ(a.run_key, b.run_key);
    EXPECT_EQ(a.sweep, b.sweep);
    EXPECT_EQ(a.run_name, b.run_name);
    EXPECT_EQ(a.status, b.status);
    EXPECT_EQ(a.start_time, b.start_time);
    EXPECT_EQ(a.end_time, b.end_time);
    EXPECT_EQ(as_map(a.params), as_map(b.params));
    EXPECT_EQ(as_map(a.tags), as_map(b.tags));
    ASSERT_EQ(a.metrics.size(), b.metrics.size());
    for (size_t j = 0; j < a.metrics.size(); ++j) {
      EXPECT_EQ(a.metrics[j].key, b.metrics[j].key);
      EXPECT_EQ(a.metrics[j].value, b.metrics[j].value);
      EXPECT_EQ(a.metrics[j].timestamp, b.metrics[j].timestamp);
    }
  }
  // One JSON object a line: the hostile label's newline is escaped.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
}

TEST(MlflowOffline, RefusesAFileCutShortOrNotItsOwn) {
  const std::string text = mlflow_offline_text({"e", mlflow_runs({stored_run(), stored_run()})});
  const std::string cut = text.substr(0, text.rfind('\n', text.size() - 2) + 1);
  try {
    parse_mlflow_offline(cut, "f.jsonl");
    FAIL() << "a file cut short was read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("holds 1 run(s) where its first line says 2"));
  }
  EXPECT_THROW(parse_mlflow_offline(text.substr(0, text.size() - 20), "f.jsonl"), Error);
  EXPECT_THROW(parse_mlflow_offline("{\"a\": 1}\n", "f.jsonl"), Error);
  EXPECT_THROW(parse_mlflow_offline("", "f.jsonl"), Error);
  try {
    parse_mlflow_offline(text.substr(0, text.find('\n') + 1) + "{\"run_key\": \"x\"}\n", "f.jsonl");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("f.jsonl:2"));
  }
}

}  // namespace
}  // namespace sweepbench
