/* table.c: the live status table (after Ray Tune's CLIReporter): a header with the time,
 * the experiment, each rung's cutoff, resources in use and trial counts, then one row per
 * trial, cut to the terminal; and cli_fmt_num, the number format show.c shares. Renders a
 * snapshot into text; it never reads the store and never touches the terminal itself
 * (run.c decides where and how often). */
#include "cli/cli.h"
#include "cli/front.h"

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
            size_t keep = i;
            while (keep > start && b->p[keep - 1] == ' ') /* no blanks left at the cut */
                keep--;
            memmove(b->p + keep, b->p + end, b->len - end + 1);
            b->len -= end - keep;
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

static void header_time(struct buf *b, const sched_snapshot_t *s, const space_settings_t *set,
                        int cols)
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
    if (cli_front_multi(set)) {
        /* the snapshot's metric is only the first of them */
        for (size_t j = 0; j < set->nobjectives; j++)
            bput(b, "%s %s (%s)", j ? "," : ", objectives", set->metrics[j],
                 space_mode_name(set->modes[j]));
    } else if (s->metric) {
        bput(b, ", metric %s (%s)", s->metric, s->mode_max ? "max" : "min");
    }
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

/* The trials' counts by status: form 0 every count ("Trials: 32 total: 2 RUNNING, 3
 * PENDING, 27 TERMINATED (25 early-stopped), 0 ERROR"), 1 those that are not 0 ("(25
 * stopped)"), 2 those without the early-stopped ones, 3 the same in short words ("Trials
 * 32: 2 RUN, 3 PEND, 27 TERM"). */
static void counts_line(struct buf *b, const sched_snapshot_t *s, size_t total, int form)
{
    static const sched_trial_status_t order[] = {SCHED_TRIAL_RUNNING, SCHED_TRIAL_PENDING,
                                                 SCHED_TRIAL_TERMINATED, SCHED_TRIAL_PAUSED,
                                                 SCHED_TRIAL_ERROR};
    static const char *const short_name[SCHED_TRIAL_NSTATUS] = {[SCHED_TRIAL_PENDING] = "PEND",
                                                                [SCHED_TRIAL_RUNNING] = "RUN",
                                                                [SCHED_TRIAL_PAUSED] = "PAUSE",
                                                                [SCHED_TRIAL_TERMINATED] = "TERM",
                                                                [SCHED_TRIAL_ERROR] = "ERR"};
    bput(b, form < 3 ? "Trials: %zu total:" : "Trials %zu:", total);
    const char *sep = " ";
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        sched_trial_status_t k = order[i];
        int always = form == 0 && k != SCHED_TRIAL_PAUSED;
        if (!s->counts[k] && !always) continue;
        bput(b, "%s%zu %s", sep, s->counts[k], form < 3 ? sched_status_name(k) : short_name[k]);
        if (k == SCHED_TRIAL_TERMINATED && form == 0)
            bput(b, " (%zu early-stopped)", s->early_stopped);
        else if (k == SCHED_TRIAL_TERMINATED && form == 1 && s->early_stopped)
            bput(b, " (%zu stopped)", s->early_stopped);
        sep = ", ";
    }
}

/* Resources in use, results recorded and lines not recorded; then the trials' counts and
 * the best trial, which stays in view at any width from 40 columns: it gets a line of its
 * own when the counts leave no room for it. */
static void header_counts(struct buf *b, const sched_snapshot_t *s, size_t total, int cols,
                          int multi)
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
    char best[256] = "";
    /* several objectives: no one best trial; the front's line says what is best */
    if (s->best_trial >= 0 && !multi) {
        char m[32];
        cli_fmt_num(s->best_metric, m, sizeof m);
        snprintf(best, sizeof best, "best trial_%05lld %s=%s", (long long)s->best_trial,
                 s->metric ? s->metric : "metric", m);
    }
    start = b->len;
    counts_line(b, s, total, 0);
    size_t counts_w = b->len - start;
    if (cols <= 0 || counts_w + 3 + strlen(best) <= (size_t)cols) {
        if (best[0]) bput(b, " | %s", best);
        bput(b, "\n");
        return;
    }
    /* Narrower: the counts that are not 0, in fewer words each time, then the best trial
     * on its own line. */
    for (int form = 1; form <= 3 && b->len - start > (size_t)cols; form++) {
        b->len = start;
        counts_line(b, s, total, form);
    }
    bput(b, "\n");
    clip_line(b, start, cols);
    if (!best[0]) return;
    start = b->len;
    best[0] = 'B';
    bput(b, "%s\n", best);
    clip_line(b, start, cols);
}

/* ---- the body: a grid of cells, fitted to the terminal ------------------------------ */

/* What a column shows. The width policy (ladder, below) is written in these words. */
enum col_kind {
    COL_TRIAL,
    COL_STATUS,
    COL_SLICE,
    COL_EXEC, /* the executor's job/node */
    COL_PARAM,
    COL_ITER,
    COL_TATTR, /* the scheduler's time_attr, when it is not training_iteration */
    COL_TIME,  /* how long the trial has run */
    COL_METRIC,
    COL_BEST,
    COL_EXTRA, /* a key of the reporter's metric_columns */
    COL_VALUE, /* without a metric or metric_columns, a key the trials report */
    COL_FRONT  /* several objectives: "*" on the Pareto front, "infeas." past a constraint */
};

struct col {
    enum col_kind kind;
    size_t w; /* the width it is shown at: a cell wider than that is cut, with ~ */
    int keep; /* shown */
};

/* Columns: trial, status, slice, [job/node], parameters, iter, [time_attr], time, metric,
 * best, then the extra columns; without a metric no metric or best column, and the values
 * the trials report instead. Row 0 is the column names. */
struct grid {
    char **cells; /* (rows + 1) * ncols, row-major */
    double *num;  /* each cell's number, NaN for text: what a compacted column prints */
    struct col *col;
    size_t ncols, rows, at;
    int show_t; /* a time_attr column */
    int metric; /* a metric and best column */
    /* Several objectives: a column per objective and the front marker instead of the
     * metric and best; the snapshot's points (NULL for one objective). */
    const cli_front_t *front;
};

/* Display width of UTF-8 text: one column per code point, as clip_line counts. */
static size_t text_w(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

/* Bytes of s that hold its first `cols` code points. */
static size_t text_bytes(const char *s, size_t cols)
{
    size_t i = 0, w = 0;
    for (; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80 && w++ == cols) break;
    }
    return i;
}

static void grid_free(struct grid *g)
{
    for (size_t i = 0; g->cells && i < (g->rows + 1) * g->ncols; i++)
        free(g->cells[i]);
    free(g->cells);
    free(g->num);
    free(g->col);
}

/* Room for `rows` trials under the column names, with `nextra` extra columns. 0, or -1
 * when out of memory. */
static int grid_new(struct grid *g, size_t rows, size_t nextra, const sched_snapshot_t *s,
                    const cli_table_opts_t *o, const cli_front_t *front)
{
    memset(g, 0, sizeof *g);
    g->rows = rows;
    g->front = front;
    g->ncols = 8 + o->nparams + nextra + (o->show_exec ? 1 : 0) + (front ? front->k + 1 : 0);
    g->cells = calloc((rows + 1) * g->ncols, sizeof *g->cells);
    g->num = malloc((rows + 1) * g->ncols * sizeof *g->num);
    g->col = calloc(g->ncols, sizeof *g->col);
    /* "iter" counts results; a time_attr column only adds news when it measures
     * something else (epochs, seconds). */
    g->show_t = o->time_attr && strcmp(o->time_attr, "training_iteration") != 0;
    g->metric = s->metric != NULL;
    if (g->cells && g->num && g->col) {
        for (size_t i = 0; i < (rows + 1) * g->ncols; i++)
            g->num[i] = NAN;
        return 0;
    }
    grid_free(g);
    return -1;
}

/* The next cell of row r (0: the names, which also say the column's kind); `num` its
 * number, NaN for text. */
static void cell_num(struct grid *g, size_t r, enum col_kind kind, const char *text, double num)
{
    if (r == 0) g->col[g->at].kind = kind;
    g->num[r * g->ncols + g->at] = num;
    g->cells[r * g->ncols + g->at++] = strdup(text);
}

static void cell(struct grid *g, size_t r, enum col_kind kind, const char *text)
{
    cell_num(g, r, kind, text, NAN);
}

/* The extra columns: the reporter's metric_columns less those another column already
 * shows (the metric, the time_attr, training_iteration as "iter", a key named twice);
 * without a metric and metric_columns, the numbers the shown trials last reported (keys in
 * order of first appearance, at most SPACE_MAX_COLUMNS). names[j] points into o or into
 * last[]; from[j] is the metric_columns index, or -1 for a reported key. */
struct extras {
    const char *names[SPACE_MAX_COLUMNS];
    int from[SPACE_MAX_COLUMNS];
    size_t n;
    int reported;
};

static int extra_has(const struct extras *x, const char *k)
{
    for (size_t j = 0; j < x->n; j++)
        if (strcmp(x->names[j], k) == 0) return 1;
    return 0;
}

/* Keys of a result that are not news in the table: the iteration and clocks every result
 * carries (Ray's auto-filled keys), shown as iter and time or not at all. */
static int bookkeeping_key(const char *k, const char *time_attr)
{
    static const char *const keys[] = {
        "training_iteration", "time_this_iter_s",         "time_total_s", "timestamp",
        "time_since_restore", "iterations_since_restore", "pid"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(k, keys[i]) == 0) return 1;
    return time_attr && strcmp(k, time_attr) == 0;
}

static void extras_pick(struct extras *x, const sched_snapshot_t *s, const cli_table_opts_t *o,
                        cJSON *const *last, size_t nlast)
{
    memset(x, 0, sizeof *x);
    for (size_t k = 0; k < o->nmetric_columns && x->n < SPACE_MAX_COLUMNS; k++) {
        const char *c = o->metric_columns[k];
        if ((s->metric && strcmp(c, s->metric) == 0) || strcmp(c, "training_iteration") == 0 ||
            (o->time_attr && strcmp(c, o->time_attr) == 0) || extra_has(x, c))
            continue;
        x->from[x->n] = (int)k;
        x->names[x->n++] = c;
    }
    if (s->metric || o->nmetric_columns) return;
    x->reported = 1;
    for (size_t r = 0; r < nlast; r++) {
        const cJSON *e;
        cJSON_ArrayForEach(e, last[r])
        {
            if (x->n == SPACE_MAX_COLUMNS) return;
            if (!cJSON_IsNumber(e) || !e->string || bookkeeping_key(e->string, o->time_attr) ||
                extra_has(x, e->string))
                continue;
            x->from[x->n] = -1;
            x->names[x->n++] = e->string;
        }
    }
}

static void grid_names(struct grid *g, const struct extras *x, const sched_snapshot_t *s,
                       const cli_table_opts_t *o)
{
    g->at = 0;
    cell(g, 0, COL_TRIAL, "trial");
    cell(g, 0, COL_STATUS, "status");
    cell(g, 0, COL_SLICE, "slice");
    if (o->show_exec) cell(g, 0, COL_EXEC, "job/node");
    for (size_t p = 0; p < o->nparams; p++)
        cell(g, 0, COL_PARAM, o->params[p]);
    cell(g, 0, COL_ITER, "iter");
    if (g->show_t) cell(g, 0, COL_TATTR, o->time_attr);
    cell(g, 0, COL_TIME, "time");
    if (g->front) {
        for (size_t j = 0; j < g->front->k; j++)
            cell(g, 0, COL_METRIC, g->front->set->metrics[j]);
        cell(g, 0, COL_FRONT, "front");
    } else if (g->metric) {
        cell(g, 0, COL_METRIC, s->metric);
        cell(g, 0, COL_BEST, "best");
    }
    for (size_t j = 0; j < x->n; j++)
        cell(g, 0, x->reported ? COL_VALUE : COL_EXTRA, x->names[j]);
    g->ncols = g->at;
}

/* A number cell as cli_fmt_num prints it. */
static void cell_fmt(struct grid *g, size_t r, enum col_kind kind, double v)
{
    char tmp[64];
    cli_fmt_num(v, tmp, sizeof tmp);
    cell_num(g, r, kind, tmp, v);
}

/* Row r: trial v's cells (last: its last result, when the extra columns come from it). */
static void grid_trial(struct grid *g, size_t r, const sched_trial_view_t *v,
                       const struct extras *x, const cJSON *last, const cli_table_opts_t *o)
{
    char tmp[128];
    g->at = 0;
    cell(g, r, COL_TRIAL, v->name);
    snprintf(tmp, sizeof tmp, "%s%s", sched_status_name(v->status),
             v->early_stopped ? " (stopped)" : "");
    cell(g, r, COL_STATUS, tmp);
    cell(g, r, COL_SLICE, v->slice && *v->slice ? v->slice : "-");
    if (o->show_exec) {
        snprintf(tmp, sizeof tmp, "%s%s%s", v->exec_id && *v->exec_id ? v->exec_id : "-",
                 v->node && *v->node ? "@" : "", v->node ? v->node : "");
        cell(g, r, COL_EXEC, tmp);
    }
    for (size_t p = 0; p < o->nparams; p++) {
        const cJSON *c =
            v->config ? cJSON_GetObjectItemCaseSensitive(v->config, o->params[p]) : NULL;
        fmt_cfg_value(c, tmp, 40);
        cell_num(g, r, COL_PARAM, tmp, cJSON_IsNumber(c) ? c->valuedouble : NAN);
    }
    snprintf(tmp, sizeof tmp, "%lld", (long long)v->iterations);
    cell(g, r, COL_ITER, tmp);
    if (g->show_t) cell_fmt(g, r, COL_TATTR, v->last_time);
    long rs = (long)v->run_s;
    if (v->run_s <= 0)
        snprintf(tmp, sizeof tmp, "-");
    else if (rs >= 3600)
        snprintf(tmp, sizeof tmp, "%ld:%02ld:%02ld", rs / 3600, (rs / 60) % 60, rs % 60);
    else
        snprintf(tmp, sizeof tmp, "%ld:%02ld", rs / 60, rs % 60);
    cell(g, r, COL_TIME, tmp);
    if (g->front) {
        const cli_front_t *f = g->front;
        long p = cli_front_find(f, v->trial_no);
        for (size_t j = 0; j < f->k; j++)
            cell_fmt(g, r, COL_METRIC, p >= 0 ? f->values[(size_t)p * f->k + j] : NAN);
        cell(g, r, COL_FRONT,
             p < 0                        ? ""
             : cli_front_on(f, (size_t)p) ? "*"
             : f->violation[p] != 0       ? "infeas."
                                          : "");
    } else if (g->metric) {
        /* NaN after results is a diverged trial, not a missing value: say so. */
        if (v->iterations > 0 && isnan(v->last_metric))
            cell(g, r, COL_METRIC, "NaN");
        else
            cell_fmt(g, r, COL_METRIC, v->last_metric);
        cell_fmt(g, r, COL_BEST, v->best_metric);
    }
    for (size_t j = 0; j < x->n; j++) {
        double d = NAN;
        if (x->from[j] >= 0 && v->columns && (size_t)x->from[j] < v->ncolumns)
            d = v->columns[x->from[j]];
        else if (x->from[j] < 0) {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(last, x->names[j]);
            if (cJSON_IsNumber(e)) d = e->valuedouble;
        }
        cell_fmt(g, r, x->reported ? COL_VALUE : COL_EXTRA, d);
    }
}

/* The width of the kept columns with their " | " separators. */
static size_t grid_width(const struct grid *g)
{
    size_t total = 0, nk = 0;
    for (size_t q = 0; q < g->ncols; q++)
        if (g->col[q].keep) total += g->col[q].w, nk++;
    return total + (nk ? 3 * (nk - 1) : 0);
}

/* The widest cell of column c from row `from` on (1: the values only). */
static size_t col_widest(const struct grid *g, size_t c, size_t from)
{
    size_t w = 0;
    for (size_t r = from; r <= g->rows; r++) {
        const char *x = g->cells[r * g->ncols + c];
        size_t k = x ? text_w(x) : 0;
        if (k > w) w = k;
    }
    return w;
}

/* The width policy: what gives way, in this order, while the table is wider than the
 * terminal. The trial, its status, the metric and best are never dropped (nor is the best
 * trial's line of the header; without a metric, the first value the trials report takes
 * the metric's place); the rest is made narrower, then dropped whole rather than wrapped
 * (kubectl get; Ray's CLIReporter keeps the trial, its status and the metrics and sheds
 * parameter columns). The slice goes first (the job/node with it), then the status is cut
 * to 10, long values and numbers of the parameters and extra columns are shortened
 * (%.3g), then the reporter's extra columns go, the parameters beyond the first three,
 * the run time; the status is cut to 7, the metric's numbers shortened; then the
 * time_attr, the parameters but one, iter, the last parameter, the reported values but
 * one go; the status is cut to 5 and the metric's name to its values. What was dropped is
 * said on one line under the table. */
enum move_op {
    CUT,     /* cells wider than arg cut, with ~ */
    COMPACT, /* numbers in 3 significant digits (%.3g) where that is shorter */
    NAMES,   /* a column name wider than its values cut, to arg at least */
    HIDE     /* dropped from the right until at most arg of the kind are left */
};
static const struct move {
    enum move_op op;
    enum col_kind kind;
    size_t arg;
} ladder[] = {
    {HIDE, COL_SLICE, 0},     {HIDE, COL_EXEC, 0},
    {CUT, COL_STATUS, 10}, /* "TERMINATED (stopped)" -> "TERMINATE~" */
    {CUT, COL_PARAM, 10},  /* "cosine_with_warmup" -> "cosine_wi~" */
    {COMPACT, COL_PARAM, 0},  {COMPACT, COL_EXTRA, 0},
    {NAMES, COL_PARAM, 6}, /* "batch_size" over numbers of 3 digits -> "batch~" */
    {NAMES, COL_EXTRA, 6},    {HIDE, COL_EXTRA, 0},
    {HIDE, COL_PARAM, 3},     {HIDE, COL_TIME, 0},
    {CUT, COL_STATUS, 7}, /* RUNNING, PENDING, PAUSED and ERROR whole; "TERMIN~" */
    {COMPACT, COL_METRIC, 0}, {COMPACT, COL_BEST, 0},
    {COMPACT, COL_VALUE, 0},  {COMPACT, COL_TATTR, 0},
    {NAMES, COL_VALUE, 6},    {HIDE, COL_TATTR, 0},
    {HIDE, COL_PARAM, 1},     {HIDE, COL_ITER, 0},
    {HIDE, COL_PARAM, 0},     {HIDE, COL_VALUE, 1},
    {HIDE, COL_FRONT, 0},     {CUT, COL_STATUS, 5},
    {NAMES, COL_METRIC, 6},
};

/* Applies move m to the columns of its kind, one column at a time for HIDE, until the
 * table fits in cols. */
static void grid_move(struct grid *g, const struct move *m, size_t cols)
{
    char tmp[64];
    if (m->op == HIDE) {
        size_t kept = 0;
        for (size_t c = 0; c < g->ncols; c++)
            kept += g->col[c].kind == m->kind && g->col[c].keep;
        for (size_t c = g->ncols; c-- > 0 && kept > m->arg && grid_width(g) > cols;)
            if (g->col[c].kind == m->kind && g->col[c].keep) g->col[c].keep = 0, kept--;
        return;
    }
    for (size_t c = 0; c < g->ncols; c++) {
        struct col *k = &g->col[c];
        if (k->kind != m->kind || !k->keep) continue;
        if (m->op == CUT && k->w > m->arg) k->w = m->arg;
        if (m->op == COMPACT) {
            for (size_t r = 1; r <= g->rows; r++) {
                double d = g->num[r * g->ncols + c];
                char **x = &g->cells[r * g->ncols + c];
                if (isnan(d) || !*x) continue;
                snprintf(tmp, sizeof tmp, "%.3g", d);
                if (strlen(tmp) >= strlen(*x)) continue;
                free(*x);
                *x = strdup(tmp);
            }
            size_t w = col_widest(g, c, 0);
            if (w < k->w) k->w = w;
        }
        if (m->op == NAMES) {
            size_t w = col_widest(g, c, 1);
            if (w < m->arg) w = m->arg;
            if (w < k->w) k->w = w;
        }
    }
}

/* Each column as wide as its widest cell; then the ladder, step by step, until the table
 * fits in cols (0: no limit). */
static void grid_fit(struct grid *g, int cols)
{
    for (size_t c = 0; c < g->ncols; c++) {
        g->col[c].w = col_widest(g, c, 0);
        g->col[c].keep = 1;
    }
    if (cols <= 0) return;
    for (size_t i = 0; i < sizeof ladder / sizeof ladder[0] && grid_width(g) > (size_t)cols; i++)
        grid_move(g, &ladder[i], (size_t)cols);
}

static void grid_print(struct buf *b, const struct grid *g, size_t rows, int cols)
{
    for (size_t r = 0; r <= rows; r++) {
        size_t start = b->len;
        int first = 1;
        for (size_t c = 0; c < g->ncols; c++) {
            if (!g->col[c].keep) continue;
            const char *x = g->cells[r * g->ncols + c] ? g->cells[r * g->ncols + c] : "";
            size_t w = g->col[c].w, tw = text_w(x);
            if (tw > w) /* narrowed: cut, with ~ saying so */
                bput(b, "%s%.*s~", first ? "" : " | ", (int)text_bytes(x, w - 1), x);
            else
                bput(b, "%s%s%*s", first ? "" : " | ", x, (int)(w - tw), "");
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
            if (!g->col[c].keep) continue;
            bput(b, "%s", first ? "" : "-+-");
            first = 0;
            for (size_t k = 0; k < g->col[c].w; k++)
                bput(b, "-");
        }
        bput(b, "\n");
        clip_line(b, start, cols);
    }
}

/* One line saying what the width policy dropped, and where to see it:
 * "+3 parameters, slice hidden: widen the terminal or see tune trials". Nothing when
 * nothing was dropped. */
static void grid_hidden(struct buf *b, const struct grid *g, int cols)
{
    size_t nparam = 0, nextra = 0, nvalue = 0;
    char other[256] = "";
    size_t ol = 0;
    for (size_t c = 0; c < g->ncols; c++) {
        if (g->col[c].keep) continue;
        if (g->col[c].kind == COL_PARAM)
            nparam++;
        else if (g->col[c].kind == COL_EXTRA)
            nextra++;
        else if (g->col[c].kind == COL_VALUE)
            nvalue++;
        else if (ol < sizeof other)
            ol += (size_t)snprintf(other + ol, sizeof other - ol, ", %s", g->cells[c]);
    }
    if (!nparam && !nextra && !nvalue && !ol) return;
    /* Four forms, the first that fits: every other column named, with both remedies;
     * with one; the other columns counted; everything counted. */
    size_t nother = 0;
    for (size_t c = 0; c < g->ncols; c++)
        nother += !g->col[c].keep && g->col[c].kind != COL_PARAM && g->col[c].kind != COL_EXTRA &&
                  g->col[c].kind != COL_VALUE;
    size_t start = b->len;
    for (int form = 0; form < 4; form++) {
        b->len = start;
        const char *sep = "+";
        if (form == 3) {
            size_t n = nparam + nextra + nvalue + nother;
            bput(b, "+%zu column%s", n, n == 1 ? "" : "s");
        } else {
            if (nparam) {
                bput(b, "%s%zu parameter%s", sep, nparam, nparam == 1 ? "" : "s");
                sep = ", ";
            }
            if (nextra) {
                bput(b, "%s%zu metric column%s", sep, nextra, nextra == 1 ? "" : "s");
                sep = ", ";
            }
            if (nvalue) {
                bput(b, "%s%zu reported value%s", sep, nvalue, nvalue == 1 ? "" : "s");
                sep = ", ";
            }
            if (ol && form < 2)
                bput(b, "%s%s", sep, other + 2);
            else if (ol)
                bput(b, "%s%zu column%s", sep, nother, nother == 1 ? "" : "s");
        }
        bput(b, form == 0 ? " hidden: widen the terminal or see tune trials\n"
                          : " hidden (tune trials)\n");
        if (b->len - start - 1 <= (size_t)cols) break;
    }
    clip_line(b, start, cols);
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

/* How many trials fit on o->rows lines (all of them when rows is 0) under a header of
 * header_lines lines and the column names, leaving a line for "... and N more" and one
 * for what the width policy hid. */
static size_t body_room(const sched_snapshot_t *s, const cli_table_opts_t *o, size_t total,
                        size_t header_lines)
{
    header_lines += 2; /* the column names and their rule */
    size_t room = total;
    if (o->rows > 0) {
        size_t avail = (size_t)o->rows > header_lines + 2 ? (size_t)o->rows - header_lines - 2 : 1;
        if (room > avail) room = avail > 1 ? avail - 1 : 1;
    }
    return room > s->ntrials ? s->ntrials : room;
}

/* The trials in the live table's order, then as many rows as fit, then what did not. */
static void body(struct buf *b, const sched_snapshot_t *s, const cli_table_opts_t *o, size_t total,
                 size_t header_lines, const cli_front_t *front)
{
    const sched_trial_view_t **order = malloc((s->ntrials ? s->ntrials : 1) * sizeof *order);
    size_t room = body_room(s, o, total, header_lines);
    cJSON **last = calloc(room + 1, sizeof *last);
    if (!order || !last) goto out;
    for (size_t i = 0; i < s->ntrials; i++)
        order[i] = &s->trials[i];
    int mode_max = s->mode_max;
    qsort_r(order, s->ntrials, sizeof *order, cmp_view, &mode_max);
    /* Without a metric, the shown trials' last results are what there is to show. */
    if (!s->metric && !o->nmetric_columns && o->last_results)
        for (size_t r = 0; r < room; r++) {
            const char *j = o->last_results[order[r] - s->trials];
            last[r] = j ? cJSON_Parse(j) : NULL;
        }
    struct extras x;
    extras_pick(&x, s, o, last, room);
    struct grid g;
    if (grid_new(&g, room, x.n, s, o, front) == 0) {
        grid_names(&g, &x, s, o);
        for (size_t r = 0; r < room; r++)
            grid_trial(&g, r + 1, order[r], &x, last[r], o);
        grid_fit(&g, o->cols);
        grid_print(b, &g, room, o->cols);
        body_more(b, s, order, room, total, o->cols);
        grid_hidden(b, &g, o->cols);
        grid_free(&g);
    }
out:
    for (size_t r = 0; last && r < room; r++)
        cJSON_Delete(last[r]);
    free(last);
    free(order);
}

/* Several objectives: the snapshot's trials ranked by their last results (front.h), once
 * per drawing. 0 with f filled, -1 when there is nothing to rank (f empty). */
static int snapshot_front(const sched_snapshot_t *s, const cli_table_opts_t *o, cli_front_t *f)
{
    memset(f, 0, sizeof *f);
    if (!cli_front_multi(o->settings) || !o->last_results || !s->ntrials) return -1;
    int64_t *ids = malloc(s->ntrials * sizeof *ids);
    cJSON **res = calloc(s->ntrials, sizeof *res);
    int rc = -1;
    if (ids && res) {
        for (size_t i = 0; i < s->ntrials; i++) {
            ids[i] = s->trials[i].trial_no;
            res[i] = o->last_results[i] ? cJSON_Parse(o->last_results[i]) : NULL;
        }
        char err[256];
        rc = cli_front_rank(o->settings, s->ntrials, ids, (const cJSON *const *)res, f, err,
                            sizeof err);
        for (size_t i = 0; i < s->ntrials; i++)
            cJSON_Delete(res[i]);
    }
    free(ids);
    free(res);
    return rc;
}

/* "Pareto front: 3 trials (of 12 with a result, 10 feasible)". */
static void header_front(struct buf *b, const cli_front_t *f, int cols)
{
    size_t start = b->len;
    bput(b, "Pareto front: %zu trial%s (of %zu with a result, %zu feasible)\n", f->nfront,
         f->nfront == 1 ? "" : "s", f->n, f->nfeasible);
    clip_line(b, start, cols);
}

char *cli_render_status(const sched_snapshot_t *s, const cli_table_opts_t *o)
{
    size_t total = s->total_trials > s->ntrials ? s->total_trials : s->ntrials;
    struct buf b = {0};
    cli_front_t f;
    int front = snapshot_front(s, o, &f) == 0;
    header_time(&b, s, o->settings, o->cols);
    header_rungs(&b, s, o);
    header_counts(&b, s, total, o->cols, front);
    if (front) header_front(&b, &f, o->cols);
    size_t lines = 0;
    for (size_t i = 0; i < b.len; i++)
        lines += b.p[i] == '\n';
    body(&b, s, o, total, lines, front ? &f : NULL);
    cli_front_free(&f);
    return b.p;
}
