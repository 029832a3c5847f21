#!/usr/bin/python3
"""Points side by side (`bench-sweep run --jobs`), measured on this machine:

1. sleeps: N one-CPU command points whose program is `sleep 1`, at --jobs 1 and at --jobs J
   (default 2): the sweep's wall time (the target on a 2-CPU machine: 20 points at --jobs 2 in at
   most 12 s).
2. interference: a CPU bench-train sweep (gpt2-tiny, one compute thread a point:
   launch.cpus_per_rank 1) at --jobs 1 and at --jobs J, rounds alternating the two: each point's
   training throughput (train_tokens_per_second from bench-extract) and the sweep's wall time.
   The throughputs tell how much a point slows down when another runs beside it on the other
   CPU (shared caches, memory bandwidth, the runner), the walls what packing saves.

Writes bench/results/concurrent_points.json.

Usage: bench/concurrent_points.py [--bin build/release/bin] [--jobs 2] [--sleeps 20]
                                  [--train-points 6] [--steps 200] [--rounds 3]
"""
import argparse
import csv
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time

from results_file import write_results

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_sweep(bins, path, out, jobs, env):
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(bins, "bench-sweep"), "run", path, "--out", out, "--jobs",
                        str(jobs)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"bench-sweep run --jobs {jobs} failed:\n{r.stdout}")
    return wall


def throughputs(bins, out, env):
    r = subprocess.run([os.path.join(bins, "bench-extract"), "-i", out, "--format", "csv"],
                       env=env, check=True, stdout=subprocess.PIPE, text=True)
    return [float(row["train_tokens_per_second"]) for row in csv.DictReader(r.stdout.splitlines())]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sleeps", type=int, default=20)
    ap.add_argument("--train-points", type=int, default=6)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "concurrent_points.json"))
    a = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    result = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
              "date": time.strftime("%Y-%m-%d"), "jobs": a.jobs}
    with tempfile.TemporaryDirectory() as tmp:
        sleeps = os.path.join(tmp, "sleeps.yaml")
        with open(sleeps, "w") as f:
            f.write("name: sleeps\nbase:\n  benchmark: command\n"
                    "  command: {argv: [sleep, '1']}\n  launch: {cpus_per_rank: 1}\n"
                    f"axes:\n  params.i: {list(range(a.sleeps))}\n")
        walls = {1: [], a.jobs: []}
        for rnd in range(a.rounds):
            for jobs in (1, a.jobs) if rnd % 2 == 0 else (a.jobs, 1):
                out = os.path.join(tmp, f"sleeps-{jobs}-{rnd}")
                walls[jobs].append(run_sweep(a.bin, sleeps, out, jobs, env))
                shutil.rmtree(out)
        result["sleeps"] = {"points": a.sleeps,
                            "wall_s": {str(k): v for k, v in walls.items()},
                            "median_wall_s": {str(k): statistics.median(v)
                                              for k, v in walls.items()}}
        print(f"{a.sleeps} x sleep 1: --jobs 1 {statistics.median(walls[1]):.2f} s, "
              f"--jobs {a.jobs} {statistics.median(walls[a.jobs]):.2f} s")

        train = os.path.join(tmp, "train.yaml")
        with open(train, "w") as f:
            f.write(f"""name: interference
base:
  model: {{preset: gpt2-tiny}}
  data: {{source: synthetic, seq_len: 128}}
  train: {{steps: {a.steps}, warmup_steps: 10, micro_batch: 8}}
  eval: {{steps: 1}}
  metrics: {{sample_interval_ms: 0, system: false}}
  launch: {{cpus_per_rank: 1}}
axes:
  params.i: {list(range(a.train_points))}
""")
        tps = {1: [], a.jobs: []}
        twalls = {1: [], a.jobs: []}
        for rnd in range(a.rounds):
            for jobs in (1, a.jobs) if rnd % 2 == 0 else (a.jobs, 1):
                out = os.path.join(tmp, f"train-{jobs}-{rnd}")
                twalls[jobs].append(run_sweep(a.bin, train, out, jobs, env))
                tps[jobs].extend(throughputs(a.bin, out, env))
                shutil.rmtree(out)
        med = {k: statistics.median(v) for k, v in tps.items()}
        result["train"] = {
            "points": a.train_points, "steps": a.steps,
            "tokens_per_second": {str(k): v for k, v in tps.items()},
            "median_tokens_per_second": {str(k): v for k, v in med.items()},
            "spread_tokens_per_second": {str(k): [min(v), max(v)] for k, v in tps.items()},
            "wall_s": {str(k): v for k, v in twalls.items()},
            "median_wall_s": {str(k): statistics.median(v) for k, v in twalls.items()},
            "slowdown_beside_another": 1 - med[a.jobs] / med[1],
        }
        print(f"bench-train, one thread a point: --jobs 1 {med[1]:.0f} tok/s a point "
              f"(range {min(tps[1]):.0f}-{max(tps[1]):.0f}), sweep "
              f"{statistics.median(twalls[1]):.1f} s; --jobs {a.jobs} {med[a.jobs]:.0f} tok/s "
              f"(range {min(tps[a.jobs]):.0f}-{max(tps[a.jobs]):.0f}), sweep "
              f"{statistics.median(twalls[a.jobs]):.1f} s; "
              f"{100 * result['train']['slowdown_beside_another']:.1f}% slower beside another")
    write_results(a.out, result)


if __name__ == "__main__":
    main()
