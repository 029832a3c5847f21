#!/usr/bin/python3
"""LoRA in bench-train against Hugging Face peft's LoRA, and full fine-tuning on both sides, on
GPT-2 124M (fresh weights, fp32, micro batch 2, seq 256, LoRA r 8 on c_attn, AdamW), one process
with the machine's cores as threads, measured in the same run: the median step time after 2
warm-up steps and the peak resident set. Prints a Markdown table for docs/performance.md.

    bench/lora_vs_peft.py [--steps 8] [--bin build/release/bin]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def bench_train(bin_dir, steps, lora, threads, tmp):
    out = os.path.join(tmp, "lora" if lora else "full")
    config = out + ".yaml"
    with open(config, "w") as f:
        f.write(f"""model: {{preset: gpt2}}
data: {{source: synthetic, seq_len: 256}}
train: {{steps: {steps}, warmup_steps: 2, micro_batch: 2, lr: 1.0e-4, peft: {"lora" if lora else "none"}}}
lora: {{r: 8, alpha: 16, targets: [c_attn]}}
eval: {{steps: 0}}
launch: {{cpus_per_rank: {threads}}}
metrics: {{sample_interval_ms: 0}}
""")
    subprocess.run([os.path.join(bin_dir, "bench-train"), "--config", config, "--out", out], check=True,
                   capture_output=True, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        m = json.load(f)["metrics"]
    with h5py.File(os.path.join(out, "rank-00000.h5")) as f:
        trainable = int(f.attrs["trainable_parameters"])
    return {"step_s": m["step_time_median_s"], "peak_gb": m["mem_peak_bytes"] / 1e9, "trainable": trainable}


def peft(venv, steps, lora, threads):
    r = subprocess.run([os.path.join(venv, "bin", "python"), os.path.join(HERE, "peft_lora_step.py"),
                        "--steps", str(steps), "--threads", str(threads), "--lora-r", "8" if lora else "0"],
                       check=True, capture_output=True, text=True)
    d = json.loads(r.stdout)
    return {"step_s": statistics.median(d["step_s"][2:]), "peak_gb": d["peak_rss_bytes"] / 1e9,
            "trainable": d["trainable"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    a = p.parse_args()
    threads = os.cpu_count()
    venv = subprocess.run([os.path.join(ROOT, "scripts", "peer-venv")], check=True, capture_output=True,
                          text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for lora in (False, True):
            rows.append(("bench-train", lora, bench_train(a.bin, a.steps, lora, threads, tmp)))
            rows.append(("transformers + peft" if lora else "transformers", lora, peft(venv, a.steps, lora, threads)))
    print("| side | training | trainable parameters | step (median) | peak (RSS) |")
    print("|---|---|---:|---:|---:|")
    for side, lora, r in rows:
        print(f"| {side} | {'LoRA r 8, c_attn' if lora else 'full'} | {r['trainable']:,} | {r['step_s']:.2f} s | "
              f"{r['peak_gb']:.2f} GB |")


if __name__ == "__main__":
    main()
