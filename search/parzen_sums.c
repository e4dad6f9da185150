/* search/parzen_sums.c: the Parzen estimator's log density summed over a window of
 * components around x instead of all of them (space__parzen_log_pdf): per-block
 * bookkeeping of weights and bandwidths kept by every fit, the vectorised block sum, and
 * the walk (parzen_walk.h) that stops when what is left cannot matter. Within 2
 * SPACE__PARZEN_TOL of the reference, space__parzen_log_pdf_naive (parzen.c): held to it
 * by tpe.windowed_log_pdf_equals_naive and tpe.fast_log_pdf_equals_reference. Not for: the
 * estimator's rules (parzen.c, parzen_parts.h) or the single-precision bounds
 * (parzen_bounds.c). */
#include <math.h>

#include "search/parzen_parts.h"
#include "search/parzen_walk.h"

/* ---- the windowed sums' bookkeeping --------------------------------------------------
 * Per block of PZ_BLOCK components (block b holds components [b PZ_BLOCK,
 * (b + 1) PZ_BLOCK)): bws[b] = the weight of blocks before b, bsl[b] / bsr[b] = the
 * largest sigma over blocks 0..b / b..last. Per block rather than per component because
 * the walk tests its stopping rule only between blocks, and a weighing of 10,000
 * components then writes 313 of each instead of three chains of 10,000 dependent
 * additions and maxima. A block's weight is a fixed tree, so both fits (parzen.c and
 * parzen_incr.c) give the same bits. */
/* One block's weight and largest sigma, each as a fixed tree over its 32 components (a
 * max is exact in any order; the sum's order is this one in both fits). */
SPACE__CLONES
static void block_stats(const double *restrict w, const double *restrict sg, double *sum,
                        double *max)
{
    double a[PZ_BLOCK], m[PZ_BLOCK];
    for (int i = 0; i < PZ_BLOCK; i++)
        a[i] = w[i], m[i] = sg[i];
        /* fixed counts: straight-line vector code (PZ_BLOCK is 32) */
#define PZ_FOLD(h)                                                                                 \
    for (int i = 0; i < (h); i++) {                                                                \
        a[i] += a[i + (h)];                                                                        \
        m[i] = m[i + (h)] > m[i] ? m[i + (h)] : m[i];                                              \
    }
    PZ_FOLD(16)
    PZ_FOLD(8)
    PZ_FOLD(4)
    PZ_FOLD(2)
    PZ_FOLD(1)
#undef PZ_FOLD
    *sum = a[0];
    *max = m[0];
}

void space__parzen_blocks_fill(space__parzen_t *pe)
{
    size_t n = pe->n, nb = (n + PZ_BLOCK - 1) / PZ_BLOCK;
    double run = 0, smax = 0;
    pe->bws[0] = 0;
    for (size_t b = 0; b < nb; b++) {
        size_t k0 = b * PZ_BLOCK;
        double sum, m;
        if (k0 + PZ_BLOCK <= n) {
            block_stats(pe->w + k0, pe->sigma + k0, &sum, &m);
        } else { /* the last, short block: weight 0 and sigma 0 change neither */
            double w[PZ_BLOCK], sg[PZ_BLOCK];
            for (size_t i = 0; i < PZ_BLOCK; i++) {
                w[i] = k0 + i < n ? pe->w[k0 + i] : 0.0;
                sg[i] = k0 + i < n ? pe->sigma[k0 + i] : 0.0;
            }
            block_stats(w, sg, &sum, &m);
        }
        pe->bws[b + 1] = run = run + sum;
        pe->bsr[b] = m;
        pe->bsl[b] = smax = m > smax ? m : smax;
    }
    for (size_t b = nb; b-- > 1;)
        pe->bsr[b - 1] = pe->bsr[b] > pe->bsr[b - 1] ? pe->bsr[b] : pe->bsr[b - 1];
}

/* ---- the sums ------------------------------------------------------------------------- */
/* The sum over a block of PZ_BLOCK components of coef_i exp(-t^2 / 2),
 * t = (x - mu[i]) isg[i], coef_i = w[i] czi[i] (times isg[i] unless Optuna 3.1.0's unscaled
 * density): comp_pdf's continuous density (parzen.c) in vector form. A fixed count and no
 * aliasing, which is what lets -O2 vectorise it, and the products added as a fixed tree
 * (PZ_TREE32) instead of one after another: no chain of dependent additions, and the
 * tree's order does not depend on the vector width. The same operations in every copy
 * (SPACE__CLONES), so the same results on every CPU. */
SPACE__CLONES
static double sum_block(const double *restrict mu, const double *restrict isg,
                        const double *restrict w, const double *restrict czi, int unscaled,
                        double x)
{
    double p[PZ_BLOCK];
    if (unscaled) { /* two loops: a choice inside one kept it from vectorising */
        for (int i = 0; i < PZ_BLOCK; i++) {
            double t = (x - mu[i]) * isg[i];
            p[i] = (w[i] * czi[i]) * space__exp_nonpos_inl(-0.5 * t * t);
        }
    } else {
        for (int i = 0; i < PZ_BLOCK; i++) {
            double t = (x - mu[i]) * isg[i];
            p[i] = ((w[i] * czi[i]) * isg[i]) * space__exp_nonpos_inl(-0.5 * t * t);
        }
    }
    double sum;
    PZ_TREE32(p, sum);
    return sum;
}

/* Components from..to-1 (at most PZ_BLOCK) at x: the reference's term for stepped
 * parameters; for continuous ones sum_block with each component's constant factor
 * computed once per fit (the windowed walk's inner loop, where the time goes). A short
 * block at either end of the means is padded with components of weight 0 at x, which add
 * exactly 0. */
static double block_sum(space__parzen_t *pe, size_t from, size_t to, double x)
{
    double s = 0;
    if (pe->q > 0) {
        for (size_t k = from; k < to; k++)
            s += space__parzen_term(pe, k, x);
        return s;
    }
    if (!pe->coef_ready) /* a fit's factors, when first needed (the kept one has them all) */
        for (size_t k = from; k < to; k++) {
            if (!isnan(pe->czi[k])) continue;
            if (isnan(pe->z[k])) pe->z[k] = space__parzen_comp_z(pe, pe->mu[k], pe->sigma[k]);
            pe->isg[k] = pz_comp_isg(pe, pe->sigma[k]);
            pe->czi[k] = pz_comp_czi(pe, k);
        }
    int unscaled = pe->optuna31_unscaled;
    if (to - from == PZ_BLOCK)
        return sum_block(pe->mu + from, pe->isg + from, pe->w + from, pe->czi + from, unscaled, x);
    double mu[PZ_BLOCK], isg[PZ_BLOCK], w[PZ_BLOCK], czi[PZ_BLOCK];
    for (size_t i = 0; i < PZ_BLOCK; i++) {
        int in = i < to - from;
        mu[i] = in ? pe->mu[from + i] : x;
        isg[i] = in ? pe->isg[from + i] : 1.0;
        w[i] = in ? pe->w[from + i] : 0.0;
        czi[i] = in ? pe->czi[from + i] : 1.0;
    }
    return sum_block(mu, isg, w, czi, unscaled, x);
}

double space__parzen_log_pdf(space__parzen_t *pe, double x)
{
    if (pe->ncat > 0) return space__parzen_log_pdf_naive(pe, x);
    return log(pz_walk(pe, x, pe->tol > 0 ? pe->tol : SPACE__PARZEN_TOL, block_sum, NULL));
}
