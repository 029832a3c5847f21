#!/usr/bin/python3
"""What the runner itself costs a point: `bench-sweep run` on N command points whose
program is /bin/true, from the plan to the last recorded status, against the floor of running
bench-command alone on one of those points' configs N times in a shell loop (the program's own
start and end, its rank file and summary).

Reports, per point: the whole sweep's wall time over N, bench-command's alone, and the
difference (what bench-sweep adds: claiming, the record, the manifest, ending leftovers); and
what a 100,000-point sweep would spend on the runner at that rate. Rounds alternate the two sides
(sweep, loop, sweep, loop ...) so that a machine's drift hits both.

Writes bench/results/runner_overhead.json.

Usage: bench/runner_overhead.py [--bin build/release/bin] [--compare OLD/bin] [--points 200]
                                [--rounds 3]
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from results_file import write_results

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def sweep_text(points):
    return ("name: noop\nbase:\n  benchmark: command\n  command: {argv: [/bin/true]}\n"
            f"axes:\n  params.i: {list(range(points))}\n")


def measure(bins, path, tmp, points, tag, env):
    """One round of one build: the sweep's and bench-command's per-point seconds."""
    sweep_bin = os.path.join(bins, "bench-sweep")
    command_bin = os.path.join(bins, "bench-command")
    out = os.path.join(tmp, f"sweep-{tag}")
    t0 = time.monotonic()
    subprocess.run([sweep_bin, "run", path, "--out", out], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    sweep = (time.monotonic() - t0) / points
    # The floor: bench-command on the first point's config, N times, each in a fresh directory
    # as bench-sweep gives it.
    config = next(os.path.join(out, d, "config.yaml") for d in sorted(os.listdir(out))
                  if os.path.exists(os.path.join(out, d, "config.yaml")))
    loop_dir = os.path.join(tmp, f"loop-{tag}")
    os.makedirs(loop_dir)
    script = f'for i in $(seq {points}); do "$0" --config "$1" --out "$2/$i" >/dev/null || exit 1; done'
    t0 = time.monotonic()
    subprocess.run(["sh", "-c", script, command_bin, config, loop_dir], check=True, env=env)
    alone = (time.monotonic() - t0) / points
    shutil.rmtree(out)
    shutil.rmtree(loop_dir)
    return sweep, alone


def summary(sweeps, loops):
    sweep_ms = statistics.median(sweeps) * 1000
    alone_ms = statistics.median(loops) * 1000
    return {
        "sweep_ms_per_point": [round(x * 1000, 2) for x in sweeps],
        "bench_command_alone_ms": [round(x * 1000, 2) for x in loops],
        "sweep_ms_per_point_median": round(sweep_ms, 2),
        "bench_command_alone_ms_median": round(alone_ms, 2),
        "runner_ms_per_point": round(sweep_ms - alone_ms, 2),
        "hours_for_100000_points": round(sweep_ms * 100000 / 1000 / 3600, 2),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--compare", help="another build's bin directory, measured alternately")
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    sides = {"this": a.bin}
    if a.compare:
        sides["compare"] = a.compare
    times = {name: ([], []) for name in sides}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "noop.yaml")
        with open(path, "w") as f:
            f.write(sweep_text(a.points))
        for r in range(a.rounds):
            # Sides alternate, and which goes first alternates too.
            order = list(sides) if r % 2 == 0 else list(reversed(list(sides)))
            for name in order:
                sweep, alone = measure(sides[name], path, tmp, a.points, f"{name}{r}", env)
                times[name][0].append(sweep)
                times[name][1].append(alone)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "points": a.points,
        "rounds": a.rounds,
        "builds": {name: dict(bin=sides[name], **summary(*times[name])) for name in sides},
    }
    write_results(os.path.join(HERE, "results", "runner_overhead.json"), result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
