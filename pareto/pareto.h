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
 * violation: n totals (0 feasible, > 0 infeasible, +INFINITY or NaN unknown, read as
 * +INFINITY), or NULL when every point is feasible. ids: n distinct numbers (trial ids) that
 * break the last ties, or NULL for the index. A point with a NaN (or infinite) objective
 * ranks after every feasible point without one (then by id); infeasible points rank after
 * all feasible ones, by violation, then by id (their objectives are not looked at).
 *
 * Inside a front the order is MO-ASHA's epsilon-net (docs/multiobjective.md): first the
 * point best in the first objective (ties: the next objectives, then id), then each time
 * the point farthest from all those already taken, every objective scaled by its range over
 * the front; equal distances go to the smaller id. So any prefix of a front is spread along
 * it, the order does not change when an objective is multiplied by a positive constant, and
 * with k == 1 the order is the ascending order of the values, ties by id.
 *
 * pareto_rank fills order[0..n) with the indices of the points best first, and, when level
 * is not NULL, level[i] with point i's front: 0 for the feasible non-dominated points (the
 * Pareto front), 1 for the next front, ...; points with a NaN objective and infeasible points
 * get levels after every front of feasible finite points, each its own level in order.
 * Returns PARETO_OK, PARETO_EINVAL (k == 0, n > 0 with obj or order NULL) or PARETO_ENOMEM
 * with err filled (err may be NULL); order and level are untouched on error. Scratch memory
 * (about (6 + k) * 8 bytes a point) is malloc'd and freed inside. Deterministic: the same
 * points with the same ids give the same order in any input order, on every machine.
 * Cost: O(n^2 k) at worst (n log n + the comparisons between fronts in practice). */
int pareto_rank(size_t n, size_t k, const double *obj, const double *violation, const int64_t *ids,
                size_t *order, int *level, char *err, size_t errlen);

/* The hypervolume dominated by the points (minimisation) and bounded by ref (k finite
 * values), counting only points with finite objectives that are strictly better than ref in
 * every objective and, when violation is not NULL, feasible (violation == 0). 0 when there is
 * none. NaN when k == 0, ref or obj (n > 0) is NULL, ref is not finite, or scratch memory
 * (malloc'd and freed inside) cannot be had. Exact for any k: a sweep for k == 2 (O(n log
 * n)) and k == 3 (O(n log n) plus array moves, O(n^2) at worst); WFG (While et al. 2012)
 * slicing down to the 3-D sweep for k >= 4 (exponential in k at worst). */
double pareto_hypervolume(size_t n, size_t k, const double *obj, const double *violation,
                          const double *ref);

/* The reference point tune uses when the user gives none (docs/multiobjective.md): for each
 * objective, the worst (largest) finite value over the n points, feasible or not, plus 10% of
 * that objective's range over them (10% of |worst| when the range is 0, 1 when worst is 0
 * too). Compute it once over all trials' last results so that the hypervolume over time is
 * measured against one fixed point. Fills ref[0..k); PARETO_EINVAL with err filled when an
 * objective has no finite value (ref untouched from that objective on). */
int pareto_reference(size_t n, size_t k, const double *obj, double *ref, char *err, size_t errlen);

/* 1 when a dominates b (no worse in every one of k objectives, better in at least one); NaN
 * in a or b: 0. */
int pareto_dominates(size_t k, const double *a, const double *b);

#endif
