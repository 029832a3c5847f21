#!/usr/bin/env python3
"""Redoes the generation tests/infer/infer_reference_dump.cc ran in C++ with the PyTorch reference
model (gpt_reference.py, no KV cache: the whole sequence at every step) and compares the prompts'
logits, the greedy tokens and the sampled tokens. Sampling is redone from its definition
(docs/infer.md): temperature, top-k, top-p, then inverse-CDF sampling with uniforms from a CPU
generator seeded with infer.seed, which draws the same numbers in Python as in C++.

Usage: check_generation.py DUMP_DIR      exit 0 when everything matches
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_reference import ReferenceLM  # noqa: E402


def choose(logits, o, gen):
    if gen is None:
        return logits.argmax(-1)
    l = logits / o["temperature"]
    if 0 < o["top_k"] < l.size(-1):
        kth = l.topk(o["top_k"], -1).values[:, -1:]
        l = l.masked_fill(l < kth, float("-inf"))
    if o["top_p"] < 1.0:
        sorted_l, order = l.sort(-1, descending=True)
        p = torch.softmax(sorted_l, -1)
        drop_sorted = (p.cumsum(-1) - p) >= o["top_p"]
        drop = torch.zeros_like(drop_sorted).scatter(1, order, drop_sorted)
        l = l.masked_fill(drop, float("-inf"))
    cdf = torch.softmax(l, -1).cumsum(-1)
    u = torch.rand((l.size(0), 1), generator=gen)
    return torch.searchsorted(cdf, u * cdf[:, -1:], right=True).squeeze(1).clamp_max(l.size(-1) - 1)


def main():
    d = sys.argv[1]
    m = json.load(open(os.path.join(d, "manifest.json")))
    o, arrays = m["options"], m["arrays"]

    def array(key):
        a = arrays[key]
        data = np.fromfile(os.path.join(d, a["file"]), dtype=np.dtype(a["dtype"]))
        return torch.from_numpy(data.reshape(a["shape"]))

    torch.set_num_threads(1)
    prompts = array("prompts")
    total = prompts.size(1) + o["output_tokens"]
    model = ReferenceLM(o["arch"], o["n_layer"], o["n_embd"], o["n_head"], o["n_kv_head"], o["ffn_dim"],
                        o["vocab_size"], o["block_size"], total, o["rope_theta"])
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(array("param." + n))
    failures = []
    with torch.no_grad():
        logits = model(prompts)
        ours = array("logits")
        err = (logits - ours).abs().max().item()
        if err > 1e-4:
            failures.append(f"prefill logits differ by up to {err:.3g}")
        for name, sample in (("greedy", False), ("sampled", True)):
            gen = torch.Generator().manual_seed(o["seed"]) if sample else None
            seq = prompts.clone()
            for _ in range(o["output_tokens"]):
                nxt = choose(model(seq)[:, -1, :].float(), o, gen)
                seq = torch.cat([seq, nxt.unsqueeze(1)], 1)
            want = seq[:, prompts.size(1):]
            got = array(name)
            if not torch.equal(want, got):
                failures.append(f"{name} tokens differ:\n  reference {want.tolist()}\n  ours      {got.tolist()}")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"ok: prefill logits within {err:.2g}; greedy and sampled tokens equal")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
