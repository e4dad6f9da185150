/* backend_cpu.c: the CPU implementation of backend.h, always built and the oracle the
 * CUDA backend is tested against: the context and its thread pool, memory, dense algebra
 * (matrix products through gemm.c), data, loss, optimisers and the ops table; the image
 * layers (convolution, max pooling) are layers_cpu.c's. Work is split over the thread
 * pool in fixed ranges, so results are deterministic for a given thread count. The x86
 * paths sit beside a plain C path, which is what other architectures build and what
 * train_be_opts_t.portable picks: the reference they are tested against
 * (tests/test_train.c, cpu_tuned_matches_portable).
 * Not for: anything that talks to other ranks (ddp.c) or files. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu_int.h"

void train_cpu__set_err(train_be_ctx_t *ctx, const char *fmt, ...)
{
    if (ctx->rc) return; /* keep the first */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    va_end(ap);
    ctx->rc = -1;
}

/* Buffers of 2 MiB and more (the cnn's activations) start on a huge-page boundary and ask
 * for transparent huge pages, which kernels in THP "madvise" mode only give on request:
 * zeroing them in alloc then faults once per 2 MiB instead of once per 4 KiB, and those
 * faults were most of the cnn's time to its first training step (the figures are in
 * bench/train/README.md). The tail past the last 2 MiB boundary keeps 4 KiB pages
 * (rounding the size up would hold up to 2 MiB more per buffer for a few hundred faults). */
#define HUGE_PAGE ((size_t)2 << 20)

void *train_cpu__alloc64(size_t bytes)
{
    bytes = (bytes + 63) / 64 * 64;
    if (bytes < HUGE_PAGE) return aligned_alloc(64, bytes ? bytes : 64);
    void *p;
    if (posix_memalign(&p, HUGE_PAGE, bytes) != 0) return NULL;
    madvise(p, bytes, MADV_HUGEPAGE); /* advice: where refused, 4 KiB pages as before */
    return p;
}

/* ---- lifetime ---------------------------------------------------------------------- */

static void cpu_close(train_be_ctx_t *ctx);

static int cpu_open(const train_be_opts_t *o, train_be_ctx_t **out, char *err, size_t errlen)
{
    train_be_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    ctx->nt = o->threads > 0 ? o->threads : 1;
#if TRAIN_HAVE_X86
    __builtin_cpu_init();
    ctx->avx = !o->portable && __builtin_cpu_supports("avx");
    ctx->avx512 = !o->portable && __builtin_cpu_supports("avx512f");
#endif
    if (train__pool_new(&ctx->pool, ctx->nt, err, errlen) != 0) goto fail;
    /* the best kernel the CPU has, or the plain C one (tests compare kernels through
     * gemm.h directly, and whole models against o->portable) */
    if (train__gemm_new(&ctx->gemm, ctx->pool, o->portable ? "generic" : NULL, err, errlen) != 0)
        goto fail;
    *out = ctx;
    return 0;
fail:
    cpu_close(ctx);
    return -1;
}

static void cpu_close(train_be_ctx_t *ctx)
{
    if (!ctx) return;
    while (ctx->plans)
        train_cpu__conv_free(ctx, ctx->plans);
    train__gemm_free(ctx->gemm);
    train__pool_free(ctx->pool);
    free(ctx);
}

static int cpu_sync(train_be_ctx_t *ctx, char *err, size_t errlen)
{
    if (!ctx->rc) return 0;
    snprintf(err, errlen, "%s", ctx->msg);
    int rc = ctx->rc;
    ctx->rc = 0;
    return rc;
}

/* ---- memory ------------------------------------------------------------------------ */

static void *cpu_alloc(train_be_ctx_t *ctx, size_t bytes)
{
    void *p = train_cpu__alloc64(bytes);
    if (!p) {
        train_cpu__set_err(ctx, "out of memory allocating %zu bytes", bytes);
        return NULL;
    }
    memset(p, 0, bytes);
    return p;
}

static void cpu_free_mem(train_be_ctx_t *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static void cpu_upload(train_be_ctx_t *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes) memcpy(dst, src, bytes);
}

static int cpu_download(train_be_ctx_t *ctx, void *dst, const void *src, size_t bytes, char *err,
                        size_t errlen)
{
    if (bytes) memcpy(dst, src, bytes);
    return cpu_sync(ctx, err, errlen);
}

static void cpu_copy(train_be_ctx_t *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes) memmove(dst, src, bytes);
}

static void cpu_zero(train_be_ctx_t *ctx, void *dst, size_t bytes)
{
    (void)ctx;
    if (bytes) memset(dst, 0, bytes);
}

/* ---- helpers to split elementwise work over the pool ------------------------------- */

typedef void (*train_cpu__range_cb)(void *ud, size_t lo, size_t hi);
struct range_job {
    train_cpu__range_cb fn;
    void *ud;
    size_t n;
};

static void range_body(void *ud, int tid, int nt)
{
    struct range_job *j = ud;
    size_t lo = j->n * (size_t)tid / (size_t)nt, hi = j->n * (size_t)(tid + 1) / (size_t)nt;
    if (lo < hi) j->fn(j->ud, lo, hi);
}

/* Runs fn over [0, n) split in contiguous ranges; small n stays on the calling thread. */
void train_cpu__par_range(train_be_ctx_t *ctx, size_t n, size_t min_par, train_cpu__range_cb fn,
                          void *ud)
{
    if (ctx->nt == 1 || n < min_par) {
        if (n) fn(ud, 0, n);
        return;
    }
    struct range_job j = {fn, ud, n};
    train__pool_run(ctx->pool, range_body, &j);
}

/* ---- dense algebra ----------------------------------------------------------------- */

static void cpu_gemm(train_be_ctx_t *ctx, int ta, int tb, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc)
{
    train__gemm(ctx->gemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* y[j] = act(y[j] + b) for one row of n (b broadcast when bstride is 0). */
VEC void train_cpu__row_bias_act(float *restrict y, const float *restrict b, int bstride, int n,
                                 int act)
{
    if (act == TRAIN_BE_ACT_RELU)
        for (int j = 0; j < n; j++) {
            float v = y[j] + b[j * bstride];
            y[j] = v > 0.0f ? v : 0.0f;
        }
    else
        for (int j = 0; j < n; j++)
            y[j] += b[j * bstride];
}

struct bias_job {
    float *y;
    const float *b;
    int cols, act;
};
static void bias_act_range(void *ud, size_t lo, size_t hi)
{
    struct bias_job *j = ud;
    for (size_t r = lo; r < hi; r++)
        train_cpu__row_bias_act(j->y + r * (size_t)j->cols, j->b, 1, j->cols, j->act);
}

static void cpu_bias_act(train_be_ctx_t *ctx, float *y, const float *bias, int rows, int cols,
                         int act)
{
    struct bias_job j = {y, bias, cols, act};
    train_cpu__par_range(ctx, (size_t)rows, (size_t)(1 << 15) / (size_t)(cols + 1) + 1,
                         bias_act_range, &j);
}

VEC static void cpu_sum_rows(train_be_ctx_t *ctx, const float *restrict x, int rows, int cols,
                             float *restrict out)
{
    (void)ctx;
    for (int j = 0; j < cols; j++)
        out[j] = 0.0f;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        for (int j = 0; j < cols; j++)
            out[j] += xr[j];
    }
}

struct relu_bw {
    const float *y, *dy;
    float *dx;
};
VEC static void relu_bw_loop(const float *y, const float *dy, float *dx, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}
static void relu_bw_range(void *ud, size_t lo, size_t hi)
{
    struct relu_bw *r = ud;
    relu_bw_loop(r->y + lo, r->dy + lo, r->dx + lo, hi - lo);
}

static void cpu_relu_backward(train_be_ctx_t *ctx, const float *y, const float *dy, float *dx,
                              size_t n)
{
    struct relu_bw r = {y, dy, dx};
    train_cpu__par_range(ctx, n, 1 << 16, relu_bw_range, &r);
}

VEC static void cpu_scale(train_be_ctx_t *ctx, float *x, size_t n, float alpha)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        x[i] *= alpha;
}
/* ---- data and loss ----------------------------------------------------------------- */

static void cpu_load_batch(train_be_ctx_t *ctx, const uint8_t *images, const uint8_t *labels,
                           const int32_t *idx, int n, int dim, float mean, float std, float *x,
                           int32_t *y)
{
    (void)ctx;
    /* (v/255 - mean)/std as one multiply-add per pixel, through a 256-entry table so
     * every backend computing the same formula in float gets the same values */
    float lut[256];
    for (int v = 0; v < 256; v++)
        lut[v] = ((float)v / 255.0f - mean) / std;
    for (int i = 0; i < n; i++) {
        const uint8_t *src = images + (size_t)idx[i] * dim;
        float *dst = x + (size_t)i * dim;
        for (int d = 0; d < dim; d++)
            dst[d] = lut[src[d]];
        y[i] = labels[idx[i]];
    }
}

static void cpu_softmax_xent(train_be_ctx_t *ctx, const float *logits, const int32_t *y, int n,
                             int classes, float grad_scale, float *dlogits, double *stats)
{
    (void)ctx;
    double loss = 0.0, correct = 0.0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * classes;
        int am = 0;
        for (int c = 1; c < classes; c++)
            if (z[c] > z[am]) am = c;
        float mx = z[am], sum = 0.0f;
        for (int c = 0; c < classes; c++)
            sum += expf(z[c] - mx);
        float lse = mx + logf(sum);
        loss += (double)(lse - z[y[i]]);
        correct += am == y[i];
        if (dlogits) {
            float *d = dlogits + (size_t)i * classes;
            for (int c = 0; c < classes; c++)
                d[c] = grad_scale * (expf(z[c] - lse) - (c == y[i] ? 1.0f : 0.0f));
        }
    }
    stats[0] += loss;
    stats[1] += correct;
}

/* ---- optimisers -------------------------------------------------------------------- */

struct opt_job {
    float *p, *buf, *m, *v;
    const float *g;
    float lr, momentum, wd, b1, b2, eps, bc1, bc2;
    int nesterov;
};

VEC static void sgd_loop(float *restrict p, const float *restrict grad, float *restrict buf,
                         size_t n, float lr, float momentum, float wd, int nesterov)
{
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        if (wd != 0.0f) g += wd * p[i];
        if (momentum != 0.0f) {
            float b = momentum * buf[i] + g;
            buf[i] = b;
            g = nesterov ? g + momentum * b : b;
        }
        p[i] -= lr * g;
    }
}

static void sgd_range(void *ud, size_t lo, size_t hi)
{
    struct opt_job *j = ud;
    sgd_loop(j->p + lo, j->g + lo, j->buf + lo, hi - lo, j->lr, j->momentum, j->wd, j->nesterov);
}

static void cpu_sgd_step(train_be_ctx_t *ctx, float *p, const float *grad, float *buf, size_t n,
                         float lr, float momentum, float wd, int nesterov)
{
    struct opt_job j = {.p = p,
                        .g = grad,
                        .buf = buf,
                        .lr = lr,
                        .momentum = momentum,
                        .wd = wd,
                        .nesterov = nesterov};
    train_cpu__par_range(ctx, n, 1 << 15, sgd_range, &j);
}

VEC static void adam_loop(float *restrict p, const float *restrict grad, float *restrict m,
                          float *restrict v, size_t n, float lr, float b1, float b2, float eps,
                          float wd, float bc1, float bc2)
{
    float step = lr / bc1, sbc2 = sqrtf(bc2);
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        if (wd != 0.0f) g += wd * p[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        p[i] -= step * m[i] / (sqrtf(v[i]) / sbc2 + eps);
    }
}

static void adam_range(void *ud, size_t lo, size_t hi)
{
    struct opt_job *j = ud;
    adam_loop(j->p + lo, j->g + lo, j->m + lo, j->v + lo, hi - lo, j->lr, j->b1, j->b2, j->eps,
              j->wd, j->bc1, j->bc2);
}

static void cpu_adam_step(train_be_ctx_t *ctx, float *p, const float *grad, float *m, float *v,
                          size_t n, float lr, float b1, float b2, float eps, float wd, float bc1,
                          float bc2)
{
    struct opt_job j = {.p = p,
                        .g = grad,
                        .m = m,
                        .v = v,
                        .lr = lr,
                        .b1 = b1,
                        .b2 = b2,
                        .eps = eps,
                        .wd = wd,
                        .bc1 = bc1,
                        .bc2 = bc2};
    train_cpu__par_range(ctx, n, 1 << 15, adam_range, &j);
}

const train_be_ops_t train_be_cpu = {
    .name = "cpu",
    .host_memory = 1,
    .open = cpu_open,
    .close = cpu_close,
    .sync = cpu_sync,
    .alloc = cpu_alloc,
    .free_mem = cpu_free_mem,
    .upload = cpu_upload,
    .download = cpu_download,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .gemm = cpu_gemm,
    .bias_act = cpu_bias_act,
    .sum_rows = cpu_sum_rows,
    .relu_backward = cpu_relu_backward,
    .scale = cpu_scale,
    .conv_plan = train_cpu__conv_plan,
    .conv_free = train_cpu__conv_free,
    .conv_forward = train_cpu__conv_forward,
    .conv_backward = train_cpu__conv_backward,
    .maxpool_forward = train_cpu__maxpool_forward,
    .maxpool_backward = train_cpu__maxpool_backward,
    .load_batch = cpu_load_batch,
    .softmax_xent = cpu_softmax_xent,
    .sgd_step = cpu_sgd_step,
    .adam_step = cpu_adam_step,
    .comm_init = NULL,
    .allreduce_sum = NULL,
};
