/* Population Based Training (Jaderberg et al. 2017) as Ray Tune's PopulationBasedTraining
 * decides it (python/ray/tune/schedulers/pbt.py): asynchronous; at each perturbation
 * interval (in time_attr units) a trial in the bottom quantile of the population exploits
 * a trial of the top quantile (the loop restarts it from that trial's checkpoint) and
 * explores (its configuration perturbed, search/explore.c). Not for: copying checkpoints
 * or restarting processes (the loop's life.c) or the mutations themselves. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"
#include "search/explore.h"
#include "search/render.h"

typedef struct sched__pbt sched__pbt_t;

struct ptrial {
    int64_t id;
    double last_score; /* metric, signed so that larger is better; NaN: none yet */
    double last_train_time;
    double last_perturbation_time;
    int finished;
};

struct sched__pbt {
    space_sched_opts_t o;
    const space_t *space;
    double sign;  /* +1 for max, -1 for min: scores are compared larger-is-better */
    uint64_t rng; /* the policy's one random stream (splitmix64): donors and explore */
    struct ptrial *t;
    size_t n, cap;
    sched__idmap_t ids;
    size_t *order; /* scratch for the quantiles */
};

static int pbt_new(const sched_opts_t *opts, void **out, unsigned *caps, char *err, size_t errlen)
{
    const space_sched_opts_t *o = &opts->sched;
    if (!(o->perturbation_interval > 0)) {
        snprintf(err, errlen, "pbt: perturbation_interval must be > 0");
        return SCHED_EINVAL;
    }
    if (!(o->quantile_fraction >= 0 && o->quantile_fraction <= 0.5)) {
        snprintf(err, errlen, "pbt: quantile_fraction must be between 0 and 0.5");
        return SCHED_EINVAL;
    }
    if (!(o->resample_probability >= 0 && o->resample_probability <= 1)) {
        snprintf(err, errlen, "pbt: resample_probability must be between 0 and 1");
        return SCHED_EINVAL;
    }
    if (o->nfactors <= 0 || o->nfactors > 8 || !opts->space) {
        snprintf(err, errlen, "pbt: perturbation factors and the space are needed");
        return SCHED_EINVAL;
    }
    sched__pbt_t *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "pbt: out of memory");
        return SCHED_ENOMEM;
    }
    p->o = *o;
    p->space = opts->space;
    p->sign = opts->mode_max ? 1.0 : -1.0;
    /* its own stream, apart from the samplers' streams of the same seed */
    p->rng = opts->seed ^ 0x5042545f73747265ull; /* "PBT_stre" */
    /* it pauses trials at perturbation points and restarts them from others' checkpoints */
    *caps = SCHED_CAP_TIME | SCHED_CAP_PAUSE | SCHED_CAP_EXPLOIT;
    *out = p;
    return SCHED_OK;
}

static void pbt_free(void *self)
{
    sched__pbt_t *p = self;
    if (!p) return;
    free(p->t);
    free(p->order);
    sched__idmap_free(&p->ids);
    free(p);
}

static int pbt_add(void *self, int64_t trial)
{
    sched__pbt_t *p = self;
    if (sched__idmap_get(&p->ids, trial) != SCHED__NOIDX) return SCHED_EINVAL;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        struct ptrial *t = realloc(p->t, cap * sizeof *t);
        size_t *ord = realloc(p->order, cap * sizeof *ord);
        if (t) p->t = t;
        if (ord) p->order = ord;
        if (!t || !ord) return SCHED_ENOMEM;
        p->cap = cap;
    }
    if (sched__idmap_put(&p->ids, trial, (uint32_t)p->n) != 0) return SCHED_ENOMEM;
    p->t[p->n++] = (struct ptrial){trial, NAN, 0, 0, 0};
    return SCHED_OK;
}

static struct ptrial *find(sched__pbt_t *p, int64_t trial)
{
    uint32_t i = sched__idmap_get(&p->ids, trial);
    return i == SCHED__NOIDX ? NULL : &p->t[i];
}

/* i before j: ascending score, ties in the order trials were added (Python's stable sort
 * over Ray's dict of trial states). */
static int before(const sched__pbt_t *p, size_t i, size_t j)
{
    double x = p->t[i].last_score, y = p->t[j].last_score;
    return x != y ? x < y : i < j;
}

/* Ray's _quantiles: the unfinished trials with a score, sorted ascending; each quantile
 * holds ceil(n * quantile_fraction) of them, at most floor(n / 2); none when n <= 1. The
 * lower quantile is order[0 .. nq), the upper order[n - nq .. n). Returns n. */
static size_t quantiles(sched__pbt_t *p, size_t *nq)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n; i++)
        if (!isnan(p->t[i].last_score) && !p->t[i].finished) p->order[n++] = i;
    /* insertion sort: a population is tens of trials */
    for (size_t i = 1; i < n; i++) {
        size_t v = p->order[i], j = i;
        for (; j > 0 && before(p, v, p->order[j - 1]); j--)
            p->order[j] = p->order[j - 1];
        p->order[j] = v;
    }
    *nq = 0;
    if (n <= 1) return n;
    size_t k = (size_t)ceil((double)n * p->o.quantile_fraction);
    if ((double)k > (double)n / 2) k = n / 2;
    *nq = k;
    return n;
}

static void pbt_result(void *self, int64_t trial, double time, double value, sched_decision_t *out)
{
    sched__pbt_t *p = self;
    sched__decision_none(out, value);
    struct ptrial *t = find(p, trial);
    /* Ray continues a result without time_attr, before the burn-in period and between
     * perturbation points (saving the checkpoint's overhead). */
    if (!t || t->finished || isnan(time)) return;
    /* An optional max_t (Ray's PBT has none; its trials end by "stop"): the trial has
     * trained long enough. Its last result is never an exploit, which would restart a
     * clone with nothing left to train. */
    if (p->o.max_t > 0 && time >= p->o.max_t) {
        out->judged = 1;
        out->action = SCHED_COMPLETE;
        out->milestone = p->o.max_t;
        out->quantile = -1;
        t->last_score = isnan(value) ? -INFINITY : p->sign * value;
        t->last_train_time = time;
        t->finished = 1; /* from now on no donor: a clone of it would have nothing to train */
        return;
    }
    if (time < p->o.burn_in_period) return;
    if (time - t->last_perturbation_time < p->o.perturbation_interval) return;
    /* NaN (a diverged trial) ranks worst, so that it is the first to exploit another */
    t->last_score = isnan(value) ? -INFINITY : p->sign * value;
    t->last_train_time = time;
    t->last_perturbation_time = time;
    out->judged = 1;
    out->yield = 1;
    out->milestone = time;
    size_t nq = 0, n = quantiles(p, &nq);
    if (nq == 0) {
        out->quantile = -1;
        return;
    }
    size_t me = (size_t)(t - p->t);
    /* the bar of the top quantile: the worst score in it, as the metric */
    out->cutoff = p->sign * p->t[p->order[n - nq]].last_score;
    for (size_t k = n - nq; k < n; k++)
        if (p->order[k] == me) {
            out->quantile = 2;
            return;
        }
    for (size_t k = 0; k < nq; k++)
        if (p->order[k] == me) {
            /* Ray: random.choice(upper_quantile) */
            size_t pick = (size_t)(sched__uniform(&p->rng) * (double)nq);
            if (pick >= nq) pick = nq - 1;
            out->quantile = 1;
            out->action = SCHED_EXPLOIT;
            out->donor = p->t[p->order[n - nq + pick]].id;
            return;
        }
    out->quantile = 0;
}

static void pbt_complete(void *self, int64_t trial)
{
    sched__pbt_t *p = self;
    struct ptrial *t = find(p, trial);
    if (t) t->finished = 1;
}

/* Ray's choose_trial_to_run: of the trials waiting (PENDING, then PAUSED), the one with
 * the least training time goes first; a pending trial has none. */
static long pbt_choose_next(void *self, const int64_t *paused, size_t n, size_t pending,
                            sched_decision_t *why)
{
    sched__pbt_t *p = self;
    if (pending > 0 || n == 0) return -1;
    long best = -1;
    double bt = INFINITY;
    for (size_t k = 0; k < n; k++) {
        struct ptrial *t = find(p, paused[k]);
        double tt = t ? t->last_train_time : 0;
        if (best < 0 || tt < bt) {
            best = (long)k;
            bt = tt;
        }
    }
    if (why && best >= 0) why->milestone = bt;
    return best;
}

static uint64_t draw(void *ud)
{
    return sched__splitmix64(ud);
}

static int pbt_explore(void *self, int64_t trial, int64_t donor, const cJSON *donor_config,
                       cJSON **out, cJSON **what, char *err, size_t errlen)
{
    sched__pbt_t *p = self;
    struct ptrial *t = find(p, trial), *d = find(p, donor);
    if (!t || !d) {
        snprintf(err, errlen, "pbt: unknown trial");
        return SCHED_EINVAL;
    }
    space_explore_opts_t eo = {.resample_probability = p->o.resample_probability,
                               .factors = p->o.perturbation_factors,
                               .nfactors = (size_t)p->o.nfactors,
                               .draw = draw,
                               .ud = &p->rng};
    if (space_explore(p->space, donor_config, &eo, out, what, err, errlen) != 0)
        return SCHED_EINVAL;
    /* Ray's _exploit: the clone continues the donor's clock; its score stays its own
     * until its next perturbation point */
    t->last_perturbation_time = d->last_perturbation_time;
    t->last_train_time = d->last_train_time;
    return SCHED_OK;
}

/* A perturbation point in words: where the trial stood against the quantiles, and why it
 * paused when the loop made it give its slice away (d->action PAUSE). */
static void pbt_word(const void *self, const sched_decision_t *d, const char *trial,
                     const char *time_attr, double time, char *buf, size_t n)
{
    const sched__pbt_t *p = self;
    if (d->action == SCHED_COMPLETE) {
        sched__word_max_t(time_attr, p->o.max_t, buf, n);
        return;
    }
    char cb[32], vb[32];
    const char *where = d->quantile == 2   ? "in the top quantile"
                        : d->quantile == 0 ? "between the quantiles"
                                           : "too few trials with a score for quantiles";
    if (d->quantile >= 0)
        snprintf(buf, n, "perturbation at %s %s: %s %s (top quantile's bar %s)", time_attr,
                 space_format_number(time, vb), trial, where, space_format_number(d->cutoff, cb));
    else
        snprintf(buf, n, "perturbation at %s %s: %s", time_attr, space_format_number(time, vb),
                 where);
    if (d->action == SCHED_PAUSE) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, "; paused so that a waiting trial runs (least progressed first)");
    }
}

/* A paused trial resumes least progressed first (pbt_choose_next: why->milestone is its
 * training time). */
static const char *pbt_word_resume(const void *self, const sched_decision_t *why,
                                   const char *time_attr, int attempt, const char *from, char *buf,
                                   size_t n)
{
    (void)self;
    snprintf(buf, n, "resumed, least progressed of the paused trials (%s %g): attempt %d from %s",
             time_attr, why ? why->milestone : NAN, attempt, from);
    return "resume";
}

const sched__policy_ops_t sched__pbt_ops = {
    .name = "pbt",
    .create = pbt_new,
    .destroy = pbt_free,
    .add = pbt_add,
    .result = pbt_result,
    .complete = pbt_complete,
    .choose_next = pbt_choose_next,
    .explore = pbt_explore,
    .word = pbt_word,
    .word_resume = pbt_word_resume,
};
