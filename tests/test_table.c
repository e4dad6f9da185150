/* Unit tests of the live table (cli/table.c): snapshots made up here are rendered at 40,
 * 60, 80 and 120 columns and the text is read back, line by line. What must stay at any
 * width, what gives way first, the line that says what was hidden, the reporter's
 * metric_columns without doubles, and the reported values of a run without a metric.
 * TABLE_SHOW=1 ./test_table prints every table it renders, to read the policy at work.
 * Not for: the table inside a real run (tests/test_cli.c, tests/test_loudly.c). */
#include "tinytest.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* The README's example run: five trials of four parameters, ASHA on val_loss. */
struct example {
    cJSON *cfg[5];
    sched_trial_view_t v[5];
    sched_snapshot_t s;
    cli_table_opts_t o;
};

static const char *const example_params[] = {"lr", "batch_size", "momentum", "hidden"};

static void example_make(struct example *e)
{
    static const char *const cfg[5] = {
        "{\"lr\": 0.038816, \"batch_size\": 128, \"momentum\": 0.52753, \"hidden\": 64}",
        "{\"lr\": 0.0090517, \"batch_size\": 32, \"momentum\": 0.54273, \"hidden\": 128}",
        "{\"lr\": 0.0012345, \"batch_size\": 64, \"momentum\": 0.91234, \"hidden\": 256}",
        "{\"lr\": 0.00051234, \"batch_size\": 16, \"momentum\": 0.12345, \"hidden\": 32}",
        "{\"lr\": 0.077777, \"batch_size\": 256, \"momentum\": 0.33333, \"hidden\": 512}"};
    static const char *const names[5] = {"trial_00000", "trial_00020", "trial_00003", "trial_00004",
                                         "trial_00007"};
    static const sched_trial_status_t st[5] = {SCHED_TRIAL_RUNNING, SCHED_TRIAL_TERMINATED,
                                               SCHED_TRIAL_TERMINATED, SCHED_TRIAL_PENDING,
                                               SCHED_TRIAL_ERROR};
    static const double last[5] = {0.32752, 0.38339, 0.41234, NAN, 0.61234};
    static const double best[5] = {0.32719, 0.38339, 0.40001, NAN, 0.61234};
    static const int64_t iters[5] = {14, 3, 9, 0, 2};
    memset(e, 0, sizeof *e);
    for (int i = 0; i < 5; i++) {
        e->cfg[i] = cJSON_Parse(cfg[i]);
        e->v[i] = (sched_trial_view_t){.trial_no = i,
                                       .name = names[i],
                                       .status = st[i],
                                       .early_stopped = i == 1,
                                       .slice = st[i] == SCHED_TRIAL_PENDING ? "" : "cpu:1",
                                       .config = e->cfg[i],
                                       .iterations = iters[i],
                                       .last_time = (double)iters[i],
                                       .last_metric = last[i],
                                       .best_metric = best[i],
                                       .run_s = st[i] == SCHED_TRIAL_PENDING ? 0 : 19 - i};
    }
    e->s = (sched_snapshot_t){.experiment = "fmnist-asha",
                              .policy = "asha",
                              .searcher = "random",
                              .metric = "val_loss",
                              .trials = e->v,
                              .ntrials = 5,
                              .best_trial = 0,
                              .best_metric = 0.32752,
                              .cpus_used = 2,
                              .cpus_total = 2,
                              .results = 136};
    e->s.counts[SCHED_TRIAL_RUNNING] = 1;
    e->s.counts[SCHED_TRIAL_TERMINATED] = 2;
    e->s.counts[SCHED_TRIAL_PENDING] = 1;
    e->s.counts[SCHED_TRIAL_ERROR] = 1;
    e->s.early_stopped = 1;
    e->o = (cli_table_opts_t){
        .rows = 40, .params = example_params, .nparams = 4, .time_attr = "training_iteration"};
}

static void example_free(struct example *e)
{
    for (int i = 0; i < 5; i++)
        cJSON_Delete(e->cfg[i]);
}

/* The line of t that starts with `start`, in line (empty when there is none). */
static void line_of(const char *t, const char *start, char *line, size_t n)
{
    line[0] = 0;
    for (const char *p = t; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, start, strlen(start)) == 0) {
            const char *eol = strchr(p, '\n');
            snprintf(line, n, "%.*s", (int)(eol ? eol - p : (long)strlen(p)), p);
            return;
        }
}

/* The column names of the table (the line under the header that starts with "trial "). */
static void names_of(const char *t, char *line, size_t n)
{
    line_of(t, "trial ", line, n);
}

/* Every line of t fits in cols display columns. */
static int fits(const char *t, int cols)
{
    int w = 0;
    for (const char *p = t; *p; p++) {
        if (*p == '\n') {
            w = 0;
            continue;
        }
        if (((unsigned char)*p & 0xC0) != 0x80 && ++w > cols) return 0;
    }
    return 1;
}

/* Whether column `name` is among the names (a whole cell between separators). */
static int has_col(const char *names, const char *name)
{
    size_t k = strlen(name);
    for (const char *p = names; (p = strstr(p, name)); p += k) {
        int left = p == names || p[-1] == ' ';
        int right = p[k] == 0 || p[k] == ' ';
        if (left && right) return 1;
    }
    return 0;
}

/* The best trial is named whole: after the counts, or on a line of its own. */
static int has_best(const char *t)
{
    char line[512];
    line_of(t, "Best ", line, sizeof line);
    return strstr(t, "| best trial_00000 val_loss=0.32752\n") ||
           strcmp(line, "Best trial_00000 val_loss=0.32752") == 0;
}

static char *render(struct example *e, int cols)
{
    e->o.cols = cols;
    char *t = cli_render_status(&e->s, &e->o);
    if (getenv("TABLE_SHOW")) fprintf(stderr, "--- %d columns\n%s", cols, t);
    if (t && cols > 0 && !fits(t, cols)) {
        fprintf(stderr, "wider than %d columns:\n%s", cols, t);
        tt_failed++;
    }
    return t;
}

TEST(at_120_columns_everything_is_shown)
{
    struct example e;
    example_make(&e);
    char *t = render(&e, 120), names[512], row[512];
    REQUIRE(t);
    names_of(t, names, sizeof names);
    const char *all[] = {"trial",  "status", "lr",   "batch_size", "momentum",
                         "hidden", "iter",   "time", "val_loss",   "best"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!has_col(names, all[i])) fprintf(stderr, "no %s in: %s\n", all[i], names), tt_failed++;
    line_of(t, "trial_00020", row, sizeof row);
    CHECK_CONTAINS(row, "TERMINATED (stopped)");
    CHECK_CONTAINS(row, "0.0090517");
    CHECK_CONTAINS(row, "0.38339");
    CHECK_CONTAINS(t, "| best trial_00000 val_loss=0.32752");
    /* the slice alone made way, and that is said */
    line_of(t, "+", row, sizeof row);
    CHECK_STR(row, "+slice hidden: widen the terminal or see tune trials");
    free(t);
    example_free(&e);
}

TEST(at_80_columns_parameters_stay_and_the_status_gives_way)
{
    /* On main, 80 columns kept a 20-character status and dropped every parameter. */
    struct example e;
    example_make(&e);
    char *t = render(&e, 80), names[512], row[512];
    REQUIRE(t);
    names_of(t, names, sizeof names);
    CHECK(has_col(names, "lr"));
    CHECK(has_col(names, "iter"));
    CHECK(has_col(names, "val_loss"));
    CHECK(has_col(names, "best"));
    CHECK(!has_col(names, "slice")); /* the slice goes before any parameter */
    line_of(t, "trial_00020", row, sizeof row);
    CHECK(strstr(row, "TERMINATED (stopped)") == NULL);
    CHECK_CONTAINS(row, "TERMIN~");
    CHECK_CONTAINS(row, "0.00905"); /* numbers in %.3g */
    CHECK_CONTAINS(row, "0.383");
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "RUNNING");
    CHECK_CONTAINS(row, "0.0388");
    /* what was dropped is said, with where to see it */
    char note[256];
    line_of(t, "+", note, sizeof note);
    CHECK_CONTAINS(note, "parameter");
    CHECK_CONTAINS(note, "hidden");
    CHECK_CONTAINS(note, "tune trials");
    CHECK(has_best(t));
    free(t);
    example_free(&e);
}

TEST(at_60_columns_the_metric_best_and_a_parameter_stay)
{
    /* On main, 60 columns cut off the best column and the best trial. */
    struct example e;
    example_make(&e);
    char *t = render(&e, 60), names[512], row[512];
    REQUIRE(t);
    names_of(t, names, sizeof names);
    CHECK(has_col(names, "trial"));
    CHECK(has_col(names, "status"));
    CHECK(has_col(names, "val_loss"));
    CHECK(has_col(names, "best"));
    CHECK(has_col(names, "lr"));
    CHECK(!has_col(names, "hidden"));
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "0.328"); /* the metric */
    CHECK_CONTAINS(row, "0.327"); /* best */
    CHECK(has_best(t));
    char note[256];
    line_of(t, "+3 parameters", note, sizeof note);
    CHECK_CONTAINS(note, "hidden");
    free(t);
    example_free(&e);
}

TEST(at_40_columns_trial_status_metric_best_and_the_best_line)
{
    struct example e;
    example_make(&e);
    char *t = render(&e, 40), names[512], row[512];
    REQUIRE(t);
    names_of(t, names, sizeof names);
    CHECK(has_col(names, "trial"));
    CHECK(has_col(names, "status"));
    CHECK(has_col(names, "val_loss"));
    CHECK(has_col(names, "best"));
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "RUNNING");
    CHECK_CONTAINS(row, "0.328");
    CHECK_CONTAINS(row, "0.327");
    line_of(t, "trial_00007", row, sizeof row);
    CHECK_CONTAINS(row, "ERROR");
    CHECK_CONTAINS(row, "0.612");
    /* the best trial on a line of its own, whole */
    line_of(t, "Best", row, sizeof row);
    CHECK_STR(row, "Best trial_00000 val_loss=0.32752");
    /* what was hidden, in as few words as it takes to fit: 4 parameters, slice, iter and
     * time */
    line_of(t, "+", row, sizeof row);
    CHECK_STR(row, "+7 columns hidden (tune trials)");
    free(t);
    example_free(&e);
}

TEST(wide_parameters_are_cut_before_any_is_dropped)
{
    /* A string parameter wider than 10 is cut with ~, as before. */
    struct example e;
    example_make(&e);
    const char *params[] = {"schedule"};
    cJSON *cfg = cJSON_Parse("{\"schedule\": \"cosine_with_warmup\"}");
    for (int i = 0; i < 5; i++)
        e.v[i].config = cfg;
    e.o.params = params;
    e.o.nparams = 1;
    e.o.show_exec = 1;
    for (int i = 0; i < 5; i++)
        e.v[i].exec_id = "12345678.12", e.v[i].node = "node-with-a-long-name";
    char *t = render(&e, 80), row[512];
    REQUIRE(t);
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "cosine_with_warmup");
    CHECK(strstr(row, "node-with") == NULL); /* job/node goes before the parameter is cut */
    line_of(t, "+", row, sizeof row);
    CHECK_CONTAINS(row, "slice, job/node hidden");
    free(t);
    t = render(&e, 60);
    REQUIRE(t);
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "cosine_wi~");
    free(t);
    cJSON_Delete(cfg);
    example_free(&e);
}

TEST(metric_columns_naming_the_metric_or_time_attr_are_not_doubled)
{
    /* On main, "metric_columns": ["val_loss", ...] showed val_loss twice. */
    struct example e;
    example_make(&e);
    const char *mc[] = {"val_loss", "epoch", "training_iteration", "val_acc", "val_acc"};
    double cols[5] = {0.32752, 14, 14, 0.875, 0.875};
    for (int i = 0; i < 5; i++)
        e.v[i].columns = cols, e.v[i].ncolumns = 5;
    e.o.metric_columns = mc;
    e.o.nmetric_columns = 5;
    e.o.time_attr = "epoch";
    char *t = render(&e, 0), names[512];
    REQUIRE(t);
    names_of(t, names, sizeof names);
    int n_loss = 0, n_epoch = 0, n_acc = 0;
    for (const char *p = names; (p = strstr(p, "val_loss")); p++)
        n_loss++;
    for (const char *p = names; (p = strstr(p, "epoch")); p++)
        n_epoch++;
    for (const char *p = names; (p = strstr(p, "val_acc")); p++)
        n_acc++;
    CHECK_EQ_INT(n_loss, 1);
    CHECK_EQ_INT(n_epoch, 1);
    CHECK_EQ_INT(n_acc, 1);
    CHECK(!has_col(names, "training_iteration")); /* iter is its column */
    char row[512];
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "0.875");
    free(t);
    /* At 80 columns the extra column goes before the third parameter. */
    e.o.time_attr = "training_iteration";
    t = render(&e, 80);
    REQUIRE(t);
    names_of(t, names, sizeof names);
    CHECK(!has_col(names, "val_acc"));
    CHECK(has_col(names, "lr"));
    line_of(t, "+", row, sizeof row);
    CHECK_CONTAINS(row, "2 metric columns"); /* epoch and val_acc */
    free(t);
    example_free(&e);
}

TEST(without_a_metric_the_reported_values_are_shown)
{
    /* On main, a run without a metric showed "metric" and "best" columns of "-" and
     * nothing the trials reported. */
    struct example e;
    example_make(&e);
    e.s.metric = NULL;
    e.s.best_trial = -1;
    const char *last[5] = {
        "{\"training_iteration\": 14, \"loss\": 0.25, \"acc\": 0.91, \"time_total_s\": 3.5,"
        " \"note\": \"text\"}",
        "{\"training_iteration\": 3, \"loss\": 0.5, \"acc\": 0.8}",
        "{\"training_iteration\": 9, \"loss\": 0.75, \"tokens\": 1234}", NULL,
        "{\"training_iteration\": 2, \"loss\": 1.25}"};
    e.o.last_results = last;
    char *t = render(&e, 0), names[512], row[512];
    REQUIRE(t);
    names_of(t, names, sizeof names);
    CHECK(has_col(names, "loss"));
    CHECK(has_col(names, "acc"));
    CHECK(has_col(names, "tokens"));
    CHECK(!has_col(names, "metric"));
    CHECK(!has_col(names, "best"));
    CHECK(!has_col(names, "note"));               /* numbers only */
    CHECK(!has_col(names, "time_total_s"));       /* bookkeeping */
    CHECK(!has_col(names, "training_iteration")); /* that is iter */
    /* in order of first appearance */
    CHECK(strstr(names, "loss") < strstr(names, "acc") &&
          strstr(names, "acc") < strstr(names, "tokens"));
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "0.25");
    CHECK_CONTAINS(row, "0.91");
    line_of(t, "trial_00003", row, sizeof row);
    CHECK_CONTAINS(row, "1234");
    free(t);
    /* The values go after the parameters: at 60 columns all three stay. */
    t = render(&e, 60);
    REQUIRE(t);
    names_of(t, names, sizeof names);
    CHECK(has_col(names, "loss"));
    CHECK(has_col(names, "acc"));
    CHECK(has_col(names, "tokens"));
    CHECK(!has_col(names, "momentum"));
    free(t);
    /* At 40, as many as fit, the first always, the rest counted. */
    t = render(&e, 40);
    REQUIRE(t);
    names_of(t, names, sizeof names);
    CHECK(has_col(names, "loss"));
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "0.25");
    line_of(t, "+", row, sizeof row);
    CHECK_STR(row, "+8 columns hidden (tune trials)"); /* tokens, 4 parameters, slice, ... */
    free(t);
    example_free(&e);
}

TEST(the_best_line_keeps_its_place_when_it_fits)
{
    /* Wide enough: one line, as the README shows it. */
    struct example e;
    example_make(&e);
    char *t = render(&e, 0), line[512];
    REQUIRE(t);
    line_of(t, "Trials:", line, sizeof line);
    CHECK_STR(line, "Trials: 5 total: 1 RUNNING, 1 PENDING, 2 TERMINATED (1 early-stopped), 1 "
                    "ERROR | best trial_00000 val_loss=0.32752");
    line_of(t, "Best", line, sizeof line);
    CHECK_STR(line, "");
    free(t);
    /* Narrower than the counts: those that are not 0 in fewer words, then the best. */
    t = render(&e, 60);
    REQUIRE(t);
    line_of(t, "Trials:", line, sizeof line);
    CHECK_STR(line, "Trials: 5 total: 1 RUNNING, 1 PENDING, 2 TERMINATED, 1 ERROR");
    line_of(t, "Best", line, sizeof line);
    CHECK_STR(line, "Best trial_00000 val_loss=0.32752");
    free(t);
    example_free(&e);
}

TT_MAIN

/* Several objectives (issue 30): val_loss and latency_ms, both min, gpu_mem_gb <= 16. */
static char *mo_metrics[] = {"val_loss", "latency_ms"};
static space_mode_t mo_modes[] = {SPACE_MODE_MIN, SPACE_MODE_MIN};
static space_constraint_t mo_cons[] = {{"gpu_mem_gb", SPACE_CMP_LE, 16}};

static void mo_make(struct example *e, space_settings_t *set, const char **last)
{
    example_make(e);
    *set = (space_settings_t){.metric = "val_loss",
                              .metrics = mo_metrics,
                              .modes = mo_modes,
                              .nobjectives = 2,
                              .constraints = mo_cons,
                              .nconstraints = 1};
    /* 0 and 1 the front, 2 dominated by 0, 3 no result, 4 best of all but over the limit */
    last[0] = "{\"val_loss\": 0.3, \"latency_ms\": 20, \"gpu_mem_gb\": 8}";
    last[1] = "{\"val_loss\": 0.4, \"latency_ms\": 10, \"gpu_mem_gb\": 8}";
    last[2] = "{\"val_loss\": 0.5, \"latency_ms\": 25, \"gpu_mem_gb\": 8}";
    last[3] = NULL;
    last[4] = "{\"val_loss\": 0.1, \"latency_ms\": 5, \"gpu_mem_gb\": 30}";
    e->o.settings = set;
    e->o.last_results = last;
}

TEST(several_objectives_a_column_each_and_the_front_size)
{
    struct example e;
    space_settings_t set;
    const char *last[5];
    mo_make(&e, &set, last);
    char *t = render(&e, 0), names[512], row[512];
    REQUIRE(t);
    CHECK_CONTAINS(t, "\nPareto front: 2 trials (of 4 with a result, 3 feasible)\n");
    /* the header names every objective, not the first as "metric" */
    CHECK_CONTAINS(t, ", objectives val_loss (min), latency_ms (min)\n");
    CHECK(!strstr(t, "metric val_loss"));
    names_of(t, names, sizeof names);
    CHECK(has_col(names, "val_loss"));
    CHECK(has_col(names, "latency_ms"));
    CHECK(has_col(names, "front"));
    CHECK(!has_col(names, "best"));
    /* no one best trial with several objectives: the front's line says what is best */
    CHECK(!strstr(t, "best trial_"));
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "| 0.3 ");
    CHECK_CONTAINS(row, "| 20 ");
    CHECK_CONTAINS(row, "| *");
    line_of(t, "trial_00020", row, sizeof row);
    CHECK_CONTAINS(row, "| *");
    line_of(t, "trial_00003", row, sizeof row); /* dominated by trial_00000 */
    CHECK(!strstr(row, "*"));
    CHECK(!strstr(row, "infeas."));
    CHECK_CONTAINS(row, "| 25 ");
    line_of(t, "trial_00007", row, sizeof row); /* best values, but over 16 GB */
    CHECK_CONTAINS(row, "infeas.");
    CHECK(!strstr(row, "*"));
    free(t);
    /* At 40 columns both objectives stay, and the front's line (cut to fit). */
    t = render(&e, 40);
    REQUIRE(t);
    names_of(t, names, sizeof names);
    CHECK(strstr(names, "| val_l") && strstr(names, "| laten")); /* names cut, values kept */
    line_of(t, "trial_00003", row, sizeof row);
    CHECK_CONTAINS(row, "| 25");
    CHECK_CONTAINS(t, "\nPareto front: 2 trials");
    free(t);
    example_free(&e);
}

TEST(several_objectives_nan_and_a_missing_constraint_key)
{
    struct example e;
    space_settings_t set;
    const char *last[5];
    mo_make(&e, &set, last);
    /* trial 1: latency not a number (no point on the front, nor infeasible); trial 0
     * without gpu_mem_gb: nothing says it is feasible */
    last[1] = "{\"val_loss\": 0.4, \"latency_ms\": \"nan\", \"gpu_mem_gb\": 8}";
    last[0] = "{\"val_loss\": 0.3, \"latency_ms\": 20}";
    char *t = render(&e, 0), row[512];
    REQUIRE(t);
    /* trial 2 is the only feasible point with both objectives */
    CHECK_CONTAINS(t, "\nPareto front: 1 trial (of 4 with a result, 2 feasible)\n");
    line_of(t, "trial_00003", row, sizeof row);
    CHECK_CONTAINS(row, "| *");
    line_of(t, "trial_00020", row, sizeof row);
    CHECK(!strstr(row, "*"));
    CHECK(!strstr(row, "infeas."));
    line_of(t, "trial_00000", row, sizeof row);
    CHECK_CONTAINS(row, "infeas.");
    free(t);
    example_free(&e);
}

TEST(one_objective_with_settings_renders_as_before)
{
    struct example e;
    example_make(&e);
    char *before = render(&e, 80);
    static char *one[] = {"val_loss"};
    static space_mode_t min[] = {SPACE_MODE_MIN};
    space_settings_t set = {.metric = "val_loss", .metrics = one, .modes = min, .nobjectives = 1};
    const char *last[5] = {"{\"val_loss\": 0.3}", NULL, NULL, NULL, NULL};
    e.o.settings = &set;
    e.o.last_results = last;
    char *after = render(&e, 80);
    REQUIRE(before && after);
    /* the first line carries the clock: compare from the second on */
    CHECK_STR(strchr(after, '\n'), strchr(before, '\n'));
    free(before);
    free(after);
    example_free(&e);
}
