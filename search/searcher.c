/* search/searcher.c: the searchers' table and the space_searcher_* calls, which check their
 * arguments once and hand them to the searcher the settings name (random.c, tpe.c). Above
 * the searchers, whose ops it lists. Not for: any searcher's rules (each in its own file),
 * the modelled parameters they share (dim.c) or parsing the "search" section
 * (settings.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/searcher_int.h"

/* Every searcher, by space_search_type_t: adding one is a row here. */
static const space__searcher_ops_t *const searchers[] = {
    [SPACE_SEARCH_RANDOM] = &space__searcher_random,
    [SPACE_SEARCH_TPE] = &space__searcher_tpe,
};
#define NSEARCHERS (sizeof searchers / sizeof searchers[0])

static void errs(char *err, size_t errlen, const char *msg)
{
    if (err && errlen) snprintf(err, errlen, "%s", msg);
}

const space__searcher_ops_t *space__searcher_ops(space_search_type_t t)
{
    return (unsigned)t < NSEARCHERS ? searchers[t] : NULL;
}

int space__searcher_find(const char *name)
{
    for (size_t i = 0; i < NSEARCHERS; i++)
        if (strcmp(searchers[i]->name, name) == 0) return (int)i;
    return -1;
}

size_t space__searcher_names(const char **names, size_t cap)
{
    for (size_t i = 0; i < NSEARCHERS && i < cap; i++)
        names[i] = searchers[i]->name;
    return NSEARCHERS;
}

const char *space__searcher_list(char *buf, size_t len, int quote)
{
    size_t used = 0;
    const char *q = quote ? "\"" : "";
    if (len) buf[0] = '\0';
    for (size_t i = 0; i < NSEARCHERS; i++) {
        const char *sep = i == 0 ? "" : i + 1 == NSEARCHERS ? " or " : ", ";
        int k = snprintf(buf + used, used < len ? len - used : 0, "%s%s%s%s", sep, q,
                         searchers[i]->name, q);
        if (k > 0) used += (size_t)k;
    }
    return buf;
}

const char *space_search_name(const space_settings_t *set)
{
    const space__searcher_ops_t *ops = space__searcher_ops(set->search);
    if (!ops) return "random";
    return ops->label ? ops->label(set) : ops->name;
}

int space_searcher_adaptive(const space_settings_t *set)
{
    const space__searcher_ops_t *ops = space__searcher_ops(set->search);
    return ops && ops->adaptive;
}

/* ---- the calls -------------------------------------------------------------------------- */
int space_searcher_new(const space_t *s, const space_search_opts_t *o, space_searcher_t **out,
                       char *err, size_t errlen)
{
    if (!s || !o || !out) {
        errs(err, errlen, "space_searcher_new: a space, options and an output are needed");
        return SPACE_EINVAL;
    }
    const space__searcher_ops_t *ops = space__searcher_ops(o->type);
    if (o->nobjectives > SPACE_MAX_OBJECTIVES) {
        if (err && errlen) snprintf(err, errlen, "at most %d objectives", SPACE_MAX_OBJECTIVES);
        return SPACE_EINVAL;
    }
    if (!ops) {
        char list[256];
        if (err && errlen)
            snprintf(err, errlen, "unknown search type: use %s",
                     space__searcher_list(list, sizeof list, 0));
        return SPACE_EINVAL;
    }
    space_searcher_t *x = calloc(1, sizeof *x);
    if (!x) {
        errs(err, errlen, "out of memory");
        return SPACE_ENOMEM;
    }
    x->ops = ops;
    x->space = s;
    x->k_path = o->nobjectives > 1 || o->constrained;
    x->nobjectives = o->nobjectives;
    int rc = ops->create(s, o, &x->state, err, errlen);
    if (rc) {
        free(x);
        return rc;
    }
    *out = x;
    return SPACE_OK;
}

void space_searcher_free(space_searcher_t *x)
{
    if (!x) return;
    x->ops->free(x->state);
    free(x);
}

void space_searcher_set_pool(space_searcher_t *x, int bits)
{
    if (x && x->ops->set_pool) x->ops->set_pool(x->state, bits);
}

int space_searcher_set_rungs(space_searcher_t *x, const double *milestones, size_t n)
{
    if (!x || x->observed || (n > 0 && !milestones)) return SPACE_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!(milestones[i] > 0) || !isfinite(milestones[i]) ||
            (i > 0 && !(milestones[i] > milestones[i - 1])))
            return SPACE_EINVAL;
    return x->ops->set_rungs(x->state, milestones, n);
}

int space_searcher_observe(space_searcher_t *x, size_t trial_no, double time, double value)
{
    if (!x || x->k_path) return SPACE_EINVAL;
    x->observed = 1;
    return x->ops->observe(x->state, trial_no, time, value);
}

int space_searcher_observe_k(space_searcher_t *x, size_t trial_no, double time, const double *obj,
                             double violation)
{
    if (!x || !x->k_path || (!obj && x->nobjectives > 0) || !(violation >= 0)) return SPACE_EINVAL;
    x->observed = 1;
    /* constraints without a "metric": the ops read one value, which says nothing */
    double none = NAN;
    return x->ops->observe_k(x->state, trial_no, time, x->nobjectives ? obj : &none, violation);
}

int space_searcher_takes_points(const space_searcher_t *x)
{
    return x && x->k_path;
}

void space_searcher_trial_end(space_searcher_t *x, size_t trial_no, int stopped_early)
{
    if (x) x->ops->trial_end(x->state, trial_no, stopped_early);
}

int space_searcher_add_trial(space_searcher_t *x, size_t trial_no, const cJSON *config, char *err,
                             size_t errlen)
{
    if (!x || !cJSON_IsObject(config)) {
        errs(err, errlen, "a configuration must be a JSON object");
        return SPACE_EINVAL;
    }
    return x->ops->add_trial(x->state, trial_no, config, err, errlen);
}

int space_searcher_suggest(space_searcher_t *x, size_t trial_no, cJSON **config, char *why,
                           size_t whylen, char *err, size_t errlen)
{
    if (!x || !config) {
        errs(err, errlen, "space_searcher_suggest: a searcher and an output are needed");
        return SPACE_EINVAL;
    }
    return x->ops->suggest(x->state, trial_no, config, why, whylen, err, errlen);
}

/* The default choice: what the searcher would suggest, answered by the nearest candidate
 * (the RMS of the parameters' distances on their [0, 1] scales, the first on ties), as a
 * table answers a configuration (docs/simulate.md); the searcher is then told that the
 * trial runs that candidate. */
static int choose_nearest(space_searcher_t *x, size_t trial_no, const cJSON *const *cands, size_t n,
                          size_t *chosen, char *why, size_t whylen, char *err, size_t errlen)
{
    cJSON *want = NULL;
    int rc = x->ops->suggest(x->state, trial_no, &want, why, whylen, err, errlen);
    if (rc) return rc;
    size_t best = space__searcher_nearest(x->space, want, cands, n);
    cJSON_Delete(want);
    rc = x->ops->add_trial(x->state, trial_no, cands[best], err, errlen);
    if (rc) return rc;
    if (why && whylen) {
        size_t k = strlen(why);
        if (k < whylen) snprintf(why + k, whylen - k, "; the nearest of %zu in the pool", n);
    }
    *chosen = best;
    return SPACE_OK;
}

int space_searcher_choose(space_searcher_t *x, size_t trial_no, const cJSON *const *cands, size_t n,
                          size_t *chosen, char *why, size_t whylen, char *err, size_t errlen)
{
    if (!x || !chosen || (n > 0 && !cands)) {
        errs(err, errlen, "space_searcher_choose: a searcher, candidates and an output are needed");
        return SPACE_EINVAL;
    }
    if (n == 0) {
        errs(err, errlen, "space_searcher_choose: no candidate configuration to choose from");
        return SPACE_EINVAL;
    }
    for (size_t c = 0; c < n; c++) {
        char e[256];
        if (!cJSON_IsObject(cands[c]) ||
            space__searcher_check_config(x->space, cands[c], e, sizeof e) != 0) {
            if (err && errlen)
                snprintf(err, errlen, "candidate %zu: %s", c,
                         cJSON_IsObject(cands[c]) ? e : "a configuration must be a JSON object");
            return SPACE_EINVAL;
        }
    }
    if (!x->ops->choose)
        return choose_nearest(x, trial_no, cands, n, chosen, why, whylen, err, errlen);
    return x->ops->choose(x->state, trial_no, cands, n, chosen, why, whylen, err, errlen);
}
