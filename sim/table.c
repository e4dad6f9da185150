/* sim/table.c: tables of recorded learning curves (docs/simulate.md): reading the file
 * (plain or gzip), binding its config/ columns to a space and checking every row, into a
 * sim_curves_t. Not for: the CSV syntax (csv.c), answering a configuration with the nearest
 * recorded curve (curves.c), the synthetic family (synth.c) or writing tables
 * (`tune export --table`, in cli/). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "search/render.h"
#include "search/settings.h"
#include "search/space.h"
#include "sim/csv_int.h"
#include "sim/sim_int.h"

#define TABLE_MAX_BYTES (1024u << 20)

/* ---- loading ------------------------------------------------------------------------ */
void sim_curves_free(sim_curves_t *c)
{
    if (!c) return;
    for (size_t i = 0; i < c->nconf; i++)
        free(c->conf[i].name);
    for (size_t i = 0; i < c->nrows; i++)
        free(c->lines[i]);
    for (size_t i = 0; c->cat && i < c->nconf * c->nparams; i++)
        cJSON_Delete(c->cat[i]);
    free(c->conf);
    free(c->lines);
    free(c->lens);
    free(c->secs);
    free(c->tval);
    free(c->is_cat);
    free(c->is_grid);
    free(c->used);
    free(c->unit);
    free(c->num);
    free(c->cat);
    free(c);
}

struct cols {
    int trial, iter, secs, total;
    int *param; /* per space parameter: its config/ column or -1 */
    int *metric;
    size_t nmetric;
};

static int find_cols(const struct sim_record *h, const sim_curves_t *c, struct cols *k,
                     const char *name, char *err, size_t errlen)
{
    k->trial = k->iter = k->secs = k->total = -1;
    k->nmetric = 0;
    for (size_t i = 0; i < h->n; i++) {
        const char *f = h->f[i];
        if (strcmp(f, "trial") == 0)
            k->trial = (int)i;
        else if (strcmp(f, "training_iteration") == 0)
            k->iter = (int)i;
        else if (strcmp(f, "time_this_iter_s") == 0)
            k->secs = (int)i;
        else if (strcmp(f, "time_total_s") == 0)
            k->total = (int)i;
        if (strncmp(f, "config/", 7) == 0 || (int)i == k->trial) continue;
        k->metric[k->nmetric++] = (int)i;
    }
    if (k->iter < 0)
        return sim__fail(err, errlen, SIM_EINVAL,
                         "%s:1: the table has no training_iteration column", name);
    if (k->secs < 0 && k->total < 0)
        return sim__fail(err, errlen, SIM_EINVAL,
                         "%s:1: the table has no time_this_iter_s (or time_total_s) column: the "
                         "simulator needs the seconds each iteration took",
                         name);
    for (size_t p = 0; p < c->nparams; p++) {
        k->param[p] = -1;
        if (!c->used[p]) continue;
        const char *pn = space_param_name(c->sp, p);
        for (size_t i = 0; i < h->n; i++)
            if (strncmp(h->f[i], "config/", 7) == 0 && strcmp(h->f[i] + 7, pn) == 0)
                k->param[p] = (int)i;
        if (k->param[p] < 0)
            return sim__fail(err, errlen, SIM_EINVAL,
                             "%s:1: the table has no config/%s column for the space's parameter %s",
                             name, pn, pn);
    }
    return 0;
}

/* A cell of a config/ column as the JSON value a configuration would hold. */
static cJSON *cell_value(const char *s)
{
    double v;
    if (sim__cell_number(s, &v) && !isnan(v)) return cJSON_CreateNumber(v);
    if (strcmp(s, "true") == 0) return cJSON_CreateTrue();
    if (strcmp(s, "false") == 0) return cJSON_CreateFalse();
    return cJSON_CreateString(s);
}

/* Records configuration `ci`'s parameter values from its first row r. */
static int bind_conf(sim_curves_t *c, size_t ci, const struct sim_record *r, const struct cols *k,
                     const char *name, int line, char *err, size_t errlen)
{
    for (size_t p = 0; p < c->nparams; p++) {
        if (!c->used[p]) continue;
        const char *cell = (size_t)k->param[p] < r->n ? r->f[k->param[p]] : "";
        cJSON *v = cell_value(cell);
        if (!v) return sim__fail(err, errlen, SIM_ENOMEM, "out of memory");
        double u = NAN;
        int rc = space_param_unit(c->sp, p, v, &u);
        if (c->is_cat[p]) {
            c->cat[ci * c->nparams + p] = v;
            continue;
        }
        c->num[ci * c->nparams + p] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        cJSON_Delete(v);
        if (rc != 0)
            return sim__fail(err, errlen, SIM_EINVAL,
                             "%s:%d: config/%s: \"%s\" is not a value of %s", name, line,
                             space_param_name(c->sp, p), cell, space_param_name(c->sp, p));
        c->unit[ci * c->nparams + p] = u;
    }
    return 0;
}

/* Grows the per-configuration and per-row arrays to hold one more of each. */
static int grow(sim_curves_t *c, size_t *conf_cap, size_t *row_cap)
{
    if (c->nconf + 1 > *conf_cap) {
        size_t cap = *conf_cap ? *conf_cap * 2 : 64;
        struct sim_tconf *conf = realloc(c->conf, cap * sizeof *conf);
        if (!conf) return -1;
        c->conf = conf;
        double *unit = realloc(c->unit, cap * c->nparams * sizeof *unit + 1);
        if (!unit) return -1;
        c->unit = unit;
        double *num = realloc(c->num, cap * c->nparams * sizeof *num + 1);
        if (!num) return -1;
        c->num = num;
        cJSON **cat = realloc(c->cat, cap * c->nparams * sizeof *cat + 1);
        if (!cat) return -1;
        c->cat = cat;
        memset(c->cat + *conf_cap * c->nparams, 0, (cap - *conf_cap) * c->nparams * sizeof *cat);
        *conf_cap = cap;
    }
    if (c->nrows + 1 > *row_cap) {
        size_t cap = *row_cap ? *row_cap * 2 : 256;
        char **lines = realloc(c->lines, cap * sizeof *lines);
        if (!lines) return -1;
        c->lines = lines;
        size_t *lens = realloc(c->lens, cap * sizeof *lens);
        if (!lens) return -1;
        c->lens = lens;
        double *secs = realloc(c->secs, cap * sizeof *secs);
        if (!secs) return -1;
        c->secs = secs;
        double *tval = realloc(c->tval, cap * sizeof *tval);
        if (!tval) return -1;
        c->tval = tval;
        *row_cap = cap;
    }
    return 0;
}

/* The key that groups rows into configurations: the trial column, else the config/ cells. */
static void group_key(const struct sim_record *r, const struct cols *k, const sim_curves_t *c,
                      struct sim_sbuf *b)
{
    b->n = 0;
    if (b->s) b->s[0] = 0;
    if (k->trial >= 0) {
        sim__sb_str(b, (size_t)k->trial < r->n ? r->f[k->trial] : "");
        return;
    }
    for (size_t p = 0; p < c->nparams; p++)
        if (c->used[p] && (size_t)k->param[p] < r->n) {
            sim__sb_str(b, r->f[k->param[p]]);
            sim__sb_add(b, "\x1f", 1);
        }
}

static sim_curves_t *curves_new(const struct space *sp)
{
    sim_curves_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->sp = sp;
    c->nparams = space_num_params(sp);
    size_t n = c->nparams ? c->nparams : 1;
    c->is_cat = calloc(n, sizeof *c->is_cat);
    c->is_grid = calloc(n, sizeof *c->is_grid);
    c->used = calloc(n, sizeof *c->used);
    if (!c->is_cat || !c->is_grid || !c->used) {
        sim_curves_free(c);
        return NULL;
    }
    for (size_t p = 0; p < c->nparams; p++) {
        const char *kind = space_param_kind(sp, p);
        c->is_grid[p] = strcmp(kind, "grid_search") == 0;
        c->is_cat[p] = c->is_grid[p] || strcmp(kind, "choice") == 0;
        c->used[p] = strcmp(kind, "constant") != 0;
    }
    return c;
}

/* What a replayed result reports: training_iteration, time_this_iter_s (a column, or the
 * steps of time_total_s) and every other column but `trial` and the config/ ones. */
static int table_reports(const struct sim_record *h, const struct cols *k, const char *key)
{
    if (strcmp(key, "training_iteration") == 0 || strcmp(key, "time_this_iter_s") == 0 ||
        strcmp(key, "time_total_s") == 0)
        return 1;
    for (size_t m = 0; m < k->nmetric; m++)
        if (strcmp(h->f[k->metric[m]], key) == 0) return 1;
    return 0;
}

/* The experiment's metrics (every objective), its constraints' keys and the scheduler's
 * time_attr must be among what the table's results report, as the loop checks the first
 * result of a real run (check_first_result in scheduler/result.c): from a table without
 * them every trial would report none, and the run would stop at its first result. With
 * allow_missing_metric the run goes on and warns, as a real one does. */
static int check_reported(const struct sim_record *h, const sim_curves_t *c, const struct cols *k,
                          const char *name, char *err, size_t errlen)
{
    const space_settings_t *set = space_settings(c->sp);
    if (set->allow_missing_metric) return 0;
    enum { MAXMISS = SPACE_MAX_OBJECTIVES + SPACE_MAX_CONSTRAINTS + 2 };
    const char *missing[MAXMISS], *what[MAXMISS];
    int nm = 0;
    size_t nobj = set->nobjectives ? set->nobjectives : (set->metric ? 1 : 0);
    for (size_t i = 0; i < nobj; i++) {
        const char *m = set->nobjectives ? set->metrics[i] : set->metric;
        if (m && !table_reports(h, k, m)) {
            missing[nm] = m;
            what[nm++] = nobj > 1 ? "one of the experiment's \"metric\" list"
                                  : "the experiment's \"metric\"";
        }
    }
    for (size_t i = 0; i < set->nconstraints && nm < MAXMISS - 1; i++) {
        const char *key = set->constraints[i].key;
        int dup = 0; /* a range is two entries of one key: name it once */
        for (int j = 0; j < nm; j++)
            dup |= strcmp(missing[j], key) == 0;
        if (!dup && !table_reports(h, k, key)) {
            missing[nm] = key;
            what[nm++] = "a key of the experiment's \"constraints\"";
        }
    }
    if (set->sched.type != SPACE_SCHED_FIFO &&
        strcmp(set->sched.time_attr, "training_iteration") != 0 &&
        !table_reports(h, k, set->sched.time_attr)) {
        missing[nm] = set->sched.time_attr;
        what[nm++] = "the scheduler's \"time_attr\"";
    }
    if (nm == 0) return 0;
    const char *cand[64] = {"training_iteration", "time_this_iter_s", "time_total_s"};
    size_t nc = 3;
    char keys[400] = "\"training_iteration\", \"time_this_iter_s\", \"time_total_s\"";
    size_t kl = strlen(keys);
    for (size_t m = 0; m < k->nmetric; m++) {
        const char *f = h->f[k->metric[m]];
        if (k->metric[m] == k->iter || strcmp(f, "time_this_iter_s") == 0 ||
            strcmp(f, "time_total_s") == 0)
            continue;
        if (nc < 64) cand[nc++] = f;
        if (kl + strlen(f) + 8 < sizeof keys)
            kl += (size_t)snprintf(keys + kl, sizeof keys - kl, ", \"%s\"", f);
    }
    char msg[1024];
    size_t ml = 0;
    for (int i = 0; i < nm && ml < sizeof msg; i++) {
        const char *dym = space_suggest(missing[i], cand, nc);
        ml += (size_t)snprintf(msg + ml, sizeof msg - ml, "%s no \"%.100s\" column, %s%s%.100s%s",
                               i ? ";" : "", missing[i], what[i], dym ? " (did you mean \"" : "",
                               dym ? dym : "", dym ? "\"?)" : "");
    }
    return sim__fail(
        err, errlen, SIM_EINVAL,
        "%s:1: the table has%s. Its results report: %s. Fix the name in space.json, or "
        "replay a table that records it (or set \"allow_missing_metric\": true to run "
        "anyway)",
        name, msg, keys);
}

/* The configurations read so far, by the key that groups their rows (group_key), with the
 * lines their rows took: a key that comes back after other rows is a curve split apart
 * (rows written in order of arrival, two recordings under one name). */
struct seen_conf {
    char *key;
    int first, last; /* the lines of its first and last rows */
};

struct seen {
    struct seen_conf *conf; /* per configuration, in file order */
    size_t n, cap;
    size_t *slot; /* open addressing over conf: index + 1, 0 when empty */
    size_t nslot; /* a power of two, more than twice n */
};

static size_t key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

/* The configuration read with this key, or -1. */
static long seen_find(const struct seen *s, const char *key)
{
    if (!s->nslot) return -1;
    for (size_t i = key_hash(key) & (s->nslot - 1);; i = (i + 1) & (s->nslot - 1)) {
        if (!s->slot[i]) return -1;
        if (strcmp(s->conf[s->slot[i] - 1].key, key) == 0) return (long)(s->slot[i] - 1);
    }
}

static void seen_place(struct seen *s, size_t ci)
{
    size_t i = key_hash(s->conf[ci].key) & (s->nslot - 1);
    while (s->slot[i])
        i = (i + 1) & (s->nslot - 1);
    s->slot[i] = ci + 1;
}

/* Records the next configuration, whose first row is at `line`. -1 without memory. */
static int seen_add(struct seen *s, const char *key, int line)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct seen_conf *conf = realloc(s->conf, cap * sizeof *conf);
        if (!conf) return -1;
        s->conf = conf;
        s->cap = cap;
    }
    if (2 * (s->n + 1) >= s->nslot) {
        size_t nslot = s->nslot ? s->nslot * 2 : 256;
        size_t *slot = calloc(nslot, sizeof *slot);
        if (!slot) return -1;
        free(s->slot);
        s->slot = slot;
        s->nslot = nslot;
        for (size_t ci = 0; ci < s->n; ci++)
            seen_place(s, ci);
    }
    char *k = strdup(key);
    if (!k) return -1;
    s->conf[s->n] = (struct seen_conf){k, line, line};
    seen_place(s, s->n++);
    return 0;
}

static void seen_free(struct seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->conf[i].key);
    free(s->conf);
    free(s->slot);
}

/* A row's seconds: its time_this_iter_s, or the step of its time_total_s from *total_prev
 * (updated). Finite, from 0 to SIM_MAX_ITER_S. */
static int row_seconds(const struct sim_record *r, const struct cols *k, double *total_prev,
                       double *secs, const char *name, int line, char *err, size_t errlen)
{
    static const char mistake[] = "an iteration longer than a year is taken for a mistake "
                                  "(milliseconds or nanoseconds written as seconds?)";
    double v = NAN;
    if (k->secs >= 0) {
        const char *cell = r->f[k->secs];
        if (!sim__cell_number(cell, &v) || !(v >= 0) || !(v <= SIM_MAX_ITER_S))
            return sim__fail(err, errlen, SIM_EINVAL,
                             "%s:%d: time_this_iter_s must be a number of seconds from 0 to %.0f "
                             "(365 days), not \"%s\"%s%s",
                             name, line, SIM_MAX_ITER_S, cell, isfinite(v) && v > 0 ? ": " : "",
                             isfinite(v) && v > 0 ? mistake : "");
        *secs = v;
        return 0;
    }
    const char *cell = r->f[k->total];
    if (!sim__cell_number(cell, &v) || !isfinite(v) || !(v >= *total_prev))
        return sim__fail(err, errlen, SIM_EINVAL,
                         "%s:%d: time_total_s must be a finite number of seconds that does not "
                         "decrease, not \"%s\"",
                         name, line, cell);
    if (!(v - *total_prev <= SIM_MAX_ITER_S)) {
        char nb[32];
        return sim__fail(
            err, errlen, SIM_EINVAL,
            "%s:%d: time_total_s %s makes this iteration %.4g s long (from %s), more than "
            "%.0f (365 days): %s",
            name, line, cell, v - *total_prev, space_format_number(*total_prev, nb), SIM_MAX_ITER_S,
            mistake);
    }
    *secs = v - *total_prev;
    *total_prev = v;
    return 0;
}

int sim_table_parse(const char *text, size_t len, const char *name, const struct space *sp,
                    sim_curves_t **out, char *err, size_t errlen)
{
    sim_curves_t *c = curves_new(sp);
    struct sim_record r = {0};
    struct cols k = {0};
    struct sim_sbuf key = {0}, prev = {0}, line = {0};
    struct seen seen = {0};
    int rc = SIM_ENOMEM;
    if (!c) goto nomem;
    const char *p = text, *end = text + len;
    int lineno = 1, rowline;
    if (sim__read_record(&p, end, &r, &lineno, &rowline) != 1) {
        rc = sim__fail(err, errlen, SIM_EINVAL, "%s: the table is empty (it needs a header line)",
                       name);
        goto out;
    }
    k.param = calloc(c->nparams + 1, sizeof *k.param);
    k.metric = calloc(r.n + 1, sizeof *k.metric);
    if (!k.param || !k.metric) goto nomem;
    if ((rc = find_cols(&r, c, &k, name, err, errlen)) != 0 ||
        (rc = check_reported(&r, c, &k, name, err, errlen)) != 0)
        goto out;
    char **header = calloc(r.n + 1, sizeof *header);
    size_t ncols = r.n;
    if (!header) goto nomem;
    for (size_t i = 0; i < ncols; i++) {
        header[i] = r.f[i];
        r.f[i] = NULL;
    }
    r.n = 0;
    size_t conf_cap = 0, row_cap = 0;
    double total_prev = 0, it_prev = 0, cum = 0;
    /* the scheduler's time_attr per row, for what running a trial to max_t costs: a column,
     * training_iteration, or time_total_s summed from the seconds */
    const char *tattr = space_settings(sp)->sched.time_attr;
    int tcol = -1, tcum = strcmp(tattr, "time_total_s") == 0;
    for (size_t i = 0; i < ncols; i++)
        if (strcmp(header[i], tattr) == 0) tcol = (int)i, tcum = 0;
    for (;;) {
        int got = sim__read_record(&p, end, &r, &lineno, &rowline);
        if (got == 0) break;
        if (got < 0) {
            rc = sim__fail(err, errlen, SIM_EINVAL,
                           "%s:%d: unterminated quoted field (or out of memory)", name, rowline);
            goto out_header;
        }
        if (r.n != ncols) {
            rc = sim__fail(err, errlen, SIM_EINVAL, "%s:%d: %zu fields where the header has %zu",
                           name, rowline, r.n, ncols);
            goto out_header;
        }
        if (grow(c, &conf_cap, &row_cap) != 0) goto nomem_header;
        group_key(&r, &k, c, &key);
        if (key.oom) goto nomem_header;
        const char *ks = key.s ? key.s : "";
        if (seen.n == 0 || strcmp(ks, prev.s ? prev.s : "") != 0) {
            long before = seen_find(&seen, ks);
            if (before >= 0) {
                const struct seen_conf *b = &seen.conf[before];
                if (k.trial >= 0)
                    rc = sim__fail(
                        err, errlen, SIM_EINVAL,
                        "%s:%d: trial \"%.80s\" had its rows at lines %d-%d, before other "
                        "trials' rows: each trial's rows come together, in increasing "
                        "training_iteration (two recordings of one configuration need "
                        "two names)",
                        name, rowline, r.f[k.trial], b->first, b->last);
                else
                    rc = sim__fail(err, errlen, SIM_EINVAL,
                                   "%s:%d: these config/ values had their rows at lines %d-%d, "
                                   "before other rows: each configuration's rows come together, in "
                                   "increasing training_iteration (a trial column tells two "
                                   "recordings of one configuration apart)",
                                   name, rowline, b->first, b->last);
                goto out_header;
            }
            if (seen_add(&seen, ks, rowline) != 0) goto nomem_header;
            struct sim_tconf *t = &c->conf[c->nconf];
            t->first = c->nrows;
            t->n = 0;
            t->name = k.trial >= 0 ? strdup(r.f[k.trial]) : NULL;
            for (size_t q = 0; q < c->nparams; q++) {
                c->unit[c->nconf * c->nparams + q] = NAN;
                c->num[c->nconf * c->nparams + q] = NAN;
                c->cat[c->nconf * c->nparams + q] = NULL;
            }
            c->nconf++;
            if ((rc = bind_conf(c, c->nconf - 1, &r, &k, name, rowline, err, errlen)) != 0)
                goto out_header;
            prev.n = 0;
            sim__sb_str(&prev, ks);
            if (prev.oom) goto nomem_header;
            total_prev = 0;
            it_prev = 0;
            cum = 0;
        }
        double it, secs = 0, v0;
        if (!sim__cell_number(r.f[k.iter], &it) || !(it >= 1) || !(it <= 0x1p53) ||
            it != floor(it)) {
            rc = sim__fail(err, errlen, SIM_EINVAL,
                           "%s:%d: training_iteration must be a whole number from 1 to 2^53, not "
                           "\"%s\"",
                           name, rowline, r.f[k.iter]);
            goto out_header;
        }
        if (!(it > it_prev)) {
            /* The loop would take such rows as they come: a rung met twice, a curve that
             * goes back in time. */
            char nb[32];
            struct seen_conf *b = &seen.conf[seen.n - 1];
            if (it == it_prev)
                rc = sim__fail(
                    err, errlen, SIM_EINVAL,
                    "%s:%d: training_iteration %s again (line %d has it too): a "
                    "configuration's rows are its iterations in increasing order, one row "
                    "per iteration (%s)",
                    name, rowline, r.f[k.iter], b->last,
                    k.trial >= 0 ? "two recordings of one configuration need two names"
                                 : "a trial column tells two recordings of one "
                                   "configuration apart");
            else
                rc = sim__fail(err, errlen, SIM_EINVAL,
                               "%s:%d: training_iteration %s after %s (line %d): a configuration's "
                               "rows are its iterations in increasing order, one row per iteration",
                               name, rowline, r.f[k.iter], space_format_number(it_prev, nb),
                               b->last);
            goto out_header;
        }
        it_prev = it;
        seen.conf[seen.n - 1].last = rowline;
        if ((rc = row_seconds(&r, &k, &total_prev, &secs, name, rowline, err, errlen)) != 0)
            goto out_header;
        line.n = 0;
        sim__sb_str(&line, "{\"training_iteration\": ");
        sim__sb_num(&line, it);
        for (size_t m = 0; m < k.nmetric; m++) {
            int col = k.metric[m];
            if (col == k.iter) continue;
            const char *cell = r.f[col];
            double v;
            if (!*cell) continue; /* not reported at this iteration */
            sim__sb_str(&line, ", ");
            sim__sb_json_str(&line, header[col]);
            sim__sb_str(&line, ": ");
            if (sim__cell_number(cell, &v))
                sim__sb_num(&line, v);
            else
                sim__sb_json_str(&line, cell);
        }
        if (k.secs < 0) {
            sim__sb_str(&line, ", \"time_this_iter_s\": ");
            sim__sb_num(&line, secs);
        }
        cum += secs;
        if (k.total < 0) {
            /* Every result reports the curve's seconds so far, as a Ray trial's result
             * does: with several objectives a trial's training time is one to trade
             * against (docs/simulate.md, "Several objectives"). */
            sim__sb_str(&line, ", \"time_total_s\": ");
            sim__sb_num(&line, cum);
        }
        sim__sb_str(&line, "}");
        if (line.oom) goto nomem_header;
        c->lines[c->nrows] = strdup(line.s);
        if (!c->lines[c->nrows]) goto nomem_header;
        c->lens[c->nrows] = line.n;
        c->secs[c->nrows] = secs;
        c->tval[c->nrows] = tcol >= 0 ? (sim__cell_number(r.f[tcol], &v0) ? v0 : NAN)
                            : tcum    ? cum
                                      : NAN;
        c->nrows++;
        struct sim_tconf *t = &c->conf[c->nconf - 1];
        t->n++;
        if (t->n > c->max_iters) c->max_iters = t->n;
    }
    if (c->nconf == 0) {
        rc = sim__fail(err, errlen, SIM_EINVAL, "%s: the table has a header but no rows", name);
        goto out_header;
    }
    *out = c;
    c = NULL;
    rc = SIM_OK;
    goto out_header;
nomem_header:
    rc = sim__fail(err, errlen, SIM_ENOMEM, "out of memory");
out_header:
    for (size_t i = 0; i < ncols; i++)
        free(header[i]);
    free(header);
    goto out;
nomem:
    rc = sim__fail(err, errlen, SIM_ENOMEM, "out of memory");
out:
    sim__record_clear(&r);
    free(r.f);
    free(k.param);
    free(k.metric);
    free(key.s);
    free(prev.s);
    free(line.s);
    seen_free(&seen);
    sim_curves_free(c);
    return rc;
}

/* The line of a text that its byte n is on (1-based). */
static int line_at(const char *text, size_t n)
{
    int line = 1;
    for (size_t i = 0; i < n; i++)
        line += text[i] == '\n';
    return line;
}

int sim_table_open(const char *path, const struct space *sp, sim_curves_t **out, char *err,
                   size_t errlen)
{
    /* gzread reads plain files as they are, so one path serves both. */
    gzFile f = gzopen(path, "rb");
    if (!f) return sim__fail(err, errlen, SIM_EIO, "cannot open %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = SIM_OK, zerr = Z_OK;
    for (;;) {
        if (n + 65536 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            if (cap > TABLE_MAX_BYTES) {
                rc = sim__fail(err, errlen, SIM_EINVAL, "%s: larger than %u MiB uncompressed", path,
                               TABLE_MAX_BYTES >> 20);
                break;
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                rc = sim__fail(err, errlen, SIM_ENOMEM, "out of memory reading %s", path);
                break;
            }
            buf = nb;
        }
        int k = gzread(f, buf + n, 65536);
        if (k < 0) {
            int saved = errno;
            const char *m = gzerror(f, &zerr);
            size_t pl = strlen(path); /* zlib's message is "PATH: what" */
            if (strncmp(m, path, pl) == 0 && strncmp(m + pl, ": ", 2) == 0) m += pl + 2;
            /* No line: zlib drops what it decoded in the read that failed. */
            if (zerr == Z_ERRNO)
                rc = sim__fail(err, errlen, SIM_EIO, "cannot read %s: %s", path, strerror(saved));
            else
                rc = sim__fail(err, errlen, SIM_EINVAL,
                               "%s: the gzip stream is damaged (%s): copy or write the table again "
                               "(gzip -t checks a file)",
                               path, m);
            break;
        }
        if (k == 0) break;
        n += (size_t)k;
    }
    /* A stream cut short (a copy or a download that stopped, a writer killed) reads as far as
     * it goes and then ends, its last row perhaps cut in the middle of a number: zlib says so
     * only as Z_BUF_ERROR, at the end. */
    if (rc == SIM_OK) gzerror(f, &zerr);
    int crc = gzclose(f);
    if (rc == SIM_OK && (zerr == Z_BUF_ERROR || crc == Z_BUF_ERROR))
        rc = sim__fail(
            err, errlen, SIM_EINVAL,
            "%s:%d: the file ends inside its gzip stream: it was cut short (copied or "
            "written only in part?), and the rows up to here may be too. Copy or write the "
            "table again (gzip -t checks a file)",
            path, line_at(buf, n));
    if (rc == SIM_OK) rc = sim_table_parse(buf ? buf : "", n, path, sp, out, err, errlen);
    free(buf);
    return rc;
}
