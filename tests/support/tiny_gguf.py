#!/usr/bin/env python3
"""Writes a fresh tiny Llama-architecture GGUF model, for running llama.cpp (llama-bench) on
without a model hub: 4 layers, hidden 64, 4 heads (2 KV heads), SwiGLU FFN 256, context 512, a
512-token SentencePiece-style ("llama") tokenizer with byte fallback, learnt here by a few hundred
BPE merges on made-up text. Weights are random (normal, std 0.02; RMS-norm weights 1), from
--seed, so the same seed writes the same file. The model says nothing; it only has the shapes
and the metadata of a real one, which is all a speed benchmark reads.

    python tests/support/tiny_gguf.py OUT.gguf [--outtype f32|f16] [--seed 0] [--layers 4]

Needs numpy and gguf-py: `pip install gguf==0.19.0` (the gguf-py of the llama.cpp that
scripts/llama-bench-build builds), or, with no gguf installed, the tree's own gguf-py, found
under $SWEEPBENCH_LLAMA_DIR/src/gguf-py (default build/llama.cpp/src/gguf-py).
"""
import argparse
import collections
import os
import sys
from pathlib import Path

import numpy as np

try:
    import gguf
except ImportError:
    root = Path(__file__).resolve().parents[2]
    tree = Path(os.environ.get("SWEEPBENCH_LLAMA_DIR", root / "build" / "llama.cpp"))
    sys.path.insert(0, str(tree / "src" / "gguf-py"))
    try:
        import gguf
    except ImportError:
        sys.exit("tiny_gguf.py: no gguf module: pip install gguf==0.19.0, "
                 "or run scripts/llama-bench-build for the llama.cpp tree's gguf-py")

# Made-up text the tokenizer's merges are learnt on; any text tokenizes (byte fallback).
TEXT = """
the quick sweep runs a benchmark on every point of the grid and writes one row per run
a tiny model with random weights has the shape of a real one and answers nothing at all
tokens per second for the prompt and for the generated text are what the bench measures
threads batch sizes and depths are the parameters of a sweep over the llama bench program
small models load in a moment so tests that run the real program stay fast on two cores
every record names its backend the number of threads the prompt length and the depth
averages and standard deviations of many repetitions make the timing of each test stable
compilers libraries kernels and caches all change what a measurement of throughput says
"""

SPACE = "\u2581"  # SentencePiece's word-start mark


def learn_vocab(text, size):
    """Returns (pieces, scores): the characters of text, then BPE merges of its words in order of
    frequency, as SentencePiece pieces (a word starts with SPACE), until size pieces."""
    words = collections.Counter(SPACE + w for w in text.split())
    splits = {w: list(w) for w in words}
    pieces = sorted({c for w in words for c in w})
    scores = [0.0] * len(pieces)
    while len(pieces) < size:
        pairs = collections.Counter()
        for w, n in words.items():
            s = splits[w]
            for a, b in zip(s, s[1:]):
                pairs[a, b] += n
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merged = a + b
        pieces.append(merged)
        scores.append(-float(len(pieces)))  # earlier merges score higher, as in SentencePiece
        for w in words:
            s, out, i = splits[w], [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            splits[w] = out
    return pieces, scores


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="the .gguf file to write")
    ap.add_argument("--outtype", choices=["f32", "f16"], default="f32",
                    help="type of the 2-D weights (norms stay f32); default f32")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=512)
    args = ap.parse_args()

    n_embd, n_head, n_head_kv, n_ff, n_ctx = 64, 4, 2, 256, 512
    head_dim = n_embd // n_head

    # Tokenizer: <unk> <s> </s>, the 256 byte pieces, then the learnt pieces.
    special = [("<unk>", gguf.TokenType.UNKNOWN), ("<s>", gguf.TokenType.CONTROL),
               ("</s>", gguf.TokenType.CONTROL)]
    tokens = [t for t, _ in special] + [f"<0x{b:02X}>" for b in range(256)]
    types = [k for _, k in special] + [gguf.TokenType.BYTE] * 256
    scores = [0.0] * len(tokens)
    pieces, piece_scores = learn_vocab(TEXT, args.vocab - len(tokens))
    tokens += pieces
    types += [gguf.TokenType.NORMAL] * len(pieces)
    scores += piece_scores
    n_vocab = len(tokens)

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name("sweepbench tiny llama (random weights)")
    w.add_vocab_size(n_vocab)
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(args.layers)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    ftype = gguf.LlamaFileType.ALL_F32 if args.outtype == "f32" else gguf.LlamaFileType.MOSTLY_F16
    w.add_file_type(ftype)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    rng = np.random.default_rng(args.seed)
    wtype = np.float32 if args.outtype == "f32" else np.float16

    def weight(rows, cols):  # PyTorch's (out, in) order; GGUF stores it reversed
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(wtype)

    def norm():
        return np.ones(n_embd, dtype=np.float32)

    kv = n_head_kv * head_dim
    w.add_tensor("token_embd.weight", weight(n_vocab, n_embd))
    for i in range(args.layers):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", norm())
        w.add_tensor(b + "attn_q.weight", weight(n_embd, n_embd))
        w.add_tensor(b + "attn_k.weight", weight(kv, n_embd))
        w.add_tensor(b + "attn_v.weight", weight(kv, n_embd))
        w.add_tensor(b + "attn_output.weight", weight(n_embd, n_embd))
        w.add_tensor(b + "ffn_norm.weight", norm())
        w.add_tensor(b + "ffn_gate.weight", weight(n_ff, n_embd))
        w.add_tensor(b + "ffn_up.weight", weight(n_ff, n_embd))
        w.add_tensor(b + "ffn_down.weight", weight(n_embd, n_ff))
    w.add_tensor("output_norm.weight", norm())
    w.add_tensor("output.weight", weight(n_vocab, n_embd))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    n_params = (2 * n_vocab * n_embd + n_embd
                + args.layers * (2 * n_embd * n_embd + 2 * kv * n_embd + 3 * n_ff * n_embd + 2 * n_embd))
    print(f"{args.out}: llama, {args.layers} layers, hidden {n_embd}, vocab {n_vocab}, "
          f"{n_params} parameters, {args.outtype}", file=sys.stderr)


if __name__ == "__main__":
    main()
