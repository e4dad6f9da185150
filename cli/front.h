/* cli/front.h: an experiment's trials as points of several objectives, for every command
 * that shows them (best, trials, show, the live table, the report): each trial's last
 * result turned into values by space_objectives / space_violation, ranked by pareto_rank.
 * Not for: any rule of its own (what a point, a violation or a front level is belongs to
 * search/settings.h and pareto/pareto.h), nor printing. Internal to the cli. */
#ifndef TUNE_CLI_FRONT_H
#define TUNE_CLI_FRONT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "search/settings.h"
#include "search/space.h"
#include "store/store.h"

/* The points of the trials that have a result, ranked. Arrays hold n entries (values and
 * obj n * k), in the order the trials were given (trial number for cli_front_load). */
typedef struct cli_front {
    size_t n;          /* trials with a last result */
    size_t k;          /* objectives (settings' nobjectives) */
    size_t *src;       /* each point's index among the results given */
    int64_t *ids;      /* trial numbers */
    double *values;    /* as reported, NaN where missing or not a finite number */
    double *obj;       /* to minimise (space_objectives: "max" ones negated) */
    double *violation; /* space_violation: 0 feasible, > 0 infeasible, +INFINITY unknown */
    int *level;        /* pareto_rank's level */
    size_t *order;     /* pareto_rank's order, best first (indexes into these arrays) */
    size_t nfeasible;  /* points with violation 0 */
    size_t nfront;     /* points on the Pareto front (cli_front_on) */
    /* The settings ranked by: cli_front_rank's, borrowed; cli_front_load's are those of
     * space, the stored space.json parsed back (NULL after cli_front_rank). */
    space_t *space;
    const space_settings_t *set;
} cli_front_t;

/* 1 when the experiment has several objectives (the commands show the front then). */
int cli_front_multi(const space_settings_t *set);

/* Experiment `name`'s space.json as stored with it, parsed back as tune resume does (the
 * same settings the run had). 0 with *out new (space_free), or -1 with err filled. */
int cli_front_space(store_t *st, const char *name, space_t **out, char *err, size_t errlen);

/* Ranks results[0..n) (a trial's last result each, NULL for a trial without one: left out)
 * of trials ids[0..n) under set's objectives and constraints. set is borrowed and must
 * outlive f. 0, or -1 with err (out of memory, pareto_rank's refusal); f is then empty
 * but safe to cli_front_free. */
int cli_front_rank(const space_settings_t *set, size_t n, const int64_t *ids,
                   const cJSON *const *results, cli_front_t *f, char *err, size_t errlen);

/* cli_front_space, then every trial's last result (trial_summary) of experiment `name`
 * ranked as cli_front_rank does; f->space holds the settings f->set points to. 0 or -1
 * with err. */
int cli_front_load(store_t *st, const char *name, cli_front_t *f, char *err, size_t errlen);

void cli_front_free(cli_front_t *f); /* NULL-safe; leaves f empty */

/* Whether point i is on the Pareto front: feasible, every objective a number, level 0. */
int cli_front_on(const cli_front_t *f, size_t i);

/* Point i's front as the commands show it: its level (0 the Pareto front) for a feasible
 * point whose objectives are all numbers, else -1 (infeasible, or an objective missing). */
int cli_front_level(const cli_front_t *f, size_t i);

/* The point `tune best` names: the first of pareto_rank's order that is on the front
 * (cli_front_on), or -1 when none is (no feasible trial with every objective a number). */
long cli_front_pick(const cli_front_t *f);

/* The point of trial number id, or -1 when that trial has no result. */
long cli_front_find(const cli_front_t *f, int64_t id);

/* The front's points (cli_front_on) in the order `tune best` prints them: by the first
 * objective in its mode, then trial number. *out is new (free), *nout its length (the
 * front's size). 0, or -1 when out of memory. */
int cli_front_sorted(const cli_front_t *f, size_t **out, size_t *nout);

/* Constraint j of set as result violates it: 1 with *value (the reported value, NaN when
 * missing or no number) and *by (how far from its bound, space_violation's measure for
 * that constraint alone; +INFINITY when missing), else 0. */
int cli_constraint_violated(const space_settings_t *set, size_t j, const cJSON *result,
                            double *value, double *by);

/* Words for the constraints result violates, "gpu_mem_gb=18 (<= 16, by 2); latency_ms
 * missing (< 20)", into out; "" when none is. */
void cli_violation_words(const space_settings_t *set, const cJSON *result, char *out, size_t n);

#endif
