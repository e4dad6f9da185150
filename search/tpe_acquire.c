/* search/tpe_acquire.c: the TPE presets' acquisition, given the split tpe_split.c made:
 * Optuna 3.1 TPESampler's (24 candidates from the good Parzen estimator, the best
 * log l(x) - log g(x), g bounded first) and HpBandSter BOHB's (64 perturbed good points
 * scored by the multivariate KDEs). Not for: the densities themselves (parzen*.c, kde.c),
 * choosing the split (tpe_split.c) or the searcher's ops (tpe.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/tpe_int.h"
#include "search/tpe_parts.h"

/* ---- the presets' acquisition --------------------------------------------------------- */
/* The candidate maximising log l(x) - log g(x), the first on ties, as Optuna's np.argmax
 * over scores computed one by one (the first candidate is taken whatever its score, and a
 * NaN score never wins). A value drawn again scores the same and is not recomputed.
 *
 * With bound set, the same candidate for less work (bench/search/README.md has the figures):
 * g's exact windowed sum over every bad trial is most of a suggestion's time, so every
 * candidate first gets an upper bound on its score (space__parzen_log_pdf_bounds, a cheap
 * single-precision sum), and exact scores are computed from the highest bound down only while a
 * bound reaches the best exact score so far: a candidate whose bound is below it cannot win.
 * tpe.bounded_acquisition_picks_what_exact_scores_pick checks the two against each other. */
static int best_candidate(space__parzen_t *good, space__parzen_t *bad, const double *cand,
                          const double *cv, int bound, size_t *nexact, double *scores)
{
    enum { N = OPTUNA_N_EI_CANDIDATES };
    double score[N], lg[N], hi[N], best = -INFINITY;
    int have[N], ix[N], bi = -1;
    for (int c = 0; c < N; c++)
        bound = bound && !isnan(cv[c]);
    if (!bound || !bad->coef_ready) {
        for (int c = 0; c < N; c++) {
            double sc = NAN;
            for (int e = 0; e < c && isnan(sc); e++)
                if (cand[e] == cand[c]) sc = score[e];
            if (isnan(sc)) {
                sc = space__parzen_log_pdf(good, cand[c]) - space__parzen_log_pdf(bad, cand[c]);
                ++*nexact;
            }
            score[c] = sc;
            if (bi < 0 || isnan(cv[bi]) || sc > best) {
                best = sc;
                bi = c;
            }
        }
        if (scores) memcpy(scores, score, sizeof score);
        return bi;
    }
    for (int c = 0; c < N; c++) {
        int e = 0;
        while (e < c && cand[e] != cand[c])
            e++;
        if (e < c) {
            lg[c] = lg[e], hi[c] = hi[e];
        } else {
            double blo, bhi;
            lg[c] = space__parzen_log_pdf(good, cand[c]);
            space__parzen_log_pdf_bounds(bad, cand[c], &blo, &bhi);
            hi[c] = lg[c] - blo;
        }
        have[c] = 0;
    }
    best = score[0] = lg[0] - space__parzen_log_pdf(bad, cand[0]);
    ++*nexact;
    if (isnan(best)) return best_candidate(good, bad, cand, cv, 0, nexact, scores);
    have[0] = 1, bi = 0;
    /* the others by bound, highest first (a NaN bound first: it cannot rule anything
     * out), ties in index order */
    int m = 0;
    for (int c = 1; c < N; c++) {
        double kc = isnan(hi[c]) ? INFINITY : hi[c];
        int p = m++;
        while (p > 0 && (isnan(hi[ix[p - 1]]) ? INFINITY : hi[ix[p - 1]]) < kc) {
            ix[p] = ix[p - 1];
            p--;
        }
        ix[p] = c;
    }
    for (int k = 0; k < m; k++) {
        int c = ix[k];
        if (hi[c] < best) break; /* and every later one: their bounds are no higher */
        double sc = NAN;
        for (int e = 0; e < N && isnan(sc); e++)
            if (have[e] && cand[e] == cand[c]) sc = score[e];
        if (isnan(sc)) {
            sc = lg[c] - space__parzen_log_pdf(bad, cand[c]);
            ++*nexact;
        }
        score[c] = sc;
        have[c] = 1;
        if (sc > best || (sc == best && c < bi)) {
            best = sc;
            bi = c;
        }
    }
    return bi;
}

/* Optuna 3.1 TPESampler.sample_independent for each modelled parameter: 24 candidates from
 * the good estimator, the one maximising log l(x) - log g(x) (the first on ties, as
 * np.argmax), evaluated at the rounded value as Optuna does. */
/* The pool protocol, one parameter: each candidate's log l(x) into lg (stride nd), and
 * log g(x) into lb, or, where the bad estimator can bound it (a continuous one with its
 * coefficients ready), only an upper bound on its log l - log g added to hi: the exact
 * log g is computed afterwards (pool_best) for the candidates the bounds leave a chance, as
 * best_candidate does for a suggestion (lb then holds the lower bound). Returns 1 when lb was
 * left for later. memo: nmemo slots (a power of two, more than npool). */
static int score_pool(space__parzen_t *good, space__parzen_t *bad, const tdim_t *d,
                      const double *pool, size_t nd, size_t npool, double *lg, double *lb,
                      double *hi, int bound, size_t *memo, size_t nmemo)
{
    bound = bound && d->ncat == 0 && d->q == 0 && bad->coef_ready;
    /* a value seen before (a category, an integer, a table's grid of values) is scored once:
     * open addressing over the values' bits, slots hold a candidate index + 1 */
    memset(memo, 0, nmemo * sizeof *memo);
    for (size_t c = 0; c < npool; c++) {
        double v = pool[c * nd];
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        size_t h = (size_t)((bits * 0x9E3779B97F4A7C15ull) >> 20) & (nmemo - 1), e = SIZE_MAX;
        for (; memo[h]; h = (h + 1) & (nmemo - 1))
            if (memcmp(&pool[(memo[h] - 1) * nd], &v, sizeof v) == 0) {
                e = memo[h] - 1;
                break;
            }
        if (e != SIZE_MAX) {
            lg[c * nd] = lg[e * nd], lb[c * nd] = lb[e * nd];
            hi[c] += lg[e * nd] - lb[e * nd];
            continue;
        }
        memo[h] = c + 1;
        lg[c * nd] = space__parzen_log_pdf(good, v);
        if (bound) {
            double blo, bhi;
            space__parzen_log_pdf_bounds(bad, v, &blo, &bhi);
            lb[c * nd] = blo; /* a lower bound only: pool_best computes it exactly */
        } else {
            lb[c * nd] = space__parzen_log_pdf(bad, v);
        }
        hi[c] += lg[c * nd] - lb[c * nd];
    }
    return bound;
}

/* The candidate with the best exact score, the sum over parameters of log l - log g in
 * parameter order (the first on ties; a NaN score never wins, all NaN: the first), taking
 * candidates by their upper bound hi, highest first, while it can still reach the best:
 * the same candidate as scoring every one exactly. later[j]: parameter j's log g is still
 * to be computed, on x->inc[j]'s kept bad estimator. */
static size_t pool_best(tpe_t *x, const double *pool, size_t npool, const double *lg, double *lb,
                        const double *hi, const unsigned char *later, size_t *ord)
{
    size_t nd = x->nd, bi = 0;
    double best = NAN;
    for (size_t c = 0; c < npool; c++)
        ord[c] = c;
    /* by bound, highest first (NaN as +inf: it rules nothing out), ties in index order */
    for (size_t i = 1; i < npool; i++) {
        size_t c = ord[i], p = i;
        double kc = isnan(hi[c]) ? INFINITY : hi[c];
        while (p > 0) {
            size_t q = ord[p - 1];
            double kq = isnan(hi[q]) ? INFINITY : hi[q];
            if (!(kq < kc || (kq == kc && q > c))) break;
            ord[p] = q;
            p--;
        }
        ord[p] = c;
    }
    for (size_t i = 0; i < npool; i++) {
        size_t c = ord[i];
        if (!isnan(best) && hi[c] < best) break; /* and every later one */
        double sc = 0;
        for (size_t j = 0; j < nd; j++) {
            if (later[j]) {
                lb[c * nd + j] = space__parzen_log_pdf(&x->inc[j].pe, pool[c * nd + j]);
                x->n_exact++;
            }
            sc += lg[c * nd + j] - lb[c * nd + j];
        }
        if (!isnan(sc) && (isnan(best) || sc > best || (sc == best && c < bi))) best = sc, bi = c;
    }
    return bi;
}

int space__tpe_suggest_optuna(tpe_t *x, space__rng_t *rng, double *val, double *xi,
                              const double *pool, size_t npool, size_t *chosen)
{
    size_t nd = x->nd, ng = 0, nb = 0;
    double *gx = x->gx, *bx = x->bx, *bw = x->bw;
    int rc = SPACE_ENOMEM;
    /* the bad trials' raw weights: default_weights over their trial order */
    size_t nbad = 0;
    for (size_t t = 0; t < x->cap; t++)
        nbad += x->role[t] == ROLE_BAD;
    /* space__optuna_weight(nbad, i) with its divisions done once: the same operations */
    size_t ramp = nbad < 25 ? 0 : nbad - 25;
    double w0 = 1.0 / (double)nbad,
           step = ramp > 1 ? (1.0 - 1.0 / (double)nbad) / (double)(ramp - 1) : 0.0;
    /* the good trials in trial order, found once: at most 25 (default_gamma); and which
     * trials joined or left the bad set since the kept estimators were fitted: one or two
     * per suggestion at 10,000 trials, many when the model moved to another rung (then
     * refitting is cheaper than updating) */
    size_t ngood = 0, good_t[32], nchg = 0;
    int inc = x->incok;
    /* their total, once for every parameter: 1 (the prior) + space__sum's order over the
     * weights in trial order, element i into sum i mod 8 */
    double tot8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    /* the kept estimators hold each observation's rank, which stays right while trials only
     * join after every trial kept in the bad set (the newest result): then a rank is set
     * for each one that joins; otherwise every rank is set again (moved) */
    size_t last_kept = 0, first_changed = SIZE_MAX;
    int any_kept = 0;
    for (size_t t = 0, i = 0; t < x->cap; t++) {
        unsigned char b = x->role[t] == ROLE_BAD;
        /* -1 marks a trial outside the bad set: the gathering reads one array, not two */
        x->rw[t] = b ? (i < ramp ? w0 + (double)i * step : 1.0) : -1.0;
        x->rank[t] = (uint32_t)i;
        if (b) tot8[i & 7] += x->rw[t];
        i += b;
        if (x->role[t] == ROLE_GOOD && ngood < 32) good_t[ngood++] = t;
        if (b && x->inbad[t]) last_kept = t, any_kept = 1;
        if (inc && b != x->inbad[t]) {
            if (nchg == MAX_BAD_CHANGES) inc = 0;
            if (t < first_changed) first_changed = t;
            x->changed[nchg++] = t;
        }
    }
    int moved = !any_kept || (nchg > 0 && first_changed < last_kept);
    double total = 1.0 + (((tot8[0] + tot8[4]) + (tot8[2] + tot8[6])) +
                          ((tot8[1] + tot8[5]) + (tot8[3] + tot8[7])));
    x->incok = 0; /* until every parameter's estimator holds this bad set */
    for (size_t j = 0; j < nd; j++) {
        const tdim_t *d = &x->dims[j];
        ng = nb = 0;
        double gw[32]; /* several objectives: the good ones' MOTPE weights (tpe_motpe.c) */
        for (size_t i = 0; i < ngood; i++) {
            gw[ng] = x->gwt[good_t[i]];
            gx[ng++] = x->x[good_t[i] * nd + j];
        }
        if (d->ncat > 0) {
            for (size_t t = 0; t < x->cap; t++) {
                if (x->role[t] != ROLE_BAD) continue;
                bw[nb] = x->rw[t];
                bx[nb++] = x->vals[j][t];
            }
        }
        space__parzen_t *good = &x->pgood, *bad = &x->pbad;
        if (d->q > 0 && !x->gmemo[j]) x->gmemo[j] = space__pz_memo_new();
        good->memo = d->q > 0 ? x->gmemo[j] : NULL; /* this parameter's */
        good->zc = d->ncat > 0 ? NULL : &x->gzc[j];
        if (space__parzen_fit(good, gx, x->good_weighted ? gw : NULL, ng, d->low, d->high, d->q,
                              d->ncat))
            goto out;
        if (d->ncat > 0) {
            if (space__parzen_fit_sorted_total(bad, bx, bw, nb, d->low, d->high, d->q, d->ncat,
                                               total))
                goto out;
        } else {
            space__parzen_inc_t *in = &x->inc[j];
            int full = !inc;
            for (size_t k = 0; k < nchg && !full; k++) {
                size_t t = x->changed[k];
                double v = x->x[t * nd + j];
                int r = x->role[t] == ROLE_BAD ? space__parzen_inc_insert(in, v, t)
                                               : space__parzen_inc_remove(in, v, t);
                if (r == SPACE_ENOMEM) goto out;
                full = r != 0;
            }
            if (full) {
                space__tpe_sync_orders(x);
                const size_t *o = x->order[j];
                const double *vs = x->vals[j];
                nb = 0;
                for (size_t k = 0; k < x->nknown; k++) {
                    if (x->role[o[k]] != ROLE_BAD) continue;
                    x->bid[nb] = o[k];
                    bx[nb++] = vs[k];
                }
                if (space__parzen_inc_fit(in, bx, x->bid, nb, d->low, d->high, d->q)) goto out;
            }
            if (full || moved) {
                space__parzen_inc_set_ranks(in, x->rank);
            } else {
                for (size_t k = 0; k < nchg; k++) {
                    size_t t = x->changed[k];
                    if (x->role[t] == ROLE_BAD &&
                        space__parzen_inc_rank_one(in, x->x[t * nd + j], t, x->rank[t]))
                        space__parzen_inc_set_ranks(in, x->rank); /* not held: cannot be */
                }
            }
            in->pe.optuna31_unscaled = 1; /* before weighing: the factors depend on it */
            space__parzen_inc_weigh_ranks(in, w0, step, ramp, total);
            bad = &in->pe;
        }
        good->optuna31_unscaled = bad->optuna31_unscaled = 1; /* as Optuna 3.1.0 computes it */
        if (pool) {
            x->pool_later[j] = (unsigned char)score_pool(
                good, bad, d, pool + j, nd, npool, x->pool_lg + j, x->pool_lb + j, x->pool_hi,
                !x->exact_scores, x->pool_memo, x->pool_nmemo);
            if (d->ncat == 0) space__parzen_zcache_keep(good, &x->gzc[j]);
            x->n_cands += npool;
            continue;
        }
        double cand[OPTUNA_N_EI_CANDIDATES], cv[OPTUNA_N_EI_CANDIDATES];
        for (int c = 0; c < OPTUNA_N_EI_CANDIDATES; c++) {
            double u = space__parzen_sample(good, rng);
            if (d->ncat > 0) {
                cv[c] = cand[c] = u;
            } else {
                cv[c] = to_value(x->s, d, u);
                cand[c] = is_log_dim(d) ? log(cv[c]) : cv[c];
            }
        }
        /* x->alt_score (a duplicate being avoided, tpe.c): every candidate scored exactly and
         * kept, for the next best configuration */
        double *alt = x->alt_score ? x->alt_score + j * OPTUNA_N_EI_CANDIDATES : NULL;
        int c = best_candidate(good, bad, cand, cv, !x->exact_scores && !alt, &x->n_exact, alt);
        if (alt) {
            memcpy(x->alt_cv + j * OPTUNA_N_EI_CANDIDATES, cv, sizeof cv);
            memcpy(x->alt_cand + j * OPTUNA_N_EI_CANDIDATES, cand, sizeof cand);
        }
        /* the masses this suggestion computed, for the next fit of this parameter (a
         * failure to keep them costs only time) */
        if (d->ncat == 0) space__parzen_zcache_keep(good, &x->gzc[j]);
        x->n_cands += OPTUNA_N_EI_CANDIDATES;
        double bestv = cv[c], besti = cand[c];
        val[j] = bestv;
        xi[j] = besti;
    }
    if (inc) {
        for (size_t k = 0; k < nchg; k++)
            x->inbad[x->changed[k]] ^= 1;
    } else {
        for (size_t t = 0; t < x->cap; t++)
            x->inbad[t] = x->role[t] == ROLE_BAD;
    }
    x->incok = 1;
    if (pool)
        *chosen = pool_best(x, pool, npool, x->pool_lg, x->pool_lb, x->pool_hi, x->pool_later,
                            x->pool_ord);
    rc = SPACE_OK;
out:
    return rc;
}

/* BOHB's two KDEs over the split x->role holds, on ConfigSpace's vector (numeric
 * parameters scaled to [0, 1]): 1 when fitted (*gd the good rows, ng of them, the caller's
 * to free), 0 when a KDE would have no more points than parameters (bohb.py then draws at
 * random); *rc = 0 or SPACE_ENOMEM. */
static int bohb_fit(tpe_t *x, space__kde_t *good, space__kde_t *bad, double **gdp, size_t *ngp,
                    int *rc)
{
    size_t nd = x->nd, ng = 0, nb = 0;
    double *gd = malloc((x->cap * nd + 1) * sizeof *gd),
           *bd = malloc((x->cap * nd + 1) * sizeof *bd);
    int fitted = 0;
    *rc = SPACE_ENOMEM;
    if (!gd || !bd) goto out;
    for (size_t t = 0; t < x->cap; t++) {
        if (x->role[t] == ROLE_NONE) continue;
        double *row = x->role[t] == ROLE_GOOD ? gd + ng++ * nd : bd + nb++ * nd;
        for (size_t j = 0; j < nd; j++) {
            const tdim_t *d = &x->dims[j];
            double v = x->x[t * nd + j];
            /* ConfigSpace's vector: numeric parameters scaled to [0, 1] */
            row[j] = d->ncat > 0 ? v : (v - d->low) / (d->high - d->low);
        }
    }
    *rc = SPACE_OK;
    if (ng <= nd || nb <= nd) goto out; /* bohb.py: a KDE needs more points than dims */
    *rc = SPACE_ENOMEM;
    if (space__kde_fit(good, gd, ng, nd, x->ncat, BOHB_MIN_BANDWIDTH) ||
        space__kde_fit(bad, bd, nb, nd, x->ncat, BOHB_MIN_BANDWIDTH))
        goto out;
    *rc = SPACE_OK;
    fitted = 1;
out:
    free(bd);
    if (fitted) {
        *gdp = gd;
        *ngp = ng;
    } else {
        free(gd);
    }
    return fitted;
}

/* HpBandSter BOHB.get_config: 64 candidates, each a good point perturbed per parameter
 * (continuous: truncated normal in [0, 1] with bandwidth x 3; categorical: kept with
 * probability 1 - bw, else uniform), the one minimising max(1e-32, g) / max(l, 1e-32).
 * Returns 1 when it found one, 0 when BOHB would fall back to a random configuration. */
int space__tpe_suggest_bohb(tpe_t *x, space__rng_t *rng, double *val, double *xi, int *rc)
{
    size_t nd = x->nd, ng = 0;
    double *gd = NULL;
    double *vec = malloc((nd + 1) * sizeof *vec), *bestvec = malloc((nd + 1) * sizeof *bestvec);
    space__kde_t good = {0}, bad = {0};
    int found = 0;
    *rc = SPACE_ENOMEM;
    if (!vec || !bestvec) goto out;
    if (!bohb_fit(x, &good, &bad, &gd, &ng, rc)) goto out;
    double best = INFINITY;
    for (int c = 0; c < BOHB_NUM_SAMPLES; c++) {
        const double *datum = gd + space__rng_below(rng, ng) * nd;
        for (size_t j = 0; j < nd; j++) {
            double m = datum[j], bw = fmax(good.bw[j], BOHB_MIN_BANDWIDTH);
            if (x->dims[j].ncat == 0) {
                bw *= BOHB_BANDWIDTH_FACTOR;
                vec[j] = m + bw * space__truncnorm_draw(rng, -m / bw, (1 - m) / bw);
                vec[j] = fmin(fmax(vec[j], 0.0), 1.0);
            } else if (space__rng_uniform(rng) < 1 - bw) {
                vec[j] = m;
            } else {
                vec[j] = (double)space__rng_below(rng, x->dims[j].ncat);
            }
        }
        double l = space__kde_pdf(&good, vec), g = space__kde_pdf(&bad, vec);
        double v = fmax(1e-32, g) / fmax(l, 1e-32);
        if (!isfinite(v)) {
            /* a category one KDE never saw: bohb.py takes it if l(x) is finite */
            if (isfinite(l)) {
                memcpy(bestvec, vec, nd * sizeof *vec);
                found = 1;
                break;
            }
        }
        if (v < best) {
            best = v;
            memcpy(bestvec, vec, nd * sizeof *vec);
            found = 1;
        }
    }
    for (size_t j = 0; found && j < nd; j++) {
        const tdim_t *d = &x->dims[j];
        if (d->ncat > 0) {
            val[j] = xi[j] = bestvec[j];
        } else {
            val[j] = to_value(x->s, d, d->low + bestvec[j] * (d->high - d->low));
            xi[j] = is_log_dim(d) ? log(val[j]) : val[j];
        }
    }
out:
    space__kde_free(&good);
    space__kde_free(&bad);
    free(gd);
    free(vec);
    free(bestvec);
    return found;
}

/* The pool protocol with the bohb preset: each candidate scored as a drawn one is above,
 * on its own vector (its values, as the table has them). */
int space__tpe_choose_bohb(tpe_t *x, const double *pool, size_t npool, size_t *chosen, int *rc)
{
    size_t nd = x->nd, ng = 0;
    double *gd = NULL, *vec = malloc((nd + 1) * sizeof *vec);
    space__kde_t good = {0}, bad = {0};
    int found = 0;
    *rc = SPACE_ENOMEM;
    if (!vec) goto out;
    if (!bohb_fit(x, &good, &bad, &gd, &ng, rc)) goto out;
    double best = INFINITY;
    for (size_t c = 0; c < npool; c++) {
        for (size_t j = 0; j < nd; j++) {
            const tdim_t *d = &x->dims[j];
            double v = pool[c * nd + j];
            vec[j] = d->ncat > 0 ? v : (v - d->low) / (d->high - d->low);
        }
        double l = space__kde_pdf(&good, vec), g = space__kde_pdf(&bad, vec);
        double v = fmax(1e-32, g) / fmax(l, 1e-32);
        if (!isfinite(v) && isfinite(l)) { /* as above: taken at once */
            *chosen = c;
            found = 1;
            break;
        }
        if (v < best || !found) {
            best = v;
            *chosen = c;
            found = 1;
        }
    }
    x->n_cands += npool;
out:
    space__kde_free(&good);
    space__kde_free(&bad);
    free(gd);
    free(vec);
    return found;
}
