/* Tests for the scheduler's policies (FIFO, ASHA, median stopping) and its slice pool.
 * ASHA is also replayed against tests/ref/asha_golden.txt, written once by the
 * reference tests/ref/asha_ref.py (Ray's rule transcribed, numpy's percentile).
 * Not for: the event loop (sched_run), which needs trials and a store. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler/sched.h"
#include "tinytest.h"

/* ---- helpers ---------------------------------------------------------------------- */
static sched_opts_t asha_opts(int mode_max, double max_t, double grace, double rf, int brackets,
                              uint64_t seed)
{
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_ASHA,
                                .max_t = max_t,
                                .grace_period = grace,
                                .reduction_factor = rf,
                                .brackets = brackets,
                                .min_samples_required = 3,
                                .stop_last_trials = 1},
                      .mode_max = mode_max,
                      .seed = seed};
    return o;
}

static sched_policy_t *new_policy(const sched_opts_t *o)
{
    sched_policy_t *p = NULL;
    char err[256] = "";
    if (sched_policy_new(o, &p, err, sizeof err) != 0) {
        fprintf(stderr, "sched_policy_new: %s\n", err);
        return NULL;
    }
    return p;
}

static sched_policy_t *new_asha(int mode_max, double max_t, double grace, double rf, int brackets)
{
    sched_opts_t o = asha_opts(mode_max, max_t, grace, rf, brackets, 1);
    return new_policy(&o);
}

static sched_decision_t result(sched_policy_t *p, int64_t trial, double time, double value)
{
    sched_decision_t d;
    memset(&d, 0x5a, sizeof d); /* every field must be written */
    sched_on_result(p, trial, time, value, &d);
    return d;
}

/* Records values[0..n) at the first rung (trials 0..n-1 at time 1) and returns the
 * decision for one more trial, whose cutoff is the percentile of those values. */
static sched_decision_t cutoff_after(double rf, int mode_max, const double *values, int n,
                                     double probe)
{
    sched_decision_t d = {0};
    sched_policy_t *p = new_asha(mode_max, 100, 1, rf, 1);
    if (!p) return d;
    for (int i = 0; i <= n; i++)
        sched_on_trial_add(p, i);
    for (int i = 0; i < n; i++)
        result(p, i, 1, values[i]);
    d = result(p, n, 1, probe);
    sched_policy_free(p);
    return d;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- options and FIFO ------------------------------------------------------------- */
static void expect_policy_error(sched_opts_t o, const char *msg)
{
    sched_policy_t *p = NULL;
    char err[256] = "";
    int rc = sched_policy_new(&o, &p, err, sizeof err);
    CHECK_EQ_INT(rc, SCHED_EINVAL);
    CHECK(p == NULL);
    CHECK_CONTAINS(err, msg);
}

TEST(asha_rejects_bad_options)
{
    sched_opts_t o = asha_opts(1, 81, 1, 3, 1, 0);
    o.sched.max_t = 0;
    expect_policy_error(o, "asha: max_t must be a number > 0 (got 0)");
    o.sched.max_t = NAN;
    expect_policy_error(o, "asha: max_t must be a number > 0");
    o = asha_opts(1, 81, 0, 3, 1, 0);
    expect_policy_error(o, "asha: grace_period must be a number > 0 (got 0)");
    o.sched.grace_period = -2;
    expect_policy_error(o, "asha: grace_period must be a number > 0 (got -2)");
    o = asha_opts(1, 10, 20, 3, 1, 0);
    expect_policy_error(o, "asha: grace_period 20 must not be larger than max_t 10");
    o = asha_opts(1, 81, 1, 1, 1, 0);
    expect_policy_error(o, "asha: reduction_factor must be a number > 1 (got 1)");
    o.sched.reduction_factor = 0.5;
    expect_policy_error(o, "asha: reduction_factor must be a number > 1 (got 0.5)");
    o = asha_opts(1, 81, 1, 3, 0, 0);
    expect_policy_error(o, "asha: brackets must be between 1 and 64 (got 0)");
    o.sched.brackets = 65;
    expect_policy_error(o, "asha: brackets must be between 1 and 64 (got 65)");
    o = asha_opts(1, 1e6, 1, 1.001, 1, 0);
    expect_policy_error(o, "asha: reduction_factor 1.001 gives 13823 rungs between grace_period 1 "
                           "and max_t 1e+06; at most 1024 are supported");
}

TEST(median_rejects_bad_options)
{
    sched_opts_t o = {
        .sched = {
            .type = SPACE_SCHED_MEDIAN, .max_t = -1, .min_samples_required = 3, .hard_stop = 1}};
    expect_policy_error(o, "median: max_t must be a number > 0 (got -1)");
    o.sched.max_t = 10;
    o.sched.grace_period = -1;
    expect_policy_error(o, "median: grace_period must be a number >= 0 (got -1)");
    o.sched.grace_period = 11;
    expect_policy_error(o, "median: grace_period 11 must not be larger than max_t 10");
    o.sched.grace_period = 0;
    o.sched.min_samples_required = 0;
    expect_policy_error(o, "median: min_samples_required must be >= 1 (got 0)");
}

TEST(policy_rejects_unknown_type_and_null)
{
    sched_opts_t o = asha_opts(1, 81, 1, 3, 1, 0);
    o.sched.type = (space_sched_type_t)7;
    expect_policy_error(o, "scheduler: unknown policy type 7");
    sched_policy_t *p = NULL;
    char err[128] = "";
    CHECK_EQ_INT(sched_policy_new(NULL, &p, err, sizeof err), SCHED_EINVAL);
    CHECK_CONTAINS(err, "scheduler: no options given");
    sched_policy_free(NULL); /* NULL-safe */
}

TEST(policy_names)
{
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_FIFO}};
    sched_policy_t *p = new_policy(&o);
    REQUIRE(p);
    CHECK_STR(sched_policy_name(p), "fifo");
    sched_policy_free(p);
    o = asha_opts(1, 81, 1, 3, 1, 0);
    p = new_policy(&o);
    REQUIRE(p);
    CHECK_STR(sched_policy_name(p), "asha");
    sched_policy_free(p);
    o = (sched_opts_t){
        .sched = {
            .type = SPACE_SCHED_MEDIAN, .max_t = 10, .min_samples_required = 1, .hard_stop = 1}};
    p = new_policy(&o);
    REQUIRE(p);
    CHECK_STR(sched_policy_name(p), "median");
    sched_policy_free(p);
}

TEST(fifo_never_stops_nor_completes)
{
    /* FIFO reads no option: zeros that ASHA would refuse are fine. */
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_FIFO, .max_t = 10}};
    sched_policy_t *p = new_policy(&o);
    REQUIRE(p);
    CHECK_EQ_INT(sched_on_trial_add(p, 0), 0);
    for (int i = 0; i < 50; i++) {
        sched_decision_t d = result(p, 0, i, i % 2 ? NAN : -1e9 * i);
        CHECK_EQ_INT(d.action, SCHED_CONTINUE);
        CHECK_EQ_INT(d.judged, 0);
        CHECK_EQ_INT(d.bracket, -1);
        CHECK_EQ_INT(d.rung, -1);
        CHECK(isnan(d.milestone) && isnan(d.cutoff));
    }
    sched_decision_t d = result(p, 0, 1e9, 3); /* far past max_t: still runs */
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK(d.value == 3);
    sched_on_trial_complete(p, 0);
    CHECK_EQ_INT(sched_policy_rungs(p, NULL, 0), 0);
    sched_policy_free(p);
}

/* ---- ASHA ------------------------------------------------------------------------- */
TEST(asha_milestones_81_1_3)
{
    sched_policy_t *p = new_asha(1, 81, 1, 3, 2);
    REQUIRE(p);
    sched_rung_info_t r[16];
    size_t n = sched_policy_rungs(p, r, 16);
    /* Bracket 0: 1,3,9,27 (and 81 = max_t, which completes first and is not listed);
     * bracket 1 starts one rung higher: 3,9,27. */
    REQUIRE(n == 7);
    const double want[7] = {1, 3, 9, 27, 3, 9, 27};
    const int bracket[7] = {0, 0, 0, 0, 1, 1, 1}, rung[7] = {0, 1, 2, 3, 0, 1, 2};
    for (int i = 0; i < 7; i++) {
        CHECK(r[i].milestone == want[i]);
        CHECK_EQ_INT(r[i].bracket, bracket[i]);
        CHECK_EQ_INT(r[i].rung, rung[i]);
        CHECK_EQ_INT(r[i].recorded, 0);
        CHECK(isnan(r[i].cutoff));
    }
    /* A short buffer gets a prefix; the count is still the whole. */
    sched_rung_info_t two[2];
    CHECK_EQ_INT(sched_policy_rungs(p, two, 2), 7);
    CHECK(two[1].milestone == 3);
    sched_policy_free(p);
}

TEST(asha_milestones_non_integer)
{
    /* grace 0.5, rf 2.5, max_t 60: log(120)/log(2.5) = 5.22 -> 6 rungs, 0.5 * 2.5^k. */
    sched_policy_t *p = new_asha(1, 60, 0.5, 2.5, 1);
    REQUIRE(p);
    sched_rung_info_t r[8];
    REQUIRE(sched_policy_rungs(p, r, 8) == 6);
    const double want[6] = {0.5, 1.25, 3.125, 7.8125, 19.53125, 48.828125};
    for (int i = 0; i < 6; i++)
        CHECK(r[i].milestone == want[i]);
    sched_policy_free(p);
}

TEST(asha_first_trial_at_rung_continues)
{
    sched_policy_t *p = new_asha(1, 81, 1, 3, 1);
    REQUIRE(p);
    sched_on_trial_add(p, 0);
    sched_decision_t d = result(p, 0, 0.5, 0.1); /* before the first milestone */
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK_EQ_INT(d.judged, 0);
    CHECK_EQ_INT(d.bracket, 0);
    CHECK_EQ_INT(d.rung, -1);
    CHECK(isnan(d.milestone) && isnan(d.cutoff));
    CHECK(d.value == 0.1);
    d = result(p, 0, 1, 0.1);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK_EQ_INT(d.judged, 1);
    CHECK_EQ_INT(d.rung, 0);
    CHECK(d.milestone == 1);
    CHECK(isnan(d.cutoff)); /* nothing recorded before it */
    CHECK(d.value == 0.1);
    sched_policy_free(p);
}

TEST(asha_strictly_worse_stops_equal_continues)
{
    sched_policy_t *p = new_asha(1, 81, 1, 2, 1); /* rf 2: the cutoff is the median */
    REQUIRE(p);
    for (int i = 0; i < 4; i++)
        sched_on_trial_add(p, i);
    CHECK_EQ_INT(result(p, 0, 1, 0.5).action, SCHED_CONTINUE);
    sched_decision_t d = result(p, 1, 1, 0.5); /* equal to the cutoff 0.5 */
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK(d.cutoff == 0.5);
    d = result(p, 2, 1, 0.4999);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK(d.cutoff == 0.5);
    CHECK(d.value == 0.4999);
    /* The stopped trial's value is recorded too: median of {0.4999, 0.5, 0.5} = 0.5. */
    d = result(p, 3, 1, 0.6);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK(d.cutoff == 0.5);
    sched_rung_info_t r[8];
    sched_policy_rungs(p, r, 8);
    CHECK_EQ_INT(r[0].recorded, 4);
    sched_policy_free(p);
}

TEST(asha_percentile_linear_like_numpy)
{
    /* Expected values from numpy 1.24.2: np.nanpercentile(v, (1 - 1/rf) * 100). */
    double v1[] = {1, 2, 3, 4};
    CHECK(cutoff_after(3, 1, v1, 4, 0).cutoff == 3.0);
    double v2[] = {3, 1, 2};
    CHECK(cutoff_after(3, 1, v2, 3, 0).cutoff == 2.3333333333333335);
    double v3[] = {5, 4, 3, 2, 1};
    CHECK(cutoff_after(3, 1, v3, 5, 0).cutoff == 3.666666666666667);
    double v4[] = {20, 10};
    CHECK(cutoff_after(4, 1, v4, 2, 0).cutoff == 17.5);
    double v5[] = {1, 2, 3, 4};
    CHECK(cutoff_after(2, 1, v5, 4, 0).cutoff == 2.5);
    double v6[] = {0.1, 0.5, 0.2, 0.9, 0.3};
    CHECK(cutoff_after(4, 1, v6, 5, 0).cutoff == 0.5);
    double v7[] = {7};
    sched_decision_t d = cutoff_after(3, 1, v7, 1, 6.5); /* one value is a cutoff */
    CHECK(d.cutoff == 7);
    CHECK_EQ_INT(d.action, SCHED_STOP);
}

TEST(asha_mode_min_and_max)
{
    double v[] = {1, 2, 3, 4};
    /* max: cutoff 3; 2.5 is worse, 3 ties, 3.5 is better. */
    CHECK_EQ_INT(cutoff_after(3, 1, v, 4, 2.5).action, SCHED_STOP);
    CHECK_EQ_INT(cutoff_after(3, 1, v, 4, 3).action, SCHED_CONTINUE);
    CHECK_EQ_INT(cutoff_after(3, 1, v, 4, 3.5).action, SCHED_CONTINUE);
    /* min: rewards -1..-4, percentile -2, shown as 2 in the user's scale. */
    sched_decision_t d = cutoff_after(3, 0, v, 4, 2.5);
    CHECK(d.cutoff == 2.0);
    CHECK(d.value == 2.5);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK_EQ_INT(cutoff_after(3, 0, v, 4, 2).action, SCHED_CONTINUE);
    CHECK_EQ_INT(cutoff_after(3, 0, v, 4, 1.5).action, SCHED_CONTINUE);
}

TEST(asha_nan_stops_but_stays_out_of_the_cutoff)
{
    for (int mode_max = 0; mode_max <= 1; mode_max++) {
        sched_policy_t *p = new_asha(mode_max, 81, 1, 3, 1);
        REQUIRE(p);
        for (int i = 0; i < 4; i++)
            sched_on_trial_add(p, i);
        result(p, 0, 1, 1.0);
        sched_decision_t d = result(p, 1, 1, NAN);
        CHECK_EQ_INT(d.action, SCHED_STOP); /* Ray would continue: NaN < x is false */
        CHECK_EQ_INT(d.judged, 1);
        CHECK(isnan(d.value));
        CHECK(d.cutoff == 1.0);
        /* The NaN is not among the rung's values (Ray's nanpercentile): the cutoff is
         * still 1.0, so a worse value stops. Recorded as -inf it made the cutoff +-inf
         * and let this one pass. */
        d = result(p, 2, 1, mode_max ? -1e300 : 1e300);
        CHECK_EQ_INT(d.action, SCHED_STOP);
        CHECK(d.cutoff == 1.0);
        sched_rung_info_t r[8];
        sched_policy_rungs(p, r, 8);
        CHECK_EQ_INT(r[0].recorded, 2);
        /* The NaN trial was judged at that rung: a later result there is not judged again. */
        CHECK_EQ_INT(result(p, 1, 2, 0.5).judged, 0);
        sched_policy_free(p);
    }
    /* Even the first result at a rung stops when it is NaN, and leaves no cutoff behind. */
    sched_policy_t *p = new_asha(1, 81, 1, 3, 1);
    REQUIRE(p);
    CHECK_EQ_INT(result(p, 0, 1, NAN).action, SCHED_STOP);
    sched_decision_t d = result(p, 1, 1, -5);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK(isnan(d.cutoff));
    sched_policy_free(p);
}

TEST(asha_stop_last_trials_false_trains_past_max_t)
{
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_ASHA,
                                .max_t = 9,
                                .grace_period = 1,
                                .reduction_factor = 3,
                                .brackets = 1,
                                .stop_last_trials = 0},
                      .mode_max = 1};
    sched_policy_t *p = NULL;
    char err[256];
    REQUIRE(sched_policy_new(&o, &p, err, sizeof err) == 0);
    sched_on_trial_add(p, 0);
    sched_on_trial_add(p, 1);
    /* At max_t's rung (milestone 9) the trial is judged, not completed. */
    sched_decision_t d = result(p, 0, 9, 5);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK(d.milestone == 9);
    CHECK_EQ_INT(result(p, 0, 20, 6).action, SCHED_CONTINUE);
    CHECK_EQ_INT(result(p, 1, 9, 1).action, SCHED_STOP); /* worse than the rung's cutoff */
    sched_policy_free(p);
    /* The default (stop_last_trials true) completes at max_t. */
    o.sched.stop_last_trials = 1;
    REQUIRE(sched_policy_new(&o, &p, err, sizeof err) == 0);
    sched_on_trial_add(p, 0);
    CHECK_EQ_INT(result(p, 0, 9, 5).action, SCHED_COMPLETE);
    sched_policy_free(p);
}

TEST(asha_completes_at_max_t)
{
    sched_policy_t *p = new_asha(1, 81, 1, 3, 1);
    REQUIRE(p);
    sched_on_trial_add(p, 0);
    sched_on_trial_add(p, 1);
    result(p, 0, 27, 10);
    sched_decision_t d = result(p, 1, 81, -1000); /* worse than anything, but done */
    CHECK_EQ_INT(d.action, SCHED_COMPLETE);
    CHECK_EQ_INT(d.judged, 1);
    CHECK_EQ_INT(d.bracket, 0);
    CHECK_EQ_INT(d.rung, -1);
    CHECK(isnan(d.milestone) && isnan(d.cutoff));
    CHECK(d.value == -1000);
    CHECK_EQ_INT(result(p, 0, 500, 1).action, SCHED_COMPLETE);
    /* Nothing was recorded for those results. */
    sched_rung_info_t r[8];
    REQUIRE(sched_policy_rungs(p, r, 8) == 4);
    CHECK_EQ_INT(r[3].recorded, 1);
    CHECK_EQ_INT(r[0].recorded + r[1].recorded + r[2].recorded, 0);
    sched_policy_free(p);
}

TEST(asha_judged_once_per_rung)
{
    sched_policy_t *p = new_asha(1, 81, 1, 3, 1);
    REQUIRE(p);
    sched_on_trial_add(p, 0);
    const double times[] = {1, 1.5, 2, 3, 3, 4, 8.9, 9, 10};
    const int judged_rung[] = {0, -1, -1, 1, -1, -1, -1, 2, -1};
    for (int i = 0; i < 9; i++) {
        sched_decision_t d = result(p, 0, times[i], 1);
        CHECK_EQ_INT(d.rung, judged_rung[i]);
        CHECK_EQ_INT(d.judged, judged_rung[i] >= 0);
    }
    sched_policy_free(p);
}

TEST(asha_jump_is_judged_at_highest_milestone_only)
{
    sched_policy_t *p = new_asha(1, 81, 1, 3, 1);
    REQUIRE(p);
    sched_on_trial_add(p, 0);
    CHECK_EQ_INT(result(p, 0, 1, 1).rung, 0);
    sched_decision_t d = result(p, 0, 10, 1); /* passed 3 and 9: judged at 9 only */
    CHECK_EQ_INT(d.rung, 2);
    CHECK(d.milestone == 9);
    d = result(p, 0, 11, 1); /* recorded at 9: already decided */
    CHECK_EQ_INT(d.judged, 0);
    sched_rung_info_t r[8];
    sched_policy_rungs(p, r, 8);
    CHECK_EQ_INT(r[0].recorded, 1);
    CHECK_EQ_INT(r[1].recorded, 0); /* milestone 3 never saw it */
    CHECK_EQ_INT(r[2].recorded, 1);
    /* Time going back below 9 reaches rung 3, where it is not recorded. */
    d = result(p, 0, 5, 1);
    CHECK_EQ_INT(d.rung, 1);
    sched_policy_free(p);
}

TEST(asha_unknown_duplicate_and_finished_trials)
{
    sched_policy_t *p = new_asha(1, 81, 1, 3, 1);
    REQUIRE(p);
    CHECK_EQ_INT(sched_on_trial_add(p, 5), 0);
    CHECK_EQ_INT(sched_on_trial_add(p, 5), SCHED_EINVAL);
    /* Ids need not be small: they go through a hash map. */
    const int64_t ids[] = {-1, (int64_t)1 << 40, INT64_MAX, INT64_MIN};
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(sched_on_trial_add(p, ids[i]), 0);
    CHECK_EQ_INT(result(p, INT64_MAX, 1, 2).judged, 1);
    CHECK_EQ_INT(result(p, INT64_MIN, 1, 1).action, SCHED_STOP);
    /* A result from a trial never announced joins it rather than being lost. */
    CHECK_EQ_INT(result(p, 77, 1, 3).judged, 1);
    CHECK_EQ_INT(sched_on_trial_add(p, 77), SCHED_EINVAL);
    /* After on_trial_complete nothing is judged any more. */
    sched_on_trial_complete(p, 5);
    sched_on_trial_complete(p, 5);    /* twice is harmless */
    sched_on_trial_complete(p, 1234); /* unknown is harmless */
    sched_decision_t d = result(p, 5, 1, 0);
    CHECK_EQ_INT(d.judged, 0);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    sched_policy_free(p);
}

/* A completed trial is forgotten (its slot reused, its id out of the map): deciding the
 * same stream with trials completed as soon as they end, or only at the very end, gives
 * the same decisions, for thousands of trials with ids spread far apart (the map's
 * deletions) and small ones (the done bits). */
TEST(asha_forgetting_completed_trials_decides_the_same)
{
    sched_policy_t *p[2] = {new_asha(0, 27, 1, 3, 3), new_asha(0, 27, 1, 3, 3)};
    REQUIRE(p[0] && p[1]);
    enum { N = 4000, LIVE = 40 };
    static int64_t id[N];
    static int iter[N], ended[N];
    uint64_t z = 11;
    for (int i = 0; i < N; i++) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        id[i] = i % 2 ? (int64_t)(z >> 20) : i; /* far apart, or small */
    }
    int next = 0, live = 0, differ = 0, judged = 0;
    int slot[LIVE];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < LIVE; i++)
            CHECK_EQ_INT(sched_on_trial_add(p[k], id[i]), 0);
    for (int i = 0; i < LIVE; i++)
        slot[i] = i;
    next = live = LIVE;
    for (long step = 0; live > 0 && step < 1000000; step++) {
        int s = (int)(step % LIVE), i = slot[s];
        if (i < 0) continue;
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        double v = (double)(z >> 40) / (double)(1 << 24) + (double)(i % 7);
        sched_decision_t d[2];
        double t = ++iter[i];
        for (int k = 0; k < 2; k++)
            sched_on_result(p[k], id[i], t, v, &d[k]);
        differ += d[0].action != d[1].action || d[0].judged != d[1].judged;
        judged += d[0].judged;
        if (d[0].action == SCHED_STOP || d[0].action == SCHED_COMPLETE) {
            ended[i] = 1;
            sched_on_trial_complete(p[0], id[i]); /* forgotten now; p[1] at the end */
            if (next < N) {
                for (int k = 0; k < 2; k++)
                    CHECK_EQ_INT(sched_on_trial_add(p[k], id[next]), 0);
                slot[s] = next++;
            } else {
                slot[s] = -1;
                live--;
            }
        }
    }
    CHECK_EQ_INT(differ, 0);
    CHECK(judged > N);
    CHECK_EQ_INT(next, N);
    sched_rung_info_t r0[16], r1[16];
    size_t n0 = sched_policy_rungs(p[0], r0, 16), n1 = sched_policy_rungs(p[1], r1, 16);
    CHECK_EQ_INT(n0, n1);
    for (size_t j = 0; j < n0 && j < n1; j++) {
        CHECK_EQ_INT(r0[j].recorded, r1[j].recorded);
        CHECK(r0[j].cutoff == r1[j].cutoff || (isnan(r0[j].cutoff) && isnan(r1[j].cutoff)));
    }
    /* a forgotten trial is judged no more, and cannot be announced again */
    for (int i = 0; i < N; i += 97) {
        if (!ended[i]) continue;
        sched_decision_t d;
        sched_on_result(p[0], id[i], 100, 0, &d);
        CHECK_EQ_INT(d.judged, 0);
        CHECK_EQ_INT(sched_on_trial_add(p[0], id[i]), SCHED_EINVAL);
    }
    sched_policy_free(p[0]);
    sched_policy_free(p[1]);
}

TEST(asha_many_rungs)
{
    /* rf 1.01 between 1 and 100: 463 rungs, more than one 64-bit word of flags. */
    sched_policy_t *p = new_asha(1, 100, 1, 1.01, 1);
    REQUIRE(p);
    size_t nr = sched_policy_rungs(p, NULL, 0);
    CHECK_EQ_INT(nr, 463);
    int judged = 0, stopped = 0;
    for (int i = 1; i < 100; i++)
        judged += result(p, 0, i, i).judged;
    for (int i = 1; i < 100; i++) {
        sched_decision_t d = result(p, 1, i, i - 0.5);
        if (d.action == SCHED_STOP) {
            stopped = i;
            break;
        }
    }
    /* Milestones 1.01^k reached by integer times 1..99: one per distinct floor. */
    CHECK_EQ_INT(judged, 99);
    CHECK_EQ_INT(stopped, 1); /* worse than the only value at the first rung */
    sched_policy_free(p);
}

TEST(asha_brackets_deterministic_per_seed)
{
    int a[200], b[200], c[200];
    int *out[3] = {a, b, c};
    const uint64_t seeds[3] = {11, 11, 12};
    for (int k = 0; k < 3; k++) {
        sched_opts_t o = asha_opts(1, 81, 1, 3, 3, seeds[k]);
        sched_policy_t *p = new_policy(&o);
        REQUIRE(p);
        for (int i = 0; i < 200; i++) {
            sched_on_trial_add(p, i);
            out[k][i] = result(p, i, 0.1, 1).bracket;
        }
        sched_policy_free(p);
    }
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);
}

TEST(asha_brackets_follow_softmax_weights)
{
    /* 81/1/3 with 3 brackets: 5, 4 and 3 rungs, so weights e^0, e^-1, e^-2. */
    sched_opts_t o = asha_opts(1, 81, 1, 3, 3, 2024);
    sched_policy_t *p = new_policy(&o);
    REQUIRE(p);
    int count[3] = {0, 0, 0};
    const int n = 30000;
    for (int i = 0; i < n; i++) {
        sched_on_trial_add(p, i);
        int br = result(p, i, 0.1, 1).bracket;
        REQUIRE(br >= 0 && br < 3);
        count[br]++;
    }
    double z = 1 + exp(-1) + exp(-2);
    const double want[3] = {1 / z, exp(-1) / z, exp(-2) / z}; /* .665 .245 .090 */
    for (int i = 0; i < 3; i++)
        CHECK_NEAR((double)count[i] / n, want[i], 0.015);
    sched_policy_free(p);
}

TEST(asha_rungs_report_cutoffs)
{
    sched_policy_t *p = new_asha(0, 81, 1, 3, 1); /* mode min: cutoffs in loss terms */
    REQUIRE(p);
    const double loss[] = {0.4, 0.1, 0.3, 0.2};
    for (int i = 0; i < 4; i++)
        result(p, i, 3, loss[i]);
    sched_rung_info_t r[4];
    REQUIRE(sched_policy_rungs(p, r, 4) == 4);
    CHECK_EQ_INT(r[1].recorded, 4);
    /* rewards -0.4..-0.1: 66.7th percentile is -0.2 -> 0.2 */
    CHECK_NEAR(r[1].cutoff, 0.2, 1e-15);
    CHECK(isnan(r[0].cutoff));
    sched_policy_free(p);
}

/* Replays tests/ref/asha_golden.txt (see tests/ref/asha_ref.py) decision by decision. */
TEST(asha_golden_replay)
{
    const char *src = getenv("TUNE_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/ref/asha_golden.txt", src ? src : ".");
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        REQUIRE(f);
    }
    char line[512];
    sched_policy_t *p = NULL;
    int *want_bracket = NULL;
    size_t nwant = 0;
    sched_rung_info_t rungs[256];
    size_t nrungs = 0, rung_i = 0;
    long results = 0, configs = 0, mismatches = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n') continue;
        long long trial;
        if (strncmp(line, "config ", 7) == 0) {
            int mode_max, brackets;
            double max_t, grace, rf;
            unsigned long long seed;
            REQUIRE(sscanf(line, "config %d %lf %lf %lf %d %llu", &mode_max, &max_t, &grace, &rf,
                           &brackets, &seed) == 6);
            sched_opts_t o = asha_opts(mode_max, max_t, grace, rf, brackets, seed);
            p = new_policy(&o);
            REQUIRE(p);
            configs++;
            rung_i = 0;
        } else if (strncmp(line, "add ", 4) == 0) {
            int br;
            REQUIRE(p && sscanf(line, "add %lld %d", &trial, &br) == 2);
            CHECK_EQ_INT(sched_on_trial_add(p, trial), 0);
            if ((size_t)trial >= nwant) {
                nwant = (size_t)trial + 64;
                want_bracket = realloc(want_bracket, nwant * sizeof *want_bracket);
                REQUIRE(want_bracket);
            }
            want_bracket[trial] = br;
        } else if (strncmp(line, "result ", 7) == 0) {
            double t, v, milestone, cutoff;
            char action[16];
            int judged, br, rung;
            REQUIRE(p && sscanf(line, "result %lld %lf %lf %15s %d %d %d %lf %lf", &trial, &t, &v,
                                action, &judged, &br, &rung, &milestone, &cutoff) == 9);
            sched_decision_t d = result(p, trial, t, v);
            const char *got = d.action == SCHED_STOP       ? "stop"
                              : d.action == SCHED_COMPLETE ? "complete"
                                                           : "continue";
            int same = strcmp(got, action) == 0 && d.judged == judged && d.bracket == br &&
                       br == want_bracket[trial] && d.rung == rung &&
                       (d.milestone == milestone || (isnan(d.milestone) && isnan(milestone))) &&
                       (d.cutoff == cutoff || (isnan(d.cutoff) && isnan(cutoff))) &&
                       (d.value == v || (isnan(d.value) && isnan(v)));
            if (!same && mismatches++ < 5)
                fprintf(stderr,
                        "golden line %ld: %s  got %s judged %d bracket %d rung %d milestone "
                        "%.17g cutoff %.17g\n",
                        lineno, line, got, d.judged, d.bracket, d.rung, d.milestone, d.cutoff);
            results++;
        } else if (strncmp(line, "complete ", 9) == 0) {
            REQUIRE(p && sscanf(line, "complete %lld", &trial) == 1);
            sched_on_trial_complete(p, trial);
        } else if (strncmp(line, "rung ", 5) == 0) {
            int br, rung;
            size_t recorded;
            double milestone, cutoff;
            REQUIRE(p && sscanf(line, "rung %d %d %lf %zu %lf", &br, &rung, &milestone, &recorded,
                                &cutoff) == 5);
            if (rung_i == 0) nrungs = sched_policy_rungs(p, rungs, 256);
            REQUIRE(rung_i < nrungs);
            sched_rung_info_t *r = &rungs[rung_i++];
            CHECK_EQ_INT(r->bracket, br);
            CHECK_EQ_INT(r->rung, rung);
            CHECK(r->milestone == milestone);
            CHECK_EQ_INT(r->recorded, recorded);
            CHECK(r->cutoff == cutoff || (isnan(r->cutoff) && isnan(cutoff)));
        } else if (strncmp(line, "end", 3) == 0) {
            CHECK_EQ_INT(rung_i, sched_policy_rungs(p, NULL, 0));
            sched_policy_free(p);
            p = NULL;
        } else {
            fprintf(stderr, "golden line %ld not understood: %s", lineno, line);
            CHECK(0);
        }
    }
    fclose(f);
    sched_policy_free(p);
    free(want_bracket);
    fprintf(stderr, "golden: %ld configs, %ld results, %ld mismatches\n", configs, results,
            mismatches);
    CHECK_EQ_INT(configs, 5);
    CHECK(results > 6000);
    CHECK_EQ_INT(mismatches, 0);
}

/* Not a test of speed (nothing is asserted about it): prints decisions per second. */
TEST(asha_throughput)
{
    sched_opts_t o = asha_opts(1, 1e9, 1, 3, 3, 5);
    sched_policy_t *p = new_policy(&o);
    REQUIRE(p);
    const int ntrials = 1000, iters = 1000;
    double *quality = malloc(ntrials * sizeof *quality);
    REQUIRE(quality);
    uint64_t s = 3;
    for (int i = 0; i < ntrials; i++) {
        sched_on_trial_add(p, i);
        quality[i] = (double)(rng_next(&s) >> 11) / 9007199254740992.0;
    }
    long judged = 0, stopped = 0;
    double t0 = now_s();
    for (int it = 1; it <= iters; it++)
        for (int i = 0; i < ntrials; i++) {
            sched_decision_t d;
            sched_on_result(p, i, it, quality[i] * it, &d);
            judged += d.judged;
            stopped += d.action == SCHED_STOP;
        }
    double dt = now_s() - t0;
    long n = (long)ntrials * iters;
    fprintf(stderr, "asha: %ld results over %d trials in %.3f s: %.0f results/s (%ld judged)\n", n,
            ntrials, dt, n / dt, judged);
    CHECK(judged > 0 && stopped > 0);
    sched_policy_free(p);

    /* Median stopping judges every result against every trial: O(trials) each. */
    sched_opts_t mo = {.sched = {.type = SPACE_SCHED_MEDIAN,
                                 .max_t = 1e9,
                                 .grace_period = 1,
                                 .min_samples_required = 3,
                                 .hard_stop = 1},
                       .mode_max = 1};
    p = new_policy(&mo);
    REQUIRE(p);
    const int mtrials = 100;
    judged = 0;
    t0 = now_s();
    for (int it = 1; it <= iters; it++)
        for (int i = 0; i < mtrials; i++) {
            sched_decision_t d;
            sched_on_result(p, i, it, quality[i] * it, &d);
            judged += d.judged;
        }
    dt = now_s() - t0;
    n = (long)mtrials * iters;
    fprintf(stderr, "median: %ld results over %d trials in %.3f s: %.0f results/s\n", n, mtrials,
            dt, n / dt);
    CHECK(judged > 0);
    free(quality);
    sched_policy_free(p);
}

/* ---- median stopping -------------------------------------------------------------- */
static sched_policy_t *new_median(int mode_max, double max_t, double grace, int min_samples)
{
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_MEDIAN,
                                .max_t = max_t,
                                .grace_period = grace,
                                .min_samples_required = min_samples,
                                .hard_stop = 1},
                      .mode_max = mode_max};
    return new_policy(&o);
}

TEST(median_stops_below_median_of_running_means)
{
    sched_policy_t *p = new_median(1, 100, 1, 2);
    REQUIRE(p);
    for (int i = 0; i < 4; i++)
        sched_on_trial_add(p, i);
    for (int t = 1; t <= 3; t++) {
        result(p, 0, t, 1); /* mean 1 */
        result(p, 1, t, t); /* means 1, 1.5, 2 */
    }
    sched_decision_t d = result(p, 2, 1, 0.9); /* others at t=1: {1, 1}: median 1 */
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK_EQ_INT(d.judged, 1);
    CHECK(d.cutoff == 1);
    CHECK(d.value == 0.9);
    CHECK_EQ_INT(d.bracket, -1);
    CHECK_EQ_INT(d.rung, -1);
    CHECK(isnan(d.milestone));
    d = result(p, 3, 3, 1.2); /* others at t=3: {1, 2}: median 1.5 */
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK(d.cutoff == 1.5);
    sched_policy_free(p);
}

TEST(median_tie_and_best_so_far_continue)
{
    sched_policy_t *p = new_median(1, 100, 1, 2);
    REQUIRE(p);
    for (int t = 1; t <= 3; t++) {
        result(p, 0, t, 1);
        result(p, 1, t, 3);
    }
    sched_decision_t d = result(p, 2, 2, 2); /* median of {1, 3} = 2: a tie continues */
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK_EQ_INT(d.judged, 1);
    CHECK(d.cutoff == 2);
    /* The best so far counts, not the last value (Ray's _best_result). */
    d = result(p, 2, 3, 0);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK(d.value == 2);
    sched_policy_free(p);
}

TEST(median_grace_and_min_samples)
{
    sched_policy_t *p = new_median(1, 100, 5, 3);
    REQUIRE(p);
    for (int t = 1; t <= 10; t++) {
        result(p, 0, t, 10);
        result(p, 1, t, 10);
    }
    sched_decision_t d = result(p, 2, 4, 0); /* before grace_period */
    CHECK_EQ_INT(d.judged, 0);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    d = result(p, 2, 6, 0); /* 2 others, 3 needed */
    CHECK_EQ_INT(d.judged, 0);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    for (int t = 1; t <= 6; t++)
        result(p, 3, t, 10);
    d = result(p, 2, 7, 0); /* trial 3 has not reached 7 yet: still 2 */
    CHECK_EQ_INT(d.judged, 0);
    d = result(p, 2, 6, 0); /* at 6 it has: 3 others */
    CHECK_EQ_INT(d.judged, 1);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    sched_policy_free(p);
}

TEST(median_running_mean_window)
{
    /* Results before grace_period are not averaged; later ones up to t are. */
    sched_policy_t *p = new_median(1, 100, 2, 1);
    REQUIRE(p);
    result(p, 0, 1, 100);
    result(p, 0, 3, 4); /* out of order on purpose */
    result(p, 0, 2, 2);
    result(p, 0, 4, 1000);
    CHECK(result(p, 1, 2, 0).cutoff == 2);   /* {2} */
    CHECK(result(p, 2, 3, 0).cutoff == 3);   /* {2, 4} */
    CHECK(result(p, 3, 2.5, 0).cutoff == 2); /* {2} */
    sched_policy_free(p);
}

TEST(median_even_count_and_mode_min)
{
    sched_policy_t *p = new_median(0, 100, 0, 2);
    REQUIRE(p);
    result(p, 0, 1, 1);
    result(p, 1, 1, 2);
    result(p, 2, 1, 4);
    result(p, 3, 1, 10);
    sched_decision_t d = result(p, 4, 1, 3.5); /* losses {1,2,4,10}: median 3 */
    CHECK(d.cutoff == 3);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    d = result(p, 5, 1, 3);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    sched_policy_free(p);
}

TEST(median_nan_is_worst)
{
    sched_policy_t *p = new_median(1, 100, 0, 1);
    REQUIRE(p);
    result(p, 0, 1, -1e300);
    sched_decision_t d = result(p, 1, 1, NAN);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK(isnan(d.value));
    /* A running average that holds a NaN is the worst: it does not stop others. */
    result(p, 2, 1, NAN);
    result(p, 2, 2, 5);
    d = result(p, 3, 2, -1e300); /* others at 2: only trial 2, mean -inf */
    CHECK_EQ_INT(d.judged, 1);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK(d.cutoff == -INFINITY);
    sched_policy_free(p);
}

TEST(median_completes_at_max_t)
{
    sched_policy_t *p = new_median(1, 10, 1, 1);
    REQUIRE(p);
    result(p, 0, 5, 1);
    sched_decision_t d = result(p, 0, 10, -100); /* worse than anything, but done */
    CHECK_EQ_INT(d.action, SCHED_COMPLETE);
    CHECK_EQ_INT(d.judged, 1);
    CHECK(d.value == -100);
    /* A finished trial still counts for the others: its last time 10 >= 7. */
    d = result(p, 1, 7, 0);
    CHECK_EQ_INT(d.judged, 1);
    CHECK(d.cutoff == 1);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    sched_policy_free(p);
}

TEST(median_complete_and_duplicates)
{
    sched_policy_t *p = new_median(1, 100, 0, 1);
    REQUIRE(p);
    CHECK_EQ_INT(sched_on_trial_add(p, 3), 0);
    CHECK_EQ_INT(sched_on_trial_add(p, 3), SCHED_EINVAL);
    result(p, 3, 1, 5);
    sched_on_trial_complete(p, 3);
    CHECK_EQ_INT(result(p, 3, 2, 0).judged, 0); /* it said it was done */
    /* Its results still count for the others (Ray keeps finished trials). */
    CHECK_EQ_INT(result(p, 4, 1, 1).action, SCHED_STOP);
    CHECK_EQ_INT(sched_policy_rungs(p, NULL, 0), 0);
    sched_policy_free(p);
}

/* The words of a resume, as life.c recorded them before the policies owned them: ASHA's
 * promotion names its rung and bar, any other resume is the plain one. */
TEST(resume_words_of_asha_and_fifo)
{
    sched_opts_t o = asha_opts(1, 9, 1, 3, 1, 0);
    o.sched.promotion = 1;
    sched_policy_t *p = new_policy(&o);
    REQUIRE(p);
    CHECK_EQ_INT((int)sched_policy_caps(p), (int)(SCHED_CAP_TIME | SCHED_CAP_PAUSE));
    sched_decision_t why = {.rung = 1, .bracket = 0, .milestone = 3, .value = 0.5, .cutoff = 0.25};
    char buf[600];
    CHECK_STR(
        sched_policy_word_resume(p, &why, "training_iteration", 2, "iteration:3", buf, sizeof buf),
        "promote");
    CHECK_STR(buf, "promoted from rung 1 (milestone 3): 0.5 is in the rung's top 1/rf (bar 0.25); "
                   "attempt 2 resumes from iteration:3");
    why.rung = -1;
    CHECK_STR(sched_policy_word_resume(p, &why, "training_iteration", 4, "scratch (no checkpoint)",
                                       buf, sizeof buf),
              "resume");
    CHECK_STR(buf, "resumed (nothing new pending): attempt 4 from scratch (no checkpoint)");
    sched_policy_free(p);
    o = (sched_opts_t){.sched = {.type = SPACE_SCHED_FIFO}};
    p = new_policy(&o);
    REQUIRE(p);
    CHECK_EQ_INT((int)sched_policy_caps(p), 0);
    CHECK_STR(sched_policy_word_resume(p, NULL, "t", 2, "ck", buf, sizeof buf), "resume");
    CHECK_STR(buf, "resumed (nothing new pending): attempt 2 from ck");
    CHECK_EQ_INT(sched_policy_drop(p, NULL, 0, NULL), -1);
    sched_policy_free(p);
}

/* ---- hyperband ---------------------------------------------------------------------- */
/* Ray Tune's HyperbandSuite (python/ray/tune/tests/test_trial_scheduler.py), ported: the
 * same setups and the same decisions, with Ray's mock runner replaced by what the loop
 * asks (choose_next for the promoted trials, sched_policy_drop for the ones halved away
 * while paused). Ray's default band (max_t 81, reduction_factor 3) has brackets (n, r):
 * (5, 81), (8, 27), (15, 9), (34, 3), (81, 1): 143 trials. */
static sched_policy_t *new_hb(int mode_max, double max_t, double rf, int stop_last, int ntrials)
{
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_HYPERBAND,
                                .max_t = max_t,
                                .reduction_factor = rf,
                                .stop_last_trials = stop_last},
                      .mode_max = mode_max};
    sched_policy_t *p = new_policy(&o);
    for (int i = 0; p && i < ntrials; i++)
        if (sched_on_trial_add(p, i) != 0) fprintf(stderr, "cannot add trial %d\n", i);
    return p;
}

/* The bracket a trial joined (a result at time 0 changes nothing). */
static int hb_bracket_of(sched_policy_t *p, int64_t trial)
{
    return result(p, trial, 0, 0).bracket;
}

/* Of the trials in paused (n of them, kept in order), how many the policy promotes
 * (choose_next, one at a time, as free slices would take them) and how many it ends
 * (sched_policy_drop); the promoted ones go to out (may be NULL). */
static void hb_settle(sched_policy_t *p, int64_t *paused, size_t n, size_t *promoted,
                      size_t *dropped, int64_t *out)
{
    int64_t v[200];
    memcpy(v, paused, n * sizeof *v);
    size_t m = n;
    *promoted = *dropped = 0;
    sched_decision_t why;
    long k;
    while ((k = sched_policy_drop(p, v, m, &why)) >= 0) {
        CHECK(why.action == SCHED_STOP || why.action == SCHED_COMPLETE);
        memmove(v + k, v + k + 1, (m - (size_t)k - 1) * sizeof *v);
        m--;
        ++*dropped;
    }
    while ((k = sched_policy_choose_next(p, v, m, 0, &why)) >= 0) {
        CHECK_EQ_INT(why.judged, 1);
        if (out) out[*promoted] = v[k];
        ++*promoted;
        memmove(v + k, v + k + 1, (m - (size_t)k - 1) * sizeof *v);
        m--;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* testConfigSameEta, testConfigSameEtaSmall: the brackets of a band, filled in order. */
TEST(hyperband_brackets_as_ray_plans_them)
{
    sched_policy_t *p = new_hb(1, 81, 3, 1, 144);
    REQUIRE(p);
    int first[] = {0, 5, 13, 28, 62, 143}; /* the first trial of each bracket */
    for (int b = 0; b < 6; b++) {
        CHECK_EQ_INT(hb_bracket_of(p, first[b]), b);
        if (b > 0) CHECK_EQ_INT(hb_bracket_of(p, first[b] - 1), b - 1);
    }
    sched_rung_info_t r[8];
    REQUIRE(sched_policy_rungs(p, r, 8) == 6);
    double ms[] = {81, 27, 9, 3, 1, 81}; /* a second band starts over */
    for (int b = 0; b < 6; b++) {
        CHECK(r[b].milestone == ms[b]);
        CHECK_EQ_INT(r[b].rung, 0);
    }
    sched_policy_free(p);

    /* max_t 1000, reduction_factor 10: 4 brackets, (4, 1000) first and (1000, 1) last */
    p = new_hb(1, 1000, 10, 1, 1159);
    REQUIRE(p);
    CHECK_EQ_INT(hb_bracket_of(p, 3), 0);
    CHECK_EQ_INT(hb_bracket_of(p, 4), 1);
    CHECK_EQ_INT(hb_bracket_of(p, 158), 3); /* 4 + 20 + 134 before it */
    CHECK_EQ_INT(hb_bracket_of(p, 1157), 3);
    CHECK_EQ_INT(hb_bracket_of(p, 1158), 4);
    REQUIRE(sched_policy_rungs(p, r, 8) == 5);
    CHECK(r[0].milestone == 1000 && r[3].milestone == 1 && r[4].milestone == 1000);
    sched_policy_free(p);

    /* max_t 1: a band is one bracket of one trial */
    p = new_hb(1, 1, 3, 1, 2);
    REQUIRE(p);
    CHECK_EQ_INT(hb_bracket_of(p, 0), 0);
    CHECK_EQ_INT(hb_bracket_of(p, 1), 1);
    CHECK(sched_policy_rungs(p, r, 8) == 2 && r[1].milestone == 1);
    sched_policy_free(p);

    /* testFilterNoneBracket: max_t 20 gives a bracket of r0 = int(20 / 27) = 0, skipped:
     * bands of (4, 20), (6, 6), (12, 2); 100 trials fill four bands and three brackets */
    p = new_hb(1, 20, 3, 1, 100);
    REQUIRE(p);
    CHECK_EQ_INT(hb_bracket_of(p, 21), 2);
    CHECK_EQ_INT(hb_bracket_of(p, 22), 3);
    CHECK_EQ_INT(sched_policy_rungs(p, r, 8), 15);
    CHECK(r[3].milestone == 20);
    CHECK_EQ_INT(sched_policy_choose_next(p, NULL, 0, 100, NULL), -1); /* a new trial */
    sched_policy_free(p);
}

/* testSuccessiveHalving (and testAlternateMetricsMin with mode min): the band's last
 * bracket (81 trials from r = 1) halves four times; in each round every trial but the
 * last pauses at the milestone and the last one, the best, continues. */
static void hb_successive_halving(int mode_max)
{
    sched_policy_t *p = new_hb(mode_max, 81, 3, 1, 143);
    REQUIRE(p);
    int64_t cur[81], paused[81], next[81];
    size_t n = 81;
    for (size_t i = 0; i < n; i++)
        cur[i] = 62 + (int64_t)i;
    double units = 1;
    for (int x = 0; x < 4; x++) {
        sched_decision_t d = {0};
        for (size_t i = 0; i < n; i++) {
            d = result(p, cur[i], units, mode_max ? (double)i : -(double)i);
            if (i < n - 1) {
                CHECK_EQ_INT(d.action, SCHED_PAUSE);
                paused[i] = cur[i];
            }
        }
        CHECK_EQ_INT(d.action, SCHED_CONTINUE);
        CHECK_EQ_INT(d.rung, x);
        CHECK(d.milestone == units);
        size_t promoted, dropped;
        hb_settle(p, paused, n - 1, &promoted, &dropped, next);
        size_t want = (size_t)ceil((double)n / 3);
        CHECK_EQ_INT((int)(promoted + 1), (int)want);
        CHECK_EQ_INT((int)dropped, (int)(n - want));
        next[promoted] = cur[n - 1];
        n = promoted + 1;
        qsort(next, n, sizeof *next, cmp_i64);
        memcpy(cur, next, n * sizeof *cur);
        units *= 3;
    }
    CHECK_EQ_INT((int)n, 1);
    CHECK_EQ_INT((int)cur[0], 142);
    sched_policy_free(p);
}

TEST(hyperband_successive_halving)
{
    hb_successive_halving(1);
}

TEST(hyperband_alternate_metric_min)
{
    hb_successive_halving(0);
}

/* testHalvingStop: results in reverse order, the last (the worst) is halved away; and
 * testStopsLastOne: the band's first bracket (5 trials to max_t) has nothing to halve,
 * its trials end at max_t (Ray pauses them until the last arrives, then stops them all:
 * here each completes at once, see hyperband.c). */
TEST(hyperband_halving_stop_and_last_round)
{
    sched_policy_t *p = new_hb(1, 81, 3, 1, 13);
    REQUIRE(p);
    sched_decision_t d;
    for (int i = 7; i >= 0; i--) {
        d = result(p, 5 + i, 27, i);
        if (i > 0) CHECK_EQ_INT(d.action, SCHED_PAUSE);
    }
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK_EQ_INT(d.judged, 1);
    CHECK(d.milestone == 27 && d.cutoff == 5); /* the worst of the best three */
    for (int i = 0; i < 5; i++) {
        d = result(p, i, 81, i);
        CHECK_EQ_INT(d.action, SCHED_COMPLETE);
        CHECK(d.milestone == 81);
    }
    sched_policy_free(p);
}

/* testTrialErrored / testTrialEndedEarly: a trial that ends leaves its bracket, which
 * halves without it; testTrialErrored2 / testTrialEndedEarly2: the last trial's end is
 * what halves the bracket. */
TEST(hyperband_trial_ended_early)
{
    sched_policy_t *p = new_hb(1, 81, 3, 1, 8);
    REQUIRE(p);
    sched_on_trial_complete(p, 7);
    CHECK_EQ_INT(result(p, 5, 27, 10).action, SCHED_PAUSE);
    CHECK_EQ_INT(result(p, 6, 27, 10).action, SCHED_CONTINUE);
    sched_policy_free(p);

    p = new_hb(1, 81, 3, 1, 13);
    REQUIRE(p);
    int64_t paused[7];
    for (int i = 0; i < 7; i++) {
        CHECK_EQ_INT(result(p, 5 + i, 27, 10).action, SCHED_PAUSE);
        paused[i] = 5 + i;
    }
    sched_on_trial_complete(p, 12);
    size_t promoted, dropped;
    int64_t up[7];
    hb_settle(p, paused, 7, &promoted, &dropped, up);
    CHECK_EQ_INT((int)promoted, 3); /* ceil(8 / 3) */
    CHECK_EQ_INT((int)dropped, 4);
    /* ties keep the later added (Ray's stable sort, the best last) */
    CHECK(up[0] == 9 && up[1] == 10 && up[2] == 11);
    sched_policy_free(p);
}

/* testAddAfterHalving: a trial added to a bracket that has halved gets the same budget
 * (it runs to the bracket's current milestone, not just the first one). */
TEST(hyperband_add_after_halving)
{
    sched_policy_t *p = new_hb(1, 81, 3, 1, 6);
    REQUIRE(p);
    CHECK_EQ_INT(result(p, 5, 27, 0).action, SCHED_CONTINUE);
    CHECK_EQ_INT(sched_on_trial_add(p, 6), 0);
    CHECK_EQ_INT(hb_bracket_of(p, 6), 1);
    CHECK_EQ_INT(result(p, 6, 27, 12).action, SCHED_CONTINUE);
    /* past the bracket's last milestone (81): Ray pauses it until trial 5 gets there and
     * then stops both; here it completes at once (hyperband.c: the last round) */
    CHECK_EQ_INT(result(p, 6, 27 + 81, 12).action, SCHED_COMPLETE);
    sched_policy_free(p);
}

/* testJumpingTime: a trial whose time jumps past the next milestone waits at the halving
 * instead of continuing. */
TEST(hyperband_jumping_time)
{
    sched_policy_t *p = new_hb(1, 81, 3, 1, 81); /* the last bracket holds 19 */
    REQUIRE(p);
    for (int i = 0; i < 18; i++)
        CHECK_EQ_INT(result(p, 62 + i, 1, i).action, SCHED_PAUSE);
    sched_decision_t d = result(p, 80, 4, 17);
    CHECK_EQ_INT(d.action, SCHED_PAUSE);
    CHECK_EQ_INT(d.judged, 1);
    sched_rung_info_t r[8];
    REQUIRE(sched_policy_rungs(p, r, 8) == 5);
    CHECK(r[4].milestone == 3 && r[4].rung == 1 && r[4].recorded == 1);
    sched_policy_free(p);
}

/* testSmallMaxTStop / testSmallMaxTContinue: max_t 8, reduction_factor 2: brackets (4, 8)
 * and (4, 4); with stop_last_trials false nothing ends at max_t. */
static void hb_small_max_t(int stop_last)
{
    sched_policy_t *p = new_hb(1, 8, 2, stop_last, 8);
    REQUIRE(p);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(result(p, i, 4, 10 * (i + 1)).action, SCHED_CONTINUE);
    for (int i = 4; i < 7; i++)
        CHECK_EQ_INT(result(p, i, 4, 10 * (i - 3)).action, SCHED_PAUSE);
    CHECK_EQ_INT(result(p, 7, 4, 40).action, SCHED_CONTINUE);
    int64_t paused[] = {4, 5, 6};
    size_t promoted, dropped;
    int64_t up[3];
    hb_settle(p, paused, 3, &promoted, &dropped, up);
    CHECK_EQ_INT((int)dropped, 2);
    CHECK(promoted == 1 && up[0] == 6);
    sched_action_t end = stop_last ? SCHED_COMPLETE : SCHED_CONTINUE;
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(result(p, i, 8, 10 * (i + 1)).action, end);
    CHECK_EQ_INT(result(p, 6, 8, 30).action, end);
    CHECK_EQ_INT(result(p, 7, 8, 40).action, end);
    sched_policy_free(p);
}

TEST(hyperband_small_max_t_stop)
{
    hb_small_max_t(1);
}

TEST(hyperband_small_max_t_continue)
{
    hb_small_max_t(0);
}

/* testSmallMaxTOverstepStop / Continue: the second bracket's trials report 8 at once, past
 * the halving at 4: the halving ends the bracket (the good ones are past its last
 * milestone) unless stop_last_trials is false. */
static void hb_overstep(int stop_last)
{
    sched_policy_t *p = new_hb(1, 8, 2, stop_last, 8);
    REQUIRE(p);
    for (int i = 4; i < 7; i++)
        CHECK_EQ_INT(result(p, i, 8, 10 * (i - 3)).action, SCHED_PAUSE);
    sched_decision_t d = result(p, 7, 8, 40);
    CHECK_EQ_INT(d.action, stop_last ? SCHED_COMPLETE : SCHED_CONTINUE);
    int64_t paused[] = {4, 5, 6};
    size_t promoted, dropped;
    hb_settle(p, paused, 3, &promoted, &dropped, NULL);
    CHECK_EQ_INT((int)dropped, stop_last ? 3 : 2);
    CHECK_EQ_INT((int)promoted, stop_last ? 0 : 1);
    sched_policy_free(p);
}

TEST(hyperband_overstep_stop)
{
    hb_overstep(1);
}

TEST(hyperband_overstep_continue)
{
    hb_overstep(0);
}

/* testRemove: a trial removed before it ran leaves its bracket; a later one takes its
 * place, and a removed trial is not judged. */
TEST(hyperband_remove)
{
    sched_policy_t *p = new_hb(1, 81, 3, 1, 4);
    REQUIRE(p);
    CHECK_EQ_INT(result(p, 0, 1, 5).action, SCHED_CONTINUE);
    sched_on_trial_complete(p, 1);
    CHECK_EQ_INT(sched_on_trial_add(p, 4), 0);
    CHECK_EQ_INT(sched_on_trial_add(p, 5), 0);
    CHECK_EQ_INT(hb_bracket_of(p, 5), 0); /* 4 live trials before it: room for a fifth */
    sched_on_trial_add(p, 6);
    CHECK_EQ_INT(hb_bracket_of(p, 6), 1);
    sched_on_trial_complete(p, 5);
    CHECK_EQ_INT(result(p, 5, 81, 1).judged, 0);
    CHECK_EQ_INT(sched_on_trial_add(p, 5), SCHED_EINVAL);
    sched_policy_free(p);
}

/* The words of each decision, as the loop records them, and of a promotion. */
TEST(hyperband_words)
{
    sched_policy_t *p = new_hb(1, 8, 2, 1, 8);
    REQUIRE(p);
    char buf[300];
    sched_decision_t d = result(p, 4, 4, 1);
    CHECK_STR(sched_policy_word(p, &d, "trial_00004", "training_iteration", 4, buf, sizeof buf),
              "pause");
    CHECK_STR(buf, "reached milestone 4 of bracket 1: paused until every trial of the bracket "
                   "has, then the bracket halves");
    result(p, 5, 4, 2);
    result(p, 6, 4, 3);
    d = result(p, 7, 4, 4);
    CHECK_STR(sched_policy_word(p, &d, "trial_00007", "training_iteration", 4, buf, sizeof buf),
              "continue");
    CHECK_STR(buf, "in the top 1/rf of bracket 1 at milestone 4 (bar 3): trains on");
    int64_t paused[] = {4, 5, 6};
    sched_decision_t why;
    CHECK_EQ_INT(sched_policy_drop(p, paused, 3, &why), 0);
    CHECK_STR(sched_policy_word(p, &why, "trial_00004", "training_iteration", 4, buf, sizeof buf),
              "stop");
    CHECK_STR(buf, "halved away: bracket 1 at milestone 4 keeps its top 1/rf, 1 is below the "
                   "bar 3");
    CHECK_EQ_INT(sched_policy_choose_next(p, paused, 3, 0, &why), 2);
    char rb[600];
    CHECK_STR(
        sched_policy_word_resume(p, &why, "training_iteration", 2, "checkpoint_4", rb, sizeof rb),
        "promote");
    CHECK_STR(rb, "promoted in bracket 1 from milestone 4: 3 is in the top 1/rf (bar 3); "
                  "attempt 2 resumes from checkpoint_4");
    d = result(p, 0, 8, 1);
    CHECK_STR(sched_policy_word(p, &d, "trial_00000", "iter", 8, buf, sizeof buf), "complete");
    CHECK_STR(buf, "reached the last milestone of bracket 0 (iter >= 8)");
    CHECK_STR(
        sched_policy_word_resume(p, NULL, "iter", 3, "scratch (no checkpoint)", rb, sizeof rb),
        "resume");
    CHECK_STR(rb, "resumed (nothing new pending): attempt 3 from scratch (no checkpoint)");
    CHECK_EQ_INT((int)sched_policy_caps(p),
                 (int)(SCHED_CAP_TIME | SCHED_CAP_PAUSE | SCHED_CAP_DROP));
    CHECK_STR(sched_policy_name(p), "hyperband");
    sched_policy_free(p);
}

TEST(hyperband_rejects_bad_options)
{
    sched_opts_t o = {
        .sched = {.type = SPACE_SCHED_HYPERBAND, .max_t = 0.5, .reduction_factor = 3}};
    expect_policy_error(o, "hyperband: max_t must be a number >= 1 (got 0.5)");
    o.sched.max_t = NAN;
    expect_policy_error(o, "hyperband: max_t must be a number >= 1");
    o.sched.max_t = 81;
    o.sched.reduction_factor = 1;
    expect_policy_error(o, "hyperband: reduction_factor must be a number > 1 (got 1)");
    o.sched.max_t = 1e9;
    o.sched.reduction_factor = 1.1;
    expect_policy_error(o, "hyperband: reduction_factor 1.1 gives 218 brackets");
}

/* space.json's "hyperband" scheduler: Ray's defaults, its three keys, nothing else. */
TEST(hyperband_settings)
{
    const char *txt = "{\"name\": \"hb\", \"metric\": \"loss\", \"mode\": \"min\", \"command\": "
                      "[\"true\"], \"scheduler\": {\"type\": \"hyperband\"}, \"space\": {\"x\": "
                      "{\"uniform\": [0, 1]}}}";
    space_t *sp = NULL;
    char err[512];
    REQUIRE(space_parse(txt, strlen(txt), "space.json", &sp, err, sizeof err) == 0);
    const space_settings_t *set = space_settings(sp);
    CHECK_EQ_INT((int)set->sched.type, SPACE_SCHED_HYPERBAND);
    CHECK(set->sched.max_t == 81 && set->sched.reduction_factor == 3);
    CHECK_EQ_INT(set->sched.stop_last_trials, 1);
    sched_opts_t o = {.sched = set->sched, .mode_max = 0, .space = sp};
    sched_policy_t *p = new_policy(&o);
    REQUIRE(p);
    CHECK_STR(sched_policy_name(p), "hyperband");
    sched_policy_free(p);
    space_free(sp);
}

/* ---- pool ------------------------------------------------------------------------- */
static sched_pool_t *new_pool(const int *ids, int n, int cpus)
{
    sched_pool_t *p = NULL;
    char err[256] = "";
    if (sched_pool_new(ids, n, cpus, &p, err, sizeof err) != 0) {
        fprintf(stderr, "sched_pool_new: %s\n", err);
        return NULL;
    }
    return p;
}

static const int IDS4[4] = {0, 1, 2, 3};

static void slice_str(const sched_pool_t *p, const sched_slice_t *s, char *buf, size_t n)
{
    sched_slice_format(p, s, buf, n);
}

TEST(pool_new_errors)
{
    sched_pool_t *p = NULL;
    char err[256];
    CHECK_EQ_INT(sched_pool_new(NULL, 2, 4, &p, err, sizeof err), SCHED_EINVAL);
    CHECK_CONTAINS(err, "GPU pool: 2 GPUs given without a list of ids");
    CHECK_EQ_INT(sched_pool_new(IDS4, -1, 4, &p, err, sizeof err), SCHED_EINVAL);
    CHECK_CONTAINS(err, "GPU pool: -1 GPUs given without a list of ids");
    CHECK_EQ_INT(sched_pool_new(IDS4, 4, -2, &p, err, sizeof err), SCHED_EINVAL);
    CHECK_CONTAINS(err, "GPU pool: the number of CPUs must be >= 0 (got -2)");
    const int neg[2] = {0, -3};
    CHECK_EQ_INT(sched_pool_new(neg, 2, 4, &p, err, sizeof err), SCHED_EINVAL);
    CHECK_CONTAINS(err, "GPU pool: GPU id -3 is not valid (ids are >= 0)");
    const int dup[3] = {4, 5, 4};
    CHECK_EQ_INT(sched_pool_new(dup, 3, 4, &p, err, sizeof err), SCHED_EINVAL);
    CHECK_CONTAINS(err, "GPU pool: GPU 4 is listed twice");
    CHECK(p == NULL);
    sched_pool_free(NULL);
}

static void expect_check_error(const sched_pool_t *p, double gpus, int cpus, const char *msg)
{
    char err[256] = "";
    CHECK_EQ_INT(sched_pool_check(p, gpus, cpus, err, sizeof err), SCHED_ENOFIT);
    CHECK_CONTAINS(err, msg);
}

TEST(pool_check_errors)
{
    sched_pool_t *p = new_pool(IDS4, 2, 4);
    REQUIRE(p);
    expect_check_error(p, 3, 1,
                       "gpus_per_trial 3 needs 3 GPUs but only 2 are available (GPUs 0,1)");
    expect_check_error(p, 0.3, 1,
                       "gpus_per_trial 0.3 must be 0, a whole number, or 1/k such as "
                       "0.5 or 0.25");
    expect_check_error(p, 1.5, 1, "gpus_per_trial 1.5 must be 0, a whole number, or 1/k");
    expect_check_error(p, -1, 1, "gpus_per_trial must be a number >= 0 (got -1)");
    expect_check_error(p, NAN, 1, "gpus_per_trial must be a number >= 0 (got nan)");
    expect_check_error(p, INFINITY, 1, "gpus_per_trial must be a number >= 0 (got inf)");
    expect_check_error(p, 65, 1, "gpus_per_trial 65 is more than the 64 GPUs one trial may use");
    expect_check_error(p, 1.0 / 2000, 1, "gpus_per_trial 0.0005: at most 1000 trials can share");
    expect_check_error(p, 0, 5, "cpus_per_trial 5 needs 5 CPUs but only 4 are available");
    expect_check_error(p, 0, -1, "cpus_per_trial must be >= 0 (got -1)");
    char err[64];
    CHECK_EQ_INT(sched_pool_check(p, 0, 4, err, sizeof err), 0);
    CHECK_EQ_INT(sched_pool_check(p, 0.25, 1, err, sizeof err), 0);
    CHECK_EQ_INT(sched_pool_check(p, 0.333, 1, err, sizeof err), 0); /* taken as 1/3 */
    CHECK_EQ_INT(sched_pool_check(p, 1.0 / 3, 0, err, sizeof err), 0);
    CHECK_EQ_INT(sched_pool_check(p, 2, 1, err, sizeof err), 0);
    sched_pool_free(p);

    sched_pool_t *none = new_pool(NULL, 0, 8);
    REQUIRE(none);
    expect_check_error(none, 0.5, 1, "gpus_per_trial 0.5 needs a GPU but none is available");
    expect_check_error(none, 1, 1, "gpus_per_trial 1 needs a GPU but none is available");
    CHECK_EQ_INT(sched_pool_check(none, 0, 8, err, sizeof err), 0);
    sched_slice_t s;
    CHECK_EQ_INT(sched_pool_acquire(none, 1, 1, &s), SCHED_ENOFIT);
    sched_pool_free(none);
}

TEST(pool_fractions_best_fit)
{
    sched_pool_t *p = new_pool(IDS4, 4, 64);
    REQUIRE(p);
    sched_slice_t s[8];
    char buf[64];
    for (int i = 0; i < 4; i++) { /* four quarters pack onto one device */
        REQUIRE(sched_pool_acquire(p, 0.25, 1, &s[i]) == 0);
        CHECK_EQ_INT(s[i].ngpus, 1);
        CHECK_EQ_INT(s[i].gpus[0], 0);
        CHECK_EQ_INT(s[i].share_ppm, 250000);
    }
    slice_str(p, &s[0], buf, sizeof buf);
    CHECK_STR(buf, "gpu:0@1/4");
    REQUIRE(sched_pool_acquire(p, 0.25, 1, &s[4]) == 0); /* device 0 is full */
    CHECK_EQ_INT(s[4].gpus[0], 1);
    REQUIRE(sched_pool_acquire(p, 0.5, 1, &s[5]) == 0); /* most used that fits: 1 */
    CHECK_EQ_INT(s[5].gpus[0], 1);
    slice_str(p, &s[5], buf, sizeof buf);
    CHECK_STR(buf, "gpu:1@1/2");
    REQUIRE(sched_pool_acquire(p, 0.5, 1, &s[6]) == 0); /* 1 has 1/4 left: next device */
    CHECK_EQ_INT(s[6].gpus[0], 2);
    REQUIRE(sched_pool_acquire(p, 0.25, 1, &s[7]) == 0); /* the fuller of 1 and 2 */
    CHECK_EQ_INT(s[7].gpus[0], 1);
    double used;
    int total, cu, ct;
    sched_pool_usage(p, &used, &total, &cu, &ct);
    CHECK_NEAR(used, 2.5, 1e-12);
    CHECK_EQ_INT(total, 4);
    CHECK_EQ_INT(cu, 8);
    CHECK_EQ_INT(ct, 64);
    sched_slice_t w;
    REQUIRE(sched_pool_acquire(p, 1, 1, &w) == 0); /* the one untouched device */
    CHECK_EQ_INT(w.gpus[0], 3);
    CHECK_EQ_INT(sched_pool_acquire(p, 1, 1, &w), SCHED_EAGAIN);
    sched_slice_t h;
    REQUIRE(sched_pool_acquire(p, 0.5, 1, &h) == 0); /* device 2's other half */
    CHECK_EQ_INT(h.gpus[0], 2);
    CHECK_EQ_INT(sched_pool_acquire(p, 0.25, 1, &w), SCHED_EAGAIN);
    sched_pool_free(p);
}

TEST(pool_thirds_add_up)
{
    sched_pool_t *p = new_pool(IDS4, 1, 8);
    REQUIRE(p);
    sched_slice_t s[3], x;
    for (int i = 0; i < 3; i++)
        REQUIRE(sched_pool_acquire(p, 1.0 / 3, 1, &s[i]) == 0);
    CHECK_EQ_INT(s[0].share_ppm, 333333);
    CHECK_EQ_INT(sched_pool_acquire(p, 1.0 / 3, 1, &x), SCHED_EAGAIN);
    char buf[32];
    sched_slice_format(p, &s[2], buf, sizeof buf);
    CHECK_STR(buf, "gpu:0@1/3");
    sched_pool_release(p, &s[1]);
    CHECK_EQ_INT(sched_pool_acquire(p, 0.333, 1, &x), 0);
    sched_pool_free(p);
}

TEST(pool_whole_devices_and_eagain)
{
    sched_pool_t *p = new_pool(IDS4, 4, 64);
    REQUIRE(p);
    sched_slice_t a, b, c;
    char buf[64];
    REQUIRE(sched_pool_acquire(p, 2, 2, &a) == 0);
    sched_slice_devices(p, &a, buf, sizeof buf);
    CHECK_STR(buf, "0,1");
    REQUIRE(sched_pool_acquire(p, 2, 2, &b) == 0);
    sched_slice_format(p, &b, buf, sizeof buf);
    CHECK_STR(buf, "gpu:2,3");
    CHECK_EQ_INT(b.share_ppm, 1000000);
    CHECK_EQ_INT(sched_pool_acquire(p, 2, 2, &c), SCHED_EAGAIN);
    CHECK_EQ_INT(sched_pool_acquire(p, 0.25, 1, &c), SCHED_EAGAIN);
    CHECK_EQ_INT(sched_pool_acquire(p, 0, 1, &c), 0); /* CPU trials still run */
    CHECK_EQ_INT(sched_pool_acquire(p, 5, 1, &c), SCHED_ENOFIT);
    sched_pool_release(p, &a);
    REQUIRE(sched_pool_acquire(p, 2, 2, &c) == 0);
    CHECK_EQ_INT(c.gpus[0], 0);
    CHECK_EQ_INT(c.gpus[1], 1);
    sched_pool_free(p);
}

TEST(pool_keeps_free_runs_whole)
{
    sched_pool_t *p = new_pool(IDS4, 4, 64);
    REQUIRE(p);
    sched_slice_t a, b, c, d;
    REQUIRE(sched_pool_acquire(p, 1, 1, &a) == 0);
    CHECK_EQ_INT(a.gpus[0], 0);
    sched_pool_release(p, &a);
    /* With device 1 busy: a single device goes to isolated 0, keeping 2,3 together. */
    REQUIRE(sched_pool_acquire(p, 1, 1, &a) == 0); /* 0 */
    REQUIRE(sched_pool_acquire(p, 1, 1, &b) == 0); /* 1 */
    sched_pool_release(p, &a);
    REQUIRE(sched_pool_acquire(p, 0.5, 1, &c) == 0);
    CHECK_EQ_INT(c.gpus[0], 0); /* a fraction, too, leaves the pair 2,3 free */
    REQUIRE(sched_pool_acquire(p, 2, 1, &d) == 0);
    CHECK_EQ_INT(d.gpus[0], 2);
    CHECK_EQ_INT(d.gpus[1], 3);
    sched_pool_free(p);
}

TEST(pool_multi_gpu_prefers_contiguous_then_peers)
{
    const int ids[6] = {0, 1, 2, 3, 4, 5};
    sched_pool_t *p = new_pool(ids, 6, 64);
    REQUIRE(p);
    sched_slice_t a, b;
    /* Busy 1: the 2-GPU trial takes a contiguous pair in the shortest free run
     * (2..5 is the only run long enough), not 0 and 2. */
    REQUIRE(sched_pool_acquire(p, 1, 1, &a) == 0); /* 0 */
    REQUIRE(sched_pool_acquire(p, 1, 1, &b) == 0); /* 1 */
    sched_pool_release(p, &a);
    REQUIRE(sched_pool_acquire(p, 2, 1, &a) == 0);
    CHECK_EQ_INT(a.gpus[0], 2);
    CHECK_EQ_INT(a.gpus[1], 3);
    sched_pool_free(p);

    /* Peers beat contiguity: 0-2 and 1-3 are NVLink pairs. */
    p = new_pool(ids, 4, 64);
    REQUIRE(p);
    sched_pool_set_peer(p, 0, 2);
    sched_pool_set_peer(p, 1, 3);
    sched_pool_set_peer(p, 1, 1);  /* ignored */
    sched_pool_set_peer(p, 0, 99); /* ignored */
    REQUIRE(sched_pool_acquire(p, 2, 1, &a) == 0);
    CHECK_EQ_INT(a.gpus[0], 0);
    CHECK_EQ_INT(a.gpus[1], 2);
    REQUIRE(sched_pool_acquire(p, 2, 1, &b) == 0);
    CHECK_EQ_INT(b.gpus[0], 1);
    CHECK_EQ_INT(b.gpus[1], 3);
    sched_pool_release(p, &a);
    sched_pool_release(p, &b);
    /* A contiguous set of peers beats a scattered one. */
    sched_pool_set_peer(p, 2, 3);
    REQUIRE(sched_pool_acquire(p, 2, 1, &a) == 0);
    CHECK_EQ_INT(a.gpus[0], 2);
    CHECK_EQ_INT(a.gpus[1], 3);
    sched_pool_free(p);
}

TEST(pool_devices_use_given_ids)
{
    const int ids[3] = {4, 5, 7};
    sched_pool_t *p = new_pool(ids, 3, 8);
    REQUIRE(p);
    sched_slice_t a, b, c;
    char buf[64];
    REQUIRE(sched_pool_acquire(p, 2, 2, &a) == 0);
    sched_slice_devices(p, &a, buf, sizeof buf);
    CHECK_STR(buf, "4,5");
    CHECK_EQ_INT(a.gpus[0], 0); /* slices hold indices; names come from the pool */
    sched_slice_format(p, &a, buf, sizeof buf);
    CHECK_STR(buf, "gpu:4,5");
    REQUIRE(sched_pool_acquire(p, 0.25, 1, &b) == 0);
    sched_slice_format(p, &b, buf, sizeof buf);
    CHECK_STR(buf, "gpu:7@1/4");
    REQUIRE(sched_pool_acquire(p, 0, 2, &c) == 0);
    sched_slice_devices(p, &c, buf, sizeof buf);
    CHECK_STR(buf, "");
    sched_slice_format(p, &c, buf, sizeof buf);
    CHECK_STR(buf, "cpu:2");
    sched_slice_format(p, &a, buf, 6); /* truncated, still terminated */
    CHECK_STR(buf, "gpu:4");
    sched_pool_free(p);
}

TEST(pool_share_format_round_trips)
{
    sched_pool_t *p = new_pool(IDS4, 1, 1);
    REQUIRE(p);
    for (int k = 2; k <= 1000; k++) {
        sched_slice_t s;
        REQUIRE(sched_pool_acquire(p, 1.0 / k, 0, &s) == 0);
        CHECK_EQ_INT(s.share_ppm, 1000000 / k);
        char buf[32], want[32];
        sched_slice_format(p, &s, buf, sizeof buf);
        snprintf(want, sizeof want, "gpu:0@1/%d", k);
        CHECK_STR(buf, want);
        sched_pool_release(p, &s);
    }
    double used;
    sched_pool_usage(p, &used, NULL, NULL, NULL);
    CHECK(used == 0);
    sched_pool_free(p);
}

TEST(pool_cpus_are_counted)
{
    sched_pool_t *p = new_pool(IDS4, 4, 5);
    REQUIRE(p);
    sched_slice_t a, b, c;
    REQUIRE(sched_pool_acquire(p, 0, 3, &a) == 0);
    CHECK_EQ_INT(sched_pool_acquire(p, 1, 3, &b), SCHED_EAGAIN); /* GPUs free, CPUs not */
    REQUIRE(sched_pool_acquire(p, 1, 2, &b) == 0);
    CHECK_EQ_INT(sched_pool_acquire(p, 0, 1, &c), SCHED_EAGAIN);
    REQUIRE(sched_pool_acquire(p, 0.5, 0, &c) == 0);
    CHECK_EQ_INT(sched_pool_acquire(p, 0, 6, &c), SCHED_ENOFIT);
    int cu, ct;
    sched_pool_usage(p, NULL, NULL, &cu, &ct);
    CHECK_EQ_INT(cu, 5);
    sched_pool_release(p, &a);
    sched_pool_usage(p, NULL, NULL, &cu, &ct);
    CHECK_EQ_INT(cu, 2);
    sched_pool_free(p);
}

/* Thousands of random acquire/release with a fixed seed; after every operation the
 * pool's books must agree with the slices held, no device may be over capacity, and
 * EAGAIN must mean the request really did not fit. */
TEST(pool_random_stress)
{
    const int ids[6] = {3, 1, 4, 0, 5, 2};
    for (int withpeers = 0; withpeers <= 1; withpeers++) {
        sched_pool_t *p = new_pool(ids, 6, 24);
        REQUIRE(p);
        if (withpeers) {
            sched_pool_set_peer(p, 0, 1);
            sched_pool_set_peer(p, 2, 3);
            sched_pool_set_peer(p, 0, 3);
            sched_pool_set_peer(p, 4, 5);
        }
        const double reqs[] = {0, 0.25, 1.0 / 3, 0.5, 1, 1, 2, 3, 4, 0.125};
        sched_slice_t held[256];
        int nheld = 0;
        uint64_t s = 12345 + withpeers;
        long ok = 0, again = 0;
        for (int op = 0; op < 20000; op++) {
            uint64_t r = rng_next(&s);
            if ((r & 3) == 0 && nheld > 0) {
                int i = (int)((r >> 8) % (uint64_t)nheld);
                sched_pool_release(p, &held[i]);
                held[i] = held[--nheld];
            } else if (nheld < 256) {
                double g = reqs[(r >> 8) % 10];
                int cpus = (int)((r >> 16) % 4);
                /* What is free before the request, from our own books. */
                long dev[6] = {0};
                int cpu_used = 0;
                for (int h = 0; h < nheld; h++) {
                    for (int k = 0; k < held[h].ngpus; k++)
                        dev[held[h].gpus[k]] += held[h].share_ppm;
                    cpu_used += held[h].cpus;
                }
                int nfree = 0, room = 0;
                uint32_t share = g < 1 && g > 0 ? (uint32_t)(1000000 / lround(1 / g)) : 1000000;
                for (int k = 0; k < 6; k++) {
                    nfree += dev[k] == 0;
                    room += dev[k] + share <= 1000000;
                }
                int fits =
                    cpu_used + cpus <= 24 && (g == 0 || (g < 1 ? room > 0 : nfree >= (int)g));
                int rc = sched_pool_acquire(p, g, cpus, &held[nheld]);
                CHECK_EQ_INT(rc, fits ? 0 : SCHED_EAGAIN);
                if (rc == 0) {
                    sched_slice_t *sl = &held[nheld++];
                    CHECK_EQ_INT(sl->ngpus, g == 0 ? 0 : g < 1 ? 1 : (int)g);
                    CHECK_EQ_INT(sl->cpus, cpus);
                    for (int a = 0; a < sl->ngpus; a++)
                        for (int b = a + 1; b < sl->ngpus; b++)
                            CHECK(sl->gpus[a] != sl->gpus[b]);
                    ok++;
                } else {
                    again++;
                }
            }
            long dev[6] = {0};
            int cpu_used = 0;
            for (int h = 0; h < nheld; h++) {
                for (int k = 0; k < held[h].ngpus; k++) {
                    REQUIRE(held[h].gpus[k] >= 0 && held[h].gpus[k] < 6);
                    dev[held[h].gpus[k]] += held[h].share_ppm;
                }
                cpu_used += held[h].cpus;
            }
            long total = 0;
            for (int k = 0; k < 6; k++) {
                REQUIRE(dev[k] <= 1000000);
                total += dev[k];
            }
            double used;
            int gt, cu, ct;
            sched_pool_usage(p, &used, &gt, &cu, &ct);
            REQUIRE(cu == cpu_used && cu <= ct);
            REQUIRE(fabs(used - total / 1e6) < 1e-9);
        }
        CHECK(ok > 1000 && again > 1000);
        while (nheld > 0)
            sched_pool_release(p, &held[--nheld]);
        double used;
        int cu;
        sched_pool_usage(p, &used, NULL, &cu, NULL);
        CHECK(used == 0 && cu == 0);
        sched_pool_free(p);
    }
}

/* ---- several objectives: MO-ASHA's rung rule (ranked rungs) ------------------------------ */
/* ASHA or HyperBand with k objectives (constrained: results carry a violation), trials
 * 0..ntrials-1 added. */
static sched_policy_t *new_ranked(space_sched_type_t type, int promotion, double rf, size_t k,
                                  int constrained, int ntrials)
{
    sched_opts_t o = asha_opts(0, 81, 1, rf, 1, 1);
    o.sched.type = type;
    o.sched.promotion = promotion;
    o.nobjectives = k;
    o.constrained = constrained;
    sched_policy_t *p = new_policy(&o);
    for (int i = 0; p && i < ntrials; i++)
        if (sched_on_trial_add(p, i) != 0) fprintf(stderr, "cannot add trial %d\n", i);
    return p;
}

/* A result whose point is (o0, o1) with violation viol; value (reported) is o0. */
static sched_decision_t point2(sched_policy_t *p, int64_t trial, double time, double o0, double o1,
                               double viol)
{
    double obj[2] = {o0, o1};
    sched_point_t pt = {obj, viol, o0};
    sched_decision_t d;
    memset(&d, 0x5a, sizeof d); /* every field must be written */
    sched_on_result_point(p, trial, time, &pt, &d);
    return d;
}

static const char *word_of(sched_policy_t *p, const sched_decision_t *d, char *buf, size_t n)
{
    sched_policy_word(p, d, "trial_00001", "training_iteration", 1, buf, n);
    return buf;
}

TEST(mo_options_refused_where_one_metric_is_judged)
{
    sched_opts_t o = asha_opts(0, 81, 1, 3, 1, 0);
    o.nobjectives = 2;
    o.sched.type = SPACE_SCHED_MEDIAN;
    expect_policy_error(o, "scheduler: median judges one metric and cannot take 2 objectives; use "
                           "\"asha\" or \"hyperband\"");
    o.sched.type = SPACE_SCHED_PBT;
    o.sched.perturbation_interval = 10;
    o.sched.quantile_fraction = 0.25;
    expect_policy_error(o, "scheduler: pbt judges one metric and cannot take 2 objectives");
    /* FIFO judges nothing, so it takes any number; ASHA and HyperBand rank */
    sched_policy_t *p;
    o = asha_opts(0, 81, 1, 3, 1, 0);
    o.nobjectives = 2;
    o.sched.type = SPACE_SCHED_FIFO;
    REQUIRE((p = new_policy(&o)) != NULL);
    CHECK_EQ_INT(sched_policy_ranked(p), 0);
    sched_decision_t d = point2(p, 0, 5, 1, 2, 0);
    CHECK_EQ_INT(d.judged, 0);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    sched_policy_free(p);
    for (int t = 0; t < 2; t++) {
        o.sched.type = t ? SPACE_SCHED_HYPERBAND : SPACE_SCHED_ASHA;
        REQUIRE((p = new_policy(&o)) != NULL);
        CHECK_EQ_INT(sched_policy_ranked(p), 1);
        sched_policy_free(p);
    }
    /* one objective, no constraints: today's rule */
    o.nobjectives = 1;
    o.sched.type = SPACE_SCHED_ASHA;
    REQUIRE((p = new_policy(&o)) != NULL);
    CHECK_EQ_INT(sched_policy_ranked(p), 0);
    sched_policy_free(p);
    /* one objective under constraints: ranked (feasible first) */
    o.constrained = 1;
    REQUIRE((p = new_policy(&o)) != NULL);
    CHECK_EQ_INT(sched_policy_ranked(p), 1);
    sched_policy_free(p);
}

/* The stopping variant: the first point at a rung continues; a dominated one stops where
 * only the top ceil(n/rf) go on; a point of the front continues. */
TEST(mo_asha_dominated_stops_front_continues)
{
    sched_policy_t *p = new_ranked(SPACE_SCHED_ASHA, 0, 2, 2, 0, 8);
    REQUIRE(p);
    char w[300];
    sched_decision_t d = point2(p, 0, 1, 1, 1, 0);
    CHECK_EQ_INT(d.judged, 1);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK_EQ_INT(d.place, 1);
    CHECK_EQ_INT(d.among, 1);
    CHECK_EQ_INT(d.top, 1);
    CHECK_EQ_INT(d.front, 0);
    CHECK(d.value == 1 && isnan(d.cutoff));
    CHECK_STR(word_of(p, &d, w, sizeof w),
              "rung 0 (milestone 1): 1st of 1 by Pareto rank (front 0); the top 1 continue");
    /* (2, 2) is dominated by (1, 1): 2nd of 2, the top ceil(2/2) = 1 continue */
    d = point2(p, 1, 1, 2, 2, 0);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK_EQ_INT(d.place, 2);
    CHECK_EQ_INT(d.among, 2);
    CHECK_EQ_INT(d.front, 1);
    CHECK_STR(word_of(p, &d, w, sizeof w),
              "rung 0 (milestone 1): 2nd of 2 by Pareto rank (front 1); only the top 1 continue");
    /* (0.5, 3) is on the front with (1, 1), and first in it by the first objective */
    d = point2(p, 2, 1, 0.5, 3, 0);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK_EQ_INT(d.front, 0);
    CHECK_EQ_INT(d.place, 1);
    CHECK_EQ_INT(d.top, 2);
    /* dominated by every point so far: 4th of 4, the top 2 continue */
    d = point2(p, 3, 1, 5, 5, 0);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK_EQ_INT(d.place, 4);
    CHECK_EQ_INT(d.front, 2);
    /* judged once per rung; the next rung starts afresh */
    d = point2(p, 0, 1.5, 9, 9, 0);
    CHECK_EQ_INT(d.judged, 0);
    d = point2(p, 0, 2, 9, 9, 0);
    CHECK_EQ_INT(d.judged, 1);
    CHECK_EQ_INT(d.rung, 1);
    CHECK_EQ_INT(d.among, 1);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    sched_rung_info_t r[8];
    size_t nr = sched_policy_rungs(p, r, 8);
    REQUIRE(nr >= 2);
    CHECK_EQ_INT(r[0].recorded, 4);
    CHECK(isnan(r[0].cutoff));
    CHECK_EQ_INT(r[1].recorded, 1);
    /* max_t completes, as with one objective */
    d = point2(p, 2, 81, 1, 1, 0);
    CHECK_EQ_INT(d.action, SCHED_COMPLETE);
    sched_policy_free(p);
}

/* Feasible points rank before infeasible ones however good these are, the infeasible by
 * violation: a feasible dominated point goes on where infeasible front points stop. */
TEST(mo_asha_infeasible_stops_before_feasible)
{
    sched_policy_t *p = new_ranked(SPACE_SCHED_ASHA, 0, 2, 2, 1, 8);
    REQUIRE(p);
    char w[300];
    /* the first point at a rung continues, even infeasible: nothing is better yet */
    sched_decision_t d = point2(p, 0, 1, 0, 0, 1);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK(d.violation == 1);
    /* a feasible point, dominated in the objectives, is ahead of it */
    d = point2(p, 1, 1, 5, 5, 0);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK_EQ_INT(d.place, 1);
    /* infeasible by 0.5: behind the feasible one, ahead of the one infeasible by 1 */
    d = point2(p, 2, 1, 0, 0, 0.5);
    CHECK_EQ_INT(d.place, 2);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE); /* top ceil(3/2) = 2 */
    CHECK_STR(word_of(p, &d, w, sizeof w),
              "rung 0 (milestone 1): 2nd of 3 by Pareto rank (infeasible: violation 0.5); the "
              "top 2 continue");
    /* another feasible one, worse than everything in the objectives: 2nd of 4 */
    d = point2(p, 3, 1, 9, 9, 0);
    CHECK_EQ_INT(d.place, 2);
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    /* infeasible by 2: last of 5, the top 3 continue */
    d = point2(p, 4, 1, -1, -1, 2);
    CHECK_EQ_INT(d.place, 5);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    /* a constrained key never reported (violation +inf) ranks after all of them */
    d = point2(p, 5, 1, -5, -5, INFINITY);
    CHECK_EQ_INT(d.place, 6);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    sched_policy_free(p);
}

/* A NaN objective stops its trial, even first at a rung, and stays out of the rung's
 * points (as a NaN metric does with one objective). */
TEST(mo_asha_nan_objective_stops_and_stays_out)
{
    sched_policy_t *p = new_ranked(SPACE_SCHED_ASHA, 0, 3, 2, 0, 4);
    REQUIRE(p);
    char w[300];
    sched_decision_t d = point2(p, 0, 1, 1, NAN, 0);
    CHECK_EQ_INT(d.judged, 1);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK_EQ_INT(d.place, 0);
    CHECK_EQ_INT(d.front, -1);
    CHECK_STR(word_of(p, &d, w, sizeof w),
              "reported a NaN objective at rung 0 (milestone 1): diverged; it stays out of the "
              "rung's points");
    sched_rung_info_t r[8];
    REQUIRE(sched_policy_rungs(p, r, 8) >= 1);
    CHECK_EQ_INT(r[0].recorded, 0);
    d = point2(p, 1, 1, 7, 7, 0); /* the first point there */
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    CHECK_EQ_INT(d.among, 1);
    /* a NaN first objective too; the decision's value is the reported first objective */
    d = point2(p, 2, 1, NAN, 1, 0);
    CHECK_EQ_INT(d.action, SCHED_STOP);
    CHECK(isnan(d.value));
    sched_policy_free(p);
}

/* One objective without constraints takes today's path: the same decisions as
 * sched_on_result on the same values, field for field (Ray's cutoff percentile). */
TEST(mo_one_objective_is_todays_asha)
{
    for (int promotion = 0; promotion < 2; promotion++) {
        sched_opts_t o = asha_opts(0, 81, 1, 3, 3, 7);
        o.sched.promotion = promotion;
        sched_policy_t *a = new_policy(&o);
        o.nobjectives = 1;
        sched_policy_t *b = new_policy(&o);
        REQUIRE(a && b);
        CHECK_EQ_INT(sched_policy_ranked(b), 0);
        uint64_t rng = 11;
        for (int i = 0; i < 300; i++) {
            CHECK_EQ_INT(sched_on_trial_add(a, i), 0);
            CHECK_EQ_INT(sched_on_trial_add(b, i), 0);
        }
        int stops = 0;
        for (int step = 0; step < 3000; step++) {
            int64_t trial = (int64_t)(rng_next(&rng) % 300);
            double time = (double)(1 + rng_next(&rng) % 90);
            double v = (double)(rng_next(&rng) % 1000) / 100.0;
            if (rng_next(&rng) % 50 == 0) v = NAN;
            sched_decision_t da = result(a, trial, time, v), db;
            memset(&db, 0x5a, sizeof db);
            sched_point_t pt = {&v, 0, v};
            sched_on_result_point(b, trial, time, &pt, &db);
            CHECK(memcmp(&da, &db, offsetof(sched_decision_t, place)) == 0 ||
                  (isnan(da.value) && isnan(db.value) && da.action == db.action));
            CHECK_EQ_INT(db.place, 0);
            stops += da.action == SCHED_STOP;
            int64_t paused[4] = {trial, (trial + 1) % 300, (trial + 2) % 300, (trial + 3) % 300};
            sched_decision_t wa, wb;
            CHECK_EQ_INT(sched_policy_choose_next(a, paused, 4, 0, &wa),
                         sched_policy_choose_next(b, paused, 4, 0, &wb));
        }
        CHECK(stops > 0);
        sched_policy_free(a);
        sched_policy_free(b);
    }
}

/* The promotion variant: every trial pauses at the rung; choose_next promotes those among
 * the top floor(n/rf) of the rung's points, best placed first, and no other. */
TEST(mo_asha_promotion_by_pareto_rank)
{
    sched_policy_t *p = new_ranked(SPACE_SCHED_ASHA, 1, 2, 2, 0, 8);
    REQUIRE(p);
    char w[300];
    /* a chain, each dominated by the one before: (1,1) (2,2) ... arriving worst first */
    for (int i = 3; i >= 0; i--) {
        sched_decision_t d = point2(p, i, 1, i + 1, i + 1, 0);
        CHECK_EQ_INT(d.action, SCHED_PAUSE);
        if (i == 0) {
            CHECK_EQ_INT(d.place, 1);
            CHECK_EQ_INT(d.among, 4);
            CHECK_EQ_INT(d.top, 2);
            CHECK_STR(word_of(p, &d, w, sizeof w),
                      "reached rung 0 (milestone 1): 1st of 4 by Pareto rank (front 0); paused "
                      "until it is among the top floor(n/rf) of the rung (2 of 4 now)");
        }
    }
    int64_t paused[4] = {3, 2, 1, 0};
    sched_decision_t why;
    long k = sched_policy_choose_next(p, paused, 4, 5, &why);
    CHECK_EQ_INT(k, 3); /* trial 0: 1st of 4 */
    CHECK_EQ_INT(why.place, 1);
    CHECK_EQ_INT(why.top, 2);
    CHECK(why.value == 1 && isnan(why.cutoff));
    CHECK_STR(
        sched_policy_word_resume(p, &why, "training_iteration", 2, "iteration:1", w, sizeof w),
        "promote");
    CHECK_STR(w, "promoted from rung 0 (milestone 1): 1st of 4 by Pareto rank (front 0), among "
                 "the top 2; attempt 2 resumes from iteration:1");
    k = sched_policy_choose_next(p, paused, 3, 5, &why); /* trial 0 resumed */
    CHECK_EQ_INT(k, 2);                                  /* trial 1: 2nd of 4 */
    CHECK_EQ_INT(why.place, 2);
    CHECK_EQ_INT(sched_policy_choose_next(p, paused, 2, 5, &why), -1);
    /* a fifth point, on the front: it is promotable, the 3rd of the chain still not */
    CHECK_EQ_INT(point2(p, 4, 1, 0.5, 9, 0).action, SCHED_PAUSE);
    int64_t more[3] = {3, 2, 4};
    CHECK_EQ_INT(sched_policy_choose_next(p, more, 3, 5, &why), 2);
    CHECK_EQ_INT(why.among, 5);
    /* promoted trial 0 reaches rung 1 (milestone 2) and pauses there: first at it, but
     * floor(1/2) = 0 may go on, so it waits */
    sched_decision_t d = point2(p, 0, 2, 1, 1, 0);
    CHECK_EQ_INT(d.action, SCHED_PAUSE);
    CHECK_EQ_INT(d.rung, 1);
    int64_t one[1] = {0};
    CHECK_EQ_INT(sched_policy_choose_next(p, one, 1, 5, &why), -1);
    /* a NaN objective stops, as in the stopping variant */
    CHECK_EQ_INT(point2(p, 5, 1, NAN, 1, 0).action, SCHED_STOP);
    sched_policy_free(p);
}

/* Promotion's choice depends on the rung's points, not on the order they came in: the
 * same eight points in two orders promote the same trials. */
TEST(mo_asha_promotion_is_the_same_in_any_order)
{
    const double pts[8][2] = {{1, 8}, {2, 6}, {3, 3}, {6, 2}, {8, 1}, {4, 4}, {5, 7}, {9, 9}};
    int64_t got[2][8];
    size_t ngot[2];
    for (int order = 0; order < 2; order++) {
        sched_policy_t *p = new_ranked(SPACE_SCHED_ASHA, 1, 3, 2, 0, 8);
        REQUIRE(p);
        int64_t paused[8];
        for (int j = 0; j < 8; j++) {
            int i = order ? 7 - j : (j * 3) % 8; /* reversed, or a stride through them */
            CHECK_EQ_INT(point2(p, i, 1, pts[i][0], pts[i][1], 0).action, SCHED_PAUSE);
            paused[j] = i;
        }
        size_t m = 8, n = 0;
        sched_decision_t why;
        long k;
        while ((k = sched_policy_choose_next(p, paused, m, 5, &why)) >= 0) {
            got[order][n++] = paused[k];
            memmove(paused + k, paused + k + 1, (m - (size_t)k - 1) * sizeof *paused);
            m--;
        }
        ngot[order] = n;
        sched_policy_free(p);
    }
    CHECK_EQ_INT(ngot[0], 2); /* floor(8/3) */
    CHECK_EQ_INT(ngot[1], 2);
    qsort(got[0], ngot[0], sizeof got[0][0], cmp_i64);
    qsort(got[1], ngot[1], sizeof got[1][0], cmp_i64);
    CHECK(memcmp(got[0], got[1], 2 * sizeof got[0][0]) == 0);
    /* both from the front (the five non-dominated points), none of the dominated ones */
    for (int j = 0; j < 2; j++)
        CHECK(got[0][j] <= 4);
}

/* In the stopping variant a decision depends on the points at the rung, not on the order
 * they came in: the last of eight gets the same place after any order of the others. */
TEST(mo_asha_place_is_the_same_in_any_order)
{
    const double pts[8][2] = {{1, 8}, {2, 6}, {3, 3}, {6, 2}, {8, 1}, {4, 4}, {5, 7}, {4.5, 3.5}};
    size_t place[3];
    sched_action_t act[3];
    for (int order = 0; order < 3; order++) {
        sched_policy_t *p = new_ranked(SPACE_SCHED_ASHA, 0, 3, 2, 0, 8);
        REQUIRE(p);
        for (int j = 0; j < 7; j++) {
            int i = order == 0 ? j : order == 1 ? 6 - j : (j * 5) % 7;
            point2(p, i, 1, pts[i][0], pts[i][1], 0);
        }
        sched_decision_t d = point2(p, 7, 1, pts[7][0], pts[7][1], 0);
        place[order] = d.place;
        act[order] = d.action;
        CHECK_EQ_INT(d.front, 1); /* (4.5, 3.5) is dominated by (3, 3) only */
        sched_policy_free(p);
    }
    CHECK_EQ_INT(place[0], place[1]);
    CHECK_EQ_INT(place[0], place[2]);
    /* 7th of 8: the front's five, then (4,4) first in the second front (best first
     * objective), then it; the top 3 go on */
    CHECK_EQ_INT(act[0], SCHED_STOP);
    CHECK_EQ_INT(place[0], 7);
    CHECK_EQ_INT(act[1], act[0]);
}

/* HyperBand's bracket 1 of max_t 81, eta 3 (trials 5..12, milestone 27) halves to the top
 * ceil(8/3) = 3 by Pareto rank; the kept set is the same whatever order the trials reach
 * the milestone in; an infeasible front point and a NaN one are halved away first. */
static void hb_ranked_halving(int constrained, int reverse, int64_t *kept, size_t *nkept)
{
    /* (1,5), (5,1), (3,3) make the front; (4,4) is behind (3,3) only; then a chain */
    const double pts[8][2] = {{1, 5}, {5, 1}, {3, 3}, {4, 4}, {6, 6}, {7, 7}, {NAN, 0}, {9, 9}};
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_HYPERBAND,
                                .max_t = 81,
                                .reduction_factor = 3,
                                .stop_last_trials = 1},
                      .nobjectives = 2,
                      .constrained = constrained};
    sched_policy_t *p = new_policy(&o);
    *nkept = 0;
    REQUIRE(p);
    for (int i = 0; i < 13; i++)
        sched_on_trial_add(p, i);
    int64_t paused[8];
    sched_decision_t d = {0};
    for (int j = 0; j < 8; j++) {
        int i = reverse ? 7 - j : (j * 3) % 8;
        /* with constraints, (1,5) is infeasible */
        d = point2(p, 5 + i, 27, pts[i][0], pts[i][1], constrained && i == 0 ? 0.5 : 0);
        if (j < 7) {
            CHECK_EQ_INT(d.action, SCHED_PAUSE);
            paused[j] = 5 + i;
        }
    }
    CHECK_EQ_INT(d.judged, 1);
    CHECK_EQ_INT(d.among, 8);
    CHECK_EQ_INT(d.top, 3);
    CHECK(isnan(d.cutoff));
    int64_t last = 5 + (reverse ? 0 : (7 * 3) % 8); /* the trial that reported last */
    if (d.action == SCHED_CONTINUE) kept[(*nkept)++] = last;
    size_t promoted, dropped;
    hb_settle(p, paused, 7, &promoted, &dropped, kept + *nkept);
    *nkept += promoted;
    CHECK_EQ_INT(*nkept, 3);
    CHECK_EQ_INT(dropped + *nkept, 8 - (d.action == SCHED_STOP ? 1 : 0));
    qsort(kept, *nkept, sizeof *kept, cmp_i64);
    sched_policy_free(p);
}

TEST(mo_hyperband_halves_by_pareto_rank)
{
    int64_t a[8], b[8];
    size_t na, nb;
    hb_ranked_halving(0, 0, a, &na);
    hb_ranked_halving(0, 1, b, &nb);
    REQUIRE(na == 3 && nb == 3);
    CHECK(a[0] == 5 && a[1] == 6 && a[2] == 7); /* the front */
    CHECK(memcmp(a, b, sizeof a[0] * 3) == 0);
    /* (1,5) infeasible: (4,4), next behind the front, takes its place */
    hb_ranked_halving(1, 0, a, &na);
    hb_ranked_halving(1, 1, b, &nb);
    REQUIRE(na == 3 && nb == 3);
    CHECK(a[0] == 6 && a[1] == 7 && a[2] == 8);
    CHECK(memcmp(a, b, sizeof a[0] * 3) == 0);
}

/* The words of a ranked halving, for the trial that halves the bracket and for those it
 * promotes or drops. */
TEST(mo_hyperband_words)
{
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_HYPERBAND,
                                .max_t = 81,
                                .reduction_factor = 3,
                                .stop_last_trials = 1},
                      .nobjectives = 2};
    sched_policy_t *p = new_policy(&o);
    REQUIRE(p);
    for (int i = 0; i < 13; i++)
        sched_on_trial_add(p, i);
    for (int i = 0; i < 7; i++) /* (1,1) first, then a chain behind it */
        CHECK_EQ_INT(point2(p, 5 + i, 27, i + 1, i + 1, 0).action, SCHED_PAUSE);
    char w[300];
    sched_decision_t d = point2(p, 12, 27, 0.5, 50, 0); /* on the front with (1,1) */
    CHECK_EQ_INT(d.action, SCHED_CONTINUE);
    sched_policy_word(p, &d, "trial_00012", "training_iteration", 27, w, sizeof w);
    CHECK_STR(w, "in the top 3 of bracket 1 at milestone 27: 1st of 8 by Pareto rank (front 0); "
                 "trains on");
    int64_t paused[7] = {5, 6, 7, 8, 9, 10, 11};
    sched_decision_t why;
    long k = sched_policy_drop(p, paused, 7, &why);
    REQUIRE(k >= 0);
    CHECK_EQ_INT(why.action, SCHED_STOP);
    sched_policy_word(p, &why, "t", "training_iteration", 27, w, sizeof w);
    CHECK_CONTAINS(w, "halved away: bracket 1 at milestone 27 keeps its top 3; it is ");
    CHECK_CONTAINS(w, " of 8 by Pareto rank (front ");
    while (sched_policy_drop(p, paused, 7, &why) >= 0) {
    }
    k = sched_policy_choose_next(p, paused, 7, 0, &why);
    CHECK_EQ_INT(k, 0); /* trial 5, (1,1) */
    CHECK_STR(
        sched_policy_word_resume(p, &why, "training_iteration", 2, "iteration:27", w, sizeof w),
        "promote");
    CHECK_STR(w, "promoted in bracket 1 from milestone 27: 2nd of 8 by Pareto rank (front 0), "
                 "among the top 3; attempt 2 resumes from iteration:27");
    sched_policy_free(p);
}

/* The cost of ranked rungs, for the record (no timed assertion): asha_throughput's run with
 * two conflicting objectives, so that each judgement ranks its rung again (pareto_rank over
 * up to 1000 points, most of them on few fronts). */
TEST(mo_asha_throughput)
{
    sched_opts_t o = asha_opts(0, 1e9, 1, 3, 3, 5);
    o.nobjectives = 2;
    sched_policy_t *p = new_policy(&o);
    REQUIRE(p);
    const int ntrials = 1000, iters = 1000;
    double *quality = malloc(ntrials * sizeof *quality);
    REQUIRE(quality);
    uint64_t s = 3;
    for (int i = 0; i < ntrials; i++) {
        sched_on_trial_add(p, i);
        quality[i] = (double)(rng_next(&s) >> 11) / 9007199254740992.0;
    }
    long judged = 0, stopped = 0;
    double t0 = now_s();
    for (int it = 1; it <= iters; it++)
        for (int i = 0; i < ntrials; i++) {
            sched_decision_t d;
            double obj[2] = {quality[i] / it, (1 - quality[i]) * (1 + (i % 7))};
            sched_point_t pt = {obj, 0, obj[0]};
            sched_on_result_point(p, i, it, &pt, &d);
            judged += d.judged;
            stopped += d.action == SCHED_STOP;
        }
    double dt = now_s() - t0;
    long n = (long)ntrials * iters;
    fprintf(stderr, "mo-asha: %ld results over %d trials in %.3f s: %.0f results/s (%ld judged)\n",
            n, ntrials, dt, n / dt, judged);
    CHECK(judged > 0 && stopped > 0);
    free(quality);
    sched_policy_free(p);
}

TT_MAIN
