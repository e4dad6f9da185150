#!/bin/sh
# bench/pause/cost.sh: what a pause and resume costs tune-train on CPU (docs/pbt.md): the
# same two epochs run straight through, and run as epoch 1, exit (--stop-after-epoch, as a
# paused trial does after its checkpoint), then a new process that loads the checkpoint
# and runs epoch 2 (TUNE_RESUME_FROM, --resume). The difference is the pause's cost: a
# process start, the data load, the checkpoint written and read. Also each part alone.
# A benchmark, not a test: it prints numbers, it never fails on slow ones.
# Usage: bench/pause/cost.sh [build-dir]   (REPS=5 HIDDEN=256 LAYERS=2 TRAIN_LIMIT=6000)
set -eu
B=${1:-build}
T="$B/bin/tune-train"
[ -x "$T" ] || { echo "cost.sh: no $T: build first (cmake --build $B)" >&2; exit 2; }
REPS=${REPS:-5}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
ARGS="--model mlp --hidden ${HIDDEN:-256} --layers ${LAYERS:-2} --epochs 2 --threads 1 \
--train-limit ${TRAIN_LIMIT:-6000} --val-limit 1000 --cache-dir $W/cache"
now() { date +%s.%N; }
# the first run decodes the data into the cache; every timed run reads the cache
$T $ARGS --checkpoint-dir "$W/warm" >/dev/null 2>&1
: >"$W/times"
for r in $(seq "$REPS"); do
    rm -rf "$W/a" "$W/b" "$W/t"
    t0=$(now)
    $T $ARGS --checkpoint-dir "$W/a" >/dev/null 2>&1
    t1=$(now)
    $T $ARGS --stop-after-epoch 1 --checkpoint-dir "$W/b" >/dev/null 2>&1
    t2=$(now)
    TUNE_RESUME_FROM="$W/b/checkpoint.bin" $T $ARGS --resume --checkpoint-dir "$W/b" >/dev/null 2>&1
    t3=$(now)
    # the parts: a start with a tiny epoch and no checkpoint; the same writing one; a
    # resume that loads it and has nothing left to train (--epochs 1 of 1 done)
    $T $ARGS --epochs 1 --train-limit 64 --val-limit 64 >/dev/null 2>&1
    t4=$(now)
    $T $ARGS --epochs 1 --train-limit 64 --val-limit 64 --checkpoint-dir "$W/t" >/dev/null 2>&1
    t5=$(now)
    TUNE_RESUME_FROM="$W/t/checkpoint.bin" $T $ARGS --epochs 1 --train-limit 64 --val-limit 64 \
        --resume --checkpoint-dir "$W/t" >/dev/null 2>&1 || true
    t6=$(now)
    echo "$t0 $t1 $t2 $t3 $t4 $t5 $t6" >>"$W/times"
done
size=$(stat -c %s "$W/b/checkpoint.bin")
awk -v size="$size" -v reps="$REPS" '
function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
    if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ n++; s[n] = $2 - $1; p[n] = $4 - $2; o[n] = p[n] - s[n]; st[n] = $5 - $4;
  w[n] = ($6 - $5) - ($5 - $4); l[n] = $7 - $6 }
END {
  printf "tune-train mlp on CPU, 1 thread, median of %d runs\n", reps
  printf "  two epochs straight:                  %7.3f s\n", med(s, n)
  printf "  epoch 1, exit, resume, epoch 2:       %7.3f s\n", med(p, n)
  printf "  cost of one pause and resume:         %7.3f s\n", med(o, n)
  printf "  parts: process start + data load      %7.3f s (a tiny epoch, no checkpoint)\n", med(st, n)
  printf "         checkpoint write (%.2f MB)     %7.3f s\n", size / 1e6, med(w, n)
  printf "         start + checkpoint load        %7.3f s (a resume with nothing left to train)\n", med(l, n)
}' "$W/times"
