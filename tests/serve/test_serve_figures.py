#!/usr/bin/python3
"""Figures and comparisons of serve points, end to end: a small sweep of real serve points
(`bench-sweep run` starting the stand-in OpenAI-compatible server, tests/support/openai_standin.py)
read back by bench-extract (one row per point, and --series levels), drawn by bench-plot and
compared by bench-compare, with the commands docs/serving.md ("Figures and comparisons") gives.

Two configurations (the stand-in's --delay between chunks: 2 ms and 10 ms, answering one request
at a time so that latency grows with the load) x three request rates, three repeats each.

Run by ctest (tests/CMakeLists.txt):
    SWEEPBENCH_BIN_DIR=build/notrain/bin /usr/bin/python3 tests/serve/test_serve_figures.py Figures
"""
import csv
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BIN, SOURCE, bench_sweep, run_tool  # noqa: E402

STANDIN = os.path.join(SOURCE, "tests", "support", "openai_standin.py")
EXTRACT = os.path.join(BIN, "bench-extract")
PLOT = os.path.join(BIN, "bench-plot")
COMPARE = os.path.join(BIN, "bench-compare")

SWEEP = """name: figures
repeats: 3
base:
  benchmark: serve
  params: {{delay: 0.002}}
  serve:
    argv: {argv}
    prompts: {{input_tokens: 16, output_tokens: 8}}
    load: {{mode: poisson, levels: [5, 10, 20], requests: 10, warmup_requests: 1}}
    sla: {{ttft_ms: 200, tpot_ms: 15, attainment: 0.8}}
  metrics: {{sample_interval_ms: 0, system: false}}
axes:
  params.delay: [0.002, 0.01]
"""


def rows_of(text):
    return list(csv.DictReader(io.StringIO(text)))


def read_rows(path):
    with open(path) as f:
        return rows_of(f.read())


class Figures(unittest.TestCase):
    """Throughput against interactivity per configuration, latency percentiles and goodput
    against the rate, the Pareto front of serve points and bench-compare between
    configurations, each from the documented command."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="serve-figures-")
        argv = ["/usr/bin/python3", STANDIN, "--port", "{port}", "--serial", "--chunks", "8",
                "--delay", "{params.delay}", "--first-delay", "0.01"]
        path = os.path.join(cls.tmp, "figures.yaml")
        with open(path, "w") as f:
            f.write(SWEEP.format(argv=yaml.safe_dump(argv, default_flow_style=True).strip()))
        cls.out = os.path.join(cls.tmp, "runs")
        r = bench_sweep("run", path, "-o", cls.out, check=0, timeout=300)
        cls.run_log = r.stdout + r.stderr
        cls.points_csv = os.path.join(cls.tmp, "points.csv")
        cls.levels_csv = os.path.join(cls.tmp, "levels.csv")
        run_tool(EXTRACT, "-i", cls.out, "-o", cls.points_csv)
        run_tool(EXTRACT, "-i", cls.out, "--series", "levels", "-o", cls.levels_csv)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def plot(self, name, *args):
        """bench-plot into TMP/NAME.svg with its script kept; (stderr, script, data rows)."""
        fig = os.path.join(self.tmp, name + ".svg")
        script = os.path.join(self.tmp, name + ".gp")
        r = run_tool(PLOT, "-o", fig, "--script", script, *args)
        with open(fig, "rb") as f:
            svg = f.read()
        self.assertTrue(ET.fromstring(svg).tag.endswith("svg"), name)
        self.assertIn(b"<path", svg)
        with open(script) as f:
            text = f.read()
        with open(script + ".dat") as f:
            data = f.read()
        return r.stderr, svg.decode(), text, data

    def test_tables(self):
        points = read_rows(self.points_csv)
        self.assertEqual(len(points), 6, self.run_log)
        self.assertTrue(all(p["status"] == "ok" for p in points), self.run_log)
        levels = read_rows(self.levels_csv)
        self.assertEqual(len(levels), 18)
        self.assertEqual(sorted({float(x["request_rate"]) for x in levels}), [5, 10, 20])
        # Each level's units come with it, for the figures' axes and the metrics' directions.
        units = yaml.safe_load(levels[0]["units"])
        self.assertEqual(units["ttft_p99_ms"], "ms")
        self.assertEqual(units["output_tokens_per_second"], "tokens/s")
        self.assertEqual(units["level"], "req/s")
        # The slower server is slower per token at every level.
        tpot = {}
        for x in levels:
            tpot.setdefault(x["params.delay"], []).append(float(x["tpot_p50_ms"]))
        self.assertGreater(min(tpot["0.01"]), max(tpot["0.002"]))

    def test_throughput_against_interactivity(self):
        said, svg, script, data = self.plot(
            "interactivity", "-i", self.levels_csv, "--kind", "line", "--x",
            "tokens_per_second_per_user", "--metric", "output_tokens_per_second", "--hue",
            "params.delay")
        self.assertIn("18 values of output_tokens_per_second by tokens_per_second_per_user and "
                      "params.delay, each the mean of 1 row", said)
        # One line per configuration, a point per level (and repeat), along x.
        self.assertIn("delay=0.002", svg)
        self.assertIn("delay=0.01", svg)
        self.assertEqual(script.count("with yerrorlines"), 2)
        self.assertIn("set xlabel 'tokens_per_second_per_user (tokens/s)'", script)
        self.assertIn("set ylabel 'output_tokens_per_second (tokens/s)'", script)
        # x is a measurement: gnuplot's own tics, not one per value.
        self.assertNotIn("set xtics (", script)
        xs = [float(line.split("\t")[0].strip('"')) for line in data.splitlines()[1:]]
        self.assertEqual(len(xs), 18)
        self.assertEqual(xs, sorted(xs))
        # --kind curve: one point per configuration and level, the mean of its repeats, the
        # lines joined in the order of the level.
        said, svg, script, data = self.plot(
            "curve", "-i", self.levels_csv, "--kind", "curve", "--metric",
            "output_tokens_per_second", "--hue", "params.delay")
        self.assertIn("6 points of output_tokens_per_second against tokens_per_second_per_user, "
                      "one line per params.delay, each the mean of 3 rows", said)
        self.assertIn("set xlabel 'tokens_per_second_per_user (tokens/s)'", script)
        self.assertEqual(script.count("with xyerrorbars"), 2)
        blocks = [[line.split("\t") for line in b.strip().splitlines() if not line.startswith("#")]
                  for b in data.split("\n\n\n")]
        self.assertEqual([[x[6] for x in b] for b in blocks],
                         [['"level=5"', '"level=10"', '"level=20"']] * 2)
        levels = read_rows(self.levels_csv)
        for block, delay in zip(blocks, ("0.002", "0.01")):
            for x, rate in zip(block, (5, 10, 20)):
                rows = [r for r in levels
                        if r["params.delay"] == delay and float(r["level"]) == rate]
                self.assertEqual(len(rows), 3)
                want = sum(float(r["output_tokens_per_second"]) for r in rows) / 3
                self.assertAlmostEqual(float(x[3]), want, delta=want * 1e-9)
        self.assertIn("delay=0.01", svg)
        # The Pareto front of each configuration's levels, labelled by level.
        said, svg, script, data = self.plot(
            "interactivity-front", "-i", self.levels_csv, "--kind", "pareto", "--x",
            "tokens_per_second_per_user", "--metric", "output_tokens_per_second", "--hue",
            "params.delay")
        # A configuration's repeats are one point of it, at their means, labelled once.
        self.assertIn("6 points (each the mean of 3 rows, with its 95% interval)", said)
        self.assertIn("(per params.delay)", said)
        labels = re.findall(r"\"level=(5|10|20)\"", data)
        self.assertEqual(sorted(labels), sorted(["5", "10", "20"] * 2), data)
        self.assertIn("error bars: 95% intervals", script)
        self.assertIn("delay=0.01", svg)

    def test_latency_percentiles_against_rate(self):
        said, svg, script, data = self.plot(
            "latency", "-i", self.levels_csv, "--kind", "line", "--x", "request_rate",
            "--metric", "ttft_p50_ms", "--metric", "ttft_p99_ms", "--hue", "params.delay")
        # Three repeats of each level: their mean, with its 95% interval as error bars.
        self.assertIn("12 values of ttft_p50_ms, ttft_p99_ms by request_rate and params.delay, "
                      "each the mean of 3 rows", said)
        self.assertIn("set ylabel 'ttft_p50_ms (ms), ttft_p99_ms (ms)'", script)
        self.assertIn("set xlabel 'request_rate (req/s)'", script)
        self.assertRegex(script, r"set xtics \(5(\.0)?, 10(\.0)?, 20(\.0)?\)")
        for legend in ("ttft_p50_ms, delay=0.002", "ttft_p99_ms, delay=0.01"):
            self.assertIn(legend, svg)
        lines = [line.split("\t") for line in data.splitlines()]
        header, body = lines[0], lines[1:]
        self.assertEqual([float(x[0].strip('"')) for x in body], [5, 10, 20])
        stds = [float(v) for row in body for v in row[2::2]]
        self.assertTrue(any(s > 0 for s in stds), data)  # the means' intervals, drawn
        # The slow server's p99 at the highest rate is above the fast one's.
        slow = header.index("ttft_p99_ms:0.01_mean")
        fast = header.index("ttft_p99_ms:0.002_mean")
        self.assertGreater(float(body[2][slow]), float(body[2][fast]))

    def test_goodput_against_rate(self):
        said, svg, script, data = self.plot(
            "goodput", "-i", self.levels_csv, "--kind", "line", "--x", "request_rate",
            "--metric", "goodput", "--hue", "params.delay")
        self.assertIn("6 values of goodput", said)
        self.assertIn("set ylabel 'goodput (req/s)'", script)
        self.assertIn("delay=0.002", svg)

    def test_pareto_front_of_serve_points(self):
        # Goodput up, TPOT down (metrics/summary.h): the front bench-extract finds is the rows
        # no other row beats in both (the rows have no intervals).
        front = rows_of(run_tool(EXTRACT, "-i", self.out, "--pareto", "goodput,tpot_p99_ms",
                                 "--format", "csv").stdout)
        rows = [r for r in read_rows(self.points_csv) if r["goodput"] and r["tpot_p99_ms"]]

        def beats(a, b):
            ga, gb = float(a["goodput"]), float(b["goodput"])
            ta, tb = float(a["tpot_p99_ms"]), float(b["tpot_p99_ms"])
            return ga >= gb and ta <= tb and (ga > gb or ta < tb)
        expected = sorted(r["tag"] for r in rows if not any(beats(o, r) for o in rows))
        self.assertEqual(sorted(r["tag"] for r in front), expected)
        self.assertTrue(expected)
        said, svg, script, data = self.plot(
            "front", "-i", self.points_csv, "--kind", "pareto", "--metric", "goodput", "--x",
            "tpot_p99_ms")
        # Its points are the configurations (each the means of its 3 repeats), and its front is
        # bench-extract's over the grouped repeats: one function, the same intervals.
        grouped = rows_of(run_tool(EXTRACT, "-i", self.out, "--group-repeats", "--pareto",
                                   "goodput,tpot_p99_ms", "--format", "csv").stdout)
        self.assertIn(f"2 points (each the mean of 3 rows, with its 95% interval), "
                      f"{len(grouped)} on the front of goodput against tpot_p99_ms", said)
        self.assertIn("set xlabel 'tpot_p99_ms (ms)'", script)

    def test_compare_configurations_level_by_level(self):
        # Each level of the slow configuration against the same level of the fast one: the
        # levels table is matched on the level, the repeats are the samples.
        cmp_csv = os.path.join(self.tmp, "cmp.csv")
        r = run_tool(COMPARE, self.levels_csv, "--side", "params.delay", "--format", "csv",
                     "-o", cmp_csv)
        rows = read_rows(cmp_csv)
        points = sorted({x["point"] for x in rows if x["point"] != "geomean"})
        self.assertEqual(points, ["level=10", "level=20", "level=5"], r.stderr)
        metrics = {x["metric"] for x in rows}
        self.assertEqual(metrics, {"output_tokens_per_second", "ttft_p50_ms", "tpot_p50_ms",
                                   "goodput"})
        # One metric (3 comparisons: 98.3% intervals, not 12's 99.6%): 10 ms between tokens
        # against 2 is worse at every level, whatever a busy machine adds to a repeat.
        tpot = rows_of(run_tool(COMPARE, self.levels_csv, "--side", "params.delay", "--metric",
                                "tpot_p50_ms", "--format", "csv").stdout)
        tpot = [x for x in tpot if x["point"] != "geomean"]
        self.assertEqual(len(tpot), 3)
        for x in tpot:
            self.assertEqual(x["verdict"], "worse", x)
            self.assertEqual((x["baseline_n"], x["candidate_n"]), ("3", "3"))
        said, svg, script, data = self.plot("changes", "-i", cmp_csv, "--kind", "change")
        self.assertTrue("tpot_p50_ms" in svg, "no tpot_p50_ms in the legend")
        # The points' own rows: their headline levels, the server's start time not a metric.
        r = run_tool(COMPARE, self.out, "--side", "params.delay", "--format", "csv")
        self.assertNotIn("seconds", {x["metric"] for x in rows_of(r.stdout)})
        self.assertIn("output_tokens_per_second", {x["metric"] for x in rows_of(r.stdout)})
        # Where the SLA's answers differ, the rows are of different loads, and it says so.
        headline = {}
        for x in read_rows(self.points_csv):
            if x["status"] == "ok":
                headline.setdefault(x["params.delay"], set()).add(x["request_rate"])
        said = "the headline request_rate differs"
        if headline["0.002"] != headline["0.01"]:
            self.assertIn(said, r.stderr)
            self.assertIn("compare level by level", r.stderr)
        else:
            self.assertNotIn(said, r.stderr)


if __name__ == "__main__":
    unittest.main()
