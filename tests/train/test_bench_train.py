#!/usr/bin/python3
"""bench-train end to end: real runs of the binary, alone and under mpirun, read back with h5py.

Run by ctest (tests/CMakeLists.txt), one ctest per class:
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/train/test_bench_train.py SingleRank
"""
import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("SWEEPBENCH_BIN_DIR", os.path.join(SOURCE, "build", "release", "bin"))
BENCH_TRAIN = os.path.join(BIN, "bench-train")
sys.path.insert(0, os.path.join(SOURCE, "tests", "support"))
from e2e import peer_venv  # noqa: E402

ENV = dict(os.environ)
# mpirun as root (CI runs as root), and more ranks than the 2 cores CI has.
ENV.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")

TINY = """\
model: {preset: gpt2-tiny}
data: {source: text, path: %(text)s, seq_len: 32}
train: {steps: %(steps)d, warmup_steps: 2, micro_batch: 4, lr: 3.0e-3}
eval: {steps: 2}
metrics: {sample_interval_ms: 100}
"""


def make_text(path, lines=3000):
    """A text file with structure to learn: a small vocabulary of words in random order."""
    rng = np.random.default_rng(1)
    words = "the quick brown fox jumps over a lazy dog while the small cat sleeps".split()
    with open(path, "w") as f:
        for _ in range(lines):
            f.write(" ".join(rng.choice(words, 12)) + "\n")


def read_json(path):
    with open(path) as f:
        return json.load(f)


def documented_layout():
    """The tables of docs/results-format.md: {section: [(name, type)]}; a table's section
    ("/steps" of "## Table `/steps`") lists its members in order."""
    layout, section = {}, None
    for line in open(os.path.join(SOURCE, "docs", "results-format.md")):
        heading = re.match(r"## (Root attributes|Group `/(\w+)`|Table `/(\w+)`)", line)
        if heading:
            section = "/" if heading.group(1) == "Root attributes" else "/" + (heading.group(2) or heading.group(3))
            continue
        if line.startswith("## "):
            section = None
        row = re.match(r"\| `(\w+)` \| ([\w\[\]]+) \|", line)
        if section and row:
            layout.setdefault(section, []).append((row.group(1), row.group(2)))
    return layout


class BenchTrainCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-train-test-")
        self.text = os.path.join(self.tmp, "text.txt")
        make_text(self.text)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def config(self, steps=20, extra="", name="point"):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "config.yaml")
        with open(path, "w") as f:
            f.write(TINY % {"text": self.text, "steps": steps} + extra)
        return path

    def run_train(self, config, out, *extra, ranks=None, timeout=180):
        cmd = [BENCH_TRAIN, "--config", config, "--out", out, *extra]
        if ranks:
            cmd = ["mpirun", "-n", str(ranks), *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV)

    def assertDocumentedLayout(self, path):
        """Every attribute and dataset docs/results-format.md lists, with its type."""
        with h5py.File(path, "r") as f:
            for section, entries in documented_layout().items():
                node = f[section]
                if isinstance(node, h5py.Dataset):  # a table: a 1-D compound dataset
                    self.assertEqual(node.ndim, 1, section)
                    self.assertEqual(node.dtype.names, tuple(n for n, _ in entries), section)
                    for name, kind in entries:
                        self.assertEqual(node.dtype[name], np.dtype(kind), f"{section}.{name}")
                    continue
                for name, kind in entries:
                    if "[" in kind:  # a dataset: element type and one dimension
                        self.assertIn(name, node, f"{section}/{name} is documented but missing")
                        data = node[name]
                        self.assertEqual(data.ndim, 1, f"{section}/{name}")
                        base = kind.split("[")[0]
                        if base == "string":
                            self.assertEqual(data.dtype.kind, "O", f"{section}/{name}")
                        else:
                            self.assertEqual(data.dtype, np.dtype(base), f"{section}/{name}")
                    else:  # an attribute
                        self.assertIn(name, node.attrs, f"{section} attribute {name} is documented but missing")
                        value = node.attrs[name]
                        if kind == "string":
                            self.assertIsInstance(value, str, f"{section} attribute {name}")
                        else:
                            self.assertEqual(np.asarray(value).dtype, np.dtype(kind), f"{section} attribute {name}")
            # And nothing undocumented.
            documented = documented_layout()
            self.assertEqual(set(f.attrs), {n for n, _ in documented["/"]})
            for group in ("eval", "memory", "samples"):
                names = {n for n, _ in documented["/" + group]}
                self.assertEqual(set(f[group].keys()) | set(f[group].attrs), names, group)


class SingleRank(BenchTrainCase):
    def test_runs_learns_and_writes_the_documented_layout(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_train(self.config(steps=40), out)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertEqual(sorted(os.listdir(out)), ["rank-00000.h5", "summary.json"])
        path = os.path.join(out, "rank-00000.h5")
        self.assertDocumentedLayout(path)
        with h5py.File(path, "r") as f:
            a = f.attrs
            self.assertEqual(a["status"], "ok")
            self.assertEqual(a["reason"], "")
            self.assertEqual((a["rank"], a["world_size"], a["local_rank"]), (0, 1, 0))
            self.assertEqual(a["tag"], "point")
            self.assertEqual(a["parameter_count"], 141056)
            self.assertEqual(a["device_type"], "cpu")
            self.assertEqual(a["peak_tflops_source"], "none")
            self.assertIn("model:", a["config_yaml"])
            self.assertEqual(len(a["config_hash"]), 64)
            steps = f["steps"]
            self.assertEqual(list(steps["step"][:]), list(range(40)))
            self.assertEqual(list(steps["measured"][:4]), [0, 0, 1, 1])
            loss = steps["loss"][:]
            self.assertLess(loss[-5:].mean(), loss[:5].mean() - 1.0, "the loss must go down")
            self.assertTrue((steps["tokens"][:] == 4 * 32).all())
            for phase in ("forward_s", "backward_s", "optimizer_s"):
                self.assertTrue((steps[phase][:] > 0).all(), phase)
            # The phases fit inside the step.
            parts = sum(steps[p][:] for p in ("data_s", "forward_s", "backward_s", "comm_s", "optimizer_s"))
            self.assertTrue((parts <= steps["total_s"][:] * 1.0001).all())
            self.assertEqual(f["eval"].attrs["steps"], 2)
            self.assertEqual(f["eval"].attrs["ran"], 1)
            self.assertLess(f["eval"].attrs["loss"], 4.0)
            self.assertEqual(list(f["memory/stage"].asstr()[:]), ["before_init", "init", "train", "eval"])
            self.assertEqual(f["memory"].attrs["stage_source"], "rss")
            # The counted tensors (results-format.md): none before the model, exactly the model
            # states of one rank after init (16 bytes a parameter, metrics.md), more at the step's
            # peak; the summary's mem_alloc_peak_bytes is the largest stage peak.
            alloc_end, alloc_peak = f["memory/alloc_end_bytes"][:], f["memory/alloc_peak_bytes"][:]
            psi = int(f.attrs["parameter_count"])
            self.assertEqual(alloc_end[0], 0)
            self.assertEqual(alloc_end[1], 16 * psi)
            self.assertGreater(alloc_peak[2], alloc_end[1])
            counted_peak = int(alloc_peak.max())
            self.assertGreaterEqual(len(f["samples/time_s"]), 2)
            self.assertEqual(f["samples"].attrs["device_source"], "rss")
        summary = read_json(os.path.join(out, "summary.json"))
        self.assertEqual(summary["status"], "ok")
        self.assertEqual(summary["measured_steps"], 38)
        m = summary["metrics"]
        self.assertAlmostEqual(m["train_tokens_per_second"] / m["train_samples_per_second"], 32, places=6)
        self.assertAlmostEqual(m["perplexity"], np.exp(m["eval_loss"]), places=6)
        self.assertNotIn("mfu", m)  # a CPU has no peak unless one is configured
        self.assertEqual(m["mem_alloc_peak_bytes"], counted_peak)
        # What was printed is what was written.
        printed = re.search(r"train_tokens_per_second\s+([0-9.e+]+)", r.stdout).group(1)
        self.assertAlmostEqual(float(printed), m["train_tokens_per_second"], delta=1e-5 * m["train_tokens_per_second"])
        self.assertIn("# OK", r.stdout)

    def test_a_configured_peak_gives_mfu(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_train(self.config(steps=6, extra="hardware: {peak_tflops: 0.5}\n"), out)
        self.assertEqual(r.returncode, 0, r.stderr)
        m = read_json(os.path.join(out, "summary.json"))["metrics"]
        self.assertAlmostEqual(m["mfu"], m["tflops_per_device"] / 0.5, places=9)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            self.assertEqual(f.attrs["peak_tflops_source"], "config")

    def test_the_captured_step_trains_as_the_eager_one(self):
        # train.cuda_graph: on a CPU the step runs eagerly through the captured step's fixed
        # tensors, its learning rate and AdamW's step count on the device: the same training as
        # without, step by step (with gradient accumulation and clipping).
        runs = {}
        for graph in ("false", "true"):
            out = os.path.join(self.tmp, f"graph-{graph}")
            r = self.run_train(self.config(steps=12), out, "--set", "train.grad_accum=2",
                               "--set", "train.grad_clip=0.5", "--set", f"train.cuda_graph={graph}")
            self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
            runs[graph] = h5py.File(os.path.join(out, "rank-00000.h5"), "r")
            self.addCleanup(runs[graph].close)
        eager, graph = runs["false"], runs["true"]
        np.testing.assert_allclose(graph["steps"]["loss"][:], eager["steps"]["loss"][:], rtol=0, atol=1e-6)
        np.testing.assert_allclose(graph["steps"]["grad_norm"][:], eager["steps"]["grad_norm"][:], rtol=1e-6)
        # Not bit for bit: the captured step's learning rate is an fp32 tensor (what the GPU's
        # fused AdamW reads), where the CPU's kernel takes the number in double.
        self.assertAlmostEqual(graph["eval"].attrs["loss"], eager["eval"].attrs["loss"], delta=1e-6)
        # What a captured step cannot hold is refused before anything runs, saying what to do.
        for sets, message, ranks in ((("launch.ranks=2",), "a captured step is one rank's", 2),
                                     (("train.zero_stage=1",), "needs train.zero_stage: 0", None),
                                     (("train.dtype=fp16",), "fp16's dynamic loss scaling", None),
                                     (("train.offload_optimizer=true",), "an offloaded optimizer", None),
                                     (("metrics.profile_steps='3'",), "a profiled step of a graph", None),
                                     (("train.warmup_steps=1",), "make train.warmup_steps at least 2", None)):
            out = os.path.join(self.tmp, "refused")
            args = ["--set", "train.cuda_graph=true"] + [a for kv in sets for a in ("--set", kv)]
            r = self.run_train(self.config(steps=6), out, *args, ranks=ranks)
            self.assertEqual(r.returncode, 2, r.stderr + r.stdout)
            self.assertIn("train.cuda_graph", r.stderr)
            self.assertIn(message, r.stderr)
            self.assertIn("set train.cuda_graph: false", r.stderr)
            self.assertFalse(os.path.exists(out))

    def test_evaluation_can_be_switched_off(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_train(self.config(steps=4), out, "--set", "eval.steps=0")
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            self.assertEqual(f["eval"].attrs["ran"], 0)
            self.assertEqual(list(f["memory/stage"].asstr()[:]), ["before_init", "init", "train"])

    def test_token_files_raw_and_llmc(self):
        tokens = np.random.default_rng(2).integers(0, 512, 20000)
        raw = os.path.join(self.tmp, "tokens.u16")
        tokens.astype("<u2").tofile(raw)
        llmc = os.path.join(self.tmp, "tokens.bin")
        header = np.zeros(256, dtype="<i4")
        header[:3] = (20240520, 1, len(tokens))
        with open(llmc, "wb") as f:
            f.write(header.tobytes())
            f.write(tokens.astype("<u2").tobytes())
        for path, expect in ((raw, "raw, uint16"), (llmc, "llm.c, uint16")):
            out = os.path.join(self.tmp, os.path.basename(path) + ".out")
            r = self.run_train(self.config(steps=4), out, "--set", "data.source=tokens", "--set", f"data.path={path}")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(expect, r.stdout)


class TwoRanks(BenchTrainCase):
    def test_data_parallel_ranks_end_bitwise_identical(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_train(self.config(steps=20, extra="launch: {ranks: 2}\n"), out, ranks=2)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertEqual(sorted(os.listdir(out)), ["rank-00000.h5", "rank-00001.h5", "summary.json"])
        files = [h5py.File(os.path.join(out, f"rank-0000{i}.h5"), "r") for i in range(2)]
        for i, f in enumerate(files):
            self.assertDocumentedLayout(f.filename)
            self.assertEqual((f.attrs["rank"], f.attrs["world_size"], f.attrs["status"]), (i, 2, "ok"))
            self.assertLess(f["steps"]["loss"][-3:].mean(), f["steps"]["loss"][:3].mean())
            self.assertGreater(f["steps"]["comm_s"][2:].min(), 0)  # the all-reduce ran
        # The ranks of a node choose their threads from one figure, the node's (bench_run.h).
        self.assertEqual(files[0].attrs["cpus_busy_at_start"], files[1].attrs["cpus_busy_at_start"])
        self.assertGreaterEqual(files[0].attrs["cpus_busy_at_start"], 0)
        self.assertEqual(files[0].attrs["threads"], files[1].attrs["threads"])
        digests = [f.attrs["parameter_sha256"] for f in files]
        self.assertEqual(len(digests[0]), 64)
        self.assertEqual(digests[0], digests[1], "ranks must end with bitwise identical parameters")
        # Each rank trains on its own shard: their step losses differ.
        self.assertFalse(np.array_equal(files[0]["steps"]["loss"][:], files[1]["steps"]["loss"][:]))
        # The gradient norm is global: equal on both ranks.
        np.testing.assert_array_equal(files[0]["steps"]["grad_norm"][:], files[1]["steps"]["grad_norm"][:])
        self.assertEqual(files[0]["eval"].attrs["loss"], files[1]["eval"].attrs["loss"])
        summary = read_json(os.path.join(out, "summary.json"))
        self.assertEqual(summary["world_size"], 2)
        # Throughput counts both ranks' tokens over the slowest rank's step times.
        slowest = np.maximum(files[0]["steps"]["total_s"][2:], files[1]["steps"]["total_s"][2:])
        self.assertAlmostEqual(summary["metrics"]["train_tokens_per_second"],
                               2 * 4 * 32 * len(slowest) / slowest.sum(), delta=1e-6 * summary["metrics"]["train_tokens_per_second"])

    def test_llama_with_activation_checkpointing(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_train(self.config(steps=8), out, "--set", "model.preset=llama-tiny",
                           "--set", "train.activation_checkpointing=true", "--set", "train.grad_accum=2", ranks=2)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f0, h5py.File(os.path.join(out, "rank-00001.h5"), "r") as f1:
            self.assertEqual(f0.attrs["parameter_count"], 158016)
            self.assertEqual(f0.attrs["parameter_sha256"], f1.attrs["parameter_sha256"])
            self.assertTrue((f0["steps"]["tokens"][:] == 2 * 4 * 32).all())


class Failures(BenchTrainCase):
    def test_out_of_memory_is_a_result(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_train(self.config(steps=5), out, "--set", "train.micro_batch=4096", "--set", "data.seq_len=128",
                           "--set", "data.source=synthetic", "--max-memory-mb", "300")
        self.assertEqual(r.returncode, 20, r.stderr + r.stdout)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            self.assertEqual(f.attrs["status"], "oom")
            self.assertEqual(f.attrs["rank_status"], "oom")
            self.assertIn("allocate", f.attrs["reason"])
            self.assertEqual(len(f["steps"]["step"]), 0)
        self.assertEqual(read_json(os.path.join(out, "summary.json"))["status"], "oom")
        self.assertIn("# OOM: ", r.stdout)

    def test_a_peer_out_of_memory_stops_every_rank(self):
        # Two programs in one MPI job: only rank 1 is capped, so only rank 1 runs out of memory.
        out = os.path.join(self.tmp, "out")
        config = self.config(steps=5)
        common = ["--config", config, "--out", out, "--set", "data.source=synthetic",
                  "--set", "train.micro_batch=256", "--set", "data.seq_len=128"]
        cmd = ["mpirun", "-n", "1", BENCH_TRAIN, *common, ":", "-n", "1", BENCH_TRAIN, *common, "--max-memory-mb", "60"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=ENV)
        self.assertEqual(r.returncode, 20, r.stderr + r.stdout)
        f0 = h5py.File(os.path.join(out, "rank-00000.h5"), "r")
        f1 = h5py.File(os.path.join(out, "rank-00001.h5"), "r")
        self.assertEqual((f0.attrs["status"], f0.attrs["rank_status"]), ("oom", "ok"))
        self.assertEqual((f1.attrs["status"], f1.attrs["rank_status"]), ("oom", "oom"))
        self.assertTrue(f0.attrs["reason"].startswith("rank 1: "), f0.attrs["reason"])
        self.assertEqual(len(f0["steps"]["step"]), len(f1["steps"]["step"]))

    def _start_and_signal(self, cmd, sig):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        # Wait for the first progress line: training is under way.
        for line in proc.stdout:
            if re.match(r"\s+\d+/\d+", line):
                break
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=120)
        return proc.returncode, rest, err

    def test_sigterm_finishes_the_step_and_records_timeout(self):
        out = os.path.join(self.tmp, "out")
        config = self.config(steps=100000, extra="metrics.log_every: 5\n")
        code, stdout, err = self._start_and_signal([BENCH_TRAIN, "--config", config, "--out", out], signal.SIGTERM)
        self.assertEqual(code, 21, err)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            self.assertEqual(f.attrs["status"], "timeout")
            self.assertEqual(f.attrs["reason"], "received SIGTERM")
            done = len(f["steps"]["step"])
            self.assertGreaterEqual(done, 5)
            self.assertLess(done, 100000)
            self.assertEqual(list(f["steps"]["step"][:]), list(range(done)))  # the last step completed
        self.assertIn("# TIMEOUT: ", stdout)

    def test_slurm_warning_signal_reaches_every_rank_under_mpirun(self):
        out = os.path.join(self.tmp, "out")
        config = self.config(steps=100000, extra="metrics.log_every: 5\n")
        # mpirun forwards SIGUSR1 to the ranks (what SLURM's --signal sends before the time limit).
        code, stdout, err = self._start_and_signal(
            ["mpirun", "-n", "2", BENCH_TRAIN, "--config", config, "--out", out], signal.SIGUSR1)
        self.assertEqual(code, 21, err + stdout)
        for i in range(2):
            with h5py.File(os.path.join(out, f"rank-0000{i}.h5"), "r") as f:
                self.assertEqual(f.attrs["status"], "timeout")
                self.assertIn("SIGUSR1", f.attrs["reason"])

    def test_a_warning_during_start_up_is_a_timeout_with_a_result(self):
        # SLURM's warning can come while the ranks still start (slow file systems, big models).
        # The signal is blocked in the child before bench-train runs, so it is pending from the
        # first instruction on, and with --env-keep it must also survive the restart.
        config = self.config(steps=100000)
        block = lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        for keep in ([], ["--env-keep", "PATH,HOME,OMPI_*"]):
            with self.subTest(env_keep=bool(keep)):
                out = os.path.join(self.tmp, "out-keep" if keep else "out")
                proc = subprocess.Popen([BENCH_TRAIN, "--config", config, "--out", out, *keep],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=ENV, preexec_fn=block)
                proc.send_signal(signal.SIGUSR1)
                stdout, err = proc.communicate(timeout=120)
                self.assertEqual(proc.returncode, 21, err + stdout)
                with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
                    self.assertEqual(f.attrs["status"], "timeout")
                    self.assertEqual(f.attrs["reason"], "received SIGUSR1")
                    # Seen at the first step's end: that step completes, as after any warning.
                    self.assertEqual(list(f["steps"]["step"][:]), [0])
                self.assertIn("# TIMEOUT: ", stdout)


class Zero(BenchTrainCase):
    # Every stage makes the same updates as stage 0, summed in another order (the reduction of
    # gradients over ranks, the gradient norm over shards), so equal within floating-point
    # tolerance, not bitwise.
    def run_stages(self, ranks, stages, extra="", sets=()):
        runs = {}
        for stage in stages:
            name = "".join(c if c.isalnum() else "_" for c in "".join(sets))
            out = os.path.join(self.tmp, f"z{ranks}-{stage}-{name}")
            r = self.run_train(self.config(steps=10, extra=f"launch: {{ranks: {ranks}}}\n" + extra), out,
                               "--set", f"train.zero_stage={stage}", *sets, ranks=ranks)
            self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
            runs[stage] = (out, [h5py.File(os.path.join(out, f"rank-{i:05d}.h5"), "r") for i in range(ranks)])
            self.addCleanup(lambda files=runs[stage][1]: [f.close() for f in files])
        return runs

    def assertSameTraining(self, runs, stage):
        for f0, f in zip(runs[0][1], runs[stage][1]):
            np.testing.assert_allclose(f["steps"]["loss"][:], f0["steps"]["loss"][:], rtol=0, atol=1e-5,
                                       err_msg=f"stage {stage}")
            np.testing.assert_allclose(f["steps"]["grad_norm"][:], f0["steps"]["grad_norm"][:], rtol=1e-5,
                                       err_msg=f"stage {stage}")
            self.assertAlmostEqual(f["eval"].attrs["loss"], f0["eval"].attrs["loss"], delta=1e-5)
            self.assertGreater(f["steps"]["comm_s"][2:].min(), 0)  # the collectives ran
        # Every rank ends with the whole, identical model, the same as stage 0's within tolerance.
        self.assertEqual(len({f.attrs["parameter_sha256"] for f in runs[stage][1]}), 1)

    def test_every_stage_trains_as_stage_0_does_on_2_and_3_ranks(self):
        for ranks in (2, 3):
            runs = self.run_stages(ranks, (0, 1, 2, 3))
            for stage in (1, 2, 3):
                self.assertSameTraining(runs, stage)
            # The model states each rank holds, against the accounting (docs/metrics.md).
            psi = runs[0][1][0].attrs["parameter_count"]
            accounting = {0: 16 * psi, 1: psi * (8 + 12 / ranks), 2: psi * (4 + 12 / ranks), 3: 16 * psi / ranks}
            held = []
            for stage, (out, files) in runs.items():
                summary = read_json(os.path.join(out, "summary.json"))
                self.assertAlmostEqual(summary["metrics"]["mem_model_states_bytes"], accounting[stage], delta=1)
                for f in files:
                    self.assertEqual(f.attrs["zero_stage"], stage)
                    self.assertAlmostEqual(f.attrs["model_state_bytes"] / accounting[stage], 1.0, delta=0.1,
                                           msg=f"stage {stage}, {ranks} ranks")
                held.append(files[0].attrs["model_state_bytes"])
            self.assertEqual(held, sorted(held, reverse=True))

    def test_stages_2_and_3_with_small_buckets_accumulation_and_checkpointing(self):
        # Buckets of 16 KiB cut gpt2-tiny's groups into many; two micro-batches per step reduce
        # each bucket twice; recomputed blocks gather their parameters again in backward.
        runs = self.run_stages(2, (0, 2, 3), extra="", sets=(
            "--set", "train.bucket_mb=0.015625", "--set", "train.grad_accum=2",
            "--set", "train.activation_checkpointing=true", "--set", "train.dtype=bf16"))
        for stage in (2, 3):
            for f0, f in zip(runs[0][1], runs[stage][1]):
                # bf16 products round differently where the order of additions differs.
                np.testing.assert_allclose(f["steps"]["loss"][:], f0["steps"]["loss"][:], rtol=0, atol=2e-3,
                                           err_msg=f"stage {stage}")

    def test_overlapped_communication_trains_as_blocking_does(self):
        # train.overlap_comm: buckets reduced on a worker thread while backward goes on, blocks
        # gathered ahead; 16 KiB buckets and two micro-batches put many in flight at once.
        sets = ("--set", "train.bucket_mb=0.015625", "--set", "train.grad_accum=2",
                "--set", "train.activation_checkpointing=true")
        for ranks in (2, 3):
            blocking = self.run_stages(ranks, (0,), sets=sets)
            overlapped = self.run_stages(ranks, (2, 3), sets=sets + ("--set", "train.overlap_comm=true"))
            for stage in (2, 3):
                for f0, f in zip(blocking[0][1], overlapped[stage][1]):
                    np.testing.assert_allclose(f["steps"]["loss"][:], f0["steps"]["loss"][:], rtol=0, atol=1e-5,
                                               err_msg=f"stage {stage}, {ranks} ranks")
                    np.testing.assert_allclose(f["steps"]["grad_norm"][:], f0["steps"]["grad_norm"][:], rtol=1e-5)
                self.assertEqual(len({f.attrs["parameter_sha256"] for f in overlapped[stage][1]}), 1)

    def test_offloaded_optimizer_trains_as_without_at_every_stage(self):
        # On a CPU the "device" is host memory too, but the step takes the offloaded path: the
        # moments and a copy of the values apart, the gradient brought over, the values copied back.
        plain = self.run_stages(2, (0, 1, 2, 3))
        offloaded = self.run_stages(2, (0, 1, 2, 3), sets=("--set", "train.offload_optimizer=true"))
        for stage in (0, 1, 2, 3):
            for f0, f in zip(plain[stage][1], offloaded[stage][1]):
                np.testing.assert_allclose(f["steps"]["loss"][:], f0["steps"]["loss"][:], rtol=0, atol=1e-6)
                self.assertEqual(f.attrs["offload_optimizer"], 1)
            summary = read_json(os.path.join(offloaded[stage][0], "summary.json"))
            psi = offloaded[stage][1][0].attrs["parameter_count"]
            moments = 8 * psi / (2 if stage >= 1 else 1)
            without = read_json(os.path.join(plain[stage][0], "summary.json"))["metrics"]["mem_model_states_bytes"]
            self.assertAlmostEqual(summary["metrics"]["mem_model_states_bytes"], without - moments, delta=1)
            for f in offloaded[stage][1]:
                self.assertAlmostEqual(f.attrs["model_state_bytes"] / (without - moments), 1.0, delta=0.1)

    def test_the_chunked_loss_trains_as_the_whole_logits(self):
        # train.fused_loss with ZeRO-2 (its hooks see the head's gradient from the chunked loss).
        whole = self.run_stages(2, (0, 2))
        chunked = self.run_stages(2, (0, 2), sets=("--set", "train.fused_loss=true"))
        for stage in (0, 2):
            for f0, f in zip(whole[stage][1], chunked[stage][1]):
                np.testing.assert_allclose(f["steps"]["loss"][:], f0["steps"]["loss"][:], rtol=0, atol=1e-5)
                np.testing.assert_allclose(f["steps"]["grad_norm"][:], f0["steps"]["grad_norm"][:], rtol=1e-5)
                self.assertAlmostEqual(f["eval"].attrs["loss"], f0["eval"].attrs["loss"], delta=1e-5)

    def test_the_cpu_kernels_train_as_libtorchs_ops(self):
        # train.cpu_kernels (on by default) against libtorch's ops alone, at stages 0 and 3 and
        # with the chunked loss: the same losses to the float rounding their exponentials differ
        # by, grown over the steps.
        ops = self.run_stages(2, (0, 3), sets=("--set", "train.cpu_kernels=false"))
        kernels = self.run_stages(2, (0, 3))
        chunked = self.run_stages(2, (0,), sets=("--set", "train.fused_loss=true"))
        # train.gpu_kernels names the GPU's kernels: on CPUs it changes nothing.
        gpu_key = self.run_stages(2, (0,), sets=("--set", "train.gpu_kernels=true"))
        for f0, f in zip(kernels[0][1], gpu_key[0][1]):
            np.testing.assert_allclose(f["steps"]["loss"][:], f0["steps"]["loss"][:], rtol=0, atol=1e-5)
        for stage in (0, 3):
            for f0, f in zip(ops[stage][1], kernels[stage][1]):
                np.testing.assert_allclose(f["steps"]["loss"][:], f0["steps"]["loss"][:], rtol=0, atol=1e-4)
                np.testing.assert_allclose(f["steps"]["grad_norm"][:], f0["steps"]["grad_norm"][:], rtol=1e-3)
        for f0, f in zip(kernels[0][1], chunked[0][1]):
            np.testing.assert_allclose(f["steps"]["loss"][:], f0["steps"]["loss"][:], rtol=0, atol=1e-5)

    def test_one_rank_runs_stage_0(self):
        out = os.path.join(self.tmp, "one")
        r = self.run_train(self.config(steps=4), out, "--set", "train.zero_stage=3")
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            psi = f.attrs["parameter_count"]
            self.assertAlmostEqual(f.attrs["model_state_bytes"] / (16 * psi), 1.0, delta=0.01)


# Hugging Face peft's count for the same GPT-2 shape and targets, in the peer venv
# (scripts/peer-venv: transformers, peft from PyPI).
PEFT_COUNT = """
import json, sys
from transformers import GPT2Config, GPT2LMHeadModel
from peft import LoraConfig, get_peft_model
shape, r, targets = json.loads(sys.argv[1])
model = GPT2LMHeadModel(GPT2Config(n_layer=shape[0], n_embd=shape[1], n_head=shape[2], n_inner=shape[3],
                                   vocab_size=shape[4], n_positions=shape[5]))
base = sum(p.numel() for p in model.parameters())
adapted = get_peft_model(model, LoraConfig(r=r, lora_alpha=16, target_modules=targets, fan_in_fan_out=True))
trainable, total = adapted.get_nb_trainable_parameters()
print(json.dumps({"base": base, "trainable": trainable, "total": total}))
"""
# bench-train's projection names and the modules of Hugging Face's GPT-2 they are.
HF_GPT2_NAMES = {"c_attn": "c_attn", "attn_proj": "attn.c_proj", "c_fc": "c_fc", "mlp_proj": "mlp.c_proj"}
GPT2_TINY = (2, 64, 4, 256, 512, 128)  # n_layer, n_embd, n_head, ffn, vocab, block (config/model_shapes.cc)


class Lora(BenchTrainCase):
    def test_trainable_parameters_are_the_formula_and_what_peft_counts(self):
        venv = peer_venv()
        n_layer, d, _, ffn, _, _ = GPT2_TINY
        dims = {"c_attn": (d, 3 * d), "attn_proj": (d, d), "c_fc": (d, ffn), "mlp_proj": (ffn, d)}
        for r, targets in ((8, None), (4, ["c_attn", "attn_proj", "c_fc", "mlp_proj"]), (2, ["c_fc", "mlp_proj"])):
            out = os.path.join(self.tmp, f"lora{r}")
            sets = ["--set", "train.peft=lora", "--set", f"lora.r={r}"]
            if targets:
                sets += ["--set", f"lora.targets=[{', '.join(targets)}]"]
            run = self.run_train(self.config(steps=4), out, *sets)
            self.assertEqual(run.returncode, 0, run.stderr + run.stdout)
            chosen = targets or ["c_attn"]  # peft's default for GPT-2
            formula = n_layer * sum(r * sum(dims[t]) for t in chosen)
            peft = json.loads(subprocess.run(
                [os.path.join(venv, "bin", "python"), "-c", PEFT_COUNT,
                 json.dumps([GPT2_TINY, r, [HF_GPT2_NAMES[t] for t in chosen]])],
                capture_output=True, text=True, check=True, timeout=300).stdout)
            with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
                self.assertEqual(f.attrs["trainable_parameters"], formula)
                self.assertEqual(f.attrs["trainable_parameters"], peft["trainable"])
                self.assertEqual(f.attrs["parameter_count"], peft["total"])
                self.assertEqual(f.attrs["parameter_count"] - formula, peft["base"])
            summary = read_json(os.path.join(out, "summary.json"))
            self.assertEqual(summary["metrics"]["trainable_parameters"], formula)

    def test_step_0_is_the_base_model_and_zero_stages_hold_what_the_accounting_says(self):
        base_out = os.path.join(self.tmp, "base")
        run = self.run_train(self.config(steps=4, extra="launch: {ranks: 2}\n"), base_out, ranks=2)
        self.assertEqual(run.returncode, 0, run.stderr + run.stdout)
        with h5py.File(os.path.join(base_out, "rank-00000.h5"), "r") as f:
            base_loss = f["steps"]["loss"][:]
            psi_base = f.attrs["parameter_count"]
        losses = {}
        for stage in (0, 1, 2):
            out = os.path.join(self.tmp, f"lora-z{stage}")
            run = self.run_train(self.config(steps=10, extra="launch: {ranks: 2}\n"), out,
                                 "--set", "train.peft=lora", "--set", "lora.targets=[c_attn, c_fc]",
                                 "--set", f"train.zero_stage={stage}", ranks=2)
            self.assertEqual(run.returncode, 0, run.stderr + run.stdout)
            summary = read_json(os.path.join(out, "summary.json"))
            with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
                losses[stage] = f["steps"]["loss"][:]
                adapters = f.attrs["trainable_parameters"]
                self.assertEqual(f.attrs["parameter_count"], psi_base + adapters)
                # B starts at zero: the first step's loss is the base model's.
                self.assertAlmostEqual(losses[stage][0], base_loss[0], delta=1e-6)
                # Frozen weights 4 bytes on every rank, the adapters per the stage's accounting.
                accounting = 4 * psi_base + adapters * {0: 16, 1: 8 + 12 / 2, 2: 4 + 12 / 2}[stage]
                self.assertAlmostEqual(summary["metrics"]["mem_model_states_bytes"], accounting, delta=1)
                self.assertAlmostEqual(f.attrs["model_state_bytes"] / accounting, 1.0, delta=0.1)
                # No weight gradients for the frozen matrices: 4 N + 6 N_lora + attention.
                n = psi_base - 128 * 64  # without the position embeddings
                self.assertEqual(f.attrs["flops_per_token"], 4 * n + 6 * adapters + 12 * 2 * 64 * 32)
        self.assertLess(losses[0][-1], losses[0][0])  # the adapters learn
        for stage in (1, 2):
            np.testing.assert_allclose(losses[stage], losses[0], rtol=0, atol=1e-5)

    def test_checkpointing_trains_the_adapters_as_without_it(self):
        # The first block's input is the frozen embedding's output, which needs no gradient: the
        # checkpointed blocks must still be recorded, or the adapters learn nothing (they failed
        # with "element 0 of tensors does not require grad" until 2026-11-27).
        losses = {}
        for ckpt in ("false", "true"):
            out = os.path.join(self.tmp, f"lora-ckpt-{ckpt}")
            run = self.run_train(self.config(steps=10), out, "--set", "train.peft=lora",
                                 "--set", "lora.targets=[c_attn, c_fc]",
                                 "--set", f"train.activation_checkpointing={ckpt}")
            self.assertEqual(run.returncode, 0, run.stderr + run.stdout)
            with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
                losses[ckpt] = f["steps"]["loss"][:]
                norms = f["steps"]["grad_norm"][:]
            self.assertTrue((norms > 0).all(), f"checkpointing {ckpt}: the adapters got no gradient")
        self.assertLess(losses["true"][-1], losses["true"][0])
        np.testing.assert_allclose(losses["true"], losses["false"], rtol=0, atol=1e-5)

    def test_bad_lora_settings_are_refused_before_any_work(self):
        for sets, message in (
                (["--set", "lora.targets=[c_attn, q_proj]"], "'q_proj' is not a projection of a gpt2 block"),
                (["--set", "lora.targets=[]"], "is empty: LoRA would train nothing"),
                (["--set", "lora.dropout=1"], "must be below 1"),
                (["--set", "train.zero_stage=3"], "3 with train.peft: lora is not supported")):
            out = os.path.join(self.tmp, "bad")
            r = self.run_train(self.config(), out, "--set", "train.peft=lora", *sets)
            self.assertEqual(r.returncode, 2, r.stderr + r.stdout)
            self.assertIn(message, r.stderr)
            self.assertFalse(os.path.exists(out))


class TensorParallel(BenchTrainCase):
    # Megatron-style tensor parallelism splits every block's products over t ranks: the same
    # model and data as one rank, the sums in another order, so equal within tolerance.
    def train(self, name, ranks, *sets, preset="gpt2-tiny"):
        out = os.path.join(self.tmp, name)
        r = self.run_train(self.config(steps=8, extra=f"launch: {{ranks: {ranks}}}\n", name=name), out,
                           "--set", f"model.preset={preset}", *sets, ranks=ranks if ranks > 1 else None)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        files = [h5py.File(os.path.join(out, f"rank-{i:05d}.h5"), "r") for i in range(ranks)]
        self.addCleanup(lambda: [f.close() for f in files])
        return files, read_json(os.path.join(out, "summary.json"))

    def assertSameTraining(self, a, b):
        np.testing.assert_allclose(b["steps"]["loss"][:], a["steps"]["loss"][:], rtol=0, atol=1e-5)
        np.testing.assert_allclose(b["steps"]["grad_norm"][:], a["steps"]["grad_norm"][:], rtol=1e-5)
        self.assertAlmostEqual(b["eval"].attrs["loss"], a["eval"].attrs["loss"], delta=1e-5)

    def test_a_bare_mpirun_checks_and_records_the_ranks_it_runs(self):
        # `mpirun -n 2 bench-train` of a config that says launch.ranks: 1 (the
        # default) was refused for tensor_parallel 2 "does not divide launch.ranks (1)".
        out = os.path.join(self.tmp, "bare")
        r = self.run_train(self.config(steps=4, extra="launch: {tensor_parallel: 2}\n"), out, ranks=2)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        self.assertIn("launch.ranks is 1 but 2 rank(s) are running; the point runs, and its results "
                      "record, launch.ranks: 2", r.stderr)
        with h5py.File(os.path.join(out, "rank-00001.h5"), "r") as f:
            self.assertEqual(f.attrs["tensor_parallel"], 2)
            self.assertIn("ranks: 2\n", f.attrs["config_yaml"])

    def test_two_ranks_split_each_block_and_train_as_one_rank_does(self):
        for preset in ("gpt2-tiny", "llama-tiny"):
            (one,), _ = self.train(f"{preset}-1", 1, preset=preset)
            split, summary = self.train(f"{preset}-tp2", 2, "--set", "launch.tensor_parallel=2", preset=preset)
            for f in split:
                self.assertSameTraining(one, f)
                self.assertEqual(f.attrs["tensor_parallel"], 2)
                self.assertEqual(f.attrs["parameter_count"], one.attrs["parameter_count"])
                # Each rank holds half of every projection and all the rest.
                self.assertLess(f.attrs["rank_parameters"], one.attrs["parameter_count"])
                self.assertGreater(f["steps"]["comm_s"][2:].min(), 0)  # the group's all-reduces
            # One replica: a step is one micro batch of tokens, not one per rank.
            m = summary["metrics"]
            self.assertAlmostEqual(m["train_tokens_per_second"] * m["step_time_mean_s"], 4 * 32, delta=1e-6)
            self.assertEqual(split[0].attrs["rank_parameters"], split[1].attrs["rank_parameters"])
            self.assertAlmostEqual(split[0].attrs["model_state_bytes"] / m["mem_model_states_bytes"], 1.0,
                                   delta=0.1)

    def test_four_ranks_are_two_replicas_of_two_and_combine_with_zero(self):
        data_parallel, _ = self.train("dp2", 2)
        for stage, overlap in ((0, "false"), (1, "false"), (3, "false"), (3, "true")):
            files, summary = self.train(f"tp2dp2z{stage}{overlap}", 4, "--set", "launch.tensor_parallel=2",
                                        "--set", f"train.zero_stage={stage}", "--set",
                                        f"train.overlap_comm={overlap}")
            # Ranks 0 and 1 are replica 0, reading rank 0's batches of the plain 2-rank run.
            for i, f in enumerate(files):
                self.assertSameTraining(data_parallel[i // 2], f)
                self.assertAlmostEqual(f.attrs["model_state_bytes"] / summary["metrics"]["mem_model_states_bytes"],
                                       1.0, delta=0.1, msg=f"stage {stage}")

    def test_impossible_splits_are_refused_before_any_work(self):
        # Checked against the ranks running: a launch.ranks: 2 config run by
        # hand as one process has 1 rank, which tensor_parallel 2 does not divide.
        out = os.path.join(self.tmp, "alone")
        r = self.run_train(self.config(extra="launch: {ranks: 2, tensor_parallel: 2}\n"), out)
        self.assertEqual(r.returncode, 2, r.stderr + r.stdout)
        self.assertIn("2 does not divide launch.ranks (1)", r.stderr)
        self.assertIn("launch.ranks is the 1 rank(s) running, not the config's 2", r.stderr)
        self.assertFalse(os.path.exists(out))
        for sets, message in (
                (["--set", "launch.tensor_parallel=3"], "3 does not divide launch.ranks (2)"),
                (["--set", "launch.tensor_parallel=2", "--set", "model.n_kv_head=1"],
                 "2 does not divide model.n_kv_head (1)"),
                (["--set", "launch.tensor_parallel=2", "--set", "train.peft=lora"],
                 "tensor parallelism with train.peft: lora is not supported")):
            out = os.path.join(self.tmp, "bad")
            r = self.run_train(self.config(extra="launch: {ranks: 2}\n"), out, *sets, ranks=2)
            self.assertEqual(r.returncode, 2, r.stderr + r.stdout)
            self.assertIn(message, r.stderr)
            self.assertFalse(os.path.exists(out))


class Profile(BenchTrainCase):
    def test_profiled_steps_give_a_trace_per_rank_and_are_not_measured(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_train(self.config(steps=8, extra="launch: {ranks: 2}\n"), out, "--set",
                           "metrics.profile_steps=3-4", ranks=2)
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        for rank in (0, 1):
            relative = f"profile/rank-{rank:05d}.pt.trace.json"
            with h5py.File(os.path.join(out, f"rank-{rank:05d}.h5"), "r") as f:
                self.assertEqual(f.attrs["profile_trace"], relative)
                # Warm-up (2 steps) and the profiled steps 3 and 4 are left out.
                self.assertEqual(list(f["steps"]["measured"]), [0, 0, 1, 0, 0, 1, 1, 1])
            with open(os.path.join(out, relative)) as t:
                trace = json.load(t)
            # Kineto's own trace (PyTorch's profiler, the format Perfetto and TensorBoard open):
            # its header, and complete ("X") events in traceEvents.
            for key in ("schemaVersion", "baseTimeNanoseconds", "deviceProperties"):
                self.assertIn(key, trace)
            events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
            names = {e["name"] for e in events}
            for phase in ("forward", "backward", "comm", "optimizer"):
                self.assertIn(phase, names)
            self.assertIn("aten::mm", names)
            self.assertTrue(all(e["dur"] >= 0 for e in events))
            phases = [e for e in events if e["name"] in ("forward", "backward", "optimizer")]
            self.assertTrue(all(e["cat"] == "user_annotation" for e in phases))
            # The ops of a forward pass lie inside its range.
            forward = min((e for e in events if e["name"] == "forward"), key=lambda e: e["ts"])
            inside = [e for e in events if e["cat"] == "cpu_op" and
                      forward["ts"] <= e["ts"] <= forward["ts"] + forward["dur"]]
            self.assertIn("aten::mm", {e["name"] for e in inside})
            # GPT-2's four biased projections a block (gpt2-tiny: 2 blocks) are each one addmm,
            # the bias inside the product, and no add of its own: the C++ frontend's linear
            # added it apart, through a mixed-dtype kernel on a GPU (docs/performance.md).
            ops = [e["name"] for e in inside]
            self.assertEqual(ops.count("aten::addmm"), 4 * 2, sorted(set(ops)))
            self.assertNotIn("aten::add_", ops)
            # Two steps: each phase twice.
            self.assertEqual(sum(e["name"] == "optimizer" for e in events), 2)
        summary = read_json(os.path.join(out, "summary.json"))
        self.assertEqual(summary["measured_steps"], 4)
        table = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--format", "json"],
                               capture_output=True, text=True, env=ENV, check=True).stdout
        self.assertEqual(json.loads(table)[0]["profile_trace"],
                         os.path.join(out, "profile", "rank-00000.pt.trace.json"))

    def test_activities_choose_what_is_recorded_and_are_checked(self):
        out = os.path.join(self.tmp, "cpu")
        r = self.run_train(self.config(steps=6), out, "--set", "metrics.profile_steps='3'",
                           "--set", "metrics.profile_activities=[cpu]")
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        with open(os.path.join(out, "profile", "rank-00000.pt.trace.json")) as t:
            self.assertIn("aten::mm", {e.get("name") for e in json.load(t)["traceEvents"]})
        for value, message in (("[]", "is empty: the profiler would record nothing"),
                               ("[cpu, gpu]", "'gpu' is not an activity"),
                               ("[cpu, cpu]", "'cpu' is named twice")):
            out = os.path.join(self.tmp, "bad")
            r = self.run_train(self.config(), out, "--set", "metrics.profile_steps='3'",
                               "--set", f"metrics.profile_activities={value}")
            self.assertEqual(r.returncode, 2, r.stderr + r.stdout)
            self.assertIn(message, r.stderr)
            self.assertFalse(os.path.exists(out))
        # GPU kernels on a CPU run: refused before any work, whether the config says cpu or
        # bench-train finds no GPU.
        for device, message in (("cpu", "cuda records GPU kernels, but launch.device is cpu"),
                                ("auto", "cuda asks for GPU kernels, but this rank runs on the CPU")):
            out = os.path.join(self.tmp, "cuda")
            r = self.run_train(self.config(), out, "--set", "metrics.profile_steps='3'",
                               "--set", "metrics.profile_activities=[cuda]",
                               "--set", f"launch.device={device}")
            self.assertEqual(r.returncode, 2, r.stderr + r.stdout)
            self.assertIn(message, r.stderr)
            self.assertFalse(os.path.exists(out))

    def test_profile_ranges_are_checked_before_any_work(self):
        for value, message in (("x", "'x' is not a step or a range of steps"),
                               ("5-3", "'5-3' is not a step or a range of steps"),
                               ("20", "step 20 is past the last step (19)"),
                               ("0-19", "leaves no measured step")):
            out = os.path.join(self.tmp, "out")
            r = self.run_train(self.config(), out, "--set", f"metrics.profile_steps='{value}'")
            self.assertEqual(r.returncode, 2, r.stderr + r.stdout)
            self.assertIn(message, r.stderr)
            self.assertFalse(os.path.exists(out))


class Contention(BenchTrainCase):
    """A neighbour on the run's CPU (issue 52): the CPU time it took is recorded and the tables
    mark the point; the OpenMP wait policy the run had is recorded."""

    def hog(self, cpu):
        """A process that spins on one CPU until killed."""
        return subprocess.Popen(["taskset", "-c", str(cpu), "/usr/bin/python3", "-c",
                                 "while True: pass"])

    def test_a_neighbour_on_the_runs_cpu_is_recorded_and_marked(self):
        config = self.config(steps=40, extra="launch: {cpus_per_rank: 1}\n")
        out = os.path.join(self.tmp, "point", "out")
        hog = self.hog(0)
        try:
            r = subprocess.run(["taskset", "-c", "0", BENCH_TRAIN, "--config", config, "--out",
                                out], capture_output=True, text=True, timeout=300, env=ENV)
        finally:
            hog.kill()
            hog.wait()
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            attrs = dict(f.attrs)
        # The spinning neighbour had about half of CPU 0 while the run measured: the kernel
        # shares one CPU between two busy processes.
        self.assertGreater(attrs["cpu_shared"], 0.25, attrs)
        self.assertLessEqual(attrs["cpu_shared"], 1.0)
        self.assertGreater(attrs["cpu_others_s"], 0)
        self.assertEqual(attrs["omp_wait_policy"], ENV.get("OMP_WAIT_POLICY", ""))
        summary = read_json(os.path.join(out, "summary.json"))
        self.assertAlmostEqual(summary["metrics"]["cpu_shared"], attrs["cpu_shared"])
        # bench-extract's column and the people's table's mark.
        table = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--format", "csv"],
                               capture_output=True, text=True, check=True).stdout
        cells = next(csv.DictReader(io.StringIO(table)))
        self.assertAlmostEqual(float(cells["cpu_shared"]), attrs["cpu_shared"])
        people = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--format",
                                 "table"], capture_output=True, text=True, check=True).stdout
        self.assertIn("shared", people.splitlines()[0] + people.splitlines()[1], people)
        self.assertIn("%.0f%%" % (attrs["cpu_shared"] * 100), people)

    def test_a_busy_neighbour_at_the_start_cuts_the_threads_unless_given(self):
        # Two CPUs, one held by a spinning process from before the run starts: bench-train sees
        # about a CPU taken and runs one thread, not two; launch.cpus_per_rank keeps its threads.
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("needs two CPUs; this machine gives the test %d"
                          % len(os.sched_getaffinity(0)))
        cpus = sorted(os.sched_getaffinity(0))[:2]
        hog = self.hog(cpus[0])
        attrs, notes = {}, {}
        try:
            time.sleep(0.3)  # the neighbour is running before the runs start
            for name, extra in (("chosen", ""), ("given", "launch: {cpus_per_rank: 2}\n")):
                out = os.path.join(self.tmp, name, "out")
                r = subprocess.run(["taskset", "-c", "%d,%d" % tuple(cpus), BENCH_TRAIN,
                                    "--config", self.config(steps=20, extra=extra, name=name),
                                    "--out", out], capture_output=True, text=True, timeout=300,
                                   env=ENV)
                self.assertEqual(r.returncode, 0, r.stderr)
                notes[name] = r.stderr
                with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
                    attrs[name] = dict(f.attrs)
        finally:
            hog.kill()
            hog.wait()
        chosen, given = attrs["chosen"], attrs["given"]
        # The neighbour had a whole CPU as the run started (less its share of the run's own).
        self.assertGreater(chosen["cpus_busy_at_start"], 0.6, chosen)
        self.assertLessEqual(chosen["cpus_busy_at_start"], 2.0)
        self.assertEqual(chosen["threads_planned"], 2)
        self.assertEqual(chosen["threads"], 1)
        self.assertIn("runs 1 thread(s), not 2", notes["chosen"])
        # Given threads stand; what the neighbour used is still recorded.
        self.assertEqual(given["threads_planned"], 2)
        self.assertEqual(given["threads"], 2)
        self.assertGreater(given["cpus_busy_at_start"], 0.6, given)
        self.assertNotIn("not 2", notes["given"])

    def test_the_wait_policy_the_run_had_is_recorded(self):
        config = self.config(steps=4)
        out = os.path.join(self.tmp, "point", "out")
        r = subprocess.run([BENCH_TRAIN, "--config", config, "--out", out], capture_output=True,
                           text=True, timeout=300, env=dict(ENV, OMP_WAIT_POLICY="PASSIVE"))
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            self.assertEqual(f.attrs["omp_wait_policy"], "PASSIVE")
            self.assertGreaterEqual(f.attrs["cpu_shared"], 0)


class UntilPrecise(BenchTrainCase):
    """metrics.target_ci: train.steps is the least, the run goes on until the mean step time's
    interval is within the target or metrics.max_seconds are spent, and the tables say which."""

    def extract(self, out, fmt):
        return subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--format", fmt],
                              capture_output=True, text=True, check=True).stdout

    def test_a_reachable_target_stops_at_the_first_look_after_100_steps(self):
        # Within 50% of the mean: any 100 steps are that precise, and the rule never stops sooner.
        config = self.config(steps=12)
        out = os.path.join(self.tmp, "point", "out")
        r = self.run_train(config, out, "--set", "metrics.target_ci=0.5")
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            steps = f["steps"][:]
            self.assertEqual(f.attrs["steps_planned"], 12)
        # At a look: 100 measured steps, then half as many again each time (150, 225, ...).
        # On a quiet machine the first; a neighbour's hiccups among the 2 ms steps can widen the
        # interval past 50% and move it to a later look (CI, 2026-11-30: 150, while the other
        # ctest lane installed a venv).
        looks = [100]
        while looks[-1] < 10000:
            looks.append(looks[-1] + looks[-1] // 2)
        measured = int((steps["measured"] != 0).sum())
        self.assertIn(measured, looks)
        self.assertEqual(len(steps), measured + 2)  # 2 warm-up steps
        cells = next(csv.DictReader(io.StringIO(self.extract(out, "csv"))))
        self.assertEqual(cells["target_met"], "true")
        self.assertNotIn("missed", self.extract(out, "table"))

    def test_a_target_out_of_reach_stops_at_the_budget_and_is_marked(self):
        config = self.config(steps=12)
        out = os.path.join(self.tmp, "point", "out")
        r = self.run_train(config, out, "--set", "metrics.target_ci=0.000001", "--set",
                           "metrics.max_seconds=0.5")
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            steps = f["steps"][:]
        measured = steps[steps["measured"] != 0]
        self.assertGreater(len(steps), 12)
        # The budget is checked at each look, and a look comes no later than the budget's step.
        self.assertGreaterEqual(measured["total_s"].sum(), 0.5)
        self.assertLess(measured["total_s"].sum(), 2.0)
        cells = next(csv.DictReader(io.StringIO(self.extract(out, "csv"))))
        self.assertEqual(cells["target_met"], "false")
        table = self.extract(out, "table")
        self.assertIn("target", table.splitlines()[0])
        self.assertIn("missed", table)

    def test_without_a_target_the_run_is_exactly_train_steps(self):
        config = self.config(steps=7)
        out = os.path.join(self.tmp, "point", "out")
        self.assertEqual(self.run_train(config, out).returncode, 0)
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            self.assertEqual(len(f["steps"]), 7)
        self.assertNotIn("target_met", next(csv.DictReader(io.StringIO(self.extract(out, "csv")))))


class BadInput(BenchTrainCase):
    def assertRejected(self, args, message, code=2):
        out = os.path.join(self.tmp, "out")
        r = self.run_train(self.config(), out, *args)
        self.assertEqual(r.returncode, code, r.stderr + r.stdout)
        self.assertIn(message, r.stderr)
        self.assertFalse(os.path.exists(out), "nothing may be written")

    def test_bad_configs_fail_before_any_work(self):
        self.assertRejected(["--set", "model.preset=gpt3"], "'gpt3' is not one of")
        self.assertRejected(["--set", "model.n_head=5"], "model.n_head: 5 does not divide model.n_embd (64)")
        self.assertRejected(["--set", "data.seq_len=4096"], "data.seq_len: 4096 exceeds model.block_size (128)")
        self.assertRejected(["--set", "train.microbatch=4"], "did you mean 'train.micro_batch'?")
        self.assertRejected(["--set", "data.path=/nonexistent/file.txt"], "cannot read the data file: No such file or directory")
        self.assertRejected(["--set", "train.dtype=fp16"], "fp16 needs a GPU")

    def test_data_errors(self):
        short = os.path.join(self.tmp, "short.txt")
        with open(short, "w") as f:
            f.write("too short")
        self.assertRejected(["--set", f"data.path={short}"], "too few for one batch")
        # A FIFO hung bench-train.
        fifo = os.path.join(self.tmp, "data.fifo")
        os.mkfifo(fifo)
        self.assertRejected(["--set", f"data.path={fifo}"],
                            "is a FIFO, not a regular file: a data file is read whole")
        big = os.path.join(self.tmp, "big.u16")
        np.full(5000, 600, dtype="<u2").tofile(big)
        self.assertRejected(["--set", "data.source=tokens", "--set", f"data.path={big}"],
                            "holds token id 600, which model.vocab_size (512) cannot embed")

    def test_usage_errors(self):
        r = subprocess.run([BENCH_TRAIN, "--bogus"], capture_output=True, text=True, env=ENV)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bench-train --help", r.stderr)
        r = subprocess.run([BENCH_TRAIN, "--help"], capture_output=True, text=True, env=ENV)
        self.assertEqual(r.returncode, 0)
        self.assertIn("Examples:", r.stdout)
        r = subprocess.run([BENCH_TRAIN, "--config", self.config()], capture_output=True, text=True, env=ENV)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--out is missing", r.stderr)

    def test_existing_results_are_never_overwritten(self):
        out = os.path.join(self.tmp, "out")
        r = self.run_train(self.config(steps=4), out)
        self.assertEqual(r.returncode, 0, r.stderr)
        before = {n: os.stat(os.path.join(out, n)).st_mtime_ns for n in os.listdir(out)}
        again = self.run_train(self.config(steps=4), out)
        self.assertEqual(again.returncode, 3, again.stderr)
        self.assertIn("results are already there", again.stderr)
        self.assertEqual({n: os.stat(os.path.join(out, n)).st_mtime_ns for n in os.listdir(out)}, before)

    def test_hostile_inputs_are_refused_before_any_work(self):
        # C4 (a directory read as an empty config trained GPT-2 124M), C3 (sizes whose
        # tensors cannot exist: bad_alloc and exit 70, or a crash), W10 (a negative budget).
        directory = os.path.join(self.tmp, "a-directory")
        os.makedirs(directory)
        out = os.path.join(self.tmp, "out")
        r = subprocess.run([BENCH_TRAIN, "--config", directory, "--out", out], capture_output=True,
                           text=True, env=ENV, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr + r.stdout)
        self.assertIn("is a directory, not a YAML file", r.stderr)
        self.assertFalse(os.path.exists(out))
        # Past its range, and within it but too large for the shape.
        for mb in ("1000000000", str(2 ** 58), str(2 ** 62)):
            self.assertRejected(["--set", f"train.micro_batch={mb}"],
                                "train.micro_batch: must be in [1, 1048576]")
        for key in ("train.grad_accum=9223372036854775000", "model.n_layer=1000000000"):
            self.assertRejected(["--set", key], key.split("=")[0] + ": must be in [1, ")
        self.assertRejected(["--set", "train.micro_batch=1048576", "--set", "model.vocab_size=16777216"],
                            "is too large: the logits")
        self.assertRejected(["--max-memory-mb", "-1"], "--max-memory-mb -1: error: must be from 0")


def in_mount_namespace(script, *args, timeout=300):
    """Runs `sh -c script sh ARGS...` in a mount namespace of its own (a tmpfs mounted there is
    gone when it ends). As root, the only way here to make a directory read-only or full."""
    return subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", *args],
                          capture_output=True, text=True, timeout=timeout, env=ENV)


class Storage(BenchTrainCase):
    """W1 (an unwritable --out trained the whole run, then failed) and C2 (a full disk:
    HDF5's error, then '# OK', then a crash in HDF5's exit handler, a .partial left)."""

    def test_an_unwritable_out_fails_before_the_run(self):
        disk = os.path.join(self.tmp, "disk")
        os.makedirs(disk)
        script = ('mount -t tmpfs -o size=1m tmpfs "$1" && mkdir "$1/out" && '
                  'mount -o remount,ro "$1" && exec "$2" --config "$3" --out "$1/out"')
        r = in_mount_namespace(script, disk, BENCH_TRAIN, self.config(steps=200))
        self.assertEqual(r.returncode, 4, r.stderr + r.stdout)
        self.assertIn("cannot write into this directory: Read-only file system", r.stderr)
        self.assertNotIn("step", r.stdout.split("# data:")[-1])  # no step ran

    def test_a_full_disk_is_exit_4_with_nothing_claimed_or_left(self):
        # Full but for two pages: the start-up check passes, the rank file does not fit.
        disk = os.path.join(self.tmp, "disk")
        os.makedirs(disk)
        script = ('mount -t tmpfs -o size=256k tmpfs "$1" && mkdir "$1/out" && '
                  '{ dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null; '
                  'truncate -s -8k "$1/filler"; } && "$2" --config "$3" --out "$1/out"; rc=$?; '
                  'echo "LISTING:"; ls -A "$1/out"; exit $rc')
        r = in_mount_namespace(script, disk, BENCH_TRAIN, self.config(steps=4))
        self.assertEqual(r.returncode, 4, r.stderr + r.stdout)
        self.assertIn("No space left on device", r.stderr)
        self.assertIn("# FAILED: rank 0 could not write its results", r.stdout)
        self.assertNotIn("# OK", r.stdout)
        self.assertEqual(r.stdout.split("LISTING:")[-1].split(), [], "files left in --out")

    def test_a_host_out_of_memory_while_loading_is_oom_with_results(self):
        # C3: an allocation outside libtorch (the batch) was an internal error (exit 70, no
        # results); under an address-space limit it is out of memory like any other.
        import resource

        def limit():
            resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

        out = os.path.join(self.tmp, "out")
        # The largest micro batch the schema allows, of sequences long enough that the batch
        # (8 GiB of token ids) cannot be allocated under a 3 GiB address space.
        cmd = [BENCH_TRAIN, "--config", self.config(steps=4), "--out", out,
               "--set", "data.source=synthetic", "--set", "train.micro_batch=1048576",
               "--set", "model.block_size=512"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=ENV,
                           preexec_fn=limit)
        self.assertEqual(r.returncode, 20, r.stderr + r.stdout)
        self.assertEqual(read_json(os.path.join(out, "summary.json"))["status"], "oom")
        with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
            # Since the schema caps micro_batch, the batch no longer dwarfs the rest:
            # the first allocation to fail is the batch's (outside libtorch) or libtorch's own.
            self.assertRegex(f.attrs["reason"],
                             r"loading a batch: std::bad_alloc|DefaultCPUAllocator: can't allocate")


if __name__ == "__main__":
    unittest.main()
