/* test_mo: early stopping with several objectives, end to end (docs/multiobjective.md,
 * "Early stopping"): the event loop driven in-process through the scripted executor on a
 * virtual clock (tests/scripted.h), each trial reporting two objectives ("loss", "cost")
 * under a constraint, its decisions read back from the real store. The case the issue names:
 * a kill -9 in the middle of a turn, then a resume, rebuilds the rungs' points exactly, so
 * every later decision is the one an uninterrupted run with the same seed makes.
 * Then the same through the real tune binary: `tune run`, kill -9 at three moments, `tune
 * run --resume`, on tests/progs/mo_trial. Last, hostile input at the edges, through the real
 * binary and a shell trial: objectives reported as a string, null, 1e308, -1e308, -0.0, NaN;
 * a constrained key reported only at first; every trial infeasible under ASHA; 8 objectives
 * and 9; a copied and a moved database; two experiments with different objectives in one.
 * Not for: the rung rule on hand-made points (test_scheduler.c, mo_*) or the ranking itself
 * (test_pareto.c). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define E2E_GROUP "mo"
#include "e2e.h"
#include "scheduler/sched.h"
#include "search/settings.h"
#include "search/space.h"
#include "store/store.h"
#include "scripted.h"
#include "testdb.h"
#include "tinytest.h"

#define NTRIALS 16

/* Sixteen trials trading loss against cost: a low loss costs more; cost above 8 breaks the
 * constraint. Each reports 9 results, one a second. */
static const struct script *scripts(void)
{
    static struct script s[MAX_T];
    for (int i = 0; i < NTRIALS; i++)
        s[i] = (struct script){.results = 9,
                               .period = 1,
                               .loss0 = 1 + (double)((i * 7) % NTRIALS),
                               .cost = 11 - (double)((i * 7) % NTRIALS) * 0.6 + (i % 3)};
    return s;
}

/* The space of a case: two objectives, a constraint on one of them, one trial at a time
 * (so that the order of results, hence of decisions, is the same however often the run is
 * interrupted) and the scheduler block given. */
static void space_of(char *buf, size_t n, const char *name, const char *sched)
{
    snprintf(buf, n,
             "{\"name\": \"%s\", \"metric\": [\"loss\", \"cost\"], \"mode\": [\"min\", \"min\"],"
             " \"constraints\": {\"cost\": {\"<=\": 10}}, \"command\": [\"x\"],"
             " \"space\": {\"lr\": {\"uniform\": [0, 1]}}, \"num_samples\": %d,"
             " \"max_concurrent\": 1, \"seed\": 3, \"scheduler\": %s}",
             name, NTRIALS, sched);
}

/* Every judged decision of the run, one per line: trial, iteration, action, reason; in that
 * order, so that two runs compare whatever order they were recorded in. A promotion's words
 * name its attempt and checkpoint, which an interruption changes: only its trial, rung and
 * standing are kept. The caller frees the text. */
static char *decisions(const char *db)
{
    return testdb_text(db, "SELECT group_concat(line, char(10)) FROM (SELECT t.trial_no || ' ' ||"
                           " d.iteration || ' ' || d.action || ' ' || CASE d.action WHEN 'promote'"
                           " THEN d.rung || ' ' || substr(d.reason, 1, instr(d.reason, ';'))"
                           " ELSE d.reason END AS line FROM decisions d JOIN trials t ON t.id ="
                           " d.trial_id WHERE d.action IN ('continue', 'stop', 'complete', 'pause',"
                           " 'promote') ORDER BY t.trial_no, d.iteration, d.action, d.reason)");
}

/* Each trial's end, one per line: trial, status, early_stopped. */
static char *outcome(const char *db)
{
    return testdb_text(db, "SELECT group_concat(trial_no || ' ' || status || ' ' || early_stopped,"
                           " char(10)) FROM (SELECT * FROM trials ORDER BY trial_no)");
}

static int run_case(const char *prefix, const char *name, const char *space, int fresh,
                    long kill_after)
{
    struct rig r;
    if (rig_start(&r, prefix, name, space, scripts(), fresh, &scripted_ckpt_ops) != 0) return -1;
    r.x.kill_after = kill_after;
    int rc = run_to_end(&r, 0, 0, NULL);
    rig_close(&r);
    return rc;
}

/* The run killed (SIGKILL, as kill -9) after `lines` result lines, in a child process, then
 * resumed here to its end. Returns 0 when the child died of the kill and the resume ended. */
static int killed_then_resumed(const char *name, const char *space, long lines)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        run_case("mo", name, space, 1, lines);
        _exit(0); /* the kill never came: the run ended first */
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return -1;
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) {
        fprintf(stderr, "%s: the run was not killed (status %d)\n", name, st);
        return -1;
    }
    return run_case("mo", name, space, 0, 0);
}

/* The reference run and runs killed at several moments, each resumed: the same decisions,
 * word for word (places, fronts and the rung sizes they name: the rungs' points were
 * rebuilt exactly), and the same ends. */
static void resume_matches_uninterrupted(const char *tag, const char *sched, const char *expect)
{
    char space[2048], name[64], ref_db[4200];
    snprintf(name, sizeof name, "%s_ref", tag);
    space_of(space, sizeof space, name, sched);
    REQUIRE(run_case("mo", name, space, 1, 0) == 0);
    const char *b = getenv("TUNE_BINARY_DIR");
    snprintf(ref_db, sizeof ref_db, "%s/mo_%s.db", b ? b : "/tmp", name);
    char *want = decisions(ref_db), *want_end = outcome(ref_db);
    REQUIRE(want && want_end);
    /* the run is a multi-objective one: its words are MO-ASHA's, and it stopped some */
    CHECK_CONTAINS(want, "by Pareto rank");
    CHECK_CONTAINS(want, expect);
    CHECK(testdb_int(ref_db, "SELECT count(*) FROM trials WHERE early_stopped") > 0);
    CHECK_EQ_INT(testdb_int(ref_db, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"),
                 NTRIALS);
    /* the value column keeps the first objective, the cutoff none */
    CHECK_EQ_INT(testdb_int(ref_db, "SELECT count(*) FROM decisions WHERE action IN ('stop',"
                                    " 'continue') AND (value IS NULL OR cutoff IS NOT NULL)"),
                 0);
    long total = (long)testdb_int(ref_db, "SELECT count(*) FROM results");
    /* kills early, in the middle and late in the run, each in the middle of a turn */
    long at[] = {3, total / 3, total / 2 + 1, total - 4};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        char kname[64], db[4200];
        snprintf(kname, sizeof kname, "%s_kill%zu", tag, k);
        space_of(space, sizeof space, kname, sched);
        CHECK_EQ_INT(killed_then_resumed(kname, space, at[k]), 0);
        snprintf(db, sizeof db, "%s/mo_%s.db", b ? b : "/tmp", kname);
        char *got = decisions(db), *got_end = outcome(db);
        CHECK(got && strcmp(got, want) == 0);
        CHECK(got_end && strcmp(got_end, want_end) == 0);
        if (got && strcmp(got, want) != 0)
            fprintf(stderr, "killed after %ld lines, decisions:\n%s\nuninterrupted:\n%s\n", at[k],
                    got, want);
        /* the kill came before the end: a trial ran again as a new attempt */
        CHECK(testdb_int(db, "SELECT count(*) FROM trials WHERE attempt > 1") > 0);
        free(got);
        free(got_end);
    }
    free(want);
    free(want_end);
}

TEST(asha_stopping_resume_after_kill_9_matches_uninterrupted)
{
    resume_matches_uninterrupted("stop",
                                 "{\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
                                 " \"reduction_factor\": 3}",
                                 "only the top");
}

TEST(asha_promotion_resume_after_kill_9_matches_uninterrupted)
{
    resume_matches_uninterrupted("promo",
                                 "{\"type\": \"asha\", \"variant\": \"promotion\", \"max_t\": 9,"
                                 " \"grace_period\": 1, \"reduction_factor\": 3}",
                                 "paused until it is among the top floor(n/rf) of the rung");
}

TEST(hyperband_resume_after_kill_9_matches_uninterrupted)
{
    resume_matches_uninterrupted(
        "hb", "{\"type\": \"hyperband\", \"max_t\": 9, \"reduction_factor\": 3}", "halved away");
}

/* The run stopped by Ctrl-C (the user's stop: running trials end PAUSED, to go on at the
 * resume) at a virtual time, then resumed here to its end. Returns 0 when both ran. */
static int stopped_then_resumed(const char *name, const char *space, double at)
{
    struct rig r;
    if (rig_start(&r, "mo", name, space, scripts(), 1, &scripted_ckpt_ops) != 0) return -1;
    int rc = run_to_end(&r, at, 0, NULL);
    rig_close(&r);
    if (rc < 0) return -1;
    return run_case("mo", name, space, 0, 0);
}

/* Ctrl-C at every few virtual seconds of the run, each followed by a resume: the same
 * decisions, word for word, as the uninterrupted run. A trial the user's stop ends is
 * PAUSED, not ended: the policy must not hear that it completed. HyperBand did (Ray's
 * on_trial_remove), so a bracket whose other trials waited at the milestone halved without
 * it at the interruption, "3rd of 4" where the uninterrupted run said "3rd of 5"
 * (tests/python/interrupt.py, mo_hyperband seed 31). */
static void ctrl_c_matches_uninterrupted(const char *tag, const char *sched)
{
    char space[2048], name[64], ref_db[4200];
    snprintf(name, sizeof name, "%s_cref", tag);
    space_of(space, sizeof space, name, sched);
    REQUIRE(run_case("mo", name, space, 1, 0) == 0);
    const char *b = getenv("TUNE_BINARY_DIR");
    snprintf(ref_db, sizeof ref_db, "%s/mo_%s.db", b ? b : "/tmp", name);
    char *want = decisions(ref_db), *want_end = outcome(ref_db);
    REQUIRE(want && want_end);
    long total = (long)testdb_int(ref_db, "SELECT count(*) FROM results");
    int stopped = 0;
    for (long at = 2; at < total; at += 3) {
        char cname[64], db[4200];
        snprintf(cname, sizeof cname, "%s_ctrlc%ld", tag, at);
        space_of(space, sizeof space, cname, sched);
        CHECK_EQ_INT(stopped_then_resumed(cname, space, (double)at + 0.5), 0);
        snprintf(db, sizeof db, "%s/mo_%s.db", b ? b : "/tmp", cname);
        char *got = decisions(db), *got_end = outcome(db);
        CHECK(got && strcmp(got, want) == 0);
        CHECK(got_end && strcmp(got_end, want_end) == 0);
        if (got && strcmp(got, want) != 0)
            fprintf(stderr, "Ctrl-C at %ld s, decisions:\n%s\nuninterrupted:\n%s\n", at, got, want);
        stopped += testdb_int(db, "SELECT count(*) FROM trials WHERE attempt > 1") > 0;
        free(got);
        free(got_end);
    }
    CHECK(stopped > 0); /* the stops came before the end: trials ran again */
    free(want);
    free(want_end);
}

TEST(asha_stopping_resume_after_ctrl_c_matches_uninterrupted)
{
    ctrl_c_matches_uninterrupted("stop", "{\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
                                         " \"reduction_factor\": 3}");
}

/* A trial promoted from its milestone and stopped before its promoted attempt reported
 * was paused again at the resume and promoted a second time, a 'promote' decision the
 * uninterrupted run makes once (Ctrl-C at 32 and 38 s here). */
TEST(asha_promotion_resume_after_ctrl_c_matches_uninterrupted)
{
    ctrl_c_matches_uninterrupted("promo",
                                 "{\"type\": \"asha\", \"variant\": \"promotion\", \"max_t\": 9,"
                                 " \"grace_period\": 1, \"reduction_factor\": 3}");
}

TEST(hyperband_resume_after_ctrl_c_matches_uninterrupted)
{
    ctrl_c_matches_uninterrupted(
        "hb", "{\"type\": \"hyperband\", \"max_t\": 9, \"reduction_factor\": 3}");
}

/* The real binary: ASHA over two objectives (loss, latency_ms) under a memory constraint,
 * one trial at a time; `tune run` killed with SIGKILL once a quarter, a half and three
 * quarters of the uninterrupted run's decisions are recorded, `tune run --resume` after each,
 * then to the end: the same decisions, word for word, and the same ends. */
TEST(tune_run_resume_after_kill_9_decides_as_uninterrupted)
{
    char ref[4096], dir[4096], sp[8192], trial[4200];
    fresh_dir(ref, sizeof ref, "kill9_ref");
    fresh_dir(dir, sizeof dir, "kill9");
    const char *b = getenv("TUNE_BINARY_DIR");
    snprintf(trial, sizeof trial, "%s/tests/progs/mo_trial", b ? b : ".");
    snprintf(sp, sizeof sp,
             "{\"name\": \"mok9\", \"metric\": [\"loss\", \"latency_ms\"], \"mode\": [\"min\","
             " \"min\"], \"constraints\": {\"mem_gb\": {\"<=\": 12}}, \"num_samples\": 14,"
             " \"max_concurrent\": 1, \"seed\": 5, \"stop_grace_s\": 1,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--width\", \"{width}\", \"--iters\","
             " \"9\", \"--sleep-ms\", \"15\"],"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
             " \"reduction_factor\": 3},"
             " \"space\": {\"lr\": {\"loguniform\": [0.0001, 1]}, \"width\": {\"choice\": [8, 16,"
             " 32, 64, 128]}}}",
             trial);
    space_file(ref, sp);
    space_file(dir, sp);
    const char *run[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    const char *resume[] = {"run", "space.json", "--resume", "--gpus", "none", "--quiet", NULL};
    struct out o = run_tune(ref, run);
    CHECK_EQ_INT(o.code, 0);
    if (o.code != 0) fprintf(stderr, "%s\n%s\n", o.out, o.err);
    out_free(&o);
    char ref_db[4200], db[4200];
    snprintf(ref_db, sizeof ref_db, "%s/tune.db", ref);
    snprintf(db, sizeof db, "%s/tune.db", dir);
    char *want = decisions(ref_db), *want_end = outcome(ref_db);
    REQUIRE(want && want_end);
    CHECK_CONTAINS(want, "by Pareto rank");
    CHECK_CONTAINS(want, "only the top");
    CHECK_CONTAINS(want, "(infeasible: violation");
    long long total = db_int(ref, "SELECT count(*) FROM decisions");
    REQUIRE(total >= 8);
    int kills = 0;
    for (int k = 1; k <= 3; k++) {
        pid_t pid = spawn_tune(dir, k == 1 ? run : resume, NULL);
        long long at = total * k / 4;
        long long v = e2e_wait_db(dir, "SELECT count(*) FROM decisions", at, 60);
        CHECK(v >= at);
        if (kill(pid, SIGKILL) == 0) kills++;
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL); /* it had not ended */
    }
    CHECK_EQ_INT(kills, 3);
    o = run_tune(dir, resume);
    CHECK_EQ_INT(o.code, 0);
    if (o.code != 0) fprintf(stderr, "%s\n%s\n", o.out, o.err);
    out_free(&o);
    char *got = decisions(db), *got_end = outcome(db);
    CHECK(got && strcmp(got, want) == 0);
    if (got && strcmp(got, want) != 0)
        fprintf(stderr, "killed and resumed:\n%s\nuninterrupted:\n%s\n", got, want);
    CHECK(got_end && strcmp(got_end, want_end) == 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE status = 'FINISHED'"), 1);
    free(got);
    free(got_end);
    free(want);
    free(want_end);
}

/* ---- hostile input at the edges ------------------------------------------------------------ */

/* dir/t.sh, a trial that prints `body` (a shell `case "$1"` over the trial's one parameter
 * i); the space's command runs it. */
static void trial_script(const char *dir, const char *body)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/t.sh", dir);
    write_exec(path, body);
}

/* `tune ARGS...` in dir; the caller frees. */
static struct out tune_in(const char *dir, const char *a0, const char *a1, const char *a2,
                          const char *a3, const char *a4)
{
    const char *args[] = {a0, a1, a2, a3, a4, NULL};
    return run_tune(dir, args);
}

/* The row of trial `name` in a `tune best --json` front or `tune trials --json` array; NULL
 * when it is not there. */
static const cJSON *row_named(const cJSON *rows, const char *name)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, rows)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) return r;
    }
    return NULL;
}

static double row_value(const cJSON *row, const char *metric)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(row, "values"), metric);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Objectives reported as a string, as null, as +-1e308 and as -0.0, and a constrained key
 * that only the first result carries: a string or null is no value (the trial has no front,
 * is left out of it, and nothing stops); 1e308 and -1e308 are numbers like any other (on the
 * front; the report's reference point stays finite: pareto_reference overflowed to +inf
 * there; the hypervolume itself still overflows, an area past DBL_MAX); -0.0 equals 0 (the two
 * share the front, tied by id); the key missing from the last result makes the trial infeasible,
 * named "missing". */
TEST(hostile_objective_values_are_read_as_documented)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "hostile_values");
    trial_script(dir,
                 "#!/bin/sh\n"
                 "case \"$1\" in\n"
                 "0) echo '{\"training_iteration\": 1, \"a\": 1, \"b\": 5, \"m\": 3}' ;;\n"
                 "1) echo '{\"training_iteration\": 1, \"a\": \"abc\", \"b\": 1, \"m\": 3}' ;;\n"
                 "2) echo '{\"training_iteration\": 1, \"a\": null, \"b\": 1, \"m\": 3}' ;;\n"
                 "3) echo '{\"training_iteration\": 1, \"a\": 1e308, \"b\": 0.5, \"m\": 3}' ;;\n"
                 "4) echo '{\"training_iteration\": 1, \"a\": -0.0, \"b\": 6, \"m\": 3}' ;;\n"
                 "5) echo '{\"training_iteration\": 1, \"a\": 0, \"b\": 6, \"m\": 3}' ;;\n"
                 "6) echo '{\"training_iteration\": 1, \"a\": -2, \"b\": -2, \"m\": 3}'\n"
                 "   echo '{\"training_iteration\": 2, \"a\": -2, \"b\": -2}' ;;\n"
                 "7) echo '{\"training_iteration\": 1, \"a\": -1e308, \"b\": 1e308, \"m\": 3}' ;;\n"
                 "esac\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"hv\", \"metric\": [\"a\", \"b\"], \"mode\": [\"min\", \"min\"],"
             " \"constraints\": {\"m\": {\"<=\": 4}}, \"max_concurrent\": 1,"
             " \"command\": [\"%s/t.sh\", \"{i}\"],"
             " \"space\": {\"i\": {\"grid_search\": [0, 1, 2, 3, 4, 5, 6, 7]}}}",
             dir);
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 8);
    struct out o = tune_in(dir, "best", "hv", "--json", NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    cJSON *best = cJSON_Parse(o.out);
    REQUIRE(best);
    CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(best, "trials")->valueint, 8);
    CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(best, "feasible")->valueint, 7);
    const cJSON *front = cJSON_GetObjectItemCaseSensitive(best, "front");
    /* ordered by a, then id: -1e308, -0.0 (trial 4) and 0 (trial 5) tied, 1, 1e308 */
    const char *want[] = {"trial_00007", "trial_00004", "trial_00005", "trial_00000",
                          "trial_00003"};
    CHECK_EQ_INT(cJSON_GetArraySize(front), 5);
    for (int i = 0; i < 5 && i < cJSON_GetArraySize(front); i++)
        CHECK_STR(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(front, i), "name")->valuestring,
            want[i]);
    CHECK(row_value(row_named(front, "trial_00003"), "a") == 1e308);
    CHECK(row_value(row_named(front, "trial_00007"), "a") == -1e308);
    CHECK(row_value(row_named(front, "trial_00007"), "b") == 1e308);
    CHECK(row_value(row_named(front, "trial_00004"), "a") == 0);
    CHECK(!row_named(front, "trial_00001") && !row_named(front, "trial_00002"));
    CHECK(!row_named(front, "trial_00006")); /* -2, -2 would dominate all: but infeasible */
    cJSON_Delete(best);
    out_free(&o);

    o = tune_in(dir, "trials", "hv", "--json", NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    cJSON *trials = cJSON_Parse(o.out);
    REQUIRE(trials);
    for (int i = 1; i <= 2; i++) { /* a string, null: no value, no front, but feasible */
        const cJSON *r = row_named(trials, i == 1 ? "trial_00001" : "trial_00002");
        REQUIRE(r);
        CHECK(isnan(row_value(r, "a")));
        CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r, "front")));
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, "violation");
        CHECK(cJSON_IsNumber(v) && v->valuedouble == 0);
    }
    const cJSON *r6 = row_named(trials, "trial_00006");
    REQUIRE(r6);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r6, "front")));
    const cJSON *inf6 = cJSON_GetObjectItemCaseSensitive(r6, "infeasible");
    CHECK(cJSON_IsString(inf6) && strstr(inf6->valuestring, "m missing"));
    cJSON_Delete(trials);
    out_free(&o);

    /* the report's hypervolume: a finite reference point (it was [null, 1.1e+308]) */
    o = tune_in(dir, "report", "hv", "-o", "r.html", NULL);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char path[4200];
    snprintf(path, sizeof path, "%s/r.html", dir);
    char *html = slurp(path);
    CHECK_CONTAINS(html, "\"hv\":{\"ref\":[");
    CHECK(!strstr(html, "\"ref\":[null") && !strstr(html, ",null],\"rule\""));
    free(html);
}

/* Every trial violates the constraint, under ASHA: each rung ranks them by violation (the
 * first at a rung goes on, the worst are stopped), every decision says "infeasible", and
 * `tune best` exits 1 naming the closest trial and what it violates, --json too (nothing on
 * stdout). */
TEST(every_trial_infeasible_under_asha)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "all_infeasible");
    /* m = 20 + i against m <= 4: violation 16 + i */
    trial_script(dir, "#!/bin/sh\n"
                      "for t in 1 2 3 4; do\n"
                      "  echo \"{\\\"training_iteration\\\": $t, \\\"a\\\": $((10 + $1 - t)),"
                      " \\\"b\\\": $t, \\\"m\\\": $((20 + $1))}\"\n"
                      "done\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"noneok\", \"metric\": [\"a\", \"b\"], \"mode\": [\"min\", \"max\"],"
             " \"constraints\": {\"m\": {\"<=\": 4}}, \"max_concurrent\": 1,"
             " \"command\": [\"%s/t.sh\", \"{i}\"],"
             " \"space\": {\"i\": {\"grid_search\": [5, 3, 8, 1, 6, 2]}},"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 4, \"grace_period\": 1,"
             " \"reduction_factor\": 2}}",
             dir);
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 6);
    CHECK(db_int(dir, "SELECT count(*) FROM trials WHERE early_stopped") > 0);
    CHECK(db_int(dir, "SELECT count(*) FROM decisions WHERE action IN ('continue', 'stop')") > 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions WHERE action IN ('continue',"
                             " 'stop') AND reason NOT LIKE '%by Pareto rank (infeasible:"
                             " violation %'"),
                 0);
    /* the first trial (violation 21) opens each rung; the third (violation 24) is the
     * worst of three at rung 0 and stops there */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions d JOIN trials t ON t.id ="
                             " d.trial_id WHERE t.trial_no = 0 AND d.action = 'continue' AND"
                             " d.reason LIKE '%1st of 1 by Pareto rank (infeasible: violation"
                             " 21)%'"),
                 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions d JOIN trials t ON t.id ="
                             " d.trial_id WHERE t.trial_no = 2 AND d.action = 'stop' AND"
                             " d.iteration = 1 AND d.reason LIKE '%3rd of 3 by Pareto rank%'"),
                 1);
    const char *words = "no trial of noneok meets the constraints (6 trials with a result, none"
                        " feasible): the closest is trial_00003 (total violation 17): m=21 (<= 4,"
                        " by 17)";
    struct out o = tune_in(dir, "best", "noneok", NULL, NULL, NULL);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, words);
    out_free(&o);
    o = tune_in(dir, "best", "noneok", "--json", NULL, NULL);
    CHECK_EQ_INT(o.code, 1);
    CHECK_STR(o.out, "");
    CHECK_CONTAINS(o.err, words);
    out_free(&o);
}

/* Every objective NaN or null in every result, under ASHA: each trial stops at its first
 * milestone in words that say why, and `tune best` exits 1 saying no trial has a value for
 * every objective. */
TEST(all_objectives_nan)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "all_nan");
    trial_script(dir, "#!/bin/sh\n"
                      "echo '{\"training_iteration\": 1, \"a\": NaN, \"b\": null}'\n"
                      "echo '{\"training_iteration\": 2, \"a\": NaN, \"b\": null}'\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"nans\", \"metric\": [\"a\", \"b\"], \"mode\": [\"min\", \"max\"],"
             " \"num_samples\": 3, \"seed\": 1, \"max_concurrent\": 1,"
             " \"command\": [\"%s/t.sh\", \"{i}\"], \"space\": {\"i\": {\"randint\": [0, 9]}},"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 4, \"grace_period\": 1}}",
             dir);
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    CHECK_EQ_INT(db_int(dir,
                        "SELECT count(*) FROM decisions WHERE action = 'stop' AND"
                        " iteration = 1 AND reason LIKE 'reported a NaN objective at rung 0%'"),
                 3);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions WHERE action = 'continue'"), 0);
    struct out o = tune_in(dir, "best", "nans", NULL, NULL, NULL);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "none with a value for every objective");
    out_free(&o);
    o = tune_in(dir, "best", "nans", "--json", NULL, NULL);
    CHECK_EQ_INT(o.code, 1);
    CHECK_STR(o.out, "");
    out_free(&o);
}

/* Eight objectives (the most) run under ASHA and `tune best --json` lists them all; nine are
 * refused before anything runs, by validate and run alike, with the position and the limit. */
TEST(eight_objectives_run_nine_are_refused)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "eight_nine");
    trial_script(dir,
                 "#!/bin/sh\n"
                 "echo \"{\\\"training_iteration\\\": 1, \\\"m1\\\": $1, \\\"m2\\\": $((10 -"
                 " $1)), \\\"m3\\\": 1, \\\"m4\\\": 2, \\\"m5\\\": 3, \\\"m6\\\": 4, \\\"m7\\\":"
                 " 5, \\\"m8\\\": $1, \\\"m9\\\": 1}\"\n");
    const char *fmt =
        "{\"name\": \"%s\", \"metric\": [\"m1\", \"m2\", \"m3\", \"m4\", \"m5\", \"m6\", \"m7\","
        " \"m8\"%s], \"mode\": [\"min\", \"min\", \"min\", \"min\", \"min\", \"min\", \"min\","
        " \"max\"%s], \"num_samples\": 4, \"seed\": 1, \"command\": [\"%s/t.sh\", \"{i}\"],"
        " \"space\": {\"i\": {\"randint\": [0, 9]}},"
        " \"scheduler\": {\"type\": \"asha\", \"max_t\": 1, \"grace_period\": 1}}";
    snprintf(sp, sizeof sp, fmt, "eight", "", "", dir);
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    struct out o = tune_in(dir, "best", "eight", "--json", NULL, NULL);
    CHECK_EQ_INT(o.code, 0);
    cJSON *best = cJSON_Parse(o.out);
    REQUIRE(best);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(best, "objectives")), 8);
    const cJSON *front = cJSON_GetObjectItemCaseSensitive(best, "front");
    CHECK(cJSON_GetArraySize(front) >= 1);
    CHECK(!isnan(row_value(cJSON_GetArrayItem(front, 0), "m8")));
    cJSON_Delete(best);
    out_free(&o);
    snprintf(sp, sizeof sp, fmt, "nine", ", \"m9\"", ", \"min\"", dir);
    space_file(dir, sp);
    o = tune_in(dir, "validate", "space.json", NULL, NULL, NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "space.json:1:");
    CHECK_CONTAINS(o.err, "\"metric\" lists 9 objectives; at most 8 are allowed");
    out_free(&o);
    o = tune_in(dir, "run", "space.json", "--gpus", "none", NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "\"metric\" lists 9 objectives; at most 8 are allowed");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE name = 'nine'"), 0);
}

/* `tune best` reads the objectives from the space.json the database stored, not from a
 * path: a copy of the database elsewhere, and the original moved away with its run's
 * space.json and results deleted, give the same answer, word for word. And two experiments
 * with different objectives and constraints in one database each answer with their own. */
TEST(copied_moved_and_shared_databases_answer_tune_best)
{
    char dir[4096], copy[4096], moved[4096], sp[8192], cmd[24576];
    fresh_dir(dir, sizeof dir, "db_where");
    fresh_dir(copy, sizeof copy, "db_copy");
    fresh_dir(moved, sizeof moved, "db_moved");
    trial_script(dir, "#!/bin/sh\n"
                      "echo \"{\\\"training_iteration\\\": 1, \\\"a\\\": $1, \\\"b\\\": $((10 -"
                      " $1)), \\\"c\\\": $(($1 % 4))}\"\n");
    snprintf(sp, sizeof sp,
             "{\"name\": \"one\", \"metric\": [\"a\", \"b\"], \"mode\": [\"min\", \"min\"],"
             " \"constraints\": {\"c\": {\"<=\": 2}}, \"num_samples\": 6, \"seed\": 7,"
             " \"command\": [\"%s/t.sh\", \"{i}\"], \"space\": {\"i\": {\"randint\": [0, 9]}}}",
             dir);
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    snprintf(sp, sizeof sp,
             "{\"name\": \"two\", \"metric\": [\"b\", \"c\"], \"mode\": [\"max\", \"min\"],"
             " \"constraints\": {\"a\": {\">\": 2}}, \"num_samples\": 6, \"seed\": 8,"
             " \"command\": [\"%s/t.sh\", \"{i}\"], \"space\": {\"i\": {\"randint\": [0, 9]}}}",
             dir);
    REQUIRE(run_ok(dir, sp, NULL) == 0);
    struct out o = tune_in(dir, "best", NULL, NULL, NULL, NULL);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "holds 2 experiments (one, two): say which one");
    out_free(&o);
    struct out one = tune_in(dir, "best", "one", "--json", NULL, NULL);
    struct out two = tune_in(dir, "best", "two", "--json", NULL, NULL);
    CHECK_EQ_INT(one.code, 0);
    CHECK_EQ_INT(two.code, 0);
    cJSON *j1 = cJSON_Parse(one.out), *j2 = cJSON_Parse(two.out);
    REQUIRE(j1 && j2);
    const cJSON *o1 = cJSON_GetObjectItemCaseSensitive(j1, "objectives");
    const cJSON *o2 = cJSON_GetObjectItemCaseSensitive(j2, "objectives");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(o1, 0), "metric")->valuestring,
              "a");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(o2, 0), "metric")->valuestring,
              "b");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(o2, 0), "mode")->valuestring,
              "max");
    CHECK_STR(cJSON_GetObjectItemCaseSensitive(
                  cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j2, "constraints"), 0), "key")
                  ->valuestring,
              "a");
    const cJSON *r;
    int n1 = 0, n2 = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j1, "front"))
    {
        n1++;
        CHECK(!isnan(row_value(r, "a")) && !isnan(row_value(r, "b")) && isnan(row_value(r, "c")));
        CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "last_result"),
                                               "c")
                  ->valuedouble <= 2);
    }
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j2, "front"))
    {
        n2++;
        CHECK(isnan(row_value(r, "a")) && !isnan(row_value(r, "b")) && !isnan(row_value(r, "c")));
        CHECK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "last_result"),
                                               "a")
                  ->valuedouble > 2);
    }
    CHECK(n1 >= 1 && n2 >= 1);
    cJSON_Delete(j1);
    cJSON_Delete(j2);

    /* a copy, asked from another folder */
    snprintf(cmd, sizeof cmd, "cp '%s/tune.db' '%s/copied.db'", dir, copy);
    REQUIRE(system(cmd) == 0);
    char db[4200];
    snprintf(db, sizeof db, "%s/copied.db", copy);
    o = tune_in(moved, "best", "one", "--json", "--db", db);
    CHECK_EQ_INT(o.code, 0);
    CHECK_STR(o.out, one.out);
    out_free(&o);
    /* the original moved, its space.json, trial script and results gone */
    snprintf(cmd, sizeof cmd,
             "mv '%s/tune.db' '%s/moved.db' && rm -rf '%s'/tune_results '%s'/*.json"
             " '%s'/t.sh",
             dir, moved, dir, dir, dir);
    REQUIRE(system(cmd) == 0);
    snprintf(db, sizeof db, "%s/moved.db", moved);
    o = tune_in(copy, "best", "two", "--json", "--db", db);
    CHECK_EQ_INT(o.code, 0);
    CHECK_STR(o.out, two.out);
    out_free(&o);
    o = tune_in(copy, "best", "one", "--json", "--db", db);
    CHECK_STR(o.out, one.out);
    out_free(&o);
    out_free(&one);
    out_free(&two);
}

TT_MAIN
