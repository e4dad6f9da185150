/* pareto: ranking several objectives, the one rule every part of tune uses: feasible points
 * before infeasible ones (those by total constraint violation, as Optuna's constrained
 * NSGA-II), then non-dominated sorting, ties inside a front broken by a deterministic rule
 * (docs/multiobjective.md says which and why); and the hypervolume of a front. Not for:
 * reading results (search/settings.h: space_objectives, space_violation turn a result into
 * the numbers here) or deciding what to stop (scheduler/ applies the order at a rung).
 * Pure functions over caller-owned arrays; nothing here allocates what the caller frees. */
#ifndef TUNE_PARETO_H
#define TUNE_PARETO_H

#include <stddef.h>
#include <stdint.h>

#define PARETO_OK 0
#define PARETO_EINVAL (-1)
#define PARETO_ENOMEM (-2)

/* n points of k objectives each, row-major in obj (point i is obj[i*k .. i*k+k)), every
 * objective to be minimised (space_objectives has already negated the "max" ones).
 * violation: n totals (0 feasible, > 0 infeasible, +INFINITY unknown), or NULL when every
 * point is feasible. ids: n distinct numbers (trial ids) that break the last ties, or NULL
 * for the index. A point with a NaN objective ranks after every feasible point without one
 * (then by id); infeasible points rank after all feasible ones, by violation, then by id.
 *
 * pareto_rank fills order[0..n) with the indices of the points best first, and, when level
 * is not NULL, level[i] with point i's front: 0 for the feasible non-dominated points (the
 * Pareto front), 1 for the next front, ...; points with a NaN objective and infeasible points
 * get levels after every front of feasible finite points, each its own level in order.
 * Returns PARETO_OK, PARETO_EINVAL (k == 0, n > 0 with obj or order NULL) or PARETO_ENOMEM
 * with err filled. Deterministic: the same input gives the same order on every machine. */
int pareto_rank(size_t n, size_t k, const double *obj, const double *violation, const int64_t *ids,
                size_t *order, int *level, char *err, size_t errlen);

/* The hypervolume dominated by the points (minimisation) and bounded by ref (k values),
 * counting only points with finite objectives that are strictly better than ref in every
 * objective and, when violation is not NULL, feasible (violation == 0). 0 when there is
 * none. Exact for any k (k <= 3 in O(n log n) / O(n^2); above, exact but slower). */
double pareto_hypervolume(size_t n, size_t k, const double *obj, const double *violation,
                          const double *ref);

/* 1 when a dominates b (no worse in every one of k objectives, better in at least one); NaN
 * in a or b: 0. */
int pareto_dominates(size_t k, const double *a, const double *b);

#endif
