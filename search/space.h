/* search: reads an experiment file (space.json) and samples configurations from it,
 * reproducibly from a seed. Not for: running trials or storing anything; what it
 * produces is plain data (settings, cJSON configurations, argv vectors) for cli and
 * scheduler. */
#ifndef TUNE_SPACE_H
#define TUNE_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Error codes (negative), returned by every function that can fail. */
#define SPACE_OK 0
#define SPACE_EINVAL (-1) /* the file is wrong: the message says where and why */
#define SPACE_EIO (-2)    /* the file could not be read */
#define SPACE_ENOMEM (-3)

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
    int promotion;            /* asha: "variant": "promotion" (1) or "stopping" (0, default) */
    int hard_stop;            /* median: 1 (default) stops; 0 pauses instead (Ray's hard_stop) */
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
 * experiment's metric: at least as good in its mode; for any other key: >= target). */
typedef struct space_stop {
    char *key;
    double target;
} space_stop_t;

/* At most this many "stop" criteria (each is looked up in every result). */
#define SPACE_MAX_STOP 16
/* At most this many "reporter" metric_columns. */
#define SPACE_MAX_COLUMNS 8

/* "search": {"type": ..., "preset": ...}: who chooses each trial's configuration. */
typedef enum { SPACE_SEARCH_RANDOM = 0, SPACE_SEARCH_TPE = 1 } space_search_type_t;
typedef enum { SPACE_TPE_OPTUNA = 0, SPACE_TPE_BOHB = 1 } space_tpe_preset_t;

/* "executor": {...}; local unless said otherwise. */
typedef struct space_exec_opts {
    space_exec_type_t type; /* "local" | "slurm" */
    char **srun_args;       /* NULL-terminated extra srun options; NULL if none */
    char *allocation;       /* Slurm job id to run steps in, or NULL */
} space_exec_opts_t;

/* Everything in space.json except "space" itself, with defaults filled in.
 * All pointers are owned by the space_t and live as long as it does. */
typedef struct space_settings {
    char *name;   /* [A-Za-z0-9_.-]+, not "." or "..", no leading '-', at most 100 chars */
    char *metric; /* the metric ASHA and `tune best` use */
    space_mode_t mode;
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
    /* "points_to_evaluate" (Ray Tune's name): configurations trials 0, 1, ... run first,
     * each a JSON object of top-level parameters checked against the space (a point may
     * leave parameters out: the searcher fills them). NULL when there are none. */
    cJSON *points_to_evaluate;
    size_t npoints;
} space_settings_t;

typedef struct space space_t;

/* Parses an experiment file held in memory. `filename` is used only in messages,
 * which look like "space.json:12:7: \"loguniform\" needs low > 0" (or
 * "space.json: space.lr: ..." where there is no position). On success *out is a new
 * space the caller frees with space_free; on failure *out is untouched and err holds
 * the message. */
int space_parse(const char *text, size_t len, const char *filename, space_t **out, char *err,
                size_t errlen);
/* Reads and parses a file: space_parse on its contents. */
int space_load(const char *path, space_t **out, char *err, size_t errlen);
void space_free(space_t *s); /* NULL-safe */

const space_settings_t *space_settings(const space_t *s);
/* Gives the experiment another name (checked as space_check_name does), e.g. "exp-2"
 * when `tune run --restart` must not reuse an existing one. Added for cli. */
int space_rename(space_t *s, const char *name, char *err, size_t errlen);
const char *space_text(const space_t *s); /* the file as read, for the store */
/* Grows the experiment to n trials (n >= the current count): trials past the file's own
 * count continue the seed's sequence (further repeats in Ray Tune's order), which is what
 * `tune run --more` and `tune extend` add. 0 or SPACE_EINVAL. */
int space_set_num_trials(space_t *s, size_t n, char *err, size_t errlen);

/* The candidate closest to word (the spelling-mistake distance space.json's messages use
 * for "did you mean"), or NULL when none is close enough. */
const char *space_suggest(const char *word, const char *const *candidates, size_t n);

/* The resolved settings (defaults filled in) as a JSON object; caller cJSON_Delete()s. */
cJSON *space_settings_json(const space_t *s);

/* The name of the searcher the settings ask for, as the live table and `tune show` print
 * it: "random", "TPE (optuna)", "TPE (bohb)". */
const char *space_search_name(const space_settings_t *set);

/* Number of trials the experiment has: num_samples x (product of grid sizes). */
size_t space_num_trials(const space_t *s);

/* Parameters, in the order space.json declares them. */
size_t space_num_params(const space_t *s);
const char *space_param_name(const space_t *s, size_t i);
/* Distribution name as written ("loguniform", "choice", "grid_search", "constant", ...),
 * or "object" for an object of distributions (a nested space). */
const char *space_param_kind(const space_t *s, size_t i);
int space_param_is_log(const space_t *s, size_t i); /* loguniform / qloguniform / lograndint */

/* Remarks about a file that is valid but may not do what its author means, for
 * `tune validate` to print: a parameter no {placeholder} uses ("the trial sees it only
 * through TUNE_CONFIG"), a placeholder that only some branches of a choice have. The i-th
 * note, or NULL past the last one; owned by the space. */
const char *space_note(const space_t *s, size_t i);

/* The configuration of trial `index` (0-based), a pure function of (seed, index): the
 * same on any machine and in any order of calls, which is what resume relies on.
 * Ray Tune's order: index = repeat * n_grid_points + grid_point. On success *out is a
 * new JSON object (keys in declaration order) the caller cJSON_Delete()s. */
int space_sample(const space_t *s, size_t index, cJSON **out, char *err, size_t errlen);

/* Renders the command template for one configuration: "{name}" becomes the value
 * (numbers printed so they read back exactly, strings as they are, other JSON as JSON),
 * "{a.b}" the value at that path in a nested object, "{trial_id}" and "{trial_dir}" the
 * given strings, "{{" and "}}" literal braces. An element whose "{a.b}" the
 * configuration lacks (a branch of a choice that was not drawn) is left out of argv; a
 * placeholder whose top-level parameter is missing is an error.
 * On success *argv_out is a new NULL-terminated vector freed with space_argv_free. */
int space_render_argv(const space_t *s, const cJSON *config, const char *trial_id,
                      const char *trial_dir, char ***argv_out, char *err, size_t errlen);
void space_argv_free(char **argv); /* NULL-safe */

/* Prints v in the shortest form that strtod reads back exactly ("0.1", "3", "1e-05").
 * Writes at most 32 bytes into buf and returns buf. */
char *space_format_number(double v, char buf[32]);

/* A JSON value as compact text with every number printed as space_format_number prints it
 * (cJSON_PrintUnformatted rounds to 15 digits), NaN and infinities as null. Every place
 * that prints a configuration (the store, TUNE_CONFIG, the cli) uses it, so each shows the
 * very double the trial's argv received. NULL when out of memory; the caller frees. */
char *space_json_print(const cJSON *v);
/* The same, laid out as cJSON_Print does (one object member a line, tab-indented). */
char *space_json_print_pretty(const cJSON *v);

/* Checks an experiment name ([A-Za-z0-9_.-]+, not "."/"..", not beginning with '-' (it
 * would read as an option), <= 100 chars) so it can
 * never escape the results directory. Returns 0 or SPACE_EINVAL with a message. */
int space_check_name(const char *name, char *err, size_t errlen);

/* Parameter i's value v in the parameter's own scale, mapped to [0, 1]: the range
 * [low, high] linearly (logarithmically for log-scaled kinds; randint's high is
 * exclusive), mean +- 3 sd for randn, the value's position for choice and grid_search
 * (index / (n - 1)), 0.5 for a constant. Values outside the range are clamped. Returns 0
 * with *u set, or SPACE_EINVAL when v is not a value of the parameter (a string for a
 * number, a value no choice lists). Searchers model in this scale; the simulator measures
 * distances in it. */
int space_param_unit(const space_t *s, size_t i, const cJSON *v, double *u);
/* How far apart two values of parameter i are, in [0, 1]: |unit(a) - unit(b)| for
 * numeric kinds, 0 or 1 for choice, grid_search and constants (another value is another
 * category); NaN when either is not a value of the parameter. */
double space_param_distance(const space_t *s, size_t i, const cJSON *a, const cJSON *b);

/* ---- Population Based Training's explore step (search/explore.c) ------------------------
 * A new configuration from a donor's: each mutated parameter ("hyperparam_mutations", or
 * every non-grid, non-constant top-level parameter when there is none) is, with
 * probability resample_probability, drawn afresh from its distribution; otherwise a
 * number is multiplied by one of the factors (chosen uniformly) and clipped into its
 * bounds (log-scaled ones too), integers and multiples of q are rounded and must change
 * (one step in the factor's direction when rounding gives the old value back), and a
 * choice moves to a neighbouring value (Ray Tune's explore(), pbt.py). Every draw comes
 * from `draw`, so the caller's one random stream decides everything. */
typedef struct space_explore_opts {
    double resample_probability;
    const double *factors;
    size_t nfactors;
    uint64_t (*draw)(void *ud); /* 64 random bits a call */
    void *ud;
} space_explore_opts_t;
/* On success *out is a new configuration (a copy of config with the mutations) and, when
 * what is not NULL, *what a new JSON object saying what happened to each mutated
 * parameter ("*1.2", "resample", "up", "down", "+1", "-1"); the caller cJSON_Delete()s
 * both. */
int space_explore(const space_t *s, const cJSON *config, const space_explore_opts_t *o, cJSON **out,
                  cJSON **what, char *err, size_t errlen);

/* ---- the searcher: random or TPE (search/tpe.c) ---------------------------------------
 * Chooses each trial's configuration. Random is space_sample itself. TPE fits Optuna-style
 * "good" and "bad" densities on the results ASHA recorded at one rung, as asynchronous
 * BOHB does: the highest rung holding at least max(10, 2(d+1)) results (d = parameters
 * it models); good = the best gamma of that rung, bad = the rest of it plus the trials
 * that ended below it plus the running ones (a constant liar). Until such a rung exists
 * suggestions are space_sample's. Deterministic: the same seed and the same calls in the
 * same order give the same suggestions; every trial draws from its own stream, derived
 * from (seed, trial_no). See docs/search.md for the rules and the presets' sources. */
typedef struct space_searcher space_searcher_t;
typedef struct space_search_opts {
    space_search_type_t type;
    space_tpe_preset_t preset; /* TPE only: whose defaults to follow */
    int mode_max;              /* 1: larger results are better (space_mode_t's "max") */
    uint64_t seed;             /* usually space_settings(s)->seed */
} space_search_opts_t;

/* A searcher over s, which must outlive it. On success *out is new (free it with
 * space_searcher_free); on failure *out is untouched and err says why. */
int space_searcher_new(const space_t *s, const space_search_opts_t *o, space_searcher_t **out,
                       char *err, size_t errlen);
void space_searcher_free(space_searcher_t *x); /* NULL-safe */
/* The scheduler's rung milestones (ASHA), strictly ascending and positive; copied. Call
 * before the first observation (SPACE_EINVAL otherwise, or for a bad list). Without
 * rungs (FIFO, median stopping) the observations are each trial's latest result. */
int space_searcher_set_rungs(space_searcher_t *x, const double *milestones, size_t n);
/* One result of trial_no at `time` (the scheduler's time_attr), in arrival order. Its value
 * at a rung is its first result with time >= the milestone, which is what ASHA records. A
 * NaN value counts as the worst. Returns 0, or SPACE_ENOMEM (the result is then lost). */
int space_searcher_observe(space_searcher_t *x, size_t trial_no, double time, double value);
/* trial_no has ended: finished, failed, or stopped early by the scheduler. Trials that
 * ended below the fitted rung count as bad; running ones are bad through the liar. */
void space_searcher_trial_end(space_searcher_t *x, size_t trial_no, int stopped_early);
/* Tells the searcher trial_no runs `config` chosen elsewhere (points_to_evaluate, or a
 * resume that reads configurations back from the store). Returns 0, SPACE_EINVAL when a
 * value does not belong to its parameter (err says which), or SPACE_ENOMEM. */
int space_searcher_add_trial(space_searcher_t *x, size_t trial_no, const cJSON *config, char *err,
                             size_t errlen);
/* trial_no's configuration: grid_search parameters from its grid point exactly as
 * space_sample does (index % n_grid_points), the rest from the searcher. `why` (may be
 * NULL) gets what it was based on, e.g. "TPE (optuna) at rung 9 from 31 observations"
 * or "random: model not ready (4 of 10 observations)". The trial then counts as running
 * until space_searcher_trial_end. On success *config is a new object the caller
 * cJSON_Delete()s; on failure it is untouched and err says why. */
int space_searcher_suggest(space_searcher_t *x, size_t trial_no, cJSON **config, char *why,
                           size_t whylen, char *err, size_t errlen);

#endif
