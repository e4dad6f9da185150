/* spawner_run.c: the spawner's own side (spawner.c is tune's side and says why there is
 * one): a loop, in a fork of tune, that starts each trial tune asks for with vfork, sends
 * it tune's signals, reaps it, kills whatever it leaves behind, and answers. Not for:
 * anything tune itself runs.
 *
 * How it keeps the keeper's guarantees without a keeper per trial. A keeper (keeper.c) is
 * a child subreaper between tune and one trial, so that every descendant the trial
 * orphans, in its process group or not (setsid), is re-parented to it, reaped at once if
 * it ends (no zombies pile up in a long trial), and killed when the trial ends. The
 * spawner is one child subreaper for every trial, so an orphan comes to it without saying
 * whose it is. It tells by, in order: the orphan's process group (a trial's, which it
 * leaves only by setpgid or setsid), then TUNE_SPAWN_SLOT=<spawner pid>:<slot> in its
 * environment (/proc/<pid>/environ: what it was exec'd with, inherited from its trial
 * unless a program in between cleared it; tune puts it in every trial's environment). An
 * orphan of a running trial is left alone and reaped when it ends; one of a trial that
 * ended is SIGKILLed, and the trial's end is answered only once none is left, so that, as
 * with a keeper, nothing of a trial runs when tune learns it ended. An orphan that says
 * neither (its own session and a cleared environment) is killed once every trial that
 * could have left it has ended: those started before it was first seen.
 *
 * An orphan is first seen when the spawner looks at its children: whenever one of them
 * ends, and when a trial ends, which is when a trial's own children come to it (the
 * kernel re-parents them before the trial becomes a zombie); killing one re-parents its
 * children in turn, so it looks again at each reap, and every 5 ms while it kills.
 *
 * It allocates (glibc makes malloc safe in a fork's child) but takes no lock of tune's
 * and calls nothing of tune's but trial__trial_run. */
#include "trial/trial_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A trial the spawner started: running, or ended and its answer waiting for its orphans. */
struct trial {
    uint64_t slot;
    pid_t pid; /* leads its group; while running, unreaped, so the pid and group are its own */
    int ended;
    int status; /* once ended */
};

/* A launch held until the trial of slot `after` has ended (trial_start_after). */
struct held {
    struct trial__spawn_req h;
    char *body; /* the request after its header */
    size_t len;
    int fd[2]; /* the trial's stdout and stderr */
};

/* A child of the spawner that no trial leads: something a trial left behind. */
struct orphan {
    pid_t pid;
    uint64_t slot;   /* whose, or 0: unknown */
    uint64_t before; /* unknown: the last slot started when it was first seen */
    int seen;        /* in the last look */
};

struct spawner {
    pid_t self, parent;
    int req, rep;
    struct trial *t;
    size_t nt, tcap;
    struct orphan *o;
    size_t no, ocap;
    struct trial__spawn_rep *out; /* answers not yet written */
    size_t nout, outcap;
    struct held *held;
    size_t nheld, heldcap;
    uint64_t last_slot; /* the newest launch started (held ones start late) */
    int null_in;        /* /dev/null, every trial's stdin (tune sends only stdout, stderr) */
    int busy;           /* killing, or an end waits for its orphans: look again soon */
    char marker[64];    /* "TUNE_SPAWN_SLOT=<self>:" */
    size_t marker_len;
    char *buf;
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) return 0;
    size_t c = *cap ? 2 * *cap : 16;
    void *g = realloc(*v, c * size);
    if (!g) return -1;
    *v = g;
    *cap = c;
    return 0;
}

static void queue(struct spawner *s, struct trial__spawn_rep r)
{
    /* Without room tune learns of this only when the spawner is gone. */
    if (grow((void **)&s->out, &s->outcap, s->nout, sizeof *s->out) == 0) s->out[s->nout++] = r;
}

/* Writes the answers (24 bytes each: atomic). The pipe itself wakes tune: its loop polls
 * it (trial_exec_fd), so no SIGCHLD is needed, as one was when the keeper was tune's child
 * (a trial's stdout may reach EOF long before its end is known). */
static void flush(struct spawner *s)
{
    size_t done = 0;
    while (done < s->nout) {
        ssize_t w = write(s->rep, &s->out[done], sizeof *s->out);
        if (w < 0 && errno == EINTR) continue;
        if (w != (ssize_t)sizeof *s->out) break; /* EAGAIN: tune is behind; POLLOUT later */
        done++;
    }
    if (done == 0) return;
    memmove(s->out, s->out + done, (s->nout - done) * sizeof *s->out);
    s->nout -= done;
}

/* The running trial of that pid. An ended one's pid is free for reuse the moment it was
 * reaped (its answer may still wait for its orphans), so it is never matched by pid. */
static struct trial *by_pid(struct spawner *s, pid_t pid)
{
    for (size_t i = 0; i < s->nt; i++)
        if (s->t[i].pid == pid && !s->t[i].ended) return &s->t[i];
    return NULL;
}

static struct trial *by_slot(struct spawner *s, uint64_t slot)
{
    for (size_t i = 0; i < s->nt; i++)
        if (s->t[i].slot == slot) return &s->t[i];
    return NULL;
}

/* The slot in TUNE_SPAWN_SLOT=<self>:<slot> of pid's environment, or 0. */
static uint64_t environ_slot(struct spawner *s, pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    size_t n = 0;
    ssize_t r;
    while (n < TRIAL__SPAWN_MAX - 1 && (r = read(fd, s->buf + n, TRIAL__SPAWN_MAX - 1 - n)) != 0) {
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        n += (size_t)r;
    }
    close(fd);
    s->buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(s->buf + i) + 1)
        if (strncmp(s->buf + i, s->marker, s->marker_len) == 0) {
            uint64_t v = 0;
            for (const char *c = s->buf + i + s->marker_len; *c >= '0' && *c <= '9'; c++)
                v = v * 10 + (uint64_t)(*c - '0');
            return v;
        }
    return 0;
}

/* Whose is the orphan pid: its group's trial, else its environment's, else 0. */
static uint64_t whose(struct spawner *s, pid_t pid)
{
    /* A group id stays taken while the group has a member, so a group named after an
     * ended trial is still that trial's, unless a running trial has since been given that
     * pid (the ended trial's group had emptied): the running one's, then. */
    pid_t g = getpgid(pid);
    struct trial *t = g > 0 ? by_pid(s, g) : NULL;
    for (size_t i = 0; g > 0 && !t && i < s->nt; i++)
        if (s->t[i].pid == g) t = &s->t[i];
    return t ? t->slot : environ_slot(s, pid);
}

static int running_since(const struct spawner *s, uint64_t before)
{
    for (size_t i = 0; i < s->nt; i++)
        if (!s->t[i].ended && s->t[i].slot <= before) return 1;
    return 0;
}

static void start_held(struct spawner *s);

/* Finds the orphans among the spawner's children, kills those whose trial ended (or, not
 * knowing whose, every trial that could have left them), and answers each ended trial
 * that has none left. */
static void look(struct spawner *s)
{
    pid_t kids[512];
    int n = trial__keeper_children(s->self, kids, 512, 0);
    for (size_t i = 0; i < s->no; i++)
        s->o[i].seen = 0;
    for (int k = 0; k < n; k++) {
        if (by_pid(s, kids[k])) continue;
        size_t i = 0;
        while (i < s->no && s->o[i].pid != kids[k])
            i++;
        if (i == s->no) {
            if (grow((void **)&s->o, &s->ocap, s->no, sizeof *s->o) < 0) {
                kill(kids[k], SIGKILL); /* nowhere to remember it */
                continue;
            }
            s->o[s->no++] = (struct orphan){kids[k], whose(s, kids[k]), s->last_slot, 0};
        }
        s->o[i].seen = 1;
    }
    s->busy = n == 512; /* more children than seen: look again */
    for (size_t i = 0; i < s->no;) {
        struct orphan *o = &s->o[i];
        if (!o->seen && n >= 0) { /* no longer our child: reaped */
            *o = s->o[--s->no];
            continue;
        }
        struct trial *t = o->slot ? by_slot(s, o->slot) : NULL;
        int keep = o->slot ? t && !t->ended : running_since(s, o->before);
        if (!keep) {
            kill(o->pid, SIGKILL); /* our unreaped child: the pid cannot have been reused */
            s->busy = 1;
        }
        i++;
    }
    for (size_t i = 0; i < s->nt;) {
        struct trial *t = &s->t[i];
        int left = 0;
        for (size_t k = 0; k < s->no && t->ended && !left; k++)
            left = s->o[k].slot == t->slot;
        if (!t->ended || left) {
            s->busy |= t->ended;
            i++;
            continue;
        }
        queue(s, (struct trial__spawn_rep){t->slot, TRIAL__REP_ENDED, t->status, 0, 0});
        *t = s->t[--s->nt];
    }
    start_held(s);
}

/* Reaps whatever has ended: a trial (its group killed while it is a zombie), or an orphan.
 * Returns whether anything was. */
static int reap(struct spawner *s)
{
    int any = 0;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
            if (errno == EINTR) continue;
            break; /* ECHILD */
        }
        if (si.si_pid == 0) break;
        any = 1;
        struct trial *t = by_pid(s, si.si_pid);
        /* A zombie's pid, and so its group id, cannot be reused: the last moment its
         * group is safe to kill (a trial that forks and exits has its group killed). */
        if (t) kill(-si.si_pid, SIGKILL);
        int st = 0;
        pid_t w;
        do
            w = waitpid(si.si_pid, &st, 0);
        while (w < 0 && errno == EINTR);
        if (t && w == si.si_pid) {
            t->ended = 1;
            t->status = st;
        }
    }
    return any;
}

static void close_fds(int *fd, int n)
{
    for (int i = 0; i < n; i++)
        if (fd[i] >= 0) close(fd[i]);
}

/* Points v[0..n-1] at the next n strings of [*at, end) and ends v with NULL. */
static int take_strings(char **at, char *end, char **v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        char *z = memchr(*at, '\0', (size_t)(end - *at));
        if (!z) return -1;
        v[i] = *at;
        *at = z + 1;
    }
    v[n] = NULL;
    return 0;
}

static void launch(struct spawner *s, const struct trial__spawn_req *h, char *body, char *end,
                   int *fd)
{
    struct trial__spawn_rep r = {h->slot, TRIAL__REP_FAILED, TRIAL__FAIL_FDS, EINVAL, 0};
    size_t n = (size_t)h->nargv + h->nenv + h->npaths + 3;
    char **v = n < TRIAL__SPAWN_MAX ? malloc(n * sizeof *v) : NULL;
    char *at = body, *dir = NULL;
    char **argv = v, **envp = v ? v + h->nargv + 1 : NULL, **paths = v ? envp + h->nenv + 1 : NULL;
    int bad = !v || h->nargv == 0 || take_strings(&at, end, argv, h->nargv) < 0 ||
              take_strings(&at, end, envp, h->nenv) < 0 ||
              take_strings(&at, end, paths, h->npaths) < 0 ||
              (h->has_dir && !memchr(at, '\0', (size_t)(end - at)));
    if (!bad && h->has_dir) dir = at;
    if (!v) r.err = ENOMEM;
    if (!bad && grow((void **)&s->t, &s->tcap, s->nt, sizeof *s->t) < 0) {
        bad = 1;
        r.err = ENOMEM;
    }
    if (!bad) {
        struct trial__launch l = {.argv = argv,
                                  .envp = envp,
                                  .paths = paths,
                                  .dir = dir,
                                  .in = s->null_in,
                                  .out = fd[0],
                                  .err = fd[1],
                                  .parent = s->self,
                                  .relay = 0,
                                  .maxfd = h->maxfd};
        /* Why the child gave up, if it did, comes on a close-on-exec pipe: EOF means its
         * exec succeeded. vfork returns once it has exec'd or exited, so the read never
         * waits (under valgrind, where vfork is a fork, it waits for that). */
        int st[2] = {-1, -1}, why[2] = {0, 0};
        pid_t pid = -1, unused = -1;
        if (pipe2(st, O_CLOEXEC) == 0) {
            l.status = st[1];
            pid = vfork();
            if (pid == 0) trial__trial_run(&l, s->self, st[1]);
        }
        int e = errno;
        if (st[1] >= 0) close(st[1]);
        if (pid > 0) trial__read_status(st[0], &unused, &why[0], &why[1]);
        if (st[0] >= 0) close(st[0]);
        if (pid < 0) {
            r.value = TRIAL__FAIL_FORK;
            r.err = e;
        } else if (why[0] != 0) {
            r.value = why[0]; /* it exited 127: reaped as a leftover */
            r.err = why[1];
        } else {
            setpgid(pid, pid); /* both sides: the group exists before anything signals it */
            s->t[s->nt++] = (struct trial){h->slot, pid, 0, 0};
            if (h->slot > s->last_slot) s->last_slot = h->slot; /* a held launch is older */
            r.kind = TRIAL__REP_STARTED;
            r.value = (int32_t)pid;
            r.err = 0;
        }
    }
    queue(s, r);
    free(v);
    close_fds(fd, 2);
}

/* The held launches whose trial has ended (its end answered just now, or before the launch
 * came): started, in the order they came, each answered after that end. */
static void start_held(struct spawner *s)
{
    for (size_t i = 0; i < s->nheld;) {
        struct held *x = &s->held[i];
        if (by_slot(s, x->h.after)) {
            i++;
            continue;
        }
        struct held y = *x;
        memmove(x, x + 1, (s->nheld - i - 1) * sizeof *x);
        s->nheld--;
        launch(s, &y.h, y.body, y.body + y.len, y.fd);
        free(y.body);
    }
}

/* Holds a launch until its `after` trial has ended; 0 when it could not (then it is
 * started now: nothing is lost but the wait). */
static int hold(struct spawner *s, const struct trial__spawn_req *h, const char *body, size_t len,
                const int *fd)
{
    char *copy = malloc(len ? len : 1);
    if (!copy || grow((void **)&s->held, &s->heldcap, s->nheld, sizeof *s->held) < 0) {
        free(copy);
        return 0;
    }
    memcpy(copy, body, len);
    s->held[s->nheld++] = (struct held){*h, copy, len, {fd[0], fd[1]}};
    return 1;
}

/* Drops held launch `slot`, answered CANCELLED: 1, or 0 when none is held by that slot. */
static int drop_held(struct spawner *s, uint64_t slot)
{
    for (size_t i = 0; i < s->nheld; i++)
        if (s->held[i].h.slot == slot) {
            close_fds(s->held[i].fd, 2);
            free(s->held[i].body);
            memmove(&s->held[i], &s->held[i + 1], (s->nheld - i - 1) * sizeof *s->held);
            s->nheld--;
            queue(s, (struct trial__spawn_rep){slot, TRIAL__REP_CANCELLED, 0, 0, 0});
            return 1;
        }
    return 0;
}

static void send_signal(struct spawner *s, const struct trial__spawn_req *h)
{
    /* A SIGKILL of a held launch (its trial freed) drops it. */
    if (h->sig == SIGKILL && drop_held(s, h->slot)) return;
    struct trial *t = by_slot(s, h->slot);
    /* Unreaped: its group id is still its own. What a SIGKILL of the group misses (a
     * descendant that left it) is killed as the ended trial's orphan. */
    if (t && !t->ended && h->sig > 0 && h->sig < NSIG) kill(-t->pid, h->sig);
}

/* Reads one request; 0 when tune is gone or done with us. */
static int request(struct spawner *s)
{
    int fd[2] = {-1, -1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(4 * sizeof(int))];
    } c;
    struct iovec iov = {s->buf, TRIAL__SPAWN_MAX};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.b, .msg_controllen = sizeof c.b};
    ssize_t r = recvmsg(s->req, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (r < 0) return errno == EINTR || errno == EAGAIN;
    if (r == 0) return 0;
    /* A launch comes with the trial's stdout and stderr; its stdin is the spawner's own
     * /dev/null. */
    int nfd = 0;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h))
        if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
            int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int f;
                memcpy(&f, CMSG_DATA(h) + i * sizeof(int), sizeof f);
                if (nfd < 2)
                    fd[nfd++] = f;
                else
                    close(f);
            }
        }
    struct trial__spawn_req h;
    if ((size_t)r < sizeof h || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        close_fds(fd, 2);
        return 1; /* tune never sends these */
    }
    memcpy(&h, s->buf, sizeof h);
    if (h.type == TRIAL__REQ_LAUNCH && nfd == 2) {
        /* Held while its trial runs, or has ended with its end not yet answered. */
        if (!h.after || !by_slot(s, h.after) ||
            !hold(s, &h, s->buf + sizeof h, (size_t)r - sizeof h, fd))
            launch(s, &h, s->buf + sizeof h, s->buf + r, fd);
    } else {
        close_fds(fd, 2);
        if (h.type == TRIAL__REQ_SIGNAL) send_signal(s, &h);
        if (h.type == TRIAL__REQ_CANCEL) drop_held(s, h.slot);
    }
    return 1;
}

/* tune is gone, or done with us: every trial's group and every child killed, reaped, and
 * again until nothing is left (a killed process's children come to us), then exit. */
__attribute__((noreturn)) static void finish(struct spawner *s)
{
    for (;;) {
        for (size_t i = 0; i < s->nt; i++)
            if (!s->t[i].ended) kill(-s->t[i].pid, SIGKILL);
        pid_t kids[256];
        int n = trial__keeper_children(s->self, kids, 256, 0);
        for (int i = 0; i < n; i++)
            kill(kids[i], SIGKILL); /* our unreaped children: their pids are still theirs */
        int st;
        pid_t w;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
            struct trial *t = by_pid(s, w);
            if (t) t->ended = 1;
        }
        if (w < 0 && errno == ECHILD) _exit(0);
        struct timespec tick = {0, 5 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
}

/* Signals the spawner took from its signalfd: SIGCHLD only wakes it; the parent-death
 * signal is looked at through getppid(). Anything somebody sent the spawner itself (a
 * user's `kill` of what ps shows as tune-spawner) was meant for the trials, as a keeper
 * passed its own on to its trial: every running trial's group gets it. */
static void took_signals(struct spawner *s, int sfd)
{
    struct signalfd_siginfo si[8];
    ssize_t r;
    while ((r = read(sfd, si, sizeof si)) > 0)
        for (size_t k = 0; k < (size_t)r / sizeof *si; k++) {
            int sig = (int)si[k].ssi_signo;
            int sent = si[k].ssi_code == SI_USER || si[k].ssi_code == SI_QUEUE;
            if (sig == SIGCHLD || sig == TRIAL__RELAY_SIG || sig == SIGPIPE || !sent) continue;
            for (size_t i = 0; i < s->nt; i++)
                if (!s->t[i].ended) kill(-s->t[i].pid, sig);
        }
}

void trial__spawner_run(int req, int rep, pid_t parent)
{
    /* Every signal stays blocked (tune blocked them across the fork) and comes through a
     * signalfd. The trials start with every disposition at its default and the mask
     * cleared before exec. A group of its own, as a keeper has: a kill of tune's group, or
     * the terminal's ^C, is tune's to handle, and tune stops the trials itself. */
    trial__reset_signals();
    setpgid(0, 0);
    prctl(PR_SET_NAME, "tune-spawner"); /* what ps and top show; the cmdline stays tune's */
    int keep[2] = {req, rep};
    trial__close_all_but(keep, 2, 65536); /* the database, other pipes, the terminal */
    /* 0, 1 and 2 taken, so that no fd of ours becomes one of them by accident. */
    for (int fd = open("/dev/null", O_RDWR | O_CLOEXEC); fd >= 0 && fd < 2;)
        fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    sigset_t set;
    sigfillset(&set);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    struct spawner s = {.self = getpid(),
                        .parent = parent,
                        .req = req,
                        .rep = rep,
                        .null_in = open("/dev/null", O_RDONLY | O_CLOEXEC)};
    int ml = snprintf(s.marker, sizeof s.marker, "TUNE_SPAWN_SLOT=%ld:", (long)s.self);
    s.marker_len = ml > 0 ? (size_t)ml : 0;
    s.buf = malloc(TRIAL__SPAWN_MAX);
    if (sfd < 0 || s.null_in < 0 || !s.buf || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 ||
        prctl(PR_SET_PDEATHSIG, TRIAL__RELAY_SIG) < 0 || getppid() != parent)
        _exit(0); /* tune reads EOF on the answers and starts trials itself */
    for (;;) {
        struct pollfd pf[3] = {{req, POLLIN, 0}, {sfd, POLLIN, 0}, {rep, 0, 0}};
        if (s.nout) pf[2].events = POLLOUT;
        if (poll(pf, 3, s.busy ? 5 : -1) < 0 && errno != EINTR) finish(&s);
        if (pf[1].revents) took_signals(&s, sfd);
        if (getppid() != parent) finish(&s); /* tune is gone (its death signal woke us) */
        int ended = reap(&s);
        if (pf[0].revents && !request(&s)) finish(&s);
        if (ended || s.busy) look(&s);
        flush(&s);
        if (pf[2].revents & (POLLERR | POLLHUP)) finish(&s); /* nobody reads the answers */
    }
}
