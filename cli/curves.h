/* cli: one experiment read back for looking at after the run: its trials, each trial's
 * learning curve (the metric against the scheduler's time_attr), its scheduler decisions,
 * and the rung milestones. Shared by `tune show`, `tune plot` (show.c) and `tune report`
 * (report.c). Not for: deciding anything, or printing; internal to the cli. */
#ifndef TUNE_CLI_CURVES_H
#define TUNE_CLI_CURVES_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* cli_exp_pick's answer when the database holds several experiments and none was named. */
#define CLI_EXP_AMBIGUOUS (-100)

/* One scheduler decision (a row of `decisions`); NaN / -1 where the column is NULL. */
typedef struct cli_decision {
    double iteration, time_value, milestone, value, cutoff;
    int bracket, rung;
    char action[16]; /* "continue", "stop", "complete" */
    char *reason;    /* may be NULL */
} cli_decision_t;

/* One trial and its curve (the results of its current attempt, in arrival order). */
typedef struct cli_trial {
    int64_t id, trial_no;
    char *name, *status, *config, *slice, *error, *trial_dir, *stderr_tail; /* NULL if none */
    int early_stopped, attempt;
    int has_exit_code, exit_code, exit_signal; /* exit_signal 0 when none */
    double started_at, ended_at;               /* NaN when not yet */
    size_t n;                                  /* results of the current attempt */
    double *x;   /* the time_attr's value (the iteration where it is missing) */
    double *y;   /* the metric; NaN where the result did not have it as a number */
    double last; /* y of the last result (NaN if it had none), as `tune best` reads it */
    double best; /* min or max of y by the experiment's mode, NaN if none */
    double last_x, best_x;
    size_t ndec; /* decisions, only when loaded with CLI_EXP_DECISIONS */
    cli_decision_t *dec;
} cli_trial_t;

/* One experiment. Strings are NULL where the column is NULL. */
typedef struct cli_exp {
    int64_t id;
    char *name, *status, *scheduler, *exp_metric, *settings_json, *space_json, *results_dir;
    char *metric;     /* the metric of the curves: exp_metric unless another one was asked for */
    int mode_max;     /* the order of `metric`: the experiment's mode for its own metric;
                         for another one --mode, else guessed from the name */
    int exp_mode_max; /* the experiment's mode (its metric's; decisions and cutoffs) */
    int own_metric;   /* metric is the experiment's: the cutoffs are on its scale */
    int mode_guessed; /* mode_max was guessed from another metric's name */
    int64_t num_trials;
    double created_at, ended_at; /* NaN when not set */
    char time_attr[64];          /* from settings_json; "training_iteration" by default */
    double max_t;                /* ASHA's max_t, NaN for other schedulers */
    double *milestones;          /* the ASHA rung milestones below max_t, ascending */
    size_t nmilestones;
    cli_trial_t *trials; /* in trial_no order */
    size_t ntrials;
} cli_exp_t;

/* Which experiment a command means: `given` when not NULL (STORE_NOTFOUND with a message
 * naming the database if there is none of that name), else the only one in the database
 * (STORE_NOTFOUND when it is empty, CLI_EXP_AMBIGUOUS listing the names when there are
 * several). On success *out is a new string the caller frees. */
int cli_exp_pick(store_t *st, const char *db, const char *given, char **out, char *err,
                 size_t errlen);

#define CLI_EXP_DECISIONS 1 /* cli_exp_load flag: also read every trial's decisions */
#define CLI_EXP_MODE_MIN 2  /* flags: order the metric low-is-better (--mode min) */
#define CLI_EXP_MODE_MAX 4  /* flags: order the metric high-is-better (--mode max) */

/* Reads --mode's value into CLI_EXP_MODE_MIN/MAX; -1 after printing an error
 * (output.c, as cli_mode_note: this file's loader prints nothing). */
int cli_mode_arg(const char *cmd, const char *v, unsigned *flags);
/* Says on stderr, when the mode of the shown metric was guessed, what was guessed. */
void cli_mode_note(const struct cli_exp *e);

/* Reads experiment `name` with its curves of `metric` (NULL: the experiment's metric; any
 * other result key is read from the results' JSON). `trial` (NULL: all) keeps only the
 * trial with that number ("7") or name ("trial_00007"): STORE_NOTFOUND with a message
 * when there is none. A `metric` that no result of the experiment has as a number is
 * STORE_NOTFOUND too, naming the metrics there are (no results at all is not an error).
 * On success *out is new and freed with cli_exp_free. */
int cli_exp_load(store_t *st, const char *name, const char *metric, const char *trial,
                 unsigned flags, cli_exp_t **out, char *err, size_t errlen);
void cli_exp_free(cli_exp_t *e); /* NULL-safe */

/* True when parameter `name` of the experiment has a log-scale distribution (loguniform,
 * qloguniform, lograndint, qlograndint), as settings_json's "params" say. */
int cli_exp_param_is_log(const cli_exp_t *e, const char *name);

/* The better of two metric values by the experiment's mode (NaN loses). */
int cli_exp_better(const cli_exp_t *e, double a, double b);

/* Index of the best trial by its last value (Ray Tune's default scope, as `tune best`),
 * ties to the lower trial number; -1 when no trial has a value. */
long cli_exp_best_trial(const cli_exp_t *e);

/* ---- the y range of a chart of curves ------------------------------------------- */
/* --ylim: auto (the bulk of the curves, cli_yrange_fit), full (every finite value) or a
 * range LO:HI set by hand. */
enum { CLI_YLIM_AUTO, CLI_YLIM_FULL, CLI_YLIM_SET };
typedef struct cli_ylim {
    int kind;
    double lo, hi; /* CLI_YLIM_SET */
} cli_ylim_t;
/* Reads --ylim's value ("auto", "full", "LO:HI" with finite LO < HI); -1 after printing
 * an error that names `cmd` (as cli_mode_arg). */
int cli_ylim_arg(const char *cmd, const char *v, cli_ylim_t *out);

#define CLI_YRANGE_LIST 8 /* trials named per side, the farthest first */
/* Trials with points on one side outside the range: how many, and the farthest ones. */
typedef struct cli_yout {
    size_t n;
    size_t trial[CLI_YRANGE_LIST]; /* indexes into e->trials */
    double v[CLI_YRANGE_LIST];     /* each one's farthest value (its max above, min below) */
} cli_yout_t;

/* The y range a chart draws: lo..hi are values (the axis adds its own margin), NaN when
 * no point can be drawn; points outside are drawn as markers at the edge and named. */
typedef struct cli_yrange {
    double lo, hi;
    int log; /* a log10 axis */
    cli_yout_t above, below;
} cli_yrange_t;

/* Chooses the y range of the curves of trials sel[0..nsel) of e. want_log: 1 log (when a
 * value is positive), 0 linear, -1 auto (log when the kept values are positive and span
 * a factor of 10 or more). With CLI_YLIM_AUTO the range is the bulk's: the middle half of
 * every point (each trial weighing the same, so that one long diverged curve counts no
 * more than one short one) joined with the middle half of the curves' first values (so
 * that where curves start is never cut), extended by three times its width (Tukey's "far
 * out" fences); the extent of the points within is the range. A point beyond (a trial
 * gone to 1e6, or inf) is outside the chart. CLI_YLIM_FULL keeps every finite value;
 * CLI_YLIM_SET the given range. +inf is always above, -inf below; NaN has no place. */
void cli_yrange_fit(const cli_exp_t *e, const size_t *sel, size_t nsel, const cli_ylim_t *lim,
                    int want_log, cli_yrange_t *out);
/* "2 trials go above the chart: trial_00003 (max 1.2e+06), trial_00007 (max inf)" for
 * the side `above` (1) or below (0) into out; "" when no trial is outside on that side. */
void cli_yrange_note(const cli_exp_t *e, const cli_yrange_t *r, int above, char *out, size_t n);

#endif
