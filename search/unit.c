/* search/unit.c: a parameter's own scale (log or not) and a stepped parameter's values,
 * its values mapped to [0, 1] in that scale, and the distance between two values of one
 * parameter. Searchers model configurations in this scale, and the simulator answers a
 * configuration with the table's nearest one by it. The bottom of search/: the parser,
 * sampling and the searchers call it; it calls none of them. Not for: sampling (sample.c)
 * or parsing (parse.c). */
#include <math.h>
#include <string.h>

#include "search/space_int.h"

/* ---- a kind's scale and a stepped parameter's values ----------------------------------- */
int space__is_log_kind(space_pkind_t k)
{
    return k == SPACE_P_LOGUNIFORM || k == SPACE_P_QLOGUNIFORM || k == SPACE_P_LOGRANDINT ||
           k == SPACE_P_QLOGRANDINT;
}

int space_param_is_log(const space_t *s, size_t i)
{
    return i < s->nparams && space__is_log_kind(s->params[i].kind);
}

double space__quant_value(const space_quant_t *qu, int64_t k)
{
    if (qu->qdigits >= 0) {
        /* k*qscaled is an exact integer while it stays below 2^53 in magnitude. */
        double m = (double)k * (double)qu->qscaled;
        if (fabs(m) < SPACE_MAX_EXACT) {
            double p10 = 1;
            for (int d = 0; d < qu->qdigits; d++)
                p10 *= 10;
            return m / p10;
        }
    }
    return (double)k * qu->q;
}

/* ---- the unit scale -------------------------------------------------------------------- */
/* The index of v among a choice's or grid's values (equal as JSON), or -1. */
static int value_index(const space_param_t *P, const cJSON *v)
{
    int i = 0;
    for (const cJSON *e = P->values ? P->values->child : NULL; e; e = e->next, i++) {
        if (cJSON_IsNumber(e) && cJSON_IsNumber(v)) {
            if (e->valuedouble == v->valuedouble) return i;
        } else if (cJSON_Compare(e, v, 1)) {
            return i;
        }
    }
    return -1;
}

static double clamp01(double x)
{
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

int space_param_unit(const space_t *s, size_t i, const cJSON *v, double *u)
{
    if (i >= s->nparams || !v) return SPACE_EINVAL;
    const space_param_t *P = &s->params[i];
    if (P->kind == SPACE_P_CHOICE || P->kind == SPACE_P_GRID) {
        int k = value_index(P, v);
        if (k < 0) return SPACE_EINVAL;
        *u = P->nvalues > 1 ? (double)k / (double)(P->nvalues - 1) : 0.5;
        return SPACE_OK;
    }
    if (P->kind == SPACE_P_CONSTANT) {
        if (!cJSON_Compare(P->values, v, 1)) return SPACE_EINVAL;
        *u = 0.5;
        return SPACE_OK;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return SPACE_EINVAL;
    double x = v->valuedouble, lo = P->a, hi = P->b;
    switch (P->kind) {
    case SPACE_P_RANDN:
    case SPACE_P_QRANDN:
        /* mean +- 3 sd covers all but 0.3% of the draws */
        lo = P->a - 3 * P->b;
        hi = P->a + 3 * P->b;
        break;
    case SPACE_P_RANDINT:
    case SPACE_P_LOGRANDINT:
        hi = P->b - 1; /* [low, high): high itself is never drawn */
        break;
    default:
        break;
    }
    if (space_param_is_log(s, i)) {
        if (!(x > 0) || !(lo > 0)) return SPACE_EINVAL;
        x = log(x);
        lo = log(lo);
        hi = log(hi);
    }
    *u = hi > lo ? clamp01((x - lo) / (hi - lo)) : 0.5;
    return SPACE_OK;
}

double space_param_distance(const space_t *s, size_t i, const cJSON *a, const cJSON *b)
{
    if (i >= s->nparams || !a || !b) return NAN;
    const space_param_t *P = &s->params[i];
    if (P->kind == SPACE_P_CHOICE || P->kind == SPACE_P_GRID || P->kind == SPACE_P_CONSTANT) {
        if (cJSON_IsNumber(a) && cJSON_IsNumber(b)) return a->valuedouble == b->valuedouble ? 0 : 1;
        return cJSON_Compare(a, b, 1) ? 0 : 1;
    }
    double ua, ub;
    if (space_param_unit(s, i, a, &ua) != 0 || space_param_unit(s, i, b, &ub) != 0) return NAN;
    return fabs(ua - ub);
}
