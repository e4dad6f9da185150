#!/bin/bash
# bench/pbt/run.sh: Population Based Training against random search with FIFO on
# tune-train's MLP on CPU (issue 12, "Proof"; results in bench/pbt/README.md and
# docs/pbt.md, "PBT on tune-train").
#
# For each seed S (the space's "seed": it draws the 8 starting configurations, the same 8
# for every arm) and each arm, one `tune run` of 8 trials of the same command
# (MLP 784-256-256-10, Fashion-MNIST's first TRAIN_LIMIT training and VAL_LIMIT test
# images, EPOCHS epochs, batch 64, trainer --seed 0, one thread) over the same space
# (lr, momentum, weight_decay), max_concurrent 2, under nice -n 19:
#   pbt      PBT, perturbation_interval INTERVAL, quantile 0.25, resample 0.25, factors
#            1.2/0.8, mutating all three; constant learning rate (PBT finds the schedule)
#   fifo     FIFO: the 8 configurations, each trained for EPOCHS epochs, constant lr
#   fifo_cos FIFO with tune-train's default cosine decay: a stronger random search
# Compute: each arm trains 8 x EPOCHS trial-epochs (a PBT clone continues from its donor's
# epoch, so it may train fewer); the trial-seconds of every attempt are measured by
# bench/pbt/timed.sh, the CPU seconds of the whole run by /usr/bin/time.
# Per run it records: the best final val_accuracy (the trial `tune best` picks: best last
# result), the final val_accuracy of the trial with the best val_accuracy at any epoch, the
# population's mean final val_accuracy, the held-out accuracy of the picked trial (its
# final checkpoint on test images 2001-10000, which no decision saw), the trial-seconds,
# CPU seconds, wall seconds, trial-epochs trained, the exploits and how many of them came
# at the final epoch. Then analyse.py prints the table.
# A benchmark, not a test: it never fails on slow or surprising numbers.
#
# Usage: bench/pbt/run.sh [build-dir]
#   SEEDS="1 2 ... 20"  ARMS="pbt fifo fifo_cos"  EPOCHS=16 INTERVAL=4
#   TRAIN_LIMIT=6000 VAL_LIMIT=2000  OUT=dir (keeps runs.tsv, the first PBT run's database
#   and its HTML report; default: a temporary folder, removed)  DEADLINE=epoch-seconds (no
#   new seed starts after it)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-$HERE/../../build}" && pwd)
TUNE="$B/bin/tune"
TRAIN="$B/bin/tune-train"
for x in "$TUNE" "$TRAIN"; do
    [ -x "$x" ] || { echo "run.sh: no $x: build first (cmake --build build)" >&2; exit 2; }
done
DATA=/usr/share/datasets/fashion-mnist
[ -r "$DATA/train-images-idx3-ubyte.gz" ] ||
    { echo "run.sh: no Fashion-MNIST in $DATA (apt-get install dataset-fashion-mnist)" >&2; exit 2; }
SEEDS=${SEEDS:-$(seq 1 20)}
ARMS=${ARMS:-pbt fifo fifo_cos}
EPOCHS=${EPOCHS:-16}
INTERVAL=${INTERVAL:-4}
TRAIN_LIMIT=${TRAIN_LIMIT:-6000}
VAL_LIMIT=${VAL_LIMIT:-2000}
DEADLINE=${DEADLINE:-0}
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    W=$(mktemp -d "$OUT/work.XXXXXX")
    trap 'rm -rf "$W"' EXIT
else
    OUT=$(mktemp -d)
    W=$OUT/work
    mkdir -p "$W"
    trap 'rm -rf "$OUT"' EXIT
fi
CACHE=$W/cache
RUNS=$OUT/runs.tsv
printf 'arm\tseed\tbest_final\tbest_any_final\tmean_final\theldout\ttrial_s\tcpu_s\twall_s\tepochs\texploits\tfinal_exploits\n' >"$RUNS"

# space.json for (arm, seed)
space() {
    local arm=$1 seed=$2 sched schedule=constant
    case $arm in
    pbt) sched="{\"type\": \"pbt\", \"time_attr\": \"training_iteration\",
      \"perturbation_interval\": $INTERVAL, \"quantile_fraction\": 0.25,
      \"resample_probability\": 0.25, \"perturbation_factors\": [1.2, 0.8],
      \"keep_checkpoints\": 2, \"max_t\": $EPOCHS}" ;;
    fifo) sched='{"type": "fifo"}' ;;
    fifo_cos) sched='{"type": "fifo"}' schedule=cosine ;;
    *) echo "run.sh: unknown arm $arm (pbt, fifo, fifo_cos)" >&2; exit 2 ;;
    esac
    cat <<EOF
{"name": "$arm", "metric": "val_accuracy", "mode": "max", "num_samples": 8,
 "max_concurrent": 2, "seed": $seed,
 "command": ["$HERE/timed.sh", "$W/run/times", "$TRAIN", "--model", "mlp", "--threads", "1",
   "--epochs", "$EPOCHS", "--train-limit", "$TRAIN_LIMIT", "--val-limit", "$VAL_LIMIT",
   "--seed", "0", "--batch-size", "64", "--schedule", "$schedule", "--cache-dir", "$CACHE",
   "--lr", "{lr}", "--momentum", "{momentum}", "--weight-decay", "{weight_decay}"],
 "resources": {"gpus_per_trial": 0, "cpus_per_trial": 1},
 "space": {"lr": {"loguniform": [0.0001, 0.5]}, "momentum": {"uniform": [0.0, 0.99]},
           "weight_decay": {"loguniform": [1e-06, 0.01]}},
 "scheduler": $sched}
EOF
}

q() { "$TUNE" query --db "$W/run/run.db" --csv "$1" | tail -n +2; }

# The accuracy of a checkpoint on test images 1..10000 and from it on 2001..10000: one
# more epoch at lr 1e-30 without momentum or weight decay leaves the weights as they are
# (the 2,000-image accuracy it prints equals the trial's last one), then evaluates.
heldout() { # checkpoint acc_on_first_VAL_LIMIT
    local ck=$1 a=$2 out
    [ -r "$ck" ] || { echo nan; return; }
    rm -rf "$W/eval"
    out=$(TUNE_RESUME_FROM="$ck" nice -n 19 "$TRAIN" --model mlp --threads 1 \
        --epochs $((EPOCHS + 1)) --train-limit "$TRAIN_LIMIT" --val-limit 10000 --seed 0 \
        --schedule constant --cache-dir "$CACHE" --lr 1e-30 --momentum 0 --weight-decay 0 \
        --checkpoint-dir "$W/eval" 2>/dev/null | tail -n 1) || { echo nan; return; }
    local a10
    a10=$(printf '%s' "$out" | sed -n 's/.*"val_accuracy": \([0-9.]*\).*/\1/p')
    [ -n "$a10" ] || { echo nan; return; }
    awk -v a10="$a10" -v a="$a" -v n="$VAL_LIMIT" \
        'BEGIN { printf "%.6f\n", (a10 * 10000 - a * n) / (10000 - n) }'
}

t_start=$(date +%s)
report_done=0
for s in $SEEDS; do
    if [ "$DEADLINE" -gt 0 ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then
        echo "run.sh: DEADLINE reached; seeds from $s on not run" >&2
        break
    fi
    for arm in $ARMS; do
        rm -rf "$W/run"
        mkdir -p "$W/run"
        space "$arm" "$s" >"$W/run/space.json"
        (cd "$W/run" && /usr/bin/time -f '%e %U %S' -o "$W/run/time" \
            nice -n 19 "$TUNE" run space.json --db run.db --gpus none --quiet \
            >"$W/run/out" 2>&1) || { cat "$W/run/out" >&2; exit 1; }
        read -r wall usr sys <"$W/run/time"
        # the picked trial: best last val_accuracy, ties to the lower trial_no (as tune best)
        pick=$(q "SELECT last_metric, json_extract(last_result, '\$.checkpoint')
                  FROM trial_summary ORDER BY last_metric DESC, trial_no LIMIT 1")
        best_final=${pick%%,*}
        ck=${pick#*,}
        case $ck in /*) ;; *) ck="$W/run/$ck" ;; esac
        best_any=$(q "SELECT last_metric FROM trial_summary ORDER BY best_metric DESC, trial_no
                      LIMIT 1")
        mean_final=$(q "SELECT avg(last_metric) FROM trial_summary")
        n_ok=$(q "SELECT count(*) FROM trial_summary WHERE status = 'TERMINATED'
                  AND iterations > 0")
        [ "$n_ok" = 8 ] || echo "run.sh: $arm seed $s: only $n_ok of 8 trials ended with results" >&2
        exploits=$(q "SELECT count(*) FROM lineage")
        final_ex=$(q "SELECT count(*) FROM lineage WHERE donor_iteration >= $EPOCHS")
        epochs=$(cat "$W"/run/tune_results/"$arm"/trial_*/stdout.log | grep -c '"training_iteration"' || true)
        trial_s=$(awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ { s += $2 - $1 } END { printf "%.2f", s }' \
            "$W/run/times")
        held=$(heldout "$ck" "$best_final")
        printf '%s\t%s\t%s\t%s\t%.6f\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\n' "$arm" "$s" "$best_final" \
            "$best_any" "$mean_final" "$held" "$trial_s" "$(awk -v u="$usr" -v s="$sys" 'BEGIN { print u + s }')" "$wall" \
            "$epochs" "$exploits" "$final_ex" | tee -a "$RUNS"
        if [ "$arm" = pbt ] && [ "$report_done" = 0 ]; then
            cp "$W/run/run.db" "$OUT/pbt_seed$s.db"
            "$TUNE" report pbt --db "$OUT/pbt_seed$s.db" -o "$OUT/pbt_seed$s.html" >/dev/null
            report_done=1
        fi
    done
done
echo "$(($(wc -l <"$RUNS") - 1)) runs in $(($(date +%s) - t_start)) s of wall time;" \
    "load average now $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$HERE/analyse.py" "$RUNS" "$EPOCHS"
