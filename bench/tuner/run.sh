#!/usr/bin/env bash
# bench/tuner/run.sh: tune against Optuna, side by side, on the same synthetic learning-curve
# objective with successive-halving pruning (reduction factor 3) and SQLite storage. It prints
# trials/s and results recorded/s of each, and tune/Optuna ratios from this one run, against
# the 100x target. It also runs launch_floor, the same trials as bare processes with no tuner
# around them, to show how much of tune's wall time is the machine's own cost of running
# them, and the best ratio a process-running tuner could reach here. Not a test (ctest does
# not run it) and not the in-process benchmark (bench_decide_store, which this script runs
# afterwards unless --no-inprocess).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

build="$root/build-bench"
trials=200
max_t=81
seed=0
concurrent="2 16"
repeat=3
keep=0
inprocess=1
optuna=1
keeper_program=0
keepers=0
cpu=1

usage() {
    cat <<EOF
usage: bench/tuner/run.sh [--build DIR] [--trials N] [--max-t T] [--seed S]
                          [--concurrent "N..."] [--repeat R] [--keepers] [--keeper-program]
                          [--keep] [--no-inprocess] [--no-optuna] [--no-cpu]
  --build DIR      build folder with bin/tune, bin/launch_floor, tests/progs/synth_trial
                   (default: build-bench in the repository)
  --trials N       trials on each side (default $trials)
  --max-t T        iterations a trial may run, ASHA max_t (default $max_t)
  --seed S         sampler seed on both sides (default $seed)
  --concurrent "N..."  tune's max_concurrent, and the floor's: each value in turn (default
                   "$concurrent"); the Optuna table uses the first
  --repeat R       tune and the floor R times each per concurrency, alternating (default
                   $repeat): the table shows tune wall / floor wall of each pair, the median
                   and the best (the least disturbed by other work on the machine)
  --keepers        TUNE_SPAWNER=0 for tune: each trial behind a keeper process of its own,
                   forked by tune, instead of started by tune's spawner (the default)
  --keeper-program TUNE_KEEPER=DIR/bin/tune-keeper for tune: each trial behind a keeper
                   that is that program, started with posix_spawn
  --keep           keep the work folder (space.json, both databases, trial logs)
  --no-inprocess   skip bench_decide_store at the end
  --no-optuna      skip Optuna (and the table against it): only tune against the floor
  --no-cpu         skip the table of CPU and idle core time per side (runs each side
                   again under perf stat, when perf is installed)
After tune, bin/launch_floor runs the same synth_trial commands (same trials, same
concurrency) with no tuner: spawn, read stdout to EOF, reap; no early stopping, no
storage. Its wall time is the machine's floor for these processes; the table shows
tune's wall time against it and the ceiling ratio any tuner running these trials as
processes and recording tune's results could reach over Optuna on this machine.
Build first:
  cmake -S $root -B $root/build-bench -DTUNE_CUDA=OFF
  cmake --build $root/build-bench --target bench_tuner -j2
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --max-t) max_t=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --concurrent) concurrent=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --keepers) keepers=1; shift ;;
    --keeper-program) keeper_program=1; shift ;;
    --no-optuna) optuna=0; shift ;;
    --keep) keep=1; shift ;;
    --no-inprocess) inprocess=0; shift ;;
    --no-cpu) cpu=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
for c in $concurrent; do
    if ! [[ $c =~ ^[0-9]+$ ]] || [ "$c" -lt 1 ]; then
        echo "run.sh: --concurrent wants positive whole numbers, not '$c'" >&2
        exit 2
    fi
done
first_c=${concurrent%% *}
for v in trials max_t seed repeat; do
    if ! [[ ${!v} =~ ^[0-9]+$ ]] || { [ "$v" != seed ] && [ "${!v}" -lt 1 ]; }; then
        echo "run.sh: --${v//_/-} wants a positive whole number, not '${!v}'" >&2
        exit 2
    fi
done

py=/usr/bin/python3
if [ "$optuna" = 1 ] && ! "$py" -c 'import optuna' 2>/dev/null; then
    echo "run.sh: $py cannot import optuna. Install Debian's package and run again:" >&2
    echo "    sudo apt-get install python3-optuna" >&2
    exit 2
fi
tune="$build/bin/tune"
synth="$build/tests/progs/synth_trial"
floor="$build/bin/launch_floor"
for f in "$tune" "$synth" "$floor"; do
    if [ ! -x "$f" ]; then
        echo "run.sh: $f is missing. Build it first:" >&2
        echo "    cmake -S $root -B $build -DTUNE_CUDA=OFF" >&2
        echo "    cmake --build $build --target bench_tuner -j2" >&2
        exit 2
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_tuner.XXXXXX")
if [ "$keep" = 0 ]; then
    trap 'rm -rf "$work"' EXIT
fi

now() { date +%s.%N; }

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) before the run" \
    "(other work on the machine slows both sides, tune's side more: it has more processes)"
unset TUNE_KEEPER TUNE_SPAWNER
if [ "$keeper_program" = 1 ]; then
    export TUNE_KEEPER="$build/bin/tune-keeper"
    echo "trials: each behind a keeper, $TUNE_KEEPER, started with posix_spawn (TUNE_KEEPER)"
elif [ "$keepers" = 1 ]; then
    export TUNE_SPAWNER=0
    echo "trials: each behind a keeper forked by tune (TUNE_SPAWNER=0)"
else
    echo "trials: started by tune's spawner (the default)"
fi
# ---- Optuna ------------------------------------------------------------------------------
if [ "$optuna" = 1 ]; then
    echo "Optuna: $trials trials, max_t $max_t, RandomSampler(seed=$seed), SuccessiveHalvingPruner" \
        "(min_resource=1, reduction_factor=3, min_early_stopping_rate=0), sqlite:///$work/optuna.db ..."
    optuna_json=$("$py" "$here/optuna_sh.py" --trials "$trials" --max-t "$max_t" --seed "$seed" \
        --db "$work/optuna.db")
fi

# ---- tune and the launch floor, alternating ------------------------------------------------
# The floor runs the same command, trials and concurrency as tune's side, timed the same
# way (around the whole command), with nothing a tuner adds: every trial runs to max_t,
# nothing is stored. Each pair runs back to back, so both see the same machine.
pairs="$work/pairs.txt"
: >"$pairs"
for c in $concurrent; do
    cat >"$work/space_$c.json" <<EOF
{
  "name": "bench-sh-$c",
  "metric": "loss", "mode": "min",
  "num_samples": $trials, "max_concurrent": $c, "seed": $seed,
  "command": ["$synth", "--lr", "{lr}", "--iters", "$max_t"],
  "resources": {"gpus_per_trial": 0, "cpus_per_trial": 1},
  "scheduler": {"type": "asha", "time_attr": "training_iteration", "max_t": $max_t,
                "grace_period": 1, "reduction_factor": 3, "brackets": 1},
  "space": {"lr": {"loguniform": [1e-5, 1.0]}}
}
EOF
    echo "tune:   $trials trials, max_t $max_t, ASHA (grace 1, rf 3), max_concurrent $c," \
        "trials are synth_trial processes; floor: the same, spawned and read to EOF, no tuner;" \
        "$repeat pairs ..."
    for i in $(seq 1 "$repeat"); do
        db="$work/tune_${c}_$i.db"
        # Each pair's database is a new one in the same folder: its experiment's results
        # folder must be its own (tune refuses one another database owns), so the last
        # pair's goes first, untimed.
        rm -rf "$work/tune_results"
        t0=$(now)
        (cd "$work" && "$tune" run "space_$c.json" --db "$db" --gpus none --cpus "$c" \
            --quiet >"$work/tune.out" 2>&1) || {
            echo "run.sh: tune run failed:" >&2
            cat "$work/tune.out" >&2
            exit 1
        }
        t1=$(now)
        f0=$(now)
        floor_json=$(cd "$work" && "$floor" --trials "$trials" --concurrent "$c" --seed "$seed" \
            -- "$synth" --lr '{lr}' --iters "$max_t") || {
            echo "run.sh: launch_floor failed" >&2
            exit 1
        }
        f1=$(now)
        r0=$(now)
        (cd "$work" && "$floor" --relay --hold --trials "$trials" --concurrent "$c" --seed "$seed" \
            -- "$synth" --lr '{lr}' --iters "$max_t" >/dev/null) || {
            echo "run.sh: launch_floor --relay --hold failed" >&2
            exit 1
        }
        r1=$(now)
        # The guarantees' floor: the relay, each trial's folder and logs, and as many of
        # each trial's result lines durable in SQLite as this pair's tune recorded.
        "$py" - "$db" >"$work/counts_$c.txt" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for (n,) in con.execute("SELECT count(r.id) FROM trials t LEFT JOIN results r ON r.trial_id = t.id"
                        " GROUP BY t.id ORDER BY t.trial_no"):
    print(n)
PY
        rm -rf "$work/kept" "$work/kept.db" "$work/kept.db-wal" "$work/kept.db-shm"
        k0=$(now)
        (cd "$work" && "$floor" --relay --hold --logs "$work/kept" --db "$work/kept.db" \
            --record "$work/counts_$c.txt" --trials "$trials" --concurrent "$c" --seed "$seed" \
            -- "$synth" --lr '{lr}' --iters "$max_t" >/dev/null) || {
            echo "run.sh: launch_floor --relay --hold --logs --db failed" >&2
            exit 1
        }
        k1=$(now)
        echo "$c $i $t0 $t1 $f0 $f1 $r0 $r1 $k0 $k1 $db $floor_json" >>"$pairs"
    done
done

# ---- where each side's time goes: CPU and idle cores ------------------------------------------
# Each side again under perf stat (untimed runs of their own: perf's start is not in the
# ratios above): task-clock is the CPU time of the whole process tree (trials included,
# counted from the fork, wherever they are re-parented), and cores x elapsed - task-clock
# the core time nothing of the run used, waiting on wake-ups and launches in a chain.
cpu_rows="$work/cpu.txt"
: >"$cpu_rows"
if [ "$cpu" = 1 ] && command -v perf >/dev/null 2>&1 &&
    perf stat -e task-clock -o /dev/null -- true >/dev/null 2>&1; then
    for c in $concurrent; do
        for i in $(seq 1 "$repeat"); do
            for side in tune floor relay kept; do
                rm -rf "$work/kept" "$work/kept.db" "$work/kept.db-wal" "$work/kept.db-shm"
                rm -rf "$work/tune_results"
                case $side in
                tune) cmd=("$tune" run "space_$c.json" --db "$work/cpu_${c}_$i.db" --gpus none
                    --cpus "$c" --quiet) ;;
                floor) cmd=("$floor" --trials "$trials" --concurrent "$c" --seed "$seed" --
                    "$synth" --lr '{lr}' --iters "$max_t") ;;
                relay) cmd=("$floor" --relay --hold --trials "$trials" --concurrent "$c"
                    --seed "$seed" -- "$synth" --lr '{lr}' --iters "$max_t") ;;
                kept) cmd=("$floor" --relay --hold --logs "$work/kept" --db "$work/kept.db"
                    --record "$work/counts_$c.txt" --trials "$trials" --concurrent "$c"
                    --seed "$seed" -- "$synth" --lr '{lr}' --iters "$max_t") ;;
                esac
                (cd "$work" && perf stat -e task-clock -o "$work/perf.txt" -- "${cmd[@]}" \
                    >/dev/null 2>&1) || {
                    echo "run.sh: $side under perf stat failed" >&2
                    exit 1
                }
                ms=$(awk '/task-clock/ {gsub(",", "", $1); print $1}' "$work/perf.txt")
                el=$(awk '/seconds time elapsed/ {print $1}' "$work/perf.txt")
                echo "$c $side $ms $el" >>"$cpu_rows"
            done
        done
    done
fi

# ---- tune against the floor --------------------------------------------------------------
"$py" - "$pairs" "$cpu_rows" "$(nproc)" <<'EOF'
import statistics, sys

rows = [line.rstrip("\n").split(" ", 11) for line in open(sys.argv[1])]
cpu_rows = [line.split() for line in open(sys.argv[2])]
ncpu = int(sys.argv[3])
print()
print("tune wall / launch-floor wall, the same trials in the same run (target <= 1.25x)")
print(f"  {'concurrent':>10}  {'tune s':>8}  {'floor s':>8}  {'ratio':>7}  {'median':>7}   each pair")
by_c = {}
for c, i, t0, t1, f0, f1, r0, r1, k0, k1, db, fj in rows:
    by_c.setdefault(int(c), []).append(
        (float(t1) - float(t0), float(f1) - float(f0), float(r1) - float(r0),
         float(k1) - float(k0)))
for c, runs in by_c.items():
    tb = min(t for t, f, r, k in runs)
    fb = min(f for t, f, r, k in runs)
    ratios = [t / f for t, f, r, k in runs]
    each = " ".join(f"{x:.2f}" for x in ratios)
    print(f"  {c:>10}  {tb:>8.2f}  {fb:>8.2f}  {tb / fb:>6.2f}x"
          f"  {statistics.median(ratios):>6.2f}x   {each}")
print("  tune s, floor s: each side's best of its runs (the least disturbed by other work on")
print("  the machine), ratio: the one over the other; median and each: the ratio of each pair")
print()
print("what tune's guarantees cost, and what tune itself does: the same trials through")
print("launch_floor --relay --hold (a forked subreaper starts each on request, or held behind a")
print("running trial the moment that one is reaped, and answers its end, as tune's spawner does:")
print("no orphan after kill -9 of tune) and launch_floor --relay --hold --logs --db ('kept': also")
print("each trial's folder, its stderr.log and stdout.log, and as many of its result lines as tune")
print("recorded in that pair written to SQLite with tune's pragmas, committed before each blocking")
print("wait: every log kept, every result durable), and nothing else of tune")
print(f"  {'concurrent':>10}  {'relay/floor':>11}  {'kept/floor':>10}  {'tune/kept':>9}"
      "   (medians of the pairs)")
for c, runs in by_c.items():
    rf = statistics.median(r / f for t, f, r, k in runs)
    kf = statistics.median(k / f for t, f, r, k in runs)
    tk = statistics.median(t / k for t, f, r, k in runs)
    print(f"  {c:>10}  {rf:>10.2f}x  {kf:>9.2f}x  {tk:>8.2f}x")
print("  relay/floor: the process structure the orphan guarantee needs; kept/floor: the least work")
print("  that keeps all three guarantees; tune/kept: everything else tune does (its startup and")
print("  schema, trial rows and configurations, parsing, ASHA, decisions, MASTER_PORT, the")
print("  checkpoint folders)")
if cpu_rows:
    print()
    print(f"where the time goes (perf stat, runs of their own, medians; {ncpu} cores): CPU of the")
    print("whole process tree, and idle core time = cores x elapsed - CPU")
    print(f"  {'concurrent':>10}  {'side':>6}  {'elapsed ms':>10}  {'CPU ms':>8}  {'idle ms':>8}"
          f"  {'CPU - floor':>11}  {'idle - floor':>12}")
    by = {}
    for c, side, ms, el in cpu_rows:
        by.setdefault((int(c), side), []).append((float(el) * 1e3, float(ms)))
    for c in sorted({k[0] for k in by}):
        med = {}
        for side in ("floor", "relay", "kept", "tune"):
            v = by.get((c, side), [])
            if not v:
                continue
            el = statistics.median(e for e, m in v)
            busy = statistics.median(m for e, m in v)
            idle = statistics.median(ncpu * e - m for e, m in v)
            med[side] = (el, busy, idle)
        for side, (el, busy, idle) in med.items():
            fb, fi = med["floor"][1], med["floor"][2]
            print(f"  {c:>10}  {side:>6}  {el:>10.1f}  {busy:>8.1f}  {idle:>8.1f}"
                  f"  {busy - fb:>+11.1f}  {idle - fi:>+12.1f}")
    print("  relay - floor: what the guarantees' process structure costs (its idle cores are the")
    print("  chain of wake-ups between a trial's end and the next start); kept - relay: the logs and")
    print("  the durable results; tune - kept: tune's own work (CPU) and the latency it adds to that")
    print("  chain (idle). Elapsed is perf's, with its own start in it. Idle time is only")
    print("  meaningful on a machine nothing else uses.")
EOF
[ "$optuna" = 1 ] || exit 0
read -r _ _ t0 t1 f0 f1 _ _ _ _ tune_db floor_json < <(grep "^$first_c 1 " "$pairs")

# ---- the table ---------------------------------------------------------------------------
"$py" - "$tune_db" "$t0" "$t1" "$optuna_json" "$trials" "$max_t" \
    "$f0" "$f1" "$floor_json" "$first_c" <<'EOF'
import json, sqlite3, sys

db, t0, t1, oj, trials, max_t, f0, f1, fj, concurrent = sys.argv[1:]
o = json.loads(oj)
fl = json.loads(fj)
con = sqlite3.connect(db)
q = lambda sql: con.execute(sql).fetchone()[0]
tune = {
    "wall_s": float(t1) - float(t0),
    "results": q("SELECT count(*) FROM results"),
    "done": q("SELECT count(*) FROM trials WHERE status = 'TERMINATED'"),
    "stopped": q("SELECT count(*) FROM trials WHERE status = 'TERMINATED' AND early_stopped = 1"),
    "errors": q("SELECT count(*) FROM trials WHERE status = 'ERROR'"),
    "best": q("SELECT min(metric) FROM results"),
}
con.close()
opt = {
    "wall_s": o["wall_s"],
    "results": o["results"],
    "done": o["complete"] + o["pruned"],
    "stopped": o["pruned"],
    "errors": o["failed"],
    "best": o["best_loss"],
}
for side in (tune, opt):
    side["trials_s"] = side["done"] / side["wall_s"]
    side["results_s"] = side["results"] / side["wall_s"]

print()
print(f"tune vs Optuna {o['optuna_version']} (SQLite storage), {trials} trials, max_t {max_t}, "
      "same objective, same run")
print(f"  {'':24}{'tune':>14}{'Optuna':>14}{'tune/Optuna':>14}")
def line(name, key, fmt):
    a, b = tune[key], opt[key]
    r = f"{a / b:.1f}x" if b else "-"
    print(f"  {name:24}{fmt.format(a):>14}{fmt.format(b):>14}{r:>14}")
line("wall time (s)", "wall_s", "{:.2f}")
line("trials finished", "done", "{:d}")
line("  of them stopped early", "stopped", "{:d}")
line("results recorded", "results", "{:d}")
line("trials/s", "trials_s", "{:.1f}")
line("results recorded/s", "results_s", "{:.1f}")
print(f"  {'best loss':24}{tune['best']:>14.4f}{opt['best']:>14.4f}")
# The launch floor: tune's recorded results over the floor's wall time is the most any tuner
# could record per second here if everything it adds to running the processes cost nothing.
floor_wall = float(f1) - float(f0)
floor_results_s = tune["results"] / floor_wall
print(f"  launch floor: the same {fl['trials']} synth_trial processes, {concurrent} at a time, "
      f"stdout read to EOF ({fl['lines']} lines), no tuner")
print(f"  {'floor wall time (s)':24}{floor_wall:>14.2f}")
print(f"  {'tune wall / floor wall':24}{tune['wall_s'] / floor_wall:>13.2f}x")
fr = f"{floor_results_s / opt['results_s']:.1f}x" if opt["results_s"] else "-"
print(f"  {'floor results/s':24}{floor_results_s:>14.1f}{opt['results_s']:>14.1f}{fr:>14}")
if tune["errors"] or opt["errors"]:
    print(f"  WARNING: failed trials: tune {tune['errors']}, Optuna {opt['errors']}")
ratio = tune["results_s"] / opt["results_s"] if opt["results_s"] else float("inf")
print(f"  target: tune >= 100x Optuna on results recorded/s: "
      f"{'MET' if ratio >= 100 else 'NOT MET'} ({ratio:.1f}x)")
ceiling = floor_results_s / opt["results_s"] if opt["results_s"] else float("inf")
print(f"  ceiling on this machine: {ceiling:.1f}x Optuna, for any tuner that runs these trials "
      "as real processes and records tune's results")
print("  notes: tune's time is the whole `tune run` command, each trial a real process (fork/exec")
print("  of synth_trial); Optuna's excludes starting Python and `import optuna`"
      f" ({o['import_s']:.2f} s) and runs")
print("  the objective in-process, one trial at a time. Early stops differ by design, so the")
print("  counts are of the same order but not equal: tune uses Ray Tune's ASHA rule (promoted when")
print("  not worse than the (1-1/3) percentile of the values its rung has recorded; the first trial")
print("  at a rung always goes on; reaching max_t completes the trial), Optuna's")
print("  SuccessiveHalvingPruner promotes only the top floor(n/3) of the n values at the rung (while")
print("  n < 3, only the best so far) and judges max_t itself as a rung, so few Optuna trials complete.")
print("  The floor (launch_floor) is timed around its whole command like tune, and its trials all run")
print("  to max_t: tune stops some early, so tune wall / floor wall can come out below 1. floor")
print("  results/s is tune's recorded results over the floor's wall time.")
EOF
if [ "$keep" = 1 ]; then
    echo "  work folder kept: $work"
fi

if [ "$inprocess" = 1 ]; then
    echo
    if [ -x "$build/bin/bench_decide_store" ]; then
        "$build/bin/bench_decide_store"
    else
        echo "run.sh: $build/bin/bench_decide_store is missing; skipped the in-process benchmark"
    fi
fi
