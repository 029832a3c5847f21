#!/usr/bin/python3
"""How close bench-sweep plan --estimate's memory prediction comes to what ran (issue 36).

For each results tree of `bench-sweep run` (its sweep file is in its manifest), the prediction of
every point (`bench-sweep plan SWEEP --estimate --format csv`) against its measured peak of live
tensors (`mem_alloc_peak_bytes` from bench-extract: the counted CPU allocator, or the CUDA
allocator): the relative error of each point, the mean absolute error and the worst, by group.
With --gpu-json, the GPU runs of bench/gpu/run.sh (bench/results/gpu_h200.json) against the
points of bench/gpu/memory.yaml, which lists the same configurations in the same order. With
--figure resident, a CPU point's predicted resident set (mem_pred_resident_bytes) against its
measured high-water mark (mem_peak_bytes), the figure memory_limit compares on CPUs (issue 52).

    bench/memory_accuracy.py runs/memory-grid [runs/other ...] [--bin build/release/bin]
    bench/memory_accuracy.py --gpu-json bench/results/gpu_h200.json [--out results.json]
    bench/memory_accuracy.py runs/memory-zero --figure resident
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
GROUP_KEYS = ("model.arch", "train.dtype", "train.activation_checkpointing", "train.fused_loss", "train.peft",
              "train.zero_stage", "launch.ranks", "launch.tensor_parallel", "benchmark", "infer.dtype")


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def predictions(bin_dir, sweep):
    text = run([os.path.join(bin_dir, "bench-sweep"), "plan", sweep, "--estimate", "--format", "csv"])
    return list(csv.DictReader(io.StringIO(text)))


# What is predicted against what is measured: the counted allocations, or the resident set.
FIGURES = {"allocated": ("mem_pred_peak_bytes", "mem_alloc_peak_bytes"),
           "resident": ("mem_pred_resident_bytes", "mem_peak_bytes")}


def tree_rows(bin_dir, tree, figure="allocated"):
    predicted_column, measured_column = FIGURES[figure]
    manifest = json.load(open(os.path.join(tree, "manifest.json")))
    pred = {p["tag"]: p for p in predictions(bin_dir, manifest["sweep_file"])}
    text = run([os.path.join(bin_dir, "bench-extract"), "-i", tree, "--format", "csv"])
    rows = []
    for m in csv.DictReader(io.StringIO(text)):
        if m.get("status") != "ok" or not m.get(measured_column):
            continue
        p = pred.get(m["tag"])
        if p is None or not p.get(predicted_column):
            continue
        row = {k: m.get(k, "") for k in GROUP_KEYS}
        row.update(tag=m["tag"], device="cpu", measured=float(m[measured_column]),
                   predicted=float(p[predicted_column]))
        rows.append(row)
    return rows


def gpu_rows(bin_dir, json_path):
    runs = json.load(open(json_path))["bench"]
    sweep = os.path.join(ROOT, "bench", "gpu", "memory.yaml")
    names = [line.split("#", 1)[1].split()[0] for line in open(sweep)
             if line.lstrip().startswith(("- {", "base:")) and "#" in line]
    pred = predictions(bin_dir, sweep)
    rows = []
    for name, p in zip(names, pred):
        stages = runs[name]["memory_stages"]
        measured = max(s["peak"] for s in stages.values())
        rows.append({"tag": name, "device": "gpu", "measured": float(measured),
                     "predicted": float(p["mem_pred_peak_bytes"]),
                     **{k: p.get(k, "") for k in GROUP_KEYS}})
    return rows


def summarize(rows, label):
    errors = [(r["predicted"] - r["measured"]) / r["measured"] for r in rows]
    return {"group": label, "points": len(rows), "mean_abs_error": statistics.mean(abs(e) for e in errors),
            "worst_error": max(errors, key=abs), "under_predicted": sum(e < 0 for e in errors)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trees", nargs="*")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--gpu-json")
    p.add_argument("--out")
    p.add_argument("--by", default="train.dtype,train.activation_checkpointing,train.fused_loss")
    p.add_argument("--figure", choices=sorted(FIGURES), default="allocated")
    a = p.parse_args()
    rows = []
    for t in a.trees:
        rows += tree_rows(a.bin, t, a.figure)
    if a.gpu_json:
        rows += gpu_rows(a.bin, a.gpu_json)
    if not rows:
        sys.exit(f"no point with both a prediction and a measured {FIGURES[a.figure][1]}")
    keys = [k for k in a.by.split(",") if k]
    groups = {}
    for r in rows:
        groups.setdefault((r["device"],) + tuple(r.get(k, "") for k in keys), []).append(r)
    table = [summarize(rows, "all")] + [summarize(g, " ".join(map(str, k))) for k, g in sorted(groups.items())]
    print(f"| group ({'device ' + ' '.join(keys)}) | points | mean abs error | worst | under |")
    print("|---|---:|---:|---:|---:|")
    for s in table:
        print(f"| {s['group']} | {s['points']} | {100 * s['mean_abs_error']:.1f}% | {100 * s['worst_error']:+.1f}% "
              f"| {s['under_predicted']} |")
    if a.out:
        with open(a.out + ".tmp", "w") as f:
            json.dump({"summary": table, "points": rows}, f, indent=1)
        os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
