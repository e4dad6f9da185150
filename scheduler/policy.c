/* Policies behind one interface (sched_policy_*): the table of policies (ASHA in asha.c,
 * median stopping in median.c, PBT in pbt.c, HyperBand in hyperband.c, FIFO here: it has
 * no state) and the dispatch to the operations each exports; what they share is
 * policy_kit.c's. Not for: the event loop (loop.c) or resource accounting (pool.c). */
#include "scheduler/sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

struct sched_policy {
    const sched__policy_ops_t *ops;
    void *self;
    unsigned caps;
    int ranked; /* results come as points (sched_on_result_point) */
};

/* ---- the table of policies -------------------------------------------------------- */
/* FIFO runs every trial until the trial itself ends: it never stops one, and a result at
 * time >= max_t does not complete it either (Ray Tune's FIFOScheduler likewise returns
 * CONTINUE for every result); it reads none of the options, so none can be wrong, and it
 * judges nothing, so it has no words. */
const sched__policy_ops_t sched__fifo_ops = {.name = "fifo"};

/* Indexed by the "scheduler" type of space.json, one row per policy. */
static const sched__policy_ops_t *const policies[SPACE_NSCHED] = {
    [SPACE_SCHED_FIFO] = &sched__fifo_ops,           [SPACE_SCHED_ASHA] = &sched__asha_ops,
    [SPACE_SCHED_MEDIAN] = &sched__median_ops,       [SPACE_SCHED_PBT] = &sched__pbt_ops,
    [SPACE_SCHED_HYPERBAND] = &sched__hyperband_ops,
};

int sched_policy_new(const sched_opts_t *opts, sched_policy_t **out, char *err, size_t errlen)
{
    if (!opts || !out) {
        snprintf(err, errlen, "scheduler: no options given");
        return SCHED_EINVAL;
    }
    if ((unsigned)opts->sched.type >= SPACE_NSCHED || !policies[opts->sched.type]) {
        snprintf(err, errlen, "scheduler: unknown policy type %d", (int)opts->sched.type);
        return SCHED_EINVAL;
    }
    const sched__policy_ops_t *ops = policies[opts->sched.type];
    /* Median stopping compares running means of one metric and PBT's quantiles order one
     * score: neither has a rule for several (space.json is refused earlier, with words;
     * this is for callers that build options by hand). Ray Tune refuses them likewise. */
    if (opts->nobjectives > SPACE_MAX_OBJECTIVES ||
        (opts->nobjectives > 1 && !ops->result_point && ops->result)) {
        snprintf(err, errlen,
                 "scheduler: %s judges one metric and cannot take %zu objectives; use \"asha\" "
                 "or \"hyperband\", whose rungs rank several by Pareto rank",
                 ops->name, opts->nobjectives);
        return SCHED_EINVAL;
    }
    sched_policy_t *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "scheduler: out of memory");
        return SCHED_ENOMEM;
    }
    p->ops = ops;
    p->ranked = sched__ranked(opts) && ops->result_point;
    int rc = p->ops->create ? p->ops->create(opts, &p->self, &p->caps, err, errlen) : SCHED_OK;
    if (rc != SCHED_OK) {
        free(p);
        return rc;
    }
    *out = p;
    return SCHED_OK;
}

void sched_policy_free(sched_policy_t *p)
{
    if (!p) return;
    if (p->ops->destroy) p->ops->destroy(p->self);
    free(p);
}

int sched_on_trial_add(sched_policy_t *p, int64_t trial)
{
    return p->ops->add ? p->ops->add(p->self, trial) : SCHED_OK;
}

void sched_on_result(sched_policy_t *p, int64_t trial, double time, double value,
                     sched_decision_t *out)
{
    if (p->ops->result)
        p->ops->result(p->self, trial, time, value, out);
    else
        sched__decision_none(out, value);
}

int sched_policy_ranked(const sched_policy_t *p)
{
    return p->ranked;
}

void sched_on_result_point(sched_policy_t *p, int64_t trial, double time, const sched_point_t *pt,
                           sched_decision_t *out)
{
    if (p->ranked)
        p->ops->result_point(p->self, trial, time, pt, out);
    else
        sched_on_result(p, trial, time, pt->value, out);
}

void sched_on_trial_complete(sched_policy_t *p, int64_t trial)
{
    if (p->ops->complete) p->ops->complete(p->self, trial);
}

size_t sched_policy_rungs(const sched_policy_t *p, sched_rung_info_t *out, size_t max)
{
    return p->ops->rungs ? p->ops->rungs(p->self, out, max) : 0;
}

/* Ray Tune's TrialScheduler.choose_trial_to_run: PENDING trials before PAUSED ones. */
static long choose_default(size_t n, size_t pending)
{
    return n > 0 && pending == 0 ? 0 : -1;
}

long sched_policy_choose_next(sched_policy_t *p, const int64_t *paused, size_t n, size_t pending,
                              sched_decision_t *why)
{
    sched_decision_t d;
    sched__decision_none(&d, NAN);
    long k = p->ops->choose_next ? p->ops->choose_next(p->self, paused, n, pending, &d)
                                 : choose_default(n, pending);
    if (why) *why = d;
    return k >= 0 && (size_t)k < n ? k : -1;
}

long sched_policy_drop(sched_policy_t *p, const int64_t *paused, size_t n, sched_decision_t *why)
{
    sched_decision_t d;
    sched__decision_none(&d, NAN);
    long k = p->ops->drop ? p->ops->drop(p->self, paused, n, &d) : -1;
    if (why) *why = d;
    return k >= 0 && (size_t)k < n ? k : -1;
}

int sched_policy_explore(sched_policy_t *p, int64_t trial, int64_t donor, const cJSON *donor_config,
                         cJSON **out, cJSON **what, char *err, size_t errlen)
{
    if (!p->ops->explore) {
        snprintf(err, errlen, "scheduler: %s does not explore", p->ops->name);
        return SCHED_EINVAL;
    }
    return p->ops->explore(p->self, trial, donor, donor_config, out, what, err, errlen);
}

const char *sched_policy_name(const sched_policy_t *p)
{
    return p->ops->name;
}

unsigned sched_policy_caps(const sched_policy_t *p)
{
    return p->caps;
}

/* The action as the store and the reports spell it. EXPLOIT is recorded by the loop's
 * exploit (ckpt.c), never here. */
static const char *action_word(sched_action_t a)
{
    return a == SCHED_STOP       ? "stop"
           : a == SCHED_COMPLETE ? "complete"
           : a == SCHED_PAUSE    ? "pause"
                                 : "continue";
}

const char *sched_policy_word(const sched_policy_t *p, const sched_decision_t *d, const char *trial,
                              const char *time_attr, double time, char *buf, size_t n)
{
    if (n > 0) buf[0] = 0;
    if (p->ops->word) p->ops->word(p->self, d, trial, time_attr, time, buf, n);
    return action_word(d->action);
}

const char *sched_policy_word_resume(const sched_policy_t *p, const sched_decision_t *why,
                                     const char *time_attr, int attempt, const char *from,
                                     char *buf, size_t n)
{
    if (p->ops->word_resume)
        return p->ops->word_resume(p->self, why, time_attr, attempt, from, buf, n);
    return sched__word_resume(attempt, from, buf, n);
}
