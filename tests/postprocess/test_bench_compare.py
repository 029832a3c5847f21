"""bench-compare on results that real runs made: command points that sleep a known time, six
repeats each, run by bench-sweep. The same sleep twice must be called the same (~), a sleep 20%
longer worse, and --fail-on must turn that into its exit code. Read back as CSV with pandas.

    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/postprocess/test_bench_compare.py -v
"""
import io
import os
import subprocess
import sys
import tempfile
import unittest

import h5py
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BIN, bench_sweep, run_tool  # noqa: E402

BENCH_COMPARE = os.path.join(BIN, "bench-compare")
BENCH_EXTRACT = os.path.join(BIN, "bench-extract")
BENCH_PLOT = os.path.join(BIN, "bench-plot")

SWEEP = """\
name: sleep-%(name)s
repeats: %(repeats)d
base:
  benchmark: command
  command: {argv: [sleep, "%(seconds)s"]}
axes:
  params.size: [1, 2]
"""


TRAIN = """\
name: train-%(name)s
base:
  model: {preset: gpt2-tiny, n_layer: %(layers)d}
  data: {source: synthetic, seq_len: 128}
  train: {steps: 82, warmup_steps: 2, micro_batch: 4}
  eval: {steps: 0}
  metrics: {sample_interval_ms: 0, system: false}
  # One thread: on CI's two cores the other lane's test runs beside it, and two spinning threads
  # beside a neighbour that starts after the run chose them made one side's steps so uneven
  # that a difference of four came out inconclusive (2026-11-29).
  launch: {cpus_per_rank: 1}
"""


def compare(*args, check=0):
    return run_tool(BENCH_COMPARE, *args, check=check)


class Compare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tmp = cls._tmp.name
        cls.trees = {}
        for name, seconds, repeats in (("base", "0.3", 6), ("again", "0.3", 6),
                                       ("slower", "0.36", 6), ("once", "0.3", 1)):
            path = os.path.join(cls.tmp, name + ".yaml")
            with open(path, "w") as f:
                f.write(SWEEP % {"name": name, "seconds": seconds, "repeats": repeats})
            cls.trees[name] = os.path.join(cls.tmp, name)
        # The sides alternate, point by point (bench-sweep run --only), as a fair comparison
        # runs them: a machine that gets busier halfway slows both sides alike.
        for index in range(12):
            for name in ("base", "again", "slower"):
                bench_sweep("run", os.path.join(cls.tmp, name + ".yaml"), "--out",
                            cls.trees[name], "--only", str(index), check=0)
        bench_sweep("run", os.path.join(cls.tmp, "once.yaml"), "--out", cls.trees["once"], check=0)
        # One training run a side: gpt2-tiny, and the same with four times its blocks (steps of
        # milliseconds, not fractions of one, so that another process on the machine cannot
        # hide a difference of four).
        for name, layers in (("tiny", 2), ("deeper", 8)):
            path = os.path.join(cls.tmp, name + ".yaml")
            with open(path, "w") as f:
                f.write(TRAIN % {"name": name, "layers": layers})
            cls.trees[name] = os.path.join(cls.tmp, name)
            bench_sweep("run", path, "--out", cls.trees[name], check=0)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def csv(self, *args, check=0):
        return pd.read_csv(io.StringIO(compare(*args, "--format", "csv", check=check).stdout))

    def test_the_same_configuration_is_the_same(self):
        # A margin of 20%: a loaded machine's sleeps wander by tens of milliseconds, and the
        # interval at --alpha 0.001 is wide with 6 runs a side (at 10%, a clean-clone CI run of
        # 2026-11-30 called one of the two points inconclusive, its interval crossing the
        # margin). --alpha 0.001: equal sides may be called different up to 5% of the time at
        # the default level, by design (tests/metrics/significance_test.cc measures that), which
        # a test must not be; here the verdict is the margin's.
        df = self.csv(self.trees["base"], self.trees["again"], "--margin", "20%", "--alpha", "0.001")
        points = df[df["point"] != "geomean"]
        shown = points.to_string()
        self.assertEqual(sorted(points["point"]), ["size=1", "size=2"])
        self.assertEqual(list(points["metric"]), ["seconds", "seconds"])
        self.assertEqual(list(points["baseline_n"]), [6, 6])
        self.assertEqual(list(points["verdict"]), ["~", "~"], shown)
        for _, row in points.iterrows():
            self.assertLess(abs(row["change"]), 0.05, shown)
            self.assertGreaterEqual(row["change_ci_low"], -0.20, shown)
            self.assertLessEqual(row["change_ci_high"], 0.20, shown)
            self.assertGreaterEqual(row["p_adjusted"], row["p"])

    def test_a_slower_configuration_is_worse_and_fails_the_gate(self):
        df = self.csv(self.trees["base"], self.trees["slower"])
        points = df[df["point"] != "geomean"]
        self.assertEqual(list(points["verdict"]), ["worse", "worse"])
        for _, row in points.iterrows():
            self.assertAlmostEqual(row["change"], row["candidate_mean"] / row["baseline_mean"] - 1)
            # 0.36 s against 0.3 s of sleep, plus each run's start: about 15 to 20% more.
            self.assertGreater(row["change"], 0.10)
            self.assertLess(row["change"], 0.25)
            self.assertLess(row["change_ci_low"], row["change"])
            self.assertGreater(row["change_ci_high"], row["change"])
            self.assertLess(row["p"], 0.01)
            # Bonferroni over the family of two: p doubled, and the interval at 97.5%, which the
            # verdict is read off (it excludes no change exactly when p_adjusted is below 0.05).
            self.assertAlmostEqual(row["p_adjusted"], min(1, 2 * row["p"]))
            self.assertAlmostEqual(row["ci_level"], 0.975)
            self.assertGreater(row["change_ci_low"], 0)
        geomean = df[df["point"] == "geomean"]["change"].iloc[0]
        changes = list(points["change"])
        self.assertAlmostEqual(geomean, ((1 + changes[0]) * (1 + changes[1])) ** 0.5 - 1)
        # The gate: worse by more than 5% is exit 8; by more than 50% it passes. Either way
        # stderr says why, a line a point, so that a CI log shows more than the exit code.
        r = compare(self.trees["base"], self.trees["slower"], "--fail-on", "seconds:5%", check=8)
        fails = [x for x in r.stderr.splitlines() if x.startswith("bench-compare: FAIL: ")]
        self.assertEqual(len(fails), 2, r.stderr)
        for line, (_, row) in zip(fails, points.iterrows()):
            self.assertIn("--fail-on seconds:5%: point " + row["point"] + " got worse by "
                          "%+.1f%% [" % (row["change"] * 100), line)
            self.assertIn("(97.5% interval; n=6 and 6), beyond 5%", line)
        self.assertIn("bench-compare: exit 8 (a --fail-on metric got worse)", r.stderr)
        r = compare(self.trees["base"], self.trees["slower"], "--fail-on", "seconds:50%", check=0)
        self.assertIn("bench-compare: ok: --fail-on seconds:50%: 2 points, none significantly"
                      " worse beyond 50%", r.stderr)
        # The other way round it is better, and the gate passes.
        back = self.csv(self.trees["slower"], self.trees["base"])
        self.assertEqual(list(back[back["point"] != "geomean"]["verdict"]), ["better", "better"])

    def test_three_repeats_a_side_call_a_clear_change(self):
        # Issue 52: a command 30% slower, 3 repeats a side, read "+29.5% [+28.0%, +31.0%] p 0.1
        # inconclusive" when the verdict was the U test's (whose smallest p at 3 against 3 is
        # 0.1). Now the verdict is read off the interval printed beside it.
        path = os.path.join(self.tmp, "three.yaml")
        with open(path, "w") as f:
            f.write("name: three\nrepeats: 3\nbase:\n  benchmark: command\n"
                    "  command: {argv: [sleep, '{params.t}']}\n"
                    "axes:\n  params.t: ['0.10', '0.13']\n  params.size: [1, 2]\n")
        tree = os.path.join(self.tmp, "three")
        bench_sweep("run", path, "--out", tree, check=0)
        df = self.csv(tree, "--side", "params.t")
        points = df[df["point"] != "geomean"]
        self.assertEqual(list(points["baseline_n"]), [3, 3])
        self.assertEqual(list(points["verdict"]), ["worse", "worse"])
        for _, row in points.iterrows():
            self.assertGreater(row["change_ci_low"], 0)
            self.assertLess(row["p_adjusted"], 0.05)
        text = compare(tree, "--side", "params.t").stdout
        self.assertIn("# 97.5% intervals, simultaneous over the 2 comparisons judged "
                      "(Bonferroni); each verdict is read off its interval", text)
        compare(tree, "--side", "params.t", "--fail-on", "seconds:5%", check=8)

    def test_one_sweep_compared_with_itself_by_a_key(self):
        # One tree whose axis is the side (a container axis, here a sleep): --side KEY compares
        # the points with one value against those with the other, matched on the other keys.
        path = os.path.join(self.tmp, "side.yaml")
        with open(path, "w") as f:
            f.write("name: side\nrepeats: 6\nbase:\n  benchmark: command\n"
                    "  command: {argv: [sleep, '{params.t}']}\n"
                    "axes:\n  params.t: ['0.2', '0.26']\n  params.size: [1, 2]\n")
        tree = os.path.join(self.tmp, "side")
        bench_sweep("run", path, "--out", tree, check=0)
        r = compare(tree, "--side", "params.t")
        self.assertIn("# sides: params.t=0.2 (baseline) against params.t=0.26 (candidate)", r.stdout)
        self.assertIn("# matched on params.size", r.stdout)
        df = self.csv(tree, "--side", "params.t")
        points = df[df["point"] != "geomean"]
        self.assertEqual(sorted(points["point"]), ["size=1", "size=2"])
        self.assertEqual(list(points["baseline_n"]), [6, 6])
        self.assertEqual(list(points["verdict"]), ["worse", "worse"])
        for change in points["change"]:
            self.assertGreater(change, 0.15)  # 0.26 s against 0.2 s, plus each start
            self.assertLess(change, 0.35)
        # The values in the order asked: the other way round it is better.
        back = self.csv(tree, "--side", "params.t=0.26,0.2")
        self.assertEqual(list(back[back["point"] != "geomean"]["verdict"]), ["better", "better"])
        compare(tree, "--side", "params.t", "--fail-on", "seconds:5%", check=8)
        for args, said in ((("--side", "params.tt"), "no point has the key 'params.tt' (did you "
                            "mean 'params.t'?)"),
                           (("--side", "params.t=0.2,0.3"), "no point has params.t=0.3 (its "
                            "values are: 0.2, 0.26)"),
                           (("--side", "tag"), "'tag' is not a config key"),
                           (("--side", "params.t", "--match", "params.t"), "is the --side key")):
            self.assertIn(said, compare(tree, *args, check=2).stderr)
        self.assertIn("with --side, give one set of results",
                      compare(tree, tree, "--side", "params.t", check=2).stderr)

    def test_the_figure_of_the_changes(self):
        # bench-compare's CSV, drawn by bench-plot --kind change: each point's change in % with
        # its interval, coloured by its verdict, and the geomean.
        table = os.path.join(self.tmp, "changes.csv")
        compare(self.trees["base"], self.trees["slower"], "--format", "csv", "-o", table)
        df = pd.read_csv(table)
        figure, script = os.path.join(self.tmp, "changes.svg"), os.path.join(self.tmp, "changes.gp")
        r = subprocess.run([BENCH_PLOT, "-i", table, "-o", figure, "--kind", "change", "--script",
                            script], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 changes of seconds over 2 points and the geomean", r.stderr)
        with open(figure) as f:
            svg = f.read()
        for text in ("size=1", "size=2", "geomean", "worse", "change (%)"):
            self.assertIn(text, svg)
        with open(script + ".dat") as f:
            blocks = [b.strip().splitlines() for b in f.read().split("\n\n\n")]
        with open(script) as f:
            text = f.read()
        # The worse block holds each point's change and interval, in %.
        drawn = sorted(tuple(float(v) for v in line.split("\t")[1:])
                       for line in blocks[0] if not line.startswith("#"))
        points = df[df["point"] != "geomean"].sort_values("change")
        wanted = [(c * 100, lo * 100, hi * 100) for c, lo, hi in
                  zip(points["change"], points["change_ci_low"], points["change_ci_high"])]
        for got, want in zip(drawn, wanted):
            for a, b in zip(got, want):
                self.assertAlmostEqual(a, b, places=9)
        self.assertIn("'#d62728'", text)  # worse's colour
        self.assertIn("title 'worse'", text)
        # The title gives the intervals' level, simultaneous over the comparisons: ci_level's.
        level = df[df["point"] != "geomean"]["ci_level"].iloc[0]
        self.assertIn("against the baseline (%.3g%% intervals)" % (level * 100), text)
        self.assertNotIn("title 'better'", text)
        # Only the metrics asked for; an unknown one is an error that lists the table's.
        r = subprocess.run([BENCH_PLOT, "-i", table, "-o", figure, "--kind", "change", "--metric",
                            "secnds"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 2)
        self.assertIn("the comparison has no metric 'secnds' (it has: seconds)", r.stderr)

    def test_one_run_a_side_is_inconclusive_and_fails_the_gate_as_such(self):
        df = self.csv(self.trees["base"], self.trees["once"], check=0)
        self.assertEqual(list(df[df["point"] != "geomean"]["verdict"]),
                         ["inconclusive", "inconclusive"])
        r = compare(self.trees["base"], self.trees["once"], "--fail-on", "seconds:5%", check=9)
        unjudged = [x for x in r.stderr.splitlines()
                    if x.startswith("bench-compare: INCONCLUSIVE: --fail-on seconds:5%: point ")]
        self.assertEqual(len(unjudged), 2, r.stderr)
        for line in unjudged:
            self.assertRegex(line, r"could not be judged: (no interval|too few samples for a "
                             r"verdict) \(n=6 and 1\)$")
        self.assertIn("bench-compare: exit 9 (a --fail-on metric could not be judged)", r.stderr)

    def test_one_training_run_a_side_compares_its_steps_batch_means(self):
        df = self.csv(self.trees["tiny"], self.trees["deeper"])
        rows = {r["metric"]: r for _, r in df.iterrows()}
        tps = rows["train_tokens_per_second"]
        self.assertEqual(tps["point"], "all")  # one point a side, nothing varies
        self.assertEqual(tps["samples"], "batch means")
        # 80 measured steps: 20 batches of 4 (or of 2 or 3 after a warm-up cut).
        self.assertEqual(tps["baseline_n"], 20)
        self.assertLessEqual(tps["baseline_n"], 20)
        self.assertEqual(tps["verdict"], "worse")  # four times the blocks: far slower
        self.assertLess(tps["change"], 0)
        # The throughput is a step's tokens (4 sequences of 128) over the mean of the batch means
        # of the steps kept after the warm-up cut, read here from the rank file.
        row = pd.read_csv(io.StringIO(subprocess.run(
            [BENCH_EXTRACT, "-i", self.trees["tiny"]], capture_output=True, text=True,
            check=True).stdout)).iloc[0]
        with h5py.File(os.path.join(self.trees["tiny"], row["tag"], "rank-00000.h5"), "r") as f:
            steps = f["steps"][:]
        kept = steps["total_s"][steps["measured"] != 0][int(row["steps_cut"]):]
        k = min(20, len(kept) // 2)
        b = len(kept) // k
        batch_means = kept[len(kept) - k * b:].reshape(k, b).mean(axis=1)
        self.assertAlmostEqual(tps["baseline_mean"] / (4 * 128 / batch_means.mean()), 1, places=9)
        # Its change is the step times' (the tokens of a step are the same on both sides).
        steps = {r["metric"]: r for _, r in self.csv(self.trees["tiny"], self.trees["deeper"],
                                                      "--metric", "step_time_mean_s").iterrows()}
        step = steps["step_time_mean_s"]
        self.assertEqual(step["verdict"], "worse")
        self.assertAlmostEqual(1 + tps["change"], 1 / (1 + step["change"]))
        # A metric that is one number a run (the median step) cannot be judged from one run.
        self.assertEqual(rows["step_time_median_s"]["samples"], "runs")
        self.assertEqual(rows["step_time_median_s"]["verdict"], "inconclusive")
        self.assertEqual(rows["step_time_median_s"]["baseline_n"], 1)

    def test_bench_extract_tables_and_chosen_keys(self):
        table = os.path.join(self.tmp, "base.csv")
        subprocess.run([BENCH_EXTRACT, "-i", self.trees["base"], "-o", table], check=True,
                       capture_output=True)
        from_table = self.csv(table, self.trees["slower"])
        from_tree = self.csv(self.trees["base"], self.trees["slower"])
        pd.testing.assert_series_equal(from_table["change"], from_tree["change"])
        # Matched on nothing: every repeat of every point is one sample a side.
        pooled = self.csv(self.trees["base"], self.trees["slower"], "--match", "benchmark")
        self.assertEqual(list(pooled["baseline_n"]), [12])
        self.assertEqual(list(pooled["verdict"]), ["worse"])
        # For people: the matched keys, the change with its interval, the verdict.
        text = compare(self.trees["base"], self.trees["slower"]).stdout
        self.assertIn("# matched on params.size", text)
        self.assertRegex(text, r"\+\d+\.\d% \[\+\d+\.\d%, \+\d+\.\d%\]")
        self.assertIn("worse", text)

    def test_bad_input_says_what_to_do(self):
        r = compare(self.trees["base"], check=2)
        self.assertIn("give BASELINE and CANDIDATE", r.stderr)
        r = compare(self.trees["base"], os.path.join(self.tmp, "nowhere"), check=2)
        self.assertIn("nowhere", r.stderr)
        r = compare(self.trees["base"], self.trees["again"], "--fail-on", "seconds", check=2)
        self.assertIn("METRIC:PCT", r.stderr)
        r = compare(self.trees["base"], self.trees["again"], "--fail-on", "ttft_p50_s:5%", check=2)
        self.assertIn("neither side has this metric", r.stderr)
        r = compare(self.trees["base"], self.trees["again"], "--margin", "lots", check=2)
        self.assertIn("--margin lots", r.stderr)
        # A bare 5 would be 500%: refused, with both readings offered.
        r = compare(self.trees["base"], self.trees["slower"], "--fail-on", "seconds:5", check=2)
        self.assertIn("--fail-on seconds:5: error: is a fraction above 1 (5 = 500%)", r.stderr)
        self.assertIn("write 5% for 5 per cent, or 500% if that is meant", r.stderr)
        # -o never replaces a result, nor another file without -f.
        point = [os.path.join(self.trees["base"], d) for d in sorted(os.listdir(self.trees["base"]))
                 if os.path.isdir(os.path.join(self.trees["base"], d))][0]
        r = compare(self.trees["base"], self.trees["again"], "-o", os.path.join(point, "t.csv"),
                    check=2)
        self.assertIn("is inside the point directory", r.stderr)
        table = os.path.join(self.tmp, "compared.csv")
        compare(self.trees["base"], self.trees["again"], "-o", table)
        r = compare(self.trees["base"], self.trees["again"], "-o", table, check=3)
        self.assertIn("the output file exists", r.stderr)
        compare(self.trees["base"], self.trees["again"], "-o", table, "-f")
        self.assertTrue(open(table).read().startswith("point,metric,samples,"))


if __name__ == "__main__":
    unittest.main()
