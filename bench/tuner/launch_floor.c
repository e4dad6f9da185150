/* launch_floor: the least work any tuner that runs real trial processes must do, timed.
 * It runs N trials of a command, at most C at once, each through posix_spawn (no shell)
 * with stdout on a pipe, reads every pipe to EOF with poll(), counts lines that start
 * with '{', reaps every child, and prints {"trials": N, "lines": L, "wall_s": W}.
 * bench/tuner/run.sh runs it beside `tune run` to show how much of tune's wall time is the
 * machine's own cost of those processes. Not a tuner (no early stopping, no parsing, no
 * storage, no process groups, no logs) and not a test: it asserts nothing about the lines.
 *
 *   launch_floor [--trials N] [--concurrent C] [--seed S] -- COMMAND [ARG...]
 *
 * Every occurrence of "{lr}" in an ARG becomes that trial's value, drawn log-uniformly
 * over [1e-5, 1] from the seed, so trials differ the way tune's do. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_common.h"

extern char **environ;

#define PLACEHOLDER "{lr}"
#define LR_LOW 1e-5
#define LR_HIGH 1.0

/* One running trial. `at_bol` carries "the next byte starts a line" across reads, since a
 * line may be split between two reads of the pipe. */
typedef struct slot {
    pid_t pid;
    int fd;
    int at_bol;
} slot_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: launch_floor [--trials N] [--concurrent C] [--seed S] -- COMMAND [ARG...]\n"
               "  --trials N      trials to run (default 200)\n"
               "  --concurrent C  trials running at once (default 2)\n"
               "  --seed S        seed of the lr draw (default 0)\n"
               "  \"{lr}\" in an ARG becomes the trial's lr, log-uniform over [1e-5, 1].\n"
               "  Prints {\"trials\": N, \"lines\": L, \"wall_s\": W}: L counts stdout lines\n"
               "  starting with '{', W runs from the first spawn to the last reap.\n");
}

static long arg_long(const char *opt, const char *v, long lo, long hi)
{
    return bench_arg_long("launch_floor", opt, v, lo, hi);
}

static double draw_lr(uint64_t *state)
{
    double u = bench_uniform01(state);
    double llo = log(LR_LOW), lhi = log(LR_HIGH);
    return exp(llo + u * (lhi - llo));
}

/* `arg` with every PLACEHOLDER replaced by `value`, in a new string the caller frees;
 * NULL when out of memory. */
static char *substitute(const char *arg, const char *value)
{
    size_t plen = strlen(PLACEHOLDER), vlen = strlen(value), n = 0;
    for (const char *p = strstr(arg, PLACEHOLDER); p; p = strstr(p + plen, PLACEHOLDER))
        n++;
    char *out = malloc(strlen(arg) + n * vlen + 1), *o = out;
    if (!out) return NULL;
    for (const char *p = arg, *q; *p; p = q + plen) {
        q = strstr(p, PLACEHOLDER);
        if (!q) {
            strcpy(o, p);
            return out;
        }
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, value, vlen);
        o += vlen;
        if (!q[plen]) break;
    }
    *o = '\0';
    return out;
}

/* Starts one trial with stdout on a new pipe. Both pipe ends are close-on-exec, so no
 * trial inherits another's pipe and each EOF comes when that trial alone has exited;
 * dup2 onto fd 1 clears the flag for the trial's own stdout. Returns 0, or an errno. */
static int spawn_trial(char *const argv[], slot_t *s)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return errno;
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0) {
        rc = posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        /* glibc's posix_spawn uses CLONE_VFORK and reports a failed exec here, as rc. */
        if (rc == 0) rc = posix_spawnp(&s->pid, argv[0], &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return rc;
    }
    s->fd = p[0];
    s->at_bol = 1;
    return 0;
}

/* Counts the lines in buf[0..n) that start with '{'. */
static long count_lines(slot_t *s, const char *buf, ssize_t n)
{
    long lines = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (s->at_bol && buf[i] == '{') lines++;
        s->at_bol = buf[i] == '\n';
    }
    return lines;
}

int main(int argc, char **argv)
{
    long trials = 200, concurrent = 2;
    uint64_t seed = 0;
    int cmd = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            cmd = i + 1;
            break;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (v && !strcmp(a, "--trials")) {
            trials = arg_long(a, v, 1, 100000000L), i++;
        } else if (v && !strcmp(a, "--concurrent")) {
            concurrent = arg_long(a, v, 1, 4096), i++;
        } else if (v && !strcmp(a, "--seed")) {
            seed = (uint64_t)arg_long(a, v, 0, 0x7fffffffL), i++;
        } else {
            fprintf(stderr, "launch_floor: unknown option or missing value: \"%s\"\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!cmd || cmd >= argc) {
        fprintf(stderr, "launch_floor: no command: give it after \"--\"\n");
        usage(stderr);
        return 2;
    }
    if (concurrent > trials) concurrent = trials;

    /* The command's argv, with the arguments that hold the placeholder rebuilt per trial. */
    int cargc = argc - cmd;
    char **cargv = calloc((size_t)cargc + 1, sizeof *cargv);
    slot_t *run = calloc((size_t)concurrent, sizeof *run);
    struct pollfd *pfd = calloc((size_t)concurrent, sizeof *pfd);
    if (!cargv || !run || !pfd) {
        fprintf(stderr, "launch_floor: out of memory\n");
        return 1;
    }
    static char buf[65536];
    uint64_t rng = seed;
    long started = 0, reaped = 0, lines = 0, failed = 0;
    int nrun = 0; /* run[0..nrun) are the running trials, kept dense so pfd matches them */
    double t0 = bench_clock_s(CLOCK_MONOTONIC);
    while (reaped < trials) {
        while (nrun < concurrent && started < trials) {
            char lr[32];
            snprintf(lr, sizeof lr, "%.17g", draw_lr(&rng));
            for (int k = 0; k < cargc; k++) {
                const char *a = argv[cmd + k];
                cargv[k] = strstr(a, PLACEHOLDER) ? substitute(a, lr) : (char *)a;
                if (!cargv[k]) {
                    fprintf(stderr, "launch_floor: out of memory\n");
                    return 1;
                }
            }
            int rc = spawn_trial(cargv, &run[nrun]);
            for (int k = 0; k < cargc; k++)
                if (cargv[k] != argv[cmd + k]) free(cargv[k]);
            if (rc != 0) {
                fprintf(stderr, "launch_floor: cannot start \"%s\": %s\n", argv[cmd], strerror(rc));
                return 1;
            }
            nrun++, started++;
        }
        for (int j = 0; j < nrun; j++)
            pfd[j] = (struct pollfd){.fd = run[j].fd, .events = POLLIN};
        if (poll(pfd, (nfds_t)nrun, -1) < 0) {
            if (errno == EINTR) continue;
            fprintf(stderr, "launch_floor: poll: %s\n", strerror(errno));
            return 1;
        }
        /* Backwards, so that moving the last slot into a finished one's place never skips
         * a slot not yet looked at in this turn. */
        for (int j = nrun - 1; j >= 0; j--) {
            if (!pfd[j].revents) continue;
            ssize_t n = read(run[j].fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n > 0) {
                lines += count_lines(&run[j], buf, n);
                continue;
            }
            if (n < 0) fprintf(stderr, "launch_floor: read: %s\n", strerror(errno));
            /* EOF: the trial closed its stdout, so it has exited or is about to. */
            close(run[j].fd);
            int st;
            while (waitpid(run[j].pid, &st, 0) < 0) {
                if (errno != EINTR) {
                    fprintf(stderr, "launch_floor: waitpid: %s\n", strerror(errno));
                    return 1;
                }
            }
            if (n < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
            reaped++;
            run[j] = run[--nrun];
        }
    }
    double wall = bench_clock_s(CLOCK_MONOTONIC) - t0;
    printf("{\"trials\": %ld, \"lines\": %ld, \"wall_s\": %.6f}\n", reaped, lines, wall);
    free(cargv);
    free(run);
    free(pfd);
    if (failed) {
        fprintf(stderr, "launch_floor: %ld of %ld trials failed (exit status not 0)\n", failed,
                reaped);
        return 1;
    }
    return 0;
}
