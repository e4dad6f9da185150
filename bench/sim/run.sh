#!/usr/bin/env bash
# bench/sim/run.sh: the scale figures of `tune simulate` and its peer, from one run. It
# simulates ASHA over the synthetic family (docs/simulate.md) with many trials and workers,
# once into a database file (the normal durability: WAL, synchronous=NORMAL) and once with
# --db :memory:, and prints wall time, CPU time, peak RSS, trials/s and results/s of each;
# then it runs Optuna 3.1 in memory (ask/tell, SuccessiveHalvingPruner) on the same family,
# reimplemented in Python (synth_family.py) and checked first against `tune export --table`
# of a small simulated run, and prints the ratio of results per second.
# Not a test (ctest does not run it); timings depend on what else the machine is doing, so
# CPU time is printed beside wall time.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

build="$root/build"
trials=1000000
workers=10000
optuna_trials=3000
seed=1
keep=0

usage() {
    cat <<EOF
usage: bench/sim/run.sh [--build DIR] [--trials N] [--workers N] [--optuna-trials N]
                        [--seed S] [--keep]
  --build DIR          build folder with bin/tune (default: build in the repository)
  --trials N           trials tune simulates (default $trials)
  --workers N          its virtual workers (default $workers)
  --optuna-trials N    trials Optuna runs (default $optuna_trials: its pruner reads every
                       trial at each step, so it slows as the study grows)
  --seed S             the family's seed and both samplers' (default $seed)
  --keep               keep the work folder
Build first:
  cmake -S $root -B $root/build -DTUNE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build $root/build --target tune -j2
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --optuna-trials) optuna_trials=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
for v in trials workers optuna_trials seed; do
    if ! [[ ${!v} =~ ^[0-9]+$ ]] || { [ "$v" != seed ] && [ "${!v}" -lt 1 ]; }; then
        echo "run.sh: --${v//_/-} wants a positive whole number, not '${!v}'" >&2
        exit 2
    fi
done

py=/usr/bin/python3
if ! "$py" -c 'import optuna' 2>/dev/null; then
    echo "run.sh: $py cannot import optuna. Install Debian's package and run again:" >&2
    echo "    sudo apt-get install python3-optuna" >&2
    exit 2
fi
tune="$build/bin/tune"
if [ ! -x "$tune" ]; then
    echo "run.sh: $tune is missing. Build it first:" >&2
    echo "    cmake -S $root -B $build -DTUNE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo" >&2
    echo "    cmake --build $build --target tune -j2" >&2
    exit 2
fi
if [ ! -x /usr/bin/time ]; then
    echo "run.sh: /usr/bin/time is missing (peak RSS): sudo apt-get install time" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_sim.XXXXXX")
cleanup() { if [ "$keep" = 1 ]; then echo "work folder kept: $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

space() { # NAME TRIALS WORKERS
    cat <<EOF
{"name": "$1", "metric": "loss", "mode": "min", "num_samples": $2, "max_concurrent": $3,
 "seed": $seed, "command": ["true"],
 "scheduler": {"type": "asha", "max_t": 81, "grace_period": 1, "reduction_factor": 3},
 "space": {"lr": {"loguniform": [1e-5, 1]}, "momentum": {"uniform": [0, 0.99]},
           "width": {"choice": [64, 128, 256, 512]}}}
EOF
}

# 1. The Python family against tune's: a small simulated run, exported as a table.
space check 300 8 >"$work/check.json"
(cd "$work" && "$tune" simulate check.json --synthetic "seed=$seed" --db check.db --quiet >/dev/null)
(cd "$work" && "$tune" export check-sim --table --db check.db >check.csv)
if ! "$py" "$here/synth_family.py" check "$work/check.csv" --seed "$seed" >"$work/check.out"; then
    echo "run.sh: synth_family.py does not reproduce tune's synthetic family:" >&2
    cat "$work/check.out" >&2
    exit 1
fi
checked=$(sed -n 's/.*"rows": \([0-9]*\).*/\1/p' "$work/check.out")

# 2. tune simulate at scale, into a file and in memory. The final status block gives the
# number of results ("| results N"), the summary the trials.
space scale "$trials" "$workers" >"$work/scale.json"
run_sim() { # DB LABEL
    (cd "$work" && /usr/bin/time -f "%e %U %S %M" -o "time.$2" "$tune" simulate scale.json \
        --synthetic "seed=$seed" --db "$1" --status-interval 1000000 >"out.$2")
    read -r wall user sys rss <"$work/time.$2"
    results=$(grep -o '| results [0-9]*' "$work/out.$2" | tail -1 | awk '{print $3}')
    done_trials=$(sed -n 's/.*: \([0-9]*\) trials terminated.*/\1/p' "$work/out.$2")
    printf '  %-26s %9s %10s %8.1f %8.1f %8.1f %9.0f %10.0f %11.0f\n' "$2" "$done_trials" \
        "$results" "$wall" "$user" "$sys" "$((rss / 1024))" \
        "$(echo "$done_trials / $wall" | bc -l)" "$(echo "$results / $wall" | bc -l)"
    eval "rate_$3=$(echo "$results / $wall" | bc -l)"
    eval "cpu_rate_$3=$(echo "$results / ($user + $sys)" | bc -l)"
}
echo "bench/sim: tune simulate, ASHA (max_t 81, grace 1, rf 3) over the synthetic family"
echo "  seed=$seed; $trials trials, $workers workers; machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  the Python family matches tune's on $checked exported results (loss, time_this_iter_s, time_total_s, cost)"
echo
printf '  %-26s %9s %10s %8s %8s %8s %9s %10s %11s\n' run trials results "wall s" "user s" \
    "sys s" "RSS MiB" "trials/s" "results/s"
run_sim sim.db "file (WAL, sync NORMAL)" file
run_sim :memory: "--db :memory:" mem

# 3. Optuna in memory on the same family.
"$py" "$here/synth_family.py" optuna --trials "$optuna_trials" --seed "$seed" >"$work/optuna.out"
o_res=$(sed -n 's/.*"results": \([0-9]*\).*/\1/p' "$work/optuna.out")
o_wall=$(sed -n 's/.*"wall_s": \([0-9.e-]*\).*/\1/p' "$work/optuna.out")
o_rate=$(echo "$o_res / $o_wall" | bc -l)
o_ver=$(sed -n 's/.*"optuna": "\([^"]*\)".*/\1/p' "$work/optuna.out")
printf '  %-26s %9s %10s %8.1f %8s %8s %9s %10.0f %11.0f\n' "Optuna $o_ver (in memory)" \
    "$optuna_trials" "$o_res" "$o_wall" - - - "$(echo "$optuna_trials / $o_wall" | bc -l)" "$o_rate"
echo
printf '  results/s, tune over Optuna: %.0fx into a file, %.0fx in memory (Optuna: %s trials, sequential ask/tell)\n' \
    "$(echo "$rate_file / $o_rate" | bc -l)" "$(echo "$rate_mem / $o_rate" | bc -l)" "$optuna_trials"
printf '  per CPU second, tune: %.0f results/s into a file, %.0f in memory\n' "$cpu_rate_file" "$cpu_rate_mem"
