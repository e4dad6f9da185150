/* Tests of pausing and resuming trials (docs/pbt.md): the loop driven in-process through a
 * scripted executor on a virtual clock (a paused trial frees its slice, resumes as a new
 * attempt from its checkpoint, ASHA's promotion variant promotes the best of a rung first,
 * median stopping with hard_stop false pauses, everything ends), then the real tune binary
 * under the promotion variant, with real processes and with the simulator.
 * Not for: ASHA's stopping rule (test_scheduler.c) or the loop's other paths (test_loop.c). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"
#include "scheduler/sched.h"
#include "search/settings.h"
#include "search/space.h"
#include "store/store.h"
#include "scripted.h"
#include "testdb.h"
#include "tinytest.h"

/* fresh 0: the same database again, for a resume (the executor starts afresh too). */
static int rig_reopen(struct rig *r, const char *name, const char *space_text,
                      const struct script *scripts, int fresh)
{
    return rig_start(r, "pause", name, space_text, scripts, fresh, &scripted_ckpt_ops);
}

static int rig_open(struct rig *r, const char *name, const char *space_text,
                    const struct script *scripts)
{
    return rig_reopen(r, name, space_text, scripts, 1);
}

/* ---- the cases ------------------------------------------------------------------------ */
/* One slot, six trials, rungs at 1 and 3 (max_t 3, rf 3): each trial pauses at rung 0 and
 * frees the slot for the next; once the rung holds 3 values its best (trial 1, loss0 1)
 * is promoted, and at 6 values the next best (trial 4); the others end TERMINATED when
 * nothing is left. */
TEST(promotion_pauses_at_each_rung_and_promotes_the_best_of_the_top_1_over_rf)
{
    static struct script s[MAX_T];
    static const double loss0[6] = {5, 1, 3, 4, 2, 6};
    for (int i = 0; i < 6; i++)
        s[i] = (struct script){.results = 3, .period = 1, .loss0 = loss0[i]};
    struct rig r;
    REQUIRE(rig_open(&r, "promotion",
                     SPACE("promo", "\"num_samples\": 6, \"max_concurrent\": 1, \"scheduler\": "
                                    "{\"type\": \"asha\", \"variant\": \"promotion\", \"max_t\": "
                                    "3, \"grace_period\": 1, \"reduction_factor\": 3}"),
                     s) == 0);
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_loop_free(L);
    CHECK_EQ_INT(r.x.max_running, 1);
    /* a pause frees the slot: the next trial starts while the first is paused */
    static const int64_t order[] = {0, 1, 2, 1, 3, 4, 5, 4};
    CHECK_EQ_INT(r.x.nstarts, 8);
    for (int i = 0; i < 8 && i < r.x.nstarts; i++)
        CHECK_EQ_INT(r.x.starts[i].no, order[i]);
    /* the resumed attempts continue from the checkpoint of the pause */
    CHECK_EQ_INT(r.x.starts[3].attempt, 2);
    CHECK_STR(r.x.starts[3].resume_from, "iteration:1");
    CHECK_STR(r.x.starts[7].resume_from, "iteration:1");
    CHECK_STR(r.x.starts[0].resume_from, "");
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'pause' AND rung = 0"), 6);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions d JOIN trials t ON t.id = d.trial_id WHERE "
                       "d.action = 'promote' AND t.trial_no IN (1, 4)"),
                 2);
    CHECK_EQ_INT(q(&r, "SELECT min(d.id < e.id) FROM decisions d, decisions e, trials a, trials b "
                       "WHERE d.trial_id = a.id AND e.trial_id = b.id AND a.trial_no = 1 AND "
                       "b.trial_no = 4 AND d.action = 'promote' AND e.action = 'promote'"),
                 1);
    /* everything ends: the promoted ones at max_t, the rest when nothing else is left */
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 6);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE early_stopped = 1"), 4);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'stop' AND reason LIKE "
                       "'still paused%'"),
                 4);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'complete'"), 2);
    /* the promoted trial's results: iterations 1..3, the first carried into attempt 2 */
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM results r JOIN trials t ON t.id = r.trial_id WHERE "
                       "t.trial_no = 1 AND r.attempt = 2"),
                 3);
    CHECK_EQ_INT(q(&r, "SELECT attempt FROM trials WHERE trial_no = 1"), 2);
    rig_close(&r);
}

/* HyperBand through the loop (docs/hyperband.md): max_t 4, reduction_factor 2, one slot.
 * Trials 0-2 fill the bracket without halving and complete at 4; trials 3-5 the bracket
 * that halves at 2: 3 and 4 pause there, 5 arrives last and halves it (keeping 4 and 5),
 * continues, and 4 is promoted after it; 3, halved away while paused, is stopped at once
 * (sched_policy_drop), in the policy's words. */
TEST(hyperband_pauses_until_its_bracket_halves_and_promotes_the_kept)
{
    static struct script s[MAX_T];
    static const double loss0[6] = {1, 1, 1, 3, 1, 2};
    for (int i = 0; i < 6; i++)
        s[i] = (struct script){.results = 4, .period = 1, .loss0 = loss0[i]};
    struct rig r;
    REQUIRE(
        rig_open(&r, "hyperband",
                 SPACE("hb", "\"num_samples\": 6, \"max_concurrent\": 1, \"scheduler\": "
                             "{\"type\": \"hyperband\", \"max_t\": 4, \"reduction_factor\": 2}"),
                 s) == 0);
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_loop_free(L);
    static const int64_t order[] = {0, 1, 2, 3, 4, 5, 4};
    CHECK_EQ_INT(r.x.nstarts, 7);
    for (int i = 0; i < 7 && i < r.x.nstarts; i++)
        CHECK_EQ_INT(r.x.starts[i].no, order[i]);
    CHECK_STR(r.x.starts[6].resume_from, "iteration:2");
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'pause' AND milestone = 2"),
                 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions d JOIN trials t ON t.id = d.trial_id WHERE "
                       "d.action = 'continue' AND t.trial_no = 5 AND d.reason LIKE 'in the top "
                       "1/rf of bracket 1 at milestone 2%'"),
                 1);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions d JOIN trials t ON t.id = d.trial_id WHERE "
                       "d.action = 'promote' AND t.trial_no = 4"),
                 1);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'complete' AND reason LIKE "
                       "'reached the last milestone of bracket%'"),
                 5);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 6);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE early_stopped = 1"), 1);
    CHECK_EQ_INT(q(&r, "SELECT trial_no FROM trials WHERE early_stopped = 1"), 3);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions d JOIN trials t ON t.id = d.trial_id WHERE "
                       "d.action = 'stop' AND t.trial_no = 3 AND d.reason LIKE 'halved away%'"),
                 1);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE reason LIKE 'still paused%'"), 0);
    rig_close(&r);
}

/* A result that names its checkpoint ("checkpoint": "ck_1", relative to the trial's
 * directory) is where the pause resumes from, before anything the executor knows. */
TEST(a_checkpoint_named_by_a_result_is_where_the_trial_resumes)
{
    static struct script s[MAX_T];
    static const double loss0[6] = {5, 1, 3, 4, 2, 6};
    for (int i = 0; i < 6; i++)
        s[i] = (struct script){.results = 3, .period = 1, .loss0 = loss0[i]};
    struct rig r;
    REQUIRE(rig_open(&r, "named",
                     SPACE("named", "\"num_samples\": 6, \"max_concurrent\": 1, \"scheduler\": "
                                    "{\"type\": \"asha\", \"variant\": \"promotion\", \"max_t\": "
                                    "3, \"grace_period\": 1, \"reduction_factor\": 3}"),
                     s) == 0);
    r.x.name_ckpt = 1;
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_loop_free(L);
    REQUIRE(r.x.nstarts == 8);
    CHECK_EQ_INT(r.x.starts[3].no, 1);
    CHECK_STR(r.x.starts[3].resume_from, "/nonexistent/results/trial_00001/ck_1");
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 6);
    rig_close(&r);
}

/* Ctrl-C during a promotion run: paused trials stay PAUSED; tune resume puts the ones the
 * policy had paused back among the paused (not relaunched at once) and the run ends as an
 * uninterrupted one does: the best of rung 0 promoted, everything TERMINATED. */
TEST(ctrl_c_keeps_paused_trials_and_resume_promotes_as_before)
{
    static struct script s[MAX_T];
    static const double loss0[6] = {5, 1, 3, 4, 2, 6};
    for (int i = 0; i < 6; i++)
        s[i] = (struct script){.results = 3, .period = 1, .loss0 = loss0[i]};
    const char *space =
        SPACE("promo_resume", "\"num_samples\": 6, \"max_concurrent\": 1, \"scheduler\": "
                              "{\"type\": \"asha\", \"variant\": \"promotion\", \"max_t\": 3, "
                              "\"grace_period\": 1, \"reduction_factor\": 3}");
    struct rig r;
    REQUIRE(rig_open(&r, "promo_resume", space, s) == 0);
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(drive(&r, L, 2.5, 0, NULL), 0); /* trials 0, 1 and 2 paused */
    sched_loop_free(L);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'PAUSED'"), 3);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'promote'"), 0);
    rig_close(&r);

    REQUIRE(rig_reopen(&r, "promo_resume", space, s, 0) == 0);
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_loop_free(L);
    /* the three trials paused at rung 0 wait as paused (none is relaunched at once): the
     * run goes on exactly as the uninterrupted one, trial 1 promoted first */
    static const int64_t order[] = {1, 3, 4, 5, 4};
    CHECK_EQ_INT(r.x.nstarts, 5);
    for (int i = 0; i < 5 && i < r.x.nstarts; i++)
        CHECK_EQ_INT(r.x.starts[i].no, order[i]);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 6);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions d JOIN trials t ON t.id = d.trial_id WHERE "
                       "d.action = 'promote' AND t.trial_no IN (1, 4)"),
                 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'promote'"), 2);
    rig_close(&r);
}

/* The same trials under the default (stopping) variant never pause: a pause needs the
 * variant. */
TEST(the_stopping_variant_never_pauses)
{
    static struct script s[MAX_T];
    static const double loss0[6] = {5, 1, 3, 4, 2, 6};
    for (int i = 0; i < 6; i++)
        s[i] = (struct script){.results = 3, .period = 1, .loss0 = loss0[i]};
    struct rig r;
    REQUIRE(rig_open(&r, "stopping",
                     SPACE("stopv", "\"num_samples\": 6, \"max_concurrent\": 1, \"scheduler\": "
                                    "{\"type\": \"asha\", \"max_t\": 3, \"grace_period\": 1, "
                                    "\"reduction_factor\": 3}"),
                     s) == 0);
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_loop_free(L);
    CHECK_EQ_INT(r.x.nstarts, 6);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action IN ('pause', 'promote')"), 0);
    rig_close(&r);
}

/* Two slots: while trials run, a paused trial that is not (yet) in its rung's top 1/rf
 * waits and new trials start; nothing ever runs beyond max_concurrent. */
TEST(promotion_respects_max_concurrent_and_everything_ends)
{
    static struct script s[MAX_T];
    for (int i = 0; i < 20; i++)
        s[i] =
            (struct script){.results = 9, .period = 1 + 0.1 * (i % 3), .loss0 = 1 + (i * 7) % 11};
    struct rig r;
    REQUIRE(rig_open(&r, "promotion2",
                     SPACE("promo2", "\"num_samples\": 20, \"max_concurrent\": 2, \"scheduler\": "
                                     "{\"type\": \"asha\", \"variant\": \"promotion\", \"max_t\": "
                                     "9, \"grace_period\": 1, \"reduction_factor\": 3}"),
                     s) == 0);
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_run_result_t res;
    sched_loop_result(L, &res);
    sched_loop_free(L);
    CHECK_EQ_INT(res.terminated, 20);
    CHECK_EQ_INT(r.x.max_running, 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status <> 'TERMINATED'"), 0);
    CHECK(q(&r, "SELECT count(*) FROM decisions WHERE action = 'promote' AND rung = 1") >= 1);
    /* every promotion resumed its trial from the iteration of its rung */
    for (int i = 0; i < r.x.nstarts && i < 256; i++) {
        if (r.x.starts[i].attempt == 1) continue;
        int it = 0;
        CHECK(sscanf(r.x.starts[i].resume_from, "iteration:%d", &it) == 1);
        CHECK(it == 1 || it == 3);
    }
    /* each trial's recorded iterations are 1..n without a gap or a repeat */
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM (SELECT t.id, count(*) c, max(r.iteration) m FROM "
                       "results r JOIN trials t ON t.id = r.trial_id AND r.attempt = t.attempt "
                       "GROUP BY t.id) WHERE c <> m"),
                 0);
    rig_close(&r);
}

/* Median stopping with hard_stop false pauses the trials worse than the median instead of
 * stopping them; with nothing new pending they are resumed from their checkpoint and, never
 * judged again (Ray's fallback to FIFO), run to max_t. */
TEST(median_with_hard_stop_false_pauses_and_resumes_when_nothing_is_pending)
{
    static struct script s[MAX_T];
    static const double loss0[3] = {1, 5, 3};
    for (int i = 0; i < 3; i++)
        s[i] = (struct script){.results = 6, .period = 1, .loss0 = loss0[i]};
    struct rig r;
    REQUIRE(rig_open(&r, "median_soft",
                     SPACE("msoft", "\"num_samples\": 3, \"max_concurrent\": 1, \"scheduler\": "
                                    "{\"type\": \"median\", \"max_t\": 6, \"grace_period\": 1, "
                                    "\"min_samples_required\": 1, \"hard_stop\": false}"),
                     s) == 0);
    sched_loop_t *L = NULL;
    char err[512];
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_loop_free(L);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'pause'"), 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'stop'"), 0);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'resume'"), 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 3);
    /* each ran to max_t: six iterations in its last attempt */
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM trials t WHERE (SELECT max(iteration) FROM results r "
                       "WHERE r.trial_id = t.id AND r.attempt = t.attempt) = 6"),
                 3);
    /* trial 1 paused first, so it resumed first, from iteration 1 */
    CHECK_EQ_INT(r.x.nstarts, 5);
    CHECK_EQ_INT(r.x.starts[3].no, 1);
    CHECK_STR(r.x.starts[3].resume_from, "iteration:1");
    rig_close(&r);

    /* hard_stop true (the default) stops them, as before */
    REQUIRE(rig_open(&r, "median_hard",
                     SPACE("mhard", "\"num_samples\": 3, \"max_concurrent\": 1, \"scheduler\": "
                                    "{\"type\": \"median\", \"max_t\": 6, \"grace_period\": 1, "
                                    "\"min_samples_required\": 1}"),
                     s) == 0);
    REQUIRE(sched_loop_new(&r.o, &L, err, sizeof err) == 0);
    CHECK_EQ_INT(drive(&r, L, 0, 0, NULL), 0);
    sched_loop_free(L);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'stop'"), 2);
    CHECK_EQ_INT(q(&r, "SELECT count(*) FROM decisions WHERE action = 'pause'"), 0);
    CHECK_EQ_INT(r.x.nstarts, 3);
    rig_close(&r);
}

TEST(settings_are_checked_with_a_clear_message)
{
    static const char *const bad[][2] = {
        {SPACE("b1", "\"scheduler\": {\"type\": \"asha\", \"variant\": \"promote\"}"),
         "\"stopping\""},
        {SPACE("b1e", "\"scheduler\": {\"type\": \"asha\", \"variant\": \"eager\"}"),
         "or \"eager_promotion\" (promotion, but a rung with fewer than reduction_factor "
         "results promotes its best at once)"},
        {SPACE("b2", "\"scheduler\": {\"type\": \"median\", \"variant\": \"promotion\"}"),
         "does not apply to the \"median\" scheduler"},
        {SPACE("b3", "\"scheduler\": {\"type\": \"median\", \"hard_stop\": 0}"),
         "\"hard_stop\" must be true or false"},
        {SPACE("b4", "\"scheduler\": {\"type\": \"asha\", \"hard_stop\": false}"),
         "does not apply to the \"asha\" scheduler"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        space_t *sp = NULL;
        char err[1024] = "";
        CHECK(space_parse(bad[i][0], strlen(bad[i][0]), "space.json", &sp, err, sizeof err) != 0);
        CHECK_CONTAINS(err, bad[i][1]);
        space_free(sp);
    }
    space_t *sp = NULL;
    char err[1024];
    const char *ok = SPACE("ok", "\"scheduler\": {\"type\": \"asha\", \"variant\": \"promotion\"}");
    REQUIRE(space_parse(ok, strlen(ok), "space.json", &sp, err, sizeof err) == 0);
    CHECK_EQ_INT(space_settings(sp)->sched.promotion, SPACE_ASHA_PROMOTION);
    CHECK_EQ_INT(space_settings(sp)->sched.hard_stop, 1);
    space_free(sp);
    /* the three variants parse, and the settings' JSON (what is stored and shown) names
     * each as it was written */
    static const char *const variants[] = {"stopping", "promotion", "eager_promotion"};
    for (int i = 0; i < 3; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s",
                 SPACE("v", "\"scheduler\": {\"type\": \"asha\", \"variant\": \"VARIANT\"}"));
        char *at = strstr(text, "VARIANT");
        REQUIRE(at);
        char tail[512];
        snprintf(tail, sizeof tail, "%s", at + strlen("VARIANT"));
        snprintf(at, sizeof text - (size_t)(at - text), "%s%s", variants[i], tail);
        sp = NULL;
        REQUIRE(space_parse(text, strlen(text), "space.json", &sp, err, sizeof err) == 0);
        CHECK_EQ_INT(space_settings(sp)->sched.promotion, i);
        cJSON *j = space_settings_json(sp);
        REQUIRE(j);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(j, "scheduler"), "variant");
        CHECK(cJSON_IsString(v) && strcmp(v->valuestring, variants[i]) == 0);
        cJSON_Delete(j);
        space_free(sp);
    }
}

/* The policy alone: promotion takes the highest rung first, then the best value, and only
 * from the top floor(n / rf) of a rung; a tie with the bar is in. */
TEST(asha_promotion_chooses_the_highest_rung_first_then_the_best)
{
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_ASHA,
                                .max_t = 8,
                                .grace_period = 1,
                                .reduction_factor = 2,
                                .brackets = 1,
                                .stop_last_trials = 1,
                                .promotion = 1}};
    sched_policy_t *p = NULL;
    char err[256];
    REQUIRE(sched_policy_new(&o, &p, err, sizeof err) == 0);
    for (int64_t i = 0; i < 4; i++)
        CHECK_EQ_INT(sched_on_trial_add(p, i), 0);
    sched_decision_t d;
    static const double v[4] = {1, 2, 2, 4};
    for (int64_t i = 0; i < 4; i++) {
        sched_on_result(p, i, 1, v[i], &d);
        CHECK_EQ_INT(d.action, SCHED_PAUSE);
        CHECK_EQ_INT(d.rung, 0);
    }
    int64_t paused[4] = {3, 2, 1, 0};
    /* rung 0 holds 4 values, k = 2: trial 0 (1) is the best */
    CHECK_EQ_INT(sched_policy_choose_next(p, paused, 4, 5, &d), 3);
    CHECK_EQ_INT(d.rung, 0);
    CHECK(d.value == 1 && d.cutoff == 2);
    sched_on_result(p, 0, 2, 0.5, &d); /* promoted, pauses at rung 1 (1 value: k = 0) */
    CHECK_EQ_INT(d.action, SCHED_PAUSE);
    CHECK_EQ_INT(d.rung, 1);
    int64_t p2[4] = {3, 2, 1, 0};
    /* trial 0 at rung 1 is not promotable yet; at rung 0 trials 1 and 2 tie with the bar
     * (2): the first in the list that is best wins, trial 2; trial 3 (4) never */
    long k = sched_policy_choose_next(p, p2, 3, 0, &d);
    CHECK(k == 1 || k == 2);
    sched_on_result(p, p2[k], 2, 0.7, &d); /* rung 1 now holds 2 values, k = 1 */
    int64_t p3[3] = {3, p2[k] == 2 ? 1 : 2, 0};
    /* the highest rung first: trial 0 at rung 1 (0.5, the best there) */
    CHECK_EQ_INT(sched_policy_choose_next(p, p3, 3, 0, &d), 2);
    CHECK_EQ_INT(d.rung, 1);
    /* without it, rung 0's remaining tie at the bar */
    CHECK_EQ_INT(sched_policy_choose_next(p, p3, 2, 0, &d), 1);
    /* trial 3 alone is below the bar: a new trial (or nothing) instead */
    CHECK_EQ_INT(sched_policy_choose_next(p, p3, 1, 0, &d), -1);
    /* a result at max_t completes */
    sched_on_result(p, 0, 8, 0.1, &d);
    CHECK_EQ_INT(d.action, SCHED_COMPLETE);
    sched_policy_free(p);
}

/* The eager variant: a rung holding fewer than rf values promotes its best (the paper's
 * floor(n / rf) is 0 there and promotes nothing), with words that say so; once the rung
 * holds rf values the paper's rule and words apply. */
TEST(eager_promotion_promotes_the_best_of_a_rung_short_of_rf_values)
{
    for (int eager = 0; eager < 2; eager++) {
        sched_opts_t o = {.sched = {.type = SPACE_SCHED_ASHA,
                                    .max_t = 9,
                                    .grace_period = 1,
                                    .reduction_factor = 3,
                                    .brackets = 1,
                                    .stop_last_trials = 1,
                                    .promotion = eager ? SPACE_ASHA_EAGER : SPACE_ASHA_PROMOTION}};
        sched_policy_t *p = NULL;
        char err[256], buf[600];
        REQUIRE(sched_policy_new(&o, &p, err, sizeof err) == 0);
        for (int64_t i = 0; i < 4; i++)
            CHECK_EQ_INT(sched_on_trial_add(p, i), 0);
        sched_decision_t d;
        sched_on_result(p, 0, 1, 2.0, &d);
        CHECK_EQ_INT(d.action, SCHED_PAUSE);
        sched_policy_word(p, &d, "trial_00000", "training_iteration", 1, buf, sizeof buf);
        CHECK_STR(buf, eager ? "reached rung 0 (milestone 1): paused until it is in the rung's "
                               "top 1/rf, or its best while it holds fewer than rf results"
                             : "reached rung 0 (milestone 1): paused until it is in the rung's "
                               "top 1/rf");
        int64_t paused[3] = {0, 1, 2};
        /* alone at its rung: promoted eagerly, not by the paper's rule */
        CHECK_EQ_INT(sched_policy_choose_next(p, paused, 1, 0, &d), eager ? 0 : -1);
        if (eager) {
            CHECK(d.value == 2.0 && isnan(d.cutoff));
            CHECK_STR(sched_policy_word_resume(p, &d, "training_iteration", 2, "iteration:1", buf,
                                               sizeof buf),
                      "promote");
            CHECK_STR(buf, "promoted from rung 0 (milestone 1): 2 is the best of a rung holding "
                           "fewer than reduction_factor (3) results (eager_promotion); attempt 2 "
                           "resumes from iteration:1");
        }
        /* a worse second value is not the rung's best: it waits under both rules */
        sched_on_result(p, 1, 1, 3.0, &d);
        CHECK_EQ_INT(sched_policy_choose_next(p, paused + 1, 1, 0, &d), -1);
        /* a better third one is: 3 values, floor(3/3) = 1 under both, a bar now */
        sched_on_result(p, 2, 1, 1.0, &d);
        CHECK_EQ_INT(sched_policy_choose_next(p, paused + 1, 2, 0, &d), 1);
        CHECK(d.value == 1.0 && d.cutoff == 1.0);
        sched_policy_free(p);
    }
}

/* ---- the real binary ------------------------------------------------------------------ */
/* Real processes: synth_trial checkpoints each iteration; under the promotion variant a
 * paused trial is stopped, and its next attempt gets TUNE_RESUME_FROM naming that file and
 * TUNE_MAX_T; every trial ends TERMINATED. */
TEST(e2e_promotion_asha_with_real_processes)
{
    char dir[4096], sp[8192], wrap[4200];
    e2e_fresh_dir(dir, sizeof dir, "pause", "promotion_real");
    snprintf(wrap, sizeof wrap, "%s/trial.sh", dir);
    char script[8192];
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "echo \"$TUNE_MAX_T ${TUNE_RESUME_FROM:-none}\" >> \"$TUNE_TRIAL_DIR/env.txt\"\n"
             "exec '%s' \"$@\"\n",
             g_synth);
    write_exec(wrap, script);
    snprintf(sp, sizeof sp,
             "{\"name\": \"promo_real\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": "
             "6, \"max_concurrent\": 2, \"seed\": 3,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"9\", \"--sleep-ms\", "
             "\"30\", \"--checkpoint\"],"
             " \"scheduler\": {\"type\": \"asha\", \"variant\": \"promotion\", \"max_t\": 9, "
             "\"grace_period\": 1, \"reduction_factor\": 3},"
             " \"space\": {\"lr\": {\"loguniform\": [0.0001, 1]}}}",
             wrap);
    CHECK_EQ_INT(run_ok(dir, sp, NULL), 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 6);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM decisions WHERE action = 'pause' AND rung = 0"),
                 6);
    long long promoted = db_int(dir, "SELECT count(*) FROM decisions WHERE action = 'promote'");
    CHECK(promoted >= 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE attempt > 1"),
                 db_int(dir, "SELECT count(DISTINCT trial_id) FROM decisions WHERE action = "
                             "'promote'"));
    /* the first promoted trial's second start had its checkpoint and max_t */
    long long no = db_int(dir, "SELECT t.trial_no FROM decisions d JOIN trials t ON t.id = "
                               "d.trial_id WHERE d.action = 'promote' ORDER BY d.id LIMIT 1");
    char path[4200], want[4200];
    snprintf(path, sizeof path, "%s/tune_results/promo_real/trial_%05lld/env.txt", dir, no);
    char *env = slurp(path);
    snprintf(want, sizeof want, "9 %s/tune_results/promo_real/trial_%05lld/checkpoint", dir, no);
    CHECK_CONTAINS(env, "9 none\n");
    CHECK_CONTAINS(env, want);
    free(env);
    /* its results: iterations without a gap in its last attempt */
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) = max(iteration) FROM results r JOIN trials t ON t.id = "
             "r.trial_id AND r.attempt = t.attempt WHERE t.trial_no = %lld",
             no);
    CHECK_EQ_INT(db_int(dir, sql), 1);
}

/* The simulator answers a resumed trial from the iteration it paused at: on the MLP
 * table, a promoted trial's last attempt holds iterations 1..20 once each. */
TEST(e2e_simulate_promotion_on_the_mlp_table)
{
    char dir[4096], sp[8192], table[4200];
    e2e_fresh_dir(dir, sizeof dir, "pause", "simulate_promotion");
    snprintf(table, sizeof table, "%s/bench/tables/mlp.csv.gz", g_src);
    snprintf(sp, sizeof sp,
             "{\"name\": \"mlp\", \"metric\": \"val_loss\", \"mode\": \"min\", \"num_samples\": "
             "60, \"max_concurrent\": 4, \"seed\": 5, \"command\": [\"x\"],"
             " \"scheduler\": {\"type\": \"asha\", \"variant\": \"promotion\", \"max_t\": 20, "
             "\"grace_period\": 1, \"reduction_factor\": 3},"
             " \"space\": {\"lr\": {\"loguniform\": [1e-4, 1.0]}, \"batch_size\": {\"choice\": "
             "[32, 64, 128, 256, 512]}, \"momentum\": {\"uniform\": [0.0, 0.99]}, "
             "\"weight_decay\": {\"loguniform\": [1e-6, 1e-2]}, \"hidden\": {\"choice\": [64, "
             "128, 256, 512]}, \"layers\": {\"choice\": [1, 2, 3]}, \"warmup_epochs\": "
             "{\"choice\": [0, 1, 2, 4]}}}");
    space_file(dir, sp);
    const char *a[] = {"simulate", "space.json", "--table", table, "--quiet", NULL};
    struct out o = run_tune(dir, a);
    if (o.code != 0) fprintf(stderr, "%s%s", o.out, o.err);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Simulated mlp-sim: 60 trials terminated");
    out_free(&o);
    CHECK(db_int(dir, "SELECT count(*) FROM decisions WHERE action = 'promote'") >= 10);
    CHECK(db_int(dir, "SELECT count(*) FROM decisions WHERE action = 'complete'") >= 1);
    /* a trial that completed ran 20 iterations, each once, the early ones carried */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM (SELECT t.id, count(*) c, count(DISTINCT "
                             "r.iteration) u, max(r.iteration) m FROM trials t JOIN results r ON "
                             "r.trial_id = t.id AND r.attempt = t.attempt JOIN decisions d ON "
                             "d.trial_id = t.id AND d.action = 'complete' GROUP BY t.id) WHERE c "
                             "<> 20 OR u <> 20 OR m <> 20"),
                 0);
    CHECK(db_int(dir, "SELECT count(*) FROM trials WHERE attempt >= 3") >= 1);
}

TT_MAIN
