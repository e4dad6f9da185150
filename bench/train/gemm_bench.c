/* gemm_bench.c: GFLOP/s of tune-train's SGEMM (train/gemm.c) at the shapes the
 * trainer runs, side by side with OpenBLAS's cblas_sgemm when libopenblas can be loaded
 * (dlopen, so the trainer itself never depends on it). Built and run by run.sh:
 *   cc -O2 -I train bench/train/gemm_bench.c train/gemm.c train/pool.c
 * Not a test: it prints numbers and judges nothing. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm.h"

typedef void (*cblas_sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                               const float *a, int lda, const float *b, int ldb, float beta,
                               float *c, int ldc);
typedef void (*set_threads_fn)(int);

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct shape {
    const char *what;
    int m, n, k, ta, tb, threads;
};

/* Best of 5 runs of >= 0.1 s each: the machine is shared, the best is the least disturbed. */
static double gflops(void (*run)(void *, const struct shape *), void *ud, const struct shape *s)
{
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        int it = 0;
        double t0 = now(), t;
        do {
            run(ud, s);
            it++;
        } while ((t = now() - t0) < 0.1);
        double g = 2.0 * s->m * s->n * s->k * it / t * 1e-9;
        if (g > best) best = g;
    }
    return best;
}

static float *A, *B, *C;

struct ours {
    train__gemm_t *g[3];
};
static void run_ours(void *ud, const struct shape *s)
{
    struct ours *o = ud;
    train__gemm(o->g[s->threads], s->ta, s->tb, s->m, s->n, s->k, 1.0f, A, s->ta ? s->m : s->k, B,
                s->tb ? s->k : s->n, 0.0f, C, s->n);
}

struct blas {
    cblas_sgemm_fn sgemm;
    set_threads_fn set_threads;
};
static void run_blas(void *ud, const struct shape *s)
{
    struct blas *b = ud;
    b->set_threads(s->threads);
    /* CblasRowMajor 101, CblasNoTrans 111, CblasTrans 112 */
    b->sgemm(101, s->ta ? 112 : 111, s->tb ? 112 : 111, s->m, s->n, s->k, 1.0f, A,
             s->ta ? s->m : s->k, B, s->tb ? s->k : s->n, 0.0f, C, s->n);
}

int main(void)
{
    static const struct shape shapes[] = {
        {"mlp fc1 forward, batch 128", 128, 256, 784, 0, 1, 1},
        {"mlp fc1 forward, batch 128", 128, 256, 784, 0, 1, 2},
        {"mlp fc1 dW, batch 128", 256, 784, 128, 1, 0, 1},
        {"mlp fc1 dW, batch 128", 256, 784, 128, 1, 0, 2},
        {"mlp fc2 forward, batch 128", 128, 256, 256, 0, 1, 2},
        {"mlp fc2 dX, batch 128", 128, 256, 256, 0, 0, 2},
        {"mlp fc1 forward, batch 64 (2 ranks)", 64, 256, 784, 0, 1, 1},
        {"mlp fc1 dW, batch 64", 256, 784, 64, 1, 0, 1},
        {"mlp fc2 dX, batch 64", 64, 256, 256, 0, 0, 1},
        {"cnn conv1 forward, per sample", 32, 576, 25, 0, 0, 1},
        {"cnn conv2 forward, per sample", 64, 64, 800, 0, 0, 1},
        {"cnn conv2 dW, per sample", 64, 800, 64, 0, 1, 1},
        {"cnn conv2 dX (dcol), per sample", 800, 64, 64, 1, 0, 1},
        {"cnn fc1 forward, batch 64", 64, 128, 1024, 0, 1, 1},
        {"square 1024", 1024, 1024, 1024, 0, 0, 1},
        {"square 1024", 1024, 1024, 1024, 0, 0, 2},
    };
    A = aligned_alloc(64, 1024 * 1024 * 4);
    B = aligned_alloc(64, 1024 * 1024 * 4);
    C = aligned_alloc(64, 1024 * 1024 * 4);
    for (int i = 0; i < 1024 * 1024; i++)
        A[i] = (float)(i % 13) * 0.01f, B[i] = (float)(i % 7) * 0.01f, C[i] = 0;
    char err[256];
    struct ours o;
    train__pool_t *pools[3] = {0};
    for (int t = 1; t <= 2; t++)
        if (train__pool_new(&pools[t], t, err, sizeof err) != 0 ||
            train__gemm_new(&o.g[t], pools[t], NULL, err, sizeof err) != 0) {
            fprintf(stderr, "gemm_bench: %s\n", err);
            return 1;
        }
    struct blas b = {0};
    void *h = dlopen("libopenblas.so.0", RTLD_NOW);
    if (h) {
        b.sgemm = (cblas_sgemm_fn)dlsym(h, "cblas_sgemm");
        b.set_threads = (set_threads_fn)dlsym(h, "openblas_set_num_threads");
    }
    const char *core = getenv("OPENBLAS_CORETYPE");
    printf("tune-train GEMM kernel: %s; OpenBLAS: %s%s%s\n", train__gemm_isa(o.g[1]),
           b.sgemm ? "loaded" : "not found (install libopenblas0-openmp)",
           core ? ", OPENBLAS_CORETYPE=" : "", core ? core : "");
    printf("%-38s %16s %3s %8s %9s %6s\n", "shape", "m x n x k", "thr", "tune", "openblas",
           "ratio");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct shape *s = &shapes[i];
        double g1 = gflops(run_ours, &o, s), g2 = b.sgemm ? gflops(run_blas, &b, s) : 0;
        char dims[32];
        snprintf(dims, sizeof dims, "%dx%dx%d%s%s", s->m, s->n, s->k, s->ta ? "T" : "",
                 s->tb ? "t" : "");
        if (b.sgemm)
            printf("%-38s %16s %3d %8.1f %9.1f %6.2f\n", s->what, dims, s->threads, g1, g2,
                   g1 / g2);
        else
            printf("%-38s %16s %3d %8.1f %9s %6s\n", s->what, dims, s->threads, g1, "-", "-");
        fflush(stdout);
    }
    printf("(GFLOP/s, best of 5; T/t: A/B transposed; peak of the 2 cores ~370)\n");
    return 0;
}
