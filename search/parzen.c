/* search/parzen.c: Optuna 3.1's univariate Parzen estimator, the density l(x) or g(x) the
 * TPE searcher's optuna preset compares: its fit, its draws, and its log density summed
 * over every component, the reference every faster form is tested against. Read this
 * first. Not for: which observations go into a model (tpe_split.c), the fast forms of the
 * same density (parzen_sums.c, parzen_incr.c, parzen_bounds.c), erfc and the truncated
 * normal (special.c), or BOHB's KDE (kde.c). Learnt from the sources named below; no code
 * copied.
 *
 * Where Optuna 3.1 does each step (optuna/samplers/_tpe/parzen_estimator.py, with
 * consider_prior, prior_weight 1, consider_magic_clip, not consider_endpoints, univariate;
 * later versions hold the same densities in probability_distributions.py):
 *   _calculate_parzen_bounds, _transform_to_uniform   tpe.c (its dims' low, high, q): x
 *                                                     arrives in the internal (log) scale
 *   _calculate_weights                                space__parzen_fit_sorted_total: the
 *                                                     total (1.0 is prior_weight), inv
 *   _calculate_numerical_params                       the components' pass of the same, with
 *                                                     pz_bandwidth (parzen_parts.h) and
 *                                                     space__parzen_set_prior (magic clip)
 *   _calculate_categorical_params                     its categorical branch
 *   log_pdf                                           space__parzen_log_pdf_naive (term,
 *                                                     comp_pdf: truncnorm.logpdf, and
 *                                                     _log_gauss_mass for stepped cells)
 *   sample, _sample_from_categorical_dist             space__parzen_sample
 *   _truncnorm.py (ndtr, _log_gauss_mass, ppf, rvs)   special.c
 * What differs from Optuna, on purpose: densities are summed, not log-summed (every term
 * is a density, not the exponential of a log); components with equal mean and sigma
 * (repeated stepped values) are one component with their summed weight, the same
 * mixture; and Optuna 3.1.0's unscaled truncnorm.logpdf is a flag (optuna31_unscaled).
 *
 * The four forms, and the tests that hold each to this one (tests/test_tpe.c):
 *   parzen.c: the fit and the naive sum, against numbers from Optuna 3.1
 *     (tpe.parzen_bandwidths_by_hand, tpe.parzen_log_pdf_matches_optuna_3_1);
 *   parzen_sums.c: the windowed sums, a walk out from x (parzen_walk.h) that stops when
 *     the rest cannot matter (tpe.windowed_log_pdf_equals_naive,
 *     tpe.fast_log_pdf_equals_reference);
 *   parzen_incr.c: the kept estimator, updated one observation at a time, bit for bit the
 *     fit (tpe.parzen_incremental_equals_full_fit,
 *     tpe.incremental_suggests_what_a_rebuilt_searcher_does);
 *   parzen_bounds.c: single-precision bounds on the windowed sum
 *     (tpe.log_pdf_bounds_hold_the_exact_value,
 *     tpe.bounded_acquisition_picks_what_exact_scores_pick).
 *
 * Changing the estimator (say Optuna's consider_endpoints, or its multivariate kernel):
 *   1. Edit the rule where it is written once: a component's bandwidth in pz_bandwidth
 *      (parzen_parts.h; consider_endpoints is its two "inner gap" lines), the prior and the
 *      magic clip in space__parzen_set_prior, the weights in space__parzen_fit_sorted_total,
 *      the density in comp_pdf and space__parzen_comp_z. The fit and the kept estimator
 *      both call the first two. Update the numbers the first two tests pin, from the Optuna
 *      version and options you now follow.
 *   2. Run test_tpe (both builds: the default one and -DTUNE_PORTABLE=ON, which has no
 *      AVX copies of the vector loops). The fast forms' tests say what else must change:
 *      - parzen_incremental_equals_full_fit: the kept estimator rebuilds only the
 *        components next to an inserted or removed observation (up to an unchanged anchor
 *        on each side: inc_splice in parzen_incr.c) and refits below INC_MIN_N
 *        observations, while the clip moves; its weighing repeats the fit's
 *        (inc_weigh_rr). A rule reaching further (a bandwidth from n, as the
 *        multivariate kernel's Scott's rule is) must widen that, or refit every time.
 *      - windowed_log_pdf_equals_naive, fast_log_pdf_equals_reference: sum_block
 *        (parzen_sums.c) is comp_pdf's continuous density in vector form, and the walk's
 *        stopping bound (parzen_walk.h) assumes truncated Gaussians with means in
 *        [low, high] and sigmas in [minsigma, high - low], so a mass of at least 0.3413:
 *        without the magic clip (minsigma = EPS) or with product kernels it must be
 *        derived again.
 *      - log_pdf_bounds_hold_the_exact_value: crude_block (parzen_bounds.c) is the same
 *        density in single precision, and its error budget assumes standardised distances
 *        of at most range / minsigma = 100.
 *   3. What no test here will tell you: tpe_acquire.c sums the bad weights' total itself
 *      (1 for the prior, then space__sum's order) and applies Optuna's default_weights as a ramp
 *      (space__parzen_inc_weigh_ranks); a new prior weight or weights function is an edit
 *      there too, and the simulator's oracle tests (test_sim, test_searchloop) will move. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/parzen_parts.h"
#include "search/space_int.h"

/* A stepped component's mass over x's cell depends on (x, mu, sigma) and the bounds, not
 * on the weights, and the same few cells and components come back at every suggestion:
 * the kept estimator of a stepped parameter remembers the last PZ_MEMO of them (two erfc
 * each otherwise). A pure function remembered: the same results. */
#define PZ_MEMO 4096
struct space__pz_memo {
    double x, mu, sigma, v;
};

struct space__pz_memo *space__pz_memo_new(void)
{
    return calloc(PZ_MEMO, sizeof(struct space__pz_memo));
}

void space__pz_memo_clear(struct space__pz_memo *m)
{
    memset(m, 0, PZ_MEMO * sizeof *m);
}

void space__parzen_free(space__parzen_t *pe)
{
    if (!pe) return;
    free(pe->mu);
    free(pe->sigma);
    free(pe->w);
    free(pe->bws);
    free(pe->bsl);
    free(pe->bsr);
    free(pe->z);
    free(pe->isg);
    free(pe->czi);
    free(pe->tn);
    free(pe->fm);
    free(pe->fisg);
    free(pe->fcoef);
    free(pe->cat);
    memset(pe, 0, sizeof *pe);
}

/* ---- the fit ------------------------------------------------------------------------- */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int space__parzen_fit(space__parzen_t *pe, const double *x, const double *rw, size_t n, double low,
                      double high, double q, size_t ncat)
{
    if (ncat > 0 || n == 0) return space__parzen_fit_sorted(pe, x, rw, n, low, high, q, ncat);
    /* sort (value, weight) pairs together */
    double *pair = malloc(2 * n * sizeof *pair), *xs = malloc(n * sizeof *xs),
           *ws = malloc(n * sizeof *ws);
    int rc = SPACE_ENOMEM;
    if (!pair || !xs || !ws) goto out;
    for (size_t i = 0; i < n; i++) {
        pair[2 * i] = x[i];
        pair[2 * i + 1] = rw ? rw[i] : 1.0;
    }
    qsort(pair, n, 2 * sizeof *pair, cmp_double);
    for (size_t i = 0; i < n; i++) {
        xs[i] = pair[2 * i];
        ws[i] = pair[2 * i + 1];
    }
    rc = space__parzen_fit_sorted(pe, xs, ws, n, low, high, q, ncat);
out:
    free(pair);
    free(xs);
    free(ws);
    return rc;
}

int space__parzen_fit_sorted(space__parzen_t *pe, const double *x, const double *rw, size_t n,
                             double low, double high, double q, size_t ncat)
{
    return space__parzen_fit_sorted_total(pe, x, rw, n, low, high, q, ncat, NAN);
}

/* Optuna's categorical row of component k (the prior's for k == n) at category c. */
static double cat_row(const space__parzen_t *pe, size_t k, size_t c)
{
    if (k == pe->n) return 1.0 / (double)pe->ncat;
    return (size_t)pe->mu[k] == c ? pe->cat_hi : pe->cat_lo;
}

void space__parzen_set_prior(space__parzen_t *pe, size_t n)
{
    double range = pe->high - pe->low, mid = 0.5 * (pe->low + pe->high);
    double ncomp = (double)(n + 1); /* len(mus): the observations and the prior */
    pe->minsigma = range / (ncomp + 1.0 < 100.0 ? ncomp + 1.0 : 100.0);
    pe->isg_min = 1.0 / pe->minsigma; /* most sigmas are the clipped one */
    pe->prior_mu = mid;
    pe->prior_sigma = range;
    pe->prior_z = space__parzen_comp_z(pe, mid, range);
}

/* Writes the component (mu, sigma, w) as component *kept, with its mass when zc (the
 * masses of an earlier fit, sorted by mean; *ci the first not below the last mean looked
 * up) holds the same (mu, sigma), else NaN: computed when first needed. */
static void put_component(space__parzen_t *pe, const space__zcache_t *zc, size_t *ci, size_t *kept,
                          double mu, double sigma, double w)
{
    double z = NAN;
    if (zc) {
        while (*ci < zc->n && zc->mu[*ci] < mu)
            (*ci)++;
        for (size_t c = *ci; c < zc->n && zc->mu[c] == mu; c++)
            if (zc->sigma[c] == sigma) {
                z = zc->z[c];
                break;
            }
    }
    pe->mu[*kept] = mu;
    pe->sigma[*kept] = sigma;
    pe->w[*kept] = w;
    pe->z[*kept] = z;
    pe->czi[(*kept)++] = NAN; /* 1 / (sqrt(2 pi) z) and 1 / sigma: when first needed */
}

int space__parzen_fit_sorted_total(space__parzen_t *pe, const double *x, const double *rw, size_t n,
                                   double low, double high, double q, size_t ncat, double total)
{
    /* the arrays of an earlier fit are reused when large enough: a suggestion refits 20
     * estimators, and fresh arrays each time cost page faults */
    space__parzen_t old = *pe;
    size_t m = n ? n : 1;
    memset(pe, 0, sizeof *pe);
    pe->zc = old.zc;
    pe->tol = old.tol;
    pe->memo = old.memo; /* borrowed, and kept to one parameter (its bounds) by its owner */
    if (old.cap >= m && old.ncatcap >= ncat) {
        pe->mu = old.mu, pe->sigma = old.sigma, pe->w = old.w;
        pe->bws = old.bws, pe->bsl = old.bsl, pe->bsr = old.bsr, pe->z = old.z;
        pe->isg = old.isg, pe->czi = old.czi, pe->cat = old.cat, pe->tn = old.tn;
        pe->cap = old.cap, pe->ncatcap = old.ncatcap;
    } else {
        space__parzen_free(&old);
        /* with room to grow: the bad estimator gains a trial per suggestion, and sizing
         * to fit made every suggestion allocate (and fault in) its arrays afresh */
        m += m / 2 + 16;
        pe->mu = malloc(m * sizeof *pe->mu);
        pe->sigma = malloc(m * sizeof *pe->sigma);
        pe->w = malloc(m * sizeof *pe->w);
        pe->bws = malloc((m / PZ_BLOCK + 2) * sizeof *pe->bws);
        pe->bsl = malloc((m / PZ_BLOCK + 1) * sizeof *pe->bsl);
        pe->bsr = malloc((m / PZ_BLOCK + 1) * sizeof *pe->bsr);
        pe->z = malloc(m * sizeof *pe->z);
        pe->isg = malloc(m * sizeof *pe->isg);
        pe->czi = malloc(m * sizeof *pe->czi);
        pe->tn = malloc(2 * (m + 1) * sizeof *pe->tn);
        pe->cat = malloc((ncat + 1) * sizeof *pe->cat);
        pe->cap = m, pe->ncatcap = ncat;
        if (!pe->mu || !pe->sigma || !pe->w || !pe->bws || !pe->bsl || !pe->bsr || !pe->z ||
            !pe->isg || !pe->czi || !pe->cat || !pe->tn)
            goto nomem;
    }
    pe->n = n;
    pe->ncat = ncat;
    pe->low = low;
    pe->high = high;
    pe->q = q;
    /* _calculate_weights: the raw weights and prior_weight 1, normalised together */
    if (isnan(total)) total = 1.0 + (rw ? space__sum(rw, n) : (double)n);
    /* times the reciprocal, not a division per weight */
    double inv = 1.0 / total;
    if (ncat > 0)
        for (size_t i = 0; i < n; i++)
            pe->w[i] = (rw ? rw[i] : 1.0) * inv;
    pe->prior_w = 1.0 / total;

    if (ncat > 0) {
        /* _calculate_categorical_params: each row is prior_weight / (n + 1) everywhere
         * plus 1 at the observed category, normalised; the prior's row is flat. */
        memset(pe->cat, 0, ncat * sizeof *pe->cat);
        double v = 1.0 / (double)(n + 1), rowsum = 1.0 + v * (double)ncat;
        /* a row holds two values, (v + 1) / rowsum at its category and v / rowsum
         * elsewhere: divided once here instead of n x ncat times, and not written out
         * (mu keeps each component's category; cat_row gives a row's values) */
        pe->cat_lo = v / rowsum, pe->cat_hi = (v + 1.0) / rowsum;
        for (size_t i = 0; i < n; i++)
            pe->mu[i] = x[i];
        /* wi x row[c] takes two values per row (multiplied once each: the same products),
         * picked by index rather than by a compare's branch (the categories come in random
         * order, so such a branch is mispredicted half the time); four categories at a
         * time in variables, each summed in component order as before (which decides ties
         * between categories seen equally often, so it stays) */
        for (size_t c0 = 0; c0 < ncat; c0 += 4) {
            double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
            for (size_t i = 0; i < n; i++) {
                const double v[2] = {pe->w[i] * pe->cat_lo, pe->w[i] * pe->cat_hi};
                size_t k = (size_t)x[i] - c0; /* wraps past the group: no match */
                a0 += v[k == 0], a1 += v[k == 1], a2 += v[k == 2], a3 += v[k == 3];
            }
            double a[4] = {a0, a1, a2, a3};
            for (size_t c = c0; c < ncat && c < c0 + 4; c++)
                pe->cat[c] = a[c - c0] + pe->prior_w * cat_row(pe, n, c);
        }
        return SPACE_OK;
    }

    /* _calculate_numerical_params, univariate: the prior N(mid, high - low) joins the
     * sorted means; each sigma is pz_bandwidth's, from its neighbours in the sequence low,
     * the means with the prior's among them, high. */
    double range = high - low, mid = 0.5 * (low + high);
    size_t ncomp = n + 1, pp = 0;   /* the prior's position among the sorted means */
    for (size_t hi = n; pp < hi;) { /* the first x > mid */
        size_t h = pp + (hi - pp) / 2;
        if (x[h] <= mid)
            pp = h + 1;
        else
            hi = h;
    }
    space__parzen_set_prior(pe, n);
    /* One pass over low, the means with the prior's among them, high (prev, cur, next
     * rolling: no copy of the means). Components with the same mean and sigma (repeated
     * integer or stepped values: 10,000 trials of a 64-value parameter) become one with
     * their summed weight, added in the same order as before: the same mixture, summed
     * once instead of hundreds of times. pe->n counts what is left. */
    size_t kept = 0, ci = 0, src = 0; /* src: the next x[] to become a component */
    double prev = low, cur = pp == 0 ? mid : x[0];
    /* the component being built, written out once the next one differs */
    int have = 0;
    double cmu = 0, csg = 0, cw = 0;
    for (size_t j = 0; j < ncomp; j++) {
        size_t jn = j + 1; /* the next value of the sequence */
        double next = jn == ncomp ? high : jn < pp ? x[jn] : jn == pp ? mid : x[jn - 1];
        double sg = pz_bandwidth(prev, cur, next, j, ncomp, pe->minsigma, range);
        if (j != pp) { /* the prior's sigma is the whole range */
            double wk = (rw ? rw[src] : 1.0) * inv;
            src++;
            if (have && cmu == cur && csg == sg) {
                cw += wk;
            } else {
                if (have) put_component(pe, pe->zc, &ci, &kept, cmu, csg, cw);
                cmu = cur, csg = sg, cw = wk, have = 1;
            }
        }
        prev = cur;
        cur = next;
    }
    if (have) put_component(pe, pe->zc, &ci, &kept, cmu, csg, cw);
    n = pe->n = kept;
    space__parzen_blocks_fill(pe);
    pe->tnn = n + 1; /* the prior's too */
    for (size_t k = 0; k < 2 * (n + 1); k++)
        pe->tn[k] = NAN;
    return SPACE_OK;
nomem:
    space__parzen_free(pe);
    return SPACE_ENOMEM;
}

/* ---- the density: the reference sum ---------------------------------------------------- */
/* One numeric component's density (mass over the quantisation cell for q > 0), truncated
 * to [low, high] as scipy's truncnorm.logpdf and Optuna's _log_gauss_mass do. */
static double comp_pdf(const space__parzen_t *pe, double x, double mu, double sigma, double z)
{
    if (pe->q > 0) {
        double ub = fmin(x + 0.5 * pe->q, pe->high), lb = fmax(x - 0.5 * pe->q, pe->low);
        return space__gauss_mass((lb - mu) / sigma, (ub - mu) / sigma) / z;
    }
    double t = (x - mu) / sigma;
    return exp(-0.5 * t * t) / (SPACE__SQRT_2PI * (pe->optuna31_unscaled ? 1.0 : sigma) * z);
}

double space__parzen_comp_z(const space__parzen_t *pe, double mu, double sigma)
{
    /* well inside the range (the margin covers the divisions' rounding): the test below
     * would pass, without its two divisions */
    if (mu - pe->low > 9.000001 * sigma && pe->high - mu > 9.000001 * sigma) return 1.0;
    double a = (pe->low - mu) / sigma, b = (pe->high - mu) / sigma;
    /* beyond 9 sd the missing tail is below 1.2e-19: the mass is 1 in double */
    if (a < -9 && b > 9) return 1.0;
    return space__gauss_mass(a, b);
}

/* For stepped parameters through the memo (PZ_MEMO). */
double space__parzen_term(space__parzen_t *pe, size_t k, double x)
{
    double mu = pe->mu[k], sg = pe->sigma[k];
    if (isnan(pe->z[k])) pe->z[k] = space__parzen_comp_z(pe, mu, sg);
    if (!pe->memo) return pe->w[k] * comp_pdf(pe, x, mu, sg, pe->z[k]);
    uint64_t a, b, c;
    memcpy(&a, &x, sizeof a);
    memcpy(&b, &mu, sizeof b);
    memcpy(&c, &sg, sizeof c);
    struct space__pz_memo *e =
        &pe->memo[space__mix64(a ^ space__mix64(b ^ space__mix64(c))) & (PZ_MEMO - 1)];
    if (!(e->x == x && e->mu == mu && e->sigma == sg)) /* sigma > 0: a zeroed slot never matches */
        *e = (struct space__pz_memo){x, mu, sg, comp_pdf(pe, x, mu, sg, pe->z[k])};
    return pe->w[k] * e->v;
}

double space__parzen_prior_term(const space__parzen_t *pe, double x)
{
    return pe->prior_w * comp_pdf(pe, x, pe->prior_mu, pe->prior_sigma, pe->prior_z);
}

double space__parzen_log_pdf_naive(space__parzen_t *pe, double x)
{
    if (pe->ncat > 0) {
        size_t c = (size_t)x;
        return c < pe->ncat ? log(pe->cat[c]) : -INFINITY;
    }
    double s = space__parzen_prior_term(pe, x);
    for (size_t k = 0; k < pe->n; k++)
        s += space__parzen_term(pe, k, x);
    return log(s);
}

/* ---- draws ------------------------------------------------------------------------------ */
double space__parzen_sample(space__parzen_t *pe, space__rng_t *r)
{
    /* the active component: observations in order, the prior last (rng.choice) */
    double u = space__rng_uniform(r);
    size_t n = pe->n, k = 0; /* k == n: the prior */
    /* the first k whose running sum of weights passes u: a scan, not a search over kept
     * running sums, because only the good estimator (25 components) is drawn from, and
     * keeping the sums cost every fit a chain of n additions */
    for (double run = 0; k < n; k++) {
        run += pe->w[k];
        if (run > u) break;
    }
    if (pe->ncat > 0) {
        double v = space__rng_uniform(r), cum = 0;
        size_t c = 0; /* _sample_from_categorical_dist: how many cumulative sums are < v */
        for (size_t i = 0; i < pe->ncat; i++) {
            cum += cat_row(pe, k, i);
            if (cum < v) c++;
        }
        return (double)(c < pe->ncat ? c : pe->ncat - 1);
    }
    double mu = k < n ? pe->mu[k] : pe->prior_mu, sg = k < n ? pe->sigma[k] : pe->prior_sigma;
    double a = (pe->low - mu) / sg, b = (pe->high - mu) / sg, c[2];
    u = space__rng_uniform(r); /* the draw's own uniform, as space__truncnorm_draw takes */
    if (k < pe->tnn) { /* this component's masses, NaN until a draw of this fit needs them */
        double *kc = pe->tn + 2 * k;
        if (isnan(kc[0])) space__truncnorm_cdfs(a, b, kc);
        c[0] = kc[0], c[1] = kc[1];
    } else {
        space__truncnorm_cdfs(a, b, c);
    }
    double x = mu + sg * space__truncnorm_invert(u, a, b, c);
    return fmin(fmax(x, pe->low), pe->high);
}

/* ---- truncation masses kept from fit to fit ----------------------------------------------- */
int space__parzen_zcache_keep(const space__parzen_t *pe, space__zcache_t *zc)
{
    zc->n = 0;
    if (pe->ncat > 0) return SPACE_OK;
    if (pe->n > zc->cap) { /* room for every component: one pass, no count first */
        size_t cap = pe->n + pe->n / 2 + 16;
        double *mu = realloc(zc->mu, cap * sizeof *mu);
        if (mu) zc->mu = mu;
        double *sg = realloc(zc->sigma, cap * sizeof *sg);
        if (sg) zc->sigma = sg;
        double *z = realloc(zc->z, cap * sizeof *z);
        if (z) zc->z = z;
        if (!mu || !sg || !z) return SPACE_ENOMEM;
        zc->cap = cap;
    }
    size_t m = 0;
    for (size_t k = 0; k < pe->n; k++) {
        double z = pe->z[k];
        if (isnan(z) || z == 1.0) continue;
        zc->mu[m] = pe->mu[k];
        zc->sigma[m] = pe->sigma[k];
        zc->z[m++] = z;
    }
    zc->n = m;
    return SPACE_OK;
}

void space__zcache_free(space__zcache_t *zc)
{
    if (!zc) return;
    free(zc->mu);
    free(zc->sigma);
    free(zc->z);
    memset(zc, 0, sizeof *zc);
}
