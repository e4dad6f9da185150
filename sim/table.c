/* sim/table.c: tables of recorded learning curves (docs/simulate.md): reading the CSV
 * (plain or gzip), binding its config/ columns to a space, and answering a configuration
 * with the nearest recorded one. Not for: the synthetic family (synth.c) or writing tables
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
#include "jsonw/jsonw.h"
#include "sim/sim_int.h"

#define TABLE_MAX_BYTES (1024u << 20)

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ---- CSV (RFC 4180: quoted fields with "" for a quote, \n or \r\n line ends) ------- */
struct record {
    char **f;
    size_t n, cap;
};

static void record_clear(struct record *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->f[i]);
    r->n = 0;
}

static int record_push(struct record *r, const char *s, size_t len)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        char **f = realloc(r->f, cap * sizeof *f);
        if (!f) return -1;
        r->f = f;
        r->cap = cap;
    }
    char *c = malloc(len + 1);
    if (!c) return -1;
    memcpy(c, s, len);
    c[len] = 0;
    r->f[r->n++] = c;
    return 0;
}

/* Reads one record from *p (advancing it). Returns 1 with r filled, 0 at the end of the
 * text, -1 on a malformed field (an unterminated quote) or out of memory. Blank lines are
 * skipped; *start gets the line the record starts on. */
static int read_record(const char **p, const char *end, struct record *r, int *line, int *start)
{
    record_clear(r);
    while (*p < end && (**p == '\n' || **p == '\r')) {
        if (**p == '\n') (*line)++;
        (*p)++;
    }
    *start = *line;
    if (*p >= end) return 0;
    char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        const char *s = *p;
        size_t len = 0;
        if (s < end && *s == '"') {
            /* quoted: copy with "" -> " */
            size_t k = 0;
            const char *q = s + 1;
            for (;;) {
                if (q >= end) {
                    free(buf);
                    return -1;
                }
                if (*q == '"') {
                    if (q + 1 < end && q[1] == '"') {
                        q++;
                    } else {
                        q++;
                        break;
                    }
                }
                if (*q == '\n') (*line)++;
                if (k + 1 >= cap) {
                    cap = cap ? cap * 2 : 64;
                    char *nb = realloc(buf, cap);
                    if (!nb) {
                        free(buf);
                        return -1;
                    }
                    buf = nb;
                }
                buf[k++] = *q++;
            }
            *p = q;
            if (record_push(r, buf ? buf : "", k) != 0) {
                free(buf);
                return -1;
            }
        } else {
            while (s + len < end && s[len] != ',' && s[len] != '\n' && s[len] != '\r')
                len++;
            *p = s + len;
            if (record_push(r, s, len) != 0) {
                free(buf);
                return -1;
            }
        }
        if (*p < end && **p == ',') {
            (*p)++;
            continue;
        }
        if (*p < end && **p == '\r') (*p)++;
        if (*p < end && **p == '\n') {
            (*p)++;
            (*line)++;
        }
        break;
    }
    free(buf);
    return 1;
}

/* A cell as a number: 1 with *v set (empty cells are not numbers; nan/NaN are NaN). */
static int cell_number(const char *s, double *v)
{
    if (!*s) return 0;
    if (strcmp(s, "nan") == 0 || strcmp(s, "NaN") == 0 || strcmp(s, "null") == 0) {
        *v = NAN;
        return 1;
    }
    char *e;
    errno = 0;
    double x = strtod(s, &e);
    if (*e || e == s) return 0;
    *v = x;
    return 1;
}

/* Appends text to the line being built. */
struct sbuf {
    char *s;
    size_t n, cap;
    int oom;
};

static void sb_add(struct sbuf *b, const char *t, size_t len)
{
    if (b->oom) return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, t, len);
    b->n += len;
    b->s[b->n] = 0;
}

static void sb_str(struct sbuf *b, const char *t)
{
    sb_add(b, t, strlen(t));
}

static int sb_put(void *b, const char *t, size_t len)
{
    sb_add(b, t, len);
    return 0;
}

/* A JSON string (jsonw), appended. */
static void sb_json_str(struct sbuf *b, const char *t)
{
    jsonw_quote_cb(t, 0, sb_put, b);
}

static void sb_num(struct sbuf *b, double v)
{
    char nb[32];
    if (isnan(v))
        sb_str(b, "NaN");
    else if (isinf(v))
        sb_str(b, v > 0 ? "Infinity" : "-Infinity");
    else
        sb_str(b, space_format_number(v, nb));
}

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
    free(c->is_cat);
    free(c->is_grid);
    free(c->used);
    free(c->unit);
    free(c->cat);
    free(c);
}

struct cols {
    int trial, iter, secs, total;
    int *param; /* per space parameter: its config/ column or -1 */
    int *metric;
    size_t nmetric;
};

static int find_cols(const struct record *h, const sim_curves_t *c, struct cols *k,
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
        return fail(err, errlen, SIM_EINVAL, "%s:1: the table has no training_iteration column",
                    name);
    if (k->secs < 0 && k->total < 0)
        return fail(err, errlen, SIM_EINVAL,
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
            return fail(err, errlen, SIM_EINVAL,
                        "%s:1: the table has no config/%s column for the space's parameter %s",
                        name, pn, pn);
    }
    return 0;
}

/* A cell of a config/ column as the JSON value a configuration would hold. */
static cJSON *cell_value(const char *s)
{
    double v;
    if (cell_number(s, &v) && !isnan(v)) return cJSON_CreateNumber(v);
    if (strcmp(s, "true") == 0) return cJSON_CreateTrue();
    if (strcmp(s, "false") == 0) return cJSON_CreateFalse();
    return cJSON_CreateString(s);
}

/* Records configuration `ci`'s parameter values from its first row r. */
static int bind_conf(sim_curves_t *c, size_t ci, const struct record *r, const struct cols *k,
                     const char *name, int line, char *err, size_t errlen)
{
    for (size_t p = 0; p < c->nparams; p++) {
        if (!c->used[p]) continue;
        const char *cell = (size_t)k->param[p] < r->n ? r->f[k->param[p]] : "";
        cJSON *v = cell_value(cell);
        if (!v) return fail(err, errlen, SIM_ENOMEM, "out of memory");
        double u = NAN;
        int rc = space_param_unit(c->sp, p, v, &u);
        if (c->is_cat[p]) {
            c->cat[ci * c->nparams + p] = v;
            continue;
        }
        cJSON_Delete(v);
        if (rc != 0)
            return fail(err, errlen, SIM_EINVAL, "%s:%d: config/%s: \"%s\" is not a value of %s",
                        name, line, space_param_name(c->sp, p), cell, space_param_name(c->sp, p));
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
        *row_cap = cap;
    }
    return 0;
}

/* The key that groups rows into configurations: the trial column, else the config/ cells. */
static void group_key(const struct record *r, const struct cols *k, const sim_curves_t *c,
                      struct sbuf *b)
{
    b->n = 0;
    if (b->s) b->s[0] = 0;
    if (k->trial >= 0) {
        sb_str(b, (size_t)k->trial < r->n ? r->f[k->trial] : "");
        return;
    }
    for (size_t p = 0; p < c->nparams; p++)
        if (c->used[p] && (size_t)k->param[p] < r->n) {
            sb_str(b, r->f[k->param[p]]);
            sb_add(b, "\x1f", 1);
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
static int table_reports(const struct record *h, const struct cols *k, const char *key)
{
    if (strcmp(key, "training_iteration") == 0 || strcmp(key, "time_this_iter_s") == 0) return 1;
    for (size_t m = 0; m < k->nmetric; m++)
        if (strcmp(h->f[k->metric[m]], key) == 0) return 1;
    return 0;
}

/* The experiment's metric and the scheduler's time_attr must be among what the table's
 * results report, as the loop checks the first result of a real run (check_first_result
 * in scheduler/result.c): from a table without them every trial would report neither, and
 * the run would stop at its first result. With allow_missing_metric the run goes on and
 * warns, as a real one does. */
static int check_reported(const struct record *h, const sim_curves_t *c, const struct cols *k,
                          const char *name, char *err, size_t errlen)
{
    const space_settings_t *set = space_settings(c->sp);
    if (set->allow_missing_metric) return 0;
    const char *missing[2], *what[2];
    int nm = 0;
    if (set->metric && !table_reports(h, k, set->metric)) {
        missing[nm] = set->metric;
        what[nm++] = "the experiment's \"metric\"";
    }
    if (set->sched.type != SPACE_SCHED_FIFO &&
        strcmp(set->sched.time_attr, "training_iteration") != 0 &&
        !table_reports(h, k, set->sched.time_attr)) {
        missing[nm] = set->sched.time_attr;
        what[nm++] = "the scheduler's \"time_attr\"";
    }
    if (nm == 0) return 0;
    const char *cand[64] = {"training_iteration", "time_this_iter_s"};
    size_t nc = 2;
    char keys[400] = "\"training_iteration\", \"time_this_iter_s\"";
    size_t kl = strlen(keys);
    for (size_t m = 0; m < k->nmetric; m++) {
        const char *f = h->f[k->metric[m]];
        if (k->metric[m] == k->iter || strcmp(f, "time_this_iter_s") == 0) continue;
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
    return fail(err, errlen, SIM_EINVAL,
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
static int row_seconds(const struct record *r, const struct cols *k, double *total_prev,
                       double *secs, const char *name, int line, char *err, size_t errlen)
{
    static const char mistake[] = "an iteration longer than a year is taken for a mistake "
                                  "(milliseconds or nanoseconds written as seconds?)";
    double v = NAN;
    if (k->secs >= 0) {
        const char *cell = r->f[k->secs];
        if (!cell_number(cell, &v) || !(v >= 0) || !(v <= SIM_MAX_ITER_S))
            return fail(err, errlen, SIM_EINVAL,
                        "%s:%d: time_this_iter_s must be a number of seconds from 0 to %.0f "
                        "(365 days), not \"%s\"%s%s",
                        name, line, SIM_MAX_ITER_S, cell, isfinite(v) && v > 0 ? ": " : "",
                        isfinite(v) && v > 0 ? mistake : "");
        *secs = v;
        return 0;
    }
    const char *cell = r->f[k->total];
    if (!cell_number(cell, &v) || !isfinite(v) || !(v >= *total_prev))
        return fail(err, errlen, SIM_EINVAL,
                    "%s:%d: time_total_s must be a finite number of seconds that does not "
                    "decrease, not \"%s\"",
                    name, line, cell);
    if (!(v - *total_prev <= SIM_MAX_ITER_S)) {
        char nb[32];
        return fail(err, errlen, SIM_EINVAL,
                    "%s:%d: time_total_s %s makes this iteration %.4g s long (from %s), more than "
                    "%.0f (365 days): %s",
                    name, line, cell, v - *total_prev, space_format_number(*total_prev, nb),
                    SIM_MAX_ITER_S, mistake);
    }
    *secs = v - *total_prev;
    *total_prev = v;
    return 0;
}

int sim_table_parse(const char *text, size_t len, const char *name, const struct space *sp,
                    sim_curves_t **out, char *err, size_t errlen)
{
    sim_curves_t *c = curves_new(sp);
    struct record r = {0};
    struct cols k = {0};
    struct sbuf key = {0}, prev = {0}, line = {0};
    struct seen seen = {0};
    int rc = SIM_ENOMEM;
    if (!c) goto nomem;
    const char *p = text, *end = text + len;
    int lineno = 1, rowline;
    if (read_record(&p, end, &r, &lineno, &rowline) != 1) {
        rc = fail(err, errlen, SIM_EINVAL, "%s: the table is empty (it needs a header line)", name);
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
    double total_prev = 0, it_prev = 0;
    for (;;) {
        int got = read_record(&p, end, &r, &lineno, &rowline);
        if (got == 0) break;
        if (got < 0) {
            rc = fail(err, errlen, SIM_EINVAL,
                      "%s:%d: unterminated quoted field (or out of memory)", name, rowline);
            goto out_header;
        }
        if (r.n != ncols) {
            rc = fail(err, errlen, SIM_EINVAL, "%s:%d: %zu fields where the header has %zu", name,
                      rowline, r.n, ncols);
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
                    rc = fail(err, errlen, SIM_EINVAL,
                              "%s:%d: trial \"%.80s\" had its rows at lines %d-%d, before other "
                              "trials' rows: each trial's rows come together, in increasing "
                              "training_iteration (two recordings of one configuration need "
                              "two names)",
                              name, rowline, r.f[k.trial], b->first, b->last);
                else
                    rc = fail(err, errlen, SIM_EINVAL,
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
                c->cat[c->nconf * c->nparams + q] = NULL;
            }
            c->nconf++;
            if ((rc = bind_conf(c, c->nconf - 1, &r, &k, name, rowline, err, errlen)) != 0)
                goto out_header;
            prev.n = 0;
            sb_str(&prev, ks);
            if (prev.oom) goto nomem_header;
            total_prev = 0;
            it_prev = 0;
        }
        double it, secs = 0;
        if (!cell_number(r.f[k.iter], &it) || !(it >= 1) || !(it <= 0x1p53) || it != floor(it)) {
            rc = fail(err, errlen, SIM_EINVAL,
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
                rc = fail(err, errlen, SIM_EINVAL,
                          "%s:%d: training_iteration %s again (line %d has it too): a "
                          "configuration's rows are its iterations in increasing order, one row "
                          "per iteration (%s)",
                          name, rowline, r.f[k.iter], b->last,
                          k.trial >= 0 ? "two recordings of one configuration need two names"
                                       : "a trial column tells two recordings of one "
                                         "configuration apart");
            else
                rc = fail(err, errlen, SIM_EINVAL,
                          "%s:%d: training_iteration %s after %s (line %d): a configuration's "
                          "rows are its iterations in increasing order, one row per iteration",
                          name, rowline, r.f[k.iter], space_format_number(it_prev, nb), b->last);
            goto out_header;
        }
        it_prev = it;
        seen.conf[seen.n - 1].last = rowline;
        if ((rc = row_seconds(&r, &k, &total_prev, &secs, name, rowline, err, errlen)) != 0)
            goto out_header;
        line.n = 0;
        sb_str(&line, "{\"training_iteration\": ");
        sb_num(&line, it);
        for (size_t m = 0; m < k.nmetric; m++) {
            int col = k.metric[m];
            if (col == k.iter) continue;
            const char *cell = r.f[col];
            double v;
            if (!*cell) continue; /* not reported at this iteration */
            sb_str(&line, ", ");
            sb_json_str(&line, header[col]);
            sb_str(&line, ": ");
            if (cell_number(cell, &v))
                sb_num(&line, v);
            else
                sb_json_str(&line, cell);
        }
        if (k.secs < 0) {
            sb_str(&line, ", \"time_this_iter_s\": ");
            sb_num(&line, secs);
        }
        sb_str(&line, "}");
        if (line.oom) goto nomem_header;
        c->lines[c->nrows] = strdup(line.s);
        if (!c->lines[c->nrows]) goto nomem_header;
        c->lens[c->nrows] = line.n;
        c->secs[c->nrows] = secs;
        c->nrows++;
        struct sim_tconf *t = &c->conf[c->nconf - 1];
        t->n++;
        if (t->n > c->max_iters) c->max_iters = t->n;
    }
    if (c->nconf == 0) {
        rc = fail(err, errlen, SIM_EINVAL, "%s: the table has a header but no rows", name);
        goto out_header;
    }
    *out = c;
    c = NULL;
    rc = SIM_OK;
    goto out_header;
nomem_header:
    rc = fail(err, errlen, SIM_ENOMEM, "out of memory");
out_header:
    for (size_t i = 0; i < ncols; i++)
        free(header[i]);
    free(header);
    goto out;
nomem:
    rc = fail(err, errlen, SIM_ENOMEM, "out of memory");
out:
    record_clear(&r);
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
    if (!f) return fail(err, errlen, SIM_EIO, "cannot open %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int rc = SIM_OK, zerr = Z_OK;
    for (;;) {
        if (n + 65536 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            if (cap > TABLE_MAX_BYTES) {
                rc = fail(err, errlen, SIM_EINVAL, "%s: larger than %u MiB uncompressed", path,
                          TABLE_MAX_BYTES >> 20);
                break;
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                rc = fail(err, errlen, SIM_ENOMEM, "out of memory reading %s", path);
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
                rc = fail(err, errlen, SIM_EIO, "cannot read %s: %s", path, strerror(saved));
            else
                rc = fail(err, errlen, SIM_EINVAL,
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
        rc = fail(err, errlen, SIM_EINVAL,
                  "%s:%d: the file ends inside its gzip stream: it was cut short (copied or "
                  "written only in part?), and the rows up to here may be too. Copy or write the "
                  "table again (gzip -t checks a file)",
                  path, line_at(buf, n));
    if (rc == SIM_OK) rc = sim_table_parse(buf ? buf : "", n, path, sp, out, err, errlen);
    free(buf);
    return rc;
}

/* ---- answering -------------------------------------------------------------------- */
size_t sim_curves_count(const sim_curves_t *c)
{
    return c->synthetic ? 0 : c->nconf;
}

int64_t sim_curves_max_iters(const sim_curves_t *c)
{
    return c->synthetic ? c->syn.iters : c->max_iters;
}

const char *sim_curves_row_name(const sim_curves_t *c, size_t row)
{
    if (c->synthetic || row >= c->nconf) return "synthetic";
    return c->conf[row].name ? c->conf[row].name : "";
}

int sim__synth_lookup(const sim_curves_t *c, const cJSON *config, sim_curve_t *out, char *err,
                      size_t errlen);
int sim__synth_result(sim_curves_t *c, const sim_curve_t *cv, int64_t it, const char **line,
                      size_t *len, double *seconds);

int sim_curves_lookup(const sim_curves_t *c, const cJSON *config, sim_curve_t *out, char *err,
                      size_t errlen)
{
    if (c->synthetic) return sim__synth_lookup(c, config, out, err, errlen);
    size_t np = c->nparams;
    double qu[256];
    const cJSON *qv[256];
    if (np > 256) return fail(err, errlen, SIM_EINVAL, "more than 256 parameters");
    size_t nused = 0;
    for (size_t p = 0; p < np; p++) {
        qv[p] = NULL;
        qu[p] = NAN;
        if (!c->used[p]) continue;
        nused++;
        const char *pn = space_param_name(c->sp, p);
        qv[p] = cJSON_GetObjectItemCaseSensitive(config, pn);
        if (!qv[p]) return fail(err, errlen, SIM_EINVAL, "the configuration has no %s", pn);
        if (!c->is_cat[p] && space_param_unit(c->sp, p, qv[p], &qu[p]) != 0)
            return fail(err, errlen, SIM_EINVAL, "the configuration's %s is not a value of it", pn);
    }
    size_t best = (size_t)-1;
    double best_d = INFINITY;
    for (size_t ci = 0; ci < c->nconf; ci++) {
        double sum = 0;
        int skip = 0;
        for (size_t p = 0; p < np && !skip; p++) {
            if (!c->used[p]) continue;
            double d;
            if (c->is_cat[p]) {
                const cJSON *tv = c->cat[ci * np + p];
                d = tv ? space_param_distance(c->sp, p, tv, qv[p]) : 1;
                if (isnan(d)) d = 1;
                if (c->is_grid[p] && d != 0) skip = 1;
            } else {
                d = c->unit[ci * np + p] - qu[p];
            }
            sum += d * d;
        }
        if (!skip && sum < best_d) {
            best_d = sum;
            best = ci;
        }
    }
    if (best == (size_t)-1)
        return fail(err, errlen, SIM_EINVAL,
                    "no row of the table has this configuration's grid_search values (they must "
                    "match exactly): record curves for them, or leave them out of space.json");
    memset(out, 0, sizeof *out);
    out->row = best;
    out->distance = nused ? sqrt(best_d / (double)nused) : 0;
    out->iters = c->conf[best].n;
    return SIM_OK;
}

int sim_curve_result(sim_curves_t *c, const sim_curve_t *cv, int64_t it, const char **line,
                     size_t *len, double *seconds)
{
    if (c->synthetic) return sim__synth_result(c, cv, it, line, len, seconds);
    if (cv->row >= c->nconf || it < 1 || it > c->conf[cv->row].n) return 0;
    size_t r = c->conf[cv->row].first + (size_t)(it - 1);
    *line = c->lines[r];
    *len = c->lens[r];
    *seconds = c->secs[r];
    return 1;
}

double sim_curve_seconds(const sim_curves_t *c, const sim_curve_t *cv, int64_t it)
{
    if (c->synthetic) return it >= 1 && it <= c->syn.iters ? sim__synth_seconds(c, cv) : 0;
    if (cv->row >= c->nconf || it < 1 || it > c->conf[cv->row].n) return 0;
    return c->secs[c->conf[cv->row].first + (size_t)(it - 1)];
}
