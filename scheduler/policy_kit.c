/* What every policy file shares, below them all: the trial-id map, the decision that
 * decides nothing, and the words two policies say alike. Calls nothing else in scheduler/,
 * so the policies and the table of them (policy.c) make no circle. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pareto/pareto.h"
#include "scheduler/sched_int.h"

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
    out->place = 0;
    out->among = 0;
    out->top = 0;
    out->front = 0;
    out->violation = 0;
}

/* ---- ranked rungs ------------------------------------------------------------------ */
int sched__rank(size_t n, size_t k, const double *obj, const double *violation, const int64_t *ids,
                size_t *order, int *level)
{
    char err[128];
    if (n == 0) return SCHED_OK;
    return pareto_rank(n, k, obj, violation, ids, order, level, err, sizeof err) == PARETO_OK
               ? SCHED_OK
               : SCHED_ENOMEM;
}

/* English ordinal suffix: 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st, ... */
static const char *ordinal(size_t v)
{
    if (v % 100 >= 11 && v % 100 <= 13) return "th";
    return v % 10 == 1 ? "st" : v % 10 == 2 ? "nd" : v % 10 == 3 ? "rd" : "th";
}

void sched__word_place(const sched_decision_t *d, char *buf, size_t n)
{
    char why[64];
    if (d->violation > 0)
        snprintf(why, sizeof why, "infeasible: violation %g", d->violation);
    else if (d->front < 0)
        snprintf(why, sizeof why, "a NaN objective");
    else
        snprintf(why, sizeof why, "front %d", d->front);
    snprintf(buf, n, "%zu%s of %zu by Pareto rank (%s)", d->place, ordinal(d->place), d->among,
             why);
}

/* ---- words ------------------------------------------------------------------------ */
void sched__word_max_t(const char *time_attr, double max_t, char *buf, size_t n)
{
    snprintf(buf, n, "reached max_t (%s >= %g)", time_attr, max_t);
}

const char *sched__word_resume(int attempt, const char *from, char *buf, size_t n)
{
    snprintf(buf, n, "resumed (nothing new pending): attempt %d from %s", attempt, from);
    return "resume";
}
