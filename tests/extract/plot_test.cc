// bench-plot's pieces without gnuplot: reading CSV, grouping repeats, and the script's shape.
#include "postprocess/plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "support/expect_error.h"

namespace sweepbench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseCsv, QuotesNewlinesAndRaggedRows) {
  CsvTable t = parse_csv("a,b,c\n1,\"x, \"\"y\"\"\",\"two\nlines\"\r\n\n2,,3\n", "t.csv");
  EXPECT_THAT(t.columns, ElementsAre("a", "b", "c"));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_THAT(t.rows[0], ElementsAre("1", "x, \"y\"", "two\nlines"));
  EXPECT_THAT(t.rows[1], ElementsAre("2", "", "3"));
  Error e = testing::error_of([] { parse_csv("a,b\n1,2\n3\n", "t.csv"); });
  EXPECT_EQ(e.mark().str(), "t.csv:3");
  EXPECT_THAT(e.message(), HasSubstr("1 fields, the header has 2"));
}

CsvTable results() {
  return parse_csv(
      "tag,status,mb,ranks,tps,eval\n"
      "a,ok,2,1,100,300\n"
      "a,ok,2,1,120,\n"  // a repeat without evaluation
      "b,ok,4,1,200,500\n"
      "c,oom,8,1,,\n"
      "d,ok,2,2,180,360\n",
      "r.csv");
}

TEST(PlotPoints, MeanAndStdOverRepeatsOnlyOkRows) {
  PlotSpec spec;
  spec.metrics = {"tps"};
  spec.x = "mb";
  spec.hue = "ranks";
  size_t left_out = 0;
  std::vector<PlotPoint> p = plot_points(results(), spec, &left_out);
  EXPECT_EQ(left_out, 1u);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].x, "2");
  EXPECT_EQ(p[0].hue, "1");
  EXPECT_EQ(p[0].count, 2u);
  EXPECT_DOUBLE_EQ(p[0].mean, 110);
  EXPECT_NEAR(p[0].std, 14.142135623730951, 1e-12);
  EXPECT_EQ(p[2].hue, "2");
  spec.x = "nope";
  Error e = testing::error_of([&] { plot_points(results(), spec, &left_out); });
  EXPECT_THAT(e.hint(), HasSubstr("the columns are: tag, status, mb, ranks, tps, eval"));
}

TEST(GnuplotScript, BarsPerHueAndAnIdealLineForScaling) {
  PlotSpec spec;
  spec.metrics = {"tps"};
  spec.x = "mb";
  spec.hue = "ranks";
  spec.output = "/o/f.png";
  size_t left_out = 0;
  std::string data;
  std::string s = gnuplot_script(plot_points(results(), spec, &left_out), spec, "/o/d", &data);
  EXPECT_THAT(s, HasSubstr("set terminal pngcairo"));
  EXPECT_THAT(s, HasSubstr("plot '/o/d' using 2:3:xtic(1) title 'ranks=1', \\\n"
                           "    '/o/d' using 4:5 title 'ranks=2'\n"));
  EXPECT_EQ(data,
            "# x\t1_mean\tstd\t2_mean\tstd\n"
            "\"2\"\t110.0\t14.142135623730951\t180.0\t0.0\n"
            "\"4\"\t200.0\t0.0\tNaN\tNaN\n");
  spec.kind = "scaling";
  spec.x = "ranks";
  spec.hue = "";
  spec.output = "/o/f.svg";
  s = gnuplot_script(plot_points(results(), spec, &left_out), spec, "/o/d", &data);
  EXPECT_THAT(s, HasSubstr("set terminal svg"));
  EXPECT_THAT(s, HasSubstr("set logscale x 2\n"));
  EXPECT_THAT(s, HasSubstr("with yerrorlines"));
  EXPECT_THAT(s, HasSubstr("set xtics (1.0, 2.0)\n"));
  EXPECT_THAT(s, HasSubstr(" * x / 1.0 with lines dt 2 lc rgb 'gray40' title 'ideal'"));
}

// Issue 14, I1: inside double quotes gnuplot runs `backquoted` commands. Every text reaches the
// script single-quoted (quotes doubled, no line breaks, no NUL) and the data file without tabs,
// line breaks or double quotes. (test_extract_faults.py runs such scripts in the real gnuplot.)
TEST(GnuplotScript, TextIsSingleQuotedAndOnOneLine) {
  std::string csv =
      "tag,status,mb,who,tps\n"
      "a,ok,2,\"`touch x` $(touch y) it's\nz\",100\n"
      "b,ok,4,\"q\"\"\t\",200\n";
  csv.insert(csv.find("\nz"), 1, '\0');
  CsvTable t = parse_csv(csv, "t.csv");
  PlotSpec spec;
  spec.metrics = {"tps"};
  spec.x = "who";
  spec.hue = "who";
  spec.title = "T `a` \" \\ ' system(\"b\")\nplot";
  spec.output = "/o/`c`'.png";
  size_t left_out = 0;
  std::string data;
  std::string s = gnuplot_script(plot_points(t, spec, &left_out), spec, "/o/d'", &data);
  EXPECT_THAT(s, HasSubstr("set title 'T `a` \" \\ '' system(\"b\") plot' noenhanced\n"));
  EXPECT_THAT(s, HasSubstr("set output '/o/`c`''.png'\n"));
  EXPECT_THAT(s, HasSubstr("'/o/d''' using 2:3:xtic(1) title 'who=`touch x` $(touch y) it''s z'"));
  EXPECT_EQ(s.find("\"`"), std::string::npos);
  EXPECT_EQ(s.find('\0'), std::string::npos);
  EXPECT_EQ(s.find('\r'), std::string::npos);
  EXPECT_EQ(data.find('\0'), std::string::npos);
  EXPECT_THAT(data, HasSubstr("\"`touch x` $(touch y) it's z\"\t"));
  EXPECT_THAT(data, HasSubstr("\"q' \"\t"));
}

// W11: a column of nan is not "not numeric", and the suggestion is never the column itself.
TEST(PlotPoints, AllNanAndTextColumnsSayWhatIsWrong) {
  CsvTable t = parse_csv(
      "tag,status,device,mfu,train_tokens_per_second,note\na,ok,cpu,nan,5,x\nb,ok,cpu,inf,6,y\n",
      "t.csv");
  PlotSpec spec;
  spec.x = "tag";
  size_t left_out = 0;
  spec.metrics = {"mfu"};
  Error e = testing::error_of([&] { plot_points(t, spec, &left_out); });
  EXPECT_THAT(e.message(), HasSubstr("every value is nan or inf"));
  spec.metrics = {"note"};
  e = testing::error_of([&] { plot_points(t, spec, &left_out); });
  EXPECT_THAT(e.message(), HasSubstr("is not a numeric column"));
  EXPECT_EQ(e.hint(), "choose a column of numbers, such as train_tokens_per_second");
  t = parse_csv("tag,status,device,train_tokens_per_second\na,ok,cpu,fast\n", "t.csv");
  spec.metrics = {"train_tokens_per_second"};
  e = testing::error_of([&] { plot_points(t, spec, &left_out); });
  EXPECT_EQ(e.hint(), "choose a column of numbers");
}

TEST(PlotPoints, TwoMetricsSideBySide) {
  PlotSpec spec;
  spec.metrics = {"tps", "eval"};
  spec.x = "mb";
  size_t left_out = 0;
  std::vector<PlotPoint> p = plot_points(results(), spec, &left_out);
  EXPECT_EQ(left_out, 2u);  // the oom row, and the repeat without an eval value
  ASSERT_EQ(p.size(), 4u);  // the first metric's points, then the second's
  EXPECT_EQ(p[0].metric, "tps");
  EXPECT_EQ(p[0].count, 3u);  // mb=2: 100, 120, 180
  EXPECT_DOUBLE_EQ(p[0].mean, 400.0 / 3);
  EXPECT_EQ(p[2].metric, "eval");
  EXPECT_EQ(p[2].x, "2");
  EXPECT_EQ(p[2].count, 2u);  // 300 and 360: a missing value is not a zero
  EXPECT_DOUBLE_EQ(p[2].mean, 330);
  EXPECT_EQ(p[3].x, "4");
  EXPECT_DOUBLE_EQ(p[3].mean, 500);

  spec.output = "/o/f.png";
  spec.hue = "ranks";
  std::string data;
  std::string s = gnuplot_script(plot_points(results(), spec, &left_out), spec, "/o/d", &data);
  EXPECT_THAT(s, HasSubstr("using 2:3:xtic(1) title 'tps, ranks=1'"));
  EXPECT_THAT(s, HasSubstr("using 8:9 title 'eval, ranks=2'\n"));
  EXPECT_THAT(s, HasSubstr("set ylabel 'tps, eval'"));
  EXPECT_EQ(data.substr(0, data.find('\n')),
            "# x\ttps:1_mean\tstd\ttps:2_mean\tstd\teval:1_mean\tstd\teval:2_mean\tstd");

  spec.metrics = {"tps", "status"};
  Error e = testing::error_of([&] { plot_points(results(), spec, &left_out); });
  EXPECT_EQ(e.mark().str(), "--metric status");
  EXPECT_THAT(e.message(), HasSubstr("is not a numeric column"));
}

TEST(PlotKinds, AreRegisteredByName) {
  EXPECT_EQ(plot_kind_names(), (std::vector<std::string>{"bar", "line", "scaling"}));
}

}  // namespace
}  // namespace sweepbench

namespace sweepbench {
namespace {

// bench-infer's per-token table has a row per token position: past 16 x values gnuplot chooses
// the tics, as a tic per value would overlap.
TEST(GnuplotScript, ManyXValuesGetGnuplotsOwnTics) {
  std::string csv = "tag,status,position,token_seconds_mean\n";
  for (int p = 0; p < 40; ++p)
    csv += "a,ok," + std::to_string(p) + "," + std::to_string(p + 1) + "\n";
  PlotSpec spec;
  spec.kind = "line";
  spec.metrics = {"token_seconds_mean"};
  spec.x = "position";
  spec.output = "/o/t.png";
  size_t left_out = 0;
  std::string data;
  std::string s =
      gnuplot_script(plot_points(parse_csv(csv, "t.csv"), spec, &left_out), spec, "/o/d", &data);
  EXPECT_THAT(s, ::testing::Not(HasSubstr("set xtics (")));
  EXPECT_THAT(s, HasSubstr("with yerrorlines"));
  EXPECT_EQ(std::count(data.begin(), data.end(), '\n'), 41);  // header + 40 positions
}

}  // namespace
}  // namespace sweepbench
