/* nccl_cuda.cu: the CUDA backend's gradient all-reduce: one NCCL communicator per trial
 * world (one rank per GPU of the slice), its own stream ordered against the compute
 * stream by events, and waits that poll instead of block so that no rank hangs forever
 * on a dead peer: NCCL's async errors, a collective stalled past --timeout, the launcher's
 * peer_dead word and a dead launcher all end in ncclCommAbort and an error the trainer
 * reports (PyTorch's NCCL watchdog, simplified).
 * Not for: spawning ranks or sharing the unique id (the launcher does, through bcast). */
#include "train/cuda_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void nap(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* Why the run is over without NCCL knowing yet, or NULL: the launcher's word (its
 * peer_dead callback: a rank died or it is stopping) or our parent, the launcher, gone
 * (a rank whose parent was init (1) at open has no launcher to watch). */
static const char *run_over(const train_be_ctx_t *ctx)
{
    if (ctx->peer_dead && ctx->peer_dead(ctx->peer_ud))
        return "a peer rank died or the run is being stopped";
    if (ctx->parent_pid > 1 && (int)getppid() != ctx->parent_pid) return "the launcher died";
    return NULL;
}

/* Records a fatal error naming what NCCL said last, then aborts the communicator: its
 * kernels are stopped, so the streams drain and every later sync reports the error. */
static void abort_comm(train_be_ctx_t *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void abort_comm(train_be_ctx_t *ctx, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *last = ctx->comm ? ncclGetLastError(ctx->comm) : NULL;
    if (last && *last)
        train_cuda__fail_rc(ctx, 1, TRAIN_EPEER, "%s (NCCL: %s)", msg, last);
    else
        train_cuda__fail_rc(ctx, 1, TRAIN_EPEER, "%s", msg);
    if (ctx->comm) ncclCommAbort(ctx->comm);
    ctx->comm = NULL;
    ctx->npending = 0;
}

/* Waits out ncclInProgress from a non-blocking communicator call (its enqueue or setup
 * finishing), within the timeout. Returns the final result; *why is set when the wait
 * itself gave up ("timed out", or run_over's reason). */
static ncclResult_t settle(train_be_ctx_t *ctx, ncclComm_t comm, ncclResult_t r, double timeout_s,
                           const char **why)
{
    double start = now_s();
    *why = NULL;
    while (r == ncclInProgress) {
        ncclResult_t st = ncclInProgress;
        ncclResult_t q = ncclCommGetAsyncError(comm, &st);
        if (q != ncclSuccess) return q;
        r = st;
        if (r != ncclInProgress) break;
        if (now_s() - start > timeout_s) {
            *why = "timed out";
            return r;
        }
        if ((*why = run_over(ctx))) return r;
        nap(100000);
    }
    return r;
}

/* One poll of the communicator's health while the host waits on the GPU. */
static int comm_healthy(train_be_ctx_t *ctx, long spin, double *stall_since)
{
    ncclResult_t st = ncclSuccess;
    ncclResult_t q = ncclCommGetAsyncError(ctx->comm, &st);
    if (q != ncclSuccess) st = q;
    if (st != ncclSuccess && st != ncclInProgress) {
        abort_comm(ctx, "NCCL failed during an all-reduce on rank %d of %d (GPU %s): %s", ctx->rank,
                   ctx->world, ctx->gpu_name, ncclGetErrorString(st));
        return 0;
    }
    const char *why = spin % 256 == 0 ? run_over(ctx) : NULL;
    if (why) {
        abort_comm(ctx, "rank %d of %d: %s; NCCL communicator aborted", ctx->rank, ctx->world, why);
        return 0;
    }
    /* A collective that stays unfinished this long while we wait means a peer is gone
     * or stuck: NCCL alone would spin forever on an intra-node peer that died. */
    cudaError_t e = cudaEventQuery(ctx->ev_comm_done);
    if (e == cudaErrorNotReady) {
        double t = now_s();
        if (*stall_since < 0)
            *stall_since = t;
        else if (t - *stall_since > ctx->nccl_timeout_s) {
            abort_comm(ctx,
                       "an all-reduce made no progress for %.0f s on rank %d of %d (GPU %s): a "
                       "peer rank died or hangs; NCCL communicator aborted (--timeout sets the "
                       "limit)",
                       ctx->nccl_timeout_s, ctx->rank, ctx->world, ctx->gpu_name);
            return 0;
        }
    } else {
        *stall_since = -1;
        if (e != cudaSuccess) return train_cuda__ok(ctx, e, "waiting for an all-reduce");
    }
    return 1;
}

int train_cuda__wait_event(train_be_ctx_t *ctx, cudaEvent_t ev)
{
    if (!ctx->comm) return train_cuda__ok(ctx, cudaEventSynchronize(ev), "waiting for the GPU");
    double stall_since = -1;
    for (long spin = 0;; spin++) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess) return 1;
        if (e != cudaErrorNotReady) return train_cuda__ok(ctx, e, "waiting for the GPU");
        if (!comm_healthy(ctx, spin, &stall_since)) return 0;
        if (spin > 2000) nap(50000); /* spin first: most waits are short */
    }
}

int train_cuda__wait_all(train_be_ctx_t *ctx)
{
    /* npending == 0 means the compute stream already waits for every issued all-reduce */
    if (ctx->npending) {
        if (!train_cuda__ok(ctx, cudaStreamWaitEvent(ctx->stream, ctx->ev_comm_done, 0),
                            "ordering after an all-reduce"))
            return 0;
        ctx->npending = 0;
    }
    if (!train_cuda__ok(ctx, cudaEventRecord(ctx->ev_sync, ctx->stream), "sync")) return 0;
    return train_cuda__wait_event(ctx, ctx->ev_sync);
}

void train_cuda__touch(train_be_ctx_t *ctx, const void *p, size_t bytes)
{
    if (!ctx->npending || !p || bytes == 0) return;
    uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
    for (int i = 0; i < ctx->npending; i++)
        if (lo < ctx->pending[i].hi && ctx->pending[i].lo < hi) {
            /* ev_comm_done follows the last all-reduce, so one wait covers them all */
            train_cuda__ok(ctx, cudaStreamWaitEvent(ctx->stream, ctx->ev_comm_done, 0),
                           "ordering after an all-reduce");
            ctx->npending = 0;
            return;
        }
}

/* What rank 0 broadcasts: the id, or why there is none (so peers fail instead of
 * waiting on an id that never comes). */
typedef struct id_msg {
    int32_t ok;
    char why[124];
    ncclUniqueId id;
} id_msg_t;

int train_cuda__comm_init(train_be_ctx_t *ctx, int rank, int world, train_be_bcast_cb bcast,
                          void *bcast_ud, char *err, size_t errlen)
{
    if (ctx->comm) {
        snprintf(err, errlen, "--device cuda: NCCL communicator set up twice");
        return TRAIN_EINVAL;
    }
    id_msg_t msg;
    memset(&msg, 0, sizeof msg);
    if (rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&msg.id);
        msg.ok = r == ncclSuccess;
        if (!msg.ok) snprintf(msg.why, sizeof msg.why, "%s", ncclGetErrorString(r));
    }
    int rc = bcast(bcast_ud, &msg, sizeof msg, 0, err, errlen);
    if (rc != 0) return rc < 0 ? rc : TRAIN_EPEER;
    if (!msg.ok) {
        snprintf(err, errlen, "--device cuda: rank 0 could not create the NCCL unique id: %s",
                 msg.why);
        return TRAIN_ERR;
    }
    if (!train_cuda__ok(ctx, cudaSetDevice(ctx->dev), "cudaSetDevice")) {
        snprintf(err, errlen, "--device cuda: %s", ctx->err);
        return TRAIN_ERR;
    }
    /* non-blocking, so setup is polled (with a timeout) rather than stuck in NCCL */
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t comm = NULL;
    const char *why = NULL;
    ncclResult_t r = ncclCommInitRankConfig(&comm, world, msg.id, rank, &cfg);
    if (comm && (r == ncclSuccess || r == ncclInProgress))
        r = settle(ctx, comm, r, ctx->nccl_timeout_s, &why);
    if (r != ncclSuccess || why) {
        const char *last = comm ? ncclGetLastError(comm) : "";
        snprintf(
            err, errlen, "--device cuda: NCCL setup failed on rank %d of %d (GPU %s): %s%s%s%s",
            rank, world, ctx->gpu_name, why ? why : ncclGetErrorString(r),
            last && *last ? " (NCCL: " : "", last && *last ? last : "", last && *last ? ")" : "");
        if (comm) ncclCommAbort(comm);
        return why || r == ncclRemoteError ? TRAIN_EPEER : TRAIN_ERR;
    }
    ctx->comm = comm;
    ctx->rank = rank;
    ctx->world = world;
    return 0;
}

void train_cuda__allreduce_sum(train_be_ctx_t *ctx, float *buf, size_t n)
{
    if (n == 0) return;
    if (!ctx->comm) {
        /* summing over one rank is the identity; more ranks need the communicator */
        if (ctx->world > 1 && !ctx->fatal)
            train_cuda__fail(ctx, 1, "all-reduce over %d ranks without an NCCL communicator",
                             ctx->world);
        return;
    }
    /* the all-reduce starts after every op issued so far on the compute stream... */
    if (!train_cuda__ok(ctx, cudaEventRecord(ctx->ev_compute, ctx->stream), "all-reduce") ||
        !train_cuda__ok(ctx, cudaStreamWaitEvent(ctx->comm_stream, ctx->ev_compute, 0),
                        "all-reduce"))
        return;
    /* a group of one: with a non-blocking communicator, ncclGroupEnd is where the enqueue
     * is reported (ncclInProgress until it is done), the same shape for one bucket or many */
    ncclResult_t r = ncclGroupStart();
    if (r == ncclSuccess) {
        ncclResult_t c =
            ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, ctx->comm, ctx->comm_stream);
        ncclResult_t g = ncclGroupEnd();
        r = c != ncclSuccess && c != ncclInProgress ? c : g;
    }
    const char *why = NULL;
    r = settle(ctx, ctx->comm, r, ctx->nccl_timeout_s, &why);
    if (r != ncclSuccess || why) {
        abort_comm(ctx, "NCCL all-reduce of %zu floats failed on rank %d of %d (GPU %s): %s", n,
                   ctx->rank, ctx->world, ctx->gpu_name, why ? why : ncclGetErrorString(r));
        return;
    }
    if (!train_cuda__ok(ctx, cudaEventRecord(ctx->ev_comm_done, ctx->comm_stream), "all-reduce"))
        return;
    /* ...and later ops wait for it only if they touch buf (train_cuda__touch) */
    if (ctx->npending == CUDA_MAX_PENDING) {
        train_cuda__ok(ctx, cudaStreamWaitEvent(ctx->stream, ctx->ev_comm_done, 0), "all-reduce");
        ctx->npending = 0;
    }
    ctx->pending[ctx->npending].lo = (uintptr_t)buf;
    ctx->pending[ctx->npending].hi = (uintptr_t)buf + n * sizeof(float);
    ctx->npending++;
}

void train_cuda__comm_close(train_be_ctx_t *ctx)
{
    if (!ctx->comm) return;
    if (ctx->fatal) {
        ncclCommAbort(ctx->comm);
        ctx->comm = NULL;
        return;
    }
    /* finalize flushes our outstanding collectives; if a peer never joins, abort */
    const char *why = NULL;
    ncclResult_t r = ncclCommFinalize(ctx->comm);
    if (r == ncclSuccess || r == ncclInProgress)
        r = settle(ctx, ctx->comm, r, ctx->nccl_timeout_s, &why);
    if (r == ncclSuccess && !why)
        ncclCommDestroy(ctx->comm);
    else
        ncclCommAbort(ctx->comm);
    ctx->comm = NULL;
    ctx->npending = 0;
}
