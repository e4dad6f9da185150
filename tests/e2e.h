/* e2e.h: the harness of the end-to-end tests, which run the real `tune` binary (and the
 * trial programs of tests/progs/) in a fresh directory and read back what it printed and
 * recorded. Header-only (static), one copy for every tests/test_*.c that runs tune.
 * Not for unit tests of one module, nor for tune's own code. */
#ifndef TUNE_E2E_H
#define TUNE_E2E_H

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testdb.h"

/* Paths of the binaries under test and of the source tree, filled by e2e_paths()
 * (fresh_dir calls it). */
static char g_tune[4096] __attribute__((unused)), g_synth[4096] __attribute__((unused)),
    g_hostile[4096] __attribute__((unused)), g_helper[4096] __attribute__((unused)),
    g_src[4096] __attribute__((unused));
/* The C trial that reports through include/tune_report.h, the program srun runs as each
 * task of a Slurm trial, and the rank program of the Slurm tests. */
static char g_report_trial[4096] __attribute__((unused)),
    g_slurm_task[4096] __attribute__((unused)), g_slurm_rank[4096] __attribute__((unused));

static inline void e2e_paths(void)
{
    const char *b = getenv("TUNE_BINARY_DIR");
    b = b ? b : ".";
    snprintf(g_tune, sizeof g_tune, "%s/bin/tune", b);
    snprintf(g_synth, sizeof g_synth, "%s/tests/progs/synth_trial", b);
    snprintf(g_hostile, sizeof g_hostile, "%s/tests/progs/hostile_trial", b);
    snprintf(g_helper, sizeof g_helper, "%s/tests/progs/trial_helper", b);
    snprintf(g_report_trial, sizeof g_report_trial, "%s/tests/progs/report_helper_trial", b);
    snprintf(g_slurm_task, sizeof g_slurm_task, "%s/bin/tune-slurm-task", b);
    snprintf(g_slurm_rank, sizeof g_slurm_rank, "%s/tests/progs/slurm_rank", b);
    const char *s = getenv("TUNE_SOURCE_DIR");
    snprintf(g_src, sizeof g_src, "%s", s ? s : "..");
}

static inline double e2e_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void e2e_nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A fresh working directory per case, under the build tree and named after the test
 * program and the case, so that databases and results of two cases never mix. */
static inline void e2e_fresh_dir(char *dir, size_t n, const char *group, const char *name)
{
    e2e_paths();
    const char *b = getenv("TUNE_BINARY_DIR");
    snprintf(dir, n, "%s/e2e/%s/%s", b ? b : "/tmp", group, name);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s' && mkdir -p '%s'", dir,
             dir, dir);
    if (system(cmd) != 0) abort();
}

/* fresh_dir(dir, n, name): e2e_fresh_dir in the group of the test program that defines
 * E2E_GROUP (its name: "cli", "faults", ...) before including this header. */
#ifdef E2E_GROUP
static inline void fresh_dir(char *dir, size_t n, const char *name)
{
    e2e_fresh_dir(dir, n, E2E_GROUP, name);
}
#endif

/* The whole file as a string ("" when it cannot be read); the caller frees. */
static inline char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    size_t k = n > 0 ? fread(s, 1, (size_t)n, f) : 0;
    s[k] = 0;
    fclose(f);
    return s;
}

static inline void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) abort();
    fputs(text, f);
    fclose(f);
}

/* write_file, then made executable (fake commands, trial scripts). */
static inline void write_exec(const char *path, const char *text)
{
    write_file(path, text);
    chmod(path, 0755);
}

/* dir/space.json with the given text. */
static inline void space_file(const char *dir, const char *body)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/space.json", dir);
    write_file(path, body);
}

/* How to start tune beyond its arguments; a zeroed struct (or NULL) is a plain run. */
struct how {
    long fsize;                   /* > 0: RLIMIT_FSIZE in bytes, SIGXFSZ ignored (a full disk) */
    int as_nobody;                /* run as uid/gid 65534 (only when the tests run as root) */
    const char *const *env;       /* "NAME=VALUE" sets, "NAME" unsets; NULL-terminated */
    const char *const *env_pairs; /* NAME, VALUE, NAME, VALUE, ..., NULL: sets (values
                                   * built at run time need no "NAME=VALUE" buffer) */
    int timeout_s;                /* > 0: SIGKILL to the whole group after this long (code 124) */
};

struct out {
    int code;       /* exit status, or 128+signal; 124 when the timeout killed it */
    long maxrss_kb; /* peak RSS of tune and the children it reaped (wait4) */
    double secs;    /* wall time */
    char *out, *err;
};

static inline void out_free(struct out *o)
{
    free(o->out);
    free(o->err);
    o->out = o->err = NULL;
}

/* Starts argv[0] (a path) in its own process group, in directory cwd (NULL: this one),
 * with stdout/stderr into the files outp and errp and stdin from /dev/null. */
static inline pid_t e2e_spawn_to(const char *cwd, const char *const *argv, const char *outp,
                                 const char *errp, const struct how *h)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0) return pid;
    setpgid(0, 0);
    int fo = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int fe = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    int fi = open("/dev/null", O_RDONLY);
    if (fo < 0 || fe < 0 || fi < 0 || (cwd && chdir(cwd) != 0)) _exit(126);
    dup2(fo, 1);
    dup2(fe, 2);
    dup2(fi, 0);
    for (int i = 0; h && h->env && h->env[i]; i++) {
        const char *eq = strchr(h->env[i], '=');
        if (eq) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(eq - h->env[i]), h->env[i]);
            setenv(name, eq + 1, 1);
        } else {
            unsetenv(h->env[i]);
        }
    }
    for (int i = 0; h && h->env_pairs && h->env_pairs[i] && h->env_pairs[i + 1]; i += 2)
        setenv(h->env_pairs[i], h->env_pairs[i + 1], 1);
    if (h && h->as_nobody && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
        _exit(125);
    if (h && h->fsize > 0) {
        /* The kernel's "file too large" is the full disk we can make without root:
         * write() fails with EFBIG once a file would grow past the limit. Ignored
         * SIGXFSZ stays ignored across exec. */
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {(rlim_t)h->fsize, (rlim_t)h->fsize};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(124);
    }
    execv(argv[0], (char *const *)argv);
    _exit(127);
}

/* e2e_spawn_to in dir, with stdout/stderr into dir/.stdout and dir/.stderr. */
static inline pid_t e2e_spawn(const char *dir, const char *const *argv, const struct how *h)
{
    char op[4200], ep[4200];
    if (snprintf(op, sizeof op, "%s/.stdout", dir) >= (int)sizeof op ||
        snprintf(ep, sizeof ep, "%s/.stderr", dir) >= (int)sizeof ep)
        abort(); /* a case's folder is never that deep */
    return e2e_spawn_to(dir, argv, op, ep, h);
}

/* Waits for pid (applying the timeout h asks for) and collects its outputs. */
static inline struct out e2e_finish(const char *dir, pid_t pid, const struct how *h)
{
    struct out o = {0};
    double t0 = e2e_mono();
    int st = 0, killed = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    for (;;) {
        pid_t w = wait4(pid, &st, WNOHANG, &ru);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) break;
        double ms = (e2e_mono() - t0) * 1000.0;
        if (h && h->timeout_s > 0 && ms >= h->timeout_s * 1000.0) {
            kill(-pid, SIGKILL);
            while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
                ;
            killed = 1;
            break;
        }
        usleep(2000);
    }
    o.secs = e2e_mono() - t0;
    o.code = killed ? 124 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    o.maxrss_kb = ru.ru_maxrss;
    char op[4200], ep[4200];
    if (snprintf(op, sizeof op, "%s/.stdout", dir) >= (int)sizeof op ||
        snprintf(ep, sizeof ep, "%s/.stderr", dir) >= (int)sizeof ep)
        abort(); /* a case's folder is never that deep */
    o.out = slurp(op);
    o.err = slurp(ep);
    return o;
}

/* argv for tune: g_tune, then args (NULL-terminated), into av[64]. */
static inline void e2e_tune_argv(const char **av, const char *const *args)
{
    int n = 0;
    av[n++] = g_tune;
    for (int i = 0; args[i] && n < 63; i++)
        av[n++] = args[i];
    av[n] = NULL;
}

/* Starts tune in dir without waiting (for tests that kill it mid-run). */
static inline pid_t spawn_tune(const char *dir, const char *const *args, const struct how *h)
{
    const char *av[64];
    e2e_tune_argv(av, args);
    return e2e_spawn(dir, av, h);
}

static inline struct out finish_tune(const char *dir, pid_t pid)
{
    return e2e_finish(dir, pid, NULL);
}

/* finish_tune, with tune's output shown on stderr when it failed: a failing case whose
 * tune said nothing visible is hard to debug. */
static inline struct out finish_tune_shown(const char *dir, pid_t pid)
{
    struct out o = finish_tune(dir, pid);
    if (o.code != 0) fprintf(stderr, "tune exited %d:\n%s\n%s\n", o.code, o.out, o.err);
    return o;
}

static inline struct out run_tune_how(const char *dir, const char *const *args, const struct how *h)
{
    const char *av[64];
    e2e_tune_argv(av, args);
    return e2e_finish(dir, e2e_spawn(dir, av, h), h);
}

/* Runs tune with args in dir and waits for it. */
static inline struct out run_tune(const char *dir, const char *const *args)
{
    return run_tune_how(dir, args, NULL);
}

/* run_tune, with tune's output shown on stderr when it failed (finish_tune_shown). */
static inline struct out run_tune_shown(const char *dir, const char *const *args)
{
    return finish_tune_shown(dir, spawn_tune(dir, args, NULL));
}

/* Runs any program (argv[0] a path) in dir and waits for it. */
static inline struct out run_prog(const char *dir, const char *const *argv, const struct how *h)
{
    return e2e_finish(dir, e2e_spawn(dir, argv, h), h);
}

/* One integer (or real) from dir/tune.db, opened read-only as any reader would; -1 (NaN)
 * on failure. */
static inline long long db_int(const char *dir, const char *sql)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    return testdb_int(path, sql);
}

static inline double db_real(const char *dir, const char *sql)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    return testdb_num(path, sql, NAN);
}

static inline int db_exec(const char *dir, const char *sql)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    return testdb_exec(path, sql);
}

/* Waits until the integer sql reads from dir/tune.db is at least want: the state a test
 * must see before it acts (a result recorded, both trials running), never a fixed sleep
 * that a busy machine can outlast. Polls quietly (tune may still be creating the file or
 * its tables) and returns the last value read, -1 if none; timeout_s only bounds a hang,
 * so give it tens of seconds: the caller checks the value. */
static inline long long e2e_wait_db(const char *dir, const char *sql, long long want,
                                    double timeout_s)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    long long v = -1;
    for (double end = e2e_mono() + timeout_s;; e2e_nap_ms(10)) {
        sqlite3 *db = testdb_open(path, 0);
        sqlite3_stmt *st = NULL;
        if (db && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        if (v >= want || e2e_mono() >= end) return v;
    }
}

/* Whether signal sig is pending for process pid (its /proc status, SigPnd or ShdPnd). */
static inline int e2e_sig_pending(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    int pending = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long mask;
        if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
             sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
            (mask >> (sig - 1) & 1))
            pending = 1;
    }
    if (f) fclose(f);
    return pending;
}

/* Sends sig to pid and waits until the process has taken it (it is no longer pending), up
 * to timeout_s: two signals sent before the first is taken are one signal to the kernel, so
 * a test that means two waits in between. 1 when it was taken, 0 at the timeout. */
static inline int e2e_signal_taken(pid_t pid, int sig, double timeout_s)
{
    if (kill(pid, sig) != 0) return 0;
    for (double end = e2e_mono() + timeout_s; e2e_sig_pending(pid, sig); e2e_nap_ms(5))
        if (e2e_mono() >= end) return 0;
    return 1;
}

/* Starts tune with args in dir, interrupts it (SIGINT, Ctrl-C) once sql on its database
 * reads at least want (e2e_wait_db, up to a minute), and waits for it to end. What the
 * interrupt finds is then the case's to choose, not the machine's: give the trials more
 * work than any wait could outlast (they are interrupted anyway). *reached (when not
 * NULL): whether the condition held when the interrupt was sent. */
static inline struct out run_tune_interrupted(const char *dir, const char *const *args,
                                              const char *sql, long long want, int *reached)
{
    pid_t pid = spawn_tune(dir, args, NULL);
    long long v = e2e_wait_db(dir, sql, want, 60);
    if (v < want) fprintf(stderr, "never reached before the interrupt: %s >= %lld\n", sql, want);
    if (reached) *reached = v >= want;
    kill(pid, SIGINT);
    struct how h = {.timeout_s = 120};
    return e2e_finish(dir, pid, &h);
}

/* Live processes (zombies have no command line) with `arg` as one whole argument, found
 * through /proc as `pgrep -f` would; matching whole arguments, it never counts the test
 * itself or a shell that mentions arg inside a longer string. */
static inline int e2e_count_procs(const char *arg)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
        char path[300], buf[8192];
        snprintf(path, sizeof path, "/proc/%s/cmdline", de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
            if (strcmp(buf + i, arg) == 0) {
                n++;
                break;
            }
    }
    if (d) closedir(d);
    return n;
}

/* Waits until e2e_count_procs(arg) == want, up to timeout_s (a bound on a hang, not a
 * guess at timing); returns the last count. */
static inline int e2e_wait_procs(const char *arg, int want, double timeout_s)
{
    double end = e2e_mono() + timeout_s;
    int n;
    while ((n = e2e_count_procs(arg)) != want && e2e_mono() < end)
        e2e_nap_ms(20);
    return n;
}

/* How many times needle occurs in hay. */
static inline long long count_of(const char *hay, const char *needle)
{
    long long n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* The common case in one call: a fresh dir named `name` under `group`, the given
 * space.json, `tune run space.json --gpus none` (plus extra args), and the output, with
 * the exit code checked by the caller. */
static inline struct out run_space(char *dir, size_t n, const char *group, const char *name,
                                   const char *space, const char *const *extra)
{
    e2e_fresh_dir(dir, n, group, name);
    space_file(dir, space);
    const char *args[64] = {"run", "space.json", "--gpus", "none"};
    int k = 4;
    for (int i = 0; extra && extra[i] && k < 63; i++)
        args[k++] = extra[i];
    args[k] = NULL;
    return run_tune(dir, args);
}

/* The common checked step, for cases that look at the database afterwards rather than at
 * tune's words: dir/space.json written, tune run with args (NULL: `run space.json --gpus
 * none --quiet`), its output shown on stderr when it failed. Returns tune's exit status;
 * a case checks CHECK_EQ_INT(run_ok(...), 0). */
static inline int run_ok(const char *dir, const char *space, const char *const *args)
{
    static const char *const plain[] = {"run", "space.json", "--gpus", "none", "--quiet", NULL};
    space_file(dir, space);
    struct out o = run_tune_shown(dir, args ? args : plain);
    int code = o.code;
    out_free(&o);
    return code;
}

/* One device taken or given back by a trial, as `synth_trial --slice-log` writes them to
 * its trial folder's slice.log (a line per start and end: the time, CUDA_VISIBLE_DEVICES
 * or "-", TUNE_NUM_GPUS). */
struct e2e_slice_ev {
    double t;
    int dev;
    int start; /* 1: taken, 0: given back */
};

/* The slice events of trials 0..ntrials-1 of experiment exp under dir, one per device a
 * line names, sorted by time (ends before starts at the same time), at most max of them.
 * Returns how many; *nodev (when not NULL) counts the lines that named no device. */
static inline int e2e_slice_events(const char *dir, const char *exp, int ntrials,
                                   struct e2e_slice_ev *ev, int max, int *nodev)
{
    int nev = 0, nfiles = 0;
    if (nodev) *nodev = 0;
    for (int i = 0; i < ntrials; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/tune_results/%s/trial_%05d/slice.log", dir, exp, i);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        nfiles++;
        char what[16], devs[256], ng[32];
        double t;
        while (fscanf(f, "%15s %lf %255s %31s", what, &t, devs, ng) == 4) {
            if (strcmp(devs, "-") == 0) {
                if (nodev) (*nodev)++;
                continue;
            }
            for (char *tok = strtok(devs, ","); tok && nev < max; tok = strtok(NULL, ",")) {
                ev[nev].t = t;
                ev[nev].dev = atoi(tok);
                ev[nev].start = strcmp(what, "start") == 0;
                nev++;
            }
        }
        fclose(f);
    }
    if (nfiles == 0)
        fprintf(stderr,
                "no slice.log under %s/tune_results/%s: the trials write it only when "
                "their command passes synth_trial --slice-log\n",
                dir, exp);
    for (int i = 1; i < nev; i++)
        for (int j = i; j > 0 && (ev[j].t < ev[j - 1].t ||
                                  (ev[j].t == ev[j - 1].t && ev[j].start < ev[j - 1].start));
             j--) {
            struct e2e_slice_ev x = ev[j];
            ev[j] = ev[j - 1];
            ev[j - 1] = x;
        }
    return nev;
}

#endif
