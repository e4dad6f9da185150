/* search internals: Optuna 3.1's univariate Parzen estimator, the one density the TPE
 * searcher's optuna preset compares (l(x) / g(x)), in four forms that agree: the fit and
 * its naive sum over every component (parzen.c, the reference: read it first), the
 * windowed sums (parzen_sums.c), the kept estimator updated one observation at a time
 * (parzen_incr.c) and single-precision bounds (parzen_bounds.c). Not for: which
 * observations go into a model (tpe_split.c), BOHB's KDE (kde_int.h), or anything outside
 * search/ and its tests. */
#ifndef TUNE_PARZEN_INT_H
#define TUNE_PARZEN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "search/space_int.h"

/* ---- the estimator (parzen.c) ----------------------------------------------------------
 * optuna/samplers/_tpe/parzen_estimator.py with consider_prior, prior_weight 1,
 * consider_magic_clip, not consider_endpoints, univariate. Numeric components are
 * Gaussians truncated to [low, high] (the "parzen bounds" in the parameter's internal
 * scale); q > 0 makes the density a mass over [x - q/2, x + q/2] as Optuna does for
 * stepped parameters. Categorical (ncat > 0): Optuna's smoothed one-hot weights. */

/* Truncation masses already computed for one parameter's estimator, sorted by mean: the
 * mass of a component depends only on its (mu, sigma) and the bounds, so the next fit of
 * the same parameter need not compute its erfc again. */
typedef struct space__zcache {
    size_t n, cap;
    double *mu, *sigma, *z;
} space__zcache_t;

typedef struct space__parzen {
    size_t n;               /* observations, the prior excluded */
    size_t ncat;            /* > 0: categorical over 0..ncat-1 */
    double low, high, q;    /* numeric: bounds of the internal scale; q = 0 continuous */
    double *mu, *sigma, *w; /* n observations sorted by mu, normalised weights */
    double prior_mu, prior_sigma, prior_w, prior_z;
    double minsigma, isg_min; /* the magic clip's lower bound, its reciprocal */
    /* windowing, per block of 32 components: bws[b] = the weight of blocks before b,
     * bsl[b] / bsr[b] = the largest sigma over blocks 0..b / b..last */
    double *bws, *bsl, *bsr;
    double *z;   /* the truncation mass, NaN until first needed */
    double *isg; /* 1 / sigma */
    double *czi; /* 1 / (sqrt(2 pi) z), NaN until first needed (parzen_parts.h) */
    double *tn;  /* a fit's: per component (the prior last) the two normal masses a truncated
                  * draw inverts between, NaN until a draw needs them */
    size_t tnn;
    float *fm, *fisg, *fcoef; /* kept estimator: (mu - low) / sigma, 1 / sigma, coef in float */
    /* stepped: cells' masses already computed, or NULL. Borrowed (space__parzen_free leaves
     * it): the kept estimator allocates and frees its own, the searcher keeps one per
     * stepped parameter for its good estimators; one memo serves one parameter's bounds */
    struct space__pz_memo *memo;
    double *cat;           /* categorical: the mixture's probability of each category */
    double cat_lo, cat_hi; /* categorical: a component's row, off and at its category (mu) */
    size_t cap, ncatcap;   /* allocated sizes, reused by the next fit */
    /* borrowed, NULL = none: the next fit takes the masses of components whose (mu,
     * sigma) it holds instead of leaving them to be computed; kept across fits */
    const space__zcache_t *zc;
    double tol; /* the window's tolerance, 0 = SPACE__PARZEN_TOL: tests loosen it to show
                 * that their comparison with a reference would catch a wrong window */
    /* Optuna 3.1.0's vendored truncnorm.logpdf leaves out the -log(scale) term, so each
     * continuous component's density there is phi(z) / mass, not phi(z) / (sigma mass):
     * narrow components weigh less. Set to 1 after fitting to reproduce 3.1.0 exactly; 0
     * (what a fit leaves) is the normalised density. */
    int optuna31_unscaled;
    /* 1: isg and czi hold every component's values and fcoef the weights' (the kept
     * estimator, after space__parzen_inc_weigh, for optuna31_unscaled as it is then);
     * 0: isg and czi computed when needed */
    int coef_ready;
} space__parzen_t;

/* Fits the estimator to n observations x[] (internal scale, or category index) with raw
 * weights rw[] (Optuna's default_weights of their trial order; NULL = all 1). x need not be
 * sorted. pe must be zeroed ({0}) or hold an earlier fit, whose arrays are reused (and
 * whose borrowed memo and zcache are kept). Returns 0 or SPACE_ENOMEM. Free with
 * space__parzen_free. */
int space__parzen_fit(space__parzen_t *pe, const double *x, const double *rw, size_t n, double low,
                      double high, double q, size_t ncat);
/* The same for x[] already sorted ascending (ties in any order): skips the sort, which
 * is what keeps 10,000 observations within the time budget. */
int space__parzen_fit_sorted(space__parzen_t *pe, const double *x, const double *rw, size_t n,
                             double low, double high, double q, size_t ncat);
/* The same with total = 1 + the sum of rw[] (all 1 when NULL) taken in index order, which
 * the caller may have summed while gathering x[] (NAN: sum it here). */
int space__parzen_fit_sorted_total(space__parzen_t *pe, const double *x, const double *rw, size_t n,
                                   double low, double high, double q, size_t ncat, double total);
void space__parzen_free(space__parzen_t *pe); /* NULL-safe, leaves pe zeroed; not its memo */
/* An empty memo of stepped cells' masses (NULL when out of memory, which only costs time);
 * free() it. */
struct space__pz_memo *space__pz_memo_new(void);
/* log density (mass for q > 0, probability for categories) at x over every component, as
 * Optuna's log_pdf does: the reference every faster form is tested against (parzen.c). */
double space__parzen_log_pdf_naive(space__parzen_t *pe, double x);
/* One draw: a component by weight, then its truncated normal (or its category row).
 * Numeric draws are in [low, high] and not yet rounded to the parameter's values. */
double space__parzen_sample(space__parzen_t *pe, space__rng_t *r);
/* Replaces zc's contents with the masses pe has computed so far (those that needed erfc):
 * what the next fit of the same parameter, with the same bounds, may reuse. Returns 0 or
 * SPACE_ENOMEM (zc then still holds its earlier, still valid, contents or none). */
int space__parzen_zcache_keep(const space__parzen_t *pe, space__zcache_t *zc);
void space__zcache_free(space__zcache_t *zc); /* NULL-safe, leaves zc zeroed */

/* ---- the windowed sums (parzen_sums.c) --------------------------------------------------
 * The same log density summing only the components whose contribution can exceed
 * SPACE__PARZEN_TOL of the total (a bound on the rest is kept while walking outwards from
 * x over the sorted means): within 2 SPACE__PARZEN_TOL of space__parzen_log_pdf_naive. */
#define SPACE__PARZEN_TOL 1e-12
double space__parzen_log_pdf(space__parzen_t *pe, double x);

/* ---- single-precision bounds (parzen_bounds.c) ------------------------------------------
 * lo <= space__parzen_log_pdf(pe, x) <= hi, from a single-precision sum over a narrower
 * window: for a continuous estimator whose coefficients are ready (space__parzen_inc_weigh);
 * any other gets lo = hi = the exact value. */
void space__parzen_log_pdf_bounds(space__parzen_t *pe, double x, double *lo, double *hi);

/* ---- the kept estimator (parzen_incr.c) -------------------------------------------------
 * The bad estimator of one numeric parameter kept between suggestions: the observations
 * sorted by (value, id) and the components built from them (means, bandwidths, masses),
 * so that a new observation changes only its neighbours' bandwidths and a refit rewrites
 * only the weights. Whatever the sequence of inserts and removals, pe ends up bit for bit
 * what space__parzen_fit_sorted_total gives for the same sorted observations (tested in
 * tpe.parzen_incremental_equals_full_fit). */
typedef struct space__parzen_inc {
    space__parzen_t pe; /* numeric only; its arrays belong to this struct */
    size_t nraw, cap;   /* observations; allocated slots of every array below and in pe */
    double *rx;         /* observations sorted by (value, id) */
    size_t *rid;        /* their ids (the searcher's trial numbers) */
    size_t *cnt;        /* per component of pe: how many observations it merges */
    double *rr;         /* scratch: the raw weights in sorted order */
    uint32_t *rrank;    /* the observations' age ranks (space__parzen_inc_weigh_ranks) */
    size_t pp;          /* the prior's position: the first rx > the middle of the range */
} space__parzen_inc_t;
/* Full fit to n observations x[] sorted by (value, id) with ids id[]. 0 or SPACE_ENOMEM. */
int space__parzen_inc_fit(space__parzen_inc_t *in, const double *x, const size_t *id, size_t n,
                          double low, double high, double q);
/* One observation more or less; the weights are left stale until space__parzen_inc_weigh.
 * Returns 0, SPACE_ENOMEM, or 1 when it cannot be done in place (the magic clip changes
 * with n below 98 observations, or the observation to remove is not there, or a value is
 * NaN): the caller then refits with space__parzen_inc_fit. */
int space__parzen_inc_insert(space__parzen_inc_t *in, double v, size_t id);
int space__parzen_inc_remove(space__parzen_inc_t *in, double v, size_t id);
/* Sets the weights from rw_by_id[id] (Optuna's default_weights of each observation's age),
 * normalised with the prior's 1 as space__parzen_fit_sorted_total does: total is 1 + the
 * sum of the observations' raw weights, or NAN to sum them here in sorted order (a
 * searcher sums them once for every parameter and passes the same total to its fits). */
void space__parzen_inc_weigh(space__parzen_inc_t *in, const double *rw_by_id, double total);
/* The same from each observation's age rank instead of a weight per trial: raw weight
 * rank < ramp ? w0 + rank x step : 1 (Optuna's default_weights, the searcher's operations),
 * computed in sorted order with no gathering by trial. The ranks are kept with the
 * observations: space__parzen_inc_set_ranks sets every one (after a fit, or when the ranks
 * moved: a trial joined or left the middle of the trial order), space__parzen_inc_rank_one
 * the rank of one inserted observation (0 until then); rank_one returns 1 when (v, id) is
 * not held. */
void space__parzen_inc_weigh_ranks(space__parzen_inc_t *in, double w0, double step, size_t ramp,
                                   double total);
void space__parzen_inc_set_ranks(space__parzen_inc_t *in, const uint32_t *rank_by_id);
int space__parzen_inc_rank_one(space__parzen_inc_t *in, double v, size_t id, uint32_t rank);
void space__parzen_inc_free(space__parzen_inc_t *in); /* NULL-safe, leaves it zeroed */

#endif
