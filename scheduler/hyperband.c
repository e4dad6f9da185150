/* HyperBand, synchronous: successive halving in brackets whose trials wait for each other.
 * It follows Ray Tune's HyperBandScheduler (python/ray/tune/schedulers/hyperband.py; Li et
 * al., "Hyperband: A Novel Bandit-Based Approach to Hyperparameter Optimization", JMLR
 * 2018). Not for: the asynchronous variant (asha.c) or launching and pausing trials (the
 * loop acts on the decisions).
 *
 * The rule, as Ray states it and as implemented below (eta = reduction_factor):
 *  - A band holds s_max_1 = round(log(max_t) / log(eta)) + 1 brackets (numpy's round:
 *    half to even), s = 0 .. s_max_1 - 1. Bracket s takes n0 = ceil(s_max_1 / (s + 1) *
 *    eta^s) trials and its first milestone is r0 = int(max_t * eta^-s); a bracket with
 *    r0 = 0 is skipped (Ray's None bracket). Trials fill brackets in the order they are
 *    added: the current bracket until it holds n0 live trials, then the next bracket of
 *    the band, then a new band.
 *  - on_result(trial, time, value): reward = value * (+1 max, -1 min). The trial's
 *    bracket records the result. A trial below the bracket's milestone continues (so does
 *    every trial of a bracket with no halving left when stop_last_trials is false).
 *    Otherwise the bracket is processed:
 *      some live trial of the bracket is still below the milestone: PAUSE, until it is;
 *      else the bracket halves: the milestone becomes int(min(r * eta, max_t)), the best
 *      ceil(n / eta) live trials by their last reward stay (ties: the later added), the
 *      rest are stopped (the current trial: STOP); a good trial below the new milestone
 *      continues (the current trial: CONTINUE; a paused one is promoted: choose_next
 *      resumes it), one at or past it waits for the next halving, or, if that was the
 *      last halving (stop_last_trials), is done.
 *  - A trial that ends (on_trial_complete) leaves its bracket, which is processed again:
 *    the trials waiting for it may halve now.
 *  - choose_next: of the promoted paused trials, the one in the first band, in its band's
 *    least complete bracket (completed time over the bracket's planned time, Ray's
 *    completion_percentage), first added.
 *
 * Several objectives, or constraints: a halving keeps the top ceil(n / eta) live trials by
 * pareto_rank of their last points (hb_result_point; MO-ASHA's order, as asha.c's ranked
 * rungs), and the words give places instead of a bar.
 *
 * Where we differ from Ray, on purpose (docs/hyperband.md says the same):
 *  - In a bracket's last round (no halving left, stop_last_trials true) a trial that
 *    reaches the milestone COMPLETEs at once; Ray PAUSEs it until the last one arrives
 *    and then stops them all. Nothing is judged in that round, so only the waiting goes.
 *  - A trial that reaches the end of its bracket COMPLETEs (it trained its budget) where
 *    Ray says STOP; a trial halved away is STOPped, as in Ray.
 *  - NaN ranks below every number (Python's sort leaves it wherever it falls).
 *  - Paused trials halved away are stopped when the loop asks (sched_policy_drop, before
 *    each turn's launches), not from inside on_result: a policy acts only through what
 *    it answers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

/* Limits that keep a mistyped option from planning absurd brackets. */
#define HB_MAX_BRACKETS 64
#define HB_MAX_TRIALS_PER_BRACKET 1e12

struct hb_trial {
    int64_t id;
    size_t bracket; /* index into brackets */
    uint64_t seq;   /* order of addition: Ray's dict order within a bracket */
    int live;       /* in its bracket (not halved away, not ended) */
    int done;       /* it said it sends no more (on_trial_complete) */
    double time;    /* time of its last result, 0 before one (Ray's _get_result_time) */
    double value;   /* its last value */
    double reward;  /* sign * value, -inf for NaN */
    int unpause;    /* promoted: a good trial below the new milestone, paused (Ray's
                       trials_to_unpause) */
    int drop;       /* 1 halved away while paused (STOP), 2 its bracket is done (COMPLETE):
                       waiting for the loop to stop it (sched_policy_drop) */
    /* the judgement that promoted or dropped it, for the words */
    int judged_rung;
    double judged_ms, bar;
    /* ranked brackets: its standing at that halving (place 0: none), and while a halving
     * ranks, its place and level there */
    size_t judged_place, judged_among, judged_top;
    int judged_front;
    size_t rank_place;
    int rank_front;
};

struct hb_bracket {
    int band, s;
    int halves;        /* halvings left */
    int rung;          /* halvings done: the rung of the current milestone */
    double n;          /* live trials the bracket holds at most (Ray's _n) */
    double r;          /* the current milestone (Ray's _r and _cumul_r) */
    double total_work; /* Ray's _calculate_total_work */
    double progress;   /* Ray's _completed_progress */
    int processing;    /* Ray's is_being_processed */
    size_t *members;   /* trial indices in order of addition; dead ones stay, live = 0 */
    size_t nmembers, cap;
    size_t nlive;
};

struct sched__hyperband {
    double max_t, eta, sign;
    int stop_last_trials;
    int s_max_1;
    struct hb_bracket *brackets;
    size_t nbrackets, capb;
    int band;     /* the band being filled */
    int band_len; /* brackets of that band so far, skipped ones included */
    long cur;     /* bracket new trials join, -1 before the first */
    struct hb_trial *trials;
    size_t ntrials, cap;
    uint64_t seq;
    sched__idmap_t ids;
    size_t *scratch; /* live trials of a bracket being halved */
    size_t capscratch;
    /* Ranked brackets (several objectives or constraints): each trial's last point, k
     * objectives (pobj, as trials is indexed) and violation; and pareto_rank's input and
     * output over a bracket's live trials (capscratch long). */
    int ranked;
    size_t k;
    double *pobj, *pviol;
    double *sobj, *sviol;
    int64_t *sids;
    size_t *order, *scratch2;
    int *level;
};

typedef struct sched__hyperband sched__hyperband_t;

static double n0_of(const sched__hyperband_t *h, int s)
{
    return ceil((double)h->s_max_1 / (s + 1) * pow(h->eta, s));
}

static double r0_of(const sched__hyperband_t *h, int s)
{
    return floor(h->max_t * pow(h->eta, -s));
}

/* Ray's _calculate_total_work, its arithmetic included (the cap uses r0, not the sum). */
static double total_work(const sched__hyperband_t *h, double n, double r, int s)
{
    double work = 0, cumulative_r = r;
    for (int i = 0; i <= s; i++) {
        work += floor(n) * floor(r);
        n = ceil(n / h->eta);
        r *= h->eta;
        r = floor(fmin(r, h->max_t - cumulative_r));
    }
    return work;
}

static void hb_free(void *self)
{
    sched__hyperband_t *h = self;
    if (!h) return;
    for (size_t i = 0; i < h->nbrackets; i++)
        free(h->brackets[i].members);
    free(h->brackets);
    free(h->trials);
    free(h->scratch);
    free(h->pobj), free(h->pviol), free(h->sobj), free(h->sviol), free(h->sids);
    free(h->order), free(h->scratch2), free(h->level);
    sched__idmap_free(&h->ids);
    free(h);
}

static int hb_new(const sched_opts_t *opts, void **out, unsigned *caps, char *err, size_t errlen)
{
    const space_sched_opts_t *o = &opts->sched;
    /* Ray asserts max_t > 0; below 1 its first bracket has no milestone (r0 = 0) */
    if (!(o->max_t >= 1) || !isfinite(o->max_t)) {
        snprintf(err, errlen, "hyperband: max_t must be a number >= 1 (got %g)", o->max_t);
        return SCHED_EINVAL;
    }
    if (!(o->reduction_factor > 1) || !isfinite(o->reduction_factor)) {
        snprintf(err, errlen, "hyperband: reduction_factor must be a number > 1 (got %g)",
                 o->reduction_factor);
        return SCHED_EINVAL;
    }
    sched__hyperband_t *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "hyperband: out of memory");
        return SCHED_ENOMEM;
    }
    h->max_t = o->max_t;
    h->eta = o->reduction_factor;
    h->sign = opts->mode_max ? 1.0 : -1.0;
    h->stop_last_trials = o->stop_last_trials;
    h->ranked = sched__ranked(opts);
    h->k = opts->nobjectives > 0 ? opts->nobjectives : 1;
    double s1 = rint(log(o->max_t) / log(o->reduction_factor)) + 1;
    h->s_max_1 = s1 <= HB_MAX_BRACKETS ? (int)s1 : HB_MAX_BRACKETS + 1;
    if (h->s_max_1 > HB_MAX_BRACKETS || !(n0_of(h, h->s_max_1 - 1) <= HB_MAX_TRIALS_PER_BRACKET)) {
        snprintf(err, errlen,
                 "hyperband: reduction_factor %g gives %.0f brackets of up to %.3g trials for "
                 "max_t %g; at most %d brackets of %.0e trials are supported",
                 o->reduction_factor, s1, n0_of(h, (int)fmin(s1, 1000) - 1), o->max_t,
                 HB_MAX_BRACKETS, HB_MAX_TRIALS_PER_BRACKET);
        hb_free(h);
        return SCHED_EINVAL;
    }
    h->cur = -1;
    /* trials wait at milestones, resume when promoted, and are dropped when halved away */
    *caps = SCHED_CAP_TIME | SCHED_CAP_PAUSE | SCHED_CAP_DROP;
    *out = h;
    return SCHED_OK;
}

/* ---- brackets ------------------------------------------------------------------------ */
static int cur_iter_done(const sched__hyperband_t *h, const struct hb_bracket *b)
{
    for (size_t i = 0; i < b->nmembers; i++) {
        const struct hb_trial *t = &h->trials[b->members[i]];
        if (t->live && !(t->time >= b->r)) return 0;
    }
    return 1;
}

static int finished(const sched__hyperband_t *h, const struct hb_bracket *b)
{
    return h->stop_last_trials && b->halves == 0 && cur_iter_done(h, b);
}

static int continue_trial(const sched__hyperband_t *h, const struct hb_bracket *b,
                          const struct hb_trial *t)
{
    if (!h->stop_last_trials && b->halves == 0) return 1;
    return t->time < b->r;
}

static double completion(const sched__hyperband_t *h, const struct hb_bracket *b)
{
    if (finished(h, b)) return 1.0;
    return fmin(b->progress / b->total_work, 1.0);
}

static void leave(struct hb_bracket *b, struct hb_trial *t)
{
    if (!t->live) return;
    t->live = 0;
    t->unpause = 0;
    b->nlive--;
}

/* Ray's sort of the live trials by reward, stable (ties keep the order of addition). */
static int by_reward(const sched__hyperband_t *h, size_t a, size_t b)
{
    const struct hb_trial *x = &h->trials[a], *y = &h->trials[b];
    if (x->reward != y->reward) return x->reward < y->reward ? -1 : 1;
    return x->seq < y->seq ? -1 : 1;
}

/* Ranks the k live trials in scratch by their last points with pareto_rank (ties by the
 * pareto module's rule over trial ids) and leaves them in scratch worst first, each with
 * its place (1 best) and level in rank_place, rank_front (-1: a NaN objective). */
static int rank_live(sched__hyperband_t *h, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        size_t ti = h->scratch[i];
        memcpy(h->sobj + i * h->k, h->pobj + ti * h->k, h->k * sizeof *h->sobj);
        h->sviol[i] = h->pviol[ti];
        h->sids[i] = h->trials[ti].id;
    }
    if (sched__rank(k, h->k, h->sobj, h->sviol, h->sids, h->order, h->level) != 0)
        return SCHED_ENOMEM;
    for (size_t j = 0; j < k; j++) {
        size_t ti = h->scratch[h->order[j]];
        struct hb_trial *t = &h->trials[ti];
        t->rank_place = j + 1;
        t->rank_front = h->level[h->order[j]];
        for (size_t d = 0; d < h->k; d++)
            if (isnan(h->pobj[ti * h->k + d])) t->rank_front = -1;
        h->scratch2[k - 1 - j] = ti;
    }
    memcpy(h->scratch, h->scratch2, k * sizeof *h->scratch);
    return SCHED_OK;
}

/* Ray's _process_bracket, for the trial `cur` that reached the milestone (NULL when a
 * trial left the bracket). Fills out (when cur) with the judgement. */
static void process(sched__hyperband_t *h, size_t bi, struct hb_trial *cur, sched_decision_t *out)
{
    struct hb_bracket *b = &h->brackets[bi];
    if (out) {
        out->judged = 1;
        out->action = SCHED_PAUSE;
        out->rung = b->rung;
        out->milestone = b->r;
    }
    if (!cur_iter_done(h, b)) return;
    if (finished(h, b)) { /* Ray's cleanup_full: the waiting trials are done too */
        for (size_t i = 0; i < b->nmembers; i++) {
            struct hb_trial *t = &h->trials[b->members[i]];
            if (!t->live || t == cur) continue;
            t->drop = 2;
            t->judged_rung = b->rung;
            t->judged_ms = b->r;
            t->bar = NAN;
            leave(b, t);
        }
        if (cur) leave(b, cur);
        if (out) out->action = SCHED_COMPLETE;
        return;
    }
    if (b->halves == 0) return; /* stop_last_trials false: nobody waits (continue_trial) */
    b->processing = 1;
    int rung = b->rung;
    double ms = b->r;
    b->halves--;
    b->rung++;
    b->n = ceil(b->n / h->eta);
    b->r = floor(fmin(b->r * h->eta, h->max_t));
    size_t k = 0;
    for (size_t i = 0; i < b->nmembers; i++)
        if (h->trials[b->members[i]].live) h->scratch[k++] = b->members[i];
    /* ranked brackets: by pareto_rank (worst first, as the sort leaves them); the sort is
     * the fallback when the ranking lacks memory (reward is then the first objective) */
    int ranked = h->ranked && rank_live(h, k) == 0;
    /* insertion sort: a bracket holds n0 trials, a few hundred at most in practice */
    for (size_t i = 1; i < k && !ranked; i++) {
        size_t v = h->scratch[i], j = i;
        for (; j > 0 && by_reward(h, v, h->scratch[j - 1]) < 0; j--)
            h->scratch[j] = h->scratch[j - 1];
        h->scratch[j] = v;
    }
    size_t keep = (size_t)fmin(b->n, (double)k), first_good = k - keep;
    /* the bar is the last kept value; ranked brackets have none, their words give places */
    double bar = keep > 0 && !ranked ? h->sign * h->trials[h->scratch[first_good]].reward : NAN;
    if (out) out->cutoff = bar;
    for (size_t i = 0; i < k; i++) {
        struct hb_trial *t = &h->trials[h->scratch[i]];
        t->judged_place = ranked ? t->rank_place : 0;
        t->judged_among = ranked ? k : 0;
        t->judged_top = ranked ? keep : 0;
        t->judged_front = ranked ? t->rank_front : 0;
        if (t == cur && out && ranked) {
            out->place = t->judged_place;
            out->among = k;
            out->top = keep;
            out->front = t->rank_front;
            out->violation = h->pviol[h->scratch[i]];
        }
    }
    int fin = h->stop_last_trials && b->halves == 0;
    for (size_t i = 0; i < k; i++) {
        struct hb_trial *t = &h->trials[h->scratch[i]];
        t->judged_rung = rung;
        t->judged_ms = ms;
        t->bar = bar;
        if (i < first_good) { /* halved away */
            if (t == cur) {
                if (out) out->action = SCHED_STOP;
            } else {
                t->drop = 1;
            }
            leave(b, t);
        } else if (continue_trial(h, b, t)) {
            if (t == cur) {
                if (out) out->action = SCHED_CONTINUE;
            } else {
                t->unpause = 1;
            }
        } else if (fin && cur_iter_done(h, b)) { /* past the last milestone already */
            if (t == cur) {
                if (out) out->action = SCHED_COMPLETE;
            } else {
                t->drop = 2;
            }
            leave(b, t);
        }
    }
    b->processing = 0;
}

/* A new trial joins the current bracket, or the next one Ray's on_trial_add makes. */
static int join(sched__hyperband_t *h, int64_t trial, uint32_t *at)
{
    if (h->cur < 0 || h->brackets[h->cur].nlive >= h->brackets[h->cur].n) {
        for (;;) {
            if (h->band_len == h->s_max_1) {
                h->band++;
                h->band_len = 0;
            }
            int s = h->band_len++;
            if (r0_of(h, s) == 0) continue; /* Ray's "Bracket too small": no bracket */
            if (h->nbrackets == h->capb) {
                size_t cap = h->capb ? 2 * h->capb : 8;
                struct hb_bracket *nb = realloc(h->brackets, cap * sizeof *nb);
                if (!nb) return SCHED_ENOMEM;
                h->brackets = nb;
                h->capb = cap;
            }
            struct hb_bracket *b = &h->brackets[h->nbrackets];
            memset(b, 0, sizeof *b);
            b->band = h->band;
            b->s = s;
            b->halves = s;
            b->n = n0_of(h, s);
            b->r = r0_of(h, s);
            b->total_work = total_work(h, b->n, b->r, s);
            h->cur = (long)h->nbrackets++;
            break;
        }
    }
    struct hb_bracket *b = &h->brackets[h->cur];
    if (b->nmembers == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 8;
        size_t *m = realloc(b->members, cap * sizeof *m);
        if (!m) return SCHED_ENOMEM;
        b->members = m;
        b->cap = cap;
    }
    if (h->ntrials == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        struct hb_trial *t = realloc(h->trials, cap * sizeof *t);
        if (!t) return SCHED_ENOMEM;
        h->trials = t;
        if (h->ranked) {
            double *o = realloc(h->pobj, cap * h->k * sizeof *o);
            if (!o) return SCHED_ENOMEM;
            h->pobj = o;
            double *v = realloc(h->pviol, cap * sizeof *v);
            if (!v) return SCHED_ENOMEM;
            h->pviol = v;
        }
        h->cap = cap;
    }
    if (b->nmembers + 1 > h->capscratch) {
        size_t cap = 2 * (b->nmembers + 1);
        size_t *s = realloc(h->scratch, cap * sizeof *s);
        if (!s) return SCHED_ENOMEM;
        h->scratch = s;
        if (h->ranked) {
            double *o = realloc(h->sobj, cap * h->k * sizeof *o);
            if (!o) return SCHED_ENOMEM;
            h->sobj = o;
            double *v = realloc(h->sviol, cap * sizeof *v);
            if (!v) return SCHED_ENOMEM;
            h->sviol = v;
            int64_t *id = realloc(h->sids, cap * sizeof *id);
            if (!id) return SCHED_ENOMEM;
            h->sids = id;
            size_t * or = realloc(h->order, cap * sizeof * or);
            if (! or) return SCHED_ENOMEM;
            h->order = or ;
            size_t *s2 = realloc(h->scratch2, cap * sizeof *s2);
            if (!s2) return SCHED_ENOMEM;
            h->scratch2 = s2;
            int *lv = realloc(h->level, cap * sizeof *lv);
            if (!lv) return SCHED_ENOMEM;
            h->level = lv;
        }
        h->capscratch = cap;
    }
    if (sched__idmap_put(&h->ids, trial, (uint32_t)h->ntrials) != 0) return SCHED_ENOMEM;
    struct hb_trial *t = &h->trials[h->ntrials];
    memset(t, 0, sizeof *t);
    t->id = trial;
    t->bracket = (size_t)h->cur;
    t->seq = h->seq++;
    t->live = 1;
    t->value = NAN;
    t->reward = -INFINITY;
    t->judged_rung = -1;
    if (h->ranked) { /* no point yet: NaN, which ranks last */
        for (size_t d = 0; d < h->k; d++)
            h->pobj[h->ntrials * h->k + d] = NAN;
        h->pviol[h->ntrials] = 0;
    }
    b->members[b->nmembers++] = h->ntrials;
    b->nlive++;
    *at = (uint32_t)h->ntrials++;
    return SCHED_OK;
}

static int hb_add(void *self, int64_t trial)
{
    sched__hyperband_t *h = self;
    if (sched__idmap_get(&h->ids, trial) != SCHED__NOIDX) return SCHED_EINVAL;
    uint32_t at;
    return join(h, trial, &at);
}

/* A result of `trial` (pt: its point on ranked brackets, else NULL). */
static void judge(sched__hyperband_t *h, int64_t trial, double time, double value,
                  const sched_point_t *pt, sched_decision_t *out)
{
    sched__decision_none(out, value);
    uint32_t ix = sched__idmap_get(&h->ids, trial);
    if (ix == SCHED__NOIDX && join(h, trial, &ix) != 0) return; /* not announced: joins */
    struct hb_trial *t = &h->trials[ix];
    struct hb_bracket *b = &h->brackets[t->bracket];
    out->bracket = (int)t->bracket;
    if (t->done || !t->live || isnan(time)) return;
    /* Ray's update_trial_stats */
    b->progress += time - t->time;
    t->time = time;
    t->value = value;
    t->reward = isnan(value) ? -INFINITY : h->sign * value;
    if (pt) { /* the last point is what a halving ranks; reward is the fallback's */
        memcpy(h->pobj + (size_t)ix * h->k, pt->obj, h->k * sizeof *pt->obj);
        h->pviol[ix] = pt->violation;
        t->reward = isnan(pt->obj[0]) ? -INFINITY : -pt->obj[0];
    }
    t->unpause = 0;
    if (continue_trial(h, b, t)) return;
    if (h->stop_last_trials && b->halves == 0) { /* the last round: done (see the top) */
        out->judged = 1;
        out->action = SCHED_COMPLETE;
        out->rung = b->rung;
        out->milestone = b->r;
        leave(b, t);
        /* trials that overstepped the last milestone wait paused: done with the last one */
        if (cur_iter_done(h, b)) process(h, t->bracket, NULL, NULL);
        return;
    }
    process(h, t->bracket, t, out);
}

static void hb_result(void *self, int64_t trial, double time, double value, sched_decision_t *out)
{
    judge(self, trial, time, value, NULL, out);
}

/* Ranked brackets (several objectives or constraints): a halving keeps the top
 * ceil(n / eta) live trials by pareto_rank of their last points, as MO-ASHA's rung rule
 * orders a rung (asha.c), where Ray's keeps the best rewards. */
static void hb_result_point(void *self, int64_t trial, double time, const sched_point_t *pt,
                            sched_decision_t *out)
{
    judge(self, trial, time, pt->value, pt, out);
}

static void hb_complete(void *self, int64_t trial)
{
    sched__hyperband_t *h = self;
    uint32_t ix = sched__idmap_get(&h->ids, trial);
    if (ix == SCHED__NOIDX) return;
    struct hb_trial *t = &h->trials[ix];
    struct hb_bracket *b = &h->brackets[t->bracket];
    t->done = 1;
    t->drop = 0;
    int was_live = t->live;
    leave(b, t);
    /* Ray's on_trial_remove: the trials waiting for this one may halve now (or, when its
     * bracket has ended with it, the paused ones are done: Ray's cleanup_full) */
    if (was_live && !b->processing) process(h, t->bracket, NULL, NULL);
}

/* A ranked halving's standing of t, for the words of its promotion or drop. */
static void fill_place(const sched__hyperband_t *h, const struct hb_trial *t, sched_decision_t *why)
{
    if (!t->judged_place) return;
    why->place = t->judged_place;
    why->among = t->judged_among;
    why->top = t->judged_top;
    why->front = t->judged_front;
    why->violation = h->pviol[t - h->trials];
}

/* Ray's choose_trial_to_run over the promoted paused trials: bands in order, in a band
 * the least complete bracket first (a stable sort: ties in bracket order), in a bracket
 * the first added. New trials go when none is promoted (the loop starts them in order,
 * which fills the brackets as Ray's on_trial_add does). */
static long hb_choose_next(void *self, const int64_t *paused, size_t n, size_t pending,
                           sched_decision_t *why)
{
    sched__hyperband_t *h = self;
    (void)pending;
    long best = -1;
    const struct hb_trial *bt = NULL;
    double bpct = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t ix = sched__idmap_get(&h->ids, paused[i]);
        if (ix == SCHED__NOIDX) continue;
        const struct hb_trial *t = &h->trials[ix];
        if (!t->unpause || !t->live) continue;
        const struct hb_bracket *b = &h->brackets[t->bracket];
        double pct = completion(h, b);
        if (bt) {
            const struct hb_bracket *bb = &h->brackets[bt->bracket];
            if (b->band != bb->band ? b->band > bb->band
                : pct != bpct       ? pct > bpct
                : b->s != bb->s     ? b->s > bb->s
                                    : t->seq > bt->seq)
                continue;
        }
        best = (long)i;
        bt = t;
        bpct = pct;
    }
    if (bt) {
        why->judged = 1;
        why->bracket = (int)bt->bracket;
        why->rung = bt->judged_rung;
        why->milestone = bt->judged_ms;
        why->value = bt->value;
        why->cutoff = bt->bar;
        fill_place(h, bt, why);
    }
    return best;
}

/* A paused trial halved away (STOP) or left when its bracket ended (COMPLETE): the first
 * of them in paused, with the judgement in *why; -1 if none. It is forgotten as asked. */
static long hb_drop(void *self, const int64_t *paused, size_t n, sched_decision_t *why)
{
    sched__hyperband_t *h = self;
    for (size_t i = 0; i < n; i++) {
        uint32_t ix = sched__idmap_get(&h->ids, paused[i]);
        if (ix == SCHED__NOIDX) continue;
        struct hb_trial *t = &h->trials[ix];
        if (!t->drop || t->done) continue;
        why->judged = 1;
        why->action = t->drop == 1 ? SCHED_STOP : SCHED_COMPLETE;
        why->bracket = (int)t->bracket;
        why->rung = t->judged_rung;
        why->milestone = t->judged_ms;
        why->value = t->value;
        why->cutoff = t->bar;
        fill_place(h, t, why);
        t->drop = 0;
        t->done = 1;
        return (long)i;
    }
    return -1;
}

/* One row per bracket: its current milestone (rung: halvings done) and the live trials
 * that reached it (`recorded`); no cutoff until it halves. */
static size_t hb_rungs(const void *self, sched_rung_info_t *out, size_t max)
{
    const sched__hyperband_t *h = self;
    for (size_t i = 0; i < h->nbrackets && i < max; i++) {
        const struct hb_bracket *b = &h->brackets[i];
        size_t at = 0;
        for (size_t j = 0; j < b->nmembers; j++) {
            const struct hb_trial *t = &h->trials[b->members[j]];
            at += t->live && t->time >= b->r;
        }
        out[i] = (sched_rung_info_t){
            .bracket = (int)i, .rung = b->rung, .milestone = b->r, .recorded = at, .cutoff = NAN};
    }
    return h->nbrackets;
}

/* ---- words -------------------------------------------------------------------------- */
static void hb_word(const void *self, const sched_decision_t *d, const char *trial,
                    const char *time_attr, double time, char *buf, size_t n)
{
    (void)self;
    (void)trial;
    (void)time;
    char place[128] = "";
    if (d->place > 0) sched__word_place(d, place, sizeof place);
    if (d->place > 0 && d->action == SCHED_STOP)
        snprintf(buf, n, "halved away: bracket %d at milestone %g keeps its top %zu; it is %s",
                 d->bracket, d->milestone, d->top, place);
    else if (d->place > 0 && d->action == SCHED_CONTINUE)
        snprintf(buf, n, "in the top %zu of bracket %d at milestone %g: %s; trains on", d->top,
                 d->bracket, d->milestone, place);
    else if (d->action == SCHED_PAUSE)
        snprintf(buf, n,
                 "reached milestone %g of bracket %d: paused until every trial of the bracket "
                 "has, then the bracket halves",
                 d->milestone, d->bracket);
    else if (d->action == SCHED_COMPLETE)
        snprintf(buf, n, "reached the last milestone of bracket %d (%s >= %g)", d->bracket,
                 time_attr, d->milestone);
    else if (d->action == SCHED_STOP)
        snprintf(buf, n,
                 "halved away: bracket %d at milestone %g keeps its top 1/rf, %g is below the "
                 "bar %g",
                 d->bracket, d->milestone, d->value, d->cutoff);
    else
        snprintf(buf, n, "in the top 1/rf of bracket %d at milestone %g (bar %g): trains on",
                 d->bracket, d->milestone, d->cutoff);
}

static const char *hb_word_resume(const void *self, const sched_decision_t *why,
                                  const char *time_attr, int attempt, const char *from, char *buf,
                                  size_t n)
{
    (void)self;
    (void)time_attr;
    if (!why || why->rung < 0) return sched__word_resume(attempt, from, buf, n);
    if (why->place > 0) {
        char place[128];
        sched__word_place(why, place, sizeof place);
        snprintf(buf, n,
                 "promoted in bracket %d from milestone %g: %s, among the top %zu; attempt %d "
                 "resumes from %s",
                 why->bracket, why->milestone, place, why->top, attempt, from);
        return "promote";
    }
    snprintf(buf, n,
             "promoted in bracket %d from milestone %g: %g is in the top 1/rf (bar %g); "
             "attempt %d resumes from %s",
             why->bracket, why->milestone, why->value, why->cutoff, attempt, from);
    return "promote";
}

const sched__policy_ops_t sched__hyperband_ops = {
    .name = "hyperband",
    .create = hb_new,
    .destroy = hb_free,
    .add = hb_add,
    .result = hb_result,
    .result_point = hb_result_point,
    .complete = hb_complete,
    .rungs = hb_rungs,
    .choose_next = hb_choose_next,
    .drop = hb_drop,
    .word = hb_word,
    .word_resume = hb_word_resume,
};
