#!/usr/bin/python3
"""`bench-sweep status` and bench-extract name every state of a point with the same word: both
call layout/point_status.h's one decision.

The states come from real runs where a run makes them (ok, oom, a run killed with its runner),
and from the files a runner writes where a run would take minutes or a scheduler (failed,
timeout, cancelled: the runner's status.json; running: a claim held by a live process; a runner
gone: a claim nobody holds; a rank file cut short; a point never run).
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/layout/test_status_agreement.py -v
"""
import csv
import fcntl
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from e2e import BENCH_SWEEP, BIN, ENV, bench_sweep, read_json  # noqa: E402

BENCH_EXTRACT = os.path.join(BIN, "bench-extract")

SWEEP = """\
name: %(name)s
base:
  model: {preset: gpt2-tiny}
  data: {source: synthetic, seq_len: 32}
  train: {steps: %(steps)d, warmup_steps: 1, micro_batch: 2}
  metrics: {sample_interval_ms: 0, system: false}
  launch: {cpus_per_rank: 1, env: {SWEEPBENCH_MAX_MEMORY_MB: "24"}}
repeats: %(repeats)d
axes:
  train.micro_batch: %(batches)s
"""


def write_sweep(tmp, name, steps, repeats, batches):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(SWEEP % dict(name=name, steps=steps, repeats=repeats, batches=batches))
    return path


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f)


def dead_pid():
    """A pid that no process has now (a child that has exited and been reaped)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def statuses_of_sweep_status(out):
    r = bench_sweep("status", "--out", out, "--format", "json", check=0)
    return {p["tag"]: (p["status"], p["note"]) for p in json.loads(r.stdout)["points"]}


def statuses_of_extract(out):
    r = subprocess.run([BENCH_EXTRACT, "-i", out], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"bench-extract: exit {r.returncode}\n{r.stderr}")
    return {row["tag"]: (row["status"], row["reason"]) for row in csv.DictReader(io.StringIO(r.stdout))}


class Agreement(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        tmp = cls._tmp.name
        cls.holders = []
        # Nine repeats of a 2-sample point and one of 64 samples, which runs out of its 24 MB.
        sweep = write_sweep(tmp, "states", steps=2, repeats=9, batches="[2, 64]")
        cls.out = os.path.join(tmp, "states")
        plan = json.loads(bench_sweep("plan", sweep, "--format", "json", check=0).stdout)
        small = sorted((p for p in plan["points"] if p["varying"]["train.micro_batch"] == 2),
                       key=lambda p: p["repeat"])
        big = [p for p in plan["points"] if p["varying"]["train.micro_batch"] == 64]
        tags = [p["tag"] for p in small]
        cls.expected = {}
        names = ["ok", "failed", "timeout", "cancelled", "cut", "running", "gone", "pending"]
        cls.tag = dict(zip(names, tags))
        cls.tag["oom"] = big[0]["tag"]
        ran = [cls.tag[n] for n in ("ok", "failed", "timeout", "cancelled", "cut", "oom")]
        # The oom point exits 1: the sweep does too.
        bench_sweep("run", sweep, "--out", cls.out, "--only", ",".join(ran), check=1)
        # The rest of the sweep: planned but never run.
        bench_sweep("plan", sweep, "--out", cls.out, check=0)

        def point(name):
            return os.path.join(cls.out, cls.tag[name])

        # What a runner writes when bench-train fails, times out or is cancelled.
        for name, status, reason in (("failed", "failed", "exit code 1: it broke"),
                                     ("timeout", "timeout", "SIGUSR1: the time limit"),
                                     ("cancelled", "cancelled", "SIGTERM")):
            record = read_json(os.path.join(point(name), "status.json"))
            record.update(status=status, reason=reason)
            write_json(os.path.join(point(name), "status.json"), record)
        # A rank file cut short after the run (a full disk, a copy that stopped).
        rank = os.path.join(point("cut"), "rank-00000.h5")
        os.truncate(rank, os.path.getsize(rank) // 2)
        # Running: status.json says so and a live process holds the claim.
        record = read_json(os.path.join(point("ok"), "status.json"))
        for name in ("running", "gone"):
            r = dict(record, status="running", reason="", host=socket.gethostname(),
                     exit_code=-1)
            write_json(os.path.join(point(name), "status.json"), r)
        holder = subprocess.Popen(
            [sys.executable, "-c",
             "import fcntl, json, os, socket, sys, time\n"
             "f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX)\n"
             "json.dump({'host': socket.gethostname(), 'pid': os.getpid(), 'since': 'now'}, f)\n"
             "f.flush(); print('held', flush=True); time.sleep(600)\n",
             os.path.join(point("running"), ".claim")], stdout=subprocess.PIPE, text=True)
        cls.holders.append(holder)
        assert holder.stdout.readline().strip() == "held"
        # A runner gone: its claim file names a dead process and nobody holds its lock.
        write_json(os.path.join(point("gone"), ".claim"),
                   {"host": socket.gethostname(), "pid": dead_pid(), "since": "then"})

        # A run killed with its runner (a crash, a lost node), in a sweep of its own.
        slow = write_sweep(tmp, "killed", steps=100000, repeats=1, batches="[2]")
        cls.killed_out = os.path.join(tmp, "killed")
        proc = subprocess.Popen([BENCH_SWEEP, "run", slow, "--out", cls.killed_out], env=ENV,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.time() + 120
        running = False
        while time.time() < deadline and not running:
            time.sleep(0.1)
            if not os.path.isdir(cls.killed_out):
                continue
            for d in os.listdir(cls.killed_out):
                s = os.path.join(cls.killed_out, d, "status.json")
                running = running or (os.path.exists(s) and read_json(s)["status"] == "running")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert running, "the slow point never started"
        # Its processes die with it (PR_SET_PDEATHSIG): wait until the claim's lock is free.
        for _ in range(200):
            busy = False
            for d in os.listdir(cls.killed_out):
                c = os.path.join(cls.killed_out, d, ".claim")
                if os.path.exists(c):
                    with open(c) as f:
                        try:
                            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
                        except BlockingIOError:
                            busy = True
            if not busy:
                break
            time.sleep(0.1)

    @classmethod
    def tearDownClass(cls):
        for h in cls.holders:
            h.kill()
            h.wait()
        cls._tmp.cleanup()

    def check_both(self, out, expected):
        by_status = statuses_of_sweep_status(out)
        by_extract = statuses_of_extract(out)
        for tag, want in expected.items():
            with self.subTest(tag=tag):
                self.assertEqual(by_status[tag][0], want, f"bench-sweep status: {by_status[tag]}")
                self.assertEqual(by_extract[tag][0], want, f"bench-extract: {by_extract[tag]}")
        return by_status, by_extract

    def test_every_state_has_one_word(self):
        expected = {self.tag["ok"]: "ok", self.tag["failed"]: "failed",
                    self.tag["timeout"]: "timeout", self.tag["cancelled"]: "cancelled",
                    self.tag["oom"]: "oom", self.tag["cut"]: "incomplete",
                    self.tag["running"]: "running", self.tag["gone"]: "incomplete",
                    self.tag["pending"]: "pending"}
        by_status, by_extract = self.check_both(self.out, expected)
        # The reasons that come from the files read the same too.
        for name in ("cut", "gone", "failed"):
            self.assertEqual(by_status[self.tag[name]][1], by_extract[self.tag[name]][1], name)
        self.assertIn("rank-00000.h5 is cut short", by_status[self.tag["cut"]][1])
        self.assertIn("is gone; `bench-sweep run` runs it again", by_status[self.tag["gone"]][1])

    def test_a_killed_run_is_incomplete_in_both(self):
        tags = [d for d in os.listdir(self.killed_out)
                if os.path.isdir(os.path.join(self.killed_out, d))]
        self.assertEqual(len(tags), 1)
        self.check_both(self.killed_out, {tags[0]: "incomplete"})

    def test_extract_never_asks_slurm(self):
        # A claim naming a SLURM job on another host: bench-sweep status would ask squeue;
        # bench-extract must not run any scheduler command. A fake squeue on PATH tells.
        with tempfile.TemporaryDirectory() as bin_dir:
            log = os.path.join(bin_dir, "called")
            for cmd in ("squeue", "sacct", "scontrol"):
                with open(os.path.join(bin_dir, cmd), "w") as f:
                    f.write(f"#!/bin/sh\necho {cmd} >> {log}\nexit 1\n")
                os.chmod(os.path.join(bin_dir, cmd), 0o755)
            claim = os.path.join(self.out, self.tag["pending"], ".claim")
            write_json(claim, {"host": "elsewhere", "pid": 1, "slurm_job_id": "77",
                               "since": "then"})
            try:
                env = dict(ENV, PATH=bin_dir + ":" + ENV["PATH"])
                r = subprocess.run([BENCH_EXTRACT, "-i", self.out], env=env,
                                   capture_output=True, text=True, timeout=300)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertFalse(os.path.exists(log), "bench-extract ran a SLURM command")
                bench_sweep("status", "--out", self.out, env=env, check=0)
                self.assertTrue(os.path.exists(log), "bench-sweep status asks SLURM")
            finally:
                os.unlink(claim)


if __name__ == "__main__":
    unittest.main()
