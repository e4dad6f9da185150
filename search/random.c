/* search/random.c: the random searcher, "search": {"type": "random"} (the default): every
 * configuration is space_sample's, a pure function of (seed, trial index), whatever the
 * results. Not for: drawing itself (sample.c) or points_to_evaluate (the scheduler puts
 * them over a suggestion and tells the searcher through add_trial). */
#include <stdio.h>
#include <stdlib.h>

#include "search/searcher_int.h"

/* Random search remembers nothing but the space it draws from. */
typedef struct random_searcher {
    const space_t *s;
    uint64_t seed; /* the pool protocol's draws */
} random_t;

static int random_create(const space_t *s, const space_search_opts_t *o, void **state, char *err,
                         size_t errlen)
{
    random_t *r = malloc(sizeof *r);
    if (!r) {
        if (err && errlen) snprintf(err, errlen, "out of memory");
        return SPACE_ENOMEM;
    }
    r->s = s;
    r->seed = o->seed;
    *state = r;
    return SPACE_OK;
}

static void random_free(void *state)
{
    free(state);
}

static int random_set_rungs(void *state, const double *milestones, size_t n)
{
    (void)state, (void)milestones, (void)n;
    return SPACE_OK;
}

static int random_observe(void *state, size_t trial_no, double time, double value)
{
    (void)state, (void)trial_no, (void)time, (void)value;
    return SPACE_OK;
}

static int random_observe_k(void *state, size_t trial_no, double time, const double *obj,
                            double violation)
{
    (void)state, (void)trial_no, (void)time, (void)obj, (void)violation;
    return SPACE_OK;
}

static void random_trial_end(void *state, size_t trial_no, int stopped_early)
{
    (void)state, (void)trial_no, (void)stopped_early;
}

/* Nothing to learn, but a configuration read back from the store must still fit the space
 * (a resume refuses one that does not, as it does with TPE). */
static int random_add_trial(void *state, size_t trial_no, const cJSON *config, char *err,
                            size_t errlen)
{
    const random_t *r = state;
    (void)trial_no;
    return space__searcher_check_config(r->s, config, err, errlen);
}

static int random_suggest(void *state, size_t trial_no, cJSON **config, char *why, size_t whylen,
                          char *err, size_t errlen)
{
    const random_t *r = state;
    int rc = space_sample(r->s, trial_no, config, err, errlen);
    if (rc == SPACE_OK && why && whylen) snprintf(why, whylen, "random");
    return rc;
}

/* The pool protocol: a candidate drawn uniformly, from the seed and the trial number only. */
static int random_choose(void *state, size_t trial_no, const cJSON *const *cands, size_t n,
                         size_t *chosen, char *why, size_t whylen, char *err, size_t errlen)
{
    const random_t *r = state;
    (void)cands, (void)err, (void)errlen;
    *chosen = space__searcher_pick_uniform(r->seed, trial_no, n);
    if (why && whylen) snprintf(why, whylen, "random: one of %zu unused in the pool", n);
    return SPACE_OK;
}

const space__searcher_ops_t space__searcher_random = {
    .name = "random",
    .adaptive = 0,
    .label = NULL,
    .create = random_create,
    .free = random_free,
    .set_rungs = random_set_rungs,
    .observe = random_observe,
    .observe_k = random_observe_k,
    .trial_end = random_trial_end,
    .add_trial = random_add_trial,
    .suggest = random_suggest,
    .choose = random_choose,
};
