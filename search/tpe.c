/* search/tpe.c: the TPE searcher, "search": {"type": "tpe"} (space__searcher_tpe, one row
 * of searcher.c's table): which trials' results a TPE model is fitted on (ASHA's rungs, as
 * asynchronous BOHB), the good/bad split, and the presets' acquisition (Optuna 3.1's
 * TPESampler defaults, HpBandSter's BOHB). Not for: the densities themselves (parzen.c),
 * drawing random configurations (sample.c), checking calls (searcher.c), or when to ask
 * (the scheduler). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/render.h"
#include "search/searcher_int.h"
#include "search/space_int.h"
#include "search/tpe_int.h"

/* Optuna 3.1 TPESampler defaults (optuna/samplers/_tpe/sampler.py) */
#define OPTUNA_N_EI_CANDIDATES 24
/* more trials than this joining or leaving the bad set between two suggestions: the kept
 * bad estimators are refitted instead of updated */
#define MAX_BAD_CHANGES 32
/* HpBandSter BOHB defaults (hpbandster/optimizers/config_generators/bohb.py) */
#define BOHB_TOP_N_PERCENT 15
#define BOHB_NUM_SAMPLES 64
#define BOHB_RANDOM_FRACTION (1.0 / 3.0)
#define BOHB_BANDWIDTH_FACTOR 3.0
#define BOHB_MIN_BANDWIDTH 1e-3

enum { ROLE_NONE = 0, ROLE_GOOD = 1, ROLE_BAD = 2 };

/* One modelled parameter (searcher_int.h): its scale and Optuna's parzen bounds. */
typedef space__searcher_dim_t tdim_t;

typedef struct ranked {
    double key;
    size_t t;
} ranked_t;

/* The TPE searcher's state (the ops' void *). */
typedef struct tpe {
    const space_t *s;
    space_search_opts_t o;
    tdim_t *dims;
    size_t nd;
    size_t *ncat; /* per dim, for the KDE */
    double *rungs;
    size_t nrungs, nrv; /* nrv = max(1, nrungs): rung slots per trial */
    /* per trial, indexed by trial_no, cap slots */
    size_t cap;
    unsigned char *known, *ended, *stopped, *role;
    double *x;      /* cap x nd, internal scale */
    double *rv;     /* cap x nrv: value at each rung (slot 0 = latest without rungs) */
    size_t *nrv_at; /* how many rung slots are set */
    size_t *cnt_at; /* nrv: cnt_at[r] = known trials with a value at rung r (nrv_at > r) */
    double *rw;     /* scratch: raw weight of each bad trial, -1 for the others */
    uint32_t *rank; /* scratch: each bad trial's age rank (its place among them by number) */
    /* scratch, cap + 1 each, kept so a suggestion allocates nothing: freeing 80 kB
     * arrays gave memory back to the system and every suggestion faulted it in again */
    double *gx, *bx, *bw;
    struct ranked *rk;
    double *sv, *sx; /* scratch, nd + 1 each: a suggestion's values and internal values */
    space__parzen_t pgood, pbad; /* refitted per parameter, arrays kept between fits */
    /* per numeric dim, known trials sorted by (value, trial_no): kept up to date on
     * every registration so a fit never sorts 10,000 values */
    size_t **order;
    /* per numeric dim: the values in that order, read contiguously; per categorical dim:
     * each trial's category by trial number (x holds them too, but strided by nd) */
    double **vals;
    size_t nknown;
    /* trials registered since the orders were last merged (known[t] == 2): a full refit
     * merges them in (sync_orders); inserting each at once moved half of every order,
     * 10 x 16 bytes x n / 2 per trial, for orders that only a full refit reads */
    size_t *pend, npend;
    struct space__pz_memo **gmemo; /* per stepped dim: its good estimators' cell masses */
    space__zcache_t *gzc;          /* per dim: its good estimators' truncation masses, fit to fit */
    /* per numeric dim, the bad estimator as the last suggestion left it; inbad[t] says
     * which trials it holds, incok whether it may be updated rather than refitted (a
     * trial registered again may have changed its values) */
    space__parzen_inc_t *inc;
    unsigned char *inbad;
    size_t *changed; /* scratch: trials that joined or left the bad set */
    size_t *bid;     /* scratch: the bad trials in one parameter's sorted order */
    int incok;
    int exact_scores;        /* tests: every candidate's exact score, no bounds first */
    size_t n_cands, n_exact; /* candidates scored, and of them exactly (bad's log_pdf) */
} tpe_t;

static void errf(char *err, size_t errlen, const char *fmt, const char *a)
{
    if (err && errlen) snprintf(err, errlen, fmt, a);
}

/* ---- parameters ------------------------------------------------------------------------ */
static int is_log_dim(const tdim_t *d)
{
    return space__searcher_dim_is_log(d);
}

static double to_value(const space_t *s, const tdim_t *d, double u)
{
    return space__searcher_dim_value(s, d, u);
}

static double to_internal(const space_t *s, const tdim_t *d, const cJSON *v)
{
    return space__searcher_dim_internal(s, d, v);
}

/* ---- construction ------------------------------------------------------------------- */
static void tpe_free(void *state)
{
    tpe_t *x = state;
    if (!x) return;
    for (size_t j = 0; j < x->nd; j++) {
        if (x->order) free(x->order[j]);
        if (x->vals) free(x->vals[j]);
    }
    free(x->order);
    free(x->vals);
    free(x->pend);
    for (size_t j = 0; x->gmemo && j < x->nd; j++)
        free(x->gmemo[j]);
    free(x->gmemo);
    for (size_t j = 0; x->gzc && j < x->nd; j++)
        space__zcache_free(&x->gzc[j]);
    free(x->gzc);
    free(x->cnt_at);
    for (size_t j = 0; x->inc && j < x->nd; j++)
        space__parzen_inc_free(&x->inc[j]);
    free(x->inc);
    free(x->inbad);
    free(x->changed);
    free(x->bid);
    free(x->gx);
    free(x->bx);
    free(x->bw);
    free(x->rk);
    free(x->dims);
    free(x->ncat);
    free(x->rungs);
    free(x->known);
    free(x->ended);
    free(x->stopped);
    free(x->role);
    free(x->x);
    free(x->rv);
    free(x->nrv_at);
    free(x->rw);
    free(x->rank);
    space__parzen_free(&x->pgood);
    space__parzen_free(&x->pbad);
    free(x->sv);
    free(x->sx);
    free(x);
}

static int tpe_create(const space_t *s, const space_search_opts_t *o, void **out, char *err,
                      size_t errlen)
{
    if (o->preset != SPACE_TPE_OPTUNA && o->preset != SPACE_TPE_BOHB) {
        errf(err, errlen, "%s", "unknown TPE preset: use optuna or bohb");
        return SPACE_EINVAL;
    }
    tpe_t *x = calloc(1, sizeof *x);
    if (!x) goto nomem;
    x->s = s;
    x->o = *o;
    x->nrv = 1;
    x->dims = calloc(s->nparams + 1, sizeof *x->dims);
    x->ncat = calloc(s->nparams + 1, sizeof *x->ncat);
    x->order = calloc(s->nparams + 1, sizeof *x->order);
    x->gmemo = calloc(s->nparams + 1, sizeof *x->gmemo);
    x->gzc = calloc(s->nparams + 1, sizeof *x->gzc);
    x->cnt_at = calloc(1, sizeof *x->cnt_at);
    x->vals = calloc(s->nparams + 1, sizeof *x->vals);
    x->inc = calloc(s->nparams + 1, sizeof *x->inc);
    x->sv = calloc(s->nparams + 1, sizeof *x->sv);
    x->sx = calloc(s->nparams + 1, sizeof *x->sx);
    if (!x->dims || !x->ncat || !x->order || !x->vals || !x->gmemo || !x->gzc || !x->inc ||
        !x->sv || !x->sx)
        goto nomem;
    for (size_t p = 0; p < s->nparams; p++) {
        if (space__searcher_dim_of(&s->params[p], p, &x->dims[x->nd])) {
            x->ncat[x->nd] = x->dims[x->nd].ncat;
            x->nd++;
        }
    }
    *out = x;
    return SPACE_OK;
nomem:
    tpe_free(x);
    errf(err, errlen, "%s", "out of memory");
    return SPACE_ENOMEM;
}

/* searcher.c has checked the milestones and that no result has arrived yet. */
static int tpe_set_rungs(void *state, const double *milestones, size_t n)
{
    tpe_t *x = state;
    double *r = n ? malloc(n * sizeof *r) : NULL;
    if (n && !r) return SPACE_ENOMEM;
    if (n) memcpy(r, milestones, n * sizeof *r);
    size_t nrv = n ? n : 1;
    if (x->cap && nrv != x->nrv) { /* no results yet: the slots can be resized empty */
        double *rv = malloc(x->cap * nrv * sizeof *rv);
        if (!rv) {
            free(r);
            return SPACE_ENOMEM;
        }
        free(x->rv);
        x->rv = rv;
    }
    size_t *cnt = calloc(nrv, sizeof *cnt); /* no results yet: every count is 0 */
    if (!cnt) {
        free(r);
        return SPACE_ENOMEM;
    }
    free(x->cnt_at);
    x->cnt_at = cnt;
    free(x->rungs);
    x->rungs = r;
    x->nrungs = n;
    x->nrv = nrv;
    return SPACE_OK;
}

/* Makes room for trial t. */
static int grow(tpe_t *x, size_t t)
{
    if (t < x->cap) return 0;
    size_t cap = x->cap ? x->cap : 64;
    while (cap <= t)
        cap *= 2;
#define GROW(ptr, per)                                                                             \
    do {                                                                                           \
        void *np = realloc(x->ptr, cap * (per) * sizeof *x->ptr + 1);                              \
        if (!np) return SPACE_ENOMEM;                                                              \
        x->ptr = np;                                                                               \
        memset(x->ptr + x->cap * (per), 0, (cap - x->cap) * (per) * sizeof *x->ptr);               \
    } while (0)
    GROW(known, 1);
    GROW(ended, 1);
    GROW(stopped, 1);
    GROW(role, 1);
    GROW(x, x->nd);
    GROW(rv, x->nrv);
    GROW(nrv_at, 1);
    GROW(rw, 1);
    GROW(rank, 1);
    GROW(gx, 1);
    GROW(bx, 1);
    GROW(bw, 1);
    GROW(rk, 1);
    GROW(inbad, 1);
    GROW(changed, 1);
    GROW(bid, 1);
    GROW(pend, 1);
#undef GROW
    for (size_t j = 0; j < x->nd; j++) {
        double *nv = realloc(x->vals[j], cap * sizeof *nv + 1);
        if (!nv) return SPACE_ENOMEM;
        x->vals[j] = nv;
        if (x->dims[j].ncat > 0) continue;
        size_t *np = realloc(x->order[j], cap * sizeof *np + 1);
        if (!np) return SPACE_ENOMEM;
        x->order[j] = np;
    }
    x->cap = cap;
    return 0;
}

/* ---- what the scheduler reports -------------------------------------------------------- */
static int tpe_observe(void *state, size_t trial_no, double time, double value)
{
    tpe_t *x = state;
    if (grow(x, trial_no)) return SPACE_ENOMEM;
    double *rv = x->rv + trial_no * x->nrv;
    size_t before = x->nrv_at[trial_no];
    if (x->nrungs == 0) {
        rv[0] = value;
        x->nrv_at[trial_no] = 1;
    } else {
        /* every milestone this result has reached and the trial had not: ASHA records the
         * first result at or past each milestone */
        while (x->nrv_at[trial_no] < x->nrungs && time >= x->rungs[x->nrv_at[trial_no]])
            rv[x->nrv_at[trial_no]++] = value;
    }
    if (x->known[trial_no])
        for (size_t r = before; r < x->nrv_at[trial_no]; r++)
            x->cnt_at[r]++;
    return SPACE_OK;
}

static void tpe_trial_end(void *state, size_t trial_no, int stopped_early)
{
    tpe_t *x = state;
    if (grow(x, trial_no)) return;
    x->ended[trial_no] = 1;
    x->stopped[trial_no] = stopped_early != 0;
}

/* Takes t out of, or puts it into, the per-dimension sorted orders (known[t]: 1 merged
 * into them, 2 waiting in pend). */
static void unregister(tpe_t *x, size_t t)
{
    if (!x->known[t]) return;
    x->incok = 0; /* its values may change: the kept bad estimators may hold the old ones */
    if (x->known[t] == 2) {
        size_t k = 0;
        while (x->pend[k] != t)
            k++;
        x->pend[k] = x->pend[--x->npend];
    } else {
        size_t nsorted = x->nknown - x->npend;
        for (size_t j = 0; j < x->nd; j++) {
            if (x->dims[j].ncat > 0) continue;
            size_t *o = x->order[j], k = 0;
            while (o[k] != t)
                k++;
            memmove(o + k, o + k + 1, (nsorted - k - 1) * sizeof *o);
            memmove(x->vals[j] + k, x->vals[j] + k + 1, (nsorted - k - 1) * sizeof *x->vals[j]);
        }
    }
    for (size_t r = 0; r < x->nrv_at[t]; r++)
        x->cnt_at[r]--;
    x->known[t] = 0;
    x->nknown--;
}

static void register_trial(tpe_t *x, size_t t, const double *xi)
{
    unregister(x, t);
    memcpy(x->x + t * x->nd, xi, x->nd * sizeof *xi);
    for (size_t j = 0; j < x->nd; j++)
        if (x->dims[j].ncat > 0) x->vals[j][t] = xi[j];
    x->known[t] = 2;
    for (size_t r = 0; r < x->nrv_at[t]; r++)
        x->cnt_at[r]++;
    x->pend[x->npend++] = t;
    x->nknown++;
}

/* Merges the waiting trials into every numeric dimension's order, sorted by (value,
 * trial) as inserting them one by one would have: each sorted on its own (x->rk is free
 * scratch here), then merged from the back. */
static int cmp_ranked(const void *a, const void *b);
static void sync_orders(tpe_t *x)
{
    if (x->npend == 0) return;
    size_t nd = x->nd, p = x->npend, nsorted = x->nknown - p;
    ranked_t *pk = x->rk;
    for (size_t j = 0; j < nd; j++) {
        if (x->dims[j].ncat > 0) continue;
        for (size_t k = 0; k < p; k++)
            pk[k] = (ranked_t){x->x[x->pend[k] * nd + j], x->pend[k]};
        qsort(pk, p, sizeof *pk, cmp_ranked);
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

static int tpe_add_trial(void *state, size_t trial_no, const cJSON *config, char *err,
                         size_t errlen)
{
    tpe_t *x = state;
    if (grow(x, trial_no)) {
        errf(err, errlen, "%s", "out of memory");
        return SPACE_ENOMEM;
    }
    double *xi = x->sx;
    for (size_t j = 0; j < x->nd; j++) {
        const char *name = x->s->params[x->dims[j].param].name;
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, name);
        xi[j] = v ? to_internal(x->s, &x->dims[j], v) : NAN;
        if (isnan(xi[j])) {
            errf(err, errlen, "configuration: \"%s\" is missing or not one of its values", name);
            return SPACE_EINVAL;
        }
    }
    register_trial(x, trial_no, xi);
    return SPACE_OK;
}

/* ---- the good/bad split ------------------------------------------------------------- */
/* Smaller is better; NaN is the worst. */
static double key_of(const tpe_t *x, double v)
{
    if (isnan(v)) return INFINITY;
    return x->o.mode_max ? -v : v;
}

static int cmp_ranked(const void *a, const void *b)
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

/* What a fit is based on. */
typedef struct split {
    int rung; /* index into rungs, -1 = latest results */
    size_t n_obs, n_good, n_bad, n_stopped, n_running;
} split_t;

/* Chooses the rung and marks each trial's role; returns 0 when no rung has enough
 * results yet (*most = the largest count). `self` is the trial being suggested. */
static int choose_split(tpe_t *x, size_t self, split_t *sp, size_t *most)
{
    size_t d = x->nd, need = 2 * (d + 1) > 10 ? 2 * (d + 1) : 10;
    size_t nrv = x->nrungs ? x->nrungs : 1;
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
            if (have == ng && cmp_ranked(&e, &rk[ng - 1]) >= 0) continue;
            size_t k = have < ng ? have++ : ng - 1;
            while (k > 0 && cmp_ranked(&e, &rk[k - 1]) < 0) {
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
        qsort(rk, n, sizeof *rk, cmp_ranked);
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

/* The TPE state behind a handle, or NULL when the handle is another searcher's: the test
 * hooks below (tpe_int.h) look inside TPE only. */
static tpe_t *tpe_of(const space_searcher_t *h)
{
    return h && h->ops == &space__searcher_tpe ? h->state : NULL;
}

int space__searcher_split(space_searcher_t *h, size_t self, unsigned char *roles, size_t nroles,
                          int *rung)
{
    tpe_t *x = tpe_of(h);
    if (!x) return SPACE_EINVAL;
    split_t sp = {0};
    size_t most = 0;
    if (grow(x, self)) return SPACE_ENOMEM;
    int ready = choose_split(x, self, &sp, &most);
    if (ready < 0) return SPACE_ENOMEM;
    for (size_t t = 0; t < nroles; t++)
        roles[t] = ready && t < x->cap ? x->role[t] : 0;
    *rung = ready ? sp.rung : -2;
    return SPACE_OK;
}

void space__searcher_exact_scores(space_searcher_t *h, int on)
{
    tpe_t *x = tpe_of(h);
    if (x) x->exact_scores = on;
}

void space__searcher_score_counts(const space_searcher_t *h, size_t *cands, size_t *exact)
{
    const tpe_t *x = tpe_of(h);
    *cands = x ? x->n_cands : 0;
    *exact = x ? x->n_exact : 0;
}

const space__parzen_t *space__searcher_bad_estimator(const space_searcher_t *h, size_t j)
{
    const tpe_t *x = tpe_of(h);
    if (!x || j >= x->nd || x->dims[j].ncat > 0 || !x->incok) return NULL;
    return &x->inc[j].pe;
}

/* ---- the presets' acquisition --------------------------------------------------------- */
/* The candidate maximising log l(x) - log g(x), the first on ties, as Optuna's np.argmax
 * over scores computed one by one (the first candidate is taken whatever its score, and a
 * NaN score never wins). A value drawn again scores the same and is not recomputed.
 *
 * With bound set, the same candidate for about a third of the work: g's exact windowed sum
 * over 10,000 components is nearly all of a suggestion's time, so every candidate first
 * gets an upper bound on its score (space__parzen_log_pdf_bounds, a cheap single-precision
 * sum), and exact scores are computed from the highest bound down only while a bound
 * reaches the best exact score so far: a candidate whose bound is below it cannot win.
 * tpe.bounded_acquisition_picks_what_exact_scores_pick checks the two against each other. */
static int best_candidate(space__parzen_t *good, space__parzen_t *bad, const double *cand,
                          const double *cv, int bound, size_t *nexact)
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
    if (isnan(best)) return best_candidate(good, bad, cand, cv, 0, nexact);
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
static int suggest_optuna(tpe_t *x, space__rng_t *rng, double *val, double *xi)
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
        for (size_t i = 0; i < ngood; i++)
            gx[ng++] = x->x[good_t[i] * nd + j];
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
        if (space__parzen_fit(good, gx, NULL, ng, d->low, d->high, d->q, d->ncat)) goto out;
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
                sync_orders(x);
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
        int c = best_candidate(good, bad, cand, cv, !x->exact_scores, &x->n_exact);
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
    rc = SPACE_OK;
out:
    return rc;
}

/* HpBandSter BOHB.get_config: 64 candidates, each a good point perturbed per parameter
 * (continuous: truncated normal in [0, 1] with bandwidth x 3; categorical: kept with
 * probability 1 - bw, else uniform), the one minimising max(1e-32, g) / max(l, 1e-32).
 * Returns 1 when it found one, 0 when BOHB would fall back to a random configuration. */
static int suggest_bohb(tpe_t *x, space__rng_t *rng, double *val, double *xi, int *rc)
{
    size_t nd = x->nd, ng = 0, nb = 0;
    double *gd = malloc((x->cap * nd + 1) * sizeof *gd),
           *bd = malloc((x->cap * nd + 1) * sizeof *bd);
    double *vec = malloc((nd + 1) * sizeof *vec), *bestvec = malloc((nd + 1) * sizeof *bestvec);
    space__kde_t good = {0}, bad = {0};
    int found = 0;
    *rc = SPACE_ENOMEM;
    if (!gd || !bd || !vec || !bestvec) goto out;
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
    if (space__kde_fit(&good, gd, ng, nd, x->ncat, BOHB_MIN_BANDWIDTH) ||
        space__kde_fit(&bad, bd, nb, nd, x->ncat, BOHB_MIN_BANDWIDTH))
        goto out;
    *rc = SPACE_OK;
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
    free(bd);
    free(vec);
    free(bestvec);
    return found;
}

static void whyf(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void whyf(char *why, size_t whylen, const char *fmt, ...)
{
    if (!why || !whylen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
}

/* Registers the modelled values of a space_sample configuration for trial t. */
static int register_config(tpe_t *x, size_t t, const cJSON *cfg)
{
    double *xi = x->sx;
    for (size_t j = 0; j < x->nd; j++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, x->s->params[x->dims[j].param].name);
        xi[j] = v ? to_internal(x->s, &x->dims[j], v) : NAN;
    }
    register_trial(x, t, xi);
    return 0;
}

static int tpe_suggest(void *state, size_t trial_no, cJSON **config, char *why, size_t whylen,
                       char *err, size_t errlen)
{
    tpe_t *x = state;
    cJSON *cfg = NULL;
    int rc = space_sample(x->s, trial_no, &cfg, err, errlen);
    if (rc) return rc;
    const char *preset = x->o.preset == SPACE_TPE_OPTUNA ? "optuna" : "bohb";
    if (grow(x, trial_no)) goto nomem;
    size_t nd = x->nd, most = 0;
    double *val = x->sv, *xi = x->sx;
    split_t sp = {0};
    space__rng_t rng;
    space__rng_seed(&rng, x->o.seed, trial_no);
    int ready = nd > 0 ? choose_split(x, trial_no, &sp, &most) : 0;
    if (ready < 0) goto nomem;
    size_t need = 2 * (nd + 1) > 10 ? 2 * (nd + 1) : 10;
    int model = 0;
    if (nd == 0) {
        whyf(why, whylen, "random: no parameter to model");
    } else if (!ready) {
        whyf(why, whylen, "random: model not ready (%zu of %zu observations)", most, need);
    } else if (x->o.preset == SPACE_TPE_BOHB && space__rng_uniform(&rng) < BOHB_RANDOM_FRACTION) {
        whyf(why, whylen, "random: BOHB's random fraction (1/3)");
    } else if (x->o.preset == SPACE_TPE_BOHB) {
        model = suggest_bohb(x, &rng, val, xi, &rc);
        if (rc) goto nomem;
        if (!model) whyf(why, whylen, "random: BOHB's KDE needs more points than parameters");
    } else {
        if (suggest_optuna(x, &rng, val, xi)) goto nomem;
        model = 1;
    }
    if (model) {
        char where[64];
        if (sp.rung >= 0) {
            char num[32];
            snprintf(where, sizeof where, "at rung %s",
                     space_format_number(x->rungs[sp.rung], num));
        } else {
            snprintf(where, sizeof where, "on latest results");
        }
        whyf(why, whylen,
             "TPE (%s) %s from %zu observations (%zu good; bad also %zu ended below, %zu running)",
             preset, where, sp.n_obs, sp.n_good, sp.n_stopped, sp.n_running);
        for (size_t j = 0; j < nd; j++) {
            const tdim_t *d = &x->dims[j];
            const space_param_t *P = &x->s->params[d->param];
            cJSON *v = d->ncat > 0 ? cJSON_Duplicate(cJSON_GetArrayItem(P->values, (int)val[j]), 1)
                                   : cJSON_CreateNumber(val[j]);
            if (!v || !cJSON_ReplaceItemInObjectCaseSensitive(cfg, P->name, v)) {
                cJSON_Delete(v);
                goto nomem;
            }
        }
        register_trial(x, trial_no, xi);
    } else {
        register_config(x, trial_no, cfg);
    }
    *config = cfg;
    return SPACE_OK;
nomem:
    cJSON_Delete(cfg);
    errf(err, errlen, "%s", "out of memory");
    return SPACE_ENOMEM;
}

static const char *tpe_label(const space_settings_t *set)
{
    return set->search_preset == SPACE_TPE_BOHB ? "TPE (bohb)" : "TPE (optuna)";
}

const space__searcher_ops_t space__searcher_tpe = {
    .name = "tpe",
    .adaptive = 1,
    .label = tpe_label,
    .create = tpe_create,
    .free = tpe_free,
    .set_rungs = tpe_set_rungs,
    .observe = tpe_observe,
    .trial_end = tpe_trial_end,
    .add_trial = tpe_add_trial,
    .suggest = tpe_suggest,
};
