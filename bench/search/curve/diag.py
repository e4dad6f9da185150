"""bench/search/curve/diag.py: how well the pooled power law (curve.py) ranks configurations
by their final value from a curve cut at b, against the raw value at b (Spearman, all rows
cut at b; the model also sees a tenth of the rows in full, as it would see the few long
curves ASHA lets through, to choose its exponent). Usage: diag.py [tasks...]"""
import sys

import numpy as np
from scipy.stats import spearmanr

import tables
from curve import CurveModel


def main(tasks):
    rng = np.random.default_rng(0)
    print("| task | b | Spearman raw y(b) | Spearman extrapolated | gamma |")
    print("|---|---|---|---|---|")
    for task in tasks:
        X, Y = tables.load(task)
        n, T = Y.shape
        fin = np.nan_to_num(Y[:, -1], nan=1e9)
        for b in (1, 3, 9, 27):
            if b >= T:
                continue
            curves = {}
            longer = rng.permutation(n)[: n // 10]
            for i in range(n):
                k = T if i in longer else b
                curves[i] = (list(range(1, k + 1)), list(Y[i, :k]))
            cm = CurveModel(T)
            cm.refit(curves)
            cut = {i: (list(range(1, b + 1)), list(Y[i, :b])) for i in range(n)}
            pred = np.array([cm.predict(*cut[i]) for i in range(n)])
            raw = np.nan_to_num(Y[:, b - 1], nan=1e9)
            print(f"| {task} | {b} | {spearmanr(raw, fin).correlation:.3f} | "
                  f"{spearmanr(pred, fin).correlation:.3f} | {cm.gamma} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["mlp", "cnn"] + list(tables.SHORT.values()))
