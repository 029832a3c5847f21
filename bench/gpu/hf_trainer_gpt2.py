#!/usr/bin/env python3
"""The Hugging Face baseline of docs/performance.md's GPU figures: what `run_clm.py` does with the
Trainer for GPT-2 124M at micro batch 8 and block size 1024, on synthetic tokens (the GPU machines
reach no network, so no WikiText-2 and no pretrained weights: a fresh GPT2Config(), which is
GPT-2 124M). Times each optimizer step after `--warmup` steps with a CUDA synchronisation at both
ends, as bench-train does, and writes one JSON object to --out.

    python3 bench/gpu/hf_trainer_gpt2.py --bf16 --steps 60 --warmup 10 --out hf.json
"""
import argparse
import json
import statistics
import tempfile
import time

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seq_len, vocab):
        g = torch.Generator().manual_seed(0)
        self.data = torch.randint(vocab, (n, seq_len), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


class StepTimer(TrainerCallback):
    def __init__(self):
        self.times, self.t0 = [], None

    def on_step_begin(self, args, state, control, **kw):
        torch.cuda.synchronize()
        self.t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        torch.cuda.synchronize()
        self.times.append(time.perf_counter() - self.t0)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--out", required=True)
    a = p.parse_args()

    config = GPT2Config()
    model = GPT2LMHeadModel(config)
    data = Tokens(a.steps * a.micro_batch, a.seq_len, config.vocab_size)
    timer = StepTimer()
    with tempfile.TemporaryDirectory() as tmp:
        args = TrainingArguments(output_dir=tmp, per_device_train_batch_size=a.micro_batch,
                                 max_steps=a.steps, bf16=a.bf16, save_strategy="no", report_to="none",
                                 logging_steps=10, disable_tqdm=True)
        trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[timer])
        out = trainer.train()
    measured = timer.times[a.warmup:]
    step = statistics.median(measured)
    result = {
        "micro_batch": a.micro_batch, "seq_len": a.seq_len, "bf16": a.bf16,
        "steps_measured": len(measured), "median_step_s": step,
        "samples_per_s": a.micro_batch / step, "tokens_per_s": a.micro_batch * a.seq_len / step,
        "trainer_train_samples_per_second": out.metrics.get("train_samples_per_second"),
        "optim": str(args.optim), "attn_implementation": model.config._attn_implementation,
        "parameters": sum(q.numel() for q in model.parameters()),
        "transformers": transformers.__version__, "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
