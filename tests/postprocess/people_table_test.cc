// bench-extract's tables for people (postprocess/people_table.h), on rows made here.
#include "postprocess/people_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace sweepbench {
namespace {

using ::testing::ElementsAre;

using Row = std::map<std::string, Value>;

Row point(std::int64_t index, std::int64_t micro_batch, double tps, double step_s) {
  return {{"index", Value::integer(index)},
          {"status", Value::string("ok")},
          {"benchmark", Value::string("train")},
          {"train.micro_batch", Value::integer(micro_batch)},
          {"eval.micro_batch", Value::integer(micro_batch)},
          {"train_tokens_per_second", Value::real(tps)},
          {"step_time_mean_s", Value::real(step_s)}};
}

ExtractTable table_of(std::vector<Row> rows) {
  ExtractTable t;
  t.columns = {"index",
               "status",
               "reason",
               "benchmark",
               "train.micro_batch",
               "eval.micro_batch",
               "train_tokens_per_second",
               "step_time_mean_s"};
  t.rows = std::move(rows);
  return t;
}

std::string cell(const ExtractTable& t, size_t row, const std::string& column) {
  return t.rows[row].at(column).as_string();
}

TEST(PeopleTable, KeysThatVaryHeadlineMetricsAndUnits) {
  ExtractTable t = people_table(table_of({point(0, 2, 48149.3, 0.001329), point(1, 4, 76314, 0.0021)}));
  // eval.micro_batch follows train.micro_batch: left out.
  EXPECT_THAT(t.columns, ElementsAre("index", "micro_batch", "tokens/s", "step mean (ms)"));
  EXPECT_EQ(cell(t, 0, "step mean (ms)"), "1.329");
  EXPECT_EQ(cell(t, 1, "tokens/s"), "76314");
}

TEST(PeopleTable, TheMetricRowsWereChosenByIsShown) {
  // Command points without metrics of their own: --best seconds must still show the time, and
  // a metric of the rows' units keeps its unit.
  auto command = [](std::int64_t index, double seconds, double rate) {
    Value units = Value::map();
    units.set("rate", Value::string("items/s"));
    return Row{{"index", Value::integer(index)},     {"status", Value::string("ok")},
               {"benchmark", Value::string("command")}, {"params.size", Value::integer(index)},
               {"seconds", Value::real(seconds)},     {"rate", Value::real(rate)},
               {"units", units}};
  };
  ExtractTable full;
  full.columns = {"index", "status", "benchmark", "params.size", "seconds", "rate", "units"};
  full.rows = {command(0, 0.1012, 7), command(1, 0.2, 9)};
  ExtractTable t = people_table(full, {}, nullptr, {"seconds"});
  EXPECT_THAT(t.columns, ElementsAre("index", "size", "rate (items/s)", "time (ms)"));
  EXPECT_EQ(cell(t, 0, "time (ms)"), "101.2");
  // A metric already shown is not shown twice.
  EXPECT_THAT(people_table(full, {}, nullptr, {"rate"}).columns,
              ElementsAre("index", "size", "rate (items/s)"));
}

TEST(PeopleTable, MeanAndStdRoundedToTheNoiseAndEqualRepeatsShowNone) {
  Row a = point(0, 2, 48686.3, 0.001), b = point(1, 4, 3.7, 0.002);
  a["train_tokens_per_second_std"] = Value::real(153.2);
  b["train_tokens_per_second_std"] = Value::real(5e-16);  // equal repeats, rounding's noise
  ExtractTable t = people_table(table_of({a, b}));
  EXPECT_EQ(cell(t, 0, "tokens/s"), "48690 ± 150");
  EXPECT_EQ(cell(t, 1, "tokens/s"), "3.7");
}

TEST(PeopleTable, IntervalsTheirWayAnOpenOneShownAsSuch) {
  // tokens/s is tokens over the mean step: the step shown is the mean too, with its interval.
  Row a = point(0, 2, 1000, 0.004), b = point(1, 4, 1000, 0.008);
  a["step_time_ci_low_s"] = Value::real(0.003);
  a["step_time_ci_high_s"] = Value::real(0.005);
  // The throughput's through 1 / step: ± half its width.
  a["train_tokens_per_second_ci_low"] = Value::real(800);
  a["train_tokens_per_second_ci_high"] = Value::real(1333.3);
  // A step interval reaching 0 s: the throughput's has no upper end, and says so.
  b["step_time_ci_low_s"] = Value::real(0);
  b["step_time_ci_high_s"] = Value::real(0.02);
  b["train_tokens_per_second_ci_low"] = Value::real(400);
  b["train_tokens_per_second_ci_high"] = Value::null();
  ExtractTable t = people_table(table_of({a, b}));
  EXPECT_EQ(cell(t, 0, "step mean (ms)"), "4.0 ± 1.0");
  EXPECT_EQ(cell(t, 0, "tokens/s"), "1000 ± 270");
  EXPECT_EQ(cell(t, 1, "tokens/s"), "1000 [400, no upper end]");
  // A time's interval cut at 0 s: its ends, not a ± of half its width.
  EXPECT_EQ(cell(t, 1, "step mean (ms)"), "8 [0, 20]");
}

TEST(PeopleTable, ValuesThatDifferOnlyInTheirMiddleStillVary) {
  // Two argvs longer than a people's cell, differing only where it is cut.
  std::string head(40, 'a'), tail(40, 'z');
  Row a = point(0, 2, 1, 1), b = point(1, 2, 2, 1);
  a["command.argv"] = Value::string(head + " -t 8 " + tail);
  b["command.argv"] = Value::string(head + " -t 16 " + tail);
  ExtractTable full = table_of({a, b});
  full.columns.push_back("command.argv");
  ExtractTable t = people_table(full);
  EXPECT_THAT(t.columns, ElementsAre("index", "argv", "tokens/s", "step mean (s)"));
}

TEST(PeopleTable, NoRowsGiveAHeaderAndRemovedPointsAreMarked) {
  EXPECT_THAT(people_table(table_of({})).columns, ElementsAre("tag"));
  Row gone = point(0, 2, 1, 1);
  gone["in_sweep"] = Value::boolean(false);
  ExtractTable full = table_of({gone, point(1, 2, 2, 1)});
  full.columns.push_back("in_sweep");
  ExtractTable t = people_table(full);
  EXPECT_THAT(t.columns, ElementsAre("index", "in_sweep", "tokens/s", "step mean (s)"));
  EXPECT_EQ(cell(t, 0, "in_sweep"), "false");
  EXPECT_EQ(cell(t, 1, "in_sweep"), "");
}

TEST(PeopleTable, AKeyNamedLikeAFixedColumnKeepsItsWholeName) {
  Row a = point(0, 2, 1, 1), b = point(1, 2, 2, 1);
  a["params.status"] = Value::string("x");
  b["params.status"] = Value::string("y");
  ExtractTable full = table_of({a, b});
  full.columns.push_back("params.status");
  EXPECT_THAT(people_table(full).columns,
              ElementsAre("index", "params.status", "tokens/s", "step mean (s)"));
}

}  // namespace
}  // namespace sweepbench
