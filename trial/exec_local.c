/* exec_local.c: the local executor (each trial a process leading its own process group,
 * started by the executor's spawner, or behind a keeper of its own) and trial__spawn, the
 * start every executor uses for its child: what tune does before the spawner's launch or
 * the keeper's fork, and after it. Not for: the spawner (spawner.c, spawner_run.c), the
 * forked side (keeper.c), reading output (proc.c), reaping (group.c), or Slurm specifics (its own
 * executor). */
#include "trial/trial_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- building what the child needs, before fork ----------------------------------- */

static size_t key_len(const char *kv)
{
    const char *eq = strchr(kv, '=');
    return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* tune's environment with `over` on top: an entry of `over` replaces the variable of the
 * same name, and within `over` the last entry of a name wins (as in a shell's `A=1 A=2`).
 * The strings are borrowed; only the array is new. Each name's length is found once, not
 * again at every pairwise comparison (what that cost: bench/tuner/README.md, "tune's own
 * work per trial"). */
static char **build_env(char *const *over)
{
    size_t ne = 0, no = 0;
    while (environ && environ[ne])
        ne++;
    while (over && over[no])
        no++;
    char **envp = malloc((ne + no + 1) * sizeof *envp + no * sizeof(size_t));
    if (!envp) return NULL;
    size_t *olen = (size_t *)(envp + ne + no + 1);
    for (size_t j = 0; j < no; j++)
        olen[j] = key_len(over[j]);
    size_t k = 0;
    for (size_t i = 0; i < ne; i++) {
        size_t li = key_len(environ[i]);
        int hidden = 0;
        for (size_t j = 0; j < no && !hidden; j++)
            hidden = olen[j] == li && memcmp(environ[i], over[j], li) == 0;
        if (!hidden) envp[k++] = environ[i];
    }
    for (size_t j = 0; j < no; j++) {
        int hidden = 0;
        for (size_t l = j + 1; l < no && !hidden; l++)
            hidden = olen[l] == olen[j] && memcmp(over[j], over[l], olen[j]) == 0;
        if (!hidden) envp[k++] = over[j];
    }
    envp[k] = NULL;
    return envp;
}

/* The paths execve will try for prog, NULL-terminated, in one allocation. The lookup
 * uses the trial's own PATH (after env overrides), as libuv's spawn does, and differs
 * from execvp in one way on purpose: a file without #! is reported (ENOEXEC), never
 * handed to /bin/sh. A relative entry is relative to the trial's working directory. */
static char **build_paths(const char *prog, char *const *envp)
{
    const char *path = NULL;
    if (!strchr(prog, '/')) {
        for (char *const *e = envp; *e; e++)
            if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
        if (!path) path = "/bin:/usr/bin"; /* glibc's execvp default for an unset PATH */
    }
    size_t nelem = 1, plen = strlen(prog);
    for (const char *c = path; c && *c; c++)
        nelem += *c == ':';
    size_t strbytes = path ? strlen(path) + nelem * (plen + 3) : plen + 1;
    char **v = malloc((nelem + 1) * sizeof *v + strbytes);
    if (!v) return NULL;
    char *s = (char *)(v + nelem + 1);
    if (!path) {
        memcpy(s, prog, plen + 1);
        v[0] = s;
        v[1] = NULL;
        return v;
    }
    size_t k = 0;
    for (const char *e = path;;) {
        const char *colon = strchr(e, ':');
        size_t elen = colon ? (size_t)(colon - e) : strlen(e);
        v[k++] = s;
        if (elen == 0) { /* an empty entry means the current directory */
            *s++ = '.';
        } else {
            memcpy(s, e, elen);
            s += elen;
        }
        *s++ = '/';
        memcpy(s, prog, plen + 1);
        s += plen + 1;
        if (!colon) break;
        e = colon + 1;
    }
    v[k] = NULL;
    return v;
}

/* ---- the keeper program ----------------------------------------------------------- */

/* The keeper program to start instead of forking tune, or NULL (the default): TUNE_KEEPER
 * names it (bin/tune-keeper). A fork costs less than an exec on the machines measured
 * (bench/tuner/README.md: glibc's start-up in the new program, its CPU feature probing
 * above all, outweighs the page-table copy and copy-on-write faults that a fork of a
 * 5 MB tune costs), so the program is there for machines where that is the other way
 * round, and for comparing the two. A program that cannot be started falls back to fork. */
static const char *keeper_program(void)
{
    const char *env = getenv("TUNE_KEEPER");
    /* Checked here and not only by posix_spawn's result: where the spawn cannot report a
     * failed exec (valgrind runs it as a fork), the keeper would just be missing. */
    return env && *env && access(env, X_OK) == 0 ? env : NULL;
}

/* tune's own command line as words, read once: the keeper program shows it as its own, as
 * a forked keeper does (ps, pgrep -f and the tests find tune's processes by it). */
static char *const *self_words(size_t *n)
{
    static char buf[8192], *words[256];
    static size_t nwords;
    if (nwords == 0) {
        int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
        ssize_t r = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0) close(fd);
        if (r > 0) buf[r] = '\0';
        for (ssize_t i = 0; r > 0 && i < r && nwords < 255; i += (ssize_t)strlen(buf + i) + 1)
            words[nwords++] = buf + i;
        if (nwords == 0) words[nwords++] = "tune-keeper";
    }
    *n = nwords;
    return words;
}

/* Starts the keeper program with posix_spawn: the same keeper as a fork of tune, but the
 * child shares tune's memory until its exec (vfork), so tune's page tables are not copied
 * and tune takes no copy-on-write faults while the trial runs. It starts in a process group
 * of its own with every signal blocked and at its default action, which is the state
 * trial__keeper_run expects. Returns the keeper's pid, or -1 with errno set. */
static pid_t spawn_keeper(const char *prog, const struct trial__launch *l)
{
    int src[4] = {l->in, l->out, l->err, l->status}, moved[4] = {-1, -1, -1, -1};
    pid_t pid = -1;
    int e = 0;
    /* dup2 onto 0..3 in order must never overwrite a source still to be moved. */
    for (int i = 0; i < 4 && !e; i++)
        if (src[i] < 4) {
            if ((moved[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 4)) < 0)
                e = errno;
            else
                src[i] = moved[i];
        }
    size_t np = 0, na = 0, ns = 0;
    while (l->paths[np])
        np++;
    while (l->argv[na])
        na++;
    char *const *self = self_words(&ns);
    char **av = e ? NULL : malloc((ns + np + na + 8) * sizeof *av);
    if (!e && !av) e = ENOMEM;
    if (!e) {
        char parent[24], relay[24], maxfd[24], cs[24], cp[24], ca[24];
        snprintf(parent, sizeof parent, "%ld", (long)l->parent);
        snprintf(relay, sizeof relay, "%d", l->relay);
        snprintf(maxfd, sizeof maxfd, "%d", l->maxfd);
        snprintf(cs, sizeof cs, "%zu", ns);
        snprintf(cp, sizeof cp, "%zu", np);
        snprintf(ca, sizeof ca, "%zu", na);
        size_t k = 0;
        for (size_t i = 0; i < ns; i++)
            av[k++] = self[i];
        for (size_t i = 0; i < np; i++)
            av[k++] = l->paths[i];
        for (size_t i = 0; i < na; i++)
            av[k++] = l->argv[i];
        av[k++] = (char *)(l->dir ? l->dir : "");
        av[k++] = parent;
        av[k++] = relay;
        av[k++] = maxfd;
        av[k++] = cs;
        av[k++] = cp;
        av[k++] = ca;
        av[k] = NULL;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        sigset_t all;
        sigfillset(&all);
        e = posix_spawn_file_actions_init(&fa);
        if (!e) {
            for (int i = 0; i < 4 && !e; i++)
                e = posix_spawn_file_actions_adddup2(&fa, src[i], i);
            if (!e) e = posix_spawnattr_init(&at);
            if (!e) {
                e = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                      POSIX_SPAWN_SETSIGDEF);
                if (!e) e = posix_spawnattr_setpgroup(&at, 0);
                if (!e) e = posix_spawnattr_setsigmask(&at, &all);
                if (!e) e = posix_spawnattr_setsigdefault(&at, &all);
                if (!e) e = posix_spawn(&pid, prog, &fa, &at, av, l->envp);
                posix_spawnattr_destroy(&at);
            }
            posix_spawn_file_actions_destroy(&fa);
        }
        free(av);
    }
    for (int i = 0; i < 4; i++)
        if (moved[i] >= 0) close(moved[i]);
    if (e) {
        errno = e;
        return -1;
    }
    return pid;
}

static int open_null(int flags)
{
    return open("/dev/null", flags | O_CLOEXEC);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Starts sp's trial: through the spawner when sv is given and it takes the launch (p then
 * registered with it, *pid_out -1), else behind a keeper that tune starts. */
static int spawn(const trial_spawn_t *sp, const trial_proc_t *after, trial__spawner_t *sv,
                 trial_proc_t *p, pid_t *pid_out, pid_t *trial_out, int *out_fd, char *err,
                 size_t errlen)
{
    const char *prog = sp->argv[0];
    int rc = TRIAL_ERR;
    int in = -1, errfd = -1, outp[2] = {-1, -1}, stp[2] = {-1, -1};
    char **envp = build_env(sp->env);
    char **paths = envp ? build_paths(prog, envp) : NULL;
    if (!paths) {
        trial__errf(err, errlen, "out of memory");
        goto fail;
    }
    if (sp->log_fds)
        errfd = fcntl(sp->stderr_fd, F_DUPFD_CLOEXEC, 0);
    else if (sp->stderr_log)
        errfd = open(sp->stderr_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    else
        errfd = open_null(O_WRONLY);
    if (errfd < 0) {
        trial__errf(err, errlen, "cannot open stderr log \"%s\": %s",
                    sp->log_fds      ? "stderr.log"
                    : sp->stderr_log ? sp->stderr_log
                                     : "/dev/null",
                    strerror(errno));
        goto fail;
    }
    if (pipe2(outp, O_CLOEXEC) < 0) {
        trial__errf(err, errlen, "cannot create a pipe: %s", strerror(errno));
        goto fail;
    }
    /* Only our end is non-blocking: the trial writes to an ordinary blocking pipe. (A new
     * pipe's end has no other status flag to keep.) */
    if (fcntl(outp[0], F_SETFL, O_NONBLOCK) < 0) {
        trial__errf(err, errlen, "cannot make the trial's stdout non-blocking: %s",
                    strerror(errno));
        goto fail;
    }
    /* stdin, the status pipe, the parent and the close bound are a keeper's (below): the
     * spawner has its own /dev/null and bound, and answers on its own pipe. */
    struct trial__launch l = {.argv = sp->argv,
                              .envp = envp,
                              .paths = paths,
                              .dir = sp->dir,
                              .in = -1,
                              .out = outp[1],
                              .err = errfd,
                              .status = -1,
                              .relay = TRIAL__RELAY_SIG};

    if (sv) {
        pid_t trial = -1;
        int src = trial__spawner_launch(sv, &l, sp, after, p, &trial, err, errlen);
        if (src != 1) {
            rc = src;
            if (rc != TRIAL_OK) goto fail;
            close_fd(&errfd);
            close_fd(&outp[1]);
            free(envp);
            free(paths);
            *pid_out = -1;
            if (trial_out) *trial_out = trial;
            *out_fd = outp[0];
            return TRIAL_OK;
        }
        /* Not taken: a keeper of our own; a held start cannot be. */
        if (after) {
            trial__errf(err, errlen, "the spawner cannot hold this start");
            rc = TRIAL_EINVAL;
            goto fail;
        }
    }
    if ((in = open_null(O_RDONLY)) < 0) {
        trial__errf(err, errlen, "cannot open /dev/null: %s", strerror(errno));
        goto fail;
    }
    if (pipe2(stp, O_CLOEXEC) < 0) {
        trial__errf(err, errlen, "cannot create a pipe: %s", strerror(errno));
        goto fail;
    }
    l.in = in;
    l.status = stp[1];
    l.parent = getpid();
    l.maxfd = trial__fd_bound();
    /* The keeper program if there is one; if it cannot be started, a fork of tune. */
    const char *kp = keeper_program();
    pid_t pid = kp ? spawn_keeper(kp, &l) : -1;
    int fork_errno = 0;
    if (pid < 0) {
        /* All signals blocked across fork, so no handler of tune's runs in the keeper, which
         * keeps them blocked and takes them with sigtimedwait (libuv uv_spawn, tmux job_run). */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid = fork();
        if (pid == 0) trial__keeper_run(&l);
        fork_errno = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (pid < 0) {
        trial__errf(err, errlen, "cannot start \"%s\": fork: %s", prog, strerror(fork_errno));
        goto fail;
    }
    /* Both sides call setpgid, so the group exists whichever of them runs first (the job
     * control race). Failing here just means the keeper has done it already. */
    setpgid(pid, pid);
    close_fd(&in);
    close_fd(&errfd);
    close_fd(&outp[1]);
    close_fd(&stp[1]);

    pid_t trial = -1;
    int stage = 0, why = 0;
    trial__read_status(stp[0], &trial, &stage, &why);
    close_fd(&stp[0]);
    if (stage != 0 || trial <= 0) {
        /* The keeper ends promptly once the trial has given up (or without one). */
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        rc = trial__launch_error(sp, stage ? stage : TRIAL__FAIL_NO_PID, why, err, errlen);
        goto fail;
    }
    free(envp);
    free(paths);
    *pid_out = pid;
    if (trial_out) *trial_out = trial;
    *out_fd = outp[0];
    return TRIAL_OK;

fail:
    close_fd(&in);
    close_fd(&errfd);
    close_fd(&outp[0]);
    close_fd(&outp[1]);
    close_fd(&stp[0]);
    close_fd(&stp[1]);
    free(envp);
    free(paths);
    return rc;
}

int trial__spawn(const trial_spawn_t *sp, pid_t *pid_out, int *out_fd, char *err, size_t errlen)
{
    return spawn(sp, NULL, NULL, NULL, pid_out, NULL, out_fd, err, errlen);
}

int trial__spawn_proc(const trial_spawn_t *sp, const trial_proc_t *after, trial__spawner_t *sv,
                      trial_proc_t *p, char *err, size_t errlen)
{
    int rc = spawn(sp, after, sv, p, &p->pid, &p->trial_pid, &p->fd, err, errlen);
    if (rc == TRIAL_OK) p->pgid = p->pid;
    return rc;
}

/* ---- the local executor's vtable -------------------------------------------------- */

/* The local executor's state: its spawner, started with the first trial. */
struct local {
    trial__spawner_t *sv;
    int tried; /* started it, or found it could not be: forks of tune from then on */
};

/* Whether trials get the spawner: not when TUNE_KEEPER names a keeper program (that is
 * how it is compared with the fork), nor when TUNE_SPAWNER=0 (the fork of tune per trial,
 * kept as the fallback and for the same comparison; tests/keeper.cmake runs the trial
 * suite both ways). */
static int spawner_wanted(void)
{
    const char *e = getenv("TUNE_SPAWNER");
    return keeper_program() == NULL && !(e && strcmp(e, "0") == 0);
}

static int local_start(trial_exec_t *ex, const trial_spawn_t *sp, const trial_proc_t *after,
                       trial_proc_t *p, char *err, size_t errlen)
{
    struct local *lx = ex->priv;
    if (!lx->tried) {
        lx->tried = 1;
        char e2[256];
        /* Without a spawner every trial still starts, by a fork of tune. */
        if (spawner_wanted() && trial__spawner_new(&lx->sv, e2, sizeof e2) != TRIAL_OK)
            lx->sv = NULL;
    }
    return trial__spawn_proc(sp, after, lx->sv, p, err, errlen);
}

static int local_fd(const trial_proc_t *p)
{
    return p->fd;
}

static int local_poll_exit(trial_proc_t *p, trial_exit_t *out)
{
    int rc = trial__reap(p, 0);
    if (rc == 1 && out) *out = p->exit;
    return rc;
}

static const char *local_none(const trial_proc_t *p)
{
    (void)p;
    return "";
}

static void local_proc_free(trial_proc_t *p)
{
    if (p->reaped || (p->pid <= 0 && !p->sv)) return;
    trial__kill_group(p, SIGKILL);
    if (trial__reap(p, 1) != 1) p->reaped = 1; /* somebody else reaped it: nothing to wait */
    if (p->sv) trial__spawner_forget(p->sv, p);
}

static int local_events_fd(const trial_exec_t *ex)
{
    const struct local *lx = ex->priv;
    return lx->sv ? trial__spawner_fd(lx->sv) : -1;
}

static void local_events(trial_exec_t *ex)
{
    struct local *lx = ex->priv;
    if (lx->sv) trial__spawner_poll(lx->sv);
}

static int local_can_hold(trial_exec_t *ex)
{
    const struct local *lx = ex->priv;
    /* Before the first start: whether it will have a spawner. */
    return lx->tried ? lx->sv && trial__spawner_fd(lx->sv) >= 0 : spawner_wanted();
}

static int local_cancel(trial_proc_t *p)
{
    return p->sv ? trial__spawner_cancel(p->sv, p) : 0;
}

static void local_exec_free(trial_exec_t *ex)
{
    struct local *lx = ex->priv;
    if (lx) trial__spawner_free(lx->sv);
    free(lx);
}

static const struct trial_exec_ops local_ops = {
    .name = "local",
    .places_gpus = 0,
    .names_trials = 0,
    .start = local_start,
    .fd = local_fd,
    .read = trial__read_pipe,
    .signal = trial__kill_group,
    .poll_exit = local_poll_exit,
    .exec_id = local_none,
    .node = local_none,
    .proc_free = local_proc_free,
    .exec_free = local_exec_free,
    .can_hold = local_can_hold,
    .cancel = local_cancel,
    .events_fd = local_events_fd,
    .events = local_events,
};

int trial_exec_local_new(trial_exec_t **out, char *err, size_t errlen)
{
    if (!out) {
        trial__errf(err, errlen, "trial_exec_local_new: no result handle");
        return TRIAL_EINVAL;
    }
    trial_exec_t *ex = calloc(1, sizeof *ex);
    struct local *lx = calloc(1, sizeof *lx);
    if (!ex || !lx) {
        free(ex);
        free(lx);
        trial__errf(err, errlen, "out of memory");
        return TRIAL_ERR;
    }
    ex->ops = &local_ops;
    ex->priv = lx;
    *out = ex;
    return TRIAL_OK;
}

int trial__local_open(const trial_exec_conf_t *c, trial_exec_t **out, char *err, size_t errlen)
{
    (void)c; /* nothing to set: it runs trials where tune runs */
    return trial_exec_local_new(out, err, errlen);
}
