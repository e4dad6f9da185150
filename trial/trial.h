/* trial: runs trials. One contract, in three layers:
 *   - the loop's executor (trial_sched_exec_new): the scheduler's sched_exec_ops_t over real
 *     processes: "start this trial with this environment on this slice". It renders the argv,
 *     builds the trial's environment (the one place it is built, for every executor), opens
 *     the logs beneath the trial's folder, and polls the trials' output;
 *   - executors (trial_exec_t): where and how a trial's process runs, one backend each
 *     (local processes, Slurm), chosen by name from one table (trial_exec_open). A backend's
 *     own data (Slurm's job ids, the spawner's held starts) stays behind it;
 *   - result lines: what a trial prints and how it is read.
 * A new executor is a backend in trial/ (its ops, trial_int.h) and a row in that table.
 * Not for: deciding what to run (scheduler), recording it (store) or the built-in
 * trainer, tune-train (train/, its own program). */
#ifndef TUNE_TRIAL_H
#define TUNE_TRIAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#define TRIAL_OK 0
#define TRIAL_ERR (-1)    /* system call failed; the message says which */
#define TRIAL_ENOENT (-2) /* the program was not found / could not be executed */
#define TRIAL_EINVAL (-3)

/* Longest stdout line kept whole; longer lines are cut there (and reported truncated),
 * so a trial printing 100 MiB without a newline costs bounded memory. */
#define TRIAL_MAX_LINE (1u << 20)

typedef struct trial_exec trial_exec_t; /* an executor: where and how trials run */
typedef struct trial_proc trial_proc_t; /* one started trial */

/* The slice a trial runs on, as the scheduler gave it, for executors that place trials
 * themselves (Slurm asks for it; the local executor runs where tune runs and reads none of
 * it: the environment tells the trial its devices). */
typedef struct trial_slice {
    const char *name; /* the trial's name ("trial_00007"), for executors that name jobs */
    int ranks;        /* processes; 0 = 1 */
    double gpus;      /* GPUs (fractions for shared devices) */
    int cpus;         /* cores per process */
} trial_slice_t;

/* What to start. All strings are borrowed for the duration of trial_start. */
typedef struct trial_spawn {
    char *const *argv;      /* argv[0] is looked up in PATH; never given to a shell */
    char *const *env;       /* "KEY=VALUE" entries set on top of tune's environment */
    const char *dir;        /* working directory (must exist) */
    const char *stdout_log; /* every stdout byte is also appended here (may be NULL) */
    const char *stderr_log; /* stderr goes straight here (NULL: /dev/null) */
    /* 1: the logs are the open files stdout_fd and stderr_fd instead (opened beneath the
     * trial's folder, never by a path's text; O_APPEND), and the two paths are not used.
     * Borrowed: trial_start keeps copies of its own. */
    int log_fds;
    int stdout_fd, stderr_fd;
    trial_slice_t slice;
    /* 1: trial_start may return before the program's exec, where the executor can (the
     * local executor's spawner), so that the caller need not wait for it. A program that
     * then cannot run ends the trial with exit code 127, and trial_start_error says why;
     * trial_pid is -1 until the start is known. 0: trial_start waits for the exec and
     * reports such a program itself (TRIAL_ENOENT). */
    int no_wait;
} trial_spawn_t;

/* How a trial ended. */
typedef struct trial_exit {
    int code;   /* exit status, or -1 if killed by a signal */
    int signal; /* terminating signal, or 0 */
} trial_exit_t;

/* A local executor: each trial is a process in its own process group, started from an
 * options struct by the executor's spawner, one child of tune forked at the first trial
 * that vforks and execs every trial (signals reset, fds closed, parent-death signal set)
 * and kills whatever a trial leaves behind when it ends, or everything when tune dies
 * (docs/durability.md; TUNE_SPAWNER=0: a keeper process per trial instead). Each trial's
 * environment carries TUNE_SPAWN_SLOT, how the spawner tells whose an orphan is. *out
 * freed with trial_exec_free after every trial it started was freed. */
int trial_exec_local_new(trial_exec_t **out, char *err, size_t errlen);
void trial_exec_free(trial_exec_t *ex);              /* NULL-safe */
const char *trial_exec_name(const trial_exec_t *ex); /* "local", "slurm" */
/* 1 when the executor gives trials ids and nodes of its own (trial_exec_id, trial_node:
 * Slurm's job and node), which a table then shows; 0 when it has none (local). */
int trial_exec_names_trials(const trial_exec_t *ex);

struct space;

/* What an executor is made from, whichever it is. */
typedef struct trial_exec_conf {
    const char *name;          /* "local", "slurm", ...; NULL: the settings' "executor" */
    const struct space *space; /* the experiment: its name and its "executor" settings */
    const char *allocation;    /* a run's own choice of Slurm allocation (--allocation; "none":
                                * a job per trial), or NULL: the settings', else $SLURM_JOB_ID */
    const char *bindir;        /* where tune's helper programs are (tune-slurm-task), or NULL */
} trial_exec_conf_t;

/* Creates the executor c names (or the experiment's settings do), from the one table of
 * executors in trial/ (exec.c). Nothing is asked of a cluster yet (trial_exec_check).
 * TRIAL_EINVAL for a name no executor has, or a setting it refuses; TRIAL_ERR when it
 * cannot be made (its programs missing). *out freed with trial_exec_free. */
int trial_exec_open(const trial_exec_conf_t *c, trial_exec_t **out, char *err, size_t errlen);
/* 1 when name is an executor's ("local", "slurm"), else 0. */
int trial_exec_known(const char *name);
/* The executors' names, as a message lists them ("local or slurm"), into buf. */
void trial_exec_names(char *buf, size_t n);

/* ---- the loop's executor ------------------------------------------------------------ */
struct sched_exec;

/* The scheduler's executor (sched_exec_ops_t, scheduler/sched.h) over trials of tx: each
 * start renders the argv from the space's command template, builds the trial's environment
 * (README.md: TUNE_*, CUDA_VISIBLE_DEVICES unless the executor places GPUs itself,
 * OMP_NUM_THREADS, MASTER_ADDR/MASTER_PORT with a port no other running trial has), the
 * same for every executor, opens stdout.log and stderr.log beneath the trial's folder and
 * hands tx the trial on its slice; waits poll the trials' output and the executor's own
 * news, run its watchdog (trial_health) and report late placement. Held starts
 * (sched_start_t.held) are offered where tx can hold them. tx and sp are borrowed and must
 * outlive *out, freed with sched_exec_free; sp may be NULL when nothing is started. */
int trial_sched_exec_new(trial_exec_t *tx, const struct space *sp, struct sched_exec **out,
                         char *err, size_t errlen);

/* Starts a trial. On success *out is a new handle, freed with trial_proc_free once
 * trial_poll_exit has reported its end. A program that cannot be executed is reported
 * as TRIAL_ENOENT with the reason (with sp->no_wait, possibly at its end instead). */
int trial_start(trial_exec_t *ex, const trial_spawn_t *sp, trial_proc_t **out, char *err,
                size_t errlen);
/* trial_start held behind `after`, where trial_exec_can_hold says so and sp->no_wait is 1
 * (else TRIAL_EINVAL): start it only once `after`, started by the same executor, has
 * ended and nothing of it is left. The executor holds the start and makes it the moment
 * that trial's end is known, without the caller, so no wake-up of tune stands between one
 * trial's end and the next one's start; both outcomes then come in order (trial_exec_fd).
 * after NULL: trial_start. */
int trial_start_after(trial_exec_t *ex, const trial_spawn_t *sp, const trial_proc_t *after,
                      trial_proc_t **out, char *err, size_t errlen);

/* The fd to poll for readability (the trial's stdout); -1 once EOF has been read. */
int trial_fd(const trial_proc_t *p);

/* Called once per complete stdout line (without the newline). `truncated` is 1 when the
 * line was longer than TRIAL_MAX_LINE and was cut. The pointer is valid during the call. */
typedef void (*trial_line_cb)(void *ud, const char *line, size_t len, int truncated);

/* Reads what is available without blocking, logging it and calling cb per line. Returns
 * 0 if more may come, 1 at end of output (a final unterminated line is delivered
 * first), or TRIAL_ERR. At most `max_bytes` are read per call (0 = a default), so one
 * chatty trial cannot starve the others. */
int trial_read(trial_proc_t *p, trial_line_cb cb, void *ud, size_t max_bytes);

/* Sends sig to the whole trial (its process group, or its Slurm job). */
int trial_signal(trial_proc_t *p, int sig);

/* Non-blocking: 1 and *out filled once the trial's process has ended (it is then
 * reaped), 0 while it runs, TRIAL_ERR on failure. */
int trial_poll_exit(trial_proc_t *p, trial_exit_t *out);

/* The program's pid; -1 while a no_wait start is not known yet (trial_exec_fd). */
pid_t trial_pid(const trial_proc_t *p);
/* Why a no_wait start failed after trial_start returned (the trial then ended with code
 * 127), or NULL. Valid until trial_proc_free. */
const char *trial_start_error(const trial_proc_t *p);
/* An fd to poll, beside the trials' own, for what the executor learns on its own (a
 * no_wait start's outcome, a trial's end), or -1 when it has none. When it is readable,
 * trial_exec_poll takes that news in: trial_pid, trial_poll_exit and trial_start_error
 * then tell it. */
int trial_exec_fd(const trial_exec_t *ex);
void trial_exec_poll(trial_exec_t *ex);
/* Whether trial_start_after can hold a start (the local executor with its spawner): 1 or 0. */
int trial_exec_can_hold(trial_exec_t *ex);
/* Drops a start held behind another trial (trial_start_after) that has not happened yet:
 * returns 1, and the trial never ran (it counts as ended by SIGKILL; trial_proc_free it).
 * 0 when it has started or failed to start (stop it as any other), or was never held.
 * Blocks until the executor has said which. */
int trial_cancel(trial_proc_t *p);
/* Executor's own id and node ("12345.0", "node7") or "" when it has none. */
const char *trial_exec_id(const trial_proc_t *p);
const char *trial_node(const trial_proc_t *p);

/* Kills the trial's whole group with SIGKILL if it still runs, reaps it, frees. NULL-safe. */
void trial_proc_free(trial_proc_t *p);

/* ---- health, capacity and leftovers (every executor; added for Slurm) -------------- */

/* Is the trial still alive as far as its executor can tell? `now` is CLOCK_MONOTONIC in
 * seconds. Returns 0 (fine, or cannot tell yet) or 1 with a reason in why: the trial will
 * never end on its own (Slurm: srun made no progress for the watchdog period and Slurm no
 * longer knows its job, or its controller has stopped answering). Cheap and non-blocking:
 * meant to be called every few seconds for each running trial; the caller then stops the
 * trial (SIGKILL) and records it as ERROR with the reason. The local executor always
 * returns 0. */
int trial_health(trial_proc_t *p, double now, char *why, size_t n);

/* What an executor can run at once, for the scheduler's slice pool. */
typedef struct trial_capacity {
    int known; /* 0: the executor does not say (local: detect this machine's devices) */
    int gpus;  /* GPUs tune may hand out at once; -1: no limit of tune's own (Slurm queues) */
    int cpus;  /* likewise for CPU cores */
} trial_capacity_t;

/* Checks, before anything runs, that a trial of `ranks` processes asking for `gpus` GPUs
 * and `cpus` cores per process can ever be placed, so that an impossible request is an
 * error up front (Slurm: an unknown partition, more GPUs or cores than any node of the
 * partition has, a fraction of a GPU, an allocation that is not running); fills *cap.
 * Blocking (it may ask Slurm, bounded by a timeout). Local: 0 and cap->known = 0. */
int trial_exec_check(trial_exec_t *ex, int ranks, double gpus, int cpus, trial_capacity_t *cap,
                     char *err, size_t errlen);

/* Cancels what an earlier run of `experiment` left behind (Slurm: its jobs, or its steps
 * in the allocation, found by name in squeue) and waits, bounded, until Slurm has let
 * them go, so that a resumed experiment never competes with its own orphans. Returns how
 * many were cancelled (>= 0) or a negative code with err set. Blocking. Local: 0. */
int trial_exec_cleanup(trial_exec_t *ex, const char *experiment, char *err, size_t errlen);

/* ---- the Slurm executor ------------------------------------------------------------ */
/* Each trial is one `srun` child of tune: a job of its own (per-trial mode), or a step
 * of an existing allocation (`srun --jobid=J --exact`, allocation mode), named
 * "tune:EXPERIMENT:trial_NNNNN". srun runs tune-slurm-task as the task, which sets
 * MASTER_ADDR to the step's first node, tells tune its job, step and node on one line,
 * and execs the trial's argv; only rank 0's stdout is read for results (other ranks'
 * stdout goes to rankN.stdout.log in the trial's directory). trial_signal maps SIGTERM
 * and SIGKILL to scancel (run in the background, never blocking the caller). */
typedef struct trial_slurm_opts {
    const char *experiment;   /* names jobs; required */
    char *const *srun_args;   /* extra srun options (partition, account, time limit,
                               * constraint...), NULL-terminated, or NULL; never a shell */
    const char *allocation;   /* a running job to start steps in; NULL or "": a job per trial */
    const char *task_program; /* tune-slurm-task (a path every node sees); NULL: from PATH */
    const char *srun;         /* srun to use; NULL: from PATH (scancel, squeue, sinfo and
                               * scontrol are taken from the same directory) */
    double watchdog_s;        /* trial_health's period without progress; 0: 60 */
} trial_slurm_opts_t;

/* Creates a Slurm executor; nothing is asked of Slurm yet (see trial_exec_check). Errors:
 * no experiment name, srun or tune-slurm-task not found. *out freed with trial_exec_free.
 * All strings are copied. */
int trial_exec_slurm_new(const trial_slurm_opts_t *o, trial_exec_t **out, char *err, size_t errlen);

/* Creates a directory and its missing parents (mode 0777 less the umask), like
 * `mkdir -p`. Returns 0, or -1 with errno set. */
int trial_mkdirs(const char *path);

/* Last `n - 1` bytes (at most) of a file, e.g. a trial's stderr log, NUL-terminated,
 * starting at a line boundary where possible. Returns bytes written (0 if none). */
size_t trial_file_tail(const char *path, char *buf, size_t n);

/* ---- result lines --------------------------------------------------------------- */
/* Parses one stdout line. Returns 1 and *out (a new JSON object, caller cJSON_Delete()s)
 * when the line is a JSON object: that is a result (Katib-style). Returns 0 for any
 * other line (plain log output). Bounded: nesting deeper than 64, or a line that is not
 * valid UTF-8 JSON, is simply not a result. NaN/Infinity literals are accepted as
 * numbers. */
int trial_result_parse(const char *line, size_t len, cJSON **out);

/* The number `key` holds in a result, or NaN when missing or not a number. */
double trial_result_number(const cJSON *result, const char *key);

/* The fast path for the same lines, without building a tree or allocating: returns 1 when
 * the line is a plain JSON object (strict JSON: no NaN/Infinity, no \u escapes, no escaped
 * keys), so that trial_result_parse takes it as a result and it can be stored as it came;
 * vals[i] is then what trial_result_number would read for the top-level keys[i] (NaN when
 * missing or not a number; a NULL key reads NaN). Returns 0 otherwise: not a result, or
 * one this scan leaves to trial_result_parse. At most TRIAL_SCAN_MAX_KEYS keys; vals may
 * be overwritten either way. */
#define TRIAL_SCAN_MAX_KEYS 8
int trial_result_scan(const char *line, size_t len, const char *const *keys, size_t nkeys,
                      double *vals);

#endif
