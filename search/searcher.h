/* search/searcher.h: the searcher, which chooses each trial's configuration, behind one
 * interface whatever the "search" type (random, TPE): the scheduler creates one, tells it
 * ASHA's rungs, feeds it results and trial ends in arrival order, and asks it for each
 * trial's configuration at launch. Not for: parsing (space.h), the settings' meaning
 * (settings.h), or how a searcher models results (search/searcher_int.h lists the ops a
 * searcher implements; search/tpe.c is TPE's). Ownership: a searcher is the caller's from
 * space_searcher_new to space_searcher_free and borrows its space, which must outlive it;
 * configurations it suggests are the caller's. */
#ifndef TUNE_SEARCHER_H
#define TUNE_SEARCHER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "search/settings.h"
#include "search/space.h"

/* ---- the searcher: random or TPE ------------------------------------------------------
 * Chooses each trial's configuration. Random is space_sample itself (search/random.c). TPE
 * (search/tpe.c) fits Optuna-style "good" and "bad" densities on the results ASHA recorded
 * at one rung, as asynchronous BOHB does: the highest rung holding at least
 * max(10, 2(d+1)) results (d = parameters it models); good = the best gamma of that rung,
 * bad = the rest of it plus the trials that ended below it plus the running ones (a
 * constant liar). Until such a rung exists suggestions are space_sample's. Deterministic:
 * the same seed and the same calls in the same order give the same suggestions; every
 * trial draws from its own stream, derived from (seed, trial_no). See docs/search.md for
 * the rules and the presets' sources. */
typedef struct space_searcher space_searcher_t;
typedef struct space_search_opts {
    space_search_type_t type;
    space_tpe_preset_t preset; /* TPE only: whose defaults to follow */
    int mode_max;              /* 1: larger results are better (space_mode_t's "max") */
    uint64_t seed;             /* usually space_settings(s)->seed */
    /* Several objectives or constraints (docs/multiobjective.md): nobjectives (0 or 1: one)
     * and whether the settings have constraints. With one objective and no constraints
     * results come through space_searcher_observe, else through space_searcher_observe_k;
     * TPE then splits as Optuna 3.1's MOTPE and constrained TPE do (docs/search.md). */
    size_t nobjectives;
    int constrained;
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
/* space.json's "search": {"pool"} (SPACE_TPE_POOL_* bits, settings.h; 0: the searcher's
 * default): how TPE chooses among a pool (space_searcher_choose), and its experimental
 * switches (docs/search.md, issue 29). Random search has none and ignores it. Call before
 * the first suggestion or choice. NULL-safe. */
void space_searcher_set_pool(space_searcher_t *x, int bits);
/* One result of trial_no at `time` (the scheduler's time_attr), in arrival order. Its value
 * at a rung is its first result with time >= the milestone, which is what ASHA records. A
 * NaN value counts as the worst. Returns 0, or SPACE_ENOMEM (the result is then lost). */
int space_searcher_observe(space_searcher_t *x, size_t trial_no, double time, double value);
/* The same for a searcher made with several objectives or constraints (o->nobjectives > 1 or
 * o->constrained; SPACE_EINVAL otherwise, and space_searcher_observe is then refused):
 * obj holds the result's o->nobjectives values to minimise as space_objectives gives them
 * (NaN for a missing one: the worst; none, and obj may be NULL, when o->nobjectives is 0:
 * constraints without a metric), violation what space_violation gives (0 feasible, > 0 or
 * +INFINITY infeasible; SPACE_EINVAL when NaN or negative). Returns 0, SPACE_EINVAL or
 * SPACE_ENOMEM (the result is then lost). */
int space_searcher_observe_k(space_searcher_t *x, size_t trial_no, double time, const double *obj,
                             double violation);
/* 1 when x takes results through space_searcher_observe_k (made with several objectives or
 * constraints), 0 when through space_searcher_observe (or x is NULL). */
int space_searcher_takes_points(const space_searcher_t *x);
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
/* trial_no's configuration chosen among n candidate configurations (the pool protocol of
 * `tune simulate --pool`, docs/simulate.md: the table's rows not used yet): *chosen gets
 * the index of the one the searcher takes, and the trial then counts as running with
 * cands[*chosen] (borrowed; each a full configuration of the space) until
 * space_searcher_trial_end, as after space_searcher_suggest. Random takes one uniformly,
 * TPE the one its acquisition scores best (docs/search.md); a searcher that implements no
 * choice of its own suggests as usual and takes the nearest candidate (the RMS of
 * space_param_distance). Deterministic: the same calls with the same candidates in the same
 * order choose the same. `why` as for suggest. 0, SPACE_EINVAL (n is 0, a candidate is
 * not a configuration of the space: err says which) or SPACE_ENOMEM. */
int space_searcher_choose(space_searcher_t *x, size_t trial_no, const cJSON *const *cands, size_t n,
                          size_t *chosen, char *why, size_t whylen, char *err, size_t errlen);

/* The name of the searcher the settings ask for, as the live table and `tune show` print
 * it: "random", "TPE (optuna)", "TPE (bohb)". */
const char *space_search_name(const space_settings_t *set);
/* 1 when the searcher the settings ask for chooses configurations from the results so far
 * (TPE), so that each trial's is chosen when it launches; 0 when its choices are
 * space_sample's (random), which can be drawn for every trial up front. */
int space_searcher_adaptive(const space_settings_t *set);

#endif
