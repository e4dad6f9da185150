/* ddp.c: the data-parallel world of tune-train's forked ranks, in one anonymous
 * MAP_SHARED region made before fork: per-rank gradient slots, the reduced gradients,
 * and counters for barriers and the bucketed all-reduce (after PyTorch DDP's Reducer:
 * buckets become ready in backward order and are reduced while backward goes on).
 * Every wait is bounded: it gives up when the world is aborted (the launcher saw a rank
 * die), when the launcher itself is gone, or after the collective timeout, so a dead peer
 * never leaves the others waiting forever.
 * Not for: launching or supervising processes (train_main.c) or network collectives. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "train_int.h"

#define MAX_RANKS 64
#define MAX_BUCKETS 64
#define CHUNK                                                                                      \
    4096 /* floats per chunk: 16 KiB, so a chunk's slots, sum and optimiser                        \
          * state stay in L1 while it is reduced and updated */
#define SUM_SLOTS 16

/* Counters only grow: at step s (1-based) a bucket is complete when arrivals reaches
 * world*s, and reduced when done reaches nchunks*s. No reset, so no reset race. */
struct ctl {
    _Atomic unsigned abort;
    pid_t launcher;
    int world;
    int nbuckets;
    size_t nfloats;
    size_t off[MAX_BUCKETS + 1];
    _Alignas(64) _Atomic uint64_t barrier;
    _Alignas(64) _Atomic uint64_t arrivals[MAX_BUCKETS];
    _Alignas(64) _Atomic uint64_t done[MAX_BUCKETS];
    _Alignas(64) double sums[MAX_RANKS][SUM_SLOTS];
};

struct train__world {
    struct ctl *ctl;
    void *map;
    size_t map_len;
    size_t slot_floats; /* nfloats rounded up to a cache line */
    float *slots;       /* world x slot_floats */
    float *reduced;     /* slot_floats */
    float *shared;      /* shared_floats for the caller (parameters, optimiser state) */
    train__world_chunk_cb chunk_cb;
    void *chunk_ud;
    double timeout_s;
    int rank;
    uint64_t step;               /* all-reduces completed by this rank */
    uint64_t barriers;           /* barriers passed by this rank */
    size_t pending[MAX_BUCKETS]; /* floats of each bucket delivered in this step */
    char worked[MAX_BUCKETS];    /* this rank did its chunks of the bucket this step */
};

int train__world_new(train__world_t **out, int world, size_t nfloats, const size_t *bucket_off,
                     int nbuckets, size_t shared_floats, double timeout_s, char *err, size_t errlen)
{
    if (world < 1 || world > MAX_RANKS) {
        snprintf(err, errlen, "--ranks must be between 1 and %d, got %d", MAX_RANKS, world);
        return TRAIN_EINVAL;
    }
    if (nbuckets < 1 || nbuckets > MAX_BUCKETS || bucket_off[0] != 0 ||
        bucket_off[nbuckets] != nfloats) {
        snprintf(err, errlen, "internal error: bad all-reduce buckets");
        return TRAIN_ERR;
    }
    train__world_t *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return TRAIN_ERR;
    }
    size_t ctl_len = (sizeof(struct ctl) + 4095) / 4096 * 4096;
    w->slot_floats = (nfloats + 15) / 16 * 16;
    shared_floats = (shared_floats + 15) / 16 * 16;
    w->map_len = ctl_len + sizeof(float) * (w->slot_floats * (size_t)(world + 1) + shared_floats);
    w->map = mmap(NULL, w->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w->map == MAP_FAILED) {
        snprintf(err, errlen, "cannot create %zu bytes of shared memory for %d ranks: %s",
                 w->map_len, world, strerror(errno));
        free(w);
        return TRAIN_ERR;
    }
    w->ctl = w->map; /* anonymous mappings are zero-filled */
    w->ctl->launcher = getpid();
    w->ctl->world = world;
    w->ctl->nbuckets = nbuckets;
    w->ctl->nfloats = nfloats;
    memcpy(w->ctl->off, bucket_off, sizeof(size_t) * (size_t)(nbuckets + 1));
    w->slots = (float *)((char *)w->map + ctl_len);
    w->reduced = w->slots + w->slot_floats * (size_t)world;
    w->shared = w->reduced + w->slot_floats;
    w->timeout_s = timeout_s > 0 ? timeout_s : 300.0;
    *out = w;
    return 0;
}

void train__world_free(train__world_t *w)
{
    if (!w) return;
    munmap(w->map, w->map_len);
    free(w);
}

void train__world_join(train__world_t *w, int rank)
{
    w->rank = rank;
}

int train__world_rank(const train__world_t *w)
{
    return w->rank;
}

int train__world_size(const train__world_t *w)
{
    return w->ctl->world;
}

float *train__world_grad_slot(train__world_t *w)
{
    return w->slots + w->slot_floats * (size_t)w->rank;
}

float *train__world_reduced(train__world_t *w)
{
    return w->reduced;
}

float *train__world_shared(train__world_t *w)
{
    return w->shared;
}

void train__world_set_chunk_cb(train__world_t *w, train__world_chunk_cb cb, void *ud)
{
    w->chunk_cb = cb;
    w->chunk_ud = ud;
}

void train__world_abort(train__world_t *w)
{
    atomic_store_explicit(&w->ctl->abort, 1, memory_order_release);
}

int train__world_aborted(train__world_t *w)
{
    return atomic_load_explicit(&w->ctl->abort, memory_order_acquire) ||
           getppid() != w->ctl->launcher;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Waits until *ctr >= target. Spins briefly, then yields (ranks may outnumber cores),
 * then sleeps in short naps; checks abort, the launcher and the timeout as it goes. */
static int wait_ge(train__world_t *w, _Atomic uint64_t *ctr, uint64_t target, const char *what,
                   char *err, size_t errlen)
{
    for (int i = 0; i < 256; i++) {
        if (atomic_load_explicit(ctr, memory_order_acquire) >= target) return 0;
        cpu_relax();
    }
    double t0 = train__now();
    for (unsigned long it = 0;; it++) {
        if (atomic_load_explicit(ctr, memory_order_acquire) >= target) return 0;
        if (atomic_load_explicit(&w->ctl->abort, memory_order_acquire)) {
            snprintf(err, errlen, "rank %d: stopping %s: another rank failed", w->rank, what);
            return TRAIN_EPEER;
        }
        if ((it & 63) == 0) {
            double waited = train__now() - t0;
            if (getppid() != w->ctl->launcher) {
                snprintf(err, errlen, "rank %d: the launcher is gone; stopping %s", w->rank, what);
                return TRAIN_EPEER;
            }
            if (waited > w->timeout_s) {
                snprintf(err, errlen,
                         "rank %d: timed out after %.0f s waiting for the other ranks in %s "
                         "(a peer is stuck or dead; see --timeout)",
                         w->rank, waited, what);
                return TRAIN_EPEER;
            }
            if (waited > 0.02) {
                struct timespec ts = {0, 50000};
                nanosleep(&ts, NULL);
                continue;
            }
        }
        sched_yield();
    }
}

int train__world_barrier(train__world_t *w, char *err, size_t errlen)
{
    w->barriers++;
    atomic_fetch_add_explicit(&w->ctl->barrier, 1, memory_order_acq_rel);
    return wait_ge(w, &w->ctl->barrier, w->barriers * (uint64_t)w->ctl->world, "a barrier", err,
                   errlen);
}

int train__world_bcast(train__world_t *w, void *buf, size_t len, int root, char *err, size_t errlen)
{
    if (len > sizeof(float) * w->slot_floats) {
        snprintf(err, errlen, "internal error: broadcast of %zu bytes is too large", len);
        return TRAIN_ERR;
    }
    int rc = train__world_barrier(w, err, errlen); /* nobody still reads `reduced` */
    if (rc) return rc;
    if (w->rank == root) memcpy(w->reduced, buf, len);
    if ((rc = train__world_barrier(w, err, errlen))) return rc;
    if (w->rank != root) memcpy(buf, w->reduced, len);
    return train__world_barrier(w, err, errlen);
}

int train__world_sum(train__world_t *w, double *v, int n, char *err, size_t errlen)
{
    if (n > SUM_SLOTS) n = SUM_SLOTS;
    memcpy(w->ctl->sums[w->rank], v, sizeof(double) * (size_t)n);
    int rc = train__world_barrier(w, err, errlen);
    if (rc) return rc;
    for (int i = 0; i < n; i++) {
        double s = 0.0;
        for (int q = 0; q < w->ctl->world; q++)
            s += w->ctl->sums[q][i];
        v[i] = s;
    }
    return train__world_barrier(w, err, errlen); /* before anyone overwrites sums */
}

/* ---- bucketed gradient all-reduce -------------------------------------------------- */

static uint64_t nchunks(const struct ctl *c, int b)
{
    size_t len = c->off[b + 1] - c->off[b];
    return (len + CHUNK - 1) / CHUNK;
}

/* reduced[i] = slot0[i] + slot1[i] + ... in rank order, for one chunk. */
static void reduce_chunk(train__world_t *w, int b, uint64_t chunk)
{
    const struct ctl *c = w->ctl;
    size_t lo = c->off[b] + chunk * CHUNK, hi = lo + CHUNK;
    if (hi > c->off[b + 1]) hi = c->off[b + 1];
    float *out = w->reduced;
    const float *s0 = w->slots, *s1 = w->slots + w->slot_floats;
    if (c->world == 1) {
        memcpy(out + lo, s0 + lo, sizeof(float) * (hi - lo));
        return;
    }
    for (size_t i = lo; i < hi; i++)
        out[i] = s0[i] + s1[i];
    for (int q = 2; q < c->world; q++) {
        const float *sq = w->slots + w->slot_floats * (size_t)q;
        for (size_t i = lo; i < hi; i++)
            out[i] += sq[i];
    }
}

/* Reduces (and hands to the chunk callback) this rank's chunks of bucket b in step s.
 * Chunk j of bucket b belongs to rank (j + b) % world: a fixed owner keeps each chunk's
 * optimiser state in one core's cache, and rotating by b spreads one-chunk buckets. */
static void work_bucket(train__world_t *w, int b, uint64_t s)
{
    struct ctl *c = w->ctl;
    uint64_t nc = nchunks(c, b);
    (void)s;
    if (w->worked[b]) return;
    w->worked[b] = 1;
    uint64_t first = (uint64_t)(((w->rank - b) % c->world + c->world) % c->world);
    for (uint64_t j = first; j < nc; j += (uint64_t)c->world) {
        reduce_chunk(w, b, j);
        if (w->chunk_cb) {
            size_t lo = c->off[b] + j * CHUNK, hi = lo + CHUNK;
            if (hi > c->off[b + 1]) hi = c->off[b + 1];
            w->chunk_cb(w->chunk_ud, lo, hi - lo);
        }
        atomic_fetch_add_explicit(&c->done[b], 1, memory_order_release);
    }
}

void train__world_grad_ready(train__world_t *w, size_t off, size_t count)
{
    struct ctl *c = w->ctl;
    uint64_t s = w->step + 1;
    size_t end = off + count;
    for (int b = 0; b < c->nbuckets; b++) {
        size_t lo = c->off[b] > off ? c->off[b] : off;
        size_t hi = c->off[b + 1] < end ? c->off[b + 1] : end;
        if (lo >= hi) continue;
        w->pending[b] += hi - lo;
        if (w->pending[b] == c->off[b + 1] - c->off[b])
            atomic_fetch_add_explicit(&c->arrivals[b], 1, memory_order_release);
    }
    if (c->world == 1) return;
    /* overlap: help with any bucket that every rank has delivered */
    for (int b = c->nbuckets - 1; b >= 0; b--)
        if (atomic_load_explicit(&c->arrivals[b], memory_order_acquire) >= (uint64_t)c->world * s)
            work_bucket(w, b, s);
}

int train__world_grad_finish(train__world_t *w, char *err, size_t errlen)
{
    struct ctl *c = w->ctl;
    uint64_t s = w->step + 1;
    int rc;
    for (int b = c->nbuckets - 1; b >= 0; b--) {
        if (w->pending[b] != c->off[b + 1] - c->off[b]) {
            snprintf(err, errlen, "internal error: bucket %d was not delivered", b);
            return TRAIN_ERR;
        }
        if ((rc = wait_ge(w, &c->arrivals[b], (uint64_t)c->world * s, "the gradient all-reduce",
                          err, errlen)))
            return rc;
        work_bucket(w, b, s);
    }
    for (int b = c->nbuckets - 1; b >= 0; b--)
        if ((rc = wait_ge(w, &c->done[b], nchunks(c, b) * s, "the gradient all-reduce", err,
                          errlen)))
            return rc;
    for (int b = 0; b < c->nbuckets; b++)
        w->pending[b] = 0, w->worked[b] = 0;
    w->step = s;
    return 0;
}
