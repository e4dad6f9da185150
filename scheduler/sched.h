/* scheduler: decides which trials run, where, and when they stop.
 * Three parts, kept apart: policies (FIFO, ASHA, median stopping: sched_policy_*),
 * the resource pool that hands out GPU/CPU slices (sched_pool_*), and the single-
 * threaded event loop that drives trials (sched_run, in loop.c). Not for: terminals
 * (the loop reports through a callback) or SQL (it tells store what happened). */
#ifndef TUNE_SCHED_H
#define TUNE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#define SCHED_OK 0
#define SCHED_EINVAL (-1)
#define SCHED_ENOMEM (-2)
#define SCHED_ENOFIT (-3) /* a request the pool can never satisfy */
#define SCHED_EAGAIN (-4) /* does not fit now; try again when something is released */

/* ==== policies ==================================================================== */
typedef enum {
    SCHED_POLICY_FIFO = 0,
    SCHED_POLICY_ASHA = 1,
    SCHED_POLICY_MEDIAN = 2
} sched_policy_type_t;

typedef struct sched_opts {
    sched_policy_type_t type;
    int mode_max;             /* 0: lower metric is better, 1: higher is better */
    double max_t;             /* a result with time >= max_t completes the trial (asha, median) */
    double grace_period;      /* asha: first milestone; median: no stop before this time */
    double reduction_factor;  /* asha: > 1 */
    int brackets;             /* asha: >= 1 */
    int min_samples_required; /* median */
    uint64_t seed;            /* bracket assignment */
    int keep_last_trials;     /* asha: 1 = Ray's stop_last_trials=False: no COMPLETE at max_t */
} sched_opts_t;

typedef enum {
    SCHED_CONTINUE = 0,
    SCHED_STOP = 1,     /* early stop: the trial is worse than the cutoff */
    SCHED_COMPLETE = 2, /* time >= max_t: the trial has trained long enough */
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
/* The trial ended (finished, stopped or failed); it will send no more results. */
void sched_on_trial_complete(sched_policy_t *p, int64_t trial);
/* Copies up to `max` rungs into out (brackets in order, rungs by ascending milestone)
 * and returns how many rungs there are in all. */
size_t sched_policy_rungs(const sched_policy_t *p, sched_rung_info_t *out, size_t max);
const char *sched_policy_name(const sched_policy_t *p);

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

/* ==== the event loop ============================================================== */
/* One single-threaded loop (redis ae.c style) drives an experiment: it launches trials
 * into slices, reads their result lines, asks the policy, records everything in the
 * store once per turn, and reports snapshots for a live table through a callback. */
struct space;
struct store;
struct trial_exec;
struct cJSON;

typedef enum {
    SCHED_TRIAL_PENDING = 0,
    SCHED_TRIAL_RUNNING,
    SCHED_TRIAL_PAUSED,
    SCHED_TRIAL_TERMINATED,
    SCHED_TRIAL_ERROR,
    SCHED_TRIAL_NSTATUS
} sched_trial_status_t;

/* "PENDING", "RUNNING", ... as the store and the table spell them. */
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

typedef struct sched_snapshot {
    const char *experiment;
    const char *policy;
    const char *metric;
    int mode_max;
    double elapsed_s;
    size_t counts[SCHED_TRIAL_NSTATUS];
    size_t early_stopped;
    double gpus_used;
    int gpus_total, cpus_used, cpus_total;
    const sched_rung_info_t *rungs;
    size_t nrungs;
    const sched_trial_view_t *trials; /* in trial order */
    size_t ntrials;
    int64_t best_trial; /* -1 if none yet: by the last result of each trial */
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

typedef struct sched_run_opts {
    const struct space *space; /* settings, sampling, command template */
    struct store *store;       /* where everything is recorded */
    int64_t experiment_id;     /* created by the caller */
    int resume;                /* 1: continue this experiment from what the store holds */
    struct trial_exec *exec;   /* how trials are started */
    sched_pool_t *pool;        /* what slices are handed out from */
    const char *results_dir;   /* this experiment's folder; trial dirs go under it */
    double report_every_s;     /* call report at most this often (and when final) */
    sched_report_cb report;
    void *report_ud;
    int handle_signals; /* take SIGINT/SIGTERM (stop) while running */
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

/* Runs the experiment to its end (or until interrupted). With resume, the trials, their
 * results and the policy's state (ASHA rungs, replayed in arrival order) are rebuilt from
 * the store: finished trials stay finished, trials that were running start again (from
 * their last checkpoint where one exists) as a new attempt, pending ones run as the seed
 * drew them. Returns 0 with *res filled,
 * or a negative code with err set when the experiment cannot go on (the store failed):
 * trials are then stopped and everything recorded so far stays in the store. */
int sched_run(const sched_run_opts_t *o, sched_run_result_t *res, char *err, size_t errlen);

/* Detects the GPUs this process may use: CUDA_VISIBLE_DEVICES if set, else the CUDA
 * runtime loaded with dlopen (so a binary still runs where there is no driver). Fills
 * ids (up to max) and returns how many; 0 when there is none. peer[i*max+j] is set to 1
 * when devices i and j can access each other's memory (peer may be NULL). */
int sched_detect_gpus(int *ids, int max, unsigned char *peer);

#endif
