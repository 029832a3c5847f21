#!/usr/bin/python3
"""bench-infer end to end: real runs of the binary, alone, under mpirun and through bench-sweep,
read back with h5py; bench-extract's rows and long tables read with pandas.

Run by ctest (tests/CMakeLists.txt), one ctest per class:
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/infer/test_bench_infer.py Sweep
"""
import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest

import h5py
import numpy as np
import pandas

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("SWEEPBENCH_BIN_DIR", os.path.join(SOURCE, "build", "release", "bin"))
BENCH_INFER = os.path.join(BIN, "bench-infer")

ENV = dict(os.environ)
ENV.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")

POINT = """\
benchmark: infer
model: {preset: %(preset)s}
infer: {input_tokens: 16, output_tokens: 12, batch_size: 2, warmup_runs: 1, runs: %(runs)d}
metrics: {sample_interval_ms: 50}
"""


def read_json(path):
    with open(path) as f:
        return json.load(f)


def documented_infer_layout():
    """docs/results-format.md's inference sections: {"/infer": [(name, type)], "/infer/runs": ...}."""
    layout, section = {}, None
    for line in open(os.path.join(SOURCE, "docs", "results-format.md")):
        heading = re.match(r"## Inference (?:group|table) `(/[\w/]+)`", line)
        if heading:
            section = heading.group(1)
            continue
        if line.startswith("## "):
            section = None
        row = re.match(r"\| `(\w+)` \| ([\w\[\], ]+) \|", line)
        if section and row:
            layout.setdefault(section, []).append((row.group(1), row.group(2)))
    return layout


class InferCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-infer-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def config(self, preset="gpt2-tiny", runs=3, extra="", name="point"):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "config.yaml")
        with open(path, "w") as f:
            f.write(POINT % dict(preset=preset, runs=runs) + extra)
        return path

    def run_infer(self, config, out, *extra, ranks=None, timeout=180):
        cmd = [BENCH_INFER, "--config", config, "--out", out, *extra]
        if ranks:
            cmd = ["mpirun", "-n", str(ranks), *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV)


class SingleRank(InferCase):
    def test_a_config_without_benchmark_is_an_inference_point(self):
        # The program says which kind it runs; only another kind is refused.
        path = self.config(runs=1)
        with open(path) as f:
            text = f.read().replace("benchmark: infer\n", "")
        with open(path, "w") as f:
            f.write(text)
        out = os.path.join(self.tmp, "out")
        r = self.run_infer(path, out)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertEqual(read_json(os.path.join(out, "summary.json"))["benchmark"], "infer")

    def test_writes_the_documented_layout_and_a_table(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_infer(self.config(), out)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertEqual(sorted(os.listdir(out)), ["rank-00000.h5", "summary.json"])
        # The console table: a header, a units row, one line per run, OK at the end.
        self.assertRegex(r.stdout, r"#\s+run\s+kind\s+ttft_ms\s+tpot_ms\s+e2e_s\s+output_tok/s\n"
                                   r"#\s+ms\s+ms\s+s\s+tokens/s\n")
        self.assertEqual(len(re.findall(r"^\s+\d/4\s+(warmup|timed)", r.stdout, re.M)), 4)
        self.assertIn("# OK: results in", r.stdout)
        path = os.path.join(out, "rank-00000.h5")
        with h5py.File(path, "r") as f:
            self.assertEqual(f.attrs["benchmark"], "infer")
            self.assertEqual(f.attrs["schema_version"], 4)
            self.assertEqual(f.attrs["status"], "ok")
            g = f["infer"]
            # Every documented attribute, table member and dataset, with its type; nothing else.
            layout = documented_infer_layout()
            self.assertEqual(set(layout), {"/infer", "/infer/runs", "/infer/token_times"})
            names = set()
            for name, kind in layout["/infer"]:
                names.add(name)
                if name in g.attrs:
                    value = g.attrs[name]
                    if kind == "string":
                        self.assertIsInstance(value, str, name)
                    else:
                        self.assertEqual(np.asarray(value).dtype, np.dtype(kind), name)
                else:
                    self.assertIn(name, g, f"/infer/{name} is documented but missing")
            self.assertEqual(set(g.attrs) | set(g.keys()), names)
            for table in ("runs", "token_times"):
                members = layout["/infer/" + table]
                self.assertEqual(g[table].dtype.names, tuple(n for n, _ in members), table)
                for n, kind in members:
                    self.assertEqual(g[table].dtype[n], np.dtype(kind), f"{table}.{n}")
            runs = pandas.DataFrame(g["runs"][:])
            self.assertEqual(list(runs["run"]), [0, 1, 2, 3])
            self.assertEqual(list(runs["warmup"]), [1, 0, 0, 0])
            self.assertTrue((runs["e2e_s"] > runs["ttft_s"]).all())
            self.assertTrue((runs["tokens"] == 12).all())
            times = pandas.DataFrame(g["token_times"][:])
            self.assertEqual(len(times), 4 * 12)
            # Position 0 is the first token: its time is the run's TTFT.
            first = times[times.position == 0].set_index("run")["seconds"]
            self.assertTrue(np.allclose(first.values, runs.set_index("run")["ttft_s"].values))
            ids = g["generated_ids"][:]
            self.assertEqual(ids.shape, (4, 2, 12))
            self.assertTrue(((ids >= 0) & (ids < 512)).all())
            # Greedy decoding of the same prompts: every run generates the same tokens.
            self.assertTrue((ids == ids[0]).all())
            self.assertEqual(g.attrs["kv_cache"], "static")
            self.assertEqual(g.attrs["decoding"], "greedy")
            # infer.cuda_graph is on by default and ignored on a CPU: no graph ran.
            self.assertEqual(g.attrs["cuda_graph"], 0)
            self.assertEqual(g.attrs["peak_bandwidth_source"], "measured")
            self.assertGreater(g.attrs["peak_bandwidth_gbs"], 0.1)
            # 2 L Hkv D bytes B (in + out) = 2 * 2 * 4 * 16 * 4 * 2 * 28.
            self.assertEqual(g.attrs["kv_cache_bytes"], 2 * 2 * 4 * 16 * 4 * 2 * 28)
            stages = list(f["memory/stage"].asstr()[:])
            self.assertEqual(stages, ["before_init", "init", "generate"])
            # Counted tensors: the weights after init, exactly; weights and cache while generating.
            alloc_end, alloc_peak = f["memory/alloc_end_bytes"][:], f["memory/alloc_peak_bytes"][:]
            self.assertEqual(alloc_end[1], g.attrs["weight_bytes"])
            self.assertGreaterEqual(alloc_peak[2], g.attrs["weight_bytes"] + g.attrs["kv_cache_bytes"])
            counted_peak = int(alloc_peak.max())
        s = read_json(os.path.join(out, "summary.json"))
        self.assertEqual((s["benchmark"], s["status"], s["measured_runs"]), ("infer", "ok", 3))
        m = s["metrics"]
        self.assertEqual(m["mem_alloc_peak_bytes"], counted_peak)
        # The summary's numbers from the file's, by their definitions (docs/metrics.md).
        with h5py.File(path, "r") as f:
            runs = pandas.DataFrame(f["infer/runs"][:])
        timed = runs[runs.warmup == 0]
        self.assertAlmostEqual(m["average_ttft"], timed.ttft_s.mean(), places=12)
        self.assertAlmostEqual(m["average_gen_time"], timed.e2e_s.mean(), places=12)
        self.assertAlmostEqual(m["output_tps"], 2 * 12 * 3 / timed.e2e_s.sum(), places=6)
        tpot = (timed.e2e_s - timed.ttft_s) / 11
        self.assertAlmostEqual(m["tpot_mean_s"], tpot.mean(), places=12)
        self.assertAlmostEqual(m["decode_tokens_per_second"],
                               2 * 11 * 3 / (timed.e2e_s - timed.ttft_s).sum(), places=6)
        self.assertGreater(m["mbu"], 0)

    def test_every_cache_gives_the_same_tokens_and_sampling_repeats(self):
        outputs = {}
        for cache in ("static", "dynamic", "none"):
            for sample in ("false", "true"):
                out = os.path.join(self.tmp, f"{cache}-{sample}")
                r = self.run_infer(self.config(preset="llama-tiny"), out, "--set", f"infer.kv_cache={cache}",
                                   "--set", f"infer.do_sample={sample}")
                self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
                with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
                    outputs[cache, sample] = f["infer/generated_ids"][:]
        for sample in ("false", "true"):
            np.testing.assert_array_equal(outputs["static", sample], outputs["dynamic", sample])
            np.testing.assert_array_equal(outputs["static", sample], outputs["none", sample])
        sampled = outputs["static", "true"]
        self.assertTrue((sampled == sampled[0]).all(), "a sampled run repeats for its seed")
        self.assertGreater(len(np.unique(sampled)), 10)
        out = os.path.join(self.tmp, "other-seed")
        r = self.run_infer(self.config(preset="llama-tiny"), out, "--set", "infer.do_sample=true",
                           "--set", "infer.seed=99")
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            self.assertFalse((f["infer/generated_ids"][:] == sampled).all())

    def test_without_token_metrics_only_first_and_last_are_timed(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_infer(self.config(), out, "--set", "infer.token_metrics=false")
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            self.assertEqual(len(f["infer/token_times"]), 0)
            self.assertEqual(len(f["infer/runs"]), 4)
        m = read_json(os.path.join(out, "summary.json"))["metrics"]
        self.assertIsNone(m["itl_p50_s"])
        self.assertGreater(m["tpot_p50_s"], 0)


class Failures(InferCase):
    def test_out_of_memory_is_a_result(self):
        out = os.path.join(self.tmp, "out")
        # A static cache for 4096 x 28 positions: 460 MB, past a 200 MB budget.
        r = self.run_infer(self.config(), out, "--set", "infer.batch_size=4096", "--max-memory-mb", "200")
        self.assertEqual(r.returncode, 20, r.stderr + r.stdout)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            self.assertEqual(f.attrs["status"], "oom")
            self.assertIn("generation: ", f.attrs["reason"])
            self.assertEqual(len(f["infer/runs"]), 0)
        self.assertEqual(read_json(os.path.join(out, "summary.json"))["status"], "oom")
        self.assertIn("# OOM: ", r.stdout)

    def _start_and_signal(self, cmd, sig):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        for line in proc.stdout:  # the first run's line: generation is under way
            if re.match(r"\s+\d+/\d+", line):
                break
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=120)
        return proc.returncode, rest, err

    def test_signals_finish_the_run_and_record_why(self):
        for sig, code, status in ((signal.SIGTERM, 21, "timeout"), (signal.SIGINT, 23, "cancelled")):
            out = os.path.join(self.tmp, status)
            got, stdout, err = self._start_and_signal(
                [BENCH_INFER, "--config", self.config(runs=100000), "--out", out], sig)
            self.assertEqual(got, code, err)
            with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
                self.assertEqual(f.attrs["status"], status)
                self.assertEqual(f.attrs["reason"], f"received {sig.name}")
                runs = len(f["infer/runs"])
                self.assertGreaterEqual(runs, 1)
                self.assertEqual(f["infer/generated_ids"].shape[0], runs)
            self.assertEqual(read_json(os.path.join(out, "summary.json"))["status"], status)

    def test_bad_input_writes_nothing(self):
        out = os.path.join(self.tmp, "out")
        train = os.path.join(self.tmp, "train.yaml")
        with open(train, "w") as f:
            f.write("model: {preset: gpt2-tiny}\nbenchmark: train\n")
        r = self.run_infer(train, out)
        self.assertEqual(r.returncode, 2)
        self.assertIn("train.yaml:2:12: error: benchmark: is 'train', but this program runs 'infer' points "
                      "(run it with bench-train, or set benchmark: infer)", r.stderr)
        r = self.run_infer(self.config(), out, "--set", "infer.output_tokens=200")
        self.assertEqual(r.returncode, 2)
        self.assertIn("infer.output_tokens", r.stderr)
        self.assertIn("exceeds model.block_size (128)", r.stderr)
        r = self.run_infer(self.config(), out, "--set", "infer.dtype=fp16")
        self.assertEqual(r.returncode, 2)
        # The key is bench-infer's own (it named train.dtype).
        self.assertIn("error: infer.dtype: fp16 needs a GPU", r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_results_are_never_overwritten(self):
        out = os.path.join(self.tmp, "out")
        self.assertEqual(self.run_infer(self.config(runs=1), out).returncode, 0)
        before = open(os.path.join(out, "rank-00000.h5"), "rb").read()
        r = self.run_infer(self.config(runs=1), out)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertEqual(open(os.path.join(out, "rank-00000.h5"), "rb").read(), before)


class TwoRanks(InferCase):
    def test_every_rank_is_a_replica_with_its_own_prompts(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_infer(self.config(extra="launch: {ranks: 2}\n"), out, ranks=2)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f0, \
                h5py.File(os.path.join(out, "rank-00001.h5"), "r") as f1:
            self.assertEqual(f0.attrs["run_id"], f1.attrs["run_id"])
            self.assertEqual((f0.attrs["world_size"], f1.attrs["rank"]), (2, 1))
            self.assertEqual(len(f0["infer/runs"]), len(f1["infer/runs"]))
            runs = [pandas.DataFrame(f["infer/runs"][:]) for f in (f0, f1)]
        m = read_json(os.path.join(out, "summary.json"))["metrics"]
        # A run's time is the slowest rank's; throughput counts both ranks' tokens.
        slow = np.maximum(runs[0].e2e_s.values, runs[1].e2e_s.values)[1:]
        self.assertAlmostEqual(m["average_gen_time"], slow.mean(), places=12)
        self.assertAlmostEqual(m["output_tps"], 2 * 2 * 12 * 3 / slow.sum(), places=6)


class UntilPrecise(InferCase):
    """metrics.target_ci on a generation: infer.runs is the least, the timed runs go on until the
    mean generation time's interval is within the target (never before 10 runs) or
    metrics.max_seconds are spent, and the tables say which."""

    def timed_runs(self, out):
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            runs = pandas.DataFrame(f["infer/runs"][:])
        return runs[runs.warmup == 0]

    def extract(self, out, fmt):
        return subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--format", fmt],
                              capture_output=True, text=True, check=True, env=ENV).stdout

    def test_a_reachable_target_stops_at_the_first_look_after_10_runs(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_infer(self.config(runs=2, extra="launch: {ranks: 2}\n"), out,
                           "--set", "metrics.target_ci=0.9", ranks=2)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertEqual(len(self.timed_runs(out)), 10)
        row = next(csv.DictReader(io.StringIO(self.extract(out, "csv"))))
        self.assertEqual(row["target_met"], "true")
        half = (float(row["e2e_ci_high_s"]) - float(row["e2e_ci_low_s"])) / 2
        self.assertLessEqual(half / float(row["e2e_mean_s"]), 0.9)

    def test_an_unreachable_target_stops_at_the_budget_and_is_marked(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_infer(self.config(runs=2), out, "--set", "metrics.target_ci=1.0e-9",
                           "--set", "metrics.max_seconds=0.3")
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        timed = self.timed_runs(out)
        # At least infer.runs; past the budget by at most the run that crossed it.
        self.assertGreaterEqual(len(timed), 2)
        self.assertGreaterEqual(timed.e2e_s.sum(), 0.3)
        self.assertLess(timed.e2e_s.sum() - timed.e2e_s.iloc[-1], 0.3)
        row = next(csv.DictReader(io.StringIO(self.extract(out, "csv"))))
        self.assertEqual(row["target_met"], "false")
        self.assertIn("missed", self.extract(out, "table"))


class Sweep(InferCase):
    def test_sweep_extract_and_figures_with_a_training_point_beside(self):
        sweep = os.path.join(self.tmp, "sweep.yaml")
        with open(sweep, "w") as f:
            f.write("""\
name: mixed
base:
  model: {preset: gpt2-tiny}
  infer: {input_tokens: 16, output_tokens: 8, runs: 2}
  train: {steps: 3, warmup_steps: 1, micro_batch: 2}
  data: {seq_len: 16}
  eval: {steps: 0}
  metrics: {sample_interval_ms: 50}
axes:
  benchmark: [train, infer]
  infer.kv_cache: [static, none]
exclude:
  - {benchmark: train, infer.kv_cache: none}
""")
        out = os.path.join(self.tmp, "runs")
        bench_sweep = os.path.join(BIN, "bench-sweep")
        r = subprocess.run([bench_sweep, "run", sweep, "--out", out], capture_output=True, text=True,
                           timeout=300, env=ENV)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        csv = os.path.join(self.tmp, "all.csv")
        r = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "-o", csv], capture_output=True,
                           text=True, env=ENV)
        self.assertEqual(r.returncode, 0, r.stderr)
        t = pandas.read_csv(csv)
        self.assertEqual(sorted(t.benchmark), ["infer", "infer", "train"])
        self.assertTrue((t.status == "ok").all())
        infer, train = t[t.benchmark == "infer"], t[t.benchmark == "train"]
        for column in ("average_gen_time", "average_latency_per_token", "total_tps", "output_tps",
                       "average_ttft", "ttft_p50_s", "ttft_p99_s", "tpot_mean_s", "tpot_p99_s",
                       "prefill_tokens_per_second", "decode_tokens_per_second", "kv_cache_bytes", "mbu",
                       "infer.kv_cache"):
            self.assertTrue(infer[column].notna().all(), column)
            self.assertTrue(train[column].isna().all(), column)  # does not apply: empty
        for column in ("train_tokens_per_second", "train.micro_batch", "step_time_median_s"):
            self.assertTrue(train[column].notna().all(), column)
            self.assertTrue(infer[column].isna().all(), column)
        self.assertEqual(sorted(infer.kv_cache_bytes), [0, 2 * 2 * 4 * 16 * 4 * 1 * 24])
        # The summary.json bench-infer wrote agrees with the row bench-extract computed.
        for _, row in infer.iterrows():
            s = read_json(os.path.join(out, row.tag, "summary.json"))["metrics"]
            for name in ("average_ttft", "tpot_p50_s", "output_tps", "mbu"):
                self.assertAlmostEqual(row[name], s[name], delta=1e-9 * max(1, abs(s[name])), msg=name)

        tokens = os.path.join(self.tmp, "tokens.csv")
        r = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--series", "tokens", "-o", tokens],
                           capture_output=True, text=True, env=ENV)
        self.assertEqual(r.returncode, 0, r.stderr)
        tok = pandas.read_csv(tokens)
        self.assertEqual(len(tok), 2 * 8)  # inference points only, one row per position
        self.assertEqual(sorted(set(tok.position)), list(range(8)))
        self.assertTrue((tok.runs == 2).all())
        first = tok[tok.position == 0].set_index("tag").token_seconds_mean
        self.assertTrue(np.allclose(first.sort_index().values,
                                    infer.set_index("tag").average_ttft.sort_index().values))
        system = os.path.join(self.tmp, "system.csv")
        r = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--series", "system", "-o", system],
                           capture_output=True, text=True, env=ENV)
        self.assertEqual(r.returncode, 0, r.stderr)
        sys_t = pandas.read_csv(system)
        self.assertEqual(set(sys_t.tag), set(t.tag))
        self.assertTrue(sys_t.ram_used_mb.dropna().gt(0).all())
        # PACE's line graph (gnuplot is one of scripts/install-deps' packages).
        png = os.path.join(self.tmp, "tokens.png")
        r = subprocess.run([os.path.join(BIN, "bench-plot"), "-i", tokens, "-o", png, "--kind", "line",
                            "--x", "position", "--metric", "token_seconds_mean", "--hue", "infer.kv_cache"],
                           capture_output=True, text=True, env=ENV)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(os.path.getsize(png), 1000)


if __name__ == "__main__":
    unittest.main()
