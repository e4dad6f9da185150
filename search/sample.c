/* search/sample.c: draws trial configurations, each a pure function of (seed, trial
 * index, parameter position and path), so any machine, in any order of calls, gets the
 * same values (resume relies on it). Not for: parsing (parse.c) or argv (render.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "search/space_int.h"
#include "search/tpe_int.h"

/* ---- random numbers -----------------------------------------------------------------
 * One independent stream (space_int.h: splitmix64 into xoshiro256**) per (seed, trial,
 * parameter). */
#define TWO_PI 6.283185307179586

/* The stream of one (seed, trial, parameter). */
static void rng_init(space__rng_t *r, uint64_t seed, uint64_t index, uint64_t param)
{
    uint64_t key = space__mix64(seed + SPACE__GOLDEN);
    key = space__mix64(key ^ (index + 2 * SPACE__GOLDEN));
    key = space__mix64(key ^ (param + 3 * SPACE__GOLDEN));
    space__rng_key(r, key);
}

/* The TPE searcher's stream of one (seed, trial) (tpe_int.h): beside rng_init so that the
 * two keyings are seen together; "tpe" in the key keeps them apart, so the searcher's
 * draws never repeat space_sample's. */
void space__rng_seed(space__rng_t *r, uint64_t seed, uint64_t trial_no)
{
    uint64_t key = space__mix64(seed + SPACE__GOLDEN);
    key = space__mix64(key ^ (trial_no + 5 * SPACE__GOLDEN));
    key = space__mix64(key ^ 0x747065ULL);
    space__rng_key(r, key);
}

/* Standard normal by Box-Muller; 1 - u keeps the logarithm's argument in (0, 1]. */
static double rng_normal(space__rng_t *r)
{
    double u1 = 1.0 - space__rng_uniform(r), u2 = space__rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(TWO_PI * u2);
}

/* Log-uniform in [lo, hi]. The base of the logarithm does not change the distribution,
 * so Ray Tune's `base` argument is accepted and has no effect here. */
static double rng_loguniform(space__rng_t *r, double lo, double hi)
{
    double llo = log(lo), lhi = log(hi);
    double x = exp(llo + space__rng_uniform(r) * (lhi - llo));
    return x < lo ? lo : x > hi ? hi : x;
}

static int64_t clamp_k(double k, int64_t kmin, int64_t kmax)
{
    if (!(k >= (double)kmin)) return kmin;
    if (k > (double)kmax) return kmax;
    return (int64_t)k;
}

static cJSON *sample_node(const space_t *s, const space_param_t *P, size_t index);

/* Value i of a choice or grid: a copy of the constant, or the drawn sub-space. */
static cJSON *pick(const space_t *s, const space_param_t *P, size_t i, size_t index)
{
    if (P->alts) return sample_node(s, &P->alts[i], index);
    return cJSON_Duplicate(cJSON_GetArrayItem(P->values, (int)i), 1);
}

/* One node's value for one trial: a parameter, a nested object, or a chosen branch.
 * Every node draws from its own stream (seed, index, rkey), so the draws of one node do
 * not depend on which other branches exist or were chosen. */
static cJSON *sample_node(const space_t *s, const space_param_t *P, size_t index)
{
    space__rng_t r;
    rng_init(&r, s->set.seed, index, P->rkey);
    return space__draw_node(s, P, &r, index);
}

cJSON *space__draw_node(const space_t *s, const space_param_t *P, space__rng_t *rp, size_t index)
{
    space__rng_t r = *rp;
    const space_quant_t *qu = &P->qu;
    switch (P->kind) {
    case SPACE_P_CONSTANT:
        return cJSON_Duplicate(P->values, 1);
    case SPACE_P_OBJECT: {
        cJSON *o = cJSON_CreateObject();
        for (size_t m = 0; o && m < P->nmembers; m++) {
            cJSON *v = sample_node(s, &P->members[m], index);
            if (!v) {
                cJSON_Delete(o);
                return NULL;
            }
            cJSON_AddItemToObject(o, P->members[m].name, v);
        }
        return o;
    }
    case SPACE_P_CHOICE:
        return pick(s, P, (size_t)space__rng_below(&r, P->nvalues), index);
    case SPACE_P_GRID: {
        size_t point = index % s->n_grid_points;
        return pick(s, P, (point / P->grid_stride) % P->nvalues, index);
    }
    case SPACE_P_UNIFORM: {
        double x = P->a + space__rng_uniform(&r) * (P->b - P->a);
        if (x >= P->b) x = nextafter(P->b, P->a); /* rounding must not reach high */
        return cJSON_CreateNumber(x);
    }
    case SPACE_P_LOGUNIFORM:
        return cJSON_CreateNumber(rng_loguniform(&r, P->a, P->b));
    case SPACE_P_QUNIFORM:
    case SPACE_P_QRANDINT: {
        /* Every multiple of q in [low, high] equally likely, end points included. */
        int64_t k = qu->kmin + (int64_t)space__rng_below(&r, (uint64_t)(qu->kmax - qu->kmin) + 1);
        return cJSON_CreateNumber(space__quant_value(qu, k));
    }
    case SPACE_P_QLOGUNIFORM:
    case SPACE_P_QLOGRANDINT: {
        /* Each multiple owns the whole cell [kq - q/2, kq + q/2], the end ones too. kmin
         * >= 1 (low > 0), so the lower edge is at least q/2 > 0. */
        double lo = (double)qu->kmin * qu->q - qu->q / 2, hi = (double)qu->kmax * qu->q + qu->q / 2;
        double x = rng_loguniform(&r, lo, hi);
        int64_t k = clamp_k(floor(x / qu->q + 0.5), qu->kmin, qu->kmax);
        return cJSON_CreateNumber(space__quant_value(qu, k));
    }
    case SPACE_P_RANDN:
        return cJSON_CreateNumber(P->a + P->b * rng_normal(&r));
    case SPACE_P_QRANDN: {
        double x = P->a + P->b * rng_normal(&r), k = nearbyint(x / qu->q);
        if (fabs(k) >= 0x1.0p62) return cJSON_CreateNumber(k * qu->q);
        return cJSON_CreateNumber(space__quant_value(qu, (int64_t)k));
    }
    case SPACE_P_RANDINT: {
        /* [low, high), as Ray Tune's randint. */
        uint64_t n = (uint64_t)(P->ib - P->ia);
        return cJSON_CreateNumber((double)(P->ia + (int64_t)space__rng_below(&r, n)));
    }
    case SPACE_P_LOGRANDINT: {
        /* Ray Tune's lograndint: floor of a log-uniform draw in [low, high), so high is
         * never reached. */
        double x = floor(rng_loguniform(&r, P->a, P->b));
        int64_t v = clamp_k(x, P->ia, P->ib - 1);
        return cJSON_CreateNumber((double)v);
    }
    }
    return NULL;
}

int space_sample(const space_t *s, size_t index, cJSON **out, char *err, size_t errlen)
{
    if (index >= s->num_trials) {
        if (err && errlen)
            snprintf(err, errlen, "trial index %zu is out of range: the experiment has %zu trials",
                     index, s->num_trials);
        return SPACE_EINVAL;
    }
    cJSON *o = cJSON_CreateObject();
    if (!o) goto nomem;
    for (size_t p = 0; p < s->nparams; p++) {
        cJSON *v = sample_node(s, &s->params[p], index);
        if (!v) goto nomem;
        cJSON_AddItemToObject(o, s->params[p].name, v);
    }
    *out = o;
    return SPACE_OK;
nomem:
    cJSON_Delete(o);
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return SPACE_ENOMEM;
}
