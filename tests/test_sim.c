/* Tests for sim/: reading tables of learning curves, answering a configuration with the
 * nearest recorded one, and the synthetic family; also search's unit scale and distance
 * (space_param_unit / space_param_distance), which the nearest-row rule is built on.
 * Not for: the virtual clock or the scheduler. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "search/render.h"
#include "search/space.h"
#include "sim/sim.h"
#include "tinytest.h"

static space_t *parse_space(const char *text)
{
    space_t *s = NULL;
    char err[512];
    if (space_parse(text, strlen(text), "t.json", &s, err, sizeof err) != 0) {
        fprintf(stderr, "space_parse: %s\n", err);
        return NULL;
    }
    return s;
}

static const char g_space[] =
    "{\"name\": \"s\", \"metric\": \"val_loss\", \"mode\": \"min\", \"command\": [\"x\"],"
    " \"space\": {\"lr\": {\"loguniform\": [0.001, 0.1]}, \"opt\": {\"choice\": [\"sgd\", "
    "\"adam\"]}, \"width\": {\"uniform\": [0, 10]}, \"note\": \"fixed\"}}";

/* g_space for tables that record no val_loss: the tests of rows and cells. */
static const char g_lenient[] =
    "{\"name\": \"s\", \"metric\": \"val_loss\", \"mode\": \"min\", \"command\": [\"x\"],"
    " \"allow_missing_metric\": true, \"space\": {\"lr\": {\"loguniform\": [0.001, 0.1]},"
    " \"opt\": {\"choice\": [\"sgd\", \"adam\"]}, \"width\": {\"uniform\": [0, 10]},"
    " \"note\": \"fixed\"}}";

static const char table_text[] = "trial,config/lr,config/opt,config/width,training_iteration,"
                                 "time_this_iter_s,val_loss,val_accuracy\n"
                                 "a,0.001,sgd,0,1,2.5,0.9,0.5\n"
                                 "a,0.001,sgd,0,2,2.5,0.8,\n"
                                 "b,0.1,adam,10,1,1,nan,0.1\n"
                                 "\"c,1\",0.01,adam,5,1,3,0.7,0.6\n"
                                 "\"c,1\",0.01,adam,5,2,3,0.6,0.7\n"
                                 "\"c,1\",0.01,adam,5,3,3,0.5,\"text, \"\"quoted\"\"\"\n";

TEST(unit_scale_and_distance_follow_each_kind)
{
    space_t *s = parse_space(g_space);
    REQUIRE(s);
    cJSON *a = cJSON_CreateNumber(0.01), *b = cJSON_CreateNumber(0.1);
    double u = -1;
    CHECK_EQ_INT(space_param_unit(s, 0, a, &u), 0);
    CHECK(fabs(u - 0.5) < 1e-12); /* log scale: 0.01 is half way from 0.001 to 0.1 */
    CHECK(fabs(space_param_distance(s, 0, a, b) - 0.5) < 1e-12);
    cJSON *sgd = cJSON_CreateString("sgd"), *adam = cJSON_CreateString("adam");
    cJSON *other = cJSON_CreateString("rmsprop");
    CHECK_EQ_INT(space_param_unit(s, 1, adam, &u), 0);
    CHECK(u == 1.0);
    CHECK(space_param_distance(s, 1, sgd, adam) == 1.0);
    CHECK(space_param_distance(s, 1, sgd, sgd) == 0.0);
    CHECK(space_param_unit(s, 1, other, &u) != 0);
    cJSON *w = cJSON_CreateNumber(2.5);
    CHECK_EQ_INT(space_param_unit(s, 2, w, &u), 0);
    CHECK(fabs(u - 0.25) < 1e-12);
    CHECK(space_param_unit(s, 2, sgd, &u) != 0); /* a string is no value of a uniform */
    CHECK(isnan(space_param_distance(s, 2, sgd, w)));
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(sgd);
    cJSON_Delete(adam);
    cJSON_Delete(other);
    cJSON_Delete(w);
    space_free(s);
}

TEST(table_groups_rows_into_configurations_and_builds_result_lines)
{
    space_t *s = parse_space(g_space);
    REQUIRE(s);
    sim_curves_t *c = NULL;
    char err[512] = "";
    int rc = sim_table_parse(table_text, strlen(table_text), "t.csv", s, &c, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    REQUIRE(rc == 0);
    CHECK_EQ_INT(sim_curves_count(c), 3);
    CHECK_EQ_INT(sim_curves_max_iters(c), 3);
    CHECK_STR(sim_curves_row_name(c, 2), "c,1");

    /* exactly row c's configuration: distance 0 */
    cJSON *cfg =
        cJSON_Parse("{\"lr\": 0.01, \"opt\": \"adam\", \"width\": 5, \"note\": \"fixed\"}");
    sim_curve_t cv;
    REQUIRE(sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0);
    CHECK_EQ_INT(cv.row, 2);
    CHECK(cv.distance == 0);
    CHECK_EQ_INT(cv.iters, 3);
    const char *line;
    size_t len;
    double secs;
    REQUIRE(sim_curve_result(c, &cv, 3, &line, &len, &secs) == 1);
    /* time_total_s: the curve's seconds so far (3 + 3 + 3), which every result reports */
    CHECK_STR(line, "{\"training_iteration\": 3, \"time_this_iter_s\": 3, \"val_loss\": 0.5, "
                    "\"val_accuracy\": \"text, \\\"quoted\\\"\", \"time_total_s\": 9}");
    CHECK_EQ_INT(len, strlen(line));
    CHECK(secs == 3);
    CHECK_EQ_INT(sim_curve_result(c, &cv, 4, &line, &len, &secs), 0); /* the curve ended */
    cJSON_Delete(cfg);

    /* nearest by RMS of per-parameter distances: lr 0.002 (log), sgd, width 1 is row a:
     * d(lr) = log(2)/log(100), d(opt) = 0, d(width) = 0.1 */
    cfg = cJSON_Parse("{\"lr\": 0.002, \"opt\": \"sgd\", \"width\": 1}");
    REQUIRE(sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0);
    CHECK_EQ_INT(cv.row, 0);
    double dl = log(2) / log(100);
    CHECK(fabs(cv.distance - sqrt((dl * dl + 0.01) / 3)) < 1e-12);
    REQUIRE(sim_curve_result(c, &cv, 2, &line, &len, &secs) == 1);
    /* an empty cell is a metric not reported at that iteration */
    CHECK_STR(line, "{\"training_iteration\": 2, \"time_this_iter_s\": 2.5, \"val_loss\": 0.8, "
                    "\"time_total_s\": 5}");
    cJSON_Delete(cfg);

    /* a category that differs counts 1: adam near row a's numbers still goes to b or c */
    cfg = cJSON_Parse("{\"lr\": 0.1, \"opt\": \"adam\", \"width\": 10}");
    REQUIRE(sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0);
    CHECK_EQ_INT(cv.row, 1);
    REQUIRE(sim_curve_result(c, &cv, 1, &line, &len, &secs) == 1);
    CHECK_CONTAINS(line, "\"val_loss\": NaN");
    cJSON_Delete(cfg);

    cfg = cJSON_Parse("{\"lr\": 0.1, \"width\": 10}");
    CHECK(sim_curves_lookup(c, cfg, &cv, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "the configuration has no opt");
    cJSON_Delete(cfg);
    sim_curves_free(c);
    space_free(s);
}

static void expect_table_error(const char *space, const char *table, const char *msg)
{
    space_t *s = parse_space(space);
    REQUIRE(s);
    sim_curves_t *c = NULL;
    char err[512] = "";
    CHECK(sim_table_parse(table, strlen(table), "t.csv", s, &c, err, sizeof err) != 0);
    CHECK(c == NULL);
    CHECK_CONTAINS(err, msg);
    space_free(s);
}

TEST(table_errors_say_where_and_why)
{
    expect_table_error(g_lenient, "", "t.csv: the table is empty");
    expect_table_error(g_lenient, "trial,config/lr,config/opt,config/width,time_this_iter_s\n",
                       "t.csv:1: the table has no training_iteration column");
    expect_table_error(g_lenient, "config/lr,config/opt,config/width,training_iteration\n",
                       "no time_this_iter_s (or time_total_s) column");
    expect_table_error(g_lenient, "config/lr,config/opt,training_iteration,time_this_iter_s\n",
                       "t.csv:1: the table has no config/width column");
    expect_table_error(g_lenient,
                       "config/lr,config/opt,config/width,training_iteration,time_this_iter_s\n"
                       "0.01,sgd,1,1,1\n0.01,sgd,1,2\n",
                       "t.csv:3: 4 fields where the header has 5");
    expect_table_error(g_lenient,
                       "config/lr,config/opt,config/width,training_iteration,time_this_iter_s\n"
                       "0.01,sgd,1,zero,1\n",
                       "t.csv:2: training_iteration must be a whole number from 1 to 2^53, not "
                       "\"zero\"");
    expect_table_error(g_lenient,
                       "config/lr,config/opt,config/width,training_iteration,time_this_iter_s\n"
                       "0.01,sgd,wide,1,1\n",
                       "t.csv:2: config/width: \"wide\" is not a value of width");
    expect_table_error(g_lenient,
                       "config/lr,config/opt,config/width,training_iteration,time_this_iter_s\n"
                       "\"0.01,sgd,1,1,1\n",
                       "t.csv:2: unterminated quoted field");
    expect_table_error(g_lenient,
                       "config/lr,config/opt,config/width,training_iteration,time_this_iter_s\n",
                       "has a header but no rows");
}

/* The header of g_lenient's tables without a trial column, and with one. */
#define PLAIN_HEAD "config/lr,config/opt,config/width,training_iteration,time_this_iter_s\n"
#define NAMED_HEAD "trial,config/lr,config/opt,config/width,training_iteration,time_this_iter_s\n"

static void expect_table_ok(const char *space, const char *table)
{
    space_t *s = parse_space(space);
    REQUIRE(s);
    sim_curves_t *c = NULL;
    char err[512] = "";
    int rc = sim_table_parse(table, strlen(table), "t.csv", s, &c, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    CHECK(rc == 0);
    sim_curves_free(c);
    space_free(s);
}

/* An iteration's seconds are a finite number from 0 to a year (SIM_MAX_ITER_S): inf never
 * ends on the virtual clock, and 1e12 s is a unit mistake, not a measurement. */
TEST(iteration_times_must_be_finite_and_at_most_a_year)
{
    expect_table_error(g_lenient, PLAIN_HEAD "0.01,sgd,1,1,inf\n",
                       "t.csv:2: time_this_iter_s must be a number of seconds from 0 to 31536000 "
                       "(365 days), not \"inf\"");
    expect_table_error(g_lenient, PLAIN_HEAD "0.01,sgd,1,1,1\n0.01,sgd,1,2,-Infinity\n",
                       "t.csv:3: time_this_iter_s must be a number of seconds from 0 to 31536000");
    expect_table_error(g_lenient, PLAIN_HEAD "0.01,sgd,1,1,1e999\n", "not \"1e999\"");
    expect_table_error(g_lenient, PLAIN_HEAD "0.01,sgd,1,1,-1\n", "from 0 to 31536000");
    expect_table_error(g_lenient, PLAIN_HEAD "0.01,sgd,1,1,1e12\n",
                       "t.csv:2: time_this_iter_s must be a number of seconds from 0 to 31536000 "
                       "(365 days), not \"1e12\": an iteration longer than a year is taken for a "
                       "mistake (milliseconds or nanoseconds written as seconds?)");
    expect_table_error(g_lenient, PLAIN_HEAD "0.01,sgd,1,1,31536000.5\n", "longer than a year");
    expect_table_ok(g_lenient, PLAIN_HEAD "0.01,sgd,1,1,31536000\n0.01,sgd,1,2,0\n");
    static const char total[] = "{\"name\": \"s\", \"metric\": \"loss\", \"command\": [\"x\"],"
                                " \"space\": {\"x\": {\"uniform\": [0, 1]}}}";
    expect_table_error(total, "config/x,training_iteration,time_total_s,loss\n0.1,1,inf,1\n",
                       "t.csv:2: time_total_s must be a finite number of seconds that does not "
                       "decrease, not \"inf\"");
    expect_table_error(total,
                       "config/x,training_iteration,time_total_s,loss\n0.1,1,5,1\n0.1,2,4e7,1\n",
                       "t.csv:3: time_total_s 4e7 makes this iteration 4e+07 s long (from 5), "
                       "more than 31536000 (365 days)");
    expect_table_ok(total, "config/x,training_iteration,time_total_s,loss\n0.1,1,5,1\n"
                           "0.1,2,31536005,1\n");
    /* training_iteration too: a whole number, so not inf */
    expect_table_error(g_lenient, PLAIN_HEAD "0.01,sgd,1,inf,1\n",
                       "t.csv:2: training_iteration must be a whole number from 1 to 2^53, not "
                       "\"inf\"");
}

/* A configuration's rows are its iterations in increasing order: the simulator replays
 * rows in file order, so a repeated or earlier training_iteration (a table sorted by
 * another column, rows of two recordings run together) would meet a rung twice or go back
 * in time. Gaps are allowed (a trial that reports every other epoch). */
TEST(iterations_must_increase_within_a_configuration)
{
    expect_table_error(g_lenient,
                       NAMED_HEAD "a,0.01,sgd,1,1,1\na,0.01,sgd,1,2,1\na,0.01,sgd,1,2,1\n",
                       "t.csv:4: training_iteration 2 again (line 3 has it too): a "
                       "configuration's rows are its iterations in increasing order, one row per "
                       "iteration (two recordings of one configuration need two names)");
    expect_table_error(g_lenient, PLAIN_HEAD "0.01,sgd,1,1,1\n0.01,sgd,1,1,1\n",
                       "t.csv:3: training_iteration 1 again (line 2 has it too): a "
                       "configuration's rows are its iterations in increasing order, one row per "
                       "iteration (a trial column tells two recordings of one configuration "
                       "apart)");
    expect_table_error(g_lenient,
                       NAMED_HEAD "a,0.01,sgd,1,1,1\na,0.01,sgd,1,3,1\n\na,0.01,sgd,1,2,1\n",
                       "t.csv:5: training_iteration 2 after 3 (line 3): a configuration's rows "
                       "are its iterations in increasing order, one row per iteration");
    /* rows in order of arrival: trial a's curve is split by b's rows */
    expect_table_error(g_lenient,
                       NAMED_HEAD "a,0.01,sgd,1,1,1\nb,0.1,sgd,1,1,1\na,0.01,sgd,1,2,1\n",
                       "t.csv:4: trial \"a\" had its rows at lines 2-2, before other trials' "
                       "rows: each trial's rows come together, in increasing training_iteration");
    expect_table_error(g_lenient,
                       PLAIN_HEAD "0.01,sgd,1,1,1\n0.01,sgd,1,2,1\n0.1,sgd,1,1,1\n"
                                  "0.01,sgd,1,3,1\n",
                       "t.csv:5: these config/ values had their rows at lines 2-3, before other "
                       "rows: each configuration's rows come together");
    expect_table_ok(g_lenient, NAMED_HEAD "a,0.01,sgd,1,2,1\na,0.01,sgd,1,4,1\na,0.01,sgd,1,6,1\n"
                                          "b,0.01,sgd,1,1,1\n");
}

/* The experiment's metric and the scheduler's time_attr must be columns: from a table
 * without them every trial would report neither, and the run would stop at its first
 * result with every trial PAUSED. allow_missing_metric runs anyway, as in a real run. */
TEST(the_metric_and_time_attr_must_be_columns)
{
    expect_table_error(g_space, PLAIN_HEAD "0.01,sgd,1,1,1\n",
                       "t.csv:1: the table has no \"val_loss\" column, the experiment's "
                       "\"metric\". Its results report: \"training_iteration\", "
                       "\"time_this_iter_s\", \"time_total_s\". Fix the name in space.json, or "
                       "replay a table that records it (or set \"allow_missing_metric\": true to "
                       "run anyway)");
    expect_table_error(g_space,
                       "config/lr,config/opt,config/width,training_iteration,time_this_iter_s,"
                       "val_lossx\n0.01,sgd,1,1,1,2\n",
                       "no \"val_loss\" column, the experiment's \"metric\" (did you mean "
                       "\"val_lossx\"?)");
    static const char asha[] = "{\"name\": \"s\", \"metric\": \"loss\", \"mode\": \"min\", "
                               "\"command\": [\"x\"], \"scheduler\": {\"type\": "
                               "\"asha\", \"time_attr\": \"epoch\", \"max_t\": 100},"
                               " \"space\": {\"x\": {\"uniform\": [0, 1]}}}";
    expect_table_error(asha, "config/x,training_iteration,time_this_iter_s,loss\n0.1,1,1,1\n",
                       "t.csv:1: the table has no \"epoch\" column, the scheduler's "
                       "\"time_attr\". Its results report: \"training_iteration\", "
                       "\"time_this_iter_s\", \"time_total_s\", \"loss\"");
    expect_table_ok(asha, "config/x,training_iteration,epoch,time_total_s,loss\n0.1,1,1,1,1\n");
    /* time_total_s is reported by every replayed result (the seconds so far), so it
     * needs no column */
    static const char asha_total[] =
        "{\"name\": \"s\", \"metric\": \"loss\", \"mode\": \"min\", \"command\": [\"x\"], "
        "\"scheduler\": {\"type\": \"asha\", \"time_attr\": \"time_total_s\", \"max_t\": 100},"
        " \"space\": {\"x\": {\"uniform\": [0, 1]}}}";
    expect_table_ok(asha_total, "config/x,training_iteration,time_this_iter_s,loss\n0.1,1,1,1\n");
    static const char allow[] =
        "{\"name\": \"s\", \"metric\": \"loss\", \"command\": [\"x\"], \"allow_missing_metric\": "
        "true, \"space\": {\"x\": {\"uniform\": [0, 1]}}}";
    expect_table_ok(allow, "config/x,training_iteration,time_this_iter_s,acc\n0.1,1,1,1\n");
}

/* Several objectives (docs/simulate.md): each metric of the list and each constrained key
 * needs a column (time_total_s is reported by every result, so it needs none). */
TEST(every_objective_and_constrained_key_must_be_reported)
{
    static const char two[] =
        "{\"name\": \"s\", \"metric\": [\"loss\", \"params\"], \"mode\": [\"min\", \"min\"], "
        "\"command\": [\"x\"], \"space\": {\"x\": {\"uniform\": [0, 1]}}}";
    expect_table_error(two,
                       "config/x,training_iteration,time_this_iter_s,loss,param\n0.1,1,1,1,5\n",
                       "t.csv:1: the table has no \"params\" column, one of the experiment's "
                       "\"metric\" list (did you mean \"param\"?)");
    expect_table_ok(two, "config/x,training_iteration,time_this_iter_s,loss,params\n0.1,1,1,1,5\n");
    static const char timed[] =
        "{\"name\": \"s\", \"metric\": [\"loss\", \"time_total_s\"], \"mode\": [\"min\", "
        "\"min\"], \"command\": [\"x\"], \"space\": {\"x\": {\"uniform\": [0, 1]}}}";
    expect_table_ok(timed, "config/x,training_iteration,time_this_iter_s,loss\n0.1,1,1,1\n");
    static const char constrained[] =
        "{\"name\": \"s\", \"metric\": \"loss\", \"command\": [\"x\"], \"constraints\": "
        "{\"time_total_s\": {\"<=\": 5}, \"mem_gb\": {\">=\": 1, \"<=\": 16}}, "
        "\"space\": {\"x\": {\"uniform\": [0, 1]}}}";
    expect_table_error(constrained,
                       "config/x,training_iteration,time_this_iter_s,loss\n0.1,1,1,1\n",
                       "t.csv:1: the table has no \"mem_gb\" column, a key of the experiment's "
                       "\"constraints\". Its results report:");
    expect_table_ok(constrained,
                    "config/x,training_iteration,time_this_iter_s,loss,mem_gb\n0.1,1,1,1,8\n");
    /* a range is two constraints on one key: named once */
    space_t *s = parse_space(constrained);
    REQUIRE(s);
    sim_curves_t *c = NULL;
    char err[1024] = "";
    const char *t = "config/x,training_iteration,time_this_iter_s,loss\n0.1,1,1,1\n";
    CHECK(sim_table_parse(t, strlen(t), "t.csv", s, &c, err, sizeof err) == SIM_EINVAL);
    int named = 0;
    for (const char *q = strstr(err, "mem_gb"); q; q = strstr(q + 1, "mem_gb"))
        named++;
    CHECK_EQ_INT(named, 1);
    space_free(s);
}

/* Line numbers count the blank lines a table may have between rows. */ /* Line numbers count the
                                                                           blank lines a table may
                                                                           have between rows. */
TEST(errors_point_at_the_row_after_blank_lines)
{
    expect_table_error(g_lenient, PLAIN_HEAD "\n\n0.01,sgd,wide,1,1\n",
                       "t.csv:4: config/width: \"wide\" is not a value of width");
}

TEST(table_without_trial_column_groups_by_configuration_and_reads_total_time)
{
    space_t *s = parse_space("{\"name\": \"s\", \"metric\": \"loss\", \"command\": [\"x\"],"
                             " \"space\": {\"x\": {\"uniform\": [0, 1]}}}");
    REQUIRE(s);
    const char *t = "config/x,training_iteration,time_total_s,loss\r\n"
                    "0.1,1,2,5\r\n0.1,2,5,4\r\n\r\n0.9,1,1,3\r\n";
    sim_curves_t *c = NULL;
    char err[256];
    REQUIRE(sim_table_parse(t, strlen(t), "t.csv", s, &c, err, sizeof err) == 0);
    CHECK_EQ_INT(sim_curves_count(c), 2);
    cJSON *cfg = cJSON_Parse("{\"x\": 0.2}");
    sim_curve_t cv;
    REQUIRE(sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0);
    CHECK_EQ_INT(cv.row, 0);
    const char *line;
    size_t len;
    double secs;
    REQUIRE(sim_curve_result(c, &cv, 2, &line, &len, &secs) == 1);
    CHECK(secs == 3); /* 5 - 2: time_total_s is cumulative */
    /* the table's own time_total_s is reported as recorded, and only once */
    CHECK_STR(line, "{\"training_iteration\": 2, \"time_total_s\": 5, \"loss\": 4, "
                    "\"time_this_iter_s\": 3}");
    cJSON_Delete(cfg);
    sim_curves_free(c);
    space_free(s);
}

TEST(grid_values_must_match_exactly)
{
    space_t *s = parse_space("{\"name\": \"s\", \"metric\": \"loss\", \"command\": [\"x\"],"
                             " \"space\": {\"x\": {\"uniform\": [0, 1]}, \"layers\": "
                             "{\"grid_search\": [1, 2, 3]}}}");
    REQUIRE(s);
    const char *t = "config/x,config/layers,training_iteration,time_this_iter_s,loss\n"
                    "0.5,1,1,1,1\n0.0,2,1,1,2\n";
    sim_curves_t *c = NULL;
    char err[256];
    REQUIRE(sim_table_parse(t, strlen(t), "t.csv", s, &c, err, sizeof err) == 0);
    cJSON *cfg = cJSON_Parse("{\"x\": 0.5, \"layers\": 2}");
    sim_curve_t cv;
    REQUIRE(sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0);
    CHECK_EQ_INT(cv.row, 1); /* farther in x, but the only row of grid point 2 */
    cJSON_Delete(cfg);
    cfg = cJSON_Parse("{\"x\": 0.5, \"layers\": 3}");
    CHECK(sim_curves_lookup(c, cfg, &cv, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "grid_search values");
    cJSON_Delete(cfg);
    sim_curves_free(c);
    space_free(s);
}

/* Writes text gzip-compressed to path and returns the compressed bytes (malloc'd, *n). */
static unsigned char *gzip_bytes(const char *path, const char *text, size_t *n)
{
    gzFile f = gzopen(path, "wb");
    if (!f) return NULL;
    gzputs(f, text);
    gzclose(f);
    FILE *in = fopen(path, "rb");
    unsigned char *b = malloc(1 << 16);
    *n = in && b ? fread(b, 1, 1 << 16, in) : 0;
    if (in) fclose(in);
    return b;
}

static void put_bytes(const char *path, const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b, 1, n, f);
        fclose(f);
    }
}

/* A gzip stream that does not end cleanly is an error at the line where it stops: cut
 * short, zlib hands out what it has, and the last row (a number cut in the middle) would
 * have been replayed as if recorded. */
TEST(gzip_streams_that_do_not_end_cleanly_are_errors_at_their_line)
{
    const char *dir = getenv("TUNE_BINARY_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/sim_test_cut.csv.gz", dir ? dir : "/tmp");
    size_t n = 0;
    unsigned char *b = gzip_bytes(path, table_text, &n);
    REQUIRE(b && n > 40);
    space_t *s = parse_space(g_space);
    REQUIRE(s);
    sim_curves_t *c = NULL;
    char err[512] = "", want[4400];
    /* without its 8-byte trailer (CRC and length): every row is there, but not the end */
    put_bytes(path, b, n - 8);
    CHECK(sim_table_open(path, s, &c, err, sizeof err) == SIM_EINVAL);
    CHECK(c == NULL);
    snprintf(want, sizeof want, "%s:8: the file ends inside its gzip stream: it was cut short",
             path);
    CHECK_CONTAINS(err, want);
    CHECK_CONTAINS(err, "Copy or write the table again (gzip -t checks a file)");
    /* cut in the middle of the compressed rows */
    put_bytes(path, b, n / 2);
    CHECK(sim_table_open(path, s, &c, err, sizeof err) == SIM_EINVAL);
    CHECK_CONTAINS(err, "the file ends inside its gzip stream");
    /* a damaged stream: its CRC no longer matches (zlib drops what it decoded in the read
     * that failed, so no line is named) */
    b[n - 8] ^= 0xff;
    put_bytes(path, b, n);
    CHECK(sim_table_open(path, s, &c, err, sizeof err) == SIM_EINVAL);
    snprintf(want, sizeof want,
             "%s: the gzip stream is damaged (incorrect data check): copy or write the table "
             "again (gzip -t checks a file)",
             path);
    CHECK_STR(err, want);
    b[n - 8] ^= 0xff;
    put_bytes(path, b, n);
    CHECK(sim_table_open(path, s, &c, err, sizeof err) == SIM_OK);
    sim_curves_free(c);
    free(b);
    space_free(s);
    remove(path);
}

TEST(gzip_tables_read_like_plain_ones)
{
    const char *dir = getenv("TUNE_BINARY_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/sim_test_table.csv.gz", dir ? dir : "/tmp");
    gzFile f = gzopen(path, "wb");
    REQUIRE(f);
    gzputs(f, table_text);
    gzclose(f);
    space_t *s = parse_space(g_space);
    REQUIRE(s);
    sim_curves_t *c = NULL;
    char err[512];
    REQUIRE(sim_table_open(path, s, &c, err, sizeof err) == 0);
    CHECK_EQ_INT(sim_curves_count(c), 3);
    sim_curves_free(c);
    CHECK(sim_table_open("/nonexistent/t.csv.gz", s, &c, err, sizeof err) == SIM_EIO);
    CHECK_CONTAINS(err, "cannot open /nonexistent/t.csv.gz");
    space_free(s);
    remove(path);
}

/* The synthetic family's iterations obey the same bound as a table's. */
TEST(synthetic_iterations_longer_than_a_year_are_refused)
{
    space_t *s = parse_space(g_space);
    REQUIRE(s);
    sim_curves_t *c = NULL;
    char err[512];
    CHECK(sim_synth_open("time=1e12", s, &c, err, sizeof err) == SIM_EINVAL);
    CHECK_CONTAINS(err, "synthetic spec: time=1e+12 with time_spread=0.5 makes iterations of up "
                        "to 1.25e+12 s, more than 31536000 (365 days)");
    CHECK(sim_synth_open("time=3e7,time_spread=0.2", s, &c, err, sizeof err) == SIM_EINVAL);
    REQUIRE(sim_synth_open("time=3e7,time_spread=0", s, &c, err, sizeof err) == SIM_OK);
    sim_curves_free(c);
    space_free(s);
}

static double synth_value(sim_curves_t *c, const char *cfg_text, int64_t it)
{
    cJSON *cfg = cJSON_Parse(cfg_text);
    sim_curve_t cv;
    char err[256];
    double v = -1e300;
    if (sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0) {
        const char *line;
        size_t len;
        double secs;
        if (sim_curve_result(c, &cv, it, &line, &len, &secs) == 1) {
            cJSON *r = cJSON_Parse(line);
            const cJSON *m = r ? cJSON_GetObjectItem(r, "loss") : NULL;
            v = m && cJSON_IsNumber(m) ? m->valuedouble : NAN;
            if (strstr(line, "NaN")) v = NAN;
            cJSON_Delete(r);
        }
    }
    cJSON_Delete(cfg);
    return v;
}

TEST(synthetic_family_is_deterministic_crosses_and_diverges)
{
    space_t *s =
        parse_space("{\"name\": \"s\", \"metric\": \"loss\", \"command\": [\"x\"],"
                    " \"mode\": \"min\", \"scheduler\": {\"type\": \"asha\", \"max_t\": 27},"
                    " \"space\": {\"lr\": {\"loguniform\": [0.001, 1]}, "
                    "\"w\": {\"uniform\": [0, 1]}}}");
    REQUIRE(s);
    sim_curves_t *c = NULL, *c2 = NULL, *quiet = NULL;
    char err[256];
    REQUIRE(sim_synth_open("seed=3", s, &c, err, sizeof err) == 0);
    REQUIRE(sim_synth_open("seed=3", s, &c2, err, sizeof err) == 0);
    REQUIRE(sim_synth_open("seed=3,noise=0,diverge=0,cross=2", s, &quiet, err, sizeof err) == 0);
    CHECK_EQ_INT(sim_curves_max_iters(c), 27); /* the scheduler's max_t */
    const char *a = "{\"lr\": 0.03, \"w\": 0.5}";
    CHECK(synth_value(c, a, 5) == synth_value(c2, a, 5));
    CHECK(synth_value(c, a, 5) != synth_value(c, a, 6));
    CHECK(synth_value(c, a, 28) == -1e300); /* past iters: the curve ended */

    /* Without noise, find the best and worst of a small grid at the end; with cross = 2
     * the worst must lead at iteration 1 (curves cross). */
    double best = INFINITY, worst = -INFINITY, best1 = 0, worst1 = 0;
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 9; j++) {
            char cfg[128];
            snprintf(cfg, sizeof cfg, "{\"lr\": %.17g, \"w\": %.17g}", pow(10, -3 + 2.7 * i / 8.0),
                     j / 8.0);
            double end = synth_value(quiet, cfg, 27), first = synth_value(quiet, cfg, 1);
            if (end < best) best = end, best1 = first;
            if (end > worst) worst = end, worst1 = first;
        }
    CHECK(best < worst);
    CHECK(worst1 < best1);

    /* lr at the top of its range (the first parameter's last 5%) diverges within 3 steps */
    CHECK(isnan(synth_value(c, "{\"lr\": 0.999, \"w\": 0.5}", 3)));
    CHECK(!isnan(synth_value(quiet, "{\"lr\": 0.999, \"w\": 0.5}", 3)));

    sim_curves_t *bad = NULL;
    CHECK(sim_synth_open("noise=-1", s, &bad, err, sizeof err) == SIM_EINVAL);
    CHECK_CONTAINS(err, "noise=-1 is not allowed");
    CHECK(sim_synth_open("seed", s, &bad, err, sizeof err) == SIM_EINVAL);
    CHECK_CONTAINS(err, "\"seed\" is not key=value");
    CHECK(sim_synth_open("iters=x", s, &bad, err, sizeof err) == SIM_EINVAL);
    CHECK_CONTAINS(err, "iters wants a number");
    sim_curves_free(c);
    sim_curves_free(c2);
    sim_curves_free(quiet);
    space_free(s);
}

/* docs/simulate.md's splitmix64 output function, written again from the page: the
 * family's optimum and weights come from it, so the test computes the documented values
 * itself. */
static uint64_t doc_mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Iteration it of a synthetic curve as parsed JSON (NULL past its end); free with cJSON_Delete. */
static cJSON *synth_result(sim_curves_t *c, const char *cfg_text, int64_t it)
{
    cJSON *cfg = cJSON_Parse(cfg_text), *r = NULL;
    sim_curve_t cv;
    char err[256];
    const char *line;
    size_t len;
    double secs;
    if (sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0 &&
        sim_curve_result(c, &cv, it, &line, &len, &secs) == 1)
        r = cJSON_Parse(line);
    cJSON_Delete(cfg);
    return r;
}

static double num_of(const cJSON *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key);
    return v && cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Several objectives (docs/simulate.md): every synthetic result reports time_total_s, the
 * seconds so far, and "cost", the weighted mean of the configuration's u_i with the loss's
 * weights w_i = 0.5 + 1.5 U (U from splitmix64 of the seed, c_i's draw first): the values the
 * page gives, the same at every iteration and every run, and in conflict with the loss below
 * its optimum. */
TEST(synthetic_results_report_the_documented_cost_and_total_time)
{
    space_t *s = parse_space("{\"name\": \"s\", \"metric\": \"loss\", \"command\": [\"x\"],"
                             " \"mode\": \"min\", \"scheduler\": {\"type\": \"asha\", "
                             "\"max_t\": 9}, \"space\": {\"a\": {\"uniform\": [0, 1]}, "
                             "\"k\": \"fixed\", \"b\": {\"uniform\": [0, 2]}}}");
    REQUIRE(s);
    sim_curves_t *c = NULL, *c2 = NULL, *quiet = NULL;
    char err[256];
    REQUIRE(sim_synth_open("seed=3,time=2,time_spread=0.5", s, &c, err, sizeof err) == 0);
    REQUIRE(sim_synth_open("seed=3,time=2,time_spread=0.5", s, &c2, err, sizeof err) == 0);
    REQUIRE(sim_synth_open("seed=3,noise=0,diverge=0,cross=0", s, &quiet, err, sizeof err) == 0);
    double w[2], opt[2];
    for (uint64_t i = 0, z = 3; i < 2; i++) {
        opt[i] = 0.2 + 0.6 * (double)(doc_mix64(z++) >> 11) * 0x1.0p-53;
        w[i] = 0.5 + 1.5 * (double)(doc_mix64(z++) >> 11) * 0x1.0p-53;
    }
    /* a = 0.25, b = 1.5 on [0, 2]: u = (0.25, 0.75); the constant k is no dimension */
    const char *cfg = "{\"a\": 0.25, \"k\": \"fixed\", \"b\": 1.5}";
    double want_cost = (w[0] * 0.25 + w[1] * 0.75) / (w[0] + w[1]);
    double secs = 2 * (1 + 0.5 * (0.75 - 0.5)); /* time * (1 + time_spread (u_d - 0.5)) */
    for (int64_t it = 1; it <= 9; it++) {
        cJSON *r = synth_result(c, cfg, it), *r2 = synth_result(c2, cfg, it);
        REQUIRE(r && r2);
        CHECK(num_of(r, "cost") == want_cost); /* printed exactly, read back exactly */
        CHECK(num_of(r, "time_this_iter_s") == secs);
        CHECK(num_of(r, "time_total_s") == secs * (double)it);
        char *t1 = cJSON_PrintUnformatted(r), *t2 = cJSON_PrintUnformatted(r2);
        CHECK_STR(t1, t2); /* the same source opened twice gives the same results */
        free(t1);
        free(t2);
        cJSON_Delete(r);
        cJSON_Delete(r2);
    }
    CHECK(synth_result(c, cfg, 10) == NULL);

    /* The conflict: from the optimum towards u = 0 along u_i = c_i - t, the final loss
     * rises and the cost falls (the Pareto set, docs/simulate.md). */
    double prev_loss = -INFINITY, prev_cost = INFINITY;
    for (int k = 0; k <= 4; k++) {
        double t = 0.05 * k;
        char text[128];
        snprintf(text, sizeof text, "{\"a\": %.17g, \"k\": \"fixed\", \"b\": %.17g}", opt[0] - t,
                 2 * (opt[1] - t));
        cJSON *r = synth_result(quiet, text, 9);
        REQUIRE(r);
        double loss = num_of(r, "loss"), cost = num_of(r, "cost");
        CHECK(loss > prev_loss);
        CHECK(cost < prev_cost);
        prev_loss = loss;
        prev_cost = cost;
        cJSON_Delete(r);
    }

    /* several objectives: the family reports its loss, time_total_s and cost, and refuses
     * a metric or a constrained key it does not report, as a table without the column */
    space_t *two = parse_space(
        "{\"name\": \"s\", \"metric\": [\"loss\", \"cost\", \"time_total_s\"], \"mode\": "
        "[\"min\", \"min\", \"min\"], \"command\": [\"x\"], \"constraints\": {\"cost\": "
        "{\"<=\": 0.5}}, \"space\": {\"a\": {\"uniform\": [0, 1]}}}");
    REQUIRE(two);
    sim_curves_t *ok = NULL;
    CHECK(sim_synth_open("seed=1", two, &ok, err, sizeof err) == SIM_OK);
    sim_curves_free(ok);
    space_free(two);
    space_t *other = parse_space(
        "{\"name\": \"s\", \"metric\": [\"loss\", \"costs\"], \"mode\": [\"min\", \"min\"], "
        "\"command\": [\"x\"], \"space\": {\"a\": {\"uniform\": [0, 1]}}}");
    REQUIRE(other);
    sim_curves_t *bad = NULL;
    CHECK(sim_synth_open("seed=1", other, &bad, err, sizeof err) == SIM_EINVAL);
    CHECK(bad == NULL);
    CHECK_CONTAINS(err, "synthetic family: the metric \"costs\" is not reported (did you mean "
                        "\"cost\"?)");
    space_free(other);
    space_t *lim = parse_space(
        "{\"name\": \"s\", \"metric\": \"loss\", \"command\": [\"x\"], \"constraints\": "
        "{\"gpu_mem_gb\": {\"<=\": 16}}, \"space\": {\"a\": {\"uniform\": [0, 1]}}}");
    REQUIRE(lim);
    CHECK(sim_synth_open("seed=1", lim, &bad, err, sizeof err) == SIM_EINVAL);
    CHECK_CONTAINS(err, "the constrained key \"gpu_mem_gb\" is not reported");
    space_free(lim);

    /* the loss goes under the first metric, so that metric may not be one of the family's
     * own keys */
    space_t *own = parse_space("{\"name\": \"s\", \"metric\": \"cost\", \"command\": [\"x\"],"
                               " \"space\": {\"a\": {\"uniform\": [0, 1]}}}");
    REQUIRE(own);
    CHECK(sim_synth_open("seed=1", own, &bad, err, sizeof err) == SIM_EINVAL);
    CHECK(bad == NULL);
    CHECK_CONTAINS(err, "the first metric \"cost\" is one of the keys the family reports");
    space_free(own);
    sim_curves_free(c);
    sim_curves_free(c2);
    sim_curves_free(quiet);
    space_free(s);
}

/* The reference rule for numbers: the first of %.1g ... %.17g that reads back. */
static void shortest_ref(double v, char *buf)
{
    if (v == floor(v) && fabs(v) < 0x1.0p53) {
        snprintf(buf, 32, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* space_format_number starts at %.15g (it prints every number of every simulated result);
 * it must still print the same shortest form as trying every precision from 1. */
TEST(number_format_is_the_shortest_of_every_precision)
{
    char a[32], b[32];
    uint64_t x = 777;
    size_t n = 0, differ = 0;
    for (int i = 0; i < 300000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        double d;
        int kind = (int)(x >> 61);
        if (kind < 3) { /* any bit pattern */
            uint64_t bits = x ^ (x >> 29);
            memcpy(&d, &bits, sizeof d);
        } else if (kind < 6) { /* short decimals at every scale: 0.3, 1.25e-7, 4.5e+22 */
            int digits = 1 + (int)((x >> 20) % 15), e = (int)((x >> 8) % 80) - 40;
            char t[64];
            snprintf(t, sizeof t, "%.*e", digits - 1, (double)((x >> 12) % 100000) / 7.0 + 1);
            snprintf(t + strlen(t) - 4, 8, "e%+d", e);
            d = strtod(t, NULL);
        } else { /* what curves hold: values near 1 and small fractions */
            d = (double)(x >> 11) / 9007199254740992.0 * pow(10, (int)((x >> 3) % 12) - 6);
        }
        if (!isfinite(d)) continue;
        space_format_number(d, a);
        shortest_ref(d, b);
        n++;
        if (strcmp(a, b) != 0 && differ++ < 5)
            fprintf(stderr, "%.17g: %s, reference %s\n", d, a, b);
    }
    CHECK(n > 250000);
    CHECK(differ == 0);
    space_format_number(5e-324, a); /* subnormal: every precision is tried */
    CHECK_STR(a, "5e-324");
    space_format_number(2.2250738585072014e-308, a);
    CHECK_STR(a, "2.2250738585072014e-308");
}

TT_MAIN

/* The pool protocol's pool: every row's configuration, in file order, with the space's
 * constants; the unused ones shrink as trials take them, keeping file order; each trial
 * keeps its row; a row cannot be taken twice, nor a trial take two. The synthetic family has
 * no pool. */
TEST(pool_hands_out_each_row_once_in_file_order)
{
    space_t *s = parse_space(g_space);
    REQUIRE(s);
    char err[512];
    sim_curves_t *c = NULL;
    REQUIRE(sim_table_parse(table_text, strlen(table_text), "t.csv", s, &c, err, sizeof err) == 0);
    sim_pool_t *p = NULL;
    REQUIRE(sim_pool_new(c, &p, err, sizeof err) == 0);
    CHECK_EQ_INT(sim_pool_size(p), 3);
    const cJSON *const *cfg = NULL;
    REQUIRE(sim_pool_unused(p, &cfg) == 3);
    char *t0 = cJSON_PrintUnformatted(cfg[0]), *t2 = cJSON_PrintUnformatted(cfg[2]);
    CHECK_STR(t0, "{\"lr\":0.001,\"opt\":\"sgd\",\"width\":0,\"note\":\"fixed\"}");
    CHECK_STR(t2, "{\"lr\":0.01,\"opt\":\"adam\",\"width\":5,\"note\":\"fixed\"}");
    free(t0);
    free(t2);
    size_t row = 99;
    CHECK(sim_pool_row(p, 7, &row) == 0);
    REQUIRE(sim_pool_take(p, 7, 1) == 0); /* trial 7 takes row b */
    CHECK(sim_pool_row(p, 7, &row) == 1 && row == 1);
    CHECK_EQ_INT(sim_pool_taken(p), 1);
    REQUIRE(sim_pool_unused(p, &cfg) == 2);
    CHECK_STR(cJSON_GetObjectItem(cfg[0], "opt")->valuestring, "sgd");
    CHECK(cJSON_GetObjectItem(cfg[1], "lr")->valuedouble == 0.01);
    CHECK(sim_pool_take(p, 7, 0) == SIM_EINVAL); /* trial 7 has its row */
    CHECK(sim_pool_take(p, 8, 2) == SIM_EINVAL); /* only 2 left */
    REQUIRE(sim_pool_take(p, 8, 1) == 0);
    CHECK(sim_pool_row(p, 8, &row) == 1 && row == 2);
    REQUIRE(sim_pool_take(p, 1000, 0) == 0);
    CHECK(sim_pool_row(p, 1000, &row) == 1 && row == 0);
    CHECK_EQ_INT(sim_pool_unused(p, &cfg), 0);
    CHECK_EQ_INT(sim_pool_taken(p), 3);
    sim_pool_free(p);
    sim_curves_free(c);
    REQUIRE(sim_synth_open("seed=1", s, &c, err, sizeof err) == 0);
    CHECK(sim_pool_new(c, &p, err, sizeof err) == SIM_EINVAL);
    CHECK(strstr(err, "--pool needs a table") != NULL);
    sim_curves_free(c);
    space_free(s);
}

/* What running a trial to max_t costs is read in the scheduler's time_attr: a table that
 * reports every other training_iteration reaches 10 at its 5th row; a curve that ends before
 * is run to its end, and says so. */
TEST(iterations_to_max_t_follow_the_time_attr)
{
    space_t *s = parse_space(g_lenient);
    REQUIRE(s);
    char err[512], text[2048];
    size_t n = (size_t)snprintf(text, sizeof text,
                                "trial,config/lr,config/opt,config/width,training_iteration,"
                                "time_this_iter_s\n");
    for (int k = 1; k <= 8; k++)
        n += (size_t)snprintf(text + n, sizeof text - n, "a,0.01,sgd,1,%d,1\n", 2 * k);
    sim_curves_t *c = NULL;
    REQUIRE(sim_table_parse(text, n, "t.csv", s, &c, err, sizeof err) == 0);
    cJSON *cfg = cJSON_Parse("{\"lr\": 0.01, \"opt\": \"sgd\", \"width\": 1}");
    sim_curve_t cv;
    REQUIRE(sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0);
    int before = -1;
    CHECK_EQ_INT(sim_curve_iters_to(c, &cv, 10, &before), 5);
    CHECK_EQ_INT(before, 0);
    CHECK_EQ_INT(sim_curve_iters_to(c, &cv, 9, &before), 5); /* the first at or past it */
    CHECK_EQ_INT(sim_curve_iters_to(c, &cv, 16, &before), 8);
    CHECK_EQ_INT(before, 0);
    CHECK_EQ_INT(sim_curve_iters_to(c, &cv, 40, &before), 8);
    CHECK_EQ_INT(before, 1);
    CHECK_EQ_INT(sim_curve_iters_to(c, &cv, 0, &before), 8); /* 0: the whole curve */
    cJSON_Delete(cfg);
    sim_curves_free(c);
    space_free(s);
}
