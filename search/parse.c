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
    if (k == SPACE_P_OBJECT) return "object";
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

static const struct dist *dist_named(const char *key)
{
    for (size_t i = 0; i < NDISTS; i++)
        if (strcmp(key, dists[i].name) == 0) return &dists[i];
    return NULL;
}

/* The distribution v is, when v is an object with one key that names one. */
static const struct dist *dist_of(const sj_node_t *v)
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
        const char *names[NDISTS];
        for (size_t i = 0; i < NDISTS; i++)
            names[i] = dists[i].name;
        if (did_you_mean(v->child->key, names, NDISTS, dym, len)[0]) return v->child;
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
static int nest_child(struct pctx *c, const struct nest *nx, const char *key, struct nest *out,
                      char **rel_buf, char **gpath_buf)
{
    const char *suffix = key ? key : "[]";
    size_t rl = strlen(nx->rel), sl = strlen(suffix), kl = key ? strlen(key) : 0;
    *rel_buf = malloc(rl + sl + 2);
    *gpath_buf = malloc(nx->glen + kl + 2);
    if (!*rel_buf || !*gpath_buf) {
        free(*rel_buf);
        free(*gpath_buf);
        return nomem(c->err, c->errlen);
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

static int parse_node(struct pctx *c, space_param_t *P, const sj_node_t *v, const struct nest *nx);

static int child_node(struct pctx *c, space_param_t *P, const sj_node_t *v, const struct nest *nx,
                      const char *key)
{
    struct nest cn;
    char *rel = NULL, *gp = NULL;
    int rc = nest_child(c, nx, key, &cn, &rel, &gp);
    if (rc) return rc;
    if (key && !(P->name = strdup(key)))
        rc = nomem(c->err, c->errlen);
    else
        rc = parse_node(c, P, v, &cn);
    free(rel);
    free(gp);
    return rc;
}

/* A distribution node: its arguments, then, for a choice or grid_search whose values hold
 * distributions, one node per value. */
static int parse_distribution(struct pctx *c, space_param_t *P, const struct dist *d,
                              const sj_node_t *dn, const struct nest *nx)
{
    P->rkey = nx->rel[0] ? path_key(nx->p, nx->rel) : (uint64_t)nx->p;
    if (d->kind == SPACE_P_GRID && nx->in_branch)
        return at(c, dn->key_off,
                  "\"grid_search\" inside a value of \"choice\" or \"grid_search\" is not "
                  "supported (the number of trials would depend on the value drawn): use "
                  "\"choice\" here, or list the combinations in the outer grid_search");
    int rc = parse_dist(c, P, d, dn);
    if (rc) return rc;
    if (d->kind == SPACE_P_GRID) {
        if (!(P->gpath = malloc(nx->glen + 1))) return nomem(c->err, c->errlen);
        memcpy(P->gpath, nx->gpath, nx->glen + 1);
        P->gpath_len = nx->glen;
    }
    if (d->kind != SPACE_P_CHOICE && d->kind != SPACE_P_GRID) return 0;
    if (!find_dist(dn)) {
        char dym[128], q[80];
        const sj_node_t *typo = find_misspelt(dn, dym, sizeof dym);
        if (typo)
            return at(c, typo->key_off, "unknown distribution %s%s", quoted(typo->key, q, sizeof q),
                      dym);
        return 0;
    }
    if (!(P->alts = calloc(P->nvalues, sizeof *P->alts))) return nomem(c->err, c->errlen);
    size_t i = 0;
    for (const sj_node_t *e = dn->child; e; e = e->next, i++)
        if ((rc = child_node(c, &P->alts[i], e, nx, NULL))) return rc;
    return 0;
}

/* An object with distributions inside: one node per member. */
static int parse_object(struct pctx *c, space_param_t *P, const sj_node_t *v, const struct nest *nx)
{
    P->kind = SPACE_P_OBJECT;
    P->rkey = nx->rel[0] ? path_key(nx->p, nx->rel) : (uint64_t)nx->p;
    if (!(P->members = calloc(v->n, sizeof *P->members))) return nomem(c->err, c->errlen);
    for (const sj_node_t *m = v->child; m; m = m->next) {
        int rc = child_node(c, &P->members[P->nmembers++], m, nx, m->key);
        if (rc) return rc;
    }
    return 0;
}

/* A value with no distribution inside, copied as written, unless it holds a misspelt one. */
static int constant_node(struct pctx *c, space_param_t *P, const sj_node_t *v,
                         const struct nest *nx)
{
    char dym[128], q[80];
    const sj_node_t *typo = find_misspelt(v, dym, sizeof dym);
    if (typo)
        return at(c, typo->key_off, "unknown distribution %s%s", quoted(typo->key, q, sizeof q),
                  dym);
    P->kind = SPACE_P_CONSTANT;
    P->rkey = nx->rel[0] ? path_key(nx->p, nx->rel) : (uint64_t)nx->p;
    P->values = space__json_to_cjson(v);
    return P->values ? 0 : nomem(c->err, c->errlen);
}

static int parse_node(struct pctx *c, space_param_t *P, const sj_node_t *v, const struct nest *nx)
{
    const struct dist *d = dist_of(v);
    if (d) return parse_distribution(c, P, d, v->child, nx);
    const sj_node_t *inner = find_dist(v);
    if (!inner) return constant_node(c, P, v, nx);
    if (inner && v->type == SJ_ARRAY)
        return at(c, inner->off,
                  "a distribution inside an array is not sampled: put it in an object (a nested "
                  "space) or make the array a value of \"choice\"");
    return parse_object(c, P, v, nx);
}

static int parse_param(struct pctx *c, space_param_t *P, const sj_node_t *v, size_t p)
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
    /* The top level keeps the stream of the parameter's position, as flat spaces always
     * had, so their configurations do not change. */
    const struct nest top = {
        .p = p, .rel = "", .gpath = v->key, .glen = strlen(v->key), .in_branch = 0};
    P->rkey = (uint64_t)p;
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
    const struct dist *d = dist_named(dn->key);
    if (!d) {
        const char *names[NDISTS];
        for (size_t i = 0; i < NDISTS; i++)
            names[i] = dists[i].name;
        char dym[128], q2[80];
        did_you_mean(dn->key, names, NDISTS, dym, sizeof dym);
        /* An object of distributions is a nested space; a lone misspelt distribution
         * name, or an object with none inside, is still the mistake it always was. */
        if (!(v->n == 1 && dym[0]) && find_dist(v)) return parse_object(c, P, v, &top);
        return at(c, dn->key_off, "unknown distribution %s%s", quoted(dn->key, q2, sizeof q2), dym);
    }
    if (v->n > 1) {
        char q2[80];
        return at(c, dn->next->key_off,
                  "parameter %s must have exactly one distribution key; %s is one too many",
                  quoted(v->key, q, sizeof q), quoted(dn->next->key, q2, sizeof q2));
    }
    return parse_distribution(c, P, d, dn, &top);
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
                                       "trial_time_limit_s",
                                       "max_failures",
                                       "fail_fast",
                                       "allow_missing_metric",
                                       "stop",
                                       "stop_experiment_on_target",
                                       "reporter",
                                       "search",
                                       "points_to_evaluate"};
static const char *const sched_types[SPACE_NSCHED] = SPACE_SCHED_NAMES;
static const char *const sched_keys_all[] = {"type",
                                             "time_attr",
                                             "max_t",
                                             "grace_period",
                                             "reduction_factor",
                                             "brackets",
                                             "min_samples_required",
                                             "stop_last_trials",
                                             "variant",
                                             "hard_stop",
                                             "perturbation_interval",
                                             "quantile_fraction",
                                             "resample_probability",
                                             "perturbation_factors",
                                             "burn_in_period",
                                             "hyperparam_mutations",
                                             "keep_checkpoints"};

/* Which scheduler keys apply to which policy: fifo has no cut-offs, median takes no
 * reduction factor or brackets (Ray Tune's MedianStoppingRule has neither), pbt stops
 * nothing early (no grace period); its max_t is optional (none: trials end by themselves
 * or by "stop"; given: a trial completes there and is never exploited at its end). */
static int sched_key_applies(space_sched_type_t t, const char *key)
{
    static const char *const pbt_keys[] = {"perturbation_interval", "quantile_fraction",
                                           "resample_probability",  "perturbation_factors",
                                           "burn_in_period",        "hyperparam_mutations",
                                           "keep_checkpoints"};
    if (strcmp(key, "type") == 0 || strcmp(key, "time_attr") == 0) return 1;
    if (t == SPACE_SCHED_FIFO) return 0;
    for (size_t i = 0; i < sizeof pbt_keys / sizeof pbt_keys[0]; i++)
        if (strcmp(key, pbt_keys[i]) == 0) return t == SPACE_SCHED_PBT;
    if (t == SPACE_SCHED_PBT) return strcmp(key, "max_t") == 0;
    /* hyperband: Ray Tune's HyperBandScheduler takes these three (its brackets follow) */
    if (t == SPACE_SCHED_HYPERBAND)
        return strcmp(key, "max_t") == 0 || strcmp(key, "reduction_factor") == 0 ||
               strcmp(key, "stop_last_trials") == 0;
    if (strcmp(key, "max_t") == 0 || strcmp(key, "grace_period") == 0) return 1;
    if (t == SPACE_SCHED_ASHA)
        return strcmp(key, "reduction_factor") == 0 || strcmp(key, "brackets") == 0 ||
               strcmp(key, "stop_last_trials") == 0 || strcmp(key, "variant") == 0;
    return strcmp(key, "min_samples_required") == 0 || strcmp(key, "hard_stop") == 0;
}

/* Population Based Training's options (Ray Tune's PopulationBasedTraining arguments);
 * hyperparam_mutations is read with the space (parse_mutations), here only counted. */
static int parse_pbt(struct pctx *c, space_sched_opts_t *o, const sj_node_t *n)
{
    const sj_node_t *v;
    int rc;
    if ((v = space__json_get(n, "perturbation_interval")) &&
        (rc = get_double(c, v, 0, 1, &o->perturbation_interval,
                         "\"perturbation_interval\" must be a number > 0 (in time_attr units)")))
        return rc;
    if ((v = space__json_get(n, "quantile_fraction")) &&
        ((rc = get_double(c, v, 0, 0, &o->quantile_fraction,
                          "\"quantile_fraction\" must be a number between 0 and 0.5")) ||
         o->quantile_fraction > 0.5))
        return rc ? rc : at(c, v->off, "\"quantile_fraction\" must be a number between 0 and 0.5");
    if ((v = space__json_get(n, "resample_probability")) &&
        ((rc = get_double(c, v, 0, 0, &o->resample_probability,
                          "\"resample_probability\" must be a number between 0 and 1")) ||
         o->resample_probability > 1))
        return rc ? rc : at(c, v->off, "\"resample_probability\" must be a number between 0 and 1");
    if ((v = space__json_get(n, "burn_in_period")) &&
        (rc = get_double(c, v, 0, 0, &o->burn_in_period,
                         "\"burn_in_period\" must be a number >= 0 (in time_attr units)")))
        return rc;
    long long k = 0;
    if ((v = space__json_get(n, "keep_checkpoints"))) {
        if ((rc = get_int(c, v, 1, 1000000, &k,
                          "\"keep_checkpoints\" must be an integer >= 1 (checkpoints kept per "
                          "trial)")))
            return rc;
        o->keep_checkpoints = (int)k;
    }
    if ((v = space__json_get(n, "perturbation_factors"))) {
        const char *msg = "\"perturbation_factors\" must be a list of 1 to 8 numbers > 0, such "
                          "as [1.2, 0.8]";
        if (v->type != SJ_ARRAY || v->n < 1 || v->n > 8) return at(c, v->off, "%s", msg);
        o->nfactors = 0;
        for (const sj_node_t *e = v->child; e; e = e->next)
            if ((rc = get_double(c, e, 0, 1, &o->perturbation_factors[o->nfactors++], msg)))
                return rc;
    }
    if ((v = space__json_get(n, "hyperparam_mutations"))) {
        if (v->type != SJ_OBJECT || v->n == 0)
            return at(c, v->off,
                      "\"hyperparam_mutations\" must be an object of parameter names, each a "
                      "distribution or a list of values, such as {\"lr\": {\"loguniform\": "
                      "[0.0001, 0.1]}, \"batch\": [32, 64, 128]}");
        o->nmutations = (int)v->n;
    }
    return 0;
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
    o->stop_last_trials = 1;
    o->promotion = 0;
    o->hard_stop = 1;
    o->perturbation_interval = 60;
    o->quantile_fraction = 0.25;
    o->resample_probability = 0.25;
    o->perturbation_factors[0] = 1.2;
    o->perturbation_factors[1] = 0.8;
    o->nfactors = 2;
    o->burn_in_period = 0;
    o->keep_checkpoints = 2;
    o->nmutations = 0;
    if (!n) return 0;
    if (n->type != SJ_OBJECT) return at(c, n->off, "\"scheduler\" must be an object");
    int rc = check_keys(c, n, sched_keys_all, sizeof sched_keys_all / sizeof sched_keys_all[0],
                        "scheduler");
    if (rc) return rc;
    const sj_node_t *v;
    if ((v = space__json_get(n, "type"))) {
        if (v->type != SJ_STRING)
            return at(c, v->off,
                      "scheduler \"type\" must be \"fifo\", \"asha\", \"median\", \"pbt\" or "
                      "\"hyperband\"");
        size_t i = 0;
        while (i < SPACE_NSCHED && strcmp(v->str, sched_types[i]) != 0)
            i++;
        if (i == SPACE_NSCHED) {
            char q[80], dym[128];
            did_you_mean(v->str, sched_types, SPACE_NSCHED, dym, sizeof dym);
            return at(c, v->off,
                      "unknown scheduler type %s%s; use \"fifo\", \"asha\", \"median\", \"pbt\" "
                      "or \"hyperband\"",
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
    /* pbt has no max_t unless one is given (0: none) */
    if (o->type == SPACE_SCHED_PBT) o->max_t = 0;
    /* hyperband: Ray Tune's HyperBandScheduler defaults (max_t 81, reduction_factor 3) */
    if (o->type == SPACE_SCHED_HYPERBAND) {
        o->max_t = 81;
        o->reduction_factor = 3;
    }
    if ((v = space__json_get(n, "max_t")) &&
        (rc = get_double(c, v, 0, 1, &o->max_t, "\"max_t\" must be a number > 0")))
        return rc;
    if (v && o->type == SPACE_SCHED_HYPERBAND && o->max_t < 1)
        return at(c, v->off,
                  "hyperband \"max_t\" must be a number >= 1 (its first bracket trains "
                  "int(max_t) units)");
    /* The median rule's grace period may be 0 (Ray's MedianStoppingRule takes it, and its
     * tests use it); asha's is its first rung, which must be above 0. */
    const sj_node_t *gp = space__json_get(n, "grace_period");
    int median = o->type == SPACE_SCHED_MEDIAN;
    if (gp && (rc = get_double(c, gp, 0, !median, &o->grace_period,
                               median ? "\"grace_period\" must be a number >= 0"
                                      : "\"grace_period\" must be a number > 0")))
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
    if ((v = space__json_get(n, "stop_last_trials"))) {
        if (v->type != SJ_TRUE && v->type != SJ_FALSE)
            return at(c, v->off, "\"stop_last_trials\" must be true or false");
        o->stop_last_trials = v->type == SJ_TRUE;
    }
    if ((v = space__json_get(n, "variant"))) {
        int stopping = v->type == SJ_STRING && strcmp(v->str, "stopping") == 0;
        if (!stopping && !(v->type == SJ_STRING && strcmp(v->str, "promotion") == 0))
            return at(c, v->off,
                      "asha \"variant\" must be \"stopping\" (stop trials below a rung's cutoff, "
                      "the default) or \"promotion\" (pause at each rung, promote the best)");
        o->promotion = !stopping;
    }
    if ((v = space__json_get(n, "hard_stop"))) {
        if (v->type != SJ_TRUE && v->type != SJ_FALSE)
            return at(c, v->off, "\"hard_stop\" must be true or false");
        o->hard_stop = v->type == SJ_TRUE;
    }
    if ((rc = parse_pbt(c, o, n))) return rc;
    if (o->type != SPACE_SCHED_FIFO && o->type != SPACE_SCHED_PBT &&
        o->type != SPACE_SCHED_HYPERBAND && o->grace_period > o->max_t) {
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

/* ---- placeholders ------------------------------------------------------------------- */
/* Whether the name[0..len) path exists below node P: 0 never, 1 in some configurations (a
 * branch of a choice or grid_search), 2 always. len 0 is P itself. */
static int reach(const space_param_t *P, const char *name, size_t len);

static int reach_json(const cJSON *v, const char *name, size_t len)
{
    int head = 0;
    return len == 0 || space__lookup(v, name, len, &head) ? 2 : 0;
}

static int reach(const space_param_t *P, const char *name, size_t len)
{
    if (len == 0) return 2;
    if (P->kind == SPACE_P_CONSTANT) return reach_json(P->values, name, len);
    if (P->kind == SPACE_P_OBJECT) {
        int best = 0;
        for (size_t m = 0; m < P->nmembers; m++) {
            const char *key = P->members[m].name;
            size_t kl = strlen(key);
            if (kl == len && memcmp(key, name, len) == 0) return 2;
            if (kl < len && name[kl] == '.' && memcmp(key, name, kl) == 0) {
                int r = reach(&P->members[m], name + kl + 1, len - kl - 1);
                if (r > best) best = r;
            }
        }
        return best;
    }
    if (P->kind != SPACE_P_CHOICE && P->kind != SPACE_P_GRID) return 0;
    int all = 1, any = 0;
    for (size_t i = 0; i < P->nvalues; i++) {
        int r = P->alts ? reach(&P->alts[i], name, len)
                        : reach_json(cJSON_GetArrayItem(P->values, (int)i), name, len);
        all &= r == 2;
        any |= r > 0;
    }
    return all ? 2 : any;
}

/* Candidate names for a did-you-mean: every dotted path a placeholder could name. */
struct names {
    const char **v;
    char **own; /* the dotted ones, freed after */
    size_t n, cap, nown;
};

static void names_add(struct names *nm, const char *s, int owned)
{
    if (nm->n == nm->cap) {
        if (owned) free((char *)s);
        return;
    }
    nm->v[nm->n++] = s;
    if (owned) nm->own[nm->nown++] = (char *)s;
}

static void names_json(struct names *nm, const char *prefix, const cJSON *v, int depth);

static void names_under(struct names *nm, const char *prefix, const char *key, int depth,
                        const space_param_t *P, const cJSON *v)
{
    if (nm->n == nm->cap || depth > 8) return;
    size_t n = strlen(prefix) + strlen(key) + 2;
    char *path = malloc(n);
    if (!path) return;
    snprintf(path, n, "%s.%s", prefix, key);
    names_add(nm, path, 1); /* there is room: checked above */
    if (v) {
        names_json(nm, path, v, depth + 1);
        return;
    }
    for (size_t m = 0; m < P->nmembers; m++)
        names_under(nm, path, P->members[m].name, depth + 1, &P->members[m], NULL);
    for (size_t i = 0; P->alts && i < P->nvalues; i++)
        for (size_t m = 0; m < P->alts[i].nmembers; m++)
            names_under(nm, path, P->alts[i].members[m].name, depth + 1, &P->alts[i].members[m],
                        NULL);
    if (P->kind == SPACE_P_CONSTANT) names_json(nm, path, P->values, depth + 1);
    if ((P->kind == SPACE_P_CHOICE || P->kind == SPACE_P_GRID) && !P->alts)
        for (const cJSON *e = P->values->child; e; e = e->next)
            names_json(nm, path, e, depth + 1);
}

static void names_json(struct names *nm, const char *prefix, const cJSON *v, int depth)
{
    if (!cJSON_IsObject(v)) return;
    for (const cJSON *m = v->child; m; m = m->next)
        if (m->string) names_under(nm, prefix, m->string, depth, NULL, m);
}

/* Adds a note for `tune validate`; out of memory only loses the note. */
static void add_note(space_t *sp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(space_t *sp, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **nv = realloc(sp->notes, (sp->nnotes + 2) * sizeof *nv);
    if (!nv) return;
    sp->notes = nv;
    if ((nv[sp->nnotes] = strdup(buf))) sp->nnotes++;
    nv[sp->nnotes] = NULL;
}

/* Whether a placeholder can have a value: 2 always (a parameter, trial_id, trial_dir, or a
 * nested value every configuration has), 1 in some configurations, 0 never. Marks the
 * top-level parameter it reaches into in used[]. */
static int placeholder_reach(const space_t *sp, const char *name, size_t len, char *used)
{
    if ((len == 8 && memcmp(name, "trial_id", 8) == 0) ||
        (len == 9 && memcmp(name, "trial_dir", 9) == 0))
        return 2;
    int best = 0;
    for (size_t j = 0; j < sp->nparams; j++) {
        const char *pn = sp->params[j].name;
        size_t kl = strlen(pn);
        if (kl == len && memcmp(pn, name, len) == 0) {
            used[j] = 1;
            best = 2;
        } else if (kl < len && name[kl] == '.' && memcmp(pn, name, kl) == 0) {
            used[j] = 1;
            int r = reach(&sp->params[j], name + kl + 1, len - kl - 1);
            if (r > best) best = r;
        }
    }
    /* {max_t}: the scheduler's max_t (a parameter of that name comes first) */
    if (best == 0 && space__is_max_t(name, len) && space__has_max_t(&sp->set)) best = 2;
    return best;
}

/* Every {placeholder} in the command must name a parameter, a nested value (a.b), or
 * trial_id / trial_dir. Notes what validate should mention: parameters no placeholder
 * uses, and placeholders only some branches have. */
static int check_command(struct pctx *c, space_t *sp, const sj_node_t *cmd)
{
    char *used = calloc(sp->nparams + 1, 1);
    if (!used) return nomem(c->err, c->errlen);
    int rc = 0;
    size_t i = 0;
    const sj_node_t *prev = NULL;
    for (const sj_node_t *e = cmd->child; e && !rc; prev = e, e = e->next, i++) {
        const char *p = e->str, *bad = NULL;
        space_tmpl_piece_t piece;
        char msg[128];
        int r, whole = 0;
        while ((r = space__tmpl_next(&p, &piece, &bad, msg, sizeof msg)) > 0) {
            if (!piece.is_name) continue;
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(piece.len < 100 ? piece.len : 100), piece.s);
            whole = piece.s == e->str + 1 && piece.len + 2 == strlen(e->str);
            int reach_kind = placeholder_reach(sp, piece.s, piece.len, used);
            if (reach_kind == 1 && i == 0) {
                rc = at(c, e->off,
                        "command[0] (the program) cannot use \"{%s}\", which only some "
                        "configurations have",
                        name);
                break;
            }
            if (reach_kind == 1) {
                const char *opt = prev ? prev->str : NULL;
                if (whole && opt && opt[0] == '-' && !strchr(opt, '{'))
                    add_note(sp,
                             "command[%zu]: \"{%s}\" has a value only in some branches of a "
                             "choice or grid_search; a trial without it runs without "
                             "command[%zu], but \"%s\" before it stays: write them as one "
                             "element, \"%s={%s}\"",
                             i, name, i, opt, opt, name);
                else
                    add_note(sp,
                             "command[%zu]: \"{%s}\" has a value only in some branches of a "
                             "choice or grid_search; a trial without it runs without "
                             "command[%zu]",
                             i, name, i);
            }
            if (reach_kind > 0) continue;
            if (space__is_max_t(piece.s, piece.len)) {
                rc = at(c, e->off,
                        "command[%zu]: \"{max_t}\" is the scheduler's max_t, and the %s "
                        "scheduler has none: use asha or median, give pbt a \"max_t\", or "
                        "write the number",
                        i, sched_types[sp->set.sched.type]);
                break;
            }
            /* No parameter at all: suggest the closest name, dotted paths included. */
            struct names nm = {0};
            nm.cap = 512;
            nm.v = calloc(nm.cap, sizeof *nm.v);
            nm.own = calloc(nm.cap, sizeof *nm.own);
            char dym[160] = "";
            if (nm.v && nm.own) {
                for (size_t j = 0; j < sp->nparams; j++)
                    names_add(&nm, sp->params[j].name, 0);
                names_add(&nm, "trial_id", 0);
                names_add(&nm, "trial_dir", 0);
                for (size_t j = 0; j < sp->nparams; j++) {
                    const space_param_t *P = &sp->params[j];
                    for (size_t m = 0; m < P->nmembers; m++)
                        names_under(&nm, P->name, P->members[m].name, 0, &P->members[m], NULL);
                    for (size_t a = 0; P->alts && a < P->nvalues; a++)
                        for (size_t m = 0; m < P->alts[a].nmembers; m++)
                            names_under(&nm, P->name, P->alts[a].members[m].name, 0,
                                        &P->alts[a].members[m], NULL);
                    if (P->kind == SPACE_P_CONSTANT) names_json(&nm, P->name, P->values, 0);
                    if ((P->kind == SPACE_P_CHOICE || P->kind == SPACE_P_GRID) && !P->alts)
                        for (const cJSON *v = P->values->child; v; v = v->next)
                            names_json(&nm, P->name, v, 0);
                }
                did_you_mean(name, nm.v, nm.n, dym, sizeof dym);
            }
            for (size_t k = 0; k < nm.nown; k++)
                free(nm.own[k]);
            free(nm.own);
            free(nm.v);
            rc = at(c, e->off, "command[%zu]: \"{%s}\" names no parameter%s", i, name, dym);
            break;
        }
        if (!rc && r < 0) rc = at(c, e->off, "command[%zu]: %s", i, msg);
    }
    for (size_t j = 0; !rc && j < sp->nparams; j++)
        if (!used[j])
            add_note(sp,
                     "parameter \"%s\" is not used in command; the trial sees it only through "
                     "TUNE_CONFIG",
                     sp->params[j].name);
    free(used);
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
static int parse_mutations(struct pctx *c, space_t *sp, const sj_node_t *n)
{
    char q[80];
    if (!n) return 0;
    sp->muts = calloc(n->n, sizeof *sp->muts);
    sp->mut_pos = calloc(n->n, sizeof *sp->mut_pos);
    if (!sp->muts || !sp->mut_pos) return nomem(c->err, c->errlen);
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
            did_you_mean(m->key, names, nn, dym, sizeof dym);
            return at(c, m->key_off,
                      "hyperparam_mutations: %s is not a parameter of \"space\"%s (a mutation "
                      "changes a parameter the trial already has)",
                      quoted(m->key, q, sizeof q), dym);
        }
        if (sp->params[p].kind == SPACE_P_GRID)
            return at(c, m->key_off,
                      "hyperparam_mutations: %s is a grid_search parameter, which PBT leaves as "
                      "the grid set it; mutate another parameter",
                      quoted(m->key, q, sizeof q));
        space_param_t *P = &sp->muts[sp->nmuts];
        sp->mut_pos[sp->nmuts++] = p;
        if (m->type == SJ_ARRAY) {
            if (m->n == 0)
                return at(c, m->off, "hyperparam_mutations: %s needs at least one value",
                          quoted(m->key, q, sizeof q));
            for (const sj_node_t *e = m->child; e; e = e->next)
                if (e->type == SJ_OBJECT || e->type == SJ_ARRAY)
                    return at(c, e->off,
                              "hyperparam_mutations: the values of %s must be plain numbers, "
                              "strings or booleans",
                              quoted(m->key, q, sizeof q));
            if (dup_str(&P->name, m->key, c->err, c->errlen)) return SPACE_ENOMEM;
            P->kind = SPACE_P_CHOICE;
            P->values = space__json_to_cjson(m);
            P->nvalues = m->n;
            P->rkey = (uint64_t)p;
            if (!P->values) return nomem(c->err, c->errlen);
            continue;
        }
        if (m->type != SJ_OBJECT)
            return at(c, m->off,
                      "hyperparam_mutations: %s must be a distribution such as {\"loguniform\": "
                      "[0.0001, 0.1]} or a list of values",
                      quoted(m->key, q, sizeof q));
        int rc = parse_param(c, P, m, p);
        if (rc) return rc;
        if (P->kind == SPACE_P_GRID || P->kind == SPACE_P_OBJECT || P->kind == SPACE_P_CONSTANT ||
            P->alts)
            return at(c, m->off,
                      "hyperparam_mutations: %s must be one distribution (uniform, loguniform, "
                      "randint, choice of plain values, ...), not a grid_search or a nested space",
                      quoted(m->key, q, sizeof q));
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
static int layout_grid(struct pctx *c, space_t *sp, const sj_node_t *space_node,
                       long long num_samples)
{
    size_t total = 0, ng = 0;
    for (size_t i = 0; i < sp->nparams; i++)
        total += count_grids(&sp->params[i]);
    space_param_t **g = calloc(total ? total : 1, sizeof *g);
    if (!g) return nomem(c->err, c->errlen);
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
        return at(c, space_node ? space_node->key_off : 0,
                  "more than %u trials (num_samples x grid points); split the experiment",
                  SPACE_MAX_TRIALS);
    sp->n_grid_points = points;
    sp->num_trials = points * (size_t)num_samples;
    return 0;
}

/* A boolean key (default def). */
static int get_bool(struct pctx *c, const sj_node_t *root, const char *key, int def, int *out)
{
    const sj_node_t *v = space__json_get(root, key);
    *out = def;
    if (!v) return 0;
    if (v->type != SJ_TRUE && v->type != SJ_FALSE)
        return at(c, v->off, "\"%s\" must be true or false", key);
    *out = v->type == SJ_TRUE;
    return 0;
}

/* "stop", "fail_fast", "allow_missing_metric", "stop_experiment_on_target", "reporter":
 * when a run ends or speaks up (Ray Tune's stop= / fail_fast / CLIReporter). */
static int parse_run_limits(struct pctx *c, space_settings_t *s, const sj_node_t *root)
{
    const sj_node_t *v;
    int rc;
    s->fail_fast = 3;
    if ((v = space__json_get(root, "fail_fast"))) {
        long long k = 0;
        if (v->type == SJ_TRUE || v->type == SJ_FALSE)
            k = v->type == SJ_TRUE;
        else if ((rc = get_int(c, v, 0, INT_MAX, &k,
                               "\"fail_fast\" must be a non-negative integer (how many identical "
                               "early failures stop the experiment; 0 or false: never) or true")))
            return rc;
        s->fail_fast = (int)k;
    }
    if ((rc = get_bool(c, root, "allow_missing_metric", 0, &s->allow_missing_metric))) return rc;
    if ((rc = get_bool(c, root, "stop_experiment_on_target", 0, &s->stop_experiment_on_target)))
        return rc;
    if ((v = space__json_get(root, "stop"))) {
        if (v->type != SJ_OBJECT)
            return at(c, v->off,
                      "\"stop\" must be an object of criteria such as {\"val_accuracy\": 0.98, "
                      "\"training_iteration\": 50}");
        if (v->n > SPACE_MAX_STOP)
            return at(c, v->off, "\"stop\" takes at most %d criteria", SPACE_MAX_STOP);
        s->stop = calloc(v->n ? v->n : 1, sizeof *s->stop);
        if (!s->stop) return nomem(c->err, c->errlen);
        for (const sj_node_t *m = v->child; m; m = m->next) {
            if (m->type != SJ_NUMBER)
                return at(c, m->off, "stop criterion \"%s\" must be a number (the target), not %s",
                          m->key, type_name(m));
            if (!*m->key) return at(c, m->key_off, "a stop criterion needs a result key");
            if (dup_str(&s->stop[s->nstop].key, m->key, c->err, c->errlen)) return SPACE_ENOMEM;
            s->stop[s->nstop++].target = m->num;
        }
    }
    if (s->stop_experiment_on_target) {
        int has_metric_target = 0;
        for (size_t i = 0; i < s->nstop; i++)
            has_metric_target |= s->metric && strcmp(s->stop[i].key, s->metric) == 0;
        if (!has_metric_target)
            return at_path(c, "stop_experiment_on_target",
                           "needs a \"stop\" target for the experiment's metric%s%s%s (e.g. "
                           "\"stop\": {\"%s\": ...})",
                           s->metric ? " \"" : "", s->metric ? s->metric : "",
                           s->metric ? "\"" : "", s->metric ? s->metric : "val_accuracy");
    }
    if ((v = space__json_get(root, "reporter"))) {
        static const char *const keys[] = {"metric_columns", "parameter_columns"};
        if (v->type != SJ_OBJECT)
            return at(c, v->off,
                      "\"reporter\" must be an object: {\"metric_columns\": [...], "
                      "\"parameter_columns\": [...]}");
        if ((rc = check_keys(c, v, keys, 2, "reporter"))) return rc;
        const sj_node_t *a;
        if ((a = space__json_get(v, "metric_columns"))) {
            if (a->type != SJ_ARRAY)
                return at(c, a->off, "\"metric_columns\" must be an array of result keys");
            if (a->n > SPACE_MAX_COLUMNS)
                return at(c, a->off, "\"metric_columns\" takes at most %d keys", SPACE_MAX_COLUMNS);
            if ((rc = str_array(c, a, "metric_columns", &s->metric_columns, NULL))) return rc;
        }
        if ((a = space__json_get(v, "parameter_columns"))) {
            if (a->type != SJ_ARRAY)
                return at(c, a->off, "\"parameter_columns\" must be an array of parameter names");
            if ((rc = str_array(c, a, "parameter_columns", &s->parameter_columns, NULL))) return rc;
        }
    }
    return 0;
}

/* ---- the searcher: "search" and "points_to_evaluate" ------------------------------------ */
static const char *const search_types[] = {"random", "tpe"};
static const char *const search_presets[] = {"optuna", "bohb"};

/* "search": {"type": "random" | "tpe", "preset": "optuna" | "bohb"} (docs/search.md). */
static int parse_search(struct pctx *c, space_settings_t *s, const sj_node_t *n)
{
    static const char *const keys[] = {"type", "preset"};
    s->search = SPACE_SEARCH_RANDOM;
    s->search_preset = SPACE_TPE_OPTUNA;
    if (!n) return 0;
    if (n->type != SJ_OBJECT)
        return at(c, n->off, "\"search\" must be an object, e.g. {\"type\": \"tpe\"}");
    int rc = check_keys(c, n, keys, 2, "search");
    if (rc) return rc;
    const sj_node_t *v;
    char q[80], dym[128];
    if ((v = space__json_get(n, "type"))) {
        if (v->type != SJ_STRING)
            return at(c, v->off, "search \"type\" must be \"random\" or \"tpe\"");
        if (strcmp(v->str, "tpe") == 0) {
            s->search = SPACE_SEARCH_TPE;
        } else if (strcmp(v->str, "random") != 0) {
            did_you_mean(v->str, search_types, 2, dym, sizeof dym);
            return at(c, v->off, "unknown search type %s%s; use \"random\" or \"tpe\"",
                      quoted(v->str, q, sizeof q), dym);
        }
    }
    if ((v = space__json_get(n, "preset"))) {
        if (s->search != SPACE_SEARCH_TPE)
            return at(c, v->key_off,
                      "\"preset\" applies only to \"type\": \"tpe\" (random search has none)");
        if (v->type != SJ_STRING)
            return at(c, v->off, "search \"preset\" must be \"optuna\" or \"bohb\"");
        if (strcmp(v->str, "bohb") == 0) {
            s->search_preset = SPACE_TPE_BOHB;
        } else if (strcmp(v->str, "optuna") != 0) {
            did_you_mean(v->str, search_presets, 2, dym, sizeof dym);
            return at(c, v->off, "unknown TPE preset %s%s; use \"optuna\" or \"bohb\"",
                      quoted(v->str, q, sizeof q), dym);
        }
    }
    return 0;
}

/* Whether value v (at node n of the file) belongs to top-level parameter P: a value a
 * choice or grid_search lists, the constant itself, a number within a range (a whole
 * number for the integer kinds). Returns 0 or a located error naming the point and the
 * parameter. */
static int check_point_value(struct pctx *c, const space_t *sp, size_t i, size_t k,
                             const sj_node_t *n, const cJSON *v)
{
    const space_param_t *P = &sp->params[i];
    const char *kind = kind_name(P->kind);
    if (P->kind == SPACE_P_OBJECT)
        return at(c, n->off,
                  "points_to_evaluate[%zu].%s: a nested parameter cannot be given in a point "
                  "yet; leave it out (the searcher chooses it)",
                  k, P->name);
    if (P->kind == SPACE_P_CHOICE || P->kind == SPACE_P_GRID || P->kind == SPACE_P_CONSTANT) {
        double u;
        if (space_param_unit(sp, i, v, &u) == 0) return 0;
        char *lst = space_json_print(P->values);
        int rc =
            at(c, n->off, "points_to_evaluate[%zu].%s: %s is not a value of the %s %s", k, P->name,
               n->type == SJ_STRING ? "this string" : "this value", kind, lst ? lst : "");
        free(lst);
        return rc;
    }
    if (n->type != SJ_NUMBER || !isfinite(n->num))
        return at(c, n->off, "points_to_evaluate[%zu].%s must be a number (%s), not %s", k, P->name,
                  kind, type_name(n));
    double x = n->num;
    if (P->kind == SPACE_P_RANDN || P->kind == SPACE_P_QRANDN) return 0;
    if (is_int_kind(P->kind) && x != floor(x))
        return at(c, n->off, "points_to_evaluate[%zu].%s must be a whole number (%s)", k, P->name,
                  kind);
    double lo = P->a, hi = P->b;
    int hi_open = P->kind == SPACE_P_RANDINT || P->kind == SPACE_P_LOGRANDINT;
    if (x < lo || x > hi || (hi_open && x >= hi)) {
        char bl[32], bh[32], bx[32];
        return at(c, n->off, "points_to_evaluate[%zu].%s: %s is outside %s [%s, %s%s", k, P->name,
                  space_format_number(x, bx), kind, space_format_number(lo, bl),
                  space_format_number(hi, bh), hi_open ? ")" : "]");
    }
    return 0;
}

/* "points_to_evaluate": [{...}, ...], Ray Tune's configurations to try first. Each point
 * is an object of top-level parameters, every value checked against its parameter; there
 * cannot be more points than trials. Runs after the space and the grid are laid out. */
static int parse_points(struct pctx *c, space_t *sp, const sj_node_t *n)
{
    space_settings_t *s = &sp->set;
    if (!n) return 0;
    if (n->type != SJ_ARRAY)
        return at(c, n->off,
                  "\"points_to_evaluate\" must be an array of objects, e.g. [{\"lr\": 0.01}]");
    if (n->n > sp->num_trials)
        return at(c, n->off,
                  "\"points_to_evaluate\" has %zu points but the experiment runs %zu trials; "
                  "raise \"num_samples\" or drop points",
                  n->n, sp->num_trials);
    const char **names = calloc(sp->nparams ? sp->nparams : 1, sizeof *names);
    if (!names) return nomem(c->err, c->errlen);
    for (size_t i = 0; i < sp->nparams; i++)
        names[i] = sp->params[i].name;
    int rc = 0;
    size_t k = 0;
    for (const sj_node_t *pt = n->child; pt && !rc; pt = pt->next, k++) {
        if (pt->type != SJ_OBJECT) {
            rc = at(c, pt->off,
                    "points_to_evaluate[%zu] must be an object of parameter values, not %s", k,
                    type_name(pt));
            break;
        }
        for (const sj_node_t *m = pt->child; m && !rc; m = m->next) {
            size_t i = 0;
            while (i < sp->nparams && strcmp(names[i], m->key) != 0)
                i++;
            if (i == sp->nparams) {
                char q[80], dym[128];
                did_you_mean(m->key, names, sp->nparams, dym, sizeof dym);
                rc = at(c, m->key_off,
                        "points_to_evaluate[%zu]: %s is not a parameter of \"space\"%s", k,
                        quoted(m->key, q, sizeof q), dym);
                break;
            }
            cJSON *v = space__json_to_cjson(m);
            if (!v) {
                rc = nomem(c->err, c->errlen);
                break;
            }
            rc = check_point_value(c, sp, i, k, m, v);
            cJSON_Delete(v);
        }
    }
    free(names);
    if (rc) return rc;
    s->points_to_evaluate = space__json_to_cjson(n);
    if (!s->points_to_evaluate) return nomem(c->err, c->errlen);
    s->npoints = n->n;
    return 0;
}

const char *space_search_name(const space_settings_t *set)
{
    if (set->search != SPACE_SEARCH_TPE) return "random";
    return set->search_preset == SPACE_TPE_BOHB ? "TPE (bohb)" : "TPE (optuna)";
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
        int m = 0;
        while (mode->type == SJ_STRING && m < SPACE_NMODES &&
               strcmp(mode->str, space_mode_name((space_mode_t)m)) != 0)
            m++;
        if (mode->type != SJ_STRING || m == SPACE_NMODES)
            return at(c, mode->off, "\"mode\" must be \"min\" or \"max\"");
        s->mode = (space_mode_t)m;
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
                 {"time_budget_s", &s->time_budget_s, 0, 0},
                 {"trial_time_limit_s", &s->trial_time_limit_s, 0, 0}};
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
    if ((rc = parse_run_limits(c, s, root))) return rc;

    const sj_node_t *space_node = space__json_get(root, "space");
    if ((rc = parse_space_params(c, sp, space_node))) return rc;
    if ((rc =
             parse_mutations(c, sp, sched ? space__json_get(sched, "hyperparam_mutations") : NULL)))
        return rc;
    if ((rc = parse_command(c, s, space__json_get(root, "command")))) return rc;
    if ((rc = check_command(c, sp, space__json_get(root, "command")))) return rc;
    if ((rc = parse_search(c, s, space__json_get(root, "search")))) return rc;
    if (s->search == SPACE_SEARCH_TPE && s->sched.type == SPACE_SCHED_PBT) {
        /* Ray Tune refuses a search algorithm with PopulationBasedTraining too: PBT's exploit
         * and explore choose the configurations after the first ones, so a model of results
         * would be fitted to trials whose configuration changed under them. */
        const sj_node_t *se = space__json_get(root, "search");
        return at(c, se->off,
                  "\"search\" tpe cannot be used with the pbt scheduler (PBT chooses the "
                  "configurations by exploit and explore): remove \"search\" (random starting "
                  "points; points_to_evaluate still works) or use asha with tpe");
    }
    if (s->search == SPACE_SEARCH_TPE) {
        add_note(sp, "\"search\" is tpe: each configuration is chosen when its trial launches, "
                     "from the results so far; those `tune validate --show` lists are the random "
                     "draws TPE starts from");
        if (s->sched.type == SPACE_SCHED_ASHA && s->sched.brackets > 1)
            add_note(sp,
                     "TPE models the rungs of ASHA's first bracket only (\"brackets\" is %d): "
                     "trials of the other brackets count by their results at those milestones",
                     s->sched.brackets);
    }
    if ((rc = layout_grid(c, sp, space_node, s->num_samples))) return rc;
    return parse_points(c, sp, space__json_get(root, "points_to_evaluate"));
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

/* Frees what a node owns (not the node itself), its sub-spaces too. */
static void free_node(space_param_t *P)
{
    free(P->name);
    cJSON_Delete(P->values);
    free(P->gpath);
    for (size_t i = 0; P->alts && i < P->nvalues; i++)
        free_node(&P->alts[i]);
    free(P->alts);
    for (size_t m = 0; m < P->nmembers; m++)
        free_node(&P->members[m]);
    free(P->members);
}

void space_free(space_t *s)
{
    if (!s) return;
    free(s->set.name);
    free(s->set.metric);
    free_strv(s->set.command);
    free_strv(s->set.exec.srun_args);
    free(s->set.exec.allocation);
    for (size_t i = 0; i < s->set.nstop; i++)
        free(s->set.stop[i].key);
    free(s->set.stop);
    free_strv(s->set.metric_columns);
    free_strv(s->set.parameter_columns);
    cJSON_Delete(s->set.points_to_evaluate);
    for (size_t i = 0; i < s->nparams; i++) {
        free_node(&s->params[i]);
    }
    free(s->params);
    for (size_t i = 0; i < s->nmuts; i++)
        free_node(&s->muts[i]);
    free(s->muts);
    free(s->mut_pos);
    free_strv(s->notes);
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

int space_set_num_trials(space_t *s, size_t n, char *err, size_t errlen)
{
    if (n < s->num_trials || n > SPACE_MAX_TRIALS) {
        if (err && errlen)
            snprintf(err, errlen, "cannot grow %s from %zu to %zu trials (at most %u)", s->set.name,
                     s->num_trials, n, SPACE_MAX_TRIALS);
        return SPACE_EINVAL;
    }
    s->num_trials = n;
    return SPACE_OK;
}

const char *space_suggest(const char *word, const char *const *candidates, size_t n)
{
    return space__suggest(word, candidates, n);
}

const space_settings_t *space_settings(const space_t *s)
{
    return &s->set;
}

const char *space_note(const space_t *s, size_t i)
{
    return i < s->nnotes ? s->notes[i] : NULL;
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
    const space_settings_t *t = &s->set;
    cJSON *o = cJSON_CreateObject(), *res = NULL, *sc = NULL, *ex = NULL, *ps = NULL;
    if (!o) return NULL;
    int bad = add(o, "name", cJSON_CreateString(t->name));
    bad |= add(o, "metric", t->metric ? cJSON_CreateString(t->metric) : cJSON_CreateNull());
    bad |= add(o, "mode", cJSON_CreateString(space_mode_name(t->mode)));
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
        bad |= add(sc, "type", cJSON_CreateString(space_sched_name(t->sched.type)));
        bad |= add(sc, "time_attr", cJSON_CreateString(t->sched.time_attr));
        if (t->sched.type != SPACE_SCHED_PBT || t->sched.max_t > 0)
            bad |= add(sc, "max_t", cJSON_CreateNumber(t->sched.max_t));
        bad |= add(sc, "grace_period", cJSON_CreateNumber(t->sched.grace_period));
        bad |= add(sc, "reduction_factor", cJSON_CreateNumber(t->sched.reduction_factor));
        bad |= add(sc, "brackets", cJSON_CreateNumber(t->sched.brackets));
        bad |= add(sc, "min_samples_required", cJSON_CreateNumber(t->sched.min_samples_required));
        bad |= add(sc, "stop_last_trials", cJSON_CreateBool(t->sched.stop_last_trials));
        bad |=
            add(sc, "variant", cJSON_CreateString(t->sched.promotion ? "promotion" : "stopping"));
        bad |= add(sc, "hard_stop", cJSON_CreateBool(t->sched.hard_stop));
        if (t->sched.type == SPACE_SCHED_PBT) {
            bad |= add(sc, "perturbation_interval",
                       cJSON_CreateNumber(t->sched.perturbation_interval));
            bad |= add(sc, "quantile_fraction", cJSON_CreateNumber(t->sched.quantile_fraction));
            bad |=
                add(sc, "resample_probability", cJSON_CreateNumber(t->sched.resample_probability));
            bad |= add(sc, "perturbation_factors",
                       cJSON_CreateDoubleArray(t->sched.perturbation_factors, t->sched.nfactors));
            bad |= add(sc, "burn_in_period", cJSON_CreateNumber(t->sched.burn_in_period));
            bad |= add(sc, "keep_checkpoints", cJSON_CreateNumber(t->sched.keep_checkpoints));
        }
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
    bad |= add(o, "trial_time_limit_s", cJSON_CreateNumber(t->trial_time_limit_s));
    bad |= add(o, "max_failures", cJSON_CreateNumber(t->max_failures));
    bad |= add(o, "fail_fast", cJSON_CreateNumber(t->fail_fast));
    bad |= add(o, "allow_missing_metric", cJSON_CreateBool(t->allow_missing_metric));
    bad |= add(o, "stop_experiment_on_target", cJSON_CreateBool(t->stop_experiment_on_target));
    cJSON *stop = NULL, *rep = NULL;
    bad |= add(o, "stop", stop = cJSON_CreateObject());
    for (size_t i = 0; stop && i < t->nstop; i++)
        bad |= add(stop, t->stop[i].key, cJSON_CreateNumber(t->stop[i].target));
    bad |= add(o, "reporter", rep = cJSON_CreateObject());
    if (rep) {
        bad |= add(rep, "metric_columns",
                   t->metric_columns ? strv_json(t->metric_columns) : cJSON_CreateNull());
        bad |= add(rep, "parameter_columns",
                   t->parameter_columns ? strv_json(t->parameter_columns) : cJSON_CreateNull());
    }
    cJSON *se = NULL;
    bad |= add(o, "search", se = cJSON_CreateObject());
    if (se) {
        bad |=
            add(se, "type", cJSON_CreateString(t->search == SPACE_SEARCH_TPE ? "tpe" : "random"));
        if (t->search == SPACE_SEARCH_TPE)
            bad |= add(se, "preset",
                       cJSON_CreateString(t->search_preset == SPACE_TPE_BOHB ? "bohb" : "optuna"));
    }
    bad |= add(o, "points_to_evaluate",
               t->points_to_evaluate ? cJSON_Duplicate(t->points_to_evaluate, 1)
                                     : cJSON_CreateArray());
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
