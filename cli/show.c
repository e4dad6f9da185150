/* `tune show` (one trial: configuration, status and why, decisions, metrics, a small
 * learning curve and the tail of its logs) and `tune plot` (every trial's learning curve
 * in one terminal chart), both drawn on the braille canvas of canvas.c.
 * Not for: the drawing itself (canvas.c), nor the HTML report (report.c). */
#include "cli/cli.h"
#include "cli/canvas.h"
#include "cli/curves.h"
#include "cli/front.h"
#include "search/render.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/* ---- options shared by show and plot -------------------------------------------- */
struct view_opts {
    const char *db;
    const char *pos[2]; /* positional arguments */
    int npos;
    const char *experiment; /* --experiment */
    const char *metric;     /* --metric */
    unsigned mode;          /* --mode: CLI_EXP_MODE_MIN, CLI_EXP_MODE_MAX or 0 */
    int width, height;      /* --width, --height; 0 = default */
    int color;              /* -1 auto */
    int logx, logy;         /* -1 auto, 0 linear, 1 log */
    int lines;              /* show: log lines; -1 default */
    cli_ylim_t ylim;        /* --ylim */
};

static int scale_arg(const char *cmd, const char *opt, const char *v, int *out)
{
    if (strcmp(v, "auto") == 0)
        *out = -1;
    else if (strcmp(v, "log") == 0)
        *out = 1;
    else if (strcmp(v, "linear") == 0)
        *out = 0;
    else {
        cli_error("%s: %s wants auto, log or linear, got \"%s\"", cmd, opt, v);
        return -1;
    }
    return 0;
}

static int int_arg(const char *cmd, const char *opt, const char *v, int lo, int hi, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < lo || n > hi) {
        cli_error("%s: %s wants a whole number from %d to %d, got \"%s\"", cmd, opt, lo, hi, v);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* Parses argv; returns -1 after printing an error (exit 2). */
static int parse_view(int argc, char **argv, int maxpos, const char *usage, struct view_opts *o)
{
    memset(o, 0, sizeof *o);
    o->db = cli_db_path(argc, argv);
    o->color = o->logx = o->logy = o->lines = -1;
    const char *cmd = argv[0];
    int opts = 1; /* after "--" every word is positional (a name that begins with '-') */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!opts || strcmp(a, "--") == 0) {
            if (opts) {
                opts = 0;
            } else if (o->npos < maxpos) {
                o->pos[o->npos++] = a;
            } else {
                cli_error("%s: unexpected argument \"%s\"\n%s", cmd, a, usage);
                return -1;
            }
            continue;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = strcmp(a, "--db") == 0 || strcmp(a, "--experiment") == 0 ||
                    strcmp(a, "--metric") == 0 || strcmp(a, "--width") == 0 ||
                    strcmp(a, "--height") == 0 || strcmp(a, "--x") == 0 || strcmp(a, "--y") == 0 ||
                    strcmp(a, "--color") == 0 || strcmp(a, "--lines") == 0 ||
                    strcmp(a, "--mode") == 0 || strcmp(a, "--ylim") == 0;
        if (takes && !v) {
            cli_error("%s: %s needs a value\n%s", cmd, a, usage);
            return -1;
        }
        if (strcmp(a, "--db") == 0) {
            i++;
        } else if (strcmp(a, "--experiment") == 0) {
            o->experiment = argv[++i];
        } else if (strcmp(a, "--metric") == 0) {
            o->metric = argv[++i];
        } else if (strcmp(a, "--mode") == 0) {
            if (cli_mode_arg(cmd, argv[++i], &o->mode)) return -1;
        } else if (strcmp(a, "--width") == 0) {
            if (int_arg(cmd, a, argv[++i], 20, 1000, &o->width)) return -1;
        } else if (strcmp(a, "--height") == 0) {
            if (int_arg(cmd, a, argv[++i], 3, 200, &o->height)) return -1;
        } else if (strcmp(a, "--lines") == 0) {
            if (int_arg(cmd, a, argv[++i], 0, 100000, &o->lines)) return -1;
        } else if (strcmp(a, "--ylim") == 0) {
            if (cli_ylim_arg(cmd, argv[++i], &o->ylim)) return -1;
        } else if (strcmp(a, "--x") == 0) {
            if (scale_arg(cmd, a, argv[++i], &o->logx)) return -1;
        } else if (strcmp(a, "--y") == 0) {
            if (scale_arg(cmd, a, argv[++i], &o->logy)) return -1;
        } else if (strcmp(a, "--color") == 0) {
            const char *c = argv[++i];
            if (strcmp(c, "auto") == 0) {
                o->color = -1;
            } else if (strcmp(c, "always") == 0) {
                o->color = 1;
            } else if (strcmp(c, "never") == 0) {
                o->color = 0;
            } else {
                cli_error("%s: --color wants auto, always or never, got \"%s\"", cmd, c);
                return -1;
            }
        } else if (a[0] == '-' && a[1]) {
            cli_error("%s: unknown option %s (a name that begins with '-' goes after --: tune %s "
                      "-- %s)\n%s",
                      cmd, a, cmd, a, usage);
            return -1;
        } else if (o->npos < maxpos) {
            o->pos[o->npos++] = a;
        } else {
            cli_error("%s: unexpected argument \"%s\"\n%s", cmd, a, usage);
            return -1;
        }
    }
    if (o->color < 0) {
        /* Colour only for a terminal that wants it (https://no-color.org). */
        const char *term = getenv("TERM");
        o->color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && !(term && !strcmp(term, "dumb"));
    }
    return 0;
}

/* The terminal's width: the tty's size, else $COLUMNS, else 80. */
static int term_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *c = getenv("COLUMNS");
    if (c && atoi(c) > 0) return atoi(c);
    return 80;
}

/* Opens the database read-only and loads the experiment (named or implied); prints the
 * error and returns the exit status when it cannot. */
static int open_exp(const struct view_opts *o, const char *name, const char *trial, unsigned flags,
                    store_t **st, cli_exp_t **e)
{
    char err[1024];
    *e = NULL;
    if (!(*st = cli_open_ro(o->db))) return CLI_EXIT_FAIL;
    char *picked = NULL;
    int rc = cli_exp_pick(*st, o->db, name, &picked, err, sizeof err);
    if (rc == 0)
        rc = cli_exp_load(*st, picked, o->metric, trial, flags | o->mode, e, err, sizeof err);
    if (rc == 0) cli_mode_note(*e);
    free(picked);
    if (rc != 0) {
        cli_error("%s", err);
        store_close(*st);
        *st = NULL;
        return rc == CLI_EXP_AMBIGUOUS ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

/* ---- small text helpers --------------------------------------------------------- */
static void fmt_time(double t, char *out, size_t n)
{
    if (isnan(t)) {
        snprintf(out, n, "-");
        return;
    }
    time_t s = (time_t)t;
    struct tm tm;
    localtime_r(&s, &tm);
    strftime(out, n, "%Y-%m-%d %H:%M:%S", &tm);
}

static void fmt_duration(double s, char *out, size_t n)
{
    if (isnan(s) || s < 0)
        snprintf(out, n, "-");
    else if (s < 60)
        snprintf(out, n, "%.1f s", s);
    else if (s < 3600)
        snprintf(out, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(out, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

/* ---- the chart ----------------------------------------------------------------- */
/* Cell classes in drawing priority: a cell shows the colour of the highest class that
 * put a dot in it, so the few finished trials stand out of many stopped ones. */
enum { CL_NONE, CL_STOPPED, CL_OTHER, CL_ERROR, CL_FINISHED, CL_BEST, CL_N };
static const char *const cls_color[CL_N] = {"",         "\x1b[90m", "\x1b[36m",
                                            "\x1b[31m", "\x1b[32m", "\x1b[1;33m"};

static int trial_class(const cli_trial_t *t)
{
    if (t->early_stopped) return CL_STOPPED;
    if (strcmp(t->status, "ERROR") == 0) return CL_ERROR;
    if (strcmp(t->status, "TERMINATED") == 0) return CL_FINISHED;
    return CL_OTHER; /* running, paused, pending */
}

struct chart {
    int cols, rows, color, logx, logy;
    const char *title;
    const cli_ylim_t *ylim; /* --ylim; NULL: auto */
};

/* The dot row of value v on the y axis, flipped (0 at the top); a value outside the range
 * yr drew (or +-inf) goes on the edge it left by, and *out says which (1 above, -1
 * below). -1 when v has no place (NaN). */
static int chart_y(const cli_axis_t *ay, const cli_yrange_t *yr, double v, int npix, int *py,
                   int *out)
{
    if (isnan(v)) return -1;
    *out = v > yr->hi || v == INFINITY ? 1 : v < yr->lo || (yr->log && v <= 0) ? -1 : 0;
    if (*out) {
        *py = *out > 0 ? 0 : npix - 1;
        return 0;
    }
    return cli_axis_map(ay, v, npix, 1, py);
}

static void print_title(FILE *f, const struct chart *ch)
{
    if (ch->title) cli_print_cut(f, ch->title, ch->cols);
}

/* Prints "  LEAD text" with the text's words wrapped to cols columns, later lines indented
 * under the text. */
static void print_wrapped(FILE *f, const char *lead, const char *text, int cols)
{
    int indent = 2 + cli_text_width(lead), used = indent;
    fprintf(f, "  %s", lead);
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        const char *q = p;
        while (*q && *q != ' ')
            q++;
        if (q == p) break;
        char word[512];
        snprintf(word, sizeof word, "%.*s", (int)(q - p), p);
        int w = cli_text_width(word);
        if (used > indent && used + 1 + w > cols) {
            fprintf(f, "\n%*s", indent, "");
            used = indent;
        } else if (used > indent) {
            fputc(' ', f);
            used++;
        }
        fputs(word, f);
        used += w;
        p = q;
    }
    fputc('\n', f);
}

/* Draws the curves of trials sel[0..nsel) of e, `best` (an index into e->trials, or -1)
 * on top, on a canvas (canvas.h): the metric against the time_attr, stopped trials dotted
 * and crossed where they stopped, the rung milestones as ticks. Every line is at most
 * ch->cols columns wide. */
static void draw_chart(FILE *f, const cli_exp_t *e, const size_t *sel, size_t nsel, long best,
                       const struct chart *ch)
{
    double xmn = INFINITY, xmx = -INFINITY, xpos = INFINITY;
    for (size_t s = 0; s < nsel; s++) {
        const cli_trial_t *t = &e->trials[sel[s]];
        for (size_t k = 0; k < t->n; k++) {
            double x = t->x[k];
            if (!isfinite(x) || isnan(t->y[k])) continue;
            xmn = fmin(xmn, x), xmx = fmax(xmx, x);
            if (x > 0) xpos = fmin(xpos, x);
        }
    }
    /* The y range from the bulk of the curves (curves.h): a diverged trial is a marker at
     * the edge, not the scale of the chart. */
    cli_yrange_t yr;
    cli_yrange_fit(e, sel, nsel, ch->ylim, ch->logy, &yr);
    if (!isfinite(xmn) || (isnan(yr.lo) && !yr.above.n && !yr.below.n)) {
        print_title(f, ch);
        fprintf(f, "  (no results with a value for %s yet)\n",
                e->metric ? e->metric : "the metric");
        return;
    }
    /* ASHA's milestones grow geometrically: a log x axis spaces its rungs evenly. */
    cli_axis_t ax, ay;
    cli_axis_fit(&ax, xmn, xmx, xpos, ch->logx < 0 ? (e->nmilestones > 1 ? -1 : 0) : ch->logx, 8);
    if (isnan(yr.lo)) /* every point is outside: an axis around the range asked for */
        yr.lo = yr.hi = ch->ylim && ch->ylim->kind == CLI_YLIM_SET ? ch->ylim->lo : 0;
    cli_axis_fit(&ay, yr.lo, yr.hi, yr.lo, yr.log, 10);
    /* The y labels' width sets the plot's width. */
    cli_ylabels_t yl;
    cli_ylabels_make(&yl, &ay, ch->rows);
    int W = ch->cols - yl.width - 2;
    if (W < 8) W = 8;
    cli_canvas_t *c = cli_canvas_new(W, ch->rows);
    if (!c) return;

    /* Stopped trials first, so the finished and the best are drawn over them. */
    size_t counts[CL_N] = {0};
    for (int pass = CL_STOPPED; pass <= CL_BEST; pass++) {
        for (size_t s = 0; s < nsel; s++) {
            const cli_trial_t *t = &e->trials[sel[s]];
            int cls = (long)sel[s] == best ? CL_BEST : trial_class(t);
            if (cls != pass) continue;
            counts[cls]++;
            int have = 0, px0 = 0, py0 = 0;
            unsigned phase = 0;
            for (size_t k = 0; k < t->n; k++) {
                int px, py, out = 0;
                if (cli_axis_map(&ax, t->x[k], 2 * W, 0, &px) ||
                    chart_y(&ay, &yr, t->y[k], 4 * ch->rows, &py, &out))
                    continue;
                if (have)
                    cli_canvas_line(c, px0, py0, px, py, cls, cls == CL_STOPPED, &phase);
                else
                    cli_canvas_dot(c, px, py, cls);
                /* outside the range: ▲ or ▼ on the edge where the curve leaves it */
                if (out) cli_canvas_mark(c, px, py, out > 0 ? 0x25B2 : 0x25BC, cls);
                px0 = px, py0 = py, have = 1;
            }
            if (have && cls == CL_STOPPED) cli_canvas_mark(c, px0, py0, 0x00D7, cls); /* × */
            if (have && cls == CL_BEST) cli_canvas_mark(c, px0, py0, 0x25CF, cls);    /* ● */
        }
    }
    print_title(f, ch);
    const char *const *colors = ch->color ? cls_color : NULL;
    cli_canvas_print(f, c, &yl, colors);
    /* The x axis: ┬ at each rung milestone. */
    cli_canvas_xaxis(f, c, &yl, &ax, e->milestones, e->nmilestones, xmn, xmx);
    cli_canvas_free(c);

    /* The legend, wrapped to the width. */
    cli_legend_t L = {.f = f, .cols = ch->cols, .colors = colors};
    char text[256];
    snprintf(text, sizeof text, "x: %s%s, y: %s%s", e->time_attr, ax.log ? " (log)" : "",
             e->metric ? e->metric : "?", ay.log ? " (log)" : "");
    cli_legend_item(&L, 0, "", text);
    int bcls = best >= 0 ? trial_class(&e->trials[best]) : CL_NONE;
    size_t nfin = counts[CL_FINISHED] + (bcls == CL_FINISHED);
    size_t nstop = counts[CL_STOPPED] + (bcls == CL_STOPPED);
    size_t nerr = counts[CL_ERROR] + (bcls == CL_ERROR);
    size_t noth = counts[CL_OTHER] + (bcls == CL_OTHER);
    if (nfin || nstop == 0) {
        snprintf(text, sizeof text, "finished %zu", nfin);
        cli_legend_item(&L, CL_FINISHED, "⠒⠒", text);
    }
    if (nstop) {
        snprintf(text, sizeof text, "stopped early %zu (× where)", nstop);
        cli_legend_item(&L, CL_STOPPED, "⠂⠂", text);
    }
    if (nerr) {
        snprintf(text, sizeof text, "error %zu", nerr);
        cli_legend_item(&L, CL_ERROR, "⠒⠒", text);
    }
    if (noth) {
        snprintf(text, sizeof text, "running or paused %zu", noth);
        cli_legend_item(&L, CL_OTHER, "⠒⠒", text);
    }
    if (best >= 0 && nsel > 1) {
        char v[32];
        cli_fmt_num(e->trials[best].last, v, sizeof v);
        snprintf(text, sizeof text, "best %s (%s %s)", e->trials[best].name,
                 e->metric ? e->metric : "", v);
        cli_legend_item(&L, CL_BEST, "●", text);
    }
    if (e->nmilestones) cli_legend_item(&L, 0, "┬", "rung milestones");
    cli_legend_end(&L);
    /* What the range left out, trial by trial, so that a diverged run is named, not lost. */
    for (int side = 1; side >= 0; side--) {
        char note[1200];
        cli_yrange_note(e, &yr, side, note, sizeof note);
        if (note[0]) print_wrapped(f, side ? "▲ " : "▼ ", note, ch->cols);
    }
    if ((yr.above.n || yr.below.n) && !(ch->ylim && ch->ylim->kind != CLI_YLIM_AUTO))
        print_wrapped(f, "",
                      "(the y range is the curves' bulk: --ylim full spans every finite "
                      "value, --ylim LO:HI sets it)",
                      ch->cols);
}

/* ---- tune plot ------------------------------------------------------------------ */
int cli_cmd_plot(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune plot [NAME] [--metric M] [--mode min|max] [--db PATH] [--width N]\n"
        "                 [--height N]\n"
        "                 [--x auto|log|linear] [--y auto|log|linear] [--color auto|always|never]\n"
        "                 [--ylim auto|full|LO:HI]\n"
        "  every trial's learning curve (the metric against the scheduler's time_attr) in one\n"
        "  terminal chart; NAME may be left out when the database holds one experiment.\n"
        "  --ylim: the y range; auto (default) fits the bulk of the curves and draws values\n"
        "  far outside it (a diverged trial's 1e6 or inf) as ▲/▼ on the edge, naming each\n"
        "  such trial below the chart; full spans every finite value; LO:HI sets it\n"
        "  --mode: which way the metric is better (default: the experiment's mode for its\n"
        "  metric; for another metric a guess from its name, which is said)\n";
    if (cli_help(argc, argv, usage)) return CLI_EXIT_OK;
    struct view_opts o;
    if (parse_view(argc, argv, 1, usage, &o)) return CLI_EXIT_USAGE;
    const char *name = o.npos ? o.pos[0] : o.experiment;
    if (o.npos && o.experiment && strcmp(o.pos[0], o.experiment) != 0) {
        cli_error("plot: two experiments named (\"%s\" and --experiment \"%s\")", o.pos[0],
                  o.experiment);
        return CLI_EXIT_USAGE;
    }
    store_t *st;
    cli_exp_t *e;
    int rc = open_exp(&o, name, NULL, 0, &st, &e);
    if (rc) return rc;
    size_t *sel = malloc((e->ntrials + 1) * sizeof *sel);
    if (!sel) {
        cli_error("out of memory");
        cli_exp_free(e);
        store_close(st);
        return CLI_EXIT_FAIL;
    }
    for (size_t i = 0; i < e->ntrials; i++)
        sel[i] = i;
    char title[512];
    snprintf(title, sizeof title, "%s: %s (%s) of %zu trials", e->name, e->metric ? e->metric : "?",
             e->mode_max ? "max" : "min", e->ntrials);
    struct chart ch = {.cols = o.width ? o.width : term_width(),
                       .rows = o.height ? o.height : 16,
                       .color = o.color,
                       .logx = o.logx,
                       .logy = o.logy,
                       .title = title,
                       .ylim = &o.ylim};
    if (ch.cols < 20) ch.cols = 20;
    draw_chart(stdout, e, sel, e->ntrials, cli_exp_best_trial(e), &ch);
    free(sel);
    cli_exp_free(e);
    store_close(st);
    return CLI_EXIT_OK;
}

/* ---- tune show ------------------------------------------------------------------ */
/* Prints the last `n` lines of a file (reading at most its last 256 KiB). */
static void tail_file(const char *dir, const char *file, int n)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("\n%s: (none)\n", file);
        return;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > 262144 ? size - 262144 : 0;
    fseek(f, from, SEEK_SET);
    char *buf = malloc((size_t)(size - from) + 1);
    size_t len = buf ? fread(buf, 1, (size_t)(size - from), f) : 0;
    fclose(f);
    if (!buf) return;
    buf[len] = 0;
    while (len && buf[len - 1] == '\n')
        buf[--len] = 0;
    const char *start = buf;
    int seen = 0;
    for (size_t i = len; i-- > 0;)
        if (buf[i] == '\n' && ++seen == n) {
            start = buf + i + 1;
            break;
        }
    if (len == 0) {
        printf("\n%s: (empty)\n", file);
    } else {
        printf("\n%s (last %d lines):\n", file, n);
        for (const char *p = start; *p;) {
            const char *nl = strchr(p, '\n');
            int k = nl ? (int)(nl - p) : (int)strlen(p);
            /* The trial's bytes, never its terminal commands (escape sequences). */
            char *line = cli_escape_mem(p, (size_t)k);
            printf("  %s\n", line ? line : "");
            free(line);
            p += k + (nl ? 1 : 0);
        }
    }
    free(buf);
}

/* Copies the first column of the first row (SQL NULL: "") into ud, a char[512]. */
static int first_text(void *ud, int ncol, const char *const *names, const char *const *values,
                      const int *types)
{
    (void)names;
    (void)types;
    if (!*(char *)ud) snprintf(ud, 512, "%s", ncol > 0 && values[0] ? values[0] : "");
    return 0;
}

/* Why the configuration was chosen (trials.suggested_by, docs/search.md): the searcher's
 * reason, "points_to_evaluate[2]", or random search's draw from the seed. A version-1
 * database (no such column, opened read-only) shows nothing. */
static void print_chosen_by(store_t *st, const cli_trial_t *t)
{
    char tid[32], why[512] = "", err[512];
    snprintf(tid, sizeof tid, "%lld", (long long)t->id);
    const char *qb[] = {tid};
    if (store_query(st, "SELECT suggested_by FROM trials WHERE id = ?1", qb, 1, first_text, why,
                    err, sizeof err) != 0)
        return;
    char *w = cli_escape_text(why[0] ? why : "random (drawn from the seed up front)");
    printf("chosen by    %s\n", w ? w : "");
    free(w);
}

/* A configuration's parameters as " k=v" pairs, numbers with the digits the trial's argv
 * received, escaped for the terminal. */
static void print_config_pairs(const char *json)
{
    cJSON *cfg = cJSON_Parse(json ? json : "{}");
    cJSON *it;
    cJSON_ArrayForEach(it, cfg)
    {
        char *s = cJSON_IsString(it) ? strdup(it->valuestring) : space_json_print(it);
        char *k = cli_escape_text(it->string), *v = cli_escape_text(s);
        printf(" %s=%s", k ? k : "?", v ? v : "?");
        free(k), free(v), free(s);
    }
    cJSON_Delete(cfg);
}

struct schedule_ctx {
    const char *time_attr;
    int rows;
};

/* One exploit of the trial (a lineage row): from where on it ran which configuration. */
static int print_schedule_row(void *ud, int ncol, const char *const *names,
                              const char *const *values, const int *types)
{
    (void)names, (void)types;
    struct schedule_ctx *c = ud;
    if (ncol < 8) return 0;
    if (c->rows++ == 0) {
        printf(
            "\nschedule (PBT: the hyperparameters from each point on, from the lineage table)\n");
        printf("  %-10s %-10s", c->time_attr, "0");
        print_config_pairs(values[7]);
        printf("   (sampled)\n");
    }
    char *donor = cli_escape_text(values[3] ? values[3] : "?");
    char *what = cli_escape_text(values[5] ? values[5] : "{}");
    printf("  %-10s %-10s", c->time_attr, values[2] ? values[2] : "?");
    print_config_pairs(values[6]);
    printf("   (attempt %s: exploited %s, its checkpoint at iteration %s; explore %s)\n",
           values[0] ? values[0] : "?", donor ? donor : "?", values[4] ? values[4] : "?",
           what ? what : "");
    free(donor), free(what);
    return 0;
}

/* PBT: the trial's hyperparameter schedule, from lineage (docs/pbt.md). Nothing for a
 * trial never exploited, or a database older than the lineage table (schema version 3). */
static void print_schedule(store_t *st, const cli_exp_t *e, const cli_trial_t *t)
{
    char tid[32], err[512];
    snprintf(tid, sizeof tid, "%lld", (long long)t->id);
    const char *qb[] = {tid};
    struct schedule_ctx c = {e->time_attr, 0};
    store_query(
        st,
        "SELECT l.attempt, l.iteration, CASE WHEN l.time_value = CAST(l.time_value AS INTEGER)"
        " THEN CAST(l.time_value AS INTEGER) ELSE l.time_value END, d.name, l.donor_iteration,"
        " l.explore, l.new_config, l.old_config FROM lineage l"
        " JOIN trials d ON d.id = l.donor_trial_id WHERE l.trial_id = ?1 ORDER BY l.id",
        qb, 1, print_schedule_row, &c, err, sizeof err);
}

static int print_last_result(void *ud, int ncol, const char *const *names,
                             const char *const *values, const int *types)
{
    (void)ud, (void)ncol, (void)names, (void)types;
    char *v = cli_escape_text(values[0] ? values[0] : "-");
    printf("last result  %s\n", v ? v : "-");
    free(v);
    return 0;
}

/* Why the trial is where it is, in one line. multi: the experiment has several
 * objectives, where a stop is no value below a cutoff: the scheduler's words say why. */
static void print_why(const cli_exp_t *e, const cli_trial_t *t, int multi)
{
    const cli_decision_t *stop = NULL;
    for (size_t k = 0; k < t->ndec; k++)
        if (strcmp(t->dec[k].action, "stop") == 0) stop = &t->dec[k];
    char v[32], c[32], m[32];
    if (t->early_stopped) {
        printf("status       TERMINATED: stopped early by %s",
               e->scheduler ? e->scheduler : "the scheduler");
        if (stop) {
            cli_fmt_num(stop->value, v, sizeof v);
            cli_fmt_num(stop->cutoff, c, sizeof c);
            cli_fmt_num(stop->milestone, m, sizeof m);
            if (multi && stop->reason && stop->reason[0]) {
                /* the scheduler's words name the rung and the rank themselves */
                char *w = cli_escape_text(stop->reason);
                printf(": %s\n", w ? w : "");
                free(w);
                return;
            }
            if (stop->rung >= 0) printf(" at rung %d (%s %s)", stop->rung, e->time_attr, m);
            if (multi) {
                printf(": not among the top of its rung by the objectives\n");
                return;
            }
            printf(": %s %s %s the cutoff %s", e->exp_metric ? e->exp_metric : "value", v,
                   e->exp_mode_max ? "below" : "above", c);
            /* The rung says it all for ASHA; other rules explain themselves. */
            if (stop->rung < 0 && stop->reason && stop->reason[0]) printf(" (%s)", stop->reason);
        }
        printf("\n");
    } else if (strcmp(t->status, "TERMINATED") == 0) {
        if (!isnan(e->max_t) && t->last_x >= e->max_t) {
            cli_fmt_num(e->max_t, m, sizeof m);
            printf("status       TERMINATED: finished, reached max_t (%s %s)\n", e->time_attr, m);
        } else {
            printf("status       TERMINATED: finished (the trial ended on its own)\n");
        }
    } else if (strcmp(t->status, "ERROR") == 0) {
        char *why = cli_escape_text(t->error ? t->error : "failed");
        printf("status       ERROR: %s", why ? why : "failed");
        free(why);
        /* The error usually says it already ("exited with code 2: ..."): never twice. */
        const char *e2 = t->error ? t->error : "";
        if (t->exit_signal && !strstr(e2, "signal"))
            printf(" (signal %d)", t->exit_signal);
        else if (!t->exit_signal && t->has_exit_code && !strstr(e2, "with code"))
            printf(" (exit code %d)", t->exit_code);
        printf("\n");
    } else if (strcmp(t->status, "PAUSED") == 0) {
        printf("status       PAUSED: interrupted; tune resume %s continues it\n", e->name);
    } else {
        printf("status       %s\n", t->status);
    }
}

/* With several objectives: the trial's last value of each, whether its last result meets
 * the constraints (which it violates, by how much) and its front. */
static void print_front(store_t *st, const cli_exp_t *e, const cli_trial_t *t)
{
    cli_front_t f;
    char err[1024];
    if (cli_front_load(st, e->name, &f, err, sizeof err) != 0) {
        cli_error("%s", err);
        return;
    }
    long p = cli_front_find(&f, t->trial_no);
    printf("objectives  ");
    for (size_t j = 0; j < f.k; j++) {
        char v[32];
        cli_fmt_num(p >= 0 ? f.values[(size_t)p * f.k + j] : NAN, v, sizeof v);
        printf("%s %s=%s (%s)", j ? "," : "", f.set->metrics[j], v,
               space_mode_name(f.set->modes[j]));
    }
    printf("\n");
    if (p < 0) {
        printf("front        - (no result yet)\n");
        cli_front_free(&f);
        return;
    }
    if (f.set->nconstraints) {
        if (f.violation[p] == 0) {
            printf("feasible     yes: meets every constraint\n");
        } else {
            char tid[32], words[1024] = "";
            snprintf(tid, sizeof tid, "%lld", (long long)t->id);
            const char *qb[] = {tid};
            char *last = NULL;
            cli_rows_t r;
            if (cli_rows_query(st,
                               "SELECT data FROM results_current WHERE trial_id = ?1"
                               " ORDER BY id DESC LIMIT 1",
                               qb, 1, &r, err, sizeof err) == 0 &&
                r.nrows == 1 && r.vals[0])
                last = r.vals[0];
            cJSON *res = last ? cJSON_Parse(last) : NULL;
            cli_violation_words(f.set, res, words, sizeof words);
            cJSON_Delete(res);
            cli_rows_free(&r);
            char *w = cli_escape_text(words);
            printf("feasible     no: %s\n", w ? w : "");
            free(w);
        }
    }
    int lv = cli_front_level(&f, (size_t)p);
    if (lv == 0)
        printf("front        0: on the Pareto front (%zu trial%s, of %zu with a result)\n",
               f.nfront, f.nfront == 1 ? "" : "s", f.n);
    else if (lv > 0)
        printf("front        %d: dominated (front 0 is the Pareto front, %zu trial%s)\n", lv,
               f.nfront, f.nfront == 1 ? "" : "s");
    else if (f.violation[p] != 0)
        printf("front        - (violates a constraint: ranked after every feasible trial)\n");
    else
        printf("front        - (an objective has no value: ranked after the feasible trials)\n");
    cli_front_free(&f);
}

int cli_cmd_show(int argc, char **argv)
{
    static const char usage[] =
        "usage: tune show [EXPERIMENT] TRIAL [--experiment NAME] [--db PATH] [--metric M]\n"
        "                 [--mode min|max]\n"
        "                 [--lines N] [--width N] [--height N] [--color auto|always|never]\n"
        "                 [--ylim auto|full|LO:HI]\n"
        "  one trial: configuration, status and why (the scheduler's decisions), slice,\n"
        "  times, last and best metric, its learning curve and the tail of its logs.\n"
        "  TRIAL is a number (3) or a name (trial_00003); EXPERIMENT may be left out when\n"
        "  the database holds one experiment\n";
    if (cli_help(argc, argv, usage)) return CLI_EXIT_OK;
    struct view_opts o;
    if (parse_view(argc, argv, 2, usage, &o)) return CLI_EXIT_USAGE;
    if (o.npos == 0) {
        cli_error("show: which trial?\n%s", usage);
        return CLI_EXIT_USAGE;
    }
    const char *name = o.npos == 2 ? o.pos[0] : o.experiment;
    const char *trial = o.pos[o.npos - 1];
    if (o.npos == 2 && o.experiment && strcmp(o.pos[0], o.experiment) != 0) {
        cli_error("show: two experiments named (\"%s\" and --experiment \"%s\")", o.pos[0],
                  o.experiment);
        return CLI_EXIT_USAGE;
    }
    store_t *st;
    cli_exp_t *e;
    int rc = open_exp(&o, name, trial, CLI_EXP_DECISIONS, &st, &e);
    if (rc) return rc;
    const cli_trial_t *t = &e->trials[0];
    char a[64], b[64], d[32];
    /* Several objectives: the settings the run had, parsed back (front.h). */
    space_t *sp = NULL;
    char perr[1024];
    int multi = cli_front_space(st, e->name, &sp, perr, sizeof perr) == 0 &&
                cli_front_multi(space_settings(sp));
    space_free(sp);

    printf("%s  (experiment %s, trial %lld of %lld)\n", t->name, e->name, (long long)t->trial_no,
           (long long)e->num_trials);
    print_why(e, t, multi);
    /* The configuration, one parameter a line when there are many. */
    cJSON *cfg = cJSON_Parse(t->config);
    printf("config      ");
    cJSON *it;
    cJSON_ArrayForEach(it, cfg)
    {
        /* Numbers with the digits the trial's argv received: a configuration shown is
         * one that can be run again. */
        char *s = cJSON_IsString(it) ? strdup(it->valuestring) : space_json_print(it);
        char *k = cli_escape_text(it->string), *v = cli_escape_text(s);
        printf(" %s=%s", k ? k : "?", v ? v : "?");
        free(k), free(v), free(s);
    }
    printf("\n");
    cJSON_Delete(cfg);
    print_chosen_by(st, t);
    printf("slice        %s   attempt %d\n", t->slice ? t->slice : "-", t->attempt);
    fmt_time(t->started_at, a, sizeof a);
    fmt_time(t->ended_at, b, sizeof b);
    double end = isnan(t->ended_at) ? (double)time(NULL) : t->ended_at;
    fmt_duration(end - t->started_at, d, sizeof d);
    printf("times        started %s, ended %s (%s%s)\n", a, b, d,
           isnan(t->ended_at) && !isnan(t->started_at) ? " so far" : "");
    /* Metrics: the shown metric's last and best, and the whole last result. */
    char lx[32], bx[32];
    cli_fmt_num(t->last, a, sizeof a);
    cli_fmt_num(t->best, b, sizeof b);
    cli_fmt_num(t->last_x, lx, sizeof lx);
    cli_fmt_num(t->best_x, bx, sizeof bx);
    printf("%-12s last %s at %s %s, best %s at %s (%s), %zu results\n",
           e->metric ? e->metric : "metric", a, e->time_attr, lx, b, bx,
           e->mode_max ? "max" : "min", t->n);
    char tid[32];
    snprintf(tid, sizeof tid, "%lld", (long long)t->id);
    const char *qb[] = {tid};
    char err[512];
    if (store_query(st,
                    "SELECT data FROM results_current WHERE trial_id = ?1 ORDER BY id DESC"
                    " LIMIT 1",
                    qb, 1, print_last_result, NULL, err, sizeof err) != 0)
        cli_error("%s", err);
    if (multi) print_front(st, e, t);
    if (t->error && strcmp(t->status, "ERROR") != 0) {
        char *note = cli_escape_text(t->error);
        printf("note         %s\n", note ? note : "");
        free(note);
    }
    print_schedule(st, e, t);

    /* The judged decisions (ASHA's rungs, the median rule): the last 20. */
    size_t nj = 0;
    for (size_t k = 0; k < t->ndec; k++)
        nj += t->dec[k].rung >= 0 || !isnan(t->dec[k].cutoff);
    if (nj && multi) {
        /* Several objectives: a rung ranks points, no value meets a cutoff; the scheduler's
         * words (its reason) say where the trial stood. */
        printf("\ndecisions (%s, several objectives):\n", e->scheduler ? e->scheduler : "?");
        printf("  %10s  %4s  %9s  %-8s  %s\n", "iteration", "rung", "milestone", "action", "why");
        size_t skip = nj > 20 ? nj - 20 : 0;
        for (size_t k = 0; k < t->ndec; k++) {
            const cli_decision_t *x = &t->dec[k];
            if (!(x->rung >= 0 || !isnan(x->cutoff)) || (skip && skip--)) continue;
            char it_s[32], ms[32], r[16];
            cli_fmt_num(x->iteration, it_s, sizeof it_s);
            cli_fmt_num(x->milestone, ms, sizeof ms);
            snprintf(r, sizeof r, "%d", x->rung);
            if (x->rung < 0) snprintf(r, sizeof r, "-");
            char *w = cli_escape_text(x->reason ? x->reason : "");
            printf("  %10s  %4s  %9s  %-8s  %s\n", it_s, r, ms, x->action, w ? w : "");
            free(w);
        }
    } else if (nj) {
        printf("\ndecisions (%s, %s %s):\n", e->scheduler ? e->scheduler : "?",
               e->exp_metric ? e->exp_metric : "value", e->exp_mode_max ? "max" : "min");
        printf("  %10s  %4s  %9s  %10s  %10s  %s\n", "iteration", "rung", "milestone", "value",
               "cutoff", "action");
        size_t skip = nj > 20 ? nj - 20 : 0;
        for (size_t k = 0; k < t->ndec; k++) {
            const cli_decision_t *x = &t->dec[k];
            if (!(x->rung >= 0 || !isnan(x->cutoff)) || (skip && skip--)) continue;
            char it_s[32], ms[32], v[32], c[32], r[16];
            cli_fmt_num(x->iteration, it_s, sizeof it_s);
            cli_fmt_num(x->milestone, ms, sizeof ms);
            cli_fmt_num(x->value, v, sizeof v);
            cli_fmt_num(x->cutoff, c, sizeof c);
            if (x->rung >= 0)
                snprintf(r, sizeof r, "%d", x->rung);
            else
                snprintf(r, sizeof r, "-");
            printf("  %10s  %4s  %9s  %10s  %10s  %s\n", it_s, r, ms, v, c, x->action);
        }
    }

    /* The learning curve. */
    printf("\n");
    size_t sel0 = 0;
    char title[256];
    snprintf(title, sizeof title, "learning curve: %s by %s", e->metric ? e->metric : "?",
             e->time_attr);
    int cols = o.width ? o.width : term_width();
    struct chart ch = {.cols = cols > 72   ? 72
                               : cols < 20 ? 20
                                           : cols,
                       .rows = o.height ? o.height : 8,
                       .color = o.color,
                       .logx = o.logx,
                       .logy = o.logy,
                       .title = title,
                       .ylim = &o.ylim};
    draw_chart(stdout, e, &sel0, 1, -1, &ch);

    /* The tail of the logs. */
    int lines = o.lines < 0 ? 10 : o.lines;
    if (lines > 0 && t->trial_dir) {
        tail_file(t->trial_dir, "stdout.log", lines);
        tail_file(t->trial_dir, "stderr.log", lines);
    } else if (lines > 0) {
        printf("\n(no trial directory recorded)\n");
    }
    cli_exp_free(e);
    store_close(st);
    return CLI_EXIT_OK;
}
