/* search internals: the windowed walk over a Parzen estimator's sorted means, shared by the
 * exact windowed sum (parzen_sums.c) and the single-precision bounds (parzen_bounds.c),
 * with the proof that its stopping rule leaves out less than its tolerance. Inline in each
 * of its two callers so that the block sum each passes is a direct call, not a call
 * through a pointer per block. Not for: anything but those two files. */
#ifndef TUNE_PARZEN_WALK_H
#define TUNE_PARZEN_WALK_H

#include "search/parzen_parts.h"

/* An upper bound on e^y for y <= 0, for the walk's stopping test: the single-precision
 * exponential with room for its error and for rounding y to float (5e-6 relative at
 * most; 2e-3 allowed), and e^-50 for anything below -50. */
static inline double pz_tail_exp(double y)
{
    float yf = y > -50.0 ? (float)y : -50.0f;
    return (double)space__crude_expf(yf) * 1.002;
}

/* Walks outwards from x over the means in blocks, on each side until the components not
 * yet visited cannot add more than tol (SPACE__PARZEN_TOL, 1e-12) of the sum so far. The
 * bound on what is left on one side, say the right with r the next unvisited, in block
 * b = r / PZ_BLOCK: every such component k has mu_k >= mu[r], sigma_k <= bsr[b] and
 * sigma_k >= minsigma, so its standardised distance from x (from the nearer end of x's
 * cell when stepped) is at least d = (mu[r] - x - q/2) / bsr[b], and its density there
 * at most
 *     w_k exp(-d^2/2) / (sqrt(2 pi) sigma_k z_k)  (times q for a cell's mass; without the
 *     sigma_k for Optuna 3.1.0's unscaled density),
 * where its truncation mass z_k >= Phi(1) - 1/2 = 0.3413: the mean lies in [low, high] and
 * sigma_k <= high - low, and the masses on the two sides of the mean add up to at least
 * Phi(range / sigma) - 1/2 (Phi - 1/2 is concave from 0). Summed over the side, the weights
 * are at most those of blocks b and later, so the side adds at most
 * rest * peak * exp(-d^2/2) with peak = PZ_ZINV (q) / (sqrt(2 pi) minsigma),
 * PZ_ZINV = 1 / 0.3413 < 2.93 (the left side alike, with bsl and the blocks up to l - 1's).
 * Stopping once that is at most tol * s (s only grows afterwards) leaves out less than tol
 * of the final sum on each side: |log s_windowed - log s_full| < 2 tol, checked against an
 * independent reference in tpe.fast_log_pdf_equals_reference. The first block on each
 * side ends at a block boundary, so the walk's blocks are the bookkeeping's blocks.
 * Returns the prior's term plus the visited blocks' sums (each by sum(pe, from, to, x));
 * *tails, when not NULL, gets the bound on what was left out on the two sides. */
#define PZ_ZINV 2.93
typedef double (*pz_block_fn)(space__parzen_t *pe, size_t from, size_t to, double x);
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline double
pz_walk(space__parzen_t *pe, double x, double tol, pz_block_fn sum, double *tails)
{
    size_t n = pe->n, nb = (n + PZ_BLOCK - 1) / PZ_BLOCK, lo = 0;
    if (n > 0) { /* the first mean >= x, without a branch on the compare (a coin toss each):
                  * the answer stays in [b, b + len] while len halves */
        const double *b = pe->mu;
        size_t len = n;
        while (len > 1) {
            size_t half = len / 2;
            b += (size_t)(b[half] < x) * half;
            len -= half;
        }
        lo = (size_t)(b - pe->mu) + (b[0] < x);
    }
    size_t r = lo, l = lo; /* next to visit: r going up, l - 1 going down */
    double s = space__parzen_prior_term(pe, x), half = 0.5 * pe->q, tail_r = 0, tail_l = 0;
    double peak = pe->q > 0               ? PZ_ZINV * pe->q / (SPACE__SQRT_2PI * pe->minsigma)
                  : pe->optuna31_unscaled ? PZ_ZINV / SPACE__SQRT_2PI
                                          : PZ_ZINV / (SPACE__SQRT_2PI * pe->minsigma);
    /* stepped: few components, each two erfc, so a shorter step overshoots less */
    size_t step = pe->q > 0 ? 8 : PZ_BLOCK;
    int ldone = l == 0, rdone = r == n;
    while (!ldone || !rdone) {
        if (!rdone) {
            size_t to = (r / step + 1) * step;
            to = to < n ? to : n;
            s += sum(pe, r, to, x);
            r = to;
        }
        if (!ldone) {
            size_t from = (l - 1) / step * step;
            s += sum(pe, from, l, x);
            l = from;
        }
        tail_r = tail_l = 0;
        if (rdone || r == n) {
            rdone = 1;
        } else {
            size_t b = r / PZ_BLOCK;
            double d = pe->mu[r] - x - half;
            d = (d > 0 ? d : 0) / pe->bsr[b];
            tail_r = (pe->bws[nb] - pe->bws[b]) * peak * pz_tail_exp(-0.5 * d * d);
            rdone = tail_r <= tol * s;
        }
        if (ldone || l == 0) {
            ldone = 1;
        } else {
            size_t b = (l - 1) / PZ_BLOCK;
            double d = x - pe->mu[l - 1] - half;
            d = (d > 0 ? d : 0) / pe->bsl[b];
            tail_l = pe->bws[b + 1] * peak * pz_tail_exp(-0.5 * d * d);
            ldone = tail_l <= tol * s;
        }
    }
    if (tails) *tails = tail_r + tail_l;
    return s;
}

#endif
