#!/usr/bin/python3
"""Two builds of sweepbench on the same points, alternating: tokens/s and peak memory of
bench-train and bench-infer. For an engine change (another libtorch, another PyTorch release,
another compiler): build the old tree into one directory and the new into another, then

    bench/compare_builds.py --a OLD/bin --b build/release/bin [--rounds 3]

The points: bench-infer on a GPT-2-style model (4 x 256, vocabulary 8192, 64
prompt tokens and 64 new ones, static cache, batch 1 and 8) and bench-train on a small GPT-2 (2 x
128, ffn 512, vocabulary 4096, sequence 128, micro batch 8) and GPT-2 124M (sequence 256, micro
batch 2), fp32, with the machine's cores as threads. A side's figure is the median of its
rounds; peak memory is each run's mem_peak_bytes (the resident set's high-water mark on a CPU).
Writes bench/results/compare_builds.json and prints a Markdown table.
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

POINTS = [
    ("bench-infer, 4 x 256 vocab 8192, 64 + 64, batch 1", "bench-infer", """benchmark: infer
model: {preset: gpt2, n_layer: 4, n_embd: 256, n_head: 4, ffn_dim: 1024, vocab_size: 8192, block_size: 128}
infer: {input_tokens: 64, output_tokens: 64, batch_size: 1, kv_cache: static, warmup_runs: 1, runs: 5}
""", "output_tps"),
    ("bench-infer, same, batch 8", "bench-infer", """benchmark: infer
model: {preset: gpt2, n_layer: 4, n_embd: 256, n_head: 4, ffn_dim: 1024, vocab_size: 8192, block_size: 128}
infer: {input_tokens: 64, output_tokens: 64, batch_size: 8, kv_cache: static, warmup_runs: 1, runs: 5}
""", "output_tps"),
    ("bench-train, 2 x 128 vocab 4096, 128 x 8", "bench-train", """model: {preset: gpt2, n_layer: 2, n_embd: 128, n_head: 4, ffn_dim: 512, vocab_size: 4096, block_size: 128}
data: {source: synthetic, seq_len: 128}
train: {steps: 30, warmup_steps: 4, micro_batch: 8, dtype: fp32}
eval: {steps: 0}
""", "train_tokens_per_second"),
    ("bench-train, GPT-2 124M, 256 x 2", "bench-train", """model: {preset: gpt2, block_size: 256}
data: {source: synthetic, seq_len: 256}
train: {steps: 12, warmup_steps: 4, micro_batch: 2, dtype: fp32}
eval: {steps: 0}
""", "train_tokens_per_second"),
]


def run(bin_dir, program, config, metric, threads, tmp):
    point = os.path.join(tmp, f"point-{time.time_ns()}")
    os.makedirs(point)
    with open(os.path.join(point, "config.yaml"), "w") as f:
        f.write(config + f"launch: {{cpus_per_rank: {threads}}}\n")
    out = os.path.join(point, "out")
    subprocess.run([os.path.join(bin_dir, program), "--config", os.path.join(point, "config.yaml"), "--out", out],
                   check=True, capture_output=True, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    m = s["metrics"]
    return {"value": m[metric], "peak_bytes": m["mem_peak_bytes"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--a", required=True, help="the first build's bin directory (the old one)")
    p.add_argument("--b", required=True, help="the second build's bin directory (the new one)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    threads = os.cpu_count()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, program, config, metric in POINTS:
            got = {"a": [], "b": []}
            for _ in range(args.rounds):  # alternate, so drift on a shared machine hits both alike
                for side, bin_dir in (("a", args.a), ("b", args.b)):
                    got[side].append(run(bin_dir, program, config, metric, threads, tmp))
            row = {"point": name, "metric": metric, "runs": got}
            for side in ("a", "b"):
                row[side] = {"value": statistics.median(r["value"] for r in got[side]),
                             "peak_bytes": max(r["peak_bytes"] for r in got[side])}
            row["speedup"] = row["b"]["value"] / row["a"]["value"]
            row["peak_ratio"] = row["b"]["peak_bytes"] / row["a"]["peak_bytes"]
            rows.append(row)
    print(f"# A = {args.a}, B = {args.b}; {threads} threads, median of {args.rounds} rounds; peak = largest "
          "mem_peak_bytes")
    print("| point | A | B | B / A | A peak MB | B peak MB | B / A |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['point']} ({r['metric']}) | {r['a']['value']:,.0f} | {r['b']['value']:,.0f} | "
              f"{r['speedup']:.2f} | {r['a']['peak_bytes'] / 1e6:,.0f} | {r['b']['peak_bytes'] / 1e6:,.0f} | "
              f"{r['peak_ratio']:.2f} |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    record = {"machine": platform.processor() or platform.machine(), "cpus": threads,
              "date": time.strftime("%Y-%m-%d"), "a": args.a, "b": args.b, "rows": rows}
    with open(os.path.join(HERE, "results", "compare_builds.json"), "w") as f:
        json.dump(record, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
