/* slurm_int.h: what the Slurm executor (exec_slurm.c), its command runner (slurm_cmd.c)
 * and the task program tune-slurm-task (slurm_task.c) share inside trial/.
 * Not for: anything outside trial/ (the public contract is trial.h). */
#ifndef TUNE_TRIAL_SLURM_INT_H
#define TUNE_TRIAL_SLURM_INT_H

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

#endif
