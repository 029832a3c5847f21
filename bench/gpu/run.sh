#!/bin/bash
# Builds bench-train against the machine's CUDA libtorch (a PyTorch wheel) and measures it: the
# GPU figures of docs/performance.md. Needs .gpu/deps.tar.xz from bench/gpu/pack-deps.sh (Debian's
# Open MPI, HDF5, yaml-cpp and Boost, for machines that lack them) unless they are installed.
#
#   bench/gpu/run.sh build            configure and build bench-train into $BUILD (build/cuda)
#   bench/gpu/run.sh tiny             the tiny presets, fp32 and bf16
#   bench/gpu/run.sh smoke            tiny, then GPT-2 124M for a few steps
#   bench/gpu/run.sh measure          the figures: GPT-2 124M bf16 mb8 seq1024 and variants
#   bench/gpu/run.sh mfu              micro batch 8 to 64 to the best MFU, the chunked
#                                     loss against the whole logits at 8, a profile of each
#   bench/gpu/run.sh hf               the Hugging Face Trainer baseline on the same shapes
#   bench/gpu/run.sh eager            the same step in Python PyTorch eager, and its profile
#
# Results and logs go to $OUT (default .gpu/out). BENCH_TRAIN=path skips the build; TORCH_PREFIX
# names libtorch's CMake prefix when python3 has no torch.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$root/.gpu/out}
BUILD=${BUILD:-$root/build/cuda}
A=x86_64-linux-gnu
D=/tmp/sweepbench-deps
mkdir -p "$OUT"
W=$(mktemp -d "$OUT/work.XXXXXX")  # logs and runs, archived into $OUT/results.tar.gz at the end

setup_deps() {
  if [[ -f $root/.gpu/deps.tar.xz && ! -d $D/usr ]]; then
    mkdir -p "$D" && tar -C "$D" -xJf "$root/.gpu/deps.tar.xz" || return 1
  fi
  [[ -d $D/usr ]] || return 0
  # Open MPI and PMIx relocate to where they were unpacked; the system's libraries come before
  # the packed base libraries, which only fill gaps.
  export OPAL_PREFIX=$D/usr PMIX_PREFIX=$D/usr/lib/$A/pmix2
  export PATH=$D/usr/bin:$PATH
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
  cmake --build "$BUILD" --target bench-train -j "$(nproc)" 2>&1 | tee "$W/build.log" | tail -40
  local rc=${PIPESTATUS[0]}
  echo "build: rc=$rc in $((SECONDS - t0)) s"
  return "$rc"
}

train() {  # train NAME [--set k=v]...: one run of bench-train into $W/runs/NAME
  local name=$1; shift
  local dir=$W/runs/$name
  local t0=$SECONDS
  "$BENCH_TRAIN" --config "$root/bench/gpu/point.yaml" --out "$dir" "$@" >"$W/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc in $((SECONDS - t0)) s"
  tail -25 "$W/$name.log"
  return 0
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

mfu() {  # MFU by micro batch (the chunked head loss keeps 32 and 64 in memory)
  train gpt2-bf16-mb8-logits --set train.steps=40 --set train.warmup_steps=10 \
    --set metrics.profile_steps=12
  for mb in 8 16 32 64; do
    train "gpt2-bf16-mb$mb-fused" --set train.steps=40 --set train.warmup_steps=10 \
      --set train.micro_batch=$mb --set train.fused_loss=true --set metrics.profile_steps=12
  done
  # Step 1's loss, chunked against whole logits: equal within bf16's rounding.
  python3 - "$W/runs" <<'PY'
import json, sys
runs = sys.argv[1]
for name in ("gpt2-bf16-mb8-logits", "gpt2-bf16-mb8-fused", "gpt2-bf16-mb16-fused",
             "gpt2-bf16-mb32-fused", "gpt2-bf16-mb64-fused"):
    try:
        m = json.load(open(f"{runs}/{name}/summary.json"))["metrics"]
        print(name, "mfu", m.get("mfu"), "tokens/s", m.get("train_tokens_per_second"),
              "peak bytes", m.get("mem_peak_bytes"))
    except (OSError, KeyError, ValueError) as e:
        print(name, "no summary:", e)
PY
}

hf() {  # the Hugging Face Trainer on the same shapes (bench/gpu/hf_trainer_gpt2.py)
  echo "== Hugging Face Trainer baseline"
  PYTHONUNBUFFERED=1 timeout 240 python3 "$root/bench/gpu/hf_trainer_gpt2.py" --bf16 --steps 60 \
    --warmup 10 --out "$W/hf-bf16.json" 2>&1 | tail -5
  PYTHONUNBUFFERED=1 timeout 120 python3 "$root/bench/gpu/hf_trainer_gpt2.py" --steps 30 \
    --warmup 10 --out "$W/hf-fp32.json" 2>&1 | tail -5
}

eager() {  # the same step in Python PyTorch eager, timed, and profiled (bench/gpu/torch_eager_gpt2.py)
  echo "== PyTorch eager"
  PYTHONUNBUFFERED=1 timeout 120 python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim foreach \
    --out "$W/eager-foreach.json" 2>&1 | tail -3
  PYTHONUNBUFFERED=1 timeout 120 python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim fused \
    --out "$W/eager-fused.json" 2>&1 | tail -3
  PYTHONUNBUFFERED=1 timeout 180 python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim fused --pad-vocab \
    --profile 3 --out "$W/eager-fused-padded.json" 2>&1 | tee "$W/eager-profile.txt" | tail -45
  echo "== torch.compile (for reference: what kernel fusion gives)"
  PYTHONUNBUFFERED=1 timeout 300 python3 "$root/bench/gpu/torch_eager_gpt2.py" --optim fused --pad-vocab \
    --compile --out "$W/compiled-fused-padded.json" 2>&1 | tail -3
}

collect() {  # the summaries and rank files, in one archive (the device returns few files)
  tar -C "$W" -czf "$OUT/results.tar.gz.tmp" . && mv "$OUT/results.tar.gz.tmp" "$OUT/results.tar.gz"
  rm -rf "$W"
}

nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
setup_deps || { echo "run.sh: cannot unpack the dependencies" >&2; exit 1; }
built=1
if [[ -z ${BENCH_TRAIN:-} ]]; then
  if build; then
    BENCH_TRAIN=$BUILD/bin/bench-train
    cp "$BENCH_TRAIN" "$OUT/bench-train"
  else
    built=0
  fi
fi
for phase in "$@"; do
  case $phase in
    build) ;;
    tiny|smoke|measure|mfu) if ((built)); then $phase; else echo "== $phase: skipped, no bench-train"; fi ;;
    hf) hf ;;
    eager) eager ;;
    *) echo "run.sh: unknown phase $phase" >&2; exit 2 ;;
  esac
done
collect
((built))
