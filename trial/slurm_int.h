/* slurm_int.h: what the Slurm executor (exec_slurm.c), its command runner (slurm_cmd.c),
 * its checks before a run (slurm_check.c) and the task program tune-slurm-task
 * (slurm_task.c) share inside trial/.
 * Not for: anything outside trial/ (the public contract is trial.h). */
#ifndef TUNE_TRIAL_SLURM_INT_H
#define TUNE_TRIAL_SLURM_INT_H

#include "trial/trial.h"

#include <stddef.h>
#include <sys/types.h>

/* The line tune-slurm-task's rank 0 prints before it execs the trial, and the executor
 * consumes (it is the first line of the step's stdout, so a trial cannot forge it):
 *   TUNE_SLURM {"job": "123", "step": "0", "node": "ci1", "nodes": "ci[1-2]", "gpus": "0,1"} */
#define TRIAL__SLURM_TAG "TUNE_SLURM "

/* The first host of a Slurm hostlist, as SLURM_STEP_NODELIST writes it: "ci[1-2]" ->
 * "ci1", "node[07-09,12],gpu3" -> "node07", "a,b" -> "a", "r[1-2]n[3-4]" -> "r1n3".
 * Returns 0, or -1 when the list is empty or malformed (nothing useful in out). */
int trial__slurm_first_host(const char *list, char *out, size_t n);

/* ---- running Slurm's commands (slurm_cmd.c): argv[0] is a path, never a shell ------- */

/* Runs argv to its end, at most timeout_s seconds (then SIGKILL), stdin from /dev/null.
 * *out and *errout (may be NULL) receive its stdout and stderr, NUL-terminated, at most
 * 1 MiB each; the caller frees them. *status is the exit code, 128 + signal, or -1 when
 * it timed out. Returns 0, or TRIAL_ERR/TRIAL_ENOENT with err set when it could not run. */
int trial__cmd_run(char *const *argv, double timeout_s, int *status, char **out, char **errout,
                   char *err, size_t errlen);

/* Starts argv detached (double fork: tune never waits for it and it survives tune), its
 * stdout to /dev/null and its stderr appended to stderr_fd (-1: /dev/null). For scancel,
 * which must not block the event loop. Returns 0 or TRIAL_ERR. */
int trial__cmd_detach(char *const *argv, int stderr_fd);

/* A command whose output is collected without blocking (the watchdog's squeue). */
typedef struct trial__cmd_async {
    pid_t pid; /* 0 when none runs */
    int fd;    /* read end of its stdout+stderr, non-blocking */
    char *buf; /* what it printed so far, NUL-terminated */
    size_t len, cap;
    int status; /* once done: exit code, 128 + signal */
} trial__cmd_async_t;

/* Starts argv with stdout and stderr into one pipe; it dies with tune. Returns 0 or
 * TRIAL_ERR. c must not be running. */
int trial__cmd_start(trial__cmd_async_t *c, char *const *argv);
/* Reads what is there; 1 once the command has ended and been reaped (c->status, c->buf
 * valid until the next start or release), 0 while it runs. */
int trial__cmd_poll(trial__cmd_async_t *c);
/* Kills (SIGKILL) and reaps a running command, and frees its buffer. */
void trial__cmd_release(trial__cmd_async_t *c);

/* The first line of s, trimmed, for messages ("" when none). */
void trial__first_line(const char *s, char *out, size_t n);

/* Runs one of Slurm's commands to its end (trial__cmd_run, 30 s at most): 0 with its
 * stdout in *out (the caller frees), or TRIAL_ERR with "NAME: its first line of stderr"
 * or "NAME did not answer within 30 s" in err and *out NULL. */
int trial__slurm_cmd(char *const *argv, char **out, char *err, size_t errlen);

/* ---- checks before a run (slurm_check.c): partitions, an allocation, GRES --------- */

/* What the user's srun_args already say, so that tune neither contradicts nor repeats
 * them (a user's -n, -c or GPU option replaces tune's own). */
struct trial__slurm_user_opts {
    const char *partition; /* -p/--partition value, or NULL */
    int ntasks;            /* -n value, 0 if not given */
    int nodes;             /* -N value (the minimum of a range), 0 if not given */
    int layout;            /* -n, -N or --ntasks-per-node given */
    int cpus;              /* -c given */
    int gpus;              /* a GPU request given (--gpus*, -G, --gres, --tres-per-task) */
    int mem;               /* --mem* given */
};

/* What the checks need of the executor: the paths of sinfo and scontrol, the allocation
 * (NULL: a job per trial) and what the user's srun_args already say. */
typedef struct trial__slurm_site {
    char *sinfo, *scontrol; /* as argv[0] */
    char *allocation;
    const struct trial__slurm_user_opts *u;
} trial__slurm_site_t;

/* trial_exec_check for the Slurm executor: GPUs must be whole; with an allocation, the
 * request against the allocation's CPUs and GPUs (cap filled with them); else against the
 * partitions (cap->gpus = cap->cpus = -1: Slurm queues what does not fit now). Returns
 * TRIAL_OK, or TRIAL_EINVAL with a message naming the fix in err. */
int trial__slurm_check(const trial__slurm_site_t *x, int ranks, double gpus, int cpus,
                       trial_capacity_t *cap, char *err, size_t errlen);

#endif
