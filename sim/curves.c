/* sim/curves.c: answering the simulated trials from loaded curves: the recorded
 * configuration nearest a trial's (or the synthetic family's curve), and each iteration's
 * result line and seconds. Not for: reading or checking a table (table.c, csv.c) or
 * computing synthetic curves (synth.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "search/space.h"
#include "sim/sim_int.h"

/* ---- answering -------------------------------------------------------------------- */
size_t sim_curves_count(const sim_curves_t *c)
{
    return c->synthetic ? 0 : c->nconf;
}

int64_t sim_curves_max_iters(const sim_curves_t *c)
{
    return c->synthetic ? c->syn.iters : c->max_iters;
}

const char *sim_curves_row_name(const sim_curves_t *c, size_t row)
{
    if (c->synthetic || row >= c->nconf) return "synthetic";
    return c->conf[row].name ? c->conf[row].name : "";
}

int sim_curves_lookup(const sim_curves_t *c, const cJSON *config, sim_curve_t *out, char *err,
                      size_t errlen)
{
    if (c->synthetic) return sim__synth_lookup(c, config, out, err, errlen);
    size_t np = c->nparams;
    double qu[256];
    const cJSON *qv[256];
    if (np > 256) return sim__fail(err, errlen, SIM_EINVAL, "more than 256 parameters");
    size_t nused = 0;
    for (size_t p = 0; p < np; p++) {
        qv[p] = NULL;
        qu[p] = NAN;
        if (!c->used[p]) continue;
        nused++;
        const char *pn = space_param_name(c->sp, p);
        qv[p] = cJSON_GetObjectItemCaseSensitive(config, pn);
        if (!qv[p]) return sim__fail(err, errlen, SIM_EINVAL, "the configuration has no %s", pn);
        if (!c->is_cat[p] && space_param_unit(c->sp, p, qv[p], &qu[p]) != 0)
            return sim__fail(err, errlen, SIM_EINVAL, "the configuration's %s is not a value of it",
                             pn);
    }
    size_t best = (size_t)-1;
    double best_d = INFINITY;
    for (size_t ci = 0; ci < c->nconf; ci++) {
        double sum = 0;
        int skip = 0;
        for (size_t p = 0; p < np && !skip; p++) {
            if (!c->used[p]) continue;
            double d;
            if (c->is_cat[p]) {
                const cJSON *tv = c->cat[ci * np + p];
                d = tv ? space_param_distance(c->sp, p, tv, qv[p]) : 1;
                if (isnan(d)) d = 1;
                if (c->is_grid[p] && d != 0) skip = 1;
            } else {
                d = c->unit[ci * np + p] - qu[p];
            }
            sum += d * d;
        }
        if (!skip && sum < best_d) {
            best_d = sum;
            best = ci;
        }
    }
    if (best == (size_t)-1)
        return sim__fail(
            err, errlen, SIM_EINVAL,
            "no row of the table has this configuration's grid_search values (they must "
            "match exactly): record curves for them, or leave them out of space.json");
    memset(out, 0, sizeof *out);
    out->row = best;
    out->distance = nused ? sqrt(best_d / (double)nused) : 0;
    out->iters = c->conf[best].n;
    return SIM_OK;
}

void sim__row_curve(const sim_curves_t *c, size_t row, sim_curve_t *out)
{
    memset(out, 0, sizeof *out);
    out->row = row;
    out->distance = 0;
    out->iters = row < c->nconf ? c->conf[row].n : 0;
}

int64_t sim_curve_iters_to(const sim_curves_t *c, const sim_curve_t *cv, double t, int *ends_before)
{
    int64_t n = cv->iters;
    *ends_before = 0;
    if (!(t > 0)) return n;
    if (!c->synthetic && cv->row < c->nconf && n > 0) {
        const double *tv = c->tval + c->conf[cv->row].first;
        if (!isnan(tv[n - 1])) {
            for (int64_t i = 0; i < n; i++)
                if (tv[i] >= t) return i + 1;
            *ends_before = 1;
            return n;
        }
    }
    /* no time_attr to read: iterations */
    double it = ceil(t);
    if ((double)n > it) return (int64_t)it;
    *ends_before = (double)n < it;
    return n;
}

int sim_curve_result(sim_curves_t *c, const sim_curve_t *cv, int64_t it, const char **line,
                     size_t *len, double *seconds)
{
    if (c->synthetic) return sim__synth_result(c, cv, it, line, len, seconds);
    if (cv->row >= c->nconf || it < 1 || it > c->conf[cv->row].n) return 0;
    size_t r = c->conf[cv->row].first + (size_t)(it - 1);
    *line = c->lines[r];
    *len = c->lens[r];
    *seconds = c->secs[r];
    return 1;
}

double sim_curve_seconds(const sim_curves_t *c, const sim_curve_t *cv, int64_t it)
{
    if (c->synthetic) return it >= 1 && it <= c->syn.iters ? sim__synth_seconds(c, cv) : 0;
    if (cv->row >= c->nconf || it < 1 || it > c->conf[cv->row].n) return 0;
    return c->secs[c->conf[cv->row].first + (size_t)(it - 1)];
}
