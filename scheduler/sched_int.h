/* scheduler internals shared by policy.c and the policies (asha.c, median.c, pbt.c,
 * hyperband.c): the table of operations each policy exports and policy.c dispatches to,
 * and a small int64 -> index hash map that gives every policy O(1) trial lookup. Not for
 * use outside scheduler/ (sched.h is the API). */
#ifndef TUNE_SCHED_INT_H
#define TUNE_SCHED_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "scheduler/sched.h"

/* ---- trial id -> dense index map ------------------------------------------------- */
/* Open addressing with linear probing; capacity a power of two kept at most half full,
 * so a lookup touches one or two slots. Trial ids are usually 0..N-1, which a
 * multiplicative (Fibonacci) hash spreads evenly. vals hold index + 1; 0 = empty. */
typedef struct sched__idmap {
    int64_t *keys;
    uint32_t *vals;
    size_t cap; /* 0 or a power of two */
    size_t n;
} sched__idmap_t;

#define SCHED__NOIDX UINT32_MAX

static inline size_t sched__idmap_slot(int64_t key, size_t cap)
{
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* The index stored for key, or SCHED__NOIDX. */
static inline uint32_t sched__idmap_get(const sched__idmap_t *m, int64_t key)
{
    if (m->cap == 0) return SCHED__NOIDX;
    for (size_t i = sched__idmap_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->vals[i] == 0) return SCHED__NOIDX;
        if (m->keys[i] == key) return m->vals[i] - 1;
    }
}

/* Inserts key -> idx (key must not be present). 0 or SCHED_ENOMEM. */
int sched__idmap_put(sched__idmap_t *m, int64_t key, uint32_t idx);
/* Removes key (if present), so that a map of the live keys stays as big as they are. */
void sched__idmap_del(sched__idmap_t *m, int64_t key);
void sched__idmap_free(sched__idmap_t *m);

/* ---- splitmix64: the deterministic RNG behind bracket assignment ------------------ */
/* Steele et al., "Fast splittable pseudorandom number generators" (2014). Chosen for
 * being four lines that tests/ref/asha_ref.py can repeat bit for bit. */
static inline uint64_t sched__splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double sched__uniform(uint64_t *state)
{
    return (double)(sched__splitmix64(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- policies --------------------------------------------------------------------- */
/* What every policy provides, as executors fill sched_exec_ops_t: each policy file
 * exports one table (sched__asha_ops, ...), policy.c lists them by type and dispatches.
 * `self` is the policy's own state; a NULL entry means "nothing to do" (FIFO keeps no
 * state at all), and policy.c says what it does instead. Adding a policy is a file with
 * its table and one row in policy.c. */
typedef struct sched__policy_ops {
    const char *name; /* as space_sched_name spells it */
    /* Checks the options (err says which is wrong) and builds the state; *caps gets what
     * the policy may ask of the loop (SCHED_CAP_*), which may depend on the options. */
    int (*create)(const sched_opts_t *o, void **self, unsigned *caps, char *err, size_t errlen);
    void (*destroy)(void *self);
    int (*add)(void *self, int64_t trial);
    void (*result)(void *self, int64_t trial, double time, double value, sched_decision_t *out);
    /* sched_on_result_point, for a policy created with ranked options (sched__ranked);
     * NULL: the policy judges one metric only, and policy.c refuses several objectives. */
    void (*result_point)(void *self, int64_t trial, double time, const sched_point_t *pt,
                         sched_decision_t *out);
    void (*complete)(void *self, int64_t trial);
    size_t (*rungs)(const void *self, sched_rung_info_t *out, size_t max);
    /* Which paused trial a free slice goes to (sched_policy_choose_next); NULL: the
     * earliest paused one once no new trial is left. */
    long (*choose_next)(void *self, const int64_t *paused, size_t n, size_t pending,
                        sched_decision_t *why);
    /* sched_policy_drop; NULL: the policy never ends a paused trial */
    long (*drop)(void *self, const int64_t *paused, size_t n, sched_decision_t *why);
    /* sched_policy_explore; NULL: the policy never asks for SCHED_EXPLOIT */
    int (*explore)(void *self, int64_t trial, int64_t donor, const cJSON *donor_config, cJSON **out,
                   cJSON **what, char *err, size_t errlen);
    /* The reason of a judged decision d (sched_policy_word; the action word is common). */
    void (*word)(const void *self, const sched_decision_t *d, const char *trial,
                 const char *time_attr, double time, char *buf, size_t n);
    /* sched_policy_word_resume; NULL: sched__word_resume's plain "resumed". */
    const char *(*word_resume)(const void *self, const sched_decision_t *why, const char *time_attr,
                               int attempt, const char *from, char *buf, size_t n);
} sched__policy_ops_t;

extern const sched__policy_ops_t sched__fifo_ops;
extern const sched__policy_ops_t sched__asha_ops;
extern const sched__policy_ops_t sched__median_ops;
extern const sched__policy_ops_t sched__pbt_ops;
extern const sched__policy_ops_t sched__hyperband_ops;

/* Words every policy may use: "reached max_t (<time_attr> >= <max_t>)" for a COMPLETE at
 * max_t, and the plain resume of a paused trial nothing ranked ("resumed (nothing new
 * pending): ..."), which returns "resume". */
void sched__word_max_t(const char *time_attr, double max_t, char *buf, size_t n);
const char *sched__word_resume(int attempt, const char *from, char *buf, size_t n);

/* Fills *out as "continue, nothing judged" for value: the common starting point. */
void sched__decision_none(sched_decision_t *out, double value);

/* Ranked rungs (several objectives or constraints): whether options ask for them. */
static inline int sched__ranked(const sched_opts_t *o)
{
    return o->nobjectives > 1 || o->constrained;
}

/* Ranks n points (k objectives each, row-major; violation and ids n each) with pareto_rank
 * into order (best first) and level: 0, or SCHED_ENOMEM. The one call of the pareto module
 * in the policies, so that they agree on the rule. */
int sched__rank(size_t n, size_t k, const double *obj, const double *violation, const int64_t *ids,
                size_t *order, int *level);
/* The words of a ranked standing: "7th of 12 by Pareto rank (front 3)", or "(infeasible:
 * violation 2.5)", "(a NaN objective)", from d's place, among, front and violation. */
void sched__word_place(const sched_decision_t *d, char *buf, size_t n);

#endif
