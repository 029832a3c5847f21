#!/usr/bin/env python3
"""Makes a fresh tiny Llama model directory that vLLM (and transformers) can load, without any
model hub: a LlamaConfig of a few layers, random weights (normal, std 0.02) saved as
model.safetensors, and a word-level tokenizer over made-up words, built here, wrapped in
PreTrainedTokenizerFast and saved beside it. The vocabulary is 10240 by default, not a few
hundred: `vllm bench latency` feeds token ids up to 9999. That is still about 1.5 M parameters.

    python tests/support/tiny_llama.py OUTDIR [--layers 2] [--hidden 64] [--seed 0]

Runs with the vllm venv's python (scripts/vllm-venv): it needs torch, transformers, tokenizers.
The same seed gives the same weights and tokenizer.
"""
import argparse
import os
import random

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]


def pseudo_words(count, seed):
    """count distinct made-up words of one to three syllables, in a fixed shuffled order."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"]  # 90
    words = set()
    while len(words) < count:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))))
    words = sorted(words)
    rng.shuffle(words)
    return words


def make_tokenizer(vocab_size, seed):
    """A word-level tokenizer over made-up words: ids 0-3 are <unk> <s> </s> <pad>, every other
    id one word, so that any id below vocab_size decodes to a word and encodes back to itself
    (the benchmarks' random prompts are decoded to text and tokenized again)."""
    vocab = {t: i for i, t in enumerate(SPECIALS + pseudo_words(vocab_size - len(SPECIALS), seed))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with one space
    bos, eos = vocab["<s>"], vocab["</s>"]
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos), ("</s>", eos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>", pad_token="<pad>")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    # hidden / heads is the head size: vLLM's CPU attention takes 32, 64, 80, ... 256, not 16.
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--kv-heads", type=int, default=1)
    # `vllm bench latency` draws its prompts' token ids uniformly from [0, 10000): fewer and it
    # stops at "Token id ... is out of vocabulary".
    ap.add_argument("--vocab", type=int, default=10240)
    ap.add_argument("--max-positions", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    if args.hidden % args.heads or args.hidden // args.heads not in (32, 64, 80, 96, 112, 128,
                                                                     160, 192, 224, 256, 512):
        ap.error(f"head size {args.hidden}/{args.heads} is not one vLLM's CPU attention takes")
    tokenizer = make_tokenizer(args.vocab, args.seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=args.hidden,
        intermediate_size=4 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.max_positions,
        initializer_range=0.02,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        dtype="float32",
    )
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config)  # _init_weights: normal(0, initializer_range), norms at 1
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.02)
    os.makedirs(args.outdir, exist_ok=True)
    model.save_pretrained(args.outdir, safe_serialization=True)
    tokenizer.save_pretrained(args.outdir)
    n = sum(p.numel() for p in model.parameters())
    print(f"tiny llama: {args.layers} layers, hidden {args.hidden}, vocab {config.vocab_size}, "
          f"{n} parameters -> {args.outdir}")


if __name__ == "__main__":
    main()
