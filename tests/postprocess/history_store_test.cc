// The history store on a real SQLite file: its schema made once, each run stored once and read
// back whole, the keys' stability, filters, and the store URLs and times it refuses.
#include "postprocess/history_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "postprocess/history_ingest.h"
#include "support/temp_dir.h"
#include "text/error.h"

namespace sweepbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

HistoryRun run(const std::string& tag, const std::string& started, double tps) {
  HistoryRun r;
  r.sweep = "s";
  r.tag = tag;
  r.config_hash = std::string(64, 'a');
  r.benchmark = "train";
  r.scenario = "default";
  r.attempt = 1;
  r.status = "ok";
  r.started = started;
  r.ended = started;
  r.seconds = 2.5;
  r.results_dir = "/r/" + tag;
  r.environment = {{"host", "n1"}, {"torch_version", "2.15.0"}};
  r.environment_id = history_environment_id(r.environment);
  r.labels = {{"commit", "abc"}};
  r.config_json = R"({"train.micro_batch": 4, "train.dtype": "bf16"})";
  r.metrics = {{"train_tokens_per_second", tps, tps * 0.9, tps * 1.1, "tokens/s"},
               {"step_time_median_s", 0.5, NAN, NAN, "s"}};
  r.run_key = history_run_key(tag, 1, r.config_hash, "n1", 42, started);
  return r;
}

TEST(HistoryStore, EachRunOnceAndReadBackWhole) {
  testing::TempDir dir;
  const std::string path = dir.file("h.sqlite");
  {
    // Reading makes no store; ingesting does.
    EXPECT_THROW(HistoryStore::open(path), Error);
    EXPECT_FALSE(std::filesystem::exists(path));
    HistoryStore store = HistoryStore::open(path, true);
    EXPECT_EQ(store.schema_version(), kHistorySchemaVersion);
    EXPECT_EQ(store.record(
                  {run("b", "2026-11-02T00:00:00Z", 200), run("a", "2026-11-01T00:00:00Z", 100)}),
              2u);
    EXPECT_EQ(store.record({run("a", "2026-11-01T00:00:00Z", 999)}), 0u);  // same key: nothing
  }
  HistoryStore store = HistoryStore::open(path);  // opened again: the schema as it was
  std::vector<HistoryRun> runs = store.runs({});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].tag, "a");  // oldest first
  EXPECT_EQ(runs[0].labels, (std::map<std::string, std::string>{{"commit", "abc"}}));
  EXPECT_EQ(runs[0].environment.at("torch_version"), "2.15.0");
  ASSERT_EQ(runs[0].metrics.size(), 2u);
  const HistoryMetric& tps = runs[0].metrics[1];
  EXPECT_EQ(tps.name, "train_tokens_per_second");
  EXPECT_DOUBLE_EQ(tps.value, 100);  // the first one stored, not the 999 of the second
  EXPECT_DOUBLE_EQ(tps.ci_low, 90);
  EXPECT_EQ(tps.unit, "tokens/s");
  EXPECT_TRUE(std::isnan(runs[0].metrics[0].ci_low));
  EXPECT_DOUBLE_EQ(runs[0].seconds, 2.5);

  HistoryFilter f;
  f.metric = "train_tokens_per_second";
  f.since = history_time_bound("2026-11-02", "--since", false);
  runs = store.runs(f);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].tag, "b");
  ASSERT_EQ(runs[0].metrics.size(), 1u);  // only the metric asked for
  f = {};
  f.config = {{"train.micro_batch", "4"}, {"train.dtype", "bf16"}};
  EXPECT_EQ(store.runs(f).size(), 2u);
  f.config = {{"train.micro_batch", "8"}};
  EXPECT_TRUE(store.runs(f).empty());
  f = {};
  f.limit = 1;
  runs = store.runs(f);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].tag, "b");  // the newest
  f = {};
  f.environment = {{"torch_version", "2.14.0"}};
  EXPECT_TRUE(store.runs(f).empty());
}

TEST(HistoryStore, KeysAreStableAndSeparateTheirFields) {
  // The key of an attempt must never change between versions: a store would take the same
  // attempt twice. Fixed here: the first 32 hex digits of the SHA-256 of the fields, each as
  // LENGTH:TEXT; (Python's hashlib gives the same).
  EXPECT_EQ(history_run_key("mb=2.abc", 1, "cab2", "vm", 22963, "2026-11-29T15:55:45Z"),
            "cdc3fab92e8aa81efce26db5a856c94b");
  EXPECT_EQ(history_run_key("t", 1, "h", "host", 1, "2026-01-01T00:00:00Z").size(), 32u);
  // Fields are separated: moving text from one to the next changes the key, NUL or not.
  EXPECT_NE(history_run_key("t", 1, "ab", "c", 1, "t"), history_run_key("t", 1, "a", "bc", 1, "t"));
  EXPECT_NE(history_run_key("t", 1, std::string("a\0", 2), "b", 1, "t"),
            history_run_key("t", 1, "a", std::string("\0b", 2), 1, "t"));
  EXPECT_NE(history_run_key("t", 1, "h", "x", 1, "t"), history_run_key("t", 2, "h", "x", 1, "t"));
  EXPECT_EQ(history_environment_id({}), "");
  EXPECT_NE(history_environment_id({{"a", "bc"}}), history_environment_id({{"ab", "c"}}));
}

TEST(HistoryStore, AnotherImageContinuesTheSeries) {
  const std::string a = R"({"container.image": "/img/24.02.sif", "launch.setup": ["module load x"],
                            "train.micro_batch": 4})";
  const std::string b = R"({"container.image": "/img/24.10.sif", "launch.setup": [],
                            "train.micro_batch": 4})";
  const std::string c = R"({"container.image": "/img/24.02.sif", "train.micro_batch": 8})";
  EXPECT_EQ(history_series_key(a), history_series_key(b));
  EXPECT_NE(history_series_key(a), history_series_key(c));
  EXPECT_EQ(history_series_key(a).size(), 16u);
}

TEST(HistoryStore, RefusesWhatIsNoStoreAndNamesTheFix) {
  testing::TempDir dir;
  const std::string notes = dir.write("notes.txt", std::string(4096, 'x'));
  try {
    HistoryStore::open(notes);
    FAIL() << "a text file opened as a store";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_THAT(e.hint(), HasSubstr("--store must name a history store"));
  }
  EXPECT_EQ(testing::read_text(notes), std::string(4096, 'x'));
  try {
    HistoryStore::open("redis://localhost/0");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_THAT(e.message(), HasSubstr("'redis' is not a store"));
    EXPECT_THAT(e.hint(), HasSubstr("sqlite"));
  }
  EXPECT_THROW(HistoryStore::open("sqlite://host/db"), Error);
  // sqlite:///ABSOLUTE and sqlite:RELATIVE name files.
  HistoryStore a = HistoryStore::open("sqlite://" + dir.file("a.sqlite"), true);
  EXPECT_EQ(a.describe(), "sqlite:" + dir.file("a.sqlite"));
  HistoryStore b = HistoryStore::open("sqlite:" + dir.file("b.sqlite"), true);
  // Another program's database is not taken over, for reading or for writing.
  {
    std::unique_ptr<Database> other = open_database(dir.file("other.sqlite"));
    other->script("CREATE TABLE places (name TEXT)");
  }
  for (bool create : {false, true}) {
    try {
      HistoryStore::open(dir.file("other.sqlite"), create);
      FAIL() << "a foreign database opened as a store";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kConflict);
      EXPECT_THAT(e.message(), HasSubstr("is not a history store"));
    }
  }
  EXPECT_FALSE(open_database(dir.file("other.sqlite"))->has_table("runs"));
  // libpq's key=value form is no file name.
  EXPECT_THROW(HistoryStore::open("host=db password=s3cret", true), Error);
  EXPECT_FALSE(std::filesystem::exists("host=db password=s3cret"));
  EXPECT_EQ(b.describe(), "sqlite:" + dir.file("b.sqlite"));
}

TEST(HistoryStore, TimesAndLabelsAreChecked) {
  EXPECT_EQ(history_time_bound("2026-11-20", "--since", false), "2026-11-20T00:00:00Z");
  EXPECT_EQ(history_time_bound("2026-11-20", "--until", true), "2026-11-20T23:59:59Z");
  EXPECT_EQ(history_time_bound("2026-11-20T08:00:00Z", "--since", false), "2026-11-20T08:00:00Z");
  for (const char* bad : {"yesterday", "2026-11-2", "2026-11-20 08:00", "2026-11-20T08:00:00",
                          "2026-13-45", "2026-11-20T25:99:99Z", "2026-00-10"}) {
    EXPECT_THROW(history_time_bound(bad, "--since", false), Error) << bad;
  }
  std::map<std::string, std::string> labels;
  add_label("commit=abc=def", &labels);
  EXPECT_EQ(labels.at("commit"), "abc=def");
  for (const char* bad : {"commit", "=x", "a b=1", "x=line\nbreak"}) {
    EXPECT_THROW(add_label(bad, &labels), Error) << bad;
  }
}

// Back to schema 2, as a bench-history of that schema left a store: metrics keyed by run key,
// runs_by_seq not unique.
void back_to_schema_two(HistoryStore& store) {
  store.database().script(
      "CREATE TABLE metrics_by_key (run_key TEXT NOT NULL REFERENCES runs (run_key) ON DELETE "
      "CASCADE, name TEXT NOT NULL, value DOUBLE PRECISION, ci_low DOUBLE PRECISION, ci_high "
      "DOUBLE PRECISION, unit TEXT NOT NULL, PRIMARY KEY (run_key, name)); "
      "INSERT INTO metrics_by_key SELECT r.run_key, m.name, m.value, m.ci_low, m.ci_high, m.unit "
      "FROM metrics m JOIN runs r ON r.seq = m.run_seq; DROP TABLE metrics; "
      "ALTER TABLE metrics_by_key RENAME TO metrics; DROP INDEX runs_by_seq; "
      "CREATE INDEX runs_by_seq ON runs (seq); UPDATE history_schema SET version = 2;");
}

// A store of schema 2 is migrated by the next open: its metrics, keyed by run key there, come
// back with the same values and intervals, keyed by seq; the runs are stored on after them.
TEST(HistoryStore, ASchemaTwoStoreIsMigratedWithItsMetrics) {
  testing::TempDir dir;
  const std::string path = dir.file("h.sqlite");
  std::vector<HistoryRun> before;
  {
    HistoryStore store = HistoryStore::open(path, true);
    store.record({run("a", "2026-11-01T00:00:00Z", 100), run("b", "2026-11-02T00:00:00Z", 200)});
    before = store.runs({});
    back_to_schema_two(store);
    EXPECT_EQ(store.schema_version(), 2);
    EXPECT_EQ(sql_text(store.database().query("PRAGMA table_info(metrics)").at(0).at(1)),
              "run_key");
  }
  HistoryStore store = HistoryStore::open(path);
  EXPECT_EQ(store.schema_version(), kHistorySchemaVersion);
  std::vector<HistoryRun> after = store.runs({});
  ASSERT_EQ(after.size(), 2u);
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].run_key, before[i].run_key);
    ASSERT_EQ(after[i].metrics.size(), before[i].metrics.size());
    ASSERT_FALSE(after[i].metrics.empty());
    for (size_t m = 0; m < after[i].metrics.size(); ++m) {
      EXPECT_EQ(after[i].metrics[m].name, before[i].metrics[m].name);
      EXPECT_EQ(after[i].metrics[m].value, before[i].metrics[m].value);
      for (auto [x, y] : {std::pair{after[i].metrics[m].ci_low, before[i].metrics[m].ci_low},
                          std::pair{after[i].metrics[m].ci_high, before[i].metrics[m].ci_high}}) {
        EXPECT_TRUE(std::isnan(y) ? std::isnan(x) : x == y) << x << " " << y;
      }
    }
  }
  EXPECT_EQ(store.record({run("c", "2026-11-03T00:00:00Z", 300)}), 1u);
  after = store.runs({});
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[2].seq, 3);
  EXPECT_EQ(after[2].metrics.size(), before[0].metrics.size());
  // seq is the metrics' key: a second run with the same seq is refused.
  EXPECT_THROW(store.database().exec("UPDATE runs SET seq = 1 WHERE seq = 2"), Error);
}

// A store of schema 1 (its three indexes without seq) is migrated by the next open, in one
// step, its runs kept; a query for one configuration then reads that configuration's index.
TEST(HistoryStore, ASchemaOneStoreIsMigrated) {
  testing::TempDir dir;
  const std::string path = dir.file("h.sqlite");
  {
    HistoryStore store = HistoryStore::open(path, true);
    store.record({run("a", "2026-11-01T00:00:00Z", 100), run("b", "2026-11-02T00:00:00Z", 200)});
    // Back to schema 1, as a bench-history of that schema left it.
    back_to_schema_two(store);
    store.database().script(
        "DROP INDEX runs_by_config; DROP INDEX runs_by_series; DROP INDEX runs_by_sweep; "
        "DROP INDEX runs_by_tag; CREATE INDEX runs_by_config ON runs (config_hash, started); "
        "CREATE INDEX runs_by_series ON runs (series_key, started); "
        "CREATE INDEX runs_by_sweep ON runs (sweep, started); "
        "UPDATE history_schema SET version = 1;");
    EXPECT_EQ(store.schema_version(), 1);
  }
  HistoryStore store = HistoryStore::open(path);
  EXPECT_EQ(store.schema_version(), kHistorySchemaVersion);
  EXPECT_EQ(store.runs({}).size(), 2u);
  EXPECT_FALSE(store.runs({}).at(0).metrics.empty());
  std::vector<SqlRow> plan = store.database().query(
      "EXPLAIN QUERY PLAN SELECT run_key FROM runs WHERE config_hash = ? ORDER BY started, seq",
      {std::string("x")});
  std::string said;
  for (const SqlRow& row : plan) said += sql_text(row.back()) + "\n";
  EXPECT_NE(said.find("runs_by_config"), std::string::npos) << said;
  EXPECT_EQ(said.find("TEMP B-TREE"), std::string::npos) << said;  // no sort: the index's order
}

}  // namespace
}  // namespace sweepbench
