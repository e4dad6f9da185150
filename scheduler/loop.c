/* The scheduler's event loop as a handle (redis ae.c): one turn launches what fits, waits
 * on the executor for trial output with a timeout from the nearest timer, dispatches what
 * arrived, fires timers, records the turn in one transaction and reports when due. It is
 * the mechanism: what to stop is the policy's business (policy.c), where a trial runs is
 * the pool's (pool.c), how it is started and what environment it gets is the executor's,
 * a trial's life is life.c's and a result's path is result.c's.
 * Not for: printing (snapshots go to a callback) or SQL (store_* calls only). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dirs/dirs.h"
#include "scheduler/loop_int.h"

/* The longest a turn spends launching trials before it reads results again. */
#define LOOP_LAUNCH_SLICE_S 0.05
/* What a turn of a real run takes in before it commits: after its wait, whatever else is
 * ready without waiting, up to this many events or this long (sched_loop_turn). */
#define LOOP_BATCH_EVENTS 1000
#define LOOP_BATCH_S 0.01
/* The longest a running trial's row goes without the pid the executor reported (ev_pid). */
#define LOOP_PID_SAVE_S 1.0
/* Rows of pending trials a turn records after its launches, until every trial has one:
 * the first trials start at once instead of after every row (bench/tuner/README.md), and
 * the trials that end meanwhile wait at most a step's worth. */
#define LOOP_ROWS_STEP 32

/* A turn's writes are one transaction; it is closed before the loop waits, so that
 * readers never wait on a write lock held across a blocking wait. */
static void batch_begin(struct sched_loop *L)
{
    char err[512];
    if (L->turn.in_batch) return;
    if (store_begin(L->o->store, err, sizeof err) == 0)
        L->turn.in_batch = 1;
    else
        sched__fail(L, "cannot write to the database", err);
}

/* Closes the turn's transaction: every turn in a real run; in a simulation (commit_every_s
 * > 0, nothing blocks) at most that often in real time, or when forced. */
static void batch_commit(struct sched_loop *L, int force)
{
    char err[512];
    if (!L->turn.in_batch) return;
    if (!force && L->o->commit_every_s > 0) {
        double now = sched_clock_real.now(NULL);
        if (now - L->turn.last_commit < L->o->commit_every_s) return;
        L->turn.last_commit = now;
    }
    L->turn.in_batch = 0;
    if (store_commit(L->o->store, err, sizeof err) != 0)
        sched__fail(L, "cannot write to the database", err);
    else
        sched__delete_doomed(L);
}

/* ---- the executor's events ------------------------------------------------------------ */
static struct sched__trial *trial_of(struct sched_loop *L, int64_t no)
{
    if (no < 0 || (size_t)no >= L->rec.n) return NULL;
    struct sched__trial *t = sched__find(L, (size_t)no);
    return t && t->x->started ? t : NULL;
}

/* The events come during the executor's wait, after the turn committed what it had: the
 * first one opens the turn's transaction, which the turn commits once the wait is over.
 * Without it every result of a real run was a transaction of its own (a commit and its
 * lock calls per result); a result is still durable by the end of its turn. */
static void ev_line(void *ud, int64_t no, const char *line, size_t len, int truncated)
{
    struct sched_loop *L = ud;
    struct sched__trial *t = trial_of(L, no);
    if (!t) return;
    L->turn.nevents++;
    batch_begin(L);
    sched__on_line(L, t, line, len, truncated);
}

static void ev_ended(void *ud, int64_t no, const sched_exit_t *ex)
{
    struct sched_loop *L = ud;
    struct sched__trial *t = trial_of(L, no);
    if (!t) return;
    L->turn.nevents++;
    batch_begin(L);
    sched__ended(L, t, ex);
}

static void ev_placed(void *ud, int64_t no, const char *exec_id, const char *node)
{
    struct sched_loop *L = ud;
    struct sched__trial *t = trial_of(L, no);
    if (!t || strcmp(exec_id, t->x->exec_id) == 0) return;
    batch_begin(L);
    snprintf(t->x->exec_id, sizeof t->x->exec_id, "%s", exec_id);
    snprintf(t->x->node, sizeof t->x->node, "%s", node ? node : "");
    store_trial_update_t u = {
        .fields = STORE_TU_EXEC_ID, .exec_id = t->x->exec_id, .node = t->x->node};
    sched__update_row(L, t, &u);
}

/* The pid comes in a wake-up of its own, soon after the start: written then, it cost a
 * row update and often a commit of its own. It waits for the row's next update instead
 * (most trials of a run with short trials end first), or for save_pids, so that a long
 * trial's row has its pid within about LOOP_PID_SAVE_S. */
static void ev_pid(void *ud, int64_t no, int64_t pid)
{
    struct sched_loop *L = ud;
    struct sched__trial *t = trial_of(L, no);
    if (!t || t->status != SCHED_TRIAL_RUNNING || pid <= 0) return;
    if (!t->x->pid_unsaved) L->q.npid_unsaved++;
    t->x->pid = pid;
    t->x->pid_unsaved = 1;
    t->x->pid_at = sched__now(L);
}

/* Writes the pids that waited LOOP_PID_SAVE_S for their row's next update. */
static void save_pids(struct sched_loop *L, double now)
{
    size_t left = 0;
    for (size_t k = 0; k < L->q.running; k++) {
        struct sched__trial *t = sched__at(L, L->q.run[k]);
        if (!t->x->pid_unsaved) continue;
        if (now - t->x->pid_at < LOOP_PID_SAVE_S) {
            left++;
            continue;
        }
        batch_begin(L);
        store_trial_update_t u = {0};
        sched__update_row(L, t, &u);
    }
    L->q.npid_unsaved = left;
}

static const sched_events_t loop_events = {ev_line, ev_ended, ev_placed, ev_pid};

void sched_loop_report(sched_loop_t *L)
{
    if (!L->turn.ended) sched__report(L, 0);
}

void sched_loop_line(sched_loop_t *L, int64_t trial_no, const char *line, size_t len, int truncated)
{
    ev_line(L, trial_no, line, len, truncated);
}

/* ---- the handle ------------------------------------------------------------------------- */
static int make_policy(struct sched_loop *L, char *err, size_t errlen)
{
    const space_settings_t *set = L->set;
    sched_opts_t po = {.sched = set->sched,
                       .mode_max = set->mode == SPACE_MODE_MAX,
                       .seed = set->seed,
                       .space = L->o->space,
                       .nobjectives = set->nobjectives,
                       .constrained = set->nconstraints > 0};
    int rc = sched_policy_new(&po, &L->policy, err, errlen);
    if (rc == SCHED_OK) {
        L->caps = sched_policy_caps(L->policy);
        L->ranked = sched_policy_ranked(L->policy);
    }
    return rc;
}

int sched_loop_new(const sched_run_opts_t *o, sched_loop_t **out, char *err, size_t errlen)
{
    struct sched_loop *L = calloc(1, sizeof *L);
    if (!L) {
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    L->o = o;
    L->ck.results_fd = o->results_dir ? dirs_open(o->results_dir) : -1;
    L->set = space_settings(o->space);
    L->clock = o->clock ? o->clock : &sched_clock_real;
    L->turn.t0 = sched__now(L);
    L->turn.last_report = -1e300;
    L->time_is_iter = strcmp(L->set->sched.time_attr, "training_iteration") == 0;
    L->keys[0] = "training_iteration";
    L->keys[1] = L->time_is_iter ? NULL : L->set->sched.time_attr;
    L->keys[2] = L->set->metric;
    L->nkeys = SCHED__KEY_STOP;
    for (size_t i = 0; i < L->set->nstop; i++)
        L->keys[L->nkeys++] = L->set->stop[i].key;
    L->col0 = L->nkeys;
    for (size_t i = 0; L->set->metric_columns && L->set->metric_columns[i] && i < SPACE_MAX_COLUMNS;
         i++)
        L->keys[L->nkeys++] = L->set->metric_columns[i];
    L->ncols = L->nkeys - L->col0;
    for (size_t k = 0; k < L->nkeys; k++) {
        L->dup[k] = -1;
        for (size_t j = 0; j < k && L->keys[k]; j++)
            if (L->keys[j] && strcmp(L->keys[j], L->keys[k]) == 0) {
                L->dup[k] = (int)j;
                break;
            }
    }
    /* Nothing to check the first result against: take the fast path from the start. */
    L->seen.metric_checked = !L->set->metric && L->time_is_iter;
    int rc = make_policy(L, err, errlen);
    if (rc == 0) rc = sched__create_trials(L, err, errlen);
    if (rc != 0) {
        sched_loop_free(L);
        return rc;
    }
    *out = L;
    return SCHED_OK;
}

static int take_back_held(struct sched_loop *L);

void sched_loop_free(sched_loop_t *L)
{
    if (!L) return;
    /* Held starts first: freeing the trial one follows would let it start. */
    while (L->q.nheld > 0 && take_back_held(L)) {
    }
    if (L->turn.in_batch) batch_commit(L, 1);
    sched__free_trials(L);
    if (L->ck.results_fd >= 0) close(L->ck.results_fd);
    free(L);
}

void sched_loop_stop(sched_loop_t *L, int sig)
{
    if (L->turn.stopping && L->turn.stop_signal) L->turn.hard_stop = 1;
    L->turn.stopping = 1;
    if (!L->turn.stop_signal) L->turn.stop_signal = sig;
}

/* Records the rows of trials up to upto (sched__make_rows) in the turn's batch: 1, or 0
 * when the store failed (the run then stops). */
static int make_rows(struct sched_loop *L, size_t upto)
{
    char err[512];
    if (L->rec.rows_next >= upto || L->rec.rows_next >= L->rec.n) return 1;
    if (sched__make_rows(L, upto, err, sizeof err) == 0) return 1;
    sched__fail(L, "cannot record the trials", err);
    return 0;
}

int sched_loop_create_rows(sched_loop_t *L, char *err, size_t errlen)
{
    int in = L->turn.in_batch;
    if (!in && store_begin(L->o->store, err, errlen) != 0) return SCHED_EINVAL;
    int rc = sched__make_rows(L, L->rec.n, err, errlen);
    if (!in) { /* rows made before a failure are kept: a resume makes the others */
        char e2[512];
        int crc = store_commit(L->o->store, rc ? e2 : err, rc ? sizeof e2 : errlen);
        if (!rc) rc = crc;
    }
    return rc ? SCHED_EINVAL : SCHED_OK;
}

/* Takes back one start the executor holds (sched__unhold): 1 if one is pending again,
 * first in line. */
static int take_back_held(struct sched_loop *L)
{
    for (size_t k = 0; k < L->q.running; k++) {
        struct sched__trial *a = sched__at(L, L->q.run[k]);
        if (a->x->successor && sched__unhold(L, sched__at(L, (size_t)(a->x->successor - 1))))
            return 1;
    }
    return 0;
}

/* Launches retries first, then, for each free slice, the paused trial the policy chooses
 * (choose_next) or else the next pending trial in order, while their slices fit, for at
 * most LOOP_LAUNCH_SLICE_S: a launch waits for the trial's exec, which under load takes
 * tens of milliseconds, and 200 of them in one turn kept results unread and the table
 * unrefreshed for 10 s in the soak. Returns 1 when launching was cut short (the next turn
 * then waits for nothing). */
static int launch_ready(struct sched_loop *L)
{
    int maxc = L->set->max_concurrent;
    double until = sched__now(L) + LOOP_LAUNCH_SLICE_S;
    int deferred = 0;
    /* before a slice goes to a paused trial */
    if (L->caps & SCHED_CAP_DROP && L->q.npaused > 0) sched__end_dropped(L);
again:
    while (!deferred && !L->turn.stopping && L->q.nretry > 0 &&
           (maxc <= 0 || (int)L->q.running < maxc)) {
        if (!sched__launch(L, sched__at(L, L->q.retry[0]))) break;
        memmove(L->q.retry, L->q.retry + 1, --L->q.nretry * sizeof *L->q.retry);
        deferred = sched__now(L) >= until;
    }
    while (L->q.next < L->rec.n) {
        /* no record: pending, not made yet (or, never past next, gone) */
        const struct sched__trial *t = sched__find(L, L->q.next);
        if (t ? t->status == SCHED_TRIAL_PENDING
              : L->rec.chunk_state[L->q.next / SCHED__CHUNK] != SCHED__CHUNK_FREED)
            break;
        L->q.next++;
    }
    while (!deferred && !L->turn.stopping && L->q.nretry == 0 &&
           (maxc <= 0 || (int)L->q.running < maxc)) {
        if (L->q.npaused > 0) {
            for (size_t k = 0; k < L->q.npaused; k++)
                L->q.paused_ids[k] = sched__at(L, L->q.paused[k])->no;
            sched_decision_t why;
            long k = sched_policy_choose_next(L->policy, L->q.paused_ids, L->q.npaused,
                                              L->rec.n - L->q.next, &why);
            if (k >= 0) {
                if (!sched__resume(L, (size_t)k, &why)) break;
                deferred = sched__now(L) >= until;
                continue;
            }
        }
        if (L->q.next >= L->rec.n) {
            /* A slice is free and nothing new is left for it: a trial whose start waits
             * behind a running one takes it instead (unless it has just started). */
            if (L->q.nheld > 0 && sched__slice_free(L) && take_back_held(L)) goto again;
            break;
        }
        struct sched__trial *t = sched__make(L, L->q.next);
        if (!t) {
            sched__fail(L, "cannot launch a trial", "out of memory");
            break;
        }
        if (t->status != SCHED_TRIAL_PENDING) {
            L->q.next++;
            continue;
        }
        if (!make_rows(L, L->q.next + 1)) break;
        if (!sched__launch(L, t)) break;
        L->q.next++;
        deferred = sched__now(L) >= until;
    }
    /* Every slice taken: the next trials wait in the executor, each behind a running trial
     * that is ending, to start the moment it ends (sched__hold_next). */
    while (!deferred && sched__hold_next(L))
        deferred = sched__now(L) >= until;
    return deferred;
}

/* The experiment is stopping: every running trial is stopped. After Ctrl-C, or when a
 * mistake stopped the run (fail_fast, a missing metric), they are PAUSED: resumable once
 * the cause is fixed. When the experiment ended as planned (its time budget, a target)
 * they are TERMINATED and the reason is recorded as a decision. */
static void stop_running(struct sched_loop *L)
{
    int by_user = L->end.ended_by == SCHED_END_ALL || L->turn.stop_signal ||
                  L->end.ended_by == SCHED_END_FAIL_FAST || L->end.ended_by == SCHED_END_NO_METRIC;
    /* Starts held behind running trials are taken back: nothing new starts now. (One that
     * has started meanwhile runs once its predecessor's end is in, and is stopped then.) */
    while (L->q.nheld > 0 && take_back_held(L)) {
    }
    /* request_stop leaves the running list as it is: walking it is safe */
    for (size_t k = 0; k < L->q.running; k++) {
        struct sched__trial *t = sched__at(L, L->q.run[k]);
        if (t->x->stop != SCHED__STOP_NONE) continue;
        if (!by_user && !L->end.fatal) {
            char reason[1100];
            snprintf(reason, sizeof reason, "experiment stopped: %s", L->end.end_msg);
            sched__add_note(L, t, "complete", t->iters, t->last_time, t->last_metric, reason);
        }
        sched__request_stop(L, t,
                            by_user || L->end.fatal ? SCHED__STOP_USER : SCHED__STOP_EXPERIMENT);
    }
}

/* Stop signals sched_run's handler counted during the wait (o->stops): taken before the
 * turn launches anything, so that no trial starts after the user asked to stop. */
static void take_stops(struct sched_loop *L)
{
    if (!L->o->stops) return;
    for (sig_atomic_t n = *L->o->stops; L->turn.stops_seen < n; L->turn.stops_seen++)
        sched_loop_stop(L, (int)*L->o->stop_sig);
}

int sched_loop_turn(sched_loop_t *L, double timeout, char *err, size_t errlen)
{
    /* Trials without a struct sched__live of their own share the loop's all-zero one: a
     * write to it would be a bug that every such trial then reads. A memcmp per turn is
     * cheap enough to check it always, and the run stops loudly if it happens. */
    static const struct sched__live zero;
    if (memcmp(&L->rec.nolive, &zero, sizeof zero) != 0) {
        sched__fail(L, "internal error",
                    "a pending or finished trial's run-time state was written; please report it");
        memset(&L->rec.nolive, 0, sizeof L->rec.nolive);
    }
    if (L->turn.ended) return 0;
    batch_begin(L);
    take_stops(L);
    /* Ray Tune's experiment-level time_budget_s: no new trials after it, running ones are
     * stopped and recorded. */
    double budget_end = L->set->time_budget_s > 0 ? L->turn.t0 + L->set->time_budget_s : INFINITY;
    if (!L->turn.stopping && sched__now(L) >= budget_end) {
        char m[160];
        snprintf(m, sizeof m, "the experiment's time budget ended (time_budget_s %g s)",
                 L->set->time_budget_s);
        sched__end_experiment(L, SCHED_END_BUDGET, -1, m);
    }
    int deferred = launch_ready(L);
    if (L->rec.rows_next < L->rec.n) {
        make_rows(L, L->rec.rows_next + LOOP_ROWS_STEP);
        deferred |= L->rec.rows_next < L->rec.n; /* the next step after a look at the trials */
    }
    if (L->turn.stopping) stop_running(L);
    if (L->q.running == 0 && (L->turn.stopping || (L->q.next >= L->rec.n && L->q.nretry == 0))) {
        /* Paused trials the policy left behind end now, unless the user stopped the run
         * (then they stay PAUSED, for tune resume). */
        int by_user = L->turn.stop_signal || L->end.fatal ||
                      L->end.ended_by == SCHED_END_FAIL_FAST ||
                      L->end.ended_by == SCHED_END_NO_METRIC;
        if (!by_user) sched__end_paused(L);
        /* Trials never launched are listed PENDING when the run is over; a stopped one
         * makes them on resume (as it goes: a run of millions stops at once). */
        if (!by_user) make_rows(L, L->rec.n);
        batch_commit(L, 1);
        L->turn.ended = 1;
        sched__report(L, 1);
        if (!L->end.fatal) return 0;
        snprintf(err, errlen, "%s", L->end.fatal_msg);
        return SCHED_EINVAL;
    }
    double now = sched__now(L);
    double wake = sched__run_timers(L, now, now + timeout);
    if (L->o->report && L->o->report_every_s > 0)
        wake = fmin(wake, L->turn.last_report + L->o->report_every_s);
    if (!L->turn.stopping) wake = fmin(wake, budget_end);
    batch_commit(L, 0);

    L->turn.rx_wall = L->turn.rx_now = 0;
    const sched_exec_t *x = L->o->exec;
    double wait = deferred || wake < now ? 0 : wake - now;
    L->turn.nevents = 0;
    int rc = x->ops->wait(x->self, wait, L->o->wake_fd, &loop_events, L, err, errlen);
    if (rc < 0) return rc;

    /* What the wait brought is acted on at once: trials whose slots it freed are launched
     * before the turn commits, so that the next trial starts while this turn writes. Then
     * a real run takes in what else is ready without waiting (LOOP_BATCH_*) before it
     * commits: with many short trials, results and ends come faster than turns, and a
     * commit per turn was most of what tune cost per trial. Every result is still
     * committed before the loop next blocks. A simulation (commit_every_s) keeps one wait
     * a turn: its wait hands one event a call, and its turns are its order of events. */
    double batch_end = sched__now(L) + LOOP_BATCH_S;
    size_t taken = L->turn.nevents;
    for (;;) {
        batch_begin(L);
        now = sched__now(L);
        sched__run_timers(L, now, now);
        take_stops(L);
        if (L->end.fatal || L->turn.stopping) {
            stop_running(L);
            break;
        }
        launch_ready(L);
        if (L->q.npid_unsaved) save_pids(L, now);
        if (L->o->commit_every_s > 0 || L->turn.nevents == 0 || taken >= LOOP_BATCH_EVENTS ||
            now >= batch_end)
            break;
        L->turn.nevents = 0;
        rc = x->ops->wait(x->self, 0, L->o->wake_fd, &loop_events, L, err, errlen);
        if (rc < 0) return rc;
        taken += L->turn.nevents;
    }
    batch_commit(L, 0);
    if (L->o->report && L->o->report_every_s > 0 &&
        now - L->turn.last_report >= L->o->report_every_s)
        sched__report(L, 0);
    return 1;
}

/* ---- a real run: signals and turns ------------------------------------------------------ */
/* The scheduler's globals, which a signal handler can reach only through statics, valid
 * only inside sched_run: the write end of the self-pipe that wakes the executor's wait,
 * and how many stop signals (SIGINT, SIGTERM) came, with the first one's number. The
 * executor's wait drains the pipe right after it wakes, before it looks for ended trials,
 * so a SIGCHLD that comes after that look leaves a byte that wakes the next wait. (When
 * sched_run drained it after the turn instead, a second trial's SIGCHLD landing during
 * the first one's turn was read and lost: the loop slept its full second with an ended
 * trial unreported, one run in three of bench/tuner/run.sh.) */
static int loop_sigpipe_w = -1;
static volatile sig_atomic_t loop_stops, loop_stop_sig;

static void loop_on_signal(int sig)
{
    int saved = errno;
    if (sig == SIGINT || sig == SIGTERM) {
        if (!loop_stop_sig) loop_stop_sig = sig;
        loop_stops = loop_stops + 1; /* the handler blocks both signals: no lost update */
    }
    unsigned char b = (unsigned char)sig;
    if (loop_sigpipe_w >= 0) {
        ssize_t w = write(loop_sigpipe_w, &b, 1);
        (void)w;
    }
    errno = saved;
}

int sched_run(const sched_run_opts_t *o, sched_run_result_t *res, char *err, size_t errlen)
{
    int sp[2] = {-1, -1};
    if (pipe2(sp, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "cannot create signal pipe: %s", strerror(errno));
        return SCHED_EINVAL;
    }
    /* SIGCHLD wakes the executor's wait (a trial ended); SIGINT and SIGTERM stop. */
    sched_run_opts_t lo = *o;
    lo.wake_fd = sp[0];
    lo.stops = &loop_stops;
    lo.stop_sig = &loop_stop_sig;
    loop_sigpipe_w = sp[1];
    loop_stops = loop_stop_sig = 0;
    struct sigaction sa, old_int, old_term, old_chld;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = loop_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGCHLD);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCHLD, &sa, &old_chld);
    if (o->handle_signals) {
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
    }
    sched_loop_t *L = NULL;
    int rc = sched_loop_new(&lo, &L, err, errlen);
    while (rc == 0 && (rc = sched_loop_turn(L, 1.0, err, errlen)) > 0)
        rc = 0;
    if (L && rc == 0) sched_loop_result(L, res);
    sched_loop_free(L);
    sigaction(SIGCHLD, &old_chld, NULL);
    if (o->handle_signals) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    loop_sigpipe_w = -1;
    close(sp[0]);
    close(sp[1]);
    return rc;
}
