/* backend.h: the compute-backend interface between tune-train's model/optimiser code and a
 * device (CPU always; CUDA when built with TUNE_HAVE_CUDA). One ops table per backend,
 * chosen at run time by --device, the way redis picks ae_epoll.c/ae_select.c behind ae.h.
 * Not for: data loading, checkpoints or the data-parallel launcher (train_int.h, ddp.c).
 *
 * Conventions every op follows (so the model is written once, llm.c-style):
 * - "Device pointers" are what ops->alloc returns. When ops->host_memory is 1 (CPU) any
 *   host pointer is also a device pointer, so the framework may hand in mmap'd data or
 *   shared memory directly.
 * - All tensors are float32, dense, row-major; images and activations are NCHW as in
 *   PyTorch; a linear layer's weight is [out][in] and a conv weight [k][c][kh][kw].
 * - Ops are asynchronous and ordered: they run in the order issued (one CUDA stream).
 *   Only download() and sync() wait. Ops that write an output overwrite it (never
 *   accumulate) unless the comment says otherwise, and never allocate per call.
 * - Ops return void: a failure is sticky in the context (like CUDA's error model) and is
 *   reported by the next sync()/download(), which return 0 or a negative code and fill
 *   err. Bad arguments are the caller's bug (assert), not a reported error.
 * - Results must be deterministic for a fixed backend, thread count and shapes (resume
 *   must be bit-identical), but need not match another backend bit for bit: the CPU
 *   backend is the oracle, compared with stated tolerances. */
#ifndef TUNE_TRAIN_BACKEND_H
#define TUNE_TRAIN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct train_be_ctx train_be_ctx_t;   /* one open backend instance (per rank) */
typedef struct train_be_conv train_be_conv_t; /* backend-private per-convolution plan */

/* Activation fused into an op's output. */
enum { TRAIN_BE_ACT_NONE = 0, TRAIN_BE_ACT_RELU = 1 };

/* The shape of a 2-D convolution (cross-correlation, as torch.nn.Conv2d), dilation 1. */
typedef struct train_be_conv_shape {
    int max_n;     /* largest batch the plan will see; calls pass n <= max_n */
    int c, h, w;   /* input channels, height, width */
    int k, kh, kw; /* output channels, kernel height, kernel width */
    int stride;    /* same in both dimensions, >= 1 */
    int pad;       /* zero padding on every side, >= 0 */
    int oh, ow;    /* output height/width: filled by the framework, (h+2pad-kh)/stride+1 */
} train_be_conv_shape_t;

/* Broadcast `len` bytes from rank `root` to every rank (host memory, blocking); the
 * framework provides it over its shared-memory channel so a backend can share e.g. an
 * ncclUniqueId. Returns 0 or negative (peer died, timeout) with err filled. */
typedef int (*train_be_bcast_cb)(void *ud, void *buf, size_t len, int root, char *err,
                                 size_t errlen);

/* What a backend is opened with. */
typedef struct train_be_opts {
    int threads;      /* CPU worker threads for this rank (>= 1); a GPU backend may ignore it */
    int rank;         /* this process's rank, 0..world-1 */
    int world;        /* number of ranks */
    int local_rank;   /* rank on this machine: a GPU backend uses device local_rank % count */
    int allow_tf32;   /* 1: matrix products may use TF32 (--tf32); 0: strict FP32 */
    double timeout_s; /* longest wait for a peer in a collective (--timeout); 0: default */
    /* CPU backend: 1 = the plain C reference path only (the generic GEMM kernel, no AVX
     * copies or AVX-512 pooling), what builds where there are no x86 intrinsics; the
     * tuned paths are tested against it. A GPU backend ignores it. */
    int portable;
    /* Returns non-zero once the run is being torn down (a peer died, the launcher is
     * gone), so a backend blocked in a device collective can abort at once. May be NULL
     * (single rank). Safe to call from any thread, cheap (reads shared memory). */
    int (*peer_dead)(void *ud);
    void *peer_ud;
} train_be_opts_t;

typedef struct train_be_ops {
    const char *name; /* "cpu", "cuda": what --device names */
    int host_memory;  /* 1: device pointers are host pointers (see above) */

    /* ---- lifetime -------------------------------------------------------------- */
    /* Opens an instance. Returns 0 and *out, or negative with a message a user can act
     * on ("--device cuda: no CUDA device is visible (CUDA_VISIBLE_DEVICES="")").
     * *out is freed with close(). */
    int (*open)(const train_be_opts_t *o, train_be_ctx_t **out, char *err, size_t errlen);
    void (*close)(train_be_ctx_t *ctx); /* NULL-safe; frees plans and buffers still held */
    /* Waits for every issued op; returns 0, or the first error since the last sync. */
    int (*sync)(train_be_ctx_t *ctx, char *err, size_t errlen);

    /* ---- memory ---------------------------------------------------------------- */
    /* `bytes` of zeroed device memory aligned to 64 bytes, or NULL (out of memory: the
     * error is also recorded for sync). Freed with free_mem (NULL-safe). */
    void *(*alloc)(train_be_ctx_t *ctx, size_t bytes);
    void (*free_mem)(train_be_ctx_t *ctx, void *p);
    /* Host -> device. The host buffer may be reused as soon as upload returns. */
    void (*upload)(train_be_ctx_t *ctx, void *dst, const void *host_src, size_t bytes);
    /* Device -> host; waits for preceding ops. Returns 0 or the sticky error. */
    int (*download)(train_be_ctx_t *ctx, void *host_dst, const void *src, size_t bytes, char *err,
                    size_t errlen);
    void (*copy)(train_be_ctx_t *ctx, void *dst, const void *src, size_t bytes); /* d->d */
    void (*zero)(train_be_ctx_t *ctx, void *dst, size_t bytes);

    /* ---- dense algebra --------------------------------------------------------- */
    /* C[m][n] = alpha * op(A) op(B) + beta * C, row-major, like cblas_sgemm(CblasRowMajor).
     * op(A) is A (m x k, leading dimension lda) or, when trans_a, A^T with A stored k x m.
     * op(B) is B (k x n, ldb) or, when trans_b, B^T with B stored n x k. beta == 0 means
     * C is not read (may hold NaN). Linear layers use it three ways:
     *   forward  Y[b][out] = X[b][in] W^T            (trans_b)
     *   weights  dW[out][in] = dY^T X                 (trans_a)
     *   inputs   dX[b][in] = dY W                     (neither) */
    void (*gemm)(train_be_ctx_t *ctx, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
    /* y[r][j] = act(y[r][j] + bias[j]) for r < rows, j < cols (in place). */
    void (*bias_act)(train_be_ctx_t *ctx, float *y, const float *bias, int rows, int cols, int act);
    /* out[j] = sum over r of x[r][j]: the bias gradient of a linear layer. */
    void (*sum_rows)(train_be_ctx_t *ctx, const float *x, int rows, int cols, float *out);
    /* dx[i] = y[i] > 0 ? dy[i] : 0, where y is the ReLU's output; dx may alias dy. */
    void (*relu_backward)(train_be_ctx_t *ctx, const float *y, const float *dy, float *dx,
                          size_t n);
    /* x[i] *= alpha (e.g. averaging gradients). */
    void (*scale)(train_be_ctx_t *ctx, float *x, size_t n, float alpha);

    /* ---- convolution (NCHW) ---------------------------------------------------- */
    /* Makes a plan for one convolution shape (the backend may pick algorithms and size
     * workspaces here, never per call). NULL on failure (recorded for sync). Freed by
     * conv_free (NULL-safe) or close. */
    train_be_conv_t *(*conv_plan)(train_be_ctx_t *ctx, const train_be_conv_shape_t *s);
    void (*conv_free)(train_be_ctx_t *ctx, train_be_conv_t *plan);
    /* y[n][k][oh][ow] = act(bias[k] + sum_{c,i,j} w[k][c][i][j] x[n][c][oh*s+i-p][ow*s+j-p]) */
    void (*conv_forward)(train_be_ctx_t *ctx, train_be_conv_t *plan, int n, const float *x,
                         const float *w, const float *bias, float *y, int act);
    /* Given dy (the gradient at the convolution's output, i.e. already through the
     * activation's backward), writes dw [k][c][kh][kw], dbias [k] (summed over the n
     * samples) and, when dx is not NULL, dx [n][c][h][w]. x is the forward input. */
    void (*conv_backward)(train_be_ctx_t *ctx, train_be_conv_t *plan, int n, const float *x,
                          const float *w, const float *dy, float *dx, float *dw, float *dbias);

    /* ---- pooling (NCHW), window = stride = `k`, no padding, floor ---------------- */
    /* y[n][c][i][j] = max over the k x k window of x; argmax[same index] = the flat index
     * (within x's h*w plane) of the first maximum, for the backward pass. */
    void (*maxpool_forward)(train_be_ctx_t *ctx, int n, int c, int h, int w, int k, const float *x,
                            float *y, int32_t *argmax);
    /* dx (n x c x h x w) = 0 everywhere except dx at argmax = dy. */
    void (*maxpool_backward)(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                             const float *dy, const int32_t *argmax, float *dx);

    /* ---- data and loss --------------------------------------------------------- */
    /* For i < n: x[i][:] = (images[idx[i]][:] / 255 - mean) / std over `dim` pixels and
     * y[i] = labels[idx[i]]. images/labels are device pointers (the whole data set,
     * uploaded once); idx is a HOST array of n sample numbers, read before return. */
    void (*load_batch)(train_be_ctx_t *ctx, const uint8_t *images, const uint8_t *labels,
                       const int32_t *idx, int n, int dim, float mean, float std, float *x,
                       int32_t *y);
    /* Softmax cross-entropy over logits[n][classes] with labels y[n] (device).
     * stats[0] += sum over samples of -log softmax(logits)[y], stats[1] += number of
     * samples whose arg-max logit (first on ties) equals y: device doubles, accumulated
     * so a whole epoch needs one download. When dlogits is not NULL it is written with
     * grad_scale * (softmax(logits) - onehot(y)) (grad_scale = 1/global batch for a mean
     * loss). Use a max-subtracted log-sum-exp. */
    void (*softmax_xent)(train_be_ctx_t *ctx, const float *logits, const int32_t *y, int n,
                         int classes, float grad_scale, float *dlogits, double *stats);

    /* ---- optimisers, on flat parameter/gradient/state vectors of n floats ---------- */
    /* torch.optim.SGD (dampening 0): g = grad + wd*p; if momentum != 0:
     * buf = momentum*buf + g, g = nesterov ? g + momentum*buf : buf; p -= lr*g.
     * buf starts zeroed, which equals PyTorch's first-step buf = g exactly. */
    void (*sgd_step)(train_be_ctx_t *ctx, float *param, const float *grad, float *buf, size_t n,
                     float lr, float momentum, float weight_decay, int nesterov);
    /* torch.optim.Adam (not AdamW), step t >= 1 precomputed by the caller:
     * g = grad + wd*p; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
     * p -= (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps), bc1 = 1-b1^t, bc2 = 1-b2^t. */
    void (*adam_step)(train_be_ctx_t *ctx, float *param, const float *grad, float *m, float *v,
                      size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                      float bc1, float bc2);

    /* ---- optional device collectives (NULL when absent) ------------------------- */
    /* When these are NULL the framework all-reduces through host shared memory,
     * staging with download/upload unless host_memory. A GPU backend may set up e.g.
     * NCCL here: called once after open on every rank, bcast shares the unique id. */
    int (*comm_init)(train_be_ctx_t *ctx, int rank, int world, train_be_bcast_cb bcast,
                     void *bcast_ud, char *err, size_t errlen);
    /* In-place sum of buf (n floats) across all ranks, ordered after preceding ops. */
    void (*allreduce_sum)(train_be_ctx_t *ctx, float *buf, size_t n);
} train_be_ops_t;

/* The CPU backend: always built (backend_cpu.c, layers_cpu.c). */
extern const train_be_ops_t train_be_cpu;
#ifdef TUNE_HAVE_CUDA
/* The CUDA backend (backend_cuda.cu, declared extern "C" there). */
extern const train_be_ops_t train_be_cuda;
#endif

/* The backend named `name` ("cpu", "cuda"), or NULL with err saying which names this
 * build has ("--device cuda: this tune-train was built without CUDA"). Static data. */
const train_be_ops_t *train_be_find(const char *name, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
