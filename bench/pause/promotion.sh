#!/bin/sh
# bench/pause/promotion.sh: ASHA's promotion variant against its stopping variant on the
# simulator (docs/pbt.md, "ASHA's promotion variant"): compute spent (trial-seconds) and
# the regret of the incumbent (the best trial by its last result, as `tune best` picks
# it) over many seeds, with 4 and 16 workers, on two tasks:
#   mlp    the recorded MLP table (bench/tables/mlp.csv.gz, 400 configurations x 20
#          epochs; docs/pbt.md's figures were made on its first 179); regret against the table's best last val_loss;
#   synth  the synthetic family without noise (docs/simulate.md), a new family per seed,
#          over bench/pause/synth.space.json (four continuous parameters); regret against
#          the family's best value at max_t, computed from its formula.
# Each run: 400 trials, ASHA max_t 20, grace_period 1, reduction_factor 3, a fresh
# in-memory database. Prints one table (bench/pause/promotion.py computes the means and
# bootstrap 95% intervals). A benchmark, not a test.
# Usage: bench/pause/promotion.sh [build-dir]
#   SEEDS=30 WORKERS="4 16" SYNTH=noise=0 (more of the family's spec, e.g. noise=0,cross=0)
set -eu
B=${1:-build}
TUNE="$B/bin/tune"
[ -x "$TUNE" ] || { echo "promotion.sh: no $TUNE: build first (cmake --build $B)" >&2; exit 2; }
HERE=$(dirname "$0")
ROOT="$HERE/../.."
SEEDS=${SEEDS:-30}
WORKERS=${WORKERS:-"4 16"}
SYNTH=${SYNTH:-noise=0}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SCHED='"scheduler": {"type": "asha", "variant": "VARIANT", "max_t": 20, "grace_period": 1, "reduction_factor": 3},'

# space.json for (task, variant, seed): the task's space with this scheduler and seed, and
# no max_concurrent (the recording's 2 would cap --workers)
space() { # task variant seed out
    case $1 in
    mlp) src="$ROOT/bench/tables/mlp.space.json" ;;
    synth) src="$HERE/synth.space.json" ;;
    esac
    sed -e "s/^  \"scheduler\": .*/  $(printf '%s' "$SCHED" | sed "s/VARIANT/$2/")/" \
        -e "s/\"seed\": [0-9]*/\"seed\": $3/" -e 's/"max_concurrent": [0-9]*, //' "$src" >"$4"
    grep -q "\"variant\": \"$2\"" "$4" && grep -q "\"seed\": $3[,}]" "$4" &&
        ! grep -q max_concurrent "$4" ||
        { echo "promotion.sh: could not rewrite $src" >&2; exit 2; }
}

: >"$TMP/runs.tsv"
t0=$(date +%s)
for task in mlp synth; do
    for w in $WORKERS; do
        for s in $(seq "$SEEDS"); do
            for v in stopping promotion; do
                space "$task" "$v" "$s" "$TMP/space.json"
                if [ "$task" = mlp ]; then
                    set -- --table "$ROOT/bench/tables/mlp.csv.gz"
                else
                    set -- --synthetic "seed=$s,$SYNTH"
                fi
                nice -n 19 "$TUNE" simulate "$TMP/space.json" "$@" --workers "$w" \
                    --db :memory: --quiet >"$TMP/out" 2>&1 ||
                    { cat "$TMP/out" >&2; exit 1; }
                hours=$(sed -n 's/.*compute spent \([0-9.]*\) trial-hours.*/\1/p' "$TMP/out")
                best=$(sed -n 's/^Best trial: .* with val_loss=\([-0-9.eE+]*\) .*/\1/p' "$TMP/out")
                [ -n "$hours" ] && [ -n "$best" ] ||
                    { echo "promotion.sh: cannot read the summary:" >&2; cat "$TMP/out" >&2; exit 1; }
                printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$task" "$w" "$v" "$s" "$hours" "$best" \
                    >>"$TMP/runs.tsv"
            done
        done
    done
done
t1=$(date +%s)
[ -z "${KEEP_RUNS:-}" ] || cp "$TMP/runs.tsv" "$KEEP_RUNS"
echo "$(wc -l <"$TMP/runs.tsv") simulated runs in $((t1 - t0)) s of wall time"
/usr/bin/python3 "$HERE/promotion.py" "$TMP/runs.tsv" "$ROOT/bench/tables/mlp.csv.gz" "$SYNTH"
