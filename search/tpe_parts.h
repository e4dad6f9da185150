/* search internals shared by the TPE searcher's three files only: tpe.c (the searcher's
 * ops: construction, what the scheduler reports, suggesting), tpe_split.c (which trials a
 * model is fitted on, the good/bad split) and tpe_acquire.c (the presets' acquisition):
 * the state behind the ops' void *, the presets' constants and the functions they call
 * across files. Not for: tests or other searchers (tests use tpe_int.h). */
#ifndef TUNE_TPE_PARTS_H
#define TUNE_TPE_PARTS_H

#include <stddef.h>
#include <stdint.h>

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
    /* scratch, cap + 1 each, kept so a suggestion allocates nothing: freed arrays this
     * large go back to the system, and every suggestion would fault them in again */
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
    /* the pool protocol's scratch: the candidates' internal values and
     * their scores, kept between choices */
    double *pool_x, *pool_lg, *pool_lb, *pool_hi;
    size_t *pool_ord, *pool_memo; /* pool_memo: pool_nmemo slots, a power of two > 2 npool */
    size_t pool_nmemo;
    unsigned char *pool_later; /* nd + 1 */
    size_t npool_cap;          /* candidates the pool_* arrays hold */
    int pool;                  /* space_searcher_set_pool's SPACE_TPE_POOL_* bits (experimental) */
    /* NULL, or (avoiding a duplicate: tpe.c) nd x OPTUNA_N_EI_CANDIDATES each: the optuna
     * preset's candidates (value, internal value) and exact scores per parameter */
    double *alt_score, *alt_cv, *alt_cand;
    /* several objectives or constraints (o.nobjectives > 1 or o.constrained: kpath), the
     * results observe_k got: per trial and rung slot (as rv), nobj values to minimise in ro
     * and the violation in rviol; the others leave both empty */
    int kpath;
    size_t nobj; /* values per slot: max(1, o.nobjectives) */
    double *ro, *rviol;
    /* the last split's good trials' weights by trial (several objectives: Optuna's
     * hypervolume contributions, tpe_motpe.c), read when good_weighted */
    double *gwt;
    int good_weighted;
    /* kpath: the split's scratch, cap each (mo_obj cap x nobj) */
    double *mo_obj, *mo_viol, *mo_w;
    int64_t *mo_ids;
    size_t *mo_t, *mo_order;
    unsigned char *mo_good;
    uint64_t *chash;         /* per trial: its configuration's hash (known trials only) */
    int exact_scores;        /* tests: every candidate's exact score, no bounds first */
    size_t n_cands, n_exact; /* candidates scored, and of them exactly (bad's log_pdf) */
} tpe_t;

/* What a fit is based on. */
typedef struct split {
    int rung; /* index into rungs, -1 = latest results */
    size_t n_obs, n_good, n_bad, n_stopped, n_running;
    /* kpath: of the n_obs, how many are infeasible, and of the good, how many the
     * hypervolume subset selection chose from the last front it reached (several
     * objectives) */
    size_t n_infeasible, n_hssp;
} split_t;

/* ---- parameters ------------------------------------------------------------------------ */
static inline int is_log_dim(const tdim_t *d)
{
    return space__searcher_dim_is_log(d);
}

static inline double to_value(const space_t *s, const tdim_t *d, double u)
{
    return space__searcher_dim_value(s, d, u);
}

/* ---- tpe.c ---------------------------------------------------------------------------- */
/* Makes room for trial t: 0, or SPACE_ENOMEM. */
int space__tpe_grow(tpe_t *x, size_t t);
/* tpe_split.c: merges the trials registered since the last full refit into the
 * per-dimension orders. */
void space__tpe_sync_orders(tpe_t *x);

/* ---- tpe_split.c ---------------------------------------------------------------------- */
/* qsort's order for ranked_t: by key, then trial number (Optuna's stable argsort). */
int space__tpe_cmp_ranked(const void *a, const void *b);
/* Chooses the rung and marks each trial's role (x->role); returns 1, 0 when no rung has
 * enough results yet (*most = the largest count), or -1 without memory (several objectives
 * or constraints). `self` is the trial being suggested. */
int space__tpe_choose_split(tpe_t *x, size_t self, split_t *sp, size_t *most);

/* ---- tpe_motpe.c ------------------------------------------------------------------------
 * The split with several objectives or constraints, Optuna 3.1's (tpe_int.h has the rules
 * the tests check: space__motpe_split, space__motpe_hssp, space__motpe_weights). Marks the
 * roles of the known trials other than self with a result at the rung (slot `rung`, the
 * others' roles are left as they are): ng of them good (the preset's rule for their number:
 * Optuna's default_gamma, BOHB's top_n_percent), the rest bad; with several objectives the
 * good ones' weights go to x->gwt. Sets sp's n_obs, n_good, n_infeasible and n_hssp. 0 or
 * SPACE_ENOMEM. */
int space__tpe_split_k(tpe_t *x, size_t self, size_t rung, size_t ng, split_t *sp);

/* ---- tpe_acquire.c -------------------------------------------------------------------- */
/* The optuna preset's suggestion for the split x->role holds: val[j] each modelled
 * parameter's value, xi[j] its internal one. With pool (the pool protocol: npool
 * candidates' internal values, nd each, and the scratch pool_* arrays grown to npool)
 * nothing is drawn: *chosen gets the candidate with the best acquisition, the sum over
 * parameters of log l - log g (the first on ties). 0, or SPACE_ENOMEM. */
int space__tpe_suggest_optuna(tpe_t *x, space__rng_t *rng, double *val, double *xi,
                              const double *pool, size_t npool, size_t *chosen);
/* The bohb preset's: 1 when it found one, 0 when BOHB falls back to a random
 * configuration; *rc = 0 or SPACE_ENOMEM. */
int space__tpe_suggest_bohb(tpe_t *x, space__rng_t *rng, double *val, double *xi, int *rc);
/* The bohb preset's choice among npool candidates (internal values, nd each): the one
 * minimising max(1e-32, g) / max(l, 1e-32), the first on ties. 1 with *chosen set, 0 when
 * BOHB falls back to random (a KDE needs more points than parameters); *rc = 0 or
 * SPACE_ENOMEM. */
int space__tpe_choose_bohb(tpe_t *x, const double *pool, size_t npool, size_t *chosen, int *rc);

#endif
