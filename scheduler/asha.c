/* ASHA, asynchronous successive halving: the one place where the early-stopping rule
 * lives. It follows Ray Tune's AsyncHyperBandScheduler (ray/tune/schedulers/
 * async_hyperband.py; Li et al., "A System for Massively Parallel Hyperparameter
 * Tuning", arXiv:1810.05934). Not for: launching or killing trials (loop.c).
 *
 * The rule, as Ray states it and as implemented below:
 *  - Brackets s = 0..brackets-1. Bracket s has
 *      MAX_RUNGS = int(log(max_t / grace_period) / log(rf) - s + 1)
 *    rungs (none if that is <= 0) with milestones grace_period * rf^(k + s) for
 *    k = 0..MAX_RUNGS-1, kept in DESCENDING order (Ray's _Bracket.__init__), so the
 *    first rung whose milestone a result has reached is the highest one it passed.
 *  - on_result(trial, time, value): the reward is value * (+1 for mode max, -1 for
 *    mode min) so that higher is always better (Ray's _metric_op).
 *      if time >= max_t: COMPLETE (Ray: STOP) without recording anything.
 *      else, in the trial's bracket, walk the rungs from the highest milestone down
 *      (Ray's _Bracket.on_result):
 *        time >= milestone and the trial is recorded there: break, CONTINUE (the
 *            decision to go on from that rung was already taken);
 *        time < milestone (or recorded): next rung;
 *        otherwise: cutoff = the (1 - 1/rf) * 100 percentile, numpy's default linear
 *            interpolation, of the rewards recorded at that rung (none when nothing
 *            is recorded: Ray's _Bracket.cutoff); STOP if a cutoff exists and
 *            reward < cutoff (strictly worse: a tie continues); record the reward at
 *            the rung either way; break.
 *    So the first trial at a rung always continues, one recorded value is enough for
 *    a cutoff, and a result that jumps past several milestones is judged once, at the
 *    highest milestone it passed.
 *  - With several brackets each new trial joins bracket i with probability
 *    softmax(rung counts)_i, i.e. e^(size_i - max size) normalized (Ray's on_trial_add),
 *    drawn from a splitmix64 stream seeded by opts.seed so that a run is reproducible.
 *
 *  - stop_last_trials (Ray's option, default true): with false (opts.keep_last_trials),
 *    a result at or past max_t does not complete the trial; it is judged at the rungs
 *    like any other, and the trial trains on until it ends by itself.
 *
 * Where we differ from Ray, on purpose (docs/asha.md says the same):
 *  - A NaN result at a milestone stops its trial. Ray's np.nanpercentile ignores NaN and
 *    `nan < cutoff` is false, so Ray lets a diverged trial run on. Like Ray, the NaN is
 *    left out of the rung's values, so it never moves the cutoff other trials meet (it
 *    once was recorded as -infinity, which dragged the cutoff down to -inf and let every
 *    later trial pass that rung). This is the one exception to "Ray's rule, exactly".
 *  - The "already recorded: break" test applies always (in Ray only with
 *    stop_last_trials=False); with Ray's default a trial recorded at rung 9 after a
 *    jump from time 1 to 10 would later be judged again at rung 3.
 *  - Ray also feeds the final result to the bracket in on_trial_complete; our
 *    on_trial_complete carries no result, so a trial's last result is judged once.
 *  - The linear percentile is numpy's (>= 1.22) _lerp; where it would give NaN because
 *    of an infinite neighbour we take the limit (-inf below, +inf above).
 *
 * The promotion variant (opts.promotion; Li et al., MLSys 2020, algorithm 2; Syne Tune's
 * type="promotion"): a result that reaches a rung (not yet recorded there, below max_t)
 * is recorded and the trial PAUSEs there. When a slice frees, choose_next promotes the
 * paused trial at the highest rung (then the best reward) that is among the top
 * floor(n / rf) of the n values recorded at its rung; none: a new trial. A trial is
 * promoted from a rung once: it leaves the rung's paused set when it resumes and pauses
 * next at a higher rung. NaN at a rung stops it, as in the stopping variant.
 * "eager_promotion" (opts.promotion == SPACE_ASHA_EAGER) is the same but for a rung that
 * holds fewer than rf values: its best is promotable (top 1 instead of floor(n/rf) = 0).
 * The paper's rule cannot promote anything before a rung holds rf results, so the first
 * trial reaches max_t only after about rf^(rungs) base-rung results; eagerly the first
 * trials go on at once, as under the stopping variant, and the paper's rule takes over as
 * the rungs fill (measured: bench/search/results/, docs/pbt.md).
 *
 * Several objectives, or constraints (opts.nobjectives > 1 or opts.constrained; results
 * come as points through result_point): MO-ASHA's rung rule (Schmucker et al., arXiv
 * 2106.12639; Syne Tune's MOASHA). A rung keeps its points instead of rewards, ordered by
 * pareto_rank; the stopping variant continues the top max(1, ceil(n/rf)) of n, the
 * promotion variant promotes from the top floor(n/rf). asha_result_point says the details;
 * docs/multiobjective.md "Early stopping" says them to users. One objective without
 * constraints never reaches that code: the rule above, exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

typedef struct sched__asha sched__asha_t;

/* Limits that keep a mistyped option from allocating gigabytes. */
#define ASHA_MAX_BRACKETS 64
#define ASHA_MAX_RUNGS 1024

/* A rung's recorded rewards, split at the cutoff's order statistic: `low` is a max-heap of
 * the smallest floor((n-1) q) + 1 of them and `high` a min-heap of the rest, so the two
 * values the percentile interpolates between are the two heap tops. Recording is
 * O(log n) and a cutoff O(1); a sorted array (memmove per value) made a rung of a million
 * values cost hours. */
struct rung {
    double milestone;
    double *low, *high;
    size_t nlow, nhigh, caplow, caphigh;
    size_t n;
    double *vals; /* promotion variant: every reward recorded here, for ranks */
    size_t nvals, capvals;
    /* Ranked rungs (several objectives or constraints): every point recorded here, in
     * arrival order: k objectives each (pobj), its violation and its trial's id; after
     * each point joins, the rung is ranked again and ppos/plevel give each point's
     * position (0 best) and pareto_rank level. */
    double *pobj, *pviol;
    int64_t *pids;
    size_t *ppos;
    int *plevel;
    size_t npts, cappts;
};

struct bracket {
    int nrungs;
    struct rung *rungs; /* descending milestones, as in Ray */
};

struct atrial {
    int bracket;
    int done;
    uint64_t rec;       /* bit i set: recorded at rungs[i] (brackets of <= 64 rungs) */
    uint64_t *rec_more; /* the same for brackets of more rungs */
    int paused_at;      /* promotion: index of the rung it paused at, -1 if none */
    double paused_reward;
    size_t paused_pt;    /* ranked promotion: its point's index in that rung */
    double paused_value; /* and its first objective as reported */
};

struct sched__asha {
    double max_t;
    int keep_last_trials; /* Ray's stop_last_trials=False */
    int promotion;        /* the promotion variant: pause at each rung */
    int eager;            /* "eager_promotion": a rung short of rf results promotes its best */
    double rf;
    double sign; /* +1 mode max, -1 mode min: reward = sign * value */
    double q;    /* the cutoff's quantile as numpy sees it: ((1 - 1/rf) * 100) / 100 */
    int nbrackets;
    struct bracket *brackets;
    double *cdf; /* bracket choice: cumulative softmax weights */
    uint64_t rng;
    sched__idmap_t ids;
    struct atrial *trials;
    size_t ntrials, cap;
    /* A completed trial is forgotten: its slot goes back (free_slots) and its id leaves
     * the map, so that the policy holds the live trials and the rungs' values, not every
     * trial it has seen; a bit per trial id (done_bits) still says it sends no more. */
    uint32_t *free_slots;
    size_t nfree, capfree;
    uint64_t *done_bits;
    size_t ndone_words;
    /* Ranked rungs: k objectives per point; order/level: pareto_rank's scratch, caporder
     * long (the largest rung's points). */
    int ranked;
    size_t k;
    size_t *order;
    int *level;
    size_t caporder;
};

#define ASHA_DONE_IDS ((int64_t)1 << 31) /* ids a done bit is kept for; others keep a slot */

static int done_bit(const struct sched__asha *a, int64_t trial)
{
    if (trial < 0 || trial >= ASHA_DONE_IDS) return 0;
    size_t w = (size_t)trial / 64;
    return w < a->ndone_words && (a->done_bits[w] >> (trial % 64) & 1);
}

static int set_done_bit(struct sched__asha *a, int64_t trial)
{
    if (trial < 0 || trial >= ASHA_DONE_IDS) return -1;
    size_t w = (size_t)trial / 64;
    if (w >= a->ndone_words) {
        size_t n = a->ndone_words ? a->ndone_words : 16;
        while (n <= w)
            n *= 2;
        uint64_t *b = realloc(a->done_bits, n * sizeof *b);
        if (!b) return -1;
        memset(b + a->ndone_words, 0, (n - a->ndone_words) * sizeof *b);
        a->done_bits = b;
        a->ndone_words = n;
    }
    a->done_bits[w] |= (uint64_t)1 << (trial % 64);
    return 0;
}

/* numpy.percentile(v, q * 100) for the default method "linear" (numpy >= 1.22,
 * lib/function_base.py: virtual index (n-1)*q, then _lerp, which computes from the upper
 * end when t >= 0.5), where a = v[floor] and b = v[floor + 1] of the sorted values. */
static double percentile_lerp(double a, double b, double t)
{
    if (t == 0 || a == b) return a;
    /* numpy gives NaN next to an infinity (inf - inf); the limit is what is meant. */
    if (a == -INFINITY) return a;
    if (b == INFINITY) return b;
    double d = b - a;
    return t >= 0.5 ? b - d * (1 - t) : a + d * t;
}

/* The index floor((n-1) q) of the lower value, computed as numpy does. */
static size_t lower_index(size_t n, double q)
{
    double vi = (double)(n - 1) * q;
    if (vi >= (double)(n - 1)) return n - 1;
    return (size_t)floor(vi);
}

static double rung_cutoff(const struct rung *r, double q)
{
    double vi = (double)(r->n - 1) * q;
    if (vi >= (double)(r->n - 1)) return r->low[0]; /* the largest: high is empty */
    return percentile_lerp(r->low[0], r->high[0], vi - floor(vi));
}

/* Binary heaps of doubles: sign +1 keeps the largest on top, -1 the smallest. */
static void heap_up(double *h, size_t i, double sign)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!(sign * h[i] > sign * h[p])) break;
        double x = h[i];
        h[i] = h[p];
        h[p] = x;
        i = p;
    }
}

static void heap_down(double *h, size_t n, double sign)
{
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && sign * h[l] > sign * h[m]) m = l;
        if (r < n && sign * h[r] > sign * h[m]) m = r;
        if (m == i) return;
        double x = h[i];
        h[i] = h[m];
        h[m] = x;
        i = m;
    }
}

/* Room for one more value in heap *h. */
static int heap_reserve(double **h, size_t n, size_t *cap)
{
    if (n < *cap) return SCHED_OK;
    size_t c = *cap ? *cap * 2 : 16;
    double *v = realloc(*h, c * sizeof *v);
    if (!v) return SCHED_ENOMEM;
    *h = v;
    *cap = c;
    return SCHED_OK;
}

static void heap_push(double *h, size_t *n, double x, double sign)
{
    h[(*n)++] = x;
    heap_up(h, *n - 1, sign);
}

static double heap_pop(double *h, size_t *n, double sign)
{
    double top = h[0];
    h[0] = h[--*n];
    heap_down(h, *n, sign);
    return top;
}

static int rung_insert(struct rung *r, double x, double q)
{
    /* Room in both heaps first, so that no rebalancing step can fail halfway. */
    if (heap_reserve(&r->low, r->nlow, &r->caplow) != 0 ||
        heap_reserve(&r->high, r->nhigh, &r->caphigh) != 0)
        return SCHED_ENOMEM;
    if (r->nlow > 0 && x > r->low[0])
        heap_push(r->high, &r->nhigh, x, -1);
    else
        heap_push(r->low, &r->nlow, x, 1);
    r->n++;
    size_t want = lower_index(r->n, q) + 1;
    while (r->nlow > want)
        heap_push(r->high, &r->nhigh, heap_pop(r->low, &r->nlow, 1), -1);
    while (r->nlow < want)
        heap_push(r->low, &r->nlow, heap_pop(r->high, &r->nhigh, -1), 1);
    return SCHED_OK;
}

static uint64_t *rec_words(struct atrial *t, int nrungs)
{
    return nrungs <= 64 ? &t->rec : t->rec_more;
}

static void asha_free(void *self);

static int asha_new(const sched_opts_t *opts, void **out, unsigned *caps, char *err, size_t errlen)
{
    const space_sched_opts_t *o = &opts->sched;
    /* The checks Ray asserts in AsyncHyperBandScheduler.__init__, plus finiteness. */
    if (!(o->max_t > 0) || !isfinite(o->max_t)) {
        snprintf(err, errlen, "asha: max_t must be a number > 0 (got %g)", o->max_t);
        return SCHED_EINVAL;
    }
    if (!(o->grace_period > 0) || !isfinite(o->grace_period)) {
        snprintf(err, errlen, "asha: grace_period must be a number > 0 (got %g)", o->grace_period);
        return SCHED_EINVAL;
    }
    if (o->grace_period > o->max_t) {
        snprintf(err, errlen, "asha: grace_period %g must not be larger than max_t %g",
                 o->grace_period, o->max_t);
        return SCHED_EINVAL;
    }
    if (!(o->reduction_factor > 1) || !isfinite(o->reduction_factor)) {
        snprintf(err, errlen, "asha: reduction_factor must be a number > 1 (got %g)",
                 o->reduction_factor);
        return SCHED_EINVAL;
    }
    if (o->brackets < 1 || o->brackets > ASHA_MAX_BRACKETS) {
        snprintf(err, errlen, "asha: brackets must be between 1 and %d (got %d)", ASHA_MAX_BRACKETS,
                 o->brackets);
        return SCHED_EINVAL;
    }
    double levels = log(o->max_t / o->grace_period) / log(o->reduction_factor);
    if (levels + 1 > ASHA_MAX_RUNGS) {
        snprintf(err, errlen,
                 "asha: reduction_factor %g gives %.0f rungs between grace_period %g and "
                 "max_t %g; at most %d are supported",
                 o->reduction_factor, floor(levels + 1), o->grace_period, o->max_t, ASHA_MAX_RUNGS);
        return SCHED_EINVAL;
    }

    sched__asha_t *a = calloc(1, sizeof *a);
    if (!a) goto nomem;
    a->max_t = o->max_t;
    a->keep_last_trials = !o->stop_last_trials;
    a->promotion = o->promotion != SPACE_ASHA_STOPPING;
    a->eager = o->promotion == SPACE_ASHA_EAGER;
    a->rf = o->reduction_factor;
    a->sign = opts->mode_max ? 1.0 : -1.0;
    /* The same float steps as Ray's (1 - 1/rf) * 100 and numpy's q / 100. */
    a->q = ((1.0 - 1.0 / o->reduction_factor) * 100.0) / 100.0;
    a->rng = opts->seed;
    a->ranked = sched__ranked(opts);
    a->k = opts->nobjectives > 0 ? opts->nobjectives : 1;
    a->nbrackets = o->brackets;
    a->brackets = calloc((size_t)o->brackets, sizeof *a->brackets);
    a->cdf = calloc((size_t)o->brackets, sizeof *a->cdf);
    if (!a->brackets || !a->cdf) goto nomem;
    int maxsize = 0;
    for (int s = 0; s < o->brackets; s++) {
        struct bracket *b = &a->brackets[s];
        double n = levels - s + 1; /* Ray: int(np.log(max_t / min_t) / np.log(rf) - s + 1) */
        b->nrungs = n > 0 ? (int)n : 0;
        if (b->nrungs > maxsize) maxsize = b->nrungs;
        if (b->nrungs == 0) continue;
        b->rungs = calloc((size_t)b->nrungs, sizeof *b->rungs);
        if (!b->rungs) goto nomem;
        for (int k = 0; k < b->nrungs; k++) /* descending: index 0 is the highest */
            b->rungs[b->nrungs - 1 - k].milestone =
                o->grace_period * pow(o->reduction_factor, k + s);
    }
    /* Ray's softmax over rung counts: probs = e^(sizes - max), normalized, then numpy's
     * choice takes the cumulative sum and divides by its last entry. */
    double total = 0;
    for (int s = 0; s < a->nbrackets; s++) {
        a->cdf[s] = exp((double)(a->brackets[s].nrungs - maxsize));
        total += a->cdf[s];
    }
    double acc = 0;
    for (int s = 0; s < a->nbrackets; s++) {
        acc += a->cdf[s] / total;
        a->cdf[s] = acc;
    }
    for (int s = 0; s < a->nbrackets; s++)
        a->cdf[s] /= acc;
    /* the promotion variant pauses at each rung and resumes through choose_next */
    *caps = SCHED_CAP_TIME | (a->promotion ? SCHED_CAP_PAUSE : 0);
    *out = a;
    return SCHED_OK;
nomem:
    asha_free(a);
    snprintf(err, errlen, "asha: out of memory");
    return SCHED_ENOMEM;
}

static void asha_free(void *self)
{
    sched__asha_t *a = self;
    if (!a) return;
    for (int s = 0; a->brackets && s < a->nbrackets; s++) {
        for (int i = 0; i < a->brackets[s].nrungs; i++) {
            struct rung *r = &a->brackets[s].rungs[i];
            free(r->low), free(r->high), free(r->vals);
            free(r->pobj), free(r->pviol), free(r->pids), free(r->ppos), free(r->plevel);
        }
        free(a->brackets[s].rungs);
    }
    for (size_t i = 0; i < a->ntrials; i++)
        free(a->trials[i].rec_more);
    free(a->free_slots);
    free(a->done_bits);
    free(a->order);
    free(a->level);
    free(a->brackets);
    free(a->cdf);
    free(a->trials);
    sched__idmap_free(&a->ids);
    free(a);
}

/* A new trial draws its bracket (numpy's choice: the first bracket whose cumulative
 * weight exceeds a uniform draw), in a slot a completed trial gave back if there is one;
 * *at gets the slot. */
static int add_at(sched__asha_t *a, int64_t trial, uint32_t *at)
{
    if (sched__idmap_get(&a->ids, trial) != SCHED__NOIDX || done_bit(a, trial)) return SCHED_EINVAL;
    size_t ix;
    if (a->nfree > 0) {
        ix = a->free_slots[a->nfree - 1];
    } else {
        if (a->ntrials == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 64;
            struct atrial *t = realloc(a->trials, cap * sizeof *t);
            if (!t) return SCHED_ENOMEM;
            a->trials = t;
            a->cap = cap;
        }
        ix = a->ntrials;
    }
    double u = sched__uniform(&a->rng);
    int s = 0;
    while (s < a->nbrackets - 1 && !(a->cdf[s] > u))
        s++;
    struct atrial *t = &a->trials[ix];
    memset(t, 0, sizeof *t);
    t->bracket = s;
    t->paused_at = -1;
    int nr = a->brackets[s].nrungs;
    if (nr > 64 && !(t->rec_more = calloc(((size_t)nr + 63) / 64, sizeof *t->rec_more)))
        return SCHED_ENOMEM;
    if (sched__idmap_put(&a->ids, trial, (uint32_t)ix) != 0) {
        free(t->rec_more);
        t->rec_more = NULL;
        t->done = 1;
        return SCHED_ENOMEM;
    }
    if (ix == a->ntrials)
        a->ntrials++;
    else
        a->nfree--;
    *at = (uint32_t)ix;
    return SCHED_OK;
}

static int asha_add(void *self, int64_t trial)
{
    sched__asha_t *a = self;
    uint32_t ix;
    return add_at(a, trial, &ix);
}

/* Where a result of `trial` at `time` is judged: its rung (index *at in its bracket's
 * descending rungs), with out's bracket, rung and milestone filled and out->judged set; or
 * NULL when it is not judged (a finished trial, below the first milestone, already
 * recorded at that rung: Ray's break) or COMPLETEs at max_t (out says so). */
static struct rung *reach(sched__asha_t *a, int64_t trial, double time, sched_decision_t *out,
                          struct atrial **tp, int *at)
{
    uint32_t ix = sched__idmap_get(&a->ids, trial);
    if (ix == SCHED__NOIDX) {
        if (done_bit(a, trial)) return NULL; /* it said it would send no more */
        /* not announced: join now rather than lose the result */
        if (add_at(a, trial, &ix) != 0) return NULL;
    }
    struct atrial *t = &a->trials[ix];
    out->bracket = t->bracket;
    if (t->done) return NULL; /* it said it would send no more */
    if (time >= a->max_t && !a->keep_last_trials) {
        out->action = SCHED_COMPLETE;
        out->judged = 1;
        return NULL;
    }
    struct bracket *b = &a->brackets[t->bracket];
    /* The first (highest) rung whose milestone the result reached. Milestones are
     * descending, so that is a binary search; a NaN time reaches none. */
    int lo = 0, hi = b->nrungs;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (b->rungs[mid].milestone <= time)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo == b->nrungs) return NULL; /* below the first milestone */
    uint64_t *w = rec_words(t, b->nrungs);
    if (w[lo / 64] & (1ull << (lo % 64))) return NULL; /* recorded there: already judged */
    struct rung *r = &b->rungs[lo];
    out->judged = 1;
    out->rung = b->nrungs - 1 - lo;
    out->milestone = r->milestone;
    *tp = t;
    *at = lo;
    return r;
}

static void asha_result(void *self, int64_t trial, double time, double value, sched_decision_t *out)
{
    sched__asha_t *a = self;
    sched__decision_none(out, value);
    struct atrial *t;
    int lo;
    struct rung *r = reach(a, trial, time, out, &t, &lo);
    if (!r) return;
    uint64_t *w = rec_words(t, a->brackets[t->bracket].nrungs);
    uint64_t bit = 1ull << (lo % 64);

    /* The trial is judged at this rung: the common case ends above. */
    double cutoff = r->n > 0 ? rung_cutoff(r, a->q) : NAN; /* in rewards */
    if (r->n > 0) out->cutoff = a->sign * cutoff;
    if (isnan(value)) {
        /* A diverged trial stops here, and its NaN stays out of the rung's values, as
         * Ray's nanpercentile leaves it out of the cutoff. */
        out->action = SCHED_STOP;
        w[lo / 64] |= bit;
        return;
    }
    double reward = a->sign * value;
    if (a->promotion) {
        /* Recorded, then paused until choose_next finds it in its rung's top 1/rf. */
        if (r->nvals == r->capvals) {
            size_t cap = r->capvals ? r->capvals * 2 : 16;
            double *v = realloc(r->vals, cap * sizeof *v);
            if (!v) return; /* without memory it runs on rather than wait unranked */
            r->vals = v;
            r->capvals = cap;
        }
        if (rung_insert(r, reward, a->q) != 0) return;
        /* kept in descending order: the bar of the top k is vals[k - 1]. An insert moves
         * the smaller values (memmove): fine for the rungs a promotion run fills (a rung of
         * 1e5 values moves under a millisecond); not for millions. */
        size_t lo2 = 0, hi2 = r->nvals;
        while (lo2 < hi2) {
            size_t mid = lo2 + (hi2 - lo2) / 2;
            if (r->vals[mid] >= reward)
                lo2 = mid + 1;
            else
                hi2 = mid;
        }
        memmove(r->vals + lo2 + 1, r->vals + lo2, (r->nvals - lo2) * sizeof *r->vals);
        r->vals[lo2] = reward;
        r->nvals++;
        w[lo / 64] |= bit;
        t->paused_at = lo;
        t->paused_reward = reward;
        out->action = SCHED_PAUSE;
        return;
    }
    if (r->n > 0 && reward < cutoff) out->action = SCHED_STOP;
    if (rung_insert(r, reward, a->q) == 0) w[lo / 64] |= bit;
}

/* ---- ranked rungs (several objectives or constraints) ------------------------------ */
/* Room for one more point at r (and for pareto_rank's scratch over all of them). */
static int rung_reserve_point(sched__asha_t *a, struct rung *r)
{
    if (r->npts == r->cappts) {
        size_t cap = r->cappts ? r->cappts * 2 : 16;
        double *o = realloc(r->pobj, cap * a->k * sizeof *o);
        if (!o) return SCHED_ENOMEM;
        r->pobj = o;
        double *v = realloc(r->pviol, cap * sizeof *v);
        if (!v) return SCHED_ENOMEM;
        r->pviol = v;
        int64_t *id = realloc(r->pids, cap * sizeof *id);
        if (!id) return SCHED_ENOMEM;
        r->pids = id;
        size_t *pos = realloc(r->ppos, cap * sizeof *pos);
        if (!pos) return SCHED_ENOMEM;
        r->ppos = pos;
        int *lv = realloc(r->plevel, cap * sizeof *lv);
        if (!lv) return SCHED_ENOMEM;
        r->plevel = lv;
        r->cappts = cap;
    }
    if (r->npts + 1 > a->caporder) {
        size_t cap = a->caporder ? a->caporder * 2 : 16;
        while (cap < r->npts + 1)
            cap *= 2;
        size_t *o = realloc(a->order, cap * sizeof *o);
        if (!o) return SCHED_ENOMEM;
        a->order = o;
        int *lv = realloc(a->level, cap * sizeof *lv);
        if (!lv) return SCHED_ENOMEM;
        a->level = lv;
        a->caporder = cap;
    }
    return SCHED_OK;
}

/* The point joins rung r, which is ranked again: ppos and plevel of every point. */
static int rung_add_point(sched__asha_t *a, struct rung *r, int64_t trial, const sched_point_t *pt)
{
    if (rung_reserve_point(a, r) != 0) return SCHED_ENOMEM;
    size_t i = r->npts;
    memcpy(r->pobj + i * a->k, pt->obj, a->k * sizeof *pt->obj);
    r->pviol[i] = pt->violation;
    r->pids[i] = trial;
    if (sched__rank(i + 1, a->k, r->pobj, r->pviol, r->pids, a->order, a->level) != 0)
        return SCHED_ENOMEM;
    r->npts++;
    for (size_t j = 0; j < r->npts; j++) {
        r->ppos[a->order[j]] = j;
        r->plevel[j] = a->level[j];
    }
    return SCHED_OK;
}

static int has_nan(const double *v, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (isnan(v[i])) return 1;
    return 0;
}

/* How many of a rung's n values the promotion variant promotes from: floor(n / rf), or,
 * eagerly, at least the best one. */
static size_t promote_top(const sched__asha_t *a, size_t n)
{
    size_t k = (size_t)floor((double)n / a->rf);
    return a->eager && k == 0 && n > 0 ? 1 : k;
}

/* MO-ASHA's rung rule (Schmucker et al., "Multi-objective Multi-fidelity Hyperparameter
 * Optimization with Application to Fairness", arXiv:2106.12639; Syne Tune's MOASHA): a
 * result that reaches a rung adds its point to the rung's points, which are ordered by
 * pareto_rank (feasible first, then non-dominated sorting, ties by the pareto module's
 * deterministic rule). Stopping variant: the trial continues when its position is within
 * the top max(1, ceil(n / rf)) of the n points, its own included, else it STOPs. With one
 * objective this keeps about the share Ray's (1 - 1/rf) percentile cutoff keeps (the first
 * point continues; the second only if it is the better one); Syne Tune's MOASHA keeps
 * position <= n / rf, one more at most. Promotion variant: the trial PAUSEs and
 * choose_next promotes it once it is among the top floor(n / rf) (Syne Tune's promotion
 * rule, as the single-metric variant). A point with a NaN objective stops its trial and
 * stays out of the rung, as a NaN does in the single-metric rule above: ranked last, it
 * could only lengthen the list the others are cut from. */
static void asha_result_point(void *self, int64_t trial, double time, const sched_point_t *pt,
                              sched_decision_t *out)
{
    sched__asha_t *a = self;
    sched__decision_none(out, pt->value);
    struct atrial *t;
    int lo;
    struct rung *r = reach(a, trial, time, out, &t, &lo);
    if (!r) return;
    uint64_t *w = rec_words(t, a->brackets[t->bracket].nrungs);
    uint64_t bit = 1ull << (lo % 64);
    out->violation = pt->violation;
    if (has_nan(pt->obj, a->k)) {
        out->action = SCHED_STOP;
        out->front = -1;
        w[lo / 64] |= bit;
        return;
    }
    /* without memory it runs on rather than be judged by a partial rung */
    if (rung_add_point(a, r, trial, pt) != 0) return;
    w[lo / 64] |= bit;
    size_t i = r->npts - 1, n = r->npts;
    out->place = r->ppos[i] + 1;
    out->among = n;
    out->front = r->plevel[i];
    if (a->promotion) {
        out->top = promote_top(a, n);
        t->paused_at = lo;
        t->paused_pt = i;
        t->paused_value = pt->value;
        out->action = SCHED_PAUSE;
        return;
    }
    double top = ceil((double)n / a->rf);
    out->top = top < 1 ? 1 : (size_t)top;
    if (r->ppos[i] >= out->top) out->action = SCHED_STOP;
}

/* The promotion variant's rule on ranked rungs: of the paused trials among the top
 * floor(n / rf) of their rung's n points, the one at the highest rung, then the best
 * placed (position over n), then the earliest paused. */
static long choose_ranked(sched__asha_t *a, const int64_t *paused, size_t n, sched_decision_t *why)
{
    long best = -1;
    double best_ms = -INFINITY;
    size_t best_pos = 0, best_n = 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t ix = sched__idmap_get(&a->ids, paused[i]);
        if (ix == SCHED__NOIDX) continue;
        const struct atrial *t = &a->trials[ix];
        if (t->done || t->paused_at < 0) continue;
        const struct rung *r = &a->brackets[t->bracket].rungs[t->paused_at];
        size_t k = promote_top(a, r->npts), pos = r->ppos[t->paused_pt];
        if (pos >= k) continue;
        /* pos / npts < best_pos / best_n, in integers */
        if (r->milestone > best_ms ||
            (r->milestone == best_ms && pos * best_n < best_pos * r->npts)) {
            best = (long)i;
            best_ms = r->milestone;
            best_pos = pos;
            best_n = r->npts;
            why->judged = 1;
            why->action = SCHED_CONTINUE;
            why->bracket = t->bracket;
            why->rung = a->brackets[t->bracket].nrungs - 1 - t->paused_at;
            why->milestone = r->milestone;
            why->value = t->paused_value;
            why->cutoff = NAN;
            why->place = pos + 1;
            why->among = r->npts;
            why->top = k;
            why->violation = r->pviol[t->paused_pt];
            why->front = r->plevel[t->paused_pt];
        }
    }
    return best;
}

/* The promotion variant's rule (see the top of the file). Pure: the trial leaves its
 * rung's paused set by resuming (the loop drops it from its list), so a slice that could
 * not be had changes nothing. O(paused trials) per call. */
static long asha_choose_next(void *self, const int64_t *paused, size_t n, size_t pending,
                             sched_decision_t *why)
{
    sched__asha_t *a = self;
    if (!a->promotion) return n > 0 && pending == 0 ? 0 : -1;
    if (a->ranked) return choose_ranked(a, paused, n, why);
    long best = -1;
    double best_ms = -INFINITY, best_reward = -INFINITY;
    const struct rung *best_r = NULL;
    size_t best_k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t ix = sched__idmap_get(&a->ids, paused[i]);
        if (ix == SCHED__NOIDX) continue;
        const struct atrial *t = &a->trials[ix];
        if (t->done || t->paused_at < 0) continue;
        const struct rung *r = &a->brackets[t->bracket].rungs[t->paused_at];
        size_t k = promote_top(a, r->nvals);
        /* fewer than k values above it <=> at least the k-th best */
        if (k == 0 || t->paused_reward < r->vals[k - 1]) continue;
        if (r->milestone > best_ms || (r->milestone == best_ms && t->paused_reward > best_reward)) {
            best = (long)i;
            best_ms = r->milestone;
            best_reward = t->paused_reward;
            best_r = r;
            best_k = k;
            why->judged = 1;
            why->bracket = t->bracket;
            why->rung = a->brackets[t->bracket].nrungs - 1 - t->paused_at;
            why->milestone = r->milestone;
        }
    }
    if (best >= 0) {
        double kth = best_r->vals[best_k - 1]; /* the bar it cleared */
        why->action = SCHED_CONTINUE;
        why->value = a->sign * best_reward;
        /* an eager promotion from a rung short of rf values cleared no bar: the best of it */
        why->cutoff = (double)best_r->nvals < a->rf ? NAN : a->sign * kth;
    }
    return best;
}

static void asha_complete(void *self, int64_t trial)
{
    sched__asha_t *a = self;
    uint32_t ix = sched__idmap_get(&a->ids, trial);
    if (ix == SCHED__NOIDX) return;
    struct atrial *t = &a->trials[ix];
    t->done = 1;
    t->paused_at = -1;
    /* forgotten, where its id can be remembered by a bit and its slot can go back */
    if (a->nfree == a->capfree) {
        size_t cap = a->capfree ? a->capfree * 2 : 64;
        uint32_t *f = realloc(a->free_slots, cap * sizeof *f);
        if (!f) return;
        a->free_slots = f;
        a->capfree = cap;
    }
    if (set_done_bit(a, trial) != 0) return;
    free(t->rec_more);
    t->rec_more = NULL;
    sched__idmap_del(&a->ids, trial);
    a->free_slots[a->nfree++] = ix;
}

/* Rungs whose milestone is >= max_t are left out: a result that reaches them completes
 * the trial first, so they never hold a value (Ray keeps them; they only count in the
 * bracket's softmax weight). With stop_last_trials false they are judged, and shown. */
static size_t asha_rungs(const void *self, sched_rung_info_t *out, size_t max)
{
    const sched__asha_t *a = self;
    size_t n = 0;
    for (int s = 0; s < a->nbrackets; s++) {
        const struct bracket *b = &a->brackets[s];
        for (int i = b->nrungs - 1; i >= 0; i--) {
            const struct rung *r = &b->rungs[i];
            if (r->milestone >= a->max_t && !a->keep_last_trials) continue;
            if (n < max) {
                sched_rung_info_t *o = &out[n];
                o->bracket = s;
                o->rung = b->nrungs - 1 - i;
                o->milestone = r->milestone;
                o->recorded = a->ranked ? r->npts : r->n;
                o->cutoff = r->n ? a->sign * rung_cutoff(r, a->q) : NAN; /* none when ranked */
            }
            n++;
        }
    }
    return n;
}

/* ---- words -------------------------------------------------------------------------- */
/* The wording of ASHA's decisions, without printf for the common ones (printf's float
 * formatting was most of a decision's cost outside SQLite): put_* append at p and return
 * the new end; the caller's buffer has room (the texts are short and bounded). */
static char *put_str(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

static char *put_int(char *p, long long v)
{
    char d[24];
    int k = 0;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do {
        d[k++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) *p++ = '-';
    while (k)
        *p++ = d[--k];
    return p;
}

/* v as "%g" prints it: a whole number of fewer than 7 digits (every milestone here) as
 * its digits, which is exactly what %g's default precision of 6 gives; the rest by
 * snprintf. */
static char *put_g(char *p, double v)
{
    if (v > -1e6 && v < 1e6 && v == (double)(long long)v && !(v == 0 && signbit(v)))
        return put_int(p, (long long)v);
    return p + snprintf(p, 32, "%g", v);
}

/* A ranked rung's decision: "rung 1 (milestone 4): 7th of 12 by Pareto rank (front 3);
 * the top 3 continue" (the stopping variant), "...; paused until it is among the top
 * floor(n/rf) of the rung (3 of 12 now)" (promotion), or a NaN objective's stop. */
static void word_ranked(const sched_decision_t *d, int eager, char *buf, size_t n)
{
    if (d->front < 0 && d->place == 0) {
        snprintf(buf, n,
                 "reported a NaN objective at rung %d (milestone %g): diverged; it stays out of "
                 "the rung's points",
                 d->rung, d->milestone);
        return;
    }
    char place[128];
    sched__word_place(d, place, sizeof place);
    if (d->action == SCHED_PAUSE)
        snprintf(buf, n,
                 "reached rung %d (milestone %g): %s; paused until it is among the top "
                 "floor(n/rf) of the rung%s (%zu of %zu now)",
                 d->rung, d->milestone, place,
                 eager ? ", or its best while it holds fewer than rf points" : "", d->top,
                 d->among);
    else
        snprintf(buf, n, "rung %d (milestone %g): %s; %s %zu continue", d->rung, d->milestone,
                 place, d->action == SCHED_STOP ? "only the top" : "the top", d->top);
}

static void asha_word(const void *self, const sched_decision_t *d, const char *trial,
                      const char *time_attr, double time, char *buf, size_t n)
{
    const sched__asha_t *a = self;
    (void)trial;
    (void)time;
    if (d->action != SCHED_COMPLETE && (d->place > 0 || d->front < 0)) {
        word_ranked(d, a->eager, buf, n);
        return;
    }
    if (d->action == SCHED_PAUSE)
        snprintf(buf, n,
                 "reached rung %d (milestone %g): paused until it is in the rung's top 1/rf%s",
                 d->rung, d->milestone,
                 a->eager ? ", or its best while it holds fewer than rf results" : "");
    else if (d->action == SCHED_COMPLETE)
        sched__word_max_t(time_attr, a->max_t, buf, n);
    else if (d->action == SCHED_STOP && isnan(d->value))
        snprintf(buf, n,
                 "reported NaN at rung %d (milestone %g): diverged; NaN stays out of the cutoff",
                 d->rung, d->milestone);
    else { /* at most 21 + 11 + 21 + 31 + 16 bytes */
        char w[128], *p = w;
        p = put_str(p, isnan(d->cutoff)          ? "first result at rung "
                       : d->action == SCHED_STOP ? "worse than rung "
                                                 : "within rung ");
        p = put_int(p, d->rung);
        p = put_str(p, isnan(d->cutoff) ? " (milestone " : " cutoff at milestone ");
        p = put_g(p, d->milestone);
        p = put_str(p, isnan(d->cutoff)          ? "): no cutoff yet"
                       : d->action == SCHED_STOP ? ""
                                                 : ": promoted");
        size_t k = (size_t)(p - w);
        if (n == 0) return;
        if (k >= n) k = n - 1;
        memcpy(buf, w, k);
        buf[k] = 0;
    }
}

/* A trial choose_next promoted (the promotion variant) says from which rung and past
 * which bar; any other resume is the plain one. */
static const char *asha_word_resume(const void *self, const sched_decision_t *why,
                                    const char *time_attr, int attempt, const char *from, char *buf,
                                    size_t n)
{
    (void)time_attr;
    if (!why || why->rung < 0) return sched__word_resume(attempt, from, buf, n);
    if (why->place > 0) {
        char place[128];
        sched__word_place(why, place, sizeof place);
        snprintf(buf, n,
                 "promoted from rung %d (milestone %g): %s, among the top %zu; attempt %d resumes "
                 "from %s",
                 why->rung, why->milestone, place, why->top, attempt, from);
        return "promote";
    }
    if (isnan(why->cutoff))
        snprintf(buf, n,
                 "promoted from rung %d (milestone %g): %g is the best of a rung holding fewer "
                 "than reduction_factor (%g) results (eager_promotion); attempt %d resumes from %s",
                 why->rung, why->milestone, why->value, ((const sched__asha_t *)self)->rf, attempt,
                 from);
    else
        snprintf(buf, n,
                 "promoted from rung %d (milestone %g): %g is in the rung's top 1/rf (bar %g); "
                 "attempt %d resumes from %s",
                 why->rung, why->milestone, why->value, why->cutoff, attempt, from);
    return "promote";
}

const sched__policy_ops_t sched__asha_ops = {
    .name = "asha",
    .create = asha_new,
    .destroy = asha_free,
    .add = asha_add,
    .result = asha_result,
    .result_point = asha_result_point,
    .complete = asha_complete,
    .rungs = asha_rungs,
    .choose_next = asha_choose_next,
    .word = asha_word,
    .word_resume = asha_word_resume,
};
