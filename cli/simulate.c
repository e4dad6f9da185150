/* `tune simulate`: an experiment replayed on a virtual clock over recorded learning curves
 * (a table, the synthetic family, or a finished experiment of the database), through the
 * same loop, policy and store as `tune run`, into the same database. Not for: reading
 * tables (sim/) or deciding anything (scheduler/). */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "search/settings.h"
#include "search/space.h"
#include "sim/sim.h"

static const char sim_usage[] =
    "usage: tune simulate SPACE.json (--table CURVES.csv[.gz] | --synthetic SPEC | --from NAME)\n"
    "                     [options]\n"
    "  replays the experiment on a virtual clock: each trial reports the curve of the\n"
    "  recorded configuration nearest to its own (docs/simulate.md)\n"
    "  --table FILE         a table of learning curves (tune export NAME --table)\n"
    "  --synthetic SPEC     the synthetic family, e.g. seed=3,noise=0.02,cross=0.5\n"
    "  --from NAME          the curves of experiment NAME in the database (its trials that ran\n"
    "                       longest; the others are left out)\n"
    "  --pool               the pool protocol: each trial takes a recorded configuration\n"
    "                       not taken yet, chosen by the searcher; none start once every\n"
    "                       one is taken (docs/simulate.md)\n"
    "  --workers N          trials at once (default: max_concurrent, else this machine's slices)\n"
    "  --db PATH            database (default tune.db); the simulated experiment is written\n"
    "                       as NAME-sim (NAME-sim-2, ... when taken)\n"
    "  --start-delay S      virtual seconds from a trial's start to its first iteration (0.05)\n"
    "  --stop-delay S       virtual seconds from a stop to the trial's end (0.05)\n"
    "  --status-interval S  real seconds between status blocks when not on a terminal\n"
    "                       (default 10; on a terminal the table is redrawn every second)\n"
    "  --quiet              only the summary\n";

/* Ctrl-C during a simulation: the only global of this file, set by the handler. */
static volatile sig_atomic_t sim_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    sim_interrupted++;
}

struct sim_args {
    const char *file, *table, *synthetic, *from, *db;
    long workers;
    double start_delay, stop_delay;
    double status_interval; /* 0: the default */
    int quiet;
    int pool; /* --pool: the pool protocol */
};

static int number_arg(const char *opt, const char *v, double lo, double *out)
{
    char *e;
    errno = 0;
    double x = strtod(v, &e);
    if (*e || e == v || errno || !(x >= lo) || !isfinite(x)) {
        cli_error("simulate: %s wants a number >= %g, got \"%s\"", opt, lo, v);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_sim_args(int argc, char **argv, struct sim_args *a)
{
    memset(a, 0, sizeof *a);
    a->db = cli_db_path(argc, argv);
    a->start_delay = a->stop_delay = 0.05;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (strcmp(o, "--db") == 0 && v) {
            i++;
        } else if (strcmp(o, "--table") == 0 && v) {
            a->table = argv[++i];
        } else if (strcmp(o, "--synthetic") == 0 && v) {
            a->synthetic = argv[++i];
        } else if (strcmp(o, "--from") == 0 && v) {
            a->from = argv[++i];
        } else if (strcmp(o, "--workers") == 0 && v) {
            if (number_arg(o, argv[++i], 1, &x) || x != floor(x) || x > 1e6) {
                cli_error("simulate: --workers wants a whole number from 1 to 1000000");
                return -1;
            }
            a->workers = (long)x;
        } else if (strcmp(o, "--start-delay") == 0 && v) {
            if (number_arg(o, argv[++i], 0, &a->start_delay)) return -1;
        } else if (strcmp(o, "--stop-delay") == 0 && v) {
            if (number_arg(o, argv[++i], 0, &a->stop_delay)) return -1;
        } else if (strcmp(o, "--status-interval") == 0 && v) {
            if (number_arg(o, argv[++i], 0, &a->status_interval) || !(a->status_interval > 0)) {
                cli_error("simulate: --status-interval wants a positive number of seconds");
                return -1;
            }
        } else if (strcmp(o, "--pool") == 0) {
            a->pool = 1;
        } else if (strcmp(o, "--quiet") == 0 || strcmp(o, "-q") == 0) {
            a->quiet = 1;
        } else if (o[0] == '-') {
            cli_error("simulate: unknown option %s (see tune simulate --help)", o);
            return -1;
        } else if (!a->file) {
            a->file = o;
        } else {
            cli_error("simulate: unexpected argument \"%s\"", o);
            return -1;
        }
    }
    if (!a->file) {
        cli_error("simulate: which experiment file? usage: tune simulate SPACE.json --table "
                  "CURVES.csv");
        return -1;
    }
    if ((a->table != NULL) + (a->synthetic != NULL) + (a->from != NULL) != 1) {
        cli_error("simulate: say where the curves come from: one of --table FILE, --synthetic "
                  "SPEC or --from NAME");
        return -1;
    }
    if (a->pool && a->synthetic) {
        cli_error("simulate: --pool needs a table (--table FILE or --from NAME): the synthetic "
                  "family has no finite set of configurations to draw from");
        return -1;
    }
    return 0;
}

/* The curves of experiment `name` as a table: its trials that ran as far as the longest
 * one did (for ASHA, those that reached max_t). */
static int curves_from_db(store_t *st, const char *name, const space_t *sp, sim_curves_t **out)
{
    char err[1024], q[] = "SELECT max(r.time_value) FROM results_current r JOIN trials t ON "
                          "t.id = r.trial_id JOIN experiments e ON e.id = t.experiment_id "
                          "WHERE e.name = ?1";
    int64_t id;
    int rc = store_experiment_find(st, name, &id, err, sizeof err);
    if (rc == STORE_NOTFOUND) {
        cli_error("simulate --from: no experiment named \"%s\" in the database (see tune ls)",
                  name);
        return -1;
    }
    cli_rows_t r;
    const char *b[] = {name};
    if (rc != 0 || cli_rows_query(st, q, b, 1, &r, err, sizeof err) != 0) {
        cli_error("%s", err);
        return -1;
    }
    double longest = r.nrows && r.vals[0] ? strtod(r.vals[0], NULL) : 0;
    cli_rows_free(&r);
    if (!(longest > 0)) {
        cli_error("simulate --from: experiment \"%s\" has no results to replay", name);
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, kept = 0, left = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        cli_error("out of memory");
        return -1;
    }
    rc = cli_write_table(st, name, longest, f, &kept, &left, err, sizeof err);
    fclose(f);
    if (rc == 0) {
        char label[300];
        snprintf(label, sizeof label, "%s (experiment)", name);
        printf("Replaying %zu trial%s of %s that reached %s %g; %zu that did not are left out.\n",
               kept, kept == 1 ? "" : "s", name, space_settings(sp)->sched.time_attr, longest,
               left);
        rc = sim_table_parse(buf, len, label, sp, out, err, sizeof err);
    }
    free(buf);
    if (rc != 0) cli_error("%s", err);
    return rc;
}

/* After a replay of recorded curves, what makes its answer doubtful, on stderr: trials
 * answered from configurations far from their own (SIM_FAR_DISTANCE), and trials whose
 * curve ended before the scheduler would have stopped them (docs/simulate.md). */
static void warn_answers(const sim_stats_t *ss, size_t rows, const space_settings_t *set,
                         const char *from)
{
    if (ss->far > 0) {
        char whence[300] = "";
        if (from)
            snprintf(whence, sizeof whence,
                     " (--from %s replays only its trials that ran as far as the longest)", from);
        fprintf(stderr,
                "tune: warning: %zu of %zu trials were answered from a recorded configuration "
                "farther than %g from their own (the largest distance %.4g; 0 = the same, 1 = as "
                "far as can be): each replayed another configuration's curve, so for them the "
                "decisions and the compute saved describe the %zu recorded configuration%s%s, "
                "not this space. Record more full curves (a FIFO run of this space, then tune "
                "export NAME --table), or replay the recorded pool: give space.json the recorded "
                "configurations as points_to_evaluate, with num_samples no more than their "
                "number, so that every trial replays its own curve (docs/simulate.md).\n",
                ss->far, ss->trials, SIM_FAR_DISTANCE, ss->max_distance, rows, rows == 1 ? "" : "s",
                whence);
    }
    if (ss->ran_out > 0) {
        char upto[200], at[64];
        if (set->sched.type != SPACE_SCHED_FIFO && set->sched.max_t > 0)
            snprintf(upto, sizeof upto, "max_t (%s %g)", set->sched.time_attr, set->sched.max_t);
        else
            snprintf(upto, sizeof upto, "the longest recorded curve (%lld iterations)",
                     (long long)ss->target_iters);
        if (ss->ran_out_min == ss->ran_out_max)
            snprintf(at, sizeof at, "iteration %lld", (long long)ss->ran_out_min);
        else
            snprintf(at, sizeof at, "iterations %lld to %lld", (long long)ss->ran_out_min,
                     (long long)ss->ran_out_max);
        fprintf(stderr,
                "tune: warning: %zu trial%s ran out of recorded curve at %s, short of %s, while "
                "the scheduler would have run %s on: the row%s that answered %s stopped there "
                "where %s recorded (stopped early, or the table is shorter), and a table has "
                "nothing past a curve's end, so each ended there as if it had finished (its last "
                "value its final one, its compute counted only that far). Replay curves that "
                "reach %s (tune simulate --from keeps only those), or record full curves.\n",
                ss->ran_out, ss->ran_out == 1 ? "" : "s", at, upto,
                ss->ran_out == 1 ? "it" : "them", ss->ran_out == 1 ? "" : "s",
                ss->ran_out == 1 ? "it" : "them", ss->ran_out == 1 ? "it was" : "they were",
                set->sched.type != SPACE_SCHED_FIFO && set->sched.max_t > 0 ? "max_t"
                                                                            : "the full length");
    }
}

/* How many trials run at once: --workers, else max_concurrent, else the slices of this
 * machine (its GPUs over gpus_per_trial, or its cores over cpus_per_trial). */
static long default_workers(const space_settings_t *set)
{
    if (set->max_concurrent > 0) return set->max_concurrent;
    int ids[256];
    int ngpus = sched_detect_gpus(ids, 256, NULL);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (set->gpus_per_trial > 0 && ngpus > 0) return (long)floor(ngpus / set->gpus_per_trial);
    long n = cpus / (set->cpus_per_trial > 0 ? set->cpus_per_trial : 1);
    return n > 0 ? n : 1;
}

static void fmt_hms(double s, char *out, size_t n)
{
    long t = (long)(s + 0.5);
    snprintf(out, n, "%02ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

struct sim_view {
    int quiet;
    int tty;
    int last_lines; /* lines of the block drawn last (tty: redrawn in place) */
    const char **params;
    size_t nparams;
    const char *time_attr;
    const sched_exec_t *ex;
    const char *full_to;              /* what the saved compute is measured against */
    const space_settings_t *settings; /* the table's objectives (cli_table_opts_t) */
    /* Several objectives: the trials' last results, which the table ranks (lastseen.c);
     * with one objective none are read, and the table is the one it always was. */
    cli_last_t last;
};

/* The share of compute saved, in percent: 0 printed as "0.0", never "-0.0" (the two sums
 * add the same seconds in another order). */
static double saved_pct(const sim_stats_t *ss)
{
    double p = 100 * (1 - ss->spent_s / ss->full_s);
    return fabs(p) < 0.05 ? 0 : p;
}

/* The simulation's cost so far, one line: virtual time, compute spent and saved. */
static void cost_line(const struct sim_view *v, char *out, size_t n)
{
    sim_stats_t ss;
    sim_exec_stats(v->ex, &ss);
    char hms[32];
    fmt_hms(ss.elapsed_s, hms, sizeof hms);
    int k =
        snprintf(out, n, "Virtual time %s; compute spent %.4g trial-hours", hms, ss.spent_s / 3600);
    if (ss.full_s > 0 && k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, ", %.1f%% saved against running every trial to %s%s",
                 saved_pct(&ss), v->full_to, ss.short_curves ? " or its curve's end" : "");
}

/* The live table: called by sched_loop_report, paced in real time by the caller (the
 * loop's clock is virtual and would race), and once more at the end. On a terminal the
 * block is redrawn in place; otherwise each block is printed after the last. */
static void on_sim_report(void *ud, const sched_snapshot_t *snap, int final)
{
    struct sim_view *v = ud;
    if (v->quiet) return;
    cli_table_opts_t o = {.rows = 40,
                          .params = v->params,
                          .nparams = v->nparams,
                          .time_attr = v->time_attr,
                          .settings = v->settings};
    if (v->tty) {
        struct winsize ws;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 1) {
            o.rows = ws.ws_row - 2;
            o.cols = ws.ws_col;
        }
    } else if (!final) {
        o.rows = 20;
    }
    const char **last = cli_last_results(&v->last, snap);
    o.last_results = last;
    char *text = cli_render_status(snap, &o);
    free(last);
    if (!text) return;
    char cost[256];
    cost_line(v, cost, sizeof cost);
    if (v->tty && v->last_lines > 0) printf("\033[%dA\r\033[J", v->last_lines);
    printf("%s\n%s", cost, text);
    if (!v->tty && !final) putchar('\n');
    fflush(stdout);
    v->last_lines = 1;
    for (const char *p = text; *p; p++)
        v->last_lines += *p == '\n';
    free(text);
}

/* The pool protocol's hooks for the loop (sched_choices_t) over sim's pool. */
static size_t pool_unused(void *ud, const cJSON *const **configs)
{
    return sim_pool_unused(ud, configs);
}

static int pool_take(void *ud, int64_t trial_no, size_t k)
{
    return sim_pool_take(ud, trial_no, k) == 0 ? 0 : SCHED_EINVAL;
}

/* What the pool protocol cannot replay, in words that name the fix: 0 when none. */
static int pool_refusal(const space_settings_t *set)
{
    if (set->sched.type == SPACE_SCHED_PBT) {
        cli_error("simulate: --pool with PBT: PBT's explore changes a trial's configuration "
                  "while it runs, which no recorded row has; simulate PBT without --pool");
        return -1;
    }
    if (set->npoints > 0) {
        cli_error("simulate: --pool with points_to_evaluate: in the pool protocol every "
                  "configuration is a recorded row the searcher chooses; leave "
                  "points_to_evaluate out of space.json (or simulate without --pool)");
        return -1;
    }
    return 0;
}

static double real_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cli_cmd_simulate(int argc, char **argv)
{
    if (cli_help(argc, argv, sim_usage)) return CLI_EXIT_OK;
    struct sim_args a;
    if (parse_sim_args(argc, argv, &a) != 0) return CLI_EXIT_USAGE;
    char err[1024];
    space_t *sp = NULL;
    if (space_load(a.file, &sp, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return CLI_EXIT_USAGE;
    }
    const space_settings_t *set = space_settings(sp);
    if (a.pool && pool_refusal(set) != 0) {
        space_free(sp);
        return CLI_EXIT_USAGE;
    }
    store_t *st = NULL;
    sim_pool_t *spool = NULL;
    sim_curves_t *curves = NULL;
    sched_exec_t *ex = NULL;
    sched_pool_t *pool = NULL;
    sched_loop_t *L = NULL;
    const char **params = NULL;
    struct sim_view view = {0};
    int rc = CLI_EXIT_FAIL;
    /* 64 MiB of page cache: a simulation writes a big experiment fast, and with
     * SQLite's 2 MiB its batches spill into the WAL (bench/sim/README.md). */
    if (store_open(a.db, 0, &st, err, sizeof err) != 0 ||
        store_set_cache(st, 64, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto out;
    }
    int crc = a.table       ? sim_table_open(a.table, sp, &curves, err, sizeof err)
              : a.synthetic ? sim_synth_open(a.synthetic, sp, &curves, err, sizeof err)
                            : 0;
    if (crc != 0) {
        cli_error("simulate: %s", err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    if (a.from && curves_from_db(st, a.from, sp, &curves) != 0) {
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    if (a.pool && sim_pool_new(curves, &spool, err, sizeof err) != 0) {
        cli_error("simulate: %s", err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    sched_choices_t choices = {pool_unused, pool_take, spool, spool ? sim_pool_size(spool) : 0};

    /* The simulated experiment: NAME-sim, or the first NAME-sim-K not taken. */
    char name[256];
    int64_t exp_id = 0;
    for (int k = 1; k < 100000; k++) {
        if (k == 1)
            snprintf(name, sizeof name, "%.200s-sim", set->name);
        else
            snprintf(name, sizeof name, "%.200s-sim-%d", set->name, k);
        int64_t id;
        if (store_experiment_find(st, name, &id, err, sizeof err) == STORE_NOTFOUND) break;
    }
    if (space_rename(sp, name, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto out;
    }
    long workers = a.workers > 0 ? a.workers : default_workers(set);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double wall0 = (double)now.tv_sec + now.tv_nsec * 1e-9;
    cJSON *sj = space_settings_json(sp);
    cJSON *simj = cJSON_CreateObject();
    cJSON_AddStringToObject(simj, "curves", a.table ? a.table : a.synthetic ? a.synthetic : a.from);
    cJSON_AddStringToObject(simj, "source", a.table ? "table" : a.synthetic ? "synthetic" : "from");
    cJSON_AddNumberToObject(simj, "workers", (double)workers);
    cJSON_AddNumberToObject(simj, "start_delay", a.start_delay);
    cJSON_AddNumberToObject(simj, "stop_delay", a.stop_delay);
    if (a.pool) cJSON_AddTrueToObject(simj, "pool");
    if (sj)
        cJSON_AddItemToObject(sj, "simulated", simj);
    else
        cJSON_Delete(simj);
    if (cli_experiment_create(st, sp, sj, "", wall0, &exp_id, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto out;
    }

    /* Room for `workers` trials of the experiment's slice at once. */
    int ngpu = set->gpus_per_trial > 0 ? (int)ceil(workers * set->gpus_per_trial - 1e-9) : 0;
    long ncpu = workers * (set->cpus_per_trial > 0 ? set->cpus_per_trial : 1);
    if (ngpu > 100000 || ncpu > INT_MAX) {
        cli_error("simulate: %ld workers of this slice are too many", workers);
        goto out;
    }
    int *ids = calloc((size_t)ngpu + 1, sizeof *ids);
    for (int i = 0; ids && i < ngpu; i++)
        ids[i] = i;
    int prc = ids ? sched_pool_new(ids, ngpu, (int)ncpu, &pool, err, sizeof err) : SCHED_ENOMEM;
    free(ids);
    if (prc != 0) {
        cli_error("simulate: %s", err);
        goto out;
    }
    sched_clock_t clock;
    sim_exec_opts_t so = {.start_delay = a.start_delay,
                          .stop_delay = a.stop_delay,
                          /* fifo (and pbt without one) has no max_t: a trial runs to the end
                           * of its curve */
                          .full_t = set->sched.type == SPACE_SCHED_FIFO || !(set->sched.max_t > 0)
                                        ? 0
                                        : set->sched.max_t,
                          .stop_grace = set->stop_grace_s > 0 ? set->stop_grace_s : 0,
                          .wall0 = wall0,
                          .pool = spool};
    if (sim_exec_new(curves, &so, &ex, &clock, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto out;
    }
    size_t np = space_num_params(sp);
    params = calloc(np + 1, sizeof *params);
    for (size_t i = 0; params && i < np; i++)
        params[i] = space_param_name(sp, i);
    char full_to[160] = "the end of its curve";
    if (set->sched.type != SPACE_SCHED_FIFO && set->sched.max_t > 0)
        snprintf(full_to, sizeof full_to, "max_t (%s %g)", set->sched.time_attr, set->sched.max_t);
    view = (struct sim_view){.quiet = a.quiet,
                             .tty = isatty(STDOUT_FILENO),
                             .params = params,
                             .nparams = params ? np : 0,
                             .time_attr = set->sched.time_attr,
                             .ex = ex,
                             .full_to = full_to,
                             .settings = set,
                             .last = {.st = st, .exp_id = exp_id, .want = set->nobjectives > 1}};
    char results_dir[PATH_MAX];
    snprintf(results_dir, sizeof results_dir, "simulated/%s", name);
    sched_run_opts_t o = {.space = sp,
                          .store = st,
                          .experiment_id = exp_id,
                          .exec = ex,
                          .pool = pool,
                          .results_dir = results_dir,
                          .clock = &clock,
                          .report_every_s = 0,
                          .report = on_sim_report,
                          .report_ud = &view,
                          /* more rows than any terminal shows: a report of a million
                           * trials then costs no memory per trial */
                          .report_trials = 500,
                          .wake_fd = -1,
                          /* every second of real time: each commit rewrites the hot
                           * pages of the trials table and its indexes into the WAL
                           * (bench/sim/README.md) */
                          .commit_every_s = 1.0,
                          .choices = spool ? &choices : NULL};
    /* Every row before the first turn: on the virtual clock nothing waits for a launch, and
     * the first status block then shows time that has advanced. */
    if (sched_loop_new(&o, &L, err, sizeof err) != 0 ||
        sched_loop_create_rows(L, err, sizeof err) != 0) {
        cli_error("%s", err);
        goto out;
    }
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    int seen = 0, trc;
    /* The live table every second of real time on a terminal, every 10 s otherwise (the
     * virtual clock runs far faster and would redraw it at every turn). */
    double every = a.status_interval > 0 ? a.status_interval : view.tty ? 1 : 10;
    double next_report = real_s() + every;
    unsigned turns = 0;
    /* No signal pipe to wake for and no cap on the wait: the loop's own timers (a time
     * budget, a trial's time limit) bound it, and past them the virtual clock jumps
     * straight to the next event. (A cap costs a turn per capped wait: a curve whose
     * iterations take 1e12 s would cost 280 million turns an iteration under a cap of an
     * hour.) */
    while ((trc = sched_loop_turn(L, INFINITY, err, sizeof err)) > 0) {
        if (sim_interrupted > seen) sched_loop_stop(L, SIGINT), seen = sim_interrupted;
        if (!a.quiet && (++turns & 255) == 0 && real_s() >= next_report) {
            sched_loop_report(L);
            next_report = real_s() + every;
        }
    }
    sigaction(SIGINT, &old, NULL);
    if (trc < 0) {
        cli_error("simulation %s stopped: %s", name, err);
        store_experiment_set_status(st, exp_id, "INTERRUPTED", wall0, err, sizeof err);
        goto out;
    }
    sched_run_result_t res;
    sched_loop_result(L, &res);
    sim_stats_t ss;
    sim_exec_stats(ex, &ss);
    cli_run_record_end(st, exp_id, &res, wall0 + ss.elapsed_s);
    size_t ntrials = space_num_trials(sp);
    if (spool && sim_pool_size(spool) < ntrials) ntrials = sim_pool_size(spool);
    cli_run_print_ended(name, &res, set, ntrials, "Simulated");
    if (spool)
        printf("Pool protocol: %zu of the table's %zu configurations trained, each at most "
               "once%s.\n",
               sim_pool_taken(spool), sim_pool_size(spool),
               sim_pool_taken(spool) == sim_pool_size(spool) &&
                       sim_pool_size(spool) < space_num_trials(sp)
                   ? "; the pool is exhausted, so no new trials started after it"
                   : "");
    char hms[32];
    fmt_hms(ss.elapsed_s, hms, sizeof hms);
    printf("Virtual time %s with %ld worker%s; compute spent %.4g trial-hours", hms, workers,
           workers == 1 ? "" : "s", ss.spent_s / 3600);
    /* Against what the table could have run: a curve that ends before max_t is counted to
     * its end, not to max_t, which it never reaches (docs/simulate.md). */
    if (ss.full_s > 0 && ss.short_curves == 0)
        printf(", %.1f%% saved against running every trial to %s (%.4g trial-hours)",
               saved_pct(&ss), full_to, ss.full_s / 3600);
    else if (ss.full_s > 0)
        printf(", %.1f%% saved against running every trial to %s, or to the end of its "
               "recorded curve where that comes first (%.4g trial-hours; %zu of %zu trials' "
               "curves end before max_t, and nothing past a curve's end can be saved)",
               saved_pct(&ss), full_to, ss.full_s / 3600, ss.short_curves, ss.trials);
    printf(".\n");
    if (!a.synthetic)
        printf("Largest distance from a configuration to the table row that answered it: %.4g "
               "(0 = the same, 1 = as far as can be).\n",
               ss.max_distance);
    printf("Results are in %s (experiment %s): tune best %s --db %s | tune report %s --db %s\n",
           a.db, name, name, a.db, name, a.db);
    if (!a.synthetic) warn_answers(&ss, sim_curves_count(curves), set, a.from);
    if (res.notice[0]) fprintf(stderr, "tune: %s\n", res.notice);
    /* A simulation is never resumed (tune resume would start the real trials): after a
     * mistake it is simulated again, as a new experiment. */
    cli_run_fix_t fix = {
        .failed_where = "",
        .fail_fast = "Fix the table or space.json, then simulate again (each simulation is "
                     "recorded as a new experiment).",
        .no_metric = "Then simulate again (each simulation is recorded as a new experiment)."};
    fflush(stdout);
    rc = cli_run_outcome(st, exp_id, name, a.db, &res, &fix);
out:
    cli_last_free(&view.last);
    sched_loop_free(L);
    sched_exec_free(ex);
    sched_pool_free(pool);
    sim_pool_free(spool);
    sim_curves_free(curves);
    free(params);
    store_close(st);
    space_free(sp);
    return rc;
}
