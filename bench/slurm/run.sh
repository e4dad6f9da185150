#!/usr/bin/env bash
# bench/slurm/run.sh: the Slurm executor against the local one, side by side in one run, on
# the same trials (tests/progs/synth_trial): (1) trial launch overhead, as wall time per
# trial of an experiment of trials that do almost nothing, and (2) results per second
# through srun's stdout, from one trial printing result lines as fast as it can, through
# the whole of tune (read, parse, record in SQLite) and through the pipe alone. Prints
# Slurm/local ratios. Not a test (ctest does not run it), and not a cluster benchmark:
# it runs against a single-host test cluster (scripts/slurm/up.sh, root only).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

build="$root/build"
trials=40
results=100000
keep=0

usage() {
    cat <<EOF
usage: bench/slurm/run.sh [--build DIR] [--trials N] [--results N] [--keep]
  --build DIR    build folder with bin/tune, bin/tune-slurm-task, tests/progs/synth_trial
                 (default: build in the repository)
  --trials N     trials per launch measurement (default $trials)
  --results N    result lines of the throughput trial (default $results)
  --keep         keep the work folder (space.json files, databases, trial logs)
Uses the cluster at \$SLURM_CONF when it answers; otherwise (root only) starts a private
one with scripts/slurm/up.sh in /tmp/tune-slurm-bench and stops it at the end.
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
for v in trials results; do
    if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -lt 1 ]; then
        echo "run.sh: --$v wants a positive whole number, not '${!v}'" >&2
        exit 2
    fi
done
tune="$build/bin/tune"
synth="$build/tests/progs/synth_trial"
for f in "$tune" "$build/bin/tune-slurm-task" "$synth"; do
    if [ ! -x "$f" ]; then
        echo "run.sh: $f is missing. Build it first:" >&2
        echo "    cmake --build $build --target tune tune-slurm-task synth_trial -j2" >&2
        exit 2
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_slurm.XXXXXX")
bench_cluster=""
cleanup() {
    if [ -n "$bench_cluster" ]; then
        SLURM_CI_DIR="$bench_cluster" "$root/scripts/slurm/down.sh" --purge >/dev/null 2>&1 || true
    fi
    if [ "$keep" = 0 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

if [ -z "${SLURM_CONF:-}" ] || ! timeout 10 sinfo -h >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        echo "run.sh: no Slurm cluster answers at SLURM_CONF, and only root can start one" >&2
        exit 2
    fi
    bench_cluster=/tmp/tune-slurm-bench
    # Its own directory and ports, so that a test cluster running beside it is untouched.
    eval "$(SLURM_CI_DIR=$bench_cluster SLURM_CI_PORT=6837 "$root/scripts/slurm/up.sh")"
    export SLURM_CONF
fi

now() { date +%s.%N; }
ms() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }'; }

# space NAME EXECUTOR N CONCURRENT ITERS -> a space.json in $work/NAME/
space() {
    mkdir -p "$work/$1"
    cat >"$work/$1/space.json" <<EOF
{"name": "$1", "metric": "loss", "mode": "min", "num_samples": $3, "max_concurrent": $4,
 "seed": 0, "command": ["$synth", "--lr", "{lr}", "--iters", "$5"],
 "resources": {"gpus_per_trial": 0, "cpus_per_trial": 1},
 "scheduler": {"type": "fifo"}, "executor": {"type": "$2"},
 "space": {"lr": {"loguniform": [1e-4, 1e-1]}}}
EOF
}

# run NAME -> wall seconds of `tune run` on stdout; fails loudly if any trial failed.
run() {
    local t0 t1
    t0=$(now)
    (cd "$work/$1" && "$tune" run space.json --db tune.db --gpus none --quiet >out.txt 2>&1) || {
        echo "run.sh: tune run $1 failed:" >&2
        cat "$work/$1/out.txt" >&2
        exit 1
    }
    t1=$(now)
    local bad
    bad=$(sqlite3 "$work/$1/tune.db" "SELECT count(*) FROM trials WHERE status != 'TERMINATED'")
    if [ "$bad" != 0 ]; then
        echo "run.sh: $bad trial(s) of $1 did not finish:" >&2
        sqlite3 "$work/$1/tune.db" "SELECT name, status, error FROM trials" >&2
        exit 1
    fi
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

# Median of a trial's lifetime in tune's record (started -> ended), in ms.
lifetime_ms() {
    sqlite3 "$work/$1/tune.db" "SELECT (ended_at - started_at) * 1000 FROM trials ORDER BY 1" |
        awk '{ v[NR] = $1 } END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }'; }

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); Slurm: $(sinfo -V 2>/dev/null)," \
    "SLURM_CONF=$SLURM_CONF"
echo
echo "1. launch overhead: $trials trials of synth_trial --iters 1 (one result, exits at once), fifo"
printf "  %-34s%12s%12s%12s\n" "" local slurm slurm/local
for conc in 1 2; do
    space "ll$conc" local "$trials" "$conc" 1
    space "sl$conc" slurm "$trials" "$conc" 1
    wl=$(run "ll$conc")
    ws=$(run "sl$conc")
    a=$(ms 0 "$wl" "$trials")
    b=$(ms 0 "$ws" "$trials")
    printf "  %-34s%12s%12s%12s\n" "wall per trial, concurrency $conc (ms)" "$a" "$b" "$(ratio "$b" "$a")"
    if [ "$conc" = 1 ]; then
        a=$(lifetime_ms "ll$conc")
        b=$(lifetime_ms "sl$conc")
        printf "  %-34s%12s%12s%12s\n" "median trial lifetime (ms)" "$a" "$b" "$(ratio "$b" "$a")"
    fi
done
echo "  (wall per trial = whole \`tune run\` / trials, start-up included; lifetime = tune's"
echo "   started_at -> ended_at: fork/exec, or srun placing a job and starting the task)"

echo
echo "2. results per second: one trial printing $results result lines, no sleep"
printf "  %-34s%12s%12s%12s\n" "" local slurm slurm/local
space rl local 1 1 "$results"
space rs slurm 1 1 "$results"
wl=$(run rl)
ws=$(run rs)
for side in rl rs; do
    n=$(sqlite3 "$work/$side/tune.db" "SELECT count(*) FROM results")
    if [ "$n" != "$results" ]; then
        echo "run.sh: $side recorded $n results, not $results" >&2
        exit 1
    fi
done
rate() { sqlite3 "$work/$1/tune.db" "SELECT printf('%.0f', $results / (ended_at - started_at)) FROM trials"; }
a=$(rate rl)
b=$(rate rs)
printf "  %-34s%12s%12s%12s\n" "through tune, recorded (results/s)" "$a" "$b" "$(ratio "$b" "$a")"
# The pipe alone: the same program's lines read by wc, directly and through srun.
t0=$(now)
TUNE_TRIAL_DIR= "$synth" --iters "$results" | wc -l >/dev/null
t1=$(now)
srun -n1 -J tune-bench-pipe true >/dev/null 2>&1 # warm up: the first job of a run is slower
t2=$(now)
srun -n1 -J tune-bench-pipe --unbuffered "$synth" --iters "$results" | wc -l >/dev/null
t3=$(now)
t4=$(now)  # an empty srun's time, to tell the pipe's cost from the launch's
srun -n1 -J tune-bench-pipe true >/dev/null 2>&1
t5=$(now)
a=$(awk -v a="$t0" -v b="$t1" -v n="$results" 'BEGIN { printf "%.0f", n / (b - a) }')
b=$(awk -v a="$t2" -v b="$t3" -v n="$results" 'BEGIN { printf "%.0f", n / (b - a) }')
c=$(awk -v a="$t2" -v b="$t3" -v s="$t4" -v e="$t5" -v n="$results" \
    'BEGIN { d = (b - a) - (e - s); printf "%.0f", (d > 0 ? n / d : 0) }')
printf "  %-34s%12s%12s%12s\n" "pipe only, srun --unbuffered (l/s)" "$a" "$b" "$(ratio "$b" "$a")"
printf "  %-34s%12s%12s%12s\n" "  less an empty srun's time (l/s)" "$a" "$c" "$(ratio "$c" "$a")"
echo "  (through tune: results / the trial's lifetime in tune's record; pipe only: lines / wall"
echo "   time of the program piped into wc, with and without srun in between)"
echo
echo "wall: local ${wl}s, slurm ${ws}s for the throughput trial"
if [ "$keep" = 1 ]; then echo "work folder kept: $work"; fi
