"""bench/search/curve/sim.py: a small asynchronous replay of a learning-curve table under
ASHA (stopping type, as Ray's AsyncHyperBand and tune's scheduler/asha), W workers, in the
pool protocol: every row of the table is trained at most once, and each new trial's row is
chosen among the unused rows by the searcher. Virtual time counts iterations (every
iteration costs 1; TaskSet records no time, and the brief measures iterations / W).
Not for: tune's own simulator (sim/, cli/simulate.c), which the product benchmark uses.

A searcher is an object with suggest(unused_rows) -> row, observe(trial, b, y) and
end(trial); this is tune's searcher interface (search/searcher.h) with the pool's candidate
rows made explicit. ASHA may additionally ask searcher.keep(trial, b, y, rung_values) when
the searcher has it (the curve model's continue/stop decision); otherwise ASHA's own rule.
"""
import heapq
import math

import numpy as np

GRID = 201


def milestones(grace, rf, max_t):
    out, r = [], grace
    while r < max_t:
        out.append(r)
        r *= rf
    return out


class Asha:
    """Ray's rule: at a rung, a trial continues unless its value is worse than the
    (1 - 1/rf) quantile of the values recorded there before it."""

    def __init__(self, grace, rf, max_t):
        self.rf, self.max_t = rf, max_t
        self.rungs = {m: [] for m in milestones(grace, rf, max_t)}

    def on_result(self, b, y, searcher, trial):
        if b not in self.rungs:
            return b < self.max_t
        rec = self.rungs[b]
        yy = y if math.isfinite(y) else math.inf
        keep = getattr(searcher, "keep", None)
        if keep is not None:
            go = keep(trial, b, yy, rec)
        elif not rec:
            go = True
        else:
            r = np.array(rec)
            cutoff = np.percentile(np.where(np.isfinite(r), r, 1e300), 100 / self.rf)
            go = yy <= cutoff
        rec.append(yy)
        return go and b < self.max_t


def run(X, Y, searcher, workers=4, budget_full=20, grace=1, rf=3, seed=0):
    """Replays until budget_full * max_t iterations were trained. Returns the normalised
    regret of the incumbent on GRID points of [0, budget / W], and the number of trials."""
    n, T = Y.shape
    budget = budget_full * T
    fin = Y[:, -1]
    best = np.nanmin(fin)
    med = np.nanmedian(np.where(np.isfinite(fin), fin, np.inf))
    asha = Asha(grace, rf, T)
    unused = np.ones(n, dtype=bool)
    heap, used_iters, trials = [], 0, 0
    row_of, it_of = {}, {}
    incumbent = []  # (time, full-budget value)

    def launch(w, t):
        nonlocal trials, used_iters
        if used_iters >= budget or not unused.any():
            return
        row = searcher.suggest(unused)
        unused[row] = False
        tr = trials
        trials += 1
        row_of[tr], it_of[tr] = row, 1
        used_iters += 1
        heapq.heappush(heap, (t + 1.0, w, tr))

    for w in range(workers):
        launch(w, 0.0)
    while heap:
        t, w, tr = heapq.heappop(heap)
        b = it_of[tr]
        y = Y[row_of[tr], b - 1]
        searcher.observe(tr, b, y)
        if b == T:
            incumbent.append((t, y))
        if asha.on_result(b, y, searcher, tr) and used_iters < budget:
            it_of[tr] = b + 1
            used_iters += 1
            heapq.heappush(heap, (t + 1.0, w, tr))
        else:
            searcher.end(tr)
            launch(w, t)
    horizon = budget / workers
    grid = np.linspace(0, horizon, GRID)
    reg = np.ones(GRID)
    cur = math.inf
    inc = sorted(incumbent)
    j = 0
    for i, g in enumerate(grid):
        while j < len(inc) and inc[j][0] <= g + 1e-9:
            if math.isfinite(inc[j][1]):
                cur = min(cur, inc[j][1])
            j += 1
        if math.isfinite(cur):
            reg[i] = min(1.0, max(0.0, (cur - best) / (med - best)))
    return reg, trials
