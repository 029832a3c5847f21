#!/usr/bin/env python3
"""The same model and AdamW step as bench-train, in Python PyTorch 2.x: the peers of
bench/train_vs_pytorch.py and of sweeps/pytorch-vs-bench-train.yaml. Prints one JSON object with
the per-step wall times.

The model is tests/reference/gpt_reference.py (checked against bench-train's C++ model by the
test suite); the step is the same: micro batch forward and backward, global gradient-norm
clipping, AdamW with decay on matrices only. Batches are drawn before timing starts. As PyTorch
2.x users write it for speed (the defaults): attention by F.scaled_dot_product_attention and
torch.optim.AdamW(fused=True); --attention math and --no-fused give the plain versions.
--compile runs the forward pass and the loss through torch.compile (inductor; its compilation
falls in the first steps, which --warmup leaves out). --dtype bf16 runs them under
torch.autocast(bfloat16), as bench-train's train.dtype: bf16 does.

With --warmup W it also reports train_tokens_per_second as bench-train defines it (tokens of the
steps after the first W over their summed time), so a command sweep reads it beside bench-train's
(sweeps/pytorch-vs-bench-train.yaml). Runs in scripts/peer-venv's venv.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from gpt_reference import ReferenceLM  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    for name in ("n_layer", "n_embd", "n_head", "ffn_dim", "vocab_size", "seq_len", "micro_batch",
                 "steps", "threads"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--arch", default="gpt2")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--attention", choices=("sdpa", "math"), default="sdpa")
    p.add_argument("--no-fused", dest="fused", action="store_false", help="AdamW's foreach loop, not fused")
    p.add_argument("--compile", action="store_true", help="torch.compile the forward pass and the loss")
    p.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = ReferenceLM(args.arch, args.n_layer, args.n_embd, args.n_head, args.n_head, args.ffn_dim,
                        args.vocab_size, args.seq_len, args.seq_len, sdpa=args.attention == "sdpa")
    with torch.no_grad():  # GPT-2 initialisation, as bench-train does
        for name, p_ in model.named_parameters():
            if "ln_" in name or "norm" in name:
                p_.fill_(0.0 if name.endswith("bias") else 1.0)
            elif name.endswith("bias"):
                p_.zero_()
            else:
                std = 0.02 / (2 * args.n_layer) ** 0.5 if name.endswith(("attn_proj.weight", "mlp_proj.weight")) else 0.02
                p_.normal_(0.0, std)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=args.fused)
    loss_of = torch.compile(model.loss) if args.compile else model.loss
    autocast = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if args.dtype == "bf16" else contextlib.nullcontext
    batches = [(torch.randint(args.vocab_size, (args.micro_batch, args.seq_len)),
                torch.randint(args.vocab_size, (args.micro_batch, args.seq_len))) for _ in range(args.steps)]
    times = []
    for tokens, targets in batches:
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        with autocast():
            loss = loss_of(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()
        times.append(time.perf_counter() - t0)
    tokens_per_step = args.micro_batch * args.seq_len
    measured = times[args.warmup:]
    print(json.dumps({"step_s": times, "tokens_per_step": tokens_per_step,
                      "train_tokens_per_second": tokens_per_step * len(measured) / sum(measured),
                      "step_time_median_s": statistics.median(measured),
                      "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "attention": args.attention, "fused_adamw": args.fused, "compile": args.compile,
                      "dtype": args.dtype}))


if __name__ == "__main__":
    main()
