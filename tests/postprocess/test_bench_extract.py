#!/usr/bin/python3
"""bench-extract on a results tree made by real tiny runs: 1- and 2-rank points that end ok,
points that run out of memory, a point whose run was killed, and a rank file cut short. Checked
against bench-train's own summary.json, and read back with pandas.
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/postprocess/test_bench_extract.py -v
"""
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

import h5py
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BENCH_SWEEP, BIN, ENV, SOURCE, bench_sweep, read_json, run_tool  # noqa: E402

BENCH_EXTRACT = os.path.join(BIN, "bench-extract")
BENCH_PLOT = os.path.join(BIN, "bench-plot")

BASE = """\
base:
  model: {preset: gpt2-tiny}
  data: {source: synthetic, seq_len: 32}
  train: {steps: %(steps)d, warmup_steps: 1, micro_batch: 2}
  eval: {steps: 1}
  metrics: {sample_interval_ms: 0, system: false}
  launch: {cpus_per_rank: 1, env: {SWEEPBENCH_MAX_MEMORY_MB: "24"}}
"""


def write_sweep(tmp, name, axes, steps=3):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\n" + BASE % {"steps": steps} + axes)
    return path


def extract(*args, check=0):
    return run_tool(BENCH_EXTRACT, *args, check=check)


class Extract(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        tmp = cls.tmp = cls._tmp.name
        cls.root = os.path.join(tmp, "results")
        # 1 and 2 ranks; micro batch 64 runs out of the 24 MB budget.
        s = write_sweep(tmp, "grid", "axes:\n  launch.ranks: [1, 2]\n  train.micro_batch: [2, 64]\n")
        bench_sweep("run", s, "--out", os.path.join(cls.root, "grid"), check=1)
        # Two repeats of one point, outside the tree the other tests count.
        s = write_sweep(tmp, "rep", "repeats: 2\naxes:\n  train.micro_batch: [2]\n")
        cls.rep = os.path.join(tmp, "rep")
        bench_sweep("run", s, "--out", cls.rep, check=0)
        # Three repeats of 40 steps each: enough for one run's interval and the repeats'.
        s = write_sweep(tmp, "long", "repeats: 3\naxes:\n  train.micro_batch: [2]\n", steps=41)
        cls.long = os.path.join(tmp, "long")
        bench_sweep("run", s, "--out", cls.long, check=0)
        # A point killed while it runs, runner and all, as a crash or a lost node would.
        s = write_sweep(tmp, "killed", "axes:\n  train.micro_batch: [2]\n", steps=100000)
        out = os.path.join(cls.root, "killed")
        proc = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out], env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.time() + 120
        while time.time() < deadline:
            status = [os.path.join(out, d, "status.json") for d in os.listdir(out)] \
                if os.path.isdir(out) else []
            if any(os.path.exists(p) and read_json(p)["status"] == "running" for p in status):
                break
            time.sleep(0.1)
        time.sleep(0.5)
        # Everything stops before anything dies: the point has its own process group and gets
        # SIGUSR2 when its runner dies (os/process.cc), so killing the runner first gave a
        # slow machine time to record a clean `cancelled` before the point was killed too.
        os.killpg(proc.pid, signal.SIGSTOP)
        subprocess.run(["pkill", "-STOP", "-f", "--", "--out " + out])
        os.killpg(proc.pid, signal.SIGKILL)
        subprocess.run(["pkill", "-KILL", "-f", "--", "--out " + out])
        proc.wait()
        # A copy of an ok 2-rank point whose rank 1 file was cut short.
        grid = read_json(os.path.join(cls.root, "grid", "manifest.json"))["points"]
        cls.grid = {p["tag"]: p for p in grid}
        ok2 = [p["tag"] for p in grid if p["varying"] == {"launch.ranks": 2,
                                                           "train.micro_batch": 2}][0]
        cls.cut = os.path.join(cls.root, "cut", ok2)
        shutil.copytree(os.path.join(cls.root, "grid", ok2), cls.cut)
        rank1 = os.path.join(cls.cut, "rank-00001.h5")
        os.truncate(rank1, os.path.getsize(rank1) // 2)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def table(self, *extra):
        r = extract("-i", self.root, *extra)
        return pd.read_csv(io.StringIO(r.stdout)), r

    def test_every_point_is_a_row_with_its_status(self):
        df, r = self.table()
        self.assertEqual(len(df), 6, df[["tag", "status"]])
        grid = df[df["sweep"] == "grid"]
        statuses = {(int(row["launch.ranks"]), int(row["train.micro_batch"])): row["status"]
                    for _, row in grid.iterrows()}
        self.assertEqual(statuses, {(1, 2): "ok", (2, 2): "ok", (1, 64): "oom", (2, 64): "oom"})
        for _, row in grid[grid["status"] == "oom"].iterrows():
            self.assertIn("out of memory", row["reason"])
        killed = df[df["sweep"] == "killed"].iloc[0]
        self.assertEqual(killed["status"], "incomplete")
        # The word and note `bench-sweep status` gives it too (layout/point_status.h).
        self.assertIn("is gone; `bench-sweep run` runs it again", killed["reason"])
        cut = df[df["tag"] == os.path.basename(self.cut)]
        cut = cut[cut["sweep"].isna()].iloc[0]  # the copy has no manifest beside it
        self.assertEqual(cut["status"], "incomplete")
        self.assertIn("rank-00001.h5", cut["reason"])
        self.assertIn("rank-00001.h5", r.stderr)  # the warning names the file

    def test_rank_files_that_do_not_make_one_run_are_incomplete(self):
        grid = os.path.join(self.root, "grid")
        by_ranks = {p["varying"]["launch.ranks"]: p["tag"] for p in self.grid.values()
                    if p["varying"]["train.micro_batch"] == 2}
        mixed = os.path.join(self.tmp, "mixed")
        # Rank 0's file twice (a copy gone wrong), and a 1-rank run's file posing as rank 1.
        twice = os.path.join(mixed, "twice")
        foreign = os.path.join(mixed, "foreign")
        for d in (twice, foreign):
            shutil.copytree(os.path.join(grid, by_ranks[2]), d)
            os.remove(os.path.join(d, "rank-00001.h5"))
        shutil.copy(os.path.join(twice, "rank-00000.h5"), os.path.join(twice, "rank-00001.h5"))
        shutil.copy(os.path.join(grid, by_ranks[1], "rank-00000.h5"),
                    os.path.join(foreign, "rank-00001.h5"))
        r = extract("-i", mixed, "--format", "jsonl")
        rows = {json.loads(line)["tag"]: json.loads(line) for line in r.stdout.splitlines()}
        self.assertEqual(rows["twice"]["status"], "incomplete")
        self.assertEqual(rows["twice"]["reason"], "rank-00000.h5 and rank-00001.h5 both hold rank 0")
        self.assertEqual(rows["foreign"]["status"], "incomplete")
        self.assertEqual(rows["foreign"]["reason"],
                         "rank-00001.h5 says world_size 1, rank-00000.h5 2")
        for row in rows.values():
            # No metrics from a broken run: no point has the column, so there is none.
            self.assertIsNone(row.get("train_tokens_per_second"))

    def test_metrics_match_what_bench_train_printed(self):
        df, _ = self.table()
        ok = df[(df["sweep"] == "grid") & (df["status"] == "ok")]
        self.assertEqual(len(ok), 2)
        for _, row in ok.iterrows():
            summary = read_json(os.path.join(self.root, "grid", row["tag"], "summary.json"))
            metrics = summary["metrics"]
            for col in ("train_tokens_per_second", "step_time_median_s", "train_loss",
                        "eval_loss", "tflops_per_device", "mem_peak_bytes", "mt_per_hour"):
                self.assertAlmostEqual(row[col], metrics[col], delta=abs(metrics[col]) * 1e-12,
                                       msg=col)
            self.assertEqual(row["world_size"], row["launch.ranks"])
            self.assertEqual(row["device"], "cpu")
            # fms-acceleration's memory columns from rank 0's stages, read here with h5py.
            with h5py.File(os.path.join(self.root, "grid", row["tag"], "rank-00000.h5")) as h5:
                m = h5["memory"]
                st = {name: (b, e, p) for name, b, e, p in zip(
                    m["stage"].asstr()[:], m["begin_bytes"][:], m["end_bytes"][:],
                    m["peak_bytes"][:])}
            base = st["before_init"][1]
            alloc = {k: st[k][1] - st[k][0] for k in ("init", "train")}
            peaked = {k: max(0, st[k][2] - st[k][1]) for k in ("init", "train")}
            self.assertEqual(row["mem_torch_mem_alloc_in_bytes"],
                             base + alloc["init"] + alloc["train"])
            self.assertEqual(row["mem_peak_torch_mem_alloc_in_bytes"],
                             base + alloc["init"] + peaked["init"] + alloc["train"]
                             + peaked["train"])

    def test_reader_processes_give_the_same_table_in_the_same_order(self):
        # Points are read by --jobs processes and come back in order: any number of them gives
        # the same bytes, warnings included, as reading in one process.
        for fmt in ("csv", "json", "jsonl", "md"):
            one = extract("-i", self.root, self.rep, "--format", fmt, "-j", "1")
            for jobs in ("2", "5"):
                many = extract("-i", self.root, self.rep, "--format", fmt, "-j", jobs)
                self.assertEqual(many.stdout, one.stdout, (fmt, jobs))
                self.assertEqual(many.stderr, one.stderr, (fmt, jobs))
        self.assertIn("rank-00001.h5", one.stderr)
        r = extract("-i", self.root, "-j", "0", check=2)
        self.assertIn("--jobs: error: must be 1 or more", r.stderr)

    def test_formats_output_file_and_options(self):
        out = os.path.join(self.tmp, "t.json")
        extract("-i", self.root, "-o", out)
        rows = read_json(out)
        self.assertEqual(len(rows), 6)
        self.assertEqual({r["status"] for r in rows}, {"ok", "oom", "incomplete"})
        r = extract("-i", self.root, "-o", out, check=3)  # never replaced without -f
        self.assertIn("add -f", r.stderr)
        extract("-i", self.root, "-o", out, "-f", "--format", "jsonl")
        with open(out) as f:
            self.assertEqual(len([json.loads(line) for line in f]), 6)
        md = extract("-i", self.root, "--format", "md", "--columns", "all", "--drop-constant",
                     "--keep", "model.preset").stdout.splitlines()
        header = [c.strip() for c in md[0].strip("|").split("|")]
        self.assertIn("model.preset", header)  # constant, kept
        self.assertNotIn("data.seq_len", header)  # constant, dropped
        self.assertIn("train.micro_batch", header)
        self.assertEqual(len(md), 2 + 6)
        extract("-i", self.root, "--strict", check=1)  # incomplete points fail --strict
        r = extract("-i", os.path.join(self.tmp, "nowhere"), check=2)
        self.assertIn("is not a directory", r.stderr)

    def test_group_repeats_and_cost(self):
        df = pd.read_csv(io.StringIO(extract("-i", self.rep, "--price-per-hour", "2.5").stdout))
        self.assertEqual(list(df["repeat"]), [0, 1])
        for _, row in df.iterrows():
            self.assertAlmostEqual(row["cost_usd_per_mtok"],
                                   2.5 * row["world_size"] / row["mt_per_hour"])
        g = pd.read_csv(io.StringIO(extract("-i", self.rep, "--group-repeats").stdout))
        self.assertEqual(len(g), 1)
        self.assertEqual(g["repeats"][0], 2)
        self.assertEqual(g["status"][0], "ok")
        tps = df["train_tokens_per_second"]
        self.assertAlmostEqual(g["train_tokens_per_second"][0], tps.mean())
        self.assertAlmostEqual(g["train_tokens_per_second_std"][0], tps.std())  # n - 1
        self.assertNotIn("repeat", g.columns)
        self.assertTrue(g["cost_usd_per_mtok"].isna().all())  # no price given
        # --best over single repeats ranks the luckiest one: said, with what to do instead.
        r = extract("-i", self.rep, "--best", "train_tokens_per_second")
        self.assertIn("bench-extract: warning: --best: the points have 2 repeats each, ranked "
                      "one by one: the best single repeat is the luckiest; add --group-repeats",
                      r.stderr)
        r = extract("-i", self.rep, "--best", "train_tokens_per_second", "--group-repeats")
        self.assertNotIn("luckiest", r.stderr)
        # --columns applies with --where and --best too (it printed every column there).
        for select in (["--where", "status=ok"], ["--best", "train_tokens_per_second"]):
            for fmt in ("table", "csv"):
                r = extract("-i", self.rep, *select, "--columns", "repeat,status,world_size",
                            "--format", fmt)
                header = r.stdout.splitlines()[0].lstrip("# ").replace(",", " ").split()
                self.assertEqual(header, ["repeat", "status", "world_size"], (select, fmt))
        r = extract("-i", self.rep, "--where", "status=ok", "--columns", "repeat,statsu",
                    check=2)
        self.assertIn("no column is named 'statsu' (did you mean 'status'?)", r.stderr)
        # A size in a terminal's table is in the unit it asks for; CSV keeps the bytes.
        for select in ([], ["--where", "status=ok"]):
            table = extract("-i", self.rep, *select, "--columns", "repeat,mem_peak_bytes",
                            "--format", "table").stdout.splitlines()[1:]
            self.assertTrue(table)
            for line in table:
                self.assertRegex(line, r"^\s*\d+\s+\d+(\.\d+)? (KiB|MiB|GiB)$", select)
            csv_rows = extract("-i", self.rep, *select, "--columns", "repeat,mem_peak_bytes",
                               "--format", "csv").stdout.splitlines()[1:]
            self.assertTrue(all(re.match(r"^\d+,\d+$", line) for line in csv_rows), csv_rows)

    def test_intervals_and_the_noise_flag_from_real_runs(self):
        df = pd.read_csv(io.StringIO(extract("-i", self.long).stdout))
        self.assertEqual(len(df), 3)
        for _, row in df.iterrows():
            # The kept steps, from the rank file: the slowest rank's measured steps after the cut.
            with h5py.File(os.path.join(self.long, row["tag"], "rank-00000.h5"), "r") as f:
                steps = f["steps"][:]
            times = steps["total_s"][steps["measured"] != 0]
            self.assertEqual(len(times), 40)
            cut = int(row["steps_cut"])
            self.assertEqual(cut % 5, 0)
            self.assertLessEqual(cut, 20)
            kept = times[cut:]
            self.assertAlmostEqual(row["step_time_cv"], kept.std(ddof=1) / kept.mean(), places=9)
            low, high = row["step_time_ci_low_s"], row["step_time_ci_high_s"]
            self.assertLess(low, kept.mean())
            self.assertGreater(high, kept.mean())
            # The headline is the kept steps' too (one estimator for the value and its interval).
            self.assertAlmostEqual(row["step_time_mean_s"], kept.mean(), places=12)
            tokens = row["train_tokens_per_second"] * kept.mean()  # per step
            self.assertAlmostEqual(row["train_tokens_per_second_ci_low"], tokens / high, places=6)
            if low > 0:
                self.assertAlmostEqual(row["train_tokens_per_second_ci_high"], tokens / low,
                                       places=6)
            else:  # an interval reaching 0 s (a few slow steps): no upper bound, left empty
                self.assertTrue(math.isnan(row["train_tokens_per_second_ci_high"]), row)
            self.assertEqual(bool(row["noisy"]), row["step_time_cv"] > 0.05)
        # The threshold is the user's: 0 makes every point noisy, a large one none.
        every = pd.read_csv(io.StringIO(extract("-i", self.long, "--noise-threshold", "0").stdout))
        self.assertTrue(every["noisy"].all())
        none = pd.read_csv(io.StringIO(extract("-i", self.long, "--noise-threshold", "100").stdout))
        self.assertFalse(none["noisy"].any())
        bad = extract("-i", self.long, "--noise-threshold", "-1", check=2)
        self.assertIn("--noise-threshold", bad.stderr)
        # Over the repeats: each metric's mean and its interval, Student's t at 3 repeats
        # (t(0.975, 2) = 4.3027).
        g = pd.read_csv(io.StringIO(extract("-i", self.long, "--group-repeats").stdout))
        self.assertEqual(len(g), 1)
        tps = df["train_tokens_per_second"]
        self.assertAlmostEqual(g["train_tokens_per_second"][0], tps.mean())
        half = 4.302652729911275 * tps.std(ddof=1) / 3 ** 0.5
        low, high = g["train_tokens_per_second_ci_low"][0], g["train_tokens_per_second_ci_high"][0]
        self.assertAlmostEqual(low / (tps.mean() - half), 1, places=9)
        self.assertAlmostEqual(high / (tps.mean() + half), 1, places=9)
        self.assertNotIn("step_time_ci_low_s_ci_low", g.columns)
        # For people: `±` half the interval, and which points were noisy with their spread.
        people = extract("-i", self.long, "--format", "table", "--noise-threshold", "0").stdout
        self.assertRegex(people, r"\d ± \d")
        self.assertIn(" cv", people.splitlines()[0])
        self.assertRegex(people, r" \d+%")

    def test_the_best_configuration_and_the_pareto_front(self):
        grid = os.path.join(self.root, "grid")
        df = pd.read_csv(io.StringIO(extract("-i", grid).stdout))
        ok = df[df["status"] == "ok"]
        # The best throughput: the ok row with the most tokens/s (the oom rows are no candidates).
        best = pd.read_csv(io.StringIO(extract("-i", grid, "--best",
                                               "train_tokens_per_second").stdout))
        self.assertEqual(list(best["tag"]), [ok.loc[ok["train_tokens_per_second"].idxmax(), "tag"]])
        # One per world size, under a memory limit that only the ok rows meet.
        limit = ok["mem_peak_bytes"].max() + 1
        per = pd.read_csv(io.StringIO(extract(
            "-i", grid, "--best", "train_tokens_per_second", "--per", "launch.ranks",
            "--where", f"mem_peak_bytes<{limit:.0f}").stdout))
        self.assertEqual(sorted(per["launch.ranks"]), [1, 2])
        for _, row in per.iterrows():
            same = ok[ok["launch.ranks"] == row["launch.ranks"]]
            self.assertEqual(row["train_tokens_per_second"], same["train_tokens_per_second"].max())
        # Spaces around the operator, as pandas and SQL users write it, and == for =.
        spaced = pd.read_csv(io.StringIO(extract(
            "-i", grid, "--where", "launch.ranks == 2", "--where",
            f"mem_peak_bytes < {limit:.0f}").stdout))
        self.assertEqual(sorted(spaced["tag"]),
                         sorted(ok[ok["launch.ranks"] == 2]["tag"]))
        # Less is better for memory and times.
        least = pd.read_csv(io.StringIO(extract("-i", grid, "--best", "mem_peak_bytes").stdout))
        self.assertEqual(least["mem_peak_bytes"][0], ok["mem_peak_bytes"].min())
        # The front of throughput against memory: no kept row is beaten in both by another ok row.
        front = pd.read_csv(io.StringIO(extract(
            "-i", grid, "--pareto", "train_tokens_per_second,mem_peak_bytes").stdout))
        self.assertGreaterEqual(len(front), 1)
        for _, a in front.iterrows():
            for _, b in ok.iterrows():
                beaten = (b["train_tokens_per_second"] > a["train_tokens_per_second"] and
                          b["mem_peak_bytes"] < a["mem_peak_bytes"])
                self.assertFalse(beaten, f"{b['tag']} beats {a['tag']}")
        for args, said in ((("--best", "train_tokens_per_secnd"), "--best train_tokens_per_secnd"),
                           # A shortened name gets the column it shortens.
                           (("--best", "tokens_per_sec"),
                            "no column is named 'tokens_per_sec' (did you mean"
                            " 'train_tokens_per_second'?)"),
                           (("--pareto", "mfu"), "needs two metrics"),
                           (("--per", "launch.ranks"), "applies with --best or --pareto only"),
                           (("--where", "mem_peak_bytes"), "is not COLUMN OP VALUE")):
            self.assertIn(said, extract("-i", grid, *args, check=2).stderr)

    def test_each_plot_kind_renders_png_and_svg(self):
        csv = os.path.join(self.tmp, "grid.csv")
        extract("-i", os.path.join(self.root, "grid"), "-o", csv, "-f")
        figs = os.path.join(self.tmp, "figures")
        os.makedirs(figs)
        kinds = {"bar": ["--x", "train.micro_batch", "--hue", "launch.ranks"],
                 "line": ["--x", "launch.ranks"],
                 "scaling": ["--metric", "tokens_per_second_per_device"],
                 # training and evaluation side by side, as in the WikiText-2 benchmark's figure
                 "two": ["--metric", "train_samples_per_second,eval_samples_per_second",
                         "--x", "train.micro_batch", "--hue", "launch.ranks"],
                 # the front of throughput against memory (--x defaults to mem_peak_bytes)
                 "pareto": []}
        for kind, args in kinds.items():
            for ext in ("png", "svg"):
                fig = os.path.join(figs, f"{kind}.{ext}")
                cmd = [BENCH_PLOT, "-i", csv, "-o", fig, "--kind", "bar" if kind == "two" else kind]
                if "--metric" not in args:
                    cmd += ["--metric", "train_tokens_per_second"]
                r = subprocess.run(cmd + args, capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, f"{kind} {ext}: {r.stderr}")
                self.assertIn("rows left out", r.stderr)  # the oom points are not plotted
                with open(fig, "rb") as f:
                    head = f.read()
                if ext == "png":
                    self.assertTrue(head.startswith(b"\x89PNG\r\n\x1a\n"), kind)
                    self.assertGreater(len(head), 2000, kind)
                else:
                    root = ET.fromstring(head)
                    self.assertTrue(root.tag.endswith("svg"), kind)
                    self.assertIn(b"<path", head)
                    if kind == "two":  # one legend entry per metric
                        self.assertIn(b"train_samples_per_second", head)
                        self.assertIn(b"eval_samples_per_second", head)
        self.assertEqual(sorted(os.listdir(figs)),
                         sorted(f"{k}.{e}" for k in kinds for e in ("png", "svg")))  # no leftovers
        # The figure's front is bench-extract --pareto's: the same points, by their values.
        script = os.path.join(self.tmp, "front.gp")
        subprocess.run([BENCH_PLOT, "-i", csv, "-o", os.path.join(self.tmp, "front.svg"),
                        "--kind", "pareto", "--metric", "train_tokens_per_second", "--script",
                        script], check=True, capture_output=True)
        with open(script) as f:
            text = f.read()
        front_blocks = [int(i) for i in re.findall(r"index (\d+) using 1:4 with lines", text)]
        with open(script + ".dat") as f:
            blocks = f.read().split("\n\n\n")
        drawn = sorted(float(line.split("\t")[3]) for b in front_blocks
                       for line in blocks[b].strip().splitlines() if not line.startswith("#"))
        front = pd.read_csv(io.StringIO(extract(
            "-i", os.path.join(self.root, "grid"), "--format", "csv", "--pareto",
            "train_tokens_per_second,mem_peak_bytes").stdout))
        self.assertEqual(len(drawn), len(front))
        for a, b in zip(drawn, sorted(front["train_tokens_per_second"])):
            self.assertAlmostEqual(a, b, delta=abs(b) * 1e-9)
        # --script keeps the gnuplot script and its data, which gnuplot runs again as they are.
        script = os.path.join(self.tmp, "bar.gp")
        subprocess.run([BENCH_PLOT, "-i", csv, "-o", os.path.join(self.tmp, "again.png"),
                        "--metric", "train_loss", "--script", script], check=True,
                       capture_output=True)
        self.assertTrue(os.path.exists(script + ".dat"))
        os.remove(os.path.join(self.tmp, "again.png"))
        subprocess.run(["gnuplot", script], check=True, capture_output=True)
        self.assertTrue(os.path.getsize(os.path.join(self.tmp, "again.png")) > 0)

    def test_plot_errors_are_clear(self):
        csv = os.path.join(self.tmp, "errors.csv")
        extract("-i", os.path.join(self.root, "grid"), "-o", csv, "-f")
        figs = os.path.join(self.tmp, "error-figures")
        os.makedirs(figs)
        fig = os.path.join(figs, "e.png")

        def plot(*args, env=None):
            return subprocess.run([BENCH_PLOT, "-i", csv, "-o", fig, *args], capture_output=True,
                                  text=True, env=env, timeout=120)
        r = plot("--metric", "train_tokens_per_secnd")
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean 'train_tokens_per_second'", r.stderr)
        self.assertIn("the columns are: sweep, tag,", r.stderr)
        r = plot("--metric", "reason")
        self.assertEqual(r.returncode, 2)
        self.assertIn("nothing to plot", r.stderr)
        r = plot("--metric", "model.preset")
        self.assertIn("is not a numeric column", r.stderr)
        # Metrics of other units share no axis (1 ms bars beside 57,000 samples/s vanish).
        r = plot("--metric", "train_samples_per_second,step_time_mean_s")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--metric train_samples_per_second,step_time_mean_s: error: "
                      "train_samples_per_second is in samples/s and step_time_mean_s in seconds: "
                      "one axis shows one unit", r.stderr)
        self.assertFalse(os.path.exists(fig))
        r = plot("--metric", "train_loss", env={"PATH": "/nonexistent"})
        self.assertEqual(r.returncode, 2)
        self.assertIn("gnuplot: error: not found", r.stderr)
        self.assertFalse(os.path.exists(fig))
        # A figure gnuplot fails to draw leaves the one already there as it was. (A stand-in
        # gnuplot that fails: the real one does not fail on the scripts we write.)
        subprocess.run([BENCH_PLOT, "-i", csv, "-o", fig, "--metric", "train_loss"], check=True,
                       capture_output=True)
        with open(fig, "rb") as f:
            before = f.read()
        bin_dir = os.path.join(self.tmp, "failing-gnuplot")
        os.makedirs(bin_dir)
        with open(os.path.join(bin_dir, "gnuplot"), "w") as f:
            f.write("#!/bin/sh\necho 'set output: half a figure' >&2\nexit 1\n")
        os.chmod(os.path.join(bin_dir, "gnuplot"), 0o755)
        r = plot("--metric", "train_loss", env={"PATH": bin_dir + ":/usr/bin:/bin"})
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("gnuplot failed: set output: half a figure", r.stderr)
        with open(fig, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertEqual(os.listdir(figs), ["e.png"])  # no temporary figure, script or data

    def test_tables_for_people_show_what_varies_and_the_headline_metrics(self):
        # `--format table` printed every column (3,235 characters wide).
        r = extract("-i", os.path.join(self.root, "grid"), "--format", "table")
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 1 + 4)
        # 120 columns, the reason cut to fit; but a reason keeps 24 characters at least, so a
        # table whose other columns are wider (a noisy run adds `cv`, one whose CPUs were shared
        # `shared`, as a loaded machine makes them) may pass 120 by its reason's floor, and no
        # more. The reason is the last cell: what follows the last run of two spaces or more.
        for line in lines:
            if len(line) > 120:
                self.assertTrue(line.endswith("\u2026") and len(re.split(" {2,}", line)[-1]) == 24,
                                r.stdout)
        header = lines[0].lstrip("#").split()
        # index; the axes in the sweep file's order (eval.micro_batch follows train.micro_batch
        # and is left out); training's headline metrics with units; status and reason, since
        # two points ran out of memory.
        self.assertEqual(header[:3], ["index", "ranks", "micro_batch"])
        for h in ("tokens/s", "(ms)", "loss", "status", "reason"):
            self.assertIn(h, header)
        self.assertNotIn("eval.micro_batch", r.stdout)
        self.assertNotIn("model.preset", r.stdout)
        ok = [line.split() for line in lines[1:] if "ok" in line.split()]
        self.assertEqual(len(ok), 2)
        tag = [t for t, p in self.grid.items() if p["index"] == int(ok[0][0])][0]
        summary = read_json(os.path.join(self.root, "grid", tag, "summary.json"))["metrics"]
        md = extract("-i", os.path.join(self.root, "grid"), "--format", "md").stdout.splitlines()
        self.assertTrue(md[0].startswith("| index | ranks | micro_batch | tokens/s |"), md[0])
        # The step is the mean step (tokens/s is tokens over it), with its interval beside it.
        cells = [[c.strip() for c in line.strip("|").split("|")] for line in md]
        column = cells[0].index("step mean (ms)")
        row = [c for c in cells[2:] if c[0] == ok[0][0]][0]
        step_ms = float(row[column].split()[0])
        # Rounded to the second digit of its ± where it has one (at most a twentieth of it).
        spread = float(row[column].split("±")[1]) if "±" in row[column] else 0
        self.assertAlmostEqual(step_ms, summary["step_time_mean_s"] * 1000,
                               delta=summary["step_time_mean_s"] * 1000 * 1e-3 + spread / 5)
        self.assertRegex(row[column], r"^[0-9.]+( ± [0-9.]+| \[0, [0-9.]+\])?$")
        # --columns all gives every column, a list the columns named, in any format.
        wide = extract("-i", os.path.join(self.root, "grid"), "--format", "table", "--columns", "all")
        self.assertIn("model.preset", wide.stdout)
        listed = extract("-i", self.root, "--columns", "tag,status", "--columns", "train_loss")
        self.assertEqual(listed.stdout.splitlines()[0], "tag,status,train_loss")
        bad = extract("-i", self.root, "--columns", "train_los", check=2)
        self.assertIn("--columns train_los: error: no column is named 'train_los' (did you mean "
                      "'train_loss'?)", bad.stderr)
        # Over repeats: mean ± std, rounded to the std's second digit.
        g = extract("-i", self.rep, "--group-repeats", "--format", "table").stdout
        self.assertRegex(g, r"\d ± \d")

    def test_csv_keeps_only_the_columns_of_the_workloads_present(self):
        columns = extract("-i", os.path.join(self.root, "grid")).stdout.splitlines()[0].split(",")
        self.assertIn("train.micro_batch", columns)
        self.assertIn("train_tokens_per_second", columns)
        for absent in ("infer.batch_size", "ttft_p50_s", "command.argv", "exit_code"):
            self.assertNotIn(absent, columns)


COMMAND = """\
name: people
base:
  benchmark: command
  command:
    argv: [sh, -c, 'echo "{{\\"num_requests\\": {params.n}, \\"lat\\": 0.0123}}" > {out}/r.json']
    metrics:
      - {name: num_requests, from: 'json {out}/r.json', pointer: /num_requests}
      - {name: latency, from: 'json {out}/r.json', pointer: /lat, unit: s}
axes:
  params.n: %s
"""


class ForPeople(unittest.TestCase):
    """Command points (quick to run): the sweep's order, integers, points taken out of a sweep."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        self._tmp.cleanup()

    def run_sweep(self, values):
        path = os.path.join(self.tmp, "people.yaml")
        with open(path, "w") as f:
            f.write(COMMAND % values)
        bench_sweep("run", path, "--out", self.out, check=0)

    def test_repeats_of_command_points_are_grouped(self):
        # --group-repeats never grouped command points (their wall time and metrics
        # were taken for keys).
        path = os.path.join(self.tmp, "people.yaml")
        with open(path, "w") as f:
            f.write((COMMAND % "[32, 128]") + "repeats: 3\n")
        bench_sweep("run", path, "--out", self.out, check=0)
        df = pd.read_csv(io.StringIO(extract("-i", self.out, "--group-repeats").stdout))
        self.assertEqual(list(df["params.n"]), [32, 128])
        self.assertEqual(list(df["repeats"]), [3, 3])
        self.assertEqual(list(df["num_requests"]), [32, 128])
        self.assertEqual(list(df["num_requests_std"]), [0, 0])
        self.assertTrue((df["seconds_std"] >= 0).all())

    def test_command_points_are_sampled_and_the_first_command_sweep_runs(self):
        # Command points had no CPU/RAM sampling (--series system was empty); the
        # shipped first command sweep (docs/first-steps.md) runs as documented.
        bench_sweep("run", os.path.join(SOURCE, "sweeps", "command-quick.yaml"), "--out", self.out,
                    "--set", "metrics.sample_interval_ms=10", check=0)
        df = pd.read_csv(io.StringIO(extract("-i", self.out).stdout))
        self.assertEqual(len(df), 6)
        self.assertTrue((df["status"] == "ok").all(), df[["status", "reason"]])
        self.assertTrue((df["mb_per_s"] > 0).all())
        self.assertTrue((df["cpu_percent_mean"] >= 0).all())
        self.assertTrue((df["ram_peak_mb"] > 0).all())
        system = pd.read_csv(io.StringIO(extract("-i", self.out, "--series", "system").stdout))
        self.assertGreaterEqual(len(system), 2 * 6)
        self.assertEqual(sorted(set(system["params.level"])), [1, 6, 9])

    def test_llama_bench_gives_one_metric_per_test(self):
        # Llama-bench's tests were averaged into pp/tg means only. A stand-in prints
        # the records llama-bench -o jsonl writes (llama.cpp's build is not affordable here).
        records = [
            {"n_prompt": 512, "n_gen": 0, "n_depth": 0, "avg_ts": 2000.5, "stddev_ts": 3.0},
            {"n_prompt": 0, "n_gen": 128, "n_depth": 0, "avg_ts": 110.25, "stddev_ts": 0.5},
            {"n_prompt": 512, "n_gen": 128, "n_depth": 0, "avg_ts": 400.0, "stddev_ts": 1.0},
            {"n_prompt": 0, "n_gen": 128, "n_depth": 64, "avg_ts": 100.0, "stddev_ts": 0.5,
             "backends": "CPU", "cpu_info": "AMD EPYC 7B13", "model_type": "llama ?B F32"}]
        program = os.path.join(self.tmp, "llama-bench.sh")
        with open(program, "w") as f:
            f.write("cat <<'EOF'\n" + "\n".join(json.dumps(r) for r in records) + "\nEOF\n")
        path = os.path.join(self.tmp, "llama.yaml")
        with open(path, "w") as f:
            f.write(f"name: llama\nbase:\n  benchmark: command\n  command:\n"
                    f"    argv: [sh, {program}, '{{params.threads}}']\n    parser: llama-bench\n"
                    f"axes:\n  params.threads: [1, 2]\n")
        bench_sweep("run", path, "--out", self.out, check=0)
        df = pd.read_csv(io.StringIO(extract("-i", self.out).stdout))
        self.assertEqual(list(df["pp512"]), [2000.5, 2000.5])
        self.assertEqual(list(df["tg128"]), [110.25, 110.25])
        self.assertEqual(list(df["pp512+tg128"]), [400, 400])
        self.assertEqual(list(df["tg128@d64"]), [100, 100])
        self.assertEqual(list(df["tg_tokens_per_second"]), [105.125, 105.125])
        table = extract("-i", self.out, "--format", "table").stdout
        self.assertIn("pp512+tg128 (tokens/s)", table)
        # Text fields are text columns; the per-test columns can be chosen by name.
        self.assertEqual(list(df["backends"]), ["CPU", "CPU"])
        self.assertEqual(list(df["cpu_info"]), ["AMD EPYC 7B13"] * 2)
        self.assertEqual(list(df["model_type"]), ["llama ?B F32"] * 2)
        chosen = pd.read_csv(io.StringIO(extract("-i", self.out, "--columns",
                                                 "params.threads,pp512,backends").stdout))
        self.assertEqual(list(chosen.columns), ["params.threads", "pp512", "backends"])
        self.assertEqual(list(chosen["pp512"]), [2000.5, 2000.5])
        r = extract("-i", self.out, "--columns", "pp521", check=2)
        self.assertIn("no column is named 'pp521' (did you mean 'pp512'?)", r.stderr)

    def test_sweep_order_integers_and_removed_points(self):
        self.run_sweep("[32, 128, 1024]")
        df = pd.read_csv(io.StringIO(extract("-i", self.out).stdout))
        # The sweep file's order, not the tags' (n=1024 and n=128 sort before n=32).
        self.assertEqual(list(df["params.n"]), [32, 128, 1024])
        self.assertEqual(list(df["index"]), [0, 1, 2])
        # What the program wrote as an integer stays one.
        csv = extract("-i", self.out).stdout
        self.assertIn(",32,0.0123,", csv)
        self.assertNotIn("32.0", csv)
        # Only a command's columns: no training or inference ones.
        self.assertNotIn("train.micro_batch", df.columns)
        self.assertNotIn("train_tokens_per_second", df.columns)
        table = extract("-i", self.out, "--format", "table").stdout
        self.assertIn("latency (ms)", table)
        self.assertRegex(table, r"0\s+32\s+32\s+12\.3")
        # The sweep file loses a value: its point is no longer in the sweep and is left out,
        # with a word; --removed brings it back, marked.
        self.run_sweep("[32, 1024]")
        r = extract("-i", self.out)
        df = pd.read_csv(io.StringIO(r.stdout))
        self.assertEqual(list(df["params.n"]), [32, 1024])
        self.assertNotIn("in_sweep", df.columns)
        self.assertIn("1 point no longer in their sweep left out (--removed brings them back, "
                      "marked)", r.stderr)
        df = pd.read_csv(io.StringIO(extract("-i", self.out, "--removed").stdout))
        self.assertEqual(sorted(df["params.n"]), [32, 128, 1024])
        self.assertEqual(list(df[df["params.n"] == 128]["in_sweep"]), [False])
        self.assertTrue(df[df["params.n"] != 128]["in_sweep"].isna().all())


if __name__ == "__main__":
    unittest.main()
