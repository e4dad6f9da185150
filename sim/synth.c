/* sim/synth.c: the synthetic family of learning curves, computed from a configuration and
 * a seed (docs/simulate.md has the formula). It scales to millions of trials with nothing
 * recorded, and its knobs make the cases that trouble early stopping: noise, curves that
 * cross (worse configurations converge faster), and configurations that diverge to NaN.
 * Not for: tables of recorded curves (table.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/render.h"
#include "search/settings.h"
#include "search/space.h"
#include "sim/sim_int.h"

/* splitmix64's output function (Steele et al. 2014): integer-only, so the family is the
 * same on every machine. */
static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double unit_of(uint64_t z)
{
    return (double)(z >> 11) * 0x1.0p-53;
}

static uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* One spec value: "key=number". */
static int spec_number(const char *key, const char *val, double *out, char *err, size_t errlen)
{
    char *e;
    double v = strtod(val, &e);
    if (e == val || *e || !isfinite(v)) {
        snprintf(err, errlen, "synthetic spec: %s wants a number, got \"%s\"", key, val);
        return SIM_EINVAL;
    }
    *out = v;
    return 0;
}

/* The keys a synthetic result reports besides its loss (named by the first metric). */
static const char *const synth_keys[] = {"training_iteration", "time_this_iter_s", "time_total_s",
                                         "cost"};
#define NSYNTH_KEYS (sizeof synth_keys / sizeof *synth_keys)

/* Every metric and constrained key must be one the family reports, as a table must have a
 * column for each (table.c's check_reported): otherwise every trial would report none.
 * allow_missing_metric runs anyway, as in a real run. */
static int check_reported(const space_settings_t *set, const char *loss, char *err, size_t errlen)
{
    if (set->allow_missing_metric) return 0;
    const char *cand[NSYNTH_KEYS + 1] = {loss};
    for (size_t i = 0; i < NSYNTH_KEYS; i++)
        cand[i + 1] = synth_keys[i];
    size_t nkeys = set->nobjectives + set->nconstraints;
    for (size_t i = 0; i < nkeys; i++) {
        int is_metric = i < set->nobjectives;
        const char *key = is_metric ? set->metrics[i] : set->constraints[i - set->nobjectives].key;
        int found = 0;
        for (size_t j = 0; j <= NSYNTH_KEYS; j++)
            found |= strcmp(key, cand[j]) == 0;
        if (found) continue;
        const char *dym = space_suggest(key, cand, NSYNTH_KEYS + 1);
        snprintf(err, errlen,
                 "synthetic family: %s \"%s\" is not reported%s%s%s: the family reports its "
                 "loss under the first metric (\"%s\"), and training_iteration, "
                 "time_this_iter_s, time_total_s and cost (docs/simulate.md, \"Several "
                 "objectives\"). Fix the name in space.json (or set \"allow_missing_metric\": "
                 "true to run anyway)",
                 is_metric ? "the metric" : "the constrained key", key,
                 dym ? " (did you mean \"" : "", dym ? dym : "", dym ? "\"?)" : "", loss);
        return SIM_EINVAL;
    }
    return 0;
}

int sim_synth_open(const char *spec, const struct space *sp, sim_curves_t **out, char *err,
                   size_t errlen)
{
    struct sim_synth s = {
        .noise = 0.02, .cross = 0.5, .diverge = 0.05, .time = 1.0, .time_spread = 0.5};
    const space_settings_t *set = space_settings(sp);
    s.iters = set->sched.type != SPACE_SCHED_FIFO && set->sched.max_t > 0
                  ? (int64_t)ceil(set->sched.max_t)
                  : 100;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec ? spec : "");
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        if (!*tok) continue;
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "synthetic spec: \"%s\" is not key=value", tok);
            return SIM_EINVAL;
        }
        *eq = 0;
        const char *val = eq + 1;
        double v;
        int rc = spec_number(tok, val, &v, err, errlen);
        if (rc) return rc;
        if (strcmp(tok, "seed") == 0 && v >= 0 && v == floor(v) && v < 0x1.0p64)
            s.seed = (uint64_t)v;
        else if (strcmp(tok, "noise") == 0 && v >= 0)
            s.noise = v;
        else if (strcmp(tok, "cross") == 0 && v >= 0)
            s.cross = v;
        else if (strcmp(tok, "diverge") == 0 && v >= 0 && v <= 1)
            s.diverge = v;
        else if (strcmp(tok, "iters") == 0 && v >= 1 && v == floor(v) && v <= 1e9)
            s.iters = (int64_t)v;
        else if (strcmp(tok, "time") == 0 && v > 0)
            s.time = v;
        else if (strcmp(tok, "time_spread") == 0 && v >= 0 && v < 2)
            s.time_spread = v;
        else {
            snprintf(err, errlen,
                     "synthetic spec: %s=%s is not allowed (keys: seed >= 0, noise >= 0, "
                     "cross >= 0, diverge in [0, 1], iters >= 1, time > 0, time_spread in [0, 2))",
                     tok, val);
            return SIM_EINVAL;
        }
    }
    /* time_this_iter_s is time * (1 + time_spread (u - 0.5)), u in [0, 1] */
    double longest = s.time * (1 + s.time_spread / 2);
    if (!(longest <= SIM_MAX_ITER_S)) {
        snprintf(err, errlen,
                 "synthetic spec: time=%g with time_spread=%g makes iterations of up to %.4g s, "
                 "more than %.0f (365 days): an iteration longer than a year is taken for a "
                 "mistake",
                 s.time, s.time_spread, longest, SIM_MAX_ITER_S);
        return SIM_EINVAL;
    }
    uint64_t z = s.seed;
    for (int i = 0; i < SIM_MAX_DIMS; i++) {
        s.c[i] = 0.2 + 0.6 * unit_of(mix64(z++));
        s.w[i] = 0.5 + 1.5 * unit_of(mix64(z++));
    }
    s.mode_max = set->mode == SPACE_MODE_MAX;
    snprintf(s.metric, sizeof s.metric, "%s", set->metric ? set->metric : "loss");
    for (size_t i = 0; i < NSYNTH_KEYS; i++)
        if (strcmp(s.metric, synth_keys[i]) == 0) {
            snprintf(err, errlen,
                     "synthetic family: the first metric \"%s\" is one of the keys the family "
                     "reports besides its loss (training_iteration, time_this_iter_s, "
                     "time_total_s, cost): the loss is reported under the first metric, so "
                     "name it something else (\"metric\": [\"loss\", \"%s\"])",
                     s.metric, s.metric);
            return SIM_EINVAL;
        }
    int rc = check_reported(set, s.metric, err, errlen);
    if (rc) return rc;
    sim_curves_t *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return SIM_ENOMEM;
    }
    c->synthetic = 1;
    c->sp = sp;
    c->nparams = space_num_params(sp);
    c->syn = s;
    *out = c;
    return SIM_OK;
}

int sim__synth_lookup(const sim_curves_t *c, const cJSON *config, sim_curve_t *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    uint64_t key = c->syn.seed;
    for (size_t p = 0; p < c->nparams && out->dims < SIM_MAX_DIMS; p++) {
        if (strcmp(space_param_kind(c->sp, p), "constant") == 0) continue;
        const char *pn = space_param_name(c->sp, p);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, pn);
        double u;
        if (!v || space_param_unit(c->sp, p, v, &u) != 0) {
            snprintf(err, errlen, "the configuration's %s is missing or not a value of it", pn);
            return SIM_EINVAL;
        }
        out->u[out->dims++] = u;
        key = mix64(key ^ bits_of(u));
    }
    out->key = key;
    out->iters = c->syn.iters;
    /* Every iteration of the curve takes the same time, and the cost is the configuration's:
     * printed here once, not in each of its result lines (the shortest exact form costs a
     * few snprintf and strtod calls). */
    space_format_number(sim__synth_seconds(c, out), out->secs_text);
    space_format_number(sim__synth_cost(c, out), out->cost_text);
    return SIM_OK;
}

/* The second objective: the weighted mean of the configuration's u_i, with the loss's own
 * weights. Each u_i lowers the loss up to its optimum c_i and raises the cost all the way,
 * so below the optimum the two conflict (a bigger model is better and dearer), and the
 * Pareto set is the segment u_i = max(0, c_i - s), s >= 0 (docs/simulate.md). */
double sim__synth_cost(const sim_curves_t *c, const sim_curve_t *cv)
{
    double num = 0, wsum = 0;
    for (int i = 0; i < cv->dims; i++) {
        num += c->syn.w[i] * cv->u[i];
        wsum += c->syn.w[i];
    }
    return wsum > 0 ? num / wsum : 0;
}

/* The loss of curve cv at iteration it (NaN once it diverged). */
static double synth_loss(const struct sim_synth *s, const sim_curve_t *cv, int64_t it)
{
    double q = 0, wsum = 0;
    for (int i = 0; i < cv->dims; i++) {
        double d = cv->u[i] - s->c[i];
        q += s->w[i] * d * d;
        wsum += s->w[i];
    }
    if (wsum > 0) q /= wsum;
    if (cv->dims > 0 && cv->u[0] > 1 - s->diverge) {
        int64_t from = 1 + (int64_t)(mix64(cv->key ^ 0xd1e5ull) % 3);
        if (it >= from) return NAN;
    }
    double final = 0.05 + 2 * q;
    /* Worse configurations start closer to where they end and settle sooner, so with
     * cross > 0 they lead early and are overtaken later: the curves cross. */
    double gap = 2 * exp(-s->cross * 4 * q);
    double alpha = 0.5 * (1 + s->cross * 4 * q);
    double loss = final + gap * pow((double)it, -alpha);
    if (s->noise > 0) {
        uint64_t z = mix64(cv->key ^ mix64((uint64_t)it));
        double u1 = 1.0 - unit_of(mix64(z)), u2 = unit_of(mix64(z + 1));
        loss += s->noise * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
    }
    return loss;
}

/* The seconds each iteration of curve cv takes (the same for all of its iterations). */
double sim__synth_seconds(const sim_curves_t *c, const sim_curve_t *cv)
{
    double secs = c->syn.time;
    if (cv->dims > 0) secs *= 1 + c->syn.time_spread * (cv->u[cv->dims - 1] - 0.5);
    return secs;
}

int sim__synth_result(sim_curves_t *c, const sim_curve_t *cv, int64_t it, const char **line,
                      size_t *len, double *seconds)
{
    const struct sim_synth *s = &c->syn;
    if (it < 1 || it > s->iters) return 0;
    double loss = synth_loss(s, cv, it);
    double v = s->mode_max ? 1 - loss : loss;
    double secs = sim__synth_seconds(c, cv);
    char vb[32], sb[32], cb[32], tb[32];
    const char *st = cv->secs_text[0] ? cv->secs_text : space_format_number(secs, sb);
    const char *ct =
        cv->cost_text[0] ? cv->cost_text : space_format_number(sim__synth_cost(c, cv), cb);
    /* time_total_s: the seconds so far, as a Ray trial reports them (every iteration takes
     * secs); cost: the configuration's (sim__synth_cost). docs/simulate.md, "Several
     * objectives". */
    int k = snprintf(c->buf, sizeof c->buf,
                     "{\"training_iteration\": %lld, \"%s\": %s, \"time_this_iter_s\": %s, "
                     "\"time_total_s\": %s, \"cost\": %s}",
                     (long long)it, s->metric, isnan(v) ? "NaN" : space_format_number(v, vb), st,
                     space_format_number(secs * (double)it, tb), ct);
    *line = c->buf;
    *len = k > 0 && (size_t)k < sizeof c->buf ? (size_t)k : strlen(c->buf);
    *seconds = secs;
    return 1;
}
