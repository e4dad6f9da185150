/* keeper_main.c: tune-keeper, the keeper of keeper.c as a small program of its own. tune
 * starts it with posix_spawn (vfork and exec: no copy of tune's page tables, and no
 * copy-on-write faults in tune for as long as the trial runs, which a fork of tune costs
 * per trial) and it runs exactly what a forked keeper runs. Not for: people (tune passes
 * everything, and nothing is printed); without it beside tune, tune forks itself instead.
 *
 * usage (tune only): tune-keeper TUNE-WORDS... PATH... ARGV... DIR PARENT RELAY MAXFD NS NP NA
 * (tune's own command line in NS words, NP candidates for the program, the trial's argv in
 * NA words; DIR "" means stay where tune is); fds 0, 1, 2 are the trial's stdin, stdout and stderr,
 * fd 3 the status pipe; the environment is the trial's; every signal arrives blocked and
 * at its default action (posix_spawn's SETSIGMASK and SETSIGDEF). */
#include "trial/trial_int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

static long num(const char *s, int *bad)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end) *bad = 1;
    return v;
}

int main(int argc, char **argv)
{
    /* From the end: DIR PARENT RELAY MAXFD NS NP NA; before them NS words of tune's own
     * command line, NP PATH candidates and the trial's NA-word argv, in that order. */
    int bad = argc < 10;
    long na = bad ? 0 : num(argv[argc - 1], &bad), np = bad ? 0 : num(argv[argc - 2], &bad);
    long ns = bad ? 0 : num(argv[argc - 3], &bad), maxfd = bad ? 0 : num(argv[argc - 4], &bad);
    long relay = bad ? 0 : num(argv[argc - 5], &bad), parent = bad ? 0 : num(argv[argc - 6], &bad);
    if (bad || ns < 1 || np < 1 || na < 1 || ns + np + na + 7 != argc)
        _exit(127); /* not started by tune: the status pipe, if any, reads EOF, no pid */
    /* Copies of what the keeper needs, then everything after tune's words blanked:
     * /proc/<pid>/cmdline shows the keeper's memory of its arguments, and it must read as
     * tune's command line, as a forked keeper's does, never as the trial's (`pkill -f`,
     * `pgrep`, or a test counting a trial's processes by an argument would find the keeper
     * too). A fresh program, so malloc is fine here. */
    size_t bytes = 0;
    for (int i = (int)ns; i < argc; i++)
        bytes += strlen(argv[i]) + 1;
    size_t nv = (size_t)(np + 1 + na + 1);
    char **v = malloc(nv * sizeof *v + bytes), *s = (char *)(v + nv);
    if (!v) _exit(127);
    char **paths = v, **targv = v + np + 1;
    char *dir = NULL;
    for (int i = (int)ns; i < argc - 6; i++) {
        size_t n = strlen(argv[i]) + 1;
        char *c = memcpy(s, argv[i], n);
        s += n;
        if (i < ns + np)
            paths[i - ns] = c;
        else if (i < ns + np + na)
            targv[i - ns - np] = c;
        else
            dir = c;
    }
    paths[np] = NULL;
    targv[na] = NULL;
    memset(argv[ns], 0, (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[ns]));
    /* The trial's exec must close the status pipe (tune reads EOF as "exec succeeded"), as
     * it closes tune's close-on-exec pipe in a forked keeper; dup2 cleared the flag. */
    if (fcntl(3, F_SETFD, FD_CLOEXEC) < 0) _exit(127);
    /* SIGRTMIN-2 and -1 (32, 33) may arrive ignored, and glibc's sigaction will not touch
     * them, so trial__keeper_run's reset cannot either: the kernel's own call does, so
     * that the trial inherits no ignored signal. */
    for (int sig = 32; sig < 34; sig++) {
        struct {
            void *handler;
            unsigned long flags;
            void *restorer;
            unsigned long mask;
        } dfl = {0};
        syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
    }
    struct trial__launch l = {.argv = targv,
                              .envp = environ,
                              .paths = paths,
                              .dir = dir && *dir ? dir : NULL,
                              .in = 0,
                              .out = 1,
                              .err = 2,
                              .status = 3,
                              .parent = (pid_t)parent,
                              .relay = (int)relay,
                              .maxfd = (int)maxfd};
    trial__keeper_run(&l);
}
