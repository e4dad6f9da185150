/* The per-result path: one stdout line of a trial becomes a recorded result (plain JSON
 * stored as it came, anything else normalised by cJSON first), is judged by the policy,
 * and the decision is worded and recorded. Executors reach it through the loop's line
 * event, benchmarks through sched_loop_line. Not for: launching or ending trials (life.c)
 * or the loop's turn (loop.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/loop_int.h"
#include "trial/trial.h"

static int has_non_json_number(const char *s, size_t n)
{
    /* NaN and Infinity are accepted from trials but are not JSON: such lines are
     * re-printed by cJSON (as null) before they are stored, so the stored text is
     * always valid JSON for json_extract and for exports. */
    for (size_t i = 0; i + 2 < n; i++)
        if ((s[i] == 'N' && s[i + 1] == 'a' && s[i + 2] == 'N') ||
            (s[i] == 'I' && s[i + 1] == 'n' && s[i + 2] == 'f'))
            return 1;
    return 0;
}

/* The numbers the loop reads from a result (training_iteration, the time_attr, the
 * metric) and the text to store, valid JSON. */
struct result_in {
    double it, tv, m;
    const char *json;
    size_t json_len;
};

/* One result of trial t: recorded, counted and judged. */
static void on_result(struct sched_loop *L, struct sched__trial *t, const struct result_in *in)
{
    const space_settings_t *set = L->set;
    double it = in->it, tv = in->tv, m = in->m;
    if (L->rx_wall == 0) {
        L->rx_wall = sched__wall(L);
        L->rx_now = sched__now(L);
    }
    char err[256];
    if (t->carry) {
        /* The first result of an attempt that resumed from a checkpoint says where the
         * checkpoint was: the earlier attempt's results before it belong to this one, those
         * from it on are superseded (they are being computed again). */
        t->carry = 0;
        int64_t carried = 0;
        if (store_results_carry(L->o->store, t->id, t->attempt - 1, t->attempt, (int64_t)it,
                                &carried, err, sizeof err) != 0) {
            sched__fail(L, "cannot record result", err);
            return;
        }
        t->iters = carried;
    }
    double now = L->rx_wall;
    store_result_t sr = {.trial_id = t->id,
                         .attempt = t->attempt,
                         .iteration = (int64_t)it,
                         .time_value = tv,
                         .metric = m,
                         .wall_time = now,
                         .json = in->json,
                         .json_len = in->json_len};
    if (store_result_add(L->o->store, &sr, err, sizeof err) != 0) {
        sched__fail(L, "cannot record result", err);
        return;
    }
    L->results++;
    t->iters++;
    t->last_time = tv;
    t->last_metric = m;
    t->last_result_at = L->rx_now;
    if (sched__better(set->mode == SPACE_MODE_MAX, m, t->best_metric)) t->best_metric = m;

    if (isnan(tv)) return; /* without its time the policy cannot place the result */
    sched_decision_t d;
    sched_on_result(L->policy, t->no, tv, m, &d);
    if (!d.judged) return;
    const char *action = d.action == SCHED_STOP       ? "stop"
                         : d.action == SCHED_COMPLETE ? "complete"
                                                      : "continue";
    char reason[160];
    if (d.rung < 0 && d.action != SCHED_COMPLETE)
        snprintf(reason, sizeof reason, "%s: best %g vs median %g of other trials",
                 d.action == SCHED_STOP ? "worse than the median" : "not worse than the median",
                 d.value, d.cutoff);
    else if (d.action == SCHED_COMPLETE)
        snprintf(reason, sizeof reason, "reached max_t (%s >= %g)", set->sched.time_attr,
                 set->sched.max_t);
    else if (isnan(d.cutoff))
        snprintf(reason, sizeof reason, "first result at rung %d (milestone %g): no cutoff yet",
                 d.rung, d.milestone);
    else if (d.action == SCHED_STOP)
        snprintf(reason, sizeof reason, "worse than rung %d cutoff at milestone %g", d.rung,
                 d.milestone);
    else
        snprintf(reason, sizeof reason, "within rung %d cutoff at milestone %g: promoted", d.rung,
                 d.milestone);
    store_decision_t sd = {.trial_id = t->id,
                           .iteration = (int64_t)it,
                           .time_value = tv,
                           .action = action,
                           .bracket = d.bracket,
                           .rung = d.rung,
                           .milestone = d.milestone,
                           .value = d.value,
                           .cutoff = d.cutoff,
                           .reason = reason,
                           .wall_time = now};
    if (store_decision_add(L->o->store, &sd, err, sizeof err) != 0) {
        sched__fail(L, "cannot record decision", err);
        return;
    }
    if (d.action == SCHED_STOP)
        sched__request_stop(L, t, SCHED__STOP_EARLY);
    else if (d.action == SCHED_COMPLETE)
        sched__request_stop(L, t, SCHED__STOP_COMPLETE);
}

void sched__on_line(struct sched_loop *L, struct sched__trial *t, const char *line, size_t len,
                    int truncated)
{
    if (truncated) {
        L->bad_lines++;
        return;
    }
    const space_settings_t *set = L->set;
    /* The fast path: a plain JSON object with its training_iteration is stored as it came,
     * its numbers read without building a tree. Anything else (no training_iteration,
     * NaN/Infinity, what the scan leaves alone) goes through cJSON below. */
    const char *keys[3] = {"training_iteration", L->time_is_iter ? NULL : set->sched.time_attr,
                           set->metric};
    double v[3];
    if (trial_result_scan(line, len, keys, 3, v) == 1 && !isnan(v[0])) {
        if (t->stop != SCHED__STOP_NONE) {
            L->ignored++;
        } else if (!L->fatal) {
            struct result_in in = {v[0], L->time_is_iter ? v[0] : v[1], v[2], line, len};
            on_result(L, t, &in);
        }
        return;
    }
    cJSON *r = NULL;
    if (trial_result_parse(line, len, &r) != 1) {
        /* A line that opens like a JSON object but does not parse was surely meant as a
         * result ("-nan" from printf, a truncated write): count it so the user hears of
         * it, where plain log lines pass silently. */
        size_t i = 0;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i < len && line[i] == '{') L->bad_lines++;
        return;
    }
    if (t->stop != SCHED__STOP_NONE) {
        /* Results after the decision to stop are logged (the stdout log has them) but
         * not recorded, as in Ray Tune. */
        L->ignored++;
    } else if (!L->fatal) {
        struct result_in in = {trial_result_number(r, "training_iteration"), NAN, NAN, line, len};
        int added = 0;
        if (isnan(in.it)) {
            /* Counted by the scheduler when the trial does not send it (Ray Tune does the
             * same for function trainables). */
            in.it = (double)(t->iters + 1);
            cJSON_AddNumberToObject(r, "training_iteration", in.it);
            added = 1;
        }
        in.tv = L->time_is_iter ? in.it : trial_result_number(r, set->sched.time_attr);
        in.m = set->metric ? trial_result_number(r, set->metric) : NAN;
        char *printed = NULL;
        if (added || has_non_json_number(line, len)) {
            printed = cJSON_PrintUnformatted(r);
            if (!printed) {
                sched__fail(L, "cannot record result", "out of memory");
                cJSON_Delete(r);
                return;
            }
            in.json = printed;
            in.json_len = strlen(printed);
        }
        on_result(L, t, &in);
        free(printed);
    }
    cJSON_Delete(r);
}
