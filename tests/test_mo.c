/* test_mo: early stopping with several objectives, end to end (docs/multiobjective.md,
 * "Early stopping"): the event loop driven in-process through the scripted executor on a
 * virtual clock (tests/scripted.h), each trial reporting two objectives ("loss", "cost")
 * under a constraint, its decisions read back from the real store. The case the issue names:
 * a kill -9 in the middle of a turn, then a resume, rebuilds the rungs' points exactly, so
 * every later decision is the one an uninterrupted run with the same seed makes.
 * Then the same through the real tune binary: `tune run`, kill -9 at three moments, `tune
 * run --resume`, on tests/progs/mo_trial.
 * Not for: the rung rule on hand-made points (test_scheduler.c, mo_*) or the ranking itself
 * (test_pareto.c). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

TT_MAIN
