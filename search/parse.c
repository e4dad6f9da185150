/* search/parse.c: the top level of space.json and its parameters: "space" with every
 * distribution and nested space checked, PBT's "hyperparam_mutations", the grid's layout
 * and "points_to_evaluate", each message at FILE:LINE:COL. Not for: the settings sections
 * (settings.c), the command's placeholders (placeholders.c), the space_t's lifetime and
 * accessors (space.c), sampling (sample.c) or argv (render.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/parse_int.h"
#include "search/render.h"

/* ---- distributions ------------------------------------------------------------------- */
static int is_int_kind(space_pkind_t k)
{
    return k == SPACE_P_RANDINT || k == SPACE_P_QRANDINT || k == SPACE_P_LOGRANDINT ||
           k == SPACE_P_QLOGRANDINT;
}

static int is_q_kind(space_pkind_t k)
{
    return k == SPACE_P_QUNIFORM || k == SPACE_P_QLOGUNIFORM || k == SPACE_P_QRANDN ||
           k == SPACE_P_QRANDINT || k == SPACE_P_QLOGRANDINT;
}

/* Finds q's short decimal form: q = qscaled / 10^d for the smallest d <= 15 for which
 * that division gives q back exactly. */
static void quant_digits(space_quant_t *qu)
{
    qu->qdigits = -1;
    double p10 = 1;
    for (int d = 0; d <= 15; d++, p10 *= 10) {
        double s = nearbyint(qu->q * p10);
        if (s >= 1 && s < SPACE_MAX_EXACT && s / p10 == qu->q) {
            qu->qdigits = d;
            qu->qscaled = (int64_t)s;
            return;
        }
    }
}

/* The multiples k*q inside [low, high]: kmin = ceil(low/q), kmax = floor(high/q), with a
 * relative tolerance so that 0.7/0.1 = 6.999999999999999 still counts 0.7 in. */
static int quant_range(struct space__parse_ctx *c, const sj_node_t *args,
                       const struct space__parse_dist *d, space_quant_t *qu, double low,
                       double high)
{
    double lo = low / qu->q, hi = high / qu->q;
    if (fabs(lo) > SPACE_MAX_EXACT / 4 || fabs(hi) > SPACE_MAX_EXACT / 4)
        return space__parse_at(c, space__json_at(args, 2)->off,
                               "\"%s\": q is too small for the range (more than 2^51 multiples)",
                               d->name);
    double kmin = ceil(lo - 1e-9 * fmax(1, fabs(lo)));
    double kmax = floor(hi + 1e-9 * fmax(1, fabs(hi)));
    if (kmin > kmax)
        return space__parse_at(c, args->off, "\"%s\" has no multiple of q in [low, high]", d->name);
    qu->kmin = (int64_t)kmin;
    qu->kmax = (int64_t)kmax;
    return 0;
}

static int parse_dist(struct space__parse_ctx *c, space_param_t *P,
                      const struct space__parse_dist *d, const sj_node_t *args)
{
    P->kind = d->kind;
    if (d->kind == SPACE_P_CHOICE || d->kind == SPACE_P_GRID) {
        if (args->type != SJ_ARRAY)
            return space__parse_at(c, args->off,
                                   "\"%s\" takes a list of values, such as {\"%s\": [16, 32]}",
                                   d->name, d->name);
        if (args->n == 0)
            return space__parse_at(c, args->off, "\"%s\" needs at least one value", d->name);
        P->values = space__json_to_cjson(args);
        if (!P->values) return space__parse_nomem(c->err, c->errlen);
        P->nvalues = args->n;
        return 0;
    }
    if (args->type != SJ_ARRAY || args->n < (size_t)d->nmin || args->n > (size_t)d->nmax)
        return space__parse_at(c, args->off, "\"%s\" takes %s", d->name, d->sig);
    double v[4] = {0};
    size_t i = 0;
    for (const sj_node_t *e = args->child; e; e = e->next, i++) {
        if (e->type != SJ_NUMBER)
            return space__parse_at(c, e->off, "\"%s\": %s must be a number, not %s", d->name,
                                   d->args[i], space__parse_type_name(e));
        v[i] = e->num;
    }
    const sj_node_t *e0 = space__json_at(args, 0), *e1 = space__json_at(args, 1);
    const sj_node_t *e2 = space__json_at(args, 2), *e3 = space__json_at(args, 3);

    if (d->kind == SPACE_P_RANDN || d->kind == SPACE_P_QRANDN) {
        if (!(v[1] > 0)) return space__parse_at(c, e1->off, "\"%s\" needs sd > 0", d->name);
        P->a = v[0];
        P->b = v[1];
        if (d->kind == SPACE_P_QRANDN) {
            if (!(v[2] > 0)) return space__parse_at(c, e2->off, "\"%s\" needs q > 0", d->name);
            P->qu.q = v[2];
            quant_digits(&P->qu);
        }
        return 0;
    }

    /* Everything else is a range [low, high] with optional q and base. */
    double low = v[0], high = v[1];
    int has_q = is_q_kind(d->kind);
    const sj_node_t *eq = has_q ? e2 : NULL;
    const sj_node_t *ebase = has_q ? e3 : e2;
    if (is_int_kind(d->kind)) {
        const sj_node_t *e[2] = {e0, e1};
        for (int i = 0; i < 2; i++) {
            if (v[i] != floor(v[i]))
                return space__parse_at(c, e[i]->off, "\"%s\" needs whole-number bounds (%s is %s)",
                                       d->name, d->args[i], e[i]->raw);
            if (fabs(v[i]) > SPACE_MAX_EXACT)
                return space__parse_at(c, e[i]->off, "\"%s\" bounds must be within -2^53..2^53",
                                       d->name);
        }
    }
    if (!(low < high)) return space__parse_at(c, args->off, "\"%s\" needs low < high", d->name);
    if (space__is_log_kind(d->kind) && is_int_kind(d->kind) && low < 1)
        return space__parse_at(c, e0->off, "\"%s\" needs low >= 1", d->name);
    if (space__is_log_kind(d->kind) && !(low > 0))
        return space__parse_at(c, e0->off, "\"%s\" needs low > 0", d->name);
    if (eq) {
        if (!(v[2] > 0)) return space__parse_at(c, eq->off, "\"%s\" needs q > 0", d->name);
        if (is_int_kind(d->kind) && (v[2] != floor(v[2]) || v[2] > SPACE_MAX_EXACT))
            return space__parse_at(c, eq->off, "\"%s\" needs a whole-number q", d->name);
    }
    P->base = 10;
    if (ebase) {
        if (!(ebase->num > 0) || ebase->num == 1)
            return space__parse_at(c, ebase->off, "\"%s\" needs base > 0 and base != 1", d->name);
        P->base = ebase->num;
    }
    P->a = low;
    P->b = high;
    /* Only the randint family has integer bounds, checked above to lie within 2^53;
     * converting another kind's (a loguniform up to 1e300) would be undefined. */
    if (is_int_kind(d->kind)) {
        P->ia = (int64_t)low;
        P->ib = (int64_t)high;
    }
    if (eq) {
        P->qu.q = v[2];
        quant_digits(&P->qu);
        int rc = quant_range(c, args, d, &P->qu, low, high);
        if (rc) return rc;
    }
    return 0;
}

/* ---- nested spaces ----------------------------------------------------------------
 * A value inside a parameter (a member of an object, a value of a choice or grid_search)
 * is a distribution when it is an object with exactly one key and that key names one;
 * an object with a distribution somewhere inside is a nested space, sampled member by
 * member; anything else is a constant, copied as written (as before nested spaces). */

/* Where a node sits: its top-level parameter's position, its path of keys (for its random
 * stream and, for a grid, Ray's sort order), and whether it lies inside a choice or
 * grid_search value, where a grid_search would make the trial count depend on a draw. */
struct nest {
    size_t p;
    const char *rel;   /* path below the parameter: ".key" per member, "[]" per value */
    const char *gpath; /* path from "space": keys separated by NUL bytes */
    size_t glen;
    int in_branch;
};

static const struct space__parse_dist *dist_named(const char *key)
{
    for (size_t i = 0; i < SPACE__PARSE_NDISTS; i++)
        if (strcmp(key, space__parse_dists[i].name) == 0) return &space__parse_dists[i];
    return NULL;
}

/* The distribution v is, when v is an object with one key that names one. */
static const struct space__parse_dist *dist_of(const sj_node_t *v)
{
    return v->type == SJ_OBJECT && v->n == 1 ? dist_named(v->child->key) : NULL;
}

/* The first distribution object inside v (v itself included), or NULL. The JSON reader
 * limits nesting, so the recursion is bounded. */
static const sj_node_t *find_dist(const sj_node_t *v)
{
    if (dist_of(v)) return v;
    if (v->type != SJ_OBJECT && v->type != SJ_ARRAY) return NULL;
    for (const sj_node_t *m = v->child; m; m = m->next) {
        const sj_node_t *d = find_dist(m);
        if (d) return d;
    }
    return NULL;
}

/* The first single-key object inside v whose key is a misspelt distribution name and
 * whose value is an array ({"unifrom": [0, 1]}), which is a typo far more often than a
 * constant; NULL when there is none. Writes the did-you-mean into dym. */
static const sj_node_t *find_misspelt(const sj_node_t *v, char *dym, size_t len)
{
    if (v->type == SJ_OBJECT && v->n == 1 && v->child->type == SJ_ARRAY) {
        const char *names[SPACE__PARSE_NDISTS];
        for (size_t i = 0; i < SPACE__PARSE_NDISTS; i++)
            names[i] = space__parse_dists[i].name;
        if (space__parse_did_you_mean(v->child->key, names, SPACE__PARSE_NDISTS, dym, len)[0])
            return v->child;
    }
    if (v->type != SJ_OBJECT && v->type != SJ_ARRAY) return NULL;
    for (const sj_node_t *m = v->child; m; m = m->next) {
        const sj_node_t *t = find_misspelt(m, dym, len);
        if (t) return t;
    }
    return NULL;
}

/* The random stream of a node below the top: FNV-1a of its path, mixed with the
 * parameter's position (splitmix64's finaliser), never a small number like the
 * positions the top-level parameters use. */
static uint64_t path_key(size_t p, const char *rel)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *q = (const unsigned char *)rel; *q; q++)
        h = (h ^ *q) * 0x100000001b3ULL;
    h ^= ((uint64_t)p + 1) * SPACE__GOLDEN;
    return space__mix64(h) | (1ULL << 63);
}

/* A child's place: rel + suffix, gpath + NUL + key (key NULL: a value, same gpath). */
static int nest_child(struct space__parse_ctx *c, const struct nest *nx, const char *key,
                      struct nest *out, char **rel_buf, char **gpath_buf)
{
    const char *suffix = key ? key : "[]";
    size_t rl = strlen(nx->rel), sl = strlen(suffix), kl = key ? strlen(key) : 0;
    *rel_buf = malloc(rl + sl + 2);
    *gpath_buf = malloc(nx->glen + kl + 2);
    if (!*rel_buf || !*gpath_buf) {
        free(*rel_buf);
        free(*gpath_buf);
        return space__parse_nomem(c->err, c->errlen);
    }
    snprintf(*rel_buf, rl + sl + 2, "%s%s%s", nx->rel, key ? "." : "", suffix);
    memcpy(*gpath_buf, nx->gpath, nx->glen);
    size_t gl = nx->glen;
    if (key) {
        (*gpath_buf)[gl++] = '\0';
        memcpy(*gpath_buf + gl, key, kl);
        gl += kl;
    }
    (*gpath_buf)[gl] = '\0';
    *out = (struct nest){.p = nx->p,
                         .rel = *rel_buf,
                         .gpath = *gpath_buf,
                         .glen = gl,
                         .in_branch = nx->in_branch || !key};
    return 0;
}

static int parse_node(struct space__parse_ctx *c, space_param_t *P, const sj_node_t *v,
                      const struct nest *nx);

static int child_node(struct space__parse_ctx *c, space_param_t *P, const sj_node_t *v,
                      const struct nest *nx, const char *key)
{
    struct nest cn;
    char *rel = NULL, *gp = NULL;
    int rc = nest_child(c, nx, key, &cn, &rel, &gp);
    if (rc) return rc;
    if (key && !(P->name = strdup(key)))
        rc = space__parse_nomem(c->err, c->errlen);
    else
        rc = parse_node(c, P, v, &cn);
    free(rel);
    free(gp);
    return rc;
}

/* A distribution node: its arguments, then, for a choice or grid_search whose values hold
 * distributions, one node per value. */
static int parse_distribution(struct space__parse_ctx *c, space_param_t *P,
                              const struct space__parse_dist *d, const sj_node_t *dn,
                              const struct nest *nx)
{
    P->rkey = nx->rel[0] ? path_key(nx->p, nx->rel) : (uint64_t)nx->p;
    if (d->kind == SPACE_P_GRID && nx->in_branch)
        return space__parse_at(
            c, dn->key_off,
            "\"grid_search\" inside a value of \"choice\" or \"grid_search\" is not "
            "supported (the number of trials would depend on the value drawn): use "
            "\"choice\" here, or list the combinations in the outer grid_search");
    int rc = parse_dist(c, P, d, dn);
    if (rc) return rc;
    if (d->kind == SPACE_P_GRID) {
        if (!(P->gpath = malloc(nx->glen + 1))) return space__parse_nomem(c->err, c->errlen);
        memcpy(P->gpath, nx->gpath, nx->glen + 1);
        P->gpath_len = nx->glen;
    }
    if (d->kind != SPACE_P_CHOICE && d->kind != SPACE_P_GRID) return 0;
    if (!find_dist(dn)) {
        char dym[128], q[80];
        const sj_node_t *typo = find_misspelt(dn, dym, sizeof dym);
        if (typo)
            return space__parse_at(c, typo->key_off, "unknown distribution %s%s",
                                   space__parse_quoted(typo->key, q, sizeof q), dym);
        return 0;
    }
    if (!(P->alts = calloc(P->nvalues, sizeof *P->alts)))
        return space__parse_nomem(c->err, c->errlen);
    size_t i = 0;
    for (const sj_node_t *e = dn->child; e; e = e->next, i++)
        if ((rc = child_node(c, &P->alts[i], e, nx, NULL))) return rc;
    return 0;
}

/* An object with distributions inside: one node per member. */
static int parse_object(struct space__parse_ctx *c, space_param_t *P, const sj_node_t *v,
                        const struct nest *nx)
{
    P->kind = SPACE_P_OBJECT;
    P->rkey = nx->rel[0] ? path_key(nx->p, nx->rel) : (uint64_t)nx->p;
    if (!(P->members = calloc(v->n, sizeof *P->members)))
        return space__parse_nomem(c->err, c->errlen);
    for (const sj_node_t *m = v->child; m; m = m->next) {
        int rc = child_node(c, &P->members[P->nmembers++], m, nx, m->key);
        if (rc) return rc;
    }
    return 0;
}

/* A value with no distribution inside, copied as written, unless it holds a misspelt one. */
static int constant_node(struct space__parse_ctx *c, space_param_t *P, const sj_node_t *v,
                         const struct nest *nx)
{
    char dym[128], q[80];
    const sj_node_t *typo = find_misspelt(v, dym, sizeof dym);
    if (typo)
        return space__parse_at(c, typo->key_off, "unknown distribution %s%s",
                               space__parse_quoted(typo->key, q, sizeof q), dym);
    P->kind = SPACE_P_CONSTANT;
    P->rkey = nx->rel[0] ? path_key(nx->p, nx->rel) : (uint64_t)nx->p;
    P->values = space__json_to_cjson(v);
    return P->values ? 0 : space__parse_nomem(c->err, c->errlen);
}

/* An array is a constant, copied as written: a distribution inside one would reach the
 * trial as its JSON text ({"uniform": [0, 1]}), never drawn. */
static int dist_in_array(struct space__parse_ctx *c, const sj_node_t *inner)
{
    return space__parse_at(c, inner->off,
                           "a distribution inside an array is not sampled: put it in an object (a "
                           "nested space) or make the array a value of \"choice\"");
}

static int parse_node(struct space__parse_ctx *c, space_param_t *P, const sj_node_t *v,
                      const struct nest *nx)
{
    const struct space__parse_dist *d = dist_of(v);
    if (d) return parse_distribution(c, P, d, v->child, nx);
    const sj_node_t *inner = find_dist(v);
    if (!inner) return constant_node(c, P, v, nx);
    if (inner && v->type == SJ_ARRAY) return dist_in_array(c, inner);
    return parse_object(c, P, v, nx);
}

static int parse_param(struct space__parse_ctx *c, space_param_t *P, const sj_node_t *v, size_t p)
{
    char q[80];
    if (!*v->key) return space__parse_at(c, v->key_off, "parameter name is empty");
    if (strchr(v->key, '{') || strchr(v->key, '}'))
        return space__parse_at(c, v->key_off, "parameter name %s cannot contain '{' or '}'",
                               space__parse_quoted(v->key, q, sizeof q));
    if (strcmp(v->key, "trial_id") == 0 || strcmp(v->key, "trial_dir") == 0)
        return space__parse_at(c, v->key_off,
                               "parameter name \"%s\" is reserved for the {%s} placeholder", v->key,
                               v->key);
    if (space__parse_dup_str(&P->name, v->key, c->err, c->errlen)) return SPACE_ENOMEM;
    /* The top level keeps the stream of the parameter's position, as flat spaces always
     * had, so their configurations do not change. */
    const struct nest top = {
        .p = p, .rel = "", .gpath = v->key, .glen = strlen(v->key), .in_branch = 0};
    P->rkey = (uint64_t)p;
    if (v->type != SJ_OBJECT) {
        const sj_node_t *inner = v->type == SJ_ARRAY ? find_dist(v) : NULL;
        if (inner) return dist_in_array(c, inner);
        P->kind = SPACE_P_CONSTANT;
        P->values = space__json_to_cjson(v);
        return P->values ? 0 : space__parse_nomem(c->err, c->errlen);
    }
    if (v->n == 0)
        return space__parse_at(
            c, v->off,
            "parameter %s is an empty object: give a constant or one distribution, such "
            "as {\"uniform\": [0, 1]}",
            space__parse_quoted(v->key, q, sizeof q));
    const sj_node_t *dn = v->child;
    const struct space__parse_dist *d = dist_named(dn->key);
    if (!d) {
        const char *names[SPACE__PARSE_NDISTS];
        for (size_t i = 0; i < SPACE__PARSE_NDISTS; i++)
            names[i] = space__parse_dists[i].name;
        char dym[128], q2[80];
        space__parse_did_you_mean(dn->key, names, SPACE__PARSE_NDISTS, dym, sizeof dym);
        /* An object of distributions is a nested space; a lone misspelt distribution
         * name, or an object with none inside, is still the mistake it always was. */
        if (!(v->n == 1 && dym[0]) && find_dist(v)) return parse_object(c, P, v, &top);
        return space__parse_at(c, dn->key_off, "unknown distribution %s%s",
                               space__parse_quoted(dn->key, q2, sizeof q2), dym);
    }
    if (v->n > 1) {
        char q2[80];
        return space__parse_at(
            c, dn->next->key_off,
            "parameter %s must have exactly one distribution key; %s is one too many",
            space__parse_quoted(v->key, q, sizeof q),
            space__parse_quoted(dn->next->key, q2, sizeof q2));
    }
    return parse_distribution(c, P, d, dn, &top);
}

/* ---- the file's top level ---------------------------------------------------------------- */
static const char *const top_keys[] = {"name",
                                       "metric",
                                       "mode",
                                       "num_samples",
                                       "max_concurrent",
                                       "seed",
                                       "command",
                                       "resources",
                                       "scheduler",
                                       "space",
                                       "executor",
                                       "stop_grace_s",
                                       "status_interval_s",
                                       "result_timeout_s",
                                       "time_budget_s",
                                       "trial_time_limit_s",
                                       "max_failures",
                                       "fail_fast",
                                       "allow_missing_metric",
                                       "stop",
                                       "stop_experiment_on_target",
                                       "reporter",
                                       "search",
                                       "points_to_evaluate",
                                       "constraints"};

static int parse_space_params(struct space__parse_ctx *c, space_t *sp, const sj_node_t *n)
{
    if (!n) return 0;
    if (n->type != SJ_OBJECT)
        return space__parse_at(c, n->off, "\"space\" must be an object of parameter names");
    sp->params = calloc(n->n ? n->n : 1, sizeof *sp->params);
    if (!sp->params) return space__parse_nomem(c->err, c->errlen);
    for (const sj_node_t *m = n->child; m; m = m->next) {
        size_t p = sp->nparams++; /* counted first, so space_free frees a half-parsed one */
        int rc = parse_param(c, &sp->params[p], m, p);
        if (rc) return rc;
    }
    return 0;
}

/* Population Based Training's "hyperparam_mutations": each key a top-level parameter of
 * the space (not a grid_search one), each value a distribution in the space's syntax or a
 * list of values (Ray Tune's categorical mutation). Without it, every top-level parameter
 * that is a distribution other than grid_search is mutated, with its own distribution.
 * The i-th mutation keeps the random stream of its parameter's position. */
static int parse_mutations(struct space__parse_ctx *c, space_t *sp, const sj_node_t *n)
{
    char q[80];
    if (!n) return 0;
    sp->muts = calloc(n->n, sizeof *sp->muts);
    sp->mut_pos = calloc(n->n, sizeof *sp->mut_pos);
    if (!sp->muts || !sp->mut_pos) return space__parse_nomem(c->err, c->errlen);
    for (const sj_node_t *m = n->child; m; m = m->next) {
        size_t p = 0;
        while (p < sp->nparams && strcmp(sp->params[p].name, m->key) != 0)
            p++;
        if (p == sp->nparams) {
            const char *names[256];
            size_t nn = 0;
            for (size_t i = 0; i < sp->nparams && nn < 256; i++)
                names[nn++] = sp->params[i].name;
            char dym[128];
            space__parse_did_you_mean(m->key, names, nn, dym, sizeof dym);
            return space__parse_at(
                c, m->key_off,
                "hyperparam_mutations: %s is not a parameter of \"space\"%s (a mutation "
                "changes a parameter the trial already has)",
                space__parse_quoted(m->key, q, sizeof q), dym);
        }
        if (sp->params[p].kind == SPACE_P_GRID)
            return space__parse_at(
                c, m->key_off,
                "hyperparam_mutations: %s is a grid_search parameter, which PBT leaves as "
                "the grid set it; mutate another parameter",
                space__parse_quoted(m->key, q, sizeof q));
        space_param_t *P = &sp->muts[sp->nmuts];
        sp->mut_pos[sp->nmuts++] = p;
        if (m->type == SJ_ARRAY) {
            if (m->n == 0)
                return space__parse_at(c, m->off,
                                       "hyperparam_mutations: %s needs at least one value",
                                       space__parse_quoted(m->key, q, sizeof q));
            for (const sj_node_t *e = m->child; e; e = e->next)
                if (e->type == SJ_OBJECT || e->type == SJ_ARRAY)
                    return space__parse_at(
                        c, e->off,
                        "hyperparam_mutations: the values of %s must be plain numbers, "
                        "strings or booleans",
                        space__parse_quoted(m->key, q, sizeof q));
            if (space__parse_dup_str(&P->name, m->key, c->err, c->errlen)) return SPACE_ENOMEM;
            P->kind = SPACE_P_CHOICE;
            P->values = space__json_to_cjson(m);
            P->nvalues = m->n;
            P->rkey = (uint64_t)p;
            if (!P->values) return space__parse_nomem(c->err, c->errlen);
            continue;
        }
        if (m->type != SJ_OBJECT)
            return space__parse_at(
                c, m->off,
                "hyperparam_mutations: %s must be a distribution such as {\"loguniform\": "
                "[0.0001, 0.1]} or a list of values",
                space__parse_quoted(m->key, q, sizeof q));
        int rc = parse_param(c, P, m, p);
        if (rc) return rc;
        if (P->kind == SPACE_P_GRID || P->kind == SPACE_P_OBJECT || P->kind == SPACE_P_CONSTANT ||
            P->alts)
            return space__parse_at(
                c, m->off,
                "hyperparam_mutations: %s must be one distribution (uniform, loguniform, "
                "randint, choice of plain values, ...), not a grid_search or a nested space",
                space__parse_quoted(m->key, q, sizeof q));
    }
    return 0;
}

/* By path, as Ray sorts its path tuples: for top-level names this is strcmp's order. */
static int cmp_grid(const void *a, const void *b)
{
    const space_param_t *x = *(space_param_t *const *)a, *y = *(space_param_t *const *)b;
    size_t n = x->gpath_len < y->gpath_len ? x->gpath_len : y->gpath_len;
    int r = memcmp(x->gpath, y->gpath, n);
    if (r) return r;
    return x->gpath_len < y->gpath_len ? -1 : x->gpath_len > y->gpath_len;
}

/* Collects the grid nodes of P's tree into g (grids never sit inside choice values). */
static void collect_grids(space_param_t *P, space_param_t **g, size_t *ng)
{
    if (P->kind == SPACE_P_GRID) g[(*ng)++] = P;
    for (size_t m = 0; m < P->nmembers; m++)
        collect_grids(&P->members[m], g, ng);
}

static size_t count_grids(const space_param_t *P)
{
    size_t n = P->kind == SPACE_P_GRID;
    for (size_t m = 0; m < P->nmembers; m++)
        n += count_grids(&P->members[m]);
    return n;
}

/* Grid strides as Ray Tune's BasicVariantGenerator lays them out: grid parameters sorted
 * by name (parse_spec_vars sorts grid_vars), the first one changing fastest
 * (_grid_search_generator increments index 0 first). */
static int layout_grid(struct space__parse_ctx *c, space_t *sp, const sj_node_t *space_node,
                       long long num_samples)
{
    size_t total = 0, ng = 0;
    for (size_t i = 0; i < sp->nparams; i++)
        total += count_grids(&sp->params[i]);
    space_param_t **g = calloc(total ? total : 1, sizeof *g);
    if (!g) return space__parse_nomem(c->err, c->errlen);
    for (size_t i = 0; i < sp->nparams; i++)
        collect_grids(&sp->params[i], g, &ng);
    qsort(g, ng, sizeof *g, cmp_grid);
    size_t points = 1;
    int too_many = 0;
    for (size_t i = 0; i < ng; i++) {
        g[i]->grid_stride = points;
        if (g[i]->nvalues > SPACE_MAX_TRIALS / points)
            too_many = 1;
        else
            points *= g[i]->nvalues;
    }
    free(g);
    if (too_many || (size_t)num_samples > SPACE_MAX_TRIALS / points)
        return space__parse_at(
            c, space_node ? space_node->key_off : 0,
            "more than %u trials (num_samples x grid points); split the experiment",
            SPACE_MAX_TRIALS);
    sp->n_grid_points = points;
    sp->num_trials = points * (size_t)num_samples;
    return 0;
}

/* ---- "points_to_evaluate" ---------------------------------------------------------------- */
/* Whether value v (at node n of the file) belongs to top-level parameter P: a value a
 * choice or grid_search lists, the constant itself, a number within a range (a whole
 * number for the integer kinds). Returns 0 or a located error naming the point and the
 * parameter. */
static int check_point_value(struct space__parse_ctx *c, const space_t *sp, size_t i, size_t k,
                             const sj_node_t *n, const cJSON *v)
{
    const space_param_t *P = &sp->params[i];
    const char *kind = space__parse_kind_name(P->kind);
    if (P->kind == SPACE_P_OBJECT)
        return space__parse_at(
            c, n->off,
            "points_to_evaluate[%zu].%s: a nested parameter cannot be given in a point "
            "yet; leave it out (the searcher chooses it)",
            k, P->name);
    if (P->kind == SPACE_P_CHOICE || P->kind == SPACE_P_GRID || P->kind == SPACE_P_CONSTANT) {
        double u;
        if (space_param_unit(sp, i, v, &u) == 0) return 0;
        char *lst = space_json_print(P->values);
        int rc = space__parse_at(
            c, n->off, "points_to_evaluate[%zu].%s: %s is not a value of the %s %s", k, P->name,
            n->type == SJ_STRING ? "this string" : "this value", kind, lst ? lst : "");
        free(lst);
        return rc;
    }
    if (n->type != SJ_NUMBER || !isfinite(n->num))
        return space__parse_at(c, n->off,
                               "points_to_evaluate[%zu].%s must be a number (%s), not %s", k,
                               P->name, kind, space__parse_type_name(n));
    double x = n->num;
    if (P->kind == SPACE_P_RANDN || P->kind == SPACE_P_QRANDN) return 0;
    if (is_int_kind(P->kind) && x != floor(x))
        return space__parse_at(c, n->off, "points_to_evaluate[%zu].%s must be a whole number (%s)",
                               k, P->name, kind);
    double lo = P->a, hi = P->b;
    int hi_open = P->kind == SPACE_P_RANDINT || P->kind == SPACE_P_LOGRANDINT;
    if (x < lo || x > hi || (hi_open && x >= hi)) {
        char bl[32], bh[32], bx[32];
        return space__parse_at(c, n->off, "points_to_evaluate[%zu].%s: %s is outside %s [%s, %s%s",
                               k, P->name, space_format_number(x, bx), kind,
                               space_format_number(lo, bl), space_format_number(hi, bh),
                               hi_open ? ")" : "]");
    }
    return 0;
}

/* "points_to_evaluate": [{...}, ...], Ray Tune's configurations to try first. Each point
 * is an object of top-level parameters, every value checked against its parameter; there
 * cannot be more points than trials. Runs after the space and the grid are laid out. */
static int parse_points(struct space__parse_ctx *c, space_t *sp, const sj_node_t *n)
{
    space_settings_t *s = &sp->set;
    if (!n) return 0;
    if (n->type != SJ_ARRAY)
        return space__parse_at(
            c, n->off, "\"points_to_evaluate\" must be an array of objects, e.g. [{\"lr\": 0.01}]");
    if (n->n > sp->num_trials)
        return space__parse_at(
            c, n->off,
            "\"points_to_evaluate\" has %zu points but the experiment runs %zu trials; "
            "raise \"num_samples\" or drop points",
            n->n, sp->num_trials);
    const char **names = calloc(sp->nparams ? sp->nparams : 1, sizeof *names);
    if (!names) return space__parse_nomem(c->err, c->errlen);
    for (size_t i = 0; i < sp->nparams; i++)
        names[i] = sp->params[i].name;
    int rc = 0;
    size_t k = 0;
    for (const sj_node_t *pt = n->child; pt && !rc; pt = pt->next, k++) {
        if (pt->type != SJ_OBJECT) {
            rc = space__parse_at(
                c, pt->off, "points_to_evaluate[%zu] must be an object of parameter values, not %s",
                k, space__parse_type_name(pt));
            break;
        }
        for (const sj_node_t *m = pt->child; m && !rc; m = m->next) {
            size_t i = 0;
            while (i < sp->nparams && strcmp(names[i], m->key) != 0)
                i++;
            if (i == sp->nparams) {
                char q[80], dym[128];
                space__parse_did_you_mean(m->key, names, sp->nparams, dym, sizeof dym);
                rc = space__parse_at(
                    c, m->key_off, "points_to_evaluate[%zu]: %s is not a parameter of \"space\"%s",
                    k, space__parse_quoted(m->key, q, sizeof q), dym);
                break;
            }
            cJSON *v = space__json_to_cjson(m);
            if (!v) {
                rc = space__parse_nomem(c->err, c->errlen);
                break;
            }
            rc = check_point_value(c, sp, i, k, m, v);
            cJSON_Delete(v);
        }
    }
    free(names);
    if (rc) return rc;
    s->points_to_evaluate = space__json_to_cjson(n);
    if (!s->points_to_evaluate) return space__parse_nomem(c->err, c->errlen);
    s->npoints = n->n;
    return 0;
}

/* The file's top level: the keys every section is read from, in the order whose first
 * mistake is the one reported. */
int space__parse_root(struct space__parse_ctx *c, space_t *sp, const sj_node_t *root)
{
    space_settings_t *s = &sp->set;
    if (root->type != SJ_OBJECT)
        return space__parse_at(c, root->off, "the experiment file must be a JSON object, not %s",
                               space__parse_type_name(root));
    int rc = space__parse_check_keys(c, root, top_keys, sizeof top_keys / sizeof top_keys[0], NULL);
    if (rc) return rc;
    if ((rc = space__parse_settings(c, s, root))) return rc;
    const sj_node_t *sched = space__json_get(root, "scheduler");
    const sj_node_t *space_node = space__json_get(root, "space");
    if ((rc = parse_space_params(c, sp, space_node))) return rc;
    if ((rc =
             parse_mutations(c, sp, sched ? space__json_get(sched, "hyperparam_mutations") : NULL)))
        return rc;
    if ((rc = space__parse_command(c, sp, space__json_get(root, "command")))) return rc;
    if ((rc = space__parse_search(c, sp, root))) return rc;
    if ((rc = layout_grid(c, sp, space_node, s->num_samples))) return rc;
    return parse_points(c, sp, space__json_get(root, "points_to_evaluate"));
}
