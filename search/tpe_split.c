/* search/tpe_split.c: which trials' results the TPE searcher fits its model on (ASHA's
 * rungs, as asynchronous BOHB) and the good/bad split, by the presets' rules (Optuna 3.1's
 * default_gamma and default_weights, HpBandSter's top_n_percent), and the per-dimension
 * orders the split reads, with the trials registered since merged in. Not for: fitting or
 * scoring (tpe_acquire.c, parzen.c, kde.c) or the searcher's ops (tpe.c). */
#include <math.h>
#include <stdlib.h>

#include "search/tpe_int.h"
#include "search/tpe_parts.h"

/* ---- the good/bad split ------------------------------------------------------------- */
/* Smaller is better; NaN is the worst. */
static double key_of(const tpe_t *x, double v)
{
    if (isnan(v)) return INFINITY;
    return x->o.mode_max ? -v : v;
}

int space__tpe_cmp_ranked(const void *a, const void *b)
{
    const ranked_t *p = a, *q = b;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return p->t < q->t ? -1 : p->t > q->t; /* Optuna's stable argsort: trial order */
}

/* Optuna 3.1 default_gamma: min(ceil(0.1 n), 25). */
size_t space__optuna_gamma(size_t n)
{
    size_t g = (n + 9) / 10;
    return g < 25 ? g : 25;
}

/* Optuna 3.1 default_weights(n)[i]: ones below 25, else a ramp from 1/n to 1 over the
 * n - 25 oldest and ones for the 25 newest. */
double space__optuna_weight(size_t n, size_t i)
{
    if (n < 25 || i >= n - 25) return 1.0;
    size_t m = n - 25;
    if (m == 1) return 1.0 / (double)n;
    return 1.0 / (double)n + (double)i * ((1.0 - 1.0 / (double)n) / (double)(m - 1));
}

/* "pool": "+steps" (experimental, issue 29): Optuna 3.1's _get_observation_pairs with its
 * SuccessiveHalvingPruner: every ended trial is an observation, ranked by the deepest rung
 * it reached (its step), then its value there (NaN last); the best default_gamma of them
 * good, the rest bad; running trials left out (no constant liar). Ready at `need` ended
 * trials. A trial that ran to max_t counts at its last rung (Optuna ranks it above every
 * pruned one by its final value): the rungs are what the searcher is told. */
static int split_steps(tpe_t *x, size_t self, size_t need, split_t *sp, size_t *most)
{
    ranked_t *rk = x->rk;
    size_t n = 0, nrv = x->nrungs ? x->nrungs : 1;
    for (size_t t = 0; t < x->cap; t++) {
        x->role[t] = ROLE_NONE;
        if (!x->known[t] || t == self) continue;
        if (!x->ended[t]) {
            sp->n_running++;
            continue;
        }
        size_t at = x->nrv_at[t];
        rk[n].key = at ? key_of(x, x->rv[t * x->nrv + at - 1]) : INFINITY;
        rk[n++].t = t;
    }
    *most = n;
    if (n < need) return 0;
    qsort(rk, n, sizeof *rk, space__tpe_cmp_ranked);
    size_t ng = space__optuna_gamma(n), have = 0;
    for (size_t i = 0; i < n; i++)
        x->role[rk[i].t] = ROLE_BAD;
    for (size_t r = nrv + 1; r-- > 0 && have < ng;) /* deepest first; r = rungs reached */
        for (size_t i = 0; i < n && have < ng; i++)
            if (x->nrv_at[rk[i].t] == r) x->role[rk[i].t] = ROLE_GOOD, have++;
    sp->rung = -1;
    sp->n_obs = n;
    sp->n_good = ng;
    sp->n_bad = n - ng;
    return 1;
}

/* Chooses the rung and marks each trial's role; returns 0 when no rung has enough
 * results yet (*most = the largest count). `self` is the trial being suggested. */
int space__tpe_choose_split(tpe_t *x, size_t self, split_t *sp, size_t *most)
{
    size_t d = x->nd, need = 2 * (d + 1) > 10 ? 2 * (d + 1) : 10;
    size_t nrv = x->nrungs ? x->nrungs : 1;
    if (x->pool & SPACE_TPE_POOL_STARTUP10) need = 10; /* Optuna's n_startup_trials */
    if ((x->pool & SPACE_TPE_POOL_STEPS) && !x->kpath && x->o.preset == SPACE_TPE_OPTUNA)
        return split_steps(x, self, need, sp, most);
    int rung = -1;
    size_t at_rung = 0; /* trials with a result at the chosen rung */
    *most = 0;
    for (size_t r = nrv; r-- > 0;) { /* counted as results arrive, less self's */
        size_t cnt = x->cnt_at[r] - (self < x->cap && x->known[self] && x->nrv_at[self] > r);
        if (cnt > *most) *most = cnt;
        if (cnt >= need && rung < 0) rung = (int)r, at_rung = cnt;
    }
    if (rung < 0) return 0;
    ranked_t *rk = x->rk;
    size_t n = 0, ng;
    if (x->kpath) {
        /* several objectives or constraints: the trials at the rung split as Optuna's
         * MOTPE and constrained TPE split them (tpe_motpe.c), the others bad as below */
        for (size_t t = 0; t < x->cap; t++) {
            x->role[t] = ROLE_NONE;
            if (!x->known[t] || t == self) continue;
            x->role[t] = ROLE_BAD;
            if (x->nrv_at[t] > (size_t)rung) continue;
            if (x->ended[t])
                sp->n_stopped++;
            else
                sp->n_running++;
        }
        if (x->o.preset == SPACE_TPE_OPTUNA) {
            ng = space__optuna_gamma(at_rung);
        } else { /* bohb.py, as below */
            ng = BOHB_TOP_N_PERCENT * at_rung / 100;
            if (ng < d + 1) ng = d + 1;
            if (ng > at_rung) ng = at_rung;
        }
        if (space__tpe_split_k(x, self, (size_t)rung, ng, sp)) return -1;
        sp->rung = x->nrungs ? rung : -1;
        sp->n_bad = sp->n_obs - sp->n_good + sp->n_stopped + sp->n_running;
        return 1;
    }
    if (x->o.preset == SPACE_TPE_OPTUNA) {
        /* one pass: every trial with a result at the rung is bad until the best ng of
         * them (at most 25, default_gamma) turn good, kept in order in rk[0..ng) as they
         * come instead of sorting 10,000 results */
        ng = space__optuna_gamma(at_rung);
        size_t have = 0;
        for (size_t t = 0; t < x->cap; t++) {
            x->role[t] = ROLE_NONE;
            if (!x->known[t] || t == self) continue;
            x->role[t] = ROLE_BAD;
            if (x->nrv_at[t] <= (size_t)rung) { /* ended below the rung or still running */
                if (x->ended[t])
                    sp->n_stopped++;
                else
                    sp->n_running++;
                continue;
            }
            n++;
            ranked_t e = {key_of(x, x->rv[t * x->nrv + (size_t)rung]), t};
            if (have == ng && space__tpe_cmp_ranked(&e, &rk[ng - 1]) >= 0) continue;
            size_t k = have < ng ? have++ : ng - 1;
            while (k > 0 && space__tpe_cmp_ranked(&e, &rk[k - 1]) < 0) {
                rk[k] = rk[k - 1];
                k--;
            }
            rk[k] = e;
        }
        for (size_t i = 0; i < ng; i++)
            x->role[rk[i].t] = ROLE_GOOD;
    } else { /* bohb.py: max(min_points_in_model, top_n_percent * n // 100) */
        for (size_t t = 0; t < x->cap; t++) {
            x->role[t] = ROLE_NONE;
            if (!x->known[t] || t == self) continue;
            if (x->nrv_at[t] > (size_t)rung) {
                rk[n].key = key_of(x, x->rv[t * x->nrv + (size_t)rung]);
                rk[n++].t = t;
            } else {
                /* ended below the rung (stopped, failed) or still running: bad */
                x->role[t] = ROLE_BAD;
                if (x->ended[t])
                    sp->n_stopped++;
                else
                    sp->n_running++;
            }
        }
        qsort(rk, n, sizeof *rk, space__tpe_cmp_ranked);
        ng = BOHB_TOP_N_PERCENT * n / 100;
        if (ng < d + 1) ng = d + 1;
        if (ng > n) ng = n;
        for (size_t i = 0; i < n; i++)
            x->role[rk[i].t] = i < ng ? ROLE_GOOD : ROLE_BAD;
    }
    sp->rung = x->nrungs ? rung : -1;
    sp->n_obs = n;
    sp->n_good = ng;
    sp->n_bad = n - ng + sp->n_stopped + sp->n_running;
    return 1;
}

/* Merges the waiting trials into every numeric dimension's order, sorted by (value,
 * trial) as inserting them one by one would have: each sorted on its own (x->rk is free
 * scratch here), then merged from the back. */
void space__tpe_sync_orders(tpe_t *x)
{
    if (x->npend == 0) return;
    size_t nd = x->nd, p = x->npend, nsorted = x->nknown - p;
    ranked_t *pk = x->rk;
    for (size_t j = 0; j < nd; j++) {
        if (x->dims[j].ncat > 0) continue;
        for (size_t k = 0; k < p; k++)
            pk[k] = (ranked_t){x->x[x->pend[k] * nd + j], x->pend[k]};
        qsort(pk, p, sizeof *pk, space__tpe_cmp_ranked);
        size_t *o = x->order[j], i = nsorted, k = p, w = nsorted + p;
        double *vs = x->vals[j];
        while (k > 0) {
            if (i > 0 && (vs[i - 1] > pk[k - 1].key ||
                          (vs[i - 1] == pk[k - 1].key && o[i - 1] > pk[k - 1].t))) {
                --i, --w;
                vs[w] = vs[i], o[w] = o[i];
            } else {
                --k, --w;
                vs[w] = pk[k].key, o[w] = pk[k].t;
            }
        }
    }
    for (size_t k = 0; k < p; k++)
        x->known[x->pend[k]] = 1;
    x->npend = 0;
}
