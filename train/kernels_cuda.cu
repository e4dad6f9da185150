/* kernels_cuda.cu: the CUDA backend's own kernels (bias and ReLU epilogues, bias
 * gradients, max pooling with argmax, batch loading, softmax cross-entropy, SGD and Adam)
 * and their launchers. Every reduction here runs in a fixed order with no atomics, so a
 * run is bit-reproducible on one GPU model (backend.h asks that resume be bit-identical).
 * Not for: matrix products (cuBLAS, backend_cuda.cu) or convolutions (cuDNN, conv_cuda.cu),
 * NCCL. */
#include "train/cuda_int.h"

#include <limits.h>
#include <math.h>

#define THREADS 256

/* Blocks for a grid-stride loop over n items: enough to fill any current GPU, never more
 * than the items need. */
static unsigned grid_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    if (b > (1u << 20)) b = 1u << 20;
    return b ? (unsigned)b : 1u;
}

#define GRID_STRIDE(i, n)                                                                          \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                        \
         i += (size_t)gridDim.x * blockDim.x)

__device__ static inline float act_apply(float v, int act)
{
    /* same test as the CPU oracle: ReLU(v) = v > 0 ? v : 0 (NaN becomes 0) */
    return act == TRAIN_BE_ACT_RELU ? (v > 0.0f ? v : 0.0f) : v;
}

/* ---- epilogues -------------------------------------------------------------------- */
__global__ static void k_bias_act(float *y, const float *bias, size_t total, int cols, int act)
{
    GRID_STRIDE(i, total)
    {
        float v = y[i];
        if (bias) v += bias[i % (size_t)cols];
        y[i] = act_apply(v, act);
    }
}

__global__ static void k_bias_act_nchw(float *y, const float *bias, size_t total, int k, int hw,
                                       int act)
{
    GRID_STRIDE(i, total)
    {
        float v = y[i];
        if (bias) v += bias[(i / (size_t)hw) % (size_t)k];
        y[i] = act_apply(v, act);
    }
}

void train_cuda__bias_act(train_be_ctx_t *ctx, float *y, const float *bias, int rows, int cols,
                          int act)
{
    size_t total = (size_t)rows * (size_t)cols;
    if (total == 0) return;
    k_bias_act<<<grid_for(total), THREADS, 0, ctx->stream>>>(y, bias, total, cols, act);
    train_cuda__launched(ctx, "bias_act");
}

void train_cuda__bias_act_nchw(train_be_ctx_t *ctx, float *y, const float *bias, int n, int k,
                               int hw, int act)
{
    size_t total = (size_t)n * (size_t)k * (size_t)hw;
    if (total == 0) return;
    k_bias_act_nchw<<<grid_for(total), THREADS, 0, ctx->stream>>>(y, bias, total, k, hw, act);
    train_cuda__launched(ctx, "conv bias/activation");
}

/* ---- reductions ------------------------------------------------------------------- */
/* Sums a block's per-thread partials in a fixed tree order; the result is in s[0]. */
template <typename T> __device__ static void block_sum(T *s)
{
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
        __syncthreads();
    }
}

/* One block per output channel: every thread walks its own fixed subset of the n*hw
 * values, then the block adds the partials in a fixed tree. */
__global__ static void k_bias_grad_nchw(const float *dy, int n, int k, int hw, float *dbias)
{
    __shared__ float s[THREADS];
    int ch = blockIdx.x;
    float acc = 0.0f;
    for (int b = 0; b < n; b++) {
        const float *row = dy + ((size_t)b * k + ch) * (size_t)hw;
        for (int p = threadIdx.x; p < hw; p += THREADS)
            acc += row[p];
    }
    s[threadIdx.x] = acc;
    block_sum(s);
    if (threadIdx.x == 0) dbias[ch] = s[0];
}

void train_cuda__bias_grad_nchw(train_be_ctx_t *ctx, const float *dy, int n, int k, int hw,
                                float *dbias)
{
    if (k <= 0) return;
    k_bias_grad_nchw<<<k, THREADS, 0, ctx->stream>>>(dy, n, k, hw, dbias);
    train_cuda__launched(ctx, "conv bias gradient");
}

/* 32 columns per block so reads of a row are coalesced; the 8 row lanes of a column are
 * added in lane order at the end. */
#define SR_COLS 32
#define SR_LANES 8
__global__ static void k_sum_rows(const float *x, int rows, int cols, float *out)
{
    __shared__ float s[SR_LANES][SR_COLS];
    int j = blockIdx.x * SR_COLS + threadIdx.x;
    float acc = 0.0f;
    if (j < cols)
        for (int r = threadIdx.y; r < rows; r += SR_LANES)
            acc += x[(size_t)r * cols + j];
    s[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
        float t = s[0][threadIdx.x];
        for (int l = 1; l < SR_LANES; l++)
            t += s[l][threadIdx.x];
        out[j] = t;
    }
}

void train_cuda__sum_rows(train_be_ctx_t *ctx, const float *x, int rows, int cols, float *out)
{
    if (cols <= 0) return;
    dim3 block(SR_COLS, SR_LANES);
    k_sum_rows<<<(cols + SR_COLS - 1) / SR_COLS, block, 0, ctx->stream>>>(x, rows, cols, out);
    train_cuda__launched(ctx, "sum_rows");
}

/* ---- elementwise ------------------------------------------------------------------ */
__global__ static void k_relu_backward(const float *y, const float *dy, float *dx, size_t n)
{
    GRID_STRIDE(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void train_cuda__relu_backward(train_be_ctx_t *ctx, const float *y, const float *dy, float *dx,
                               size_t n)
{
    if (n == 0) return;
    k_relu_backward<<<grid_for(n), THREADS, 0, ctx->stream>>>(y, dy, dx, n);
    train_cuda__launched(ctx, "relu_backward");
}

__global__ static void k_scale(float *x, size_t n, float alpha)
{
    GRID_STRIDE(i, n) x[i] *= alpha;
}

void train_cuda__scale(train_be_ctx_t *ctx, float *x, size_t n, float alpha)
{
    if (n == 0) return;
    k_scale<<<grid_for(n), THREADS, 0, ctx->stream>>>(x, n, alpha);
    train_cuda__launched(ctx, "scale");
}

/* ---- max pooling (window = stride = k, floor) --------------------------------------
 * Our own kernels rather than cudnnPoolingForward/Backward: the interface keeps the
 * argmax (first maximum in row-major window order, as the CPU oracle) and its backward
 * gets only dy and argmax, which cuDNN's pooling backward (it wants x, y and dy) cannot
 * use. Windows do not overlap, so the backward is a gather with no atomics. */
__global__ static void k_maxpool_fwd(const float *x, float *y, int32_t *argmax, size_t total, int h,
                                     int w, int k, int oh, int ow)
{
    GRID_STRIDE(o, total)
    {
        size_t plane = o / ((size_t)oh * ow);
        int rem = (int)(o % ((size_t)oh * ow));
        int oi = rem / ow, oj = rem % ow;
        const float *base = x + plane * (size_t)h * w;
        int best_i = (oi * k) * w + oj * k;
        float best = base[best_i];
        for (int di = 0; di < k; di++)
            for (int dj = 0; dj < k; dj++) {
                int idx = (oi * k + di) * w + (oj * k + dj);
                float v = base[idx];
                if (v > best) { /* strict: the first maximum wins ties */
                    best = v;
                    best_i = idx;
                }
            }
        y[o] = best;
        argmax[o] = best_i;
    }
}

__global__ static void k_maxpool_bwd(const float *dy, const int32_t *argmax, float *dx,
                                     size_t total, int h, int w, int k, int oh, int ow)
{
    GRID_STRIDE(i, total)
    {
        size_t plane = i / ((size_t)h * w);
        int rem = (int)(i % ((size_t)h * w));
        int r = rem / w, c = rem % w;
        int oi = r / k, oj = c / k;
        float g = 0.0f;
        if (oi < oh && oj < ow) {
            size_t o = plane * (size_t)oh * ow + (size_t)oi * ow + oj;
            if (argmax[o] == rem) g = dy[o];
        }
        dx[i] = g;
    }
}

void train_cuda__maxpool_forward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                 const float *x, float *y, int32_t *argmax)
{
    int oh = h / k, ow = w / k;
    size_t total = (size_t)n * c * oh * ow;
    if (total == 0) return;
    k_maxpool_fwd<<<grid_for(total), THREADS, 0, ctx->stream>>>(x, y, argmax, total, h, w, k, oh,
                                                                ow);
    train_cuda__launched(ctx, "maxpool_forward");
}

void train_cuda__maxpool_backward(train_be_ctx_t *ctx, int n, int c, int h, int w, int k,
                                  const float *dy, const int32_t *argmax, float *dx)
{
    int oh = h / k, ow = w / k;
    size_t total = (size_t)n * c * h * w;
    if (total == 0) return;
    k_maxpool_bwd<<<grid_for(total), THREADS, 0, ctx->stream>>>(dy, argmax, dx, total, h, w, k, oh,
                                                                ow);
    train_cuda__launched(ctx, "maxpool_backward");
}

/* ---- data ------------------------------------------------------------------------- */
__global__ static void k_load_batch(const uint8_t *images, const uint8_t *labels,
                                    const int32_t *idx, int n, int dim, float mean, float std,
                                    float *x, int32_t *y)
{
    size_t total = (size_t)n * dim;
    GRID_STRIDE(i, total)
    {
        size_t s = i / (size_t)dim, p = i % (size_t)dim;
        size_t src = (size_t)idx[s];
        /* same expression as the CPU oracle, so the pixels agree bit for bit */
        x[i] = ((float)images[src * dim + p] / 255.0f - mean) / std;
        if (p == 0) y[s] = labels[src];
    }
}

void train_cuda__load_batch(train_be_ctx_t *ctx, const uint8_t *images, const uint8_t *labels,
                            const int32_t *idx_dev, int n, int dim, float mean, float std, float *x,
                            int32_t *y)
{
    size_t total = (size_t)n * dim;
    if (total == 0) return;
    k_load_batch<<<grid_for(total), THREADS, 0, ctx->stream>>>(images, labels, idx_dev, n, dim,
                                                               mean, std, x, y);
    train_cuda__launched(ctx, "load_batch");
}

/* ---- softmax cross-entropy -----------------------------------------------------------
 * One warp per sample: max-subtracted log-sum-exp with warp shuffles (a fixed butterfly,
 * so every lane gets the same bits), the per-sample loss and hit written to `part`, then
 * one block adds the partials in a fixed order into the epoch's double accumulators. */
#define XENT_WARPS (THREADS / 32)

__global__ static void k_xent_rows(const float *logits, const int32_t *y, int n, int classes,
                                   float gs, float *dlogits, double *part)
{
    int s = blockIdx.x * XENT_WARPS + (int)(threadIdx.x / 32);
    int lane = threadIdx.x % 32;
    if (s >= n) return; /* whole warps leave together */
    const float *l = logits + (size_t)s * classes;
    /* each lane's first maximum over its classes (INT_MAX: the lane has none), then the
     * lanes agree on the overall first maximum: larger value, or equal value and lower
     * index (the CPU oracle's "first on ties") */
    float mx = -INFINITY;
    int ai = INT_MAX;
    if (lane < classes) {
        mx = l[lane];
        ai = lane;
    }
    for (int c = lane + 32; c < classes; c += 32) {
        float v = l[c];
        if (v > mx) {
            mx = v;
            ai = c;
        }
    }
    for (int off = 16; off > 0; off /= 2) {
        float omx = __shfl_xor_sync(0xffffffffu, mx, off);
        int oai = __shfl_xor_sync(0xffffffffu, ai, off);
        if (oai != INT_MAX && (ai == INT_MAX || omx > mx || (omx == mx && oai < ai))) {
            mx = omx;
            ai = oai;
        }
    }
    float sum = 0.0f;
    for (int c = lane; c < classes; c += 32)
        sum += expf(l[c] - mx);
    for (int off = 16; off > 0; off /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, off);
    int t = y[s];
    int valid = t >= 0 && t < classes; /* a bad label is the caller's bug: never read past */
    /* the CPU oracle's formulas: lse in float, p = exp(z - lse) */
    float lse = mx + logf(sum);
    if (dlogits) {
        float *d = dlogits + (size_t)s * classes;
        for (int c = lane; c < classes; c += 32)
            d[c] = gs * (expf(l[c] - lse) - (c == t ? 1.0f : 0.0f));
    }
    if (lane == 0) {
        part[s] = valid ? (double)(lse - l[t]) : (double)NAN;
        part[(size_t)n + s] = (valid && ai == t) ? 1.0 : 0.0;
    }
}

__global__ static void k_xent_sum(const double *part, int n, double *stats)
{
    __shared__ double s_loss[THREADS], s_hit[THREADS];
    double a = 0.0, b = 0.0;
    for (int i = threadIdx.x; i < n; i += THREADS) {
        a += part[i];
        b += part[(size_t)n + i];
    }
    s_loss[threadIdx.x] = a;
    s_hit[threadIdx.x] = b;
    block_sum(s_loss);
    block_sum(s_hit);
    if (threadIdx.x == 0) {
        stats[0] += s_loss[0];
        stats[1] += s_hit[0];
    }
}

void train_cuda__softmax_xent(train_be_ctx_t *ctx, const float *logits, const int32_t *y, int n,
                              int classes, float grad_scale, float *dlogits, double *part,
                              double *stats)
{
    if (n <= 0 || classes <= 0) return;
    k_xent_rows<<<(n + XENT_WARPS - 1) / XENT_WARPS, THREADS, 0, ctx->stream>>>(
        logits, y, n, classes, grad_scale, dlogits, part);
    if (!train_cuda__launched(ctx, "softmax_xent")) return;
    k_xent_sum<<<1, THREADS, 0, ctx->stream>>>(part, n, stats);
    train_cuda__launched(ctx, "softmax_xent (sum)");
}

/* ---- optimisers: torch.optim.SGD and torch.optim.Adam, element by element ---------- */
__global__ static void k_sgd(float *param, const float *grad, float *buf, size_t n, float lr,
                             float momentum, float wd, int nesterov)
{
    GRID_STRIDE(i, n)
    {
        float p = param[i];
        float g = grad[i];
        if (wd != 0.0f) g += wd * p;
        if (momentum != 0.0f) {
            float b = momentum * buf[i] + g;
            buf[i] = b;
            g = nesterov ? g + momentum * b : b;
        }
        param[i] = p - lr * g;
    }
}

void train_cuda__sgd_step(train_be_ctx_t *ctx, float *param, const float *grad, float *buf,
                          size_t n, float lr, float momentum, float weight_decay, int nesterov)
{
    if (n == 0) return;
    k_sgd<<<grid_for(n), THREADS, 0, ctx->stream>>>(param, grad, buf, n, lr, momentum, weight_decay,
                                                    nesterov);
    train_cuda__launched(ctx, "sgd_step");
}

__global__ static void k_adam(float *param, const float *grad, float *m, float *v, size_t n,
                              float lr, float b1, float b2, float eps, float wd, float bc1,
                              float bc2)
{
    float step = lr / bc1, sbc2 = sqrtf(bc2);
    GRID_STRIDE(i, n)
    {
        float p = param[i];
        float g = grad[i];
        if (wd != 0.0f) g += wd * p;
        float mi = b1 * m[i] + (1.0f - b1) * g;
        float vi = b2 * v[i] + (1.0f - b2) * g * g;
        m[i] = mi;
        v[i] = vi;
        param[i] = p - step * mi / (sqrtf(vi) / sbc2 + eps);
    }
}

void train_cuda__adam_step(train_be_ctx_t *ctx, float *param, const float *grad, float *m, float *v,
                           size_t n, float lr, float beta1, float beta2, float eps,
                           float weight_decay, float bc1, float bc2)
{
    if (n == 0) return;
    k_adam<<<grid_for(n), THREADS, 0, ctx->stream>>>(param, grad, m, v, n, lr, beta1, beta2, eps,
                                                     weight_decay, bc1, bc2);
    train_cuda__launched(ctx, "adam_step");
}
