/* layers_cpu.c: the CPU backend's image layers (backend.h's conv_* and maxpool_* ops):
 * convolutions as im2col + GEMM per sample (as THNN/PyTorch's CPU path), samples split
 * over the thread pool, each thread with its own workspaces and weight-gradient partial
 * (summed in thread order, so results are deterministic for a given thread count); 2x2 max
 * pooling, with an AVX-512 path beside the plain C one. The AVX copies and AVX-512 pooling
 * are used only where the CPU has them and the backend is not portable.
 * Not for: the context, memory or the other ops (backend_cpu.c). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_int.h"

#if TRAIN_HAVE_X86
#include <immintrin.h>
#endif

struct train_be_conv {
    train_be_conv_shape_t s;
    int kdim, ohw, nt;
    float **col;    /* per thread: K x OHW im2col (reused as dcol in backward) */
    float **wpack;  /* per thread: packed W (forward) or W^T (backward data) */
    float **dwpart; /* per thread > 0: partial dW (k x K) then partial dbias (k) */
    size_t wpack_floats;
    struct train_be_conv *next; /* list of live plans, freed by close */
};

/* ---- convolution ------------------------------------------------------------------- */

/* Copies n floats in 8-float pieces of constant size (single vector moves): conv rows
 * are short (8, 24 floats), where memcpy calls or variable-length loops cost more than
 * the copy. */
static inline void copy_row(float *restrict d, const float *restrict s, int n)
{
    int q = 0;
    for (; q + 8 <= n; q += 8)
        for (int r = 0; r < 8; r++)
            d[q + r] = s[q + r];
    for (; q < n; q++)
        d[q] = s[q];
}

static inline void add_row(float *restrict d, const float *restrict s, int n)
{
    int q = 0;
    for (; q + 8 <= n; q += 8)
        for (int r = 0; r < 8; r++)
            d[q + r] += s[q + r];
    for (; q < n; q++)
        d[q] += s[q];
}

#if TRAIN_HAVE_X86
/* im2col for stride 1, no padding and OW a multiple of 8 with AVX: every output row is a
 * run of 8-float vector copies (the cnn's 24- and 8-wide rows). A flat loop nest keeps
 * the counters in registers. */
__attribute__((target("avx"))) static void im2col_s1_avx(const float *x, float *col, int C, int H,
                                                         int W, int KH, int KW, int OH, int OW)
{
    for (int c = 0; c < C; c++)
        for (int i = 0; i < KH; i++) {
            const float *xi = x + ((size_t)c * H + i) * W;
            for (int j = 0; j < KW; j++) {
                const float *src = xi + j;
                for (int oh = 0; oh < OH; oh++, src += W)
                    for (int ow = 0; ow < OW; ow += 8, col += 8)
                        _mm256_storeu_ps(col, _mm256_loadu_ps(src + ow));
            }
        }
}

#endif

/* col[(c*kh + i)*kw + j][oh*OW + ow] = x[c][oh*s - pad + i][ow*s - pad + j] (0 outside). */
VEC static void im2col(const train_be_conv_shape_t *sh, const float *restrict x,
                       float *restrict col, int avx)
{
    const int C = sh->c, H = sh->h, W = sh->w, KH = sh->kh, KW = sh->kw, OH = sh->oh, OW = sh->ow,
              S = sh->stride, P = sh->pad;
    const size_t ohw = (size_t)OH * OW;
#if TRAIN_HAVE_X86
    if (S == 1 && P == 0 && OW % 8 == 0 && avx) {
        im2col_s1_avx(x, col, C, H, W, KH, KW, OH, OW);
        return;
    }
#else
    (void)avx;
#endif
    for (int c = 0; c < C; c++)
        for (int i = 0; i < KH; i++)
            for (int j = 0; j < KW; j++) {
                float *row = col + ((size_t)(c * KH + i) * KW + j) * ohw;
                const float *xc = x + (size_t)c * H * W;
                if (S == 1 && P == 0) {
                    const float *src = xc + (size_t)i * W + j;
                    for (int oh = 0; oh < OH; oh++)
                        copy_row(row + (size_t)oh * OW, src + (size_t)oh * W, OW);
                    continue;
                }
                for (int oh = 0; oh < OH; oh++) {
                    int ih = oh * S - P + i;
                    float *dst = row + (size_t)oh * OW;
                    for (int ow = 0; ow < OW; ow++) {
                        int iw = ow * S - P + j;
                        dst[ow] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? xc[(size_t)ih * W + iw]
                                                                           : 0.0f;
                    }
                }
            }
}

#if TRAIN_HAVE_X86
/* col2im's counterpart of im2col_s1_avx. */
__attribute__((target("avx"))) static void col2im_s1_avx(const float *col, float *dx, int C, int H,
                                                         int W, int KH, int KW, int OH, int OW)
{
    for (int c = 0; c < C; c++)
        for (int i = 0; i < KH; i++) {
            float *xi = dx + ((size_t)c * H + i) * W;
            for (int j = 0; j < KW; j++) {
                float *dst = xi + j;
                for (int oh = 0; oh < OH; oh++, dst += W)
                    for (int ow = 0; ow < OW; ow += 8, col += 8)
                        _mm256_storeu_ps(dst + ow, _mm256_add_ps(_mm256_loadu_ps(dst + ow),
                                                                 _mm256_loadu_ps(col)));
            }
        }
}

#endif

/* The adjoint of im2col: dx[c][ih][iw] += col[...] (dx zeroed by the caller). */
VEC static void col2im(const train_be_conv_shape_t *sh, const float *restrict col,
                       float *restrict dx, int avx)
{
    const int C = sh->c, H = sh->h, W = sh->w, KH = sh->kh, KW = sh->kw, OH = sh->oh, OW = sh->ow,
              S = sh->stride, P = sh->pad;
    const size_t ohw = (size_t)OH * OW;
#if TRAIN_HAVE_X86
    if (S == 1 && P == 0 && OW % 8 == 0 && avx) {
        col2im_s1_avx(col, dx, C, H, W, KH, KW, OH, OW);
        return;
    }
#else
    (void)avx;
#endif
    for (int c = 0; c < C; c++)
        for (int i = 0; i < KH; i++)
            for (int j = 0; j < KW; j++) {
                const float *row = col + ((size_t)(c * KH + i) * KW + j) * ohw;
                float *xc = dx + (size_t)c * H * W;
                if (S == 1 && P == 0) {
                    float *dst = xc + (size_t)i * W + j;
                    for (int oh = 0; oh < OH; oh++)
                        add_row(dst + (size_t)oh * W, row + (size_t)oh * OW, OW);
                    continue;
                }
                for (int oh = 0; oh < OH; oh++) {
                    int ih = oh * S - P + i;
                    if (ih < 0 || ih >= H) continue;
                    for (int ow = 0; ow < OW; ow++) {
                        int iw = ow * S - P + j;
                        if (iw >= 0 && iw < W) xc[(size_t)ih * W + iw] += row[(size_t)oh * OW + ow];
                    }
                }
            }
}

void train_cpu__conv_free(train_be_ctx_t *ctx, train_be_conv_t *pl)
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

train_be_conv_t *train_cpu__conv_plan(train_be_ctx_t *ctx, const train_be_conv_shape_t *s)
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
        pl->col[t] = train_cpu__alloc64(sizeof(float) * (size_t)pl->kdim * pl->ohw);
        pl->wpack[t] = train_cpu__alloc64(sizeof(float) * pl->wpack_floats);
        if (!pl->col[t] || !pl->wpack[t]) goto oom;
        if (t > 0) {
            pl->dwpart[t] =
                train_cpu__alloc64(sizeof(float) * ((size_t)s->k * pl->kdim + (size_t)s->k));
            if (!pl->dwpart[t]) goto oom;
        }
    }
    return pl;
oom:
    train_cpu__set_err(ctx, "out of memory planning a convolution");
    if (pl) train_cpu__conv_free(ctx, pl);
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
        im2col(s, j->x + (size_t)n * in_sz, pl->col[tid], j->ctx->avx);
        if (train__gemm_serial(j->ctx->gemm, tid, s->k, pl->ohw, pl->kdim, 1.0f, &a, &b, 0.0f, y,
                               pl->ohw) != 0)
            j->failed = 1;
        for (int k = 0; k < s->k; k++)
            train_cpu__row_bias_act(y + (size_t)k * pl->ohw, j->bias + k, 0, pl->ohw, j->act);
    }
}

void train_cpu__conv_forward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                             const float *w, const float *bias, float *y, int act)
{
    assert(n <= pl->s.max_n);
    struct conv_job j = {
        .ctx = ctx, .pl = pl, .n = n, .act = act, .x = x, .w = w, .bias = bias, .y = y};
    train__pool_run(ctx->pool, conv_fwd_body, &j);
    if (j.failed) train_cpu__set_err(ctx, "out of memory in a convolution");
}

/* Sum with 16 independent partial sums (vectorisable without reassociating: the order is
 * fixed, so the result is too). */
VEC static float sum16(const float *x, int n)
{
    float acc[16] = {0};
    int p = 0;
    for (; p + 16 <= n; p += 16)
        for (int q = 0; q < 16; q++)
            acc[q] += x[p + q];
    float t = 0.0f;
    for (int q = 0; q < 16; q++)
        t += acc[q];
    for (; p < n; p++)
        t += x[p];
    return t;
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
        for (int k = 0; k < s->k; k++)
            db[k] += sum16(dy + (size_t)k * pl->ohw, pl->ohw);
        /* dW [k x K] += dY_n [k x OHW] col_n^T */
        im2col(s, j->x + (size_t)n * in_sz, col, j->ctx->avx);
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
            col2im(s, col, dx, j->ctx->avx);
        }
    }
}

void train_cpu__conv_backward(train_be_ctx_t *ctx, train_be_conv_t *pl, int n, const float *x,
                              const float *w, const float *dy, float *dx, float *dw, float *dbias)
{
    assert(n <= pl->s.max_n);
    struct conv_job j = {
        .ctx = ctx, .pl = pl, .n = n, .x = x, .w = w, .dy = dy, .dx = dx, .dw = dw, .dbias = dbias};
    train__pool_run(ctx->pool, conv_bwd_body, &j);
    if (j.failed) train_cpu__set_err(ctx, "out of memory in a convolution");
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
    int h, w, k, avx512;
    const float *x, *dy;
    float *y, *dx;
    const int32_t *am_in;
    int32_t *am;
};

#if TRAIN_HAVE_X86
/* 2x2 windows with AVX-512: one output row (up to 16 windows) per vector; the four window
 * elements are de-interleaved with permutes and compared branch-free in scan order, so
 * the first maximum wins exactly as in the scalar code. Needs even h and w. */
__attribute__((target("avx512f"))) static void maxpool2_plane_avx512(const float *x, int h, int w,
                                                                     float *y, int32_t *am)
{
    int oh = h / 2, ow = w / 2;
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i lane2 =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int i = 0; i < oh; i++) {
        const float *r0 = x + (size_t)(2 * i) * w, *r1 = r0 + w;
        for (int j0 = 0; j0 < ow; j0 += 16) {
            int cnt = ow - j0 < 16 ? ow - j0 : 16, n2 = 2 * cnt;
            __mmask16 mlo = (__mmask16)(n2 >= 16 ? 0xFFFF : (1u << n2) - 1);
            __mmask16 mhi = (__mmask16)(n2 <= 16 ? 0 : (1u << (n2 - 16)) - 1);
            __mmask16 m = (__mmask16)(cnt == 16 ? 0xFFFF : (1u << cnt) - 1);
            const float *p0 = r0 + 2 * j0, *p1 = r1 + 2 * j0;
            __m512 l0 = _mm512_maskz_loadu_ps(mlo, p0), h0 = _mm512_maskz_loadu_ps(mhi, p0 + 16);
            __m512 l1 = _mm512_maskz_loadu_ps(mlo, p1), h1 = _mm512_maskz_loadu_ps(mhi, p1 + 16);
            __m512 a = _mm512_permutex2var_ps(l0, even, h0),
                   b = _mm512_permutex2var_ps(l0, odd, h0);
            __m512 c = _mm512_permutex2var_ps(l1, even, h1),
                   d = _mm512_permutex2var_ps(l1, odd, h1);
            __m512i ia = _mm512_add_epi32(_mm512_set1_epi32(2 * i * w + 2 * j0), lane2);
            __m512 best = a;
            __m512i bi = ia;
            __mmask16 g = _mm512_cmp_ps_mask(b, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, g, b);
            bi = _mm512_mask_mov_epi32(bi, g, _mm512_add_epi32(ia, _mm512_set1_epi32(1)));
            g = _mm512_cmp_ps_mask(c, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, g, c);
            bi = _mm512_mask_mov_epi32(bi, g, _mm512_add_epi32(ia, _mm512_set1_epi32(w)));
            g = _mm512_cmp_ps_mask(d, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, g, d);
            bi = _mm512_mask_mov_epi32(bi, g, _mm512_add_epi32(ia, _mm512_set1_epi32(w + 1)));
            _mm512_mask_storeu_ps(y + (size_t)i * ow + j0, m, best);
            _mm512_mask_storeu_epi32(am + (size_t)i * ow + j0, m, bi);
        }
    }
}

/* The backward of the above: every input position written once, zero unless it was the
 * window's argmax. */
__attribute__((target("avx512f"))) static void
maxpool2_plane_bw_avx512(const float *dy, const int32_t *am, int h, int w, float *dx)
{
    int oh = h / 2, ow = w / 2;
    const __m512i lane2 =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i ilo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i ihi = _mm512_add_epi32(ilo, _mm512_set1_epi32(8));
    const __m512i one = _mm512_set1_epi32(1), vw = _mm512_set1_epi32(w),
                  vw1 = _mm512_set1_epi32(w + 1), zero = _mm512_setzero_si512();
    for (int i = 0; i < oh; i++) {
        float *r0 = dx + (size_t)(2 * i) * w, *r1 = r0 + w;
        for (int j0 = 0; j0 < ow; j0 += 16) {
            int cnt = ow - j0 < 16 ? ow - j0 : 16, n2 = 2 * cnt;
            __mmask16 mlo = (__mmask16)(n2 >= 16 ? 0xFFFF : (1u << n2) - 1);
            __mmask16 mhi = (__mmask16)(n2 <= 16 ? 0 : (1u << (n2 - 16)) - 1);
            __mmask16 m = (__mmask16)(cnt == 16 ? 0xFFFF : (1u << cnt) - 1);
            __m512 g = _mm512_maskz_loadu_ps(m, dy + (size_t)i * ow + j0);
            __m512i d =
                _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, am + (size_t)i * ow + j0),
                                 _mm512_add_epi32(_mm512_set1_epi32(2 * i * w + 2 * j0), lane2));
            __m512 v0 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(d, zero), g);
            __m512 v1 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(d, one), g);
            __m512 v2 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(d, vw), g);
            __m512 v3 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(d, vw1), g);
            _mm512_mask_storeu_ps(r0 + 2 * j0, mlo, _mm512_permutex2var_ps(v0, ilo, v1));
            _mm512_mask_storeu_ps(r0 + 2 * j0 + 16, mhi, _mm512_permutex2var_ps(v0, ihi, v1));
            _mm512_mask_storeu_ps(r1 + 2 * j0, mlo, _mm512_permutex2var_ps(v2, ilo, v3));
            _mm512_mask_storeu_ps(r1 + 2 * j0 + 16, mhi, _mm512_permutex2var_ps(v2, ihi, v3));
        }
    }
}

#endif

/* 2x2 windows, the case the cnn uses: one pass, no inner window loops. */
VEC static void maxpool2_plane(const float *restrict x, int h, int w, float *restrict y,
                               int32_t *restrict am)
{
    int oh = h / 2, ow = w / 2;
    for (int i = 0; i < oh; i++) {
        const float *r0 = x + (size_t)(2 * i) * w, *r1 = r0 + w;
        float *yi = y + (size_t)i * ow;
        int32_t *ai = am + (size_t)i * ow;
        for (int j = 0; j < ow; j++) {
            int32_t base = 2 * i * w + 2 * j, bi = base;
            float best = r0[2 * j];
            if (r0[2 * j + 1] > best) best = r0[2 * j + 1], bi = base + 1;
            if (r1[2 * j] > best) best = r1[2 * j], bi = base + w;
            if (r1[2 * j + 1] > best) best = r1[2 * j + 1], bi = base + w + 1;
            yi[j] = best;
            ai[j] = bi;
        }
    }
}

/* dx of one plane for 2x2 windows: every input position written once (no memset). */
VEC static void maxpool2_plane_bw(const float *restrict dy, const int32_t *restrict am, int h,
                                  int w, float *restrict dx)
{
    int oh = h / 2, ow = w / 2;
    for (int i = 0; i < oh; i++) {
        float *r0 = dx + (size_t)(2 * i) * w, *r1 = r0 + w;
        const float *gi = dy + (size_t)i * ow;
        const int32_t *ai = am + (size_t)i * ow;
        for (int j = 0; j < ow; j++) {
            int32_t d = ai[j] - (2 * i * w + 2 * j);
            float g = gi[j];
            r0[2 * j] = d == 0 ? g : 0.0f;
            r0[2 * j + 1] = d == 1 ? g : 0.0f;
            r1[2 * j] = d == w ? g : 0.0f;
            r1[2 * j + 1] = d == w + 1 ? g : 0.0f;
        }
        if (w & 1) r0[w - 1] = r1[w - 1] = 0.0f;
    }
    if (h & 1)
        for (int q = 0; q < w; q++)
            dx[(size_t)(h - 1) * w + q] = 0.0f;
}

static void maxpool_fwd_range(void *ud, size_t lo, size_t hi)
{
    struct pool_job *j = ud;
    int oh = j->h / j->k, ow = j->w / j->k;
#if TRAIN_HAVE_X86
    if (j->k == 2 && j->avx512 && j->h % 2 == 0 && j->w % 2 == 0) {
        for (size_t pl = lo; pl < hi; pl++)
            maxpool2_plane_avx512(j->x + pl * (size_t)j->h * j->w, j->h, j->w,
                                  j->y + pl * (size_t)oh * ow, j->am + pl * (size_t)oh * ow);
        return;
    }
#endif
    if (j->k == 2) {
        for (size_t pl = lo; pl < hi; pl++)
            maxpool2_plane(j->x + pl * (size_t)j->h * j->w, j->h, j->w, j->y + pl * (size_t)oh * ow,
                           j->am + pl * (size_t)oh * ow);
        return;
    }
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

void train_cpu__maxpool_forward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                const float *x, float *y, int32_t *argmax)
{
    struct pool_job j = {
        .h = h, .w = w, .k = k, .avx512 = ctx->avx512, .x = x, .y = y, .am = argmax};
    train_cpu__par_range(ctx, (size_t)n * c, 64, maxpool_fwd_range, &j);
}

static void maxpool_bwd_range(void *ud, size_t lo, size_t hi)
{
    struct pool_job *j = ud;
    int oh = j->h / j->k, ow = j->w / j->k;
#if TRAIN_HAVE_X86
    if (j->k == 2 && j->avx512 && j->h % 2 == 0 && j->w % 2 == 0) {
        for (size_t pl = lo; pl < hi; pl++)
            maxpool2_plane_bw_avx512(j->dy + pl * (size_t)oh * ow, j->am_in + pl * (size_t)oh * ow,
                                     j->h, j->w, j->dx + pl * (size_t)j->h * j->w);
        return;
    }
#endif
    if (j->k == 2) {
        for (size_t pl = lo; pl < hi; pl++)
            maxpool2_plane_bw(j->dy + pl * (size_t)oh * ow, j->am_in + pl * (size_t)oh * ow, j->h,
                              j->w, j->dx + pl * (size_t)j->h * j->w);
        return;
    }
    for (size_t pl = lo; pl < hi; pl++) {
        float *dx = j->dx + pl * (size_t)j->h * j->w;
        const float *dy = j->dy + pl * (size_t)oh * ow;
        const int32_t *am = j->am_in + pl * (size_t)oh * ow;
        memset(dx, 0, sizeof(float) * (size_t)j->h * j->w);
        for (int i = 0; i < oh * ow; i++)
            dx[am[i]] += dy[i];
    }
}

void train_cpu__maxpool_backward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                 const float *dy, const int32_t *argmax, float *dx)
{
    struct pool_job j = {
        .h = h, .w = w, .k = k, .avx512 = ctx->avx512, .dy = dy, .dx = dx, .am_in = argmax};
    train_cpu__par_range(ctx, (size_t)n * c, 64, maxpool_bwd_range, &j);
}
