#!/usr/bin/env python3
"""alternate.py: tune against the launch floors, or one tune build against another, run in
turn many times, for differences smaller than this machine's drift between two runs of
run.sh. Not a test. Work files go to the current directory (run it in a tmpfs one).

  alternate.py sides SPACE.json C ROUNDS COUNTS TUNE...
      each round: launch_floor plain, --relay, --relay --hold, kept (--relay --logs --db
      --record COUNTS) and kept with --hold, then each TUNE; prints each side's median wall
      time and the median of its per-round ratios to the floor and to kept --hold
  alternate.py ab SPACE.json C ROUNDS TUNE_A TUNE_B
      each round both builds, in alternating order; prints the median of B/A over the
      rounds and a 95% bootstrap interval of that median

SPACE.json is run.sh's space (synth_trial, ASHA); C its max_concurrent; COUNTS one number a
line, the results tune recorded for each trial (run.sh writes counts_C.txt). BUILD (default
./build from the repository root) holds bin/launch_floor and tests/progs/synth_trial."""
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", os.path.join(ROOT, "build"))
FLOOR = os.path.join(BUILD, "bin", "launch_floor")
SYNTH = os.path.join(BUILD, "tests", "progs", "synth_trial")


def clean():
    for p in ("t.db", "t.db-wal", "t.db-shm", "kept.db", "kept.db-wal", "kept.db-shm"):
        if os.path.exists(p):
            os.remove(p)
    shutil.rmtree("tune_results", ignore_errors=True)
    shutil.rmtree("kept", ignore_errors=True)


def timed(cmd):
    clean()
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def tune(binary, space, c):
    return [binary, "run", space, "--db", "t.db", "--gpus", "none", "--cpus", c, "--quiet"]


def sides(space, c, rounds, counts, tunes):
    base = ["--trials", "200", "--concurrent", c, "--seed", "0"]
    tail = ["--", SYNTH, "--lr", "{lr}", "--iters", "81"]
    kept = ["--logs", "kept", "--db", "kept.db", "--record", counts]
    cmds = {
        "floor": [FLOOR] + base + tail,
        "relay": [FLOOR, "--relay"] + base + tail,
        "relay --hold": [FLOOR, "--relay", "--hold"] + base + tail,
        "kept": [FLOOR, "--relay"] + kept + base + tail,
        "kept --hold": [FLOOR, "--relay", "--hold"] + kept + base + tail,
    }
    for t in tunes:
        cmds[t] = tune(t, space, c)
    res = {k: [] for k in cmds}
    for _ in range(rounds):
        for k, cmd in cmds.items():
            res[k].append(timed(cmd))
    med = statistics.median
    for k, v in res.items():
        rf = med(a / b for a, b in zip(v, res["floor"]))
        rk = med(a / b for a, b in zip(v, res["kept --hold"]))
        print(f"c={c} {k:24s} {med(v) * 1000:7.1f} ms   /floor {rf:.3f}   /kept --hold {rk:.3f}")


def ab(space, c, rounds, a, b):
    r = []
    for i in range(rounds):
        if i % 2:
            tb, ta = timed(tune(b, space, c)), timed(tune(a, space, c))
        else:
            ta, tb = timed(tune(a, space, c)), timed(tune(b, space, c))
        r.append(tb / ta)
    med = statistics.median(r)
    boot = sorted(statistics.median(random.choices(r, k=len(r))) for _ in range(2000))
    print(f"c={c} B/A median {med:.3f}  95% bootstrap [{boot[50]:.3f}, {boot[1949]:.3f}]  "
          f"rounds {rounds}")


def main(argv):
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0
    if len(argv) >= 6 and argv[1] == "sides":
        sides(argv[2], argv[3], int(argv[4]), argv[5], argv[6:])
    elif len(argv) == 7 and argv[1] == "ab":
        ab(argv[2], argv[3], int(argv[4]), argv[5], argv[6])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
