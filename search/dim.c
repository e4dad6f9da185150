/* search/dim.c: the modelled parameters that searchers learning from results share: a
 * parameter in the scale Optuna models its counterpart in, a draw in that scale turned
 * back into one of its values, a value's place in it, and the check every searcher's
 * add_trial makes; and the pool protocol's two shared rules (a uniform pick, the nearest
 * candidate). Below the searchers that call it (random.c, tpe.c, searcher.c). Not for: any
 * searcher's rules (each in its own file) or the searchers' table (searcher.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "search/searcher_int.h"

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

size_t space__searcher_pick_uniform(uint64_t seed, size_t trial_no, size_t n)
{
    space__rng_t r;
    /* "pool" in the key keeps this stream apart from space_sample's and TPE's */
    uint64_t key = space__mix64(seed + SPACE__GOLDEN);
    key = space__mix64(key ^ (trial_no + 7 * SPACE__GOLDEN));
    space__rng_key(&r, space__mix64(key ^ 0x706f6f6cULL));
    return (size_t)space__rng_below(&r, n);
}

size_t space__searcher_nearest(const space_t *s, const cJSON *want, const cJSON *const *cands,
                               size_t n)
{
    size_t best = 0;
    double best_d = INFINITY;
    for (size_t c = 0; c < n; c++) {
        double sum = 0;
        for (size_t p = 0; p < s->nparams; p++) {
            if (s->params[p].kind == SPACE_P_CONSTANT) continue;
            const char *name = s->params[p].name;
            double d = space_param_distance(s, p, cJSON_GetObjectItemCaseSensitive(want, name),
                                            cJSON_GetObjectItemCaseSensitive(cands[c], name));
            sum += isnan(d) ? 1 : d * d;
        }
        if (sum < best_d) best_d = sum, best = c;
    }
    return best;
}
