/* The executor of real processes behind the scheduler's executor interface: trials are
 * started through trial/ (local processes or Slurm), their argv rendered from the command
 * template and their environment built here (TUNE_*, CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS,
 * MASTER_ADDR/MASTER_PORT), and waiting is a poll() over their stdout pipes. It also runs
 * the executor's watchdog (trial_health) and reports late placement (Slurm's job ids).
 * Not for: deciding anything about trials (the loop and its policy). */
#include <errno.h>
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

#include "scheduler/sched.h"
#include "search/render.h"
#include "search/settings.h"
#include "search/space.h"
#include "trial/trial.h"

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

/* Linux's limit on one argv or environment string (MAX_ARG_STRLEN: 32 pages), with room
 * for the name: a longer TUNE_CONFIG would make the exec fail (E2BIG). */
#define PROC_ENV_MAX (32u * 4096u - 64u)

/* "KEY=value" in a new string (the caller frees), or NULL when out of memory. */
static char *env_pair(const char *key, const char *value)
{
    size_t k = strlen(key), v = strlen(value);
    char *e = malloc(k + v + 2);
    if (!e) return NULL;
    memcpy(e, key, k);
    e[k] = '=';
    memcpy(e + k + 1, value, v + 1);
    return e;
}

/* A configuration too long for one environment string goes to the trial's folder as
 * config.json (written whole, then renamed: a trial never reads half of it), and the
 * trial gets TUNE_CONFIG_FILE naming it instead of TUNE_CONFIG. 0, or -1 with err. */
static int write_config_file(const char *dir, const char *cfg, char *path, size_t n, char *err,
                             size_t errlen)
{
    char tmp[4300];
    snprintf(path, n, "%s/config.json", dir);
    snprintf(tmp, sizeof tmp, "%s/.config.json.tmp", dir);
    FILE *f = fopen(tmp, "w");
    size_t len = strlen(cfg);
    int ok = f && fwrite(cfg, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write the configuration to %.400s: %s", path,
                 strerror(errno));
        unlink(tmp);
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
    /* An entry is 700 bytes (its messages): only those behind a released one move. At 16
     * trials, copying every entry onto itself each wait was 2% of tune's time. */
    size_t k = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (x->v[i].released) continue;
        if (k != i) x->v[k] = x->v[i];
        k++;
    }
    x->n = k;
}

static int proc_start(void *self, const sched_start_t *s, sched_started_t *out, char *err,
                      size_t errlen)
{
    struct proc_exec *x = self;
    compact(x);
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 16;
        struct pproc *v = realloc(x->v, cap * sizeof *v);
        if (!v) {
            snprintf(err, errlen, "out of memory");
            return SCHED_ENOMEM;
        }
        x->v = v;
        x->cap = cap;
    }
    /* Refused before anything is made for it (its folder, argv, environment). */
    const struct pproc *pred = s->held ? find(x, s->after) : NULL;
    if (s->held && (!pred || !trial_exec_can_hold(x->tx))) {
        snprintf(err, errlen, "this executor cannot hold a start");
        return SCHED_EAGAIN;
    }
    if (trial_mkdirs(s->dir) != 0) {
        snprintf(err, errlen, "cannot create trial directory %.400s: %s", s->dir, strerror(errno));
        return SCHED_EINVAL;
    }
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)s->trial_no);
    char **argv = NULL;
    if (space_render_argv(x->sp, s->config, idbuf, s->dir, &argv, err, errlen) != 0)
        return SCHED_EINVAL;
    char num_gpus[64], omp[32], port[32], trial_id[64], exp[160], tdir[4200];
    /* The configuration and the checkpoint path have no length limit of tune's own: each
     * is as long as it is (a config too long for the environment goes to a file). */
    char *cfg = space_json_print(s->config), *cfg_env = NULL, cfg_path[4300];
    if (!cfg) {
        snprintf(err, errlen, "out of memory");
        space_argv_free(argv);
        return SCHED_ENOMEM;
    }
    if (strlen(cfg) <= PROC_ENV_MAX) {
        cfg_env = env_pair("TUNE_CONFIG", cfg);
    } else if (write_config_file(s->dir, cfg, cfg_path, sizeof cfg_path, err, errlen) == 0) {
        cfg_env = env_pair("TUNE_CONFIG_FILE", cfg_path);
    } else {
        space_argv_free(argv);
        free(cfg);
        return SCHED_EINVAL;
    }
    char *resume = s->resume_from ? env_pair("TUNE_RESUME_FROM", s->resume_from) : NULL;
    if (!cfg_env || (s->resume_from && !resume)) {
        snprintf(err, errlen, "out of memory");
        space_argv_free(argv);
        free(cfg);
        free(cfg_env);
        free(resume);
        return SCHED_ENOMEM;
    }
    int pn = pick_port(x, s->trial_no);
    char cuda[600];
    snprintf(cuda, sizeof cuda, "CUDA_VISIBLE_DEVICES=%s", s->devices ? s->devices : "");
    char nb[32];
    snprintf(num_gpus, sizeof num_gpus, "TUNE_NUM_GPUS=%s", space_format_number(s->gpus, nb));
    snprintf(omp, sizeof omp, "OMP_NUM_THREADS=%d", s->cpus > 0 ? s->cpus : 1);
    snprintf(port, sizeof port, "MASTER_PORT=%d", pn);
    snprintf(trial_id, sizeof trial_id, "TUNE_TRIAL_ID=%s", idbuf);
    snprintf(exp, sizeof exp, "TUNE_EXPERIMENT=%s", s->experiment);
    snprintf(tdir, sizeof tdir, "TUNE_TRIAL_DIR=%s", s->dir);
    /* Every trial gets a checkpoint folder of its own (docs/pbt.md, "The trial's contract"):
     * what it saves there and names in a result ("checkpoint") is what a pause or an
     * exploit resumes from. */
    char ckdir[4200], ckenv[4300];
    snprintf(ckdir, sizeof ckdir, "%s/checkpoints", s->dir);
    if (mkdir(ckdir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %.400s: %s", ckdir, strerror(errno));
        space_argv_free(argv);
        free(cfg);
        free(cfg_env);
        free(resume);
        return SCHED_EINVAL;
    }
    snprintf(ckenv, sizeof ckenv, "TUNE_CHECKPOINT_DIR=%s", ckdir);
    /* How far the scheduler lets it run (max_t in time_attr units), so that a trial that
     * is paused and promoted (asha's promotion variant) can also stop by itself; pbt has
     * one only when it was given. */
    char maxt[64] = "";
    const space_settings_t *set = space_settings(x->sp);
    if (set->sched.type != SPACE_SCHED_FIFO && set->sched.max_t > 0)
        snprintf(maxt, sizeof maxt, "TUNE_MAX_T=%s", space_format_number(set->sched.max_t, nb));
    /* Python buffers stdout when it is a pipe, so a script that prints without flush
     * delivers every result at exit (ASHA then stops nothing in time): unbuffered unless
     * the user's environment says otherwise. */
    char *env[15] = {trial_id, exp,  tdir, cfg_env, cuda, num_gpus, omp, "MASTER_ADDR=127.0.0.1",
                     port,     ckenv};
    int ne = 10;
    if (!getenv("PYTHONUNBUFFERED")) env[ne++] = "PYTHONUNBUFFERED=1";
    if (resume) env[ne++] = resume;
    if (maxt[0]) env[ne++] = maxt;
    env[ne] = NULL;
    char out_log[4200], err_log[4200];
    snprintf(out_log, sizeof out_log, "%s/stdout.log", s->dir);
    snprintf(err_log, sizeof err_log, "%s/stderr.log", s->dir);
    trial_spawn_t sp = {.argv = argv,
                        .env = env,
                        .dir = s->dir,
                        .stdout_log = out_log,
                        .stderr_log = err_log,
                        .job_name = s->name,
                        .ranks = 1,
                        .gpus = s->gpus,
                        .cpus = s->cpus,
                        /* The exec is not waited for (the loop goes on with other trials
                         * meanwhile): a program that cannot run ends the trial with
                         * trial_start_error's reason, and the pid comes as events.pid. */
                        .no_wait = 1,
                        .after = pred ? pred->p : NULL};
    trial_proc_t *p = NULL;
    int rc = trial_start(x->tx, &sp, &p, err, errlen);
    free(cfg);
    free(cfg_env);
    free(resume);
    space_argv_free(argv);
    if (rc != 0) return pred && rc == TRIAL_EINVAL ? SCHED_EAGAIN : SCHED_EINVAL;
    struct pproc *e = &x->v[x->n++];
    memset(e, 0, sizeof *e);
    e->no = s->trial_no;
    e->after = pred ? pred->no : -1;
    e->p = p;
    e->port = pn;
    e->health_at = mono_now();
    snprintf(e->exec_id, sizeof e->exec_id, "%s", trial_exec_id(p));
    pid_t pid = trial_pid(p);
    e->pid_known = pid > 0;
    out->pid = pid > 0 ? (int64_t)pid : 0;
    out->exec_id = trial_exec_id(p);
    out->node = trial_node(p);
    return SCHED_OK;
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

static const sched_exec_ops_t proc_ops_local = {"local",      proc_start, proc_signal, proc_wait,
                                                proc_release, proc_free,  NULL,        proc_cancel};
static const sched_exec_ops_t proc_ops_slurm = {"slurm",      proc_start, proc_signal, proc_wait,
                                                proc_release, proc_free,  NULL,        NULL};

int sched_exec_proc_new(struct trial_exec *tx, const struct space *sp, sched_exec_t **out,
                        char *err, size_t errlen)
{
    sched_exec_t *h = calloc(1, sizeof *h);
    struct proc_exec *x = calloc(1, sizeof *x);
    if (!h || !x) {
        free(h);
        free(x);
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    x->tx = tx;
    x->sp = sp;
    h->ops = strcmp(trial_exec_name(tx), "slurm") == 0 ? &proc_ops_slurm : &proc_ops_local;
    h->self = x;
    *out = h;
    return SCHED_OK;
}

void sched_exec_free(sched_exec_t *ex)
{
    if (!ex) return;
    if (ex->ops && ex->ops->free) ex->ops->free(ex->self);
    free(ex);
}
