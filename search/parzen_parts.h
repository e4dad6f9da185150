/* search internals shared by the four forms of the Parzen estimator only (parzen.c, the
 * reference; parzen_sums.c, parzen_incr.c, parzen_bounds.c, the fast forms) and the
 * windowed sums' bookkeeping below them (parzen_blocks.c): the block size of the windowed
 * sums, the estimator's rules the fast forms must apply exactly as the fit does (a
 * component's bandwidth, its factors), and the pieces of parzen.c they call. Not for: tpe.c or
 * tests, which use parzen_int.h. */
#ifndef TUNE_PARZEN_PARTS_H
#define TUNE_PARZEN_PARTS_H

#include <stddef.h>

#include "search/parzen_int.h"
#include "search/special_int.h"

/* The windowed walk's block: components are summed PZ_BLOCK at a time, and the stopping
 * test runs between blocks. 32: at 10,000 observations a window holds many blocks of
 * components, so a longer step overshoots little and each call does more work.
 * block_stats', sum_block's and crude_block's trees are written for 32. */
#define PZ_BLOCK 32
/* sum = p[0] + ... + p[31] as a fixed tree (i with i + 16, then + 8, + 4, then
 * (0 + 2) + (1 + 3)), p overwritten: fixed counts, so each step is straight-line vector
 * code, and the order does not depend on the vector width. */
#define PZ_TREE32(p, sum)                                                                          \
    do {                                                                                           \
        for (int i_ = 0; i_ < 16; i_++)                                                            \
            (p)[i_] += (p)[i_ + 16];                                                               \
        for (int i_ = 0; i_ < 8; i_++)                                                             \
            (p)[i_] += (p)[i_ + 8];                                                                \
        for (int i_ = 0; i_ < 4; i_++)                                                             \
            (p)[i_] += (p)[i_ + 4];                                                                \
        (sum) = ((p)[0] + (p)[2]) + ((p)[1] + (p)[3]);                                             \
    } while (0)

/* ---- the estimator's rules, written once (the fit and the kept estimator apply them) -- */
/* The bandwidth of the component at position j of the ncomp components sorted by mean
 * (the prior's among them), cur its mean and prev / next its neighbours in the sequence
 * low, the means, high: Optuna's _calculate_numerical_params, univariate, the larger gap
 * to a neighbour; without consider_endpoints the first and last take their inner gap;
 * then the magic clip to [minsigma, range]. */
static inline double pz_bandwidth(double prev, double cur, double next, size_t j, size_t ncomp,
                                  double minsigma, double range)
{
    double left = cur - prev, right = next - cur;
    double sg = left > right ? left : right;
    if (ncomp >= 2 && j == 0) sg = right;
    if (ncomp >= 2 && j == ncomp - 1) sg = left;
    return sg < minsigma ? minsigma : sg > range ? range : sg;
}

/* 1 / sigma; most sigmas are the clipped one, whose reciprocal the fit keeps. */
static inline double pz_comp_isg(const space__parzen_t *pe, double sigma)
{
    return sigma == pe->minsigma ? pe->isg_min : 1.0 / sigma;
}

/* czi = 1 / (sqrt(2 pi) z) of component k: its density's constant factor is w czi (times
 * 1 / sigma unless Optuna 3.1.0's unscaled density); czi stays from fit to fit. */
static inline double pz_comp_czi(const space__parzen_t *pe, size_t k)
{
    return 1.0 / (SPACE__SQRT_2PI * pe->z[k]);
}

/* ---- parzen.c, for the fast forms ----------------------------------------------------- */
/* The prior N((low + high) / 2, high - low), its mass, and the magic clip's minsigma for n
 * observations; pe->low and pe->high must be set. */
void space__parzen_set_prior(space__parzen_t *pe, size_t n);
/* The truncation mass of a component (mu, sigma) in [low, high]. */
double space__parzen_comp_z(const space__parzen_t *pe, double mu, double sigma);
/* Component k's weighted density at x (its mass over x's cell when stepped, through the
 * memo), computing its mass first when not known: the reference's term. */
double space__parzen_term(space__parzen_t *pe, size_t k, double x);
/* The prior's weighted density at x. */
double space__parzen_prior_term(const space__parzen_t *pe, double x);
/* Forgets every cell mass m holds (the kept estimator's bounds may have changed). */
void space__pz_memo_clear(struct space__pz_memo *m);

/* ---- parzen_blocks.c, for the fit and the kept estimator -------------------------------- */
/* Fills bws, bsl and bsr from w and sigma (after every weighing). */
void space__parzen_blocks_fill(space__parzen_t *pe);

#endif
