/* Result sets and their three printed forms: an aligned table for people, JSON for
 * programs, CSV for spreadsheets and pandas. Not for: deciding what to query. */
#include "cli/cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/curves.h"
#include "search/render.h"
#include "search/settings.h"
#include "search/space.h"

void cli_error(const char *fmt, ...)
{
    /* Messages can quote trial text (a result's keys, an error from its stderr): its
     * control characters are shown escaped, the message's own line breaks kept. */
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fputs("tune: ", stderr);
    for (const char *p = buf; *p;) {
        size_t n = strcspn(p, "\n\t");
        char *e = cli_escape_mem(p, n);
        fputs(e ? e : "?", stderr);
        free(e);
        p += n;
        if (*p) fputc(*p++, stderr);
    }
    fputc('\n', stderr);
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if it is not one. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t k = p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 ? 2 : 0;
    if (p[0] >= 0xF5 || k == 0 || k > n) return 0;
    for (size_t i = 1; i < k; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return k;
}

char *cli_escape_mem(const char *s, size_t n)
{
    /* Trial output is not ours to interpret: an escape sequence in a log line must not
     * set the window title or clear the screen of whoever reads it. Each control byte
     * becomes \xNN (a C1 control, U+0080..U+009F, \u00NN), as are bytes that are not
     * UTF-8; everything else is kept. */
    char *out = malloc(n * 6 + 1);
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x20 || p[i] == 0x7f) {
            o += (size_t)sprintf(out + o, "\\x%02x", p[i]);
            i++;
        } else if (p[i] < 0x80) {
            out[o++] = (char)p[i++];
        } else {
            size_t k = utf8_len(p + i, n - i);
            if (k == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0) {
                o += (size_t)sprintf(out + o, "\\u%04x", p[i + 1]);
            } else if (k) {
                memcpy(out + o, p + i, k);
                o += k;
            } else {
                o += (size_t)sprintf(out + o, "\\x%02x", p[i]);
                k = 1;
            }
            i += k;
        }
    }
    out[o] = 0;
    return out;
}

char *cli_escape_text(const char *s)
{
    return cli_escape_mem(s ? s : "", s ? strlen(s) : 0);
}

void cli_rows_free(cli_rows_t *r)
{
    if (!r) return;
    for (int c = 0; c < r->ncol; c++)
        free(r->names[c]);
    for (size_t i = 0; i < r->nrows * (size_t)r->ncol; i++)
        free(r->vals[i]);
    free(r->names);
    free(r->vals);
    free(r->types);
    memset(r, 0, sizeof *r);
}

static int collect(void *ud, int ncol, const char *const *names, const char *const *values,
                   const int *types)
{
    cli_rows_t *r = ud;
    if (!r->names) {
        r->ncol = ncol;
        r->names = calloc((size_t)ncol + 1, sizeof *r->names);
        if (!r->names) return 1;
        for (int c = 0; c < ncol; c++)
            r->names[c] = strdup(names[c] ? names[c] : "");
    }
    if (r->nrows == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        char **v = realloc(r->vals, cap * (size_t)ncol * sizeof *v);
        if (!v) return 1;
        r->vals = v;
        int *t = realloc(r->types, cap * (size_t)ncol * sizeof *t);
        if (!t) return 1;
        r->types = t;
        r->cap = cap;
    }
    for (int c = 0; c < ncol; c++) {
        size_t k = r->nrows * (size_t)ncol + (size_t)c;
        r->vals[k] = values[c] ? strdup(values[c]) : NULL;
        r->types[k] = types[c];
    }
    r->nrows++;
    return 0;
}

int cli_rows_query(store_t *st, const char *sql, const char *const *binds, int nbinds,
                   cli_rows_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    return store_query(st, sql, binds, nbinds, collect, r, err, errlen);
}

static void print_table(FILE *f, const cli_rows_t *r);
static void print_csv(FILE *f, const cli_rows_t *r);

/* Display width of UTF-8 text: one column per code point is close enough for tables. */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

void cli_print_table(FILE *f, const cli_rows_t *r)
{
    if (r->ncol == 0) {
        fprintf(f, "(no rows)\n");
        return;
    }
    /* Cells shown escaped (a trial's error or stderr line may carry escape sequences). */
    cli_rows_t e = {.ncol = r->ncol, .names = r->names, .nrows = r->nrows, .types = r->types};
    e.vals = calloc(r->nrows * (size_t)r->ncol + 1, sizeof *e.vals);
    if (!e.vals) return;
    for (size_t i = 0; i < r->nrows * (size_t)r->ncol; i++)
        e.vals[i] = r->vals[i] ? cli_escape_text(r->vals[i]) : NULL;
    print_table(f, &e);
    for (size_t i = 0; i < r->nrows * (size_t)r->ncol; i++)
        free(e.vals[i]);
    free(e.vals);
}

static void print_table(FILE *f, const cli_rows_t *r)
{
    size_t *w = calloc((size_t)r->ncol, sizeof *w);
    if (!w) return;
    for (int c = 0; c < r->ncol; c++)
        w[c] = text_width(r->names[c]);
    for (size_t i = 0; i < r->nrows; i++)
        for (int c = 0; c < r->ncol; c++) {
            const char *v = r->vals[i * (size_t)r->ncol + (size_t)c];
            size_t k = text_width(v ? v : "NULL");
            if (k > 60) k = 60;
            if (k > w[c]) w[c] = k;
        }
    for (int c = 0; c < r->ncol; c++)
        fprintf(f, "%s%-*s", c ? "  " : "", (int)w[c], r->names[c]);
    fputc('\n', f);
    for (int c = 0; c < r->ncol; c++) {
        fputs(c ? "  " : "", f);
        for (size_t k = 0; k < w[c]; k++)
            fputc('-', f);
    }
    fputc('\n', f);
    for (size_t i = 0; i < r->nrows; i++) {
        for (int c = 0; c < r->ncol; c++) {
            size_t k = i * (size_t)r->ncol + (size_t)c;
            const char *v = r->vals[k] ? r->vals[k] : "NULL";
            int num = r->types[k] == STORE_COL_INT || r->types[k] == STORE_COL_REAL;
            size_t tw = text_width(v);
            fputs(c ? "  " : "", f);
            if (tw > 60) {
                fprintf(f, "%.57s...", v);
            } else if (num) {
                fprintf(f, "%*s%s", (int)(w[c] - tw), "", v);
            } else if (c + 1 < r->ncol) {
                fprintf(f, "%s%*s", v, (int)(w[c] - tw), "");
            } else {
                fputs(v, f);
            }
        }
        fputc('\n', f);
    }
    free(w);
}

static void csv_cell(FILE *f, const char *v)
{
    if (!v) return;
    if (!strpbrk(v, ",\"\n\r")) {
        fputs(v, f);
        return;
    }
    fputc('"', f);
    for (; *v; v++) {
        if (*v == '"') fputc('"', f);
        fputc(*v, f);
    }
    fputc('"', f);
}

void cli_print_csv(FILE *f, const cli_rows_t *r)
{
    /* On a terminal the cells are shown escaped, as in the table; into a file or a pipe
     * they go byte for byte. */
    if (isatty(fileno(f))) {
        cli_rows_t e = *r;
        e.vals = calloc(r->nrows * (size_t)r->ncol + 1, sizeof *e.vals);
        if (!e.vals) return;
        for (size_t i = 0; i < r->nrows * (size_t)r->ncol; i++)
            e.vals[i] = r->vals[i] ? cli_escape_text(r->vals[i]) : NULL;
        print_csv(f, &e);
        for (size_t i = 0; i < r->nrows * (size_t)r->ncol; i++)
            free(e.vals[i]);
        free(e.vals);
        return;
    }
    print_csv(f, r);
}

static void print_csv(FILE *f, const cli_rows_t *r)
{
    for (int c = 0; c < r->ncol; c++) {
        if (c) fputc(',', f);
        csv_cell(f, r->names[c]);
    }
    if (r->ncol) fputc('\n', f);
    for (size_t i = 0; i < r->nrows; i++) {
        for (int c = 0; c < r->ncol; c++) {
            if (c) fputc(',', f);
            csv_cell(f, r->vals[i * (size_t)r->ncol + (size_t)c]);
        }
        fputc('\n', f);
    }
}

static int is_json_col(const char *name, const char *const *json_cols)
{
    for (size_t i = 0; json_cols && json_cols[i]; i++)
        if (strcmp(name, json_cols[i]) == 0) return 1;
    return 0;
}

cJSON *cli_json_number(const char *text)
{
    /* A number item (not a raw one): readers of the tree (early_stopped's boolean, the
     * best trial's value) see it as a number. The store prints reals so they read back
     * exactly and NaN/Inf as words, which JSON has no place for: null. */
    char *end = NULL;
    double d = strtod(text, &end);
    if (end == text || *end || !isfinite(d)) return cJSON_CreateNull();
    return cJSON_CreateNumber(d);
}

cJSON *cli_rows_json(const cli_rows_t *r, const char *const *json_cols)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < r->nrows; i++) {
        cJSON *o = cJSON_CreateObject();
        for (int c = 0; c < r->ncol; c++) {
            size_t k = i * (size_t)r->ncol + (size_t)c;
            const char *v = r->vals[k];
            cJSON *item = NULL;
            if (!v)
                item = cJSON_CreateNull();
            else if (r->types[k] == STORE_COL_INT || r->types[k] == STORE_COL_REAL)
                item = cli_json_number(v);
            else if (is_json_col(r->names[c], json_cols) && (item = cJSON_Parse(v)) != NULL)
                ;
            else
                item = cJSON_CreateString(v);
            cJSON_AddItemToObject(o, r->names[c], item);
        }
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

void cli_print_json(FILE *f, cJSON *j)
{
    char *s = space_json_print_pretty(j);
    if (s) {
        fputs(s, f);
        fputc('\n', f);
    }
    free(s);
}

/* ---- --mode, shared by show, plot and report ------------------------------------ */
int cli_mode_arg(const char *cmd, const char *v, unsigned *flags)
{
    if (strcmp(v, "min") == 0)
        *flags = CLI_EXP_MODE_MIN;
    else if (strcmp(v, "max") == 0)
        *flags = CLI_EXP_MODE_MAX;
    else {
        fprintf(stderr, "tune: %s: --mode wants min or max, got \"%s\"\n", cmd, v);
        return -1;
    }
    return 0;
}

void cli_mode_note(const cli_exp_t *e)
{
    if (!e->mode_guessed) return;
    fprintf(stderr,
            "tune: note: %s is not the experiment's metric (%s): guessed from its name that %s is "
            "better; say --mode %s if not\n",
            e->metric, e->exp_metric ? e->exp_metric : "none", e->mode_max ? "higher" : "lower",
            e->mode_max ? "min" : "max");
}

int cli_help(int argc, char **argv, const char *usage)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
    return 0;
}

store_t *cli_open_ro(const char *db)
{
    char err[1024];
    store_t *st = NULL;
    if (store_open(db, STORE_OPEN_READONLY, &st, err, sizeof err) != 0) {
        cli_error("%s", err);
        return NULL;
    }
    return st;
}

int cli_experiment_create(store_t *st, const space_t *sp, cJSON *settings, const char *results_dir,
                          double now, int64_t *id, char *err, size_t errlen)
{
    const space_settings_t *set = space_settings(sp);
    char *text = settings ? cJSON_PrintUnformatted(settings) : NULL;
    cJSON_Delete(settings);
    store_experiment_t e = {.name = set->name,
                            .space_text = space_text(sp),
                            .settings_json = text ? text : "{}",
                            .metric = set->metric,
                            .mode_max = set->mode == SPACE_MODE_MAX,
                            .scheduler = space_sched_name(set->sched.type),
                            .results_dir = results_dir,
                            .num_trials = (int64_t)space_num_trials(sp),
                            .seed = set->seed};
    int rc = store_experiment_create(st, &e, now, id, err, errlen);
    free(text);
    return rc;
}
