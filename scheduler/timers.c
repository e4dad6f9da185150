/* The loop's timers: a min-heap of (time, trial) for each running trial's time limit,
 * result timeout, completion grace and stop grace, so that a turn does work for the
 * timers that are due, not for every trial. Entries of a trial that ended or was
 * launched again are stale and dropped when they come up. Not for: what a due timer means
 * for its trial (life.c, sched__run_timers). */
#include <stdlib.h>

#include "scheduler/loop_int.h"
static int timer_less(const struct sched__timer *a, const struct sched__timer *b)
{
    return a->at < b->at || (a->at == b->at && a->idx < b->idx);
}

void sched__timer_add(struct sched_loop *L, struct sched__trial *t, double at)
{
    if (L->tm.ntimers == L->tm.captimers) {
        size_t cap = L->tm.captimers ? L->tm.captimers * 2 : 64;
        struct sched__timer *v = realloc(L->tm.timers, cap * sizeof *v);
        if (!v) {
            sched__fail(L, "cannot keep a timer", "out of memory");
            return;
        }
        L->tm.timers = v;
        L->tm.captimers = cap;
    }
    size_t i = L->tm.ntimers++;
    L->tm.timers[i] = (struct sched__timer){at, (size_t)t->no, t->gen};
    while (i > 0 && timer_less(&L->tm.timers[i], &L->tm.timers[(i - 1) / 2])) {
        struct sched__timer x = L->tm.timers[i];
        L->tm.timers[i] = L->tm.timers[(i - 1) / 2];
        L->tm.timers[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
}

struct sched__timer sched__timer_pop(struct sched_loop *L)
{
    struct sched__timer top = L->tm.timers[0];
    L->tm.timers[0] = L->tm.timers[--L->tm.ntimers];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < L->tm.ntimers && timer_less(&L->tm.timers[l], &L->tm.timers[m])) m = l;
        if (r < L->tm.ntimers && timer_less(&L->tm.timers[r], &L->tm.timers[m])) m = r;
        if (m == i) break;
        struct sched__timer x = L->tm.timers[i];
        L->tm.timers[i] = L->tm.timers[m];
        L->tm.timers[m] = x;
        i = m;
    }
    return top;
}
