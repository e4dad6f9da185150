/* sim/exec.c: the simulated executor. Behind the scheduler's executor interface, each
 * started trial replays the curve that answers its configuration (a table's nearest row,
 * the row it took under the pool protocol, or the synthetic family) on a virtual clock: a result
 * arrives when the seconds of its iterations have passed, a stop ends the trial after a stop delay,
 * and the loop, policy, searcher and store are the very ones of a real run. Events of equal time go
 * in trial order. Not for: where curves come from (table.c, synth.c). */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/sched.h"
#include "sim/sim_int.h"

struct strial {
    int64_t no; /* the trial this slot holds, -1 when free */
    sim_curve_t curve;
    int running;
    unsigned version; /* bumped whenever its pending event changes: older heap entries are stale */
    int64_t sent;     /* results delivered */
    double next_at;   /* its next result, or its own exit once the curve is done */
    double end_at;    /* a stop ends it here (INFINITY: not asked to stop) */
    int end_sig;
    double started;
    char exec_id[64], node[32];
};

#define FLAG_FAR 1
#define FLAG_RAN_OUT 2

struct hent {
    double at;
    int64_t no;
    unsigned version; /* the slot's version when filed */
    uint32_t slot;
};

struct sexec {
    sim_curves_t *curves;
    sim_exec_opts_t o;
    double now;
    double wall0;
    /* A slot per running trial (as many as there are workers), not one per trial: a
     * curve is some 300 bytes and a simulation may start millions of trials. slot[no]
     * is the slot of trial no plus one, 0 when it holds none. */
    struct strial *t;
    size_t nt;
    uint32_t *free_slots;
    size_t nfree;
    uint32_t *slot;
    size_t nslot;
    /* Per trial number (as slot): results it had delivered when it last ended, its
     * "checkpoint" for a resume (a paused trial picks its curve up there). */
    int64_t *reached;
    unsigned char *flags; /* per trial number: FLAG_FAR, FLAG_RAN_OUT once counted */
    struct hent *heap;
    size_t nh, caph;
    sim_stats_t stats;
};

static int hless(const struct hent *a, const struct hent *b)
{
    return a->at < b->at || (a->at == b->at && a->no < b->no);
}

static int heap_push(struct sexec *x, double at, int64_t no, unsigned version, uint32_t slot)
{
    if (x->nh == x->caph) {
        size_t cap = x->caph ? x->caph * 2 : 256;
        struct hent *h = realloc(x->heap, cap * sizeof *h);
        if (!h) return -1;
        x->heap = h;
        x->caph = cap;
    }
    size_t i = x->nh++;
    x->heap[i] = (struct hent){at, no, version, slot};
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hless(&x->heap[i], &x->heap[p])) break;
        struct hent tmp = x->heap[i];
        x->heap[i] = x->heap[p];
        x->heap[p] = tmp;
        i = p;
    }
    return 0;
}

static void heap_pop(struct sexec *x)
{
    x->heap[0] = x->heap[--x->nh];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < x->nh && hless(&x->heap[l], &x->heap[m])) m = l;
        if (r < x->nh && hless(&x->heap[r], &x->heap[m])) m = r;
        if (m == i) break;
        struct hent tmp = x->heap[i];
        x->heap[i] = x->heap[m];
        x->heap[m] = tmp;
        i = m;
    }
}

/* The seconds iteration `it` of trial t takes (0 past the end of its curve). */
static double iter_secs(struct sexec *x, const struct strial *t, int64_t it)
{
    return sim_curve_seconds(x->curves, &t->curve, it);
}

/* Re-files the pending event of the trial in slot k: the earlier of its next result and
 * its stop. */
static int reschedule(struct sexec *x, uint32_t k)
{
    struct strial *t = &x->t[k];
    t->version++;
    double at = t->end_at < t->next_at ? t->end_at : t->next_at;
    return heap_push(x, at, t->no, t->version, k);
}

/* The slot of running trial no, or NULL. */
static struct strial *slot_of(struct sexec *x, int64_t no)
{
    if (no < 0 || (size_t)no >= x->nslot || x->slot[no] == 0) return NULL;
    return &x->t[x->slot[no] - 1];
}

/* Gives trial t's slot back: its heap entries go stale (the version moves on). */
static void slot_free(struct sexec *x, struct strial *t)
{
    uint32_t k = (uint32_t)(t - x->t);
    x->reached[t->no] = t->sent;
    x->slot[t->no] = 0;
    t->no = -1;
    t->running = 0;
    t->version++;
    x->free_slots[x->nfree++] = k;
}

/* A free slot for trial no (growing the tables as needed), or -1 without memory. */
static long slot_take(struct sexec *x, int64_t no)
{
    if ((size_t)no >= x->nslot) {
        size_t n = x->nslot ? x->nslot : 1024;
        while (n <= (size_t)no)
            n *= 2;
        uint32_t *sl = realloc(x->slot, n * sizeof *sl);
        if (!sl) return -1;
        memset(sl + x->nslot, 0, (n - x->nslot) * sizeof *sl);
        x->slot = sl;
        int64_t *re = realloc(x->reached, n * sizeof *re);
        if (!re) return -1;
        memset(re + x->nslot, 0, (n - x->nslot) * sizeof *re);
        x->reached = re;
        unsigned char *fl = realloc(x->flags, n);
        if (!fl) return -1;
        memset(fl + x->nslot, 0, n - x->nslot);
        x->flags = fl;
        x->nslot = n;
    }
    if (x->slot[no]) return (long)x->slot[no] - 1; /* started again */
    if (x->nfree == 0) {
        size_t n = x->nt ? x->nt * 2 : 64;
        if (n > UINT32_MAX - 1) return -1;
        struct strial *t = realloc(x->t, n * sizeof *t);
        uint32_t *f = t ? realloc(x->free_slots, n * sizeof *f) : NULL;
        if (t) x->t = t;
        if (!f) return -1;
        x->free_slots = f;
        memset(t + x->nt, 0, (n - x->nt) * sizeof *t);
        for (size_t k = n; k > x->nt; k--)
            x->free_slots[x->nfree++] = (uint32_t)(k - 1);
        x->nt = n;
    }
    uint32_t k = x->free_slots[--x->nfree];
    x->slot[no] = k + 1;
    return (long)k;
}

static int s_start(void *self, const sched_start_t *s, sched_started_t *out, char *err,
                   size_t errlen)
{
    struct sexec *x = self;
    if (s->trial_no < 0) {
        snprintf(err, errlen, "bad trial number");
        return SCHED_EINVAL;
    }
    long k = slot_take(x, s->trial_no);
    if (k < 0) {
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    struct strial *t = &x->t[k];
    unsigned version = t->version;
    memset(t, 0, sizeof *t);
    t->version = version;
    t->no = s->trial_no;
    size_t row;
    if (x->o.pool && sim_pool_row(x->o.pool, s->trial_no, &row)) {
        /* the pool protocol: the row the trial took, not the first row of the same values */
        sim__row_curve(x->curves, row, &t->curve);
    } else if (x->o.pool) {
        snprintf(err, errlen, "trial %lld took no configuration of the pool",
                 (long long)s->trial_no);
        slot_free(x, t);
        return SCHED_EINVAL;
    } else if (sim_curves_lookup(x->curves, s->config, &t->curve, err, errlen) != 0) {
        slot_free(x, t);
        return SCHED_EINVAL;
    }
    /* A resume ("iteration:N", what s_checkpoint handed out) picks the curve up after
     * iteration N: the table answers a resumed trial from where it paused. A curve that
     * ends at or before N has nothing more: the trial ends at once (it ran out, below),
     * rather than replaying the curve from iteration 1 again, back in time. */
    long long from = 0;
    if (s->resume_from && sscanf(s->resume_from, "iteration:%lld", &from) == 1 && from > 0)
        t->sent = from < t->curve.iters ? from : t->curve.iters;
    t->running = 1;
    t->started = x->now;
    t->end_at = INFINITY;
    t->next_at = x->now + x->o.start_delay + iter_secs(x, t, t->sent + 1);
    if (x->curves->synthetic) {
        snprintf(t->exec_id, sizeof t->exec_id, "synthetic");
    } else {
        snprintf(t->exec_id, sizeof t->exec_id, "%.50s",
                 sim_curves_row_name(x->curves, t->curve.row));
        if (!t->exec_id[0]) snprintf(t->exec_id, sizeof t->exec_id, "row %zu", t->curve.row);
    }
    snprintf(t->node, sizeof t->node, "d=%.4g", t->curve.distance);
    if (t->curve.distance > x->stats.max_distance) x->stats.max_distance = t->curve.distance;
    if (t->curve.distance > SIM_FAR_DISTANCE && !(x->flags[t->no] & FLAG_FAR)) {
        x->flags[t->no] |= FLAG_FAR;
        x->stats.far++;
    }
    /* what running it to the end would have cost: to full_t (max_t in time_attr), or to the
     * end of its curve where that comes first: the table has nothing past it, so nothing
     * past it can be saved */
    int ends_before = 0;
    int64_t full = sim_curve_iters_to(x->curves, &t->curve, x->o.full_t, &ends_before);
    if (s->attempt <= 1) { /* a resumed attempt is the same trial: counted once */
        x->stats.short_curves += ends_before && x->o.full_t > 0;
        /* As the loop runs it: to its result at max_t, then (the curve going on) left
         * stop_grace to end by itself, then sent SIGTERM, gone a stop delay later (or killed
         * when the grace is shorter); or to the end of its curve, where it exits by itself
         * (so a FIFO run saves nothing). */
        double to_max = 0, whole;
        for (int64_t it = 1; it <= full; it++)
            to_max += iter_secs(x, t, it);
        whole = to_max;
        for (int64_t it = full + 1; it <= t->curve.iters; it++)
            whole += iter_secs(x, t, it);
        double g = x->o.stop_grace, cut = to_max + g + (x->o.stop_delay < g ? x->o.stop_delay : g);
        x->stats.full_s += x->o.start_delay + (whole < cut ? whole : cut);
        x->stats.trials++;
    }
    if (reschedule(x, (uint32_t)k) != 0) {
        snprintf(err, errlen, "out of memory");
        return SCHED_ENOMEM;
    }
    out->pid = 0;
    out->exec_id = t->exec_id;
    out->node = t->node;
    return SCHED_OK;
}

static void s_signal(void *self, int64_t no, int sig)
{
    struct sexec *x = self;
    struct strial *t = slot_of(x, no);
    if (!t || !t->running) return;
    double at = x->now + (sig == SIGKILL ? 0 : x->o.stop_delay);
    if (at >= t->end_at) return;
    t->end_at = at;
    t->end_sig = sig;
    reschedule(x, (uint32_t)(t - x->t));
}

/* Whether trial t's curve ends before the scheduler would stop it: short of max_t in its
 * time_attr, or (FIFO) of the longest curve. */
static int ran_out_early(const struct sexec *x, const struct strial *t)
{
    int ends_before = 0;
    if (x->o.full_t > 0) {
        sim_curve_iters_to(x->curves, &t->curve, x->o.full_t, &ends_before);
        return ends_before;
    }
    return t->curve.iters < x->stats.target_iters;
}

static int s_wait(void *self, double timeout, int wake_fd, const sched_events_t *ev, void *ud,
                  char *err, size_t errlen)
{
    struct sexec *x = self;
    (void)wake_fd;
    (void)err;
    (void)errlen;
    double limit = x->now + (timeout > 0 ? timeout : 0);
    while (x->nh > 0) {
        struct hent e = x->heap[0];
        struct strial *t = &x->t[e.slot];
        if (!t->running || e.version != t->version) { /* stale */
            heap_pop(x);
            continue;
        }
        if (e.at > limit) break;
        heap_pop(x);
        if (e.at > x->now) x->now = e.at;
        if (t->end_at <= e.at || t->sent >= t->curve.iters) {
            /* stopped, or the curve is done and the program exits */
            sched_exit_t ex = {0, 0, NULL};
            if (t->end_at <= e.at) {
                ex.code = -1;
                ex.signal = t->end_sig;
            } else if (t->end_at == INFINITY && ran_out_early(x, t) &&
                       !(x->flags[t->no] & FLAG_RAN_OUT)) {
                /* Its curve ends here and nothing asked it to stop: the recorded trial was
                 * stopped early (or the table is short), and the simulation cannot know
                 * what would have come next. It ends as if it had finished; say so. */
                x->flags[t->no] |= FLAG_RAN_OUT;
                if (!x->stats.ran_out || t->curve.iters < x->stats.ran_out_min)
                    x->stats.ran_out_min = t->curve.iters;
                if (!x->stats.ran_out || t->curve.iters > x->stats.ran_out_max)
                    x->stats.ran_out_max = t->curve.iters;
                x->stats.ran_out++;
            }
            x->stats.spent_s += x->now - t->started;
            slot_free(x, t);
            ev->ended(ud, e.no, &ex);
            return 1;
        }
        const char *line;
        size_t len;
        double secs;
        t->sent++;
        if (sim_curve_result(x->curves, &t->curve, t->sent, &line, &len, &secs) == 1)
            ev->line(ud, e.no, line, len, 0);
        /* the next result, or (same moment) the exit after the last one */
        t->next_at = x->now + (t->sent < t->curve.iters ? iter_secs(x, t, t->sent + 1) : 0);
        reschedule(x, e.slot);
        return 1;
    }
    if (isfinite(limit) && limit > x->now) x->now = limit;
    return 0;
}

static void s_release(void *self, int64_t no)
{
    struct sexec *x = self;
    struct strial *t = slot_of(x, no);
    if (t && t->running) { /* torn down while running */
        x->stats.spent_s += x->now - t->started;
        slot_free(x, t);
    }
}

/* Where a paused trial resumes: after the last result it delivered. A running trial's
 * checkpoint is where it stands now: PBT's donor, whose clone continues from the donor's
 * iteration with its own configuration (the table answers the new configuration from
 * there). */
static int s_checkpoint(void *self, int64_t no, char *buf, size_t n)
{
    struct sexec *x = self;
    struct strial *t = slot_of(x, no);
    if (t && t->running && t->sent > 0) {
        snprintf(buf, n, "iteration:%lld", (long long)t->sent);
        return 0;
    }
    if (no < 0 || (size_t)no >= x->nslot || x->reached[no] <= 0) return -1;
    snprintf(buf, n, "iteration:%lld", (long long)x->reached[no]);
    return 0;
}

static void s_free(void *self)
{
    struct sexec *x = self;
    free(x->reached);
    free(x->flags);
    free(x->t);
    free(x->free_slots);
    free(x->slot);
    free(x->heap);
    free(x);
}

static const sched_exec_ops_t sim_ops = {"simulated", s_start, s_signal,     s_wait,
                                         s_release,   s_free,  s_checkpoint, NULL};

static double s_now(void *ud)
{
    return ((const struct sexec *)ud)->now;
}

static double s_wall(void *ud)
{
    const struct sexec *x = ud;
    return x->wall0 + x->now;
}

int sim_exec_new(sim_curves_t *c, const sim_exec_opts_t *o, struct sched_exec **out,
                 struct sched_clock *clock, char *err, size_t errlen)
{
    struct sched_exec *h = calloc(1, sizeof *h);
    struct sexec *x = calloc(1, sizeof *x);
    if (!h || !x) {
        free(h);
        free(x);
        snprintf(err, errlen, "out of memory");
        return SIM_ENOMEM;
    }
    x->curves = c;
    x->o = *o;
    x->wall0 = o->wall0;
    /* a trial runs to max_t, or (FIFO) to the end of the longest curve */
    x->stats.target_iters = o->full_t > 0 ? (int64_t)ceil(o->full_t) : sim_curves_max_iters(c);
    h->ops = &sim_ops;
    h->self = x;
    clock->now = s_now;
    clock->wall = s_wall;
    clock->ud = x;
    *out = h;
    return SIM_OK;
}

void sim_exec_stats(const struct sched_exec *ex, sim_stats_t *out)
{
    const struct sexec *x = ex->self;
    *out = x->stats;
    out->elapsed_s = x->now;
}
