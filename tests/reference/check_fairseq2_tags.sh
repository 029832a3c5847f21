#!/usr/bin/env bash
# Plans fairseq2-sweep.yaml with bench-sweep and checks every tag against fairseq2_tags.py.
set -euo pipefail
bench_sweep=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
keys=train,micro_batch,lr,activation_checkpointing,data,path,seq_len,container,binds,image,launch,env,OMP_NUM_THREADS
format='ps_{preset}.ws_{world_size}.mb_{train.micro_batch}.lr_{train.lr}.im_{container.image}.{hash}'
"$bench_sweep" plan "$here/fairseq2-sweep.yaml" --format json > "$tmp/plan.json"
python3 "$here/fairseq2_tags.py" "$tmp/plan.json" "$keys" "$format" > "$tmp/expected"
python3 -c 'import json,sys; [print(p["tag"]) for p in json.load(open(sys.argv[1]))["points"]]' \
  "$tmp/plan.json" > "$tmp/actual"
count=$(wc -l < "$tmp/actual")
[ "$count" -eq 128 ] || { echo "expected 128 points, got $count"; exit 1; }
diff -u "$tmp/expected" "$tmp/actual"
echo "all $count tags match the Python reference"
