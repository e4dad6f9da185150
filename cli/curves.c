/* cli: reads one experiment back for `tune show`, `tune plot` and `tune report`: trials,
 * learning curves, decisions and rung milestones, all through the documented schema's
 * tables and views (docs/schema.md) with store_query; and the y range their charts draw
 * (the bulk of the curves, what lies outside it). Not for: drawing or printing. */
#include "cli/curves.h"
#include "cli/cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "search/settings.h"

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static double num(const char *s)
{
    return s ? strtod(s, NULL) : NAN;
}

static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- which experiment ----------------------------------------------------------- */
struct names {
    char **v;
    size_t n;
    int oom;
};

static int collect_name(void *ud, int ncol, const char *const *names, const char *const *values,
                        const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct names *nm = ud;
    char **v = realloc(nm->v, (nm->n + 1) * sizeof *v);
    if (!v || !(v[nm->n] = strdup(values[0] ? values[0] : ""))) {
        if (v) nm->v = v;
        nm->oom = 1;
        return 1;
    }
    nm->v = v;
    nm->n++;
    return 0;
}

static void names_free(struct names *nm)
{
    for (size_t i = 0; i < nm->n; i++)
        free(nm->v[i]);
    free(nm->v);
}

int cli_exp_pick(store_t *st, const char *db, const char *given, char **out, char *err,
                 size_t errlen)
{
    if (given) {
        int64_t id;
        int rc = store_experiment_find(st, given, &id, err, errlen);
        if (rc == STORE_NOTFOUND)
            return set_err(err, errlen, rc,
                           "no experiment named \"%s\" in %s (see tune ls --db %s)", given, db, db);
        if (rc != 0) return rc;
        if (!(*out = strdup(given))) return set_err(err, errlen, STORE_ERR, "out of memory");
        return 0;
    }
    struct names nm = {0};
    int rc = store_query(st, "SELECT name FROM experiments ORDER BY id", NULL, 0, collect_name, &nm,
                         err, errlen);
    if (rc == 0 && nm.oom) rc = set_err(err, errlen, STORE_ERR, "out of memory");
    if (rc == 0 && nm.n == 0)
        rc = set_err(err, errlen, STORE_NOTFOUND,
                     "%s holds no experiment yet (run one with tune run SPACE.json)", db);
    if (rc == 0 && nm.n > 1) {
        /* Implying one of several would show the wrong experiment without a word. */
        char list[512] = "";
        size_t k = 0;
        for (size_t i = 0; i < nm.n && k + 1 < sizeof list; i++) {
            int w = snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", nm.v[i]);
            if (w < 0) break;
            k += (size_t)w;
        }
        if (k >= sizeof list) memcpy(list + sizeof list - 4, "...", 4);
        rc = set_err(err, errlen, CLI_EXP_AMBIGUOUS, "%s holds %zu experiments (%s): say which one",
                     db, nm.n, list);
    }
    if (rc == 0 && !(*out = strdup(nm.v[0]))) rc = set_err(err, errlen, STORE_ERR, "out of memory");
    names_free(&nm);
    return rc;
}

/* ---- loading -------------------------------------------------------------------- */
struct loader {
    cli_exp_t *e;
    int oom;
    size_t last_idx; /* results arrive grouped by trial: the last match is usually right */
    size_t *cap;     /* curve capacity per trial */
    size_t *dcap;    /* decision capacity per trial */
};

static int exp_row(void *ud, int ncol, const char *const *names, const char *const *v,
                   const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct loader *L = ud;
    cli_exp_t *e = L->e;
    e->id = (int64_t)strtoll(v[0], NULL, 10);
    e->name = dup_or_null(v[1]);
    e->status = dup_or_null(v[2]);
    e->scheduler = dup_or_null(v[3]);
    e->exp_metric = dup_or_null(v[4]);
    e->mode_max = v[5] && strcmp(v[5], "max") == 0;
    e->num_trials = v[6] ? (int64_t)strtoll(v[6], NULL, 10) : 0;
    e->created_at = num(v[7]);
    e->ended_at = num(v[8]);
    e->settings_json = dup_or_null(v[9]);
    e->space_json = dup_or_null(v[10]);
    e->results_dir = dup_or_null(v[11]);
    if (!e->name) L->oom = 1;
    return 0;
}

static int trial_row(void *ud, int ncol, const char *const *names, const char *const *v,
                     const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct loader *L = ud;
    cli_exp_t *e = L->e;
    cli_trial_t *t = realloc(e->trials, (e->ntrials + 1) * sizeof *t);
    if (!t) {
        L->oom = 1;
        return 1;
    }
    e->trials = t;
    t = &e->trials[e->ntrials++];
    memset(t, 0, sizeof *t);
    t->id = (int64_t)strtoll(v[0], NULL, 10);
    t->trial_no = (int64_t)strtoll(v[1], NULL, 10);
    t->name = dup_or_null(v[2]);
    t->status = dup_or_null(v[3]);
    t->early_stopped = v[4] && strcmp(v[4], "0") != 0;
    t->config = dup_or_null(v[5]);
    t->slice = dup_or_null(v[6]);
    t->error = dup_or_null(v[7]);
    t->trial_dir = dup_or_null(v[8]);
    t->stderr_tail = dup_or_null(v[9]);
    t->attempt = v[10] ? atoi(v[10]) : 1;
    t->has_exit_code = v[11] != NULL;
    t->exit_code = v[11] ? atoi(v[11]) : 0;
    t->exit_signal = v[12] ? atoi(v[12]) : 0;
    t->started_at = num(v[13]);
    t->ended_at = num(v[14]);
    t->last = t->best = t->last_x = t->best_x = NAN;
    if (!t->name || !t->status || !t->config) L->oom = 1;
    return L->oom;
}

/* Trials are in trial_no order, not id order; ids grow with trial_no in practice, so a
 * bisection usually works, and a scan is the fallback that is always right. */
static long find_trial(struct loader *L, int64_t id)
{
    cli_exp_t *e = L->e;
    if (L->last_idx < e->ntrials && e->trials[L->last_idx].id == id) return (long)L->last_idx;
    size_t lo = 0, hi = e->ntrials;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->trials[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < e->ntrials && e->trials[lo].id == id) return (long)(L->last_idx = lo);
    for (size_t i = 0; i < e->ntrials; i++)
        if (e->trials[i].id == id) return (long)(L->last_idx = i);
    return -1;
}

static int result_row(void *ud, int ncol, const char *const *names, const char *const *v,
                      const int *types)
{
    (void)ncol, (void)names;
    struct loader *L = ud;
    long i = find_trial(L, (int64_t)strtoll(v[0], NULL, 10));
    if (i < 0) return 0;
    cli_trial_t *t = &L->e->trials[i];
    if (t->n == L->cap[i]) {
        size_t cap = L->cap[i] ? L->cap[i] * 2 : 16;
        double *x = realloc(t->x, cap * sizeof *x);
        if (x) t->x = x;
        double *y = realloc(t->y, cap * sizeof *y);
        if (y) t->y = y;
        if (!x || !y) {
            L->oom = 1;
            return 1;
        }
        L->cap[i] = cap;
    }
    double x = num(v[1]);
    if (isnan(x)) x = num(v[2]);
    /* Only numbers are metric values: a string or a boolean in the JSON is not a point. */
    double y = (types[3] == STORE_COL_INT || types[3] == STORE_COL_REAL) ? num(v[3]) : NAN;
    t->x[t->n] = x;
    t->y[t->n] = y;
    t->n++;
    return 0;
}

static int decision_row(void *ud, int ncol, const char *const *names, const char *const *v,
                        const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct loader *L = ud;
    long i = find_trial(L, (int64_t)strtoll(v[0], NULL, 10));
    if (i < 0) return 0;
    cli_trial_t *t = &L->e->trials[i];
    if (t->ndec == L->dcap[i]) {
        size_t cap = L->dcap[i] ? L->dcap[i] * 2 : 4;
        cli_decision_t *d = realloc(t->dec, cap * sizeof *d);
        if (!d) {
            L->oom = 1;
            return 1;
        }
        t->dec = d;
        L->dcap[i] = cap;
    }
    cli_decision_t *d = &t->dec[t->ndec++];
    memset(d, 0, sizeof *d);
    d->iteration = num(v[1]);
    d->time_value = num(v[2]);
    snprintf(d->action, sizeof d->action, "%s", v[3] ? v[3] : "");
    d->bracket = v[4] ? atoi(v[4]) : -1;
    d->rung = v[5] ? atoi(v[5]) : -1;
    d->milestone = num(v[6]);
    d->value = num(v[7]);
    d->cutoff = num(v[8]);
    d->reason = dup_or_null(v[9]);
    return 0;
}

/* time_attr and the ASHA milestones from the resolved settings: grace_period * rf^k below
 * max_t, the union over brackets (bracket s starts s rungs higher, docs/asha.md). */
static int read_settings(cli_exp_t *e)
{
    snprintf(e->time_attr, sizeof e->time_attr, "training_iteration");
    e->max_t = NAN;
    cJSON *s = e->settings_json ? cJSON_Parse(e->settings_json) : NULL;
    if (!s) return 0;
    cJSON *sc = cJSON_GetObjectItemCaseSensitive(s, "scheduler");
    cJSON *ta = cJSON_GetObjectItemCaseSensitive(sc, "time_attr");
    if (cJSON_IsString(ta) && ta->valuestring[0])
        snprintf(e->time_attr, sizeof e->time_attr, "%s", ta->valuestring);
    cJSON *type = cJSON_GetObjectItemCaseSensitive(sc, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "asha") == 0) {
        double max_t = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sc, "max_t"));
        double g = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sc, "grace_period"));
        double rf = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sc, "reduction_factor"));
        e->max_t = max_t;
        if (g > 0 && rf > 1 && max_t >= g) {
            /* The count as Ray computes it (floating-point logs), capped as asha.c is. */
            int k = (int)(log(max_t / g) / log(rf) + 1);
            if (k > 1024) k = 1024;
            e->milestones = calloc((size_t)k + 1, sizeof *e->milestones);
            if (!e->milestones) {
                cJSON_Delete(s);
                return -1;
            }
            for (int j = 0; j < k; j++) {
                double m = g * pow(rf, j);
                if (m < max_t) e->milestones[e->nmilestones++] = m;
            }
        }
    }
    cJSON_Delete(s);
    return 0;
}

static void finish_trial(const cli_exp_t *e, cli_trial_t *t)
{
    t->last = t->n ? t->y[t->n - 1] : NAN;
    t->last_x = t->n ? t->x[t->n - 1] : NAN;
    for (size_t k = 0; k < t->n; k++)
        if (cli_exp_better(e, t->y[k], t->best)) {
            t->best = t->y[k];
            t->best_x = t->x[k];
        }
}

static int any_value(const cli_exp_t *e)
{
    for (size_t i = 0; i < e->ntrials; i++)
        for (size_t k = 0; k < e->trials[i].n; k++)
            if (!isnan(e->trials[i].y[k])) return 1;
    return 0;
}

/* A metric asked for by name that no result of the experiment has is most likely a typo:
 * say so and list the numeric keys its results do have. Only when no point was found, so
 * the common case costs nothing; an experiment without results yet is not an error. */
static int check_metric(store_t *st, const cli_exp_t *e, char *err, size_t errlen)
{
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)e->id);
    const char *b[] = {idbuf, e->metric};
    struct names nm = {0};
    int rc = store_query(st,
                         "SELECT j.key FROM trials t JOIN results_current c"
                         " ON c.trial_id = t.id, json_each(c.data) j"
                         " WHERE t.experiment_id = ?1 AND j.type IN ('integer', 'real')"
                         " GROUP BY j.key ORDER BY j.key = ?2 DESC, min(c.id), min(j.id)"
                         " LIMIT 40",
                         b, 2, collect_name, &nm, err, errlen);
    if (rc == 0 && nm.oom) rc = set_err(err, errlen, STORE_ERR, "out of memory");
    if (rc == 0 && nm.n > 0 && strcmp(nm.v[0], e->metric) != 0) {
        char list[512] = "";
        size_t k = 0;
        for (size_t i = 0; i < nm.n && k + 1 < sizeof list; i++) {
            int w = snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", nm.v[i]);
            if (w < 0) break;
            k += (size_t)w;
        }
        if (k >= sizeof list) memcpy(list + sizeof list - 4, "...", 4);
        rc = set_err(err, errlen, STORE_NOTFOUND,
                     "experiment \"%s\" has no metric \"%s\": its results report %s", e->name,
                     e->metric, list);
    }
    names_free(&nm);
    return rc;
}

int cli_exp_load(store_t *st, const char *name, const char *metric, const char *trial,
                 unsigned flags, cli_exp_t **out, char *err, size_t errlen)
{
    if (metric && (strchr(metric, '"') || strchr(metric, '\\') || !metric[0]))
        return set_err(err, errlen, STORE_ERR,
                       "metric \"%s\": a metric name cannot be empty or hold '\"' or '\\'", metric);
    cli_exp_t *e = calloc(1, sizeof *e);
    if (!e) return set_err(err, errlen, STORE_ERR, "out of memory");
    struct loader L = {.e = e};
    int rc = store_query(st,
                         "SELECT id, name, status, scheduler, metric, mode, num_trials, created_at,"
                         " ended_at, settings_json, space_json, results_dir"
                         " FROM experiments WHERE name = ?1",
                         &name, 1, exp_row, &L, err, errlen);
    if (rc != 0) goto fail;
    if (!e->name) {
        rc = set_err(err, errlen, L.oom ? STORE_ERR : STORE_NOTFOUND,
                     L.oom ? "out of memory" : "no experiment named \"%s\"", name);
        goto fail;
    }
    if (read_settings(e) != 0) {
        rc = set_err(err, errlen, STORE_ERR, "out of memory");
        goto fail;
    }
    e->metric = dup_or_null(metric ? metric : e->exp_metric);
    /* The order of the shown metric: the experiment's mode is its own metric's, and says
     * nothing about another one (val_acc is not better low because val_loss is). */
    e->exp_mode_max = e->mode_max;
    e->own_metric = !metric || (e->exp_metric && strcmp(metric, e->exp_metric) == 0);
    if (flags & CLI_EXP_MODE_MAX)
        e->mode_max = 1;
    else if (flags & CLI_EXP_MODE_MIN)
        e->mode_max = 0;
    else if (!e->own_metric) {
        e->mode_max = space_metric_looks_max(e->metric);
        e->mode_guessed = 1;
    }

    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)e->id);
    const char *tb[] = {idbuf, trial};
    rc = store_query(st,
                     trial ? "SELECT id, trial_no, name, status, early_stopped, config, slice,"
                             " error, trial_dir, stderr_tail, attempt, exit_code, exit_signal,"
                             " started_at, ended_at FROM trials WHERE experiment_id = ?1"
                             " AND (name = ?2 OR CAST(trial_no AS TEXT) = ?2) ORDER BY trial_no"
                           : "SELECT id, trial_no, name, status, early_stopped, config, slice,"
                             " error, trial_dir, stderr_tail, attempt, exit_code, exit_signal,"
                             " started_at, ended_at FROM trials WHERE experiment_id = ?1"
                             " ORDER BY trial_no",
                     tb, trial ? 2 : 1, trial_row, &L, err, errlen);
    if (rc == 0 && L.oom) rc = set_err(err, errlen, STORE_ERR, "out of memory");
    if (rc != 0) goto fail;
    if (trial && e->ntrials == 0) {
        rc = set_err(err, errlen, STORE_NOTFOUND,
                     "experiment \"%s\" has no trial \"%s\" (trials are named by number, e.g. 3,"
                     " or by name, e.g. trial_00003; see tune trials %s)",
                     name, trial, name);
        goto fail;
    }
    L.cap = calloc(e->ntrials + 1, sizeof *L.cap);
    L.dcap = calloc(e->ntrials + 1, sizeof *L.dcap);
    if (!L.cap || !L.dcap) {
        rc = set_err(err, errlen, STORE_ERR, "out of memory");
        goto fail;
    }
    if (e->ntrials) {
        /* The one trial, or the experiment's: results_current holds each trial's current
         * attempt only, as `tune trials` and trial_summary count them. */
        char tid[32], path[160];
        snprintf(tid, sizeof tid, "%lld", (long long)(trial ? e->trials[0].id : e->id));
        int own = !metric || (e->exp_metric && strcmp(metric, e->exp_metric) == 0);
        snprintf(path, sizeof path, "$.\"%s\"", e->metric ? e->metric : "");
        const char *rb[] = {tid, path};
        char sql[640];
        snprintf(sql, sizeof sql,
                 "SELECT c.trial_id, c.time_value, c.iteration, %s FROM trials t"
                 " JOIN results_current c ON c.trial_id = t.id WHERE %s = ?1"
                 " ORDER BY c.trial_id, c.id",
                 own ? "c.metric"
                     : "CASE WHEN json_type(c.data, ?2) IN ('integer', 'real')"
                       " THEN json_extract(c.data, ?2) END",
                 trial ? "t.id" : "t.experiment_id");
        rc = store_query(st, sql, rb, own ? 1 : 2, result_row, &L, err, errlen);
        if (rc == 0 && L.oom) rc = set_err(err, errlen, STORE_ERR, "out of memory");
        if (rc != 0) goto fail;
        if (flags & CLI_EXP_DECISIONS) {
            snprintf(sql, sizeof sql,
                     "SELECT d.trial_id, d.iteration, d.time_value, d.action, d.bracket, d.rung,"
                     " d.milestone, d.value, d.cutoff, d.reason FROM decisions d"
                     " JOIN trials t ON t.id = d.trial_id WHERE %s = ?1 ORDER BY d.id",
                     trial ? "t.id" : "t.experiment_id");
            rc = store_query(st, sql, rb, 1, decision_row, &L, err, errlen);
            if (rc == 0 && L.oom) rc = set_err(err, errlen, STORE_ERR, "out of memory");
            if (rc != 0) goto fail;
        }
    }
    for (size_t i = 0; i < e->ntrials; i++)
        finish_trial(e, &e->trials[i]);
    if (metric && !any_value(e)) {
        rc = check_metric(st, e, err, errlen);
        if (rc != 0) goto fail;
    }
    free(L.cap);
    free(L.dcap);
    *out = e;
    return 0;
fail:
    free(L.cap);
    free(L.dcap);
    cli_exp_free(e);
    return rc;
}

void cli_exp_free(cli_exp_t *e)
{
    if (!e) return;
    for (size_t i = 0; i < e->ntrials; i++) {
        cli_trial_t *t = &e->trials[i];
        free(t->name);
        free(t->status);
        free(t->config);
        free(t->slice);
        free(t->error);
        free(t->trial_dir);
        free(t->stderr_tail);
        free(t->x);
        free(t->y);
        for (size_t k = 0; k < t->ndec; k++)
            free(t->dec[k].reason);
        free(t->dec);
    }
    free(e->trials);
    free(e->name);
    free(e->status);
    free(e->scheduler);
    free(e->exp_metric);
    free(e->metric);
    free(e->settings_json);
    free(e->space_json);
    free(e->results_dir);
    free(e->milestones);
    free(e);
}

int cli_exp_param_is_log(const cli_exp_t *e, const char *name)
{
    cJSON *s = e->settings_json ? cJSON_Parse(e->settings_json) : NULL;
    int is_log = 0;
    cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(s, "params"))
    {
        cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name");
        cJSON *k = cJSON_GetObjectItemCaseSensitive(p, "kind");
        if (cJSON_IsString(n) && cJSON_IsString(k) && strcmp(n->valuestring, name) == 0)
            is_log = strstr(k->valuestring, "log") != NULL; /* [q]loguniform, [q]lograndint */
    }
    cJSON_Delete(s);
    return is_log;
}

int cli_exp_better(const cli_exp_t *e, double a, double b)
{
    if (isnan(a)) return 0;
    if (isnan(b)) return 1;
    return e->mode_max ? a > b : a < b;
}

long cli_exp_best_trial(const cli_exp_t *e)
{
    long best = -1;
    for (size_t i = 0; i < e->ntrials; i++)
        if (best < 0 ? !isnan(e->trials[i].last)
                     : cli_exp_better(e, e->trials[i].last, e->trials[best].last))
            best = (long)i;
    return best;
}

/* ---- the y range of a chart of curves ------------------------------------------- */
int cli_ylim_arg(const char *cmd, const char *v, cli_ylim_t *out)
{
    if (strcmp(v, "auto") == 0) {
        *out = (cli_ylim_t){CLI_YLIM_AUTO, NAN, NAN};
        return 0;
    }
    if (strcmp(v, "full") == 0) {
        *out = (cli_ylim_t){CLI_YLIM_FULL, NAN, NAN};
        return 0;
    }
    const char *colon = strchr(v, ':');
    char *end = NULL;
    double lo = colon ? strtod(v, &end) : NAN;
    int ok = colon && end == colon && colon > v;
    double hi = ok ? strtod(colon + 1, &end) : NAN;
    ok = ok && colon[1] && *end == 0 && isfinite(lo) && isfinite(hi) && lo < hi;
    if (!ok) {
        cli_error("%s: --ylim wants auto, full or LO:HI (two numbers, LO below HI, e.g. 0:2.5), "
                  "got \"%s\"",
                  cmd, v);
        return -1;
    }
    *out = (cli_ylim_t){CLI_YLIM_SET, lo, hi};
    return 0;
}

struct wv {
    double v, w;
};

static int cmp_wv(const void *a, const void *b)
{
    double x = ((const struct wv *)a)->v, y = ((const struct wv *)b)->v;
    return x < y ? -1 : x > y;
}

/* The value below which a share q of the weight lies (a sorted, wsum > 0). */
static double wquantile(const struct wv *a, size_t n, double wsum, double q)
{
    double acc = 0;
    for (size_t i = 0; i < n; i++) {
        acc += a[i].w;
        if (acc >= q * wsum) return a[i].v;
    }
    return a[n - 1].v;
}

/* A value in axis space (log10 on a log axis); NaN where it has no place there, which
 * for the quantiles means left out (-inf and values <= 0 on a log axis lie below). */
static double axis_v(double y, int log)
{
    if (isnan(y)) return NAN;
    if (!log) return y;
    return y > 0 ? log10(y) : NAN;
}

/* Tukey's far-out fences of the bulk (cli_yrange_fit), in axis space; +-inf when there
 * is nothing to go by. -1 when out of memory. */
static int bulk_fences(const cli_exp_t *e, const size_t *sel, size_t nsel, int log, double *flo,
                       double *fhi)
{
    *flo = -INFINITY, *fhi = INFINITY;
    size_t np = 0;
    for (size_t s = 0; s < nsel; s++)
        np += e->trials[sel[s]].n;
    struct wv *pts = malloc((np + 1) * sizeof *pts), *first = malloc((nsel + 1) * sizeof *first);
    if (!pts || !first) {
        free(pts), free(first);
        return -1;
    }
    size_t n = 0, nf = 0;
    double wsum = 0;
    for (size_t s = 0; s < nsel; s++) {
        const cli_trial_t *t = &e->trials[sel[s]];
        size_t m = 0;
        for (size_t k = 0; k < t->n; k++)
            m += isfinite(t->x[k]) && !isnan(axis_v(t->y[k], log));
        if (!m) continue;
        int had_first = 0;
        for (size_t k = 0; k < t->n; k++) {
            double v = axis_v(t->y[k], log);
            if (!isfinite(t->x[k]) || isnan(v)) continue;
            pts[n++] = (struct wv){v, 1.0 / (double)m};
            if (!had_first) first[nf++] = (struct wv){v, 1.0}, had_first = 1;
        }
        wsum += 1;
    }
    if (n) {
        qsort(pts, n, sizeof *pts, cmp_wv);
        qsort(first, nf, sizeof *first, cmp_wv);
        double q1 = fmin(wquantile(pts, n, wsum, 0.25), wquantile(first, nf, (double)nf, 0.25));
        double q3 = fmax(wquantile(pts, n, wsum, 0.75), wquantile(first, nf, (double)nf, 0.75));
        /* A bulk of equal values is widened so that near neighbours stay inside: a third
         * of a decade on a log axis, a tenth of the values' size on a linear one. */
        double w = q3 - q1, floor_w = log ? 1.0 / 3 : 0.1 * fmax(fabs(q1), fabs(q3));
        if (!(w >= floor_w)) w = floor_w > 0 ? floor_w : 1e-300;
        if (isfinite(q1)) *flo = q1 - 3 * w;
        if (isfinite(q3)) *fhi = q3 + 3 * w;
    }
    free(pts), free(first);
    return 0;
}

/* Adds trial i with its farthest value v to one side's list, keeping the farthest first
 * (ties in trial order). */
static void yout_add(cli_yout_t *o, size_t i, double v, int above)
{
    size_t at = o->n < CLI_YRANGE_LIST ? o->n : CLI_YRANGE_LIST;
    while (at > 0 && (above ? v > o->v[at - 1] : v < o->v[at - 1]))
        at--;
    o->n++;
    if (at >= CLI_YRANGE_LIST) return;
    size_t last = o->n < CLI_YRANGE_LIST ? o->n - 1 : CLI_YRANGE_LIST - 1;
    for (size_t k = last; k > at; k--)
        o->trial[k] = o->trial[k - 1], o->v[k] = o->v[k - 1];
    o->trial[at] = i;
    o->v[at] = v;
}

/* The range in axis space for a log or linear axis: the kept points' extent. */
static void fit_side(const cli_exp_t *e, const size_t *sel, size_t nsel, const cli_ylim_t *lim,
                     int log, cli_yrange_t *out)
{
    double flo = -INFINITY, fhi = INFINITY;
    if (lim->kind == CLI_YLIM_SET) {
        flo = axis_v(lim->lo, log), fhi = axis_v(lim->hi, log);
        if (isnan(flo)) flo = -INFINITY; /* LO <= 0 on a log axis: from the smallest value */
    } else if (lim->kind == CLI_YLIM_AUTO && bulk_fences(e, sel, nsel, log, &flo, &fhi) != 0) {
        flo = -INFINITY, fhi = INFINITY; /* out of memory: everything, as before */
    }
    double lo = INFINITY, hi = -INFINITY;
    memset(&out->above, 0, sizeof out->above);
    memset(&out->below, 0, sizeof out->below);
    for (size_t s = 0; s < nsel; s++) {
        const cli_trial_t *t = &e->trials[sel[s]];
        double up = -INFINITY, down = INFINITY;
        for (size_t k = 0; k < t->n; k++) {
            double y = t->y[k];
            if (!isfinite(t->x[k]) || isnan(y)) continue;
            double v = log ? (y > 0 ? log10(y) : -INFINITY) : y;
            if (v > fhi || v == INFINITY)
                up = fmax(up, y);
            else if (v < flo || v == -INFINITY)
                down = fmin(down, y);
            else
                lo = fmin(lo, v), hi = fmax(hi, v);
        }
        if (up > -INFINITY) yout_add(&out->above, sel[s], up, 1);
        if (down < INFINITY) yout_add(&out->below, sel[s], down, 0);
    }
    if (lim->kind == CLI_YLIM_SET) {
        /* the range asked for, whatever the points: that is what a set range is for */
        lo = isfinite(flo) ? flo : lo;
        hi = fhi;
    }
    out->log = log;
    out->lo = lo <= hi ? (log ? pow(10, lo) : lo) : NAN;
    out->hi = lo <= hi ? (log ? pow(10, hi) : hi) : NAN;
}

void cli_yrange_fit(const cli_exp_t *e, const size_t *sel, size_t nsel, const cli_ylim_t *lim,
                    int want_log, cli_yrange_t *out)
{
    cli_ylim_t auto_lim = {CLI_YLIM_AUTO, NAN, NAN};
    if (!lim) lim = &auto_lim;
    memset(out, 0, sizeof *out);
    /* Linear first: whether a log axis suits is a question about the kept values, not
     * about a diverged 1e6, which alone would span five decades. */
    if (want_log != 1) {
        fit_side(e, sel, nsel, lim, 0, out);
        if (want_log == 0 || !(out->lo > 0 && out->hi / out->lo >= 10)) return;
    }
    cli_yrange_t lg;
    fit_side(e, sel, nsel, lim, 1, &lg);
    if (isnan(lg.lo) && want_log == -1) return; /* no positive value: stay linear */
    if (isnan(lg.lo)) {
        fit_side(e, sel, nsel, lim, 0, out); /* log asked for, but nothing positive */
        return;
    }
    *out = lg;
}

void cli_yrange_note(const cli_exp_t *e, const cli_yrange_t *r, int above, char *out, size_t n)
{
    const cli_yout_t *o = above ? &r->above : &r->below;
    if (!n) return;
    out[0] = 0;
    if (!o->n) return;
    size_t k =
        (size_t)snprintf(out, n, "%zu trial%s go%s %s the chart:", o->n, o->n == 1 ? "" : "s",
                         o->n == 1 ? "es" : "", above ? "above" : "below");
    size_t shown = o->n < CLI_YRANGE_LIST ? o->n : CLI_YRANGE_LIST;
    for (size_t i = 0; i < shown && k < n; i++) {
        char v[32];
        cli_fmt_num(o->v[i], v, sizeof v);
        k += (size_t)snprintf(out + k, n - k, "%s %s (%s %s)", i ? "," : "",
                              e->trials[o->trial[i]].name, above ? "max" : "min", v);
    }
    if (o->n > shown && k < n) snprintf(out + k, n - k, " and %zu more", o->n - shown);
}
