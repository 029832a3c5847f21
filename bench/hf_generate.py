#!/usr/bin/env python3
"""Hugging Face transformers' generate() on a fresh GPT-2 config (no model hub): PACE's `hf`
framework, the peer users would pick, timed for bench/infer_vs_pytorch.py. Greedy, use_cache,
exactly --output new tokens (min_new_tokens = max_new_tokens). TTFT is generate() with one new
token (optimum-benchmark's prefill latency); e2e the whole generate().

Runs in scripts/peer-venv's venv (transformers and torch from PyPI).
Prints one JSON line: {"ttft_s": [...], "e2e_s": [...], "transformers": ..., "torch": ...}.
"""
import argparse
import json
import time

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    p = argparse.ArgumentParser()
    for name in ("n_layer", "n_embd", "n_head", "vocab_size", "batch", "input", "output", "warmup", "runs",
                 "threads"):
        p.add_argument("--" + name, type=int, required=True)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    config = GPT2Config(n_layer=a.n_layer, n_embd=a.n_embd, n_head=a.n_head, vocab_size=a.vocab_size,
                        n_positions=a.input + a.output)
    model = GPT2LMHeadModel(config).eval()  # initializer_range 0.02, as GPT-2's
    prompts = torch.randint(0, a.vocab_size, (a.batch, a.input))
    mask = torch.ones_like(prompts)

    def run(n):
        t0 = time.perf_counter()
        model.generate(prompts, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                       num_beams=1, use_cache=True, pad_token_id=0)
        return time.perf_counter() - t0

    ttft, e2e = [], []
    with torch.no_grad():
        for i in range(a.warmup + a.runs):
            t, e = run(1), run(a.output)
            if i >= a.warmup:
                ttft.append(t)
                e2e.append(e)
    print(json.dumps({"ttft_s": ttft, "e2e_s": e2e, "transformers": transformers.__version__,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
