/* bench_decide_store: results per second through the scheduler's per-result path, in one
 * process: the scheduler's own loop (sched_loop_turn) over a bench executor that hands it
 * result lines, so the loop's scan, ASHA, store and decision wording (scheduler/result.c)
 * are what is timed, beside each part alone (the scan, the policy, the store).
 * It prints each part alone and the whole path against the 1,000,000 results/s target and
 * against its peer, bare SQLite writing the same result rows (the floor any store with this
 * schema and durability reaches).
 * Not a test (nothing here is registered with ctest) and not the process benchmark:
 * bench/tuner/run.sh measures tune with real trial processes. */
#include <errno.h>
#include <signal.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "bench/bench_common.h"
#include "bench/tuner/floor_sql.h"
#include "scheduler/sched.h"
#include "search/settings.h"
#include "search/space.h"
#include "store/store.h"
#include "trial/trial.h"

#define TARGET_RESULTS_PER_S 1000000.0

/* Each measurement is a function of its own in profiles (perf report, callgrind's
 * --toggle-collect=run_whole), where the compiler would otherwise fold it into main. */
#define BENCH_PART __attribute__((noinline))

/* ---- the workload ------------------------------------------------------------------ */
/* Each experiment round is a fresh ASHA policy over `ntrials` trials that all run at once;
 * results arrive round-robin (one per running trial per pass, as the loop would see them
 * from many concurrent trials) until the policy stops or completes each trial. Rounds
 * repeat until `nresults` results were handled, so that millions of results go through the
 * path while the policy's state stays that of an experiment of realistic size. */
typedef struct bench {
    long nresults;
    int ntrials;
    int max_t;
    int batch;
    uint64_t seed;
    double *lr;   /* [config] */
    double *loss; /* [config * max_t + t - 1] */
    char **line;  /* config's result line at t: synth_trial's curve and fields, plus three more */
    size_t *len;
    size_t line_bytes; /* sum of lengths, for the mean */
    char dir[4096];
    int keep;
} bench_t;

/* One handled result, recorded by the policy-alone run and replayed by the parse-alone
 * and store-alone runs, so that every part sees the same stream. */
typedef struct trace_ent {
    uint32_t round;
    uint16_t slot;   /* trial within the round */
    uint16_t config; /* which line table row it reports */
    uint16_t t;
    uint8_t judged;
    uint8_t action;
} trace_ent_t;

/* Elapsed wall-clock and CPU time. The machine is shared, so CPU time is printed beside
 * wall time: when other work competes for the cores, wall time grows and CPU time much
 * less (the store's fsyncs at WAL checkpoints are wall time only). */
typedef struct span {
    double wall, cpu;
} span_t;

typedef struct counts {
    long results, judged, stopped, completed;
    int rounds;
    long trials;
    span_t work;        /* the per-result work only */
    span_t trials_time; /* creating the trial rows of each round, timed apart */
} counts_t;

static span_t span_now(void)
{
    span_t x = {bench_clock_s(CLOCK_MONOTONIC), bench_clock_s(CLOCK_PROCESS_CPUTIME_ID)};
    return x;
}

/* a - b, added to *acc */
static void span_add(span_t *acc, span_t a, span_t b)
{
    acc->wall += a.wall - b.wall;
    acc->cpu += a.cpu - b.cpu;
}

static double wall_now(void)
{
    return bench_clock_s(CLOCK_REALTIME);
}

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_decide_store: %s: %s\n", what, err);
    exit(1);
}

/* The learning curve of tests/progs/synth_trial.c and bench/tuner/optuna_sh.py:
 * loss(t) = 0.1 + 0.3 |log10(lr / 0.01)| + 1 / sqrt(t), lr log-uniform in [1e-5, 1]. The
 * line carries what a training script typically reports beside the metric. */
static void bench_make_lines(bench_t *b)
{
    size_t n = (size_t)b->ntrials * (size_t)b->max_t;
    b->lr = malloc((size_t)b->ntrials * sizeof *b->lr);
    b->loss = malloc(n * sizeof *b->loss);
    b->line = malloc(n * sizeof *b->line);
    b->len = malloc(n * sizeof *b->len);
    if (!b->lr || !b->loss || !b->line || !b->len) die("setup", "out of memory");
    uint64_t s = b->seed;
    b->line_bytes = 0;
    for (int c = 0; c < b->ntrials; c++) {
        b->lr[c] = pow(10.0, -5.0 + 5.0 * bench_uniform01(&s));
        double floor_ = 0.1 + 0.3 * fabs(log10(b->lr[c] / 0.01));
        for (int t = 1; t <= b->max_t; t++) {
            size_t k = (size_t)c * (size_t)b->max_t + (size_t)(t - 1);
            double loss = floor_ + 1.0 / sqrt((double)t);
            char buf[512];
            int w = snprintf(buf, sizeof buf,
                             "{\"training_iteration\": %d, \"loss\": %.17g, \"acc\": %.6f, "
                             "\"val_loss\": %.6f, \"time_this_iter_s\": %.6f, \"epoch\": %d}",
                             t, loss, 1.0 - loss / 3, loss * 1.05, 0.01 + 1e-4 * c, t);
            b->loss[k] = loss;
            b->line[k] = strdup(buf);
            if (!b->line[k]) die("setup", "out of memory");
            b->len[k] = (size_t)w;
            b->line_bytes += (size_t)w;
        }
    }
}

static void bench_free_lines(bench_t *b)
{
    size_t n = (size_t)b->ntrials * (size_t)b->max_t;
    for (size_t k = 0; k < n; k++)
        free(b->line[k]);
    free(b->line);
    free(b->len);
    free(b->loss);
    free(b->lr);
}

/* Which config each trial of a round reports: a fresh permutation per round, so rounds
 * differ in arrival order (and so in ASHA's cutoffs) while the line table stays fixed. */
static void round_perm(const bench_t *b, uint32_t round, uint16_t *perm)
{
    uint64_t s = b->seed ^ (0xA5A5A5A5ull + round * 0x100000001B3ull);
    for (int i = 0; i < b->ntrials; i++)
        perm[i] = (uint16_t)i;
    for (int i = b->ntrials - 1; i > 0; i--) {
        int j = (int)(bench_mix(&s) % (uint64_t)(i + 1));
        uint16_t x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
}

static sched_policy_t *new_policy(const bench_t *b, uint32_t round)
{
    sched_opts_t o = {.sched = {.type = SPACE_SCHED_ASHA,
                                .max_t = b->max_t,
                                .grace_period = 1,
                                .reduction_factor = 3,
                                .brackets = 1,
                                .min_samples_required = 3,
                                .stop_last_trials = 1},
                      .mode_max = 0,
                      .seed = b->seed + round};
    sched_policy_t *p = NULL;
    char err[256];
    if (sched_policy_new(&o, &p, err, sizeof err) != 0) die("sched_policy_new", err);
    for (int i = 0; i < b->ntrials; i++)
        if (sched_on_trial_add(p, i) != 0) die("sched_on_trial_add", "failed");
    return p;
}

/* ---- the store ------------------------------------------------------------------- */
/* A fresh database's path: NAME.db in the work folder, left over copies removed. */
static void new_db_path(const bench_t *b, const char *name, char *path, size_t n)
{
    snprintf(path, n, "%s/%s.db", b->dir, name);
    unlink(path);
}

static store_t *open_db(const bench_t *b, const char *name, int64_t *exp_id)
{
    char path[4200], err[512];
    new_db_path(b, name, path, sizeof path);
    store_t *st = NULL;
    if (store_open(path, 0, &st, err, sizeof err) != 0) die("store_open", err);
    store_experiment_t e = {.name = "bench",
                            .space_text = "{}",
                            .settings_json = "{}",
                            .metric = "loss",
                            .mode_max = 0,
                            .scheduler = "asha",
                            .results_dir = b->dir,
                            .num_trials = b->ntrials,
                            .seed = b->seed};
    if (store_experiment_create(st, &e, wall_now(), exp_id, err, sizeof err) != 0)
        die("store_experiment_create", err);
    return st;
}

static void remove_db(const bench_t *b, const char *name)
{
    if (b->keep) return;
    static const char *const sfx[] = {".db", ".db-wal", ".db-shm", ".db-journal"};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s%s", b->dir, name, sfx[i]);
        unlink(path);
    }
}

/* The trial rows of one round, as the loop creates them before launching (timed apart:
 * they cost per trial, not per result). */
static void create_trials(const bench_t *b, store_t *st, int64_t exp_id, uint32_t round,
                          const uint16_t *perm, int64_t *ids)
{
    char err[512];
    if (store_begin(st, err, sizeof err) != 0) die("store_begin", err);
    for (int i = 0; i < b->ntrials; i++) {
        char name[32], cfg[64], num[32];
        int64_t no = (int64_t)round * b->ntrials + i;
        snprintf(name, sizeof name, "trial_%05lld", (long long)no);
        snprintf(num, sizeof num, "%.17g", b->lr[perm[i]]);
        snprintf(cfg, sizeof cfg, "{\"lr\": %s}", num);
        if (store_trial_create(st, exp_id, no, name, cfg, b->dir, &ids[i], err, sizeof err) != 0)
            die("store_trial_create", err);
    }
    if (store_commit(st, err, sizeof err) != 0) die("store_commit", err);
}

/* The id the store gives trial `slot` of `round` in a fresh file: the trial rows are
 * created round by round in slot order, and SQLite numbers them from 1 (run_store checks
 * this, so that the floor writes the very ids the store does). */
static int64_t trial_id_of(const bench_t *b, uint32_t round, int slot)
{
    return (int64_t)round * b->ntrials + slot + 1;
}

/* ---- the runs ------------------------------------------------------------------- */
/* Which measurements --only keeps; the policy always runs, since it fixes the stream. */
enum {
    ONLY_PARSE = 1,
    ONLY_STORE = 2,
    ONLY_WHOLE = 4,
    ONLY_FLOOR = 8,
    ONLY_SCHEMA = 16,
    ONLY_DECISIONS = 32
};

/* The keys loop.c's on_line asks trial_result_scan for: training_iteration, the time_attr
 * (NULL: it is training_iteration) and the metric. */
static const char *const scan_keys[3] = {"training_iteration", NULL, "loss"};

/* loop.c's slow path for a line the scan leaves alone: cJSON's tree, two numbers read. */
static void parse_slow(const char *line, size_t len, double *it, double *m)
{
    cJSON *r = NULL;
    if (trial_result_parse(line, len, &r) != 1)
        die("trial_result_parse", "a result line was not taken as a result");
    *it = trial_result_number(r, "training_iteration");
    *m = trial_result_number(r, "loss");
    cJSON_Delete(r);
}

/* The stream that drives the policy alone: sched_on_result with values from the table, the
 * trace recorded for the other parts to replay. */
BENCH_PART static void run_policy(const bench_t *b, trace_ent_t *trace, counts_t *c)
{
    int n = b->ntrials;
    uint16_t *perm = malloc((size_t)n * sizeof *perm);
    int *active = malloc((size_t)n * sizeof *active);
    int *iters = malloc((size_t)n * sizeof *iters);
    if (!perm || !active || !iters) die("setup", "out of memory");
    memset(c, 0, sizeof *c);
    span_t t0 = span_now();
    for (uint32_t round = 0; c->results < b->nresults; round++) {
        round_perm(b, round, perm);
        sched_policy_t *p = new_policy(b, round);
        int nactive = n;
        for (int i = 0; i < n; i++) {
            active[i] = i;
            iters[i] = 0;
        }
        c->rounds++;
        c->trials += n;
        while (nactive > 0 && c->results < b->nresults) {
            for (int k = 0; k < nactive && c->results < b->nresults;) {
                int slot = active[k];
                int t = iters[slot] + 1;
                size_t li = (size_t)perm[slot] * (size_t)b->max_t + (size_t)(t - 1);
                sched_decision_t d;
                sched_on_result(p, slot, t, b->loss[li], &d);
                trace_ent_t *e = &trace[c->results];
                e->round = round;
                e->slot = (uint16_t)slot;
                e->config = perm[slot];
                e->t = (uint16_t)t;
                e->judged = (uint8_t)d.judged;
                e->action = (uint8_t)d.action;
                c->results++;
                iters[slot] = t;
                if (d.judged) c->judged++;
                /* A trial that reached max_t is done even if a policy forgot to say so. */
                if (d.action != SCHED_CONTINUE || t >= b->max_t) {
                    if (d.action == SCHED_STOP)
                        c->stopped++;
                    else
                        c->completed++;
                    sched_on_trial_complete(p, slot);
                    active[k] = active[--nactive]; /* the next pass visits it in turn */
                } else {
                    k++;
                }
            }
        }
        sched_policy_free(p);
    }
    span_add(&c->work, span_now(), t0);
    free(perm);
    free(active);
    free(iters);
}

/* ---- the whole path: the scheduler's own loop over a bench executor ---------------- */
/* An executor that runs no process: its wait hands the loop the round's result lines, up
 * to `batch` a turn (one turn, one transaction, as a real run commits each turn), in the
 * very order run_policy fed the policy: round-robin over the running trials, a trial
 * leaving the pass when the loop stops it or it reaches max_t. Its end is reported at once,
 * as run_policy completes it at once. So the loop's per-result path (scan, ASHA, record,
 * decision wording: result.c) is what is timed, not a copy of it. */
typedef struct bexec {
    const bench_t *b;
    const uint16_t *perm;
    int *active, nactive, k;
    int *iters;
    unsigned char *stopping; /* the loop signalled it */
    long results, limit;
    int launched_turn; /* the first turn only launches */
    span_t ends;       /* time in the loop's end handling, timed apart */
} bexec_t;

static int bx_start(void *self, const sched_start_t *s, sched_started_t *out, char *err,
                    size_t errlen)
{
    (void)err;
    (void)errlen;
    bexec_t *x = self;
    x->stopping[s->trial_no] = 0;
    out->pid = 0;
    out->exec_id = "bench";
    out->node = "";
    return 0;
}

static void bx_signal(void *self, int64_t no, int sig)
{
    (void)sig;
    ((bexec_t *)self)->stopping[no] = 1;
}

/* Reports trial slot's end (removing it from the pass at position k), timed apart. */
static void bx_end(bexec_t *x, int k, const sched_events_t *ev, void *ud)
{
    int slot = x->active[k];
    x->active[k] = x->active[--x->nactive];
    sched_exit_t ex = {0, 0, NULL};
    if (x->stopping[slot]) ex = (sched_exit_t){-1, SIGTERM, NULL};
    span_t a = span_now();
    ev->ended(ud, slot, &ex);
    span_add(&x->ends, span_now(), a);
}

static int bx_wait(void *self, double timeout, int wake_fd, const sched_events_t *ev, void *ud,
                   char *err, size_t errlen)
{
    (void)timeout;
    (void)wake_fd;
    (void)err;
    (void)errlen;
    bexec_t *x = self;
    const bench_t *b = x->b;
    if (!x->launched_turn) {
        x->launched_turn = 1;
        return 0;
    }
    if (x->results >= x->limit) { /* the stream is over: end what the loop stopped */
        for (int k = 0; k < x->nactive;)
            if (x->stopping[x->active[k]])
                bx_end(x, k, ev, ud);
            else
                k++;
        return 0;
    }
    for (int sent = 0; sent < b->batch && x->nactive > 0 && x->results < x->limit; sent++) {
        if (x->k >= x->nactive) x->k = 0; /* the next pass */
        int slot = x->active[x->k];
        int t = ++x->iters[slot];
        size_t li = (size_t)x->perm[slot] * (size_t)b->max_t + (size_t)(t - 1);
        ev->line(ud, slot, b->line[li], b->len[li], 0);
        x->results++;
        if (x->stopping[slot] || t >= b->max_t)
            bx_end(x, x->k, ev, ud);
        else
            x->k++;
    }
    return 1;
}

static void bx_release(void *self, int64_t no)
{
    (void)self;
    (void)no;
}

static void bx_free(void *self)
{
    (void)self;
}

static const sched_exec_ops_t bench_exec_ops = {"bench",    bx_start, bx_signal, bx_wait,
                                                bx_release, bx_free,  NULL,      NULL};

/* The whole path: each round an experiment of its own (a fresh ASHA policy, as in
 * run_policy) run by sched_loop_turn over the bench executor, into st. Creating the trial
 * rows (sched_loop_new), launching them (the first turn) and recording their ends are
 * timed apart: they cost per trial, not per result. */
BENCH_PART static void run_whole(const bench_t *b, store_t *st, counts_t *c)
{
    int n = b->ntrials;
    uint16_t *perm = malloc((size_t)n * sizeof *perm);
    bexec_t x = {.b = b, .perm = perm, .limit = b->nresults};
    x.active = malloc((size_t)n * sizeof *x.active);
    x.iters = malloc((size_t)n * sizeof *x.iters);
    x.stopping = malloc((size_t)n);
    if (!perm || !x.active || !x.iters || !x.stopping) die("setup", "out of memory");
    memset(c, 0, sizeof *c);
    sched_exec_t ex = {&bench_exec_ops, &x};
    char err[1024];
    span_t t0 = span_now();
    for (uint32_t round = 0; x.results < b->nresults; round++) {
        span_t a = span_now();
        round_perm(b, round, perm);
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"name\": \"bench-%u\", \"metric\": \"loss\", \"mode\": \"min\", "
                 "\"num_samples\": %d, \"max_concurrent\": %d, \"seed\": %llu, "
                 "\"command\": [\"bench\"], \"stop_grace_s\": 0, \"result_timeout_s\": 0, "
                 "\"scheduler\": {\"type\": \"asha\", \"max_t\": %d, \"grace_period\": 1, "
                 "\"reduction_factor\": 3, \"brackets\": 1}, "
                 "\"space\": {\"lr\": {\"loguniform\": [1e-5, 1]}}}",
                 round, n, n, (unsigned long long)(b->seed + round), b->max_t);
        space_t *sp = NULL;
        sched_pool_t *pool = NULL;
        if (space_parse(text, strlen(text), "bench.json", &sp, err, sizeof err) != 0)
            die("space_parse", err);
        if (sched_pool_new(NULL, 0, n, &pool, err, sizeof err) != 0) die("sched_pool_new", err);
        store_experiment_t e = {.name = space_settings(sp)->name,
                                .space_text = text,
                                .settings_json = "{}",
                                .metric = "loss",
                                .mode_max = 0,
                                .scheduler = "asha",
                                .results_dir = b->dir,
                                .num_trials = n,
                                .seed = b->seed + round};
        int64_t exp_id;
        if (store_experiment_create(st, &e, wall_now(), &exp_id, err, sizeof err) != 0)
            die("store_experiment_create", err);
        for (int i = 0; i < n; i++) {
            x.active[i] = i;
            x.iters[i] = 0;
        }
        x.nactive = n;
        x.k = 0;
        x.launched_turn = 0;
        sched_run_opts_t o = {.space = sp,
                              .store = st,
                              .experiment_id = exp_id,
                              .exec = &ex,
                              .pool = pool,
                              .results_dir = b->dir,
                              .clock = &sched_clock_real,
                              .wake_fd = -1};
        sched_loop_t *L = NULL;
        if (sched_loop_new(&o, &L, err, sizeof err) != 0) die("sched_loop_new", err);
        int rc = sched_loop_turn(L, 0, err, sizeof err); /* launches every trial */
        span_add(&c->trials_time, span_now(), a);
        int stopped = 0;
        while (rc > 0) {
            if (x.results >= x.limit && !stopped) sched_loop_stop(L, SIGTERM), stopped = 1;
            rc = sched_loop_turn(L, 0, err, sizeof err);
        }
        if (rc < 0) die("sched_loop_turn", err);
        sched_loop_free(L);
        sched_pool_free(pool);
        space_free(sp);
        c->rounds++;
        c->trials += n;
    }
    span_add(&c->work, span_now(), t0);
    c->results = x.results;
    c->trials_time.wall += x.ends.wall;
    c->trials_time.cpu += x.ends.cpu;
    c->work.wall -= c->trials_time.wall;
    c->work.cpu -= c->trials_time.cpu;
    free(perm);
    free(x.active);
    free(x.iters);
    free(x.stopping);
}

/* One number from the database at path, for the checks. */
static long db_count(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *s = NULL;
    long v = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        v = (long)sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

/* Parsing alone: the same lines in the same order, the numbers read: by loop.c's fast
 * path (trial_result_scan) or, `slow`, by its cJSON path (parse, two numbers, free). */
BENCH_PART static span_t run_parse(const bench_t *b, const trace_ent_t *trace, long n, int slow)
{
    double sum = 0;
    span_t t0 = span_now(), spent = {0, 0};
    for (long i = 0; i < n; i++) {
        size_t li = (size_t)trace[i].config * (size_t)b->max_t + (size_t)(trace[i].t - 1);
        double v[3];
        if (slow) {
            parse_slow(b->line[li], b->len[li], &v[0], &v[2]);
        } else if (trial_result_scan(b->line[li], b->len[li], scan_keys, 3, v) != 1) {
            die("trial_result_scan", "a result line was not taken as a plain result");
        }
        sum += v[0] + v[2];
    }
    span_add(&spent, span_now(), t0);
    if (!(sum > 0)) die("parse", "the numbers read back are wrong");
    return spent;
}

/* The result the store records for trace entry `e`: the values the whole path hands to
 * store_result_add (the line's iteration and metric, the clock read once per batch). */
static store_result_t trace_result(const bench_t *b, const trace_ent_t *e, int64_t trial_id,
                                   double now)
{
    size_t li = (size_t)e->config * (size_t)b->max_t + (size_t)(e->t - 1);
    store_result_t r = {.trial_id = trial_id,
                        .attempt = 1,
                        .iteration = e->t,
                        .time_value = e->t,
                        .metric = b->loss[li],
                        .wall_time = now,
                        .json = b->line[li],
                        .json_len = b->len[li]};
    return r;
}

/* The decision run_store records for trace entry e (judged). */
static store_decision_t trace_decision(const store_result_t *r, const trace_ent_t *e, double now)
{
    store_decision_t d = {.trial_id = r->trial_id,
                          .iteration = e->t,
                          .time_value = e->t,
                          .action = e->action == SCHED_STOP       ? "stop"
                                    : e->action == SCHED_COMPLETE ? "complete"
                                                                  : "continue",
                          .bracket = 0,
                          .rung = 0,
                          .milestone = e->t,
                          .value = r->metric,
                          .cutoff = r->metric,
                          .reason = "within rung 0 cutoff at milestone 1: promoted",
                          .wall_time = now};
    return d;
}

/* Where the batch that starts at trace[i] ends: after --batch results, or earlier at the
 * end of a round (the whole path commits there, before the next round's trial rows). */
static long batch_end(const bench_t *b, const trace_ent_t *trace, long n, long i)
{
    uint32_t round = trace[i].round;
    long end = i + 1;
    while (end < n && end - i < b->batch && trace[end].round == round)
        end++;
    return end;
}

/* Storing alone: the same results and decisions (values from the table), batched the same
 * way; the trial rows of each round are created outside the timed part. */
BENCH_PART static span_t run_store(const bench_t *b, const trace_ent_t *trace, long n)
{
    int64_t exp_id;
    store_t *st = open_db(b, "store_only", &exp_id);
    uint16_t *perm = malloc((size_t)b->ntrials * sizeof *perm);
    int64_t *ids = malloc((size_t)b->ntrials * sizeof *ids);
    if (!perm || !ids) die("setup", "out of memory");
    char err[512];
    span_t spent = {0, 0};
    long i = 0;
    while (i < n) {
        uint32_t round = trace[i].round;
        round_perm(b, round, perm);
        create_trials(b, st, exp_id, round, perm, ids);
        for (int k = 0; k < b->ntrials; k++)
            if (ids[k] != trial_id_of(b, round, k))
                die("store_trial_create", "trial ids differ from those the floor writes");
        span_t t0 = span_now();
        while (i < n && trace[i].round == round) {
            if (store_begin(st, err, sizeof err) != 0) die("store_begin", err);
            double now = wall_now(); /* once per batch, as loop.c per turn */
            for (long end = batch_end(b, trace, n, i); i < end; i++) {
                const trace_ent_t *e = &trace[i];
                store_result_t sr = trace_result(b, e, ids[e->slot], now);
                if (store_result_add(st, &sr, err, sizeof err) != 0) die("store_result_add", err);
                if (e->judged) {
                    store_decision_t sd = trace_decision(&sr, e, now);
                    if (store_decision_add(st, &sd, err, sizeof err) != 0)
                        die("store_decision_add", err);
                }
            }
            if (store_commit(st, err, sizeof err) != 0) die("store_commit", err);
        }
        span_add(&spent, span_now(), t0);
    }
    store_close(st);
    remove_db(b, "store_only");
    free(perm);
    free(ids);
    return spent;
}

/* ---- the SQLite floor ------------------------------------------------------------ */
/* Rows per INSERT, as STORE__RESULT_ROWS in store/store_int.h (private to the store). */
#define FLOOR_ROWS 16

static void floor_die(sqlite3 *db, const char *what)
{
    die(what, db ? sqlite3_errmsg(db) : "out of memory");
}

/* Runs a prepared statement that returns no rows, and resets it. */
static void floor_step(sqlite3 *db, sqlite3_stmt *s, const char *what)
{
    if (sqlite3_step(s) != SQLITE_DONE) floor_die(db, what);
    sqlite3_reset(s);
}

/* The statement of `rows` rows of `ncols` anonymous parameters each, as the store prepares
 * its multi-row INSERTs: once, kept for the run. */
static sqlite3_stmt *floor_prepare(sqlite3 *db, const char *head, int ncols, int rows)
{
    char sql[512 + FLOOR_ROWS * 48];
    int w = snprintf(sql, sizeof sql, "%s VALUES ", head);
    for (int j = 0; j < rows; j++) {
        w += snprintf(sql + w, sizeof sql - (size_t)w, "%s(", j ? ", " : "");
        for (int c = 0; c < ncols; c++)
            w += snprintf(sql + w, sizeof sql - (size_t)w, "%s?", c ? ", " : "");
        w += snprintf(sql + w, sizeof sql - (size_t)w, ")");
    }
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) != SQLITE_OK)
        floor_die(db, "sqlite3_prepare_v3");
    return s;
}

/* store/schema.sql's result_ranges and decisions, column for column, and the one column of
 * trials that their foreign key reads. */
static const char floor_schema_more[] =
    "CREATE TABLE trials (id INTEGER PRIMARY KEY);"
    "CREATE TABLE result_ranges ("
    " trial_id   INTEGER NOT NULL REFERENCES trials (id) ON DELETE CASCADE,"
    " attempt    INTEGER NOT NULL,"
    " first_id   INTEGER NOT NULL,"
    " last_id    INTEGER NOT NULL,"
    " n          INTEGER NOT NULL,"
    " min_metric REAL,"
    " max_metric REAL,"
    " PRIMARY KEY (trial_id, attempt, first_id)"
    ") WITHOUT ROWID;"
    "CREATE TABLE decisions ("
    " id         INTEGER PRIMARY KEY,"
    " trial_id   INTEGER NOT NULL,"
    " iteration  INTEGER,"
    " time_value REAL,"
    " action     TEXT NOT NULL,"
    " bracket    INTEGER,"
    " rung       INTEGER,"
    " milestone  REAL,"
    " value      REAL,"
    " cutoff     REAL,"
    " reason     TEXT,"
    " wall_time  REAL)";

/* Binds trace entry e's result row at parameter p. */
static void floor_bind_result(sqlite3_stmt *s, int p, const store_result_t *r)
{
    sqlite3_bind_int64(s, p, r->trial_id);
    sqlite3_bind_int(s, p + 1, r->attempt);
    sqlite3_bind_int64(s, p + 2, r->iteration);
    sqlite3_bind_double(s, p + 3, r->time_value);
    sqlite3_bind_double(s, p + 4, r->metric);
    sqlite3_bind_double(s, p + 5, r->wall_time);
    /* the line table outlives the step, as the store's arena does */
    sqlite3_bind_text(s, p + 6, r->json, (int)r->json_len, SQLITE_STATIC);
}

/* The floor's state for the schema's other rows (FLOOR_SCHEMA): per trial of the round,
 * its results in the batch (a linked list through the batch's entries) and its range. */
typedef struct floor_rows {
    sqlite3_stmt *r1, *rn, *g1, *gn, *d1, *dn, *trial;
    int *head, *tail, *next; /* [slot], [slot], [entry of the batch] */
    int *slots;              /* the batch's trials in order of first result */
    int *order;              /* the batch's entries grouped by trial */
    int64_t *first_id;       /* [slot] the first id of its range in this batch */
    int nslots;
} floor_rows_t;

/* Writes the batch trace[i, end) as the store does with the schema's rows: results grouped
 * by trial (ids consecutive per trial), 16 to an INSERT; a result_ranges row per trial in
 * the batch, in the table's key order, 16 to an INSERT; the judged results' decisions, 16
 * to an INSERT (ranges 0: no result_ranges rows). The grouping is done here (a pass over
 * the batch); nothing else is. */
static void floor_schema_batch(const bench_t *b, sqlite3 *db, floor_rows_t *f,
                               const trace_ent_t *trace, long i, long end, double now,
                               int64_t *next_id, int ranges)
{
    int n = (int)(end - i), ns = 0;
    for (int k = 0; k < n; k++) {
        int slot = trace[i + k].slot;
        f->next[k] = -1;
        if (f->head[slot] < 0) {
            f->head[slot] = k;
            f->slots[ns++] = slot;
        } else {
            f->next[f->tail[slot]] = k;
        }
        f->tail[slot] = k;
    }
    int m = 0;
    for (int g = 0; g < ns; g++) {
        f->first_id[f->slots[g]] = *next_id + m;
        for (int k = f->head[f->slots[g]]; k >= 0; k = f->next[k])
            f->order[m++] = k;
    }
    for (int k = 0; k < n;) {
        int rows = n - k >= FLOOR_ROWS ? FLOOR_ROWS : 1;
        sqlite3_stmt *s = rows == 1 ? f->r1 : f->rn;
        for (int j = 0; j < rows; j++) {
            const trace_ent_t *e = &trace[i + f->order[k + j]];
            store_result_t r = trace_result(b, e, trial_id_of(b, e->round, e->slot), now);
            floor_bind_result(s, 1 + 7 * j, &r);
        }
        floor_step(db, s, "INSERT INTO results");
        k += rows;
    }
    *next_id += n;
    /* the ranges in key order: trial ids ascend with the slot within a round */
    int w = 0;
    for (int slot = 0; slot < f->nslots && w < ns; slot++)
        if (f->head[slot] >= 0) f->slots[w++] = slot;
    for (int g = 0; ranges && g < ns;) {
        int rows = ns - g >= FLOOR_ROWS ? FLOOR_ROWS : 1;
        sqlite3_stmt *s = rows == 1 ? f->g1 : f->gn;
        for (int j = 0; j < rows; j++) {
            int slot = f->slots[g + j], cnt = 0;
            double mn = NAN, mx = NAN;
            for (int k = f->head[slot]; k >= 0; k = f->next[k]) {
                const trace_ent_t *e = &trace[i + k];
                double v = b->loss[(size_t)e->config * (size_t)b->max_t + (size_t)(e->t - 1)];
                if (!(v >= mn)) mn = v;
                if (!(v <= mx)) mx = v;
                cnt++;
            }
            int p = 1 + 7 * j;
            sqlite3_bind_int64(s, p, trial_id_of(b, trace[i].round, slot));
            sqlite3_bind_int(s, p + 1, 1);
            sqlite3_bind_int64(s, p + 2, f->first_id[slot]);
            sqlite3_bind_int64(s, p + 3, f->first_id[slot] + cnt - 1);
            sqlite3_bind_int(s, p + 4, cnt);
            sqlite3_bind_double(s, p + 5, mn);
            sqlite3_bind_double(s, p + 6, mx);
        }
        floor_step(db, s, "INSERT INTO result_ranges");
        g += rows;
    }
    for (int g = 0; g < ns; g++)
        f->head[f->slots[g]] = -1;
    /* the decisions, in arrival order */
    int nd = 0;
    for (int k = 0; k < n; k++)
        if (trace[i + k].judged) f->order[nd++] = k;
    for (int k = 0; k < nd;) {
        int rows = nd - k >= FLOOR_ROWS ? FLOOR_ROWS : 1;
        sqlite3_stmt *s = rows == 1 ? f->d1 : f->dn;
        for (int j = 0; j < rows; j++) {
            const trace_ent_t *e = &trace[i + f->order[k + j]];
            store_result_t r = trace_result(b, e, trial_id_of(b, e->round, e->slot), now);
            store_decision_t d = trace_decision(&r, e, now);
            int p = 1 + 11 * j;
            sqlite3_bind_int64(s, p, d.trial_id);
            sqlite3_bind_int64(s, p + 1, d.iteration);
            sqlite3_bind_double(s, p + 2, d.time_value);
            sqlite3_bind_text(s, p + 3, d.action, -1, SQLITE_STATIC);
            sqlite3_bind_int(s, p + 4, d.bracket);
            sqlite3_bind_int(s, p + 5, d.rung);
            sqlite3_bind_double(s, p + 6, d.milestone);
            sqlite3_bind_double(s, p + 7, d.value);
            sqlite3_bind_double(s, p + 8, d.cutoff);
            sqlite3_bind_text(s, p + 9, d.reason, -1, SQLITE_STATIC);
            sqlite3_bind_double(s, p + 10, d.wall_time);
        }
        floor_step(db, s, "INSERT INTO decisions");
        k += rows;
    }
}

/* The peers: bare SQLite in a fresh WAL file with the store's pragmas, the same values
 * bound into 16-row INSERTs (the rest of a batch a row at a time, as the store does),
 * committed in the same batches, no parse or policy.
 * FLOOR_RESULTS (the floor): only the results table, the least work that records the same
 * result rows; no store keeping this schema and this durability can beat it.
 * FLOOR_SCHEMA: the rows the schema asks for besides: a result_ranges row per trial per
 * batch (its foreign key checked) and the decisions, written as floor_schema_batch says:
 * what SQLite itself costs a store that keeps store/schema.sql as it is.
 * FLOOR_DECISIONS: the same without the result_ranges rows: results and decisions, the
 * rows any tuner that records every result and every decision must write.
 * (store_commit's timed checkpoint, every 10 s, is left out of all three.) */
enum { FLOOR_RESULTS, FLOOR_SCHEMA, FLOOR_DECISIONS };

BENCH_PART static span_t run_floor(const bench_t *b, const trace_ent_t *trace, long n, int rows)
{
    const char *name = rows == FLOOR_SCHEMA      ? "floor_schema"
                       : rows == FLOOR_DECISIONS ? "floor_decisions"
                                                 : "floor";
    int more = rows != FLOOR_RESULTS, ranges = rows == FLOOR_SCHEMA;
    char path[4200];
    new_db_path(b, name, path, sizeof path);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK)
        floor_die(db, "sqlite3_open_v2");
    if (sqlite3_exec(db, floor_pragmas, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, floor_schema, NULL, NULL, NULL) != SQLITE_OK ||
        (more && sqlite3_exec(db, floor_schema_more, NULL, NULL, NULL) != SQLITE_OK))
        floor_die(db, "floor database");
    sqlite3_stmt *begin = NULL, *commit = NULL, *count = NULL;
    if (sqlite3_prepare_v3(db, "BEGIN IMMEDIATE", -1, SQLITE_PREPARE_PERSISTENT, &begin, NULL) ||
        sqlite3_prepare_v3(db, "COMMIT", -1, SQLITE_PREPARE_PERSISTENT, &commit, NULL) ||
        sqlite3_prepare_v2(db, "SELECT count(*) FROM results", -1, &count, NULL))
        floor_die(db, "sqlite3_prepare_v3");
    static const char rhead[] = "INSERT INTO results (trial_id, attempt, iteration, time_value,"
                                " metric, wall_time, data)";
    static const char ghead[] = "INSERT INTO result_ranges (trial_id, attempt, first_id, last_id,"
                                " n, min_metric, max_metric)";
    static const char dhead[] = "INSERT INTO decisions (trial_id, iteration, time_value, action,"
                                " bracket, rung, milestone, value, cutoff, reason, wall_time)";
    floor_rows_t f = {.r1 = floor_prepare(db, rhead, 7, 1),
                      .rn = floor_prepare(db, rhead, 7, FLOOR_ROWS),
                      .nslots = b->ntrials};
    if (more) {
        f.g1 = floor_prepare(db, ghead, 7, 1);
        f.gn = floor_prepare(db, ghead, 7, FLOOR_ROWS);
        f.d1 = floor_prepare(db, dhead, 11, 1);
        f.dn = floor_prepare(db, dhead, 11, FLOOR_ROWS);
        if (sqlite3_prepare_v3(db, "INSERT INTO trials (id) VALUES (?)", -1,
                               SQLITE_PREPARE_PERSISTENT, &f.trial, NULL))
            floor_die(db, "sqlite3_prepare_v3");
        size_t nb = (size_t)b->batch, nt = (size_t)b->ntrials;
        f.head = malloc(nt * sizeof *f.head);
        f.tail = malloc(nt * sizeof *f.tail);
        f.first_id = malloc(nt * sizeof *f.first_id);
        f.slots = malloc(nt * sizeof *f.slots);
        f.next = malloc(nb * sizeof *f.next);
        f.order = malloc(nb * sizeof *f.order);
        if (!f.head || !f.tail || !f.first_id || !f.slots || !f.next || !f.order)
            die("setup", "out of memory");
        for (size_t k = 0; k < nt; k++)
            f.head[k] = -1;
    }

    span_t spent = {0, 0};
    int64_t next_id = 1;
    uint32_t round = UINT32_MAX;
    for (long i = 0; i < n;) {
        if (ranges && trace[i].round != round) {
            /* the round's trial rows, untimed (the store's are created untimed too) */
            round = trace[i].round;
            floor_step(db, begin, "BEGIN");
            for (int k = 0; k < b->ntrials; k++) {
                sqlite3_bind_int64(f.trial, 1, trial_id_of(b, round, k));
                floor_step(db, f.trial, "INSERT INTO trials");
            }
            floor_step(db, commit, "COMMIT");
        }
        span_t t0 = span_now();
        floor_step(db, begin, "BEGIN");
        double now = wall_now();
        long end = batch_end(b, trace, n, i);
        if (more) {
            floor_schema_batch(b, db, &f, trace, i, end, now, &next_id, ranges);
            i = end;
        }
        while (i < end) {
            int k = end - i >= FLOOR_ROWS ? FLOOR_ROWS : 1;
            sqlite3_stmt *s = k == 1 ? f.r1 : f.rn;
            for (int j = 0; j < k; j++) {
                const trace_ent_t *e = &trace[i + j];
                store_result_t r = trace_result(b, e, trial_id_of(b, e->round, e->slot), now);
                floor_bind_result(s, 1 + 7 * j, &r);
            }
            floor_step(db, s, "INSERT INTO results");
            i += k;
        }
        floor_step(db, commit, "COMMIT");
        span_add(&spent, span_now(), t0);
    }

    /* A floor that lost rows would flatter nobody: check they are all there. */
    if (sqlite3_step(count) != SQLITE_ROW || sqlite3_column_int64(count, 0) != n)
        die("floor", "the results table does not hold every row written");
    sqlite3_finalize(count);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_stmt *all[] = {f.r1, f.rn, f.g1, f.gn, f.d1, f.dn, f.trial};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        sqlite3_finalize(all[k]);
    free(f.head);
    free(f.tail);
    free(f.first_id);
    free(f.slots);
    free(f.next);
    free(f.order);
    if (sqlite3_close(db) != SQLITE_OK) floor_die(db, "sqlite3_close");
    remove_db(b, name);
    return spent;
}

/* ---- main ----------------------------------------------------------------------- */
static void usage(FILE *f)
{
    fprintf(f, "usage: bench_decide_store [--results N] [--trials N] [--max-t T] [--batch N]\n"
               "                          [--seed S] [--only PART] [--dir DIR] [--keep]\n"
               "  --results N  results to push through each measurement (default 2000000)\n"
               "  --trials N   trials per experiment round, all running at once (default 1000)\n"
               "  --max-t T    ASHA max_t; grace 1, reduction factor 3 (default 243)\n"
               "  --batch N    results per store transaction, as one loop turn (default 1000)\n"
               "  --only PARTS measure only these (comma-separated): parse, policy, store,\n"
               "               floor (bare SQLite, results rows only: the peer), schema (bare\n"
               "               SQLite, the schema's rows: results, ranges, decisions),\n"
               "               decisions (bare SQLite, results and decisions, no ranges) or\n"
               "               whole (e.g. --only floor,whole under perf)\n"
               "  --dir DIR    where the databases go (default: a new folder under $TMPDIR)\n"
               "  --keep       keep the databases\n");
}

/* --only's parts, comma-separated; ~0u when one is unknown. */
static unsigned parse_only(const char *v)
{
    static const struct {
        const char *name;
        unsigned bit;
    } parts[] = {{"parse", ONLY_PARSE},        {"policy", 0},           {"store", ONLY_STORE},
                 {"floor", ONLY_FLOOR},        {"schema", ONLY_SCHEMA}, {"whole", ONLY_WHOLE},
                 {"decisions", ONLY_DECISIONS}};
    unsigned only = 0;
    while (*v) {
        size_t n = strcspn(v, ",");
        size_t k = 0;
        while (k < sizeof parts / sizeof parts[0] &&
               !(strlen(parts[k].name) == n && !strncmp(parts[k].name, v, n)))
            k++;
        if (k == sizeof parts / sizeof parts[0]) return ~0u;
        only |= parts[k].bit;
        v += n;
        if (*v == ',') v++;
    }
    return only;
}

static long arg_long(const char *opt, const char *v, long lo, long hi)
{
    return bench_arg_long("bench_decide_store", opt, v, lo, hi);
}

static double rate(long n, double s)
{
    return s > 0 ? (double)n / s : 0;
}

static void row(const char *what, long n, span_t s)
{
    double r = rate(n, s.wall);
    printf("  %-46s %9ld %8.3f %8.3f %11.0f %11.0f %9.1f %7.2fx\n", what, n, s.wall, s.cpu, r,
           rate(n, s.cpu), n > 0 ? s.wall * 1e9 / (double)n : 0, r / TARGET_RESULTS_PER_S);
}

int main(int argc, char **argv)
{
    bench_t b = {.nresults = 2000000, .ntrials = 1000, .max_t = 243, .batch = 1000, .seed = 1};
    const char *dir = NULL;
    unsigned only =
        ONLY_PARSE | ONLY_STORE | ONLY_FLOOR | ONLY_SCHEMA | ONLY_DECISIONS | ONLY_WHOLE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--keep")) {
            b.keep = 1;
        } else if (v && !strcmp(a, "--results")) {
            b.nresults = arg_long(a, v, 1, 1000000000L), i++;
        } else if (v && !strcmp(a, "--trials")) {
            b.ntrials = (int)arg_long(a, v, 1, 65535), i++;
        } else if (v && !strcmp(a, "--max-t")) {
            b.max_t = (int)arg_long(a, v, 1, 65535), i++;
        } else if (v && !strcmp(a, "--batch")) {
            b.batch = (int)arg_long(a, v, 1, 100000000), i++;
        } else if (v && !strcmp(a, "--seed")) {
            b.seed = (uint64_t)arg_long(a, v, 0, 0x7fffffffL), i++;
        } else if (v && !strcmp(a, "--only")) {
            only = parse_only(v);
            if (only == ~0u) {
                fprintf(stderr,
                        "bench_decide_store: --only wants parse, policy, store, floor, schema, "
                        "decisions or "
                        "whole (or several, comma-separated), not \"%s\"\n",
                        v);
                return 2;
            }
            i++;
        } else if (v && !strcmp(a, "--dir")) {
            dir = v, i++;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (dir) {
        snprintf(b.dir, sizeof b.dir, "%s", dir);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(b.dir, sizeof b.dir, "%s/bench_decide_store.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(b.dir)) die("mkdtemp", strerror(errno));
    }

    bench_make_lines(&b);
    trace_ent_t *trace = malloc((size_t)b.nresults * sizeof *trace);
    if (!trace) die("setup", "out of memory");

    /* 1. The policy alone; it also fixes the stream the other parts replay. */
    counts_t cp;
    run_policy(&b, trace, &cp);
    /* 2. Parsing alone. */
    span_t none = {0, 0};
    span_t parse_s = only & ONLY_PARSE ? run_parse(&b, trace, cp.results, 0) : none;
    span_t slow_s = only & ONLY_PARSE ? run_parse(&b, trace, cp.results, 1) : none;
    /* 3. The store alone. */
    span_t store_s = only & ONLY_STORE ? run_store(&b, trace, cp.results) : none;
    /* 4. The peer: bare SQLite writing the same result rows. */
    span_t floor_s = only & ONLY_FLOOR ? run_floor(&b, trace, cp.results, FLOOR_RESULTS) : none;
    span_t schema_s = only & ONLY_SCHEMA ? run_floor(&b, trace, cp.results, FLOOR_SCHEMA) : none;
    span_t dec_s = only & ONLY_DECISIONS ? run_floor(&b, trace, cp.results, FLOOR_DECISIONS) : none;
    /* 5. The whole path, into a fresh database. */
    counts_t cw = cp;
    if (only & ONLY_WHOLE) {
        int64_t exp_id;
        store_t *st = open_db(&b, "whole", &exp_id);
        run_whole(&b, st, &cw);
        store_close(st);
        char path[4200];
        snprintf(path, sizeof path, "%s/whole.db", b.dir);
        cw.judged = db_count(path, "SELECT count(*) FROM decisions");
        cw.stopped = db_count(path, "SELECT count(*) FROM decisions WHERE action = 'stop'");
        long rows = db_count(path, "SELECT count(*) FROM results");
        if (cw.results != cp.results || rows != cp.results || cw.judged != cp.judged ||
            cw.stopped != cp.stopped)
            die("whole path", "the policy decided differently than when run alone");
    }

    printf(
        "bench_decide_store: results/s through scheduler/loop.c's per-result path, in-process\n");
    printf("  workload: ASHA max_t=%d grace=1 rf=3, %d trials per experiment round, %d rounds "
           "(%ld trials), %ld results, %.1f results/trial\n",
           b.max_t, b.ntrials, cp.rounds, cp.trials, cp.results,
           (double)cp.results / (double)cp.trials);
    printf("  decisions: %ld judged (%ld stopped early, %ld completed at max_t); result lines "
           "%.0f bytes on average; one store transaction per %d results\n",
           cp.judged, cp.stopped, cp.completed,
           (double)b.line_bytes / ((double)b.ntrials * b.max_t), b.batch);
    double load[3] = {NAN, NAN, NAN};
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = NAN;
        fclose(lf);
    }
    printf("  machine: %ld cores online, load average %.2f %.2f %.2f at the end (others' work "
           "inflates wall time more than CPU time)\n",
           sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1], load[2]);
    printf("  databases: fresh SQLite files (WAL) in %s%s\n\n", b.dir,
           b.keep ? "" : ", removed at the end");
    printf("  %-46s %9s %8s %8s %11s %11s %9s %8s\n", "part", "results", "wall s", "cpu s",
           "results/s", "per cpu s", "ns/result", "/target");
    if (only & ONLY_PARSE) {
        row("parse (trial_result_scan, loop.c's fast path)", cp.results, parse_s);
        row("  for comparison: cJSON path (not taken)", cp.results, slow_s);
    }
    row("policy (sched_on_result, ASHA)", cp.results, cp.work);
    if (only & ONLY_STORE) row("store (result_add + decision_add, batched)", cp.results, store_s);
    if (only & ONLY_WHOLE) {
        row("whole path (sched_loop_turn: scan+ASHA+store)", cw.results, cw.work);
        span_t all = {cw.work.wall + cw.trials_time.wall, cw.work.cpu + cw.trials_time.cpu};
        row("whole path incl. creating/launching/ending trials", cw.results, all);
    }
    if (only & ONLY_FLOOR) row("floor: bare SQLite, results INSERTs only", cp.results, floor_s);
    if (only & ONLY_SCHEMA) row("bare SQLite, results + ranges + decisions", cp.results, schema_s);
    if (only & ONLY_DECISIONS) row("bare SQLite, results + decisions", cp.results, dec_s);
    if (only & (ONLY_WHOLE | ONLY_FLOOR | ONLY_SCHEMA | ONLY_DECISIONS)) printf("\n");
    if (only & ONLY_WHOLE) {
        double whole = rate(cw.results, cw.work.wall);
        printf("  trials: %ld created, launched and ended in %.3f s (%.0f trials/s), timed apart "
               "from the results\n",
               cw.trials, cw.trials_time.wall, rate(cw.trials, cw.trials_time.wall));
        printf("  target: whole path >= %.0f results/s (wall clock): %s (%.2fx the target; "
               "%.2fx per CPU second)\n",
               TARGET_RESULTS_PER_S, whole >= TARGET_RESULTS_PER_S ? "MET" : "NOT MET",
               whole / TARGET_RESULTS_PER_S, rate(cw.results, cw.work.cpu) / TARGET_RESULTS_PER_S);
    }
    if (only & ONLY_FLOOR) {
        /* The floor bounds any store with this schema and durability: the target is only
         * within reach when the floor itself is well above it. */
        double fl = rate(cp.results, floor_s.wall), fl_cpu = rate(cp.results, floor_s.cpu);
        printf("  peer: bare SQLite floor %.0f results/s = %.2fx the target (%.2fx per CPU "
               "second)",
               fl, fl / TARGET_RESULTS_PER_S, fl_cpu / TARGET_RESULTS_PER_S);
        if (only & ONLY_WHOLE)
            printf("; whole path = %.2fx the floor (%.2fx per CPU second)",
                   fl > 0 ? rate(cw.results, cw.work.wall) / fl : 0,
                   fl_cpu > 0 ? rate(cw.results, cw.work.cpu) / fl_cpu : 0);
        printf("\n");
    }
    if (only & ONLY_SCHEMA) {
        /* What SQLite alone costs to write every row the schema asks for: the part of the
         * gap to the floor that no code outside SQLite can close. */
        double sc = rate(cp.results, schema_s.wall), sc_cpu = rate(cp.results, schema_s.cpu);
        printf("  schema: bare SQLite writing results, ranges and decisions %.0f results/s", sc);
        if (only & ONLY_FLOOR)
            printf(" = %.2fx the floor (%.2fx per CPU second)", sc / rate(cp.results, floor_s.wall),
                   sc_cpu / rate(cp.results, floor_s.cpu));
        if (only & ONLY_WHOLE)
            printf("; whole path = %.2fx this (%.2fx per CPU second)",
                   sc > 0 ? rate(cw.results, cw.work.wall) / sc : 0,
                   sc_cpu > 0 ? rate(cw.results, cw.work.cpu) / sc_cpu : 0);
        printf("\n");
    }
    if ((only & ONLY_DECISIONS) && (only & ONLY_FLOOR)) {
        /* 0.8x the floor leaves a fixed budget a result beyond the results rows; the rows
         * that record each decision, and the scan of the line, are not optional for a tuner
         * that records every decision and reads its trials' output. Per CPU second: the
         * machine's other work moves wall time more. */
        double fl_ns = 1e9 * floor_s.cpu / (double)cp.results;
        double dec_ns = 1e9 * (dec_s.cpu - floor_s.cpu) / (double)cp.results;
        printf("  decisions: bare SQLite writing results and decisions (no ranges) %.0f "
               "results/s = %.2fx the floor (%.2fx per CPU second); the decision rows %.0f ns a "
               "result\n",
               rate(cp.results, dec_s.wall),
               rate(cp.results, dec_s.wall) / rate(cp.results, floor_s.wall),
               rate(cp.results, dec_s.cpu) / rate(cp.results, floor_s.cpu), dec_ns);
        printf("  budget: 0.8x the floor leaves %.0f ns of CPU a result beyond the results rows "
               "for everything else; the decision rows take %.0f of them",
               fl_ns * (1 / 0.8 - 1), dec_ns);
        if (only & ONLY_PARSE)
            printf(", the scan of the line %.0f", 1e9 * parse_s.cpu / (double)cp.results);
        printf(", ASHA %.0f\n", 1e9 * cp.work.cpu / (double)cp.results);
    }

    remove_db(&b, "whole");
    if (!dir && !b.keep) rmdir(b.dir);
    free(trace);
    bench_free_lines(&b);
    return 0;
}
