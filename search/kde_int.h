/* search internals: HpBandSter's BOHB KDE (statsmodels' KDEMultivariate), the density the
 * TPE searcher's bohb preset compares (kde.c). Not for: Optuna's univariate estimator
 * (parzen_int.h), or anything outside search/ and its tests. */
#ifndef TUNE_KDE_INT_H
#define TUNE_KDE_INT_H

#include <stddef.h>

/* Product kernels: Gaussian (not truncated) for continuous columns in [0, 1], Aitchison-
 * Aitken for categorical ones, with normal-reference bandwidths 1.06 sd n^(-1/(4+d))
 * clipped below at min_bandwidth (bohb.py new_result). */
typedef struct space__kde {
    size_t n, d;
    double *data;       /* n x d, row-major */
    double *bw;         /* d bandwidths */
    const size_t *ncat; /* d: 0 continuous, else the number of choices (borrowed) */
    double *levels;     /* d: distinct values seen per categorical column (statsmodels) */
    double norm;        /* 1 / (n * prod of continuous bandwidths) */
} space__kde_t;
/* Fits k (overwritten, not freed first) to n rows of d columns; 0 or SPACE_ENOMEM. Free
 * with space__kde_free. */
int space__kde_fit(space__kde_t *k, const double *data, size_t n, size_t d, const size_t *ncat,
                   double min_bandwidth);
void space__kde_free(space__kde_t *k); /* NULL-safe */
/* statsmodels' pdf at x[d]; the pruned one skips rows whose Gaussian factor is already
 * below exp(-K^2/2) and falls back to every row when the skipped rows could matter. */
double space__kde_pdf(const space__kde_t *k, const double *x);
double space__kde_pdf_naive(const space__kde_t *k, const double *x);

#endif
