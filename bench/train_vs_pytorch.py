#!/usr/bin/python3
"""bench-train against PyTorch 2.x on this machine's CPU (docs/performance.md, "Training").

Same model, same AdamW step, same shapes, same thread count, the same torch version (bench-train
is built against scripts/torch-venv's torch; the peers run in scripts/peer-venv's, the same
release). Sides, alternating within each round:

  * bench-train as it runs by default;
  * PyTorch eager as written for speed (bench/pytorch_eager_train.py: scaled_dot_product_attention,
    AdamW(fused=True));
  * torch.compile of the same model's forward pass and loss (inductor), its compilation left out
    with the warm-up steps.

Each in fp32 and in bf16 (autocast, fp32 weights), on two shapes: a small GPT-2 (2 layers x 128,
ffn 512, vocabulary 4096, sequence 128, micro batch 8) and GPT-2 124M (sequence 256, micro batch
2). Each run's median step time after the warm-up is kept; the table shows the median over
ROUNDS runs. The Python peers run with glibc's malloc tuned (GLIBC_TUNABLES) as bench-train's
launch.malloc_cache tunes it, so allocator settings are the same on every side. Writes
bench/results/train_vs_pytorch.json; exits 1 when bench-train is below TARGET x torch.compile
on a shape and dtype (1.15).

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
TARGET = 1.15  # bench-train's tokens/s over torch.compile's

# name, arch shape (n_layer, n_embd, n_head, ffn_dim, vocab_size), seq_len, micro_batch, steps
SHAPES = [
    ("small (2 x 128, vocab 4096)", (2, 128, 4, 512, 4096), 128, 8, 30),
    ("gpt2 124M", (12, 768, 12, 3072, 50257), 256, 2, 12),
]
WARMUP = 4  # torch.compile compiles in the first step and may recompile in the second

# What bench-train's launch.malloc_cache does, for Python through glibc's environment tunables.
MALLOC_TUNABLES = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647"


def peer_python():
    venv = subprocess.run([os.path.join(ROOT, "scripts", "peer-venv")], check=True, capture_output=True,
                          text=True).stdout.strip()
    return os.path.join(venv, "bin", "python")


def bench_train(bin_dir, shape, seq, mb, steps, threads, dtype, tmp):
    n_layer, n_embd, n_head, ffn, vocab = shape
    point = os.path.join(tmp, f"point-{time.time_ns()}")
    os.makedirs(point)
    with open(os.path.join(point, "config.yaml"), "w") as f:
        f.write(f"""model: {{preset: gpt2, n_layer: {n_layer}, n_embd: {n_embd}, n_head: {n_head},
        ffn_dim: {ffn}, vocab_size: {vocab}, block_size: {seq}}}
data: {{source: synthetic, seq_len: {seq}}}
train: {{steps: {steps}, warmup_steps: {WARMUP}, micro_batch: {mb}, dtype: {dtype}}}
eval: {{steps: 0}}
launch: {{cpus_per_rank: {threads}}}
""")
    out = os.path.join(point, "out")
    cmd = [os.path.join(bin_dir, "bench-train"), "--config", os.path.join(point, "config.yaml"), "--out", out]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        m = json.load(f)["metrics"]
    return {"step_s": m["step_time_median_s"], "peak_bytes": m.get("mem_peak_bytes")}


def pytorch(python, shape, seq, mb, steps, threads, dtype, compile_):
    n_layer, n_embd, n_head, ffn, vocab = shape
    cmd = [python, os.path.join(HERE, "pytorch_eager_train.py"), f"--n_layer={n_layer}",
           f"--n_embd={n_embd}", f"--n_head={n_head}", f"--ffn_dim={ffn}", f"--vocab_size={vocab}",
           f"--seq_len={seq}", f"--micro_batch={mb}", f"--steps={steps}", f"--threads={threads}",
           f"--dtype={dtype}", f"--warmup={WARMUP}"] + (["--compile"] if compile_ else [])
    env = dict(os.environ, GLIBC_TUNABLES=MALLOC_TUNABLES)
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)
    return {"step_s": r["step_time_median_s"], "torch": r["torch"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="only the small shape in fp32, one round")
    args = p.parse_args()
    threads = os.cpu_count()
    python = peer_python()
    shapes = SHAPES[:1] if args.quick else SHAPES
    dtypes = ("fp32",) if args.quick else ("fp32", "bf16")
    rounds = 1 if args.quick else args.rounds
    sides = {
        "bench-train": lambda s, dt, tmp: bench_train(args.bin, s[1], s[2], s[3], s[4], threads, dt, tmp),
        "PyTorch eager": lambda s, dt, tmp: pytorch(python, s[1], s[2], s[3], s[4], threads, dt, False),
        "torch.compile": lambda s, dt, tmp: pytorch(python, s[1], s[2], s[3], s[4], threads, dt, True),
    }
    rows = []
    torch_version = None
    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            for dtype in dtypes:
                got = {name: [] for name in sides}
                for _ in range(rounds):  # alternate, so drift on a shared machine hits all alike
                    for name, run in sides.items():
                        got[name].append(run(shape, dtype, tmp))
                tokens = shape[2] * shape[3]
                row = {"shape": shape[0], "seq_len": shape[2], "micro_batch": shape[3], "dtype": dtype,
                       "threads": threads, "runs": got}
                for name, results in got.items():
                    step = statistics.median(r["step_s"] for r in results)
                    row[name] = {"step_s": step, "tokens_per_s": tokens / step}
                    torch_version = torch_version or results[0].get("torch")
                row["bench-train"]["peak_bytes"] = got["bench-train"][0]["peak_bytes"]
                ours = row["bench-train"]["tokens_per_s"]
                row["vs_eager"] = ours / row["PyTorch eager"]["tokens_per_s"]
                row["vs_compile"] = ours / row["torch.compile"]["tokens_per_s"]
                rows.append(row)
    print(f"# bench-train vs PyTorch {torch_version}, CPU, {threads} threads, median step after {WARMUP} "
          f"warm-up steps, median of {rounds} rounds")
    print("| shape | seq x batch | dtype | bench-train tokens/s | PyTorch eager | torch.compile "
          "| vs eager | vs compile |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['shape']} | {r['seq_len']} x {r['micro_batch']} | {r['dtype']} | "
              f"{r['bench-train']['tokens_per_s']:,.0f} | {r['PyTorch eager']['tokens_per_s']:,.0f} | "
              f"{r['torch.compile']['tokens_per_s']:,.0f} | {r['vs_eager']:.2f} | {r['vs_compile']:.2f} |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    record = {"machine": platform.processor() or platform.machine(), "cpus": threads, "torch": torch_version,
              "date": time.strftime("%Y-%m-%d"), "target_vs_compile": TARGET, "rows": rows}
    with open(os.path.join(HERE, "results", "train_vs_pytorch.json"), "w") as f:
        json.dump(record, f, indent=2)
    missed = [r for r in rows if r["vs_compile"] < TARGET]
    for r in missed:
        print(f"target missed: {r['shape']} {r['dtype']}: {r['vs_compile']:.2f}x torch.compile, not {TARGET}x")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
