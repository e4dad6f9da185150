/* What every file of the loop writes down and reads, below them all: the loop's two
 * clocks, a decision or a note recorded, a trial's row updated, the first store failure
 * kept, the experiment ended early for a reason, and the words a status or a trial's
 * quoted output is shown in. Calls nothing else in scheduler/, so that the loop's files
 * stack without a circle (loop.c on top). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scheduler/loop_int.h"

/* ---- clocks ------------------------------------------------------------------------ */
static double clock_read(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double real_now(void *ud)
{
    (void)ud;
    return clock_read(CLOCK_MONOTONIC);
}

static double real_wall(void *ud)
{
    (void)ud;
    return clock_read(CLOCK_REALTIME);
}

const sched_clock_t sched_clock_real = {real_now, real_wall, NULL};

double sched__now(const struct sched_loop *L)
{
    return L->clock->now(L->clock->ud);
}

double sched__wall(const struct sched_loop *L)
{
    return L->clock->wall(L->clock->ud);
}

/* ---- small shared pieces ------------------------------------------------------------ */
const char *sched_status_name(sched_trial_status_t s)
{
    static const char *const names[SCHED_TRIAL_NSTATUS] = SCHED_TRIAL_STATUS_NAMES;
    return (unsigned)s < SCHED_TRIAL_NSTATUS ? names[s] : "?";
}

void sched__fail(struct sched_loop *L, const char *what, const char *err)
{
    if (L->end.fatal) return;
    L->end.fatal = 1;
    L->turn.stopping = 1;
    snprintf(L->end.fatal_msg, sizeof L->end.fatal_msg, "%.200s: %.800s", what, err);
}

int sched__better(int mode_max, double a, double b)
{
    if (isnan(b)) return !isnan(a);
    if (isnan(a)) return 0;
    return mode_max ? a > b : a < b;
}

void sched__update_row(struct sched_loop *L, struct sched__trial *t, const store_trial_update_t *u)
{
    char err[256];
    store_trial_update_t w = *u;
    if (t->x->pid_unsaved) { /* the pid ev_pid kept goes with this update */
        w.fields |= STORE_TU_PID;
        w.pid = t->x->pid;
        t->x->pid_unsaved = 0;
        if (L->q.npid_unsaved) L->q.npid_unsaved--;
    }
    if (store_trial_update(L->o->store, t->id, &w, err, sizeof err) != 0)
        sched__fail(L, "cannot record trial state", err);
}

void sched__escape_quote(const char *s, size_t len, char *out, size_t n, size_t max)
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

void sched__end_experiment(struct sched_loop *L, sched_end_t why, int64_t trial, const char *msg)
{
    if (L->end.ended_by != SCHED_END_ALL || L->end.fatal) return;
    L->end.ended_by = why;
    L->end.end_trial = trial;
    snprintf(L->end.end_msg, sizeof L->end.end_msg, "%.1000s", msg);
    L->turn.stopping = 1;
}

void sched__result_point(const space_settings_t *set, const cJSON *r, sched_point_t *pt,
                         double *obj)
{
    for (size_t i = 0; i < SPACE_MAX_OBJECTIVES; i++)
        obj[i] = NAN;
    pt->obj = obj;
    pt->violation = INFINITY;
    if (!r) return;
    space_objectives(set, r, obj);
    pt->violation = space_violation(set, r);
}

void sched__add_decision(struct sched_loop *L, const store_decision_t *sd)
{
    char err[256];
    if (store_decision_add(L->o->store, sd, err, sizeof err) != 0)
        sched__fail(L, "cannot record decision", err);
}

void sched__add_note(struct sched_loop *L, const struct sched__trial *t, const char *action,
                     int64_t it, double tv, double v, const char *reason)
{
    store_decision_t sd = {.trial_id = t->id,
                           .iteration = it,
                           .time_value = tv,
                           .action = action,
                           .bracket = -1,
                           .rung = -1,
                           .milestone = NAN,
                           .value = v,
                           .cutoff = NAN,
                           .reason = reason,
                           .wall_time = sched__wall(L)};
    sched__add_decision(L, &sd);
}
