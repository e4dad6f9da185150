/* exec_local.c: the local executor (each trial a child process leading its own process
 * group) and trial__spawn, the fork/exec every executor uses to start its child.
 * Not for: reading output or reaping (proc.c), or Slurm specifics (its own executor). */
#include "trial/trial_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

static int same_key(const char *a, const char *b)
{
    size_t la = key_len(a);
    return la == key_len(b) && memcmp(a, b, la) == 0;
}

/* tune's environment with `over` on top: an entry of `over` replaces the variable of the
 * same name, and within `over` the last entry of a name wins (as in a shell's `A=1 A=2`).
 * The strings are borrowed; only the array is new. */
static char **build_env(char *const *over)
{
    size_t ne = 0, no = 0;
    while (environ && environ[ne]) ne++;
    while (over && over[no]) no++;
    char **envp = malloc((ne + no + 1) * sizeof *envp);
    if (!envp) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < ne; i++) {
        int hidden = 0;
        for (size_t j = 0; j < no && !hidden; j++) hidden = same_key(environ[i], over[j]);
        if (!hidden) envp[k++] = environ[i];
    }
    for (size_t j = 0; j < no; j++) {
        int hidden = 0;
        for (size_t l = j + 1; l < no && !hidden; l++) hidden = same_key(over[j], over[l]);
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
    for (const char *c = path; c && *c; c++) nelem += *c == ':';
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

/* ---- the child, between fork and exec: async-signal-safe calls only --------------- */

/* Why the child gave up, sent as {stage, errno} through the close-on-exec status pipe;
 * EOF on that pipe instead means exec succeeded (libuv's and tmux's trick). */
enum { CHILD_EXEC = 1, CHILD_CHDIR, CHILD_SETPGID, CHILD_PDEATHSIG, CHILD_FDS };

struct child {
    char *const *argv;
    char *const *envp;
    char *const *paths; /* candidates for argv[0] */
    const char *dir;
    int in, out, err; /* become 0, 1 and 2 */
    int status;       /* write end of the status pipe */
    pid_t parent;
    int maxfd; /* the close loop's bound if close_range is missing */
};

__attribute__((noreturn)) static void child_fail(int fd, int stage, int e)
{
    int msg[2] = {stage, e};
    ssize_t r;
    do
        r = write(fd, msg, sizeof msg); /* 8 bytes < PIPE_BUF: one atomic write */
    while (r < 0 && errno == EINTR);
    _exit(127);
}

/* Moves fd to 3 or above, so that the dup2s onto 0, 1 and 2 can never overwrite a source
 * still needed (tune itself may have had 0, 1 or 2 closed when the pipes were made). */
static int move_up(int fd)
{
    return fd >= 3 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

static void close_others(int keep, int maxfd)
{
    int ok = keep == 3 || close_range(3, (unsigned)keep - 1, 0) == 0;
    ok = ok && close_range((unsigned)keep + 1, ~0u, 0) == 0;
    if (ok) return;
    for (int fd = 3; fd < maxfd; fd++) /* kernels before 5.9 */
        if (fd != keep) close(fd);
}

__attribute__((noreturn)) static void child_run(const struct child *c)
{
    /* Handlers and ignored signals are tune's business, not the trial's: a trial started
     * with SIGPIPE ignored, say, would not die writing to a closed pipe. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP) sigaction(s, &sa, NULL); /* 32, 33 fail: fine */
    int st = move_up(c->status);
    if (st < 0) _exit(127);
    if (setpgid(0, 0) < 0) child_fail(st, CHILD_SETPGID, errno);
    /* Die with tune, even if it is SIGKILLed. PDEATHSIG fires when the forking thread
     * ends, and tune is single-threaded. If tune died before prctl took effect we have
     * been reparented already and nobody is left to run for. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) child_fail(st, CHILD_PDEATHSIG, errno);
    if (getppid() != c->parent) _exit(127);
    int in = move_up(c->in), out = move_up(c->out), err = move_up(c->err);
    if (in < 0 || out < 0 || err < 0) child_fail(st, CHILD_FDS, errno);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        child_fail(st, CHILD_FDS, errno);
    if (c->dir && chdir(c->dir) < 0) child_fail(st, CHILD_CHDIR, errno);
    close_others(st, c->maxfd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* The PATH walk follows glibc's execvpe: skip entries that do not have the program,
     * remember EACCES, stop at any other error. */
    int e = ENOENT, eacces = 0;
    for (char *const *cand = c->paths; *cand; cand++) {
        execve(*cand, c->argv, c->envp);
        e = errno;
        if (e == EACCES) {
            eacces = 1;
            continue;
        }
        if (e == ENOENT || e == ENOTDIR || e == ESTALE || e == ENODEV || e == ETIMEDOUT)
            continue;
        child_fail(st, CHILD_EXEC, e);
    }
    child_fail(st, CHILD_EXEC, eacces ? EACCES : e);
}

/* ---- the parent ------------------------------------------------------------------ */

static int open_null(int flags)
{
    return open("/dev/null", flags | O_CLOEXEC);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

int trial__spawn(const trial_spawn_t *sp, pid_t *pid_out, int *out_fd, char *err, size_t errlen)
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
    if ((in = open_null(O_RDONLY)) < 0) {
        trial__errf(err, errlen, "cannot open /dev/null: %s", strerror(errno));
        goto fail;
    }
    if (sp->stderr_log)
        errfd = open(sp->stderr_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    else
        errfd = open_null(O_WRONLY);
    if (errfd < 0) {
        trial__errf(err, errlen, "cannot open stderr log \"%s\": %s",
                    sp->stderr_log ? sp->stderr_log : "/dev/null", strerror(errno));
        goto fail;
    }
    if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(stp, O_CLOEXEC) < 0) {
        trial__errf(err, errlen, "cannot create a pipe: %s", strerror(errno));
        goto fail;
    }
    /* Only our end is non-blocking: the trial writes to an ordinary blocking pipe. */
    if (fcntl(outp[0], F_SETFL, fcntl(outp[0], F_GETFL) | O_NONBLOCK) < 0) {
        trial__errf(err, errlen, "cannot make the trial's stdout non-blocking: %s",
                    strerror(errno));
        goto fail;
    }
    struct rlimit rl;
    int maxfd = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        maxfd = rl.rlim_cur < (1u << 20) ? (int)rl.rlim_cur : (1 << 20);
    struct child c = {.argv = sp->argv,
                      .envp = envp,
                      .paths = paths,
                      .dir = sp->dir,
                      .in = in,
                      .out = outp[1],
                      .err = errfd,
                      .status = stp[1],
                      .parent = getpid(),
                      .maxfd = maxfd};

    /* All signals blocked across fork, so no handler of tune's runs in the child before
     * the child has reset them (libuv uv_spawn, tmux job_run). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = fork();
    if (pid == 0) child_run(&c);
    int fork_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        trial__errf(err, errlen, "cannot start \"%s\": fork: %s", prog, strerror(fork_errno));
        goto fail;
    }
    /* Both sides call setpgid, so the group exists whichever of them runs first (the job
     * control race). Failing here just means the child has done it and exec'd already. */
    setpgid(pid, pid);
    close_fd(&in);
    close_fd(&errfd);
    close_fd(&outp[1]);
    close_fd(&stp[1]);

    int msg[2];
    size_t got = 0;
    while (got < sizeof msg) {
        ssize_t r = read(stp[0], (char *)msg + got, sizeof msg - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close_fd(&stp[0]);
    if (got == sizeof msg) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        const char *why = strerror(msg[1]);
        switch (msg[0]) {
        case CHILD_EXEC:
            trial__errf(err, errlen, "cannot run \"%s\": %s", prog, why);
            rc = TRIAL_ENOENT;
            break;
        case CHILD_CHDIR:
            trial__errf(err, errlen, "cannot enter working directory \"%s\": %s", sp->dir, why);
            break;
        case CHILD_SETPGID:
            trial__errf(err, errlen, "cannot start \"%s\": setpgid: %s", prog, why);
            break;
        case CHILD_PDEATHSIG:
            trial__errf(err, errlen, "cannot start \"%s\": prctl(PR_SET_PDEATHSIG): %s", prog,
                        why);
            break;
        default:
            trial__errf(err, errlen, "cannot start \"%s\": redirecting its stdio: %s", prog,
                        why);
            break;
        }
        goto fail;
    }
    free(envp);
    free(paths);
    *pid_out = pid;
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

/* ---- the local executor's vtable -------------------------------------------------- */

static int local_start(trial_exec_t *ex, const trial_spawn_t *sp, trial_proc_t *p, char *err,
                       size_t errlen)
{
    (void)ex;
    int rc = trial__spawn(sp, &p->pid, &p->fd, err, errlen);
    if (rc == 0) p->pgid = p->pid;
    return rc;
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
    if (p->reaped || p->pid <= 0) return;
    trial__kill_group(p, SIGKILL);
    if (trial__reap(p, 1) != 1) p->reaped = 1; /* somebody else reaped it: nothing to wait */
}

static const struct trial_exec_ops local_ops = {
    .name = "local",
    .start = local_start,
    .fd = local_fd,
    .read = trial__read_pipe,
    .signal = trial__kill_group,
    .poll_exit = local_poll_exit,
    .exec_id = local_none,
    .node = local_none,
    .proc_free = local_proc_free,
    .exec_free = NULL,
};

int trial_exec_local_new(trial_exec_t **out, char *err, size_t errlen)
{
    if (!out) {
        trial__errf(err, errlen, "trial_exec_local_new: no result handle");
        return TRIAL_EINVAL;
    }
    trial_exec_t *ex = calloc(1, sizeof *ex);
    if (!ex) {
        trial__errf(err, errlen, "out of memory");
        return TRIAL_ERR;
    }
    ex->ops = &local_ops;
    *out = ex;
    return TRIAL_OK;
}
