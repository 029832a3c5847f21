// bench-plot's pieces without gnuplot: reading CSV, grouping repeats, and the script's shape.
#include "postprocess/plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "support/expect_error.h"
#include "text/error.h"

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

TEST(PlotPoints, MeanAndItsIntervalOverRepeatsOnlyOkRows) {
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
  // The mean's 95% interval over the two repeats, as bench-extract --group-repeats gives it:
  // Student's t with 1 degree of freedom times the standard error (14.14 / sqrt(2) = 10).
  EXPECT_NEAR(p[0].std, 12.706204736174707 * 10, 1e-6);
  EXPECT_EQ(p[2].hue, "2");
  spec.x = "nope";
  Error e = testing::error_of([&] { plot_points(results(), spec, &left_out); });
  EXPECT_THAT(e.hint(), HasSubstr("the columns are: tag, status, mb, ranks, tps, eval"));
}

TEST(PlotPoints, OneRunsIntervalAsItsErrorAndWhatItsMeasurementSays) {
  // One run a point: its 95% interval's half-width is its error bar; a point whose CPUs others
  // took (cpu_shared above 10%) or that missed its target says so above it.
  CsvTable t = parse_csv(
      "status,mb,train_tokens_per_second,train_tokens_per_second_ci_low,"
      "train_tokens_per_second_ci_high,cpu_shared,target_met\n"
      "ok,2,100,90,110,0.02,true\n"
      "ok,4,200,150,250,0.35,false\n"
      "ok,8,300,,,0.5,\n",
      "r.csv");
  PlotSpec spec;
  spec.metrics = {"train_tokens_per_second"};
  spec.x = "mb";
  spec.output = "/o/f.png";
  size_t left_out = 0;
  std::vector<PlotPoint> p = plot_points(t, spec, &left_out);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p[0].std, 10);
  EXPECT_EQ(p[0].note, "");
  EXPECT_DOUBLE_EQ(p[1].std, 50);
  EXPECT_EQ(p[1].note, "imprecise, shared");
  EXPECT_DOUBLE_EQ(p[2].std, 0);  // no interval: the spread of its one value
  EXPECT_EQ(p[2].note, "shared");
  std::string data;
  std::string s = gnuplot_script(p, spec, "/o/d", &data);
  // Above the bar and its error, the y axis making room; bar k of one series at cluster i.
  EXPECT_THAT(s, HasSubstr("set label 'imprecise, shared' at 1.0, 250.0 rotate by 90"));
  EXPECT_THAT(s, HasSubstr("set label 'shared' at 2.0, 300.0 rotate by 90"));
  EXPECT_THAT(s, HasSubstr("set yrange [0:435.0]"));
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
            "# x\t1_mean\tci95\t2_mean\tci95\n"
            "\"2\"\t110.0\t127.06204736174695\t180.0\t0.0\n"
            "\"4\"\t200.0\t0.0\tNaN\tNaN\n");
  // The figure says what its error bars are.
  EXPECT_THAT(s, HasSubstr("set label 'error bars: 95% intervals of the mean' at screen 0.01, "
                           "screen 0.02 font ',8' noenhanced\n"));
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

// Inside double quotes gnuplot runs `backquoted` commands. Every text reaches the
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
  // A quote ends a single-quoted string and comes as "'" (a text that begins with one is
  // where gnuplot's doubled quote fails).
  EXPECT_THAT(s, HasSubstr("set title 'T `a` \" \\ ' . \"'\" . ' system(\"b\") plot' noenhanced\n"));
  EXPECT_THAT(s, HasSubstr("set output '/o/`c`' . \"'\" . '.png'\n"));
  EXPECT_THAT(s, HasSubstr("'/o/d' . \"'\" . '' using 2:3:xtic(1) title 'who=`touch x` $(touch y) "
                           "it' . \"'\" . 's z'"));
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
            "# x\ttps:1_mean\tci95\ttps:2_mean\tci95\teval:1_mean\tci95\teval:2_mean\tci95");

  spec.metrics = {"tps", "status"};
  Error e = testing::error_of([&] { plot_points(results(), spec, &left_out); });
  EXPECT_EQ(e.mark().str(), "--metric status");
  EXPECT_THAT(e.message(), HasSubstr("is not a numeric column"));
}

// Issue 55, Deliver 2: metrics of other units share no axis (1 ms bars beside 57,000 samples/s
// are invisible); a unit nothing says is not refused.
TEST(DescribeFigure, MetricsOfOtherUnitsAreRefusedWithTheirUnits) {
  CsvTable t = parse_csv(
      "tag,status,train.micro_batch,train_samples_per_second,step_time_mean_s,eval_samples_per_"
      "second,loss,units\n"
      "a,ok,1,57000,0.001,50000,2.5,\"{lat: ms}\"\n",
      "t.csv");
  PlotSpec spec;
  spec.x = "train.micro_batch";
  spec.metrics = {"train_samples_per_second", "step_time_mean_s"};
  Error e = testing::error_of([&] { describe_figure(t, &spec); });
  EXPECT_EQ(e.mark().str(), "--metric train_samples_per_second,step_time_mean_s");
  EXPECT_EQ(e.message(),
            "train_samples_per_second is in samples/s and step_time_mean_s in seconds: one axis "
            "shows one unit");
  EXPECT_THAT(e.hint(), HasSubstr("figures of their own"));
  spec.metrics = {"train_samples_per_second", "eval_samples_per_second", "loss"};
  describe_figure(t, &spec);
  EXPECT_EQ(spec.units.at("eval_samples_per_second").first, "samples/s");
}

TEST(PlotKinds, AreRegisteredByName) {
  EXPECT_EQ(plot_kind_names(),
            (std::vector<std::string>{"bar", "line", "scaling", "pareto", "curve", "change"}));
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

namespace sweepbench {
namespace {

// What a person reads in a figure.
CsvTable token_series() {
  return parse_csv(
      "tag,status,infer.batch_size,infer.kv_cache,eval.micro_batch,started,device_name,position,"
      "token_seconds_mean\n"
      "s1,ok,1,static,1,2026-11-26T10:00:00Z,AMD EPYC,0,0.0002\n"
      "s1,ok,1,static,1,2026-11-26T10:00:00Z,AMD EPYC,1,0.00006\n"
      "d4,ok,4,dynamic,4,2026-11-27T09:00:00Z,AMD EPYC,0,0.0004\n"
      "d4,ok,4,dynamic,4,2026-11-27T09:00:00Z,AMD EPYC,1,0.00013\n"
      "s4,ok,4,static,4,2026-11-27T09:00:00Z,AMD EPYC,0,0.0003\n"
      "s4,ok,4,static,4,2026-11-27T09:00:00Z,AMD EPYC,1,0.0001\n",
      "t.csv");
}

TEST(DescribeFigure, LegendsFromTheKeysThatVaryUnitsScaledAndWhereAndWhen) {
  PlotSpec spec;
  spec.metrics = {"token_seconds_mean"};
  spec.x = "position";
  spec.hue = "tag";
  spec.kind = "line";
  spec.output = "/o/t.png";
  describe_figure(token_series(), &spec);
  // eval.micro_batch varies exactly as infer.batch_size: it says nothing more.
  EXPECT_THAT(spec.varying, ElementsAre("infer.batch_size", "infer.kv_cache"));
  EXPECT_EQ(spec.hue_labels["s1"], "batch_size=1, kv_cache=static");
  EXPECT_EQ(spec.units["token_seconds_mean"], std::make_pair(std::string("µs"), 1e6));
  EXPECT_EQ(spec.where, "AMD EPYC, 2026-11-26 to 2026-11-27");
  size_t left_out = 0;
  std::string data;
  std::string s = gnuplot_script(plot_points(token_series(), spec, &left_out), spec, "/o/d", &data);
  EXPECT_THAT(s, HasSubstr("title 'batch_size=1, kv_cache=static'"));
  EXPECT_THAT(s, HasSubstr("set ylabel 'token_seconds_mean (µs)'"));
  EXPECT_THAT(s, HasSubstr(" . \"\\n\" . 'AMD EPYC, 2026-11-26 to 2026-11-27' noenhanced"));
  EXPECT_THAT(s, HasSubstr("set autoscale xfix"));  // the x axis starts where the data do
  EXPECT_THAT(data, HasSubstr("\"0\"\t200.0\t"));  // 0.0002 s as 200 µs
}

TEST(DescribeFigure, RowsThatDifferInASweptKeyAreNotAveraged) {
  PlotSpec spec;
  spec.metrics = {"token_seconds_mean"};
  spec.x = "position";
  spec.output = "/o/t.png";
  describe_figure(token_series(), &spec);
  size_t left_out = 0;
  Error e = testing::error_of([&] { plot_points(token_series(), spec, &left_out); });
  EXPECT_EQ(std::string(e.what()),
            "--x position: the rows with position=0 differ in infer.batch_size (1 and 4): "
            "their mean would mix configurations (add --hue infer.batch_size, or plot the rows "
            "of one infer.batch_size at a time)");
  spec.hue = "infer.batch_size";
  describe_figure(token_series(), &spec);
  Error mixed = testing::error_of([&] { plot_points(token_series(), spec, &left_out); });
  EXPECT_THAT(std::string(mixed.what()), HasSubstr("differ in infer.kv_cache (dynamic and static)"));
  spec.x = "infer.kv_cache";
  spec.metrics = {"token_seconds_mean"};
  describe_figure(token_series(), &spec);
  // Rows that differ only in what is not swept (the token position) are averaged.
  EXPECT_EQ(plot_points(token_series(), spec, &left_out).size(), 3u);
  EXPECT_EQ(spec.hue_labels["4"], "batch_size=4");
}

}  // namespace
}  // namespace sweepbench

namespace sweepbench {
namespace {

TEST(ParetoFigure, TheFrontNeedsBetterBeyondTheIntervalsAndLabelsTheConfiguration) {
  // b beats a in both metrics; c has more throughput than b but within b's interval and more
  // memory, so it stays; d is not ok.
  CsvTable t = parse_csv(
      "tag,status,train.micro_batch,tps,tps_ci_low,tps_ci_high,mem_peak_bytes\n"
      "a,ok,1,100,95,105,2000\n"
      "b,ok,2,200,190,210,1000\n"
      "c,ok,4,205,195,215,3000\n"
      "d,oom,8,,,,\n",
      "t.csv");
  PlotSpec spec;
  spec.kind = "pareto";
  spec.metrics = {"tps"};
  spec.x = "mem_peak_bytes";
  spec.output = "/o/f.svg";
  TableFigure f = pareto_figure(t, spec, "/o/d");
  EXPECT_EQ(f.said, "3 points, 2 on the front of tps against mem_peak_bytes, 1 row left out (not "
                    "ok or no value)");
  // Blocks: the dominated (a), then the front (b, c) in the order of memory.
  std::vector<std::string> blocks;
  for (size_t at = 0, next; at != std::string::npos; at = next == std::string::npos ? next : next + 3) {
    next = f.data.find("\n\n\n", at);
    blocks.push_back(f.data.substr(at, next == std::string::npos ? next : next - at + 1));
  }
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_THAT(blocks[0], HasSubstr("\t100.0\t95.0\t105.0\t\"micro_batch=1\"\n"));
  EXPECT_THAT(blocks[1], HasSubstr("\"micro_batch=2\"\n"));
  EXPECT_LT(blocks[1].find("micro_batch=2"), blocks[1].find("micro_batch=4"));
  EXPECT_THAT(f.script, HasSubstr("index 0 using 1:4:2:3:5:6 with xyerrorbars pt 6"));
  EXPECT_THAT(f.script, HasSubstr("index 1 using 1:4 with lines"));
  EXPECT_THAT(f.script, HasSubstr("set xlabel 'mem_peak_bytes (KiB)'"));
  spec.metrics = {"tps", "mem_peak_bytes"};
  EXPECT_THAT(testing::error_of([&] { pareto_figure(t, spec, "/o/d"); }).what(),
              HasSubstr("a pareto figure has one metric on each axis"));
}

// Issue 55, Deliver 2: a configuration's repeats are one labelled point of the front (their
// means, each with its 95% interval), not a point each with its label on top of the others'.
TEST(ParetoFigure, RepeatsAreOnePointWithTheIntervalOfTheirMeans) {
  CsvTable t = parse_csv(
      "tag,status,repeat,train.micro_batch,tps,mem_peak_bytes\n"
      "a.r0,ok,0,1,100,2000\n"
      "a.r1,ok,1,1,110,2000\n"
      "b.r0,ok,0,2,200,1000\n"
      "b.r1,ok,1,2,220,1000\n"
      "b.r2,failed,2,2,,\n",
      "t.csv");
  PlotSpec spec;
  spec.kind = "pareto";
  spec.metrics = {"tps"};
  spec.x = "mem_peak_bytes";
  spec.output = "/o/f.svg";
  TableFigure f = pareto_figure(t, spec, "/o/d");
  EXPECT_EQ(f.said,
            "2 points (each the mean of 2 rows, with its 95% interval), 1 on the front of tps "
            "against mem_peak_bytes, 1 row left out (not ok or no value)");
  // b's mean 210 ± 12.7062 x 10 (Student's t at 2 rows: s = 14.142, s / sqrt(2) = 10).
  EXPECT_EQ(std::count(f.data.begin(), f.data.end(), '\n'), 1 + 1 + 2 + 1);
  EXPECT_THAT(f.data, HasSubstr("\t105.0\t"));
  EXPECT_THAT(
      f.data,
      HasSubstr("0.9765625\t0.9765625\t0.9765625\t210.0\t82.93795263825305\t337.062047361747"));
  EXPECT_EQ(std::count(f.data.begin(), f.data.end(), '"') / 2, 2);  // one label a configuration
  EXPECT_THAT(f.script, HasSubstr("error bars: 95% intervals"));
  // A table without keys that vary and without repeats: each row is a point of its own.
  CsvTable plain = parse_csv("name,tps,mem_peak_bytes\nx,1,2\ny,3,1\n", "p.csv");
  EXPECT_THAT(pareto_figure(plain, spec, "/o/d").said, ::testing::StartsWith("2 points, "));
}

// A serve sweep's levels table (bench-extract --series levels): two configurations, two levels,
// two repeats of the first configuration; one level of the second that failed.
CsvTable serve_levels() {
  return parse_csv(
      "tag,status,repeat,params.tp,level_index,level,tpu,tps,units\n"
      "a.r0,ok,0,1,0,4,300.5,40,\"{tpu: tokens/s, tps: tokens/s, level: req/s}\"\n"
      "a.r0,ok,0,1,1,2,320.5,20,\"{tpu: tokens/s, tps: tokens/s, level: req/s}\"\n"
      "a.r1,ok,1,1,0,4,310.5,44,\"{tpu: tokens/s, tps: tokens/s, level: req/s}\"\n"
      "a.r1,ok,1,1,1,2,330.5,22,\"{tpu: tokens/s, tps: tokens/s, level: req/s}\"\n"
      "b.r0,ok,0,2,0,2,500.5,30,\"{tpu: tokens/s, tps: tokens/s, level: req/s}\"\n"
      "b.r0,ok,0,2,1,4,,,\"{tpu: tokens/s, tps: tokens/s, level: req/s}\"\n",
      "levels.csv");
}

TEST(CurveFigure, OneLinePerHueThroughEachLevelsMeanInTheOrderOfTheLevel) {
  CsvTable t = serve_levels();
  PlotSpec spec;
  spec.kind = "curve";
  spec.metrics = {"tps"};
  spec.x = "tpu";
  spec.hue = "params.tp";
  spec.output = "/o/f.svg";
  TableFigure f = curve_figure(t, spec, "/o/d");
  EXPECT_EQ(f.said,
            "3 points of tps against tpu, one line per params.tp, each the mean of 1 to 2 "
            "rows, 1 row left out (not ok or no value)");
  // tp=1: level 2 (the mean of 320.5 and 330.5, 20 and 22) before level 4, measured first. The
  // error bars are the means' 95% intervals, as --group-repeats gives them (Student's t at 2
  // rows: mean ± 12.7062 s / sqrt(2), so 325.5 ± 63.531 and 21 ± 12.706), not the spread.
  EXPECT_EQ(f.data,
            "# x\tx_low\tx_high\ty\ty_low\ty_high\tlabel\n"
            "325.5\t261.9689763191265\t389.0310236808735\t21.0\t8.293795263825306\t"
            "33.7062047361747\t\"level=2\"\n"
            "305.5\t241.9689763191265\t369.0310236808735\t42.0\t16.58759052765061\t"
            "67.4124094723494\t\"level=4\"\n"
            "\n\n"
            "500.5\t500.5\t500.5\t30.0\t30.0\t30.0\t\"level=2\"\n");
  EXPECT_THAT(f.script, HasSubstr("set xlabel 'tpu (tokens/s)'"));
  EXPECT_THAT(f.script, HasSubstr("set label \"error bars: 95% intervals\""));
  EXPECT_THAT(f.script, HasSubstr("index 1 using 1:4:2:3:5:6 with xyerrorbars pt 7 ps 1.1 lc rgb "
                                  "'#d62728' title 'tp=2'"));
  spec.metrics = {"tps", "tpu"};
  EXPECT_THAT(testing::error_of([&] { curve_figure(t, spec, "/o/d"); }).what(),
              HasSubstr("a curve has one metric on each axis"));
}

TEST(GnuplotScript, AMeasuredXHasItsUnitAndGnuplotsTics) {
  CsvTable t = serve_levels();
  PlotSpec spec;
  spec.kind = "line";
  spec.metrics = {"tps"};
  spec.x = "tpu";
  spec.hue = "params.tp";
  spec.output = "/o/f.svg";
  describe_figure(t, &spec);
  EXPECT_EQ(spec.x_unit, "tokens/s");
  size_t left_out = 0;
  std::string data;
  std::string s = gnuplot_script(plot_points(t, spec, &left_out), spec, "/o/d", &data);
  EXPECT_THAT(s, HasSubstr("set xlabel 'tpu (tokens/s)'"));
  EXPECT_THAT(s, ::testing::Not(HasSubstr("set xtics (")));
  // A level is whole, and has its tics; a config key has no unit.
  spec.x = "level";
  spec.x_unit.clear();
  describe_figure(t, &spec);
  s = gnuplot_script(plot_points(t, spec, &left_out), spec, "/o/d", &data);
  EXPECT_THAT(s, HasSubstr("set xlabel 'level (req/s)'"));
  EXPECT_THAT(s, HasSubstr("set xtics (2.0, 4.0)"));
}

TEST(ChangeFigure, VerdictsColourThePointsAndTextIsQuoted) {
  CsvTable t = parse_csv(
      "point,metric,change,change_ci_low,change_ci_high,verdict\n"
      "\"it's `x`\",seconds,0.2,0.1,0.3,worse\n"
      "b,seconds,-0.01,-0.02,0.0,~\n"
      "geomean,seconds,0.09,,,\n",
      "c.csv");
  PlotSpec spec;
  spec.kind = "change";
  spec.output = "/o/c.svg";
  TableFigure f = change_figure(t, spec, "/o/d");
  EXPECT_EQ(f.said, "2 changes of seconds over 2 points and the geomean");
  EXPECT_THAT(f.script, HasSubstr("set xtics ('it' . \"'\" . 's `x`' 0, 'b' 1, 'geomean' 2)"));
  EXPECT_THAT(f.script, HasSubstr("title 'worse'"));
  EXPECT_THAT(f.script, HasSubstr("title '~'"));
  EXPECT_THAT(f.data, HasSubstr("0.0\t20.0\t10.0\t30.0\n"));
  EXPECT_THAT(f.data, HasSubstr("2.0\t9.0\t9.0\t9.0\n"));  // the geomean, without an interval
  EXPECT_THAT(testing::error_of([&] {
                change_figure(parse_csv("point,metric,change\n", "e.csv"), spec, "/o/d");
              }).what(),
              HasSubstr("nothing to plot"));
  EXPECT_THAT(f.script, ::testing::Not(HasSubstr("set yrange")));
}

TEST(ChangeFigure, AnIntervalFarWiderThanTheChangesIsCutAtTheAxis) {
  // Three noisy repeats of a serve level's p99: +3000% at most, while the changes are 20% and 5%;
  // the axis stops at four times the largest change (80%), and -100% is no lower than -80%.
  CsvTable t = parse_csv(
      "point,metric,change,change_ci_low,change_ci_high,verdict\n"
      "level=5,ttft_p99_ms,0.2,-1.0,30.0,inconclusive\n"
      "level=10,ttft_p99_ms,0.05,0.01,0.09,worse\n",
      "c.csv");
  PlotSpec spec;
  spec.kind = "change";
  spec.output = "/o/c.svg";
  TableFigure f = change_figure(t, spec, "/o/d");
  EXPECT_THAT(f.script, HasSubstr("set yrange [-80.0:80.0]\n"));
  EXPECT_THAT(f.script, HasSubstr("set label 'intervals cut at the axis'"));
  EXPECT_THAT(f.data, HasSubstr("\t20.0\t-100.0\t3000.0\n"));  // the data keep them whole
}

}  // namespace
}  // namespace sweepbench

namespace sweepbench {
namespace {

// Every text of the two whole-table figures (point names, metrics, labels, the title, paths)
// reaches gnuplot single-quoted on one line, and the data file without a tab, line break, NUL
// or double quote of its own.
TEST(TableFigures, HostileTextIsQuotedNotRun) {
  std::string hostile = "a$(touch /tmp/p)`id`,b:c\"d";
  std::string csv =
      "point,metric,change,change_ci_low,change_ci_high,verdict\n"
      "\"" + std::string("a$(touch /tmp/p)`id`,b:c\"\"d\nx") + "\",\"m,1:2\",0.1,0.0,0.2,worse\n";
  csv.insert(csv.find("\nx"), 1, '\0');
  CsvTable t = parse_csv(csv, "c.csv");
  PlotSpec spec;
  spec.kind = "change";
  spec.output = "/o/$(x)`y`.svg";
  spec.title = "t\n$(z)";
  TableFigure f = change_figure(t, spec, "/o/d'$(w)");
  EXPECT_EQ(f.script.find('\0'), std::string::npos);
  EXPECT_EQ(f.script.find("\"`"), std::string::npos);
  EXPECT_EQ(f.script.find("\"$("), std::string::npos);
  EXPECT_THAT(f.script, HasSubstr("'a$(touch /tmp/p)`id`,b:c\"d x' 0"));
  EXPECT_THAT(f.script, HasSubstr("the changes of m,1:2. Edit"));  // the comment line
  EXPECT_THAT(f.script, HasSubstr("set title 't $(z)' noenhanced"));
  EXPECT_THAT(f.script, HasSubstr("'/o/d' . \"'\" . '$(w)' index 0"));
  // Every line of the script is a whole command: no text broke one.
  for (size_t at = 0, next; at < f.script.size(); at = next + 1) {
    next = f.script.find('\n', at);
    std::string line = f.script.substr(at, next - at);
    // A quote inside a text comes as "'" between two single-quoted strings.
    for (size_t q; (q = line.find("\"'\"")) != std::string::npos;) line.erase(q, 3);
    EXPECT_EQ(std::count(line.begin(), line.end(), '\'') % 2, 0) << line;
  }

  // The pareto figure's labels (a config value) go to the data file as one quoted field.
  CsvTable p = parse_csv(
      "tag,status,params.who,tps,mem_peak_bytes\n"
      "a,ok,\"x\ty\"\"$(z)`w`,1:2\",100,1000\n"
      "b,ok,plain,50,2000\n",
      "p.csv");
  PlotSpec ps;
  ps.kind = "pareto";
  ps.metrics = {"tps"};
  ps.x = "mem_peak_bytes";
  ps.output = "/o/p.svg";
  TableFigure pf = pareto_figure(p, ps, "/o/d");
  EXPECT_THAT(pf.data, HasSubstr("\t\"who=x y'$(z)`w`,1:2\"\n"));
  EXPECT_EQ(pf.data.find('\0'), std::string::npos);
}

}  // namespace
}  // namespace sweepbench
