/* sim internals shared by table.c, curves.c and synth.c: the one struct behind sim_curves_t.
 * Not for use outside sim/ (sim.h is the API). */
#ifndef TUNE_SIM_INT_H
#define TUNE_SIM_INT_H

#include <stdarg.h>
#include <stdio.h>

#include "sim/sim.h"

struct sim_tconf {
    char *name;   /* the `trial` column, or NULL */
    size_t first; /* its first row */
    int64_t n;    /* rows (iterations) */
};

struct sim_synth {
    uint64_t seed;
    double noise, cross, diverge, time, time_spread;
    int64_t iters;
    double c[SIM_MAX_DIMS], w[SIM_MAX_DIMS]; /* the optimum and the weights, from the seed */
    int mode_max;
    char metric[128];
};

struct sim_curves {
    int synthetic;
    const struct space *sp; /* borrowed: lives longer than the source */
    size_t nparams;
    /* table */
    size_t nconf, nrows;
    struct sim_tconf *conf;
    char **lines; /* per row: the result line */
    size_t *lens;
    double *secs;
    double *tval; /* per row: the scheduler's time_attr (NAN where the row has none) */
    int *is_cat;  /* per parameter: compared as categories (choice, grid_search) */
    int *is_grid; /* per parameter: must match exactly */
    int *used;    /* per parameter: part of the distance (not a constant) */
    double *unit; /* nconf * nparams: numeric values in [0, 1] */
    double *num;  /* nconf * nparams: numeric values as recorded (the pool's configurations) */
    cJSON **cat;  /* nconf * nparams: categorical values */
    int64_t max_iters;
    /* synthetic */
    struct sim_synth syn;
    char buf[512];
};

/* synth.c: the seconds every iteration of a synthetic curve takes. */
double sim__synth_seconds(const sim_curves_t *c, const sim_curve_t *cv);
/* synth.c: a synthetic configuration's cost, its second objective (reported as "cost"). */
double sim__synth_cost(const sim_curves_t *c, const sim_curve_t *cv);
/* synth.c: sim_curves_lookup and sim_curve_result for the synthetic family (curves.c
 * hands them over when c->synthetic). */
int sim__synth_lookup(const sim_curves_t *c, const cJSON *config, sim_curve_t *out, char *err,
                      size_t errlen);
int sim__synth_result(sim_curves_t *c, const sim_curve_t *cv, int64_t it, const char **line,
                      size_t *len, double *seconds);
/* curves.c: the curve of a table's configuration `row` itself (distance 0). */
void sim__row_curve(const sim_curves_t *c, size_t row, sim_curve_t *out);

/* Writes the message into err (when given) and returns rc: how sim's files fail. */
static inline int sim__fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int sim__fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

#endif
