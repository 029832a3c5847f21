#!/usr/bin/python3
"""Writes the sweep file that checks the step-time prediction (issue 36, docs/performance.md):
three models on a CPU (a 4-layer GPT-2 and Llama of width 256, and GPT-2 124M), each over micro
batch, sequence length, activation checkpointing, LoRA, bf16 and ZeRO stages 0 to 3 on two ranks.
bench/time_accuracy.py then calibrates each model by one of its points and reports the error of
the others. About eight minutes on two cores; run nothing beside it.

    bench/time_grid.py runs/time-grid.yaml     # also runs/time-grid-infer.yaml: generation
    bench-sweep run runs/time-grid.yaml --out runs/time-grid
    bench-sweep run runs/time-grid-infer.yaml --out runs/time-grid-infer
    bench/time_accuracy.py runs/time-grid runs/time-grid-infer
"""
import os
import sys

import yaml

SMALL = {"n_layer": 4, "n_embd": 256, "n_head": 4, "vocab_size": 8192, "block_size": 512}


def points():
    out = []
    for preset, extra in (("gpt2-tiny", {}), ("llama-tiny", {"model.n_kv_head": 2})):
        model = {f"model.{k}": v for k, v in SMALL.items()}
        model.update({"model.preset": preset}, **extra)
        for mb in (1, 4, 16):
            for seq in (64, 256):
                for ckpt in (False, True):
                    out.append({**model, "train.micro_batch": mb, "data.seq_len": seq,
                                "train.activation_checkpointing": ckpt})
        out.append({**model, "train.micro_batch": 4, "data.seq_len": 256, "train.peft": "lora"})
        for zero in (0, 1, 2, 3):
            out.append({**model, "train.micro_batch": 4, "data.seq_len": 256,
                        "train.zero_stage": zero, "launch.ranks": 2})
        if preset == "gpt2-tiny":
            for mb in (1, 4, 16):
                out.append({**model, "train.micro_batch": mb, "data.seq_len": 256,
                            "train.dtype": "bf16"})
    big = {"model.preset": "gpt2", "data.seq_len": 128, "train.steps": 6, "train.warmup_steps": 1}
    for mb in (1, 4):
        for ckpt in (False, True):
            out.append({**big, "train.micro_batch": mb, "train.activation_checkpointing": ckpt})
    out.append({**big, "train.micro_batch": 4, "train.peft": "lora"})
    for zero in (0, 3):
        out.append({**big, "train.micro_batch": 1, "train.zero_stage": zero, "launch.ranks": 2})
    return out


def infer_points():
    out = []
    for preset, extra in (("gpt2-tiny", {}), ("llama-tiny", {"model.n_kv_head": 2})):
        model = {f"model.{k}": v for k, v in SMALL.items()}
        model.update({"model.preset": preset}, **extra)
        for batch in (1, 8):
            for prompt in (32, 256):
                out.append({**model, "infer.batch_size": batch, "infer.input_tokens": prompt})
        out.append({**model, "infer.batch_size": 8, "infer.input_tokens": 32,
                    "infer.kv_cache": "none"})
        out.append({**model, "infer.batch_size": 8, "infer.input_tokens": 32,
                    "infer.dtype": "bf16"})
    return out


def write(path, sweep):
    with open(path + ".tmp", "w") as f:
        yaml.safe_dump(sweep, f, sort_keys=False)
    os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    write(out, {"name": "time-grid",
                "base": {"model": {"preset": "gpt2-tiny"}, "data": {"source": "synthetic"},
                         "train": {"steps": 16, "warmup_steps": 3}, "eval": {"steps": 0},
                         "metrics": {"sample_interval_ms": 0, "system": False}},
                "include": points()})
    root, ext = os.path.splitext(out)
    write(root + "-infer" + ext,
          {"name": "time-grid-infer",
           "base": {"benchmark": "infer", "model": {"preset": "gpt2-tiny", **SMALL},
                    "infer": {"output_tokens": 32, "warmup_runs": 1, "runs": 5,
                              "kv_cache": "static"},
                    "metrics": {"sample_interval_ms": 0, "system": False}},
           "include": infer_points()})


if __name__ == "__main__":
    main()
