/* sim: what a simulated trial would have reported. A source of learning curves is either a
 * table of recorded curves (docs/simulate.md: one row per configuration and iteration),
 * which answers a configuration with its nearest recorded one, or the synthetic family,
 * which computes a curve from the configuration itself (for scale tests and as further
 * tasks). Not for: time or scheduling (the simulated executor and the scheduler's loop
 * replay these curves on a virtual clock) or reading a database (cli/ exports an
 * experiment as a table first). */
#ifndef TUNE_SIM_H
#define TUNE_SIM_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define SIM_OK 0
#define SIM_EINVAL (-1) /* a bad table or spec: the message says where and why */
#define SIM_EIO (-2)    /* the file could not be read */
#define SIM_ENOMEM (-3)

/* Dimensions the synthetic family reads from a configuration; parameters past this many
 * do not change its curves. */
#define SIM_MAX_DIMS 32

struct space;
typedef struct sim_curves sim_curves_t;

/* The longest an iteration may take, in seconds: 365 days. A table or a synthetic spec
 * with a longer one (or a non-finite or negative one) is an error: it is taken for a
 * mistake, such as milliseconds or nanoseconds written as seconds (docs/simulate.md). */
#define SIM_MAX_ITER_S 31536000.0

/* Parses a table held in memory (CSV; `name` is used in messages, which point at
 * "NAME:LINE: ...") and binds it to the space: every parameter of the space that is not a
 * constant needs a `config/NAME` column, each of the space's metrics, its constraints' keys
 * and its scheduler's time_attr a column (unless allow_missing_metric), and each
 * configuration's rows come together with training_iteration increasing and seconds from 0
 * to SIM_MAX_ITER_S. A grid_search value that no row has is not checked here:
 * sim_curves_lookup fails for it. Every replayed result reports time_total_s, the curve's
 * seconds so far (the table's own column when it has one). On success *out is a new source
 * freed with sim_curves_free. */
int sim_table_parse(const char *text, size_t len, const char *name, const struct space *sp,
                    sim_curves_t **out, char *err, size_t errlen);
/* Reads a table file (plain or gzip-compressed CSV) and parses it. A gzip stream that is
 * damaged or does not end (the file was cut short) is an error (SIM_EINVAL), at the line
 * where it stops. */
int sim_table_open(const char *path, const struct space *sp, sim_curves_t **out, char *err,
                   size_t errlen);

/* The synthetic family, from a spec such as "seed=3,noise=0.02,cross=0.5,diverge=0.05,
 * iters=81,time=1" (every key optional; docs/simulate.md gives the formula and the
 * defaults). Curves report the space's metric (its first with several objectives: its name
 * and mode), training_iteration, time_this_iter_s, time_total_s (the seconds so far) and
 * "cost", a second objective that conflicts with the metric (docs/simulate.md, "Several
 * objectives"). */
int sim_synth_open(const char *spec, const struct space *sp, sim_curves_t **out, char *err,
                   size_t errlen);

void sim_curves_free(sim_curves_t *c); /* NULL-safe */

/* Number of configurations a table holds (0 for the synthetic family). */
size_t sim_curves_count(const sim_curves_t *c);
/* The largest number of iterations any configuration has (the synthetic family's iters). */
int64_t sim_curves_max_iters(const sim_curves_t *c);

/* One configuration's curve, as lookup found it. Plain data, copied freely. */
typedef struct sim_curve {
    size_t row;      /* the table's configuration (0-based, in file order); 0 for synthetic */
    double distance; /* to the configuration asked for: 0 = the same; see docs/simulate.md */
    int64_t iters;   /* how many iterations the curve has */
    uint64_t key;    /* synthetic: the hash of the configuration the noise is drawn from */
    int dims;
    double u[SIM_MAX_DIMS]; /* synthetic: the configuration in [0, 1] per parameter */
    char secs_text[32];     /* synthetic: its seconds per iteration, printed once */
    char cost_text[32];     /* synthetic: its cost (the second objective), printed once */
} sim_curve_t;

/* The curve that answers config: a table's nearest configuration by the RMS of the
 * per-parameter distances (space_param_distance; grid_search values must match
 * exactly; ties go to the earlier row), or the synthetic curve of config itself. Fails
 * (SIM_EINVAL, err set) when a parameter is missing from config or no row matches its
 * grid values. */
int sim_curves_lookup(const sim_curves_t *c, const cJSON *config, sim_curve_t *out, char *err,
                      size_t errlen);
/* The name of a table's configuration `row` (its `trial` column, or "row N"). */
const char *sim_curves_row_name(const sim_curves_t *c, size_t row);

/* Iteration `it` (1-based) of a curve: *line gets the result line as JSON text (valid
 * until the next call on the same source), *seconds the time the iteration took. Returns
 * 1 when filled, 0 when the curve has no such iteration (it ended there). */
int sim_curve_result(sim_curves_t *c, const sim_curve_t *cv, int64_t it, const char **line,
                     size_t *len, double *seconds);

/* The seconds iteration `it` (1-based) of a curve takes, 0 past its end: what
 * sim_curve_result gives in *seconds, without printing the line (the simulated executor
 * asks for the time of every iteration ahead of its result). */
double sim_curve_seconds(const sim_curves_t *c, const sim_curve_t *cv, int64_t it);

/* How many iterations of a curve a trial run to `t` in the scheduler's time_attr runs: up to
 * and including its first iteration at or past t (ASHA stops a trial at its first result
 * at or past max_t), or the whole curve when it ends before (*ends_before then 1). A table
 * reads each row's time_attr (training_iteration, a column, or time_total_s summed from the
 * seconds); a curve whose rows have none, and the synthetic family, count iterations. */
int64_t sim_curve_iters_to(const sim_curves_t *c, const sim_curve_t *cv, double t,
                           int *ends_before);

/* ---- the pool protocol ------------------------------------------------------------
 * A table as a finite pool of configurations (tune simulate --pool; docs/simulate.md "The
 * pool protocol"): every configuration (row) is trained at most once. The searcher chooses
 * each trial's among the rows not taken yet (space_searcher_choose); the trial then replays
 * that row's own curve, whatever other row holds the same values. */
typedef struct sim_pool sim_pool_t;

/* A pool of every configuration of table c (borrowed; must outlive it), in file order,
 * each as a full configuration of the table's space (its constants included). Fails
 * (SIM_EINVAL, err names the row) for the synthetic family (no finite pool), a space with
 * grid_search or nested parameters, or a row whose value is not one of its parameter's (a
 * choice the space does not list): a pool replays configurations of the space only. On
 * success *out is new, freed with sim_pool_free. */
int sim_pool_new(const sim_curves_t *c, sim_pool_t **out, char *err, size_t errlen);
void sim_pool_free(sim_pool_t *p); /* NULL-safe */
/* How many configurations the pool holds, and how many trials have taken one. */
size_t sim_pool_size(const sim_pool_t *p);
size_t sim_pool_taken(const sim_pool_t *p);
/* The configurations not taken yet, in file order: *configs gets an array of them (owned
 * by the pool, valid until the next sim_pool_take); returns how many. */
size_t sim_pool_unused(sim_pool_t *p, const cJSON *const **configs);
/* Trial trial_no takes unused configuration k (an index into sim_pool_unused's array):
 * its row is gone from the pool and answers that trial from now on. 0, SIM_EINVAL (k out
 * of range, or the trial took one already) or SIM_ENOMEM. */
int sim_pool_take(sim_pool_t *p, int64_t trial_no, size_t k);
/* The row trial_no took: 1 with *row set, 0 when it took none. */
int sim_pool_row(const sim_pool_t *p, int64_t trial_no, size_t *row);

/* ---- the simulated executor ------------------------------------------------------- */
struct sched_exec;
struct sched_clock;

typedef struct sim_exec_opts {
    double
        start_delay;   /* seconds from a trial's start to its first iteration (0.05 in Syne Tune) */
    double stop_delay; /* seconds from a stop to the trial's end (0.05) */
    /* what "running every trial to the end" means for the saved-compute figure: to this
     * value of the scheduler's time_attr (its max_t; sim_curve_iters_to), 0 = whole curves */
    double full_t;
    /* the experiment's stop_grace_s: a trial that reached max_t is left this long to end by
     * itself before it is stopped, and a curve that goes on past max_t is replayed meanwhile
     * (the same for the saved-compute figure's "every trial to max_t") */
    double stop_grace;
    double wall0; /* Unix time the virtual clock's 0 is recorded as */
    /* NULL, or the pool protocol's pool (borrowed; must outlive the executor): a trial is
     * answered by the row it took (sim_pool_row), not by the nearest one */
    const sim_pool_t *pool;
} sim_exec_opts_t;

/* A configuration farther than this from the row that answers it is "far from anything
 * recorded" (docs/simulate.md): the distance is the root mean square over parameters of
 * each one's distance on its own [0, 1] scale, so 0.25 is a quarter of every parameter's
 * range on average (1.25 decades of a loguniform over 1e-5..1), or one choice in 16
 * parameters that differs. Beyond it the curve replayed is another configuration's. */
#define SIM_FAR_DISTANCE 0.25

typedef struct sim_stats {
    double elapsed_s; /* the virtual clock */
    double spent_s;   /* trial-seconds the simulated trials ran */
    /* trial-seconds had every started trial run to full_t, or to the end of its curve where
     * that comes first (a table has nothing past it): what the saving is measured against */
    double full_s;
    size_t short_curves; /* started trials whose curve ends before full_t */
    double max_distance; /* the farthest any configuration was from the row that answered it */
    size_t trials;       /* trials started */
    size_t far;          /* trials answered (at some start) from farther than SIM_FAR_DISTANCE */
    /* Trials whose curve ended while the scheduler had not stopped them, short of
     * full_t (the longest curve when full_t is 0): a table has no iterations past
     * a curve's end, so such a trial ends there as if it had finished. */
    size_t ran_out;
    int64_t ran_out_min, ran_out_max; /* the iterations they ended at */
    int64_t target_iters;             /* what they fell short of */
} sim_stats_t;

/* A simulated executor over the curves c (borrowed; must outlive it): a started trial
 * replays the curve that answers its configuration on a virtual clock starting at 0, which
 * *clock reads (give it to the loop as its clock). The trial's executor id is the table
 * row that answered it and its node "d=DISTANCE". Freed with sched_exec_free. */
int sim_exec_new(sim_curves_t *c, const sim_exec_opts_t *o, struct sched_exec **out,
                 struct sched_clock *clock, char *err, size_t errlen);
/* What the simulation has cost so far. */
void sim_exec_stats(const struct sched_exec *ex, sim_stats_t *out);

#endif
