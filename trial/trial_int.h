/* trial_int.h: what the executors share inside the trial module: the executor vtable,
 * the trial handle, and the common mechanism (spawning, line splitting, reaping).
 * Not for: anything outside trial/ (the public contract is trial.h). */
#ifndef TUNE_TRIAL_INT_H
#define TUNE_TRIAL_INT_H

#include "trial/trial.h"

#include <signal.h>

/* Default for trial_read's max_bytes: enough for thousands of result lines per call, small
 * enough that one chatty trial cannot hold the loop for long. */
#define TRIAL__READ_DEFAULT (256u * 1024u)

/* One executor kind. The local executor fills every slot with its own or the shared
 * functions below; a Slurm executor starts `srun` through trial__spawn, reads its stdout
 * with trial__read_pipe, and brings its own signal (scancel), exec_id and node, the way
 * redis puts ae_epoll.c and ae_select.c behind one ae.h. */
struct trial_exec_ops {
    const char *name; /* "local", "slurm" */
    /* Starts the trial described by sp; fills p->pid, p->pgid and p->fd. On failure nothing
     * runs any more and p's fields other than those are left for trial_start to release. */
    int (*start)(trial_exec_t *ex, const trial_spawn_t *sp, trial_proc_t *p, char *err,
                 size_t errlen);
    int (*fd)(const trial_proc_t *p);
    int (*read)(trial_proc_t *p, trial_line_cb cb, void *ud, size_t max_bytes);
    int (*signal)(trial_proc_t *p, int sig); /* only called before the trial was reaped */
    int (*poll_exit)(trial_proc_t *p, trial_exit_t *out); /* only called before reaping */
    const char *(*exec_id)(const trial_proc_t *p);
    const char *(*node)(const trial_proc_t *p);
    /* Kills whatever still runs and reaps it, blocking, then releases p->priv. Called by
     * trial_proc_free whether or not the trial was already reaped. */
    void (*proc_free)(trial_proc_t *p);
    void (*exec_free)(trial_exec_t *ex); /* releases ex->priv */
};

struct trial_exec {
    const struct trial_exec_ops *ops;
    void *priv;
    size_t live;   /* trials started and not yet freed */
    int free_late; /* trial_exec_free came while trials were live: free with the last */
};

struct trial_proc {
    trial_exec_t *ex;
    void *priv; /* the executor's own state */
    pid_t pid;  /* the child we started: the trial itself, or srun for Slurm */
    pid_t pgid; /* its process group (== pid: it leads a group of its own) */
    int fd;     /* read end of its stdout, non-blocking; -1 once EOF was read */
    int log_fd; /* stdout log (O_APPEND), or -1 */
    int log_errno; /* why logging stopped (a failed write to the stdout log), or 0 */
    int reaped;
    trial_exit_t exit; /* valid once reaped */
    /* The line splitter: the unfinished line, never longer than TRIAL_MAX_LINE (+ NUL). */
    char *line;
    size_t line_len, line_cap;
    int discarding; /* a cut line's rest is being skipped up to its newline */
};

/* Fork/exec of one child as the house does it (libuv uv_spawn, tmux job_run): argv, the
 * environment (tune's, with sp->env on top) and the PATH lookup are built before fork;
 * the child resets signals, leads its own process group, dies with its parent
 * (PR_SET_PDEATHSIG), enters sp->dir, takes stdin from /dev/null, stdout into a pipe and
 * stderr to sp->stderr_log, closes every other fd and execs. No shell ever. On success
 * *pid is the child and *out_fd the non-blocking, close-on-exec read end of its stdout.
 * Returns TRIAL_ENOENT when the program cannot be executed, TRIAL_ERR otherwise; in both
 * cases the child has been reaped. */
int trial__spawn(const trial_spawn_t *sp, pid_t *pid, int *out_fd, char *err, size_t errlen);

/* Reads p->fd, logs and splits it into lines: the shared body of trial_read for every
 * executor whose trial output arrives on a pipe. */
int trial__read_pipe(trial_proc_t *p, trial_line_cb cb, void *ud, size_t max_bytes);

/* Reaps p->pid when it has ended (block: wait for it). Returns 1 and fills p->exit, 0 if
 * it still runs (only without block), TRIAL_ERR on failure. The group is sent SIGKILL
 * while the ended leader is still a zombie, so that the pgid cannot have been reused,
 * and then the leader is reaped: nothing the trial forked into its group outlives it. */
int trial__reap(trial_proc_t *p, int block);

/* Sends sig to p's process group; a group that is already gone is not an error. */
int trial__kill_group(trial_proc_t *p, int sig);

/* Fills err like snprintf; every message goes through here. */
void trial__errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
