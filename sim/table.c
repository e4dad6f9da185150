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

#include "search/space.h"
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
 * skipped. */
static int read_record(const char **p, const char *end, struct record *r, int *line)
{
    record_clear(r);
    while (*p < end && (**p == '\n' || **p == '\r')) {
        if (**p == '\n') (*line)++;
        (*p)++;
    }
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

/* A JSON string: quotes, backslashes and control characters escaped. */
static void sb_json_str(struct sbuf *b, const char *t)
{
    sb_add(b, "\"", 1);
    for (; *t; t++) {
        unsigned char ch = (unsigned char)*t;
        if (ch == '"' || ch == '\\') {
            char e[2] = {'\\', (char)ch};
            sb_add(b, e, 2);
        } else if (ch < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", ch);
            sb_str(b, e);
        } else {
            sb_add(b, t, 1);
        }
    }
    sb_add(b, "\"", 1);
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

int sim_table_parse(const char *text, size_t len, const char *name, const struct space *sp,
                    sim_curves_t **out, char *err, size_t errlen)
{
    sim_curves_t *c = curves_new(sp);
    struct record r = {0};
    struct cols k = {0};
    struct sbuf key = {0}, prev = {0}, line = {0};
    int rc = SIM_ENOMEM;
    if (!c) goto nomem;
    const char *p = text, *end = text + len;
    int lineno = 1, rowline;
    if (read_record(&p, end, &r, &lineno) != 1) {
        rc = fail(err, errlen, SIM_EINVAL, "%s: the table is empty (it needs a header line)", name);
        goto out;
    }
    k.param = calloc(c->nparams + 1, sizeof *k.param);
    k.metric = calloc(r.n + 1, sizeof *k.metric);
    if (!k.param || !k.metric) goto nomem;
    if ((rc = find_cols(&r, c, &k, name, err, errlen)) != 0) goto out;
    char **header = calloc(r.n + 1, sizeof *header);
    size_t ncols = r.n;
    if (!header) goto nomem;
    for (size_t i = 0; i < ncols; i++) {
        header[i] = r.f[i];
        r.f[i] = NULL;
    }
    r.n = 0;
    size_t conf_cap = 0, row_cap = 0;
    double total_prev = 0;
    int have_prev = 0;
    for (;;) {
        rowline = lineno;
        int got = read_record(&p, end, &r, &lineno);
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
        if (!have_prev || strcmp(key.s ? key.s : "", prev.s ? prev.s : "") != 0) {
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
            sb_str(&prev, key.s ? key.s : "");
            if (prev.oom) goto nomem_header;
            have_prev = 1;
            total_prev = 0;
        }
        double it, secs;
        if (!cell_number(r.f[k.iter], &it) || !(it >= 1) || it != floor(it)) {
            rc = fail(err, errlen, SIM_EINVAL,
                      "%s:%d: training_iteration must be a whole number >= 1, not \"%s\"", name,
                      rowline, r.f[k.iter]);
            goto out_header;
        }
        if (k.secs >= 0) {
            if (!cell_number(r.f[k.secs], &secs) || !(secs >= 0)) {
                rc = fail(err, errlen, SIM_EINVAL,
                          "%s:%d: time_this_iter_s must be a number >= 0, not \"%s\"", name,
                          rowline, r.f[k.secs]);
                goto out_header;
            }
        } else {
            double tot;
            if (!cell_number(r.f[k.total], &tot) || !(tot >= total_prev)) {
                rc = fail(err, errlen, SIM_EINVAL,
                          "%s:%d: time_total_s must be a number that does not decrease, not "
                          "\"%s\"",
                          name, rowline, r.f[k.total]);
                goto out_header;
            }
            secs = tot - total_prev;
            total_prev = tot;
        }
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
    for (size_t i = 0; i < ncols; i++)
        free(header[i]);
    free(header);
    record_clear(&r);
    free(r.f);
    free(k.param);
    free(k.metric);
    free(key.s);
    free(prev.s);
    free(line.s);
    *out = c;
    return SIM_OK;
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
    sim_curves_free(c);
    return rc;
}

int sim_table_open(const char *path, const struct space *sp, sim_curves_t **out, char *err,
                   size_t errlen)
{
    /* gzread reads plain files as they are, so one path serves both. */
    gzFile f = gzopen(path, "rb");
    if (!f) return fail(err, errlen, SIM_EIO, "cannot open %s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 > cap) {
            cap = cap ? cap * 2 : 1 << 20;
            if (cap > TABLE_MAX_BYTES) {
                free(buf);
                gzclose(f);
                return fail(err, errlen, SIM_EINVAL, "%s: larger than %u MiB uncompressed", path,
                            TABLE_MAX_BYTES >> 20);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                gzclose(f);
                return fail(err, errlen, SIM_ENOMEM, "out of memory reading %s", path);
            }
            buf = nb;
        }
        int k = gzread(f, buf + n, 65536);
        if (k < 0) {
            int zerr;
            const char *m = gzerror(f, &zerr);
            int rc = fail(err, errlen, SIM_EIO, "cannot read %s: %s", path, m);
            free(buf);
            gzclose(f);
            return rc;
        }
        if (k == 0) break;
        n += (size_t)k;
    }
    gzclose(f);
    int rc = sim_table_parse(buf ? buf : "", n, path, sp, out, err, errlen);
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
                    "no configuration of the table has this configuration's grid_search values");
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
