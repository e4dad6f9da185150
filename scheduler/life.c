/* A trial's life: its configuration chosen at launch (a searcher), launched into a slice
 * through the executor (or held behind an ending trial), asked to stop, ended (recorded as
 * finished, stopped, paused or failed), retried or resumed from its checkpoint as a new
 * attempt, which takes over the trial's history at its first result. Not for: the loop's
 * turn (loop.c), the per-result path (result.c), checkpoints (ckpt.c), why a trial failed
 * (diagnose.c), the table at the start (start.c) or the records (records.c). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scheduler/loop_int.h"
#include "trial/trial.h"

static void running(struct sched_loop *L, struct sched__trial *t, const sched_slice_t *sl,
                    const sched_started_t *st);

/* A trial that could not be started: ERROR with the reason, counted for fail_fast as a
 * trial that failed before reporting (the same program failing to start is the same
 * mistake each time, whether the start reports it or, not waiting for the exec, the end). */
static void finish_error(struct sched_loop *L, struct sched__trial *t, const char *msg)
{
    free(t->error);
    t->error = strdup(msg);
    t->status = SCHED_TRIAL_ERROR;
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_ERROR | STORE_TU_ENDED,
                              .status = "ERROR",
                              .error = msg,
                              .stderr_tail = "",
                              .ended_at = sched__wall(L)};
    sched__update_row(L, t, &u);
    sched__count_early_failure(L, t, msg);
    sched_on_trial_complete(L->policy, t->no);
    sched__searcher_end(L, t);
    sched__retire(L, t);
}

void sched__searcher_end(struct sched_loop *L, const struct sched__trial *t)
{
    if (L->searcher) space_searcher_trial_end(L->searcher, (size_t)t->no, t->early_stopped);
}

/* Chooses trial t's configuration now, at its launch, from what the searcher has observed
 * so far: points_to_evaluate first (Ray Tune's; parameters a point leaves out are the
 * searcher's), then the searcher's suggestions. The loop launches in trial order and
 * feeds results in arrival order, so the same seed and the same order of results give
 * the same configurations. */
static int choose_config(struct sched_loop *L, struct sched__trial *t, char *err, size_t errlen)
{
    const space_settings_t *set = L->set;
    char why[256];
    cJSON *cfg = NULL;
    const sched_choices_t *ch = L->o->choices;
    if (ch) { /* the pool protocol: one of the configurations not taken yet */
        const cJSON *const *cands = NULL;
        size_t n = ch->unused(ch->ud, &cands), k = 0;
        if (space_searcher_choose(L->searcher, (size_t)t->no, cands, n, &k, why, sizeof why, err,
                                  errlen) != 0)
            return SCHED_EINVAL;
        if (!(cfg = cJSON_Duplicate(cands[k], 1)) || ch->take(ch->ud, t->no, k) != 0) {
            cJSON_Delete(cfg);
            snprintf(err, errlen, "out of memory");
            return SCHED_ENOMEM;
        }
        t->config = cfg;
        return sched__create_row(L, t, why, err, errlen);
    }
    if (space_searcher_suggest(L->searcher, (size_t)t->no, &cfg, why, sizeof why, err, errlen) != 0)
        return SCHED_EINVAL;
    if ((size_t)t->no < set->npoints) {
        const cJSON *pt = cJSON_GetArrayItem(set->points_to_evaluate, (int)t->no);
        for (const cJSON *m = pt ? pt->child : NULL; m; m = m->next) {
            cJSON *v = cJSON_Duplicate(m, 1);
            if (!v || !cJSON_ReplaceItemInObjectCaseSensitive(cfg, m->string, v)) {
                cJSON_Delete(v);
                cJSON_Delete(cfg);
                snprintf(err, errlen, "out of memory");
                return SCHED_ENOMEM;
            }
        }
        snprintf(why, sizeof why, "points_to_evaluate[%lld]", (long long)t->no);
        if (space_searcher_add_trial(L->searcher, (size_t)t->no, cfg, err, errlen) != 0) {
            cJSON_Delete(cfg);
            return SCHED_EINVAL;
        }
    }
    t->config = cfg;
    return sched__create_row(L, t, why, err, errlen);
}

/* Starts trial t in slice through the executor (held: behind running trial `after`, see
 * sched__hold_next). Returns the executor's code: 0, SCHED_EAGAIN (a start it cannot
 * hold), another negative code with err (t cannot be started), or 1 when the loop itself
 * failed (recorded: the run stops). */
static int start_in(struct sched_loop *L, struct sched__trial *t, const sched_slice_t *slice,
                    const struct sched__trial *after, sched_started_t *st, char *err, size_t errlen)
{
    const space_settings_t *set = L->set;
    char dir[4096], devs[512];
    if (sched__add_upto(L, (size_t)t->no) != 0) {
        sched__fail(L, "cannot launch a trial", "the scheduler cannot take it");
        return 1;
    }
    if (sched__live(L, t) != 0) {
        sched__fail(L, "cannot launch a trial", "out of memory");
        return 1;
    }
    int crc = 0;
    if (!t->config)
        crc = L->rec.resample ? space_sample(L->o->space, (size_t)t->no, &t->config, err, errlen)
                              : choose_config(L, t, err, errlen);
    if (crc != 0) {
        sched__fail(L, "cannot choose a trial's configuration", err);
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/%s", L->o->results_dir, t->name);
    free(t->x->dir);
    t->x->dir = strdup(dir);
    sched__prepare_exploit(t);
    sched_slice_devices(L->o->pool, slice, devs, sizeof devs);
    sched_start_t s = {.experiment = set->name,
                       .name = t->name,
                       .trial_no = t->no,
                       .attempt = t->attempt,
                       .config = t->config,
                       .dir = dir,
                       .devices = devs,
                       .gpus = slice->ngpus * (slice->share_ppm / 1e6),
                       .cpus = slice->cpus,
                       .resume_from = t->x->resume_from,
                       .held = after != NULL,
                       .after = after ? after->no : -1};
    const sched_exec_t *x = L->o->exec;
    int rc = x->ops->start(x->self, &s, st, err, errlen);
    if (rc == 0) t->x->started = 1;
    return rc;
}

int sched__launch(struct sched_loop *L, struct sched__trial *t)
{
    const space_settings_t *set = L->set;
    sched_slice_t slice;
    if (!sched__copy_ready(L, t) ||
        sched_pool_acquire(L->o->pool, set->gpus_per_trial, set->cpus_per_trial, &slice) != 0)
        return 0;
    char err[512];
    sched_started_t st = {0, "", ""};
    int rc = start_in(L, t, &slice, NULL, &st, err, sizeof err);
    if (rc != 0) {
        sched_pool_release(L->o->pool, &slice);
        if (rc == 1) return 0;
        finish_error(L, t, err);
        return 1;
    }
    running(L, t, &slice, &st);
    return 1;
}

int sched__hold_next(struct sched_loop *L)
{
    const sched_exec_t *x = L->o->exec;
    /* Not before the program has shown that it works (a result, no early failures): a run
     * that fail_fast stops starts nothing after the failure that stopped it. */
    if (!x->ops->cancel || L->q.no_hold || L->turn.stopping || L->end.fatal || !L->rec.resample ||
        L->searcher || (L->caps & SCHED_CAP_PAUSE) || L->q.npaused || L->q.nretry ||
        !L->seen.results_seen || !L->seen.metric_checked || L->seen.nearly > 0 ||
        L->q.nheld >= L->q.running || L->q.next >= L->rec.n)
        return 0;
    struct sched__trial *t = sched__make(L, L->q.next);
    if (!t || t->status != SCHED_TRIAL_PENDING || t->id <= 0) return 0;
    /* Only behind a trial that is ending: one the policy stopped, one that reached max_t (it
     * exits by itself, or is stopped after the grace) or one past a time limit. Behind one
     * that runs on, the next trial would wait for it while another slice freed first, and
     * what its start was given at the hold (MASTER_PORT, probed free then) would grow old.
     * The one signalled first, else the first to have been told. */
    struct sched__trial *a = NULL;
    for (size_t k = 0; k < L->q.running; k++) {
        struct sched__trial *r = sched__at(L, L->q.run[k]);
        enum sched__stop why = r->x->stop;
        if (r->x->successor ||
            (why != SCHED__STOP_EARLY && why != SCHED__STOP_COMPLETE && why != SCHED__STOP_TIMEOUT))
            continue;
        if (!a || (r->x->term_sent && !a->x->term_sent)) a = r;
    }
    if (!a || !a->x->has_slice) return 0;
    char err[512];
    sched_started_t st = {0, "", ""};
    int rc = start_in(L, t, &a->x->slice, a, &st, err, sizeof err);
    if (rc == SCHED_EAGAIN) {
        L->q.no_hold = 1;
        return 0;
    }
    if (rc == 1) return 0;
    L->q.next++;
    if (rc != 0) {
        finish_error(L, t, err);
        return 1;
    }
    t->x->held_after = a->no + 1;
    a->x->successor = t->no + 1;
    L->q.nheld++;
    return 1;
}

int sched__unhold(struct sched_loop *L, struct sched__trial *t)
{
    if (!t->x->held_after) return 0;
    const sched_exec_t *x = L->o->exec;
    if (x->ops->cancel(x->self, t->no) != 1) return 0; /* started: its turn comes */
    struct sched__trial *a = sched__at(L, (size_t)(t->x->held_after - 1));
    a->x->successor = 0;
    t->x->held_after = 0;
    t->x->started = 0;
    L->q.nheld--;
    L->q.retry[L->q.nretry++] = (size_t)t->no; /* first in line, before `next` */
    return 1;
}

int sched__slice_free(struct sched_loop *L)
{
    const space_settings_t *set = L->set;
    if (set->max_concurrent > 0 && (int)L->q.running >= set->max_concurrent) return 0;
    sched_slice_t s;
    if (sched_pool_acquire(L->o->pool, set->gpus_per_trial, set->cpus_per_trial, &s) != 0) return 0;
    sched_pool_release(L->o->pool, &s);
    return 1;
}

/* Trial t's start, in slice, as RUNNING: the running list, its timers and its row. */
static void running(struct sched_loop *L, struct sched__trial *t, const sched_slice_t *sl,
                    const sched_started_t *st)
{
    const space_settings_t *set = L->set;
    sched_slice_t slice = *sl;
    t->gen++;
    t->x->run_pos = L->q.running;
    L->q.run[L->q.running] = (size_t)t->no;
    t->x->slice = slice;
    t->x->has_slice = 1;
    t->status = SCHED_TRIAL_RUNNING;
    t->x->killed = 0;
    t->x->started_at = t->x->last_result_at = sched__now(L);
    t->x->first_result_at = 0;
    t->x->nresults = 0;
    t->x->term_sent = 0;
    free(t->x->named_ckpt);
    t->x->named_ckpt = NULL;
    snprintf(t->x->exec_id, sizeof t->x->exec_id, "%s", st->exec_id ? st->exec_id : "");
    snprintf(t->x->node, sizeof t->x->node, "%s", st->node ? st->node : "");
    char slice_txt[64];
    sched_slice_format(L->o->pool, &slice, slice_txt, sizeof slice_txt);
    t->slice_str = sched__intern(L, slice_txt);
    L->q.running++;
    if (set->trial_time_limit_s > 0)
        sched__timer_add(L, t, t->x->started_at + set->trial_time_limit_s);
    if (set->result_timeout_s > 0) sched__timer_add(L, t, t->x->started_at + set->result_timeout_s);
    /* A new attempt becomes the trial's attempt in the store only at its first result
     * (sched__take_over): until then the store shows the results it continues. */
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_SLICE | STORE_TU_STARTED |
                                        STORE_TU_PID | STORE_TU_EXEC_ID |
                                        (t->x->shown ? 0 : STORE_TU_ATTEMPT),
                              .attempt = t->attempt,
                              .status = "RUNNING",
                              .slice = t->slice_str,
                              .started_at = sched__wall(L),
                              .pid = st->pid,
                              .exec_id = t->x->exec_id,
                              .node = t->x->node};
    sched__update_row(L, t, &u);
}

/* Stops a running trial: SIGTERM now, SIGKILL after stop_grace_s. A trial that completed
 * (max_t or a "stop" criterion) is first given stop_grace_s to exit by itself, so that the
 * code after its last report (saving the final model) runs; only then SIGTERM, and
 * SIGKILL another stop_grace_s later. */
void sched__request_stop(struct sched_loop *L, struct sched__trial *t, enum sched__stop why)
{
    if (t->x->stop != SCHED__STOP_NONE || t->status != SCHED_TRIAL_RUNNING) return;
    t->x->stop = why;
    if (why == SCHED__STOP_EARLY) t->early_stopped = 1;
    double grace = L->set->stop_grace_s > 0 ? L->set->stop_grace_s : 0;
    double now = sched__now(L);
    if (why == SCHED__STOP_COMPLETE && grace > 0) {
        t->x->term_at = now + grace;
        t->x->term_sent = 0;
        t->x->stop_deadline = t->x->term_at + grace;
        sched__timer_add(L, t, t->x->term_at);
        return;
    }
    L->o->exec->ops->signal(L->o->exec->self, t->no, SIGTERM);
    t->x->term_sent = 1;
    t->x->stop_deadline = now + grace;
    sched__timer_add(L, t, t->x->stop_deadline);
}

/* The executor lets the trial go (it was reaped, its output read to the end). */
static void release(struct sched_loop *L, struct sched__trial *t)
{
    /* A start held behind t has happened in t's slice (the executor made it at t's end):
     * that trial runs now, in t's slice. */
    struct sched__trial *b = t->x->successor ? sched__at(L, (size_t)(t->x->successor - 1)) : NULL;
    sched_slice_t slice = t->x->slice;
    if (t->x->has_slice && !b) sched_pool_release(L->o->pool, &t->x->slice);
    t->x->has_slice = 0;
    t->x->successor = 0;
    if (t->x->started) L->o->exec->ops->release(L->o->exec->self, t->no);
    t->x->started = 0;
    /* out of the running list: the last one takes its place */
    size_t last = L->q.run[--L->q.running];
    L->q.run[t->x->run_pos] = last;
    sched__at(L, last)->x->run_pos = t->x->run_pos;
    if (b) {
        b->x->held_after = 0;
        L->q.nheld--;
        sched_started_t st = {0, "", ""};
        running(L, b, &slice, &st);
    }
}

/* A trial the policy paused has ended: PAUSED, its slice back in the pool, and where it
 * will resume from noted (the executor's word, else its newest checkpoint file). The
 * policy is not told it completed: it may be resumed. */
static void pause_ended(struct sched_loop *L, struct sched__trial *t, const sched_exit_t *ex)
{
    const sched_exec_t *x = L->o->exec;
    char buf[4200];
    free(t->x->resume_from);
    t->x->resume_from = NULL;
    t->x->has_resume_iter = 0;
    long long n = 0;
    if (t->x->stop == SCHED__STOP_EXPLOIT) {
        /* it restarts from its copy of the donor's checkpoint (sched__prepare_exploit, at its
         * launch); what it saved itself is no longer its state */
        free(t->x->named_ckpt);
        t->x->named_ckpt = NULL;
    } else if (t->x->named_ckpt) {
        t->x->resume_from = t->x->named_ckpt; /* the trial's own word comes first */
        t->x->named_ckpt = NULL;
        t->x->resume_iter = t->x->named_ckpt_iter;
        t->x->has_resume_iter = 1;
    } else if (x->ops->checkpoint) {
        if (x->ops->checkpoint(x->self, t->no, buf, sizeof buf) == 0) {
            t->x->resume_from = strdup(buf);
            if (sscanf(buf, "iteration:%lld", &n) == 1) { /* the simulator's */
                t->x->resume_iter = n;
                t->x->has_resume_iter = 1;
            }
        }
    } else {
        t->x->resume_from = sched__newest_checkpoint(L, t);
    }
    t->status = SCHED_TRIAL_PAUSED;
    t->x->stop = SCHED__STOP_NONE;
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_EXIT,
                              .status = "PAUSED",
                              .exit_code = ex->signal ? -1 : ex->code,
                              .exit_signal = ex->signal};
    sched__update_row(L, t, &u);
    release(L, t);
    L->q.paused[L->q.npaused++] = (size_t)t->no;
}

int sched__resume(struct sched_loop *L, size_t k, const sched_decision_t *why)
{
    struct sched__trial *t = sched__at(L, L->q.paused[k]);
    struct sched__trial saved = *t; /* restored if no slice is free */
    int shown = t->x->shown, carry = t->x->carry;
    /* Its counters stay until its first result (sched__take_over): a resumed trial
     * continues, and one with nothing left to run, ending without a result, keeps them. */
    if (!t->x->shown) t->x->shown = t->attempt;
    t->attempt++;
    t->x->carry = t->x->resume_from != NULL || t->x->exploit_src != NULL;
    t->x->killed = 0;
    if (!sched__launch(L, t)) {
        *t = saved;
        t->x->shown = shown;
        t->x->carry = carry;
        return 0;
    }
    memmove(L->q.paused + k, L->q.paused + k + 1, (--L->q.npaused - k) * sizeof *L->q.paused);
    char reason[600];
    const char *action;
    if (t->x->exploit_src) {
        snprintf(reason, sizeof reason,
                 "restarted after its exploit: attempt %d, its new configuration, from %s (a copy "
                 "of %s)",
                 t->attempt, t->x->resume_from ? t->x->resume_from : "?", t->x->exploit_src);
        action = "resume";
    } else {
        action = sched_policy_word_resume(L->policy, why, L->set->sched.time_attr, t->attempt,
                                          t->x->resume_from ? t->x->resume_from
                                                            : "scratch (no checkpoint)",
                                          reason, sizeof reason);
    }
    int promote = strcmp(action, "promote") == 0;
    store_decision_t sd = {.trial_id = t->id,
                           .iteration = saved.iters,
                           .time_value = saved.last_time,
                           .action = action,
                           .bracket = why ? why->bracket : -1,
                           .rung = promote ? why->rung : -1,
                           .milestone = promote ? why->milestone : NAN,
                           .value = saved.last_metric,
                           .cutoff = promote ? why->cutoff : NAN,
                           .reason = reason,
                           .wall_time = sched__wall(L)};
    sched__add_decision(L, &sd);
    return 1;
}

/* A paused trial (its decision recorded) ends for good, TERMINATED, without running again:
 * its row, the policy, the searcher and its record are told. */
static void end_waiting(struct sched_loop *L, struct sched__trial *t, int early)
{
    t->status = SCHED_TRIAL_TERMINATED;
    t->early_stopped = early;
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_EARLY_STOPPED | STORE_TU_ENDED,
                              .status = "TERMINATED",
                              .early_stopped = early,
                              .ended_at = sched__wall(L)};
    sched__update_row(L, t, &u);
    sched_on_trial_complete(L->policy, t->no);
    sched__searcher_end(L, t);
    sched__retire(L, t);
}

void sched__end_paused(struct sched_loop *L)
{
    for (size_t k = 0; k < L->q.npaused; k++) {
        struct sched__trial *t = sched__at(L, L->q.paused[k]);
        if (t->status != SCHED_TRIAL_PAUSED) continue;
        if (t->x->shown) sched__take_over(L, t, INT64_MAX); /* see sched__ended */
        sched__add_note(L, t, "stop", t->iters, t->last_time, t->last_metric,
                        "still paused when nothing else was left to run: the policy never "
                        "chose to resume it");
        end_waiting(L, t, 1);
    }
    L->q.npaused = 0;
}

/* Paused trials the policy has ended (sched_policy_drop: HyperBand halved them away while
 * they waited at a milestone) end now, TERMINATED, recorded in the policy's words. */
void sched__end_dropped(struct sched_loop *L)
{
    for (;;) {
        for (size_t k = 0; k < L->q.npaused; k++)
            L->q.paused_ids[k] = sched__at(L, L->q.paused[k])->no;
        sched_decision_t why;
        long k = sched_policy_drop(L->policy, L->q.paused_ids, L->q.npaused, &why);
        if (k < 0) return;
        struct sched__trial *t = sched__at(L, L->q.paused[k]);
        if (t->status != SCHED_TRIAL_PAUSED) continue; /* ends with the rest (end_paused) */
        memmove(L->q.paused + k, L->q.paused + k + 1,
                (--L->q.npaused - (size_t)k) * sizeof *L->q.paused);
        if (t->x->shown) sched__take_over(L, t, INT64_MAX); /* see sched__ended */
        char reason[300];
        const char *action = sched_policy_word(L->policy, &why, t->name, L->set->sched.time_attr,
                                               t->last_time, reason, sizeof reason);
        store_decision_t sd = {.trial_id = t->id,
                               .iteration = t->iters,
                               .time_value = t->last_time,
                               .action = action,
                               .bracket = why.bracket,
                               .rung = why.rung,
                               .milestone = why.milestone,
                               .value = why.value,
                               .cutoff = why.cutoff,
                               .reason = reason,
                               .wall_time = sched__wall(L)};
        sched__add_decision(L, &sd);
        end_waiting(L, t, why.action == SCHED_STOP);
    }
}

void sched__ended(struct sched_loop *L, struct sched__trial *t, const sched_exit_t *ex)
{
    if (t->status != SCHED_TRIAL_RUNNING || !t->x->started) return;
    if (ex->why && t->x->stop == SCHED__STOP_NONE) {
        /* the executor's watchdog condemned it: an error with the executor's reason */
        free(t->error);
        t->error = strdup(ex->why);
        t->x->stop = SCHED__STOP_TIMEOUT;
    }
    sched__check_buffered(L, t);
    t->ran_s = sched__now(L) - t->x->started_at;
    /* An attempt that ended before its first result (PBT's donor was at the end, it
     * failed at once, it was interrupted) has not taken over: the store still shows the
     * results it would have continued. Interrupted, or to be retried, it stays so; an
     * attempt that ends the trial for good takes over below, all of them its own. */
    /* an attempt started from a donor's checkpoint ended without restoring from it */
    if (t->x->pinned && t->x->stop != SCHED__STOP_EXPLOIT && t->x->stop != SCHED__STOP_PAUSE)
        sched__unpin(L, t);
    char msg[512] = "";
    const char *status;
    if (t->x->stop == SCHED__STOP_EARLY || t->x->stop == SCHED__STOP_COMPLETE ||
        t->x->stop == SCHED__STOP_EXPERIMENT) {
        status = "TERMINATED";
        t->status = SCHED_TRIAL_TERMINATED;
    } else if (t->x->stop == SCHED__STOP_PAUSE || t->x->stop == SCHED__STOP_EXPLOIT) {
        /* a pause before the new attempt restored: its donor's checkpoint is no longer
         * needed (an exploit pins its new donor's) */
        if (t->x->stop == SCHED__STOP_PAUSE && t->x->pinned) sched__unpin(L, t);
        pause_ended(L, t, ex);
        return;
    } else if (t->x->stop == SCHED__STOP_USER) {
        /* Interrupted by the user: resumable, so neither finished nor failed. */
        status = "PAUSED";
        t->status = SCHED_TRIAL_PAUSED;
    } else if (t->x->stop == SCHED__STOP_TIMEOUT) {
        status = "ERROR";
        t->status = SCHED_TRIAL_ERROR;
        snprintf(msg, sizeof msg, "%s", t->error ? t->error : "timed out");
    } else if (ex->signal == 0 && ex->code == 0) {
        status = "TERMINATED";
        t->status = SCHED_TRIAL_TERMINATED;
    } else {
        status = "ERROR";
        t->status = SCHED_TRIAL_ERROR;
        if (ex->signal)
            snprintf(msg, sizeof msg, "killed by signal %d (%s)", ex->signal,
                     sched__signame(ex->signal));
        else
            snprintf(msg, sizeof msg, "exited with code %d", ex->code);
    }
    char tail[2048] = ""; /* the end of its stderr.log */
    if (t->status == SCHED_TRIAL_ERROR && t->x->dir)
        sched__explain_failure(t, msg, sizeof msg, tail, sizeof tail);
    /* A failed attempt is retried up to max_failures times, from the trial's last
     * checkpoint when it wrote one (Ray Tune's max_failures / FailureConfig). */
    int retry =
        t->status == SCHED_TRIAL_ERROR && t->failures < L->set->max_failures && !L->turn.stopping;
    if (retry) {
        t->failures++;
        char m2[sizeof msg + 64];
        snprintf(m2, sizeof m2, "attempt %d failed: %s; retrying (%d of %d)", t->attempt, msg,
                 t->failures, L->set->max_failures);
        struct stat sb;
        /* the checkpoint its results named, else the newest checkpoint* file, else the one
         * the failed attempt started from (after a PBT exploit: its copy of the donor's) */
        char *from = NULL;
        int known = 0;
        int64_t at = 0;
        if (t->x->named_ckpt && stat(t->x->named_ckpt, &sb) == 0) {
            from = strdup(t->x->named_ckpt);
            known = 1;
            at = t->x->named_ckpt_iter;
        } else if (!(from = sched__newest_checkpoint(L, t)) && t->x->resume_from &&
                   stat(t->x->resume_from, &sb) == 0) {
            from = strdup(t->x->resume_from);
            known = t->x->has_resume_iter;
            at = t->x->resume_iter;
        }
        free(t->x->resume_from);
        t->x->resume_from = from;
        t->x->resume_iter = at;
        t->x->has_resume_iter = known;
        t->x->carry = t->x->resume_from != NULL;
        if (!t->x->shown) t->x->shown = t->attempt;
        t->attempt++;
        t->status = SCHED_TRIAL_PENDING;
        t->x->stop = SCHED__STOP_NONE;
        t->x->killed = 0;
        store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_ERROR | STORE_TU_EXIT,
                                  .status = "PENDING",
                                  .error = m2,
                                  .stderr_tail = tail,
                                  .exit_code = ex->signal ? -1 : ex->code,
                                  .exit_signal = ex->signal};
        sched__update_row(L, t, &u);
        release(L, t);
        L->q.retry[L->q.nretry++] = (size_t)t->no;
        return;
    }
    if (t->x->shown && t->status != SCHED_TRIAL_PAUSED) sched__take_over(L, t, INT64_MAX);
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_EARLY_STOPPED | STORE_TU_ENDED |
                                        STORE_TU_EXIT,
                              .status = status,
                              .early_stopped = t->early_stopped,
                              .ended_at = sched__wall(L),
                              .exit_code = ex->signal ? -1 : ex->code,
                              .exit_signal = ex->signal};
    if (t->status == SCHED_TRIAL_ERROR) {
        u.fields |= STORE_TU_ERROR;
        u.error = msg;
        u.stderr_tail = tail;
    }
    sched__update_row(L, t, &u);
    if (t->status == SCHED_TRIAL_ERROR) sched__count_early_failure(L, t, msg);
    /* PAUSED (the user's stop) goes on at the resume: the policy must not hear that it
     * ended, or HyperBand halves the bracket waiting for it, decisions the uninterrupted run
     * never makes (mo.hyperband_resume_after_ctrl_c_matches_uninterrupted) */
    if (t->status != SCHED_TRIAL_PAUSED) {
        sched_on_trial_complete(L->policy, t->no);
        sched__searcher_end(L, t);
    }
    release(L, t);
    if (t->status != SCHED_TRIAL_PAUSED) sched__retire(L, t); /* PAUSED: the user's stop */
}

int sched__take_over(struct sched_loop *L, struct sched__trial *t, int64_t it)
{
    char err[512];
    store_carried_t c = {0, NAN, NAN};
    /* From a checkpoint: the results before the iteration it continues from are its own
     * (those from there on are being computed again, and stay behind, superseded). From
     * scratch: nothing of the earlier attempts is. Whatever attempts came in between
     * without a result never showed: `shown` is the one the store shows. */
    if (t->x->carry && store_results_carry(L->o->store, t->id, t->x->shown, t->attempt, it, &c, err,
                                           sizeof err) != 0) {
        sched__fail(L, "cannot record result", err);
        return -1;
    }
    /* A checkpoint tune found by its name (one no result named) can be ahead of the last
     * result recorded: the trial saved it and was stopped, or tune was killed, before that
     * result was recorded. The results in between are lost: said, once, with the fix. */
    if (t->x->carry && !t->x->has_resume_iter && (it == INT64_MAX || c.moved < it - 1)) {
        char reason[1200], lost[96];
        const char *from = t->x->resume_from ? t->x->resume_from : "?";
        if (it == INT64_MAX)
            snprintf(reason, sizeof reason,
                     "attempt %d resumed from %.600s and ended without a result: if that "
                     "checkpoint was ahead of iteration %lld, the last recorded, the iterations "
                     "after it were computed before the interruption but never recorded",
                     t->attempt, from, (long long)c.moved);
        else {
            if (c.moved + 1 < it - 1)
                snprintf(lost, sizeof lost, "iterations %lld to %lld", (long long)c.moved + 1,
                         (long long)it - 1);
            else
                snprintf(lost, sizeof lost, "iteration %lld", (long long)it - 1);
            snprintf(reason, sizeof reason,
                     "attempt %d resumed from %.600s at iteration %lld: %s were computed before "
                     "the interruption but never recorded, and are missing from the trial's "
                     "results",
                     t->attempt, from, (long long)it, lost);
        }
        size_t k = strlen(reason);
        snprintf(reason + k, sizeof reason - k,
                 ". Name each checkpoint in the result it belongs to (\"checkpoint\": path), "
                 "and a resume starts from the last one recorded");
        sched__add_note(L, t, "gap", it == INT64_MAX ? c.moved + 1 : it, NAN, NAN, reason);
    }
    store_trial_update_t u = {.fields = STORE_TU_ATTEMPT, .attempt = t->attempt};
    sched__update_row(L, t, &u);
    /* from scratch, its first result is its first; continued, the last carried result
     * stays its last until its own first comes */
    if (!t->x->carry) t->last_time = t->last_metric = NAN;
    t->x->shown = 0;
    t->x->carry = 0;
    t->iters = c.moved;
    t->best_metric = L->set->mode == SPACE_MODE_MAX ? c.max_metric : c.min_metric;
    return L->end.fatal ? -1 : 0;
}

int64_t sched__counted_iteration(const struct sched__trial *t)
{
    if (!t->x->shown) return t->iters + 1;
    if (!t->x->carry) return 1;
    return (t->x->has_resume_iter ? t->x->resume_iter : t->iters) + 1;
}

/* ---- time limits and stop graces: what a due timer means for a trial ---------------- */
static void kill_trial(struct sched_loop *L, struct sched__trial *t)
{
    L->o->exec->ops->signal(L->o->exec->self, t->no, SIGKILL);
    t->x->killed = 1;
}

/* What is due for trial t at `now`: past its time budget or silent for longer than
 * result_timeout_s it is stopped as an error, past its stop grace it is killed. Files
 * the next timer it needs. */
static void trial_timers(struct sched_loop *L, struct sched__trial *t, double now)
{
    const space_settings_t *set = L->set;
    if (t->x->stop == SCHED__STOP_NONE) {
        char why[160] = "";
        double budget =
            set->trial_time_limit_s > 0 ? t->x->started_at + set->trial_time_limit_s : INFINITY;
        double silent =
            set->result_timeout_s > 0 ? t->x->last_result_at + set->result_timeout_s : INFINITY;
        if (now >= budget)
            snprintf(why, sizeof why, "ran past trial_time_limit_s (%g s)",
                     set->trial_time_limit_s);
        else if (now >= silent)
            snprintf(why, sizeof why, "reported nothing for result_timeout_s (%g s)",
                     set->result_timeout_s);
        if (!why[0]) {
            double next = fmin(budget, silent);
            if (isfinite(next)) sched__timer_add(L, t, next);
            return;
        }
        free(t->error);
        t->error = strdup(why);
        sched__request_stop(L, t, SCHED__STOP_TIMEOUT); /* files the grace timer */
        return;
    }
    if (!t->x->term_sent && !t->x->killed) {
        if (now < t->x->term_at) {
            sched__timer_add(L, t, t->x->term_at);
            return;
        }
        /* a completed trial's grace is over */
        L->o->exec->ops->signal(L->o->exec->self, t->no, SIGTERM);
        t->x->term_sent = 1;
        sched__timer_add(L, t, t->x->stop_deadline);
    }
    if (!t->x->killed && now >= t->x->stop_deadline) kill_trial(L, t);
}

/* Fires the timers due at `now` and returns the time of the nearest one ahead (or
 * `wake`, if sooner). The second Ctrl-C kills every running trial once. */
double sched__run_timers(struct sched_loop *L, double now, double wake)
{
    if (L->turn.hard_stop && !L->turn.hard_done) {
        L->turn.hard_done = 1;
        for (size_t k = 0; k < L->q.running; k++) {
            struct sched__trial *t = sched__at(L, L->q.run[k]);
            if (t->x->killed) continue;
            if (t->x->stop == SCHED__STOP_NONE) t->x->stop = SCHED__STOP_USER;
            kill_trial(L, t);
        }
    }
    while (L->tm.ntimers > 0 && L->tm.timers[0].at <= now) {
        struct sched__timer e = sched__timer_pop(L);
        struct sched__trial *t = sched__find(L, e.idx);
        if (!t || t->status != SCHED_TRIAL_RUNNING || !t->x->started || t->gen != e.gen) continue;
        trial_timers(L, t, now);
    }
    return L->tm.ntimers > 0 ? fmin(wake, L->tm.timers[0].at) : wake;
}
