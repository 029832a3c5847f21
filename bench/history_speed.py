#!/usr/bin/python3
"""bench-history on a big tree: ingest rate and query time (docs/performance.md, docs/history.md).

Plans a sweep of POINTS points (bench-sweep plan) and fills each with RANKS rank files of STEPS
steps and a status.json (bench/make_results_tree: bench-train's and the runner's own writers),
then times, ROUNDS times each, into a fresh SQLite store on the same disk:
  - the first ingest (every attempt new: read with its environment and stored);
  - a second ingest of the same tree (every attempt known: only the status.json files are read);
  - `bench-history series train_tokens_per_second --config-hash H` (one configuration's runs
    among all of them) and `bench-history runs --last 100`.
Goal (issue 53): at least 5,000 points/s into SQLite on 2 cores. Writes
bench/results/history_speed.json.

Usage: bench/history_speed.py [--bin build/release/bin] [--tree /var/tmp/sweepbench-history]
                              [--points 10000] [--ranks 1] [--steps 100] [--rounds 3]
"""
import argparse
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from extract_speed import SCHEMA, sweep_text, timed  # noqa: E402


def results_tree(bin_dir, root, points, ranks=1, steps=100):
    """The results tree of POINTS points under ROOT, planned and filled once (kept between runs):
    its path."""
    tree = os.path.join(root, f"p{points}-r{ranks}-s{steps}-schema{SCHEMA}")
    os.makedirs(root, exist_ok=True)
    if not os.path.exists(os.path.join(tree, "manifest.json")):
        sweep = os.path.join(root, f"history-speed-{points}.yaml")
        with open(sweep, "w") as f:
            f.write(sweep_text(points))
        subprocess.run([os.path.join(bin_dir, "bench-sweep"), "plan", sweep, "--out", tree],
                       check=True, stdout=subprocess.DEVNULL)
    subprocess.run([os.path.join(bin_dir, "make_results_tree"), "--out", tree,
                    "--ranks", str(ranks), "--steps", str(steps),
                    "--jobs", str(os.cpu_count())], check=True)
    return tree


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--tree", default="/var/tmp/sweepbench-history")
    p.add_argument("--points", type=int, default=10000)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    tree = results_tree(args.bin, args.tree, args.points, args.ranks, args.steps)
    history = os.path.join(args.bin, "bench-history")
    # One untimed read of the tree: the page cache warm, as for bench/extract_speed.py.
    subprocess.run([os.path.join(args.bin, "bench-extract"), "-i", tree, "-o",
                    os.path.join(args.tree, "warm.csv"), "-f"],
                   check=True, stderr=subprocess.DEVNULL)
    cases = {"first ingest (all new)": [], "second ingest (all known)": [],
             "series of one configuration": [], "runs --last 100": []}
    rss = {name: 0.0 for name in cases}
    stored = 0
    with tempfile.TemporaryDirectory(dir=args.tree) as tmp:
        for _ in range(args.rounds):
            store = os.path.join(tmp, "history.sqlite")
            if os.path.exists(store):
                os.unlink(store)
            for name, cmd in (("first ingest (all new)", ["ingest", tree]),
                              ("second ingest (all known)", ["ingest", tree])):
                wall, peak = timed([history, *cmd, "--store", store], False)
                cases[name].append(wall)
                rss[name] = max(rss[name], peak)
            with sqlite3.connect(store) as db:
                stored = db.execute("SELECT count(*) FROM runs").fetchone()[0]
                metrics = db.execute("SELECT count(*) FROM metrics").fetchone()[0]
                config = db.execute("SELECT config_hash FROM runs LIMIT 1").fetchone()[0]
            assert stored == args.points, (stored, args.points)
            for name, cmd in (("series of one configuration",
                               ["series", "train_tokens_per_second", "--config-hash", config]),
                              ("runs --last 100", ["runs", "--last", "100"])):
                wall, peak = timed([history, *cmd, "--store", store, "--format", "csv"], False)
                cases[name].append(wall)
                rss[name] = max(rss[name], peak)
        size = os.path.getsize(store)
    rows = []
    for name, walls in cases.items():
        median = statistics.median(walls)
        row = {"case": name, "wall_s": walls, "median_wall_s": median, "peak_rss_mib": rss[name]}
        if "ingest" in name:
            row["points_per_s"] = args.points / median
        rows.append(row)
        rate = f", {row['points_per_s']:,.0f} points/s" if "points_per_s" in row else ""
        print(f"{name}: median {median:.2f} s ({', '.join(f'{w:.2f}' for w in walls)})"
              f"{rate}, peak RSS {rss[name]:.0f} MiB")
    print(f"# store: {stored} runs, {metrics} metric values, {size / 1e6:.1f} MB")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "history_speed.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
                   "machine": platform.processor() or platform.machine(),
                   "points": args.points, "ranks": args.ranks, "steps": args.steps,
                   "runs": stored, "metric_values": metrics, "store_bytes": size,
                   "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
