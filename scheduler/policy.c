/* Policies behind one interface (sched_policy_*): the table of operations that ASHA
 * (asha.c), median stopping (median.c), PBT (pbt.c) and FIFO (no state) fill, and the trial-id map
 * they share. Not for: the event loop (loop.c) or resource accounting (pool.c). */
#include "scheduler/sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

/* What every policy provides. `self` is the policy's own state; NULL entries mean "nothing
 * to do" (FIFO keeps no state at all). */
struct policy_ops {
    const char *name;
    int (*create)(const sched_opts_t *o, void **self, char *err, size_t errlen);
    void (*destroy)(void *self);
    int (*add)(void *self, int64_t trial);
    void (*result)(void *self, int64_t trial, double time, double value, sched_decision_t *out);
    void (*complete)(void *self, int64_t trial);
    size_t (*rungs)(const void *self, sched_rung_info_t *out, size_t max);
    /* Which paused trial a free slice goes to (sched_policy_choose_next); NULL: the
     * earliest paused one once no new trial is left. */
    long (*choose_next)(void *self, const int64_t *paused, size_t n, size_t pending,
                        sched_decision_t *why);
    /* pbt only: the explore step of an exploit (sched_policy_explore) */
    int (*explore)(void *self, int64_t trial, int64_t donor, const cJSON *donor_config, cJSON **out,
                   cJSON **what, char *err, size_t errlen);
};

struct sched_policy {
    const struct policy_ops *ops;
    void *self;
    unsigned caps;
};

/* ---- id map ----------------------------------------------------------------------- */
static int idmap_grow(sched__idmap_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    int64_t *keys = malloc(cap * sizeof *keys);
    uint32_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return SCHED_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->vals[i] == 0) continue;
        size_t j = sched__idmap_slot(m->keys[i], cap);
        while (vals[j] != 0)
            j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return SCHED_OK;
}

int sched__idmap_put(sched__idmap_t *m, int64_t key, uint32_t idx)
{
    if (idx >= SCHED__NOIDX - 1) return SCHED_ENOMEM; /* index + 1 must fit */
    if ((m->n + 1) * 2 > m->cap && idmap_grow(m) != 0) return SCHED_ENOMEM;
    size_t j = sched__idmap_slot(key, m->cap);
    while (m->vals[j] != 0)
        j = (j + 1) & (m->cap - 1);
    m->keys[j] = key;
    m->vals[j] = idx + 1;
    m->n++;
    return SCHED_OK;
}

void sched__idmap_del(sched__idmap_t *m, int64_t key)
{
    if (m->cap == 0) return;
    size_t mask = m->cap - 1, i = sched__idmap_slot(key, m->cap);
    for (;; i = (i + 1) & mask) {
        if (m->vals[i] == 0) return;
        if (m->keys[i] == key) break;
    }
    /* Backward-shift deletion (no tombstones): each key after the hole in its cluster that
     * may sit there (its home slot is not in (hole, its slot]) moves into the hole. */
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (m->vals[j] == 0) break;
        size_t home = sched__idmap_slot(m->keys[j], m->cap);
        if (((j - home) & mask) < ((j - i) & mask)) continue; /* home in (i, j]: stays */
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        i = j;
    }
    m->vals[i] = 0;
    m->n--;
}

void sched__idmap_free(sched__idmap_t *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

void sched__decision_none(sched_decision_t *out, double value)
{
    out->action = SCHED_CONTINUE;
    out->judged = 0;
    out->bracket = -1;
    out->rung = -1;
    out->milestone = NAN;
    out->value = value;
    out->cutoff = NAN;
    out->donor = -1;
    out->yield = 0;
    out->quantile = -1;
}

/* ---- the table of policies -------------------------------------------------------- */
/* Thin casts from each policy's typed functions to the table's void pointers. */
static int asha_create(const sched_opts_t *o, void **self, char *err, size_t errlen)
{
    return sched__asha_new(o, (sched__asha_t **)self, err, errlen);
}
static void asha_destroy(void *self)
{
    sched__asha_free(self);
}
static int asha_add(void *self, int64_t trial)
{
    return sched__asha_add(self, trial);
}
static void asha_result(void *self, int64_t trial, double time, double value, sched_decision_t *out)
{
    sched__asha_result(self, trial, time, value, out);
}
static void asha_complete(void *self, int64_t trial)
{
    sched__asha_complete(self, trial);
}
static size_t asha_rungs(const void *self, sched_rung_info_t *out, size_t max)
{
    return sched__asha_rungs(self, out, max);
}

static long asha_choose_next(void *self, const int64_t *paused, size_t n, size_t pending,
                             sched_decision_t *why)
{
    return sched__asha_choose_next(self, paused, n, pending, why);
}

static int median_create(const sched_opts_t *o, void **self, char *err, size_t errlen)
{
    return sched__median_new(o, (sched__median_t **)self, err, errlen);
}
static void median_destroy(void *self)
{
    sched__median_free(self);
}
static int median_add(void *self, int64_t trial)
{
    return sched__median_add(self, trial);
}
static void median_result(void *self, int64_t trial, double time, double value,
                          sched_decision_t *out)
{
    sched__median_result(self, trial, time, value, out);
}
static void median_complete(void *self, int64_t trial)
{
    sched__median_complete(self, trial);
}

static int pbt_create(const sched_opts_t *o, void **self, char *err, size_t errlen)
{
    return sched__pbt_new(o, (sched__pbt_t **)self, err, errlen);
}
static void pbt_destroy(void *self)
{
    sched__pbt_free(self);
}
static int pbt_add(void *self, int64_t trial)
{
    return sched__pbt_add(self, trial);
}
static void pbt_result(void *self, int64_t trial, double time, double value, sched_decision_t *out)
{
    sched__pbt_result(self, trial, time, value, out);
}
static void pbt_complete(void *self, int64_t trial)
{
    sched__pbt_complete(self, trial);
}
static long pbt_choose_next(void *self, const int64_t *paused, size_t n, size_t pending,
                            sched_decision_t *why)
{
    return sched__pbt_choose_next(self, paused, n, pending, why);
}
static int pbt_explore(void *self, int64_t trial, int64_t donor, const cJSON *donor_config,
                       cJSON **out, cJSON **what, char *err, size_t errlen)
{
    return sched__pbt_explore(self, trial, donor, donor_config, out, what, err, errlen);
}

/* Indexed by sched_policy_type_t. FIFO runs every trial until the trial itself ends: it
 * never stops one, and a result at time >= max_t does not complete it either (Ray Tune's
 * FIFOScheduler likewise returns CONTINUE for every result); it reads none of the
 * options, so none can be wrong. Only ASHA has rungs. */
static const struct policy_ops policies[] = {
    [SCHED_POLICY_FIFO] = {.name = "fifo"},
    [SCHED_POLICY_ASHA] = {"asha", asha_create, asha_destroy, asha_add, asha_result, asha_complete,
                           asha_rungs, asha_choose_next},
    [SCHED_POLICY_MEDIAN] = {"median", median_create, median_destroy, median_add, median_result,
                             median_complete, NULL},
    [SCHED_POLICY_PBT] = {"pbt", pbt_create, pbt_destroy, pbt_add, pbt_result, pbt_complete, NULL,
                          pbt_choose_next, pbt_explore},
};

int sched_policy_new(const sched_opts_t *opts, sched_policy_t **out, char *err, size_t errlen)
{
    if (!opts || !out) {
        snprintf(err, errlen, "scheduler: no options given");
        return SCHED_EINVAL;
    }
    if ((unsigned)opts->type >= sizeof policies / sizeof policies[0]) {
        snprintf(err, errlen, "scheduler: unknown policy type %d", (int)opts->type);
        return SCHED_EINVAL;
    }
    sched_policy_t *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "scheduler: out of memory");
        return SCHED_ENOMEM;
    }
    p->ops = &policies[opts->type];
    p->caps = opts->type == SCHED_POLICY_PBT ? SCHED_CAP_PAUSE | SCHED_CAP_EXPLOIT
              : opts->type == SCHED_POLICY_ASHA && opts->promotion   ? SCHED_CAP_PAUSE
              : opts->type == SCHED_POLICY_MEDIAN && opts->soft_stop ? SCHED_CAP_PAUSE
                                                                     : 0;
    int rc = p->ops->create ? p->ops->create(opts, &p->self, err, errlen) : SCHED_OK;
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
