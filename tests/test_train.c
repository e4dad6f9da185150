/* test_train.c: tests of tune-train (train/): the GEMM against a double-precision
 * reference, every layer's gradient against finite differences, the shared-memory world,
 * checkpoints, data loading and option errors, and end-to-end runs of the real binary
 * (N ranks equal one rank, resume equals no interruption, a killed rank stops the run).
 * Not for: benchmarks (bench/train/). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "e2e.h"
#include "tinytest.h"
#include "trial/trial.h"
#include "train/backend.h"
#include "train/gemm.h"
#include "train/train.h"
#include "train/train_int.h"

/* ---- helpers ------------------------------------------------------------------------- */

static float frand(uint64_t *s) /* U(-1, 1) */
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*s >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb, (void)flag, (void)f;
    return remove(p);
}

static void rm_rf(const char *dir)
{
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static char *tmpdir(void)
{
    char *d = strdup("/tmp/tune-test-train.XXXXXX");
    return mkdtemp(d) ? d : NULL;
}

static const char *train_bin(void)
{
    static char path[8192];
    const char *b = getenv("TUNE_BINARY_DIR");
    if (b) {
        snprintf(path, sizeof path, "%s/bin/tune-train", b);
        return path;
    }
    /* run by hand: this executable is <build>/tests/test_train */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(path, sizeof path, "%s/../bin/tune-train", self);
    return path;
}

/* Starts tune-train with argv (NULL-terminated, without argv[0]) in its own process
 * group, stdout/stderr to files, env (NAME, VALUE pairs) set; returns the pid. */
static pid_t spawn_train(const char *const *args, const char *out, const char *errf,
                         const char *const *env)
{
    /* truncate here, not in the child: callers poll these files right after */
    close(open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    close(open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644));
    const char *argv[64];
    int n = 0;
    argv[n++] = train_bin();
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    struct how h = {.env_pairs = env};
    return e2e_spawn_to(NULL, argv, out, errf, &h);
}

/* Waits up to timeout seconds; returns the wait status, or -1 on timeout (then kills). */
static int wait_for(pid_t pid, double timeout)
{
    double t0 = e2e_mono();
    int st;
    for (;;) {
        pid_t p = waitpid(pid, &st, WNOHANG);
        if (p == pid) return st;
        if (e2e_mono() - t0 > timeout) {
            kill(-pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        usleep(5000);
    }
}

/* Runs tune-train to completion; returns its exit code (128+sig if killed, -1 timeout). */
static int run_train(const char *const *args, const char *out, const char *errf,
                     const char *const *env, double timeout)
{
    int st = wait_for(spawn_train(args, out, errf, env), timeout);
    if (st < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- a small synthetic Fashion-MNIST in IDX format -------------------------------------- */

static int write_idx(const char *path, uint32_t magic, const uint32_t *dims, int nd,
                     const uint8_t *data, size_t len, int gz)
{
    unsigned char hdr[16];
    uint32_t v[4] = {magic, dims[0], nd > 1 ? dims[1] : 0, nd > 2 ? dims[2] : 0};
    for (int i = 0; i < 1 + nd; i++) {
        hdr[4 * i] = (unsigned char)(v[i] >> 24);
        hdr[4 * i + 1] = (unsigned char)(v[i] >> 16);
        hdr[4 * i + 2] = (unsigned char)(v[i] >> 8);
        hdr[4 * i + 3] = (unsigned char)v[i];
    }
    size_t hl = 4 * (size_t)(1 + nd);
    if (gz) {
        gzFile f = gzopen(path, "wb1");
        if (!f) return -1;
        gzwrite(f, hdr, (unsigned)hl);
        if (len) gzwrite(f, data, (unsigned)len);
        return gzclose(f) == Z_OK ? 0 : -1;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(hdr, 1, hl, f);
    fwrite(data, 1, len, f);
    return fclose(f);
}

/* Class k is a bright horizontal band at rows 2k+3..2k+6 plus noise: learnable in a few
 * steps, so end-to-end tests train something real in milliseconds. */
static int make_dataset(const char *dir, int ntrain, int ntest)
{
    uint64_t s = 42;
    for (int part = 0; part < 2; part++) {
        int n = part == 0 ? ntrain : ntest;
        uint8_t *img = malloc((size_t)n * 784), *lab = malloc((size_t)n);
        for (int i = 0; i < n; i++) {
            int k = (int)((frand(&s) + 1.0f) * 5.0f);
            if (k > 9) k = 9;
            lab[i] = (uint8_t)k;
            for (int p = 0; p < 784; p++) {
                int r = p / 28, base = (r >= 2 * k + 3 && r < 2 * k + 7) ? 180 : 20;
                img[(size_t)i * 784 + p] = (uint8_t)(base + (int)((frand(&s) + 1.0f) * 30.0f));
            }
        }
        char p1[4096], p2[4096];
        uint32_t di[3] = {(uint32_t)n, 28, 28}, dl[1] = {(uint32_t)n};
        snprintf(p1, sizeof p1, "%s/%s-images-idx3-ubyte.gz", dir, part == 0 ? "train" : "t10k");
        snprintf(p2, sizeof p2, "%s/%s-labels-idx1-ubyte.gz", dir, part == 0 ? "train" : "t10k");
        int rc = write_idx(p1, 0x803, di, 3, img, (size_t)n * 784, 1) |
                 write_idx(p2, 0x801, dl, 1, lab, (size_t)n, 1);
        free(img);
        free(lab);
        if (rc) return -1;
    }
    return 0;
}

/* ---- GEMM ------------------------------------------------------------------------------- */

static void ref_gemm(int ta, int tb, int m, int n, int k, float al, const float *A, int lda,
                     const float *B, int ldb, float be, float *C, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += (double)(ta ? A[p * lda + i] : A[i * lda + p]) *
                     (tb ? B[j * ldb + p] : B[p * ldb + j]);
            C[i * ldc + j] = be == 0 ? (float)(al * s) : (float)(al * s + be * C[i * ldc + j]);
        }
}

/* Every kernel the CPU has, 1 and 3 threads, all transposes, odd shapes and edge tiles,
 * alpha/beta, against a double reference with a tolerance that grows with sqrt(k). */
TEST(gemm_matches_reference)
{
    static const char *isas[] = {"avx512", "avx2", "generic"};
    static const int shapes[][3] = {{1, 1, 1},     {7, 5, 3},      {13, 37, 29}, {64, 256, 100},
                                    {10, 33, 800}, {129, 65, 400}, {8, 32, 0},   {200, 10, 9}};
    uint64_t s = 1;
    int tried = 0;
    for (int t = 1; t <= 3; t += 2) {
        char err[256];
        train__pool_t *pool;
        REQUIRE(train__pool_new(&pool, t, err, sizeof err) == 0);
        for (int is = 0; is < 3; is++) {
            train__gemm_t *g;
            if (train__gemm_new(&g, pool, isas[is], err, sizeof err) != 0) {
                CHECK_CONTAINS(err, "not available");
                continue;
            }
            tried++;
            for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
                for (int ta = 0; ta < 2; ta++)
                    for (int tb = 0; tb < 2; tb++) {
                        int m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
                        int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
                        size_t na = (size_t)(ta ? k : m) * lda + 1,
                               nb = (size_t)(tb ? n : k) * ldb + 1;
                        float *A = malloc(na * 4), *B = malloc(nb * 4),
                              *C = malloc((size_t)m * ldc * 4), *R = malloc((size_t)m * ldc * 4);
                        for (size_t i = 0; i < na; i++)
                            A[i] = frand(&s);
                        for (size_t i = 0; i < nb; i++)
                            B[i] = frand(&s);
                        for (int i = 0; i < m * ldc; i++)
                            C[i] = R[i] = frand(&s);
                        float beta = (sh & 1) ? 0.0f : 0.5f;
                        train__gemm(g, ta, tb, m, n, k, 0.75f, A, lda, B, ldb, beta, C, ldc);
                        ref_gemm(ta, tb, m, n, k, 0.75f, A, lda, B, ldb, beta, R, ldc);
                        double md = 0;
                        for (int i = 0; i < m; i++)
                            for (int j = 0; j < n; j++)
                                md = fmax(md, fabs(C[i * ldc + j] - R[i * ldc + j]));
                        if (!(md <= 2e-6 * (sqrt((double)k) + 1) * 4)) {
                            fprintf(stderr, "%s t=%d %dx%dx%d ta=%d tb=%d: max diff %g\n", isas[is],
                                    t, m, n, k, ta, tb, md);
                            CHECK(0);
                        }
                        free(A), free(B), free(C), free(R);
                    }
            train__gemm_free(g);
        }
        train__pool_free(pool);
    }
    CHECK(tried >= 2); /* generic always, plus what the CPU has */
}

/* Pre-packed operands (what the convolutions use) give the same bits as plain ones. */
TEST(gemm_prepacked_equals_plain)
{
    char err[256];
    train__pool_t *pool;
    train__gemm_t *g;
    REQUIRE(train__pool_new(&pool, 1, err, sizeof err) == 0);
    REQUIRE(train__gemm_new(&g, pool, NULL, err, sizeof err) == 0);
    int m = 70, n = 45, k = 500;
    uint64_t s = 5;
    float *A = malloc(sizeof(float) * m * k), *B = malloc(sizeof(float) * k * n),
          *C1 = calloc((size_t)m * n, 4), *C2 = calloc((size_t)m * n, 4);
    for (int i = 0; i < m * k; i++)
        A[i] = frand(&s);
    for (int i = 0; i < k * n; i++)
        B[i] = frand(&s);
    float *pa = aligned_alloc(64, (train__gemm_packed_floats(g, 'A', m, k) * 4 + 63) / 64 * 64);
    float *pb = aligned_alloc(64, (train__gemm_packed_floats(g, 'B', n, k) * 4 + 63) / 64 * 64);
    train__gemm_pack(g, 'A', m, k, A, k, 0, pa);
    train__gemm_pack(g, 'B', n, k, B, n, 0, pb);
    train__gemm_opnd_t a = {.p = A, .ld = k}, b = {.p = B, .ld = n};
    train__gemm_opnd_t ap = {.packed = pa}, bp = {.packed = pb};
    CHECK(train__gemm_serial(g, 0, m, n, k, 1.0f, &a, &b, 0.0f, C1, n) == 0);
    CHECK(train__gemm_serial(g, 0, m, n, k, 1.0f, &ap, &bp, 0.0f, C2, n) == 0);
    CHECK(memcmp(C1, C2, sizeof(float) * m * n) == 0);
    free(A), free(B), free(C1), free(C2), free(pa), free(pb);
    train__gemm_free(g);
    train__pool_free(pool);
}

/* ---- gradient checks against central finite differences ---------------------------------- */

static train_be_ctx_t *cpu(int threads)
{
    train_be_opts_t o = {.threads = threads, .rank = 0, .world = 1};
    train_be_ctx_t *c = NULL;
    char err[256];
    if (train_be_cpu.open(&o, &c, err, sizeof err) != 0) fprintf(stderr, "%s\n", err);
    return c;
}

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* Compares an analytic gradient with (L(p+e) - L(p-e)) / 2e for every entry of p. */
typedef double (*loss_fn)(void *ud);
static int fd_check(const char *what, float *p, const float *grad, size_t n, loss_fn L, void *ud,
                    float eps, double atol, double rtol)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        float keep = p[i];
        p[i] = keep + eps;
        double lp = L(ud);
        p[i] = keep - eps;
        double lm = L(ud);
        p[i] = keep;
        double fd = (lp - lm) / (2.0 * eps);
        if (fabs(fd - grad[i]) > atol + rtol * fabs(fd)) {
            if (bad++ < 5)
                fprintf(stderr, "%s[%zu]: analytic %.6g, finite difference %.6g\n", what, i,
                        grad[i], fd);
        }
    }
    return bad;
}

struct lin {
    train_be_ctx_t *c;
    int n, in, out;
    float *x, *w, *b, *y, *r;
};
static double lin_loss(void *ud)
{
    struct lin *l = ud;
    train_be_cpu.gemm(l->c, 0, 1, l->n, l->out, l->in, 1.0f, l->x, l->in, l->w, l->in, 0.0f, l->y,
                      l->out);
    train_be_cpu.bias_act(l->c, l->y, l->b, l->n, l->out, TRAIN_BE_ACT_NONE);
    return dot(l->y, l->r, (size_t)l->n * l->out);
}

/* Linear: y = x W^T + b, L = sum(r * y); the backward is the model's three ops. */
TEST(grad_linear)
{
    struct lin l = {.c = cpu(2), .n = 5, .in = 13, .out = 7};
    REQUIRE(l.c);
    uint64_t s = 3;
    size_t nx = (size_t)l.n * l.in, nw = (size_t)l.out * l.in, ny = (size_t)l.n * l.out;
    l.x = malloc(nx * 4), l.w = malloc(nw * 4), l.b = malloc((size_t)l.out * 4),
    l.y = malloc(ny * 4), l.r = malloc(ny * 4);
    float *dx = malloc(nx * 4), *dw = malloc(nw * 4), *db = malloc((size_t)l.out * 4);
    for (size_t i = 0; i < nx; i++)
        l.x[i] = frand(&s);
    for (size_t i = 0; i < nw; i++)
        l.w[i] = frand(&s);
    for (int i = 0; i < l.out; i++)
        l.b[i] = frand(&s);
    for (size_t i = 0; i < ny; i++)
        l.r[i] = frand(&s);
    const train_be_ops_t *o = &train_be_cpu;
    o->gemm(l.c, 1, 0, l.out, l.in, l.n, 1.0f, l.r, l.out, l.x, l.in, 0.0f, dw, l.in);
    o->sum_rows(l.c, l.r, l.n, l.out, db);
    o->gemm(l.c, 0, 0, l.n, l.in, l.out, 1.0f, l.r, l.out, l.w, l.in, 0.0f, dx, l.in);
    CHECK_EQ_INT(fd_check("dW", l.w, dw, nw, lin_loss, &l, 1e-2f, 1e-3, 1e-3), 0);
    CHECK_EQ_INT(fd_check("db", l.b, db, (size_t)l.out, lin_loss, &l, 1e-2f, 1e-3, 1e-3), 0);
    CHECK_EQ_INT(fd_check("dx", l.x, dx, nx, lin_loss, &l, 1e-2f, 1e-3, 1e-3), 0);
    free(l.x), free(l.w), free(l.b), free(l.y), free(l.r), free(dx), free(dw), free(db);
    train_be_cpu.close(l.c);
}

struct cv {
    train_be_ctx_t *c;
    train_be_conv_t *plan;
    train_be_conv_shape_t sh;
    int n;
    float *x, *w, *b, *y, *r;
};
static double conv_loss(void *ud)
{
    struct cv *v = ud;
    train_be_cpu.conv_forward(v->c, v->plan, v->n, v->x, v->w, v->b, v->y, TRAIN_BE_ACT_NONE);
    return dot(v->y, v->r, (size_t)v->n * v->sh.k * v->sh.oh * v->sh.ow);
}

/* Direct convolution in double, the definition the op must meet. */
static double conv_direct(const train_be_conv_shape_t *s, const float *x, const float *w,
                          const float *b, int n, int k, int oh, int ow)
{
    double acc = b[k];
    for (int c = 0; c < s->c; c++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) {
                int ih = oh * s->stride - s->pad + i, iw = ow * s->stride - s->pad + j;
                if (ih < 0 || iw < 0 || ih >= s->h || iw >= s->w) continue;
                acc += (double)w[((k * s->c + c) * s->kh + i) * s->kw + j] *
                       x[((size_t)(n * s->c + c) * s->h + ih) * s->w + iw];
            }
    return acc;
}

static int conv_case(int threads, int c, int h, int k, int kh, int stride, int pad, int n)
{
    struct cv v = {.c = cpu(threads), .n = n};
    if (!v.c) return 1;
    v.sh = (train_be_conv_shape_t){.max_n = n,
                                   .c = c,
                                   .h = h,
                                   .w = h,
                                   .k = k,
                                   .kh = kh,
                                   .kw = kh,
                                   .stride = stride,
                                   .pad = pad};
    v.sh.oh = v.sh.ow = (h + 2 * pad - kh) / stride + 1;
    v.plan = train_be_cpu.conv_plan(v.c, &v.sh);
    if (!v.plan) return 1;
    size_t nx = (size_t)n * c * h * h, nw = (size_t)k * c * kh * kh,
           ny = (size_t)n * k * v.sh.oh * v.sh.ow;
    uint64_t s = 11;
    v.x = malloc(nx * 4), v.w = malloc(nw * 4), v.b = malloc((size_t)k * 4), v.y = malloc(ny * 4),
    v.r = malloc(ny * 4);
    float *dx = malloc(nx * 4), *dw = malloc(nw * 4), *db = malloc((size_t)k * 4);
    for (size_t i = 0; i < nx; i++)
        v.x[i] = frand(&s);
    for (size_t i = 0; i < nw; i++)
        v.w[i] = frand(&s);
    for (int i = 0; i < k; i++)
        v.b[i] = frand(&s);
    for (size_t i = 0; i < ny; i++)
        v.r[i] = frand(&s);
    int bad = 0;
    conv_loss(&v); /* forward against the definition */
    for (int q = 0; q < n; q++)
        for (int kk = 0; kk < k; kk++)
            for (int i = 0; i < v.sh.oh; i++)
                for (int j = 0; j < v.sh.ow; j++) {
                    double want = conv_direct(&v.sh, v.x, v.w, v.b, q, kk, i, j);
                    float got = v.y[(((size_t)q * k + kk) * v.sh.oh + i) * v.sh.ow + j];
                    if (fabs(got - want) > 1e-4 * (1 + fabs(want)) && bad++ < 3)
                        fprintf(stderr, "conv y: %g vs %g\n", got, want);
                }
    train_be_cpu.conv_backward(v.c, v.plan, n, v.x, v.w, v.r, dx, dw, db);
    bad += fd_check("conv dW", v.w, dw, nw, conv_loss, &v, 1e-2f, 2e-3, 1e-3);
    bad += fd_check("conv db", v.b, db, (size_t)k, conv_loss, &v, 1e-2f, 2e-3, 1e-3);
    bad += fd_check("conv dx", v.x, dx, nx, conv_loss, &v, 1e-2f, 2e-3, 1e-3);
    /* backward without dx must give the same weight gradients */
    float *dw2 = malloc(nw * 4), *db2 = malloc((size_t)k * 4);
    train_be_cpu.conv_backward(v.c, v.plan, n, v.x, v.w, v.r, NULL, dw2, db2);
    bad += memcmp(dw, dw2, nw * 4) != 0 || memcmp(db, db2, (size_t)k * 4) != 0;
    char err[256];
    bad += train_be_cpu.sync(v.c, err, sizeof err) != 0;
    free(v.x), free(v.w), free(v.b), free(v.y), free(v.r), free(dx), free(dw), free(db), free(dw2),
        free(db2);
    train_be_cpu.close(v.c);
    return bad;
}

/* Convolutions: the cnn's shapes (stride 1, 8-wide rows) and a strided, padded one that
 * takes the general im2col path; 1 and 3 threads (thread partial sums). */
TEST(grad_conv)
{
    CHECK_EQ_INT(conv_case(1, 2, 12, 3, 5, 1, 0, 2), 0); /* 12 -> 8: the fast path */
    CHECK_EQ_INT(conv_case(3, 1, 28, 4, 5, 1, 0, 3), 0); /* conv1's shape, 3 threads */
    CHECK_EQ_INT(conv_case(2, 3, 7, 5, 3, 2, 1, 2), 0);  /* strided and padded */
}

struct act {
    train_be_ctx_t *c;
    int n, ch, h, w;
    float *x, *y, *r, *zero;
    int32_t *am;
};
static double relu_loss(void *ud)
{
    struct act *a = ud;
    size_t n = (size_t)a->n * a->ch * a->h * a->w;
    memcpy(a->y, a->x, n * 4);
    train_be_cpu.bias_act(a->c, a->y, a->zero, (int)(n / a->w), a->w, TRAIN_BE_ACT_RELU);
    return dot(a->y, a->r, n);
}
static double pool_loss(void *ud)
{
    struct act *a = ud;
    train_be_cpu.maxpool_forward(a->c, a->n, a->ch, a->h, a->w, 2, a->x, a->y, a->am);
    return dot(a->y, a->r, (size_t)a->n * a->ch * (a->h / 2) * (a->w / 2));
}

/* ReLU (fused into bias_act, backward from its output) and 2x2 max-pooling, with inputs
 * kept away from kinks and ties so finite differences are exact. Odd sizes too. */
TEST(grad_relu_maxpool)
{
    int sizes[][2] = {{6, 6}, {24, 24}, {7, 5}};
    for (int t = 0; t < 3; t++) {
        struct act a = {.c = cpu(t + 1), .n = 2, .ch = 3, .h = sizes[t][0], .w = sizes[t][1]};
        REQUIRE(a.c);
        size_t n = (size_t)a.n * a.ch * a.h * a.w, np = (size_t)a.n * a.ch * (a.h / 2) * (a.w / 2);
        a.x = malloc(n * 4), a.y = malloc(n * 4), a.r = malloc(n * 4),
        a.zero = calloc((size_t)a.w, 4), a.am = malloc(np * 4);
        float *dx = malloc(n * 4);
        uint64_t s = 7 + (uint64_t)t;
        /* distinct values 0.01 apart, shuffled, none near 0 */
        for (size_t i = 0; i < n; i++)
            a.x[i] = (float)((double)i - n / 2.0) * 0.01f + 0.005f;
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = (size_t)((frand(&s) + 1.0f) * 0.5f * (float)i);
            float tmp = a.x[i];
            a.x[i] = a.x[j];
            a.x[j] = tmp;
        }
        for (size_t i = 0; i < n; i++)
            a.r[i] = frand(&s);
        relu_loss(&a);
        train_be_cpu.relu_backward(a.c, a.y, a.r, dx, n);
        CHECK_EQ_INT(fd_check("relu dx", a.x, dx, n, relu_loss, &a, 1e-3f, 1e-3, 1e-3), 0);
        pool_loss(&a);
        train_be_cpu.maxpool_backward(a.c, a.n, a.ch, a.h, a.w, 2, a.r, a.am, dx);
        CHECK_EQ_INT(fd_check("maxpool dx", a.x, dx, n, pool_loss, &a, 1e-3f, 1e-3, 1e-3), 0);
        free(a.x), free(a.y), free(a.r), free(a.zero), free(a.am), free(dx);
        train_be_cpu.close(a.c);
    }
}

struct sx {
    train_be_ctx_t *c;
    int n;
    float *z;
    int32_t *y;
};
static double xent_loss(void *ud)
{
    struct sx *x = ud;
    double st[2] = {0, 0};
    train_be_cpu.softmax_xent(x->c, x->z, x->y, x->n, 10, 0.0f, NULL, st);
    return st[0];
}

/* Softmax cross-entropy: the gradient of the summed loss, the loss against a direct
 * formula, the accuracy count, and large logits (max subtraction). */
TEST(grad_softmax_xent)
{
    struct sx x = {.c = cpu(1), .n = 6};
    REQUIRE(x.c);
    x.z = malloc(60 * 4), x.y = malloc(6 * 4);
    float *dz = malloc(60 * 4);
    uint64_t s = 9;
    for (int i = 0; i < 60; i++)
        x.z[i] = 3.0f * frand(&s);
    for (int i = 0; i < 6; i++)
        x.y[i] = i % 10;
    double st[2] = {0, 0};
    train_be_cpu.softmax_xent(x.c, x.z, x.y, x.n, 10, 1.0f, dz, st);
    double want = 0, correct = 0;
    for (int i = 0; i < 6; i++) {
        double se = 0;
        int am = 0;
        for (int c = 0; c < 10; c++) {
            se += exp(x.z[i * 10 + c]);
            if (x.z[i * 10 + c] > x.z[i * 10 + am]) am = c;
        }
        want += log(se) - x.z[i * 10 + x.y[i]];
        correct += am == x.y[i];
    }
    CHECK_NEAR(st[0], want, 1e-4);
    CHECK_NEAR(st[1], correct, 0);
    CHECK_EQ_INT(fd_check("dlogits", x.z, dz, 60, xent_loss, &x, 1e-2f, 1e-3, 1e-3), 0);
    for (int i = 0; i < 10; i++)
        x.z[i] = 1000.0f + i;
    st[0] = st[1] = 0;
    train_be_cpu.softmax_xent(x.c, x.z, x.y, 1, 10, 1.0f, dz, st);
    /* label 0 against logits 1000..1009: 9 + log(sum_m e^-m) */
    CHECK(isfinite(st[0]));
    CHECK_NEAR(st[0], 9.0 + log((1 - exp(-10.0)) / (1 - exp(-1.0))), 1e-3);
    free(x.z), free(x.y), free(dz);
    train_be_cpu.close(x.c);
}

struct mdl {
    train__model_t *m;
    float *x;
    int32_t *y;
    int n;
};
static double model_loss(void *ud)
{
    struct mdl *d = ud;
    double st[2] = {0, 0};
    train__model_step(d->m, d->x, d->y, d->n, 0.0f, st, NULL, NULL);
    return st[0];
}

static void model_case(int kind, int threads)
{
    train_be_ctx_t *c = cpu(threads);
    REQUIRE(c);
    train__model_cfg_t cfg = {.kind = kind, .hidden = 16, .layers = 2};
    size_t np = train__model_count(&cfg);
    float *p = malloc(np * 4), *g = malloc(np * 4);
    train__model_init(&cfg, p, 3);
    struct mdl d = {.n = 3};
    char err[256];
    /* training batches (3) smaller than forward-only ones (4), as in tune-train, so
     * the gradient buffers sized for 3 are what the check exercises */
    REQUIRE(train__model_new(&d.m, &cfg, &train_be_cpu, c, 4, 3, p, g, err, sizeof err) == 0);
    d.x = malloc(sizeof(float) * 3 * 784);
    d.y = malloc(sizeof(int32_t) * 3);
    uint64_t s = 17;
    for (int i = 0; i < 3 * 784; i++)
        d.x[i] = 2.0f * frand(&s);
    for (int i = 0; i < 3; i++)
        d.y[i] = 3 * i;
    double st[2] = {0, 0};
    train__model_step(d.m, d.x, d.y, d.n, 1.0f, st, NULL, NULL);
    /* the 40 largest gradients (FD is noisy on tiny ones) */
    int bad = 0;
    for (int q = 0; q < 40; q++) {
        size_t best = 0;
        for (size_t i = 0; i < np; i++)
            if (fabsf(g[i]) > fabsf(g[best])) best = i;
        float gi = g[best];
        g[best] = 0; /* exclude next time */
        bad += fd_check("model", p + best, &gi, 1, model_loss, &d, 1e-3f, 5e-3, 3e-2);
    }
    CHECK_EQ_INT(bad, 0);
    train__model_free(d.m);
    free(p), free(g), free(d.x), free(d.y);
    train_be_cpu.close(c);
}

/* Whole models, forward and backward as train.c runs them, on their largest gradients. */
TEST(grad_model_mlp)
{
    model_case(TRAIN_MODEL_MLP, 1);
}

TEST(grad_model_cnn)
{
    model_case(TRAIN_MODEL_CNN, 2);
}

/* The tuned CPU paths (the best GEMM kernel the CPU has, the AVX im2col/col2im copies,
 * the AVX-512 pooling) against the plain C reference path (train_be_opts_t.portable: the
 * generic kernel and scalar loops, what other architectures run), on a whole training
 * step of both models: the same loss and every gradient. They sum in different orders
 * (FMA, other register tiles), so they agree to float rounding, not bit for bit: the
 * stated tolerance is 1e-4 of the largest gradient for gradients and 1e-5 relative for
 * the loss, some 400x the differences measured on an AVX-512 machine (2.4e-7 and 1.3e-8);
 * a wrong AVX col2im or AVX-512 pooling is off by 0.4. Where this build has no tuned
 * path (TUNE_PORTABLE, not x86) both sides are the reference and the test says so. */
static void tuned_vs_portable(int kind, int n)
{
    train__model_cfg_t cfg = {.kind = kind, .hidden = 64, .layers = 2};
    size_t np = train__model_count(&cfg);
    float *p = malloc(np * 4), *gt = calloc(np, 4), *gp = calloc(np, 4);
    float *x = malloc(sizeof(float) * (size_t)n * 784);
    int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
    train__model_init(&cfg, p, 11);
    uint64_t s = 23;
    for (int i = 0; i < n * 784; i++)
        x[i] = 2.0f * frand(&s);
    for (int i = 0; i < n; i++)
        y[i] = i % 10;
    double loss[2] = {0, 0};
    float *grads[2] = {gt, gp};
    for (int portable = 0; portable < 2; portable++) {
        train_be_opts_t o = {.threads = 2, .rank = 0, .world = 1, .portable = portable};
        train_be_ctx_t *c = NULL;
        char err[256];
        REQUIRE(train_be_cpu.open(&o, &c, err, sizeof err) == 0);
        train__model_t *m = NULL;
        REQUIRE(train__model_new(&m, &cfg, &train_be_cpu, c, n, n, p, grads[portable], err,
                                 sizeof err) == 0);
        double st[2] = {0, 0};
        train__model_step(m, x, y, n, 1.0f, st, NULL, NULL);
        CHECK_EQ_INT(train_be_cpu.sync(c, err, sizeof err), 0);
        loss[portable] = st[0];
        train__model_free(m);
        train_be_cpu.close(c);
    }
    double gmax = 0, dmax = 0;
    for (size_t i = 0; i < np; i++) {
        gmax = fmax(gmax, fabs(gp[i]));
        dmax = fmax(dmax, fabs((double)gt[i] - gp[i]));
    }
    fprintf(stderr,
            "%s (x86 paths %s): loss %.9g vs %.9g, largest gradient %.3g, largest"
            " difference %.3g\n",
            kind == TRAIN_MODEL_CNN ? "cnn" : "mlp", TRAIN_HAVE_X86 ? "built" : "not built",
            loss[0], loss[1], gmax, dmax);
    CHECK(gmax > 0);
    CHECK(fabs(loss[0] - loss[1]) <= 1e-5 * fabs(loss[1]));
    CHECK(dmax <= 1e-4 * gmax);
    free(p), free(gt), free(gp), free(x), free(y);
}

TEST(cpu_tuned_matches_portable)
{
    tuned_vs_portable(TRAIN_MODEL_MLP, 16);
    tuned_vs_portable(TRAIN_MODEL_CNN, 8);
}

/* PyTorch's init bound 1/sqrt(fan_in), same seed same values, every parameter set. */
TEST(model_init_and_shapes)
{
    train__model_cfg_t mlp = {.kind = TRAIN_MODEL_MLP, .hidden = 256, .layers = 2};
    train__model_cfg_t cnn = {.kind = TRAIN_MODEL_CNN};
    CHECK_EQ_INT(train__model_count(&mlp), 784 * 256 + 256 + 256 * 256 + 256 + 2570);
    CHECK_EQ_INT(train__model_count(&cnn), 32 * 25 + 32 + 64 * 800 + 64 + 1024 * 128 + 128 + 1290);
    size_t np = train__model_count(&mlp);
    float *a = malloc(np * 4), *b = malloc(np * 4);
    train__model_init(&mlp, a, 5);
    train__model_init(&mlp, b, 5);
    CHECK(memcmp(a, b, np * 4) == 0);
    float mx = 0;
    for (size_t i = 0; i < 784 * 256; i++)
        mx = fmaxf(mx, fabsf(a[i]));
    CHECK(mx <= 1.0f / sqrtf(784.0f) && mx > 0.9f / sqrtf(784.0f));
    train__model_init(&mlp, b, 6);
    CHECK(memcmp(a, b, np * 4) != 0);
    size_t off[16];
    CHECK_EQ_INT(train__model_buckets(&mlp, off, 16), 3);
    CHECK_EQ_INT(off[3], np);
    free(a), free(b);
}

/* The optimisers against their PyTorch formulas for two steps. */
TEST(optimizers_match_formulas)
{
    train_be_ctx_t *c = cpu(1);
    REQUIRE(c);
    float p[3] = {1, -2, 0.5f}, g[3] = {0.1f, 0.2f, -0.3f}, buf[3] = {0}, m[3] = {0}, v[3] = {0};
    float q[3] = {1, -2, 0.5f};
    double bq[3] = {0};
    for (int step = 0; step < 2; step++) {
        train_be_cpu.sgd_step(c, p, g, buf, 3, 0.1f, 0.9f, 0.01f, 1);
        for (int i = 0; i < 3; i++) { /* torch.optim.SGD, nesterov */
            double d = g[i] + 0.01 * q[i];
            bq[i] = 0.9 * bq[i] + d;
            q[i] = (float)(q[i] - 0.1 * (d + 0.9 * bq[i]));
            CHECK_NEAR(p[i], q[i], 1e-6);
        }
    }
    float pa[3] = {1, -2, 0.5f};
    double ma[3] = {0}, va[3] = {0}, qa[3] = {1, -2, 0.5};
    for (int t = 1; t <= 2; t++) {
        float bc1 = 1.0f - powf(0.9f, (float)t), bc2 = 1.0f - powf(0.999f, (float)t);
        train_be_cpu.adam_step(c, pa, g, m, v, 3, 0.01f, 0.9f, 0.999f, 1e-8f, 0.0f, bc1, bc2);
        for (int i = 0; i < 3; i++) {
            ma[i] = 0.9 * ma[i] + 0.1 * g[i];
            va[i] = 0.999 * va[i] + 0.001 * g[i] * g[i];
            qa[i] -= 0.01 / bc1 * ma[i] / (sqrt(va[i]) / sqrt(bc2) + 1e-8);
            CHECK_NEAR(pa[i], qa[i], 1e-6);
        }
    }
    train_be_cpu.close(c);
}

/* The data order: a permutation, the same for the same (seed, epoch), different across
 * epochs and seeds. */
TEST(permutation_is_deterministic)
{
    int n = 1000;
    int32_t *a = malloc(n * 4), *b = malloc(n * 4);
    char *seen = calloc((size_t)n, 1);
    train__permutation(a, n, 7, 0);
    train__permutation(b, n, 7, 0);
    CHECK(memcmp(a, b, (size_t)n * 4) == 0);
    int ok = 1;
    for (int i = 0; i < n; i++) {
        if (a[i] < 0 || a[i] >= n || seen[a[i]])
            ok = 0;
        else
            seen[a[i]] = 1;
    }
    CHECK(ok);
    train__permutation(b, n, 7, 1);
    CHECK(memcmp(a, b, (size_t)n * 4) != 0);
    train__permutation(b, n, 8, 0);
    CHECK(memcmp(a, b, (size_t)n * 4) != 0);
    free(a), free(b), free(seen);
}

/* ---- options --------------------------------------------------------------------------- */

static int parse(const char *line, train_opts_t *o, char *err, size_t errlen)
{
    char buf[1024], *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    argv[argc++] = "tune-train";
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " "))
        argv[argc++] = t;
    train_opts_default(o);
    err[0] = 0;
    return train_opts_parse(o, argc, argv, err, errlen);
}

TEST(options_parse)
{
    train_opts_t o;
    char err[512];
    CHECK_EQ_INT(parse("--model cnn --epochs 3 --ranks 2 --lr 0.1 --batch-size 96 --momentum 0.8 "
                       "--seed 9 --optimizer adam --schedule cosine --warmup-epochs 0.5 "
                       "--threads=3 --nesterov --report-every 5 --tf32 --stop-after-epoch 2",
                       &o, err, sizeof err),
                 0);
    CHECK_EQ_INT(o.model, TRAIN_MODEL_CNN);
    CHECK_EQ_INT(o.epochs, 3);
    CHECK_EQ_INT(o.ranks, 2);
    CHECK_EQ_INT(o.threads, 3);
    CHECK_EQ_INT(o.batch_size, 96);
    CHECK_EQ_INT(o.optimizer, TRAIN_OPT_ADAM);
    CHECK_EQ_INT(o.schedule, TRAIN_SCHED_COSINE);
    CHECK_EQ_INT(o.nesterov, 1);
    CHECK_EQ_INT(o.report_every, 5);
    CHECK_EQ_INT(o.tf32, 1);
    CHECK_EQ_INT(o.stop_after, 2);
    CHECK_EQ_INT((int)o.seed, 9);
    CHECK_NEAR(o.lr, 0.1, 0);
    CHECK_NEAR(o.warmup_epochs, 0.5, 0);
    CHECK_EQ_INT(parse("--help", &o, err, sizeof err), 1);
    CHECK_CONTAINS(train_usage(), "--batch-size");
}

/* Every option error message, as the user sees it. */
TEST(options_errors)
{
    static const char *cases[][2] = {
        {"--lr abc", "--lr must be a positive number, got \"abc\""},
        {"--lr -1", "--lr must be a positive number, got \"-1\""},
        {"--lr 0", "--lr must be a positive number, got \"0\""},
        {"--epochs 0", "--epochs must be a positive integer, got \"0\""},
        {"--epochs 2x", "--epochs must be a positive integer, got \"2x\""},
        {"--ranks 65", "--ranks must be an integer from 1 to 64, got \"65\""},
        {"--layers 0", "--layers must be an integer from 1 to 32, got \"0\""},
        {"--momentum 1.5", "--momentum must be a number in [0, 1), got \"1.5\""},
        {"--weight-decay -0.1", "--weight-decay must be a non-negative number, got \"-0.1\""},
        {"--seed -3", "--seed must be a non-negative integer, got \"-3\""},
        {"--report-every x", "--report-every must be a non-negative integer, got \"x\""},
        {"--model rnn", "--model must be mlp or cnn, got \"rnn\""},
        {"--optimizer lbfgs", "--optimizer must be sgd or adam, got \"lbfgs\""},
        {"--schedule step", "--schedule must be constant or cosine, got \"step\""},
        {"--bogus 1", "unknown option \"--bogus\" (see --help)"},
        {"--lr", "--lr needs a value"},
        {"--resume=1", "--resume takes no value"},
        {"--data=", "--data must not be empty"},
        {"--batch-size 100 --ranks 3", "--batch-size 100 is not divisible by --ranks 3"},
        {"--momentum 0 --nesterov", "--nesterov needs --momentum > 0"},
        {"--ranks 4 --batch-size 8 --train-limit 2", "--train-limit 2 is smaller than --ranks 4"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        train_opts_t o;
        char err[512];
        CHECK_EQ_INT(parse(cases[i][0], &o, err, sizeof err), TRAIN_EINVAL);
        CHECK_CONTAINS(err, cases[i][1]);
    }
    char err[256];
    CHECK(train_be_find("tpu", err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "--device must be cpu or cuda, got \"tpu\"");
    CHECK(train_be_find("cpu", err, sizeof err) == &train_be_cpu);
#ifndef TUNE_HAVE_CUDA
    CHECK(train_be_find("cuda", err, sizeof err) == NULL);
    CHECK_CONTAINS(err, "built without CUDA");
#endif
}

/* The binary: a bad option is one line on stderr, exit status 2, nothing on stdout. */
TEST(binary_bad_option)
{
    char *d = tmpdir();
    REQUIRE(d);
    char out[4096], errf[4096];
    snprintf(out, sizeof out, "%s/out", d);
    snprintf(errf, sizeof errf, "%s/err", d);
    const char *args[] = {"--model", "mlp", "--lr", "abc", NULL};
    CHECK_EQ_INT(run_train(args, out, errf, NULL, 30), 2);
    char *e = slurp(errf), *o = slurp(out);
    CHECK_STR(e, "tune-train: --lr must be a positive number, got \"abc\"\n");
    CHECK_STR(o, "");
    free(e), free(o);
    const char *args2[] = {"--help", NULL};
    CHECK_EQ_INT(run_train(args2, out, errf, NULL, 30), 0);
    o = slurp(out);
    CHECK_CONTAINS(o, "usage: tune-train");
    free(o);
    rm_rf(d);
    free(d);
}

/* ---- data ------------------------------------------------------------------------------- */

static int data_err(const char *dir, const char *cache, char *err, size_t errlen)
{
    train_data_t *d = NULL;
    char warn[512];
    int rc = train_data_open(&d, dir, cache, warn, sizeof warn, err, errlen);
    train_data_free(d);
    return rc;
}

/* Synthetic IDX files load, gz or plain; the second open comes from the cache; a cache
 * that cannot be written is a warning, not an error. */
TEST(data_load_and_cache)
{
    char *d = tmpdir();
    REQUIRE(d);
    REQUIRE(make_dataset(d, 300, 50) == 0);
    char cache[4096], err[1024], warn[1024];
    snprintf(cache, sizeof cache, "%s/cache", d);
    train_data_t *a, *b;
    REQUIRE(train_data_open(&a, d, cache, warn, sizeof warn, err, sizeof err) == 0);
    CHECK_EQ_INT(a->n_train, 300);
    CHECK_EQ_INT(a->n_test, 50);
    CHECK_EQ_INT(a->from_cache, 0);
    CHECK_STR(warn, "");
    REQUIRE(train_data_open(&b, d, cache, warn, sizeof warn, err, sizeof err) == 0);
    CHECK_EQ_INT(b->from_cache, 1);
    CHECK(memcmp(a->train_x, b->train_x, 300 * 784) == 0);
    CHECK(memcmp(a->test_y, b->test_y, 50) == 0);
    train_data_free(b);
    /* a changed source (new mtime/size) must not be served from the stale cache */
    char p[4096];
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte.gz", d);
    uint8_t lab[40] = {0};
    uint32_t dl[1] = {40};
    uint32_t di[3] = {40, 28, 28};
    uint8_t *img = calloc(40, 784);
    write_idx(p, 0x801, dl, 1, lab, 40, 1);
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte.gz", d);
    write_idx(p, 0x803, di, 3, img, 40 * 784, 1);
    free(img);
    REQUIRE(train_data_open(&b, d, cache, warn, sizeof warn, err, sizeof err) == 0);
    CHECK_EQ_INT(b->n_test, 40);
    CHECK_EQ_INT(b->from_cache, 0);
    train_data_free(b);
    /* unwritable cache: a file where the directory should be */
    snprintf(p, sizeof p, "%s/notadir", d);
    FILE *f = fopen(p, "w");
    fclose(f);
    snprintf(cache, sizeof cache, "%s/notadir/sub", d);
    REQUIRE(train_data_open(&b, d, cache, warn, sizeof warn, err, sizeof err) == 0);
    CHECK_CONTAINS(warn, "not caching the decoded data set");
    CHECK_EQ_INT(b->n_train, 300);
    train_data_free(b);
    /* no cache at all */
    REQUIRE(train_data_open(&b, d, "none", warn, sizeof warn, err, sizeof err) == 0);
    CHECK_EQ_INT(b->from_cache, 0);
    train_data_free(b);
    /* uncompressed files are read too */
    char *d2 = tmpdir();
    uint8_t *im = calloc(20, 784), lb[20] = {1};
    uint32_t n20[3] = {20, 28, 28};
    const char *names[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                            "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", d2, names[i]);
        if (i % 2)
            write_idx(p, 0x801, n20, 1, lb, 20, 0);
        else
            write_idx(p, 0x803, n20, 3, im, 20 * 784, 0);
    }
    free(im);
    REQUIRE(train_data_open(&b, d2, "none", warn, sizeof warn, err, sizeof err) == 0);
    CHECK_EQ_INT(b->n_train, 20);
    CHECK_EQ_INT(b->train_y[0], 1);
    train_data_free(b);
    train_data_free(a);
    rm_rf(d2);
    free(d2);
    rm_rf(d);
    free(d);
}

/* Each way a data file can be wrong has its own message naming the file. */
TEST(data_errors)
{
    char *d = tmpdir();
    REQUIRE(d);
    char err[1024], p[4096], cmd[8192];
    /* missing directory / file */
    snprintf(p, sizeof p, "%s/nowhere", d);
    CHECK_EQ_INT(data_err(p, "none", err, sizeof err), TRAIN_EDATA);
    CHECK_CONTAINS(err, "cannot open");
    CHECK_CONTAINS(err, "nowhere/train-images-idx3-ubyte.gz: No such file or directory");
    REQUIRE(make_dataset(d, 100, 20) == 0);
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte.gz", d);
    unlink(p);
    CHECK_EQ_INT(data_err(d, "none", err, sizeof err), TRAIN_EDATA);
    CHECK_CONTAINS(err, "t10k-labels-idx1-ubyte.gz: No such file or directory");
    /* truncated gzip stream */
    REQUIRE(make_dataset(d, 100, 20) == 0);
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", d);
    REQUIRE(truncate(p, 200) == 0);
    CHECK_EQ_INT(data_err(d, "none", err, sizeof err), TRAIN_EDATA);
    CHECK_CONTAINS(err, "train-images-idx3-ubyte.gz");
    CHECK(strstr(err, "truncated") || strstr(err, "corrupt"));
    /* garbage inside the gzip stream */
    REQUIRE(make_dataset(d, 100, 20) == 0);
    FILE *f = fopen(p, "r+b");
    fseek(f, 30, SEEK_SET);
    for (int i = 0; i < 64; i++)
        fputc(0x55, f);
    fclose(f);
    CHECK_EQ_INT(data_err(d, "none", err, sizeof err), TRAIN_EDATA);
    CHECK_CONTAINS(err, "train-images-idx3-ubyte.gz: ");
    /* wrong magic: labels where images belong */
    REQUIRE(make_dataset(d, 100, 20) == 0);
    snprintf(cmd, sizeof cmd, "cp %s/train-labels-idx1-ubyte.gz %s", d, p);
    REQUIRE(system(cmd) == 0);
    CHECK_EQ_INT(data_err(d, "none", err, sizeof err), TRAIN_EDATA);
    CHECK_CONTAINS(err, "not an IDX image file (magic 0x00000801, expected 0x00000803)");
    /* a label that is not a class, and counts that disagree */
    REQUIRE(make_dataset(d, 100, 20) == 0);
    uint8_t lab[20] = {0};
    lab[7] = 12;
    uint32_t n20[1] = {20}, n19[1] = {19};
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte.gz", d);
    write_idx(p, 0x801, n20, 1, lab, 20, 1);
    CHECK_EQ_INT(data_err(d, "none", err, sizeof err), TRAIN_EDATA);
    CHECK_CONTAINS(err, "label 12 of item 7 is not a class 0..9");
    lab[7] = 1;
    write_idx(p, 0x801, n19, 1, lab, 19, 1);
    CHECK_EQ_INT(data_err(d, "none", err, sizeof err), TRAIN_EDATA);
    CHECK_CONTAINS(err, "19 labels for 20 images");
    /* wrong image size */
    uint32_t odd[3] = {20, 32, 32};
    uint8_t *im = calloc(20, 32 * 32);
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte.gz", d);
    write_idx(p, 0x803, odd, 3, im, 20 * 32 * 32, 1);
    free(im);
    CHECK_EQ_INT(data_err(d, "none", err, sizeof err), TRAIN_EDATA);
    CHECK_CONTAINS(err, "unexpected dimensions 20 x 32 x 32");
    /* and through the binary: exit 1 with the message */
    char out[4096], errf[4096];
    snprintf(out, sizeof out, "%s/out", d);
    snprintf(errf, sizeof errf, "%s/err", d);
    snprintf(p, sizeof p, "%s/nowhere", d);
    const char *args[] = {"--data", p, "--cache-dir", "none", NULL};
    CHECK_EQ_INT(run_train(args, out, errf, NULL, 30), 1);
    char *e = slurp(errf);
    CHECK_CONTAINS(e, "tune-train: cannot open ");
    CHECK_CONTAINS(e, "nowhere/train-images-idx3-ubyte.gz: No such file or directory");
    free(e);
    rm_rf(d);
    free(d);
}

/* The real data set, when installed: sizes and the decoded cache. */
TEST(data_real_fashion_mnist)
{
    if (access(TRAIN_DEFAULT_DATA_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0)
        SKIP("dataset-fashion-mnist is not installed");
    char *d = tmpdir();
    train_data_t *a;
    char err[1024], warn[1024];
    REQUIRE(train_data_open(&a, TRAIN_DEFAULT_DATA_DIR, d, warn, sizeof warn, err, sizeof err) ==
            0);
    CHECK_EQ_INT(a->n_train, 60000);
    CHECK_EQ_INT(a->n_test, 10000);
    CHECK_EQ_INT(a->rows, 28);
    train_data_free(a);
    double t0 = e2e_mono();
    REQUIRE(train_data_open(&a, TRAIN_DEFAULT_DATA_DIR, d, warn, sizeof warn, err, sizeof err) ==
            0);
    /* the second open maps the decoded cache instead of decoding again: said by the
     * handle; what it costs is printed, not asserted (bench/train measures the trainer) */
    CHECK_EQ_INT(a->from_cache, 1);
    fprintf(stderr, "opened from the decoded cache in %.1f ms\n", (e2e_mono() - t0) * 1e3);
    train_data_free(a);
    rm_rf(d);
    free(d);
}

/* ---- checkpoints -------------------------------------------------------------------------- */

TEST(checkpoint_roundtrip_and_corruption)
{
    char *d = tmpdir();
    REQUIRE(d);
    float params[5] = {1, 2, 3, 4, 5}, state[10];
    for (int i = 0; i < 10; i++)
        state[i] = (float)i / 3;
    train__ckpt_t c = {.model = 1,
                       .hidden = 256,
                       .layers = 2,
                       .optimizer = 1,
                       .world = 2,
                       .threads = 1,
                       .seed = 99,
                       .nparams = 5,
                       .nstate = 2,
                       .epoch = 3,
                       .step = 1234,
                       .iteration = 3,
                       .elapsed_s = 1.5,
                       .params = params,
                       .state = state};
    train__rng_seed(&c.rng, 5, 6);
    char err[1024], p[4096];
    REQUIRE(train__ckpt_write(d, &c, err, sizeof err) == 0);
    snprintf(p, sizeof p, "%s/checkpoint.bin", d);
    train__ckpt_t r;
    REQUIRE(train__ckpt_read(p, &r, err, sizeof err) == 0);
    CHECK_EQ_INT(r.model, 1);
    CHECK_EQ_INT(r.epoch, 3);
    CHECK_EQ_INT(r.step, 1234);
    CHECK_EQ_INT(r.seed, 99);
    CHECK(memcmp(r.params, params, sizeof params) == 0);
    CHECK(memcmp(r.state, state, sizeof state) == 0);
    CHECK(memcmp(&r.rng, &c.rng, sizeof c.rng) == 0);
    train__ckpt_clear(&r);
    /* no temp files left behind */
    DIR *dir = opendir(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(dir));)
        files += e->d_name[0] != '.';
    closedir(dir);
    CHECK_EQ_INT(files, 1);
    /* one flipped byte */
    FILE *f = fopen(p, "r+b");
    fseek(f, 100, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 100, SEEK_SET);
    fputc(ch ^ 1, f);
    fclose(f);
    CHECK_EQ_INT(train__ckpt_read(p, &r, err, sizeof err), TRAIN_ECKPT);
    CHECK_CONTAINS(err, "is corrupt or truncated");
    /* truncated */
    REQUIRE(train__ckpt_write(d, &c, err, sizeof err) == 0);
    REQUIRE(truncate(p, 60) == 0);
    CHECK_EQ_INT(train__ckpt_read(p, &r, err, sizeof err), TRAIN_ECKPT);
    CHECK_CONTAINS(err, "is corrupt or truncated");
    /* not a checkpoint */
    f = fopen(p, "w");
    fputs("hello, this is not a checkpoint file at all, not even close to one.............", f);
    fclose(f);
    CHECK_EQ_INT(train__ckpt_read(p, &r, err, sizeof err), TRAIN_ECKPT);
    CHECK_CONTAINS(err, "is not a tune-train checkpoint (bad magic)");
    snprintf(p, sizeof p, "%s/missing.bin", d);
    CHECK_EQ_INT(train__ckpt_read(p, &r, err, sizeof err), TRAIN_ECKPT);
    CHECK_CONTAINS(err, "cannot open checkpoint");
    /* an unwritable directory */
    snprintf(p, sizeof p, "%s/no/such/dir", d);
    CHECK_EQ_INT(train__ckpt_write(p, &c, err, sizeof err), TRAIN_ERR);
    CHECK_CONTAINS(err, "cannot write a checkpoint in");
    rm_rf(d);
    free(d);
}

/* ---- the shared-memory world ----------------------------------------------------------- */

/* 3 forked ranks: the bucketed all-reduce sums in rank order, delivered in any order and
 * over several steps; sums and broadcasts; every rank sees the same result. */
/* Version 2 records the hyperparameters; a version-1 file (before them) is still read,
 * without them. */
TEST(checkpoint_hparams_and_version_1)
{
    char *d = tmpdir();
    REQUIRE(d);
    float params[3] = {1, 2, 3}, state[3] = {4, 5, 6};
    train__ckpt_t c = {.model = 0,
                       .hidden = 8,
                       .layers = 1,
                       .nparams = 3,
                       .nstate = 1,
                       .epoch = 2,
                       .seed = 7,
                       .params = params,
                       .state = state,
                       .hp = {.lr = 0.25,
                              .momentum = 0.5,
                              .batch_size = 96,
                              .epochs = 9,
                              .nesterov = 1,
                              .schedule = 1}};
    char err[1024], p[4200];
    REQUIRE(train__ckpt_write_as(d, "checkpoint_000002.bin", &c, err, sizeof err) == 0);
    snprintf(p, sizeof p, "%s/checkpoint_000002.bin", d);
    train__ckpt_t r;
    REQUIRE(train__ckpt_read(p, &r, err, sizeof err) == 0);
    CHECK_EQ_INT(r.has_hparams, 1);
    CHECK_NEAR(r.hp.lr, 0.25, 0);
    CHECK_NEAR(r.hp.momentum, 0.5, 0);
    CHECK_EQ_INT(r.hp.batch_size, 96);
    CHECK_EQ_INT(r.hp.epochs, 9);
    CHECK_EQ_INT(r.hp.nesterov, 1);
    train__ckpt_clear(&r);
    /* newest: the highest number, not checkpoint.bin, not a temporary file */
    REQUIRE(train__ckpt_write_as(d, "checkpoint_000010.bin", &c, err, sizeof err) == 0);
    REQUIRE(train__ckpt_write(d, &c, err, sizeof err) == 0);
    snprintf(p, sizeof p, "%s/.checkpoint_000011.bin.tmp.abc", d);
    fclose(fopen(p, "w"));
    char nb[4200], want[4200];
    CHECK_EQ_INT(train__ckpt_newest(d, nb, sizeof nb), 0);
    snprintf(want, sizeof want, "%s/checkpoint_000010.bin", d);
    CHECK_STR(nb, want);
    /* a version-1 file, as the tune-train before version 2 wrote it */
    struct {
        uint32_t model, hidden, layers, optimizer, world, threads, nstate, epoch;
        uint64_t seed, nparams, step, iteration;
        double elapsed_s;
        uint64_t rng[4];
    } h1 = {.hidden = 8, .layers = 1, .nstate = 1, .epoch = 2, .seed = 7, .nparams = 3};
    unsigned char buf[512];
    size_t n = 0;
    uint32_t ver = 1, hl = sizeof h1;
    memcpy(buf + n, "TUNECKPT", 8), n += 8;
    memcpy(buf + n, &ver, 4), n += 4;
    memcpy(buf + n, &hl, 4), n += 4;
    memcpy(buf + n, &h1, sizeof h1), n += sizeof h1;
    memcpy(buf + n, params, sizeof params), n += sizeof params;
    memcpy(buf + n, state, sizeof state), n += sizeof state;
    uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), buf, (uInt)n);
    memcpy(buf + n, &crc, 4), n += 4;
    snprintf(p, sizeof p, "%s/v1.bin", d);
    FILE *f = fopen(p, "wb");
    REQUIRE(f);
    fwrite(buf, 1, n, f);
    fclose(f);
    REQUIRE(train__ckpt_read(p, &r, err, sizeof err) == 0);
    CHECK_EQ_INT(r.has_hparams, 0);
    CHECK_EQ_INT(r.epoch, 2);
    CHECK(memcmp(r.params, params, sizeof params) == 0);
    CHECK(memcmp(r.state, state, sizeof state) == 0);
    train__ckpt_clear(&r);
    /* an unknown version is named */
    ver = 3;
    memcpy(buf + 8, &ver, 4);
    f = fopen(p, "wb");
    fwrite(buf, 1, n, f);
    fclose(f);
    CHECK_EQ_INT(train__ckpt_read(p, &r, err, sizeof err), TRAIN_ECKPT);
    CHECK_CONTAINS(err, "has version 3; this tune-train reads versions 1 to 2");
    rm_rf(d);
    free(d);
}

TEST(world_allreduce)
{
    enum { R = 3, N = 10000 };
    size_t off[4] = {0, 3000, 9000, N};
    train__world_t *w;
    char err[256];
    REQUIRE(train__world_new(&w, R, N, off, 3, 16, 10.0, err, sizeof err) == 0);
    pid_t pids[R];
    for (int r = 0; r < R; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            train__world_join(w, r);
            int bad = 0;
            for (int step = 1; step <= 4; step++) {
                float *g = train__world_grad_slot(w);
                for (int i = 0; i < N; i++)
                    g[i] = (float)(r + 1) * step + i * 1e-3f;
                /* deliver buckets in a rank-dependent order, one in two pieces */
                if (r == 1) {
                    train__world_grad_ready(w, 9000, 1000);
                    train__world_grad_ready(w, 0, 3000);
                    train__world_grad_ready(w, 3000, 6000);
                } else {
                    train__world_grad_ready(w, 3000, 3000);
                    train__world_grad_ready(w, 6000, 4000);
                    train__world_grad_ready(w, 0, 3000);
                }
                if (train__world_grad_finish(w, err, sizeof err) != 0) _exit(10);
                const float *s = train__world_reduced(w);
                for (int i = 0; i < N; i++) {
                    float want = 0;
                    for (int q = 0; q < R; q++)
                        want += (float)(q + 1) * step + i * 1e-3f;
                    if (s[i] != want) bad++;
                }
                if (train__world_barrier(w, err, sizeof err) != 0) _exit(11);
            }
            double v[2] = {r, 1};
            if (train__world_sum(w, v, 2, err, sizeof err) != 0 || v[0] != 3 || v[1] != 3)
                _exit(12);
            float b[4] = {0};
            if (r == 2) b[0] = 7, b[3] = 9;
            if (train__world_bcast(w, b, sizeof b, 2, err, sizeof err) != 0 || b[0] != 7 ||
                b[3] != 9)
                _exit(13);
            _exit(bad ? 14 : 0);
        }
    }
    for (int r = 0; r < R; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st)) fprintf(stderr, "rank %d status %d\n", r, st);
    }
    train__world_free(w);
}

/* A peer that never arrives: the others give up with a clear error (timeout), and an
 * aborted world stops waiters at once. The bounds on how long each took tell the outcomes
 * apart (the 0.5 s timeout from waiting forever, the abort from the 60 s timeout) with
 * room for a busy machine; they are not speeds. */
TEST(world_dead_peer)
{
    size_t off[2] = {0, 100};
    train__world_t *w;
    char err[256];
    REQUIRE(train__world_new(&w, 2, 100, off, 1, 0, 0.5, err, sizeof err) == 0);
    pid_t p = fork();
    if (p == 0) {
        train__world_join(w, 0);
        double t0 = e2e_mono();
        int rc = train__world_barrier(w, err, sizeof err);
        double dt = e2e_mono() - t0;
        _exit(rc == TRAIN_EPEER && strstr(err, "timed out") && dt < 30 ? 0 : 1);
    }
    int st;
    waitpid(p, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    train__world_free(w);

    REQUIRE(train__world_new(&w, 2, 100, off, 1, 0, 60, err, sizeof err) == 0);
    p = fork();
    if (p == 0) {
        train__world_join(w, 1);
        double t0 = e2e_mono();
        int rc = train__world_barrier(w, err, sizeof err);
        _exit(rc == TRAIN_EPEER && strstr(err, "another rank failed") && e2e_mono() - t0 < 30 ? 0
                                                                                              : 1);
    }
    usleep(100000);
    train__world_abort(w);
    waitpid(p, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    train__world_free(w);
}

/* ---- the binary, end to end on synthetic data --------------------------------------------- */

struct e2e {
    char *dir, data[4096], out[4096], err[4096];
};

static int e2e_setup(struct e2e *e, int ntrain, int ntest)
{
    e->dir = tmpdir();
    if (!e->dir) return -1;
    snprintf(e->data, sizeof e->data, "%s/data", e->dir);
    snprintf(e->out, sizeof e->out, "%s/out", e->dir);
    snprintf(e->err, sizeof e->err, "%s/err", e->dir);
    mkdir(e->data, 0755);
    return make_dataset(e->data, ntrain, ntest);
}

static void e2e_done(struct e2e *e)
{
    rm_rf(e->dir);
    free(e->dir);
}

/* Final parameters from a run's checkpoint (malloc'd), or NULL. */
static float *final_params(const char *ckdir, size_t *np)
{
    char p[4200], err[256];
    snprintf(p, sizeof p, "%s/checkpoint.bin", ckdir);
    train__ckpt_t c;
    if (train__ckpt_read(p, &c, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    free(c.state);
    *np = (size_t)c.nparams;
    return c.params;
}

/* Drops "samples_per_s" and "time_s", which legitimately differ between runs, and the
 * members that name a run's own files: "checkpoint" (a string) and "resumed" (an object). */
static void strip_timing(char *s)
{
    const char *keys[] = {
        ", \"samples_per_s\": ", ", \"time_s\": ", ", \"checkpoint\": ", ", \"resumed\": "};
    for (int k = 0; k < 4; k++)
        for (char *p; (p = strstr(s, keys[k]));) {
            char *q = p + strlen(keys[k]);
            int depth = 0, str = 0;
            for (; *q; q++) { /* to the end of the value: strings and nested objects skipped */
                if (str) {
                    if (*q == '\\' && q[1])
                        q++;
                    else if (*q == '"')
                        str = 0;
                } else if (*q == '"') {
                    str = 1;
                } else if (*q == '{' || *q == '[') {
                    depth++;
                } else if (*q == '}' || *q == ']') {
                    if (depth == 0) break;
                    depth--;
                } else if (*q == ',' && depth == 0) {
                    break;
                }
            }
            memmove(p, q, strlen(q) + 1);
        }
}

/* 1, 2 and 3 ranks with the same global batch (96) and seed reach the same parameters.
 * The sums differ only in float summation order (per-rank partial gradients summed in
 * rank order instead of one sum over 96 samples), so after 10 SGD steps the parameters
 * agree to max |diff| < 1e-5; result lines report the same step counts. */
static void ranks_case(const char *model, const char *limit)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 960, 100) == 0);
    float *p[3] = {0};
    size_t np[3] = {0};
    for (int r = 1; r <= 3; r++) {
        char ck[4096], ranks[8];
        snprintf(ck, sizeof ck, "%s/ck%d", e.dir, r);
        snprintf(ranks, sizeof ranks, "%d", r);
        const char *args[] = {"--model",
                              model,
                              "--epochs",
                              "1",
                              "--ranks",
                              ranks,
                              "--batch-size",
                              "96",
                              "--lr",
                              "0.05",
                              "--momentum",
                              "0.9",
                              "--seed",
                              "3",
                              "--data",
                              e.data,
                              "--cache-dir",
                              "none",
                              "--checkpoint-dir",
                              ck,
                              "--train-limit",
                              limit,
                              "--threads",
                              "1",
                              NULL};
        int rc = run_train(args, e.out, e.err, NULL, 60);
        CHECK_EQ_INT(rc, 0);
        if (rc) {
            char *s = slurp(e.err);
            fprintf(stderr, "%s", s);
            free(s);
        }
        char *o = slurp(e.out);
        CHECK_CONTAINS(o, "\"training_iteration\": 1, \"epoch\": 1");
        free(o);
        p[r - 1] = final_params(ck, &np[r - 1]);
    }
    REQUIRE(p[0] && p[1] && p[2]);
    CHECK_EQ_INT(np[0], np[1]);
    for (int r = 1; r < 3; r++) {
        double md = 0;
        for (size_t i = 0; i < np[0]; i++)
            md = fmax(md, fabs(p[0][i] - p[r][i]));
        fprintf(stderr, "%s: max |params(1 rank) - params(%d ranks)| = %.3g\n", model, r + 1, md);
        CHECK(md < 1e-5);
    }
    /* and the comparison is not vacuous: a different seed moves the parameters */
    double moved = 0;
    size_t n0;
    {
        char ck[4096];
        snprintf(ck, sizeof ck, "%s/ckseed", e.dir);
        const char *args[] = {"--model",
                              model,
                              "--epochs",
                              "1",
                              "--batch-size",
                              "96",
                              "--seed",
                              "4",
                              "--data",
                              e.data,
                              "--cache-dir",
                              "none",
                              "--checkpoint-dir",
                              ck,
                              "--train-limit",
                              limit,
                              NULL};
        CHECK_EQ_INT(run_train(args, e.out, e.err, NULL, 60), 0);
        float *q = final_params(ck, &n0);
        if (q)
            for (size_t i = 0; i < n0; i++)
                moved = fmax(moved, fabs(q[i] - p[0][i]));
        free(q);
    }
    CHECK(moved > 1e-3);
    for (int r = 0; r < 3; r++)
        free(p[r]);
    e2e_done(&e);
}

TEST(ranks_equal_one_rank_mlp)
{
    ranks_case("mlp", "960");
}

TEST(ranks_equal_one_rank_cnn)
{
    ranks_case("cnn", "192");
}

/* Stopping after 2 of 3 epochs (--stop-after-epoch, as a paused trial) and resuming
 * gives the same result lines (but for timings) and bit-identical parameters as 3 epochs
 * in one go; with 1 and 2 ranks, SGD and Adam, warm-up and a cosine schedule. */
static void resume_case(const char *ranks, const char *optimizer)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 500, 100) == 0);
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/a", e.dir);
    snprintf(b, sizeof b, "%s/b", e.dir);
#define COMMON                                                                                     \
    "--model", "mlp", "--hidden", "32", "--ranks", ranks, "--batch-size", "50", "--lr", "0.05",    \
        "--optimizer", optimizer, "--schedule", "cosine", "--warmup-epochs", "0.5", "--seed", "1", \
        "--data", e.data, "--cache-dir", "none", "--report-every", "4"
    const char *full[] = {COMMON, "--epochs", "3", "--checkpoint-dir", a, NULL};
    const char *first[] = {COMMON, "--epochs", "3", "--stop-after-epoch", "2", NULL};
    const char *rest[] = {COMMON, "--epochs", "3", "--resume", NULL};
#undef COMMON
    CHECK_EQ_INT(run_train(full, e.out, e.err, NULL, 60), 0);
    char *o_full = slurp(e.out);
    const char *env[] = {"TUNE_TRIAL_DIR", b, NULL};
    CHECK_EQ_INT(run_train(first, e.out, e.err, env, 60), 0);
    char *o1 = slurp(e.out);
    CHECK_EQ_INT(run_train(rest, e.out, e.err, env, 60), 0);
    char *o2 = slurp(e.out);
    char *joined = malloc(strlen(o1) + strlen(o2) + 1);
    strcpy(joined, o1);
    strcat(joined, o2);
    strip_timing(o_full);
    strip_timing(joined);
    CHECK_STR(joined, o_full);
    CHECK_CONTAINS(o_full, "\"training_iteration\": 9, \"epoch\": 3"); /* 3 per epoch */
    size_t na = 0, nb = 0;
    float *pa = final_params(a, &na), *pb = final_params(b, &nb);
    REQUIRE(pa && pb);
    CHECK_EQ_INT(na, nb);
    CHECK(memcmp(pa, pb, na * sizeof(float)) == 0);
    free(pa), free(pb), free(o_full), free(o1), free(o2), free(joined);
    /* TUNE_RESUME_FROM names the checkpoint explicitly; a corrupt one is a clear error */
    char ck[8192];
    snprintf(ck, sizeof ck, "%s/checkpoint.bin", b);
    FILE *f = fopen(ck, "r+b");
    fseek(f, 64, SEEK_SET);
    fputc(0xff, f);
    fclose(f);
    const char *env2[] = {"TUNE_RESUME_FROM", ck, NULL};
    CHECK_EQ_INT(run_train(rest, e.out, e.err, env2, 60), 1);
    char *er = slurp(e.err);
    CHECK_CONTAINS(er, "tune-train: --resume: checkpoint ");
    CHECK_CONTAINS(er, "is corrupt or truncated");
    free(er);
    e2e_done(&e);
}

TEST(resume_is_bit_identical)
{
    resume_case("1", "sgd");
}

TEST(resume_is_bit_identical_2_ranks_adam)
{
    resume_case("2", "adam");
}

/* A checkpoint of another model is refused with a message naming both. */
TEST(resume_mismatch)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 200, 50) == 0);
    char ck[4096];
    snprintf(ck, sizeof ck, "%s/ck", e.dir);
    const char *a1[] = {"--model", "mlp",  "--hidden",    "16",   "--epochs",         "1",
                        "--data",  e.data, "--cache-dir", "none", "--checkpoint-dir", ck,
                        NULL};
    CHECK_EQ_INT(run_train(a1, e.out, e.err, NULL, 60), 0);
    const char *a2[] = {"--model",     "cnn",  "--epochs",         "2", "--data",   e.data,
                        "--cache-dir", "none", "--checkpoint-dir", ck,  "--resume", NULL};
    CHECK_EQ_INT(run_train(a2, e.out, e.err, NULL, 60), 1);
    char *er = slurp(e.err);
    CHECK_CONTAINS(er, "is for --model mlp (hidden 16, layers 2");
    free(er);
    e2e_done(&e);
}

/* ---- resuming with other hyperparameters (Population Based Training's explore) ----------- */

/* The i-th (from 1) line of text s, copied into buf. */
static const char *nth_line(const char *s, int i, char *buf, size_t len)
{
    for (int k = 1; k < i && s; k++)
        if ((s = strchr(s, '\n'))) s++;
    buf[0] = 0;
    if (!s) return buf;
    size_t n = strcspn(s, "\n");
    snprintf(buf, len, "%.*s", (int)(n < len - 1 ? n : len - 1), s);
    return buf;
}

/* A run in this process that changes the hyperparameters after its first epoch, as a
 * trainer with a schedule of its own would: the result callback edits the options the
 * run reads at every step. The oracle for a resume that changes them. */
struct switch_at {
    train_opts_t *o;
    double lr, momentum, weight_decay;
    int lines;
};

static void switch_cb(void *ud, const char *line)
{
    (void)line;
    struct switch_at *w = ud;
    if (++w->lines == 1) {
        w->o->lr = w->lr;
        w->o->momentum = w->momentum;
        w->o->weight_decay = w->weight_decay;
    }
}

/* --resume with a new lr, momentum and weight decay keeps the checkpoint's weights and
 * momentum buffers and trains on with the new values: bit-identical to one run that
 * switched them after that epoch, and a different trajectory from resuming with the old
 * values. The first result line after the resume says what changed, and only the first. */
TEST(resume_with_new_hyperparameters)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 500, 100) == 0);
    char a[4096], bnew[4096], bold[4096], x[4096], ck[4200];
    snprintf(a, sizeof a, "%s/a", e.dir);
    snprintf(bnew, sizeof bnew, "%s/bnew", e.dir);
    snprintf(bold, sizeof bold, "%s/bold", e.dir);
    snprintf(x, sizeof x, "%s/x", e.dir);
    snprintf(ck, sizeof ck, "%s/checkpoint.bin", a);
#define COMMON                                                                                     \
    "--model", "mlp", "--hidden", "32", "--batch-size", "50", "--schedule", "cosine",              \
        "--warmup-epochs", "0.5", "--seed", "1", "--epochs", "3", "--threads", "1", "--data",      \
        e.data, "--cache-dir", "none"
    const char *first[] = {
        COMMON, "--lr", "0.05", "--momentum", "0.9", "--stop-after-epoch", "1", "--checkpoint-dir",
        a,      NULL};
    const char *resume_new[] = {COMMON,       "--lr",     "0.2",
                                "--momentum", "0.5",      "--weight-decay",
                                "0.001",      "--resume", "--checkpoint-dir",
                                bnew,         NULL};
    const char *resume_old[] = {
        COMMON, "--lr", "0.05", "--momentum", "0.9", "--resume", "--checkpoint-dir", bold, NULL};
#undef COMMON
    const char *env[] = {"TUNE_RESUME_FROM", ck, NULL};
    CHECK_EQ_INT(run_train(first, e.out, e.err, NULL, 60), 0);
    CHECK_EQ_INT(run_train(resume_new, e.out, e.err, env, 60), 0);
    char *o_new = slurp(e.out), *er = slurp(e.err), l1[8192], l2[8192], want[8400];
    snprintf(want, sizeof want,
             ", \"resumed\": {\"from\": \"%s\", \"epoch\": 1, \"changed\": {\"lr\": [0.05, 0.2], "
             "\"momentum\": [0.9, 0.5], \"weight_decay\": [0, 0.001]}}}",
             ck);
    CHECK_CONTAINS(nth_line(o_new, 1, l1, sizeof l1), want);
    CHECK_CONTAINS(l1, "\"training_iteration\": 2, \"epoch\": 2");
    CHECK(strstr(nth_line(o_new, 2, l2, sizeof l2), "resumed") == NULL);
    CHECK_CONTAINS(l2, "\"training_iteration\": 3, \"epoch\": 3");
    CHECK_CONTAINS(er, "with this command line's hyperparameters: lr 0.05 -> 0.2, momentum 0.9 -> "
                       "0.5, weight_decay 0 -> 0.001");
    CHECK_EQ_INT(run_train(resume_old, e.out, e.err, env, 60), 0);
    char *o_old = slurp(e.out);
    CHECK_CONTAINS(nth_line(o_old, 1, l1, sizeof l1), "\"epoch\": 1, \"changed\": {}}}");

    /* the oracle: one process, same first epoch, then the new values */
    train_opts_t o;
    train_opts_default(&o);
    const char *oa[] = {
        "tune-train", "--model",    "mlp",    "--hidden",         "32",  "--batch-size",
        "50",         "--schedule", "cosine", "--warmup-epochs",  "0.5", "--seed",
        "1",          "--epochs",   "3",      "--threads",        "1",   "--lr",
        "0.05",       "--momentum", "0.9",    "--checkpoint-dir", x,     NULL};
    char err[1024], warn[256];
    REQUIRE(train_opts_parse(&o, 23, (char **)oa, err, sizeof err) == 0);
    train_data_t *d = NULL;
    REQUIRE(train_data_open(&d, e.data, "none", warn, sizeof warn, err, sizeof err) == 0);
    struct switch_at w = {.o = &o, .lr = 0.2, .momentum = 0.5, .weight_decay = 0.001};
    train__run_env_t renv = {.opts = &o,
                             .data = d,
                             .rank = 0,
                             .nranks = 1,
                             .t_start = train__now(),
                             .result = switch_cb,
                             .ud = &w};
    CHECK_EQ_INT(train__run(&renv, err, sizeof err), 0);
    CHECK_EQ_INT(w.lines, 3);
    train_data_free(d);

    size_t nx = 0, nn = 0, no = 0;
    float *px = final_params(x, &nx), *pn = final_params(bnew, &nn), *po = final_params(bold, &no);
    REQUIRE(px && pn && po);
    CHECK_EQ_INT(nx, nn);
    CHECK_EQ_INT(nx, no);
    CHECK(memcmp(px, pn, nx * sizeof(float)) == 0); /* the switch, resumed or not */
    double md = 0;
    for (size_t i = 0; i < nx; i++)
        md = fmax(md, fabs(pn[i] - po[i]));
    CHECK(md > 1e-3); /* the new values were used: another trajectory */
    /* and the checkpoint records what the resumed run trained with */
    char p2[4300];
    snprintf(p2, sizeof p2, "%s/checkpoint.bin", bnew);
    train__ckpt_t c;
    REQUIRE(train__ckpt_read(p2, &c, err, sizeof err) == 0);
    CHECK_EQ_INT(c.has_hparams, 1);
    CHECK_NEAR(c.hp.lr, 0.2, 0);
    CHECK_NEAR(c.hp.momentum, 0.5, 0);
    CHECK_EQ_INT(c.epoch, 3);
    train__ckpt_clear(&c);
    free(px), free(pn), free(po), free(o_new), free(o_old), free(er);
    e2e_done(&e);
}

/* A new batch size on resume: the learning-rate schedule goes on from the epoch the
 * checkpoint ended (in the new run's steps), not from the old run's step count. With a
 * 2-epoch linear warm-up, 500 images, batch 50 then 25: the first step after the resume is
 * step 21 of a 40-step warm-up, lr 0.05 * 21/40; the step counter goes on from 10. */
TEST(resume_with_new_batch_size)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 500, 100) == 0);
    char a[4096];
    snprintf(a, sizeof a, "%s/a", e.dir);
#define COMMON                                                                                     \
    "--model", "mlp", "--hidden", "16", "--schedule", "constant", "--warmup-epochs", "2", "--lr",  \
        "0.05", "--epochs", "3", "--data", e.data, "--cache-dir", "none", "--checkpoint-dir", a
    const char *first[] = {COMMON, "--batch-size", "50", "--stop-after-epoch", "1", NULL};
    const char *rest[] = {COMMON, "--batch-size", "25", "--report-every", "1", "--resume", NULL};
#undef COMMON
    CHECK_EQ_INT(run_train(first, e.out, e.err, NULL, 60), 0);
    char *o1 = slurp(e.out), l[8192];
    CHECK_CONTAINS(o1, "\"step\": 10,");
    CHECK_EQ_INT(run_train(rest, e.out, e.err, NULL, 60), 0);
    char *o2 = slurp(e.out);
    nth_line(o2, 1, l, sizeof l);
    CHECK_CONTAINS(l, "\"epoch\": 2, \"step\": 11,");
    char want[64];
    snprintf(want, sizeof want, "\"learning_rate\": %.6g,", (double)(float)(0.05 * 21 / 40));
    CHECK_CONTAINS(l, want);
    CHECK_CONTAINS(l, "\"changed\": {\"batch_size\": [50, 25]}");
    nth_line(o2, 20, l, sizeof l); /* the end of epoch 2: 20 steps of 25 */
    CHECK_CONTAINS(l, "\"epoch\": 2, \"step\": 30,");
    snprintf(want, sizeof want, "\"learning_rate\": %.6g,", 0.05); /* warm-up over */
    CHECK_CONTAINS(l, want);
    free(o1), free(o2);
    e2e_done(&e);
}

/* tune's environment: TUNE_MAX_T is the number of epochs when --epochs is not given;
 * TUNE_CHECKPOINT_DIR gets one checkpoint file per epoch, each named in its result line;
 * --resume without TUNE_RESUME_FROM takes the newest of them. */
TEST(tune_environment)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 200, 50) == 0);
    char d[4096], own[4096], l[8192], want[8400];
    snprintf(d, sizeof d, "%s/ck", e.dir);
    snprintf(own, sizeof own, "%s/own", e.dir);
#define COMMON "--model", "mlp", "--hidden", "16", "--data", e.data, "--cache-dir", "none"
    const char *args[] = {COMMON, NULL};
    const char *args_epochs[] = {COMMON, "--epochs", "2", NULL};
    const char *args_resume[] = {COMMON, "--resume", NULL};
    const char *args_own[] = {COMMON, "--checkpoint-dir", own, NULL};
#undef COMMON
    const char *env3[] = {"TUNE_MAX_T", "3", "TUNE_CHECKPOINT_DIR", d, NULL};
    CHECK_EQ_INT(run_train(args, e.out, e.err, env3, 60), 0);
    char *o = slurp(e.out);
    for (int i = 1; i <= 4; i++) {
        nth_line(o, i, l, sizeof l);
        if (i == 4) {
            CHECK_STR(l, ""); /* 3 epochs */
            break;
        }
        snprintf(want, sizeof want, "\"checkpoint\": \"%s/checkpoint_%06d.bin\"}", d, i);
        CHECK_CONTAINS(l, want);
        /* the file named holds that iteration */
        char p[4300], err[512];
        snprintf(p, sizeof p, "%s/checkpoint_%06d.bin", d, i);
        train__ckpt_t c;
        int rd = train__ckpt_read(p, &c, err, sizeof err);
        CHECK_EQ_INT(rd, 0);
        if (rd == 0) {
            CHECK_EQ_INT(c.iteration, i);
            CHECK_EQ_INT(c.epoch, i);
            train__ckpt_clear(&c);
        }
    }
    free(o);
    /* --epochs wins */
    CHECK_EQ_INT(run_train(args_epochs, e.out, e.err, env3, 60), 0);
    o = slurp(e.out);
    CHECK_STR(nth_line(o, 3, l, sizeof l), "");
    CHECK_CONTAINS(nth_line(o, 2, l, sizeof l), "\"epoch\": 2,");
    free(o);
    /* a longer max_t and --resume: from the newest file of the folder, epoch 4 only */
    const char *env4[] = {"TUNE_MAX_T", "4", "TUNE_CHECKPOINT_DIR", d, NULL};
    CHECK_EQ_INT(run_train(args_resume, e.out, e.err, env4, 60), 0);
    o = slurp(e.out);
    nth_line(o, 1, l, sizeof l);
    snprintf(want, sizeof want,
             "\"resumed\": {\"from\": \"%s/checkpoint_000003.bin\", \"epoch\": 3", d);
    CHECK_CONTAINS(l, want);
    CHECK_CONTAINS(l, "\"training_iteration\": 4, \"epoch\": 4,");
    CHECK_CONTAINS(l, "\"changed\": {\"epochs\": [3, 4]}");
    CHECK_STR(nth_line(o, 2, l, sizeof l), "");
    free(o);
    /* TUNE_RESUME_FROM may name the folder: its newest checkpoint (now 4), nothing left;
     * and it resumes without --resume (tune sets it only for an attempt that must) */
    const char *env_dir[] = {"TUNE_MAX_T", "4", "TUNE_RESUME_FROM", d, NULL};
    CHECK_EQ_INT(run_train(args, e.out, e.err, env_dir, 60), 0);
    char *er = slurp(e.err);
    snprintf(want, sizeof want, "resumed from %s/checkpoint_000004.bin after epoch 4", d);
    CHECK_CONTAINS(er, want);
    CHECK_CONTAINS(er, "the checkpoint already has 4 epochs; nothing to do");
    free(er);
    /* --checkpoint-dir wins over TUNE_CHECKPOINT_DIR: one checkpoint.bin, replaced */
    const char *env2[] = {"TUNE_MAX_T", "2", "TUNE_CHECKPOINT_DIR", d, NULL};
    CHECK_EQ_INT(run_train(args_own, e.out, e.err, env2, 60), 0);
    o = slurp(e.out);
    snprintf(want, sizeof want, "\"checkpoint\": \"%s/checkpoint.bin\"}", own);
    CHECK_CONTAINS(nth_line(o, 2, l, sizeof l), want);
    free(o);
    /* a max_t that is no number of epochs (a time_attr in seconds, say): a warning */
    const char *envx[] = {"TUNE_MAX_T", "2.5", NULL};
    CHECK_EQ_INT(run_train(args, e.out, e.err, envx, 60), 0);
    er = slurp(e.err);
    CHECK_CONTAINS(er, "warning: $TUNE_MAX_T=2.5 is not a whole number of epochs (1 to 100000): "
                       "training for 2 epochs; give --epochs to choose");
    free(er);
    e2e_done(&e);
}

/* Result lines: JSON with every required key, one per --report-every steps plus the
 * epoch's end, flushed; progress only on stderr. */
TEST(result_lines)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 640, 100) == 0);
    const char *args[] = {"--model", "mlp",  "--epochs",    "2",    "--batch-size",   "64",
                          "--data",  e.data, "--cache-dir", "none", "--report-every", "4",
                          NULL};
    CHECK_EQ_INT(run_train(args, e.out, e.err, NULL, 60), 0);
    char *o = slurp(e.out);
    int lines = 0;
    for (char *l = strtok(o, "\n"); l; l = strtok(NULL, "\n")) {
        lines++;
        cJSON *j = NULL;
        CHECK_EQ_INT(trial_result_parse(l, strlen(l), &j), 1);
        const char *keys[] = {"training_iteration", "epoch",         "train_loss", "val_loss",
                              "val_accuracy",       "samples_per_s", "time_s"};
        for (int k = 0; k < 7; k++)
            CHECK(!isnan(trial_result_number(j, keys[k])));
        CHECK_NEAR(trial_result_number(j, "training_iteration"), lines, 0);
        cJSON_Delete(j);
    }
    CHECK_EQ_INT(lines, 6); /* 10 steps per epoch: after 4, 8 and 10 */
    char *er = slurp(e.err);
    CHECK_CONTAINS(er, "tune-train: mlp 784-256-256-10");
    CHECK_CONTAINS(er, "first training step after");
    free(o), free(er);
    e2e_done(&e);
}

/* Learning happens on the synthetic set (a sanity check that runs everywhere). */
TEST(learns_synthetic)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 2000, 500) == 0);
    const char *args[] = {"--model",     "cnn",  "--epochs", "1",      "--batch-size",
                          "32",          "--lr", "0.05",     "--data", e.data,
                          "--cache-dir", "none", "--ranks",  "2",      NULL};
    CHECK_EQ_INT(run_train(args, e.out, e.err, NULL, 60), 0);
    char *o = slurp(e.out);
    cJSON *j = NULL;
    CHECK_EQ_INT(trial_result_parse(o, strlen(o) - 1, &j), 1);
    CHECK(trial_result_number(j, "val_accuracy") > 0.9);
    cJSON_Delete(j);
    free(o);
    e2e_done(&e);
}

static int children_of(pid_t parent, pid_t *out, int max)
{
    int n = 0;
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d)) && n < max;) {
        char p[300], buf[512];
        snprintf(p, sizeof p, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        if (fgets(buf, sizeof buf, f)) {
            char *rp = strrchr(buf, ')');
            int ppid = 0;
            if (rp && sscanf(rp + 2, "%*c %d", &ppid) == 1 && ppid == parent)
                out[n++] = atoi(e->d_name);
        }
        fclose(f);
    }
    if (d) closedir(d);
    return n;
}

static int alive(pid_t p)
{
    return kill(p, 0) == 0;
}

/* Kill one rank mid-run: the launcher kills the others and exits non-zero, naming the
 * rank; no rank survives. Then SIGTERM to the launcher. Left alone the run would last
 * 1000 epochs: the case gives the launcher a minute (a bound on a hang, the time taken is
 * printed) instead of asserting that it took under some seconds. */
TEST(killed_rank_stops_everything)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 2000, 100) == 0);
    const char *args[] = {"--model",        "mlp", "--epochs", "1000", "--ranks",     "3",
                          "--batch-size",   "30",  "--data",   e.data, "--cache-dir", "none",
                          "--report-every", "5",   NULL};
    for (int variant = 0; variant < 2; variant++) {
        pid_t launcher = spawn_train(args, e.out, e.err, NULL);
        double t0 = e2e_mono();
        pid_t ranks[8];
        int n = 0;
        for (;;) { /* wait for training to be under way */
            char *o = slurp(e.out);
            int started = strchr(o, '\n') != NULL;
            free(o);
            if (started) n = children_of(launcher, ranks, 8);
            if ((started && n == 3) || e2e_mono() - t0 > 30) break;
            usleep(20000);
        }
        CHECK_EQ_INT(n, 3);
        double t1 = e2e_mono();
        if (variant == 0)
            kill(ranks[n > 1 ? 1 : 0], SIGKILL);
        else
            kill(launcher, SIGTERM);
        int st = wait_for(launcher, 60);
        double dt = e2e_mono() - t1;
        REQUIRE(st != -1);
        fprintf(stderr, "%s: the launcher ended %.2f s after\n",
                variant == 0 ? "a rank SIGKILLed" : "SIGTERM", dt);
        char *er = slurp(e.err);
        if (variant == 0) {
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
            CHECK_CONTAINS(er, "was killed by signal 9");
            CHECK_CONTAINS(er, "stopping the other ranks");
        } else {
            CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM);
            CHECK_CONTAINS(er, "stopping the ranks");
        }
        free(er);
        for (int i = 0; i < n; i++)
            CHECK(!alive(ranks[i]));
        kill(-launcher, SIGKILL); /* nothing should be left in its group either */
    }
    e2e_done(&e);
}

/* ---- worlds started by someone else: srun, a torchrun-style launcher (net.c) -------------- */

/* A TCP port nobody listens on right now (the kernel's pick; a small race is acceptable). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0) close(fd);
    return port;
}

/* 3 processes meet over TCP and run every collective; the all-reduce adds in rank order
 * (the bits ddp.c gives), broadcasts reach every rank from any root. */
TEST(net_collectives)
{
    enum { R = 3, N = 50000 };
    char port[16];
    snprintf(port, sizeof port, "%d", free_port());
    pid_t pids[R];
    for (int r = 0; r < R; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            train__net_env_t e = {.rank = r, .world = R, .addr = "127.0.0.1", .port = port};
            train__net_t *n;
            char err[512];
            if (train__net_open(&n, &e, 77, 20, err, sizeof err) != 0) {
                fprintf(stderr, "rank %d: %s\n", r, err);
                _exit(10);
            }
            int bad = 0;
            float *g = malloc(sizeof(float) * N);
            for (int step = 1; step <= 3; step++) {
                for (int i = 0; i < N; i++)
                    g[i] = (float)(r + 1) * 0.1f * step + (float)i * 1e-3f;
                if (train__net_allreduce(n, g, N, err, sizeof err) != 0) _exit(11);
                for (int i = 0; i < N; i++) {
                    float want = 0.1f * step + (float)i * 1e-3f;
                    for (int q = 1; q < R; q++)
                        want += (float)(q + 1) * 0.1f * step + (float)i * 1e-3f;
                    if (memcmp(&g[i], &want, sizeof want) != 0) bad++;
                }
                if (train__net_barrier(n, err, sizeof err) != 0) _exit(12);
            }
            double v[2] = {r, 1};
            if (train__net_sum(n, v, 2, err, sizeof err) != 0 || v[0] != 3 || v[1] != 3) _exit(13);
            for (int root = 0; root < R; root++) {
                float b[4] = {0};
                if (r == root) b[0] = 7.0f + root, b[3] = 9;
                if (train__net_bcast(n, b, sizeof b, root, err, sizeof err) != 0 ||
                    b[0] != 7.0f + root || b[3] != 9)
                    _exit(14);
            }
            int gone_early = train__net_peer_gone(n);
            train__net_barrier(n, err, sizeof err); /* nobody leaves before that check */
            /* rank 0 sees the others leave: what lets NCCL give up on a dead peer */
            int gone_late = 1;
            if (r == 0) {
                double t0 = e2e_mono();
                while (!(gone_late = train__net_peer_gone(n)) && e2e_mono() - t0 < 10)
                    usleep(10000);
            }
            free(g);
            train__net_free(n);
            _exit(bad ? 15 : gone_early ? 16 : !gone_late ? 17 : 0);
        }
    }
    for (int r = 0; r < R; r++) {
        int st = wait_for(pids[r], 60);
        CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st))
            fprintf(stderr, "rank %d status %d\n", r, st);
    }
}

/* Runs `world` processes of tune-train as ranks of one world (torchrun's variables, or
 * srun's when slurm is set), each with its own out/err files under dir; returns how many
 * exited 0. */
static int run_net_world(const char *dir, int world, int slurm, const char *const *args, int *codes)
{
    char port[16], rank[16], size[16], out[4096], errf[4096];
    snprintf(port, sizeof port, "%d", free_port());
    snprintf(size, sizeof size, "%d", world);
    pid_t pids[8];
    for (int r = 0; r < world; r++) {
        snprintf(rank, sizeof rank, "%d", r);
        snprintf(out, sizeof out, "%s/out%d", dir, r);
        snprintf(errf, sizeof errf, "%s/err%d", dir, r);
        const char *tenv[] = {"RANK",        rank,        "WORLD_SIZE",  size, "LOCAL_RANK", rank,
                              "MASTER_ADDR", "127.0.0.1", "MASTER_PORT", port, NULL};
        /* srun's: no MASTER_ADDR (one node: 127.0.0.1 is assumed) */
        const char *senv[] = {"SLURM_PROCID",
                              rank,
                              "SLURM_NTASKS",
                              size,
                              "SLURM_LOCALID",
                              rank,
                              "SLURM_NODEID",
                              "0",
                              "MASTER_PORT",
                              port,
                              NULL};
        pids[r] = spawn_train(args, out, errf, slurm ? senv : tenv);
    }
    int ok = 0;
    for (int r = 0; r < world; r++) {
        int st = wait_for(pids[r], 90);
        codes[r] = st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        ok += codes[r] == 0;
    }
    return ok;
}

/* N processes started from outside (as srun or torchrun start them) train exactly as N
 * ranks forked by tune-train --ranks N: the same result lines and bit-identical parameters
 * (the TCP all-reduce adds in the same rank order), hence also within 1e-5 of one rank;
 * with torchrun's variables (3 ranks) and srun's (2 ranks). */
static void net_world_case(int world, int slurm)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 960, 100) == 0);
    char ckn[4096], ckf[4096], ck1[4096], ranks[8];
    snprintf(ckn, sizeof ckn, "%s/net", e.dir);
    snprintf(ckf, sizeof ckf, "%s/forked", e.dir);
    snprintf(ck1, sizeof ck1, "%s/one", e.dir);
    snprintf(ranks, sizeof ranks, "%d", world);
#define COMMON                                                                                     \
    "--model", "mlp", "--epochs", "2", "--batch-size", "96", "--lr", "0.05", "--momentum", "0.9",  \
        "--seed", "3", "--data", e.data, "--cache-dir", "none", "--threads", "1",                  \
        "--report-every", "4", "--timeout", "30"
    const char *net_args[] = {COMMON, "--checkpoint-dir", ckn, NULL};
    const char *forked_args[] = {COMMON, "--checkpoint-dir", ckf, "--ranks", ranks, NULL};
    const char *one_args[] = {COMMON, "--checkpoint-dir", ck1, NULL};
#undef COMMON
    int codes[8];
    CHECK_EQ_INT(run_net_world(e.dir, world, slurm, net_args, codes), world);
    char path[4096];
    snprintf(path, sizeof path, "%s/err0", e.dir);
    char *er0 = slurp(path);
    CHECK_CONTAINS(er0, slurm ? "(a Slurm world over TCP)" : "(a torchrun-style world over TCP)");
    if (codes[0]) fprintf(stderr, "%s", er0);
    free(er0);
    snprintf(path, sizeof path, "%s/out0", e.dir);
    char *o_net = slurp(path);
    snprintf(path, sizeof path, "%s/out1", e.dir);
    char *o_1 = slurp(path);
    CHECK_STR(o_1, ""); /* only rank 0 reports */
    CHECK_EQ_INT(run_train(forked_args, e.out, e.err, NULL, 60), 0);
    char *o_forked = slurp(e.out);
    CHECK_EQ_INT(run_train(one_args, e.out, e.err, NULL, 60), 0);
    strip_timing(o_net);
    strip_timing(o_forked);
    CHECK_STR(o_net, o_forked);
    CHECK_CONTAINS(o_net, "\"training_iteration\": 6, \"epoch\": 2");
    size_t nn = 0, nf = 0, n1 = 0;
    float *pn = final_params(ckn, &nn), *pf = final_params(ckf, &nf), *p1 = final_params(ck1, &n1);
    REQUIRE(pn && pf && p1);
    CHECK_EQ_INT(nn, nf);
    CHECK_EQ_INT(nn, n1);
    CHECK(memcmp(pn, pf, nn * sizeof(float)) == 0);
    double md = 0;
    for (size_t i = 0; i < nn; i++)
        md = fmax(md, fabs(pn[i] - p1[i]));
    fprintf(stderr, "max |params(1 rank) - params(%d ranks over TCP)| = %.3g\n", world, md);
    CHECK(md < 1e-5 && md > 0); /* > 0: the ranks really summed partial gradients */
    free(pn), free(pf), free(p1), free(o_net), free(o_1), free(o_forked);
    e2e_done(&e);
}

TEST(net_world_equals_forked_ranks)
{
    net_world_case(3, 0);
}

TEST(slurm_world_equals_forked_ranks)
{
    net_world_case(2, 1);
}

/* A rank of a TCP world that dies (SIGKILL, as a lost node or the OOM killer would) ends
 * every other rank within seconds with a message naming it, whichever rank it was. */
TEST(net_world_rank_dies)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 960, 100) == 0);
    const char *args[] = {"--model",   "mlp",    "--epochs",       "1000",        "--batch-size",
                          "32",        "--data", e.data,           "--cache-dir", "none",
                          "--threads", "1",      "--report-every", "5",           NULL};
    for (int victim = 0; victim < 2; victim++) {
        char port[16], out[2][4096], errf[2][4096];
        snprintf(port, sizeof port, "%d", free_port());
        pid_t p[2];
        for (int r = 0; r < 2; r++) {
            const char *env[] = {"RANK",        r ? "1" : "0", "WORLD_SIZE", "2",
                                 "MASTER_PORT", port,          NULL};
            snprintf(out[r], sizeof out[r], "%s/out%d", e.dir, r);
            snprintf(errf[r], sizeof errf[r], "%s/err%d", e.dir, r);
            p[r] = spawn_train(args, out[r], errf[r], env);
        }
        double t0 = e2e_mono();
        for (;;) { /* wait for training to be under way */
            char *o = slurp(out[0]);
            int started = strchr(o, '\n') != NULL;
            free(o);
            if (started || e2e_mono() - t0 > 30) break;
            usleep(20000);
        }
        kill(p[victim], SIGKILL);
        double t1 = e2e_mono();
        /* a minute bounds a hang (the run is 1000 epochs); how long it took is printed */
        int st = wait_for(p[1 - victim], 60);
        fprintf(stderr, "rank %d SIGKILLed: the other ended %.2f s after\n", victim,
                e2e_mono() - t1);
        wait_for(p[victim], 10);
        REQUIRE(st != -1);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
        char *er = slurp(errf[1 - victim]);
        char want[64];
        snprintf(want, sizeof want, "lost the connection to rank %d", victim);
        CHECK_CONTAINS(er, want);
        CHECK_CONTAINS(er, "that rank has probably died");
        free(er);
    }
    e2e_done(&e);
}

/* Every message about the environment and the rendezvous. */
TEST(net_world_errors)
{
    struct e2e e;
    REQUIRE(e2e_setup(&e, 200, 20) == 0);
    char port[16];
    snprintf(port, sizeof port, "%d", free_port());
    const char *base[] = {"--data", e.data, "--cache-dir", "none", "--timeout", "1", NULL};
    struct {
        const char *env[12];
        int code;
        const char *msg;
    } cases[] = {
        {{"RANK", "0", "WORLD_SIZE", "2", NULL}, 2, "$MASTER_PORT is not set"},
        {{"RANK", "2", "WORLD_SIZE", "2", "MASTER_PORT", port, NULL},
         2,
         "$RANK must be a whole number between 0 and 1, got \"2\""},
        {{"RANK", "0", "WORLD_SIZE", "x", "MASTER_PORT", port, NULL}, 2, "$WORLD_SIZE must be"},
        {{"SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_NNODES", "2", "MASTER_PORT", port, NULL},
         2,
         "$MASTER_ADDR is not set: set it to rank 0's host name"},
        {{"SLURM_PROCID", "0", "SLURM_NTASKS", "3", "MASTER_PORT", port, NULL},
         2,
         "--batch-size 64 is not divisible by the 3 ranks of this Slurm world"},
        {{"SLURM_PROCID", "0", "SLURM_NTASKS", "4", "SLURM_STEP_NUM_TASKS", "2", "MASTER_PORT",
          port, NULL},
         2,
         "--train-limit 1 is smaller than the 2 ranks of this Slurm world"},
        {{"RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", port, NULL},
         1,
         "rank 0: only 1 of 2 ranks joined at 127.0.0.1:"},
        {{"RANK", "1", "WORLD_SIZE", "2", "MASTER_PORT", port, NULL},
         1,
         "rank 1: could not reach rank 0 at 127.0.0.1:"},
    };
    const char *limited[] = {"--data", e.data, "--train-limit", "1", NULL};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int lim = strstr(cases[i].msg, "--train-limit") != NULL;
        CHECK_EQ_INT(run_train(lim ? limited : base, e.out, e.err, cases[i].env, 30),
                     cases[i].code);
        char *er = slurp(e.err);
        CHECK_CONTAINS(er, cases[i].msg);
        free(er);
    }
    /* --ranks that contradicts the world */
    const char *r3[] = {"--data", e.data, "--ranks", "3", "--batch-size", "96", NULL};
    const char *env2[] = {"RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", port, NULL};
    CHECK_EQ_INT(run_train(r3, e.out, e.err, env2, 30), 2);
    char *er = slurp(e.err);
    CHECK_CONTAINS(er, "--ranks 3, but this is rank 0 of a 2-rank torchrun-style world");
    free(er);
    /* the port is taken by something else */
    int lfd = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = in6addr_any};
    int zero = 0;
    setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    int taken = free_port();
    a.sin6_port = htons((uint16_t)taken);
    if (lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 1) == 0) {
        char tp[16];
        snprintf(tp, sizeof tp, "%d", taken);
        const char *env3[] = {"RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", tp, NULL};
        CHECK_EQ_INT(run_train(base, e.out, e.err, env3, 30), 1);
        er = slurp(e.err);
        CHECK_CONTAINS(er, "cannot listen on $MASTER_PORT");
        free(er);
    }
    if (lfd >= 0) close(lfd);
    /* rank 0 refuses ranks that disagree with it, and says why on both sides */
    struct {
        const char *r1_world, *r1_rank, *r1_seed, *msg0, *msg1;
    } bad[] = {
        {"2", "1", "2", "rank 1 was started with other training options than rank 0",
         "rank 1: refused by rank 0: rank 1 was started with other training options"},
        {"3", "1", "1", "rank 1 says the world has 3 ranks, rank 0 says 2",
         "refused by rank 0: rank 1 says the world has 3 ranks"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(port, sizeof port, "%d", free_port());
        const char *a0[] = {"--data", e.data, "--cache-dir",  "none", "--timeout", "10",
                            "--seed", "1",    "--batch-size", "96",   NULL};
        const char *a1[] = {"--data", e.data,         "--cache-dir",  "none", "--timeout", "10",
                            "--seed", bad[i].r1_seed, "--batch-size", "96",   NULL};
        const char *e0[] = {"RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", port, NULL};
        const char *e1[] = {"RANK",        bad[i].r1_rank, "WORLD_SIZE", bad[i].r1_world,
                            "MASTER_PORT", port,           NULL};
        char out1[4096], err1[4096];
        snprintf(out1, sizeof out1, "%s/out1", e.dir);
        snprintf(err1, sizeof err1, "%s/err1", e.dir);
        pid_t p0 = spawn_train(a0, e.out, e.err, e0);
        pid_t p1 = spawn_train(a1, out1, err1, e1);
        int s0 = wait_for(p0, 30), s1 = wait_for(p1, 30);
        CHECK(s0 != -1 && WIFEXITED(s0) && WEXITSTATUS(s0) == 2);
        CHECK(s1 != -1 && WIFEXITED(s1) && WEXITSTATUS(s1) == 2);
        er = slurp(e.err);
        CHECK_CONTAINS(er, bad[i].msg0);
        free(er);
        er = slurp(err1);
        CHECK_CONTAINS(er, bad[i].msg1);
        free(er);
    }
    e2e_done(&e);
}

/* ---- learning on the real data (slow) ------------------------------------------------------ */

static void accuracy_case(const char *const *args, double want)
{
    if (access(TRAIN_DEFAULT_DATA_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0)
        SKIP("dataset-fashion-mnist is not installed");
    char *d = tmpdir();
    char out[4096], errf[4096];
    snprintf(out, sizeof out, "%s/out", d);
    snprintf(errf, sizeof errf, "%s/err", d);
    CHECK_EQ_INT(run_train(args, out, errf, NULL, 880), 0);
    char *o = slurp(out), *last = o;
    for (char *p = o; (p = strchr(p, '\n')) && p[1]; p++)
        last = p + 1;
    cJSON *j = NULL;
    CHECK_EQ_INT(trial_result_parse(last, strcspn(last, "\n"), &j), 1);
    double acc = trial_result_number(j, "val_accuracy");
    fprintf(stderr, "val_accuracy after 2 epochs: %.4f (want >= %.2f)\n%s", acc, want, o);
    CHECK(acc >= want);
    CHECK_NEAR(trial_result_number(j, "epoch"), 2, 0);
    cJSON_Delete(j);
    free(o);
    rm_rf(d);
    free(d);
}

TEST(mlp_accuracy)
{
    const char *args[] = {"--model",    "mlp",    "--epochs", "2",          "--batch-size",
                          "64",         "--lr",   "0.05",     "--momentum", "0.9",
                          "--schedule", "cosine", "--seed",   "0",          "--ranks",
                          "2",          NULL};
    accuracy_case(args, 0.85);
}

TEST(cnn_accuracy)
{
    const char *args[] = {"--model",    "cnn",    "--epochs", "2",          "--batch-size",
                          "64",         "--lr",   "0.05",     "--momentum", "0.9",
                          "--schedule", "cosine", "--seed",   "0",          "--ranks",
                          "2",          NULL};
    accuracy_case(args, 0.89);
}

TT_MAIN
