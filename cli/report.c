/* `tune report`: one self-contained HTML file for an experiment, readable offline. The
 * page (cli/report_assets/: template, styles, hand-written script, embedded at build time)
 * draws everything from one JSON blob this file writes: settings, every trial's curve,
 * decisions, parameters. Not for: drawing (the page's script does that) or any network. */
#include "cli/cli.h"
#include "cli/curves.h"
#include "cli/front.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jsonw/jsonw.h"
#include "pareto/pareto.h"
#include "report_assets.h"

/* ---- JSON written straight to the file ------------------------------------------ */
/* A JSON string that is also safe inside <script> (JSONW_HTML: no "</script>" or "<!--"
 * can ever appear in the blob). */
static void jstr(FILE *f, const char *s)
{
    jsonw_fquote(f, s, JSONW_HTML);
}

/* Numbers: `prec` significant digits; JSON has no NaN or infinity, so those are null. */
static void jnum(FILE *f, double v, int prec)
{
    if (!isfinite(v))
        fputs("null", f);
    else
        fprintf(f, "%.*g", prec, v);
}

/* JSON text from the database (a trial's config, the resolved settings), checked, with
 * '<' escaped: in valid JSON it can only sit inside a string, where \u003c means the same. */
static void jraw(FILE *f, const char *json)
{
    cJSON *j = json ? cJSON_Parse(json) : NULL;
    if (!j) {
        fputs("null", f);
        return;
    }
    cJSON_Delete(j);
    for (const char *p = json; *p; p++) {
        if (*p == '<')
            fputs("\\u003c", f);
        else if (*p == '>')
            fputs("\\u003e", f);
        else if (*p == '&')
            fputs("\\u0026", f);
        else
            fputc(*p, f);
    }
}

/* ---- rungs ---------------------------------------------------------------------- */
struct rung_ctx {
    FILE *f;
    int n;
    int no_cut; /* the chart shows another metric than the one the cutoffs are on */
};

static int rung_row(void *ud, int ncol, const char *const *names, const char *const *v,
                    const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct rung_ctx *r = ud;
    fprintf(r->f, "%s{\"b\":%s,\"r\":%s,\"m\":", r->n++ ? "," : "", v[0] ? v[0] : "null",
            v[1] ? v[1] : "null");
    jnum(r->f, v[2] ? strtod(v[2], NULL) : NAN, 10);
    fputs(",\"cut\":", r->f);
    jnum(r->f, v[3] && !r->no_cut ? strtod(v[3], NULL) : NAN, 10);
    fprintf(r->f, ",\"judged\":%s,\"stopped\":%s}", v[4] ? v[4] : "0", v[5] ? v[5] : "0");
    return 0;
}

/* Each rung's judged and stopped counts and its last cutoff (the latest decision's, which
 * is the cutoff the live table showed at the end). */
static int write_rungs(FILE *f, store_t *st, const cli_exp_t *e, char *err, size_t errlen)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)e->id);
    const char *b[] = {id};
    struct rung_ctx r = {.f = f, .no_cut = !e->own_metric};
    fputs("\"rungs\":[", f);
    int rc =
        store_query(st,
                    "SELECT d.bracket, d.rung, max(d.milestone),"
                    " (SELECT d2.cutoff FROM decisions d2 JOIN trials t2 ON t2.id = d2.trial_id"
                    "  WHERE t2.experiment_id = ?1 AND d2.bracket IS d.bracket AND d2.rung = d.rung"
                    "  AND d2.cutoff IS NOT NULL ORDER BY d2.id DESC LIMIT 1),"
                    " count(*), sum(d.action = 'stop')"
                    " FROM decisions d JOIN trials t ON t.id = d.trial_id"
                    " WHERE t.experiment_id = ?1 AND d.rung IS NOT NULL"
                    " GROUP BY d.bracket, d.rung ORDER BY d.bracket, d.rung",
                    b, 1, rung_row, &r, err, errlen);
    fputs("]", f);
    return rc;
}

/* ---- the blob ------------------------------------------------------------------- */
static void write_params(FILE *f, const cli_exp_t *e)
{
    fputs("\"params\":[", f);
    cJSON *s = e->settings_json ? cJSON_Parse(e->settings_json) : NULL;
    cJSON *ps = cJSON_GetObjectItemCaseSensitive(s, "params");
    int n = 0;
    cJSON *p;
    cJSON_ArrayForEach(p, ps)
    {
        cJSON *nm = cJSON_GetObjectItemCaseSensitive(p, "name");
        cJSON *k = cJSON_GetObjectItemCaseSensitive(p, "kind");
        if (!cJSON_IsString(nm)) continue;
        fputs(n++ ? ",{\"name\":" : "{\"name\":", f);
        jstr(f, nm->valuestring);
        fputs(",\"kind\":", f);
        jstr(f, cJSON_IsString(k) ? k->valuestring : NULL);
        fprintf(f, ",\"log\":%s}", cli_exp_param_is_log(e, nm->valuestring) ? "true" : "false");
    }
    if (!n && e->ntrials) {
        /* Settings without "params" (written by an older tune): the first configuration's keys. */
        cJSON *cfg = cJSON_Parse(e->trials[0].config);
        cJSON_ArrayForEach(p, cfg)
        {
            fputs(n++ ? ",{\"name\":" : "{\"name\":", f);
            jstr(f, p->string);
            fputs(",\"kind\":null,\"log\":false}", f);
        }
        cJSON_Delete(cfg);
    }
    cJSON_Delete(s);
    fputs("]", f);
}

/* Why each trial's configuration was chosen (trials.suggested_by), by trial_no; empty for
 * random search sampled up front and for a version-1 database, which has no such column. */
struct chosen {
    int64_t no;
    char *by;
};
struct chosen_ctx {
    struct chosen *v;
    size_t n, cap;
};

static int chosen_row(void *ud, int ncol, const char *const *names, const char *const *v,
                      const int *types)
{
    (void)names, (void)types;
    struct chosen_ctx *c = ud;
    if (ncol < 2 || !v[0] || !v[1]) return 0;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        struct chosen *nv = realloc(c->v, cap * sizeof *nv);
        if (!nv) return 1;
        c->v = nv;
        c->cap = cap;
    }
    char *by = strdup(v[1]);
    if (!by) return 1;
    c->v[c->n++] = (struct chosen){strtoll(v[0], NULL, 10), by};
    return 0;
}

static int cmp_chosen(const void *a, const void *b)
{
    int64_t x = ((const struct chosen *)a)->no, y = ((const struct chosen *)b)->no;
    return x < y ? -1 : x > y;
}

static void load_chosen(store_t *st, const cli_exp_t *e, struct chosen_ctx *c)
{
    char id[32], err[256];
    snprintf(id, sizeof id, "%lld", (long long)e->id);
    const char *b[] = {id};
    if (store_query(st,
                    "SELECT trial_no, suggested_by FROM trials WHERE experiment_id = ?1"
                    " AND suggested_by IS NOT NULL ORDER BY trial_no",
                    b, 1, chosen_row, c, err, sizeof err) != 0) {
        /* no column (a version-1 file) or out of memory: the report goes without */
        for (size_t i = 0; i < c->n; i++)
            free(c->v[i].by);
        c->n = 0;
    }
}

static const char *chosen_by(const struct chosen_ctx *c, int64_t no)
{
    struct chosen key = {no, NULL};
    const struct chosen *hit = c->n ? bsearch(&key, c->v, c->n, sizeof key, cmp_chosen) : NULL;
    return hit ? hit->by : NULL;
}

/* ---- Population Based Training's lineage ------------------------------------------ */
/* The lineage table's rows (who cloned whom, when, with which configurations), and the
 * superseded attempts' curves of the trials they name: a trial's curve before it was
 * exploited, and a donor's stretch that another trial continued from, which the donor's
 * current attempt may no longer hold. The page draws the curves continuing from the
 * donor and the best trial's hyperparameter schedule from these. A database without the
 * table (schema version 1 or 2, read only) has no lineage: nothing is written. */
struct lin_ctx {
    FILE *f;
    int n;
    int64_t trial; /* the earlier-attempt row being written, or -1 */
    int attempt;
};

static int lineage_row(void *ud, int ncol, const char *const *names, const char *const *v,
                       const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct lin_ctx *c = ud;
    static const char *const keys[] = {"t", "a", "it", "x", "d", "da", "dit", "dx", "v", "dv"};
    fputs(c->n++ ? ",\n{" : "{", c->f);
    for (int k = 0; k < 10; k++) {
        fprintf(c->f, "%s\"%s\":", k ? "," : "", keys[k]);
        jnum(c->f, v[k] ? strtod(v[k], NULL) : NAN, k == 8 || k == 9 ? 10 : 15);
    }
    static const char *const jkeys[] = {"old", "new", "ex"};
    for (int k = 0; k < 3; k++) {
        fprintf(c->f, ",\"%s\":", jkeys[k]);
        jraw(c->f, v[10 + k]);
    }
    /* the paths say which exploit a donor's checkpoint is a copy from (the page's walk) */
    fputs(",\"dck\":", c->f);
    jstr(c->f, v[13]);
    fputs(",\"rf\":", c->f);
    jstr(c->f, v[14]);
    fputc('}', c->f);
    return 0;
}

/* One result of an earlier attempt: (trial_no, attempt, x, y), ordered by trial and
 * attempt, written as one {"t","a","x":[...],"y":[...]} per attempt. */
static int earlier_row(void *ud, int ncol, const char *const *names, const char *const *v,
                       const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct lin_ctx *c = ud;
    int64_t t = v[0] ? strtoll(v[0], NULL, 10) : -1;
    int a = v[1] ? atoi(v[1]) : 0;
    if (t != c->trial || a != c->attempt) {
        if (c->trial >= 0) fputs("]}", c->f);
        fprintf(c->f, "%s{\"t\":%lld,\"a\":%d,\"p\":[", c->n++ ? ",\n" : "", (long long)t, a);
        c->trial = t;
        c->attempt = a;
    } else {
        fputc(',', c->f);
    }
    fputc('[', c->f);
    jnum(c->f, v[2] ? strtod(v[2], NULL) : NAN, 7);
    fputc(',', c->f);
    jnum(c->f, v[3] ? strtod(v[3], NULL) : NAN, 7);
    fputc(']', c->f);
    return 0;
}

static void write_lineage(FILE *f, store_t *st, const cli_exp_t *e)
{
    char id[32], path[160], err[256];
    snprintf(id, sizeof id, "%lld", (long long)e->id);
    snprintf(path, sizeof path, "$.\"%s\"", e->metric ? e->metric : "");
    const char *b[] = {id, path};
    /* probe first: a table that is not there is no error, and no partial output */
    if (store_query(st, "SELECT 1 FROM lineage LIMIT 0", NULL, 0, NULL, NULL, err, sizeof err) != 0)
        return;
    fputs(",\"lineage\":[", f);
    struct lin_ctx c = {.f = f, .trial = -1};
    if (store_query(
            st,
            "SELECT t.trial_no, l.attempt, l.iteration, COALESCE(l.time_value, l.iteration),"
            " d.trial_no, l.donor_attempt, l.donor_iteration,"
            " COALESCE(l.donor_time_value, l.donor_iteration), l.value, l.donor_value,"
            " l.old_config, l.new_config, l.explore, l.donor_checkpoint, l.resume_from"
            " FROM lineage l JOIN trials t ON t.id = l.trial_id"
            " JOIN trials d ON d.id = l.donor_trial_id"
            " WHERE l.experiment_id = ?1 ORDER BY l.id",
            b, 1, lineage_row, &c, err, sizeof err) != 0) {
        /* written as far as it went: the page draws what it has */
    }
    fputs("],\"earlier\":[", f);
    c.n = 0;
    c.trial = -1;
    int own = !e->exp_metric || strcmp(e->metric ? e->metric : "", e->exp_metric) == 0;
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT t.trial_no, a.attempt, COALESCE(a.time_value, a.iteration), %s"
             " FROM trials t JOIN results_all a ON a.trial_id = t.id"
             " WHERE t.experiment_id = ?1 AND a.attempt <> t.attempt AND t.id IN"
             " (SELECT trial_id FROM lineage WHERE experiment_id = ?1"
             "  UNION SELECT donor_trial_id FROM lineage WHERE experiment_id = ?1)"
             " ORDER BY t.trial_no, a.attempt, a.id",
             own ? "a.metric"
                 : "CASE WHEN json_type(a.data, ?2) IN ('integer', 'real')"
                   " THEN json_extract(a.data, ?2) END");
    store_query(st, sql, b, own ? 1 : 2, earlier_row, &c, err, sizeof err);
    if (c.trial >= 0) fputs("]}", f);
    fputc(']', f);
}

/* ---- the other values each trial reported ---------------------------------------- */
/* The trials' last results (trial_summary.last_result), by trial_no, and the keys of them
 * that become the trial table's columns: every key a last result has, but the shown
 * metric and training_iteration (columns already) and objects or arrays, at most
 * REPORT_EXTRA_MAX of them: those the most trials report, in the order they were first
 * reported (a trial's own order, trial by trial), so the columns stay put from one report
 * to the next. The rest are named under the table. */
#define REPORT_EXTRA_MAX 8
struct extra_key {
    char *name;
    size_t count, first;
};
struct extra {
    cJSON **last; /* by trial index; NULL when none */
    size_t ntrials;
    struct extra_key *k;
    size_t nk, nshown;
    int oom;
    const cli_exp_t *e;
    size_t seen; /* keys met so far, for first */
};

static int extra_row(void *ud, int ncol, const char *const *names, const char *const *v,
                     const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct extra *x = ud;
    if (!v[0] || !v[1]) return 0;
    int64_t no = strtoll(v[0], NULL, 10);
    size_t i = 0;
    while (i < x->e->ntrials && x->e->trials[i].trial_no != no)
        i++;
    if (i == x->e->ntrials || x->last[i]) return 0;
    cJSON *j = cJSON_Parse(v[1]);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return 0;
    }
    x->last[i] = j;
    const cJSON *it;
    cJSON_ArrayForEach(it, j)
    {
        const char *key = it->string;
        if (!key || cJSON_IsObject(it) || cJSON_IsArray(it) ||
            strcmp(key, "training_iteration") == 0 || (x->e->metric && !strcmp(key, x->e->metric)))
            continue;
        size_t k = 0;
        while (k < x->nk && strcmp(x->k[k].name, key) != 0)
            k++;
        if (k == x->nk) {
            struct extra_key *nk = realloc(x->k, (x->nk + 1) * sizeof *nk);
            char *name = strdup(key);
            if (!nk || !name) {
                if (nk) x->k = nk;
                free(name);
                x->oom = 1;
                return 1;
            }
            x->k = nk;
            x->k[x->nk++] = (struct extra_key){name, 0, x->seen++};
        }
        x->k[k].count++;
    }
    return 0;
}

static int cmp_by_count(const void *a, const void *b)
{
    const struct extra_key *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_by_first(const void *a, const void *b)
{
    const struct extra_key *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Reads the last results and chooses the columns; a report goes without them when the
 * query fails (out of memory). */
static void load_extra(store_t *st, const cli_exp_t *e, struct extra *x)
{
    memset(x, 0, sizeof *x);
    x->e = e;
    x->ntrials = e->ntrials;
    x->last = calloc(e->ntrials + 1, sizeof *x->last);
    if (!x->last) return;
    char id[32], err[256];
    snprintf(id, sizeof id, "%lld", (long long)e->id);
    const char *b[] = {id};
    if (store_query(st,
                    "SELECT trial_no, last_result FROM trial_summary WHERE experiment_id = ?1"
                    " ORDER BY trial_no",
                    b, 1, extra_row, x, err, sizeof err) != 0 ||
        x->oom) {
        x->nk = x->nshown = 0; /* keys freed with the rest */
        return;
    }
    if (x->nk == 0) return; /* no other keys (and x->k NULL, which qsort may not take) */
    qsort(x->k, x->nk, sizeof *x->k, cmp_by_count);
    x->nshown = x->nk < REPORT_EXTRA_MAX ? x->nk : REPORT_EXTRA_MAX;
    qsort(x->k, x->nshown, sizeof *x->k, cmp_by_first);
    if (x->nk > x->nshown) qsort(x->k + x->nshown, x->nk - x->nshown, sizeof *x->k, cmp_by_first);
}

static void free_extra(struct extra *x)
{
    for (size_t i = 0; x->last && i < x->ntrials; i++)
        cJSON_Delete(x->last[i]);
    free(x->last);
    for (size_t k = 0; k < x->nk; k++)
        free(x->k[k].name);
    free(x->k);
}

/* "extra":{"keys":[shown...],"left":[not shown...],"max":N} */
static void write_extra_keys(FILE *f, const struct extra *x)
{
    fputs(",\"extra\":{\"keys\":[", f);
    for (size_t k = 0; k < x->nk; k++) {
        if (k == x->nshown) fputs("],\"left\":[", f);
        if (k && k != x->nshown) fputc(',', f);
        jstr(f, x->k[k].name);
    }
    if (x->nk == x->nshown) fputs("],\"left\":[", f);
    fprintf(f, "],\"max\":%d}", REPORT_EXTRA_MAX);
}

/* A trial's values of the shown keys: "r":{key: value, ...} (numbers, strings, booleans). */
static void write_extra_values(FILE *f, const struct extra *x, size_t i)
{
    const cJSON *j = x->last && i < x->ntrials ? x->last[i] : NULL;
    if (!j || !x->nshown) return;
    fputs(",\"r\":{", f);
    int n = 0;
    for (size_t k = 0; k < x->nshown; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, x->k[k].name);
        if (!v || cJSON_IsNull(v)) continue;
        if (n++) fputc(',', f);
        jstr(f, x->k[k].name);
        fputc(':', f);
        if (cJSON_IsNumber(v))
            jnum(f, v->valuedouble, 10);
        else if (cJSON_IsString(v))
            jstr(f, v->valuestring);
        else
            fputs(cJSON_IsTrue(v) ? "true" : "false", f);
    }
    fputc('}', f);
}

static void write_trial(FILE *f, const cli_exp_t *e, const cli_trial_t *t, const char *by,
                        const struct extra *x)
{
    fprintf(f, "{\"no\":%lld,\"att\":%d,\"name\":", (long long)t->trial_no, t->attempt);
    jstr(f, t->name);
    fputs(",\"st\":", f);
    jstr(f, t->status);
    fprintf(f, ",\"es\":%d,\"cfg\":", t->early_stopped);
    jraw(f, t->config);
    fprintf(f, ",\"n\":%zu,\"last\":", t->n);
    jnum(f, t->last, 10);
    fputs(",\"best\":", f);
    jnum(f, t->best, 10);
    fputs(",\"t0\":", f);
    jnum(f, t->started_at, 13);
    fputs(",\"t1\":", f);
    jnum(f, t->ended_at, 13);
    fputs(",\"slice\":", f);
    jstr(f, t->slice);
    fputs(",\"err\":", f);
    jstr(f, t->error);
    if (by) {
        fputs(",\"by\":", f);
        jstr(f, by);
    }
    write_extra_values(f, x, (size_t)(t - e->trials));
    /* Seven digits are plenty for a chart and keep 5,000 trials' curves small. */
    fputs(",\"x\":[", f);
    for (size_t k = 0; k < t->n; k++) {
        if (k) fputc(',', f);
        jnum(f, t->x[k], 7);
    }
    fputs("],\"y\":[", f);
    for (size_t k = 0; k < t->n; k++) {
        if (k) fputc(',', f);
        /* A diverged inf is a point above the chart, not a missing one (null is NaN):
         * 1e999 is a JSON number that JSON.parse reads as Infinity. */
        if (isinf(t->y[k]))
            fputs(t->y[k] > 0 ? "1e999" : "-1e999", f);
        else
            jnum(f, t->y[k], 7);
    }
    fputc(']', f);
    /* Where the scheduler stopped it: [time, value, cutoff, rung]. */
    const cli_decision_t *stop = NULL;
    for (size_t k = 0; k < t->ndec; k++)
        if (strcmp(t->dec[k].action, "stop") == 0) stop = &t->dec[k];
    if (stop && t->early_stopped) {
        /* The value and cutoff are the scheduler's metric's: on another metric's chart
         * the cross goes on the curve's last point, and there is no cutoff to show. */
        fputs(",\"stop\":[", f);
        jnum(f,
             !e->own_metric           ? t->last_x
             : isnan(stop->milestone) ? stop->time_value
                                      : stop->milestone,
             10);
        fputc(',', f);
        jnum(f, e->own_metric ? stop->value : t->last, 10);
        fputc(',', f);
        jnum(f, e->own_metric ? stop->cutoff : NAN, 10);
        fprintf(f, ",%d]", stop->rung);
    }
    fputc('}', f);
}

/* One way of drawing the curves' y axis: the range (values), the trials outside it (index
 * into "trials", farthest value; null for inf) and the note that names them. */
static void write_yside(FILE *f, const cli_exp_t *e, const cli_yrange_t *r)
{
    fputs("{\"lo\":", f);
    jnum(f, r->lo, 10);
    fputs(",\"hi\":", f);
    jnum(f, r->hi, 10);
    for (int side = 1; side >= 0; side--) {
        const cli_yout_t *o = side ? &r->above : &r->below;
        fprintf(f, ",\"%s\":[", side ? "above" : "below");
        size_t shown = o->n < CLI_YRANGE_LIST ? o->n : CLI_YRANGE_LIST;
        for (size_t i = 0; i < shown; i++) {
            fprintf(f, "%s[%zu,", i ? "," : "", o->trial[i]);
            jnum(f, o->v[i], 10);
            fputc(']', f);
        }
        char note[1024];
        cli_yrange_note(e, r, side, note, sizeof note);
        fprintf(f, "],\"n%s\":%zu,\"%s_note\":", side ? "above" : "below", o->n,
                side ? "above" : "below");
        jstr(f, note);
    }
    fputc('}', f);
}

/* The curves' y range as tune plot chooses it (curves.h), for each way the page can draw
 * the axis: "auto" (the page's default; log when ylog), "lin" and "log" (null without a
 * positive value). */
static void write_yrange(FILE *f, const cli_exp_t *e, const cli_ylim_t *lim)
{
    size_t *sel = malloc((e->ntrials + 1) * sizeof *sel);
    if (!sel) {
        fputs(",\"yrange\":null", f);
        return;
    }
    for (size_t i = 0; i < e->ntrials; i++)
        sel[i] = i;
    cli_yrange_t lin, lg, au;
    cli_yrange_fit(e, sel, e->ntrials, lim, 0, &lin);
    cli_yrange_fit(e, sel, e->ntrials, lim, 1, &lg);
    cli_yrange_fit(e, sel, e->ntrials, lim, -1, &au);
    static const char *const kinds[] = {"auto", "full", "set"};
    fprintf(f, ",\"yrange\":{\"ylim\":\"%s\",\"ylog\":%s,\"lin\":", kinds[lim->kind],
            au.log ? "true" : "false");
    write_yside(f, e, &lin);
    fputs(",\"log\":", f);
    if (lg.log)
        write_yside(f, e, &lg);
    else
        fputs("null", f);
    fputc('}', f);
    free(sel);
}

/* ---- several objectives: the front and the hypervolume over time ------------------- */
/* Every result of the experiment's current attempts in time order, as points: the time (s
 * since the first), the trial (an index into e->trials), its objectives to minimise (k
 * each) and violation. */
struct mo_events {
    size_t n, cap, k;
    double *t, *obj, *viol;
    size_t *trial;
    int oom;
    const cli_exp_t *e;
    const space_settings_t *set;
};

static int mo_event_row(void *ud, int ncol, const char *const *names, const char *const *v,
                        const int *types)
{
    (void)ncol, (void)names, (void)types;
    struct mo_events *M = ud;
    if (!v[0] || !v[2]) return 0;
    int64_t no = strtoll(v[0], NULL, 10);
    size_t lo = 0, hi = M->e->ntrials; /* e->trials is in trial number order */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (M->e->trials[mid].trial_no < no)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == M->e->ntrials || M->e->trials[lo].trial_no != no) return 0;
    if (M->n == M->cap) {
        size_t cap = M->cap ? 2 * M->cap : 256;
        double *t = realloc(M->t, cap * sizeof *t);
        if (t) M->t = t;
        double *o = realloc(M->obj, cap * M->k * sizeof *o);
        if (o) M->obj = o;
        double *vi = realloc(M->viol, cap * sizeof *vi);
        if (vi) M->viol = vi;
        size_t *tr = realloc(M->trial, cap * sizeof *tr);
        if (tr) M->trial = tr;
        if (!t || !o || !vi || !tr) {
            M->oom = 1;
            return 1;
        }
        M->cap = cap;
    }
    cJSON *res = cJSON_Parse(v[2]);
    if (!res) return 0;
    M->t[M->n] = v[1] ? strtod(v[1], NULL) : NAN;
    M->trial[M->n] = lo;
    space_objectives(M->set, res, M->obj + M->n * M->k);
    M->viol[M->n] = space_violation(M->set, res);
    cJSON_Delete(res);
    M->n++;
    return 0;
}

/* The hypervolume after each result (each trial's latest point at that time), at most
 * this many times: a long run's curve needs no more to be drawn. */
#define HV_POINTS 400

/* "mo": the objectives and constraints, each trial's point (its last result: values as
 * reported, violation, front level, constraints violated), the front's trial numbers in
 * tune best's order, and the hypervolume over time with its reference point. Nothing for
 * one objective. */
static void write_mo(FILE *f, store_t *st, const cli_exp_t *e)
{
    space_t *sp = NULL;
    char err[1024];
    if (cli_front_space(st, e->name, &sp, err, sizeof err) != 0 ||
        !cli_front_multi(space_settings(sp))) {
        space_free(sp);
        return;
    }
    const space_settings_t *set = space_settings(sp);
    size_t k = set->nobjectives;
    struct mo_events M = {.k = k, .e = e, .set = set};
    char eid[32];
    snprintf(eid, sizeof eid, "%lld", (long long)e->id);
    const char *b[] = {eid};
    store_query(st,
                "SELECT t.trial_no, r.wall_time, r.data FROM results_current r"
                " JOIN trials t ON t.id = r.trial_id WHERE t.experiment_id = ?1"
                " ORDER BY r.wall_time, r.id",
                b, 1, mo_event_row, &M, err, sizeof err);
    /* The trials' last points, ranked (front.h): the same front tune best prints. */
    cli_front_t fr;
    int have = cli_front_load(st, e->name, &fr, err, sizeof err) == 0;
    /* every trial's last result, as cli_front_load read them (for the words of what an
     * infeasible one violates) */
    cli_rows_t last = {0};
    const char *nb[] = {e->name};
    if (have && fr.n > fr.nfeasible &&
        cli_rows_query(st,
                       "SELECT trial_no, last_result FROM trial_summary WHERE experiment = ?1"
                       " ORDER BY trial_no",
                       nb, 1, &last, err, sizeof err) != 0)
        cli_rows_free(&last);
    static const char *const cmp[SPACE_NCMP] = SPACE_CMP_NAMES;
    fputs(",\"mo\":{\"objectives\":[", f);
    for (size_t j = 0; j < k; j++) {
        fputs(j ? ",{\"metric\":" : "{\"metric\":", f);
        jstr(f, set->metrics[j]);
        fprintf(f, ",\"mode\":\"%s\"}", space_mode_name(set->modes[j]));
    }
    fputs("],\"constraints\":[", f);
    for (size_t j = 0; j < set->nconstraints; j++) {
        fputs(j ? ",{\"key\":" : "{\"key\":", f);
        jstr(f, set->constraints[j].key);
        fprintf(f, ",\"op\":\"%s\",\"bound\":", cmp[set->constraints[j].op]);
        jnum(f, set->constraints[j].bound, 17);
        fputc('}', f);
    }
    fprintf(f, "],\"n\":%zu,\"feasible\":%zu,\"nfront\":%zu,\"points\":[", have ? fr.n : 0,
            have ? fr.nfeasible : 0, have ? fr.nfront : 0);
    for (size_t i = 0; have && i < fr.n; i++) {
        fprintf(f, "%s{\"no\":%lld,\"v\":[", i ? "," : "", (long long)fr.ids[i]);
        for (size_t j = 0; j < k; j++) {
            if (j) fputc(',', f);
            jnum(f, fr.values[i * k + j], 10);
        }
        fputs("],\"viol\":", f);
        jnum(f, fr.violation[i], 10);
        fprintf(f, ",\"lv\":%d,\"front\":%d", cli_front_level(&fr, i), cli_front_on(&fr, i));
        if (fr.violation[i] != 0) {
            /* which constraints: words from the trial's last result (front.c's rows, in
             * the same order: src indexes them) */
            char words[1024] = "";
            size_t row = fr.src[i];
            const char *const *lv =
                row < last.nrows ? (const char *const *)last.vals + row * (size_t)last.ncol : NULL;
            if (lv && lv[0] && strtoll(lv[0], NULL, 10) == fr.ids[i] && lv[1]) {
                cJSON *res = cJSON_Parse(lv[1]);
                cli_violation_words(set, res, words, sizeof words);
                cJSON_Delete(res);
            }
            fputs(",\"why\":", f);
            jstr(f, words);
        }
        fputc('}', f);
    }
    fputs("]", f);
    /* The front's trials in the order tune best prints them (the parallel coordinates
     * draw them so; the page ranks nothing itself). */
    size_t *sorted = NULL, nsorted = 0;
    if (have && cli_front_sorted(&fr, &sorted, &nsorted) == 0) {
        fputs(",\"order\":[", f);
        for (size_t i = 0; i < nsorted; i++)
            fprintf(f, "%s%lld", i ? "," : "", (long long)fr.ids[sorted[i]]);
        fputs("]", f);
    }
    free(sorted);
    /* The hypervolume over time: after each result, of each trial's latest point. */
    double ref[SPACE_MAX_OBJECTIVES];
    double *cur = malloc((e->ntrials * k + 1) * sizeof *cur);
    double *cv = malloc((e->ntrials + 1) * sizeof *cv);
    /* One fixed reference point for the whole curve: pareto_reference over the trials' last
     * points, the rule docs/multiobjective.md gives for every hypervolume tune states. */
    if (!M.oom && M.n && cur && cv && have && fr.n &&
        pareto_reference(fr.n, k, fr.obj, ref, err, sizeof err) == PARETO_OK) {
        for (size_t i = 0; i < e->ntrials * k; i++)
            cur[i] = NAN;
        for (size_t i = 0; i < e->ntrials; i++)
            cv[i] = INFINITY;
        double t0 = M.t[0];
        fputs(",\"hv\":{\"ref\":[", f);
        for (size_t j = 0; j < k; j++) {
            if (j) fputc(',', f);
            /* as reported: a "max" objective's reference undone of its sign */
            jnum(f, set->modes[j] == SPACE_MODE_MAX ? -ref[j] : ref[j], 10);
        }
        fputs("],\"rule\":", f);
        jstr(f, "for each objective the worst value among the trials' last results (feasible "
                "or not), plus 10% of their range (docs/multiobjective.md)");
        fputs(",\"t\":[", f);
        size_t step = M.n > HV_POINTS ? (M.n + HV_POINTS - 1) / HV_POINTS : 1, w = 0;
        double *hv = malloc((M.n / step + 2) * sizeof *hv);
        for (size_t i = 0; i < M.n; i++) {
            memcpy(cur + M.trial[i] * k, M.obj + i * k, k * sizeof *cur);
            cv[M.trial[i]] = M.viol[i];
            if (!hv || ((i + 1) % step && i + 1 != M.n)) continue;
            hv[w] = pareto_hypervolume(e->ntrials, k, cur, cv, ref);
            fputs(w ? "," : "", f);
            jnum(f, M.t[i] - t0, 10);
            w++;
        }
        fputs("],\"v\":[", f);
        for (size_t i = 0; hv && i < w; i++) {
            if (i) fputc(',', f);
            jnum(f, hv[i], 10);
        }
        fputs("]}", f);
        free(hv);
    }
    fputc('}', f);
    free(cur);
    free(cv);
    free(M.t), free(M.obj), free(M.viol), free(M.trial);
    if (have) cli_front_free(&fr);
    cli_rows_free(&last);
    space_free(sp);
}

static int write_data(FILE *f, store_t *st, const cli_exp_t *e, const char *db,
                      const cli_ylim_t *lim, char *err, size_t errlen)
{
    fprintf(f, "{\"version\":\"%s\",\"generated\":%lld,\"db\":", TUNE_VERSION,
            (long long)time(NULL));
    jstr(f, db);
    fputs(",\"exp\":{\"name\":", f);
    jstr(f, e->name);
    fputs(",\"status\":", f);
    jstr(f, e->status);
    fputs(",\"scheduler\":", f);
    jstr(f, e->scheduler);
    fputs(",\"metric\":", f);
    jstr(f, e->exp_metric);
    fprintf(f, ",\"mode\":\"%s\",\"num_trials\":%lld,\"created\":", e->exp_mode_max ? "max" : "min",
            (long long)e->num_trials);
    jnum(f, e->created_at, 13);
    fputs(",\"ended\":", f);
    jnum(f, e->ended_at, 13);
    fputs(",\"time_attr\":", f);
    jstr(f, e->time_attr);
    fputs(",\"results_dir\":", f);
    jstr(f, e->results_dir);
    fputs(",\"settings\":", f);
    jraw(f, e->settings_json);
    fputs(",\"space_text\":", f);
    jstr(f, e->space_json);
    fputs("},\"metric\":", f);
    jstr(f, e->metric);
    /* The shown metric's order, and whether the scheduler's cutoffs are on its scale. */
    fprintf(f, ",\"mode\":\"%s\",\"mode_guessed\":%s,\"own_metric\":%s",
            e->mode_max ? "max" : "min", e->mode_guessed ? "true" : "false",
            e->own_metric ? "true" : "false");
    fputc(',', f);
    write_params(f, e);
    fputs(",\"milestones\":[", f);
    for (size_t m = 0; m < e->nmilestones; m++) {
        if (m) fputc(',', f);
        jnum(f, e->milestones[m], 10);
    }
    fputs("]", f);
    write_yrange(f, e, lim);
    fputc(',', f);
    int rc = write_rungs(f, st, e, err, errlen);
    if (rc != 0) return rc;
    struct chosen_ctx ch = {0};
    load_chosen(st, e, &ch);
    struct extra x;
    load_extra(st, e, &x);
    write_extra_keys(f, &x);
    /* Several objectives have no one best trial (the front section shows what is best). */
    space_t *sp = NULL;
    int multi =
        cli_front_space(st, e->name, &sp, err, errlen) == 0 && cli_front_multi(space_settings(sp));
    space_free(sp);
    fprintf(f, ",\"best\":%ld,\"trials\":[", multi ? -1L : cli_exp_best_trial(e));
    for (size_t i = 0; i < e->ntrials; i++) {
        if (i) fputs(",\n", f);
        write_trial(f, e, &e->trials[i], chosen_by(&ch, e->trials[i].trial_no), &x);
    }
    fputc(']', f);
    free_extra(&x);
    write_lineage(f, st, e);
    write_mo(f, st, e);
    fputc('}', f);
    for (size_t i = 0; i < ch.n; i++)
        free(ch.v[i].by);
    free(ch.v);
    return 0;
}

/* The template with each <!--@NAME@--> marker replaced. */
static int write_page(FILE *f, store_t *st, const cli_exp_t *e, const char *db,
                      const cli_ylim_t *lim, char *err, size_t errlen)
{
    const char *p = cli_report_html;
    for (;;) {
        const char *m = strstr(p, "<!--@");
        if (!m) {
            fputs(p, f);
            break;
        }
        fwrite(p, 1, (size_t)(m - p), f);
        const char *name = m + 5, *end = strstr(name, "@-->");
        if (!end) {
            fputs(m, f);
            break;
        }
        size_t n = (size_t)(end - name);
        if (n == 5 && !strncmp(name, "TITLE", 5)) {
            for (const char *s = e->name; *s; s++) /* names are [A-Za-z0-9_.-]; still escaped */
                if (*s == '<' || *s == '>' || *s == '&' || *s == '"')
                    fprintf(f, "&#%d;", *s);
                else
                    fputc(*s, f);
        } else if (n == 3 && !strncmp(name, "CSS", 3)) {
            fputs(cli_report_css, f);
        } else if (n == 2 && !strncmp(name, "JS", 2)) {
            fputs(cli_report_js, f);
        } else if (n == 4 && !strncmp(name, "DATA", 4)) {
            int rc = write_data(f, st, e, db, lim, err, errlen);
            if (rc != 0) return rc;
        }
        p = end + 4;
    }
    return 0;
}

int cli_cmd_report(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune report [NAME] [-o FILE] [--db PATH] [--metric M] [--mode min|max]\n"
        "                   [--ylim auto|full|LO:HI]\n"
        "  writes one self-contained HTML file (default NAME.html; -o - for stdout):\n"
        "  settings, every trial's learning curve with rung milestones and cutoffs, each\n"
        "  parameter against the final metric, the best trials in parallel coordinates and\n"
        "  a sortable table. NAME may be left out when the database holds one experiment.\n"
        "  --mode: which way --metric is better (default: the experiment's mode for its own\n"
        "  metric; for another metric a guess from its name, which is said). Rung cutoffs\n"
        "  are drawn only on the metric the scheduler judged. --ylim: the curves' y range, as\n"
        "  tune plot's (auto: the bulk of the curves, trials outside it named under the chart)\n";
    if (cli_help(argc, argv, usage)) return CLI_EXIT_OK;
    const char *db = cli_db_path(argc, argv), *name = NULL, *outp = NULL, *metric = NULL;
    unsigned mode = 0;
    cli_ylim_t ylim = {CLI_YLIM_AUTO, NAN, NAN};
    int opts = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && !strcmp(a, "--")) { /* what follows is a name, even "-x" */
            opts = 0;
            continue;
        }
        if (!opts) {
            if (name) {
                cli_error("report: one experiment at a time (got \"%s\" and \"%s\")", name, a);
                return CLI_EXIT_USAGE;
            }
            name = a;
            continue;
        }
        int takes = !strcmp(a, "--db") || !strcmp(a, "-o") || !strcmp(a, "--output") ||
                    !strcmp(a, "--metric") || !strcmp(a, "--experiment") || !strcmp(a, "--mode") ||
                    !strcmp(a, "--ylim");
        if (takes && i + 1 >= argc) {
            cli_error("report: %s needs a value\n%s", a, usage);
            return CLI_EXIT_USAGE;
        }
        if (!strcmp(a, "--db")) {
            i++;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            outp = argv[++i];
        } else if (!strcmp(a, "--metric")) {
            metric = argv[++i];
        } else if (!strcmp(a, "--mode")) {
            if (cli_mode_arg("report", argv[++i], &mode)) return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--ylim")) {
            if (cli_ylim_arg("report", argv[++i], &ylim)) return CLI_EXIT_USAGE;
        } else if (!strcmp(a, "--experiment") || (a[0] != '-' || !a[1])) {
            const char *v = a[0] == '-' && a[1] ? argv[++i] : a;
            if (name) {
                cli_error("report: one experiment at a time (got \"%s\" and \"%s\")", name, v);
                return CLI_EXIT_USAGE;
            }
            name = v;
        } else {
            cli_error("report: unknown option %s\n%s", a, usage);
            return CLI_EXIT_USAGE;
        }
    }
    char err[1024];
    store_t *st = cli_open_ro(db);
    if (!st) return CLI_EXIT_FAIL;
    char *picked = NULL;
    cli_exp_t *e = NULL;
    int rc = cli_exp_pick(st, db, name, &picked, err, sizeof err);
    if (rc == 0)
        rc = cli_exp_load(st, picked, metric, NULL, CLI_EXP_DECISIONS | mode, &e, err, sizeof err);
    if (rc == 0) cli_mode_note(e);
    free(picked);
    if (rc != 0) {
        cli_error("%s", err);
        store_close(st);
        return rc == CLI_EXP_AMBIGUOUS ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }

    /* Written beside the target and renamed over it: a reader never sees half a report. */
    char def[256], tmp[4200];
    if (!outp) {
        snprintf(def, sizeof def, "%s.html", e->name);
        outp = def;
    }
    int to_stdout = strcmp(outp, "-") == 0;
    /* Renaming over something that is not a plain file would replace it: `-o /dev/null`
     * run as root turned the device into a file. A device, a FIFO or a terminal is
     * written in place (a reader of those sees a stream anyway). */
    struct stat sb;
    int in_place = !to_stdout && stat(outp, &sb) == 0 && !S_ISREG(sb.st_mode);
    FILE *f = stdout;
    if (!to_stdout) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", outp, (long)getpid());
        f = fopen(in_place ? outp : tmp, "w");
        if (!f) {
            cli_error("report: cannot write %s: %s", outp, strerror(errno));
            cli_exp_free(e);
            store_close(st);
            return CLI_EXIT_FAIL;
        }
    }
    rc = write_page(f, st, e, db, &ylim, err, sizeof err);
    int werr = ferror(f);
    long size = to_stdout ? 0 : ftell(f);
    if (!to_stdout && fclose(f) != 0) werr = 1;
    if (rc != 0 || werr) {
        if (rc != 0)
            cli_error("report: %s", err);
        else
            cli_error("report: cannot write %s: %s", outp, strerror(errno ? errno : EIO));
        if (!to_stdout && !in_place) unlink(tmp);
        cli_exp_free(e);
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    if (!to_stdout) {
        if (!in_place && rename(tmp, outp) != 0) {
            cli_error("report: cannot write %s: %s", outp, strerror(errno));
            unlink(tmp);
            cli_exp_free(e);
            store_close(st);
            return CLI_EXIT_FAIL;
        }
        size_t nres = 0;
        for (size_t i = 0; i < e->ntrials; i++)
            nres += e->trials[i].n;
        fprintf(stderr, "tune: wrote %s (%s: %zu trials, %zu results, %.0f KiB)\n", outp, e->name,
                e->ntrials, nres, (double)size / 1024);
    }
    cli_exp_free(e);
    store_close(st);
    return CLI_EXIT_OK;
}
