/* search/tpe.c: the TPE searcher, "search": {"type": "tpe"} (space__searcher_tpe, one row
 * of searcher.c's table): its ops (construction, what the scheduler reports, suggesting)
 * and the test hooks of tpe_int.h. Which trials a model is fitted on and the good/bad
 * split are tpe_split.c's, the presets' acquisition (Optuna 3.1's TPESampler defaults,
 * HpBandSter's BOHB) tpe_acquire.c's. Not for: the densities themselves (parzen.c),
 * drawing random configurations (sample.c), checking calls (searcher.c), or when to ask
 * (the scheduler). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/render.h"
#include "search/searcher_int.h"
#include "search/space_int.h"
#include "search/tpe_int.h"
#include "search/tpe_parts.h"

static void errf(char *err, size_t errlen, const char *fmt, const char *a)
{
    if (err && errlen) snprintf(err, errlen, fmt, a);
}

static double to_internal(const space_t *s, const tdim_t *d, const cJSON *v)
{
    return space__searcher_dim_internal(s, d, v);
}

/* ---- construction ------------------------------------------------------------------- */
static void tpe_free(void *state)
{
    tpe_t *x = state;
    if (!x) return;
    for (size_t j = 0; j < x->nd; j++) {
        if (x->order) free(x->order[j]);
        if (x->vals) free(x->vals[j]);
    }
    free(x->order);
    free(x->vals);
    free(x->pend);
    for (size_t j = 0; x->gmemo && j < x->nd; j++)
        free(x->gmemo[j]);
    free(x->gmemo);
    for (size_t j = 0; x->gzc && j < x->nd; j++)
        space__zcache_free(&x->gzc[j]);
    free(x->gzc);
    free(x->cnt_at);
    for (size_t j = 0; x->inc && j < x->nd; j++)
        space__parzen_inc_free(&x->inc[j]);
    free(x->inc);
    free(x->inbad);
    free(x->changed);
    free(x->bid);
    free(x->gx);
    free(x->bx);
    free(x->bw);
    free(x->rk);
    free(x->dims);
    free(x->ncat);
    free(x->rungs);
    free(x->known);
    free(x->ended);
    free(x->stopped);
    free(x->role);
    free(x->x);
    free(x->rv);
    free(x->nrv_at);
    free(x->rw);
    free(x->rank);
    space__parzen_free(&x->pgood);
    space__parzen_free(&x->pbad);
    free(x->sv);
    free(x->sx);
    free(x->chash);
    free(x->ro);
    free(x->rviol);
    free(x->gwt);
    free(x->mo_obj);
    free(x->mo_viol);
    free(x->mo_w);
    free(x->mo_ids);
    free(x->mo_t);
    free(x->mo_order);
    free(x->mo_good);
    free(x->pool_x);
    free(x->pool_lg);
    free(x->pool_lb);
    free(x->pool_hi);
    free(x->pool_ord);
    free(x->pool_memo);
    free(x->pool_later);
    free(x);
}

static int tpe_create(const space_t *s, const space_search_opts_t *o, void **out, char *err,
                      size_t errlen)
{
    if (o->preset != SPACE_TPE_OPTUNA && o->preset != SPACE_TPE_BOHB) {
        errf(err, errlen, "%s", "unknown TPE preset: use optuna or bohb");
        return SPACE_EINVAL;
    }
    if (o->preset == SPACE_TPE_BOHB && o->nobjectives > 1) {
        /* HpBandSter's BOHB ranks one loss; Optuna's MOTPE is the optuna preset's */
        errf(err, errlen, "%s",
             "the bohb preset models one objective: use \"preset\": \"optuna\" (MOTPE) "
             "with several");
        return SPACE_EINVAL;
    }
    tpe_t *x = calloc(1, sizeof *x);
    if (!x) goto nomem;
    x->s = s;
    x->o = *o;
    x->nrv = 1;
    x->kpath = o->nobjectives > 1 || o->constrained;
    x->nobj = o->nobjectives > 1 ? o->nobjectives : 1;
    x->dims = calloc(s->nparams + 1, sizeof *x->dims);
    x->ncat = calloc(s->nparams + 1, sizeof *x->ncat);
    x->order = calloc(s->nparams + 1, sizeof *x->order);
    x->gmemo = calloc(s->nparams + 1, sizeof *x->gmemo);
    x->gzc = calloc(s->nparams + 1, sizeof *x->gzc);
    x->cnt_at = calloc(1, sizeof *x->cnt_at);
    x->vals = calloc(s->nparams + 1, sizeof *x->vals);
    x->inc = calloc(s->nparams + 1, sizeof *x->inc);
    x->sv = calloc(s->nparams + 1, sizeof *x->sv);
    x->sx = calloc(s->nparams + 1, sizeof *x->sx);
    if (!x->dims || !x->ncat || !x->order || !x->vals || !x->gmemo || !x->gzc || !x->inc ||
        !x->sv || !x->sx)
        goto nomem;
    for (size_t p = 0; p < s->nparams; p++) {
        if (space__searcher_dim_of(&s->params[p], p, &x->dims[x->nd])) {
            x->ncat[x->nd] = x->dims[x->nd].ncat;
            x->nd++;
        }
    }
    *out = x;
    return SPACE_OK;
nomem:
    tpe_free(x);
    errf(err, errlen, "%s", "out of memory");
    return SPACE_ENOMEM;
}

/* searcher.c has checked the milestones and that no result has arrived yet. */
static void tpe_set_pool(void *state, int bits)
{
    tpe_t *x = state;
    x->pool = bits;
}

static int tpe_set_rungs(void *state, const double *milestones, size_t n)
{
    tpe_t *x = state;
    double *r = n ? malloc(n * sizeof *r) : NULL;
    if (n && !r) return SPACE_ENOMEM;
    if (n) memcpy(r, milestones, n * sizeof *r);
    size_t nrv = n ? n : 1;
    if (x->cap && nrv != x->nrv) { /* no results yet: the slots can be resized empty */
        size_t kn = x->kpath ? nrv : 0;
        double *rv = malloc(x->cap * nrv * sizeof *rv),
               *ro = malloc(x->cap * kn * x->nobj * sizeof *ro + 1),
               *rviol = malloc(x->cap * kn * sizeof *rviol + 1);
        if (!rv || !ro || !rviol) {
            free(rv);
            free(ro);
            free(rviol);
            free(r);
            return SPACE_ENOMEM;
        }
        free(x->rv);
        x->rv = rv;
        free(x->ro);
        x->ro = ro;
        free(x->rviol);
        x->rviol = rviol;
    }
    size_t *cnt = calloc(nrv, sizeof *cnt); /* no results yet: every count is 0 */
    if (!cnt) {
        free(r);
        return SPACE_ENOMEM;
    }
    free(x->cnt_at);
    x->cnt_at = cnt;
    free(x->rungs);
    x->rungs = r;
    x->nrungs = n;
    x->nrv = nrv;
    return SPACE_OK;
}

/* Makes room for trial t. */
int space__tpe_grow(tpe_t *x, size_t t)
{
    if (t < x->cap) return 0;
    size_t cap = x->cap ? x->cap : 64;
    while (cap <= t)
        cap *= 2;
#define GROW(ptr, per)                                                                             \
    do {                                                                                           \
        void *np = realloc(x->ptr, cap * (per) * sizeof *x->ptr + 1);                              \
        if (!np) return SPACE_ENOMEM;                                                              \
        x->ptr = np;                                                                               \
        memset(x->ptr + x->cap * (per), 0, (cap - x->cap) * (per) * sizeof *x->ptr);               \
    } while (0)
    GROW(known, 1);
    GROW(ended, 1);
    GROW(stopped, 1);
    GROW(role, 1);
    GROW(x, x->nd);
    GROW(rv, x->nrv);
    GROW(nrv_at, 1);
    GROW(rw, 1);
    GROW(rank, 1);
    GROW(gx, 1);
    GROW(bx, 1);
    GROW(bw, 1);
    GROW(rk, 1);
    GROW(inbad, 1);
    GROW(changed, 1);
    GROW(bid, 1);
    GROW(pend, 1);
    GROW(chash, 1);
    GROW(gwt, 1);
    /* several objectives or constraints only (kpath): otherwise one byte each */
    size_t kp = x->kpath ? 1 : 0;
    GROW(ro, kp * x->nrv * x->nobj);
    GROW(rviol, kp * x->nrv);
    GROW(mo_obj, kp * x->nobj);
    GROW(mo_viol, kp);
    GROW(mo_w, kp);
    GROW(mo_ids, kp);
    GROW(mo_t, kp);
    GROW(mo_order, kp);
    GROW(mo_good, kp);
#undef GROW
    for (size_t j = 0; j < x->nd; j++) {
        double *nv = realloc(x->vals[j], cap * sizeof *nv + 1);
        if (!nv) return SPACE_ENOMEM;
        x->vals[j] = nv;
        if (x->dims[j].ncat > 0) continue;
        size_t *np = realloc(x->order[j], cap * sizeof *np + 1);
        if (!np) return SPACE_ENOMEM;
        x->order[j] = np;
    }
    x->cap = cap;
    return 0;
}

/* ---- what the scheduler reports -------------------------------------------------------- */
static int tpe_observe(void *state, size_t trial_no, double time, double value)
{
    tpe_t *x = state;
    if (space__tpe_grow(x, trial_no)) return SPACE_ENOMEM;
    double *rv = x->rv + trial_no * x->nrv;
    size_t before = x->nrv_at[trial_no];
    if (x->nrungs == 0) {
        rv[0] = value;
        x->nrv_at[trial_no] = 1;
    } else {
        /* every milestone this result has reached and the trial had not: ASHA records the
         * first result at or past each milestone */
        while (x->nrv_at[trial_no] < x->nrungs && time >= x->rungs[x->nrv_at[trial_no]])
            rv[x->nrv_at[trial_no]++] = value;
    }
    if (x->known[trial_no])
        for (size_t r = before; r < x->nrv_at[trial_no]; r++)
            x->cnt_at[r]++;
    return SPACE_OK;
}

/* As tpe_observe, for every value of the result: its objectives and violation go into each
 * rung slot it reaches (the latest slot without rungs). */
static int tpe_observe_k(void *state, size_t trial_no, double time, const double *obj,
                         double violation)
{
    tpe_t *x = state;
    if (space__tpe_grow(x, trial_no)) return SPACE_ENOMEM;
    size_t *at = &x->nrv_at[trial_no], before = *at, k = x->nobj;
    size_t from = x->nrungs == 0 ? 0 : before, to = from;
    if (x->nrungs == 0)
        to = *at = 1;
    else
        while (to < x->nrungs && time >= x->rungs[to])
            to++;
    for (size_t r = from; r < to; r++) {
        size_t slot = trial_no * x->nrv + r;
        x->rv[slot] = obj[0];
        memcpy(x->ro + slot * k, obj, k * sizeof *obj);
        x->rviol[slot] = violation;
    }
    if (x->nrungs) *at = to;
    if (x->known[trial_no])
        for (size_t r = before; r < *at; r++)
            x->cnt_at[r]++;
    return SPACE_OK;
}

static void tpe_trial_end(void *state, size_t trial_no, int stopped_early)
{
    tpe_t *x = state;
    if (space__tpe_grow(x, trial_no)) return;
    x->ended[trial_no] = 1;
    x->stopped[trial_no] = stopped_early != 0;
}

/* Takes t out of, or puts it into, the per-dimension sorted orders (known[t]: 1 merged
 * into them, 2 waiting in pend). */
static void unregister(tpe_t *x, size_t t)
{
    if (!x->known[t]) return;
    x->incok = 0; /* its values may change: the kept bad estimators may hold the old ones */
    if (x->known[t] == 2) {
        size_t k = 0;
        while (x->pend[k] != t)
            k++;
        x->pend[k] = x->pend[--x->npend];
    } else {
        size_t nsorted = x->nknown - x->npend;
        for (size_t j = 0; j < x->nd; j++) {
            if (x->dims[j].ncat > 0) continue;
            size_t *o = x->order[j], k = 0;
            while (o[k] != t)
                k++;
            memmove(o + k, o + k + 1, (nsorted - k - 1) * sizeof *o);
            memmove(x->vals[j] + k, x->vals[j] + k + 1, (nsorted - k - 1) * sizeof *x->vals[j]);
        }
    }
    for (size_t r = 0; r < x->nrv_at[t]; r++)
        x->cnt_at[r]--;
    x->known[t] = 0;
    x->nknown--;
}

/* ---- configurations already trained or running ----------------------------------------
 * A configuration's identity: a 64-bit hash of its parameters' values in declaration order
 * (numbers by their bits, -0 as 0; strings, booleans, arrays and objects by content), the
 * same whether the value came from a suggestion, the store or points_to_evaluate. */
static uint64_t hmix(uint64_t h, uint64_t v)
{
    return space__mix64(h ^ (v + SPACE__GOLDEN));
}

static uint64_t hash_num(double v)
{
    uint64_t b;
    if (v == 0) v = 0; /* -0 prints and compares as 0 */
    memcpy(&b, &v, sizeof b);
    return hmix(1, b);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = hmix(h, (unsigned char)*s);
    return hmix(h, 0x100);
}

static uint64_t hash_json(const cJSON *v)
{
    if (!v) return 0;
    if (cJSON_IsNumber(v)) return hash_num(v->valuedouble);
    uint64_t h = hmix(2, (uint64_t)(v->type & 0xff));
    if (cJSON_IsString(v)) h = hash_str(h, v->valuestring);
    for (const cJSON *m = cJSON_IsArray(v) || cJSON_IsObject(v) ? v->child : NULL; m; m = m->next)
        h = hmix(hash_str(h, m->string), hash_json(m));
    return h;
}

/* The hash of cfg with the modelled parameters' values replaced by val (NULL: cfg's own):
 * a numeric one by its value, a choice by the value its index names. */
static uint64_t config_hash(const tpe_t *x, const cJSON *cfg, const double *val)
{
    uint64_t h = 7;
    size_t j = 0;
    for (size_t p = 0; p < x->s->nparams; p++) {
        const space_param_t *P = &x->s->params[p];
        uint64_t hp;
        if (val && j < x->nd && x->dims[j].param == p) {
            hp = x->dims[j].ncat > 0 ? hash_json(cJSON_GetArrayItem(P->values, (int)val[j]))
                                     : hash_num(val[j]);
            j++;
        } else {
            if (j < x->nd && x->dims[j].param == p) j++;
            hp = hash_json(cJSON_GetObjectItemCaseSensitive(cfg, P->name));
        }
        h = hmix(h, hp);
    }
    return h;
}

/* Whether a trial other than self holds (trained, or running) the configuration hashed h. */
static int is_duplicate(const tpe_t *x, size_t self, uint64_t h)
{
    for (size_t t = 0; t < x->cap; t++)
        if (x->known[t] && t != self && x->chash[t] == h) return 1;
    return 0;
}

static void register_trial(tpe_t *x, size_t t, const double *xi, uint64_t h)
{
    unregister(x, t);
    x->chash[t] = h;
    memcpy(x->x + t * x->nd, xi, x->nd * sizeof *xi);
    for (size_t j = 0; j < x->nd; j++)
        if (x->dims[j].ncat > 0) x->vals[j][t] = xi[j];
    x->known[t] = 2;
    for (size_t r = 0; r < x->nrv_at[t]; r++)
        x->cnt_at[r]++;
    x->pend[x->npend++] = t;
    x->nknown++;
}

static int tpe_add_trial(void *state, size_t trial_no, const cJSON *config, char *err,
                         size_t errlen)
{
    tpe_t *x = state;
    if (space__tpe_grow(x, trial_no)) {
        errf(err, errlen, "%s", "out of memory");
        return SPACE_ENOMEM;
    }
    double *xi = x->sx;
    for (size_t j = 0; j < x->nd; j++) {
        const char *name = x->s->params[x->dims[j].param].name;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, name);
        xi[j] = v ? to_internal(x->s, &x->dims[j], v) : NAN;
        if (isnan(xi[j])) {
            errf(err, errlen, "configuration: \"%s\" is missing or not one of its values", name);
            return SPACE_EINVAL;
        }
    }
    register_trial(x, trial_no, xi, config_hash(x, config, NULL));
    return SPACE_OK;
}

/* ---- test hooks (tpe_int.h) ------------------------------------------------------------ */
/* The TPE state behind a handle, or NULL when the handle is another searcher's: the test
 * hooks below (tpe_int.h) look inside TPE only. */
static tpe_t *tpe_of(const space_searcher_t *h)
{
    return h && h->ops == &space__searcher_tpe ? h->state : NULL;
}

int space__searcher_split(space_searcher_t *h, size_t self, unsigned char *roles, size_t nroles,
                          int *rung)
{
    tpe_t *x = tpe_of(h);
    if (!x) return SPACE_EINVAL;
    split_t sp = {0};
    size_t most = 0;
    if (space__tpe_grow(x, self)) return SPACE_ENOMEM;
    int ready = space__tpe_choose_split(x, self, &sp, &most);
    if (ready < 0) return SPACE_ENOMEM;
    for (size_t t = 0; t < nroles; t++)
        roles[t] = ready && t < x->cap ? x->role[t] : 0;
    *rung = ready ? sp.rung : -2;
    return SPACE_OK;
}

void space__searcher_exact_scores(space_searcher_t *h, int on)
{
    tpe_t *x = tpe_of(h);
    if (x) x->exact_scores = on;
}

void space__searcher_score_counts(const space_searcher_t *h, size_t *cands, size_t *exact)
{
    const tpe_t *x = tpe_of(h);
    *cands = x ? x->n_cands : 0;
    *exact = x ? x->n_exact : 0;
}

double space__searcher_good_weight(const space_searcher_t *h, size_t t)
{
    const tpe_t *x = tpe_of(h);
    if (!x || !x->good_weighted || t >= x->cap || x->role[t] != ROLE_GOOD) return NAN;
    return x->gwt[t];
}

const space__parzen_t *space__searcher_bad_estimator(const space_searcher_t *h, size_t j)
{
    const tpe_t *x = tpe_of(h);
    if (!x || j >= x->nd || x->dims[j].ncat > 0 || !x->incok) return NULL;
    return &x->inc[j].pe;
}
static void whyf(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void whyf(char *why, size_t whylen, const char *fmt, ...)
{
    if (!why || !whylen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
}

/* Whether this turn is random rather than the model's, with why: no parameter to model, too
 * few observations yet (ready from space__tpe_choose_split, most the largest count), or
 * BOHB's random fraction, which takes one draw of rng (only then, so that the stream a
 * suggestion sees stays as it was). */
static int random_turn(const tpe_t *x, int ready, size_t most, space__rng_t *rng, char *why,
                       size_t whylen)
{
    size_t nd = x->nd, need = 2 * (nd + 1) > 10 ? 2 * (nd + 1) : 10;
    if (x->pool & SPACE_TPE_POOL_STARTUP10) need = 10;
    if (nd == 0) {
        whyf(why, whylen, "random: no parameter to model");
        return 1;
    }
    if (!ready) {
        whyf(why, whylen, "random: model not ready (%zu of %zu observations)", most, need);
        return 1;
    }
    if (x->o.preset == SPACE_TPE_BOHB && space__rng_uniform(rng) < BOHB_RANDOM_FRACTION) {
        whyf(why, whylen, "random: BOHB's random fraction (1/3)");
        return 1;
    }
    return 0;
}

/* suggested_by for a choice the model made: the preset, the rung it was judged at and the
 * split of the observations, then tail ("" or what the choice was among). */
static void model_why(const tpe_t *x, const split_t *sp, const char *preset, const char *tail,
                      char *why, size_t whylen)
{
    char where[64];
    if (sp->rung >= 0) {
        char num[32];
        snprintf(where, sizeof where, "at rung %s", space_format_number(x->rungs[sp->rung], num));
    } else {
        snprintf(where, sizeof where, "on latest results");
    }
    if (!x->kpath) {
        whyf(why, whylen,
             "TPE (%s) %s from %zu observations (%zu good; bad also %zu ended below, %zu "
             "running)%s",
             preset, where, sp->n_obs, sp->n_good, sp->n_stopped, sp->n_running, tail);
        return;
    }
    /* several objectives (MOTPE) or constraints: the same numbers, and how the good were
     * chosen (whole fronts, then hypervolume subset selection) and how many infeasible */
    char hssp[64] = "", infeasible[48] = "";
    if (x->nobj > 1 && sp->n_hssp > 0)
        snprintf(hssp, sizeof hssp, ", %zu of them by hypervolume subset selection", sp->n_hssp);
    if (x->o.constrained)
        snprintf(infeasible, sizeof infeasible, "; %zu infeasible", sp->n_infeasible);
    whyf(why, whylen,
         "TPE (%s, %s) %s from %zu observations (%zu good%s%s; bad also %zu ended below, %zu "
         "running)%s",
         preset, x->nobj > 1 ? "MOTPE" : "constrained", where, sp->n_obs, sp->n_good, hssp,
         infeasible, sp->n_stopped, sp->n_running, tail);
}

/* Registers the modelled values of a space_sample configuration for trial t. */
static int register_config(tpe_t *x, size_t t, const cJSON *cfg)
{
    double *xi = x->sx;
    for (size_t j = 0; j < x->nd; j++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, x->s->params[x->dims[j].param].name);
        xi[j] = v ? to_internal(x->s, &x->dims[j], v) : NAN;
    }
    register_trial(x, t, xi, config_hash(x, cfg, NULL));
    return 0;
}

/* How many values modelled parameter j has (0: a continuous one), and its k-th value. */
static size_t dim_count(const tpe_t *x, size_t j)
{
    const tdim_t *d = &x->dims[j];
    const space_param_t *P = &x->s->params[d->param];
    switch (d->kind) {
    case SPACE_P_CHOICE:
        return d->ncat;
    case SPACE_P_QUNIFORM:
    case SPACE_P_QRANDINT:
    case SPACE_P_QLOGUNIFORM:
    case SPACE_P_QLOGRANDINT:
        return (size_t)(P->qu.kmax - P->qu.kmin + 1);
    case SPACE_P_RANDINT:
    case SPACE_P_LOGRANDINT:
        return (size_t)(P->ib - P->ia);
    default:
        return 0;
    }
}

static void dim_kth(const tpe_t *x, size_t j, size_t k, double *val, double *xi)
{
    const tdim_t *d = &x->dims[j];
    const space_param_t *P = &x->s->params[d->param];
    if (d->ncat > 0) {
        *val = *xi = (double)k;
        return;
    }
    if (d->kind == SPACE_P_RANDINT || d->kind == SPACE_P_LOGRANDINT)
        *val = (double)(P->ia + (int64_t)k);
    else
        *val = space__quant_value(&P->qu, P->qu.kmin + (int64_t)k);
    *xi = is_log_dim(d) ? log(*val) : *val;
}

/* A node of the enumeration of candidate combinations, best first: idx[j] is parameter j's
 * place in its candidates sorted by score; children raise one place at or after `last`,
 * so that every combination is reached once. */
typedef struct altnode {
    double total;
    size_t first; /* its idx: x->nd entries at this offset of the idx pool */
    size_t last;
} altnode_t;

static void alt_push(altnode_t *h, size_t *n, altnode_t v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2].total < v.total) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static altnode_t alt_pop(altnode_t *h, size_t *n)
{
    altnode_t top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        double mt = v.total;
        if (l < *n && h[l].total > mt) m = l, mt = h[l].total;
        if (r < *n && h[r].total > mt) m = r;
        if (m == i) break;
        h[i] = h[m];
        i = m;
    }
    if (*n) h[i] = v;
    return top;
}

#define ALT_MAX 512 /* combinations of candidates tried before drawing from the prior */
#define PRIOR_DRAWS 64

/* The optuna preset's next best configuration that no trial holds: the suggestion is made
 * again from the same stream with every candidate scored exactly (the same fits, the same
 * candidates), and the combinations of each parameter's distinct candidates are taken in
 * order of their summed score (the acquisition of independent parameters), best first.
 * 1 when found (val, xi, *h set), 0 when ALT_MAX combinations were all trials', -1 without
 * memory. */
static int next_best(tpe_t *x, size_t trial_no, space__rng_t *rng0, const cJSON *cfg, double *val,
                     double *xi, uint64_t *h)
{
    enum { N = OPTUNA_N_EI_CANDIDATES };
    size_t nd = x->nd, nn = 0, nidx = 0, cap = ALT_MAX * (nd + 1) + 1;
    double *buf = malloc(3 * nd * N * sizeof *buf), *tv = malloc(2 * (nd + 1) * sizeof *tv);
    int *ord = malloc(nd * N * sizeof *ord);
    size_t *cnt = calloc(nd + 1, sizeof *cnt), *idx = malloc(cap * nd * sizeof *idx);
    altnode_t *heap = malloc(cap * sizeof *heap);
    int found = -1;
    if (!buf || !tv || !ord || !cnt || !idx || !heap) goto out;
    x->alt_score = buf, x->alt_cv = buf + nd * N, x->alt_cand = buf + 2 * nd * N;
    space__rng_t r = *rng0;
    int rc = space__tpe_suggest_optuna(x, &r, tv, tv + nd + 1, NULL, 0, NULL);
    x->alt_score = x->alt_cv = x->alt_cand = NULL;
    if (rc) goto out;
    /* per parameter: its distinct candidates by score, best first (a NaN last, ties in
     * draw order) */
    for (size_t j = 0; j < nd; j++) {
        const double *sc = buf + j * N, *cand = buf + 2 * nd * N + j * N;
        int *o = ord + j * N;
        for (int c = 0; c < N; c++) {
            int dup = 0;
            for (int e = 0; e < c && !dup; e++)
                dup = cand[e] == cand[c];
            if (dup) continue;
            double k = isnan(sc[c]) ? -INFINITY : sc[c];
            size_t p = cnt[j]++;
            while (p > 0 && (isnan(sc[o[p - 1]]) ? -INFINITY : sc[o[p - 1]]) < k) {
                o[p] = o[p - 1];
                p--;
            }
            o[p] = c;
        }
    }
    double t0 = 0;
    for (size_t j = 0; j < nd; j++) {
        idx[j] = 0;
        t0 += isnan(buf[j * N + ord[j * N]]) ? -1e300 : buf[j * N + ord[j * N]];
    }
    nidx = 1;
    alt_push(heap, &nn, (altnode_t){t0, 0, 0});
    found = 0;
    for (size_t tried = 0; nn > 0 && tried < ALT_MAX && !found; tried++) {
        altnode_t a = alt_pop(heap, &nn);
        const size_t *ix = idx + a.first * nd;
        for (size_t j = 0; j < nd; j++) {
            int c = ord[j * N + ix[j]];
            val[j] = buf[nd * N + j * N + c];
            xi[j] = buf[2 * nd * N + j * N + c];
        }
        uint64_t hh = config_hash(x, cfg, val);
        if (!is_duplicate(x, trial_no, hh)) {
            *h = hh;
            found = 1;
            break;
        }
        for (size_t j = a.last; j < nd && nidx < cap; j++) {
            if (ix[j] + 1 >= cnt[j]) continue;
            size_t *ch = idx + nidx * nd;
            memcpy(ch, ix, nd * sizeof *ch);
            ch[j]++;
            const double *sc = buf + j * N;
            double d0 = sc[ord[j * N + ix[j]]], d1 = sc[ord[j * N + ix[j] + 1]];
            double dt = (isnan(d1) ? -1e300 : d1) - (isnan(d0) ? -1e300 : d0);
            alt_push(heap, &nn, (altnode_t){a.total + dt, nidx, j});
            nidx++;
        }
    }
out:
    free(buf);
    free(tv);
    free(ord);
    free(cnt);
    free(idx);
    free(heap);
    return found;
}

/* A configuration no trial holds, drawn from the prior (every modelled parameter uniform
 * over its range): in a finite space of at most 2^16 modelled combinations every one is
 * visited from a random start, else PRIOR_DRAWS draws. 1 when found (val, xi, *h set); 0
 * when none, *space_size then the finite space's size (0: not finite or too large). */
static int from_prior(tpe_t *x, size_t trial_no, space__rng_t *rng, const cJSON *cfg, double *val,
                      double *xi, uint64_t *h, size_t *space_size)
{
    size_t nd = x->nd, size = 1;
    for (size_t j = 0; j < nd && size; j++) {
        size_t c = dim_count(x, j);
        size = c && size <= ((size_t)1 << 16) / c ? size * c : 0;
    }
    *space_size = size;
    if (size) {
        size_t start = (size_t)space__rng_below(rng, size);
        for (size_t i = 0; i < size; i++) {
            size_t k = (start + i) % size;
            for (size_t j = 0; j < nd; j++) {
                size_t c = dim_count(x, j);
                dim_kth(x, j, k % c, &val[j], &xi[j]);
                k /= c;
            }
            uint64_t hh = config_hash(x, cfg, val);
            if (!is_duplicate(x, trial_no, hh)) return *h = hh, 1;
        }
        return 0;
    }
    for (int a = 0; a < PRIOR_DRAWS; a++) {
        for (size_t j = 0; j < nd; j++) {
            const tdim_t *d = &x->dims[j];
            if (d->ncat > 0) {
                val[j] = xi[j] = (double)space__rng_below(rng, d->ncat);
            } else {
                val[j] = to_value(x->s, d, d->low + space__rng_uniform(rng) * (d->high - d->low));
                xi[j] = is_log_dim(d) ? log(val[j]) : val[j];
            }
        }
        uint64_t hh = config_hash(x, cfg, val);
        if (!is_duplicate(x, trial_no, hh)) return *h = hh, 1;
    }
    return 0;
}

/* The suggestion (val, xi over cfg) is a configuration a trial already holds, trained or
 * running: the next best that no trial holds instead (docs/search.md). note gets what it
 * did. 0, or SPACE_ENOMEM. */
static int avoid_duplicate(tpe_t *x, size_t trial_no, space__rng_t *rng0, space__rng_t *rng,
                           const cJSON *cfg, double *val, double *xi, uint64_t *h, char *note,
                           size_t notelen)
{
    size_t nd = x->nd, size = 0;
    double *keep = malloc(2 * (nd + 1) * sizeof *keep);
    if (!keep) return SPACE_ENOMEM;
    memcpy(keep, val, nd * sizeof *val);
    memcpy(keep + nd + 1, xi, nd * sizeof *xi);
    const char *what;
    int got = rng0 ? next_best(x, trial_no, rng0, cfg, val, xi, h) : 0;
    if (got < 0) {
        free(keep);
        return SPACE_ENOMEM;
    }
    if (got) {
        what = "; its best configuration was a trial's already: the next best of its candidates";
    } else if (from_prior(x, trial_no, rng, cfg, val, xi, h, &size)) {
        what = "; every candidate was a trial's configuration already: drawn from the prior";
    } else {
        memcpy(val, keep, nd * sizeof *val);
        memcpy(xi, keep + nd + 1, nd * sizeof *xi);
        what = size ? "; every configuration of this finite space is a trial's already: it "
                      "repeats one"
                    : "; no configuration that no trial holds in its candidates or 64 draws "
                      "from the prior: it repeats one";
    }
    snprintf(note, notelen, "%s", what);
    free(keep);
    return SPACE_OK;
}

static int tpe_suggest(void *state, size_t trial_no, cJSON **config, char *why, size_t whylen,
                       char *err, size_t errlen)
{
    tpe_t *x = state;
    cJSON *cfg = NULL;
    int rc = space_sample(x->s, trial_no, &cfg, err, errlen);
    if (rc) return rc;
    const char *preset = x->o.preset == SPACE_TPE_OPTUNA ? "optuna" : "bohb";
    if (space__tpe_grow(x, trial_no)) goto nomem;
    size_t nd = x->nd, most = 0;
    double *val = x->sv, *xi = x->sx;
    split_t sp = {0};
    space__rng_t rng;
    space__rng_seed(&rng, x->o.seed, trial_no);
    int ready = nd > 0 ? space__tpe_choose_split(x, trial_no, &sp, &most) : 0;
    if (ready < 0) goto nomem;
    int model = 0;
    if (random_turn(x, ready, most, &rng, why, whylen)) {
        /* drawn from the prior below */
    } else if (x->o.preset == SPACE_TPE_BOHB) {
        model = space__tpe_suggest_bohb(x, &rng, val, xi, &rc);
        if (rc) goto nomem;
        if (!model) whyf(why, whylen, "random: BOHB's KDE needs more points than parameters");
    }
    space__rng_t rng0 = rng; /* the optuna preset's draws, for a duplicate's next best */
    if (ready && nd > 0 && x->o.preset == SPACE_TPE_OPTUNA) {
        if (space__tpe_suggest_optuna(x, &rng, val, xi, NULL, 0, NULL)) goto nomem;
        model = 1;
    }
    uint64_t h = config_hash(x, cfg, model ? val : NULL);
    int moved = 0;
    char note[160] = "";
    if (nd > 0 && is_duplicate(x, trial_no, h)) {
        /* a configuration no trial holds, if there is one (docs/search.md): TPE on a space
         * of choices would otherwise propose its best one again and again */
        if (!model)
            for (size_t j = 0; j < nd; j++) {
                const cJSON *v =
                    cJSON_GetObjectItemCaseSensitive(cfg, x->s->params[x->dims[j].param].name);
                xi[j] = to_internal(x->s, &x->dims[j], v);
                val[j] = x->dims[j].ncat > 0 ? xi[j] : v->valuedouble;
            }
        if (avoid_duplicate(x, trial_no, model && x->o.preset == SPACE_TPE_OPTUNA ? &rng0 : NULL,
                            &rng, cfg, val, xi, &h, note, sizeof note))
            goto nomem;
        moved = 1;
    }
    if (model || moved) {
        if (model) model_why(x, &sp, preset, "", why, whylen);
        for (size_t j = 0; j < nd; j++) {
            const tdim_t *d = &x->dims[j];
            const space_param_t *P = &x->s->params[d->param];
            cJSON *v = d->ncat > 0 ? cJSON_Duplicate(cJSON_GetArrayItem(P->values, (int)val[j]), 1)
                                   : cJSON_CreateNumber(val[j]);
            if (!v || !cJSON_ReplaceItemInObjectCaseSensitive(cfg, P->name, v)) {
                cJSON_Delete(v);
                goto nomem;
            }
        }
        register_trial(x, trial_no, xi, h);
    } else {
        register_config(x, trial_no, cfg);
    }
    if (moved && why) {
        size_t k = strlen(why);
        if (k < whylen) snprintf(why + k, whylen - k, "%s", note);
    }
    *config = cfg;
    return SPACE_OK;
nomem:
    cJSON_Delete(cfg);
    errf(err, errlen, "%s", "out of memory");
    return SPACE_ENOMEM;
}

/* The pool protocol (docs/simulate.md): the candidates scored by the acquisition a
 * suggestion maximises over its own draws, the best taken (the first on ties), as the
 * tabular benchmarks' TPE baselines do; until the model is ready (and for BOHB's random
 * fraction) a uniform one, the one random search would take. */
/* "pool": "propose" (experimental, issue 29): what a suggestion proposes (its 24 draws from
 * l, the best l/g of them), answered by the nearest unused row and then told that row, as
 * bench/search replays Optuna's TPE under the pool protocol; the argmax over the whole pool
 * (below) concentrates on one region of it. */
static int tpe_choose_propose(tpe_t *x, size_t trial_no, const cJSON *const *cands, size_t n,
                              size_t *chosen, char *why, size_t whylen, char *err, size_t errlen)
{
    cJSON *want = NULL;
    int rc = tpe_suggest(x, trial_no, &want, why, whylen, err, errlen);
    if (rc) return rc;
    size_t best = space__searcher_nearest(x->s, want, cands, n);
    cJSON_Delete(want);
    rc = tpe_add_trial(x, trial_no, cands[best], err, errlen);
    if (rc) return rc;
    size_t k = why ? strlen(why) : 0;
    if (why && k < whylen)
        snprintf(why + k, whylen - k, "; the nearest of %zu unused in the pool", n);
    *chosen = best;
    return SPACE_OK;
}

static int tpe_choose(void *state, size_t trial_no, const cJSON *const *cands, size_t n,
                      size_t *chosen, char *why, size_t whylen, char *err, size_t errlen)
{
    tpe_t *x = state;
    /* "pool": "propose" (experimental; 30 seeds measured it level with scoring:
     * docs/search.md) */
    if (x->pool & SPACE_TPE_POOL_PROPOSE)
        return tpe_choose_propose(x, trial_no, cands, n, chosen, why, whylen, err, errlen);
    const char *preset = x->o.preset == SPACE_TPE_OPTUNA ? "optuna" : "bohb";
    size_t nd = x->nd, most = 0;
    if (space__tpe_grow(x, trial_no)) goto nomem;
    if (n > x->npool_cap) {
        size_t w = nd ? nd : 1;
        double *px = realloc(x->pool_x, n * w * sizeof *px);
        if (px) x->pool_x = px;
        double *lg = px ? realloc(x->pool_lg, n * w * sizeof *lg) : NULL;
        if (lg) x->pool_lg = lg;
        double *lb = lg ? realloc(x->pool_lb, n * w * sizeof *lb) : NULL;
        if (lb) x->pool_lb = lb;
        double *hi = lb ? realloc(x->pool_hi, n * sizeof *hi) : NULL;
        if (hi) x->pool_hi = hi;
        size_t *ord = hi ? realloc(x->pool_ord, n * sizeof *ord) : NULL;
        if (ord) x->pool_ord = ord;
        size_t nm = 64;
        while (nm <= 2 * n)
            nm *= 2;
        size_t *memo = ord ? realloc(x->pool_memo, nm * sizeof *memo) : NULL;
        if (!memo) goto nomem;
        x->pool_memo = memo;
        x->pool_nmemo = nm;
        x->npool_cap = n;
    }
    if (!x->pool_later && !(x->pool_later = calloc(nd + 1, 1))) goto nomem;
    double *px = x->pool_x;
    for (size_t c = 0; c < n; c++)
        for (size_t j = 0; j < nd; j++) {
            const char *name = x->s->params[x->dims[j].param].name;
            px[c * nd + j] =
                to_internal(x->s, &x->dims[j], cJSON_GetObjectItemCaseSensitive(cands[c], name));
        }
    split_t sp = {0};
    space__rng_t rng;
    space__rng_seed(&rng, x->o.seed, trial_no);
    int ready = nd > 0 ? space__tpe_choose_split(x, trial_no, &sp, &most) : 0;
    if (ready < 0) goto nomem;
    size_t pick = 0;
    int model = 0, rc = 0;
    if (random_turn(x, ready, most, &rng, why, whylen)) {
        /* the row random would take, below */
    } else if (x->o.preset == SPACE_TPE_BOHB) {
        model = space__tpe_choose_bohb(x, px, n, &pick, &rc);
        if (rc) goto nomem;
        if (!model) whyf(why, whylen, "random: BOHB's KDE needs more points than parameters");
    } else {
        memset(x->pool_hi, 0, n * sizeof *x->pool_hi);
        if (space__tpe_suggest_optuna(x, &rng, NULL, NULL, px, n, &pick)) goto nomem;
        model = 1;
    }
    if (model) {
        char pool[64];
        snprintf(pool, sizeof pool, "; the best of %zu unused in the pool", n);
        model_why(x, &sp, preset, pool, why, whylen);
    } else {
        pick = space__searcher_pick_uniform(x->o.seed, trial_no, n);
        size_t k = why ? strlen(why) : 0;
        if (why && k < whylen) snprintf(why + k, whylen - k, "; one of %zu unused in the pool", n);
    }
    register_trial(x, trial_no, px + pick * nd, config_hash(x, cands[pick], NULL));
    *chosen = pick;
    return SPACE_OK;
nomem:
    errf(err, errlen, "%s", "out of memory");
    return SPACE_ENOMEM;
}

static const char *tpe_label(const space_settings_t *set)
{
    if (set->search_preset == SPACE_TPE_BOHB) return "TPE (bohb)";
    return set->nobjectives > 1 ? "TPE (optuna, MOTPE)" : "TPE (optuna)";
}

const space__searcher_ops_t space__searcher_tpe = {
    .name = "tpe",
    .adaptive = 1,
    .label = tpe_label,
    .create = tpe_create,
    .free = tpe_free,
    .set_rungs = tpe_set_rungs,
    .set_pool = tpe_set_pool,
    .observe = tpe_observe,
    .observe_k = tpe_observe_k,
    .trial_end = tpe_trial_end,
    .add_trial = tpe_add_trial,
    .suggest = tpe_suggest,
    .choose = tpe_choose,
};
