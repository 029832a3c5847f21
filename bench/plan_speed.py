#!/usr/bin/python3
"""bench-sweep plan on a 100,000-point sweep: wall time and peak memory (docs/performance.md).

Times `bench-sweep plan SWEEP --format table|json --max-points 100000 > /dev/null` ROUNDS times
each (after one untimed run) and reports the median and the peak RSS. Target: under
3 s and 150 MB each on 2 cores. With --out it also times writing the plan's directory (100,000
config.yaml files and the manifest), once.

Peer, measured in the same run: a Python planner that does the least any planner must (the
product of the axes over a resolved base config, each point's SHA-256 over its canonical JSON,
the same JSON document printed) with no validation, no derived keys and no tags. It is a lower
bound for a Python tool, not a model of one.

Writes bench/results/plan_speed.json.

Usage: bench/plan_speed.py [--bin build/release/bin] [--rounds 3] [--out /var/tmp/sb-plan]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from extract_speed import timed as timed_run  # noqa: E402  (wall seconds, peak RSS in MiB)


def timed(cmd):
    return timed_run(cmd, cold=False)

AXES = {
    "train.micro_batch": list(range(1, 11)),
    "train.steps": list(range(20, 30)),
    "train.lr": [round(0.001 * i, 3) for i in range(1, 11)],
    "train.seed": list(range(1, 11)),
    "train.grad_accum": list(range(1, 11)),
}


def sweep_text():
    lines = ["name: plan-speed", "base:", "  model: {preset: gpt2-tiny}", "axes:"]
    lines += [f"  {k}: {v}" for k, v in AXES.items()]
    return "\n".join(lines) + "\n"


PEER = r'''
import copy, hashlib, itertools, json, sys
base = json.loads(sys.argv[1]); axes = json.loads(sys.argv[2])
points = []
out = sys.stdout
out.write('{"points": [')
for i, values in enumerate(itertools.product(*axes.values())):
    config = copy.deepcopy(base)
    for key, value in zip(axes, values):
        section, name = key.split(".")
        config[section][name] = value
    text = json.dumps(config, sort_keys=True)
    entry = {"index": i, "config_hash": hashlib.sha256(text.encode()).hexdigest(),
             "config": config}
    out.write(("," if i else "") + json.dumps(entry, indent=2))
out.write("]}\n")
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", help="also time writing the plan's directory here (emptied first)")
    a = ap.parse_args()
    bench_sweep = os.path.join(a.bin, "bench-sweep")
    results = {"machine": platform.node(), "cpus": os.cpu_count(),
               "date": time.strftime("%Y-%m-%d"), "points": 100000, "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        sweep = os.path.join(tmp, "plan-speed.yaml")
        with open(sweep, "w") as f:
            f.write(sweep_text())
        for fmt in ("table", "json"):
            cmd = [bench_sweep, "plan", sweep, "--max-points", "100000", "--format", fmt]
            timed(cmd)  # warm: the binary and the sweep file in the page cache
            runs = [timed(cmd) for _ in range(a.rounds)]
            walls = [w for w, _ in runs]
            results["runs"][fmt] = {"seconds": walls, "median_s": statistics.median(walls),
                                    "peak_rss_mib": max(m for _, m in runs)}
            print(f"bench-sweep plan --format {fmt}: median {statistics.median(walls):.2f} s "
                  f"(of {', '.join(f'{w:.2f}' for w in walls)}), peak "
                  f"{max(m for _, m in runs):.0f} MiB")
        # The peer starts from the resolved config of the sweep's first point, from bench-sweep.
        one = os.path.join(tmp, "one.yaml")
        with open(one, "w") as f:
            f.write(sweep_text().split("axes:")[0])
        first = subprocess.run([bench_sweep, "plan", one, "--format", "json"],
                               capture_output=True, text=True)
        base = json.loads(first.stdout)["points"][0]["config"] if first.returncode == 0 else None
        if base is not None:
            cmd = [sys.executable, "-c", PEER, json.dumps(base), json.dumps(AXES)]
            runs = [timed(cmd) for _ in range(a.rounds)]
            walls = [w for w, _ in runs]
            results["runs"]["python_peer_json"] = {
                "seconds": walls, "median_s": statistics.median(walls),
                "peak_rss_mib": max(m for _, m in runs)}
            print(f"python peer (product + sha256 + json, no checks): median "
                  f"{statistics.median(walls):.2f} s, peak {max(m for _, m in runs):.0f} MiB")
        if a.out:
            subprocess.run(["rm", "-rf", a.out], check=True)
            wall, rss = timed([bench_sweep, "plan", sweep, "--max-points", "100000", "--out",
                               a.out, "--format", "csv"])
            results["runs"]["write_dir"] = {"seconds": [wall], "median_s": wall,
                                            "peak_rss_mib": rss}
            print(f"bench-sweep plan --out (100,000 config.yaml + manifest): {wall:.1f} s, peak "
                  f"{rss:.0f} MiB")
    path = os.path.join(HERE, "results", "plan_speed.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print(f"wrote {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
