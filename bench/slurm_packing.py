#!/usr/bin/python3
"""Points side by side on SLURM, on a real loopback cluster of two nodes with 2 CPUs
each (tests/support/slurm_cluster.py: munged, slurmctld and two slurmd on this host):

1. allocation: 4 one-node command points of `sleep 2` inside one 2-node allocation
   (`sbatch -N 2 slurm/sweep.sh SWEEP OUT --jobs J`, as users run it), at --jobs 1 and --jobs
   auto. Each point prints its start and end (date +%s.%N); the sweep's time is the first start
   to the last end.
2. arrays: N no-op command points (`true`) through `bench-sweep submit`, one array task a point
   (the default: each task asks for a whole node, slurm.exclusive true), against the same points
   packed (`--points-per-job K --jobs auto`). Time from the submit to the last point ok, and the
   points done a second. The arrays run is stopped (scancel) after --array-seconds when it has
   not finished; the rate so far is what it reports then.

Writes bench/results/slurm_packing.json.

Usage: bench/slurm_packing.py [--bin build/release/bin] [--points 1000] [--per-job 100]
                              [--array-seconds 600]
"""
import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

from results_file import write_results

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from slurm_cluster import LocalSlurm  # noqa: E402

SWEEP_SH = os.path.join(ROOT, "slurm", "sweep.sh")


def ok_count(out):
    n = 0
    for path in glob.glob(os.path.join(out, "*", "status.json")):
        try:
            with open(path) as f:
                n += json.load(f)["status"] == "ok"
        except (OSError, ValueError, KeyError):
            pass
    return n


def allocation(cluster, env, tmp, bins, jobs):
    path = os.path.join(tmp, f"alloc-{jobs}.yaml")
    with open(path, "w") as f:
        f.write("name: alloc\nbase:\n  benchmark: command\n  command:\n"
                "    argv: [bash, -c, 'echo start $(date +%s.%N); sleep 2; echo end $(date +%s.%N)']\n"
                "    metrics:\n      - {name: end, regex: 'end ([0-9.]+)'}\n"
                "  launch: {cpus_per_rank: 1}\naxes:\n  params.i: [1, 2, 3, 4]\n")
    out = os.path.join(tmp, f"alloc-out-{jobs}")
    cluster.run("sbatch", "-N", "2", "--output=" + tmp + f"/alloc-{jobs}-%j.out", SWEEP_SH, path,
                out, "--jobs", jobs, env=env, cwd=tmp)
    cluster.wait_until_idle(600)
    starts, ends = [], []
    for log in glob.glob(os.path.join(out, "*", "logs", "stdout.txt")):
        with open(log) as f:
            for line in f:
                if line.startswith("start "):
                    starts.append(float(line.split()[1]))
                elif line.startswith("end "):
                    ends.append(float(line.split()[1]))
    if len(starts) != 4 or len(ends) != 4:
        raise SystemExit(f"allocation --jobs {jobs}: {len(ends)} of 4 points ended")
    return max(ends) - min(starts)


def arrays(cluster, env, tmp, bins, points, extra, limit):
    name = "packed" if extra else "arrays"
    path = os.path.join(tmp, name + ".yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\nbase:\n  benchmark: command\n  command: {{argv: [\"true\"]}}\n"
                f"axes:\n  params.i: {list(range(points))}\n")
    out = os.path.join(tmp, name + "-out")
    t0 = time.monotonic()
    subprocess.run([os.path.join(bins, "bench-sweep"), "submit", path, "--out", out, *extra],
                   env=env, cwd=tmp, check=True, stdout=subprocess.DEVNULL)
    done = 0
    while time.monotonic() - t0 < limit:
        time.sleep(2)
        done = ok_count(out)
        if done == points:
            break
    wall = time.monotonic() - t0
    finished = done == points
    if not finished:
        cluster.run("scancel", "-u", os.environ.get("USER", "root"), env=env, check=False)
        cluster.wait_until_idle(300)
        done = ok_count(out)
    return {"points": points, "done": done, "finished": finished, "wall_s": wall,
            "points_per_s": done / wall}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--per-job", type=int, default=100)
    ap.add_argument("--array-seconds", type=float, default=600)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "slurm_packing.json"))
    a = ap.parse_args()
    result = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
              "date": time.strftime("%Y-%m-%d"), "cluster": "2 nodes x 2 CPUs, loopback"}
    with LocalSlurm(nodes=2, cpus=2, max_array_size=max(1001, a.points + 1)) as cluster, \
            tempfile.TemporaryDirectory() as tmp:
        env = dict(cluster.env, SWEEPBENCH_BIN_DIR=a.bin)
        result["allocation"] = {
            "points": 4, "point_s": 2,
            "jobs_1_s": allocation(cluster, env, tmp, a.bin, "1"),
            "jobs_auto_s": allocation(cluster, env, tmp, a.bin, "auto"),
        }
        print(f"4 x sleep 2 in a 2-node allocation: --jobs 1 "
              f"{result['allocation']['jobs_1_s']:.2f} s, --jobs auto "
              f"{result['allocation']['jobs_auto_s']:.2f} s")
        packed = arrays(cluster, env, tmp, a.bin, a.points,
                        ["--points-per-job", str(a.per_job), "--jobs", "auto"], a.array_seconds)
        print(f"{a.points} no-op points packed {a.per_job} a task: {packed['done']} ok in "
              f"{packed['wall_s']:.1f} s ({packed['points_per_s']:.1f} a second)")
        plain = arrays(cluster, env, tmp, a.bin, a.points, [], a.array_seconds)
        print(f"{a.points} no-op points as array tasks: {plain['done']} ok in "
              f"{plain['wall_s']:.1f} s ({plain['points_per_s']:.2f} a second)"
              + ("" if plain["finished"] else ", stopped"))
        result["packed"] = dict(packed, per_job=a.per_job)
        result["arrays"] = plain
    write_results(a.out, result)


if __name__ == "__main__":
    main()
