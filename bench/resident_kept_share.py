#!/usr/bin/python3
"""How much of what checkpointing and ZeRO-1/2 save in counted tensors a CPU rank's resident set
keeps (issue 52; src/predict/memory_model.h, kResidentKeptShare).

Reads a results tree of bench/memory_ckpt.yaml, whose every checkpointed or ZeRO-1/2 point has a
twin of the same shape and ranks at ZeRO-0 without checkpointing. For each such run, with C its
counted peak (mem_alloc_peak_bytes), W its twin's (the mean over the twin's repeats) and R its
resident high-water mark (mem_peak_bytes), the share a in

    R = 159 MB + 1.39 x (C + a (W - C))

(the resident line of docs/metrics.md through the counted peak plus a share of the gap) is fitted
by least squares in relative error over all such runs; printed with the error of a = 0 (the line
through the counted peak alone), of the fitted a, of 0.5 and of 1, and written as JSON with
every run.

    OMPI_MCA_rmaps_base_oversubscribe=1 bench-sweep run bench/memory_ckpt.yaml --out runs/memory-ckpt
    bench/resident_kept_share.py runs/memory-ckpt --out bench/results/resident_kept_share.json
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE, SLOPE = 159e6, 1.39  # memory_model.h: kResidentBaseBytes, kResidentPerCountedByte
SHAPE = ("model.n_layer", "model.n_embd", "data.seq_len", "train.micro_batch", "launch.ranks")


def rows_of(bin_dir, tree):
    r = subprocess.run([os.path.join(bin_dir, "bench-extract"), "-i", tree, "--format", "csv",
                        "--columns", "all"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench-extract: exit {r.returncode}\n{r.stderr}")
    return [x for x in csv.DictReader(io.StringIO(r.stdout)) if x.get("status") == "ok"]


def errors(runs, a):
    return [(BASE + SLOPE * (x["counted"] + a * (x["whole"] - x["counted"]))) / x["resident"] - 1
            for x in runs]


def summary(e):
    return {"runs": len(e), "mean_abs_error": statistics.mean(abs(x) for x in e),
            "most_under": min(e), "most_over": max(e), "under_predicted": sum(x < 0 for x in e)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("tree")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--out")
    args = p.parse_args()
    rows = rows_of(args.bin, args.tree)
    whole = {}
    for x in rows:
        if x["train.zero_stage"] == "0" and x["train.activation_checkpointing"] == "false":
            whole.setdefault(tuple(x[k] for k in SHAPE), []).append(float(x["mem_alloc_peak_bytes"]))
    runs = []
    for x in rows:
        sharded = x["train.zero_stage"] in ("1", "2")
        if not sharded and x["train.activation_checkpointing"] != "true":
            continue
        twin = whole.get(tuple(x[k] for k in SHAPE))
        if not twin:
            sys.exit(f"{x['tag']}: no twin at ZeRO-0 without checkpointing in {args.tree}")
        runs.append({"tag": x["tag"], "zero_stage": int(x["train.zero_stage"]),
                     "checkpointing": x["train.activation_checkpointing"] == "true",
                     "ranks": int(x["launch.ranks"]), "counted": float(x["mem_alloc_peak_bytes"]),
                     "whole": statistics.mean(twin), "resident": float(x["mem_peak_bytes"])})
    # Least squares in relative error: e(a) = c + a g, c = line(C) / R - 1, g = 1.39 (W - C) / R.
    c = [(BASE + SLOPE * x["counted"]) / x["resident"] - 1 for x in runs]
    g = [SLOPE * (x["whole"] - x["counted"]) / x["resident"] for x in runs]
    fitted = -sum(ci * gi for ci, gi in zip(c, g)) / sum(gi * gi for gi in g)
    result = {"tree": args.tree, "fitted_share": fitted,
              "errors": {name: summary(errors(runs, a))
                         for name, a in (("share 0", 0.0), ("fitted", fitted), ("share 0.5", 0.5),
                                         ("share 1", 1.0))},
              "runs": runs}
    print(f"# {len(runs)} runs; least-squares share {fitted:.3f}")
    print("| share | runs | mean abs error | most under | most over | under-predicted |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, s in result["errors"].items():
        print(f"| {name} | {s['runs']} | {100 * s['mean_abs_error']:.1f}% | "
              f"{100 * s['most_under']:+.1f}% | {100 * s['most_over']:+.1f}% | {s['under_predicted']} |")
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
