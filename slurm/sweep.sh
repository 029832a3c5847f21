#!/bin/bash
# sweepbench: run a sweep's points as a SLURM batch job (docs/running.md).
#
#   sbatch slurm/sweep.sh SWEEP.yaml [OUT] [RUN OPTIONS...]
#       one allocation runs every point that is not ok yet, one after another (srun job steps)
#   sbatch --array=0-15%4 slurm/sweep.sh SWEEP.yaml [OUT] [RUN OPTIONS...]
#       a job array: task i runs the point with index i (`bench-sweep plan SWEEP.yaml` lists them)
#
# OUT defaults to runs/<sweep file name without .yaml>; relative paths are taken from the
# directory you submit from. RUN OPTIONS go to `bench-sweep run` (--scenario, --set, --force,
# --retry-failed...). Finished points are kept, so submitting again goes on where it stopped;
# `bench-sweep submit` groups points by the resources they ask for and writes these jobs for you.
#
# The defaults below are a starting point: edit them, or override any of them on the sbatch
# command line (sbatch -p gpu -t 1:00:00 --gpus-per-node=8 slurm/sweep.sh ...).
#SBATCH --job-name=sweepbench
#SBATCH --nodes=1
#SBATCH --exclusive
#SBATCH --time=04:00:00
#SBATCH --output=slurm-sweepbench-%j.out
# The time-limit warning: 120 s before the end SLURM sends SIGUSR1 to bench-sweep, whose running
# point stops after its current step and records `timeout`, then the job requeues itself (up to
# slurm.max_requeue times) so the point runs again. --requeue lets it, and lets SLURM requeue the
# job when it is preempted; the log of a requeued run continues the first one's.
#SBATCH --signal=B:USR1@120
#SBATCH --requeue
#SBATCH --open-mode=append
# Ask for GPUs on GPU clusters, e.g.:
##SBATCH --gpus-per-node=8
##SBATCH --partition=gpu
set -euo pipefail

fail() {
  echo "slurm/sweep.sh: error: $*" >&2
  exit 2
}

[ $# -ge 1 ] || fail "no sweep file given
usage: sbatch [--array=0-N] slurm/sweep.sh SWEEP.yaml [OUT] [bench-sweep run options...]"
sweep=$1
shift
[ -f "$sweep" ] || fail "sweep file '$sweep' not found (relative paths are taken from $PWD)"
out=""
if [ $# -ge 1 ] && [ "${1#-}" = "$1" ]; then
  out=$1
  shift
fi
if [ -z "$out" ]; then
  name=$(basename "$sweep")
  out="runs/${name%.*}"
fi

# bench-sweep: $SWEEPBENCH_BIN_DIR, then PATH, then the build tree of the directory the job was
# submitted from (a checkout of sweepbench).
bench_sweep=""
for candidate in ${SWEEPBENCH_BIN_DIR:+"$SWEEPBENCH_BIN_DIR/bench-sweep"} \
                 "$(command -v bench-sweep || true)" \
                 "${SLURM_SUBMIT_DIR:-$PWD}/build/release/bin/bench-sweep"; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    bench_sweep=$candidate
    break
  fi
done
[ -n "$bench_sweep" ] || fail "bench-sweep not found: not in \$SWEEPBENCH_BIN_DIR (${SWEEPBENCH_BIN_DIR:-unset}), \
not on PATH, not in ${SLURM_SUBMIT_DIR:-$PWD}/build/release/bin.
Fix: build it (scripts/quickstart, or cmake --build build/release), then submit from the checkout,
or export SWEEPBENCH_BIN_DIR=/path/to/bin (sbatch passes your environment on)"

if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
  exec "$bench_sweep" run "$sweep" --out "$out" --only "$SLURM_ARRAY_TASK_ID" "$@"
fi
exec "$bench_sweep" run "$sweep" --out "$out" "$@"
