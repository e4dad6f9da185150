/* loop_int.h: the event loop's state, shared by its three files: loop.c (the handle and
 * its turn), life.c (a trial's life: created, launched, stopped, ended, retried, resumed)
 * and result.c (the per-result path: record, decide, word the reason). Not for anything
 * outside scheduler/ (sched.h is the API). */
#ifndef TUNE_LOOP_INT_H
#define TUNE_LOOP_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "scheduler/sched.h"
#include "search/space.h"
#include "store/store.h"

/* Why a running trial was asked to stop: that decides how its end is recorded. */
enum sched__stop {
    SCHED__STOP_NONE = 0,
    SCHED__STOP_EARLY,    /* the policy stopped it: TERMINATED, early_stopped */
    SCHED__STOP_COMPLETE, /* it reached max_t: TERMINATED */
    SCHED__STOP_USER,     /* Ctrl-C or a fatal store error: PAUSED, resumable */
    SCHED__STOP_TIMEOUT   /* a time limit or the executor's watchdog: ERROR */
};

struct sched__trial {
    int64_t no, id; /* trial number and its row in the store */
    sched_trial_status_t status;
    int early_stopped;
    enum sched__stop stop;
    double stop_deadline; /* loop clock: SIGKILL after this */
    int killed;
    int started; /* the executor holds it (from start until release) */
    unsigned gen;         /* bumped at each launch: timers of an earlier launch are stale */
    size_t run_pos;       /* its index in the loop's list of running trials */
    cJSON *config;
    sched_slice_t slice;
    int has_slice;
    int64_t iters;
    double last_time, last_metric, best_metric;
    double started_at;     /* loop clock */
    double last_result_at; /* loop clock */
    char name[32];
    char slice_str[64];
    char exec_id[96]; /* the executor's id last recorded (Slurm's job/step id arrives late) */
    char node[96];
    char *error;
    char *dir;
    int attempt;       /* 1 for the first run; each retry or resume adds one */
    int failures;      /* failed attempts so far */
    char *resume_from; /* checkpoint handed to the next attempt (TUNE_RESUME_FROM) */
    int carry;         /* results of the attempt before, up to the checkpoint, to carry over */
};

struct sched_loop {
    const sched_run_opts_t *o;
    const space_settings_t *set;
    const sched_clock_t *clock;
    sched_policy_t *policy;
    struct sched__trial *t;
    size_t n;
    size_t next;   /* next trial to launch */
    size_t *retry; /* trials waiting for another attempt, launched before `next` */
    size_t nretry;
    size_t running;
    size_t *run; /* the running trials (indices), so a turn's work follows them, not all */
    /* Timers, a min-heap by time: a trial's time budget, its result timeout and the end
     * of its stop grace. Entries of a trial that has ended or been launched again are
     * stale and dropped when they come up. */
    struct sched__timer {
        double at;
        size_t idx;
        unsigned gen;
    } * timers;
    size_t ntimers, captimers;
    int hard_done;      /* the second Ctrl-C's kills were sent */
    double last_commit; /* CLOCK_MONOTONIC of the last commit */
    int stopping;       /* no new trials */
    int hard_stop;      /* second Ctrl-C: kill now */
    int stop_signal;
    int fatal;
    char fatal_msg[1024];
    int in_batch; /* a store transaction is open */
    int ended;    /* the final report was made */
    uint64_t results, ignored, bad_lines;
    double t0;
    double last_report;
    /* When this turn's lines arrived: the clocks are read at the turn's first result and
     * reset (0) before each wait. The lines of one turn were all waiting when the wait
     * returned, and two clock reads per result were a measurable share of the path. */
    double rx_wall, rx_now;
    int time_is_iter;
    /* report snapshot storage, reused between reports */
    sched_trial_view_t *views;
    sched_rung_info_t rungs[256];
};

/* loop.c */
double sched__now(const struct sched_loop *L);
/* Files a timer for trial t at loop-clock time `at`. */
void sched__timer_add(struct sched_loop *L, struct sched__trial *t, double at);
double sched__wall(const struct sched_loop *L);
/* A store write failed: remember the first failure; the loop then stops every trial and
 * reports it at the end. Everything committed before stays readable. */
void sched__fail(struct sched_loop *L, const char *what, const char *err);
/* a better than b in the experiment's mode; NaN is never better */
int sched__better(int mode_max, double a, double b);
void sched__update_row(struct sched_loop *L, struct sched__trial *t, const store_trial_update_t *u);

/* life.c */
int sched__create_trials(struct sched_loop *L, char *err, size_t errlen);
/* Starts trial t if its slice is free now: 1 if started (or failed for good), 0 if it has
 * to wait for resources. */
int sched__launch(struct sched_loop *L, struct sched__trial *t);
void sched__request_stop(struct sched_loop *L, struct sched__trial *t, enum sched__stop why);
/* The executor reported the trial's end: record it, retry it, or let it go. */
void sched__ended(struct sched_loop *L, struct sched__trial *t, const sched_exit_t *ex);
void sched__free_trials(struct sched_loop *L);

/* result.c */
void sched__on_line(struct sched_loop *L, struct sched__trial *t, const char *line, size_t len,
                    int truncated);

#endif
