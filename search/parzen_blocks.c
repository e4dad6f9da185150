/* search/parzen_blocks.c: the windowed sums' per-block bookkeeping of weights and
 * bandwidths, which both fits (parzen.c and parzen_incr.c) fill after every weighing and
 * the sums (parzen_sums.c, parzen_walk.h) read. Below all three, so that the reference
 * fit calls down to it and the sums call down to the reference. Not for: the sums
 * themselves (parzen_sums.c) or the estimator's rules (parzen.c, parzen_parts.h). */
#include "search/parzen_parts.h"

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
