#!/usr/bin/python3
"""Sweeps on a real SLURM cluster: `sbatch slurm/sweep.sh` in array and allocation mode,
`bench-sweep submit` (grouping, MaxArraySize chunks, --max-parallel), scancel and rerun, a point
that reaches its time limit and is requeued, `bench-sweep status`, claims left by a lost node, and
sweep values that would be shell in the wrong hands.

Each class starts its own cluster (tests/support/slurm_cluster.py: munged, slurmctld and slurmd on
loopback, nothing installed); points run bench-train through `srun --mpi=pmix`. One ctest per
class (tests/CMakeLists.txt):
    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/launch/test_slurm.py -v ArrayMode
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BENCH_SWEEP, SOURCE, command_sweep, read_json, read_yaml  # noqa: E402
import slurm_case  # noqa: E402

SWEEP_SH = os.path.join(SOURCE, "slurm", "sweep.sh")


def sweep_file(tmp, name, steps=4, axes="  launch.ranks: [1, 2]\n  train.micro_batch: [2, 4]\n",
               slurm="{exclusive: false}", extra=""):
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"""\
name: {name}
base:
  model: {{preset: gpt2-tiny}}
  data: {{source: synthetic, seq_len: 32}}
  train: {{steps: {steps}, warmup_steps: 1, micro_batch: 2}}
  eval: {{steps: 1}}
  metrics: {{sample_interval_ms: 0, system: false}}
  launch: {{cpus_per_rank: 1}}
  slurm: {slurm}
{extra}axes:
{axes}""")
    return path


class SlurmCase(slurm_case.SlurmCase):
    def status(self, out):
        # Exit 10: a point missed a performance reference (test_command_sweep_as_an_array).
        r = self.bench_sweep("status", "--out", out, "--format", "json", check=None)
        self.assertIn(r.returncode, (0, 10), r.stderr)
        return {p["tag"]: p for p in json.loads(r.stdout)["points"]}

    def assert_all(self, out, status, count):
        points = self.status(out)
        self.assertEqual(len(points), count, points)
        for tag, p in points.items():
            self.assertEqual(p["status"], status, f"{tag}: {p}\n{self.job_logs(out)}")
        return points

    def job_logs(self, out):
        text = []
        for log in sorted(glob.glob(os.path.join(self.tmp, "*.out")) +
                          glob.glob(os.path.join(out, "submit", "logs", "*"))):
            with open(log, errors="replace") as f:
                text.append(f"--- {log}\n{f.read()[-3000:]}")
        return "\n".join(text)

    def point_logs(self, out, tag):
        """Every log and status record of a point's attempts, for a failure message."""
        text = []
        names = ("status.json", os.path.join("logs", "stdout.txt"), os.path.join("logs", "stderr.txt"))
        for d in [os.path.join(out, tag)] + sorted(glob.glob(os.path.join(out, tag, "attempts", "*"))):
            for name in names:
                path = os.path.join(d, name)
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        text.append(f"--- {path}\n{f.read()[-3000:]}")
        return "\n".join(text)


class ArrayMode(SlurmCase):
    def test_sbatch_array_runs_point_i_in_task_i(self):
        s = sweep_file(self.tmp, "arr")
        out = os.path.join(self.tmp, "out")
        # Two of the four points have 2 ranks: srun --mpi=pmix starts them inside the task.
        self.sbatch("--array=0-3", "--ntasks=2", "--output=" + self.tmp + "/arr-%a.out",
                    SWEEP_SH, s, out)
        self.cluster.wait_until_idle()
        points = self.assert_all(out, "ok", 4)
        for tag, p in points.items():
            record = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(record["launcher"], "srun")
            self.assertRegex(record["slurm_job_id"], r"^\d+_[0-3]$")
            index = read_json(os.path.join(out, "manifest.json"))["points"]
            task = int(record["slurm_job_id"].split("_")[1])
            self.assertEqual([e["index"] for e in index if e["tag"] == tag], [task])
            ranks = len(glob.glob(os.path.join(out, tag, "rank-*.h5")))
            self.assertEqual(ranks, 2 if ".ws=2." in tag else 1, tag)

    def test_memory_knobs_sweep_as_an_array(self):
        # sweeps/memory-knobs-cpu.yaml as its header says: ZeRO 0 to 3, LoRA, tensor
        # parallelism, offload, overlap and profiling, 2 ranks each through srun --mpi=pmix, one
        # array task per point.
        out = os.path.join(self.tmp, "knobs")
        self.sbatch("--array=0-9", "--ntasks=2", "--output=" + self.tmp + "/knobs-%a.out", SWEEP_SH,
                    os.path.join(SOURCE, "sweeps", "memory-knobs-cpu.yaml"), out)
        self.cluster.wait_until_idle()
        points = self.assert_all(out, "ok", 10)
        held = {}
        for tag in points:
            record = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(record["launcher"], "srun")
            self.assertEqual(len(glob.glob(os.path.join(out, tag, "rank-*.h5"))), 2, tag)
            config = read_yaml(os.path.join(out, tag, "config.yaml"))
            summary = read_json(os.path.join(out, tag, "summary.json"))
            held[(config["train"]["zero_stage"], config["train"]["peft"],
                  config["launch"]["tensor_parallel"], config["train"]["offload_optimizer"],
                  config["train"]["overlap_comm"])] = summary["metrics"]["mem_model_states_bytes"]
            if config["metrics"]["profile_steps"]:
                for rank in (0, 1):
                    self.assertTrue(os.path.exists(os.path.join(out, tag, "profile",
                                                                f"rank-{rank:05d}.pt.trace.json")))
        self.assertEqual(len(held), 10)
        plain = [held[(s, "none", 1, False, False)] for s in range(4)]
        self.assertEqual(plain, sorted(plain, reverse=True))
        self.assertLess(held[(0, "none", 2, False, False)], plain[0])
        self.assertLess(held[(2, "none", 1, True, False)], plain[2])
        self.assertEqual(held[(3, "none", 1, False, True)], plain[3])

    def test_command_sweep_as_an_array(self):
        # A user's program per point, each in its own array task, through srun --mpi=pmix.
        s = os.path.join(self.tmp, "cmd.yaml")
        with open(s, "w") as f:
            f.write("""\
name: cmd
base:
  benchmark: command
  slurm: {exclusive: false}
  command:
    argv: [sh, -c, 'echo "task $SLURM_ARRAY_TASK_ID rank {rank}/{world_size}"; echo "value={params.v}"']
    metrics: [{name: value, regex: 'value=([0-9]+)'}]
axes:
  params.v: [3, 5]
  launch.ranks: [1, 2]
# Keyed by the job's partition: v=5 misses the second; the third is another partition's.
references:
  - {metric: value, value: 4, lower: -1, upper: 1, partition: deb*}
  - {metric: value, value: 3, upper: 0, partition: debug, when: {params.v: 5}}
  - {metric: value, value: 100, lower: -1, partition: urgent}
""")
        out = os.path.join(self.tmp, "out")
        self.sbatch("--array=0-3", "--ntasks=2", "--output=" + self.tmp + "/cmd-%a.out", SWEEP_SH,
                    s, out)
        self.cluster.wait_until_idle()
        points = self.assert_all(out, "ok", 4)
        for tag in points:
            record = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(record["launcher"], "srun")
            ranks = 2 if ".ws=2." in tag else 1
            self.assertEqual(len(glob.glob(os.path.join(out, tag, "rank-*.h5"))), ranks, tag)
            summary = read_json(os.path.join(out, tag, "summary.json"))
            self.assertEqual(summary["metrics"]["value"], int(tag.split("v=")[1][0]))
            self.assertEqual(record["partition"], "debug")
            self.assertEqual([c["reference"] for c in record["references"]],
                             [3] if "v=5" in tag else [4])
            self.assertEqual(record["reference"], "miss" if "v=5" in tag else "pass", tag)
            with open(os.path.join(out, tag, "logs", "rank-00000.stdout.txt")) as f:
                self.assertRegex(f.read(), rf"task [0-3] rank 0/{ranks}")
        status = self.bench_sweep("status", "--out", out, check=10)
        self.assertIn("# references: 2 passed, 2 missed (exit 10)", status.stdout)

    def test_a_rank_that_dies_ends_the_point_instead_of_leaving_the_others_waiting(self):
        # Rank 1 fails at once; rank 0 would wait 300 s, as a rank whose peer crashed waits in
        # its next collective. srun --kill-on-bad-exit=1 ends the step: the point fails in
        # seconds (SLURM's default would let rank 0 run on until the time limit).
        s = os.path.join(self.tmp, "dies.yaml")
        with open(s, "w") as f:
            f.write("""\
name: dies
base:
  benchmark: command
  slurm: {exclusive: false}
  launch: {ranks: 2}
  command:
    argv: [sh, -c, 'if [ {rank} = 1 ]; then exit 3; fi; exec sleep 300']
""")
        out = os.path.join(self.tmp, "out")
        start = time.monotonic()
        self.sbatch("--ntasks=2", "--output=" + self.tmp + "/dies-%j.out", SWEEP_SH, s, out)
        self.cluster.wait_until_idle(240)
        self.assertLess(time.monotonic() - start, 150, self.job_logs(out))
        (tag, point), = self.status(out).items()
        self.assertEqual(point["status"], "failed", f"{point}\n{self.job_logs(out)}")
        record = read_json(os.path.join(out, tag, "status.json"))
        self.assertIn("--kill-on-bad-exit=1", record["command"])
        self.assertLess(record["seconds"], 120, record)
        # The reason names the rank that ended first, not only rank 0's SIGTERM from srun.
        self.assertRegex(record["reason"], r"^srun: task 1 on \S+ ended first: Exited with exit "
                         r"code 22; rank 0: ", record)

    def test_sweep_sh_fails_fast_without_bench_sweep(self):
        s = sweep_file(self.tmp, "nobin")
        env = {"PATH": "/usr/bin:/bin", "SLURM_CONF": self.env["SLURM_CONF"]}
        r = self.cluster.run("sbatch", "--parsable", "--wait", "--output=" + self.tmp + "/nb.out",
                             SWEEP_SH, s, os.path.join(self.tmp, "out"), env=env, cwd=self.tmp,
                             check=False)
        self.assertNotEqual(r.returncode, 0)
        with open(os.path.join(self.tmp, "nb.out")) as f:
            log = f.read()
        self.assertIn("bench-sweep not found", log)
        self.assertIn("SWEEPBENCH_BIN_DIR", log)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "out")))


class AllocationMode(SlurmCase):
    def test_one_allocation_runs_every_point_then_scancel_and_rerun(self):
        s = sweep_file(self.tmp, "alloc")
        out = os.path.join(self.tmp, "out")
        self.sbatch("--ntasks=2", "--output=" + self.tmp + "/alloc-%j.out", SWEEP_SH, s, out)
        self.cluster.wait_until_idle()
        self.assert_all(out, "ok", 4)

        # A slower sweep, cancelled while its third point runs.
        s = sweep_file(self.tmp, "cancel", steps=400)
        out = os.path.join(self.tmp, "cancel-out")
        job = self.sbatch("--ntasks=2", "--output=" + self.tmp + "/cancel-%j.out", SWEEP_SH, s,
                          out)

        def third_running():
            if not os.path.exists(os.path.join(out, "manifest.json")):
                return False
            states = [p["status"] for p in self.status(out).values()]
            return states.count("ok") == 2 and "running" in states
        self.wait_for(third_running, 240, "the third point to run")
        self.cluster.run("scancel", job)
        self.cluster.wait_until_idle()
        before = self.status(out)
        self.assertEqual(sorted(p["status"] for p in before.values()),
                         ["cancelled", "ok", "ok", "pending"], before)
        started = {tag: read_json(os.path.join(out, tag, "status.json"))["started"]
                   for tag, p in before.items() if p["status"] == "ok"}

        self.sbatch("--ntasks=2", "--output=" + self.tmp + "/cancel-%j.out", SWEEP_SH, s, out)
        self.cluster.wait_until_idle()
        self.assert_all(out, "ok", 4)
        for tag, when in started.items():  # kept, not run again
            self.assertEqual(read_json(os.path.join(out, tag, "status.json"))["started"], when)
            self.assertFalse(os.path.exists(os.path.join(out, tag, "attempts")))
        cancelled = [t for t, p in before.items() if p["status"] == "cancelled"][0]
        record = read_json(os.path.join(out, cancelled, "status.json"))
        self.assertEqual(record["attempt"], 2, f"{record}\n{self.job_logs(out)}")
        old = read_json(os.path.join(out, cancelled, "attempts", "1", "status.json"))
        self.assertEqual(old["status"], "cancelled")


    def test_ctrl_c_reaches_the_ranks_through_srun(self):
        s = sweep_file(self.tmp, "ctrlc", steps=10 ** 6, axes="  launch.ranks: [2]\n")
        out = os.path.join(self.tmp, "out")
        self.sbatch("--ntasks=2", "--output=" + self.tmp + "/ctrlc-%j.out", SWEEP_SH, s, out)

        def running():
            p = os.path.join(out, "manifest.json")
            return os.path.exists(p) and \
                [x["status"] for x in self.status(out).values()] == ["running"]
        self.wait_for(running, 120, "the point to run")
        tag = list(self.status(out))[0]
        record = read_json(os.path.join(out, tag, "status.json"))
        time.sleep(2)  # a few steps in
        os.kill(record["pid"], signal.SIGINT)  # the batch job's bench-sweep, on this host
        self.cluster.wait_until_idle()
        record = read_json(os.path.join(out, tag, "status.json"))
        self.assertEqual(record["status"], "cancelled", record)
        # bench-sweep sent SIGUSR2 to srun, srun to both ranks: bench-train's own "cancelled".
        self.assertIn("exit code 23", record["reason"])
        summary = read_json(os.path.join(out, tag, "summary.json"))
        self.assertEqual(summary["status"], "cancelled", summary)


class Preemption(SlurmCase):
    CLUSTER = dict(preempt_mode="CANCEL")

    def test_a_preempted_point_shows_preempted_and_runs_again(self):
        s = sweep_file(self.tmp, "pre", steps=10 ** 6, axes="  launch.ranks: [2]\n",
                       slurm="{exclusive: true}")
        out = os.path.join(self.tmp, "out")
        self.bench_sweep("submit", s, "--out", out)
        tag = read_json(os.path.join(out, "manifest.json"))["points"][0]["tag"]
        self.wait_for(lambda: self.status(out)[tag]["status"] == "running", 120,
                      "the point to run")
        self.sbatch("--partition=urgent", "--exclusive", "--wrap", "sleep 1")
        self.cluster.wait_until_idle()
        p = self.status(out)[tag]
        self.assertEqual(p["status"], "preempted", p)
        self.assertIn("PREEMPTED", p["note"])
        # Submitting again would run it again.
        r = self.bench_sweep("submit", s, "--out", out, "--dry-run")
        self.assertIn(f"'{tag}'  # index 0", r.stdout)


class PreemptRequeue(SlurmCase):
    CLUSTER = dict(preempt_mode="REQUEUE")

    def test_slurm_requeues_a_preempted_point_which_then_ends_ok(self):
        # Long enough to be running when the urgent job comes (a few seconds later) on a fast
        # engine: 1500 steps took 2.2 s on PyTorch 2.15 and ended before the preemption; this
        # many take about 30 s here, and the second attempt must still end within the wait.
        s = sweep_file(self.tmp, "prq", steps=20000, axes="  launch.ranks: [2]\n",
                       slurm="{exclusive: true}")
        out = os.path.join(self.tmp, "out")
        self.bench_sweep("submit", s, "--out", out)
        manifest = read_json(os.path.join(out, "manifest.json"))
        tag, job = manifest["points"][0]["tag"], manifest["points"][0]["slurm_job"]
        self.wait_for(lambda: self.status(out)[tag]["status"] == "running", 120,
                      "the point to run")
        self.sbatch("--partition=urgent", "--exclusive", "--wrap", "sleep 1")

        def requeued():
            p = self.status(out)[tag]
            return p["status"] == "pending" and "last attempt ended" in p["note"]
        self.wait_for(requeued, 120, "SLURM to requeue the preempted task")
        self.start_requeued_job(job)
        self.cluster.wait_until_idle(300)
        p = self.status(out)[tag]
        self.assertEqual(p["status"], "ok", f"{p}\n{self.job_logs(out)}")
        record = read_json(os.path.join(out, tag, "status.json"))
        self.assertEqual(record["attempt"], 2, f"{record}\n{self.job_logs(out)}")
        first = read_json(os.path.join(out, tag, "attempts", "1", "status.json"))
        self.assertEqual(first["status"], "cancelled")  # all its runner saw was SIGTERM


class Submit(SlurmCase):
    CLUSTER = dict(max_array_size=2)  # so that a group of three points needs two arrays

    def test_groups_by_resources_chunks_throttles_and_records_jobs(self):
        s = sweep_file(self.tmp, "sub",
                       axes="  launch.ranks: [1, 2]\n  train.micro_batch: [2, 4, 8]\n")
        out = os.path.join(self.tmp, "out")
        dry = self.bench_sweep("submit", s, "--out", out, "--max-parallel", "1", "--dry-run")
        self.assertFalse(os.path.exists(out), "a dry run writes nothing")
        self.assertEqual(dry.stdout.count("#!/bin/bash"), 4, dry.stdout)

        r = self.bench_sweep("submit", s, "--out", out, "--max-parallel", "1")
        manifest = read_json(os.path.join(out, "manifest.json"))
        jobs = manifest["jobs"]
        # 1-rank and 2-rank points ask for different resources; 3 points each, arrays of <= 2.
        self.assertEqual(sorted(len(j["points"]) for j in jobs), [1, 1, 2, 2], jobs)
        for j in jobs:
            self.assertIn(f"submitted job {j['job_id']}", r.stdout)
            with open(j["script"]) as f:
                script = f.read()
            self.assertIn(f"#SBATCH --array=0-{len(j['points']) - 1}%1\n" if len(j["points"]) > 1
                          else "#SBATCH --array=0%1\n", script)
            ntasks = {read_yaml(os.path.join(out, t, "config.yaml"))["launch"]["ranks"]
                      for t in j["points"]}
            self.assertEqual(len(ntasks), 1, "one array, one set of resources")
            self.assertIn(f"#SBATCH --ntasks={ntasks.pop()}\n", script)
        by_tag = {p["tag"]: p for p in manifest["points"]}
        self.assertTrue(all(p["slurm_job"] for p in by_tag.values()))
        self.cluster.wait_until_idle()
        points = self.assert_all(out, "ok", 6)
        for tag, p in points.items():
            self.assertEqual(read_json(os.path.join(out, tag, "status.json"))["slurm_job_id"],
                             by_tag[tag]["slurm_job"])

        again = self.bench_sweep("submit", s, "--out", out)
        self.assertIn("nothing to submit", again.stdout)
        self.assertEqual(len(read_json(os.path.join(out, "manifest.json"))["jobs"]), 4)

    def test_packed_tasks_run_several_points_each(self):
        # --points-per-job 3 --jobs 2: five short points in two array tasks (3 and 2
        # points), each task two points at once on the CPUs it asked for; then
        # --points-per-job auto packs what is left by the time the first ones took.
        path = command_sweep(self.tmp, "pack", "sleep 0.3; echo value 1", list(range(1, 10)),
                             base="  launch: {cpus_per_rank: 1}\n"
                                  "  slurm: {exclusive: false, time: 5}\n")
        out = os.path.join(self.tmp, "out")
        r = self.bench_sweep("submit", path, "--out", out, "--only", "0,1,2,3,4",
                             "--points-per-job", "3", "--jobs", "2")
        self.assertIn("5 points in 2 tasks of 3 (bench-sweep run --jobs 2)", r.stdout)
        job = read_json(os.path.join(out, "manifest.json"))["jobs"][0]
        with open(job["script"]) as f:
            script = f.read()
        self.assertIn("#SBATCH --array=0-1\n", script)
        self.assertIn("#SBATCH --ntasks=2\n", script)
        self.assertIn("#SBATCH --time=00:10:00\n", script)  # two rounds of 5 minutes
        self.assertNotIn("--exclusive", script)
        self.cluster.wait_until_idle()
        tags = [p["tag"] for p in read_json(os.path.join(out, "manifest.json"))["points"]]
        recs = {t: read_json(os.path.join(out, t, "status.json")) for t in tags[:5]}
        for t, rec in recs.items():
            self.assertEqual(rec["status"], "ok", f"{t}: {rec}\n{self.job_logs(out)}")
        jobs = [recs[t]["slurm_job_id"] for t in tags[:5]]
        self.assertEqual(jobs[0], jobs[1])
        self.assertEqual(jobs[1], jobs[2])
        self.assertEqual(jobs[3], jobs[4])
        self.assertNotEqual(jobs[0], jobs[3])
        # Two at once in a task: beside each other on the task's node.
        self.assertTrue(any(recs[t]["beside"] for t in tags[:3]), recs)

        r = self.bench_sweep("submit", path, "--out", out, "--points-per-job", "auto")
        self.assertIn("--points-per-job auto: 4 points a job: 5 ran in", r.stdout)
        self.assertIn("4 points in 1 task of 4", r.stdout)
        self.cluster.wait_until_idle()
        self.assert_all(out, "ok", 9)

    def test_without_sbatch_it_says_so_and_writes_nothing(self):
        s = sweep_file(self.tmp, "nosbatch", axes="  train.micro_batch: [2]\n")
        out = os.path.join(self.tmp, "out")
        r = subprocess.run([BENCH_SWEEP, "submit", s, "--out", out], capture_output=True,
                           text=True, env=dict(self.env, PATH="/nonexistent"))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("sbatch: error: not found", r.stderr)
        self.assertFalse(os.path.exists(out))

    def test_status_while_queued_and_a_claim_left_by_a_lost_node(self):
        s = sweep_file(self.tmp, "queued", axes="  train.micro_batch: [2, 4]\n",
                       slurm="{exclusive: true}")
        out = os.path.join(self.tmp, "out")
        blocker = self.sbatch("--exclusive", "--wrap", "sleep 300")  # holds the only node
        self.bench_sweep("submit", s, "--out", out)
        points = self.status(out)
        self.assertEqual([p["status"] for p in points.values()], ["pending", "pending"], points)
        self.assertTrue(all("PENDING" in p["note"] for p in points.values()), points)

        # One point's claim says a runner on another host holds it within the blocker job: a
        # live job, so nobody may take the point; once the job has ended, it may.
        tag = sorted(points)[0]
        claim = {"host": "lost-node", "pid": 1, "slurm_job_id": blocker, "since": "earlier"}
        with open(os.path.join(out, tag, ".claim"), "w") as f:
            json.dump(claim, f)
        r = self.bench_sweep("run", s, "--out", out, "--only", tag, "--bench-train",
                             "/bin/false", check=None)
        self.assertIn("elsewhere: claimed by lost-node:1", r.stdout)
        self.cluster.run("scancel", blocker)
        self.cluster.wait_until_idle()
        self.assert_all(out, "ok", 2)
        self.assertFalse(os.path.exists(os.path.join(out, tag, ".claim")))


class Timeout(SlurmCase):
    def test_time_limit_records_timeout_and_requeues_once(self):
        # 1 minute limit, warned 50 s before it; one requeue allowed.
        s = sweep_file(self.tmp, "slow", steps=10 ** 6, axes="  launch.ranks: [2]\n",
                       slurm="{exclusive: false, time: 1, signal_seconds: 50, max_requeue: 1}")
        out = os.path.join(self.tmp, "out")
        self.bench_sweep("submit", s, "--out", out)
        tag = read_json(os.path.join(out, "manifest.json"))["points"][0]["tag"]
        job = read_json(os.path.join(out, "manifest.json"))["points"][0]["slurm_job"]

        def requeued():
            p = self.status(out)[tag]
            return p["status"] == "pending" and "timeout" in p["note"]
        self.wait_for(requeued, 150, "the timed-out task to be requeued")
        self.start_requeued_job(job)
        self.cluster.wait_until_idle(200)

        p = self.status(out)[tag]
        self.assertEqual(p["status"], "timeout", f"{p}\n{self.job_logs(out)}\n"
                                                 f"{self.point_logs(out, tag)}\n"
                                                 f"{self.cluster.logs(120)}")
        record = read_json(os.path.join(out, tag, "status.json"))
        self.assertEqual(record["attempt"], 2, f"{record}\n{self.job_logs(out)}")
        self.assertIn("bench-sweep received SIGUSR1 (the time limit is near)", record["reason"])
        # In the first run bench-train got SIGUSR1 through srun and recorded the timeout itself
        # (exit code 21). SLURM sends the warning up to 30 s early (its periodic check), so with
        # 50 s of a 1-minute limit the second run's warning can come while the ranks still load:
        # there bench-train may be killed by it (exit code 138) and only the runner knows why.
        first = read_json(os.path.join(out, tag, "attempts", "1", "status.json"))
        self.assertEqual(first["status"], "timeout")
        self.assertIn("bench-train: exit code 21", first["reason"])
        log = self.job_logs(out)
        self.assertIn("requeueing job " + job, log)
        self.assertIn("not requeued: job " + job + " ran 2 times", log)


    def test_packed_points_side_by_side_all_record_timeout_and_requeue(self):
        # One array task runs two points at once (--points-per-job 2 --jobs 2); the
        # time-limit warning reaches both, both record timeout, the task requeues once and both
        # run again.
        s = sweep_file(self.tmp, "slow2", steps=10 ** 6, axes="  train.micro_batch: [1, 2]\n",
                       slurm="{exclusive: false, time: 1, signal_seconds: 50, max_requeue: 1}")
        out = os.path.join(self.tmp, "out")
        self.bench_sweep("submit", s, "--out", out, "--points-per-job", "2", "--jobs", "2")
        points = read_json(os.path.join(out, "manifest.json"))["points"]
        tags = [p["tag"] for p in points]
        job = points[0]["slurm_job"]
        self.assertEqual(points[1]["slurm_job"], job)

        def requeued():
            st = self.status(out)
            return all(st[t]["status"] == "pending" and "timeout" in st[t]["note"] for t in tags)
        self.wait_for(requeued, 150, "the timed-out task to be requeued")
        self.start_requeued_job(job)
        self.cluster.wait_until_idle(200)
        for tag in tags:
            record = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(record["status"], "timeout", f"{record}\n{self.job_logs(out)}")
            self.assertEqual(record["attempt"], 2)
            self.assertEqual(record["beside"], [t for t in tags if t != tag])
            first = read_json(os.path.join(out, tag, "attempts", "1", "status.json"))
            self.assertEqual(first["status"], "timeout")
            self.assertIn("bench-train: exit code 21", first["reason"])
        self.assertIn("requeueing job " + job, self.job_logs(out))


class Injection(SlurmCase):
    NASTY = ["$(touch {p})", "`touch {p}`", '"; touch {p}; "', "'; touch {p}; '", "a\ntouch {p}"]

    def test_values_reach_the_job_verbatim_and_run_nothing(self):
        pwned = os.path.join(self.tmp, "pwned")
        values = [v.format(p=pwned) for v in self.NASTY]
        env_map = ", ".join(f"V{i}: {json.dumps(v)}" for i, v in enumerate(values))
        s = sweep_file(self.tmp, "inj", axes="  train.micro_batch: [2]\n")
        out = os.path.join(self.tmp, "out")
        self.bench_sweep("submit", s, "--out", out, "--set", "launch.env={" + env_map + "}",
                         "--set", "train.lr=0.001")
        script = read_json(os.path.join(out, "manifest.json"))["jobs"][0]["script"]
        with open(script) as f:
            text = f.read()
        self.assertIn("launch.env=", text)
        self.cluster.wait_until_idle()
        self.assert_all(out, "ok", 1)
        self.assertFalse(os.path.exists(pwned), "a value ran as shell")
        tag = read_json(os.path.join(out, "manifest.json"))["points"][0]["tag"]
        config = read_yaml(os.path.join(out, tag, "config.yaml"))
        self.assertEqual([config["launch"]["env"][f"V{i}"] for i in range(len(values))], values)

    def test_a_percent_in_the_output_directory_stays_literal(self):
        # sbatch expands %j, %x... in --output; the job's log must land in the
        # directory named, not in one SLURM made up.
        s = sweep_file(self.tmp, "pct", axes="  train.micro_batch: [2]\n")
        out = os.path.join(self.tmp, "o%j%x")
        self.bench_sweep("submit", s, "--out", out)
        self.cluster.wait_until_idle()
        self.assert_all(out, "ok", 1)
        self.assertEqual(len(os.listdir(os.path.join(out, "submit", "logs"))), 1)
        self.assertEqual(sorted(n for n in os.listdir(self.tmp) if n.startswith("o")),
                         ["o%j%x"])

    def test_sbatch_line_values_are_refused_or_passed_as_names(self):
        pwned = os.path.join(self.tmp, "pwned")
        s = sweep_file(self.tmp, "name", axes="  train.micro_batch: [2]\n",
                       slurm=json.dumps({"exclusive": False, "job_name": f"$(touch {pwned})"}))
        out = os.path.join(self.tmp, "out")
        r = self.bench_sweep("submit", s, "--out", out, check=2)
        self.assertIn("slurm.job_name", r.stderr)
        self.assertIn("#SBATCH line", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "submit")))
        # No space: a legal #SBATCH word, which sbatch takes as a partition name and refuses.
        s = sweep_file(self.tmp, "part", axes="  train.micro_batch: [2]\n",
                       slurm=json.dumps({"exclusive": False, "partition": f"`touch${{IFS}}{pwned}`"}))
        r = self.bench_sweep("submit", s, "--out", out + "2", check=2)
        self.assertIn("sbatch refused the job", r.stderr)
        self.assertFalse(os.path.exists(pwned), "a value ran as shell")


if __name__ == "__main__":
    unittest.main()
