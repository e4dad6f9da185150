/* table.c: the live status table (after Ray Tune's CLIReporter): a header with the time,
 * the experiment, each rung's cutoff, resources in use and trial counts, then one row per
 * trial, cut to the terminal; and cli_fmt_num, the number format show.c shares. Renders a
 * snapshot into text; it never reads the store and never touches the terminal itself
 * (run.c decides where and how often). */
#include "cli/cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search/space.h"

struct buf {
    char *p;
    size_t len, cap;
};

static void bput(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
        char *p = realloc(b->p, cap);
        if (!p) return;
        b->p = p;
        b->cap = cap;
    }
}

static void fmt_cfg_value(const cJSON *v, char *out, size_t n)
{
    if (!v) {
        snprintf(out, n, "-");
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 1e15)
            snprintf(out, n, "%.0f", d);
        else
            cli_fmt_num(d, out, n);
    } else if (cJSON_IsString(v)) {
        snprintf(out, n, "%s", v->valuestring);
    } else {
        char *s = cJSON_PrintUnformatted(v);
        snprintf(out, n, "%s", s ? s : "?");
        free(s);
    }
}

static int cmp_view(const void *a, const void *b, void *ctx)
{
    return sched_view_order(*(const sched_trial_view_t *const *)a,
                            *(const sched_trial_view_t *const *)b, *(const int *)ctx);
}

static void clip_line(struct buf *b, size_t start, int cols)
{
    if (cols <= 0) return;
    size_t w = 0, i = start;
    while (i < b->len && b->p[i] != '\n') {
        if (((unsigned char)b->p[i] & 0xC0) != 0x80) w++;
        if (w > (size_t)cols) {
            size_t end = i;
            while (end < b->len && b->p[end] != '\n')
                end++;
            memmove(b->p + i, b->p + end, b->len - end + 1);
            b->len -= end - i;
            return;
        }
        i++;
    }
}

void cli_fmt_num(double v, char *out, size_t n)
{
    if (isnan(v))
        snprintf(out, n, "-");
    else if (v != 0 && (fabs(v) < 1e-3 || fabs(v) >= 1e6))
        snprintf(out, n, "%.4g", v);
    else
        snprintf(out, n, "%.5g", v);
}

/* ---- the header: one line each, cut to the terminal --------------------------------- */

static void header_time(struct buf *b, const sched_snapshot_t *s, int cols)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    long el = (long)s->elapsed_s;
    size_t start = b->len;
    bput(b, "== Status == %s (running for %02ld:%02ld:%02ld)%s\n", when, el / 3600, (el / 60) % 60,
         el % 60, s->stopping ? "  STOPPING: no new trials" : "");
    clip_line(b, start, cols);
    start = b->len;
    bput(b, "Experiment %s, scheduler %s", s->experiment, s->policy);
    if (s->searcher) bput(b, ", search %s", s->searcher);
    if (s->metric) bput(b, ", metric %s (%s)", s->metric, s->mode_max ? "max" : "min");
    bput(b, "\n");
    clip_line(b, start, cols);
}

/* Each rung's milestone, values seen and cutoff (bracket by bracket when there are more). */
static void header_rungs(struct buf *b, const sched_snapshot_t *s, const cli_table_opts_t *o)
{
    if (!s->nrungs) return;
    size_t start = b->len;
    int last_bracket = -1;
    bput(b, "Rungs:");
    for (size_t i = 0; i < s->nrungs; i++) {
        const sched_rung_info_t *r = &s->rungs[i];
        char c[32];
        cli_fmt_num(r->cutoff, c, sizeof c);
        if (r->bracket != last_bracket && s->rungs[s->nrungs - 1].bracket > 0)
            bput(b, " [bracket %d]", r->bracket);
        last_bracket = r->bracket;
        bput(b, " %s>=%g: %zu seen, cutoff %s;", o->time_attr ? o->time_attr : "t", r->milestone,
             r->recorded, c);
    }
    if (b->p[b->len - 1] == ';') b->len--;
    bput(b, "\n");
    clip_line(b, start, o->cols);
}

/* Resources in use, results recorded and lines not recorded; then the trials' counts. */
static void header_counts(struct buf *b, const sched_snapshot_t *s, size_t total, int cols)
{
    size_t start = b->len;
    char g[32];
    cli_fmt_num(s->gpus_used, g, sizeof g);
    if (s->gpus_total)
        bput(b, "Resources: %s/%d GPUs, %d/%d CPUs | results %llu", g, s->gpus_total, s->cpus_used,
             s->cpus_total, (unsigned long long)s->results);
    else
        bput(b, "Resources: no GPUs (CPU only), %d/%d CPUs | results %llu", s->cpus_used,
             s->cpus_total, (unsigned long long)s->results);
    if (s->ignored) bput(b, ", %llu after stop (not recorded)", (unsigned long long)s->ignored);
    if (s->bad_lines)
        bput(b, ", %llu unreadable result lines (over-long or not JSON)",
             (unsigned long long)s->bad_lines);
    bput(b, "\n");
    clip_line(b, start, cols);
    start = b->len;
    bput(b, "Trials: %zu total: %zu RUNNING, %zu PENDING, %zu TERMINATED (%zu early-stopped)",
         total, s->counts[SCHED_TRIAL_RUNNING], s->counts[SCHED_TRIAL_PENDING],
         s->counts[SCHED_TRIAL_TERMINATED], s->early_stopped);
    if (s->counts[SCHED_TRIAL_PAUSED]) bput(b, ", %zu PAUSED", s->counts[SCHED_TRIAL_PAUSED]);
    bput(b, ", %zu ERROR", s->counts[SCHED_TRIAL_ERROR]);
    if (s->best_trial >= 0) {
        char m[32];
        cli_fmt_num(s->best_metric, m, sizeof m);
        bput(b, " | best trial_%05lld %s=%s", (long long)s->best_trial, s->metric, m);
    }
    bput(b, "\n");
    clip_line(b, start, cols);
}

/* ---- the body: a grid of cells, fitted to the terminal ------------------------------ */

/* Columns: trial, status, slice, [job/node], parameters, iter, [time_attr], time, metric,
 * best, the reporter's metric_columns. Row 0 is the column names. */
struct grid {
    char **cells; /* (rows + 1) * ncols, row-major */
    size_t *w;    /* each column's width */
    int *kind;    /* 0 kept always, 1 parameter, 2 slice/job */
    int *keep;    /* shown */
    size_t ncols, rows, col;
    int show_t; /* a time_attr column */
};

static void grid_free(struct grid *g)
{
    for (size_t i = 0; g->cells && i < (g->rows + 1) * g->ncols; i++)
        free(g->cells[i]);
    free(g->cells);
    free(g->w);
    free(g->kind);
    free(g->keep);
}

/* Room for `rows` trials under the column names. 0, or -1 when out of memory. */
static int grid_new(struct grid *g, size_t rows, const cli_table_opts_t *o)
{
    memset(g, 0, sizeof *g);
    g->rows = rows;
    g->ncols = 5 + o->nparams + 4 + o->nmetric_columns + (o->show_exec ? 1 : 0);
    g->cells = calloc((rows + 1) * g->ncols, sizeof *g->cells);
    g->w = calloc(g->ncols, sizeof *g->w);
    g->kind = calloc(g->ncols, sizeof *g->kind);
    g->keep = calloc(g->ncols, sizeof *g->keep);
    /* "iter" counts results; a time_attr column only adds news when it measures
     * something else (epochs, seconds). */
    g->show_t = o->time_attr && strcmp(o->time_attr, "training_iteration") != 0;
    if (g->cells && g->w && g->kind && g->keep) return 0;
    grid_free(g);
    return -1;
}

/* The next cell of row r (0: the names), of kind `kind`. */
static void cell(struct grid *g, size_t r, int kind, const char *text)
{
    if (r == 0) g->kind[g->col] = kind;
    g->cells[r * g->ncols + g->col++] = strdup(text);
}

static void grid_names(struct grid *g, const sched_snapshot_t *s, const cli_table_opts_t *o)
{
    g->col = 0;
    cell(g, 0, 0, "trial");
    cell(g, 0, 0, "status");
    cell(g, 0, 2, "slice");
    if (o->show_exec) cell(g, 0, 2, "job/node");
    for (size_t p = 0; p < o->nparams; p++)
        cell(g, 0, 1, o->params[p]);
    cell(g, 0, 0, "iter");
    if (g->show_t) cell(g, 0, 0, o->time_attr);
    cell(g, 0, 0, "time");
    cell(g, 0, 0, s->metric ? s->metric : "metric");
    cell(g, 0, 0, "best");
    for (size_t k = 0; k < o->nmetric_columns; k++)
        cell(g, 0, 0, o->metric_columns[k]);
    g->ncols = g->col;
}

/* Row r: trial v's cells. */
static void grid_trial(struct grid *g, size_t r, const sched_trial_view_t *v,
                       const cli_table_opts_t *o)
{
    char tmp[128];
    g->col = 0;
    cell(g, r, 0, v->name);
    snprintf(tmp, sizeof tmp, "%s%s", sched_status_name(v->status),
             v->early_stopped ? " (stopped)" : "");
    cell(g, r, 0, tmp);
    cell(g, r, 0, v->slice && *v->slice ? v->slice : "-");
    if (o->show_exec) {
        snprintf(tmp, sizeof tmp, "%s%s%s", v->exec_id && *v->exec_id ? v->exec_id : "-",
                 v->node && *v->node ? "@" : "", v->node ? v->node : "");
        cell(g, r, 0, tmp);
    }
    for (size_t p = 0; p < o->nparams; p++) {
        fmt_cfg_value(v->config ? cJSON_GetObjectItemCaseSensitive(v->config, o->params[p]) : NULL,
                      tmp, 40);
        cell(g, r, 0, tmp);
    }
    snprintf(tmp, sizeof tmp, "%lld", (long long)v->iterations);
    cell(g, r, 0, tmp);
    if (g->show_t) {
        cli_fmt_num(v->last_time, tmp, sizeof tmp);
        cell(g, r, 0, tmp);
    }
    long rs = (long)v->run_s;
    if (v->run_s <= 0)
        snprintf(tmp, sizeof tmp, "-");
    else if (rs >= 3600)
        snprintf(tmp, sizeof tmp, "%ld:%02ld:%02ld", rs / 3600, (rs / 60) % 60, rs % 60);
    else
        snprintf(tmp, sizeof tmp, "%ld:%02ld", rs / 60, rs % 60);
    cell(g, r, 0, tmp);
    /* NaN after results is a diverged trial, not a missing value: say so. */
    if (v->iterations > 0 && isnan(v->last_metric))
        snprintf(tmp, sizeof tmp, "NaN");
    else
        cli_fmt_num(v->last_metric, tmp, sizeof tmp);
    cell(g, r, 0, tmp);
    cli_fmt_num(v->best_metric, tmp, sizeof tmp);
    cell(g, r, 0, tmp);
    for (size_t k = 0; k < o->nmetric_columns; k++) {
        cli_fmt_num(v->columns && k < v->ncolumns ? v->columns[k] : NAN, tmp, sizeof tmp);
        cell(g, r, 0, tmp);
    }
}

/* The width of the kept columns with their " | " separators. */
static size_t grid_width(const struct grid *g)
{
    size_t total = 0, nk = 0;
    for (size_t q = 0; q < g->ncols; q++)
        if (g->keep[q]) total += g->w[q], nk++;
    return total + (nk ? 3 * (nk - 1) : 0);
}

/* Each column as wide as its widest cell; when the terminal is narrower than that,
 * parameter columns are narrowed, then dropped from the right, then the slice and job
 * columns: the metric and the iteration stay visible at any width. */
static void grid_fit(struct grid *g, int cols)
{
    for (size_t r = 0; r <= g->rows; r++)
        for (size_t c = 0; c < g->ncols; c++) {
            const char *x = g->cells[r * g->ncols + c] ? g->cells[r * g->ncols + c] : "";
            size_t k = strlen(x);
            if (k > g->w[c]) g->w[c] = k;
        }
    for (size_t c = 0; c < g->ncols; c++)
        g->keep[c] = 1;
    if (cols <= 0) return;
    if (grid_width(g) > (size_t)cols) /* every wide parameter column, then measure again */
        for (size_t c = 0; c < g->ncols; c++)
            if (g->kind[c] == 1 && g->w[c] > 10) g->w[c] = 10;
    for (int kind = 1; kind <= 2; kind++)
        for (size_t c = g->ncols; c-- > 0 && grid_width(g) > (size_t)cols;)
            if (g->kind[c] == kind) g->keep[c] = 0;
}

static void grid_print(struct buf *b, const struct grid *g, int cols)
{
    for (size_t r = 0; r <= g->rows; r++) {
        size_t start = b->len;
        int first = 1;
        for (size_t c = 0; c < g->ncols; c++) {
            if (!g->keep[c]) continue;
            const char *x = g->cells[r * g->ncols + c] ? g->cells[r * g->ncols + c] : "";
            if (strlen(x) > g->w[c]) /* narrowed: cut, with ~ saying so */
                bput(b, "%s%.*s~", first ? "" : " | ", (int)g->w[c] - 1, x);
            else
                bput(b, "%s%-*s", first ? "" : " | ", (int)g->w[c], x);
            first = 0;
        }
        while (b->len > start && b->p[b->len - 1] == ' ')
            b->len--;
        bput(b, "\n");
        clip_line(b, start, cols);
        if (r > 0) continue;
        start = b->len;
        first = 1;
        for (size_t c = 0; c < g->ncols; c++) {
            if (!g->keep[c]) continue;
            bput(b, "%s", first ? "" : "-+-");
            first = 0;
            for (size_t k = 0; k < g->w[c]; k++)
                bput(b, "-");
        }
        bput(b, "\n");
        clip_line(b, start, cols);
    }
}

/* "... and N more trials (by status)": those of the snapshot past the room, and those the
 * snapshot left out (report_trials). */
static void body_more(struct buf *b, const sched_snapshot_t *s,
                      const sched_trial_view_t *const *order, size_t room, size_t total, int cols)
{
    if (room >= total) return;
    size_t more[SCHED_TRIAL_NSTATUS] = {0};
    for (size_t r = room; r < s->ntrials; r++)
        more[order[r]->status]++;
    if (total > s->ntrials) {
        size_t given[SCHED_TRIAL_NSTATUS] = {0};
        for (size_t r = 0; r < s->ntrials; r++)
            given[s->trials[r].status]++;
        for (int k = 0; k < SCHED_TRIAL_NSTATUS; k++)
            more[k] += s->counts[k] > given[k] ? s->counts[k] - given[k] : 0;
    }
    size_t start = b->len;
    bput(b, "... and %zu more trials (", total - room);
    int first = 1;
    for (int k = 0; k < SCHED_TRIAL_NSTATUS; k++)
        if (more[k]) {
            bput(b, "%s%zu %s", first ? "" : ", ", more[k],
                 sched_status_name((sched_trial_status_t)k));
            first = 0;
        }
    bput(b, ")\n");
    clip_line(b, start, cols);
}

/* How many trials fit under the header on o->rows lines (all of them when rows is 0). */
static size_t body_room(const sched_snapshot_t *s, const cli_table_opts_t *o, size_t total)
{
    size_t header_lines = 6 + (s->nrungs ? 1 : 0);
    size_t room = total;
    if (o->rows > 0) {
        size_t avail = (size_t)o->rows > header_lines + 2 ? (size_t)o->rows - header_lines - 2 : 1;
        if (room > avail) room = avail > 1 ? avail - 1 : 1;
    }
    return room > s->ntrials ? s->ntrials : room;
}

/* The trials in the live table's order, then as many rows as fit, then what did not. */
static void body(struct buf *b, const sched_snapshot_t *s, const cli_table_opts_t *o, size_t total)
{
    const sched_trial_view_t **order = malloc((s->ntrials ? s->ntrials : 1) * sizeof *order);
    if (!order) return;
    for (size_t i = 0; i < s->ntrials; i++)
        order[i] = &s->trials[i];
    int mode_max = s->mode_max;
    qsort_r(order, s->ntrials, sizeof *order, cmp_view, &mode_max);
    size_t room = body_room(s, o, total);
    struct grid g;
    if (grid_new(&g, room, o) == 0) {
        grid_names(&g, s, o);
        for (size_t r = 0; r < room; r++)
            grid_trial(&g, r + 1, order[r], o);
        grid_fit(&g, o->cols);
        grid_print(b, &g, o->cols);
        body_more(b, s, order, room, total, o->cols);
        grid_free(&g);
    }
    free(order);
}

char *cli_render_status(const sched_snapshot_t *s, const cli_table_opts_t *o)
{
    size_t total = s->total_trials > s->ntrials ? s->total_trials : s->ntrials;
    struct buf b = {0};
    header_time(&b, s, o->cols);
    header_rungs(&b, s, o);
    header_counts(&b, s, total, o->cols);
    body(&b, s, o, total);
    return b.p;
}
