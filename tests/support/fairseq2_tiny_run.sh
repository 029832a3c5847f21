#!/usr/bin/env bash
# Runs a real fairseq2 0.8.1 training recipe on the CPU, small enough for a 2-core machine (13 s
# wall on a quiet 2-core VM, up to a minute when it is busy): the `lm/sft` (instruction
# fine-tuning) recipe of fairseq2 v0.8.1, vendored unchanged in tests/support/fairseq2_recipes/
# (the PyPI wheel does not ship fairseq2's recipes/ folder), on a 2-layer LLaMA-3-like model with
# random weights (no checkpoint: family llama, arch llama3_2_1b, shrunk by config overrides), a
# byte-level tiktoken tokenizer made here (256 byte tokens + the 256 LLaMA-3 special tokens) and a
# made-up arithmetic question/answer dataset made here. Nothing is downloaded. It made
# tests/command/data/fairseq2-0.8/ (README.txt there).
#
#   tests/support/fairseq2_tiny_run.sh OUTDIR [FAIRSEQ2 OPTIONS...] 2>stderr.txt >stdout.txt
#
# OUTDIR/data holds the tokenizer, the data and the recipe config; OUTDIR/run is fairseq2's output
# directory (metrics/train.jsonl, metrics/valid.jsonl, tb/, checkpoints/, ...); OUTDIR/command.txt
# the command line it ran. Options after OUTDIR go to the recipe (e.g. --no-rich). The venv is
# $SWEEPBENCH_FAIRSEQ2_VENV if set, else scripts/fairseq2-venv's (made on first use). The
# recipe's own stdout and stderr are this script's.
#
#   tests/support/fairseq2_tiny_run.sh --prepare OUTDIR
#
# makes OUTDIR/data only and prints the recipe config's path, for a sweep that runs the recipe
# itself (sweeps/fairseq2-0.8.yaml, tests/command/test_real_peers.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
prepare=false
if [[ ${1:-} == --prepare ]]; then prepare=true; shift; fi
[[ $# -ge 1 ]] || { echo "usage: $0 [--prepare] OUTDIR [FAIRSEQ2 OPTIONS...]" >&2; exit 2; }
out=$1; shift
if [[ -n ${SWEEPBENCH_FAIRSEQ2_VENV:-} && -x $SWEEPBENCH_FAIRSEQ2_VENV/bin/python ]]; then
  venv=$SWEEPBENCH_FAIRSEQ2_VENV
else
  venv=$("$root/scripts/fairseq2-venv")
fi
[[ ! -e $out/run ]] || { echo "$0: $out/run exists: give a new OUTDIR" >&2; exit 2; }
mkdir -p "$out/data"
out=$(cd "$out" && pwd)
data=$out/data

"$venv/bin/python" - "$data" <<'PY'
import base64, json, random, sys
from pathlib import Path

data = Path(sys.argv[1])
# A byte-level tiktoken BPE file: the 256 single bytes, no merges. fairseq2's LLaMA tokenizer
# (impl tiktoken) appends its 256 special tokens: vocabulary 512, pad <|finetune_right_pad_id|> 260.
with open(data / "bytes.tiktoken", "w") as f:
    for i in range(256):
        f.write(f"{base64.b64encode(bytes([i])).decode()} {i}\n")

rng = random.Random(2)
def examples(n):
    for _ in range(n):
        a, b = rng.randrange(100), rng.randrange(100)
        op = rng.choice("+-*")
        answer = {"+": a + b, "-": a - b, "*": a * b}[op]
        yield {"src": f"What is {a} {op} {b}?", "tgt": f" {a} {op} {b} = {answer}."}
for split, n in (("train", 640), ("valid", 64)):
    with open(data / f"{split}.jsonl", "w") as f:
        for ex in examples(n):
            f.write(json.dumps(ex) + "\n")
PY

cat > "$data/tiny_sft.yaml" <<YAML
model:
  name: null
  path: null
  family: llama
  arch: llama3_2_1b
  config_overrides:
    model_dim: 64
    num_layers: 2
    num_attn_heads: 4
    num_key_value_heads: 2
    ffn_inner_dim: 256
    ffn_inner_dim_multiple_of: 32
    vocab_size: 512
    pad_idx: 260
    max_seq_len: 128
    tied_embeddings: false
  dtype: float32
  compile: false
dataset:
  family: lm_sft
  config_overrides:
    sources:
      train:
      - path: $data/train.jsonl
      valid:
      - path: $data/valid.jsonl
  valid_split: valid
  max_seq_len: 128
  batch_size: 16
  example_shuffle_window: 1000
  prefetch: 2
tokenizer:
  name: null
  path: $data/bytes.tiktoken
  family: llama
  config_overrides:
    impl: tiktoken
trainer:
  data_parallelism: ddp
  mixed_precision:
    mode: "off"
optimizer:
  name: adamw
  config:
    impl: auto
regime:
  num_steps: 40
  validate_at_start: true
  validate_every_n_steps: 10
  checkpoint_every_n_steps: 1000
  export_hugging_face: false
  publish_metrics_every_n_steps: 2
common:
  no_sweep_dir: true
  seed: 2
YAML

if $prepare; then
  echo "$data/tiny_sft.yaml"
  exit 0
fi
cmd=("$venv/bin/python" -m recipes.lm.sft --config-file "$data/tiny_sft.yaml" "$@" "$out/run")
printf '%q ' "PYTHONPATH=$root/tests/support/fairseq2_recipes" "${cmd[@]}" > "$out/command.txt"
echo >> "$out/command.txt"
PYTHONPATH="$root/tests/support/fairseq2_recipes${PYTHONPATH:+:$PYTHONPATH}" exec "${cmd[@]}"
