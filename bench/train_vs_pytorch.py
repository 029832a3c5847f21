#!/usr/bin/python3
"""bench-train against Python PyTorch eager on this machine's CPU (docs/performance.md).

Same model, same AdamW step, same shapes, same thread count, same libtorch (Debian's
python3-torch is the libtorch bench-train links). For each shape both sides run ROUNDS times,
alternating, and each run's median step time after warm-up is kept; the table shows the median
of those. PyTorch eager runs twice per round: as users run it, and with glibc's malloc tuned
(GLIBC_TUNABLES) the way bench-train's launch.malloc_cache tunes it, so the table shows how much
of the difference is that setting. bench-train runs twice too: as it runs by default, and with
train.cpu_kernels=false (libtorch's ops for the loss, GELU and AdamW), so the table shows what
its own kernels add. Writes bench/results/train_vs_pytorch.json.

Usage: bench/train_vs_pytorch.py [--bin build/release/bin] [--rounds 3] [--quick]
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

# name, arch shape (n_layer, n_embd, n_head, ffn_dim, vocab_size), seq_len, micro_batch, steps
SHAPES = [
    ("small (4 x 256, vocab 8192)", (4, 256, 4, 1024, 8192), 128, 8, 23),
    ("gpt2 124M", (12, 768, 12, 3072, 50257), 256, 2, 11),
]
WARMUP = 3


def bench_train(bin_dir, shape, seq, mb, steps, threads, tmp, extra=()):
    n_layer, n_embd, n_head, ffn, vocab = shape
    point = os.path.join(tmp, f"point-{time.time_ns()}")
    os.makedirs(point)
    with open(os.path.join(point, "config.yaml"), "w") as f:
        f.write(f"""model: {{preset: gpt2, n_layer: {n_layer}, n_embd: {n_embd}, n_head: {n_head},
        ffn_dim: {ffn}, vocab_size: {vocab}, block_size: {seq}}}
data: {{source: synthetic, seq_len: {seq}}}
train: {{steps: {steps}, warmup_steps: {WARMUP}, micro_batch: {mb}, dtype: fp32}}
eval: {{steps: 0}}
launch: {{cpus_per_rank: {threads}}}
""")
    out = os.path.join(point, "out")
    cmd = [os.path.join(bin_dir, "bench-train"), "--config", os.path.join(point, "config.yaml"), "--out", out, *extra]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["metrics"]["step_time_median_s"]


# What bench-train's launch.malloc_cache does, for Python through glibc's environment tunables.
MALLOC_TUNABLES = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647"


def pytorch_eager(shape, seq, mb, steps, threads, tuned=False):
    n_layer, n_embd, n_head, ffn, vocab = shape
    cmd = ["/usr/bin/python3", os.path.join(HERE, "pytorch_eager_train.py"), f"--n_layer={n_layer}",
           f"--n_embd={n_embd}", f"--n_head={n_head}", f"--ffn_dim={ffn}", f"--vocab_size={vocab}",
           f"--seq_len={seq}", f"--micro_batch={mb}", f"--steps={steps}", f"--threads={threads}"]
    env = dict(os.environ)
    if tuned:
        env["GLIBC_TUNABLES"] = MALLOC_TUNABLES
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)
    return statistics.median(r["step_s"][WARMUP:])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="only the small shape, one round")
    args = p.parse_args()
    threads = os.cpu_count()
    shapes = SHAPES[:1] if args.quick else SHAPES
    rounds = 1 if args.quick else args.rounds
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, shape, seq, mb, steps in shapes:
            ours, ops, theirs, tuned = [], [], [], []
            for _ in range(rounds):  # alternate, so drift on a shared machine hits all alike
                ours.append(bench_train(args.bin, shape, seq, mb, steps, threads, tmp))
                ops.append(bench_train(args.bin, shape, seq, mb, steps, threads, tmp,
                                       extra=("--set", "train.cpu_kernels=false")))
                theirs.append(pytorch_eager(shape, seq, mb, steps, threads))
                tuned.append(pytorch_eager(shape, seq, mb, steps, threads, tuned=True))
            tokens = seq * mb
            row = {"shape": name, "seq_len": seq, "micro_batch": mb, "threads": threads,
                   "bench_train_step_s": statistics.median(ours),
                   "bench_train_ops_step_s": statistics.median(ops), "pytorch_step_s": statistics.median(theirs),
                   "pytorch_tuned_step_s": statistics.median(tuned), "runs_bench_train": ours,
                   "runs_bench_train_ops": ops, "runs_pytorch": theirs, "runs_pytorch_tuned": tuned}
            row["bench_train_tokens_per_s"] = tokens / row["bench_train_step_s"]
            row["bench_train_ops_tokens_per_s"] = tokens / row["bench_train_ops_step_s"]
            row["pytorch_tokens_per_s"] = tokens / row["pytorch_step_s"]
            row["pytorch_tuned_tokens_per_s"] = tokens / row["pytorch_tuned_step_s"]
            row["ratio"] = row["bench_train_tokens_per_s"] / row["pytorch_tokens_per_s"]
            row["ratio_tuned"] = row["bench_train_tokens_per_s"] / row["pytorch_tuned_tokens_per_s"]
            rows.append(row)
    print(f"# bench-train vs PyTorch eager, CPU, fp32, {threads} threads, median step after {WARMUP} warm-up steps")
    print("| shape | seq x batch | bench-train tokens/s | bench-train, libtorch's ops | PyTorch eager tokens/s "
          "| ratio | PyTorch eager, same malloc settings | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['shape']} | {r['seq_len']} x {r['micro_batch']} | {r['bench_train_tokens_per_s']:,.0f} | "
              f"{r['bench_train_ops_tokens_per_s']:,.0f} | "
              f"{r['pytorch_tokens_per_s']:,.0f} | {r['ratio']:.2f} | {r['pytorch_tuned_tokens_per_s']:,.0f} | "
              f"{r['ratio_tuned']:.2f} |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    record = {"machine": platform.processor() or platform.machine(), "cpus": threads,
              "date": time.strftime("%Y-%m-%d"), "rows": rows}
    with open(os.path.join(HERE, "results", "train_vs_pytorch.json"), "w") as f:
        json.dump(record, f, indent=2)
    return 0 if all(r["ratio"] >= 1.0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
