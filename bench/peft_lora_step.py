#!/usr/bin/env python3
"""One side of bench/lora_vs_peft.py: Hugging Face GPT-2 trained with AdamW for a few steps on
random tokens, fully or with peft's LoRA, timing each step; prints JSON {step_s: [...], peak_rss_bytes,
trainable}. Runs in the peer venv (scripts/peer-venv: transformers, peft over Debian's torch).

    python bench/peft_lora_step.py --steps 8 --micro-batch 2 --seq 256 --threads 2 [--lora-r 8]
"""
import argparse
import json
import resource
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--micro-batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--lora-r", type=int, default=0, help="0: full fine-tuning")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257,
                                       n_positions=1024, resid_pdrop=0, embd_pdrop=0, attn_pdrop=0))
    if a.lora_r:
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=a.lora_r, lora_alpha=16, lora_dropout=0.0,
                                                 target_modules=["c_attn"], fan_in_fan_out=True))
    model.train()
    params = [q for q in model.parameters() if q.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
    step_s = []
    for _ in range(a.steps):
        ids = torch.randint(50257, (a.micro_batch, a.seq))
        t0 = time.perf_counter()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step_s.append(time.perf_counter() - t0)
    print(json.dumps({"step_s": step_s, "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "trainable": sum(q.numel() for q in params)}))


if __name__ == "__main__":
    main()
