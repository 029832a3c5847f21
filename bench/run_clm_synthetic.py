#!/usr/bin/env python3
"""The Hugging Face Trainer as run_clm.py drives it, on a fresh GPT-2 config and synthetic tokens:
a real peer program for command sweeps (docs/commands.md), on a CPU or a GPU.

No model hub or dataset server is reachable here, so the model is GPT2Config(...) from the
command line (default: a tiny one) with fresh weights, and the data are random token ids. The
rest is run_clm.py's: every TrainingArguments option (--per_device_train_batch_size, --fp16,
--max_steps, --output_dir, ...) through HfArgumentParser, trainer.train(), then
log_metrics/save_metrics for train and eval with perplexity = exp(eval_loss), so the Trainer's
final dict line, `***** eval metrics *****`, all_results.json and trainer_state.json are what
run_clm.py writes. command.parser hf-trainer reads them.

    python3 bench/run_clm_synthetic.py --output_dir out --max_steps 20 --per_device_train_batch_size 4

Under `accelerate launch --num_processes N` each process trains on its share (DDP).
"""
import math
from dataclasses import dataclass, field

import torch
from transformers import (GPT2Config, GPT2LMHeadModel, HfArgumentParser, Trainer,
                          TrainingArguments, set_seed)


@dataclass
class ModelArguments:
    n_layer: int = field(default=2)
    n_embd: int = field(default=64)
    n_head: int = field(default=4)
    vocab_size: int = field(default=512)
    block_size: int = field(default=64)
    train_samples: int = field(default=256, metadata={"help": "synthetic training sequences"})
    eval_samples: int = field(default=32, metadata={"help": "synthetic evaluation sequences"})


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, seq_len, vocab, seed):
        g = torch.Generator().manual_seed(seed)
        self.data = torch.randint(vocab, (n, seq_len), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main():
    model_args, args = HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()
    set_seed(args.seed)
    config = GPT2Config(n_layer=model_args.n_layer, n_embd=model_args.n_embd, n_head=model_args.n_head,
                        vocab_size=model_args.vocab_size, n_positions=model_args.block_size)
    model = GPT2LMHeadModel(config)
    # The causal-mask buffers are bool, which gloo (CPU DDP) cannot broadcast in torch < 2; they
    # are the same on every rank, so DDP may leave them alone.
    model._ddp_params_and_buffers_to_ignore = [n for n, b in model.named_buffers() if b.dtype == torch.bool]
    train = Tokens(model_args.train_samples, model_args.block_size, config.vocab_size, 0)
    evaluation = Tokens(model_args.eval_samples, model_args.block_size, config.vocab_size, 1)
    trainer = Trainer(model=model, args=args, train_dataset=train,
                      eval_dataset=evaluation if args.do_eval else None)
    result = trainer.train()
    metrics = result.metrics
    metrics["train_samples"] = len(train)
    trainer.log_metrics("train", metrics)
    trainer.save_metrics("train", metrics)
    trainer.save_state()
    if args.do_eval:
        metrics = trainer.evaluate()
        metrics["eval_samples"] = len(evaluation)
        try:
            metrics["perplexity"] = math.exp(metrics["eval_loss"])
        except OverflowError:
            metrics["perplexity"] = float("inf")
        trainer.log_metrics("eval", metrics)
        trainer.save_metrics("eval", metrics)
    # Under a launcher (accelerate launch, torchrun, mpirun) Trainer made a process group; left to
    # the interpreter's exit, gloo's threads now and then end a rank in std::terminate (SIGABRT
    # after the metrics were written, seen once in CI).
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
