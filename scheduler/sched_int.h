/* scheduler internals shared by policy.c, asha.c, median.c and pbt.c: the per-policy entry
 * points that policy.c dispatches to, and a small int64 -> index hash map that gives
 * every policy O(1) trial lookup. Not for use outside scheduler/ (sched.h is the API). */
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
/* Each policy validates its options (filling err) and owns its state; policy.c holds the
 * table of operations every policy fills (as executors fill sched_exec_ops_t), so adding
 * a policy is one table entry. Semantics are described in asha.c and median.c. */
typedef struct sched__asha sched__asha_t;
int sched__asha_new(const sched_opts_t *o, sched__asha_t **out, char *err, size_t errlen);
void sched__asha_free(sched__asha_t *a);
int sched__asha_add(sched__asha_t *a, int64_t trial);
void sched__asha_result(sched__asha_t *a, int64_t trial, double time, double value,
                        sched_decision_t *out);
void sched__asha_complete(sched__asha_t *a, int64_t trial);
size_t sched__asha_rungs(const sched__asha_t *a, sched_rung_info_t *out, size_t max);
long sched__asha_choose_next(sched__asha_t *a, const int64_t *paused, size_t n, size_t pending,
                             sched_decision_t *why);

typedef struct sched__median sched__median_t;
int sched__median_new(const sched_opts_t *o, sched__median_t **out, char *err, size_t errlen);
void sched__median_free(sched__median_t *m);
int sched__median_add(sched__median_t *m, int64_t trial);
void sched__median_result(sched__median_t *m, int64_t trial, double time, double value,
                          sched_decision_t *out);
void sched__median_complete(sched__median_t *m, int64_t trial);

typedef struct sched__pbt sched__pbt_t;
int sched__pbt_new(const sched_opts_t *o, sched__pbt_t **out, char *err, size_t errlen);
void sched__pbt_free(sched__pbt_t *p);
int sched__pbt_add(sched__pbt_t *p, int64_t trial);
void sched__pbt_result(sched__pbt_t *p, int64_t trial, double time, double value,
                       sched_decision_t *out);
void sched__pbt_complete(sched__pbt_t *p, int64_t trial);
long sched__pbt_choose_next(sched__pbt_t *p, const int64_t *paused, size_t n, size_t pending,
                            sched_decision_t *why);
int sched__pbt_explore(sched__pbt_t *p, int64_t trial, int64_t donor, const cJSON *donor_config,
                       cJSON **out, cJSON **what, char *err, size_t errlen);

/* Fills *out as "continue, nothing judged" for value: the common starting point. */
void sched__decision_none(sched_decision_t *out, double value);

#endif
