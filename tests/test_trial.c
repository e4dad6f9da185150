/* test_trial: the trial executor library against real processes (tests/progs/
 * trial_helper.c is the fake trial) and the result-line parser against hostile input.
 * Not for: the trainer (train/ has its own tests) or scheduling decisions. */
#include "e2e.h" /* the clock and the nap only: these cases start no tune */
#include "tinytest.h"
#include "trial/trial.h"
#include "trial/trial_int.h" /* the keeper's internals, tested directly at the end */
#include "scheduler/sched.h" /* the loop's executor, over each executor */
#include "search/space.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TRIAL_HELPER_PATH
#error "tests/trial.cmake defines TRIAL_HELPER_PATH"
#endif
#define HELPER TRIAL_HELPER_PATH

/* ---- helpers ------------------------------------------------------------------- */

struct lines {
    char **v;
    size_t *len;
    int *trunc;
    size_t n, cap;
};

static void on_line(void *ud, const char *line, size_t len, int truncated)
{
    struct lines *L = ud;
    if (L->n == L->cap) {
        L->cap = L->cap ? L->cap * 2 : 16;
        L->v = realloc(L->v, L->cap * sizeof *L->v);
        L->len = realloc(L->len, L->cap * sizeof *L->len);
        L->trunc = realloc(L->trunc, L->cap * sizeof *L->trunc);
    }
    L->v[L->n] = malloc(len + 1);
    memcpy(L->v[L->n], line, len);
    L->v[L->n][len] = '\0';
    L->len[L->n] = len;
    L->trunc[L->n] = truncated;
    L->n++;
}

static void lines_free(struct lines *L)
{
    for (size_t i = 0; i < L->n; i++)
        free(L->v[i]);
    free(L->v);
    free(L->len);
    free(L->trunc);
    memset(L, 0, sizeof *L);
}

static int lines_has(const struct lines *L, const char *s)
{
    for (size_t i = 0; i < L->n; i++)
        if (strcmp(L->v[i], s) == 0) return 1;
    return 0;
}

/* Reads until EOF (1), or until `until` shows up as a line (2), or the timeout (0). */
static int drain_until(trial_proc_t *p, struct lines *L, const char *until, double timeout_s,
                       size_t max_bytes)
{
    double t0 = e2e_mono();
    while (e2e_mono() - t0 < timeout_s) {
        if (until && lines_has(L, until)) return 2;
        int fd = trial_fd(p);
        if (fd < 0) return 1;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        poll(&pfd, 1, 50);
        int rc = trial_read(p, on_line, L, max_bytes);
        if (rc == 1) return 1;
        if (rc < 0) return rc;
    }
    return until && lines_has(L, until) ? 2 : 0;
}

static int drain(trial_proc_t *p, struct lines *L)
{
    return drain_until(p, L, NULL, 20.0, 0);
}

/* Polls for the end: 1 and *x filled, or 0 at the timeout. */
static int wait_exit(trial_proc_t *p, trial_exit_t *x, double timeout_s)
{
    double t0 = e2e_mono();
    do {
        int rc = trial_poll_exit(p, x);
        if (rc != 0) return rc;
        e2e_nap_ms(5);
    } while (e2e_mono() - t0 < timeout_s);
    return 0;
}

/* Runs a trial to its end: output into L, how it ended into x. Returns trial_start's code. */
static int run(const trial_spawn_t *sp, struct lines *L, trial_exit_t *x, char *err, size_t errlen)
{
    trial_exec_t *ex = NULL;
    if (trial_exec_local_new(&ex, err, errlen) != 0) return -100;
    trial_proc_t *p = NULL;
    int rc = trial_start(ex, sp, &p, err, errlen);
    if (rc == 0) {
        if (drain(p, L) != 1) fprintf(stderr, "run: no EOF in time\n");
        if (wait_exit(p, x, 20.0) != 1) fprintf(stderr, "run: no exit in time\n");
        trial_proc_free(p);
    }
    trial_exec_free(ex);
    return rc;
}

/* A fresh scratch directory; *dir holds its path. */
static void scratch(char *dir, size_t n)
{
    snprintf(dir, n, "/tmp/tune_trial_test_XXXXXX");
    if (!mkdtemp(dir)) dir[0] = '\0';
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_rf(const char *dir)
{
    if (dir[0]) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The bytes and their length (a log may hold NULs); NULL when the file is missing. */
static char *slurp_len(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    size_t r;
    while ((r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    b[n] = '\0';
    *len = n;
    return b;
}

static void spit(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0) return;
    if (write(fd, text, strlen(text)) < 0) perror("write");
    close(fd);
}

/* Dead, or a zombie nobody reaped yet: either way it runs no more. */
static int pid_gone(pid_t pid, double timeout_s)
{
    double t0 = e2e_mono();
    do {
        int st;
        waitpid(pid, &st, WNOHANG); /* ours if it was orphaned onto us (subreaper) */
        if (kill(pid, 0) != 0 && errno == ESRCH) return 1;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = '\0';
            char *rp = strrchr(buf, ')');
            if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X')) return 1;
        }
        e2e_nap_ms(10);
    } while (e2e_mono() - t0 < timeout_s);
    return 0;
}

static long maxrss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Fields of /proc/<pid>/stat after the command name: state, ppid, pgrp. 0 if unreadable. */
static int proc_stat(pid_t pid, char *state, int *ppid, int *pgrp, char *comm, size_t commlen)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
    if (!lp || !rp) return 0;
    if (comm) snprintf(comm, commlen, "%.*s", (int)(rp - lp - 1), lp + 1);
    char st = 0;
    int pp = 0, pg = 0;
    if (sscanf(rp + 1, " %c %d %d", &st, &pp, &pg) != 3) return 0;
    if (state) *state = st;
    if (ppid) *ppid = pp;
    if (pgrp) *pgrp = pg;
    return 1;
}

/* Not even a zombie: /proc has no entry for it (somebody reaped it). */
static int pid_reaped(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* A marker argument no other process on the machine carries. */
static void make_marker(char *buf, size_t n, const char *what)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(buf, n, "marker:tune-test-%s-%d-%ld", what, (int)getpid(), (long)ts.tv_nsec);
}

/* Polls until no process carries the marker; returns the seconds it took, or -1. */
static double wait_unmarked(const char *marker, double timeout_s)
{
    double t0 = e2e_mono();
    do {
        if (e2e_count_procs(marker) == 0) return e2e_mono() - t0;
        e2e_nap_ms(5);
    } while (e2e_mono() - t0 < timeout_s);
    return -1;
}

/* The pids in "escaped C1 C2" and "grandchild G" lines. */
static void tree_pids(const struct lines *L, int *c1, int *c2, int *gc)
{
    for (size_t i = 0; i < L->n; i++) {
        if (c1 && c2) sscanf(L->v[i], "escaped %d %d", c1, c2);
        if (gc) sscanf(L->v[i], "grandchild %d", gc);
    }
}

/* ---- starting, output, environment ------------------------------------------------ */

TEST(start_read_exit0)
{
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    CHECK_STR(trial_exec_name(ex), "local");
    char *argv[] = {HELPER, "print:hello", "print:{\"loss\": 0.5}", "exit:0", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    CHECK(trial_pid(p) > 0);
    CHECK(trial_fd(p) >= 0);
    CHECK_STR(trial_exec_id(p), "");
    CHECK_STR(trial_node(p), "");
    struct lines L = {0};
    CHECK_EQ_INT(drain(p, &L), 1);
    CHECK_EQ_INT(trial_fd(p), -1);
    CHECK_EQ_INT(trial_read(p, on_line, &L, 0), 1); /* EOF stays EOF */
    REQUIRE(L.n == 2);
    CHECK_STR(L.v[0], "hello");
    CHECK_STR(L.v[1], "{\"loss\": 0.5}");
    CHECK_EQ_INT(L.trunc[0], 0);
    trial_exit_t x = {99, 99};
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK_EQ_INT(x.code, 0);
    CHECK_EQ_INT(x.signal, 0);
    trial_exit_t y = {99, 99};
    CHECK_EQ_INT(trial_poll_exit(p, &y), 1); /* asked again: same answer */
    CHECK_EQ_INT(y.code, 0);
    CHECK_EQ_INT(trial_signal(p, SIGTERM), 0); /* after the end: nothing to signal */
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
}

TEST(environment_added_and_overridden)
{
    setenv("TUNE_TEST_INHERITED", "from-tune", 1);
    setenv("TUNE_TEST_OVER", "from-tune", 1);
    char *argv[] = {HELPER,
                    "env:TUNE_TEST_INHERITED",
                    "env:TUNE_TEST_OVER",
                    "env:TUNE_TEST_NEW",
                    "env:TUNE_TEST_DUP",
                    "env:TUNE_TEST_EMPTY",
                    NULL};
    char *env[] = {"TUNE_TEST_OVER=from-trial", "TUNE_TEST_NEW=a=b c", "TUNE_TEST_DUP=first",
                   "TUNE_TEST_DUP=last",        "TUNE_TEST_EMPTY=",    NULL};
    trial_spawn_t sp = {.argv = argv, .env = env};
    struct lines L = {0};
    trial_exit_t x;
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    REQUIRE(L.n == 5);
    CHECK_STR(L.v[0], "TUNE_TEST_INHERITED=from-tune");
    CHECK_STR(L.v[1], "TUNE_TEST_OVER=from-trial");
    CHECK_STR(L.v[2], "TUNE_TEST_NEW=a=b c");
    CHECK_STR(L.v[3], "TUNE_TEST_DUP=last");
    CHECK_STR(L.v[4], "TUNE_TEST_EMPTY=");
    CHECK_STR(getenv("TUNE_TEST_OVER"), "from-tune"); /* tune's own environment untouched */
    unsetenv("TUNE_TEST_INHERITED");
    unsetenv("TUNE_TEST_OVER");
    lines_free(&L);
}

TEST(program_found_in_the_trials_path)
{
    /* argv[0] without a slash is looked up in the PATH the trial gets. */
    char dir[64], path[160];
    scratch(dir, sizeof dir);
    REQUIRE(dir[0]);
    snprintf(path, sizeof path, "%s/my-trial", dir);
    REQUIRE(symlink(HELPER, path) == 0);
    char pathenv[200];
    snprintf(pathenv, sizeof pathenv, "PATH=/nonexistent:%s", dir);
    char *argv[] = {"my-trial", "print:found", NULL};
    char *env[] = {pathenv, NULL};
    trial_spawn_t sp = {.argv = argv, .env = env};
    struct lines L = {0};
    trial_exit_t x = {-5, -5};
    char err[512] = "";
    CHECK_EQ_INT(run(&sp, &L, &x, err, sizeof err), 0);
    CHECK(L.n == 1 && strcmp(L.v[0], "found") == 0);
    CHECK_EQ_INT(x.code, 0);
    rm_rf(dir);
    lines_free(&L);
}

TEST(working_directory_is_dir)
{
    char dir[64], real[4096];
    scratch(dir, sizeof dir);
    REQUIRE(dir[0] && realpath(dir, real));
    char *argv[] = {HELPER, "cwd", NULL};
    trial_spawn_t sp = {.argv = argv, .dir = dir};
    struct lines L = {0};
    trial_exit_t x;
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    REQUIRE(L.n == 1);
    CHECK_STR(L.v[0], real);
    rm_rf(dir);
    lines_free(&L);
}

TEST(stdout_logged_byte_for_byte_and_stderr_to_its_log)
{
    char dir[64], out[128], errlog[128];
    scratch(dir, sizeof dir);
    REQUIRE(dir[0]);
    snprintf(out, sizeof out, "%s/stdout.log", dir);
    snprintf(errlog, sizeof errlog, "%s/stderr.log", dir);
    spit(out, "old\n", 0644); /* both logs are appended to, never truncated */
    spit(errlog, "before\n", 0644);
    char *argv[] = {
        HELPER,           "hex:00ff0a", "print:line two", "err:oops on stderr", "hex:0d0a",
        "raw:no newline", NULL};
    trial_spawn_t sp = {.argv = argv, .stdout_log = out, .stderr_log = errlog};
    struct lines L = {0};
    trial_exit_t x;
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    size_t n = 0;
    char *got = slurp_len(out, &n);
    const char want[] = "old\n\x00\xff\nline two\n\r\nno newline";
    REQUIRE(got);
    CHECK_EQ_INT(n, sizeof want - 1);
    CHECK(n == sizeof want - 1 && memcmp(got, want, n) == 0);
    free(got);
    got = slurp_len(errlog, &n);
    CHECK_STR(got, "before\noops on stderr\n");
    free(got);
    REQUIRE(L.n == 4);
    CHECK(L.len[0] == 2 && memcmp(L.v[0], "\x00\xff", 2) == 0);
    CHECK_STR(L.v[1], "line two");
    CHECK_STR(L.v[2], "\r");
    CHECK_STR(L.v[3], "no newline"); /* the unterminated last line comes at EOF */
    rm_rf(dir);
    lines_free(&L);
}

TEST(full_disk_log_does_not_lose_results)
{
    /* /dev/full fails every write with ENOSPC: logging stops, lines keep coming. */
    char *argv[] = {HELPER, "print:{\"loss\": 1}", "sleep:20", "print:{\"loss\": 2}", NULL};
    trial_spawn_t sp = {.argv = argv, .stdout_log = "/dev/full"};
    struct lines L = {0};
    trial_exit_t x = {-5, -5};
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    REQUIRE(L.n == 2);
    CHECK_STR(L.v[1], "{\"loss\": 2}");
    CHECK_EQ_INT(x.code, 0);
    lines_free(&L);
}

TEST(exit_code_3)
{
    char *argv[] = {HELPER, "print:failing", "exit:3", NULL};
    trial_spawn_t sp = {.argv = argv};
    struct lines L = {0};
    trial_exit_t x = {0, 99};
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    CHECK_EQ_INT(x.code, 3);
    CHECK_EQ_INT(x.signal, 0);
    lines_free(&L);
}

TEST(death_by_sigsegv_reported)
{
    char *argv[] = {HELPER, "segv", NULL};
    trial_spawn_t sp = {.argv = argv};
    struct lines L = {0};
    trial_exit_t x = {0, 0};
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    CHECK_EQ_INT(x.code, -1);
    CHECK_EQ_INT(x.signal, SIGSEGV);
    lines_free(&L);
}

TEST(death_by_sigkill_reported)
{
    char *argv[] = {HELPER, "kill", NULL};
    trial_spawn_t sp = {.argv = argv};
    struct lines L = {0};
    trial_exit_t x = {0, 0};
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    CHECK_EQ_INT(x.code, -1);
    CHECK_EQ_INT(x.signal, SIGKILL);
    lines_free(&L);
}

/* ---- what cannot be started ------------------------------------------------------- */

/* Starts sp expecting failure; returns trial_start's code, leaves the message in err and
 * checks that *out was left alone and no child was left unreaped. */
static int start_fails(const trial_spawn_t *sp, char *err, size_t errlen)
{
    trial_exec_t *ex = NULL;
    if (trial_exec_local_new(&ex, err, errlen) != 0) return -100;
    int st;
    while (waitpid(-1, &st, WNOHANG) > 0) {
    }
    trial_proc_t *sentinel = (trial_proc_t *)&st, *p = sentinel;
    int rc = trial_start(ex, sp, &p, err, errlen);
    CHECK(p == sentinel);
    CHECK(waitpid(-1, &st, WNOHANG) <= 0); /* a failed start leaves no zombie behind */
    if (rc == 0 && p != sentinel) trial_proc_free(p);
    trial_exec_free(ex);
    return rc;
}

TEST(missing_program_is_enoent_with_message)
{
    char err[512] = "";
    char *argv[] = {"tune-trian", "--lr", "0.1", NULL};
    trial_spawn_t sp = {.argv = argv};
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_ENOENT);
    CHECK_STR(err, "cannot run \"tune-trian\": No such file or directory");
    char *argv2[] = {"/nonexistent/bin/tune-train", NULL};
    sp.argv = argv2;
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_ENOENT);
    CHECK_STR(err, "cannot run \"/nonexistent/bin/tune-train\": No such file or directory");
}

TEST(not_executable_is_enoent_permission_denied)
{
    char dir[64], path[128];
    scratch(dir, sizeof dir);
    REQUIRE(dir[0]);
    snprintf(path, sizeof path, "%s/train.py", dir);
    spit(path, "#!/bin/sh\necho hi\n", 0644);
    char *argv[] = {path, NULL};
    trial_spawn_t sp = {.argv = argv};
    char err[512] = "", want[256];
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_ENOENT);
    snprintf(want, sizeof want, "cannot run \"%s\": Permission denied", path);
    CHECK_STR(err, want);
    /* Found only as a non-executable file along PATH: EACCES wins over the later
     * ENOENTs, as with execvp. */
    char pathenv[200];
    snprintf(pathenv, sizeof pathenv, "PATH=%s:/nonexistent", dir);
    char *argv2[] = {"train.py", NULL};
    char *env[] = {pathenv, NULL};
    sp.argv = argv2;
    sp.env = env;
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_ENOENT);
    CHECK_STR(err, "cannot run \"train.py\": Permission denied");
    rm_rf(dir);
}

TEST(script_without_shebang_is_not_given_to_a_shell)
{
    /* execvp would run this with /bin/sh; we report it instead. */
    char dir[64], path[128], marker[128], script[256];
    scratch(dir, sizeof dir);
    REQUIRE(dir[0]);
    snprintf(path, sizeof path, "%s/noshebang", dir);
    snprintf(marker, sizeof marker, "%s/ran", dir);
    snprintf(script, sizeof script, "touch %s\n", marker);
    spit(path, script, 0755);
    char *argv[] = {path, NULL};
    trial_spawn_t sp = {.argv = argv};
    char err[512] = "", want[256];
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_ENOENT);
    snprintf(want, sizeof want, "cannot run \"%s\": Exec format error", path);
    CHECK_STR(err, want);
    CHECK(access(marker, F_OK) != 0);
    rm_rf(dir);
}

TEST(missing_working_directory)
{
    char *argv[] = {HELPER, NULL};
    trial_spawn_t sp = {.argv = argv, .dir = "/nonexistent/trial/dir"};
    char err[512] = "";
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_ERR);
    CHECK_STR(
        err,
        "cannot enter working directory \"/nonexistent/trial/dir\": No such file or directory");
}

TEST(unwritable_logs)
{
    char *argv[] = {HELPER, NULL};
    trial_spawn_t sp = {.argv = argv, .stdout_log = "/nonexistent/out.log"};
    char err[512] = "";
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_ERR);
    CHECK_STR(err, "cannot open stdout log \"/nonexistent/out.log\": No such file or directory");
    sp.stdout_log = NULL;
    sp.stderr_log = "/nonexistent/err.log";
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_ERR);
    CHECK_STR(err, "cannot open stderr log \"/nonexistent/err.log\": No such file or directory");
}

TEST(invalid_spawn_options)
{
    char err[512] = "";
    char *empty[] = {NULL};
    trial_spawn_t sp = {.argv = empty};
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_EINVAL);
    CHECK_STR(err, "no program to run: argv is empty");
    sp.argv = NULL;
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_EINVAL);
    CHECK_STR(err, "no program to run: argv is empty");
    char *blank[] = {"", NULL};
    sp.argv = blank;
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_EINVAL);
    char *argv[] = {HELPER, NULL};
    char *env[] = {"GOOD=1", "NOEQUALS", NULL};
    sp.argv = argv;
    sp.env = env;
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_EINVAL);
    CHECK_STR(err, "environment entry \"NOEQUALS\" is not KEY=VALUE");
    char *env2[] = {"=value", NULL};
    sp.env = env2;
    CHECK_EQ_INT(start_fails(&sp, err, sizeof err), TRIAL_EINVAL);
    CHECK_STR(err, "environment entry \"=value\" is not KEY=VALUE");
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    trial_proc_t *p = NULL;
    CHECK_EQ_INT(trial_start(ex, NULL, &p, err, sizeof err), TRIAL_EINVAL);
    CHECK_STR(err, "trial_start: no executor, spawn options or result handle");
    CHECK_EQ_INT(trial_exec_local_new(NULL, err, sizeof err), TRIAL_EINVAL);
    CHECK_STR(err, "trial_exec_local_new: no result handle");
    trial_exec_free(ex);
    /* NULL-safe calls */
    trial_exec_free(NULL);
    trial_proc_free(NULL);
    CHECK_EQ_INT(trial_fd(NULL), -1);
    CHECK_EQ_INT(trial_pid(NULL), -1);
    CHECK_STR(trial_exec_id(NULL), "");
    CHECK_EQ_INT(trial_read(NULL, on_line, NULL, 0), TRIAL_EINVAL);
    CHECK_EQ_INT(trial_signal(NULL, SIGTERM), TRIAL_EINVAL);
}

TEST(out_of_fds_reported)
{
    /* Fault injection: leave room for exactly the two /dev/null opens, so pipe2 fails. */
    int a = dup(0), b = dup(0);
    REQUIRE(a >= 0 && b > a);
    close(a);
    close(b);
    struct rlimit old, tight;
    REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
    trial_exec_t *ex = NULL;
    char err[512] = "";
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    tight = old;
    tight.rlim_cur = (rlim_t)b + 1;
    REQUIRE(setrlimit(RLIMIT_NOFILE, &tight) == 0);
    char *argv[] = {HELPER, NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    int rc = trial_start(ex, &sp, &p, err, sizeof err);
    setrlimit(RLIMIT_NOFILE, &old);
    CHECK_EQ_INT(rc, TRIAL_ERR);
    CHECK_STR(err, "cannot create a pipe: Too many open files");
    if (rc == 0) trial_proc_free(p);
    int c = dup(0); /* nothing leaked: the lowest free fd is the same as before */
    CHECK_EQ_INT(c, a);
    close(c);
    trial_exec_free(ex);
}

/* ---- the child's state: argv, signals, fds, process group --------------------------- */

TEST(argv_elements_arrive_literally)
{
    char dir[64], home_canary[128], injected[128], subst[256];
    scratch(dir, sizeof dir);
    REQUIRE(dir[0]);
    /* HOME points at a scratch dir with a canary: even a shell could only remove that. */
    snprintf(home_canary, sizeof home_canary, "%s/canary", dir);
    spit(home_canary, "alive\n", 0644);
    snprintf(injected, sizeof injected, "%s/injected", dir);
    snprintf(subst, sizeof subst, "$(touch %s)", injected);
    char homeenv[128];
    snprintf(homeenv, sizeof homeenv, "HOME=%s", dir);
    char *argv[] = {HELPER, "argv", "; rm -rf ~", subst,      "`touch x`", "a b\tc",
                    "",     "*",    "'\"\\",      "--lr=0.1", NULL};
    char *env[] = {homeenv, NULL};
    trial_spawn_t sp = {.argv = argv, .env = env, .dir = dir};
    struct lines L = {0};
    trial_exit_t x;
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    REQUIRE(L.n == 1);
    cJSON *a = cJSON_Parse(L.v[0]);
    REQUIRE(a && cJSON_IsArray(a));
    int n = cJSON_GetArraySize(a);
    CHECK_EQ_INT(n, 10);
    for (int i = 1; i < n && i < 10; i++)
        CHECK_STR(cJSON_GetArrayItem(a, i)->valuestring, argv[i]);
    cJSON_Delete(a);
    CHECK(access(injected, F_OK) != 0);
    CHECK(access(home_canary, F_OK) == 0);
    rm_rf(dir);
    lines_free(&L);
}

TEST(signals_reset_and_unblocked_in_the_child)
{
    struct sigaction ign = {.sa_handler = SIG_IGN}, old1, old2;
    sigaction(SIGUSR1, &ign, &old1);
    sigaction(SIGPIPE, &ign, &old2);
    sigset_t block, oldmask;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigprocmask(SIG_BLOCK, &block, &oldmask);
    char *argv[] = {HELPER, "status:SigIgn", "status:SigBlk", NULL};
    trial_spawn_t sp = {.argv = argv};
    struct lines L = {0};
    trial_exit_t x;
    char err[512] = "";
    int rc = run(&sp, &L, &x, err, sizeof err);
    sigaction(SIGUSR1, &old1, NULL);
    sigaction(SIGPIPE, &old2, NULL);
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    REQUIRE(rc == 0);
    REQUIRE(L.n == 2);
    CHECK_STR(L.v[0], "SigIgn:\t0000000000000000");
    CHECK_STR(L.v[1], "SigBlk:\t0000000000000000");
    lines_free(&L);
}

TEST(only_stdio_fds_reach_the_trial)
{
    int leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC on purpose */
    int lp[2];
    REQUIRE(leak >= 0 && pipe(lp) == 0);
    char *argv[] = {HELPER, "fds", NULL};
    trial_spawn_t sp = {.argv = argv};
    struct lines L = {0};
    trial_exit_t x;
    char err[512] = "";
    int rc = run(&sp, &L, &x, err, sizeof err);
    close(leak);
    close(lp[0]);
    close(lp[1]);
    REQUIRE(rc == 0);
    REQUIRE(L.n == 1);
    CHECK_STR(L.v[0], "fds 0 1 2");
    lines_free(&L);
}

/* A trial reads end-of-file from /dev/null on its stdin, never tune's terminal or input:
 * through the spawner (its one /dev/null for every trial) and behind a keeper alike. Two
 * trials, so that the spawner's /dev/null serves more than one. */
TEST(a_trials_stdin_is_dev_null)
{
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    for (int i = 0; i < 2; i++) {
        char *argv[] = {HELPER, "stdin", NULL};
        trial_spawn_t sp = {.argv = argv};
        trial_proc_t *p = NULL;
        REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
        struct lines L = {0};
        CHECK_EQ_INT(drain(p, &L), 1);
        REQUIRE(L.n == 1);
        CHECK_STR(L.v[0], "stdin /dev/null 0");
        trial_exit_t x;
        CHECK_EQ_INT(wait_exit(p, &x, 20), 1);
        CHECK_EQ_INT(x.code, 0);
        trial_proc_free(p);
        lines_free(&L);
    }
    trial_exec_free(ex);
}

TEST(works_when_tune_has_stdin_and_stdout_closed)
{
    /* The pipes and /dev/null may then land on fds 0 and 1 themselves. */
    fflush(stdout);
    int save0 = dup(0), save1 = dup(1);
    REQUIRE(save0 >= 0 && save1 >= 0);
    close(0);
    close(1);
    char *argv[] = {HELPER, "fds", "print:still here", NULL};
    trial_spawn_t sp = {.argv = argv};
    struct lines L = {0};
    trial_exit_t x = {-5, -5};
    char err[512] = "";
    int rc = run(&sp, &L, &x, err, sizeof err);
    dup2(save0, 0);
    dup2(save1, 1);
    close(save0);
    close(save1);
    REQUIRE(rc == 0);
    REQUIRE(L.n == 2);
    CHECK_STR(L.v[0], "fds 0 1 2");
    CHECK_STR(L.v[1], "still here");
    CHECK_EQ_INT(x.code, 0);
    lines_free(&L);
}

TEST(trial_leads_its_own_process_group)
{
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "ids", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    drain(p, &L);
    REQUIRE(L.n == 1);
    int pid = 0, pgid = 0, ppid = 0;
    CHECK_EQ_INT(sscanf(L.v[0], "pid %d pgid %d ppid %d", &pid, &pgid, &ppid), 3);
    CHECK_EQ_INT(pid, trial_pid(p)); /* trial_pid is the program, not its keeper */
    CHECK_EQ_INT(pgid, pid);
    CHECK(pgid != getpgid(0));
    /* Its parent is our child, leading a group of its own: the keeper of this one trial
     * (TUNE_SPAWNER=0, or a keeper program), or else the spawner of every trial. */
    char comm[64] = "", state = 0;
    int kppid = 0, kpgrp = 0;
    CHECK(ppid != getpid());
    CHECK(proc_stat(ppid, &state, &kppid, &kpgrp, comm, sizeof comm));
    const char *no_spawner = getenv("TUNE_SPAWNER"), *kp = getenv("TUNE_KEEPER");
    CHECK_STR(comm, (no_spawner && strcmp(no_spawner, "0") == 0) || (kp && *kp) ? "tune-keeper"
                                                                                : "tune-spawner");
    CHECK_EQ_INT(kppid, getpid());
    CHECK_EQ_INT(kpgrp, ppid);
    CHECK(kpgrp != getpgid(0) && kpgrp != pgid);
    trial_exit_t x;
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK(pid_reaped(pid));
    if (strcmp(comm, "tune-keeper") == 0) CHECK(pid_reaped(ppid));
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
}

/* ---- stopping --------------------------------------------------------------------- */

TEST(sigterm_reaches_the_grandchild)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* the orphaned grandchild becomes ours to reap */
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "grandchild", "print:ready", "sleep:30000", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    int gc = 0;
    for (size_t i = 0; i < L.n; i++)
        sscanf(L.v[i], "grandchild %d", &gc);
    REQUIRE(gc > 0);
    CHECK_EQ_INT(trial_signal(p, SIGTERM), 0);
    trial_exit_t x = {0, 0};
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK_EQ_INT(x.signal, SIGTERM);
    CHECK(pid_gone(gc, 5));
    CHECK_EQ_INT(drain(p, &L), 1); /* nobody holds the pipe any more */
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(leader_exit_takes_the_group_along)
{
    /* A forked child that outlives the trial's main process still holds stdout; reaping
     * the leader kills the rest of its group, so output reaches EOF. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "grandchild", "exit:0", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    trial_exit_t x = {-5, -5};
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK_EQ_INT(x.code, 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain(p, &L), 1);
    int gc = 0;
    for (size_t i = 0; i < L.n; i++)
        sscanf(L.v[i], "grandchild %d", &gc);
    REQUIRE(gc > 0);
    CHECK(pid_gone(gc, 5));
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(sigterm_ignored_then_sigkill)
{
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "ignore:TERM", "print:ready", "sleep:30000", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    CHECK_EQ_INT(trial_signal(p, SIGTERM), 0);
    trial_exit_t x = {0, 0};
    CHECK_EQ_INT(wait_exit(p, &x, 0.3), 0); /* still running */
    CHECK_EQ_INT(trial_signal(p, SIGKILL), 0);
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK_EQ_INT(x.code, -1);
    CHECK_EQ_INT(x.signal, SIGKILL);
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
}

TEST(free_kills_and_reaps_a_running_trial)
{
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "ignore:TERM", "grandchild", "print:ready", "sleep:30000", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    int gc = 0;
    for (size_t i = 0; i < L.n; i++)
        sscanf(L.v[i], "grandchild %d", &gc);
    pid_t pid = trial_pid(p);
    double t0 = e2e_mono();
    trial_proc_free(p);
    /* It did not wait for the trial, which ignores SIGTERM and would sleep 30 s (a bound
     * that tells the two apart on a busy machine, not a speed). */
    CHECK(e2e_mono() - t0 < 20);
    /* Reaped by free: not even a zombie is left. */
    CHECK(kill(pid, 0) != 0 && errno == ESRCH);
    CHECK(gc > 0 && pid_gone(gc, 5));
    trial_exec_free(ex);
    lines_free(&L);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(executor_freed_before_its_trial)
{
    /* Against the contract's order, but must not use freed memory (ASan checks). */
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "sleep:30000", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    trial_exec_free(ex);
    CHECK_STR(trial_exec_id(p), "");
    trial_proc_free(p);
}

/* A tune-like process (a fork of this test) starts a trial through the library, and then
 * dies: 0 exits, 1 is SIGKILLed, 2 has its whole process group SIGKILLed (a shell's
 * `kill -9 %1`). The trial has a child in its group and a child and grandchild that each
 * called setsid(), all ignoring SIGTERM or not; counting processes by a marker argument,
 * every one of them must go by itself, and the keeper too. Left alone they would sleep a
 * minute: the case waits half of that for them (a bound on a hang; on an idle machine
 * they are gone in milliseconds, which the log shows) rather than asserting a speed. */
static void tune_dies(int how)
{
    char marker[128];
    make_marker(marker, sizeof marker, "tune-dies");
    int pp[2], go[2];
    REQUIRE(pipe(pp) == 0 && pipe(go) == 0);
    pid_t tune = fork();
    REQUIRE(tune >= 0);
    if (tune == 0) {
        close(pp[0]);
        close(go[1]);
        if (how == 2) setpgid(0, 0);
        trial_exec_t *ex = NULL;
        trial_proc_t *p = NULL;
        char err[256];
        char *argv[] = {HELPER,        marker,        "grandchild",  "escape",
                        "ignore:TERM", "print:ready", "sleep:60000", NULL};
        trial_spawn_t sp = {.argv = argv};
        int pids[4] = {-1, -1, -1, -1}; /* trial, its child, setsid child, setsid grandchild */
        struct lines L = {0};
        if (trial_exec_local_new(&ex, err, sizeof err) == 0 &&
            trial_start(ex, &sp, &p, err, sizeof err) == 0 &&
            drain_until(p, &L, "ready", 10, 0) == 2) {
            pids[0] = trial_pid(p);
            tree_pids(&L, &pids[2], &pids[3], &pids[1]);
        }
        if (write(pp[1], pids, sizeof pids) != sizeof pids) _exit(1);
        char c;
        /* Waits to be told to exit (how 0) or to be killed (1, 2); exits if the test dies. */
        if (read(go[0], &c, 1) < 0) _exit(1);
        _exit(0);
    }
    close(pp[1]);
    close(go[0]);
    int pids[4] = {-1, -1, -1, -1};
    ssize_t r = read(pp[0], pids, sizeof pids);
    close(pp[0]);
    int keeper = 0;
    int ok = r == sizeof pids && pids[0] > 0 && pids[1] > 0 && pids[2] > 0 && pids[3] > 0 &&
             proc_stat(pids[0], NULL, &keeper, NULL, NULL, 0);
    CHECK(ok);
    CHECK_EQ_INT(e2e_count_procs(marker), 4);
    double t0 = e2e_mono();
    if (how == 0 && write(go[1], "g", 1) != 1) kill(tune, SIGKILL);
    if (how == 1) kill(tune, SIGKILL);
    if (how == 2) kill(-tune, SIGKILL);
    close(go[1]);
    int st;
    waitpid(tune, &st, 0);
    double gone = wait_unmarked(marker, 30);
    if (gone >= 0) gone = e2e_mono() - t0;
    fprintf(stderr, "tune %s: all 4 trial processes gone %.1f ms after\n",
            how == 0   ? "exited"
            : how == 1 ? "SIGKILLed"
                       : "group SIGKILLed",
            gone * 1e3);
    CHECK(gone >= 0);
    CHECK(keeper > 1 && pid_gone(keeper, 30));
    for (int i = 0; i < 4; i++)
        CHECK(pids[i] > 0 && pid_gone(pids[i], 0.1));
    if (e2e_count_procs(marker) > 0) { /* don't leave them behind for the next test */
        for (int i = 0; i < 4; i++)
            if (pids[i] > 0) kill(pids[i], SIGKILL);
    }
}

TEST(trial_dies_when_tune_exits)
{
    tune_dies(0);
}

TEST(trial_dies_when_tune_is_sigkilled)
{
    tune_dies(1);
}

TEST(trial_dies_when_tunes_group_is_sigkilled)
{
    tune_dies(2);
}

/* ---- the keeper: exact exit status, whole trees, relayed signals -------------------- */

TEST(exit_status_relayed_exactly)
{
    /* The keeper ends the way the trial did, so what tune reads is the trial's own status. */
    const int codes[] = {0, 1, 3, 42, 126, 127, 128, 255};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
        char a[32];
        snprintf(a, sizeof a, "exit:%d", codes[i]);
        char *argv[] = {HELPER, a, NULL};
        trial_spawn_t sp = {.argv = argv};
        struct lines L = {0};
        trial_exit_t x = {-5, -5};
        char err[512] = "";
        REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
        CHECK_EQ_INT(x.code, codes[i]);
        CHECK_EQ_INT(x.signal, 0);
        lines_free(&L);
    }
    const int sigs[] = {SIGSEGV, SIGKILL, SIGTERM, SIGABRT, SIGINT,       SIGHUP,  SIGUSR1,
                        SIGBUS,  SIGFPE,  SIGQUIT, SIGPIPE, SIGRTMIN + 4, SIGRTMAX};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        char a[32];
        snprintf(a, sizeof a, "raise:%d", sigs[i]);
        char *argv[] = {HELPER, a, NULL};
        trial_spawn_t sp = {.argv = argv};
        struct lines L = {0};
        trial_exit_t x = {-5, -5};
        char err[512] = "";
        REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
        if (x.signal != sigs[i])
            fprintf(stderr, "  signal %d came back as %d\n", sigs[i], x.signal);
        CHECK_EQ_INT(x.code, -1);
        CHECK_EQ_INT(x.signal, sigs[i]);
        CHECK_EQ_INT(L.n, 0); /* "survived" would mean the signal did not kill */
        lines_free(&L);
    }
}

TEST(trial_exit_kills_its_whole_tree_before_it_is_reported)
{
    /* A child in the trial's group, and a child and grandchild that left for sessions of
     * their own and ignore SIGTERM: when the trial exits, all are killed and reaped before
     * its end is reported, and its stdout reaches EOF although they held it. */
    char marker[128];
    make_marker(marker, sizeof marker, "exit-tree");
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER,      marker,      "grandchild", "escape",
                    "print:bye", "sleep:200", "exit:5",     NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "bye", 10, 0), 2);
    int c1 = 0, c2 = 0, gc = 0;
    tree_pids(&L, &c1, &c2, &gc);
    REQUIRE(c1 > 0 && c2 > 0 && gc > 0);
    CHECK_EQ_INT(e2e_count_procs(marker), 4);
    trial_exit_t x = {-5, -5};
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK_EQ_INT(x.code, 5);
    CHECK_EQ_INT(x.signal, 0);
    /* Reported means reaped, all of them: not even zombies are left. */
    CHECK(pid_reaped(trial_pid(p)));
    CHECK(pid_reaped(gc));
    CHECK(pid_reaped(c1));
    CHECK(pid_reaped(c2));
    CHECK_EQ_INT(e2e_count_procs(marker), 0);
    CHECK_EQ_INT(drain(p, &L), 1); /* nothing holds the pipe: the end of output, not a wait */
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
}

TEST(sigterm_ignored_by_a_setsid_tree_then_sigkill)
{
    char marker[128];
    make_marker(marker, sizeof marker, "term-ignored");
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, marker, "escape", "ignore:TERM", "print:ready", "sleep:30000", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    int c1 = 0, c2 = 0;
    tree_pids(&L, &c1, &c2, NULL);
    REQUIRE(c1 > 0 && c2 > 0);
    CHECK_EQ_INT(trial_signal(p, SIGTERM), 0);
    trial_exit_t x = {0, 0};
    CHECK_EQ_INT(wait_exit(p, &x, 0.3), 0); /* still running, all three */
    CHECK_EQ_INT(e2e_count_procs(marker), 3);
    double t0 = e2e_mono();
    CHECK_EQ_INT(trial_signal(p, SIGKILL), 0);
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    fprintf(stderr, "SIGKILL to reported end, with a setsid() tree: %.1f ms\n",
            (e2e_mono() - t0) * 1e3);
    CHECK_EQ_INT(x.code, -1);
    CHECK_EQ_INT(x.signal, SIGKILL);
    CHECK(pid_reaped(c1) && pid_reaped(c2));
    CHECK_EQ_INT(e2e_count_procs(marker), 0);
    CHECK_EQ_INT(drain(p, &L), 1);
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
}

TEST(free_kills_a_setsid_tree)
{
    char marker[128];
    make_marker(marker, sizeof marker, "free-tree");
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, marker, "escape", "print:ready", "sleep:30000", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    CHECK_EQ_INT(e2e_count_procs(marker), 3);
    trial_proc_free(p);
    CHECK_EQ_INT(e2e_count_procs(marker), 0);
    trial_exec_free(ex);
    lines_free(&L);
}

TEST(signals_relayed_to_the_trial)
{
    /* trial_signal with any signal reaches the trial, which lives on. */
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "waitsig:10", "print:after", "exit:0", NULL}; /* 10: SIGUSR1 */
    REQUIRE(SIGUSR1 == 10);
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "waiting", 10, 0), 2);
    CHECK_EQ_INT(trial_signal(p, SIGUSR1), 0);
    CHECK_EQ_INT(drain(p, &L), 1);
    CHECK(lines_has(&L, "got 10"));
    CHECK(lines_has(&L, "after"));
    trial_exit_t x = {-5, -5};
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK_EQ_INT(x.code, 0);
    trial_proc_free(p);
    lines_free(&L);

    /* Somebody's SIGTERM to the keeper itself (it is what ps shows as tune-keeper) is meant
     * for the trial: the keeper passes it on and ends the way the trial did. */
    char *argv2[] = {HELPER, "print:ready", "sleep:30000", NULL};
    sp.argv = argv2;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    int keeper = 0;
    REQUIRE(proc_stat(trial_pid(p), NULL, &keeper, NULL, NULL, 0) && keeper > 1);
    CHECK(keeper != getpid());
    CHECK_EQ_INT(kill(keeper, SIGTERM), 0);
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK_EQ_INT(x.code, -1);
    CHECK_EQ_INT(x.signal, SIGTERM);
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
}

TEST(orphans_reaped_while_the_trial_runs)
{
    /* A daemonized (double-forked) process that ends on its own is reaped by the keeper, its
     * subreaper, at once: no zombie piles up while a long trial runs. */
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "orphan:50", "print:ready", "sleep:30000", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    int o = 0;
    for (size_t i = 0; i < L.n; i++)
        sscanf(L.v[i], "orphan %d", &o);
    REQUIRE(o > 0);
    int oppid = 0, keeper = 0;
    CHECK(proc_stat(trial_pid(p), NULL, &keeper, NULL, NULL, 0));
    CHECK(proc_stat(o, NULL, &oppid, NULL, NULL, 0));
    CHECK_EQ_INT(oppid, keeper); /* re-parented to the keeper, not to init */
    double t0 = e2e_mono();
    while (!pid_reaped(o) && e2e_mono() - t0 < 5)
        e2e_nap_ms(5);
    CHECK(pid_reaped(o));
    trial_exit_t x;
    CHECK_EQ_INT(trial_poll_exit(p, &x), 0); /* the trial itself still runs */
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
}

/* ---- what a trial leaves behind, with several trials at once ------------------------ */

static int spawner_mode(void)
{
    const char *no = getenv("TUNE_SPAWNER"), *kp = getenv("TUNE_KEEPER");
    return !(no && strcmp(no, "0") == 0) && !(kp && *kp);
}

/* The pid in the "daemon PID" line, or -1. */
static int daemon_pid(const struct lines *L)
{
    int d = -1;
    for (size_t i = 0; i < L->n; i++)
        sscanf(L->v[i], "daemon %d", &d);
    return d;
}

/* Whether pid's environment is empty (its exec with none has happened). */
static int environ_empty(pid_t pid)
{
    char path[64], c;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t r = read(fd, &c, 1);
    close(fd);
    return r == 0;
}

/* Two trials at once, each with a daemon (setsid, stdio on /dev/null): when one trial ends,
 * its daemon is killed and the other trial's lives on until that trial ends. The spawner
 * serves both, so it must tell the two daemons apart (spawner_run.c: by the environment);
 * a keeper per trial gets that from the process tree. */
TEST(a_trials_daemon_dies_with_it_and_not_with_another_trial)
{
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv_a[] = {HELPER, "daemon", "waitsig:10", NULL};
    char *argv_b[] = {HELPER, "daemon", "print:ready", "sleep:30000", NULL};
    trial_spawn_t sa = {.argv = argv_a}, sb = {.argv = argv_b};
    trial_proc_t *a = NULL, *b = NULL;
    REQUIRE(trial_start(ex, &sa, &a, err, sizeof err) == 0);
    REQUIRE(trial_start(ex, &sb, &b, err, sizeof err) == 0);
    struct lines La = {0}, Lb = {0};
    CHECK_EQ_INT(drain_until(a, &La, "waiting", 10, 0), 2);
    CHECK_EQ_INT(drain_until(b, &Lb, "ready", 10, 0), 2);
    int da = daemon_pid(&La), db = daemon_pid(&Lb);
    REQUIRE(da > 0 && db > 0);
    /* Re-parented to whoever stands between tune and the trials, not to init. */
    int pa = 0, pb = 0, ka = 0, kb = 0;
    CHECK(proc_stat(da, NULL, &pa, NULL, NULL, 0) && proc_stat(db, NULL, &pb, NULL, NULL, 0));
    CHECK(proc_stat(trial_pid(a), NULL, &ka, NULL, NULL, 0));
    CHECK(proc_stat(trial_pid(b), NULL, &kb, NULL, NULL, 0));
    CHECK_EQ_INT(pa, ka);
    CHECK_EQ_INT(pb, kb);
    CHECK_EQ_INT(trial_signal(a, SIGUSR1), 0); /* a ends */
    trial_exit_t x = {-5, -5};
    CHECK_EQ_INT(wait_exit(a, &x, 10), 1);
    CHECK_EQ_INT(x.code, 0);
    CHECK(pid_gone(da, 0.01)); /* gone by the time its trial's end is known */
    e2e_nap_ms(100);
    CHECK(!pid_gone(db, 0.0)); /* the other trial's */
    CHECK_EQ_INT(trial_poll_exit(b, &x), 0);
    trial_proc_free(b); /* b killed: its daemon with it */
    CHECK(pid_gone(db, 0.01));
    trial_proc_free(a);
    trial_exec_free(ex);
    lines_free(&La);
    lines_free(&Lb);
}

/* A daemon that says neither whose it is (its own session) nor carries its trial's
 * environment (re-exec'd with none): a keeper kills it with its trial. The spawner cannot
 * tell which of the trials running when it first saw it left it, so it kills it once every
 * one of those has ended: later than its own trial's end, never before. */
TEST(a_daemon_with_no_environment_dies_once_every_trial_that_could_have_left_it_ended)
{
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv_b[] = {HELPER, "print:ready", "sleep:30000", NULL};
    char *argv_a[] = {HELPER, "daemon:bare", "waitsig:10", NULL};
    trial_spawn_t sb = {.argv = argv_b}, sa = {.argv = argv_a};
    trial_proc_t *a = NULL, *b = NULL;
    REQUIRE(trial_start(ex, &sb, &b, err, sizeof err) == 0); /* b first: it could be b's */
    REQUIRE(trial_start(ex, &sa, &a, err, sizeof err) == 0);
    struct lines La = {0}, Lb = {0};
    CHECK_EQ_INT(drain_until(b, &Lb, "ready", 10, 0), 2);
    CHECK_EQ_INT(drain_until(a, &La, "waiting", 10, 0), 2);
    int d = daemon_pid(&La);
    REQUIRE(d > 0);
    double t0 = e2e_mono();
    while (!environ_empty(d) && e2e_mono() - t0 < 10)
        e2e_nap_ms(5);
    REQUIRE(environ_empty(d));
    CHECK_EQ_INT(trial_signal(a, SIGUSR1), 0);
    trial_exit_t x = {-5, -5};
    CHECK_EQ_INT(wait_exit(a, &x, 10), 1);
    if (spawner_mode()) {
        e2e_nap_ms(100);
        CHECK(!pid_gone(d, 0.0)); /* b, started before it was seen, still runs */
        trial_proc_free(b);
        CHECK(pid_gone(d, 5.0));
    } else {
        CHECK(pid_gone(d, 0.01));
        trial_proc_free(b);
    }
    trial_proc_free(a);
    trial_exec_free(ex);
    lines_free(&La);
    lines_free(&Lb);
}

/* The spawner marks each trial's environment, which is how it tells whose an orphan is;
 * a marker the trial inherited (tune run by a trial of another tune) is replaced. */
TEST(a_spawned_trial_carries_one_marker_of_its_own)
{
    if (!spawner_mode()) SKIP("a keeper per trial needs no marker");
    setenv("TUNE_SPAWN_SLOT", "1:99", 1);
    char *argv[] = {HELPER, "env:TUNE_SPAWN_SLOT", NULL};
    char *env[] = {"TUNE_SPAWN_SLOT=2:98", NULL};
    trial_spawn_t sp = {.argv = argv, .env = env};
    struct lines L = {0};
    trial_exit_t x;
    char err[512] = "";
    int rc = run(&sp, &L, &x, err, sizeof err);
    unsetenv("TUNE_SPAWN_SLOT");
    REQUIRE(rc == 0);
    REQUIRE(L.n == 1);
    long spawner = 0;
    unsigned long long slot = 0;
    CHECK_EQ_INT(sscanf(L.v[0], "TUNE_SPAWN_SLOT=%ld:%llu", &spawner, &slot), 2);
    CHECK(spawner > 2 && spawner != (long)getpid()); /* neither inherited one */
    CHECK_EQ_INT((int)slot, 1);
    lines_free(&L);
}

/* Somebody SIGKILLs the spawner: its trials die with it (their parent-death signal), tune
 * hears of their ends (EOF on the spawner's answers), and the next trials start behind
 * keepers of their own. */
TEST(a_killed_spawner_ends_its_trials_and_the_next_ones_still_start)
{
    if (!spawner_mode()) SKIP("no spawner: a keeper per trial");
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "print:ready", "sleep:30000", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    int spawner = 0;
    char comm[64] = "";
    REQUIRE(proc_stat(trial_pid(p), NULL, &spawner, NULL, NULL, 0));
    REQUIRE(proc_stat(spawner, NULL, NULL, NULL, comm, sizeof comm));
    CHECK_STR(comm, "tune-spawner");
    CHECK_EQ_INT(kill(spawner, SIGKILL), 0);
    trial_exit_t x = {-5, -5};
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK_EQ_INT(x.signal, SIGKILL);
    CHECK(pid_gone(trial_pid(p), 5.0));
    trial_proc_free(p);
    lines_free(&L);
    char *argv2[] = {HELPER, "ids", "print:ready", "sleep:30000", NULL};
    sp.argv = argv2;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    int pid = 0, pgid = 0, ppid = 0;
    REQUIRE(L.n == 2);
    CHECK_EQ_INT(sscanf(L.v[0], "pid %d pgid %d ppid %d", &pid, &pgid, &ppid), 3);
    CHECK(proc_stat(ppid, NULL, NULL, NULL, comm, sizeof comm));
    CHECK_STR(comm, "tune-keeper");
    trial_proc_free(p);
    CHECK(pid_gone(pid, 5.0));
    trial_exec_free(ex);
    lines_free(&L);
}

/* no_wait: trial_start returns before the exec; a program that cannot run then ends the
 * trial with 127 and trial_start_error says why in trial_start's own words, and a program
 * that runs has its pid once the executor's news is taken in. Without a spawner the start
 * waits as before. */
TEST(a_start_that_does_not_wait_reports_a_failed_exec_at_the_end)
{
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {"/nonexistent/bin/tune-train", NULL};
    trial_spawn_t sp = {.argv = argv, .no_wait = 1};
    trial_proc_t *p = NULL;
    int rc = trial_start(ex, &sp, &p, err, sizeof err);
    if (!spawner_mode()) {
        CHECK_EQ_INT(rc, TRIAL_ENOENT);
        CHECK_STR(err, "cannot run \"/nonexistent/bin/tune-train\": No such file or directory");
        trial_exec_free(ex);
        return;
    }
    REQUIRE(rc == 0);
    CHECK_EQ_INT((int)trial_pid(p), -1);
    CHECK(trial_exec_fd(ex) >= 0);
    trial_exit_t x = {-5, -5};
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    CHECK_EQ_INT(x.code, 127);
    CHECK_EQ_INT(x.signal, 0);
    CHECK(trial_start_error(p) != NULL);
    if (trial_start_error(p))
        CHECK_STR(trial_start_error(p),
                  "cannot run \"/nonexistent/bin/tune-train\": No such file or directory");
    struct lines L = {0};
    CHECK_EQ_INT(drain(p, &L), 1); /* its stdout ends too */
    trial_proc_free(p);

    char *argv2[] = {HELPER, "ids", "print:ready", "sleep:30000", NULL};
    trial_spawn_t sp2 = {.argv = argv2, .no_wait = 1};
    REQUIRE(trial_start(ex, &sp2, &p, err, sizeof err) == 0);
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    struct pollfd pf = {.fd = trial_exec_fd(ex), .events = POLLIN};
    double t0 = e2e_mono();
    while (trial_pid(p) < 0 && e2e_mono() - t0 < 10) {
        poll(&pf, 1, 100);
        trial_exec_poll(ex);
    }
    int pid = 0, pgid = 0, ppid = 0;
    REQUIRE(L.n >= 1);
    CHECK_EQ_INT(sscanf(L.v[0], "pid %d pgid %d ppid %d", &pid, &pgid, &ppid), 3);
    CHECK_EQ_INT((int)trial_pid(p), pid);
    CHECK(trial_start_error(p) == NULL);
    trial_proc_free(p);
    CHECK(pid_gone(pid, 5.0));
    trial_exec_free(ex);
    lines_free(&L);
}

/* ---- starts held behind another trial (trial_start_after) --------------------------- */

/* Polls the executor's news until trial p's pid is known or timeout_s passes. */
static pid_t wait_pid(trial_exec_t *ex, trial_proc_t *p, double timeout_s)
{
    struct pollfd pf = {.fd = trial_exec_fd(ex), .events = POLLIN};
    double t0 = e2e_mono();
    while (trial_pid(p) < 0 && e2e_mono() - t0 < timeout_s) {
        poll(&pf, 1, 20);
        trial_exec_poll(ex);
    }
    return trial_pid(p);
}

/* Starts argv (no_wait), held behind `after` when it is not NULL. */
static trial_proc_t *start_after(trial_exec_t *ex, char **argv, const trial_proc_t *after,
                                 const char *log)
{
    char err[512];
    trial_spawn_t sp = {.argv = argv, .no_wait = 1, .stdout_log = log};
    trial_proc_t *p = NULL;
    if (trial_start_after(ex, &sp, after, &p, err, sizeof err) != 0)
        fprintf(stderr, "start: %s\n", err);
    return p;
}

/* Without the spawner nothing can hold a start: trial_start refuses one. */
TEST(a_held_start_needs_the_spawner)
{
    char err[512];
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    CHECK_EQ_INT(trial_exec_can_hold(ex), spawner_mode());
    char *a[] = {HELPER, "sleep:100", NULL};
    trial_proc_t *p = start_after(ex, a, NULL, NULL);
    REQUIRE(p);
    trial_spawn_t sp = {.argv = a, .no_wait = 0};
    trial_proc_t *q = NULL;
    CHECK_EQ_INT(trial_start_after(ex, &sp, p, &q, err, sizeof err), TRIAL_EINVAL); /* waits */
    sp.no_wait = 1;
    int rc = trial_start_after(ex, &sp, p, &q, err, sizeof err);
    if (spawner_mode()) {
        CHECK_EQ_INT(rc, 0);
        trial_proc_free(q);
    } else {
        CHECK_EQ_INT(rc, TRIAL_EINVAL);
        CHECK_CONTAINS(err, "cannot hold a start");
    }
    CHECK_EQ_INT(trial_cancel(p), 0); /* never held */
    trial_proc_free(p);
    trial_exec_free(ex);
}

/* A held start happens when the trial it follows has ended, and only then. */
TEST(a_held_start_waits_for_the_trial_it_follows)
{
    if (!spawner_mode()) return;
    char err[512];
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *a[] = {HELPER, "sleep:500", NULL}, *b[] = {HELPER, "ids", NULL};
    trial_proc_t *pa = start_after(ex, a, NULL, NULL);
    REQUIRE(pa);
    REQUIRE(wait_pid(ex, pa, 10) > 0);
    trial_proc_t *pb = start_after(ex, b, pa, NULL);
    REQUIRE(pb);
    CHECK_EQ_INT((int)wait_pid(ex, pb, 0.3), -1); /* a still runs */
    trial_exit_t x = {-5, -5};
    CHECK_EQ_INT(wait_exit(pa, &x, 10), 1);
    CHECK_EQ_INT(x.code, 0);
    pid_t pid = wait_pid(ex, pb, 10);
    CHECK(pid > 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain(pb, &L), 1);
    int p1 = 0, g = 0, pp = 0;
    REQUIRE(L.n >= 1);
    CHECK_EQ_INT(sscanf(L.v[0], "pid %d pgid %d ppid %d", &p1, &g, &pp), 3);
    CHECK_EQ_INT(p1, (int)pid);
    CHECK_EQ_INT(g, p1); /* a group of its own, as any trial */
    CHECK_EQ_INT(wait_exit(pb, &x, 10), 1);
    CHECK_EQ_INT(x.code, 0);
    CHECK_EQ_INT(trial_cancel(pb), 0); /* it ran */
    lines_free(&L);
    trial_proc_free(pb);
    trial_proc_free(pa);
    trial_exec_free(ex);
}

/* Taken back before it happens (trial_cancel), or freed while held, a start never
 * happens: the trial counts as ended by SIGKILL and wrote nothing. Taken back too late,
 * it has started and runs. Held behind a trial that has already ended, it starts at once. */
TEST(a_held_start_taken_back_never_runs)
{
    if (!spawner_mode()) return;
    char err[512], dir[4096], log1[4200], log2[4200];
    scratch(dir, sizeof dir);
    snprintf(log1, sizeof log1, "%s/b.log", dir);
    snprintf(log2, sizeof log2, "%s/c.log", dir);
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    /* a runs until the case kills it: the two starts stay held behind it however long
     * this process waits between the calls */
    char *a[] = {HELPER, "sleep:30000", NULL}, *b[] = {HELPER, "print:ran", NULL};
    trial_proc_t *pa = start_after(ex, a, NULL, NULL);
    REQUIRE(pa);
    trial_proc_t *pb = start_after(ex, b, pa, log1);
    trial_proc_t *pc = start_after(ex, b, pa, log2);
    REQUIRE(pb && pc);
    CHECK_EQ_INT(trial_cancel(pb), 1);
    trial_exit_t x = {-5, -5};
    CHECK_EQ_INT(wait_exit(pb, &x, 10), 1);
    CHECK_EQ_INT(x.signal, SIGKILL);
    CHECK_EQ_INT(trial_cancel(pb), 0); /* no longer held */
    trial_proc_free(pb);
    trial_proc_free(pc); /* freed while held: dropped too */
    CHECK_EQ_INT(trial_signal(pa, SIGKILL), 0);
    CHECK_EQ_INT(wait_exit(pa, &x, 10), 1);
    e2e_nap_ms(300);
    size_t n1 = 99, n2 = 99;
    free(slurp_len(log1, &n1));
    free(slurp_len(log2, &n2));
    CHECK_EQ_INT((int)n1, 0);
    CHECK_EQ_INT((int)n2, 0);

    /* a trial that ends at once: the held start happens before it can be taken back */
    char *q[] = {HELPER, "exit:0", NULL}, *r[] = {HELPER, "print:late", "sleep:200", NULL};
    trial_proc_t *pq = start_after(ex, q, NULL, NULL);
    REQUIRE(pq);
    CHECK_EQ_INT(wait_exit(pq, &x, 10), 1);
    trial_proc_t *pr = start_after(ex, r, pq, NULL); /* pq has ended: it starts at once */
    REQUIRE(pr);
    CHECK(wait_pid(ex, pr, 10) > 0);
    CHECK_EQ_INT(trial_cancel(pr), 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain(pr, &L), 1);
    CHECK(lines_has(&L, "late"));
    CHECK_EQ_INT(wait_exit(pr, &x, 10), 1);
    CHECK_EQ_INT(x.code, 0);
    lines_free(&L);
    trial_proc_free(pr);
    trial_proc_free(pq);
    trial_proc_free(pa);
    trial_exec_free(ex);
    rm_rf(dir);
}

TEST(keeper_finds_its_children_both_ways)
{
    /* The children file and the /proc scan (its fallback) agree, also on a child whose name
     * holds ") " and spaces, which a careless parse of /proc/<pid>/stat gets wrong. */
    pid_t kids[3];
    int renamed[2];
    REQUIRE(pipe(renamed) == 0);
    for (int i = 0; i < 3; i++) {
        kids[i] = fork();
        REQUIRE(kids[i] >= 0);
        if (kids[i] == 0) {
            if (i == 1) prctl(PR_SET_NAME, "a) S 1 (b");
            if (write(renamed[1], "r", 1) != 1) _exit(1); /* named as it will stay */
            for (;;)
                pause();
        }
    }
    close(renamed[1]);
    char r3[3];
    for (size_t got = 0; got < sizeof r3;) { /* every child has its name */
        ssize_t k = read(renamed[0], r3 + got, sizeof r3 - got);
        REQUIRE(k > 0);
        got += (size_t)k;
    }
    close(renamed[0]);
    pid_t viafile[64], viascan[64];
    int nf = trial__keeper_children(getpid(), viafile, 64, 0);
    int ns = trial__keeper_children(getpid(), viascan, 64, 1);
    CHECK_EQ_INT(nf, 3);
    CHECK_EQ_INT(ns, 3);
    for (int i = 0; i < 3; i++) {
        int inf = 0, ins = 0;
        for (int j = 0; j < nf; j++)
            inf |= viafile[j] == kids[i];
        for (int j = 0; j < ns; j++)
            ins |= viascan[j] == kids[i];
        CHECK(inf && ins);
    }
    CHECK_EQ_INT(trial__keeper_children(getpid(), viafile, 2, 0), 2); /* bounded by max */
    CHECK_EQ_INT(trial__keeper_children(getpid(), viascan, 2, 1), 2);
    for (int i = 0; i < 3; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    CHECK_EQ_INT(trial__keeper_children(getpid(), viafile, 64, 0), 0);
    CHECK_EQ_INT(trial__keeper_children(getpid(), viascan, 64, 1), 0);
}

TEST(start_failure_messages)
{
    /* Every way the forked side can give up, as tune words it (the keeper's own steps cannot
     * be made to fail from a test, so their messages are checked here). */
    char *argv[] = {"prog", NULL};
    trial_spawn_t sp = {.argv = argv, .dir = "/some/dir"};
    char err[256];
    CHECK_EQ_INT(trial__launch_error(&sp, TRIAL__FAIL_EXEC, ENOENT, err, sizeof err), TRIAL_ENOENT);
    CHECK_STR(err, "cannot run \"prog\": No such file or directory");
    CHECK_EQ_INT(trial__launch_error(&sp, TRIAL__FAIL_CHDIR, ENOTDIR, err, sizeof err), TRIAL_ERR);
    CHECK_STR(err, "cannot enter working directory \"/some/dir\": Not a directory");
    CHECK_EQ_INT(trial__launch_error(&sp, TRIAL__FAIL_SETPGID, EPERM, err, sizeof err), TRIAL_ERR);
    CHECK_STR(err, "cannot start \"prog\": setpgid: Operation not permitted");
    CHECK_EQ_INT(trial__launch_error(&sp, TRIAL__FAIL_PDEATHSIG, EINVAL, err, sizeof err),
                 TRIAL_ERR);
    CHECK_STR(err, "cannot start \"prog\": prctl(PR_SET_PDEATHSIG): Invalid argument");
    CHECK_EQ_INT(trial__launch_error(&sp, TRIAL__FAIL_SUBREAPER, EINVAL, err, sizeof err),
                 TRIAL_ERR);
    CHECK_STR(err, "cannot start \"prog\": prctl(PR_SET_CHILD_SUBREAPER): Invalid argument");
    CHECK_EQ_INT(trial__launch_error(&sp, TRIAL__FAIL_FORK, EAGAIN, err, sizeof err), TRIAL_ERR);
    CHECK_STR(err, "cannot start \"prog\": fork: Resource temporarily unavailable");
    CHECK_EQ_INT(trial__launch_error(&sp, TRIAL__FAIL_FDS, EMFILE, err, sizeof err), TRIAL_ERR);
    CHECK_STR(err, "cannot start \"prog\": redirecting its stdio: Too many open files");
    CHECK_EQ_INT(trial__launch_error(&sp, TRIAL__FAIL_NO_PID, 0, err, sizeof err), TRIAL_ERR);
    CHECK_STR(err, "cannot start \"prog\": its keeper process ended before starting it");
}

TEST(keeper_costs)
{
    /* Printed, with loose bounds: what a keeper adds to a start, and the memory it keeps
     * private (copy-on-write shares the rest with tune). */
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "print:ready", "sleep:30000", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    double t0 = e2e_mono();
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    double start_ms = (e2e_mono() - t0) * 1e3;
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, "ready", 10, 0), 2);
    int keeper = 0;
    REQUIRE(proc_stat(trial_pid(p), NULL, &keeper, NULL, NULL, 0));
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", keeper);
    long rss = -1, priv = -1;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        sscanf(line, "Rss: %ld kB", &rss);
        sscanf(line, "Private_Dirty: %ld kB", &priv);
    }
    if (f) fclose(f);
    t0 = e2e_mono();
    trial_proc_free(p);
    double free_ms = (e2e_mono() - t0) * 1e3;
    fprintf(stderr,
            "keeper: start %.2f ms, SIGKILL+reap %.2f ms, RSS %ld KiB of which private "
            "dirty %ld KiB\n",
            start_ms, free_ms, rss, priv);
    CHECK(priv >= 0 && priv < 16 * 1024);
    trial_exec_free(ex);
    lines_free(&L);
}

/* ---- lines -------------------------------------------------------------------------- */

TEST(hundred_mib_line_is_cut_with_bounded_memory)
{
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "bigline:104857600", "print:", "print:{\"after\": 1}", NULL};
    trial_spawn_t sp = {.argv = argv};
    long rss0 = maxrss_kib();
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain(p, &L), 1);
    long grew_kib = maxrss_kib() - rss0;
    fprintf(stderr, "100 MiB line: max RSS grew by %ld KiB\n", grew_kib);
    CHECK(grew_kib < 32 * 1024);
    REQUIRE(L.n == 2);
    CHECK_EQ_INT(L.len[0], TRIAL_MAX_LINE);
    CHECK_EQ_INT(L.trunc[0], 1);
    CHECK(L.v[0][0] == 'x' && L.v[0][TRIAL_MAX_LINE - 1] == 'x');
    CHECK_STR(L.v[1], "{\"after\": 1}"); /* the rest of the long line was skipped */
    CHECK_EQ_INT(L.trunc[1], 0);
    trial_exit_t x;
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
}

TEST(line_limit_boundaries)
{
    char max[32], over[32];
    snprintf(max, sizeof max, "bigline:%u", TRIAL_MAX_LINE);
    snprintf(over, sizeof over, "bigline:%u", TRIAL_MAX_LINE + 1);
    char *argv[] = {HELPER, max, "print:", over, "print:", over, "raw:tail", "print:", max, NULL};
    trial_spawn_t sp = {.argv = argv};
    struct lines L = {0};
    trial_exit_t x;
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    REQUIRE(L.n == 4);
    CHECK(L.len[0] == TRIAL_MAX_LINE && L.trunc[0] == 0); /* exactly the limit: whole */
    CHECK(L.len[1] == TRIAL_MAX_LINE && L.trunc[1] == 1); /* one more: cut */
    CHECK(L.len[2] == TRIAL_MAX_LINE && L.trunc[2] == 1); /* "tail" went with the rest */
    CHECK(L.len[3] == TRIAL_MAX_LINE && L.trunc[3] == 0); /* unterminated, at EOF */
    lines_free(&L);
}

TEST(lines_split_across_reads)
{
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "slowline", "print:abc", "print:", "print:{\"x\": 1}", NULL};
    trial_spawn_t sp = {.argv = argv};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L = {0};
    CHECK_EQ_INT(drain_until(p, &L, NULL, 10, 1), 1); /* one byte per trial_read */
    REQUIRE(L.n == 4);
    CHECK_STR(L.v[0], "{\"part\": 1, \"done\": true}");
    CHECK_STR(L.v[1], "abc");
    CHECK_STR(L.v[2], "");
    CHECK_STR(L.v[3], "{\"x\": 1}");
    trial_proc_free(p);
    trial_exec_free(ex);
    lines_free(&L);
}

TEST(garbage_output_is_not_results)
{
    char *argv[] = {HELPER,
                    "hex:00010203fffe7b7d0a",       /* binary, then {} on the same line */
                    "hex:7b2261223a2280ff227d0a",   /* {"a":"\x80\xff"} */
                    "hex:7b2261223a22c0af227d0a",   /* overlong '/' */
                    "hex:7b2261223a22eda080227d0a", /* a UTF-16 surrogate */
                    "hex:7b2261223a2200227d0a",     /* a NUL inside */
                    "print:{\"loss\": 0.25, \"ok\": \"h\xc3\xa9\"}", /* the one result */
                    NULL};
    trial_spawn_t sp = {.argv = argv};
    struct lines L = {0};
    trial_exit_t x;
    char err[512] = "";
    REQUIRE(run(&sp, &L, &x, err, sizeof err) == 0);
    REQUIRE(L.n == 6);
    for (size_t i = 0; i < 5; i++) {
        cJSON *r = NULL;
        CHECK_EQ_INT(trial_result_parse(L.v[i], L.len[i], &r), 0);
        CHECK(r == NULL);
    }
    cJSON *r = NULL;
    CHECK_EQ_INT(trial_result_parse(L.v[5], L.len[5], &r), 1);
    CHECK_NEAR(trial_result_number(r, "loss"), 0.25, 0);
    cJSON_Delete(r);
    lines_free(&L);
}

/* ---- result lines ------------------------------------------------------------------ */

static int is_result(const char *s)
{
    cJSON *r = NULL;
    int rc = trial_result_parse(s, strlen(s), &r);
    if (rc == 1 && !r) return -1;
    cJSON_Delete(r);
    return rc;
}

TEST(result_objects)
{
    CHECK_EQ_INT(is_result("{\"loss\": 0.5}"), 1);
    CHECK_EQ_INT(is_result("{}"), 1);
    CHECK_EQ_INT(is_result("  \t{\"a\": [1, {\"b\": null}], \"c\": true}  \r"), 1);
    CHECK_EQ_INT(is_result("{\"a\":-1.5e-3,\"b\":\"\\u00e9\\n\\\"\",\"c\":false}"), 1);
    CHECK_EQ_INT(is_result("{\"emoji\": \"\xf0\x9f\x98\x80\", \"e\": \"\xe2\x82\xac\"}"), 1);
    /* only the first len bytes count */
    cJSON *r = NULL;
    CHECK_EQ_INT(trial_result_parse("{\"a\": 1} trailing", 8, &r), 1);
    CHECK_NEAR(trial_result_number(r, "a"), 1, 0);
    cJSON_Delete(r);
}

TEST(result_not_objects)
{
    const char *no[] = {"",
                        "   ",
                        "[1, 2, 3]",
                        "[{\"a\": 1}]",
                        "\"string\"",
                        "42",
                        "null",
                        "true",
                        "epoch 3: loss 0.5",
                        "{",
                        "}",
                        "{\"a\": 1",
                        "{\"a\": }",
                        "{\"a\" 1}",
                        "{a: 1}",
                        "{'a': 1}",
                        "{\"a\": 1,}",
                        "{\"a\": \"unterminated}",
                        "{\"a\": \"bad escape \\x\"}",
                        "{\"a\": \"\\u12\"}",
                        "{\"a\": \"ends in backslash\\",
                        "{\"a\": [1, 2}",
                        "{\"a\": 1}}",
                        "{\"a\": nan}",
                        "{\"a\": NaNa}",
                        "{\"a\": Inf}",
                        "{\"a\": -NaN}",
                        "{NaN: 1}",
                        "{\"a\": \"tab\there\"}",
                        NULL};
    for (int i = 0; no[i]; i++) {
        cJSON *r = (cJSON *)1;
        int rc = trial_result_parse(no[i], strlen(no[i]), &r);
        if (rc != 0) fprintf(stderr, "  taken as a result: %s\n", no[i]);
        CHECK_EQ_INT(rc, 0);
        CHECK(r == (cJSON *)1); /* left alone */
    }
    CHECK_EQ_INT(trial_result_parse(NULL, 0, NULL), 0);
}

TEST(result_trailing_garbage)
{
    CHECK_EQ_INT(is_result("{\"a\": 1} x"), 0);
    CHECK_EQ_INT(is_result("{\"a\": 1}{\"b\": 2}"), 0);
    CHECK_EQ_INT(is_result("{\"a\": 1},"), 0);
    CHECK_EQ_INT(is_result("x {\"a\": 1}"), 0);
    CHECK_EQ_INT(is_result("{\"a\": 1}\"}"), 0);
}

static char *nested(int depth, const char *open, const char *close, const char *leaf)
{
    size_t lo = strlen(open), lc = strlen(close), ll = strlen(leaf);
    char *s = malloc((size_t)depth * (lo + lc) + ll + 1), *w = s;
    for (int i = 0; i < depth; i++, w += lo)
        memcpy(w, open, lo);
    memcpy(w, leaf, ll);
    w += ll;
    for (int i = 0; i < depth; i++, w += lc)
        memcpy(w, close, lc);
    *w = '\0';
    return s;
}

TEST(result_nesting_depth)
{
    char *s = nested(63, "{\"a\":", "}", "{}"); /* 63 objects around {}: 64 levels */
    CHECK_EQ_INT(is_result(s), 1);
    free(s);
    s = nested(64, "{\"a\":", "}", "{}"); /* 65 levels */
    CHECK_EQ_INT(is_result(s), 0);
    free(s);
    char *inner = nested(63, "[", "]", "1"); /* object + 63 arrays = 64 */
    char *outer = malloc(strlen(inner) + 8);
    sprintf(outer, "{\"a\":%s}", inner);
    CHECK_EQ_INT(is_result(outer), 1);
    free(inner);
    free(outer);
    inner = nested(64, "[", "]", "1");
    outer = malloc(strlen(inner) + 8);
    sprintf(outer, "{\"a\":%s}", inner);
    CHECK_EQ_INT(is_result(outer), 0);
    free(inner);
    free(outer);
}

TEST(result_deep_nesting_does_not_crash)
{
    char *s = nested(100000, "{\"a\":", "}", "1");
    CHECK_EQ_INT(is_result(s), 0);
    free(s);
    char *inner = nested(100000, "[", "]", "");
    char *outer = malloc(strlen(inner) + 8);
    sprintf(outer, "{\"a\":%s}", inner);
    CHECK_EQ_INT(is_result(outer), 0);
    free(inner);
    free(outer);
    char *open_only = malloc(100002);
    memset(open_only, '[', 100000);
    open_only[0] = '{';
    open_only[100000] = '}';
    open_only[100001] = '\0';
    CHECK_EQ_INT(is_result(open_only), 0);
    free(open_only);
}

TEST(result_nan_and_infinity)
{
    const char *s = "{\"a\": NaN, \"b\": Infinity, \"c\": -Infinity, \"d\": [NaN, 1.5, \"NaN\", "
                    "{\"e\": NaN}], \"f\": 2, \"NaN\": \"Infinity\", \"g\":NaN}";
    cJSON *r = NULL;
    REQUIRE(trial_result_parse(s, strlen(s), &r) == 1);
    CHECK(isnan(trial_result_number(r, "a")));
    CHECK(isinf(trial_result_number(r, "b")) && trial_result_number(r, "b") > 0);
    CHECK(isinf(trial_result_number(r, "c")) && trial_result_number(r, "c") < 0);
    cJSON *d = cJSON_GetObjectItemCaseSensitive(r, "d");
    REQUIRE(cJSON_IsArray(d) && cJSON_GetArraySize(d) == 4);
    CHECK(cJSON_IsNumber(cJSON_GetArrayItem(d, 0)) && isnan(cJSON_GetArrayItem(d, 0)->valuedouble));
    CHECK_NEAR(cJSON_GetArrayItem(d, 1)->valuedouble, 1.5, 0);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetArrayItem(d, 2)), "NaN");
    CHECK(isnan(trial_result_number(cJSON_GetArrayItem(d, 3), "e")));
    CHECK_NEAR(trial_result_number(r, "f"), 2, 0); /* a real number is not taken for NaN */
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "NaN")), "Infinity");
    CHECK(isnan(trial_result_number(r, "g")));
    cJSON_Delete(r);
    /* 0 stays 0 next to a NaN */
    const char *z = "{\"z\": 0, \"n\": NaN, \"y\": 0}";
    REQUIRE(trial_result_parse(z, strlen(z), &r) == 1);
    CHECK_NEAR(trial_result_number(r, "z"), 0, 0);
    CHECK(isnan(trial_result_number(r, "n")));
    CHECK_NEAR(trial_result_number(r, "y"), 0, 0);
    cJSON_Delete(r);
}

TEST(result_strings_containing_nan_untouched)
{
    const char *s = "{\"s\": \"NaN\", \"t\": \"x NaN Infinity -Infinity\", \"u\": \"\\\"NaN\", "
                    "\"v\": \"\\\\\", \"w\": NaN}";
    cJSON *r = NULL;
    REQUIRE(trial_result_parse(s, strlen(s), &r) == 1);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "s")), "NaN");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "t")),
              "x NaN Infinity -Infinity");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "u")), "\"NaN");
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "v")), "\\");
    CHECK(isnan(trial_result_number(r, "w")));
    CHECK(isnan(trial_result_number(r, "s"))); /* a string is not a number */
    cJSON_Delete(r);
}

TEST(result_invalid_utf8_and_control_bytes)
{
    CHECK_EQ_INT(is_result("{\"a\": \"\xff\"}"), 0);
    CHECK_EQ_INT(is_result("{\"a\": \"\xc3\"}"), 0);             /* cut sequence */
    CHECK_EQ_INT(is_result("{\"a\": \"\xc0\xaf\"}"), 0);         /* overlong */
    CHECK_EQ_INT(is_result("{\"a\": \"\xe0\x80\xaf\"}"), 0);     /* overlong */
    CHECK_EQ_INT(is_result("{\"a\": \"\xed\xa0\x80\"}"), 0);     /* surrogate */
    CHECK_EQ_INT(is_result("{\"a\": \"\xf4\x90\x80\x80\"}"), 0); /* above U+10FFFF */
    CHECK_EQ_INT(is_result("{\"a\": 1, \xc3\xa9: 2}"), 0);       /* non-ASCII outside strings */
    CHECK_EQ_INT(is_result("{\"a\": \"\x01\"}"), 0);
    CHECK_EQ_INT(is_result("{\"a\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}"), 1);
    const char nul[] = "{\"a\": 1,\0 \"b\": 2}";
    CHECK_EQ_INT(trial_result_parse(nul, sizeof nul - 1, &(cJSON *){NULL}), 0);
}

TEST(result_one_mib_line)
{
    size_t cap = 1u << 20;
    char *s = malloc(cap + 64);
    size_t n = 0;
    s[n++] = '{';
    int k = 0;
    while (n < cap - 40)
        n += (size_t)sprintf(s + n, "\"k%d\": %d.5, ", k, k), k++;
    n += (size_t)sprintf(s + n, "\"last\": NaN}");
    double t0 = e2e_mono();
    cJSON *r = NULL;
    CHECK_EQ_INT(trial_result_parse(s, n, &r), 1);
    double dt = e2e_mono() - t0;
    fprintf(stderr, "1 MiB result line (%d keys) parsed in %.1f ms\n", k, dt * 1e3);
    CHECK_NEAR(trial_result_number(r, "k0"), 0.5, 0);
    CHECK(isnan(trial_result_number(r, "last")));
    cJSON_Delete(r);
    /* one big string */
    memset(s, 'y', cap);
    memcpy(s, "{\"s\": \"", 7);
    memcpy(s + cap - 2, "\"}", 2);
    t0 = e2e_mono();
    CHECK_EQ_INT(trial_result_parse(s, cap, &r), 1);
    fprintf(stderr, "1 MiB string value parsed in %.1f ms\n", (e2e_mono() - t0) * 1e3);
    cJSON_Delete(r);
    free(s);
}

TEST(result_fuzz_does_not_crash)
{
    /* Mutations of a valid result: every outcome is fine except a crash (ASan watches). */
    const char *seed = "{\"a\": [NaN, -Infinity, {\"b\": \"\\u00e9\\\"x\"}], \"c\": 1e5, "
                       "\"d\": \"\xc3\xa9\", \"e\": true}";
    size_t n = strlen(seed);
    char *buf = malloc(n);
    uint32_t rng = 12345;
    int results = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(buf, seed, n);
        int edits = 1 + it % 4;
        for (int e = 0; e < edits; e++) {
            rng = rng * 1664525u + 1013904223u;
            size_t pos = (rng >> 8) % n;
            rng = rng * 1664525u + 1013904223u;
            const char pick[] = "{}[]\",:\\ NaIfiny-0e\x80\xff";
            buf[pos] = (rng >> 24) & 1 ? (char)(rng >> 16) : pick[(rng >> 16) % (sizeof pick - 1)];
        }
        cJSON *r = NULL;
        if (trial_result_parse(buf, n, &r) == 1) {
            results++;
            CHECK(cJSON_IsObject(r));
            cJSON_Delete(r);
        }
    }
    free(buf);
    fprintf(stderr, "fuzz: %d of 20000 mutants were still results\n", results);
}

TEST(result_number_cases)
{
    const char *s = "{\"i\": 3, \"f\": -0.25, \"big\": 1e300, \"t\": true, \"n\": null, "
                    "\"s\": \"1.5\", \"o\": {\"x\": 1}, \"arr\": [1], \"Loss\": 7}";
    cJSON *r = NULL;
    REQUIRE(trial_result_parse(s, strlen(s), &r) == 1);
    CHECK_NEAR(trial_result_number(r, "i"), 3, 0);
    CHECK_NEAR(trial_result_number(r, "f"), -0.25, 0);
    CHECK_NEAR(trial_result_number(r, "big"), 1e300, 0);
    CHECK(isnan(trial_result_number(r, "t")));
    CHECK(isnan(trial_result_number(r, "n")));
    CHECK(isnan(trial_result_number(r, "s")));
    CHECK(isnan(trial_result_number(r, "o")));
    CHECK(isnan(trial_result_number(r, "arr")));
    CHECK(isnan(trial_result_number(r, "missing")));
    CHECK(isnan(trial_result_number(r, "loss"))); /* keys are case-sensitive */
    CHECK_NEAR(trial_result_number(r, "Loss"), 7, 0);
    CHECK(isnan(trial_result_number(r, NULL)));
    CHECK(isnan(trial_result_number(NULL, "i")));
    CHECK(isnan(trial_result_number(cJSON_GetObjectItemCaseSensitive(r, "arr"), "i")));
    cJSON_Delete(r);
}

/* ---- file tails -------------------------------------------------------------------- */

TEST(file_tail_cases)
{
    char dir[64], path[128], buf[16];
    scratch(dir, sizeof dir);
    REQUIRE(dir[0]);
    snprintf(path, sizeof path, "%s/log", dir);
    memset(buf, '#', sizeof buf);
    CHECK_EQ_INT(trial_file_tail(path, buf, sizeof buf), 0); /* missing file */
    CHECK_STR(buf, "");
    CHECK_EQ_INT(trial_file_tail(NULL, buf, sizeof buf), 0);
    CHECK_EQ_INT(trial_file_tail(path, buf, 0), 0);
    spit(path, "", 0644);
    CHECK_EQ_INT(trial_file_tail(path, buf, sizeof buf), 0); /* empty */
    spit(path, "short\n", 0644);
    CHECK_EQ_INT(trial_file_tail(path, buf, sizeof buf), 6); /* fits whole */
    CHECK_STR(buf, "short\n");
    spit(path, "first line\nsecond\nthird\n", 0644);
    /* last 15 bytes: "e\nsecond\nthird\n" -> from "second" */
    CHECK_EQ_INT(trial_file_tail(path, buf, sizeof buf), 13);
    CHECK_STR(buf, "second\nthird\n");
    spit(path, "aaaaaaaaaaaaaaaaaaaaaaaaa\nbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 0644);
    /* no newline in range: the raw last 15 bytes */
    CHECK_EQ_INT(trial_file_tail(path, buf, sizeof buf), 15);
    CHECK_STR(buf, "bbbbbbbbbbbbbbb");
    spit(path, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", 0644);
    /* the only newline is the last byte: keep the partial line rather than nothing */
    CHECK_EQ_INT(trial_file_tail(path, buf, sizeof buf), 15);
    CHECK_STR(buf, "aaaaaaaaaaaaaa\n");
    CHECK_EQ_INT(trial_file_tail(path, buf, 1), 0);
    CHECK_STR(buf, "");
    CHECK_EQ_INT(trial_file_tail(dir, buf, sizeof buf), 0); /* a directory */
    rm_rf(dir);
}

/* ---- throughput (printed, not asserted) ---------------------------------------------- */

struct count {
    long results, lines;
};

static void count_results(void *ud, const char *line, size_t len, int truncated)
{
    struct count *c = ud;
    (void)truncated;
    cJSON *r = NULL;
    c->lines++;
    if (trial_result_parse(line, len, &r) == 1) {
        c->results++;
        cJSON_Delete(r);
    }
}

TEST(throughput_million_result_lines)
{
    char dir[64], log[128];
    scratch(dir, sizeof dir);
    REQUIRE(dir[0]);
    snprintf(log, sizeof log, "%s/stdout.log", dir);
    char err[512] = "";
    trial_exec_t *ex = NULL;
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    char *argv[] = {HELPER, "jsonlines:1000000", NULL};
    trial_spawn_t sp = {.argv = argv, .stdout_log = log};
    struct count c = {0, 0};
    double t0 = e2e_mono();
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    int rc = 0;
    while (rc == 0) {
        struct pollfd pfd = {.fd = trial_fd(p), .events = POLLIN};
        poll(&pfd, 1, 1000);
        rc = trial_read(p, count_results, &c, 0);
    }
    double dt = e2e_mono() - t0;
    CHECK_EQ_INT(rc, 1);
    CHECK_EQ_INT(c.lines, 1000000);
    CHECK_EQ_INT(c.results, 1000000);
    fprintf(stderr, "throughput: %ld result lines in %.2f s = %.0f lines/s (read+log+parse)\n",
            c.results, dt, (double)c.results / dt);
    trial_exit_t x;
    CHECK_EQ_INT(wait_exit(p, &x, 10), 1);
    trial_proc_free(p);
    trial_exec_free(ex);
    rm_rf(dir);
}

/* ---- the fast path: trial_result_scan ------------------------------------------- */

/* Same double, bit for bit (NaN == NaN). */
static int same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

/* The scan's promise: a yes is a yes from trial_result_parse with the same numbers. */
static int scan_agrees(const char *line, size_t len, const char *const *keys, size_t nkeys)
{
    double v[TRIAL_SCAN_MAX_KEYS];
    if (trial_result_scan(line, len, keys, nkeys, v) != 1) return 1;
    cJSON *r = NULL;
    if (trial_result_parse(line, len, &r) != 1) return 0;
    int ok = 1;
    for (size_t i = 0; i < nkeys; i++)
        ok &= same_double(v[i], keys[i] ? trial_result_number(r, keys[i]) : NAN);
    cJSON_Delete(r);
    return ok;
}

TEST(result_scan_reads_top_level_numbers)
{
    const char *keys[4] = {"training_iteration", "loss", "acc", NULL};
    double v[4];
    const char *line = " {\"nested\": {\"loss\": 9, \"training_iteration\": [1, 2]},"
                       " \"training_iteration\": 12, \"s\": \"lo\\\"ss\\n\", \"loss\": 0.25,"
                       " \"acc\": \"high\", \"loss\": 7, \"e\": \"h\xc3\xa9\"}\r";
    REQUIRE(trial_result_scan(line, strlen(line), keys, 4, v) == 1);
    CHECK_NEAR(v[0], 12, 0);
    CHECK_NEAR(v[1], 0.25, 0); /* the first "loss", as cJSON finds it; nested ones never */
    CHECK(isnan(v[2]));        /* a string is no number */
    CHECK(isnan(v[3]));        /* a NULL key reads NaN */
    CHECK(scan_agrees(line, strlen(line), keys, 4));

    /* missing keys, null, booleans, containers and an empty object read NaN */
    const char *l2 = "{\"loss\": null, \"acc\": [0.5], \"x\": true}";
    REQUIRE(trial_result_scan(l2, strlen(l2), keys, 3, v) == 1);
    CHECK(isnan(v[0]) && isnan(v[1]) && isnan(v[2]));
    CHECK(scan_agrees(l2, strlen(l2), keys, 3));
    REQUIRE(trial_result_scan("{ }", 3, keys, 3, v) == 1);
    CHECK(isnan(v[0]));
    /* a key whose first member is no number stays NaN even if a number follows */
    const char *l3 = "{\"loss\": \"n/a\", \"loss\": 1}";
    REQUIRE(trial_result_scan(l3, strlen(l3), keys, 3, v) == 1);
    CHECK(isnan(v[1]));
    CHECK(scan_agrees(l3, strlen(l3), keys, 3));
    /* only the first len bytes count */
    REQUIRE(trial_result_scan("{\"loss\": 3} trailing", 11, keys, 3, v) == 1);
    CHECK_NEAR(v[1], 3, 0);
    /* no keys at all: only the verdict */
    CHECK_EQ_INT(trial_result_scan("{\"a\": 1}", 8, NULL, 0, NULL), 1);
    /* more keys than it reads at once, or no line: refused */
    const char *many[TRIAL_SCAN_MAX_KEYS + 1] = {"a"};
    double mv[TRIAL_SCAN_MAX_KEYS + 1];
    CHECK_EQ_INT(trial_result_scan("{}", 2, many, TRIAL_SCAN_MAX_KEYS + 1, mv), 0);
    CHECK_EQ_INT(trial_result_scan(NULL, 0, keys, 3, v), 0);
}

TEST(result_scan_numbers_are_strtods)
{
    /* Both the fast path (<= 15 digits, exponent within 22) and strtod's cases. */
    const char *nums[] = {"0",
                          "-0",
                          "7",
                          "-12",
                          "0.1",
                          "0.25",
                          "1e22",
                          "1e23",
                          "1E+5",
                          "-1.5e-3",
                          "2.5e-22",
                          "2.5e-23",
                          "123456789012345",
                          "1234567890123456",
                          "9007199254740993",
                          "0.30000000000000004",
                          "0.91623456789012345",
                          "100000000000000000000000",
                          "0.000000000000000000000000001",
                          "2.2250738585072014e-308",
                          "4.9e-324",
                          "1.7976931348623157e308",
                          "1e400",
                          "-1e-400",
                          NULL};
    const char *keys[1] = {"x"};
    for (int i = 0; nums[i]; i++) {
        char line[128];
        int n = snprintf(line, sizeof line, "{\"x\": %s}", nums[i]);
        double v;
        REQUIRE(trial_result_scan(line, (size_t)n, keys, 1, &v) == 1);
        double want = strtod(nums[i], NULL);
        if (!same_double(v, want)) fprintf(stderr, "  %s read as %.17g\n", nums[i], v);
        CHECK(same_double(v, want));
        CHECK(scan_agrees(line, (size_t)n, keys, 1));
    }
}

TEST(result_scan_leaves_the_rest_to_trial_result_parse)
{
    /* Results trial_result_parse takes, but that need rewriting or a closer reading. */
    const char *slow[] = {
        "{\"loss\": NaN}",
        "{\"loss\": Infinity}",
        "{\"a\": [1, -Infinity]}",
        "{\"s\": \"\\u00e9\"}",
        "{\"lo\\u0073s\": 1}",
        "{\"lo\\/ss\": 1}",
        "{\"n\": 01}",
        "{\"n\": 1.}",
        "{\"n\": -.5}",
        "{\"n\": 1234567890123456789012345678901234567890123456789012345678901234}",
        NULL};
    const char *keys[1] = {"loss"};
    double v;
    for (int i = 0; slow[i]; i++) {
        cJSON *r = NULL;
        int parsed = trial_result_parse(slow[i], strlen(slow[i]), &r);
        cJSON_Delete(r);
        int scanned = trial_result_scan(slow[i], strlen(slow[i]), keys, 1, &v);
        if (scanned) fprintf(stderr, "  scanned: %s\n", slow[i]);
        CHECK_EQ_INT(scanned, 0);
        (void)parsed; /* either way: the caller asks trial_result_parse */
    }
    /* deeper than the scan goes, within what trial_result_parse allows */
    char *deep = nested(40, "{\"a\": ", "}", "1");
    CHECK_EQ_INT(is_result(deep), 1);
    CHECK_EQ_INT(trial_result_scan(deep, strlen(deep), keys, 1, &v), 0);
    free(deep);
    char *ok = nested(20, "{\"a\": ", "}", "1");
    CHECK_EQ_INT(trial_result_scan(ok, strlen(ok), keys, 1, &v), 1);
    free(ok);
}

TEST(result_scan_never_takes_what_parse_refuses)
{
    const char *no[] = {"",
                        "   ",
                        "[1, 2, 3]",
                        "\"string\"",
                        "42",
                        "epoch 3: loss 0.5",
                        "{",
                        "}",
                        "{\"a\": 1",
                        "{\"a\": }",
                        "{\"a\" 1}",
                        "{a: 1}",
                        "{'a': 1}",
                        "{\"a\": 1,}",
                        "{\"a\": [1, 2,]}",
                        "{\"a\": \"unterminated}",
                        "{\"a\": \"bad escape \\x\"}",
                        "{\"a\": \"ends in backslash\\",
                        "{\"a\": [1, 2}",
                        "{\"a\": 1}}",
                        "{\"a\": 1} x",
                        "{\"a\": 1}{\"b\": 2}",
                        "{\"a\": nan}",
                        "{\"a\": tru}",
                        "{\"a\": truex}",
                        "{\"a\": 1e}",
                        "{\"a\": 1.5e3.2}",
                        "{\"a\": +1}",
                        "{\"a\": 0x10}",
                        "{\"a\": \"tab\there\"}",
                        "{\"a\": \"bad \xc3\x28 utf8\"}",
                        "{\"a\": \"overlong \xc0\xaf\"}",
                        "{\"a\": \"surrogate \xed\xa0\x80\"}",
                        "{\"a\":\v1}",
                        NULL};
    for (int i = 0; no[i]; i++) {
        int scanned = trial_result_scan(no[i], strlen(no[i]), NULL, 0, NULL);
        if (scanned) fprintf(stderr, "  scanned: %s\n", no[i]);
        CHECK_EQ_INT(scanned, 0);
        CHECK_EQ_INT(is_result(no[i]), 0); /* and the slow path agrees that it is none */
    }
    /* a NUL inside the line, in a string or outside one */
    CHECK_EQ_INT(trial_result_scan("{\"a\": \"x\0y\"}", 12, NULL, 0, NULL), 0);
    CHECK_EQ_INT(trial_result_scan("{\"a\": 1\0}", 9, NULL, 0, NULL), 0);
}

/* ---- the loop's executor: one environment for every executor ---------------------- */

struct ended_seen {
    int ended;
};

static void env_line(void *ud, int64_t no, const char *line, size_t len, int truncated)
{
    (void)ud, (void)no, (void)line, (void)len, (void)truncated;
}

static void env_ended(void *ud, int64_t no, const sched_exit_t *ex)
{
    (void)no, (void)ex;
    ((struct ended_seen *)ud)->ended = 1;
}

static void env_placed(void *ud, int64_t no, const char *id, const char *node)
{
    (void)ud, (void)no, (void)id, (void)node;
}

/* Runs `env` as trial 3 of space sp through tx's loop executor, in dir, and returns what
 * it printed (stdout.log): the trial's whole environment, one variable a line, sorted, less
 * what differs by design (the folder, the spawner's slot, the TUNE_SLURM line the executor
 * reads). NULL when it did not run. */
static char *env_of_trial(trial_exec_t *tx, const space_t *sp, const char *dir)
{
    sched_exec_t *sx = NULL;
    char err[512];
    if (trial_sched_exec_new(tx, sp, &sx, err, sizeof err) != 0) return NULL;
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddNumberToObject(cfg, "lr", 0.5);
    sched_start_t st = {.experiment = "envs",
                        .name = "trial_00003",
                        .trial_no = 3,
                        .attempt = 1,
                        .config = cfg,
                        .dir = dir,
                        .devices = "",
                        .gpus = 0,
                        .cpus = 2,
                        .resume_from = "/ckpt/7"};
    sched_started_t out;
    struct ended_seen seen = {0};
    sched_events_t ev = {.line = env_line, .ended = env_ended, .placed = env_placed};
    int rc = sx->ops->start(sx->self, &st, &out, err, sizeof err);
    if (rc != 0) fprintf(stderr, "start: %s\n", err);
    for (double t0 = e2e_mono(); rc == 0 && !seen.ended && e2e_mono() - t0 < 30;)
        sx->ops->wait(sx->self, 0.2, -1, &ev, &seen, err, sizeof err);
    if (rc == 0) sx->ops->release(sx->self, 3);
    sched_exec_free(sx);
    cJSON_Delete(cfg);
    if (rc != 0 || !seen.ended) return NULL;
    char log[4200], *text = NULL;
    snprintf(log, sizeof log, "%s/stdout.log", dir);
    FILE *f = fopen(log, "r");
    char line[8192], *kept[256];
    size_t n = 0, len = 0;
    while (f && n < 256 && fgets(line, sizeof line, f)) {
        static const char *const skip[] = {
            "TUNE_SLURM ", "TUNE_TRIAL_DIR=", "TUNE_CHECKPOINT_DIR=", "TUNE_SPAWN_SLOT=",
            "PWD=",        "OLDPWD="};
        int drop = 0;
        for (size_t k = 0; k < sizeof skip / sizeof skip[0]; k++)
            drop |= strncmp(line, skip[k], strlen(skip[k])) == 0;
        if (!drop) kept[n++] = strdup(line);
    }
    if (f) fclose(f);
    for (size_t i = 0; i < n; i++) /* sorted: the two executors' orders need not agree */
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(kept[j], kept[i]) < 0) {
                char *t = kept[i];
                kept[i] = kept[j];
                kept[j] = t;
            }
    for (size_t i = 0; i < n; i++)
        len += strlen(kept[i]);
    text = calloc(len + 1, 1);
    for (size_t i = 0; i < n; i++) {
        strcat(text, kept[i]);
        free(kept[i]);
    }
    return text;
}

/* The environment a trial sees is built in one place for every executor (trial/env.c):
 * a local trial and a Slurm trial (a fake srun that runs its task in place, the real
 * tune-slurm-task as the task) of the same start see the same variables, README.md's. */
TEST(local_and_slurm_trials_see_one_environment)
{
    const char *text = "{\"name\": \"envs\", \"metric\": \"loss\", \"mode\": \"min\", "
                       "\"scheduler\": {\"type\": \"asha\", \"max_t\": 8}, "
                       "\"command\": [\"env\", \"TUNE_TEST_LR={lr}\"], "
                       "\"space\": {\"lr\": {\"choice\": [0.5]}}}";
    char base[4096], dl[4200], ds[4200], fake[4200], p[4400], err[512];
    scratch(base, sizeof base);
    REQUIRE(base[0]);
    snprintf(dl, sizeof dl, "%s/local", base);
    snprintf(ds, sizeof ds, "%s/slurm", base);
    snprintf(fake, sizeof fake, "%s/bin", base);
    REQUIRE(mkdir(fake, 0777) == 0);
    /* srun: skip its options, run the task here; scancel and squeue: nothing to do. */
    snprintf(p, sizeof p, "%s/srun", fake);
    write_exec(p, "#!/bin/sh\nwhile [ $# -gt 0 ]; do case \"$1\" in -*) shift;; *) break;; "
                  "esac; done\nexec \"$@\"\n");
    snprintf(p, sizeof p, "%s/scancel", fake);
    write_exec(p, "#!/bin/sh\nexit 0\n");
    snprintf(p, sizeof p, "%s/squeue", fake);
    write_exec(p, "#!/bin/sh\nexit 0\n");
    const char *b = getenv("TUNE_BINARY_DIR");
    char task[4200], srun[4400];
    snprintf(task, sizeof task, "%s/bin/tune-slurm-task", b ? b : ".");
    snprintf(srun, sizeof srun, "%s/srun", fake);

    space_t *sp = NULL;
    REQUIRE(space_parse(text, strlen(text), "space.json", &sp, err, sizeof err) == 0);
    trial_exec_t *lx = NULL, *sx = NULL;
    REQUIRE(trial_exec_local_new(&lx, err, sizeof err) == 0);
    trial_slurm_opts_t so = {.experiment = "envs", .task_program = task, .srun = srun};
    REQUIRE(trial_exec_slurm_new(&so, &sx, err, sizeof err) == 0);
    char *local = env_of_trial(lx, sp, dl), *slurm = env_of_trial(sx, sp, ds);
    REQUIRE(local && slurm);
    CHECK_STR(local, slurm);
    /* What README.md promises, in both. */
    static const char *const want[] = {
        "TUNE_TRIAL_ID=3\n",  "TUNE_EXPERIMENT=envs\n",     "TUNE_CONFIG={\"lr\":0.5}\n",
        "TUNE_NUM_GPUS=0\n",  "OMP_NUM_THREADS=2\n",        "MASTER_ADDR=127.0.0.1\n",
        "MASTER_PORT=",       "TUNE_RESUME_FROM=/ckpt/7\n", "TUNE_MAX_T=8\n",
        "TUNE_TEST_LR=0.5\n", "CUDA_VISIBLE_DEVICES=\n"};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        CHECK_CONTAINS(slurm, want[k]);
    free(local);
    free(slurm);
    trial_exec_free(lx);
    trial_exec_free(sx);
    space_free(sp);
    rm_rf(base);
}

/* The table of executors: a name none has is refused with the names there are. */
TEST(executors_are_chosen_by_name_from_one_table)
{
    char err[512], names[128];
    trial_exec_names(names, sizeof names);
    CHECK_STR(names, "local or slurm");
    CHECK_EQ_INT(trial_exec_known("local"), 1);
    CHECK_EQ_INT(trial_exec_known("slurm"), 1);
    CHECK_EQ_INT(trial_exec_known("k8s"), 0);
    CHECK_EQ_INT(trial_exec_known(NULL), 0);
    trial_exec_t *ex = NULL;
    trial_exec_conf_t c = {.name = "k8s"};
    CHECK_EQ_INT(trial_exec_open(&c, &ex, err, sizeof err), TRIAL_EINVAL);
    CHECK_STR(err, "unknown executor \"k8s\": use local or slurm");
    CHECK(ex == NULL);
    c.name = NULL; /* and no settings to take it from */
    CHECK_EQ_INT(trial_exec_open(&c, &ex, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "no executor name, settings");
    c.name = "local";
    REQUIRE(trial_exec_open(&c, &ex, err, sizeof err) == 0);
    CHECK_STR(trial_exec_name(ex), "local");
    CHECK_EQ_INT(trial_exec_names_trials(ex), 0);
    trial_exec_free(ex);
    /* Without a name, the settings' "executor" says which. */
    const char *text =
        "{\"name\": \"e\", \"metric\": \"loss\", \"command\": [\"true\"], "
        "\"executor\": {\"type\": \"local\"}, \"space\": {\"x\": {\"choice\": [1]}}}";
    space_t *sp = NULL;
    REQUIRE(space_parse(text, strlen(text), "space.json", &sp, err, sizeof err) == 0);
    c = (trial_exec_conf_t){.space = sp};
    REQUIRE(trial_exec_open(&c, &ex, err, sizeof err) == 0);
    CHECK_STR(trial_exec_name(ex), "local");
    trial_exec_free(ex);
    space_free(sp);
}

/* The loop's executor opens what it writes in a trial's folder beneath the folder: a
 * symlink planted there under a log's name is refused, never followed. */
TEST(a_symlinked_log_in_the_trial_folder_is_refused)
{
    const char *text = "{\"name\": \"links\", \"metric\": \"loss\", \"command\": [\"true\"], "
                       "\"space\": {\"x\": {\"choice\": [1]}}}";
    char base[4096], dir[4200], link[4300], target[4300], err[512];
    scratch(base, sizeof base);
    REQUIRE(base[0]);
    snprintf(dir, sizeof dir, "%s/trial_00000", base);
    snprintf(link, sizeof link, "%s/stderr.log", dir);
    snprintf(target, sizeof target, "%s/elsewhere", base);
    REQUIRE(mkdir(dir, 0777) == 0);
    REQUIRE(symlink(target, link) == 0);
    space_t *sp = NULL;
    REQUIRE(space_parse(text, strlen(text), "space.json", &sp, err, sizeof err) == 0);
    trial_exec_t *tx = NULL;
    sched_exec_t *sx = NULL;
    REQUIRE(trial_exec_local_new(&tx, err, sizeof err) == 0);
    REQUIRE(trial_sched_exec_new(tx, sp, &sx, err, sizeof err) == 0);
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddNumberToObject(cfg, "x", 1);
    sched_start_t st = {.experiment = "links",
                        .name = "trial_00000",
                        .attempt = 1,
                        .config = cfg,
                        .dir = dir,
                        .devices = "",
                        .cpus = 1};
    sched_started_t out;
    CHECK_EQ_INT(sx->ops->start(sx->self, &st, &out, err, sizeof err), SCHED_EINVAL);
    CHECK_CONTAINS(err, "cannot open stderr log");
    CHECK_CONTAINS(err, "trial_00000/stderr.log\": Too many levels of symbolic links");
    CHECK(access(target, F_OK) != 0); /* nothing made where the link points */
    cJSON_Delete(cfg);
    sched_exec_free(sx);
    trial_exec_free(tx);
    space_free(sp);
    rm_rf(base);
}

TT_MAIN
