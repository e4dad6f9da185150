/* search/parzen.c: Optuna 3.1's univariate Parzen estimator, the density the TPE
 * searcher's optuna preset compares, in its four forms (the fit and the naive sum, the
 * windowed sums, the kept estimator, single-precision bounds). Not for: deciding which
 * observations go into a model (tpe.c), drawing whole configurations (sample.c), the
 * special functions (special.c) or BOHB's KDE (kde.c). Learnt from the sources named at
 * each function; no code copied. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/space_int.h"
#include "search/special_int.h"
#include "search/tpe_int.h"

/* The windowed walk's block: components are summed PZ_BLOCK at a time, and the stopping
 * test runs between blocks. 32: at 10,000 observations a window holds about 1,500
 * components, so a longer step overshoots little and each call does more work.
 * sum_block's and crude_block's trees are written for 32. */
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

/* A stepped component's mass over x's cell depends on (x, mu, sigma) and the bounds, not
 * on the weights, and the same few cells and components come back at every suggestion:
 * the kept estimator of a stepped parameter remembers the last PZ_MEMO of them (two erfc
 * each otherwise). A pure function remembered: the same results. */
#define PZ_MEMO 4096
struct space__pz_memo {
    double x, mu, sigma, v;
};

/* ---- Optuna 3.1's univariate Parzen estimator ------------------------------------------ */
static double comp_z(const space__parzen_t *pe, double mu, double sigma);
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

/* The windowed sums' bookkeeping, per block of PZ_BLOCK components (block b holds
 * components [b PZ_BLOCK, (b + 1) PZ_BLOCK)): bws[b] = the weight of blocks before b,
 * bsl[b] / bsr[b] = the largest sigma over blocks 0..b / b..last. Per block rather than
 * per component because the walk tests its stopping rule only between blocks, and a
 * weighing of 10,000 components then writes 313 of each instead of three chains of
 * 10,000 dependent additions and maxima. A block's weight is space__sum's, so both fits
 * give the same bits. */
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

static void blocks_fill(space__parzen_t *pe)
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

/* Optuna's categorical row of component k (the prior's for k == n) at category c. */
static double cat_row(const space__parzen_t *pe, size_t k, size_t c)
{
    if (k == pe->n) return 1.0 / (double)pe->ncat;
    return (size_t)pe->mu[k] == c ? pe->cat_hi : pe->cat_lo;
}

int space__parzen_fit_sorted_total(space__parzen_t *pe, const double *x, const double *rw, size_t n,
                                   double low, double high, double q, size_t ncat, double total)
{
    /* the arrays of an earlier fit are reused when large enough: a suggestion refits 20
     * estimators, and fresh 80 kB arrays each time cost page faults */
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
    /* times the reciprocal: a division per weight was a tenth of a suggestion's time */
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
         * order: mispredicted branches were half a categorical fit's time); four
         * categories at a time in variables, each summed in component order as before
         * (which decides ties between categories seen equally often, so it stays) */
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
     * sorted means; each sigma is the larger gap to a neighbour (low and high act as
     * neighbours, except that without consider_endpoints the first and last take their
     * inner gap), clipped to [range / min(100, 1 + n_components), range]. */
    double range = high - low, mid = 0.5 * (low + high);
    size_t ncomp = n + 1, pp = 0;   /* the prior's position among the sorted means */
    for (size_t hi = n; pp < hi;) { /* the first x > mid */
        size_t h = pp + (hi - pp) / 2;
        if (x[h] <= mid)
            pp = h + 1;
        else
            hi = h;
    }
    pe->minsigma = range / (ncomp + 1.0 < 100.0 ? ncomp + 1.0 : 100.0);
    pe->isg_min = 1.0 / pe->minsigma; /* most sigmas are the clipped one */
    pe->prior_mu = mid;
    pe->prior_sigma = range;
    pe->prior_z = comp_z(pe, mid, range);
    /* One pass over low, the means with the prior's among them, high (prev, cur, next
     * rolling: no copy of the 10,000 means). Components with the same mean and sigma
     * (repeated integer or stepped values: 10,000 trials of a 64-value parameter) become
     * one with their summed weight, added in the same order as before: the same mixture,
     * summed once instead of hundreds of times. pe->n counts what is left. */
    const space__zcache_t *zc = pe->zc;
    size_t kept = 0, ci = 0, src = 0; /* src: the next x[] to become a component */
    double prev = low, cur = pp == 0 ? mid : x[0];
    /* the component being built, written out once the next one differs */
    int have = 0;
    double cmu = 0, csg = 0, cw = 0;
#define FLUSH()                                                                                    \
    do {                                                                                           \
        double z = NAN;                                                                            \
        if (zc) { /* a mass computed for the same (mu, sigma) in an earlier fit */                 \
            while (ci < zc->n && zc->mu[ci] < cmu)                                                 \
                ci++;                                                                              \
            for (size_t c = ci; c < zc->n && zc->mu[c] == cmu; c++)                                \
                if (zc->sigma[c] == csg) {                                                         \
                    z = zc->z[c];                                                                  \
                    break;                                                                         \
                }                                                                                  \
        }                                                                                          \
        pe->mu[kept] = cmu;                                                                        \
        pe->sigma[kept] = csg;                                                                     \
        pe->w[kept] = cw;                                                                          \
        pe->z[kept] = z;                                                                           \
        pe->czi[kept++] = NAN; /* 1 / (sqrt(2 pi) z) and 1 / sigma: when first needed */           \
    } while (0)
    for (size_t j = 0; j < ncomp; j++) {
        size_t jn = j + 1; /* the next value of the sequence */
        double next = jn == ncomp ? high : jn < pp ? x[jn] : jn == pp ? mid : x[jn - 1];
        double left = cur - prev, right = next - cur;
        double sg = left > right ? left : right;
        if (ncomp >= 2 && j == 0) sg = right;
        if (ncomp >= 2 && j == ncomp - 1) sg = left;
        sg = sg < pe->minsigma ? pe->minsigma : sg > range ? range : sg;
        if (j != pp) { /* the prior's sigma is the whole range */
            double wk = (rw ? rw[src] : 1.0) * inv;
            src++;
            if (have && cmu == cur && csg == sg) {
                cw += wk;
            } else {
                if (have) FLUSH();
                cmu = cur, csg = sg, cw = wk, have = 1;
            }
        }
        prev = cur;
        cur = next;
    }
    if (have) FLUSH();
#undef FLUSH
    n = pe->n = kept;
    blocks_fill(pe);
    pe->tnn = n + 1; /* the prior's too */
    for (size_t k = 0; k < 2 * (n + 1); k++)
        pe->tn[k] = NAN;
    return SPACE_OK;
nomem:
    space__parzen_free(pe);
    return SPACE_ENOMEM;
}

/* ---- the bad estimator kept between suggestions ---------------------------------------
 * The same components as space__parzen_fit_sorted_total, kept up to date: an observation
 * inserted or removed changes the bandwidth of its neighbours in the sorted sequence (low,
 * the means with the prior's among them, high) and nothing else while the magic clip is
 * fixed (n >= 98), so only the components around it are rebuilt, by the same rules, and
 * the masses of the others (erfc for stepped parameters) stay. */
#define INC_MIN_N 98 /* the clip range / min(100, n + 2) is fixed from here on */

void space__parzen_inc_free(space__parzen_inc_t *in)
{
    if (!in) return;
    free(in->pe.memo); /* its own */
    space__parzen_free(&in->pe);
    free(in->rx);
    free(in->rid);
    free(in->cnt);
    free(in->rr);
    free(in->rrank);
    memset(in, 0, sizeof *in);
}

/* Room for n observations (and as many components) in every array. */
static int inc_reserve(space__parzen_inc_t *in, size_t n)
{
    if (n < in->cap) return 0;
    size_t cap = n + n / 2 + 16;
    space__parzen_t *pe = &in->pe;
#define INC_GROW(ptr, count)                                                                       \
    do {                                                                                           \
        void *np = realloc(ptr, (count) * sizeof *ptr);                                            \
        if (!np) return SPACE_ENOMEM;                                                              \
        ptr = np;                                                                                  \
    } while (0)
    INC_GROW(pe->mu, cap);
    INC_GROW(pe->sigma, cap);
    INC_GROW(pe->w, cap);
    INC_GROW(pe->bws, cap / PZ_BLOCK + 2);
    INC_GROW(pe->bsl, cap / PZ_BLOCK + 1);
    INC_GROW(pe->bsr, cap / PZ_BLOCK + 1);
    INC_GROW(pe->z, cap);
    INC_GROW(pe->isg, cap);
    INC_GROW(pe->czi, cap);
    INC_GROW(pe->fm, cap);
    INC_GROW(pe->fisg, cap);
    INC_GROW(pe->fcoef, cap);
    INC_GROW(in->rx, cap);
    INC_GROW(in->rid, cap);
    INC_GROW(in->cnt, cap);
    INC_GROW(in->rr, cap);
    INC_GROW(in->rrank, cap);
#undef INC_GROW
    in->cap = pe->cap = cap;
    return 0;
}

/* The bandwidth of observation i as the full fit computes it: the larger gap to its
 * neighbours in the sequence low, rx[] with the prior's mean at pp, high (the first and
 * last take their inner gap), clipped to [minsigma, range]. */
static double inc_sigma(const space__parzen_inc_t *in, size_t i)
{
    const space__parzen_t *pe = &in->pe;
    size_t n = in->nraw, ncomp = n + 1, pp = in->pp, j = i < pp ? i : i + 1;
    double mid = pe->prior_mu, range = pe->high - pe->low;
#define SEQ(k) ((k) < pp ? in->rx[k] : (k) == pp ? mid : in->rx[(k)-1])
    double prev = j == 0 ? pe->low : SEQ(j - 1), cur = in->rx[i];
    double next = j + 1 == ncomp ? pe->high : SEQ(j + 1);
#undef SEQ
    double left = cur - prev, right = next - cur;
    double sg = left > right ? left : right;
    if (ncomp >= 2 && j == 0) sg = right;
    if (ncomp >= 2 && j == ncomp - 1) sg = left;
    return sg < pe->minsigma ? pe->minsigma : sg > range ? range : sg;
}

static size_t inc_first_above_mid(const space__parzen_inc_t *in)
{
    size_t lo = 0, hi = in->nraw;
    while (lo < hi) {
        size_t h = lo + (hi - lo) / 2;
        if (in->rx[h] <= in->pe.prior_mu)
            lo = h + 1;
        else
            hi = h;
    }
    return lo;
}

/* Components of observations [ra, rb) merged as the full fit merges them (consecutive
 * equal mean and sigma); returns how many. */
static size_t inc_build(space__parzen_inc_t *in, size_t ra, size_t rb, double *mu, double *sg,
                        size_t *cnt)
{
    size_t m = 0;
    for (size_t i = ra; i < rb; i++) {
        double v = in->rx[i], s = inc_sigma(in, i);
        if (m > 0 && mu[m - 1] == v && sg[m - 1] == s) {
            cnt[m - 1]++;
        } else {
            mu[m] = v, sg[m] = s, cnt[m] = 1;
            m++;
        }
    }
    return m;
}

/* What the components [from, to) keep from fit to fit besides mean and sigma: the mass
 * (erfc for components near the bounds, only when not already known), 1 / sigma and
 * 1 / (sqrt(2 pi) mass), so that a weighing multiplies instead of divides. */
static double comp_z(const space__parzen_t *pe, double mu, double sigma);
static double comp_czi(const space__parzen_t *pe, size_t k);
static double comp_isg(const space__parzen_t *pe, double sigma);
static void inc_factors(space__parzen_t *pe, size_t from, size_t to)
{
    for (size_t k = from; k < to; k++) {
        if (isnan(pe->z[k])) pe->z[k] = comp_z(pe, pe->mu[k], pe->sigma[k]);
        pe->isg[k] = comp_isg(pe, pe->sigma[k]);
        pe->czi[k] = comp_czi(pe, k);
        pe->fm[k] = (float)((pe->mu[k] - pe->low) * pe->isg[k]); /* crude_block's t */
        pe->fisg[k] = (float)pe->isg[k];
    }
}

int space__parzen_inc_fit(space__parzen_inc_t *in, const double *x, const size_t *id, size_t n,
                          double low, double high, double q)
{
    if (inc_reserve(in, n + 1)) return SPACE_ENOMEM;
    space__parzen_t *pe = &in->pe;
    memcpy(in->rx, x, n * sizeof *x);
    memcpy(in->rid, id, n * sizeof *id);
    in->nraw = n;
    pe->ncat = 0;
    pe->low = low, pe->high = high, pe->q = q;
    double range = high - low, mid = 0.5 * (low + high), ncomp = (double)n + 1.0;
    pe->minsigma = range / (ncomp + 1.0 < 100.0 ? ncomp + 1.0 : 100.0);
    pe->isg_min = 1.0 / pe->minsigma;
    pe->prior_mu = mid;
    pe->prior_sigma = range;
    pe->prior_z = comp_z(pe, mid, range);
    in->pp = inc_first_above_mid(in);
    if (q > 0 && !pe->memo) pe->memo = space__pz_memo_new();
    if (pe->memo) memset(pe->memo, 0, PZ_MEMO * sizeof *pe->memo); /* bounds may differ */
    pe->n = inc_build(in, 0, n, pe->mu, pe->sigma, in->cnt);
    for (size_t k = 0; k < pe->n; k++)
        pe->z[k] = NAN;
    inc_factors(pe, 0, pe->n);
    pe->coef_ready = 0; /* until weighed */
    return SPACE_OK;
}

/* Component holding observation r (of the arrays before the change), and where it starts. */
static size_t inc_comp_of(const space__parzen_inc_t *in, size_t r, size_t *start)
{
    const space__parzen_t *pe = &in->pe;
    double v = in->rx[r];
    size_t lo = 0, hi = pe->n, rlo = 0, rhi = in->nraw;
    while (lo < hi) { /* the first component with mean >= v */
        size_t h = lo + (hi - lo) / 2;
        if (pe->mu[h] < v)
            lo = h + 1;
        else
            hi = h;
    }
    while (rlo < rhi) { /* the first observation >= v: where that component starts */
        size_t h = rlo + (rhi - rlo) / 2;
        if (in->rx[h] < v)
            rlo = h + 1;
        else
            rhi = h;
    }
    while (rlo + in->cnt[lo] <= r)
        rlo += in->cnt[lo++];
    *start = rlo;
    return lo;
}

/* A run of observations sharing one component's mean and sigma (and so its mass). */
typedef struct inc_part {
    double mu, sg, z;
    size_t cnt;
} inc_part_t;

static void inc_add(inc_part_t *out, size_t *m, inc_part_t p)
{
    if (*m > 0 && out[*m - 1].mu == p.mu && out[*m - 1].sg == p.sg) {
        out[*m - 1].cnt += p.cnt;
        if (isnan(out[*m - 1].z)) out[*m - 1].z = p.z;
    } else {
        out[(*m)++] = p;
    }
}

/* Replaces components c0..c1 by: the part of c0 up to the left anchor (lcnt observations,
 * none when 0), the observations [i0, i1) whose sigma changed, recomputed, and the part of
 * c1 from the right anchor on (rcnt). The anchors' sigmas did not change, so nothing
 * outside c0..c1 merges differently. Masses of parts that keep their (mu, sigma) stay. */
static void inc_splice(space__parzen_inc_t *in, size_t c0, size_t c1, size_t lcnt, size_t i0,
                       size_t i1, size_t rcnt)
{
    space__parzen_t *pe = &in->pe;
    inc_part_t out[8];
    size_t m = 0;
    if (lcnt) inc_add(out, &m, (inc_part_t){pe->mu[c0], pe->sigma[c0], pe->z[c0], lcnt});
    for (size_t i = i0; i < i1; i++) {
        inc_part_t p = {in->rx[i], inc_sigma(in, i), NAN, 1};
        for (size_t c = c0; c <= c1 && isnan(p.z); c++)
            if (pe->mu[c] == p.mu && pe->sigma[c] == p.sg) p.z = pe->z[c];
        inc_add(out, &m, p);
    }
    if (rcnt) inc_add(out, &m, (inc_part_t){pe->mu[c1], pe->sigma[c1], pe->z[c1], rcnt});
    size_t tail = pe->n - (c1 + 1);
    memmove(pe->mu + c0 + m, pe->mu + c1 + 1, tail * sizeof *pe->mu);
    memmove(pe->sigma + c0 + m, pe->sigma + c1 + 1, tail * sizeof *pe->sigma);
    memmove(pe->z + c0 + m, pe->z + c1 + 1, tail * sizeof *pe->z);
    memmove(pe->isg + c0 + m, pe->isg + c1 + 1, tail * sizeof *pe->isg);
    memmove(pe->czi + c0 + m, pe->czi + c1 + 1, tail * sizeof *pe->czi);
    memmove(pe->fm + c0 + m, pe->fm + c1 + 1, tail * sizeof *pe->fm);
    memmove(pe->fisg + c0 + m, pe->fisg + c1 + 1, tail * sizeof *pe->fisg);
    memmove(in->cnt + c0 + m, in->cnt + c1 + 1, tail * sizeof *in->cnt);
    for (size_t k = 0; k < m; k++) {
        pe->mu[c0 + k] = out[k].mu;
        pe->sigma[c0 + k] = out[k].sg;
        pe->z[c0 + k] = out[k].z;
        in->cnt[c0 + k] = out[k].cnt;
    }
    inc_factors(pe, c0, c0 + m);
    pe->n = c0 + m + tail;
    pe->coef_ready = 0; /* until weighed */
}

/* Position of (v, id) among the sorted observations: the first one not before it. */
static size_t inc_find(const space__parzen_inc_t *in, double v, size_t id)
{
    size_t lo = 0, hi = in->nraw;
    while (lo < hi) {
        size_t h = lo + (hi - lo) / 2;
        if (in->rx[h] < v || (in->rx[h] == v && in->rid[h] < id))
            lo = h + 1;
        else
            hi = h;
    }
    return lo;
}

int space__parzen_inc_insert(space__parzen_inc_t *in, double v, size_t id)
{
    size_t n = in->nraw;
    if (n < INC_MIN_N || isnan(v) || in->pe.n == 0) return 1;
    if (inc_reserve(in, n + 2)) return SPACE_ENOMEM;
    size_t p = inc_find(in, v, id);
    /* observations p - 1 and p (before) gain the new one as a neighbour; p - 2 and p + 1,
     * the anchors, keep theirs */
    size_t c0 = 0, c1 = in->pe.n - 1, ra = 0, rs = 0, lcnt = 0, rcnt = 0;
    if (p >= 2) {
        c0 = inc_comp_of(in, p - 2, &ra);
        lcnt = p - 2 - ra + 1;
    }
    if (p + 1 < n) {
        c1 = inc_comp_of(in, p + 1, &rs);
        rcnt = rs + in->cnt[c1] - (p + 1);
    }
    memmove(in->rx + p + 1, in->rx + p, (n - p) * sizeof *in->rx);
    memmove(in->rid + p + 1, in->rid + p, (n - p) * sizeof *in->rid);
    memmove(in->rrank + p + 1, in->rrank + p, (n - p) * sizeof *in->rrank);
    in->rx[p] = v;
    in->rid[p] = id;
    in->rrank[p] = 0; /* until space__parzen_inc_rank_one or _set_ranks */
    in->nraw = n + 1;
    in->pp = inc_first_above_mid(in);
    inc_splice(in, c0, c1, lcnt, p >= 2 ? p - 1 : 0, p + 1 < n ? p + 2 : n + 1, rcnt);
    return 0;
}

int space__parzen_inc_remove(space__parzen_inc_t *in, double v, size_t id)
{
    size_t n = in->nraw;
    if (n <= INC_MIN_N || isnan(v) || in->pe.n == 0) return 1;
    size_t p = inc_find(in, v, id);
    if (p >= n || in->rx[p] != v || in->rid[p] != id) return 1;
    /* p - 1 and p + 1 become neighbours; p - 2 and p + 2, the anchors, keep theirs */
    size_t c0 = 0, c1 = in->pe.n - 1, ra = 0, rs = 0, lcnt = 0, rcnt = 0;
    if (p >= 2) {
        c0 = inc_comp_of(in, p - 2, &ra);
        lcnt = p - 2 - ra + 1;
    }
    if (p + 2 < n) {
        c1 = inc_comp_of(in, p + 2, &rs);
        rcnt = rs + in->cnt[c1] - (p + 2);
    }
    memmove(in->rx + p, in->rx + p + 1, (n - p - 1) * sizeof *in->rx);
    memmove(in->rid + p, in->rid + p + 1, (n - p - 1) * sizeof *in->rid);
    memmove(in->rrank + p, in->rrank + p + 1, (n - p - 1) * sizeof *in->rrank);
    in->nraw = n - 1;
    in->pp = inc_first_above_mid(in);
    inc_splice(in, c0, c1, lcnt, p >= 2 ? p - 1 : 0, p + 2 < n ? p + 1 : n - 1, rcnt);
    return 0;
}

/* The weights' passes of a weighing: no pointer here aliases another (restrict), so the
 * multiplications vectorise; the AVX-512 and AVX2 copies also gather rr. The same
 * operations in every copy, so the same results. */
SPACE__CLONES
static void inc_gather(double *restrict rr, const double *restrict rw_by_id,
                       const size_t *restrict rid, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rr[i] = rw_by_id[rid[i]];
}

SPACE__CLONES
static void inc_scale(double *restrict w, const double *restrict rr, double inv, size_t n)
{
    for (size_t c = 0; c < n; c++)
        w[c] = rr[c] * inv;
}

/* The crude sums' coefficients: w czi (times isg unless NULL: Optuna 3.1.0's unscaled
 * density), in single precision. */
SPACE__CLONES static void inc_fcoef(float *restrict fcoef, const double *restrict w,
                                    const double *restrict czi, const double *restrict isg,
                                    size_t m)
{
    if (!isg) {
        for (size_t c = 0; c < m; c++)
            fcoef[c] = (float)(w[c] * czi[c]);
    } else {
        for (size_t c = 0; c < m; c++)
            fcoef[c] = (float)((w[c] * czi[c]) * isg[c]);
    }
}

/* What a weighing does once w is set: the block bookkeeping and the crude coefficients. */
static void inc_weigh_rest(space__parzen_inc_t *in)
{
    space__parzen_t *pe = &in->pe;
    blocks_fill(pe);
    pe->coef_ready = pe->q == 0; /* stepped: term() reads w and z only */
    if (!pe->coef_ready) return;
    /* every component's factor now, as block_sum would one by one: a suggestion's 24
     * candidates visit most of them, and a loop without a test per component vectorises */
    inc_fcoef(pe->fcoef, pe->w, pe->czi, pe->optuna31_unscaled ? NULL : pe->isg, pe->n);
}

/* The weighing from the raw weights in sorted order (in->rr). */
static void inc_weigh_rr(space__parzen_inc_t *in, double total)
{
    space__parzen_t *pe = &in->pe;
    size_t n = in->nraw, m = pe->n;
    /* the prior's weight, then the sorted weights as the full fit sums them */
    if (isnan(total)) total = 1.0 + space__sum(in->rr, n);
    double inv = 1.0 / total;
    pe->prior_w = 1.0 / total;
    if (m == n) { /* nothing merged (continuous parameters): a plainer loop */
        inc_scale(pe->w, in->rr, inv, n);
    } else {
        for (size_t c = 0, i = 0; c < m; c++) {
            double cw = in->rr[i++] * inv;
            for (size_t e = 1; e < in->cnt[c]; e++)
                cw += in->rr[i++] * inv;
            pe->w[c] = cw;
        }
    }
    inc_weigh_rest(in);
}

void space__parzen_inc_weigh(space__parzen_inc_t *in, const double *rw_by_id, double total)
{
    inc_gather(in->rr, rw_by_id, in->rid, in->nraw);
    inc_weigh_rr(in, total);
}

void space__parzen_inc_set_ranks(space__parzen_inc_t *in, const uint32_t *rank_by_id)
{
    for (size_t i = 0; i < in->nraw; i++)
        in->rrank[i] = rank_by_id[in->rid[i]];
}

int space__parzen_inc_rank_one(space__parzen_inc_t *in, double v, size_t id, uint32_t rank)
{
    size_t p = inc_find(in, v, id);
    if (p >= in->nraw || in->rx[p] != v || in->rid[p] != id) return 1;
    in->rrank[p] = rank;
    return 0;
}

/* rr[i] = Optuna's default_weights of age rank[i], as the searcher writes them by trial
 * (the same operations), with no gathering by trial. */
SPACE__CLONES static void inc_ramp(double *restrict rr, const uint32_t *restrict rank, size_t n,
                                   double w0, double step, size_t ramp)
{
    /* in doubles (ranks are exact in them): an integer compare made the loop branch */
    double rampd = (double)ramp;
    for (size_t i = 0; i < n; i++) {
        double r = (double)rank[i], v = w0 + r * step;
        rr[i] = r < rampd ? v : 1.0;
    }
}

/* w[i] = rr[i] x inv straight from the ranks, for an estimator that merges nothing: the
 * same values as inc_ramp then inc_scale, one pass fewer. */
SPACE__CLONES static void inc_ramp_scale(double *restrict w, const uint32_t *restrict rank,
                                         size_t n, double w0, double step, size_t ramp, double inv)
{
    double rampd = (double)ramp;
    for (size_t i = 0; i < n; i++) {
        double r = (double)rank[i], v = w0 + r * step;
        w[i] = (r < rampd ? v : 1.0) * inv;
    }
}

void space__parzen_inc_weigh_ranks(space__parzen_inc_t *in, double w0, double step, size_t ramp,
                                   double total)
{
    space__parzen_t *pe = &in->pe;
    if (isnan(total) || pe->n != in->nraw) {
        inc_ramp(in->rr, in->rrank, in->nraw, w0, step, ramp);
        inc_weigh_rr(in, total);
        return;
    }
    double inv = 1.0 / total;
    pe->prior_w = 1.0 / total;
    inc_ramp_scale(pe->w, in->rrank, in->nraw, w0, step, ramp, inv);
    inc_weigh_rest(in);
}

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

static double comp_z(const space__parzen_t *pe, double mu, double sigma)
{
    /* well inside the range (the margin covers the divisions' rounding): the test below
     * would pass, without its two divisions */
    if (mu - pe->low > 9.000001 * sigma && pe->high - mu > 9.000001 * sigma) return 1.0;
    double a = (pe->low - mu) / sigma, b = (pe->high - mu) / sigma;
    /* beyond 9 sd the missing tail is below 1.2e-19: the mass is 1 in double */
    if (a < -9 && b > 9) return 1.0;
    return space__gauss_mass(a, b);
}

struct space__pz_memo *space__pz_memo_new(void)
{
    return calloc(PZ_MEMO, sizeof(struct space__pz_memo));
}

/* One component's term at x; for stepped parameters through the memo (PZ_MEMO). */
static double term(space__parzen_t *pe, size_t k, double x)
{
    double mu = pe->mu[k], sg = pe->sigma[k];
    if (isnan(pe->z[k])) pe->z[k] = comp_z(pe, mu, sg);
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

/* The sum over a block of PZ_BLOCK components of coef_i exp(-t^2 / 2),
 * t = (x - mu[i]) isg[i], coef_i = w[i] czi[i] (times isg[i] unless Optuna 3.1.0's unscaled
 * density): a fixed count and no aliasing, which is what lets -O2 vectorise it, and the
 * products added as a fixed tree (i with i + 16, then + 8, + 4, + 2, + 1) instead of one
 * after another: a chain of dependent additions was a fifth of a suggestion's time, and
 * the tree's order does not depend on the vector width. The same operations in every
 * copy (SPACE__CLONES), so the same results on every CPU. */
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

/* One component's constant factor, its weight w times czi = 1 / (sqrt(2 pi) z) (times
 * 1 / sigma unless Optuna 3.1.0's unscaled density): czi stays from fit to fit. */
static double comp_czi(const space__parzen_t *pe, size_t k)
{
    return 1.0 / (SPACE__SQRT_2PI * pe->z[k]);
}

static double comp_isg(const space__parzen_t *pe, double sigma)
{
    return sigma == pe->minsigma ? pe->isg_min : 1.0 / sigma;
}

/* Components from..to-1 (at most PZ_BLOCK) at x: term() for stepped parameters; for
 * continuous ones sum_block with each component's constant factor computed once per fit
 * (the windowed walk's inner loop, where the time goes). A short block at either end of
 * the means is padded with components of weight 0 at x, which add exactly 0. */
static double block_sum(space__parzen_t *pe, size_t from, size_t to, double x)
{
    double s = 0;
    if (pe->q > 0) {
        for (size_t k = from; k < to; k++)
            s += term(pe, k, x);
        return s;
    }
    if (!pe->coef_ready) /* a fit's factors, when first needed (the kept one has them all) */
        for (size_t k = from; k < to; k++) {
            if (!isnan(pe->czi[k])) continue;
            if (isnan(pe->z[k])) pe->z[k] = comp_z(pe, pe->mu[k], pe->sigma[k]);
            pe->isg[k] = comp_isg(pe, pe->sigma[k]);
            pe->czi[k] = comp_czi(pe, k);
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

static double prior_term(const space__parzen_t *pe, double x)
{
    return pe->prior_w * comp_pdf(pe, x, pe->prior_mu, pe->prior_sigma, pe->prior_z);
}

double space__parzen_log_pdf_naive(space__parzen_t *pe, double x)
{
    if (pe->ncat > 0) {
        size_t c = (size_t)x;
        return c < pe->ncat ? log(pe->cat[c]) : -INFINITY;
    }
    double s = prior_term(pe, x);
    for (size_t k = 0; k < pe->n; k++)
        s += term(pe, k, x);
    return log(s);
}

/* An upper bound on e^y for y <= 0, for the walk's stopping test: the single-precision
 * exponential with room for its error and for rounding y to float (5e-6 relative at
 * most; 2e-3 allowed), and e^-50 for anything below -50. */
static inline double tail_exp(double y)
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
 * rest * peak * exp(-d^2/2) with peak = ZINV (q) / (sqrt(2 pi) minsigma),
 * ZINV = 1 / 0.3413 < 2.93 (the left side alike, with bsl and the blocks up to l - 1's).
 * Stopping once that is at most tol * s (s only grows afterwards) leaves out less than tol
 * of the final sum on each side: |log s_windowed - log s_full| < 2 tol, checked against an
 * independent reference in tpe.fast_log_pdf_equals_reference. The first block on each
 * side ends at a block boundary, so the walk's blocks are the bookkeeping's blocks.
 * Returns the prior's term plus the visited blocks' sums (each by sum(pe, from, to, x));
 * *tails, when not NULL, gets the bound on what was left out on the two sides. */
#define ZINV 2.93
typedef double (*pz_block_fn)(space__parzen_t *pe, size_t from, size_t to, double x);
/* always inlined into its two callers, so that sum is a direct call there (a call through
 * a pointer per block was part of the walk's own cost) */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline double
walk(space__parzen_t *pe, double x, double tol, pz_block_fn sum, double *tails)
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
    double s = prior_term(pe, x), half = 0.5 * pe->q, tail_r = 0, tail_l = 0;
    double peak = pe->q > 0               ? ZINV * pe->q / (SPACE__SQRT_2PI * pe->minsigma)
                  : pe->optuna31_unscaled ? ZINV / SPACE__SQRT_2PI
                                          : ZINV / (SPACE__SQRT_2PI * pe->minsigma);
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
            tail_r = (pe->bws[nb] - pe->bws[b]) * peak * tail_exp(-0.5 * d * d);
            rdone = tail_r <= tol * s;
        }
        if (ldone || l == 0) {
            ldone = 1;
        } else {
            size_t b = (l - 1) / PZ_BLOCK;
            double d = x - pe->mu[l - 1] - half;
            d = (d > 0 ? d : 0) / pe->bsl[b];
            tail_l = pe->bws[b + 1] * peak * tail_exp(-0.5 * d * d);
            ldone = tail_l <= tol * s;
        }
    }
    if (tails) *tails = tail_r + tail_l;
    return s;
}

double space__parzen_log_pdf(space__parzen_t *pe, double x)
{
    if (pe->ncat > 0) return space__parzen_log_pdf_naive(pe, x);
    return log(walk(pe, x, pe->tol > 0 ? pe->tol : SPACE__PARZEN_TOL, block_sum, NULL));
}

/* ---- bounds on the windowed sum, from a cheaper one ----------------------------------
 * What the acquisition needs is the argmax over 24 candidates, and most candidates are
 * far from the best: bounding log g at each one from a single-precision sum that costs a
 * fraction of the exact one, then computing the exact value only where the bound leaves
 * the candidate a chance, picks the same candidate (tpe.c) for a third of the work.
 *
 * The error of one crude term against the exact coef exp(-t^2 / 2): t as
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
    double tails, prior = prior_term(pe, x);
    double s = walk(pe, x, PZ_CRUDE_TOL, crude_sum, &tails) - prior;
    /* the exact sum of the visited components lies in s / (1 +- eps), less what the
     * clamp added; the exact walk's own window and rounding (relative 1e-11 at most) and
     * the bounds' own rounding are covered by the margin in log space */
    size_t nb = (pe->n + PZ_BLOCK - 1) / PZ_BLOCK;
    double peak =
        pe->optuna31_unscaled ? ZINV / SPACE__SQRT_2PI : ZINV / (SPACE__SQRT_2PI * pe->minsigma);
    double clamp = pe->bws[nb] * peak * 2e-22; /* >= every clamped term's excess: e^-50 */
    double glo = prior + (s - clamp) / (1.0 + PZ_CRUDE_EPS);
    double ghi = prior + s / (1.0 - PZ_CRUDE_EPS) + tails * 1.000001;
    *lo = (glo > 0 ? log(glo) : -INFINITY) - 1e-9;
    *hi = log(ghi) + 1e-9;
}

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
