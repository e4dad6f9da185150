/* End-to-end tests of `tune simulate` and what it replays: an experiment exported as a
 * table (`tune export NAME --table`) reads back through sim/ with every trial answered by
 * itself at distance 0; a simulation is deterministic; a replayed FIFO experiment gives
 * back its curves and best trial; a simulated ASHA run takes the decisions of the real run
 * whose curves it replays. Not for: sim/'s own parsing rules (tests/test_sim.c). */
#include "e2e.h"
#include "tinytest.h"

#include <cjson/cJSON.h>
#include <zlib.h>

#include "search/space.h"
#include "sim/sim.h"

TEST(export_table_reads_back_as_the_same_curves)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "export_table");
    snprintf(sp, sizeof sp,
             "{\"name\": \"tab\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4,"
             " \"max_concurrent\": 2, \"seed\": 5,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"6\", \"--tag\", \"{opt}\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.0001, 0.1]}, \"opt\": {\"choice\": "
             "[\"sgd, momentum\", \"adam\"]}}}",
             g_synth);
    space_file(dir, sp);
    const char *run[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, run);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    REQUIRE(o.code == 0);
    out_free(&o);
    const char *ex[] = {"export", "tab", "--table", NULL};
    o = run_tune(dir, ex);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "trial,config/lr,config/opt,training_iteration,time_this_iter_s,loss");
    CHECK_EQ_INT(count_of(o.out, "\n"), 1 + 4 * 6);

    space_t *s = NULL;
    char err[1024];
    REQUIRE(space_parse(sp, strlen(sp), "space.json", &s, err, sizeof err) == 0);
    sim_curves_t *c = NULL;
    int rc = sim_table_parse(o.out, strlen(o.out), "export", s, &c, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    REQUIRE(rc == 0);
    CHECK_EQ_INT(sim_curves_count(c), 4);
    CHECK_EQ_INT(sim_curves_max_iters(c), 6);
    for (int t = 0; t < 4; t++) {
        cJSON *cfg = NULL;
        REQUIRE(space_sample(s, (size_t)t, &cfg, err, sizeof err) == 0);
        sim_curve_t cv;
        REQUIRE(sim_curves_lookup(c, cfg, &cv, err, sizeof err) == 0);
        CHECK_EQ_INT(cv.row, t);
        CHECK(cv.distance == 0);
        char name[32];
        snprintf(name, sizeof name, "trial_%05d", t);
        CHECK_STR(sim_curves_row_name(c, cv.row), name);
        for (int it = 1; it <= 6; it++) {
            const char *line;
            size_t len;
            double secs;
            REQUIRE(sim_curve_result(c, &cv, it, &line, &len, &secs) == 1);
            CHECK(secs >= 0);
            cJSON *r = cJSON_Parse(line);
            char q[256];
            snprintf(q, sizeof q,
                     "SELECT r.metric FROM results_current r JOIN trials t ON t.id = r.trial_id"
                     " WHERE t.trial_no = %d AND r.iteration = %d",
                     t, it);
            const cJSON *m = cJSON_GetObjectItem(r, "loss");
            CHECK(m && m->valuedouble == db_real(dir, q)); /* exactly the recorded double */
            cJSON_Delete(r);
        }
        cJSON_Delete(cfg);
    }
    sim_curves_free(c);
    space_free(s);
    out_free(&o);

    const char *bad[] = {"export", "nope", "--table", NULL};
    o = run_tune(dir, bad);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "no experiment named \"nope\"");
    out_free(&o);
}

/* The rows a simulation recorded, as one text: every result and every decision, trial by
 * trial, with virtual times relative to the experiment's start. */
static char *dump(const char *db, const char *exp)
{
    char sql[2048];
    snprintf(
        sql, sizeof sql,
        "SELECT group_concat(x, char(10)) FROM (SELECT t.trial_no || ' ' || r.iteration || "
        "' ' || quote(r.metric) || ' ' || r.data || ' ' || printf('%%.6f', r.wall_time - "
        "e.created_at) AS x FROM results_current r JOIN trials t ON t.id = r.trial_id JOIN "
        "experiments e ON e.id = t.experiment_id WHERE e.name = '%s' ORDER BY r.id) UNION ALL "
        "SELECT group_concat(y, char(10)) FROM (SELECT t.trial_no || ' ' || d.iteration || ' ' "
        "|| d.action || ' ' || quote(d.rung) || ' ' || quote(d.cutoff) || ' ' || d.reason AS y "
        "FROM decisions d JOIN trials t ON t.id = d.trial_id JOIN experiments e ON e.id = "
        "t.experiment_id WHERE e.name = '%s' ORDER BY d.id)",
        exp, exp);
    sqlite3 *h = testdb_open(db, 0);
    char *out = strdup("");
    sqlite3_stmt *st = NULL;
    if (h && sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *t = (const char *)sqlite3_column_text(st, 0);
            size_t n = strlen(out) + (t ? strlen(t) : 0) + 2;
            char *o2 = malloc(n);
            snprintf(o2, n, "%s%s\n", out, t ? t : "");
            free(out);
            out = o2;
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

static const char asha_space[] =
    "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": %d,"
    " \"max_concurrent\": %d, \"seed\": 11,"
    " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"9\"],"
    " \"scheduler\": {\"type\": \"%s\"%s},"
    " \"space\": {\"lr\": {\"loguniform\": [0.00001, 1]}}}";

static const char asha_opts[] = ", \"max_t\": 9, \"grace_period\": 1, \"reduction_factor\": 3";

TEST(simulation_is_deterministic_and_says_what_it_cost)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "deterministic");
    snprintf(sp, sizeof sp, asha_space, "det", 40, 4, g_synth, "asha", asha_opts);
    space_file(dir, sp);
    const char *a[] = {"simulate", "space.json", "--synthetic", "seed=4,noise=0.05",
                       "--db",     "one.db",     "--quiet",     NULL};
    struct out o = run_tune(dir, a);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Simulated det-sim: 40 trials terminated");
    CHECK_CONTAINS(o.out, "with 4 workers; compute spent");
    CHECK_CONTAINS(o.out, "saved against running every trial to max_t (training_iteration 9)");
    out_free(&o);
    a[5] = "two.db";
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char p1[4200], p2[4200];
    snprintf(p1, sizeof p1, "%s/one.db", dir);
    snprintf(p2, sizeof p2, "%s/two.db", dir);
    char *d1 = dump(p1, "det-sim"), *d2 = dump(p2, "det-sim");
    CHECK(strlen(d1) > 1000);
    CHECK(count_of(d1, " stop ") >= 10); /* ASHA stopped trials */
    CHECK_STR(d1, d2);
    free(d1);
    free(d2);
    /* a second simulation into the same database takes the next name */
    a[5] = "one.db";
    o = run_tune(dir, a);
    CHECK_CONTAINS(o.out, "Simulated det-sim-2:");
    out_free(&o);
    CHECK_EQ_INT(testdb_int(p1, "SELECT count(*) FROM experiments WHERE settings_json LIKE "
                                "'%\"simulated\":{%'"),
                 2);
    /* the virtual clock is what the store records: 40 trials of <= 9 s on 4 workers */
    double span = testdb_num(p1,
                             "SELECT max(r.wall_time) - min(e.created_at) FROM results r JOIN "
                             "trials t ON t.id = r.trial_id JOIN experiments e ON e.id = "
                             "t.experiment_id WHERE e.name = 'det-sim'",
                             NAN);
    CHECK(span > 5 && span < 120);
}

/* While it runs, the live table comes in blocks paced in real time (not on the virtual
 * clock, which would print one per turn), each headed by the virtual time and the compute
 * spent and saved so far. */
TEST(simulation_shows_its_cost_while_it_runs)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "live");
    snprintf(sp, sizeof sp, asha_space, "live", 20000, 200, g_synth, "asha", asha_opts);
    space_file(dir, sp);
    const char *a[] = {"simulate", "space.json",        "--synthetic", "seed=2", "--db",
                       ":memory:", "--status-interval", "0.02",        NULL};
    struct out o = run_tune(dir, a);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    int blocks = count_of(o.out, "== Status ==");
    CHECK(blocks >= 3);     /* some while running, and the final one */
    CHECK(blocks < 100000); /* not one per turn */
    CHECK_CONTAINS(o.out, " RUNNING, ");
    const char *first = strstr(o.out, "Virtual time ");
    REQUIRE(first);
    CHECK(strncmp(first, "Virtual time 00:00:00;", 22) != 0); /* it had advanced */
    CHECK_CONTAINS(first, "trial-hours, ");
    CHECK_CONTAINS(first, "% saved against running every trial to max_t (training_iteration 9)");
    out_free(&o);
    const char *bad[] = {"simulate",          "space.json", "--synthetic", "seed=2",
                         "--status-interval", "0",          NULL};
    o = run_tune(dir, bad);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "--status-interval wants a positive number of seconds");
    out_free(&o);
}

TEST(a_replayed_fifo_experiment_gives_back_its_curves_and_best_trial)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "from");
    snprintf(sp, sizeof sp, asha_space, "ff", 6, 2, g_synth, "fifo", "");
    space_file(dir, sp);
    const char *run[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    struct out o = run_tune(dir, run);
    REQUIRE(o.code == 0);
    out_free(&o);
    const char *a[] = {"simulate", "space.json", "--from", "ff", "--quiet", NULL};
    o = run_tune(dir, a);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Replaying 6 trials of ff that reached training_iteration 9; 0 that "
                          "did not are left out.");
    CHECK_CONTAINS(o.out, "Largest distance from a configuration to the table row that answered "
                          "it: 0 ");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT (SELECT best_trial FROM experiment_summary WHERE experiment "
                             "= 'ff') = (SELECT best_trial FROM experiment_summary WHERE "
                             "experiment = 'ff-sim')"),
                 1);
    /* every result of every trial, the same */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results_current r JOIN trials t ON t.id = "
                             "r.trial_id JOIN experiments e ON e.id = t.experiment_id WHERE "
                             "e.name = 'ff-sim'"),
                 54);
    CHECK_EQ_INT(db_int(dir,
                        "SELECT count(*) FROM (SELECT t.trial_no, r.iteration, r.metric FROM "
                        "results_current r JOIN trials t ON t.id = r.trial_id JOIN experiments e "
                        "ON e.id = t.experiment_id WHERE e.name = 'ff' EXCEPT SELECT t.trial_no, "
                        "r.iteration, r.metric FROM results_current r JOIN trials t ON t.id = "
                        "r.trial_id JOIN experiments e ON e.id = t.experiment_id WHERE e.name = "
                        "'ff-sim')"),
                 0);
    /* the row that answered each trial is named in its record */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials t JOIN experiments e ON e.id = "
                             "t.experiment_id WHERE e.name = 'ff-sim' AND t.exec_id = t.name AND "
                             "t.node = 'd=0'"),
                 6);
}

TEST(simulated_asha_decides_as_the_real_run_it_replays)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "asha_equal");
    snprintf(sp, sizeof sp, asha_space, "real", 12, 1, g_synth, "asha", asha_opts);
    space_file(dir, sp);
    const char *run[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    struct out o = run_tune(dir, run);
    REQUIRE(o.code == 0);
    out_free(&o);
    const char *ex[] = {"export", "real", "--table", NULL};
    o = run_tune(dir, ex);
    REQUIRE(o.code == 0);
    char tp[4200];
    snprintf(tp, sizeof tp, "%s/real.csv", dir);
    write_file(tp, o.out);
    out_free(&o);
    const char *a[] = {"simulate",  "space.json", "--table", "real.csv",
                       "--workers", "1",          "--quiet", NULL};
    o = run_tune(dir, a);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    static const char q[] =
        "SELECT count(*) FROM (SELECT t.trial_no, d.iteration, d.action, d.rung, d.value, "
        "d.cutoff FROM decisions d JOIN trials t ON t.id = d.trial_id JOIN experiments e ON "
        "e.id = t.experiment_id WHERE e.name = '%s' EXCEPT SELECT t.trial_no, d.iteration, "
        "d.action, d.rung, d.value, d.cutoff FROM decisions d JOIN trials t ON t.id = "
        "d.trial_id JOIN experiments e ON e.id = t.experiment_id WHERE e.name = '%s')";
    char q1[2048], q2[2048];
    snprintf(q1, sizeof q1, q, "real", "real-sim");
    snprintf(q2, sizeof q2, q, "real-sim", "real");
    CHECK_EQ_INT(db_int(dir, q1), 0);
    CHECK_EQ_INT(db_int(dir, q2), 0);
    CHECK(db_int(dir, "SELECT count(*) FROM decisions WHERE action = 'stop'") >= 8);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions d JOIN trials t ON t.id = "
                             "d.trial_id JOIN experiments e ON e.id = t.experiment_id WHERE "
                             "e.name = 'real'"),
                 db_int(dir, "SELECT count(*) FROM decisions d JOIN trials t ON t.id = "
                             "d.trial_id JOIN experiments e ON e.id = t.experiment_id WHERE "
                             "e.name = 'real-sim'"));
}

/* A small recorded table: 5 configurations of lr, 4 iterations of 1.5 s each. */
static const char small_table[] = "trial,config/lr,training_iteration,time_this_iter_s,loss\n"
                                  "t0,0.001,1,1.5,1\nt0,0.001,2,1.5,0.5\nt0,0.001,3,1.5,0.33\n"
                                  "t0,0.001,4,1.5,0.25\nt1,0.003,1,1.5,0.5\nt1,0.003,2,1.5,0.25\n"
                                  "t1,0.003,3,1.5,0.16\nt1,0.003,4,1.5,0.125\nt2,0.01,1,1.5,0.3\n"
                                  "t2,0.01,2,1.5,0.2\nt2,0.01,3,1.5,0.1\nt2,0.01,4,1.5,0.05\n";

/* "lr" in the space: %s (a distribution); other settings: %s (", ..." or ""). */
static const char small_space[] =
    "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": %d,"
    " \"max_concurrent\": 2, \"seed\": 1, \"command\": [\"unused\"]%s,"
    " \"scheduler\": {\"type\": \"asha\", \"max_t\": 4, \"grace_period\": 1, "
    "\"reduction_factor\": 2}, \"space\": {\"lr\": %s}}";

/* text with every `from` replaced by `to`; the caller frees. */
static char *replaced(const char *text, const char *from, const char *to)
{
    size_t nf = strlen(from), n = strlen(text) + 1;
    if (strlen(to) > nf) n += count_of(text, from) * (strlen(to) - nf);
    char *out = malloc(n), *o = out;
    for (const char *p = text; *p;) {
        if (strncmp(p, from, nf) == 0) {
            o += sprintf(o, "%s", to);
            p += nf;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    return out;
}

/* A table tune simulate cannot replay faithfully is bad input: exit 2 with the file and
 * line, before any experiment is recorded. Before, each of these ran and exited 0: the
 * truncated file replayed its last number cut short, inf never ended, the repeated and
 * out-of-order rows were replayed as they came, and without the metric's column every
 * trial was left PAUSED. */
TEST(a_bad_table_is_an_error_at_its_line_with_exit_2)
{
    char dir[4096], sp[8192], path[4400];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "bad_table");
    snprintf(sp, sizeof sp, small_space, "bt", 3, "", "{\"loguniform\": [0.001, 0.01]}");
    space_file(dir, sp);
    /* gzip, then cut inside the last row's number */
    snprintf(path, sizeof path, "%s/cut.csv.gz", dir);
    gzFile g = gzopen(path, "wb");
    REQUIRE(g);
    gzputs(g, small_table);
    gzclose(g);
    FILE *f = fopen(path, "rb");
    REQUIRE(f);
    unsigned char bytes[4096];
    size_t nb = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    f = fopen(path, "wb");
    REQUIRE(f && nb > 40);
    fwrite(bytes, 1, nb - 12, f); /* its trailer (8 bytes) and the end of its last row */
    fclose(f);
    char *inf = replaced(small_table, "t1,0.003,3,1.5", "t1,0.003,3,inf");
    char *huge = replaced(small_table, "t1,0.003,3,1.5", "t1,0.003,3,1e12");
    char *again = replaced(small_table, "t2,0.01,3,", "t2,0.01,2,");
    char *back = replaced(small_table, "t2,0.01,4,", "t2,0.01,1,");
    char *nometric = replaced(small_table, ",loss\n", ",val_loss\n");
    struct {
        const char *file, *text, *msg;
    } cases[] = {
        {"cut.csv.gz", NULL, "cut.csv.gz:13: the file ends inside its gzip stream"},
        {"inf.csv", inf,
         "inf.csv:8: time_this_iter_s must be a number of seconds from 0 to 31536000 (365 "
         "days), not \"inf\""},
        {"huge.csv", huge, "huge.csv:8: time_this_iter_s must be a number of seconds"},
        {"again.csv", again, "again.csv:12: training_iteration 2 again (line 11 has it too)"},
        {"back.csv", back, "back.csv:13: training_iteration 1 after 3 (line 12)"},
        {"nometric.csv", nometric,
         "nometric.csv:1: the table has no \"loss\" column, the experiment's \"metric\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].text) {
            snprintf(path, sizeof path, "%s/%s", dir, cases[i].file);
            write_file(path, cases[i].text);
        }
        const char *a[] = {"simulate", "space.json", "--table", cases[i].file, "--quiet", NULL};
        struct out o = run_tune(dir, a);
        CHECK_EQ_INT(o.code, 2);
        CHECK_CONTAINS(o.err, cases[i].msg);
        out_free(&o);
    }
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 0);
    free(inf);
    free(huge);
    free(again);
    free(back);
    free(nometric);
}

/* Two trials at once, FIFO; other settings: %s (", ..." or ""). */
static const char fifo_space[] =
    "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 2,"
    " \"max_concurrent\": 2, \"seed\": 1, \"command\": [\"unused\"]%s,"
    " \"space\": {\"lr\": {\"loguniform\": [0.001, 0.1]}}}";

/* The virtual clock jumps to the next event, however far: iterations of most of a year
 * (2.5e7 s, 20,000 of them per trial) take as long as short ones. Before, the loop was
 * given an hour at most per turn and the clock crept an hour a turn: this run took 12 s
 * (1e12 s iterations, minutes). */
TEST(the_virtual_clock_jumps_to_the_next_event)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "jump");
    snprintf(sp, sizeof sp, fifo_space, "jump", "");
    space_file(dir, sp);
    const char *a[] = {"simulate",    "space.json",
                       "--synthetic", "time=2.5e7,time_spread=0,iters=20000",
                       "--quiet",     NULL};
    struct out o = run_tune(dir, a);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    CHECK(o.secs < 4); /* 0.07 s here; the creeping clock took 12 s */
    out_free(&o);
    /* the last result at exactly start delay + 20,000 iterations */
    CHECK_NEAR(db_real(dir, "SELECT max(r.wall_time) - e.created_at FROM results r JOIN trials t "
                            "ON t.id = r.trial_id JOIN experiments e ON e.id = t.experiment_id"),
               0.05 + 20000 * 2.5e7, 1e-3);
    /* and a time budget still ends it where it says, with the summary saying so */
    snprintf(sp, sizeof sp, fifo_space, "jumpb", ", \"time_budget_s\": 1e11");
    space_file(dir, sp);
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "The time budget ended the run (time_budget_s 1e+11 s)");
    out_free(&o);
    CHECK_NEAR(db_real(dir, "SELECT ended_at - created_at FROM experiments WHERE name = "
                            "'jumpb-sim'"),
               1e11 + 0.05, 1e-3); /* the running trials end a stop delay after it */
}

/* Trials that fail end a simulation as they end a real run (README, "Exit status"): exit 3
 * with the cause said, and an experiment that fail_fast stopped is not FINISHED. Before,
 * a grid value the table lacks ended in fail_fast with exit 0, experiment FINISHED. */
TEST(failed_trials_exit_3_with_the_cause_said)
{
    char dir[4096], sp[8192], path[4400];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "failed");
    snprintf(path, sizeof path, "%s/t.csv", dir);
    write_file(path, small_table);
    /* 0.5, 0.7 and 0.9 have no rows: three identical failures, fail_fast's 3 */
    snprintf(sp, sizeof sp, small_space, "gr", 1, "",
             "{\"grid_search\": [0.001, 0.003, 0.5, 0.7, 0.9]}");
    space_file(dir, sp);
    const char *a[] = {"simulate", "space.json", "--table", "t.csv", "--quiet", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 3);
    CHECK_CONTAINS(o.out, "Stopped gr-sim: ");
    CHECK_CONTAINS(o.err, "experiment gr-sim stopped: 3 trials failed the same way before "
                          "reporting any result (fail_fast 3): no row of the table has this "
                          "configuration's grid_search values");
    CHECK_CONTAINS(o.err, "Fix the table or space.json, then simulate again");
    CHECK(strstr(o.err, "stderr.log") == NULL); /* simulated trials have none */
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE name = 'gr-sim' AND status "
                             "= 'INTERRUPTED'"),
                 1);
    /* without fail_fast every trial runs: the failed ones are listed, still exit 3 */
    snprintf(sp, sizeof sp, small_space, "gr0", 1, ", \"fail_fast\": 0",
             "{\"grid_search\": [0.001, 0.003, 0.5, 0.7, 0.9]}");
    space_file(dir, sp);
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 3);
    CHECK_CONTAINS(o.out, "Simulated gr0-sim: 2 trials terminated");
    CHECK_CONTAINS(o.out, "3 trials failed: see `tune trials gr0-sim --db tune.db`.\n"
                          "  trial_00002: no row of the table has this configuration's "
                          "grid_search values");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE name = 'gr0-sim' AND "
                             "status = 'FINISHED'"),
                 1);
}

/* A metric the first result lacks (its cell empty) stops the run as in a real one: exit 2,
 * the trials PAUSED, the experiment not FINISHED. Before: exit 0, nothing said. */
TEST(a_metric_the_first_result_lacks_exits_2)
{
    char dir[4096], sp[8192], path[4400];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "no_metric");
    /* every trial's first iteration reports no loss */
    char *t1 = replaced(small_table, ",1,1.5,1\n", ",1,1.5,\n");
    char *t2 = replaced(t1, ",1,1.5,0.5\n", ",1,1.5,\n");
    char *t3 = replaced(t2, ",1,1.5,0.3\n", ",1,1.5,\n");
    snprintf(path, sizeof path, "%s/t.csv", dir);
    write_file(path, t3);
    free(t1);
    free(t2);
    free(t3);
    snprintf(sp, sizeof sp, small_space, "nm", 2, "", "{\"loguniform\": [0.001, 0.01]}");
    space_file(dir, sp);
    const char *a[] = {"simulate", "space.json", "--table", "t.csv", "--quiet", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.out, "Stopped nm-sim: 0 trials terminated (0 stopped early by asha), 0 "
                          "failed, 2 paused.");
    CHECK_CONTAINS(o.err, "experiment nm-sim stopped: trial_00000 reports no \"loss\", the "
                          "experiment's \"metric\"");
    CHECK_CONTAINS(o.err, "Then simulate again");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE name = 'nm-sim' AND status "
                             "= 'INTERRUPTED'"),
                 1);
}

TEST(simulate_bad_arguments_are_clear_errors)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "bad");
    snprintf(sp, sizeof sp, asha_space, "bad", 4, 1, g_synth, "asha", asha_opts);
    space_file(dir, sp);
    struct {
        const char *args[8];
        int code;
        const char *msg;
    } cases[] = {
        {{"simulate", "space.json", NULL}, 2, "say where the curves come from"},
        {{"simulate", "space.json", "--table", "a.csv", "--synthetic", "seed=1", NULL},
         2,
         "one of --table FILE, --synthetic SPEC or --from NAME"},
        {{"simulate", "space.json", "--table", "missing.csv", NULL}, 2, "cannot open missing.csv"},
        {{"simulate", "space.json", "--synthetic", "noise=x", NULL}, 2, "noise wants a number"},
        {{"simulate", "space.json", "--from", "nope", NULL}, 2, "no experiment named \"nope\""},
        {{"simulate", "space.json", "--synthetic", "", "--workers", "0", NULL},
         2,
         "--workers wants a whole number"},
        {{"simulate", NULL}, 2, "which experiment file?"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct out o = run_tune(dir, cases[i].args);
        CHECK_EQ_INT(o.code, cases[i].code);
        CHECK_CONTAINS(o.err, cases[i].msg);
        out_free(&o);
    }
}

TT_MAIN

/* What makes a replay's answer doubtful is said, with the numbers the database holds.
 * An ASHA run keeps few full curves: --from it answers most trials from another
 * configuration, some far (> SIM_FAR_DISTANCE); its exported table holds the stopped
 * trials' short curves, and a simulation that would run such a trial on reaches the end
 * of the row and ends there, as if finished. Before, both ran and exited 0 with the
 * compute saved and nothing more than the largest distance. A replay of the run by its
 * own table (every trial answered by itself, stopped where it was) warns of nothing. */
TEST(far_answers_and_curves_that_run_out_are_said)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "doubtful");
    snprintf(sp, sizeof sp, asha_space, "real", 20, 1, g_synth, "asha", asha_opts);
    space_file(dir, sp);
    const char *run[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    struct out o = run_tune(dir, run);
    REQUIRE(o.code == 0);
    out_free(&o);
    long long full = db_int(dir, "SELECT count(*) FROM trial_summary WHERE iterations = 9");
    REQUIRE(full >= 1 && full <= 5);

    /* --from: the few full curves answer everyone */
    const char *a[] = {"simulate", "space.json", "--from", "real", "--quiet", NULL};
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    long long far = db_int(dir, "SELECT count(*) FROM trials t JOIN experiments e ON e.id ="
                                " t.experiment_id WHERE e.name = 'real-sim'"
                                " AND CAST(substr(t.node, 3) AS REAL) > 0.25");
    double maxd =
        db_real(dir, "SELECT max(CAST(substr(t.node, 3) AS REAL)) FROM trials t JOIN"
                     " experiments e ON e.id = t.experiment_id WHERE e.name = 'real-sim'");
    CHECK(far >= 1);
    char want[512], d[32];
    snprintf(d, sizeof d, "%.4g", maxd);
    snprintf(want, sizeof want,
             "tune: warning: %lld of 20 trials were answered from a recorded configuration "
             "farther than 0.25 from their own (the largest distance %s;",
             far, d);
    CHECK_CONTAINS(o.err, want);
    snprintf(want, sizeof want,
             "describe the %lld recorded configuration%s (--from real "
             "replays only its trials that ran as far as the longest), not this space.",
             full, full == 1 ? "" : "s");
    CHECK_CONTAINS(o.err, want);
    CHECK_CONTAINS(o.err, "as points_to_evaluate");
    CHECK(strstr(o.err, "ran out") == NULL); /* its curves all reach max_t */
    out_free(&o);

    /* its table, stopped trials and all */
    const char *ex[] = {"export", "real", "--table", NULL};
    o = run_tune(dir, ex);
    REQUIRE(o.code == 0);
    char tp[4200];
    snprintf(tp, sizeof tp, "%s/real.csv", dir);
    write_file(tp, o.out);
    out_free(&o);
    /* replayed by itself: nothing to say */
    const char *same[] = {"simulate",  "space.json", "--table", "real.csv",
                          "--workers", "1",          "--quiet", NULL};
    o = run_tune(dir, same);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strstr(o.err, "warning") == NULL);
    if (strstr(o.err, "warning")) fprintf(stderr, "%s", o.err);
    out_free(&o);
    /* other configurations: some answered by a stopped trial's row, which ends early */
    snprintf(sp, sizeof sp, asha_space, "other", 40, 4, g_synth, "asha", asha_opts);
    char *sp2 = replaced(sp, "\"seed\": 11", "\"seed\": 12");
    space_file(dir, sp2);
    free(sp2);
    o = run_tune(dir, same);
    CHECK_EQ_INT(o.code, 0);
    static const char outq[] =
        "SELECT %s FROM trial_summary s WHERE s.experiment = 'other-sim' AND s.status ="
        " 'TERMINATED' AND s.early_stopped = 0 AND s.iterations < 9";
    char q[512];
    snprintf(q, sizeof q, outq, "count(*)");
    long long ran_out = db_int(dir, q);
    CHECK(ran_out >= 1);
    snprintf(q, sizeof q, outq, "min(s.iterations)");
    long long lo = db_int(dir, q);
    snprintf(q, sizeof q, outq, "max(s.iterations)");
    long long hi = db_int(dir, q);
    char at[64];
    if (lo == hi)
        snprintf(at, sizeof at, "iteration %lld", lo);
    else
        snprintf(at, sizeof at, "iterations %lld to %lld", lo, hi);
    snprintf(want, sizeof want,
             "tune: warning: %lld trial%s ran out of recorded curve at %s, short of max_t "
             "(training_iteration 9), while the scheduler would have run",
             ran_out, ran_out == 1 ? "" : "s", at);
    CHECK_CONTAINS(o.err, want);
    if (!strstr(o.err, want)) fprintf(stderr, "wanted: %s\n", want);
    out_free(&o);
}

/* ---- the pool protocol (tune simulate --pool) ------------------------------------------- */
/* A table of 12 configurations of lr, 4 iterations of 1 s each; t10 and t11 hold the same lr
 * (two recordings), which the nearest-row rule answers both with t10. */
static void pool_table(const char *dir)
{
    char path[4200], text[8192];
    size_t n = (size_t)snprintf(text, sizeof text,
                                "trial,config/lr,training_iteration,time_this_iter_s,loss\n");
    for (int i = 0; i < 12; i++) {
        double lr = i >= 10 ? 0.01 : pow(10, -4 + 3.0 * i / 9);
        for (int it = 1; it <= 4; it++)
            n += (size_t)snprintf(text + n, sizeof text - n, "t%d,%.17g,%d,1,%.17g\n", i, lr, it,
                                  fabs(log10(lr) + 2.5) + 1.0 / it + 0.01 * i);
    }
    snprintf(path, sizeof path, "%s/pool.csv", dir);
    write_file(path, text);
}

static const char pool_space[] =
    "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 20,"
    " \"max_concurrent\": 2, \"seed\": 3, \"command\": [\"unused\"]%s,"
    " \"scheduler\": {\"type\": \"asha\", \"max_t\": 4, \"grace_period\": 1, "
    "\"reduction_factor\": 2}, \"space\": {\"lr\": {\"loguniform\": [0.0001, 0.1]}}}";

/* Every configuration (row) is trained at most once, each trial replays its own row at
 * distance 0 (the two rows of one lr both run), and once the 12 rows are taken no new trial
 * starts: 12 of num_samples 20, said in the summary. The same seed gives the same rows in
 * the same order. Without --pool the same TPE run re-runs rows (20 trials over 12 rows). */
TEST(pool_protocol_trains_each_row_at_most_once_and_stops_when_exhausted)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "pool");
    pool_table(dir);
    const char *search[] = {"", ", \"search\": {\"type\": \"tpe\"}",
                            ", \"search\": {\"type\": \"tpe\", \"preset\": \"bohb\"}"};
    const char *names[] = {"prand", "ptpe", "pbohb"};
    for (int m = 0; m < 3; m++) {
        snprintf(sp, sizeof sp, pool_space, names[m], search[m]);
        space_file(dir, sp);
        for (int rep = 0; rep < 2; rep++) {
            const char *a[] = {"simulate", "space.json", "--table", "pool.csv",
                               "--pool",   "--quiet",    NULL};
            struct out o = run_tune(dir, a);
            if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
            CHECK_EQ_INT(o.code, 0);
            CHECK_CONTAINS(o.out, "Pool protocol: 12 of the table's 12 configurations trained, "
                                  "each at most once; the pool is exhausted, so no new trials "
                                  "started after it");
            CHECK_CONTAINS(o.out, "Largest distance from a configuration to the table row that "
                                  "answered it: 0 ");
            out_free(&o);
        }
        char q[1024];
        const char *exp = m == 0 ? "prand-sim" : m == 1 ? "ptpe-sim" : "pbohb-sim";
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM trials t JOIN experiments e ON e.id = t.experiment_id "
                 "WHERE e.name = '%s'",
                 exp);
        CHECK_EQ_INT(db_int(dir, q), 12);
        snprintf(q, sizeof q,
                 "SELECT count(DISTINCT t.exec_id) FROM trials t JOIN experiments e ON e.id = "
                 "t.experiment_id WHERE e.name = '%s' AND t.node = 'd=0'",
                 exp);
        CHECK_EQ_INT(db_int(dir, q), 12);
        /* deterministic: the second run took the same rows in the same order */
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM trials a JOIN experiments ea ON ea.id = a.experiment_id "
                 "JOIN trials b ON b.trial_no = a.trial_no JOIN experiments eb ON eb.id = "
                 "b.experiment_id WHERE ea.name = '%s' AND eb.name = '%s-2' AND a.exec_id = "
                 "b.exec_id AND a.config = b.config",
                 exp, exp);
        CHECK_EQ_INT(db_int(dir, q), 12);
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM trials t JOIN experiments e ON e.id = t.experiment_id "
                 "WHERE e.name = '%s' AND t.suggested_by LIKE '%%unused in the pool%%'",
                 exp);
        CHECK_EQ_INT(db_int(dir, q), 12);
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM experiments WHERE name = '%s' AND settings_json LIKE "
                 "'%%\"pool\":true%%'",
                 exp);
        CHECK_EQ_INT(db_int(dir, q), 1);
    }
    /* TPE chose some of them from its model */
    CHECK(db_int(dir, "SELECT count(*) FROM trials t JOIN experiments e ON e.id = "
                      "t.experiment_id WHERE e.name = 'ptpe-sim' AND t.suggested_by LIKE "
                      "'TPE (optuna)%the best of % unused in the pool'") > 0);
    /* without --pool: 20 trials answered by 12 rows, some row more than once */
    snprintf(sp, sizeof sp, pool_space, "near", search[1]);
    space_file(dir, sp);
    const char *a[] = {"simulate", "space.json", "--table", "pool.csv", "--quiet", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK(strstr(o.out, "Pool protocol") == NULL);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials t JOIN experiments e ON e.id = "
                             "t.experiment_id WHERE e.name = 'near-sim'"),
                 20);
    CHECK(db_int(dir, "SELECT count(DISTINCT t.exec_id) FROM trials t JOIN experiments e ON "
                      "e.id = t.experiment_id WHERE e.name = 'near-sim'") < 12);
}

/* What the pool protocol cannot replay is refused before anything runs, with the fix. */
TEST(pool_protocol_refusals_name_the_fix)
{
    char dir[4096], sp[8192];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "pool_bad");
    pool_table(dir);
    struct {
        const char *extra, *space, *msg;
        int synthetic;
    } cases[] = {
        {"", NULL, "--pool needs a table (--table FILE or --from NAME)", 1},
        {", \"points_to_evaluate\": [{\"lr\": 0.001}]", NULL, "--pool with points_to_evaluate", 0},
        {", \"scheduler\": {\"type\": \"pbt\", \"perturbation_interval\": 2, "
         "\"hyperparam_mutations\": {\"lr\": {\"loguniform\": [0.0001, 0.1]}}}",
         NULL, "--pool with PBT", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *s = NULL;
        snprintf(sp, sizeof sp, pool_space, "pb", cases[i].extra);
        if (i == 2) { /* the extra scheduler replaces ASHA */
            s = replaced(sp,
                         ", \"scheduler\": {\"type\": \"asha\", \"max_t\": 4, "
                         "\"grace_period\": 1, \"reduction_factor\": 2}",
                         "");
            snprintf(sp, sizeof sp, "%s", s);
            free(s);
        }
        space_file(dir, sp);
        const char *a[] = {"simulate",
                           "space.json",
                           cases[i].synthetic ? "--synthetic" : "--table",
                           cases[i].synthetic ? "seed=1" : "pool.csv",
                           "--pool",
                           NULL};
        struct out o = run_tune(dir, a);
        CHECK_EQ_INT(o.code, 2);
        CHECK_CONTAINS(o.err, cases[i].msg);
        out_free(&o);
    }
    /* grid_search: the table's rows are whole configurations */
    snprintf(sp, sizeof sp, pool_space, "pg", "");
    char *g = replaced(sp, "{\"loguniform\": [0.0001, 0.1]}", "{\"grid_search\": [0.0001, 0.01]}");
    space_file(dir, g);
    free(g);
    const char *a[] = {"simulate", "space.json", "--table", "pool.csv", "--pool", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "--pool: the space's lr is a grid_search");
    out_free(&o);
    /* a row whose value the space does not have */
    snprintf(sp, sizeof sp, pool_space, "pc", "");
    char *c = replaced(sp, "{\"loguniform\": [0.0001, 0.1]}", "{\"choice\": [0.0001, 0.01]}");
    space_file(dir, c);
    free(c);
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "which is not a value of the space's lr: a pool replays configurations "
                          "of the space only");
    out_free(&o);
}

/* The compute saved is measured against what running every trial to max_t costs as the
 * loop runs it: to its first result at or past max_t (in the scheduler's time_attr, here a
 * table that reports every other training_iteration), then its stop; or to the end of its
 * curve where that comes first, which the summary then says. A run that saves nothing says
 * 0.0%. Before, the figure counted max_t rows rather than iterations (this run "saved 50.0%"
 * while every trial ran to max_t), a trial's stop delay even where it ends by itself (a
 * FIFO run "saved 0.5%"), and said "to max_t" of curves that end before it. */
TEST(the_saving_is_against_running_every_trial_to_max_t_or_its_curves_end)
{
    char dir[4096], sp[8192], path[4200], text[16384];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "saving");
    size_t n = (size_t)snprintf(text, sizeof text,
                                "trial,config/lr,training_iteration,time_this_iter_s,loss\n");
    for (int i = 0; i < 20; i++)
        for (int k = 1; k <= 10; k++)
            n += (size_t)snprintf(text + n, sizeof text - n, "t%d,%.17g,%d,1,%.17g\n", i,
                                  pow(10, -4 + 3.0 * i / 19), 2 * k, 1.0 / k + 0.01 * i);
    snprintf(path, sizeof path, "%s/gap.csv", dir);
    write_file(path, text);
    static const char space[] =
        "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 20,"
        " \"seed\": 1, \"command\": [\"x\"]%s, \"space\": {\"lr\": {\"loguniform\": [0.0001, "
        "0.1]}}}";
    struct {
        const char *name, *extra, *want;
    } cases[] = {
        /* one rung at max_t: nothing stopped early, every trial stopped at max_t at once */
        {"tomax",
         ", \"stop_grace_s\": 0, \"scheduler\": {\"type\": \"asha\", \"max_t\": 10, "
         "\"grace_period\": 10, \"reduction_factor\": 3}",
         "trial-hours, 0.0% saved against running every trial to max_t (training_iteration 10)"},
        /* left 5 s to end by itself after max_t, as the loop does: the rest of its curve */
        {"grace",
         ", \"scheduler\": {\"type\": \"asha\", \"max_t\": 10, \"grace_period\": 10, "
         "\"reduction_factor\": 3}",
         "trial-hours, 0.0% saved against running every trial to max_t (training_iteration 10)"},
        {"fifo", "", "trial-hours, 0.0% saved against running every trial to the end of its curve"},
        {"short",
         ", \"scheduler\": {\"type\": \"asha\", \"max_t\": 40, \"grace_period\": 2, "
         "\"reduction_factor\": 3}",
         "saved against running every trial to max_t (training_iteration 40), or to the end of "
         "its recorded curve where that comes first"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(sp, sizeof sp, space, cases[i].name, cases[i].extra);
        space_file(dir, sp);
        const char *a[] = {"simulate",  "space.json", "--table", "gap.csv",
                           "--workers", "2",          "--quiet", NULL};
        struct out o = run_tune(dir, a);
        if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
        CHECK_EQ_INT(o.code, 0);
        CHECK_CONTAINS(o.out, cases[i].want);
        if (i == 3) CHECK_CONTAINS(o.out, "20 of 20 trials' curves end before max_t");
        out_free(&o);
    }
    /* the short case's figure from the database: each trial's curve to its end (20 s of
     * iterations and a start delay) against what the trials spent */
    double spent = db_real(dir, "SELECT sum(t.ended_at - t.started_at) FROM trials t JOIN "
                                "experiments e ON e.id = t.experiment_id WHERE e.name = "
                                "'short-sim'");
    char want[128];
    snprintf(want, sizeof want, "trial-hours, %.1f%% saved",
             100 * (1 - spent / (20 * (10 + 0.05))));
    struct out o;
    snprintf(sp, sizeof sp, space, "short", cases[3].extra);
    space_file(dir, sp);
    const char *a[] = {"simulate",  "space.json", "--table", "gap.csv",
                       "--workers", "2",          "--quiet", NULL};
    o = run_tune(dir, a);
    CHECK_CONTAINS(o.out, want);
    out_free(&o);
}

/* Several objectives (docs/simulate.md, "Several objectives"): a space with "metric":
 * [loss, cost] simulates over the synthetic family, whose every result reports its cost
 * (one per configuration) and time_total_s (time_this_iter_s times the iteration), the
 * same in every run; a table's results report time_total_s, the curve's seconds so far, so
 * it can be an objective or a constraint with no column; a metric that no result reports
 * is refused before anything runs. */
TEST(two_objectives_simulate_with_the_documented_keys)
{
    char dir[4096], sp[4096];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "two_objectives");
    static const char two[] =
        "{\"name\": \"two\", \"metric\": [\"loss\", \"%s\"], \"mode\": [\"min\", \"min\"],"
        " \"num_samples\": 8, \"max_concurrent\": 3, \"seed\": 2, \"command\": [\"x\"],"
        " \"scheduler\": {\"type\": \"fifo\"}, \"space\": {\"a\": {\"uniform\": [0, 1]},"
        " \"b\": {\"loguniform\": [0.001, 1]}}}";
    snprintf(sp, sizeof sp, two, "cost");
    space_file(dir, sp);
    const char *a[] = {"simulate", "space.json", "--synthetic", "seed=5,diverge=0,iters=6",
                       "--db",     "one.db",     "--quiet",     NULL};
    struct out o = run_tune(dir, a);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Simulated two-sim: 8 trials terminated");
    out_free(&o);
    char p1[4200], p2[4200];
    snprintf(p1, sizeof p1, "%s/one.db", dir);
    snprintf(p2, sizeof p2, "%s/two.db", dir);
    CHECK_EQ_INT(testdb_int(p1, "SELECT count(*) FROM results"), 8 * 6);
    /* each result's time_total_s is its seconds per iteration times the iteration, exactly */
    CHECK_EQ_INT(testdb_int(p1, "SELECT count(*) FROM results WHERE "
                                "json_extract(data, '$.time_total_s') IS NOT "
                                "iteration * json_extract(data, '$.time_this_iter_s')"),
                 0);
    /* one cost per trial, in [0, 1], and not the same for every trial */
    CHECK_EQ_INT(testdb_int(p1, "SELECT count(*) FROM (SELECT count(DISTINCT "
                                "json_extract(data, '$.cost')) n, min(json_extract(data, "
                                "'$.cost')) lo, max(json_extract(data, '$.cost')) hi FROM "
                                "results GROUP BY trial_id) WHERE n != 1 OR lo < 0 OR hi > 1"),
                 0);
    CHECK_EQ_INT(testdb_int(p1, "SELECT count(DISTINCT json_extract(data, '$.cost')) FROM results"),
                 8);
    a[5] = "two.db";
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char *d1 = dump(p1, "two-sim"), *d2 = dump(p2, "two-sim");
    CHECK(count_of(d1, "\"cost\": ") == 8 * 6);
    CHECK_STR(d1, d2); /* the same values, run after run */
    free(d1);
    free(d2);

    /* a second metric the family does not report: refused before anything runs */
    snprintf(sp, sizeof sp, two, "costs");
    space_file(dir, sp);
    a[5] = "three.db";
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "the metric \"costs\" is not reported (did you mean \"cost\"?)");
    out_free(&o);

    /* a table: time_total_s as the second objective and as a constraint, with no column */
    char path[4200];
    snprintf(path, sizeof path, "%s/curves.csv", dir);
    write_file(path, "trial,config/a,config/b,training_iteration,time_this_iter_s,loss\n"
                     "p,0.2,0.01,1,2,0.9\np,0.2,0.01,2,3,0.7\np,0.2,0.01,3,4,0.6\n"
                     "q,0.8,0.5,1,1,0.8\nq,0.8,0.5,2,1,0.75\nq,0.8,0.5,3,1,0.74\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"tab\", \"metric\": [\"loss\", \"time_total_s\"], \"mode\": [\"min\", "
             "\"min\"], \"constraints\": {\"time_total_s\": {\"<=\": 100}}, \"num_samples\": 2,"
             " \"seed\": 1, \"command\": [\"x\"], \"scheduler\": {\"type\": \"fifo\"},"
             " \"points_to_evaluate\": [{\"a\": 0.2, \"b\": 0.01}, {\"a\": 0.8, \"b\": 0.5}],"
             " \"space\": {\"a\": {\"uniform\": [0, 1]}, \"b\": {\"loguniform\": [0.001, 1]}}}");
    space_file(dir, sp);
    const char *t[] = {"simulate", "space.json", "--table", "curves.csv",
                       "--db",     "tab.db",     "--quiet", NULL};
    o = run_tune(dir, t);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    snprintf(p1, sizeof p1, "%s/tab.db", dir);
    /* p: 2, 2+3, 2+3+4 seconds; q: 1, 2, 3 */
    CHECK_EQ_INT(testdb_int(p1, "SELECT count(*) FROM results r JOIN trials t ON "
                                "t.id = r.trial_id WHERE (t.trial_no, r.iteration, "
                                "json_extract(r.data, '$.time_total_s')) IN (VALUES (0, 1, 2), "
                                "(0, 2, 5), (0, 3, 9), (1, 1, 1), (1, 2, 2), (1, 3, 3))"),
                 6);
}

/* MO-ASHA over the synthetic family's loss and cost (docs/simulate.md, "Several
 * objectives"): a rung ranks its trials by Pareto rank, so trials are stopped early, each
 * decision says so, and the same space and seed give the same decisions and results. */
TEST(two_objectives_mo_asha_simulates_the_same_decisions_twice)
{
    char dir[4096];
    e2e_fresh_dir(dir, sizeof dir, "simulate", "mo_asha");
    space_file(dir, "{\"name\": \"moa\", \"metric\": [\"loss\", \"cost\"], \"mode\": [\"min\", "
                    "\"min\"], \"num_samples\": 60, \"max_concurrent\": 4, \"seed\": 3, "
                    "\"command\": [\"x\"], \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, "
                    "\"grace_period\": 1, \"reduction_factor\": 3}, \"space\": {\"a\": "
                    "{\"uniform\": [0, 1]}, \"b\": {\"uniform\": [0, 1]}, \"c\": {\"uniform\": "
                    "[0, 1]}}}");
    const char *a[] = {"simulate", "space.json", "--synthetic", "seed=7,noise=0.02",
                       "--db",     "one.db",     "--quiet",     NULL};
    struct out o = run_tune(dir, a);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Simulated moa-sim: 60 trials terminated");
    out_free(&o);
    a[5] = "two.db";
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char p1[4200], p2[4200];
    snprintf(p1, sizeof p1, "%s/one.db", dir);
    snprintf(p2, sizeof p2, "%s/two.db", dir);
    char *d1 = dump(p1, "moa-sim"), *d2 = dump(p2, "moa-sim");
    CHECK(count_of(d1, " stop ") >= 20); /* MO-ASHA stopped most trials at a rung */
    CHECK(count_of(d1, "by Pareto rank") >= 20);
    CHECK_STR(d1, d2);
    free(d1);
    free(d2);
    /* the trials that reached max_t each report both objectives there */
    CHECK(testdb_int(p1, "SELECT count(*) FROM results WHERE iteration = 9 AND "
                         "json_type(data, '$.cost') = 'real' AND json_type(data, '$.loss') = "
                         "'real'") >= 2);
}
