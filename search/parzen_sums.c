/* search/parzen_sums.c: the Parzen estimator's log density summed over a window of
 * components around x instead of all of them (space__parzen_log_pdf): the vectorised
 * block sum, and the walk (parzen_walk.h) that stops when what is left cannot matter,
 * over the per-block bookkeeping every fit keeps (parzen_blocks.c). Within 2
 * SPACE__PARZEN_TOL of the reference, space__parzen_log_pdf_naive (parzen.c): held to it
 * by tpe.windowed_log_pdf_equals_naive and tpe.fast_log_pdf_equals_reference. Not for: the
 * estimator's rules (parzen.c, parzen_parts.h) or the single-precision bounds
 * (parzen_bounds.c). */
#include <math.h>

#include "search/parzen_parts.h"
#include "search/parzen_walk.h"

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
