/* pool.c: the persistent pthread pool behind the CPU backend (see pool.h).
 * Wake-up is a generation counter: spin on it for a short while (an op usually follows
 * within microseconds), then sleep on a private futex so an idle rank costs no CPU.
 * Not for: cross-process synchronisation. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

/* How long a worker spins before sleeping; an op sequence of one training step keeps
 * workers awake, while the gap between steps (data loading, all-reduce) lets them sleep. */
#define POOL_SPIN_NS 200000

struct train__pool {
    int n;
    pthread_t *th;
    train__pool_fn fn;
    void *ud;
    _Atomic unsigned gen; /* bumped to start a job (futex word) */
    _Atomic int done;     /* workers finished with the current job */
    _Atomic int stop;
    _Atomic unsigned bar_count, bar_gen; /* barrier inside a job */
};

struct worker_arg {
    train__pool_t *p;
    int tid;
};

static long futex(_Atomic unsigned *addr, int op, unsigned val)
{
    return syscall(SYS_futex, (unsigned *)addr, op, val, NULL, NULL, 0);
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker(void *argp)
{
    struct worker_arg *wa = argp;
    train__pool_t *p = wa->p;
    int tid = wa->tid;
    free(wa);
    /* generation 0 is "no job yet": reading p->gen here instead would miss a job posted
     * before this thread got to run */
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        long long t0 = 0;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen) {
            if (++spins < 64) {
                cpu_relax();
                continue;
            }
            spins = 0;
            if (t0 == 0) t0 = now_ns();
            if (now_ns() - t0 > POOL_SPIN_NS) futex(&p->gen, FUTEX_WAIT_PRIVATE, seen);
        }
        seen = g;
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) return NULL;
        p->fn(p->ud, tid, p->n);
        atomic_fetch_add_explicit(&p->done, 1, memory_order_acq_rel);
    }
}

int train__pool_new(train__pool_t **out, int threads, char *err, size_t errlen)
{
    if (threads < 1) threads = 1;
    train__pool_t *p = calloc(1, sizeof *p);
    if (!p) goto oom;
    p->n = threads;
    if (threads > 1) {
        p->th = calloc((size_t)threads, sizeof *p->th);
        if (!p->th) goto oom;
        for (int t = 1; t < threads; t++) {
            struct worker_arg *wa = malloc(sizeof *wa);
            if (!wa) goto oom;
            wa->p = p;
            wa->tid = t;
            int rc = pthread_create(&p->th[t], NULL, worker, wa);
            if (rc != 0) {
                free(wa);
                snprintf(err, errlen, "cannot start worker thread: %s", strerror(rc));
                p->n = t; /* join only those started */
                train__pool_free(p);
                return -1;
            }
        }
    }
    *out = p;
    return 0;
oom:
    snprintf(err, errlen, "out of memory creating %d threads", threads);
    train__pool_free(p);
    return -1;
}

void train__pool_free(train__pool_t *p)
{
    if (!p) return;
    if (p->th) {
        atomic_store_explicit(&p->stop, 1, memory_order_release);
        atomic_fetch_add_explicit(&p->gen, 1, memory_order_acq_rel);
        futex(&p->gen, FUTEX_WAKE_PRIVATE, (unsigned)p->n);
        for (int t = 1; t < p->n; t++)
            pthread_join(p->th[t], NULL);
        free(p->th);
    }
    free(p);
}

int train__pool_threads(const train__pool_t *p)
{
    return p->n;
}

void train__pool_run(train__pool_t *p, train__pool_fn fn, void *ud)
{
    if (p->n == 1) {
        fn(ud, 0, 1);
        return;
    }
    p->fn = fn;
    p->ud = ud;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_acq_rel);
    futex(&p->gen, FUTEX_WAKE_PRIVATE, (unsigned)p->n);
    fn(ud, 0, p->n);
    int spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) != p->n - 1) {
        /* yield when oversubscribed (more ranks x threads than cores) */
        if (++spins > 2000)
            sched_yield();
        else
            cpu_relax();
    }
}

void train__pool_barrier(train__pool_t *p)
{
    if (p->n == 1) return;
    unsigned g = atomic_load_explicit(&p->bar_gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&p->bar_count, 1, memory_order_acq_rel) == (unsigned)p->n - 1) {
        atomic_store_explicit(&p->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->bar_gen, 1, memory_order_acq_rel);
        return;
    }
    int spins = 0;
    while (atomic_load_explicit(&p->bar_gen, memory_order_acquire) == g) {
        if (++spins > 2000)
            sched_yield();
        else
            cpu_relax();
    }
}
