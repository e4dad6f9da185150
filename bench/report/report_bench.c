/* report_bench: what `tune report` and `tune plot` cost on a large experiment (5,000 ASHA-like
 * trials, about 108,000 results: tests/big_experiment.h, the experiment of test_report's
 * 5,000-trial case), against a peer measured in the same run: the floor of any report of
 * it, every result row read with bare SQLite and written out as a JSON line (no summaries,
 * no HTML, no chart). With /usr/bin/chromium, also how long headless Chromium takes to
 * draw the report: its wall time and the page script's own (the page's data-render-ms).
 * Not a test: it prints figures and ratios and asserts nothing; what the report must hold
 * is checked by tests/test_report.c (report_of_5000_trials_holds_and_draws_every_trial).
 *
 *   report_bench [--trials N] [--repeat R] [--tune PATH] [--dir DIR] [--keep] [--no-chromium]
 *
 * Work files go into a fresh folder under /tmp, removed at the end (--keep keeps it;
 * --dir DIR uses DIR and leaves it). */
#include "bench/bench_common.h"
#include "big_experiment.h"

#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char chromium[] = "/usr/bin/chromium";

static void die(const char *what, const char *why)
{
    fprintf(stderr, "report_bench: %s: %s\n", what, why);
    exit(1);
}

/* One timed run: wall seconds, and the CPU seconds of the process and what it waited for. */
struct took {
    double wall, cpu;
};

/* Runs argv (a path) in dir with stdout into out (NULL: /dev/null) and stderr into err
 * (NULL: /dev/null); exits the benchmark if it fails. */
static struct took run(const char *dir, char *const *argv, const char *out, const char *err)
{
    double t0 = bench_clock_s(CLOCK_MONOTONIC);
    pid_t pid = fork();
    if (pid < 0) die("fork", strerror(errno));
    if (pid == 0) {
        int fo = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0 || chdir(dir) != 0) _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        unsetenv("COLUMNS"); /* tune plot's width: the same in every run */
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) != pid) die("wait4", strerror(errno));
    struct took t = {bench_clock_s(CLOCK_MONOTONIC) - t0,
                     (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                         1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec)};
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "report_bench: %s exited with status %d (%s)\n", argv[0], st,
                err ? err : "stderr not kept");
        exit(1);
    }
    return t;
}

/* The floor: every result, in trial order, read with bare SQLite and written to out as one
 * JSON line each (the trial's name, the attempt, the result as stored). */
static struct took floor_run(const char *db, const char *out)
{
    double t0 = bench_clock_s(CLOCK_MONOTONIC), c0 = bench_clock_s(CLOCK_PROCESS_CPUTIME_ID);
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        die("open", sqlite3_errmsg(h));
    if (sqlite3_prepare_v2(h,
                           "SELECT t.name, r.attempt, r.data FROM results r JOIN trials t ON"
                           " t.id = r.trial_id ORDER BY r.trial_id, r.attempt, r.id",
                           -1, &st, NULL) != SQLITE_OK)
        die("prepare", sqlite3_errmsg(h));
    FILE *f = fopen(out, "w");
    if (!f) die(out, strerror(errno));
    while (sqlite3_step(st) == SQLITE_ROW)
        fprintf(f, "{\"trial\": \"%s\", \"attempt\": %d, \"result\": %s}\n",
                (const char *)sqlite3_column_text(st, 0), sqlite3_column_int(st, 1),
                (const char *)sqlite3_column_text(st, 2));
    if (fclose(f) != 0) die(out, strerror(errno));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return (struct took){bench_clock_s(CLOCK_MONOTONIC) - t0,
                         bench_clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0};
}

/* The value of attribute name on the <body> of a dumped page, or -1. */
static long body_attr(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *b = strstr(buf, "<body");
    const char *end = b ? strchr(b, '>') : NULL;
    char pat[64];
    snprintf(pat, sizeof pat, " %s=\"", name);
    const char *a = b ? strstr(b, pat) : NULL;
    if (!a || (end && a > end)) return -1;
    return strtol(a + strlen(pat), NULL, 10);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define MAX_REPEAT 50

/* The times of one kind of run over the repeats. */
struct series {
    const char *name;
    double wall[MAX_REPEAT], cpu[MAX_REPEAT];
    int n;
};

static void add(struct series *s, struct took t)
{
    s->wall[s->n] = t.wall;
    s->cpu[s->n++] = t.cpu;
}

static void print_series(struct series *s, double floor_wall, double floor_cpu)
{
    if (s->n == 0) return;
    double lo = s->wall[0];
    for (int i = 1; i < s->n; i++)
        lo = s->wall[i] < lo ? s->wall[i] : lo;
    double w = median(s->wall, s->n), c = median(s->cpu, s->n);
    printf("%-52s %8.3f s %8.3f s %8.3f s %7.1fx %7.1fx\n", s->name, w, lo, c, w / floor_wall,
           c / floor_cpu);
}

int main(int argc, char **argv)
{
    long trials = 5000, repeat = 3;
    int use_chromium = 1, keep = 0;
    const char *dir = NULL, *tune = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--trials") && i + 1 < argc)
            trials = bench_arg_long("report_bench", "--trials", argv[++i], 1, 1000000);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = bench_arg_long("report_bench", "--repeat", argv[++i], 1, MAX_REPEAT);
        else if (!strcmp(argv[i], "--tune") && i + 1 < argc)
            tune = argv[++i];
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else if (!strcmp(argv[i], "--no-chromium"))
            use_chromium = 0;
        else if (!strcmp(argv[i], "--keep"))
            keep = 1;
        else {
            fprintf(stderr, "usage: report_bench [--trials N] [--repeat R] [--tune PATH]"
                            " [--dir DIR] [--keep] [--no-chromium]\n");
            return 2;
        }
    }
    /* tune beside this program (both land in the build's bin/) unless named */
    char tune_path[PATH_MAX + 8], self[PATH_MAX];
    if (!tune) {
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k <= 0) die("/proc/self/exe", strerror(errno));
        self[k] = 0;
        char *slash = strrchr(self, '/');
        if (slash) *slash = 0;
        snprintf(tune_path, sizeof tune_path, "%s/tune", self);
        tune = tune_path;
    }
    if (access(tune, X_OK) != 0) die(tune, "not found (build the tune target, or --tune PATH)");
    char tmpl[] = "/tmp/report_bench_XXXXXX";
    int made = !dir;
    if (!dir && !(dir = mkdtemp(tmpl))) die("mkdtemp", strerror(errno));
    char db[PATH_MAX], html[PATH_MAX], floor_out[PATH_MAX], plot_out[PATH_MAX], dom[PATH_MAX],
        err[PATH_MAX];
    snprintf(db, sizeof db, "%s/tune.db", dir);
    snprintf(html, sizeof html, "%s/big.html", dir);
    snprintf(floor_out, sizeof floor_out, "%s/floor.jsonl", dir);
    snprintf(plot_out, sizeof plot_out, "%s/plot.txt", dir);
    snprintf(dom, sizeof dom, "%s/dom.html", dir);
    snprintf(err, sizeof err, "%s/stderr.txt", dir);
    unlink(db);

    double t0 = bench_clock_s(CLOCK_MONOTONIC);
    big_experiment_write(db, (int)trials);
    double written = bench_clock_s(CLOCK_MONOTONIC) - t0;
    long long nres = 0;
    {
        sqlite3 *h = NULL;
        sqlite3_stmt *st = NULL;
        if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(h, "SELECT count(*) FROM results", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            nres = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(h);
    }
    double load = -1;
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf", &load) != 1) load = -1;
        fclose(la);
    }
    use_chromium = use_chromium && access(chromium, X_OK) == 0;

    char url[PATH_MAX + 16], profile[PATH_MAX + 32], pdir[PATH_MAX + 48];
    snprintf(url, sizeof url, "file://%s", html);
    snprintf(profile, sizeof profile, "%s/chromium-profile", dir);
    snprintf(pdir, sizeof pdir, "--user-data-dir=%s", profile);
    char *report_argv[] = {(char *)tune, "report", "big", "--db", db, "-o", html, NULL};
    char *plot_argv[] = {(char *)tune, "plot", "big", "--db", db, NULL};
    char *chromium_argv[] = {(char *)chromium,
                             "--headless",
                             "--no-sandbox",
                             "--disable-gpu",
                             "--no-first-run",
                             "--disable-background-networking",
                             "--disable-component-update",
                             "--disable-sync",
                             pdir,
                             "--window-size=1400,2000",
                             "--virtual-time-budget=30000",
                             "--dump-dom",
                             url,
                             NULL};

    struct series fl = {.name = "peer: every result read and written as JSON lines"},
                  rep = {.name = "tune report (self-contained HTML)"},
                  plot = {.name = "tune plot (terminal chart, every curve)"},
                  chr = {.name = "headless Chromium draws the report"};
    double script_ms[MAX_REPEAT];
    int nscript = 0;
    /* interleaved, so that a change in the machine's load falls on every kind alike */
    for (int r = 0; r < repeat; r++) {
        add(&fl, floor_run(db, floor_out));
        add(&rep, run(dir, report_argv, NULL, err));
        add(&plot, run(dir, plot_argv, plot_out, err));
        if (use_chromium) {
            add(&chr, run(dir, chromium_argv, dom, NULL));
            long ms = body_attr(dom, "data-render-ms");
            if (ms >= 0) script_ms[nscript++] = (double)ms;
            char rm[sizeof profile + 16];
            snprintf(rm, sizeof rm, "rm -rf '%s'", profile);
            if (system(rm) != 0) fprintf(stderr, "report_bench: cannot remove %s\n", profile);
        }
    }
    struct stat sh, sf;
    long html_kib = stat(html, &sh) == 0 ? (long)(sh.st_size / 1024) : -1;
    long floor_kib = stat(floor_out, &sf) == 0 ? (long)(sf.st_size / 1024) : -1;
    printf("report_bench: %ld trials, %lld results (written through the store in %.2f s),"
           " SQLite %s, load %.2f on %ld CPUs, %ld run%s of each%s%s\n",
           trials, nres, written, sqlite3_libversion(), load, sysconf(_SC_NPROCESSORS_ONLN), repeat,
           repeat == 1 ? "" : "s", made && !keep ? "" : ", kept in ", made && !keep ? "" : dir);
    printf("report %ld KiB, the peer's JSON lines %ld KiB\n", html_kib, floor_kib);
    printf("%-52s %10s %10s %10s %8s %8s\n", "", "wall med", "wall min", "CPU med", "wall/peer",
           "CPU/peer");
    double fw = median(fl.wall, fl.n), fc = median(fl.cpu, fl.n);
    print_series(&fl, fw, fc);
    print_series(&rep, fw, fc);
    print_series(&plot, fw, fc);
    if (use_chromium) {
        print_series(&chr, fw, fc);
        if (nscript > 0)
            printf("  of which the page's own script (data-render-ms), median: %.0f ms\n",
                   median(script_ms, nscript));
    } else {
        printf("(no Chromium timing: %s)\n",
               access(chromium, X_OK) == 0 ? "--no-chromium" : "no /usr/bin/chromium");
    }
    if (made && !keep) {
        char rm[PATH_MAX + 16];
        snprintf(rm, sizeof rm, "rm -rf '%s'", tmpl);
        if (system(rm) != 0) fprintf(stderr, "report_bench: cannot remove %s\n", tmpl);
    }
    return 0;
}
