/* Median stopping: stop a trial whose best result so far is worse than the median of
 * the other trials' running averages at the same time. Follows Ray Tune's
 * MedianStoppingRule (ray/tune/schedulers/median_stopping_rule.py), after Golovin et al.,
 * "Google Vizier" (KDD 2017). Not for: ASHA (asha.c) or running trials (loop.c).
 *
 * The rule, for a result (trial, time t, value) with reward = value * (+1 max, -1 min):
 *  - t >= max_t: COMPLETE (an addition to Ray, which has no max_t here).
 *  - t < grace_period: CONTINUE.
 *  - the others: every other trial whose most recent result has time >= t (Ray's
 *    _trials_beyond_time), stopped and finished trials included; each one's running
 *    average is the mean reward of its results with grace_period <= time <= t.
 *    Fewer than min_samples_required others: CONTINUE.
 *  - hard_stop false (opts.soft_stop): PAUSE instead of STOP, and a trial paused once is
 *    never judged again (Ray's MedianStoppingRule "falls back to FIFO" for it): resumed
 *    when nothing new is pending, it runs to its end.
 *  - STOP if median(those averages) > the trial's best reward so far (all of its
 *    results, before grace_period too), strictly: a tie continues (Ray's
 *    compare_op(median, best) != best).
 * Differences, on purpose: NaN is the worst value (-infinity as a reward: a running
 * average that contains one is -infinity, and a NaN never becomes the best); an other
 * trial with no result in [grace_period, t] is left out (Ray's mean of nothing is NaN
 * and makes the median NaN); on_trial_complete carries no result, so the final
 * result is not counted twice as Ray's on_trial_complete does.
 *
 * Cost: each trial keeps its results from grace_period on sorted by time with prefix
 * sums, so a running average is one binary search; a judged result costs O(N log R)
 * for N trials of R results, and the median is a quickselect. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

typedef struct sched__median sched__median_t;

/* One result from grace_period on, with sums over it and every earlier point. */
struct mpoint {
    double time;
    double reward;
    double sum;          /* finite rewards up to here */
    uint32_t nneg, npos; /* -inf (NaN) and +inf rewards up to here */
};

struct mtrial {
    int done;
    int paused; /* soft_stop: paused once, never judged again */
    int has_result;
    double last_time; /* time of the most recent result */
    int best_valid;   /* a non-NaN value was seen */
    double best;      /* best reward so far; -inf before best_valid */
    struct mpoint *pts;
    size_t n, cap;
};

struct sched__median {
    double max_t, grace, sign;
    int min_samples;
    int soft_stop; /* Ray's hard_stop=False */
    sched__idmap_t ids;
    struct mtrial *trials;
    size_t ntrials, cap;
    double *scratch; /* running averages of the others, ntrials long */
};

static int median_new(const sched_opts_t *opts, void **out, unsigned *caps, char *err,
                      size_t errlen)
{
    const space_sched_opts_t *o = &opts->sched;
    if (!(o->max_t > 0) || !isfinite(o->max_t)) {
        snprintf(err, errlen, "median: max_t must be a number > 0 (got %g)", o->max_t);
        return SCHED_EINVAL;
    }
    if (!(o->grace_period >= 0) || !isfinite(o->grace_period)) {
        snprintf(err, errlen, "median: grace_period must be a number >= 0 (got %g)",
                 o->grace_period);
        return SCHED_EINVAL;
    }
    if (o->grace_period > o->max_t) {
        snprintf(err, errlen, "median: grace_period %g must not be larger than max_t %g",
                 o->grace_period, o->max_t);
        return SCHED_EINVAL;
    }
    if (o->min_samples_required < 1) {
        snprintf(err, errlen, "median: min_samples_required must be >= 1 (got %d)",
                 o->min_samples_required);
        return SCHED_EINVAL;
    }
    sched__median_t *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "median: out of memory");
        return SCHED_ENOMEM;
    }
    m->max_t = o->max_t;
    m->grace = o->grace_period;
    m->sign = opts->mode_max ? 1.0 : -1.0;
    m->min_samples = o->min_samples_required;
    m->soft_stop = !o->hard_stop;
    /* hard_stop false pauses a trial, which may resume */
    *caps = SCHED_CAP_TIME | (m->soft_stop ? SCHED_CAP_PAUSE : 0);
    *out = m;
    return SCHED_OK;
}

static void median_free(void *self)
{
    sched__median_t *m = self;
    if (!m) return;
    for (size_t i = 0; i < m->ntrials; i++)
        free(m->trials[i].pts);
    free(m->trials);
    free(m->scratch);
    sched__idmap_free(&m->ids);
    free(m);
}

static int median_add(void *self, int64_t trial)
{
    sched__median_t *m = self;
    if (sched__idmap_get(&m->ids, trial) != SCHED__NOIDX) return SCHED_EINVAL;
    if (m->ntrials == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct mtrial *t = realloc(m->trials, cap * sizeof *t);
        if (!t) return SCHED_ENOMEM;
        m->trials = t;
        double *s = realloc(m->scratch, cap * sizeof *s);
        if (!s) return SCHED_ENOMEM;
        m->scratch = s;
        m->cap = cap;
    }
    if (sched__idmap_put(&m->ids, trial, (uint32_t)m->ntrials) != 0) return SCHED_ENOMEM;
    struct mtrial *t = &m->trials[m->ntrials++];
    memset(t, 0, sizeof *t);
    t->best = -INFINITY;
    return SCHED_OK;
}

/* Adds a result at or after grace_period, keeping pts sorted by time (results usually
 * come in time order, so this appends; out-of-order ones shift the tail and redo its
 * sums). Equal times keep their arrival order. */
static int add_point(struct mtrial *t, double time, double reward)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct mpoint *p = realloc(t->pts, cap * sizeof *p);
        if (!p) return SCHED_ENOMEM;
        t->pts = p;
        t->cap = cap;
    }
    size_t pos = t->n;
    while (pos > 0 && t->pts[pos - 1].time > time)
        pos--;
    memmove(t->pts + pos + 1, t->pts + pos, (t->n - pos) * sizeof *t->pts);
    t->pts[pos].time = time;
    t->pts[pos].reward = reward;
    t->n++;
    for (size_t i = pos; i < t->n; i++) {
        struct mpoint *p = &t->pts[i];
        double r = p->reward;
        p->sum = (i ? p[-1].sum : 0) + (isfinite(r) ? r : 0);
        p->nneg = (i ? p[-1].nneg : 0) + (r == -INFINITY);
        p->npos = (i ? p[-1].npos : 0) + (r == INFINITY);
    }
    return SCHED_OK;
}

/* Mean reward of t's results with grace_period <= time <= upto; 0 if there is none. */
static int running_mean(const struct mtrial *t, double upto, double *mean)
{
    size_t lo = 0, hi = t->n; /* count of points with time <= upto */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->pts[mid].time <= upto)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return 0;
    const struct mpoint *p = &t->pts[lo - 1];
    *mean = p->nneg ? -INFINITY : p->npos ? INFINITY : p->sum / (double)lo;
    return 1;
}

/* The k-th smallest of v[0..n) (Wirth's variant of Hoare's quickselect); afterwards
 * v[0..k) holds the k smallest values. */
static double select_kth(double *v, size_t n, size_t k)
{
    ptrdiff_t l = 0, r = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;
    while (l < r) {
        double x = v[kk];
        ptrdiff_t i = l, j = r;
        do {
            while (v[i] < x)
                i++;
            while (x < v[j])
                j--;
            if (i <= j) {
                double tmp = v[i];
                v[i] = v[j];
                v[j] = tmp;
                i++;
                j--;
            }
        } while (i <= j);
        if (j < kk) l = i;
        if (kk < i) r = j;
    }
    return v[kk];
}

/* numpy.median: the middle value, or the mean of the two middle ones. */
static double median_of(double *v, size_t n)
{
    double hi = select_kth(v, n, n / 2);
    if (n % 2) return hi;
    double lo = v[0]; /* the largest of the lower half, which select_kth left below */
    for (size_t i = 1; i < n / 2; i++)
        if (v[i] > lo) lo = v[i];
    return (lo + hi) / 2;
}

static void median_result(void *self, int64_t trial, double time, double value,
                          sched_decision_t *out)
{
    sched__median_t *m = self;
    sched__decision_none(out, value);
    uint32_t ix = sched__idmap_get(&m->ids, trial);
    if (ix == SCHED__NOIDX) {
        if (median_add(m, trial) != 0) return;
        ix = (uint32_t)(m->ntrials - 1);
    }
    struct mtrial *t = &m->trials[ix];
    if (t->done) return;
    double reward = isnan(value) ? -INFINITY : m->sign * value;
    if (!isnan(value) && (!t->best_valid || reward > t->best)) {
        t->best = reward;
        t->best_valid = 1;
    }
    t->last_time = time;
    t->has_result = 1;
    if (time >= m->grace && add_point(t, time, reward) != 0) return;
    if (time >= m->max_t) {
        out->action = SCHED_COMPLETE;
        out->judged = 1;
        return;
    }
    if (!(time >= m->grace) || t->paused) return;

    size_t n = 0;
    for (size_t i = 0; i < m->ntrials; i++) {
        const struct mtrial *o = &m->trials[i];
        if (i == ix || !o->has_result || !(o->last_time >= time)) continue;
        if (running_mean(o, time, &m->scratch[n])) n++;
    }
    if (n < (size_t)m->min_samples) return;
    double median = median_of(m->scratch, n);
    out->judged = 1;
    out->value = t->best_valid ? m->sign * t->best : NAN; /* what was compared: the best */
    out->cutoff = m->sign * median;
    if (median > t->best) {
        out->action = m->soft_stop ? SCHED_PAUSE : SCHED_STOP;
        t->paused = m->soft_stop;
    }
}

static void median_complete(void *self, int64_t trial)
{
    sched__median_t *m = self;
    uint32_t ix = sched__idmap_get(&m->ids, trial);
    if (ix != SCHED__NOIDX) m->trials[ix].done = 1;
}

static void median_word(const void *self, const sched_decision_t *d, const char *trial,
                        const char *time_attr, double time, char *buf, size_t n)
{
    const sched__median_t *m = self;
    (void)trial;
    (void)time;
    if (d->action == SCHED_PAUSE)
        snprintf(buf, n,
                 "worse than the median: best %g vs median %g of other trials; paused "
                 "(hard_stop false)",
                 d->value, d->cutoff);
    else if (d->action == SCHED_COMPLETE)
        sched__word_max_t(time_attr, m->max_t, buf, n);
    else
        snprintf(buf, n, "%s: best %g vs median %g of other trials",
                 d->action == SCHED_STOP ? "worse than the median" : "not worse than the median",
                 d->value, d->cutoff);
}

const sched__policy_ops_t sched__median_ops = {
    .name = "median",
    .create = median_new,
    .destroy = median_free,
    .add = median_add,
    .result = median_result,
    .complete = median_complete,
    .word = median_word,
};
