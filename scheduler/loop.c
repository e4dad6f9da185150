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

/* STOP_COMPLETE: max_t or a "stop" criterion reached, the trial may finish by itself;
 * STOP_EXPERIMENT: the experiment ended as planned (its time budget, a target):
 * TERMINATED, neither early-stopped nor failed. */
enum stop_reason {
    STOP_NONE = 0,
    STOP_EARLY,
    STOP_COMPLETE,
    STOP_USER,
    STOP_TIMEOUT,
    STOP_EXPERIMENT
};

/* Keys read from every result: training_iteration, time_attr, metric, then the "stop"
 * criteria, then the reporter's metric_columns. */
#define LOOP_KEY_STOP 3
#define LOOP_MAX_KEYS (3 + SPACE_MAX_STOP + SPACE_MAX_COLUMNS)

struct ltrial {
    int64_t no, id;
    sched_trial_status_t status;
    int early_stopped;
    enum stop_reason stop;
    double stop_deadline; /* monotonic: SIGKILL after this */
    double term_at;       /* monotonic: SIGTERM at this time (a completed trial's grace) */
    int term_sent;
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
    double first_result_mono; /* this attempt's first result, 0 if none yet */
    int reported;             /* any result recorded, in any attempt */
    double ran_s;             /* how long the last attempt ran, once it ended */
    double columns[SPACE_MAX_COLUMNS];
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
    /* Keys read from each result (see LOOP_KEY_STOP) and where the columns start. */
    const char *keys[LOOP_MAX_KEYS];
    size_t nkeys, col0, ncols;
    int dup[LOOP_MAX_KEYS]; /* the earlier slot holding the same key, or -1 */
    int metric_checked;     /* the first result was checked for metric and time_attr */
    char notice[1024];      /* allow_missing_metric's warning */
    sched_end_t ended_by;
    int64_t end_trial;
    char end_msg[1024], end_detail[2048];
    struct {
        char msg[512];
        int count;
        int64_t first; /* index of the first trial that failed so */
    } early[8];        /* identical early failures, for fail_fast */
    size_t nearly;
    size_t buffered;
    int64_t buffered_trial;
    char bad_example[160];
    int64_t bad_trial;
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

/* The numbers the loop reads from a result (v[0] training_iteration, v[1] the time_attr,
 * v[2] the metric, then the "stop" keys and the metric columns: L->keys) and the text to
 * store, valid JSON. */
struct result_in {
    double v[LOOP_MAX_KEYS];
    const char *json;
    size_t json_len;
};

/* Copies s into out (n bytes) with control characters and non-ASCII escaped and the
 * text cut at `max` characters, so that a trial's output quoted in a message can never
 * reach the terminal as an escape sequence. */
static void escape_quote(const char *s, size_t len, char *out, size_t n, size_t max)
{
    size_t k = 0, shown = 0;
    for (size_t i = 0; i < len && k + 8 < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (shown >= max) {
            k += (size_t)snprintf(out + k, n - k, "...");
            break;
        }
        if (ch < 0x20 || ch == 0x7f)
            k += (size_t)snprintf(out + k, n - k, "\\x%02x", ch);
        else
            out[k++] = (char)ch;
        shown++;
    }
    out[k < n ? k : n - 1] = 0;
}

/* Ends the experiment early for `why` (no new trials; running ones are stopped and
 * recorded as TERMINATED). The first reason given is the one reported. */
static void end_experiment(struct loop *L, sched_end_t why, int64_t trial, const char *msg)
{
    if (L->ended_by != SCHED_END_ALL || L->fatal) return;
    L->ended_by = why;
    L->end_trial = trial;
    snprintf(L->end_msg, sizeof L->end_msg, "%.1000s", msg);
    L->stopping = 1;
}

/* Ray Tune refuses a result without the experiment's metric ("Trial returned a result
 * which did not include the specified metric"); here the first result of the run is
 * checked, once, for the metric and the time_attr, and the message names the keys the
 * trial did report with a did-you-mean. */
static void check_first_result(struct loop *L, struct ltrial *t, const cJSON *r)
{
    const space_settings_t *set = L->set;
    L->metric_checked = 1;
    const char *missing[2];
    const char *what[2];
    int nm = 0;
    if (set->metric && !cJSON_GetObjectItemCaseSensitive(r, set->metric)) {
        missing[nm] = set->metric;
        what[nm++] = "the experiment's \"metric\"";
    }
    if (!L->time_is_iter && set->sched.type != SPACE_SCHED_FIFO &&
        !cJSON_GetObjectItemCaseSensitive(r, set->sched.time_attr)) {
        missing[nm] = set->sched.time_attr;
        what[nm++] = "the scheduler's \"time_attr\"";
    }
    if (nm == 0) return;
    const char *cand[64];
    size_t nc = 0;
    char keys[400] = "";
    size_t kl = 0;
    for (const cJSON *c = r->child; c; c = c->next) {
        if (!c->string) continue;
        if (nc < 64) cand[nc++] = c->string;
        if (kl + strlen(c->string) + 8 < sizeof keys)
            kl += (size_t)snprintf(keys + kl, sizeof keys - kl, "%s\"%s\"", kl ? ", " : "",
                                   c->string);
    }
    char msg[1024];
    size_t ml = 0;
    for (int i = 0; i < nm; i++) {
        const char *dym = space_suggest(missing[i], cand, nc);
        char d[160] = "";
        if (dym) snprintf(d, sizeof d, " (did you mean \"%s\"?)", dym);
        ml += (size_t)snprintf(msg + ml, ml < sizeof msg ? sizeof msg - ml : 0,
                               "%s%s reports no \"%s\", %s%s", i ? "; " : "", t->name, missing[i],
                               what[i], d);
        if (ml >= sizeof msg) break;
    }
    if (ml < sizeof msg)
        snprintf(msg + ml, sizeof msg - ml, ". Its first result has: %s",
                 keys[0] ? keys : "no keys");
    if (set->allow_missing_metric) {
        snprintf(
            L->notice, sizeof L->notice,
            "warning: %.800s (allow_missing_metric is true: the run goes on, but no trial can be "
            "ranked or stopped early by a value it never reports)",
            msg);
        return;
    }
    char full[1200];
    snprintf(full, sizeof full,
             "%s. Fix the name in space.json (or set \"allow_missing_metric\": true to run anyway)",
             msg);
    end_experiment(L, SCHED_END_NO_METRIC, t->no, full);
}

/* Records a decision row (errors go to loop_fail). */
static void add_decision(struct loop *L, struct ltrial *t, const store_decision_t *sd)
{
    char err[256];
    if (store_decision_add(L->o->store, sd, err, sizeof err) != 0)
        loop_fail(L, "cannot record decision", err);
    (void)t;
}

/* Ray Tune's stop={...}: the trial is done when any criterion is reached: for the
 * experiment's metric "at least as good as the target" in the experiment's mode, for any
 * other key result >= target. Returns the index of the criterion reached, or -1. */
static int stop_reached(const struct loop *L, const struct result_in *in)
{
    const space_settings_t *set = L->set;
    for (size_t i = 0; i < set->nstop; i++) {
        double v = in->v[LOOP_KEY_STOP + i], target = set->stop[i].target;
        if (isnan(v)) continue;
        int is_metric = set->metric && strcmp(set->stop[i].key, set->metric) == 0;
        if ((is_metric && set->mode == SPACE_MODE_MIN) ? v <= target : v >= target) return (int)i;
    }
    return -1;
}

/* One result of trial t: recorded, counted and judged. */
static void on_result(struct line_ctx *c, const struct result_in *in)
{
    struct loop *L = c->L;
    struct ltrial *t = c->t;
    const space_settings_t *set = L->set;
    double it = in->v[0], tv = in->v[1], m = in->v[2];
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
    t->reported = 1;
    t->last_time = tv;
    t->last_metric = m;
    t->last_result_mono = L->rx_mono;
    if (t->first_result_mono == 0) t->first_result_mono = L->rx_mono;
    for (size_t k = 0; k < L->ncols; k++)
        t->columns[k] = in->v[L->col0 + k];
    if (better(set->mode == SPACE_MODE_MAX, m, t->best_metric)) t->best_metric = m;

    sched_decision_t d;
    d.judged = 0;
    d.action = SCHED_CONTINUE;
    if (!isnan(tv)) /* without its time the policy cannot place the result */
        sched_on_result(L->policy, t->no, tv, m, &d);
    if (d.judged) {
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
        else if (d.action == SCHED_STOP && isnan(d.value))
            snprintf(reason, sizeof reason,
                     "reported NaN at rung %d (milestone %g): diverged; NaN stays out of the "
                     "cutoff",
                     d.rung, d.milestone);
        else if (isnan(d.cutoff))
            snprintf(reason, sizeof reason, "first result at rung %d (milestone %g): no cutoff yet",
                     d.rung, d.milestone);
        else if (d.action == SCHED_STOP)
            snprintf(reason, sizeof reason, "worse than rung %d cutoff at milestone %g", d.rung,
                     d.milestone);
        else
            snprintf(reason, sizeof reason, "within rung %d cutoff at milestone %g: promoted",
                     d.rung, d.milestone);
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
        add_decision(L, t, &sd);
        if (L->fatal) return;
    }
    if (d.action == SCHED_STOP) {
        request_stop(L, t, STOP_EARLY);
        return;
    }
    if (d.action == SCHED_COMPLETE) {
        request_stop(L, t, STOP_COMPLETE);
        return;
    }
    int k = stop_reached(L, in);
    if (k < 0) return;
    const space_stop_t *c0 = &set->stop[k];
    int is_metric = set->metric && strcmp(c0->key, set->metric) == 0;
    char vb[32], tb[32], reason[400];
    space_format_number(in->v[LOOP_KEY_STOP + k], vb);
    space_format_number(c0->target, tb);
    snprintf(reason, sizeof reason, "reached stop criterion %.100s: %s %s %s", c0->key, vb,
             is_metric && set->mode == SPACE_MODE_MIN ? "<=" : ">=", tb);
    store_decision_t sd = {.trial_id = t->id,
                           .iteration = (int64_t)it,
                           .time_value = tv,
                           .action = "complete",
                           .bracket = -1,
                           .rung = -1,
                           .milestone = NAN,
                           .value = in->v[LOOP_KEY_STOP + k],
                           .cutoff = c0->target,
                           .reason = reason,
                           .wall_time = now};
    add_decision(L, t, &sd);
    request_stop(L, t, STOP_COMPLETE);
    if (is_metric && set->stop_experiment_on_target) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s reached the target %s %s %s (%s)", t->name, c0->key,
                 set->mode == SPACE_MODE_MIN ? "<=" : ">=", tb, vb);
        end_experiment(L, SCHED_END_TARGET, t->no, msg);
    }
}

/* A result line that could not be read: counted, and the first one kept (escaped) to be
 * quoted in the summary. */
static void bad_line(struct loop *L, struct ltrial *t, const char *line, size_t len)
{
    L->bad_lines++;
    if (L->bad_example[0]) return;
    escape_quote(line, len, L->bad_example, sizeof L->bad_example, 100);
    L->bad_trial = t->no;
}

static void on_line(void *ud, const char *line, size_t len, int truncated)
{
    struct line_ctx *c = ud;
    struct loop *L = c->L;
    if (truncated) {
        bad_line(L, c->t, line, len);
        return;
    }
    /* The fast path: a plain JSON object with its training_iteration is stored as it came,
     * its numbers read without building a tree. Anything else (no training_iteration,
     * NaN/Infinity, what the scan leaves alone) goes through cJSON below. The run's first
     * result is also parsed once, to check its keys. */
    struct result_in in;
    if (L->nkeys <= TRIAL_SCAN_MAX_KEYS &&
        trial_result_scan(line, len, L->keys, L->nkeys, in.v) == 1 && !isnan(in.v[0])) {
        if (c->t->stop != STOP_NONE) {
            L->ignored++;
        } else if (!L->fatal) {
            cJSON *r = NULL;
            if (!L->metric_checked && trial_result_parse(line, len, &r) == 1)
                check_first_result(L, c->t, r);
            cJSON_Delete(r);
            if (L->time_is_iter) in.v[1] = in.v[0];
            /* The scan fills a key's first slot only: later slots of the same key (a "stop"
             * criterion on the metric, say) take its value. */
            for (size_t k = LOOP_KEY_STOP; k < L->nkeys; k++)
                if (L->dup[k] >= 0) in.v[k] = in.v[L->dup[k]];
            in.json = line;
            in.json_len = len;
            on_result(c, &in);
        }
        return;
    }
    cJSON *r = NULL;
    if (trial_result_parse(line, len, &r) != 1) {
        /* A line that opens like a JSON object but does not parse was surely meant as a
         * result ("-nan" from printf, a Python dict printed with print()): count it so the
         * user hears of it, where plain log lines pass silently. */
        size_t i = 0;
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i < len && line[i] == '{') bad_line(L, c->t, line, len);
        return;
    }
    if (c->t->stop != STOP_NONE) {
        /* Results after the decision to stop are logged (the stdout log has them) but
         * not recorded, as in Ray Tune. */
        L->ignored++;
    } else if (!L->fatal) {
        if (!L->metric_checked) check_first_result(L, c->t, r);
        in.v[0] = trial_result_number(r, "training_iteration");
        in.json = line;
        in.json_len = len;
        int added = 0;
        if (isnan(in.v[0])) {
            /* Counted by the scheduler when the trial does not send it (Ray Tune does the
             * same for function trainables). */
            in.v[0] = (double)(c->t->iters + 1);
            cJSON_AddNumberToObject(r, "training_iteration", in.v[0]);
            added = 1;
        }
        for (size_t k = 1; k < L->nkeys; k++)
            in.v[k] = L->keys[k] ? trial_result_number(r, L->keys[k]) : NAN;
        if (L->time_is_iter) in.v[1] = in.v[0];
        for (size_t k = LOOP_KEY_STOP; k < L->nkeys; k++)
            if (L->keys[k] && strcmp(L->keys[k], "training_iteration") == 0) in.v[k] = in.v[0];
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
    /* Python buffers stdout when it is a pipe, so a script that prints without flush
     * delivers every result at exit (ASHA then stops nothing in time): unbuffered unless
     * the user's environment says otherwise. */
    char *env[12] = {trial_id, exp, tdir, cfg_env, cuda, num_gpus, omp, "MASTER_ADDR=127.0.0.1",
                     port};
    int ne = 9;
    if (!getenv("PYTHONUNBUFFERED")) env[ne++] = "PYTHONUNBUFFERED=1";
    if (resume[0]) env[ne++] = resume;
    env[ne] = NULL;
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
    t->first_result_mono = 0;
    t->term_sent = 0;
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

/* Stops a running trial: SIGTERM now, SIGKILL after stop_grace_s. A trial that completed
 * (max_t or a "stop" criterion) is first given stop_grace_s to exit by itself, so that the
 * code after its last report (saving the final model) runs; only then SIGTERM, and
 * SIGKILL another stop_grace_s later. */
static void request_stop(struct loop *L, struct ltrial *t, enum stop_reason why)
{
    if (t->stop != STOP_NONE || t->status != SCHED_TRIAL_RUNNING) return;
    t->stop = why;
    if (why == STOP_EARLY) t->early_stopped = 1;
    double grace = L->set->stop_grace_s > 0 ? L->set->stop_grace_s : 0;
    double now = mono_now();
    if (why == STOP_COMPLETE && grace > 0) {
        t->term_at = now + grace;
        t->term_sent = 0;
        t->stop_deadline = t->term_at + grace;
        return;
    }
    trial_signal(t->proc, SIGTERM);
    t->term_sent = 1;
    t->stop_deadline = now + grace;
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

/* The last line of a stderr tail with something in it, escaped and cut short; 0 if none. */
static int last_stderr_line(const char *tail, char *out, size_t n)
{
    size_t end = strlen(tail);
    for (;;) {
        while (end > 0 && (tail[end - 1] == '\n' || tail[end - 1] == '\r' || tail[end - 1] == ' ' ||
                           tail[end - 1] == '\t'))
            end--;
        if (end == 0) return 0;
        size_t start = end;
        while (start > 0 && tail[start - 1] != '\n')
            start--;
        size_t s = start;
        while (s < end && (tail[s] == ' ' || tail[s] == '\t'))
            s++;
        /* Python's caret lines ("    ^^^^") under a source line say nothing by themselves. */
        size_t k = s;
        while (k < end && (tail[k] == '^' || tail[k] == '~' || tail[k] == ' '))
            k++;
        if (k < end) {
            escape_quote(tail + s, end - s, out, n, 200);
            return 1;
        }
        end = start;
    }
}

/* The first lines (at most 10) of a file, escaped, for a message; "" if unreadable. */
static void file_head(const char *path, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    char buf[1500];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    size_t lines = 0, o = 0;
    for (size_t i = 0; i < k && lines < 10 && o + 8 < n; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (ch == '\n') {
            lines++;
            out[o++] = '\n';
        } else if (ch < 0x20 && ch != '\t') {
            o += (size_t)snprintf(out + o, n - o, "\\x%02x", ch);
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o < n ? o : n - 1] = 0;
}

/* fail_fast (Ray Tune's FailureConfig(fail_fast=...), counted): trials that fail before
 * reporting anything, with the same message once their own directory and name are taken
 * out of it, are the same mistake each time (a wrong path, a missing module); after
 * fail_fast of them the experiment stops instead of failing every trial. */
static void count_early_failure(struct loop *L, struct ltrial *t, const char *msg)
{
    if (L->set->fail_fast <= 0 || t->reported || L->stopping) return;
    char norm[512];
    size_t o = 0;
    size_t dl = t->dir ? strlen(t->dir) : 0, nl = strlen(t->name);
    for (const char *p = msg; *p && o + 16 < sizeof norm;) {
        if (dl && strncmp(p, t->dir, dl) == 0) {
            o += (size_t)snprintf(norm + o, sizeof norm - o, "{trial_dir}");
            p += dl;
        } else if (nl && strncmp(p, t->name, nl) == 0) {
            o += (size_t)snprintf(norm + o, sizeof norm - o, "{trial}");
            p += nl;
        } else {
            norm[o++] = *p++;
        }
    }
    norm[o] = 0;
    size_t i = 0;
    while (i < L->nearly && strcmp(L->early[i].msg, norm) != 0)
        i++;
    if (i == L->nearly) {
        if (L->nearly == sizeof L->early / sizeof L->early[0]) return;
        snprintf(L->early[i].msg, sizeof L->early[i].msg, "%s", norm);
        L->early[i].first = (int64_t)(t - L->t);
        L->nearly++;
    }
    if (++L->early[i].count < L->set->fail_fast) return;
    char m[800];
    snprintf(m, sizeof m,
             "%d trial%s failed the same way before reporting any result (fail_fast %d): %s",
             L->early[i].count, L->early[i].count == 1 ? "" : "s", L->set->fail_fast, msg);
    const struct ltrial *first = &L->t[L->early[i].first];
    end_experiment(L, SCHED_END_FAIL_FAST, first->no, m);
    if (first->dir) {
        char path[4200], head[1600];
        snprintf(path, sizeof path, "%s/stderr.log", first->dir);
        file_head(path, head, sizeof head);
        snprintf(L->end_detail, sizeof L->end_detail, "First lines of %.400s:\n%.1500s", path,
                 head[0] ? head : "(empty)\n");
    }
}

/* Results that all arrived within a second of the trial's exit, although it ran for
 * several seconds: its output was buffered until exit. */
static void check_buffered(struct loop *L, struct ltrial *t)
{
    if (t->iters < 2 || t->first_result_mono == 0) return;
    if (t->stop != STOP_NONE && t->stop != STOP_COMPLETE) return;
    double now = mono_now();
    if (now - t->first_result_mono <= 1.0 && now - t->started_mono >= 3.0) {
        if (L->buffered++ == 0) L->buffered_trial = t->no;
    }
}

/* The trial's process has ended and its output is drained: record how it ended. */
static void finalize(struct loop *L, struct ltrial *t)
{
    check_buffered(L, t);
    t->ran_s = mono_now() - t->started_mono;
    char msg[512] = "";
    const char *status;
    if (t->stop == STOP_EARLY || t->stop == STOP_COMPLETE || t->stop == STOP_EXPERIMENT) {
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
        /* The cause is usually the last line the program wrote to stderr (a Python
         * traceback ends with the exception): it goes with the exit code. */
        char last[256];
        int oom = looks_like_cuda_oom(tail);
        if (!oom && t->stop != STOP_TIMEOUT && last_stderr_line(tail, last, sizeof last)) {
            size_t k = strlen(msg);
            snprintf(msg + k, sizeof msg - k, ": %s", last);
        }
        if (oom) {
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
    if (t->status == SCHED_TRIAL_ERROR) count_early_failure(L, t, msg);
    sched_on_trial_complete(L->policy, t->no);
    if (t->has_slice) sched_pool_release(L->o->pool, &t->slice);
    t->has_slice = 0;
    trial_proc_free(t->proc);
    t->proc = NULL;
    L->running--;
}

/* The experiment is stopping: every running trial is stopped. After Ctrl-C, or when a
 * mistake stopped the run (fail_fast, a missing metric), they are PAUSED: resumable once
 * the cause is fixed. When the experiment ended as planned (its time budget, a target)
 * they are TERMINATED and the reason is recorded as a decision. */
static void stop_running(struct loop *L)
{
    int by_user = L->ended_by == SCHED_END_ALL || L->stop_signal ||
                  L->ended_by == SCHED_END_FAIL_FAST || L->ended_by == SCHED_END_NO_METRIC;
    for (size_t i = 0; i < L->n; i++) {
        struct ltrial *t = &L->t[i];
        if (t->status != SCHED_TRIAL_RUNNING || t->stop != STOP_NONE) continue;
        if (!by_user && !L->fatal) {
            char reason[1100];
            snprintf(reason, sizeof reason, "experiment stopped: %s", L->end_msg);
            store_decision_t sd = {.trial_id = t->id,
                                   .iteration = t->iters,
                                   .time_value = t->last_time,
                                   .action = "complete",
                                   .bracket = -1,
                                   .rung = -1,
                                   .milestone = NAN,
                                   .value = t->last_metric,
                                   .cutoff = NAN,
                                   .reason = reason,
                                   .wall_time = wall_now()};
            add_decision(L, t, &sd);
        }
        request_stop(L, t, by_user || L->fatal ? STOP_USER : STOP_EXPERIMENT);
    }
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
        v->columns = t->columns;
        v->ncolumns = L->ncols;
        v->run_s = t->status == SCHED_TRIAL_RUNNING ? mono_now() - t->started_mono : t->ran_s;
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
    s.notice = L->notice;
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
                       .seed = set->seed,
                       .keep_last_trials = !set->sched.stop_last_trials};
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

static int on_stored_stop(void *ud, int ncol, const char *const *names, const char *const *values,
                          const int *types)
{
    (void)names;
    (void)types;
    struct resume_ctx *c = ud;
    if (ncol < 1 || !values[0]) return 0;
    struct id_index key = {strtoll(values[0], NULL, 10), 0};
    struct id_index *hit = bsearch(&key, c->by_id, c->nby, sizeof key, cmp_id);
    if (hit && c->L->t[hit->idx].stop == STOP_NONE) c->L->t[hit->idx].stop = STOP_COMPLETE;
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
    if (rc == 0) {
        /* A trial that had reached a "stop" criterion (a recorded decision) but was still in
         * its completion grace when tune died is done too, as the policy's replay finds for
         * max_t. */
        char id[32];
        snprintf(id, sizeof id, "%lld", (long long)o->experiment_id);
        const char *b[] = {id};
        rc = store_query(o->store,
                         "SELECT d.trial_id FROM decisions d JOIN trials t ON t.id = d.trial_id"
                         " WHERE t.experiment_id = ?1 AND d.action = 'complete'"
                         " AND d.reason LIKE 'reached stop criterion %'",
                         b, 1, on_stored_stop, &c, err, errlen);
    }
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
        for (size_t k = 0; k < SPACE_MAX_COLUMNS; k++)
            t->columns[k] = NAN;
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
    L.keys[0] = "training_iteration";
    L.keys[1] = L.time_is_iter ? NULL : L.set->sched.time_attr;
    L.keys[2] = L.set->metric;
    L.nkeys = LOOP_KEY_STOP;
    for (size_t i = 0; i < L.set->nstop; i++)
        L.keys[L.nkeys++] = L.set->stop[i].key;
    L.col0 = L.nkeys;
    for (size_t i = 0; L.set->metric_columns && L.set->metric_columns[i] && i < SPACE_MAX_COLUMNS;
         i++)
        L.keys[L.nkeys++] = L.set->metric_columns[i];
    L.ncols = L.nkeys - L.col0;
    for (size_t k = 0; k < L.nkeys; k++) {
        L.dup[k] = -1;
        for (size_t j = 0; j < k && L.keys[k]; j++)
            if (L.keys[j] && strcmp(L.keys[j], L.keys[k]) == 0) {
                L.dup[k] = (int)j;
                break;
            }
    }
    /* Nothing to check the first result against: take the fast path from the start. */
    L.metric_checked = !L.set->metric && L.time_is_iter;
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
        /* Ray Tune's experiment-level time_budget_s: no new trials after it, running ones
         * are stopped and recorded. */
        if (L.set->time_budget_s > 0 && !L.stopping && mono_now() - L.t0 >= L.set->time_budget_s) {
            char m[160];
            snprintf(m, sizeof m, "the experiment's time budget ended (time_budget_s %g s)",
                     L.set->time_budget_s);
            end_experiment(&L, SCHED_END_BUDGET, -1, m);
        }

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
        if (L.stopping) stop_running(&L);

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
        if (L.set->time_budget_s > 0 && !L.stopping && L.t0 + L.set->time_budget_s < wake)
            wake = L.t0 + L.set->time_budget_s;
        size_t nfd = 1;
        pfd[0].fd = sp[0];
        pfd[0].events = POLLIN;
        for (size_t i = 0; i < L.n; i++) {
            struct ltrial *t = &L.t[i];
            if (t->status != SCHED_TRIAL_RUNNING) continue;
            if (t->stop != STOP_NONE && !t->killed && t->stop_deadline < wake)
                wake = t->stop_deadline;
            if (t->stop != STOP_NONE && !t->term_sent && t->term_at < wake) wake = t->term_at;
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
                if (L.set->trial_time_limit_s > 0 &&
                    now - t->started_mono > L.set->trial_time_limit_s)
                    snprintf(why, sizeof why, "ran past trial_time_limit_s (%g s)",
                             L.set->trial_time_limit_s);
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
            if (t->stop != STOP_NONE && !t->term_sent && !t->killed && now >= t->term_at) {
                trial_signal(t->proc, SIGTERM); /* a completed trial's grace is over */
                t->term_sent = 1;
            }
            if (t->stop != STOP_NONE && !t->killed && now >= t->stop_deadline) {
                trial_signal(t->proc, SIGKILL);
                t->killed = 1;
            }
            if (child_event || t->eof || t->killed) check_exit(&L, t);
        }
        if (L.fatal || L.stopping) stop_running(&L);
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
        res->ended_by = L.ended_by;
        res->end_trial = L.end_trial;
        snprintf(res->end_msg, sizeof res->end_msg, "%s", L.end_msg);
        snprintf(res->end_detail, sizeof res->end_detail, "%s", L.end_detail);
        res->buffered = L.buffered;
        res->buffered_trial = L.buffered_trial;
        snprintf(res->bad_example, sizeof res->bad_example, "%s", L.bad_example);
        res->bad_trial = L.bad_trial;
        snprintf(res->notice, sizeof res->notice, "%s", L.notice);
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
