/* test_slurm: the Slurm executor. Unit cases run everywhere: the hostlist rule, the task
 * program tune-slurm-task, and the executor against fake srun/squeue/sinfo/scontrol
 * scripts (its command lines, its TUNE_SLURM line, every check message, the watchdog).
 * End-to-end cases run the real `tune` against a real Slurm (scripts/slurm/up.sh, which
 * scripts/test.sh starts when it runs as root) and skip when there is none.
 * Not for: the local executor (test_trial.c) or scheduling decisions (test_scheduler.c). */
/* Paths here are built from a temporary directory a few dozen bytes long into buffers
 * sized for PATH_MAX; GCC cannot see that bound through the helpers (e2e.h's too,
 * hence before it). */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define E2E_GROUP "slurm" /* under the build tree, which the test cluster's nodes share */
#include "e2e.h"
#include "tinytest.h"
#include "trial/slurm_int.h"
#include "trial/trial.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Runs a shell command line (the tests' own, never a trial's) and returns its stdout. */
static char *sh(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p) return strdup("");
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    size_t k;
    while ((k = fread(s + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (cap - n < 2) s = realloc(s, cap *= 2);
    }
    s[n] = 0;
    pclose(p);
    return s;
}

/* ---- the database ------------------------------------------------------------------ */

/* The rows of a query, one line each, columns separated by '|'. */
static char *db_rows(const char *dir, const char *sql)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/tune.db", dir);
    size_t cap = 4096, n = 0;
    char *s = calloc(1, cap);
    sqlite3 *db = testdb_open(path, 0);
    if (!db) return s;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "db_rows: %s: %s\n", sql, sqlite3_errmsg(db));
    } else {
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const char *v = (const char *)sqlite3_column_text(st, c);
                size_t need = n + (v ? strlen(v) : 4) + 3;
                if (need > cap) s = realloc(s, cap = need * 2);
                n += (size_t)sprintf(s + n, "%s%s", c ? "|" : "", v ? v : "NULL");
            }
            s[n++] = '\n';
            s[n] = 0;
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return s;
}

/* ---- the test cluster ------------------------------------------------------------------ */

static int have_prog(const char *name)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
    return system(cmd) == 0;
}

/* Skips the case unless a Slurm cluster answers at $SLURM_CONF. */
#define NEED_SLURM()                                                                               \
    do {                                                                                           \
        e2e_paths();                                                                               \
        if (geteuid() != 0)                                                                        \
            SKIP("the Slurm tests run as root (scripts/test.sh starts the cluster)");              \
        if (!have_prog("srun")) SKIP("Slurm is not installed (apt-get install slurm-client)");     \
        const char *conf_ = getenv("SLURM_CONF");                                                  \
        if (!conf_ || access(conf_, R_OK) != 0)                                                    \
            SKIP("SLURM_CONF is not set: eval \"$(scripts/slurm/up.sh)\" first");                  \
        if (system("timeout 15 sinfo -h >/dev/null 2>&1") != 0)                                    \
            SKIP("the Slurm cluster at SLURM_CONF does not answer");                               \
    } while (0)

/* Jobs and steps of an experiment Slurm still lists. */
static int slurm_left(const char *exp)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "{ squeue -h -o '%%j'; squeue -h -s -o '%%j'; } 2>/dev/null | grep -c '^tune:%s:'",
             exp);
    char *s = sh(cmd);
    int n = atoi(s);
    free(s);
    return n;
}

static int wait_slurm_clear(const char *exp, double timeout_s)
{
    double t0 = e2e_mono();
    int n;
    while ((n = slurm_left(exp)) > 0 && e2e_mono() - t0 < timeout_s)
        e2e_nap_ms(200);
    return n;
}

/* ---- unit: the hostlist rule ----------------------------------------------------------- */

TEST(first_host_of_hostlists)
{
    static const char *const ok[][2] = {{"ci[1-2]", "ci1"},
                                        {"node[07-09,12],gpu3", "node07"},
                                        {"a,b", "a"},
                                        {"vm", "vm"},
                                        {"r[1-2]n[3-4]", "r1n3"},
                                        {"n[4,1-2]-ib", "n4-ib"},
                                        {"gpu-a100-[010-012]", "gpu-a100-010"}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char out[64];
        CHECK_EQ_INT(trial__slurm_first_host(ok[i][0], out, sizeof out), 0);
        CHECK_STR(out, ok[i][1]);
    }
    static const char *const bad[] = {"", "ci[1-2", "ci]", "x[a-b]", "x[[1]]", "a b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[64];
        CHECK_EQ_INT(trial__slurm_first_host(bad[i], out, sizeof out), -1);
    }
    char small[4];
    CHECK_EQ_INT(trial__slurm_first_host("node1", small, sizeof small), -1);
}

/* ---- unit: tune-slurm-task -------------------------------------------------------------- */

static int run_exact(char *const *argv, char *const *env, const char *cwd, char **out, char **err)
{
    char op[] = "/tmp/tune-slurm-test-out.XXXXXX", ep[] = "/tmp/tune-slurm-test-err.XXXXXX";
    int fo = mkstemp(op), fe = mkstemp(ep);
    pid_t pid = fork();
    if (pid == 0) {
        if (cwd && chdir(cwd) != 0) _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        execve(argv[0], argv, env);
        _exit(125);
    }
    int st;
    waitpid(pid, &st, 0);
    close(fo);
    close(fe);
    *out = slurp(op);
    *err = slurp(ep);
    unlink(op);
    unlink(ep);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(task_program_reports_rank0_and_sets_rank_variables)
{
    e2e_paths();
    char dir[4300];
    fresh_dir(dir, sizeof dir, "task");
    char *argv[] = {g_slurm_task, g_slurm_rank, "--iters", "1", NULL};
    /* An scontrol that knows no node: MASTER_ADDR stays the node's name whether or not
     * "ci1" resolves here. */
    char path[4400], sc[4400];
    snprintf(sc, sizeof sc, "%s/scontrol", dir);
    write_exec(sc, "#!/bin/sh\necho 'Node ci1 not found' >&2\nexit 1\n");
    snprintf(path, sizeof path, "PATH=%s:/usr/bin:/bin", dir);
    char *env0[] = {"SLURM_PROCID=0",
                    "SLURM_NTASKS=2",
                    "SLURM_LOCALID=0",
                    "SLURM_NODEID=0",
                    "SLURM_JOB_ID=42",
                    "SLURM_STEP_ID=3",
                    "SLURMD_NODENAME=ci1",
                    "SLURM_STEP_NODELIST=ci[1-2]",
                    "CUDA_VISIBLE_DEVICES=1",
                    "MASTER_ADDR=127.0.0.1",
                    path,
                    NULL};
    char *out, *err;
    CHECK_EQ_INT(run_exact(argv, env0, dir, &out, &err), 0);
    CHECK_CONTAINS(out, "TUNE_SLURM {\"job\": \"42\", \"step\": \"3\", \"node\": \"ci1\", "
                        "\"nodes\": \"ci[1-2]\", \"gpus\": \"1\"}\n{");
    CHECK_CONTAINS(out, "\"master\": \"ci1\"");
    CHECK_CONTAINS(out, "\"RANK\": \"0\", \"WORLD_SIZE\": \"2\", \"LOCAL_RANK\": \"0\"");
    free(out);
    free(err);
    /* Rank 1: nothing on stdout (no tag, no results); its lines go to rank1.stdout.log. */
    char *env1[] = {"SLURM_PROCID=1",
                    "SLURM_NTASKS=2",
                    "SLURM_LOCALID=0",
                    "SLURM_NODEID=1",
                    "SLURM_JOB_ID=42",
                    "SLURM_STEP_ID=3",
                    "SLURMD_NODENAME=ci2",
                    "SLURM_JOB_NODELIST=ci[1-2]",
                    path,
                    NULL};
    CHECK_EQ_INT(run_exact(argv, env1, dir, &out, &err), 0);
    CHECK_STR(out, "");
    free(out);
    free(err);
    char p[4400];
    snprintf(p, sizeof p, "%s/rank1.stdout.log", dir);
    char *log = slurp(p);
    CHECK_CONTAINS(log, "\"rank\": \"1\"");
    CHECK_CONTAINS(log, "\"master\": \"ci1\", \"RANK\": \"1\"");
    free(log);
    /* A program that cannot run: a clear message and 127; and never /bin/sh for a file
     * without #! (execvp would hand it to a shell). */
    char *bad[] = {g_slurm_task, "/nonexistent/prog", NULL};
    CHECK_EQ_INT(run_exact(bad, env0, dir, &out, &err), 127);
    CHECK_CONTAINS(err, "tune-slurm-task: cannot run \"/nonexistent/prog\": No such file");
    free(out);
    free(err);
    snprintf(p, sizeof p, "%s/noshebang", dir);
    write_exec(p, "echo ran by a shell\n");
    char *ns[] = {g_slurm_task, "noshebang", NULL};
    char *envp[] = {"SLURM_PROCID=0", "PATH=.", NULL};
    CHECK_EQ_INT(run_exact(ns, envp, dir, &out, &err), 127);
    CHECK(strstr(out, "ran by a shell") == NULL);
    CHECK_CONTAINS(err, "Exec format error");
    free(out);
    free(err);
    char *none[] = {g_slurm_task, NULL};
    CHECK_EQ_INT(run_exact(none, envp, dir, &out, &err), 2);
    CHECK_CONTAINS(err, "usage: tune-slurm-task");
    free(out);
    free(err);
}

TEST(task_program_master_addr_is_an_address)
{
    e2e_paths();
    char dir[4300], path[4400], sc[4400], called[4400];
    fresh_dir(dir, sizeof dir, "task_addr");
    /* Slurm's NodeName need not resolve (.invalid never does, RFC 6761): then MASTER_ADDR
     * is the NodeAddr Slurm has for the node; the fake scontrol checks how it is asked. */
    snprintf(sc, sizeof sc, "%s/scontrol", dir);
    snprintf(called, sizeof called, "%s/scontrol.called", dir);
    char body[8192];
    snprintf(body, sizeof body,
             "#!/bin/sh\n"
             "echo \"$*\" >> %s\n"
             "[ \"$*\" = '-o show node n1.invalid' ] || exit 1\n"
             "echo 'NodeName=n1.invalid Arch=x86_64 NodeAddr=10.9.8.7 NodeHostName=h1 Port=0'\n",
             called);
    write_exec(sc, body);
    snprintf(path, sizeof path, "PATH=%s:/usr/bin:/bin", dir);
    char *argv[] = {g_slurm_task, g_slurm_rank, "--iters", "1", NULL};
    char *env[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_STEP_NODELIST=n[1-2].invalid", path,
                   NULL};
    char *out, *err;
    CHECK_EQ_INT(run_exact(argv, env, dir, &out, &err), 0);
    CHECK_CONTAINS(out, "\"master\": \"10.9.8.7\"");
    free(out);
    free(err);
    char *c = slurp(called);
    CHECK_STR(c, "-o show node n1.invalid\n");
    free(c);
    /* Slurm does not know the node either: the name is all there is. */
    char *env2[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_STEP_NODELIST=m7.invalid", path,
                    NULL};
    CHECK_EQ_INT(run_exact(argv, env2, dir, &out, &err), 0);
    CHECK_CONTAINS(out, "\"master\": \"m7.invalid\"");
    free(out);
    free(err);
    /* A name that resolves is kept, and Slurm is not asked. */
    unlink(called);
    char *env3[] = {"SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_STEP_NODELIST=localhost", path,
                    NULL};
    CHECK_EQ_INT(run_exact(argv, env3, dir, &out, &err), 0);
    CHECK_CONTAINS(out, "\"master\": \"localhost\"");
    CHECK_EQ_INT(access(called, F_OK), -1);
    free(out);
    free(err);
}

/* ---- unit: the executor against fake Slurm commands ------------------------------------ */

/* A directory of fake Slurm commands: srun prints its arguments and a few variables as the
 * "task" would see them; the others print what the case asks. */
static void fake_slurm(char *dir, size_t n, const char *name, const char *sinfo, const char *squeue,
                       const char *scontrol)
{
    fresh_dir(dir, n, name);
    char p[4400], body[8192];
    snprintf(p, sizeof p, "%s/srun", dir);
    write_exec(p, "#!/bin/sh\n"
                  "[ -n \"$FAKE_SRUN_PRE\" ] && printf '%s\\n' \"$FAKE_SRUN_PRE\"\n"
                  "for a in \"$@\"; do echo \"ARG $a\"; done\n"
                  "echo \"CVD ${CUDA_VISIBLE_DEVICES-unset}\"\n"
                  "echo \"SG ${SLURM_GPUS-unset}\"\n"
                  "[ -n \"$FAKE_SRUN_SLEEP\" ] && exec sleep \"$FAKE_SRUN_SLEEP\"\n"
                  "exit 0\n");
    snprintf(p, sizeof p, "%s/scancel", dir);
    snprintf(body, sizeof body, "#!/bin/sh\necho \"scancel $*\" >> %s/scancel.log\n", dir);
    write_exec(p, body);
    snprintf(p, sizeof p, "%s/squeue", dir);
    write_exec(p, squeue ? squeue : "#!/bin/sh\nexit 0\n");
    snprintf(p, sizeof p, "%s/sinfo", dir);
    write_exec(p, sinfo ? sinfo : "#!/bin/sh\nexit 0\n");
    snprintf(p, sizeof p, "%s/scontrol", dir);
    write_exec(p, scontrol ? scontrol : "#!/bin/sh\nexit 0\n");
}

static int new_fake_exec(const char *dir, const char *alloc, char *const *args, double wd,
                         trial_exec_t **ex, char *err, size_t errlen)
{
    char srun[4400];
    snprintf(srun, sizeof srun, "%s/srun", dir);
    trial_slurm_opts_t o = {.experiment = "exp",
                            .srun_args = args,
                            .allocation = alloc,
                            .task_program = g_slurm_task,
                            .srun = srun,
                            .watchdog_s = wd};
    return trial_exec_slurm_new(&o, ex, err, errlen);
}

struct lines {
    char buf[16384];
    size_t n;
    int count;
};

static void on_line(void *ud, const char *line, size_t len, int truncated)
{
    (void)truncated;
    struct lines *L = ud;
    if (L->n + len + 2 < sizeof L->buf) {
        memcpy(L->buf + L->n, line, len);
        L->n += len;
        L->buf[L->n++] = '\n';
        L->buf[L->n] = 0;
    }
    L->count++;
}

/* Starts one trial through ex and reads it to its end. */
static int run_fake(trial_exec_t *ex, const char *dir, int ranks, double gpus, int cpus,
                    struct lines *L, trial_proc_t **keep)
{
    char *argv[] = {"prog", "--lr", "0.1; rm -rf /", NULL};
    char *env[] = {"CUDA_VISIBLE_DEVICES=7", "TUNE_TRIAL_ID=1", NULL};
    char errlog[4400];
    snprintf(errlog, sizeof errlog, "%s/stderr.log", dir);
    trial_spawn_t sp = {
        .argv = argv,
        .env = env,
        .dir = dir,
        .stderr_log = errlog,
        .slice = {.name = "trial_00001", .ranks = ranks, .gpus = gpus, .cpus = cpus}};
    char err[512];
    trial_proc_t *p = NULL;
    int rc = trial_start(ex, &sp, &p, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "trial_start: %s\n", err);
        return rc;
    }
    memset(L, 0, sizeof *L);
    double t0 = e2e_mono();
    while (e2e_mono() - t0 < 20) {
        struct pollfd pf = {.fd = trial_fd(p), .events = POLLIN};
        if (pf.fd < 0) break;
        poll(&pf, 1, 100);
        if (trial_read(p, on_line, L, 0) == 1) break;
    }
    trial_exit_t x;
    while (trial_poll_exit(p, &x) == 0 && e2e_mono() - t0 < 20)
        e2e_nap_ms(5);
    if (keep)
        *keep = p;
    else
        trial_proc_free(p);
    return 0;
}

TEST(srun_command_line)
{
    e2e_paths();
    char dir[4300], err[512];
    fake_slurm(dir, sizeof dir, "fake_cmdline", NULL, NULL, NULL);
    trial_exec_t *ex = NULL;
    char *args[] = {"--partition=gpu", "--time=10", NULL};
    REQUIRE(new_fake_exec(dir, NULL, args, 0, &ex, err, sizeof err) == 0);
    CHECK_STR(trial_exec_name(ex), "slurm");
    struct lines L;
    setenv("SLURM_GPUS", "3", 1); /* as an allocation's shell would have it */
    REQUIRE(run_fake(ex, dir, 1, 2, 3, &L, NULL) == 0);
    unsetenv("SLURM_GPUS");
    CHECK_CONTAINS(L.buf, "ARG --job-name=tune:exp:trial_00001\nARG --ntasks=1\n"
                          "ARG --cpus-per-task=3\nARG --gpus=2\nARG --kill-on-bad-exit=1\n"
                          "ARG --unbuffered\nARG --partition=gpu\nARG --time=10\n");
    char want[4500];
    snprintf(want, sizeof want, "ARG %s\nARG prog\nARG --lr\nARG 0.1; rm -rf /\n", g_slurm_task);
    CHECK_CONTAINS(L.buf, want);
    /* Slurm sets the GPU list; neither the pool's nor an allocation's request leaks in. */
    CHECK_CONTAINS(L.buf, "CVD unset\nSG unset\n");
    /* Two ranks and two GPUs: one GPU per rank. */
    REQUIRE(run_fake(ex, dir, 2, 2, 1, &L, NULL) == 0);
    CHECK_CONTAINS(L.buf, "ARG --ntasks=2\nARG --cpus-per-task=1\nARG --gpus-per-task=1\n");
    /* A CPU trial keeps the pool's (empty) list, so it sees no GPU. */
    REQUIRE(run_fake(ex, dir, 1, 0, 1, &L, NULL) == 0);
    CHECK_CONTAINS(L.buf, "CVD 7\n");
    CHECK(strstr(L.buf, "--gpus") == NULL);
    /* A fraction of a GPU cannot be asked of Slurm. */
    char *argv[] = {"prog", NULL};
    trial_spawn_t sp = {.argv = argv, .dir = dir, .slice.gpus = 0.5};
    trial_proc_t *p = NULL;
    CHECK_EQ_INT(trial_start(ex, &sp, &p, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "Slurm hands out whole GPUs: a trial cannot ask for 0.5");
    trial_exec_free(ex);

    /* The user's own layout and GPU options replace tune's; allocation mode adds steps. */
    char *args2[] = {"-n", "4", "--gpus-per-node=2", "-c2", NULL};
    REQUIRE(new_fake_exec(dir, "77", args2, 0, &ex, err, sizeof err) == 0);
    REQUIRE(run_fake(ex, dir, 1, 2, 1, &L, NULL) == 0);
    CHECK(strstr(L.buf, "--ntasks=") == NULL);
    CHECK(strstr(L.buf, "--cpus-per-task") == NULL);
    CHECK(strstr(L.buf, "ARG --gpus=") == NULL);
    CHECK_CONTAINS(L.buf, "ARG --jobid=77\nARG --exact\nARG --mem=0\nARG -n\nARG 4\n"
                          "ARG --gpus-per-node=2\nARG -c2\n");
    trial_exec_free(ex);
}

TEST(tune_slurm_line_is_consumed_and_signals_become_scancel)
{
    e2e_paths();
    char dir[4300], err[512];
    fake_slurm(dir, sizeof dir, "fake_tag", NULL, NULL, NULL);
    trial_exec_t *ex = NULL;
    REQUIRE(new_fake_exec(dir, NULL, NULL, 0, &ex, err, sizeof err) == 0);
    setenv("FAKE_SRUN_PRE",
           "TUNE_SLURM {\"job\": \"123\", \"step\": \"0\", \"node\": \"ci1\", \"nodes\": "
           "\"ci[1-2]\", \"gpus\": \"0,1\"}",
           1);
    setenv("FAKE_SRUN_SLEEP", "30", 1);
    struct lines L;
    memset(&L, 0, sizeof L);
    char *argv[] = {"prog", NULL};
    char errlog[4400];
    snprintf(errlog, sizeof errlog, "%s/stderr.log", dir);
    trial_spawn_t sp = {
        .argv = argv, .dir = dir, .stderr_log = errlog, .slice.name = "trial_00002"};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    unsetenv("FAKE_SRUN_PRE");
    unsetenv("FAKE_SRUN_SLEEP");
    CHECK_STR(trial_exec_id(p), "");
    double t0 = e2e_mono();
    while (!strstr(L.buf, "SG ") && e2e_mono() - t0 < 10) {
        struct pollfd pf = {.fd = trial_fd(p), .events = POLLIN};
        poll(&pf, 1, 100);
        trial_read(p, on_line, &L, 0);
    }
    /* The first line told the executor where the trial runs; the caller never saw it. */
    CHECK_STR(trial_exec_id(p), "123");
    CHECK_STR(trial_node(p), "ci[1-2]");
    CHECK(strstr(L.buf, "TUNE_SLURM") == NULL);
    CHECK_CONTAINS(L.buf, "ARG --job-name=tune:exp:trial_00002\n");
    /* SIGTERM: scancel --signal=15 to the job, srun itself untouched. */
    CHECK_EQ_INT(trial_signal(p, SIGTERM), 0);
    char log[4400];
    snprintf(log, sizeof log, "%s/scancel.log", dir);
    char *s = NULL;
    for (t0 = e2e_mono(); e2e_mono() - t0 < 5; e2e_nap_ms(20)) {
        free(s);
        s = slurp(log);
        if (*s) break;
    }
    CHECK_STR(s, "scancel --signal=15 123\n");
    free(s);
    trial_exit_t x;
    CHECK_EQ_INT(trial_poll_exit(p, &x), 0);
    /* SIGKILL: the job is cancelled and srun killed at once. */
    CHECK_EQ_INT(trial_signal(p, SIGKILL), 0);
    t0 = e2e_mono();
    while (trial_poll_exit(p, &x) == 0 && e2e_mono() - t0 < 5)
        e2e_nap_ms(5);
    CHECK_EQ_INT(x.signal, SIGKILL);
    for (t0 = e2e_mono(); e2e_mono() - t0 < 5; e2e_nap_ms(20)) {
        s = slurp(log);
        if (strstr(s, "scancel 123\n")) break;
        free(s);
        s = NULL;
    }
    CHECK_CONTAINS(s ? s : "", "scancel --signal=15 123\nscancel 123\n");
    free(s);
    trial_proc_free(p);

    /* A TUNE_SLURM line that is not the first line is the trial's, not the executor's. */
    setenv("FAKE_SRUN_PRE", "hello\nTUNE_SLURM {\"job\": \"9\"}", 1);
    REQUIRE(run_fake(ex, dir, 1, 0, 1, &L, &p) == 0);
    unsetenv("FAKE_SRUN_PRE");
    CHECK_CONTAINS(L.buf, "hello\nTUNE_SLURM {\"job\": \"9\"}\n");
    CHECK_STR(trial_exec_id(p), "");
    trial_proc_free(p);
    trial_exec_free(ex);
}

TEST(steps_are_cancelled_as_steps_and_pending_jobs_by_name)
{
    e2e_paths();
    char dir[4300], err[512];
    fake_slurm(dir, sizeof dir, "fake_steps", NULL, NULL, NULL);
    trial_exec_t *ex = NULL;
    REQUIRE(new_fake_exec(dir, "55", NULL, 0, &ex, err, sizeof err) == 0);
    setenv("FAKE_SRUN_PRE", "TUNE_SLURM {\"job\": \"55\", \"step\": \"4\", \"node\": \"ci1\"}", 1);
    setenv("FAKE_SRUN_SLEEP", "30", 1);
    struct lines L;
    memset(&L, 0, sizeof L);
    char *argv[] = {"prog", NULL};
    trial_spawn_t sp = {.argv = argv, .dir = dir, .slice.name = "trial_00003"};
    trial_proc_t *p = NULL;
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    unsetenv("FAKE_SRUN_PRE");
    for (double t0 = e2e_mono(); !*trial_exec_id(p) && e2e_mono() - t0 < 10;) {
        struct pollfd pf = {.fd = trial_fd(p), .events = POLLIN};
        poll(&pf, 1, 100);
        trial_read(p, on_line, &L, 0);
    }
    CHECK_STR(trial_exec_id(p), "55.4");
    CHECK_STR(trial_node(p), "ci1");
    trial_signal(p, SIGTERM);
    trial_signal(p, SIGKILL);
    trial_proc_free(p);
    trial_exec_free(ex);

    /* Per-trial mode, killed before srun said anything: cancelled by its job name. */
    REQUIRE(new_fake_exec(dir, NULL, NULL, 0, &ex, err, sizeof err) == 0);
    sp.slice.name = "trial_00004";
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    unsetenv("FAKE_SRUN_SLEEP");
    trial_signal(p, SIGKILL);
    trial_proc_free(p);
    trial_exec_free(ex);
    char log[4400];
    snprintf(log, sizeof log, "%s/scancel.log", dir);
    char *s = NULL;
    for (double t0 = e2e_mono(); e2e_mono() - t0 < 5; e2e_nap_ms(20)) {
        free(s);
        s = slurp(log);
        if (strstr(s, "--name")) break;
    }
    /* Each scancel runs detached (slurm_signal never blocks), so the SIGTERM's and the
     * SIGKILL's may reach the log in either order on a loaded machine. */
    CHECK_CONTAINS(s, "scancel --signal=15 55.4\n");
    CHECK_CONTAINS(s, "scancel 55.4\n");
    CHECK_CONTAINS(s, "scancel --name=tune:exp:trial_00004\n");
    free(s);
}

TEST(executor_creation_errors)
{
    e2e_paths();
    char dir[4300], err[512];
    trial_exec_t *ex = NULL;
    trial_slurm_opts_t o = {.experiment = "exp", .srun = "/nonexistent/srun"};
    CHECK_EQ_INT(trial_exec_slurm_new(&o, &ex, err, sizeof err), TRIAL_ERR);
    CHECK_CONTAINS(err, "cannot find /nonexistent/srun: the slurm executor needs Slurm's client");
    fake_slurm(dir, sizeof dir, "fake_errors", NULL, NULL, NULL);
    CHECK_EQ_INT(new_fake_exec(dir, "12a", NULL, 0, &ex, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "allocation \"12a\" is not a Slurm job id");
    char srun[4400], p[4400];
    snprintf(srun, sizeof srun, "%s/srun", dir);
    o.srun = srun;
    o.task_program = "/nonexistent/tune-slurm-task";
    CHECK_EQ_INT(trial_exec_slurm_new(&o, &ex, err, sizeof err), TRIAL_ERR);
    CHECK_CONTAINS(err, "cannot find /nonexistent/tune-slurm-task (built beside tune");
    o.experiment = "";
    CHECK_EQ_INT(trial_exec_slurm_new(&o, &ex, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "no options, result or experiment name");
    snprintf(p, sizeof p, "%s/scancel", dir);
    unlink(p);
    o.experiment = "exp";
    o.task_program = g_slurm_task;
    CHECK_EQ_INT(trial_exec_slurm_new(&o, &ex, err, sizeof err), TRIAL_ERR);
    CHECK_CONTAINS(err, "but not scancel and squeue beside it");

    /* The local executor has nothing to check, no limits and nothing left behind. */
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    trial_capacity_t cap = {.known = 9};
    CHECK_EQ_INT(trial_exec_check(ex, 1, 3, 1, &cap, err, sizeof err), 0);
    CHECK_EQ_INT(cap.known, 0);
    CHECK_EQ_INT(trial_exec_cleanup(ex, "exp", err, sizeof err), 0);
    char *argv[] = {"/bin/sleep", "5", NULL};
    trial_spawn_t sp = {.argv = argv, .dir = "/"};
    trial_proc_t *pr = NULL;
    REQUIRE(trial_start(ex, &sp, &pr, err, sizeof err) == 0);
    char why[128] = "x";
    CHECK_EQ_INT(trial_health(pr, e2e_mono() + 1e6, why, sizeof why), 0);
    CHECK_STR(why, "");
    trial_proc_free(pr);
    trial_exec_free(ex);
}

static const char *sinfo_ok = "#!/bin/sh\n"
                              "echo 'debug*|up|8|gpu:4|1'\n"
                              "echo 'multi|up|8|gpu:a100:2(S:0-1),gpu:v100:2|2'\n"
                              "echo 'cpuonly|up|64|(null)|3'\n"
                              "echo 'old|down|8|gpu:4|1'\n";

static int check_with(const char *dir, char *const *args, const char *alloc, int ranks, double gpus,
                      int cpus, trial_capacity_t *cap, char *err, size_t n)
{
    trial_exec_t *ex = NULL;
    if (new_fake_exec(dir, alloc, args, 0, &ex, err, n) != 0) return -100;
    int rc = trial_exec_check(ex, ranks, gpus, cpus, cap, err, n);
    trial_exec_free(ex);
    return rc;
}

TEST(impossible_requests_are_refused_before_running)
{
    e2e_paths();
    char dir[4300], err[512];
    trial_capacity_t cap;
    fake_slurm(dir, sizeof dir, "fake_check", sinfo_ok, NULL,
               "#!/bin/sh\n"
               "case \"$5\" in\n"
               "7) echo 'JobId=7 JobName=a JobState=RUNNING NumNodes=1 NumCPUs=4 JOB_GRES=gpu:2 "
               "Nodes=ci1 GRES=gpu:2(IDX:0-1)';;\n"
               "8) echo 'JobId=8 JobState=PENDING NumCPUs=4 JOB_GRES=(null)';;\n"
               "*) echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1;;\n"
               "esac\n");
    /* What fits. */
    CHECK_EQ_INT(check_with(dir, NULL, NULL, 1, 4, 8, &cap, err, sizeof err), 0);
    CHECK_EQ_INT(cap.known, 1);
    CHECK_EQ_INT(cap.gpus, -1);
    CHECK_EQ_INT(cap.cpus, -1);
    char *multi[] = {"-p", "multi", NULL};
    CHECK_EQ_INT(check_with(dir, multi, NULL, 1, 4, 1, &cap, err, sizeof err), 0);
    CHECK_EQ_INT(check_with(dir, multi, NULL, 2, 8, 1, &cap, err, sizeof err), 0);
    /* What does not. */
    CHECK_EQ_INT(check_with(dir, NULL, NULL, 1, 5, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "a trial asks for 5 GPU(s) but the largest node of partition debug has 4");
    CHECK_EQ_INT(check_with(dir, multi, NULL, 2, 10, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "a trial asks for 5 GPU(s) per rank but the largest node of partition "
                        "multi has 4");
    char *nope[] = {"--partition=debug,nope", NULL};
    CHECK_EQ_INT(check_with(dir, nope, NULL, 1, 0, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "Slurm has no partition \"nope\" (partitions: debug, multi, cpuonly, old)");
    char *cpuonly[] = {"-pcpuonly", NULL};
    CHECK_EQ_INT(check_with(dir, cpuonly, NULL, 1, 1, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "a trial asks for 1 GPU(s) but partition cpuonly has no GPUs");
    CHECK_EQ_INT(check_with(dir, NULL, NULL, 1, 0, 9, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "a trial asks for 9 CPUs per process but the largest node of partition "
                        "debug has 8");
    char *old[] = {"--partition", "old", NULL};
    CHECK_EQ_INT(check_with(dir, old, NULL, 1, 0, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "Slurm partition old is down: its jobs would never start");
    CHECK_EQ_INT(check_with(dir, NULL, NULL, 1, 0.25, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "Slurm hands out whole GPUs: gpus_per_trial 0.25 cannot be asked for");
    /* Allocations. */
    CHECK_EQ_INT(check_with(dir, NULL, "7", 1, 1, 1, &cap, err, sizeof err), 0);
    CHECK_EQ_INT(cap.known, 1);
    CHECK_EQ_INT(cap.gpus, 2);
    CHECK_EQ_INT(cap.cpus, 4);
    CHECK_EQ_INT(check_with(dir, NULL, "7", 1, 3, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "a trial asks for 3 GPU(s) but allocation 7 has 2");
    CHECK_EQ_INT(check_with(dir, NULL, "7", 1, 0, 5, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "a trial asks for 5 CPU(s) but allocation 7 has 4");
    CHECK_EQ_INT(check_with(dir, NULL, "8", 1, 0, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "allocation 8 is PENDING, not RUNNING");
    CHECK_EQ_INT(check_with(dir, NULL, "9", 1, 0, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "allocation 9: scontrol: slurm_load_jobs error: Invalid job id specified");

    /* No default partition, and a controller that does not answer. */
    char d2[4300];
    fake_slurm(d2, sizeof d2, "fake_check2", "#!/bin/sh\necho 'a|up|8|(null)|1'\n", NULL, NULL);
    CHECK_EQ_INT(check_with(d2, NULL, NULL, 1, 0, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "Slurm has no default partition: name one in executor.srun_args");
    fake_slurm(d2, sizeof d2, "fake_check3",
               "#!/bin/sh\necho 'slurm_load_partitions: Unable to contact slurm controller "
               "(connect failure)' >&2\nexit 1\n",
               NULL, NULL);
    CHECK_EQ_INT(check_with(d2, NULL, NULL, 1, 0, 1, &cap, err, sizeof err), TRIAL_EINVAL);
    CHECK_CONTAINS(err, "cannot ask Slurm about its partitions: sinfo: slurm_load_partitions: "
                        "Unable to contact slurm controller (connect failure)");
}

/* Calls trial_health every 100 ms until it condemns the trial (1) or `for_s` passes (0). */
static int health_within(trial_proc_t *p, double for_s, char *why, size_t n)
{
    for (double t0 = e2e_mono(); e2e_mono() - t0 < for_s; e2e_nap_ms(100))
        if (trial_health(p, e2e_mono(), why, n) == 1) return 1;
    return 0;
}

TEST(watchdog_condemns_a_silent_srun_slurm_does_not_know)
{
    e2e_paths();
    char dir[4300], err[512], why[512];
    char *argv[] = {"prog", NULL};
    trial_spawn_t sp = {.argv = argv, .slice.name = "trial_00005"};
    trial_exec_t *ex = NULL;
    trial_proc_t *p = NULL;

    /* squeue lists the job: a silent trial is fine however long it takes. */
    fake_slurm(dir, sizeof dir, "fake_wd_known", NULL,
               "#!/bin/sh\necho '12|other'\necho '13|tune:exp:trial_00005'\n", NULL);
    sp.dir = dir;
    REQUIRE(new_fake_exec(dir, NULL, NULL, 1.0, &ex, err, sizeof err) == 0);
    setenv("FAKE_SRUN_SLEEP", "30", 1);
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    CHECK_EQ_INT(health_within(p, 3.0, why, sizeof why), 0);
    trial_proc_free(p);
    trial_exec_free(ex);

    /* squeue lists nothing of it: condemned, with the reason. */
    fake_slurm(dir, sizeof dir, "fake_wd_unknown", NULL, "#!/bin/sh\necho '12|other'\n", NULL);
    REQUIRE(new_fake_exec(dir, NULL, NULL, 1.0, &ex, err, sizeof err) == 0);
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    double t0 = e2e_mono();
    CHECK_EQ_INT(health_within(p, 8.0, why, sizeof why), 1);
    CHECK(e2e_mono() - t0 >= 1.0);
    CHECK_CONTAINS(why, "srun made no progress for ");
    CHECK_CONTAINS(why, " s and Slurm has no job named tune:exp:trial_00005");
    trial_proc_free(p);
    trial_exec_free(ex);

    /* The controller does not answer (squeue fails, or hangs). */
    fake_slurm(dir, sizeof dir, "fake_wd_dead", NULL,
               "#!/bin/sh\necho 'slurm_load_jobs error: Unable to contact slurm controller "
               "(connect failure)'\nexit 1\n",
               NULL);
    REQUIRE(new_fake_exec(dir, NULL, NULL, 1.0, &ex, err, sizeof err) == 0);
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    CHECK_EQ_INT(health_within(p, 8.0, why, sizeof why), 1);
    CHECK_CONTAINS(why, "the Slurm controller does not answer (squeue: slurm_load_jobs error: "
                        "Unable to contact slurm controller (connect failure))");
    trial_proc_free(p);
    trial_exec_free(ex);
    fake_slurm(dir, sizeof dir, "fake_wd_hang", NULL, "#!/bin/sh\nexec sleep 60\n", NULL);
    REQUIRE(new_fake_exec(dir, NULL, NULL, 2.0, &ex, err, sizeof err) == 0);
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    CHECK_EQ_INT(health_within(p, 12.0, why, sizeof why), 1);
    CHECK_CONTAINS(why, "the Slurm controller does not answer (squeue did not answer within 1 s)");
    trial_proc_free(p);
    trial_exec_free(ex);

    /* Output is progress: a chatty srun is never condemned, whatever squeue says. */
    fake_slurm(dir, sizeof dir, "fake_wd_chatty", NULL, "#!/bin/sh\nexit 0\n", NULL);
    char srun[4400];
    snprintf(srun, sizeof srun, "%s/srun", dir);
    write_exec(srun, "#!/bin/sh\nwhile :; do echo tick; sleep 0.2; done\n");
    REQUIRE(new_fake_exec(dir, NULL, NULL, 1.0, &ex, err, sizeof err) == 0);
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    struct lines L;
    memset(&L, 0, sizeof L);
    int condemned = 0;
    for (t0 = e2e_mono(); e2e_mono() - t0 < 4 && !condemned; e2e_nap_ms(50)) {
        trial_read(p, on_line, &L, 0);
        condemned = trial_health(p, e2e_mono(), why, sizeof why);
    }
    CHECK_EQ_INT(condemned, 0);
    CHECK(L.count >= 10);
    trial_proc_free(p);
    trial_exec_free(ex);
    unsetenv("FAKE_SRUN_SLEEP");
}

TEST(cleanup_cancels_the_experiments_leftovers_only)
{
    e2e_paths();
    char dir[4300], err[512], sq[8192];
    fresh_dir(dir, sizeof dir, "fake_cleanup");
    /* squeue answers from a file that scancel empties, as Slurm would forget them. */
    snprintf(sq, sizeof sq,
             "#!/bin/sh\n"
             "if [ \"$5\" = -s ]; then cat %s/steps 2>/dev/null; else cat %s/jobs 2>/dev/null; "
             "fi\n",
             dir, dir);
    fake_slurm(dir, sizeof dir, "fake_cleanup", NULL, sq, NULL);
    char p[4400], body[4400];
    snprintf(p, sizeof p, "%s/jobs", dir);
    write_file(p, "10|tune:exp:trial_00000\n11|tune:exp2:trial_00000\n12|other\n"
                  "13|tune:exp:trial_00007\n");
    snprintf(p, sizeof p, "%s/steps", dir);
    write_file(p, "10.0|tune:exp:trial_00000\n20.3|tune:exp:trial_00001\n21.0|tune:exp2:x\n");
    snprintf(p, sizeof p, "%s/scancel", dir);
    snprintf(body, sizeof body,
             "#!/bin/sh\necho \"scancel $*\" >> %s/scancel.log\n: > %s/jobs\n"
             ": > %s/steps\n",
             dir, dir, dir);
    write_exec(p, body);
    trial_exec_t *ex = NULL;
    REQUIRE(new_fake_exec(dir, NULL, NULL, 0, &ex, err, sizeof err) == 0);
    CHECK_EQ_INT(trial_exec_cleanup(ex, "exp", err, sizeof err), 3);
    snprintf(p, sizeof p, "%s/scancel.log", dir);
    char *s = slurp(p);
    CHECK_STR(s, "scancel 10 13 20.3\n");
    free(s);
    CHECK_EQ_INT(trial_exec_cleanup(ex, "exp", err, sizeof err), 0);
    trial_exec_free(ex);
    snprintf(p, sizeof p, "%s/squeue", dir);
    write_exec(p,
               "#!/bin/sh\necho 'squeue: error: Unable to contact slurm controller' >&2\nexit 1\n");
    REQUIRE(new_fake_exec(dir, NULL, NULL, 0, &ex, err, sizeof err) == 0);
    CHECK(trial_exec_cleanup(ex, "exp", err, sizeof err) < 0);
    CHECK_CONTAINS(err, "squeue: squeue: error: Unable to contact slurm controller");
    trial_exec_free(ex);
}

/* ---- end to end, against a real Slurm -------------------------------------------------- */

static const char *asha_space =
    "{\"name\": \"%s\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 20,"
    " \"max_concurrent\": 1, \"seed\": 11, \"stop_grace_s\": 2,"
    " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"9\"],"
    " \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
    "   \"reduction_factor\": 3},"
    " \"executor\": {\"type\": \"%s\"},"
    " \"space\": {\"lr\": {\"loguniform\": [0.00001, 1]}}}";

TEST(asha_through_slurm_decides_as_locally)
{
    NEED_SLURM();
    char loc[4300], sl[4300], sp[8192];
    fresh_dir(loc, sizeof loc, "asha_local");
    fresh_dir(sl, sizeof sl, "asha_slurm");
    snprintf(sp, sizeof sp, asha_space, "ashaS", g_synth, "local");
    space_file(loc, sp);
    snprintf(sp, sizeof sp, asha_space, "ashaS", g_synth, "slurm");
    space_file(sl, sp);
    const char *a[] = {"run", "space.json", "--quiet", "--gpus", "none", NULL};
    struct out o = run_tune_shown(loc, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    o = run_tune_shown(sl, a);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Finished ashaS: 20 trials terminated");
    out_free(&o);
    const char *q[] = {
        "SELECT t.trial_no, d.iteration, d.action, d.rung, d.value, d.cutoff FROM decisions d"
        " JOIN trials t ON t.id = d.trial_id ORDER BY t.trial_no, d.iteration",
        "SELECT trial_no, status, early_stopped, (SELECT count(*) FROM results r WHERE"
        " r.trial_id = t.id), config FROM trials t ORDER BY trial_no",
        "SELECT t.trial_no, r.iteration, r.metric FROM results r JOIN trials t ON t.id ="
        " r.trial_id ORDER BY t.trial_no, r.iteration"};
    for (size_t i = 0; i < 3; i++) {
        char *x = db_rows(loc, q[i]), *y = db_rows(sl, q[i]);
        CHECK(strlen(x) > 100);
        CHECK_STR(y, x);
        free(x);
        free(y);
    }
    CHECK(db_int(sl, "SELECT count(*) FROM trials WHERE early_stopped = 1") >= 5);
    /* Every trial ran as a Slurm job of its own, and the database says which and where. */
    CHECK_EQ_INT(db_int(sl, "SELECT count(DISTINCT exec_id) FROM trials WHERE exec_id GLOB"
                            " '[0-9]*' AND node = 'ci1'"),
                 20);
    CHECK_EQ_INT(db_int(loc, "SELECT count(*) FROM trials WHERE exec_id != ''"), 0);
    CHECK_EQ_INT(wait_slurm_clear("ashaS", 30), 0);
}

/* Reads the trials' slice.log files (synth_trial writes start/end with its
 * CUDA_VISIBLE_DEVICES) and checks that no GPU was held twice at any moment. Returns the
 * largest number of GPUs in use at once. */
static int check_disjoint(const char *dir, const char *exp, int ntrials, int ngpus)
{
    struct e2e_slice_ev ev[4096];
    int nodev = 0;
    int nev = e2e_slice_events(dir, exp, ntrials, ev, 4096, &nodev);
    CHECK(nev > 0);
    CHECK_EQ_INT(nodev, 0); /* Slurm set CUDA_VISIBLE_DEVICES */
    int load[64] = {0}, inuse = 0, peak = 0;
    for (int i = 0; i < nev; i++) {
        if (ev[i].dev < 0 || ev[i].dev >= ngpus) {
            fprintf(stderr, "GPU %d is not one of the node's %d\n", ev[i].dev, ngpus);
            CHECK(0);
            return -1;
        }
        int d = ev[i].start ? 1 : -1;
        load[ev[i].dev] += d;
        inuse += d;
        if (load[ev[i].dev] > 1) {
            fprintf(stderr, "GPU %d given twice at %.6f\n", ev[i].dev, ev[i].t);
            CHECK(0);
            return -1;
        }
        if (inuse > peak) peak = inuse;
    }
    return peak;
}

TEST(gpu_slices_from_slurm_are_disjoint)
{
    NEED_SLURM();
    char dir[4300], sp[8192];
    fresh_dir(dir, sizeof dir, "gpus");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"gpuS\", \"metric\": \"loss\", \"num_samples\": 12, \"max_concurrent\": 6,"
        " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"4\", \"--sleep-ms\", \"150\","
        "   \"--slice-log\"],"
        " \"resources\": {\"gpus_per_trial\": 1, \"cpus_per_trial\": 1},"
        " \"executor\": {\"type\": \"slurm\", \"srun_args\": [\"--partition=debug\"]},"
        " \"space\": {\"lr\": {\"uniform\": [0.001, 0.1]}}}",
        g_synth);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    CHECK_EQ_INT(run_ok(dir, sp, a), 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 12);
    int peak = check_disjoint(dir, "gpuS", 12, 4);
    CHECK(peak >= 2); /* Slurm really ran trials side by side on the node's 4 GPUs */
    CHECK(peak <= 4);
    CHECK_EQ_INT(wait_slurm_clear("gpuS", 30), 0);
}

TEST(two_ranks_on_two_nodes_only_rank0_reports)
{
    NEED_SLURM();
    char *n = sh("sinfo -h -p multi -o %D 2>/dev/null");
    int nodes = atoi(n);
    free(n);
    if (nodes < 2)
        SKIP("the test cluster has no second node (SLURM_CI_NODES=2 scripts/slurm/up.sh)");
    char dir[4300], sp[8192];
    fresh_dir(dir, sizeof dir, "ranks");
    snprintf(sp, sizeof sp,
             "{\"name\": \"rankS\", \"metric\": \"loss\", \"num_samples\": 1,"
             " \"command\": [\"%s\", \"--iters\", \"3\"],"
             " \"executor\": {\"type\": \"slurm\", \"srun_args\": [\"--partition=multi\","
             "   \"--nodes=2\", \"--ntasks-per-node=1\"]},"
             " \"space\": {\"x\": {\"choice\": [1]}}}",
             g_slurm_rank);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    CHECK_EQ_INT(run_ok(dir, sp, a), 0);
    /* MASTER_ADDR: rank 0's node, by name when "ci1" resolves, else by the address Slurm
     * has for it (the test cluster's fake nodes are all 127.0.0.1). */
    char *m = sh("getent hosts ci1 >/dev/null && echo ci1 ||"
                 " scontrol -o show node ci1 | sed -n 's/.* NodeAddr=\\([^ ]*\\).*/\\1/p'");
    m[strcspn(m, "\n")] = 0;
    CHECK(*m);
    char want[512];
    /* Rank 0's three results were recorded, and nothing of rank 1. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results"), 3);
    char *r = db_rows(dir, "SELECT data FROM results ORDER BY id LIMIT 1");
    snprintf(want, sizeof want,
             "\"rank\": \"0\", \"world\": \"2\", \"local\": \"0\", \"node_id\": \"0\","
             " \"node\": \"ci1\", \"master\": \"%s\", \"RANK\": \"0\", \"WORLD_SIZE\":"
             " \"2\", \"LOCAL_RANK\": \"0\"",
             m);
    CHECK_CONTAINS(r, want);
    free(r);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM results WHERE data LIKE '%\"rank\": \"1\"%'"),
                 0);
    char p[4400];
    snprintf(p, sizeof p, "%s/tune_results/rankS/trial_00000/rank1.stdout.log", dir);
    char *log = slurp(p);
    snprintf(want, sizeof want,
             "\"rank\": \"1\", \"world\": \"2\", \"local\": \"0\", \"node_id\": \"1\","
             " \"node\": \"ci2\", \"master\": \"%s\", \"RANK\": \"1\"",
             m);
    CHECK_CONTAINS(log, want);
    free(log);
    free(m);
    r = db_rows(dir, "SELECT node FROM trials");
    CHECK_STR(r, "ci[1-2]\n");
    free(r);
}

TEST(early_stop_goes_through_scancel_sigterm)
{
    NEED_SLURM();
    char dir[4300], sp[8192];
    fresh_dir(dir, sizeof dir, "stop");
    /* The good trial runs first and sets the bar at max_t 3; the bad ones are stopped at
     * their first milestone while they would run for 30 s more. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"stopS\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 1,"
             " \"max_concurrent\": 1, \"stop_grace_s\": 20,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"100\", \"--sleep-ms\","
             "   \"300\", \"--slice-log\"],"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 3, \"grace_period\": 1,"
             "   \"reduction_factor\": 2},"
             " \"executor\": {\"type\": \"slurm\"},"
             " \"space\": {\"lr\": {\"grid_search\": [0.01, 0.00001, 0.000001]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    double t0 = e2e_mono();
    struct out o = run_tune_shown(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK(e2e_mono() - t0 < 60);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE early_stopped = 1 AND"
                             " status = 'TERMINATED'"),
                 2);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 3);
    /* Stopped gracefully: SIGTERM reached every task (each wrote its "end" line), long
     * before the 20 s grace would have SIGKILLed it. */
    for (int i = 0; i <= 2; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/tune_results/stopS/trial_%05d/slice.log", dir, i);
        char *s = slurp(p);
        CHECK_CONTAINS(s, "end ");
        free(s);
    }
    CHECK(db_int(dir, "SELECT max(t.ended_at - d.wall_time) < 10 FROM trials t JOIN decisions"
                      " d ON d.trial_id = t.id AND d.action = 'stop'") == 1);
    /* A completed trial first gets stop_grace_s (20 s) to exit by itself, then SIGTERM,
     * which ends it long before the SIGKILL another 20 s later. */
    CHECK(db_int(dir, "SELECT max(t.ended_at - d.wall_time) BETWEEN 19 AND 35 FROM trials t JOIN"
                      " decisions d ON d.trial_id = t.id AND d.action = 'complete'") == 1);
    CHECK_EQ_INT(wait_slurm_clear("stopS", 30), 0);
}

TEST(task_ignoring_sigterm_is_killed_after_the_grace)
{
    NEED_SLURM();
    char dir[4300], sp[8192];
    fresh_dir(dir, sizeof dir, "ignore");
    /* Both trials would run 100 s; both are stopped (trial 0 complete at max_t, trial 1
     * early), ignore the SIGTERM and are killed a second later. */
    snprintf(sp, sizeof sp,
             "{\"name\": \"ignS\", \"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 1,"
             " \"max_concurrent\": 1, \"stop_grace_s\": 1,"
             " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"1000\", \"--sleep-ms\","
             "   \"100\", \"--ignore-term\", \"--slice-log\"],"
             " \"scheduler\": {\"type\": \"asha\", \"max_t\": 3, \"grace_period\": 1,"
             "   \"reduction_factor\": 2},"
             " \"executor\": {\"type\": \"slurm\"},"
             " \"space\": {\"lr\": {\"grid_search\": [0.01, 0.000001]}}}",
             g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    double t0 = e2e_mono();
    struct out o = run_tune_shown(dir, a);
    CHECK_EQ_INT(o.code, 0);
    out_free(&o);
    CHECK(e2e_mono() - t0 < 60);
    /* srun may well exit 0 here (Slurm's "Timed out waiting for job step to complete"):
     * the stop decision, recorded before the signal, is what counts. */
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'TERMINATED'"), 2);
    CHECK_EQ_INT(db_int(dir, "SELECT early_stopped FROM trials WHERE trial_no = 1"), 1);
    for (int i = 0; i <= 1; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/tune_results/ignS/trial_%05d/slice.log", dir, i);
        char *s = slurp(p);
        CHECK_CONTAINS(s, "start ");
        CHECK(strstr(s, "end ") == NULL); /* it never ended by itself: it was killed */
        free(s);
    }
    CHECK(db_int(dir, "SELECT max(t.ended_at - d.wall_time) < 15 FROM trials t JOIN decisions"
                      " d ON d.trial_id = t.id AND d.action IN ('stop', 'complete')") == 1);
    CHECK_EQ_INT(wait_slurm_clear("ignS", 30), 0);
    /* "[s]" so that the pattern does not match the shell running pgrep itself. */
    char *ps = sh("pgrep -f '[s]ynth_trial.*--ignore-term' | wc -l");
    CHECK_EQ_INT(atoi(ps), 0);
    free(ps);
}

TEST(failing_rank_ends_the_trial_quickly)
{
    NEED_SLURM();
    char dir[4300], sp[8192];
    fresh_dir(dir, sizeof dir, "krank");
    snprintf(sp, sizeof sp,
             "{\"name\": \"krS\", \"metric\": \"loss\", \"num_samples\": 1,"
             " \"command\": [\"%s\", \"--fail-rank\", \"1\", \"--quiet-s\", \"60\"],"
             " \"executor\": {\"type\": \"slurm\", \"srun_args\": [\"--ntasks=2\"]},"
             " \"space\": {\"x\": {\"choice\": [1]}}}",
             g_slurm_rank);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    double t0 = e2e_mono();
    struct out o = run_tune_shown(dir, a);
    double took = e2e_mono() - t0;
    CHECK_EQ_INT(o.code, 3); /* the trial ended in ERROR */
    CHECK_CONTAINS(o.out, "1 failed");
    out_free(&o);
    /* rank 0 would have slept 60 s without -K1: a bound that tells the two apart on a busy
     * machine, not a speed */
    CHECK(took < 45);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status = 'ERROR'"), 1);
    char *r = db_rows(dir, "SELECT error, stderr_tail FROM trials");
    CHECK_CONTAINS(r, "slurm_rank: rank 1 failing on purpose");
    CHECK_CONTAINS(r, "srun: error:");
    free(r);
    CHECK_EQ_INT(wait_slurm_clear("krS", 30), 0);
}

TEST(slurm_refusal_is_an_error_trial_with_slurms_message)
{
    NEED_SLURM();
    char dir[4300], sp[8192];
    fresh_dir(dir, sizeof dir, "refuse");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"refS\", \"metric\": \"loss\", \"num_samples\": 1,"
        " \"command\": [\"%s\"],"
        " \"executor\": {\"type\": \"slurm\", \"srun_args\": [\"--constraint=nosuchfeature\"]},"
        " \"space\": {\"x\": {\"choice\": [1]}}}",
        g_synth);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    CHECK_EQ_INT(run_ok(dir, sp, a), 3); /* the trial ended in ERROR */
    char *r = db_rows(dir, "SELECT status, error, stderr_tail FROM trials");
    CHECK_CONTAINS(r, "ERROR|exited with code 1: srun: error:");
    CHECK_CONTAINS(r, "srun: error: Unable to allocate resources: Invalid feature specification");
    free(r);

    /* What can be known before the experiment starts is an error before it starts. */
    fresh_dir(dir, sizeof dir, "refuse2");
    snprintf(sp, sizeof sp,
             "{\"name\": \"refS2\", \"metric\": \"loss\", \"num_samples\": 1,"
             " \"command\": [\"%s\"], \"resources\": {\"gpus_per_trial\": 5},"
             " \"executor\": {\"type\": \"slurm\"},"
             " \"space\": {\"x\": {\"choice\": [1]}}}",
             g_synth);
    space_file(dir, sp);
    struct out o = run_tune_shown(dir, a);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "space.json: executor slurm: a trial asks for 5 GPU(s) but the largest "
                          "node of partition debug has 4");
    out_free(&o);
    const char *b[] = {"run",   "space.json",   "--quiet", "--executor",
                       "slurm", "--allocation", "999999",  NULL};
    o = run_tune_shown(dir, b);
    CHECK_EQ_INT(o.code, 2);
    CHECK_CONTAINS(o.err, "executor slurm: allocation 999999: scontrol: ");
    out_free(&o);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials"), 0); /* nothing ran */
}

TEST(allocation_mode_runs_steps_without_blocking)
{
    NEED_SLURM();
    char *j = sh("salloc --no-shell -n 3 --gpus=2 -J tune-test-alloc 2>&1 | "
                 "sed -n 's/.*Granted job allocation \\([0-9]*\\).*/\\1/p'");
    int job = atoi(j);
    free(j);
    REQUIRE(job > 0);
    char dir[4300], sp[8192], jid[32];
    snprintf(jid, sizeof jid, "%d", job);
    fresh_dir(dir, sizeof dir, "alloc");
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"allocS\", \"metric\": \"loss\", \"num_samples\": 8,"
        " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"3\", \"--sleep-ms\", \"100\","
        "   \"--slice-log\"],"
        " \"resources\": {\"gpus_per_trial\": 1, \"cpus_per_trial\": 1},"
        " \"executor\": {\"type\": \"slurm\"},"
        " \"space\": {\"lr\": {\"uniform\": [0.001, 0.1]}}}",
        g_synth);
    const char *a[] = {"run", "space.json", "--quiet", "--allocation", jid, NULL};
    CHECK_EQ_INT(run_ok(dir, sp, a), 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 8);
    char like[128];
    snprintf(like, sizeof like, "SELECT count(*) FROM trials WHERE exec_id GLOB '%d.[0-9]*'", job);
    CHECK_EQ_INT(db_int(dir, like), 8);
    /* tune counted the allocation's 2 GPUs itself: never more than 2 steps at once, on
     * disjoint GPUs. (An srun may still print "step creation temporarily disabled" once:
     * Slurm frees a finished step's GPUs a moment after its srun has returned and squeue
     * has forgotten it, so the next step can find them busy for that moment; measured on
     * the test cluster under the sanitizer build. That is Slurm's lag, not an overcommit.) */
    char cmd[8400];
    int peak = check_disjoint(dir, "allocS", 8, 4);
    CHECK(peak >= 1 && peak <= 2);
    snprintf(cmd, sizeof cmd, "scancel %d", job);
    CHECK_EQ_INT(system(cmd), 0);
}

TEST(killed_tune_leaves_no_orphans_after_resume)
{
    NEED_SLURM();
    char dir[4300], sp[8192];
    fresh_dir(dir, sizeof dir, "orphans");
    /* Four GPUs, trials of three: one runs, the others wait in Slurm's queue. */
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"orphS\", \"metric\": \"loss\", \"num_samples\": 4, \"max_concurrent\": 3,"
        " \"command\": [\"%s\", \"--lr\", \"{lr}\", \"--iters\", \"6\", \"--sleep-ms\", \"300\"],"
        " \"resources\": {\"gpus_per_trial\": 3},"
        " \"executor\": {\"type\": \"slurm\"},"
        " \"space\": {\"lr\": {\"uniform\": [0.001, 0.1]}}}",
        g_synth);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    pid_t pid = spawn_tune(dir, a, NULL);
    double t0 = e2e_mono();
    while (slurm_left("orphS") < 3 && e2e_mono() - t0 < 30)
        e2e_nap_ms(100);
    e2e_nap_ms(800);
    CHECK(slurm_left("orphS") >= 3);
    kill(pid, SIGKILL);
    struct out o = finish_tune_shown(dir, pid);
    out_free(&o);
    /* The running step dies with its srun; queued jobs may stay until the resume. */
    const char *r[] = {"resume", "orphS", "--quiet", NULL};
    o = run_tune_shown(dir, r);
    CHECK_EQ_INT(o.code, 0);
    CHECK_CONTAINS(o.out, "Finished orphS: 4 trials terminated");
    out_free(&o);
    CHECK_EQ_INT(slurm_left("orphS"), 0);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE status='TERMINATED'"), 4);
}

/* A cluster of its own, so that killing its controller disturbs no other case. */
TEST(controller_killed_trials_end_as_errors)
{
    e2e_paths();
    if (geteuid() != 0) SKIP("needs root to start a Slurm cluster");
    if (!have_prog("slurmctld") || !have_prog("slurmd") || !have_prog("srun"))
        SKIP("Slurm is not installed (apt-get install slurmctld slurmd slurm-client)");
    char dir[4300], sp[8192], cmd[8400];
    fresh_dir(dir, sizeof dir, "ctld");
    const char *cdir = "/tmp/tune-slurm-ci-watchdog";
    snprintf(cmd, sizeof cmd,
             "SLURM_CI_DIR=%s SLURM_CI_PORT=6917 SLURM_CI_NODES=1 %s/scripts/slurm/up.sh "
             ">/dev/null",
             cdir, g_src);
    REQUIRE(system(cmd) == 0);
    char conf[512], wd[64] = "TUNE_SLURM_WATCHDOG_S=2";
    snprintf(conf, sizeof conf, "SLURM_CONF=%s/slurm.conf", cdir);
    const char *env[] = {conf, wd, NULL};
    snprintf(
        sp, sizeof sp,
        "{\"name\": \"ctldS\", \"metric\": \"loss\", \"num_samples\": 2, \"max_concurrent\": 2,"
        " \"command\": [\"%s\", \"--quiet-s\", \"3\", \"--iters\", \"1\"],"
        " \"executor\": {\"type\": \"slurm\"},"
        " \"space\": {\"x\": {\"choice\": [1, 2]}}}",
        g_slurm_rank);
    space_file(dir, sp);
    const char *a[] = {"run", "space.json", "--quiet", NULL};
    struct how h = {.env = env};
    pid_t pid = spawn_tune(dir, a, &h);
    double t0 = e2e_mono();
    while (db_int(dir, "SELECT count(*) FROM trials WHERE exec_id != ''") < 2 &&
           e2e_mono() - t0 < 30)
        e2e_nap_ms(100);
    CHECK_EQ_INT(db_int(dir, "SELECT count(*) FROM trials WHERE exec_id != ''"), 2);
    /* The whole cluster dies (SIGKILL, as in a crash): the tasks still finish, but their
     * sruns wait for a controller that never answers again. */
    snprintf(cmd, sizeof cmd, "kill -9 $(cat %s/slurmctld.pid %s/slurmd.ci1.pid)", cdir, cdir);
    CHECK_EQ_INT(system(cmd), 0);
    t0 = e2e_mono();
    struct out o = finish_tune_shown(dir, pid);
    double took = e2e_mono() - t0;
    CHECK_EQ_INT(o.code, 3); /* trials ended in ERROR */
    CHECK_CONTAINS(o.out, "2 failed");
    out_free(&o);
    CHECK(took < 60);
    char *r = db_rows(dir, "SELECT status, error FROM trials");
    CHECK_CONTAINS(r, "ERROR|srun made no progress for ");
    CHECK_CONTAINS(r, "the Slurm controller does not answer");
    free(r);
    snprintf(cmd, sizeof cmd, "SLURM_CI_DIR=%s %s/scripts/slurm/down.sh --purge", cdir, g_src);
    CHECK_EQ_INT(system(cmd), 0);
}

TT_MAIN
