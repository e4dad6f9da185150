/* gemm.c: blocked, packed, vectorised SGEMM for tune-train's CPU backend (see gemm.h).
 * Structure follows BLIS (Van Zee & van de Geijn, "BLIS: A Framework for Rapidly
 * Instantiating BLAS Functionality", 2015): K is cut into blocks of at most KC_MAX, rows
 * into blocks of MC; panels of op(A) (MR rows, k-major) and op(B) (NR columns) are packed
 * contiguously and an MR x NR register micro-kernel sweeps them, B panel in L1, A block in
 * L2. Kernels: AVX-512 8x32, AVX2+FMA 6x16 (BLIS's haswell shape), portable C 4x16 (the
 * only one where TRAIN_HAVE_X86 is 0: other architectures, TUNE_PORTABLE builds).
 * Not for: choosing algorithms per layer (backend_cpu.c and layers_cpu.c do that). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"

#if TRAIN_HAVE_X86
#include <immintrin.h>
#endif

#define KC_MAX 384 /* a 32-wide B panel of KC_MAX rows is 48 KiB: about L1 */
#define MC 192     /* rows per A block: a multiple of every MR (8, 6, 4) */
#define NR_MAX 32
#define MR_MAX 8

/* as, bs: distance between consecutive k in a and b (MR and NR when packed; the leading
 * dimension when an operand is read in place) */
typedef void (*kern_fn)(int kc, const float *a, long as, const float *b, long bs, float *c,
                        long ldc, float alpha, float beta);

struct gemm_ws {
    float *ap; /* MC x KC_MAX packed A block */
    float *bp; /* packed B block for serial calls without a pre-packed B */
    size_t bp_cap;
};

struct train__gemm {
    train__pool_t *pool;
    int nt;
    const char *isa;
    int mr, nr;
    int avx; /* the 8x8 AVX transpose may be used while packing */
    kern_fn kern;
    struct gemm_ws *ws; /* one per thread */
    float *shared_bp;   /* whole packed B for threaded calls */
    size_t shared_cap;
};

/* ---- micro-kernels ------------------------------------------------------------- */
/* Each computes the full MR x NR tile acc = sum_p a[p][:] (x) b[p][:] and stores
 * C = alpha*acc + beta*C (C not read when beta == 0). */

static void kern_generic_4x16(int kc, const float *a, long as, const float *b, long bs, float *c,
                              long ldc, float alpha, float beta)
{
    float acc[4][16] = {{0}};
    for (int p = 0; p < kc; p++) {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 16; j++)
                acc[i][j] += a[i] * b[j];
        a += as;
        b += bs;
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 16; j++)
            c[i * ldc + j] =
                beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * c[i * ldc + j];
}

#if TRAIN_HAVE_X86
__attribute__((target("avx2,fma"))) static void kern_avx2_6x16(int kc, const float *a, long as,
                                                               const float *b, long bs, float *c,
                                                               long ldc, float alpha, float beta)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
           c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int p = 0; p < kc; p++) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8), t;
#define K6(i)                                                                                      \
    t = _mm256_broadcast_ss(a + i);                                                                \
    c##i##0 = _mm256_fmadd_ps(t, b0, c##i##0);                                                     \
    c##i##1 = _mm256_fmadd_ps(t, b1, c##i##1);
        /* the unrolled rows: the formatter misreads macro calls without a semicolon,
         * splits this line and indents the statement after it one level too deep */
        /* clang-format off */
        K6(0) K6(1) K6(2) K6(3) K6(4) K6(5)
#undef K6
        a += as;
        /* clang-format on */
        b += bs;
    }
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#define S6(i)                                                                                      \
    if (beta == 0.0f) {                                                                            \
        _mm256_storeu_ps(c + i * ldc, _mm256_mul_ps(va, c##i##0));                                 \
        _mm256_storeu_ps(c + i * ldc + 8, _mm256_mul_ps(va, c##i##1));                             \
    } else {                                                                                       \
        _mm256_storeu_ps(c + i * ldc, _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + i * ldc),            \
                                                      _mm256_mul_ps(va, c##i##0)));                \
        _mm256_storeu_ps(c + i * ldc + 8, _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + i * ldc + 8),    \
                                                          _mm256_mul_ps(va, c##i##1)));            \
    }
    S6(0) S6(1) S6(2) S6(3) S6(4) S6(5)
#undef S6
}

__attribute__((target("avx512f"))) static void kern_avx512_8x32(int kc, const float *a, long as,
                                                                const float *b, long bs, float *c,
                                                                long ldc, float alpha, float beta)
{
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
           c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00,
           c70 = c00, c71 = c00;
    for (int p = 0; p < kc; p++) {
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), t;
#define K8(i)                                                                                      \
    t = _mm512_set1_ps(a[i]);                                                                      \
    c##i##0 = _mm512_fmadd_ps(t, b0, c##i##0);                                                     \
    c##i##1 = _mm512_fmadd_ps(t, b1, c##i##1);
        /* the unrolled rows: the formatter misreads macro calls without a semicolon,
         * splits this line and indents the statement after it one level too deep */
        /* clang-format off */
        K8(0) K8(1) K8(2) K8(3) K8(4) K8(5) K8(6) K8(7)
#undef K8
        a += as;
        /* clang-format on */
        b += bs;
    }
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#define S8(i)                                                                                      \
    if (beta == 0.0f) {                                                                            \
        _mm512_storeu_ps(c + i * ldc, _mm512_mul_ps(va, c##i##0));                                 \
        _mm512_storeu_ps(c + i * ldc + 16, _mm512_mul_ps(va, c##i##1));                            \
    } else {                                                                                       \
        _mm512_storeu_ps(c + i * ldc, _mm512_fmadd_ps(vb, _mm512_loadu_ps(c + i * ldc),            \
                                                      _mm512_mul_ps(va, c##i##0)));                \
        _mm512_storeu_ps(c + i * ldc + 16, _mm512_fmadd_ps(vb, _mm512_loadu_ps(c + i * ldc + 16),  \
                                                           _mm512_mul_ps(va, c##i##1)));           \
    }
    S8(0) S8(1) S8(2) S8(3) S8(4) S8(5) S8(6) S8(7)
#undef S8
}

#endif /* TRAIN_HAVE_X86 */

/* ---- packing --------------------------------------------------------------------- */

#if TRAIN_HAVE_X86
/* d[q*ldd + r] = s[r*ld + q] for an 8 x 8 block (the classic unpack/shuffle/permute). */
__attribute__((target("avx"))) static void tr8x8(const float *s, long ld, float *d, long ldd)
{
    __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ld), r2 = _mm256_loadu_ps(s + 2 * ld),
           r3 = _mm256_loadu_ps(s + 3 * ld), r4 = _mm256_loadu_ps(s + 4 * ld),
           r5 = _mm256_loadu_ps(s + 5 * ld), r6 = _mm256_loadu_ps(s + 6 * ld),
           r7 = _mm256_loadu_ps(s + 7 * ld);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1),
           t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3),
           t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
           t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
           u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
           u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
           u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(d + ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(d + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(d + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(d + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(d + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(d + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(d + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
}

#endif

/* One panel: dst[p*R + i] = X(i, p) for i < rows, p < kc, zero for rows <= i < R.
 * contig_i: X(i,p) = src[p*ld + i]; otherwise X(i,p) = src[i*ld + p] (a transpose). */
static void pack_panel(const train__gemm_t *g, int R, int rows, int kc, const float *src, long ld,
                       int contig_i, float *dst)
{
    if (contig_i && rows == R && (R == 8 || R == 32 || R == 16)) {
        /* constant-size copies, which the compiler turns into vector moves */
        for (int p = 0; p < kc; p++) {
            const float *s = src + (long)p * ld;
            float *d = dst + (long)p * R;
            if (R == 8)
                for (int i = 0; i < 8; i++)
                    d[i] = s[i];
            else if (R == 16)
                for (int i = 0; i < 16; i++)
                    d[i] = s[i];
            else
                for (int i = 0; i < 32; i++)
                    d[i] = s[i];
        }
        return;
    }
    if (contig_i) {
        for (int p = 0; p < kc; p++) {
            const float *s = src + (long)p * ld;
            float *d = dst + (long)p * R;
            int i = 0;
            for (; i < rows; i++)
                d[i] = s[i];
            for (; i < R; i++)
                d[i] = 0.0f;
        }
        return;
    }
    int p = 0;
#if TRAIN_HAVE_X86
    if (g->avx && rows == R && (R % 8) == 0) {
        for (; p + 8 <= kc; p += 8)
            for (int i = 0; i < R; i += 8)
                tr8x8(src + (long)i * ld + p, ld, dst + (long)p * R + i, R);
    }
#else
    (void)g;
#endif
    for (int i = 0; i < R; i++) {
        const float *s = src + (long)i * ld;
        if (i < rows)
            for (int q = p; q < kc; q++)
                dst[(long)q * R + i] = s[q];
        else
            for (int q = p; q < kc; q++)
                dst[(long)q * R + i] = 0.0f;
    }
}

/* Is X(i,p) contiguous in i for this side/trans? (A: op(A)[i][p]; B: X(j,p) = op(B)[p][j]) */
static int contig_i_of(int side, int trans)
{
    return side == 'A' ? trans : !trans;
}

/* Address of X(i0, p0) in the source. */
static const float *src_at(const float *src, long ld, int contig_i, int i0, int p0)
{
    return contig_i ? src + (long)p0 * ld + i0 : src + (long)i0 * ld + p0;
}

static void kblocks(int k, int *kcb, int *nb)
{
    *nb = (k + KC_MAX - 1) / KC_MAX;
    *kcb = *nb ? (k + *nb - 1) / *nb : 0;
}

static int rup(int x, int r)
{
    return (x + r - 1) / r * r;
}

size_t train__gemm_packed_floats(const train__gemm_t *g, int side, int rows, int k)
{
    int R = side == 'A' ? g->mr : g->nr;
    return (size_t)rup(rows, R) * (size_t)k;
}

/* Packs panels [q_lo, q_hi) of every K block of a whole operand (layout: block pc at
 * pc*kcb*rows_pad, panel q of it at q*kc*R). */
static void pack_whole(const train__gemm_t *g, int side, int rows, int k, const float *src, int ld,
                       int trans, float *dst, int q_lo, int q_hi)
{
    int R = side == 'A' ? g->mr : g->nr, kcb, nb, ci = contig_i_of(side, trans);
    kblocks(k, &kcb, &nb);
    long rows_pad = rup(rows, R);
    for (int pc = 0; pc < nb; pc++) {
        int p0 = pc * kcb, kc = k - p0 < kcb ? k - p0 : kcb;
        float *blk = dst + (long)p0 * rows_pad;
        for (int q = q_lo; q < q_hi; q++) {
            int i0 = q * R, nrow = rows - i0 < R ? rows - i0 : R;
            pack_panel(g, R, nrow, kc, src_at(src, ld, ci, i0, p0), ld, ci, blk + (long)q * kc * R);
        }
    }
}

void train__gemm_pack(const train__gemm_t *g, int side, int rows, int k, const float *src, int ld,
                      int trans, float *dst)
{
    int R = side == 'A' ? g->mr : g->nr;
    pack_whole(g, side, rows, k, src, ld, trans, dst, 0, (rows + R - 1) / R);
}

/* ---- the macro loop -------------------------------------------------------------- */

static void *alloc_floats(size_t n)
{
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* C rows [i_lo, i_hi) (i_lo a multiple of MR) x column panels [j_lo, j_hi). */
static int core(train__gemm_t *g, int tid, int m, int n, int k, float alpha,
                const train__gemm_opnd_t *a, const train__gemm_opnd_t *b, float beta, float *c,
                int ldc, int i_lo, int i_hi, int j_lo, int j_hi)
{
    const int MR = g->mr, NR = g->nr;
    struct gemm_ws *ws = &g->ws[tid];
    int kcb, nb;
    kblocks(k, &kcb, &nb);
    if (nb == 0) { /* k == 0: C = beta C */
        for (int i = i_lo; i < i_hi; i++)
            for (int j = j_lo * NR; j < n && j < j_hi * NR; j++)
                c[(long)i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[(long)i * ldc + j];
        return 0;
    }
    if (!b->packed) {
        size_t need = (size_t)kcb * (size_t)(j_hi - j_lo) * NR;
        if (need > ws->bp_cap) {
            free(ws->bp);
            ws->bp = alloc_floats(need);
            ws->bp_cap = ws->bp ? need : 0;
            if (!ws->bp) return -1;
        }
    }
    long m_pad = rup(m, MR), n_pad = rup(n, NR);
    float tmp[MR_MAX * NR_MAX] __attribute__((aligned(64)));
    int bci = contig_i_of('B', b->trans), aci = contig_i_of('A', a->trans);
    for (int pc = 0; pc < nb; pc++) {
        int p0 = pc * kcb, kc = k - p0 < kcb ? k - p0 : kcb;
        float beta_eff = pc == 0 ? beta : 1.0f;
        const float *bblk; /* panel j_lo of this K block; panels kc*NR apart */
        if (b->packed) {
            bblk = b->packed + (long)p0 * n_pad + (long)j_lo * kc * NR;
        } else {
            /* op(B) stored row-major (contiguous along n): full panels are read in place
             * by the kernel (NR consecutive floats per k), only a ragged edge is packed */
            for (int q = j_lo; q < j_hi; q++) {
                int j0 = q * NR, ncol = n - j0 < NR ? n - j0 : NR;
                if (bci && ncol == NR) continue;
                pack_panel(g, NR, ncol, kc, src_at(b->p, b->ld, bci, j0, p0), b->ld, bci,
                           ws->bp + (long)(q - j_lo) * kc * NR);
            }
            bblk = ws->bp;
        }
        for (int i0 = i_lo; i0 < i_hi; i0 += MC) {
            int mc = i_hi - i0 < MC ? i_hi - i0 : MC;
            const float *ablk;
            /* op(A) stored k-major and few B panels to sweep: read A in place (full
             * panels only) instead of copying it once per call */
            int direct = !a->packed && aci && j_hi - j_lo <= 4;
            if (direct) {
                ablk = NULL;
                for (int q = 0; q * MR < mc; q++) {
                    int r0 = i0 + q * MR;
                    if (i_hi - r0 < MR)
                        pack_panel(g, MR, i_hi - r0, kc, src_at(a->p, a->ld, aci, r0, p0), a->ld,
                                   aci, ws->ap + (long)q * kc * MR);
                }
            } else if (a->packed) {
                ablk = a->packed + (long)p0 * m_pad + (long)(i0 / MR) * kc * MR;
            } else {
                for (int q = 0; q * MR < mc; q++) {
                    int r0 = i0 + q * MR, nrow = i_hi - r0 < MR ? i_hi - r0 : MR;
                    pack_panel(g, MR, nrow, kc, src_at(a->p, a->ld, aci, r0, p0), a->ld, aci,
                               ws->ap + (long)q * kc * MR);
                }
                ablk = ws->ap;
            }
            for (int q = j_lo; q < j_hi; q++) {
                int j0 = q * NR, ncol = n - j0 < NR ? n - j0 : NR;
                const float *bpan = bblk + (long)(q - j_lo) * kc * NR;
                long bs = NR;
                if (!b->packed && bci && ncol == NR) {
                    bpan = src_at(b->p, b->ld, bci, j0, p0);
                    bs = b->ld;
                }
                for (int r = 0; r * MR < mc; r++) {
                    int i = i0 + r * MR, nrow = i_hi - i < MR ? i_hi - i : MR;
                    const float *apan;
                    long as = MR;
                    if (!direct) {
                        apan = ablk + (long)r * kc * MR;
                    } else if (nrow == MR) {
                        apan = src_at(a->p, a->ld, aci, i, p0);
                        as = a->ld;
                    } else {
                        apan = ws->ap + (long)r * kc * MR;
                    }
                    float *cc = c + (long)i * ldc + j0;
                    if (nrow == MR && ncol == NR) {
                        g->kern(kc, apan, as, bpan, bs, cc, ldc, alpha, beta_eff);
                    } else {
                        g->kern(kc, apan, as, bpan, bs, tmp, NR, 1.0f, 0.0f);
                        for (int x = 0; x < nrow; x++)
                            for (int y = 0; y < ncol; y++)
                                cc[(long)x * ldc + y] = beta_eff == 0.0f
                                                            ? alpha * tmp[x * NR + y]
                                                            : alpha * tmp[x * NR + y] +
                                                                  beta_eff * cc[(long)x * ldc + y];
                    }
                }
            }
        }
    }
    return 0;
}

int train__gemm_serial(train__gemm_t *g, int tid, int m, int n, int k, float alpha,
                       const train__gemm_opnd_t *a, const train__gemm_opnd_t *b, float beta,
                       float *c, int ldc)
{
    if (m <= 0 || n <= 0) return 0;
    return core(g, tid, m, n, k, alpha, a, b, beta, c, ldc, 0, m, 0, (n + g->nr - 1) / g->nr);
}

struct job {
    train__gemm_t *g;
    int m, n, k, ldc;
    float alpha, beta;
    train__gemm_opnd_t a, b;
    float *c;
    _Atomic int failed;
};

static void job_fn(void *ud, int tid, int nt)
{
    struct job *jb = ud;
    train__gemm_t *g = jb->g;
    int np = (jb->n + g->nr - 1) / g->nr, mp = (jb->m + g->mr - 1) / g->mr;
    /* every thread packs its share of B's panels, then all use the whole packed B */
    pack_whole(g, 'B', jb->n, jb->k, jb->b.p, jb->b.ld, jb->b.trans, g->shared_bp, np * tid / nt,
               np * (tid + 1) / nt);
    train__pool_barrier(g->pool);
    train__gemm_opnd_t b = {.packed = g->shared_bp};
    int rc;
    if (mp >= nt || np == 1) {
        int lo = mp * tid / nt, hi = mp * (tid + 1) / nt;
        if (lo == hi) return;
        int i_hi = hi * g->mr < jb->m ? hi * g->mr : jb->m;
        rc = core(g, tid, jb->m, jb->n, jb->k, jb->alpha, &jb->a, &b, jb->beta, jb->c, jb->ldc,
                  lo * g->mr, i_hi, 0, np);
    } else {
        int lo = np * tid / nt, hi = np * (tid + 1) / nt;
        if (lo == hi) return;
        rc = core(g, tid, jb->m, jb->n, jb->k, jb->alpha, &jb->a, &b, jb->beta, jb->c, jb->ldc, 0,
                  jb->m, lo, hi);
    }
    if (rc) jb->failed = 1;
}

void train__gemm(train__gemm_t *g, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    train__gemm_opnd_t oa = {.p = a, .ld = lda, .trans = trans_a};
    train__gemm_opnd_t ob = {.p = b, .ld = ldb, .trans = trans_b};
    /* small products are not worth waking the workers */
    if (g->nt == 1 || (double)m * n * k < 32768.0 || k == 0) {
        core(g, 0, m, n, k, alpha, &oa, &ob, beta, c, ldc, 0, m, 0, (n + g->nr - 1) / g->nr);
        return;
    }
    size_t need = train__gemm_packed_floats(g, 'B', n, k);
    if (need > g->shared_cap) {
        free(g->shared_bp);
        g->shared_bp = alloc_floats(need);
        g->shared_cap = g->shared_bp ? need : 0;
        if (!g->shared_bp) { /* fall back to one thread, which packs in small blocks */
            core(g, 0, m, n, k, alpha, &oa, &ob, beta, c, ldc, 0, m, 0, (n + g->nr - 1) / g->nr);
            return;
        }
    }
    struct job jb = {.g = g,
                     .m = m,
                     .n = n,
                     .k = k,
                     .ldc = ldc,
                     .alpha = alpha,
                     .beta = beta,
                     .a = oa,
                     .b = ob,
                     .c = c};
    train__pool_run(g->pool, job_fn, &jb);
}

/* ---- lifetime ------------------------------------------------------------------- */

int train__gemm_new(train__gemm_t **out, train__pool_t *pool, const char *isa, char *err,
                    size_t errlen)
{
#if TRAIN_HAVE_X86
    __builtin_cpu_init();
    int has512 = __builtin_cpu_supports("avx512f");
    int has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    int has512 = 0, has2 = 0;
#endif
    if (!isa || !*isa) isa = has512 ? "avx512" : has2 ? "avx2" : "generic";
    train__gemm_t *g = calloc(1, sizeof *g);
    if (!g) goto oom;
    g->pool = pool;
    g->nt = train__pool_threads(pool);
    if (strcmp(isa, "generic") == 0) {
        g->isa = "generic", g->mr = 4, g->nr = 16, g->kern = kern_generic_4x16, g->avx = 0;
#if TRAIN_HAVE_X86
    } else if (strcmp(isa, "avx512") == 0 && has512) {
        g->isa = "avx512", g->mr = 8, g->nr = 32, g->kern = kern_avx512_8x32, g->avx = 1;
    } else if (strcmp(isa, "avx2") == 0 && has2) {
        g->isa = "avx2", g->mr = 6, g->nr = 16, g->kern = kern_avx2_6x16, g->avx = 1;
#endif
    } else {
        snprintf(err, errlen, "GEMM kernel \"%s\" is not available on this CPU%s", isa,
                 TRAIN_HAVE_X86 ? ""
                                : " (this build has only \"generic\": TUNE_PORTABLE or not x86)");
        free(g);
        return -1;
    }
    g->ws = calloc((size_t)g->nt, sizeof *g->ws);
    if (!g->ws) goto oom;
    for (int t = 0; t < g->nt; t++) {
        g->ws[t].ap = alloc_floats((size_t)MC * KC_MAX);
        if (!g->ws[t].ap) goto oom;
    }
    *out = g;
    return 0;
oom:
    snprintf(err, errlen, "out of memory for GEMM workspaces");
    train__gemm_free(g);
    return -1;
}

void train__gemm_free(train__gemm_t *g)
{
    if (!g) return;
    if (g->ws)
        for (int t = 0; t < g->nt; t++) {
            free(g->ws[t].ap);
            free(g->ws[t].bp);
        }
    free(g->ws);
    free(g->shared_bp);
    free(g);
}

const char *train__gemm_isa(const train__gemm_t *g)
{
    return g->isa;
}

train__pool_t *train__gemm_pool(const train__gemm_t *g)
{
    return g->pool;
}
