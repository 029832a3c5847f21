#!/usr/bin/env python3
"""Hugging Face transformers' generate() on a fresh GPT-2 or Llama config (no model hub): PACE's
`hf` framework, the peer users would pick, timed for bench/infer_vs_pytorch.py (CPU) and
bench/gpu/run.sh (GPU). Greedy, use_cache, exactly --output new tokens (min_new_tokens =
max_new_tokens). TTFT is generate() with one new token (optimum-benchmark's prefill latency); e2e
the whole generate(), until the ids are on the host (as bench-infer's clock).

On the CPU it runs in scripts/peer-venv's venv (transformers and torch from PyPI); on a GPU
machine in its own PyTorch (--device cuda --dtype bf16).
Prints one JSON line: {"ttft_s": [...], "e2e_s": [...], "transformers": ..., "torch": ...}.
"""
import argparse
import json
import time

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM


def build(a):
    if a.arch == "gpt2":
        config = GPT2Config(n_layer=a.n_layer, n_embd=a.n_embd, n_head=a.n_head, vocab_size=a.vocab_size,
                            n_positions=a.input + a.output)
        return GPT2LMHeadModel(config)  # initializer_range 0.02, as GPT-2's
    config = LlamaConfig(num_hidden_layers=a.n_layer, hidden_size=a.n_embd, num_attention_heads=a.n_head,
                         num_key_value_heads=a.n_kv_head or a.n_head, intermediate_size=a.ffn_dim,
                         vocab_size=a.vocab_size, max_position_embeddings=a.input + a.output)
    return LlamaForCausalLM(config)


def main():
    p = argparse.ArgumentParser()
    for name in ("n_layer", "n_embd", "n_head", "vocab_size", "batch", "input", "output", "warmup", "runs",
                 "threads"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--arch", choices=("gpt2", "llama"), default="gpt2")
    p.add_argument("--n_kv_head", type=int, default=0)
    p.add_argument("--ffn_dim", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", choices=("fp32", "bf16", "fp16"), default="fp32")
    p.add_argument("--out")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]
    with dev:  # weights made where they run
        model = build(a).to(dtype).eval()
    prompts = torch.randint(0, a.vocab_size, (a.batch, a.input), device=dev)
    mask = torch.ones_like(prompts)

    def run(n):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model.generate(prompts, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                             num_beams=1, use_cache=True, pad_token_id=0)
        out.tolist()  # the ids on the host
        return time.perf_counter() - t0

    ttft, e2e = [], []
    with torch.no_grad():
        for i in range(a.warmup + a.runs):
            t, e = run(1), run(a.output)
            if i >= a.warmup:
                ttft.append(t)
                e2e.append(e)
    result = {"ttft_s": ttft, "e2e_s": e2e, "transformers": transformers.__version__, "torch": torch.__version__}
    if dev.type == "cuda":
        result["device"] = torch.cuda.get_device_name()
        result["peak_bytes"] = torch.cuda.max_memory_allocated()
    print(json.dumps(result))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
