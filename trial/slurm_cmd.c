/* slurm_cmd.c: runs Slurm's own commands (sinfo, scontrol, squeue, scancel) for the Slurm
 * executor: to completion with a timeout (checks before a run, cleanup; trial__slurm_cmd
 * turns a failure into a message), detached (scancel from inside the event loop), or
 * collected without blocking (the watchdog).
 * Not for: starting trials (trial__spawn does that, with the trial's logs and group). */
#include "trial/slurm_int.h"
#include "trial/trial_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CMD_MAX_OUT (1u << 20)
#define SLURM_CMD_TIMEOUT_S 30.0 /* sinfo/scontrol/squeue/scancel before and after a run */

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Between fork and exec (async-signal-safe only): default signal handling, the given
 * fds on 0/1/2, nothing else open. Never returns. */
__attribute__((noreturn)) static void exec_child(char *const *argv, int in, int out, int err,
                                                 int die_with_parent)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP) sigaction(s, &sa, NULL);
    if (die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Move the sources above 2 first, so that no dup2 overwrites one still needed. */
    int fds[3] = {in, out, err};
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0 && fds[i] < 3) fds[i] = fcntl(fds[i], F_DUPFD, 3);
    for (int i = 0; i < 3; i++)
        if (fds[i] < 0 || dup2(fds[i], i) < 0) _exit(127);
    close_range(3, ~0u, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execv(argv[0], argv);
    _exit(127);
}

/* Forks with every signal blocked (so no handler of tune's runs in the child), as
 * trial__spawn does. Returns the pid in the parent, 0 in the child, -1 on failure. */
static pid_t fork_blocked(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, old);
    pid_t pid = fork();
    if (pid != 0) {
        int e = errno;
        pthread_sigmask(SIG_SETMASK, old, NULL);
        errno = e;
    }
    return pid;
}

static int reap(pid_t pid, int flags)
{
    int st;
    pid_t w;
    do
        w = waitpid(pid, &st, flags);
    while (w < 0 && errno == EINTR);
    if (w <= 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int buf_add(char **b, size_t *len, size_t *cap, const char *s, size_t n)
{
    /* The rest is dropped. Written so that n never wraps below zero: GCC 12 at -O3 read
     * the old "CMD_MAX_OUT - *len" as a possible 1 MiB read of "" (stringop-overread). */
    if (*len >= CMD_MAX_OUT)
        n = 0;
    else if (n > CMD_MAX_OUT - *len)
        n = CMD_MAX_OUT - *len;
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 1024;
        while (c < *len + n + 1)
            c *= 2;
        char *nb = realloc(*b, c);
        if (!nb) return -1;
        *b = nb;
        *cap = c;
    }
    memcpy(*b + *len, s, n);
    *len += n;
    (*b)[*len] = '\0';
    return 0;
}

int trial__cmd_run(char *const *argv, double timeout_s, int *status, char **out, char **errout,
                   char *err, size_t errlen)
{
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, in = -1;
    char *ob = NULL, *eb = NULL;
    size_t ol = 0, oc = 0, el = 0, ec = 0;
    *status = -1;
    if (out) *out = NULL;
    if (errout) *errout = NULL;
    if (access(argv[0], X_OK) != 0) {
        trial__errf(err, errlen, "cannot run %s: %s", argv[0], strerror(errno));
        return TRIAL_ENOENT;
    }
    if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 ||
        (in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        trial__errf(err, errlen, "cannot run %s: %s", argv[0], strerror(errno));
        goto fail;
    }
    sigset_t old;
    pid_t pid = fork_blocked(&old);
    if (pid == 0) exec_child(argv, in, po[1], pe[1], 1);
    if (pid < 0) {
        trial__errf(err, errlen, "cannot run %s: fork: %s", argv[0], strerror(errno));
        goto fail;
    }
    close(po[1]);
    close(pe[1]);
    close(in);
    po[1] = pe[1] = in = -1;
    double deadline = mono() + timeout_s;
    int open_fds = 2, timed_out = 0;
    while (open_fds > 0) {
        struct pollfd pf[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
        int ms = (int)((deadline - mono()) * 1000);
        if (ms <= 0) {
            timed_out = 1;
            break;
        }
        int r = poll(pf, 2, ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char tmp[4096];
            ssize_t k = read(pf[i].fd, tmp, sizeof tmp);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                close(pf[i].fd);
                if (i == 0) po[0] = -1;
                if (i == 1) pe[0] = -1;
                open_fds--;
                continue;
            }
            if (i == 0 && buf_add(&ob, &ol, &oc, tmp, (size_t)k) != 0) goto nomem_kill;
            if (i == 1 && buf_add(&eb, &el, &ec, tmp, (size_t)k) != 0) goto nomem_kill;
        }
    }
    if (timed_out) kill(pid, SIGKILL);
    int st = reap(pid, 0);
    *status = timed_out ? -1 : st;
    if (po[0] >= 0) close(po[0]);
    if (pe[0] >= 0) close(pe[0]);
    if (!ob) buf_add(&ob, &ol, &oc, "", 0);
    if (!eb) buf_add(&eb, &el, &ec, "", 0);
    if (out)
        *out = ob;
    else
        free(ob);
    if (errout)
        *errout = eb;
    else
        free(eb);
    return TRIAL_OK;

nomem_kill:
    kill(pid, SIGKILL);
    reap(pid, 0);
    trial__errf(err, errlen, "out of memory reading %s's output", argv[0]);
fail:
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0) close(po[i]);
        if (pe[i] >= 0) close(pe[i]);
    }
    if (in >= 0) close(in);
    free(ob);
    free(eb);
    return TRIAL_ERR;
}

int trial__cmd_detach(char *const *argv, int stderr_fd)
{
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul < 0) return TRIAL_ERR;
    sigset_t old;
    pid_t pid = fork_blocked(&old);
    if (pid == 0) {
        /* The middle child: start the command and leave at once, so the command is
         * adopted by init (or a subreaper) and tune has no zombie to collect later. */
        setsid();
        pid_t g = fork();
        if (g == 0) exec_child(argv, nul, nul, stderr_fd >= 0 ? stderr_fd : nul, 0);
        _exit(g < 0 ? 1 : 0);
    }
    close(nul);
    if (pid < 0) return TRIAL_ERR;
    return reap(pid, 0) == 0 ? TRIAL_OK : TRIAL_ERR;
}

int trial__cmd_start(trial__cmd_async_t *c, char *const *argv)
{
    int p[2], in;
    if (pipe2(p, O_CLOEXEC) < 0) return TRIAL_ERR;
    if ((in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        close(p[0]);
        close(p[1]);
        return TRIAL_ERR;
    }
    sigset_t old;
    pid_t pid = fork_blocked(&old);
    if (pid == 0) exec_child(argv, in, p[1], p[1], 1);
    close(p[1]);
    close(in);
    if (pid < 0) {
        close(p[0]);
        return TRIAL_ERR;
    }
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    c->pid = pid;
    c->fd = p[0];
    c->len = 0;
    if (c->buf) c->buf[0] = '\0';
    c->status = -1;
    return TRIAL_OK;
}

int trial__cmd_poll(trial__cmd_async_t *c)
{
    if (c->pid <= 0) return 1;
    while (c->fd >= 0) {
        char tmp[4096];
        ssize_t k = read(c->fd, tmp, sizeof tmp);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (k <= 0) {
            close(c->fd);
            c->fd = -1;
            break;
        }
        if (buf_add(&c->buf, &c->len, &c->cap, tmp, (size_t)k) != 0) {
            close(c->fd);
            c->fd = -1;
            break;
        }
    }
    /* Output closed: the command has ended or is about to; reap without blocking. */
    int st = reap(c->pid, WNOHANG);
    if (st < 0) return 0;
    c->status = st;
    c->pid = 0;
    if (!c->buf) buf_add(&c->buf, &c->len, &c->cap, "", 0);
    return 1;
}

void trial__cmd_release(trial__cmd_async_t *c)
{
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        reap(c->pid, 0);
    }
    c->pid = 0;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

/* The first line of s, trimmed, for messages ("" when none). */
void trial__first_line(const char *s, char *out, size_t n)
{
    while (s && (*s == ' ' || *s == '\n' || *s == '\t'))
        s++;
    size_t k = s ? strcspn(s, "\n") : 0;
    while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\r'))
        k--;
    snprintf(out, n, "%.*s", (int)k, s ? s : "");
}

int trial__slurm_cmd(char *const *argv, char **out, char *err, size_t errlen)
{
    int status;
    char *eb = NULL;
    int rc = trial__cmd_run(argv, SLURM_CMD_TIMEOUT_S, &status, out, &eb, err, errlen);
    if (rc != 0) return rc;
    const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (status != 0) {
        char line[300];
        trial__first_line(eb && *eb ? eb : *out, line, sizeof line);
        if (status < 0)
            trial__errf(err, errlen, "%s did not answer within %.0f s", name, SLURM_CMD_TIMEOUT_S);
        else
            trial__errf(err, errlen, "%s: %s", name, line[0] ? line : "failed");
        free(*out);
        *out = NULL;
        free(eb);
        return TRIAL_ERR;
    }
    free(eb);
    return TRIAL_OK;
}
