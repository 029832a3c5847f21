// bench-extract's selections on tables of rows: --where, --best (with --per) and --pareto.
#include "postprocess/table_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "text/error.h"

namespace sweepbench {
namespace {

using Row = std::map<std::string, Value>;

Row point(int index, const char* status, double tps, double mem, int mb) {
  Row r;
  r["index"] = Value::integer(index);
  r["status"] = Value::string(status);
  r["train.micro_batch"] = Value::integer(mb);
  r["train_tokens_per_second"] = Value::real(tps);
  r["mem_peak_bytes"] = Value::real(mem);
  return r;
}

std::vector<std::int64_t> indices(const ExtractTable& t) {
  std::vector<std::int64_t> out;
  for (const Row& r : t.rows) out.push_back(r.at("index").as_int());
  return out;
}

ExtractTable table() {
  ExtractTable t;
  t.columns = {"index", "status", "train.micro_batch", "train_tokens_per_second", "mem_peak_bytes"};
  t.rows = {point(0, "ok", 100, 10e9, 2), point(1, "ok", 180, 30e9, 4),
            point(2, "oom", 0, 90e9, 8),  point(3, "ok", 150, 20e9, 2),
            point(4, "ok", 170, 40e9, 4), point(5, "ok", 90, 12e9, 2)};
  return t;
}

TEST(Where, ComparesNumbersAsNumbersAndWordsAsWords) {
  ExtractTable t = table();
  filter_rows(&t, {parse_condition("mem_peak_bytes<25e9"), parse_condition("status=ok")});
  EXPECT_THAT(indices(t), testing::ElementsAre(0, 3, 5));
  EXPECT_TRUE(holds(point(0, "ok", 1, 1, 2), parse_condition("train.micro_batch>=2")));
  EXPECT_FALSE(holds(point(0, "ok", 1, 1, 2), parse_condition("train.micro_batch!=2")));
  EXPECT_FALSE(holds(point(0, "ok", 1, 1, 2), parse_condition("status<ok")));    // no word order
  EXPECT_FALSE(holds(point(0, "ok", 1, 1, 2), parse_condition("device=cuda")));  // no column
  // The first operator from the left: a value may hold one.
  RowCondition words = parse_condition("reason=a<=b");
  EXPECT_EQ(words.column, "reason");
  EXPECT_EQ(words.op, "=");
  EXPECT_EQ(words.value, "a<=b");
  EXPECT_EQ(parse_condition("x<=-3").op, "<=");
  EXPECT_EQ(parse_condition("x<=-3").value, "-3");
  // An empty value: the cell is empty.
  Row empty = point(0, "ok", 1, 1, 2);
  EXPECT_TRUE(holds(empty, parse_condition("reason=")));
  EXPECT_FALSE(holds(empty, parse_condition("reason!=")));
  EXPECT_FALSE(holds(empty, parse_condition("status=")));
  // Spaces around the operator, as pandas and SQL users write it, and == for =.
  RowCondition spaced = parse_condition("train.micro_batch < 4");
  EXPECT_EQ(spaced.column, "train.micro_batch");
  EXPECT_EQ(spaced.op, "<");
  EXPECT_EQ(spaced.value, "4");
  EXPECT_TRUE(holds(point(0, "ok", 1, 1, 2), spaced));
  EXPECT_TRUE(holds(point(0, "ok", 1, 1, 2), parse_condition("status == ok")));
  EXPECT_EQ(parse_condition("status==ok").op, "=");
  EXPECT_EQ(parse_condition("status==ok").value, "ok");
  EXPECT_FALSE(holds(point(0, "ok", 1, 1, 2), parse_condition("train.micro_batch != 2")));
  EXPECT_THROW(parse_condition(" < 4"), Error);
  EXPECT_THROW(parse_condition("x<"), Error);
  EXPECT_THROW(parse_condition("mem_peak_bytes"), Error);
  EXPECT_THROW(parse_condition("<5"), Error);
  EXPECT_THROW(parse_condition("a<"), Error);
}

TEST(Best, TheMetricsDirectionOnlyOkRowsAndOnePerGroup) {
  ExtractTable t = table();
  keep_best(&t, "train_tokens_per_second", {});
  EXPECT_THAT(indices(t), testing::ElementsAre(1));
  t = table();
  keep_best(&t, "mem_peak_bytes", {});  // less is better; the oom row is not a candidate
  EXPECT_THAT(indices(t), testing::ElementsAre(0));
  t = table();
  keep_best(&t, "train_tokens_per_second", {"train.micro_batch"});
  EXPECT_THAT(indices(t), testing::ElementsAre(3, 1));  // groups in the order first seen
}

TEST(Pareto, KeepsWhatNothingDominatesBeyondTheIntervals) {
  // Throughput up, memory down: 0 (100, 10), 1 (180, 30), 3 (150, 20) trade off; 4 (170, 40) is
  // dominated by 1; 5 (90, 12) by 0.
  ExtractTable t = table();
  keep_pareto_front(&t, {"train_tokens_per_second", "mem_peak_bytes"}, {});
  EXPECT_THAT(indices(t), testing::ElementsAre(0, 1, 3));
  // With intervals that overlap, 1 no longer dominates 4: 4 is on the front too.
  t = table();
  t.rows[1]["train_tokens_per_second_ci_low"] = Value::real(160);
  t.rows[1]["train_tokens_per_second_ci_high"] = Value::real(200);
  t.rows[4]["train_tokens_per_second_ci_low"] = Value::real(150);
  t.rows[4]["train_tokens_per_second_ci_high"] = Value::real(190);
  t.rows[1]["mem_peak_bytes_ci_low"] = Value::real(29e9);
  t.rows[1]["mem_peak_bytes_ci_high"] = Value::real(41e9);
  keep_pareto_front(&t, {"train_tokens_per_second", "mem_peak_bytes"}, {});
  EXPECT_THAT(indices(t), testing::ElementsAre(0, 1, 3, 4));
  // Per micro batch: each group's own front.
  t = table();
  keep_pareto_front(&t, {"train_tokens_per_second", "mem_peak_bytes"}, {"train.micro_batch"});
  EXPECT_THAT(indices(t), testing::ElementsAre(0, 1, 3));
}

TEST(Pareto, AMeanTimesIntervalIsItsMeansCiColumns) {
  // step_time_mean_s's interval is step_time_ci_low_s .. _high_s (one run's), as references
  // read it: a faster mean within the other's interval does not dominate.
  ExtractTable t;
  t.columns = {"index", "status", "step_time_mean_s", "mem_peak_bytes"};
  auto row = [](int index, double mean, double low, double high) {
    return Row{{"index", Value::integer(index)},     {"status", Value::string("ok")},
               {"step_time_mean_s", Value::real(mean)}, {"step_time_ci_low_s", Value::real(low)},
               {"step_time_ci_high_s", Value::real(high)}, {"mem_peak_bytes", Value::real(10)}};
  };
  t.rows = {row(0, 1.45, 1.389, 1.515), row(1, 1.53, 1.486, 1.570)};
  keep_pareto_front(&t, {"step_time_mean_s", "mem_peak_bytes"}, {});
  EXPECT_THAT(indices(t), testing::ElementsAre(0, 1));
}

// Repeats of a point checked against a performance reference (sweep/references.h).
Row checked(int repeat, const char* status, double v, bool pass) {
  Row r{{"index", Value::integer(repeat)}, {"repeat", Value::integer(repeat)},
        {"status", Value::string(status)}, {"params.x", Value::integer(1)}};
  if (std::string(status) != "ok") return r;
  r["train_tokens_per_second"] = Value::real(v);
  r["reference"] = Value::string(pass ? "pass" : "miss");
  r["train_tokens_per_second_ref"] = Value::real(10);
  r["train_tokens_per_second_ref_low"] = Value::real(9);
  r["train_tokens_per_second_ref_pass"] = Value::boolean(pass);
  return r;
}

ExtractTable checked_table(std::vector<Row> rows) {
  ExtractTable t;
  t.columns = {"index", "repeat", "status", "params.x", "train_tokens_per_second",
               "reference", "train_tokens_per_second_ref", "train_tokens_per_second_ref_low", "train_tokens_per_second_ref_high", "train_tokens_per_second_ref_pass"};
  t.rows = std::move(rows);
  return t;
}

TEST(GroupRepeats, AReferencesVerdictIsTheGroupsAndAFailedRepeatStaysInIt) {
  // Two ok repeats at 8.8 and 9.4: the interval of their mean reaches 9, so the group passes
  // although the first repeat alone missed.
  ExtractTable t = checked_table({checked(0, "ok", 8.8, false), checked(1, "ok", 9.4, true)});
  group_repeats(&t);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].at("reference").as_string(), "pass");
  EXPECT_TRUE(t.rows[0].at("train_tokens_per_second_ref_pass").as_bool());
  EXPECT_EQ(t.rows[0].at("train_tokens_per_second_ref").as_float(), 10);
  // Far below on both: the group misses.
  t = checked_table({checked(0, "ok", 5.0, false), checked(1, "ok", 5.1, false)});
  group_repeats(&t);
  EXPECT_EQ(t.rows[0].at("reference").as_string(), "miss");
  // A failed repeat (it has no reference columns) stays in its point's group.
  t = checked_table({checked(0, "failed", 0, false), checked(1, "ok", 9.5, true)});
  group_repeats(&t);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].at("repeats").as_int(), 2);
  EXPECT_EQ(t.rows[0].at("status").as_string(), "failed");
  // One ok repeat keeps the verdict its own run's interval gave.
  t = checked_table({checked(0, "ok", 8.0, true)});
  group_repeats(&t);
  EXPECT_EQ(t.rows[0].at("reference").as_string(), "pass");
  EXPECT_TRUE(t.rows[0].at("train_tokens_per_second_ref_pass").as_bool());
}

}  // namespace
}  // namespace sweepbench
