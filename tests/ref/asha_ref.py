#!/usr/bin/env python3
"""Reference for tune's ASHA (scheduler/asha.c): a plain transcription of Ray Tune's
AsyncHyperBandScheduler (ray/tune/schedulers/async_hyperband.py) with numpy's default
linear percentile written out, and the deviations tune documents in docs/asha.md
(a NaN at a milestone stops its trial but, as in Ray's nanpercentile, stays out of the
cutoff; an already-recorded rung ends the walk, no recording at max_t, splitmix64 for
the bracket draw). Not for: anything at run time.

It was run once to write tests/ref/asha_golden.txt, which test_scheduler.c replays
through sched_on_result and compares decision by decision:
    python3 tests/ref/asha_ref.py > tests/ref/asha_golden.txt
Standard library only, so that it runs anywhere without numpy.
"""
import math
import random

CONTINUE, STOP, COMPLETE = "continue", "stop", "complete"
MASK = (1 << 64) - 1


class SplitMix64:
    """Steele et al. 2014; the same stream as sched__splitmix64 in sched_int.h."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) * (1.0 / 9007199254740992.0)


def percentile_linear(values, q):
    """numpy.percentile(values, q * 100), method "linear" (numpy >= 1.22: virtual
    index (n-1)*q, then _lerp, computed from the upper end when t >= 0.5). Next to an
    infinity numpy would give NaN; tune takes the limit instead."""
    v = sorted(values)
    n = len(v)
    vi = (n - 1) * q
    if vi >= n - 1:
        return v[-1]
    lo = math.floor(vi)
    t = vi - lo
    a, b = v[lo], v[lo + 1]
    if t == 0 or a == b:
        return a
    if a == -math.inf:
        return a
    if b == math.inf:
        return b
    d = b - a
    return b - d * (1 - t) if t >= 0.5 else a + d * t


class Bracket:
    """Ray's _Bracket: rungs (milestone, {trial: reward}) in descending milestone order."""

    def __init__(self, min_t, max_t, rf, s):
        self.rf = rf
        max_rungs = int(math.log(max_t / min_t) / math.log(rf) - s + 1)
        self.rungs = [(min_t * rf ** (k + s), {}) for k in reversed(range(max_rungs))]
        # numpy.nanpercentile(list, (1 - 1/rf) * 100) divides the percentile by 100
        self.q = ((1 - 1 / rf) * 100) / 100
        self.nan_seen = {}  # rung index -> trials judged there on a NaN

    def cutoff(self, recorded):
        if not recorded:
            return None
        return percentile_linear(list(recorded.values()), self.q)

    def on_result(self, trial, cur_iter, cur_rew):
        """Returns (action, rung index from the top, cutoff or None); rung None if the
        result was not judged."""
        for i, (milestone, recorded) in enumerate(self.rungs):
            judged = trial in recorded or trial in self.nan_seen.get(i, ())
            if cur_iter >= milestone and judged:
                break  # decided at this rung already (Ray: only if not stop_last_trials)
            if cur_iter < milestone or judged:
                continue
            cutoff = self.cutoff(recorded)
            if math.isnan(cur_rew):
                # tune stops a diverged trial; its NaN is marked as judged here but,
                # as Ray's nanpercentile ignores it, never enters the cutoff.
                self.nan_seen.setdefault(i, set()).add(trial)
                return STOP, i, cutoff
            action = CONTINUE
            if cutoff is not None and cur_rew < cutoff:
                action = STOP
            recorded[trial] = cur_rew
            return action, i, cutoff
        return CONTINUE, None, None


class Asha:
    def __init__(self, mode_max, max_t, grace, rf, brackets, seed):
        self.sign = 1.0 if mode_max else -1.0
        self.max_t = max_t
        self.brackets = [Bracket(grace, max_t, rf, s) for s in range(brackets)]
        self.rng = SplitMix64(seed)
        self.trial_bracket = {}
        self.done = set()

    def on_trial_add(self, trial):
        sizes = [len(b.rungs) for b in self.brackets]
        probs = [math.exp(s - max(sizes)) for s in sizes]
        total = 0.0
        for p in probs:
            total += p
        cdf, acc = [], 0.0
        for p in probs:
            acc += p / total
            cdf.append(acc)
        cdf = [c / acc for c in cdf]
        u = self.rng.uniform()
        s = 0
        while s < len(cdf) - 1 and not cdf[s] > u:
            s += 1
        self.trial_bracket[trial] = s
        return s

    def on_result(self, trial, time, value):
        """(action, judged, bracket, rung from the bottom, milestone, cutoff) in the
        user's scale, as sched_decision_t holds them."""
        s = self.trial_bracket[trial]
        nan = float("nan")
        if time >= self.max_t:
            return COMPLETE, 1, s, -1, nan, nan
        b = self.brackets[s]
        reward = value if math.isnan(value) else self.sign * value
        action, i, cutoff = b.on_result(trial, time, reward)
        if i is None:
            return action, 0, s, -1, nan, nan
        cut = nan if cutoff is None else self.sign * cutoff
        return action, 1, s, len(b.rungs) - 1 - i, b.rungs[i][0], cut

    def rungs(self):
        out = []
        for s, b in enumerate(self.brackets):
            n = len(b.rungs)
            for i in reversed(range(n)):
                milestone, recorded = b.rungs[i]
                if milestone >= self.max_t:
                    continue
                c = b.cutoff(recorded)
                out.append((s, n - 1 - i, milestone, len(recorded),
                            float("nan") if c is None else self.sign * c))
        return out


def simulate(out, rnd, cfg, ntrials, nresults, nan_rate, ties, back_rate):
    mode_max, max_t, grace, rf, brackets, seed = cfg
    asha = Asha(*cfg)
    out.append("config %d %r %r %r %d %d" % (mode_max, max_t, grace, rf, brackets, seed))
    quality, clock, live = {}, {}, []
    next_trial = 0

    def add():
        nonlocal next_trial
        t = next_trial
        next_trial += 1
        out.append("add %d %d" % (t, asha.on_trial_add(t)))
        quality[t] = rnd.random()
        clock[t] = 0.0
        live.append(t)

    for _ in range(min(8, ntrials)):
        add()
    for _ in range(nresults):
        if next_trial < ntrials and (not live or rnd.random() < 0.12):
            add()
        if not live:
            break
        t = rnd.choice(live)
        r = rnd.random()
        if r < back_rate and clock[t] > grace:
            time = clock[t] - rnd.choice([grace, 1.0, 2.0])  # out of order
        elif r < 0.15:
            time = clock[t] + rnd.choice([3, 5, 10, 20]) * grace  # jumps over milestones
        elif r < 0.20:
            time = clock[t]  # the same time again
        else:
            time = clock[t] + grace * rnd.choice([0.5, 1.0, 1.0, 1.0])
        clock[t] = max(clock[t], time)
        if rnd.random() < nan_rate:
            value = float("nan")
        elif ties:
            value = float(rnd.randint(0, 5))
        else:
            acc = quality[t] * (1 - math.exp(-time / (max_t / 4))) + rnd.gauss(0, 0.05)
            value = round(acc if mode_max else 1 - acc, 3)
        action, judged, b, rung, milestone, cutoff = asha.on_result(t, time, value)
        out.append("result %d %r %r %s %d %d %d %r %r"
                   % (t, time, value, action, judged, b, rung, milestone, cutoff))
        if action != CONTINUE or rnd.random() < 0.01:  # stopped, completed, or failed
            out.append("complete %d" % t)
            live.remove(t)
    for s, k, milestone, recorded, cutoff in asha.rungs():
        out.append("rung %d %d %r %d %r" % (s, k, milestone, recorded, cutoff))
    out.append("end")


def main():
    rnd = random.Random(20240611)
    out = [
        "# Golden decisions for tune's ASHA, written by tests/ref/asha_ref.py (run once).",
        "# config mode_max max_t grace_period reduction_factor brackets seed",
        "# add trial expected_bracket",
        "# result trial time value action judged bracket rung milestone cutoff",
        "# complete trial",
        "# rung bracket rung milestone recorded cutoff   (sched_policy_rungs at the end)",
        "# end",
    ]
    # (mode_max, max_t, grace, rf, brackets, seed), trials, results, nan rate, ties, back
    simulate(out, rnd, (1, 81.0, 1.0, 3.0, 1, 1), 250, 2000, 0.0, False, 0.0)
    simulate(out, rnd, (0, 100.0, 1.0, 4.0, 3, 42), 250, 2000, 0.03, False, 0.01)
    simulate(out, rnd, (1, 50.0, 2.5, 2.0, 2, 7), 250, 1500, 0.02, True, 0.02)
    simulate(out, rnd, (0, 1000.0, 1.0, 10.0, 2, 99), 150, 1000, 0.0, False, 0.0)
    simulate(out, rnd, (1, 60.0, 0.5, 2.5, 4, (1 << 63) + 5), 250, 2000, 0.03, True, 0.01)
    print("\n".join(out))


if __name__ == "__main__":
    main()
