#!/usr/bin/python3
"""How close bench-sweep plan --estimate's time prediction comes to what ran (issue 36).

For each results tree of `bench-sweep run`, every ok point's predicted time (bench-extract's
time_pred_step_s: the same model as plan --estimate's, of the point as it ran; a training step,
or a generation) against its measured median
(step_time_median_s or e2e_p50_s from bench-extract), three ways: as predicted from the reference
constants alone; calibrated by one other point of the same model in the same tree (every such
pair: what a user gets who calibrates by whichever point ran first); and calibrated by the median
of all the other points of the model (bench-sweep plan --calibrate's factor, the point itself
left out). Groups: the model (preset, dtype) and, within training, ZeRO stages over two ranks
apart.

    bench/time_accuracy.py runs/time-grid runs/time-grid-infer [--bin build/release/bin] [--out F]
    bench/time_accuracy.py GPU-TREE --machine "NVIDIA H200" --out F   # bench/gpu/run.sh sweep's

Given two trees of one sweep (two runs of it), it also reports how far the same point's
measurement moved between them: the machine's noise, which bounds what any prediction can match.
"""
import argparse
import csv
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def table(text):
    return {r["tag"]: r for r in csv.DictReader(io.StringIO(text))}


MODEL_KEYS = ("benchmark", "model.preset", "model.n_layer", "model.n_embd", "model.n_head",
              "model.n_kv_head", "model.ffn_dim", "model.vocab_size", "train.dtype", "infer.dtype",
              "infer.cuda_graph")


def tree_rows(bin_dir, tree):
    # bench-extract predicts each point beside what it measured (time_pred_step_s: the same model
    # as bench-sweep plan --estimate, on the device the rank file names, uncalibrated).
    measured = table(run([os.path.join(bin_dir, "bench-extract"), "-i", tree, "--format", "csv"]))
    rows = []
    for tag, m in measured.items():
        if m.get("status") != "ok" or not m.get("time_pred_step_s"):
            continue
        train = m.get("benchmark", "train") == "train"
        value = m.get("step_time_median_s") if train else m.get("e2e_p50_s")
        mean = m.get("step_time_mean_s") if train else m.get("e2e_mean_s")
        if not value or not mean:
            continue
        group = f"{m.get('model.preset', '')} {m.get('train.dtype') or m.get('infer.dtype') or 'fp32'}"
        if train and m.get("launch.ranks", "1") != "1":
            group += " 2 ranks (ZeRO)"
        if not train:
            group += " generation"
        rows.append({"tree": tree, "tag": tag, "group": group,
                     "model": (tree,) + tuple(m.get(k, "") for k in MODEL_KEYS),
                     "measured_s": float(value), "measured_mean_s": float(mean),
                     "predicted_s": float(m["time_pred_step_s"]),
                     "cv": float(m.get("step_time_cv") or m.get("e2e_cv") or "nan")})
    return rows


def calibrate(rows):
    """Each point's errors once its model is calibrated by the tree's other points: by each one
    of them alone (every pair), and by the median of them all (bench-sweep plan --calibrate's
    factor, without the point itself)."""
    by_model = {}
    for r in rows:
        by_model.setdefault(r["model"], []).append(r)
    for same in by_model.values():
        for r in same:
            others = [o["measured_s"] / o["predicted_s"] for o in same if o is not r]
            r["one_point_errors"] = [r["predicted_s"] * f / r["measured_s"] - 1 for f in others]
            r["median_error"] = (r["predicted_s"] * statistics.median(others) / r["measured_s"] - 1
                                 if others else None)


def summarize(errors):
    if not errors:
        return None
    return {"points": len(errors), "mean_abs_error": statistics.mean(abs(e) for e in errors),
            "worst_error": max(errors, key=abs), "within_10pct": sum(abs(e) <= 0.10 for e in errors)}


def cell(s):
    if s is None:
        return f"{'':>8} {'':>7} {'':>9}"
    return f"{s['mean_abs_error']:8.1%} {s['worst_error']:+7.1%} {s['within_10pct']:>4}/{s['points']:<4}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--out")
    ap.add_argument("--machine", help="where the trees ran (default: this machine's processor)")
    args = ap.parse_args()
    rows = [r for t in args.trees for r in tree_rows(args.bin, t)]
    calibrate(rows)
    groups = sorted({r["group"] for r in rows})
    result = {"date": time.strftime("%Y-%m-%d"), "machine": args.machine or platform.processor() or platform.machine(),
              "trees": args.trees, "groups": {}}
    print(f"{'group':32} {'uncalibrated: MAE':>17} {'worst':>7} {'<=10%':>9} | "
          f"{'one point: MAE':>14} {'worst':>7} {'<=10%':>9} | {'median: MAE':>11} {'worst':>7} {'<=10%':>9}")
    for g in groups + ["all training", "all generation"]:
        if g == "all training":
            sel = [r for r in rows if "generation" not in r["group"]]
        elif g == "all generation":
            sel = [r for r in rows if "generation" in r["group"]]
        else:
            sel = [r for r in rows if r["group"] == g]
        if not sel:
            continue
        u = summarize([r["predicted_s"] / r["measured_s"] - 1 for r in sel])
        one = summarize([e for r in sel for e in r["one_point_errors"]])
        med = summarize([r["median_error"] for r in sel if r["median_error"] is not None])
        result["groups"][g] = {"uncalibrated": u, "one_point": one, "median_of_others": med}
        print(f"{g:32} {cell(u):>35} | {cell(one):>32} | {cell(med)}")
    # The machine's own reproducibility: the same point's measured median in two trees of one
    # sweep (tags are the config's, so the same point has the same tag).
    by_tree = {}
    for r in rows:
        by_tree.setdefault(r["tree"], {})[r["tag"]] = r
    names = list(by_tree)
    noise = []
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            for t in sorted(set(by_tree[first]) & set(by_tree[second])):
                noise.append(by_tree[second][t]["measured_s"] / by_tree[first][t]["measured_s"] - 1)
    if noise:
        result["run_to_run"] = summarize(noise)
        n = result["run_to_run"]
        print(f"\nthe same point in two runs: {n['points']} pairs, mean |difference| "
              f"{n['mean_abs_error']:.1%}, largest {n['worst_error']:+.1%}, "
              f"{n['points'] - n['within_10pct']} over 10%")
    for r in rows:
        r["model"] = list(r["model"])
    result["rows"] = rows
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
