#!/usr/bin/python3
"""bench-infer against the peers on this machine's CPU (docs/performance.md, "Inference").

Two GPT-2 shapes with fresh weights, fp32, greedy, every side with the machine's cores as threads:
a small one (4 layers x 256, vocabulary 8192, 64 prompt tokens and 64 new ones) and GPT-2 124M
(128 in, 128 out); batch 1 and 8. Measured in the same run, alternating per round:

  * bench-infer with a static and a dynamic KV cache;
  * the same generation loop with a KV cache in Python PyTorch 2.x eager, as written for speed
    (bench/pytorch_eager_generate.py: scaled_dot_product_attention);
  * Hugging Face transformers' generate() (bench/hf_generate.py), PACE's `hf` framework.

Both peers run in scripts/peer-venv's venv, on the same torch version bench-infer is built
against (scripts/torch-venv). And the cache's effect: bench-infer with kv_cache none at batch 1
(one run: it recomputes the prefix at every step). Writes bench/results/infer_vs_pytorch.json and
prints a Markdown table. Exits 1 when bench-infer's static cache misses its targets on
the small shape: 1.3x the Python loop and 1.5x generate() at batch 1 and 8.

Usage: bench/infer_vs_pytorch.py [--bin build/release/bin] [--rounds 2] [--runs 3] [--quick]
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
# name, model keys, prompt tokens, new tokens
SHAPES = [
    ("small (4 x 256, vocab 8192)", dict(n_layer=4, n_embd=256, n_head=4, vocab_size=8192), 64, 64),
    ("gpt2 124M", dict(n_layer=12, n_embd=768, n_head=12, vocab_size=50257), 128, 128),
]
TARGETS = {"PyTorch eager loop": 1.3, "HF generate()": 1.5}  # on the small shape


def peer_python():
    venv = subprocess.run([os.path.join(ROOT, "scripts", "peer-venv")], check=True, capture_output=True,
                          text=True).stdout.strip()
    return os.path.join(venv, "bin", "python")


def bench_infer(bin_dir, shape, batch, cache, threads, runs, warmup, tmp):
    _, model, n_in, n_out = shape
    keys = ", ".join(f"{k}: {v}" for k, v in model.items())
    point = os.path.join(tmp, f"point-{time.time_ns()}")
    os.makedirs(point)
    with open(os.path.join(point, "config.yaml"), "w") as f:
        f.write(f"""benchmark: infer
model: {{preset: gpt2, {keys}, ffn_dim: {4 * model['n_embd']}, block_size: {n_in + n_out}}}
infer: {{input_tokens: {n_in}, output_tokens: {n_out}, batch_size: {batch}, kv_cache: {cache},
        warmup_runs: {warmup}, runs: {runs}}}
launch: {{cpus_per_rank: {threads}}}
""")
    out = os.path.join(point, "out")
    subprocess.run([os.path.join(bin_dir, "bench-infer"), "--config", os.path.join(point, "config.yaml"),
                    "--out", out], check=True, capture_output=True, text=True)
    with open(os.path.join(out, "summary.json")) as f:
        m = json.load(f)["metrics"]
    return {"ttft_s": m["ttft_p50_s"], "e2e_s": m["e2e_p50_s"], "mbu": m["mbu"],
            "decode_bandwidth_gbs": m["decode_bandwidth_gbs"], "peak_bandwidth_gbs": m["peak_bandwidth_gbs"],
            "peak_memory_bytes": m.get("mem_peak_bytes")}


def peer(python, script, shape, batch, threads, runs, warmup):
    _, model, n_in, n_out = shape
    cmd = [python, os.path.join(HERE, script), *[f"--{k}={v}" for k, v in model.items()], f"--batch={batch}",
           f"--input={n_in}", f"--output={n_out}", f"--warmup={warmup}", f"--runs={runs}",
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
    p.add_argument("--quick", action="store_true", help="only the small shape, one round")
    args = p.parse_args()
    threads = os.cpu_count()
    python = peer_python()
    rounds = 1 if args.quick else args.rounds
    sides = {
        "bench-infer (static cache)":
            lambda s, b, tmp: bench_infer(args.bin, s, b, "static", threads, args.runs, 1, tmp),
        "bench-infer (dynamic cache)":
            lambda s, b, tmp: bench_infer(args.bin, s, b, "dynamic", threads, args.runs, 1, tmp),
        "PyTorch eager loop":
            lambda s, b, tmp: peer(python, "pytorch_eager_generate.py", s, b, threads, args.runs, 1),
        "HF generate()": lambda s, b, tmp: peer(python, "hf_generate.py", s, b, threads, args.runs, 1),
    }
    rows = []
    versions = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SHAPES[:1] if args.quick else SHAPES:
            name_shape, _, n_in, n_out = shape
            for batch in (1, 8):
                got = {name: [] for name in sides}
                for _ in range(rounds):  # alternate, so drift on a shared machine hits all alike
                    for name, run in sides.items():
                        got[name].append(run(shape, batch, tmp))
                for name, results in got.items():
                    e2e = statistics.median(r["e2e_s"] for r in results)
                    ttft = statistics.median(r["ttft_s"] for r in results)
                    row = {"shape": name_shape, "input": n_in, "output": n_out, "side": name, "batch": batch,
                           "e2e_s": e2e, "ttft_s": ttft, "output_tokens_per_s": batch * n_out / e2e,
                           "tpot_s": (e2e - ttft) / (n_out - 1), "rounds": results}
                    if "mbu" in results[0]:
                        row["mbu"] = statistics.median(r["mbu"] for r in results)
                        row["peak_bandwidth_gbs"] = statistics.median(r["peak_bandwidth_gbs"] for r in results)
                    for k in ("transformers", "torch"):
                        if k in results[0]:
                            versions[k] = results[0][k]
                    rows.append(row)
            # The cache's effect: no cache recomputes the prefix at every step.
            none = bench_infer(args.bin, shape, 1, "none", threads, 1, 0, tmp)
            rows.append({"shape": name_shape, "input": n_in, "output": n_out, "side": "bench-infer (no cache)",
                         "batch": 1, "e2e_s": none["e2e_s"], "ttft_s": none["ttft_s"],
                         "output_tokens_per_s": n_out / none["e2e_s"],
                         "tpot_s": (none["e2e_s"] - none["ttft_s"]) / (n_out - 1), "rounds": [none]})
    print(f"# fp32, greedy, CPU, {threads} threads; median of {rounds} rounds x {args.runs} timed runs; "
          f"torch {versions.get('torch')}, transformers {versions.get('transformers')}")
    print("| shape | in / out | side | batch | TTFT ms | TPOT ms | e2e s | output tokens/s | vs loop "
          "| vs generate() | MBU |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")

    def tps(shape, side, batch):
        return next(r["output_tokens_per_s"] for r in rows
                    if r["shape"] == shape and r["side"] == side and r["batch"] == batch)

    for r in rows:
        mbu = f"{r['mbu']:.0%}" if "mbu" in r else ""
        loop = r["output_tokens_per_s"] / tps(r["shape"], "PyTorch eager loop", r["batch"])
        hf = r["output_tokens_per_s"] / tps(r["shape"], "HF generate()", r["batch"])
        print(f"| {r['shape']} | {r['input']} / {r['output']} | {r['side']} | {r['batch']} | "
              f"{r['ttft_s'] * 1e3:.1f} | {r['tpot_s'] * 1e3:.2f} | {r['e2e_s']:.2f} | "
              f"{r['output_tokens_per_s']:,.1f} | {loop:.2f} | {hf:.2f} | {mbu} |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    record = {"machine": platform.processor() or platform.machine(), "cpus": threads,
              "date": time.strftime("%Y-%m-%d"), "versions": versions, "targets": TARGETS, "rows": rows}
    with open(os.path.join(HERE, "results", "infer_vs_pytorch.json"), "w") as f:
        json.dump(record, f, indent=2)
    small = SHAPES[0][0]
    missed = [(peer_name, b) for peer_name, goal in TARGETS.items() for b in (1, 8)
              if tps(small, "bench-infer (static cache)", b) < goal * tps(small, peer_name, b)]
    for peer_name, b in missed:
        print(f"target missed: bench-infer (static cache) below {TARGETS[peer_name]}x {peer_name} at batch {b}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
