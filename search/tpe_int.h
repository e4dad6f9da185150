/* search internals of the TPE searcher (tpe.c, tpe_split.c, tpe_acquire.c): its random
 * stream, and the rules tests check directly; it includes the headers of the parts the
 * searcher is built from: the special functions (special_int.h), Optuna 3.1's univariate
 * Parzen estimator (parzen_int.h) and HpBandSter's (statsmodels') multivariate KDE
 * (kde_int.h). Not for: anything outside search/ and its tests (the public contract is
 * searcher.h). */
#ifndef TUNE_TPE_INT_H
#define TUNE_TPE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "search/kde_int.h"
#include "search/parzen_int.h"
#include "search/space_int.h"
#include "search/special_int.h"

/* ---- one random stream per (seed, trial) (sample.c) ---------------------------------
 * The shared xoshiro256** of space_int.h, keyed apart from sample.c's per-parameter
 * streams so the searcher's draws never repeat space_sample's. */
void space__rng_seed(space__rng_t *r, uint64_t seed, uint64_t trial_no);

/* ---- the searcher's rules, for tests (tpe_split.c; the hooks below, tpe.c) ----------- */
size_t space__optuna_gamma(size_t n);            /* default_gamma: min(ceil(0.1 n), 25) */
double space__optuna_weight(size_t n, size_t i); /* default_weights(n)[i], i in trial order */
/* The split a suggestion for trial `self` would be fitted on: roles[t] = 1 good, 2 bad,
 * 0 unused, for t < nroles; *rung = the rung index, -1 for latest results, -2 when no
 * model is ready. Returns 0 or SPACE_ENOMEM. */
struct space_searcher;
int space__searcher_split(struct space_searcher *x, size_t self, unsigned char *roles,
                          size_t nroles, int *rung);
/* on = 1: the optuna preset scores every candidate exactly instead of bounding first (the
 * same suggestions, slower: for the test that says so). */
void space__searcher_exact_scores(struct space_searcher *x, int on);
/* How many candidates the optuna preset has scored, and for how many it computed the bad
 * estimator's exact log density (the rest were ruled out by their bounds). */
void space__searcher_score_counts(const struct space_searcher *x, size_t *cands, size_t *exact);
/* The bad estimator of modelled parameter j as the last suggestion (optuna preset) left
 * it, kept for the next one; NULL for a categorical parameter or when none is kept. */
const space__parzen_t *space__searcher_bad_estimator(const struct space_searcher *x, size_t j);

#endif
