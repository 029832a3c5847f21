#!/bin/bash
# Builds bench-train against the machine's CUDA libtorch (a PyTorch wheel) and measures it: the
# GPU figures of docs/performance.md. Needs .gpu/deps.tar.xz from bench/gpu/pack-deps.sh (Debian's
# Open MPI, HDF5, yaml-cpp and Boost, for machines that lack them) unless they are installed.
#
#   bench/gpu/run.sh build            configure and build bench-train into $BUILD (build/cuda)
#   bench/gpu/run.sh tiny             the tiny presets, fp32 and bf16
#   bench/gpu/run.sh smoke            tiny, then GPT-2 124M for a few steps
#   bench/gpu/run.sh measure          the figures: GPT-2 124M bf16 mb8 seq1024 and variants
#   bench/gpu/run.sh mfu              micro batch 8 to 32 with whole logits, 8 to 64 with the
#                                     chunked loss, a profiled step each
#   bench/gpu/run.sh chunks           the chunked loss's chunk on a GPU: micro batch 8 with
#                                     train.loss_chunk_rows 0 (the default, 333 tokens), 1024,
#                                     4096 and 8192, beside whole logits, alternating in two rounds
#   bench/gpu/run.sh kernels          train.gpu_kernels (our CUDA cross-entropy) against
#                                     libtorch's ops: the same runs' losses step by step (tiny
#                                     fp32, Llama tiny bf16, GPT-2 124M bf16), then micro batch 8
#                                     timed, alternating in two rounds
#   bench/gpu/run.sh graph            train.cuda_graph (the step captured and replayed) against
#                                     the eager step at micro batch 8, two rounds alternating,
#                                     then with train.gpu_kernels too
#   bench/gpu/run.sh hf               the Hugging Face Trainer baseline on the same shapes
#   bench/gpu/run.sh eager            the same step in Python PyTorch eager, and its profile
#   bench/gpu/run.sh compile          Python eager against torch.compile at micro batch 8 and 16
#   bench/gpu/run.sh infer            bench-infer (static cache; with and without a CUDA graph
#                                     of the decode step) beside generate() of the same model:
#                                     GPT-2 124M and a Llama shape, batch 1 and 16
#   bench/gpu/run.sh memory           a grid of short bench-train runs (shapes, dtypes, ZeRO,
#                                     LoRA, checkpointing, the loss), four at a time: the
#                                     allocator's peaks the memory model is checked against
#   bench/gpu/run.sh sweep            bench/gpu/memory.yaml through bench-sweep run, one point
#                                     at a time (hardware.name: this GPU), then bench-extract:
#                                     the tree the time and memory models are checked against
#                                     (named twice, two trees: the run-to-run noise)
#   bench/gpu/run.sh timecheck        the same for bench/gpu/time_check.yaml: shapes the time
#                                     model was not fitted to
#
# Results and logs go to $OUT (default .gpu/out). BENCH_TRAIN=path skips the build (bench-infer is
# then the one beside it, unless BENCH_INFER names another); TORCH_PREFIX names libtorch's CMake
# prefix when python3 has no torch. DEADLINE=S (seconds after the start) bounds every phase but
# the build: work is not started, and work under way is stopped, after S - 30 seconds, which
# leaves the archiving its time (a lent machine's call has a time limit; what ran is archived).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$root/.gpu/out}
BUILD=${BUILD:-$root/build/cuda}
A=x86_64-linux-gnu
D=/tmp/sweepbench-deps
mkdir -p "$OUT"
W=$(mktemp -d "$OUT/work.XXXXXX")  # logs and runs, archived into $OUT/results.tar.gz at the end
T0=$SECONDS
DEADLINE=${DEADLINE:-0}

left() {  # seconds left for work before DEADLINE, 30 kept for the archives (100000 without one)
  if ((DEADLINE)); then echo $((DEADLINE - 30 - (SECONDS - T0))); else echo 100000; fi
}

enough() {  # enough SECONDS WHAT: whether SECONDS are left, else says WHAT is skipped
  (($(left) >= $1)) && return 0
  echo "== $2: skipped, $(left) s left"
  return 1
}

bounded() {  # bounded CMD...: CMD under timeout until DEADLINE (SIGTERM: bench-* write their results)
  local t; t=$(left)
  ((t < 5)) && t=5
  timeout -k 10 "$t" "$@"
}

setup_deps() {
  if [[ -f $root/.gpu/deps.tar.xz && ! -d $D/usr ]]; then
    mkdir -p "$D" && tar -C "$D" -xJf "$root/.gpu/deps.tar.xz" || return 1
  fi
  [[ -d $D/usr ]] || return 0
  # Open MPI and PMIx relocate to where they were unpacked; the system's libraries come before
  # the packed base libraries, which only fill gaps.
  export OPAL_PREFIX=$D/usr PMIX_PREFIX=$D/usr/lib/$A/pmix2
  export PATH=$D/usr/bin:$PATH PKG_CONFIG_PATH=$D/usr/lib/$A/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export LD_LIBRARY_PATH=$D/usr/lib/sweepbench-primary:$D/usr/lib/$A/openmpi/lib:$D/usr/lib/$A/hdf5/serial:/usr/lib/$A:/lib/$A:$D/usr/lib/sweepbench-fallback${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # One rank without mpirun: no orted to start.
  export OMPI_MCA_ess_singleton_isolated=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

build() {
  local torch_prefix nccl_root
  torch_prefix=${TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')} || return 1
  nccl_root=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null)
  local args=(-S "$root" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSWEEPBENCH_BUILD_TESTS=OFF
              -DCMAKE_PREFIX_PATH="$torch_prefix" -DSWEEPBENCH_CUDA=ON -DTORCH_CUDA_ARCH_LIST=9.0)
  [[ -n $nccl_root ]] && args+=(-DNCCL_ROOT="$nccl_root")
  if [[ -d $D/usr ]]; then
    args+=(-Dyaml-cpp_DIR=$D/usr/lib/$A/cmake/yaml-cpp -DBoost_DIR=$D/usr/lib/$A/cmake/Boost-1.74.0
           -DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_C_HEADER_DIR=$D/usr/lib/$A/openmpi/include
           -DMPI_C_LIB_NAMES=mpi -DMPI_mpi_LIBRARY=$D/usr/lib/$A/openmpi/lib/libmpi.so
           -DHDF5_ROOT=$D/usr -DHDF5_C_INCLUDE_DIR=$D/usr/include/hdf5/serial
           -DHDF5_hdf5_LIBRARY_RELEASE=$D/usr/lib/$A/hdf5/serial/libhdf5.so)
  fi
  cmake "${args[@]}" 2>&1 | tee "$W/configure.log" || return 1
  local t0=$SECONDS
  cmake --build "$BUILD" --target bench-train bench-infer gpu_kernel_check -j "$(nproc)" 2>&1 |
    tee "$W/build.log" | tail -40
  local rc=${PIPESTATUS[0]}
  echo "build: rc=$rc in $((SECONDS - t0)) s"
  # The sweep phase's tools: without them only that phase is skipped.
  cmake --build "$BUILD" --target bench-sweep bench-extract -j "$(nproc)" >"$W/build-sweep.log" 2>&1 ||
    { echo "build: bench-sweep and bench-extract failed"; tail -20 "$W/build-sweep.log"; }
  return "$rc"
}

train() {  # train NAME [--set k=v]...: one run of bench-train into $W/runs/NAME
  # Beside a run alone on the GPU (NO_GPUMEM unset), nvidia-smi samples the device's used memory
  # every 100 ms into $W/NAME.gpumem: the figure that decides an OOM (the caching allocator's
  # reserved blocks, the CUDA context, cuBLAS and NCCL workspaces), beside what bench-train
  # records of it (mem_peak_bytes from 2026-12-01) and the allocated peak (mem_alloc_peak_bytes).
  local name=$1; shift
  local dir=$W/runs/$name
  local t0=$SECONDS smi=
  if [[ -z ${NO_GPUMEM:-} ]]; then
    nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits -lms 100 \
      >"$W/$name.gpumem" 2>/dev/null &
    smi=$!
  fi
  bounded "$BENCH_TRAIN" --config "$root/bench/gpu/point.yaml" --out "$dir" "$@" >"$W/$name.log" 2>&1
  local rc=$?
  if [[ -n $smi ]]; then
    kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
    echo "== $name: device memory used, largest sample: $(sort -t, -k1 -n "$W/$name.gpumem" | tail -1) MiB (used, total)"
  fi
  echo "== $name: exit $rc in $((SECONDS - t0)) s"
  tail -n "${TAIL:-25}" "$W/$name.log"
  return 0
}

show() {  # show NAME...: one line of each run's summary.json
  python3 - "$W/runs" "$@" <<'PY'
import json, sys
keys = ("status", "mfu", "train_tokens_per_second", "step_time_median_s", "train_loss", "mem_peak_bytes",
        "mem_alloc_peak_bytes",
        "mem_model_states_bytes", "ttft_mean_s", "tpot_mean_s", "decode_tokens_per_second", "mbu",
        "kv_cache_bytes", "weight_bytes", "e2e_p50_s")
for name in sys.argv[2:]:
    try:
        m = json.load(open(f"{sys.argv[1]}/{name}/summary.json"))
        mm = m.get("metrics", {})
        got = {k: mm.get(k, m.get(k)) for k in keys}
        print(name, " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                             for k, v in got.items() if v is not None))
    except (OSError, ValueError) as e:
        print(name, "no summary:", e)
PY
}

tiny() {
  train tiny-fp32 --set model.preset=gpt2-tiny --set data.seq_len=64 --set train.micro_batch=8 \
    --set train.steps=30 --set train.dtype=fp32
  train tiny-llama-bf16 --set model.preset=llama-tiny --set data.seq_len=64 --set train.micro_batch=8 \
    --set train.steps=30 --set train.dtype=bf16 --set train.activation_checkpointing=true
}

smoke() {
  tiny
  train gpt2-bf16-short --set train.steps=20 --set train.warmup_steps=5
}

measure() {
  train gpt2-bf16 --set train.steps=60 --set train.warmup_steps=10
  train gpt2-bf16-nosampler --set train.steps=60 --set train.warmup_steps=10 \
    --set metrics.sample_interval_ms=0 --set metrics.system=false
  train gpt2-fp16 --set train.steps=40 --set train.warmup_steps=10 --set train.dtype=fp16
  train gpt2-fp32 --set train.steps=30 --set train.warmup_steps=10 --set train.dtype=fp32
  train gpt2-bf16-ckpt --set train.steps=40 --set train.warmup_steps=10 \
    --set train.activation_checkpointing=true
  train gpt2-bf16-mb16 --set train.steps=40 --set train.warmup_steps=10 --set train.micro_batch=16
  train gpt2xl-oom --set model.preset=gpt2-xl --set train.micro_batch=64 --set train.steps=3 \
    --set train.warmup_steps=1
}

mfu() {  # MFU by micro batch, whole logits and the chunked loss (which keeps 64 in memory)
  local mb
  for mb in 8 16 32; do
    enough 30 "gpt2-bf16-mb$mb-logits" || continue
    train "gpt2-bf16-mb$mb-logits" --set train.steps=40 --set train.warmup_steps=10 \
      --set train.micro_batch=$mb --set metrics.profile_steps="\"12\""
  done
  for mb in 8 16 32 64; do
    enough 30 "gpt2-bf16-mb$mb-fused" || continue
    train "gpt2-bf16-mb$mb-fused" --set train.steps=40 --set train.warmup_steps=10 \
      --set train.micro_batch=$mb --set train.fused_loss=true --set metrics.profile_steps="\"12\""
  done
  python3 "$root/bench/gpu/trace_summary.py" "$W"/runs/gpt2-bf16-mb*-* --json "$W/profiles.json"
  # Step 1's loss, chunked against whole logits: equal within bf16's rounding.
  python3 - "$W/runs" <<'PY'
import json, sys
runs = sys.argv[1]
for name in ("gpt2-bf16-mb8-logits", "gpt2-bf16-mb16-logits", "gpt2-bf16-mb32-logits",
             "gpt2-bf16-mb8-fused", "gpt2-bf16-mb16-fused", "gpt2-bf16-mb32-fused",
             "gpt2-bf16-mb64-fused"):
    try:
        m = json.load(open(f"{runs}/{name}/summary.json"))["metrics"]
        print(name, "mfu", m.get("mfu"), "tokens/s", m.get("train_tokens_per_second"),
              "peak bytes", m.get("mem_peak_bytes"))
    except (OSError, KeyError, ValueError) as e:
        print(name, "no summary:", e)
PY
}

chunks() {  # the chunk of train.fused_loss on a GPU, against whole logits, two rounds
  local round rows
  for round in 1 2; do
    for rows in 0 1024 4096 8192 logits; do
      enough 25 "gpt2-bf16-mb8-chunk$rows-r$round" || continue
      if [[ $rows == logits ]]; then
        train "gpt2-bf16-mb8-chunk$rows-r$round" --set train.steps=30 --set train.warmup_steps=10 \
          --set train.micro_batch=8
      else
        train "gpt2-bf16-mb8-chunk$rows-r$round" --set train.steps=30 --set train.warmup_steps=10 \
          --set train.micro_batch=8 --set train.fused_loss=true --set train.loss_chunk_rows=$rows
      fi
    done
  done
  # shellcheck disable=SC2046  # the runs' names, one word each
  [[ -d $W/runs ]] && show $(cd "$W/runs" && ls -d gpt2-bf16-mb8-chunk* 2>/dev/null)
}

alternate() {  # alternate PREFIX KEY: GPT-2 124M at micro batch 8, KEY false then true, two rounds
  local round v
  for round in 1 2; do
    for v in false true; do
      enough 25 "$1-$v-r$round" || continue
      train "$1-$v-r$round" --set train.steps=30 --set train.warmup_steps=10 \
        --set train.micro_batch=8 --set "$2=$v" --set metrics.log_every=1
    done
  done
}

same_losses() {  # same_losses A B [A B]...: each pair of runs' losses, step by step (4 decimals)
  python3 - "$W" "$@" <<'PY'
import re, sys
w, names = sys.argv[1], sys.argv[2:]
def losses(name):
    try:
        text = open(f"{w}/{name}.log").read()
    except OSError:
        return {}
    return {int(m[1]): float(m[2]) for m in re.finditer(r"^\s+(\d+)/\d+\s+(\S+)", text, re.M)}
for a, b in zip(names[::2], names[1::2]):
    la, lb = losses(a), losses(b)
    steps = sorted(set(la) & set(lb))
    if not steps:
        print(f"== losses {a} against {b}: no steps to compare")
        continue
    worst = max(steps, key=lambda s: abs(la[s] - lb[s]))
    print(f"== losses {a} against {b}: step 1 {la[steps[0]]} / {lb[steps[0]]}, "
          f"last {la[steps[-1]]} / {lb[steps[-1]]}, largest difference {abs(la[worst] - lb[worst]):.4g} "
          f"at step {worst} of {len(steps)}")
PY
}

kernels() {  # train.gpu_kernels against libtorch's ops: losses step by step, then timed
  # First whether the kernels compute what libtorch's ops do: the same short runs both ways, each
  # step's loss printed (4 decimals), fp32 with GPT-2's vocabulary (50257: the padded head) and
  # bf16 with Llama's (32000: no padding); then GPT-2 124M at micro batch 8, the sides alternating
  # in two rounds. Both sides read the padded head (since 2026-12-01): its step-30 loss at micro
  # batch 8 against bench/results/gpu_h200_2026-11-30.json's (10.95, the cut head's) checks it.
  local k check
  # The kernels case by case against libtorch's ops (bench/gpu/kernel_check.cc): seconds.
  check=$(dirname "$BENCH_TRAIN")/gpu_kernel_check
  if [[ -x $check ]]; then
    echo "== gpu_kernel_check"
    bounded "$check" 2>&1 | tee "$W/gpu_kernel_check.log"
    echo "== gpu_kernel_check: exit ${PIPESTATUS[0]}"
  else
    echo "== gpu_kernel_check: not built ($check)"
  fi
  for k in false true; do
    enough 20 "tiny-fp32-gpuk-$k" || continue
    train "tiny-fp32-gpuk-$k" --set model.preset=gpt2-tiny --set model.vocab_size=50257 \
      --set data.seq_len=64 --set train.micro_batch=8 --set train.steps=30 \
      --set train.dtype=fp32 --set train.gpu_kernels=$k --set metrics.log_every=1
    enough 20 "llama-tiny-bf16-gpuk-$k" || continue
    train "llama-tiny-bf16-gpuk-$k" --set model.preset=llama-tiny --set model.vocab_size=32000 \
      --set data.seq_len=64 --set train.micro_batch=8 --set train.steps=30 \
      --set train.dtype=bf16 --set train.gpu_kernels=$k --set metrics.log_every=1
  done
  alternate gpt2-bf16-mb8-gpuk train.gpu_kernels
  same_losses tiny-fp32-gpuk-false tiny-fp32-gpuk-true \
    llama-tiny-bf16-gpuk-false llama-tiny-bf16-gpuk-true \
    gpt2-bf16-mb8-gpuk-false-r1 gpt2-bf16-mb8-gpuk-true-r1
  # shellcheck disable=SC2046  # the runs' names, one word each
  [[ -d $W/runs ]] && show $(cd "$W/runs" && ls -d ./*-gpuk-* 2>/dev/null | sed 's|^\./||')
}

graph() {  # train.cuda_graph: the captured step against the eager one, alternating in two rounds
  # GPT-2 124M at micro batch 8, each step's loss printed and compared with the eager run's (the
  # same learning rate in fp32 either way on a GPU); then with train.gpu_kernels too.
  alternate gpt2-bf16-mb8-graph train.cuda_graph
  # Not bit for bit on a GPU (flash attention's backward adds with atomics): within bf16's noise.
  same_losses gpt2-bf16-mb8-graph-false-r1 gpt2-bf16-mb8-graph-true-r1 \
    gpt2-bf16-mb8-graph-false-r2 gpt2-bf16-mb8-graph-true-r2
  enough 25 "gpt2-bf16-mb8-graph-gpuk" &&
    train "gpt2-bf16-mb8-graph-gpuk" --set train.steps=30 --set train.warmup_steps=10 \
      --set train.micro_batch=8 --set train.cuda_graph=true --set train.gpu_kernels=true \
      --set metrics.log_every=1
  # shellcheck disable=SC2046  # the runs' names, one word each
  [[ -d $W/runs ]] && show $(cd "$W/runs" && ls -d ./*-graph-* 2>/dev/null | sed 's|^\./||')
}

hf() {  # the Hugging Face Trainer on the same shapes (bench/gpu/hf_trainer_gpt2.py)
  echo "== Hugging Face Trainer baseline"
  PYTHONUNBUFFERED=1 bounded timeout 240 python3 "$root/bench/gpu/hf_trainer_gpt2.py" --bf16 \
    --steps 60 --warmup 10 --out "$W/hf-bf16.json" 2>&1 | tail -5
  PYTHONUNBUFFERED=1 bounded timeout 120 python3 "$root/bench/gpu/hf_trainer_gpt2.py" --steps 30 \
    --warmup 10 --out "$W/hf-fp32.json" 2>&1 | tail -5
}

eager() {  # the same step in Python PyTorch eager, timed, and profiled (bench/gpu/torch_eager_gpt2.py)
  echo "== PyTorch eager"
  PYTHONUNBUFFERED=1 bounded timeout 120 python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim foreach \
    --out "$W/eager-foreach.json" 2>&1 | tail -3
  PYTHONUNBUFFERED=1 bounded timeout 120 python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim fused \
    --out "$W/eager-fused.json" 2>&1 | tail -3
  PYTHONUNBUFFERED=1 bounded timeout 180 python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim fused --pad-vocab \
    --profile 3 --out "$W/eager-fused-padded.json" 2>&1 | tee "$W/eager-profile.txt" | tail -45
  echo "== torch.compile (for reference: what kernel fusion gives)"
  PYTHONUNBUFFERED=1 bounded timeout 300 python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim fused --pad-vocab \
    --compile --out "$W/compiled-fused-padded.json" 2>&1 | tail -3
}

compile() {  # compile [MB...]: Python eager, then torch.compile, the same step (default 8 16)
  local mb
  for mb in "$@"; do
    enough 40 "eager mb$mb" || return 0
    PYTHONUNBUFFERED=1 bounded python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim fused --pad-vocab \
      --micro-batch $mb --out "$W/eager-mb$mb.json" 2>&1 | tail -1
    enough 100 "torch.compile mb$mb" || return 0
    PYTHONUNBUFFERED=1 bounded python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim fused --pad-vocab \
      --micro-batch $mb --compile --out "$W/compiled-mb$mb.json" 2>&1 | tail -1
  done
}

LLAMA_SET=(--set model.preset=llama2-7b --set model.n_layer=22 --set model.n_embd=2048
           --set model.n_head=32 --set model.n_kv_head=4 --set model.ffn_dim=5632
           --set model.block_size=2048)  # TinyLlama 1.1B's shape
LLAMA_HF=(--arch llama --n_layer 22 --n_embd 2048 --n_head 32 --n_kv_head 4 --ffn_dim 5632
          --vocab_size 32000)
GPT2_HF=(--n_layer 12 --n_embd 768 --n_head 12 --vocab_size 50257)

generate() {  # generate NAME [--set k=v]...: bench-infer on bench/gpu/infer.yaml into $W/runs/NAME
  local name=$1; shift
  local t0=$SECONDS
  bounded "$BENCH_INFER" --config "$root/bench/gpu/infer.yaml" --out "$W/runs/$name" "$@" \
    >"$W/$name.log" 2>&1
  echo "== $name: exit $? in $((SECONDS - t0)) s"
  show "$name"
}

hf_generate() {  # hf_generate NAME ARGS...: generate() of the same model, same prompts' shape
  local name=$1; shift
  local t0=$SECONDS
  PYTHONUNBUFFERED=1 bounded python3 "$root/bench/hf_generate.py" --device cuda --dtype bf16 \
    --threads 8 --input 128 --output 128 --warmup 2 --runs 5 --out "$W/$name.json" "$@" \
    >"$W/$name.log" 2>&1
  echo "== $name: exit $? in $((SECONDS - t0)) s"
  python3 - "$W/$name.json" "$W/$name.log" <<'PY'
import json, statistics, sys
try:
    r = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print(open(sys.argv[2]).read()[-1500:])
    sys.exit()
t, e = statistics.mean(r["ttft_s"]), statistics.mean(r["e2e_s"])
print(f"ttft_mean_s={t:.4g} e2e_mean_s={e:.4g} tpot_mean_s={(e - t) / 127:.4g} peak={r.get('peak_bytes')}")
PY
}

infer() {  # bench-infer (a CUDA graph of the decode step, then without) beside generate(), sides
  # alternating from one shape to the next
  local b
  for b in 1 16; do
    enough 25 "infer gpt2 b$b" || return 0
    if ((b == 1)); then
      generate "infer-gpt2-b$b" --set infer.batch_size=$b
      hf_generate "hf-gpt2-b$b" "${GPT2_HF[@]}" --batch $b
      generate "infer-gpt2-b$b-nograph" --set infer.batch_size=$b --set infer.cuda_graph=false
    else
      generate "infer-gpt2-b$b-nograph" --set infer.batch_size=$b --set infer.cuda_graph=false
      hf_generate "hf-gpt2-b$b" "${GPT2_HF[@]}" --batch $b
      generate "infer-gpt2-b$b" --set infer.batch_size=$b
    fi
  done
  for b in 1 16; do
    enough 40 "infer llama b$b" || return 0
    if ((b == 1)); then
      hf_generate "hf-llama-b$b" "${LLAMA_HF[@]}" --batch $b
      generate "infer-llama-b$b" --set infer.batch_size=$b "${LLAMA_SET[@]}"
      generate "infer-llama-b$b-nograph" --set infer.batch_size=$b "${LLAMA_SET[@]}" \
        --set infer.cuda_graph=false
    else
      generate "infer-llama-b$b-nograph" --set infer.batch_size=$b "${LLAMA_SET[@]}" \
        --set infer.cuda_graph=false
      generate "infer-llama-b$b" --set infer.batch_size=$b "${LLAMA_SET[@]}"
      hf_generate "hf-llama-b$b" "${LLAMA_HF[@]}" --batch $b
    fi
  done
}

memory() {  # short runs, four at a time (the allocator's peak is per process): the memory grid
  local -a grid=(
    "gpt2-mb4-s512"
    "gpt2-mb4-s512-ckpt train.activation_checkpointing=true"
    "gpt2-mb4-s512-fused train.fused_loss=true"
    "gpt2-mb4-s512-fp32 train.dtype=fp32"
    "gpt2-mb4-s512-z1 train.zero_stage=1"
    "gpt2-mb4-s512-z2 train.zero_stage=2"
    "gpt2-mb4-s512-z3 train.zero_stage=3"
    "gpt2-mb4-s512-lora train.peft=lora"
    "gpt2-mb4-s512-offload train.offload_optimizer=true"
    "gpt2-mb8-s1024-ckpt-fused train.micro_batch=8 data.seq_len=1024 train.activation_checkpointing=true train.fused_loss=true"
    "gpt2m-mb4-s1024 model.preset=gpt2-medium data.seq_len=1024"
    "gpt2m-mb4-s1024-ckpt model.preset=gpt2-medium data.seq_len=1024 train.activation_checkpointing=true"
    "gpt2l-mb2-s1024-fp32 model.preset=gpt2-large train.micro_batch=2 data.seq_len=1024 train.dtype=fp32"
    "llama8l-mb4-s1024 model.n_layer=8 data.seq_len=1024"
    "llama8l-mb4-s1024-ckpt model.n_layer=8 data.seq_len=1024 train.activation_checkpointing=true"
    "llama8l-mb4-s1024-lora-fused model.n_layer=8 data.seq_len=1024 train.peft=lora train.fused_loss=true"
  )
  local spec name kv running=0
  local -a words
  for spec in "${grid[@]}"; do
    enough 20 "memory grid from ${spec%% *}" || break
    read -r -a words <<<"$spec"
    name=${words[0]}
    local -a sets=(--set train.steps=3 --set train.warmup_steps=1 --set eval.steps=0
                   --set train.micro_batch=4 --set data.seq_len=512
                   --set metrics.sample_interval_ms=0 --set metrics.system=false)
    [[ $name == llama* ]] && sets+=("${LLAMA_SET[@]}")
    for kv in "${words[@]:1}"; do sets+=(--set "$kv"); done
    NO_GPUMEM=1 TAIL=0 train "mem-$name" "${sets[@]}" &
    if ((++running >= 4)); then wait -n; ((running--)); fi
  done
  wait
  local -a names=()
  for spec in "${grid[@]}"; do names+=("mem-${spec%% *}"); done
  show "${names[@]}"
}

sweeps=0
sweep() {  # sweep FILE NAME: FILE's points one at a time into runs/NAME-N (N: 1, 2, ...)
  local gpu t0 rc n=$((++sweeps)) file=$1 name=$2-$sweeps
  [[ -x $BUILD/bin/bench-sweep ]] || { echo "== $name: skipped, no bench-sweep"; return 0; }
  enough 90 "$name" || return 0
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  t0=$SECONDS
  bounded "$BUILD/bin/bench-sweep" run "$file" --out "$W/runs/$name" --set "hardware.name=$gpu" \
    >"$W/$name.log" 2>&1
  rc=$?
  echo "== $name: exit $rc in $((SECONDS - t0)) s"
  tail -n 8 "$W/$name.log"
  "$BUILD/bin/bench-extract" -i "$W/runs/$name" -o "$W/$name.csv" 2>&1 | tail -3
}

collect() {  # the summaries and rank files in one archive, the traces in another (the device
  # returns at most 8 files of 16 MiB): traces in the order of interest (micro batch 8 first),
  # each compressed once, while the archive stays under 15 MiB
  tar -C "$W" --exclude='*/profile/*' -czf "$OUT/results.tar.gz.tmp" . &&
    mv "$OUT/results.tar.gz.tmp" "$OUT/results.tar.gz"
  local -a kept=()
  local dir size total=0
  for dir in "$W"/runs/gpt2-bf16-mb8-*/profile "$W"/runs/*/profile; do
    [[ -d $dir && ! -e $dir/.packed ]] || continue
    touch "$dir/.packed"
    gzip -q "$dir"/*.json 2>/dev/null || continue
    size=$(du -cb "$dir"/*.gz | tail -1 | cut -f1)
    ((total + size <= 15 * 1024 * 1024)) || continue
    total=$((total + size))
    kept+=("${dir#"$W"/}")
  done
  ((${#kept[@]})) && tar -C "$W" -cf "$OUT/traces.tar" "${kept[@]}"
  rm -rf "$W"
}

for phase in "$@"; do  # every phase known before anything runs
  case $phase in
    build|tiny|smoke|measure|mfu|chunks|kernels|graph|infer|memory|sweep|timecheck|hf|eager|compile|compile8|compile16|compile32) ;;
    *) echo "run.sh: unknown phase $phase" >&2; rm -rf "$W"; exit 2 ;;
  esac
done
nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
setup_deps || { echo "run.sh: cannot unpack the dependencies" >&2; exit 1; }
built=1
if [[ -z ${BENCH_TRAIN:-} ]]; then
  if build; then
    BENCH_TRAIN=$BUILD/bin/bench-train
    BENCH_INFER=${BENCH_INFER:-$BUILD/bin/bench-infer}
  else
    built=0
  fi
fi
BENCH_INFER=${BENCH_INFER:-$(dirname "${BENCH_TRAIN:-/}")/bench-infer}
for phase in "$@"; do
  case $phase in
    build) ;;
    tiny|smoke|measure|mfu|chunks|kernels|graph|infer|memory)
      if ((built)); then $phase; else echo "== $phase: skipped, no bench-train and bench-infer"; fi ;;
    sweep) if ((built)); then sweep "$root/bench/gpu/memory.yaml" gpu-sweep; fi ;;
    timecheck) if ((built)); then sweep "$root/bench/gpu/time_check.yaml" time-check; fi ;;
    hf) hf ;;
    eager) eager ;;
    compile) compile 8 16 ;;
    compile8) compile 8 ;;
    compile16) compile 16 ;;
    compile32) compile 32 ;;
    *) echo "run.sh: unknown phase $phase" >&2; exit 2 ;;
  esac
done
collect
((built))
