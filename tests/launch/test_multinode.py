#!/usr/bin/python3
"""Sweeps on a real two-node SLURM cluster, and `bench-sweep status` against real accounting.

TwoNodes: two slurmd on this host, each a node with its own address and host name
(tests/support/slurm_cluster.py): points with launch.nodes 2 run through `bench-sweep run` inside
an allocation (salloc), through `bench-sweep submit` arrays and through `sbatch slurm/sweep.sh`,
their ranks spread over both nodes (the rank files record n1 and n2); sweeps/gpt2-scaling.yaml,
shrunk to a tiny model, runs up to 16 ranks over both nodes and bench-plot draws its figure. A
serve point's server runs as a step of its own on the other node, and one at its time limit
leaves no server process.

Accounting: slurmdbd on a MariaDB server of the cluster's own, and a MinJobAge of 2 s, so that
squeue forgets finished jobs and `bench-sweep status` must read sacct: an array cancelled before
it started (sacct's consolidated "J_[0-1]" line), a job that reached its time limit, a job whose
runner was killed, a requeued job, completed ones.

    SWEEPBENCH_BIN_DIR=build/release/bin /usr/bin/python3 tests/launch/test_multinode.py -v TwoNodes
"""
import glob
import json
import os
import subprocess
import sys
import time
import unittest

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
from e2e import BENCH_SWEEP, BIN, SOURCE, command_sweep, read_json, read_yaml  # noqa: E402
from slurm_case import SlurmCase  # noqa: E402

SWEEP_SH = os.path.join(SOURCE, "slurm", "sweep.sh")


def point_logs(out, tag):
    """The ends of a point's logs (the launcher's and every rank's), for a failure message: a
    crashed rank says there which it was."""
    text = []
    for path in sorted(glob.glob(os.path.join(out, tag, "logs", "*"))):
        with open(path, errors="replace") as f:
            text.append(f"--- {path}\n{f.read()[-2000:]}")
    return "\n".join(text)


def sweep_file(tmp, name, steps=4, axes="  launch.ranks: [2, 4]\n", launch="nodes: 2",
               slurm="{exclusive: false}"):
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
  launch: {{cpus_per_rank: 1, {launch}}}
  slurm: {slurm}
axes:
{axes}""")
    return path


class ClusterCase(SlurmCase):
    def status(self, out):
        r = self.bench_sweep("status", "--out", out, "--format", "json")
        return json.loads(r.stdout)

    def tags(self, out):
        return [p["tag"] for p in read_json(os.path.join(out, "manifest.json"))["points"]]

    def assert_all_ok_on_both_nodes(self, out, points):
        tags = self.tags(out)
        self.assertEqual(len(tags), points)
        for tag in tags:
            record = read_json(os.path.join(out, tag, "status.json"))
            self.assertEqual(record["status"], "ok", f"{tag}: {record}\n{point_logs(out, tag)}")
            ranks = read_yaml(os.path.join(out, tag, "config.yaml"))["launch"]["ranks"]
            hosts = set()
            for r in range(ranks):
                with h5py.File(os.path.join(out, tag, f"rank-{r:05d}.h5"), "r") as f:
                    hosts.add(f.attrs["hostname"])
                    self.assertEqual(f.attrs["world_size"], ranks)
            self.assertEqual(hosts, {"n1", "n2"}, tag)


class TwoNodes(ClusterCase):
    CLUSTER = dict(nodes=2, cpus=8)

    def test_a_two_node_point_runs_inside_an_allocation(self):
        s = sweep_file(self.tmp, "alloc")
        out = os.path.join(self.tmp, "out")
        r = self.cluster.run("salloc", "-N", "2", "--exclusive", BENCH_SWEEP, "run", s, "--out", out,
                             env=self.env, cwd=self.tmp, check=False, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("(srun, 2 ranks)", r.stdout)
        self.assert_all_ok_on_both_nodes(out, 2)

    def test_jobs_packs_points_over_the_allocations_nodes(self):
        # `bench-sweep run --jobs auto` in a 2-node allocation (sbatch slurm/sweep.sh,
        # as users run it): four one-node points of 4 CPUs, two a node at once, each an srun step
        # on the node it was given; then a two-node point, alone on both.
        path = command_sweep(self.tmp, "pack", 'sleep 2; echo "host $(hostname) cpus '
                             '$SLURM_CPUS_PER_TASK"; echo value 1', [1, 2, 3, 4],
                             base="  launch: {cpus_per_rank: 4}\n")
        out = os.path.join(self.tmp, "out")
        self.sbatch("-N", "2", "--output=" + self.tmp + "/pack-%j.out", SWEEP_SH, path, out,
                    "--jobs", "auto")
        self.cluster.wait_until_idle()
        logs = ""
        for log in glob.glob(self.tmp + "/pack-*.out"):
            with open(log) as f:
                logs += f.read()
        self.assertTrue(os.path.exists(os.path.join(out, "manifest.json")), logs)
        recs = {tag: read_json(os.path.join(out, tag, "status.json")) for tag in self.tags(out)}
        self.assertEqual({r["status"] for r in recs.values()}, {"ok"}, logs)
        per_node = {}
        for tag, r in recs.items():
            self.assertIn(r["nodes"], ("n1", "n2"), r)
            per_node.setdefault(r["nodes"], []).append(tag)
            self.assertIn("--nodelist=" + r["nodes"], r["command"])
            self.assertIn("--cpus-per-task=4", r["command"])
            with open(os.path.join(out, tag, "logs", "stdout.txt")) as f:
                said = f.read()
            # The step ran on its node, with its 4 CPUs a task (the nodes' 8 CPUs are declared,
            # not real: this host has fewer, so affinity cannot show them).
            self.assertIn(f"host {r['nodes']} cpus 4", said)
            # Beside: the other point on its node, never one on the other node.
            for other in r["beside"]:
                self.assertEqual(recs[other]["nodes"], r["nodes"])
        self.assertEqual(sorted(len(v) for v in per_node.values()), [2, 2], per_node)
        self.assertTrue(all(r["beside"] for r in recs.values()), recs)
        self.assertIn("--jobs auto (2 nodes, 16 CPUs)", logs)

        # Points over both nodes are alone on them (launch.exclusive: auto).
        wide = os.path.join(self.tmp, "wide")
        self.sbatch("-N", "2", "--output=" + self.tmp + "/wide-%j.out", SWEEP_SH, path, wide,
                    "--set", "launch.nodes=2", "--set", "launch.ranks=2", "--only", "0,1",
                    "--jobs", "auto")
        self.cluster.wait_until_idle()
        recs = {tag: read_json(os.path.join(wide, tag, "status.json"))
                for tag in self.tags(wide)[:2]}
        self.assertEqual(len(recs), 2)
        for r in recs.values():
            self.assertEqual(r["status"], "ok", r)
            self.assertEqual(r["nodes"], "n1,n2")
            self.assertEqual(r["beside"], [])

    def test_submit_arrays_spread_the_ranks_over_both_nodes(self):
        s = sweep_file(self.tmp, "arrays")
        out = os.path.join(self.tmp, "out")
        self.bench_sweep("submit", s, "--out", out)
        script = read_json(os.path.join(out, "manifest.json"))["jobs"][0]["script"]
        with open(script) as f:
            self.assertIn("#SBATCH --nodes=2\n", f.read())
        self.cluster.wait_until_idle()
        self.assert_all_ok_on_both_nodes(out, 2)

    def test_submit_history_stores_each_attempt_once_also_when_a_task_is_killed(self):
        # Six command points as array tasks on both nodes, and a job after them that ingests the
        # sweep (submit --history). Point i=3 sleeps until its task is cancelled: a killed task.
        flag = os.path.join(self.tmp, "slow")
        open(flag, "w").close()
        path = command_sweep(self.tmp, "hist", f'if [ {{params.i}} = 3 ] && [ -e {flag} ]; then '
                             'sleep 300; fi; echo "value {params.i}"', [1, 2, 3, 4, 5, 6])
        out = os.path.join(self.tmp, "out")
        store = os.path.join(self.tmp, "history.sqlite")
        self.bench_sweep("submit", path, "--out", out, "--history", store,
                         "--history-label", "commit=one")
        array = read_json(os.path.join(out, "manifest.json"))["jobs"][0]["job_id"]
        slow = [t for t in self.tags(out) if t.startswith("i=3")][0]

        def others_done_and_slow_running():
            done = 0
            for tag in self.tags(out):
                status = os.path.join(out, tag, "status.json")
                if tag != slow and os.path.exists(status) and read_json(status)["status"] == "ok":
                    done += 1
            return done == 5 and os.path.exists(os.path.join(out, slow, ".claim"))
        self.wait_for(others_done_and_slow_running, 240, "five points ok and i=3 running")
        self.cluster.run("scancel", f"{array}_2")
        self.cluster.wait_until_idle(240)
        self.assertEqual(read_json(os.path.join(out, slow, "status.json"))["status"], "cancelled")

        def stored(sql):
            import sqlite3
            with sqlite3.connect(store) as db:
                return db.execute(sql).fetchall()
        logs = ""
        for log in glob.glob(os.path.join(out, "submit", "logs", "*-history.out")):
            with open(log) as f:
                logs += f.read()
        self.assertEqual(stored("SELECT count(*) FROM runs"), [(6,)], logs)
        self.assertEqual(stored("SELECT status, count(*) FROM runs GROUP BY status"),
                         [("cancelled", 1), ("ok", 5)])
        # The runs ran on both nodes, and say so.
        hosts = {h for (h,) in stored("SELECT DISTINCT value FROM environments "
                                      "WHERE field = 'hostname'")}
        self.assertEqual(hosts, {"n1", "n2"})

        # Submitted again: the cancelled point reruns (attempt 2) and the next job stores it.
        os.unlink(flag)
        self.bench_sweep("submit", path, "--out", out, "--history", store,
                         "--history-label", "commit=two")
        self.cluster.wait_until_idle(240)
        self.assertEqual(stored("SELECT count(*) FROM runs"), [(7,)])
        self.assertEqual(stored(f"SELECT attempt, status FROM runs WHERE tag = '{slow}' "
                                "ORDER BY attempt"), [(1, "cancelled"), (2, "ok")])
        self.assertEqual(stored("SELECT value FROM run_labels r JOIN runs USING (run_key) "
                                f"WHERE tag = '{slow}' ORDER BY attempt"), [("one",), ("two",)])
        # By hand once more: nothing twice.
        r = subprocess.run([os.path.join(BIN, "bench-history"), "ingest", out, "--store", store],
                           capture_output=True, text=True, check=True)
        self.assertIn("0 new run(s) stored", r.stderr)
        self.assertIn("7 already there", r.stderr)

    def test_check_names_a_slower_node_as_the_environment_change(self):
        # A point run five times on n1, then four times on n2, where it takes four times as long
        # (a replaced node that is slower): the check finds the change and names the node. Four
        # times, not twice: with twice (50 against 100 ms) one run of n1 that waited 50 ms for a
        # core on a busy 2-core CI machine took the interval's low end to +1.9% (2026-12-01).
        path = command_sweep(self.tmp, "node", 'if [ "$(hostname)" = n2 ]; then d=0.2; else '
                             'd=0.05; fi; s=$(date +%s%N); sleep $d; e=$(date +%s%N); '
                             'echo "value $(( (e - s) / 1000000 ))"', [1, 2])
        outs = []
        for k, node in enumerate(["n1"] * 5 + ["n2"] * 4):
            outs.append(os.path.join(self.tmp, f"run{k}"))
            self.sbatch("-w", node, f"--output={self.tmp}/run{k}-%j.out", SWEEP_SH, path, outs[-1],
                        "--only", "0")
            self.cluster.wait_until_idle()
        store = os.path.join(self.tmp, "history.sqlite")
        history = os.path.join(BIN, "bench-history")
        subprocess.run([history, "ingest", *outs, "--store", store], check=True,
                       capture_output=True)
        r = subprocess.run([history, "check", "--store", store, "--fail-on", "value:20%",
                            "--format", "json"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 8, r.stdout + r.stderr)
        (c,) = json.loads(r.stdout)
        self.assertEqual((c["verdict"], c["latest"], c["runs_before"], c["runs_after"]),
                         ("worse", True, 5, 4))
        self.assertGreater(c["change_low"], 0.3, c)
        self.assertIn("hostname n1 -> n2", c["environment_change"])
        self.assertIn("when host n1 -> n2", c["what"])

    def test_sbatch_sweep_sh_runs_two_node_points(self):
        s = sweep_file(self.tmp, "batch")
        out = os.path.join(self.tmp, "out")
        self.sbatch("-N", "2", SWEEP_SH, s, out)
        self.cluster.wait_until_idle()
        self.assert_all_ok_on_both_nodes(out, 2)

    def test_the_scaling_sweep_runs_across_both_nodes_and_is_drawn(self):
        # sweeps/gpt2-scaling.yaml as shipped, shrunk to a tiny model on CPUs; one repeat of each
        # size up to 16 ranks (index 12: two nodes of eight).
        out = os.path.join(self.tmp, "scaling")
        shrink = ["--set", "model.preset=gpt2-tiny", "--set", "data.seq_len=32",
                  "--set", "train.dtype=fp32", "--set", "train.micro_batch=2",
                  "--set", "train.steps=4", "--set", "train.warmup_steps=1",
                  "--set", "launch.device=cpu", "--set", "launch.gpus_per_rank=0",
                  "--set", "metrics.sample_interval_ms=0", "--only", "0,3,6,9,12"]
        self.sbatch("-N", "2", "-t", "30", SWEEP_SH, os.path.join(SOURCE, "sweeps",
                                                                  "gpt2-scaling.yaml"),
                    out, *shrink)
        self.cluster.wait_until_idle(600)
        points = read_json(os.path.join(out, "manifest.json"))["points"]
        ran = [p for p in points if p["index"] in (0, 3, 6, 9, 12)]
        for p in ran:
            record = read_json(os.path.join(out, p["tag"], "status.json"))
            self.assertEqual(record["status"], "ok",
                             f'{p["tag"]}: {record["reason"]}\n{point_logs(out, p["tag"])}')
        sixteen = [p for p in ran if p["index"] == 12][0]["tag"]
        hosts = set()
        for r in range(16):
            with h5py.File(os.path.join(out, sixteen, f"rank-{r:05d}.h5"), "r") as f:
                hosts.add(f.attrs["hostname"])
        self.assertEqual(hosts, {"n1", "n2"})
        csv = os.path.join(self.tmp, "scaling.csv")
        subprocess.run([os.path.join(BIN, "bench-extract"), "-i", out, "-o", csv], check=True,
                       capture_output=True, timeout=300)
        figure = os.path.join(self.tmp, "scaling.png")
        r = subprocess.run([os.path.join(BIN, "bench-plot"), "-i", csv, "-o", figure, "--kind",
                            "scaling", "--metric", "tokens_per_second_per_device"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("5 values", r.stderr)
        with open(figure, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


    def serve_sweep(self, name, serve, standin=(), slurm="{exclusive: false}"):
        """A serve point whose server is the stand-in (tests/support/openai_standin.py),
        listening on {host}: the address of the node its step runs on."""
        argv = ["/usr/bin/python3", os.path.join(SOURCE, "tests", "support", "openai_standin.py"),
                "--host", "{host}", "--port", "{port}", "--workers", "2",
                "--model", self.marker(), *standin]
        path = os.path.join(self.tmp, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"name: {name}\nbase:\n  benchmark: serve\n  serve:\n"
                    f"    argv: {json.dumps(argv)}\n{serve}"
                    "  metrics: {sample_interval_ms: 0, system: false}\n"
                    f"  launch: {{cpus_per_rank: 1}}\n  slurm: {slurm}\n")
        return path

    def marker(self):
        """The stand-in's model name, unique to this test: its processes and workers carry it."""
        return "standin-" + os.path.basename(self.tmp)

    def standins(self):
        r = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True, check=True)
        return [a for a in r.stdout.splitlines()
                if ("openai_standin.py" in a or "standin-worker" in a)
                and self.marker() in a.split()]

    def test_a_serve_points_server_runs_as_a_step_on_the_other_node(self):
        # bench-serve (the client) is the point's step on n1; its server a step of its own
        # (srun --overlap) on the allocation's second node, reached at that node's address.
        s = self.serve_sweep("serve", "    node: 1\n    load: {levels: [5, 10], requests: 20}\n"
                             "    prompts: {input_tokens: 8, output_tokens: 4}\n")
        out = os.path.join(self.tmp, "out")
        r = self.cluster.run("salloc", "-N", "2", BENCH_SWEEP, "run", s, "--out", out,
                             env=self.env, cwd=self.tmp, check=False, timeout=300)
        [tag] = self.tags(out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + point_logs(out, tag))
        summary = read_json(os.path.join(out, tag, "summary.json"))
        self.assertEqual(summary["status"], "ok", summary["reason"])
        self.assertEqual(summary["server"]["node"], "n2")
        self.assertTrue(summary["server"]["slurm_step"].startswith("sweepbench-serve-"))
        self.assertEqual(summary["server"]["url"].split(":")[1], "//127.0.0.3")  # n2's address
        with open(os.path.join(out, tag, "logs", "server.stderr.txt")) as f:
            self.assertIn("(node n2)", f.read())
        with h5py.File(os.path.join(out, tag, "rank-00000.h5"), "r") as f:
            self.assertEqual(f.attrs["hostname"], "n1")  # the client's node
        self.assertEqual([lv["requests"] for lv in summary["levels"]], [20, 20])
        self.assertEqual(summary["metrics"]["failed"], 0)
        deadline = time.time() + 20
        while self.standins() and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(self.standins(), [])

    def test_a_serve_point_at_its_time_limit_leaves_no_server(self):
        # A one-minute job warned 50 s before its end (SIGUSR1 to every step): bench-serve stops
        # the load and the server's step and records timeout; nothing of the server is left.
        s = self.serve_sweep("limit", "    load: {mode: concurrency, levels: [2], requests: 100000}\n"
                             "    prompts: {input_tokens: 8, output_tokens: 50}\n",
                             standin=["--chunks", "50", "--delay", "0.05"],
                             slurm="{exclusive: false, time: 1, signal_seconds: 50, max_requeue: 0}")
        out = os.path.join(self.tmp, "out")
        self.bench_sweep("submit", s, "--out", out)
        self.cluster.wait_until_idle(200)
        [tag] = self.tags(out)
        record = read_json(os.path.join(out, tag, "status.json"))
        self.assertEqual(record["status"], "timeout", f"{record}\n{point_logs(out, tag)}")
        summary = read_json(os.path.join(out, tag, "summary.json"))
        self.assertEqual(summary["status"], "timeout", summary)
        self.assertIn("stopped by SIGUSR1", summary["reason"])
        self.assertEqual(len(summary["levels"]), 1)
        self.assertGreater(summary["levels"][0]["succeeded"], 0)
        self.assertEqual(self.standins(), [])

class Accounting(ClusterCase):
    CLUSTER = dict(nodes=1, cpus=4, accounting=True, min_job_age=2)

    def forgotten(self, job):
        """True once squeue no longer knows `job` (MinJobAge has passed and slurmctld purged it)."""
        r = self.cluster.run("squeue", "-h", "-t", "all", "-j", job, check=False)
        return not r.stdout.strip()

    def in_sacct(self, job):
        r = self.cluster.run("sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", job,
                             check=False)
        return r.returncode == 0 and r.stdout.strip()

    def test_status_reads_sacct_once_squeue_has_forgotten_the_jobs(self):
        # An array that never started: held, then cancelled. sacct shows it as one "J_[0-1]" line.
        held = sweep_file(self.tmp, "held", launch="nodes: 1", axes="  launch.ranks: [1, 2]\n",
                          slurm="{exclusive: false, extra_args: [--hold]}")
        held_out = os.path.join(self.tmp, "held")
        self.bench_sweep("submit", held, "--out", held_out)
        # One array per size of point (1 and 2 ranks).
        held_jobs = [j["job_id"] for j in read_json(os.path.join(held_out, "manifest.json"))["jobs"]]
        self.assertEqual(len(held_jobs), 2)
        self.cluster.run("scancel", *held_jobs)

        # A job that reaches its time limit while its point runs, without the warning signal
        # (SIGURG is ignored): the runner sees only SLURM's SIGTERM and records `cancelled`;
        # SLURM's TIMEOUT says what it was.
        long = sweep_file(self.tmp, "long", steps=1000000, launch="nodes: 1",
                          axes="  launch.ranks: [1]\n",
                          slurm="{exclusive: false, max_requeue: 0}")
        long_out = os.path.join(self.tmp, "long")
        timed = self.sbatch("--signal=B:URG@1", SWEEP_SH, long, long_out)

        # A job whose runner is killed while its point runs.
        killed_out = os.path.join(self.tmp, "killed")
        killed = self.sbatch(SWEEP_SH, long, killed_out)

        # Completed, and a job requeued while its point ran.
        ok = sweep_file(self.tmp, "ok", launch="nodes: 1", axes="  launch.ranks: [1, 2]\n")
        ok_out = os.path.join(self.tmp, "ok")
        self.bench_sweep("submit", ok, "--out", ok_out)
        requeue = sweep_file(self.tmp, "requeue", steps=400, launch="nodes: 1",
                             axes="  launch.ranks: [1]\n")
        requeue_out = os.path.join(self.tmp, "requeue")
        requeued = self.sbatch(SWEEP_SH, requeue, requeue_out)

        def running(out):
            def ready():
                if not os.path.exists(os.path.join(out, "manifest.json")):
                    return False
                path = os.path.join(out, self.tags(out)[0], "status.json")
                return os.path.exists(path) and read_json(path)["status"] == "running"
            return ready

        self.wait_for(running(long_out), 120, "the long point to run")
        end = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 3))
        self.cluster.run("scontrol", "update", f"JobId={timed}", f"EndTime={end}")
        self.wait_for(running(killed_out), 120, "the second long point to run")
        self.cluster.run("scancel", "--batch", "--signal=KILL", killed)
        self.wait_for(running(requeue_out), 120, "the point to requeue to run")
        self.cluster.run("scontrol", "requeue", requeued)
        self.start_requeued_job(requeued)
        self.cluster.wait_until_idle(600)
        for job in (*held_jobs, timed, killed, requeued):
            self.wait_for(lambda: self.forgotten(job), 120, f"squeue to forget job {job}")
            self.wait_for(lambda: self.in_sacct(job), 60, f"sacct to know job {job}")

        held_points = self.status(held_out)
        self.assertTrue(held_points["slurm_answered"])
        submitted = {p["tag"]: p["slurm_job"]
                     for p in read_json(os.path.join(held_out, "manifest.json"))["points"]}
        for p in held_points["points"]:
            self.assertEqual(p["status"], "cancelled", p)
            self.assertIn("CANCELLED before the point started", p["note"])
            self.assertEqual(p["job"], submitted[p["tag"]])
            self.assertRegex(p["job"], r"^\d+_0$")

        timed_point = self.status(long_out)["points"][0]
        self.assertEqual(timed_point["status"], "timeout", timed_point)
        self.assertIn(f"job {timed} TIMEOUT", timed_point["note"])
        record = read_json(os.path.join(long_out, self.tags(long_out)[0], "status.json"))
        self.assertEqual(record["status"], "cancelled", record)

        killed_point = self.status(killed_out)["points"][0]
        self.assertIn(killed_point["status"], ("failed", "cancelled"), killed_point)
        self.assertIn(f"job {killed}", killed_point["note"])
        self.assertIn("before its runner could record the point", killed_point["note"])

        for p in self.status(ok_out)["points"] + self.status(requeue_out)["points"]:
            self.assertEqual(p["status"], "ok", p)
        record = read_json(os.path.join(requeue_out, self.tags(requeue_out)[0], "status.json"))
        self.assertEqual(record["attempt"], 2, record)


if __name__ == "__main__":
    unittest.main()
