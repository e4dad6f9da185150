/* search/parzen_bounds.c: bounds lo <= log g(x) <= hi on the kept estimator's windowed log
 * density from a single-precision sum over a narrower window, with the written proof of
 * its error budget. The acquisition needs only the argmax over its candidates, and most
 * are far from the best: bounding log g at each one from a sum that costs a fraction of
 * the exact one, then computing the exact value only where the bound leaves the candidate
 * a chance, picks the same candidate (tpe_acquire.c, best_candidate). Held to the exact windowed
 * sum (parzen_sums.c) by tpe.log_pdf_bounds_hold_the_exact_value and to exact scoring by
 * tpe.bounded_acquisition_picks_what_exact_scores_pick. Not for: the exact value
 * (parzen_sums.c) or the single-precision coefficients, which the kept estimator's
 * weighing writes (parzen_incr.c). */
#include <math.h>

#include "search/parzen_parts.h"
#include "search/parzen_walk.h"

/* The error of one crude term against the exact coef exp(-t^2 / 2): t as
 * (x - low) / sigma - (mu - low) / sigma in float, from the kept fm = (mu - low) / sigma
 * and fisg = 1 / sigma (rounded to float once each), each part at most range / minsigma
 * = 100 in size, so t is off by at most about (100 + 100 + 10) x 2^-24 x 3 < 4e-5;
 * y = -t^2 / 2 then by at most |t| 4e-5 + |y| 3.5 x 2^-24, under 4.1e-4 for |y| <= 50
 * (|t| <= 10) after the clamp below, which is the relative error it gives e^y; the
 * exponent reduced with ln 2 in two parts (exact product), e^r by its Taylor polynomial to
 * degree 5 for |r| <= ln2/2 (remainder below 3.4e-6), the float coefficient and product
 * (2 x 2^-24), the clamp's own rounding (2e-5) and a five-level tree of float additions
 * (5 x 2^-24): under 4.4e-4 in all,
 * and in practice far less (the 100s are the clipped bandwidth's worst case).
 * PZ_CRUDE_EPS allows 5 times the bound. Exponents below -50 are clamped to -50 (no
 * subnormal floats, which are slow): such a term is overestimated by at most coef e^-50,
 * which the lower bound takes off. */
#define PZ_CRUDE_EPS 2e-3
#define PZ_CRUDE_TOL 1e-3 /* the crude walk's window: what it leaves out goes into hi */
#define PZ_CRUDE_YMIN -50.0f

SPACE__CLONES
static double crude_block(const float *restrict m, const float *restrict isg,
                          const float *restrict coef, float xs)
{
    float p[PZ_BLOCK];
    for (int i = 0; i < PZ_BLOCK; i++) {
        float t = xs * isg[i] - m[i];
        float y = -0.5f * t * t;
        /* max(y, YMIN) as arithmetic (within 2e-5 of it, part of the budget above): a
         * comparison here made some compilers branch around the exponential, and a loop
         * with a branch does not vectorise */
        y = 0.5f * ((y + PZ_CRUDE_YMIN) + fabsf(y - PZ_CRUDE_YMIN));
        p[i] = coef[i] * space__crude_expf(y);
    }
    float sum;
    PZ_TREE32(p, sum);
    return (double)sum;
}

/* Components from..to-1 (at most PZ_BLOCK) by crude_block, a short block padded with
 * components of coefficient 0 (which add 0). */
static double crude_sum(space__parzen_t *pe, size_t from, size_t to, double x)
{
    float xs = (float)(x - pe->low);
    if (to - from == PZ_BLOCK)
        return crude_block(pe->fm + from, pe->fisg + from, pe->fcoef + from, xs);
    float m[PZ_BLOCK], isg[PZ_BLOCK], coef[PZ_BLOCK];
    for (size_t i = 0; i < PZ_BLOCK; i++) {
        int in = i < to - from;
        m[i] = in ? pe->fm[from + i] : 0.0f;
        isg[i] = in ? pe->fisg[from + i] : 0.0f;
        coef[i] = in ? pe->fcoef[from + i] : 0.0f;
    }
    return crude_block(m, isg, coef, xs);
}

void space__parzen_log_pdf_bounds(space__parzen_t *pe, double x, double *lo, double *hi)
{
    if (pe->ncat > 0 || pe->q > 0 || !pe->coef_ready) {
        *lo = *hi = space__parzen_log_pdf(pe, x);
        return;
    }
    double tails, prior = space__parzen_prior_term(pe, x);
    double s = pz_walk(pe, x, PZ_CRUDE_TOL, crude_sum, &tails) - prior;
    /* the exact sum of the visited components lies in s / (1 +- eps), less what the
     * clamp added; the exact walk's own window and rounding (relative 1e-11 at most) and
     * the bounds' own rounding are covered by the margin in log space */
    size_t nb = (pe->n + PZ_BLOCK - 1) / PZ_BLOCK;
    double peak = pe->optuna31_unscaled ? PZ_ZINV / SPACE__SQRT_2PI
                                        : PZ_ZINV / (SPACE__SQRT_2PI * pe->minsigma);
    double clamp = pe->bws[nb] * peak * 2e-22; /* >= every clamped term's excess: e^-50 */
    double glo = prior + (s - clamp) / (1.0 + PZ_CRUDE_EPS);
    double ghi = prior + s / (1.0 - PZ_CRUDE_EPS) + tails * 1.000001;
    *lo = (glo > 0 ? log(glo) : -INFINITY) - 1e-9;
    *hi = log(ghi) + 1e-9;
}
