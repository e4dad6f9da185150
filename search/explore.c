/* search/explore.c: Population Based Training's explore step, a perturbed copy of a
 * donor's configuration (Ray Tune's explore() in schedulers/pbt.py, with bounds and
 * integers handled as docs/pbt.md says). Not for: choosing who exploits whom (the
 * scheduler's pbt.c) or drawing whole configurations (sample.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "search/explore.h"
#include "search/render.h"
#include "search/space_int.h"

static double unit(const space_explore_opts_t *o)
{
    return (double)(o->draw(o->ud) >> 11) * 0x1.0p-53;
}

static int is_int_kind(space_pkind_t k)
{
    return k == SPACE_P_RANDINT || k == SPACE_P_LOGRANDINT;
}

static int is_q_kind(space_pkind_t k)
{
    return k == SPACE_P_QUNIFORM || k == SPACE_P_QLOGUNIFORM || k == SPACE_P_QRANDN ||
           k == SPACE_P_QRANDINT || k == SPACE_P_QLOGRANDINT;
}

/* The bounds a perturbed value is clipped into; randn has none. */
static void bounds(const space_param_t *P, double *lo, double *hi)
{
    *lo = -INFINITY;
    *hi = INFINITY;
    switch (P->kind) {
    case SPACE_P_UNIFORM:
    case SPACE_P_LOGUNIFORM:
        *lo = P->a;
        *hi = P->b;
        break;
    case SPACE_P_RANDINT:
    case SPACE_P_LOGRANDINT: /* high is exclusive, as when sampling */
        *lo = (double)P->ia;
        *hi = (double)(P->ib - 1);
        break;
    case SPACE_P_QUNIFORM:
    case SPACE_P_QLOGUNIFORM:
    case SPACE_P_QRANDINT:
    case SPACE_P_QLOGRANDINT:
        *lo = space__quant_value(&P->qu, P->qu.kmin);
        *hi = space__quant_value(&P->qu, P->qu.kmax);
        break;
    default:
        break;
    }
}

static double clip(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* A number multiplied by factor f, clipped; integers and multiples of q rounded and
 * moved one step in f's direction when rounding gave the old value back (then the other
 * way when a bound is in the way). */
static double perturb(const space_param_t *P, double x, double f, const char **how)
{
    double lo, hi;
    bounds(P, &lo, &hi);
    double y = clip(x * f, lo, hi);
    if (!is_int_kind(P->kind) && !is_q_kind(P->kind)) return y;
    double step = is_q_kind(P->kind) ? P->qu.q : 1;
    y = nearbyint(y / step) * step;
    if (is_q_kind(P->kind) && P->qu.qdigits >= 0 && fabs(y / step) < 0x1.0p52)
        y = space__quant_value(&P->qu, (int64_t)nearbyint(y / step));
    y = clip(y, lo, hi);
    if (y != x) return y;
    double dir = f >= 1 ? 1 : -1;
    double up = x + dir * step, down = x - dir * step;
    if (up >= lo && up <= hi) {
        *how = dir > 0 ? "+1" : "-1";
        return up;
    }
    if (down >= lo && down <= hi) {
        *how = dir > 0 ? "-1" : "+1";
        return down;
    }
    return y; /* a range of one value cannot change */
}

/* Index of v among a choice's values, or -1. */
static int value_index(const space_param_t *P, const cJSON *v)
{
    for (size_t i = 0; i < P->nvalues; i++)
        if (cJSON_Compare(cJSON_GetArrayItem(P->values, (int)i), v, 1)) return (int)i;
    return -1;
}

/* Whether parameter P is mutated when there is no hyperparam_mutations. */
static int mutable_kind(const space_param_t *P)
{
    return P->kind != SPACE_P_CONSTANT && P->kind != SPACE_P_GRID && P->kind != SPACE_P_OBJECT &&
           !P->alts;
}

/* One parameter: out's member `name` replaced by its mutation, `what` told how. */
static int explore_one(const space_t *s, const space_param_t *P, const char *name, cJSON *out,
                       cJSON *what, const space_explore_opts_t *o, char *err, size_t errlen)
{
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(out, name);
    cJSON *nv = NULL;
    char how[32] = "";
    int resample = unit(o) < o->resample_probability;
    if (P->kind == SPACE_P_CHOICE) {
        int i = old ? value_index(P, old) : -1;
        if (resample || i < 0) {
            size_t k = (size_t)(unit(o) * (double)P->nvalues);
            if (k >= P->nvalues) k = P->nvalues - 1;
            nv = cJSON_Duplicate(cJSON_GetArrayItem(P->values, (int)k), 1);
            snprintf(how, sizeof how, "resample");
        } else {
            int shift = (o->draw(o->ud) >> 63) ? 1 : -1;
            int j = i + shift;
            if (j < 0) j = 0;
            if (j >= (int)P->nvalues) j = (int)P->nvalues - 1;
            nv = cJSON_Duplicate(cJSON_GetArrayItem(P->values, j), 1);
            snprintf(how, sizeof how, "%s", shift > 0 ? "up" : "down");
        }
    } else if (resample || !cJSON_IsNumber(old)) {
        space__rng_t r;
        space__rng_key(&r, o->draw(o->ud));
        nv = space__draw_node(s, P, &r, 0);
        snprintf(how, sizeof how, "resample");
    } else {
        size_t k = o->nfactors > 1 ? (size_t)(unit(o) * (double)o->nfactors) : 0;
        if (k >= o->nfactors) k = o->nfactors - 1;
        double f = o->factors[k];
        char fb[32];
        snprintf(how, sizeof how, "*%s", space_format_number(f, fb));
        const char *moved = NULL;
        double y = perturb(P, old->valuedouble, f, &moved);
        if (moved) snprintf(how, sizeof how, "%s", moved);
        nv = cJSON_CreateNumber(y);
    }
    if (!nv) {
        snprintf(err, errlen, "out of memory");
        return SPACE_ENOMEM;
    }
    if (old)
        cJSON_ReplaceItemInObjectCaseSensitive(out, name, nv);
    else
        cJSON_AddItemToObject(out, name, nv);
    if (what && !cJSON_AddStringToObject(what, name, how)) {
        snprintf(err, errlen, "out of memory");
        return SPACE_ENOMEM;
    }
    return 0;
}

int space_explore(const space_t *s, const cJSON *config, const space_explore_opts_t *o, cJSON **out,
                  cJSON **what, char *err, size_t errlen)
{
    if (!cJSON_IsObject(config) || !o || !o->draw || o->nfactors == 0) {
        snprintf(err, errlen,
                 "explore: a configuration object, a random stream and factors are "
                 "needed");
        return SPACE_EINVAL;
    }
    cJSON *c = cJSON_Duplicate(config, 1);
    cJSON *w = what ? cJSON_CreateObject() : NULL;
    if (!c || (what && !w)) {
        cJSON_Delete(c);
        cJSON_Delete(w);
        snprintf(err, errlen, "out of memory");
        return SPACE_ENOMEM;
    }
    int rc = 0;
    if (s->muts) {
        for (size_t i = 0; !rc && i < s->nmuts; i++)
            rc = explore_one(s, &s->muts[i], s->params[s->mut_pos[i]].name, c, w, o, err, errlen);
    } else {
        for (size_t i = 0; !rc && i < s->nparams; i++)
            if (mutable_kind(&s->params[i]))
                rc = explore_one(s, &s->params[i], s->params[i].name, c, w, o, err, errlen);
    }
    if (rc) {
        cJSON_Delete(c);
        cJSON_Delete(w);
        return rc;
    }
    *out = c;
    if (what) *what = w;
    return 0;
}
