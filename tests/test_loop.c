/* Tests of the scheduler's event loop driven in-process, turn by turn, through a scripted
 * executor on a virtual clock: no processes, no sleeping. Each scripted trial reports a
 * result every `period` seconds and then exits, or fails, hangs, goes silent or ignores
 * SIGTERM, as its script says; the loop's decisions are read back from the real store.
 * Not for: the policies alone (test_scheduler.c) or real processes (test_cli.c). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "scheduler/sched.h"
#include "search/space.h"
#include "store/store.h"
#include "scripted.h"
#include "testdb.h"
#include "trial/trial.h"
#include "trial/trial_int.h"
#include "tinytest.h"

static int rig_open(struct rig *r, const char *name, const char *space_text,
                    const struct script *scripts, int fresh)
{
    return rig_start(r, "loop", name, space_text, scripts, fresh, &scripted_ops);
}

/* ---- the cases ------------------------------------------------------------------------ */
TEST(fifo_runs_every_trial_to_its_end_within_max_concurrent)
{
    static struct script s[MAX_T];
    for (int i = 0; i < 5; i++)
        s[i] = (struct script){.results = 4, .period = 1 + i * 0.1, .loss0 = 1 + i};
    struct rig r;
    REQUIRE(rig_open(&r, "fifo", SPACE("fifo", "\"num_samples\": 5, \"max_concurrent\": 2"), s,
                     1) == 0);
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    int turns = 0;
    CHECK_EQ_INT(drive(&r, L, 0, 0, &turns), 0);
    CHECK(turns < 200); /* event-driven: a turn per event, not per tick */
    sched_run_result_t res;
    sched_loop_result(L, &res);
    CHECK_EQ_INT(res.terminated, 5);
    CHECK_EQ_INT(res.errored, 0);
    CHECK_EQ_INT(res.best_trial, 0);                           /* lowest final loss: 1/4 */
    CHECK_EQ_INT(sched_loop_turn(L, 1.0, err, sizeof err), 0); /* ended stays ended */
    sched_loop_free(L);
    CHECK_EQ_INT(r.x.max_running, 2);
    CHECK_EQ_INT(r.x.nstarts, 5);
    CHECK_EQ_INT(r.x.released, 5);
    CHECK_EQ_INT(r.x.starts[2].no, 2); /* in trial order */
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM results"), 20);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 5);
    /* wall times come from the loop's clock: the first result of trial 0 at 1 s */
    CHECK_EQ_INT(q(&r, "SELECT CAST(round(min(wall_time) - 1.7e9) AS INT) FROM results"), 1);
    rig_close(&r);
}

TEST(a_failed_attempt_is_retried_up_to_max_failures)
{
    static struct script s[MAX_T];
    s[0] = (struct script){.results = 3, .period = 1, .exit_code = 3, .fail_once = 1, .loss0 = 1};
    s[1] = (struct script){.results = 2, .period = 1, .exit_code = 5, .loss0 = 1};
    struct rig r;
    REQUIRE(rig_open(&r, "retry", SPACE("retry", "\"num_samples\": 2, \"max_failures\": 1"), s,
                     1) == 0);
    CHECK_EQ_INT(run_to_end(&r, 0, 0, NULL), 0);
    CHECK_EQ_INT(r.x.nstarts, 4); /* each trial twice */
    CHECK_EQ_INT(q(&r, "SELECT attempt FROM trials WHERE trial_no = 0"), 2);
    CHECK_EQ_INT(q(&r, "SELECT status = 'TERMINATED' FROM trials WHERE trial_no = 0"), 1);
    CHECK_EQ_INT(q(&r, "SELECT status = 'ERROR' FROM trials WHERE trial_no = 1"), 1);
    CHECK_EQ_INT(q(&r, "SELECT exit_code FROM trials WHERE trial_no = 1"), 5);
    CHECK_EQ_INT(q(&r, "SELECT error LIKE 'exited with code 5%' FROM trials WHERE trial_no = 1"),
                 1);
    rig_close(&r);
}

TEST(a_silent_trial_times_out_on_the_loops_clock)
{
    static struct script s[MAX_T];
    s[0] = (struct script){.results = 10, .period = 1, .silent_after = 2, .loss0 = 1};
    struct rig r;
    REQUIRE(rig_open(&r, "silent", SPACE("silent", "\"result_timeout_s\": 30"), s, 1) == 0);
    CHECK_EQ_INT(run_to_end(&r, 0, 0, NULL), 0);
    /* stopped when 30 virtual seconds passed after its last result at 2 s, not before */
    CHECK(r.clock.t >= 32 && r.clock.t < 33);
    CHECK_EQ_INT(q(&r, "SELECT status = 'ERROR' FROM trials"), 1);
    CHECK_EQ_INT(q(&r, "SELECT error LIKE 'reported nothing for result_timeout_s (30 s)%' FROM "
                       "trials"),
                 1);
    rig_close(&r);
}

TEST(a_trial_past_its_time_limit_is_an_error)
{
    static struct script s[MAX_T];
    s[0] = (struct script){.results = 100, .period = 1, .loss0 = 1};
    struct rig r;
    REQUIRE(rig_open(&r, "limit", SPACE("limit", "\"trial_time_limit_s\": 10.5"), s, 1) == 0);
    CHECK_EQ_INT(run_to_end(&r, 0, 0, NULL), 0);
    CHECK(r.clock.t >= 10.5 && r.clock.t < 12);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM results"), 10);
    CHECK_EQ_INT(q(&r, "SELECT error LIKE 'ran past trial_time_limit_s (10.5 s)%' FROM trials"), 1);
    rig_close(&r);
}

TEST(the_experiments_time_budget_ends_it_on_the_loops_clock)
{
    static struct script s[MAX_T];
    for (int i = 0; i < 6; i++)
        s[i] = (struct script){.results = 10, .period = 1, .loss0 = 1 + i};
    struct rig r;
    REQUIRE(rig_open(&r, "xbudget",
                     SPACE("xbudget", "\"num_samples\": 6, \"max_concurrent\": 2, "
                                      "\"time_budget_s\": 15, \"stop_grace_s\": 1"),
                     s, 1) == 0);
    sched_run_result_t res;
    CHECK_EQ_INT(run_to_end(&r, 0, 0, &res), 0);
    /* trials 0, 1 ran 10 s; 2, 3 were cut at 15 s; 4, 5 never started */
    CHECK_EQ_INT(res.ended_by, SCHED_END_BUDGET);
    CHECK(r.clock.t >= 15 && r.clock.t < 16);
    CHECK_EQ_INT(r.x.nstarts, 4);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED' AND error IS "
                       "NULL"),
                 4);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'PENDING'"), 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE reason LIKE 'experiment stopped: "
                       "the experiment''s time budget ended%'"),
                 2);
    rig_close(&r);
}

/* The first trials start before the rest of the rows exist: the first turn records the
 * row of each trial it launches, then at most a step of the others per turn, until the
 * store lists every trial; sched_loop_create_rows records them all at once. */
TEST(the_first_trials_launch_before_every_row_is_recorded)
{
    static struct script s[MAX_T];
    for (int i = 0; i < 200; i++)
        s[i] = (struct script){.results = 2, .period = 1, .loss0 = 1 + i};
    struct rig r;
    REQUIRE(rig_open(&r, "rows", SPACE("rows", "\"num_samples\": 200, \"max_concurrent\": 2"), s,
                     1) == 0);
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials"), 0);
    REQUIRE(sched_loop_turn(L, 1.0, err, sizeof err) == 1);
    CHECK_EQ_INT(r.x.nstarts, 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'RUNNING' AND trial_no < 2"), 2);
    long long first = q(&r, "SELECT count(*) FROM trials");
    CHECK(first > 2 && first < 200);
    CHECK_EQ_INT(q(&r, "SELECT max(trial_no) + 1 FROM trials"), first); /* in trial order */
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 200);
    sched_loop_free(L);
    rig_close(&r);

    REQUIRE(rig_open(&r, "rows2", SPACE("rows2", "\"num_samples\": 200, \"max_concurrent\": 2"), s,
                     1) == 0);
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(sched_loop_create_rows(L, err, sizeof err), 0);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'PENDING'"), 200);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 200);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials"), 200);
    sched_loop_free(L);
    rig_close(&r);
}

/* Starts held behind running trials (sched_exec_ops.cancel): once a result has come in,
 * with every slice taken, the next pending trial waits in the executor behind a running
 * trial that is ending (stopped by ASHA, or at max_t and given its grace) and starts in
 * its slice the moment it ends, without a turn of the loop in between. On the scripted
 * executor every trial runs, never more than max_concurrent at once, each held one from
 * its predecessor's end, and trials that run on have nothing held behind them. */
TEST(a_held_start_takes_the_slice_of_the_trial_it_follows)
{
    static struct script s[MAX_T];
    for (int i = 0; i < 12; i++)
        s[i] = (struct script){.results = 3 + i % 4, .period = 1 + i * 0.1, .loss0 = 1 + i};
    for (int hold = 0; hold < 2; hold++) {
        struct rig r;
        char name[32];
        snprintf(name, sizeof name, "hold%d", hold);
        REQUIRE(rig_open(&r, name,
                         SPACE("hold", "\"num_samples\": 12, \"max_concurrent\": 3, "
                                       "\"stop_grace_s\": 0.5, \"scheduler\": {\"type\": "
                                       "\"asha\", \"max_t\": 4, \"grace_period\": 1, "
                                       "\"reduction_factor\": 2}"),
                         s, 1) == 0);
        r.x.can_hold = hold;
        CHECK_EQ_INT(run_to_end(&r, 0, 0, NULL), 0);
        CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 12);
        CHECK_EQ_INT(r.x.nstarts, 12);
        CHECK(r.x.max_running <= 3);
        CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE started_at IS NULL"), 0);
        if (hold) {
            CHECK(r.x.holds >= 4);
            /* each held start began as the trial before it in that slice ended */
            int held_at_an_end = 0;
            for (int i = 3; i < 12; i++)
                for (int j = 0; j < i; j++)
                    held_at_an_end += r.x.t[j].ended == r.x.t[i].started;
            CHECK(held_at_an_end >= r.x.holds);
        } else {
            CHECK_EQ_INT(r.x.holds, 0);
        }
        rig_close(&r);
    }
}

/* A held start is taken back when the experiment stops (here its time budget): the trial
 * never started and stays PENDING. And when a slice is free with nothing new left for it,
 * a held trial takes it instead of waiting for the trial it follows. */
TEST(held_starts_are_taken_back_when_the_run_stops_or_a_slice_is_free)
{
    /* Each trial reaches max_t (5) at 5 s, is given a second's grace, is stopped and ends
     * at 6.01 s: 0 and 1 from 0 s, 2 and 3 (held from 5 s) from 6.01 s, 4 and 5 from
     * 12.02 s; 6 and 7 are held from 17.02 s and taken back at the budget, 17.5 s. */
    static struct script s[MAX_T];
    for (int i = 0; i < 8; i++)
        s[i] = (struct script){.results = 10, .period = 1, .loss0 = 1 + i};
    struct rig r;
    REQUIRE(rig_open(&r, "xhold",
                     SPACE("xhold", "\"num_samples\": 8, \"max_concurrent\": 2, "
                                    "\"time_budget_s\": 17.5, \"stop_grace_s\": 1, "
                                    "\"scheduler\": {\"type\": \"asha\", \"max_t\": 5, "
                                    "\"grace_period\": 5, \"reduction_factor\": 2}"),
                     s, 1) == 0);
    r.x.can_hold = 1;
    double t0 = r.clock.t;
    sched_run_result_t res;
    CHECK_EQ_INT(run_to_end(&r, 0, 0, &res), 0);
    CHECK_EQ_INT(res.ended_by, SCHED_END_BUDGET);
    CHECK_EQ_INT(r.x.nstarts, 6);
    CHECK_EQ_INT(r.x.holds, 6);
    CHECK_EQ_INT(r.x.taken_back, 2);
    CHECK(fabs(r.x.t[2].started - t0 - 6.01) < 1e-6);
    CHECK(fabs(r.x.t[4].started - t0 - 12.02) < 1e-6);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'PENDING' AND started_at IS "
                       "NULL AND trial_no >= 6"),
                 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 6);
    rig_close(&r);

    /* Trial 0 reaches max_t (2) at 2 s and then says nothing until it is stopped after its
     * 10 s grace; trial 2 is held behind it. Trial 1 exits at 3 s, and trial 2 takes its
     * slice then, not at 0's end (12 s). */
    static struct script s2[MAX_T];
    s2[0] = (struct script){.results = 2, .period = 1, .silent_after = 2, .loss0 = 1};
    s2[1] = (struct script){.results = 1, .period = 1.5, .loss0 = 2};
    s2[2] = (struct script){.results = 2, .period = 1, .loss0 = 3};
    REQUIRE(rig_open(&r, "xfree",
                     SPACE("xfree", "\"num_samples\": 3, \"max_concurrent\": 2, "
                                    "\"stop_grace_s\": 10, \"scheduler\": {\"type\": \"asha\", "
                                    "\"max_t\": 2, \"grace_period\": 2, \"reduction_factor\": 2}"),
                     s2, 1) == 0);
    r.x.can_hold = 1;
    CHECK_EQ_INT(run_to_end(&r, 0, 0, NULL), 0);
    CHECK_EQ_INT(r.x.holds, 1);
    CHECK_EQ_INT(r.x.taken_back, 1);
    CHECK(fabs(r.x.t[2].started - r.x.t[1].ended) < 1e-9);
    CHECK(fabs(r.x.t[1].ended - r.x.t[1].started - 3) < 1e-9);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 3);
    rig_close(&r);
}

TEST(asha_stops_trials_and_one_that_ignores_sigterm_is_killed_after_the_grace)
{
    static struct script s[MAX_T];
    /* trial 0 is good; trials 1-3 are worse at rung 1 and are stopped there; trial 2
     * ignores SIGTERM and needs SIGKILL after stop_grace_s */
    s[0] = (struct script){.results = 9, .period = 1, .loss0 = 1};
    for (int i = 1; i < 4; i++)
        s[i] = (struct script){.results = 9, .period = 1.5, .loss0 = 2 + i};
    s[2].ignore_term = 1;
    struct rig r;
    REQUIRE(rig_open(&r, "asha",
                     SPACE("asha", "\"num_samples\": 4, \"stop_grace_s\": 7, \"scheduler\": "
                                   "{\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1, "
                                   "\"reduction_factor\": 3}"),
                     s, 1) == 0);
    sched_run_result_t res;
    CHECK_EQ_INT(run_to_end(&r, 0, 0, &res), 0);
    CHECK_EQ_INT(res.early_stopped, 3);
    CHECK_EQ_INT(res.terminated, 4);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'stop'"), 3);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'complete'"), 1);
    /* The reasons, worded as they always were (result.c words them without printf): one
     * of each kind, and every rung decision as printf would have written it. */
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE reason = "
                       "'first result at rung 0 (milestone 1): no cutoff yet'"),
                 1);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE reason = "
                       "'worse than rung 0 cutoff at milestone 1'"),
                 3);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE reason = "
                       "'first result at rung 1 (milestone 3): no cutoff yet'"),
                 1);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE reason = 'reached max_t "
                       "(training_iteration >= 9)'"),
                 1);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE rung IS NOT NULL AND action <> "
                       "'complete' AND reason IS NOT CASE WHEN cutoff IS NULL THEN "
                       "printf('first result at rung %d (milestone %g): no cutoff yet', rung, "
                       "milestone) WHEN action = 'stop' THEN printf('worse than rung %d cutoff "
                       "at milestone %g', rung, milestone) ELSE printf('within rung %d cutoff at "
                       "milestone %g: promoted', rung, milestone) END"),
                 0);
    /* trial 2 ended by SIGKILL, 7 s after its stop at 1.5 s */
    CHECK_EQ_INT(q(&r, "SELECT exit_signal FROM trials WHERE trial_no = 2"), SIGKILL);
    CHECK_EQ_INT(q(&r, "SELECT exit_signal FROM trials WHERE trial_no = 1"), SIGTERM);
    CHECK_EQ_INT(q(&r, "SELECT CAST(round((ended_at - 1.7e9) * 10) AS INT) FROM trials WHERE "
                       "trial_no = 2"),
                 85);
    rig_close(&r);
}

TEST(ctrl_c_pauses_running_trials_and_resume_finishes_the_experiment)
{
    static struct script s[MAX_T];
    for (int i = 0; i < 4; i++)
        s[i] = (struct script){.results = 5, .period = 1, .loss0 = 1 + i};
    const char *text = SPACE("resume", "\"num_samples\": 4, \"max_concurrent\": 2");
    struct rig r;
    REQUIRE(rig_open(&r, "resume", text, s, 1) == 0);
    sched_run_result_t res;
    CHECK_EQ_INT(run_to_end(&r, 2.5, 0, &res), 0);
    CHECK_EQ_INT(res.interrupted, 1);
    CHECK_EQ_INT(res.signal, SIGINT);
    CHECK_EQ_INT(res.paused, 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'PENDING'"), 2);
    /* the turn that passed 2.5 s delivered trial 0's result at 3 s; trial 1's, at the
     * same moment, came after Ctrl-C and is recorded too: a paused trial loses nothing */
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM results"), 6);
    rig_close(&r);

    /* resume: the paused trials start again as attempt 2, the pending ones run, all end */
    REQUIRE(rig_open(&r, "resume", text, s, 0) == 0);
    CHECK_EQ_INT(run_to_end(&r, 0, 0, &res), 0);
    CHECK_EQ_INT(res.interrupted, 0);
    CHECK_EQ_INT(res.terminated, 4);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE attempt = 2"), 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM results_current"), 20);
    rig_close(&r);
}

TEST(a_second_ctrl_c_kills_at_once)
{
    static struct script s[MAX_T];
    s[0] = (struct script){.results = 50, .period = 1, .ignore_term = 1, .loss0 = 1};
    struct rig r;
    REQUIRE(rig_open(&r, "hard", SPACE("hard", "\"stop_grace_s\": 100"), s, 1) == 0);
    CHECK_EQ_INT(run_to_end(&r, 3, 4, NULL), 0);
    CHECK(r.clock.t < 5); /* not after the 100 s grace */
    CHECK_EQ_INT(q(&r, "SELECT status = 'PAUSED' FROM trials"), 1);
    CHECK_EQ_INT(q(&r, "SELECT exit_signal FROM trials"), SIGKILL);
    rig_close(&r);
}

TEST(lines_fed_directly_take_the_same_path)
{
    static struct script s[MAX_T];
    s[0] = (struct script){.results = 0, .period = 1000, .loss0 = 1};
    struct rig r;
    REQUIRE(rig_open(&r, "direct", SPACE("direct", "\"result_timeout_s\": 0"), s, 1) == 0);
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    REQUIRE(sched_loop_turn(L, 0.5, err, sizeof err) == 1); /* launches trial 0 */
    const char *good = "{\"training_iteration\": 1, \"loss\": 0.5}";
    const char *bad = "{\"training_iteration\": 2, \"loss\": ";
    sched_loop_line(L, 0, good, strlen(good), 0);
    sched_loop_line(L, 0, bad, strlen(bad), 0);
    sched_loop_line(L, 0, "plain log line", 14, 0);
    sched_loop_line(L, 7, good, strlen(good), 0); /* not running: ignored */
    sched_loop_stop(L, SIGTERM);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_loop_free(L);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM results"), 1);
    rig_close(&r);
}

/* The final snapshot's line counts. */
static void on_report_counts(void *ud, const sched_snapshot_t *s, int final)
{
    uint64_t *c = ud;
    if (!final) return;
    c[0] = s->ignored;
    c[1] = s->bad_lines;
}

/* Lines a trial prints after its scheduler's decision to stop it are logged, not recorded,
 * and not read: those that open like a result are counted (the table's "after stop"), a
 * malformed one among them too, since it is not a result lost (bad_lines counts those). */
TEST(lines_after_the_stop_decision_are_counted_not_recorded)
{
    static struct script s[MAX_T];
    s[0] = (struct script){.results = 0, .period = 1000, .loss0 = 1};
    struct rig r;
    REQUIRE(rig_open(&r, "after_stop",
                     SPACE("after_stop", "\"result_timeout_s\": 0, "
                                         "\"stop\": {\"training_iteration\": 1}"),
                     s, 1) == 0);
    uint64_t counts[2] = {99, 99};
    r.o.report = on_report_counts;
    r.o.report_ud = counts;
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    REQUIRE(sched_loop_turn(L, 0.5, err, sizeof err) == 1);           /* launches trial 0 */
    const char *first = "{\"training_iteration\": 1, \"loss\": 0.5}"; /* stops it */
    const char *after = "  {\"training_iteration\": 2, \"loss\": 0.25}";
    const char *bad = "{\"training_iteration\": 3, \"loss\": ";
    sched_loop_line(L, 0, first, strlen(first), 0);
    sched_loop_line(L, 0, after, strlen(after), 0);
    sched_loop_line(L, 0, bad, strlen(bad), 0);
    sched_loop_line(L, 0, "plain log line", 14, 0);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_loop_free(L);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM results"), 1);
    CHECK_EQ_INT(q(&r, "SELECT status = 'TERMINATED' FROM trials"), 1);
    CHECK_EQ_INT(counts[0], 2);
    CHECK_EQ_INT(counts[1], 0);
    rig_close(&r);
}

/* A turn's lines go into the turn's one transaction (committed when the turn ends), not a
 * transaction each: another reader sees none of them while the executor is still waiting,
 * and every one of them once the turn is over. */
TEST(a_turns_results_are_committed_together_at_its_end)
{
    static struct script s[MAX_T];
    s[0] = (struct script){.results = 3, .period = 1, .loss0 = 1};
    struct rig r;
    REQUIRE(rig_open(&r, "turn_txn", SPACE("turn_txn", "\"num_samples\": 1"), s, 1) == 0);
    r.x.peek_db = r.db;
    r.x.seen_extra = -1;
    CHECK_EQ_INT(run_to_end(&r, 0, 0, NULL), 0);
    CHECK_EQ_INT(r.x.seen_extra, 0); /* never the line just delivered */
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM results"), 3);
    rig_close(&r);
}

/* What the report callback saw: the last snapshot's trials, and whether any snapshot
 * broke the table's order or its bound. */
struct seen {
    size_t ntrials, total, running_first_bad, over_bound, bound;
    int64_t no[16];
    double lr[16], metric[16];
    int final;
};

static void on_report(void *ud, const sched_snapshot_t *s, int final)
{
    struct seen *w = ud;
    if (s->ntrials > w->bound) w->over_bound++;
    /* every running trial is handed out before any finished one */
    size_t running = 0;
    for (size_t i = 0; i < s->ntrials; i++)
        running += s->trials[i].status == SCHED_TRIAL_RUNNING;
    if (running < s->counts[SCHED_TRIAL_RUNNING] && running < s->ntrials) w->running_first_bad++;
    w->ntrials = s->ntrials;
    w->total = s->total_trials;
    w->final = final;
    for (size_t i = 0; i < s->ntrials && i < 16; i++) {
        w->no[i] = s->trials[i].trial_no;
        const cJSON *lr =
            s->trials[i].config ? cJSON_GetObjectItem(s->trials[i].config, "lr") : NULL;
        w->lr[i] = lr ? lr->valuedouble : NAN;
        w->metric[i] = s->trials[i].last_metric;
    }
}

/* With report_trials, a snapshot hands out only the first trials in the live table's order
 * (so that a report of a million trials costs no memory per trial): running ones first,
 * then the best finished, each with its configuration, which a finished trial of random
 * search no longer holds and is sampled again for it. */
TEST(a_report_hands_out_only_the_first_report_trials_in_the_tables_order)
{
    static struct script s[MAX_T];
    /* finished order by last loss (loss0 / 2): 7, 2, 9, 4, ... */
    const double loss0[12] = {9, 8, 1.5, 7, 3, 6, 5, 1, 11, 2, 10, 12};
    for (int i = 0; i < 12; i++)
        s[i] = (struct script){.results = 2, .period = 1 + i * 0.01, .loss0 = loss0[i]};
    struct rig r;
    REQUIRE(rig_open(&r, "report_trials",
                     SPACE("report_trials", "\"num_samples\": 12, \"max_concurrent\": 3"), s,
                     1) == 0);
    struct seen w = {.bound = 4};
    r.o.report = on_report;
    r.o.report_ud = &w;
    r.o.report_trials = 4;
    CHECK_EQ_INT(run_to_end(&r, 0, 0, NULL), 0);
    CHECK_EQ_INT(w.final, 1);
    CHECK_EQ_INT(w.over_bound, 0);
    CHECK_EQ_INT(w.running_first_bad, 0);
    CHECK_EQ_INT(w.ntrials, 4);
    CHECK_EQ_INT(w.total, 12);
    /* the four best, handed out in trial order */
    const int64_t best[4] = {2, 4, 7, 9};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(w.no[i], best[i]);
        CHECK(fabs(w.metric[i] - loss0[best[i]] / 2) < 1e-12);
        cJSON *c = NULL;
        char err[256];
        REQUIRE(space_sample(r.sp, (size_t)best[i], &c, err, sizeof err) == 0);
        CHECK(w.lr[i] == cJSON_GetObjectItem(c, "lr")->valuedouble);
        cJSON_Delete(c);
    }
    rig_close(&r);
}

/* With report_trials the loop forgets finished trials the table cannot show (their
 * records, in chunks of 256, and ASHA's state of each) and announces trials to ASHA at
 * their launch: none of that may change a decision or the outcome. 600 trials, so that
 * whole chunks are freed while later ones run. */
static long long decisions_digest(struct rig *r)
{
    return q(r, "SELECT count(*) * 1000003 + sum(d.id * (t.trial_no * 131 + d.iteration) * "
                "(CASE d.action WHEN 'stop' THEN 7 WHEN 'complete' THEN 11 ELSE 13 END)) "
                "FROM decisions d JOIN trials t ON t.id = d.trial_id");
}

TEST(forgetting_finished_trials_changes_no_decision_and_no_outcome)
{
    static struct script s[MAX_T];
    uint64_t z = 7;
    for (int i = 0; i < 600; i++) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        s[i] = (struct script){.results = 9,
                               .period = 1 + (double)(z >> 40 & 63) / 64,
                               .loss0 = 1 + (double)(z >> 20 & 1023) / 128};
    }
    const char *extra = "\"num_samples\": 600, \"max_concurrent\": 12, \"seed\": 3, "
                        "\"scheduler\": {\"type\": \"asha\", \"max_t\": 9, "
                        "\"grace_period\": 1, \"reduction_factor\": 3, \"brackets\": 2}";
    char sp[1024];
    long long digest[2], results[2], top5 = 0;
    sched_run_result_t res[2];
    struct seen w[2] = {{.bound = 600}, {.bound = 5}};
    for (int k = 0; k < 2; k++) {
        struct rig r;
        memset(&r, 0, sizeof r); /* both runs from virtual time 0 */
        snprintf(sp, sizeof sp, SPACE("%s", "%s"), k ? "forget_b" : "forget_a", extra);
        REQUIRE(rig_open(&r, k ? "forget_b" : "forget_a", sp, s, 1) == 0);
        r.o.report = on_report;
        r.o.report_ud = &w[k];
        r.o.report_trials = k ? 5 : 0;
        CHECK_EQ_INT(run_to_end(&r, 0, 0, &res[k]), 0);
        digest[k] = decisions_digest(&r);
        results[k] = q(&r, "SELECT count(*) FROM results");
        /* the five best by last result (ties: lower trial number), as a digest */
        top5 = q(&r, "SELECT sum(no * (no + 1)) FROM (SELECT t.trial_no AS no FROM trials t "
                     "JOIN results r ON r.id = (SELECT max(id) FROM results WHERE trial_id = "
                     "t.id) ORDER BY r.metric, t.trial_no LIMIT 5)");
        rig_close(&r);
    }
    CHECK(digest[0] == digest[1]);
    CHECK(results[0] == results[1]);
    CHECK(results[0] > 600);
    CHECK_EQ_INT(res[1].terminated, 600);
    CHECK_EQ_INT(res[1].terminated, res[0].terminated);
    CHECK_EQ_INT(res[1].early_stopped, res[0].early_stopped);
    CHECK(res[0].early_stopped > 300);
    CHECK_EQ_INT(res[1].best_trial, res[0].best_trial);
    CHECK(res[1].best_metric == res[0].best_metric);
    /* the forgetting run's last snapshot: the 5 best of all 600, as the full one has them */
    CHECK_EQ_INT(w[1].ntrials, 5);
    CHECK_EQ_INT(w[1].total, 600);
    CHECK_EQ_INT(w[1].over_bound, 0);
    long long got = 0;
    for (int i = 0; i < 5; i++)
        got += (long long)(w[1].no[i] * (w[1].no[i] + 1));
    CHECK(got == top5);
}

static int first_value(void *ud, int ncol, const char *const *names, const char *const *values,
                       const int *types)
{
    (void)names;
    (void)types;
    if (ncol > 0 && values[0]) snprintf(ud, 64, "%s", values[0]);
    return 1;
}

/* The store a simulation writes to gets a bigger page cache (store_set_cache); a real run
 * keeps SQLite's default, so its memory stays bounded. */
TEST(a_simulations_store_can_raise_its_page_cache)
{
    const char *b = getenv("TUNE_BINARY_DIR");
    char db[4200], err[512], v[64] = "";
    snprintf(db, sizeof db, "%s/loop_cache.db", b ? b : "/tmp");
    unlink(db);
    store_t *st = NULL;
    REQUIRE(store_open(db, 0, &st, err, sizeof err) == 0);
    REQUIRE(store_query(st, "PRAGMA cache_size", NULL, 0, first_value, v, err, sizeof err) == 0);
    CHECK_STR(v, "-2000"); /* SQLite's default: 2 MiB */
    CHECK_EQ_INT(store_set_cache(st, 64, err, sizeof err), 0);
    REQUIRE(store_query(st, "PRAGMA cache_size", NULL, 0, first_value, v, err, sizeof err) == 0);
    CHECK_STR(v, "-65536");
    CHECK(store_set_cache(st, 0, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "a page cache of 0 MiB: give 1 to 65536");
    store_close(st);
}

/* The real executor's wait reads the wake pipe when it wakes, before it looks for ended
 * trials (sched.h). When sched_run read the pipe after the turn instead, a SIGCHLD that
 * came during the turn was consumed unseen and an ended trial waited for the next
 * second's timeout (one run of bench/tuner/run.sh in three, at its end). */
static void no_line(void *ud, int64_t no, const char *line, size_t len, int truncated)
{
    (void)ud, (void)no, (void)line, (void)len, (void)truncated;
}

TEST(the_process_executors_wait_drains_the_wake_pipe_when_it_wakes)
{
    trial_exec_t *tx = NULL;
    sched_exec_t *sx = NULL;
    char err[256];
    REQUIRE(trial_exec_local_new(&tx, err, sizeof err) == 0);
    REQUIRE(trial_sched_exec_new(tx, NULL, &sx, err, sizeof err) == 0);
    int p[2];
    REQUIRE(pipe2(p, O_NONBLOCK | O_CLOEXEC) == 0);
    REQUIRE(write(p[1], "\x11\x11", 2) == 2); /* two SIGCHLDs' bytes */
    sched_events_t ev = {0};
    ev.line = no_line;
    CHECK(sx->ops->wait(sx->self, 5.0, p[0], &ev, NULL, err, sizeof err) >= 0);
    char b;
    CHECK_EQ_INT((int)read(p[0], &b, 1), -1); /* empty: the next signal's byte will wake */
    close(p[0]);
    close(p[1]);
    sched_exec_free(sx);
    trial_exec_free(tx);
}

/* The process executor reports an end before it reads the other trials' output: the slot
 * is free, and the loop launches into it as soon as the wait returns, then takes the
 * output in with its next wait. Trial 1 has a line waiting and trial 0 has ended when the
 * first wait looks: it reports only the end, and the next wait the line. The case waits
 * for both to be true rather than sleeping (a busy machine can outlast any sleep): trial 1
 * touches a file once its line is written, and the spawner's answers (one per start and
 * one per end, trial/trial_int.h) wait in the executor's pipe, unread until the first wait:
 * three of them mean trial 0's end has been told. */
static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct ends_seen {
    int lines[2], ended[2];
    int order; /* 1: an end came before any line */
};

static void seen_line(void *ud, int64_t no, const char *line, size_t len, int truncated)
{
    struct ends_seen *s = ud;
    (void)line, (void)len, (void)truncated;
    s->lines[no]++;
}

static void seen_ended(void *ud, int64_t no, const sched_exit_t *ex)
{
    struct ends_seen *s = ud;
    (void)ex;
    if (!s->lines[0] && !s->lines[1]) s->order = 1;
    s->ended[no]++;
}

TEST(the_process_executor_reports_an_end_before_other_trials_output)
{
    const char *text = "{\"name\": \"ends\", \"metric\": \"loss\", \"mode\": \"min\", "
                       "\"command\": [\"sh\", \"-c\", \"{script}\"], "
                       "\"space\": {\"script\": {\"choice\": [\"exit 0\"]}}}";
    char err[512], dir[2][4096];
    space_t *sp = NULL;
    trial_exec_t *tx = NULL;
    sched_exec_t *sx = NULL;
    REQUIRE(space_parse(text, strlen(text), "space.json", &sp, err, sizeof err) == 0);
    REQUIRE(trial_exec_local_new(&tx, err, sizeof err) == 0);
    REQUIRE(trial_sched_exec_new(tx, sp, &sx, err, sizeof err) == 0);
    const char *scripts[2] = {"exit 0",
                              "echo '{\"loss\": 1}'; : > \"$TUNE_TRIAL_DIR/said\"; exec sleep 30"};
    const char *b = getenv("TUNE_BINARY_DIR");
    for (int i = 1; i >= 0; i--) { /* trial 1 first: its line is waiting when 0 ends */
        snprintf(dir[i], sizeof dir[i], "%s/loop_ends_%d", b ? b : "/tmp", i);
        REQUIRE(trial_mkdirs(dir[i]) == 0);
        char stale[4200]; /* a file the script touches, left by an earlier run */
        snprintf(stale, sizeof stale, "%s/said", dir[i]);
        unlink(stale);
        cJSON *cfg = cJSON_CreateObject();
        cJSON_AddStringToObject(cfg, "script", scripts[i]);
        sched_start_t st = {.experiment = "ends",
                            .name = i ? "trial_00001" : "trial_00000",
                            .trial_no = i,
                            .attempt = 1,
                            .config = cfg,
                            .dir = dir[i],
                            .devices = "",
                            .cpus = 1};
        sched_started_t out;
        REQUIRE(sx->ops->start(sx->self, &st, &out, err, sizeof err) == 0);
        cJSON_Delete(cfg);
    }
    int xfd = trial_exec_fd(tx);
    if (xfd < 0) SKIP("no spawner (TUNE_SPAWNER=0): its answers are what this case waits on");
    char said[4200];
    snprintf(said, sizeof said, "%s/said", dir[1]);
    int answers = 0, told = 0;
    for (double end = mono_s() + 60; !told && mono_s() < end; usleep(5000)) {
        if (ioctl(xfd, FIONREAD, &answers) != 0) answers = 0;
        told = access(said, F_OK) == 0 && answers >= 3 * (int)sizeof(struct trial__spawn_rep);
    }
    REQUIRE(told); /* trial 1's line is in its pipe, and trial 0's end in the executor's */
    struct ends_seen s = {{0, 0}, {0, 0}, 0};
    sched_events_t ev = {0};
    ev.line = seen_line;
    ev.ended = seen_ended;
    for (int k = 0; k < 50 && !s.ended[0]; k++)
        CHECK(sx->ops->wait(sx->self, 0.1, -1, &ev, &s, err, sizeof err) >= 0);
    CHECK_EQ_INT(s.ended[0], 1);
    CHECK_EQ_INT(s.order, 1);
    CHECK_EQ_INT(s.lines[1], 0);
    sx->ops->release(sx->self, 0);
    CHECK(sx->ops->wait(sx->self, 1.0, -1, &ev, &s, err, sizeof err) >= 0);
    CHECK_EQ_INT(s.lines[1], 1);
    CHECK_EQ_INT(s.ended[1], 0);
    sx->ops->release(sx->self, 1); /* kills it */
    sched_exec_free(sx);
    trial_exec_free(tx);
    space_free(sp);
}

TT_MAIN
