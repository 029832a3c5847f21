#!/usr/bin/python3
"""bench-extract on a big results tree: wall time and peak memory (docs/performance.md).

Plans a sweep of POINTS points (bench-sweep plan), fills it with RANKS rank files of STEPS steps
each and a status.json per point (bench/make_results_tree, with bench-train's and the runner's
own writers), then times `bench-extract -i TREE -o OUT.csv` ROUNDS times: with the page cache
warm (after one untimed run), and cold (caches dropped first) when run as root. Also times --group-repeats, which holds
the table in memory. Target: 10,000 points x 8 ranks x 1,000 steps in under 30 s on 2 cores,
with memory bounded. Writes bench/results/extract_speed.json.

The tree is kept (about 1.3 GB per 1,000 points at 8 ranks x 1,000 steps) and reused by the
next run; generation goes on where it stopped.

Usage: bench/extract_speed.py [--bin build/release/bin] [--tree /var/tmp/sweepbench-extract]
                              [--points 10000] [--ranks 8] [--steps 1000] [--rounds 3]
"""
import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = 2  # the results schema bench-train writes (kResultsSchemaVersion, docs/results-format.md)
ROOT = os.path.dirname(HERE)


def sweep_text(points):
    # micro batch x seq len x repeats: a realistic shape with `points` points.
    repeats = max(1, points // 100)
    mbs = list(range(1, 11))
    seqs = [64 * (i + 1) for i in range(10)]
    assert len(mbs) * len(seqs) * repeats == points, "points must be a multiple of 100"
    return (f"name: extract-speed\nrepeats: {repeats}\n"
            "base:\n  model:\n    preset: gpt2\n  data:\n    source: synthetic\n"
            "  train:\n    steps: 1000\n    warmup_steps: 10\n"
            f"axes:\n  train.micro_batch: {mbs}\n  data.seq_len: {seqs}\n")


def timed(cmd, cold):
    """Wall seconds and peak RSS (MiB) of one run of cmd."""
    if cold:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    err = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    return wall, usage.ru_maxrss / 1024.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--tree", default="/var/tmp/sweepbench-extract")
    p.add_argument("--points", type=int, default=10000)
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    # The schema in the name: a tree written by an older writer is not reused.
    tree = os.path.join(args.tree, f"p{args.points}-r{args.ranks}-s{args.steps}-schema{SCHEMA}")
    os.makedirs(args.tree, exist_ok=True)

    t0 = time.monotonic()
    if not os.path.exists(os.path.join(tree, "manifest.json")):
        sweep = os.path.join(args.tree, f"extract-speed-{args.points}.yaml")
        with open(sweep, "w") as f:
            f.write(sweep_text(args.points))
        subprocess.run([os.path.join(args.bin, "bench-sweep"), "plan", sweep, "--out", tree],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run([os.path.join(args.bin, "make_results_tree"), "--out", tree,
                    "--ranks", str(args.ranks), "--steps", str(args.steps),
                    "--jobs", str(os.cpu_count())], check=True)
    generated = time.monotonic() - t0
    size = subprocess.run(["du", "-sb", tree], capture_output=True, text=True).stdout.split()[0]
    print(f"# tree: {tree}, {int(size) / 1e9:.1f} GB, ready in {generated:.0f} s")

    extract = os.path.join(args.bin, "bench-extract")
    cold_possible = os.geteuid() == 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.csv")
        cases = [("warm cache", [], False)]
        if cold_possible:
            cases.append(("cold cache", [], True))
        cases.append(("warm cache, --group-repeats", ["--group-repeats"], False))
        for name, extra, cold in cases:
            if not cold:  # one untimed run first: "warm" means the tree is in the page cache
                timed([extract, "-i", tree, "-o", out, "-f", *extra], False)
            runs = [timed([extract, "-i", tree, "-o", out, "-f", *extra], cold)
                    for _ in range(args.rounds)]
            walls = [w for w, _ in runs]
            rss = max(r for _, r in runs)
            with open(out, newline="") as f:
                table = list(csv.DictReader(f))
            expected = args.points if not extra else args.points // max(1, args.points // 100)
            assert len(table) == expected, (name, len(table), expected)
            assert all(r["status"] == "ok" for r in table), name
            rows.append({"case": name, "wall_s": walls, "median_wall_s": statistics.median(walls),
                         "peak_rss_mib": rss, "rows": len(table)})
            print(f"{name}: median {statistics.median(walls):.1f} s over {args.rounds} runs "
                  f"({', '.join(f'{w:.1f}' for w in walls)}), peak RSS {rss:.0f} MiB, "
                  f"{len(table)} rows")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "extract_speed.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
                   "machine": platform.processor() or platform.machine(),
                   "points": args.points, "ranks": args.ranks, "steps": args.steps,
                   "tree_bytes": int(size), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
