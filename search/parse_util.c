/* search/parse_util.c: what the space.json parser's files (parse.c, settings.c,
 * placeholders.c, space.c) share: the distributions and their names, messages located at
 * FILE:LINE:COL, did-you-mean suggestions, typed getters that word their own errors, and
 * validate's notes. Not for: reading any
 * particular key (each section is read in its own file). */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/parse_int.h"

/* ---- the distributions -------------------------------------------------------------- */
const struct space__parse_dist space__parse_dists[] = {
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
_Static_assert(sizeof space__parse_dists / sizeof space__parse_dists[0] == SPACE__PARSE_NDISTS,
               "SPACE__PARSE_NDISTS counts the table");

const char *space__parse_kind_name(space_pkind_t k)
{
    if (k == SPACE_P_CONSTANT) return "constant";
    if (k == SPACE_P_OBJECT) return "object";
    for (size_t i = 0; i < SPACE__PARSE_NDISTS; i++)
        if (space__parse_dists[i].kind == k) return space__parse_dists[i].name;
    return "?";
}

/* ---- messages ------------------------------------------------------------------------ */
static int vmsg(struct space__parse_ctx *c, const char *prefix, const char *fmt, va_list ap)
{
    if (!c->err || c->errlen == 0) return SPACE_EINVAL;
    int k = snprintf(c->err, c->errlen, "%s", prefix);
    if (k >= 0 && (size_t)k < c->errlen) vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
    return SPACE_EINVAL;
}

/* An error at a byte offset of the file: "FILE:LINE:COL: message". */
int space__parse_at(struct space__parse_ctx *c, size_t off, const char *fmt, ...)
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
int space__parse_at_path(struct space__parse_ctx *c, const char *path, const char *fmt, ...)
{
    char prefix[PATH_MAX + 300];
    snprintf(prefix, sizeof prefix, "%s: %s: ", c->file, path);
    va_list ap;
    va_start(ap, fmt);
    vmsg(c, prefix, fmt, ap);
    va_end(ap);
    return SPACE_EINVAL;
}

int space__parse_nomem(char *err, size_t errlen)
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
const char *space__parse_did_you_mean(const char *word, const char *const *cand, size_t n,
                                      char *buf, size_t len)
{
    const char *s = space__suggest(word, cand, n);
    if (s)
        snprintf(buf, len, " (did you mean \"%s\"?)", s);
    else
        buf[0] = '\0';
    return buf;
}

/* Quotes a user string for a message, cut short so a message stays readable. */
const char *space__parse_quoted(const char *s, char *buf, size_t len)
{
    size_t n = strlen(s);
    if (n + 3 <= len && n <= 60)
        snprintf(buf, len, "\"%s\"", s);
    else
        snprintf(buf, len, "\"%.60s...\"", s);
    return buf;
}

/* ---- typed getters ---------------------------------------------------------------------- */
const char *space__parse_type_name(const sj_node_t *n)
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
int space__parse_get_int(struct space__parse_ctx *c, const sj_node_t *n, long long min,
                         long long max, long long *out, const char *what)
{
    if (n->type != SJ_NUMBER || n->num != floor(n->num) || n->num < (double)min ||
        n->num > (double)max)
        return space__parse_at(c, n->off, "%s", what);
    *out = (long long)n->num;
    return 0;
}

int space__parse_get_double(struct space__parse_ctx *c, const sj_node_t *n, double min,
                            int min_open, double *out, const char *what)
{
    if (n->type != SJ_NUMBER || n->num < min || (min_open && n->num == min))
        return space__parse_at(c, n->off, "%s", what);
    *out = n->num;
    return 0;
}

int space__parse_dup_str(char **dst, const char *s, char *err, size_t errlen)
{
    *dst = strdup(s);
    return *dst ? 0 : space__parse_nomem(err, errlen);
}

/* Every key of obj must be in allowed[]; `where` names the object in the message. */
int space__parse_check_keys(struct space__parse_ctx *c, const sj_node_t *obj,
                            const char *const *allowed, size_t n, const char *where)
{
    for (const sj_node_t *m = obj->child; m; m = m->next) {
        size_t i = 0;
        while (i < n && strcmp(m->key, allowed[i]) != 0)
            i++;
        if (i < n) continue;
        char q[80], dym[128];
        space__parse_did_you_mean(m->key, allowed, n, dym, sizeof dym);
        if (where)
            return space__parse_at(c, m->key_off, "unknown key %s in \"%s\"%s",
                                   space__parse_quoted(m->key, q, sizeof q), where, dym);
        return space__parse_at(c, m->key_off, "unknown key %s%s",
                               space__parse_quoted(m->key, q, sizeof q), dym);
    }
    return 0;
}

int space__parse_str_array(struct space__parse_ctx *c, const sj_node_t *n, const char *what,
                           char ***out, int *argc)
{
    char **v = calloc(n->n + 1, sizeof *v);
    if (!v) return space__parse_nomem(c->err, c->errlen);
    *out = v;
    size_t i = 0;
    for (const sj_node_t *e = n->child; e; e = e->next, i++) {
        if (e->type != SJ_STRING)
            return space__parse_at(c, e->off, "%s[%zu] must be a string, not %s", what, i,
                                   space__parse_type_name(e));
        if (space__parse_dup_str(&v[i], e->str, c->err, c->errlen)) return SPACE_ENOMEM;
    }
    if (argc) *argc = (int)n->n;
    return 0;
}

/* A boolean key (default def). */
int space__parse_get_bool(struct space__parse_ctx *c, const sj_node_t *root, const char *key,
                          int def, int *out)
{
    const sj_node_t *v = space__json_get(root, key);
    *out = def;
    if (!v) return 0;
    if (v->type != SJ_TRUE && v->type != SJ_FALSE)
        return space__parse_at(c, v->off, "\"%s\" must be true or false", key);
    *out = v->type == SJ_TRUE;
    return 0;
}

/* Adds a note for `tune validate`; out of memory only loses the note. */
void space__parse_note(space_t *sp, const char *fmt, ...)
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
