/* test_keeper: how a trial's keeper is started. By default it is a fork of the caller; with
 * TUNE_KEEPER naming tune-keeper it is that program, started with posix_spawn, and it
 * looks like the caller in ps (its command line), as a fork does; a keeper program that
 * cannot run falls back to the fork. What the keeper then does (orphans, signals, exit
 * status) is test_trial's, which runs through the fork, and, through
 * keeper.trial_suite_with_the_program, through the program. Not for: the scheduler
 * (test_faults covers kill -9 of a whole tune run). */
#include "tinytest.h"
#include "trial/trial.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if !defined(KEEPER_TRIAL) || !defined(KEEPER_PROGRAM)
#error "tests/keeper.cmake defines KEEPER_TRIAL (a program for the trial) and KEEPER_PROGRAM"
#endif

static void on_line(void *ud, const char *line, size_t len, int truncated)
{
    (void)line;
    (void)len;
    (void)truncated;
    (*(int *)ud)++;
}

static void on_signal(int sig)
{
    (void)sig;
}

/* /proc/<pid>/<what> as one string with NULs made spaces, or "" when unreadable. */
static void proc_text(pid_t pid, const char *what, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t k = fread(buf, 1, n - 1, f);
    fclose(f);
    while (k > 0 && buf[k - 1] == '\0') /* a blanked tail */
        k--;
    for (size_t i = 0; i < k; i++)
        if (buf[i] == '\0') buf[i] = ' ';
    buf[k] = '\0';
}

static pid_t parent_of(pid_t pid)
{
    char st[1024];
    proc_text(pid, "stat", st, sizeof st);
    const char *rp = strrchr(st, ')');
    int ppid = -1;
    if (!rp || sscanf(rp + 2, "%*c %d", &ppid) != 1) return -1;
    return ppid;
}

/* Starts `KEEPER_TRIAL 5` (it sleeps, so it is still there to look at), finds its keeper
 * (its parent), and returns that keeper's executable in exe and command line in cmd. */
static int keeper_of_a_trial(char *exe, size_t exelen, char *cmd, size_t cmdlen)
{
    char err[512];
    trial_exec_t *ex = NULL;
    trial_proc_t *p = NULL;
    char *argv[] = {KEEPER_TRIAL, "5", NULL};
    trial_spawn_t sp = {.argv = argv};
    if (trial_exec_local_new(&ex, err, sizeof err) != 0) return -1;
    if (trial_start(ex, &sp, &p, err, sizeof err) != 0) {
        fprintf(stderr, "trial_start: %s\n", err);
        trial_exec_free(ex);
        return -1;
    }
    pid_t keeper = parent_of(trial_pid(p));
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)keeper);
    ssize_t n = readlink(link, exe, exelen - 1);
    exe[n > 0 ? n : 0] = '\0';
    proc_text(keeper, "cmdline", cmd, cmdlen);
    trial_proc_free(p); /* kills and reaps it */
    trial_exec_free(ex);
    return keeper > 0 ? 0 : -1;
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

TEST(tune_keeper_names_the_keeper_program_which_shows_the_callers_command_line)
{
    setenv("TUNE_KEEPER", KEEPER_PROGRAM, 1);
    char exe[PATH_MAX], cmd[8192], self[8192];
    REQUIRE(keeper_of_a_trial(exe, sizeof exe, cmd, sizeof cmd) == 0);
    CHECK_STR(base(exe), "tune-keeper");
    proc_text(getpid(), "cmdline", self, sizeof self);
    CHECK_STR(cmd, self); /* not the trial's command: pgrep -f finds tune's, not the trial's */
}

TEST(by_default_the_keeper_is_a_fork_of_the_caller)
{
    unsetenv("TUNE_KEEPER");
    char exe[PATH_MAX], cmd[8192], self[PATH_MAX];
    REQUIRE(keeper_of_a_trial(exe, sizeof exe, cmd, sizeof cmd) == 0);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(n > 0);
    self[n] = '\0';
    CHECK_STR(exe, self);
}

TEST(a_keeper_program_that_cannot_run_falls_back_to_the_fork)
{
    setenv("TUNE_KEEPER", "/nonexistent/tune-keeper", 1);
    char err[512];
    trial_exec_t *ex = NULL;
    trial_proc_t *p = NULL;
    char *argv[] = {"/bin/echo", "{\"x\": 1}", NULL};
    trial_spawn_t sp = {.argv = argv};
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    int lines = 0;
    trial_exit_t st = {0};
    for (int i = 0; i < 500; i++) {
        trial_read(p, on_line, &lines, 0);
        if (trial_fd(p) < 0 && trial_poll_exit(p, &st) == 1) break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK_EQ_INT(lines, 1);
    CHECK_EQ_INT(st.code, 0);
    trial_proc_free(p);
    trial_exec_free(ex);
}

/* The keeper resets only the signals /proc says the caller ignores or catches: with some
 * ignored and some caught, the keeper and the trial still end up with none of either. */
TEST(keeper_and_trial_take_no_ignored_or_caught_signal_from_the_caller)
{
    unsetenv("TUNE_KEEPER");
    struct sigaction ign = {.sa_handler = SIG_IGN}, on = {.sa_handler = on_signal};
    sigaction(SIGCHLD, &ign, NULL);
    sigaction(SIGPIPE, &ign, NULL);
    sigaction(SIGRTMIN + 7, &ign, NULL);
    sigaction(SIGUSR1, &on, NULL);
    sigaction(SIGRTMAX, &on, NULL);
    char err[512];
    trial_exec_t *ex = NULL;
    trial_proc_t *p = NULL;
    char *argv[] = {KEEPER_TRIAL, "5", NULL};
    trial_spawn_t sp = {.argv = argv};
    REQUIRE(trial_exec_local_new(&ex, err, sizeof err) == 0);
    REQUIRE(trial_start(ex, &sp, &p, err, sizeof err) == 0);
    pid_t pids[2] = {parent_of(trial_pid(p)), trial_pid(p)};
    for (int i = 0; i < 2; i++) {
        char st[8192];
        proc_text(pids[i], "status", st, sizeof st);
        CHECK_CONTAINS(st, "SigIgn:\t0000000000000000");
        CHECK_CONTAINS(st, "SigCgt:\t0000000000000000");
    }
    trial_proc_free(p);
    trial_exec_free(ex);
}

TT_MAIN
