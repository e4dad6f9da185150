/* gemm.h: tune-train's single-precision matrix product (internal to train/).
 * A blocked, packed SGEMM in the BLIS/GotoBLAS shape (pack panels of A and B, an
 * MR x NR register micro-kernel) with AVX-512 and AVX2 kernels picked at run time and a
 * portable C fallback, threaded over a train__pool. Row-major like cblas_sgemm.
 * Not for: the layer logic (layers_cpu.c builds convolutions on top of the serial parts). */
#ifndef TUNE_TRAIN_GEMM_H
#define TUNE_TRAIN_GEMM_H

#include <stddef.h>

#include "pool.h"

/* The x86 paths (the AVX-512 and AVX2 kernels here, the AVX copies and AVX-512 pooling of
 * layers_cpu.c) are built on x86 with GCC-compatible compilers unless TUNE_PORTABLE is
 * defined (cmake -DTUNE_PORTABLE=ON); without them only the plain C path is built, the
 * one every architecture has and the reference the tuned paths are tested against. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && !defined(TUNE_PORTABLE)
#define TRAIN_HAVE_X86 1
#else
#define TRAIN_HAVE_X86 0
#endif

typedef struct train__gemm train__gemm_t;

/* Makes a GEMM context running on `pool` (borrowed; must outlive it). isa is NULL or ""
 * for the best the CPU supports, or one of "avx512", "avx2", "generic" (the plain C
 * kernel: tests and benchmarks compare them); asking for one the CPU lacks, or one this
 * build left out (TRAIN_HAVE_X86 0), is an error. Freed with
 * train__gemm_free (NULL-safe). */
int train__gemm_new(train__gemm_t **out, train__pool_t *pool, const char *isa, char *err,
                    size_t errlen);
void train__gemm_free(train__gemm_t *g);
const char *train__gemm_isa(const train__gemm_t *g); /* "avx512", "avx2" or "generic" */
train__pool_t *train__gemm_pool(const train__gemm_t *g);

/* C = alpha op(A) op(B) + beta C on all the pool's threads (see backend.h's gemm op).
 * Each element of C is summed in the same order whatever the thread count. */
void train__gemm(train__gemm_t *g, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);

/* ---- serial pieces, for ops that split work over threads themselves ------------- */
/* An operand of a serial product: a plain matrix (p, ld, trans as in cblas) or, when
 * `packed` is not NULL, a whole operand packed beforehand by train__gemm_pack. */
typedef struct train__gemm_opnd {
    const float *p;
    int ld;
    int trans;
    const float *packed;
} train__gemm_opnd_t;

/* Floats needed to pack a whole operand: side 'A' (op(A) is rows x k) or 'B'
 * (op(B) is k x rows, i.e. `rows` is n). */
size_t train__gemm_packed_floats(const train__gemm_t *g, int side, int rows, int k);
/* Packs a whole operand into dst (64-byte aligned, train__gemm_packed_floats long). */
void train__gemm_pack(const train__gemm_t *g, int side, int rows, int k, const float *src, int ld,
                      int trans, float *dst);

/* C = alpha op(A) op(B) + beta C on the calling thread, using workspace slot `tid`
 * (0 <= tid < pool threads; one caller per slot at a time). Returns 0, or -1 when a
 * workspace could not be allocated. */
int train__gemm_serial(train__gemm_t *g, int tid, int m, int n, int k, float alpha,
                       const train__gemm_opnd_t *a, const train__gemm_opnd_t *b, float beta,
                       float *c, int ldc);

#endif
