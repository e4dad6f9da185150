/* pool.h: tune-train's persistent worker-thread pool (internal to train/). The CPU
 * backend runs each parallel op as one job on all threads; workers spin briefly, then sleep
 * on a futex, so short ops do not pay a thread wake-up and idle ranks do not burn a core.
 * Not for: anything across processes (ddp.c has its own shared-memory primitives). */
#ifndef TUNE_TRAIN_POOL_H
#define TUNE_TRAIN_POOL_H

typedef struct train__pool train__pool_t;

/* A job body: runs once on each of the nt threads, tid 0 being the caller. */
typedef void (*train__pool_fn)(void *ud, int tid, int nt);

/* A pool of `threads` (>= 1) threads counting the caller, so threads-1 are started.
 * Returns 0 or negative with err. Freed with train__pool_free (NULL-safe), which joins. */
int train__pool_new(train__pool_t **out, int threads, char *err, size_t errlen);
void train__pool_free(train__pool_t *p);
int train__pool_threads(const train__pool_t *p);

/* Runs fn(ud, tid, nt) on every thread and returns when all are done. Not reentrant:
 * a job must not call train__pool_run. */
void train__pool_run(train__pool_t *p, train__pool_fn fn, void *ud);

/* Inside a job: waits until all nt threads reached it (memory is synchronised). */
void train__pool_barrier(train__pool_t *p);

#endif
