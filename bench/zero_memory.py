#!/usr/bin/python3
"""ZeRO stages 0 to 3 (2 and 3 also with overlapped communication), LoRA and tensor parallelism
on this machine: step time, communication time, peak memory and the model states each rank
holds, against the accounting of docs/metrics.md (mem_model_states_bytes), and the bytes a rank
sends a step (comm_bytes_per_step) against the time model's (time_pred_comm_bytes, from
bench-extract) with the rate they moved at. Runs bench-train under mpirun for each on the same
shape and prints a Markdown table for docs/performance.md (--json FILE: the rows as well).

    bench/zero_memory.py [--ranks 2] [--steps 6] [--bin build/release/bin] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import tempfile

import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def run(bin_dir, ranks, stage, steps, tmp, peft="none", tp=1, overlap=False):
    point = os.path.join(tmp, f"zero{stage}-{peft}-tp{tp}-{overlap}")
    os.makedirs(point)
    config = os.path.join(point, "config.yaml")
    with open(config, "w") as f:
        f.write(f"""model: {{preset: gpt2}}
data: {{source: synthetic, seq_len: 256}}
train: {{steps: {steps}, warmup_steps: 2, micro_batch: 2, zero_stage: {stage}, peft: {peft},
        overlap_comm: {str(overlap).lower()}}}
eval: {{steps: 0}}
launch: {{ranks: {ranks}, cpus_per_rank: 1, tensor_parallel: {tp}}}
metrics: {{sample_interval_ms: 0}}
""")
    out = os.path.join(point, "out")
    subprocess.run(["mpirun", "-n", str(ranks), os.path.join(bin_dir, "bench-train"), "--config", config,
                    "--out", out], check=True, capture_output=True, text=True, env=ENV)
    with open(os.path.join(out, "summary.json")) as f:
        m = json.load(f)["metrics"]
    with h5py.File(os.path.join(out, "rank-00000.h5")) as f:
        held = int(f.attrs["model_state_bytes"])
    extracted = subprocess.run([os.path.join(bin_dir, "bench-extract"), "-i", out, "--format", "json"],
                               check=True, capture_output=True, text=True).stdout
    predicted = json.loads(extracted)[0]["time_pred_comm_bytes"]
    label = f"{stage}" + (" + LoRA (r 8, c_attn)" if peft == "lora" else "")
    label += f" + tensor parallel {tp}" if tp > 1 else ""
    label += " + overlap_comm" if overlap else ""
    return {"stage": label, "step_s": m["step_time_median_s"], "comm_s": m["comm_time_median_s"],
            "peak_gb": m["mem_peak_bytes"] / 1e9, "accounting_gb": m["mem_model_states_bytes"] / 1e9,
            "held_gb": held / 1e9, "sent_mb": m["comm_bytes_per_step"] / 1e6,
            "predicted_mb": predicted / 1e6}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    p.add_argument("--json", help="also write the rows to this file")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run(a.bin, a.ranks, stage, a.steps, tmp) for stage in (0, 1, 2, 3)]
        rows += [run(a.bin, a.ranks, stage, a.steps, tmp, overlap=True) for stage in (2, 3)]
        rows.append(run(a.bin, a.ranks, 0, a.steps, tmp, peft="lora"))
        rows.append(run(a.bin, a.ranks, 0, a.steps, tmp, tp=a.ranks))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("| zero_stage | step (median) | comm (median) | sent a step (predicted) | its rate | "
          "mem_model_states_bytes | held by rank 0 | peak (RSS, any rank) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        rate = f"{r['sent_mb'] / 1e3 / r['comm_s']:.2f} GB/s" if r["comm_s"] > 0 and r["sent_mb"] > 0 else "-"
        print(f"| {r['stage']} | {r['step_s']:.2f} s | {r['comm_s']:.3f} s | {r['sent_mb']:.1f} MB "
              f"({r['predicted_mb']:.1f}) | {rate} | {r['accounting_gb']:.2f} GB | "
              f"{r['held_gb']:.2f} GB | {r['peak_gb']:.2f} GB |")


if __name__ == "__main__":
    main()
