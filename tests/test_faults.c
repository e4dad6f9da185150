/* test_faults: end-to-end fault tests: the real `tune` binary against a full disk, a database
 * that is not one (or is too new), a read-only directory, hostile experiment names, hostile
 * trial output, and its own death by SIGKILL, checking what is left afterwards: the exit
 * status and message, the processes still alive, and the SQLite file itself.
 * Not for: unit behaviour of one module (tests/test_<module>.c) or the resume logic as
 * such (tests/test_cli.c). */
#include "e2e.h"
#include "tinytest.h"

#include <dirent.h>

static void fresh_dir(char *dir, size_t n, const char *name)
{
    e2e_fresh_dir(dir, n, "faults", name);
}

/* Live processes whose command line contains token (zombies have none, so they do not
 * count). Scans /proc like ps does. */
static int count_procs(const char *token)
{
    DIR *d = opendir("/proc");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], buf[8192];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        ssize_t k = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (k <= 0) continue;
        for (ssize_t i = 0; i < k; i++)
            if (buf[i] == 0) buf[i] = ' ';
        buf[k] = 0;
        if (strstr(buf, token)) n++;
    }
    closedir(d);
    return n;
}

/* Waits until count_procs(token) == want, up to timeout_s; returns the last count. */
static int wait_procs(const char *token, int want, double timeout_s)
{
    double end = e2e_mono() + timeout_s;
    int n;
    while ((n = count_procs(token)) != want && e2e_mono() < end)
        usleep(20000);
    return n;
}

/* ---- hostile experiment names --------------------------------------------------------- */

TEST(experiment_name_cannot_escape_the_results_directory)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "names");
    static const char *const bad[] = {"../../etc", "a/b", "/etc", "..", "."};
    static const char *const why[] = {"'/' is not allowed", "'/' is not allowed",
                                      "'/' is not allowed", "is not allowed", "is not allowed"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(sp, sizeof sp, "{\"name\": \"%s\", \"command\": [\"%s\"]}", bad[i], g_synth);
        space_file(dir, sp);
        const char *a[] = {"run", "space.json", "--quiet", NULL};
        struct out o = run_tune(dir, a);
        CHECK_EQ_INT(o.code, 2);
        char want[200];
        snprintf(want, sizeof want, "space.json:1:10: experiment name \"%s\"", bad[i]);
        CHECK_CONTAINS(o.err, want);
        CHECK_CONTAINS(o.err, why[i]);
        out_free(&o);
    }
    /* Nothing was created anywhere: no results folder, no database. */
    char p[4300];
    snprintf(p, sizeof p, "%s/tune_results", dir);
    CHECK(access(p, F_OK) != 0);
    snprintf(p, sizeof p, "%s/tune.db", dir);
    CHECK(access(p, F_OK) != 0);
    /* A name given on the command line only ever looks the experiment up. */
    const char *r[] = {"resume", "../../etc", NULL};
    struct out o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "no experiment named \"../../etc\"");
    out_free(&o);
    snprintf(p, sizeof p, "%s/tune_results", dir);
    CHECK(access(p, F_OK) != 0);
}

/* ---- store faults ------------------------------------------------------------------- */

/* A disk that fills up in the middle of a run: tune stops every trial, says why, exits 1,
 * and leaves a database that opens, passes integrity_check, holds what was committed,
 * and resumes to the same result an undisturbed run gives. */
TEST(disk_full_stops_cleanly_and_resume_finishes)
{
    char dir[4096], sp[8192], tag[64];
    fresh_dir(dir, sizeof dir, "disk_full");
    snprintf(tag, sizeof tag, "dfull-%d", (int)getpid());
    snprintf(sp, sizeof sp,
             "{\"name\": \"full\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4,"
             " \"stop_grace_s\": 2, \"command\": [\"%s\", \"--iters\", \"4000\", \"--lr\","
             " \"{lr}\", \"--tag\", \"%s\"], \"space\": {\"lr\": {\"loguniform\": [0.001, 0.1]}}}",
             g_synth, tag);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--cpus", "4", "--gpus", "none", NULL};
    struct how h = {.fsize = 1 << 20};
    struct out o = run_tune_how(dir, a, &h);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "experiment full stopped: ");
    CHECK_CONTAINS(o.err, "the disk is full or the file size limit was reached");
    CHECK_CONTAINS(o.err, "Everything recorded before the stop is in");
    out_free(&o);
    CHECK_EQ_INT(count_procs(tag), 0); /* every trial was stopped */

    long long got = db_int(dir, "SELECT count(*) FROM results");
    CHECK(got > 0);
    CHECK(got < 4 * 4000);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 4);
    char path[4300];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    sqlite3 *db;
    REQUIRE(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    sqlite3_stmt *st;
    REQUIRE(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK);
    REQUIRE(sqlite3_step(st) == SQLITE_ROW);
    CHECK_STR((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);

    /* Room again: resume finishes with every iteration of every trial. */
    const char *r[] = {"resume", "full", "--cpus", "4", "--gpus", "none", NULL};
    o = run_tune(dir, r);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments WHERE status='FINISHED'"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 4);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results_current"), 4 * 4000);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM (SELECT trial_id FROM results_current GROUP BY"
                             " trial_id HAVING count(*) != 4000 OR max(iteration) != 4000"
                             " OR count(DISTINCT iteration) != 4000)"),
                 0);
}

static void small_run(const char *dir, const char *name)
{
    char sp[8192];
    snprintf(sp, sizeof sp,
             "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 2,"
             " \"command\": [\"%s\", \"--iters\", \"5\", \"--lr\", \"{lr}\"],"
             " \"space\": {\"lr\": {\"loguniform\": [0.001, 0.1]}}}",
             name, g_synth);
    space_file(dir, sp);
}

TEST(not_a_database_is_refused_and_left_alone)
{
    char dir[4096], path[4300];
    fresh_dir(dir, sizeof dir, "not_a_db");
    small_run(dir, "nd");
    snprintf(path, sizeof path, "%s/tune.db", dir);
    char text[3000];
    memset(text, 'y', sizeof text - 1);
    text[sizeof text - 1] = 0;
    memcpy(text, "lr,loss\n", 8);
    write_file(path, text);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "tune.db is not a tune database: file is not a database");
    out_free(&o);
    const char *t[] = {"trials", "nd", NULL};
    o = run_tune(dir, t);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "is not a tune database");
    out_free(&o);
    char *back = slurp(path);
    CHECK_STR(back, text); /* untouched, byte for byte */
    free(back);
    snprintf(path, sizeof path, "%s/tune_results/nd", dir);
    CHECK(access(path, F_OK) != 0); /* no trial ran */
}

TEST(newer_schema_is_refused_and_data_stays_readable)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "newer_schema");
    small_run(dir, "old");
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    long long before = db_int(dir, "SELECT count(*) FROM results");
    CHECK_EQ_INT(before, 10);
    /* What a future tune would leave behind. */
    REQUIRE(db_exec(dir, "UPDATE meta SET value = '99' WHERE key = 'schema_version'") == 0);
    small_run(dir, "new");
    o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "tune.db was written by a newer tune (schema version 99, this tune "
                          "knows 3)");
    out_free(&o);
    const char *t[] = {"trials", "old", NULL};
    o = run_tune(dir, t);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "newer tune");
    out_free(&o);
    /* Nothing was written: the data is all there for the newer tune (or sqlite3). */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), before);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT value FROM meta WHERE key = 'schema_version'"), 99);
}

/* As root every directory is writable, so the test drops to nobody there. */
static int readonly_setup(const char *dir, struct how *h)
{
    memset(h, 0, sizeof *h);
    if (geteuid() == 0) {
        h->as_nobody = 1;
        /* nobody must reach the binaries and read space.json, not write dir. */
        return chmod(dir, 0755);
    }
    return chmod(dir, 0555);
}

TEST(readonly_directory_is_a_clear_error)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "readonly_dir");
    small_run(dir, "ro");
    /* The outputs go to files the test creates first, writable by whoever tune runs as. */
    char p[4300];
    snprintf(p, sizeof p, "%s/.stdout", dir);
    write_file(p, "");
    chmod(p, 0666);
    snprintf(p, sizeof p, "%s/.stderr", dir);
    write_file(p, "");
    chmod(p, 0666);
    struct how h;
    REQUIRE(readonly_setup(dir, &h) == 0);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct out o = run_tune_how(dir, a, &h);
    if (o.code == 125) {
        out_free(&o);
        chmod(dir, 0755);
        SKIP("cannot switch to user nobody");
    }
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "cannot create database");
    CHECK_CONTAINS(o.err, "tune.db");
    CHECK_CONTAINS(o.err, strerror(EACCES));
    out_free(&o);
    chmod(dir, 0755);
    snprintf(p, sizeof p, "%s/tune.db", dir);
    CHECK(access(p, F_OK) != 0);
}

/* A finished database in a directory tune may not write: readers still read it, a writer
 * is refused with a clear message, and the file is unchanged. */
TEST(readonly_directory_with_a_database)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "readonly_db");
    small_run(dir, "rd");
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    char p[4300];
    snprintf(p, sizeof p, "%s/.stdout", dir);
    chmod(p, 0666);
    snprintf(p, sizeof p, "%s/.stderr", dir);
    chmod(p, 0666);
    snprintf(p, sizeof p, "%s/tune.db", dir);
    chmod(p, 0644);
    struct how h;
    REQUIRE(readonly_setup(dir, &h) == 0);
    const char *t[] = {"trials", "rd", "--json", NULL};
    o = run_tune_how(dir, t, &h);
    if (o.code == 125) {
        out_free(&o);
        chmod(dir, 0755);
        SKIP("cannot switch to user nobody");
    }
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "trial_00001");
    out_free(&o);
    small_run(dir, "rd2");
    o = run_tune_how(dir, a, &h);
    CHECK_EQ_INT(o.code, 1);
    CHECK_CONTAINS(o.err, "tune.db");
    CHECK_CONTAINS(o.err, "read-only");
    out_free(&o);
    chmod(dir, 0755);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM experiments"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 10);
}

/* ---- no trial outlives tune ------------------------------------------------------------ */

/* Trials that fork a child and ignore SIGTERM, and a tune that dies by `signal` while they
 * run. Every trial process and every keeper must be gone soon after. */
static void no_orphans_after(const char *name, int sig)
{
    char dir[4096], sp[8192], tag[64];
    fresh_dir(dir, sizeof dir, name);
    snprintf(tag, sizeof tag, "orphan-%s-%d", name, (int)getpid());
    snprintf(sp, sizeof sp,
             "{\"name\": \"orph\", \"num_samples\": 4, \"stop_grace_s\": 1,"
             " \"command\": [\"%s\", \"--iters\", \"100000\", \"--sleep-ms\", \"50\","
             " \"--fork-child\", \"--ignore-term\", \"--tag\", \"%s\"]}",
             g_synth, tag);
    space_file(dir, sp);
    char db[4300];
    snprintf(db, sizeof db, "%s/tune.db", dir);
    const char *a[] = {"run", "space.json", "--db", db, "--cpus", "4", "--gpus", "none", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    /* 4 trials, each with the child it forked. */
    int n = wait_procs(tag, 8, 60);
    CHECK_EQ_INT(n, 8);
    /* tune and its spawner (a fork of tune) carry the database path in their command
     * line. */
    CHECK_EQ_INT(count_procs(db), 2);
    /* The rows of running trials get their pids within about a second (the loop keeps a
     * pid for the row's next update, LOOP_PID_SAVE_S), each a live trial process. (The
     * wait only bounds a hang: a busy machine may take longer than that second.) */
    long long with_pid =
        e2e_wait_db(dir, "SELECT count(pid) FROM trials WHERE status = 'RUNNING'", 4, 60);
    CHECK_EQ_INT(with_pid, 4);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'RUNNING' AND pid IN"
                             " (SELECT pid FROM trials GROUP BY pid HAVING count(*) = 1)"),
                 4);
    for (int k = 0; k < 4; k++) {
        char q[128];
        snprintf(q, sizeof q, "SELECT pid FROM trials WHERE status = 'RUNNING' LIMIT 1 OFFSET %d",
                 k);
        long long tp = db_int(dir, q);
        CHECK(tp > 0 && kill((pid_t)tp, 0) == 0);
    }
    double t0 = e2e_mono();
    kill(pid, sig);
    struct out o = finish_tune(dir, pid);
    if (sig == SIGKILL)
        CHECK_EQ_INT(o.code, 128 + SIGKILL);
    else
        CHECK_EQ_INT(o.code, 130);
    out_free(&o);
    CHECK_EQ_INT(wait_procs(tag, 0, 30), 0);
    CHECK_EQ_INT(wait_procs(db, 0, 30), 0);
    fprintf(stderr, "%s: every trial process gone %.2f s after the signal\n", name,
            e2e_mono() - t0);
}

TEST(kill_9_of_tune_leaves_no_trial_process)
{
    no_orphans_after("kill9_orphans", SIGKILL);
}

TEST(sigterm_of_tune_leaves_no_trial_process)
{
    no_orphans_after("sigterm_orphans", SIGTERM);
}

/* With every slice taken, the next trials wait in the spawner behind running ones that are
 * ending (held starts, trial_spawn_t.after): here two trials reached max_t and are given a
 * long grace to exit. The held trials' folders and logs are made, nothing of them runs,
 * and when tune dies they never start. */
TEST(held_starts_never_run_after_kill_9_of_tune)
{
    char dir[4096], sp[8192], tag[64];
    fresh_dir(dir, sizeof dir, "held_kill9");
    snprintf(tag, sizeof tag, "held-%d", (int)getpid());
    snprintf(sp, sizeof sp,
             "{\"name\": \"held\", \"num_samples\": 6, \"max_concurrent\": 2,"
             " \"stop_grace_s\": 60, \"metric\": \"loss\", \"mode\": \"min\","
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 3, \"grace_period\": 3},"
             " \"command\": [\"%s\", \"--iters\", \"100000\", \"--sleep-ms\", \"50\","
             " \"--fork-child\", \"--ignore-term\", \"--tag\", \"%s\"]}",
             g_synth, tag);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--cpus", "2", "--gpus", "none", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    CHECK_EQ_INT(wait_procs(tag, 4, 60), 4); /* two trials, each with its child */
    char held[2][4300];
    for (int k = 0; k < 2; k++)
        snprintf(held[k], sizeof held[k], "%s/tune_results/held/trial_%05d/stdout.log", dir, 2 + k);
    struct stat sb;
    double until = e2e_mono() + 60;
    while ((stat(held[0], &sb) != 0 || stat(held[1], &sb) != 0) && e2e_mono() < until)
        e2e_nap_ms(20);
    CHECK(stat(held[0], &sb) == 0 && stat(held[1], &sb) == 0); /* both starts are held */
    e2e_nap_ms(300);
    CHECK_EQ_INT(count_procs(tag), 4); /* and neither runs */
    kill(pid, SIGKILL);
    struct out o = finish_tune(dir, pid);
    CHECK_EQ_INT(o.code, 128 + SIGKILL);
    out_free(&o);
    CHECK_EQ_INT(wait_procs(tag, 0, 30), 0);
    e2e_nap_ms(500);
    CHECK_EQ_INT(count_procs(tag), 0); /* no held start happened late */
    for (int k = 0; k < 2; k++) {
        char *text = slurp(held[k]);
        CHECK(text && text[0] == 0);
        free(text);
    }
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE trial_no >= 2 AND status = "
                             "'PENDING'"),
                 4);
}

/* ---- hostile trial output ------------------------------------------------------------ */

#ifdef __SANITIZE_ADDRESS__
#define ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_BUILD 1
#endif
#endif

/* One trial per kind of hostile output, all at once. tune must finish normally, record
 * every real result (and nothing else), count the lines it could not read, and stay
 * within bounded memory although trials print 100 MiB lines and a million results. */
TEST(hostile_trial_output_is_bounded_and_counted)
{
    char dir[4096], sp[8192];
    fresh_dir(dir, sizeof dir, "hostile");
    snprintf(sp, sizeof sp,
             "{\"name\": \"hostile\", \"metric\": \"loss\", \"mode\": \"min\","
             " \"command\": [\"%s\", \"--mode\", \"{mode}\", \"--count\", \"1000000\"],"
             " \"space\": {\"mode\": {\"grid_search\": [\"bigline\", \"garbage\", \"utf8\","
             " \"deep\", \"nan\", \"string\", \"flood\", \"none\"]}}}",
             g_hostile);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--cpus", "8", "--gpus", "none", NULL};
    double t0 = e2e_mono();
    struct out o = run_tune(dir, a);
    double took = e2e_mono() - t0;
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "8 trials terminated");
    CHECK_CONTAINS(o.out, "0 failed");
    CHECK_CONTAINS(o.out, "unreadable result lines (over-long or not JSON)");
    fprintf(stderr, "hostile: %.1f s, peak RSS of tune and its children %ld KiB\n", took,
            o.maxrss_kb);
    /* A 100 MiB line held whole would show here; cut at TRIAL_MAX_LINE (1 MiB) it cannot.
     * ASan's quarantine and shadow memory take their own share. */
#ifdef ASAN_BUILD
    CHECK(o.maxrss_kb < 512 * 1024);
#else
    CHECK(o.maxrss_kb < 64 * 1024);
#endif
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 8);
    /* Every real result, per mode: 3 ordinary ones each, plus the NaN/Infinity ones (their
     * metric stored NULL or infinite), the string metric one (metric NULL), the flood. */
    static const struct {
        const char *mode;
        long long results, null_metric;
    } want[] = {{"bigline", 3, 0}, {"garbage", 3, 0}, {"utf8", 3, 0},        {"deep", 3, 0},
                {"nan", 6, 1},     {"string", 4, 1},  {"flood", 1000003, 0}, {"none", 3, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char sql[600];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM results_current r JOIN trials t ON t.id = r.trial_id"
                 " WHERE json_extract(t.config, '$.mode') = '%s'",
                 want[i].mode);
        long long got = db_int(dir, sql);
        if (got != want[i].results) fprintf(stderr, "mode %s\n", want[i].mode);
        CHECK_EQ_INT(got, want[i].results);
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM results_current r JOIN trials t ON t.id = r.trial_id"
                 " WHERE json_extract(t.config, '$.mode') = '%s' AND r.metric IS NULL",
                 want[i].mode);
        got = db_int(dir, sql);
        if (got != want[i].null_metric) fprintf(stderr, "mode %s (NULL metrics)\n", want[i].mode);
        CHECK_EQ_INT(got, want[i].null_metric);
    }
    /* The flood's iterations arrived complete and in order. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(DISTINCT r.iteration) FROM results_current r JOIN"
                             " trials t ON t.id = r.trial_id"
                             " WHERE json_extract(t.config, '$.mode') = 'flood'"),
                 1000003);
    /* Infinity is stored as such; the string metric keeps its JSON text. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE metric = 9e999"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE metric = -9e999"), 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results_current WHERE"
                             " json_extract(data, '$.loss') = '0.25'"),
                 1);
    /* Logged byte for byte: the 100 MiB line is in the trial's stdout.log. */
    char p[4300];
    snprintf(p, sizeof p, "%s/tune_results/hostile/trial_00000/stdout.log", dir);
    struct stat sb;
    CHECK(stat(p, &sb) == 0 && sb.st_size > (100 << 20));
}

/* A CUDA out-of-memory in a trial is recognised from its stderr (here PyTorch's words) and
 * recorded with the advice a user needs; another failure is not dressed up as one. */
TEST(cuda_out_of_memory_is_recognised_and_advised)
{
    char dir[4096];
    fresh_dir(dir, sizeof dir, "oom");
    space_file(dir, "{\"name\": \"oom\", \"command\": [\"/bin/sh\", \"-c\", \"{script}\"],"
                    " \"space\": {\"script\": {\"grid_search\": ["
                    " \"echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"
                    " 2.00 GiB (GPU 0; 79.1 GiB total capacity)' >&2; exit 1\","
                    " \"echo 'segment fault in my code' >&2; exit 3\"]}}}");
    const char *a[] = {"run", "space.json", "--gpus", "none", NULL};
    struct out o = run_tune(dir, a);
    CHECK_EQ_INT(o.code, 3); /* the experiment finished; its trials failed */
    CHECK_CONTAINS(o.out, "2 failed");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE trial_no = 0 AND status = 'ERROR'"
                             " AND error LIKE 'CUDA out of memory (exited with code 1)%'"
                             " AND error LIKE '%lower the batch size%'"
                             " AND stderr_tail LIKE '%Tried to allocate 2.00 GiB%'"),
                 1);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE trial_no = 1 AND status = 'ERROR'"
                             " AND error = 'exited with code 3: segment fault in my code'"),
                 1);
    const char *t[] = {"trials", "oom", "--json", NULL};
    o = run_tune(dir, t);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "lower the batch size");
    out_free(&o);
}

TT_MAIN
