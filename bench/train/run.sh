#!/bin/bash
# bench/train/run.sh: tune-train against PyTorch DDP (Debian's python3-torch, CPU, gloo,
# OpenBLAS forced to SkylakeX) on the same models, data, global batch 128 and thread
# counts, in one run: GEMM GFLOP/s at the trainer's shapes (ours vs OpenBLAS), samples/s
# and their ratio, accuracy after the same epochs, time to the first training step, and
# achieved GFLOP/s against the 2 cores' ~370 GFLOP/s peak.
# Not a test (nothing here fails on slow numbers). Runs take a few minutes; run it on a
# quiet machine. Needs: apt-get install python3-torch libopenblas0-openmp.
#
# Usage: bench/train/run.sh [build-dir]     (default build-train; env: REPS, REPS_CNN,
#        EPOCHS_MLP, EPOCHS_CNN, SKIP_TORCH=1, SKIP_GEMM=1)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-train}
TRAIN=$BUILD/bin/tune-train
PY=/usr/bin/python3
OBLAS=/usr/lib/x86_64-linux-gnu/openblas-openmp
REPS=${REPS:-3}
REPS_CNN=${REPS_CNN:-1}
EPOCHS_MLP=${EPOCHS_MLP:-2}
EPOCHS_CNN=${EPOCHS_CNN:-1}
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
export OPENBLAS_CORETYPE=SkylakeX

[ -x "$TRAIN" ] || { echo "run.sh: build tune-train first ($TRAIN not found)" >&2; exit 1; }
[ -r "$DATA/train-images-idx3-ubyte.gz" ] || {
  echo "run.sh: Fashion-MNIST not found in $DATA (apt-get install dataset-fashion-mnist)" >&2
  exit 1
}
HAVE_TORCH=1
if [ "${SKIP_TORCH:-0}" = 1 ] || ! LD_LIBRARY_PATH=$OBLAS $PY -c 'import torch' 2>/dev/null; then
  HAVE_TORCH=0
  echo "run.sh: python3-torch not usable: tune-train numbers only" >&2
fi
[ -d "$OBLAS" ] || echo "run.sh: $OBLAS missing (apt-get install libopenblas0-openmp)" >&2

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RES=$WORK/results.tsv
: > "$RES"

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "== load before: $(cut -d' ' -f1-3 /proc/loadavg)"

if [ "${SKIP_GEMM:-0}" != 1 ]; then
  echo "== GEMM at the trainer's shapes"
  cc -O3 -fno-tree-loop-distribute-patterns -D_GNU_SOURCE -I"$ROOT/train" \
    "$ROOT/bench/train/gemm_bench.c" "$ROOT/train/gemm.c" "$ROOT/train/pool.c" \
    -o "$WORK/gemm_bench" -lpthread -ldl -lm
  LD_LIBRARY_PATH=$OBLAS nice "$WORK/gemm_bench"
fi

# one run of each implementation; appends "impl model ranks threads samples/s acc first_s"
run_tune() { # model epochs ranks threads
  local out=$WORK/tune.out err=$WORK/tune.err
  nice "$TRAIN" --model "$1" --epochs "$2" --ranks "$3" --threads "$4" --batch-size 128 \
    --lr 0.05 --momentum 0.9 --seed 0 --data "$DATA" > "$out" 2> "$err" || {
    cat "$err" >&2; return 1; }
  local first
  first=$(sed -n 's/.*first training step after \([0-9.]*\) s.*/\1/p' "$err")
  tail -1 "$out" | $PY -c 'import json,sys; r=json.loads(sys.stdin.read());
print("tune", sys.argv[1], sys.argv[2], sys.argv[3], r["samples_per_s"], r["val_accuracy"], sys.argv[4])' \
    "$1" "$3" "$4" "$first" >> "$RES"
}

run_torch() { # model epochs ranks threads
  [ $HAVE_TORCH = 1 ] || return 0
  local out=$WORK/torch.out
  BENCH_T0=$(date +%s.%N) OMP_NUM_THREADS=$4 LD_LIBRARY_PATH=$OBLAS nice $PY \
    "$ROOT/bench/train/torch_ddp.py" --model "$1" --epochs "$2" --ranks "$3" --threads "$4" \
    --batch-size 128 --lr 0.05 --momentum 0.9 --seed 0 --data "$DATA" \
    --port $((20000 + RANDOM % 20000)) > "$out" 2> "$WORK/torch.err" || {
    tail -5 "$WORK/torch.err" >&2; return 1; }
  tail -1 "$out" | $PY -c 'import json,sys; r=json.loads(sys.stdin.read());
print("torch", sys.argv[1], sys.argv[2], sys.argv[3], r["samples_per_s"], r["val_accuracy"], r["first_step_s"])' \
    "$1" "$3" "$4" >> "$RES"
}

# interleave the implementations and configurations, repeat, compare medians
for model in mlp cnn; do
  reps=$REPS epochs=$EPOCHS_MLP
  [ $model = cnn ] && reps=$REPS_CNN epochs=$EPOCHS_CNN
  for rep in $(seq "$reps"); do
    for cfg in "1 1" "1 2" "2 1"; do
      set -- $cfg
      echo "== $model, $1 rank(s) x $2 thread(s), run $rep of $reps" >&2
      run_tune $model $epochs "$1" "$2"
      run_torch $model $epochs "$1" "$2"
    done
  done
done

echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"
$PY - "$RES" "$EPOCHS_MLP" "$EPOCHS_CNN" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
ep = {"mlp": sys.argv[2], "cnn": sys.argv[3]}
# multiply-adds per sample: forward F, weight gradients F, input gradients F minus the
# first layer's (never computed); 2 flops each
F = {"mlp": 784 * 256 + 256 * 256 + 256 * 10,
     "cnn": 24 * 24 * 32 * 25 + 8 * 8 * 64 * 800 + 1024 * 128 + 128 * 10}
first = {"mlp": 784 * 256, "cnn": 24 * 24 * 32 * 25}
PEAK = 370.0
def med(impl, model, r, t, col):
    v = [float(x[col]) for x in rows if x[:4] == [impl, model, r, t] and x[col] != "None"]
    return statistics.median(v) if v else float("nan")
print("\n%-4s %-9s %10s %10s %6s %8s %8s %9s %9s %14s" % (
    "", "ranksxthr", "tune/s", "torch/s", "ratio", "tune acc", "torch acc", "tune 1st", "torch 1st",
    "tune GFLOP/s"))
for model in ("mlp", "cnn"):
    for r, t in (("1", "1"), ("1", "2"), ("2", "1")):
        a, b = med("tune", model, r, t, 4), med("torch", model, r, t, 4)
        gf = a * 2 * (3 * F[model] - first[model]) * 1e-9
        print("%-4s %-9s %10.0f %10.0f %6.2f %8.4f %8.4f %8.3fs %8.3fs %7.1f (%2.0f%%)" % (
            model, r + " x " + t, a, b, a / b if b == b and b else float("nan"),
            med("tune", model, r, t, 5), med("torch", model, r, t, 5),
            med("tune", model, r, t, 6), med("torch", model, r, t, 6), gf, 100 * gf / PEAK))
    a21, a12 = med("tune", model, "2", "1", 4), med("tune", model, "1", "2", 4)
    print("%-4s tune-train 2 ranks x 1 thread / 1 rank x 2 threads = %.2f (accuracy after %s "
          "epoch(s))" % (model, a21 / a12, ep[model]))
print("(samples/s: median of runs; 1st: launch to first training step; peak ~%.0f GFLOP/s)" % PEAK)
EOF
