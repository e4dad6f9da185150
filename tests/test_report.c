/* End-to-end tests of what comes after a run: `tune show`, `tune plot`, `tune report`
 * (rendered in headless Chromium when /usr/bin/chromium exists), the reporting helpers
 * (python/tune_report.py, include/tune_report.h) and the PyTorch DDP example under
 * `tune run` (when /usr/bin/python3 has torch). They run the real binary on real
 * experiments and compare what it prints with the real SQLite file.
 * Not for: the run itself (tests/test_cli.c) or the store's own contract (test_store.c). */
#define E2E_GROUP "report"
#include "e2e.h"
#include "tinytest.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "big_experiment.h"
#include "include/tune_report.h"
#include "store/store.h"

/* Runs argv[0] (a path) in dir with extra environment ("NAME=VALUE" sets, "NAME" unsets),
 * in its own process group, killed as a group after timeout_s. */
static struct out run_env(const char *dir, const char *const *argv, const char *const *env,
                          int timeout_s)
{
    struct how h = {.env = env, .timeout_s = timeout_s};
    return run_prog(dir, argv, &h);
}

/* Runs tune with args (NULL-terminated) and extra environment. */
static struct out tune_env(const char *dir, const char *const *args, const char *const *env)
{
    struct how h = {.env = env, .timeout_s = 600};
    return run_tune_how(dir, args, &h);
}

static struct out tune(const char *dir, const char *const *args)
{
    static const char *const no_columns[] = {"COLUMNS", NULL};
    return tune_env(dir, args, no_columns);
}

/* Display width of UTF-8 text. */
static int width(const char *s, size_t n)
{
    int w = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) w++;
    return w;
}

/* The ASHA experiment most cases look at: 20 trials of synth_trial, most stopped early. */
static void run_asha(const char *dir, const char *name)
{
    char sp[8192], path[4200];
    snprintf(sp, sizeof sp,
             "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 20,"
             " \"max_concurrent\": 4, \"seed\": 3,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"27\"],"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 27, \"grace_period\": 1,"
             "   \"reduction_factor\": 3},"
             " \"space\": {\"lr\": {\"loguniform\": [0.00001, 1]},"
             "   \"batch\": {\"choice\": [16, 32, 64]}, \"mom\": {\"uniform\": [0.5, 0.99]}}}",
             name, g_synth);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    write_file(path, sp);
    snprintf(path, sizeof path, "%s.json", name);
    const char *a[] = {"run", path, "--gpus", "none", "--quiet", NULL};
    struct out o = tune(dir, a);
    if (o.code != 0) fprintf(stderr, "tune run failed: %s%s\n", o.out, o.err);
    out_free(&o);
}

/* The number as show and plot print it. */
static void fmt_num(double v, char *out, size_t n)
{
    if (isnan(v))
        snprintf(out, n, "-");
    else if (v != 0 && (fabs(v) < 1e-3 || fabs(v) >= 1e6))
        snprintf(out, n, "%.4g", v);
    else
        snprintf(out, n, "%.5g", v);
}

/* ---- tune show ------------------------------------------------------------------ */
TEST(show_by_number_and_by_name)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "show");
    run_asha(dir, "asha1");
    REQUIRE(db_int(dir, "SELECT count(*) FROM trials") == 20);
    /* The experiment is implied when the database holds one. */
    const char *a1[] = {"show", "3", NULL};
    const char *a2[] = {"show", "trial_00003", NULL};
    const char *a3[] = {"show", "asha1", "3", NULL};
    const char *a4[] = {"show", "--experiment", "asha1", "trial_00003", NULL};
    struct out o1 = tune(dir, a1), o2 = tune(dir, a2), o3 = tune(dir, a3), o4 = tune(dir, a4);
    CHECK_EQ_INT(o1.code, 0);
    CHECK_CONTAINS(o1.out, "trial_00003  (experiment asha1, trial 3 of 20)");
    CHECK_CONTAINS(o1.out, "config       lr=");
    CHECK_CONTAINS(o1.out, "batch=");
    CHECK_CONTAINS(o1.out, "slice        cpu");
    CHECK_CONTAINS(o1.out, "times        started ");
    CHECK_CONTAINS(o1.out, "last result  {\"training_iteration\": ");
    CHECK_CONTAINS(o1.out, "learning curve: loss by training_iteration");
    CHECK_CONTAINS(o1.out, "stdout.log (last ");
    CHECK_STR(o1.out, o2.out);
    CHECK_STR(o1.out, o3.out);
    CHECK_STR(o1.out, o4.out);
    out_free(&o1), out_free(&o2), out_free(&o3), out_free(&o4);
}

TEST(show_says_why_a_trial_stopped_or_finished)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "show_why");
    run_asha(dir, "asha1");
    long long stopped = db_int(dir, "SELECT trial_no FROM trials WHERE early_stopped = 1"
                                    " ORDER BY trial_no DESC LIMIT 1");
    long long done = db_int(dir, "SELECT trial_no FROM trials WHERE early_stopped = 0"
                                 " AND status = 'TERMINATED' LIMIT 1");
    REQUIRE(stopped >= 0 && done >= 0);
    char q[512], no[32], want[256], c[32], v[32];
    snprintf(q, sizeof q,
             "SELECT %%s FROM decisions d JOIN trials t ON t.id = d.trial_id"
             " WHERE t.trial_no = %lld AND d.action = 'stop'",
             stopped);
    char sql[600];
    snprintf(sql, sizeof sql, q, "d.rung");
    long long rung = db_int(dir, sql);
    snprintf(sql, sizeof sql, q, "d.cutoff");
    fmt_num(db_real(dir, sql), c, sizeof c);
    snprintf(sql, sizeof sql, q, "d.value");
    fmt_num(db_real(dir, sql), v, sizeof v);

    snprintf(no, sizeof no, "%lld", stopped);
    const char *a[] = {"show", no, NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want, "status       TERMINATED: stopped early by asha at rung %lld ",
             rung);
    CHECK_CONTAINS(o.out, want);
    snprintf(want, sizeof want, "loss %s above the cutoff %s", v, c);
    CHECK_CONTAINS(o.out, want);
    /* The decisions table and the curve's stop mark. */
    CHECK_CONTAINS(o.out, "decisions (asha, loss min):");
    CHECK_CONTAINS(o.out, "  stop\n");
    CHECK_CONTAINS(o.out, "×");
    out_free(&o);

    snprintf(no, sizeof no, "%lld", done);
    const char *b[] = {"show", "asha1", no, "--lines", "3", NULL};
    o = tune(dir, b);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out,
                   "status       TERMINATED: finished, reached max_t (training_iteration 27)");
    CHECK_CONTAINS(o.out, "loss         last ");
    CHECK_CONTAINS(o.out, "27 results");
    CHECK_CONTAINS(o.out, "stdout.log (last 3 lines):");
    CHECK_CONTAINS(o.out, "{\"training_iteration\": 27,");
    CHECK(strstr(o.out, "{\"training_iteration\": 24,") == NULL);
    out_free(&o);
}

TEST(show_error_trial_with_its_stderr)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "show_error");
    snprintf(sp, sizeof sp,
             "{\"name\": \"f\", \"metric\": \"loss\", \"num_samples\": 1,"
             " \"command\": [\"%s\", \"--iters\", \"5\", \"--fail-at\", \"{at}\"],"
             " \"space\": {\"at\": {\"grid_search\": [2, -1]}}}",
             g_synth);
    CHECK_EQ_INT(run_ok(dir, sp, NULL), 3); /* a trial ended in ERROR */
    const char *a[] = {"show", "0", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    /* The exit code with the last line of stderr, said once. */
    CHECK_CONTAINS(o.out, "status       ERROR: exited with code 3: synth_trial: failing on purpose "
                          "at iteration 2\n");
    CHECK(strstr(o.out, "(exit code") == NULL);
    CHECK_CONTAINS(o.out, "stderr.log (last ");
    CHECK_CONTAINS(o.out, "synth_trial: failing on purpose at iteration 2");
    out_free(&o);
    const char *b[] = {"show", "1", "--lines", "0", NULL};
    o = tune(dir, b);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "TERMINATED: finished (the trial ended on its own)");
    CHECK(strstr(o.out, "stdout.log") == NULL);
    out_free(&o);
}

TEST(show_unknown_trial_or_experiment_is_a_clear_error)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "show_unknown");
    run_asha(dir, "asha1");
    const char *a[] = {"show", "999", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "tune: experiment \"asha1\" has no trial \"999\" (trials are named by"
                          " number, e.g. 3, or by name, e.g. trial_00003; see tune trials asha1)");
    CHECK_STR(o.out, "");
    out_free(&o);
    const char *b[] = {"show", "asha1", "trial_x", NULL};
    o = tune(dir, b);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "has no trial \"trial_x\"");
    out_free(&o);
    const char *c[] = {"show", "nosuch", "3", NULL};
    o = tune(dir, c);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err,
                   "tune: no experiment named \"nosuch\" in tune.db (see tune ls --db tune.db)");
    out_free(&o);

    /* With two experiments, none is implied. */
    run_asha(dir, "asha2");
    const char *d[] = {"show", "3", NULL};
    o = tune(dir, d);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "tune: tune.db holds 2 experiments (asha1, asha2): say which one");
    out_free(&o);
    const char *e[] = {"show", "asha2", "3", NULL};
    o = tune(dir, e);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "(experiment asha2, trial 3 of 20)");
    out_free(&o);

    /* An empty database, and one that is not there. */
    char db[4300], err[256];
    snprintf(db, sizeof db, "%s/empty.db", dir);
    store_t *st = NULL;
    REQUIRE(store_open(db, 0, &st, err, sizeof err) == 0);
    store_close(st);
    const char *f[] = {"show", "3", "--db", "empty.db", NULL};
    o = tune(dir, f);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err,
                   "tune: empty.db holds no experiment yet (run one with tune run SPACE.json)");
    out_free(&o);
    const char *g[] = {"plot", "--db", "missing.db", NULL};
    o = tune(dir, g);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "tune: ");
    out_free(&o);
}

TEST(show_and_plot_bad_arguments)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "bad_args");
    run_asha(dir, "asha1");
    static const struct {
        const char *args[8];
        int code;
        const char *msg;
    } cases[] = {
        {{"show", NULL}, 2, "tune: show: which trial?"},
        {{"show", "a", "b", "c", NULL}, 2, "tune: show: unexpected argument \"c\""},
        {{"show", "asha1", "3", "--experiment", "other", NULL},
         2,
         "tune: show: two experiments named (\"asha1\" and --experiment \"other\")"},
        {{"show", "3", "--lines", "many", NULL},
         2,
         "tune: show: --lines wants a whole number from 0 to 100000, got \"many\""},
        {{"show", "3", "--metric", "a\"b", NULL},
         1,
         "tune: metric \"a\"b\": a metric name cannot be empty or hold '\"' or '\\'"},
        {{"plot", "--width", "abc", NULL},
         2,
         "tune: plot: --width wants a whole number from 20 to 1000, got \"abc\""},
        {{"plot", "--width", "5", NULL}, 2, "--width wants a whole number from 20 to 1000"},
        {{"plot", "--height", NULL}, 2, "tune: plot: --height needs a value"},
        {{"plot", "--x", "sideways", NULL},
         2,
         "tune: plot: --x wants auto, log or linear, got \"sideways\""},
        {{"plot", "--y", "cubic", NULL}, 2, "tune: plot: --y wants auto, log or linear"},
        {{"plot", "--color", "sometimes", NULL},
         2,
         "tune: plot: --color wants auto, always or never, got \"sometimes\""},
        {{"plot", "--bogus", NULL}, 2, "tune: plot: unknown option --bogus"},
        {{"plot", "asha1", "extra", NULL}, 2, "tune: plot: unexpected argument \"extra\""},
        {{"plot", "nosuch", NULL}, 1, "tune: no experiment named \"nosuch\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct out o = tune(dir, cases[i].args);
        CHECK_EQ_INT(o.code, cases[i].code);
        CHECK_CONTAINS(o.err, cases[i].msg);
        out_free(&o);
    }
    const char *cmds[] = {"show", "plot", "report"};
    for (size_t i = 0; i < 3; i++) {
        const char *a[] = {cmds[i], "--help", NULL};
        struct out o = tune(dir, a);
        CHECK_EQ_INT(o.code, 0);
        char want[64];
        snprintf(want, sizeof want, "usage: tune %s ", cmds[i]);
        CHECK_CONTAINS(o.out, want);
        out_free(&o);
    }
    const char *h[] = {"--help", NULL};
    struct out o = tune(dir, h);
    CHECK_CONTAINS(o.out, "  show [NAME] TRIAL");
    CHECK_CONTAINS(o.out, "  plot [NAME]");
    CHECK_CONTAINS(o.out, "  report [NAME] -o F");
    out_free(&o);
}

/* ---- tune plot ------------------------------------------------------------------ */
/* Checks a plot printed for `cols` columns: no line wider, the x axis exactly as wide. */
static void check_plot_width(const char *text, int cols)
{
    int axis = 0, lines = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        int w = width(p, n);
        if (w > cols) fprintf(stderr, "line wider than %d (%d): %.*s\n", cols, w, (int)n, p);
        CHECK(w <= cols);
        if (memmem(p, n, "└", strlen("└"))) {
            CHECK_EQ_INT(w, cols);
            axis++;
        }
        lines++;
        p += n + (nl ? 1 : 0);
    }
    CHECK_EQ_INT(axis, 1);
    CHECK(lines >= 16 + 4);
}

TEST(plot_fits_the_width_and_tells_stopped_from_finished)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "plot");
    run_asha(dir, "asha1");
    long long stopped = db_int(dir, "SELECT count(*) FROM trials WHERE early_stopped = 1");
    long long finished = db_int(dir, "SELECT count(*) FROM trials WHERE early_stopped = 0"
                                     " AND status = 'TERMINATED'");
    REQUIRE(stopped > 0 && finished > 0);
    char want_f[64], want_s[64];
    snprintf(want_f, sizeof want_f, "finished %lld", finished);
    snprintf(want_s, sizeof want_s, "stopped early %lld (× where)", stopped);
    const char *a[] = {"plot", "asha1", NULL};
    const char *c40[] = {"COLUMNS=40", NULL}, *c120[] = {"COLUMNS=120", NULL};
    struct out o = tune_env(dir, a, c40);
    CHECK_EQ_INT(o.code, 0);
    check_plot_width(o.out, 40);
    CHECK_CONTAINS(o.out, want_f);
    CHECK_CONTAINS(o.out, want_s);
    CHECK_CONTAINS(o.out, "● best trial_");
    out_free(&o);
    o = tune_env(dir, a, c120);
    CHECK_EQ_INT(o.code, 0);
    check_plot_width(o.out, 120);
    CHECK_CONTAINS(o.out, "asha1: loss (min) of 20 trials");
    CHECK_CONTAINS(o.out, "x: training_iteration (log), y: loss");
    CHECK_CONTAINS(o.out, want_f);
    CHECK_CONTAINS(o.out, want_s);
    CHECK_CONTAINS(o.out, "┬ rung milestones");
    /* The rung milestones 1, 3 and 9 are ticks on the axis, labelled below it. */
    const char *axis = strstr(o.out, "└");
    REQUIRE(axis);
    const char *nl = strchr(axis, '\n');
    REQUIRE(nl);
    int ticks = 0;
    for (const char *p = axis; p < nl; p++)
        ticks += strncmp(p, "┬", strlen("┬")) == 0;
    CHECK_EQ_INT(ticks, 3);
    CHECK_CONTAINS(nl, " 1 ");
    CHECK_CONTAINS(nl, " 3 ");
    CHECK_CONTAINS(nl, " 9 ");
    /* Stopped trials' ends are marked, and no colour goes to a file. */
    CHECK_CONTAINS(o.out, "×");
    CHECK(strchr(o.out, '\x1b') == NULL);
    out_free(&o);
    /* Without COLUMNS and a terminal: 80. */
    o = tune(dir, a);
    check_plot_width(o.out, 80);
    out_free(&o);
    /* Colour on request: stopped grey, finished green, the best bold yellow. */
    const char *b[] = {"plot", "--color", "always", "--width", "90", NULL};
    o = tune(dir, b);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "\x1b[90m");
    CHECK_CONTAINS(o.out, "\x1b[32m");
    CHECK_CONTAINS(o.out, "\x1b[1;33m");
    out_free(&o);
    /* Another metric from the results' JSON, and one that no result has. */
    const char *m[] = {"plot", "--metric", "acc", "--y", "linear", "--x", "linear", NULL};
    o = tune(dir, m);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "asha1: acc (max) of 20 trials");
    CHECK_CONTAINS(o.out, "x: training_iteration, y: acc");
    out_free(&o);
    /* A metric no result has is a typo until shown otherwise: every command says so. */
    static const char unknown[] = "tune: experiment \"asha1\" has no metric \"nothing\": its"
                                  " results report training_iteration, loss, acc";
    const char *n[] = {"plot", "--metric", "nothing", NULL};
    const char *n2[] = {"show", "3", "--metric", "nothing", NULL};
    const char *n3[] = {"report", "--metric", "nothing", "-o", "n.html", NULL};
    const char *const *ns[] = {n, n2, n3};
    for (int i = 0; i < 3; i++) {
        o = tune(dir, (const char **)ns[i]);
        CHECK_EQ_INT(o.code, 1);
        CHECK_CONTAINS(o.err, unknown);
        CHECK_STR(o.out, "");
        out_free(&o);
    }
}

TEST(plot_and_show_before_any_result)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "plot_empty");
    /* Trials that report nothing: a chart with nothing in it is not an error. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"quiet\", \"metric\": \"loss\", \"num_samples\": 2,"
             " \"command\": [\"%s\", \"--iters\", \"0\"], \"space\": {}}",
             g_synth);
    CHECK_EQ_INT(run_ok(dir, sp, NULL), 0);
    REQUIRE(db_int(dir, "SELECT count(*) FROM results") == 0);
    const char *a[] = {"plot", NULL};
    const char *b[] = {"plot", "--metric", "acc", NULL};
    const char *c[] = {"show", "1", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "quiet: loss (min) of 2 trials");
    CHECK_CONTAINS(o.out, "(no results with a value for loss yet)");
    out_free(&o);
    o = tune(dir, b);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "(no results with a value for acc yet)");
    out_free(&o);
    o = tune(dir, c);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "trial_00001  (experiment quiet, trial 1 of 2)");
    CHECK_CONTAINS(o.out, "(no results with a value for loss yet)");
    out_free(&o);
}

/* ---- tune report ---------------------------------------------------------------- */
/* The JSON blob of a report. Caller cJSON_Delete()s. */
static cJSON *report_blob(const char *html)
{
    const char *tag = "<script type=\"application/json\" id=\"tune-data\">";
    const char *s = strstr(html, tag);
    if (!s) return NULL;
    s += strlen(tag);
    const char *e = strstr(s, "</script>");
    if (!e) return NULL;
    return cJSON_ParseWithLength(s, (size_t)(e - s));
}

TEST(report_is_one_self_contained_file)
{
    char dir[4096], path[4300];
    fresh_dir(dir, sizeof dir, "report");
    run_asha(dir, "asha1");
    const char *a[] = {"report", "asha1", "-o", "report.html", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.err, "tune: wrote report.html (asha1: 20 trials, ");
    out_free(&o);
    snprintf(path, sizeof path, "%s/report.html", dir);
    char *html = slurp(path);
    CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    /* Nothing reaches out: no URLs, no external scripts, styles, fonts or images. */
    CHECK(strstr(html, "http://") == NULL);
    CHECK(strstr(html, "https://") == NULL);
    CHECK(strstr(html, " src=") == NULL);
    CHECK(strstr(html, " href=") == NULL);
    CHECK(strstr(html, "<link") == NULL);
    CHECK(strstr(html, "@import") == NULL);
    CHECK(strstr(html, "url(") == NULL);
    CHECK(strstr(html, "<!--@") == NULL); /* every template marker was filled */
    CHECK_CONTAINS(html, "<title>asha1</title>");
    CHECK_CONTAINS(html, "<canvas id=\"curves\">");

    /* The data: one curve per trial, as in the database. */
    cJSON *d = report_blob(html);
    REQUIRE(d);
    cJSON *trials = cJSON_GetObjectItem(d, "trials");
    CHECK_EQ_INT(cJSON_GetArraySize(trials), 20);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(d, "metric")), "loss");
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(d, "params")), 3);
    cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "params"), 0);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(p0, "kind")), "loguniform");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(p0, "log")));
    cJSON *ms = cJSON_GetObjectItem(d, "milestones");
    CHECK_EQ_INT(cJSON_GetArraySize(ms), 3);
    CHECK_EQ_INT(cJSON_GetArrayItem(ms, 2)->valueint, 9);
    cJSON *t;
    int k = 0, stops = 0;
    cJSON_ArrayForEach(t, trials)
    {
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM results r JOIN trials t ON t.id = r.trial_id"
                 " WHERE t.trial_no = %d",
                 k);
        long long n = db_int(dir, sql);
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(t, "x")), n);
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(t, "y")), n);
        CHECK_EQ_INT(cJSON_GetObjectItem(t, "n")->valueint, n);
        snprintf(sql, sizeof sql,
                 "SELECT metric FROM results r JOIN trials t ON t.id = r.trial_id"
                 " WHERE t.trial_no = %d ORDER BY r.id DESC LIMIT 1",
                 k);
        CHECK_NEAR(cJSON_GetObjectItem(t, "last")->valuedouble, db_real(dir, sql), 1e-9);
        if (cJSON_GetObjectItem(t, "stop")) {
            stops++;
            CHECK_EQ_INT(cJSON_GetObjectItem(t, "es")->valueint, 1);
        }
        k++;
    }
    CHECK_EQ_INT(stops, db_int(dir, "SELECT count(*) FROM trials WHERE early_stopped = 1"));
    /* The best trial is `tune best`'s. */
    const char *b[] = {"best", "asha1", "--json", NULL};
    o = tune(dir, b);
    cJSON *best = cJSON_Parse(o.out);
    REQUIRE(best);
    CHECK_EQ_INT(cJSON_GetObjectItem(d, "best")->valueint,
                 cJSON_GetObjectItem(best, "id")->valueint);
    cJSON_Delete(best);
    out_free(&o);
    /* Each rung's last cutoff, as the decisions table has it. */
    cJSON *rungs = cJSON_GetObjectItem(d, "rungs");
    CHECK(cJSON_GetArraySize(rungs) >= 2);
    cJSON *r0 = cJSON_GetArrayItem(rungs, 0);
    CHECK_NEAR(cJSON_GetObjectItem(r0, "cut")->valuedouble,
               db_real(dir, "SELECT cutoff FROM decisions WHERE rung = 0 AND cutoff IS NOT NULL"
                            " ORDER BY id DESC LIMIT 1"),
               1e-9 * fabs(cJSON_GetObjectItem(r0, "cut")->valuedouble));
    CHECK_EQ_INT(cJSON_GetObjectItem(r0, "stopped")->valueint,
                 db_int(dir, "SELECT count(*) FROM decisions WHERE rung = 0 AND action = 'stop'"));
    cJSON_Delete(d);
    free(html);

    /* The default file name, stdout, another metric. */
    const char *c[] = {"report", NULL};
    o = tune(dir, c);
    CHECK_EQ_INT(o.code, 0);
    snprintf(path, sizeof path, "%s/asha1.html", dir);
    CHECK(access(path, F_OK) == 0);
    out_free(&o);
    const char *e[] = {"report", "--metric", "acc", "-o", "-", NULL};
    o = tune(dir, e);
    CHECK_EQ_INT(o.code, 0);
    d = report_blob(o.out);
    REQUIRE(d);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(d, "metric")), "acc");
    cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "trials"), 0);
    cJSON *y = cJSON_GetObjectItem(t0, "y");
    double acc = db_real(dir, "SELECT json_extract(r.data, '$.acc') FROM results r JOIN trials t"
                              " ON t.id = r.trial_id WHERE t.trial_no = 0 ORDER BY r.id LIMIT 1");
    CHECK_NEAR(cJSON_GetArrayItem(y, 0)->valuedouble, acc, 1e-6);
    cJSON_Delete(d);
    out_free(&o);
}

/* `-o` naming something that is not a plain file (a FIFO here; /dev/null when run as root
 * was the case found) is written in place: renaming the finished page over it replaced
 * the device with a regular file. The FIFO stays a FIFO and its reader gets the page. */
TEST(report_to_a_fifo_writes_through_it)
{
    char dir[4096], fifo[4300], got[4300];
    fresh_dir(dir, sizeof dir, "report_fifo");
    run_asha(dir, "asha1");
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    snprintf(got, sizeof got, "%s/got.html", dir);
    REQUIRE(mkfifo(fifo, 0600) == 0);
    pid_t reader = fork();
    REQUIRE(reader >= 0);
    if (reader == 0) {
        /* The reader: copy the FIFO to a file until the writer closes it. */
        int in = open(fifo, O_RDONLY), out = open(got, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char buf[65536];
        ssize_t k;
        while (in >= 0 && out >= 0 && (k = read(in, buf, sizeof buf)) > 0)
            if (write(out, buf, (size_t)k) != k) _exit(1);
        _exit(in >= 0 && out >= 0 ? 0 : 1);
    }
    const char *a[] = {"report", "asha1", "-o", "pipe", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    int st = 0;
    REQUIRE(waitpid(reader, &st, 0) == reader);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    struct stat sb;
    REQUIRE(lstat(fifo, &sb) == 0);
    CHECK(S_ISFIFO(sb.st_mode));
    char *html = slurp(got);
    REQUIRE(html);
    CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    CHECK_CONTAINS(html, "<title>asha1</title>");
    free(html);
}

TEST(report_escapes_what_could_break_the_page)
{
    char dir[4096], sp[8192], path[4300];
    fresh_dir(dir, sizeof dir, "report_escape");
    /* A string parameter that would end the data's <script> if it were not escaped. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"esc\", \"metric\": \"loss\", \"num_samples\": 1,"
             " \"command\": [\"%s\", \"--iters\", \"3\", \"--metric\", \"loss\"],"
             " \"space\": {\"tag\": {\"grid_search\": [\"</script><script>alert(1)</script>\","
             "   \"<!-- & \\\"q\\\"\"]}}}",
             g_synth);
    CHECK_EQ_INT(run_ok(dir, sp, NULL), 0);
    const char *a[] = {"report", "-o", "esc.html", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    snprintf(path, sizeof path, "%s/esc.html", dir);
    char *html = slurp(path);
    CHECK(strstr(html, "alert(1)</script>") == NULL);
    CHECK(strstr(html, "<!-- & ") == NULL);
    cJSON *d = report_blob(html);
    REQUIRE(d);
    cJSON *cfg =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "trials"), 0), "cfg");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cfg, "tag")),
              "</script><script>alert(1)</script>");
    cfg = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "trials"), 1), "cfg");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(cfg, "tag")), "<!-- & \"q\"");
    cJSON_Delete(d);
    free(html);
}

TEST(report_bad_arguments)
{
    char dir[4096], path[4300];
    fresh_dir(dir, sizeof dir, "report_bad");
    run_asha(dir, "asha1");
    static const struct {
        const char *args[8];
        int code;
        const char *msg;
    } cases[] = {
        {{"report", "-o", NULL}, 2, "tune: report: -o needs a value"},
        {{"report", "--bogus", NULL}, 2, "tune: report: unknown option --bogus"},
        {{"report", "a", "b", NULL},
         2,
         "tune: report: one experiment at a time (got \"a\" and \"b\")"},
        {{"report", "nosuch", "-o", "x.html", NULL}, 1, "tune: no experiment named \"nosuch\""},
        {{"report", "-o", "/nonexistent-dir/r.html", NULL},
         1,
         "tune: report: cannot write /nonexistent-dir/r.html: No such file or directory"},
        {{"report", "--metric", "", NULL}, 1, "a metric name cannot be empty"},
        {{"report", "--db", "missing.db", NULL}, 1, "tune: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct out o = tune(dir, cases[i].args);
        CHECK_EQ_INT(o.code, cases[i].code);
        CHECK_CONTAINS(o.err, cases[i].msg);
        out_free(&o);
    }
    snprintf(path, sizeof path, "%s/x.html", dir);
    CHECK(access(path, F_OK) != 0);
}

/* ---- the report in a real browser ----------------------------------------------- */
static const char chromium[] = "/usr/bin/chromium";

/* Runs headless Chromium on file `html` with a fresh profile; `what` is "--dump-dom" or
 * "--screenshot=PATH". */
static struct out browse(const char *dir, const char *html, const char *what, int budget_ms)
{
    char prof[4300], url[4400], budget[64];
    snprintf(prof, sizeof prof, "%s/chromium-profile-XXXXXX", dir);
    if (!mkdtemp(prof)) abort();
    char pdir[4400];
    snprintf(pdir, sizeof pdir, "--user-data-dir=%s", prof);
    snprintf(url, sizeof url, "file://%s", html);
    snprintf(budget, sizeof budget, "--virtual-time-budget=%d", budget_ms);
    const char *av[] = {chromium,
                        "--headless",
                        "--no-sandbox",
                        "--disable-gpu",
                        "--no-first-run",
                        "--disable-background-networking",
                        "--disable-component-update",
                        "--disable-sync",
                        pdir,
                        "--hide-scrollbars",
                        "--window-size=1400,2000",
                        budget,
                        what,
                        url,
                        NULL};
    static const char *const env[] = {"COLUMNS", NULL};
    struct out o = run_env(dir, av, env, 240);
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", prof);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", prof);
    return o;
}

/* The value of attribute `name` on the dumped page's <body>, or -1. */
static long body_attr(const char *dom, const char *name)
{
    const char *b = strstr(dom, "<body");
    if (!b) return -1;
    const char *end = strchr(b, '>');
    char pat[64];
    snprintf(pat, sizeof pat, " %s=\"", name);
    const char *a = strstr(b, pat);
    if (!a || (end && a > end)) return -1;
    return strtol(a + strlen(pat), NULL, 10);
}

/* The drawn legend of the parallel coordinates (the page's script holds its words too):
 * a new string, "" when there is none. */
static char *parallel_legend(const char *dom)
{
    const char *a = strstr(dom, "id=\"parallel-legend\">");
    const char *e = a ? strstr(a, "</div>") : NULL;
    return a && e ? strndup(a, (size_t)(e - a)) : strdup("");
}

/* Checks the report drawn by Chromium: every curve, every row, no script error. */
static void check_rendered(const char *dir, const char *html, long trials, long with_results,
                           long params, int budget_ms, double *secs)
{
    struct out o = browse(dir, html, "--dump-dom", budget_ms);
    if (secs) *secs = o.secs;
    CHECK_EQ_INT(o.code, 0);
    if (body_attr(o.out, "data-ready") != 1) {
        const char *b = strstr(o.out, "<body");
        fprintf(stderr, "page not drawn: %.400s\nchromium: %.2000s\n", b ? b : o.out, o.err);
    }
    CHECK_EQ_INT(body_attr(o.out, "data-ready"), 1);
    CHECK_EQ_INT(body_attr(o.out, "data-errors"), 0);
    CHECK_EQ_INT(body_attr(o.out, "data-curves"), with_results);
    CHECK_EQ_INT(body_attr(o.out, "data-trials-with-results"), with_results);
    CHECK_EQ_INT(body_attr(o.out, "data-rows"), trials);
    CHECK_EQ_INT(body_attr(o.out, "data-scatters"), params);
    CHECK(body_attr(o.out, "data-parallel") > 0);
    CHECK_EQ_INT(body_attr(o.out, "data-rows-shown"), trials < 200 ? trials : 200);
    const char *b = strstr(o.out, "<body"), *e = b ? strstr(b, " data-last-error=") : NULL;
    if (e && e < strchr(b, '>')) fprintf(stderr, "page error: %.300s\n", e);
    fprintf(stderr, "chromium drew the report in %.2f s (page script %ld ms)\n", o.secs,
            body_attr(o.out, "data-render-ms"));
    out_free(&o);
}

TEST(report_renders_in_chromium)
{
    if (access(chromium, X_OK) != 0) SKIP("no /usr/bin/chromium (apt-get install chromium)");
    char dir[4096], html[4300], png[4300];
    fresh_dir(dir, sizeof dir, "chromium");
    run_asha(dir, "asha1");
    const char *a[] = {"report", "asha1", "-o", "report.html", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    snprintf(html, sizeof html, "%s/report.html", dir);
    long with = (long)db_int(dir, "SELECT count(DISTINCT trial_id) FROM results_current"
                                  " WHERE metric IS NOT NULL");
    check_rendered(dir, html, 20, with, 3, 10000, NULL);
    o = browse(dir, html, "--dump-dom", 10000);
    CHECK_EQ_INT(body_attr(o.out, "data-lineage"), 0); /* no PBT, no lineage section */
    CHECK_EQ_INT(body_attr(o.out, "data-exploits"), 0);
    CHECK_CONTAINS(o.out, "<section class=\"card\" id=\"sec-pbt\" hidden=\"\">");
    /* one objective: no Pareto front section */
    CHECK_CONTAINS(o.out, "<section class=\"card\" id=\"sec-front\" hidden=\"\">");
    CHECK_EQ_INT(body_attr(o.out, "data-front"), -1);
    /* one objective: the best trials by it, the best the thick line */
    CHECK_CONTAINS(o.out, "id=\"parallel-title\">Best trials, parallel coordinates<");
    char *legend = parallel_legend(o.out);
    CHECK_CONTAINS(legend,
                   " trials by their last loss (min), best first; the best is the thick line");
    free(legend);
    out_free(&o);
    /* A screenshot, for people to look at (the file stays in the build tree). */
    snprintf(png, sizeof png, "%s/report.png", dir);
    char shot[4400];
    snprintf(shot, sizeof shot, "--screenshot=%s", png);
    o = browse(dir, html, shot, 10000);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char *img = slurp(png);
    struct stat sb;
    CHECK(stat(png, &sb) == 0 && sb.st_size > 20000);
    CHECK(memcmp(img, "\x89PNG\r\n\x1a\n", 8) == 0);
    free(img);
    fprintf(stderr, "screenshot: %s\n", png);

    /* The checks above can fail: a page whose data lack the trials, and one that only
     * complains on the console, are both counted as broken. */
    char *page = slurp(html);
    char *at = strstr(page, "\"trials\":[");
    REQUIRE(at);
    memcpy(at, "\"trialz\"", 8);
    char bad[4300];
    snprintf(bad, sizeof bad, "%s/broken.html", dir);
    write_file(bad, page);
    o = browse(dir, bad, "--dump-dom", 10000);
    CHECK_EQ_INT(o.code, 0);
    CHECK(body_attr(o.out, "data-ready") != 1);
    CHECK(body_attr(o.out, "data-errors") >= 1);
    out_free(&o);
    memcpy(at, "\"trials\"", 8);
    char *end = strstr(page, "</body>");
    REQUIRE(end);
    *end = 0;
    snprintf(bad, sizeof bad, "%s/noisy.html", dir);
    FILE *f = fopen(bad, "w");
    REQUIRE(f);
    fprintf(f, "%s<script>console.error('noisy');</script></body></html>\n", page);
    fclose(f);
    o = browse(dir, bad, "--dump-dom", 10000);
    CHECK_EQ_INT(body_attr(o.out, "data-ready"), 1);
    CHECK_EQ_INT(body_attr(o.out, "data-errors"), 1);
    CHECK_CONTAINS(o.out, "data-last-error=\"noisy\"");
    out_free(&o);
    free(page);
}

/* ---- several objectives (issue 30) ------------------------------------------------- */
TEST(report_draws_the_pareto_front_in_chromium)
{
    if (access(chromium, X_OK) != 0) SKIP("no /usr/bin/chromium (apt-get install chromium)");
    char dir[4096], html[4300];
    fresh_dir(dir, sizeof dir, "pareto");
    /* three objectives, gpu <= 16: 0, 1 and 4 are the front, 2 is dominated by 0, 3 beats
     * everyone but is over the limit; each trial echoes its one result */
    static const char *const r[] = {"{\"loss\": 1, \"lat\": 5, \"mem\": 3, \"gpu\": 8}",
                                    "{\"loss\": 2, \"lat\": 2, \"mem\": 4, \"gpu\": 8}",
                                    "{\"loss\": 3, \"lat\": 6, \"mem\": 5, \"gpu\": 8}",
                                    "{\"loss\": 0.5, \"lat\": 1, \"mem\": 1, \"gpu\": 20}",
                                    "{\"loss\": 1.5, \"lat\": 4, \"mem\": 2, \"gpu\": 8}"};
    cJSON *sp = cJSON_Parse("{\"name\": \"mo3\", \"metric\": [\"loss\", \"lat\", \"mem\"],"
                            " \"mode\": [\"min\", \"min\", \"min\"], \"max_concurrent\": 1,"
                            " \"constraints\": {\"gpu\": {\"<=\": 16}},"
                            " \"command\": [\"/bin/echo\", \"{r}\"],"
                            " \"space\": {\"r\": {\"grid_search\": []}}}");
    REQUIRE(sp);
    cJSON *grid = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(sp, "space"), "r"),
                                      "grid_search");
    for (size_t i = 0; i < 5; i++)
        cJSON_AddItemToArray(grid, cJSON_CreateString(r[i]));
    char *text = cJSON_Print(sp);
    cJSON_Delete(sp);
    space_file(dir, text);
    free(text);
    const char *run[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = tune(dir, run);
    REQUIRE(o.code == 0);
    out_free(&o);
    const char *a[] = {"report", "mo3", "-o", "report.html", NULL};
    o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    snprintf(html, sizeof html, "%s/report.html", dir);
    o = browse(dir, html, "--dump-dom", 10000);
    CHECK_EQ_INT(o.code, 0);
    CHECK_EQ_INT(body_attr(o.out, "data-ready"), 1);
    CHECK_EQ_INT(body_attr(o.out, "data-errors"), 0);
    CHECK_EQ_INT(body_attr(o.out, "data-front"), 3);
    CHECK_EQ_INT(body_attr(o.out, "data-front-charts"), 3); /* a chart per pair */
    CHECK_EQ_INT(body_attr(o.out, "data-front-drawn"), 3);
    CHECK_EQ_INT(body_attr(o.out, "data-infeasible-drawn"), 3); /* trial 3, on each chart */
    CHECK_EQ_INT(body_attr(o.out, "data-hv-points"), 5);
    /* the parallel coordinates highlight the front (its 3 trials), an axis for the one
     * parameter and one per objective; no "best" by the first objective */
    CHECK_EQ_INT(body_attr(o.out, "data-parallel"), 3);
    CHECK_EQ_INT(body_attr(o.out, "data-parallel-axes"), 4);
    CHECK_CONTAINS(o.out, "id=\"parallel-title\">The Pareto front, parallel coordinates<");
    CHECK_CONTAINS(o.out, "<label class=\"check\" style=\"display: none;\">show the best");
    char *legend = parallel_legend(o.out);
    CHECK_CONTAINS(legend, "the 3 trials on the Pareto front, in the order tune best prints them "
                           "(by loss (min), then trial)");
    CHECK(!strstr(legend, "thick line"));
    free(legend);
    CHECK(!strstr(o.out, "id=\"sec-front\" hidden"));
    /* the reference point and its rule are said under the chart */
    CHECK_CONTAINS(o.out, "against the reference point (loss 3.25, lat 6.5, mem 5.4)");
    CHECK_CONTAINS(o.out, "plus 10% of their range");
    out_free(&o);
    /* the page holds no address to fetch anything from */
    char *page = slurp(html);
    CHECK(!strstr(page, "http://") && !strstr(page, "https://"));
    free(page);
}

/* ---- Population Based Training's lineage in the report --------------------------- */
/* A PBT experiment written through the store as the loop writes one: 4 trials, 12
 * iterations, four exploits, each a donor's lr perturbed: trial 3 takes trial 1's
 * checkpoint at iteration 4 (lr 0.01 -> 0.012); at 8, trial 3 takes trial 1's checkpoint
 * of iteration 6 (-> 0.011), then trial 2 takes trial 3's own checkpoint of 8, written by
 * trial 3's attempt 2 before that (0.012 -> 0.0096), and trial 0 takes trial 1's (0.01 ->
 * 0.0144). Each exploited trial's earlier attempts stay behind; trial 2 ends best. So the
 * best trial's weights were trained in trial_00001 (to 4), trial_00003 (to 8, not with
 * the 0.011 of its later exploit) and trial_00002 (to 12), with lr 0.01, 0.012, 0.0096. */
static double pbt_loss(int trial, int attempt, int it)
{
    static const double floor1[4] = {0.5, 0.30, 0.7, 0.6}, floor2[4] = {0.29, 0, 0.25, 0.28};
    return 1 / sqrt(it) + (attempt == 1 ? floor1[trial] : floor2[trial]);
}

static void make_pbt_db(const char *db)
{
    char err[512];
    store_t *st = NULL;
    if (store_open(db, 0, &st, err, sizeof err) != 0) abort();
    static const char settings[] =
        "{\"name\":\"pbt\",\"metric\":\"loss\",\"mode\":\"min\",\"num_samples\":4,"
        "\"max_concurrent\":0,\"seed\":0,\"command\":[\"trial\"],"
        "\"resources\":{\"gpus_per_trial\":0,\"cpus_per_trial\":1},"
        "\"scheduler\":{\"type\":\"pbt\",\"time_attr\":\"training_iteration\",\"max_t\":12,"
        "\"perturbation_interval\":4,\"quantile_fraction\":0.25},"
        "\"num_trials\":4,\"params\":[{\"name\":\"lr\",\"kind\":\"loguniform\"},"
        "{\"name\":\"momentum\",\"kind\":\"uniform\"}]}";
    store_experiment_t ex = {.name = "pbt",
                             .space_text = "{}",
                             .settings_json = settings,
                             .metric = "loss",
                             .scheduler = "pbt",
                             .results_dir = "/tmp",
                             .num_trials = 4};
    int64_t eid, tid[4];
    double now = (double)time(NULL) - 600;
    if (store_experiment_create(st, &ex, now, &eid, err, sizeof err) != 0) abort();
    if (store_begin(st, err, sizeof err) != 0) abort();
    static const double lr0[4] = {0.1, 0.01, 0.001, 0.0001};
    /* the exploits in the order recorded: trial, at (its iteration), donor, the donor's
     * iteration and the attempt that wrote its checkpoint, new lr */
    static const struct {
        int t, at, d, dit, da;
        double lr;
    } X[4] = {{3, 4, 1, 4, 1, 0.012},
              {3, 8, 1, 6, 1, 0.011},
              {2, 8, 3, 8, 2, 0.0096},
              {0, 8, 1, 8, 1, 0.0144}};
    double lr_now[4];
    for (int i = 0; i < 4; i++) {
        char name[32], cfg[128];
        snprintf(name, sizeof name, "trial_%05d", i);
        snprintf(cfg, sizeof cfg, "{\"lr\":%.17g,\"momentum\":0.9}", lr0[i]);
        if (store_trial_create(st, eid, i, name, cfg, "/tmp", &tid[i], err, sizeof err) != 0)
            abort();
        lr_now[i] = lr0[i];
    }
    /* results in time order: iteration by iteration, each trial in its attempt then */
    int attempt[4] = {1, 1, 1, 1};
    for (int it = 1; it <= 12; it++) {
        for (int i = 0; i < 4; i++) {
            double loss = pbt_loss(i, attempt[i], it);
            char js[128];
            int n = snprintf(js, sizeof js, "{\"training_iteration\":%d,\"loss\":%.17g}", it, loss);
            store_result_t r = {.trial_id = tid[i],
                                .attempt = attempt[i],
                                .iteration = it,
                                .time_value = it,
                                .metric = loss,
                                .wall_time = now + it,
                                .json = js,
                                .json_len = (size_t)n};
            if (store_result_add(st, &r, err, sizeof err) != 0) abort();
        }
        for (int k = 0; k < 4; k++) {
            if (X[k].at != it) continue;
            int t = X[k].t, d = X[k].d;
            char old_cfg[128], new_cfg[128], ck[96], rf[96];
            snprintf(old_cfg, sizeof old_cfg, "{\"lr\":%.17g,\"momentum\":0.9}", lr_now[t]);
            snprintf(new_cfg, sizeof new_cfg, "{\"lr\":%.17g,\"momentum\":0.9}", X[k].lr);
            snprintf(ck, sizeof ck, "/r/trial_%05d/checkpoints/checkpoint_%06d.bin", d, X[k].dit);
            snprintf(rf, sizeof rf, "/r/trial_%05d/resume/attempt_%d/checkpoint_%06d.bin", t,
                     attempt[t] + 1, X[k].dit);
            store_lineage_t l = {.experiment_id = eid,
                                 .trial_id = tid[t],
                                 .attempt = attempt[t] + 1,
                                 .iteration = it,
                                 .time_value = it,
                                 .donor_trial_id = tid[d],
                                 .donor_attempt = X[k].da,
                                 .donor_iteration = X[k].dit,
                                 .donor_time_value = X[k].dit,
                                 .donor_checkpoint = ck,
                                 .resume_from = rf,
                                 .old_config = old_cfg,
                                 .new_config = new_cfg,
                                 .explore = "{\"lr\":\"perturbed\"}",
                                 .value = pbt_loss(t, attempt[t], it),
                                 .donor_value = pbt_loss(d, X[k].da, X[k].dit),
                                 .wall_time = now + it};
            if (store_lineage_add(st, &l, err, sizeof err) != 0) {
                fprintf(stderr, "%s\n", err);
                abort();
            }
            if (store_trial_set_config(st, tid[t], new_cfg, err, sizeof err) != 0) abort();
            attempt[t]++;
            lr_now[t] = X[k].lr;
            store_trial_update_t u = {.fields = STORE_TU_ATTEMPT, .attempt = attempt[t]};
            if (store_trial_update(st, tid[t], &u, err, sizeof err) != 0) abort();
        }
    }
    for (int i = 0; i < 4; i++) {
        store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_STARTED | STORE_TU_ENDED |
                                            STORE_TU_EXIT | STORE_TU_SLICE,
                                  .status = "TERMINATED",
                                  .slice = "cpu",
                                  .started_at = now,
                                  .ended_at = now + 13,
                                  .exit_code = 0};
        if (store_trial_update(st, tid[i], &u, err, sizeof err) != 0) abort();
    }
    if (store_experiment_set_status(st, eid, "FINISHED", now + 13, err, sizeof err) != 0) abort();
    if (store_commit(st, err, sizeof err) != 0) abort();
    store_close(st);
}

/* The report of a PBT run: the lineage in the data, and in Chromium the curves that
 * continue from the donor (one dashed line per exploit, the attempts left behind faded),
 * the best trial's schedule walked back through its donors, and the exploits' table. A
 * report without lineage shows none of it (report_renders_in_chromium). */
TEST(report_draws_pbt_lineage)
{
    char dir[4096], db[4300], html[4300];
    fresh_dir(dir, sizeof dir, "pbt");
    snprintf(db, sizeof db, "%s/tune.db", dir);
    make_pbt_db(db);
    const char *a[] = {"report", "pbt", "-o", "pbt.html", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    if (o.code) fprintf(stderr, "%s\n", o.err);
    out_free(&o);
    snprintf(html, sizeof html, "%s/pbt.html", dir);
    char *page = slurp(html);
    REQUIRE(page);
    CHECK_CONTAINS(page, ",\"lineage\":[{\"t\":3,\"a\":2,\"it\":4,\"x\":4,\"d\":1,\"da\":1,"
                         "\"dit\":4,\"dx\":4,");
    CHECK_CONTAINS(page, "\"old\":{\"lr\":0.0001,\"momentum\":0.9},\"new\":{\"lr\":0.012,"
                         "\"momentum\":0.9},\"ex\":{\"lr\":\"perturbed\"},"
                         "\"dck\":\"/r/trial_00001/checkpoints/checkpoint_000004.bin\","
                         "\"rf\":\"/r/trial_00003/resume/attempt_2/checkpoint_000004.bin\"}");
    /* the attempts left behind: trial 0 and 2 to 8, trial 3 to 4 */
    CHECK_CONTAINS(page, "{\"t\":0,\"a\":1,\"p\":[[1,");
    CHECK_CONTAINS(page, "{\"t\":3,\"a\":1,\"p\":[[1,");
    CHECK(strstr(page, "{\"t\":1,\"a\":") == NULL); /* trial 1 was never exploited */
    CHECK_CONTAINS(page, "\"best\":2,");
    free(page);

    if (access(chromium, X_OK) != 0) SKIP("no /usr/bin/chromium (apt-get install chromium)");
    check_rendered(dir, html, 4, 4, 2, 10000, NULL);
    o = browse(dir, html, "--dump-dom", 10000);
    CHECK_EQ_INT(body_attr(o.out, "data-lineage"), 4);
    CHECK_EQ_INT(body_attr(o.out, "data-earlier"), 4);
    CHECK_EQ_INT(body_attr(o.out, "data-exploits"), 4);
    CHECK_EQ_INT(body_attr(o.out, "data-schedule"), 3);
    CHECK_EQ_INT(body_attr(o.out, "data-schedule-charts"), 2);
    CHECK_CONTAINS(o.out,
                   "Hyperparameter schedule of the best trial, trial_00002 (its weights were "
                   "trained in trial_00001 \u2192 trial_00003 \u2192 trial_00002)");
    CHECK_CONTAINS(o.out, "<tr data-seg=\"1\"><td>start \u2192 4</td><td>trial_00001</td>"
                          "<td class=\"num\">0.01</td>");
    CHECK_CONTAINS(o.out, "<tr data-seg=\"3\"><td>4 \u2192 8</td><td>trial_00003</td>"
                          "<td class=\"num\">0.012</td>");
    CHECK_CONTAINS(o.out, "<tr data-seg=\"2\"><td>8 \u2192 12</td><td>trial_00002</td>"
                          "<td class=\"num\">0.0096</td>");
    CHECK_CONTAINS(o.out, "<td>trial_00000 (attempt 2)</td><td>trial_00001</td>");
    CHECK_CONTAINS(o.out, "lr 0.1 \u2192 0.0144"); /* its own lr before, the donor's perturbed */
    out_free(&o);
    char png[4300], shot[4400];
    snprintf(png, sizeof png, "%s/pbt.png", dir);
    snprintf(shot, sizeof shot, "--screenshot=%s", png);
    o = browse(dir, html, shot, 10000);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    fprintf(stderr, "screenshot: %s\n", png);
}

/* ---- diverged trials: the y range of plot and report ------------------------------ */
/* A FIFO experiment of 10 trials, 12 iterations each, written through the store: loss
 * falls from at most 4.25 to about 0.5, except trial 3, which diverges from iteration 6 to
 * 1.2e6, and trial 7, which reports inf from iteration 9. Besides loss each trial's
 * results report acc, lr_now and phase, and trial i reports k0 .. k(i-1) too (k0 by nine
 * trials, ... k8 by one): twelve other values, more than the report's table shows. */
static double div_loss(int i, int it)
{
    if (i == 3 && it >= 6) return 1.2e6 * it / 12;
    if (i == 7 && it >= 9) return INFINITY;
    return 2.0 / sqrt(it) * (1 + 0.1 * i) + 0.05 * i;
}

static void make_diverged_db(const char *db)
{
    char err[512];
    store_t *st = NULL;
    if (store_open(db, 0, &st, err, sizeof err) != 0) abort();
    static const char settings[] =
        "{\"name\":\"div\",\"metric\":\"loss\",\"mode\":\"min\",\"num_samples\":10,"
        "\"max_concurrent\":0,\"seed\":0,\"command\":[\"trial\"],"
        "\"scheduler\":{\"type\":\"fifo\",\"time_attr\":\"training_iteration\"},"
        "\"num_trials\":10,\"params\":[{\"name\":\"lr\",\"kind\":\"loguniform\"}]}";
    store_experiment_t ex = {.name = "div",
                             .space_text = "{}",
                             .settings_json = settings,
                             .metric = "loss",
                             .scheduler = "fifo",
                             .results_dir = "/tmp",
                             .num_trials = 10};
    int64_t eid, tid;
    double now = (double)time(NULL) - 600;
    if (store_experiment_create(st, &ex, now, &eid, err, sizeof err) != 0) abort();
    if (store_begin(st, err, sizeof err) != 0) abort();
    for (int i = 0; i < 10; i++) {
        char name[32], cfg[64];
        snprintf(name, sizeof name, "trial_%05d", i);
        snprintf(cfg, sizeof cfg, "{\"lr\":%g}", 0.001 * (i + 1));
        if (store_trial_create(st, eid, i, name, cfg, "/tmp", &tid, err, sizeof err) != 0) abort();
        for (int it = 1; it <= 12; it++) {
            double loss = div_loss(i, it);
            char js[512], lv[32];
            if (isinf(loss))
                snprintf(lv, sizeof lv, "1e999");
            else
                snprintf(lv, sizeof lv, "%.17g", loss);
            int n =
                snprintf(js, sizeof js,
                         "{\"training_iteration\":%d,\"loss\":%s,\"acc\":%g,\"lr_now\":%g,"
                         "\"phase\":\"%s\"",
                         it, lv, 0.5 + 0.01 * it, 0.001 * (i + 1) / it, it < 6 ? "warm" : "cool");
            for (int k = 0; k < i; k++)
                n += snprintf(js + n, sizeof js - (size_t)n, ",\"k%d\":%d", k, k * 10 + it);
            n += snprintf(js + n, sizeof js - (size_t)n, "}");
            store_result_t r = {.trial_id = tid,
                                .attempt = 1,
                                .iteration = it,
                                .time_value = it,
                                .metric = loss,
                                .wall_time = now + it,
                                .json = js,
                                .json_len = (size_t)n};
            if (store_result_add(st, &r, err, sizeof err) != 0) {
                fprintf(stderr, "%s\n", err);
                abort();
            }
        }
        store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_STARTED | STORE_TU_ENDED |
                                            STORE_TU_EXIT | STORE_TU_SLICE,
                                  .status = "TERMINATED",
                                  .slice = "cpu",
                                  .started_at = now,
                                  .ended_at = now + 13,
                                  .exit_code = 0};
        if (store_trial_update(st, tid, &u, err, sizeof err) != 0) abort();
    }
    if (store_experiment_set_status(st, eid, "FINISHED", now + 13, err, sizeof err) != 0) abort();
    if (store_commit(st, err, sizeof err) != 0) abort();
    store_close(st);
}

/* The value of the plot's top y label (the first line with "┤"). */
static double top_label(const char *plot)
{
    const char *t = strstr(plot, "┤");
    if (!t) return NAN;
    const char *p = t;
    while (p > plot && p[-1] != '\n')
        p--;
    return strtod(p, NULL);
}

/* Before, the 1.2e6 of trial 3 set the scale: every other curve was squashed into the
 * bottom of the chart (on an automatic log axis, chosen because of the 1.2e6 alone), and
 * inf was dropped without a word. Now the range is the bulk's; what lies outside is an
 * edge marker, and the trials are named. */
TEST(plot_range_is_the_bulk_and_names_what_lies_outside)
{
    char dir[4096], db[4300];
    fresh_dir(dir, sizeof dir, "plot_diverged");
    snprintf(db, sizeof db, "%s/tune.db", dir);
    make_diverged_db(db);
    const char *a[] = {"plot", "div", "--width", "100", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    check_plot_width(o.out, 100);
    double top = top_label(o.out);
    CHECK(top > 3.5 && top < 6); /* the highest kept value is 4.25 (trial 9's first) */
    CHECK_CONTAINS(o.out, "x: training_iteration, y: loss   "); /* linear: the bulk spans < 10x */
    CHECK_CONTAINS(o.out, "  ▲ 2 trials go above the chart: trial_00007 (max inf), trial_00003 "
                          "(max 1.2e+06)\n");
    CHECK_CONTAINS(o.out, "--ylim full spans every");
    CHECK(strstr(o.out, "below the chart") == NULL);
    int marks = 0; /* a ▲ on the top row where each leaves it */
    const char *row0 = strstr(o.out, "┤");
    const char *nl = row0 ? strchr(row0, '\n') : NULL;
    for (const char *p = row0; p && p < nl; p++)
        marks += strncmp(p, "▲", strlen("▲")) == 0;
    CHECK(marks >= 2);
    out_free(&o);

    /* --ylim full: every finite value (the old chart); inf still has no place */
    const char *f[] = {"plot", "--ylim", "full", "--y", "linear", "--width", "100", NULL};
    o = tune(dir, f);
    CHECK_EQ_INT(o.code, 0);
    CHECK(top_label(o.out) > 1e6);
    CHECK_CONTAINS(o.out, "▲ 1 trial goes above the chart: trial_00007 (max inf)");
    CHECK(strstr(o.out, "--ylim full spans") == NULL);
    out_free(&o);
    /* a range set by hand: everything over 1 is outside, the farthest named first */
    const char *s[] = {"plot", "--ylim", "0:1", "--width", "100", NULL};
    o = tune(dir, s);
    CHECK_EQ_INT(o.code, 0);
    CHECK(top_label(o.out) <= 1.0);
    CHECK_CONTAINS(o.out, "▲ 10 trials go above the chart: trial_00007 (max inf), trial_00003 "
                          "(max 1.2e+06), trial_00009 (max\n    4.25), trial_00008 (max 4),");
    CHECK_CONTAINS(o.out, "and 2 more");
    out_free(&o);
    /* a log axis asked for: its range is the bulk's too */
    const char *l[] = {"plot", "--y", "log", "--width", "100", NULL};
    o = tune(dir, l);
    CHECK_EQ_INT(o.code, 0);
    CHECK(top_label(o.out) < 10);
    CHECK_CONTAINS(o.out, "y: loss (log)");
    CHECK_CONTAINS(o.out, "2 trials go above the chart");
    out_free(&o);
    /* one trial in tune show: its own curve's bulk, which for trial 3 is mostly diverged
     * (7 of its 12 points), so all of it is drawn, on a log axis; a range set by hand
     * leaves the 1.2e6 out */
    const char *sh[] = {"show", "3", "--lines", "0", NULL};
    o = tune(dir, sh);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "y: loss (log)");
    CHECK(strstr(o.out, "above the chart") == NULL);
    out_free(&o);
    const char *sh2[] = {"show", "3", "--lines", "0", "--ylim", "0:3", NULL};
    o = tune(dir, sh2);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "▲ 1 trial goes above the chart: trial_00003 (max 1.2e+06)");
    out_free(&o);
    /* bad values are usage errors that say what --ylim takes */
    static const char *const bad[] = {"3:1", "1:", ":2", "a:b", "1", "0:inf", "log"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *b[] = {"plot", "--ylim", bad[i], NULL};
        o = tune(dir, b);
        CHECK_EQ_INT(o.code, 2);
        char want[200];
        snprintf(want, sizeof want,
                 "tune: plot: --ylim wants auto, full or LO:HI (two numbers, LO below HI, e.g. "
                 "0:2.5), got \"%s\"",
                 bad[i]);
        CHECK_CONTAINS(o.err, want);
        out_free(&o);
    }
    const char *r[] = {"report", "--ylim", "2:2", NULL};
    o = tune(dir, r);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "tune: report: --ylim wants auto, full or LO:HI");
    out_free(&o);
}

/* The report's curves take the same range (in its data, and drawn with the diverged
 * trials as markers on the edge and named under the chart), and its trial table shows
 * the other values each trial reported last: at most 8 columns, those the most trials
 * report, in the order first reported; the rest named. Before, the range came from
 * every value (the 1.2e6) and the table had no reported value but the metric. */
TEST(report_range_and_table_show_diverged_trials_and_every_reported_value)
{
    char dir[4096], db[4300], html[4300];
    fresh_dir(dir, sizeof dir, "report_diverged");
    snprintf(db, sizeof db, "%s/tune.db", dir);
    make_diverged_db(db);
    const char *a[] = {"report", "div", "-o", "div.html", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    snprintf(html, sizeof html, "%s/div.html", dir);
    char *page = slurp(html);
    REQUIRE(page);
    cJSON *d = report_blob(page);
    REQUIRE(d);
    cJSON *yr = cJSON_GetObjectItem(d, "yrange");
    REQUIRE(yr);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(yr, "ylim")), "auto");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItem(yr, "ylog")));
    cJSON *lin = cJSON_GetObjectItem(yr, "lin");
    CHECK_NEAR(cJSON_GetObjectItem(lin, "hi")->valuedouble, div_loss(9, 1), 1e-6);
    CHECK(cJSON_GetObjectItem(lin, "lo")->valuedouble > 0.4);
    CHECK_EQ_INT(cJSON_GetObjectItem(lin, "nabove")->valueint, 2);
    CHECK_EQ_INT(cJSON_GetObjectItem(lin, "nbelow")->valueint, 0);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(lin, "above_note")),
              "2 trials go above the chart: trial_00007 (max inf), trial_00003 (max 1.2e+06)");
    cJSON *lg = cJSON_GetObjectItem(yr, "log");
    CHECK(cJSON_GetObjectItem(lg, "hi")->valuedouble < 10);
    /* inf is a point above the chart, not a missing one */
    cJSON *y7 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "trials"), 7), "y");
    CHECK(isinf(cJSON_GetArrayItem(y7, 11)->valuedouble));
    /* the other reported values */
    cJSON *x = cJSON_GetObjectItem(d, "extra");
    REQUIRE(x);
    char *keys = cJSON_PrintUnformatted(cJSON_GetObjectItem(x, "keys"));
    char *left = cJSON_PrintUnformatted(cJSON_GetObjectItem(x, "left"));
    CHECK_STR(keys, "[\"acc\",\"lr_now\",\"phase\",\"k0\",\"k1\",\"k2\",\"k3\",\"k4\"]");
    CHECK_STR(left, "[\"k5\",\"k6\",\"k7\",\"k8\"]");
    free(keys);
    free(left);
    cJSON *r9 = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(d, "trials"), 9), "r");
    CHECK_NEAR(cJSON_GetObjectItem(r9, "acc")->valuedouble, 0.62, 1e-9);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(r9, "phase")), "cool");
    CHECK_EQ_INT(cJSON_GetObjectItem(r9, "k4")->valueint, 52);
    CHECK(cJSON_GetObjectItem(r9, "k5") == NULL); /* not a column */
    CHECK(cJSON_GetObjectItem(r9, "loss") == NULL);
    cJSON_Delete(d);
    free(page);
    /* --ylim full keeps every finite value */
    const char *b[] = {"report", "div", "--ylim", "full", "-o", "-", NULL};
    o = tune(dir, b);
    CHECK_EQ_INT(o.code, 0);
    d = report_blob(o.out);
    REQUIRE(d);
    lin = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "yrange"), "lin");
    CHECK_NEAR(cJSON_GetObjectItem(lin, "hi")->valuedouble, 1.2e6, 1);
    CHECK_EQ_INT(cJSON_GetObjectItem(lin, "nabove")->valueint, 1);
    cJSON_Delete(d);
    out_free(&o);

    if (access(chromium, X_OK) != 0) SKIP("no /usr/bin/chromium (apt-get install chromium)");
    check_rendered(dir, html, 10, 10, 1, 10000, NULL);
    o = browse(dir, html, "--dump-dom", 10000);
    CHECK_EQ_INT(body_attr(o.out, "data-clipped"), 2);
    CHECK_EQ_INT(body_attr(o.out, "data-extra-columns"), 8);
    CHECK_CONTAINS(o.out, "2 trials go above the chart: trial_00007 (max inf), trial_00003 "
                          "(max 1.2e+06) (the y range is the curves\u2019 bulk;");
    CHECK_CONTAINS(o.out, ">lr_now<");
    CHECK_CONTAINS(o.out, ">k4<");
    CHECK(strstr(o.out, ">k5<") == NULL);
    CHECK_CONTAINS(o.out, "Not shown (at most 8 such columns, those the most trials report): k5, "
                          "k6, k7, k8;");
    out_free(&o);
    char png[4300], shot[4400];
    snprintf(png, sizeof png, "%s/div.png", dir);
    snprintf(shot, sizeof shot, "--screenshot=%s", png);
    o = browse(dir, html, shot, 10000);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    fprintf(stderr, "screenshot: %s\n", png);
}

/* A real PBT run of tune-train (MLP, CPU, a population of 4 on Fashion-MNIST's first 2,000
 * images, 8 epochs, an exploit possible every 2): each clone's first result says it
 * resumed from the copy tune handed it, at the donor's epoch, with the explored lr in
 * force (learning_rate is printed to 6 digits); the report draws a connector per exploit that has a
 * result after it, the best trial's schedule, and no script error. */
TEST(report_draws_a_tune_train_pbt_run)
{
    e2e_paths();
    if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) != 0)
        SKIP("no Fashion-MNIST (apt-get install dataset-fashion-mnist)");
    char dir[4096], space[4300], html[4300], text[8192];
    fresh_dir(dir, sizeof dir, "pbt_train");
    const char *b = getenv("TUNE_BINARY_DIR");
    snprintf(text, sizeof text,
             "{\"name\": \"pbt_train\", \"metric\": \"val_loss\", \"mode\": \"min\","
             " \"num_samples\": 4, \"seed\": 3,"
             " \"command\": [\"%s/bin/tune-train\", \"--model\", \"mlp\", \"--hidden\", \"32\","
             " \"--threads\", \"1\", \"--train-limit\", \"2000\", \"--val-limit\", \"500\","
             " \"--schedule\", \"constant\", \"--epochs\", \"8\", \"--cache-dir\", \"%s/cache\","
             " \"--lr\", \"{lr}\", \"--momentum\", \"{momentum}\"],"
             " \"resources\": {\"gpus_per_trial\": 0, \"cpus_per_trial\": 1},"
             " \"space\": {\"lr\": {\"loguniform\": [0.0005, 0.5]},"
             " \"momentum\": {\"uniform\": [0.0, 0.95]}},"
             " \"scheduler\": {\"type\": \"pbt\", \"time_attr\": \"training_iteration\","
             " \"perturbation_interval\": 2, \"quantile_fraction\": 0.25,"
             " \"perturbation_factors\": [1.2, 0.8], \"keep_checkpoints\": 2}}",
             b ? b : "..", dir);
    snprintf(space, sizeof space, "%s/space.json", dir);
    write_file(space, text);
    const char *run[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    struct out o = tune(dir, run);
    CHECK_EQ_INT(o.code, 0);
    if (o.code) fprintf(stderr, "%s\n%s\n", o.out, o.err);
    out_free(&o);
    long long nl = db_int(dir, "SELECT count(*) FROM lineage");
    long long mid = db_int(dir, "SELECT count(*) FROM lineage WHERE donor_iteration < 8");
    fprintf(stderr, "%lld exploits, %lld before the last epoch\n", nl, mid);
    CHECK(mid >= 1);
    /* every clone went on from its copy, at the donor's epoch, with its new lr */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM lineage l WHERE l.donor_iteration < 8 AND"
                             " NOT EXISTS (SELECT 1 FROM results_all a WHERE"
                             " a.trial_id = l.trial_id AND a.iteration = l.donor_iteration + 1"
                             " AND json_extract(a.data, '$.resumed.from') = l.resume_from"
                             " AND json_extract(a.data, '$.resumed.epoch') = l.donor_iteration"
                             " AND abs(json_extract(a.data, '$.learning_rate') -"
                             " json_extract(l.new_config, '$.lr')) <="
                             " 1e-5 * json_extract(l.new_config, '$.lr'))"),
                 0);
    const char *a[] = {"report", "pbt_train", "-o", "pbt_train.html", NULL};
    o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    if (access(chromium, X_OK) != 0) SKIP("no /usr/bin/chromium (apt-get install chromium)");
    snprintf(html, sizeof html, "%s/pbt_train.html", dir);
    check_rendered(dir, html, 4, 4, 2, 10000, NULL);
    o = browse(dir, html, "--dump-dom", 10000);
    CHECK_EQ_INT(body_attr(o.out, "data-exploits"), nl);
    CHECK_EQ_INT(body_attr(o.out, "data-lineage"), mid);
    CHECK(body_attr(o.out, "data-schedule") >= 1);
    CHECK_EQ_INT(body_attr(o.out, "data-schedule-charts"), 2);
    out_free(&o);
}

/* tune report and tune plot of 5,000 trials and 100,000 results: every trial is in the
 * report and drawn by it, and the plot names them all. What they cost is measured by
 * bench/report (report_bench), not asserted here: a test on a busy machine checks what
 * happened, never how fast. */
TEST(report_of_5000_trials_holds_and_draws_every_trial)
{
    char dir[4096], db[4300], html[4300];
    fresh_dir(dir, sizeof dir, "big");
    snprintf(db, sizeof db, "%s/tune.db", dir);
    big_experiment_write(db, 5000);
    long long nres = db_int(dir, "SELECT count(*) FROM results");
    CHECK(nres > 50000);
    const char *a[] = {"report", "big", "-o", "big.html", NULL};
    struct out o = tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    char said[128];
    snprintf(said, sizeof said, "wrote big.html (big: 5000 trials, %lld results, ", nres);
    CHECK_CONTAINS(o.err, said);
    out_free(&o);
    snprintf(html, sizeof html, "%s/big.html", dir);
    char *page = slurp(html);
    CHECK_CONTAINS(page, "\"trial_00000\"");
    CHECK_CONTAINS(page, "\"trial_04999\"");
    free(page);
    const char *p[] = {"plot", "big", NULL};
    o = tune(dir, p);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "big: loss (min) of 5000 trials");
    out_free(&o);
    if (access(chromium, X_OK) != 0) SKIP("no /usr/bin/chromium (apt-get install chromium)");
    check_rendered(dir, html, 5000, 5000, 3, 30000, NULL);
    char png[4300], shot[4400];
    snprintf(png, sizeof png, "%s/big.png", dir);
    snprintf(shot, sizeof shot, "--screenshot=%s", png);
    o = browse(dir, html, shot, 30000);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
}

/* ---- the reporting helpers ------------------------------------------------------ */
static char *report_line(void (*fill)(tune_report_t *), int *rc)
{
    tune_report_t r;
    tune_report_begin(&r);
    r.out = tmpfile();
    fill(&r);
    *rc = tune_report_end(&r);
    fseek(r.out, 0, SEEK_SET);
    char *buf = calloc(1, 2 * TUNE_REPORT_MAX);
    size_t n = fread(buf, 1, 2 * TUNE_REPORT_MAX - 1, r.out);
    buf[n] = 0;
    fclose(r.out);
    return buf;
}

static void fill_basic(tune_report_t *r)
{
    tune_report_int(r, "training_iteration", 3);
    tune_report_num(r, "loss", NAN);
    tune_report_num(r, "lr", 0.1);
    tune_report_num(r, "inf", -INFINITY);
    tune_report_str(r, "s", "a\"b\\c\nd");
    tune_report_str(r, "none", NULL);
    tune_report_bool(r, "ok", 1);
}

static void fill_huge(tune_report_t *r)
{
    char key[32];
    for (int i = 0; i < 400; i++) {
        snprintf(key, sizeof key, "metric_%d", i);
        tune_report_num(r, key, i);
    }
}

TEST(c_helper_writes_one_strict_json_line)
{
    int rc;
    unsetenv("RANK");
    char *s = report_line(fill_basic, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_STR(s, "{\"training_iteration\": 3, \"loss\": null, \"lr\": 0.10000000000000001,"
                 " \"inf\": null, \"s\": \"a\\\"b\\\\c\\u000ad\", \"none\": null, \"ok\": true}\n");
    cJSON *j = cJSON_Parse(s);
    REQUIRE(j);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(j, "s")), "a\"b\\c\nd");
    CHECK(cJSON_GetObjectItem(j, "lr")->valuedouble == 0.1);
    cJSON_Delete(j);
    free(s);
    /* Too long: nothing written, and the caller is told. */
    s = report_line(fill_huge, &rc);
    CHECK_EQ_INT(rc, -1);
    CHECK_STR(s, "");
    free(s);
    /* Only rank 0 writes. */
    setenv("RANK", "1", 1);
    s = report_line(fill_basic, &rc);
    CHECK_EQ_INT(rc, 0);
    CHECK_STR(s, "");
    free(s);
    setenv("RANK", "0", 1);
    s = report_line(fill_basic, &rc);
    CHECK_CONTAINS(s, "\"training_iteration\": 3");
    free(s);
    unsetenv("RANK");
}

/* Runs a 2-trial experiment of `prog` and checks what the helper reported. */
static void helper_under_tune(const char *name, const char *const *cmd)
{
    char dir[4096], sp[8192], path[4300], cmdjs[4096] = "";
    fresh_dir(dir, sizeof dir, name);
    for (int i = 0; cmd[i]; i++) {
        size_t k = strlen(cmdjs);
        snprintf(cmdjs + k, sizeof cmdjs - k, "%s\"%s\"", i ? ", " : "", cmd[i]);
    }
    snprintf(sp, sizeof sp,
             "{\"name\": \"%s\", \"metric\": \"loss\", \"num_samples\": 1,"
             " \"command\": [%s, \"--lr\", \"{lr}\", \"--iters\", \"5\"],"
             " \"space\": {\"lr\": {\"grid_search\": [0.01, 0.1]}}}",
             name, cmdjs);
    snprintf(path, sizeof path, "%s/space.json", dir);
    write_file(path, sp);
    const char *r[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    struct out o = tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    if (o.code) fprintf(stderr, "%s%s\n", o.out, o.err);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 10);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE metric IS NULL"), 0);
    /* NaN went out as null: the first result of each trial has no accuracy. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"
                             " WHERE json_type(data, '$.accuracy') = 'null'"),
                 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE iteration = 1"
                             " AND json_type(data, '$.accuracy') = 'null'"),
                 2);
    CHECK_NEAR(db_real(dir, "SELECT min(metric) FROM results"), 0.1 + 1 / sqrt(5), 1e-12);
}

TEST(c_helper_trial_runs_under_tune)
{
    e2e_paths();
    const char *cmd[] = {g_report_trial, NULL};
    helper_under_tune("c_helper", cmd);
}

TEST(python_helper_trial_runs_under_tune)
{
    e2e_paths();
    if (access("/usr/bin/python3", X_OK) != 0) SKIP("no /usr/bin/python3");
    char script[4200];
    snprintf(script, sizeof script, "%s/examples/report_helpers/trial.py", g_src);
    const char *cmd[] = {"/usr/bin/python3", script, NULL};
    helper_under_tune("py_helper", cmd);

    /* NaN and infinities become null; numbers stay exact; only rank 0 writes. */
    char dir[4096], code[8192];
    fresh_dir(dir, sizeof dir, "py_helper_unit");
    snprintf(code, sizeof code,
             "import sys; sys.path.insert(0, '%s/python'); import tune_report;"
             "w = tune_report.report(training_iteration=1, loss=float('nan'), lr=0.1,"
             " inf=float('inf'), s='a\"b', ok=True, l=[1.5, float('-inf')]);"
             "print('written' if w else 'skipped', file=sys.stderr)",
             g_src);
    const char *av[] = {"/usr/bin/python3", "-c", code, NULL};
    const char *env0[] = {"RANK", NULL}, *env1[] = {"RANK=1", NULL};
    struct out o = run_env(dir, av, env0, 60);
    CHECK_EQ_INT(o.code, 0);
    CHECK_STR(o.out, "{\"training_iteration\": 1, \"loss\": null, \"lr\": 0.1, \"inf\": null,"
                     " \"s\": \"a\\\"b\", \"ok\": true, \"l\": [1.5, null]}\n");
    CHECK_CONTAINS(o.err, "written");
    out_free(&o);
    o = run_env(dir, av, env1, 60);
    CHECK_EQ_INT(o.code, 0);
    CHECK_STR(o.out, "");
    CHECK_CONTAINS(o.err, "skipped");
    out_free(&o);
}

/* ---- docs/queries.md ------------------------------------------------------------ */
/* The experiments docs/queries.md is written against: examples/fmnist_asha/space.json
 * with the built-in trainer on a slice of the data (a second or two), and a second
 * experiment with a trial that fails. */
static void make_docs_db(const char *dir)
{
    static const char asha[] =
        "{\"name\": \"fmnist-asha\", \"metric\": \"val_loss\", \"mode\": \"min\","
        " \"num_samples\": 12, \"max_concurrent\": 2, \"seed\": 0,"
        " \"command\": [\"tune-train\", \"--model\", \"mlp\", \"--device\", \"cpu\","
        "   \"--epochs\", \"9\", \"--lr\", \"{lr}\", \"--batch-size\", \"{batch_size}\","
        "   \"--momentum\", \"{momentum}\", \"--hidden\", \"{hidden}\","
        "   \"--train-limit\", \"1000\", \"--val-limit\", \"500\"],"
        " \"resources\": {\"gpus_per_trial\": 0, \"cpus_per_trial\": 1},"
        " \"scheduler\": {\"type\": \"asha\", \"time_attr\": \"training_iteration\","
        "   \"max_t\": 9, \"grace_period\": 1, \"reduction_factor\": 3},"
        " \"space\": {\"lr\": {\"loguniform\": [1e-4, 0.5]},"
        "   \"batch_size\": {\"choice\": [32, 64, 128, 256]},"
        "   \"momentum\": {\"uniform\": [0.5, 0.99]}, \"hidden\": {\"choice\": [64, 128, 256]}}}";
    static const char fifo[] =
        "{\"name\": \"fmnist-fifo\", \"metric\": \"val_loss\", \"num_samples\": 1,"
        " \"command\": [\"tune-train\", \"--epochs\", \"3\", \"--lr\", \"{lr}\","
        "   \"--train-limit\", \"1000\", \"--val-limit\", \"500\"],"
        " \"space\": {\"lr\": {\"grid_search\": [0.05, -1]}}}";
    char path[4300];
    snprintf(path, sizeof path, "%s/asha.json", dir);
    write_file(path, asha);
    snprintf(path, sizeof path, "%s/fifo.json", dir);
    write_file(path, fifo);
    const char *a[] = {"run", "asha.json", "--gpus", "none", "--quiet", NULL};
    const char *b[] = {"run", "fifo.json", "--gpus", "none", "--quiet", NULL};
    struct out o = tune(dir, a);
    if (o.code != 0) fprintf(stderr, "tune run: %s%s\n", o.out, o.err);
    out_free(&o);
    o = tune(dir, b);
    out_free(&o);
}

/* Splits a shell command line of the docs into words: blanks separate, "..." quotes,
 * and a trailing "> FILE" is dropped (the caller reads stdout itself). In place. */
static int split_words(char *line, const char **av, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max - 1) {
        while (*p == ' ')
            p++;
        if (!*p || *p == '>') break;
        if (*p == '"') {
            av[n++] = ++p;
            while (*p && *p != '"')
                p++;
        } else {
            av[n++] = p;
            while (*p && *p != ' ')
                p++;
        }
        if (*p) *p++ = 0;
    }
    av[n] = NULL;
    return n;
}

/* The fenced blocks in `lang` of a Markdown text, cut out in place (each NUL-ended). */
static int fenced_blocks(char *md, const char *lang, char **blocks, int max)
{
    char open[32];
    snprintf(open, sizeof open, "\n```%s\n", lang);
    int n = 0;
    for (char *p = md; n < max && (p = strstr(p, open));) {
        p += strlen(open);
        char *end = strstr(p, "\n```");
        if (!end) break;
        *end = 0;
        blocks[n++] = p;
        p = end + 1;
    }
    return n;
}

TEST(docs_queries_run_against_a_real_database)
{
    char dir[4096], path[4300];
    fresh_dir(dir, sizeof dir, "docs_queries");
    make_docs_db(dir);
    REQUIRE(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'ERROR'") == 1);
    REQUIRE(db_int(dir, "SELECT count(*) FROM trials WHERE early_stopped = 1") > 0);
    snprintf(path, sizeof path, "%s/docs/queries.md", g_src);
    char *md = slurp(path);
    REQUIRE(md[0]);

    /* Every SQL block is one statement that runs and answers with at least one row. */
    char *copy = strdup(md), *blocks[64];
    int nsql = fenced_blocks(copy, "sql", blocks, 64);
    CHECK(nsql >= 8);
    for (int i = 0; i < nsql; i++) {
        const char *a[] = {"query", blocks[i], "--csv", NULL};
        struct out o = tune(dir, a);
        int rows = 0;
        for (const char *p = o.out; (p = strchr(p, '\n')); p++)
            rows++;
        if (o.code != 0 || rows < 2)
            fprintf(stderr, "query %d failed (%d, %d lines):\n%s\n%s%s\n", i, o.code, rows,
                    blocks[i], o.out, o.err);
        CHECK_EQ_INT(o.code, 0);
        CHECK(rows >= 2); /* the header and a row */
        out_free(&o);
    }
    free(copy);

    /* Every tune command of the sh blocks runs and prints something. */
    copy = strdup(md);
    int nsh = fenced_blocks(copy, "sh", blocks, 64), ncmd = 0;
    for (int i = 0; i < nsh; i++) {
        for (char *line = strtok(blocks[i], "\n"); line; line = strtok(NULL, "\n")) {
            if (strncmp(line, "tune ", 5) != 0) continue;
            const char *av[32];
            char *l = strdup(line + 5);
            split_words(l, av, 32);
            struct out o = tune(dir, av);
            if (o.code != 0 || !o.out[0]) fprintf(stderr, "%s: %d\n%s\n", line, o.code, o.err);
            CHECK_EQ_INT(o.code, 0);
            CHECK(o.out[0] != 0);
            out_free(&o);
            free(l);
            ncmd++;
        }
    }
    CHECK(ncmd >= 5);
    free(copy);

    /* Ten questions, each answered. */
    int questions = 0;
    for (int q = 1; q <= 12; q++) {
        char h[16];
        snprintf(h, sizeof h, "\n## %d. ", q);
        questions += strstr(md, h) != NULL;
    }
    CHECK_EQ_INT(questions, 10);
    free(md);
}

TEST(docs_pandas_snippet_runs)
{
    e2e_paths();
    char dir[4096], path[4300];
    fresh_dir(dir, sizeof dir, "docs_pandas");
    if (access("/usr/bin/python3", X_OK) != 0) SKIP("no /usr/bin/python3");
    const char *probe[] = {"/usr/bin/python3", "-c", "import pandas", NULL};
    struct out o = run_env(dir, probe, NULL, 120);
    int have = o.code == 0;
    out_free(&o);
    if (!have) SKIP("/usr/bin/python3 cannot import pandas (apt-get install python3-pandas)");
    make_docs_db(dir);
    snprintf(path, sizeof path, "%s/docs/queries.md", g_src);
    char *md = slurp(path), *blocks[4];
    REQUIRE(fenced_blocks(md, "python", blocks, 4) == 1);
    snprintf(path, sizeof path, "%s/snippet.py", dir);
    write_file(path, blocks[0]);
    const char *av[] = {"/usr/bin/python3", "snippet.py", NULL};
    o = run_env(dir, av, NULL, 120);
    if (o.code) fprintf(stderr, "%s\n", o.err);
    CHECK_EQ_INT(o.code, 0);
    /* The best trial comes first, as tune best says. */
    const char *b[] = {"best", "fmnist-asha", "--json", NULL};
    struct out best = tune(dir, b);
    cJSON *j = cJSON_Parse(best.out);
    REQUIRE(j);
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(j, "name"));
    REQUIRE(name);
    const char *first = strstr(o.out, "trial_");
    CHECK(first && strncmp(first, name, strlen(name)) == 0);
    cJSON_Delete(j);
    out_free(&best);
    out_free(&o);
    free(md);
}

/* The README's five-line examples of the helpers, run as they are written. */
TEST(readme_helper_examples_work)
{
    e2e_paths();
    char dir[4096], path[4300], code[16384];
    fresh_dir(dir, sizeof dir, "readme_helpers");
    snprintf(path, sizeof path, "%s/README.md", g_src);
    char *md = slurp(path);
    char *sec = strstr(md, "\n## Reporting from your own program\n");
    REQUIRE(sec);
    char *py[2], *c[2], *sec2 = strdup(sec); /* each search cuts the text it searches */
    REQUIRE(fenced_blocks(sec, "python", py, 1) == 1);
    REQUIRE(fenced_blocks(sec2, "c", c, 1) == 1);

    /* Python: the helper found where the README's path points, three epochs. */
    if (access("/usr/bin/python3", X_OK) == 0) {
        char *at = strstr(py[0], "/path/to/tune");
        REQUIRE(at);
        *at = 0;
        snprintf(code, sizeof code,
                 "epochs = 3\nacc = 0.5\ndef train_one_epoch():\n    return 0.25\n%s%s%s\n", py[0],
                 g_src, at + strlen("/path/to/tune"));
        snprintf(path, sizeof path, "%s/readme.py", dir);
        write_file(path, code);
        const char *av[] = {"/usr/bin/python3", "readme.py", NULL};
        const char *env[] = {"RANK", NULL};
        struct out o = run_env(dir, av, env, 60);
        CHECK_EQ_INT(o.code, 0);
        CHECK_STR(o.out, "{\"training_iteration\": 1, \"loss\": 0.25, \"accuracy\": 0.5}\n"
                         "{\"training_iteration\": 2, \"loss\": 0.25, \"accuracy\": 0.5}\n"
                         "{\"training_iteration\": 3, \"loss\": 0.25, \"accuracy\": 0.5}\n");
        out_free(&o);
    }

    /* C: inside a loop over epochs, compiled against include/ with the system compiler. */
    snprintf(code, sizeof code,
             "#include \"tune_report.h\"\nint main(void)\n{\n"
             "    for (int epoch = 1; epoch <= 2; epoch++) {\n        double loss = 1.0 / epoch;\n"
             "%s\n    }\n    return 0;\n}\n",
             c[0]);
    snprintf(path, sizeof path, "%s/readme.c", dir);
    write_file(path, code);
    if (access("/usr/bin/cc", X_OK) != 0) SKIP("no /usr/bin/cc to compile the C example");
    char inc[4300];
    snprintf(inc, sizeof inc, "-I%s/include", g_src);
    const char *cc[] = {"/usr/bin/cc", "-std=c11", "-Wall",  "-Wextra", "-Werror", inc,
                        "readme.c",    "-o",       "readme", "-lm",     NULL};
    struct out o = run_env(dir, cc, NULL, 120);
    if (o.code) fprintf(stderr, "%s\n", o.err);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    snprintf(path, sizeof path, "%s/readme", dir);
    const char *run[] = {path, NULL};
    const char *env[] = {"RANK", NULL};
    o = run_env(dir, run, env, 60);
    CHECK_EQ_INT(o.code, 0);
    CHECK_STR(o.out, "{\"training_iteration\": 1, \"loss\": 1}\n"
                     "{\"training_iteration\": 2, \"loss\": 0.5}\n");
    out_free(&o);
    free(sec2);
    free(md);
}

/* ---- the PyTorch user's path ---------------------------------------------------- */
TEST(torch_ddp_example_runs_under_tune)
{
    e2e_paths();
    char dir[4096];
    fresh_dir(dir, sizeof dir, "torch_ddp");
    const char *probe[] = {"/usr/bin/python3", "-c", "import torch, numpy", NULL};
    if (access("/usr/bin/python3", X_OK) != 0) SKIP("no /usr/bin/python3");
    struct out o = run_env(dir, probe, NULL, 120);
    int have = o.code == 0;
    out_free(&o);
    if (!have) SKIP("/usr/bin/python3 cannot import torch (apt-get install python3-torch)");

    /* As the README says: the example's folder on PATH, its space.json as it is. */
    char pathenv[8400], space[4300];
    snprintf(pathenv, sizeof pathenv, "PATH=%s/examples/torch_ddp:%s", g_src,
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    snprintf(space, sizeof space, "%s/examples/torch_ddp/space.json", g_src);
    const char *env[] = {pathenv, "COLUMNS", NULL};
    const char *a[] = {"run", space, "--gpus", "none", "--quiet", NULL};
    o = tune_env(dir, a, env);
    CHECK_EQ_INT(o.code, 0);
    fprintf(stderr, "torch example: %.1f s\n%s", o.secs, o.out);
    if (o.code) fprintf(stderr, "%s\n", o.err);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 4);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 4);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials t WHERE NOT EXISTS"
                             " (SELECT 1 FROM results r WHERE r.trial_id = t.id)"),
                 0);
    /* Rank 0 alone reports: one result per iteration, from a world of two ranks. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM (SELECT trial_id, iteration FROM results"
                             " GROUP BY trial_id, iteration HAVING count(*) > 1)"),
                 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"
                             " WHERE json_extract(data, '$.world_size') IS NOT 2"),
                 0);
    CHECK(db_int(dir, "SELECT max(iteration) FROM results") == 4);
    CHECK(db_real(dir, "SELECT max(json_extract(data, '$.accuracy')) FROM results") > 0.6);
    CHECK(db_int(dir, "SELECT count(*) FROM decisions WHERE rung IS NOT NULL") >= 4);
    /* Each epoch's last result names the checkpoint saved just before it (the trial that
     * ran to max_t has two), the epoch's other results none. */
    CHECK(db_int(dir, "SELECT count(*) FROM results WHERE iteration % 2 = 0 AND"
                      " json_extract(data, '$.checkpoint') LIKE"
                      " '%/checkpoint_' || printf('%06d', iteration) || '.pt'") >= 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE iteration % 2 = 1"
                             " AND json_extract(data, '$.checkpoint') IS NOT NULL"),
                 0);
    /* And the views after the run work on it. */
    const char *s[] = {"show", "0", NULL};
    o = tune(dir, s);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "(experiment torch-ddp-fmnist, trial 0 of 4)");
    CHECK_CONTAINS(o.out, "\"world_size\": 2");
    out_free(&o);
    const char *r[] = {"report", "-o", "torch.html", NULL};
    o = tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
}

/* The value of key in the n-th (from 1) JSON line of text, or NAN. */
static double line_number(const char *text, int n, const char *key)
{
    for (int k = 1; k < n && text; k++)
        if ((text = strchr(text, '\n'))) text++;
    if (!text) return NAN;
    size_t len = strcspn(text, "\n");
    cJSON *j = cJSON_ParseWithLength(text, len);
    cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    cJSON_Delete(j);
    return x;
}

/* The example resumed from its checkpoint (TUNE_RESUME_FROM), as a PBT clone is: with
 * the checkpoint's own configuration it goes on exactly as the run that was never
 * stopped (model and momentum buffers restored), and with another lr and momentum on its
 * command line it trains with those, not with the ones optimizer.load_state_dict brings
 * back, and its first result says what changed. */
TEST(torch_ddp_example_resumes_with_new_config)
{
    e2e_paths();
    char dir[4096];
    fresh_dir(dir, sizeof dir, "torch_ddp_resume");
    if (access("/usr/bin/python3", X_OK) != 0) SKIP("no /usr/bin/python3");
    const char *probe[] = {"/usr/bin/python3", "-c", "import torch, numpy", NULL};
    struct out o = run_env(dir, probe, NULL, 120);
    int have = o.code == 0;
    out_free(&o);
    if (!have) SKIP("/usr/bin/python3 cannot import torch (apt-get install python3-torch)");
    char script[4300], ck_u[4300], ck_same[4300], ck_new[4300], from[4400], env_from[4500];
    snprintf(script, sizeof script, "%s/examples/torch_ddp/ddp_fmnist.py", g_src);
    snprintf(ck_u, sizeof ck_u, "TUNE_CHECKPOINT_DIR=%s/u", dir);
    snprintf(ck_same, sizeof ck_same, "TUNE_CHECKPOINT_DIR=%s/same", dir);
    snprintf(ck_new, sizeof ck_new, "TUNE_CHECKPOINT_DIR=%s/new", dir);
    snprintf(from, sizeof from, "%s/u/checkpoint_000002.pt", dir);
    snprintf(env_from, sizeof env_from, "TUNE_RESUME_FROM=%s", from);
#define ARGS                                                                                       \
    "/usr/bin/python3", script, "--epochs", "2", "--train-size", "600", "--test-size", "300",      \
        "--nproc", "1", "--hidden", "32"
    const char *plain[] = {ARGS, NULL};
    const char *changed[] = {ARGS, "--lr", "0.2", "--momentum", "0.5", NULL};
#undef ARGS
    /* The rank itself, without torchrun's agent (LOCAL_RANK set: the script does not
     * launch torchrun): what is checked is the checkpoint and the resume, and the agent of
     * Debian's torch 1.13 once hung for 300 s at the end of such a run under the ASan
     * pass's load. torch_ddp_example_runs_under_tune runs the example through torchrun. */
#define RANK0 "LOCAL_RANK=0", "RANK=0", "WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1"
    const char *env_u[] = {ck_u,  "MASTER_PORT=29731", "OMP_NUM_THREADS=1",
                           RANK0, "TUNE_RESUME_FROM",  NULL};
    const char *env_same[] = {ck_same, env_from, "MASTER_PORT=29732", "OMP_NUM_THREADS=1",
                              RANK0,   NULL};
    const char *env_new[] = {ck_new, env_from, "MASTER_PORT=29733", "OMP_NUM_THREADS=1",
                             RANK0,  NULL};
#undef RANK0
    struct out u = run_env(dir, plain, env_u, 300);
    CHECK_EQ_INT(u.code, 0);
    if (u.code) fprintf(stderr, "%s\n", u.err);
    CHECK_CONTAINS(u.out, "/u/checkpoint_000002.pt\"}");
    struct out same = run_env(dir, plain, env_same, 300);
    CHECK_EQ_INT(same.code, 0);
    struct out nw = run_env(dir, changed, env_new, 300);
    CHECK_EQ_INT(nw.code, 0);
    if (nw.code) fprintf(stderr, "%s\n", nw.err);
    /* unchanged: iterations 3 and 4 as the run that went on */
    CHECK_EQ_INT((int)line_number(same.out, 1, "training_iteration"), 3);
    for (int i = 1; i <= 2; i++) {
        CHECK_NEAR(line_number(same.out, i, "loss"), line_number(u.out, i + 2, "loss"), 1e-9);
        CHECK_NEAR(line_number(same.out, i, "train_loss"), line_number(u.out, i + 2, "train_loss"),
                   1e-9);
    }
    char want[8600];
    snprintf(want, sizeof want, "\"resumed\": {\"from\": \"%s\", \"epoch\": 1, \"changed\": {}}",
             from);
    CHECK_CONTAINS(same.out, want);
    /* changed: the new values are in force and said so */
    CHECK_EQ_INT((int)line_number(nw.out, 1, "training_iteration"), 3);
    CHECK_NEAR(line_number(nw.out, 1, "lr"), 0.2, 0);
    CHECK_NEAR(line_number(nw.out, 2, "lr"), 0.2, 0);
    snprintf(want, sizeof want,
             "\"resumed\": {\"from\": \"%s\", \"epoch\": 1, \"changed\": {\"lr\": [0.05, 0.2], "
             "\"momentum\": [0.9, 0.5]}}",
             from);
    CHECK_CONTAINS(nw.out, want);
    CHECK(fabs(line_number(nw.out, 2, "loss") - line_number(u.out, 4, "loss")) > 1e-6);
    /* and its checkpoint carries them on, with the momentum buffers */
    char code[9000];
    snprintf(code, sizeof code,
             "import torch; s = torch.load('%s/new/checkpoint_000004.pt');"
             " g = s['optimizer']['param_groups'][0];"
             " print(g['lr'], g['momentum'], len(s['optimizer']['state']), s['epoch'],"
             " s['iteration'])",
             dir);
    const char *show[] = {"/usr/bin/python3", "-c", code, NULL};
    o = run_env(dir, show, NULL, 120);
    CHECK_EQ_INT(o.code, 0);
    CHECK_STR(o.out, "0.2 0.5 4 2 4\n");
    out_free(&o);
    out_free(&u), out_free(&same), out_free(&nw);
}

TT_MAIN
