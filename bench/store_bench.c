/* store_bench: how many results a second go through store_result_add in batches, the
 * way the scheduler writes them (one transaction per loop turn), against peers measured in
 * the same run: the obvious design on a bare sqlite3 connection (one INSERT per result,
 * with and without a per-row index on results(trial_id, attempt)) and appending the same
 * JSON lines to per-trial files (what Ray Tune's JSON logger does). Also measures what a
 * per-row index on results would cost the store. Not a test: it prints numbers and
 * asserts nothing.
 *
 *   store_bench [--results N] [--batch B] [--trials T] [--dir DIR] [--decisions]
 */
#include "store/store.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NJSON 1024

struct opts {
    long results;
    long batch;
    long trials;
    const char *dir;
    int decisions; /* also record one decision per 4 results (ASHA at rf 4, roughly) */
};

struct fixture {
    char *json[NJSON];
    size_t len[NJSON];
    double metric[NJSON];
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Process CPU time: on a shared machine it moves less than the wall clock. */
static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

/* Wall and CPU seconds of the last run_* call. */
static double last_cpu;

static void die(const char *what, const char *err)
{
    fprintf(stderr, "store_bench: %s: %s\n", what, err);
    exit(1);
}

/* Result lines of the size and shape trials really send (~200 bytes). */
static void make_fixture(struct fixture *f)
{
    for (int i = 0; i < NJSON; i++) {
        char buf[512];
        double acc = 0.5 + 0.4 * sin(i * 0.37), loss = 1.0 / (1.0 + i);
        int n =
            snprintf(buf, sizeof buf,
                     "{\"training_iteration\": %d, \"mean_accuracy\": %.17g, \"loss\": %.17g, "
                     "\"time_this_iter_s\": 0.0123, \"time_total_s\": %.6f, "
                     "\"timestamp\": 1732200000, \"trial_id\": \"trial_%05d\", \"done\": false}",
                     i + 1, acc, loss, 0.0123 * (i + 1), i % 100);
        f->json[i] = strdup(buf);
        f->len[i] = (size_t)n;
        f->metric[i] = acc;
    }
}

static void rm_db(const char *path)
{
    char p[4200];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : 0;
}

/* A fresh database with one experiment and `trials` trials; returns the first trial id. */
static store_t *setup(const char *path, const struct opts *o, int64_t *first_trial)
{
    char err[512];
    store_t *st = NULL;
    rm_db(path);
    if (store_open(path, 0, &st, err, sizeof err)) die("open", err);
    store_experiment_t e = {.name = "bench",
                            .metric = "mean_accuracy",
                            .mode_max = 1,
                            .scheduler = "asha",
                            .num_trials = o->trials};
    int64_t exp = 0;
    if (store_experiment_create(st, &e, 0, &exp, err, sizeof err)) die("experiment", err);
    if (store_begin(st, err, sizeof err)) die("begin", err);
    for (long t = 0; t < o->trials; t++) {
        char name[32], cfg[96];
        snprintf(name, sizeof name, "trial_%05ld", t);
        snprintf(cfg, sizeof cfg, "{\"lr\": %.17g, \"batch_size\": 64}", 1e-4 * (double)(t + 1));
        int64_t id;
        if (store_trial_create(st, exp, t, name, cfg, NULL, &id, err, sizeof err))
            die("trial", err);
        if (t == 0) *first_trial = id;
    }
    if (store_commit(st, err, sizeof err)) die("commit", err);
    return st;
}

/* The scheduler's write path: results round-robin over the trials, one commit a batch. */
static double run_store(store_t *st, int64_t first, const struct opts *o, const struct fixture *f)
{
    char err[512];
    double t0 = now_s(), c0 = cpu_s();
    for (long i = 0; i < o->results;) {
        if (store_begin(st, err, sizeof err)) die("begin", err);
        for (long k = 0; k < o->batch && i < o->results; k++, i++) {
            int j = (int)(i % NJSON);
            store_result_t r = {.trial_id = first + i % o->trials,
                                .attempt = 1,
                                .iteration = i / o->trials + 1,
                                .time_value = (double)(i / o->trials + 1),
                                .metric = f->metric[j],
                                .wall_time = 1732200000.0 + (double)i * 1e-6,
                                .json = f->json[j],
                                .json_len = f->len[j]};
            if (store_result_add(st, &r, err, sizeof err)) die("result", err);
            if (o->decisions && i % 4 == 0) {
                store_decision_t d = {.trial_id = r.trial_id,
                                      .iteration = r.iteration,
                                      .time_value = r.time_value,
                                      .action = "continue",
                                      .bracket = 0,
                                      .rung = 1,
                                      .milestone = 4,
                                      .value = r.metric,
                                      .cutoff = 0.5,
                                      .reason = "within rung 1 cutoff at milestone 4: promoted",
                                      .wall_time = r.wall_time};
                if (store_decision_add(st, &d, err, sizeof err)) die("decision", err);
            }
        }
        if (store_commit(st, err, sizeof err)) die("commit", err);
    }
    last_cpu = cpu_s() - c0;
    return now_s() - t0;
}

/* The same rows through a bare connection, one hand-prepared INSERT per result. */
static double run_raw(const char *path, int64_t first, const struct opts *o,
                      const struct fixture *f, int with_index)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    if (sqlite3_open(path, &db) != SQLITE_OK) die("raw open", sqlite3_errmsg(db));
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON",
                 NULL, NULL, NULL);
    if (with_index &&
        sqlite3_exec(db, "CREATE INDEX results_by_trial ON results (trial_id, attempt)", NULL, NULL,
                     NULL) != SQLITE_OK)
        die("raw index", sqlite3_errmsg(db));
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO results (trial_id, attempt, iteration, time_value, metric,"
                           " wall_time, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                           -1, &s, NULL) != SQLITE_OK)
        die("raw prepare", sqlite3_errmsg(db));
    double t0 = now_s(), c0 = cpu_s();
    for (long i = 0; i < o->results;) {
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        for (long k = 0; k < o->batch && i < o->results; k++, i++) {
            int j = (int)(i % NJSON);
            sqlite3_bind_int64(s, 1, first + i % o->trials);
            sqlite3_bind_int(s, 2, 1);
            sqlite3_bind_int64(s, 3, i / o->trials + 1);
            sqlite3_bind_double(s, 4, (double)(i / o->trials + 1));
            sqlite3_bind_double(s, 5, f->metric[j]);
            sqlite3_bind_double(s, 6, 1732200000.0 + (double)i * 1e-6);
            sqlite3_bind_text(s, 7, f->json[j], (int)f->len[j], SQLITE_STATIC);
            if (sqlite3_step(s) != SQLITE_DONE) die("raw step", sqlite3_errmsg(db));
            sqlite3_reset(s);
        }
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
            die("raw commit", sqlite3_errmsg(db));
    }
    double dt = now_s() - t0;
    last_cpu = cpu_s() - c0;
    sqlite3_finalize(s);
    sqlite3_close(db);
    return dt;
}

/* Ray Tune's JSON logger: one result.json per trial, a line per result, flushed each
 * batch (its flush follows every result by default; batching is kinder to it). */
static double run_jsonl(const char *dir, const struct opts *o, const struct fixture *f)
{
    FILE **fp = calloc((size_t)o->trials, sizeof *fp);
    char p[4200];
    for (long t = 0; t < o->trials; t++) {
        snprintf(p, sizeof p, "%s/result_%05ld.json", dir, t);
        if (!(fp[t] = fopen(p, "w"))) die("jsonl", strerror(errno));
    }
    double t0 = now_s(), c0 = cpu_s();
    for (long i = 0; i < o->results;) {
        for (long k = 0; k < o->batch && i < o->results; k++, i++) {
            int j = (int)(i % NJSON);
            FILE *out = fp[i % o->trials];
            fwrite(f->json[j], 1, f->len[j], out);
            fputc('\n', out);
        }
        for (long t = 0; t < o->trials; t++)
            fflush(fp[t]);
    }
    double dt = now_s() - t0;
    last_cpu = cpu_s() - c0;
    for (long t = 0; t < o->trials; t++) {
        fclose(fp[t]);
        snprintf(p, sizeof p, "%s/result_%05ld.json", dir, t);
        unlink(p);
    }
    free(fp);
    return dt;
}

static void report(const char *name, double dt, const struct opts *o, double base, long bytes)
{
    double rate = (double)o->results / dt;
    printf("%-36s %7.3f s %10.0f results/s %10.0f per CPU-s %5.2fx", name, dt, rate,
           (double)o->results / last_cpu, base > 0 ? dt / base : 1.0);
    if (bytes > 0) printf(" %4.0f B/result", (double)bytes / (double)o->results);
    printf("\n");
}

static void exec_or_die(store_t *st, const char *sql)
{
    char err[512];
    if (store_query(st, sql, NULL, 0, NULL, NULL, err, sizeof err)) die(sql, err);
}

int main(int argc, char **argv)
{
    struct opts o = {.results = 2000000, .batch = 1000, .trials = 100, .dir = NULL};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--results") && i + 1 < argc)
            o.results = atol(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            o.batch = atol(argv[++i]);
        else if (!strcmp(argv[i], "--trials") && i + 1 < argc)
            o.trials = atol(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            o.dir = argv[++i];
        else if (!strcmp(argv[i], "--decisions"))
            o.decisions = 1;
        else {
            fprintf(stderr, "usage: store_bench [--results N] [--batch B] [--trials T] [--dir DIR]"
                            " [--decisions]\n");
            return 2;
        }
    }
    if (o.results < 1 || o.batch < 1 || o.trials < 1) die("options", "N, B and T must be >= 1");
    char tmpl[] = "/tmp/store_bench_XXXXXX";
    const char *dir = o.dir ? o.dir : mkdtemp(tmpl);
    if (!dir) die("mkdtemp", strerror(errno));
    char path[4200];
    snprintf(path, sizeof path, "%s/bench.db", dir);
    struct fixture f;
    make_fixture(&f);
    double load[3] = {0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
        fclose(la);
    }
    printf("store_bench: %ld results in batches of %ld over %ld trials%s, SQLite %s, in %s"
           " (load %.2f on %ld CPUs)\n",
           o.results, o.batch, o.trials, o.decisions ? " (+1 decision per 4 results)" : "",
           sqlite3_libversion(), dir, load[0], sysconf(_SC_NPROCESSORS_ONLN));

    int64_t first = 0;
    store_t *st = setup(path, &o, &first);
    double dt_store = run_store(st, first, &o, &f);
    store_close(st);
    long size_store = file_size(path);
    report("store_result_add (as shipped)", dt_store, &o, dt_store, size_store);

    st = setup(path, &o, &first);
    exec_or_die(st, "CREATE INDEX results_by_trial ON results (trial_id, attempt)");
    double dt = run_store(st, first, &o, &f);
    store_close(st);
    report("  plus a per-row results index", dt, &o, dt_store, file_size(path));

    if (!o.decisions) {
        st = setup(path, &o, &first);
        store_close(st);
        dt = run_raw(path, first, &o, &f, 0);
        report("peer: bare sqlite3, row by row", dt, &o, dt_store, file_size(path));
        st = setup(path, &o, &first);
        store_close(st);
        dt = run_raw(path, first, &o, &f, 1);
        report("peer: bare sqlite3 + per-row index", dt, &o, dt_store, file_size(path));
    }
    dt = run_jsonl(dir, &o, &f);
    report("peer: JSON lines per trial (Ray)", dt, &o, dt_store, 0);
    printf("(x: the row's time over store_result_add's; below 1.00 is faster)\n");

    rm_db(path);
    if (!o.dir) rmdir(dir);
    for (int i = 0; i < NJSON; i++)
        free(f.json[i]);
    return 0;
}
