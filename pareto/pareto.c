/* pareto/pareto.c: dominance, the ranking of several objectives and the hypervolume
 * (pareto.h says the rules, docs/multiobjective.md why). Not for: what a result's objectives
 * are (search/settings.c) or what a rung does with the order (scheduler/). */
#include "pareto/pareto.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE SIZE_MAX

int pareto_dominates(size_t k, const double *a, const double *b)
{
    int better = 0;
    for (size_t i = 0; i < k; i++) {
        if (isnan(a[i]) || isnan(b[i]) || a[i] > b[i]) return 0;
        better |= a[i] < b[i];
    }
    return better;
}

/* ---- a stable merge sort of indices under a comparator with a context --------------------
 * C11's qsort takes no context and is not stable; every order here ends in a total tie rule
 * anyway, so stability only keeps the result independent of the C library. */

typedef int (*cmp_fn)(size_t a, size_t b, const void *ctx);

static void sort_idx(size_t *a, size_t *tmp, size_t n, cmp_fn cmp, const void *ctx)
{
    if (n < 2) return;
    if (n <= 12) {
        for (size_t i = 1; i < n; i++) {
            size_t v = a[i], j = i;
            for (; j > 0 && cmp(a[j - 1], v, ctx) > 0; j--)
                a[j] = a[j - 1];
            a[j] = v;
        }
        return;
    }
    size_t h = n / 2;
    sort_idx(a, tmp, h, cmp, ctx);
    sort_idx(a + h, tmp, n - h, cmp, ctx);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n)
        tmp[o++] = cmp(a[j], a[i], ctx) < 0 ? a[j++] : a[i++];
    while (i < h)
        tmp[o++] = a[i++];
    while (j < n)
        tmp[o++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

/* ---- ranking ------------------------------------------------------------------------------ */

struct rank_ctx {
    size_t k;
    const double *obj;
    const double *violation;
    const int64_t *ids;
};

static int64_t id_of(const struct rank_ctx *c, size_t i)
{
    return c->ids ? c->ids[i] : (int64_t)i;
}

static int cmp_id(size_t a, size_t b, const void *vctx)
{
    const struct rank_ctx *c = vctx;
    int64_t x = id_of(c, a), y = id_of(c, b);
    if (x != y) return x < y ? -1 : 1;
    return a < b ? -1 : a > b; /* equal ids (a caller's mistake): the index keeps it total */
}

/* Lexicographic over the objectives, then id. A point can only be dominated by one before it
 * in this order (a dominates b implies a <= b in every objective and a != b), which is what
 * lets the sort below place each point once (Zhang et al.'s ENS, IEEE TEVC 2015). */
static int cmp_lex(size_t a, size_t b, const void *vctx)
{
    const struct rank_ctx *c = vctx;
    const double *x = c->obj + a * c->k, *y = c->obj + b * c->k;
    for (size_t d = 0; d < c->k; d++)
        if (x[d] != y[d]) return x[d] < y[d] ? -1 : 1;
    return cmp_id(a, b, vctx);
}

/* The total violation, NaN read as +INFINITY (nothing says the point is feasible). */
static double viol_of(const struct rank_ctx *c, size_t i)
{
    double v = c->violation[i];
    return isnan(v) ? INFINITY : v;
}

static int cmp_violation(size_t a, size_t b, const void *vctx)
{
    const struct rank_ctx *c = vctx;
    double x = viol_of(c, a), y = viol_of(c, b);
    if (x != y) return x < y ? -1 : 1;
    return cmp_id(a, b, vctx);
}

/* 1 when some point already in front f dominates p. Members are listed newest first: the
 * newest are nearest p in the lexicographic order, the likeliest to dominate it. With two
 * objectives the newest is the only one to ask: a front's members, in lexicographic order,
 * have the second objective non-increasing, so the newest has the smallest; if any member
 * dominates p, the newest is no worse than p in both objectives, and is not p's equal (p's
 * equal would be dominated by that member too, and could not share its front). So ranking
 * two objectives costs O(n log n). */
static int front_dominates(const struct rank_ctx *c, const size_t *head, const size_t *next,
                           size_t f, size_t p)
{
    for (size_t q = head[f]; q != NONE; q = next[q]) {
        if (pareto_dominates(c->k, c->obj + q * c->k, c->obj + p * c->k)) return 1;
        if (c->k == 2) break;
    }
    return 0;
}

static double dist2(const double *a, const double *b, size_t k)
{
    double s = 0;
    for (size_t d = 0; d < k; d++)
        s += (a[d] - b[d]) * (a[d] - b[d]);
    return s;
}

/* Orders one front (mem[0..s), in lexicographic order) into out by the epsilon-net of
 * Salinas et al. (ICLR 2021 NAS workshop) that MO-ASHA uses (Schmucker et al. 2021, Syne
 * Tune's NonDominatedPriority): start from the point best in the first objective (mem[0]),
 * then repeatedly take the point farthest (Euclidean) from every point taken so far, so that
 * any prefix is spread along the front (Gonzalez's farthest-point rule: a 2-approximation of
 * the best-spread subset of that size). Each objective is first scaled by its range over the
 * front, so the rule does not depend on units; ties go to the smaller id.
 * norm: s*k scratch, mind: s scratch. */
static void eps_net(const struct rank_ctx *c, size_t *mem, size_t s, double *norm, double *mind,
                    size_t *out)
{
    size_t k = c->k;
    for (size_t d = 0; d < k; d++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t j = 0; j < s; j++) {
            double v = c->obj[mem[j] * k + d];
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
        /* halves when the range overflows (values near +-DBL_MAX): exact scaling, same ratios */
        double h = isfinite(hi - lo) ? 1.0 : 0.5, w = hi * h - lo * h;
        for (size_t j = 0; j < s; j++)
            norm[j * k + d] = w > 0 ? (c->obj[mem[j] * k + d] * h - lo * h) / w : 0.0;
    }
    /* mem[j] and norm row j stay paired: the remaining ones are kept at [t, s) by swaps. */
    out[0] = mem[0];
    for (size_t j = 1; j < s; j++)
        mind[j] = dist2(norm + j * k, norm, k);
    for (size_t t = 1; t < s; t++) {
        size_t best = t;
        for (size_t j = t + 1; j < s; j++)
            if (mind[j] > mind[best] || (mind[j] == mind[best] && cmp_id(mem[j], mem[best], c) < 0))
                best = j;
        if (best != t) {
            size_t m = mem[t];
            mem[t] = mem[best];
            mem[best] = m;
            double x = mind[t];
            mind[t] = mind[best];
            mind[best] = x;
            for (size_t d = 0; d < k; d++) {
                x = norm[t * k + d];
                norm[t * k + d] = norm[best * k + d];
                norm[best * k + d] = x;
            }
        }
        out[t] = mem[t];
        for (size_t j = t + 1; j < s; j++) {
            double e = dist2(norm + j * k, norm + t * k, k);
            if (e < mind[j]) mind[j] = e;
        }
    }
}

static int finite_row(const double *x, size_t k)
{
    for (size_t d = 0; d < k; d++)
        if (!isfinite(x[d])) return 0;
    return 1;
}

int pareto_rank(size_t n, size_t k, const double *obj, const double *violation, const int64_t *ids,
                size_t *order, int *level, char *err, size_t errlen)
{
    if (k == 0 || (n > 0 && (!obj || !order))) {
        if (err && errlen)
            snprintf(err, errlen, "pareto_rank: %s",
                     k == 0 ? "no objective (k is 0)" : "obj and order must not be NULL");
        return PARETO_EINVAL;
    }
    if (n == 0) return PARETO_OK;

    size_t *zs = NULL;
    double *zd = NULL;
    if (n <= SIZE_MAX / sizeof(size_t) / 6 && n <= SIZE_MAX / sizeof(double) / (k + 1)) {
        zs = malloc(6 * n * sizeof *zs);
        zd = malloc(n * (k + 1) * sizeof *zd);
    }
    if (!zs || !zd) {
        free(zs);
        free(zd);
        if (err && errlen)
            snprintf(err, errlen, "pareto_rank: out of memory ranking %zu points of %zu objectives",
                     n, k);
        return PARETO_ENOMEM;
    }
    size_t *idx = zs, *tmp = zs + n, *head = zs + 2 * n, *next = zs + 3 * n, *fr = zs + 4 * n,
           *byfront = zs + 5 * n;
    double *norm = zd, *mind = zd + n * k;
    struct rank_ctx c = {k, obj, violation, ids};

    /* Three classes, in rank order: feasible with finite objectives, feasible with a missing
     * (NaN or infinite) objective, infeasible. */
    size_t m = 0, nnan = 0, ninf = 0;
    for (size_t i = 0; i < n; i++)
        if (!(violation && !(violation[i] <= 0)) && finite_row(obj + i * k, k)) idx[m++] = i;
    for (size_t i = 0; i < n; i++)
        if (!(violation && !(violation[i] <= 0)) && !finite_row(obj + i * k, k))
            idx[m + nnan++] = i;
    for (size_t i = 0; i < n; i++)
        if (violation && !(violation[i] <= 0)) idx[m + nnan + ninf++] = i;

    /* Non-dominated sorting by ENS with binary search over the fronts (Zhang et al. 2015): in
     * lexicographic order, a point joins the first front none of whose members dominates it.
     * "Some member of front f dominates p" holds for a prefix of the fronts (whoever dominates
     * p in front f is itself dominated by a member of every front before f), so the first
     * front that does not is found by bisection. Same fronts as Deb's fast non-dominated sort
     * (NSGA-II, Optuna's _fast_non_dominated_sort) in O(n) memory instead of O(n^2). */
    sort_idx(idx, tmp, m, cmp_lex, &c);
    size_t nf = 0;
    for (size_t t = 0; t < m; t++) {
        size_t p = idx[t], lo = 0, hi = nf;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (front_dominates(&c, head, next, mid, p))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == nf) head[nf++] = NONE;
        next[p] = head[lo];
        head[lo] = p;
        fr[p] = lo;
    }
    /* Bucket the points by front, keeping the lexicographic order inside each (head[] is
     * reused as the fronts' start offsets). */
    for (size_t f = 0; f < nf; f++)
        head[f] = 0;
    for (size_t t = 0; t < m; t++)
        head[fr[idx[t]]]++;
    size_t acc = 0;
    for (size_t f = 0; f < nf; f++) {
        size_t cnt = head[f];
        head[f] = acc;
        acc += cnt;
    }
    for (size_t t = 0; t < m; t++)
        byfront[head[fr[idx[t]]]++] = idx[t];
    size_t pos = 0;
    for (size_t f = 0; f < nf; f++) {
        size_t s = head[f] - pos; /* head[f] is now the end of front f */
        eps_net(&c, byfront + pos, s, norm, mind, order + pos);
        pos += s;
    }

    sort_idx(idx + m, tmp, nnan, cmp_id, &c);
    sort_idx(idx + m + nnan, tmp, ninf, cmp_violation, &c);
    memcpy(order + m, idx + m, (nnan + ninf) * sizeof *order);
    if (level) {
        for (size_t t = 0; t < m; t++)
            level[order[t]] = (int)fr[order[t]];
        for (size_t t = m; t < n; t++)
            level[order[t]] = (int)(nf + (t - m));
    }
    free(zs);
    free(zd);
    return PARETO_OK;
}

/* ---- reference point ---------------------------------------------------------------------- */

int pareto_reference(size_t n, size_t k, const double *obj, double *ref, char *err, size_t errlen)
{
    if (k == 0 || !ref || (n > 0 && !obj)) {
        if (err && errlen)
            snprintf(err, errlen, "pareto_reference: %s",
                     k == 0 ? "no objective (k is 0)" : "obj and ref must not be NULL");
        return PARETO_EINVAL;
    }
    for (size_t d = 0; d < k; d++) {
        double lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            double v = obj[i * k + d];
            if (!isfinite(v)) continue;
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
        if (hi < lo) {
            if (err && errlen)
                snprintf(err, errlen,
                         "pareto_reference: objective %zu has no finite value in %zu points: no "
                         "reference point can be chosen; give one",
                         d, n);
            return PARETO_EINVAL;
        }
        /* hi - lo overflows for values near +-DBL_MAX (1e308 and -1e308, which a trial may
         * report): 0.1 * hi - 0.1 * lo then; and a point past DBL_MAX is no reference */
        double margin = isfinite(hi - lo) ? 0.1 * (hi - lo) : 0.1 * hi - 0.1 * lo;
        if (!(margin > 0)) margin = hi != 0 ? 0.1 * fabs(hi) : 1.0;
        ref[d] = hi + margin;
        if (!isfinite(ref[d])) ref[d] = DBL_MAX;
    }
    return PARETO_OK;
}

/* ---- hypervolume -------------------------------------------------------------------------- */

struct rows_ctx {
    const double *r;
    size_t k;
};

static int cmp_rows_lex(size_t a, size_t b, const void *vctx)
{
    const struct rows_ctx *c = vctx;
    const double *x = c->r + a * c->k, *y = c->r + b * c->k;
    for (size_t d = 0; d < c->k; d++)
        if (x[d] != y[d]) return x[d] < y[d] ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Worst (largest) last objective first; the rest as cmp_rows_lex. */
static int cmp_rows_last_desc(size_t a, size_t b, const void *vctx)
{
    const struct rows_ctx *c = vctx;
    double x = c->r[a * c->k + c->k - 1], y = c->r[b * c->k + c->k - 1];
    if (x != y) return x > y ? -1 : 1;
    return cmp_rows_lex(a, b, vctx);
}

/* Sorts the m rows of k values in r by cmp. Returns -1 when out of memory. */
static int sort_rows(double *r, size_t m, size_t k, cmp_fn cmp)
{
    if (m < 2) return 0;
    size_t *ix = malloc(2 * m * sizeof *ix);
    double *copy = malloc(m * k * sizeof *copy);
    if (!ix || !copy) {
        free(ix);
        free(copy);
        return -1;
    }
    for (size_t i = 0; i < m; i++)
        ix[i] = i;
    struct rows_ctx c = {r, k};
    sort_idx(ix, ix + m, m, cmp, &c);
    for (size_t i = 0; i < m; i++)
        memcpy(copy + i * k, r + ix[i] * k, k * sizeof *copy);
    memcpy(r, copy, m * k * sizeof *copy);
    free(ix);
    free(copy);
    return 0;
}

/* Keeps only the rows no other row weakly dominates (duplicates kept once), compacted at the
 * front of r in lexicographic order; returns how many, or SIZE_MAX when out of memory. After
 * the lexicographic sort only an earlier row can weakly dominate a later one. */
static size_t nondominated_rows(double *r, size_t m, size_t k)
{
    if (sort_rows(r, m, k, cmp_rows_lex) < 0) return SIZE_MAX;
    size_t kept = 0;
    for (size_t i = 0; i < m; i++) {
        const double *p = r + i * k;
        int dominated = 0;
        for (size_t j = 0; j < kept && !dominated; j++) {
            const double *q = r + j * k;
            size_t d = 0;
            while (d < k && q[d] <= p[d])
                d++;
            dominated = d == k;
        }
        if (!dominated) {
            if (kept != i) memmove(r + kept * k, p, k * sizeof *r);
            kept++;
        }
    }
    return kept;
}

/* Last objective first (smallest first); the rest as cmp_rows_lex. */
static int cmp_rows_last_asc(size_t a, size_t b, const void *vctx)
{
    const struct rows_ctx *c = vctx;
    double x = c->r[a * c->k + c->k - 1], y = c->r[b * c->k + c->k - 1];
    if (x != y) return x < y ? -1 : 1;
    return cmp_rows_lex(a, b, vctx);
}

/* Three objectives: sweep the third in increasing order, keeping the 2-D front of the points
 * seen so far (x increasing, y decreasing, in an array) and the area it dominates; each
 * slice between two successive third values adds area * thickness (the slicing of HSO,
 * While et al. 2006, with the 2-D area updated per insertion instead of recomputed). A new
 * point p adds, over x from p.x, the band between p.y and the front's current lower edge,
 * which steps down at each front point p removes (they have x >= p.x and y >= p.y). O(n log
 * n) for the sort plus the moves in the array: O(n^2) at worst, a memmove each. */
static double hv3(double *r, size_t m, const double *ref)
{
    if (sort_rows(r, m, 3, cmp_rows_last_asc) < 0) return NAN;
    double *xs = malloc(2 * m * sizeof *xs);
    if (!xs) return NAN;
    double *ys = xs + m, area = 0.0, v = 0.0;
    size_t len = 0;
    for (size_t i = 0; i < m; i++) {
        double px = r[i * 3], py = r[i * 3 + 1];
        /* lo: the first front point with x >= px; those before it have x < px */
        size_t lo = 0, hi = len;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (xs[mid] < px)
                lo = mid + 1;
            else
                hi = mid;
        }
        double top = lo ? ys[lo - 1] : ref[1];
        /* p adds nothing when a front point is no worse in x and y */
        if (top > py && !(lo < len && xs[lo] == px && ys[lo] <= py)) {
            double xc = px;
            size_t j = lo;
            for (; j < len && ys[j] >= py; j++) {
                area += (xs[j] - xc) * (top - py);
                xc = xs[j];
                top = ys[j];
            }
            area += ((j < len ? xs[j] : ref[0]) - xc) * (top - py);
            /* p replaces the front points [lo, j) */
            if (j != lo + 1) {
                memmove(xs + lo + 1, xs + j, (len - j) * sizeof *xs);
                memmove(ys + lo + 1, ys + j, (len - j) * sizeof *ys);
                len = len + 1 - (j - lo);
            }
            xs[lo] = px;
            ys[lo] = py;
        }
        double next = i + 1 < m ? r[(i + 1) * 3 + 2] : ref[2];
        v += area * (next - r[i * 3 + 2]);
    }
    free(xs);
    return v;
}

/* The volume dominated by the m rows of r (k values each, every one strictly below ref) and
 * bounded by ref. r is scratch: reordered. NaN when out of memory.
 * k == 2: a sweep in the first objective. k == 3: hv3's sweep. k >= 4: WFG (While, Bradstreet &
 * Barone, IEEE TEVC 2012) with the rows taken worst-last-objective first, so that every limit set
 * lies in one slice of the last objective and its volume is that slice's thickness times a
 * (k-1)-volume: hv = sum_i (ref_last - p_i,last) * (inclusive(p_i) - hv_{k-1}(limit set of p_i)).
 */
static double hv_rows(double *r, size_t m, size_t k, const double *ref)
{
    if (m == 0) return 0.0;
    if (k == 1) {
        double best = r[0];
        for (size_t i = 1; i < m; i++)
            if (r[i] < best) best = r[i];
        return ref[0] - best;
    }
    if (k == 2) {
        /* In increasing x (then y), a point adds the band between its y and the lowest y
         * seen so far, from its x to ref: earlier points have x no larger, so they already
         * cover everything above that lowest y. */
        if (sort_rows(r, m, 2, cmp_rows_lex) < 0) return NAN;
        double v = 0.0, ymin = ref[1];
        for (size_t i = 0; i < m; i++)
            if (r[i * 2 + 1] < ymin) {
                v += (ref[0] - r[i * 2]) * (ymin - r[i * 2 + 1]);
                ymin = r[i * 2 + 1];
            }
        return v;
    }
    if (k == 3) return hv3(r, m, ref);
    if (sort_rows(r, m, k, cmp_rows_last_desc) < 0) return NAN;
    size_t kk = k - 1;
    double *lim = m > 1 ? malloc((m - 1) * kk * sizeof *lim) : NULL;
    if (m > 1 && !lim) return NAN;
    double v = 0.0;
    for (size_t i = 0; i < m; i++) {
        const double *p = r + i * k;
        double incl = 1.0;
        for (size_t d = 0; d < kk; d++)
            incl *= ref[d] - p[d];
        size_t nl = 0;
        for (size_t j = i + 1; j < m; j++, nl++)
            for (size_t d = 0; d < kk; d++) {
                double q = r[j * k + d];
                lim[nl * kk + d] = q > p[d] ? q : p[d];
            }
        /* The 2-D sweep ignores dominated rows by itself; above, filtering them first keeps
         * WFG's recursion small. */
        if (kk > 2 && nl > 1) {
            nl = nondominated_rows(lim, nl, kk);
            if (nl == SIZE_MAX) {
                free(lim);
                return NAN;
            }
        }
        double ex = hv_rows(lim, nl, kk, ref);
        if (isnan(ex)) {
            free(lim);
            return NAN;
        }
        v += (ref[k - 1] - p[k - 1]) * (incl - ex);
    }
    free(lim);
    return v;
}

double pareto_hypervolume(size_t n, size_t k, const double *obj, const double *violation,
                          const double *ref)
{
    if (k == 0 || !ref || (n > 0 && !obj)) return NAN;
    for (size_t d = 0; d < k; d++)
        if (!isfinite(ref[d])) return NAN;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (violation && !(violation[i] <= 0)) continue;
        const double *p = obj + i * k;
        size_t d = 0;
        while (d < k && isfinite(p[d]) && p[d] < ref[d])
            d++;
        m += d == k;
    }
    if (m == 0) return 0.0;
    if (m > SIZE_MAX / sizeof(double) / k) return NAN;
    double *r = malloc(m * k * sizeof *r);
    if (!r) return NAN;
    m = 0;
    for (size_t i = 0; i < n; i++) {
        if (violation && !(violation[i] <= 0)) continue;
        const double *p = obj + i * k;
        size_t d = 0;
        while (d < k && isfinite(p[d]) && p[d] < ref[d])
            d++;
        if (d == k) memcpy(r + m++ * k, p, k * sizeof *r);
    }
    if (k > 2) m = nondominated_rows(r, m, k);
    double v = m == SIZE_MAX ? NAN : hv_rows(r, m, k, ref);
    free(r);
    return v;
}
