/* model.c: the two classifiers (mlp, cnn) as a list of layers, written once against
 * backend.h so the same code drives the CPU and CUDA backends. Shapes follow the PyTorch
 * tutorial nets: conv5x5x32-relu-pool2, conv5x5x64-relu-pool2, fc128-relu, fc10.
 * All parameters live in one flat vector (weights then bias, layer by layer) so that the
 * optimiser, the all-reduce and checkpoints see a single buffer.
 * Not for: the loss schedule, optimiser or data order (train.c). */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_int.h"

#define MAX_LAYERS 40
#define IMG 28
#define CLASSES 10

enum { L_LINEAR, L_CONV, L_POOL };

struct layer {
    int type, act;
    int in_dim, out_dim; /* floats per sample */
    int fan_in, nout;    /* linear: in, out; conv: c*kh*kw, k */
    int c, h, w, k;      /* conv/pool input shape; pool window */
    train_be_conv_shape_t cs;
    size_t w_off, b_off, nw, nb; /* in the flat parameter vector */
    train_be_conv_t *plan;
    float *out, *dout;
    int32_t *argmax;
};

struct train__model {
    const train_be_ops_t *ops;
    train_be_ctx_t *ctx;
    int nl, max_n, max_train; /* batch limits of forward (evaluation) and of backward */
    struct layer L[MAX_LAYERS];
    float *params, *grads;
    float *zeros; /* a zero bias for ReLUs after pooling (bias_act with no bias) */
};

/* Shapes and parameter offsets only: shared by count, init and new. */
static int build(const train__model_cfg_t *cfg, struct layer *L)
{
    int nl = 0;
    size_t off = 0;
#define ADD_LINEAR(in, out, a)                                                                     \
    do {                                                                                           \
        struct layer *l = &L[nl++];                                                                \
        memset(l, 0, sizeof *l);                                                                   \
        l->type = L_LINEAR, l->act = (a), l->in_dim = (in), l->out_dim = (out);                    \
        l->fan_in = (in), l->nout = (out);                                                         \
        l->w_off = off, l->nw = (size_t)(in) * (out), off += l->nw;                                \
        l->b_off = off, l->nb = (size_t)(out), off += l->nb;                                       \
    } while (0)
    if (cfg->kind == TRAIN_MODEL_MLP) {
        int in = IMG * IMG;
        for (int i = 0; i < cfg->layers && nl < MAX_LAYERS - 1; i++) {
            ADD_LINEAR(in, cfg->hidden, TRAIN_BE_ACT_RELU);
            in = cfg->hidden;
        }
        ADD_LINEAR(in, CLASSES, TRAIN_BE_ACT_NONE);
        return nl;
    }
    int c = 1, h = IMG;
    static const int chans[2] = {32, 64};
    for (int i = 0; i < 2; i++) {
        struct layer *l = &L[nl++];
        memset(l, 0, sizeof *l);
        /* relu(pool(conv)) instead of pool(relu(conv)): the same values (max and relu
         * commute) and the same gradients (the window's first maximum is the same
         * element unless every element is <= 0, where both give 0), but the ReLU and
         * its backward run on the 4x smaller pooled tensor */
        l->type = L_CONV, l->act = TRAIN_BE_ACT_NONE;
        l->cs = (train_be_conv_shape_t){
            .c = c, .h = h, .w = h, .k = chans[i], .kh = 5, .kw = 5, .stride = 1, .pad = 0};
        l->cs.oh = l->cs.ow = h - 5 + 1;
        l->c = c, l->h = l->w = h;
        l->in_dim = c * h * h;
        l->out_dim = chans[i] * l->cs.oh * l->cs.ow;
        l->fan_in = c * 25, l->nout = chans[i];
        l->w_off = off, l->nw = (size_t)chans[i] * c * 25, off += l->nw;
        l->b_off = off, l->nb = (size_t)chans[i], off += l->nb;
        c = chans[i], h = l->cs.oh;
        struct layer *p = &L[nl++];
        memset(p, 0, sizeof *p);
        p->type = L_POOL, p->c = c, p->h = p->w = h, p->k = 2, p->act = TRAIN_BE_ACT_RELU;
        p->in_dim = c * h * h;
        h /= 2;
        p->out_dim = c * h * h;
    }
    ADD_LINEAR(c * h * h, 128, TRAIN_BE_ACT_RELU);
    ADD_LINEAR(128, CLASSES, TRAIN_BE_ACT_NONE);
#undef ADD_LINEAR
    return nl;
}

size_t train__model_count(const train__model_cfg_t *cfg)
{
    struct layer L[MAX_LAYERS];
    int nl = build(cfg, L);
    return L[nl - 1].b_off + L[nl - 1].nb;
}

void train__model_init(const train__model_cfg_t *cfg, float *params, uint64_t seed)
{
    struct layer L[MAX_LAYERS];
    int nl = build(cfg, L);
    train__rng_t r;
    train__rng_seed(&r, seed, 0);
    for (int i = 0; i < nl; i++) {
        if (L[i].type == L_POOL) continue;
        /* kaiming_uniform_(a=sqrt(5)) gives bound sqrt(6/((1+5) fan_in)) = 1/sqrt(fan_in),
         * the same bound PyTorch uses for the bias */
        double bound = 1.0 / sqrt((double)L[i].fan_in);
        for (size_t j = 0; j < L[i].nw; j++)
            params[L[i].w_off + j] = (float)((2.0 * train__rng_uniform(&r) - 1.0) * bound);
        for (size_t j = 0; j < L[i].nb; j++)
            params[L[i].b_off + j] = (float)((2.0 * train__rng_uniform(&r) - 1.0) * bound);
    }
}

int train__model_buckets(const train__model_cfg_t *cfg, size_t *off, int max)
{
    struct layer L[MAX_LAYERS];
    int nl = build(cfg, L), nb = 0;
    off[0] = 0;
    for (int i = 0; i < nl && nb < max - 1; i++)
        if (L[i].type != L_POOL) off[++nb] = L[i].b_off + L[i].nb;
    return nb;
}

void train__model_describe(const train__model_cfg_t *cfg, char *buf, size_t len)
{
    if (cfg->kind == TRAIN_MODEL_MLP) {
        int off = snprintf(buf, len, "mlp 784");
        for (int i = 0; i < cfg->layers && off > 0 && (size_t)off < len; i++)
            off += snprintf(buf + off, len - (size_t)off, "-%d", cfg->hidden);
        if (off > 0 && (size_t)off < len)
            snprintf(buf + off, len - (size_t)off, "-10, %zu parameters", train__model_count(cfg));
    } else {
        snprintf(buf, len, "cnn conv5x5x32-pool2-conv5x5x64-pool2-fc128-fc10, %zu parameters",
                 train__model_count(cfg));
    }
}

void train__model_free(train__model_t *m)
{
    if (!m) return;
    for (int i = 0; i < m->nl; i++) {
        struct layer *l = &m->L[i];
        if (l->plan) m->ops->conv_free(m->ctx, l->plan);
        m->ops->free_mem(m->ctx, l->out);
        m->ops->free_mem(m->ctx, l->dout);
        m->ops->free_mem(m->ctx, l->argmax);
    }
    m->ops->free_mem(m->ctx, m->zeros);
    free(m);
}

int train__model_new(train__model_t **out, const train__model_cfg_t *cfg, const train_be_ops_t *ops,
                     train_be_ctx_t *ctx, int max_n, int max_train, float *params, float *grads,
                     char *err, size_t errlen)
{
    assert(max_train > 0 && max_train <= max_n);
    train__model_t *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return TRAIN_ERR;
    }
    m->ops = ops;
    m->ctx = ctx;
    m->max_n = max_n;
    m->max_train = max_train;
    m->params = params;
    m->grads = grads;
    m->nl = build(cfg, m->L);
    for (int i = 0; i < m->nl; i++) {
        struct layer *l = &m->L[i];
        /* activation gradients only for the training batch: evaluation's larger batches
         * run forward only (argmax is written by every forward). Sizing dout for them
         * too held 16-24 MB more of the cnn's 63 MB at global batch 128, all of it
         * faulted in (alloc zeroes) before the first training step. */
        l->out = ops->alloc(ctx, sizeof(float) * (size_t)max_n * l->out_dim);
        l->dout = ops->alloc(ctx, sizeof(float) * (size_t)max_train * l->out_dim);
        if (!l->out || !l->dout) goto fail;
        if (l->type == L_POOL) {
            l->argmax = ops->alloc(ctx, sizeof(int32_t) * (size_t)max_n * l->out_dim);
            if (!l->argmax) goto fail;
        }
        if (l->type == L_CONV) {
            l->cs.max_n = max_n;
            l->plan = ops->conv_plan(ctx, &l->cs);
            if (!l->plan) goto fail;
        }
    }
    m->zeros = ops->alloc(ctx, sizeof(float) * IMG * IMG); /* alloc zeroes */
    if (!m->zeros) goto fail;
    if (ops->sync(ctx, err, errlen) != 0) goto fail2;
    *out = m;
    return 0;
fail:
    if (ops->sync(ctx, err, errlen) == 0) snprintf(err, errlen, "out of device memory");
fail2:
    train__model_free(m);
    return TRAIN_ERR;
}

void train__model_step(train__model_t *m, const float *x, const int32_t *y, int n, float grad_scale,
                       double *stats, train__grad_ready_cb ready, void *ud)
{
    assert(n <= (grad_scale != 0.0f ? m->max_train : m->max_n));
    const train_be_ops_t *o = m->ops;
    train_be_ctx_t *ctx = m->ctx;
    for (int i = 0; i < m->nl; i++) {
        struct layer *l = &m->L[i];
        const float *in = i == 0 ? x : m->L[i - 1].out;
        const float *W = m->params + l->w_off, *b = m->params + l->b_off;
        switch (l->type) {
        case L_LINEAR: /* Y = X W^T + b */
            o->gemm(ctx, 0, 1, n, l->nout, l->fan_in, 1.0f, in, l->fan_in, W, l->fan_in, 0.0f,
                    l->out, l->nout);
            o->bias_act(ctx, l->out, b, n, l->nout, l->act);
            break;
        case L_CONV:
            o->conv_forward(ctx, l->plan, n, in, W, b, l->out, l->act);
            break;
        case L_POOL:
            o->maxpool_forward(ctx, n, l->c, l->h, l->w, l->k, in, l->out, l->argmax);
            if (l->act != TRAIN_BE_ACT_NONE)
                o->bias_act(ctx, l->out, m->zeros, n * l->c, (l->h / l->k) * (l->w / l->k), l->act);
            break;
        }
    }
    struct layer *last = &m->L[m->nl - 1];
    o->softmax_xent(ctx, last->out, y, n, CLASSES, grad_scale,
                    grad_scale != 0.0f ? last->dout : NULL, stats);
    if (grad_scale == 0.0f) return;
    for (int i = m->nl - 1; i >= 0; i--) {
        struct layer *l = &m->L[i];
        const float *in = i == 0 ? x : m->L[i - 1].out;
        float *dx = i == 0 ? NULL : m->L[i - 1].dout;
        const float *W = m->params + l->w_off;
        float *dW = m->grads + l->w_off, *db = m->grads + l->b_off;
        if (l->act == TRAIN_BE_ACT_RELU)
            o->relu_backward(ctx, l->out, l->dout, l->dout, (size_t)n * l->out_dim);
        switch (l->type) {
        case L_LINEAR:
            /* dW = dY^T X, db = column sums of dY, dX = dY W */
            o->gemm(ctx, 1, 0, l->nout, l->fan_in, n, 1.0f, l->dout, l->nout, in, l->fan_in, 0.0f,
                    dW, l->fan_in);
            o->sum_rows(ctx, l->dout, n, l->nout, db);
            if (dx)
                o->gemm(ctx, 0, 0, n, l->fan_in, l->nout, 1.0f, l->dout, l->nout, W, l->fan_in,
                        0.0f, dx, l->fan_in);
            break;
        case L_CONV:
            o->conv_backward(ctx, l->plan, n, in, W, l->dout, dx, dW, db);
            break;
        case L_POOL:
            o->maxpool_backward(ctx, n, l->c, l->h, l->w, l->k, l->dout, l->argmax, dx);
            break;
        }
        if (ready && l->type != L_POOL) ready(ud, l->w_off, l->nw + l->nb);
    }
}
