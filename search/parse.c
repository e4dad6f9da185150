/* search/parse.c: turns space.json into a space_t: settings with defaults filled in,
 * the parameters and their distributions, all checked before anything runs, with every
 * message pointing at FILE:LINE:COL. Not for: sampling (sample.c) or argv (render.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search/space_int.h"

/* No experiment is this large on purpose; the scheduler allocates per trial up front. */
#define SPACE_MAX_TRIALS 100000000u
/* Integers above 2^53 cannot all be held by a double (and so by JSON readers). */
#define SPACE_MAX_EXACT 9007199254740992.0
#define SPACE_MAX_FILE (64u << 20)

/* ---- messages ------------------------------------------------------------------------ */
struct pctx {
    const char *file;
    const char *text;
    size_t len;
    char *err;
    size_t errlen;
};

static int vmsg(struct pctx *c, const char *prefix, const char *fmt, va_list ap)
{
    if (!c->err || c->errlen == 0) return SPACE_EINVAL;
    int k = snprintf(c->err, c->errlen, "%s", prefix);
    if (k >= 0 && (size_t)k < c->errlen) vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
    return SPACE_EINVAL;
}

/* An error at a byte offset of the file: "FILE:LINE:COL: message". */
static int at(struct pctx *c, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int at(struct pctx *c, size_t off, const char *fmt, ...)
{
    int line, col;
    space__json_pos(c->text, c->len, off, &line, &col);
    char prefix[PATH_MAX + 64];
    snprintf(prefix, sizeof prefix, "%s:%d:%d: ", c->file, line, col);
    va_list ap;
    va_start(ap, fmt);
    vmsg(c, prefix, fmt, ap);
    va_end(ap);
    return SPACE_EINVAL;
}

/* An error with no position (a missing key): "FILE: key.path: message". */
static int at_path(struct pctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int at_path(struct pctx *c, const char *path, const char *fmt, ...)
{
    char prefix[PATH_MAX + 300];
    snprintf(prefix, sizeof prefix, "%s: %s: ", c->file, path);
    va_list ap;
    va_start(ap, fmt);
    vmsg(c, prefix, fmt, ap);
    va_end(ap);
    return SPACE_EINVAL;
}

static int nomem(char *err, size_t errlen)
{
    if (err && errlen) snprintf(err, errlen, "out of memory");
    return SPACE_ENOMEM;
}

/* ---- suggestions ------------------------------------------------------------------------ */
static int lower(int ch)
{
    return (ch >= 'A' && ch <= 'Z') ? ch + 32 : ch;
}

/* Optimal-string-alignment distance (Levenshtein plus adjacent transpositions, so
 * "logunifrom" is one edit from "loguniform"), case-insensitive. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64) return (size_t)-1;
    size_t d[65][65];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            size_t cost = lower(a[i - 1]) != lower(b[j - 1]);
            size_t v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1]) && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[n][m];
}

const char *space__suggest(const char *word, const char *const *cand, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, cand[i]);
        size_t lw = strlen(word), lc = strlen(cand[i]);
        size_t longest = lw > lc ? lw : lc;
        /* A third of the longer word may be wrong (at least one letter), as git's
         * "did you mean" allows a similar share of a command name. */
        size_t limit = longest / 3 ? longest / 3 : 1;
        if (d <= limit && d < best_d) {
            best = cand[i];
            best_d = d;
        }
    }
    return best;
}

/* Writes ` (did you mean "x"?)` into buf, or nothing. */
static const char *did_you_mean(const char *word, const char *const *cand, size_t n, char *buf,
                                size_t len)
{
    const char *s = space__suggest(word, cand, n);
    if (s)
        snprintf(buf, len, " (did you mean \"%s\"?)", s);
    else
        buf[0] = '\0';
    return buf;
}

/* Quotes a user string for a message, cut short so a message stays readable. */
static const char *quoted(const char *s, char *buf, size_t len)
{
    size_t n = strlen(s);
    if (n + 3 <= len && n <= 60)
        snprintf(buf, len, "\"%s\"", s);
    else
        snprintf(buf, len, "\"%.60s...\"", s);
    return buf;
}

/* ---- typed getters ---------------------------------------------------------------------- */
static const char *type_name(const sj_node_t *n)
{
    switch (n->type) {
    case SJ_NULL:
        return "null";
    case SJ_FALSE:
    case SJ_TRUE:
        return "a boolean";
    case SJ_NUMBER:
        return "a number";
    case SJ_STRING:
        return "a string";
    case SJ_ARRAY:
        return "an array";
    case SJ_OBJECT:
        return "an object";
    }
    return "?";
}

/* An integral number within [min, max], or SPACE_EINVAL with `what` as the message. */
static int get_int(struct pctx *c, const sj_node_t *n, long long min, long long max, long long *out,
                   const char *what)
{
    if (n->type != SJ_NUMBER || n->num != floor(n->num) || n->num < (double)min ||
        n->num > (double)max)
        return at(c, n->off, "%s", what);
    *out = (long long)n->num;
    return 0;
}

static int get_double(struct pctx *c, const sj_node_t *n, double min, int min_open, double *out,
                      const char *what)
{
    if (n->type != SJ_NUMBER || n->num < min || (min_open && n->num == min))
        return at(c, n->off, "%s", what);
    *out = n->num;
    return 0;
}

static int dup_str(char **dst, const char *s, char *err, size_t errlen)
{
    *dst = strdup(s);
    return *dst ? 0 : nomem(err, errlen);
}

/* Every key of obj must be in allowed[]; `where` names the object in the message. */
static int check_keys(struct pctx *c, const sj_node_t *obj, const char *const *allowed, size_t n,
                      const char *where)
{
    for (const sj_node_t *m = obj->child; m; m = m->next) {
        size_t i = 0;
        while (i < n && strcmp(m->key, allowed[i]) != 0)
            i++;
        if (i < n) continue;
        char q[80], dym[128];
        did_you_mean(m->key, allowed, n, dym, sizeof dym);
        if (where)
            return at(c, m->key_off, "unknown key %s in \"%s\"%s", quoted(m->key, q, sizeof q),
                      where, dym);
        return at(c, m->key_off, "unknown key %s%s", quoted(m->key, q, sizeof q), dym);
    }
    return 0;
}

/* ---- space_check_name ---------------------------------------------------------------- */
int space_check_name(const char *name, char *err, size_t errlen)
{
    char q[80];
    if (!name || !*name) {
        if (err && errlen) snprintf(err, errlen, "experiment name is empty");
        return SPACE_EINVAL;
    }
    size_t n = strlen(name);
    if (n > 100) {
        if (err && errlen)
            snprintf(err, errlen, "experiment name %s is longer than 100 characters",
                     quoted(name, q, sizeof q));
        return SPACE_EINVAL;
    }
    /* Every command takes the name as an argument: "-rf" would be read as an option. */
    if (name[0] == '-') {
        if (err && errlen)
            snprintf(err, errlen,
                     "experiment name %s begins with '-', which commands would read as an "
                     "option: start it with a letter or digit",
                     quoted(name, q, sizeof q));
        return SPACE_EINVAL;
    }
    /* The name becomes a folder under tune_results/: "." and ".." would escape it. */
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        if (err && errlen) snprintf(err, errlen, "experiment name \"%s\" is not allowed", name);
        return SPACE_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '_' || ch == '.' || ch == '-')
            continue;
        char what[16];
        if (ch >= 0x20 && ch < 0x7f)
            snprintf(what, sizeof what, "'%c'", ch);
        else
            snprintf(what, sizeof what, "byte 0x%02x", ch);
        if (err && errlen)
            snprintf(err, errlen,
                     "experiment name %s: %s is not allowed (use letters, digits, '_', '.' "
                     "and '-')",
                     quoted(name, q, sizeof q), what);
        return SPACE_EINVAL;
    }
    return SPACE_OK;
}

/* ---- distributions ------------------------------------------------------------------- */
struct dist {
    const char *name;
    space_pkind_t kind;
    int nmin, nmax;      /* number of arguments; 0 for value lists */
    const char *sig;     /* for messages */
    const char *args[4]; /* argument names, for messages */
};

static const struct dist dists[] = {
    {"uniform", SPACE_P_UNIFORM, 2, 2, "[low, high]", {"low", "high"}},
    {"quniform", SPACE_P_QUNIFORM, 3, 3, "[low, high, q]", {"low", "high", "q"}},
    {"loguniform",
     SPACE_P_LOGUNIFORM,
     2,
     3,
     "[low, high] or [low, high, base]",
     {"low", "high", "base"}},
    {"qloguniform",
     SPACE_P_QLOGUNIFORM,
     3,
     4,
     "[low, high, q] or [low, high, q, base]",
     {"low", "high", "q", "base"}},
    {"randn", SPACE_P_RANDN, 2, 2, "[mean, sd]", {"mean", "sd"}},
    {"qrandn", SPACE_P_QRANDN, 3, 3, "[mean, sd, q]", {"mean", "sd", "q"}},
    {"randint", SPACE_P_RANDINT, 2, 2, "[low, high]", {"low", "high"}},
    {"qrandint", SPACE_P_QRANDINT, 3, 3, "[low, high, q]", {"low", "high", "q"}},
    {"lograndint",
     SPACE_P_LOGRANDINT,
     2,
     3,
     "[low, high] or [low, high, base]",
     {"low", "high", "base"}},
    {"qlograndint",
     SPACE_P_QLOGRANDINT,
     3,
     4,
     "[low, high, q] or [low, high, q, base]",
     {"low", "high", "q", "base"}},
    {"choice", SPACE_P_CHOICE, 0, 0, "a list of values", {0}},
    {"grid_search", SPACE_P_GRID, 0, 0, "a list of values", {0}},
};
#define NDISTS (sizeof dists / sizeof dists[0])

static const char *kind_name(space_pkind_t k)
{
    if (k == SPACE_P_CONSTANT) return "constant";
    for (size_t i = 0; i < NDISTS; i++)
        if (dists[i].kind == k) return dists[i].name;
    return "?";
}

static int is_log_kind(space_pkind_t k)
{
    return k == SPACE_P_LOGUNIFORM || k == SPACE_P_QLOGUNIFORM || k == SPACE_P_LOGRANDINT ||
           k == SPACE_P_QLOGRANDINT;
}

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

/* The multiples k*q inside [low, high]: kmin = ceil(low/q), kmax = floor(high/q), with a
 * relative tolerance so that 0.7/0.1 = 6.999999999999999 still counts 0.7 in. */
static int quant_range(struct pctx *c, const sj_node_t *args, const struct dist *d,
                       space_quant_t *qu, double low, double high)
{
    double lo = low / qu->q, hi = high / qu->q;
    if (fabs(lo) > SPACE_MAX_EXACT / 4 || fabs(hi) > SPACE_MAX_EXACT / 4)
        return at(c, space__json_at(args, 2)->off,
                  "\"%s\": q is too small for the range (more than 2^51 multiples)", d->name);
    double kmin = ceil(lo - 1e-9 * fmax(1, fabs(lo)));
    double kmax = floor(hi + 1e-9 * fmax(1, fabs(hi)));
    if (kmin > kmax) return at(c, args->off, "\"%s\" has no multiple of q in [low, high]", d->name);
    qu->kmin = (int64_t)kmin;
    qu->kmax = (int64_t)kmax;
    return 0;
}

static int parse_dist(struct pctx *c, space_param_t *P, const struct dist *d, const sj_node_t *args)
{
    P->kind = d->kind;
    if (d->kind == SPACE_P_CHOICE || d->kind == SPACE_P_GRID) {
        if (args->type != SJ_ARRAY)
            return at(c, args->off, "\"%s\" takes a list of values, such as {\"%s\": [16, 32]}",
                      d->name, d->name);
        if (args->n == 0) return at(c, args->off, "\"%s\" needs at least one value", d->name);
        P->values = space__json_to_cjson(args);
        if (!P->values) return nomem(c->err, c->errlen);
        P->nvalues = args->n;
        return 0;
    }
    if (args->type != SJ_ARRAY || args->n < (size_t)d->nmin || args->n > (size_t)d->nmax)
        return at(c, args->off, "\"%s\" takes %s", d->name, d->sig);
    double v[4] = {0};
    size_t i = 0;
    for (const sj_node_t *e = args->child; e; e = e->next, i++) {
        if (e->type != SJ_NUMBER)
            return at(c, e->off, "\"%s\": %s must be a number, not %s", d->name, d->args[i],
                      type_name(e));
        v[i] = e->num;
    }
    const sj_node_t *e0 = space__json_at(args, 0), *e1 = space__json_at(args, 1);
    const sj_node_t *e2 = space__json_at(args, 2), *e3 = space__json_at(args, 3);

    if (d->kind == SPACE_P_RANDN || d->kind == SPACE_P_QRANDN) {
        if (!(v[1] > 0)) return at(c, e1->off, "\"%s\" needs sd > 0", d->name);
        P->a = v[0];
        P->b = v[1];
        if (d->kind == SPACE_P_QRANDN) {
            if (!(v[2] > 0)) return at(c, e2->off, "\"%s\" needs q > 0", d->name);
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
                return at(c, e[i]->off, "\"%s\" needs whole-number bounds (%s is %s)", d->name,
                          d->args[i], e[i]->raw);
            if (fabs(v[i]) > SPACE_MAX_EXACT)
                return at(c, e[i]->off, "\"%s\" bounds must be within -2^53..2^53", d->name);
        }
    }
    if (!(low < high)) return at(c, args->off, "\"%s\" needs low < high", d->name);
    if (is_log_kind(d->kind) && is_int_kind(d->kind) && low < 1)
        return at(c, e0->off, "\"%s\" needs low >= 1", d->name);
    if (is_log_kind(d->kind) && !(low > 0)) return at(c, e0->off, "\"%s\" needs low > 0", d->name);
    if (eq) {
        if (!(v[2] > 0)) return at(c, eq->off, "\"%s\" needs q > 0", d->name);
        if (is_int_kind(d->kind) && (v[2] != floor(v[2]) || v[2] > SPACE_MAX_EXACT))
            return at(c, eq->off, "\"%s\" needs a whole-number q", d->name);
    }
    P->base = 10;
    if (ebase) {
        if (!(ebase->num > 0) || ebase->num == 1)
            return at(c, ebase->off, "\"%s\" needs base > 0 and base != 1", d->name);
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

static int parse_param(struct pctx *c, space_param_t *P, const sj_node_t *v)
{
    char q[80];
    if (!*v->key) return at(c, v->key_off, "parameter name is empty");
    if (strchr(v->key, '{') || strchr(v->key, '}'))
        return at(c, v->key_off, "parameter name %s cannot contain '{' or '}'",
                  quoted(v->key, q, sizeof q));
    if (strcmp(v->key, "trial_id") == 0 || strcmp(v->key, "trial_dir") == 0)
        return at(c, v->key_off, "parameter name \"%s\" is reserved for the {%s} placeholder",
                  v->key, v->key);
    if (dup_str(&P->name, v->key, c->err, c->errlen)) return SPACE_ENOMEM;
    if (v->type != SJ_OBJECT) {
        P->kind = SPACE_P_CONSTANT;
        P->values = space__json_to_cjson(v);
        return P->values ? 0 : nomem(c->err, c->errlen);
    }
    if (v->n == 0)
        return at(c, v->off,
                  "parameter %s is an empty object: give a constant or one distribution, such "
                  "as {\"uniform\": [0, 1]}",
                  quoted(v->key, q, sizeof q));
    const sj_node_t *dn = v->child;
    const struct dist *d = NULL;
    for (size_t i = 0; i < NDISTS; i++)
        if (strcmp(dn->key, dists[i].name) == 0) d = &dists[i];
    if (!d) {
        const char *names[NDISTS];
        for (size_t i = 0; i < NDISTS; i++)
            names[i] = dists[i].name;
        char dym[128], q2[80];
        did_you_mean(dn->key, names, NDISTS, dym, sizeof dym);
        return at(c, dn->key_off, "unknown distribution %s%s", quoted(dn->key, q2, sizeof q2), dym);
    }
    if (v->n > 1) {
        char q2[80];
        return at(c, dn->next->key_off,
                  "parameter %s must have exactly one distribution key; %s is one too many",
                  quoted(v->key, q, sizeof q), quoted(dn->next->key, q2, sizeof q2));
    }
    return parse_dist(c, P, d, dn);
}

/* ---- sections ------------------------------------------------------------------------- */
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
                                       "max_failures"};
static const char *const sched_types[] = {"fifo", "asha", "median"};
static const char *const sched_keys_all[] = {
    "type",     "time_attr",           "max_t", "grace_period", "reduction_factor",
    "brackets", "min_samples_required"};

/* Which scheduler keys apply to which policy: fifo has no cut-offs, median takes no
 * reduction factor or brackets (Ray Tune's MedianStoppingRule has neither). */
static int sched_key_applies(space_sched_type_t t, const char *key)
{
    if (strcmp(key, "type") == 0 || strcmp(key, "time_attr") == 0) return 1;
    if (t == SPACE_SCHED_FIFO) return 0;
    if (strcmp(key, "max_t") == 0 || strcmp(key, "grace_period") == 0) return 1;
    if (t == SPACE_SCHED_ASHA)
        return strcmp(key, "reduction_factor") == 0 || strcmp(key, "brackets") == 0;
    return strcmp(key, "min_samples_required") == 0;
}

static int parse_scheduler(struct pctx *c, space_sched_opts_t *o, const sj_node_t *n)
{
    o->type = SPACE_SCHED_FIFO;
    snprintf(o->time_attr, sizeof o->time_attr, "training_iteration");
    o->max_t = 100;
    o->grace_period = 1;
    o->reduction_factor = 4;
    o->brackets = 1;
    o->min_samples_required = 3;
    if (!n) return 0;
    if (n->type != SJ_OBJECT) return at(c, n->off, "\"scheduler\" must be an object");
    int rc = check_keys(c, n, sched_keys_all, 7, "scheduler");
    if (rc) return rc;
    const sj_node_t *v;
    if ((v = space__json_get(n, "type"))) {
        if (v->type != SJ_STRING)
            return at(c, v->off, "scheduler \"type\" must be \"fifo\", \"asha\" or \"median\"");
        size_t i = 0;
        while (i < 3 && strcmp(v->str, sched_types[i]) != 0)
            i++;
        if (i == 3) {
            char q[80], dym[128];
            did_you_mean(v->str, sched_types, 3, dym, sizeof dym);
            return at(c, v->off,
                      "unknown scheduler type %s%s; use \"fifo\", \"asha\" or \"median\"",
                      quoted(v->str, q, sizeof q), dym);
        }
        o->type = (space_sched_type_t)i;
    }
    for (const sj_node_t *m = n->child; m; m = m->next)
        if (!sched_key_applies(o->type, m->key))
            return at(c, m->key_off, "\"%s\" does not apply to the \"%s\" scheduler", m->key,
                      sched_types[o->type]);
    if ((v = space__json_get(n, "time_attr"))) {
        if (v->type != SJ_STRING || !*v->str || strlen(v->str) >= sizeof o->time_attr)
            return at(c, v->off,
                      "\"time_attr\" must be a non-empty string of at most %zu "
                      "characters",
                      sizeof o->time_attr - 1);
        snprintf(o->time_attr, sizeof o->time_attr, "%s", v->str);
    }
    if ((v = space__json_get(n, "max_t")) &&
        (rc = get_double(c, v, 0, 1, &o->max_t, "\"max_t\" must be a number > 0")))
        return rc;
    const sj_node_t *gp = space__json_get(n, "grace_period");
    if (gp &&
        (rc = get_double(c, gp, 0, 1, &o->grace_period, "\"grace_period\" must be a number > 0")))
        return rc;
    if ((v = space__json_get(n, "reduction_factor")) &&
        (rc = get_double(c, v, 1, 1, &o->reduction_factor,
                         "\"reduction_factor\" must be a number > 1")))
        return rc;
    long long k = 0;
    if ((v = space__json_get(n, "brackets"))) {
        if ((rc = get_int(c, v, 1, 1000, &k, "\"brackets\" must be an integer >= 1"))) return rc;
        o->brackets = (int)k;
    }
    if ((v = space__json_get(n, "min_samples_required"))) {
        if ((rc =
                 get_int(c, v, 1, INT_MAX, &k, "\"min_samples_required\" must be an integer >= 1")))
            return rc;
        o->min_samples_required = (int)k;
    }
    if (o->type != SPACE_SCHED_FIFO && o->grace_period > o->max_t) {
        char a[32], b[32];
        const sj_node_t *where = gp ? gp : space__json_get(n, "max_t");
        return at(c, where->off, "\"grace_period\" (%s) must not exceed \"max_t\" (%s)",
                  space_format_number(o->grace_period, a), space_format_number(o->max_t, b));
    }
    return 0;
}

static int str_array(struct pctx *c, const sj_node_t *n, const char *what, char ***out, int *argc)
{
    char **v = calloc(n->n + 1, sizeof *v);
    if (!v) return nomem(c->err, c->errlen);
    *out = v;
    size_t i = 0;
    for (const sj_node_t *e = n->child; e; e = e->next, i++) {
        if (e->type != SJ_STRING)
            return at(c, e->off, "%s[%zu] must be a string, not %s", what, i, type_name(e));
        if (dup_str(&v[i], e->str, c->err, c->errlen)) return SPACE_ENOMEM;
    }
    if (argc) *argc = (int)n->n;
    return 0;
}

static int parse_executor(struct pctx *c, space_exec_opts_t *o, const sj_node_t *n)
{
    static const char *const keys[] = {"type", "srun_args", "allocation"};
    static const char *const types[] = {"local", "slurm"};
    o->type = SPACE_EXEC_LOCAL;
    if (!n) return 0;
    if (n->type != SJ_OBJECT) return at(c, n->off, "\"executor\" must be an object");
    int rc = check_keys(c, n, keys, 3, "executor");
    if (rc) return rc;
    const sj_node_t *v;
    if ((v = space__json_get(n, "type"))) {
        if (v->type != SJ_STRING)
            return at(c, v->off, "executor \"type\" must be \"local\" or \"slurm\"");
        if (strcmp(v->str, "slurm") == 0) {
            o->type = SPACE_EXEC_SLURM;
        } else if (strcmp(v->str, "local") != 0) {
            char q[80], dym[128];
            did_you_mean(v->str, types, 2, dym, sizeof dym);
            return at(c, v->off, "unknown executor type %s%s; use \"local\" or \"slurm\"",
                      quoted(v->str, q, sizeof q), dym);
        }
    }
    for (const sj_node_t *m = n->child; m; m = m->next)
        if (o->type == SPACE_EXEC_LOCAL && strcmp(m->key, "type") != 0)
            return at(c, m->key_off, "\"%s\" applies only to the \"slurm\" executor", m->key);
    if ((v = space__json_get(n, "srun_args"))) {
        if (v->type != SJ_ARRAY) return at(c, v->off, "\"srun_args\" must be an array of strings");
        if (v->n > 0 && (rc = str_array(c, v, "srun_args", &o->srun_args, NULL))) return rc;
    }
    if ((v = space__json_get(n, "allocation"))) {
        if (v->type == SJ_STRING && *v->str) {
            if (dup_str(&o->allocation, v->str, c->err, c->errlen)) return SPACE_ENOMEM;
        } else if (v->type == SJ_NUMBER && v->is_int && v->num >= 0) {
            if (dup_str(&o->allocation, v->raw, c->err, c->errlen)) return SPACE_ENOMEM;
        } else {
            return at(c, v->off,
                      "\"allocation\" must be a Slurm job id (a string or a whole number)");
        }
    }
    return 0;
}

static int parse_resources(struct pctx *c, space_settings_t *s, const sj_node_t *n)
{
    static const char *const keys[] = {"gpus_per_trial", "cpus_per_trial"};
    s->gpus_per_trial = 0;
    s->cpus_per_trial = 1;
    if (!n) return 0;
    if (n->type != SJ_OBJECT) return at(c, n->off, "\"resources\" must be an object");
    int rc = check_keys(c, n, keys, 2, "resources");
    if (rc) return rc;
    const sj_node_t *v;
    if ((v = space__json_get(n, "gpus_per_trial"))) {
        /* Whole GPUs, or a 1/k slice so that k trials share one GPU evenly; anything else
         * (0.3) would leave a remainder no trial can use. 1/3 written as 0.333333333 is
         * accepted within 1e-9 and kept as the exact 1/3. */
        const char *msg = "\"gpus_per_trial\" must be 0, a whole number, or 1/k for an integer "
                          "k (0.5, 0.25, ...)";
        if (v->type != SJ_NUMBER || v->num < 0 || v->num > 1e6) return at(c, v->off, "%s", msg);
        double g = v->num;
        if (g >= 1) {
            if (fabs(g - nearbyint(g)) > 1e-9) return at(c, v->off, "%s", msg);
            g = nearbyint(g);
        } else if (g > 0) {
            double k = nearbyint(1 / g);
            if (fabs(g - 1 / k) > 1e-9) return at(c, v->off, "%s", msg);
            g = 1 / k;
        }
        s->gpus_per_trial = g;
    }
    long long k = 0;
    if ((v = space__json_get(n, "cpus_per_trial"))) {
        if ((rc = get_int(c, v, 1, 1 << 20, &k, "\"cpus_per_trial\" must be an integer >= 1")))
            return rc;
        s->cpus_per_trial = (int)k;
    }
    return 0;
}

/* Every {placeholder} in the command must name a parameter or trial_id / trial_dir. */
static int check_command(struct pctx *c, const space_t *sp, const sj_node_t *cmd)
{
    size_t ncand = sp->nparams + 2;
    const char **cand = calloc(ncand, sizeof *cand);
    if (!cand) return nomem(c->err, c->errlen);
    for (size_t i = 0; i < sp->nparams; i++)
        cand[i] = sp->params[i].name;
    cand[sp->nparams] = "trial_id";
    cand[sp->nparams + 1] = "trial_dir";
    int rc = 0;
    size_t i = 0;
    for (const sj_node_t *e = cmd->child; e && !rc; e = e->next, i++) {
        const char *p = e->str, *bad = NULL;
        space_tmpl_piece_t piece;
        char msg[128];
        int r;
        while ((r = space__tmpl_next(&p, &piece, &bad, msg, sizeof msg)) > 0) {
            if (!piece.is_name) continue;
            size_t j = 0;
            while (j < ncand &&
                   !(strlen(cand[j]) == piece.len && memcmp(cand[j], piece.s, piece.len) == 0))
                j++;
            if (j < ncand) continue;
            char name[128], dym[160];
            snprintf(name, sizeof name, "%.*s", (int)(piece.len < 100 ? piece.len : 100), piece.s);
            did_you_mean(name, cand, ncand, dym, sizeof dym);
            rc = at(c, e->off, "command[%zu]: \"{%s}\" names no parameter%s", i, name, dym);
            break;
        }
        if (r < 0) rc = at(c, e->off, "command[%zu]: %s", i, msg);
    }
    free(cand);
    return rc;
}

static int parse_command(struct pctx *c, space_settings_t *s, const sj_node_t *n)
{
    if (!n)
        return at_path(c, "command",
                       "required key is missing (the argv of a trial, such as "
                       "[\"python\", \"train.py\", \"--lr\", \"{lr}\"])");
    if (n->type != SJ_ARRAY)
        return at(c, n->off, "\"command\" must be an array of strings (an argv; no shell runs it)");
    if (n->n == 0) return at(c, n->off, "\"command\" must not be empty");
    int rc = str_array(c, n, "command", &s->command, &s->command_argc);
    if (rc) return rc;
    if (!*s->command[0]) return at(c, n->child->off, "command[0] (the program) must not be empty");
    return 0;
}

static int parse_space_params(struct pctx *c, space_t *sp, const sj_node_t *n)
{
    if (!n) return 0;
    if (n->type != SJ_OBJECT)
        return at(c, n->off, "\"space\" must be an object of parameter names");
    sp->params = calloc(n->n ? n->n : 1, sizeof *sp->params);
    if (!sp->params) return nomem(c->err, c->errlen);
    for (const sj_node_t *m = n->child; m; m = m->next) {
        int rc = parse_param(c, &sp->params[sp->nparams++], m);
        if (rc) return rc;
    }
    return 0;
}

static int cmp_grid(const void *a, const void *b)
{
    const space_param_t *x = *(space_param_t *const *)a, *y = *(space_param_t *const *)b;
    return strcmp(x->name, y->name);
}

/* Grid strides as Ray Tune's BasicVariantGenerator lays them out: grid parameters sorted
 * by name (parse_spec_vars sorts grid_vars), the first one changing fastest
 * (_grid_search_generator increments index 0 first). */
static int layout_grid(struct pctx *c, space_t *sp, const sj_node_t *space_node,
                       long long num_samples)
{
    space_param_t **g = calloc(sp->nparams ? sp->nparams : 1, sizeof *g);
    if (!g) return nomem(c->err, c->errlen);
    size_t ng = 0;
    for (size_t i = 0; i < sp->nparams; i++)
        if (sp->params[i].kind == SPACE_P_GRID) g[ng++] = &sp->params[i];
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
        return at(c, space_node ? space_node->key_off : 0,
                  "more than %u trials (num_samples x grid points); split the experiment",
                  SPACE_MAX_TRIALS);
    sp->n_grid_points = points;
    sp->num_trials = points * (size_t)num_samples;
    return 0;
}

static int parse_root(struct pctx *c, space_t *sp, const sj_node_t *root)
{
    space_settings_t *s = &sp->set;
    if (root->type != SJ_OBJECT)
        return at(c, root->off, "the experiment file must be a JSON object, not %s",
                  type_name(root));
    int rc = check_keys(c, root, top_keys, sizeof top_keys / sizeof top_keys[0], NULL);
    if (rc) return rc;
    const sj_node_t *v;
    long long k = 0;

    if (!(v = space__json_get(root, "name")))
        return at_path(c, "name", "required key is missing (the experiment's name)");
    if (v->type != SJ_STRING) return at(c, v->off, "\"name\" must be a string");
    char msg[256];
    if (space_check_name(v->str, msg, sizeof msg) != 0) return at(c, v->off, "%s", msg);
    if (dup_str(&s->name, v->str, c->err, c->errlen)) return SPACE_ENOMEM;

    if ((v = space__json_get(root, "metric"))) {
        if (v->type != SJ_STRING || !*v->str)
            return at(c, v->off, "\"metric\" must be a non-empty string");
        if (dup_str(&s->metric, v->str, c->err, c->errlen)) return SPACE_ENOMEM;
    }
    const sj_node_t *mode = space__json_get(root, "mode");
    s->mode = SPACE_MODE_MIN;
    if (mode) {
        if (mode->type != SJ_STRING ||
            (strcmp(mode->str, "min") != 0 && strcmp(mode->str, "max") != 0))
            return at(c, mode->off, "\"mode\" must be \"min\" or \"max\"");
        s->mode = strcmp(mode->str, "max") == 0 ? SPACE_MODE_MAX : SPACE_MODE_MIN;
    }

    k = 1;
    if ((v = space__json_get(root, "num_samples")) &&
        (rc = get_int(c, v, 1, INT_MAX, &k, "\"num_samples\" must be a positive integer")))
        return rc;
    s->num_samples = (int)k;
    k = 0;
    if ((v = space__json_get(root, "max_concurrent")) &&
        (rc = get_int(c, v, 0, INT_MAX, &k,
                      "\"max_concurrent\" must be a non-negative integer (0: no limit)")))
        return rc;
    s->max_concurrent = (int)k;
    s->seed = 0;
    if ((v = space__json_get(root, "seed"))) {
        const char *msg_seed = "\"seed\" must be a non-negative integer below 2^64";
        if (v->type != SJ_NUMBER || v->num < 0) return at(c, v->off, "%s", msg_seed);
        if (v->is_int) {
            /* Read the digits, not the double: seeds above 2^53 must stay exact. */
            errno = 0;
            unsigned long long u = strtoull(v->raw, NULL, 10);
            if (errno == ERANGE || v->raw[0] == '-') return at(c, v->off, "%s", msg_seed);
            s->seed = (uint64_t)u;
        } else {
            if (v->num != floor(v->num) || v->num >= 18446744073709551616.0)
                return at(c, v->off, "%s", msg_seed);
            s->seed = (uint64_t)v->num;
        }
    }

    if ((rc = parse_resources(c, s, space__json_get(root, "resources")))) return rc;
    const sj_node_t *sched = space__json_get(root, "scheduler");
    if ((rc = parse_scheduler(c, &s->sched, sched))) return rc;
    if (s->sched.type != SPACE_SCHED_FIFO) {
        const char *t = sched_types[s->sched.type];
        if (!s->metric)
            return at_path(c, "metric",
                           "required with the \"%s\" scheduler (the reported value that "
                           "ranks trials)",
                           t);
        if (!mode)
            return at_path(c, "mode", "required with the \"%s\" scheduler (\"min\" or \"max\")", t);
    }
    if ((rc = parse_executor(c, &s->exec, space__json_get(root, "executor")))) return rc;

    struct {
        const char *key;
        double *dst, def;
        int open;
    } times[] = {{"stop_grace_s", &s->stop_grace_s, 5, 0},
                 {"status_interval_s", &s->status_interval_s, 30, 1},
                 {"result_timeout_s", &s->result_timeout_s, 0, 0},
                 {"time_budget_s", &s->time_budget_s, 0, 0}};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        *times[i].dst = times[i].def;
        if (!(v = space__json_get(root, times[i].key))) continue;
        char what[96];
        snprintf(what, sizeof what, "\"%s\" must be a number %s 0 (seconds)", times[i].key,
                 times[i].open ? ">" : ">=");
        if ((rc = get_double(c, v, 0, times[i].open, times[i].dst, what))) return rc;
    }
    k = 0;
    if ((v = space__json_get(root, "max_failures")) &&
        (rc = get_int(c, v, 0, INT_MAX, &k, "\"max_failures\" must be a non-negative integer")))
        return rc;
    s->max_failures = (int)k;

    const sj_node_t *space_node = space__json_get(root, "space");
    if ((rc = parse_space_params(c, sp, space_node))) return rc;
    if ((rc = parse_command(c, s, space__json_get(root, "command")))) return rc;
    if ((rc = check_command(c, sp, space__json_get(root, "command")))) return rc;
    return layout_grid(c, sp, space_node, s->num_samples);
}

/* ---- public ---------------------------------------------------------------------------- */
int space_parse(const char *text, size_t len, const char *filename, space_t **out, char *err,
                size_t errlen)
{
    if (!filename) filename = "space.json";
    struct pctx c = {.file = filename, .text = text, .len = len, .err = err, .errlen = errlen};
    if (err && errlen) err[0] = '\0';
    space_t *sp = calloc(1, sizeof *sp);
    if (!sp) return nomem(err, errlen);
    sp->text = malloc(len + 1);
    if (!sp->text) {
        free(sp);
        return nomem(err, errlen);
    }
    memcpy(sp->text, text, len);
    sp->text[len] = '\0';
    sp->text_len = len;
    sj_node_t *root = NULL;
    size_t off = 0;
    char msg[256];
    int rc = space__json_parse(text, len, &root, &off, msg, sizeof msg);
    if (rc == SPACE_ENOMEM) {
        nomem(err, errlen);
    } else if (rc != 0) {
        at(&c, off, "%s", msg);
    } else {
        rc = parse_root(&c, sp, root);
    }
    space__json_free(root);
    if (rc != 0) {
        space_free(sp);
        return rc;
    }
    *out = sp;
    return SPACE_OK;
}

int space_load(const char *path, space_t **out, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        int e = fd < 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : errno;
        if (fd >= 0) close(fd);
        if (err && errlen) snprintf(err, errlen, "cannot read %s: %s", path, strerror(e));
        return SPACE_EIO;
    }
    size_t cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return nomem(err, errlen);
    }
    for (;;) {
        if (n == cap) {
            if (cap >= SPACE_MAX_FILE) {
                free(buf);
                close(fd);
                if (err && errlen)
                    snprintf(err, errlen, "cannot read %s: larger than %u MiB", path,
                             SPACE_MAX_FILE >> 20);
                return SPACE_EIO;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                close(fd);
                return nomem(err, errlen);
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            if (err && errlen) snprintf(err, errlen, "cannot read %s: %s", path, strerror(e));
            return SPACE_EIO;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    int rc = space_parse(buf, n, path, out, err, errlen);
    free(buf);
    return rc;
}

static void free_strv(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

void space_free(space_t *s)
{
    if (!s) return;
    free(s->set.name);
    free(s->set.metric);
    free_strv(s->set.command);
    free_strv(s->set.exec.srun_args);
    free(s->set.exec.allocation);
    for (size_t i = 0; i < s->nparams; i++) {
        free(s->params[i].name);
        cJSON_Delete(s->params[i].values);
    }
    free(s->params);
    free(s->text);
    free(s);
}

int space_rename(space_t *s, const char *name, char *err, size_t errlen)
{
    int rc = space_check_name(name, err, errlen);
    if (rc) return rc;
    char *n = strdup(name);
    if (!n) return nomem(err, errlen);
    free(s->set.name);
    s->set.name = n;
    return SPACE_OK;
}

const space_settings_t *space_settings(const space_t *s)
{
    return &s->set;
}

const char *space_text(const space_t *s)
{
    return s->text;
}

size_t space_num_trials(const space_t *s)
{
    return s->num_trials;
}

size_t space_num_params(const space_t *s)
{
    return s->nparams;
}

const char *space_param_name(const space_t *s, size_t i)
{
    return i < s->nparams ? s->params[i].name : NULL;
}

const char *space_param_kind(const space_t *s, size_t i)
{
    return i < s->nparams ? kind_name(s->params[i].kind) : NULL;
}

int space_param_is_log(const space_t *s, size_t i)
{
    return i < s->nparams && is_log_kind(s->params[i].kind);
}

static cJSON *strv_json(char **v)
{
    cJSON *a = cJSON_CreateArray();
    for (char **p = v; a && p && *p; p++) {
        cJSON *e = cJSON_CreateString(*p);
        if (!e) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

/* Adds name: item to o, deleting item's owner chain on failure; returns 0 or -1. */
static int add(cJSON *o, const char *name, cJSON *item)
{
    if (!item) return -1;
    cJSON_AddItemToObject(o, name, item);
    return 0;
}

cJSON *space_settings_json(const space_t *s)
{
    static const char *const sched_names[] = {"fifo", "asha", "median"};
    const space_settings_t *t = &s->set;
    cJSON *o = cJSON_CreateObject(), *res = NULL, *sc = NULL, *ex = NULL, *ps = NULL;
    if (!o) return NULL;
    int bad = add(o, "name", cJSON_CreateString(t->name));
    bad |= add(o, "metric", t->metric ? cJSON_CreateString(t->metric) : cJSON_CreateNull());
    bad |= add(o, "mode", cJSON_CreateString(t->mode == SPACE_MODE_MAX ? "max" : "min"));
    bad |= add(o, "num_samples", cJSON_CreateNumber(t->num_samples));
    bad |= add(o, "max_concurrent", cJSON_CreateNumber(t->max_concurrent));
    if (t->seed <= (uint64_t)SPACE_MAX_EXACT) {
        bad |= add(o, "seed", cJSON_CreateNumber((double)t->seed));
    } else {
        /* A double cannot hold it exactly; the digits can. */
        char b[32];
        snprintf(b, sizeof b, "%llu", (unsigned long long)t->seed);
        bad |= add(o, "seed", cJSON_CreateRaw(b));
    }
    bad |= add(o, "command", strv_json(t->command));
    bad |= add(o, "resources", res = cJSON_CreateObject());
    if (res) {
        bad |= add(res, "gpus_per_trial", cJSON_CreateNumber(t->gpus_per_trial));
        bad |= add(res, "cpus_per_trial", cJSON_CreateNumber(t->cpus_per_trial));
    }
    bad |= add(o, "scheduler", sc = cJSON_CreateObject());
    if (sc) {
        bad |= add(sc, "type", cJSON_CreateString(sched_names[t->sched.type]));
        bad |= add(sc, "time_attr", cJSON_CreateString(t->sched.time_attr));
        bad |= add(sc, "max_t", cJSON_CreateNumber(t->sched.max_t));
        bad |= add(sc, "grace_period", cJSON_CreateNumber(t->sched.grace_period));
        bad |= add(sc, "reduction_factor", cJSON_CreateNumber(t->sched.reduction_factor));
        bad |= add(sc, "brackets", cJSON_CreateNumber(t->sched.brackets));
        bad |= add(sc, "min_samples_required", cJSON_CreateNumber(t->sched.min_samples_required));
    }
    bad |= add(o, "executor", ex = cJSON_CreateObject());
    if (ex) {
        bad |= add(ex, "type",
                   cJSON_CreateString(t->exec.type == SPACE_EXEC_SLURM ? "slurm" : "local"));
        bad |= add(ex, "srun_args", strv_json(t->exec.srun_args));
        bad |=
            add(ex, "allocation",
                t->exec.allocation ? cJSON_CreateString(t->exec.allocation) : cJSON_CreateNull());
    }
    bad |= add(o, "stop_grace_s", cJSON_CreateNumber(t->stop_grace_s));
    bad |= add(o, "status_interval_s", cJSON_CreateNumber(t->status_interval_s));
    bad |= add(o, "result_timeout_s", cJSON_CreateNumber(t->result_timeout_s));
    bad |= add(o, "time_budget_s", cJSON_CreateNumber(t->time_budget_s));
    bad |= add(o, "max_failures", cJSON_CreateNumber(t->max_failures));
    bad |= add(o, "num_trials", cJSON_CreateNumber((double)s->num_trials));
    bad |= add(o, "params", ps = cJSON_CreateArray());
    for (size_t i = 0; ps && i < s->nparams; i++) {
        cJSON *p = cJSON_CreateObject();
        if (!p) {
            bad = 1;
            break;
        }
        cJSON_AddItemToArray(ps, p);
        bad |= add(p, "name", cJSON_CreateString(s->params[i].name));
        bad |= add(p, "kind", cJSON_CreateString(kind_name(s->params[i].kind)));
    }
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
