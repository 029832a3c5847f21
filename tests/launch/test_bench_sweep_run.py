#!/usr/bin/python3
"""`bench-sweep run` end to end, without a scheduler: real bench-train points, plain and under
mpirun, resumed after SIGKILL and after Ctrl-C, pruned after an out-of-memory point, and values
that would be shell in the wrong hands.

Run by ctest (tests/CMakeLists.txt), one ctest per class:
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/launch/test_bench_sweep_run.py LocalRun
"""
import csv
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BENCH_SWEEP, BIN, ENV, SOURCE, bench_sweep, read_json  # noqa: E402
from e2e import command_sweep as e2e_command_sweep  # noqa: E402

# bench-train's libtorch memory budget for the pruning test (see Prune).
PRUNE_BUDGET_MB = 24

TINY_BASE = """\
base:
  model: {preset: gpt2-tiny}
  data: {source: synthetic, seq_len: 32}
  train: {steps: %(steps)d, warmup_steps: 1, micro_batch: 2}
  eval: {steps: 1}
  metrics: {sample_interval_ms: 0, system: false}
  launch: {cpus_per_rank: 1}
"""


def sweep(tmp, name, body, steps=4):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\n" + TINY_BASE % {"steps": steps} + body)
    return path


def run(*args, check=None):
    return bench_sweep(*args, check=check)


def manifest_points(out):
    return read_json(os.path.join(out, "manifest.json"))["points"]


def statuses(out):
    return {p["tag"]: read_json(os.path.join(out, p["tag"], "status.json"))["status"]
            if os.path.exists(os.path.join(out, p["tag"], "status.json")) else "pending"
            for p in manifest_points(out)}


class LocalRun(unittest.TestCase):
    def test_runs_every_point_keeps_them_and_reruns_only_when_asked(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "local", "axes:\n  launch.ranks: [1, 2]\n  train.micro_batch: [2, 4]\n")
            out = os.path.join(tmp, "out")
            r = run("run", s, "--out", out, check=0)
            self.assertIn("# OK: every point is ok", r.stdout)
            # A 1-rank point's MPI singleton daemon (orted) ends by itself a moment after the
            # point: it is no leftover to name (it was named on every such point).
            self.assertNotIn("left running", r.stdout)
            points = manifest_points(out)
            self.assertEqual(len(points), 4)
            for p in points:
                d = os.path.join(out, p["tag"])
                st = read_json(os.path.join(d, "status.json"))
                self.assertEqual(st["status"], "ok", st)
                self.assertEqual(st["config_hash"], p["config_hash"])
                self.assertEqual(st["attempt"], 1)
                self.assertEqual(p["status"], "ok")
                ranks = p["varying"]["launch.ranks"]
                self.assertEqual(st["launcher"], "mpirun" if ranks == 2 else "local")
                for rank in range(ranks):
                    self.assertTrue(os.path.exists(os.path.join(d, f"rank-{rank:05d}.h5")))
                self.assertEqual(read_json(os.path.join(d, "summary.json"))["status"], "ok")
                self.assertIn("summary", open(os.path.join(d, "logs", "stdout.txt")).read())
                self.assertFalse(os.path.exists(os.path.join(d, ".claim")))

            # Again: every point is kept, nothing runs, nothing changes.
            first = points[0]["tag"]
            h5 = os.path.join(out, first, "rank-00000.h5")
            mtime = os.stat(h5).st_mtime_ns
            r = run("run", s, "--out", out, check=0)
            self.assertEqual(r.stdout.count("kept: ok"), 4, r.stdout)
            self.assertEqual(os.stat(h5).st_mtime_ns, mtime)
            # A dry run says so too, and predicts nothing to run; forced, it would run them.
            r = run("run", s, "--out", out, "--dry-run", check=0)
            self.assertEqual(r.stdout.count(": would be kept, ok since "), 4, r.stdout)
            self.assertIn("# predicted 0 device-hours: none of its 4 points is to run", r.stdout)
            r = run("run", s, "--out", out, "--dry-run", "--force", check=0)
            self.assertNotIn("would be kept", r.stdout)
            self.assertIn("device-hours for 4 of 4 points", r.stdout)
            self.assertEqual(os.stat(h5).st_mtime_ns, mtime)

            # --force on one point: the old results move to attempts/1, the new ones replace them.
            run("run", s, "--out", out, "--only", "0", "--force", check=0)
            self.assertTrue(os.path.exists(os.path.join(out, first, "attempts", "1", "rank-00000.h5")))
            self.assertTrue(os.path.exists(os.path.join(out, first, "attempts", "1", "status.json")))
            self.assertEqual(read_json(os.path.join(out, first, "status.json"))["attempt"], 2)
            self.assertEqual(statuses(out), {p["tag"]: "ok" for p in points})

            # A run of some points reads their records only (a job array's task runs one or a
            # few): another point's damaged status.json stops a run of the whole sweep, naming
            # it, and not a run that leaves that point alone.
            damaged = os.path.join(out, points[3]["tag"], "status.json")
            with open(damaged, "w") as f:
                f.write("{not json")
            r = run("run", s, "--out", out, "--only", "0,1", check=0)
            self.assertEqual(r.stdout.count("kept: ok"), 2, r.stdout)
            r = run("run", s, "--out", out)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn(damaged, r.stderr)
            # The same for another point's config.yaml holding another config: a run stops
            # before it writes anything, a job array's task checks its own points only.
            other = os.path.join(out, points[2]["tag"], "config.yaml")
            with open(other, "w") as f:
                f.write("model: {preset: gpt2-tiny, n_layer: 1}\n")
            r = run("run", s, "--out", out, "--only", "0,1")
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn(other, r.stderr)
            # The manifest's entry of a point the task did not check stays as it was, here a
            # hash from an earlier plan (as a sweep file edited since submit would leave it).
            manifest_path = os.path.join(out, "manifest.json")
            manifest = read_json(manifest_path)
            manifest["points"][2]["config_hash"] = "0" * 64
            with open(manifest_path, "w") as f:
                json.dump(manifest, f, indent=2)
            before = manifest_points(out)
            task = bench_sweep("run", s, "--out", out, "--only", "0,1",
                               env=dict(ENV, SLURM_ARRAY_TASK_ID="0"), check=0)
            self.assertEqual(task.stdout.count("kept: ok"), 2, task.stdout)
            self.assertIn("# plan: 0 written, 0 updated, 2 unchanged", task.stdout)
            after = manifest_points(out)
            self.assertEqual([p["tag"] for p in after], [p["tag"] for p in before])
            self.assertEqual(after[2]["config_hash"], "0" * 64)
            self.assertEqual(after[0]["config_hash"], points[0]["config_hash"])

    def test_a_point_that_ran_ok_is_never_skipped_by_memory_limit(self):
        # Not by the run, and not in the predicted cost either (both ask memory_limit_skip).
        with tempfile.TemporaryDirectory() as tmp:
            axes = "axes:\n  train.micro_batch: [2, 4]\n"
            s = sweep(tmp, "limit", axes)
            out = os.path.join(tmp, "out")
            run("run", s, "--out", out, check=0)
            limited = sweep(tmp, "limit", axes + "memory_limit: {bytes: 1 MB}\n")
            r = run("run", limited, "--out", out, "--dry-run", "--force", check=0)
            self.assertNotIn("would be skipped", r.stdout)
            self.assertIn("device-hours for 2 of 2 points", r.stdout)

    def test_every_shipped_sweep_file_plans(self):
        # The examples in sweeps/ (most for GPU clusters) stay valid as the config grows.
        files = sorted(f for f in os.listdir(os.path.join(SOURCE, "sweeps")) if f.endswith(".yaml"))
        self.assertGreater(len(files), 10)
        with tempfile.TemporaryDirectory() as tmp:
            for name in files:
                r = run("plan", os.path.join(SOURCE, "sweeps", name), "--out", os.path.join(tmp, name))
                self.assertEqual(r.returncode, 0, f"{name}: {r.stderr}")

    def test_the_memory_knobs_sweep_runs_every_knob_with_two_ranks(self):
        # sweeps/memory-knobs-cpu.yaml: ZeRO 0 to 3 and LoRA, the impossible ZeRO-3 + LoRA
        # excluded, tensor parallelism, offload, overlap and a profiled point; one table.
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "knobs")
            run("run", os.path.join(SOURCE, "sweeps", "memory-knobs-cpu.yaml"), "--out", out, check=0)
            table = json.loads(subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--format", "json"],
                                              capture_output=True, text=True, env=ENV, check=True).stdout)
            rows = {(r["train.zero_stage"], r["train.peft"]): r for r in table
                    if r["launch.tensor_parallel"] == 1 and not r["train.offload_optimizer"]
                    and not r["train.overlap_comm"]}
            self.assertEqual(sorted(rows), [(0, "lora"), (0, "none"), (1, "lora"), (1, "none"), (2, "lora"),
                                            (2, "none"), (3, "none")])
            split = [r for r in table if r["launch.tensor_parallel"] == 2]
            self.assertEqual(len(split), 1)
            self.assertEqual(split[0]["status"], "ok")
            # One replica over both ranks: half the projections per rank, the rest whole.
            self.assertLess(split[0]["mem_model_states_bytes"], rows[(0, "none")]["mem_model_states_bytes"])
            offloaded = [r for r in table if r["train.offload_optimizer"]]
            self.assertEqual([r["status"] for r in offloaded], ["ok"])
            self.assertLess(offloaded[0]["mem_model_states_bytes"], rows[(2, "none")]["mem_model_states_bytes"])
            profiled = [r for r in table if r["train.overlap_comm"]]
            self.assertEqual([r["status"] for r in profiled], ["ok"])
            with open(profiled[0]["profile_trace"]) as t:
                self.assertIn("backward", {e.get("name") for e in json.load(t)["traceEvents"]})
            full = rows[(0, "none")]["trainable_parameters"]
            for (stage, peft), r in rows.items():
                self.assertEqual(r["status"], "ok")
                self.assertEqual(r["world_size"], 2)
                if peft == "lora":
                    self.assertLess(r["trainable_parameters"], full / 10)
                else:
                    self.assertEqual(r["trainable_parameters"], full)
            held = [rows[(stage, "none")]["mem_model_states_bytes"] for stage in range(4)]
            self.assertEqual(held, sorted(held, reverse=True))
            self.assertLess(rows[(0, "lora")]["mem_model_states_bytes"], held[3])

    def test_dry_run_prints_each_command_and_writes_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "dry", "axes:\n  launch.ranks: [1, 2]\n")
            out = os.path.join(tmp, "out")
            r = run("run", s, "--out", out, "--dry-run", check=0)
            self.assertFalse(os.path.exists(out))
            commands = [shlex.split(line) for line in r.stdout.splitlines() if not line.startswith("#")]
            self.assertEqual(len(commands), 2, r.stdout)
            self.assertTrue(commands[0][0].endswith("bench-train"), commands[0])
            self.assertEqual(commands[1][:3], ["mpirun", "-n", "2"])
            for c in commands:
                self.assertIn("--config", c)
                self.assertTrue(c[c.index("--config") + 1].startswith(os.path.abspath(out)))

    def test_a_program_that_exits_0_without_results_has_failed(self):
        # Success is a result file, not an exit code.
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "empty", "axes:\n  launch.ranks: [1]\n")
            out = os.path.join(tmp, "out")
            r = run("run", s, "--out", out, "--bench-train", "/bin/true", check=1)
            tag = manifest_points(out)[0]["tag"]
            record = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(record["status"], "failed", r.stdout)
            self.assertEqual(record["exit_code"], 0)
            self.assertIn("exited 0 without results: no rank-00000.h5", record["reason"])
            extract = subprocess.run([os.path.join(os.path.dirname(BENCH_SWEEP), "bench-extract"),
                                      "-i", out, "--strict", "--format", "jsonl"],
                                     capture_output=True, text=True)
            self.assertEqual(json.loads(extract.stdout)["status"], "failed")
            # What the launcher said comes with it: srun exits 0 when its tasks' launch failed.
            said = os.path.join(tmp, "said")
            with open(said, "w") as f:
                f.write("#!/bin/sh\necho 'srun: error: task 0 launch failed: Unspecified error' >&2\n"
                        "echo >&2\n")
            os.chmod(said, 0o755)
            run("run", s, "--out", out, "--bench-train", said, "--retry-failed", check=1)
            record = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(record["reason"], "bench-train exited 0 without results: no "
                             "rank-00000.h5; stderr ends: srun: error: task 0 launch failed: "
                             "Unspecified error")

    def test_bad_input_writes_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "bad", "axes:\n  train.micro_batch: [1, 2]\n")
            out = os.path.join(tmp, "out")
            r = run("run", s, "--out", out, "--only", "7", check=2)
            self.assertIn("--only 7", r.stderr)
            self.assertFalse(os.path.exists(out))
            r = run("run", s, check=2)
            self.assertIn("--out", r.stderr)


class Resume(unittest.TestCase):
    def wait_for_running(self, out, index, proc, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if os.path.exists(os.path.join(out, "manifest.json")):
                p = manifest_points(out)[index]
                path = os.path.join(out, p["tag"], "status.json")
                if os.path.exists(path) and read_json(path)["status"] == "running":
                    return p["tag"]
            self.assertIsNone(proc.poll(), "the sweep ended before the point started")
            time.sleep(0.05)
        self.fail("the point never started")

    def test_resumes_after_the_runner_and_its_point_are_killed(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "resume", "axes:\n  train.micro_batch: [1, 2, 3]\n", steps=30)
            out = os.path.join(tmp, "out")
            proc = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out], env=ENV,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
            tag = self.wait_for_running(out, 1, proc)
            # At once: on PyTorch 2.x the 30 steps end within half a second, and a point that had
            # finished is recovered, not run again (test_trust.py HostileFiles).
            # The runner, then its bench-train (in a process group of its own), as a crash would.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            subprocess.run(["pkill", "-KILL", "-f", "--", "--out " + os.path.join(out, tag)])
            before = statuses(out)
            self.assertEqual(list(before.values()), ["ok", "running", "pending"])

            r = run("run", s, "--out", out, check=0)
            self.assertIn("kept: ok", r.stdout)
            self.assertEqual(set(statuses(out).values()), {"ok"})
            st = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(st["attempt"], 2)
            # The attempt kept says how it ended, not the `running` its killed runner left.
            old = read_json(os.path.join(out, tag, "attempts", "1", "status.json"))
            self.assertEqual(old["status"], "incomplete", old)
            self.assertRegex(old["reason"], r"^its runner \(\S+:\d+\) is gone; .*; settled "
                             r"when the next attempt began$")

    def test_ctrl_c_stops_after_the_current_step_and_records_cancelled(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "stop", "axes:\n  train.micro_batch: [1, 2]\n", steps=100000)
            out = os.path.join(tmp, "out")
            proc = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out], env=ENV,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            tag = self.wait_for_running(out, 0, proc)
            time.sleep(2)
            proc.send_signal(signal.SIGINT)
            stdout, _ = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 6, stdout)
            self.assertIn("STOPPED by SIGINT", stdout)
            st = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(st["status"], "cancelled")
            self.assertIn("SIGINT", st["reason"])
            # bench-train wrote its results with its own view of it: cancelled by SIGUSR2.
            summary = read_json(os.path.join(out, tag, "summary.json"))
            self.assertEqual(summary["status"], "cancelled")
            self.assertEqual(list(statuses(out).values()), ["cancelled", "pending"])


def bench_train_pids(out):
    """The bench-train processes running a point of `out` (their --out names it)."""
    r = subprocess.run(["pgrep", "-f", "--", "bench-train.*--out " + out + "/"],
                       capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def wait_until(ready, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if ready():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class Orphans(unittest.TestCase):
    """A runner killed with SIGKILL left bench-train running, and a rerun ran the
    point a second time beside it. Now the point's processes hold the claim's lock (inherited),
    get SIGUSR2 when their runner dies (stop after this step, results written), and a rerun never
    starts a second copy while they live."""

    def start(self, s, out, *extra):
        return subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, *extra], env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    def point_dir(self, out, index):
        return os.path.join(out, manifest_points(out)[index]["tag"])

    @staticmethod
    def training(out, index):
        """True once the point's bench-train has printed a step."""
        path = os.path.join(out, manifest_points(out)[index]["tag"], "logs", "stdout.txt")
        if not os.path.exists(path):
            return False
        with open(path) as f:
            return "/" in f.read().split("# data:")[-1]

    def test_killing_the_runner_stops_its_point_with_results_and_a_rerun_finishes(self):
        for moment, whole_group in (("starting", True), ("training", False), ("training", True)):
            with self.subTest(moment=moment, whole_group=whole_group), \
                    tempfile.TemporaryDirectory() as tmp:
                # 400 steps: a few seconds a point, long enough to be killed while training.
                s = sweep(tmp, "orphan", "axes:\n  train.micro_batch: [1, 2, 3, 4]\n", steps=400)
                out = os.path.join(tmp, "out")
                proc = self.start(s, out)
                wait_until(lambda: os.path.exists(os.path.join(out, "manifest.json")) and
                           statuses(out)[manifest_points(out)[0]["tag"]] == "running",
                           120, "the first point to start")
                if moment == "training":
                    wait_until(lambda: self.training(out, 0), 120, "a training step")
                if whole_group:
                    os.killpg(proc.pid, signal.SIGKILL)
                else:
                    proc.kill()
                proc.wait()
                # Its point stops by itself (SIGUSR2 from its runner's death): no orphan
                # trains on.
                wait_until(lambda: not bench_train_pids(out), 120, "bench-train to end")
                point = self.point_dir(out, 0)
                if moment == "training":
                    summary = read_json(os.path.join(point, "summary.json"))
                    self.assertEqual(summary["status"], "cancelled")
                    self.assertLess(summary["measured_steps"], 399)
                # The rerun runs every point once; the stopped attempt is kept.
                r = run("run", s, "--out", out, check=0)
                self.assertEqual(set(statuses(out).values()), {"ok"}, r.stdout)
                self.assertEqual(read_json(os.path.join(point, "status.json"))["attempt"], 2)
                if moment == "training":
                    kept = os.path.join(point, "attempts", "1", "summary.json")
                    self.assertEqual(read_json(kept)["status"], "cancelled")

    def test_killing_bench_train_is_a_failed_point_and_the_sweep_goes_on(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "killtrain", "axes:\n  train.micro_batch: [1, 2]\n", steps=100000)
            out = os.path.join(tmp, "out")
            proc = self.start(s, out)
            wait_until(lambda: os.path.exists(os.path.join(out, "manifest.json")) and
                       self.training(out, 0), 120, "a training step")
            for pid in bench_train_pids(out):
                os.kill(pid, signal.SIGKILL)
            wait_until(lambda: os.path.exists(os.path.join(self.point_dir(out, 1), "logs")),
                       120, "the second point to start")
            proc.kill()
            proc.wait()
            wait_until(lambda: not bench_train_pids(out), 120, "bench-train to end")
            record = read_json(os.path.join(self.point_dir(out, 0), "status.json"))
            self.assertEqual(record["status"], "failed")
            self.assertIn("killed by SIGKILL", record["reason"])

    def test_a_rerun_never_runs_a_point_beside_its_orphan(self):
        # An orphan that outlives its runner: a wrapper that ignores SIGUSR2 for a while (as a
        # program stuck in a long step would) before bench-train starts.
        with tempfile.TemporaryDirectory() as tmp:
            wrapper = os.path.join(tmp, "slow-bench-train")
            release = os.path.join(tmp, "release")
            real = os.path.join(os.path.dirname(BENCH_SWEEP), "bench-train")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\ntrap '' USR2\n"
                        f"while [ ! -e {shlex.quote(release)} ]; do sleep 0.1; done\n"
                        f"exec {shlex.quote(real)} \"$@\"\n")
            os.chmod(wrapper, 0o755)
            s = sweep(tmp, "outlive", "axes:\n  train.micro_batch: [1, 2]\n", steps=4)
            out = os.path.join(tmp, "out")
            proc = self.start(s, out, "--bench-train", wrapper)
            wait_until(lambda: os.path.exists(os.path.join(out, "manifest.json")) and
                       statuses(out)[manifest_points(out)[0]["tag"]] == "running",
                       120, "the first point to start")
            proc.kill()
            proc.wait()
            point = self.point_dir(out, 0)
            # The rerun finds the orphan holding the point: it says so, waits for it and starts
            # nothing meanwhile (issue 51: it used to end "running (orphaned)", NOT ALL OK, and
            # a third run was needed).
            said = os.path.join(tmp, "rerun.txt")
            with open(said, "w") as log:
                rerun = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--bench-train",
                                          wrapper], env=ENV, stdout=log,
                                         stderr=subprocess.STDOUT)

            def rerun_said():
                with open(said) as f:
                    return f.read()
            wait_until(lambda: "# waiting for" in rerun_said(), 60, "the rerun to wait")
            self.assertIn("is gone, but the point's processes still run", rerun_said())
            time.sleep(1)
            self.assertIsNone(rerun.poll(), rerun_said())
            self.assertFalse(os.path.exists(os.path.join(point, "attempts")), "nothing moved")
            self.assertFalse(os.path.exists(os.path.join(self.point_dir(out, 1), "logs")),
                             "nothing starts beside an orphan")
            st = json.loads(run("status", "--out", out, "--format", "json", check=0).stdout)
            self.assertEqual(st["points"][0]["status"], "running")
            self.assertTrue(st["points"][0]["orphaned"])
            table = run("status", "--out", out, check=0).stdout
            self.assertIn("running (orphaned)", table)
            # The orphan ends with its results; only then does the rerun take the point over, and
            # finding its run finished and whole, records it instead of running it again.
            open(release, "w").close()
            self.assertEqual(rerun.wait(timeout=300), 0, rerun_said())
            self.assertEqual(set(statuses(out).values()), {"ok"}, rerun_said())
            self.assertIn("recovered: its runner died before recording the point", rerun_said())
            # Nothing lost: the orphan's results are the point's.
            self.assertFalse(os.path.exists(os.path.join(point, "attempts")), rerun_said())
            self.assertEqual(read_json(os.path.join(point, "status.json"))["attempt"], 1)


class CtrlC(unittest.TestCase):
    """One Ctrl-C under `timeout` reaches the runner twice (from the terminal and
    from timeout); that second copy killed the point with SIGKILL and no results."""

    def test_one_ctrl_c_under_timeout_still_leaves_results(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "timeout", "axes:\n  train.micro_batch: [1, 2]\n", steps=100000)
            out = os.path.join(tmp, "out")
            # As an interactive shell starts it: timeout leads the job's process group, and the
            # terminal's SIGINT goes to the whole group.
            proc = subprocess.Popen(["timeout", "600", BENCH_SWEEP, "run", s, "--out", out],
                                    env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, start_new_session=True)
            wait_until(lambda: os.path.exists(os.path.join(out, "manifest.json")) and
                       Orphans.training(out, 0), 120, "a training step")
            os.killpg(proc.pid, signal.SIGINT)
            stdout, _ = proc.communicate(timeout=120)
            point = os.path.join(out, manifest_points(out)[0]["tag"])
            record = read_json(os.path.join(point, "status.json"))
            self.assertEqual(record["status"], "cancelled", stdout)
            self.assertNotIn("SIGKILL", record["reason"])
            self.assertEqual(read_json(os.path.join(point, "summary.json"))["status"], "cancelled")
            self.assertNotIn("second stop signal", stdout)

    def test_a_second_ctrl_c_kills_the_point_and_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            # A point that ignores the first stop for a while, so the second one is needed.
            wrapper = os.path.join(tmp, "stubborn-bench-train")
            with open(wrapper, "w") as f:
                f.write("#!/bin/sh\ntrap '' USR2\nsleep 60\n")
            os.chmod(wrapper, 0o755)
            s = sweep(tmp, "twice", "axes:\n  train.micro_batch: [1]\n", steps=4)
            out = os.path.join(tmp, "out")
            proc = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--bench-train",
                                     wrapper], env=ENV, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            wait_until(lambda: os.path.exists(os.path.join(out, "manifest.json")) and
                       statuses(out)[manifest_points(out)[0]["tag"]] == "running",
                       120, "the point to start")
            proc.send_signal(signal.SIGINT)
            time.sleep(1.5)
            proc.send_signal(signal.SIGINT)
            stdout, _ = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 6, stdout)
            self.assertIn("second stop signal: killing the running point now", stdout)
            record = read_json(os.path.join(out, manifest_points(out)[0]["tag"], "status.json"))
            self.assertEqual(record["status"], "cancelled")
            self.assertIn("by a second stop signal, before it could write its results",
                          record["reason"])


class Prune(unittest.TestCase):
    def test_an_out_of_memory_point_prunes_the_larger_ones(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = os.path.join(tmp, "prune.yaml")
            with open(s, "w") as f:
                # A libtorch budget (bench-train's SWEEPBENCH_MAX_MEMORY_MB) that holds micro
                # batches 2 and 4 of this model, not 64: a small, deterministic out of memory.
                f.write(f"""name: prune
base:
  model: {{preset: gpt2-tiny}}
  data: {{source: synthetic, seq_len: 64}}
  train: {{steps: 3, warmup_steps: 1}}
  eval: {{steps: 1}}
  metrics: {{sample_interval_ms: 0, system: false}}
  launch: {{cpus_per_rank: 1, env: {{SWEEPBENCH_MAX_MEMORY_MB: "{PRUNE_BUDGET_MB}"}}}}
axes:
  train.micro_batch: [2, 64, 4, 128]
prune_after_oom: [train.micro_batch]
""")
            out = os.path.join(tmp, "out")
            r = run("run", s, "--out", out, check=1)
            by_mb = {p["varying"]["train.micro_batch"]: p["tag"] for p in manifest_points(out)}
            st = statuses(out)
            self.assertEqual({mb: st[tag] for mb, tag in by_mb.items()},
                             {2: "ok", 64: "oom", 4: "ok", 128: "skipped"}, r.stdout)
            reason = read_json(os.path.join(out, by_mb[128], "status.json"))["reason"]
            self.assertIn(by_mb[64], reason)
            self.assertFalse(os.path.exists(os.path.join(out, by_mb[128], "rank-00000.h5")))
            # A dry run says what a run would do now: keep the ok and oom points, skip 128.
            r = run("run", s, "--out", out, "--dry-run", check=0)
            said = {mb: next(l for l in r.stdout.splitlines() if l.startswith("# ") and tag in l)
                    for mb, tag in by_mb.items()}
            self.assertIn(": would be kept, ok since ", said[2])
            self.assertIn(": would be kept, oom: ", said[64])
            self.assertIn("(--retry-failed reruns it)", said[64])
            self.assertIn(": would be skipped, ", said[128])
            self.assertIn(by_mb[64], said[128])
            self.assertIn("# predicted 0 device-hours: none of its 4 points is to run", r.stdout)
            # Running again keeps the oom (never retried unless asked) and prunes again.
            r = run("run", s, "--out", out, check=1)
            self.assertIn("kept: ", r.stdout)
            self.assertEqual(statuses(out)[by_mb[128]], "skipped")


class RepeatsUntilPrecise(unittest.TestCase):
    """repeats: {most, least, target_ci}: a point's later repeats are skipped once the ones before
    give its headline (a command's seconds) a 95% interval within the target."""

    def sweep(self, tmp, target, most=8, extra=""):
        s = os.path.join(tmp, "repeats.yaml")
        with open(s, "w") as f:
            f.write(f"""name: repeats
base:
  benchmark: command
  command: {{argv: [sleep, "{{params.s}}"]}}
axes:
  params.s: ["0.02", "0.04"]
repeats: {{most: {most}, least: 3, target_ci: {target}{extra}}}
""")
        return s

    def test_steady_repeats_stop_at_the_least_and_the_rest_are_skipped_with_the_reason(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            # Sleeps repeat within a few percent: three of them are precise within 50%.
            r = run("run", self.sweep(tmp, "50%"), "--out", out, check=0)
            self.assertIn("# summary: ok 6 skipped 10 (16 points)", r.stdout)
            points = manifest_points(out)
            st = statuses(out)
            for p in points:
                repeat = int(p["tag"].rsplit(".r", 1)[1])
                self.assertEqual(st[p["tag"]], "ok" if repeat < 3 else "skipped", p["tag"])
                if repeat >= 3:
                    reason = read_json(os.path.join(out, p["tag"], "status.json"))["reason"]
                    self.assertRegex(reason, r"^precise: seconds 0\.0[24]\d* within ±[0-9.]+% "
                                             r"\(95%\) after 3 repeats \(repeats.target_ci 50%\)$")
                    self.assertFalse(os.path.exists(os.path.join(out, p["tag"], "rank-00000.h5")))
            # The groups of repeats are the ones that ran.
            table = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--group-repeats",
                                    "--format", "csv"], capture_output=True, text=True, check=True,
                                   env=ENV).stdout
            rows = list(csv.DictReader(io.StringIO(table)))
            self.assertEqual([(r["status"], r["repeats"]) for r in rows], [("ok", "3"), ("ok", "3")])
            self.assertLess(float(rows[0]["seconds"]), float(rows[1]["seconds"]))
            # A dry run says the same; running again keeps them as they are (no new attempt).
            r = run("run", self.sweep(tmp, "50%"), "--out", out, "--dry-run", check=0)
            self.assertEqual(r.stdout.count(": would be skipped, precise: seconds"), 10, r.stdout)
            r = run("run", self.sweep(tmp, "50%"), "--out", out, check=0)
            self.assertEqual(r.stdout.count("kept: precise: seconds"), 10, r.stdout)
            for p in points:
                self.assertEqual(read_json(os.path.join(out, p["tag"], "status.json"))["attempt"], 1)

    def test_interleaved_rounds_run_each_repeat_in_turn_and_still_stop(self):
        # --interleave: every point's first repeat, then every point's second, ...; a point's
        # later repeats are still skipped once its earlier ones are precise.
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            r = run("run", self.sweep(tmp, "50%"), "--out", out, "--interleave", check=0)
            self.assertIn("# summary: ok 6 skipped 10 (16 points)", r.stdout)
            ran = re.findall(r"^# \d+/16 running s=(0\.0[24])\S*\.r(\d+) ", r.stdout, re.M)
            self.assertEqual(ran, [("0.02", "0"), ("0.04", "0"), ("0.02", "1"), ("0.04", "1"),
                                   ("0.02", "2"), ("0.04", "2")], r.stdout)
            # Without it, a point's repeats run back to back.
            out = os.path.join(tmp, "back-to-back")
            r = run("run", self.sweep(tmp, "50%"), "--out", out, check=0)
            ran = re.findall(r"^# \d+/16 running s=(0\.0[24])\S*\.r(\d+) ", r.stdout, re.M)
            self.assertEqual(ran, [("0.02", "0"), ("0.02", "1"), ("0.02", "2"), ("0.04", "0"),
                                   ("0.04", "1"), ("0.04", "2")], r.stdout)

    def test_warmup_runs_each_point_first_and_leaves_it_out(self):
        # --warmup 1: each point (not each repeat) runs once before any measured repeat; those
        # runs go to OUT/.warmup/<tag>/ and no table, status.json or attempt counts them.
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            r = run("run", self.sweep(tmp, "50%"), "--out", out, "--interleave", "--warmup", "1",
                    check=0)
            self.assertIn("# summary: ok 6 skipped 10 (16 points)", r.stdout)
            lines = r.stdout.splitlines()
            warm = [i for i, line in enumerate(lines) if line.startswith("# warm-up 1/1 ")]
            first_run = next(i for i, line in enumerate(lines) if re.match(r"# \d+/16 running", line))
            self.assertEqual(len(warm), 2, r.stdout)
            self.assertLess(max(warm), first_run, r.stdout)
            self.assertIn("# warm-up: 2 points run 1 time each before any measured repeat", r.stdout)
            self.assertRegex(lines[warm[0]], r"^# warm-up 1/1 s=0\.02\S*\.r0: ok, [0-9.]+ s, left out$")
            warmed = sorted(os.listdir(os.path.join(out, ".warmup")))
            self.assertEqual(len(warmed), 2, warmed)
            for tag in warmed:
                self.assertTrue(os.path.exists(os.path.join(out, ".warmup", tag, "summary.json")))
                self.assertEqual(read_json(os.path.join(out, tag, "status.json"))["attempt"], 1)
            table = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--group-repeats",
                                    "--format", "csv"], capture_output=True, text=True, check=True,
                                   env=ENV).stdout
            rows = list(csv.DictReader(io.StringIO(table)))
            self.assertEqual([(r["status"], r["repeats"]) for r in rows], [("ok", "3"), ("ok", "3")])
            # Nothing left to run: nothing to warm up.
            r = run("run", self.sweep(tmp, "50%"), "--out", out, "--warmup", "1", check=0)
            self.assertNotIn("warm-up", r.stdout)
            r = run("run", self.sweep(tmp, "50%"), "--out", out, "--warmup", "2", "--force",
                    "--dry-run", check=0)
            self.assertIn("# warm-up: 2 points would run 2 times each before any measured repeat",
                          r.stdout)
            # Its directory is removed before each warm-up: never through a link.
            os.rename(os.path.join(out, ".warmup"), os.path.join(tmp, "elsewhere"))
            os.symlink(os.path.join(tmp, "elsewhere"), os.path.join(out, ".warmup"))
            r = run("run", self.sweep(tmp, "50%"), "--out", out, "--warmup", "1", "--force",
                    check=4)
            self.assertIn(".warmup: error: is a link or not a directory", r.stderr)
            self.assertEqual(sorted(os.listdir(os.path.join(tmp, "elsewhere"))), warmed)
            r = run("run", self.sweep(tmp, "50%"), "--out", out, "--warmup", "-1", check=2)
            self.assertIn("--warmup: error: must be from 0 to 100 runs", r.stderr)

    def test_repeats_side_by_side_are_grouped_and_still_stop(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            r = run("run", self.sweep(tmp, "50%"), "--out", out, "--jobs", "2", check=0)
            self.assertIn("skipped", r.stdout)
            table = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--group-repeats",
                                    "--format", "csv"], capture_output=True, text=True, check=True,
                                   env=ENV).stdout
            rows = list(csv.DictReader(io.StringIO(table)))
            # One group a point, whichever CPU each repeat ran on.
            self.assertEqual(len(rows), 2, table)
            self.assertTrue(all(3 <= int(r["repeats"]) <= 4 for r in rows), table)

    def test_a_metric_the_repeats_lack_is_said_and_every_repeat_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            r = run("run", self.sweep(tmp, "50%", most=4, extra=", metric: secnds"), "--out", out,
                    check=0)
            self.assertIn("# summary: ok 8 (8 points)", r.stdout)
            self.assertEqual(r.stdout.count("warning: repeats:"), 1, r.stdout)
            self.assertRegex(r.stdout, r"repeats\.yaml:\d+:\d+: warning: repeats: .*has no number "
                                       r"'secnds', so its repeats cannot stop early and all run")

    def test_an_unreachable_target_runs_every_repeat(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            r = run("run", self.sweep(tmp, "0.0000001", most=4), "--out", out, check=0)
            self.assertIn("# summary: ok 8 (8 points)", r.stdout)

    def test_a_bad_rule_names_the_key(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = os.path.join(tmp, "bad.yaml")
            for text, message in (("{most: 5}", "repeats: needs target_ci"),
                                  ("{least: 3, target_ci: 5%}", "repeats: needs most"),
                                  ("{most: 5, least: 9, target_ci: 5%}", "repeats.least: least (9) is more than most (5)"),
                                  ("{most: 5, target_ci: 150%}", "repeats.target_ci: '150%' is not a target"),
                                  ("{most: 5, target_ci: 5%, until: 3}", "until"),
                                  # A metric is a name, never text for a shell or a path.
                                  ("{most: 5, target_ci: 5%, metric: '$(id)'}",
                                   "repeats.metric: '$(id)' is not a metric's name"),
                                  ("{most: 5, target_ci: 5%, metric: 'a;b`c`'}",
                                   "is not a metric's name"),
                                  ("{most: 5, target_ci: 5%, metric: '../x'}",
                                   "is not a metric's name")):
                with open(s, "w") as f:
                    f.write("base: {model: {preset: gpt2-tiny}}\nrepeats: " + text + "\n")
                r = run("plan", s, check=2)
                self.assertIn(message, r.stderr)
                self.assertIn("bad.yaml:2", r.stderr)


def command_sweep(tmp, name, script, values, extra=""):
    """A sweep of command points (e2e.command_sweep) whose script then prints its CPUs (taskset),
    GPUs and tag."""
    return e2e_command_sweep(tmp, name, script + '; echo "cpus $(taskset -pc $$ | cut -d: -f2)"; '
                             'echo "gpus [$CUDA_VISIBLE_DEVICES] tag $SWEEPBENCH_POINT"; '
                             'echo value 1', values, extra)


def records(out):
    return {p["tag"]: read_json(os.path.join(out, p["tag"], "status.json"))
            for p in manifest_points(out)}


def said(out, tag):
    with open(os.path.join(out, tag, "logs", "stdout.txt")) as f:
        text = f.read()
    cpus = text.split("cpus ", 1)[1].split("\n", 1)[0].strip()
    gpus = text.split("gpus [", 1)[1].split("]", 1)[0]
    return cpus, gpus, text.split(" tag ", 1)[1].split("\n", 1)[0]


def cpu_set(text):
    """{0, 1, 2, 5} from "0-2,5" (as status.json and taskset write CPU lists)."""
    cpus = set()
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


class Jobs(unittest.TestCase):
    """`--jobs N|auto` runs points side by side, each on CPUs and GPUs of its own."""

    def test_points_run_side_by_side_on_cpus_of_their_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = command_sweep(tmp, "side", "sleep 1", [1, 2, 3, 4, 5, 6])
            out = os.path.join(tmp, "out")
            r = run("run", s, "--out", out, "--jobs", "2", check=0)
            self.assertIn("--jobs 2 (", r.stdout)
            self.assertRegex(r.stdout, r"done, \d+:\d\d elapsed, about \d+:\d\d left\]")
            recs = records(out)
            self.assertEqual({x["status"] for x in recs.values()}, {"ok"}, r.stdout)
            side_by_side = 0
            for tag, rec in recs.items():
                cpus, gpus, point = said(out, tag)
                # Its affinity is the CPUs its record names; its processes carry its tag.
                self.assertEqual(cpu_set(cpus), cpu_set(rec["cpus"]))
                self.assertEqual(len(cpu_set(cpus)), 1)  # --jobs 2 on 2 CPUs: one each
                self.assertEqual(point, tag)
                for other in rec["beside"]:
                    # Side by side both ways, never on the same CPU.
                    self.assertIn(tag, recs[other]["beside"])
                    self.assertFalse(cpu_set(rec["cpus"]) & cpu_set(recs[other]["cpus"]))
                side_by_side += bool(rec["beside"])
            self.assertEqual(side_by_side, 6, "every point ran beside another")
            # bench-extract has them as columns.
            table = subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "--format",
                                    "csv"], env=ENV, check=True, capture_output=True, text=True)
            for row in csv.DictReader(table.stdout.splitlines()):
                self.assertEqual(row["cpus"], recs[row["tag"]]["cpus"])
                self.assertEqual(row["beside"], " ".join(recs[row["tag"]]["beside"]))
            # Without --jobs: one at a time, as before, and no record of CPUs or neighbours.
            out1 = os.path.join(tmp, "out1")
            run("run", s, "--out", out1, "--only", "0,1", check=0)
            ran = [p["tag"] for p in manifest_points(out1)][:2]
            for tag in ran:
                rec = read_json(os.path.join(out1, tag, "status.json"))
                self.assertEqual(rec["status"], "ok")
                self.assertNotIn("beside", rec)
                self.assertNotIn("cpus", rec)

    def test_gpus_are_shared_out_by_cuda_visible_devices(self):
        # No GPU here: the runner's CUDA_VISIBLE_DEVICES is what it shares out, and each point
        # sees its own share (what a CUDA program would use).
        with tempfile.TemporaryDirectory() as tmp:
            s = command_sweep(tmp, "gpus", "sleep 0.5", [1, 2, 3, 4],
                              extra="  launch: {gpus_per_rank: 1}\n")
            out = os.path.join(tmp, "out")
            env = dict(ENV, CUDA_VISIBLE_DEVICES="3,5")
            r = bench_sweep("run", s, "--out", out, "--jobs", "auto", env=env, check=0)
            self.assertIn("2 GPUs", r.stdout)
            recs = records(out)
            for tag, rec in recs.items():
                cpus, gpus, _ = said(out, tag)
                self.assertIn(gpus, ("3", "5"))
                self.assertEqual(gpus, rec["gpus"])
                for other in rec["beside"]:
                    self.assertNotEqual(rec["gpus"], recs[other]["gpus"])

    def test_an_exclusive_point_runs_alone(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = command_sweep(tmp, "alone", "sleep 0.3", [1, 2, 3],
                              extra="  launch: {exclusive: node}\n")
            out = os.path.join(tmp, "out")
            run("run", s, "--out", out, "--jobs", "auto", check=0)
            for tag, rec in records(out).items():
                self.assertEqual(rec["beside"], [])
                # Alone, it holds every CPU the runner has.
                self.assertEqual(cpu_set(said(out, tag)[0]), cpu_set(rec["cpus"]))
                self.assertEqual(cpu_set(rec["cpus"]), os.sched_getaffinity(0))

    def test_a_bad_jobs_value_is_refused_before_anything_is_written(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = command_sweep(tmp, "bad", "true", [1])
            out = os.path.join(tmp, "out")
            for bad in ("0", "-1", "two", ""):
                r = run("run", s, "--out", out, "--jobs", bad, check=2)
                self.assertIn("--jobs", r.stderr)
                self.assertIn("auto", r.stderr)
            self.assertFalse(os.path.exists(out))

    def test_ctrl_c_stops_every_running_point_and_a_rerun_finishes(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "stopjobs", "axes:\n  train.micro_batch: [1, 2, 3]\n", steps=100000)
            out = os.path.join(tmp, "out")
            proc = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--jobs", "2"],
                                    env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True)
            wait_until(lambda: os.path.exists(os.path.join(out, "manifest.json")) and
                       Orphans.training(out, 0) and Orphans.training(out, 1), 120,
                       "two points training")
            proc.send_signal(signal.SIGINT)
            stdout, _ = proc.communicate(timeout=120)
            self.assertEqual(proc.returncode, 6, stdout)
            st = statuses(out)
            tags = [p["tag"] for p in manifest_points(out)]
            self.assertEqual([st[t] for t in tags], ["cancelled", "cancelled", "pending"], stdout)
            for t in tags[:2]:
                self.assertEqual(read_json(os.path.join(out, t, "summary.json"))["status"],
                                 "cancelled")
            self.assertEqual(bench_train_pids(out), [])
            # The rerun (short now) runs all three.
            s = sweep(tmp, "stopjobs", "axes:\n  train.micro_batch: [1, 2, 3]\n", steps=4)
            run("run", s, "--out", out, "--jobs", "2", check=0)

    def test_a_killed_runner_with_jobs_is_resumed_by_the_next(self):
        # SIGKILL to the runner while two points train: each gets SIGUSR2 (its parent died),
        # stops after its step and records cancelled; the rerun runs both again (attempt 2) and
        # the third, and `status` agrees.
        with tempfile.TemporaryDirectory() as tmp:
            s = sweep(tmp, "killjobs", "axes:\n  train.micro_batch: [1, 2, 3]\n", steps=2000)
            out = os.path.join(tmp, "out")
            proc = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--jobs", "2"],
                                    env=ENV, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            wait_until(lambda: os.path.exists(os.path.join(out, "manifest.json")) and
                       Orphans.training(out, 0) and Orphans.training(out, 1), 120,
                       "two points training")
            proc.kill()
            proc.wait()
            wait_until(lambda: bench_train_pids(out) == [], 120, "the orphaned points to end")
            r = run("run", s, "--out", out, "--jobs", "2", check=0)
            tags = [p["tag"] for p in manifest_points(out)]
            recs = records(out)
            self.assertEqual({recs[t]["status"] for t in tags}, {"ok"}, r.stdout)
            for t in tags[:2]:
                # Its first attempt, kept: bench-train's own record of the stop.
                first = os.path.join(out, t, "attempts", "1")
                self.assertTrue(os.path.isdir(first) or "recovered" in r.stdout, r.stdout)
            table = run("status", "--out", out, check=0)
            self.assertIn("ok 3", table.stdout)

    def test_two_runners_with_jobs_run_each_point_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            s = command_sweep(tmp, "two", "sleep 0.5", list(range(8)))
            out = os.path.join(tmp, "out")
            run("plan", s, "--out", out, check=0)
            procs = [subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--jobs", "2"],
                                      env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True) for _ in range(2)]
            outputs = [p.communicate(timeout=300)[0] for p in procs]
            recs = records(out)
            self.assertEqual({r["status"] for r in recs.values()}, {"ok"}, outputs)
            self.assertEqual({r["attempt"] for r in recs.values()}, {1}, outputs)
            for tag in recs:
                self.assertFalse(os.path.exists(os.path.join(out, tag, "attempts")))

    def test_a_point_queued_beside_one_that_ran_out_of_memory_is_still_pruned(self):
        with tempfile.TemporaryDirectory() as tmp:
            # i=1 runs a while; i=2 runs out of memory at once, beside it; i=3 and i=4, larger,
            # wait in the queue and are pruned when their turn comes.
            script = ('case $SWEEPBENCH_POINT in i=1.*) sleep 2;; '
                      'i=2.*) echo "CUDA out of memory" >&2; exit 1;; esac')
            s = command_sweep(tmp, "oom", script, [1, 2, 3, 4])
            with open(s, "a") as f:
                f.write("prune_after_oom: [params.i]\n")
            out = os.path.join(tmp, "out")
            r = run("run", s, "--out", out, "--jobs", "2", check=1)
            by_i = {p["varying"]["params.i"]: p["tag"] for p in manifest_points(out)}
            st = statuses(out)
            self.assertEqual({i: st[t] for i, t in by_i.items()},
                             {1: "ok", 2: "oom", 3: "skipped", 4: "skipped"}, r.stdout)
            self.assertIn(by_i[1], records(out)[by_i[2]]["beside"])

    def test_what_a_point_leaves_running_is_ended_in_its_own_name(self):
        with tempfile.TemporaryDirectory() as tmp:
            # i=1 leaves a daemon behind (its own session) and ends as soon as the daemon has
            # left its process group (until then, the group's end takes it along, and a loaded
            # machine may not have run its setsid yet); i=2 runs on beside it for a while. The
            # daemon is i=1's leftover, named in i=1's log, not i=2's. Its duration is this
            # test's own, so that no other process matches it.
            daemon = f"sleep 300.{os.getpid()}"
            ready = os.path.join(tmp, "daemon-ready")
            script = ('case $SWEEPBENCH_POINT in i=1.*) '
                      f'setsid sh -c \'touch "$0"; exec {daemon}\' {ready} '
                      '>/dev/null 2>&1 < /dev/null & '
                      f'n=0; while [ ! -e {ready} ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); '
                      'done;; *) sleep 3;; esac')
            s = command_sweep(tmp, "left", script, [1, 2])
            out = os.path.join(tmp, "out")
            r = run("run", s, "--out", out, "--jobs", "2", check=0)
            by_i = {p["varying"]["params.i"]: p["tag"] for p in manifest_points(out)}

            def stderr_of(i):
                with open(os.path.join(out, by_i[i], "logs", "stderr.txt")) as f:
                    return f.read()
            self.assertIn("(sleep)", stderr_of(1), r.stdout)
            self.assertNotIn("left running", stderr_of(2))
            gone = subprocess.run(["pgrep", "-f", daemon], capture_output=True, text=True)
            self.assertEqual(gone.stdout.strip(), "")

    def test_a_terminal_shows_one_live_progress_line(self):
        import pty
        with tempfile.TemporaryDirectory() as tmp:
            s = command_sweep(tmp, "live", "sleep 1.2", [1, 2, 3, 4])
            out = os.path.join(tmp, "out")
            primary, secondary = pty.openpty()
            proc = subprocess.Popen([BENCH_SWEEP, "run", s, "--out", out, "--jobs", "2"],
                                    env=dict(ENV, TERM="xterm"), stdout=secondary,
                                    stderr=subprocess.STDOUT)
            os.close(secondary)
            chunks = []
            while True:
                try:
                    data = os.read(primary, 65536)
                except OSError:
                    break
                if not data:
                    break
                chunks.append(data)
            proc.wait(timeout=60)
            os.close(primary)
            text = b"".join(chunks).decode()
            self.assertEqual(proc.returncode, 0, text)
            self.assertIn("\r\x1b[K", text)
            self.assertRegex(text, r"bench-sweep: \d/4 done.*, \d running, \d+:\d\d elapsed")
            # The line is taken down at the end: the summary starts a line of its own.
            self.assertIn("\n# summary: ok 4", text.replace("\r\x1b[K", "\n"))


class Injection(unittest.TestCase):
    HOSTILE = ["$(touch {p})", "\"; touch {p}; \"", "`touch {p}`", "a\ntouch {p}", "'; touch {p}; '"]

    def test_no_value_in_a_sweep_file_runs_as_shell(self):
        with tempfile.TemporaryDirectory() as tmp:
            pwned = os.path.join(tmp, "pwned")
            values = [v.format(p=pwned) for v in self.HOSTILE]
            # One scenario per value, in an environment variable and a job name.
            body = "scenarios:\n" + "".join(
                f"  - name: s{i}\n    base: {{launch.env: {{PROBE: {json.dumps(v)}}}, "
                f"slurm.job_name: {json.dumps(v)}}}\n" for i, v in enumerate(values))
            s = sweep(tmp, "inject", body, steps=2)
            out = os.path.join(tmp, "out")
            run("plan", s, "--out", out, check=0)
            r = run("run", s, "--out", out, "--dry-run", check=0)
            # Each command follows its "# i/n" line; a value with a newline spans lines, quoted.
            lines, current = [], None
            for line in r.stdout.splitlines(keepends=True):
                if line.startswith("#"):
                    if current:
                        lines.append(current.rstrip("\n"))
                    current = "" if line.startswith(("# 1/", "# 2/", "# 3/", "# 4/", "# 5/")) else None
                elif current is not None:
                    current += line
            self.assertEqual(len(lines), len(values), r.stdout)
            # The printed commands, read back by a shell's rules, carry each value verbatim...
            probes = sorted(w.split("=", 1)[1] for line in lines for w in shlex.split(line)
                            if w.startswith("PROBE="))
            self.assertEqual(probes, sorted(values))
            # ...and so does sh itself: run each line with bench-train swapped for a printer.
            for line, value in zip(lines, values):
                words = shlex.split(line)
                self.assertEqual(words[0], "env")
                script = line.replace(shlex.quote(words[2]) if words[2] != shlex.quote(words[2]) else words[2],
                                      "sh -c 'printf %s \"$PROBE\"' x", 1)
                printed = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60)
                self.assertEqual(printed.stdout, value, script)
            # The real run: each value reaches bench-train's environment, and none runs.
            run("run", s, "--out", out, check=0)
            self.assertFalse(os.path.exists(pwned), "a value ran as shell")
            self.assertEqual(set(statuses(out).values()), {"ok"})


if __name__ == "__main__":
    unittest.main()
