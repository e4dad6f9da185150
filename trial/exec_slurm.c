/* exec_slurm.c: the Slurm executor. Each trial is one `srun` child of tune (a job of its
 * own, or a step of an allocation), started with trial__spawn and read with
 * trial__read_pipe like a local trial; what differs is here: the srun command line, the
 * TUNE_SLURM line that says which job/step/node a trial got, stopping through scancel, a
 * watchdog for sruns that hang when the controller is gone, and cancelling an earlier
 * run's leftovers.
 * Not for: the task side (slurm_task.c), running Slurm's commands (slurm_cmd.c) or the
 * checks of a request against what Slurm has (slurm_check.c).
 * The measured facts this follows (launch cost, allocation mode, faults) are in
 * docs/slurm.md. */
#include "trial/slurm_int.h"
#include "trial/trial_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "search/settings.h"
#include "search/space.h"

#define SLURM_CLEANUP_WAIT_S 30.0 /* how long cleanup waits for cancelled jobs to go */
#define SLURM_WATCHDOG_DEFAULT_S 60.0

struct sexec {
    char *experiment;
    char **srun_args; /* copy, NULL-terminated */
    char *allocation; /* NULL: a job per trial */
    char *task;
    char *srun, *scancel, *squeue, *sinfo, *scontrol, *env;
    double watchdog_s;
    struct trial__slurm_user_opts u;
    /* The watchdog's probe: one squeue at a time for all trials, started by trial_health
     * when some trial has been quiet for a while; its last answer is kept with the time
     * it was asked, so a trial only trusts answers asked after its last sign of life. */
    trial__cmd_async_t probe;
    double probe_started;
    unsigned res_seq; /* answers so far */
    double res_started;
    int res_ok;    /* 0: the controller did not answer */
    char *res_ids; /* "\nID|NAME\n..." lines of the answer */
    char res_msg[200];
};

struct sproc {
    char name[256]; /* the job (or step) name, "tune:EXPERIMENT:trial_NNNNN" */
    char id[96];    /* "123" (per-trial job) or "123.4" (step), once known */
    char node[512]; /* the step's nodes, once known */
    char gpus[128]; /* CUDA_VISIBLE_DEVICES Slurm gave rank 0 */
    int known;      /* the TUNE_SLURM line has been read */
    long lines;     /* stdout lines seen */
    double last_progress;
    int err_fd; /* the stderr log (O_APPEND), or -1 */
    off_t err_size;
    int bad; /* consecutive probe answers that did not vouch for this trial */
    unsigned seen_seq;
    char why[300];
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- small helpers ---------------------------------------------------------------- */

/* A growing argv of owned strings. */
struct vec {
    char **v;
    size_t n, cap;
    int oom;
};

static void vadd(struct vec *v, const char *s)
{
    if (v->oom) return;
    if (v->n + 2 > v->cap) {
        size_t c = v->cap ? v->cap * 2 : 32;
        char **nv = realloc(v->v, c * sizeof *nv);
        if (!nv) {
            v->oom = 1;
            return;
        }
        v->v = nv;
        v->cap = c;
    }
    char *d = strdup(s);
    if (!d) {
        v->oom = 1;
        return;
    }
    v->v[v->n++] = d;
    v->v[v->n] = NULL;
}

__attribute__((format(printf, 2, 3))) static void vaddf(struct vec *v, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    vadd(v, buf);
}

static void vfree(struct vec *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->v[i]);
    free(v->v);
    memset(v, 0, sizeof *v);
}

/* The value of option a if it is the short option s ("-p X", "-pX") or the long option l
 * ("--partition=X", "--partition X"); *i moves past a separate value. NULL otherwise. */
static const char *opt_value(char *const *args, size_t *i, const char *s, const char *l)
{
    const char *a = args[*i];
    size_t ll = l ? strlen(l) : 0;
    if (l && strncmp(a, l, ll) == 0) {
        if (a[ll] == '=') return a + ll + 1;
        if (a[ll] == '\0' && args[*i + 1]) return args[++*i];
        return NULL;
    }
    if (s && strncmp(a, s, 2) == 0) {
        if (a[2]) return a + 2;
        if (args[*i + 1]) return args[++*i];
    }
    return NULL;
}

static void scan_user_opts(char *const *args, struct trial__slurm_user_opts *u)
{
    memset(u, 0, sizeof *u);
    for (size_t i = 0; args && args[i]; i++) {
        const char *a = args[i], *v;
        if ((v = opt_value(args, &i, "-p", "--partition"))) {
            u->partition = v;
        } else if ((v = opt_value(args, &i, "-n", "--ntasks")) && strncmp(a, "--ntasks-", 9)) {
            u->ntasks = atoi(v);
            u->layout = 1;
        } else if ((v = opt_value(args, &i, "-N", "--nodes"))) {
            u->nodes = atoi(v);
            u->layout = 1;
        } else if (strncmp(a, "--ntasks-per-", 13) == 0) {
            u->layout = 1;
        } else if ((v = opt_value(args, &i, "-c", "--cpus-per-task"))) {
            u->cpus = 1;
        } else if (strncmp(a, "--gpus", 6) == 0 || strncmp(a, "-G", 2) == 0 ||
                   strncmp(a, "--gres", 6) == 0 || strncmp(a, "--tres-per-task", 15) == 0) {
            u->gpus = 1;
        } else if (strcmp(a, "--mem") == 0 || strncmp(a, "--mem=", 6) == 0 ||
                   strncmp(a, "--mem-per-", 10) == 0) {
            u->mem = 1;
        }
    }
}

/* prog's path: as given when it has a slash, else the first executable in PATH. */
static char *find_prog(const char *prog)
{
    if (strchr(prog, '/')) return access(prog, X_OK) == 0 ? strdup(prog) : NULL;
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *c = strchr(p, ':');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char buf[4096];
        if (len > 0 && len + strlen(prog) + 2 < sizeof buf) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)len, p, prog);
            if (access(buf, X_OK) == 0) return strdup(buf);
        }
        if (!c) break;
        p = c + 1;
    }
    return NULL;
}

static char *beside(const char *path, const char *name)
{
    const char *slash = strrchr(path, '/');
    size_t d = slash ? (size_t)(slash - path) : 0;
    size_t n = d + strlen(name) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%.*s/%s", (int)d, path, name);
    return s;
}

/* ---- starting a trial --------------------------------------------------------------- */

/* Environment variables srun reads as options: inherited from an allocation (salloc
 * exports SLURM_GPUS=2 to its shell, say), they would silently change every trial's
 * request, so srun runs without them; tune's own options say everything. */
static const char *const srun_input_env[] = {
    "SLURM_JOB_ID",          "SLURM_JOBID",        "SLURM_STEP_ID",       "SLURM_NTASKS",
    "SLURM_NPROCS",          "SLURM_NNODES",       "SLURM_JOB_NUM_NODES", "SLURM_NTASKS_PER_NODE",
    "SLURM_CPUS_PER_TASK",   "SLURM_GPUS",         "SLURM_GPUS_PER_TASK", "SLURM_GPUS_PER_NODE",
    "SLURM_GPUS_PER_SOCKET", "SLURM_CPUS_PER_GPU", "SLURM_MEM_PER_CPU",   "SLURM_MEM_PER_GPU",
    "SLURM_MEM_PER_NODE",    "SLURM_DISTRIBUTION", "SLURM_EXACT",         "SLURM_OVERLAP",
    "SLURM_TRES_PER_TASK",   "SLURM_GRES",         "SLURM_JOB_NAME",      NULL};

static int slurm_start(trial_exec_t *ex, const trial_spawn_t *sp, const trial_proc_t *after,
                       trial_proc_t *p, char *err, size_t errlen)
{
    (void)after; /* never: it cannot hold a start (no can_hold) */
    struct sexec *x = ex->priv;
    double g = sp->slice.gpus;
    if (!(g >= 0) || g != floor(g) || g > 1e6) {
        trial__errf(err, errlen,
                    "Slurm hands out whole GPUs: a trial cannot ask for %g (use 0 or a whole "
                    "number for gpus_per_trial with the slurm executor)",
                    g);
        return TRIAL_EINVAL;
    }
    int G = (int)g;
    int ranks = x->u.ntasks > 0 ? x->u.ntasks : (sp->slice.ranks > 0 ? sp->slice.ranks : 1);
    struct sproc *s = calloc(1, sizeof *s);
    if (!s) {
        trial__errf(err, errlen, "out of memory");
        return TRIAL_ERR;
    }
    snprintf(s->name, sizeof s->name, "tune:%s:%s", x->experiment,
             sp->slice.name && *sp->slice.name ? sp->slice.name : "trial");

    struct vec v = {0};
    vadd(&v, x->env);
    for (const char *const *e = srun_input_env; *e; e++) {
        vadd(&v, "-u");
        vadd(&v, *e);
    }
    if (G > 0) { /* Slurm sets it for the GPUs it gives; tune's own may not leak in (the
                  * trial's environment has none then: places_gpus) */
        vadd(&v, "-u");
        vadd(&v, "CUDA_VISIBLE_DEVICES");
    }
    vadd(&v, x->srun);
    vaddf(&v, "--job-name=%s", s->name);
    if (!x->u.layout) vaddf(&v, "--ntasks=%d", ranks);
    if (!x->u.cpus && sp->slice.cpus > 0) vaddf(&v, "--cpus-per-task=%d", sp->slice.cpus);
    if (!x->u.gpus && G > 0) {
        /* One GPU per rank for a DDP world of `ranks` processes, else G for the process. */
        if (ranks > 1 && G % ranks == 0)
            vaddf(&v, "--gpus-per-task=%d", G / ranks);
        else
            vaddf(&v, "--gpus=%d", G);
    }
    vadd(&v, "--kill-on-bad-exit=1"); /* one failing rank ends the trial (docs/slurm.md) */
    vadd(&v, "--unbuffered");
    if (x->allocation) {
        vaddf(&v, "--jobid=%s", x->allocation);
        vadd(&v, "--exact");
        /* A step without a memory request takes all of the job's memory and would block
         * every other step; --mem=0 shares it instead (srun(1), --mem). */
        if (!x->u.mem) vadd(&v, "--mem=0");
    }
    for (char *const *a = x->srun_args; a && *a; a++)
        vadd(&v, *a);
    vadd(&v, x->task);
    for (char *const *a = sp->argv; *a; a++)
        vadd(&v, *a);

    if (v.oom) {
        vfree(&v);
        free(s);
        trial__errf(err, errlen, "out of memory");
        return TRIAL_ERR;
    }
    /* The stderr log, kept open: its growth is a sign of life (the watchdog), and scancel's
     * complaints go there too. */
    s->err_fd = -1;
    if (sp->log_fds)
        s->err_fd = fcntl(sp->stderr_fd, F_DUPFD_CLOEXEC, 0);
    else if (sp->stderr_log)
        s->err_fd = open(sp->stderr_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    struct stat st;
    if (s->err_fd >= 0 && fstat(s->err_fd, &st) == 0) s->err_size = st.st_size;
    trial_spawn_t sp2 = *sp;
    sp2.argv = v.v;
    int rc = trial__spawn(&sp2, &p->pid, &p->fd, err, errlen);
    vfree(&v);
    if (rc != 0) {
        if (s->err_fd >= 0) close(s->err_fd);
        free(s);
        return rc;
    }
    p->pgid = p->pid;
    p->priv = s;
    s->last_progress = mono();
    return TRIAL_OK;
}

/* ---- reading: the TUNE_SLURM line is the executor's, everything else the caller's --- */

static void take_slurm_line(struct sexec *x, struct sproc *s, const char *json)
{
    cJSON *j = cJSON_Parse(json);
    const char *job = cJSON_GetStringValue(cJSON_GetObjectItem(j, "job"));
    const char *step = cJSON_GetStringValue(cJSON_GetObjectItem(j, "step"));
    const char *node = cJSON_GetStringValue(cJSON_GetObjectItem(j, "node"));
    const char *nodes = cJSON_GetStringValue(cJSON_GetObjectItem(j, "nodes"));
    const char *gpus = cJSON_GetStringValue(cJSON_GetObjectItem(j, "gpus"));
    if (job && *job) {
        /* A job of its own is cancelled as a whole; a step by its job.step id. */
        if (x->allocation && step && *step)
            snprintf(s->id, sizeof s->id, "%s.%s", job, step);
        else
            snprintf(s->id, sizeof s->id, "%s", job);
        snprintf(s->node, sizeof s->node, "%s", nodes && *nodes ? nodes : node ? node : "");
        snprintf(s->gpus, sizeof s->gpus, "%s", gpus ? gpus : "");
        s->known = 1;
    }
    cJSON_Delete(j);
}

struct rd {
    trial_proc_t *p;
    trial_line_cb cb;
    void *ud;
};

static void rd_line(void *ud, const char *line, size_t len, int truncated)
{
    struct rd *r = ud;
    struct sproc *s = r->p->priv;
    size_t tl = sizeof TRIAL__SLURM_TAG - 1;
    if (s->lines++ == 0 && !truncated && len > tl && memcmp(line, TRIAL__SLURM_TAG, tl) == 0) {
        take_slurm_line(r->p->ex->priv, s, line + tl);
        return;
    }
    r->cb(r->ud, line, len, truncated);
}

static int slurm_read(trial_proc_t *p, trial_line_cb cb, void *ud, size_t max_bytes)
{
    struct sproc *s = p->priv;
    struct rd r = {p, cb, ud};
    size_t before = p->line_len;
    long lines = s->lines;
    int rc = trial__read_pipe(p, rd_line, &r, max_bytes);
    if (rc != 0 || s->lines != lines || p->line_len != before) s->last_progress = mono();
    return rc;
}

static int slurm_fd(const trial_proc_t *p)
{
    return p->fd;
}

/* ---- stopping ---------------------------------------------------------------------- */

static void scancel_detached(struct sexec *x, const struct sproc *s, const char *a1, const char *a2)
{
    char *argv[4];
    int n = 0;
    argv[n++] = x->scancel;
    if (a1) argv[n++] = (char *)a1;
    if (a2) argv[n++] = (char *)a2;
    argv[n] = NULL;
    /* scancel's complaints go to the trial's stderr log, where the loop reads its tail. */
    trial__cmd_detach(argv, s->err_fd);
}

/* SIGTERM (and any other catchable signal) goes to the tasks through scancel, so that the
 * trial can stop gracefully; SIGKILL cancels the job or step and kills srun, which makes
 * Slurm end the step at once even when scancel cannot reach the controller. Before the
 * TUNE_SLURM line (srun still waiting for resources) srun itself is signalled: on SIGTERM
 * it withdraws its pending job; on SIGKILL the job is also cancelled by name, since a
 * pending job whose srun is gone would otherwise wait in the queue. Never blocks:
 * scancel runs detached. */
static int slurm_signal(trial_proc_t *p, int sig)
{
    struct sexec *x = p->ex->priv;
    struct sproc *s = p->priv;
    if (sig == SIGKILL) {
        if (s->known) {
            scancel_detached(x, s, s->id, NULL); /* a job: cancelled; a step: SIGKILLed */
        } else if (!x->allocation) {
            char opt[300];
            snprintf(opt, sizeof opt, "--name=%s", s->name);
            scancel_detached(x, s, opt, NULL);
        }
        return trial__kill_group(p, SIGKILL);
    }
    if (!s->known) return trial__kill_group(p, sig);
    char opt[32];
    snprintf(opt, sizeof opt, "--signal=%d", sig);
    scancel_detached(x, s, opt, s->id);
    return TRIAL_OK;
}

static int slurm_poll_exit(trial_proc_t *p, trial_exit_t *out)
{
    int rc = trial__reap(p, 0);
    if (rc == 1 && out) *out = p->exit;
    return rc;
}

static const char *slurm_exec_id(const trial_proc_t *p)
{
    const struct sproc *s = p->priv;
    return s ? s->id : "";
}

static const char *slurm_node(const trial_proc_t *p)
{
    const struct sproc *s = p->priv;
    return s ? s->node : "";
}

static void slurm_proc_free(trial_proc_t *p)
{
    struct sproc *s = p->priv;
    if (!p->reaped && p->pid > 0) {
        if (s) slurm_signal(p, SIGKILL);
        trial__kill_group(p, SIGKILL);
        if (trial__reap(p, 1) != 1) p->reaped = 1;
    }
    if (s && s->err_fd >= 0) close(s->err_fd);
    free(s);
    p->priv = NULL;
}

/* ---- the watchdog ----------------------------------------------------------------- */

static double probe_every(const struct sexec *x)
{
    return x->watchdog_s / 4 > 0.5 ? x->watchdog_s / 4 : 0.5;
}

/* squeue is slow to give up on a dead controller (docs/slurm.md, "Watchdog"): not
 * answering within half the watchdog period is taken as the same answer. */
static double probe_timeout(const struct sexec *x)
{
    return x->watchdog_s / 2 > 1.0 ? x->watchdog_s / 2 : 1.0;
}

static void probe_start(struct sexec *x, double now)
{
    char *argv[] = {x->squeue, "--me", "-h", "-o", "%i|%j", x->allocation ? "-s" : NULL, NULL};
    x->probe_started = now;
    trial__cmd_start(&x->probe, argv);
}

/* Takes the running probe's answer if it has one (or gives up on it past its timeout). */
static void probe_collect(struct sexec *x, double now)
{
    if (x->probe.pid <= 0) return;
    int done = trial__cmd_poll(&x->probe);
    if (!done && now - x->probe_started < probe_timeout(x)) return;
    x->res_seq++;
    x->res_started = x->probe_started;
    free(x->res_ids);
    x->res_ids = NULL;
    if (!done) {
        trial__cmd_release(&x->probe);
        x->res_ok = 0;
        snprintf(x->res_msg, sizeof x->res_msg, "squeue did not answer within %.0f s",
                 probe_timeout(x));
        return;
    }
    const char *b = x->probe.buf ? x->probe.buf : "";
    x->res_ok = x->probe.status == 0;
    if (!x->res_ok) {
        char line[160];
        trial__first_line(b, line, sizeof line);
        snprintf(x->res_msg, sizeof x->res_msg, "squeue: %s", line[0] ? line : "failed");
    }
    /* Kept as "\nID|NAME\n..." so that a lookup is one strstr for "\nID|" or "|NAME\n". */
    size_t n = strlen(b);
    x->res_ids = malloc(n + 3);
    if (x->res_ids) {
        x->res_ids[0] = '\n';
        memcpy(x->res_ids + 1, b, n);
        x->res_ids[n + 1] = n && b[n - 1] == '\n' ? '\0' : '\n';
        x->res_ids[n + 2] = '\0';
    }
}

static int probe_knows(const struct sexec *x, const struct sproc *s)
{
    if (!x->res_ids) return 1; /* no memory to tell: do not condemn the trial */
    char key[400];
    if (s->known)
        snprintf(key, sizeof key, "\n%s|", s->id);
    else
        snprintf(key, sizeof key, "|%s\n", s->name);
    return strstr(x->res_ids, key) != NULL;
}

/* srun has ended (a zombie): the caller will see it through trial_poll_exit. */
static int srun_ended(const trial_proc_t *p)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return 0;
    return si.si_pid != 0;
}

/* A trial is condemned when srun has shown no sign of life (stdout, or its stderr log
 * growing) for the watchdog period and the last two squeue answers asked since then
 * both failed to vouch for it: its job (or step) was not listed, or the controller did
 * not answer. A trial that is quiet but listed (training, or pending in the queue) is
 * fine however long it takes. */
static int slurm_health(trial_proc_t *p, double now, char *why, size_t n)
{
    struct sexec *x = p->ex->priv;
    struct sproc *s = p->priv;
    probe_collect(x, now);
    if (srun_ended(p)) return 0;
    struct stat st;
    if (s->err_fd >= 0 && fstat(s->err_fd, &st) == 0 && st.st_size != s->err_size) {
        s->err_size = st.st_size;
        s->last_progress = now;
    }
    double W = x->watchdog_s, quiet = now - s->last_progress;
    if (quiet < W / 2) {
        s->bad = 0;
        return 0;
    }
    if (x->res_seq != s->seen_seq && x->res_started >= s->last_progress) {
        s->seen_seq = x->res_seq;
        if (!x->res_ok) {
            s->bad++;
            snprintf(s->why, sizeof s->why, "the Slurm controller does not answer (%s)",
                     x->res_msg);
        } else if (probe_knows(x, s)) {
            s->bad = 0;
        } else {
            s->bad++;
            if (s->known)
                snprintf(s->why, sizeof s->why, "Slurm no longer knows %s %s",
                         x->allocation ? "step" : "job", s->id);
            else
                snprintf(s->why, sizeof s->why, "Slurm has no job named %s", s->name);
        }
    }
    if (quiet >= W && s->bad >= 2) {
        trial__errf(why, n, "srun made no progress for %.0f s and %s", quiet, s->why);
        return 1;
    }
    if (x->probe.pid <= 0 && now - x->probe_started >= probe_every(x)) probe_start(x, now);
    return 0;
}

/* ---- checks before a run: slurm_check.c ------------------------------------------------ */

static int slurm_check(trial_exec_t *ex, int ranks, double gpus, int cpus, trial_capacity_t *cap,
                       char *err, size_t errlen)
{
    struct sexec *x = ex->priv;
    trial__slurm_site_t site = {
        .sinfo = x->sinfo, .scontrol = x->scontrol, .allocation = x->allocation, .u = &x->u};
    return trial__slurm_check(&site, ranks, gpus, cpus, cap, err, errlen);
}

/* ---- leftovers of an earlier run ----------------------------------------------------- */

/* Ids of this experiment's jobs (steps: 1) in squeue; ids of jobs in `skip` are left out. */
static int list_ours(struct sexec *x, const char *prefix, int steps, const struct vec *skip,
                     struct vec *ids, char *err, size_t errlen)
{
    char *argv[] = {x->squeue, "--me", "-h", "-o", "%i|%j", steps ? "-s" : NULL, NULL};
    char *out = NULL;
    int rc = trial__slurm_cmd(argv, &out, err, errlen);
    if (rc != 0) return rc;
    size_t pl = strlen(prefix);
    for (char *line = out; *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        char *bar = strchr(line, '|');
        if (bar && strncmp(bar + 1, prefix, pl) == 0) {
            *bar = '\0';
            int skipped = 0;
            size_t jl = strcspn(line, ".");
            for (size_t i = 0; skip && i < skip->n && !skipped; i++)
                skipped = strlen(skip->v[i]) == jl && strncmp(skip->v[i], line, jl) == 0;
            if (!skipped) vadd(ids, line);
        }
        if (!nl) break;
        line = nl + 1;
    }
    free(out);
    return ids->oom ? TRIAL_ERR : TRIAL_OK;
}

static int slurm_cleanup(trial_exec_t *ex, const char *experiment, char *err, size_t errlen)
{
    struct sexec *x = ex->priv;
    char prefix[300];
    snprintf(prefix, sizeof prefix, "tune:%s:", experiment);
    struct vec jobs = {0}, steps = {0}, argv = {0};
    int rc = list_ours(x, prefix, 0, NULL, &jobs, err, errlen);
    if (rc == 0) rc = list_ours(x, prefix, 1, &jobs, &steps, err, errlen);
    int count = (int)(jobs.n + steps.n);
    if (rc == 0 && count > 0) {
        vadd(&argv, x->scancel);
        for (size_t i = 0; i < jobs.n; i++)
            vadd(&argv, jobs.v[i]);
        for (size_t i = 0; i < steps.n; i++)
            vadd(&argv, steps.v[i]);
        char *out = NULL;
        rc = argv.oom ? TRIAL_ERR : trial__slurm_cmd(argv.v, &out, err, errlen);
        free(out);
        /* Cancelled jobs hold their resources until Slurm has cleaned up after them. */
        for (double t0 = mono(); rc == 0 && mono() - t0 < SLURM_CLEANUP_WAIT_S;) {
            struct vec lj = {0}, ls = {0};
            rc = list_ours(x, prefix, 0, NULL, &lj, err, errlen);
            if (rc == 0) rc = list_ours(x, prefix, 1, &lj, &ls, err, errlen);
            size_t left = lj.n + ls.n;
            vfree(&lj);
            vfree(&ls);
            if (left == 0) break;
            struct timespec ts = {0, 200 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    vfree(&jobs);
    vfree(&steps);
    vfree(&argv);
    return rc == 0 ? count : rc;
}

/* ---- the executor ------------------------------------------------------------------- */

static void slurm_exec_free(trial_exec_t *ex)
{
    struct sexec *x = ex->priv;
    if (!x) return;
    trial__cmd_release(&x->probe);
    free(x->res_ids);
    for (char **a = x->srun_args; a && *a; a++)
        free(*a);
    free(x->srun_args);
    free(x->experiment);
    free(x->allocation);
    free(x->task);
    free(x->srun);
    free(x->scancel);
    free(x->squeue);
    free(x->sinfo);
    free(x->scontrol);
    free(x->env);
    free(x);
    ex->priv = NULL;
}

static const struct trial_exec_ops slurm_ops = {
    .name = "slurm",
    .places_gpus = 1,
    .names_trials = 1,
    .start = slurm_start,
    .fd = slurm_fd,
    .read = slurm_read,
    .signal = slurm_signal,
    .poll_exit = slurm_poll_exit,
    .exec_id = slurm_exec_id,
    .node = slurm_node,
    .proc_free = slurm_proc_free,
    .exec_free = slurm_exec_free,
    .health = slurm_health,
    .check = slurm_check,
    .cleanup = slurm_cleanup,
};

static int valid_job_id(const char *s)
{
    if (!s || *s < '0' || *s > '9') return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || *s == '_' || *s == '+')) return 0;
    return 1;
}

int trial_exec_slurm_new(const trial_slurm_opts_t *o, trial_exec_t **out, char *err, size_t errlen)
{
    if (!o || !out || !o->experiment || !*o->experiment) {
        trial__errf(err, errlen, "trial_exec_slurm_new: no options, result or experiment name");
        return TRIAL_EINVAL;
    }
    if (o->allocation && *o->allocation && !valid_job_id(o->allocation)) {
        trial__errf(err, errlen, "allocation \"%s\" is not a Slurm job id (such as 12345)",
                    o->allocation);
        return TRIAL_EINVAL;
    }
    trial_exec_t *ex = calloc(1, sizeof *ex);
    struct sexec *x = calloc(1, sizeof *x);
    if (!ex || !x) goto nomem;
    ex->ops = &slurm_ops;
    ex->priv = x;
    x->probe.fd = -1;
    x->probe_started = -1e9;
    x->watchdog_s = o->watchdog_s > 0 ? o->watchdog_s : SLURM_WATCHDOG_DEFAULT_S;
    x->srun = find_prog(o->srun ? o->srun : "srun");
    if (!x->srun) {
        trial__errf(err, errlen,
                    "cannot find %s: the slurm executor needs Slurm's client commands (Debian: "
                    "apt-get install slurm-client) in PATH",
                    o->srun ? o->srun : "srun");
        goto fail;
    }
    x->scancel = beside(x->srun, "scancel");
    x->squeue = beside(x->srun, "squeue");
    x->sinfo = beside(x->srun, "sinfo");
    x->scontrol = beside(x->srun, "scontrol");
    if (!x->scancel || !x->squeue || !x->sinfo || !x->scontrol) goto nomem;
    if (access(x->scancel, X_OK) != 0 || access(x->squeue, X_OK) != 0) {
        trial__errf(err, errlen, "found %s but not scancel and squeue beside it", x->srun);
        goto fail;
    }
    x->env = find_prog("env");
    if (!x->env) x->env = strdup("/usr/bin/env");
    const char *task = o->task_program ? o->task_program : "tune-slurm-task";
    char *t = find_prog(task);
    x->task = t ? realpath(t, NULL) : NULL;
    free(t);
    if (!x->task) {
        trial__errf(err, errlen,
                    "cannot find %s (built beside tune, in build/bin; every node must see it "
                    "at the same path)",
                    task);
        goto fail;
    }
    x->experiment = strdup(o->experiment);
    if (o->allocation && *o->allocation) x->allocation = strdup(o->allocation);
    size_t na = 0;
    while (o->srun_args && o->srun_args[na])
        na++;
    x->srun_args = calloc(na + 1, sizeof *x->srun_args);
    if (!x->env || !x->experiment || (o->allocation && *o->allocation && !x->allocation) ||
        !x->srun_args)
        goto nomem;
    for (size_t i = 0; i < na; i++)
        if (!(x->srun_args[i] = strdup(o->srun_args[i]))) goto nomem;
    scan_user_opts(x->srun_args, &x->u);
    *out = ex;
    return TRIAL_OK;

nomem:
    trial__errf(err, errlen, "out of memory");
fail:
    if (ex && x)
        slurm_exec_free(ex);
    else
        free(x);
    free(ex);
    return TRIAL_ERR;
}

int trial__slurm_open(const trial_exec_conf_t *c, trial_exec_t **out, char *err, size_t errlen)
{
    if (!c->space) {
        trial__errf(err, errlen, "the slurm executor needs the experiment's settings");
        return TRIAL_EINVAL;
    }
    const space_settings_t *set = space_settings(c->space);
    /* Allocation mode when an allocation is named: by the run, by the settings, or by
     * $SLURM_JOB_ID when tune itself runs inside one; "none" says a job per trial. */
    const char *alloc = c->allocation          ? c->allocation
                        : set->exec.allocation ? set->exec.allocation
                                               : getenv("SLURM_JOB_ID");
    if (alloc && strcmp(alloc, "none") == 0) alloc = NULL;
    char task[4200];
    snprintf(task, sizeof task, "%s/tune-slurm-task", c->bindir ? c->bindir : ".");
    const char *wd = getenv("TUNE_SLURM_WATCHDOG_S"); /* seconds; for tests and slow sites */
    trial_slurm_opts_t o = {.experiment = set->name,
                            .srun_args = set->exec.srun_args,
                            .allocation = alloc,
                            .task_program = c->bindir && access(task, X_OK) == 0 ? task : NULL,
                            .watchdog_s = wd ? atof(wd) : 0};
    return trial_exec_slurm_new(&o, out, err, errlen);
}
