#!/usr/bin/python3
"""A busy neighbour against bench-train's CPU threads (docs/performance.md, "A busy neighbour"):
the quickstart's largest point (gpt2-tiny, micro batch 4, sequence 64) on this machine's CPUs,
alone and beside a process that spins on one CPU or another bench-train, under each setup: the
threads bench-train chooses from what other processes used of its CPUs as it started (its
default since issue 52), the threads fixed at one a CPU (`launch.cpus_per_rank`, which turns the
choice off: the default before), and both with OMP_WAIT_POLICY=PASSIVE (libgomp's own default
spins a while, then sleeps). The setups alternate run by run, so that a machine that gets busier
slows each alike. Prints a Markdown table; writes bench/results/<--name>.json.

    bench/contention.py [--bin build/release/bin] [--repeats 8] [--steps 60] [--neighbours ...]
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from results_file import write_results  # noqa: E402

CONFIG = """\
model: {preset: gpt2-tiny}
data: {source: synthetic, seq_len: 64}
train: {steps: %(steps)d, warmup_steps: 5, micro_batch: 4}
eval: {steps: 0}
metrics: {sample_interval_ms: 0, system: false}
"""

# Each setup: the environment's OpenMP wait policy (None: unset, libgomp's default) and the
# config's launch.cpus_per_rank (None: bench-train chooses).
CPUS = os.cpu_count()
SETUPS = {
    "threads chosen at start": {"policy": None, "cpus_per_rank": None},
    f"{CPUS} threads fixed": {"policy": None, "cpus_per_rank": CPUS},
    "PASSIVE, threads chosen": {"policy": "PASSIVE", "cpus_per_rank": None},
    f"PASSIVE, {CPUS} threads fixed": {"policy": "PASSIVE", "cpus_per_rank": CPUS},
}


def one_run(binary, tmp, steps, setup, n):
    point = os.path.join(tmp, f"run-{n}")
    os.makedirs(point)
    config = os.path.join(point, "config.yaml")
    with open(config, "w") as f:
        f.write(CONFIG % {"steps": steps})
        if setup["cpus_per_rank"]:
            f.write("launch: {cpus_per_rank: %d}\n" % setup["cpus_per_rank"])
    out = os.path.join(point, "out")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    if setup["policy"]:
        env["OMP_WAIT_POLICY"] = setup["policy"]
    started = time.time()
    subprocess.run([os.path.join(binary, "bench-train"), "--config", config, "--out", out],
                   check=True, capture_output=True, env=env, timeout=600)
    seconds = time.time() - started
    with h5py.File(os.path.join(out, "rank-00000.h5"), "r") as f:
        steps_table = f["steps"][:]
        shared = float(f.attrs["cpu_shared"])
        threads = int(f.attrs["threads"])
        busy = float(f.attrs["cpus_busy_at_start"])
    kept = steps_table[steps_table["measured"] != 0]
    tokens = float(kept["tokens"].sum()) / float(kept["total_s"].sum())
    return {"tokens_per_second": tokens, "cpu_shared": shared, "threads": threads,
            "cpus_busy_at_start": busy, "seconds": seconds}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--neighbours", default="none,one CPU spinning,another bench-train")
    ap.add_argument("--name", default="contention_threads",
                    help="the results file's name under bench/results/, without .json")
    args = ap.parse_args()
    runs = {}
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for neighbour in args.neighbours.split(","):
            hog = None
            if neighbour == "one CPU spinning":
                hog = subprocess.Popen(["taskset", "-c", "0", "/usr/bin/python3", "-c",
                                        "while True: pass"])
            elif neighbour == "another bench-train":
                # The same point again and again, beside: a second job on the same CPUs.
                loop = ("import subprocess, sys, tempfile, os\n"
                        "while True:\n"
                        "    d = tempfile.mkdtemp()\n"
                        "    c = os.path.join(d, 'c.yaml')\n"
                        "    open(c, 'w').write(sys.argv[2])\n"
                        "    subprocess.run([sys.argv[1], '--config', c, '--out', "
                        "os.path.join(d, 'o')], capture_output=True)\n")
                hog = subprocess.Popen(["/usr/bin/python3", "-c", loop,
                                        os.path.join(args.bin, "bench-train"),
                                        CONFIG % {"steps": 100000}])
            try:
                for _ in range(args.repeats):
                    for name, value in SETUPS.items():
                        n += 1
                        r = one_run(args.bin, tmp, args.steps, value, n)
                        runs.setdefault(neighbour, {}).setdefault(name, []).append(r)
                        print(f"{neighbour}, {name}: {r['tokens_per_second']:.0f} tokens/s, "
                              f"{r['threads']} thread(s), shared {r['cpu_shared']:.0%}",
                              flush=True)
            finally:
                if hog:
                    subprocess.run(["pkill", "-P", str(hog.pid)], check=False)
                    hog.kill()
                    hog.wait()
    rows = []
    print("| neighbour | setup | threads | tokens/s, median | slowest run | fastest run | "
          "others took (median) |\n|---|---|---|---:|---:|---:|---:|")
    for neighbour, by_policy in runs.items():
        for name, rs in by_policy.items():
            t = [r["tokens_per_second"] for r in rs]
            s = [r["cpu_shared"] for r in rs]
            threads = sorted({r["threads"] for r in rs})
            row = {"neighbour": neighbour, "setup": name, "median": statistics.median(t),
                   "min": min(t), "max": max(t), "cpu_shared_median": statistics.median(s),
                   "runs": rs}
            rows.append(row)
            print(f"| {neighbour} | {name} | {', '.join(map(str, threads))} | "
                  f"{row['median']:,.0f} | {row['min']:,.0f} | "
                  f"{row['max']:,.0f} | {row['cpu_shared_median']:.0%} |")
    write_results(os.path.join(HERE, "results", args.name + ".json"), {
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.node(),
        "cpus": os.cpu_count(),
        "repeats": args.repeats,
        "steps": args.steps,
        "rows": rows,
    })


if __name__ == "__main__":
    main()
