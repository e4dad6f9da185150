/* backend_cuda.cu: tune-train's CUDA backend (train_be_cuda in backend.h): one stream per
 * rank, its errors, memory and lifetime, cuBLAS SGEMM for dense layers and the ops table;
 * cuDNN's convolutions are conv_cuda.cu's, our kernels (kernels_cuda.cu) do everything
 * small, NCCL (nccl_cuda.cu) the gradients. Built only when TUNE_HAVE_CUDA; the CPU
 * backend is the oracle it is tested against.
 * Not for: model or optimiser logic (written once over backend.h), data loading. */
#include "train/cuda_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
                     (size_t)CUDA_MIB(bytes), ctx->gpu_name);
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

int train_cuda__dnn_ok(train_be_ctx_t *ctx, cudnnStatus_t s, const char *what)
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
int train_cuda__grow(train_be_ctx_t *ctx, void **p, size_t *have, size_t need)
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
         train_cuda__dnn_ok(ctx, cudnnCreate(&ctx->dnn), "init") &&
         train_cuda__dnn_ok(ctx, cudnnSetStream(ctx->dnn, ctx->stream), "set stream");
    /* scratch sized for batches up to 4096 samples; bigger ones grow it once */
    void *p = NULL;
    ok = ok && train_cuda__grow(ctx, &p, &ctx->idx_cap, 4096 * sizeof(int32_t));
    ctx->idx_dev = (int32_t *)p;
    ctx->idx_cap /= sizeof(int32_t);
    p = NULL;
    ok = ok && train_cuda__grow(ctx, &p, &ctx->xent_cap, 2 * 4096 * sizeof(double));
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

static void cuda_close(train_be_ctx_t *ctx)
{
    if (!ctx) return;
    cudaSetDevice(ctx->dev);
    train_cuda__comm_close(ctx);
    if (!ctx->fatal && ctx->stream && ctx->ev_sync) train_cuda__wait_all(ctx);
    while (ctx->plans)
        train_cuda__plan_destroy(ctx->plans);
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
        int ok = train_cuda__grow(ctx, &p, &have, (size_t)n * sizeof(int32_t));
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
        int ok = train_cuda__grow(ctx, &p, &have, (size_t)n * 2 * sizeof(double));
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
    train_cuda__conv_plan,     /* conv_plan */
    train_cuda__conv_free,     /* conv_free */
    train_cuda__conv_forward,  /* conv_forward */
    train_cuda__conv_backward, /* conv_backward */
    cuda_maxpool_forward,      /* maxpool_forward */
    cuda_maxpool_backward,     /* maxpool_backward */
    cuda_load_batch,           /* load_batch */
    cuda_softmax_xent,         /* softmax_xent */
    cuda_sgd_step,             /* sgd_step */
    cuda_adam_step,            /* adam_step */
    train_cuda__comm_init,     /* comm_init */
    train_cuda__allreduce_sum, /* allreduce_sum */
};
