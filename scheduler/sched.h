/* scheduler: decides which trials run, where, when they pause and when they stop.
 * Kept apart: policies (FIFO, ASHA, median stopping, PBT: sched_policy_*), the pool that
 * hands out GPU/CPU slices (sched_pool_*), executors that start trials (sched_exec_t) and
 * the single-threaded loop that drives them (sched_loop_*, sched_run). Not for: terminals
 * (the loop reports through a callback) or SQL (it tells store what happened). */
#ifndef TUNE_SCHED_H
#define TUNE_SCHED_H

#include <signal.h> /* sig_atomic_t */
#include <stddef.h>
#include <stdint.h>

#include "search/settings.h" /* space_sched_opts_t: the policies' options */

#define SCHED_OK 0
#define SCHED_EINVAL (-1)
#define SCHED_ENOMEM (-2)
#define SCHED_ENOFIT (-3) /* a request the pool can never satisfy */
#define SCHED_EAGAIN (-4) /* does not fit now; try again when something is released */

/* ==== policies ==================================================================== */
struct space;
struct cJSON;

/* What a policy is built from. Its options are the "scheduler" block of space.json as
 * search/ parsed it (space_sched_opts_t: the type, Ray Tune's option names and senses,
 * hard_stop and stop_last_trials included, defaults filled in), spelled once; here only
 * what lies outside that block. A policy reads the options that apply to it and checks
 * them again (a caller may build them by hand). */
typedef struct sched_opts {
    space_sched_opts_t sched;  /* .type picks the policy */
    int mode_max;              /* 0: lower metric is better, 1: higher is better */
    uint64_t seed;             /* the policy's random stream (asha's brackets, pbt's donors) */
    const struct space *space; /* pbt: what explore mutates (borrowed, outlives the policy) */
    /* Several objectives (issue 30, docs/multiobjective.md): how many objectives a result
     * carries (0 or 1: one, the metric) and whether space.json has constraints. With more
     * than one, or with constraints, ASHA and HyperBand rank a rung's points by
     * pareto_rank (results come through sched_on_result_point); median stopping and PBT
     * judge one metric and refuse several. 0 and 0: today's single-metric rules, exactly. */
    size_t nobjectives;
    int constrained;
} sched_opts_t;

typedef enum {
    SCHED_CONTINUE = 0,
    SCHED_STOP = 1,     /* early stop: the trial is worse than the cutoff */
    SCHED_COMPLETE = 2, /* time >= max_t: the trial has trained long enough */
    SCHED_PAUSE = 3,    /* stop it after its checkpoint, free its slice, maybe resume it later */
    SCHED_EXPLOIT = 4,  /* pbt: restart it from `donor`'s checkpoint with an explored config */
} sched_action_t;

/* What on_result decided, with the evidence, so that it can be recorded and shown. */
typedef struct sched_decision {
    sched_action_t action;
    int judged;       /* 1 if the result reached a milestone (or max_t) and was judged */
    int bracket;      /* -1 when not applicable */
    int rung;         /* index of the rung judged at, 0 = lowest milestone; -1 if none */
    double milestone; /* NaN if none */
    double value;     /* the value compared (the metric; NaN kept as NaN) */
    double cutoff;    /* NaN when there was no cutoff (first value at a rung) */
    int64_t donor;    /* SCHED_EXPLOIT: the trial whose checkpoint it takes; -1 otherwise */
    /* pbt: a perturbation point, where the trial gives its slice to a waiting trial (Ray
     * Tune's PBT returns PAUSE there while trials are PENDING or PAUSED) */
    int yield;
    /* pbt: where the trial stood at a perturbation point: 2 top quantile, 1 bottom, 0 in
     * between, -1 too few trials with a score to have quantiles */
    int quantile;
    /* Ranked rungs (several objectives or constraints, sched_policy_ranked): where the
     * trial's point stood among the points ranked with it by pareto_rank. place 0: not
     * ranked (value/cutoff say the judgement); then among, top and front are 0. */
    size_t place;     /* 1-based position, best first */
    size_t among;     /* points ranked, its own included */
    size_t top;       /* how many of them go on (continue, or may be promoted) */
    int front;        /* pareto_rank's level (0: the non-dominated front); -1: a NaN
                         objective, which ranks after every number */
    double violation; /* its constraint violation (0: feasible) */
} sched_decision_t;

/* Per-rung state for the live table and reports. */
typedef struct sched_rung_info {
    int bracket;
    int rung;
    double milestone;
    size_t recorded; /* values recorded at this rung */
    double cutoff;   /* NaN when nothing is recorded */
} sched_rung_info_t;

typedef struct sched_policy sched_policy_t;

/* Creates a policy; *out freed with sched_policy_free. Errors (rf <= 1, grace > max_t,
 * brackets < 1, ...) fill err. */
int sched_policy_new(const sched_opts_t *opts, sched_policy_t **out, char *err, size_t errlen);
void sched_policy_free(sched_policy_t *p); /* NULL-safe */
/* A trial joins the experiment (asha: it is assigned a bracket here). trial ids are
 * the caller's and must be unique. */
int sched_on_trial_add(sched_policy_t *p, int64_t trial);
/* A result for `trial` at `time` with metric `value` (NaN if missing). Fills *out. */
void sched_on_result(sched_policy_t *p, int64_t trial, double time, double value,
                     sched_decision_t *out);
/* A result's point, for a ranked policy: its objectives to minimise, as space_objectives
 * gives them (max modes negated, NaN where missing), and its constraint violation
 * (space_violation: 0 feasible, > 0 infeasible, +INFINITY unknown). value: the first
 * objective as reported (what decisions record in their value column). */
typedef struct sched_point {
    const double *obj; /* opts.nobjectives values (at least one), borrowed for the call */
    double violation;
    double value;
} sched_point_t;
/* Whether the policy ranks points (ASHA and HyperBand with several objectives or
 * constraints): then the caller hands each result's point to sched_on_result_point. */
int sched_policy_ranked(const sched_policy_t *p);
/* sched_on_result for a ranked policy (pt: the result's point); any other policy judges
 * pt->value as sched_on_result does. */
void sched_on_result_point(sched_policy_t *p, int64_t trial, double time, const sched_point_t *pt,
                           sched_decision_t *out);
/* The trial ended (finished, stopped or failed); it will send no more results. */
void sched_on_trial_complete(sched_policy_t *p, int64_t trial);
/* Copies up to `max` rungs into out (brackets in order, rungs by ascending milestone)
 * and returns how many rungs there are in all. */
size_t sched_policy_rungs(const sched_policy_t *p, sched_rung_info_t *out, size_t max);
/* A slice is free: which of the n paused trials (in the order they paused) should resume
 * on it? Returns its index into paused, or -1 for "start a new trial instead" (or nothing,
 * when pending is 0: no new trial is left). A chosen trial's evidence (rung, value,
 * cutoff) goes to *why when why is not NULL. Policies that keep no opinion resume the
 * earliest paused trial once no new trial is left (Ray Tune's PENDING before PAUSED). */
long sched_policy_choose_next(sched_policy_t *p, const int64_t *paused, size_t n, size_t pending,
                              sched_decision_t *why);
/* Has the policy decided to end one of the n paused trials (HyperBand halves away trials
 * that wait paused at a milestone)? Returns its index into paused, with the judgement in
 * *why (action STOP or COMPLETE, words by sched_policy_word), or -1. The caller ends that
 * trial as the action says and asks again until -1; the policy forgets it as asked. */
long sched_policy_drop(sched_policy_t *p, const int64_t *paused, size_t n, sched_decision_t *why);
const char *sched_policy_name(const sched_policy_t *p);
/* What a policy may ask of the loop beyond CONTINUE, STOP and COMPLETE. The loop asks
 * this, never which policy it runs, so that a new policy needs nothing in the loop. */
#define SCHED_CAP_PAUSE                                                                            \
    0x1u /* PAUSE: trials stop and resume later (choose_next), so which                            \
          * trial goes next is decided late: no start is held */
/* EXPLOIT: a trial restarts from another trial's checkpoint with a new configuration, so
 * checkpoints outlive their trials (keep_checkpoints, pins) and a configuration, once
 * chosen, is not the space's to sample again */
#define SCHED_CAP_EXPLOIT 0x2u
/* TIME: it judges results by their time_attr value, so a result without one cannot be
 * judged (FIFO reads none) */
#define SCHED_CAP_TIME 0x4u
/* DROP: it may end paused trials while they wait (sched_policy_drop), so the loop asks it
 * before a slice goes to a paused trial; no other policy costs the loop that walk */
#define SCHED_CAP_DROP 0x8u
unsigned sched_policy_caps(const sched_policy_t *p);
/* The words of a judged decision (d->judged) the caller records: returns the action as
 * the store spells it ("stop", "complete", "pause", "continue") and writes the policy's
 * reason, in its own terms (rungs, medians, perturbation points), to buf (300 bytes hold
 * every reason). trial: the trial's name; time_attr and time: where the result stood. The
 * loop words no decision itself, so that a new policy brings its own words. */
const char *sched_policy_word(const sched_policy_t *p, const sched_decision_t *d, const char *trial,
                              const char *time_attr, double time, char *buf, size_t n);
/* The words of a resume: the paused trial choose_next chose (why: the evidence it filled,
 * or NULL) starts again as attempt `attempt` from `from` (its checkpoint, or the caller's
 * "scratch (no checkpoint)"). Returns the action to record, "promote" (it earned a higher
 * rung: why's rung, milestone and cutoff say which and how) or "resume", and writes the
 * reason to buf (600 bytes hold every reason). */
const char *sched_policy_word_resume(const sched_policy_t *p, const sched_decision_t *why,
                                     const char *time_attr, int attempt, const char *from,
                                     char *buf, size_t n);
/* pbt: `trial` exploits `donor` (a SCHED_EXPLOIT decision the caller acts on): the
 * donor's configuration explored with the policy's own random stream (space_explore), and
 * the donor's perturbation clock handed to the trial, as Ray Tune's _exploit does. On
 * success *out (and *what, when not NULL: what happened to each parameter) are new
 * objects the caller cJSON_Delete()s. SCHED_EINVAL for a policy other than pbt. */
int sched_policy_explore(sched_policy_t *p, int64_t trial, int64_t donor,
                         const struct cJSON *donor_config, struct cJSON **out, struct cJSON **what,
                         char *err, size_t errlen);

/* ==== resource pool (slices) ====================================================== */
/* A slice: what one trial holds while it runs. GPU capacity is counted in millionths
 * of a device so that 1/k shares add up exactly to at most one device. */
#define SCHED_MAX_SLICE_GPUS 64
typedef struct sched_slice {
    int ngpus;                      /* devices in the slice */
    int gpus[SCHED_MAX_SLICE_GPUS]; /* device indices as the pool knows them */
    uint32_t share_ppm;             /* per device: 1000000 = whole device */
    int cpus;
} sched_slice_t;

typedef struct sched_pool sched_pool_t;

/* gpu_ids: the device ids to hand out (as CUDA_VISIBLE_DEVICES names them), n may be 0;
 * cpus: CPU cores available. *out freed with sched_pool_free. */
int sched_pool_new(const int *gpu_ids, int ngpus, int cpus, sched_pool_t **out, char *err,
                   size_t errlen);
void sched_pool_free(sched_pool_t *p); /* NULL-safe */
/* Declares that devices a and b (indices into gpu_ids) talk peer-to-peer, so that
 * multi-GPU slices prefer them together. */
void sched_pool_set_peer(sched_pool_t *p, int a, int b);
/* Could a slice of `gpus` devices (0, a whole number, or 1/k) and `cpus` cores ever be
 * given by this pool? 0 if yes, SCHED_ENOFIT with a message otherwise. */
int sched_pool_check(const sched_pool_t *p, double gpus, int cpus, char *err, size_t errlen);
/* Takes a slice now: 0 and *out filled, or SCHED_EAGAIN if it does not fit now. */
int sched_pool_acquire(sched_pool_t *p, double gpus, int cpus, sched_slice_t *out);
void sched_pool_release(sched_pool_t *p, const sched_slice_t *s);
/* In use / total, for the live table. */
void sched_pool_usage(const sched_pool_t *p, double *gpus_used, int *gpus_total, int *cpus_used,
                      int *cpus_total);
/* "0,1" style device list of a slice (CUDA_VISIBLE_DEVICES), "" for none. */
void sched_slice_devices(const sched_pool_t *p, const sched_slice_t *s, char *buf, size_t n);
/* Human form for tables and the store: "gpu:0,1", "gpu:2@1/4", "cpu:2". */
void sched_slice_format(const sched_pool_t *p, const sched_slice_t *s, char *buf, size_t n);

/* ==== clocks and executors ======================================================== */
struct store;
struct trial_exec;

/* Where the loop gets the time. now: seconds on a clock that never goes back (timers,
 * grace periods, budgets, elapsed time); wall: Unix seconds for what is recorded. A real
 * run uses CLOCK_MONOTONIC and CLOCK_REALTIME (sched_clock_real); a simulation gives a
 * virtual clock, so that the very same loop replays hours in seconds. */
typedef struct sched_clock {
    double (*now)(void *ud);
    double (*wall)(void *ud);
    void *ud;
} sched_clock_t;
/* The clock of a real run (ud unused). */
extern const sched_clock_t sched_clock_real;

/* What the loop asks an executor to start. Pointers are borrowed for the call. */
typedef struct sched_start {
    const char *experiment;
    const char *name;           /* "trial_00007" */
    int64_t trial_no;           /* also the token the executor reports events with */
    int attempt;                /* 1 for the first run; each retry or resume adds one */
    const struct cJSON *config; /* the configuration */
    const char *dir;            /* the trial's own directory (it exists) */
    const char *devices;        /* the slice's devices (CUDA_VISIBLE_DEVICES), "" if none */
    double gpus;                /* GPUs in the slice (fractions for shared devices) */
    int cpus;                   /* cores in the slice */
    const char *resume_from;    /* checkpoint to continue from (TUNE_RESUME_FROM), or NULL */
    /* 1: start it in the slice of running trial `after` once that trial has ended, without
     * waiting for the loop (ops.cancel says whether the executor can; the loop names the
     * slice of `after` above). Its events come only after `after`'s end was reported. */
    int held;
    int64_t after;
} sched_start_t;

/* What start tells back about the started trial. Strings are the executor's, valid while
 * the trial runs. */
typedef struct sched_started {
    int64_t pid;         /* the trial's process (0 if none, or not known yet: events.pid) */
    const char *exec_id; /* executor's own id ("12345.0" for Slurm), "" if none */
    const char *node;    /* where it runs, "" if unknown */
} sched_started_t;

/* How a trial ended. */
typedef struct sched_exit {
    int code;        /* exit status, or -1 if a signal ended it */
    int signal;      /* terminating signal, or 0 */
    const char *why; /* the executor gave up on it (a watchdog), or NULL */
} sched_exit_t;

/* What an executor reports while the loop waits, with the trial_no it was started with. */
typedef struct sched_events {
    /* One complete stdout line (no newline); truncated: it was cut at its length limit. */
    void (*line)(void *ud, int64_t trial_no, const char *line, size_t len, int truncated);
    /* The trial's process ended and its output was read to the end. */
    void (*ended)(void *ud, int64_t trial_no, const sched_exit_t *ex);
    /* The executor learned late where the trial runs (Slurm's job and node). */
    void (*placed)(void *ud, int64_t trial_no, const char *exec_id, const char *node);
    /* The executor learned the trial's pid after its start returned (a start that did not
     * wait for the exec); NULL: not wanted. */
    void (*pid)(void *ud, int64_t trial_no, int64_t pid);
} sched_events_t;

/* An executor: how trials are started, watched and stopped: the loop's one contract with
 * whatever runs trials, "start this trial on this slice" (the way redis puts ae_epoll.c and
 * ae_select.c behind one ae.h). Implementations: real processes (trial/: trial_sched_exec_new
 * over any executor of trial.h's table, local or Slurm), the simulator's replay on a virtual
 * clock (sim/), and the tests' scripted executor. The executor builds the trial's argv and
 * environment and keeps whatever it needs of its own (job ids, held starts); the loop never
 * does, and never asks which executor it has (only what its ops offer). */
typedef struct sched_exec_ops {
    const char *name; /* "local", "slurm", "simulated", ... */
    /* Starts a trial; SCHED_EINVAL (or another negative code) with err when it cannot be
     * started at all (the loop records it as ERROR). */
    int (*start)(void *self, const sched_start_t *s, sched_started_t *out, char *err,
                 size_t errlen);
    /* SIGTERM (stop, with the grace period the loop keeps) or SIGKILL to a running trial. */
    void (*signal)(void *self, int64_t trial_no, int sig);
    /* Waits at most timeout seconds (the loop's clock) for lines and ends and reports
     * them through ev; also returns early when wake_fd (>= 0) becomes readable, and then
     * reads what is in it before it looks for ended trials (sched_run's self-pipe: a
     * SIGCHLD after that look must wake the next wait). Returns
     * >= 0, or a negative code with err when waiting itself failed. */
    int (*wait)(void *self, double timeout, int wake_fd, const sched_events_t *ev, void *ud,
                char *err, size_t errlen);
    /* Forgets a trial after its end was reported, or kills and forgets one still running
     * (the loop tearing down). */
    void (*release)(void *self, int64_t trial_no);
    void (*free)(void *self);
    /* Optional: where a trial that was paused (and has ended) would resume from, or where
     * a running one stands (PBT's donor), written to buf; 0 if it has one, -1 if not.
     * NULL: the newest checkpoint* file in the trial's directory, or what its results
     * named (real processes). The simulator answers "iteration:N". */
    int (*checkpoint)(void *self, int64_t trial_no, char *buf, size_t n);
    /* Optional (NULL: start never holds a trial, sched_start_t.held). Drops a held start
     * that has not happened yet: 1, and the trial is forgotten as if never started; 0 when
     * it has started (its predecessor's end is then about to be reported). A start that
     * cannot be held returns SCHED_EAGAIN, nothing started. */
    int (*cancel)(void *self, int64_t trial_no);
} sched_exec_ops_t;

typedef struct sched_exec {
    const sched_exec_ops_t *ops;
    void *self;
} sched_exec_t;

void sched_exec_free(sched_exec_t *ex); /* NULL-safe: ops->free, then the handle */

/* ==== the event loop ============================================================== */
/* One single-threaded loop (redis ae.c style) drives an experiment: it launches trials
 * into slices, reads their result lines, asks the policy, records everything in the
 * store once per turn, and reports snapshots for a live table through a callback. It is
 * a handle turned one step at a time (sched_loop_turn), as redis wraps aeProcessEvents in
 * aeMain; sched_run is the wrapper for a real run (signals, turns until the end). */
typedef enum {
    SCHED_TRIAL_PENDING = 0,
    SCHED_TRIAL_RUNNING,
    SCHED_TRIAL_PAUSED,
    SCHED_TRIAL_TERMINATED,
    SCHED_TRIAL_ERROR,
    SCHED_TRIAL_NSTATUS
} sched_trial_status_t;

/* The one spelling of each status, indexed by the enum: the store's allow-list and the
 * schema's CHECK are tested against it (tests/test_vocab.c), and everything else that
 * prints or records a status goes through sched_status_name. */
#define SCHED_TRIAL_STATUS_NAMES                                                                   \
    {                                                                                              \
        [SCHED_TRIAL_PENDING] = "PENDING", [SCHED_TRIAL_RUNNING] = "RUNNING",                      \
        [SCHED_TRIAL_PAUSED] = "PAUSED", [SCHED_TRIAL_TERMINATED] = "TERMINATED",                  \
        [SCHED_TRIAL_ERROR] = "ERROR"                                                              \
    }

/* "PENDING", "RUNNING", ... as the store and the table spell them; "?" out of range. */
const char *sched_status_name(sched_trial_status_t s);

/* One trial as the live table shows it; pointers valid during the report callback. */
typedef struct sched_trial_view {
    int64_t trial_no;
    const char *name;
    sched_trial_status_t status;
    int early_stopped;
    const char *slice;               /* "gpu:0,1", "cpu:1", "" while pending */
    const struct cJSON *config;      /* the configuration object */
    int64_t iterations;              /* results recorded */
    double last_time;                /* last value of time_attr, NaN if none */
    double last_metric, best_metric; /* NaN if none */
    const char *exec_id, *node;      /* executor's id and node, "" if none */
    const char *error;               /* NULL unless ERROR */
    const double *columns;           /* the reporter's metric_columns in the last result
                                        (ncolumns of them; NaN where missing) */
    size_t ncolumns;
    double run_s; /* seconds the trial has run (this attempt), 0 if never */
} sched_trial_view_t;

/* The live table's order, as qsort's: running first, then failures, paused, finished by
 * last_metric (best first, NaN last), then pending; by trial number within each. */
int sched_view_order(const sched_trial_view_t *a, const sched_trial_view_t *b, int mode_max);

typedef struct sched_snapshot {
    const char *experiment;
    const char *policy;
    const char *searcher; /* "random", "TPE (optuna)", ... (space_search_name); may be NULL */
    const char *metric;
    int mode_max;
    double elapsed_s;
    size_t counts[SCHED_TRIAL_NSTATUS];
    size_t early_stopped;
    double gpus_used;
    int gpus_total, cpus_used, cpus_total;
    const sched_rung_info_t *rungs;
    size_t nrungs;
    /* In trial order: every trial, or with report_trials the first report_trials in
     * sched_view_order (the live table shows no more). */
    const sched_trial_view_t *trials;
    size_t ntrials;
    size_t total_trials; /* in the experiment (counts[] add up to it); 0: ntrials */
    int64_t best_trial;  /* -1 if none yet: by the last result of each trial */
    double best_metric;
    uint64_t results;   /* results recorded */
    uint64_t ignored;   /* result lines after a stop decision, logged only */
    uint64_t bad_lines; /* result lines cut off (over-long) or opening with { but not JSON */
    int stopping;       /* Ctrl-C/SIGTERM seen: no new trials */
    /* A warning the user must see once (a metric the trials never report, with
     * allow_missing_metric): "" if none. The same text stays until the end. */
    const char *notice;
} sched_snapshot_t;

/* final is 1 for the last call, after every trial ended. */
typedef void (*sched_report_cb)(void *ud, const sched_snapshot_t *snap, int final);

/* A finite pool of configurations each trial's is chosen from (tune simulate --pool,
 * docs/simulate.md "The pool protocol"): at a trial's launch the searcher chooses among the
 * configurations not taken yet (space_searcher_choose), and the trial takes it for good.
 * The experiment runs at most `size` trials: once the pool is exhausted no new trial
 * starts. Borrowed by the loop. */
typedef struct sched_choices {
    /* The configurations not taken yet: *configs gets n of them (borrowed until take). */
    size_t (*unused)(void *ud, const cJSON *const **configs);
    /* Trial trial_no takes unused configuration k: 0, or a negative code. */
    int (*take)(void *ud, int64_t trial_no, size_t k);
    void *ud;
    size_t size;
} sched_choices_t;

typedef struct sched_run_opts {
    const struct space *space;  /* settings, sampling, command template */
    struct store *store;        /* where everything is recorded */
    int64_t experiment_id;      /* created by the caller */
    int resume;                 /* 1: continue this experiment from what the store holds */
    sched_exec_t *exec;         /* how trials are started */
    sched_pool_t *pool;         /* what slices are handed out from */
    const char *results_dir;    /* this experiment's folder; trial dirs go under it */
    const sched_clock_t *clock; /* NULL: the real clocks */
    double report_every_s;      /* call report at most this often (and when final) */
    sched_report_cb report;
    void *report_ud;
    int handle_signals; /* sched_run: take SIGINT/SIGTERM (stop) while running */
    int wake_fd;        /* sched_loop_turn: also wake when this fd is readable; -1 none */
    /* > 0: a snapshot hands the report callback at most this many trials, the first in
     * sched_view_order, so that a report costs no memory per trial (a simulation of a
     * million); 0: every trial. */
    size_t report_trials;
    /* 1: a PBT exploit copies its donor's checkpoint byte for byte (in a child process,
     * the loop going on) instead of hard-linking it, for trials that rewrite their
     * checkpoint files in place (TUNE_CHECKPOINT_COPY=bytes). */
    int copy_bytes;
    /* 0: each turn is committed before the loop waits (a real run: a result is durable by
     * the end of its turn). > 0: at most this often, in real seconds, for executors whose
     * wait never blocks (a simulation), so that a turn per event costs no commit each. */
    double commit_every_s;
    /* NULL, or how many stop signals (SIGINT, SIGTERM) came and the first one's number, as
     * a signal handler counts them (sched_run's): each turn takes new ones as
     * sched_loop_stop as soon as its wait returns. */
    const volatile sig_atomic_t *stops, *stop_sig;
    /* NULL, or the pool every trial's configuration is chosen from (no resume, PBT or
     * points_to_evaluate with it) */
    const sched_choices_t *choices;
} sched_run_opts_t;

/* Why the experiment ended before every trial had run (sched_run_result_t.ended_by). */
typedef enum {
    SCHED_END_ALL = 0,   /* every trial ran (or the user interrupted: see interrupted) */
    SCHED_END_BUDGET,    /* time_budget_s ran out */
    SCHED_END_TARGET,    /* a trial reached a metric target with stop_experiment_on_target */
    SCHED_END_FAIL_FAST, /* fail_fast identical early failures */
    SCHED_END_NO_METRIC, /* the first result lacked the metric or time_attr */
} sched_end_t;

typedef struct sched_run_result {
    int interrupted; /* stopped by SIGINT/SIGTERM before the end */
    int signal;      /* which signal stopped it, 0 if none */
    size_t terminated, errored, early_stopped, paused;
    int64_t best_trial; /* -1 if no trial reported the metric */
    double best_metric;
    sched_end_t ended_by;
    /* ended_by TARGET: the trial and the criterion; FAIL_FAST: the common error and the
     * first lines of the first such trial's stderr.log; NO_METRIC: the message. */
    int64_t end_trial;
    char end_msg[1024];
    char end_detail[2048];
    /* Trials whose results all arrived within a second of their exit although they ran
     * for longer (output buffered): how many and the first one. */
    size_t buffered;
    int64_t buffered_trial;
    /* One result line that was not JSON (escaped, cut short), "" if none; its trial. */
    char bad_example[160];
    int64_t bad_trial;
    char notice[1024]; /* the allow_missing_metric warning, "" if none */
} sched_run_result_t;

typedef struct sched_loop sched_loop_t;

/* Builds the loop of one experiment: the policy, and every trial (recorded as PENDING
 * up front, or, with resume, rebuilt from the store: finished trials stay finished,
 * trials that were running start again from their last checkpoint as a new attempt,
 * ASHA's rungs are replayed in arrival order). o and what it points to are borrowed
 * and must outlive *out, freed with sched_loop_free. */
int sched_loop_new(const sched_run_opts_t *o, sched_loop_t **out, char *err, size_t errlen);
/* Records the row of every trial that has none yet, as PENDING (random search samples
 * them all up front). Otherwise the turns do it, a step after each one's launches, so that
 * the first trials do not wait for the others' rows; a caller on a virtual clock (the
 * simulator) calls it first. Rows made before a failure are kept. */
int sched_loop_create_rows(sched_loop_t *L, char *err, size_t errlen);
/* One turn: launch what fits, wait at most timeout seconds for trial output (less when a
 * timer is due), handle it, fire timers, record it all in one transaction, report when
 * due. Returns 1 while the experiment goes on, 0 once it has ended (the final report is
 * made then), or a negative code with err when the store failed (trials are then being
 * stopped: keep turning until 0 to end them, and report the error). */
int sched_loop_turn(sched_loop_t *L, double timeout, char *err, size_t errlen);
/* Ctrl-C: no new trials, running ones are stopped (SIGTERM, SIGKILL after the grace
 * period) and end PAUSED; a second call (hard) kills them at once. `sig` is remembered
 * as the reason (0: none). */
void sched_loop_stop(sched_loop_t *L, int sig);
/* Hands the report callback a snapshot now (not final), whatever report_every_s says:
 * for a caller that paces the live table on a clock of its own (a simulation, whose loop
 * clock is virtual, paces it in real time). */
void sched_loop_report(sched_loop_t *L);
/* The per-result path, for executors and benchmarks: one stdout line of trial trial_no,
 * recorded, counted and judged exactly as a running trial's line is. */
void sched_loop_line(sched_loop_t *L, int64_t trial_no, const char *line, size_t len,
                     int truncated);
/* How the experiment stands (final after sched_loop_turn returned 0). */
void sched_loop_result(const sched_loop_t *L, sched_run_result_t *res);
void sched_loop_free(sched_loop_t *L); /* NULL-safe; kills what still runs */

/* Runs the experiment to its end (or until interrupted): sched_loop_new, turns, with
 * SIGINT/SIGTERM taken as sched_loop_stop when o->handle_signals. Returns 0 with *res
 * filled, or a negative code with err set when the experiment cannot go on (the store
 * failed): trials are then stopped and everything recorded so far stays in the store. */
int sched_run(const sched_run_opts_t *o, sched_run_result_t *res, char *err, size_t errlen);

/* Detects the GPUs this process may use: CUDA_VISIBLE_DEVICES if set, else the CUDA
 * runtime loaded with dlopen (so a binary still runs where there is no driver). Fills
 * ids (up to max) and returns how many; 0 when there is none. peer[i*max+j] is set to 1
 * when devices i and j can access each other's memory (peer may be NULL). */
int sched_detect_gpus(int *ids, int max, unsigned char *peer);

#endif
