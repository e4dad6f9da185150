/* End-to-end tests of the reading commands with several objectives (issue 30): tune best,
 * trials, show and report on real runs whose trials report the results chosen here (each
 * trial echoes one JSON line of a grid), then read back as a user would. Not for: the
 * ranking rule itself (tests/test_pareto.c) or the parser's refusals (tests/test_search.c).
 */
#define E2E_GROUP "cli_mo"
#include "e2e.h"
#include "tinytest.h"

#include <cjson/cJSON.h>

/* Runs experiment `name` in dir: trial i echoes results[i] (one JSON line, its only result).
 * metric and mode are JSON text ("[\"loss\", \"lat\"]"); constraints JSON text or NULL. */
static int mo_run(const char *dir, const char *name, const char *metric, const char *mode,
                  const char *constraints, const char *const *results, size_t n)
{
    cJSON *sp = cJSON_CreateObject();
    cJSON_AddStringToObject(sp, "name", name);
    cJSON_AddItemToObject(sp, "metric", cJSON_Parse(metric));
    cJSON_AddItemToObject(sp, "mode", cJSON_Parse(mode));
    if (constraints) cJSON_AddItemToObject(sp, "constraints", cJSON_Parse(constraints));
    cJSON_AddNumberToObject(sp, "max_concurrent", 1);
    cJSON *cmd = cJSON_AddArrayToObject(sp, "command");
    cJSON_AddItemToArray(cmd, cJSON_CreateString("/bin/echo"));
    cJSON_AddItemToArray(cmd, cJSON_CreateString("{r}"));
    cJSON *grid = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(grid, cJSON_CreateString(results[i]));
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "grid_search", grid);
    cJSON *space = cJSON_AddObjectToObject(sp, "space");
    cJSON_AddItemToObject(space, "r", r);
    char *text = cJSON_Print(sp);
    cJSON_Delete(sp);
    space_file(dir, text);
    free(text);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, a);
    int code = o.code;
    if (code != 0) fprintf(stderr, "tune run: %s\n%s\n", o.out, o.err);
    out_free(&o);
    return code;
}

/* Two objectives, loss and lat (both min), gpu_mem <= 16: trials 0, 1 and 5 are the front,
 * 2 is dominated by 0, 3 beats everyone but is over the limit, 4's loss is no number. */
static const char *const six[] = {"{\"loss\": 1, \"lat\": 5, \"gpu_mem\": 8}",
                                  "{\"loss\": 2, \"lat\": 2, \"gpu_mem\": 8}",
                                  "{\"loss\": 3, \"lat\": 6, \"gpu_mem\": 8}",
                                  "{\"loss\": 0.5, \"lat\": 1, \"gpu_mem\": 20}",
                                  "{\"loss\": \"nan\", \"lat\": 1, \"gpu_mem\": 8}",
                                  "{\"loss\": 0.9, \"lat\": 7, \"gpu_mem\": 12}"};
#define LOSS_LAT "[\"loss\", \"lat\"]"
#define MIN_MIN "[\"min\", \"min\"]"
#define MEM16 "{\"gpu_mem\": {\"<=\": 16}}"

static const cJSON *member(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

TEST(best_json_is_the_front_in_order)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "best_json");
    REQUIRE(mo_run(dir, "mo", LOSS_LAT, MIN_MIN, MEM16, six, 6) == 0);
    const char *a[] = {"best", "mo", "--json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    cJSON *j = cJSON_Parse(o.out);
    REQUIRE(cJSON_IsObject(j));
    const cJSON *objs = member(j, "objectives");
    REQUIRE(cJSON_GetArraySize(objs) == 2);
    CHECK_STR(member(cJSON_GetArrayItem(objs, 0), "metric")->valuestring, "loss");
    CHECK_STR(member(cJSON_GetArrayItem(objs, 1), "mode")->valuestring, "min");
    const cJSON *cons = member(j, "constraints");
    REQUIRE(cJSON_GetArraySize(cons) == 1);
    CHECK_STR(member(cJSON_GetArrayItem(cons, 0), "key")->valuestring, "gpu_mem");
    CHECK_STR(member(cJSON_GetArrayItem(cons, 0), "op")->valuestring, "<=");
    CHECK(member(cJSON_GetArrayItem(cons, 0), "bound")->valuedouble == 16);
    CHECK_EQ_INT(member(j, "trials")->valueint, 6);
    CHECK_EQ_INT(member(j, "feasible")->valueint, 5); /* 3 is over the limit */
    const cJSON *front = member(j, "front");
    REQUIRE(cJSON_GetArraySize(front) == 3);
    /* by the first objective (loss, min), then id: 5 (0.9), 0 (1), 1 (2) */
    static const int want[] = {5, 0, 1};
    static const double loss[] = {0.9, 1, 2}, lat[] = {7, 5, 2};
    for (int i = 0; i < 3; i++) {
        const cJSON *row = cJSON_GetArrayItem(front, i);
        CHECK_EQ_INT(member(row, "id")->valueint, want[i]);
        const cJSON *v = member(row, "values");
        CHECK(member(v, "loss")->valuedouble == loss[i]);
        CHECK(member(v, "lat")->valuedouble == lat[i]);
        CHECK(cJSON_IsNumber(member(row, "violation")) && member(row, "violation")->valueint == 0);
        /* the fields of the single-objective row */
        CHECK(cJSON_IsString(member(row, "name")));
        CHECK_STR(member(row, "status")->valuestring, "TERMINATED");
        CHECK(cJSON_IsFalse(member(row, "early_stopped")));
        CHECK(cJSON_IsObject(member(row, "config")));
        CHECK_EQ_INT(member(row, "iterations")->valueint, 1);
        CHECK(cJSON_IsObject(member(row, "last_result")));
        CHECK(cJSON_IsString(member(row, "trial_dir")));
    }
    cJSON_Delete(j);
    out_free(&o);

    /* the table: a line of counts, then the front in the same order */
    const char *b[] = {"best", "mo", NULL};
    o = run_tune(dir, b);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Pareto front of mo: 3 trials (of 6 with a result: 5 feasible, 1 "
                          "violating a constraint)");
    CHECK_CONTAINS(o.out, "loss (min)");
    CHECK_CONTAINS(o.out, "lat (min)");
    const char *p5 = strstr(o.out, "trial_00005"), *p0 = strstr(o.out, "trial_00000"),
               *p1 = strstr(o.out, "trial_00001");
    CHECK(p5 && p0 && p1 && p5 < p0 && p0 < p1);
    CHECK(!strstr(o.out, "trial_00002") && !strstr(o.out, "trial_00003") &&
          !strstr(o.out, "trial_00004"));
    out_free(&o);

    /* --scope all has no meaning for several objectives: refused in words */
    const char *c[] = {"best", "mo", "--scope", "all", NULL};
    o = run_tune(dir, c);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "--scope all has no meaning with several objectives");
    out_free(&o);
}

TEST(a_max_objective_is_shown_as_reported)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "max");
    static const char *const r[] = {"{\"acc\": 0.9, \"lat\": 5}", "{\"acc\": 0.8, \"lat\": 2}",
                                    "{\"acc\": 0.7, \"lat\": 6}", "{\"acc\": 0.95, \"lat\": 9}"};
    REQUIRE(mo_run(dir, "mx", "[\"acc\", \"lat\"]", "[\"max\", \"min\"]", NULL, r, 4) == 0);
    const char *a[] = {"best", "--json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    cJSON *j = cJSON_Parse(o.out);
    REQUIRE(j);
    const cJSON *front = member(j, "front");
    /* 2 is dominated by 0 (less accurate, slower); the rest by acc, best (highest) first */
    REQUIRE(cJSON_GetArraySize(front) == 3);
    CHECK_EQ_INT(member(cJSON_GetArrayItem(front, 0), "id")->valueint, 3);
    CHECK_EQ_INT(member(cJSON_GetArrayItem(front, 1), "id")->valueint, 0);
    CHECK_EQ_INT(member(cJSON_GetArrayItem(front, 2), "id")->valueint, 1);
    CHECK(member(member(cJSON_GetArrayItem(front, 0), "values"), "acc")->valuedouble == 0.95);
    CHECK_EQ_INT(cJSON_GetArraySize(member(j, "constraints")), 0);
    CHECK_EQ_INT(member(j, "feasible")->valueint, 4);
    cJSON_Delete(j);
    out_free(&o);
}

TEST(every_trial_infeasible_names_the_closest)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "infeasible");
    static const char *const r[] = {"{\"loss\": 1, \"lat\": 5, \"gpu_mem\": 30}",
                                    "{\"loss\": 2, \"lat\": 2, \"gpu_mem\": 19}",
                                    "{\"loss\": 3, \"lat\": 6, \"gpu_mem\": 24}"};
    REQUIRE(mo_run(dir, "inf", LOSS_LAT, MIN_MIN, MEM16, r, 3) == 0);
    const char *a[] = {"best", "inf", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "no trial of inf meets the constraints (3 trials with a result, none "
                          "feasible)");
    /* trial 1 is closest: 19 is 3 over the bound */
    CHECK_CONTAINS(o.err, "the closest is trial_00001 (total violation 3): gpu_mem=19 (<= 16, "
                          "by 3)");
    CHECK_EQ_INT((int)strlen(o.out), 0);
    out_free(&o);
    const char *b[] = {"best", "inf", "--json", NULL};
    o = run_tune(dir, b);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "gpu_mem=19");
    out_free(&o);
}

TEST(trials_mark_the_front_and_the_infeasible)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "trials");
    REQUIRE(mo_run(dir, "mo", LOSS_LAT, MIN_MIN, MEM16, six, 6) == 0);
    const char *a[] = {"trials", "mo", "--json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    cJSON *arr = cJSON_Parse(o.out);
    REQUIRE(cJSON_GetArraySize(arr) == 6);
    /* front levels: 0, 1, 5 on the front; 2 behind 0; 3 infeasible; 4 NaN */
    static const int level[] = {0, 0, 1, -1, -1, 0};
    for (int i = 0; i < 6; i++) {
        const cJSON *t = cJSON_GetArrayItem(arr, i);
        const cJSON *fr = member(t, "front");
        if (level[i] >= 0)
            CHECK(cJSON_IsNumber(fr) && fr->valueint == level[i]);
        else
            CHECK(cJSON_IsNull(fr));
        const cJSON *inf = member(t, "infeasible");
        if (i == 3) {
            REQUIRE(cJSON_IsString(inf));
            CHECK_STR(inf->valuestring, "gpu_mem=20 (<= 16, by 4)");
            CHECK(member(t, "violation")->valuedouble == 4);
        } else {
            CHECK(cJSON_IsNull(inf));
            CHECK(member(t, "violation")->valuedouble == 0);
        }
    }
    /* a value that is no number is null, not 0 */
    CHECK(cJSON_IsNull(member(member(cJSON_GetArrayItem(arr, 4), "values"), "loss")));
    CHECK(member(member(cJSON_GetArrayItem(arr, 4), "values"), "lat")->valuedouble == 1);
    cJSON_Delete(arr);
    out_free(&o);

    const char *c[] = {"trials", "mo", "--csv", NULL};
    o = run_tune(dir, c);
    CHECK_EQ_INT(o.code, 0);
    /* a column per objective, then front and infeasible, after iter */
    CHECK_CONTAINS(o.out, ",iter,loss,lat,front,infeasible");
    CHECK(!strstr(o.out, "last_metric"));
    CHECK(!strstr(o.out, "trial_no"));
    CHECK_CONTAINS(o.out, ",1,0.5,1,,\"gpu_mem=20 (<= 16, by 4)\"");
    out_free(&o);

    /* --sort by an objective: lat, ascending; a NaN-free column sorts by number */
    const char *s[] = {"trials", "mo", "--csv", "--sort", "lat", NULL};
    o = run_tune(dir, s);
    CHECK_EQ_INT(o.code, 0);
    const char *l3 = strstr(o.out, "trial_00003"), *l1 = strstr(o.out, "trial_00001"),
               *l0 = strstr(o.out, "trial_00000"), *l5 = strstr(o.out, "trial_00005");
    CHECK(l3 && l1 && l0 && l5 && l3 < l1 && l1 < l0 && l0 < l5);
    out_free(&o);
    const char *f[] = {"trials", "mo", "--sort", "front", NULL};
    o = run_tune(dir, f);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strstr(o.out, "trial_00005") < strstr(o.out, "trial_00002"));
    out_free(&o);
}

TEST(show_says_objectives_feasibility_and_front)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "show");
    REQUIRE(mo_run(dir, "mo", LOSS_LAT, MIN_MIN, MEM16, six, 6) == 0);
    const char *a[] = {"show", "mo", "0", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "objectives   loss=1 (min), lat=5 (min)");
    CHECK_CONTAINS(o.out, "feasible     yes");
    CHECK_CONTAINS(o.out, "front        0: on the Pareto front (3 trials, of 6 with a result)");
    out_free(&o);
    const char *b[] = {"show", "mo", "3", NULL};
    o = run_tune(dir, b);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "feasible     no: gpu_mem=20 (<= 16, by 4)");
    CHECK_CONTAINS(o.out, "front        - (violates a constraint");
    out_free(&o);
    const char *c[] = {"show", "mo", "2", NULL};
    o = run_tune(dir, c);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "front        1: dominated");
    out_free(&o);
    const char *d[] = {"show", "mo", "4", NULL};
    o = run_tune(dir, d);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "objectives   loss=- (min), lat=1 (min)");
    CHECK_CONTAINS(o.out, "front        - (an objective has no value");
    out_free(&o);
}

TEST(report_carries_the_front_and_the_hypervolume)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "report");
    REQUIRE(mo_run(dir, "mo", LOSS_LAT, MIN_MIN, MEM16, six, 6) == 0);
    const char *a[] = {"report", "mo", "-o", "-", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    const char *s = strstr(o.out, "<script type=\"application/json\" id=\"tune-data\">");
    REQUIRE(s);
    s = strchr(s, '>') + 1;
    const char *e = strstr(s, "</script>");
    REQUIRE(e);
    char *blob = strndup(s, (size_t)(e - s));
    cJSON *d = cJSON_Parse(blob);
    free(blob);
    REQUIRE(d);
    const cJSON *mo = member(d, "mo");
    REQUIRE(cJSON_IsObject(mo));
    CHECK_EQ_INT(member(mo, "nfront")->valueint, 3);
    CHECK_EQ_INT(member(mo, "feasible")->valueint, 5);
    const cJSON *pts = member(mo, "points");
    REQUIRE(cJSON_GetArraySize(pts) == 6);
    int on = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pts)
    {
        on += member(p, "front")->valueint;
        if (member(p, "no")->valueint == 3)
            CHECK_STR(member(p, "why")->valuestring, "gpu_mem=20 (<= 16, by 4)");
    }
    CHECK_EQ_INT(on, 3);
    /* the front in tune best's order (loss 0.9, 1, 2), which the parallel coordinates
     * draw: the page ranks nothing itself */
    char *order = cJSON_PrintUnformatted(member(mo, "order"));
    CHECK_STR(order, "[5,0,1]");
    free(order);
    /* no one best trial for the page to single out */
    CHECK_EQ_INT(member(d, "best")->valueint, -1);
    const cJSON *hv = member(mo, "hv");
    REQUIRE(cJSON_IsObject(hv));
    /* the reference point: each objective's worst last value (3 and 7) plus 10% of its
     * range over the trials' last points (0.5..3 and 1..7) */
    CHECK(fabs(cJSON_GetArrayItem(member(hv, "ref"), 0)->valuedouble - 3.25) < 1e-9);
    CHECK(fabs(cJSON_GetArrayItem(member(hv, "ref"), 1)->valuedouble - 7.6) < 1e-9);
    CHECK(cJSON_IsString(member(hv, "rule")));
    int nt = cJSON_GetArraySize(member(hv, "t"));
    REQUIRE(nt == 6 && cJSON_GetArraySize(member(hv, "v")) == 6);
    /* it never falls (points only improve or join), and ends at the front's volume */
    double prev = 0;
    for (int i = 0; i < nt; i++) {
        double v = cJSON_GetArrayItem(member(hv, "v"), i)->valuedouble;
        CHECK(v >= prev);
        prev = v;
    }
    /* front 0.9/7, 1/5, 2/2 against 3.25/7.6: staircase area */
    double want = (3.25 - 0.9) * (7.6 - 7) + (3.25 - 1) * (7 - 5) + (3.25 - 2) * (5 - 2);
    CHECK(fabs(prev - want) < 1e-9);
    cJSON_Delete(d);
    out_free(&o);
}

TEST(asha_run_shows_each_objective_and_show_gives_the_rung_words)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "asha");
    snprintf(sp, sizeof sp,
             "{\"name\": \"moasha\", \"metric\": [\"loss\", \"acc\"], \"mode\": [\"min\", \"max\"],"
             " \"num_samples\": 12, \"max_concurrent\": 4, \"seed\": 3,"
             " \"constraints\": {\"acc\": {\">=\": 0.2}},"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"9\"],"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
             " \"reduction_factor\": 3},"
             " \"space\": {\"lr\": {\"loguniform\": [0.00001, 1]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    /* the status block (stdout is no terminal): a column per objective, the front's size */
    CHECK_CONTAINS(o.out, "\nPareto front: ");
    CHECK_CONTAINS(o.out, "| loss ");
    CHECK_CONTAINS(o.out, "| acc ");
    CHECK_CONTAINS(o.out, "| front");
    /* no one best trial at the end: where the front is */
    CHECK_CONTAINS(o.out,
                   "Several objectives: the Pareto front of the trials is `tune best moasha`");
    CHECK(!strstr(o.out, "Best trial: "));
    out_free(&o);
    long long stopped = db_int(dir, "SELECT t.trial_no FROM trials t WHERE t.early_stopped = 1"
                                    " ORDER BY t.trial_no LIMIT 1");
    REQUIRE(stopped >= 0);
    char no[32], q[256];
    snprintf(no, sizeof no, "%lld", stopped);
    snprintf(q, sizeof q,
             "SELECT length(d.reason) FROM decisions d JOIN trials t ON t.id = d.trial_id"
             " WHERE t.trial_no = %lld AND d.action = 'stop'",
             stopped);
    REQUIRE(db_int(dir, q) > 0);
    const char *s[] = {"show", "moasha", no, "--lines", "0", NULL};
    o = run_tune(dir, s);
    CHECK_EQ_INT(o.code, 0);
    /* the scheduler's words, as recorded, on the status line and in the decisions */
    sqlite3 *db;
    sqlite3_stmt *st;
    char path[4300];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    snprintf(q, sizeof q,
             "SELECT d.reason FROM decisions d JOIN trials t ON t.id = d.trial_id"
             " WHERE t.trial_no = %lld AND d.action = 'stop'",
             stopped);
    REQUIRE(testdb_row(path, q, &db, &st));
    char status[1024];
    snprintf(status, sizeof status, "status       TERMINATED: stopped early by asha: %s\n",
             (const char *)sqlite3_column_text(st, 0));
    testdb_done(db, st);
    CHECK_CONTAINS(o.out, status);
    CHECK_CONTAINS(o.out, "decisions (asha, several objectives):");
    CHECK_CONTAINS(o.out, "objectives   loss=");
    CHECK_CONTAINS(o.out, "feasible     yes");
    out_free(&o);
}

TEST(one_objective_with_constraints_best_is_the_best_feasible)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "one_constrained");
    /* trial 3 has the lowest loss but is over the limit: trial 5 (0.9) is best */
    REQUIRE(mo_run(dir, "oc", "\"loss\"", "\"min\"", MEM16, six, 6) == 0);
    const char *a[] = {"best", "oc", "--json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    cJSON *j = cJSON_Parse(o.out);
    REQUIRE(cJSON_IsObject(j));
    CHECK_EQ_INT(member(j, "id")->valueint, 5);
    CHECK(member(j, "value")->valuedouble == 0.9);
    CHECK_STR(member(j, "metric")->valuestring, "loss");
    CHECK(!member(j, "front"));
    cJSON_Delete(j);
    out_free(&o);
    const char *t[] = {"trials", "oc", "--csv", NULL};
    o = run_tune(dir, t);
    CHECK_EQ_INT(o.code, 0);
    /* the metric's columns as ever, then the front and what is violated */
    CHECK_CONTAINS(o.out, ",iter,front,infeasible,last_metric,best_metric,error\n");
    CHECK_CONTAINS(o.out, "\"gpu_mem=20 (<= 16, by 4)\"");
    out_free(&o);
    const char *s[] = {"best", "oc", "--scope", "all", NULL};
    o = run_tune(dir, s);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "--scope all cannot be used with constraints");
    out_free(&o);

    fresh_dir(dir, sizeof dir, "one_infeasible");
    static const char *const r[] = {"{\"loss\": 1, \"gpu_mem\": 17}",
                                    "{\"loss\": 2, \"gpu_mem\": 40}"};
    REQUIRE(mo_run(dir, "oi", "\"loss\"", "\"min\"", MEM16, r, 2) == 0);
    const char *b[] = {"best", "oi", NULL};
    o = run_tune(dir, b);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err,
                   "the closest is trial_00000 (total violation 1): gpu_mem=17 (<= 16, by 1)");
    out_free(&o);
}

TEST(one_objective_output_is_unchanged)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "one");
    REQUIRE(mo_run(dir, "one", "\"loss\"", "\"min\"", NULL, six, 3) == 0);
    const char *a[] = {"best", "one", "--json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    cJSON *j = cJSON_Parse(o.out);
    REQUIRE(cJSON_IsObject(j));
    /* the single row as before: no front, no values */
    CHECK_EQ_INT(member(j, "id")->valueint, 0);
    CHECK(cJSON_IsString(member(j, "metric")));
    CHECK(cJSON_IsNumber(member(j, "value")));
    CHECK(!member(j, "front") && !member(j, "values"));
    cJSON_Delete(j);
    out_free(&o);
    const char *b[] = {"trials", "one", "--csv", NULL};
    o = run_tune(dir, b);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strncmp(o.out, "trial,status,slice,r,iter,last_metric,best_metric,error\n", 56) == 0);
    out_free(&o);
    const char *c[] = {"best", "one", "--scope", "all", NULL};
    o = run_tune(dir, c);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
}

/* tune ls lists what tune best would print: with several objectives each objective and
 * mode and the Pareto front's size where one objective names its best trial; with one
 * objective and constraints the best feasible trial; with one objective the row as ever. */
TEST(ls_gives_the_front_size_and_the_best_feasible)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "ls");
    REQUIRE(mo_run(dir, "mo", LOSS_LAT, MIN_MIN, MEM16, six, 6) == 0);
    REQUIRE(mo_run(dir, "oc", "\"loss\"", "\"min\"", MEM16, six, 6) == 0);
    REQUIRE(mo_run(dir, "one", "\"loss\"", "\"min\"", NULL, six, 4) == 0);
    const char *a[] = {"ls", "--json", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    cJSON *j = cJSON_Parse(o.out);
    REQUIRE(cJSON_GetArraySize(j) == 3);
    const cJSON *mo = cJSON_GetArrayItem(j, 0), *oc = cJSON_GetArrayItem(j, 1),
                *one = cJSON_GetArrayItem(j, 2);
    CHECK_STR(member(mo, "name")->valuestring, "mo");
    CHECK_STR(member(mo, "metric")->valuestring, "loss, lat");
    CHECK_STR(member(mo, "mode")->valuestring, "min, min");
    CHECK(cJSON_IsNull(member(mo, "best_metric")));
    /* 0, 1 and 5 on the front, of the 6 trials with a result */
    CHECK_STR(member(mo, "best_trial")->valuestring, "front: 3 of 6");
    /* trial 3's loss is the lowest but over the limit: tune best names trial 5 */
    CHECK_STR(member(oc, "metric")->valuestring, "loss");
    CHECK_STR(member(oc, "best_trial")->valuestring, "trial_00005");
    CHECK(cJSON_IsNumber(member(oc, "best_metric")) &&
          member(oc, "best_metric")->valuedouble == 0.9);
    /* no constraints: the lowest last loss, trial 3 */
    CHECK_STR(member(one, "best_trial")->valuestring, "trial_00003");
    CHECK(member(one, "best_metric")->valuedouble == 0.5);
    cJSON_Delete(j);
    out_free(&o);
    const char *t[] = {"ls", NULL};
    o = run_tune(dir, t);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "front: 3 of 6");
    CHECK_CONTAINS(o.out, "loss, lat");
    out_free(&o);
}

TT_MAIN
