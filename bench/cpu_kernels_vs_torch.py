#!/usr/bin/python3
"""bench-train's own CPU kernel (train.cpu_kernels: the head's cross-entropy) against libtorch's
own ops, in one run (docs/performance.md, "CPU kernels against libtorch 2.x").

bench-train runs every shape docs/performance.md reports for training, alternating within each
round: with its kernel (the default) and with train.cpu_kernels=false (libtorch's log-softmax
and NLL loss and their backwards). The kernel's gain is the step time without it over the step
time with it, minus one: what it is worth in the step. The rule: keep a kernel only
where it pays at least 5% of step time on some shape we report. (The first version of this
script, in commit 0ae4bf6, also turned off each of the other kernels, GELU, attention's
softmax, AdamW and the gradient norm, one at a time; none paid, and they were deleted.)
Writes bench/results/cpu_kernels_vs_torch.json and prints a Markdown table.

Usage: bench/cpu_kernels_vs_torch.py [--bin build/release/bin] [--rounds 5] [--quick]
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
KEEP = 0.05  # the share of step time a kernel must save somewhere

# name, model keys, seq_len, micro_batch, steps, dtype: the training shapes of docs/performance.md
SHAPES = [
    ("small (2 x 128, vocab 4096)", "n_layer: 2, n_embd: 128, n_head: 4, ffn_dim: 512, vocab_size: 4096",
     128, 8, 30, "fp32"),
    ("small (4 x 256, vocab 8192)", "n_layer: 4, n_embd: 256, n_head: 4, ffn_dim: 1024, vocab_size: 8192",
     128, 8, 20, "fp32"),
    ("gpt2 124M", "n_layer: 12, n_embd: 768, n_head: 12, ffn_dim: 3072, vocab_size: 50257", 256, 2, 12, "fp32"),
    ("gpt2 124M, seq 1024", "n_layer: 12, n_embd: 768, n_head: 12, ffn_dim: 3072, vocab_size: 50257", 1024, 1, 8,
     "fp32"),
    ("small (2 x 128, vocab 4096)", "n_layer: 2, n_embd: 128, n_head: 4, ffn_dim: 512, vocab_size: 4096",
     128, 8, 30, "bf16"),
    ("gpt2 124M", "n_layer: 12, n_embd: 768, n_head: 12, ffn_dim: 3072, vocab_size: 50257", 256, 2, 12, "bf16"),
]
WARMUP = 3


def run(bin_dir, shape, threads, tmp, all_off=False):
    _, model, seq, mb, steps, dtype = shape
    point = os.path.join(tmp, f"point-{time.time_ns()}")
    os.makedirs(point)
    with open(os.path.join(point, "config.yaml"), "w") as f:
        f.write(f"""model: {{preset: gpt2, {model}, block_size: {seq}}}
data: {{source: synthetic, seq_len: {seq}}}
train: {{steps: {steps}, warmup_steps: {WARMUP}, micro_batch: {mb}, dtype: {dtype}, cpu_kernels: {str(not all_off).lower()}}}
eval: {{steps: 0}}
launch: {{cpus_per_rank: {threads}}}
""")
    out = os.path.join(point, "out")
    subprocess.run([os.path.join(bin_dir, "bench-train"), "--config", os.path.join(point, "config.yaml"),
                    "--out", out], check=True, capture_output=True, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["metrics"]["step_time_median_s"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="the first shape, one round")
    args = p.parse_args()
    threads = os.cpu_count()
    shapes = SHAPES[:1] if args.quick else SHAPES
    rounds = 1 if args.quick else args.rounds
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            got = {"kernel": [], "libtorch": []}
            for _ in range(rounds):  # alternate, so drift on a shared machine hits both alike
                got["kernel"].append(run(args.bin, shape, threads, tmp))
                got["libtorch"].append(run(args.bin, shape, threads, tmp, all_off=True))
            med = {name: statistics.median(v) for name, v in got.items()}
            # Per round, as the two sides ran back to back: the drift between rounds cancels.
            per_round = [b / a - 1 for a, b in zip(got["kernel"], got["libtorch"])]
            rows.append({"shape": shape[0], "seq_len": shape[2], "micro_batch": shape[3], "dtype": shape[5],
                         "threads": threads, "step_s": med, "runs": got, "gain_per_round": per_round,
                         "gain": statistics.median(per_round)})
    print(f"# bench-train's cross-entropy kernel against libtorch's ops, {threads} threads, {rounds} rounds; "
          "gain = step with libtorch's ops / step with the kernel - 1, median over rounds")
    print("| shape | seq x batch | dtype | step ms, kernel | step ms, libtorch | gain | gain, each round |")
    print("|---|---|---|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['shape']} | {r['seq_len']} x {r['micro_batch']} | {r['dtype']} | "
              f"{r['step_s']['kernel'] * 1e3:.1f} | {r['step_s']['libtorch'] * 1e3:.1f} | {r['gain']:+.1%} | "
              + ", ".join(f"{g:+.1%}" for g in r["gain_per_round"]) + " |")
    keep = max(r["gain"] for r in rows) >= KEEP
    print(f"the kernel pays at least {KEEP:.0%} of a step somewhere: {'yes' if keep else 'no'}")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    record = {"machine": platform.processor() or platform.machine(), "cpus": threads,
              "date": time.strftime("%Y-%m-%d"), "keep_threshold": KEEP, "keep": keep, "rows": rows}
    with open(os.path.join(HERE, "results", "cpu_kernels_vs_torch.json"), "w") as f:
        json.dump(record, f, indent=2)
    return 0 if keep else 1


if __name__ == "__main__":
    sys.exit(main())
