/* search/parse_objectives.c: what an experiment optimises, as space.json says it: "metric"
 * and "mode" as one objective (a string) or several (lists of the same length), and
 * "constraints" on reported values, each mistake located with the fix in words; and the one
 * list of metric names that read as higher-is-better. Not for: a result's objective values
 * or violation (settings.c: space_objectives, space_violation), which scheduler may rank
 * several objectives (settings.c), or the ranking itself (pareto/). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/parse_int.h"
#include "search/render.h"

/* ---- space_metric_looks_max ---------------------------------------------------------- */
int space_metric_looks_max(const char *metric)
{
    /* Names whose bigger values are better; any other metric reads as a loss or an error. */
    static const char *const up[] = {"acc",   "accuracy", "auc",    "f1",   "precision", "recall",
                                     "score", "reward",   "return", "map",  "iou",       "dice",
                                     "bleu",  "rouge",    "r2",     "top1", "top5",      NULL};
    /* Whole words of the name: "val_acc", "eval/f1", "mean_reward", not "accumulated_loss". */
    for (const char *p = metric; p && *p;) {
        size_t n = strcspn(p, "_-./: ");
        for (size_t k = 0; n && up[k]; k++) {
            size_t i = 0;
            while (i < n && up[k][i] &&
                   ((p[i] >= 'A' && p[i] <= 'Z') ? p[i] + 32 : p[i]) == up[k][i])
                i++;
            if (i == n && !up[k][i]) return 1;
        }
        p += n;
        if (*p) p++;
    }
    return 0;
}

/* ---- "metric" and "mode" --------------------------------------------------------------- */
/* The mode a "mode" entry names, or -1. */
static int mode_of(const sj_node_t *e)
{
    for (int m = 0; e->type == SJ_STRING && m < SPACE_NMODES; m++)
        if (strcmp(e->str, space_mode_name((space_mode_t)m)) == 0) return m;
    return -1;
}

/* ` (did you mean "min"?)` for "minimize", "Min", "maximise"...: the words other tools use
 * (Optuna's "minimize", Keras's "min"/"max"); nothing otherwise. */
static const char *mode_did_you_mean(const sj_node_t *e, char *buf, size_t len)
{
    buf[0] = '\0';
    if (e->type != SJ_STRING) return buf;
    for (int m = 0; m < SPACE_NMODES; m++) {
        const char *name = space_mode_name((space_mode_t)m);
        size_t i = 0;
        while (i < 3 && e->str[i] && (e->str[i] | 0x20) == name[i])
            i++;
        if (i == 3) snprintf(buf, len, " (did you mean \"%s\"?)", name);
    }
    return buf;
}

/* The "mode" that fits n metrics, for a message: `"mode": ["min", "max"]` (one metric:
 * `"mode": "min"`), keeping each mode the file gives where it is valid and guessing the
 * others from the metric's name ("max" for an accuracy, else "min"). */
static const char *mode_fix(char *const *metrics, size_t n, const sj_node_t *mode, char *buf,
                            size_t len)
{
    size_t l = (size_t)snprintf(buf, len, "\"mode\": %s", n == 1 ? "" : "[");
    const sj_node_t *e = mode && mode->type == SJ_ARRAY ? mode->child : mode;
    for (size_t i = 0; i < n && l < len; i++) {
        int m = e ? mode_of(e) : -1;
        if (m < 0) m = space_metric_looks_max(metrics[i]) ? SPACE_MODE_MAX : SPACE_MODE_MIN;
        l += (size_t)snprintf(buf + l, len - l, "%s\"%s\"", i ? ", " : "",
                              space_mode_name((space_mode_t)m));
        if (e) e = mode->type == SJ_ARRAY ? e->next : NULL;
    }
    if (n != 1 && l < len) snprintf(buf + l, len - l, "]");
    return buf;
}

/* Appends a copy of name to s->metrics (sized for every entry beforehand). */
static int add_metric(struct space__parse_ctx *c, space_settings_t *s, const char *name)
{
    if (space__parse_dup_str(&s->metrics[s->nobjectives], name, c->err, c->errlen))
        return SPACE_ENOMEM;
    s->nobjectives++; /* counted once copied, so space_free frees a half-read list */
    return 0;
}

/* "metric": a string or a list of distinct non-empty strings into s->metrics. */
static int parse_metrics(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *v)
{
    const char *what = "\"metric\" must be a non-empty string (one objective) or a list of "
                       "them (several, such as [\"val_loss\", \"latency_ms\"])";
    if (v->type != SJ_STRING && v->type != SJ_ARRAY) return space__parse_at(c, v->off, "%s", what);
    if (v->type == SJ_STRING && !*v->str) return space__parse_at(c, v->off, "%s", what);
    if (v->type == SJ_ARRAY && v->n == 0)
        return space__parse_at(c, v->off,
                               "\"metric\" is an empty list: name at least one reported value, "
                               "such as [\"val_loss\", \"latency_ms\"]");
    if (v->type == SJ_ARRAY && v->n > SPACE_MAX_OBJECTIVES)
        return space__parse_at(c, v->off, "\"metric\" lists %zu objectives; at most %d are allowed",
                               v->n, SPACE_MAX_OBJECTIVES);
    size_t n = v->type == SJ_ARRAY ? v->n : 1;
    s->metrics = calloc(n, sizeof *s->metrics);
    s->modes = calloc(n, sizeof *s->modes);
    if (!s->metrics || !s->modes) return space__parse_nomem(c->err, c->errlen);
    if (v->type == SJ_STRING) return add_metric(c, s, v->str);
    size_t i = 0;
    for (const sj_node_t *e = v->child; e; e = e->next, i++) {
        if (e->type != SJ_STRING || !*e->str)
            return space__parse_at(c, e->off,
                                   "\"metric\" entries must be non-empty strings (the names of "
                                   "reported values), not %s",
                                   e->type == SJ_STRING ? "an empty string"
                                                        : space__parse_type_name(e));
        for (size_t j = 0; j < s->nobjectives; j++)
            if (strcmp(s->metrics[j], e->str) == 0) {
                char q[80];
                return space__parse_at(c, e->off,
                                       "\"metric\" lists %s twice (entries %zu and %zu): name each "
                                       "objective once",
                                       space__parse_quoted(e->str, q, sizeof q), j + 1, i + 1);
            }
        int rc = add_metric(c, s, e->str);
        if (rc) return rc;
    }
    return 0;
}

int space__parse_objectives(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *root)
{
    const sj_node_t *v = space__json_get(root, "metric");
    const sj_node_t *mode = space__json_get(root, "mode");
    char fix[256], dym[64];
    int rc;
    s->mode = SPACE_MODE_MIN;
    if (v && (rc = parse_metrics(c, s, v))) return rc;
    size_t n = s->nobjectives;
    s->metric = n ? s->metrics[0] : NULL;
    if (!mode) {
        /* One objective defaults to "min" (the higher-is-better names are refused later, in
         * settings.c, after the scheduler's own demand for a mode). Several must each say:
         * a default would minimise an accuracy beside a loss without a word. */
        if (n > 1)
            return space__parse_at(c, v->off,
                                   "\"mode\" is missing for %zu metrics: add %s (one per metric, "
                                   "in the order of \"metric\")",
                                   n, mode_fix(s->metrics, n, NULL, fix, sizeof fix));
        return 0;
    }
    if (mode->type != SJ_STRING && mode->type != SJ_ARRAY)
        return space__parse_at(c, mode->off,
                               "\"mode\" must be \"min\" or \"max\" (or a list of them, one per "
                               "metric)");
    /* Every entry is checked before the lengths: a misspelt mode is the nearer mistake. */
    const sj_node_t *e = mode->type == SJ_ARRAY ? mode->child : mode;
    for (; e; e = mode->type == SJ_ARRAY ? e->next : NULL)
        if (mode_of(e) < 0)
            return space__parse_at(c, e->off, "\"mode\" must be \"min\" or \"max\"%s",
                                   mode_did_you_mean(e, dym, sizeof dym));
    size_t nm = mode->type == SJ_ARRAY ? mode->n : 1;
    if (mode->type == SJ_ARRAY && nm == 0)
        return space__parse_at(c, mode->off, "\"mode\" is an empty list: write %s",
                               n ? mode_fix(s->metrics, n, mode, fix, sizeof fix)
                                 : "\"mode\": \"min\" or \"max\"");
    if (n == 0 && nm > 1)
        return space__parse_at(c, mode->off,
                               "\"mode\" has %zu entries but there is no \"metric\": add "
                               "\"metric\": [...] with one reported value per mode",
                               nm);
    if (n > 1 && mode->type == SJ_STRING)
        return space__parse_at(c, mode->off,
                               "\"mode\" is one string for %zu metrics: write %s (one per metric, "
                               "in the order of \"metric\")",
                               n, mode_fix(s->metrics, n, mode, fix, sizeof fix));
    if (n && nm != n)
        return space__parse_at(c, mode->off, "\"mode\" has %zu entr%s for %zu metric%s: write %s",
                               nm, nm == 1 ? "y" : "ies", n, n == 1 ? "" : "s",
                               mode_fix(s->metrics, n, mode, fix, sizeof fix));
    e = mode->type == SJ_ARRAY ? mode->child : mode;
    s->mode = (space_mode_t)mode_of(e);
    for (size_t i = 0; i < n; i++, e = e ? e->next : NULL)
        s->modes[i] = (space_mode_t)mode_of(e);
    return 0;
}

/* ---- "constraints" ---------------------------------------------------------------------- */
static const char *const cmp_names[SPACE_NCMP] = SPACE_CMP_NAMES;

/* The comparison op names, or -1. */
static int cmp_of(const char *op)
{
    for (int i = 0; i < SPACE_NCMP; i++)
        if (strcmp(op, cmp_names[i]) == 0) return i;
    return -1;
}

/* An operator space.json does not know: equality gets its own words (no measured value is
 * exactly equal to a bound: a range says what is meant), the words other tools write ("le",
 * "lte", Python's operator names) and the misspelt ones ("=<") a did-you-mean. */
static int unknown_cmp(struct space__parse_ctx *c, const sj_node_t *key, const sj_node_t *op)
{
    static const struct {
        const char *word;
        space_cmp_t cmp;
    } words[] = {{"le", SPACE_CMP_LE},  {"lte", SPACE_CMP_LE}, {"ge", SPACE_CMP_GE},
                 {"gte", SPACE_CMP_GE}, {"lt", SPACE_CMP_LT},  {"gt", SPACE_CMP_GT}};
    char q[80], k[80], dym[64];
    space__parse_quoted(op->key, q, sizeof q);
    space__parse_quoted(key->key, k, sizeof k);
    if (strcmp(op->key, "==") == 0 || strcmp(op->key, "=") == 0)
        return space__parse_at(
            c, op->key_off,
            "constraint %s: %s is not a constraint on a real value (a measured value almost "
            "never equals a bound exactly): use a range, such as {\">=\": low, \"<=\": high}",
            k, q);
    dym[0] = '\0';
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t j = 0;
        while (words[i].word[j] && (op->key[j] | 0x20) == words[i].word[j])
            j++;
        if (!words[i].word[j] && !op->key[j])
            snprintf(dym, sizeof dym, " (did you mean \"%s\"?)", cmp_names[words[i].cmp]);
    }
    if (!dym[0]) space__parse_did_you_mean(op->key, cmp_names, SPACE_NCMP, dym, sizeof dym);
    return space__parse_at(c, op->key_off,
                           "constraint %s: unknown comparison %s%s; use \"<=\", \">=\", \"<\" or "
                           "\">\"",
                           k, q, dym);
}

/* Whether one key's comparisons leave some value that meets them all: the largest lower
 * bound against the smallest upper one. Returns 0 or a located error. */
static int check_range(struct space__parse_ctx *c, const sj_node_t *key,
                       const space_constraint_t *k, size_t n)
{
    double lo = -INFINITY, hi = INFINITY;
    int lo_strict = 0, hi_strict = 0;
    for (size_t i = 0; i < n; i++) {
        double b = k[i].bound;
        int strict = k[i].op == SPACE_CMP_LT || k[i].op == SPACE_CMP_GT;
        if (k[i].op == SPACE_CMP_GE || k[i].op == SPACE_CMP_GT) {
            if (b > lo || (b == lo && strict)) lo = b, lo_strict = strict;
        } else if (b < hi || (b == hi && strict)) {
            hi = b, hi_strict = strict;
        }
    }
    if (lo < hi || (lo == hi && !lo_strict && !hi_strict)) return 0;
    char q[80], a[32], b[32];
    return space__parse_at(c, key->off,
                           "constraint %s can never be met: it asks for a value %s %s and %s %s",
                           space__parse_quoted(key->key, q, sizeof q),
                           lo_strict ? ">" : ">=", space_format_number(lo, a),
                           hi_strict ? "<" : "<=", space_format_number(hi, b));
}

int space__parse_constraints(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *root)
{
    const sj_node_t *v = space__json_get(root, "constraints");
    if (!v) return 0;
    const char *eg = "{\"gpu_mem_gb\": {\"<=\": 16}, \"latency_ms\": {\"<\": 20}}";
    if (v->type != SJ_OBJECT)
        return space__parse_at(c, v->off,
                               "\"constraints\" must be an object of reported keys, each with its "
                               "bounds, such as %s",
                               eg);
    if (v->n == 0)
        return space__parse_at(c, v->off,
                               "\"constraints\" is empty: remove it, or bound a reported value, "
                               "such as %s",
                               eg);
    size_t total = 0;
    for (const sj_node_t *m = v->child; m; m = m->next)
        total += m->type == SJ_OBJECT ? m->n : 0;
    s->constraints = calloc(total ? total : 1, sizeof *s->constraints);
    if (!s->constraints) return space__parse_nomem(c->err, c->errlen);
    char q[80];
    for (const sj_node_t *m = v->child; m; m = m->next) {
        space__parse_quoted(m->key, q, sizeof q);
        if (!*m->key) return space__parse_at(c, m->key_off, "a constraint needs a result key");
        if (m->type != SJ_OBJECT)
            return space__parse_at(c, m->off,
                                   "constraint %s must be an object of comparisons, such as "
                                   "{\"<=\": 16}, not %s",
                                   q, space__parse_type_name(m));
        if (m->n == 0)
            return space__parse_at(c, m->off,
                                   "constraint %s has no comparison: write one such as {\"<=\": "
                                   "16} (\"<=\", \">=\", \"<\" or \">\")",
                                   q);
        size_t first = s->nconstraints;
        for (const sj_node_t *op = m->child; op; op = op->next) {
            int k = cmp_of(op->key);
            if (k < 0) return unknown_cmp(c, m, op);
            if (op->type != SJ_NUMBER)
                return space__parse_at(c, op->off,
                                       "constraint %s \"%s\": the bound must be a number, not %s",
                                       q, op->key, space__parse_type_name(op));
            /* finite: the JSON reader refuses 1e999 and has no NaN */
            if (s->nconstraints == SPACE_MAX_CONSTRAINTS)
                return space__parse_at(c, op->key_off,
                                       "\"constraints\" has more than %d comparisons: keep the "
                                       "ones that matter",
                                       SPACE_MAX_CONSTRAINTS);
            space_constraint_t *ct = &s->constraints[s->nconstraints];
            if (space__parse_dup_str(&ct->key, m->key, c->err, c->errlen)) return SPACE_ENOMEM;
            ct->op = (space_cmp_t)k;
            ct->bound = op->num;
            s->nconstraints++;
        }
        int rc = check_range(c, m, &s->constraints[first], s->nconstraints - first);
        if (rc) return rc;
    }
    return 0;
}
