/* A trial's life: created (configuration sampled, row recorded), launched into a slice
 * through the executor, asked to stop, ended (recorded as finished, stopped, paused or
 * failed), retried from its checkpoint, and rebuilt from the store on resume. Not for:
 * the loop's turn (loop.c), the per-result path (result.c) or checkpoints (ckpt.c). */
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

static void free_live(struct sched__live *x);
static void running(struct sched_loop *L, struct sched__trial *t, const sched_slice_t *sl,
                    const sched_started_t *st);

static void count_early_failure(struct sched_loop *L, struct sched__trial *t, const char *msg);

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
    count_early_failure(L, t, msg);
    sched_on_trial_complete(L->policy, t->no);
    sched__searcher_end(L, t);
    sched__retire(L, t);
}

void sched__searcher_end(struct sched_loop *L, const struct sched__trial *t)
{
    if (L->searcher) space_searcher_trial_end(L->searcher, (size_t)t->no, t->early_stopped);
}

/* Records trial t's row (PENDING, as sched__create_trials does for every trial up front)
 * with its configuration and why it was chosen; suggested_by may be NULL. */
static int create_row(struct sched_loop *L, struct sched__trial *t, const char *suggested_by,
                      char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    char *cfg = space_json_print(t->config);
    if (!cfg) {
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", o->results_dir, t->name);
    int rc = store_trial_create(o->store, o->experiment_id, t->no, t->name, cfg, dir, &t->id, err,
                                errlen);
    free(cfg);
    if (rc == 0 && suggested_by) {
        store_trial_update_t u = {.fields = STORE_TU_SUGGESTED, .suggested_by = suggested_by};
        rc = store_trial_update(o->store, t->id, &u, err, errlen);
    }
    return rc == 0 ? 0 : SCHED_EINVAL;
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
    return create_row(L, t, why, err, errlen);
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
        crc = L->resample ? space_sample(L->o->space, (size_t)t->no, &t->config, err, errlen)
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
    if (!x->ops->cancel || L->no_hold || L->stopping || L->fatal || !L->resample || L->searcher ||
        L->is_pbt || L->set->sched.promotion || L->npaused || L->nretry || !L->results_seen ||
        !L->metric_checked || L->nearly > 0 || L->nheld >= L->running || L->next >= L->n)
        return 0;
    struct sched__trial *t = sched__make(L, L->next);
    if (!t || t->status != SCHED_TRIAL_PENDING || t->id <= 0) return 0;
    /* Only behind a trial that is ending: one the policy stopped, one that reached max_t (it
     * exits by itself, or is stopped after the grace) or one past a time limit. Behind one
     * that runs on, the next trial would wait for it while another slice freed first, and
     * what its start was given at the hold (MASTER_PORT, probed free then) would grow old.
     * The one signalled first, else the first to have been told. */
    struct sched__trial *a = NULL;
    for (size_t k = 0; k < L->running; k++) {
        struct sched__trial *r = sched__at(L, L->run[k]);
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
        L->no_hold = 1;
        return 0;
    }
    if (rc == 1) return 0;
    L->next++;
    if (rc != 0) {
        finish_error(L, t, err);
        return 1;
    }
    t->x->held_after = a->no + 1;
    a->x->successor = t->no + 1;
    L->nheld++;
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
    L->nheld--;
    L->retry[L->nretry++] = (size_t)t->no; /* first in line, before `next` */
    return 1;
}

int sched__slice_free(struct sched_loop *L)
{
    const space_settings_t *set = L->set;
    if (set->max_concurrent > 0 && (int)L->running >= set->max_concurrent) return 0;
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
    t->x->run_pos = L->running;
    L->run[L->running] = (size_t)t->no;
    t->x->slice = slice;
    t->x->has_slice = 1;
    t->status = SCHED_TRIAL_RUNNING;
    t->x->killed = 0;
    t->x->started_at = t->x->last_result_at = sched__now(L);
    t->x->first_result_at = 0;
    t->x->term_sent = 0;
    free(t->x->named_ckpt);
    t->x->named_ckpt = NULL;
    snprintf(t->x->exec_id, sizeof t->x->exec_id, "%s", st->exec_id ? st->exec_id : "");
    snprintf(t->x->node, sizeof t->x->node, "%s", st->node ? st->node : "");
    char slice_txt[64];
    sched_slice_format(L->o->pool, &slice, slice_txt, sizeof slice_txt);
    t->slice_str = sched__intern(L, slice_txt);
    L->running++;
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

static const char *signame(int sig)
{
    switch (sig) {
    case SIGKILL:
        return "SIGKILL";
    case SIGTERM:
        return "SIGTERM";
    case SIGSEGV:
        return "SIGSEGV";
    case SIGABRT:
        return "SIGABRT";
    case SIGINT:
        return "SIGINT";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    default:
        return "signal";
    }
}

/* CUDA's out-of-memory errors, as the CUDA runtime, cuBLAS/cuDNN and PyTorch print them. */
static int looks_like_cuda_oom(const char *tail)
{
    return strstr(tail, "CUDA out of memory") || strstr(tail, "CUDA_ERROR_OUT_OF_MEMORY") ||
           strstr(tail, "cudaErrorMemoryAllocation") ||
           strstr(tail, "CUBLAS_STATUS_ALLOC_FAILED") ||
           strstr(tail, "CUDNN_STATUS_ALLOC_FAILED") || strstr(tail, "out of memory allocating");
}

/* The last line of a stderr tail with something in it, escaped and cut short; 0 if none. */
static int last_stderr_line(const char *tail, char *out, size_t n)
{
    size_t end = strlen(tail);
    for (;;) {
        while (end > 0 && (tail[end - 1] == '\n' || tail[end - 1] == '\r' || tail[end - 1] == ' ' ||
                           tail[end - 1] == '\t'))
            end--;
        if (end == 0) return 0;
        size_t start = end;
        while (start > 0 && tail[start - 1] != '\n')
            start--;
        size_t s = start;
        while (s < end && (tail[s] == ' ' || tail[s] == '\t'))
            s++;
        /* Python's caret lines ("    ^^^^") under a source line say nothing by themselves. */
        size_t k = s;
        while (k < end && (tail[k] == '^' || tail[k] == '~' || tail[k] == ' '))
            k++;
        if (k < end) {
            sched__escape_quote(tail + s, end - s, out, n, 200);
            return 1;
        }
        end = start;
    }
}

/* The first lines (at most 10) of a file, escaped, for a message; "" if unreadable. */
static void file_head(const char *path, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char buf[1500];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    size_t lines = 0, o = 0;
    for (size_t i = 0; i < k && lines < 10 && o + 8 < n; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch == '\n') {
            lines++;
            out[o++] = '\n';
        } else if (ch < 0x20 && ch != '\t') {
            o += (size_t)snprintf(out + o, n - o, "\\x%02x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o < n ? o : n - 1] = 0;
}

/* fail_fast (Ray Tune's FailureConfig(fail_fast=...), counted): trials that fail before
 * reporting anything, with the same message once their own directory and name are taken
 * out of it, are the same mistake each time (a wrong path, a missing module); after
 * fail_fast of them the experiment stops instead of failing every trial. */
static void count_early_failure(struct sched_loop *L, struct sched__trial *t, const char *msg)
{
    if (L->set->fail_fast <= 0 || t->reported || L->stopping) return;
    char norm[512];
    size_t o = 0;
    size_t dl = t->x->dir ? strlen(t->x->dir) : 0, nl = strlen(t->name);
    for (const char *p = msg; *p && o + 16 < sizeof norm;) {
        if (dl && strncmp(p, t->x->dir, dl) == 0) {
            o += (size_t)snprintf(norm + o, sizeof norm - o, "{trial_dir}");
            p += dl;
        } else if (nl && strncmp(p, t->name, nl) == 0) {
            o += (size_t)snprintf(norm + o, sizeof norm - o, "{trial}");
            p += nl;
        } else {
            norm[o++] = *p++;
        }
    }
    norm[o] = 0;
    size_t i = 0;
    while (i < L->nearly && strcmp(L->early[i].msg, norm) != 0)
        i++;
    if (i == L->nearly) {
        if (L->nearly == sizeof L->early / sizeof L->early[0]) return;
        snprintf(L->early[i].msg, sizeof L->early[i].msg, "%s", norm);
        L->early[i].first = t->no;
        L->nearly++;
    }
    if (++L->early[i].count < L->set->fail_fast) return;
    char m[800];
    snprintf(m, sizeof m,
             "%d trial%s failed the same way before reporting any result (fail_fast %d): %s",
             L->early[i].count, L->early[i].count == 1 ? "" : "s", L->set->fail_fast, msg);
    int64_t first = L->early[i].first;
    sched__end_experiment(L, SCHED_END_FAIL_FAST, first, m);
    {
        /* its folder, as sched__launch named it (its record may be gone) */
        char path[4200], head[1600];
        snprintf(path, sizeof path, "%s/trial_%05lld/stderr.log", L->o->results_dir,
                 (long long)first);
        file_head(path, head, sizeof head);
        snprintf(L->end_detail, sizeof L->end_detail, "First lines of %.400s:\n%.1500s", path,
                 head[0] ? head : "(empty)\n");
    }
}

/* Results that all arrived within a second of the trial's exit, although it ran for
 * several seconds: its output was buffered until exit. */
static void check_buffered(struct sched_loop *L, struct sched__trial *t)
{
    if (t->iters < 2 || t->x->first_result_at == 0) return;
    if (t->x->stop != SCHED__STOP_NONE && t->x->stop != SCHED__STOP_COMPLETE) return;
    double now = sched__now(L);
    if (now - t->x->first_result_at <= 1.0 && now - t->x->started_at >= 3.0) {
        if (L->buffered++ == 0) L->buffered_trial = t->no;
    }
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
    size_t last = L->run[--L->running];
    L->run[t->x->run_pos] = last;
    sched__at(L, last)->x->run_pos = t->x->run_pos;
    if (b) {
        b->x->held_after = 0;
        L->nheld--;
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
    L->paused[L->npaused++] = (size_t)t->no;
}

int sched__resume(struct sched_loop *L, size_t k, const sched_decision_t *why)
{
    struct sched__trial *t = sched__at(L, L->paused[k]);
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
    memmove(L->paused + k, L->paused + k + 1, (--L->npaused - k) * sizeof *L->paused);
    char reason[600];
    int promote = why && why->rung >= 0;
    if (t->x->exploit_src)
        snprintf(reason, sizeof reason,
                 "restarted after its exploit: attempt %d, its new configuration, from %s (a copy "
                 "of %s)",
                 t->attempt, t->x->resume_from ? t->x->resume_from : "?", t->x->exploit_src);
    else if (L->is_pbt)
        snprintf(reason, sizeof reason,
                 "resumed, least progressed of the paused trials (%s %g): attempt %d from %s",
                 L->set->sched.time_attr, why ? why->milestone : NAN, t->attempt,
                 t->x->resume_from ? t->x->resume_from : "scratch (no checkpoint)");
    else if (promote)
        snprintf(reason, sizeof reason,
                 "promoted from rung %d (milestone %g): %g is in the rung's top 1/rf (bar %g); "
                 "attempt %d resumes from %s",
                 why->rung, why->milestone, why->value, why->cutoff, t->attempt,
                 t->x->resume_from ? t->x->resume_from : "scratch (no checkpoint)");
    else
        snprintf(reason, sizeof reason, "resumed (nothing new pending): attempt %d from %s",
                 t->attempt, t->x->resume_from ? t->x->resume_from : "scratch (no checkpoint)");
    store_decision_t sd = {.trial_id = t->id,
                           .iteration = saved.iters,
                           .time_value = saved.last_time,
                           .action = promote && !L->is_pbt ? "promote" : "resume",
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

void sched__end_paused(struct sched_loop *L)
{
    for (size_t k = 0; k < L->npaused; k++) {
        struct sched__trial *t = sched__at(L, L->paused[k]);
        if (t->status != SCHED_TRIAL_PAUSED) continue;
        if (t->x->shown) sched__take_over(L, t, INT64_MAX); /* see sched__ended */
        t->status = SCHED_TRIAL_TERMINATED;
        t->early_stopped = 1;
        sched__add_note(L, t, "stop", t->iters, t->last_time, t->last_metric,
                        "still paused when nothing else was left to run: the policy never "
                        "chose to resume it");
        store_trial_update_t u = {.fields =
                                      STORE_TU_STATUS | STORE_TU_EARLY_STOPPED | STORE_TU_ENDED,
                                  .status = "TERMINATED",
                                  .early_stopped = 1,
                                  .ended_at = sched__wall(L)};
        sched__update_row(L, t, &u);
        sched_on_trial_complete(L->policy, t->no);
        sched__searcher_end(L, t);
        sched__retire(L, t);
    }
    L->npaused = 0;
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
    check_buffered(L, t);
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
            snprintf(msg, sizeof msg, "killed by signal %d (%s)", ex->signal, signame(ex->signal));
        else
            snprintf(msg, sizeof msg, "exited with code %d", ex->code);
    }
    char tail[2048] = "";
    if (t->status == SCHED_TRIAL_ERROR && t->x->dir) {
        char path[4200];
        snprintf(path, sizeof path, "%s/stderr.log", t->x->dir);
        trial_file_tail(path, tail, sizeof tail);
        /* The cause is usually the last line the program wrote to stderr (a Python
         * traceback ends with the exception): it goes with the exit code. */
        char last[256];
        int oom = looks_like_cuda_oom(tail);
        if (!oom && t->x->stop != SCHED__STOP_TIMEOUT &&
            last_stderr_line(tail, last, sizeof last)) {
            size_t k = strlen(msg);
            snprintf(msg + k, sizeof msg - k, ": %s", last);
        }
        if (oom) {
            char m2[sizeof msg];
            snprintf(m2, sizeof m2,
                     "CUDA out of memory (%.300s): lower the batch size, give each trial more GPU "
                     "memory (gpus_per_trial 1 instead of a fraction), or run fewer trials per GPU",
                     msg);
            snprintf(msg, sizeof msg, "%s", m2);
        }
        free(t->error);
        t->error = strdup(msg);
    }
    /* A failed attempt is retried up to max_failures times, from the trial's last
     * checkpoint when it wrote one (Ray Tune's max_failures / FailureConfig). */
    int retry =
        t->status == SCHED_TRIAL_ERROR && t->failures < L->set->max_failures && !L->stopping;
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
        L->retry[L->nretry++] = (size_t)t->no;
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
    if (t->status == SCHED_TRIAL_ERROR) count_early_failure(L, t, msg);
    sched_on_trial_complete(L->policy, t->no);
    sched__searcher_end(L, t);
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
    return L->fatal ? -1 : 0;
}

int64_t sched__counted_iteration(const struct sched__trial *t)
{
    if (!t->x->shown) return t->iters + 1;
    if (!t->x->carry) return 1;
    return (t->x->has_resume_iter ? t->x->resume_iter : t->iters) + 1;
}

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
    return !L->is_pbt && (t->status == SCHED_TRIAL_TERMINATED || t->status == SCHED_TRIAL_ERROR);
}

static int resume_nomem(struct sched_loop *L)
{
    snprintf(L->fatal_msg, sizeof L->fatal_msg, "cannot resume: out of memory");
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
    if (r->trial_no < 0 || (size_t)r->trial_no >= L->n) return 0; /* not of this space */
    /* With may_forget only the stored trials get records (the rest are made as they are
     * needed, as in a first run), announced to the policy in trial order. */
    struct sched__trial *t = sched__make(L, (size_t)r->trial_no);
    if (!t || sched__add_upto(L, (size_t)r->trial_no) != 0) {
        snprintf(L->fatal_msg, sizeof L->fatal_msg, "cannot resume: out of memory");
        return -1;
    }
    if ((size_t)r->trial_no >= L->nloaded) L->nloaded = (size_t)r->trial_no + 1;
    L->row_id[r->trial_no] = r->id;
    t->id = r->id;
    t->status = status_from(r->status);
    t->early_stopped = r->early_stopped;
    t->attempt = r->attempt > 0 ? r->attempt : 1;
    if (r->error) t->error = strdup(r->error);
    if (r->slice) t->slice_str = sched__intern(L, r->slice);
    if (L->searcher || L->is_pbt) {
        /* Configurations were chosen as the run went (or explored by PBT): the stored ones
         * are the record, and the searcher learns each again (docs/search.md, "The loop's
         * rules"). A failure is worded into fatal_msg, unused before the loop runs. */
        char err[512] = "not JSON";
        cJSON_Delete(t->config);
        t->config = cJSON_Parse(r->config_json);
        if (!t->config ||
            (L->searcher && space_searcher_add_trial(L->searcher, (size_t)t->no, t->config, err,
                                                     sizeof err) != 0)) {
            snprintf(L->fatal_msg, sizeof L->fatal_msg,
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
        sched_decision_t d;
        sched_on_result(c->L->policy, t->no, r->time_value, r->metric, &d);
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
        if (c->L->searcher &&
            space_searcher_observe(c->L->searcher, (size_t)t->no, r->time_value, r->metric) != 0) {
            snprintf(c->L->fatal_msg, sizeof c->L->fatal_msg,
                     "cannot resume: out of memory in the searcher");
            return -1;
        }
    }
    t->reported = 1;
    if (r->attempt > c->last_attempt[t->no]) c->last_attempt[t->no] = r->attempt;
    if (r->attempt == t->attempt) {
        t->iters++;
        t->last_time = r->time_value;
        t->last_metric = r->metric;
        if (sched__better(c->L->set->mode == SPACE_MODE_MAX, r->metric, t->best_metric))
            t->best_metric = r->metric;
    }
    c->L->results++;
    return 0;
}

static int on_stored_stop(void *ud, int ncol, const char *const *names, const char *const *values,
                          const int *types)
{
    (void)names;
    (void)types;
    struct resume_ctx *c = ud;
    if (ncol < 1 || !values[0]) return 0;
    struct sched__trial *t = resume_trial(c, strtoll(values[0], NULL, 10));
    if (!t || ended_for_good(c->L, t)) return 0;
    if (sched__live(c->L, t) != 0) return resume_nomem(c->L);
    if (t->x->stop == SCHED__STOP_NONE) t->x->stop = SCHED__STOP_COMPLETE;
    return 0;
}

/* A stored row naming a checkpoint (values: the trial's row id, the name as the result
 * gave it): its trial, made live, with the checkpoint's path in buf; NULL for a row of no
 * trial of this run or, with live_only, of one that ended for good (*rc: resume_nomem's
 * code when out of memory, else 0). */
static struct sched__trial *stored_checkpoint(struct resume_ctx *c, int ncol,
                                              const char *const *values, int live_only, char *buf,
                                              size_t n, int *rc)
{
    *rc = 0;
    if (ncol < 4 || !values[0] || !values[1] || !values[1][0]) return NULL;
    struct sched__trial *t = resume_trial(c, strtoll(values[0], NULL, 10));
    if (!t || (live_only && ended_for_good(c->L, t))) return NULL;
    if (sched__live(c->L, t) != 0) {
        *rc = resume_nomem(c->L);
        return NULL;
    }
    sched__ckpt_path(c->L, t, values[1], buf, n);
    return t;
}

/* The trial's last named checkpoint of its current attempt (absolute), so that an
 * interrupted trial restarts from it and PBT's donors have theirs. */
static int on_stored_checkpoint(void *ud, int ncol, const char *const *names,
                                const char *const *values, const int *types)
{
    (void)names;
    (void)types;
    char buf[8400];
    int rc;
    struct sched__trial *t = stored_checkpoint(ud, ncol, values, 1, buf, sizeof buf, &rc);
    if (!t) return rc;
    free(t->x->named_ckpt);
    t->x->named_ckpt = strdup(buf);
    t->x->named_ckpt_iter = values[2] ? strtoll(values[2], NULL, 10) : 0;
    t->x->named_ckpt_time = values[3] ? strtod(values[3], NULL) : NAN;
    return 0;
}

/* pbt: every checkpoint a trial named and every copy an exploit made for it, oldest first,
 * noted again as the run noted them (quietly), so that keep_checkpoints trims what an
 * interruption left on disk, as if the run had never stopped. */
static int on_kept_checkpoint(void *ud, int ncol, const char *const *names,
                              const char *const *values, const int *types)
{
    (void)names;
    (void)types;
    struct resume_ctx *c = ud;
    char buf[8400];
    int rc;
    struct sched__trial *t = stored_checkpoint(c, ncol, values, 0, buf, sizeof buf, &rc);
    if (!t || !values[3]) return rc;
    char *slash = strrchr(buf, '/');
    if (values[3][0] == '1' && slash) *slash = 0; /* an exploit's copy: kept as its folder */
    sched__note_checkpoint(c->L, t, buf, 1);
    return 0;
}

/* PBT: an exploit recorded (lineage) whose new attempt had not started when tune died:
 * its trial restarts from the donor's checkpoint, pinned until it has restored. */
static int on_pending_exploit(void *ud, int ncol, const char *const *names,
                              const char *const *values, const int *types)
{
    (void)names;
    (void)types;
    struct resume_ctx *c = ud;
    if (ncol < 7 || !values[0] || !values[1] || !values[2]) return 0;
    struct sched__trial *t = resume_trial(c, strtoll(values[0], NULL, 10));
    if (!t) return 0;
    if (sched__live(c->L, t) != 0) return resume_nomem(c->L);
    struct sched__trial *d = values[6] ? resume_trial(c, strtoll(values[6], NULL, 10)) : NULL;
    t->x->exploit_donor = d ? d->no + 1 : 0;
    free(t->x->exploit_src);
    free(t->x->exploit_dst);
    t->x->exploit_src = strdup(values[2]);
    t->x->exploit_dst = values[3] && strcmp(values[3], values[2]) != 0 ? strdup(values[3]) : NULL;
    t->x->pinned = 1;
    t->x->exploit_iter = values[4] ? strtoll(values[4], NULL, 10) : 0;
    t->x->exploit_time = values[5] ? strtod(values[5], NULL) : NAN;
    /* the attempt before the new one: the restart below adds one; until the new one's
     * first result the store shows the trial's own */
    t->x->shown = t->attempt;
    t->attempt = (int)strtol(values[1], NULL, 10) - 1;
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
        L->paused[L->npaused++] = (size_t)t->no;
    else
        L->retry[L->nretry++] = (size_t)t->no;
    return 0;
}

/* After the replay: each trial that was running, paused or waiting for another attempt
 * when tune stopped is set to go on as it would have, and its row says so.
 * last_attempt[i]: the newest attempt of trial i with results. */
static int restart_interrupted(struct sched_loop *L, const int *last_attempt, char *err,
                               size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    if (store_begin(o->store, err, errlen) != 0) return SCHED_EINVAL;
    for (size_t i = 0; i < L->nloaded; i++) {
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
                   t->x->policy_paused) {
            /* The policy had paused it: paused again, resumed when the policy chooses it. */
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
    if (L->fatal_msg[0]) { /* a callback stopped the load */
        snprintf(err, errlen, "%s", L->fatal_msg);
        return SCHED_EINVAL;
    }
    struct resume_ctx c = {L, calloc(L->n ? L->n : 1, sizeof *c.by_id), 0,
                           calloc(L->n ? L->n : 1, sizeof *c.last_attempt)};
    if (!c.by_id || !c.last_attempt) {
        free(c.by_id);
        free(c.last_attempt);
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    for (size_t i = 0; i < L->nloaded; i++)
        if (sched__at(L, i)->id > 0) c.by_id[c.nby++] = (struct id_index){sched__at(L, i)->id, i};
    qsort(c.by_id, c.nby, sizeof *c.by_id, cmp_id);
    int rc = store_results_replay(o->store, o->experiment_id, on_stored_result, &c, err, errlen);
    if (rc == 0) {
        /* A trial that had reached a "stop" criterion (a recorded decision) but was still in
         * its completion grace when tune died is done too, as the policy's replay finds for
         * max_t. */
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)o->experiment_id);
        const char *b[] = {id};
        rc = store_query(o->store,
                         "SELECT d.trial_id FROM decisions d JOIN trials t ON t.id = d.trial_id"
                         " WHERE t.experiment_id = ?1 AND d.action = 'complete'"
                         " AND d.reason LIKE 'reached stop criterion %'",
                         b, 1, on_stored_stop, &c, err, errlen);
        /* Where each trial stands: the latest checkpoint any of its attempts named, then
         * (overriding) the copy its current attempt started from after an exploit, then
         * the latest its current attempt named. */
        if (rc == 0)
            rc = store_query(o->store,
                             "SELECT t.id, json_extract(r.data, '$.checkpoint'), r.iteration,"
                             " r.time_value FROM trials t"
                             " JOIN result_ranges g ON g.trial_id = t.id"
                             " JOIN results r ON r.id BETWEEN g.first_id AND g.last_id"
                             " WHERE t.experiment_id = ?1 AND r.data LIKE '%\"checkpoint\"%'"
                             " ORDER BY r.id",
                             b, 1, on_stored_checkpoint, &c, err, errlen);
        if (rc == 0 && L->is_pbt)
            rc = store_query(o->store,
                             "SELECT l.trial_id, l.resume_from, l.donor_iteration,"
                             " l.donor_time_value FROM lineage l JOIN trials t ON t.id ="
                             " l.trial_id AND t.attempt = l.attempt WHERE l.experiment_id = ?1"
                             " ORDER BY l.id",
                             b, 1, on_stored_checkpoint, &c, err, errlen);
        if (rc == 0)
            rc = store_query(o->store,
                             "SELECT t.id, json_extract(r.data, '$.checkpoint'), r.iteration,"
                             " r.time_value FROM trials t"
                             " JOIN result_ranges g ON g.trial_id = t.id AND g.attempt = t.attempt"
                             " JOIN results r ON r.id BETWEEN g.first_id AND g.last_id"
                             " WHERE t.experiment_id = ?1 AND r.data LIKE '%\"checkpoint\"%'"
                             " ORDER BY r.id",
                             b, 1, on_stored_checkpoint, &c, err, errlen);
        if (rc == 0 && L->is_pbt)
            rc = store_query(o->store,
                             "SELECT l.trial_id, l.attempt, l.donor_checkpoint, l.resume_from,"
                             " l.donor_iteration, l.donor_time_value, l.donor_trial_id"
                             " FROM lineage l JOIN trials t "
                             "ON t.id = l.trial_id"
                             " WHERE l.experiment_id = ?1 AND l.attempt > t.attempt"
                             " AND t.status IN ('RUNNING', 'PAUSED', 'PENDING') ORDER BY l.id",
                             b, 1, on_pending_exploit, &c, err, errlen);
        /* last: what each trial still needs (named_ckpt, the pending exploits) is known */
        if (rc == 0 && L->is_pbt)
            rc = store_query(o->store,
                             "SELECT t.id, json_extract(r.data, '$.checkpoint'), r.wall_time, 0"
                             " FROM trials t JOIN result_ranges g ON g.trial_id = t.id"
                             " JOIN results r ON r.id BETWEEN g.first_id AND g.last_id"
                             " WHERE t.experiment_id = ?1 AND r.data LIKE '%\"checkpoint\"%'"
                             " UNION ALL SELECT l.trial_id, l.resume_from, l.wall_time, 1"
                             " FROM lineage l WHERE l.experiment_id = ?1"
                             " AND l.resume_from IS NOT l.donor_checkpoint ORDER BY 3, 4",
                             b, 1, on_kept_checkpoint, &c, err, errlen);
    }
    free(c.by_id);
    if (rc == 0 && L->fatal_msg[0]) snprintf(err, errlen, "%s", L->fatal_msg);
    rc = rc == 0 && !L->fatal_msg[0] ? restart_interrupted(L, c.last_attempt, err, errlen)
                                     : SCHED_EINVAL;
    free(c.last_attempt);
    return rc;
}

/* The searcher, for TPE or points_to_evaluate, told ASHA's milestones. With more than one
 * bracket it models the first bracket's rungs (docs/search.md). */
static int make_searcher(struct sched_loop *L, char *err, size_t errlen)
{
    const space_settings_t *set = L->set;
    if (!space_searcher_adaptive(set) && set->npoints == 0) return 0;
    space_search_opts_t so = {set->search, set->search_preset, set->mode == SPACE_MODE_MAX,
                              set->seed};
    if (space_searcher_new(L->o->space, &so, &L->searcher, err, errlen) != 0) return SCHED_EINVAL;
    if (set->sched.type != SPACE_SCHED_ASHA) return 0;
    size_t n = sched_policy_rungs(L->policy, L->rungs, sizeof L->rungs / sizeof L->rungs[0]);
    double ms[256];
    size_t k = 0;
    for (size_t i = 0; i < n && i < 256; i++) {
        const sched_rung_info_t *r = &L->rungs[i];
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

/* Announces trials to the policy up to trial i, in trial order (a resumed policy then
 * draws the same brackets). */
int sched__add_upto(struct sched_loop *L, size_t i)
{
    for (; L->nadded <= i && L->nadded < L->n; L->nadded++)
        if (sched_on_trial_add(L->policy, (int64_t)L->nadded) != 0) return SCHED_EINVAL;
    return SCHED_OK;
}

/* Makes chunk c: its trials' records as a first run starts them (the metric columns of
 * the chunk in one block, which its first record's `columns` owns). */
static int make_chunk(struct sched_loop *L, size_t c, char *err, size_t errlen)
{
    size_t lo = c * SCHED__CHUNK, k = sched__chunk_size(L, c);
    struct sched__trial *v = calloc(k, sizeof *v);
    double *cols = L->ncols > 0 ? malloc(k * L->ncols * sizeof *cols) : NULL;
    if (!v || (L->ncols > 0 && !cols)) {
        free(v);
        free(cols);
        snprintf(err, errlen, "out of memory for %zu trials", L->n);
        return SCHED_ENOMEM;
    }
    for (size_t j = 0; j < k; j++) {
        struct sched__trial *t = &v[j];
        size_t i = lo + j;
        t->no = (int64_t)i;
        t->id = L->row_id[i];
        t->x = &L->nolive;
        t->last_time = t->last_metric = t->best_metric = NAN;
        t->attempt = 1;
        t->slice_str = "";
        if (cols) {
            t->columns = cols + j * L->ncols;
            for (size_t m = 0; m < L->ncols; m++)
                t->columns[m] = NAN;
        }
        snprintf(t->name, sizeof t->name, "trial_%05zu", i);
        if (!L->searcher && !L->resample &&
            space_sample(L->o->space, i, &t->config, err, errlen) != 0) {
            for (size_t m = 0; m < j; m++)
                cJSON_Delete(v[m].config);
            free(cols);
            free(v);
            return SCHED_EINVAL;
        }
    }
    L->chunk[c] = v;
    L->chunk_state[c] = SCHED__CHUNK_MADE;
    return SCHED_OK;
}

struct sched__trial *sched__make(struct sched_loop *L, size_t i)
{
    size_t c = i / SCHED__CHUNK;
    char err[256];
    if (!L->chunk[c] &&
        (L->chunk_state[c] == SCHED__CHUNK_FREED || make_chunk(L, c, err, sizeof err) != 0))
        return NULL;
    return sched__at(L, i);
}

static void free_chunk(struct sched_loop *L, size_t c)
{
    struct sched__trial *v = L->chunk[c];
    if (!v) return;
    for (size_t j = 0; j < sched__chunk_size(L, c); j++) {
        struct sched__trial *t = &v[j];
        cJSON_Delete(t->config);
        free(t->error);
        if (t->x == &L->nolive) continue;
        if (t->x->started) L->o->exec->ops->release(L->o->exec->self, t->no);
        if (t->x->has_slice) sched_pool_release(L->o->pool, &t->x->slice);
        free_live(t->x);
    }
    free(v[0].columns);
    free(v);
    L->chunk[c] = NULL;
}

/* The trials' records, and on resume what the store has of them. Their rows are made by
 * sched__make_rows, in the first turn. */
int sched__create_trials(struct sched_loop *L, char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    L->n = space_num_trials(o->space);
    size_t nchunks = L->n / SCHED__CHUNK + 1;
    L->chunk = calloc(nchunks, sizeof *L->chunk);
    L->chunk_state = calloc(nchunks, sizeof *L->chunk_state);
    L->chunk_gone = calloc(nchunks, sizeof *L->chunk_gone);
    /* Untouched pages of these cost no memory: calloc maps them zero on demand. */
    L->row_id = calloc(L->n ? L->n : 1, sizeof *L->row_id);
    L->retry = calloc(L->n ? L->n : 1, sizeof *L->retry);
    L->run = calloc(L->n ? L->n : 1, sizeof *L->run);
    L->paused = calloc(L->n ? L->n : 1, sizeof *L->paused);
    L->paused_ids = calloc(L->n ? L->n : 1, sizeof *L->paused_ids);
    L->gone_best = NAN;
    L->gone_best_no = -1;
    if (!L->chunk || !L->chunk_state || !L->chunk_gone || !L->row_id || !L->retry || !L->run ||
        !L->paused || !L->paused_ids) {
        snprintf(err, errlen, "out of memory for %zu trials", L->n);
        return SCHED_ENOMEM;
    }
    int rc = make_searcher(L, err, errlen);
    if (rc != 0) return rc;
    /* Random search without PBT: a configuration is a function of the seed and the trial
     * number, so a trial holds its own only while it runs (sched__config); and when the
     * snapshots hand out only report_trials trials, a finished trial can be forgotten. */
    L->resample = !L->searcher && !L->is_pbt;
    L->may_forget = L->resample && o->report_trials > 0 && o->report_trials < L->n;
    if (L->may_forget && !(L->kept = calloc(o->report_trials, sizeof *L->kept))) {
        snprintf(err, errlen, "out of memory for %zu trials", L->n);
        return SCHED_ENOMEM;
    }
    if (!L->may_forget) {
        for (size_t c = 0; c * SCHED__CHUNK < L->n; c++)
            if ((rc = make_chunk(L, c, err, errlen)) != 0) return rc;
        /* Bracket assignment follows trial order, so a resumed policy assigns the same;
         * with may_forget a trial is announced at its launch, in the same order. */
        if (L->n > 0 && sched__add_upto(L, L->n - 1) != 0) {
            snprintf(err, errlen, "scheduler cannot take %zu trials", L->n);
            return SCHED_EINVAL;
        }
    }
    if (o->resume && (rc = load_trials(L, err, errlen)) != 0) return rc;
    return SCHED_OK;
}

int sched__make_rows(struct sched_loop *L, size_t upto, char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    if (upto > L->n) upto = L->n;
    for (; L->rows_next < upto; L->rows_next++) {
        size_t i = L->rows_next;
        struct sched__trial tmp, *t = sched__find(L, i);
        if (!t) { /* no record yet (may_forget): the row is made from a stand-in */
            memset(&tmp, 0, sizeof tmp);
            tmp.no = (int64_t)i;
            snprintf(tmp.name, sizeof tmp.name, "trial_%05zu", i);
            t = &tmp;
        }
        if (t->id > 0 || L->row_id[i] > 0) continue; /* recorded already */
        if (L->resample && space_sample(o->space, i, &t->config, err, errlen) != 0)
            return SCHED_EINVAL;
        if (!t->config) continue; /* chosen at launch */
        int rc = create_row(L, t, NULL, err, errlen);
        if (rc != 0) {
            if (t == &tmp) cJSON_Delete(tmp.config);
            return rc;
        }
        L->row_id[i] = t->id;
        if (L->resample) {
            cJSON_Delete(t->config);
            t->config = NULL;
        }
    }
    return SCHED_OK;
}

static void free_live(struct sched__live *x)
{
    if (x->copy_pid > 0) { /* a copy still under way: it stops here */
        kill((pid_t)x->copy_pid, SIGKILL);
        while (waitpid((pid_t)x->copy_pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    free(x->dir);
    free(x->resume_from);
    free(x->named_ckpt);
    free(x->exploit_src);
    free(x->exploit_dst);
    for (size_t k = 0; k < x->nckpts; k++)
        free(x->ckpts[k].path);
    free(x->ckpts);
    free(x);
}

int sched__live(struct sched_loop *L, struct sched__trial *t)
{
    if (t->x != &L->nolive) return SCHED_OK;
    struct sched__live *x = calloc(1, sizeof *x);
    if (!x) return SCHED_ENOMEM;
    t->x = x;
    return SCHED_OK;
}

/* A trial the live table can no longer show: counted, and its chunk freed once all of
 * its trials are gone. */
static void forget(struct sched_loop *L, struct sched__trial *t)
{
    t->fate = SCHED__GONE;
    free(t->error);
    t->error = NULL;
    L->gone_counts[t->status]++;
    if (t->early_stopped) L->gone_early++;
    if (sched__better(L->set->mode == SPACE_MODE_MAX, t->last_metric, L->gone_best)) {
        L->gone_best = t->last_metric;
        L->gone_best_no = t->no;
    }
    size_t c = (size_t)t->no / SCHED__CHUNK;
    if (++L->chunk_gone[c] == sched__chunk_size(L, c)) {
        free_chunk(L, c);
        L->chunk_state[c] = SCHED__CHUNK_FREED;
    }
}

/* The finished trials the live table may show are the first report_trials of them in its
 * order (sched__offer's heap). Finished trials never change, so one that falls out can
 * never come back in: it is forgotten. */
static void keep_or_forget(struct sched_loop *L, struct sched__trial *t)
{
    struct sched__key out;
    t->fate = SCHED__KEPT;
    if (sched__offer(L->kept, &L->nkept, L->o->report_trials,
                     (struct sched__key){t->status, t->last_metric, t->no},
                     L->set->mode == SPACE_MODE_MAX, &out))
        forget(L, sched__at(L, (size_t)out.no)); /* last: it may free that chunk */
}

void sched__retire(struct sched_loop *L, struct sched__trial *t)
{
    if (L->is_pbt || t->x->started || t->x->has_slice || t->fate) return;
    if (t->x != &L->nolive) {
        free_live(t->x);
        t->x = &L->nolive;
    }
    if (L->resample) {
        cJSON_Delete(t->config);
        t->config = NULL;
    }
    if (L->may_forget) keep_or_forget(L, t);
}

const char *sched__intern(struct sched_loop *L, const char *s)
{
    for (size_t i = 0; i < L->ninterned; i++)
        if (strcmp(L->interned[i], s) == 0) return L->interned[i];
    char **v = realloc(L->interned, (L->ninterned + 1) * sizeof *v);
    if (!v) return "";
    L->interned = v;
    if (!(v[L->ninterned] = strdup(s))) return "";
    return v[L->ninterned++];
}

const cJSON *sched__config(const struct sched_loop *L, const struct sched__trial *t,
                           cJSON **scratch)
{
    *scratch = NULL;
    if (t->config || !L->resample) return t->config;
    char err[256];
    if (space_sample(L->o->space, (size_t)t->no, scratch, err, sizeof err) != 0) return NULL;
    return *scratch;
}

void sched__free_trials(struct sched_loop *L)
{
    for (size_t c = 0; L->chunk && c * SCHED__CHUNK < L->n; c++)
        free_chunk(L, c);
    free(L->chunk);
    free(L->chunk_state);
    free(L->chunk_gone);
    free(L->row_id);
    free(L->kept);
    for (size_t i = 0; i < L->ninterned; i++)
        free(L->interned[i]);
    free(L->interned);
    for (size_t i = 0; i < L->ndoomed; i++)
        free(L->doomed[i].path);
    free(L->doomed);
    free(L->retry);
    free(L->run);
    free(L->paused);
    free(L->paused_ids);
    free(L->timers);
    for (size_t i = 0; L->view_cfg && L->views && i < L->nviews; i++)
        cJSON_Delete(L->view_cfg[i]);
    free(L->view_cfg);
    free(L->sel);
    free(L->views);
    sched_policy_free(L->policy);
    space_searcher_free(L->searcher);
}
