/* search/settings.h: everything in space.json except "space" itself, with defaults filled
 * in: the mode, the scheduler's and executor's options, run limits, the reporter's
 * columns, the searcher's type and points_to_evaluate; and the one spelling of each mode
 * and scheduler. Not for: parsing (space.h: space_parse fills these in, settings.c reads
 * the sections) or the searcher itself (searcher.h). Ownership: plain data owned by the
 * space_t whose space_settings() returned it; read-only to everyone else. */
#ifndef TUNE_SETTINGS_H
#define TUNE_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "search/space.h"

typedef enum { SPACE_MODE_MIN = 0, SPACE_MODE_MAX = 1 } space_mode_t;
typedef enum {
    SPACE_SCHED_FIFO = 0,
    SPACE_SCHED_ASHA = 1,
    SPACE_SCHED_MEDIAN = 2,
    SPACE_SCHED_PBT = 3,
    SPACE_SCHED_HYPERBAND = 4
} space_sched_type_t;
#define SPACE_NMODES 2
#define SPACE_NSCHED 5

/* The one spelling of each mode and scheduler, indexed by its enum: what space.json says
 * (parse.c matches against these tables), what the store records, what the CLI prints.
 * Anything that needs a name calls space_mode_name / space_sched_name. */
#define SPACE_MODE_NAMES                                                                           \
    {                                                                                              \
        [SPACE_MODE_MIN] = "min", [SPACE_MODE_MAX] = "max"                                         \
    }
#define SPACE_SCHED_NAMES                                                                          \
    {                                                                                              \
        [SPACE_SCHED_FIFO] = "fifo", [SPACE_SCHED_ASHA] = "asha", [SPACE_SCHED_MEDIAN] = "median", \
        [SPACE_SCHED_PBT] = "pbt", [SPACE_SCHED_HYPERBAND] = "hyperband"                           \
    }

/* "min" or "max"; "?" for a value outside the enum. */
static inline const char *space_mode_name(space_mode_t m)
{
    static const char *const names[SPACE_NMODES] = SPACE_MODE_NAMES;
    return (unsigned)m < SPACE_NMODES ? names[m] : "?";
}

/* "fifo", "asha", "median", "pbt" or "hyperband"; "?" for a value outside the enum. */
static inline const char *space_sched_name(space_sched_type_t t)
{
    static const char *const names[SPACE_NSCHED] = SPACE_SCHED_NAMES;
    return (unsigned)t < SPACE_NSCHED ? names[t] : "?";
}
typedef enum { SPACE_EXEC_LOCAL = 0, SPACE_EXEC_SLURM = 1 } space_exec_type_t;

/* ASHA's "variant": "stopping" (Ray Tune's ASHAScheduler: stop a trial below its rung's
 * cutoff), "promotion" (Li et al.'s algorithm 2: pause at each rung, promote from the top
 * floor(n/rf)), "eager_promotion" (the same, but a rung that holds fewer than rf results
 * promotes its best, so the first trials go on at once; docs/pbt.md). */
enum { SPACE_ASHA_STOPPING = 0, SPACE_ASHA_PROMOTION = 1, SPACE_ASHA_EAGER = 2 };

/* "scheduler": {...}. Defaults follow Ray Tune's ASHAScheduler. */
typedef struct space_sched_opts {
    space_sched_type_t type;  /* "fifo" | "asha" | "median" | "pbt" | "hyperband"; default fifo */
    char time_attr[64];       /* default "training_iteration" */
    double max_t;             /* default 100 */
    double grace_period;      /* default 1 */
    double reduction_factor;  /* default 4 */
    int brackets;             /* default 1 */
    int min_samples_required; /* median stopping: default 3 */
    int stop_last_trials;     /* asha: 1 (default) completes a trial at max_t; 0 lets it run on */
    int promotion; /* asha "variant": SPACE_ASHA_STOPPING (default), _PROMOTION, _EAGER */
    int hard_stop; /* median: 1 (default) stops; 0 pauses instead (Ray's hard_stop) */
    /* pbt (Ray Tune's PopulationBasedTraining, docs/pbt.md): */
    double perturbation_interval;   /* in time_attr units, > 0; default 60 (Ray's) */
    double quantile_fraction;       /* in [0, 0.5]; default 0.25 */
    double resample_probability;    /* in [0, 1]; default 0.25 */
    double perturbation_factors[8]; /* each > 0; default 1.2, 0.8 */
    int nfactors;
    double burn_in_period; /* no exploit before this time; default 0 */
    int keep_checkpoints;  /* checkpoints kept on disk per trial, >= 1; default 2 */
    int nmutations;        /* entries of "hyperparam_mutations"; 0: every mutable parameter */
} space_sched_opts_t;

/* One "stop" criterion: a trial stops when result[key] reaches target (for the
 * experiment's metric, or any of its objectives: at least as good in its mode; for any other
 * key: >= target; space_stop_cmp says which). */
typedef struct space_stop {
    char *key;
    double target;
} space_stop_t;

/* Several objectives (issue 30, docs/multiobjective.md): "metric": ["val_loss", "latency_ms"]
 * with "mode": ["min", "min"]. A string metric is one objective. */
#define SPACE_MAX_OBJECTIVES 8
/* At most this many "constraints" (each is looked up in every result). */
#define SPACE_MAX_CONSTRAINTS 16

/* How a constraint compares a reported value with its bound; the one spelling of each is
 * SPACE_CMP_NAMES ("<=", ">=", "<", ">"), as space.json writes it. */
typedef enum { SPACE_CMP_LE = 0, SPACE_CMP_GE = 1, SPACE_CMP_LT = 2, SPACE_CMP_GT = 3 } space_cmp_t;
#define SPACE_NCMP 4
#define SPACE_CMP_NAMES                                                                            \
    {                                                                                              \
        [SPACE_CMP_LE] = "<=", [SPACE_CMP_GE] = ">=", [SPACE_CMP_LT] = "<", [SPACE_CMP_GT] = ">"   \
    }

/* One entry of "constraints": {"gpu_mem_gb": {"<=": 16}} is {key "gpu_mem_gb", LE, 16}. A
 * key may carry several (a range is {">=": 1, "<=": 4}: two entries). */
typedef struct space_constraint {
    char *key;
    space_cmp_t op;
    double bound;
} space_constraint_t;

/* At most this many "stop" criteria (each is looked up in every result). */
#define SPACE_MAX_STOP 16
/* At most this many "reporter" metric_columns. */
#define SPACE_MAX_COLUMNS 8

/* "search": {"type": ..., "preset": ...}: who chooses each trial's configuration. Each
 * type indexes search/searcher.c's table of searchers, whose names space.json spells. */
typedef enum { SPACE_SEARCH_RANDOM = 0, SPACE_SEARCH_TPE = 1 } space_search_type_t;
typedef enum { SPACE_TPE_OPTUNA = 0, SPACE_TPE_BOHB = 1 } space_tpe_preset_t;
/* "search": {"pool": "propose+steps+startup10"} (experimental, issue 29; docs/search.md):
 * propose and take the nearest unused row (else "score" every unused row); the optuna
 * preset ranks every ended trial by the deepest rung it reached, then its value there
 * (Optuna 3.1's pruned trials), leaving running ones out; its model starts at 10
 * observations (Optuna's n_startup_trials) */
enum {
    SPACE_TPE_POOL_PROPOSE = 1,
    SPACE_TPE_POOL_STEPS = 2,
    SPACE_TPE_POOL_STARTUP10 = 4,
    SPACE_TPE_POOL_SCORE = 8 /* "score", also the default: every unused row scored */
};

/* "executor": {...}; local unless said otherwise. */
typedef struct space_exec_opts {
    space_exec_type_t type; /* "local" | "slurm" */
    char **srun_args;       /* NULL-terminated extra srun options; NULL if none */
    char *allocation;       /* Slurm job id to run steps in, or NULL */
} space_exec_opts_t;

/* Everything in space.json except "space" itself, with defaults filled in.
 * All pointers are owned by the space_t and live as long as it does. */
typedef struct space_settings {
    char *name;        /* [A-Za-z0-9_.-]+, not "." or "..", no leading '-', at most 100 chars */
    char *metric;      /* the metric ASHA and `tune best` use; with several objectives the first */
    space_mode_t mode; /* with several objectives, the first one's */
    /* The objectives: nobjectives (0 when there is no "metric", 1 for a string metric, at
     * most SPACE_MAX_OBJECTIVES) names and modes; metrics[0] == metric, modes[0] == mode.
     * Code that handles one objective reads metric and mode; code that handles several
     * reads these. */
    char **metrics;
    space_mode_t *modes;
    size_t nobjectives;
    space_constraint_t *constraints; /* "constraints": nconstraints of them; NULL if none */
    size_t nconstraints;
    int num_samples;    /* default 1; each grid point is repeated this many times */
    int max_concurrent; /* default 0 = no limit beyond resources */
    uint64_t seed;      /* default 0 */
    char **command;     /* NULL-terminated argv template with {placeholders} */
    int command_argc;
    double gpus_per_trial; /* 0, a whole number, or 1/k */
    int cpus_per_trial;    /* default 1 */
    space_sched_opts_t sched;
    space_exec_opts_t exec;
    double stop_grace_s;       /* "stop_grace_s": SIGTERM..SIGKILL, default 5 */
    double status_interval_s;  /* "status_interval_s": plain status block period, default 30 */
    double result_timeout_s;   /* "result_timeout_s": 0 = none */
    double time_budget_s;      /* "time_budget_s": the whole experiment (Ray Tune's), 0 = none */
    double trial_time_limit_s; /* "trial_time_limit_s": per trial, past it ERROR; 0 = none */
    int max_failures;          /* "max_failures": retries of an ERROR trial, default 0 */
    int fail_fast;             /* "fail_fast": stop after this many identical early failures
                                  (0 = never); default 3; true = 1, false = 0 */
    int allow_missing_metric;  /* "allow_missing_metric": a warning instead of an error */
    int stop_experiment_on_target; /* "stop_experiment_on_target": a metric target ends all */
    space_stop_t *stop;            /* "stop": criteria, nstop of them; NULL if none */
    size_t nstop;
    char **metric_columns;      /* "reporter": {"metric_columns": [...]}; NULL-terminated or NULL */
    char **parameter_columns;   /* "reporter": {"parameter_columns": [...]}; NULL: all */
    space_search_type_t search; /* "search": {"type"}: random (default) or tpe */
    space_tpe_preset_t search_preset; /* "search": {"preset"}: optuna (default) or bohb */
    /* "search": {"pool"} (experimental, issue 29; docs/search.md): SPACE_TPE_POOL_* bits, 0
     * (default) for "score" */
    int search_pool;
    /* "points_to_evaluate" (Ray Tune's name): configurations trials 0, 1, ... run first,
     * each a JSON object of top-level parameters checked against the space (a point may
     * leave parameters out: the searcher fills them). NULL when there are none. */
    cJSON *points_to_evaluate;
    size_t npoints;
} space_settings_t;

/* 1 when a metric's name says higher is better (a whole word of it, split at '_', '-', '.',
 * '/', ':' or ' ', is acc, accuracy, auc, f1, precision, recall, score, reward, return, map,
 * iou, dice, bleu, rouge, r2, top1 or top5, as Keras and torchmetrics spell them), else 0.
 * The one list: space.json refuses such a metric without a "mode" (its default is "min"),
 * and the CLI guesses the order of another metric's values with it. */
int space_metric_looks_max(const char *metric);

/* A result's objectives as numbers to minimise: out[i] = result[metrics[i]], negated where
 * modes[i] is max; NaN where the key is missing, not a number or not finite. Fills
 * s->nobjectives values (none when there is no metric). The one place that turns a result
 * into objective values: the scheduler, the CLI and the simulator all call it. */
void space_objectives(const space_settings_t *s, const cJSON *result, double *out);

/* How far a result is from satisfying the constraints: 0 when it satisfies all of them (or
 * there are none), else the sum over the violated ones of |value - bound| (Optuna's
 * constrained NSGA-II orders infeasible trials by this total); +INFINITY when a
 * constrained key is missing, not a number or NaN (nothing says it is feasible). A strict
 * constraint ("<") met with equality counts as violated by 0 and is still infeasible: the
 * result is then the smallest positive double. */
double space_violation(const space_settings_t *s, const cJSON *result);

/* How "stop" criterion i (i < s->nstop) compares a result with its target: "at least as
 * good" for a key that is an objective (SPACE_CMP_LE where its mode is min, SPACE_CMP_GE
 * where it is max), SPACE_CMP_GE (result >= target, as Ray Tune's stop={...}) for any
 * other key. With several objectives each objective's target is judged in its own mode. */
space_cmp_t space_stop_cmp(const space_settings_t *s, size_t i);

/* The resolved settings (defaults filled in) as a JSON object; caller cJSON_Delete()s. With
 * several objectives "metric" and "mode" are lists (one objective: strings, as before);
 * "constraints" ({key: {op: bound}}) is there only when there are any. */
cJSON *space_settings_json(const space_t *s);

#endif
