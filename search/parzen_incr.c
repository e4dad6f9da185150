/* search/parzen_incr.c: the kept estimator, a numeric Parzen estimator updated one
 * observation at a time between the TPE searcher's suggestions (its bad estimators gain
 * or lose a trial or two per suggestion) and reweighed, instead of fitted afresh. Bit for
 * bit what the fit (parzen.c, space__parzen_fit_sorted_total) gives for the same sorted
 * observations, whatever the sequence of inserts and removals: held to it by
 * tpe.parzen_incremental_equals_full_fit, and to a rebuilt searcher by
 * tpe.incremental_suggests_what_a_rebuilt_searcher_does. Not for: the estimator's rules
 * (parzen.c, parzen_parts.h) or categorical parameters (always fitted afresh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/parzen_parts.h"

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

/* The bandwidth of observation i as the full fit computes it: pz_bandwidth from its
 * neighbours in the sequence low, rx[] with the prior's mean at pp, high. */
static double inc_sigma(const space__parzen_inc_t *in, size_t i)
{
    const space__parzen_t *pe = &in->pe;
    size_t n = in->nraw, ncomp = n + 1, pp = in->pp, j = i < pp ? i : i + 1;
    double mid = pe->prior_mu, range = pe->high - pe->low;
#define SEQ(k) ((k) < pp ? in->rx[k] : (k) == pp ? mid : in->rx[(k)-1])
    double prev = j == 0 ? pe->low : SEQ(j - 1), cur = in->rx[i];
    double next = j + 1 == ncomp ? pe->high : SEQ(j + 1);
#undef SEQ
    return pz_bandwidth(prev, cur, next, j, ncomp, pe->minsigma, range);
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
static void inc_factors(space__parzen_t *pe, size_t from, size_t to)
{
    for (size_t k = from; k < to; k++) {
        if (isnan(pe->z[k])) pe->z[k] = space__parzen_comp_z(pe, pe->mu[k], pe->sigma[k]);
        pe->isg[k] = pz_comp_isg(pe, pe->sigma[k]);
        pe->czi[k] = pz_comp_czi(pe, k);
        /* parzen_bounds.c's crude_block: t = (x - low) fisg - fm */
        pe->fm[k] = (float)((pe->mu[k] - pe->low) * pe->isg[k]);
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
    space__parzen_set_prior(pe, n);
    in->pp = inc_first_above_mid(in);
    if (q > 0 && !pe->memo) pe->memo = space__pz_memo_new();
    if (pe->memo) space__pz_memo_clear(pe->memo); /* bounds may differ */
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
    space__parzen_blocks_fill(pe);
    pe->coef_ready = pe->q == 0; /* stepped: space__parzen_term reads w and z only */
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
