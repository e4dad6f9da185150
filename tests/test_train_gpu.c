/* test_train_gpu: tune-train's CUDA backend checked against the CPU backend, the oracle
 * (llm.c's dev/cuda habit): every op on the same inputs within a stated tolerance, a short
 * training run and the trainer's own models GPU vs CPU, bit-reproducibility on the GPU,
 * NCCL with one and two ranks (and a rank that dies), and the error messages.
 * Cases needing a GPU skip (exit 77) when cudaGetDeviceCount fails or finds none.
 * Not for: the CPU backend's own correctness (test_train) or timing (bench/train). */
#include "tinytest.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "train/backend.h"
#include "train/train_int.h"

/* ---- helpers ------------------------------------------------------------------------ */

static int gpu_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n;
}

#define NEED_GPU()                                                                                 \
    do {                                                                                           \
        if (gpu_count() <= 0) SKIP("no CUDA device (cudaGetDeviceCount failed or found none)");    \
    } while (0)

static const train_be_ops_t *const CPU = &train_be_cpu;
static const train_be_ops_t *const GPU = &train_be_cuda;

typedef struct pair {
    train_be_ctx_t *c, *g;
} pair_t;

static char g_err[512];

static int open_pair(pair_t *p)
{
    train_be_opts_t o = {.threads = 1, .rank = 0, .world = 1, .local_rank = 0};
    p->c = p->g = NULL; /* allow_tf32 = 0: the tolerances below are for FP32, not TF32 */
    if (CPU->open(&o, &p->c, g_err, sizeof g_err) != 0) {
        fprintf(stderr, "cpu open: %s\n", g_err);
        return 0;
    }
    if (GPU->open(&o, &p->g, g_err, sizeof g_err) != 0) {
        fprintf(stderr, "cuda open: %s\n", g_err);
        CPU->close(p->c);
        return 0;
    }
    return 1;
}

static void close_pair(pair_t *p)
{
    GPU->close(p->g);
    CPU->close(p->c);
}

/* Deterministic inputs (xorshift32), uniform in [lo, hi). */
static uint32_t rng_state = 12345;
static float frand(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}
static float *rand_vec(size_t n, float lo, float hi)
{
    float *v = malloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++)
        v[i] = frand(lo, hi);
    return v;
}
static float *abs_vec(const float *v, size_t n)
{
    float *a = malloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++)
        a[i] = fabsf(v[i]);
    return a;
}

/* Device copy of a host array (CPU backend: a plain copy). */
static void *dup_to(const train_be_ops_t *be, train_be_ctx_t *ctx, const void *host, size_t bytes)
{
    void *d = be->alloc(ctx, bytes ? bytes : 4);
    if (d && bytes) be->upload(ctx, d, host, bytes);
    return d;
}
static float *fetch(const train_be_ops_t *be, train_be_ctx_t *ctx, const void *dev, size_t bytes)
{
    float *h = malloc(bytes ? bytes : 4);
    if (be->download(ctx, h, dev, bytes, g_err, sizeof g_err) != 0) {
        fprintf(stderr, "%s download: %s\n", be->name, g_err);
        free(h);
        return NULL;
    }
    return h;
}

/* Counts elements where |got - want| > rtol * bound + atol. `bound` is the sum of absolute
 * values of the terms behind each element (the CPU op run on |inputs|), so the tolerance
 * follows the size of the sums rather than their cancelled result: any indexing mistake
 * is off by O(bound) and fails; a different summation order is off by ~k*eps*bound. */
static int mismatches(const char *what, const float *got, const float *want, const float *bound,
                      size_t n, double rtol, double atol)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = rtol * (bound ? fabs((double)bound[i]) : fabs((double)want[i])) + atol;
        double d = fabs((double)got[i] - (double)want[i]);
        if (!(d <= tol)) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu]: gpu %.9g cpu %.9g (|d| %.3g > tol %.3g)\n", what, i,
                        got[i], want[i], d, tol);
            bad++;
        }
    }
    if (bad) fprintf(stderr, "%s: %d of %zu elements out of tolerance\n", what, bad, n);
    return bad;
}

/* ---- without a device ----------------------------------------------------------------- */

/* Runs this test program again as `argv0 name` with `env` ("K=V", NULL-terminated) added:
 * a fresh process, so CUDA is never initialised before the environment is set nor used
 * across a fork. Returns the child's pid, or -1. */
static pid_t spawn_self(const char *name, char *const *env)
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    for (int i = 0; env[i]; i++)
        putenv(env[i]);
    execl("/proc/self/exe", "test_train_gpu", name, (char *)NULL);
    _exit(127);
}

static int wait_status(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Hidden case (registered by hand below, so ctest does not list it): runs in a process
 * whose CUDA_VISIBLE_DEVICES is "", with or without a driver. */
static void no_device_child(void)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v || *v) SKIP("no_device_child runs only under no_device_message");
    train_be_opts_t o = {.threads = 1, .rank = 0, .world = 1, .local_rank = 0};
    train_be_ctx_t *ctx = NULL;
    char err[512] = "";
    CHECK(GPU->open(&o, &ctx, err, sizeof err) < 0);
    CHECK(ctx == NULL);
    CHECK_CONTAINS(err, "--device cuda: no CUDA device is visible");
    CHECK_CONTAINS(err, "CUDA_VISIBLE_DEVICES=\"\"");
}

TEST(no_device_message)
{
    static char cvd[] = "CUDA_VISIBLE_DEVICES=";
    char *env[] = {cvd, NULL};
    pid_t pid = spawn_self("no_device_child", env);
    REQUIRE(pid > 0);
    CHECK_EQ_INT(wait_status(pid), 0);
}

TEST(registry_has_cuda)
{
    char err[256] = "";
    CHECK(train_be_find("cuda", err, sizeof err) == &train_be_cuda);
    CHECK_STR(train_be_cuda.name, "cuda");
    CHECK_EQ_INT(train_be_cuda.host_memory, 0);
    CHECK(train_be_cuda.comm_init != NULL && train_be_cuda.allreduce_sum != NULL);
}

/* ---- memory and errors ---------------------------------------------------------------- */

TEST(alloc_oom_message)
{
    NEED_GPU();
    train_be_opts_t o = {.threads = 1, .rank = 0, .world = 1, .local_rank = 0};
    train_be_ctx_t *g = NULL;
    char err[512] = "";
    REQUIRE(GPU->open(&o, &g, err, sizeof err) == 0);
    void *p = GPU->alloc(g, (size_t)1 << 50); /* 1 PiB */
    CHECK(p == NULL);
    CHECK(GPU->sync(g, err, sizeof err) < 0);
    CHECK_CONTAINS(err, "CUDA out of memory allocating 1073741824 MiB on GPU ");
    CHECK_CONTAINS(err, ": reduce --batch-size or use a larger slice");
    /* not fatal: reported once, and the context keeps working */
    CHECK_EQ_INT(GPU->sync(g, err, sizeof err), 0);
    float h[4] = {1, 2, 3, 4}, back[4] = {0};
    float *d = GPU->alloc(g, sizeof h);
    REQUIRE(d != NULL);
    GPU->upload(g, d, h, sizeof h);
    CHECK_EQ_INT(GPU->download(g, back, d, sizeof back, err, sizeof err), 0);
    CHECK(memcmp(h, back, sizeof h) == 0);
    GPU->free_mem(g, d);
    GPU->close(g);
}

TEST(memory_roundtrip)
{
    NEED_GPU();
    pair_t p;
    REQUIRE(open_pair(&p));
    /* alloc is zeroed; upload larger than one staging slot; copy and zero on device */
    size_t n = (9u << 20) / sizeof(float) + 3;
    float *h = rand_vec(n, -1, 1);
    float *d = GPU->alloc(p.g, n * sizeof(float));
    float *d2 = GPU->alloc(p.g, n * sizeof(float));
    REQUIRE(d && d2);
    float *z = fetch(GPU, p.g, d2, n * sizeof(float));
    REQUIRE(z);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++)
        nonzero += z[i] != 0.0f;
    CHECK_EQ_INT(nonzero, 0);
    GPU->upload(p.g, d, h, n * sizeof(float));
    memset(h, 0, 16); /* the host buffer may be reused at once */
    GPU->copy(p.g, d2, d, n * sizeof(float));
    GPU->zero(p.g, d2, 16);
    float *back = fetch(GPU, p.g, d2, n * sizeof(float));
    REQUIRE(back);
    CHECK(memcmp(back, h, n * sizeof(float)) == 0);
    free(h);
    free(z);
    free(back);
    GPU->free_mem(p.g, d);
    GPU->free_mem(p.g, d2);
    close_pair(&p);
}

/* ---- dense algebra -------------------------------------------------------------------- */

/* Both backends compute C = alpha op(A) op(B) + beta C; the bound is the CPU product of
 * the absolute values. Tolerance: 3e-5 of the bound (k <= 100 keeps k*eps below it). */
static int check_gemm(pair_t *p, int ta, int tb, int m, int n, int k, float alpha, float beta)
{
    int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
    size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb, nc = (size_t)m * ldc;
    float *a = rand_vec(na, -1, 1), *b = rand_vec(nb, -1, 1), *c = rand_vec(nc, -1, 1);
    float *aa = abs_vec(a, na), *ab = abs_vec(b, nb), *ac = abs_vec(c, nc);
    if (beta == 0.0f)
        for (size_t i = 0; i < nc; i++)
            c[i] = NAN; /* beta == 0: C must not be read */
    float *cc = malloc(nc * sizeof(float)), *bound = malloc(nc * sizeof(float));
    memcpy(cc, c, nc * sizeof(float));
    memcpy(bound, ac, nc * sizeof(float));
    CPU->gemm(p->c, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc);
    CPU->gemm(p->c, ta, tb, m, n, k, fabsf(alpha), aa, lda, ab, ldb, fabsf(beta), bound, ldc);
    float *da = dup_to(GPU, p->g, a, na * 4), *db = dup_to(GPU, p->g, b, nb * 4);
    float *dc = dup_to(GPU, p->g, c, nc * 4);
    GPU->gemm(p->g, ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc);
    float *got = fetch(GPU, p->g, dc, nc * 4);
    int bad = 1;
    if (got) {
        char what[64];
        snprintf(what, sizeof what, "gemm ta=%d tb=%d beta=%g", ta, tb, beta);
        /* compare only the m x n window; the ldc padding must stay untouched */
        bad = 0;
        for (int i = 0; i < m; i++)
            bad += mismatches(what, got + (size_t)i * ldc, cc + (size_t)i * ldc,
                              bound + (size_t)i * ldc, (size_t)n, 3e-5, 1e-6);
        for (int i = 0; i < m; i++)
            for (int j = n; j < ldc; j++)
                if (memcmp(&got[(size_t)i * ldc + j], &c[(size_t)i * ldc + j], 4) != 0) bad++;
    }
    GPU->free_mem(p->g, da);
    GPU->free_mem(p->g, db);
    GPU->free_mem(p->g, dc);
    free(a), free(b), free(c), free(aa), free(ab), free(ac), free(cc), free(bound), free(got);
    return bad;
}

TEST(gemm_matches_cpu)
{
    NEED_GPU();
    pair_t p;
    REQUIRE(open_pair(&p));
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            CHECK_EQ_INT(check_gemm(&p, ta, tb, 37, 53, 29, 1.0f, 0.0f), 0);
            CHECK_EQ_INT(check_gemm(&p, ta, tb, 64, 10, 97, 0.5f, 1.0f), 0);
            CHECK_EQ_INT(check_gemm(&p, ta, tb, 1, 7, 3, -2.0f, 0.25f), 0);
        }
    CHECK_EQ_INT(GPU->sync(p.g, g_err, sizeof g_err), 0);
    close_pair(&p);
}

TEST(elementwise_match_cpu)
{
    NEED_GPU();
    pair_t p;
    REQUIRE(open_pair(&p));
    int rows = 67, cols = 45;
    size_t n = (size_t)rows * cols;
    float *y = rand_vec(n, -1, 1), *bias = rand_vec((size_t)cols, -0.5f, 0.5f);
    float *dy = rand_vec(n, -1, 1);
    float *ay = abs_vec(y, n);
    for (int act = 0; act < 2; act++) {
        float *cy = malloc(n * 4);
        memcpy(cy, y, n * 4);
        CPU->bias_act(p.c, cy, bias, rows, cols, act);
        float *gy = dup_to(GPU, p.g, y, n * 4), *gb = dup_to(GPU, p.g, bias, (size_t)cols * 4);
        GPU->bias_act(p.g, gy, gb, rows, cols, act);
        float *got = fetch(GPU, p.g, gy, n * 4);
        REQUIRE(got);
        /* one float add and a compare: bit-identical */
        CHECK(memcmp(got, cy, n * 4) == 0);
        if (act == TRAIN_BE_ACT_RELU) {
            float *cdx = malloc(n * 4);
            CPU->relu_backward(p.c, cy, dy, cdx, n);
            float *gdy = dup_to(GPU, p.g, dy, n * 4);
            GPU->relu_backward(p.g, gy, gdy, gdy, n); /* dx may alias dy */
            float *gdx = fetch(GPU, p.g, gdy, n * 4);
            REQUIRE(gdx);
            CHECK(memcmp(gdx, cdx, n * 4) == 0);
            GPU->free_mem(p.g, gdy);
            free(cdx), free(gdx);
        }
        GPU->free_mem(p.g, gy);
        GPU->free_mem(p.g, gb);
        free(cy), free(got);
    }
    /* sum_rows: bound = column sums of |x| */
    float *cs = malloc((size_t)cols * 4), *bs = malloc((size_t)cols * 4);
    CPU->sum_rows(p.c, y, rows, cols, cs);
    CPU->sum_rows(p.c, ay, rows, cols, bs);
    float *gx = dup_to(GPU, p.g, y, n * 4), *gs = GPU->alloc(p.g, (size_t)cols * 4);
    GPU->sum_rows(p.g, gx, rows, cols, gs);
    float *got = fetch(GPU, p.g, gs, (size_t)cols * 4);
    REQUIRE(got);
    CHECK_EQ_INT(mismatches("sum_rows", got, cs, bs, (size_t)cols, 1e-5, 1e-7), 0);
    /* scale: one multiply, bit-identical */
    float *cx = malloc(n * 4);
    memcpy(cx, y, n * 4);
    CPU->scale(p.c, cx, n, 0.37f);
    GPU->scale(p.g, gx, n, 0.37f);
    float *gsc = fetch(GPU, p.g, gx, n * 4);
    REQUIRE(gsc);
    CHECK(memcmp(gsc, cx, n * 4) == 0);
    GPU->free_mem(p.g, gx);
    GPU->free_mem(p.g, gs);
    free(y), free(bias), free(dy), free(ay), free(cs), free(bs), free(got), free(cx), free(gsc);
    close_pair(&p);
}

/* ---- convolution ---------------------------------------------------------------------- */

/* Forward and backward of one shape on both backends, at the plan's max_n and at a
 * smaller batch (the per-batch-size path of the CUDA plan). Tolerance: 2e-4 of the
 * |x|,|w|,|dy| bound: dW sums n*oh*ow products and cuDNN picks its own order. */
static int check_conv(pair_t *p, int max_n, int c, int h, int w, int k, int kh, int kw, int stride,
                      int pad, int act)
{
    train_be_conv_shape_t s = {.max_n = max_n,
                               .c = c,
                               .h = h,
                               .w = w,
                               .k = k,
                               .kh = kh,
                               .kw = kw,
                               .stride = stride,
                               .pad = pad};
    s.oh = (h + 2 * pad - kh) / stride + 1;
    s.ow = (w + 2 * pad - kw) / stride + 1;
    train_be_conv_t *cp = CPU->conv_plan(p->c, &s), *gp = GPU->conv_plan(p->g, &s);
    if (!cp || !gp) {
        GPU->sync(p->g, g_err, sizeof g_err);
        fprintf(stderr, "conv_plan failed: %s\n", g_err);
        return 1;
    }
    size_t nx = (size_t)max_n * c * h * w, nw = (size_t)k * c * kh * kw;
    size_t ny = (size_t)max_n * k * s.oh * s.ow;
    float *x = rand_vec(nx, -1, 1), *wt = rand_vec(nw, -1, 1), *b = rand_vec((size_t)k, -1, 1);
    float *dy = rand_vec(ny, -1, 1);
    float *ax = abs_vec(x, nx), *aw = abs_vec(wt, nw), *ab = abs_vec(b, (size_t)k);
    float *ady = abs_vec(dy, ny);
    float *gx = dup_to(GPU, p->g, x, nx * 4), *gw = dup_to(GPU, p->g, wt, nw * 4);
    float *gb = dup_to(GPU, p->g, b, (size_t)k * 4), *gdy = dup_to(GPU, p->g, dy, ny * 4);
    float *gy = GPU->alloc(p->g, ny * 4), *gdx = GPU->alloc(p->g, nx * 4);
    float *gdw = GPU->alloc(p->g, nw * 4), *gdb = GPU->alloc(p->g, (size_t)k * 4);
    float *cy = malloc(ny * 4), *by = malloc(ny * 4), *cdx = malloc(nx * 4), *bdx = malloc(nx * 4);
    float *cdw = malloc(nw * 4), *bdw = malloc(nw * 4), *cdb = malloc((size_t)k * 4);
    float *bdb = malloc((size_t)k * 4);
    int bad = 0;
    int sizes[2] = {max_n, max_n > 1 ? max_n / 2 + 1 : 1};
    for (int si = 0; si < 2; si++) {
        int n = sizes[si];
        size_t vy = (size_t)n * k * s.oh * s.ow, vx = (size_t)n * c * h * w;
        CPU->conv_forward(p->c, cp, n, x, wt, b, cy, act);
        CPU->conv_forward(p->c, cp, n, ax, aw, ab, by, TRAIN_BE_ACT_NONE);
        CPU->conv_backward(p->c, cp, n, x, wt, dy, cdx, cdw, cdb);
        CPU->conv_backward(p->c, cp, n, ax, aw, ady, bdx, bdw, bdb);
        GPU->conv_forward(p->g, gp, n, gx, gw, gb, gy, act);
        GPU->conv_backward(p->g, gp, n, gx, gw, gdy, gdx, gdw, gdb);
        float *ry = fetch(GPU, p->g, gy, vy * 4), *rdx = fetch(GPU, p->g, gdx, vx * 4);
        float *rdw = fetch(GPU, p->g, gdw, nw * 4), *rdb = fetch(GPU, p->g, gdb, (size_t)k * 4);
        if (!ry || !rdx || !rdw || !rdb) {
            bad++;
        } else {
            bad += mismatches("conv y", ry, cy, by, vy, 2e-4, 1e-6);
            bad += mismatches("conv dx", rdx, cdx, bdx, vx, 2e-4, 1e-6);
            bad += mismatches("conv dw", rdw, cdw, bdw, nw, 2e-4, 1e-6);
            bad += mismatches("conv dbias", rdb, cdb, bdb, (size_t)k, 2e-4, 1e-6);
        }
        free(ry), free(rdx), free(rdw), free(rdb);
    }
    /* dx == NULL skips the data gradient but still writes dw */
    GPU->zero(p->g, gdw, nw * 4);
    GPU->conv_backward(p->g, gp, max_n, gx, gw, gdy, NULL, gdw, gdb);
    CPU->conv_backward(p->c, cp, max_n, x, wt, dy, cdx, cdw, cdb);
    CPU->conv_backward(p->c, cp, max_n, ax, aw, ady, bdx, bdw, bdb);
    float *rdw = fetch(GPU, p->g, gdw, nw * 4);
    bad += rdw ? mismatches("conv dw (no dx)", rdw, cdw, bdw, nw, 2e-4, 1e-6) : 1;
    free(rdw);
    GPU->conv_free(p->g, gp);
    CPU->conv_free(p->c, cp);
    float *gbufs[] = {gx, gw, gb, gdy, gy, gdx, gdw, gdb};
    for (size_t i = 0; i < sizeof gbufs / sizeof gbufs[0]; i++)
        GPU->free_mem(p->g, gbufs[i]);
    float *hbufs[] = {x, wt, b, dy, ax, aw, ab, ady, cy, by, cdx, bdx, cdw, bdw, cdb, bdb};
    for (size_t i = 0; i < sizeof hbufs / sizeof hbufs[0]; i++)
        free(hbufs[i]);
    if (bad)
        fprintf(stderr, "conv n=%d c=%d %dx%d k=%d %dx%d stride %d pad %d act %d: %d bad\n", max_n,
                c, h, w, k, kh, kw, stride, pad, act, bad);
    return bad;
}

TEST(conv_matches_cpu)
{
    NEED_GPU();
    pair_t p;
    REQUIRE(open_pair(&p));
    CHECK_EQ_INT(check_conv(&p, 8, 1, 28, 28, 8, 3, 3, 1, 1, TRAIN_BE_ACT_RELU), 0);
    CHECK_EQ_INT(check_conv(&p, 5, 8, 14, 14, 16, 5, 5, 1, 2, TRAIN_BE_ACT_NONE), 0);
    CHECK_EQ_INT(check_conv(&p, 3, 3, 13, 11, 4, 3, 2, 2, 0, TRAIN_BE_ACT_RELU), 0);
    CHECK_EQ_INT(check_conv(&p, 1, 2, 7, 7, 3, 1, 1, 1, 0, TRAIN_BE_ACT_NONE), 0);
    CHECK_EQ_INT(GPU->sync(p.g, g_err, sizeof g_err), 0);
    close_pair(&p);
}

/* ---- pooling -------------------------------------------------------------------------- */

TEST(maxpool_matches_cpu)
{
    NEED_GPU();
    pair_t p;
    REQUIRE(open_pair(&p));
    /* odd sizes (floor drops the last row/column) and values from a small set, so windows
     * hold ties and the "first maximum" rule is exercised */
    int n = 3, c = 4, h = 13, w = 9, k = 2, oh = h / k, ow = w / k;
    size_t nx = (size_t)n * c * h * w, ny = (size_t)n * c * oh * ow;
    float *x = malloc(nx * 4), *dy = rand_vec(ny, -1, 1);
    for (size_t i = 0; i < nx; i++)
        x[i] = (float)(int)frand(0, 4);
    float *cy = malloc(ny * 4), *cdx = malloc(nx * 4);
    int32_t *cam = malloc(ny * 4);
    CPU->maxpool_forward(p.c, n, c, h, w, k, x, cy, cam);
    CPU->maxpool_backward(p.c, n, c, h, w, k, dy, cam, cdx);
    float *gx = dup_to(GPU, p.g, x, nx * 4), *gdy = dup_to(GPU, p.g, dy, ny * 4);
    float *gy = GPU->alloc(p.g, ny * 4), *gdx = GPU->alloc(p.g, nx * 4);
    int32_t *gam = GPU->alloc(p.g, ny * 4);
    GPU->maxpool_forward(p.g, n, c, h, w, k, gx, gy, gam);
    GPU->maxpool_backward(p.g, n, c, h, w, k, gdy, gam, gdx);
    float *ry = fetch(GPU, p.g, gy, ny * 4), *rdx = fetch(GPU, p.g, gdx, nx * 4);
    int32_t *ram = (int32_t *)fetch(GPU, p.g, gam, ny * 4);
    REQUIRE(ry && rdx && ram);
    CHECK(memcmp(ry, cy, ny * 4) == 0);
    CHECK(memcmp(ram, cam, ny * 4) == 0);
    CHECK(memcmp(rdx, cdx, nx * 4) == 0);
    GPU->free_mem(p.g, gx), GPU->free_mem(p.g, gdy), GPU->free_mem(p.g, gy);
    GPU->free_mem(p.g, gdx), GPU->free_mem(p.g, gam);
    free(x), free(dy), free(cy), free(cdx), free(cam), free(ry), free(rdx), free(ram);
    close_pair(&p);
}

/* ---- data and loss -------------------------------------------------------------------- */

TEST(load_batch_matches_cpu)
{
    NEED_GPU();
    pair_t p;
    REQUIRE(open_pair(&p));
    int total = 50, dim = 784, n = 17;
    uint8_t *img = malloc((size_t)total * dim), *lab = malloc((size_t)total);
    for (size_t i = 0; i < (size_t)total * dim; i++)
        img[i] = (uint8_t)frand(0, 256);
    for (int i = 0; i < total; i++)
        lab[i] = (uint8_t)(i % 10);
    int32_t idx[17];
    for (int i = 0; i < n; i++)
        idx[i] = (i * 7 + 3) % total;
    float *cx = malloc((size_t)n * dim * 4);
    int32_t cy[17];
    CPU->load_batch(p.c, img, lab, idx, n, dim, 0.2860f, 0.3530f, cx, cy);
    uint8_t *gimg = dup_to(GPU, p.g, img, (size_t)total * dim);
    uint8_t *glab = dup_to(GPU, p.g, lab, (size_t)total);
    float *gx = GPU->alloc(p.g, (size_t)n * dim * 4);
    int32_t *gy = GPU->alloc(p.g, (size_t)n * 4);
    GPU->load_batch(p.g, gimg, glab, idx, n, dim, 0.2860f, 0.3530f, gx, gy);
    for (int i = 0; i < n; i++)
        idx[i] = -1; /* idx is read before load_batch returns */
    float *rx = fetch(GPU, p.g, gx, (size_t)n * dim * 4);
    int32_t *ry = (int32_t *)fetch(GPU, p.g, gy, (size_t)n * 4);
    REQUIRE(rx && ry);
    CHECK(memcmp(rx, cx, (size_t)n * dim * 4) == 0); /* same float formula: same bits */
    CHECK(memcmp(ry, cy, (size_t)n * 4) == 0);
    GPU->free_mem(p.g, gimg), GPU->free_mem(p.g, glab), GPU->free_mem(p.g, gx);
    GPU->free_mem(p.g, gy);
    free(img), free(lab), free(cx), free(rx), free(ry);
    close_pair(&p);
}

TEST(softmax_xent_matches_cpu)
{
    NEED_GPU();
    pair_t p;
    REQUIRE(open_pair(&p));
    /* 10 classes (Fashion-MNIST) and 45 (more than a warp's 32 lanes); large logits
     * check the max subtraction */
    int shapes[2][2] = {{33, 10}, {70, 45}};
    for (int si = 0; si < 2; si++) {
        int n = shapes[si][0], cl = shapes[si][1];
        size_t nl = (size_t)n * cl;
        float *l = rand_vec(nl, -8, 8);
        l[3] = 90.0f;
        int32_t *y = malloc((size_t)n * 4);
        for (int i = 0; i < n; i++)
            y[i] = (int32_t)frand(0, (float)cl);
        y[0] = 3; /* sample 0 predicts its label: at least one hit */
        double cst[2] = {1.5, 2.0}, gst[2];
        float *cd = malloc(nl * 4);
        CPU->softmax_xent(p.c, l, y, n, cl, 1.0f / n, cd, cst);
        float *gl = dup_to(GPU, p.g, l, nl * 4);
        int32_t *gy = dup_to(GPU, p.g, y, (size_t)n * 4);
        float *gd = GPU->alloc(p.g, nl * 4);
        double init[2] = {1.5, 2.0};
        double *gs = dup_to(GPU, p.g, init, sizeof init);
        GPU->softmax_xent(p.g, gl, gy, n, cl, 1.0f / n, gd, gs);
        GPU->softmax_xent(p.g, gl, gy, n, cl, 1.0f / n, NULL, gs); /* accumulates again */
        float *rd = fetch(GPU, p.g, gd, nl * 4);
        REQUIRE(rd);
        REQUIRE(GPU->download(p.g, gst, gs, sizeof gst, g_err, sizeof g_err) == 0);
        double loss1 = cst[0] - 1.5, hits1 = cst[1] - 2.0;
        CHECK(loss1 > 0);
        CHECK(hits1 >= 1);
        CHECK_NEAR(gst[0], 1.5 + 2 * loss1, 1e-5 * loss1);
        CHECK_NEAR(gst[1], 2.0 + 2 * hits1, 0.0);
        CHECK_EQ_INT(mismatches("dlogits", rd, cd, NULL, nl, 1e-5, 1e-7), 0);
        GPU->free_mem(p.g, gl), GPU->free_mem(p.g, gy), GPU->free_mem(p.g, gd);
        GPU->free_mem(p.g, gs);
        free(l), free(y), free(cd), free(rd);
    }
    close_pair(&p);
}

/* ---- optimisers ----------------------------------------------------------------------- */

TEST(optimisers_match_cpu)
{
    NEED_GPU();
    pair_t p;
    REQUIRE(open_pair(&p));
    size_t n = 1000;
    float *p0 = rand_vec(n, -1, 1);
    /* {momentum, weight decay, nesterov}: plain, momentum, nesterov with decay */
    float sgd_cfg[3][3] = {{0, 0, 0}, {0.9f, 0, 0}, {0.9f, 1e-2f, 1}};
    for (int ci = 0; ci < 4; ci++) {
        float *cp = malloc(n * 4), *cb = calloc(n, 4), *cv = calloc(n, 4);
        memcpy(cp, p0, n * 4);
        float *gp = dup_to(GPU, p.g, p0, n * 4), *gb = GPU->alloc(p.g, n * 4);
        float *gv = GPU->alloc(p.g, n * 4), *gg = GPU->alloc(p.g, n * 4);
        for (int step = 1; step <= 5; step++) {
            float *grad = rand_vec(n, -1, 1);
            GPU->upload(p.g, gg, grad, n * 4);
            if (ci < 3) {
                CPU->sgd_step(p.c, cp, grad, cb, n, 0.1f, sgd_cfg[ci][0], sgd_cfg[ci][1],
                              (int)sgd_cfg[ci][2]);
                GPU->sgd_step(p.g, gp, gg, gb, n, 0.1f, sgd_cfg[ci][0], sgd_cfg[ci][1],
                              (int)sgd_cfg[ci][2]);
            } else {
                float bc1 = 1.0f - powf(0.9f, (float)step), bc2 = 1.0f - powf(0.999f, (float)step);
                CPU->adam_step(p.c, cp, grad, cb, cv, n, 1e-2f, 0.9f, 0.999f, 1e-8f, 1e-4f, bc1,
                               bc2);
                GPU->adam_step(p.g, gp, gg, gb, gv, n, 1e-2f, 0.9f, 0.999f, 1e-8f, 1e-4f, bc1, bc2);
            }
            free(grad);
        }
        float *rp = fetch(GPU, p.g, gp, n * 4), *rb = fetch(GPU, p.g, gb, n * 4);
        REQUIRE(rp && rb);
        /* elementwise: only FMA contraction on the GPU differs, a few ulps over 5 steps */
        char what[32];
        snprintf(what, sizeof what, "optimiser %d param", ci);
        CHECK_EQ_INT(mismatches(what, rp, cp, NULL, n, 1e-5, 1e-6), 0);
        snprintf(what, sizeof what, "optimiser %d state", ci);
        CHECK_EQ_INT(mismatches(what, rb, cb, NULL, n, 1e-5, 1e-6), 0);
        GPU->free_mem(p.g, gp), GPU->free_mem(p.g, gb), GPU->free_mem(p.g, gv);
        GPU->free_mem(p.g, gg);
        free(cp), free(cb), free(cv), free(rp), free(rb);
    }
    free(p0);
    close_pair(&p);
}

/* ---- a short training run ---------------------------------------------------------------
 * conv 1->4 3x3 pad 1 + ReLU, 2x2 max pool, linear 144->10, softmax cross-entropy, SGD
 * with momentum, on synthetic 12x12 images whose label depends on where the bright blob
 * is. Written once over the ops table, so CPU and GPU run the same program. When `ar` is
 * set, the gradients are all-reduced per layer as soon as they exist (bucketed, like
 * DDP), so the linear layer's all-reduce overlaps the convolution's backward. */
#define TR_N 64
#define TR_B 16
#define TR_STEPS 12
#define TR_DIM 144
#define TR_NP (4 * 9 + 4 + 10 * TR_DIM + 10)

static void make_data(uint8_t *img, uint8_t *lab)
{
    uint32_t save = rng_state;
    rng_state = 777;
    for (int i = 0; i < TR_N; i++) {
        int cls = i % 10, cy = 2 + (cls / 5) * 6, cx = 1 + (cls % 5) * 2;
        for (int r = 0; r < 12; r++)
            for (int c = 0; c < 12; c++) {
                int near = abs(r - cy) <= 1 && abs(c - cx) <= 1;
                img[i * TR_DIM + r * 12 + c] = (uint8_t)(near ? 200 + frand(0, 55) : frand(0, 60));
            }
        lab[i] = (uint8_t)cls;
    }
    rng_state = save;
}

/* Runs the training; losses[TR_STEPS] and params[TR_NP] out. Returns 0 or -1. */
static int train_run(const train_be_ops_t *be, train_be_ctx_t *ctx, int ar, float *losses,
                     float *params_out)
{
    uint8_t img[TR_N * TR_DIM], lab[TR_N];
    make_data(img, lab);
    float init[TR_NP];
    uint32_t save = rng_state;
    rng_state = 4242;
    for (int i = 0; i < TR_NP; i++)
        init[i] = frand(-0.2f, 0.2f);
    rng_state = save;
    train_be_conv_shape_t s = {.max_n = TR_B,
                               .c = 1,
                               .h = 12,
                               .w = 12,
                               .k = 4,
                               .kh = 3,
                               .kw = 3,
                               .stride = 1,
                               .pad = 1,
                               .oh = 12,
                               .ow = 12};
    uint8_t *dimg = dup_to(be, ctx, img, sizeof img), *dlab = dup_to(be, ctx, lab, sizeof lab);
    float *par = dup_to(be, ctx, init, sizeof init);
    float *grad = be->alloc(ctx, sizeof init), *mom = be->alloc(ctx, sizeof init);
    float *x = be->alloc(ctx, TR_B * TR_DIM * 4), *h1 = be->alloc(ctx, TR_B * 4 * TR_DIM * 4);
    float *h2 = be->alloc(ctx, TR_B * 4 * 36 * 4), *lg = be->alloc(ctx, TR_B * 10 * 4);
    float *dh2 = be->alloc(ctx, TR_B * 4 * 36 * 4), *dh1 = be->alloc(ctx, TR_B * 4 * TR_DIM * 4);
    float *dlg = be->alloc(ctx, TR_B * 10 * 4);
    int32_t *am = be->alloc(ctx, TR_B * 4 * 36 * 4), *y = be->alloc(ctx, TR_B * 4);
    double *st = be->alloc(ctx, 2 * sizeof(double));
    train_be_conv_t *plan = be->conv_plan(ctx, &s);
    int rc = -1;
    if (!plan || !st) goto done;
    float *cw = par, *cb = par + 36, *lw = par + 40, *lb = par + 40 + 10 * TR_DIM;
    float *gcw = grad, *gcb = grad + 36, *glw = grad + 40, *glb = grad + 40 + 10 * TR_DIM;
    for (int step = 0; step < TR_STEPS; step++) {
        int32_t idx[TR_B];
        for (int i = 0; i < TR_B; i++)
            idx[i] = (step * TR_B + i * 5) % TR_N;
        be->zero(ctx, st, 2 * sizeof(double));
        be->load_batch(ctx, dimg, dlab, idx, TR_B, TR_DIM, 0.3f, 0.3f, x, y);
        be->conv_forward(ctx, plan, TR_B, x, cw, cb, h1, TRAIN_BE_ACT_RELU);
        be->maxpool_forward(ctx, TR_B, 4, 12, 12, 2, h1, h2, am);
        /* h2 is [B][4*6*6] = [B][144] as the linear layer's input */
        be->gemm(ctx, 0, 1, TR_B, 10, TR_DIM, 1.0f, h2, TR_DIM, lw, TR_DIM, 0.0f, lg, 10);
        be->bias_act(ctx, lg, lb, TR_B, 10, TRAIN_BE_ACT_NONE);
        be->softmax_xent(ctx, lg, y, TR_B, 10, 1.0f / TR_B, dlg, st);
        be->gemm(ctx, 1, 0, 10, TR_DIM, TR_B, 1.0f, dlg, 10, h2, TR_DIM, 0.0f, glw, TR_DIM);
        be->sum_rows(ctx, dlg, TR_B, 10, glb);
        if (ar) be->allreduce_sum(ctx, glw, 10 * TR_DIM + 10); /* bucket 1: linear */
        be->gemm(ctx, 0, 0, TR_B, TR_DIM, 10, 1.0f, dlg, 10, lw, TR_DIM, 0.0f, dh2, TR_DIM);
        be->maxpool_backward(ctx, TR_B, 4, 12, 12, 2, dh2, am, dh1);
        be->relu_backward(ctx, h1, dh1, dh1, (size_t)TR_B * 4 * TR_DIM);
        be->conv_backward(ctx, plan, TR_B, x, cw, dh1, NULL, gcw, gcb);
        if (ar) be->allreduce_sum(ctx, gcw, 40); /* bucket 2: convolution */
        be->sgd_step(ctx, par, grad, mom, TR_NP, 0.05f, 0.9f, 0.0f, 0);
        double hs[2];
        if (be->download(ctx, hs, st, sizeof hs, g_err, sizeof g_err) != 0) goto done;
        losses[step] = (float)(hs[0] / TR_B);
    }
    if (be->download(ctx, params_out, par, sizeof init, g_err, sizeof g_err) != 0) goto done;
    rc = be->sync(ctx, g_err, sizeof g_err);
done:
    if (rc != 0) fprintf(stderr, "%s training run: %s\n", be->name, g_err);
    be->conv_free(ctx, plan);
    void *bufs[] = {dimg, dlab, par, grad, mom, x, h1, h2, lg, dh2, dh1, dlg, am, y, st};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        be->free_mem(ctx, bufs[i]);
    return rc;
}

static int bcast_self(void *ud, void *buf, size_t len, int root, char *err, size_t errlen)
{
    (void)ud, (void)buf, (void)len, (void)root, (void)err, (void)errlen;
    return 0; /* one rank: it already holds what it would broadcast */
}

TEST(training_run_matches_cpu)
{
    NEED_GPU();
    pair_t p;
    REQUIRE(open_pair(&p));
    float cl[TR_STEPS], gl[TR_STEPS], gl2[TR_STEPS];
    static float cpar[TR_NP], gpar[TR_NP], gpar2[TR_NP];
    REQUIRE(train_run(CPU, p.c, 0, cl, cpar) == 0);
    REQUIRE(train_run(GPU, p.g, 0, gl, gpar) == 0);
    CHECK(cl[TR_STEPS - 1] < cl[0]); /* it learns */
    /* loss within 1e-3 relative per step; parameters within 1e-4 + 1e-3 relative */
    CHECK_EQ_INT(mismatches("training loss", gl, cl, NULL, TR_STEPS, 1e-3, 1e-6), 0);
    CHECK_EQ_INT(mismatches("trained params", gpar, cpar, NULL, TR_NP, 1e-3, 1e-4), 0);
    /* the GPU run is bit-reproducible (resume depends on it), and all-reducing over one
     * rank through NCCL changes nothing */
    REQUIRE(GPU->comm_init(p.g, 0, 1, bcast_self, NULL, g_err, sizeof g_err) == 0);
    REQUIRE(train_run(GPU, p.g, 1, gl2, gpar2) == 0);
    CHECK(memcmp(gl, gl2, sizeof gl) == 0);
    CHECK(memcmp(gpar, gpar2, sizeof gpar) == 0);
    close_pair(&p);
}

/* ---- the trainer's own model (model.c) on both backends --------------------------------
 * The real mlp and cnn, PyTorch-initialised, trained for a few SGD steps on synthetic
 * 28x28 images. Compared: the first step's gradients (relative L2 error of the whole
 * vector) and every step's mean loss. The mlp must agree to 1e-4; the cnn gets 1e-2,
 * because a ReLU output or a pooling window that is a near-tie (within ~1e-7) can go the
 * other way on the GPU, which moves one position's gradient; a missing wait or a wrong
 * index is off by O(1) and still fails. */
static double rel_l2(const float *got, const float *want, size_t n)
{
    double d = 0, w = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)got[i] - (double)want[i];
        d += e * e;
        w += (double)want[i] * (double)want[i];
    }
    return w > 0 ? sqrt(d / w) : sqrt(d);
}

#define MS_B 8
#define MS_TOTAL 40
#define MS_STEPS 4

typedef struct model_run {
    float losses[MS_STEPS];
    float *grads0; /* host copy of the first step's gradients (malloc'd) */
} model_run_t;

static int model_run(const train_be_ops_t *be, train_be_ctx_t *ctx, int kind, model_run_t *out)
{
    train__model_cfg_t cfg = {.kind = kind, .hidden = 64, .layers = 2};
    size_t np = train__model_count(&cfg);
    float *init = malloc(np * sizeof(float));
    train__model_init(&cfg, init, 2024);
    static uint8_t img[MS_TOTAL * 784], lab[MS_TOTAL];
    for (int i = 0; i < MS_TOTAL; i++) {
        int cls = i % 10, cy = 4 + (cls / 5) * 14, cx = 3 + (cls % 5) * 5;
        for (int r = 0; r < 28; r++)
            for (int c = 0; c < 28; c++) {
                int near = abs(r - cy) <= 3 && abs(c - cx) <= 2;
                uint32_t h = (uint32_t)(i * 7919 + r * 131 + c * 17) * 2654435761u;
                img[i * 784 + r * 28 + c] = (uint8_t)(near ? 180 + (h >> 27) : (h >> 26));
            }
        lab[i] = (uint8_t)cls;
    }
    float *par = dup_to(be, ctx, init, np * 4), *grad = be->alloc(ctx, np * 4);
    float *mom = be->alloc(ctx, np * 4), *x = be->alloc(ctx, MS_B * 784 * 4);
    int32_t *y = be->alloc(ctx, MS_B * 4);
    uint8_t *dimg = dup_to(be, ctx, img, sizeof img), *dlab = dup_to(be, ctx, lab, sizeof lab);
    double *st = be->alloc(ctx, 2 * sizeof(double));
    train__model_t *m = NULL;
    int rc = -1;
    out->grads0 = NULL;
    if (!par || !grad || !mom || !x || !y || !dimg || !dlab || !st) goto done;
    if (train__model_new(&m, &cfg, be, ctx, MS_B, MS_B, par, grad, g_err, sizeof g_err) != 0)
        goto done;
    for (int step = 0; step < MS_STEPS; step++) {
        int32_t idx[MS_B];
        for (int i = 0; i < MS_B; i++)
            idx[i] = (step * MS_B + i * 3) % MS_TOTAL;
        be->zero(ctx, st, 2 * sizeof(double));
        be->load_batch(ctx, dimg, dlab, idx, MS_B, 784, 0.2860f, 0.3530f, x, y);
        train__model_step(m, x, y, MS_B, 1.0f / MS_B, st, NULL, NULL);
        if (step == 0) {
            out->grads0 = fetch(be, ctx, grad, np * 4);
            if (!out->grads0) goto done;
        }
        be->sgd_step(ctx, par, grad, mom, np, 0.05f, 0.9f, 0.0f, 0);
        double hs[2];
        if (be->download(ctx, hs, st, sizeof hs, g_err, sizeof g_err) != 0) goto done;
        out->losses[step] = (float)(hs[0] / MS_B);
    }
    rc = be->sync(ctx, g_err, sizeof g_err);
done:
    if (rc != 0) fprintf(stderr, "%s model run: %s\n", be->name, g_err);
    train__model_free(m);
    void *bufs[] = {par, grad, mom, x, y, dimg, dlab, st};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        be->free_mem(ctx, bufs[i]);
    free(init);
    return rc;
}

static void check_model(int kind, double grad_tol)
{
    pair_t p;
    REQUIRE(open_pair(&p));
    train__model_cfg_t cfg = {.kind = kind, .hidden = 64, .layers = 2};
    size_t np = train__model_count(&cfg);
    model_run_t c, g;
    int okc = model_run(CPU, p.c, kind, &c) == 0, okg = model_run(GPU, p.g, kind, &g) == 0;
    CHECK(okc && okg);
    if (okc && okg) {
        double e = rel_l2(g.grads0, c.grads0, np);
        fprintf(stderr, "%s: gradient relative L2 error %.3g (tolerance %g)\n",
                kind == TRAIN_MODEL_MLP ? "mlp" : "cnn", e, grad_tol);
        CHECK(e <= grad_tol);
        CHECK_EQ_INT(mismatches("model loss", g.losses, c.losses, NULL, MS_STEPS, 1e-3, 1e-6), 0);
    }
    free(c.grads0);
    free(g.grads0);
    close_pair(&p);
}

TEST(model_mlp_matches_cpu)
{
    NEED_GPU();
    check_model(TRAIN_MODEL_MLP, 1e-4);
}

TEST(model_cnn_matches_cpu)
{
    NEED_GPU();
    check_model(TRAIN_MODEL_CNN, 1e-2);
}

/* ---- NCCL ------------------------------------------------------------------------------ */

TEST(allreduce_one_rank)
{
    NEED_GPU();
    train_be_opts_t o = {.threads = 1, .rank = 0, .world = 1, .local_rank = 0};
    train_be_ctx_t *g = NULL;
    REQUIRE(GPU->open(&o, &g, g_err, sizeof g_err) == 0);
    REQUIRE(GPU->comm_init(g, 0, 1, bcast_self, NULL, g_err, sizeof g_err) == 0);
    /* a second init is refused */
    CHECK(GPU->comm_init(g, 0, 1, bcast_self, NULL, g_err, sizeof g_err) < 0);
    CHECK_CONTAINS(g_err, "NCCL communicator set up twice");
    size_t n = 100000;
    float *h = rand_vec(n, -1, 1);
    float *d = dup_to(GPU, g, h, n * 4);
    GPU->allreduce_sum(g, d, n);
    GPU->scale(g, d, n, 2.0f); /* must run after the all-reduce (touches its range) */
    float *r = fetch(GPU, g, d, n * 4);
    REQUIRE(r);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += r[i] != 2.0f * h[i];
    CHECK_EQ_INT(bad, 0);
    GPU->free_mem(g, d);
    free(h), free(r);
    GPU->close(g);
}

/* Two ranks, two processes, one GPU each: the launcher's role (sharing the unique id) is
 * played by a pipe. The children are fresh processes (exec of this test with the hidden
 * case "rank_child"), so CUDA is never used across a fork. Rank r holds (r+1)*v; after
 * the all-reduce both must hold 3*v exactly (two-term float sums are exact here). */
static int pipe_bcast(void *ud, void *buf, size_t len, int root, char *err, size_t errlen)
{
    int *fds = ud; /* {read end, write end, my rank} */
    (void)root;
    char *b = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t k =
            fds[2] == 0 ? write(fds[1], b + done, len - done) : read(fds[0], b + done, len - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            snprintf(err, errlen, "pipe bcast failed");
            return -1;
        }
        done += (size_t)k;
    }
    return 0;
}

/* peer_dead for rank 0: rank 1's process is gone (the test reaps it at once). */
static int peer_gone(void *ud)
{
    return kill(*(pid_t *)ud, 0) != 0 && errno == ESRCH;
}

static void rank_child(void)
{
    const char *rs = getenv("TT_RANK"), *fs = getenv("TT_FDS");
    if (!rs || !fs) SKIP("rank_child runs only under allreduce_two_ranks");
    if (gpu_count() < 2) SKIP("fewer than 2 GPUs");
    int fds[3];
    REQUIRE(sscanf(fs, "%d,%d", &fds[0], &fds[1]) == 2);
    fds[2] = atoi(rs);
    /* keep only the end this rank uses, so a peer that dies shows as EOF, not a hang */
    close(fds[2] == 0 ? fds[0] : fds[1]);
    /* TT_PEER_DIES=timeout: rank 1 dies and rank 0 has only the 10 s watchdog;
     * TT_PEER_DIES=callback: the watchdog is 600 s (longer than ctest waits), so rank 0
     * must learn it from peer_dead, as from tune-train's launcher */
    const char *dies = getenv("TT_PEER_DIES"), *pp = getenv("TT_PEER_PID");
    pid_t peer = pp ? (pid_t)atoi(pp) : 0;
    train_be_opts_t o = {.threads = 1, .rank = fds[2], .world = 2, .local_rank = fds[2]};
    o.timeout_s = dies && strcmp(dies, "timeout") == 0 ? 10 : 600;
    if (dies && strcmp(dies, "callback") == 0 && fds[2] == 0 && peer > 0) {
        o.peer_dead = peer_gone;
        o.peer_ud = &peer;
    }
    train_be_ctx_t *g = NULL;
    REQUIRE(GPU->open(&o, &g, g_err, sizeof g_err) == 0);
    if (GPU->comm_init(g, fds[2], 2, pipe_bcast, fds, g_err, sizeof g_err) != 0) {
        fprintf(stderr, "rank %d: %s\n", fds[2], g_err);
        GPU->close(g);
        REQUIRE(0);
    }
    size_t n = 1 << 20;
    float *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)(fds[2] + 1) * (float)(i % 1000) * 0.5f;
    float *d = dup_to(GPU, g, h, n * 4);
    if (getenv("TT_PEER_DIES")) {
        /* rank 1 vanishes without a word once rank 0's communicator is up (one more byte
         * through the pipe says so); rank 0 must report it, not wait forever */
        char byte = 1;
        if (fds[2] == 1) {
            CHECK(read(fds[0], &byte, 1) == 1);
            _exit(tt_failed ? 1 : 0);
        }
        CHECK(write(fds[1], &byte, 1) == 1);
        GPU->allreduce_sum(g, d, n);
        float *r = fetch(GPU, g, d, n * 4);
        CHECK(r == NULL);
        CHECK_CONTAINS(g_err, "rank 0 of 2");
        CHECK(GPU->sync(g, g_err, sizeof g_err) < 0); /* fatal: reported again */
        free(r), free(h);
        GPU->close(g); /* must not hang either: the communicator was aborted */
        return;
    }
    GPU->allreduce_sum(g, d, n / 2);
    GPU->allreduce_sum(g, d + n / 2, n - n / 2); /* two buckets in flight */
    float *r = fetch(GPU, g, d, n * 4);
    REQUIRE(r);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += r[i] != 3.0f * (float)(i % 1000) * 0.5f;
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(GPU->sync(g, g_err, sizeof g_err), 0);
    GPU->free_mem(g, d);
    free(h), free(r);
    GPU->close(g);
}

__attribute__((constructor)) static void register_children(void)
{
    /* registered by hand, not with TEST(, so ctest does not list them as cases */
    tt_register("rank_child", rank_child);
    tt_register("no_device_child", no_device_child);
}

TEST(allreduce_two_ranks)
{
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    char fs[48], r0[] = "TT_RANK=0", r1[] = "TT_RANK=1";
    snprintf(fs, sizeof fs, "TT_FDS=%d,%d", fds[0], fds[1]);
    char *env0[] = {r0, fs, NULL}, *env1[] = {r1, fs, NULL};
    pid_t pid[2] = {spawn_self("rank_child", env0), spawn_self("rank_child", env1)};
    close(fds[0]);
    close(fds[1]);
    REQUIRE(pid[0] > 0 && pid[1] > 0);
    int skipped = 0, failed = 0;
    for (int r = 0; r < 2; r++) {
        int st = wait_status(pid[r]);
        if (st == TT_SKIP_CODE)
            skipped++;
        else if (st != 0)
            failed++;
    }
    if (skipped == 2) SKIP("fewer than 2 GPUs");
    CHECK_EQ_INT(failed, 0);
    CHECK_EQ_INT(skipped, 0);
}

/* Rank 1 exits right after the communicator is set up; rank 0's all-reduce must end in an
 * error naming the rank and the communicator be aborted, well inside the case's timeout.
 */
static void peer_dies(const char *mode)
{
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    char fs[48], r0[] = "TT_RANK=0", r1[] = "TT_RANK=1", dies[48], ppid[48];
    snprintf(fs, sizeof fs, "TT_FDS=%d,%d", fds[0], fds[1]);
    snprintf(dies, sizeof dies, "TT_PEER_DIES=%s", mode);
    char *env1[] = {r1, fs, dies, NULL};
    pid_t p1 = spawn_self("rank_child", env1);
    snprintf(ppid, sizeof ppid, "TT_PEER_PID=%d", (int)p1);
    char *env0[] = {r0, fs, dies, ppid, NULL};
    pid_t p0 = spawn_self("rank_child", env0);
    close(fds[0]);
    close(fds[1]);
    REQUIRE(p0 > 0 && p1 > 0);
    int st1 = wait_status(p1); /* reaped at once, so rank 0's kill(pid, 0) sees it gone */
    int st0 = wait_status(p0);
    if (st0 == TT_SKIP_CODE && st1 == TT_SKIP_CODE) SKIP("fewer than 2 GPUs");
    CHECK_EQ_INT(st0, 0);
    CHECK_EQ_INT(st1, 0);
}

/* ... noticed by NCCL itself or by our watchdog (timeout_s = 10) */
TEST(allreduce_peer_dies_timeout)
{
    peer_dies("timeout");
}

/* ... noticed through the launcher's peer_dead callback (timeout_s = 600 is longer than
 * ctest lets the case run) */
TEST(allreduce_peer_dies_callback)
{
    peer_dies("callback");
}

TEST(allreduce_without_comm_init)
{
    NEED_GPU();
    /* two ranks promised at open, but comm_init never called: a fatal, named error */
    train_be_opts_t o = {.threads = 1, .rank = 0, .world = 2, .local_rank = 0};
    train_be_ctx_t *g = NULL;
    REQUIRE(GPU->open(&o, &g, g_err, sizeof g_err) == 0);
    float *d = GPU->alloc(g, 64);
    REQUIRE(d != NULL);
    GPU->allreduce_sum(g, d, 16);
    CHECK(GPU->sync(g, g_err, sizeof g_err) < 0);
    CHECK_CONTAINS(g_err, "all-reduce over 2 ranks without an NCCL communicator");
    CHECK(GPU->sync(g, g_err, sizeof g_err) < 0);
    GPU->close(g);
}

TT_MAIN
