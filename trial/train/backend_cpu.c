/* backend_cpu.c: the CPU implementation of backend.h, always built and the oracle the
 * CUDA backend is tested against. Matrix products go through gemm.c; convolutions are
 * im2col + GEMM per sample (as THNN/PyTorch's CPU path), samples split over the thread
 * pool, each thread with its own workspaces and weight-gradient partial (summed in thread
 * order, so results are deterministic for a given thread count).
 * Not for: anything that talks to other ranks (ddp.c) or files. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "gemm.h"
#include "pool.h"

struct train_be_conv {
    train_be_conv_shape_t s;
    int kdim, ohw, nt;
    float **col;    /* per thread: K x OHW im2col (reused as dcol in backward) */
    float **wpack;  /* per thread: packed W (forward) or W^T (backward data) */
    float **dwpart; /* per thread > 0: partial dW (k x K) then partial dbias (k) */
    size_t wpack_floats;
    struct train_be_conv *next; /* list of live plans, freed by close */
};

struct train_be_ctx {
    train__pool_t *pool;
    train__gemm_t *gemm;
    int nt;
    int rc; /* sticky error (0 = none) and its message */
    char msg[256];
    struct train_be_conv *plans;
};

static void set_err(train_be_ctx_t *ctx, const char *fmt, ...)
{
    if (ctx->rc) return; /* keep the first */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    va_end(ap);
    ctx->rc = -1;
}

static void *alloc64(size_t bytes)
{
    bytes = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
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
    if (train__pool_new(&ctx->pool, ctx->nt, err, errlen) != 0) goto fail;
    /* TUNE_GEMM_ISA is read by the caller and passed in a later version; today the best
     * kernel for the CPU is used (tests pick kernels through gemm.h directly). */
    if (train__gemm_new(&ctx->gemm, ctx->pool, NULL, err, errlen) != 0) goto fail;
    *out = ctx;
    return 0;
fail:
    cpu_close(ctx);
    return -1;
}

static void cpu_conv_free(train_be_ctx_t *ctx, train_be_conv_t *pl);

static void cpu_close(train_be_ctx_t *ctx)
{
    if (!ctx) return;
    while (ctx->plans)
        cpu_conv_free(ctx, ctx->plans);
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
    void *p = alloc64(bytes);
    if (!p) {
        set_err(ctx, "out of memory allocating %zu bytes", bytes);
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

typedef void (*range_fn)(void *ud, size_t lo, size_t hi);
struct range_job {
    range_fn fn;
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
static void par_range(train_be_ctx_t *ctx, size_t n, size_t min_par, range_fn fn, void *ud)
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
                     const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    train__gemm(ctx->gemm, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void cpu_bias_act(train_be_ctx_t *ctx, float *y, const float *bias, int rows, int cols,
                         int act)
{
    (void)ctx;
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * cols;
        if (act == TRAIN_BE_ACT_RELU)
            for (int j = 0; j < cols; j++) {
                float v = yr[j] + bias[j];
                yr[j] = v > 0.0f ? v : 0.0f;
            }
        else
            for (int j = 0; j < cols; j++)
                yr[j] += bias[j];
    }
}

static void cpu_sum_rows(train_be_ctx_t *ctx, const float *x, int rows, int cols, float *out)
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
static void relu_bw_range(void *ud, size_t lo, size_t hi)
{
    struct relu_bw *r = ud;
    for (size_t i = lo; i < hi; i++)
        r->dx[i] = r->y[i] > 0.0f ? r->dy[i] : 0.0f;
}

static void cpu_relu_backward(train_be_ctx_t *ctx, const float *y, const float *dy, float *dx,
                              size_t n)
{
    struct relu_bw r = {y, dy, dx};
    par_range(ctx, n, 1 << 16, relu_bw_range, &r);
}

static void cpu_scale(train_be_ctx_t *ctx, float *x, size_t n, float alpha)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        x[i] *= alpha;
}

/* ---- convolution ------------------------------------------------------------------- */

/* col[(c*kh + i)*kw + j][oh*OW + ow] = x[c][oh*s - pad + i][ow*s - pad + j] (0 outside). */
static void im2col(const train_be_conv_shape_t *s, const float *x, float *col)
{
    int ohw = s->oh * s->ow;
    for (int c = 0; c < s->c; c++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) {
                float *row = col + (size_t)((c * s->kh + i) * s->kw + j) * ohw;
                const float *xc = x + (size_t)c * s->h * s->w;
                for (int oh = 0; oh < s->oh; oh++) {
                    int ih = oh * s->stride - s->pad + i;
                    float *dst = row + (size_t)oh * s->ow;
                    if (ih < 0 || ih >= s->h) {
                        memset(dst, 0, sizeof(float) * (size_t)s->ow);
                        continue;
                    }
                    const float *src = xc + (size_t)ih * s->w;
                    if (s->stride == 1 && s->pad == 0) {
                        memcpy(dst, src + j, sizeof(float) * (size_t)s->ow);
                        continue;
                    }
                    for (int ow = 0; ow < s->ow; ow++) {
                        int iw = ow * s->stride - s->pad + j;
                        dst[ow] = (iw >= 0 && iw < s->w) ? src[iw] : 0.0f;
                    }
                }
            }
}

/* The adjoint of im2col: dx[c][ih][iw] += col[...] (dx zeroed by the caller). */
static void col2im(const train_be_conv_shape_t *s, const float *col, float *dx)
{
    int ohw = s->oh * s->ow;
    for (int c = 0; c < s->c; c++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) {
                const float *row = col + (size_t)((c * s->kh + i) * s->kw + j) * ohw;
                float *xc = dx + (size_t)c * s->h * s->w;
                for (int oh = 0; oh < s->oh; oh++) {
                    int ih = oh * s->stride - s->pad + i;
                    if (ih < 0 || ih >= s->h) continue;
                    const float *src = row + (size_t)oh * s->ow;
                    float *dst = xc + (size_t)ih * s->w;
                    if (s->stride == 1 && s->pad == 0) {
                        for (int ow = 0; ow < s->ow; ow++)
                            dst[j + ow] += src[ow];
                        continue;
                    }
                    for (int ow = 0; ow < s->ow; ow++) {
                        int iw = ow * s->stride - s->pad + j;
                        if (iw >= 0 && iw < s->w) dst[iw] += src[ow];
                    }
                }
            }
}

static void cpu_conv_free(train_be_ctx_t *ctx, train_be_conv_t *pl)
{
    if (!pl) return;
    for (train_be_conv_t **pp = &ctx->plans; *pp; pp = &(*pp)->next)
        if (*pp == pl) {
            *pp = pl->next;
            break;
        }
    for (int t = 0; t < pl->nt; t++) {
        if (pl->col) free(pl->col[t]);
        if (pl->wpack) free(pl->wpack[t]);
        if (pl->dwpart) free(pl->dwpart[t]);
    }
    free(pl->col);
    free(pl->wpack);
    free(pl->dwpart);
    free(pl);
}

static train_be_conv_t *cpu_conv_plan(train_be_ctx_t *ctx, const train_be_conv_shape_t *s)
{
    train_be_conv_t *pl = calloc(1, sizeof *pl);
    if (!pl) goto oom;
    pl->s = *s;
    pl->kdim = s->c * s->kh * s->kw;
    pl->ohw = s->oh * s->ow;
    pl->nt = ctx->nt;
    pl->next = ctx->plans;
    ctx->plans = pl;
    size_t fw = train__gemm_packed_floats(ctx->gemm, 'A', s->k, pl->kdim);
    size_t bw = train__gemm_packed_floats(ctx->gemm, 'A', pl->kdim, s->k);
    pl->wpack_floats = fw > bw ? fw : bw;
    pl->col = calloc((size_t)pl->nt, sizeof(float *));
    pl->wpack = calloc((size_t)pl->nt, sizeof(float *));
    pl->dwpart = calloc((size_t)pl->nt, sizeof(float *));
    if (!pl->col || !pl->wpack || !pl->dwpart) goto oom;
    for (int t = 0; t < pl->nt; t++) {
        pl->col[t] = alloc64(sizeof(float) * (size_t)pl->kdim * pl->ohw);
        pl->wpack[t] = alloc64(sizeof(float) * pl->wpack_floats);
        if (!pl->col[t] || !pl->wpack[t]) goto oom;
        if (t > 0) {
            pl->dwpart[t] = alloc64(sizeof(float) * ((size_t)s->k * pl->kdim + (size_t)s->k));
            if (!pl->dwpart[t]) goto oom;
        }
    }
    return pl;
oom:
    set_err(ctx, "out of memory planning a convolution");
    if (pl) cpu_conv_free(ctx, pl);
    return NULL;
}

struct conv_job {
    train_be_ctx_t *ctx;
    train_be_conv_t *pl;
    int n, act;
    const float *x, *w, *bias, *dy;
    float *y, *dx, *dw, *dbias;
    _Atomic int failed;
};

static void conv_fwd_body(void *ud, int tid, int nt)
{
    struct conv_job *j = ud;
    train_be_conv_t *pl = j->pl;
    const train_be_conv_shape_t *s = &pl->s;
    int n0 = j->n * tid / nt, n1 = j->n * (tid + 1) / nt;
    if (n0 == n1) return;
    /* Y_n [k x OHW] = W [k x K] col_n [K x OHW]: W packed once per call and thread */
    train__gemm_pack(j->ctx->gemm, 'A', s->k, pl->kdim, j->w, pl->kdim, 0, pl->wpack[tid]);
    train__gemm_opnd_t a = {.packed = pl->wpack[tid]};
    train__gemm_opnd_t b = {.p = pl->col[tid], .ld = pl->ohw, .trans = 0};
    size_t in_sz = (size_t)s->c * s->h * s->w, out_sz = (size_t)s->k * pl->ohw;
    for (int n = n0; n < n1; n++) {
        float *y = j->y + (size_t)n * out_sz;
        im2col(s, j->x + (size_t)n * in_sz, pl->col[tid]);
        if (train__gemm_serial(j->ctx->gemm, tid, s->k, pl->ohw, pl->kdim, 1.0f, &a, &b, 0.0f, y,
                               pl->ohw) != 0)
            j->failed = 1;
        for (int k = 0; k < s->k; k++) {
            float *yk = y + (size_t)k * pl->ohw, bk = j->bias[k];
            if (j->act == TRAIN_BE_ACT_RELU)
                for (int p = 0; p < pl->ohw; p++) {
                    float v = yk[p] + bk;
                    yk[p] = v > 0.0f ? v : 0.0f;
                }
            else
                for (int p = 0; p < pl->ohw; p++)
                    yk[p] += bk;
        }
    }
}

static void cpu_conv_forward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                             const float *w, const float *bias, float *y, int act)
{
    assert(n <= pl->s.max_n);
    struct conv_job j = {.ctx = ctx, .pl = pl, .n = n, .act = act, .x = x, .w = w, .bias = bias,
                         .y = y};
    train__pool_run(ctx->pool, conv_fwd_body, &j);
    if (j.failed) set_err(ctx, "out of memory in a convolution");
}

static void conv_bwd_body(void *ud, int tid, int nt)
{
    struct conv_job *j = ud;
    train_be_conv_t *pl = j->pl;
    const train_be_conv_shape_t *s = &pl->s;
    int n0 = j->n * tid / nt, n1 = j->n * (tid + 1) / nt;
    size_t wsz = (size_t)s->k * pl->kdim;
    float *dw = tid == 0 ? j->dw : pl->dwpart[tid];
    float *db = tid == 0 ? j->dbias : pl->dwpart[tid] + wsz;
    memset(dw, 0, sizeof(float) * wsz);
    memset(db, 0, sizeof(float) * (size_t)s->k);
    if (n0 == n1) return;
    if (j->dx) /* dcol_n [K x OHW] = W^T [K x k] dY_n [k x OHW] */
        train__gemm_pack(j->ctx->gemm, 'A', pl->kdim, s->k, j->w, pl->kdim, 1, pl->wpack[tid]);
    size_t in_sz = (size_t)s->c * s->h * s->w, out_sz = (size_t)s->k * pl->ohw;
    float *col = pl->col[tid];
    for (int n = n0; n < n1; n++) {
        const float *dy = j->dy + (size_t)n * out_sz;
        for (int k = 0; k < s->k; k++) {
            const float *dyk = dy + (size_t)k * pl->ohw;
            float acc = 0.0f;
            for (int p = 0; p < pl->ohw; p++)
                acc += dyk[p];
            db[k] += acc;
        }
        /* dW [k x K] += dY_n [k x OHW] col_n^T */
        im2col(s, j->x + (size_t)n * in_sz, col);
        train__gemm_opnd_t a = {.p = dy, .ld = pl->ohw, .trans = 0};
        train__gemm_opnd_t b = {.p = col, .ld = pl->ohw, .trans = 1};
        if (train__gemm_serial(j->ctx->gemm, tid, s->k, pl->kdim, pl->ohw, 1.0f, &a, &b, 1.0f, dw,
                               pl->kdim) != 0)
            j->failed = 1;
        if (j->dx) {
            train__gemm_opnd_t wa = {.packed = pl->wpack[tid]};
            train__gemm_opnd_t db_ = {.p = dy, .ld = pl->ohw, .trans = 0};
            if (train__gemm_serial(j->ctx->gemm, tid, pl->kdim, pl->ohw, s->k, 1.0f, &wa, &db_,
                                   0.0f, col, pl->ohw) != 0)
                j->failed = 1;
            float *dx = j->dx + (size_t)n * in_sz;
            memset(dx, 0, sizeof(float) * in_sz);
            col2im(s, col, dx);
        }
    }
}

static void cpu_conv_backward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                              const float *w, const float *dy, float *dx, float *dw, float *dbias)
{
    assert(n <= pl->s.max_n);
    struct conv_job j = {.ctx = ctx, .pl = pl, .n = n, .x = x, .w = w, .dy = dy, .dx = dx,
                         .dw = dw, .dbias = dbias};
    train__pool_run(ctx->pool, conv_bwd_body, &j);
    if (j.failed) set_err(ctx, "out of memory in a convolution");
    /* thread partials are summed in thread order: deterministic for a thread count */
    size_t wsz = (size_t)pl->s.k * pl->kdim;
    for (int t = 1; t < pl->nt; t++) {
        const float *pw = pl->dwpart[t], *pb = pw + wsz;
        for (size_t i = 0; i < wsz; i++)
            dw[i] += pw[i];
        for (int k = 0; k < pl->s.k; k++)
            dbias[k] += pb[k];
    }
}

/* ---- pooling ----------------------------------------------------------------------- */

struct pool_job {
    int h, w, k;
    const float *x, *dy;
    float *y, *dx;
    const int32_t *am_in;
    int32_t *am;
};

static void maxpool_fwd_range(void *ud, size_t lo, size_t hi)
{
    struct pool_job *j = ud;
    int oh = j->h / j->k, ow = j->w / j->k;
    for (size_t pl = lo; pl < hi; pl++) {
        const float *x = j->x + pl * (size_t)j->h * j->w;
        float *y = j->y + pl * (size_t)oh * ow;
        int32_t *am = j->am + pl * (size_t)oh * ow;
        for (int i = 0; i < oh; i++)
            for (int jj = 0; jj < ow; jj++) {
                int best = (i * j->k) * j->w + jj * j->k;
                float bv = x[best];
                for (int a = 0; a < j->k; a++)
                    for (int b = 0; b < j->k; b++) {
                        int idx = (i * j->k + a) * j->w + jj * j->k + b;
                        if (x[idx] > bv) { /* strict: the first maximum wins */
                            bv = x[idx];
                            best = idx;
                        }
                    }
                y[i * ow + jj] = bv;
                am[i * ow + jj] = best;
            }
    }
}

static void cpu_maxpool_forward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                const float *x, float *y, int32_t *argmax)
{
    struct pool_job j = {.h = h, .w = w, .k = k, .x = x, .y = y, .am = argmax};
    par_range(ctx, (size_t)n * c, 64, maxpool_fwd_range, &j);
}

static void maxpool_bwd_range(void *ud, size_t lo, size_t hi)
{
    struct pool_job *j = ud;
    int oh = j->h / j->k, ow = j->w / j->k;
    for (size_t pl = lo; pl < hi; pl++) {
        float *dx = j->dx + pl * (size_t)j->h * j->w;
        const float *dy = j->dy + pl * (size_t)oh * ow;
        const int32_t *am = j->am_in + pl * (size_t)oh * ow;
        memset(dx, 0, sizeof(float) * (size_t)j->h * j->w);
        for (int i = 0; i < oh * ow; i++)
            dx[am[i]] += dy[i];
    }
}

static void cpu_maxpool_backward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                 const float *dy, const int32_t *argmax, float *dx)
{
    struct pool_job j = {.h = h, .w = w, .k = k, .dy = dy, .dx = dx, .am_in = argmax};
    par_range(ctx, (size_t)n * c, 64, maxpool_bwd_range, &j);
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

static void cpu_sgd_step(train_be_ctx_t *ctx, float *p, const float *grad, float *buf, size_t n,
                         float lr, float momentum, float wd, int nesterov)
{
    (void)ctx;
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

static void cpu_adam_step(train_be_ctx_t *ctx, float *p, const float *grad, float *m, float *v,
                          size_t n, float lr, float b1, float b2, float eps, float wd, float bc1,
                          float bc2)
{
    (void)ctx;
    float step = lr / bc1, sbc2 = sqrtf(bc2);
    for (size_t i = 0; i < n; i++) {
        float g = grad[i];
        if (wd != 0.0f) g += wd * p[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        p[i] -= step * m[i] / (sqrtf(v[i]) / sbc2 + eps);
    }
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
    .conv_plan = cpu_conv_plan,
    .conv_free = cpu_conv_free,
    .conv_forward = cpu_conv_forward,
    .conv_backward = cpu_conv_backward,
    .maxpool_forward = cpu_maxpool_forward,
    .maxpool_backward = cpu_maxpool_backward,
    .load_batch = cpu_load_batch,
    .softmax_xent = cpu_softmax_xent,
    .sgd_step = cpu_sgd_step,
    .adam_step = cpu_adam_step,
    .comm_init = NULL,
    .allreduce_sum = NULL,
};
