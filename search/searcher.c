/* search/searcher.c: the searchers' table and the space_searcher_* calls, which check their
 * arguments once and hand them to the searcher the settings name (random.c, tpe.c); and
 * the modelled parameters that searchers learning from results share. Not for: any
 * searcher's rules (each in its own file) or parsing the "search" section (settings.c). */
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
    if (!x) return SPACE_EINVAL;
    x->observed = 1;
    return x->ops->observe(x->state, trial_no, time, value);
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

/* ---- the modelled parameters ------------------------------------------------------------ */
int space__searcher_dim_of(const space_param_t *P, size_t p, space__searcher_dim_t *d)
{
    memset(d, 0, sizeof *d);
    d->param = p;
    d->kind = P->kind;
    const space_quant_t *qu = &P->qu;
    switch (P->kind) {
    case SPACE_P_UNIFORM: /* FloatDistribution(low, high) */
        d->low = d->vlow = P->a;
        d->high = d->vhigh = P->b;
        break;
    case SPACE_P_LOGUNIFORM: /* FloatDistribution(low, high, log=True) */
        d->low = d->vlow = log(P->a);
        d->high = d->vhigh = log(P->b);
        break;
    case SPACE_P_QUNIFORM:
    case SPACE_P_QRANDINT: /* Float/IntDistribution(step=q): bounds widened by q/2 */
        if (qu->kmax <= qu->kmin) return 0;
        d->q = qu->q;
        d->vlow = (double)qu->kmin * qu->q;
        d->vhigh = (double)qu->kmax * qu->q;
        d->low = d->vlow - 0.5 * d->q;
        d->high = d->vhigh + 0.5 * d->q;
        break;
    case SPACE_P_RANDINT: /* IntDistribution(low, high - 1): Ray's high is exclusive */
        if (P->ib - P->ia < 2) return 0;
        d->q = 1;
        d->vlow = (double)P->ia;
        d->vhigh = (double)(P->ib - 1);
        d->low = d->vlow - 0.5;
        d->high = d->vhigh + 0.5;
        break;
    case SPACE_P_LOGRANDINT: /* IntDistribution(log=True): log(low - 0.5) .. log(high + 0.5) */
        if (P->ib - P->ia < 2) return 0;
        d->vlow = (double)P->ia;
        d->vhigh = (double)(P->ib - 1);
        d->low = log(d->vlow - 0.5);
        d->high = log(d->vhigh + 0.5);
        break;
    case SPACE_P_QLOGUNIFORM:
    case SPACE_P_QLOGRANDINT:
        /* no Optuna kind is both: modelled as its log-integer case in units of q */
        if (qu->kmax <= qu->kmin) return 0;
        d->vlow = (double)qu->kmin * qu->q;
        d->vhigh = (double)qu->kmax * qu->q;
        d->low = log(d->vlow - 0.5 * qu->q);
        d->high = log(d->vhigh + 0.5 * qu->q);
        break;
    case SPACE_P_CHOICE:
        if (P->nvalues < 2) return 0;
        d->ncat = P->nvalues;
        break;
    default:
        return 0;
    }
    return d->ncat > 0 || d->high > d->low;
}

int space__searcher_dim_is_log(const space__searcher_dim_t *d)
{
    return d->kind == SPACE_P_LOGUNIFORM || d->kind == SPACE_P_LOGRANDINT ||
           d->kind == SPACE_P_QLOGUNIFORM || d->kind == SPACE_P_QLOGRANDINT;
}

static int64_t clamp_k(double k, int64_t kmin, int64_t kmax)
{
    if (!(k >= (double)kmin)) return kmin;
    if (k > (double)kmax) return kmax;
    return (int64_t)k;
}

double space__searcher_dim_value(const space_t *s, const space__searcher_dim_t *d, double u)
{
    const space_param_t *P = &s->params[d->param];
    const space_quant_t *qu = &P->qu;
    switch (d->kind) {
    case SPACE_P_UNIFORM: {
        double v = fmin(fmax(u, P->a), P->b);
        return v >= P->b ? nextafter(P->b, P->a) : v; /* [low, high), as space_sample */
    }
    case SPACE_P_LOGUNIFORM:
        return fmin(fmax(exp(u), P->a), P->b);
    case SPACE_P_QUNIFORM:
    case SPACE_P_QRANDINT:
        return space__quant_value(
            qu, clamp_k((double)qu->kmin + nearbyint((u - d->vlow) / d->q), qu->kmin, qu->kmax));
    case SPACE_P_RANDINT:
        return (double)clamp_k(d->vlow + nearbyint(u - d->vlow), P->ia, P->ib - 1);
    case SPACE_P_LOGRANDINT:
        return (double)clamp_k(nearbyint(exp(u)), P->ia, P->ib - 1);
    case SPACE_P_QLOGUNIFORM:
    case SPACE_P_QLOGRANDINT:
        return space__quant_value(qu, clamp_k(nearbyint(exp(u) / qu->q), qu->kmin, qu->kmax));
    default:
        return u;
    }
}

double space__searcher_dim_internal(const space_t *s, const space__searcher_dim_t *d,
                                    const cJSON *v)
{
    if (d->ncat > 0) {
        double u;
        if (space_param_unit(s, d->param, v, &u) != 0) return NAN;
        return nearbyint(u * (double)(d->ncat - 1));
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return NAN;
    double x = v->valuedouble;
    if (space__searcher_dim_is_log(d)) return x > 0 ? log(x) : NAN;
    return x;
}

int space__searcher_check_config(const space_t *s, const cJSON *config, char *err, size_t errlen)
{
    for (size_t p = 0; p < s->nparams; p++) {
        space__searcher_dim_t d;
        if (!space__searcher_dim_of(&s->params[p], p, &d)) continue;
        const char *name = s->params[p].name;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, name);
        if (!v || isnan(space__searcher_dim_internal(s, &d, v))) {
            if (err && errlen)
                snprintf(err, errlen, "configuration: \"%s\" is missing or not one of its values",
                         name);
            return SPACE_EINVAL;
        }
    }
    return SPACE_OK;
}
