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

struct sched__timer sched__timer_pop(struct sched_loop *L)
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
