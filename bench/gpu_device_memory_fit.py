#!/usr/bin/python3
"""The device-memory line of the memory model (src/predict/memory_model.h, device_bytes_of), fitted
and checked on a lent GPU's runs (docs/performance.md, "The device's memory predicted").

Reads bench/results/gpu_h200_2026-11-30.json: for each training run bench/gpu/run.sh sampled
nvidia-smi's used memory beside (device_used_max_mib) with its allocated peak (mem_peak_bytes of
that date, the allocator's allocated peak). Each run's configuration is planned with
`bench-sweep plan --estimate` (bench/gpu/point.yaml with the run's --set values, on cuda), and

    device = BASE + K x predicted allocated peak

is fitted by least squares with BASE fixed at the CUDA context's 0.75 GB, on the micro batch 8
runs (whole logits and the chunk sizes), then checked on the runs not used to fit. Runs that
repeat a configuration count once. Prints the table; writes bench/results/gpu_device_memory_fit.json.

Usage: bench/gpu_device_memory_fit.py [--bin build/release/bin]
"""
import argparse
import csv
import io
import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BASE = 0.75e9
# Run name in the results -> its --set values over bench/gpu/point.yaml (as bench/gpu/run.sh ran it).
RUNS = {
    "gpt2-bf16-mb8-logits": {"train.micro_batch": 8},
    "gpt2-bf16-mb8-fused": {"train.micro_batch": 8, "train.fused_loss": "true"},
    "gpt2-bf16-mb8-chunk1024-r1": {"train.fused_loss": "true", "train.loss_chunk_rows": 1024},
    "gpt2-bf16-mb8-chunk4096-r1": {"train.fused_loss": "true", "train.loss_chunk_rows": 4096},
    "gpt2-bf16-mb8-chunk8192-r1": {"train.fused_loss": "true", "train.loss_chunk_rows": 8192},
    "gpt2-bf16-mb16-logits": {"train.micro_batch": 16},
    "gpt2-bf16-mb32-logits": {"train.micro_batch": 32},
    "gpt2-bf16-mb16-fused": {"train.micro_batch": 16, "train.fused_loss": "true"},
    "gpt2-bf16-mb32-fused": {"train.micro_batch": 32, "train.fused_loss": "true"},
    "gpt2-bf16-mb64-fused": {"train.micro_batch": 64, "train.fused_loss": "true"},
    "gpt2-bf16-ckpt": {"train.activation_checkpointing": "true"},
    "gpt2-fp32": {"train.dtype": "fp32"},
}
FIT = {"gpt2-bf16-mb8-logits", "gpt2-bf16-mb8-fused", "gpt2-bf16-mb8-chunk1024-r1",
       "gpt2-bf16-mb8-chunk4096-r1", "gpt2-bf16-mb8-chunk8192-r1"}


def predicted_peak(bench_sweep, sweep, sets):
    cmd = [bench_sweep, "plan", sweep, "--estimate", "--format", "csv", "--set", "launch.device=cuda"]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    return float(rows[0]["mem_pred_peak_bytes"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    a = ap.parse_args()
    with open(os.path.join(HERE, "results", "gpu_h200_2026-11-30.json")) as f:
        measured = json.load(f)["train"]
    with tempfile.TemporaryDirectory() as tmp:
        sweep = os.path.join(tmp, "point-sweep.yaml")
        with open(os.path.join(HERE, "gpu", "point.yaml")) as f:
            body = "".join("  " + line for line in f if not line.startswith("#"))
        with open(sweep, "w") as f:
            f.write("name: device-memory\nbase:\n" + body)
        rows = []
        for name, sets in RUNS.items():
            run = measured[name]
            rows.append({"run": name, "fit": name in FIT,
                         "allocated_peak": run["mem_peak_bytes"],
                         "device_used": run["device_used_max_mib"] * 2**20,
                         "predicted_peak": predicted_peak(os.path.join(a.bin, "bench-sweep"),
                                                          sweep, sets)})
    fit = [r for r in rows if r["fit"]]
    k = (sum(r["allocated_peak"] * (r["device_used"] - BASE) for r in fit)
         / sum(r["allocated_peak"] ** 2 for r in fit))
    print(f"device = {BASE / 1e9:.2f} GB + {k:.3f} x peak (fitted on {len(fit)} runs)")
    print(f"{'run':30s} {'':5s} {'alloc GB':>9s} {'used GB':>8s} {'pred GB':>8s} {'error':>7s}")
    for r in rows:
        r["predicted_device"] = BASE + k * r["predicted_peak"]
        r["error"] = r["predicted_device"] / r["device_used"] - 1
        print(f"{r['run']:30s} {'fit' if r['fit'] else 'check':5s} {r['allocated_peak'] / 1e9:9.2f} "
              f"{r['device_used'] / 1e9:8.2f} {r['predicted_device'] / 1e9:8.2f} "
              f"{100 * r['error']:+6.1f}%")
    check = [r["error"] for r in rows if not r["fit"]]
    print(f"checked on {len(check)} runs: {100 * min(check):+.1f}% to {100 * max(check):+.1f}%")
    path = os.path.join(HERE, "results", "gpu_device_memory_fit.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"base_bytes": BASE, "per_allocated_byte": k, "runs": rows}, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"wrote {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()
