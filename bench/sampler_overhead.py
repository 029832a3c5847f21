#!/usr/bin/python3
"""What the background sampler costs a training step (docs/performance.md).

Runs the same bench-train point with the sampler off (metrics.sample_interval_ms: 0), at its
default period (1000 ms) and at 100 times the default rate (10 ms), alternating, ROUNDS times,
and compares median step times. The target: under 1% at the default period.
Writes bench/results/sampler_overhead.json.

Usage: bench/sampler_overhead.py [--bin build/release/bin] [--rounds 5]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_vs_pytorch import HERE, ROOT, bench_train  # noqa: E402

SHAPE = (4, 256, 4, 1024, 8192)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    threads = os.cpu_count()
    settings = {"off": 0, "default (1000 ms)": 1000, "100x default (10 ms)": 10}
    runs = {k: [] for k in settings}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name, interval in settings.items():
                runs[name].append(bench_train(args.bin, SHAPE, 128, 8, 43, threads, tmp,
                                              extra=("--set", f"metrics.sample_interval_ms={interval}")))
    off = statistics.median(runs["off"])
    print(f"# sampler cost: median step time over {args.rounds} runs of 40 measured steps, {threads} threads")
    print("| sampler | median step (ms) | vs off |")
    print("|---|---|---|")
    rows = []
    for name in settings:
        med = statistics.median(runs[name])
        rows.append({"sampler": name, "median_step_s": med, "runs": runs[name], "overhead": med / off - 1})
        print(f"| {name} | {med * 1000:.2f} | {100 * (med / off - 1):+.2f}% |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "sampler_overhead.json"), "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "cpus": threads, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
