/* exec_proc.c: the loop's executor of real processes (sched_exec_ops_t, scheduler/sched.h),
 * one for every executor of trial.h: the argv rendered from the command template, the
 * trial's environment built once (env.c) whichever executor runs it, the logs and
 * config.json opened beneath the trial's folder (dirs.h), and waiting as a poll() over
 * the trials' stdout and the executor's own news. It also runs the executor's watchdog
 * (trial_health) and reports late placement (Slurm's job ids).
 * Not for: deciding anything about trials (the loop and its policy), or how an executor
 * starts a process (its backend). */
#include "trial/trial_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirs/dirs.h"
#include "scheduler/sched.h"
#include "search/render.h"
#include "search/settings.h"
#include "search/space.h"

struct pproc {
    int64_t no;
    trial_proc_t *p;
    int port;
    int eof, exited, killed, released;
    int ended;     /* its end reported */
    int64_t after; /* held behind this running trial until its end is reported; -1 none */
    int pid_known; /* its pid reported (at the start, or by events.pid) */
    trial_exit_t ex;
    double health_at; /* CLOCK_MONOTONIC: last trial_health check */
    char exec_id[96];
    char why[512]; /* the watchdog's verdict, "" if none */
};

struct proc_exec {
    sched_exec_ops_t ops; /* its own: the name and held starts are its executor's */
    trial_exec_t *tx;
    const space_t *sp;
    struct pproc *v; /* running (and released, until compacted) */
    size_t n, cap;
    struct pollfd *pfd;
    size_t *pidx;
    size_t pcap;
};

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The files tune writes in a trial's folder, each opened beneath the folder tune holds
 * open (dirs.h, O_NOFOLLOW): nothing there is resolved by its path's text, so a symlink a
 * trial planted under one of these names is refused, never followed. */
struct tfiles {
    int dir, out, err; /* -1: not open */
};

static void tfiles_close(struct tfiles *f)
{
    if (f->dir >= 0) close(f->dir);
    if (f->out >= 0) close(f->out);
    if (f->err >= 0) close(f->err);
    f->dir = f->out = f->err = -1;
}

static int open_log(int dfd, const char *name)
{
    return openat(dfd, name, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0666);
}

/* A configuration too long for one environment string goes to config.json beneath the
 * trial's folder (written whole, then renamed: a trial never reads half of it), and the
 * trial gets TUNE_CONFIG_FILE naming it instead of TUNE_CONFIG. 0, or -1 with err. */
static int write_config_file(int dfd, const char *dir, const char *cfg, char *err, size_t errlen)
{
    static const char tmp[] = ".config.json.tmp";
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    size_t len = strlen(cfg), off = 0;
    int ok = fd >= 0;
    while (ok && off < len) {
        ssize_t w = write(fd, cfg + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) ok = 0;
        off += w > 0 ? (size_t)w : 0;
    }
    if (fd >= 0 && close(fd) != 0) ok = 0;
    if (!ok || renameat(dfd, tmp, dfd, "config.json") != 0) {
        snprintf(err, errlen, "cannot write the configuration to %.400s/config.json: %s", dir,
                 strerror(errno));
        unlinkat(dfd, tmp, 0);
        return -1;
    }
    return 0;
}

static struct pproc *find(struct proc_exec *x, int64_t no)
{
    for (size_t i = 0; i < x->n; i++)
        if (!x->v[i].released && x->v[i].no == no) return &x->v[i];
    return NULL;
}

static int port_in_use(const struct proc_exec *x, int port)
{
    for (size_t i = 0; i < x->n; i++)
        if (!x->v[i].released && x->v[i].port == port) return 1;
    return 0;
}

/* A MASTER_PORT that no other running trial has and that nothing listens on now, so
 * that torchrun-style rendezvous of concurrent trials never collide. */
static int pick_port(const struct proc_exec *x, int64_t no)
{
    for (int k = 0; k < 2000; k++) {
        int port = 29500 + (int)((no + k) % 20000);
        if (port_in_use(x, port)) continue;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return port;
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        close(fd);
        if (ok) return port;
    }
    return 29500 + (int)(no % 20000);
}

/* Drops released entries (never while a wait is walking the array). */
static void compact(struct proc_exec *x)
{
    /* An entry carries its messages, hundreds of bytes: only those behind a released one
     * move, never every entry onto itself (bench/tuner/README.md, "held starts"). */
    size_t k = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (x->v[i].released) continue;
        if (k != i) x->v[k] = x->v[i];
        k++;
    }
    x->n = k;
}

static int grow(struct proc_exec *x)
{
    if (x->n < x->cap) return 0;
    size_t cap = x->cap ? x->cap * 2 : 16;
    struct pproc *v = realloc(x->v, cap * sizeof *v);
    if (!v) return -1;
    x->v = v;
    x->cap = cap;
    return 0;
}

static int proc_start(void *self, const sched_start_t *s, sched_started_t *out, char *err,
                      size_t errlen)
{
    struct proc_exec *x = self;
    compact(x);
    if (grow(x) != 0) {
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    /* Refused before anything is made for it (its folder, argv, environment). */
    const struct pproc *pred = s->held ? find(x, s->after) : NULL;
    if (s->held && (!pred || !trial_exec_can_hold(x->tx))) {
        snprintf(err, errlen, "this executor cannot hold a start");
        return SCHED_EAGAIN;
    }
    struct tfiles f = {-1, -1, -1};
    char **argv = NULL, **env = NULL;
    /* The configuration and the checkpoint path have no length limit of tune's own: each
     * is as long as it is (a config too long for the environment goes to a file). */
    char *cfg = NULL, *ckdir = NULL, *cfg_file = NULL;
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)s->trial_no);
    int rc = SCHED_EINVAL;
    if (trial_mkdirs(s->dir) != 0 || (f.dir = dirs_open(s->dir)) < 0) {
        snprintf(err, errlen, "cannot create trial directory %.400s: %s", s->dir, strerror(errno));
        goto done;
    }
    if (space_render_argv(x->sp, s->config, idbuf, s->dir, &argv, err, errlen) != 0) goto done;
    cfg = space_json_print(s->config);
    size_t dl = strlen(s->dir);
    ckdir = malloc(dl + sizeof "/checkpoints");
    cfg_file = malloc(dl + sizeof "/config.json");
    if (!cfg || !ckdir || !cfg_file) goto nomem;
    snprintf(ckdir, dl + sizeof "/checkpoints", "%s/checkpoints", s->dir);
    snprintf(cfg_file, dl + sizeof "/config.json", "%s/config.json", s->dir);
    int cfg_in_file = strlen(cfg) > TRIAL__ENV_MAX;
    if (cfg_in_file && write_config_file(f.dir, s->dir, cfg, err, errlen) != 0) goto done;
    if (mkdirat(f.dir, "checkpoints", 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %.400s: %s", ckdir, strerror(errno));
        goto done;
    }
    const char *bad = (f.out = open_log(f.dir, "stdout.log")) < 0   ? "stdout"
                      : (f.err = open_log(f.dir, "stderr.log")) < 0 ? "stderr"
                                                                    : NULL;
    if (bad) {
        snprintf(err, errlen, "cannot open %s log \"%.400s/%s.log\": %s", bad, s->dir, bad,
                 strerror(errno));
        goto done;
    }
    const space_settings_t *set = x->sp ? space_settings(x->sp) : NULL;
    int port = pick_port(x, s->trial_no);
    struct trial__env_in ein = {
        .trial_no = s->trial_no,
        .experiment = s->experiment,
        .dir = s->dir,
        .ckpt_dir = ckdir,
        .config = cfg_in_file ? NULL : cfg,
        .config_file = cfg_in_file ? cfg_file : NULL,
        /* An executor that places GPUs itself gives the trial its own list. */
        .devices = x->tx->ops->places_gpus && s->gpus > 0 ? NULL
                   : s->devices                           ? s->devices
                                                          : "",
        .gpus = s->gpus,
        .cpus = s->cpus,
        .port = port,
        .resume_from = s->resume_from,
        /* pbt has a max_t only when it was given; fifo none. */
        .max_t = set && set->sched.type != SPACE_SCHED_FIFO ? set->sched.max_t : 0};
    if (!(env = trial__env_new(&ein))) goto nomem;
    trial_spawn_t sp = {.argv = argv,
                        .env = env,
                        .dir = s->dir,
                        .log_fds = 1,
                        .stdout_fd = f.out,
                        .stderr_fd = f.err,
                        .slice = {.name = s->name, .ranks = 1, .gpus = s->gpus, .cpus = s->cpus},
                        /* The exec is not waited for (the loop goes on with other trials
                         * meanwhile): a program that cannot run ends the trial with
                         * trial_start_error's reason, and the pid comes as events.pid. */
                        .no_wait = 1};
    trial_proc_t *p = NULL;
    int trc = trial_start_after(x->tx, &sp, pred ? pred->p : NULL, &p, err, errlen);
    if (trc != 0) {
        rc = pred && trc == TRIAL_EINVAL ? SCHED_EAGAIN : SCHED_EINVAL;
        goto done;
    }
    struct pproc *e = &x->v[x->n++];
    memset(e, 0, sizeof *e);
    e->no = s->trial_no;
    e->after = pred ? pred->no : -1;
    e->p = p;
    e->port = port;
    e->health_at = mono_now();
    snprintf(e->exec_id, sizeof e->exec_id, "%s", trial_exec_id(p));
    pid_t pid = trial_pid(p);
    e->pid_known = pid > 0;
    out->pid = pid > 0 ? (int64_t)pid : 0;
    out->exec_id = trial_exec_id(p);
    out->node = trial_node(p);
    rc = SCHED_OK;
    goto done;

nomem:
    snprintf(err, errlen, "out of memory");
    rc = SCHED_ENOMEM;
done:
    tfiles_close(&f);
    trial__env_free(env);
    space_argv_free(argv);
    free(cfg);
    free(ckdir);
    free(cfg_file);
    return rc;
}

static void proc_signal(void *self, int64_t no, int sig)
{
    struct pproc *e = find(self, no);
    if (!e || e->exited) return;
    trial_signal(e->p, sig);
    if (sig == SIGKILL) e->killed = 1;
}

struct read_ctx {
    const sched_events_t *ev;
    void *ud;
    int64_t no;
};

static void on_read_line(void *ud, const char *line, size_t len, int truncated)
{
    struct read_ctx *c = ud;
    c->ev->line(c->ud, c->no, line, len, truncated);
}

/* Reads what trial e has written; 1 at the end of its output. */
static int drain(struct pproc *e, const sched_events_t *ev, void *ud)
{
    struct read_ctx c = {ev, ud, e->no};
    return trial_read(e->p, on_read_line, &c, 0) != 0;
}

/* What the wait learned of trial e: where it runs, its health, its pid, and its end once
 * it has exited and its output is read to EOF (woken: the executor had news, or a signal
 * came). 1 when it reported e's end. */
static int look_at(struct proc_exec *x, struct pproc *e, int woken, double now,
                   const sched_events_t *ev, void *ud)
{
    /* A held trial says nothing before its predecessor's end: the loop gives it that
     * trial's slice then (it may have started, and even ended, a moment before). */
    if (e->released || e->after >= 0) return 0;
    const char *xid = trial_exec_id(e->p);
    if (strcmp(xid, e->exec_id) != 0) {
        snprintf(e->exec_id, sizeof e->exec_id, "%s", xid);
        ev->placed(ud, e->no, xid, trial_node(e->p));
    }
    /* The executor's watchdog, about once a second (Slurm: an srun whose controller is
     * gone hangs forever): a trial it condemns is killed and ends with the reason. */
    if (!e->killed && !e->exited && now - e->health_at >= 1.0) {
        e->health_at = now;
        if (trial_health(e->p, now, e->why, sizeof e->why) == 1) {
            trial_signal(e->p, SIGKILL);
            e->killed = 1;
        } else {
            e->why[0] = 0;
        }
    }
    if (!e->pid_known && trial_pid(e->p) > 0) {
        e->pid_known = 1;
        if (ev->pid) ev->pid(ud, e->no, (int64_t)trial_pid(e->p));
    }
    if (!(woken || e->eof || e->killed)) return 0;
    if (!e->exited && trial_poll_exit(e->p, &e->ex) == 1) {
        e->exited = 1;
        /* The leader is gone; anything left in its group (a forked child holding the
         * pipe) is killed now so that the output reaches EOF and nothing lingers. */
        if (!e->eof) trial_signal(e->p, SIGKILL);
    }
    if (e->exited && !e->eof && drain(e, ev, ud)) e->eof = 1;
    if (!(e->exited && e->eof) || e->ended) return 0;
    /* A start that failed after trial_start returned: its reason, as trial_start would
     * have given it (the loop records it as the trial's error). */
    const char *se = trial_start_error(e->p);
    if (se && !e->why[0]) snprintf(e->why, sizeof e->why, "%s", se);
    sched_exit_t ex = {e->ex.code, e->ex.signal, e->why[0] ? e->why : NULL};
    e->ended = 1;
    for (size_t i = 0; i < x->n; i++)
        if (x->v[i].after == e->no && !x->v[i].released) x->v[i].after = -1;
    ev->ended(ud, e->no, &ex);
    return 1;
}

static int proc_wait(void *self, double timeout, int wake_fd, const sched_events_t *ev, void *ud,
                     char *err, size_t errlen)
{
    struct proc_exec *x = self;
    compact(x);
    if (x->n + 2 > x->pcap) {
        size_t cap = x->n + 16;
        struct pollfd *pfd = realloc(x->pfd, cap * sizeof *pfd);
        if (pfd) x->pfd = pfd;
        size_t *pidx = realloc(x->pidx, cap * sizeof *pidx);
        if (pidx) x->pidx = pidx;
        if (!pfd || !pidx) {
            snprintf(err, errlen, "out of memory");
            return SCHED_ENOMEM;
        }
        x->pcap = cap;
    }
    size_t nfd = 0;
    if (wake_fd >= 0) {
        x->pfd[nfd].fd = wake_fd;
        x->pfd[nfd].events = POLLIN;
        x->pidx[nfd++] = (size_t)-1;
    }
    /* The executor's own news (a start's outcome, an end): taken in below. */
    int xfd = trial_exec_fd(x->tx);
    if (xfd >= 0) {
        x->pfd[nfd].fd = xfd;
        x->pfd[nfd].events = POLLIN;
        x->pidx[nfd++] = (size_t)-2;
    }
    for (size_t i = 0; i < x->n; i++) {
        if (x->v[i].released || x->v[i].after >= 0) continue; /* held: read once it is not */
        int fd = trial_fd(x->v[i].p);
        if (fd < 0) continue;
        x->pfd[nfd].fd = fd;
        x->pfd[nfd].events = POLLIN;
        x->pidx[nfd++] = i;
    }
    int ms = timeout > 0 ? (int)fmin(timeout * 1000.0, 3600e3) : 0;
    int k = poll(x->pfd, nfd, ms);
    if (k < 0 && errno != EINTR) {
        snprintf(err, errlen, "poll failed: %s", strerror(errno));
        return SCHED_EINVAL;
    }
    /* A signal (SIGCHLD among them) wakes the wait: every trial's exit is checked then. */
    int woken = k < 0;
    for (size_t j = 0; k > 0 && j < nfd; j++) {
        if (!(x->pfd[j].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        if (x->pidx[j] == (size_t)-2) {
            trial_exec_poll(x->tx);
            woken = 1;
        } else if (x->pidx[j] == (size_t)-1) {
            /* Drained before the ends are looked for (sched.h): a signal after the look
             * leaves a byte for the next wait. One read: what is left wakes that wait. */
            unsigned char buf[256];
            ssize_t r = read(wake_fd, buf, sizeof buf);
            (void)r;
            woken = 1;
        }
    }
    /* Ends first: a trial that ended frees its slot, and the loop launches the next trial
     * as soon as this wait returns, so the other trials' output is left in their pipes for
     * its next wait (the loop takes it in right after the launch) rather than read while
     * the slot stands empty. An ended trial's own output is read to its end first. */
    double now = mono_now();
    size_t n = x->n, ended = 0; /* callbacks may release, never add */
    for (size_t i = 0; i < n; i++)
        ended += look_at(x, &x->v[i], woken, now, ev, ud);
    for (size_t j = 0; k > 0 && !ended && j < nfd; j++) {
        if (!(x->pfd[j].revents & (POLLIN | POLLHUP | POLLERR)) || x->pidx[j] >= n) continue;
        struct pproc *e = &x->v[x->pidx[j]];
        if (e->released || e->eof) continue;
        if (drain(e, ev, ud)) {
            e->eof = 1;
            look_at(x, e, woken, now, ev, ud);
        }
    }
    return k > 0 ? k : 0;
}

static int proc_cancel(void *self, int64_t no)
{
    struct pproc *e = find(self, no);
    if (!e || e->after < 0 || trial_cancel(e->p) != 1) return 0;
    trial_proc_free(e->p);
    e->p = NULL;
    e->released = 1;
    return 1;
}

static void proc_release(void *self, int64_t no)
{
    struct pproc *e = find(self, no);
    if (!e) return;
    trial_proc_free(e->p); /* kills and reaps what still runs */
    e->p = NULL;
    e->released = 1;
}

static void proc_free(void *self)
{
    struct proc_exec *x = self;
    for (size_t i = 0; i < x->n; i++)
        if (!x->v[i].released) trial_proc_free(x->v[i].p);
    free(x->v);
    free(x->pfd);
    free(x->pidx);
    free(x);
}

int trial_sched_exec_new(trial_exec_t *tx, const struct space *sp, sched_exec_t **out, char *err,
                         size_t errlen)
{
    sched_exec_t *h = calloc(1, sizeof *h);
    struct proc_exec *x = calloc(1, sizeof *x);
    if (!tx || !out || !h || !x) {
        free(h);
        free(x);
        snprintf(err, errlen, tx && out ? "out of memory" : "trial_sched_exec_new: no executor");
        return tx && out ? SCHED_ENOMEM : SCHED_EINVAL;
    }
    x->tx = tx;
    x->sp = sp;
    /* The loop offers held starts only to an executor that can ever hold one. */
    x->ops = (sched_exec_ops_t){.name = trial_exec_name(tx),
                                .start = proc_start,
                                .signal = proc_signal,
                                .wait = proc_wait,
                                .release = proc_release,
                                .free = proc_free,
                                .cancel = tx->ops->cancel ? proc_cancel : NULL};
    h->ops = &x->ops;
    h->self = x;
    *out = h;
    return SCHED_OK;
}
