#!/usr/bin/python3
"""Each of bench-train's own CPU kernels (train.cpu_kernels) against libtorch's own op, in one run
(docs/performance.md, "CPU kernels against libtorch 2.x").

bench-train runs every shape docs/performance.md reports for training, alternating within each
round: with all its kernels (the default), with each kernel turned off alone
(SWEEPBENCH_CPU_KERNELS_OFF=<name>: libtorch's op instead: log-softmax and NLL for the loss,
gelu(tanh), scaled_dot_product_attention, the fused AdamW, and chunked pow-sum for the norm),
and with train.cpu_kernels=false (libtorch everywhere). A kernel's gain is the step time without
it over the step time with all of them, minus one: what it is worth in the step. The rule of
issue 28: keep a kernel only where it pays at least 5% of step time on some shape we report.
Writes bench/results/cpu_kernels_vs_torch.json and prints a Markdown table.

Usage: bench/cpu_kernels_vs_torch.py [--bin build/release/bin] [--rounds 3] [--quick]
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
KERNELS = ["loss", "gelu", "attention", "adamw", "norm"]
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


def run(bin_dir, shape, threads, tmp, off=None, all_off=False):
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
    env = dict(os.environ)
    env.pop("SWEEPBENCH_CPU_KERNELS_OFF", None)
    if off:
        env["SWEEPBENCH_CPU_KERNELS_OFF"] = off
    subprocess.run([os.path.join(bin_dir, "bench-train"), "--config", os.path.join(point, "config.yaml"),
                    "--out", out], check=True, capture_output=True, text=True, env=env)
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["metrics"]["step_time_median_s"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="the first shape, one round")
    args = p.parse_args()
    threads = os.cpu_count()
    shapes = SHAPES[:1] if args.quick else SHAPES
    rounds = 1 if args.quick else args.rounds
    variants = [("all kernels", {}), *[(f"without {k}", {"off": k}) for k in KERNELS],
                ("libtorch only", {"all_off": True})]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            got = {name: [] for name, _ in variants}
            for _ in range(rounds):  # alternate, so drift on a shared machine hits all alike
                for name, kw in variants:
                    got[name].append(run(args.bin, shape, threads, tmp, **kw))
            med = {name: statistics.median(v) for name, v in got.items()}
            base = med["all kernels"]
            row = {"shape": shape[0], "seq_len": shape[2], "micro_batch": shape[3], "dtype": shape[5],
                   "threads": threads, "step_s": med, "runs": got,
                   "gain": {k: med[f"without {k}"] / base - 1 for k in KERNELS},
                   "gain_all": med["libtorch only"] / base - 1}
            rows.append(row)
    print(f"# bench-train's CPU kernels against libtorch's ops, {threads} threads, median step of "
          f"{rounds} rounds; a kernel's gain = step without it / step with all - 1")
    print("| shape | seq x batch | dtype | step ms, all kernels | " +
          " | ".join(KERNELS) + " | all of them |")
    print("|---|---|---|---:|" + "---:|" * (len(KERNELS) + 1))
    for r in rows:
        print(f"| {r['shape']} | {r['seq_len']} x {r['micro_batch']} | {r['dtype']} | "
              f"{r['step_s']['all kernels'] * 1e3:.1f} | " +
              " | ".join(f"{r['gain'][k]:+.1%}" for k in KERNELS) + f" | {r['gain_all']:+.1%} |")
    verdict = {k: max(r["gain"][k] for r in rows) >= KEEP for k in KERNELS}
    print("keep (pays at least 5% of a step somewhere): " +
          ", ".join(k for k in KERNELS if verdict[k]) + "; drop: " +
          ", ".join(k for k in KERNELS if not verdict[k]))
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    record = {"machine": platform.processor() or platform.machine(), "cpus": threads,
              "date": time.strftime("%Y-%m-%d"), "keep_threshold": KEEP, "verdict": verdict, "rows": rows}
    with open(os.path.join(HERE, "results", "cpu_kernels_vs_torch.json"), "w") as f:
        json.dump(record, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
