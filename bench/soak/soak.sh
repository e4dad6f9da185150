#!/usr/bin/env bash
# soak: tune under load with fake GPUs: CONC trials at once (default 200), TRIALS in all
# (default 5,000), each a cheap sleeping synth_trial reporting 10 results/s for ITERS
# iterations. Samples tune's RSS every second, timestamps every status block tune prints
# (--status-interval 1, stdout not a terminal), and at the end counts the stored results.
# Prints: wall time, trial starts/s, results/s, RSS (first, median, last, peak), status
# block gaps, results stored vs expected. Exits 1 if a result is missing or a status
# block gap exceeds 5 s. Not a ctest case (minutes long); run by hand or in a soak job:
#   bench/soak/soak.sh [BUILD_DIR]        (TRIALS=... CONC=... ITERS=... to scale)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
TRIALS=${TRIALS:-5000}
CONC=${CONC:-200}
ITERS=${ITERS:-20}
tune="$build/bin/tune"
synth="$build/tests/progs/synth_trial"
[ -x "$tune" ] && [ -x "$synth" ] || { echo "soak: build $build first" >&2; exit 2; }

work="${SOAK_DIR:-$(mktemp -d /tmp/tune-soak.XXXXXX)}"
mkdir -p "$work"
cd "$work"
rm -rf soak.db soak.db-wal soak.db-shm tune_results
# Fractional fake GPUs: CONC/4 devices, 4 trials on each (gpus_per_trial 0.25), so the
# slice pool packs and frees fractions all run long.
ngpu=$(( (CONC + 3) / 4 ))
gpus=$(seq -s, 0 $((ngpu - 1)))
cat > space.json <<JSON
{"name": "soak", "metric": "loss", "mode": "min", "num_samples": $TRIALS,
 "max_concurrent": $CONC, "seed": 1,
 "command": ["$synth", "--iters", "$ITERS", "--sleep-ms", "100", "--lr", "{lr}"],
 "resources": {"gpus_per_trial": 0.25, "cpus_per_trial": 1},
 "space": {"lr": {"loguniform": [0.0001, 0.1]}}}
JSON

stamp() { perl -MTime::HiRes=time -ne 'BEGIN { $| = 1 } printf "%.3f %s", time, $_'; }
t0=$(date +%s.%N)
"$tune" run space.json --db soak.db --gpus "$gpus" --cpus "$CONC" --status-interval 1 \
    > >(stamp > status.log) 2> stderr.log &
pid=$!
: > rss.log
while sleep 1 && kill -0 "$pid" 2> /dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2> /dev/null || true)
    fds=$(ls "/proc/$pid/fd" 2> /dev/null | wc -l || true)
    [ -n "$rss" ] && echo "$(date +%s.%N) $rss $fds" >> rss.log
done
rc=0
wait "$pid" || rc=$?
t1=$(date +%s.%N)
sleep 0.5 # let the stamping pipe drain

stored=$(sqlite3 soak.db "SELECT count(*) FROM results")
terminated=$(sqlite3 soak.db "SELECT count(*) FROM trials WHERE status = 'TERMINATED'")
expected=$((TRIALS * ITERS))
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
echo "soak: $TRIALS trials, $CONC at once, $ITERS results each at 10/s; tune exit $rc"
awk -v w="$wall" -v n="$TRIALS" -v s="$stored" \
    'BEGIN {printf "soak: wall %.1f s, %.1f trial starts/s, %.0f results/s stored\n", w, n / w, s / w}'
echo "soak: results stored $stored of $expected; trials TERMINATED $terminated of $TRIALS"
sort -n -k2 rss.log | awk -v n="$(wc -l < rss.log)" '
    NR == 1 {min = $2} NR == int((n + 1) / 2) {med = $2} {max = $2}
    END {printf "soak: RSS samples %d: min %d KiB, median %d KiB, peak %d KiB\n", n, min, med, max}'
awk 'NR == 1 {first = $2} {last = $2; fd = ($3 > fd ? $3 : fd)}
     END {printf "soak: RSS first %d KiB, last %d KiB; peak open fds %d\n", first, last, fd}' rss.log
# Plateau: the RSS over the middle 80% of the run, first and second half compared.
awk '{t[NR] = $1; r[NR] = $2} END {
        a = int(NR * 0.1) + 1; b = int(NR * 0.9); m = int((a + b) / 2); s1 = 0; s2 = 0;
        for (i = a; i <= m; i++) s1 += r[i]; for (i = m + 1; i <= b; i++) s2 += r[i];
        if (b > a) printf "soak: plateau RSS mean %.0f KiB (10-50%% of the run) vs %.0f KiB (50-90%%)\n",
            s1 / (m - a + 1), s2 / (b - m) }' rss.log
grep ' Trials: ' status.log | awk '{t = $1; if (NR > 1 && t - p > g) g = t - p; p = t; n++}
    END {printf "soak: %d status blocks, longest gap %.2f s\n", n, g; exit (g > 5)}' || {
    echo "soak: the status blocks stalled" >&2; rc=1; }
[ "$stored" = "$expected" ] || { echo "soak: results missing" >&2; rc=1; }
[ "$terminated" = "$TRIALS" ] || rc=1
echo "soak: logs in $work (status.log, rss.log, stderr.log, soak.db)"
exit "$rc"
