/* search/settings.c: the settings sections of space.json (everything but "space",
 * "command" and "points_to_evaluate"): the experiment's name, resources, scheduler,
 * executor, run limits, reporter and "search", with defaults filled in and every message
 * located, and which of them several objectives allow; a result's objective values and
 * constraint violation; and the resolved settings as JSON. Not for: the parameters
 * (parse.c), how "metric", "mode" and "constraints" are written (parse_objectives.c), the
 * command's placeholders (placeholders.c) or what the searchers do with their settings
 * (searcher.c). */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/parse_int.h"
#include "search/render.h"
#include "search/searcher_int.h"

/* ---- space_check_name ---------------------------------------------------------------- */
int space_check_name(const char *name, char *err, size_t errlen)
{
    char q[80];
    if (!name || !*name) {
        if (err && errlen) snprintf(err, errlen, "experiment name is empty");
        return SPACE_EINVAL;
    }
    size_t n = strlen(name);
    if (n > 100) {
        if (err && errlen)
            snprintf(err, errlen, "experiment name %s is longer than 100 characters",
                     space__parse_quoted(name, q, sizeof q));
        return SPACE_EINVAL;
    }
    /* Every command takes the name as an argument: "-rf" would be read as an option. */
    if (name[0] == '-') {
        if (err && errlen)
            snprintf(err, errlen,
                     "experiment name %s begins with '-', which commands would read as an "
                     "option: start it with a letter or digit",
                     space__parse_quoted(name, q, sizeof q));
        return SPACE_EINVAL;
    }
    /* The name becomes a folder under tune_results/: "." and ".." would escape it. */
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        if (err && errlen) snprintf(err, errlen, "experiment name \"%s\" is not allowed", name);
        return SPACE_EINVAL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)name[i];
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '_' || ch == '.' || ch == '-')
            continue;
        char what[16];
        if (ch >= 0x20 && ch < 0x7f)
            snprintf(what, sizeof what, "'%c'", ch);
        else
            snprintf(what, sizeof what, "byte 0x%02x", ch);
        if (err && errlen)
            snprintf(err, errlen,
                     "experiment name %s: %s is not allowed (use letters, digits, '_', '.' "
                     "and '-')",
                     space__parse_quoted(name, q, sizeof q), what);
        return SPACE_EINVAL;
    }
    return SPACE_OK;
}

/* ---- sections ------------------------------------------------------------------------- */
static const char *const sched_types[SPACE_NSCHED] = SPACE_SCHED_NAMES;
static const char *const sched_keys_all[] = {"type",
                                             "time_attr",
                                             "max_t",
                                             "grace_period",
                                             "reduction_factor",
                                             "brackets",
                                             "min_samples_required",
                                             "stop_last_trials",
                                             "variant",
                                             "hard_stop",
                                             "perturbation_interval",
                                             "quantile_fraction",
                                             "resample_probability",
                                             "perturbation_factors",
                                             "burn_in_period",
                                             "hyperparam_mutations",
                                             "keep_checkpoints"};

/* Which scheduler keys apply to which policy: fifo has no cut-offs, median takes no
 * reduction factor or brackets (Ray Tune's MedianStoppingRule has neither), pbt stops
 * nothing early (no grace period); its max_t is optional (none: trials end by themselves
 * or by "stop"; given: a trial completes there and is never exploited at its end). */
static int sched_key_applies(space_sched_type_t t, const char *key)
{
    static const char *const pbt_keys[] = {"perturbation_interval", "quantile_fraction",
                                           "resample_probability",  "perturbation_factors",
                                           "burn_in_period",        "hyperparam_mutations",
                                           "keep_checkpoints"};
    if (strcmp(key, "type") == 0 || strcmp(key, "time_attr") == 0) return 1;
    if (t == SPACE_SCHED_FIFO) return 0;
    for (size_t i = 0; i < sizeof pbt_keys / sizeof pbt_keys[0]; i++)
        if (strcmp(key, pbt_keys[i]) == 0) return t == SPACE_SCHED_PBT;
    if (t == SPACE_SCHED_PBT) return strcmp(key, "max_t") == 0;
    /* hyperband: Ray Tune's HyperBandScheduler takes these three (its brackets follow) */
    if (t == SPACE_SCHED_HYPERBAND)
        return strcmp(key, "max_t") == 0 || strcmp(key, "reduction_factor") == 0 ||
               strcmp(key, "stop_last_trials") == 0;
    if (strcmp(key, "max_t") == 0 || strcmp(key, "grace_period") == 0) return 1;
    if (t == SPACE_SCHED_ASHA)
        return strcmp(key, "reduction_factor") == 0 || strcmp(key, "brackets") == 0 ||
               strcmp(key, "stop_last_trials") == 0 || strcmp(key, "variant") == 0;
    return strcmp(key, "min_samples_required") == 0 || strcmp(key, "hard_stop") == 0;
}

/* Population Based Training's options (Ray Tune's PopulationBasedTraining arguments);
 * hyperparam_mutations is read with the space (parse_mutations), here only counted. */
static int parse_pbt(struct space__parse_ctx *c, space_sched_opts_t *o, const sj_node_t *n)
{
    const sj_node_t *v;
    int rc;
    if ((v = space__json_get(n, "perturbation_interval")) &&
        (rc = space__parse_get_double(
             c, v, 0, 1, &o->perturbation_interval,
             "\"perturbation_interval\" must be a number > 0 (in time_attr units)")))
        return rc;
    if ((v = space__json_get(n, "quantile_fraction")) &&
        ((rc = space__parse_get_double(
              c, v, 0, 0, &o->quantile_fraction,
              "\"quantile_fraction\" must be a number between 0 and 0.5")) ||
         o->quantile_fraction > 0.5))
        return rc ? rc
                  : space__parse_at(c, v->off,
                                    "\"quantile_fraction\" must be a number between 0 and 0.5");
    if ((v = space__json_get(n, "resample_probability")) &&
        ((rc = space__parse_get_double(
              c, v, 0, 0, &o->resample_probability,
              "\"resample_probability\" must be a number between 0 and 1")) ||
         o->resample_probability > 1))
        return rc ? rc
                  : space__parse_at(c, v->off,
                                    "\"resample_probability\" must be a number between 0 and 1");
    if ((v = space__json_get(n, "burn_in_period")) &&
        (rc = space__parse_get_double(
             c, v, 0, 0, &o->burn_in_period,
             "\"burn_in_period\" must be a number >= 0 (in time_attr units)")))
        return rc;
    long long k = 0;
    if ((v = space__json_get(n, "keep_checkpoints"))) {
        if ((rc = space__parse_get_int(
                 c, v, 1, 1000000, &k,
                 "\"keep_checkpoints\" must be an integer >= 1 (checkpoints kept per "
                 "trial)")))
            return rc;
        o->keep_checkpoints = (int)k;
    }
    if ((v = space__json_get(n, "perturbation_factors"))) {
        const char *msg = "\"perturbation_factors\" must be a list of 1 to 8 numbers > 0, such "
                          "as [1.2, 0.8]";
        if (v->type != SJ_ARRAY || v->n < 1 || v->n > 8)
            return space__parse_at(c, v->off, "%s", msg);
        o->nfactors = 0;
        for (const sj_node_t *e = v->child; e; e = e->next)
            if ((rc = space__parse_get_double(c, e, 0, 1, &o->perturbation_factors[o->nfactors++],
                                              msg)))
                return rc;
    }
    if ((v = space__json_get(n, "hyperparam_mutations"))) {
        if (v->type != SJ_OBJECT || v->n == 0)
            return space__parse_at(
                c, v->off,
                "\"hyperparam_mutations\" must be an object of parameter names, each a "
                "distribution or a list of values, such as {\"lr\": {\"loguniform\": "
                "[0.0001, 0.1]}, \"batch\": [32, 64, 128]}");
        o->nmutations = (int)v->n;
    }
    return 0;
}

static int parse_scheduler(struct space__parse_ctx *c, space_sched_opts_t *o, const sj_node_t *n)
{
    o->type = SPACE_SCHED_FIFO;
    snprintf(o->time_attr, sizeof o->time_attr, "training_iteration");
    o->max_t = 100;
    o->grace_period = 1;
    o->reduction_factor = 4;
    o->brackets = 1;
    o->min_samples_required = 3;
    o->stop_last_trials = 1;
    o->promotion = SPACE_ASHA_STOPPING;
    o->hard_stop = 1;
    o->perturbation_interval = 60;
    o->quantile_fraction = 0.25;
    o->resample_probability = 0.25;
    o->perturbation_factors[0] = 1.2;
    o->perturbation_factors[1] = 0.8;
    o->nfactors = 2;
    o->burn_in_period = 0;
    o->keep_checkpoints = 2;
    o->nmutations = 0;
    if (!n) return 0;
    if (n->type != SJ_OBJECT) return space__parse_at(c, n->off, "\"scheduler\" must be an object");
    int rc = space__parse_check_keys(c, n, sched_keys_all,
                                     sizeof sched_keys_all / sizeof sched_keys_all[0], "scheduler");
    if (rc) return rc;
    const sj_node_t *v;
    if ((v = space__json_get(n, "type"))) {
        if (v->type != SJ_STRING)
            return space__parse_at(
                c, v->off,
                "scheduler \"type\" must be \"fifo\", \"asha\", \"median\", \"pbt\" or "
                "\"hyperband\"");
        size_t i = 0;
        while (i < SPACE_NSCHED && strcmp(v->str, sched_types[i]) != 0)
            i++;
        if (i == SPACE_NSCHED) {
            char q[80], dym[128];
            space__parse_did_you_mean(v->str, sched_types, SPACE_NSCHED, dym, sizeof dym);
            return space__parse_at(
                c, v->off,
                "unknown scheduler type %s%s; use \"fifo\", \"asha\", \"median\", \"pbt\" "
                "or \"hyperband\"",
                space__parse_quoted(v->str, q, sizeof q), dym);
        }
        o->type = (space_sched_type_t)i;
    }
    for (const sj_node_t *m = n->child; m; m = m->next)
        if (!sched_key_applies(o->type, m->key))
            return space__parse_at(c, m->key_off, "\"%s\" does not apply to the \"%s\" scheduler",
                                   m->key, sched_types[o->type]);
    if ((v = space__json_get(n, "time_attr"))) {
        if (v->type != SJ_STRING || !*v->str || strlen(v->str) >= sizeof o->time_attr)
            return space__parse_at(c, v->off,
                                   "\"time_attr\" must be a non-empty string of at most %zu "
                                   "characters",
                                   sizeof o->time_attr - 1);
        snprintf(o->time_attr, sizeof o->time_attr, "%s", v->str);
    }
    /* pbt has no max_t unless one is given (0: none) */
    if (o->type == SPACE_SCHED_PBT) o->max_t = 0;
    /* hyperband: Ray Tune's HyperBandScheduler defaults (max_t 81, reduction_factor 3) */
    if (o->type == SPACE_SCHED_HYPERBAND) {
        o->max_t = 81;
        o->reduction_factor = 3;
    }
    if ((v = space__json_get(n, "max_t")) &&
        (rc = space__parse_get_double(c, v, 0, 1, &o->max_t, "\"max_t\" must be a number > 0")))
        return rc;
    if (v && o->type == SPACE_SCHED_HYPERBAND && o->max_t < 1)
        return space__parse_at(
            c, v->off,
            "hyperband \"max_t\" must be a number >= 1 (its first bracket trains "
            "int(max_t) units)");
    /* The median rule's grace period may be 0 (Ray's MedianStoppingRule takes it, and its
     * tests use it); asha's is its first rung, which must be above 0. */
    const sj_node_t *gp = space__json_get(n, "grace_period");
    int median = o->type == SPACE_SCHED_MEDIAN;
    if (gp && (rc = space__parse_get_double(c, gp, 0, !median, &o->grace_period,
                                            median ? "\"grace_period\" must be a number >= 0"
                                                   : "\"grace_period\" must be a number > 0")))
        return rc;
    if ((v = space__json_get(n, "reduction_factor")) &&
        (rc = space__parse_get_double(c, v, 1, 1, &o->reduction_factor,
                                      "\"reduction_factor\" must be a number > 1")))
        return rc;
    long long k = 0;
    if ((v = space__json_get(n, "brackets"))) {
        if ((rc = space__parse_get_int(c, v, 1, 1000, &k, "\"brackets\" must be an integer >= 1")))
            return rc;
        o->brackets = (int)k;
    }
    if ((v = space__json_get(n, "min_samples_required"))) {
        if ((rc = space__parse_get_int(c, v, 1, INT_MAX, &k,
                                       "\"min_samples_required\" must be an integer >= 1")))
            return rc;
        o->min_samples_required = (int)k;
    }
    if ((v = space__json_get(n, "stop_last_trials"))) {
        if (v->type != SJ_TRUE && v->type != SJ_FALSE)
            return space__parse_at(c, v->off, "\"stop_last_trials\" must be true or false");
        o->stop_last_trials = v->type == SJ_TRUE;
    }
    if ((v = space__json_get(n, "variant"))) {
        static const char *const variants[] = {"stopping", "promotion", "eager_promotion"};
        int found = -1;
        for (int i = 0; v->type == SJ_STRING && i < 3; i++)
            if (strcmp(v->str, variants[i]) == 0) found = i;
        if (found < 0)
            return space__parse_at(
                c, v->off,
                "asha \"variant\" must be \"stopping\" (stop trials below a rung's cutoff, "
                "the default), \"promotion\" (pause at each rung, promote the best) or "
                "\"eager_promotion\" (promotion, but a rung with fewer than reduction_factor "
                "results promotes its best at once)");
        o->promotion = found;
    }
    if ((v = space__json_get(n, "hard_stop"))) {
        if (v->type != SJ_TRUE && v->type != SJ_FALSE)
            return space__parse_at(c, v->off, "\"hard_stop\" must be true or false");
        o->hard_stop = v->type == SJ_TRUE;
    }
    if ((rc = parse_pbt(c, o, n))) return rc;
    if (o->type != SPACE_SCHED_FIFO && o->type != SPACE_SCHED_PBT &&
        o->type != SPACE_SCHED_HYPERBAND && o->grace_period > o->max_t) {
        char a[32], b[32];
        const sj_node_t *where = gp ? gp : space__json_get(n, "max_t");
        return space__parse_at(
            c, where->off, "\"grace_period\" (%s) must not exceed \"max_t\" (%s)",
            space_format_number(o->grace_period, a), space_format_number(o->max_t, b));
    }
    return 0;
}

static int parse_executor(struct space__parse_ctx *c, space_exec_opts_t *o, const sj_node_t *n)
{
    static const char *const keys[] = {"type", "srun_args", "allocation"};
    static const char *const types[] = {"local", "slurm"};
    o->type = SPACE_EXEC_LOCAL;
    if (!n) return 0;
    if (n->type != SJ_OBJECT) return space__parse_at(c, n->off, "\"executor\" must be an object");
    int rc = space__parse_check_keys(c, n, keys, 3, "executor");
    if (rc) return rc;
    const sj_node_t *v;
    if ((v = space__json_get(n, "type"))) {
        if (v->type != SJ_STRING)
            return space__parse_at(c, v->off, "executor \"type\" must be \"local\" or \"slurm\"");
        if (strcmp(v->str, "slurm") == 0) {
            o->type = SPACE_EXEC_SLURM;
        } else if (strcmp(v->str, "local") != 0) {
            char q[80], dym[128];
            space__parse_did_you_mean(v->str, types, 2, dym, sizeof dym);
            return space__parse_at(c, v->off,
                                   "unknown executor type %s%s; use \"local\" or \"slurm\"",
                                   space__parse_quoted(v->str, q, sizeof q), dym);
        }
    }
    for (const sj_node_t *m = n->child; m; m = m->next)
        if (o->type == SPACE_EXEC_LOCAL && strcmp(m->key, "type") != 0)
            return space__parse_at(c, m->key_off, "\"%s\" applies only to the \"slurm\" executor",
                                   m->key);
    if ((v = space__json_get(n, "srun_args"))) {
        if (v->type != SJ_ARRAY)
            return space__parse_at(c, v->off, "\"srun_args\" must be an array of strings");
        if (v->n > 0 && (rc = space__parse_str_array(c, v, "srun_args", &o->srun_args, NULL)))
            return rc;
    }
    if ((v = space__json_get(n, "allocation"))) {
        if (v->type == SJ_STRING && *v->str) {
            if (space__parse_dup_str(&o->allocation, v->str, c->err, c->errlen))
                return SPACE_ENOMEM;
        } else if (v->type == SJ_NUMBER && v->is_int && v->num >= 0) {
            if (space__parse_dup_str(&o->allocation, v->raw, c->err, c->errlen))
                return SPACE_ENOMEM;
        } else {
            return space__parse_at(
                c, v->off, "\"allocation\" must be a Slurm job id (a string or a whole number)");
        }
    }
    return 0;
}

static int parse_resources(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *n)
{
    static const char *const keys[] = {"gpus_per_trial", "cpus_per_trial"};
    s->gpus_per_trial = 0;
    s->cpus_per_trial = 1;
    if (!n) return 0;
    if (n->type != SJ_OBJECT) return space__parse_at(c, n->off, "\"resources\" must be an object");
    int rc = space__parse_check_keys(c, n, keys, 2, "resources");
    if (rc) return rc;
    const sj_node_t *v;
    if ((v = space__json_get(n, "gpus_per_trial"))) {
        /* Whole GPUs, or a 1/k slice so that k trials share one GPU evenly; anything else
         * (0.3) would leave a remainder no trial can use. 1/3 written as 0.333333333 is
         * accepted within 1e-9 and kept as the exact 1/3. */
        const char *msg = "\"gpus_per_trial\" must be 0, a whole number, or 1/k for an integer "
                          "k (0.5, 0.25, ...)";
        if (v->type != SJ_NUMBER || v->num < 0 || v->num > 1e6)
            return space__parse_at(c, v->off, "%s", msg);
        double g = v->num;
        if (g >= 1) {
            if (fabs(g - nearbyint(g)) > 1e-9) return space__parse_at(c, v->off, "%s", msg);
            g = nearbyint(g);
        } else if (g > 0) {
            double k = nearbyint(1 / g);
            if (fabs(g - 1 / k) > 1e-9) return space__parse_at(c, v->off, "%s", msg);
            g = 1 / k;
        }
        s->gpus_per_trial = g;
    }
    long long k = 0;
    if ((v = space__json_get(n, "cpus_per_trial"))) {
        if ((rc = space__parse_get_int(c, v, 1, 1 << 20, &k,
                                       "\"cpus_per_trial\" must be an integer >= 1")))
            return rc;
        s->cpus_per_trial = (int)k;
    }
    return 0;
}

/* "stop", "fail_fast", "allow_missing_metric", "stop_experiment_on_target", "reporter":
 * when a run ends or speaks up (Ray Tune's stop= / fail_fast / CLIReporter). */
static int parse_run_limits(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *root)
{
    const sj_node_t *v;
    int rc;
    s->fail_fast = 3;
    if ((v = space__json_get(root, "fail_fast"))) {
        long long k = 0;
        if (v->type == SJ_TRUE || v->type == SJ_FALSE)
            k = v->type == SJ_TRUE;
        else if ((rc = space__parse_get_int(
                      c, v, 0, INT_MAX, &k,
                      "\"fail_fast\" must be a non-negative integer (how many identical "
                      "early failures stop the experiment; 0 or false: never) or true")))
            return rc;
        s->fail_fast = (int)k;
    }
    if ((rc = space__parse_get_bool(c, root, "allow_missing_metric", 0, &s->allow_missing_metric)))
        return rc;
    if ((rc = space__parse_get_bool(c, root, "stop_experiment_on_target", 0,
                                    &s->stop_experiment_on_target)))
        return rc;
    if ((v = space__json_get(root, "stop"))) {
        if (v->type != SJ_OBJECT)
            return space__parse_at(
                c, v->off,
                "\"stop\" must be an object of criteria such as {\"val_accuracy\": 0.98, "
                "\"training_iteration\": 50}");
        if (v->n > SPACE_MAX_STOP)
            return space__parse_at(c, v->off, "\"stop\" takes at most %d criteria", SPACE_MAX_STOP);
        s->stop = calloc(v->n ? v->n : 1, sizeof *s->stop);
        if (!s->stop) return space__parse_nomem(c->err, c->errlen);
        for (const sj_node_t *m = v->child; m; m = m->next) {
            if (m->type != SJ_NUMBER)
                return space__parse_at(
                    c, m->off, "stop criterion \"%s\" must be a number (the target), not %s",
                    m->key, space__parse_type_name(m));
            if (!*m->key)
                return space__parse_at(c, m->key_off, "a stop criterion needs a result key");
            if (space__parse_dup_str(&s->stop[s->nstop].key, m->key, c->err, c->errlen))
                return SPACE_ENOMEM;
            s->stop[s->nstop++].target = m->num;
        }
    }
    if (s->stop_experiment_on_target && s->nobjectives > 1)
        /* One target on one metric says "good enough"; with several objectives a trial
         * that reaches one target may be poor on the others, and which trade-off is good
         * enough is what the Pareto front is for. "stop" targets still end each trial. */
        return space__parse_at(
            c, space__json_get(root, "stop_experiment_on_target")->off,
            "\"stop_experiment_on_target\" takes one objective, and \"metric\" lists %zu: "
            "no single target says a trade-off is good enough. Remove it (\"stop\" targets "
            "still end each trial that reaches one; \"num_samples\" or \"time_budget_s\" "
            "end the run)",
            s->nobjectives);
    if (s->stop_experiment_on_target) {
        int has_metric_target = 0;
        for (size_t i = 0; i < s->nstop; i++)
            has_metric_target |= s->metric && strcmp(s->stop[i].key, s->metric) == 0;
        if (!has_metric_target)
            return space__parse_at_path(
                c, "stop_experiment_on_target",
                "needs a \"stop\" target for the experiment's metric%s%s%s (e.g. "
                "\"stop\": {\"%s\": ...})",
                s->metric ? " \"" : "", s->metric ? s->metric : "", s->metric ? "\"" : "",
                s->metric ? s->metric : "val_accuracy");
    }
    if ((v = space__json_get(root, "reporter"))) {
        static const char *const keys[] = {"metric_columns", "parameter_columns"};
        if (v->type != SJ_OBJECT)
            return space__parse_at(c, v->off,
                                   "\"reporter\" must be an object: {\"metric_columns\": [...], "
                                   "\"parameter_columns\": [...]}");
        if ((rc = space__parse_check_keys(c, v, keys, 2, "reporter"))) return rc;
        const sj_node_t *a;
        if ((a = space__json_get(v, "metric_columns"))) {
            if (a->type != SJ_ARRAY)
                return space__parse_at(c, a->off,
                                       "\"metric_columns\" must be an array of result keys");
            if (a->n > SPACE_MAX_COLUMNS)
                return space__parse_at(c, a->off, "\"metric_columns\" takes at most %d keys",
                                       SPACE_MAX_COLUMNS);
            if ((rc = space__parse_str_array(c, a, "metric_columns", &s->metric_columns, NULL)))
                return rc;
        }
        if ((a = space__json_get(v, "parameter_columns"))) {
            if (a->type != SJ_ARRAY)
                return space__parse_at(c, a->off,
                                       "\"parameter_columns\" must be an array of parameter names");
            if ((rc = space__parse_str_array(c, a, "parameter_columns", &s->parameter_columns,
                                             NULL)))
                return rc;
        }
    }
    return 0;
}

/* ---- the searcher: "search" ------------------------------------------------------------ */
static const char *const search_presets[] = {"optuna", "bohb"};

/* "search": {"type": "random" | "tpe", "preset": "optuna" | "bohb"} (docs/search.md). The
 * types are the names in searcher.c's table; each searcher's own keys are read here. */
static int parse_search(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *n)
{
    static const char *const keys[] = {"type", "preset", "pool"};
    s->search = SPACE_SEARCH_RANDOM;
    s->search_preset = SPACE_TPE_OPTUNA;
    s->search_pool = 0;
    if (!n) return 0;
    if (n->type != SJ_OBJECT)
        return space__parse_at(c, n->off, "\"search\" must be an object, e.g. {\"type\": \"tpe\"}");
    int rc = space__parse_check_keys(c, n, keys, 3, "search");
    if (rc) return rc;
    const sj_node_t *v;
    char q[80], dym[128], list[256];
    if ((v = space__json_get(n, "type"))) {
        if (v->type != SJ_STRING)
            return space__parse_at(c, v->off, "search \"type\" must be %s",
                                   space__searcher_list(list, sizeof list, 1));
        int t = space__searcher_find(v->str);
        if (t < 0) {
            const char *types[16];
            size_t nt = space__searcher_names(types, 16);
            space__parse_did_you_mean(v->str, types, nt < 16 ? nt : 16, dym, sizeof dym);
            return space__parse_at(c, v->off, "unknown search type %s%s; use %s",
                                   space__parse_quoted(v->str, q, sizeof q), dym,
                                   space__searcher_list(list, sizeof list, 1));
        }
        s->search = (space_search_type_t)t;
    }
    if ((v = space__json_get(n, "preset"))) {
        if (s->search != SPACE_SEARCH_TPE)
            return space__parse_at(
                c, v->key_off,
                "\"preset\" applies only to \"type\": \"tpe\" (random search has none)");
        if (v->type != SJ_STRING)
            return space__parse_at(c, v->off, "search \"preset\" must be \"optuna\" or \"bohb\"");
        if (strcmp(v->str, "bohb") == 0) {
            s->search_preset = SPACE_TPE_BOHB;
        } else if (strcmp(v->str, "optuna") != 0) {
            space__parse_did_you_mean(v->str, search_presets, 2, dym, sizeof dym);
            return space__parse_at(c, v->off, "unknown TPE preset %s%s; use \"optuna\" or \"bohb\"",
                                   space__parse_quoted(v->str, q, sizeof q), dym);
        }
    }
    /* experimental (issue 29): how TPE chooses among a table's unused rows in
     * `tune simulate --pool` ("score" or "propose"), and two switches of its model that the
     * bench compares ("+steps", "+startup10"): docs/search.md */
    if ((v = space__json_get(n, "pool"))) {
        if (s->search != SPACE_SEARCH_TPE)
            return space__parse_at(c, v->key_off,
                                   "\"pool\" applies only to \"type\": \"tpe\" (random search "
                                   "takes a uniform unused row)");
        static const char *const toks[] = {"score", "propose", "steps", "startup10"};
        static const int bits[] = {SPACE_TPE_POOL_SCORE, SPACE_TPE_POOL_PROPOSE,
                                   SPACE_TPE_POOL_STEPS, SPACE_TPE_POOL_STARTUP10};
        const char *p = v->type == SJ_STRING ? v->str : "";
        int ok = v->type == SJ_STRING;
        while (ok && *p) {
            size_t len = strcspn(p, "+"), i = 0;
            while (i < 4 && !(strlen(toks[i]) == len && strncmp(p, toks[i], len) == 0))
                i++;
            ok = i < 4;
            if (ok) s->search_pool |= bits[i];
            p += len + (p[len] == '+');
        }
        if ((s->search_pool & SPACE_TPE_POOL_SCORE) && (s->search_pool & SPACE_TPE_POOL_PROPOSE))
            ok = 0;
        if (!ok)
            return space__parse_at(c, v->off,
                                   "search \"pool\" must be \"score\" or \"propose\", optionally "
                                   "followed by \"+steps\" and \"+startup10\"");
    }
    return 0;
}

/* The settings before "space": the name, metric and mode, trial counts and seed, resources,
 * scheduler, executor, time limits and run limits, in that order (the first mistake is the
 * one reported). */
int space__parse_settings(struct space__parse_ctx *c, space_settings_t *s, const sj_node_t *root)
{
    int rc;
    const sj_node_t *v;
    long long k = 0;

    if (!(v = space__json_get(root, "name")))
        return space__parse_at_path(c, "name", "required key is missing (the experiment's name)");
    if (v->type != SJ_STRING) return space__parse_at(c, v->off, "\"name\" must be a string");
    char msg[256];
    if (space_check_name(v->str, msg, sizeof msg) != 0)
        return space__parse_at(c, v->off, "%s", msg);
    if (space__parse_dup_str(&s->name, v->str, c->err, c->errlen)) return SPACE_ENOMEM;

    if ((rc = space__parse_objectives(c, s, root))) return rc;
    const sj_node_t *mode = space__json_get(root, "mode");
    if ((rc = space__parse_constraints(c, s, root))) return rc;

    k = 1;
    if ((v = space__json_get(root, "num_samples")) &&
        (rc = space__parse_get_int(c, v, 1, INT_MAX, &k,
                                   "\"num_samples\" must be a positive integer")))
        return rc;
    s->num_samples = (int)k;
    k = 0;
    if ((v = space__json_get(root, "max_concurrent")) &&
        (rc = space__parse_get_int(
             c, v, 0, INT_MAX, &k,
             "\"max_concurrent\" must be a non-negative integer (0: no limit)")))
        return rc;
    s->max_concurrent = (int)k;
    s->seed = 0;
    if ((v = space__json_get(root, "seed"))) {
        const char *msg_seed = "\"seed\" must be a non-negative integer below 2^64";
        if (v->type != SJ_NUMBER || v->num < 0) return space__parse_at(c, v->off, "%s", msg_seed);
        if (v->is_int) {
            /* Read the digits, not the double: seeds above 2^53 must stay exact. */
            errno = 0;
            unsigned long long u = strtoull(v->raw, NULL, 10);
            if (errno == ERANGE || v->raw[0] == '-')
                return space__parse_at(c, v->off, "%s", msg_seed);
            s->seed = (uint64_t)u;
        } else {
            if (v->num != floor(v->num) || v->num >= 18446744073709551616.0)
                return space__parse_at(c, v->off, "%s", msg_seed);
            s->seed = (uint64_t)v->num;
        }
    }

    if ((rc = parse_resources(c, s, space__json_get(root, "resources")))) return rc;
    const sj_node_t *sched = space__json_get(root, "scheduler");
    if ((rc = parse_scheduler(c, &s->sched, sched))) return rc;
    if (s->nobjectives > 1 &&
        (s->sched.type == SPACE_SCHED_MEDIAN || s->sched.type == SPACE_SCHED_PBT)) {
        /* Median stopping compares one value with the median of the others' at the same
         * time (Ray Tune's MedianStoppingRule takes one metric), and PBT copies the best
         * quantile of trials by one metric (Ray Tune refuses a list metric for it too):
         * neither has a meaning for a trade-off. ASHA and Hyperband rank several
         * objectives at a rung (MO-ASHA, docs/multiobjective.md); fifo runs every trial. */
        const sj_node_t *ty = space__json_get(sched, "type");
        int median = s->sched.type == SPACE_SCHED_MEDIAN;
        return space__parse_at(
            c, ty->off,
            "the \"%s\" scheduler takes one objective, and \"metric\" lists %zu: %s; use "
            "\"asha\" or \"hyperband\" (which rank several objectives at each rung) or "
            "\"fifo\"",
            sched_types[s->sched.type], s->nobjectives,
            median ? "median stopping compares a trial's metric with the median of the "
                     "others', and several objectives have no single median"
                   : "PBT replaces the worst quantile of trials by the best by one metric "
                     "(Ray Tune refuses several too), and several objectives have no single "
                     "best quantile");
    }
    if (s->sched.type != SPACE_SCHED_FIFO) {
        const char *t = sched_types[s->sched.type];
        if (!s->metric)
            return space__parse_at_path(
                c, "metric",
                "required with the \"%s\" scheduler (the reported value that "
                "ranks trials)",
                t);
        if (!mode)
            return space__parse_at_path(
                c, "mode", "required with the \"%s\" scheduler (\"min\" or \"max\")", t);
    }
    /* fifo's mode defaults to "min", which would silently minimise an accuracy: a metric
     * whose name says higher is better must say which way it goes. */
    if (s->metric && !mode && space_metric_looks_max(s->metric)) {
        char q[80];
        const sj_node_t *m = space__json_get(root, "metric");
        return space__parse_at(
            c, m->type == SJ_ARRAY ? m->child->off : m->off,
            "metric %s reads as higher-is-better, but \"mode\" is not given and defaults to "
            "\"min\": add \"mode\": \"max\" (or \"mode\": \"min\" if smaller really is better)",
            space__parse_quoted(s->metric, q, sizeof q));
    }
    if ((rc = parse_executor(c, &s->exec, space__json_get(root, "executor")))) return rc;

    struct {
        const char *key;
        double *dst, def;
        int open;
    } times[] = {{"stop_grace_s", &s->stop_grace_s, 5, 0},
                 {"status_interval_s", &s->status_interval_s, 30, 1},
                 {"result_timeout_s", &s->result_timeout_s, 0, 0},
                 {"time_budget_s", &s->time_budget_s, 0, 0},
                 {"trial_time_limit_s", &s->trial_time_limit_s, 0, 0}};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        *times[i].dst = times[i].def;
        if (!(v = space__json_get(root, times[i].key))) continue;
        char what[96];
        snprintf(what, sizeof what, "\"%s\" must be a number %s 0 (seconds)", times[i].key,
                 times[i].open ? ">" : ">=");
        if ((rc = space__parse_get_double(c, v, 0, times[i].open, times[i].dst, what))) return rc;
    }
    k = 0;
    if ((v = space__json_get(root, "max_failures")) &&
        (rc = space__parse_get_int(c, v, 0, INT_MAX, &k,
                                   "\"max_failures\" must be a non-negative integer")))
        return rc;
    s->max_failures = (int)k;
    if ((rc = parse_run_limits(c, s, root))) return rc;
    return 0;
}

/* "search" and what it implies: the searcher's type and keys, the refusal of an adaptive
 * searcher beside pbt, and TPE's notes for `tune validate`. */
int space__parse_search(struct space__parse_ctx *c, space_t *sp, const sj_node_t *root)
{
    space_settings_t *s = &sp->set;
    int rc;
    if ((rc = parse_search(c, s, space__json_get(root, "search")))) return rc;
    if (space_searcher_adaptive(s) && s->sched.type == SPACE_SCHED_PBT) {
        /* Ray Tune refuses a search algorithm with PopulationBasedTraining too: PBT's exploit
         * and explore choose the configurations after the first ones, so a model of results
         * would be fitted to trials whose configuration changed under them. */
        const sj_node_t *se = space__json_get(root, "search");
        const char *t = space__searcher_ops(s->search)->name;
        return space__parse_at(
            c, se->off,
            "\"search\" %s cannot be used with the pbt scheduler (PBT chooses the "
            "configurations by exploit and explore): remove \"search\" (random starting "
            "points; points_to_evaluate still works) or use asha with %s",
            t, t);
    }
    /* Several objectives with TPE: the optuna preset is MOTPE (Optuna 3.1's TPESampler
     * with several objectives, docs/search.md); HpBandSter's BOHB ranks one loss, so the
     * bohb preset is what MOTPE cannot do. */
    if (s->search == SPACE_SEARCH_TPE && s->nobjectives > 1 && s->search_preset == SPACE_TPE_BOHB) {
        const sj_node_t *pr = space__json_get(space__json_get(root, "search"), "preset");
        return space__parse_at(
            c, pr->off,
            "\"search\" preset \"bohb\" models one objective (HpBandSter's BOHB ranks one "
            "loss), and \"metric\" lists %zu: use \"preset\": \"optuna\" (MOTPE, Optuna's "
            "multi-objective TPE) or leave \"preset\" out",
            s->nobjectives);
    }
    if (s->search == SPACE_SEARCH_TPE) {
        space__parse_note(
            sp, "\"search\" is tpe: each configuration is chosen when its trial launches, "
                "from the results so far; those `tune validate --show` lists are the random "
                "draws TPE starts from");
        if (s->sched.type == SPACE_SCHED_ASHA && s->sched.brackets > 1)
            space__parse_note(
                sp,
                "TPE models the rungs of ASHA's first bracket only (\"brackets\" is %d): "
                "trials of the other brackets count by their results at those milestones",
                s->sched.brackets);
    }
    return 0;
}

/* ---- a result's objectives and constraints --------------------------------------------- */
/* result[key] as a number; NaN when it is missing or not a number (a boolean, a string). */
static double result_number(const cJSON *result, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(result, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

void space_objectives(const space_settings_t *s, const cJSON *result, double *out)
{
    for (size_t i = 0; i < s->nobjectives; i++) {
        double v = result_number(result, s->metrics[i]);
        /* An infinite loss says nothing a ranking can use, as a NaN says nothing. */
        if (!isfinite(v))
            out[i] = NAN;
        else
            out[i] = s->modes[i] == SPACE_MODE_MAX ? -v : v;
    }
}

double space_violation(const space_settings_t *s, const cJSON *result)
{
    double total = 0;
    int violated = 0;
    for (size_t i = 0; i < s->nconstraints; i++) {
        const space_constraint_t *k = &s->constraints[i];
        double v = result_number(result, k->key);
        if (isnan(v)) return INFINITY; /* nothing says it is feasible */
        int ok = k->op == SPACE_CMP_LE   ? v <= k->bound
                 : k->op == SPACE_CMP_GE ? v >= k->bound
                 : k->op == SPACE_CMP_LT ? v < k->bound
                                         : v > k->bound;
        if (ok) continue;
        violated = 1;
        total += fabs(v - k->bound);
    }
    /* "<" met with equality: violated by nothing measurable, still infeasible. */
    if (violated && total == 0) total = DBL_TRUE_MIN;
    return total;
}

space_cmp_t space_stop_cmp(const space_settings_t *s, size_t i)
{
    const char *key = s->stop[i].key;
    if (s->metric && strcmp(key, s->metric) == 0)
        return s->mode == SPACE_MODE_MIN ? SPACE_CMP_LE : SPACE_CMP_GE;
    for (size_t o = 1; o < s->nobjectives; o++)
        if (strcmp(key, s->metrics[o]) == 0)
            return s->modes[o] == SPACE_MODE_MIN ? SPACE_CMP_LE : SPACE_CMP_GE;
    return SPACE_CMP_GE;
}

static cJSON *strv_json(char **v)
{
    cJSON *a = cJSON_CreateArray();
    for (char **p = v; a && p && *p; p++) {
        cJSON *e = cJSON_CreateString(*p);
        if (!e) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

/* Adds name: item to o, deleting item's owner chain on failure; returns 0 or -1. */
static int add(cJSON *o, const char *name, cJSON *item)
{
    if (!item) return -1;
    cJSON_AddItemToObject(o, name, item);
    return 0;
}

cJSON *space_settings_json(const space_t *s)
{
    const space_settings_t *t = &s->set;
    cJSON *o = cJSON_CreateObject(), *res = NULL, *sc = NULL, *ex = NULL, *ps = NULL;
    if (!o) return NULL;
    int bad = add(o, "name", cJSON_CreateString(t->name));
    if (t->nobjectives > 1) {
        /* Several objectives as space.json writes them; one stays a string, as before. */
        cJSON *ms = cJSON_CreateArray(), *ds = cJSON_CreateArray();
        bad |= add(o, "metric", ms);
        bad |= add(o, "mode", ds);
        for (size_t i = 0; ms && ds && i < t->nobjectives; i++) {
            bad |= !cJSON_AddItemToArray(ms, cJSON_CreateString(t->metrics[i]));
            bad |= !cJSON_AddItemToArray(ds, cJSON_CreateString(space_mode_name(t->modes[i])));
        }
    } else {
        bad |= add(o, "metric", t->metric ? cJSON_CreateString(t->metric) : cJSON_CreateNull());
        bad |= add(o, "mode", cJSON_CreateString(space_mode_name(t->mode)));
    }
    /* Only when there are any, so that an experiment without them records the same
     * settings as before. */
    cJSON *cs = NULL;
    if (t->nconstraints) bad |= add(o, "constraints", cs = cJSON_CreateObject());
    for (size_t i = 0; cs && i < t->nconstraints; i++) {
        const space_constraint_t *k = &t->constraints[i];
        static const char *const ops[SPACE_NCMP] = SPACE_CMP_NAMES;
        cJSON *ko = cJSON_GetObjectItemCaseSensitive(cs, k->key);
        if (!ko) bad |= add(cs, k->key, ko = cJSON_CreateObject());
        if (ko) bad |= add(ko, ops[k->op], cJSON_CreateNumber(k->bound));
    }
    bad |= add(o, "num_samples", cJSON_CreateNumber(t->num_samples));
    bad |= add(o, "max_concurrent", cJSON_CreateNumber(t->max_concurrent));
    if (t->seed <= (uint64_t)SPACE_MAX_EXACT) {
        bad |= add(o, "seed", cJSON_CreateNumber((double)t->seed));
    } else {
        /* A double cannot hold it exactly; the digits can. */
        char b[32];
        snprintf(b, sizeof b, "%llu", (unsigned long long)t->seed);
        bad |= add(o, "seed", cJSON_CreateRaw(b));
    }
    bad |= add(o, "command", strv_json(t->command));
    bad |= add(o, "resources", res = cJSON_CreateObject());
    if (res) {
        bad |= add(res, "gpus_per_trial", cJSON_CreateNumber(t->gpus_per_trial));
        bad |= add(res, "cpus_per_trial", cJSON_CreateNumber(t->cpus_per_trial));
    }
    bad |= add(o, "scheduler", sc = cJSON_CreateObject());
    if (sc) {
        bad |= add(sc, "type", cJSON_CreateString(space_sched_name(t->sched.type)));
        bad |= add(sc, "time_attr", cJSON_CreateString(t->sched.time_attr));
        if (t->sched.type != SPACE_SCHED_PBT || t->sched.max_t > 0)
            bad |= add(sc, "max_t", cJSON_CreateNumber(t->sched.max_t));
        bad |= add(sc, "grace_period", cJSON_CreateNumber(t->sched.grace_period));
        bad |= add(sc, "reduction_factor", cJSON_CreateNumber(t->sched.reduction_factor));
        bad |= add(sc, "brackets", cJSON_CreateNumber(t->sched.brackets));
        bad |= add(sc, "min_samples_required", cJSON_CreateNumber(t->sched.min_samples_required));
        bad |= add(sc, "stop_last_trials", cJSON_CreateBool(t->sched.stop_last_trials));
        bad |= add(sc, "variant",
                   cJSON_CreateString(t->sched.promotion == SPACE_ASHA_EAGER ? "eager_promotion"
                                      : t->sched.promotion == SPACE_ASHA_PROMOTION ? "promotion"
                                                                                   : "stopping"));
        bad |= add(sc, "hard_stop", cJSON_CreateBool(t->sched.hard_stop));
        if (t->sched.type == SPACE_SCHED_PBT) {
            bad |= add(sc, "perturbation_interval",
                       cJSON_CreateNumber(t->sched.perturbation_interval));
            bad |= add(sc, "quantile_fraction", cJSON_CreateNumber(t->sched.quantile_fraction));
            bad |=
                add(sc, "resample_probability", cJSON_CreateNumber(t->sched.resample_probability));
            bad |= add(sc, "perturbation_factors",
                       cJSON_CreateDoubleArray(t->sched.perturbation_factors, t->sched.nfactors));
            bad |= add(sc, "burn_in_period", cJSON_CreateNumber(t->sched.burn_in_period));
            bad |= add(sc, "keep_checkpoints", cJSON_CreateNumber(t->sched.keep_checkpoints));
        }
    }
    bad |= add(o, "executor", ex = cJSON_CreateObject());
    if (ex) {
        bad |= add(ex, "type",
                   cJSON_CreateString(t->exec.type == SPACE_EXEC_SLURM ? "slurm" : "local"));
        bad |= add(ex, "srun_args", strv_json(t->exec.srun_args));
        bad |=
            add(ex, "allocation",
                t->exec.allocation ? cJSON_CreateString(t->exec.allocation) : cJSON_CreateNull());
    }
    bad |= add(o, "stop_grace_s", cJSON_CreateNumber(t->stop_grace_s));
    bad |= add(o, "status_interval_s", cJSON_CreateNumber(t->status_interval_s));
    bad |= add(o, "result_timeout_s", cJSON_CreateNumber(t->result_timeout_s));
    bad |= add(o, "time_budget_s", cJSON_CreateNumber(t->time_budget_s));
    bad |= add(o, "trial_time_limit_s", cJSON_CreateNumber(t->trial_time_limit_s));
    bad |= add(o, "max_failures", cJSON_CreateNumber(t->max_failures));
    bad |= add(o, "fail_fast", cJSON_CreateNumber(t->fail_fast));
    bad |= add(o, "allow_missing_metric", cJSON_CreateBool(t->allow_missing_metric));
    bad |= add(o, "stop_experiment_on_target", cJSON_CreateBool(t->stop_experiment_on_target));
    cJSON *stop = NULL, *rep = NULL;
    bad |= add(o, "stop", stop = cJSON_CreateObject());
    for (size_t i = 0; stop && i < t->nstop; i++)
        bad |= add(stop, t->stop[i].key, cJSON_CreateNumber(t->stop[i].target));
    bad |= add(o, "reporter", rep = cJSON_CreateObject());
    if (rep) {
        bad |= add(rep, "metric_columns",
                   t->metric_columns ? strv_json(t->metric_columns) : cJSON_CreateNull());
        bad |= add(rep, "parameter_columns",
                   t->parameter_columns ? strv_json(t->parameter_columns) : cJSON_CreateNull());
    }
    cJSON *se = NULL;
    bad |= add(o, "search", se = cJSON_CreateObject());
    if (se) {
        const space__searcher_ops_t *ops = space__searcher_ops(t->search);
        bad |= add(se, "type", cJSON_CreateString(ops ? ops->name : "random"));
        if (t->search == SPACE_SEARCH_TPE)
            bad |= add(se, "preset",
                       cJSON_CreateString(t->search_preset == SPACE_TPE_BOHB ? "bohb" : "optuna"));
        if (t->search_pool) {
            char pl[64];
            snprintf(pl, sizeof pl, "%s%s%s",
                     t->search_pool & SPACE_TPE_POOL_PROPOSE ? "propose" : "score",
                     t->search_pool & SPACE_TPE_POOL_STEPS ? "+steps" : "",
                     t->search_pool & SPACE_TPE_POOL_STARTUP10 ? "+startup10" : "");
            bad |= add(se, "pool", cJSON_CreateString(pl));
        }
    }
    bad |= add(o, "points_to_evaluate",
               t->points_to_evaluate ? cJSON_Duplicate(t->points_to_evaluate, 1)
                                     : cJSON_CreateArray());
    bad |= add(o, "num_trials", cJSON_CreateNumber((double)s->num_trials));
    bad |= add(o, "params", ps = cJSON_CreateArray());
    for (size_t i = 0; ps && i < s->nparams; i++) {
        cJSON *p = cJSON_CreateObject();
        if (!p) {
            bad = 1;
            break;
        }
        cJSON_AddItemToArray(ps, p);
        bad |= add(p, "name", cJSON_CreateString(s->params[i].name));
        bad |= add(p, "kind", cJSON_CreateString(space__parse_kind_name(s->params[i].kind)));
    }
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
