/* The scheduler's event loop: one thread, poll() over every running trial's stdout and
 * a signal self-pipe, monotonic timers for stop grace periods and reports (redis ae.c,
 * tmux server loop). It is the mechanism; what to stop is the policy's business
 * (policy.c/asha.c) and where a trial runs is the pool's (pool.c).
 * Not for: printing (snapshots go to a callback) or SQL (store_* calls only). */
#include "scheduler/sched.h"

#include <dirent.h>
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

#include "search/space.h"
#include "store/store.h"
#include "trial/trial.h"

/* The one global of the scheduler: the write end of the signal self-pipe, which a
 * signal handler can reach only through a static. Valid only inside sched_run. */
static int loop_sigpipe_w = -1;

static void loop_on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (loop_sigpipe_w >= 0) {
        ssize_t w = write(loop_sigpipe_w, &b, 1);
        (void)w;
    }
    errno = saved;
}

enum stop_reason { STOP_NONE = 0, STOP_EARLY, STOP_COMPLETE, STOP_USER, STOP_TIMEOUT };

struct ltrial {
    int64_t no, id;
    sched_trial_status_t status;
    int early_stopped;
    enum stop_reason stop;
    double stop_deadline; /* monotonic: SIGKILL after this */
    int killed;
    cJSON *config;
    trial_proc_t *proc;
    sched_slice_t slice;
    int has_slice;
    int port;
    int eof, exited;
    trial_exit_t ex;
    int64_t iters;
    double last_time, last_metric, best_metric;
    double started_mono;
    double last_result_mono;
    char name[32];
    char slice_str[64];
    char *error;
    char *dir;
    int attempt;       /* 1 for the first run; each retry or resume adds one */
    int failures;      /* failed attempts so far */
    char *resume_from; /* checkpoint handed to the next attempt (TUNE_RESUME_FROM) */
    int carry;         /* results of the attempt before, up to the checkpoint, to carry over */
    char exec_id[96];  /* the executor's id last recorded (Slurm's job/step id arrives late) */
    double health_at;  /* monotonic: last trial_health check */
};

struct loop {
    const sched_run_opts_t *o;
    const space_settings_t *set;
    sched_policy_t *policy;
    struct ltrial *t;
    size_t n;
    size_t next;   /* next trial to launch */
    size_t *retry; /* trials waiting for another attempt, launched before `next` */
    size_t nretry;
    size_t running;
    int stopping;  /* no new trials */
    int hard_stop; /* second Ctrl-C: kill now */
    int stop_signal;
    int fatal;
    char fatal_msg[1024];
    uint64_t results, ignored, bad_lines;
    double t0;
    /* When this turn's lines arrived: the clocks are read at the turn's first result and
     * reset (0) after each poll. The lines of one turn were all waiting when poll
     * returned, and two clock reads per result were a measurable share of the path. */
    double rx_wall, rx_mono;
    int time_is_iter;
    /* report snapshot storage, reused between reports */
    sched_trial_view_t *views;
    sched_rung_info_t rungs[256];
};

/* The longest a turn spends launching trials before it reads results again. */
#define LOOP_LAUNCH_SLICE_S 0.05

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *sched_status_name(sched_trial_status_t s)
{
    static const char *const names[] = {"PENDING", "RUNNING", "PAUSED", "TERMINATED", "ERROR"};
    return (unsigned)s < SCHED_TRIAL_NSTATUS ? names[s] : "?";
}

/* A store write failed: remember the first failure; the loop then stops every trial
 * and returns it. Everything committed before stays readable. */
static void loop_fail(struct loop *L, const char *what, const char *err)
{
    if (L->fatal) return;
    L->fatal = 1;
    L->stopping = 1;
    snprintf(L->fatal_msg, sizeof L->fatal_msg, "%.200s: %.800s", what, err);
}

static int better(int mode_max, double a, double b)
{
    if (isnan(b)) return !isnan(a);
    if (isnan(a)) return 0;
    return mode_max ? a > b : a < b;
}

static void update_trial_row(struct loop *L, struct ltrial *t, const store_trial_update_t *u)
{
    char err[256];
    if (store_trial_update(L->o->store, t->id, u, err, sizeof err) != 0)
        loop_fail(L, "cannot record trial state", err);
}

/* ---- results ------------------------------------------------------------------- */
struct line_ctx {
    struct loop *L;
    struct ltrial *t;
};

static int has_non_json_number(const char *s, size_t n)
{
    /* NaN and Infinity are accepted from trials but are not JSON: such lines are
     * re-printed by cJSON (as null) before they are stored, so the stored text is
     * always valid JSON for json_extract and for exports. */
    for (size_t i = 0; i + 2 < n; i++)
        if ((s[i] == 'N' && s[i + 1] == 'a' && s[i + 2] == 'N') ||
            (s[i] == 'I' && s[i + 1] == 'n' && s[i + 2] == 'f'))
            return 1;
    return 0;
}

static void request_stop(struct loop *L, struct ltrial *t, enum stop_reason why);

/* The numbers the loop reads from a result (training_iteration, the time_attr, the
 * metric) and the text to store, valid JSON. */
struct result_in {
    double it, tv, m;
    const char *json;
    size_t json_len;
};

/* One result of trial t: recorded, counted and judged. */
static void on_result(struct line_ctx *c, const struct result_in *in)
{
    struct loop *L = c->L;
    struct ltrial *t = c->t;
    const space_settings_t *set = L->set;
    double it = in->it, tv = in->tv, m = in->m;
    if (L->rx_wall == 0) {
        L->rx_wall = wall_now();
        L->rx_mono = mono_now();
    }
    char err[256];
    if (t->carry) {
        /* The first result of an attempt that resumed from a checkpoint says where the
         * checkpoint was: the earlier attempt's results before it belong to this one, those
         * from it on are superseded (they are being computed again). */
        t->carry = 0;
        int64_t carried = 0;
        if (store_results_carry(L->o->store, t->id, t->attempt - 1, t->attempt, (int64_t)it,
                                &carried, err, sizeof err) != 0) {
            loop_fail(L, "cannot record result", err);
            return;
        }
        t->iters = carried;
    }
    double now = L->rx_wall;
    store_result_t sr = {.trial_id = t->id,
                         .attempt = t->attempt,
                         .iteration = (int64_t)it,
                         .time_value = tv,
                         .metric = m,
                         .wall_time = now,
                         .json = in->json,
                         .json_len = in->json_len};
    if (store_result_add(L->o->store, &sr, err, sizeof err) != 0) {
        loop_fail(L, "cannot record result", err);
        return;
    }
    L->results++;
    t->iters++;
    t->last_time = tv;
    t->last_metric = m;
    t->last_result_mono = L->rx_mono;
    if (better(set->mode == SPACE_MODE_MAX, m, t->best_metric)) t->best_metric = m;

    if (isnan(tv)) return; /* without its time the policy cannot place the result */
    sched_decision_t d;
    sched_on_result(L->policy, t->no, tv, m, &d);
    if (!d.judged) return;
    const char *action = d.action == SCHED_STOP       ? "stop"
                         : d.action == SCHED_COMPLETE ? "complete"
                                                      : "continue";
    char reason[160];
    if (d.rung < 0 && d.action != SCHED_COMPLETE)
        snprintf(reason, sizeof reason, "%s: best %g vs median %g of other trials",
                 d.action == SCHED_STOP ? "worse than the median" : "not worse than the median",
                 d.value, d.cutoff);
    else if (d.action == SCHED_COMPLETE)
        snprintf(reason, sizeof reason, "reached max_t (%s >= %g)", set->sched.time_attr,
                 set->sched.max_t);
    else if (isnan(d.cutoff))
        snprintf(reason, sizeof reason, "first result at rung %d (milestone %g): no cutoff yet",
                 d.rung, d.milestone);
    else if (d.action == SCHED_STOP)
        snprintf(reason, sizeof reason, "worse than rung %d cutoff at milestone %g", d.rung,
                 d.milestone);
    else
        snprintf(reason, sizeof reason, "within rung %d cutoff at milestone %g: promoted", d.rung,
                 d.milestone);
    store_decision_t sd = {.trial_id = t->id,
                           .iteration = (int64_t)it,
                           .time_value = tv,
                           .action = action,
                           .bracket = d.bracket,
                           .rung = d.rung,
                           .milestone = d.milestone,
                           .value = d.value,
                           .cutoff = d.cutoff,
                           .reason = reason,
                           .wall_time = now};
    if (store_decision_add(L->o->store, &sd, err, sizeof err) != 0) {
        loop_fail(L, "cannot record decision", err);
        return;
    }
    if (d.action == SCHED_STOP)
        request_stop(L, t, STOP_EARLY);
    else if (d.action == SCHED_COMPLETE)
        request_stop(L, t, STOP_COMPLETE);
}

static void on_line(void *ud, const char *line, size_t len, int truncated)
{
    struct line_ctx *c = ud;
    if (truncated) {
        c->L->bad_lines++;
        return;
    }
    struct loop *L = c->L;
    const space_settings_t *set = L->set;
    /* The fast path: a plain JSON object with its training_iteration is stored as it came,
     * its numbers read without building a tree. Anything else (no training_iteration,
     * NaN/Infinity, what the scan leaves alone) goes through cJSON below. */
    const char *keys[3] = {"training_iteration", L->time_is_iter ? NULL : set->sched.time_attr,
                           set->metric};
    double v[3];
    if (trial_result_scan(line, len, keys, 3, v) == 1 && !isnan(v[0])) {
        if (c->t->stop != STOP_NONE) {
            c->L->ignored++;
        } else if (!L->fatal) {
            struct result_in in = {v[0], L->time_is_iter ? v[0] : v[1], v[2], line, len};
            on_result(c, &in);
        }
        return;
    }
    cJSON *r = NULL;
    if (trial_result_parse(line, len, &r) != 1) {
        /* A line that opens like a JSON object but does not parse was surely meant as a
         * result ("-nan" from printf, a truncated write): count it so the user hears of
         * it, where plain log lines pass silently. */
        size_t i = 0;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i < len && line[i] == '{') c->L->bad_lines++;
        return;
    }
    if (c->t->stop != STOP_NONE) {
        /* Results after the decision to stop are logged (the stdout log has them) but
         * not recorded, as in Ray Tune. */
        c->L->ignored++;
    } else if (!c->L->fatal) {
        struct result_in in = {trial_result_number(r, "training_iteration"), NAN, NAN, line, len};
        int added = 0;
        if (isnan(in.it)) {
            /* Counted by the scheduler when the trial does not send it (Ray Tune does the
             * same for function trainables). */
            in.it = (double)(c->t->iters + 1);
            cJSON_AddNumberToObject(r, "training_iteration", in.it);
            added = 1;
        }
        in.tv = L->time_is_iter ? in.it : trial_result_number(r, set->sched.time_attr);
        in.m = set->metric ? trial_result_number(r, set->metric) : NAN;
        char *printed = NULL;
        if (added || has_non_json_number(line, len)) {
            printed = cJSON_PrintUnformatted(r);
            if (!printed) {
                loop_fail(L, "cannot record result", "out of memory");
                cJSON_Delete(r);
                return;
            }
            in.json = printed;
            in.json_len = strlen(printed);
        }
        on_result(c, &in);
        free(printed);
    }
    cJSON_Delete(r);
}

/* ---- launching ------------------------------------------------------------------ */
static int port_in_use_by_trial(const struct loop *L, int port)
{
    for (size_t i = 0; i < L->n; i++)
        if (L->t[i].status == SCHED_TRIAL_RUNNING && L->t[i].port == port) return 1;
    return 0;
}

/* A MASTER_PORT that no other running trial has and that nothing listens on now, so
 * that torchrun-style rendezvous of concurrent trials never collide. */
static int pick_port(const struct loop *L, int64_t no)
{
    for (int k = 0; k < 2000; k++) {
        int port = 29500 + (int)((no + k) % 20000);
        if (port_in_use_by_trial(L, port)) continue;
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

static void finish_error(struct loop *L, struct ltrial *t, const char *msg)
{
    free(t->error);
    t->error = strdup(msg);
    t->status = SCHED_TRIAL_ERROR;
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_ERROR | STORE_TU_ENDED,
                              .status = "ERROR",
                              .error = msg,
                              .stderr_tail = "",
                              .ended_at = wall_now()};
    update_trial_row(L, t, &u);
    sched_on_trial_complete(L->policy, t->no);
}

/* Starts trial t if its slice is free now. Returns 1 if started (or failed for good),
 * 0 if it has to wait for resources. */
static int launch(struct loop *L, struct ltrial *t)
{
    const space_settings_t *set = L->set;
    sched_slice_t slice;
    if (sched_pool_acquire(L->o->pool, set->gpus_per_trial, set->cpus_per_trial, &slice) != 0)
        return 0;
    char err[512];
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", L->o->results_dir, t->name);
    if (trial_mkdirs(dir) != 0) {
        snprintf(err, sizeof err, "cannot create trial directory %.400s: %s", dir, strerror(errno));
        sched_pool_release(L->o->pool, &slice);
        finish_error(L, t, err);
        return 1;
    }
    free(t->dir);
    t->dir = strdup(dir);
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)t->no);
    char **argv = NULL;
    if (space_render_argv(L->o->space, t->config, idbuf, dir, &argv, err, sizeof err) != 0) {
        sched_pool_release(L->o->pool, &slice);
        finish_error(L, t, err);
        return 1;
    }
    char devs[512], cfg_env[8192 + 16], num_gpus[64], omp[32], port[32], trial_id[64], exp[160],
        tdir[4200];
    sched_slice_devices(L->o->pool, &slice, devs, sizeof devs);
    char *cfg = space_json_print(t->config);
    t->port = pick_port(L, t->no);
    char cuda[600];
    snprintf(cuda, sizeof cuda, "CUDA_VISIBLE_DEVICES=%s", devs);
    snprintf(cfg_env, sizeof cfg_env, "TUNE_CONFIG=%s", cfg ? cfg : "{}");
    double ngpu = slice.ngpus * (slice.share_ppm / 1e6);
    char nb[32];
    snprintf(num_gpus, sizeof num_gpus, "TUNE_NUM_GPUS=%s", space_format_number(ngpu, nb));
    snprintf(omp, sizeof omp, "OMP_NUM_THREADS=%d", slice.cpus > 0 ? slice.cpus : 1);
    snprintf(port, sizeof port, "MASTER_PORT=%d", t->port);
    snprintf(trial_id, sizeof trial_id, "TUNE_TRIAL_ID=%s", idbuf);
    snprintf(exp, sizeof exp, "TUNE_EXPERIMENT=%s", set->name);
    snprintf(tdir, sizeof tdir, "TUNE_TRIAL_DIR=%s", dir);
    char resume[4200] = "";
    if (t->resume_from) snprintf(resume, sizeof resume, "TUNE_RESUME_FROM=%s", t->resume_from);
    char *env[] = {trial_id, exp,
                   tdir,     cfg_env,
                   cuda,     num_gpus,
                   omp,      "MASTER_ADDR=127.0.0.1",
                   port,     resume[0] ? resume : NULL,
                   NULL};
    char out_log[4200], err_log[4200];
    snprintf(out_log, sizeof out_log, "%s/stdout.log", dir);
    snprintf(err_log, sizeof err_log, "%s/stderr.log", dir);
    trial_spawn_t sp = {.argv = argv,
                        .env = env,
                        .dir = dir,
                        .stdout_log = out_log,
                        .stderr_log = err_log,
                        .job_name = t->name,
                        .ranks = 1,
                        .gpus = ngpu,
                        .cpus = slice.cpus};
    trial_proc_t *p = NULL;
    int rc = trial_start(L->o->exec, &sp, &p, err, sizeof err);
    free(cfg);
    space_argv_free(argv);
    if (rc != 0) {
        sched_pool_release(L->o->pool, &slice);
        finish_error(L, t, err);
        return 1;
    }
    t->proc = p;
    t->slice = slice;
    t->has_slice = 1;
    t->status = SCHED_TRIAL_RUNNING;
    t->eof = t->exited = 0;
    t->started_mono = t->last_result_mono = mono_now();
    sched_slice_format(L->o->pool, &slice, t->slice_str, sizeof t->slice_str);
    L->running++;
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_SLICE | STORE_TU_STARTED |
                                        STORE_TU_PID | STORE_TU_EXEC_ID | STORE_TU_ATTEMPT,
                              .attempt = t->attempt,
                              .status = "RUNNING",
                              .slice = t->slice_str,
                              .started_at = wall_now(),
                              .pid = (int64_t)trial_pid(p),
                              .exec_id = trial_exec_id(p),
                              .node = trial_node(p)};
    update_trial_row(L, t, &u);
    return 1;
}

static void request_stop(struct loop *L, struct ltrial *t, enum stop_reason why)
{
    if (t->stop != STOP_NONE || t->status != SCHED_TRIAL_RUNNING) return;
    t->stop = why;
    if (why == STOP_EARLY) t->early_stopped = 1;
    trial_signal(t->proc, SIGTERM);
    t->stop_deadline = mono_now() + (L->set->stop_grace_s > 0 ? L->set->stop_grace_s : 0);
}

static const char *signame(int sig)
{
    switch (sig) {
    case SIGKILL:
        return "SIGKILL";
    case SIGTERM:
        return "SIGTERM";
    case SIGSEGV:
        return "SIGSEGV";
    case SIGABRT:
        return "SIGABRT";
    case SIGINT:
        return "SIGINT";
    case SIGBUS:
        return "SIGBUS";
    case SIGFPE:
        return "SIGFPE";
    case SIGILL:
        return "SIGILL";
    default:
        return "signal";
    }
}

/* The newest "checkpoint*" entry in the trial's directory, or NULL. A trial that can
 * resume writes its checkpoints there under that name (tune-train does); the next
 * attempt is told where with TUNE_RESUME_FROM. */
static char *find_checkpoint(const char *dir)
{
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d) return NULL;
    struct dirent *e;
    char best[4200] = "";
    struct timespec best_t = {0, 0};
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "checkpoint", 10) != 0) continue;
        if (strstr(e->d_name, ".tmp")) continue; /* half-written, never renamed */
        char path[4200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0) continue;
        if (!best[0] || st.st_mtim.tv_sec > best_t.tv_sec ||
            (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec > best_t.tv_nsec)) {
            snprintf(best, sizeof best, "%s", path);
            best_t = st.st_mtim;
        }
    }
    closedir(d);
    return best[0] ? strdup(best) : NULL;
}

/* CUDA's out-of-memory errors, as the CUDA runtime, cuBLAS/cuDNN and PyTorch print them. */
static int looks_like_cuda_oom(const char *tail)
{
    return strstr(tail, "CUDA out of memory") || strstr(tail, "CUDA_ERROR_OUT_OF_MEMORY") ||
           strstr(tail, "cudaErrorMemoryAllocation") ||
           strstr(tail, "CUBLAS_STATUS_ALLOC_FAILED") ||
           strstr(tail, "CUDNN_STATUS_ALLOC_FAILED") || strstr(tail, "out of memory allocating");
}

/* The trial's process has ended and its output is drained: record how it ended. */
static void finalize(struct loop *L, struct ltrial *t)
{
    char msg[512] = "";
    const char *status;
    if (t->stop == STOP_EARLY || t->stop == STOP_COMPLETE) {
        status = "TERMINATED";
        t->status = SCHED_TRIAL_TERMINATED;
    } else if (t->stop == STOP_USER) {
        /* Interrupted by the user: resumable, so neither finished nor failed. */
        status = "PAUSED";
        t->status = SCHED_TRIAL_PAUSED;
    } else if (t->stop == STOP_TIMEOUT) {
        status = "ERROR";
        t->status = SCHED_TRIAL_ERROR;
        snprintf(msg, sizeof msg, "%s", t->error ? t->error : "timed out");
    } else if (t->ex.signal == 0 && t->ex.code == 0) {
        status = "TERMINATED";
        t->status = SCHED_TRIAL_TERMINATED;
    } else {
        status = "ERROR";
        t->status = SCHED_TRIAL_ERROR;
        if (t->ex.signal)
            snprintf(msg, sizeof msg, "killed by signal %d (%s)", t->ex.signal,
                     signame(t->ex.signal));
        else
            snprintf(msg, sizeof msg, "exited with code %d", t->ex.code);
    }
    char tail[2048] = "";
    if (t->status == SCHED_TRIAL_ERROR && t->dir) {
        char path[4200];
        snprintf(path, sizeof path, "%s/stderr.log", t->dir);
        trial_file_tail(path, tail, sizeof tail);
        if (looks_like_cuda_oom(tail)) {
            char m2[sizeof msg];
            snprintf(m2, sizeof m2,
                     "CUDA out of memory (%s): lower the batch size, give each trial more GPU "
                     "memory (gpus_per_trial 1 instead of a fraction), or run fewer trials per GPU",
                     msg);
            snprintf(msg, sizeof msg, "%s", m2);
        }
        free(t->error);
        t->error = strdup(msg);
    }
    /* A failed attempt is retried up to max_failures times, from the trial's last
     * checkpoint when it wrote one (Ray Tune's max_failures / FailureConfig). */
    int retry =
        t->status == SCHED_TRIAL_ERROR && t->failures < L->set->max_failures && !L->stopping;
    if (retry) {
        t->failures++;
        char m2[sizeof msg + 64];
        snprintf(m2, sizeof m2, "attempt %d failed: %s; retrying (%d of %d)", t->attempt, msg,
                 t->failures, L->set->max_failures);
        free(t->resume_from);
        t->resume_from = find_checkpoint(t->dir);
        t->carry = t->resume_from != NULL;
        t->attempt++;
        t->status = SCHED_TRIAL_PENDING;
        t->iters = 0;
        t->last_time = t->last_metric = t->best_metric = NAN;
        t->stop = STOP_NONE;
        t->killed = 0;
        store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_ERROR | STORE_TU_EXIT,
                                  .status = "PENDING",
                                  .error = m2,
                                  .stderr_tail = tail,
                                  .exit_code = t->ex.signal ? -1 : t->ex.code,
                                  .exit_signal = t->ex.signal};
        update_trial_row(L, t, &u);
        if (t->has_slice) sched_pool_release(L->o->pool, &t->slice);
        t->has_slice = 0;
        trial_proc_free(t->proc);
        t->proc = NULL;
        L->running--;
        L->retry[L->nretry++] = (size_t)(t - L->t);
        return;
    }
    store_trial_update_t u = {.fields = STORE_TU_STATUS | STORE_TU_EARLY_STOPPED | STORE_TU_ENDED |
                                        STORE_TU_EXIT,
                              .status = status,
                              .early_stopped = t->early_stopped,
                              .ended_at = wall_now(),
                              .exit_code = t->ex.signal ? -1 : t->ex.code,
                              .exit_signal = t->ex.signal};
    if (t->status == SCHED_TRIAL_ERROR) {
        u.fields |= STORE_TU_ERROR;
        u.error = msg;
        u.stderr_tail = tail;
    }
    update_trial_row(L, t, &u);
    sched_on_trial_complete(L->policy, t->no);
    if (t->has_slice) sched_pool_release(L->o->pool, &t->slice);
    t->has_slice = 0;
    trial_proc_free(t->proc);
    t->proc = NULL;
    L->running--;
}

static void check_exit(struct loop *L, struct ltrial *t)
{
    if (t->status != SCHED_TRIAL_RUNNING || !t->proc) return;
    if (!t->exited) {
        int rc = trial_poll_exit(t->proc, &t->ex);
        if (rc == 1) {
            t->exited = 1;
            /* The leader is gone; anything left in its group (a forked child holding the
             * pipe) is killed now so that the output reaches EOF and nothing lingers. */
            if (!t->eof) trial_signal(t->proc, SIGKILL);
        }
    }
    if (t->exited && !t->eof) {
        struct line_ctx c = {L, t};
        int rc = trial_read(t->proc, on_line, &c, 0);
        if (rc != 0) t->eof = 1;
    }
    if (t->exited && t->eof) finalize(L, t);
}

/* ---- reporting ------------------------------------------------------------------ */
static void report(struct loop *L, int final)
{
    if (!L->o->report) return;
    sched_snapshot_t s;
    memset(&s, 0, sizeof s);
    s.experiment = L->set->name;
    s.policy = sched_policy_name(L->policy);
    s.metric = L->set->metric;
    s.mode_max = L->set->mode == SPACE_MODE_MAX;
    s.elapsed_s = mono_now() - L->t0;
    s.best_trial = -1;
    s.best_metric = NAN;
    for (size_t i = 0; i < L->n; i++) {
        struct ltrial *t = &L->t[i];
        sched_trial_view_t *v = &L->views[i];
        v->trial_no = t->no;
        v->name = t->name;
        v->status = t->status;
        v->early_stopped = t->early_stopped;
        v->slice = t->slice_str;
        v->config = t->config;
        v->iterations = t->iters;
        v->last_time = t->last_time;
        v->last_metric = t->last_metric;
        v->best_metric = t->best_metric;
        v->exec_id = "";
        v->node = "";
        if (t->proc) {
            v->exec_id = trial_exec_id(t->proc);
            v->node = trial_node(t->proc);
        }
        v->error = t->error;
        s.counts[t->status]++;
        if (t->early_stopped) s.early_stopped++;
        if (better(s.mode_max, t->last_metric, s.best_metric)) {
            s.best_metric = t->last_metric;
            s.best_trial = t->no;
        }
    }
    sched_pool_usage(L->o->pool, &s.gpus_used, &s.gpus_total, &s.cpus_used, &s.cpus_total);
    size_t nr = sched_policy_rungs(L->policy, L->rungs, sizeof L->rungs / sizeof L->rungs[0]);
    s.rungs = L->rungs;
    s.nrungs = nr < 256 ? nr : 256;
    s.trials = L->views;
    s.ntrials = L->n;
    s.results = L->results;
    s.ignored = L->ignored;
    s.bad_lines = L->bad_lines;
    s.stopping = L->stopping;
    L->o->report(L->o->report_ud, &s, final);
}

/* ---- setup ---------------------------------------------------------------------- */
static int make_policy(struct loop *L, char *err, size_t errlen)
{
    const space_settings_t *set = L->set;
    sched_opts_t po = {.type = set->sched.type == SPACE_SCHED_ASHA     ? SCHED_POLICY_ASHA
                               : set->sched.type == SPACE_SCHED_MEDIAN ? SCHED_POLICY_MEDIAN
                                                                       : SCHED_POLICY_FIFO,
                       .mode_max = set->mode == SPACE_MODE_MAX,
                       .max_t = set->sched.max_t,
                       .grace_period = set->sched.grace_period,
                       .reduction_factor = set->sched.reduction_factor,
                       .brackets = set->sched.brackets,
                       .min_samples_required = set->sched.min_samples_required,
                       .seed = set->seed};
    return sched_policy_new(&po, &L->policy, err, errlen);
}

/* ---- resume --------------------------------------------------------------------- */
struct id_index {
    int64_t id;
    size_t idx;
};

static int cmp_id(const void *a, const void *b)
{
    int64_t x = ((const struct id_index *)a)->id, y = ((const struct id_index *)b)->id;
    return x < y ? -1 : x > y;
}

struct resume_ctx {
    struct loop *L;
    struct id_index *by_id;
    size_t nby;
};

static sched_trial_status_t status_from(const char *s)
{
    for (int k = 0; k < SCHED_TRIAL_NSTATUS; k++)
        if (strcmp(s, sched_status_name((sched_trial_status_t)k)) == 0)
            return (sched_trial_status_t)k;
    return SCHED_TRIAL_PENDING;
}

static int on_stored_trial(void *ud, const store_trial_row_t *r)
{
    struct loop *L = ud;
    if (r->trial_no < 0 || (size_t)r->trial_no >= L->n) return 0; /* not of this space */
    struct ltrial *t = &L->t[r->trial_no];
    t->id = r->id;
    t->status = status_from(r->status);
    t->early_stopped = r->early_stopped;
    t->attempt = r->attempt > 0 ? r->attempt : 1;
    if (r->error) t->error = strdup(r->error);
    if (r->slice) snprintf(t->slice_str, sizeof t->slice_str, "%s", r->slice);
    return 0;
}

/* Replays one stored result: the policy sees every result again in arrival order, so
 * its rungs are what they were; the trial's own counters follow its current attempt. */
static int on_stored_result(void *ud, const store_result_row_t *r)
{
    struct resume_ctx *c = ud;
    struct id_index key = {r->trial_id, 0};
    struct id_index *hit = bsearch(&key, c->by_id, c->nby, sizeof key, cmp_id);
    if (!hit) return 0;
    struct ltrial *t = &c->L->t[hit->idx];
    if (!isnan(r->time_value)) {
        sched_decision_t d;
        sched_on_result(c->L->policy, t->no, r->time_value, r->metric, &d);
        /* The same state and order give the same decision: a trial that was told to stop
         * before the crash, but had not ended yet, stays stopped. */
        if (d.action == SCHED_STOP) t->stop = STOP_EARLY;
        if (d.action == SCHED_COMPLETE) t->stop = STOP_COMPLETE;
    }
    if (r->attempt == t->attempt) {
        t->iters++;
        t->last_time = r->time_value;
        t->last_metric = r->metric;
        if (better(c->L->set->mode == SPACE_MODE_MAX, r->metric, t->best_metric))
            t->best_metric = r->metric;
    }
    c->L->results++;
    return 0;
}

static int load_trials(struct loop *L, char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    if (store_trials_load(o->store, o->experiment_id, on_stored_trial, L, err, errlen) != 0)
        return SCHED_EINVAL;
    struct resume_ctx c = {L, calloc(L->n ? L->n : 1, sizeof *c.by_id), 0};
    if (!c.by_id) {
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    for (size_t i = 0; i < L->n; i++)
        if (L->t[i].id > 0) c.by_id[c.nby++] = (struct id_index){L->t[i].id, i};
    qsort(c.by_id, c.nby, sizeof *c.by_id, cmp_id);
    int rc = store_results_replay(o->store, o->experiment_id, on_stored_result, &c, err, errlen);
    free(c.by_id);
    if (rc != 0) return SCHED_EINVAL;
    if (store_begin(o->store, err, errlen) != 0) return SCHED_EINVAL;
    for (size_t i = 0; i < L->n; i++) {
        struct ltrial *t = &L->t[i];
        if (t->status == SCHED_TRIAL_TERMINATED || t->status == SCHED_TRIAL_ERROR) {
            sched_on_trial_complete(L->policy, t->no);
        } else if ((t->status == SCHED_TRIAL_RUNNING || t->status == SCHED_TRIAL_PAUSED) &&
                   t->stop != STOP_NONE) {
            t->status = SCHED_TRIAL_TERMINATED;
            t->early_stopped = t->stop == STOP_EARLY;
            store_trial_update_t u = {.fields =
                                          STORE_TU_STATUS | STORE_TU_EARLY_STOPPED | STORE_TU_ENDED,
                                      .status = "TERMINATED",
                                      .early_stopped = t->early_stopped,
                                      .ended_at = wall_now()};
            if (store_trial_update(o->store, t->id, &u, err, errlen) != 0) return SCHED_EINVAL;
            sched_on_trial_complete(L->policy, t->no);
        } else if (t->status == SCHED_TRIAL_RUNNING || t->status == SCHED_TRIAL_PAUSED) {
            /* Interrupted mid-run: a new attempt, from its checkpoint where there is one. */
            char dir[4096];
            snprintf(dir, sizeof dir, "%s/%s", o->results_dir, t->name);
            t->resume_from = find_checkpoint(dir);
            t->carry = t->resume_from != NULL;
            t->attempt++;
            t->iters = 0;
            t->last_time = t->last_metric = t->best_metric = NAN;
            t->status = SCHED_TRIAL_PENDING;
            t->stop = STOP_NONE;
            t->slice_str[0] = 0;
            store_trial_update_t u = {.fields = STORE_TU_STATUS, .status = "PENDING"};
            if (store_trial_update(o->store, t->id, &u, err, errlen) != 0) return SCHED_EINVAL;
            L->retry[L->nretry++] = i;
        }
    }
    return store_commit(o->store, err, errlen) == 0 ? 0 : SCHED_EINVAL;
}

/* Samples every configuration up front and records each trial as PENDING, in one
 * transaction, so the database always lists the whole experiment. On resume the trials
 * come from the store instead; any the store lacks are created as on a first run. */
static int create_trials(struct loop *L, char *err, size_t errlen)
{
    const sched_run_opts_t *o = L->o;
    L->n = space_num_trials(o->space);
    L->t = calloc(L->n ? L->n : 1, sizeof *L->t);
    L->views = calloc(L->n ? L->n : 1, sizeof *L->views);
    L->retry = calloc(L->n ? L->n : 1, sizeof *L->retry);
    if (!L->t || !L->views || !L->retry) {
        snprintf(err, errlen, "out of memory for %zu trials", L->n);
        return SCHED_ENOMEM;
    }
    for (size_t i = 0; i < L->n; i++) {
        struct ltrial *t = &L->t[i];
        t->no = (int64_t)i;
        t->last_time = t->last_metric = t->best_metric = NAN;
        t->port = -1;
        t->attempt = 1;
        snprintf(t->name, sizeof t->name, "trial_%05zu", i);
        if (space_sample(o->space, i, &t->config, err, errlen) != 0) return SCHED_EINVAL;
        /* Bracket assignment follows trial order, so a resumed policy assigns the same. */
        if (sched_on_trial_add(L->policy, t->no) != 0) {
            snprintf(err, errlen, "scheduler cannot take trial %zu", i);
            return SCHED_EINVAL;
        }
    }
    if (o->resume) {
        int rc = load_trials(L, err, errlen);
        if (rc != 0) return rc;
    }
    if (store_begin(o->store, err, errlen) != 0) return SCHED_EINVAL;
    for (size_t i = 0; i < L->n; i++) {
        struct ltrial *t = &L->t[i];
        if (t->id > 0) continue; /* recorded already */
        char *cfg = space_json_print(t->config);
        if (!cfg) {
            snprintf(err, errlen, "out of memory");
            return SCHED_ENOMEM;
        }
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", o->results_dir, t->name);
        int rc = store_trial_create(o->store, o->experiment_id, t->no, t->name, cfg, dir, &t->id,
                                    err, errlen);
        free(cfg);
        if (rc != 0) return SCHED_EINVAL;
    }
    return store_commit(o->store, err, errlen) == 0 ? 0 : SCHED_EINVAL;
}

static void free_loop(struct loop *L)
{
    for (size_t i = 0; i < L->n; i++) {
        struct ltrial *t = &L->t[i];
        if (t->proc) trial_proc_free(t->proc);
        if (t->has_slice) sched_pool_release(L->o->pool, &t->slice);
        cJSON_Delete(t->config);
        free(t->error);
        free(t->dir);
        free(t->resume_from);
    }
    free(L->retry);
    free(L->t);
    free(L->views);
    sched_policy_free(L->policy);
}

/* ---- the loop ------------------------------------------------------------------- */
int sched_run(const sched_run_opts_t *o, sched_run_result_t *res, char *err, size_t errlen)
{
    struct loop L;
    memset(&L, 0, sizeof L);
    L.o = o;
    L.set = space_settings(o->space);
    L.t0 = mono_now();
    L.time_is_iter = strcmp(L.set->sched.time_attr, "training_iteration") == 0;
    int rc = make_policy(&L, err, errlen);
    if (rc != 0) return rc;
    rc = create_trials(&L, err, errlen);
    if (rc != 0) {
        free_loop(&L);
        return rc;
    }

    int sp[2] = {-1, -1};
    struct sigaction old_int, old_term, old_chld;
    if (pipe2(sp, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "cannot create signal pipe: %s", strerror(errno));
        free_loop(&L);
        return SCHED_EINVAL;
    }
    loop_sigpipe_w = sp[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = loop_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCHLD, &sa, &old_chld);
    if (o->handle_signals) {
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
    }

    size_t cap_fds = L.n + 1;
    struct pollfd *pfd = calloc(cap_fds, sizeof *pfd);
    struct ltrial **pt = calloc(cap_fds, sizeof *pt);
    if (!pfd || !pt) {
        snprintf(err, errlen, "out of memory");
        rc = SCHED_ENOMEM;
        goto out;
    }
    int maxc = L.set->max_concurrent;
    double last_report = -1e9;
    char serr[512];

    for (;;) {
        int began = store_begin(o->store, serr, sizeof serr) == 0;
        if (!began) loop_fail(&L, "cannot write to the database", serr);

        /* Launch retries first, then pending trials in order, while their slices fit, for
         * at most LOOP_LAUNCH_SLICE_S of this turn: a launch waits for the trial's exec,
         * which under load takes tens of milliseconds, and 200 of them in one turn kept
         * results unread and the table unrefreshed for 10 s in the soak. The rest go
         * next turn, which then polls without waiting. */
        double launch_until = mono_now() + LOOP_LAUNCH_SLICE_S;
        int deferred = 0;
        while (!deferred && !L.stopping && L.nretry > 0 && (maxc <= 0 || (int)L.running < maxc)) {
            if (!launch(&L, &L.t[L.retry[0]])) break;
            memmove(L.retry, L.retry + 1, --L.nretry * sizeof *L.retry);
            deferred = mono_now() >= launch_until;
        }
        while (L.next < L.n && L.t[L.next].status != SCHED_TRIAL_PENDING)
            L.next++;
        while (!deferred && !L.stopping && L.nretry == 0 && L.next < L.n &&
               (maxc <= 0 || (int)L.running < maxc)) {
            struct ltrial *t = &L.t[L.next];
            if (t->status != SCHED_TRIAL_PENDING) {
                L.next++;
                continue;
            }
            if (!launch(&L, t)) break;
            L.next++;
            deferred = mono_now() >= launch_until;
        }
        if (L.stopping) {
            for (size_t i = 0; i < L.n; i++)
                if (L.t[i].status == SCHED_TRIAL_RUNNING) request_stop(&L, &L.t[i], STOP_USER);
        }

        if (L.running == 0 && (L.stopping || (L.next >= L.n && L.nretry == 0))) {
            if (began && store_commit(o->store, serr, sizeof serr) != 0)
                loop_fail(&L, "cannot write to the database", serr);
            break;
        }

        /* Timeouts: the nearest stop deadline, the next report, the trial timeouts. */
        double now = mono_now();
        double wake = now + 1.0;
        if (o->report && o->report_every_s > 0 && last_report + o->report_every_s < wake)
            wake = last_report + o->report_every_s;
        size_t nfd = 1;
        pfd[0].fd = sp[0];
        pfd[0].events = POLLIN;
        for (size_t i = 0; i < L.n; i++) {
            struct ltrial *t = &L.t[i];
            if (t->status != SCHED_TRIAL_RUNNING) continue;
            if (t->stop != STOP_NONE && !t->killed && t->stop_deadline < wake)
                wake = t->stop_deadline;
            int fd = t->proc ? trial_fd(t->proc) : -1;
            if (fd >= 0) {
                pfd[nfd].fd = fd;
                pfd[nfd].events = POLLIN;
                pt[nfd] = t;
                nfd++;
            }
        }
        int timeout_ms = (int)((wake - now) * 1000.0);
        if (timeout_ms < 0 || deferred) timeout_ms = 0;
        if (began && store_commit(o->store, serr, sizeof serr) != 0)
            loop_fail(&L, "cannot write to the database", serr);

        int n = poll(pfd, nfd, timeout_ms);
        if (n < 0 && errno != EINTR) {
            snprintf(err, errlen, "poll failed: %s", strerror(errno));
            rc = SCHED_EINVAL;
            break;
        }
        began = store_begin(o->store, serr, sizeof serr) == 0;
        if (!began) loop_fail(&L, "cannot write to the database", serr);
        L.rx_wall = L.rx_mono = 0;

        int child_event = 0;
        if (n > 0 && (pfd[0].revents & POLLIN)) {
            unsigned char sigs[64];
            ssize_t k;
            while ((k = read(sp[0], sigs, sizeof sigs)) > 0) {
                for (ssize_t j = 0; j < k; j++) {
                    if (sigs[j] == SIGCHLD) {
                        child_event = 1;
                    } else if (sigs[j] == SIGINT || sigs[j] == SIGTERM) {
                        if (L.stopping && L.stop_signal) L.hard_stop = 1;
                        L.stopping = 1;
                        if (!L.stop_signal) L.stop_signal = sigs[j];
                    }
                }
            }
        }
        for (size_t k = 1; n > 0 && k < nfd; k++) {
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            struct ltrial *t = pt[k];
            struct line_ctx c = {&L, t};
            int r = trial_read(t->proc, on_line, &c, 0);
            if (r != 0) {
                t->eof = 1;
                child_event = 1;
            }
        }
        now = mono_now();
        for (size_t i = 0; i < L.n; i++) {
            struct ltrial *t = &L.t[i];
            if (t->status != SCHED_TRIAL_RUNNING) continue;
            if (L.hard_stop && !t->killed) {
                t->stop = t->stop == STOP_NONE ? STOP_USER : t->stop;
                trial_signal(t->proc, SIGKILL);
                t->killed = 1;
            }
            if (t->stop == STOP_NONE) {
                char why[160] = "";
                if (L.set->time_budget_s > 0 && now - t->started_mono > L.set->time_budget_s)
                    snprintf(why, sizeof why, "ran past time_budget_s (%g s)",
                             L.set->time_budget_s);
                else if (L.set->result_timeout_s > 0 &&
                         now - t->last_result_mono > L.set->result_timeout_s)
                    snprintf(why, sizeof why, "reported nothing for result_timeout_s (%g s)",
                             L.set->result_timeout_s);
                if (why[0]) {
                    free(t->error);
                    t->error = strdup(why);
                    request_stop(&L, t, STOP_TIMEOUT);
                }
            }
            /* Slurm says which job/step and node a trial got only once it runs there. */
            const char *xid = trial_exec_id(t->proc);
            if (strcmp(xid, t->exec_id) != 0) {
                snprintf(t->exec_id, sizeof t->exec_id, "%s", xid);
                store_trial_update_t u = {
                    .fields = STORE_TU_EXEC_ID, .exec_id = xid, .node = trial_node(t->proc)};
                update_trial_row(&L, t, &u);
            }
            /* The executor's watchdog, about once a second (Slurm: an srun whose controller
             * is gone hangs forever): a trial it condemns is killed and ends as ERROR. */
            if (t->stop == STOP_NONE && !t->killed && now - t->health_at >= 1.0) {
                char why[512];
                t->health_at = now;
                if (trial_health(t->proc, now, why, sizeof why) == 1) {
                    free(t->error);
                    t->error = strdup(why);
                    t->stop = STOP_TIMEOUT;
                    trial_signal(t->proc, SIGKILL);
                    t->killed = 1;
                }
            }
            if (t->stop != STOP_NONE && !t->killed && now >= t->stop_deadline) {
                trial_signal(t->proc, SIGKILL);
                t->killed = 1;
            }
            if (child_event || t->eof || t->killed) check_exit(&L, t);
        }
        if (L.fatal) {
            for (size_t i = 0; i < L.n; i++)
                if (L.t[i].status == SCHED_TRIAL_RUNNING) request_stop(&L, &L.t[i], STOP_USER);
        }
        if (began && store_commit(o->store, serr, sizeof serr) != 0)
            loop_fail(&L, "cannot write to the database", serr);
        if (o->report && o->report_every_s > 0 && now - last_report >= o->report_every_s) {
            report(&L, 0);
            last_report = now;
        }
    }

    if (rc == 0) {
        report(&L, 1);
        memset(res, 0, sizeof *res);
        res->interrupted = L.stopping && !L.fatal && L.stop_signal != 0;
        res->signal = L.stop_signal;
        res->best_trial = -1;
        res->best_metric = NAN;
        for (size_t i = 0; i < L.n; i++) {
            struct ltrial *t = &L.t[i];
            if (t->status == SCHED_TRIAL_TERMINATED) res->terminated++;
            if (t->status == SCHED_TRIAL_ERROR) res->errored++;
            if (t->status == SCHED_TRIAL_PAUSED) res->paused++;
            if (t->early_stopped) res->early_stopped++;
            if (better(L.set->mode == SPACE_MODE_MAX, t->last_metric, res->best_metric)) {
                res->best_metric = t->last_metric;
                res->best_trial = t->no;
            }
        }
        if (L.fatal) {
            snprintf(err, errlen, "%s", L.fatal_msg);
            rc = SCHED_EINVAL;
        }
    }
out:
    free(pfd);
    free(pt);
    free_loop(&L);
    sigaction(SIGCHLD, &old_chld, NULL);
    if (o->handle_signals) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    loop_sigpipe_w = -1;
    close(sp[0]);
    close(sp[1]);
    return rc;
}
