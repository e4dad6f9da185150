/* Policies behind one interface (sched_policy_*): the single dispatch to ASHA (asha.c)
 * and median stopping (median.c), FIFO inline here, and the trial-id map they share.
 * Not for: the event loop (loop.c) or resource accounting (pool.c). */
#include "scheduler/sched.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched_int.h"

struct sched_policy {
    sched_policy_type_t type;
    sched__asha_t *asha;     /* type ASHA */
    sched__median_t *median; /* type MEDIAN */
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
}

/* ---- the dispatch ------------------------------------------------------------------ */
int sched_policy_new(const sched_opts_t *opts, sched_policy_t **out, char *err, size_t errlen)
{
    if (!opts || !out) {
        snprintf(err, errlen, "scheduler: no options given");
        return SCHED_EINVAL;
    }
    sched_policy_t *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "scheduler: out of memory");
        return SCHED_ENOMEM;
    }
    p->type = opts->type;
    int rc = SCHED_OK;
    switch (opts->type) {
    case SCHED_POLICY_FIFO:
        break; /* FIFO reads none of the options, so none can be wrong */
    case SCHED_POLICY_ASHA:
        rc = sched__asha_new(opts, &p->asha, err, errlen);
        break;
    case SCHED_POLICY_MEDIAN:
        rc = sched__median_new(opts, &p->median, err, errlen);
        break;
    default:
        snprintf(err, errlen, "scheduler: unknown policy type %d", (int)opts->type);
        rc = SCHED_EINVAL;
    }
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
    sched__asha_free(p->asha);
    sched__median_free(p->median);
    free(p);
}

int sched_on_trial_add(sched_policy_t *p, int64_t trial)
{
    switch (p->type) {
    case SCHED_POLICY_ASHA:
        return sched__asha_add(p->asha, trial);
    case SCHED_POLICY_MEDIAN:
        return sched__median_add(p->median, trial);
    default:
        return SCHED_OK;
    }
}

/* FIFO runs every trial until the trial itself ends: it never stops one, and a result
 * at time >= max_t does not complete it either (Ray Tune's FIFOScheduler likewise
 * returns CONTINUE for every result). */
void sched_on_result(sched_policy_t *p, int64_t trial, double time, double value,
                     sched_decision_t *out)
{
    switch (p->type) {
    case SCHED_POLICY_ASHA:
        sched__asha_result(p->asha, trial, time, value, out);
        return;
    case SCHED_POLICY_MEDIAN:
        sched__median_result(p->median, trial, time, value, out);
        return;
    default:
        sched__decision_none(out, value);
    }
}

void sched_on_trial_complete(sched_policy_t *p, int64_t trial)
{
    switch (p->type) {
    case SCHED_POLICY_ASHA:
        sched__asha_complete(p->asha, trial);
        return;
    case SCHED_POLICY_MEDIAN:
        sched__median_complete(p->median, trial);
        return;
    default:
        return;
    }
}

/* Only ASHA has rungs; FIFO and median stopping report none. */
size_t sched_policy_rungs(const sched_policy_t *p, sched_rung_info_t *out, size_t max)
{
    if (p->type == SCHED_POLICY_ASHA) return sched__asha_rungs(p->asha, out, max);
    return 0;
}

const char *sched_policy_name(const sched_policy_t *p)
{
    switch (p->type) {
    case SCHED_POLICY_ASHA:
        return "asha";
    case SCHED_POLICY_MEDIAN:
        return "median";
    default:
        return "fifo";
    }
}
