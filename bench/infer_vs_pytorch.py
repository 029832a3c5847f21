#!/usr/bin/python3
"""bench-infer against the peers on this machine's CPU (docs/performance.md, "Inference").

GPT-2 124M (fresh weights), fp32, greedy, 128 prompt tokens and 128 new tokens, batch 1 and 8,
every side with the machine's cores as threads. Measured in the same run, alternating per round:

  * bench-infer with a static and a dynamic KV cache;
  * the same generation loop with a KV cache in Python PyTorch eager (bench/pytorch_eager_generate.py),
    on the same libtorch (Debian's python3-torch is the libtorch bench-infer links);
  * Hugging Face transformers' generate() (bench/hf_generate.py), PACE's `hf` framework, with
    transformers from PyPI in a venv this script makes (bench/.venv-hf) over Debian's torch: the
    same libtorch again. (PyPI's own torch wheel is the CUDA build, gigabytes with its libraries.)

And the cache's effect: bench-infer with kv_cache none at batch 1 (one run: it recomputes the
prefix at every step). Writes bench/results/infer_vs_pytorch.json and prints a Markdown table.

Usage: bench/infer_vs_pytorch.py [--bin build/release/bin] [--rounds 2] [--runs 3]
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
VENV = os.path.join(HERE, ".venv-hf")
TRANSFORMERS = "transformers==4.44.2"  # the last release that runs on Debian's torch 1.13
GPT2 = dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257)
INPUT, OUTPUT = 128, 128


def hf_python():
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", VENV], check=True)
        subprocess.run([python, "-m", "pip", "install", "-q", TRANSFORMERS], check=True)
    return python


def bench_infer(bin_dir, batch, cache, threads, runs, warmup, tmp):
    point = os.path.join(tmp, f"point-{time.time_ns()}")
    os.makedirs(point)
    with open(os.path.join(point, "config.yaml"), "w") as f:
        f.write(f"""benchmark: infer
model: {{preset: gpt2, block_size: {INPUT + OUTPUT}}}
infer: {{input_tokens: {INPUT}, output_tokens: {OUTPUT}, batch_size: {batch}, kv_cache: {cache},
        warmup_runs: {warmup}, runs: {runs}}}
launch: {{cpus_per_rank: {threads}}}
""")
    out = os.path.join(point, "out")
    subprocess.run([os.path.join(bin_dir, "bench-infer"), "--config", os.path.join(point, "config.yaml"),
                    "--out", out], check=True, capture_output=True, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        m = json.load(f)["metrics"]
    return {"ttft_s": m["ttft_p50_s"], "e2e_s": m["e2e_p50_s"], "mbu": m["mbu"],
            "decode_bandwidth_gbs": m["decode_bandwidth_gbs"], "peak_bandwidth_gbs": m["peak_bandwidth_gbs"]}


def peer(python, script, batch, threads, runs, warmup):
    cmd = [python, os.path.join(HERE, script), *[f"--{k}={v}" for k, v in GPT2.items()], f"--batch={batch}",
           f"--input={INPUT}", f"--output={OUTPUT}", f"--warmup={warmup}", f"--runs={runs}",
           f"--threads={threads}"]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    r["ttft_s"] = statistics.median(r["ttft_s"])
    r["e2e_s"] = statistics.median(r["e2e_s"])
    return r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    threads = os.cpu_count()
    python_hf = hf_python()
    sides = {
        "bench-infer (static cache)": lambda b, tmp: bench_infer(args.bin, b, "static", threads, args.runs, 1, tmp),
        "bench-infer (dynamic cache)": lambda b, tmp: bench_infer(args.bin, b, "dynamic", threads, args.runs, 1, tmp),
        "PyTorch eager loop": lambda b, tmp: peer("/usr/bin/python3", "pytorch_eager_generate.py", b, threads,
                                                  args.runs, 1),
        "HF generate()": lambda b, tmp: peer(python_hf, "hf_generate.py", b, threads, args.runs, 1),
    }
    rows = []
    versions = {}
    with tempfile.TemporaryDirectory() as tmp:
        for batch in (1, 8):
            got = {name: [] for name in sides}
            for _ in range(args.rounds):  # alternate, so drift on a shared machine hits all alike
                for name, run in sides.items():
                    got[name].append(run(batch, tmp))
            for name, results in got.items():
                e2e = statistics.median(r["e2e_s"] for r in results)
                ttft = statistics.median(r["ttft_s"] for r in results)
                row = {"side": name, "batch": batch, "e2e_s": e2e, "ttft_s": ttft,
                       "output_tokens_per_s": batch * OUTPUT / e2e,
                       "tpot_s": (e2e - ttft) / (OUTPUT - 1), "rounds": results}
                if "mbu" in results[0]:
                    row["mbu"] = statistics.median(r["mbu"] for r in results)
                    row["peak_bandwidth_gbs"] = statistics.median(r["peak_bandwidth_gbs"] for r in results)
                for k in ("transformers", "torch"):
                    if k in results[0]:
                        versions[k] = results[0][k]
                rows.append(row)
        # The cache's effect: no cache recomputes the prefix at every step.
        none = bench_infer(args.bin, 1, "none", threads, 1, 0, tmp)
        rows.append({"side": "bench-infer (no cache)", "batch": 1, "e2e_s": none["e2e_s"], "ttft_s": none["ttft_s"],
                     "output_tokens_per_s": OUTPUT / none["e2e_s"],
                     "tpot_s": (none["e2e_s"] - none["ttft_s"]) / (OUTPUT - 1), "rounds": [none]})
    print(f"# GPT-2 124M, fp32, greedy, {INPUT} in / {OUTPUT} out, CPU, {threads} threads; "
          f"median of {args.rounds} rounds x {args.runs} timed runs")
    print("| side | batch | TTFT ms | TPOT ms | e2e s | output tokens/s | vs PyTorch eager | MBU |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    eager = {r["batch"]: r["output_tokens_per_s"] for r in rows if r["side"] == "PyTorch eager loop"}
    for r in rows:
        mbu = f"{r['mbu']:.0%}" if "mbu" in r else ""
        print(f"| {r['side']} | {r['batch']} | {r['ttft_s'] * 1e3:.1f} | {r['tpot_s'] * 1e3:.2f} | {r['e2e_s']:.2f} | "
              f"{r['output_tokens_per_s']:,.1f} | {r['output_tokens_per_s'] / eager[r['batch']]:.2f} | {mbu} |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    record = {"machine": platform.processor() or platform.machine(), "cpus": threads,
              "date": time.strftime("%Y-%m-%d"), "versions": versions, "rows": rows}
    with open(os.path.join(HERE, "results", "infer_vs_pytorch.json"), "w") as f:
        json.dump(record, f, indent=2)
    ours = {r["batch"]: r["output_tokens_per_s"] for r in rows if r["side"] == "bench-infer (static cache)"}
    return 0 if all(ours[b] >= eager[b] for b in eager) else 1


if __name__ == "__main__":
    sys.exit(main())
