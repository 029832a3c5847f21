#!/usr/bin/python3
"""Writes a sweep file of random small training points for checking the memory prediction
(bench/memory_accuracy.py, docs/performance.md): for each of GPT-2 and Llama, fp32 and bf16, with
and without checkpointing and the chunked loss, PER points with random depth, width, KV heads,
MLP width, vocabulary, micro batch and sequence, a quarter of them with LoRA. Three steps each
(about two seconds a point on two cores). The same seed gives the same file.

    bench/memory_random_sweep.py 2 4 runs/val.yaml      # seed 2, 4 per family: 64 points + base
    bench-sweep run runs/val.yaml --out runs/val
    bench/memory_accuracy.py runs/val
"""
import os
import random
import sys

import yaml


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    seed, per, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    points = []
    for arch in ("gpt2", "llama"):
        for dtype in ("fp32", "bf16"):
            for checkpointing in (False, True):
                for fused in (False, True):
                    for _ in range(per):
                        p = {"model.preset": "gpt2-tiny" if arch == "gpt2" else "llama-tiny",
                             "model.n_layer": rng.choice([1, 2, 3, 4]),
                             "model.n_embd": rng.choice([64, 128, 192, 256]), "model.n_head": 4,
                             "model.n_kv_head": rng.choice([4, 2, 1]),
                             "model.ffn_dim": rng.choice(range(128, 1025, 64)),
                             "model.vocab_size": rng.choice([1024, 2048, 4096, 8192]),
                             "model.block_size": 256,
                             "train.micro_batch": rng.choice([1, 2, 4, 8]),
                             "data.seq_len": rng.choice([32, 64, 128, 256]),
                             "train.dtype": dtype, "train.activation_checkpointing": checkpointing,
                             "train.fused_loss": fused}
                        if rng.random() < 0.25:
                            p["train.peft"] = "lora"
                        points.append(p)
    sweep = {"name": f"memory-random-{seed}",
             "base": {"model": {"preset": "gpt2-tiny"}, "data": {"source": "synthetic"},
                      "train": {"steps": 3, "warmup_steps": 1}, "eval": {"steps": 0},
                      "metrics": {"sample_interval_ms": 0, "system": False}},
             "include": points}
    with open(out + ".tmp", "w") as f:
        yaml.safe_dump(sweep, f, sort_keys=False)
    os.replace(out + ".tmp", out)
    print(f"{out}: {len(points)} points and the base point")


if __name__ == "__main__":
    main()
