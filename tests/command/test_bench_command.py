#!/usr/bin/python3
"""Command sweeps end to end: bench-sweep runs user programs through bench-command, locally,
under mpirun and as real peers (the Hugging Face Trainer, `accelerate launch`); results read back
with h5py, bench-extract's table with pandas.

The programs are real: small Python and sh scripts written by each test (they stand for any
user program and need nothing installed), bench/pytorch_eager_train.py, and
bench/run_clm_synthetic.py, the Trainer from PyPI in scripts/peer-venv's venv.

Run by ctest (tests/CMakeLists.txt), one ctest per class:
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/command/test_bench_command.py Local
"""
import glob
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

import h5py
import pandas

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from e2e import BIN, ENV, SOURCE, bench_sweep, peer_venv, read_json  # noqa: E402
from slurm_cluster import free_port  # noqa: E402  (one below the ephemeral range)

BENCH_EXTRACT = os.path.join(BIN, "bench-extract")

# A program that reports what it was given: its argv, its working directory, one variable, and
# figures in the formats the tests read.
REPORTER = r'''
import json, os, sys
out = sys.argv[1]
with open(out, "w") as f:
    json.dump({"argv": sys.argv[2:], "cwd": os.getcwd(), "env": os.environ.get("MY_VAR")}, f)
rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
print(f"rank {rank} throughput: {100 * (rank + 1) + len(sys.argv)} tokens/s")
for loss in (4.0, 3.0, 2.0):
    print(f"loss {loss}")
print("noise {not json")
print(json.dumps({"avg_ts": 12.5, "rank": rank}))
sys.stderr.write("done\n")
'''


def extract(*args):
    r = subprocess.run([BENCH_EXTRACT, *args], capture_output=True, text=True, env=ENV, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"bench-extract {args}: {r.returncode}\n{r.stderr}")
    return r.stdout


def table(out):
    return pandas.read_csv(io.StringIO(extract("-i", out)))


def documented_command_layout():
    """docs/results-format.md's command section: ({attribute: type}, {dataset: type})."""
    attrs, datasets, on = {}, {}, False
    with open(os.path.join(SOURCE, "docs", "results-format.md")) as f:
        for line in f:
            if line.startswith("## "):
                on = line.startswith("## Command group `/command`")
                continue
            row = re.match(r"\| `(\w+)` \| ([\w\[\]]+) \|", line)
            if on and row:
                kind = row.group(2)
                (datasets if "[" in kind else attrs)[row.group(1)] = kind.split("[")[0]
    return attrs, datasets


class CommandCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-command-test-")
        self.reporter = os.path.join(self.tmp, "reporter.py")
        with open(self.reporter, "w") as f:
            f.write(REPORTER)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def sweep(self, text, name="s"):
        path = os.path.join(self.tmp, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_sweep(self, text, check=0, extra=(), timeout=600):
        out = os.path.join(self.tmp, "out")
        try:
            r = bench_sweep("run", self.sweep(text), "--out", out, *extra, check=check,
                            cwd=self.tmp, timeout=timeout)
        except AssertionError as e:
            # The failed points' program logs say why; bench-sweep's line is cut short.
            failed = [os.path.basename(os.path.dirname(path))
                      for path in glob.glob(os.path.join(out, "*", "status.json"))
                      if read_json(path).get("status") != "ok"]
            raise AssertionError(f"{e}\n" + "\n".join(self.logs(out, tag) for tag in failed))
        return out, r

    def assert_all_ok(self, out):
        for tag, record in self.points(out).items():
            self.assertEqual(record["status"], "ok", f"{tag}: {record}\n{self.logs(out, tag)}")

    def logs(self, out, tag):
        """The ends of a point's program logs, for a failure message."""
        text = []
        for path in sorted(glob.glob(os.path.join(out, tag, "logs", "*.txt"))):
            with open(path, errors="replace") as f:
                text.append(f"--- {path}\n{f.read()[-3000:]}")
        return "\n".join(text)

    def points(self, out):
        manifest = read_json(os.path.join(out, "manifest.json"))
        return {p["tag"]: read_json(os.path.join(out, p["tag"], "status.json"))
                for p in manifest["points"]}


class Local(CommandCase):
    def test_params_placeholders_metrics_results_and_table(self):
        out, r = self.run_sweep(f"""\
name: local
base:
  benchmark: command
  params: {{greeting: hello}}
  command:
    argv: [/usr/bin/python3, {self.reporter}, '{{out}}/given.json', '{{params.greeting}}',
           '--n={{params.n}}', '{{rank}}/{{world_size}}', '{{{{literal}}}}']
    env: {{MY_VAR: '{{params.greeting}}-{{params.n}}'}}
    metrics:
      - {{name: tps, unit: tokens/s, regex: 'throughput: ([0-9.]+)'}}
      - {{name: loss_mean, regex: 'loss ([0-9.]+)', reduce: mean}}
      - {{name: losses, regex: 'loss ([0-9.]+)', reduce: all}}
      - {{name: loss_lines, regex: '^loss', reduce: count}}
      - {{name: avg_ts, unit: tokens/s, from: stdout, pointer: /avg_ts}}
      - {{name: argc, from: json given.json, pointer: '/argv/*', reduce: count}}
      - {{name: greeted, from: json given.json, pointer: /env, type: text}}
    success: {{match: ['^done$'], fail: [Traceback]}}
axes:
  params.n: [1, 2]
""")
        points = self.points(out)
        self.assertEqual(sorted(t.split(".ws=")[0] for t in points), ["n=1", "n=2"])
        for tag, record in points.items():
            self.assertEqual(record["status"], "ok", record)
            point = os.path.join(out, tag)
            n = int(re.match(r"n=(\d)", tag).group(1))
            given = read_json(os.path.join(point, "given.json"))
            self.assertEqual(given["argv"], ["hello", f"--n={n}", "0/1", "{literal}"])
            self.assertEqual(given["env"], f"hello-{n}")
            self.assertEqual(given["cwd"], self.tmp)  # where bench-sweep run started
            for stream in ("stdout", "stderr"):
                self.assertTrue(os.path.exists(os.path.join(point, "logs", f"rank-00000.{stream}.txt")))
            with h5py.File(os.path.join(point, "rank-00000.h5")) as f:
                self.assertEqual(f.attrs["benchmark"], "command")
                self.assertEqual(f.attrs["schema_version"], 4)
                self.assertEqual(f.attrs["status"], "ok")
                g = f["command"]
                argv = [a.decode() for a in g["argv"][:]]
                self.assertEqual(argv[0], "/usr/bin/python3")
                self.assertEqual(argv[-1], "{literal}")
                self.assertEqual(g.attrs["exit_code"], 0)
                self.assertEqual(g.attrs["stdout_log"], "logs/rank-00000.stdout.txt")
                self.assertGreater(g.attrs["seconds"], 0)
                names = [m.decode() for m in g["metric_name"][:]]
                self.assertEqual(names, ["tps", "loss_mean", "losses", "loss_lines", "avg_ts", "argc",
                                         "greeted"])
                # A text metric: its words beside the numbers, its value NaN.
                self.assertEqual([t.decode() for t in g["metric_type"][:]],
                                 ["number"] * 6 + ["text"])
                self.assertEqual([t.decode() for t in g["metric_text"][:]],
                                 [""] * 6 + [f"hello-{n}"])
                self.assertTrue(math.isnan(g["metric_value"][6]))
                values = dict(zip(names, g["metric_value"][:]))
                self.assertEqual(values["tps"], 100 + 6)
                self.assertEqual(values["loss_mean"], 3.0)
                self.assertEqual(values["loss_lines"], 3)
                self.assertEqual(values["avg_ts"], 12.5)
                self.assertEqual(values["argc"], 4)
                losses = [v for v, k in zip(g["values"][:], g["values_metric"][:]) if k == 2]
                self.assertEqual(losses, [4.0, 3.0, 2.0])
                self.assertEqual([u.decode() for u in g["metric_unit"][:]][0], "tokens/s")
                # The group is what docs/results-format.md says, names and types.
                attrs, datasets = documented_command_layout()
                self.assertEqual(set(g.attrs), set(attrs))
                self.assertEqual(set(g), set(datasets))
                for name, kind in attrs.items():
                    value = g.attrs[name]
                    want = {"string": str, "int64": "int64", "float64": "float64"}[kind]
                    if want is str:
                        self.assertIsInstance(value, str, name)
                    else:
                        self.assertEqual(value.dtype.name, want, name)
                for name, kind in datasets.items():
                    if kind == "string":
                        self.assertEqual(g[name].dtype.kind, "O", name)
                    else:
                        self.assertEqual(g[name].dtype.name, kind, name)
            summary = read_json(os.path.join(point, "summary.json"))
            self.assertEqual(summary["benchmark"], "command")
            self.assertEqual(summary["metrics"]["tps"], 106)
            self.assertEqual(summary["units"]["tps"], "tokens/s")
            # A list metric is whole in summary.json and the printout, as in the rank file
            # (both held only its last value).
            self.assertEqual(summary["metrics"]["losses"], [4.0, 3.0, 2.0])
            self.assertEqual(summary["metrics"]["greeted"], f"hello-{n}")
            with open(os.path.join(point, "logs", "stdout.txt")) as f:
                printed = f.read()
                self.assertRegex(printed, r"losses\s+\[4\.0, 3\.0, 2\.0\]")
                self.assertRegex(printed, rf"greeted\s+hello-{n}\s")

        t = table(out)
        self.assertEqual(list(t["params.n"]), [1, 2])
        self.assertEqual(list(t["params.greeting"]), ["hello", "hello"])
        self.assertEqual(list(t["tps"]), [106, 106])
        self.assertEqual(list(t["losses"]), ["[4, 3, 2]"] * 2)  # whole numbers without .0
        self.assertEqual(list(t["exit_code"]), [0, 0])
        self.assertNotIn("model.preset", t.columns)  # a command reads no model: no column
        self.assertEqual(list(t["greeted"]), ["hello-1", "hello-2"])
        grouped = pandas.read_csv(io.StringIO(extract("-i", out, "--group-repeats")))
        self.assertEqual(list(grouped["greeted"]), ["hello-1", "hello-2"])
        self.assertIn("tps_std", grouped.columns)
        self.assertNotIn("greeted_std", grouped.columns)  # words have no spread
        self.assertIn("hello-2", extract("-i", out, "--format", "table", "--columns",
                                         "tag,greeted,tps"))
        rows = json.loads(extract("-i", out, "--format", "json"))
        self.assertEqual(rows[0]["units"]["tps"], "tokens/s")
        self.assertEqual(rows[0]["losses"], [4, 3, 2])
        # A list metric as a long table (it could not be a --series) and a figure.
        lists = pandas.read_csv(io.StringIO(extract("-i", out, "--series", "lists")))
        self.assertEqual(list(lists["metric"]), ["losses"] * 6)
        self.assertEqual(list(lists["item"]), [0, 1, 2] * 2)
        self.assertEqual(list(lists["value"]), [4, 3, 2] * 2)
        self.assertEqual(list(lists["params.n"]), [1, 1, 1, 2, 2, 2])
        csv_path = os.path.join(self.tmp, "lists.csv")
        with open(csv_path, "w") as f:
            f.write(extract("-i", out, "--series", "lists"))
        fig = os.path.join(self.tmp, "losses.png")
        r = subprocess.run([os.path.join(BIN, "bench-plot"), "-i", csv_path, "-o", fig, "--kind",
                            "line", "--x", "item", "--metric", "value", "--hue", "params.n"],
                           capture_output=True, text=True, env=ENV, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.getsize(fig) > 1000)
        # Figures leave text columns out: asked for one, bench-plot says what to choose.
        with open(csv_path, "w") as f:
            f.write(extract("-i", out))
        r = subprocess.run([os.path.join(BIN, "bench-plot"), "-i", csv_path, "-o", fig,
                            "--x", "params.n", "--metric", "greeted"],
                           capture_output=True, text=True, env=ENV, timeout=120)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("is not a numeric column", r.stderr)

    def test_a_dry_run_shows_what_rank_0_will_run(self):
        sweep = self.sweep("""\
name: dry
base:
  benchmark: command
  params: {lr: 0.001}
  command:
    argv: [python3, train.py, '--lr={params.lr}', '--out={out}/x', '{rank}/{world_size}']
    env: {A: 'b c'}
""")
        out = os.path.join(self.tmp, "out")
        r = bench_sweep("run", sweep, "--out", out, "--dry-run", check=0, cwd=self.tmp)
        tag = re.search(r"# 1/1 (\S+) ", r.stdout).group(1)
        self.assertIn(f"#   rank 0 runs: env 'A=b c' python3 train.py --lr=0.001 "
                      f"--out={out}/{tag}/x 0/1\n", r.stdout)
        self.assertFalse(os.path.exists(out))

    def test_hostile_values_reach_the_program_verbatim(self):
        hostile = "a'b \"c\" `touch BT` $(touch DS) ; touch SC | x & y\nz\\ $HOME *"
        out, _ = self.run_sweep(f"""\
name: hostile
base:
  benchmark: command
  params: {{evil: {json.dumps(hostile)}}}
  command:
    argv: [/usr/bin/python3, {self.reporter}, '{{out}}/given.json', '{{params.evil}}',
           '--flag={{params.evil}}']
    env: {{MY_VAR: '{{params.evil}}'}}
    workdir: '{{out}}'
  launch:
    setup: ['export SETUP_SAW={{params.evil}}', 'printf %s "$SETUP_SAW" > {{out}}/setup.txt']
""")
        (tag, record), = self.points(out).items()
        self.assertEqual(record["status"], "ok", record)
        point = os.path.join(out, tag)
        given = read_json(os.path.join(point, "given.json"))
        self.assertEqual(given["argv"], [hostile, "--flag=" + hostile])
        self.assertEqual(given["env"], hostile)
        self.assertEqual(given["cwd"], point)
        with open(os.path.join(point, "setup.txt")) as f:
            self.assertEqual(f.read(), hostile)
        for planted in ("BT", "DS", "SC"):
            for where in (self.tmp, point):
                self.assertFalse(os.path.exists(os.path.join(where, planted)), planted)


class Failures(CommandCase):
    def test_each_failure_is_a_result_with_its_reason(self):
        script = os.path.join(self.tmp, "prog.sh")
        with open(script, "w") as f:
            f.write("""#!/bin/sh
case "$1" in
  exit3) echo "rt=5"; echo "it broke here" >&2; exit 3 ;;
  traceback) echo "rt=5"; echo "Traceback (most recent call last):" >&2 ;;
  nometric) echo "all good" ;;
  nothing) true ;;
  ok) echo "rt=5" ;;
esac
""")
        os.chmod(script, 0o755)
        out, r = self.run_sweep(f"""\
name: failures
base:
  benchmark: command
  command:
    argv: [{script}, '{{params.mode}}']
    metrics:
      - {{name: rt, unit: s, regex: 'rt=(\\d+)'}}
    success: {{fail: ['^Traceback']}}
axes:
  params.mode: [ok, exit3, traceback, nometric, nothing]
include:
  - {{params: {{mode: missing}}, command: {{argv: [no-such-program-sweepbench]}}}}
""", check=1)
        reasons = {}
        for tag, record in self.points(out).items():
            mode = re.search(r"mode=(\w+)", tag).group(1)
            reasons[mode] = (record["status"], record.get("reason", ""))
        self.assertEqual(reasons["ok"], ("ok", ""))
        self.assertEqual(reasons["exit3"],
                         ("failed", "the program ended with exit code 3: it broke here"))
        self.assertEqual(reasons["traceback"][0], "failed")
        self.assertIn("the fail pattern '^Traceback' matched stderr line 1", reasons["traceback"][1])
        self.assertEqual(reasons["nometric"],
                         ("failed", "required metric not found: rt (no line of stdout matches "
                                    "rt=(\\d+))"))
        self.assertEqual(reasons["nothing"][0], "failed")
        self.assertEqual(reasons["missing"],
                         ("failed", "'no-such-program-sweepbench' cannot start it: No such file "
                                    "or directory"))
        t = table(out).set_index("params.mode")
        self.assertEqual(t.loc["exit3", "status"], "failed")
        self.assertEqual(t.loc["exit3", "exit_code"], 3)
        self.assertEqual(t.loc["ok", "rt"], 5)
        self.assertTrue(pandas.isna(t.loc["nometric", "rt"]))

    def test_out_of_memory_text_is_oom_and_prunes_larger_points(self):
        out, _ = self.run_sweep("""\
name: oom
prune_after_oom: [params.batch]
base:
  benchmark: command
  command:
    argv: [sh, -c, 'if [ {params.batch} -ge 4 ]; then echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2; exit 1; fi; echo "tps=$((100 * {params.batch}))"']
    metrics: [{name: tps, regex: 'tps=(\\d+)'}]
axes:
  params.batch: [2, 4, 8]
""", check=1)
        status = {re.match(r"batch=(\d+)", t).group(1): r for t, r in self.points(out).items()}
        self.assertEqual(status["2"]["status"], "ok")
        self.assertEqual(status["4"]["status"], "oom")
        self.assertIn("out of memory: stderr line 1: torch.OutOfMemoryError", status["4"]["reason"])
        self.assertEqual(status["8"]["status"], "skipped")
        self.assertIn("ran out of memory with params.batch=4", status["8"]["reason"])


class TwoRanks(CommandCase):
    def test_every_rank_runs_the_program_and_rank_0_reports(self):
        out, _ = self.run_sweep(f"""\
name: ranks
base:
  benchmark: command
  launch: {{ranks: 2, launcher: mpirun}}
  command:
    argv: [/usr/bin/python3, {self.reporter}, '{{out}}/given-{{rank}}.json', '{{rank}}',
           '{{local_rank}}', '{{world_size}}']
    metrics: [{{name: tps, regex: 'throughput: ([0-9.]+)'}}]
""")
        (tag, record), = self.points(out).items()
        self.assertEqual(record["status"], "ok", record)
        point = os.path.join(out, tag)
        for rank in (0, 1):
            self.assertEqual(read_json(os.path.join(point, f"given-{rank}.json"))["argv"],
                             [str(rank), str(rank), "2"])
            with h5py.File(os.path.join(point, f"rank-{rank:05d}.h5")) as f:
                self.assertEqual(f.attrs["rank"], rank)
                self.assertEqual(f.attrs["world_size"], 2)
                self.assertEqual(f["command/metric_value"][0], 100 * (rank + 1) + 5)
        run_ids = set()
        for rank in (0, 1):
            with h5py.File(os.path.join(point, f"rank-{rank:05d}.h5")) as f:
                run_ids.add(f.attrs["run_id"])
        self.assertEqual(len(run_ids), 1)  # one launch: both files are one run
        t = table(out)
        self.assertEqual(list(t["world_size"]), [2])
        self.assertEqual(list(t["tps"]), [105])  # rank 0's


class Signals(CommandCase):
    def stop_while_running(self, sig, marker):
        sweep = self.sweep(f"""\
name: stop
base:
  benchmark: command
  command:
    argv: [sh, -c, 'trap "echo term > {marker}; exit 143" TERM; trap "echo usr1 > {marker}; exit 138" USR1; echo started; while :; do sleep 0.1; done']
""")
        out = os.path.join(self.tmp, "out")
        p = subprocess.Popen([os.path.join(BIN, "bench-sweep"), "run", sweep, "--out", out],
                             env=ENV, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        deadline = time.monotonic() + 60
        logs = os.path.join(out, "*", "logs", "rank-00000.stdout.txt")
        while time.monotonic() < deadline:
            found = glob.glob(logs)
            if found:
                with open(found[0]) as f:
                    if f.read().startswith("started"):
                        break
            time.sleep(0.1)
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=60)
        self.assertNotEqual(p.returncode, 0, stdout + stderr)
        (tag, record), = self.points(out).items()
        return out, tag, record

    def test_the_time_limit_warning_records_the_program_as_timed_out(self):
        # SLURM's SIGUSR1 before the time limit: the runner passes it on, bench-command too.
        marker = os.path.join(self.tmp, "got")
        out, tag, record = self.stop_while_running(signal.SIGUSR1, marker)
        self.assertEqual(record["status"], "timeout", record)
        with open(marker) as f:
            self.assertEqual(f.read(), "usr1\n")
        with h5py.File(os.path.join(out, tag, "rank-00000.h5")) as f:
            self.assertEqual(f.attrs["status"], "timeout")

    def test_a_stopped_sweep_records_the_program_as_cancelled(self):
        # bench-sweep's stop (SIGTERM here) reaches the program as SIGTERM.
        marker = os.path.join(self.tmp, "got")
        out, tag, record = self.stop_while_running(signal.SIGTERM, marker)
        self.assertEqual(record["status"], "cancelled", record)
        with open(marker) as f:
            self.assertEqual(f.read(), "term\n")
        with h5py.File(os.path.join(out, tag, "rank-00000.h5")) as f:
            self.assertEqual(f.attrs["status"], "cancelled")
            self.assertIn("received SIGUSR2 (bench-sweep's stop)", f.attrs["reason"])
        # Cancelled, and why, in every place (the point's log ended "# FAILED:
        # ..." and its record said only "exit code 23").
        self.assertIn("bench-sweep received SIGTERM; bench-command: exit code 23 (cancelled)",
                      record["reason"])
        with open(os.path.join(out, tag, "logs", "stdout.txt")) as f:
            self.assertIn("# CANCELLED: bench-command received SIGUSR2 (bench-sweep's stop)", f.read())


RUN_CLM = os.path.join(SOURCE, "bench", "run_clm_synthetic.py")


class HfTrainer(CommandCase):
    """The real Hugging Face Trainer (transformers from PyPI) with the hf-trainer parser."""

    def test_trainer_sweep_over_micro_batch_and_dtype(self):
        venv = peer_venv()
        out, _ = self.run_sweep(f"""\
name: hf
base:
  benchmark: command
  command:
    argv: [{venv}/bin/python, {RUN_CLM}, --output_dir, '{{out}}/hf', --max_steps, '6',
           --per_device_train_batch_size, '{{params.micro_batch}}', --bf16, '{{params.bf16}}',
           --do_eval, --use_cpu, --report_to, none, --save_strategy, 'no', --logging_steps, '2']
    env: {{OMP_NUM_THREADS: '1', TOKENIZERS_PARALLELISM: 'false'}}
    parser: hf-trainer
    metrics:
      - {{name: json_runtime, unit: s, from: json hf/all_results.json, pointer: /train_runtime}}
      - {{name: logged_loss, from: json hf/trainer_state.json, pointer: '/log_history/*/loss',
          reduce: all}}
axes:
  params.micro_batch: [2, 4]
  params.bf16: [false, true]
""", timeout=900)
        self.assert_all_ok(out)
        t = table(out)
        self.assertEqual(len(t), 4)
        for column in ("train_runtime", "train_samples_per_second", "train_steps_per_second",
                       "train_loss", "eval_loss", "perplexity", "json_runtime"):
            self.assertTrue(t[column].notna().all(), column)
        # The Trainer's own figures, read two ways, agree: the dict line and all_results.json.
        for _, row in t.iterrows():
            self.assertAlmostEqual(row["train_runtime"], row["json_runtime"], places=3)
            self.assertAlmostEqual(row["train_samples_per_second"],
                                   6 * row["params.micro_batch"] / row["train_runtime"], delta=
                                   0.02 * row["train_samples_per_second"])
            self.assertEqual(len(json.loads(row["logged_loss"])), 3)
        rows = json.loads(extract("-i", out, "--format", "json"))
        self.assertEqual(rows[0]["units"]["train_samples_per_second"], "samples/s")

    def test_accelerate_launch_over_num_processes(self):
        venv = peer_venv()
        # accelerate starts its CPU processes as one job through mpirun (its multi-CPU path,
        # --mpirun_hostfile; launched through torchrun instead, accelerate 1.15 with --cpu
        # reported each process's own micro batch here, 2 samples a step with two processes);
        # its hostfile comes from launch.setup. That mpirun is accelerate's, not bench-sweep's:
        # nothing gives it `--bind-to none`, so the environment does (Open MPI binds two ranks
        # to cores, which fails where the two CPUs are one core's threads), gloo talks over
        # loopback whatever the host name resolves to, and the rendezvous port is a free one
        # rather than 29500.
        port = free_port()
        out, _ = self.run_sweep(f"""\
name: accelerate
base:
  benchmark: command
  launch:
    setup: ['echo "localhost slots={{params.procs}}" > {{out}}/hostfile']
  command:
    argv: [{venv}/bin/accelerate, launch, --cpu, --num_machines, '1', --num_processes,
           '{{params.procs}}', --mpirun_hostfile, '{{out}}/hostfile', --mixed_precision, 'no',
           --dynamo_backend, 'no', --main_process_port, '{port}', {RUN_CLM}, --output_dir, '{{out}}/hf', --max_steps, '6',
           --per_device_train_batch_size, '2', --use_cpu, --report_to, none,
           --save_strategy, 'no']
    env: {{OMP_NUM_THREADS: '1', OMPI_MCA_hwloc_base_binding_policy: none, GLOO_SOCKET_IFNAME: lo}}
    parser: hf-trainer
axes:
  params.procs: [1, 2]
""", timeout=900)
        self.assert_all_ok(out)
        t = table(out).set_index("params.procs")
        # Each step takes micro batch 2 from every process: 2 samples a step alone, 4 with two.
        for procs in (1, 2):
            per_step = t.loc[procs, "train_samples_per_second"] / t.loc[procs, "train_steps_per_second"]
            self.assertAlmostEqual(per_step, 2 * procs, delta=0.05 * procs)


class Twin(CommandCase):
    """sweeps/pytorch-vs-bench-train.yaml runs here, and both programs' throughput is one column."""

    def test_the_comparison_is_one_sweep_and_one_table(self):
        out = os.path.join(self.tmp, "twin")
        bench_sweep("run", os.path.join(SOURCE, "sweeps", "pytorch-vs-bench-train.yaml"),
                    "--out", out, check=0, cwd=SOURCE, timeout=900)
        t = table(out)
        self.assertEqual(sorted(t["scenario"]), ["bench-train"] * 2 + ["pytorch-eager"] * 2)
        self.assertTrue((t["status"] == "ok").all())
        self.assertTrue(t["train_tokens_per_second"].notna().all())
        self.assertTrue((t["train_tokens_per_second"] > 0).all())
        twin = t[t["scenario"] == "pytorch-eager"]
        self.assertEqual(sorted(twin["params.micro_batch"]), [4, 8])


if __name__ == "__main__":
    unittest.main()
