"""The randomized interruption test (docs/durability.md): an experiment of resumable_trial is
interrupted again and again at seeded random moments (Ctrl-C, Ctrl-C twice, SIGTERM,
kill -9), each time resumed with a random number of CPUs (so that trials wait for a
slice), then left to finish; what it recorded is checked against the uninterrupted curves
of the same trials:

  duplicates   an iteration of a trial twice among its current results
  missing      an iteration absent from them (PBT: a jump no exploit explains)
  unrecorded   iterations a trial computed but tune never recorded before an interruption,
               which it says in a 'gap' decision: possible only where the trial saves a
               checkpoint its results do not name (--file), so that tune resumes from one
               ahead of the last result recorded (not a failure: the documented limit)
  wrong        a value that is not the uninterrupted curve's at that iteration (not PBT,
               whose exploits change a trial's hyperparameters)
  scratch      a later attempt that started from scratch though a checkpoint existed
  unfinished   a trial not TERMINATED at the end, or one that should have reached max_t
               and did not, or an experiment not FINISHED
  left         a trial process alive after tune was killed, or at the end
  escapes      a change outside the run's folders (a sentinel folder beside it, which a
               symlink in every trial's folder points at)
  refused      a tune process that exited with a code other than 0, 130 or kill -9's
  decisions    with several objectives (the mo_* spaces, one trial at a time): a judged
               decision (continue, stop, complete, pause, promote), a configuration or the
               searcher's words for it that is not the uninterrupted run's, word for word,
               or one missing or doubled
  front        with several objectives: `tune best --json` whose counts or front (each
               row's trial, values, violation, status, iterations and configuration)
               differ from the uninterrupted run's

Deterministic from its seed except for timing, which is what it is there to vary. Usage:
  /usr/bin/python3 tests/python/interrupt.py [--build build] [--sequences 300] [--seed 1]
                                             [--schedulers fifo,asha,...] [--keep DIR]
The figures go to stdout, one line per sequence and a total; exit 1 when any is not 0.
tests/python/test_interrupt.py runs a few seeds of each scheduler under ctest.
Not for: timing anything (bench/)."""

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

ITERS = 24
TRIALS = 8

SCHEDULERS = {
    "fifo": {"scheduler": {"type": "fifo"}},
    "asha": {"scheduler": {"type": "asha", "max_t": ITERS, "grace_period": 2,
                           "reduction_factor": 2}},
    "asha_promotion": {"scheduler": {"type": "asha", "max_t": ITERS, "grace_period": 2,
                                     "reduction_factor": 2, "variant": "promotion"}},
    "asha_eager": {"scheduler": {"type": "asha", "max_t": ITERS, "grace_period": 2,
                                 "reduction_factor": 2, "variant": "eager_promotion"}},
    "median": {"scheduler": {"type": "median", "max_t": ITERS, "grace_period": 2,
                             "min_samples_required": 2}},
    "median_soft": {"scheduler": {"type": "median", "max_t": ITERS, "grace_period": 2,
                                  "min_samples_required": 2, "hard_stop": False}},
    "pbt": {"scheduler": {"type": "pbt", "perturbation_interval": 6, "keep_checkpoints": 2}},
    # reduction_factor 8: 8 trials are enough for its brackets to pause them and halve
    "hyperband": {"scheduler": {"type": "hyperband", "max_t": ITERS, "reduction_factor": 8}},
    "tpe": {"scheduler": {"type": "asha", "max_t": ITERS, "grace_period": 2,
                          "reduction_factor": 2},
            "search": {"type": "tpe"}},
}
# Several objectives and constraints (docs/multiobjective.md): the loss (min) against the
# learning rate (max: a larger lr falls faster but settles higher, at lr, so the trials that
# reach max_t trade one for the other), the loss at most 0.5 (early milestones of a small lr
# violate it) and lr at most 0.4 (some trials never meet it). One trial at a time and no unnamed checkpoint: the order of results, hence every
# decision and the front, is then the uninterrupted run's however often it is interrupted,
# and the sequence compares both with one (docs/durability.md, "Several objectives").
MO = {"metric": ["loss", "lr"], "mode": ["min", "max"],
      "constraints": {"loss": {"<=": 0.5}, "lr": {"<=": 0.4}}, "max_concurrent": 1}
for _name, _sched in (("mo_asha", "asha"), ("mo_asha_promotion", "asha_promotion"),
                      ("mo_asha_eager", "asha_eager"),
                      ("mo_hyperband", "hyperband"), ("mo_tpe", "tpe")):
    SCHEDULERS[_name] = dict(SCHEDULERS[_sched], **MO)
# MOTPE fits its model from 10 observations at a rung: 14 trials make the last ones its
SCHEDULERS["mo_tpe"]["num_samples"] = 14
KINDS = ("int", "int2", "term", "kill")
FIGURES = ("interruptions", "iterations", "unrecorded", "duplicates", "missing", "wrong",
           "scratch", "unfinished", "left", "escapes", "refused", "decisions", "front")
BAD = FIGURES[3:]


def tagged(tag):
    """Processes whose command line holds tag."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if tag.encode() in f.read():
                    n += 1
        except OSError:
            pass
    return n


def wait_gone(tag, limit=10.0):
    t0 = time.monotonic()
    while tagged(tag) and time.monotonic() - t0 < limit:
        time.sleep(0.02)
    return tagged(tag)


def lock_holders(lock):
    """The processes that hold lock (a file) open: who keeps an experiment locked."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == lock:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        out.append(f"{pid} {f.read().replace(bytes(1), b' ')[:80].decode()}")
        except OSError:
            pass
    return out


def snapshot(root):
    """Every entry under root with its kind, size and mtime: a change anywhere shows."""
    out = {}
    for d, dirs, files in os.walk(root, followlinks=False):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def reference(trial, lr):
    """The uninterrupted curve of lr, iteration -> loss, from the trial's own arithmetic."""
    p = subprocess.run([trial, "--reference", "--lr", repr(lr), "--iters", str(ITERS)],
                       capture_output=True, text=True, check=True)
    return {int(a): float(b) for a, b in (ln.split() for ln in p.stdout.split("\n") if ln)}


class Sequence:
    def __init__(self, build, sched, seed, root):
        self.tune = os.path.join(build, "bin", "tune")
        self.trial = os.path.join(build, "tests", "progs", "resumable_trial")
        self.sched, self.seed = sched, seed
        self.rng = random.Random(f"{sched}:{seed}")
        self.dir = os.path.join(root, f"{sched}-{seed}")
        self.run_dir = os.path.join(self.dir, "run")
        self.outside = os.path.join(self.dir, "outside")
        self.tag = f"interrupt-{os.getpid()}-{sched}-{seed}"
        self.name = f"{sched}{seed}"
        self.mo = "constraints" in SCHEDULERS[sched]
        self.f = {k: 0 for k in FIGURES}
        self.notes = []

    def note(self, what, n=1, detail=""):
        self.f[what] += n
        if detail and len(self.notes) < 8:
            self.notes.append(f"{what}: {detail}")

    def setup(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(os.path.join(self.outside, "sub"))
        for rel in ("a", "sub/b"):
            with open(os.path.join(self.outside, rel), "w") as f:
                f.write(rel + "\n")
        os.makedirs(self.run_dir)
        space = {"name": self.name, "metric": "loss", "mode": "min", "num_samples": TRIALS,
                 "seed": self.seed,
                 "command": [self.trial, "--lr", "{lr}", "--iters", str(ITERS), "--sleep-ms",
                             str(self.rng.choice([5, 15, 30])), "--tag", self.tag,
                             "--symlink", "lnk:" + self.outside],
                 "space": {"lr": {"uniform": [0.05, 0.5]}}}
        if self.rng.random() < 0.3 and self.sched != "pbt" and not self.mo:
            space["command"].append("--file")  # an unnamed checkpoint tune finds by name
        space.update(json.loads(json.dumps(SCHEDULERS[self.sched])))
        with open(os.path.join(self.run_dir, "space.json"), "w") as f:
            json.dump(space, f)
        self.space = space
        self.before = snapshot(self.outside)

    def start(self, resume):
        cpus = str(self.rng.choice([1, 1, 2, 3]))
        if resume and self.status() is None:
            resume = False  # killed before it recorded the experiment: run it again
        args = ([self.tune, "resume", self.name] if resume else [self.tune, "run", "space.json"])
        args += ["--gpus", "none", "--cpus", cpus, "--quiet"]
        log = open(os.path.join(self.dir, "tune.log"), "ab")
        log.write(f"\n$ {' '.join(args[1:])}\n".encode())
        log.flush()
        p = subprocess.Popen(args, cwd=self.run_dir, stdout=log, stderr=log,
                             stdin=subprocess.DEVNULL)
        log.close()
        return p

    def db(self, sql, *args, run_dir=None):
        path = os.path.join(run_dir or self.run_dir, "tune.db")
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def status(self):
        try:
            rows = self.db("SELECT status FROM experiments WHERE name = ?", self.name)
        except sqlite3.Error:
            return None
        return rows[0][0] if rows else None

    def ended(self, code, kind):
        # 130 after a stop signal; or death by the signal itself where it came before tune
        # set up its handlers (nothing had started: the same as kill -9 then)
        sent = {"kill": -signal.SIGKILL, "term": -signal.SIGTERM, "int": -signal.SIGINT,
                "int2": -signal.SIGINT}
        ok = {0, 130} | ({sent[kind]} if kind in sent else set())
        if code not in ok:
            lock = os.path.join(self.run_dir, "tune_results", self.name, ".tune.lock")
            self.note("refused", 1, f"exit {code} after {kind} (lock held by: "
                      f"{lock_holders(lock) or 'nobody'})")

    def drive(self):
        self.setup()
        p = self.start(resume=False)
        for _ in range(self.rng.randint(2, 6)):
            delay = self.rng.uniform(0.02, 0.6)
            try:
                p.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                kind = self.rng.choice(KINDS)
                self.f["interruptions"] += 1
                if kind == "kill":
                    p.send_signal(signal.SIGKILL)
                elif kind == "term":
                    p.send_signal(signal.SIGTERM)
                else:
                    p.send_signal(signal.SIGINT)
                    if kind == "int2":
                        time.sleep(self.rng.uniform(0.0, 0.3))
                        if p.poll() is None:
                            p.send_signal(signal.SIGINT)
                try:
                    code = p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    code = p.wait()
                    self.note("refused", 1, f"{kind}: tune did not stop within 60 s")
                self.ended(code, kind)
                left = wait_gone(self.tag)
                if left:
                    self.note("left", left, f"{left} trial process(es) after {kind}")
            else:
                self.ended(p.returncode, "none")
            if self.status() == "FINISHED":
                break
            p = self.start(resume=True)
        if p.poll() is None:
            code = p.wait(timeout=300)
            self.ended(code, "none")
        if self.status() != "FINISHED":
            p = self.start(resume=True)
            self.ended(p.wait(timeout=300), "none")
        left = wait_gone(self.tag, 5.0)
        if left:
            self.note("left", left, f"{left} trial process(es) at the end")
        self.check()
        if self.mo:
            self.compare()
        return self.f

    def decisions(self, run_dir):
        """Every judged decision, one line each, in an order two runs share whatever order
        they were recorded in (tests/test_mo.c's): a promotion's words name its attempt and
        checkpoint, which an interruption changes, so only its rung and standing are kept;
        then each trial's configuration and why the searcher chose it (MOTPE's split)."""
        return self.db("SELECT t.trial_no, d.iteration, d.action, CASE d.action WHEN 'promote'"
                       " THEN d.rung || ' ' || substr(d.reason, 1, instr(d.reason, ';'))"
                       " ELSE d.reason END FROM decisions d JOIN trials t ON t.id = d.trial_id"
                       " WHERE d.action IN ('continue', 'stop', 'complete', 'pause', 'promote')"
                       " ORDER BY 1, 2, 3, 4", run_dir=run_dir) + \
            self.db("SELECT trial_no, config, suggested_by FROM trials ORDER BY trial_no",
                    run_dir=run_dir)

    def front(self, run_dir):
        """`tune best --json` without what differs between two folders or attempts (the trial's
        folder, its last result's checkpoint and resumed_from): None when it fails."""
        p = subprocess.run([self.tune, "best", self.name, "--json"], cwd=run_dir,
                           capture_output=True, text=True)
        if p.returncode != 0:
            return f"exit {p.returncode}: {p.stderr.strip()}"
        best = json.loads(p.stdout)
        best["front"] = [{k: r[k] for k in ("name", "status", "early_stopped", "config",
                                            "iterations", "values", "violation")}
                         for r in best["front"]]
        return best

    def compare(self):
        """The same space run once without interruptions beside it: the same decisions and
        the same front."""
        ref = os.path.join(self.dir, "uninterrupted")
        os.makedirs(ref)
        with open(os.path.join(ref, "space.json"), "w") as f:
            json.dump(self.space, f)
        p = subprocess.run([self.tune, "run", "space.json", "--gpus", "none", "--cpus",
                            str(self.rng.choice([1, 2, 3])), "--quiet"], cwd=ref,
                           capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
        if p.returncode != 0:
            self.note("refused", 1, f"the uninterrupted run exited {p.returncode}: "
                      f"{p.stderr.strip()[-200:]}")
            return
        got, want = self.decisions(self.run_dir), self.decisions(ref)
        if got != want:
            extra = [d for d in got if d not in want]
            lost = [d for d in want if d not in got]
            self.note("decisions", max(len(extra), len(lost), 1),
                      f"not in the uninterrupted run: {extra[:2]}; only there: {lost[:2]}")
        got, want = self.front(self.run_dir), self.front(ref)
        if got != want:
            self.note("front", 1, f"tune best --json: {json.dumps(got)[:300]} against the"
                      f" uninterrupted run's {json.dumps(want)[:300]}")

    def check(self):
        if self.status() != "FINISHED":
            self.note("unfinished", 1, f"experiment {self.status()}")
        stop_early = self.sched not in ("fifo", "pbt")
        trials = self.db("SELECT t.id, t.trial_no, t.status, t.early_stopped,"
                         " json_extract(t.config, '$.lr') FROM trials t JOIN experiments e"
                         " ON e.id = t.experiment_id WHERE e.name = ?", self.name)
        ntrials = self.space["num_samples"]
        if len(trials) != ntrials:
            self.note("unfinished", ntrials - len(trials), f"{len(trials)} trials recorded")
        for tid, no, status, early, lr in trials:
            rows = self.db("SELECT iteration, json_extract(data, '$.loss') FROM results_current"
                           " WHERE trial_id = ? ORDER BY id", tid)
            its = [r[0] for r in rows]
            self.f["iterations"] += len(its)
            if status != "TERMINATED":
                self.note("unfinished", 1, f"trial {no} {status}")
            dup = len(its) - len(set(its))
            if dup:
                self.note("duplicates", dup, f"trial {no}: {its}")
            if its != sorted(its):
                self.note("duplicates", 1, f"trial {no} out of order: {its}")
            top = max(its) if its else 0
            # PBT: a clone of a donor already at the end has nothing left to run
            at_end = self.db("SELECT count(*) FROM lineage l JOIN trials t ON t.id ="
                             " l.trial_id WHERE l.trial_id = ? AND l.attempt = t.attempt AND"
                             " l.donor_iteration = ?", tid, ITERS)[0][0]
            # a resume from an unnamed checkpoint at the end, which reported nothing: tune
            # said that the iterations after the last recorded one may be lost
            said = self.db("SELECT count(*) FROM decisions WHERE trial_id = ? AND action = 'gap'"
                           " AND iteration = ?", tid, top + 1)[0][0]
            if status == "TERMINATED" and not (stop_early and early) and top != ITERS and \
                    not at_end:
                if said:
                    self.f["unrecorded"] += ITERS - top
                else:
                    self.note("unfinished", 1, f"trial {no} ended at {top}, not {ITERS}")
            if self.sched == "pbt":
                # a clone goes on at its donor's iteration + 1: what lies between the
                # trial's last own iteration before it and that is none of its history
                jumps = self.db("SELECT iteration, donor_iteration FROM lineage WHERE"
                                " trial_id = ?", tid)
                seen = sorted(set(its))
                for a, b in zip(seen, seen[1:]):
                    if b != a + 1 and not any(at >= a and d + 1 == b for at, d in jumps):
                        self.note("missing", b - a - 1, f"trial {no}: {a} -> {b} unexplained")
                if seen and seen[0] != 1:
                    self.note("missing", seen[0] - 1, f"trial {no} starts at {seen[0]}")
            else:
                missing = set(range(1, top + 1)) - set(its)
                # a gap tune said: the iterations just before the first result it resumed at
                for (g,) in self.db("SELECT iteration FROM decisions WHERE trial_id = ? AND"
                                    " action = 'gap'", tid):
                    m = g - 1
                    while m in missing:
                        missing.discard(m)
                        self.f["unrecorded"] += 1
                        m -= 1
                if missing:
                    self.note("missing", len(missing), f"trial {no}: {sorted(missing)}")
                ref = reference(self.trial, lr)
                bad = [it for it, loss in rows if ref.get(it) != loss]
                if bad:
                    self.note("wrong", len(bad), f"trial {no} at {bad[:5]}")
        # a later attempt started from scratch though results (checkpoints) came before it
        n = self.db("SELECT count(*) FROM results_all f JOIN trials t ON t.id = f.trial_id"
                    " JOIN experiments e ON e.id = t.experiment_id WHERE e.name = ?"
                    " AND f.attempt > 1 AND json_extract(f.data, '$.resumed_from') = 0"
                    " AND f.id = (SELECT min(id) FROM results_all g WHERE g.trial_id ="
                    " f.trial_id AND g.attempt = f.attempt)"
                    " AND EXISTS (SELECT 1 FROM results_all h WHERE h.trial_id = f.trial_id"
                    " AND h.id < f.id)", self.name)[0][0]
        if n:
            self.note("scratch", n, f"{n} attempt(s)")
        if snapshot(self.outside) != self.before:
            self.note("escapes", 1, "the folder beside the run changed")
        top = set(os.listdir(self.run_dir)) - {"space.json", "tune.db", "tune.db-wal",
                                                "tune.db-shm", "tune_results"}
        if top:
            self.note("escapes", len(top), f"made beside the database: {sorted(top)}")
        res = os.listdir(os.path.join(self.run_dir, "tune_results"))
        if res != [self.name]:
            self.note("escapes", 1, f"tune_results holds {res}")


def run(build, scheds, sequences, seed0, root, out=sys.stdout):
    """Runs `sequences` sequences over the schedulers in turn; returns the totals."""
    total = {k: 0 for k in FIGURES}
    total["sequences"] = 0
    for i in range(sequences):
        sched = scheds[i % len(scheds)]
        seed = seed0 + i // len(scheds)
        s = Sequence(build, sched, seed, root)
        f = s.drive()
        total["sequences"] += 1
        for k in FIGURES:
            total[k] += f[k]
        bad = [k for k in BAD if f[k]]
        print(f"{sched:15s} seed {seed:4d}: " + " ".join(f"{k} {f[k]}" for k in FIGURES)
              + ("" if not bad else "   <- " + "; ".join(s.notes)), file=out, flush=True)
        if not bad:
            shutil.rmtree(s.dir, ignore_errors=True)
    return total


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(here, "..", "..", "build"))
    ap.add_argument("--sequences", type=int, default=len(SCHEDULERS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--schedulers", default=",".join(SCHEDULERS))
    ap.add_argument("--keep", help="work here and keep the folders of failed sequences")
    a = ap.parse_args()
    scheds = a.schedulers.split(",")
    for s in scheds:
        if s not in SCHEDULERS:
            ap.error(f"unknown scheduler {s} (one of {', '.join(SCHEDULERS)})")
    root = a.keep or tempfile.mkdtemp(prefix="tune-interrupt-")
    os.makedirs(root, exist_ok=True)
    t0 = time.monotonic()
    total = run(os.path.abspath(a.build), scheds, a.sequences, a.seed, root)
    print(f"total: {total['sequences']} sequences, " +
          ", ".join(f"{k} {total[k]}" for k in FIGURES) +
          f" ({time.monotonic() - t0:.0f} s)")
    if not a.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if any(total[k] for k in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
