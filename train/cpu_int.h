/* train internals shared by the CPU backend's two files only: backend_cpu.c (the context,
 * memory, dense algebra, data, loss, optimisers and the ops table) and layers_cpu.c (the
 * image layers: convolution and max pooling): the context struct, the VEC clones macro and
 * the functions called across the two. Not for: the rest of the trainer, which sees
 * backend.h's ops only. */
#ifndef TUNE_TRAIN_CPU_INT_H
#define TUNE_TRAIN_CPU_INT_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "gemm.h"
#include "pool.h"

/* Hot elementwise loops are compiled for AVX-512, AVX2 and the baseline and picked at
 * load time (GCC function multi-versioning); ISO C mode keeps a*b+c unfused, so every
 * clone computes bit-identical results. */
#if TRAIN_HAVE_X86 && defined(__x86_64__) && !defined(__clang__)
#define VEC __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VEC
#endif

struct train_be_ctx {
    train__pool_t *pool;
    train__gemm_t *gemm;
    int nt;
    int avx;    /* the AVX im2col/col2im copies may be used (the CPU has AVX, not portable) */
    int avx512; /* the hand-vectorised AVX-512 pooling may be used (likewise) */
    int rc;     /* sticky error (0 = none) and its message */
    char msg[256];
    struct train_be_conv *plans;
};

/* ---- backend_cpu.c -------------------------------------------------------------------- */
/* Records the first error since the last sync (ctx->rc, ctx->msg); later ones are dropped. */
void train_cpu__set_err(train_be_ctx_t *ctx, const char *fmt, ...);
/* A 64-byte aligned buffer (huge-page aligned and advised from 2 MiB up), freed with free(). */
void *train_cpu__alloc64(size_t bytes);
/* The work of train_cpu__par_range: fn(ud, lo, hi) for one contiguous range. */
typedef void (*train_cpu__range_cb)(void *ud, size_t lo, size_t hi);
/* Runs fn over [0, n) split in contiguous ranges; small n stays on the calling thread. */
void train_cpu__par_range(train_be_ctx_t *ctx, size_t n, size_t min_par, train_cpu__range_cb fn,
                          void *ud);
/* y[j] = act(y[j] + b) for one row of n (b broadcast when bstride is 0). */
void train_cpu__row_bias_act(float *restrict y, const float *restrict b, int bstride, int n,
                             int act);

/* ---- layers_cpu.c: backend.h's conv_* and maxpool_* ops ------------------------------- */
train_be_conv_t *train_cpu__conv_plan(train_be_ctx_t *ctx, const train_be_conv_shape_t *s);
void train_cpu__conv_free(train_be_ctx_t *ctx, train_be_conv_t *pl);
void train_cpu__conv_forward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                             const float *w, const float *bias, float *y, int act);
void train_cpu__conv_backward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                              const float *w, const float *dy, float *dx, float *dw, float *dbias);
void train_cpu__maxpool_forward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                const float *x, float *y, int32_t *argmax);
void train_cpu__maxpool_backward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                 const float *dy, const int32_t *argmax, float *dx);

#endif
