#!/usr/bin/python3
"""train.fused_loss on this machine's CPU: GPT-2 124M (fresh weights, fp32) at micro batch 4 x
seq 1024, one rank with the machine's cores as threads, the head's cross-entropy over chunks of
tokens against logits for every token then the loss, alternating sides in each round; reports
each side's median step time (after 2 warm-up steps) and peak resident set, for
docs/performance.md.

    bench/fused_loss.py [--rounds 2] [--steps 4] [--micro-batch 4] [--seq 1024] [--bin build/release/bin]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(bin_dir, fused, a, tmp, i):
    out = os.path.join(tmp, f"{'fused' if fused else 'whole'}-{i}")
    config = out + ".yaml"
    with open(config, "w") as f:
        f.write(f"""model: {{preset: gpt2}}
data: {{source: synthetic, seq_len: {a.seq}}}
train: {{steps: {a.steps}, warmup_steps: 2, micro_batch: {a.micro_batch}, fused_loss: {str(fused).lower()}}}
eval: {{steps: 0}}
launch: {{cpus_per_rank: {os.cpu_count()}}}
metrics: {{sample_interval_ms: 0}}
""")
    subprocess.run([os.path.join(bin_dir, "bench-train"), "--config", config, "--out", out], check=True,
                   capture_output=True, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        m = json.load(f)["metrics"]
    return m["step_time_median_s"], m["mem_peak_bytes"], m["train_loss"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    a = p.parse_args()
    results = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.rounds):
            for fused in ((False, True) if i % 2 == 0 else (True, False)):
                results[fused].append(run(a.bin, fused, a, tmp, i))
    print("| train.fused_loss | step (median of rounds) | peak (RSS) | train_loss |")
    print("|---|---:|---:|---:|")
    for fused in (False, True):
        r = results[fused]
        print(f"| {str(fused).lower()} | {statistics.median(x[0] for x in r):.2f} s | "
              f"{max(x[1] for x in r) / 1e9:.2f} GB | {r[0][2]:.4f} |")


if __name__ == "__main__":
    main()
