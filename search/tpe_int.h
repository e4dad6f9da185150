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

/* ---- several objectives and constraints (tpe_motpe.c) -----------------------------------
 * Optuna 3.1's TPESampler (optuna/samplers/_tpe/sampler.py) with several objectives (MOTPE)
 * and with constraints_func, on n observations: k objectives each, row-major in obj, to
 * minimise (space_objectives' values); viol NULL (no constraints) or n totals (0 feasible);
 * ids n distinct numbers, ascending (the trials, Optuna's trial order). */
#define SPACE__MOTPE_EPS 1e-12 /* sampler.py's EPS */
/* _split_observation_pairs: good[i] = 1 for the ng (<= n) good observations, 0 for the
 * others. Feasible before infeasible (those by violation, then id); with k == 1 the
 * feasible by value (NaN the worst), then id; with k > 1 pareto_rank's fronts, whole while
 * they fit, and the rest chosen from the next one by space__motpe_hssp (*n_hssp says how
 * many; may be NULL). 0 or SPACE_ENOMEM. */
int space__motpe_split(size_t n, size_t k, const double *obj, const double *viol,
                       const int64_t *ids, size_t ng, unsigned char *good, size_t *n_hssp);
/* The reference point sampler.py takes from the worst point w of the m points that use[i]
 * marks (NULL: all) and whose objectives are all finite: max(1.1 w, 0.9 w) in each
 * objective, and EPS where that is 0. 0, or -1 when no point is used (ref untouched). */
int space__motpe_ref(size_t m, size_t k, const double *pts, const unsigned char *use, double *ref);
/* optuna/_hypervolume/hssp.py _solve_hssp: greedily, s times, the point whose addition
 * adds the most hypervolume (bounded by ref) to the points chosen so far, the first on
 * ties; chosen[0..s) gets their indices in the order chosen. s <= m. 0 or SPACE_ENOMEM. */
int space__motpe_hssp(size_t m, size_t k, const double *pts, size_t s, const double *ref,
                      size_t *chosen);
/* _calculate_weights_below_for_multi_objective over the n good observations: w[i] is EPS
 * for an infeasible one (or, here, one with a NaN objective: the worst), 1 when a single
 * one is feasible, else its hypervolume contribution among the feasible ones plus EPS,
 * divided by the largest, clipped to [0, 1]. 0 or SPACE_ENOMEM. */
int space__motpe_weights(size_t n, size_t k, const double *obj, const double *viol, double *w);

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
/* With several objectives, the weight the last split gave good trial t's observation in
 * the good estimators (space__motpe_weights); NAN when it was not weighted so (one
 * objective, or t not good). */
double space__searcher_good_weight(const struct space_searcher *x, size_t t);

#endif
