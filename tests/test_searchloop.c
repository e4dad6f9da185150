/* Tests of the searcher in the loop (issue 11's integration): "search" and
 * "points_to_evaluate" in space.json, configurations chosen at launch from what was
 * observed, trials.suggested_by (schema version 2 and the version-1 migration), `tune
 * show`, resume after kill -9 making the uninterrupted run's suggestions, TPE against
 * random on a real run, and `tune simulate` with TPE. Not for the searcher's own maths
 * (tests/test_tpe.c). */
#include "e2e.h"
#include "search/searcher.h"
#include "search/settings.h"
#include "search/space.h"
#include "store/store.h"
#include "tinytest.h"

static double mean_decades_off(const char *dir, int from, int to);

/* ---- space.json ---------------------------------------------------------------------- */
static int parse(const char *text, space_t **sp, char *err, size_t errlen)
{
    return space_parse(text, strlen(text), "space.json", sp, err, errlen);
}

#define HEAD "{\"name\": \"s\", \"command\": [\"t\", \"{lr}\"], \"num_samples\": 4,\n"
#define SPACE_LR                                                                                   \
    "\"space\": {\"lr\": {\"loguniform\": [0.0001, 1]}, \"opt\": {\"choice\": [\"sgd\", "          \
    "\"adam\"]}}"

TEST(search_settings_parse_with_defaults)
{
    space_t *sp = NULL;
    char err[512] = "";
    REQUIRE(parse(HEAD SPACE_LR "}", &sp, err, sizeof err) == 0);
    CHECK_EQ_INT(space_settings(sp)->search, SPACE_SEARCH_RANDOM);
    CHECK_STR(space_search_name(space_settings(sp)), "random");
    CHECK(space_settings(sp)->points_to_evaluate == NULL);
    space_free(sp);
    REQUIRE(parse(HEAD "\"search\": {\"type\": \"tpe\", \"preset\": \"bohb\"}, " SPACE_LR "}", &sp,
                  err, sizeof err) == 0);
    CHECK_EQ_INT(space_settings(sp)->search, SPACE_SEARCH_TPE);
    CHECK_EQ_INT(space_settings(sp)->search_preset, SPACE_TPE_BOHB);
    CHECK_STR(space_search_name(space_settings(sp)), "TPE (bohb)");
    cJSON *j = space_settings_json(sp);
    char *txt = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "search"));
    CHECK_STR(txt, "{\"type\":\"tpe\",\"preset\":\"bohb\"}");
    free(txt);
    cJSON_Delete(j);
    space_free(sp);
    REQUIRE(parse(HEAD "\"search\": {\"type\": \"tpe\"}, " SPACE_LR "}", &sp, err, sizeof err) ==
            0);
    CHECK_STR(space_search_name(space_settings(sp)), "TPE (optuna)");
    space_free(sp);
}

/* Every note of sp, one a line. */
static void all_notes(const space_t *sp, char *out, size_t n)
{
    size_t k = 0;
    out[0] = 0;
    for (size_t i = 0; space_note(sp, i) && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, "%s\n", space_note(sp, i));
}

TEST(tpe_notes_for_tune_validate)
{
    space_t *sp = NULL;
    char err[512] = "", notes[4096];
    REQUIRE(parse(HEAD "\"search\": {\"type\": \"tpe\"}, \"metric\": \"l\", \"mode\": \"min\","
                       " \"scheduler\": {\"type\": \"asha\", \"brackets\": 3}, " SPACE_LR "}",
                  &sp, err, sizeof err) == 0);
    all_notes(sp, notes, sizeof notes);
    CHECK_CONTAINS(notes,
                   "\"search\" is tpe: each configuration is chosen when its trial launches");
    CHECK_CONTAINS(notes, "TPE models the rungs of ASHA's first bracket only (\"brackets\" is 3)");
    space_free(sp);
    /* random search says neither */
    REQUIRE(parse(HEAD "\"metric\": \"l\", \"mode\": \"min\", \"scheduler\": {\"type\": "
                       "\"asha\", \"brackets\": 3}, " SPACE_LR "}",
                  &sp, err, sizeof err) == 0);
    all_notes(sp, notes, sizeof notes);
    CHECK(!strstr(notes, "tpe") && !strstr(notes, "TPE"));
    space_free(sp);
}

TEST(tpe_under_fifo_learns_from_latest_results)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "fifo");
    snprintf(sp, sizeof sp,
             "{\"name\": \"ff\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 40,"
             " \"max_concurrent\": 2, \"seed\": 3, \"search\": {\"type\": \"tpe\"},"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"3\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.0001, 1]}}}",
             g_synth);
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    CHECK(db_int(dir, "SELECT count(*) FROM trials WHERE suggested_by LIKE 'TPE (optuna) on "
                      "latest results from % observations%'") >= 25);
    CHECK(mean_decades_off(dir, 20, 40) < 0.6 * mean_decades_off(dir, 0, 10));
}

TEST(search_settings_errors_are_located)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {HEAD "\"search\": {\"type\": \"tep\"}, " SPACE_LR "}",
         "space.json:2:20: unknown search type \"tep\" (did you mean \"tpe\"?); use \"random\" or "
         "\"tpe\""},
        {HEAD "\"search\": {\"type\": \"tpe\", \"preset\": \"optuma\"}, " SPACE_LR "}",
         "space.json:2:37: unknown TPE preset \"optuma\" (did you mean \"optuna\"?)"},
        {HEAD "\"search\": {\"preset\": \"bohb\"}, " SPACE_LR "}",
         "space.json:2:12: \"preset\" applies only to \"type\": \"tpe\""},
        {HEAD "\"search\": {\"tpye\": \"tpe\"}, " SPACE_LR "}",
         "space.json:2:12: unknown key \"tpye\" in \"search\" (did you mean \"type\"?)"},
        {HEAD "\"search\": \"tpe\", " SPACE_LR "}",
         "space.json:2:11: \"search\" must be an object"},
        {HEAD "\"serach\": {}, " SPACE_LR "}",
         "space.json:2:1: unknown key \"serach\" (did you mean \"search\"?)"},
        /* issue 29's experimental pool switches */
        {HEAD "\"search\": {\"type\": \"tpe\", \"pool\": \"propose+stesp\"}, " SPACE_LR "}",
         "space.json:2:35: search \"pool\" must be \"score\" or \"propose\", optionally followed "
         "by \"+steps\" and \"+startup10\""},
        {HEAD "\"search\": {\"type\": \"tpe\", \"pool\": \"score+propose\"}, " SPACE_LR "}",
         "search \"pool\" must be \"score\" or \"propose\""},
        {HEAD "\"search\": {\"pool\": \"propose\"}, " SPACE_LR "}",
         "space.json:2:12: \"pool\" applies only to \"type\": \"tpe\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        space_t *sp = NULL;
        char err[512] = "";
        CHECK_EQ_INT(parse(cases[i].text, &sp, err, sizeof err), SPACE_EINVAL);
        CHECK_CONTAINS(err, cases[i].want);
    }
}

TEST(points_to_evaluate_are_checked_against_the_space)
{
    space_t *sp = NULL;
    char err[512] = "";
    REQUIRE(
        parse(HEAD
              "\"points_to_evaluate\": [{\"lr\": 0.01, \"opt\": \"adam\"}, {\"lr\": 1}],\n" SPACE_LR
              "}",
              &sp, err, sizeof err) == 0);
    CHECK_EQ_INT((long long)space_settings(sp)->npoints, 2);
    space_free(sp);
    static const struct {
        const char *points, *want;
    } cases[] = {
        {"[{\"lr\": 0.01}, {\"lr\": 5}]",
         "space.json:2:45: points_to_evaluate[1].lr: 5 is outside loguniform [0.0001, 1]"},
        {"[{\"lrr\": 0.01}]",
         "space.json:2:25: points_to_evaluate[0]: \"lrr\" is not a parameter of \"space\" (did you "
         "mean \"lr\"?)"},
        {"[{\"opt\": \"adamw\"}]",
         "space.json:2:32: points_to_evaluate[0].opt: this string is not a value of the choice "
         "[\"sgd\",\"adam\"]"},
        {"[{\"lr\": \"0.1\"}]",
         "space.json:2:31: points_to_evaluate[0].lr must be a number (loguniform), not a string"},
        {"[3]", "space.json:2:24: points_to_evaluate[0] must be an object of parameter values"},
        {"{\"lr\": 1}", "space.json:2:23: \"points_to_evaluate\" must be an array of objects"},
        {"[{}, {}, {}, {}, {}]",
         "space.json:2:23: \"points_to_evaluate\" has 5 points but the experiment runs 4 trials"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[2048];
        snprintf(text, sizeof text, HEAD "\"points_to_evaluate\": %s,\n" SPACE_LR "}",
                 cases[i].points);
        CHECK_EQ_INT(parse(text, &sp, err, sizeof err), SPACE_EINVAL);
        CHECK_CONTAINS(err, cases[i].want);
    }
}

/* ---- the store: schema version 2 ---------------------------------------------------------- */
static char *db_text(const char *dir, const char *sql)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    sqlite3 *db;
    sqlite3_stmt *st;
    if (!testdb_row(path, sql, &db, &st)) return strdup("");
    const unsigned char *t = sqlite3_column_text(st, 0);
    char *s = strdup(t ? (const char *)t : "");
    testdb_done(db, st);
    return s;
}

TEST(version_1_database_gains_suggested_by_on_open)
{
    char dir[4096];
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "migrate");
    char sp[8192];
    snprintf(sp, sizeof sp,
             "{\"name\": \"old\", \"metric\": \"loss\", \"num_samples\": 2, \"command\": [\"%s\","
             " \"--lr\", \"{lr}\", \"--iters\", \"2\"], \"space\": {\"lr\": {\"uniform\": [0.001, "
             "0.1]}}}",
             g_synth);
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    /* Made into what tune 1's schema wrote: no suggested_by, schema_version 1. */
    REQUIRE(db_exec(dir, "ALTER TABLE trials DROP COLUMN suggested_by; DROP TABLE lineage;"
                         "UPDATE meta SET value = 1 WHERE key = 'schema_version'") == 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM pragma_table_info('trials') WHERE name = "
                             "'suggested_by'"),
                 0);
    /* a reader (read-only) reads it as it is */
    const char *show[] = {"show", "old", "trial_00001", NULL};
    struct out o = run_tune(dir, show);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "trial_00001  (experiment old, trial 1 of 2)");
    CHECK(!strstr(o.out, "chosen by"));
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT value FROM meta WHERE key = 'schema_version'"), 1);
    /* a writer upgrades it, keeping what was there */
    const char *more[] = {"run", "space.json", "--gpus", "none", "--restart", "--quiet", NULL};
    o = run_tune(dir, more);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT value FROM meta WHERE key = 'schema_version'"), 4);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM sqlite_master WHERE name = 'lineage'"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM pragma_table_info('trials') WHERE name = "
                             "'suggested_by'"),
                 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 4);
    /* a newer version than this tune knows stays refused */
    REQUIRE(db_exec(dir, "UPDATE meta SET value = 5 WHERE key = 'schema_version'") == 0);
    o = run_tune(dir, show);
    CHECK(o.code != 0);
    CHECK_CONTAINS(o.err, "was written by a newer tune (schema version 5, this tune knows 4)");
    out_free(&o);
}

/* ---- real runs ----------------------------------------------------------------------------- */
/* An ASHA experiment on synth_trial (best lr near 0.01) with the given search settings. */
static void asha_space(char *sp, size_t n, const char *name, int samples, int maxc,
                       const char *extra)
{
    snprintf(sp, n,
             "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": %d,"
             " \"max_concurrent\": %d, \"seed\": 11, %s"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
             " \"reduction_factor\": 3},"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"9\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.0001, 1]}}}",
             name, samples, maxc, extra, g_synth);
}

/* Mean distance, in decades, of the lr of trials [from, to) from the optimum 0.01. */
static double mean_decades_off(const char *dir, int from, int to)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT avg(abs(ln(json_extract(config, '$.lr')) / ln(10) + 2)) FROM trials WHERE "
             "trial_no >= %d AND trial_no < %d",
             from, to);
    return db_real(dir, sql);
}

TEST(tpe_concentrates_later_trials_near_the_optimum_more_than_random)
{
    char dir[4096], rdir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "tpe_vs_random_tpe");
    asha_space(sp, sizeof sp, "tv", 80, 2, "\"search\": {\"type\": \"tpe\"},");
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    e2e_fresh_dir(rdir, sizeof rdir, "searchloop", "tpe_vs_random_random");
    asha_space(sp, sizeof sp, "tv", 80, 2, "");
    REQUIRE(run_ok(rdir, sp, NULL) == 0);
    /* the first trials are random until a rung holds 10 results, the rest TPE's */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE trial_no < 10 AND suggested_by "
                             "LIKE 'random: model not ready (% of 10 observations)'"),
                 10);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE suggested_by LIKE 'random: model "
                             "not ready%' OR suggested_by LIKE 'TPE (optuna) at rung % from % "
                             "observations%'"),
                 80);
    CHECK(db_int(dir, "SELECT count(*) FROM trials WHERE suggested_by LIKE 'TPE%'") >= 60);
    /* random search keeps its rows as before: all up front, no suggested_by */
    CHECK_EQ_INT(db_int(rdir, "SELECT count(*) FROM trials WHERE suggested_by IS NULL"), 80);
    /* until a model exists TPE draws what random draws */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE trial_no < 10"), 10);
    /* the later half: TPE has had 40 trials' results to learn from */
    double tpe_late = mean_decades_off(dir, 40, 80), rnd_late = mean_decades_off(rdir, 40, 80);
    fprintf(stderr, "later trials' mean |log10(lr / 0.01)|: tpe %.3f, random %.3f\n", tpe_late,
            rnd_late);
    CHECK(tpe_late < 0.6 * rnd_late);
    CHECK(mean_decades_off(dir, 0, 10) == mean_decades_off(rdir, 0, 10));
}

TEST(points_to_evaluate_run_first_and_say_so)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "points");
    asha_space(sp, sizeof sp, "pt", 6, 1,
               "\"points_to_evaluate\": [{\"lr\": 0.5}, {\"lr\": 0.002}, {\"lr\": 0.01}],");
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 6);
    char *c = db_text(dir, "SELECT group_concat(json_extract(config, '$.lr'), ' ') FROM (SELECT "
                           "config FROM trials WHERE trial_no < 3 ORDER BY trial_no)");
    CHECK_STR(c, "0.5 0.002 0.01");
    free(c);
    c = db_text(dir, "SELECT suggested_by FROM trials WHERE trial_no = 2");
    CHECK_STR(c, "points_to_evaluate[2]");
    free(c);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE trial_no >= 3 AND suggested_by = "
                             "'random'"),
                 3);
    /* first: each point started before any later trial */
    CHECK_EQ_INT(db_int(dir, "SELECT (SELECT max(started_at) FROM trials WHERE trial_no < 3) <= "
                             "(SELECT min(started_at) FROM trials WHERE trial_no >= 3)"),
                 1);
    const char *show[] = {"show", "pt", "trial_00002", NULL};
    struct out o = run_tune(dir, show);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "\nchosen by    points_to_evaluate[2]\n");
    out_free(&o);
    /* the report carries it per trial, in a "chosen by" column */
    const char *rep[] = {"report", "pt", "-o", "r.html", NULL};
    o = run_tune(dir, rep);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char path[4200];
    snprintf(path, sizeof path, "%s/r.html", dir);
    char *html = slurp(path);
    CHECK_CONTAINS(html, "\"name\":\"trial_00002\"");
    CHECK_CONTAINS(html, "\"by\":\"points_to_evaluate[2]\"");
    CHECK_CONTAINS(html, "\"by\":\"random\"");
    CHECK_CONTAINS(html, "h: 'chosen by'");
    free(html);
}

TEST(live_table_names_the_searcher_and_counts_trials_not_chosen_yet)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "table");
    /* rows of a TPE run appear as trials launch: the table counts the rest as PENDING */
    snprintf(sp, sizeof sp,
             "{\"name\": \"tb\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 6,"
             " \"max_concurrent\": 1, \"status_interval_s\": 0.05, \"search\": {\"type\": \"tpe\"},"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"4\", \"--sleep-ms\", "
             "\"40\"], \"space\": {\"lr\": {\"loguniform\": [0.0001, 1]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Experiment tb, scheduler fifo, search TPE (optuna), metric loss (min)");
    CHECK_CONTAINS(o.out, "Trials: 6 total: 1 RUNNING, 5 PENDING, 0 TERMINATED");
    CHECK_CONTAINS(o.out, "Trials: 6 total: 0 RUNNING, 0 PENDING, 6 TERMINATED");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT num_trials FROM experiments"), 6);
}

TEST(bad_point_is_a_located_error)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "bad_point");
    asha_space(sp, sizeof sp, "bp", 6, 1, "\"points_to_evaluate\": [{\"lr\": 0.01}, {\"lr\": 2}],");
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, a);
    CHECK(o.code != 0);
    CHECK_CONTAINS(o.err, "space.json:1:");
    CHECK_CONTAINS(o.err, "points_to_evaluate[1].lr: 2 is outside loguniform [0.0001, 1]");
    out_free(&o);
}

/* Every trial's configuration, in trial order. */
static char *configs(const char *dir)
{
    return db_text(dir, "SELECT group_concat(config, '|') FROM (SELECT config FROM trials ORDER "
                        "BY trial_no)");
}

TEST(resume_after_kill_9_makes_the_uninterrupted_runs_suggestions)
{
    char dir[4096], ref[4096], sp[8192];
    /* one trial at a time: the order of results is the same in both runs */
    e2e_fresh_dir(ref, sizeof ref, "searchloop", "resume_ref");
    snprintf(sp, sizeof sp,
             "{\"name\": \"rs\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 30,"
             " \"max_concurrent\": 1, \"seed\": 5, \"search\": {\"type\": \"tpe\"},"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
             " \"reduction_factor\": 3},"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"9\", \"--sleep-ms\", "
             "\"15\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.0001, 1]}, \"wd\": {\"uniform\": [0, 1]}}}",
             g_synth);
    REQUIRE(run_ok(ref, sp, NULL) == 0);
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "resume_killed");
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    double t0 = e2e_mono();
    /* killed once TPE has a model and is choosing */
    while (db_int(dir, "SELECT count(*) FROM trials WHERE suggested_by LIKE 'TPE%'") < 4 &&
           e2e_mono() - t0 < 60)
        usleep(10000);
    kill(-pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    long long before = db_int(dir, "SELECT count(*) FROM trials");
    REQUIRE(before >= 14 && before < 30);
    const char *r[] = {"resume", "rs", "--gpus", "none", "--quiet", NULL};
    struct out o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 30);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE suggested_by LIKE 'TPE%'"),
                 (long long)db_int(ref, "SELECT count(*) FROM trials WHERE suggested_by LIKE "
                                        "'TPE%'"));
    char *c1 = configs(ref), *c2 = configs(dir);
    CHECK(strlen(c1) > 30 * 20);
    CHECK_STR(c2, c1);
    free(c1);
    free(c2);
}

/* MOTPE in the loop (docs/search.md): two objectives under a constraint, ASHA's rungs, the
 * results handed to the searcher as points (space_objectives, space_violation); a run killed
 * once MOTPE is choosing and resumed replays the stored points and makes the uninterrupted
 * run's suggestions. tests/progs/mo_trial reports loss, latency_ms and mem_gb. */
TEST(motpe_resume_after_kill_9_makes_the_uninterrupted_runs_suggestions)
{
    char dir[4096], ref[4096], sp[8192], mo[4096];
    e2e_fresh_dir(ref, sizeof ref, "searchloop", "motpe_ref");
    const char *b = getenv("TUNE_BINARY_DIR");
    snprintf(mo, sizeof mo, "%s/tests/progs/mo_trial", b ? b : ".");
    snprintf(sp, sizeof sp,
             "{\"name\": \"mo\", \"metric\": [\"loss\", \"latency_ms\"], \"mode\": [\"min\", "
             "\"min\"], \"constraints\": {\"mem_gb\": {\"<=\": 4}}, \"num_samples\": 30,"
             " \"max_concurrent\": 1, \"seed\": 9, \"search\": {\"type\": \"tpe\"},"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
             " \"reduction_factor\": 3},"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--width\", \"{width}\", \"--iters\", "
             "\"9\", \"--sleep-ms\", \"15\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.0001, 1]}, \"width\": {\"choice\": [8, 16, "
             "32, 64]}}}",
             mo);
    REQUIRE(run_ok(ref, sp, NULL) == 0);
    const char *q = "SELECT count(*) FROM trials WHERE suggested_by LIKE 'TPE (optuna, MOTPE) at "
                    "rung %'";
    long long modelled = db_int(ref, q);
    CHECK(modelled >= 10);
    /* the words give the split: how many were infeasible (width 64 needs 8 GB) */
    CHECK(db_int(ref, "SELECT count(*) FROM trials WHERE suggested_by LIKE '%infeasible; bad "
                      "also%'") == modelled);
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "motpe_killed");
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    double t0 = e2e_mono();
    while (db_int(dir, q) < 3 && e2e_mono() - t0 < 60)
        usleep(10000);
    kill(-pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    long long before = db_int(dir, "SELECT count(*) FROM trials");
    REQUIRE(before >= 12 && before < 30);
    const char *r[] = {"resume", "mo", "--gpus", "none", "--quiet", NULL};
    struct out o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 30);
    CHECK_EQ_INT(db_int(dir, q), modelled);
    char *c1 = configs(ref), *c2 = configs(dir);
    CHECK_STR(c2, c1);
    free(c1);
    free(c2);
}

TEST(resume_refuses_a_stored_configuration_that_does_not_fit)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "resume_misfit");
    snprintf(sp, sizeof sp,
             "{\"name\": \"mf\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 20,"
             " \"max_concurrent\": 1, \"search\": {\"type\": \"tpe\"},"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"3\", \"--sleep-ms\", "
             "\"30\"], \"space\": {\"lr\": {\"loguniform\": [0.0001, 1]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    double t0 = e2e_mono();
    while (db_int(dir, "SELECT count(*) FROM trials") < 3 && e2e_mono() - t0 < 30)
        usleep(10000);
    kill(-pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    REQUIRE(db_exec(dir, "UPDATE trials SET config = json_set(config, '$.lr', 'fast') WHERE "
                         "trial_no = 1") == 0);
    const char *r[] = {"resume", "mf", "--gpus", "none", "--quiet", NULL};
    struct out o = run_tune(dir, r);
    CHECK(o.code != 0);
    CHECK_CONTAINS(o.err, "cannot resume: trial_00001's stored configuration does not fit the "
                          "space: configuration: \"lr\" is missing or not one of its values");
    out_free(&o);
}

TEST(tpe_runs_under_tune_simulate)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "searchloop", "simulate");
    asha_space(sp, sizeof sp, "sim", 40, 4,
               "\"search\": {\"type\": \"tpe\", \"preset\": \"bohb\"},");
    space_file(dir, sp);
    const char *a[] = {"simulate",          "space.json", "--synthetic",
                       "seed=4,noise=0.05", "--quiet",    NULL};
    struct out o = run_tune(dir, a);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 40);
    CHECK(db_int(dir, "SELECT count(*) FROM trials WHERE suggested_by LIKE 'TPE (bohb) at rung %'"
                      " OR suggested_by LIKE 'random: BOHB%'") >= 10);
}

TT_MAIN
