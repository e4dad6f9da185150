/* The per-result path: one stdout line of a trial becomes a recorded result (plain JSON
 * stored as it came, anything else normalised first), is checked (the run's first result
 * must carry the metric and time_attr), judged by the policy and the "stop" criteria, and
 * the decision recorded in the policy's words (sched_policy_word). Executors reach it through the
 * loop's line event, benchmarks through sched_loop_line. Not for: launching or ending trials
 * (life.c) or the loop's turn (loop.c). */
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

/* Whether a result line may name a checkpoint: does "\"checkpoint\"" occur in it. A memchr
 * for its 'k' (a byte most result lines lack or hold a few times) and a compare at each
 * hit cost a third of memmem's general search, which every recorded result paid. */
static int mentions_checkpoint(const char *s, size_t n)
{
    static const char key[] = "\"checkpoint\""; /* 12 bytes, its 'k' at 5 */
    if (n < 12) return 0;
    const char *p = s + 5, *last = s + n - 6; /* the 'k' of a match is at or before last */
    while (p <= last && (p = memchr(p, 'k', (size_t)(last - p) + 1)) != NULL) {
        if (memcmp(p - 5, key, 12) == 0) return 1;
        p++;
    }
    return 0;
}

/* The numbers the loop reads from a result (v[0] training_iteration, v[1] the time_attr,
 * v[2] the metric, then the "stop" keys and the metric columns: L->keys) and the text to
 * store, valid JSON. */
struct result_in {
    double v[SCHED__MAX_KEYS];
    const char *json;
    size_t json_len;
    const cJSON *tree; /* json parsed, when the slow path did; NULL on the fast one */
};

/* Ray Tune refuses a result without the experiment's metric ("Trial returned a result
 * which did not include the specified metric"); here the first result of the run is
 * checked, once, for every objective, every "constraints" key and the time_attr, and the
 * message names each missing one and the keys the trial did report, with a did-you-mean.
 * A constrained key never reported would leave every trial infeasible (space_violation is
 * +inf), a missing objective every trial unranked: both are a typo far more often. */
static void check_first_result(struct sched_loop *L, struct sched__trial *t, const cJSON *r)
{
    const space_settings_t *set = L->set;
    L->seen.metric_checked = 1;
    enum { NMISS = SPACE_MAX_OBJECTIVES + SPACE_MAX_CONSTRAINTS + 1 };
    const char *missing[NMISS];
    char what[NMISS][48];
    /* NULL: the key is missing; else the value that is not a number (a string, a boolean,
     * an object: a newcomer's str(loss) or f"{loss}" read as NaN and "diverged" otherwise).
     * null stays allowed: it is how NaN and infinity are written. */
    const cJSON *typed[NMISS];
    int nm = 0, ntyped = 0;
    /* Each missing name once, in the order objectives, constraints, time_attr. */
    for (size_t i = 0; i < set->nobjectives + set->nconstraints + 1 && nm < NMISS; i++) {
        const char *key;
        if (i < set->nobjectives) {
            key = set->metrics[i];
            if (set->nobjectives > 1)
                snprintf(what[nm], sizeof what[nm], "objective %zu of \"metric\"", i + 1);
            else
                snprintf(what[nm], sizeof what[nm], "the experiment's \"metric\"");
        } else if (i < set->nobjectives + set->nconstraints) {
            key = set->constraints[i - set->nobjectives].key;
            snprintf(what[nm], sizeof what[nm], "a key of \"constraints\"");
        } else {
            if (L->time_is_iter || !(L->caps & SCHED_CAP_TIME)) continue;
            key = set->sched.time_attr;
            snprintf(what[nm], sizeof what[nm], "the scheduler's \"time_attr\"");
        }
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key);
        if (v && (cJSON_IsNumber(v) || cJSON_IsNull(v))) continue;
        int seen = 0;
        for (int j = 0; j < nm && !seen; j++)
            seen = strcmp(missing[j], key) == 0;
        if (!seen) {
            typed[nm] = v;
            ntyped += v != NULL;
            missing[nm++] = key;
        }
    }
    if (nm == 0) return;
    const char *cand[64];
    size_t nc = 0;
    char keys[400] = "";
    size_t kl = 0;
    for (const cJSON *c = r->child; c; c = c->next) {
        if (!c->string) continue;
        if (nc < 64) cand[nc++] = c->string;
        if (kl + strlen(c->string) + 8 < sizeof keys)
            kl += (size_t)snprintf(keys + kl, sizeof keys - kl, "%s\"%s\"", kl ? ", " : "",
                                   c->string);
    }
    char msg[1024];
    size_t ml = 0;
    for (int i = 0; i < nm; i++) {
        if (typed[i]) {
            /* present, but not a number: say what it is and show it */
            char *shown = cJSON_PrintUnformatted(typed[i]);
            const char *kind = cJSON_IsString(typed[i])   ? "a string"
                               : cJSON_IsBool(typed[i])   ? "a boolean"
                               : cJSON_IsArray(typed[i])  ? "a list"
                               : cJSON_IsObject(typed[i]) ? "an object"
                                                          : "not a number";
            ml += (size_t)snprintf(msg + ml, ml < sizeof msg ? sizeof msg - ml : 0,
                                   "%s%s reports \"%.100s\", %s, as %s (%.40s%s)", i ? "; " : "",
                                   t->name, missing[i], what[i], kind, shown ? shown : "?",
                                   shown && strlen(shown) > 40 ? "..." : "");
            free(shown);
        } else {
            const char *dym = space_suggest(missing[i], cand, nc);
            char d[160] = "";
            if (dym) snprintf(d, sizeof d, " (did you mean \"%s\"?)", dym);
            ml += (size_t)snprintf(msg + ml, ml < sizeof msg ? sizeof msg - ml : 0,
                                   "%s%s reports no \"%.100s\", %s%s", i ? "; " : "", t->name,
                                   missing[i], what[i], d);
        }
        if (ml >= sizeof msg) break;
    }
    if (ml < sizeof msg)
        snprintf(msg + ml, sizeof msg - ml, ". Its first result has: %s",
                 keys[0] ? keys : "no keys");
    if (set->allow_missing_metric) {
        snprintf(
            L->seen.notice, sizeof L->seen.notice,
            "warning: %.800s (allow_missing_metric is true: the run goes on, but no trial can be "
            "ranked or stopped early by a value it never reports)",
            msg);
        return;
    }
    char full[1300];
    snprintf(full, sizeof full, "%s. %s%s (or set \"allow_missing_metric\": true to run anyway)",
             msg, ntyped < nm ? "Fix the name in space.json" : "",
             ntyped == 0 ? ""
             : ntyped == nm
                 ? "Report it as a number (float(value) in Python, not str or f\"{value}\")"
                 : "; report the others as numbers (float(value) in Python, not str or "
                   "f\"{value}\")");
    sched__end_experiment(L, SCHED_END_NO_METRIC, t->no, full);
}

/* Ray Tune's stop={...}: the trial is done when any criterion is reached: for an objective
 * "at least as good as the target" in its mode, for any other key result >= target
 * (space_stop_cmp). Returns the index of the criterion reached, or -1. */
static int stop_reached(const struct sched_loop *L, const struct result_in *in)
{
    const space_settings_t *set = L->set;
    for (size_t i = 0; i < set->nstop; i++) {
        double v = in->v[SCHED__KEY_STOP + i], target = set->stop[i].target;
        if (isnan(v)) continue;
        /* an objective's target in its own mode (several objectives: each its own) */
        if (space_stop_cmp(set, i) == SPACE_CMP_LE ? v <= target : v >= target) return (int)i;
    }
    return -1;
}

/* Results after a decision to stop a trial (the policy's, max_t, a stop criterion, the end
 * of the experiment, a time limit) are logged but not recorded, as in Ray Tune. After
 * Ctrl-C the trial is paused, not judged: what it reports on its way out (it may be the
 * iteration its checkpoint holds) is recorded, so a resume misses nothing. */
static int ignores_results(const struct sched__trial *t)
{
    return t->x->stop != SCHED__STOP_NONE && t->x->stop != SCHED__STOP_USER;
}

/* A result may name the checkpoint it wrote ("checkpoint": "path", relative to the trial's
 * directory unless absolute): a pause resumes from it (docs/pbt.md). Only lines that
 * mention the key are parsed again, so the common path pays one memmem. */
static void note_checkpoint(struct sched_loop *L, struct sched__trial *t, const char *json,
                            size_t len, double it, double tv)
{
    if (!mentions_checkpoint(json, len)) return;
    cJSON *r = NULL;
    if (trial_result_parse(json, len, &r) != 1) return;
    const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "checkpoint"));
    if (p && *p) {
        char buf[8400];
        sched__ckpt_path(L, t, p, buf, sizeof buf);
        free(t->x->named_ckpt);
        t->x->named_ckpt = strdup(buf);
        t->x->named_ckpt_iter = (int64_t)it;
        t->x->named_ckpt_time = tv;
        if (L->caps & SCHED_CAP_EXPLOIT) sched__note_checkpoint(L, t, buf, 0);
    }
    cJSON_Delete(r);
}

/* Records the policy's decision d on trial t's result at (it, tv), as `action`, with the
 * reason in words. */
static void record(struct sched_loop *L, const struct sched__trial *t, double it, double tv,
                   double now, const sched_decision_t *d, const char *action, int bracket, int rung,
                   const char *reason)
{
    store_decision_t sd = {.trial_id = t->id,
                           .iteration = (int64_t)it,
                           .time_value = tv,
                           .action = action,
                           .bracket = bracket,
                           .rung = rung,
                           .milestone = d->milestone,
                           .value = d->value,
                           .cutoff = d->cutoff,
                           .reason = reason,
                           .wall_time = now};
    sched__add_decision(L, &sd);
}

/* The result's point, as space_objectives and space_violation read it (the one reading
 * every part of tune shares), for a ranked policy and a searcher of several objectives or
 * constraints: obj gets the objectives. The fast path stored the line without a tree: it is
 * parsed here, once for both, which only runs with several objectives or constraints pay. */
static void read_point(const struct sched_loop *L, const struct result_in *in, double m,
                       sched_point_t *pt, double *obj)
{
    cJSON *own = NULL;
    const cJSON *r = in->tree;
    if (!r && trial_result_parse(in->json, in->json_len, &own) == 1) r = own;
    pt->value = m;
    sched__result_point(L->set, r, pt, obj);
    cJSON_Delete(own);
}

/* One result of trial t: recorded, counted and judged. */
static void on_result(struct sched_loop *L, struct sched__trial *t, const struct result_in *in)
{
    const space_settings_t *set = L->set;
    L->seen.results_seen = 1;
    double it = in->v[0], tv = in->v[1], m = in->v[2];
    if (L->turn.rx_wall == 0) {
        L->turn.rx_wall = sched__wall(L);
        L->turn.rx_now = sched__now(L);
    }
    char err[256];
    /* The first result of a new attempt says where its checkpoint was: it takes over the
     * trial's history up to there, in this result's transaction. */
    if (t->x->shown && sched__take_over(L, t, (int64_t)it) != 0) return;
    double now = L->turn.rx_wall;
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
    L->seen.results++;
    t->iters++;
    t->reported = 1;
    note_checkpoint(L, t, in->json, in->json_len, it, tv);
    /* a result of the new attempt: it has restored from its donor's checkpoint */
    if (t->x->pinned) sched__unpin(L, t);
    t->last_time = tv;
    t->last_metric = m;
    t->x->last_result_at = L->turn.rx_now;
    if (t->x->first_result_at == 0) t->x->first_result_at = L->turn.rx_now;
    t->x->nresults++;
    for (size_t k = 0; k < L->ncols; k++)
        t->columns[k] = in->v[L->col0 + k];
    if (sched__better(set->mode == SPACE_MODE_MAX, m, t->best_metric)) t->best_metric = m;

    sched_decision_t d;
    d.judged = 0;
    d.action = SCHED_CONTINUE;
    d.yield = 0;
    d.donor = -1;
    /* A run ended for a mistake in space.json (a metric or time_attr no trial reports):
     * results still arriving are recorded but not judged, since the missing value (NaN)
     * would stop a trial early that must stay PAUSED, resumable once the name is fixed. */
    if (!isnan(tv) && L->end.ended_by != SCHED_END_NO_METRIC) {
        double obj[SPACE_MAX_OBJECTIVES];
        sched_point_t pt = {obj, INFINITY, m};
        int k_search = space_searcher_takes_points(L->searcher);
        if (L->ranked || k_search) read_point(L, in, m, &pt, obj);
        if (L->ranked)
            sched_on_result_point(L->policy, t->no, tv, &pt, &d);
        else
            sched_on_result(L->policy, t->no, tv, m, &d);
        /* The searcher learns from every recorded result, in arrival order, as a resume
         * replays them (start.c, on_stored_result): its point with several objectives or
         * constraints (docs/search.md), else the metric. */
        if (L->searcher &&
            (k_search ? space_searcher_observe_k(L->searcher, (size_t)t->no, tv, obj, pt.violation)
                      : space_searcher_observe(L->searcher, (size_t)t->no, tv, m)) != 0) {
            sched__fail(L, "cannot record result", "out of memory in the searcher");
            return;
        }
    }
    /* A result that reaches a "stop" criterion ends its trial: Ray Tune checks the
     * stopper before the scheduler, so the last result is neither an exploit (a clone with
     * nothing left to train) nor a reason to yield the slice. */
    int stop_k = stop_reached(L, in);
    if (L->caps & SCHED_CAP_EXPLOIT && stop_k >= 0 && d.action != SCHED_COMPLETE) {
        d.action = SCHED_CONTINUE;
        d.judged = 0; /* the "complete" decision below is the one recorded */
        d.yield = 0;
        d.donor = -1;
        /* and no donor from now on: a clone of it would have nothing left to train */
        sched_on_trial_complete(L->policy, t->no);
    }
    /* no exploit while the experiment is stopping: its new attempt could not start */
    if (d.action == SCHED_EXPLOIT && !L->turn.stopping) {
        if (sched__exploit(L, t, &d, (int64_t)it, tv))
            sched__request_stop(L, t, SCHED__STOP_EXPLOIT);
        return;
    }
    if (d.action == SCHED_EXPLOIT) d.action = SCHED_CONTINUE;
    /* pbt: at a perturbation point a trial gives its slice to a waiting one (Ray Tune's
     * PBT pauses it while trials are PENDING or PAUSED, which in Ray means they wait for
     * resources); it resumes, least progressed first, from its checkpoint */
    if (d.yield && d.action == SCHED_CONTINUE && !L->turn.stopping &&
        (L->q.npaused > 0 || L->q.nretry > 0 || L->q.next < L->rec.n) && !sched__slice_free(L))
        d.action = SCHED_PAUSE;
    if (d.judged) { /* the policy words its own decision */
        char reason[300];
        const char *action = sched_policy_word(L->policy, &d, t->name, set->sched.time_attr, tv,
                                               reason, sizeof reason);
        record(L, t, it, tv, now, &d, action, d.bracket, d.rung, reason);
        if (L->end.fatal) return;
    }
    if (d.action == SCHED_STOP) {
        sched__request_stop(L, t, SCHED__STOP_EARLY);
        return;
    }
    if (d.action == SCHED_COMPLETE) {
        sched__request_stop(L, t, SCHED__STOP_COMPLETE);
        return;
    }
    if (d.action == SCHED_PAUSE) {
        sched__request_stop(L, t, SCHED__STOP_PAUSE);
        return;
    }
    int k = stop_k;
    if (k < 0) return;
    const space_stop_t *c0 = &set->stop[k];
    int is_metric = set->metric && strcmp(c0->key, set->metric) == 0;
    char vb[32], tb[32], reason[400];
    space_format_number(in->v[SCHED__KEY_STOP + k], vb);
    space_format_number(c0->target, tb);
    snprintf(reason, sizeof reason, "reached stop criterion %.100s: %s %s %s", c0->key, vb,
             space_stop_cmp(set, (size_t)k) == SPACE_CMP_LE ? "<=" : ">=", tb);
    store_decision_t sd = {.trial_id = t->id,
                           .iteration = (int64_t)it,
                           .time_value = tv,
                           .action = "complete",
                           .bracket = -1,
                           .rung = -1,
                           .milestone = NAN,
                           .value = in->v[SCHED__KEY_STOP + k],
                           .cutoff = c0->target,
                           .reason = reason,
                           .wall_time = now,
                           .criterion = c0->key};
    sched__add_decision(L, &sd);
    sched__request_stop(L, t, SCHED__STOP_COMPLETE);
    if (is_metric && set->stop_experiment_on_target) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s reached the target %s %s %s (%s)", t->name, c0->key,
                 set->mode == SPACE_MODE_MIN ? "<=" : ">=", tb, vb);
        sched__end_experiment(L, SCHED_END_TARGET, t->no, msg);
    }
}

/* A result line that could not be read: counted, and the first one kept (escaped) to be
 * quoted in the summary. */
/* Whether the line's first character after blanks is '{': how a line meant as a result
 * looks, where a plain log line does not. */
static int opens_like_object(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    return i < len && line[i] == '{';
}

static void bad_line(struct sched_loop *L, struct sched__trial *t, const char *line, size_t len)
{
    L->seen.bad_lines++;
    if (L->seen.bad_example[0]) return;
    sched__escape_quote(line, len, L->seen.bad_example, sizeof L->seen.bad_example, 100);
    L->seen.bad_trial = t->no;
}

void sched__on_line(struct sched_loop *L, struct sched__trial *t, const char *line, size_t len,
                    int truncated)
{
    if (truncated) {
        bad_line(L, t, line, len);
        return;
    }
    /* The fast path: a plain JSON object with its training_iteration is stored as it came,
     * its numbers read without building a tree. Anything else (no training_iteration,
     * NaN/Infinity, what the scan leaves alone) goes through cJSON below. The run's first
     * result is also parsed once, to check its keys. */
    /* pbt: a checkpoint the trial wrote after the decision to stop it is ignored as a
     * resume point, but counted for keep_checkpoints, so that it is deleted in turn */
    if (L->caps & SCHED_CAP_EXPLOIT && ignores_results(t) && mentions_checkpoint(line, len)) {
        cJSON *r = NULL;
        const char *p = NULL;
        if (trial_result_parse(line, len, &r) == 1 &&
            (p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "checkpoint"))) && *p) {
            char buf[8400];
            sched__ckpt_path(L, t, p, buf, sizeof buf);
            sched__note_checkpoint(L, t, buf, 0);
        }
        cJSON_Delete(r);
    }
    /* A trial stopped by its scheduler may still print results (it wrote them ahead of
     * time, or before the stop reached it): nothing of them is recorded, so they are not
     * read either, only counted, as the lines that open like a result. Reading them cost
     * more than everything else tune does for a short trial (bench/tuner: 200 trials that
     * print 81 results at once, of which ASHA keeps 7). A malformed one is not a result
     * lost, so it is not reported as one (bad_line). */
    if (ignores_results(t) && !((L->caps & SCHED_CAP_EXPLOIT) && mentions_checkpoint(line, len))) {
        if (opens_like_object(line, len)) L->seen.ignored++;
        return;
    }
    struct result_in in;
    if (L->nkeys <= TRIAL_SCAN_MAX_KEYS &&
        trial_result_scan(line, len, L->keys, L->nkeys, in.v) == 1 && !isnan(in.v[0])) {
        if (ignores_results(t)) {
            L->seen.ignored++;
        } else if (!L->end.fatal) {
            cJSON *r = NULL;
            if (!L->seen.metric_checked && trial_result_parse(line, len, &r) == 1)
                check_first_result(L, t, r);
            cJSON_Delete(r);
            if (L->time_is_iter) in.v[1] = in.v[0];
            /* The scan fills a key's first slot only: later slots of the same key (a "stop"
             * criterion on the metric, say) take its value. */
            for (size_t k = SCHED__KEY_STOP; k < L->nkeys; k++)
                if (L->dup[k] >= 0) in.v[k] = in.v[L->dup[k]];
            in.json = line;
            in.json_len = len;
            in.tree = NULL;
            on_result(L, t, &in);
        }
        return;
    }
    cJSON *r = NULL;
    if (trial_result_parse(line, len, &r) != 1) {
        /* A line that opens like a JSON object but does not parse was surely meant as a
         * result ("-nan" from printf, a Python dict printed with print()): count it so the
         * user hears of it, where plain log lines pass silently. */
        if (opens_like_object(line, len)) bad_line(L, t, line, len);
        return;
    }
    if (ignores_results(t)) {
        /* Results after the decision to stop are logged (the stdout log has them) but
         * not recorded, as in Ray Tune. */
        L->seen.ignored++;
    } else if (!L->end.fatal) {
        if (!L->seen.metric_checked) check_first_result(L, t, r);
        in.v[0] = trial_result_number(r, "training_iteration");
        in.json = line;
        in.json_len = len;
        in.tree = r;
        int added = 0;
        if (isnan(in.v[0])) {
            /* Counted by the scheduler when the trial does not send it (Ray Tune does the
             * same for function trainables). */
            in.v[0] = (double)sched__counted_iteration(t);
            cJSON_AddNumberToObject(r, "training_iteration", in.v[0]);
            added = 1;
        }
        for (size_t k = 1; k < L->nkeys; k++)
            in.v[k] = L->keys[k] ? trial_result_number(r, L->keys[k]) : NAN;
        if (L->time_is_iter) in.v[1] = in.v[0];
        for (size_t k = SCHED__KEY_STOP; k < L->nkeys; k++)
            if (L->keys[k] && strcmp(L->keys[k], "training_iteration") == 0) in.v[k] = in.v[0];
        char *printed = NULL;
        if (added || has_non_json_number(line, len)) {
            printed = space_json_print(r); /* numbers exactly as the trial sent them */
            if (!printed) {
                sched__fail(L, "cannot record result", "out of memory");
                cJSON_Delete(r);
                return;
            }
            in.json = printed;
            in.json_len = strlen(printed);
            /* the point is read from the text stored, NaN and Infinity as null, so that a
             * resume, which reads that text, ranks the same point */
            in.tree = NULL;
        }
        on_result(L, t, &in);
        free(printed);
    }
    cJSON_Delete(r);
}
