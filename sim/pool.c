/* sim/pool.c: the pool protocol (docs/simulate.md): a table as a finite pool of
 * configurations, each trained at most once. It builds every row's configuration, hands
 * out the ones not taken yet and remembers which trial took which row. Not for: choosing
 * among them (the searcher's space_searcher_choose) or replaying the row (exec.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/space.h"
#include "sim/sim_int.h"

struct sim_pool {
    size_t n;
    cJSON **config;       /* per row: its configuration */
    const cJSON **unused; /* the configurations not taken, in file order */
    size_t *unused_row;   /* their rows */
    size_t nunused;
    size_t *row_of; /* per trial number: the row it took plus one, 0 for none */
    size_t nrow_of;
};

void sim_pool_free(sim_pool_t *p)
{
    if (!p) return;
    for (size_t r = 0; p->config && r < p->n; r++)
        cJSON_Delete(p->config[r]);
    free(p->config);
    free(p->unused);
    free(p->unused_row);
    free(p->row_of);
    free(p);
}

/* Row r's configuration: the space's parameters in declaration order, the table's values
 * for the ones it records and the constants from the space. */
static cJSON *row_config(const sim_curves_t *c, size_t r, const cJSON *base, char *err,
                         size_t errlen)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    for (size_t p = 0; p < c->nparams; p++) {
        const char *name = space_param_name(c->sp, p);
        cJSON *v;
        if (!c->used[p])
            v = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(base, name), 1);
        else if (c->is_cat[p])
            v = c->cat[r * c->nparams + p] ? cJSON_Duplicate(c->cat[r * c->nparams + p], 1) : NULL;
        else
            v = cJSON_CreateNumber(c->num[r * c->nparams + p]);
        double u;
        if (!v || (c->used[p] && space_param_unit(c->sp, p, v, &u) != 0) ||
            (c->used[p] && !c->is_cat[p] && isnan(c->num[r * c->nparams + p]))) {
            char *txt = v ? cJSON_PrintUnformatted(v) : NULL;
            sim__fail(err, errlen, SIM_EINVAL,
                      "the table's configuration %s has config/%s %s, which is not a value of "
                      "the space's %s: a pool replays configurations of the space only (widen "
                      "the space, or leave the row out)",
                      sim_curves_row_name(c, r)[0] ? sim_curves_row_name(c, r) : "(unnamed)", name,
                      txt ? txt : "(none)", name);
            free(txt);
            cJSON_Delete(v);
            cJSON_Delete(o);
            return NULL;
        }
        cJSON_AddItemToObject(o, name, v);
    }
    return o;
}

int sim_pool_new(const sim_curves_t *c, sim_pool_t **out, char *err, size_t errlen)
{
    if (c->synthetic)
        return sim__fail(err, errlen, SIM_EINVAL,
                         "--pool needs a table (--table or --from): the synthetic family has no "
                         "finite set of configurations");
    for (size_t p = 0; p < c->nparams; p++) {
        const char *kind = space_param_kind(c->sp, p);
        if (c->is_grid[p] || strcmp(kind, "object") == 0)
            return sim__fail(err, errlen, SIM_EINVAL,
                             "--pool: the space's %s is %s: a pool replays the table's rows as "
                             "whole configurations, so every parameter must be a plain "
                             "distribution (make it a choice)",
                             space_param_name(c->sp, p),
                             c->is_grid[p] ? "a grid_search" : "a nested space");
    }
    sim_pool_t *p = calloc(1, sizeof *p);
    cJSON *base = NULL;
    char e[512];
    if (!p) goto nomem;
    p->n = c->nconf;
    p->config = calloc(p->n + 1, sizeof *p->config);
    p->unused = calloc(p->n + 1, sizeof *p->unused);
    p->unused_row = calloc(p->n + 1, sizeof *p->unused_row);
    if (!p->config || !p->unused || !p->unused_row) goto nomem;
    /* the constants: the same in every trial's configuration */
    if (space_sample(c->sp, 0, &base, e, sizeof e) != 0) {
        sim_pool_free(p);
        return sim__fail(err, errlen, SIM_EINVAL, "--pool: %s", e);
    }
    for (size_t r = 0; r < p->n; r++) {
        p->config[r] = row_config(c, r, base, err, errlen);
        if (!p->config[r]) {
            cJSON_Delete(base);
            sim_pool_free(p);
            return SIM_EINVAL;
        }
        p->unused[r] = p->config[r];
        p->unused_row[r] = r;
    }
    cJSON_Delete(base);
    p->nunused = p->n;
    *out = p;
    return SIM_OK;
nomem:
    cJSON_Delete(base);
    sim_pool_free(p);
    return sim__fail(err, errlen, SIM_ENOMEM, "out of memory");
}

size_t sim_pool_size(const sim_pool_t *p)
{
    return p->n;
}

size_t sim_pool_taken(const sim_pool_t *p)
{
    return p->n - p->nunused;
}

size_t sim_pool_unused(sim_pool_t *p, const cJSON *const **configs)
{
    *configs = (const cJSON *const *)p->unused;
    return p->nunused;
}

int sim_pool_take(sim_pool_t *p, int64_t trial_no, size_t k)
{
    size_t row;
    if (trial_no < 0 || k >= p->nunused || sim_pool_row(p, trial_no, &row)) return SIM_EINVAL;
    if ((size_t)trial_no >= p->nrow_of) {
        size_t n = p->nrow_of ? p->nrow_of : 256;
        while (n <= (size_t)trial_no)
            n *= 2;
        size_t *ro = realloc(p->row_of, n * sizeof *ro);
        if (!ro) return SIM_ENOMEM;
        memset(ro + p->nrow_of, 0, (n - p->nrow_of) * sizeof *ro);
        p->row_of = ro;
        p->nrow_of = n;
    }
    p->row_of[trial_no] = p->unused_row[k] + 1;
    /* the rest keep their file order: the searcher sees the same list for the same past */
    memmove(p->unused + k, p->unused + k + 1, (p->nunused - k - 1) * sizeof *p->unused);
    memmove(p->unused_row + k, p->unused_row + k + 1, (p->nunused - k - 1) * sizeof *p->unused_row);
    p->nunused--;
    return SIM_OK;
}

int sim_pool_row(const sim_pool_t *p, int64_t trial_no, size_t *row)
{
    if (trial_no < 0 || (size_t)trial_no >= p->nrow_of || p->row_of[trial_no] == 0) return 0;
    *row = p->row_of[trial_no] - 1;
    return 1;
}
