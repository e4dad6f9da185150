/* The loop's timers: a min-heap of (time, trial) for each running trial's time limit,
 * result timeout, completion grace and stop grace, so that a turn does work for the
 * timers that are due, not for every trial. Entries of a trial that ended or was
 * launched again are stale and dropped when they come up. Not for: the turn (loop.c). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/loop_int.h"

static void kill_trial(struct sched_loop *L, struct sched__trial *t)
{
    L->o->exec->ops->signal(L->o->exec->self, t->no, SIGKILL);
    t->x->killed = 1;
}

/* ---- timers ------------------------------------------------------------------------ */
static int timer_less(const struct sched__timer *a, const struct sched__timer *b)
{
    return a->at < b->at || (a->at == b->at && a->idx < b->idx);
}

void sched__timer_add(struct sched_loop *L, struct sched__trial *t, double at)
{
    if (L->ntimers == L->captimers) {
        size_t cap = L->captimers ? L->captimers * 2 : 64;
        struct sched__timer *v = realloc(L->timers, cap * sizeof *v);
        if (!v) {
            sched__fail(L, "cannot keep a timer", "out of memory");
            return;
        }
        L->timers = v;
        L->captimers = cap;
    }
    size_t i = L->ntimers++;
    L->timers[i] = (struct sched__timer){at, (size_t)t->no, t->gen};
    while (i > 0 && timer_less(&L->timers[i], &L->timers[(i - 1) / 2])) {
        struct sched__timer x = L->timers[i];
        L->timers[i] = L->timers[(i - 1) / 2];
        L->timers[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

static struct sched__timer timer_pop(struct sched_loop *L)
{
    struct sched__timer top = L->timers[0];
    L->timers[0] = L->timers[--L->ntimers];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < L->ntimers && timer_less(&L->timers[l], &L->timers[m])) m = l;
        if (r < L->ntimers && timer_less(&L->timers[r], &L->timers[m])) m = r;
        if (m == i) break;
        struct sched__timer x = L->timers[i];
        L->timers[i] = L->timers[m];
        L->timers[m] = x;
        i = m;
    }
    return top;
}

/* What is due for trial t at `now`: past its time budget or silent for longer than
 * result_timeout_s it is stopped as an error, past its stop grace it is killed. Files
 * the next timer it needs. */
static void trial_timers(struct sched_loop *L, struct sched__trial *t, double now)
{
    const space_settings_t *set = L->set;
    if (t->x->stop == SCHED__STOP_NONE) {
        char why[160] = "";
        double budget =
            set->trial_time_limit_s > 0 ? t->x->started_at + set->trial_time_limit_s : INFINITY;
        double silent =
            set->result_timeout_s > 0 ? t->x->last_result_at + set->result_timeout_s : INFINITY;
        if (now >= budget)
            snprintf(why, sizeof why, "ran past trial_time_limit_s (%g s)",
                     set->trial_time_limit_s);
        else if (now >= silent)
            snprintf(why, sizeof why, "reported nothing for result_timeout_s (%g s)",
                     set->result_timeout_s);
        if (!why[0]) {
            double next = fmin(budget, silent);
            if (isfinite(next)) sched__timer_add(L, t, next);
            return;
        }
        free(t->error);
        t->error = strdup(why);
        sched__request_stop(L, t, SCHED__STOP_TIMEOUT); /* files the grace timer */
        return;
    }
    if (!t->x->term_sent && !t->x->killed) {
        if (now < t->x->term_at) {
            sched__timer_add(L, t, t->x->term_at);
            return;
        }
        /* a completed trial's grace is over */
        L->o->exec->ops->signal(L->o->exec->self, t->no, SIGTERM);
        t->x->term_sent = 1;
        sched__timer_add(L, t, t->x->stop_deadline);
    }
    if (!t->x->killed && now >= t->x->stop_deadline) kill_trial(L, t);
}

/* Fires the timers due at `now` and returns the time of the nearest one ahead (or
 * `wake`, if sooner). The second Ctrl-C kills every running trial once. */
double sched__run_timers(struct sched_loop *L, double now, double wake)
{
    if (L->hard_stop && !L->hard_done) {
        L->hard_done = 1;
        for (size_t k = 0; k < L->running; k++) {
            struct sched__trial *t = sched__at(L, L->run[k]);
            if (t->x->killed) continue;
            if (t->x->stop == SCHED__STOP_NONE) t->x->stop = SCHED__STOP_USER;
            kill_trial(L, t);
        }
    }
    while (L->ntimers > 0 && L->timers[0].at <= now) {
        struct sched__timer e = timer_pop(L);
        struct sched__trial *t = sched__find(L, e.idx);
        if (!t || t->status != SCHED_TRIAL_RUNNING || !t->x->started || t->gen != e.gen) continue;
        trial_timers(L, t, now);
    }
    return L->ntimers > 0 ? fmin(wake, L->timers[0].at) : wake;
}
