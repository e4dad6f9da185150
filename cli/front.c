/* cli: an experiment's trials as points of several objectives, the one place the commands
 * get them from (front.h): the stored space.json parsed back for its objectives and
 * constraints, each trial's last result read through space_objectives / space_violation,
 * and pareto_rank's order and levels. Not for: ranking or judging results itself (pareto/
 * and search/settings.c hold those rules), nor printing. */
#include "cli/front.h"
#include "cli/cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pareto/pareto.h"
#include "search/render.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int cli_front_multi(const space_settings_t *set)
{
    return set && set->nobjectives > 1;
}

/* ---- the stored space.json -------------------------------------------------------- */
static int text_row(void *ud, int ncol, const char *const *names, const char *const *v,
                    const int *types)
{
    (void)ncol, (void)names, (void)types;
    char **out = ud;
    free(*out);
    *out = strdup(v[0] ? v[0] : "");
    return 0;
}

int cli_front_space(store_t *st, const char *name, space_t **out, char *err, size_t errlen)
{
    char *text = NULL;
    const char *b[] = {name};
    if (store_query(st, "SELECT space_json FROM experiments WHERE name = ?1", b, 1, text_row, &text,
                    err, errlen) != 0) {
        free(text);
        return -1;
    }
    if (!text) return fail(err, errlen, "no experiment named \"%s\"", name);
    char label[300];
    snprintf(label, sizeof label, "%s (stored space.json)", name);
    space_t *sp = NULL;
    int rc = space_parse(text, strlen(text), label, &sp, err, errlen);
    free(text);
    if (rc != 0) {
        space_free(sp);
        return -1;
    }
    *out = sp;
    return 0;
}

/* ---- ranking ------------------------------------------------------------------------- */
void cli_front_free(cli_front_t *f)
{
    if (!f) return;
    free(f->src);
    free(f->ids);
    free(f->values);
    free(f->obj);
    free(f->violation);
    free(f->level);
    free(f->order);
    space_free(f->space);
    memset(f, 0, sizeof *f);
}

int cli_front_rank(const space_settings_t *set, size_t n, const int64_t *ids,
                   const cJSON *const *results, cli_front_t *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    size_t k = set->nobjectives, m = 0;
    if (k == 0) return fail(err, errlen, "the experiment has no metric");
    for (size_t i = 0; i < n; i++)
        m += results[i] != NULL;
    f->k = k;
    f->set = set;
    f->src = malloc((m + 1) * sizeof *f->src);
    f->ids = malloc((m + 1) * sizeof *f->ids);
    f->values = malloc((m * k + 1) * sizeof *f->values);
    f->obj = malloc((m * k + 1) * sizeof *f->obj);
    f->violation = malloc((m + 1) * sizeof *f->violation);
    f->level = malloc((m + 1) * sizeof *f->level);
    f->order = malloc((m + 1) * sizeof *f->order);
    if (!f->src || !f->ids || !f->values || !f->obj || !f->violation || !f->level || !f->order) {
        cli_front_free(f);
        return fail(err, errlen, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (!results[i]) continue;
        size_t p = f->n++;
        f->src[p] = i;
        f->ids[p] = ids[i];
        space_objectives(set, results[i], f->obj + p * k);
        /* As reported: the objective undone of its sign, NaN kept (space_objectives has
         * already judged what counts as a value). */
        for (size_t j = 0; j < k; j++) {
            double o = f->obj[p * k + j];
            f->values[p * k + j] = set->modes[j] == SPACE_MODE_MAX ? -o : o;
        }
        f->violation[p] = space_violation(set, results[i]);
        f->nfeasible += f->violation[p] == 0;
    }
    if (f->n && pareto_rank(f->n, k, f->obj, f->violation, f->ids, f->order, f->level, err,
                            errlen) != PARETO_OK) {
        cli_front_free(f);
        return -1;
    }
    for (size_t i = 0; i < f->n; i++)
        f->nfront += cli_front_on(f, i);
    return 0;
}

struct last_rows {
    int64_t *ids;
    cJSON **res;
    size_t n, cap;
    int oom;
};

static int last_row(void *ud, int ncol, const char *const *names, const char *const *v,
                    const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct last_rows *L = ud;
    if (L->n == L->cap) {
        size_t cap = L->cap ? 2 * L->cap : 64;
        int64_t *ids = realloc(L->ids, cap * sizeof *ids);
        if (ids) L->ids = ids;
        cJSON **res = realloc(L->res, cap * sizeof *res);
        if (res) L->res = res;
        if (!ids || !res) {
            L->oom = 1;
            return 1;
        }
        L->cap = cap;
    }
    L->ids[L->n] = v[0] ? strtoll(v[0], NULL, 10) : 0;
    L->res[L->n] = v[1] ? cJSON_Parse(v[1]) : NULL;
    L->n++;
    return 0;
}

int cli_front_load(store_t *st, const char *name, cli_front_t *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    space_t *sp = NULL;
    if (cli_front_space(st, name, &sp, err, errlen) != 0) return -1;
    struct last_rows L = {0};
    const char *b[] = {name};
    int rc = store_query(st,
                         "SELECT trial_no, last_result FROM trial_summary WHERE experiment = ?1"
                         " ORDER BY trial_no",
                         b, 1, last_row, &L, err, errlen);
    if (rc == 0 && L.oom) rc = fail(err, errlen, "out of memory");
    if (rc == 0)
        rc = cli_front_rank(space_settings(sp), L.n, L.ids, (const cJSON *const *)L.res, f, err,
                            errlen);
    for (size_t i = 0; i < L.n; i++)
        cJSON_Delete(L.res[i]);
    free(L.res);
    free(L.ids);
    if (rc != 0) {
        space_free(sp);
        return -1;
    }
    f->space = sp;
    return 0;
}

/* ---- reading the ranking ------------------------------------------------------------ */
static int finite_point(const cli_front_t *f, size_t i)
{
    for (size_t j = 0; j < f->k; j++)
        if (isnan(f->obj[i * f->k + j])) return 0;
    return 1;
}

int cli_front_on(const cli_front_t *f, size_t i)
{
    return f->violation[i] == 0 && finite_point(f, i) && f->level[i] == 0;
}

int cli_front_level(const cli_front_t *f, size_t i)
{
    return f->violation[i] == 0 && finite_point(f, i) ? f->level[i] : -1;
}

long cli_front_pick(const cli_front_t *f)
{
    for (size_t q = 0; q < f->n; q++)
        if (cli_front_on(f, f->order[q])) return (long)f->order[q];
    return -1;
}

long cli_front_find(const cli_front_t *f, int64_t id)
{
    /* the trials come in trial order (the store's, a snapshot's): halve, then look */
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < f->n && f->ids[lo] == id) return (long)lo;
    for (size_t i = 0; i < f->n; i++) /* given in another order */
        if (f->ids[i] == id) return (long)i;
    return -1;
}

static int cmp_first(const void *a, const void *b, void *ud)
{
    const cli_front_t *f = ud;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    double u = f->obj[x * f->k], v = f->obj[y * f->k];
    if (u != v) return u < v ? -1 : 1;
    return (f->ids[x] > f->ids[y]) - (f->ids[x] < f->ids[y]);
}

int cli_front_sorted(const cli_front_t *f, size_t **out, size_t *nout)
{
    size_t *s = malloc((f->nfront + 1) * sizeof *s), m = 0;
    if (!s) return -1;
    for (size_t i = 0; i < f->n; i++)
        if (cli_front_on(f, i)) s[m++] = i;
    /* obj holds the first objective to minimise: ascending is "best first in its mode" */
    qsort_r(s, m, sizeof *s, cmp_first, (void *)f);
    *out = s;
    *nout = m;
    return 0;
}

/* ---- constraints in words ---------------------------------------------------------- */
int cli_constraint_violated(const space_settings_t *set, size_t j, const cJSON *result,
                            double *value, double *by)
{
    /* space_violation of this one constraint: the settings' own rule, not a copy of it */
    space_settings_t one = *set;
    one.constraints = set->constraints + j;
    one.nconstraints = 1;
    double v = space_violation(&one, result);
    if (v == 0) return 0;
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(result, set->constraints[j].key);
    *value = cJSON_IsNumber(x) && isfinite(x->valuedouble) ? x->valuedouble : NAN;
    /* a strict bound met with equality is violated by the smallest double: by 0, said so */
    *by = v < 1e-300 ? 0 : v;
    return 1;
}

void cli_violation_words(const space_settings_t *set, const cJSON *result, char *out, size_t n)
{
    static const char *const cmp[SPACE_NCMP] = SPACE_CMP_NAMES;
    size_t len = 0;
    out[0] = 0;
    for (size_t j = 0; j < set->nconstraints && len < n; j++) {
        double value, by;
        if (!cli_constraint_violated(set, j, result, &value, &by)) continue;
        const space_constraint_t *c = &set->constraints[j];
        char b[32], v[32], d[32];
        space_format_number(c->bound, b);
        const char *op = (unsigned)c->op < SPACE_NCMP ? cmp[c->op] : "?";
        int w;
        if (isnan(value)) {
            w = snprintf(out + len, n - len, "%s%s missing (%s %s)", len ? "; " : "", c->key, op,
                         b);
        } else {
            cli_fmt_num(value, v, sizeof v);
            cli_fmt_num(by, d, sizeof d);
            w = snprintf(out + len, n - len, "%s%s=%s (%s %s, by %s)", len ? "; " : "", c->key, v,
                         op, b, d);
        }
        if (w < 0) break;
        len += (size_t)w;
    }
}
