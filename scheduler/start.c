/* The trial table at the start of a run: made afresh (every trial's record, the policy
 * told of them in trial order, the searcher made), or replayed from the store on resume
 * (trials, every result in arrival order so that the policy's and the searcher's state is
 * what it was, checkpoints, pending exploits), after which each interrupted trial is set to
 * go on as it would have. Not for: the records themselves (records.c). */
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

/* ---- resume --------------------------------------------------------------------- */
struct id_index {
    int64_t id;
    size_t idx;
};

static int cmp_id(const void *a, const void *b)
{
    int64_t x = ((const struct id_index *)a)->id, y = ((const struct id_index *)b)->id;
    return x < y ? -1 : x > y;
}

struct resume_ctx {
    struct sched_loop *L;
    struct id_index *by_id;
    size_t nby;
    /* per trial: the newest attempt that has results (a file written by a tune that
     * recorded an attempt at its launch may show a newer one that has none) */
    int *last_attempt;
    /* per trial (policies that pause): the iteration of its latest result, and of a
     * 'promote' that is its latest pause or promotion (-1: none) */
    int64_t *last_iter, *promoted_at;
};

/* The trial whose store row is `id`, or NULL (a row of no trial of this space). */
static struct sched__trial *resume_trial(const struct resume_ctx *c, int64_t id)
{
    struct id_index key = {id, 0};
    struct id_index *hit = bsearch(&key, c->by_id, c->nby, sizeof key, cmp_id);
    return hit ? sched__at(c->L, hit->idx) : NULL;
}

/* A stored trial that ended for good needs nothing the replay could tell it (unless PBT,
 * whose donors' checkpoints outlive them): it gets no struct sched__live. */
static int ended_for_good(const struct sched_loop *L, const struct sched__trial *t)
{
    return !(L->caps & SCHED_CAP_EXPLOIT) &&
           (t->status == SCHED_TRIAL_TERMINATED || t->status == SCHED_TRIAL_ERROR);
}

static int resume_nomem(struct sched_loop *L)
{
    snprintf(L->end.fatal_msg, sizeof L->end.fatal_msg, "cannot resume: out of memory");
    return -1;
}

static sched_trial_status_t status_from(const char *s)
{
    for (int k = 0; k < SCHED_TRIAL_NSTATUS; k++)
        if (strcmp(s, sched_status_name((sched_trial_status_t)k)) == 0)
            return (sched_trial_status_t)k;
    return SCHED_TRIAL_PENDING;
}

static int on_stored_trial(void *ud, const store_trial_row_t *r)
{
    struct sched_loop *L = ud;
    if (r->trial_no < 0 || (size_t)r->trial_no >= L->rec.n) return 0; /* not of this space */
    /* With may_forget only the stored trials get records (the rest are made as they are
     * needed, as in a first run), announced to the policy in trial order. */
    struct sched__trial *t = sched__make(L, (size_t)r->trial_no);
    if (!t || sched__add_upto(L, (size_t)r->trial_no) != 0) {
        snprintf(L->end.fatal_msg, sizeof L->end.fatal_msg, "cannot resume: out of memory");
        return -1;
    }
    if ((size_t)r->trial_no >= L->rec.nloaded) L->rec.nloaded = (size_t)r->trial_no + 1;
    L->rec.row_id[r->trial_no] = r->id;
    t->id = r->id;
    t->status = status_from(r->status);
    t->early_stopped = r->early_stopped;
    t->attempt = r->attempt > 0 ? r->attempt : 1;
    if (r->error) t->error = strdup(r->error);
    if (r->slice) t->slice_str = sched__intern(L, r->slice);
    if (L->searcher || (L->caps & SCHED_CAP_EXPLOIT)) {
        /* Configurations were chosen as the run went (or explored by PBT): the stored ones
         * are the record, and the searcher learns each again (docs/search.md, "The loop's
         * rules"). A failure is worded into fatal_msg, unused before the loop runs. */
        char err[512] = "not JSON";
        cJSON_Delete(t->config);
        t->config = cJSON_Parse(r->config_json);
        if (!t->config ||
            (L->searcher && space_searcher_add_trial(L->searcher, (size_t)t->no, t->config, err,
                                                     sizeof err) != 0)) {
            snprintf(L->end.fatal_msg, sizeof L->end.fatal_msg,
                     "cannot resume: %s's stored configuration does not fit the space: %s", r->name,
                     err);
            return -1;
        }
    }
    return 0;
}

/* Replays one stored result: the policy sees every result again in arrival order, so
 * its rungs are what they were; the trial's own counters follow its current attempt. */
static int on_stored_result(void *ud, const store_result_row_t *r)
{
    struct resume_ctx *c = ud;
    struct sched__trial *t = resume_trial(c, r->trial_id);
    if (!t) return 0;
    if (!isnan(r->time_value)) {
        struct sched_loop *L = c->L;
        sched_decision_t d;
        /* the point read from the text it was read from when the result arrived, once for
         * a ranked policy and a searcher of several objectives alike (result.c) */
        double obj[SPACE_MAX_OBJECTIVES];
        sched_point_t pt = {obj, INFINITY, r->metric};
        int k_search = space_searcher_takes_points(L->searcher);
        if (L->ranked || k_search) {
            cJSON *j = r->data ? cJSON_ParseWithLength(r->data, r->data_len) : NULL;
            sched__result_point(L->set, j, &pt, obj);
            cJSON_Delete(j);
        }
        if (L->ranked)
            sched_on_result_point(L->policy, t->no, r->time_value, &pt, &d);
        else
            sched_on_result(L->policy, t->no, r->time_value, r->metric, &d);
        /* The same state and order give the same decision: a trial that was told to stop
         * before the crash, but had not ended yet, stays stopped. */
        if (!ended_for_good(c->L, t)) {
            if (sched__live(c->L, t) != 0) return resume_nomem(c->L);
            if (d.action == SCHED_STOP) t->x->stop = SCHED__STOP_EARLY;
            if (d.action == SCHED_COMPLETE) t->x->stop = SCHED__STOP_COMPLETE;
            /* paused by the policy at its last result: it waits for choose_next again */
            t->x->policy_paused = d.action == SCHED_PAUSE;
        }
        /* the searcher too sees every result again in arrival order */
        if (L->searcher && (k_search ? space_searcher_observe_k(L->searcher, (size_t)t->no,
                                                                r->time_value, obj, pt.violation)
                                     : space_searcher_observe(L->searcher, (size_t)t->no,
                                                              r->time_value, r->metric)) != 0) {
            snprintf(c->L->end.fatal_msg, sizeof c->L->end.fatal_msg,
                     "cannot resume: out of memory in the searcher");
            return -1;
        }
    }
    t->reported = 1;
    if (c->last_iter) c->last_iter[t->no] = r->iteration;
    if (r->attempt > c->last_attempt[t->no]) c->last_attempt[t->no] = r->attempt;
    if (r->attempt == t->attempt) {
        t->iters++;
        t->last_time = r->time_value;
        t->last_metric = r->metric;
        if (sched__better(c->L->set->mode == SPACE_MODE_MAX, r->metric, t->best_metric))
            t->best_metric = r->metric;
    }
    c->L->seen.results++;
    return 0;
}

static int on_stored_pause(void *ud, int64_t trial_id, int promoted, int64_t iteration)
{
    struct resume_ctx *c = ud;
    struct sched__trial *t = resume_trial(c, trial_id);
    if (t) c->promoted_at[t->no] = promoted ? iteration : -1;
    return 0;
}

static int on_stored_stop(void *ud, int64_t trial_id)
{
    struct resume_ctx *c = ud;
    struct sched__trial *t = resume_trial(c, trial_id);
    if (!t || ended_for_good(c->L, t)) return 0;
    if (sched__live(c->L, t) != 0) return resume_nomem(c->L);
    if (t->x->stop == SCHED__STOP_NONE) t->x->stop = SCHED__STOP_COMPLETE;
    return 0;
}

/* A stored checkpoint's trial, made live, with the checkpoint's path in buf; NULL for a
 * row of no trial of this run or, with live_only, of one that ended for good (*rc:
 * resume_nomem's code when out of memory, else 0). */
static struct sched__trial *stored_checkpoint(struct resume_ctx *c, const store_checkpoint_row_t *r,
                                              int live_only, char *buf, size_t n, int *rc)
{
    *rc = 0;
    struct sched__trial *t = resume_trial(c, r->trial_id);
    if (!t || (live_only && ended_for_good(c->L, t))) return NULL;
    if (sched__live(c->L, t) != 0) {
        *rc = resume_nomem(c->L);
        return NULL;
    }
    sched__ckpt_path(c->L, t, r->path, buf, n);
    return t;
}

/* The trial's last named checkpoint of its current attempt (absolute), so that an
 * interrupted trial restarts from it and PBT's donors have theirs. */
static int on_stored_checkpoint(void *ud, const store_checkpoint_row_t *r)
{
    char buf[8400];
    int rc;
    struct sched__trial *t = stored_checkpoint(ud, r, 1, buf, sizeof buf, &rc);
    if (!t) return rc;
    free(t->x->named_ckpt);
    t->x->named_ckpt = strdup(buf);
    t->x->named_ckpt_iter = r->iteration;
    t->x->named_ckpt_time = r->time_value;
    return 0;
}

/* pbt: every checkpoint a trial named and every copy an exploit made for it, oldest first,
 * noted again as the run noted them (quietly), so that keep_checkpoints trims what an
 * interruption left on disk, as if the run had never stopped. */
static int on_kept_checkpoint(void *ud, const store_checkpoint_row_t *r)
{
    struct resume_ctx *c = ud;
    char buf[8400];
    int rc;
    struct sched__trial *t = stored_checkpoint(c, r, 0, buf, sizeof buf, &rc);
    if (!t) return rc;
    char *slash = strrchr(buf, '/');
    if (r->copy && slash) *slash = 0; /* an exploit's copy: kept as its folder */
    sched__note_checkpoint(c->L, t, buf, 1);
    return 0;
}

/* PBT: an exploit recorded (lineage) whose new attempt had not started when tune died:
 * its trial restarts from the donor's checkpoint, pinned until it has restored. */
static int on_pending_exploit(void *ud, const store_lineage_t *l)
{
    struct resume_ctx *c = ud;
    struct sched__trial *t = resume_trial(c, l->trial_id);
    if (!t) return 0;
    if (sched__live(c->L, t) != 0) return resume_nomem(c->L);
    struct sched__trial *d = resume_trial(c, l->donor_trial_id);
    t->x->exploit_donor = d ? d->no + 1 : 0;
    free(t->x->exploit_src);
    free(t->x->exploit_dst);
    t->x->exploit_src = strdup(l->donor_checkpoint);
    t->x->exploit_dst = l->resume_from && strcmp(l->resume_from, l->donor_checkpoint) != 0
                            ? strdup(l->resume_from)
                            : NULL;
    t->x->pinned = 1;
    t->x->exploit_iter = l->donor_iteration;
    t->x->exploit_time = l->donor_time_value;
    /* the attempt before the new one: the restart below adds one; until the new one's
     * first result the store shows the trial's own */
    t->x->shown = t->attempt;
    t->attempt = l->attempt - 1;
    return 0;
}

/* Where an interrupted trial goes on from: the checkpoint its results named last (when it
 * is still there), else the newest checkpoint* file in its folder, else NULL (scratch). */
static char *resume_point(const struct sched_loop *L, const struct sched__trial *t, int64_t *iter,
                          int *known)
{
    struct stat sb;
    *known = 0;
    if (t->x->named_ckpt && stat(t->x->named_ckpt, &sb) == 0) {
        *iter = t->x->named_ckpt_iter;
        *known = 1;
        return strdup(t->x->named_ckpt);
    }
    return sched__newest_checkpoint(L, t);
}

/* A stored trial that will run again waits, as `status`: PAUSED for the policy to choose
 * it (resumed from its checkpoint), PENDING for a slice before any new trial (a retry). */
static int wait_again(struct sched_loop *L, struct sched__trial *t, sched_trial_status_t status,
                      char *err, size_t errlen)
{
    t->status = status;
    t->x->stop = SCHED__STOP_NONE;
    t->slice_str = "";
    store_trial_update_t u = {.fields = STORE_TU_STATUS, .status = sched_status_name(status)};
    if (store_trial_update(L->o->store, t->id, &u, err, errlen) != 0) return -1;
    if (status == SCHED_TRIAL_PAUSED)
        L->q.paused[L->q.npaused++] = (size_t)t->no;
    else
        L->q.retry[L->q.nretry++] = (size_t)t->no;
    return 0;
}

/* After the replay: each trial that was running, paused or waiting for another attempt
 * when tune stopped is set to go on as it would have, and its row says so.
 * last_attempt[i]: the newest attempt of trial i with results; promoted[i] (NULL: none):
 * the policy promoted trial i from its milestone and nothing came of it before tune
 * stopped. */
static int restart_interrupted(struct sched_loop *L, const int *last_attempt,
                               const unsigned char *promoted, char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    if (store_begin(o->store, err, errlen) != 0) return SCHED_EINVAL;
    for (size_t i = 0; i < L->rec.nloaded; i++) {
        struct sched__trial *t = sched__find(L, i);
        if (!t) continue; /* forgotten already: its chunk's trials all ended */
        if (t->status == SCHED_TRIAL_TERMINATED || t->status == SCHED_TRIAL_ERROR) {
            sched_on_trial_complete(L->policy, t->no);
            sched__searcher_end(L, t);
            sched__retire(L, t);
            continue;
        }
        /* Waiting for another attempt when tune stopped (a retry, or a resume's restart
         * that had not started yet): it ran before, and goes on as an interrupted one. */
        int waited = t->status == SCHED_TRIAL_PENDING && (t->reported || t->attempt > 1);
        if ((t->status == SCHED_TRIAL_RUNNING || t->status == SCHED_TRIAL_PAUSED || waited ||
             t->x->exploit_src) &&
            sched__live(L, t) != 0) {
            snprintf(err, errlen, "out of memory");
            return SCHED_ENOMEM;
        }
        if ((t->status == SCHED_TRIAL_RUNNING || t->status == SCHED_TRIAL_PAUSED) &&
            t->x->stop != SCHED__STOP_NONE) {
            t->status = SCHED_TRIAL_TERMINATED;
            t->early_stopped = t->x->stop == SCHED__STOP_EARLY;
            store_trial_update_t u = {.fields =
                                          STORE_TU_STATUS | STORE_TU_EARLY_STOPPED | STORE_TU_ENDED,
                                      .status = "TERMINATED",
                                      .early_stopped = t->early_stopped,
                                      .ended_at = sched__wall(L)};
            if (store_trial_update(o->store, t->id, &u, err, errlen) != 0) return SCHED_EINVAL;
            sched_on_trial_complete(L->policy, t->no);
            sched__searcher_end(L, t);
            sched__retire(L, t);
        } else if ((t->status == SCHED_TRIAL_RUNNING || t->status == SCHED_TRIAL_PAUSED) &&
                   t->x->policy_paused && !(promoted && promoted[i])) {
            /* The policy had paused it: paused again, resumed when the policy chooses it.
             * One it had promoted already goes on as an interrupted trial (below): asked
             * again, the policy would promote it a second time, a decision the
             * uninterrupted run never makes. */
            t->x->resume_from = resume_point(L, t, &t->x->resume_iter, &t->x->has_resume_iter);
            if (wait_again(L, t, SCHED_TRIAL_PAUSED, err, errlen) != 0) return SCHED_EINVAL;
        } else if (t->x->exploit_src && t->status != SCHED_TRIAL_TERMINATED &&
                   t->status != SCHED_TRIAL_ERROR) {
            /* PBT exploited it and its new attempt had not started: it waits, paused, for
             * a slice like any exploited trial, and restarts from its copy of the donor's
             * checkpoint (sched__prepare_exploit) as the attempt the lineage row names. */
            if (wait_again(L, t, SCHED_TRIAL_PAUSED, err, errlen) != 0) return SCHED_EINVAL;
        } else if (t->status == SCHED_TRIAL_RUNNING || t->status == SCHED_TRIAL_PAUSED || waited) {
            /* Interrupted: a new attempt, from its checkpoint where there is one, continuing
             * the attempt the store shows (sched__take_over at its first result): however
             * many interruptions came before, its history is carried once, whole. */
            t->x->resume_from = resume_point(L, t, &t->x->resume_iter, &t->x->has_resume_iter);
            t->x->carry = t->x->resume_from != NULL;
            int shown = t->attempt;
            if (last_attempt[i] > 0 && last_attempt[i] < shown && t->iters == 0)
                shown = last_attempt[i]; /* an older tune moved the row on at the launch */
            t->x->shown = shown;
            t->attempt = (last_attempt[i] > t->attempt ? last_attempt[i] : t->attempt) + 1;
            if (wait_again(L, t, SCHED_TRIAL_PENDING, err, errlen) != 0) return SCHED_EINVAL;
        }
    }
    return store_commit(o->store, err, errlen) == 0 ? 0 : SCHED_EINVAL;
}

static int load_trials(struct sched_loop *L, char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    if (store_trials_load(o->store, o->experiment_id, on_stored_trial, L, err, errlen) != 0)
        return SCHED_EINVAL;
    if (L->end.fatal_msg[0]) { /* a callback stopped the load */
        snprintf(err, errlen, "%s", L->end.fatal_msg);
        return SCHED_EINVAL;
    }
    struct resume_ctx c = {L,    calloc(L->rec.n ? L->rec.n : 1, sizeof *c.by_id),
                           0,    calloc(L->rec.n ? L->rec.n : 1, sizeof *c.last_attempt),
                           NULL, NULL};
    unsigned char *promoted = NULL;
    if (L->caps & SCHED_CAP_PAUSE) {
        size_t n = L->rec.n ? L->rec.n : 1;
        c.last_iter = malloc(n * sizeof *c.last_iter);
        c.promoted_at = malloc(n * sizeof *c.promoted_at);
        promoted = calloc(n, 1);
        for (size_t i = 0; c.last_iter && c.promoted_at && i < n; i++)
            c.last_iter[i] = c.promoted_at[i] = -1;
    }
    if (!c.by_id || !c.last_attempt ||
        ((L->caps & SCHED_CAP_PAUSE) && (!c.last_iter || !c.promoted_at || !promoted))) {
        free(c.by_id);
        free(c.last_attempt);
        free(c.last_iter);
        free(c.promoted_at);
        free(promoted);
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    for (size_t i = 0; i < L->rec.nloaded; i++)
        if (sched__at(L, i)->id > 0) c.by_id[c.nby++] = (struct id_index){sched__at(L, i)->id, i};
    qsort(c.by_id, c.nby, sizeof *c.by_id, cmp_id);
    /* a ranked policy, or a searcher of several objectives or constraints, reads each
     * result's objectives and constraints again: its JSON */
    int rc = (L->ranked || space_searcher_takes_points(L->searcher) ? store_results_replay_data
                                                                    : store_results_replay)(
        o->store, o->experiment_id, on_stored_result, &c, err, errlen);
    if (rc == 0) {
        /* A trial that had reached a "stop" criterion (a recorded decision) but was still in
         * its completion grace when tune died is done too, as the policy's replay finds for
         * max_t. */
        int64_t x = o->experiment_id;
        rc = store_criterion_stops(o->store, x, on_stored_stop, &c, err, errlen);
        /* Where each trial stands: the latest checkpoint any of its attempts named, then
         * (overriding) the copy its current attempt started from after an exploit, then
         * the latest its current attempt named. */
        if (rc == 0)
            rc = store_checkpoints(o->store, x, STORE_CKPT_NAMED, on_stored_checkpoint, &c, err,
                                   errlen);
        if (rc == 0 && (L->caps & SCHED_CAP_EXPLOIT))
            rc = store_checkpoints(o->store, x, STORE_CKPT_RESTORED, on_stored_checkpoint, &c, err,
                                   errlen);
        if (rc == 0)
            rc = store_checkpoints(o->store, x, STORE_CKPT_NAMED_CURRENT, on_stored_checkpoint, &c,
                                   err, errlen);
        if (rc == 0 && (L->caps & SCHED_CAP_EXPLOIT))
            rc = store_exploits_pending(o->store, x, on_pending_exploit, &c, err, errlen);
        /* last: what each trial still needs (named_ckpt, the pending exploits) is known */
        if (rc == 0 && (L->caps & SCHED_CAP_EXPLOIT))
            rc = store_checkpoints(o->store, x, STORE_CKPT_ON_DISK, on_kept_checkpoint, &c, err,
                                   errlen);
    }
    /* promoted, and interrupted before its promoted attempt reported (its latest result is
     * still the one it was promoted at) */
    if (rc == 0 && promoted)
        rc = store_pauses(o->store, o->experiment_id, on_stored_pause, &c, err, errlen);
    for (size_t i = 0; rc == 0 && promoted && i < L->rec.nloaded; i++)
        promoted[i] = c.promoted_at[i] >= 0 && c.promoted_at[i] == c.last_iter[i];
    free(c.by_id);
    free(c.last_iter);
    free(c.promoted_at);
    if (rc == 0 && L->end.fatal_msg[0]) snprintf(err, errlen, "%s", L->end.fatal_msg);
    rc = rc == 0 && !L->end.fatal_msg[0]
             ? restart_interrupted(L, c.last_attempt, promoted, err, errlen)
             : SCHED_EINVAL;
    free(c.last_attempt);
    free(promoted);
    return rc;
}

/* The searcher, for TPE or points_to_evaluate, told the milestones of the policy's first
 * bracket (ASHA's rungs; docs/search.md), where it has any from the start. */
static int make_searcher(struct sched_loop *L, char *err, size_t errlen)
{
    const space_settings_t *set = L->set;
    if (!space_searcher_adaptive(set) && set->npoints == 0 && !L->o->choices) return 0;
    space_search_opts_t so = {set->search, set->search_preset, set->mode == SPACE_MODE_MAX,
                              set->seed,   set->nobjectives,   set->nconstraints > 0};
    if (space_searcher_new(L->o->space, &so, &L->searcher, err, errlen) != 0) return SCHED_EINVAL;
    space_searcher_set_pool(L->searcher, set->search_pool); /* tpe.c: the pool's choice */
    size_t n =
        sched_policy_rungs(L->policy, L->rep.rungs, sizeof L->rep.rungs / sizeof L->rep.rungs[0]);
    double ms[256];
    size_t k = 0;
    for (size_t i = 0; i < n && i < 256; i++) {
        const sched_rung_info_t *r = &L->rep.rungs[i];
        if (r->bracket != 0 || !(r->milestone > 0)) continue;
        if (k > 0 && !(r->milestone > ms[k - 1])) continue;
        ms[k++] = r->milestone;
    }
    if (k > 0 && space_searcher_set_rungs(L->searcher, ms, k) != 0) {
        snprintf(err, errlen, "the searcher cannot take ASHA's milestones");
        return SCHED_EINVAL;
    }
    return 0;
}

/* The trials' records, and on resume what the store has of them. Their rows are made by
 * sched__make_rows, in the first turn. */
int sched__create_trials(struct sched_loop *L, char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    L->rec.n = space_num_trials(o->space);
    /* each trial takes one configuration of a pool: none start once it is exhausted */
    if (o->choices && o->choices->size < L->rec.n) L->rec.n = o->choices->size;
    size_t nchunks = L->rec.n / SCHED__CHUNK + 1;
    L->rec.chunk = calloc(nchunks, sizeof *L->rec.chunk);
    L->rec.chunk_state = calloc(nchunks, sizeof *L->rec.chunk_state);
    L->rec.chunk_gone = calloc(nchunks, sizeof *L->rec.chunk_gone);
    /* Untouched pages of these cost no memory: calloc maps them zero on demand. */
    L->rec.row_id = calloc(L->rec.n ? L->rec.n : 1, sizeof *L->rec.row_id);
    L->q.retry = calloc(L->rec.n ? L->rec.n : 1, sizeof *L->q.retry);
    L->q.run = calloc(L->rec.n ? L->rec.n : 1, sizeof *L->q.run);
    L->q.paused = calloc(L->rec.n ? L->rec.n : 1, sizeof *L->q.paused);
    L->q.paused_ids = calloc(L->rec.n ? L->rec.n : 1, sizeof *L->q.paused_ids);
    L->rec.gone_best = NAN;
    L->rec.gone_best_no = -1;
    if (!L->rec.chunk || !L->rec.chunk_state || !L->rec.chunk_gone || !L->rec.row_id ||
        !L->q.retry || !L->q.run || !L->q.paused || !L->q.paused_ids) {
        snprintf(err, errlen, "out of memory for %zu trials", L->rec.n);
        return SCHED_ENOMEM;
    }
    int rc = make_searcher(L, err, errlen);
    if (rc != 0) return rc;
    /* Random search without PBT: a configuration is a function of the seed and the trial
     * number, so a trial holds its own only while it runs (sched__config); and when the
     * snapshots hand out only report_trials trials, a finished trial can be forgotten. */
    L->rec.resample = !L->searcher && !(L->caps & SCHED_CAP_EXPLOIT);
    L->rec.may_forget = L->rec.resample && o->report_trials > 0 && o->report_trials < L->rec.n;
    if (L->rec.may_forget && !(L->rec.kept = calloc(o->report_trials, sizeof *L->rec.kept))) {
        snprintf(err, errlen, "out of memory for %zu trials", L->rec.n);
        return SCHED_ENOMEM;
    }
    if (!L->rec.may_forget) {
        for (size_t c = 0; c * SCHED__CHUNK < L->rec.n; c++)
            if ((rc = sched__make_chunk(L, c, err, errlen)) != 0) return rc;
        /* Bracket assignment follows trial order, so a resumed policy assigns the same;
         * with may_forget a trial is announced at its launch, in the same order. */
        if (L->rec.n > 0 && sched__add_upto(L, L->rec.n - 1) != 0) {
            snprintf(err, errlen, "scheduler cannot take %zu trials", L->rec.n);
            return SCHED_EINVAL;
        }
    }
    if (o->resume && (rc = load_trials(L, err, errlen)) != 0) return rc;
    return SCHED_OK;
}
