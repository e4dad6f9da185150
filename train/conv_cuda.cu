/* conv_cuda.cu: the CUDA backend's convolutions (backend.h's conv_* ops) through cuDNN's
 * legacy API: a plan per layer shape, its algorithms picked deterministically from the
 * heuristics and cached per batch size, the workspace shared in the context. Built only
 * when TUNE_HAVE_CUDA. Not for: the context, memory or the other ops (backend_cuda.cu) or
 * our own kernels (kernels_cuda.cu, which does the bias and its gradient here). */
#include "train/cuda_int.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Largest cuDNN workspace a convolution plan may ask for: the heuristics' first
 * deterministic choice that fits is taken. A fixed cap keeps a plan's memory predictable
 * (PyTorch bounds the search by the memory free at the time instead, which would make
 * the choice, and so the bits, depend on what else the GPU holds). */
#define WS_CAP ((size_t)256 << 20)
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
    if (!train_cuda__dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_fwd, base_math(ctx)),
                            "set math type") ||
        !train_cuda__dnn_ok(
            ctx,
            cudnnGetConvolutionForwardAlgorithm_v7(ctx->dnn, pl->xd, pl->wd, pl->cd_fwd, pl->yd,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
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
    if (!train_cuda__dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_data, base_math(ctx)),
                            "set math type") ||
        !train_cuda__dnn_ok(ctx,
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
    if (!train_cuda__dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_filter, base_math(ctx)),
                            "set math type") ||
        !train_cuda__dnn_ok(ctx,
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
                             (size_t)CUDA_MIB(WS_CAP), s->c, s->h, s->w, s->k, s->kh, s->kw,
                             s->stride, s->pad);
            return 0;
        }
    }
    size_t need = nf > nd ? nf : nd;
    if (nw > need) need = nw;
    if (need > ctx->ws_size && !train_cuda__grow(ctx, &ctx->ws, &ctx->ws_size, need)) return 0;
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
    if (!train_cuda__dnn_ok(ctx,
                            cudnnSetTensor4dDescriptor(pl->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                       n, s->c, s->h, s->w),
                            "input descriptor") ||
        !train_cuda__dnn_ok(ctx,
                            cudnnSetTensor4dDescriptor(pl->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                       n, s->k, s->oh, s->ow),
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
    if (!train_cuda__dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_fwd, a.fwd_math),
                            "set math type") ||
        !train_cuda__dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_data, a.data_math),
                            "set math type") ||
        !train_cuda__dnn_ok(ctx, cudnnSetConvolutionMathType(pl->cd_filter, a.filter_math),
                            "set math type"))
        return 0;
    pl->cur = a;
    return 1;
}

void train_cuda__plan_destroy(train_be_conv_t *pl)
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
    return train_cuda__dnn_ok(ctx, cudnnCreateConvolutionDescriptor(cd),
                              "convolution descriptor") &&
           train_cuda__dnn_ok(
               ctx,
               cudnnSetConvolution2dDescriptor(*cd, s->pad, s->pad, s->stride, s->stride, 1, 1,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
               "convolution descriptor");
}

train_be_conv_t *train_cuda__conv_plan(train_be_ctx_t *ctx, const train_be_conv_shape_t *s)
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
    int ok =
        train_cuda__dnn_ok(ctx, cudnnCreateTensorDescriptor(&pl->xd), "tensor descriptor") &&
        train_cuda__dnn_ok(ctx, cudnnCreateTensorDescriptor(&pl->yd), "tensor descriptor") &&
        train_cuda__dnn_ok(ctx, cudnnCreateFilterDescriptor(&pl->wd), "filter descriptor") &&
        train_cuda__dnn_ok(ctx,
                           cudnnSetFilter4dDescriptor(pl->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                      s->k, s->c, s->kh, s->kw),
                           "filter descriptor") &&
        conv_desc(ctx, &pl->cd_fwd, s) && conv_desc(ctx, &pl->cd_data, s) &&
        conv_desc(ctx, &pl->cd_filter, s) &&
        train_cuda__dnn_ok(ctx,
                           cudnnSetTensor4dDescriptor(pl->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                      s->max_n, s->c, s->h, s->w),
                           "input descriptor") &&
        train_cuda__dnn_ok(
            ctx,
            cudnnGetConvolution2dForwardOutputDim(pl->cd_fwd, pl->xd, pl->wd, &on, &oc, &oh, &ow),
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
        train_cuda__plan_destroy(pl);
        return NULL;
    }
    return pl;
}

void train_cuda__conv_free(train_be_ctx_t *ctx, train_be_conv_t *plan)
{
    (void)ctx;
    if (plan) train_cuda__plan_destroy(plan);
}

void train_cuda__conv_forward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
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
    if (!train_cuda__dnn_ok(ctx,
                            cudnnConvolutionForward(ctx->dnn, &one, pl->xd, x, pl->wd, w,
                                                    pl->cd_fwd, pl->cur.fwd, ctx->ws, ctx->ws_size,
                                                    &zero, pl->yd, y),
                            "convolution forward"))
        return;
    if (bias || act != TRAIN_BE_ACT_NONE)
        train_cuda__bias_act_nchw(ctx, y, bias, n, s->k, (int)hw, act);
}

void train_cuda__conv_backward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
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
    if (dx && !train_cuda__dnn_ok(ctx,
                                  cudnnConvolutionBackwardData(
                                      ctx->dnn, &one, pl->wd, w, pl->yd, dy, pl->cd_data,
                                      pl->cur.bwd_data, ctx->ws, ctx->ws_size, &zero, pl->xd, dx),
                                  "convolution backward (data)"))
        return;
    if (dw && !train_cuda__dnn_ok(ctx,
                                  cudnnConvolutionBackwardFilter(
                                      ctx->dnn, &one, pl->xd, x, pl->yd, dy, pl->cd_filter,
                                      pl->cur.bwd_filter, ctx->ws, ctx->ws_size, &zero, pl->wd, dw),
                                  "convolution backward (filter)"))
        return;
    /* our fixed-order reduction rather than cudnnConvolutionBackwardBias, whose
     * summation order cuDNN does not promise to keep */
    if (dbias) train_cuda__bias_grad_nchw(ctx, dy, n, s->k, (int)hw, dbias);
}
