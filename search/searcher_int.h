/* search internals of the searchers: the ops table each searcher fills in and
 * search/searcher.c dispatches space_searcher_* through, and the modelled parameters (dim.c:
 * the scale a searcher that learns from results works in). Not for: anything outside search/
 * and its tests (the public contract is searcher.h); names here use the space__searcher_
 * prefix. Adding a searcher: its .c file defining one space__searcher_ops_t, a row in
 * searcher.c's table, an enum constant in settings.h, and its keys in settings.c. */
#ifndef TUNE_SEARCHER_INT_H
#define TUNE_SEARCHER_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "search/searcher.h"
#include "search/space_int.h"

/* What a searcher implements. searcher.c checks the arguments the contract in searcher.h
 * states (NULL handles, a configuration that is not an object, rungs that are not
 * ascending or come after a result) before calling an op, so ops see only valid calls.
 * Each op's state is what create() returned; free() must take a NULL one. */
typedef struct space__searcher_ops {
    const char *name; /* what "search": {"type"} says: "random", "tpe" */
    /* 1: chooses from the results so far, so each configuration is chosen at launch
     * (space_searcher_adaptive); 0: its choices are space_sample's */
    int adaptive;
    /* what the live table prints for these settings ("TPE (optuna)"); NULL: name */
    const char *(*label)(const space_settings_t *set);
    /* On success *state is the searcher's (freed with free()); on failure err says why. */
    int (*create)(const space_t *s, const space_search_opts_t *o, void **state, char *err,
                  size_t errlen);
    void (*free)(void *state);
    int (*set_rungs)(void *state, const double *milestones, size_t n);
    /* space_searcher_set_pool; NULL: the searcher has no such switches */
    void (*set_pool)(void *state, int bits);
    int (*observe)(void *state, size_t trial_no, double time, double value);
    /* space_searcher_observe_k: obj holds nobjectives values (as created), violation >= 0 */
    int (*observe_k)(void *state, size_t trial_no, double time, const double *obj,
                     double violation);
    void (*trial_end)(void *state, size_t trial_no, int stopped_early);
    int (*add_trial)(void *state, size_t trial_no, const cJSON *config, char *err, size_t errlen);
    int (*suggest)(void *state, size_t trial_no, cJSON **config, char *why, size_t whylen,
                   char *err, size_t errlen);
    /* space_searcher_choose: n >= 1 candidates, each checked by space__searcher_check_config.
     * NULL: searcher.c suggests and takes the nearest candidate (then add_trial with it),
     * so a new searcher needs only suggest and add_trial to take part in the pool protocol. */
    int (*choose)(void *state, size_t trial_no, const cJSON *const *cands, size_t n, size_t *chosen,
                  char *why, size_t whylen, char *err, size_t errlen);
} space__searcher_ops_t;

/* The searchers (random.c, tpe.c), listed in searcher.c's table by space_search_type_t. */
extern const space__searcher_ops_t space__searcher_random;
extern const space__searcher_ops_t space__searcher_tpe;

/* A searcher handle: the ops of its type and their state. */
struct space_searcher {
    const space__searcher_ops_t *ops;
    void *state;
    const space_t *space; /* borrowed: the default choice measures distances in it */
    int observed;         /* set once a result arrived: rungs can no longer change */
    int k_path;           /* results come through observe_k (several objectives, constraints) */
    size_t nobjectives;   /* as created: 0 when the settings have no "metric" */
};

/* The ops of search type t, or NULL for a value outside the table. */
const space__searcher_ops_t *space__searcher_ops(space_search_type_t t);
/* The type whose ops are named name ("random", "tpe"), or -1. */
int space__searcher_find(const char *name);
/* The searchers' names in table order, for did-you-mean: at most cap of them; returns
 * how many there are. */
size_t space__searcher_names(const char **names, size_t cap);
/* The names as a message lists them: `"random" or "tpe"` (quote = 1) or `random or tpe`;
 * with more, `a, b or c`. Writes into buf and returns it. */
const char *space__searcher_list(char *buf, size_t len, int quote);

/* The candidate random search takes for trial_no among n (n >= 1): uniform, from a stream
 * of its own keyed by (seed, trial_no), so that a pool replayed with random search is a
 * uniform draw without replacement, whatever the results. TPE takes the same one while its
 * model is not ready, as its suggestions are space_sample's then (searcher.c). */
size_t space__searcher_pick_uniform(uint64_t seed, size_t trial_no, size_t n);
/* The candidate nearest want, as a table answers a configuration (docs/simulate.md): the
 * RMS of space_param_distance over the parameters that are not constants, the first on
 * ties (dim.c). */
size_t space__searcher_nearest(const space_t *s, const cJSON *want, const cJSON *const *cands,
                               size_t n);

/* ---- the modelled parameters (dim.c) ----------------------------------------------------
 * One parameter a model learns from, in the scale Optuna models its counterpart in: log for
 * log kinds, a step q for stepped ones (the density is then a mass per cell), categories by
 * index. [low, high] are Optuna's "parzen bounds" (a half step or half unit beyond the
 * extreme values for stepped and integer kinds). Constants, grid_search, randn and qrandn
 * (no bounded Optuna counterpart) and anything with a single value are not modelled. */
typedef struct space__searcher_dim {
    size_t param;
    space_pkind_t kind;
    size_t ncat;        /* choice: number of values */
    double low, high;   /* parzen bounds, internal scale */
    double q;           /* > 0: stepped (mass over [x - q/2, x + q/2]) */
    double vlow, vhigh; /* smallest and largest value (stepped kinds: internal scale) */
} space__searcher_dim_t;

/* Fills d for top-level parameter p (node P); returns 0 when it is not modelled. */
int space__searcher_dim_of(const space_param_t *P, size_t p, space__searcher_dim_t *d);
int space__searcher_dim_is_log(const space__searcher_dim_t *d);
/* An internal-scale draw turned into one of the parameter's values, rounded as Optuna's
 * _transform_from_uniform does (np.round: half to even, which nearbyint is too). */
double space__searcher_dim_value(const space_t *s, const space__searcher_dim_t *d, double u);
/* A value's position in the internal scale (a choice's index), or NAN if it is not one. */
double space__searcher_dim_internal(const space_t *s, const space__searcher_dim_t *d,
                                    const cJSON *v);
/* Whether config gives every modelled parameter one of its values: 0, or SPACE_EINVAL with
 * "configuration: \"lr\" is missing or not one of its values" in err. What a searcher's
 * add_trial refuses, so that a configuration read back from the store fits the space
 * whichever searcher reads it. */
int space__searcher_check_config(const space_t *s, const cJSON *config, char *err, size_t errlen);

#endif
