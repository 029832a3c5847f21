#!/usr/bin/env python3
"""Greedy generation with a KV cache in Python PyTorch 2.x eager, as written for speed: the peer
bench/infer_vs_pytorch.py times bench-infer against. GPT-2 as bench-infer builds it (fused qkv,
GELU tanh, tied head, weights normal(0, 0.02)), attention by F.scaled_dot_product_attention, the
cache grown by torch.cat as nanoGPT-style loops and Hugging Face's DynamicCache do, the prefill
computing only the last position's logits, as bench-infer does. Timing as bench-infer's: TTFT to
the first token's ids, the end to the last one's. Runs in scripts/peer-venv's venv.

Prints one JSON line: {"ttft_s": [...], "e2e_s": [...]} of the timed runs.
Usage: pytorch_eager_generate.py --n_layer 12 --n_embd 768 --n_head 12 --vocab_size 50257
           --batch 1 --input 128 --output 128 --warmup 1 --runs 3 --threads 2
"""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.attn_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x, cache):
        b, t, c = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(c, -1)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        if cache[0] is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        cache[0], cache[1] = k, v
        # The prefill is causal; one new token sees the whole cache.
        y = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1).transpose(1, 2).reshape(b, t, c)
        x = x + self.attn_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, n_layer, d, h, vocab, block):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, h) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        for name, p in self.named_parameters():
            if "ln_" in name:
                continue
            if name.endswith("bias"):
                nn.init.zeros_(p)
            else:
                std = 0.02 / math.sqrt(2 * n_layer) if "proj.weight" in name else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, tokens, caches, pos):
        x = self.wte(tokens) + self.wpe(torch.arange(pos, pos + tokens.size(1)))
        for blk, cache in zip(self.blocks, caches):
            x = blk(x, cache)
        return F.linear(self.ln_f(x[:, -1]), self.wte.weight)  # (B, V): the last position's


def generate(model, prompts, output, n_layer):
    caches = [[None, None] for _ in range(n_layer)]
    t0 = time.perf_counter()
    nxt = model(prompts, caches, 0).argmax(-1)
    nxt.tolist()
    ttft = time.perf_counter() - t0
    pos = prompts.size(1)
    out = [nxt]
    for _ in range(output - 1):
        nxt = model(nxt.unsqueeze(1), caches, pos).argmax(-1)
        nxt.tolist()  # the ids on the host, as bench-infer's token metrics
        pos += 1
        out.append(nxt)
    return ttft, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    for name in ("n_layer", "n_embd", "n_head", "vocab_size", "batch", "input", "output", "warmup", "runs",
                 "threads"):
        p.add_argument("--" + name, type=int, required=True)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT(a.n_layer, a.n_embd, a.n_head, a.vocab_size, a.input + a.output).eval()
    prompts = torch.randint(0, a.vocab_size, (a.batch, a.input))
    ttft, e2e = [], []
    with torch.no_grad():
        for run in range(a.warmup + a.runs):
            t, e = generate(model, prompts, a.output, a.n_layer)
            if run >= a.warmup:
                ttft.append(t)
                e2e.append(e)
    print(json.dumps({"ttft_s": ttft, "e2e_s": e2e, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
