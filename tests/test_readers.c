/* End-to-end tests of the commands that read an experiment back (ls, trials, best, query,
 * export, show, plot, report) and of rm: their JSON against the database, configurations
 * with the digits the trial's argv received, escaped trial output, names and TUNE_DB.
 * Not for: running experiments (test_cli.c) or the report's page itself (test_report.c). */
#include "e2e.h"
#include "tinytest.h"

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <sys/file.h>

#define GROUP "readers"

/* A run of the synthetic trial in a fresh dir; the space's "space" and extras given. */
static void run_fresh(char *dir, size_t n, const char *name, const char *space)
{
    const char *extra[] = {"--quiet", NULL};
    struct out o = run_space(dir, n, GROUP, name, space, extra);
    if (o.code != 0) fprintf(stderr, "tune run failed (%d):\n%s\n%s\n", o.code, o.out, o.err);
    REQUIRE(o.code == 0);
    out_free(&o);
}

static struct out tune2(const char *dir, const char *a0, const char *a1, const char *a2,
                        const char *a3)
{
    const char *a[] = {a0, a1, a2, a3, NULL};
    return run_tune(dir, a);
}

/* Every row of one query as text, one string per cell, in the order SQLite gives them. */
struct rows {
    int n, ncol;
    char **v;
};

static struct rows db_rows(const char *dir, const char *sql)
{
    struct rows r = {0};
    char path[4200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    sqlite3 *db = testdb_open(path, 0);
    sqlite3_stmt *st = NULL;
    if (!db || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "query failed: %s\n", db ? sqlite3_errmsg(db) : "no db");
        sqlite3_close(db);
        return r;
    }
    r.ncol = sqlite3_column_count(st);
    while (sqlite3_step(st) == SQLITE_ROW) {
        r.v = realloc(r.v, (size_t)(r.n + 1) * (size_t)r.ncol * sizeof *r.v);
        for (int c = 0; c < r.ncol; c++) {
            const unsigned char *t = sqlite3_column_text(st, c);
            char buf[40];
            if (sqlite3_column_type(st, c) == SQLITE_FLOAT) {
                /* SQLite's own text of a real keeps 15 digits: the shortest exact form. */
                double d = sqlite3_column_double(st, c);
                for (int prec = 1; prec <= 17; prec++) {
                    snprintf(buf, sizeof buf, "%.*g", prec, d);
                    if (strtod(buf, NULL) == d) break;
                }
                t = (const unsigned char *)buf;
            }
            r.v[r.n * r.ncol + c] = t ? strdup((const char *)t) : NULL;
        }
        r.n++;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return r;
}

static void rows_free(struct rows *r)
{
    for (int i = 0; i < r->n * r->ncol; i++)
        free(r->v[i]);
    free(r->v);
}

static double num(const char *s)
{
    return s ? strtod(s, NULL) : NAN;
}

/* A member's number (NaN when it is missing or not a number), so that a wrong output
 * fails a check rather than the test program. */
static double jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static int jint(const cJSON *o, const char *key)
{
    double d = jnum(o, key);
    return isnan(d) ? -999 : (int)d;
}

static const char *const asha_space =
    "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 9,"
    " \"max_concurrent\": 2, \"seed\": 5,"
    " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"9\"],"
    " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
    "                 \"reduction_factor\": 3},"
    " \"space\": {\"lr\": {\"loguniform\": [1e-5, 1]}, \"m\": {\"uniform\": [0, 1]}}}";

/* ---- item 17: the JSON of every command is the database's ------------------------ */
TEST(json_of_every_command_matches_the_database)
{
    char dir[4096], sp[8192];
    e2e_paths();
    snprintf(sp, sizeof sp, asha_space, "j", g_synth);
    run_fresh(dir, sizeof dir, "json", sp);
    long long stopped = db_int(dir, "SELECT count(*) FROM trials WHERE early_stopped = 1");
    REQUIRE(stopped > 0); /* ASHA stopped some: early_stopped has both values to show */

    /* trials --json: early_stopped a boolean, integers numbers, equal to the rows. */
    struct out o = tune2(dir, "trials", "j", "--json", NULL);
    CHECK_EQ_INT(o.code, 0);
    cJSON *arr = cJSON_Parse(o.out);
    REQUIRE(cJSON_IsArray(arr));
    struct rows r = db_rows(dir, "SELECT trial_no, early_stopped, iterations, attempt, exit_code,"
                                 " last_metric FROM trial_summary ORDER BY trial_no");
    REQUIRE(r.n == 9 && cJSON_GetArraySize(arr) == 9);
    int seen_true = 0;
    for (int i = 0; i < r.n; i++) {
        cJSON *t = cJSON_GetArrayItem(arr, i);
        cJSON *es = cJSON_GetObjectItem(t, "early_stopped");
        CHECK(cJSON_IsBool(es));
        CHECK_EQ_INT(cJSON_IsTrue(es), atoi(r.v[i * 6 + 1]));
        seen_true += cJSON_IsTrue(es);
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(t, "id")));
        CHECK_EQ_INT(jint(t, "id"), atoi(r.v[i * 6]));
        CHECK_EQ_INT(jint(t, "iterations"), atoi(r.v[i * 6 + 2]));
        CHECK_EQ_INT(jint(t, "attempt"), atoi(r.v[i * 6 + 3]));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(t, "exit_code")));
        CHECK(jnum(t, "last_metric") == num(r.v[i * 6 + 5]));
    }
    CHECK_EQ_INT(seen_true, stopped);
    rows_free(&r);
    cJSON_Delete(arr);
    out_free(&o);

    /* best --json: the same trial as the database's order, its value exactly. */
    o = tune2(dir, "best", "j", "--json", NULL);
    CHECK_EQ_INT(o.code, 0);
    cJSON *b = cJSON_Parse(o.out);
    REQUIRE(cJSON_IsObject(b));
    r = db_rows(dir, "SELECT trial_no, early_stopped, last_metric, iterations FROM trial_summary"
                     " WHERE last_metric IS NOT NULL ORDER BY last_metric, trial_no LIMIT 1");
    REQUIRE(r.n == 1);
    CHECK_EQ_INT(jint(b, "id"), atoi(r.v[0]));
    CHECK(cJSON_IsBool(cJSON_GetObjectItem(b, "early_stopped")));
    CHECK_EQ_INT(cJSON_IsTrue(cJSON_GetObjectItem(b, "early_stopped")), atoi(r.v[1]));
    CHECK(jnum(b, "value") == num(r.v[2]));
    CHECK_EQ_INT(jint(b, "iterations"), atoi(r.v[3]));
    rows_free(&r);
    cJSON_Delete(b);
    out_free(&o);

    /* ls --json: counts are numbers equal to the summary's. */
    o = tune2(dir, "ls", "--json", NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    arr = cJSON_Parse(o.out);
    REQUIRE(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == 1);
    cJSON *x = cJSON_GetArrayItem(arr, 0);
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(x, "early_stopped")));
    CHECK_EQ_INT(jint(x, "early_stopped"), stopped);
    CHECK_EQ_INT(jint(x, "trials"), 9);
    CHECK_EQ_INT(jint(x, "results"), db_int(dir, "SELECT count(*) FROM results"));
    cJSON_Delete(arr);
    out_free(&o);

    /* query --json: integers and reals as numbers, an infinity (which JSON cannot say) as
     * null, so that the output stays JSON. */
    o = tune2(dir, "query",
              "SELECT trial_no, early_stopped, started_at, 1e999 AS inf, 'x' AS t FROM trials"
              " ORDER BY trial_no",
              "--json", NULL);
    CHECK_EQ_INT(o.code, 0);
    arr = cJSON_Parse(o.out);
    REQUIRE(cJSON_IsArray(arr) && cJSON_GetArraySize(arr) == 9);
    r = db_rows(dir, "SELECT early_stopped, started_at FROM trials ORDER BY trial_no");
    for (int i = 0; i < 9; i++) {
        cJSON *q = cJSON_GetArrayItem(arr, i);
        CHECK(cJSON_IsNumber(cJSON_GetObjectItem(q, "early_stopped")));
        CHECK_EQ_INT(jint(q, "early_stopped"), atoi(r.v[i * 2]));
        CHECK(jnum(q, "started_at") == num(r.v[i * 2 + 1]));
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(q, "inf")));
        CHECK(cJSON_IsString(cJSON_GetObjectItem(q, "t")));
    }
    rows_free(&r);
    cJSON_Delete(arr);
    out_free(&o);

    /* export --json: trial_id a number, the trial's name, every result. */
    o = tune2(dir, "export", "j", "--json", NULL);
    CHECK_EQ_INT(o.code, 0);
    arr = cJSON_Parse(o.out);
    REQUIRE(cJSON_IsArray(arr));
    CHECK_EQ_INT(cJSON_GetArraySize(arr), db_int(dir, "SELECT count(*) FROM results"));
    cJSON *e;
    int bad = 0;
    cJSON_ArrayForEach(e, arr)
    {
        cJSON *id = cJSON_GetObjectItem(e, "trial_id");
        char want[32];
        snprintf(want, sizeof want, "trial_%05d", id ? id->valueint : -1);
        bad += !cJSON_IsNumber(id) || !cJSON_IsString(cJSON_GetObjectItem(e, "trial")) ||
               strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(e, "trial")), want) != 0 ||
               !cJSON_IsNumber(cJSON_GetObjectItem(e, "training_iteration"));
    }
    CHECK_EQ_INT(bad, 0);
    cJSON_Delete(arr);
    out_free(&o);
}

/* ---- item 16: the recorded configuration is the one that ran --------------------- */
/* The value of key in a flat JSON text's top level, as a double (NaN if absent). */
static double json_num(const char *text, const char *key)
{
    cJSON *j = cJSON_Parse(text);
    cJSON *v = cJSON_GetObjectItem(j, key);
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    cJSON_Delete(j);
    return d;
}

TEST(validate_prints_configurations_as_their_argv)
{
    char dir[4096], sp[2048];
    e2e_fresh_dir(dir, sizeof dir, GROUP, "validate_digits");
    snprintf(sp, sizeof sp,
             "{\"name\": \"v\", \"num_samples\": 1500, \"seed\": 11,"
             " \"command\": [\"prog\", \"{lr}\", \"{m}\"],"
             " \"space\": {\"lr\": {\"loguniform\": [1e-6, 10]}, \"m\": {\"uniform\": [-3, 9]}}}");
    space_file(dir, sp);
    struct out o = tune2(dir, "validate", "space.json", "-n", "1500");
    CHECK_EQ_INT(o.code, 0);
    /* Lines: "trial_NNNNN {json}" then "  argv: [prog] [LR] [M]". */
    int n = 0, bad = 0, long_digits = 0;
    for (char *p = o.out; (p = strstr(p, "\ntrial_")) != NULL; p++) {
        char *js = strchr(p + 1, ' ');
        char *nl = strchr(js, '\n');
        char *av = strstr(nl, "argv: [prog] [");
        REQUIRE(js && nl && av);
        *nl = 0;
        char lr[64], m[64];
        REQUIRE(sscanf(av, "argv: [prog] [%63[^]]] [%63[^]]]", lr, m) == 2);
        bad +=
            json_num(js + 1, "lr") != strtod(lr, NULL) || json_num(js + 1, "m") != strtod(m, NULL);
        /* and with the same digits, not merely the same double */
        char want[160];
        snprintf(want, sizeof want, "{\"lr\":%s,\"m\":%s}", lr, m);
        bad += strcmp(js + 1, want) != 0;
        long_digits += strlen(lr) > 17; /* 16-17 significant digits: cJSON's %.15g loses them */
        *nl = '\n';
        n++;
    }
    CHECK_EQ_INT(n, 1500);
    CHECK_EQ_INT(bad, 0);
    CHECK(long_digits > 100);
    out_free(&o);
}

TEST(recorded_configuration_is_the_one_argv_received)
{
    char dir[4096], sp[8192];
    e2e_paths();
    snprintf(sp, sizeof sp,
             "{\"name\": \"dig\", \"metric\": \"loss\", \"num_samples\": 120, \"seed\": 2,"
             " \"max_concurrent\": 2,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"1\", \"--argv\", \"--env\","
             " \"{m}\"],"
             " \"space\": {\"lr\": {\"loguniform\": [1e-6, 10]}, \"m\": {\"uniform\": [0, 1]}}}",
             g_synth);
    run_fresh(dir, sizeof dir, "digits", sp);
    /* What argv received, from the trial's own echo of it (a result line). */
    struct rows r = db_rows(
        dir, "SELECT t.trial_no, json_extract(r.data, '$.arg2'), json_extract(r.data, '$.arg7'),"
             " t.config, (SELECT value_json FROM params p WHERE p.trial_id = t.id AND p.name='lr'),"
             " (SELECT value_json FROM params p WHERE p.trial_id = t.id AND p.name='m'),"
             " t.trial_dir"
             " FROM trials t JOIN results r ON r.trial_id = t.id"
             " WHERE json_extract(r.data, '$.arg1') = '--lr' ORDER BY t.trial_no");
    REQUIRE(r.n == 120);
    struct out tj = tune2(dir, "trials", "dig", "--json", NULL);
    struct out tc = tune2(dir, "trials", "dig", "--csv", NULL);
    struct out ex = tune2(dir, "export", "dig", "--json", NULL);
    cJSON *trials = cJSON_Parse(tj.out), *exp = cJSON_Parse(ex.out);
    REQUIRE(cJSON_GetArraySize(trials) == 120);
    int bad_db = 0, bad_env = 0, bad_json = 0, bad_csv = 0, bad_export = 0, long_digits = 0;
    for (int i = 0; i < r.n; i++) {
        char **v = r.v + i * r.ncol;
        const char *lr = v[1], *m = v[2];
        long_digits += strlen(lr) > 17;
        /* The database: the params' text is argv's, and trials.config says the same. */
        char want[200];
        snprintf(want, sizeof want, "{\"lr\":%s,\"m\":%s}", lr, m);
        bad_db += strcmp(v[4], lr) != 0 || strcmp(v[5], m) != 0 || strcmp(v[3], want) != 0;
        /* TUNE_CONFIG as the trial saw it (its stdout.log's ENV line). */
        char path[4200];
        snprintf(path, sizeof path, "%s/stdout.log", v[6]);
        char *log = slurp(path), *cfg = strstr(log, "TUNE_CONFIG=");
        if (cfg) cfg[strcspn(cfg, "\t\n")] = 0;
        bad_env += !cfg || strcmp(cfg + 12, want) != 0;
        free(log);
        /* trials --json */
        cJSON *c = cJSON_GetObjectItem(cJSON_GetArrayItem(trials, i), "config");
        bad_json += jnum(c, "lr") != strtod(lr, NULL) || jnum(c, "m") != strtod(m, NULL);
        /* trials --csv: "trial_NNNNN,STATUS,slice,LR,M,..." */
        char row[200];
        snprintf(row, sizeof row, "\ntrial_%05d,TERMINATED,cpu:1,%s,%s,", i, lr, m);
        bad_csv += strstr(tc.out, row) == NULL;
    }
    /* export --json: every result row carries the configuration exactly. */
    cJSON *e;
    cJSON_ArrayForEach(e, exp)
    {
        int id = jint(e, "trial_id");
        cJSON *c = cJSON_GetObjectItem(e, "config");
        if (id < 0 || id >= r.n) {
            bad_export++;
            continue;
        }
        bad_export += jnum(c, "lr") != strtod(r.v[id * r.ncol + 1], NULL);
    }
    CHECK_EQ_INT(bad_db, 0);
    CHECK_EQ_INT(bad_env, 0);
    CHECK_EQ_INT(bad_json, 0);
    CHECK_EQ_INT(bad_csv, 0);
    CHECK_EQ_INT(bad_export, 0);
    CHECK(long_digits > 5); /* the run had values that 15 digits do not hold */
    /* best and show print the same digits. */
    struct out b = tune2(dir, "best", "dig", NULL, NULL);
    CHECK_EQ_INT(b.code, 0);
    int bi = strncmp(b.out, "id", 2) == 0 ? atoi(b.out + 2) : 0;
    char want[200];
    snprintf(want, sizeof want, "{\"lr\":%s,\"m\":%s}", r.v[bi * r.ncol + 1], r.v[bi * r.ncol + 2]);
    CHECK_CONTAINS(b.out, want);
    out_free(&b);
    /* The report's data: each trial's configuration as recorded. */
    const char *rep[] = {"report", "dig", "-o", "-", NULL};
    struct out ro = run_tune(dir, rep);
    CHECK_EQ_INT(ro.code, 0);
    for (int i = 0; i < r.n; i += 17) {
        snprintf(want, sizeof want, "\"cfg\":{\"lr\":%s,\"m\":%s}", r.v[i * r.ncol + 1],
                 r.v[i * r.ncol + 2]);
        CHECK_CONTAINS(ro.out, want);
    }
    out_free(&ro);
    for (int i = 0; i < 3; i++) {
        char t[16];
        snprintf(t, sizeof t, "%d", i);
        struct out s = tune2(dir, "show", "dig", t, NULL);
        CHECK_EQ_INT(s.code, 0);
        snprintf(want, sizeof want, " lr=%s m=%s\n", r.v[i * r.ncol + 1], r.v[i * r.ncol + 2]);
        CHECK_CONTAINS(s.out, want);
        out_free(&s);
    }
    cJSON_Delete(trials);
    cJSON_Delete(exp);
    out_free(&tj);
    out_free(&tc);
    out_free(&ex);
    rows_free(&r);
}

/* ---- item 14: parameters as columns, --sort, export's trial names ---------------- */
TEST(trials_give_parameters_as_columns_and_sort)
{
    char dir[4096], sp[8192];
    e2e_paths();
    snprintf(sp, sizeof sp,
             "{\"name\": \"cols\", \"metric\": \"loss\", \"num_samples\": 6, \"seed\": 4,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"3\"],"
             " \"space\": {\"lr\": {\"loguniform\": [1e-4, 1]},"
             "             \"opt\": {\"choice\": [\"sgd\", \"adam\"]}}}",
             g_synth);
    run_fresh(dir, sizeof dir, "cols", sp);
    struct out o = tune2(dir, "trials", "cols", NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    /* The header names each parameter; no JSON config column. */
    CHECK(strncmp(o.out, "trial ", 6) == 0);
    char *nl = strchr(o.out, '\n');
    REQUIRE(nl);
    *nl = 0;
    CHECK_CONTAINS(o.out, " lr ");
    CHECK_CONTAINS(o.out, " opt ");
    CHECK(strstr(o.out, "config") == NULL);
    *nl = '\n';
    CHECK(strstr(o.out, "{\"lr\"") == NULL);
    out_free(&o);

    /* --sort lr / -lr / metric, against the database's order. */
    static const struct {
        const char *key, *order;
    } sorts[] = {
        {"lr", "ORDER BY json_extract(config, '$.lr')"},
        {"-lr", "ORDER BY json_extract(config, '$.lr') DESC"},
        {"metric", "ORDER BY last_metric, trial_no"},
        {"opt", "ORDER BY json_extract(config, '$.opt'), trial_no"},
    };
    for (size_t k = 0; k < sizeof sorts / sizeof sorts[0]; k++) {
        o = tune2(dir, "trials", "--sort", sorts[k].key, "--csv");
        CHECK_EQ_INT(o.code, 0);
        char sql[256];
        snprintf(sql, sizeof sql,
                 "SELECT group_concat(trial, ',') FROM (SELECT trial FROM trial_summary %s)",
                 sorts[k].order);
        struct rows want = db_rows(dir, sql);
        char got[512] = "";
        for (char *p = strchr(o.out, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
            size_t l = strlen(got);
            snprintf(got + l, sizeof got - l, "%s%.11s", l ? "," : "", p + 1);
        }
        CHECK_STR(got, want.v[0]);
        rows_free(&want);
        out_free(&o);
    }
    o = tune2(dir, "trials", "--sort", "nope", NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "--sort nope: no such column");
    out_free(&o);

    /* export: the trial's name and one config/NAME column per parameter. */
    o = tune2(dir, "export", "cols", "--csv", NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strncmp(o.out, "trial_id,trial,config/lr,config/opt,training_iteration,loss,acc\n", 64) ==
          0);
    struct rows r = db_rows(dir, "SELECT json_extract(config, '$.lr'), json_extract(config,"
                                 " '$.opt') FROM trials WHERE trial_no = 3");
    char want[200];
    snprintf(want, sizeof want, "\n3,trial_00003,%s,%s,1,", r.v[0], r.v[1]);
    CHECK_CONTAINS(o.out, want);
    rows_free(&r);
    out_free(&o);
}

/* ---- item 18: names that begin with '-' ------------------------------------------ */
TEST(dash_names_are_refused_and_reachable_after_double_dash)
{
    char dir[4096], sp[8192];
    e2e_paths();
    snprintf(sp, sizeof sp,
             "{\"name\": \"-rf\", \"num_samples\": 1, \"command\": [\"%s\", \"--iters\", \"1\"],"
             " \"space\": {}}",
             g_synth);
    const char *extra[] = {"--quiet", NULL};
    struct out o = run_space(dir, sizeof dir, GROUP, "dash", sp, extra);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "begins with '-'");
    out_free(&o);
    CHECK(db_int(dir, "SELECT count(*) FROM experiments") <= 0); /* nothing recorded */

    /* An experiment an older tune accepted under such a name is still reachable. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"ok\", \"metric\": \"loss\", \"num_samples\": 2,"
             " \"command\": [\"%s\", \"--iters\", \"2\"], \"space\": {}}",
             g_synth);
    run_fresh(dir, sizeof dir, "dash", sp);
    REQUIRE(db_exec(dir, "UPDATE experiments SET name = '-rf'") == 0);
    o = tune2(dir, "trials", "-rf", NULL, NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "tune trials -- -rf");
    out_free(&o);
    o = tune2(dir, "trials", "--json", "--", "-rf");
    CHECK_EQ_INT(o.code, 0);
    cJSON *a = cJSON_Parse(o.out);
    CHECK_EQ_INT(cJSON_GetArraySize(a), 2);
    cJSON_Delete(a);
    out_free(&o);
    const char *sh[] = {"show", "--", "-rf", "1", NULL};
    o = run_tune(dir, sh);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "trial_00001  (experiment -rf");
    out_free(&o);
    o = tune2(dir, "best", "--", "-rf", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    o = tune2(dir, "rm", "--yes", "--", "-rf");
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 0);
}

/* ---- item 19: trial output is shown, never obeyed -------------------------------- */
TEST(trial_output_reaches_the_terminal_escaped)
{
    char dir[4096];
    /* The trial sets the window title, clears the screen and colours its stderr. */
    const char *sp =
        "{\"name\": \"esc\", \"metric\": \"loss\", \"num_samples\": 1,"
        " \"command\": [\"/bin/sh\", \"-c\", \"printf '\\\\033]0;pwned\\\\007\\\\033[2Jhello\\\\n"
        "{{\\\"loss\\\": 1}}\\\\n'; printf '\\\\033[31mred\\\\302\\\\233x\\\\n' >&2\"],"
        " \"space\": {}}";
    run_fresh(dir, sizeof dir, "escape", sp);
    char log[4200];
    snprintf(log, sizeof log, "%s/tune_results/esc/trial_00000/stdout.log", dir);
    char *raw = slurp(log);
    REQUIRE(strchr(raw, 0x1b) != NULL); /* the log keeps the trial's bytes */
    free(raw);
    REQUIRE(db_exec(dir, "UPDATE trials SET error = 'bad' || char(27) || '[2J' ||"
                         " char(10) || 'end'") == 0);
    struct out o = tune2(dir, "show", "esc", "0", NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strchr(o.out, 0x1b) == NULL);
    CHECK(strchr(o.out, 0x07) == NULL);
    CHECK_CONTAINS(o.out, "\\x1b]0;pwned\\x07\\x1b[2Jhello");
    CHECK_CONTAINS(o.out, "\\x1b[31mred\\u009bx");
    CHECK_CONTAINS(o.out, "note         bad\\x1b[2J\\x0aend");
    out_free(&o);
    o = tune2(dir, "trials", "esc", NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strchr(o.out, 0x1b) == NULL);
    CHECK_CONTAINS(o.out, "bad\\x1b[2J\\x0aend");
    out_free(&o);
    o = tune2(dir, "best", "esc", NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strchr(o.out, 0x1b) == NULL);
    out_free(&o);
    /* An error message that quotes the trial's result keys. */
    REQUIRE(db_exec(dir, "UPDATE results SET data = '{\"loss\": 1, \"\\u001b[2Jk\": 2}'") == 0);
    o = tune2(dir, "plot", "--metric", "nothing", NULL);
    CHECK_EQ_INT(o.code, 1);
    CHECK(strchr(o.err, 0x1b) == NULL);
    CHECK_CONTAINS(o.err, "\\x1b[2Jk");
    out_free(&o);
}

/* ---- item 13: rm, TUNE_DB, the implied experiment -------------------------------- */
TEST(rm_deletes_an_experiment_and_its_folder)
{
    char dir[4096], sp[8192], path[4200];
    e2e_paths();
    snprintf(sp, sizeof sp, asha_space, "a", g_synth);
    run_fresh(dir, sizeof dir, "rm", sp);
    snprintf(sp, sizeof sp, asha_space, "b", g_synth);
    space_file(dir, sp);
    const char *run[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    struct out o = run_tune(dir, run);
    REQUIRE(o.code == 0);
    out_free(&o);
    long long b_results = db_int(dir, "SELECT count(*) FROM results r JOIN trials t ON"
                                      " t.id = r.trial_id JOIN experiments e ON"
                                      " e.id = t.experiment_id WHERE e.name = 'b'");
    long long b_decisions = db_int(dir, "SELECT count(*) FROM decisions d JOIN trials t ON"
                                        " t.id = d.trial_id JOIN experiments e ON"
                                        " e.id = t.experiment_id WHERE e.name = 'b'");
    REQUIRE(b_results > 0 && b_decisions > 0);

    /* Two experiments: a reader must be told which. */
    o = tune2(dir, "trials", NULL, NULL, NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "holds 2 experiments (a, b): say which one");
    out_free(&o);

    /* Without a terminal and without --yes: nothing happens. */
    o = tune2(dir, "rm", "a", NULL, NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "--yes");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 2);

    /* While a tune process holds the experiment's lock: refused. */
    snprintf(path, sizeof path, "%s/tune_results/a/.tune.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    REQUIRE(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
    REQUIRE(write(fd, "4242\n", 5) == 5);
    o = tune2(dir, "rm", "a", "--yes", NULL);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "is being run by a tune process (pid 4242)");
    out_free(&o);
    close(fd);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 2);

    o = tune2(dir, "rm", "a", "--yes", NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Deleted experiment a: 9 trials");
    out_free(&o);
    snprintf(path, sizeof path, "%s/tune_results/a", dir);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof path, "%s/tune_results/b", dir);
    CHECK(access(path, F_OK) == 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 1);
    /* Nothing of a is left; all of b is there. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 9);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM params p LEFT JOIN trials t ON"
                             " t.id = p.trial_id WHERE t.id IS NULL"),
                 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), b_results);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions"), b_decisions);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM result_ranges g LEFT JOIN trials t ON"
                             " t.id = g.trial_id WHERE t.id IS NULL"),
                 0);

    /* One experiment left: NAME may be left out. */
    o = tune2(dir, "trials", "--json", NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    cJSON *arr = cJSON_Parse(o.out);
    CHECK_EQ_INT(cJSON_GetArraySize(arr), 9);
    cJSON_Delete(arr);
    out_free(&o);
    o = tune2(dir, "best", NULL, NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "trial_");
    out_free(&o);
    o = tune2(dir, "export", "--csv", NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    o = tune2(dir, "rm", "a", "--yes", NULL);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "no experiment named \"a\"");
    out_free(&o);
    /* The name can be run again. */
    snprintf(sp, sizeof sp, asha_space, "a", g_synth);
    space_file(dir, sp);
    o = run_tune(dir, run);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
}

TEST(rm_asks_on_a_terminal)
{
    char dir[4096], sp[8192], cmd[16384];
    e2e_paths();
    snprintf(sp, sizeof sp,
             "{\"name\": \"ask\", \"metric\": \"loss\", \"num_samples\": 2,"
             " \"command\": [\"%s\", \"--iters\", \"2\"], \"space\": {}}",
             g_synth);
    run_fresh(dir, sizeof dir, "rm_ask", sp);
    if (access("/usr/bin/script", X_OK) != 0) {
        printf("SKIP: no /usr/bin/script to give tune a terminal\n");
        exit(77);
    }
    /* script(1) runs tune on a pseudo-terminal; the answer comes through it. */
    static const char *const answers[] = {"n", "y"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "(sleep 0.3; printf '%s\\n') | script -qec '%s rm ask' /dev/null",
                 answers[k], g_tune);
        const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
        struct out o = run_prog(dir, argv, NULL);
        CHECK_CONTAINS(o.out, "Delete experiment \"ask\" (2 trials, 4 results) from tune.db and "
                              "the folder ");
        if (k == 0) {
            CHECK_CONTAINS(o.out, "Nothing deleted.");
            CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 1);
        } else {
            CHECK_CONTAINS(o.out, "Deleted experiment ask: 2 trials, 4 results");
            CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 0);
        }
        out_free(&o);
    }
}

TEST(tune_db_names_the_default_database)
{
    char dir[4096], sp[8192];
    e2e_paths();
    e2e_fresh_dir(dir, sizeof dir, GROUP, "tune_db");
    snprintf(sp, sizeof sp,
             "{\"name\": \"only\", \"metric\": \"loss\", \"num_samples\": 2,"
             " \"command\": [\"%s\", \"--iters\", \"2\"], \"space\": {}}",
             g_synth);
    space_file(dir, sp);
    const char *env[] = {"TUNE_DB=other.db", NULL};
    struct how h = {.env = env};
    const char *run[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    struct out o = run_tune_how(dir, run, &h);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char path[4200];
    snprintf(path, sizeof path, "%s/other.db", dir);
    CHECK(access(path, F_OK) == 0);
    snprintf(path, sizeof path, "%s/tune.db", dir);
    CHECK(access(path, F_OK) != 0);
    const char *tr[] = {"trials", "--json", NULL};
    o = run_tune_how(dir, tr, &h);
    CHECK_EQ_INT(o.code, 0);
    cJSON *a = cJSON_Parse(o.out);
    CHECK_EQ_INT(cJSON_GetArraySize(a), 2);
    cJSON_Delete(a);
    out_free(&o);
    /* --db still wins over the environment. */
    const char *tr2[] = {"trials", "--db", "nope.db", NULL};
    o = run_tune_how(dir, tr2, &h);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "nope.db");
    out_free(&o);
    /* An empty database names no experiment to imply. */
    const char *tr3[] = {"ls", NULL};
    o = run_tune(dir, tr3);
    CHECK(strstr(o.out, "only") == NULL);
    out_free(&o);
}

/* ---- item 2: another metric's mode, and cutoffs only on their own metric ---------- */
TEST(plot_and_report_order_another_metric_by_its_own_mode)
{
    char dir[4096], sp[8192];
    e2e_paths();
    snprintf(sp, sizeof sp, asha_space, "m", g_synth);
    run_fresh(dir, sizeof dir, "mode", sp);
    /* The trials with the highest and the lowest last accuracy. */
    struct rows hi = db_rows(dir, "SELECT trial FROM trial_summary ORDER BY"
                                  " json_extract(last_result, '$.acc') DESC, trial_no LIMIT 1");
    struct rows lo = db_rows(dir, "SELECT trial FROM trial_summary ORDER BY"
                                  " json_extract(last_result, '$.acc'), trial_no LIMIT 1");
    REQUIRE(hi.n == 1 && lo.n == 1 && strcmp(hi.v[0], lo.v[0]) != 0);
    char want[128];

    /* acc is not the experiment's metric (loss, min): higher is better, guessed and said. */
    const char *pa[] = {"plot", "--metric", "acc", "--color", "never", NULL};
    struct out o = run_tune(dir, pa);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want, "best %s (acc ", hi.v[0]);
    CHECK_CONTAINS(o.out, want);
    CHECK_CONTAINS(o.out, "acc (max)");
    CHECK_CONTAINS(o.err, "note: acc is not the experiment's metric (loss): guessed from its name "
                          "that higher is better; say --mode min if not");
    out_free(&o);
    /* --mode says otherwise: no guess, no note. */
    const char *pm[] = {"plot", "--metric", "acc", "--mode", "min", "--color", "never", NULL};
    o = run_tune(dir, pm);
    CHECK_EQ_INT(o.code, 0);
    snprintf(want, sizeof want, "best %s (acc ", lo.v[0]);
    CHECK_CONTAINS(o.out, want);
    CHECK(strstr(o.err, "note:") == NULL);
    out_free(&o);
    const char *bad[] = {"plot", "--mode", "up", NULL};
    o = run_tune(dir, bad);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "--mode wants min or max, got \"up\"");
    out_free(&o);

    /* The report: the shown metric's mode and best trial; the rung cutoffs (loss values)
     * are drawn on the loss chart only. */
    const char *ra[] = {"report", "--metric", "acc", "-o", "-", NULL};
    o = run_tune(dir, ra);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "\"mode\":\"max\",\"mode_guessed\":true,\"own_metric\":false");
    snprintf(want, sizeof want, ",\"best\":%d,", atoi(hi.v[0] + 6));
    CHECK_CONTAINS(o.out, want);
    CHECK_CONTAINS(o.out, "\"cut\":null");
    CHECK(strstr(o.out, "\"cut\":0") == NULL && strstr(o.out, "\"cut\":1") == NULL);
    out_free(&o);
    const char *rl[] = {"report", "-o", "-", NULL};
    o = run_tune(dir, rl);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "\"mode\":\"min\",\"mode_guessed\":false,\"own_metric\":true");
    long long ncut = db_int(dir, "SELECT count(*) FROM decisions WHERE cutoff IS NOT NULL");
    REQUIRE(ncut > 0);
    CHECK(strstr(o.out, "\"cut\":0.") != NULL || strstr(o.out, "\"cut\":1.") != NULL);
    out_free(&o);
    rows_free(&hi);
    rows_free(&lo);
}

TT_MAIN
