#!/usr/bin/python3
"""How close bench-sweep plan --estimate's time prediction comes to what ran (issue 36).

For each results tree of `bench-sweep run` (its sweep file is in its manifest), every ok point's
predicted time (a training step, or a generation) against its measured median (step_time_median_s
or e2e_p50_s from bench-extract; the mean's figures are kept too), twice: as predicted from the reference constants alone, and
calibrated the way a user calibrates (`bench-sweep plan SWEEP --estimate --calibrate TREE`: each
model scaled by the point of it with the longest predicted step). The calibrating points themselves are
left out of the calibrated figures. Groups: the model (preset, dtype) and, within training, ZeRO
stages over two ranks apart.

    bench/time_accuracy.py runs/time-grid runs/time-grid-infer [--bin build/release/bin] [--out F]
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


def tree_rows(bin_dir, tree):
    sweep = json.load(open(os.path.join(tree, "manifest.json")))["sweep_file"]
    plan = [os.path.join(bin_dir, "bench-sweep"), "plan", sweep, "--estimate", "--format", "csv"]
    plain = table(run(plan))
    calibrated = table(run(plan + ["--calibrate", tree]))
    measured = table(run([os.path.join(bin_dir, "bench-extract"), "-i", tree, "--format", "csv"]))
    rows = []
    for tag, m in measured.items():
        if m.get("status") != "ok" or tag not in plain or not plain[tag].get("time_pred_step_s"):
            continue
        train = m.get("benchmark", "train") == "train"
        value = m.get("step_time_median_s") if train else m.get("e2e_p50_s")
        mean = m.get("step_time_mean_s") if train else m.get("e2e_mean_s")
        if not value or not mean:
            continue
        p, c = plain[tag], calibrated[tag]
        group = f"{p.get('model.preset', '')} {p.get('train.dtype') or p.get('infer.dtype') or 'fp32'}"
        if train and p.get("launch.ranks", "1") != "1":
            group += " 2 ranks (ZeRO)"
        if not train:
            group += " generation"
        meas = float(value)
        rows.append({"tag": tag, "group": group, "measured_s": meas, "measured_mean_s": float(mean),
                     "predicted_s": float(p["time_pred_step_s"]),
                     "calibrated_s": float(c["time_pred_step_s"]),
                     "calibration": float(c["time_calibration"]),
                     "cv": float(m.get("step_time_cv") or m.get("e2e_cv") or "nan")})
    return rows


def summarize(rows, key, measured="measured_s"):
    errors = [r[key] / r[measured] - 1 for r in rows]
    if not errors:
        return None
    worst = max(errors, key=abs)
    return {"points": len(errors), "mean_abs_error": statistics.mean(abs(e) for e in errors),
            "worst_error": worst, "within_10pct": sum(abs(e) <= 0.10 for e in errors)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("trees", nargs="+")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--out")
    a = ap.parse_args()
    rows = [r for t in a.trees for r in tree_rows(a.bin, t)]
    groups = sorted({r["group"] for r in rows})
    result = {"date": time.strftime("%Y-%m-%d"), "machine": platform.processor() or platform.machine(),
              "trees": a.trees, "groups": {}}
    print(f"{'group':40} {'n':>3} {'uncal. MAE':>10} {'worst':>7} | {'calibrated MAE':>14} {'worst':>7} {'<=10%':>6}")
    for g in groups + ["all training", "all generation"]:
        if g == "all training":
            sel = [r for r in rows if "generation" not in r["group"]]
        elif g == "all generation":
            sel = [r for r in rows if "generation" in r["group"]]
        else:
            sel = [r for r in rows if r["group"] == g]
        # The calibrating points measure themselves: exactly 0 calibrated error, left out.
        others = [r for r in sel if abs(r["calibrated_s"] / r["measured_s"] - 1) > 1e-9]
        u, c = summarize(sel, "predicted_s"), summarize(others, "calibrated_s")
        if u is None:
            continue
        result["groups"][g] = {"uncalibrated": u, "calibrated": c,
                               "calibrated_against_mean": summarize(others, "calibrated_s",
                                                                    "measured_mean_s")}
        cal = (f"{c['mean_abs_error']:14.1%} {c['worst_error']:+7.1%} {c['within_10pct']:>3}/{c['points']:<2}"
               if c else f"{'':14} {'':7} {'':6}")
        print(f"{g:40} {u['points']:3} {u['mean_abs_error']:10.1%} {u['worst_error']:+7.1%} | {cal}")
    result["rows"] = rows
    if a.out:
        with open(a.out + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
