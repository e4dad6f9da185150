/* spawner.c: tune's side of the local executor's spawner, one long-lived child of tune that
 * starts every trial (spawner_run.c is the spawner's side): starting it, a launch, a signal,
 * reaping, ending it. Not for: what tune builds before a launch (exec_local.c).
 *
 * Why. Before it, tune forked a keeper per trial (keeper.c), and the keeper vforked the
 * trial, and tune spent several times longer blocked in trial_start than a posix_spawn of
 * the same program takes (bench/tuner/README.md, "one spawner instead of a keeper per
 * trial", has the numbers): the fork copied tune's page tables and write-protected its
 * memory (a copy-on-write fault, on this kind of VM a TLB-flush IPI, for every page tune
 * wrote next), and each trial cost a second process, forked, scheduled and torn down,
 * whose every step the launch and the end waited on. The spawner is forked once, at the executor's
 * first trial, and vforks each trial itself, as posix_spawn does; spawner_run.c says how it still
 * kills whatever a trial leaves behind without a keeper per trial.
 *
 * The protocol (trial_int.h): tune sends requests on a SOCK_SEQPACKET socket (one message
 * each, a launch's three fds passed with SCM_RIGHTS), taken in the order sent, so a SIGKILL
 * never overtakes the launch it is for; the spawner answers on a pipe: started (the pid)
 * or why not, for each launch, which trial_start waits for as it waited for the keeper's
 * status pipe (or, no_wait, takes in later); ended (the wait status) for each trial. The
 * pipe is trial_exec_fd: tune's loop polls it, which is what a SIGCHLD did when the keeper
 * was tune's child. The trial is not tune's
 * child, so tune never signals or waits for its pid itself: the spawner knows when that pid
 * stops being the trial's.
 *
 * A launch may be held behind a running trial (trial_start_after; tune holds one only
 * behind a trial it is stopping): the spawner starts it the moment that trial's end is
 * answered, so the next trial does not wait for tune to wake, read the end and ask (three
 * wake-ups in a row); trial_cancel takes it back if it has not happened.
 *
 * The spawner dies with tune (its parent-death signal, or EOF on its socket) after killing
 * every trial and what they left, and dropping every held launch; and a trial dies with the
 * spawner (PR_SET_PDEATHSIG). */
#include "trial/trial_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct waiter {
    uint64_t slot;
    trial_proc_t *p;
    char *prog, *dir; /* a no_wait start's, for the message if it fails (else NULL) */
};

struct trial__spawner {
    pid_t pid; /* the spawner: tune's child */
    int req;   /* tune's end of the request socket */
    int rep;   /* read end of the answer pipe, non-blocking */
    int dead;  /* EOF on the answers: the spawner is gone, and every trial with it */
    uint64_t next_slot;
    int maxfd;        /* trial__fd_bound, asked once */
    struct waiter *w; /* trials whose end is awaited */
    size_t nw, wcap;
    /* The answer to the launch being waited for (slot 0: none). */
    uint64_t want;
    int got;
    struct trial__spawn_rep answer;
    char *buf; /* the packed launch */
};

static void close_fds(int *fd, int n)
{
    for (int i = 0; i < n; i++)
        if (fd[i] >= 0) close(fd[i]);
}

int trial__spawner_new(trial__spawner_t **out, char *err, size_t errlen)
{
    trial__spawner_t *sv = calloc(1, sizeof *sv);
    int sk[2] = {-1, -1}, rp[2] = {-1, -1};
    if (!sv || !(sv->buf = malloc(TRIAL__SPAWN_MAX))) {
        trial__errf(err, errlen, "out of memory");
        goto fail;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sk) < 0 ||
        pipe2(rp, O_CLOEXEC | O_NONBLOCK) < 0) {
        trial__errf(err, errlen, "cannot create the spawner's socket or pipe: %s", strerror(errno));
        goto fail;
    }
    /* All signals blocked across fork: no handler of tune's runs in the spawner, which
     * keeps them blocked and takes the two it wants from a signalfd. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t self = getpid(), pid = fork();
    if (pid == 0) trial__spawner_run(sk[1], rp[1], self);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        trial__errf(err, errlen, "cannot start the spawner: fork: %s", strerror(e));
        goto fail;
    }
    setpgid(pid, pid); /* as the spawner does: both sides, so no kill of ours races it */
    close(sk[1]);
    close(rp[1]);
    sv->pid = pid;
    sv->req = sk[0];
    sv->rep = rp[0];
    sv->next_slot = 1;
    sv->maxfd = trial__fd_bound();
    *out = sv;
    return TRIAL_OK;
fail:
    close_fds(sk, 2);
    close_fds(rp, 2);
    if (sv) free(sv->buf);
    free(sv);
    return TRIAL_ERR;
}

void trial__spawner_free(trial__spawner_t *sv)
{
    if (!sv) return;
    close(sv->req); /* EOF: the spawner exits */
    int st;
    while (waitpid(sv->pid, &st, 0) < 0 && errno == EINTR) {
    }
    close(sv->rep);
    free(sv->w);
    free(sv->buf);
    free(sv);
}

#define MARKER "TUNE_SPAWN_SLOT="

/* Packs v's strings at `at` (NULL: only counts), leaving out `skip`-prefixed ones. */
static size_t put_strings(char *at, char *const *v, uint32_t *n, const char *skip)
{
    size_t used = 0, sl = skip ? strlen(skip) : 0;
    *n = 0;
    for (size_t i = 0; v && v[i]; i++) {
        if (skip && strncmp(v[i], skip, sl) == 0) continue;
        size_t k = strlen(v[i]) + 1;
        if (at) memcpy(at + used, v[i], k);
        used += k;
        (*n)++;
    }
    return used;
}

static int send_req(trial__spawner_t *sv, const void *buf, size_t len, const int *fd, int nfd)
{
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(2 * sizeof(int))];
    } c;
    memset(&c, 0, sizeof c);
    struct iovec iov = {(void *)buf, len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfd > 0) {
        m.msg_control = c.b;
        m.msg_controllen = CMSG_SPACE((size_t)nfd * sizeof(int));
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN((size_t)nfd * sizeof(int));
        memcpy(CMSG_DATA(h), fd, (size_t)nfd * sizeof(int));
    }
    ssize_t r;
    do
        r = sendmsg(sv->req, &m, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    return r == (ssize_t)len ? 0 : -1;
}

static void unwatch(trial__spawner_t *sv, size_t i)
{
    free(sv->w[i].prog);
    free(sv->w[i].dir);
    sv->w[i] = sv->w[--sv->nw];
}

/* A no_wait start's outcome, for waiter i: the pid, or why not (the trial has then ended,
 * with 127 as a failed exec's child exits). */
static void started(trial__spawner_t *sv, size_t i, const struct trial__spawn_rep *m)
{
    trial_proc_t *p = sv->w[i].p;
    p->starting = 0;
    p->held = 0;
    if (m->kind == TRIAL__REP_CANCELLED) { /* it never ran */
        p->cancelled = 1;
        trial__set_exit(p, SIGKILL);
        unwatch(sv, i);
        return;
    }
    if (m->kind == TRIAL__REP_STARTED) {
        p->trial_pid = (pid_t)m->value;
        return;
    }
    char *argv[] = {sv->w[i].prog ? sv->w[i].prog : "?", NULL}, msg[512];
    trial_spawn_t sp = {.argv = argv, .dir = sv->w[i].dir};
    trial__launch_error(&sp, m->value, m->err, msg, sizeof msg);
    free(p->start_err);
    p->start_err = strdup(msg);
    trial__set_exit(p, 127 << 8);
    unwatch(sv, i);
}

/* Reads every answer there is: an end ends the trial it names; the launch's answer is
 * kept for trial__spawner_launch. */
static void drain(trial__spawner_t *sv)
{
    struct trial__spawn_rep m[64];
    while (!sv->dead) {
        ssize_t r = read(sv->rep, m, sizeof m);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return; /* EAGAIN */
        if (r == 0) {
            /* The spawner is gone, and it killed every trial first (or, killed itself,
             * took them along: their parent-death signal). */
            sv->dead = 1;
            while (sv->nw > 0) {
                sv->w[0].p->starting = 0;
                trial__set_exit(sv->w[0].p, SIGKILL);
                unwatch(sv, 0);
            }
            return;
        }
        for (size_t k = 0; k < (size_t)r / sizeof *m; k++) {
            if (m[k].kind != TRIAL__REP_ENDED) {
                if (m[k].slot == sv->want) {
                    sv->answer = m[k];
                    sv->got = 1;
                    continue;
                }
                for (size_t i = 0; i < sv->nw; i++)
                    if (sv->w[i].slot == m[k].slot && sv->w[i].p->starting) {
                        started(sv, i, &m[k]);
                        break;
                    }
                continue;
            }
            for (size_t i = 0; i < sv->nw; i++)
                if (sv->w[i].slot == m[k].slot) {
                    trial__set_exit(sv->w[i].p, m[k].value);
                    unwatch(sv, i);
                    break;
                }
        }
    }
}

/* Waits for the answer pipe to have something (or EOF). */
static int wait_answer(trial__spawner_t *sv)
{
    struct pollfd pf = {sv->rep, POLLIN, 0};
    if (poll(&pf, 1, -1) < 0 && errno != EINTR) return TRIAL_ERR;
    return TRIAL_OK;
}

int trial__spawner_launch(trial__spawner_t *sv, const struct trial__launch *l,
                          const trial_spawn_t *sp, const trial_proc_t *after, trial_proc_t *p,
                          pid_t *pid, char *err, size_t errlen)
{
    if (sv->dead) return 1;
    if (after && (after->sv != sv || !sp->no_wait)) return 1;
    struct trial__spawn_req h = {.type = TRIAL__REQ_LAUNCH,
                                 .maxfd = sv->maxfd,
                                 .has_dir = l->dir != NULL,
                                 .after = after ? after->slot : 0};
    /* How the spawner tells a trial's orphans apart (spawner_run.c): this trial's marker,
     * in place of any it inherited (a trial that runs tune itself). */
    char marker[64];
    int ml = snprintf(marker, sizeof marker, MARKER "%ld:%llu", (long)sv->pid,
                      (unsigned long long)sv->next_slot);
    size_t len = sizeof h + put_strings(NULL, l->argv, &h.nargv, NULL) +
                 put_strings(NULL, l->envp, &h.nenv, MARKER) + (size_t)ml + 1 +
                 put_strings(NULL, l->paths, &h.npaths, NULL) + (l->dir ? strlen(l->dir) + 1 : 0);
    if (ml <= 0 || len > TRIAL__SPAWN_MAX) return 1;
    if (sv->nw == sv->wcap) {
        size_t cap = sv->wcap ? 2 * sv->wcap : 16;
        struct waiter *w = realloc(sv->w, cap * sizeof *w);
        if (!w) {
            trial__errf(err, errlen, "out of memory");
            return TRIAL_ERR;
        }
        sv->w = w;
        sv->wcap = cap;
    }
    h.slot = sv->next_slot++;
    char *at = sv->buf + sizeof h;
    at += put_strings(at, l->argv, &h.nargv, NULL);
    at += put_strings(at, l->envp, &h.nenv, MARKER);
    memcpy(at, marker, (size_t)ml + 1);
    at += ml + 1;
    h.nenv++;
    at += put_strings(at, l->paths, &h.npaths, NULL);
    if (l->dir) memcpy(at, l->dir, strlen(l->dir) + 1);
    memcpy(sv->buf, &h, sizeof h);
    /* stdin is the spawner's /dev/null: one open for all trials, not one each. */
    int fd[2] = {l->out, l->err};
    if (send_req(sv, sv->buf, len, fd, 2) < 0) return 1; /* gone, or too big after all */
    /* Awaited from now on: its end may come in the same read as its start. */
    p->reaped = 0;
    sv->w[sv->nw++] = (struct waiter){h.slot, p, NULL, NULL};
    if (sp->no_wait) {
        /* The outcome comes with a later drain (trial__spawner_poll, or the reap). */
        struct waiter *w = &sv->w[sv->nw - 1];
        w->prog = strdup(l->argv[0]);
        w->dir = l->dir ? strdup(l->dir) : NULL;
        p->starting = 1;
        p->held = after != NULL;
        p->sv = sv;
        p->slot = h.slot;
        *pid = -1;
        return TRIAL_OK;
    }
    sv->want = h.slot;
    sv->got = 0;
    while (!sv->got && !sv->dead) {
        drain(sv);
        if (!sv->got && !sv->dead && wait_answer(sv) != TRIAL_OK) break;
    }
    sv->want = 0;
    if (!sv->got || sv->answer.kind == TRIAL__REP_FAILED) {
        trial__spawner_forget(sv, p);
        p->reaped = 0;
        p->exit.code = p->exit.signal = 0;
    }
    if (!sv->got) {
        /* Gone meanwhile: whether the trial started is unknown, and if it did, the spawner
         * killed it on its way out. */
        trial__errf(err, errlen, "cannot start \"%s\": the spawner process ended", l->argv[0]);
        return TRIAL_ERR;
    }
    if (sv->answer.kind == TRIAL__REP_FAILED)
        return trial__launch_error(sp, sv->answer.value, sv->answer.err, err, errlen);
    p->sv = sv;
    p->slot = h.slot;
    *pid = (pid_t)sv->answer.value;
    return TRIAL_OK;
}

int trial__spawner_fd(const trial__spawner_t *sv)
{
    return sv->dead ? -1 : sv->rep;
}

void trial__spawner_poll(trial__spawner_t *sv)
{
    drain(sv);
}

int trial__spawner_reap(trial__spawner_t *sv, trial_proc_t *p, int block)
{
    for (;;) {
        drain(sv);
        if (p->reaped) return 1;
        if (!block) return 0;
        if (wait_answer(sv) != TRIAL_OK) return TRIAL_ERR;
    }
}

int trial__spawner_signal(trial__spawner_t *sv, trial_proc_t *p, int sig)
{
    if (sv->dead) return TRIAL_OK; /* every trial is gone with it */
    struct trial__spawn_req h = {.type = TRIAL__REQ_SIGNAL, .sig = sig, .slot = p->slot};
    if (send_req(sv, &h, sizeof h, NULL, 0) == 0) return TRIAL_OK;
    return errno == EPIPE || errno == ECONNRESET ? TRIAL_OK : TRIAL_ERR;
}

int trial__spawner_cancel(trial__spawner_t *sv, trial_proc_t *p)
{
    if (!p->held) return 0;
    struct trial__spawn_req h = {.type = TRIAL__REQ_CANCEL, .slot = p->slot};
    /* If the request cannot go, the spawner is gone: the EOF below says so. */
    if (!sv->dead) send_req(sv, &h, sizeof h, NULL, 0);
    while (p->held && !sv->dead) {
        drain(sv);
        if (p->held && !sv->dead && wait_answer(sv) != TRIAL_OK) break;
    }
    if (p->held && sv->dead) { /* gone before it started it: it never ran */
        p->held = 0;
        p->cancelled = 1;
    }
    return p->cancelled;
}

void trial__spawner_forget(trial__spawner_t *sv, trial_proc_t *p)
{
    for (size_t i = 0; i < sv->nw; i++)
        if (sv->w[i].p == p) {
            unwatch(sv, i);
            return;
        }
}
