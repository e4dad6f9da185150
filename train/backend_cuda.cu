/* backend_cuda.cu: tune-train's CUDA backend (train_be_cuda in backend.h): one stream per
 * rank, cuBLAS SGEMM for dense layers, cuDNN's legacy convolution API, our kernels
 * (kernels_cuda.cu) for everything small, NCCL (nccl_cuda.cu) for gradients. Built only
 * when TUNE_HAVE_CUDA; the CPU backend is the oracle it is tested against.
 * Not for: model or optimiser logic (written once over backend.h), data loading. */
#include "train/cuda_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB(b) (((b) + (1u << 20) - 1) >> 20)

/* Largest cuDNN workspace a convolution plan may ask for: the heuristics' first
 * deterministic choice that fits is taken. A fixed cap keeps a plan's memory predictable
 * (PyTorch bounds the search by the memory free at the time instead, which would make
 * the choice, and so the bits, depend on what else the GPU holds). */
#define WS_CAP ((size_t)256 << 20)

/* ==== errors ======================================================================== */

void train_cuda__fail_rc(train_be_ctx_t *ctx, int fatal, int rc, const char *fmt, ...)
{
    /* keep the first error (later ones are usually its consequences), except that a fatal
     * one replaces a non-fatal one: it is what every later sync will report */
    if (ctx->rc && !(fatal && !ctx->fatal)) return;
    if (fatal) ctx->fatal = 1;
    ctx->rc = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
}

void train_cuda__fail(train_be_ctx_t *ctx, int fatal, const char *fmt, ...)
{
    if (ctx->rc && !(fatal && !ctx->fatal)) return;
    if (fatal) ctx->fatal = 1;
    ctx->rc = TRAIN_ERR;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
}

void train_cuda__oom(train_be_ctx_t *ctx, size_t bytes)
{
    train_cuda__fail(ctx, 0,
                     "CUDA out of memory allocating %zu MiB on GPU %s: reduce --batch-size or "
                     "use a larger slice",
                     (size_t)MIB(bytes), ctx->gpu_name);
}

/* Errors after which the CUDA context is unusable (cudaGetLastError cannot clear them). */
static int sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
        return 1;
    default:
        return 0;
    }
}

int train_cuda__ok(train_be_ctx_t *ctx, cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return 1;
    (void)cudaGetLastError(); /* clear a non-sticky error so the next check is not misled */
    if (e == cudaErrorMemoryAllocation)
        train_cuda__fail(ctx, 0,
                         "CUDA out of memory in %s on GPU %s: reduce --batch-size or use a "
                         "larger slice",
                         what, ctx->gpu_name);
    else
        train_cuda__fail(ctx, sticky(e), "CUDA error in %s on GPU %s: %s (%s)", what, ctx->gpu_name,
                         cudaGetErrorString(e), cudaGetErrorName(e));
    return 0;
}

int train_cuda__launched(train_be_ctx_t *ctx, const char *kernel)
{
    return train_cuda__ok(ctx, cudaGetLastError(), kernel);
}

static int blas_ok(train_be_ctx_t *ctx, cublasStatus_t s, const char *what)
{
    if (s == CUBLAS_STATUS_SUCCESS) return 1;
    if (s == CUBLAS_STATUS_ALLOC_FAILED)
        train_cuda__fail(ctx, 0,
                         "CUDA out of memory in cuBLAS %s on GPU %s: reduce --batch-size or use "
                         "a larger slice",
                         what, ctx->gpu_name);
    else
        train_cuda__fail(ctx, s == CUBLAS_STATUS_EXECUTION_FAILED, "cuBLAS %s failed on GPU %s: %s",
                         what, ctx->gpu_name, cublasGetStatusString(s));
    return 0;
}

static int dnn_ok(train_be_ctx_t *ctx, cudnnStatus_t s, const char *what)
{
    if (s == CUDNN_STATUS_SUCCESS) return 1;
    if (s == CUDNN_STATUS_ALLOC_FAILED)
        train_cuda__fail(ctx, 0,
                         "CUDA out of memory in cuDNN %s on GPU %s: reduce --batch-size or use a "
                         "larger slice",
                         what, ctx->gpu_name);
    else
        train_cuda__fail(ctx, s == CUDNN_STATUS_EXECUTION_FAILED, "cuDNN %s failed on GPU %s: %s",
                         what, ctx->gpu_name, cudnnGetErrorString(s));
    return 0;
}

/* Hands the recorded error to the caller: 0, or the code with err filled. A non-fatal
 * error is reported once (backend.h: "the first error since the last sync"). */
static int report(train_be_ctx_t *ctx, char *err, size_t errlen)
{
    if (!ctx->rc) return 0;
    int rc = ctx->rc;
    if (err && errlen) snprintf(err, errlen, "%s", ctx->err);
    if (!ctx->fatal) {
        ctx->rc = 0;
        ctx->err[0] = 0;
    }
    return rc;
}

/* ==== memory ======================================================================== */

void *train_cuda__malloc(train_be_ctx_t *ctx, size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaSuccess) return p;
    (void)cudaGetLastError();
    if (e == cudaErrorMemoryAllocation)
        train_cuda__oom(ctx, bytes);
    else
        train_cuda__ok(ctx, e, "cudaMalloc");
    return NULL;
}

/* Makes *p hold at least `need` bytes, keeping nothing (the contents are scratch). Growing
 * waits for the device, so callers size these buffers for the common case up front. */
static int grow(train_be_ctx_t *ctx, void **p, size_t *have, size_t need)
{
    if (*p && *have >= need) return 1;
    if (*p) {
        if (!train_cuda__wait_all(ctx)) return 0;
        cudaFree(*p);
        *p = NULL;
        *have = 0;
    }
    *p = train_cuda__malloc(ctx, need);
    if (!*p) return 0;
    *have = need;
    return 1;
}

void train_cuda__stage_upload(train_be_ctx_t *ctx, void *dst, const void *src, size_t bytes)
{
    const char *s = (const char *)src;
    char *d = (char *)dst;
    while (bytes > 0) {
        size_t chunk = bytes < CUDA_STAGE_BYTES ? bytes : CUDA_STAGE_BYTES;
        int slot = ctx->stage_next;
        ctx->stage_next = (slot + 1) % CUDA_STAGE_SLOTS;
        /* the copy that last read this slot must be done before we overwrite it */
        if (!train_cuda__wait_event(ctx, ctx->stage_done[slot])) return;
        memcpy(ctx->stage[slot], s, chunk);
        if (!train_cuda__ok(
                ctx,
                cudaMemcpyAsync(d, ctx->stage[slot], chunk, cudaMemcpyHostToDevice, ctx->stream),
                "upload"))
            return;
        if (!train_cuda__ok(ctx, cudaEventRecord(ctx->stage_done[slot], ctx->stream), "upload"))
            return;
        s += chunk;
        d += chunk;
        bytes -= chunk;
    }
}

static void *cuda_alloc(train_be_ctx_t *ctx, size_t bytes)
{
    void *p = train_cuda__malloc(ctx, bytes);
    if (!p) return NULL;
    /* zeroed in stream order: every later op on this memory is queued behind it */
    if (!train_cuda__ok(ctx, cudaMemsetAsync(p, 0, bytes, ctx->stream), "alloc")) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void cuda_free_mem(train_be_ctx_t *ctx, void *p)
{
    if (!p) return;
    /* cudaFree waits for the whole device; wait ourselves first so a dead NCCL peer is
     * noticed (and the communicator aborted) instead of hanging inside cudaFree */
    if (!ctx->fatal) train_cuda__wait_all(ctx);
    ctx->npending = 0;
    cudaFree(p);
}

static void cuda_upload(train_be_ctx_t *ctx, void *dst, const void *host_src, size_t bytes)
{
    train_cuda__touch(ctx, dst, bytes);
    train_cuda__stage_upload(ctx, dst, host_src, bytes);
}

static int cuda_download(train_be_ctx_t *ctx, void *host_dst, const void *src, size_t bytes,
                         char *err, size_t errlen)
{
    train_cuda__touch(ctx, src, bytes);
    const char *s = (const char *)src;
    char *d = (char *)host_dst;
    /* through the pinned slots, so the wait is our polling one (it watches NCCL) rather
     * than a blocking copy into pageable memory */
    while (bytes > 0 && !ctx->fatal) {
        size_t chunk = bytes < CUDA_STAGE_BYTES ? bytes : CUDA_STAGE_BYTES;
        int slot = ctx->stage_next;
        ctx->stage_next = (slot + 1) % CUDA_STAGE_SLOTS;
        if (!train_cuda__ok(
                ctx,
                cudaMemcpyAsync(ctx->stage[slot], s, chunk, cudaMemcpyDeviceToHost, ctx->stream),
                "download"))
            break;
        if (!train_cuda__ok(ctx, cudaEventRecord(ctx->stage_done[slot], ctx->stream), "download"))
            break;
        if (!train_cuda__wait_event(ctx, ctx->stage_done[slot])) break;
        memcpy(d, ctx->stage[slot], chunk);
        s += chunk;
        d += chunk;
        bytes -= chunk;
    }
    return report(ctx, err, errlen);
}

static void cuda_copy(train_be_ctx_t *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return;
    train_cuda__touch(ctx, dst, bytes);
    train_cuda__touch(ctx, src, bytes);
    train_cuda__ok(ctx, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx->stream),
                   "copy");
}

static void cuda_zero(train_be_ctx_t *ctx, void *dst, size_t bytes)
{
    if (bytes == 0) return;
    train_cuda__touch(ctx, dst, bytes);
    train_cuda__ok(ctx, cudaMemsetAsync(dst, 0, bytes, ctx->stream), "zero");
}

/* ==== lifetime ====================================================================== */

/* What messages call GPU `ordinal`: its entry in CUDA_VISIBLE_DEVICES (the id the
 * scheduler's slice names, e.g. "3" in "gpu:2,3"), else the ordinal itself. */
static void gpu_name(int ordinal, char *buf, size_t n)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(buf, n, "%d", ordinal);
    if (!v || !*v) return;
    const char *p = v;
    for (int i = 0; i < ordinal && p; i++) {
        p = strchr(p, ',');
        if (p) p++;
    }
    if (!p || !*p) return;
    size_t len = strcspn(p, ",");
    if (len == 0 || len >= n) return;
    memcpy(buf, p, len);
    buf[len] = 0;
}

static void cuda_close(train_be_ctx_t *ctx);

static int cuda_open(const train_be_opts_t *o, train_be_ctx_t **out, char *err, size_t errlen)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count <= 0) {
        const char *v = getenv("CUDA_VISIBLE_DEVICES");
        (void)cudaGetLastError();
        snprintf(err, errlen,
                 "--device cuda: no CUDA device is visible (CUDA_VISIBLE_DEVICES=%s%s%s%s%s)",
                 v ? "\"" : "", v ? v : "unset", v ? "\"" : "",
                 e != cudaSuccess ? "; CUDA says: " : "",
                 e != cudaSuccess ? cudaGetErrorString(e) : "");
        return TRAIN_ERR;
    }
    train_be_ctx_t *ctx = (train_be_ctx_t *)calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(err, errlen, "--device cuda: out of host memory");
        return TRAIN_ERR;
    }
    int local = o->local_rank < 0 ? 0 : o->local_rank;
    ctx->dev = local % count;
    gpu_name(ctx->dev, ctx->gpu_name, sizeof ctx->gpu_name);
    ctx->rank = o->rank;
    ctx->world = o->world;
    /* TF32 is opt-in (--tf32) so the GPU agrees with the FP32 CPU oracle by default */
    ctx->tf32 = o->allow_tf32 != 0;
    ctx->nccl_timeout_s = o->timeout_s > 0 ? o->timeout_s : CUDA_DEFAULT_TIMEOUT_S;
    ctx->peer_dead = o->peer_dead;
    ctx->peer_ud = o->peer_ud;
    ctx->parent_pid = (int)getppid();

    int ok =
        train_cuda__ok(ctx, cudaSetDevice(ctx->dev), "cudaSetDevice") &&
        train_cuda__ok(ctx, cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking),
                       "cudaStreamCreate") &&
        train_cuda__ok(ctx, cudaStreamCreateWithFlags(&ctx->comm_stream, cudaStreamNonBlocking),
                       "cudaStreamCreate") &&
        train_cuda__ok(ctx, cudaEventCreateWithFlags(&ctx->ev_compute, cudaEventDisableTiming),
                       "cudaEventCreate") &&
        train_cuda__ok(ctx, cudaEventCreateWithFlags(&ctx->ev_comm_done, cudaEventDisableTiming),
                       "cudaEventCreate") &&
        train_cuda__ok(ctx, cudaEventCreateWithFlags(&ctx->ev_sync, cudaEventDisableTiming),
                       "cudaEventCreate");
    for (int i = 0; ok && i < CUDA_STAGE_SLOTS; i++)
        ok = train_cuda__ok(ctx,
                            cudaEventCreateWithFlags(&ctx->stage_done[i], cudaEventDisableTiming),
                            "cudaEventCreate") &&
             train_cuda__ok(ctx,
                            cudaHostAlloc(&ctx->stage[i], CUDA_STAGE_BYTES, cudaHostAllocDefault),
                            "cudaHostAlloc (pinned staging)");
    ok = ok && blas_ok(ctx, cublasCreate(&ctx->blas), "init") &&
         blas_ok(ctx, cublasSetStream(ctx->blas, ctx->stream), "set stream") &&
         blas_ok(ctx,
                 cublasSetMathMode(ctx->blas,
                                   ctx->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                 "set math mode") &&
         dnn_ok(ctx, cudnnCreate(&ctx->dnn), "init") &&
         dnn_ok(ctx, cudnnSetStream(ctx->dnn, ctx->stream), "set stream");
    /* scratch sized for batches up to 4096 samples; bigger ones grow it once */
    void *p = NULL;
    ok = ok && grow(ctx, &p, &ctx->idx_cap, 4096 * sizeof(int32_t));
    ctx->idx_dev = (int32_t *)p;
    ctx->idx_cap /= sizeof(int32_t);
    p = NULL;
    ok = ok && grow(ctx, &p, &ctx->xent_cap, 2 * 4096 * sizeof(double));
    ctx->xent_part = (double *)p;
    ctx->xent_cap /= 2 * sizeof(double);
    if (!ok) {
        snprintf(err, errlen, "--device cuda: %s", ctx->err);
        cuda_close(ctx);
        return TRAIN_ERR;
    }
    *out = ctx;
    return 0;
}

static void plan_destroy(train_be_conv_t *plan);

static void cuda_close(train_be_ctx_t *ctx)
{
    if (!ctx) return;
    cudaSetDevice(ctx->dev);
    train_cuda__comm_close(ctx);
    if (!ctx->fatal && ctx->stream && ctx->ev_sync) train_cuda__wait_all(ctx);
    while (ctx->plans)
        plan_destroy(ctx->plans);
    if (ctx->dnn) cudnnDestroy(ctx->dnn);
    if (ctx->blas) cublasDestroy(ctx->blas);
    cudaFree(ctx->ws);
    cudaFree(ctx->idx_dev);
    cudaFree(ctx->xent_part);
    for (int i = 0; i < CUDA_STAGE_SLOTS; i++) {
        if (ctx->stage[i]) cudaFreeHost(ctx->stage[i]);
        if (ctx->stage_done[i]) cudaEventDestroy(ctx->stage_done[i]);
    }
    if (ctx->ev_compute) cudaEventDestroy(ctx->ev_compute);
    if (ctx->ev_comm_done) cudaEventDestroy(ctx->ev_comm_done);
    if (ctx->ev_sync) cudaEventDestroy(ctx->ev_sync);
    if (ctx->comm_stream) cudaStreamDestroy(ctx->comm_stream);
    if (ctx->stream) cudaStreamDestroy(ctx->stream);
    (void)cudaGetLastError();
    free(ctx);
}

static int cuda_sync(train_be_ctx_t *ctx, char *err, size_t errlen)
{
    if (!ctx->fatal) train_cuda__wait_all(ctx);
    return report(ctx, err, errlen);
}

/* ==== dense algebra ================================================================= */

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: hand cuBLAS B first
 * and swap m and n (the usual trick; each row-major matrix read column-major is its
 * transpose, so the op flags carry over unchanged). */
static void cuda_gemm(train_be_ctx_t *ctx, int trans_a, int trans_b, int m, int n, int k,
                      float alpha, const float *a, int lda, const float *b, int ldb, float beta,
                      float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    train_cuda__touch(ctx, a, (size_t)(trans_a ? k : m) * lda * sizeof(float));
    train_cuda__touch(ctx, b, (size_t)(trans_b ? n : k) * ldb * sizeof(float));
    train_cuda__touch(ctx, c, (size_t)m * ldc * sizeof(float));
    cublasStatus_t s = cublasSgemm(ctx->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                   trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a,
                                   lda, &beta, c, ldc);
    if (s != CUBLAS_STATUS_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "sgemm (m=%d n=%d k=%d)", m, n, k);
        blas_ok(ctx, s, what);
    }
}

static void cuda_bias_act(train_be_ctx_t *ctx, float *y, const float *bias, int rows, int cols,
                          int act)
{
    train_cuda__touch(ctx, y, (size_t)rows * cols * sizeof(float));
    train_cuda__touch(ctx, bias, (size_t)cols * sizeof(float));
    train_cuda__bias_act(ctx, y, bias, rows, cols, act);
}

static void cuda_sum_rows(train_be_ctx_t *ctx, const float *x, int rows, int cols, float *out)
{
    train_cuda__touch(ctx, x, (size_t)rows * cols * sizeof(float));
    train_cuda__touch(ctx, out, (size_t)cols * sizeof(float));
    train_cuda__sum_rows(ctx, x, rows, cols, out);
}

static void cuda_relu_backward(train_be_ctx_t *ctx, const float *y, const float *dy, float *dx,
                               size_t n)
{
    train_cuda__touch(ctx, y, n * sizeof(float));
    train_cuda__touch(ctx, dy, n * sizeof(float));
    train_cuda__touch(ctx, dx, n * sizeof(float));
    train_cuda__relu_backward(ctx, y, dy, dx, n);
}

static void cuda_scale(train_be_ctx_t *ctx, float *x, size_t n, float alpha)
{
    train_cuda__touch(ctx, x, n * sizeof(float));
    train_cuda__scale(ctx, x, n, alpha);
}

/* ==== convolution (cuDNN legacy API) ================================================= */

/* The algorithms and math types for one batch size. */
typedef struct conv_algos {
    int n;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    cudnnMathType_t fwd_math, data_math, filter_math;
} conv_algos_t;

#define PLAN_CACHE 8

struct train_be_conv {
    train_be_ctx_t *ctx;
    train_be_conv_shape_t s;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    /* one convolution descriptor per direction: each carries the math type of the
     * algorithm chosen for it */
    cudnnConvolutionDescriptor_t cd_fwd, cd_data, cd_filter;
    conv_algos_t cur;               /* what the descriptors are set for now (n = 0: none) */
    conv_algos_t cache[PLAN_CACHE]; /* batch sizes seen: the full batch, the last one, ... */
    int ncache, cache_next;
    train_be_conv_t *next, **pprev; /* ctx->plans list */
};

/* Math type to ask cuDNN for: FMA only unless TF32 is allowed (on Ampere and later the
 * default lets FP32 convolutions run in TF32, which the CPU oracle would not match). */
static cudnnMathType_t base_math(const train_be_ctx_t *ctx)
{
    return ctx->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

static cudnnMathType_t run_math(const train_be_ctx_t *ctx, cudnnMathType_t suggested)
{
    return ctx->tf32 ? suggested : CUDNN_FMA_MATH;
}

/* Each pick_* takes cuDNN's heuristic ranking (the _v7 queries: they depend only on the
 * shapes and the GPU, so a rerun picks the same algorithms and stays bit-identical,
 * which timing-based cudnnFind* would not promise), skips non-deterministic algorithms
 * and those needing more than `limit` bytes of workspace, and returns the first left.
 * *need gets its workspace size. 0 when none qualifies (no error recorded). */
static int pick_fwd(train_be_conv_t *pl, size_t limit, conv_algos_t *a, size_t *need)
{
    train_be_ctx_t *ctx = pl->ctx;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    if (!dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_fwd, base_math(ctx)), "set math type") ||
        !dnn_ok(ctx,
                cudnnGetConvolutionForwardAlgorithm_v7(ctx->dnn, pl->xd, pl->wd, pl->cd_fwd, pl->yd,
                                                       CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got,
                                                       perf),
                "forward algorithm query"))
        return 0;
    for (int i = 0; i < got; i++) {
        size_t ws = 0;
        cudnnMathType_t mt = run_math(ctx, perf[i].mathType);
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].determinism != CUDNN_DETERMINISTIC)
            continue;
        if (cudnnSetConvolutionMathType(pl->cd_fwd, mt) != CUDNN_STATUS_SUCCESS ||
            cudnnGetConvolutionForwardWorkspaceSize(ctx->dnn, pl->xd, pl->wd, pl->cd_fwd, pl->yd,
                                                    perf[i].algo, &ws) != CUDNN_STATUS_SUCCESS ||
            ws > limit)
            continue;
        a->fwd = perf[i].algo;
        a->fwd_math = mt;
        *need = ws;
        return 1;
    }
    return 0;
}

static int pick_data(train_be_conv_t *pl, size_t limit, conv_algos_t *a, size_t *need)
{
    train_be_ctx_t *ctx = pl->ctx;
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int got = 0;
    if (!dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_data, base_math(ctx)), "set math type") ||
        !dnn_ok(ctx,
                cudnnGetConvolutionBackwardDataAlgorithm_v7(
                    ctx->dnn, pl->wd, pl->yd, pl->cd_data, pl->xd,
                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf),
                "backward-data algorithm query"))
        return 0;
    for (int i = 0; i < got; i++) {
        size_t ws = 0;
        cudnnMathType_t mt = run_math(ctx, perf[i].mathType);
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].determinism != CUDNN_DETERMINISTIC)
            continue;
        if (cudnnSetConvolutionMathType(pl->cd_data, mt) != CUDNN_STATUS_SUCCESS ||
            cudnnGetConvolutionBackwardDataWorkspaceSize(ctx->dnn, pl->wd, pl->yd, pl->cd_data,
                                                         pl->xd, perf[i].algo,
                                                         &ws) != CUDNN_STATUS_SUCCESS ||
            ws > limit)
            continue;
        a->bwd_data = perf[i].algo;
        a->data_math = mt;
        *need = ws;
        return 1;
    }
    return 0;
}

static int pick_filter(train_be_conv_t *pl, size_t limit, conv_algos_t *a, size_t *need)
{
    train_be_ctx_t *ctx = pl->ctx;
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int got = 0;
    if (!dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_filter, base_math(ctx)), "set math type") ||
        !dnn_ok(ctx,
                cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                    ctx->dnn, pl->xd, pl->yd, pl->cd_filter, pl->wd,
                    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf),
                "backward-filter algorithm query"))
        return 0;
    for (int i = 0; i < got; i++) {
        size_t ws = 0;
        cudnnMathType_t mt = run_math(ctx, perf[i].mathType);
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].determinism != CUDNN_DETERMINISTIC)
            continue;
        if (cudnnSetConvolutionMathType(pl->cd_filter, mt) != CUDNN_STATUS_SUCCESS ||
            cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx->dnn, pl->xd, pl->yd, pl->cd_filter,
                                                           pl->wd, perf[i].algo,
                                                           &ws) != CUDNN_STATUS_SUCCESS ||
            ws > limit)
            continue;
        a->bwd_filter = perf[i].algo;
        a->filter_math = mt;
        *need = ws;
        return 1;
    }
    return 0;
}

/* Picks all three algorithms for the descriptors as set now. At plan time (the plan's
 * max_n) the heuristics' best deterministic choice within WS_CAP is taken and the shared
 * workspace grown to fit (a device wait, fine before training). For other batch sizes the
 * workspace held already is preferred, so the steady state never reallocates; only if
 * nothing fits does it grow. */
static int pick_all(train_be_conv_t *pl, conv_algos_t *a, int at_plan)
{
    train_be_ctx_t *ctx = pl->ctx;
    size_t nf = 0, nd = 0, nw = 0;
    int ok = !at_plan && pick_fwd(pl, ctx->ws_size, a, &nf) &&
             pick_data(pl, ctx->ws_size, a, &nd) && pick_filter(pl, ctx->ws_size, a, &nw);
    if (!ok) {
        if (ctx->rc && ctx->fatal) return 0;
        if (!pick_fwd(pl, WS_CAP, a, &nf) || !pick_data(pl, WS_CAP, a, &nd) ||
            !pick_filter(pl, WS_CAP, a, &nw)) {
            const train_be_conv_shape_t *s = &pl->s;
            train_cuda__fail(ctx, 0,
                             "cuDNN has no deterministic algorithm within %zu MiB of workspace "
                             "for the convolution %dx%dx%d -> %d (%dx%d kernel, stride %d, pad %d)",
                             (size_t)MIB(WS_CAP), s->c, s->h, s->w, s->k, s->kh, s->kw, s->stride,
                             s->pad);
            return 0;
        }
    }
    size_t need = nf > nd ? nf : nd;
    if (nw > need) need = nw;
    if (need > ctx->ws_size && !grow(ctx, &ctx->ws, &ctx->ws_size, need)) return 0;
    return 1;
}

/* Sets the plan's descriptors and algorithms for batch size n (cached per n, so the
 * steady state is a compare). at_plan: called from conv_plan (see pick_all). */
static int plan_for_n(train_be_conv_t *pl, int n, int at_plan)
{
    train_be_ctx_t *ctx = pl->ctx;
    const train_be_conv_shape_t *s = &pl->s;
    if (pl->cur.n == n) return 1;
    assert(n > 0 && n <= s->max_n);
    pl->cur.n = 0;
    if (!dnn_ok(ctx,
                cudnnSetTensor4dDescriptor(pl->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, s->c,
                                           s->h, s->w),
                "input descriptor") ||
        !dnn_ok(ctx,
                cudnnSetTensor4dDescriptor(pl->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, s->k,
                                           s->oh, s->ow),
                "output descriptor"))
        return 0;
    conv_algos_t a;
    int hit = -1;
    for (int i = 0; i < pl->ncache; i++)
        if (pl->cache[i].n == n) hit = i;
    if (hit >= 0) {
        a = pl->cache[hit];
    } else {
        memset(&a, 0, sizeof a);
        if (!pick_all(pl, &a, at_plan)) return 0;
        a.n = n;
        int slot = pl->ncache < PLAN_CACHE ? pl->ncache++ : pl->cache_next;
        if (pl->ncache == PLAN_CACHE) pl->cache_next = (slot + 1) % PLAN_CACHE;
        pl->cache[slot] = a;
    }
    if (!dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_fwd, a.fwd_math), "set math type") ||
        !dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_data, a.data_math), "set math type") ||
        !dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_filter, a.filter_math), "set math type"))
        return 0;
    pl->cur = a;
    return 1;
}

static void plan_destroy(train_be_conv_t *pl)
{
    if (pl->pprev) {
        *pl->pprev = pl->next;
        if (pl->next) pl->next->pprev = pl->pprev;
    }
    if (pl->xd) cudnnDestroyTensorDescriptor(pl->xd);
    if (pl->yd) cudnnDestroyTensorDescriptor(pl->yd);
    if (pl->wd) cudnnDestroyFilterDescriptor(pl->wd);
    if (pl->cd_fwd) cudnnDestroyConvolutionDescriptor(pl->cd_fwd);
    if (pl->cd_data) cudnnDestroyConvolutionDescriptor(pl->cd_data);
    if (pl->cd_filter) cudnnDestroyConvolutionDescriptor(pl->cd_filter);
    free(pl);
}

static int conv_desc(train_be_ctx_t *ctx, cudnnConvolutionDescriptor_t *cd,
                     const train_be_conv_shape_t *s)
{
    return dnn_ok(ctx, cudnnCreateConvolutionDescriptor(cd), "convolution descriptor") &&
           dnn_ok(ctx,
                  cudnnSetConvolution2dDescriptor(*cd, s->pad, s->pad, s->stride, s->stride, 1, 1,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                  "convolution descriptor");
}

static train_be_conv_t *cuda_conv_plan(train_be_ctx_t *ctx, const train_be_conv_shape_t *s)
{
    assert(s->max_n > 0 && s->stride >= 1 && s->pad >= 0);
    train_be_conv_t *pl = (train_be_conv_t *)calloc(1, sizeof *pl);
    if (!pl) {
        train_cuda__fail(ctx, 0, "out of host memory for a convolution plan");
        return NULL;
    }
    pl->ctx = ctx;
    pl->s = *s;
    pl->next = ctx->plans;
    pl->pprev = &ctx->plans;
    if (ctx->plans) ctx->plans->pprev = &pl->next;
    ctx->plans = pl;
    int on = 0, oc = 0, oh = 0, ow = 0;
    int ok = dnn_ok(ctx, cudnnCreateTensorDescriptor(&pl->xd), "tensor descriptor") &&
             dnn_ok(ctx, cudnnCreateTensorDescriptor(&pl->yd), "tensor descriptor") &&
             dnn_ok(ctx, cudnnCreateFilterDescriptor(&pl->wd), "filter descriptor") &&
             dnn_ok(ctx,
                    cudnnSetFilter4dDescriptor(pl->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s->k,
                                               s->c, s->kh, s->kw),
                    "filter descriptor") &&
             conv_desc(ctx, &pl->cd_fwd, s) && conv_desc(ctx, &pl->cd_data, s) &&
             conv_desc(ctx, &pl->cd_filter, s) &&
             dnn_ok(ctx,
                    cudnnSetTensor4dDescriptor(pl->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                               s->max_n, s->c, s->h, s->w),
                    "input descriptor") &&
             dnn_ok(ctx,
                    cudnnGetConvolution2dForwardOutputDim(pl->cd_fwd, pl->xd, pl->wd, &on, &oc, &oh,
                                                          &ow),
                    "output shape");
    if (ok && (oc != s->k || oh != s->oh || ow != s->ow)) {
        train_cuda__fail(ctx, 0,
                         "convolution plan: cuDNN computes a %dx%dx%d output where the model "
                         "expects %dx%dx%d",
                         oc, oh, ow, s->k, s->oh, s->ow);
        ok = 0;
    }
    /* choose for the largest batch now, so the workspace is sized before training */
    ok = ok && plan_for_n(pl, s->max_n, 1);
    if (!ok) {
        plan_destroy(pl);
        return NULL;
    }
    return pl;
}

static void cuda_conv_free(train_be_ctx_t *ctx, train_be_conv_t *plan)
{
    (void)ctx;
    if (plan) plan_destroy(plan);
}

static void cuda_conv_forward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                              const float *w, const float *bias, float *y, int act)
{
    const train_be_conv_shape_t *s = &pl->s;
    size_t hw = (size_t)s->oh * s->ow;
    train_cuda__touch(ctx, x, (size_t)n * s->c * s->h * s->w * sizeof(float));
    train_cuda__touch(ctx, w, (size_t)s->k * s->c * s->kh * s->kw * sizeof(float));
    train_cuda__touch(ctx, bias, (size_t)s->k * sizeof(float));
    train_cuda__touch(ctx, y, (size_t)n * s->k * hw * sizeof(float));
    if (!plan_for_n(pl, n, 0)) return;
    const float one = 1.0f, zero = 0.0f;
    if (!dnn_ok(ctx,
                cudnnConvolutionForward(ctx->dnn, &one, pl->xd, x, pl->wd, w, pl->cd_fwd,
                                        pl->cur.fwd, ctx->ws, ctx->ws_size, &zero, pl->yd, y),
                "convolution forward"))
        return;
    if (bias || act != TRAIN_BE_ACT_NONE)
        train_cuda__bias_act_nchw(ctx, y, bias, n, s->k, (int)hw, act);
}

static void cuda_conv_backward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                               const float *w, const float *dy, float *dx, float *dw, float *dbias)
{
    const train_be_conv_shape_t *s = &pl->s;
    size_t xbytes = (size_t)n * s->c * s->h * s->w * sizeof(float);
    size_t wbytes = (size_t)s->k * s->c * s->kh * s->kw * sizeof(float);
    size_t hw = (size_t)s->oh * s->ow;
    train_cuda__touch(ctx, x, xbytes);
    train_cuda__touch(ctx, w, wbytes);
    train_cuda__touch(ctx, dy, (size_t)n * s->k * hw * sizeof(float));
    train_cuda__touch(ctx, dx, xbytes);
    train_cuda__touch(ctx, dw, wbytes);
    train_cuda__touch(ctx, dbias, (size_t)s->k * sizeof(float));
    if (!plan_for_n(pl, n, 0)) return;
    const float one = 1.0f, zero = 0.0f;
    if (dx && !dnn_ok(ctx,
                      cudnnConvolutionBackwardData(ctx->dnn, &one, pl->wd, w, pl->yd, dy,
                                                   pl->cd_data, pl->cur.bwd_data, ctx->ws,
                                                   ctx->ws_size, &zero, pl->xd, dx),
                      "convolution backward (data)"))
        return;
    if (dw && !dnn_ok(ctx,
                      cudnnConvolutionBackwardFilter(ctx->dnn, &one, pl->xd, x, pl->yd, dy,
                                                     pl->cd_filter, pl->cur.bwd_filter, ctx->ws,
                                                     ctx->ws_size, &zero, pl->wd, dw),
                      "convolution backward (filter)"))
        return;
    /* our fixed-order reduction rather than cudnnConvolutionBackwardBias, whose
     * summation order cuDNN does not promise to keep */
    if (dbias) train_cuda__bias_grad_nchw(ctx, dy, n, s->k, (int)hw, dbias);
}

/* ==== pooling, data, loss, optimisers ================================================ */

static void cuda_maxpool_forward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                 const float *x, float *y, int32_t *argmax)
{
    size_t out = (size_t)n * c * (h / k) * (w / k);
    train_cuda__touch(ctx, x, (size_t)n * c * h * w * sizeof(float));
    train_cuda__touch(ctx, y, out * sizeof(float));
    train_cuda__touch(ctx, argmax, out * sizeof(int32_t));
    train_cuda__maxpool_forward(ctx, n, c, h, w, k, x, y, argmax);
}

static void cuda_maxpool_backward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                  const float *dy, const int32_t *argmax, float *dx)
{
    size_t out = (size_t)n * c * (h / k) * (w / k);
    train_cuda__touch(ctx, dy, out * sizeof(float));
    train_cuda__touch(ctx, argmax, out * sizeof(int32_t));
    train_cuda__touch(ctx, dx, (size_t)n * c * h * w * sizeof(float));
    train_cuda__maxpool_backward(ctx, n, c, h, w, k, dy, argmax, dx);
}

static void cuda_load_batch(train_be_ctx_t *ctx, const uint8_t *images, const uint8_t *labels,
                            const int32_t *idx, int n, int dim, float mean, float std, float *x,
                            int32_t *y)
{
    if (n <= 0) return;
    train_cuda__touch(ctx, x, (size_t)n * dim * sizeof(float));
    train_cuda__touch(ctx, y, (size_t)n * sizeof(int32_t));
    if ((size_t)n > ctx->idx_cap) {
        void *p = ctx->idx_dev;
        size_t have = ctx->idx_cap * sizeof(int32_t);
        int ok = grow(ctx, &p, &have, (size_t)n * sizeof(int32_t));
        ctx->idx_dev = (int32_t *)p;
        ctx->idx_cap = ok ? (size_t)n : 0;
        if (!ok) return;
    }
    /* idx is host memory the caller may reuse at once: staged through pinned memory */
    train_cuda__stage_upload(ctx, ctx->idx_dev, idx, (size_t)n * sizeof(int32_t));
    train_cuda__load_batch(ctx, images, labels, ctx->idx_dev, n, dim, mean, std, x, y);
}

static void cuda_softmax_xent(train_be_ctx_t *ctx, const float *logits, const int32_t *y, int n,
                              int classes, float grad_scale, float *dlogits, double *stats)
{
    if (n <= 0) return;
    size_t bytes = (size_t)n * classes * sizeof(float);
    train_cuda__touch(ctx, logits, bytes);
    train_cuda__touch(ctx, y, (size_t)n * sizeof(int32_t));
    train_cuda__touch(ctx, dlogits, bytes);
    train_cuda__touch(ctx, stats, 2 * sizeof(double));
    if ((size_t)n > ctx->xent_cap) {
        void *p = ctx->xent_part;
        size_t have = ctx->xent_cap * 2 * sizeof(double);
        int ok = grow(ctx, &p, &have, (size_t)n * 2 * sizeof(double));
        ctx->xent_part = (double *)p;
        ctx->xent_cap = ok ? (size_t)n : 0;
        if (!ok) return;
    }
    train_cuda__softmax_xent(ctx, logits, y, n, classes, grad_scale, dlogits, ctx->xent_part,
                             stats);
}

static void cuda_sgd_step(train_be_ctx_t *ctx, float *param, const float *grad, float *buf,
                          size_t n, float lr, float momentum, float weight_decay, int nesterov)
{
    train_cuda__touch(ctx, param, n * sizeof(float));
    train_cuda__touch(ctx, grad, n * sizeof(float));
    if (momentum != 0.0f) train_cuda__touch(ctx, buf, n * sizeof(float));
    train_cuda__sgd_step(ctx, param, grad, buf, n, lr, momentum, weight_decay, nesterov);
}

static void cuda_adam_step(train_be_ctx_t *ctx, float *param, const float *grad, float *m, float *v,
                           size_t n, float lr, float beta1, float beta2, float eps,
                           float weight_decay, float bc1, float bc2)
{
    train_cuda__touch(ctx, param, n * sizeof(float));
    train_cuda__touch(ctx, grad, n * sizeof(float));
    train_cuda__touch(ctx, m, n * sizeof(float));
    train_cuda__touch(ctx, v, n * sizeof(float));
    train_cuda__adam_step(ctx, param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2);
}

/* ==== the ops table ================================================================== */
/* Positional, in backend.h's order (designated initializers need C++20): a reordered or
 * inserted member fails to compile here because the function types differ. */
extern "C" const train_be_ops_t train_be_cuda = {
    "cuda",                    /* name */
    0,                         /* host_memory */
    cuda_open,                 /* open */
    cuda_close,                /* close */
    cuda_sync,                 /* sync */
    cuda_alloc,                /* alloc */
    cuda_free_mem,             /* free_mem */
    cuda_upload,               /* upload */
    cuda_download,             /* download */
    cuda_copy,                 /* copy */
    cuda_zero,                 /* zero */
    cuda_gemm,                 /* gemm */
    cuda_bias_act,             /* bias_act */
    cuda_sum_rows,             /* sum_rows */
    cuda_relu_backward,        /* relu_backward */
    cuda_scale,                /* scale */
    cuda_conv_plan,            /* conv_plan */
    cuda_conv_free,            /* conv_free */
    cuda_conv_forward,         /* conv_forward */
    cuda_conv_backward,        /* conv_backward */
    cuda_maxpool_forward,      /* maxpool_forward */
    cuda_maxpool_backward,     /* maxpool_backward */
    cuda_load_batch,           /* load_batch */
    cuda_softmax_xent,         /* softmax_xent */
    cuda_sgd_step,             /* sgd_step */
    cuda_adam_step,            /* adam_step */
    train_cuda__comm_init,     /* comm_init */
    train_cuda__allreduce_sum, /* allreduce_sum */
};
