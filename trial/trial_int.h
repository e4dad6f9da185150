/* trial_int.h: what the executors share inside the trial module: the executor vtable,
 * the trial handle, and the common mechanism (spawning, line splitting, reaping).
 * Not for: anything outside trial/ (the public contract is trial.h). */
#ifndef TUNE_TRIAL_INT_H
#define TUNE_TRIAL_INT_H

#include "trial/trial.h"

#include <signal.h>
#include <stdint.h>

/* Default for trial_read's max_bytes: enough for thousands of result lines per call, small
 * enough that one chatty trial cannot hold the loop for long. */
#define TRIAL__READ_DEFAULT (256u * 1024u)

/* One executor kind. The local executor fills every slot with its own or the shared
 * functions below; a Slurm executor starts `srun` through trial__spawn, reads its stdout
 * with trial__read_pipe, and brings its own signal (scancel), exec_id and node, the way
 * redis puts ae_epoll.c and ae_select.c behind one ae.h. */
struct trial_exec_ops {
    const char *name; /* "local", "slurm" */
    /* What the backend does itself and the loop's executor (exec_proc.c) then leaves to it:
     * places_gpus, 1: it picks a trial's GPUs (Slurm), so the environment carries no
     * CUDA_VISIBLE_DEVICES from tune's pool when the trial asks for GPUs; names_trials, 1:
     * trials get ids and nodes of its own (exec_id, node). */
    int places_gpus;
    int names_trials;
    /* Starts the trial described by sp (held behind `after`, a trial of this executor, when
     * not NULL: only where can_hold said so); fills p->pid, p->pgid and p->fd. On failure
     * nothing runs any more and p's fields other than those are left for trial_start to
     * release. */
    int (*start)(trial_exec_t *ex, const trial_spawn_t *sp, const trial_proc_t *after,
                 trial_proc_t *p, char *err, size_t errlen);
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
    /* Optional (NULL: nothing to check, no limits, nothing left behind): trial_health,
     * trial_exec_check and trial_exec_cleanup for executors that need them (Slurm). */
    int (*health)(trial_proc_t *p, double now, char *why, size_t n);
    int (*check)(trial_exec_t *ex, int ranks, double gpus, int cpus, trial_capacity_t *cap,
                 char *err, size_t errlen);
    int (*cleanup)(trial_exec_t *ex, const char *experiment, char *err, size_t errlen);
    /* Optional (NULL: no start is ever held, trial_start_after): trial_exec_can_hold
     * and trial_cancel. */
    int (*can_hold)(trial_exec_t *ex);
    int (*cancel)(trial_proc_t *p);
    /* Optional (NULL: nothing of its own to poll): trial_exec_fd and trial_exec_poll. */
    int (*events_fd)(const trial_exec_t *ex);
    void (*events)(trial_exec_t *ex);
};

/* The table of executors (exec.c): each backend's constructor from the common
 * configuration, the settings it reads being its own. */
int trial__local_open(const trial_exec_conf_t *c, trial_exec_t **out, char *err, size_t errlen);
int trial__slurm_open(const trial_exec_conf_t *c, trial_exec_t **out, char *err, size_t errlen);

/* ---- the trial's environment (env.c) -------------------------------------------------- */

/* What a trial is told of itself (README.md, "The trial's environment"), as the loop's
 * executor knows it when it starts the trial. Strings are borrowed. */
struct trial__env_in {
    int64_t trial_no;
    const char *experiment;
    const char *dir;         /* the trial's folder */
    const char *ckpt_dir;    /* its checkpoints folder */
    const char *config;      /* the configuration as JSON text, when it goes in TUNE_CONFIG */
    const char *config_file; /* else the file holding it (TUNE_CONFIG_FILE) */
    const char *devices;     /* the slice's devices; NULL: the executor places GPUs itself */
    double gpus;
    int cpus;
    int port;                /* MASTER_PORT */
    const char *resume_from; /* TUNE_RESUME_FROM, or NULL */
    double max_t;            /* TUNE_MAX_T when > 0 */
};

/* Linux's limit on one argv or environment string (MAX_ARG_STRLEN: 32 pages), with room
 * for the name: a configuration longer than this goes to a file (TUNE_CONFIG_FILE), since
 * TUNE_CONFIG would make the exec fail (E2BIG). */
#define TRIAL__ENV_MAX (32u * 4096u - 64u)

/* The trial's environment, "KEY=VALUE" entries set on top of tune's (trial_spawn_t.env):
 * the one place it is built, for every executor. A NULL-terminated vector freed with
 * trial__env_free, or NULL when out of memory. */
char **trial__env_new(const struct trial__env_in *in);
void trial__env_free(char **env); /* NULL-safe */

struct trial_exec {
    const struct trial_exec_ops *ops;
    void *priv;
    size_t live;   /* trials started and not yet freed */
    int free_late; /* trial_exec_free came while trials were live: free with the last */
};

typedef struct trial__spawner trial__spawner_t;
struct trial__launch;

struct trial_proc {
    trial_exec_t *ex;
    void *priv;      /* the executor's own state */
    pid_t pid;       /* tune's child: the trial's keeper (keeper.c), waited for and signalled */
    pid_t pgid;      /* the keeper's process group (== pid: it leads a group of its own) */
    pid_t trial_pid; /* the program itself (the trial, or srun for Slurm): trial_pid() */
    /* Non-NULL: the keeper is the spawner's child, not tune's (spawner.c); pid is -1, and
     * signals and the end go through the spawner by slot. */
    trial__spawner_t *sv;
    uint64_t slot;
    int starting;    /* a no_wait start whose outcome the spawner has not told yet */
    int held;        /* ... held behind another trial's end (trial_start_after) */
    int cancelled;   /* a held start dropped before it happened (trial_cancel) */
    char *start_err; /* why a no_wait start failed, or NULL */
    int fd;          /* read end of its stdout, non-blocking; -1 once EOF was read */
    int log_fd;      /* stdout log (O_APPEND), or -1 */
    int log_errno;   /* why logging stopped (a failed write to the stdout log), or 0 */
    int reaped;
    trial_exit_t exit; /* valid once reaped */
    /* The line splitter: the unfinished line, never longer than TRIAL_MAX_LINE (+ NUL). */
    char *line;
    size_t line_len, line_cap;
    int discarding; /* a cut line's rest is being skipped up to its newline */
};

/* Fork/exec of one trial as the house does it (libuv uv_spawn, tmux job_run), behind a
 * keeper (keeper.c): argv, the environment (tune's, with sp->env on top) and the PATH lookup
 * are built before fork; tune forks the keeper, which leads a process group of its own, is a
 * child subreaper, learns of tune's death (even by SIGKILL), and vforks the trial. The trial
 * leads a group of its own, dies with the keeper (PR_SET_PDEATHSIG), enters sp->dir, takes
 * stdin from /dev/null, stdout into a pipe and stderr to sp->stderr_log, has its signals
 * reset and unblocked, every other fd closed, and execs. No shell ever. When the trial ends,
 * or tune asks for SIGKILL, or tune dies, the keeper SIGKILLs the trial's group and every
 * descendant, orphaned or setsid() or not, and (unless tune died) ends with the trial's own
 * exit status. On success *pid is the keeper (tune's child: wait for it with trial__reap,
 * signal the trial through it with trial__kill_group) and *out_fd the non-blocking,
 * close-on-exec read end of the trial's stdout. Returns TRIAL_ENOENT when the program cannot
 * be executed, TRIAL_ERR otherwise; in both cases nothing runs any more and the keeper has
 * been reaped. */
int trial__spawn(const trial_spawn_t *sp, pid_t *pid, int *out_fd, char *err, size_t errlen);

/* trial__spawn plus what every executor's start needs: fills p->pid and p->pgid (the
 * keeper), p->trial_pid (the program) and p->fd. With a spawner (sv non-NULL), the keeper
 * is forked by it instead (p->sv, p->slot; p->pid stays -1), or by tune when the spawner
 * cannot take the launch; only the spawner holds a start behind `after`. Same returns. */
int trial__spawn_proc(const trial_spawn_t *sp, const trial_proc_t *after, trial__spawner_t *sv,
                      trial_proc_t *p, char *err, size_t errlen);

/* ---- the spawner (spawner.c) ---------------------------------------------------------- */

/* The spawner's protocol (spawner.c, tune's side; spawner_run.c, the spawner's). tune
 * sends one SOCK_SEQPACKET message per request; a launch carries the trial's three fds
 * (stdin, stdout, stderr) with SCM_RIGHTS and, after the header, argv, the environment,
 * the PATH candidates and the directory, each string NUL-ended. The spawner answers on a
 * pipe, one trial__spawn_rep (24 bytes, so each write is atomic) per launch (started, or
 * why not) and per trial that ended. The largest launch is TRIAL__SPAWN_MAX bytes: a
 * SEQPACKET message must fit the socket's send buffer, so a larger one (an environment of
 * hundreds of kilobytes) goes through a keeper forked by tune instead. */
#define TRIAL__SPAWN_MAX (64u * 1024u)

/* A launch may be held until an earlier launch's trial has ended (after: its slot): the
 * spawner answers that trial's end, then starts the held one at once and answers its
 * start. A cancel (or a SIGKILL) of a held launch drops it, answered CANCELLED; of one
 * already started, nothing (its start was answered before). */
enum { TRIAL__REQ_LAUNCH = 1, TRIAL__REQ_SIGNAL = 2, TRIAL__REQ_CANCEL = 3 };
enum {
    TRIAL__REP_STARTED = 1,
    TRIAL__REP_FAILED = 2,
    TRIAL__REP_ENDED = 3,
    TRIAL__REP_CANCELLED = 4
};

struct trial__spawn_req {
    uint32_t type;
    int32_t sig; /* TRIAL__REQ_SIGNAL: the signal for slot's trial's group */
    uint64_t slot;
    uint32_t nargv, nenv, npaths, has_dir; /* TRIAL__REQ_LAUNCH */
    int32_t maxfd;
    int32_t pad;
    uint64_t after; /* TRIAL__REQ_LAUNCH: hold it until this slot's trial ended; 0: now */
};

struct trial__spawn_rep {
    uint64_t slot;
    int32_t kind;  /* TRIAL__REP_* */
    int32_t value; /* STARTED: the pid; FAILED: the stage (TRIAL__FAIL_*); ENDED: the wait status */
    int32_t err;   /* FAILED: errno */
    int32_t pad;
};

/* The spawner itself: serves requests on req, answers on rep (non-blocking), dies with
 * parent. Runs in a fork of tune (spawner.c). */
__attribute__((noreturn)) void trial__spawner_run(int req, int rep, pid_t parent);

/* Forks the spawner: a child of tune that starts every trial of an executor, so that tune
 * forks once per executor instead of once per trial (spawner.c says why). Dies with tune. */
int trial__spawner_new(trial__spawner_t **out, char *err, size_t errlen);
/* Ends the spawner and waits for it. Every trial it started must have been reaped. */
void trial__spawner_free(trial__spawner_t *sv);
/* Has the spawner start l's trial (passing it l's in, out and err; the caller still closes
 * its own copies) and waits for the answer: TRIAL_OK with *pid, the program's, and p
 * registered for its end (p->sv, p->slot); the start's failure as trial__spawn reports
 * it; or 1 when the spawner cannot take it (gone, or the launch too big for one message),
 * nothing started, for the caller to start it another way. */
int trial__spawner_launch(trial__spawner_t *sv, const struct trial__launch *l,
                          const trial_spawn_t *sp, const trial_proc_t *after, trial_proc_t *p,
                          pid_t *pid, char *err, size_t errlen);
/* The answer fd (trial_exec_fd), and taking in what is on it (trial_exec_poll). */
int trial__spawner_fd(const trial__spawner_t *sv);
void trial__spawner_poll(trial__spawner_t *sv);
/* trial__reap and trial__kill_group for a trial the spawner started. */
int trial__spawner_reap(trial__spawner_t *sv, trial_proc_t *p, int block);
int trial__spawner_signal(trial__spawner_t *sv, trial_proc_t *p, int sig);
/* Stops awaiting p's end (p is being freed). */
void trial__spawner_forget(trial__spawner_t *sv, trial_proc_t *p);
/* trial_cancel for a trial the spawner holds (p->held). */
int trial__spawner_cancel(trial__spawner_t *sv, trial_proc_t *p);

/* Reads p->fd, logs and splits it into lines: the shared body of trial_read for every
 * executor whose trial output arrives on a pipe. */
int trial__read_pipe(trial_proc_t *p, trial_line_cb cb, void *ud, size_t max_bytes);

/* Reaps p->pid (the keeper) when it has ended (block: wait for it). Returns 1 and fills
 * p->exit, 0 if it still runs (only without block), TRIAL_ERR on failure. The keeper has
 * killed and reaped the trial's whole tree before it ends, and ends with the trial's own
 * status (exit code, or the signal that killed it), so nothing is left to kill here. */
int trial__reap(trial_proc_t *p, int block);

/* Marks p reaped with wait status `status` (exit code, or the signal that killed it). */
void trial__set_exit(trial_proc_t *p, int status);

/* Sends sig to the trial's process group, through its keeper (sigqueue of TRIAL__RELAY_SIG
 * carrying sig; SIGKILL kills every descendant, in the group or not). A trial that is
 * already gone is not an error. */
int trial__kill_group(trial_proc_t *p, int sig);

/* ---- the forked side (keeper.c) ---------------------------------------------------- */

/* How tune talks to its keepers: a real-time signal, because those queue (a SIGTERM request
 * and the SIGKILL after it never merge into one) and carry a value (the signal to send). The
 * keeper's parent-death signal is the same one, sent by the kernel (si_code SI_USER, not
 * SI_QUEUE), which the keeper tells apart. */
#define TRIAL__RELAY_SIG (SIGRTMIN + 4)

/* What the forked side reports up the close-on-exec status pipe, as {tag, value} int pairs
 * (8 bytes, below PIPE_BUF, so each arrives whole): the keeper sends the trial's pid, and
 * whichever of them gives up sends why ({stage, errno}) and exits 127. EOF after the pid
 * and no failure means the trial's exec succeeded (libuv's and tmux's trick). */
enum {
    TRIAL__MSG_PID = 0,
    TRIAL__FAIL_EXEC,
    TRIAL__FAIL_CHDIR,
    TRIAL__FAIL_SETPGID,
    TRIAL__FAIL_PDEATHSIG,
    TRIAL__FAIL_FDS,
    TRIAL__FAIL_SUBREAPER,
    TRIAL__FAIL_FORK,
    TRIAL__FAIL_NO_PID /* tune's own verdict: the keeper ended without starting the trial */
};

/* Everything the forked side needs, built by tune before fork: after fork nothing is
 * allocated and only system calls are made. */
struct trial__launch {
    char *const *argv;
    char *const *envp;
    char *const *paths; /* candidates for argv[0] */
    const char *dir;
    int in, out, err; /* become the trial's 0, 1 and 2 */
    int status;       /* write end of the status pipe */
    pid_t parent;     /* tune */
    int relay;        /* TRIAL__RELAY_SIG */
    int maxfd;        /* the close loop's bound if close_range is missing */
};

/* Runs in tune's forked child: becomes the keeper, starts the trial, never returns. */
__attribute__((noreturn)) void trial__keeper_run(const struct trial__launch *l);

/* The trial between its vfork and exec, forked by `parent` (a keeper, or the spawner): its
 * own process group, death with its parent, l's fds as 0, 1 and 2, l->dir, every other fd
 * but st closed, the signal mask cleared, exec. A failure is told as {stage, errno} on the
 * close-on-exec status pipe st (so EOF there means the exec succeeded; no shared memory,
 * which a vfork under valgrind, a fork, would not share), and it exits 127. */
__attribute__((noreturn)) void trial__trial_run(const struct trial__launch *l, pid_t parent,
                                                int st);

/* The bound of trial__close_all_but's loop where close_range is missing: RLIMIT_NOFILE,
 * at most 2^20. */
int trial__fd_bound(void);

/* Closes every fd but the n in keep (distinct, any order; n <= 4). Async-signal-safe. */
void trial__close_all_but(int *keep, int n, int maxfd);

/* Sets every signal that /proc/self/status says is caught or ignored back to its default
 * (all 64 when that cannot be read). Async-signal-safe. */
void trial__reset_signals(void);

/* Up to max children of process `parent`, from /proc/<parent>/task/<parent>/children, or
 * (scan, or that file missing) by reading every /proc/<pid>/stat. Async-signal-safe; the
 * keeper's way to find what to kill. Returns how many were stored, or -1. */
int trial__keeper_children(pid_t parent, pid_t *out, int max, int scan);

/* Reads a status pipe to EOF (every copy of its write end closed: the exec succeeded, or
 * the child gave up): the trial's pid, if sent (else *trial unchanged), and the first
 * failure's {stage, errno}, if any (else *stage unchanged, 0). */
void trial__read_status(int fd, pid_t *trial, int *stage, int *why);

/* The message and code for a start that failed at `stage` with errno e (exec_local.c). */
int trial__launch_error(const trial_spawn_t *sp, int stage, int e, char *err, size_t errlen);

/* Fills err like snprintf; every message goes through here. */
void trial__errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Length of the well-formed UTF-8 sequence at s (lead byte >= 0x80), or 0 if it is not
 * one (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). The one rule
 * for both readers of result lines, result.c's pre-scan and result_scan.c's fast path,
 * which must agree byte for byte; inline because the fast path calls it per byte. */
static inline size_t trial__utf8_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (avail < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if (s[k] < 0x80 || s[k] > 0xBF) return 0;
    return len;
}

#endif
