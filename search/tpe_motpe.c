/* search/tpe_motpe.c: the TPE searcher's good/bad split with several objectives or with
 * constraints, as Optuna 3.1's TPESampler makes it (optuna/samplers/_tpe/sampler.py:
 * _split_observation_pairs with violations and its multi-objective branch, _solve_hssp in
 * optuna/_hypervolume/hssp.py, _calculate_weights_below_for_multi_objective), on the
 * observations at one rung. Not for: choosing the rung or the one-objective split
 * (tpe_split.c), ranking or volumes (pareto/: pareto_rank and pareto_hypervolume are the
 * one copy of non-dominated sorting), or fitting (tpe_acquire.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pareto/pareto.h"
#include "search/tpe_int.h"
#include "search/tpe_parts.h"

/* ---- the rules (tpe_int.h) ------------------------------------------------------------- */
int space__motpe_ref(size_t m, size_t k, const double *pts, const unsigned char *use, double *ref)
{
    double w[SPACE_MAX_OBJECTIVES];
    int any = 0;
    for (size_t i = 0; i < m; i++) {
        const double *p = pts + i * k;
        int finite = !use || use[i];
        for (size_t j = 0; j < k && finite; j++)
            finite = isfinite(p[j]);
        if (!finite) continue;
        for (size_t j = 0; j < k; j++)
            if (!any || p[j] > w[j]) w[j] = p[j];
        any = 1;
    }
    if (!any) return -1;
    for (size_t j = 0; j < k; j++) {
        /* np.maximum(1.1 * worst_point, 0.9 * worst_point): beyond the worst whatever its
         * sign; reference_point[reference_point == 0] = EPS */
        double a = 1.1 * w[j], b = 0.9 * w[j];
        ref[j] = a > b ? a : b;
        if (ref[j] == 0) ref[j] = SPACE__MOTPE_EPS;
    }
    return 0;
}

/* _solve_hssp, step for step: contributions start as each point's own box; each round the
 * largest is taken (np.argmax: the first on ties) and every other's is lowered by what the
 * box it shares with the taken point adds to the taken set, hv(S + [max(taken, v)]) - hv(S).
 * A greedy 1 - 1/e approximation (Guerreiro, Fonseca, Paquete, "Greedy Hypervolume Subset
 * Selection in Low Dimensions", 2016, as hssp.py cites). */
int space__motpe_hssp(size_t m, size_t k, const double *pts, size_t s, const double *ref,
                      size_t *chosen)
{
    double *contrib = malloc((m + 1) * sizeof *contrib);
    double *set = malloc(((s + 1) * k + 1) * sizeof *set);
    unsigned char *taken = calloc(m + 1, 1);
    int rc = SPACE_ENOMEM;
    if (!contrib || !set || !taken) goto out;
    for (size_t j = 0; j < m; j++)
        contrib[j] = pareto_hypervolume(1, k, pts + j * k, NULL, ref);
    double hv_sel = 0;
    for (size_t ns = 0; ns < s; ns++) {
        size_t best = SIZE_MAX;
        for (size_t j = 0; j < m; j++)
            if (!taken[j] && (best == SIZE_MAX || contrib[j] > contrib[best])) best = j;
        if (best == SIZE_MAX) break; /* s > m: cannot be, by the contract */
        taken[best] = 1;
        chosen[ns] = best;
        const double *sv = pts + best * k;
        double *p = set + ns * k; /* the slot after the points taken so far */
        for (size_t j = 0; j < m; j++) {
            if (taken[j]) continue;
            const double *v = pts + j * k;
            for (size_t d = 0; d < k; d++)
                p[d] = sv[d] > v[d] ? sv[d] : v[d];
            contrib[j] -= pareto_hypervolume(ns + 1, k, set, NULL, ref) - hv_sel;
        }
        memcpy(p, sv, k * sizeof *p);
        hv_sel = pareto_hypervolume(ns + 1, k, set, NULL, ref);
    }
    rc = SPACE_OK;
out:
    free(contrib);
    free(set);
    free(taken);
    return rc;
}

int space__motpe_weights(size_t n, size_t k, const double *obj, const double *viol, double *w)
{
    /* hypervolume contributions among the feasible good points only (sampler.py); the
     * others get EPS. A point with a NaN objective counts as the worst here as everywhere
     * in the searcher: EPS too (Optuna never meets one: such a trial fails). */
    unsigned char *use = malloc(n + 1);
    double *lv = malloc((n * k + 1) * sizeof *lv), *rest = malloc((n * k + 1) * sizeof *rest);
    int rc = SPACE_ENOMEM;
    if (!use || !lv || !rest) goto out;
    size_t nf = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = !viol || viol[i] == 0;
        for (size_t j = 0; j < k && ok; j++)
            ok = isfinite(obj[i * k + j]);
        use[i] = (unsigned char)ok;
        if (ok) memcpy(lv + nf++ * k, obj + i * k, k * sizeof *lv);
        w[i] = SPACE__MOTPE_EPS;
    }
    rc = SPACE_OK;
    if (nf == 0) goto out;
    if (nf == 1) {
        for (size_t i = 0; i < n; i++)
            if (use[i]) w[i] = 1.0;
        goto out;
    }
    double ref[SPACE_MAX_OBJECTIVES];
    space__motpe_ref(nf, k, lv, NULL, ref);
    double hv = pareto_hypervolume(nf, k, lv, NULL, ref), most = -INFINITY;
    /* contributions += EPS; weights = clip(contributions / max(contributions), 0, 1) */
    for (size_t i = 0, f = 0; i < n; i++) {
        if (!use[i]) continue;
        memcpy(rest, lv, f * k * sizeof *rest);
        memcpy(rest + f * k, lv + (f + 1) * k, (nf - f - 1) * k * sizeof *rest);
        w[i] = hv - pareto_hypervolume(nf - 1, k, rest, NULL, ref) + SPACE__MOTPE_EPS;
        if (w[i] > most) most = w[i];
        f++;
    }
    for (size_t i = 0; i < n; i++) {
        if (!use[i]) continue;
        double v = w[i] / most;
        w[i] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
out:
    free(use);
    free(lv);
    free(rest);
    return rc;
}

int space__motpe_split(size_t n, size_t k, const double *obj, const double *viol,
                       const int64_t *ids, size_t ng, unsigned char *good, size_t *n_hssp)
{
    if (n_hssp) *n_hssp = 0;
    memset(good, 0, n);
    if (ng > n) ng = n;
    if (ng == 0) return SPACE_OK;
    /* pareto_rank puts the feasible fronts first, then the points with a NaN objective and
     * the infeasible ones (by violation, then id) each on a level of its own, which is
     * Optuna's order: below = the feasible and least violating when the feasible are no more
     * than ng, else with several objectives whole feasible fronts while they fit
     * ("nondomination rank-based selection") and the rest from the next front by HSSP. With
     * one objective its order is Optuna's stable argsorts': feasible by value, ties by id. */
    size_t *order = malloc(n * sizeof *order), *cnt = calloc(n + 1, sizeof *cnt), *idx = NULL,
           *chosen = NULL;
    int *level = malloc(n * sizeof *level);
    double *pts = NULL;
    int rc = SPACE_ENOMEM;
    if (!order || !cnt || !level) goto out;
    /* every observation at the rung is ranked, as Optuna ranks every trial: pareto_rank's
     * cost at 1,000 points is a fraction of a suggestion's (docs/search.md; a filter that
     * first dropped the points dominated by ng others, which cannot be good, was slower) */
    char err[128];
    int prc = pareto_rank(n, k, obj, viol, ids, order, level, err, sizeof err);
    if (prc == PARETO_ENOMEM) goto out;
    if (prc != PARETO_OK) { /* cannot be: k > 0 and the arrays are there */
        rc = SPACE_EINVAL;
        goto out;
    }
    if (k == 1) {
        for (size_t i = 0; i < ng; i++)
            good[order[i]] = 1;
        rc = SPACE_OK;
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        cnt[level[i]]++;
    size_t taken = 0;
    int lv = 0;
    while ((size_t)lv < n && taken < ng && taken + cnt[lv] <= ng)
        taken += cnt[lv++];
    for (size_t i = 0; i < n; i++)
        good[i] = level[i] < lv;
    size_t s = ng - taken;
    rc = SPACE_OK;
    if (s == 0) goto out;
    /* the front lv, in id order (Optuna's rank_i_indices keep trial order) */
    size_t mf = cnt[lv];
    pts = malloc((mf * k + 1) * sizeof *pts);
    idx = malloc((mf + 1) * sizeof *idx);
    chosen = malloc((s + 1) * sizeof *chosen);
    rc = SPACE_ENOMEM;
    if (!pts || !idx || !chosen) goto out;
    size_t mm = 0;
    for (size_t i = 0; i < n; i++) /* ids ascend: index order is id order */
        if (level[i] == lv) {
            idx[mm] = i;
            memcpy(pts + mm++ * k, obj + i * k, k * sizeof *pts);
        }
    double ref[SPACE_MAX_OBJECTIVES];
    if (space__motpe_ref(mf, k, pts, NULL, ref) != 0) {
        /* no point on it with finite objectives: a level of one point fits whole, so this
         * cannot be; take them in order */
        for (size_t i = 0; i < s; i++)
            chosen[i] = i;
    } else if (space__motpe_hssp(mf, k, pts, s, ref, chosen)) {
        goto out;
    }
    for (size_t i = 0; i < s; i++)
        good[idx[chosen[i]]] = 1;
    if (n_hssp) *n_hssp = s;
    rc = SPACE_OK;
out:
    free(order);
    free(cnt);
    free(level);
    free(pts);
    free(idx);
    free(chosen);
    return rc;
}

/* ---- the searcher's split -------------------------------------------------------------- */
int space__tpe_split_k(tpe_t *x, size_t self, size_t rung, size_t ng, split_t *sp)
{
    size_t k = x->nobj, n = 0, nrv = x->nrv;
    for (size_t t = 0; t < x->cap; t++) {
        if (!x->known[t] || t == self || x->nrv_at[t] <= rung) continue;
        const double *o = x->ro + (t * nrv + rung) * k;
        memcpy(x->mo_obj + n * k, o, k * sizeof *o);
        x->mo_viol[n] = x->rviol[t * nrv + rung];
        sp->n_infeasible += x->mo_viol[n] != 0;
        x->mo_ids[n] = (int64_t)t;
        x->mo_t[n++] = t;
    }
    int rc = space__motpe_split(n, k, x->mo_obj, x->o.constrained ? x->mo_viol : NULL, x->mo_ids,
                                ng, x->mo_good, &sp->n_hssp);
    if (rc) return rc;
    x->good_weighted = k > 1;
    size_t ngood = 0;
    for (size_t i = 0; i < n; i++) {
        x->role[x->mo_t[i]] = x->mo_good[i] ? ROLE_GOOD : ROLE_BAD;
        if (!x->mo_good[i] || k == 1) continue;
        /* the good ones packed in trial order, for their weights */
        memmove(x->mo_obj + ngood * k, x->mo_obj + i * k, k * sizeof *x->mo_obj);
        x->mo_viol[ngood] = x->mo_viol[i];
        x->mo_order[ngood++] = x->mo_t[i];
    }
    if (k > 1) {
        rc = space__motpe_weights(ngood, k, x->mo_obj, x->o.constrained ? x->mo_viol : NULL,
                                  x->mo_w);
        if (rc) return rc;
        for (size_t i = 0; i < ngood; i++)
            x->gwt[x->mo_order[i]] = x->mo_w[i];
    }
    sp->n_obs = n;
    sp->n_good = ng;
    return SPACE_OK;
}
