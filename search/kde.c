/* search/kde.c: HpBandSter's BOHB KDE, statsmodels' KDEMultivariate with normal-reference
 * bandwidths, the density the TPE searcher's bohb preset compares; its naive pdf is the
 * reference for the pruned one (tpe.kde_matches_statsmodels, tpe.kde_pruned_equals_naive).
 * Not for: Optuna's univariate estimator (parzen.c) or choosing the rows (tpe_split.c). Learnt
 * from statsmodels' kernel_density.py and kernels.py and HpBandSter's bohb.py; no code
 * copied. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/kde_int.h"
#include "search/space_int.h"
#include "search/special_int.h"

/* the pruned pdf's tolerance: the Parzen window's (SPACE__PARZEN_TOL) */
#define KDE_TOL 1e-12

void space__kde_free(space__kde_t *k)
{
    if (!k) return;
    free(k->data);
    free(k->bw);
    free(k->levels);
    memset(k, 0, sizeof *k);
}

int space__kde_fit(space__kde_t *k, const double *data, size_t n, size_t d, const size_t *ncat,
                   double min_bandwidth)
{
    memset(k, 0, sizeof *k);
    k->n = n;
    k->d = d;
    k->ncat = ncat;
    k->data = malloc((n * d + 1) * sizeof *k->data);
    k->bw = malloc((d + 1) * sizeof *k->bw);
    k->levels = malloc((d + 1) * sizeof *k->levels);
    if (!k->data || !k->bw || !k->levels) {
        space__kde_free(k);
        return SPACE_ENOMEM;
    }
    memcpy(k->data, data, n * d * sizeof *data);
    /* bw='normal_reference': 1.06 * std (ddof 0) * nobs^(-1/(4 + k_vars)), every column,
     * categorical ones included; then bohb.py clips at min_bandwidth. */
    double shrink = pow((double)n, -1.0 / (4.0 + (double)d)), norm = 1.0 / (double)n;
    for (size_t j = 0; j < d; j++) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < n; i++)
            mean += data[i * d + j];
        mean /= (double)n;
        for (size_t i = 0; i < n; i++)
            var += (data[i * d + j] - mean) * (data[i * d + j] - mean);
        var /= (double)n;
        k->bw[j] = fmax(1.06 * sqrt(var) * shrink, min_bandwidth);
        k->levels[j] = 0;
        if (ncat[j] > 0) {
            /* aitchison_aitken's num_levels: distinct values in the data, not choices */
            for (size_t i = 0; i < n; i++) {
                size_t seen = 0;
                for (size_t i2 = 0; i2 < i && !seen; i2++)
                    seen = data[i2 * d + j] == data[i * d + j];
                if (!seen) k->levels[j] += 1;
            }
        } else {
            norm /= k->bw[j];
        }
    }
    k->norm = norm;
    return SPACE_OK;
}

/* The categorical factor of one row: Aitchison-Aitken, 1 - h on a match, else
 * h / (num_levels - 1), which statsmodels lets become inf when one level was seen. */
static double aa(double h, double levels, double xi, double x)
{
    return xi == x ? 1.0 - h : h / (levels - 1.0);
}

double space__kde_pdf_naive(const space__kde_t *k, const double *x)
{
    double s = 0;
    for (size_t i = 0; i < k->n; i++) {
        const double *row = k->data + i * k->d;
        double p = 1;
        for (size_t j = 0; j < k->d; j++) {
            if (k->ncat[j] > 0) {
                p *= aa(k->bw[j], k->levels[j], row[j], x[j]);
            } else {
                double t = (row[j] - x[j]) / k->bw[j];
                p *= exp(-0.5 * t * t) / SPACE__SQRT_2PI;
            }
        }
        s += p;
    }
    return s * k->norm;
}

/* Rows whose summed squared Gaussian distance passes K2 = 80 are skipped: each adds at
 * most e^-40 times the largest kernel value; when the skipped rows together could exceed
 * KDE_TOL of the sum, the sum is redone over every row. */
double space__kde_pdf(const space__kde_t *k, const double *x)
{
    const double K2 = 80.0;
    double s = 0, catmax = 1, gauss = 1;
    size_t skipped = 0;
    for (size_t j = 0; j < k->d; j++) {
        if (k->ncat[j] > 0)
            catmax *= fmax(1.0 - k->bw[j], k->bw[j] / (k->levels[j] - 1.0));
        else
            gauss /= SPACE__SQRT_2PI;
    }
    if (!isfinite(catmax)) return space__kde_pdf_naive(k, x);
    for (size_t i = 0; i < k->n; i++) {
        const double *row = k->data + i * k->d;
        double acc = 0, p = 1;
        size_t j = 0;
        for (; j < k->d; j++) {
            if (k->ncat[j] > 0) {
                p *= aa(k->bw[j], k->levels[j], row[j], x[j]);
            } else {
                double t = (row[j] - x[j]) / k->bw[j];
                acc += t * t;
                if (acc > K2) break;
            }
        }
        if (j < k->d) {
            skipped++;
            continue;
        }
        s += p * exp(-0.5 * acc) * gauss;
    }
    if ((double)skipped * catmax * gauss * exp(-0.5 * K2) > KDE_TOL * s)
        return space__kde_pdf_naive(k, x);
    return s * k->norm;
}
