"""bench/search/curve/searchers.py: the searchers the curve prototype compares, over a pool
of configurations X (rows scaled to [0, 1]): random, TPE on one rung (tune's TPE, as
asynchronous BOHB), and the curve searchers: each trial's partial curve extrapolated to
max_t by a power law sharing its exponent across trials (curve.py), then either TPE on
the extrapolated values of every trial (TpeCurve) or a kernel regression over
configurations with expected improvement (KernelEI). Not for: product code; the C design
is in README.md. Every searcher is deterministic from its seed."""
import math

import numpy as np

from curve import CurveModel


class Base:
    def __init__(self, X, T, seed, curve_stop=False, rand_frac=0.0):
        self.X, self.T = X, T
        self.rand_frac = rand_frac
        self.rng = np.random.default_rng(seed)
        self.row, self.curves, self.running = {}, {}, set()
        self.cm = CurveModel(T)
        self.curve_stop = curve_stop
        self.rung_pred = {}
        self._pending = None
        if curve_stop:
            self.keep = self._keep

    def observe(self, tr, b, y):
        self.curves[tr][0].append(b)
        self.curves[tr][1].append(y if math.isfinite(y) else math.inf)
        self.cm.dirty = True

    def end(self, tr):
        self.running.discard(tr)

    def _start(self, row):
        tr = len(self.row)
        self.row[tr] = row
        self.curves[tr] = ([], [])
        self.running.add(tr)
        return row

    def random(self, unused):
        return int(self.rng.choice(np.flatnonzero(unused)))

    def explore(self):
        """BOHB's random fraction: this suggestion ignores the model."""
        return self.rand_frac > 0 and self.rng.random() < self.rand_frac

    def _keep(self, tr, b, y, rec):
        """ASHA's rule on predicted final values instead of the rung's raw values."""
        self.cm.refit(self.curves)
        p = self.cm.predict(*self.curves[tr])
        preds = self.rung_pred.setdefault(b, [])
        go = True if not preds else p <= np.percentile(preds, 100 / 3)
        preds.append(p)
        return go


class Random(Base):
    name = "random"

    def suggest(self, unused):
        return self._start(self.random(unused))


def parzen_logpdf(P, C, prior_w=None):
    """log density at the candidates C of a Gaussian mixture, a component per row of P
    (Scott's bandwidth per dimension, clipped), plus a uniform prior component on [0, 1]^d
    with one component's weight, as Optuna's TPE adds a prior."""
    k, d = P.shape
    sd = P.std(axis=0) if k > 1 else np.full(d, 0.5)
    bw = np.clip(sd * k ** (-1.0 / (d + 4)), 0.03, 0.5)
    z = (C[:, None, :] - P[None, :, :]) / bw
    lc = -0.5 * (z * z).sum(axis=2) - np.log(bw).sum() - 0.5 * d * math.log(2 * math.pi)
    lc = np.concatenate([lc, np.zeros((len(C), 1))], axis=1)  # uniform prior: log 1
    m = lc.max(axis=1, keepdims=True)
    return (m[:, 0] + np.log(np.exp(lc - m).sum(axis=1))) - math.log(k + 1)


def n_good(n):
    return max(1, min(math.ceil(0.1 * n), 25))  # Optuna's default gamma


class TpeRung(Base):
    """tune's TPE as it stands: the highest rung with >= max(10, 2(d+1)) values; good = the
    best gamma of that rung, bad = the rest plus trials that ended below it plus the
    running ones (a constant liar). Scores every unused row by log l - log g."""
    name = "TPE(rung)"

    def __init__(self, X, T, seed, milestones, **kw):
        super().__init__(X, T, seed, **kw)
        self.ms = list(milestones) + [T]
        self.nmin = max(10, 2 * (X.shape[1] + 1))

    def suggest(self, unused):
        at = {}
        for m in reversed(self.ms):
            at = {tr: c[1][c[0].index(m)] for tr, c in self.curves.items() if m in c[0]}
            if len(at) >= self.nmin:
                break
        else:
            return self._start(self.random(unused))
        trs = sorted(at, key=lambda t: (at[t], t))
        g = n_good(len(trs))
        good = [self.row[t] for t in trs[:g]]
        bad = [self.row[t] for t in trs[g:]] + [self.row[t] for t in self.curves
                                                 if t not in at]
        return self._start(self._best(unused, good, bad))

    def _best(self, unused, good, bad):
        cand = np.flatnonzero(unused)
        C = self.X[cand]
        s = parzen_logpdf(self.X[good], C) - parzen_logpdf(self.X[bad], C)
        return int(cand[np.argmax(s)])


class TpeCurve(TpeRung):
    """TPE whose good/bad split ranks every trial by its extrapolated final value."""
    name = "TPE(curve)"

    def suggest(self, unused):
        trs = [t for t, c in self.curves.items() if c[0]]
        if len(trs) < self.nmin or self.explore():
            return self._start(self.random(unused))
        self.cm.refit(self.curves)
        pred = {t: self.cm.predict(*self.curves[t]) for t in trs}
        trs.sort(key=lambda t: (pred[t], t))
        g = n_good(len(trs))
        return self._start(self._best(unused, [self.row[t] for t in trs[:g]],
                                      [self.row[t] for t in trs[g:]]))


class KernelEI(Base):
    """Nadaraya-Watson regression of the extrapolated final value over configurations,
    each trial weighted by how much of its curve was seen; expected improvement over the
    best extrapolated value; the bandwidth chosen by leave-one-out error on a small grid."""
    name = "KernelEI(curve)"
    BW = (0.05, 0.1, 0.2, 0.4)

    def __init__(self, X, T, seed, nmin=None, **kw):
        super().__init__(X, T, seed, **kw)
        self.nmin = nmin or max(10, 2 * (X.shape[1] + 1))
        self.h = 0.2

    def suggest(self, unused):
        trs = [t for t, c in self.curves.items() if c[0]]
        if len(trs) < self.nmin or self.explore():
            return self._start(self.random(unused))
        self.cm.refit(self.curves)
        yhat = np.array([self.cm.predict(*self.curves[t]) for t in trs])
        seen = np.array([self.curves[t][0][-1] for t in trs], dtype=float)
        c = seen / (seen + 0.1 * self.T)  # confidence: a longer curve, a surer value
        P = self.X[[self.row[t] for t in trs]]
        D2 = ((P[:, None, :] - P[None, :, :]) ** 2).sum(axis=2)
        best_err = math.inf
        for h in self.BW:  # leave-one-out over the observed trials
            K = np.exp(-0.5 * D2 / (h * h)) * c[None, :]
            np.fill_diagonal(K, 0.0)
            mu = (K @ yhat + 1e-6 * yhat.mean()) / (K.sum(axis=1) + 1e-6)
            err = float((c * (mu - yhat) ** 2).sum())
            if err < best_err:
                best_err, self.h = err, h
        cand = np.flatnonzero(unused)
        C = self.X[cand]
        d2 = ((C[:, None, :] - P[None, :, :]) ** 2).sum(axis=2)
        K = np.exp(-0.5 * d2 / (self.h ** 2)) * c[None, :]
        m0 = 1.0  # prior pseudo-weight: the population's mean and spread
        ybar, v0 = yhat.mean(), yhat.var() + 1e-12
        W = K.sum(axis=1)
        mu = (K @ yhat + m0 * ybar) / (W + m0)
        var = (K * (yhat[None, :] - mu[:, None]) ** 2).sum(axis=1) + m0 * v0
        var /= W + m0
        neff = W * W / ((K * K).sum(axis=1) + 1e-300)
        sd = np.sqrt(var * (1 + 1 / (1 + neff)))
        z = (yhat.min() - mu) / sd
        ei = sd * (z * _ncdf(z) + np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi))
        return self._start(int(cand[np.argmax(ei)]))


def _ncdf(z):
    return 0.5 * np.vectorize(math.erfc)(-z / math.sqrt(2))
