/* search/explore.h: Population Based Training's explore step, a mutated copy of a donor's
 * configuration (search/explore.c). Not for: when to exploit or whom to copy (the pbt
 * policy in scheduler/), or sampling afresh (space.h). Ownership: what it returns is new
 * and the caller's; the space must outlive the call. */
#ifndef TUNE_EXPLORE_H
#define TUNE_EXPLORE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "search/space.h"

/* A new configuration from a donor's: each mutated parameter ("hyperparam_mutations", or
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

#endif
