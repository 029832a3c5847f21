#!/usr/bin/python3
"""How often bench-compare's verdict is wrong on real runs (docs/compare.md, "How well the verdict
works"): pairs of results trees of the same configuration, whose points should be `~` or
inconclusive and are a false positive when called better or worse; and pairs whose candidate is
slower by a known amount, which should be `worse`.

Cases: the same sleep twice, sleeps 20% and 30% longer; gpt2-tiny twice on one CPU a rank, and
on two against one (launch.cpus_per_rank).

Each round runs the two sides' points alternately (bench-sweep run --only), as a fair comparison
does: command points that sleep (no CPU, so only the machine's scheduling noise) and tiny
bench-train points (gpt2-tiny on the CPU, real step-time noise), REPEATS runs a point, two points a
sweep.

Writes bench/results/compare_verdicts-REPEATS-repeats.json.

Usage: bench/compare_verdicts.py [--bin build/release/bin] [--rounds 20] [--repeats 6]
"""
import argparse
import csv
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from results_file import write_results  # noqa: E402

SLEEP = """\
name: %(name)s
repeats: %(repeats)d
base:
  benchmark: command
  command: {argv: [sleep, "%(seconds)s"]}
axes:
  params.size: [1, 2]
"""

TRAIN = """\
name: %(name)s
repeats: %(repeats)d
base:
  model: {preset: gpt2-tiny, n_layer: %(layers)d}
  data: {source: synthetic, seq_len: 64}
  train: {steps: 42, warmup_steps: 2, micro_batch: 2}
  eval: {steps: 0}
  metrics: {sample_interval_ms: 0, system: false}
  launch: {cpus_per_rank: %(cpus)d}
axes:
  train.micro_batch: [2, 4]
"""


def run(cmd):
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))


def verdicts(binary, a, b, metric):
    out = subprocess.run([os.path.join(binary, "bench-compare"), a, b, "--format", "csv",
                          "--metric", metric], capture_output=True, text=True, check=True).stdout
    return [r["verdict"] for r in csv.DictReader(io.StringIO(out)) if r["point"] != "geomean"]


def side_by_side(binary, tmp, round_, kind, sides, repeats):
    """Writes and runs each side's sweep, points alternating; returns each side's tree."""
    trees = {}
    for name, values in sides.items():
        path = os.path.join(tmp, f"{kind}-{name}-{round_}.yaml")
        with open(path, "w") as f:
            f.write((SLEEP if kind == "sleep" else TRAIN) % dict(values, name=f"{kind}-{name}",
                                                                  repeats=repeats))
        trees[name] = (path, os.path.join(tmp, f"{kind}-{name}-{round_}"))
    for index in range(2 * repeats):
        for path, out in trees.values():
            run([os.path.join(binary, "bench-sweep"), "run", path, "--out", out, "--only", str(index)])
    return {name: out for name, (_, out) in trees.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=6)
    args = ap.parse_args()
    counts = {}

    def count(case, vs):
        c = counts.setdefault(case, {"comparisons": 0, "better": 0, "worse": 0, "~": 0,
                                     "inconclusive": 0})
        for v in vs:
            c["comparisons"] += 1
            c[v] += 1

    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            s = side_by_side(args.bin, tmp, r, "sleep",
                             {"a": {"seconds": "0.05"}, "b": {"seconds": "0.05"},
                              "slow": {"seconds": "0.06"}, "slower": {"seconds": "0.065"}},
                             args.repeats)
            count("sleep, same", verdicts(args.bin, s["a"], s["b"], "seconds"))
            count("sleep, 20% slower", verdicts(args.bin, s["a"], s["slow"], "seconds"))
            count("sleep, 30% slower", verdicts(args.bin, s["a"], s["slower"], "seconds"))
            t = side_by_side(args.bin, tmp, r, "train",
                             {"a": {"layers": 2, "cpus": 1}, "b": {"layers": 2, "cpus": 1},
                              "two": {"layers": 2, "cpus": 2}}, args.repeats)
            count("train, same, repeats", verdicts(args.bin, t["a"], t["b"],
                                                   "train_tokens_per_second"))
            count("train, 2 CPUs against 1", verdicts(args.bin, t["a"], t["two"],
                                                      "train_tokens_per_second"))
            print(f"round {r + 1}/{args.rounds}: {json.dumps(counts)}", flush=True)
    for c in counts.values():
        n = c["comparisons"]
        c["called_different"] = (c["better"] + c["worse"]) / n if n else None
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.node(),
        "cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].split(":", 1)[1]
        .strip() if os.path.exists("/proc/cpuinfo") else "",
        "rounds": args.rounds,
        "repeats": args.repeats,
        "seconds": round(time.time() - started, 1),
        "cases": counts,
    }
    write_results(os.path.join(HERE, "results", f"compare_verdicts-{args.repeats}-repeats.json"), result)
    for case, c in counts.items():
        print(f"{case}: {c['comparisons']} comparisons, better {c['better']}, worse {c['worse']}, "
              f"~ {c['~']}, inconclusive {c['inconclusive']}")


if __name__ == "__main__":
    main()
