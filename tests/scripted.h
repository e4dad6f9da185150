/* scripted.h: the scheduler's event loop driven in-process, turn by turn, on a virtual
 * clock, through a scripted executor: no processes, no sleeping. Each scripted trial
 * reports `loss = loss0 / iteration` every `period` seconds and then exits, or fails,
 * goes silent or ignores SIGTERM, as its script says; a start with resume_from
 * "iteration:N" (or a named checkpoint ".../ck_N") continues after N. The rig opens a
 * space, a real store and a pool around it, so that the loop's decisions can be read back
 * from the database. Header-only (static), shared by test_loop.c and test_pause.c.
 * Not for: real processes (e2e.h) or the simulator (sim/exec.c). */
#ifndef TUNE_SCRIPTED_H
#define TUNE_SCRIPTED_H

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched.h"
#include "search/settings.h"
#include "search/space.h"
#include "store/store.h"
#include "testdb.h"

/* ---- the virtual clock ------------------------------------------------------------ */
struct vclock {
    double t;
};

static inline double v_now(void *ud)
{
    return ((struct vclock *)ud)->t;
}

static inline double v_wall(void *ud)
{
    return 1.7e9 + ((struct vclock *)ud)->t;
}

/* ---- the scripted executor -------------------------------------------------------- */
/* What a scripted trial does, by trial number. */
struct script {
    int results;      /* results it reports, one every `period` s, then exits */
    double period;    /* seconds between results */
    int exit_code;    /* after its last result (first attempt only if fail_once) */
    int fail_once;    /* exit_code applies to the first attempt only; later ones exit 0 */
    int silent_after; /* > 0: after this many results it reports nothing and never exits */
    int ignore_term;  /* SIGTERM does nothing; only SIGKILL ends it */
    double loss0;     /* its curve: loss = loss0 / iteration */
    double cost;      /* != 0: each result also reports "cost": cost (a second objective) */
};

#define MAX_T 640

struct strial {
    int running, attempt;
    double started, end_at; /* end_at: when a signal ends it (INFINITY: not yet) */
    int from;               /* the iteration it resumed after (0: from the start) */
    int sent;               /* the last iteration reported */
    int sig;                /* the signal that ends it, 0 for its own exit */
    int held;               /* 1 + the trial whose end starts it (sched_start_t.held) */
    int reached;            /* iterations reported when it last ended (its checkpoint) */
    double ended;           /* when its end was reported */
    char resume_from[64];   /* as its start gave it */
};

/* A start as the executor saw it happen, in order. */
struct start_rec {
    int64_t no;
    int attempt;
    char resume_from[64];
};

struct sexec {
    struct vclock *clock;
    const struct script *scripts;
    struct strial t[MAX_T];
    int nstarts, released, max_running, running;
    struct start_rec starts[256];
    int name_ckpt;        /* results name their checkpoint: "checkpoint": "ck_<iteration>" */
    const char *peek_db;  /* set: after each line, count the results another reader sees */
    long long seen_extra; /* the most results it saw beyond those of earlier turns */
    int can_hold;         /* holds starts behind running trials, as the spawner does */
    int holds, taken_back;
    long kill_after; /* > 0: the process SIGKILLs itself after this many result lines (a
                      * kill -9 in the middle of a turn, its results not yet committed) */
    long lines;
};

/* Trial no's start happens now: running, its clock started. */
static inline void s_begin(struct sexec *x, int64_t no)
{
    struct strial *t = &x->t[no];
    t->running = 1;
    t->held = 0;
    t->started = x->clock->t;
    t->end_at = INFINITY;
    if (x->nstarts < 256) {
        struct start_rec *r = &x->starts[x->nstarts];
        r->no = no;
        r->attempt = t->attempt;
        memcpy(r->resume_from, t->resume_from, sizeof r->resume_from);
    }
    x->nstarts++;
    if (++x->running > x->max_running) x->max_running = x->running;
}

static inline int s_start(void *self, const sched_start_t *s, sched_started_t *out, char *err,
                          size_t errlen)
{
    struct sexec *x = self;
    (void)err;
    (void)errlen;
    if (s->held && (!x->can_hold || !x->t[s->after].running)) return SCHED_EAGAIN;
    struct strial *t = &x->t[s->trial_no];
    int reached = t->reached;
    memset(t, 0, sizeof *t);
    t->reached = reached;
    t->attempt = s->attempt;
    if (s->resume_from) {
        snprintf(t->resume_from, sizeof t->resume_from, "%s", s->resume_from);
        const char *k = strstr(s->resume_from, "ck_");
        if (k)
            sscanf(k, "ck_%d", &t->from);
        else
            sscanf(s->resume_from, "iteration:%d", &t->from);
    }
    t->sent = t->from;
    out->exec_id = "";
    out->node = "";
    if (s->held) {
        t->held = (int)s->after + 1;
        x->holds++;
        out->pid = 0;
        return 0;
    }
    s_begin(x, s->trial_no);
    out->pid = 1000 + s->trial_no;
    return 0;
}

static inline void s_signal(void *self, int64_t no, int sig)
{
    struct sexec *x = self;
    struct strial *t = &x->t[no];
    if (!t->running) return;
    if (sig == SIGTERM && x->scripts[no].ignore_term) return;
    double at = x->clock->t + (sig == SIGKILL ? 0 : 0.01);
    if (at < t->end_at) {
        t->end_at = at;
        t->sig = sig;
    }
}

/* The time of trial no's next event: a result, its own exit, or the end a signal set. */
static inline double s_next_event(const struct sexec *x, int64_t no, int *is_result)
{
    const struct strial *t = &x->t[no];
    const struct script *sc = &x->scripts[no];
    *is_result = 0;
    double own = INFINITY;
    int silent = sc->silent_after > 0 && t->sent >= sc->silent_after;
    if (!silent) {
        own = t->started + sc->period * (t->sent - t->from + 1);
        *is_result = t->sent < sc->results;
    }
    if (t->end_at <= own) {
        *is_result = 0;
        return t->end_at;
    }
    return own;
}

static inline int s_wait(void *self, double timeout, int wake_fd, const sched_events_t *ev,
                         void *ud, char *err, size_t errlen)
{
    struct sexec *x = self;
    (void)wake_fd;
    (void)err;
    (void)errlen;
    int64_t best = -1;
    int best_res = 0;
    double when = x->clock->t + timeout;
    for (int64_t i = 0; i < MAX_T; i++) {
        if (!x->t[i].running) continue;
        int r;
        double e = s_next_event(x, i, &r);
        if (e <= when && (best < 0 || e < when)) {
            when = e;
            best = i;
            best_res = r;
        }
    }
    if (when > x->clock->t) x->clock->t = when;
    if (best < 0) return 0;
    struct strial *t = &x->t[best];
    const struct script *sc = &x->scripts[best];
    if (best_res) {
        t->sent++;
        char line[256];
        int n = x->name_ckpt
                    ? snprintf(line, sizeof line,
                               "{\"training_iteration\": %d, \"loss\": %.17g, "
                               "\"checkpoint\": \"ck_%d\"}",
                               t->sent, sc->loss0 / t->sent, t->sent)
                    : snprintf(line, sizeof line, "{\"training_iteration\": %d, \"loss\": %.17g}",
                               t->sent, sc->loss0 / t->sent);
        if (sc->cost != 0 && n > 0 && (size_t)n < sizeof line)
            n += snprintf(line + n - 1, sizeof line - (size_t)n + 1, ", \"cost\": %.17g}",
                          sc->cost) -
                 1;
        ev->line(ud, best, line, (size_t)n, 0);
        if (x->kill_after > 0 && ++x->lines >= x->kill_after) raise(SIGKILL);
        if (x->peek_db) {
            long long seen = testdb_int(x->peek_db, "SELECT count(*) FROM results");
            if (seen - (t->sent - 1) > x->seen_extra) x->seen_extra = seen - (t->sent - 1);
        }
        return 1;
    }
    sched_exit_t ex = {0, 0, NULL};
    if (t->sig) {
        ex.code = -1;
        ex.signal = t->sig;
    } else if (!sc->fail_once || t->attempt == 1) {
        ex.code = sc->exit_code;
    }
    t->running = 0;
    t->reached = t->sent;
    x->running--;
    t->ended = x->clock->t;
    /* what the spawner does: the start held behind it happens now, before its end is told */
    for (int64_t i = 0; i < MAX_T; i++)
        if (x->t[i].held == best + 1) s_begin(x, i);
    ev->ended(ud, best, &ex);
    return 1;
}

static inline int s_cancel(void *self, int64_t no)
{
    struct sexec *x = self;
    if (!x->t[no].held) return 0;
    x->t[no].held = 0;
    x->taken_back++;
    return 1;
}

static inline void s_release(void *self, int64_t no)
{
    struct sexec *x = self;
    x->t[no].held = 0;
    if (x->t[no].running) { /* torn down while running: killed */
        x->t[no].running = 0;
        x->running--;
    }
    x->released++;
}

static inline void s_free(void *self)
{
    (void)self;
}

/* Where a paused trial resumes from: the last iteration it reported. */
static inline int s_checkpoint(void *self, int64_t no, char *buf, size_t n)
{
    struct sexec *x = self;
    if (x->t[no].reached <= 0) return -1;
    snprintf(buf, n, "iteration:%d", x->t[no].reached);
    return 0;
}

/* Two executors: the loop's (starts can be held and taken back, as the spawner's; no
 * checkpoints, so a retry starts over) and the pausing one's (checkpoints; no holds). */
static const sched_exec_ops_t scripted_ops __attribute__((unused)) = {
    "scripted", s_start, s_signal, s_wait, s_release, s_free, NULL, s_cancel};
static const sched_exec_ops_t scripted_ckpt_ops __attribute__((unused)) = {
    "scripted", s_start, s_signal, s_wait, s_release, s_free, s_checkpoint, NULL};

/* ---- an experiment ------------------------------------------------------------------ */
struct rig {
    char db[4096];
    space_t *sp;
    store_t *st;
    sched_pool_t *pool;
    struct vclock clock;
    struct sexec x;
    sched_exec_t ex;
    sched_clock_t clk;
    sched_run_opts_t o;
    int64_t exp_id;
};

/* The database $TUNE_BINARY_DIR/<prefix>_<name>.db (fresh: removed and the experiment
 * created; else found again, for a resume), the loop's options over executor ops. The
 * executor starts afresh either way. */
static inline int rig_start(struct rig *r, const char *prefix, const char *name,
                            const char *space_text, const struct script *scripts, int fresh,
                            const sched_exec_ops_t *ops)
{
    char err[1024];
    memset(r, 0, sizeof *r);
    const char *b = getenv("TUNE_BINARY_DIR");
    snprintf(r->db, sizeof r->db, "%s/%s_%s.db", b ? b : "/tmp", prefix, name);
    if (fresh) testdb_remove(r->db);
    if (space_parse(space_text, strlen(space_text), "space.json", &r->sp, err, sizeof err) != 0 ||
        store_open(r->db, 0, &r->st, err, sizeof err) != 0 ||
        sched_pool_new(NULL, 0, 64, &r->pool, err, sizeof err) != 0) {
        fprintf(stderr, "rig: %s\n", err);
        return -1;
    }
    const space_settings_t *set = space_settings(r->sp);
    store_experiment_t e = {.name = set->name,
                            .space_text = space_text,
                            .settings_json = "{}",
                            .metric = set->metric,
                            .mode_max = 0,
                            .scheduler = "x",
                            .results_dir = "/nonexistent",
                            .num_trials = (int64_t)space_num_trials(r->sp)};
    if (fresh ? store_experiment_create(r->st, &e, 0, &r->exp_id, err, sizeof err)
              : store_experiment_find(r->st, set->name, &r->exp_id, err, sizeof err)) {
        fprintf(stderr, "rig: %s\n", err);
        return -1;
    }
    r->x.clock = &r->clock;
    r->x.scripts = scripts;
    r->ex.ops = ops;
    r->ex.self = &r->x;
    r->clk.now = v_now;
    r->clk.wall = v_wall;
    r->clk.ud = &r->clock;
    sched_run_opts_t o = {.space = r->sp,
                          .store = r->st,
                          .experiment_id = r->exp_id,
                          .resume = !fresh,
                          .exec = &r->ex,
                          .pool = r->pool,
                          .results_dir = "/nonexistent/results",
                          .clock = &r->clk,
                          .wake_fd = -1};
    r->o = o;
    return 0;
}

static inline void rig_close(struct rig *r)
{
    sched_pool_free(r->pool);
    store_close(r->st);
    space_free(r->sp);
}

/* Turns the loop until it ends (or `stop_at` virtual seconds pass: then Ctrl-C once, and
 * again at `hard_at` when > 0). Returns the last turn's code; *turns gets how many. */
static inline int drive(struct rig *r, sched_loop_t *L, double stop_at, double hard_at, int *turns)
{
    char err[512];
    int rc, n = 0, stopped = 0;
    while ((rc = sched_loop_turn(L, 1.0, err, sizeof err)) > 0 && n < 100000) {
        n++;
        if (stop_at > 0 && !stopped && r->clock.t >= stop_at) {
            sched_loop_stop(L, SIGINT);
            stopped = 1;
        }
        if (hard_at > 0 && stopped == 1 && r->clock.t >= hard_at) {
            sched_loop_stop(L, SIGINT);
            stopped = 2;
        }
    }
    if (rc < 0) fprintf(stderr, "turn: %s\n", err);
    if (turns) *turns = n;
    return rc;
}

/* The common case: a loop over the rig, turned to its end (Ctrl-C at stop_at and again at
 * hard_at when > 0), its outcome in *res (may be NULL). Returns the last turn's code, or
 * -100 when the loop cannot be built. */
static inline int run_to_end(struct rig *r, double stop_at, double hard_at, sched_run_result_t *res)
{
    sched_loop_t *L = NULL;
    char err[512];
    if (sched_loop_new(&r->o, &L, err, sizeof err) != 0) {
        fprintf(stderr, "sched_loop_new: %s\n", err);
        return -100;
    }
    int rc = drive(r, L, stop_at, hard_at, NULL);
    if (res) sched_loop_result(L, res);
    sched_loop_free(L);
    return rc;
}

static inline long long q(struct rig *r, const char *sql)
{
    return testdb_int(r->db, sql);
}

#define SPACE(name, extra)                                                                         \
    "{\"name\": \"" name "\", \"metric\": \"loss\", \"mode\": \"min\", \"command\": [\"x\"], "     \
    "\"space\": {\"lr\": {\"uniform\": [0, 1]}}, " extra "}"

#endif
