"""bench/search/curve/curve.py: each trial's partial learning curve extrapolated to max_t.

y_i(b) = a_i + beta_i * (b^-gamma - T^-gamma), so that a_i is the predicted value at T.
gamma is shared by all trials (DPL's power law, with the exponent pooled instead of
predicted by a network) and chosen on a grid by how well a curve's first third predicts
its last point; beta_i is a weighted least-squares fit shrunk towards the population's
median slope beta_bar (ridge), so a one-point curve gets the population's shape and a long
curve its own. Values are capped at the 90th percentile of all observed values (a diverged
run, NaN or huge, counts as that cap), so one divergence cannot bend the fits. Not for: the
cross-configuration model (searchers.py)."""
import math

import numpy as np

GAMMAS = (0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0)
LAMBDA = 1.0  # ridge strength on beta - beta_bar, in units of one observation's weight


def fit(b, y, gamma, T, beta_bar, lam=LAMBDA):
    """(a, beta) of the weighted ridge fit; weights w = b (the latest points matter most,
    since validation losses can turn up late)."""
    phi = b ** -gamma - T ** -gamma
    w = b / b.mean()
    sw, swp, swpp = w.sum(), (w * phi).sum(), (w * phi * phi).sum()
    swy, swpy = (w * y).sum(), (w * phi * y).sum()
    # normal equations of sum w (y - a - beta phi)^2 + lam (beta - beta_bar)^2
    A = np.array([[sw, swp], [swp, swpp + lam]])
    r = np.array([swy, swpy + lam * beta_bar])
    a, beta = np.linalg.solve(A, r)
    return a, beta


class CurveModel:
    def __init__(self, T):
        self.T = float(T)
        self.gamma, self.beta_bar, self.cap = 0.5, 0.0, math.inf
        self.dirty = True

    def _clean(self, y):
        y = np.asarray(y, dtype=float)
        return np.where(np.isfinite(y), np.minimum(y, self.cap), self.cap)

    def refit(self, curves):
        if not self.dirty:
            return
        self.dirty = False
        allv = np.concatenate([np.asarray(c[1], float) for c in curves.values() if c[1]])
        fv = allv[np.isfinite(allv)]
        self.cap = float(np.percentile(fv, 90)) if len(fv) else math.inf
        long = [(np.asarray(c[0], float), self._clean(c[1])) for c in curves.values()
                if len(c[0]) >= 6]
        if not long:
            return
        best = (math.inf, self.gamma, self.beta_bar)
        for g in GAMMAS:
            slopes = [fit(b, y, g, self.T, 0.0, 1e-9)[1] for b, y in long]
            bb = float(np.median(slopes))
            err = 0.0
            for b, y in long:
                k = max(2, len(b) // 3)
                a, beta = fit(b[:k], y[:k], g, self.T, bb)
                pred = a + beta * (b[-1] ** -g - self.T ** -g)
                err += (pred - y[-1]) ** 2
            if err < best[0]:
                best = (err, g, bb)
        _, self.gamma, self.beta_bar = best

    def predict(self, b, y):
        b = np.asarray(b, dtype=float)
        a, _ = fit(b, self._clean(y), self.gamma, self.T, self.beta_bar)
        return float(a)
