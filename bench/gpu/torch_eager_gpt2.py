#!/usr/bin/env python3
"""bench-train's GPT-2 step in Python PyTorch eager on a GPU, timed and profiled: the GPU side of
bench/train_vs_pytorch.py, and where the step's GPU time goes (docs/performance.md).

The model is tests/reference/gpt_reference.py with its attention replaced by
F.scaled_dot_product_attention (what bench-train uses with libtorch 2.x); bf16 autocast, the loss
in fp32, global-norm clipping at 1.0 and AdamW (--optim foreach, PyTorch's default, or fused).

    python3 bench/gpu/torch_eager_gpt2.py --steps 40 --warmup 10 --profile 3
    python3 bench/gpu/torch_eager_gpt2.py --optim fused --pad-vocab [--compile]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
import gpt_reference  # noqa: E402


def sdpa(q, k, v, _sdpa=True):
    groups = q.size(1) // k.size(1)
    if groups > 1:
        k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--optim", choices=("foreach", "fused"), default="foreach")
    p.add_argument("--pad-vocab", action="store_true",
                   help="pad the head's rows to a multiple of 64, as bench-train does on a GPU")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--profile", type=int, default=0, help="profile this many steps after timing")
    p.add_argument("--out")
    a = p.parse_args()

    gpt_reference.causal_attention = sdpa
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = gpt_reference.ReferenceLM("gpt2", 12, 768, 12, 12, 3072, 50257, 1024, 1024).to(dev)
    with torch.no_grad():
        for name, q in model.named_parameters():
            if "ln_" in name:
                q.fill_(0.0 if name.endswith("bias") else 1.0)
            elif name.endswith("bias"):
                q.zero_()
            else:
                q.normal_(0.0, 0.02 / 24 ** 0.5 if name.endswith(("attn_proj.weight", "mlp_proj.weight")) else 0.02)
    if a.pad_vocab:
        def forward(tokens, self=model):
            t = tokens.size(1)
            x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device))
            for i in range(self.n_layer):
                x = getattr(self, f"h{i}")(x)
            w = self.wte.weight
            w = F.pad(w, (0, 0, 0, -w.size(0) % 64))
            return F.linear(self.ln_f(x), w)[..., :self.wte.weight.size(0)]
        model.forward = forward
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=a.optim == "fused")
    shape = (a.micro_batch, a.seq_len)

    loss_fn = torch.compile(model.loss) if a.compile else model.loss

    def step():
        tokens = torch.randint(50257, shape, device=dev)
        targets = torch.randint(50257, shape, device=dev)
        opt.zero_grad(set_to_none=False)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    times = []
    for _ in range(a.warmup + a.steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    s = statistics.median(times[a.warmup:])
    result = {"median_step_s": s, "samples_per_s": a.micro_batch / s, "optim": a.optim,
              "pad_vocab": a.pad_vocab, "compile": a.compile,
              "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    print(json.dumps(result))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(a.profile):
                step()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=30, max_name_column_width=60))


if __name__ == "__main__":
    main()
